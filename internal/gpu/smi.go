package gpu

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// smi is the nvidia-smi backend.
type smi struct {
	run     Runner
	path    string
	timeout time.Duration
}

var _ Backend = (*smi)(nil)

// NewSMI returns a backend that runs nvidia-smi through r, each run under
// DefaultTimeout.
func NewSMI(r Runner) Backend { return NewSMITimeout(r, 0) }

// NewSMITimeout is NewSMI with a deadline per nvidia-smi run (<= 0:
// DefaultTimeout).
func NewSMITimeout(r Runner, timeout time.Duration) Backend {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &smi{run: r, path: "nvidia-smi", timeout: timeout}
}

func (s *smi) Name() string { return KindNVIDIASMI }

// QueryFields are the --query-gpu fields the CSV fallback asks for, in
// order. Every one is valid on all drivers gpunode supports (R450 on):
// clocks_throttle_reasons.active rather than clocks_event_reasons.active,
// which only R535 and newer know.
var QueryFields = []string{
	"index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
	"persistence_mode", "compute_mode", "mig.mode.current", "mig.mode.pending",
	"clocks.gr", "clocks.sm", "clocks.mem", "clocks.applications.graphics",
	"clocks.applications.memory", "clocks.max.graphics", "clocks.max.sm", "clocks.max.memory",
	"clocks_throttle_reasons.active", "ecc.mode.current", "ecc.mode.pending",
	"ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
	"ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
	"power.draw", "power.limit", "pcie.link.gen.current", "pcie.link.gen.max",
	"pcie.link.width.current", "pcie.link.width.max", "memory.total", "temperature.gpu",
	"memory.used", "utilization.gpu", "utilization.memory", "count",
	"retired_pages.sbe", "retired_pages.dbe", "retired_pages.pending",
}

// QueryFieldsNewer are asked for on top of QueryFields; a driver that
// rejects one of them ("is not a valid field to query") is asked again
// with QueryFields alone. remapped_rows.* exist from R460 on.
var QueryFieldsNewer = []string{
	"remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure",
}

// smiRun runs nvidia-smi with args under the backend's deadline. The
// returned error names the command; a timeout is a *CallError.
func (s *smi) smiRun(ctx context.Context, gpuName string, args ...string) ([]byte, error) {
	c := Cmd{Name: s.path, Args: args}
	call := strings.TrimSpace("nvidia-smi " + strings.Join(args, " "))
	return withDeadline(ctx, s.timeout, call, gpuName, func(ctx context.Context) ([]byte, error) {
		return s.run.Run(ctx, c)
	})
}

func (s *smi) Status(ctx context.Context) (Status, error) {
	st, err := s.status(ctx)
	if err != nil {
		return Status{}, err
	}
	s.addNVLinks(ctx, &st)
	if needsMIGUUIDs(st) {
		// The XML lists MIG devices without their UUIDs (what
		// CUDA_VISIBLE_DEVICES names); nvidia-smi -L has them.
		if out, err := s.smiRun(ctx, "all", "-L"); err != nil {
			st.FailedCalls = append(st.FailedCalls, callError(err, "nvidia-smi -L"))
		} else {
			ApplySMIList(&st, ParseSMIList(out))
			st.Sources = append(st.Sources, "nvidia-smi -L")
		}
	}
	return st, nil
}

func (s *smi) status(ctx context.Context) (Status, error) {
	out, err := s.smiRun(ctx, "all", "-q", "-x")
	if err == nil {
		st, perr := ParseSMIXML(bytes.NewReader(out))
		if perr == nil {
			st.Sources = []string{"nvidia-smi -q -x"}
			return st, nil
		}
		err = fmt.Errorf("nvidia-smi -q -x: %w", perr)
	}
	if ctx.Err() != nil {
		return Status{}, ctx.Err()
	}
	var te *CallError
	if errors.As(err, &te) && te.Timeout {
		// A driver that does not answer -q -x will not answer the CSV
		// query either: do not wait twice.
		return Status{}, err
	}
	fields := append(append([]string{}, QueryFields...), QueryFieldsNewer...)
	out2, err2 := s.smiRun(ctx, "all", "--query-gpu="+strings.Join(fields, ","), "--format=csv,nounits")
	if err2 != nil && !errors.As(err2, &te) {
		// An older driver rejects a field it does not know: ask again
		// with the fields every driver has.
		fields = QueryFields
		out2, err2 = s.smiRun(ctx, "all", "--query-gpu="+strings.Join(fields, ","), "--format=csv,nounits")
	}
	if err2 != nil {
		return Status{}, fmt.Errorf("%w; nvidia-smi --query-gpu: %w", err, err2)
	}
	st, err2 := ParseQueryCSV(bytes.NewReader(out2))
	if err2 != nil {
		return Status{}, fmt.Errorf("%w; nvidia-smi --query-gpu: %w", err, err2)
	}
	st.Sources = []string{"nvidia-smi --query-gpu (" + fmt.Sprint(len(fields)) + " fields)"}
	st.Warnings = append(st.Warnings, fmt.Sprintf("nvidia-smi -q -x unusable, CSV fallback used: %v", err))
	return st, nil
}

