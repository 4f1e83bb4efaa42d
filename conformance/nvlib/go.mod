module github.com/gpunode/gpunode/conformance/nvlib

go 1.26.8

replace github.com/gpunode/gpunode => ../..

require (
	github.com/NVIDIA/go-nvlib v0.13.0
	github.com/gpunode/gpunode v0.0.0-00010101000000-000000000000
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	k8s.io/client-go v0.37.2 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
