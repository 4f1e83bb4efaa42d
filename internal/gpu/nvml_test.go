//go:build linux && cgo

package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

func pciInfo(addr string, devID uint32) nvml.PciInfo {
	var p nvml.PciInfo
	long := "0000" + strings.ToUpper(addr) // 8-digit domain, as NVML prints it
	for i := 0; i < len(long) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(long[i])
	}
	p.PciDeviceId = devID
	return p
}

func enable(b bool) nvml.EnableState {
	if b {
		return nvml.FEATURE_ENABLED
	}
	return nvml.FEATURE_DISABLED
}

// mockFromGPU builds a go-nvml mock device that reports g. Fields g lacks
// answer ERROR_NOT_SUPPORTED, as a real driver does.
func mockFromGPU(g GPU) *mock.Device {
	ns := nvml.ERROR_NOT_SUPPORTED
	var devID uint32
	fmt.Sscanf(g.PCIDeviceID, "0x%X", &devID)
	clk := func(m map[nvml.ClockType]uint32) func(nvml.ClockType) (uint32, nvml.Return) {
		return func(t nvml.ClockType) (uint32, nvml.Return) {
			if v := m[t]; v != 0 {
				return v, nvml.SUCCESS
			}
			return 0, ns
		}
	}
	d := &mock.Device{
		GetIndexFunc:   func() (int, nvml.Return) { return g.Index, nvml.SUCCESS },
		GetUUIDFunc:    func() (string, nvml.Return) { return g.UUID, nvml.SUCCESS },
		GetNameFunc:    func() (string, nvml.Return) { return g.Name, nvml.SUCCESS },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return pciInfo(g.PCIAddress, devID), nvml.SUCCESS },
		GetArchitectureFunc: func() (nvml.DeviceArchitecture, nvml.Return) {
			for a := nvml.DeviceArchitecture(0); a < 12; a++ {
				if archName(a) == g.Architecture && g.Architecture != "" {
					return a, nvml.SUCCESS
				}
			}
			return 0, ns
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) {
			var ma, mi int
			if _, err := fmt.Sscanf(g.ComputeCapability, "%d.%d", &ma, &mi); err != nil {
				return 0, 0, ns
			}
			return ma, mi, nvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			m := nvml.Memory{Total: g.MemoryBytes}
			if g.MemoryUsedBytes != nil {
				m.Used = *g.MemoryUsedBytes
			}
			return m, nvml.SUCCESS
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			if g.UtilizationPct == nil || g.MemoryUtilPct == nil {
				return nvml.Utilization{}, ns
			}
			return nvml.Utilization{Gpu: uint32(*g.UtilizationPct), Memory: uint32(*g.MemoryUtilPct)}, nvml.SUCCESS
		},
		GetNumaNodeIdFunc: func() (int, nvml.Return) { return 0, ns },
		GetPersistenceModeFunc: func() (nvml.EnableState, nvml.Return) {
			if g.Persistence == nil {
				return 0, ns
			}
			return enable(*g.Persistence), nvml.SUCCESS
		},
		GetComputeModeFunc: func() (nvml.ComputeMode, nvml.Return) {
			for m := nvml.ComputeMode(0); m < nvml.COMPUTEMODE_COUNT; m++ {
				if computeModeName(m) == g.ComputeMode {
					return m, nvml.SUCCESS
				}
			}
			return 0, ns
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.MIG == nil {
				return 0, 0, ns
			}
			b := func(v bool) int {
				if v {
					return nvml.DEVICE_MIG_ENABLE
				}
				return nvml.DEVICE_MIG_DISABLE
			}
			return b(g.MIG.Current), b(g.MIG.Pending), nvml.SUCCESS
		},
		GetClockInfoFunc:                clk(map[nvml.ClockType]uint32{nvml.CLOCK_GRAPHICS: g.Clocks.GraphicsMHz, nvml.CLOCK_SM: g.Clocks.SMMHz, nvml.CLOCK_MEM: g.Clocks.MemoryMHz}),
		GetApplicationsClockFunc:        clk(map[nvml.ClockType]uint32{nvml.CLOCK_GRAPHICS: g.Clocks.AppGraphicsMHz, nvml.CLOCK_MEM: g.Clocks.AppMemoryMHz}),
		GetMaxClockInfoFunc:             clk(map[nvml.ClockType]uint32{nvml.CLOCK_GRAPHICS: g.Clocks.MaxGraphicsMHz, nvml.CLOCK_SM: g.Clocks.MaxSMMHz, nvml.CLOCK_MEM: g.Clocks.MaxMemoryMHz}),
		GetDefaultApplicationsClockFunc: clk(map[nvml.ClockType]uint32{nvml.CLOCK_GRAPHICS: g.Clocks.DefaultAppGraphicsMHz}),
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			if !g.ClockEvents.Known {
				return 0, ns
			}
			return g.ClockEvents.Mask, nvml.SUCCESS
		},
		GetEccModeFunc: func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			if g.ECC == nil {
				return 0, 0, ns
			}
			return enable(g.ECC.Current), enable(g.ECC.Pending), nvml.SUCCESS
		},
		GetTotalEccErrorsFunc: func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
			cnt := g.ECC.Volatile
			if c == nvml.AGGREGATE_ECC {
				cnt = g.ECC.Aggregate
			}
			v := cnt.Corrected
			if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
				v = cnt.Uncorrected
			}
			if v == nil {
				return 0, ns
			}
			return *v, nvml.SUCCESS
		},
		GetRemappedRowsFunc: func() (int, int, bool, bool, nvml.Return) {
			if g.RemappedRows == nil {
				return 0, 0, false, false, ns
			}
			r := g.RemappedRows
			return r.Correctable, r.Uncorrectable, r.Pending, r.Failure, nvml.SUCCESS
		},
		GetRetiredPagesFunc: func(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
			if g.RetiredPages == nil {
				return nil, ns
			}
			n := g.RetiredPages.SingleBit
			if c == nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR {
				n = g.RetiredPages.DoubleBit
			}
			return make([]uint64, n), nvml.SUCCESS
		},
		GetRetiredPagesPendingStatusFunc: func() (nvml.EnableState, nvml.Return) {
			if g.RetiredPages == nil {
				return 0, ns
			}
			return enable(g.RetiredPages.Pending), nvml.SUCCESS
		},
		GetPowerUsageFunc: func() (uint32, nvml.Return) {
			if g.Power.DrawW == 0 {
				return 0, ns
			}
			return uint32(g.Power.DrawW*1000 + 0.5), nvml.SUCCESS
		},
		GetEnforcedPowerLimitFunc:     func() (uint32, nvml.Return) { return uint32(g.Power.LimitW * 1000), nvml.SUCCESS },
		GetCurrPcieLinkGenerationFunc: func() (int, nvml.Return) { return g.PCIe.Gen, nvml.SUCCESS },
		GetMaxPcieLinkGenerationFunc:  func() (int, nvml.Return) { return g.PCIe.MaxGen, nvml.SUCCESS },
		GetCurrPcieLinkWidthFunc:      func() (int, nvml.Return) { return g.PCIe.Width, nvml.SUCCESS },
		GetMaxPcieLinkWidthFunc:       func() (int, nvml.Return) { return g.PCIe.MaxWidth, nvml.SUCCESS },
		GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) {
			if g.TemperatureC == nil {
				return 0, ns
			}
			return uint32(*g.TemperatureC), nvml.SUCCESS
		},
		GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
			if len(g.NVLinks) == 0 {
				return 0, ns
			}
			if l >= len(g.NVLinks) {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return enable(g.NVLinks[l].Active), nvml.SUCCESS
		},
		GetNvLinkRemotePciInfoFunc: func(l int) (nvml.PciInfo, nvml.Return) {
			return pciInfo(g.NVLinks[l].RemotePCIAddress, 0), nvml.SUCCESS
		},
	}
	d.SetPersistenceModeFunc = func(s nvml.EnableState) nvml.Return {
		on := s == nvml.FEATURE_ENABLED
		g.Persistence = &on
		return nvml.SUCCESS
	}
	return d
}

