// Package reserved compares gpunode's kubeReserved/systemReserved parsing
// (kubeletcfg.ParseReserved) with the function kubelet v1.37.2 runs at
// startup. kubelet keeps that function unexported in cmd/kubelet/app and only
// calls it deep inside its start-up (after it has reached a container
// runtime), so upstream.go binds it by its linker name. This package sits
// apart from the rest of the suite so that only its test binary links
// kubelet's whole command package.
package reserved
