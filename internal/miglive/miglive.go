// Package miglive applies, asserts and exports MIG layouts on live GPUs, in
// mig-parted's v1 configuration format.
//
// Unlike mig-parted, which creates GPU instances without placements and
// tries every ordering until one fits, Apply plans the layout exactly first
// (internal/mig's planner, on a catalogue overridden with the GPU's own NVML
// profile data) and then creates each GPU instance at the placement the plan
// chose (nvmlDeviceCreateGpuInstanceWithPlacement), largest first, with one
// compute instance each (the full-size default CI, or the CI size a
// "<c>c.<g>g.<gb>gb" key names, as mig-parted does). A layout that cannot
// fit is refused before anything is touched.
//
// Enabling or disabling MIG mode may need a GPU reset; Apply reports it and
// leaves that GPU's instances alone until the mode is active (gpunode does
// not reset GPUs: stop nvidia-persistenced/DCGM, unload nvidia_drm, then
// 'nvidia-smi -i <UUID> -r').
//
// Every change is journaled first (owner "mig"): "mig.mode" restores the
// previous mode, "mig.layout" destroys what was created and recreates the
// previous instances at their previous placements.
//
// Assert compares, per selected GPU, the MIG mode and the profile -> count
// map of its compute instances with the config (mig-parted's semantics);
// Export prints the live layout as a v1 spec, merged like mig-parted's
// export.
//
// GPUs are reached through the Device interface: an NVML implementation
// (cgo, nvml.go) and an in-memory one over the fake GPU backend (fake.go).
package miglive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/mig"
	"github.com/gpunode/gpunode/internal/output"
)

// Info identifies a GPU.
type Info struct {
	Index int
	UUID  string
	Name  string
	// DeviceID is the PCI device/vendor id (0x20B010DE: device 0x20B0).
	DeviceID    mig.DeviceID
	MemoryBytes uint64
	// MIGCapable is false for GPUs without MIG.
	MIGCapable bool
}

// Instance is a live GPU instance.
type Instance struct {
	// NVMLProfile is the GI profile enum (GPU_INSTANCE_PROFILE_*).
	NVMLProfile int
	Placement   mig.Placement
	// CISlices lists the compute slices of each compute instance.
	CISlices []int
}

// Device is what MIG live operations need from a GPU.
type Device interface {
	Info() Info
	MIGMode(ctx context.Context) (current, pending bool, err error)
	SetMIGMode(ctx context.Context, on bool) error
	Instances(ctx context.Context) ([]Instance, error)
	// DestroyAll destroys every compute instance, then every GPU instance.
	DestroyAll(ctx context.Context) error
	// Create makes a GPU instance of profile enum nvmlProfile at placement
	// pl with one compute instance of ciSlices compute slices.
	Create(ctx context.Context, nvmlProfile int, pl mig.Placement, ciSlices int) error
	// ProfileInfos reads the GI profiles and placements the GPU supports.
	ProfileInfos(ctx context.Context) ([]mig.NVMLProfileInfo, error)
}

// Product returns the catalogue product of d, overridden with the GPU's
// live profile data when it reports any.
func Product(ctx context.Context, cat *mig.Catalogue, d Device) (*mig.Product, error) {
	info := d.Info()
	base, _ := cat.ByDeviceID(info.DeviceID.Device)
	infos, err := d.ProfileInfos(ctx)
	if err != nil || len(infos) == 0 {
		if base == nil {
			return nil, fmt.Errorf("GPU %d (%s, %s): %w", info.Index, info.Name, info.DeviceID, mig.ErrNotMIGCapable)
		}
		return base, nil
	}
	p, err := mig.ProductFromNVML(base, info.Name, info.DeviceID.Device, info.MemoryBytes, infos)
	if err != nil {
		if base != nil {
			return base, nil
		}
		return nil, fmt.Errorf("GPU %d: %w", info.Index, err)
	}
	c, err := cat.With(p)
	if err != nil {
		if base != nil {
			return base, nil
		}
		return nil, fmt.Errorf("GPU %d: %w", info.Index, err)
	}
	return c.ByDeviceID(info.DeviceID.Device)
}