// addNVLinks reads NVLink state through nvidia-smi: 'topo -m' for the NV#
// class of each GPU pair and 'nvlink -s' for each link's state and speed.
// Failures are recorded in st, never fatal.
func (s *smi) addNVLinks(ctx context.Context, st *Status) {
	if len(st.GPUs) == 0 {
		return
	}
	active := 0
	if out, err := s.smiRun(ctx, "all", "nvlink", "-s"); err != nil {
		st.FailedCalls = append(st.FailedCalls, callError(err, "nvidia-smi nvlink -s"))
		active = -1 // unknown: ask topo -m
	} else {
		links := ParseNVLinkStatus(out)
		for i := range st.GPUs {
			if l, ok := links[strings.ToUpper(st.GPUs[i].UUID)]; ok {
				st.GPUs[i].NVLinks = l
				active += st.GPUs[i].ActiveNVLinks()
			}
		}
		st.Sources = append(st.Sources, "nvidia-smi nvlink -s")
	}
	// Without an active link there is no NV# class to find: spare the
	// topo -m run.
	if len(st.GPUs) < 2 || active == 0 {
		return
	}
	out, err := s.smiRun(ctx, "all", "topo", "-m")
	if err != nil {
		st.FailedCalls = append(st.FailedCalls, callError(err, "nvidia-smi topo -m"))
		return
	}
	m, err := ParseTopoMatrix(out)
	if err != nil {
		st.Warnings = append(st.Warnings, fmt.Sprintf("nvidia-smi topo -m: %v", err))
		return
	}
	ApplyTopoMatrix(st, m)
	st.Sources = append(st.Sources, "nvidia-smi topo -m")
}

// callError turns a run's error into a CallError for Status.FailedCalls.
func callError(err error, call string) CallError {
	var ce *CallError
	if errors.As(err, &ce) {
		return *ce
	}
	return CallError{Call: call, GPU: "all", Err: err.Error()}
}

func (s *smi) SetPersistence(ctx context.Context, uuid string, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	_, err := s.smiRun(ctx, uuid, "-i", uuid, "-pm", v)
	return err
}

func (s *smi) LockClocks(ctx context.Context, uuid string, r ClockRange) error {
	_, err := s.smiRun(ctx, uuid, "-i", uuid, "-lgc", fmt.Sprintf("%d,%d", r.MinMHz, r.MaxMHz))
	return err
}

func (s *smi) ResetClocks(ctx context.Context, uuid string) error {
	_, err := s.smiRun(ctx, uuid, "-i", uuid, "-rgc")
	return err
}

func (s *smi) Close() error { return nil }

// The XML schema of 'nvidia-smi -q -x' (nvsmi_device_v11/v12.dtd). Element
// names changed over driver releases; both spellings are declared and the
// first present wins.
type smiLog struct {
	XMLName       xml.Name `xml:"nvidia_smi_log"`
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	AttachedGPUs  string   `xml:"attached_gpus"`
	GPUs          []smiGPU `xml:"gpu"`
}

// smiMIGDevice is one <mig_device> (a compute instance CUDA can see).
type smiMIGDevice struct {
	Index             string `xml:"index"`
	GPUInstanceID     string `xml:"gpu_instance_id"`
	ComputeInstanceID string `xml:"compute_instance_id"`
	UUID              string `xml:"uuid"`
	SMs               string `xml:"device_attributes>shared>multiprocessor_count"`
	FBTotal           string `xml:"fb_memory_usage>total"`
	FBUsed            string `xml:"fb_memory_usage>used"`
}

