package mig

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// Profiles is the model of `gpunode mig profiles`.
type Profiles struct {
	SchemaVersion string     `json:"schemaVersion"`
	Kind          string     `json:"kind"`
	Products      []*Product `json:"products"`
}

// ProfilesOf builds the profiles model for some products.
func ProfilesOf(ps ...*Product) *Profiles {
	return &Profiles{SchemaVersion: SchemaVersion, Kind: "profiles", Products: ps}
}

func orDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// WriteTable implements output.Tabler.
func (m *Profiles) WriteTable(w io.Writer, o output.Options) error {
	for i, p := range m.Products {
		if i > 0 && !o.NoHeaders {
			fmt.Fprintln(w)
		}
		if !o.NoHeaders {
			fmt.Fprintf(w, "%s  %s\n", o.Paint("bold", p.Key), strings.Join(p.Names, ", "))
			fmt.Fprintf(w, "device ids %s; %d compute / %d memory slices; source %s\n",
				strings.Join(p.DeviceIDStrings(), " "), p.ComputeSlices, p.MemorySlices, p.Source)
			if p.Note != "" {
				fmt.Fprintf(w, "note: %s\n", p.Note)
			}
		}
		g := output.NewGrid("ID", "NVML", "PROFILE", "COMPUTE", "MEMORY", "MAX", "PLACEMENTS", "SMS", "COMPUTE INSTANCES")
		g.Columns[8].Wrap = true
		for _, j := range displayOrder(p) {
			pr := p.Profiles[j]
			var cis []string
			for _, ci := range pr.ComputeInstances {
				s := ci.Name
				if ci.MaxCount > 1 {
					s += fmt.Sprintf(" (x%d)", ci.MaxCount)
				}
				cis = append(cis, s)
			}
			name := pr.Name
			if pr.Note != "" {
				name += " *"
			}
			g.AddRow(strconv.Itoa(pr.ID), strconv.Itoa(pr.NVMLProfile), name, strconv.Itoa(pr.ComputeSlices),
				strconv.Itoa(pr.MemorySlices), strconv.Itoa(pr.MaxCount), pr.PlacementString(), orDash(pr.SMs), strings.Join(cis, ", "))
		}
		if err := output.Print(w, g, o); err != nil {
			return err
		}
		if o.NoHeaders {
			continue
		}
		for _, j := range displayOrder(p) {
			if pr := p.Profiles[j]; pr.Note != "" {
				fmt.Fprintf(w, "* %s: %s\n", pr.Name, pr.Note)
			}
		}
	}
	return nil
}

// memoryMap renders a GPU's memory slices: "0-3 3g.40gb | 4-5 2g.20gb | 6 free | 7 free".
func memoryMap(gl GPULayout) string {
	type seg struct {
		start, end int
		name       string
	}
	var segs []seg
	covered := make([]bool, gl.MemoryTotal)
	for _, in := range gl.Instances {
		segs = append(segs, seg{in.Placement.Start, in.Placement.Start + in.Placement.Size - 1, in.Profile})
		for k := in.Placement.Start; k < in.Placement.Start+in.Placement.Size && k < len(covered); k++ {
			covered[k] = true
		}
	}
	for k := 0; k < len(covered); k++ {
		if covered[k] {
			continue
		}
		e := k
		for e+1 < len(covered) && !covered[e+1] {
			e++
		}
		segs = append(segs, seg{k, e, "free"})
		k = e
	}
	sort.Slice(segs, func(a, b int) bool { return segs[a].start < segs[b].start })
	parts := make([]string, len(segs))
	for i, sg := range segs {
		if sg.start == sg.end {
			parts[i] = fmt.Sprintf("%d %s", sg.start, sg.name)
		} else {
			parts[i] = fmt.Sprintf("%d-%d %s", sg.start, sg.end, sg.name)
		}
	}
	return strings.Join(parts, " | ")
}

