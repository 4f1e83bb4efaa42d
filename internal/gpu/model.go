package gpu

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// SchemaVersion is the schema of Status.
const SchemaVersion = "gpunode.gpu/v1"

// Status is the state of every NVIDIA GPU on a node, as one backend saw it.
// Optional fields are nil (pointers) or empty when the backend could not read
// them (not supported by the GPU, the driver, or the backend).
type Status struct {
	SchemaVersion string `json:"schemaVersion"`
	// Backend is the backend that produced the status: nvml, nvidia-smi, fake
	// or none.
	Backend string `json:"backend"`
	// Reason explains why no driver backend is in use (backend "none").
	Reason string `json:"reason,omitempty"`
	// NVMLLibraryMissing is set (backend "none") when libnvidia-ml.so.1
	// could not be loaded and nvidia-smi is not on PATH under a live root:
	// the container was started without the NVIDIA runtime.
	NVMLLibraryMissing bool `json:"nvmlLibraryMissing,omitempty"`
	// NotAsked is set (backend "none") when the user chose --gpu-backend
	// none: no driver was asked, so its absence is not a finding.
	NotAsked bool `json:"notAsked,omitempty"`
	// DriverVersion is the kernel driver version, e.g. "550.54.15".
	DriverVersion string `json:"driverVersion,omitempty"`
	// CUDAVersion is the newest CUDA version the driver supports, e.g. "12.4".
	CUDAVersion string `json:"cudaVersion,omitempty"`
	// AttachedGPUs is the GPU count the driver reports (nvidia-smi's
	// attached_gpus; NVML's device count) when the backend reads it.
	AttachedGPUs *int `json:"attachedGpus,omitempty"`
	// Sources names what the backend ran or read for this status
	// ("nvidia-smi -q -x", "nvidia-smi topo -m", "nvml"), in order.
	Sources []string `json:"sources,omitempty"`
	// Warnings are problems with the backend's data that did not stop the
	// read: a GPU count that disagrees with the GPUs listed, a bus id that
	// does not parse, a secondary command that failed or timed out.
	Warnings []string `json:"warnings,omitempty"`
	// FailedCalls are the secondary driver calls that failed or timed out
	// (the status is still usable; HealthChecks reports timeouts).
	FailedCalls []CallError `json:"failedCalls,omitempty"`
	GPUs        []GPU       `json:"gpus"`
}

// GPU is one physical GPU.
type GPU struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	UUID  string `json:"uuid"`
	// PCIAddress is the GPU's PCI address (JSON "bdf", as in topo and irq)
	// in its sysfs form: 4-digit domain, lower case ("0000:18:00.0");
	// nvidia-smi prints 8 digits, upper case. Fake GPU files written before
	// the rename say "pciAddress"; ParseFake reads both.
	PCIAddress string `json:"bdf"`
	// PCIDeviceID is the combined device/vendor id as NVML and mig-parted
	// print it ("0x233010DE").
	PCIDeviceID string `json:"pciDeviceId,omitempty"`
	// NUMANode is the NUMA node of the GPU's PCI device (nil: none/unknown).
	NUMANode *int `json:"numaNode,omitempty"`
	// CPUAffinity is the driver's ideal CPU set for the GPU as a cpulist
	// (nvmlDeviceGetCpuAffinity; the "CPU Affinity" of nvidia-smi topo -m).
	CPUAffinity string `json:"cpuAffinity,omitempty"`
	// Architecture is the GPU generation (Ampere, Hopper, Blackwell, ...).
	Architecture string `json:"architecture,omitempty"`
	// ComputeCapability is "major.minor", e.g. "9.0".
	ComputeCapability string `json:"computeCapability,omitempty"`
	// MemoryBytes is the framebuffer size in bytes (nvidia-smi prints MiB).
	MemoryBytes uint64 `json:"memoryBytes,omitempty"`
	// SMCount is the number of streaming multiprocessors.
	SMCount int `json:"smCount,omitempty"`
	// Persistence is the persistence mode.
	Persistence *bool `json:"persistence,omitempty"`
	// ComputeMode is Default, Exclusive_Process or Prohibited.
	ComputeMode string     `json:"computeMode,omitempty"`
	MIG         *MIGMode   `json:"mig,omitempty"`
	Clocks      Clocks     `json:"clocks"`
	ClockEvents ClockEvent `json:"clockEvents"`
	ECC         *ECC       `json:"ecc,omitempty"`
	// RetiredPages is set on GPUs that retire pages (pre-Ampere).
	RetiredPages *RetiredPages `json:"retiredPages,omitempty"`
	// RemappedRows is set on GPUs with row remapping (Ampere and newer).
	RemappedRows *RemappedRows `json:"remappedRows,omitempty"`
	Power        Power         `json:"power"`
	PCIe         PCIeLink      `json:"pcie"`
	// NVLinks lists the GPU's NVLink links (empty when it has none or they
	// could not be read).
	NVLinks []NVLink `json:"nvlinks,omitempty"`
	// NVLinkPeers are the NVLink classes of nvidia-smi topo -m (nvidia-smi
	// backend).
	NVLinkPeers []NVLinkPeer `json:"nvlinkPeers,omitempty"`
	// TemperatureC is the GPU core temperature.
	TemperatureC *int `json:"temperatureC,omitempty"`
	// MemoryUsedBytes is the framebuffer memory in use, in bytes.
	MemoryUsedBytes *uint64 `json:"memoryUsedBytes,omitempty"`
	// UtilizationPct and MemoryUtilPct are the GPU and memory-controller
	// utilisation over the driver's last sample period.
	UtilizationPct *int `json:"utilizationPct,omitempty"`
	MemoryUtilPct  *int `json:"memoryUtilPct,omitempty"`
	// Health holds the driver's health signals (reset required, recovery
	// action, fabric state, NVLink error counters) when the backend reads
	// them; HealthChecks turns them into checks.
	Health *Health `json:"health,omitempty"`
	// MIGInstances are the GPU instances of a GPU in MIG mode (read by the
	// MIG layer; the fake backend carries them in its file).
	MIGInstances []MIGInstance `json:"migInstances,omitempty"`
}