func profileByEnum(p *mig.Product, enum int) (*mig.Profile, bool) {
	for i := range p.Profiles {
		if p.Profiles[i].NVMLProfile == enum {
			return &p.Profiles[i], true
		}
	}
	return nil, false
}

// ciName names a compute instance of ciSlices slices in GI profile gi the
// way mig-parted does ("3g.40gb" full size, else "1c.3g.40gb").
func ciName(gi *mig.Profile, ciSlices int) string {
	if ciSlices == gi.ComputeSlices || ciSlices == 0 {
		return gi.Name
	}
	return fmt.Sprintf("%dc.%s", ciSlices, gi.Name)
}

// Config reads d's layout as mig-parted's profile -> count map (one count
// per compute instance).
func Config(ctx context.Context, p *mig.Product, d Device) (mig.MigConfig, error) {
	insts, err := d.Instances(ctx)
	if err != nil {
		return nil, err
	}
	out := mig.MigConfig{}
	for _, in := range insts {
		pr, ok := profileByEnum(p, in.NVMLProfile)
		if !ok {
			return nil, fmt.Errorf("GPU %d: GPU instance of unknown profile enum %d", d.Info().Index, in.NVMLProfile)
		}
		for _, c := range in.CISlices {
			out[ciName(pr, c)]++
		}
	}
	return out, nil
}

func configsEqual(a, b mig.MigConfig) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if v != 0 && a[k] != v {
			return false
		}
	}
	return true
}