// WriteTable implements output.Tabler.
func (m *Plan) WriteTable(w io.Writer, o output.Options) error {
	if o.NoHeaders {
		// the layout rows only, for scripts
		if !m.Feasible {
			return nil
		}
		return output.Print(w, m.layoutGrid(), o)
	}
	fmt.Fprintf(w, "model    %s (%s catalogue)\n", m.Model, m.Source)
	fmt.Fprintf(w, "gpus     %d\n", m.GPUs)
	if len(m.Requested) > 0 {
		fmt.Fprintf(w, "want     %s, packed into GIs %s (%d compute, %d memory slices)\n", FormatWant(m.Requested), FormatWant(m.Want), m.ComputeNeeded, m.MemoryNeeded)
	} else {
		fmt.Fprintf(w, "want     %s (%d compute, %d memory slices)\n", FormatWant(m.Want), m.ComputeNeeded, m.MemoryNeeded)
	}
	if m.Feasible {
		fmt.Fprintf(w, "result   %s\n", o.Paint("green", "feasible"))
	} else {
		fmt.Fprintf(w, "result   %s\n", o.Paint("red", "infeasible"))
	}
	for _, r := range m.Reasons {
		fmt.Fprintf(w, "why      %s\n", r)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "note     %s\n", n)
	}
	if m.Feasible {
		fmt.Fprintln(w)
		if err := output.Print(w, m.layoutGrid(), o); err != nil {
			return err
		}
		fmt.Fprintln(w)
		for _, gl := range m.Layouts {
			fmt.Fprintf(w, "GPU %d  compute %d/%d  memory %s\n", gl.GPU, gl.ComputeUsed, gl.ComputeTotal, memoryMap(gl))
			if gl.CreateCommand != "" {
				fmt.Fprintf(w, "       %s\n", gl.CreateCommand)
			}
			for _, c := range gl.CICommands {
				fmt.Fprintf(w, "       %s\n", c)
			}
		}
	}
	if len(m.Alternatives) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "closest feasible alternatives:")
		g := output.NewGrid("KIND", "CHANGE", "WANT", "GPUS")
		g.Columns[1].Wrap = true
		for _, a := range m.Alternatives {
			g.AddRow(a.Kind, a.Change, a.Want, strconv.Itoa(a.GPUs))
		}
		return output.Print(w, g, o)
	}
	return nil
}

// layoutGrid is the plan's table of GPU instances, one row per instance
// (a GPU left unused is one "(unused)" row).
func (m *Plan) layoutGrid() output.Grid {
	g := output.NewGrid("GPU", "ORDER", "PROFILE", "ID", "PLACEMENT", "COMPUTE", "SMS")
	withCI := false
	for _, gl := range m.Layouts {
		for _, in := range gl.Instances {
			if len(in.ComputeInstanceOptions) > 0 {
				withCI = true
			}
		}
	}
	customCI := false
	for _, gl := range m.Layouts {
		for _, in := range gl.Instances {
			if len(in.ComputeInstances) != 1 || in.ComputeInstances[0] != in.Profile {
				customCI = true
			}
		}
	}
	if customCI {
		g.Columns = append(g.Columns, output.Column{Name: "COMPUTE INSTANCES", Wrap: true})
	}
	if withCI {
		g.Columns = append(g.Columns, output.Column{Name: "COMPUTE INSTANCE OPTIONS", Wrap: true})
	}
	for _, gl := range m.Layouts {
		for _, in := range gl.Instances {
			row := []string{strconv.Itoa(gl.GPU), strconv.Itoa(in.Order), in.Profile, strconv.Itoa(in.ProfileID),
				in.Placement.String(), strconv.Itoa(in.ComputeSlices), orDash(in.SMs)}
			if customCI {
				row = append(row, groupNames(in.ComputeInstances))
			}
			if withCI {
				row = append(row, strings.Join(in.ComputeInstanceOptions, "; "))
			}
			g.AddRow(row...)
		}
		if len(gl.Instances) == 0 {
			g.AddRow(strconv.Itoa(gl.GPU), "-", "(unused)")
		}
	}
	return g
}

