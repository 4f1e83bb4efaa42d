// Package kubeletcfg loads, lints and recommends kubelet configuration
// (KubeletConfiguration, kubelet.config.k8s.io/v1beta1) for GPU nodes.
//
// The KubeletConfiguration type is gpunode's own (types.go): linking
// k8s.io/kubelet/config/v1beta1 would run component-base's package
// initialisation (feature gates, metrics registry, prometheus client) in
// every gpunode command. conformance/kubelet keeps the type field-for-field
// equal to upstream's and checks that both decode a corpus alike.
//
// Load decodes a KubeletConfiguration file strictly: unknown fields, wrong
// types and a wrong apiVersion/kind are errors that name the file and field.
// Defaults that matter for the resource managers are applied as kubelet does
// (policies none/None/none, scope container, evictionHard defaults when the
// field is absent).
//
// Lint reports every rule for which kubelet v1.37.2 refuses to start, with
// kubelet's own error text, and the settings it silently ignores or that
// quietly defeat NUMA alignment (warnings). The rules come from
// pkg/kubelet/apis/config/validation, cmd/kubelet/app/server.go
// (reservedSystemCPUs, kube/system reserved parsing), the CPU Manager
// (cpumanager/cpu_manager.go, policy_static.go, policy_options.go), the
// Memory Manager (memorymanager/memory_manager.go, policy_static.go) and the
// Topology Manager (topologymanager/topology_manager.go, policy_options.go).
// Rules that need the machine (NUMA ids, CPU ids, memory capacity, node
// count, distances) run only when a node model is given.
//
// Recommend builds a KubeletConfiguration for a node and a profile
// (training or inference) that Lint accepts: static CPU Manager with
// reservedSystemCPUs spread over the NUMA nodes that have CPUs (whole cores,
// SMT siblings together), Static Memory Manager with a reservedMemory whose
// sum equals kubeReserved + systemReserved + evictionHard exactly, and a
// Topology Manager policy and scope per profile.
package kubeletcfg