// entryFor returns the entry of cfg that selects d, or nil. A GPU selected
// by two entries is an error (mig-parted would apply both, the last one
// winning; gpunode refuses the ambiguity).
func entryFor(cfg mig.MigConfigSpecSlice, info Info) (*mig.MigConfigSpec, error) {
	var hit *mig.MigConfigSpec
	n := 0
	for i := range cfg {
		e := &cfg[i]
		if e.MatchesDevices(info.Index) && e.MatchesDeviceFilter(info.DeviceID) {
			if hit == nil {
				hit = e
			}
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("GPU %d is selected by %d entries of the config; make devices/device-filter select it once", info.Index, n)
	}
	return hit, nil
}

// Creation is one GPU instance Apply creates.
type Creation struct {
	Order       int           `json:"order"`
	Profile     string        `json:"profile"`
	NVMLProfile int           `json:"nvmlProfile"`
	Placement   mig.Placement `json:"placement"`
	// ComputeInstance is the CI created inside it (mig-parted profile name).
	ComputeInstance string `json:"computeInstance"`
	ciSlices        int
}

// DeviceResult is what Apply did (or would do) to one GPU.
type DeviceResult struct {
	GPU   int    `json:"gpu"`
	UUID  string `json:"uuid"`
	Model string `json:"model,omitempty"`
	// Selected is false when no entry of the config selects the GPU.
	Selected   bool          `json:"selected"`
	WantMIG    bool          `json:"wantMig"`
	ModeChange string        `json:"modeChange,omitempty"`
	Current    mig.MigConfig `json:"current,omitempty"`
	Want       mig.MigConfig `json:"want,omitempty"`
	Destroy    bool          `json:"destroy,omitempty"`
	Create     []Creation    `json:"create,omitempty"`
	Status     string        `json:"status"`
	// ResetRequired: the mode change waits for a GPU reset.
	ResetRequired bool   `json:"resetRequired,omitempty"`
	Hint          string `json:"hint,omitempty"`
}

// Result statuses.
const (
	StatusNotSelected    = "not selected"
	StatusAlreadyApplied = "already applied"
	StatusPlanned        = "planned"
	StatusApplied        = "applied"
	StatusResetRequired  = "reset required"
)

// ApplySchema is the schema of ApplyResult.
const ApplySchema = "gpunode.mig.apply/v1"

// ApplyResult is the model of 'gpunode mig apply'.
type ApplyResult struct {
	SchemaVersion string         `json:"schemaVersion"`
	File          string         `json:"file"`
	Config        string         `json:"config"`
	DryRun        bool           `json:"dryRun"`
	Journal       string         `json:"journal,omitempty"`
	Devices       []DeviceResult `json:"devices"`
}

// ResetRequired reports whether any GPU waits for a reset.
func (r ApplyResult) ResetRequired() bool {
	for _, d := range r.Devices {
		if d.ResetRequired {
			return true
		}
	}
	return false
}

// Options configure Apply.
type Options struct {
	File   string
	Label  string
	DryRun bool
	// Host and JournalDir locate the journal (required unless DryRun).
	Host       *hostfs.FS
	JournalDir string
	Command    string
	// Lookup finds a device by UUID for journal reverts (default: among
	// the devices passed to Apply).
	Lookup func(uuid string) (Device, error)
}

// ErrInfeasible is returned when a selected GPU's layout does not fit.
var ErrInfeasible = errors.New("layout does not fit")

// ErrNoDevices is returned when the node has no GPUs.
var ErrNoDevices = errors.New("no GPUs")

// wantOf turns an entry's mig-devices into planner wants (GI profiles) and,
// per GI profile, the CI sizes to create (one per GI).
func wantOf(p *mig.Product, md mig.MigConfig) ([]mig.Want, map[string][]int, error) {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	counts := map[string]int{}
	var order []string
	ci := map[string][]int{}
	for _, k := range keys {
		n := md[k]
		if n == 0 {
			continue
		}
		mp, err := mig.ParseMigProfile(k)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid format for '%v': %v", k, err)
		}
		gi := mp.GI()
		idx, ok := p.Profile(gi)
		if !ok {
			return nil, nil, fmt.Errorf("%w: profile %q is not a %s profile", mig.ErrBadDemand, k, p.Key)
		}
		if mp.C > p.Profiles[idx].ComputeSlices {
			return nil, nil, fmt.Errorf("%w: %q: %d compute slices exceed the GPU instance's %d", mig.ErrBadDemand, k, mp.C, p.Profiles[idx].ComputeSlices)
		}
		if _, seen := counts[gi]; !seen {
			order = append(order, gi)
		}
		counts[gi] += n
		for i := 0; i < n; i++ {
			ci[gi] = append(ci[gi], mp.C)
		}
	}
	var wants []mig.Want
	for _, gi := range order {
		wants = append(wants, mig.Want{Profile: gi, Count: counts[gi]})
	}
	return wants, ci, nil
}

