// Package mig plans NVIDIA Multi-Instance GPU (MIG) layouts offline, before a
// GPU is touched.
//
// # Catalogue
//
// Builtin returns a Catalogue of the GPU-instance (GI) profiles of every
// MIG-capable product gpunode knows (A100-40GB, A100-80GB, A30-24GB, H100-80GB,
// H100-94GB NVL, H200-141GB, GH200-96GB, GH200-144GB, B200-180GB), keyed by PCI
// device id. Each profile carries the ID printed by `nvidia-smi mig -lgip`, the
// NVML profile enum, its compute and memory slices, the per-GPU maximum, its
// placements on the memory-slice axis (start:size, as `nvidia-smi mig -lgipp`
// prints them), SM counts where known and its compute-instance (CI) profiles.
// A live backend replaces a product with what NVML reports through
// ProductFromNVML and Catalogue.With.
//
// Lookup accepts the product name as nvidia-smi prints it ("NVIDIA H100 80GB
// HBM3"), a short form ("H100-80GB", "a100-sxm4-40gb") or a PCI device id
// ("0x2330", "0x233010DE").
//
// # Planner
//
// A layout is a set of GPU instances with explicit placements. The planner is
// exact: per product it enumerates, once, every feasible single-GPU multiset of
// profiles (all non-overlapping placements that respect per-profile maxima,
// the compute-slice total and the media-extension limit) and caches it in the
// Catalogue. Spreading a demand over N GPUs is then a bin-packing search over
// those configurations with memoisation and dominance pruning (only
// configurations that cannot be extended need to be tried). It never reports
// infeasible when a layout exists and never returns overlapping placements;
// the tests prove this against an independent brute-force oracle for every
// demand multiset of every product.
//
// When a demand does not fit, the plan says why in slice terms and lists the
// closest feasible alternatives: the fewest instances to drop, single-instance
// shrinks, and how many GPUs it would need.
//
// # mig-parted
//
// ParseMigParted reads NVIDIA mig-parted's v1 configuration format and
// accepts what current mig-parted accepts, with MIG profile names checked by
// go-nvlib's rules (not mig-parted's early-2023 ones); refusals name the
// YAML line and field. migparted.go lists each rule with its source.
// Validate checks every entry's feasibility offline for the GPUs it would
// match.
package mig