type smiGPU struct {
	ID           string `xml:"id,attr"`
	ProductName  string `xml:"product_name"`
	Architecture string `xml:"product_architecture"`
	Persistence  string `xml:"persistence_mode"`
	MIGMode      struct {
		Current string `xml:"current_mig"`
		Pending string `xml:"pending_mig"`
	} `xml:"mig_mode"`
	MIGDevices struct {
		Devices []smiMIGDevice `xml:"mig_device"`
	} `xml:"mig_devices"`
	UUID        string `xml:"uuid"`
	MinorNumber string `xml:"minor_number"`
	ResetStatus struct {
		Required         string `xml:"reset_required"`
		DrainRecommended string `xml:"drain_and_reset_recommended"`
	} `xml:"gpu_reset_status"`
	RecoveryAction string `xml:"gpu_recovery_action"`
	Fabric         struct {
		State  string `xml:"state"`
		Status string `xml:"status"`
	} `xml:"fabric"`
	Utilization struct {
		GPU    string `xml:"gpu_util"`
		Memory string `xml:"memory_util"`
	} `xml:"utilization"`
	PCI struct {
		BusID    string `xml:"pci_bus_id"`
		DeviceID string `xml:"pci_device_id"`
		Link     struct {
			Gen struct {
				Max     string `xml:"max_link_gen"`
				Current string `xml:"current_link_gen"`
			} `xml:"pcie_gen"`
			Widths struct {
				Max     string `xml:"max_link_width"`
				Current string `xml:"current_link_width"`
			} `xml:"link_widths"`
		} `xml:"pci_gpu_link_info"`
	} `xml:"pci"`
	ComputeMode     string      `xml:"compute_mode"`
	EventReasons    *smiReasons `xml:"clocks_event_reasons"`
	ThrottleReasons *smiReasons `xml:"clocks_throttle_reasons"`
	FBMemory        struct {
		Total string `xml:"total"`
		Used  string `xml:"used"`
	} `xml:"fb_memory_usage"`
	ECCMode struct {
		Current string `xml:"current_ecc"`
		Pending string `xml:"pending_ecc"`
	} `xml:"ecc_mode"`
	ECCErrors struct {
		Volatile  smiECCCounts `xml:"volatile"`
		Aggregate smiECCCounts `xml:"aggregate"`
	} `xml:"ecc_errors"`
	RetiredPages *struct {
		SingleBit struct {
			Count string `xml:"retired_count"`
		} `xml:"multiple_single_bit_retirement"`
		DoubleBit struct {
			Count string `xml:"retired_count"`
		} `xml:"double_bit_retirement"`
		PendingBlacklist  string `xml:"pending_blacklist"`
		PendingRetirement string `xml:"pending_retirement"`
	} `xml:"retired_pages"`
	RemappedRows *struct {
		Correctable   string `xml:"remapped_row_corr"`
		Uncorrectable string `xml:"remapped_row_unc"`
		Pending       string `xml:"remapped_row_pending"`
		Failure       string `xml:"remapped_row_failure"`
	} `xml:"remapped_rows"`
	Temperature struct {
		GPU string `xml:"gpu_temp"`
	} `xml:"temperature"`
	GPUPower *smiPower `xml:"gpu_power_readings"`
	Power    *smiPower `xml:"power_readings"`
	Clocks   struct {
		Graphics string `xml:"graphics_clock"`
		SM       string `xml:"sm_clock"`
		Memory   string `xml:"mem_clock"`
	} `xml:"clocks"`
	AppClocks struct {
		Graphics string `xml:"graphics_clock"`
		Memory   string `xml:"mem_clock"`
	} `xml:"applications_clocks"`
	DefaultAppClocks struct {
		Graphics string `xml:"graphics_clock"`
	} `xml:"default_applications_clocks"`
	MaxClocks struct {
		Graphics string `xml:"graphics_clock"`
		SM       string `xml:"sm_clock"`
		Memory   string `xml:"mem_clock"`
	} `xml:"max_clocks"`
}

// smiReasons holds the clock-event reasons; element names carry either the
// clocks_event_reason_ or the clocks_throttle_reason_ prefix.
type smiReasons struct {
	Items []struct {
		XMLName xml.Name
		Value   string `xml:",chardata"`
	} `xml:",any"`
}

// reasonByXML maps the element suffix to the NVML bit.
var reasonByXML = map[string]uint64{
	"gpu_idle":                    ReasonGPUIdle,
	"applications_clocks_setting": ReasonApplicationsClocks,
	"sw_power_cap":                ReasonSWPowerCap,
	"hw_slowdown":                 ReasonHWSlowdown,
	"sync_boost":                  ReasonSyncBoost,
	"sw_thermal_slowdown":         ReasonSWThermalSlowdown,
	"hw_thermal_slowdown":         ReasonHWThermalSlowdown,
	"hw_power_brake_slowdown":     ReasonHWPowerBrakeSlowdown,
	"display_clocks_setting":      ReasonDisplayClockSetting,
}