// MIGInstance is one MIG GPU instance and its compute instances.
type MIGInstance struct {
	GPUInstanceID int `json:"gpuInstanceId"`
	// ProfileID is the GPU-instance profile id that 'nvidia-smi mig -lgip'
	// prints (e.g. 19 for 1g). ProfileUnknown: nvidia-smi's XML does not
	// carry it; miglive.InferProfiles names it from SMs and memory.
	ProfileID int `json:"profileId"`
	// Profile is the profile name ("1g.10gb").
	Profile string `json:"profile"`
	// Start and Size are the placement on the memory-slice axis; Size 0
	// means the placement is unknown (nvidia-smi's XML has none).
	Start int `json:"start"`
	Size  int `json:"size"`
	// SMCount and MemoryBytes are the instance's multiprocessors and
	// framebuffer memory in bytes, when the backend reports them
	// (nvidia-smi XML).
	SMCount          int          `json:"smCount,omitempty"`
	MemoryBytes      uint64       `json:"memoryBytes,omitempty"`
	ComputeInstances []MIGCompute `json:"computeInstances,omitempty"`
}

// ProfileUnknown is the ProfileID of an instance whose profile the backend
// did not report.
const ProfileUnknown = -1

// MIGCompute is one compute instance (a MIG device CUDA can see).
type MIGCompute struct {
	ComputeInstanceID int    `json:"computeInstanceId"`
	ProfileID         int    `json:"profileId"`
	Profile           string `json:"profile"`
	UUID              string `json:"uuid,omitempty"`
	// Index is the MIG device index nvidia-smi prints (nil: not reported).
	Index *int `json:"index,omitempty"`
	// SMCount is the compute instance's multiprocessors (0: not reported).
	SMCount int `json:"smCount,omitempty"`
	// MemoryUsedBytes is the MIG device's framebuffer memory in use, in
	// bytes.
	MemoryUsedBytes *uint64 `json:"memoryUsedBytes,omitempty"`
}

// MIGMode is a MIG-capable GPU's mode. Current and Pending differ until the
// GPU is reset.
type MIGMode struct {
	Current bool `json:"current"`
	Pending bool `json:"pending"`
}

// ResetNeeded reports whether a mode change waits for a GPU reset.
func (m *MIGMode) ResetNeeded() bool { return m != nil && m.Current != m.Pending }

