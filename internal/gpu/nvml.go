//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlBackend reads and writes GPUs through NVML.
type nvmlBackend struct {
	lib nvml.Interface
	mu  sync.Mutex
	// syms caches symbol lookups (true: present).
	syms map[string]bool
	// timeout is the deadline of each GPU's reads (0: DefaultTimeout).
	timeout time.Duration
}

// SetTimeout sets the deadline of each GPU's NVML reads (--gpu-timeout).
func (b *nvmlBackend) SetTimeout(d time.Duration) { b.timeout = d }

var _ Backend = (*nvmlBackend)(nil)

// HaveNVML says whether this build has the NVML backend (a cgo build on
// Linux: go-nvml dlopens libnvidia-ml.so.1 through cgo).
const HaveNVML = true

// OpenNVML loads libnvidia-ml.so.1 and initialises NVML. It fails (without
// crashing) when the library or the kernel driver is missing.
func OpenNVML() (Backend, error) { return NewNVML(nvml.New()) }

// NewNVML initialises lib (the real library or a go-nvml mock) and returns a
// backend using it.
func NewNVML(lib nvml.Interface) (Backend, error) {
	ret := NVMLCallRet(lib.Init)
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return nil, fmt.Errorf("nvml.Init: %w (%w)", ErrNVMLLibraryNotFound, nvmlErr(ret))
	}
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml.Init: %w", nvmlErr(ret))
	}
	return &nvmlBackend{lib: lib, syms: map[string]bool{}}, nil
}

// NVML returns the go-nvml interface behind b, for callers (MIG live
// operations) that need NVML calls beyond Backend.
func (b *nvmlBackend) NVML() nvml.Interface { return b.lib }

// NVMLer is implemented by the NVML backend.
type NVMLer interface{ NVML() nvml.Interface }

func (b *nvmlBackend) Name() string { return KindNVML }

func (b *nvmlBackend) Close() error {
	if ret := NVMLCallRet(b.lib.Shutdown); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml.Shutdown: %w", nvmlErr(ret))
	}
	return nil
}

// nvmlErr makes an nvml.Return usable with errors.Is.
func nvmlErr(ret nvml.Return) error { return ret }