func (r *smiReasons) decode() ClockEvent {
	if r == nil || len(r.Items) == 0 {
		return ClockEvent{}
	}
	var mask uint64
	known := false
	for _, it := range r.Items {
		name := it.XMLName.Local
		name = strings.TrimPrefix(name, "clocks_event_reason_")
		name = strings.TrimPrefix(name, "clocks_throttle_reason_")
		bit, ok := reasonByXML[name]
		if !ok {
			continue
		}
		switch strings.TrimSpace(it.Value) {
		case "Active":
			mask |= bit
			known = true
		case "Not Active":
			known = true
		}
	}
	if !known {
		return ClockEvent{}
	}
	return DecodeClockEvents(mask)
}

// smiECCCounts accepts the v12 layout (sram_/dram_ counters) and the older
// one (single_bit/double_bit with a total).
type smiECCCounts struct {
	SRAMCorrectable   string `xml:"sram_correctable"`
	SRAMUncorrectable string `xml:"sram_uncorrectable"`
	SRAMUncorrParity  string `xml:"sram_uncorrectable_parity"`
	SRAMUncorrSECDED  string `xml:"sram_uncorrectable_secded"`
	DRAMCorrectable   string `xml:"dram_correctable"`
	DRAMUncorrectable string `xml:"dram_uncorrectable"`
	SingleBitTotal    string `xml:"single_bit>total"`
	DoubleBitTotal    string `xml:"double_bit>total"`
}

func (c smiECCCounts) counts() ECCCounts {
	sum := func(vals ...string) *uint64 {
		var total uint64
		seen := false
		for _, v := range vals {
			if n, ok := parseUint(v); ok {
				total += n
				seen = true
			}
		}
		if !seen {
			return nil
		}
		return &total
	}
	out := ECCCounts{
		Corrected:   sum(c.SRAMCorrectable, c.DRAMCorrectable),
		Uncorrected: sum(c.SRAMUncorrectable, c.SRAMUncorrParity, c.SRAMUncorrSECDED, c.DRAMUncorrectable),
	}
	if out.Corrected == nil {
		out.Corrected = sum(c.SingleBitTotal)
	}
	if out.Uncorrected == nil {
		out.Uncorrected = sum(c.DoubleBitTotal)
	}
	return out
}

type smiPower struct {
	Draw         string `xml:"power_draw"`
	Average      string `xml:"average_power_draw"`
	Instant      string `xml:"instant_power_draw"`
	Limit        string `xml:"power_limit"`
	CurrentLimit string `xml:"current_power_limit"`
	EnforcedLim  string `xml:"enforced_power_limit"`
}

// parseUint parses a decimal count; "N/A", "[N/A]", "" and junk are not ok.
func parseUint(s string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// parseUnit parses "1980 MHz", "70.52 W", "16x", "81559 MiB", "33 C".
func parseUnit(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	for _, u := range []string{"MHz", "MiB", "W", "C", "x", "%"} {
		s = strings.TrimSpace(strings.TrimSuffix(s, u))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1e12 {
		return 0, false
	}
	return f, true
}

func parseMHz(s string) uint32 {
	f, ok := parseUnit(s)
	if !ok || f > 1e6 {
		return 0
	}
	return uint32(f)
}

func parseInt(s string) int {
	f, ok := parseUnit(s)
	if !ok || f > 1e9 {
		return 0
	}
	return int(f)
}

func parseEnabled(s string) *bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "enabled", "enable", "on", "yes":
		t := true
		return &t
	case "disabled", "disable", "off", "no":
		f := false
		return &f
	}
	return nil
}

// normalizeComputeMode maps nvidia-smi's spellings to NVML's.
func normalizeComputeMode(s string) string {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "_") {
	case "default", "0":
		return "Default"
	case "exclusive_process", "3":
		return "Exclusive_Process"
	case "prohibited", "2":
		return "Prohibited"
	case "exclusive_thread", "1":
		return "Exclusive_Thread"
	}
	return ""
}

// ErrNotSMIXML is returned for input that is not an nvidia_smi_log document.
var ErrNotSMIXML = errors.New("not nvidia-smi -q -x output")