// planDevice decides what Apply does to one GPU.
func planDevice(ctx context.Context, cat *mig.Catalogue, d Device, cfg mig.MigConfigSpecSlice) (DeviceResult, *mig.Product, error) {
	info := d.Info()
	r := DeviceResult{GPU: info.Index, UUID: info.UUID}
	e, err := entryFor(cfg, info)
	if err != nil {
		return r, nil, err
	}
	if e == nil {
		r.Status = StatusNotSelected
		return r, nil, nil
	}
	r.Selected, r.WantMIG = true, e.MigEnabled
	if !info.MIGCapable {
		if !e.MigEnabled {
			r.Status = StatusAlreadyApplied
			return r, nil, nil
		}
		return r, nil, fmt.Errorf("GPU %d (%s): %w", info.Index, info.Name, mig.ErrNotMIGCapable)
	}
	p, err := Product(ctx, cat, d)
	if err != nil {
		return r, nil, err
	}
	r.Model = p.Key
	cur, pend, err := d.MIGMode(ctx)
	if err != nil {
		return r, nil, fmt.Errorf("GPU %d: MIG mode: %w", info.Index, err)
	}
	if pend != e.MigEnabled || cur != e.MigEnabled {
		from := onOff(cur)
		if pend != cur {
			from += " (pending " + onOff(pend) + ")"
		}
		r.ModeChange = fmt.Sprintf("%s -> %s", from, onOff(e.MigEnabled))
	}
	if !e.MigEnabled {
		if cur {
			if insts, err := d.Instances(ctx); err == nil && len(insts) > 0 {
				r.Destroy = true
			}
		}
		r.Status = StatusPlanned
		if r.ModeChange == "" {
			r.Status = StatusAlreadyApplied
		}
		return r, p, nil
	}
	r.Want = mig.MigConfig{}
	for k, v := range e.MigDevices {
		if v != 0 {
			r.Want[k] = v
		}
	}
	wants, ciSizes, err := wantOf(p, e.MigDevices)
	if err != nil {
		return r, nil, fmt.Errorf("GPU %d: %w", info.Index, err)
	}
	if cur {
		r.Current, err = Config(ctx, p, d)
		if err != nil {
			return r, nil, err
		}
		if configsEqual(r.Current, r.Want) && r.ModeChange == "" {
			r.Status = StatusAlreadyApplied
			return r, p, nil
		}
		r.Destroy = len(r.Current) > 0
	}
	if len(wants) > 0 {
		plan, err := cat.Plan(ctx, p, wants, mig.PlanOptions{GPUs: 1})
		if err != nil {
			return r, nil, fmt.Errorf("GPU %d: %w", info.Index, err)
		}
		if !plan.Feasible {
			return r, nil, fmt.Errorf("GPU %d (%s): %w: %s: %s", info.Index, p.Key, ErrInfeasible, mig.FormatWant(wants), strings.Join(plan.Reasons, "; "))
		}
		for _, in := range plan.Layouts[0].Instances {
			idx, _ := p.Profile(in.Profile)
			pr := &p.Profiles[idx]
			sizes := ciSizes[pr.Name]
			c := sizes[0]
			ciSizes[pr.Name] = sizes[1:]
			r.Create = append(r.Create, Creation{Order: in.Order, Profile: pr.Name, NVMLProfile: pr.NVMLProfile,
				Placement: in.Placement, ComputeInstance: ciName(pr, c), ciSlices: c})
		}
		sort.SliceStable(r.Create, func(i, j int) bool { return r.Create[i].Order < r.Create[j].Order })
	}
	r.Status = StatusPlanned
	return r, p, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// layoutState is the journal form of a GPU's instances.
type layoutState struct {
	Instances []stateInstance `json:"instances"`
}

type stateInstance struct {
	NVMLProfile int `json:"nvmlProfile"`
	Start       int `json:"start"`
	Size        int `json:"size"`
	CISlices    int `json:"ciSlices"`
}

func encodeLayout(insts []Instance) string {
	var s layoutState
	for _, in := range insts {
		c := 0
		if len(in.CISlices) > 0 {
			c = in.CISlices[0]
		}
		s.Instances = append(s.Instances, stateInstance{NVMLProfile: in.NVMLProfile, Start: in.Placement.Start, Size: in.Placement.Size, CISlices: c})
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// Journal kinds.
const (
	JournalOwner = "mig"
	StepMode     = "mig.mode"   // Original/New "on"/"off"
	StepLayout   = "mig.layout" // Original/New: JSON layoutState
)

// RegisterJournalKinds registers the MIG step kinds; lookup finds the GPU a
// step names.
func RegisterJournalKinds(k *journal.Kinds, lookup func(uuid string) (Device, error)) error {
	if err := k.Register(StepMode, func(ctx context.Context, _ *hostfs.FS, s journal.Step) error {
		d, err := lookup(s.Target)
		if err != nil {
			return err
		}
		return d.SetMIGMode(ctx, s.Original == "on")
	}); err != nil {
		return err
	}
	return k.Register(StepLayout, func(ctx context.Context, _ *hostfs.FS, s journal.Step) error {
		d, err := lookup(s.Target)
		if err != nil {
			return err
		}
		var st layoutState
		if err := json.Unmarshal([]byte(s.Original), &st); err != nil {
			return fmt.Errorf("%s %s: original layout: %w", StepLayout, s.Target, err)
		}
		if err := d.DestroyAll(ctx); err != nil {
			return err
		}
		for _, in := range st.Instances {
			if err := d.Create(ctx, in.NVMLProfile, mig.Placement{Start: in.Start, Size: in.Size}, in.CISlices); err != nil {
				return err
			}
		}
		return nil
	})
}

// Apply applies label of spec to devs: plan every GPU first (nothing is
// touched when any selected GPU's layout is bad or does not fit), then set
// modes and create instances at the planned placements, journaled.
func Apply(ctx context.Context, cat *mig.Catalogue, devs []Device, spec *mig.MigPartedSpec, o Options) (ApplyResult, error) {
	res := ApplyResult{SchemaVersion: ApplySchema, File: o.File, Config: o.Label, DryRun: o.DryRun, Devices: []DeviceResult{}}
	if len(devs) == 0 {
		return res, ErrNoDevices
	}
	if !o.DryRun {
		for _, d := range devs {
			if _, ok := d.(*smiDevice); ok {
				return res, fmt.Errorf("mig apply with --gpu-backend nvidia-smi: %w (mig apply --dry-run, export and assert work)", ErrReadOnly)
			}
		}
	}
	cfg, err := spec.Config(o.Label)
	if err != nil {
		return res, err
	}
	for _, d := range devs {
		r, _, err := planDevice(ctx, cat, d, cfg)
		if err != nil {
			return res, err
		}
		res.Devices = append(res.Devices, r)
	}
	if o.DryRun {
		return res, nil
	}
	work := false
	for _, r := range res.Devices {
		work = work || r.Status == StatusPlanned
	}
	if !work {
		return res, nil
	}
	byUUID := map[string]Device{}
	for _, d := range devs {
		byUUID[d.Info().UUID] = d
	}
	lookup := o.Lookup
	if lookup == nil {
		lookup = func(u string) (Device, error) {
			if d, ok := byUUID[u]; ok {
				return d, nil
			}
			return nil, fmt.Errorf("GPU %s not found", u)
		}
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, lookup); err != nil {
		return res, err
	}
	meta := journal.Meta{Owner: JournalOwner, Command: o.Command, Profile: o.Label}
	out, err := journal.Run(ctx, o.Host, o.JournalDir, meta, func(context.Context, *journal.Tx) ([]journal.Action, error) {
		var acts []journal.Action
		for i, d := range devs {
			r := &res.Devices[i]
			if r.Status != StatusPlanned {
				continue
			}
			info := d.Info()
			if !r.WantMIG && r.ModeChange != "" {
				// The driver refuses to leave MIG mode while instances exist:
				// destroy them first (journaled, so a rollback recreates them).
				acts = append(acts, journal.Action{
					Prepare: func(ctx context.Context) (journal.Step, bool, error) {
						before, err := d.Instances(ctx)
						if err != nil || len(before) == 0 {
							return journal.Step{}, true, err
						}
						r.Destroy = true
						return journal.Step{Kind: StepLayout, Target: info.UUID, ID: fmt.Sprintf("gpu%d.mig-layout", info.Index),
							Original: encodeLayout(before), New: encodeLayout(nil)}, false, nil
					},
					Do: d.DestroyAll,
				})
			}
			if r.ModeChange != "" {
				acts = append(acts, journal.Action{
					Prepare: func(ctx context.Context) (journal.Step, bool, error) {
						cur, _, err := d.MIGMode(ctx)
						return journal.Step{Kind: StepMode, Target: info.UUID, ID: fmt.Sprintf("gpu%d.mig", info.Index), Original: onOff(cur), New: onOff(r.WantMIG)}, false, err
					},
					Do: func(ctx context.Context) error {
						if err := d.SetMIGMode(ctx, r.WantMIG); err != nil {
							return err
						}
						cur, pend, err := d.MIGMode(ctx)
						if err != nil {
							return err
						}
						if cur != pend {
							r.Status, r.ResetRequired = StatusResetRequired, true
							r.Hint = fmt.Sprintf("MIG mode is pending until GPU %d is reset: stop its clients (nvidia-persistenced, DCGM, nvidia_drm), run 'nvidia-smi -i %s -r', then apply again", info.Index, info.UUID)
						}
						return nil
					},
				})
			}
			if !r.WantMIG {
				continue
			}
			acts = append(acts, journal.Action{
				Prepare: func(ctx context.Context) (journal.Step, bool, error) {
					if r.ResetRequired {
						return journal.Step{}, true, nil
					}
					before, err := d.Instances(ctx)
					if err != nil {
						return journal.Step{}, false, err
					}
					var after []Instance
					for _, c := range r.Create {
						after = append(after, Instance{NVMLProfile: c.NVMLProfile, Placement: c.Placement, CISlices: []int{c.ciSlices}})
					}
					return journal.Step{Kind: StepLayout, Target: info.UUID, ID: fmt.Sprintf("gpu%d.mig-layout", info.Index),
						Original: encodeLayout(before), New: encodeLayout(after)}, false, nil
				},
				Do: func(ctx context.Context) error {
					if err := d.DestroyAll(ctx); err != nil {
						return fmt.Errorf("GPU %d: %w", info.Index, err)
					}
					for _, c := range r.Create {
						if err := d.Create(ctx, c.NVMLProfile, c.Placement, c.ciSlices); err != nil {
							return fmt.Errorf("GPU %d: create %s at %s: %w", info.Index, c.Profile, c.Placement, err)
						}
					}
					p, err := Product(ctx, cat, d)
					if err != nil {
						return err
					}
					got, err := Config(ctx, p, d)
					if err != nil {
						return err
					}
					if !configsEqual(got, r.Want) {
						return fmt.Errorf("GPU %d: after apply the layout is %v, want %v", info.Index, got, r.Want)
					}
					return nil
				},
			})
		}
		return acts, nil
	}, journal.WithKinds(kinds))
	if err != nil {
		var je *journal.Error
		if errors.As(err, &je) {
			if je.Revert != nil {
				return res, fmt.Errorf("%w (and reverting failed: %v; run the rollback)", je.Err, je.Revert)
			}
			return res, fmt.Errorf("%w (changes reverted)", je.Err)
		}
		return res, fmt.Errorf("journal: %w", err)
	}
	for i := range res.Devices {
		if r := &res.Devices[i]; r.Status == StatusPlanned {
			r.Status = StatusApplied
		}
	}
	res.Journal = out.ID
	return res, nil
}

// WriteTable implements output.Tabler.
func (r ApplyResult) WriteTable(w io.Writer, o output.Options) error {
	head := fmt.Sprintf("mig apply %s -c %s", r.File, r.Config)
	if r.DryRun {
		head += " (dry run)"
	}
	if r.Journal != "" {
		head += ", journal " + r.Journal
	}
	g := output.NewGrid("GPU", "MODEL", "MIG", "STATUS", "CREATE (order profile@start:size -> CI)")
	g.Columns[4].Wrap = true
	for _, d := range r.Devices {
		mode := "-"
		if d.Selected {
			mode = onOff(d.WantMIG)
			if d.ModeChange != "" {
				mode = d.ModeChange
			}
		}
		var cs []string
		if d.Destroy {
			cs = append(cs, "destroy all;")
		}
		for _, c := range d.Create {
			cs = append(cs, fmt.Sprintf("%d %s@%s->%s", c.Order, c.Profile, c.Placement, c.ComputeInstance))
		}
		g.AddRow(fmt.Sprint(d.GPU), dash(d.Model), mode, string(d.Status), strings.Join(cs, " "))
	}
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	fmt.Fprintln(w, head)
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	for _, d := range r.Devices {
		if d.Hint != "" {
			fmt.Fprintf(w, "GPU %d: %s\n", d.GPU, d.Hint)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// AssertSchema is the schema of AssertResult.
const AssertSchema = "gpunode.mig.assert/v1"

// AssertResult is the model of 'gpunode mig assert'.
type AssertResult struct {
	SchemaVersion string         `json:"schemaVersion"`
	File          string         `json:"file"`
	Config        string         `json:"config"`
	Applied       bool           `json:"applied"`
	Devices       []DeviceAssert `json:"devices"`
}

// DeviceAssert is the assertion of one selected GPU.
type DeviceAssert struct {
	GPU     int           `json:"gpu"`
	UUID    string        `json:"uuid"`
	WantMIG bool          `json:"wantMig"`
	MIG     bool          `json:"mig"`
	Want    mig.MigConfig `json:"want,omitempty"`
	Have    mig.MigConfig `json:"have,omitempty"`
	Match   bool          `json:"match"`
	Reason  string        `json:"reason,omitempty"`
}

// Assert checks that label of spec is applied to devs (mode, and the
// profile -> count map of enabled GPUs). GPUs no entry selects are skipped.
func Assert(ctx context.Context, cat *mig.Catalogue, devs []Device, spec *mig.MigPartedSpec, file, label string) (AssertResult, error) {
	res := AssertResult{SchemaVersion: AssertSchema, File: file, Config: label, Applied: true, Devices: []DeviceAssert{}}
	cfg, err := spec.Config(label)
	if err != nil {
		return res, err
	}
	for _, d := range devs {
		info := d.Info()
		e, err := entryFor(cfg, info)
		if err != nil {
			return res, err
		}
		if e == nil {
			continue
		}
		a := DeviceAssert{GPU: info.Index, UUID: info.UUID, WantMIG: e.MigEnabled, Match: true}
		if info.MIGCapable {
			cur, pend, err := d.MIGMode(ctx)
			if err != nil {
				return res, err
			}
			a.MIG = cur
			if cur != pend {
				a.Match, a.Reason = false, "MIG mode change pending a GPU reset"
			}
		}
		if a.Match && a.MIG != a.WantMIG {
			a.Match, a.Reason = false, fmt.Sprintf("MIG mode is %s, want %s", onOff(a.MIG), onOff(a.WantMIG))
		}
		if a.Match && a.WantMIG {
			p, err := Product(ctx, cat, d)
			if err != nil {
				return res, err
			}
			a.Have, err = Config(ctx, p, d)
			if err != nil {
				return res, err
			}
			a.Want = mig.MigConfig{}
			for k, v := range e.MigDevices {
				if v != 0 {
					a.Want[k] = v
				}
			}
			if !configsEqual(a.Have, a.Want) {
				a.Match, a.Reason = false, "MIG devices differ"
			}
		}
		if !a.Match {
			res.Applied = false
		}
		res.Devices = append(res.Devices, a)
	}
	return res, nil
}

func formatConfig(m mig.MigConfig) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// WriteTable implements output.Tabler.
func (r AssertResult) WriteTable(w io.Writer, o output.Options) error {
	if !o.NoHeaders {
		if r.Applied {
			fmt.Fprintf(w, "selected MIG configuration %q is currently applied\n", r.Config)
		} else {
			fmt.Fprintf(w, "assertion failure: selected MIG configuration %q is not currently applied\n", r.Config)
		}
	}
	g := output.NewGrid("GPU", "MIG", "WANT", "HAVE", "MATCH", "REASON")
	g.Columns[2].Wrap, g.Columns[3].Wrap, g.Columns[5].Wrap = true, true, true
	for _, d := range r.Devices {
		mode := onOff(d.MIG)
		if d.MIG != d.WantMIG {
			mode += " (want " + onOff(d.WantMIG) + ")"
		}
		m := "yes"
		if !d.Match {
			m = "no"
		}
		g.AddRow(fmt.Sprint(d.GPU), mode, formatConfig(d.Want), formatConfig(d.Have), m, d.Reason)
	}
	return output.Print(w, g, o)
}

// ListItems implements output.Lister: one row per GPU.
func (r AssertResult) ListItems() any { return r.Devices }

// ListItems implements output.Lister: one row per GPU.
func (r ApplyResult) ListItems() any { return r.Devices }

// Export reads the live layout of devs as a mig-parted v1 spec with one
// config, label, merged like mig-parted's export (identical GPUs share an
// entry; "all" and the device filter are used when they say the same).
func Export(ctx context.Context, cat *mig.Catalogue, devs []Device, label string) (*mig.MigPartedSpec, error) {
	type ent struct {
		filter  string
		devices []int
		enabled bool
		cfg     mig.MigConfig
	}
	var ents []ent
	for _, d := range devs {
		info := d.Info()
		e := ent{filter: info.DeviceID.String(), devices: []int{info.Index}, cfg: mig.MigConfig{}}
		if info.MIGCapable {
			cur, _, err := d.MIGMode(ctx)
			if err != nil {
				return nil, err
			}
			e.enabled = cur
			if cur {
				p, err := Product(ctx, cat, d)
				if err != nil {
					return nil, err
				}
				if e.cfg, err = Config(ctx, p, d); err != nil {
					return nil, err
				}
			}
		}
		ents = append(ents, e)
	}
	dfDevices := map[string][]int{}
	for _, e := range ents {
		dfDevices[e.filter] = append(dfDevices[e.filter], e.devices...)
	}
	type merged struct {
		filters []string
		devices []int
		enabled bool
		cfg     mig.MigConfig
	}
	var ms []merged
outer:
	for _, e := range ents {
		for i := range ms {
			if ms[i].enabled == e.enabled && configsEqual(ms[i].cfg, e.cfg) {
				ms[i].devices = appendUnique(ms[i].devices, e.devices...)
				ms[i].filters = appendUnique(ms[i].filters, e.filter)
				continue outer
			}
		}
		ms = append(ms, merged{filters: []string{e.filter}, devices: e.devices, enabled: e.enabled, cfg: e.cfg})
	}
	var out mig.MigConfigSpecSlice
	for _, m := range ms {
		sort.Ints(m.devices)
		sort.Strings(m.filters)
		s := mig.MigConfigSpec{MigEnabled: m.enabled, MigDevices: m.cfg, Devices: mig.DeviceSelector{Indices: m.devices}}
		switch {
		case len(dfDevices) == 1 || len(ms) == 1:
		case len(m.filters) == 1:
			s.DeviceFilter = mig.DeviceFilter{IDs: m.filters, Single: true}
		default:
			s.DeviceFilter = mig.DeviceFilter{IDs: m.filters}
		}
		var all []int
		for _, f := range m.filters {
			all = appendUnique(all, dfDevices[f]...)
		}
		sort.Ints(all)
		if slices.Equal(all, m.devices) {
			s.Devices = mig.DeviceSelector{All: true}
		}
		out = append(out, s)
	}
	return &mig.MigPartedSpec{Version: mig.MigPartedVersion, MigConfigs: map[string]mig.MigConfigSpecSlice{label: out}}, nil
}

// appendUnique appends each element of v that s does not hold yet.
func appendUnique[T comparable](s []T, v ...T) []T {
	for _, x := range v {
		if !slices.Contains(s, x) {
			s = append(s, x)
		}
	}
	return s
}
