module github.com/gpunode/gpunode/conformance/ctk

go 1.26.8

replace github.com/gpunode/gpunode => ../..

require (
	github.com/NVIDIA/nvidia-container-toolkit v1.20.2
	github.com/gpunode/gpunode v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v3 v3.0.5
	tags.cncf.io/container-device-interface v1.1.2
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/opencontainers/runtime-spec v1.3.0 // indirect
	github.com/pelletier/go-toml v1.9.5 // indirect
	github.com/pelletier/go-toml/v2 v2.4.3 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
	k8s.io/utils v0.0.0-20261023123148-ca04ba58ecab // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
	tags.cncf.io/container-device-interface/specs-go v1.1.1 // indirect
)