func mockLib(st Status, devs []*mock.Device, missing ...string) *mock.Interface {
	miss := map[string]bool{}
	for _, m := range missing {
		miss[m] = true
	}
	var major, minor int
	fmt.Sscanf(st.CUDAVersion, "%d.%d", &major, &minor)
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return st.DriverVersion, nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) {
			return major*1000 + minor*10, nvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
		DeviceGetHandleByUUIDFunc: func(u string) (nvml.Device, nvml.Return) {
			for i, g := range st.GPUs {
				if g.UUID == u {
					return devs[i], nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if miss[s] {
					return errors.New("symbol not found")
				}
				return nil
			}}
		},
	}
}

// TestNVMLMatchesXML: a GPU parsed from nvidia-smi XML, served through a
// go-nvml mock, reads back through the NVML backend as the same model.
func TestNVMLMatchesXML(t *testing.T) {
	// The recorded samples (testdata/recorded) too: the go-nvml mock then
	// answers with real drivers' values.
	for _, name := range []string{"smi/h100x2-v12.xml", "smi/a100-v11-throttle.xml", "recorded/a100-sxm4-80gb-mig-535.xml",
		"recorded/tesla-t4-515.xml", "recorded/rtx-a5000x2-v13-590.xml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ParseSMIXML(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for i := range want.GPUs {
				g := &want.GPUs[i]
				g.ComputeCapability = "9.0"
				g.NVLinks = []NVLink{{Link: 0, Active: true, RemotePCIAddress: "0000:05:00.0"}, {Link: 1, Active: false}}
				if g.Architecture == "" {
					g.Architecture = "Ampere"
				}
			}
			want.Backend = KindNVML
			want.Sources = []string{"nvml"}
			// What NVML reads differently: the device count is the GPUs
			// it enumerates, no XML warnings; reset status, recovery
			// action, instant power and the XML's MIG devices are not read
			// through these mocks (MIG has its own tests).
			n := len(want.GPUs)
			want.AttachedGPUs, want.Warnings = &n, nil
			for i := range want.GPUs {
				g := &want.GPUs[i]
				g.Health, g.Power.InstantW, g.MIGInstances = nil, 0, nil
			}
			for i := range want.GPUs {
				// NVML reports memory used whenever it reports the total.
				if want.GPUs[i].MemoryUsedBytes == nil {
					zero := uint64(0)
					want.GPUs[i].MemoryUsedBytes = &zero
				}
			}
			var devs []*mock.Device
			for _, g := range want.GPUs {
				devs = append(devs, mockFromGPU(g))
			}
			b, err := NewNVML(mockLib(want, devs))
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
				t.Errorf("NVML model differs from XML model:\n--- nvml\n%s\n--- xml\n%s", g, w)
			}
		})
	}
}

