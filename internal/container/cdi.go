package container

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
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

// ParseCDISpec decodes a spec (YAML or JSON) and validates it as the CDI
// library's cache does when it loads a spec file
// (tags.cncf.io/container-device-interface/pkg/cdi ReadSpec): the same
// decoder (yaml.v3 with known fields, so an unknown field is an error),
// then version, vendor and class, the spec's container edits, each
// device's name and edits (not empty), names unique, at least one device.
// The decoder, the version check and the name rules are CDI's own
// (specs-go, pkg/parser: leaf packages); the edit rules are written here,
// so that the node binary does not link pkg/cdi and what it brings
// (fsnotify, the OCI runtime spec, regexps compiled at every start).
// conformance/ctk checks agreement with pkg/cdi on a generated corpus.
func ParseCDISpec(file string, data []byte) (*CDISpec, error) {
	if len(data) > maxConfigBytes {
		return nil, &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	raw, err := decodeCDISpec(data)
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
	if err := cdiVersionValid(raw); err != nil {
		return nil, invalid(err)
	}
	vendor, class := parser.ParseQualifier(raw.Kind)
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, invalid(fmt.Errorf("kind %q: %w", raw.Kind, err))
	}
	if err := parser.ValidateClassName(class); err != nil {
		return nil, invalid(fmt.Errorf("kind %q: %w", raw.Kind, err))
	}
	// Annotations: CDI's validator takes them as 'any' and checks only a
	// map[string]any, which specs-go's map[string]string never is, so CDI
	// accepts any key; so does gpunode.
	if err := validateCDIEdits(&raw.ContainerEdits); err != nil {
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
		if cdiEditsEmpty(&d.ContainerEdits) {
			return nil, invalid(fmt.Errorf("device %q: invalid device, empty device edits", d.Name))
		}
		if err := validateCDIEdits(&d.ContainerEdits); err != nil {
			return nil, invalid(fmt.Errorf("device %q: %w", d.Name, err))
		}
		if seen[d.Name] {
			return nil, invalid(fmt.Errorf("invalid spec, multiple device %q", d.Name))
		}
		seen[d.Name] = true
		dev := CDIDevice{Name: d.Name, Nodes: append([]string(nil), common...)}
		for _, n := range d.ContainerEdits.DeviceNodes {
			dev.Nodes = append(dev.Nodes, nodeHostPath(n))
		}
		s.Devices = append(s.Devices, dev)
	}
	if len(s.Devices) == 0 {
		return nil, invalid(errors.New("invalid spec, no devices"))
	}
	return s, nil
}

// cdiVersionValid is specs-go's ValidateVersion (the version is known,
// and the spec uses no field newer than it), run on a copy in which a null
// device node or mount ("deviceNodes: [null]") is an empty one:
// ValidateVersion reads every node and mount and would panic on a null
// (pkg/cdi's ReadSpec, v1.1.2, does). An empty entry asks for no version,
// so the answer is CDI's wherever CDI gives one; the null entry itself is
// then rejected by the edit rules.
func cdiVersionValid(raw *cdispec.Spec) error {
	fill := func(e *cdispec.ContainerEdits) {
		if slices.Contains(e.DeviceNodes, nil) {
			nodes := slices.Clone(e.DeviceNodes)
			for i, n := range nodes {
				if n == nil {
					nodes[i] = &cdispec.DeviceNode{}
				}
			}
			e.DeviceNodes = nodes
		}
		if slices.Contains(e.Mounts, nil) {
			mounts := slices.Clone(e.Mounts)
			for i, m := range mounts {
				if m == nil {
					mounts[i] = &cdispec.Mount{}
				}
			}
			e.Mounts = mounts
		}
	}
	spec := *raw
	fill(&spec.ContainerEdits)
	spec.Devices = slices.Clone(raw.Devices)
	for i := range spec.Devices {
		fill(&spec.Devices[i].ContainerEdits)
	}
	return cdispec.ValidateVersion(&spec)
}

// decodeCDISpec decodes the first document of data as CDI does: yaml.v3
// (JSON is YAML), unknown fields rejected. A document that is empty or
// null gives a nil spec.
func decodeCDISpec(data []byte) (*cdispec.Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw *cdispec.Spec
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("failed to unmarshal CDI Spec: %w", err)
	}
	return raw, nil
}

// cdiEditsEmpty: edits that change nothing, which a device may not have
// (the spec's common edits may).
func cdiEditsEmpty(e *cdispec.ContainerEdits) bool {
	return len(e.Env) == 0 && len(e.DeviceNodes) == 0 && len(e.NetDevices) == 0 && len(e.Hooks) == 0 &&
		len(e.Mounts) == 0 && e.IntelRdt == nil && len(e.AdditionalGIDs) == 0
}

