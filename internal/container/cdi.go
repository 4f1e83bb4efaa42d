package container

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/check"
)

// CDIDirs are where CDI specs live (static, then generated at runtime).
var cdiDirs = [...]string{"/etc/cdi", "/var/run/cdi"}

// maxCDISpecs bounds the spec files read.
const maxCDISpecs = 256

// CDISpec is one parsed and validated spec file.
type CDISpec struct {
	File    string
	Kind    string
	Version string
	Devices []CDIDevice
}

// CDIDevice is one device of a spec: its name and the device nodes its
// edits (and the spec's common edits) add.
type CDIDevice struct {
	Name  string
	Nodes []string
}

// Compiled on first use: package initialisers run at every start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// ParseCDISpec parses a spec with the CDI library's decoder and checks it
// with its validators (version, vendor/class, device names, edits).
func ParseCDISpec(file string, data []byte) (*CDISpec, error) {
	if len(data) > maxConfigBytes {
		return nil, &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	raw, err := cdiapi.ParseSpec(data)
	if err != nil {
		pe := &ParseError{File: file, Reason: err.Error()}
		if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
			pe.Line, _ = strconv.Atoi(m[1])
		}
		return nil, pe
	}
	if raw == nil {
		return nil, &ParseError{File: file, Reason: "empty spec"}
	}
	invalid := func(err error) error { return &ParseError{File: file, Reason: err.Error()} }
	if err := cdispec.ValidateVersion(raw); err != nil {
		return nil, invalid(err)
	}
	vendor, class := parser.ParseQualifier(raw.Kind)
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, invalid(fmt.Errorf("kind %q: %w", raw.Kind, err))
	}
	if err := parser.ValidateClassName(class); err != nil {
		return nil, invalid(fmt.Errorf("kind %q: %w", raw.Kind, err))
	}
	if err := (&cdiapi.ContainerEdits{ContainerEdits: &raw.ContainerEdits}).Validate(); err != nil {
		return nil, invalid(fmt.Errorf("containerEdits: %w", err))
	}
	s := &CDISpec{File: file, Kind: raw.Kind, Version: raw.Version}
	var common []string
	for _, n := range raw.ContainerEdits.DeviceNodes {
		common = append(common, nodeHostPath(n))
	}
	seen := map[string]bool{}
	for i := range raw.Devices {
		d := &raw.Devices[i]
		if err := parser.ValidateDeviceName(d.Name); err != nil {
			return nil, invalid(fmt.Errorf("device %q: %w", d.Name, err))
		}
		if err := (&cdiapi.ContainerEdits{ContainerEdits: &d.ContainerEdits}).Validate(); err != nil {
			return nil, invalid(fmt.Errorf("device %q: %w", d.Name, err))
		}
		if seen[d.Name] {
			return nil, invalid(fmt.Errorf("device %q named twice", d.Name))
		}
		seen[d.Name] = true
		dev := CDIDevice{Name: d.Name, Nodes: append([]string(nil), common...)}
		for _, n := range d.ContainerEdits.DeviceNodes {
			dev.Nodes = append(dev.Nodes, nodeHostPath(n))
		}
		s.Devices = append(s.Devices, dev)
	}
	if len(s.Devices) == 0 {
		return nil, invalid(fmt.Errorf("no devices"))
	}
	return s, nil
}

func nodeHostPath(n *cdispec.DeviceNode) string {
	if n == nil {
		return ""
	}
	if n.HostPath != "" {
		return n.HostPath
	}
	return n.Path
}

const fixCDIGenerate = "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml   # or let nvidia-cdi-refresh / the GPU operator regenerate it"

func cdiCheck(h *host) check.Check {
	f := newFinding(CheckCDI, "4.1")
	var files []string
	for _, d := range cdiDirs {
		for _, pat := range [...]string{"/*.yaml", "/*.json"} {
			fs, err := globFiles(h.fs, d+pat)
			if err == nil {
				files = append(files, fs...)
			}
		}
	}
	if len(files) > maxCDISpecs {
		files = files[:maxCDISpecs]
	}
	if len(files) == 0 {
		f.c.Current = "no CDI specs in /etc/cdi or /var/run/cdi"
		if len(h.gpus) == 0 {
			f.c.Status = check.Absent
			return f.c
		}
		f.c.Expected = "a spec naming every GPU (nvidia.com/gpu=all, =<index>, =<uuid>)"
		f.drift(fmt.Sprintf("%d GPUs but no CDI spec: --device nvidia.com/gpu=... and CDI-mode runtimes cannot resolve them", len(h.gpus)), fixCDIGenerate)
		return f.done()
	}
	names := map[string]string{} // qualified name -> file
	var specs []*CDISpec
	var broken []string
	for _, file := range files {
		data, err := h.fs.ReadFile(file)
		if err != nil {
			broken = append(broken, err.Error())
			continue
		}
		s, err := ParseCDISpec(file, data)
		if err != nil {
			broken = append(broken, err.Error())
			continue
		}
		specs = append(specs, s)
	}
	var dups, stale []string
	nvidia := map[string]bool{}
	for _, s := range specs {
		for _, d := range s.Devices {
			q := s.Kind + "=" + d.Name
			if prev, ok := names[q]; ok {
				dups = append(dups, fmt.Sprintf("%s in %s and %s", q, prev, s.File))
			} else {
				names[q] = s.File
			}
			if s.Kind == "nvidia.com/gpu" {
				nvidia[d.Name] = true
			}
			for _, n := range d.Nodes {
				if n != "" && !h.fs.Exists(n) {
					stale = append(stale, fmt.Sprintf("%s=%s needs %s (%s)", s.Kind, d.Name, n, s.File))
					break
				}
			}
		}
	}
	f.c.Expected = "valid specs; every GPU and MIG device named; device nodes present; names unique"
	f.c.Current = fmt.Sprintf("%d spec(s), %d nvidia.com/gpu device(s)", len(specs), len(nvidia))
	if len(broken) > 0 {
		f.c.Status = check.Error
		f.problems = append(f.problems, "invalid spec: "+strings.Join(broken, "; "))
		f.c.Fix = append(f.c.Fix, fixCDIGenerate)
	}
	var missing []string
	for _, g := range h.gpus {
		if len(g.MIG) == 0 && !(nvidia[strconv.Itoa(g.Index)] || nvidia["gpu"+strconv.Itoa(g.Index)] || g.UUID != "" && nvidia[g.UUID]) {
			missing = append(missing, "GPU "+strconv.Itoa(g.Index))
		}
		for _, m := range g.MIG {
			a, b := fmt.Sprintf("%d:%d", m.GPU, m.Index), fmt.Sprintf("mig%d:%d", m.GPU, m.Index)
			if !(nvidia[a] || nvidia[b] || m.UUID != "" && nvidia[m.UUID]) {
				missing = append(missing, "MIG "+a)
			}
		}
	}
	if len(h.gpus) > 0 && !nvidia["all"] {
		missing = append(missing, "nvidia.com/gpu=all")
	}
	if len(missing) > 0 {
		f.drift("not named by any spec: "+shortList(missing, 8), fixCDIGenerate)
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		f.drift("stale (device node gone, e.g. after a driver change or MIG reconfiguration): "+shortList(stale, 4), fixCDIGenerate)
	}
	if len(dups) > 0 {
		f.drift("duplicate device names: "+shortList(dups, 4), "# remove all but one spec for each kind (ls /etc/cdi /var/run/cdi)")
	}
	return f.done()
}

func shortList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", ... %d more", len(xs)-n)
}
