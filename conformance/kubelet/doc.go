// Package kubelet is gpunode's conformance suite against the real kubelet
// code (k8s.io/kubernetes v1.37.2). It lives in its own Go module so that the
// product module never imports k8s.io/kubernetes; run it with ./run.sh.
//
// topology_test.go compares gpunode's Topology Manager merge
// (internal/k8s/topology) with upstream's policies on randomized inputs;
// bench_test.go measures both on the same cases.
package kubelet