// TestNVMLMissingSymbols: functions the driver lacks are never called, and a
// mock method that is not set (panics) only empties its field.
func TestNVMLMissingSymbols(t *testing.T) {
	g := GPU{Index: 0, UUID: "GPU-1", Name: "old", PCIAddress: "0000:18:00.0", PCIDeviceID: "0x20B010DE",
		ClockEvents: DecodeClockEvents(ReasonSWPowerCap)}
	d := mockFromGPU(g)
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		t.Fatal("called nvmlDeviceGetCurrentClocksEventReasons, which the driver lacks")
		return 0, nvml.ERROR_FUNCTION_NOT_FOUND
	}
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return ReasonHWSlowdown, nvml.SUCCESS }
	d.GetRemappedRowsFunc = nil // unset: the mock panics if called
	d.GetTemperatureFunc = nil
	st := Status{GPUs: []GPU{g}}
	b, err := NewNVML(mockLib(st, []*mock.Device{d}, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceSetGpuLockedClocks"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev := got.GPUs[0].ClockEvents; ev.Mask != ReasonHWSlowdown {
		t.Errorf("throttle fallback: %+v", ev)
	}
	if got.GPUs[0].TemperatureC != nil || got.GPUs[0].RemappedRows != nil {
		t.Errorf("unset mock methods must leave fields empty: %+v", got.GPUs[0])
	}
	if err := b.LockClocks(context.Background(), "GPU-1", ClockRange{MinMHz: 1, MaxMHz: 2}); !errors.Is(err, nvml.ERROR_FUNCTION_NOT_FOUND) {
		t.Errorf("LockClocks without the symbol: %v", err)
	}
	if err := b.SetPersistence(context.Background(), "GPU-404", true); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("unknown GPU: %v", err)
	}
	if err := b.SetPersistence(context.Background(), "GPU-1", true); err != nil {
		t.Errorf("SetPersistence: %v", err)
	}
}

func TestNVMLInitFailure(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := NewNVML(lib)
	if !errors.Is(err, nvml.ERROR_LIBRARY_NOT_FOUND) || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Fatalf("init failure: %v", err)
	}
	// An Init that panics (broken library wrapper) is an error, not a crash.
	_, err = NewNVML(&mock.Interface{})
	if err == nil {
		t.Fatal("unset Init: no error")
	}
}

