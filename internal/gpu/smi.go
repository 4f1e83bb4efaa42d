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
)

// smi is the nvidia-smi backend.
type smi struct {
	run  Runner
	path string
}

var _ Backend = (*smi)(nil)

// NewSMI returns a backend that runs nvidia-smi through r.
func NewSMI(r Runner) Backend { return &smi{run: r, path: "nvidia-smi"} }

func (s *smi) Name() string { return KindNVIDIASMI }

// QueryFields are the --query-gpu fields the CSV fallback asks for, in order.
var QueryFields = []string{
	"index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
	"persistence_mode", "compute_mode", "mig.mode.current", "mig.mode.pending",
	"clocks.gr", "clocks.sm", "clocks.mem", "clocks.applications.graphics",
	"clocks.applications.memory", "clocks.max.graphics", "clocks.max.sm", "clocks.max.memory",
	"clocks_event_reasons.active", "ecc.mode.current", "ecc.mode.pending",
	"ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
	"ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
	"power.draw", "power.limit", "pcie.link.gen.current", "pcie.link.gen.max",
	"pcie.link.width.current", "pcie.link.width.max", "memory.total", "temperature.gpu",
}

func (s *smi) Status(ctx context.Context) (Status, error) {
	out, err := s.run.Run(ctx, Cmd{Name: s.path, Args: []string{"-q", "-x"}})
	if err == nil {
		st, perr := ParseSMIXML(bytes.NewReader(out))
		if perr == nil {
			return st, nil
		}
		err = perr
	}
	if ctx.Err() != nil {
		return Status{}, ctx.Err()
	}
	out2, err2 := s.run.Run(ctx, Cmd{Name: s.path, Args: []string{
		"--query-gpu=" + strings.Join(QueryFields, ","), "--format=csv,nounits"}})
	if err2 != nil {
		return Status{}, fmt.Errorf("nvidia-smi -q -x: %w; --query-gpu: %w", err, err2)
	}
	st, err2 := ParseQueryCSV(bytes.NewReader(out2))
	if err2 != nil {
		return Status{}, fmt.Errorf("nvidia-smi -q -x: %w; --query-gpu: %w", err, err2)
	}
	return st, nil
}

func (s *smi) SetPersistence(ctx context.Context, uuid string, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	_, err := s.run.Run(ctx, Cmd{Name: s.path, Args: []string{"-i", uuid, "-pm", v}})
	return err
}

func (s *smi) LockClocks(ctx context.Context, uuid string, r ClockRange) error {
	_, err := s.run.Run(ctx, Cmd{Name: s.path, Args: []string{"-i", uuid, "-lgc", fmt.Sprintf("%d,%d", r.MinMHz, r.MaxMHz)}})
	return err
}

func (s *smi) ResetClocks(ctx context.Context, uuid string) error {
	_, err := s.run.Run(ctx, Cmd{Name: s.path, Args: []string{"-i", uuid, "-rgc"}})
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
	GPUs          []smiGPU `xml:"gpu"`
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
	UUID        string `xml:"uuid"`
	MinorNumber string `xml:"minor_number"`
	PCI         struct {
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
		any := false
		for _, v := range vals {
			if n, ok := parseUint(v); ok {
				total += n
				any = true
			}
		}
		if !any {
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
	for _, u := range []string{"MHz", "MiB", "W", "C", "x"} {
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
		addr, err := NormalizePCIAddress(busID)
		if err != nil {
			return Status{}, fmt.Errorf("nvidia-smi XML: gpu %d: pci_bus_id: %w", i, err)
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
			draw := p.Draw
			if _, ok := parseUnit(draw); !ok {
				draw = p.Instant
			}
			g.Power.DrawW, _ = parseUnit(draw)
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
			g.MemoryMiB = uint64(m)
		}
		st.GPUs = append(st.GPUs, g)
	}
	st.normalize()
	return st, nil
}

// csvHeaderAlias maps the long names nvidia-smi prints in CSV headers to
// the query names.
var csvHeaderAlias = map[string]string{
	"clocks.current.graphics": "clocks.gr",
	"clocks.current.sm":       "clocks.sm",
	"clocks.current.memory":   "clocks.mem",
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
		addr, err := NormalizePCIAddress(get("pci.bus_id"))
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
		reasons := get("clocks_event_reasons.active")
		if reasons == "" {
			reasons = get("clocks_throttle_reasons.active")
		}
		if reasons != "" {
			m, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(reasons), "0x"), 16, 64)
			if err != nil {
				return Status{}, fmt.Errorf("nvidia-smi CSV: line %d: clocks_event_reasons.active %q: %w", line, reasons, err)
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
			g.MemoryMiB = uint64(m)
		}
		if t, ok := parseUnit(get("temperature.gpu")); ok && t < 1000 {
			ti := int(t)
			g.TemperatureC = &ti
		}
		st.GPUs = append(st.GPUs, g)
	}
	st.normalize()
	return st, nil
}
