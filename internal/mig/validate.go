package mig

import (
	"context"
	"errors"
	"fmt"
)

// GPU is one GPU of the node a mig-parted file is checked against.
type GPU struct {
	Index    int      `json:"index"`
	DeviceID DeviceID `json:"-"`
	// ID is DeviceID rendered ("0x233010DE").
	ID string `json:"deviceID"`
	// Model is the catalogue key, "" when the GPU is not MIG-capable.
	Model string `json:"model,omitempty"`
}

// NodeGPUs builds the GPU list of a node from PCI device ids (GPU i has
// ids[i]).
func NodeGPUs(ids []uint16) []GPU {
	out := make([]GPU, len(ids))
	for i, id := range ids {
		d := DeviceID{Device: id, Vendor: 0x10de}
		out[i] = GPU{Index: i, DeviceID: d, ID: d.String()}
	}
	return out
}

// ValidateOptions select what Validate checks.
type ValidateOptions struct {
	// File names the file in messages.
	File string
	// Label checks only this mig-config ("" = all).
	Label string
	// GPUs is the node to check against. Empty: every entry is checked
	// against every catalogued product its device-filter selects.
	GPUs []GPU
}

// Validation is the model of `gpunode mig validate`.
type Validation struct {
	SchemaVersion string         `json:"schemaVersion"`
	Kind          string         `json:"kind"`
	File          string         `json:"file"`
	Node          []GPU          `json:"node,omitempty"`
	Configs       []ConfigResult `json:"configs"`
	// OK is true when every checked entry fits on every GPU it selects.
	OK bool `json:"ok"`
}

// ConfigResult is one mig-config label.
type ConfigResult struct {
	Label   string        `json:"label"`
	OK      bool          `json:"ok"`
	Entries []EntryResult `json:"entries"`
}

// EntryResult is one entry of a mig-config.
type EntryResult struct {
	Index        int          `json:"index"`
	DeviceFilter []string     `json:"deviceFilter,omitempty"`
	Devices      string       `json:"devices"`
	MigEnabled   bool         `json:"migEnabled"`
	MigDevices   []Want       `json:"migDevices,omitempty"`
	Checks       []EntryCheck `json:"checks"`
	Warnings     []string     `json:"warnings,omitempty"`
}

// EntryCheck is the verdict for one product (and the GPUs of that product
// the entry selects).
type EntryCheck struct {
	Model        string        `json:"model"`
	GPUs         []int         `json:"gpus,omitempty"`
	OK           bool          `json:"ok"`
	Layout       *GPULayout    `json:"layout,omitempty"`
	Problems     []string      `json:"problems,omitempty"`
	Alternatives []Alternative `json:"alternatives,omitempty"`
}

// ErrNoSuchConfig is returned when -c names a label the file lacks.
var ErrNoSuchConfig = errors.New("no such mig-config")

// Validate checks a parsed mig-parted spec offline.
func (c *Catalogue) Validate(ctx context.Context, spec *MigPartedSpec, opts ValidateOptions) (*Validation, error) {
	v := &Validation{SchemaVersion: SchemaVersion, Kind: "validate", File: opts.File, OK: true}
	labels := sortedKeys(spec.MigConfigs)
	if len(labels) == 0 {
		return nil, fmt.Errorf("%w: %s has no mig-configs (mig-parted accepts an empty file but has nothing to apply)", ErrNoSuchConfig, opts.File)
	}
	if opts.Label != "" {
		if _, err := spec.Config(opts.Label); err != nil {
			return nil, err
		}
		labels = []string{opts.Label}
	}
	gpus := append([]GPU(nil), opts.GPUs...)
	for i := range gpus {
		if p, err := c.ByDeviceID(gpus[i].DeviceID.Device); err == nil && gpus[i].DeviceID.Vendor == 0x10de {
			gpus[i].Model = p.Key
		}
	}
	v.Node = gpus
	for _, label := range labels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr := ConfigResult{Label: label, OK: true}
		for i, e := range spec.MigConfigs[label] {
			er := c.checkEntry(ctx, i, e, gpus)
			for _, ch := range er.Checks {
				if !ch.OK {
					cr.OK = false
				}
			}
			cr.Entries = append(cr.Entries, er)
		}
		if !cr.OK {
			v.OK = false
		}
		v.Configs = append(v.Configs, cr)
	}
	return v, nil
}

