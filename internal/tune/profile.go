package tune

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/userfile"
)

// ErrProfile marks a profile that cannot be loaded (bad YAML, unknown
// setting, bad value, include cycle). The message names file, line and key.
var ErrProfile = errors.New("bad profile")

// ProfileDir is where 'gpunode tune profiles' finds user profiles (a host
// path under --root).
const ProfileDir = "/etc/gpunode/profiles"

// ProfileAPIVersion is the apiVersion a profile file declares.
const ProfileAPIVersion = "gpunode.tune/v1"

// Profile is a resolved profile: every setting it manages, includes and
// overrides applied.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is "built-in" or the profile file.
	Source  string   `json:"source"`
	Include []string `json:"include,omitempty"`
	// Settings maps setting id to desired value.
	Settings map[string]string `json:"settings"`
	// Origin maps setting id to the profile that set its value.
	Origin map[string]string `json:"origin"`
	// Rules are the profile's entries about checks that are not
	// catalogue settings (GPU, IRQ, process checks, or a subject of any
	// check): disable (null) or report, in file order after the includes'.
	Rules check.Policy `json:"rules,omitempty"`
	// Optional are the settings (catalogue ids, sorted) that plan and
	// apply may skip when they cannot be read or changed on this host:
	// each skip is a finding (exit 1), never a silent note. Every other
	// setting that cannot be read or changed fails the plan.
	Optional []string `json:"optional,omitempty"`
}

// IsOptional reports whether the profile marks setting id optional.
func (p *Profile) IsOptional(id string) bool {
	for _, o := range p.Optional {
		if o == id {
			return true
		}
	}
	return false
}

// IDs returns the managed setting ids in catalogue order.
func (p *Profile) IDs(c *Catalogue) []string {
	var out []string
	for _, s := range c.Settings() {
		if _, ok := p.Settings[s.ID]; ok {
			out = append(out, s.ID)
		}
	}
	return out
}

// Loader resolves profile names and files.
type Loader struct {
	Cat *Catalogue
	// Host reads user profiles from ProfileDir (may be nil).
	Host *hostfs.FS
	// ReadFile reads profile files named on the command line (when nil:
	// userfile.Read under MaxInputBytes).
	ReadFile func(string) ([]byte, error)
	// MaxInputBytes bounds a profile file named on the command line
	// (--max-input-bytes; <= 0: userfile.DefaultMaxBytes).
	MaxInputBytes int64
	// Checks describe the checks of the audit's sources (gpu.Describe,
	// irq.Source.Describe): profiles may disable or report them by id,
	// id/subject or pattern. Catalogue settings and process checks are
	// always known.
	Checks []check.Description
}

// aliasIDs maps retired check ids that profiles may still name to the id
// that replaced them.
var aliasIDs = map[string]string{"irq.numa-local": "irq.off-node"}

// rawProfile is a parsed (not yet resolved) profile file.
type rawProfile struct {
	file        string
	name        string
	description string
	include     []string
	set         []rawEntry
	disable     []rawEntry
	optional    []string
	rules       check.Policy
}

type rawEntry struct{ id, value string }

