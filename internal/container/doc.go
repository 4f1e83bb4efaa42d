// Package container checks how GPUs reach containers on a node (section 4
// of the seed chapter) and computes the runtime flags that run a container
// next to its GPUs.
//
// Source is the "container" layer of 'gpunode audit' and the whole of
// 'gpunode container check': the NVIDIA Container Toolkit's pieces, the
// nvidia runtime in Docker, containerd and CRI-O, the CDI specs, the
// driver against the image's CUDA version, and whether data paths sit on
// overlayfs. Every read goes through hostfs (--root); nothing is executed.
// A runtime file that does not parse makes its own check an error naming
// the file, line and reason; the other checks still run.
//
// Flags turns GPUs (or a NUMA node) into docker/podman/apptainer/enroot
// arguments or a Kubernetes pod fragment, choosing CPUs with
// internal/bind's rules (whole cores, isolated CPUs left out).
package container