// NVMLCall runs one NVML getter. A panic (a go-nvml mock method that is not set,
// or a wrapper bug) becomes ERROR_FUNCTION_NOT_FOUND so one field can never
// take the process down.
func NVMLCall[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			var zero T
			v, ret = zero, nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

// NVMLCallRet is NVMLCall for an NVML call that returns only a status.
func NVMLCallRet(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

// NVMLCall2 is NVMLCall for an NVML getter of two values.
func NVMLCall2[A, B any](f func() (A, B, nvml.Return)) (a A, bb B, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			var za A
			var zb B
			a, bb, ret = za, zb, nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

// has reports whether the loaded library exports symbol. Functions added to
// NVML after the oldest driver gpunode supports are looked up first: calling
// a missing one through go-nvml aborts the process.
func (b *nvmlBackend) has(symbol string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.syms[symbol]; ok {
		return v
	}
	ok := NVMLCallRet(func() nvml.Return {
		if err := b.lib.Extensions().LookupSymbol(symbol); err != nil {
			return nvml.ERROR_FUNCTION_NOT_FOUND
		}
		return nvml.SUCCESS
	}) == nvml.SUCCESS
	b.syms[symbol] = ok
	return ok
}

func archName(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "Kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "Maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "Pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "Volta"
	case nvml.DEVICE_ARCH_TURING:
		return "Turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "Ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "Ada"
	case nvml.DEVICE_ARCH_HOPPER:
		return "Hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	}
	return ""
}

func computeModeName(m nvml.ComputeMode) string {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return "Default"
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "Exclusive_Thread"
	case nvml.COMPUTEMODE_PROHIBITED:
		return "Prohibited"
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return "Exclusive_Process"
	}
	return ""
}

// busID converts NVML's NUL-terminated int8 bus id.
func busID(p nvml.PciInfo) string {
	var sb strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	if sb.Len() == 0 {
		return fmt.Sprintf("%08x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	return sb.String()
}

// cudaVersion formats NVML's CUDA driver version (12040 -> "12.4").
func cudaVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

func (b *nvmlBackend) Status(ctx context.Context) (Status, error) {
	st := Status{Backend: KindNVML}
	if v, ret := NVMLCall(b.lib.SystemGetDriverVersion); ret == nvml.SUCCESS {
		st.DriverVersion = v
	}
	if v, ret := NVMLCall(b.lib.SystemGetCudaDriverVersion); ret == nvml.SUCCESS {
		st.CUDAVersion = cudaVersion(v)
	}
	n, err := withDeadline(ctx, b.timeout, "nvmlDeviceGetCount", "all", func(context.Context) (int, error) {
		n, ret := NVMLCall(b.lib.DeviceGetCount)
		if ret != nvml.SUCCESS {
			return 0, fmt.Errorf("nvml: device count: %w", nvmlErr(ret))
		}
		return n, nil
	})
	if err != nil {
		return Status{}, err
	}
	st.AttachedGPUs = &n
	st.Sources = []string{"nvml"}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return Status{}, err
		}
		// Each GPU is read under its own deadline, in a goroutine the
		// deadline can abandon (withDeadline): a wedged GPU blocks inside
		// the driver and ignores contexts. Its reads are reported as a
		// failed call; the other GPUs are still read.
		var last atomic.Value
		last.Store("nvmlDeviceGetHandleByIndex")
		g, err := withDeadline(ctx, b.timeout, "NVML reads", fmt.Sprint(i), func(context.Context) (GPU, error) {
			dev, ret := NVMLCall(func() (nvml.Device, nvml.Return) { return b.lib.DeviceGetHandleByIndex(i) })
			if ret != nvml.SUCCESS {
				return GPU{}, fmt.Errorf("nvml: GPU %d: handle: %w", i, nvmlErr(ret))
			}
			return b.readGPU(i, dev, func(call string) { last.Store(call) })
		})
		var ce *CallError
		if errors.As(err, &ce) && ce.Timeout {
			ce.Call = fmt.Sprint(last.Load())
			st.FailedCalls = append(st.FailedCalls, *ce)
			st.Warnings = append(st.Warnings, ce.Error())
			continue
		}
		if err != nil {
			return Status{}, err
		}
		st.GPUs = append(st.GPUs, g)
	}
	st.normalize()
	return st, nil
}

// readGPU reads one GPU; step names each call group before it runs, so a
// timeout can say which call did not answer.
func (b *nvmlBackend) readGPU(i int, d nvml.Device, step func(call string)) (GPU, error) {
	g := GPU{Index: i}
	step("nvmlDeviceGetUUID")
	if v, ret := NVMLCall(d.GetIndex); ret == nvml.SUCCESS {
		g.Index = v
	}
	uuid, ret := NVMLCall(d.GetUUID)
	if ret != nvml.SUCCESS {
		return GPU{}, fmt.Errorf("nvml: GPU %d: UUID: %w", i, nvmlErr(ret))
	}
	g.UUID = uuid
	g.Name, _ = NVMLCall(d.GetName)
	if p, ret := NVMLCall(d.GetPciInfo); ret == nvml.SUCCESS {
		if a, err := NormalizePCIAddress(busID(p)); err == nil {
			g.PCIAddress = a
		}
		g.PCIDeviceID = fmt.Sprintf("0x%08X", p.PciDeviceId)
	}
	if a, ret := NVMLCall(d.GetArchitecture); ret == nvml.SUCCESS {
		g.Architecture = archName(a)
	}
	if ma, mi, ret := NVMLCall2(d.GetCudaComputeCapability); ret == nvml.SUCCESS {
		g.ComputeCapability = fmt.Sprintf("%d.%d", ma, mi)
	}
	if a, ret := NVMLCall(d.GetAttributes); ret == nvml.SUCCESS && a.MultiprocessorCount > 0 {
		g.SMCount = int(a.MultiprocessorCount)
	}
	step("nvmlDeviceGetMemoryInfo")
	if m, ret := NVMLCall(d.GetMemoryInfo); ret == nvml.SUCCESS {
		g.MemoryBytes = m.Total
		used := m.Used
		g.MemoryUsedBytes = &used
	}
	step("nvmlDeviceGetUtilizationRates")
	if u, ret := NVMLCall(d.GetUtilizationRates); ret == nvml.SUCCESS && u.Gpu <= 100 && u.Memory <= 100 {
		gu, mu := int(u.Gpu), int(u.Memory)
		g.UtilizationPct, g.MemoryUtilPct = &gu, &mu
	}
	if b.has("nvmlDeviceGetNumaNodeId") {
		if n, ret := NVMLCall(d.GetNumaNodeId); ret == nvml.SUCCESS && n >= 0 {
			g.NUMANode = &n
		}
	}
	if b.has("nvmlDeviceGetCpuAffinity") {
		words, ret := NVMLCall(func() ([]uint, nvml.Return) { return d.GetCpuAffinity(maxAffinityCPUs) })
		if ret == nvml.SUCCESS {
			g.CPUAffinity = CPUsFromWords(words).String()
		}
	}
	if p, ret := NVMLCall(d.GetPersistenceMode); ret == nvml.SUCCESS {
		on := p == nvml.FEATURE_ENABLED
		g.Persistence = &on
	}
	if m, ret := NVMLCall(d.GetComputeMode); ret == nvml.SUCCESS {
		g.ComputeMode = computeModeName(m)
	}
	if cur, pend, ret := NVMLCall2(d.GetMigMode); ret == nvml.SUCCESS {
		g.MIG = &MIGMode{Current: cur == nvml.DEVICE_MIG_ENABLE, Pending: pend == nvml.DEVICE_MIG_ENABLE}
	}
	step("nvmlDeviceGetClockInfo")
	clock := func(f func(nvml.ClockType) (uint32, nvml.Return), t nvml.ClockType) uint32 {
		v, ret := NVMLCall(func() (uint32, nvml.Return) { return f(t) })
		if ret != nvml.SUCCESS {
			return 0
		}
		return v
	}
	g.Clocks = Clocks{
		GraphicsMHz: clock(d.GetClockInfo, nvml.CLOCK_GRAPHICS), SMMHz: clock(d.GetClockInfo, nvml.CLOCK_SM),
		MemoryMHz:      clock(d.GetClockInfo, nvml.CLOCK_MEM),
		AppGraphicsMHz: clock(d.GetApplicationsClock, nvml.CLOCK_GRAPHICS), AppMemoryMHz: clock(d.GetApplicationsClock, nvml.CLOCK_MEM),
		MaxGraphicsMHz: clock(d.GetMaxClockInfo, nvml.CLOCK_GRAPHICS), MaxSMMHz: clock(d.GetMaxClockInfo, nvml.CLOCK_SM),
		MaxMemoryMHz: clock(d.GetMaxClockInfo, nvml.CLOCK_MEM),
	}
	g.Clocks.DefaultAppGraphicsMHz = clock(d.GetDefaultApplicationsClock, nvml.CLOCK_GRAPHICS)
	switch {
	case b.has("nvmlDeviceGetCurrentClocksEventReasons"):
		if m, ret := NVMLCall(d.GetCurrentClocksEventReasons); ret == nvml.SUCCESS {
			g.ClockEvents = DecodeClockEvents(m)
		}
	case b.has("nvmlDeviceGetCurrentClocksThrottleReasons"):
		if m, ret := NVMLCall(d.GetCurrentClocksThrottleReasons); ret == nvml.SUCCESS {
			g.ClockEvents = DecodeClockEvents(m)
		}
	}
	step("nvmlDeviceGetEccMode")
	if cur, pend, ret := NVMLCall2(d.GetEccMode); ret == nvml.SUCCESS {
		e := &ECC{Current: cur == nvml.FEATURE_ENABLED, Pending: pend == nvml.FEATURE_ENABLED}
		ecc := func(t nvml.MemoryErrorType, c nvml.EccCounterType) *uint64 {
			v, ret := NVMLCall(func() (uint64, nvml.Return) { return d.GetTotalEccErrors(t, c) })
			if ret != nvml.SUCCESS {
				return nil
			}
			return &v
		}
		e.Volatile = ECCCounts{Corrected: ecc(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC),
			Uncorrected: ecc(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)}
		e.Aggregate = ECCCounts{Corrected: ecc(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC),
			Uncorrected: ecc(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)}
		g.ECC = e
	}
	if b.has("nvmlDeviceGetRemappedRows") {
		var rr RemappedRows
		ret := NVMLCallRet(func() nvml.Return {
			c, u, p, f, ret := d.GetRemappedRows()
			rr = RemappedRows{Correctable: c, Uncorrectable: u, Pending: p, Failure: f}
			return ret
		})
		if ret == nvml.SUCCESS {
			g.RemappedRows = &rr
		}
	}
	if sb, ret := NVMLCall(func() ([]uint64, nvml.Return) {
		return d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
	}); ret == nvml.SUCCESS {
		db, _ := NVMLCall(func() ([]uint64, nvml.Return) {
			return d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
		})
		rp := &RetiredPages{SingleBit: len(sb), DoubleBit: len(db)}
		if p, ret := NVMLCall(d.GetRetiredPagesPendingStatus); ret == nvml.SUCCESS {
			rp.Pending = p == nvml.FEATURE_ENABLED
		}
		g.RetiredPages = rp
	}
	step("nvmlDeviceGetPowerUsage")
	if p, ret := NVMLCall(d.GetPowerUsage); ret == nvml.SUCCESS {
		g.Power.DrawW = float64(p) / 1000
	}
	if p, ret := NVMLCall(d.GetEnforcedPowerLimit); ret == nvml.SUCCESS {
		g.Power.LimitW = float64(p) / 1000
	}
	geti := func(f func() (int, nvml.Return)) int {
		v, ret := NVMLCall(f)
		if ret != nvml.SUCCESS {
			return 0
		}
		return v
	}
	g.PCIe = PCIeLink{Gen: geti(d.GetCurrPcieLinkGeneration), MaxGen: geti(d.GetMaxPcieLinkGeneration),
		Width: geti(d.GetCurrPcieLinkWidth), MaxWidth: geti(d.GetMaxPcieLinkWidth)}
	if t, ret := NVMLCall(func() (uint32, nvml.Return) { return d.GetTemperature(nvml.TEMPERATURE_GPU) }); ret == nvml.SUCCESS {
		ti := int(t)
		g.TemperatureC = &ti
	}
	step("nvmlDeviceGetNvLinkState")
	g.NVLinks = b.readNVLinks(d)
	step("nvmlDeviceGetNvLinkErrorCounter")
	g.Health = b.readHealth(d, g.NVLinks)
	if g.MIG != nil && g.MIG.Current {
		step("nvmlDeviceGetMigDeviceHandleByIndex")
		g.MIGInstances = b.readMIGDevices(d)
	}
	return g, nil
}

// fabricStateNames name nvmlGpuFabricState_t values as nvidia-smi prints
// them.
var fabricStateNames = map[uint8]string{
	nvml.GPU_FABRIC_STATE_NOT_SUPPORTED: "Not Supported",
	nvml.GPU_FABRIC_STATE_NOT_STARTED:   "Not Started",
	nvml.GPU_FABRIC_STATE_IN_PROGRESS:   "In Progress",
	nvml.GPU_FABRIC_STATE_COMPLETED:     "Completed",
}

// readHealth reads the fabric registration (nvmlDeviceGetGpuFabricInfo,
// NVSwitch systems) and the error counters of the active NVLinks.
func (b *nvmlBackend) readHealth(d nvml.Device, links []NVLink) *Health {
	h := &Health{}
	if b.has("nvmlDeviceGetGpuFabricInfo") {
		if f, ret := NVMLCall(d.GetGpuFabricInfo); ret == nvml.SUCCESS && f.State != nvml.GPU_FABRIC_STATE_NOT_SUPPORTED {
			h.FabricState = fabricStateNames[f.State]
			if h.FabricState == "" {
				h.FabricState = fmt.Sprintf("state %d", f.State)
			}
			if r := nvml.Return(f.Status); r == nvml.SUCCESS {
				h.FabricStatus = "Success"
			} else {
				h.FabricStatus = r.Error()
			}
		}
	}
	for _, l := range links {
		if !l.Active {
			continue
		}
		cnt := func(c nvml.NvLinkErrorCounter) (uint64, bool) {
			v, ret := NVMLCall(func() (uint64, nvml.Return) { return d.GetNvLinkErrorCounter(l.Link, c) })
			return v, ret == nvml.SUCCESS
		}
		e := NVLinkErrors{Link: l.Link}
		var ok [4]bool
		e.Replay, ok[0] = cnt(nvml.NVLINK_ERROR_DL_REPLAY)
		e.Recovery, ok[1] = cnt(nvml.NVLINK_ERROR_DL_RECOVERY)
		e.CRCFlit, ok[2] = cnt(nvml.NVLINK_ERROR_DL_CRC_FLIT)
		e.CRCData, ok[3] = cnt(nvml.NVLINK_ERROR_DL_CRC_DATA)
		if ok[0] || ok[1] || ok[2] || ok[3] {
			h.NVLinkErrors = append(h.NVLinkErrors, e)
		}
	}
	if h.FabricState == "" && len(h.NVLinkErrors) == 0 {
		return nil
	}
	return h
}

// readMIGDevices lists the MIG devices (compute instances) of a GPU in MIG
// mode with their GPU instance's profile id and placement. Profile names are
// left to the MIG layer (they need its catalogue).
func (b *nvmlBackend) readMIGDevices(d nvml.Device) []MIGInstance {
	n, ret := NVMLCall(d.GetMaxMigDeviceCount)
	if ret != nvml.SUCCESS {
		return nil
	}
	var out []MIGInstance
	byGI := map[int]int{}
	for i := 0; i < n; i++ {
		m, ret := NVMLCall(func() (nvml.Device, nvml.Return) { return d.GetMigDeviceHandleByIndex(i) })
		if ret != nvml.SUCCESS {
			continue // an unused MIG device slot
		}
		giID, ret1 := NVMLCall(m.GetGpuInstanceId)
		ciID, ret2 := NVMLCall(m.GetComputeInstanceId)
		if ret1 != nvml.SUCCESS || ret2 != nvml.SUCCESS {
			continue
		}
		uuid, _ := NVMLCall(m.GetUUID)
		k, ok := byGI[giID]
		if !ok {
			gi := MIGInstance{GPUInstanceID: giID}
			if h, ret := NVMLCall(func() (nvml.GpuInstance, nvml.Return) { return d.GetGpuInstanceById(giID) }); ret == nvml.SUCCESS {
				if info, ret := NVMLCall(h.GetInfo); ret == nvml.SUCCESS {
					gi.ProfileID = int(info.ProfileId)
					gi.Start, gi.Size = int(info.Placement.Start), int(info.Placement.Size)
				}
			}
			out = append(out, gi)
			k = len(out) - 1
			byGI[giID] = k
		}
		out[k].ComputeInstances = append(out[k].ComputeInstances, MIGCompute{ComputeInstanceID: ciID, UUID: uuid})
	}
	return out
}

// readNVLinks walks links until NVML says the link index is invalid.
func (b *nvmlBackend) readNVLinks(d nvml.Device) []NVLink {
	var out []NVLink
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		s, ret := NVMLCall(func() (nvml.EnableState, nvml.Return) { return d.GetNvLinkState(l) })
		if ret != nvml.SUCCESS {
			if errors.Is(ret, nvml.ERROR_NOT_SUPPORTED) && l > 0 {
				continue // a link index the GPU does not wire up
			}
			if l == 0 || errors.Is(ret, nvml.ERROR_INVALID_ARGUMENT) {
				break
			}
			continue
		}
		link := NVLink{Link: l, Active: s == nvml.FEATURE_ENABLED}
		if link.Active {
			if p, ret := NVMLCall(func() (nvml.PciInfo, nvml.Return) { return d.GetNvLinkRemotePciInfo(l) }); ret == nvml.SUCCESS {
				if a, err := NormalizePCIAddress(busID(p)); err == nil {
					link.RemotePCIAddress = a
				}
			}
		}
		out = append(out, link)
	}
	return out
}

func (b *nvmlBackend) device(uuid string) (nvml.Device, error) {
	d, ret := NVMLCall(func() (nvml.Device, nvml.Return) { return b.lib.DeviceGetHandleByUUID(uuid) })
	if ret != nvml.SUCCESS {
		if errors.Is(ret, nvml.ERROR_NOT_FOUND) || errors.Is(ret, nvml.ERROR_INVALID_ARGUMENT) {
			return nil, fmt.Errorf("%w %q", ErrUnknownGPU, uuid)
		}
		return nil, fmt.Errorf("nvml: GPU %s: %w", uuid, nvmlErr(ret))
	}
	return d, nil
}

func (b *nvmlBackend) SetPersistence(ctx context.Context, uuid string, on bool) error {
	d, err := b.device(uuid)
	if err != nil {
		return err
	}
	mode := nvml.FEATURE_DISABLED
	if on {
		mode = nvml.FEATURE_ENABLED
	}
	if ret := NVMLCallRet(func() nvml.Return { return d.SetPersistenceMode(mode) }); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %s: set persistence mode: %w", uuid, nvmlErr(ret))
	}
	return nil
}

func (b *nvmlBackend) LockClocks(ctx context.Context, uuid string, r ClockRange) error {
	d, err := b.device(uuid)
	if err != nil {
		return err
	}
	if !b.has("nvmlDeviceSetGpuLockedClocks") {
		return fmt.Errorf("nvml: GPU %s: lock clocks: %w", uuid, nvml.ERROR_FUNCTION_NOT_FOUND)
	}
	if ret := NVMLCallRet(func() nvml.Return { return d.SetGpuLockedClocks(r.MinMHz, r.MaxMHz) }); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %s: lock clocks %d-%d MHz: %w", uuid, r.MinMHz, r.MaxMHz, nvmlErr(ret))
	}
	return nil
}

func (b *nvmlBackend) ResetClocks(ctx context.Context, uuid string) error {
	d, err := b.device(uuid)
	if err != nil {
		return err
	}
	if !b.has("nvmlDeviceResetGpuLockedClocks") {
		return fmt.Errorf("nvml: GPU %s: reset clocks: %w", uuid, nvml.ERROR_FUNCTION_NOT_FOUND)
	}
	if ret := NVMLCallRet(d.ResetGpuLockedClocks); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: GPU %s: reset locked clocks: %w", uuid, nvmlErr(ret))
	}
	return nil
}