// Clocks are in MHz; zero means unknown.
type Clocks struct {
	GraphicsMHz    uint32 `json:"graphicsMHz,omitempty"`
	SMMHz          uint32 `json:"smMHz,omitempty"`
	MemoryMHz      uint32 `json:"memoryMHz,omitempty"`
	AppGraphicsMHz uint32 `json:"appGraphicsMHz,omitempty"`
	AppMemoryMHz   uint32 `json:"appMemoryMHz,omitempty"`
	// DefaultAppGraphicsMHz is the default application graphics clock.
	DefaultAppGraphicsMHz uint32 `json:"defaultAppGraphicsMHz,omitempty"`
	MaxGraphicsMHz        uint32 `json:"maxGraphicsMHz,omitempty"`
	MaxSMMHz              uint32 `json:"maxSMMHz,omitempty"`
	MaxMemoryMHz          uint32 `json:"maxMemoryMHz,omitempty"`
	// Locked is the locked graphics clock range when known. Neither NVML nor
	// nvidia-smi report it; it is known from the fake backend or gpunode's own
	// journal, and hinted at by the clocks-setting event reason.
	Locked *ClockRange `json:"locked,omitempty"`
}

// ClockRange is a locked clock range in MHz.
type ClockRange struct {
	MinMHz uint32 `json:"minMHz"`
	MaxMHz uint32 `json:"maxMHz"`
}

// ClockEvent is the clock-event (formerly "throttle") reason bitmask and its
// decoded names.
type ClockEvent struct {
	Mask    uint64   `json:"mask"`
	Reasons []string `json:"reasons,omitempty"`
	// Known is false when the backend could not read the reasons.
	Known bool `json:"known"`
}

// Clock-event reason bits, as nvml.h defines nvmlClocksEventReason*.
const (
	ReasonGPUIdle              uint64 = 0x1
	ReasonApplicationsClocks   uint64 = 0x2
	ReasonSWPowerCap           uint64 = 0x4
	ReasonHWSlowdown           uint64 = 0x8
	ReasonSyncBoost            uint64 = 0x10
	ReasonSWThermalSlowdown    uint64 = 0x20
	ReasonHWThermalSlowdown    uint64 = 0x40
	ReasonHWPowerBrakeSlowdown uint64 = 0x80
	ReasonDisplayClockSetting  uint64 = 0x100
)

var reasonNames = []struct {
	bit  uint64
	name string
}{
	{ReasonGPUIdle, "GpuIdle"},
	{ReasonApplicationsClocks, "ApplicationsClocksSetting"},
	{ReasonSWPowerCap, "SwPowerCap"},
	{ReasonHWSlowdown, "HwSlowdown"},
	{ReasonSyncBoost, "SyncBoost"},
	{ReasonSWThermalSlowdown, "SwThermalSlowdown"},
	{ReasonHWThermalSlowdown, "HwThermalSlowdown"},
	{ReasonHWPowerBrakeSlowdown, "HwPowerBrakeSlowdown"},
	{ReasonDisplayClockSetting, "DisplayClockSetting"},
}

// DecodeClockEvents names the bits of an NVML clock-event reason mask with the
// nvml.h names (without the nvmlClocksEventReason prefix). Unknown bits are
// named by value ("0x200").
func DecodeClockEvents(mask uint64) ClockEvent {
	ev := ClockEvent{Mask: mask, Known: true}
	rest := mask
	for _, r := range reasonNames {
		if mask&r.bit != 0 {
			ev.Reasons = append(ev.Reasons, r.name)
			rest &^= r.bit
		}
	}
	for bit := uint64(1); rest != 0 && bit != 0; bit <<= 1 {
		if rest&bit != 0 {
			ev.Reasons = append(ev.Reasons, fmt.Sprintf("0x%x", bit))
			rest &^= bit
		}
	}
	return ev
}

// ECC is the ECC mode and error counts. Counts are nil when unknown.
type ECC struct {
	Current   bool      `json:"current"`
	Pending   bool      `json:"pending"`
	Volatile  ECCCounts `json:"volatile"`
	Aggregate ECCCounts `json:"aggregate"`
}

// ECCCounts are the corrected and uncorrected error counts of one counter
// (volatile: since the driver loaded; aggregate: lifetime).
type ECCCounts struct {
	Corrected   *uint64 `json:"corrected,omitempty"`
	Uncorrected *uint64 `json:"uncorrected,omitempty"`
}