// ParseSMIXML parses 'nvidia-smi -q -x' output into a Status. GPU indices
// follow document order (nvidia-smi lists GPUs by index). NUMA nodes are not
// part of the XML; Annotate fills them from sysfs.
func ParseSMIXML(r io.Reader) (Status, error) {
	dec := xml.NewDecoder(io.LimitReader(r, 64<<20))
	// nvidia-smi declares a DTD; the decoder skips it. Entities are strict.
	var log smiLog
	if err := dec.Decode(&log); err != nil {
		return Status{}, fmt.Errorf("nvidia-smi XML: %w", err)
	}
	if log.XMLName.Local != "nvidia_smi_log" {
		return Status{}, ErrNotSMIXML
	}
	st := Status{Backend: KindNVIDIASMI, DriverVersion: strings.TrimSpace(log.DriverVersion),
		CUDAVersion: strings.TrimSpace(log.CUDAVersion)}
	if strings.EqualFold(st.CUDAVersion, "N/A") {
		st.CUDAVersion = ""
	}
	if n, ok := parseUint(log.AttachedGPUs); ok && n < 1<<16 {
		attached := int(n)
		st.AttachedGPUs = &attached
		if attached != len(log.GPUs) {
			st.Warnings = append(st.Warnings, fmt.Sprintf("nvidia-smi reports %d attached GPUs but lists %d", attached, len(log.GPUs)))
		}
	}
	if len(log.GPUs) > maxGPUs {
		st.Warnings = append(st.Warnings, fmt.Sprintf("nvidia-smi lists %d GPUs; only the first %d are read", len(log.GPUs), maxGPUs))
		log.GPUs = log.GPUs[:maxGPUs]
	}
	for i, x := range log.GPUs {
		g := GPU{Index: i, Name: strings.TrimSpace(x.ProductName), UUID: strings.TrimSpace(x.UUID),
			Architecture: strings.TrimSpace(x.Architecture)}
		if g.Architecture == "N/A" {
			g.Architecture = ""
		}
		busID := x.PCI.BusID
		if busID == "" {
			busID = x.ID
		}
		addr, err := normalizeBusID(busID)
		if err != nil {
			// One GPU's odd bus id does not hide the others: the GPU is
			// listed without an address, and the status says why.
			st.Warnings = append(st.Warnings, fmt.Sprintf("GPU %d (%s): pci_bus_id: %v", i, g.UUID, err))
		}
		g.PCIAddress = addr
		if id := strings.TrimSpace(x.PCI.DeviceID); id != "" && id != "N/A" {
			g.PCIDeviceID = "0x" + strings.ToUpper(strings.TrimPrefix(strings.ToLower(id), "0x"))
		}
		g.Persistence = parseEnabled(x.Persistence)
		g.ComputeMode = normalizeComputeMode(x.ComputeMode)
		if cur, pend := parseEnabled(x.MIGMode.Current), parseEnabled(x.MIGMode.Pending); cur != nil && pend != nil {
			g.MIG = &MIGMode{Current: *cur, Pending: *pend}
		}
		g.Clocks = Clocks{
			GraphicsMHz: parseMHz(x.Clocks.Graphics), SMMHz: parseMHz(x.Clocks.SM), MemoryMHz: parseMHz(x.Clocks.Memory),
			AppGraphicsMHz: parseMHz(x.AppClocks.Graphics), AppMemoryMHz: parseMHz(x.AppClocks.Memory),
			DefaultAppGraphicsMHz: parseMHz(x.DefaultAppClocks.Graphics),
			MaxGraphicsMHz:        parseMHz(x.MaxClocks.Graphics), MaxSMMHz: parseMHz(x.MaxClocks.SM),
			MaxMemoryMHz: parseMHz(x.MaxClocks.Memory),
		}
		if x.EventReasons != nil {
			g.ClockEvents = x.EventReasons.decode()
		} else {
			g.ClockEvents = x.ThrottleReasons.decode()
		}
		if cur, pend := parseEnabled(x.ECCMode.Current), parseEnabled(x.ECCMode.Pending); cur != nil && pend != nil {
			g.ECC = &ECC{Current: *cur, Pending: *pend,
				Volatile: x.ECCErrors.Volatile.counts(), Aggregate: x.ECCErrors.Aggregate.counts()}
		}
		if rp := x.RetiredPages; rp != nil {
			sb, ok1 := parseUint(rp.SingleBit.Count)
			db, ok2 := parseUint(rp.DoubleBit.Count)
			if ok1 || ok2 {
				pend := rp.PendingRetirement
				if pend == "" {
					pend = rp.PendingBlacklist
				}
				g.RetiredPages = &RetiredPages{SingleBit: int(min(sb, 1<<31)), DoubleBit: int(min(db, 1<<31)),
					Pending: strings.EqualFold(strings.TrimSpace(pend), "yes")}
			}
		}
		if rr := x.RemappedRows; rr != nil {
			c, ok1 := parseUint(rr.Correctable)
			u, ok2 := parseUint(rr.Uncorrectable)
			if ok1 || ok2 {
				g.RemappedRows = &RemappedRows{Correctable: int(min(c, 1<<31)), Uncorrectable: int(min(u, 1<<31)),
					Pending: strings.EqualFold(strings.TrimSpace(rr.Pending), "yes"),
					Failure: strings.EqualFold(strings.TrimSpace(rr.Failure), "yes")}
			}
		}
		if t, ok := parseUnit(x.Temperature.GPU); ok && t < 1000 {
			ti := int(t)
			g.TemperatureC = &ti
		}
		p := x.GPUPower
		if p == nil {
			p = x.Power
		}
		if p != nil {
			// power_draw (schema <= v12) and average_power_draw (v13) are
			// the one-second average NVML and CSV power.draw report; the
			// instantaneous reading is kept apart.
			draw := p.Draw
			if _, ok := parseUnit(draw); !ok {
				draw = p.Average
			}
			g.Power.DrawW, _ = parseUnit(draw)
			g.Power.InstantW, _ = parseUnit(p.Instant)
			for _, l := range []string{p.CurrentLimit, p.EnforcedLim, p.Limit} {
				if v, ok := parseUnit(l); ok {
					g.Power.LimitW = v
					break
				}
			}
		}
		g.PCIe = PCIeLink{Gen: parseInt(x.PCI.Link.Gen.Current), MaxGen: parseInt(x.PCI.Link.Gen.Max),
			Width: parseInt(x.PCI.Link.Widths.Current), MaxWidth: parseInt(x.PCI.Link.Widths.Max)}
		if m, ok := parseUnit(x.FBMemory.Total); ok {
			g.MemoryBytes = uint64(m) << 20
		}
		if m, ok := parseUnit(x.FBMemory.Used); ok {
			u := uint64(m) << 20
			g.MemoryUsedBytes = &u
		}
		g.UtilizationPct = parsePct(x.Utilization.GPU)
		g.MemoryUtilPct = parsePct(x.Utilization.Memory)
		g.Health = x.health()
		g.MIGInstances = x.migInstances()
		st.GPUs = append(st.GPUs, g)
	}
	st.normalize()
	return st, nil
}

