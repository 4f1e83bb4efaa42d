//go:build cgo

// Command cgo is the cgo side of the NVML prototype (see
// scripts/nvmlproto/purego): the same calls through go-nvml, which
// gpunode's NVML backend uses. Build with CGO_ENABLED=1.
package main

import (
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func busID(p nvml.PciInfo) string {
	var b []byte
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func run() error {
	l := nvml.New()
	if r := l.Init(); r != nvml.SUCCESS {
		return fmt.Errorf("nvmlInit_v2: %s (%d)", l.ErrorString(r), r)
	}
	defer l.Shutdown()
	if v, r := l.SystemGetDriverVersion(); r == nvml.SUCCESS {
		fmt.Printf("driver %s\n", v)
	}
	n, r := l.DeviceGetCount()
	if r != nvml.SUCCESS {
		return fmt.Errorf("nvmlDeviceGetCount_v2: %s", l.ErrorString(r))
	}
	for i := range min(n, 64) {
		dev, r := l.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return fmt.Errorf("GPU %d: nvmlDeviceGetHandleByIndex_v2: %s", i, l.ErrorString(r))
		}
		p, r := l.DeviceGetPciInfo(dev)
		if r != nvml.SUCCESS {
			return fmt.Errorf("GPU %d: nvmlDeviceGetPciInfo_v3: %s", i, l.ErrorString(r))
		}
		uuid, _ := l.DeviceGetUUID(dev)
		name, _ := l.DeviceGetName(dev)
		fmt.Printf("%d %s %s %s\n", i, busID(p), uuid, name)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nvml-cgo:", err)
		os.Exit(3)
	}
}