// RetiredPages are the pages retired for multiple single-bit and for
// double-bit errors.
type RetiredPages struct {
	SingleBit int  `json:"singleBit"`
	DoubleBit int  `json:"doubleBit"`
	Pending   bool `json:"pending"`
}

// RemappedRows is the row-remapper state.
type RemappedRows struct {
	Correctable   int  `json:"correctable"`
	Uncorrectable int  `json:"uncorrectable"`
	Pending       bool `json:"pending"`
	Failure       bool `json:"failure"`
}

// Power is in watts; zero means unknown. DrawW is the one-second average
// (NVML's nvmlDeviceGetPowerUsage and CSV power.draw; the XML's power_draw
// up to schema v12 and average_power_draw from v13); InstantW is the
// instantaneous reading where the backend has one.
type Power struct {
	DrawW    float64 `json:"drawW,omitempty"`
	InstantW float64 `json:"instantW,omitempty"`
	LimitW   float64 `json:"limitW,omitempty"`
}

// PCIeLink is the PCIe link generation and width (current and maximum).
type PCIeLink struct {
	Gen      int `json:"gen,omitempty"`
	MaxGen   int `json:"maxGen,omitempty"`
	Width    int `json:"width,omitempty"`
	MaxWidth int `json:"maxWidth,omitempty"`
}

// NVLink is one NVLink link of a GPU.
type NVLink struct {
	Link   int  `json:"link"`
	Active bool `json:"active"`
	// RemotePCIAddress is the sysfs form of the peer's PCI address (a GPU or
	// an NVSwitch).
	RemotePCIAddress string `json:"remoteBdf,omitempty"`
	// SpeedGBps is the link's speed as 'nvidia-smi nvlink -s' prints it.
	SpeedGBps float64 `json:"speedGBps,omitempty"`
}

// NVLinkPeer is a GPU this GPU reaches over NVLink, with the bonded link
// count 'nvidia-smi topo -m' prints (NV<links>). Backends that know the
// remote end of each link (NVML, fake) leave it empty: NVLinkClassesOf
// derives the classes from NVLinks.
type NVLinkPeer struct {
	PCIAddress string `json:"bdf"`
	Links      int    `json:"links"`
}

// ActiveNVLinks counts the active links.
func (g *GPU) ActiveNVLinks() int {
	n := 0
	for _, l := range g.NVLinks {
		if l.Active {
			n++
		}
	}
	return n
}

// normalize sorts GPUs by index and decodes clock-event names from the mask.
func (s *Status) normalize() {
	s.SchemaVersion = SchemaVersion
	if s.GPUs == nil {
		s.GPUs = []GPU{}
	}
	sort.SliceStable(s.GPUs, func(i, j int) bool { return s.GPUs[i].Index < s.GPUs[j].Index })
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if g.ClockEvents.Known || g.ClockEvents.Mask != 0 {
			g.ClockEvents = DecodeClockEvents(g.ClockEvents.Mask)
		}
		if a, err := NormalizePCIAddress(g.PCIAddress); err == nil {
			g.PCIAddress = a
		}
	}
}

// NormalizePCIAddress converts a PCI bus id in nvidia-smi/NVML form
// ("00000000:18:00.0") or sysfs form to the sysfs form ("0000:18:00.0").
func NormalizePCIAddress(s string) (string, error) { return sysfmt.ParseBDF(s) }

func onOff(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "on"
	default:
		return "off"
	}
}

func mhz(v uint32) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%d", v)
}

func count(v *uint64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d", *v)
}

// WriteTable implements output.Tabler: one summary table, then one detail
// block per GPU.
func (s Status) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("GPU", "NAME", "PCI", "NUMA", "PERSIST", "COMPUTE", "MIG", "ECC", "SM MHz", "POWER W", "PCIE", "NVLINK")
	g.Columns[1].Wrap = true
	for _, gp := range s.GPUs {
		g.AddRow(gp.tableRow()...)
	}
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	hdr := fmt.Sprintf("backend: %s", s.Backend)
	if s.Reason != "" {
		hdr += " (" + s.Reason + ")"
	}
	if s.DriverVersion != "" {
		hdr += fmt.Sprintf("  driver: %s", s.DriverVersion)
	}
	if s.CUDAVersion != "" {
		hdr += fmt.Sprintf("  cuda: %s", s.CUDAVersion)
	}
	if len(s.Sources) > 0 {
		hdr += "  read: " + strings.Join(s.Sources, ", ")
	}
	if _, err := fmt.Fprintln(w, hdr); err != nil {
		return err
	}
	for _, wr := range s.Warnings {
		if _, err := fmt.Fprintln(w, "warning: "+wr); err != nil {
			return err
		}
	}
	for _, f := range s.FailedCalls {
		if _, err := fmt.Fprintln(w, "warning: "+f.Error()); err != nil {
			return err
		}
	}
	if len(s.GPUs) == 0 {
		_, err := fmt.Fprintln(w, "no GPUs")
		return err
	}
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	for _, g := range s.GPUs {
		if err := g.writeDetail(w); err != nil {
			return err
		}
	}
	return nil
}