// maxGPUs bounds the GPUs read from one document (NVML's limit is far
// lower; this only stops a hostile document).
const maxGPUs = 1024

// normalizeBusID is NormalizePCIAddress, also accepting the 5-digit PCI
// domains of Intel VMD (nvidia-smi "00010000:E1:00.0", sysfs
// "10000:e1:00.0"), which sysfmt.ParseBDF refuses. An id that does not
// parse returns "" and the error.
func normalizeBusID(s string) (string, error) {
	a, err := NormalizePCIAddress(s)
	if err == nil {
		return a, nil
	}
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), ":")
	if len(parts) == 3 && len(parts[0]) <= 8 {
		dom, derr := strconv.ParseUint(parts[0], 16, 32)
		if rest, rerr := NormalizePCIAddress("0000:" + parts[1] + ":" + parts[2]); derr == nil && rerr == nil && dom > 0xffff {
			return fmt.Sprintf("%x", dom) + strings.TrimPrefix(rest, "0000"), nil
		}
	}
	return "", err
}

// parsePct parses "37 %"; "N/A" and junk are nil.
func parsePct(s string) *int {
	f, ok := parseUnit(s)
	if !ok || f > 100 {
		return nil
	}
	v := int(f)
	return &v
}

// health reads the driver's health signals from one <gpu>; nil when the
// document has none of them (older schemas).
func (x smiGPU) health() *Health {
	h := &Health{
		ResetRequired:    parseYesNo(x.ResetStatus.Required),
		DrainRecommended: parseYesNo(x.ResetStatus.DrainRecommended),
		RecoveryAction:   naToEmpty(x.RecoveryAction),
		FabricState:      naToEmpty(x.Fabric.State),
		FabricStatus:     naToEmpty(x.Fabric.Status),
	}
	if h.ResetRequired == nil && h.DrainRecommended == nil && h.RecoveryAction == "" && h.FabricState == "" && h.FabricStatus == "" {
		return nil
	}
	return h
}