// TestNVMLDGXA100: the go-nvml DGX A100 mock server (which implements only
// part of NVML) reads without crashing.
func TestNVMLDGXA100(t *testing.T) {
	b, err := NewNVML(dgxa100.New())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GPUs) != 8 || st.DriverVersion != "550.54.15" || st.CUDAVersion != "12.4" {
		t.Fatalf("%d GPUs driver %q cuda %q", len(st.GPUs), st.DriverVersion, st.CUDAVersion)
	}
	for _, g := range st.GPUs {
		if g.Name != "Mock NVIDIA A100-SXM4-40GB" && !strings.Contains(g.Name, "A100") {
			t.Errorf("GPU %d name %q", g.Index, g.Name)
		}
		if g.MIG == nil || g.PCIDeviceID != "0x20B010DE" || g.ComputeCapability != "8.0" {
			t.Errorf("GPU %d: mig %+v devid %q cc %q", g.Index, g.MIG, g.PCIDeviceID, g.ComputeCapability)
		}
	}
}

// TestNVMLMIGDevices: MIG devices of a GPU in MIG mode are listed with
// their GPU instance's profile and placement.
func TestNVMLMIGDevices(t *testing.T) {
	g := GPU{Index: 0, UUID: "GPU-1", Name: "A100", PCIAddress: "0000:07:00.0", PCIDeviceID: "0x20B010DE",
		MIG: &MIGMode{Current: true, Pending: true}}
	d := mockFromGPU(g)
	gi := &mock.GpuInstance{GetInfoFunc: func() (nvml.GpuInstanceInfo, nvml.Return) {
		return nvml.GpuInstanceInfo{Id: 3, ProfileId: 9, Placement: nvml.GpuInstancePlacement{Start: 4, Size: 4}}, nvml.SUCCESS
	}}
	migDev := func(ci int, uuid string) *mock.Device {
		return &mock.Device{
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return 3, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
			GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		}
	}
	devs := []*mock.Device{migDev(0, "MIG-a"), migDev(1, "MIG-b")}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < len(devs) {
			return devs[i], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	d.GetGpuInstanceByIdFunc = func(int) (nvml.GpuInstance, nvml.Return) { return gi, nvml.SUCCESS }
	b, err := NewNVML(mockLib(Status{GPUs: []GPU{g}}, []*mock.Device{d}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := st.GPUs[0].MIGInstances
	if len(got) != 1 || got[0].ProfileID != 9 || got[0].Start != 4 || len(got[0].ComputeInstances) != 2 || got[0].ComputeInstances[1].UUID != "MIG-b" {
		t.Errorf("MIG instances %+v", got)
	}
}

// Defect: NVML calls had no deadline. A GPU whose reads block in the
// driver (here: GetPowerUsage never returns) is abandoned at the deadline
// and reported as a failed call naming the GPU and the call; the other
// GPUs are read.
func TestNVMLWedgedGPU(t *testing.T) {
	data, err := os.ReadFile("testdata/recorded/tesla-t4-515.xml")
	if err != nil {
		t.Fatal(err)
	}
	one, err := ParseSMIXML(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	g0 := one.GPUs[0]
	g1 := g0
	g1.Index, g1.UUID, g1.PCIAddress = 1, "GPU-e37e67a5-91dd-3774-a5cb-99096249601a", "0000:00:1f.0"
	st := Status{DriverVersion: one.DriverVersion, CUDAVersion: one.CUDAVersion, GPUs: []GPU{g0, g1}}
	wedged := mockFromGPU(g0)
	block := make(chan struct{})
	defer close(block)
	wedged.GetPowerUsageFunc = func() (uint32, nvml.Return) { <-block; return 0, nvml.ERROR_GPU_IS_LOST }
	b, err := NewNVML(mockLib(st, []*mock.Device{wedged, mockFromGPU(g1)}))
	if err != nil {
		t.Fatal(err)
	}
	b.(*nvmlBackend).SetTimeout(100 * time.Millisecond)
	got, err := b.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GPUs) != 1 || got.GPUs[0].Index != 1 {
		t.Fatalf("GPUs %+v", got.GPUs)
	}
	if len(got.FailedCalls) != 1 || got.FailedCalls[0].Call != "nvmlDeviceGetPowerUsage" || got.FailedCalls[0].GPU != "0" || !got.FailedCalls[0].Timeout {
		t.Errorf("failed calls %+v", got.FailedCalls)
	}
	m := checkByKey(HealthChecks(got, HealthOptions{}))
	if c := m["gpu.backend.call/gpu0"]; c.Status != "error" || !strings.Contains(c.Current, "nvmlDeviceGetPowerUsage (GPU 0): timed out") {
		t.Errorf("check %+v", c)
	}
}
