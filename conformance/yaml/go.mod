module github.com/gpunode/gpunode/conformance/yaml

go 1.26.8

replace github.com/gpunode/gpunode => ../..

require (
	github.com/gpunode/gpunode v0.0.0-00010101000000-000000000000
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab // indirect
)