// migInstances groups the <mig_device> entries by GPU instance. The XML
// carries no profile ids and no placements: ProfileID is ProfileUnknown
// and Size 0 until miglive.InferProfiles names them from SMs and memory.
func (x smiGPU) migInstances() []MIGInstance {
	var out []MIGInstance
	byGI := map[int]int{}
	for n, d := range x.MIGDevices.Devices {
		if n >= 64 {
			break
		}
		gi, ok1 := parseUint(d.GPUInstanceID)
		ci, ok2 := parseUint(d.ComputeInstanceID)
		if !ok1 || !ok2 || gi > 1<<16 || ci > 1<<16 {
			continue
		}
		c := MIGCompute{ComputeInstanceID: int(ci), ProfileID: ProfileUnknown, UUID: naToEmpty(d.UUID)}
		if idx, ok := parseUint(d.Index); ok && idx < 1<<16 {
			i := int(idx)
			c.Index = &i
		}
		if sm, ok := parseUint(d.SMs); ok && sm < 1<<16 {
			c.SMCount = int(sm)
		}
		if u, ok := parseUnit(d.FBUsed); ok {
			used := uint64(u) << 20
			c.MemoryUsedBytes = &used
		}
		k, seen := byGI[int(gi)]
		if !seen {
			k = len(out)
			byGI[int(gi)] = k
			out = append(out, MIGInstance{GPUInstanceID: int(gi), ProfileID: ProfileUnknown})
		}
		inst := &out[k]
		// A GPU instance's memory is shared by its compute instances:
		// every <mig_device> of one GI reports the same total.
		if m, ok := parseUnit(d.FBTotal); ok {
			inst.MemoryBytes = uint64(m) << 20
		}
		inst.SMCount += c.SMCount
		inst.ComputeInstances = append(inst.ComputeInstances, c)
	}
	return out
}

func parseYesNo(s string) *bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes":
		t := true
		return &t
	case "no":
		f := false
		return &f
	}
	return nil
}

// naToEmpty trims s and maps nvidia-smi's "N/A", "[N/A]" and "Not
// Supported" spellings to "".
func naToEmpty(s string) string {
	s = strings.TrimSpace(s)
	switch strings.ToLower(strings.Trim(s, "[]")) {
	case "n/a", "not supported", "none available", "":
		return ""
	}
	return s
}

// csvHeaderAlias maps the long names nvidia-smi prints in CSV headers to
// the query names.
var csvHeaderAlias = map[string]string{
	"clocks.current.graphics":            "clocks.gr",
	"clocks.current.sm":                  "clocks.sm",
	"clocks.current.memory":              "clocks.mem",
	"retired_pages.single_bit_ecc.count": "retired_pages.sbe",
	"retired_pages.double_bit.count":     "retired_pages.dbe",
	"clocks_event_reasons.active":        "clocks_throttle_reasons.active",
}

// csvYes reads a CSV yes/no or 1/0 flag.
func csvYes(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "1", "true":
		return true
	}
	return false
}

