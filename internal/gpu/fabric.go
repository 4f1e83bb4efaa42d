package gpu

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// fabricManagerComm is the process name of NVIDIA's fabric manager daemon
// (the nvidia-fabricmanager package's nv-fabricmanager binary; comm is cut
// to 15 characters).
const fabricManagerComm = "nv-fabricmanage"

// fabricManagerUnit is the systemd unit of the fabric manager.
const fabricManagerUnit = "nvidia-fabricmanager.service"

// maxProcEntries bounds the /proc scan.
const maxProcEntries = 1 << 16

// NVSwitches lists the NVIDIA NVSwitch functions on the PCI bus (vendor
// 0x10de, class 0x0680 "other bridge"), in bdf order.
func NVSwitches(host *hostfs.FS) []string {
	const dir = "/sys/bus/pci/devices"
	names, err := host.ReadDirNames(dir)
	if err != nil {
		return nil
	}
	if len(names) > maxPCIDevices {
		names = names[:maxPCIDevices]
	}
	var out []string
	for _, n := range names {
		ids, err := topo.ReadPCIIDs(host, path.Join(dir, n))
		if err == nil && ids.Kind() == topo.KindNVSwitch {
			out = append(out, n)
		}
	}
	return out
}

// FabricManagerRunning says whether nvidia-fabricmanager runs on host, and
// how that was seen: a process named nv-fabricmanager under /proc, else
// systemd's record of the unit's invocation under /run/systemd/units
// (present while the unit is active).
func FabricManagerRunning(host *hostfs.FS) (bool, string) {
	names, err := host.ReadDirNames("/proc")
	if err == nil {
		for i, n := range names {
			if i >= maxProcEntries {
				break
			}
			if _, err := strconv.Atoi(n); err != nil {
				continue
			}
			comm, err := host.ReadString("/proc/" + n + "/comm")
			if err == nil && strings.TrimSpace(comm) == fabricManagerComm {
				return true, "process " + n + " (/proc/" + n + "/comm)"
			}
		}
	}
	if host.Exists("/run/systemd/units/invocation:" + fabricManagerUnit) {
		return true, "/run/systemd/units/invocation:" + fabricManagerUnit
	}
	return false, ""
}

// FabricManagerCheck is gpu.fabricmanager: on an NVSwitch system (NVSwitch
// functions on the bus, or GPUs reporting a fabric state) the fabric
// manager must run. ok is false on other systems (nothing to check).
func FabricManagerCheck(host *hostfs.FS, st Status) (check.Check, bool) {
	switches := NVSwitches(host)
	fabricGPUs := 0
	for _, g := range st.GPUs {
		if h := g.Health; h != nil && h.FabricState != "" && !strings.EqualFold(h.FabricState, "Not Supported") {
			fabricGPUs++
		}
	}
	if len(switches) == 0 && fabricGPUs == 0 {
		return check.Check{}, false
	}
	c := check.Check{ID: CheckFabricManager, Layer: Layer, Section: "2.5", Expected: "nvidia-fabricmanager running",
		Detail: fmt.Sprintf("%d NVSwitch functions on the PCI bus, %d GPUs with a fabric state", len(switches), fabricGPUs),
		Reason: healthReasons[CheckFabricManager]}
	if ok, how := FabricManagerRunning(host); ok {
		c.Status, c.Current = check.OK, "nvidia-fabricmanager running: "+how
		return c, true
	}
	c.Status, c.Current = check.Error, "nvidia-fabricmanager is not running on an NVSwitch system"
	c.Fix = []string{"systemctl enable --now nvidia-fabricmanager   # its version must match the driver's"}
	return c, true
}