func (c *Catalogue) checkEntry(ctx context.Context, idx int, e MigConfigSpec, gpus []GPU) EntryResult {
	er := EntryResult{Index: idx, DeviceFilter: e.Filters(), Devices: e.DevicesString(), MigEnabled: e.MigEnabled, Checks: []EntryCheck{}}
	for _, k := range sortedKeys(e.MigDevices) {
		if e.MigDevices[k] > 0 {
			er.MigDevices = append(er.MigDevices, Want{Profile: k, Count: e.MigDevices[k]})
		}
	}
	// Filters mig-parted would silently never match.
	var filterIDs []DeviceID
	for _, f := range er.DeviceFilter {
		id, err := ParseFilterDeviceID(f)
		if err != nil {
			er.Warnings = append(er.Warnings, fmt.Sprintf("device-filter %q: %v; mig-parted ignores it and matches no GPU with it", f, err))
			continue
		}
		if id.Vendor != 0x10de {
			er.Warnings = append(er.Warnings, fmt.Sprintf("device-filter %q has vendor 0x%04X, not NVIDIA (0x10DE): mig-parted reads it as <device><vendor> (e.g. 0x%04X10DE) and matches no GPU with it", f, id.Vendor, id.Vendor))
			continue
		}
		filterIDs = append(filterIDs, id)
	}
	// Which products (and GPUs) does the entry select?
	type group struct {
		p    *Product
		gpus []int
	}
	var groups []group
	if len(gpus) > 0 {
		byModel := map[string]*group{}
		var order []string
		matched := 0
		for _, g := range gpus {
			if !e.MatchesDeviceFilter(g.DeviceID) || !e.MatchesDevices(g.Index) {
				continue
			}
			matched++
			key := g.Model
			if key == "" {
				if e.MigEnabled {
					er.Checks = append(er.Checks, EntryCheck{Model: g.ID, GPUs: []int{g.Index},
						Problems: []string{fmt.Sprintf("GPU %d (%s) is not a MIG-capable GPU in the catalogue, but the entry enables MIG on it", g.Index, g.ID)}})
				}
				continue
			}
			if byModel[key] == nil {
				p, _ := c.Lookup(key)
				byModel[key] = &group{p: p}
				order = append(order, key)
			}
			byModel[key].gpus = append(byModel[key].gpus, g.Index)
		}
		for _, d := range e.Devices.Indices {
			if d < 0 || d >= len(gpus) {
				er.Warnings = append(er.Warnings, fmt.Sprintf("devices: GPU index %d does not exist on this node (%d GPUs)", d, len(gpus)))
			}
		}
		if matched == 0 {
			er.Warnings = append(er.Warnings, "entry selects no GPU of this node")
		}
		for _, k := range order {
			groups = append(groups, *byModel[k])
		}
	} else {
		for _, p := range c.products {
			sel := len(er.DeviceFilter) == 0
			for _, id := range filterIDs {
				for _, d := range p.DeviceIDs {
					if id.Device == d {
						sel = true
					}
				}
			}
			if sel {
				groups = append(groups, group{p: p})
			}
		}
		if len(er.DeviceFilter) > 0 && len(groups) == 0 {
			er.Warnings = append(er.Warnings, "device-filter selects no MIG-capable GPU in the catalogue")
		}
	}
	if !e.MigEnabled {
		if len(gpus) == 0 && len(er.DeviceFilter) == 0 {
			// MIG off on any GPU: nothing to check per model.
			er.Checks = append(er.Checks, EntryCheck{Model: "any", OK: true})
			return er
		}
		for _, g := range groups {
			er.Checks = append(er.Checks, EntryCheck{Model: g.p.Key, GPUs: g.gpus, OK: true})
		}
		return er
	}
	// Resolve the mig-devices per product; without a node, a filterless
	// entry is only checked on products that have all its profiles.
	anyProduct := false
	for _, g := range groups {
		ch := EntryCheck{Model: g.p.Key, GPUs: g.gpus}
		var wants []Want
		var problems []string
		for _, w := range er.MigDevices {
			mp, err := ParseMigProfile(w.Profile)
			if err != nil { // already rejected by parsing; kept for safety
				problems = append(problems, err.Error())
				continue
			}
			if _, _, err := c.resolveProfile(g.p, mp.String()); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			wants = append(wants, w)
		}
		if len(problems) > 0 {
			if len(gpus) == 0 && len(er.DeviceFilter) == 0 {
				continue // generic entry: not meant for this product
			}
			ch.Problems = problems
			er.Checks = append(er.Checks, ch)
			anyProduct = true
			continue
		}
		anyProduct = true
		pl, err := c.Plan(ctx, g.p, wants, PlanOptions{GPUs: 1})
		if err != nil {
			ch.Problems = []string{err.Error()}
			er.Checks = append(er.Checks, ch)
			continue
		}
		ch.OK = pl.Feasible
		if pl.Feasible {
			l := pl.Layouts[0]
			ch.Layout = &l
		} else {
			ch.Problems = pl.Reasons
			for _, a := range pl.Alternatives {
				if a.Kind != "more-gpus" {
					ch.Alternatives = append(ch.Alternatives, a)
				}
			}
		}
		er.Checks = append(er.Checks, ch)
	}
	if !anyProduct && len(er.MigDevices) > 0 && len(gpus) == 0 && len(er.DeviceFilter) == 0 {
		er.Checks = append(er.Checks, EntryCheck{Model: "-", Problems: []string{
			fmt.Sprintf("no catalogued GPU has all of %s", FormatWant(er.MigDevices))}})
	}
	return er
}