// ParseQueryCSV parses 'nvidia-smi --query-gpu=<fields> --format=csv[,nounits]'
// output. The header row names the fields (any subset of QueryFields, in any
// order); unknown columns are ignored, "[N/A]" and "[Not Supported]" leave a
// field empty.
func ParseQueryCSV(r io.Reader) (Status, error) {
	cr := csv.NewReader(io.LimitReader(r, 16<<20))
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return Status{}, fmt.Errorf("nvidia-smi CSV: %w", err)
	}
	if len(rows) == 0 {
		return Status{}, errors.New("nvidia-smi CSV: no header row")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		h = strings.TrimSpace(h)
		if j := strings.Index(h, " ["); j >= 0 { // "clocks.sm [MHz]"
			h = h[:j]
		}
		if alias, ok := csvHeaderAlias[h]; ok {
			h = alias
		}
		col[h] = i
	}
	if _, ok := col["uuid"]; !ok {
		return Status{}, fmt.Errorf("nvidia-smi CSV: header %q has no uuid column", strings.Join(rows[0], ","))
	}
	st := Status{Backend: KindNVIDIASMI}
	for n, row := range rows[1:] {
		get := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(row) {
				return ""
			}
			v := strings.TrimSpace(row[i])
			if strings.HasPrefix(v, "[") || v == "N/A" {
				return ""
			}
			return v
		}
		line := n + 2
		if c, ok := parseUint(get("count")); ok && c < 1<<16 && st.AttachedGPUs == nil {
			attached := int(c)
			st.AttachedGPUs = &attached
		}
		g := GPU{Index: n, Name: get("name"), UUID: get("uuid")}
		if g.UUID == "" {
			return Status{}, fmt.Errorf("nvidia-smi CSV: line %d: empty uuid", line)
		}
		if v := get("index"); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return Status{}, fmt.Errorf("nvidia-smi CSV: line %d: index %q: not a GPU index", line, v)
			}
			g.Index = i
		}
		addr, err := normalizeBusID(get("pci.bus_id"))
		if err != nil {
			return Status{}, fmt.Errorf("nvidia-smi CSV: line %d: pci.bus_id: %w", line, err)
		}
		g.PCIAddress = addr
		if v := get("pci.device_id"); v != "" {
			g.PCIDeviceID = "0x" + strings.ToUpper(strings.TrimPrefix(strings.ToLower(v), "0x"))
		}
		if st.DriverVersion == "" {
			st.DriverVersion = get("driver_version")
		}
		g.Persistence = parseEnabled(get("persistence_mode"))
		g.ComputeMode = normalizeComputeMode(get("compute_mode"))
		if cur, pend := parseEnabled(get("mig.mode.current")), parseEnabled(get("mig.mode.pending")); cur != nil && pend != nil {
			g.MIG = &MIGMode{Current: *cur, Pending: *pend}
		}
		g.Clocks = Clocks{GraphicsMHz: parseMHz(get("clocks.gr")), SMMHz: parseMHz(get("clocks.sm")),
			MemoryMHz: parseMHz(get("clocks.mem")), AppGraphicsMHz: parseMHz(get("clocks.applications.graphics")),
			AppMemoryMHz: parseMHz(get("clocks.applications.memory")), MaxGraphicsMHz: parseMHz(get("clocks.max.graphics")),
			MaxSMMHz: parseMHz(get("clocks.max.sm")), MaxMemoryMHz: parseMHz(get("clocks.max.memory"))}
		reasons := get("clocks_throttle_reasons.active")
		if reasons != "" {
			m, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(reasons), "0x"), 16, 64)
			if err != nil {
				return Status{}, fmt.Errorf("nvidia-smi CSV: line %d: clocks_throttle_reasons.active %q: %w", line, reasons, err)
			}
			g.ClockEvents = DecodeClockEvents(m)
		}
		if cur, pend := parseEnabled(get("ecc.mode.current")), parseEnabled(get("ecc.mode.pending")); cur != nil && pend != nil {
			cnt := func(name string) *uint64 {
				if v, ok := parseUint(get(name)); ok {
					return &v
				}
				return nil
			}
			g.ECC = &ECC{Current: *cur, Pending: *pend,
				Volatile: ECCCounts{Corrected: cnt("ecc.errors.corrected.volatile.total"),
					Uncorrected: cnt("ecc.errors.uncorrected.volatile.total")},
				Aggregate: ECCCounts{Corrected: cnt("ecc.errors.corrected.aggregate.total"),
					Uncorrected: cnt("ecc.errors.uncorrected.aggregate.total")}}
		}
		g.Power.DrawW, _ = parseUnit(get("power.draw"))
		g.Power.LimitW, _ = parseUnit(get("power.limit"))
		g.PCIe = PCIeLink{Gen: parseInt(get("pcie.link.gen.current")), MaxGen: parseInt(get("pcie.link.gen.max")),
			Width: parseInt(get("pcie.link.width.current")), MaxWidth: parseInt(get("pcie.link.width.max"))}
		if m, ok := parseUnit(get("memory.total")); ok {
			g.MemoryBytes = uint64(m) << 20
		}
		if t, ok := parseUnit(get("temperature.gpu")); ok && t < 1000 {
			ti := int(t)
			g.TemperatureC = &ti
		}
		if m, ok := parseUnit(get("memory.used")); ok {
			u := uint64(m) << 20
			g.MemoryUsedBytes = &u
		}
		g.UtilizationPct = parsePct(get("utilization.gpu"))
		g.MemoryUtilPct = parsePct(get("utilization.memory"))
		sbe, ok1 := parseUint(get("retired_pages.sbe"))
		dbe, ok2 := parseUint(get("retired_pages.dbe"))
		if ok1 || ok2 {
			g.RetiredPages = &RetiredPages{SingleBit: int(min(sbe, 1<<31)), DoubleBit: int(min(dbe, 1<<31)),
				Pending: strings.EqualFold(get("retired_pages.pending"), "yes")}
		}
		rc, ok1 := parseUint(get("remapped_rows.correctable"))
		ru, ok2 := parseUint(get("remapped_rows.uncorrectable"))
		if ok1 || ok2 {
			g.RemappedRows = &RemappedRows{Correctable: int(min(rc, 1<<31)), Uncorrectable: int(min(ru, 1<<31)),
				Pending: csvYes(get("remapped_rows.pending")), Failure: csvYes(get("remapped_rows.failure"))}
		}
		st.GPUs = append(st.GPUs, g)
	}
	if st.AttachedGPUs != nil && *st.AttachedGPUs != len(st.GPUs) {
		st.Warnings = append(st.Warnings, fmt.Sprintf("nvidia-smi reports %d GPUs (count) but lists %d", *st.AttachedGPUs, len(st.GPUs)))
	}
	st.normalize()
	return st, nil
}
