// Package dra is gpunode's Dynamic Resource Allocation what-if
// (`gpunode k8s dra`, seed sections 5.3 and 5.5.5).
//
// Slices builds the resource.k8s.io/v1 ResourceSlices the NVIDIA GPU DRA
// driver (gpu.nvidia.com) would publish for a node: full GPUs, existing MIG
// instances (static) or every MIG placement as a partitionable device with
// one counter set per GPU (dynamic), in the driver's split layout.
//
// LoadSlices, LoadClasses, LoadClaims and LoadTemplates read kubectl exports
// (documents or a List; v1, v1beta2, v1beta1 converted) strictly through
// internal/k8s/objects; NewCELCache and CompileSelector are the CEL
// environment (upstream's k8s.io/dynamic-resource-allocation/cel). `gpunode
// k8s lint` shares both.
//
// Run decides whether claims fit on each node with the upstream structured
// allocator's semantics (v1.37 default features): the upstream allocator
// and gpunode's exact search run side by side; the search proves a no-fit
// with pruning (matchAttribute values fixed first, a flow bound through
// counter sets, memoised failures), the upstream allocator supplies the
// devices of a fit. Explanations give the first failing request in numbers
// and the nearest fits. Bad input is an *InputError or an *objects.Error.
package dra