// groupNames renders ["1c.3g.40gb", "1c.3g.40gb", "2c.3g.40gb"] as
// "2 x 1c.3g.40gb + 2c.3g.40gb" (first-seen order).
func groupNames(names []string) string {
	var order []string
	count := map[string]int{}
	for _, n := range names {
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	parts := make([]string, len(order))
	for i, n := range order {
		parts[i] = n
		if count[n] > 1 {
			parts[i] = fmt.Sprintf("%d x %s", count[n], n)
		}
	}
	return strings.Join(parts, " + ")
}

func gpuList(g []int) string {
	if len(g) == 0 {
		return "-"
	}
	s := make([]string, len(g))
	for i, x := range g {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// WriteTable implements output.Tabler.
func (m *Validation) WriteTable(w io.Writer, o output.Options) error {
	g, notes := m.grid()
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	fmt.Fprintf(w, "file  %s\n", m.File)
	if len(m.Node) > 0 {
		var parts []string
		for _, g := range m.Node {
			model := g.Model
			if model == "" {
				model = "not MIG-capable"
			}
			parts = append(parts, fmt.Sprintf("%d=%s (%s)", g.Index, g.ID, model))
		}
		for i, l := range output.Wrap(strings.Join(parts, ", "), o.TableWidth()-6) {
			head := "node  "
			if i > 0 {
				head = "      "
			}
			fmt.Fprintf(w, "%s%s\n", head, l)
		}
	} else {
		fmt.Fprintln(w, "node  (none given: each entry is checked on every catalogued GPU its device-filter selects)")
	}
	fmt.Fprintln(w)
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			for i, l := range output.Wrap(n, o.TableWidth()-2) {
				if i > 0 {
					l = "  " + l
				}
				fmt.Fprintln(w, l)
			}
		}
	}
	return nil
}

// grid is the validation's table, one row per entry and model checked,
// and the notes under it.
func (m *Validation) grid() (output.Grid, []string) {
	g := output.NewGrid("CONFIG", "ENTRY", "DEVICE-FILTER", "DEVICES", "MIG", "MIG-DEVICES", "MODEL", "GPUS", "RESULT")
	g.Columns[5].Wrap, g.Columns[8].Wrap = true, true
	g.Columns[8].Color = func(s string) string {
		switch {
		case s == "FAIL":
			return "red"
		case strings.HasPrefix(s, "ok"):
			return "green"
		}
		return ""
	}
	var notes []string
	for _, cr := range m.Configs {
		for _, e := range cr.Entries {
			mig := "off"
			if e.MigEnabled {
				mig = "on"
			}
			filter := strings.Join(e.DeviceFilter, ",")
			if filter == "" {
				filter = "-"
			}
			devs := FormatWant(e.MigDevices)
			if devs == "" {
				devs = "-"
			}
			where := fmt.Sprintf("%s[%d]", cr.Label, e.Index)
			for _, wn := range e.Warnings {
				notes = append(notes, fmt.Sprintf("%s: warning: %s", where, wn))
			}
			if len(e.Checks) == 0 {
				g.AddRow(cr.Label, strconv.Itoa(e.Index), filter, e.Devices, mig, devs, "-", "-", "no GPU selected")
			}
			for _, ch := range e.Checks {
				res := "ok"
				if !ch.OK {
					res = "FAIL"
				} else if ch.Layout != nil && ch.Layout.CreateCommand != "" {
					res += " " + strings.TrimPrefix(ch.Layout.CreateCommand, "nvidia-smi mig -i 0 ")
				}
				g.AddRow(cr.Label, strconv.Itoa(e.Index), filter, e.Devices, mig, devs, ch.Model, gpuList(ch.GPUs), res)
				for _, p := range ch.Problems {
					notes = append(notes, fmt.Sprintf("%s %s: %s", where, ch.Model, p))
				}
				for _, a := range ch.Alternatives {
					notes = append(notes, fmt.Sprintf("%s %s: would fit: %s (%s)", where, ch.Model, a.Want, a.Change))
				}
			}
		}
	}
	return g, notes
}
