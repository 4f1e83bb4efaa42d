// Package dra is gpunode's conformance suite for `gpunode k8s dra`: the
// exact search against the upstream structured allocator
// (k8s.io/dynamic-resource-allocation v0.37.2) on random NVIDIA-shaped
// scenarios, and `dra slices` output against the apiserver's own
// ResourceSlice validation (k8s.io/kubernetes pkg/apis/resource/validation).
package dra
