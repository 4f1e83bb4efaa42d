// Package kubelet is gpunode's conformance suite against the real kubelet
// code (k8s.io/kubernetes v1.37.2). It lives in its own Go module so that the
// product module never imports k8s.io/kubernetes; run it with ./run.sh.
//
// topology_test.go compares gpunode's Topology Manager merge
// (internal/k8s/topology) with upstream's policies on randomized inputs;
// kubeletcfg_test.go runs kubelet's Topology, CPU and Memory Manager
// constructors on the same KubeletConfiguration and node as gpunode's
// 'kubelet lint' and checks that kubelet's start-up error is among lint's
// errors of that stage (and that lint is silent where kubelet starts);
// validation_test.go does the same against ValidateKubeletConfiguration.
// bench_test.go measures both merges on the same cases.
package kubelet