// looksLikeFile reports whether a profile argument names a file.
func looksLikeFile(s string) bool {
	return strings.ContainsRune(s, '/') || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// Load resolves a built-in name, a user profile name (ProfileDir/NAME.yaml
// under the host root) or a profile file path.
func (l *Loader) Load(nameOrFile string) (*Profile, error) {
	return l.load(nameOrFile, "", nil)
}

func (l *Loader) load(ref, fromDir string, stack []string) (*Profile, error) {
	if len(stack) > 16 {
		return nil, fmt.Errorf("%w: includes nest deeper than 16: %s", ErrProfile, strings.Join(stack, " -> "))
	}
	for _, s := range stack {
		if s == ref {
			return nil, fmt.Errorf("%w: include cycle: %s -> %s", ErrProfile, strings.Join(stack, " -> "), ref)
		}
	}
	stack = append(stack, ref)
	if !looksLikeFile(ref) && isBuiltin(ref) {
		return l.builtin(ref, stack)
	}
	var raw *rawProfile
	var err error
	switch {
	case looksLikeFile(ref):
		file := ref
		if fromDir != "" && !filepath.IsAbs(file) {
			file = filepath.Join(fromDir, file)
		}
		raw, err = l.readLocal(file)
	default:
		raw, err = l.readHost(path.Join(ProfileDir, ref+".yaml"))
	}
	if err != nil {
		return nil, err
	}
	return l.resolve(raw, stack)
}

func (l *Loader) readLocal(file string) (*rawProfile, error) {
	read := l.ReadFile
	if read == nil {
		read = func(p string) ([]byte, error) { return userfile.Read(p, l.MaxInputBytes) }
	}
	b, err := read(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	return parseProfile(file, b, l.Cat, l.known())
}

// known returns every check id a profile may name.
func (l *Loader) known() []check.Description {
	out := append(l.Cat.Describe(), ProcessChecks()...)
	return append(out, l.Checks...)
}

func (l *Loader) readHost(p string) (*rawProfile, error) {
	if l.Host == nil {
		return nil, fmt.Errorf("%w: unknown profile %q (built-ins: %s)", ErrProfile, path.Base(strings.TrimSuffix(p, ".yaml")), strings.Join(builtinNames(), ", "))
	}
	b, err := l.Host.ReadFile(p)
	if err != nil {
		if isNotExist(err) {
			return nil, fmt.Errorf("%w: unknown profile %q (built-ins: %s; user profiles live in %s)", ErrProfile, path.Base(strings.TrimSuffix(p, ".yaml")), strings.Join(builtinNames(), ", "), ProfileDir)
		}
		return nil, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	raw, err := parseProfile(p, b, l.Cat, l.known())
	if err != nil {
		return nil, err
	}
	raw.file = "host:" + p
	return raw, nil
}

func (l *Loader) builtin(name string, stack []string) (*Profile, error) {
	var inc, desc string
	for _, b := range builtinProfiles {
		if b.name == name {
			inc, desc = b.include, b.description
		}
	}
	p := &Profile{Name: name, Description: desc, Source: "built-in", Settings: map[string]string{}, Origin: map[string]string{}}
	if inc != "" {
		parent, err := l.load(inc, "", stack)
		if err != nil {
			return nil, err
		}
		p.Include = []string{inc}
		for k, v := range parent.Settings {
			p.Settings[k], p.Origin[k] = v, parent.Origin[k]
		}
	}
	for _, s := range l.Cat.Settings() {
		v, ok := s.Desired[name]
		switch {
		case !ok:
		case v == valueOff:
			delete(p.Settings, s.ID)
			delete(p.Origin, s.ID)
		default:
			p.Settings[s.ID], p.Origin[s.ID] = v, name
		}
	}
	return p, nil
}

func (l *Loader) resolve(raw *rawProfile, stack []string) (*Profile, error) {
	p := &Profile{Name: raw.name, Description: raw.description, Source: raw.file, Include: raw.include,
		Settings: map[string]string{}, Origin: map[string]string{}}
	dir := ""
	if !strings.HasPrefix(raw.file, "host:") {
		dir = filepath.Dir(raw.file)
	}
	for _, inc := range raw.include {
		parent, err := l.load(inc, dir, stack)
		if err != nil {
			return nil, fmt.Errorf("%s: include %q: %w", raw.file, inc, err)
		}
		for k, v := range parent.Settings {
			p.Settings[k], p.Origin[k] = v, parent.Origin[k]
		}
		p.Rules = append(p.Rules, parent.Rules...)
		p.Optional = append(p.Optional, parent.Optional...)
	}
	p.Rules = append(p.Rules, raw.rules...)
	p.Optional = append(p.Optional, raw.optional...)
	for _, e := range raw.set {
		p.Settings[e.id], p.Origin[e.id] = e.value, p.Name
	}
	for _, e := range raw.disable {
		delete(p.Settings, e.id)
		delete(p.Origin, e.id)
	}
	slices.Sort(p.Optional)
	p.Optional = slices.Compact(p.Optional)
	return p, nil
}

// parseProfile parses a profile file:
//
//	name: my-training            # required
//	description: ...
//	include: training            # or a list; built-in names, user profile names or files
//	settings:
//	  vm.swappiness: 1           # override
//	  mm.hugepages.per-node: 1024
//	  cpu.epp: null              # null disables an inherited setting
//	disable: [net.core.rmem_max] # also disables
//	optional: [cpu.epp]          # may be skipped (a finding) where it cannot be read or set
//
// Keys of settings and entries of disable that are not catalogue settings
// are check selectors (package check): an id of a source check
// ("gpu.persistence"), an id and a subject ("gpu.persistence/gpu7",
// "irq.off-node/0000:1b:00.0"), or patterns ("gpu.ecc.*"); their values are
// check, report or null. A subject-less selector in disable also removes
// the catalogue settings it matches. Every error names the file, the line
// and the key.
func parseProfile(file string, b []byte, cat *Catalogue, known []check.Description) (*rawProfile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrProfile, file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s:%d: want a mapping with name, include, settings, disable", ErrProfile, file, max(doc.Line, 1))
	}
	m := doc.Content[0]
	raw := &rawProfile{file: file}
	errAt := func(n *yaml.Node, key, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s: %s", ErrProfile, file, n.Line, key, fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if seen[k.Value] {
			return nil, errAt(k, k.Value, "duplicate key")
		}
		seen[k.Value] = true
		switch k.Value {
		case "apiVersion":
			if v.Value != ProfileAPIVersion {
				return nil, errAt(v, k.Value, "%q is not %s", v.Value, ProfileAPIVersion)
			}
		case "name":
			if v.Kind != yaml.ScalarNode || !profileNameRE(v.Value) {
				return nil, errAt(v, k.Value, "want a name of letters, digits, '-', '_' or '.'")
			}
			raw.name = v.Value
		case "description":
			if v.Kind != yaml.ScalarNode {
				return nil, errAt(v, k.Value, "want a string")
			}
			raw.description = v.Value
		case "include":
			switch v.Kind {
			case yaml.ScalarNode:
				if v.Value == "" {
					return nil, errAt(v, k.Value, "empty include")
				}
				raw.include = []string{v.Value}
			case yaml.SequenceNode:
				for _, it := range v.Content {
					if it.Kind != yaml.ScalarNode || it.Value == "" {
						return nil, errAt(it, k.Value, "want profile names or files")
					}
					raw.include = append(raw.include, it.Value)
				}
			default:
				return nil, errAt(v, k.Value, "want a profile name or a list of them")
			}
		case "settings":
			if v.Kind != yaml.MappingNode {
				return nil, errAt(v, k.Value, "want a mapping of setting id to value")
			}
			ids := map[string]bool{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				sk, sv := v.Content[j], v.Content[j+1]
				key := "settings." + sk.Value
				if ids[sk.Value] {
					return nil, errAt(sk, key, "duplicate setting")
				}
				ids[sk.Value] = true
				if cat.Get(sk.Value) == nil {
					sel, err := checkSelector(sk.Value, known)
					if err != nil {
						return nil, errAt(sk, key, "%v", err)
					}
					if sv.Kind != yaml.ScalarNode {
						return nil, errAt(sv, key, "want check, report, or null to disable")
					}
					switch {
					case sv.Tag == "!!null":
						raw.rules = append(raw.rules, check.Rule{Selector: sel})
					case sv.Value == check.ValueCheck || sv.Value == check.ValueReport:
						raw.rules = append(raw.rules, check.Rule{Selector: sel, Value: sv.Value})
					default:
						return nil, errAt(sv, key, "%q: want check, report, or null to disable", sv.Value)
					}
					continue
				}
				if sv.Kind != yaml.ScalarNode {
					return nil, errAt(sv, key, "want a scalar value, or null to disable")
				}
				if sv.Tag == "!!null" {
					raw.disable = append(raw.disable, rawEntry{id: sk.Value})
					continue
				}
				if err := cat.validate(sk.Value, sv.Value); err != nil {
					return nil, errAt(sv, key, "%v", err)
				}
				raw.set = append(raw.set, rawEntry{id: sk.Value, value: sv.Value})
			}
		case "disable":
			if v.Kind != yaml.SequenceNode {
				return nil, errAt(v, k.Value, "want a list of setting ids")
			}
			for _, it := range v.Content {
				if it.Kind != yaml.ScalarNode {
					return nil, errAt(it, k.Value, "want setting ids or check selectors")
				}
				if cat.Get(it.Value) != nil {
					raw.disable = append(raw.disable, rawEntry{id: it.Value})
					continue
				}
				sel, err := checkSelector(it.Value, known)
				if err != nil {
					return nil, errAt(it, k.Value, "%v", err)
				}
				if sel.Subject == "" {
					for _, id := range cat.IDs() {
						if sel.MatchID(id) {
							raw.disable = append(raw.disable, rawEntry{id: id})
						}
					}
				}
				raw.rules = append(raw.rules, check.Rule{Selector: sel})
			}
		case "optional":
			if v.Kind != yaml.SequenceNode {
				return nil, errAt(v, k.Value, "want a list of setting ids")
			}
			for _, it := range v.Content {
				if it.Kind != yaml.ScalarNode || cat.Get(it.Value) == nil {
					return nil, errAt(it, k.Value, "%q: want a setting id ('gpunode tune show base')", it.Value)
				}
				raw.optional = append(raw.optional, it.Value)
			}
		default:
			return nil, errAt(k, k.Value, "unknown key (want apiVersion, name, description, include, settings, disable, optional)")
		}
	}
	if raw.name == "" {
		return nil, fmt.Errorf("%w: %s:%d: name: missing", ErrProfile, file, m.Line)
	}
	if isBuiltin(raw.name) {
		return nil, fmt.Errorf("%w: %s:%d: name: %q is a built-in profile; choose another name and include it", ErrProfile, file, m.Line, raw.name)
	}
	return raw, nil
}

// checkSelector parses a profile key that is not a catalogue setting: a
// check selector whose id part names at least one known check. Retired ids
// (aliasIDs) select their replacement.
func checkSelector(s string, known []check.Description) (check.Selector, error) {
	sel, err := check.ParseSelector(s)
	if err != nil {
		return sel, err
	}
	if to, ok := aliasIDs[sel.ID]; ok {
		sel.ID = to
	}
	if !sel.Known(known) {
		return sel, fmt.Errorf("unknown setting or check id %q (settings: 'gpunode tune show base'; every check: 'gpunode audit --list-checks')", sel.ID)
	}
	return sel, nil
}

func profileNameRE(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// ProfileInfo is one line of 'gpunode tune profiles'.
type ProfileInfo struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Include     string `json:"include,omitempty"`
	Settings    int    `json:"settings"`
	Description string `json:"description,omitempty"`
	Error       string `json:"error,omitempty"`
}

// List returns the built-in profiles and the user profiles of ProfileDir.
func (l *Loader) List() []ProfileInfo {
	var out []ProfileInfo
	for _, b := range builtinProfiles {
		p, err := l.Load(b.name)
		pi := ProfileInfo{Name: b.name, Source: "built-in", Include: b.include, Description: b.description}
		if err != nil {
			pi.Error = err.Error()
		} else {
			pi.Settings = len(p.Settings)
		}
		out = append(out, pi)
	}
	if l.Host == nil {
		return out
	}
	names, err := l.Host.ReadDirNames(ProfileDir)
	if err != nil {
		return out
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		name := strings.TrimSuffix(n, ".yaml")
		pi := ProfileInfo{Name: name, Source: path.Join(ProfileDir, n)}
		p, err := l.Load(name)
		if err != nil {
			pi.Error = err.Error()
		} else {
			pi.Name, pi.Description, pi.Settings = p.Name, p.Description, len(p.Settings)
			pi.Include = strings.Join(p.Include, ",")
		}
		out = append(out, pi)
	}
	return out
}