// ListItems implements output.Lister: one row per GPU.
func (s Status) ListItems() any { return s.GPUs }

// tableRow is g's row of the status table.
func (g GPU) tableRow() []string {
	numa := "-"
	if g.NUMANode != nil {
		numa = fmt.Sprintf("%d", *g.NUMANode)
	}
	mig := "-"
	if g.MIG != nil {
		mig = boolWord(g.MIG.Current)
		if g.MIG.ResetNeeded() {
			mig += "->" + boolWord(g.MIG.Pending)
		}
	}
	ecc := "-"
	if g.ECC != nil {
		ecc = boolWord(g.ECC.Current)
		if g.ECC.Current != g.ECC.Pending {
			ecc += "->" + boolWord(g.ECC.Pending)
		}
	}
	power := "-"
	if g.Power.DrawW != 0 || g.Power.LimitW != 0 {
		power = fmt.Sprintf("%.0f/%.0f", g.Power.DrawW, g.Power.LimitW)
	}
	pcie := "-"
	if g.PCIe.Gen != 0 {
		pcie = fmt.Sprintf("gen%d x%d", g.PCIe.Gen, g.PCIe.Width)
	}
	nvl := "-"
	if len(g.NVLinks) > 0 {
		nvl = fmt.Sprintf("%d/%d", g.ActiveNVLinks(), len(g.NVLinks))
	}
	cm := g.ComputeMode
	if cm == "" {
		cm = "-"
	}
	return []string{fmt.Sprint(g.Index), g.Name, g.PCIAddress, numa,
		onOff(g.Persistence), cm, mig, ecc, mhz(g.Clocks.SMMHz) + "/" + mhz(g.Clocks.MaxSMMHz), power, pcie, nvl}
}