// validateCDIEdits applies CDI's rules for container edits, in CDI's order
// and with its messages: environment, device nodes, hooks, mounts, Intel
// RDT, network devices. Additional GIDs have no rule (0 is skipped when
// applied).
func validateCDIEdits(e *cdispec.ContainerEdits) error {
	if err := cdiEnvValid(e.Env); err != nil {
		return fmt.Errorf("invalid container edits: %w", err)
	}
	for _, n := range e.DeviceNodes {
		if err := cdiDeviceNodeValid(n); err != nil {
			return err
		}
	}
	for _, h := range e.Hooks {
		if err := cdiHookValid(h); err != nil {
			return err
		}
	}
	for _, m := range e.Mounts {
		switch {
		case m == nil:
			return errors.New("invalid (nil) mount")
		case m.HostPath == "":
			return errors.New("invalid mount, empty host path")
		case m.ContainerPath == "":
			return errors.New("invalid mount, empty container path")
		}
	}
	if r := e.IntelRdt; r != nil && !cdiClosIDValid(r.ClosID) {
		return errors.New("invalid ClosID")
	}
	return cdiNetDevicesValid(e.NetDevices)
}

// cdiEnvValid: every entry is NAME=value with a non-empty NAME.
func cdiEnvValid(env []string) error {
	for _, v := range env {
		if i := strings.IndexByte(v, '='); i < 1 {
			return fmt.Errorf("invalid environment variable %q", v)
		}
	}
	return nil
}

// cdiDeviceNodeValid: a path; a type of b, c, u, p or none; device numbers
// not negative (-1 would be a wildcard in the cgroup rule); permissions
// "none" or letters of "rwm".
func cdiDeviceNodeValid(n *cdispec.DeviceNode) error {
	if n == nil {
		return errors.New("invalid (nil) device node")
	}
	if n.Path == "" {
		return errors.New("invalid (empty) device path")
	}
	switch n.Type {
	case "", "b", "c", "u", "p":
	default:
		return fmt.Errorf("device %q: invalid type %q", n.Path, n.Type)
	}
	if n.Major < 0 || n.Minor < 0 {
		return fmt.Errorf("device %q: invalid (negative) device number %d:%d", n.Path, n.Major, n.Minor)
	}
	if p := n.Permissions; p != "none" && strings.Trim(p, "rwm") != "" {
		return fmt.Errorf("device %q: invalid permissions %q", n.Path, p)
	}
	return nil
}

// cdiHookValid: one of the OCI hook points, a path, a valid environment.
func cdiHookValid(h *cdispec.Hook) error {
	if h == nil {
		return errors.New("invalid (nil) hook")
	}
	switch h.HookName {
	case "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop":
	default:
		return fmt.Errorf("invalid hook name %q", h.HookName)
	}
	if h.Path == "" {
		return fmt.Errorf("invalid hook %q with empty path", h.HookName)
	}
	if err := cdiEnvValid(h.Env); err != nil {
		return fmt.Errorf("invalid hook %q: %w", h.HookName, err)
	}
	return nil
}

// cdiClosIDValid: "/" (the root class of service), empty, or a file name
// (shorter than 4096 bytes, not . or .., no slash or newline).
func cdiClosIDValid(c string) bool {
	if c == "/" {
		return true
	}
	return len(c) < 4096 && c != "." && c != ".." && !strings.ContainsAny(c, "/\n")
}

// cdiNetDevicesValid: both names set, each host interface and each
// container interface named once.
func cdiNetDevicesValid(devs []*cdispec.LinuxNetDevice) error {
	host := make(map[string]string, len(devs))
	name := make(map[string]string, len(devs))
	for _, d := range devs {
		switch {
		case d == nil:
			return errors.New("invalid (nil) linux net device")
		case d.HostInterfaceName == "":
			return errors.New("invalid linux net device, empty HostInterfaceName")
		case d.Name == "":
			return errors.New("invalid linux net device, empty Name")
		}
		if other, ok := host[d.HostInterfaceName]; ok {
			return fmt.Errorf("invalid linux net device, duplicate HostInterfaceName %q with names %q and %q", d.HostInterfaceName, d.Name, other)
		}
		host[d.HostInterfaceName] = d.Name
		if other, ok := name[d.Name]; ok {
			return fmt.Errorf("invalid linux net device, duplicate Name %q with HostInterfaceName %q and %q", d.Name, d.HostInterfaceName, other)
		}
		name[d.Name] = d.HostInterfaceName
	}
	return nil
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