func boolWord(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (g GPU) writeDetail(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nGPU %d %s\n", g.Index, g.UUID)
	fmt.Fprintf(&b, "  clocks MHz: graphics %s/%s  sm %s/%s  memory %s/%s  app %s/%s",
		mhz(g.Clocks.GraphicsMHz), mhz(g.Clocks.MaxGraphicsMHz), mhz(g.Clocks.SMMHz), mhz(g.Clocks.MaxSMMHz),
		mhz(g.Clocks.MemoryMHz), mhz(g.Clocks.MaxMemoryMHz), mhz(g.Clocks.AppGraphicsMHz), mhz(g.Clocks.AppMemoryMHz))
	if g.Clocks.Locked != nil {
		fmt.Fprintf(&b, "  locked %d-%d", g.Clocks.Locked.MinMHz, g.Clocks.Locked.MaxMHz)
	}
	b.WriteString("\n")
	switch {
	case !g.ClockEvents.Known:
		b.WriteString("  clock events: unknown\n")
	case len(g.ClockEvents.Reasons) == 0:
		b.WriteString("  clock events: none\n")
	default:
		fmt.Fprintf(&b, "  clock events: %s (0x%x)\n", strings.Join(g.ClockEvents.Reasons, ", "), g.ClockEvents.Mask)
	}
	if g.ECC != nil {
		fmt.Fprintf(&b, "  ecc errors: volatile corrected %s uncorrected %s; aggregate corrected %s uncorrected %s\n",
			count(g.ECC.Volatile.Corrected), count(g.ECC.Volatile.Uncorrected),
			count(g.ECC.Aggregate.Corrected), count(g.ECC.Aggregate.Uncorrected))
	}
	if r := g.RemappedRows; r != nil {
		fmt.Fprintf(&b, "  remapped rows: correctable %d uncorrectable %d pending %s failure %s\n",
			r.Correctable, r.Uncorrectable, yesNo(r.Pending), yesNo(r.Failure))
	}
	if r := g.RetiredPages; r != nil {
		fmt.Fprintf(&b, "  retired pages: single-bit %d double-bit %d pending %s\n", r.SingleBit, r.DoubleBit, yesNo(r.Pending))
	}
	if g.PCIe.Gen != 0 {
		fmt.Fprintf(&b, "  pcie: gen%d/%d x%d/%d\n", g.PCIe.Gen, g.PCIe.MaxGen, g.PCIe.Width, g.PCIe.MaxWidth)
	}
	if u := g.usage(); u != "" {
		b.WriteString("  usage: " + u + "\n")
	}
	if h := g.Health; h != nil {
		var parts []string
		if h.ResetRequired != nil {
			parts = append(parts, "reset required "+yesNo(*h.ResetRequired))
		}
		if h.DrainRecommended != nil {
			parts = append(parts, "drain recommended "+yesNo(*h.DrainRecommended))
		}
		if h.RecoveryAction != "" {
			parts = append(parts, "recovery action "+h.RecoveryAction)
		}
		if h.FabricState != "" || h.FabricStatus != "" {
			parts = append(parts, "fabric "+orDash(h.FabricState)+"/"+orDash(h.FabricStatus))
		}
		if len(parts) > 0 {
			b.WriteString("  health: " + strings.Join(parts, ", ") + "\n")
		}
	}
	if len(g.MIGInstances) > 0 {
		b.WriteString("  mig instances:")
		for _, gi := range g.MIGInstances {
			name := gi.Profile
			if name == "" {
				name = "profile ?"
				if gi.ProfileID != ProfileUnknown {
					name = fmt.Sprintf("profile %d", gi.ProfileID)
				}
			}
			if gi.Size == 0 {
				// nvidia-smi's XML has no placements.
				fmt.Fprintf(&b, " %s(GI %d", name, gi.GPUInstanceID)
				if gi.SMCount > 0 {
					fmt.Fprintf(&b, ", %d SMs", gi.SMCount)
				}
				if gi.MemoryBytes > 0 {
					fmt.Fprintf(&b, ", %d MiB", gi.MemoryBytes>>20)
				}
				b.WriteString(")")
			} else {
				fmt.Fprintf(&b, " %s@%d:%d", name, gi.Start, gi.Size)
			}
			if len(gi.ComputeInstances) != 1 {
				fmt.Fprintf(&b, "(%d CIs)", len(gi.ComputeInstances))
			}
		}
		b.WriteString("\n")
	}
	if len(g.NVLinks) > 0 {
		peers := map[string]int{}
		for _, l := range g.NVLinks {
			if l.Active && l.RemotePCIAddress != "" {
				peers[l.RemotePCIAddress]++
			}
		}
		keys := make([]string, 0, len(peers))
		for k := range peers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "  nvlink: %d/%d active", g.ActiveNVLinks(), len(g.NVLinks))
		for _, k := range keys {
			fmt.Fprintf(&b, " %s x%d", k, peers[k])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// usage renders memory used, utilisation, temperature and power ("" when
// the backend read none of them).
func (g GPU) usage() string {
	var parts []string
	if g.MemoryUsedBytes != nil {
		parts = append(parts, fmt.Sprintf("memory %d/%d MiB", *g.MemoryUsedBytes>>20, g.MemoryBytes>>20))
	}
	if g.UtilizationPct != nil {
		parts = append(parts, fmt.Sprintf("gpu util %d%%", *g.UtilizationPct))
	}
	if g.MemoryUtilPct != nil {
		parts = append(parts, fmt.Sprintf("memory util %d%%", *g.MemoryUtilPct))
	}
	if g.TemperatureC != nil {
		parts = append(parts, fmt.Sprintf("%d C", *g.TemperatureC))
	}
	if g.Power.DrawW != 0 {
		p := fmt.Sprintf("power %.2f W (1 s average)", g.Power.DrawW)
		if g.Power.InstantW != 0 {
			p += fmt.Sprintf(", instant %.2f W", g.Power.InstantW)
		}
		parts = append(parts, p)
	} else if g.Power.InstantW != 0 {
		parts = append(parts, fmt.Sprintf("power %.2f W (instant)", g.Power.InstantW))
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
