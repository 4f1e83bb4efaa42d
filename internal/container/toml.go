package container

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
)

// ParseTOML decodes a runtime's TOML file into generic tables; an error
// is a *ParseError with the line and column.
func ParseTOML(file string, data []byte) (map[string]any, error) {
	if len(data) > maxConfigBytes {
		return nil, &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		pe := &ParseError{File: file, Reason: err.Error()}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			pe.Line, pe.Column = de.Position()
			pe.Reason = de.Error()
		}
		return nil, pe
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// table walks nested tables by key; nil when a key is missing or not a
// table.
func table(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func boolean(m map[string]any, k string) (bool, bool) {
	b, ok := m[k].(bool)
	return b, ok
}

func strs(m map[string]any, k string) ([]string, bool) {
	raw, ok := m[k].([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out, true
}

func intval(m map[string]any, k string) (int64, bool) {
	n, ok := m[k].(int64)
	return n, ok
}

// mergeTables merges src into dst the way containerd and CRI-O merge
// drop-ins: tables recursively, other values replaced.
func mergeTables(dst, src map[string]any, depth int) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok && depth < 32 {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeTables(dv, sv, depth+1)
				continue
			}
		}
		dst[k] = v
	}
}

// maxDropIns bounds the drop-in files read for one runtime.
const maxDropIns = 256

// globFiles lists the regular files matching an absolute glob whose
// directory part has no pattern, sorted.
func globFiles(h *hostfs.FS, pattern string) ([]string, error) {
	dir, base := path.Split(path.Clean(pattern))
	names, err := h.ReadDirNames(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(base, n); !ok {
			continue
		}
		p := path.Join(dir, n)
		if fi, err := h.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, p)
		if len(out) >= maxDropIns {
			break
		}
	}
	sort.Strings(out)
	return out, nil
}

// ContainerdConfig is the file /etc/containerd/config.toml.
const ContainerdConfig = "/etc/containerd/config.toml"

// ContainerdRuntime is what the check found in containerd's configuration.
type ContainerdRuntime struct {
	Version       int64
	Files         []string
	BinaryName    string
	HasNvidia     bool
	DefaultName   string
	EnableCDI     *bool
	CDISpecDirs   []string
	HasCDISpecDir bool
}

// ReadContainerd reads config.toml and its imports and finds the nvidia
// runtime in the version 2 (io.containerd.grpc.v1.cri) or version 3
// (io.containerd.cri.v1.runtime) layout.
func ReadContainerd(h *hostfs.FS) (*ContainerdRuntime, error) {
	data, err := h.ReadFile(ContainerdConfig)
	if err != nil {
		return nil, err
	}
	root, err := ParseTOML(ContainerdConfig, data)
	if err != nil {
		return nil, err
	}
	r := &ContainerdRuntime{Files: []string{ContainerdConfig}}
	if imports, ok := strs(root, "imports"); ok {
		for i, pat := range imports {
			if i >= maxDropIns {
				break
			}
			if !strings.HasPrefix(pat, "/") {
				pat = path.Join(path.Dir(ContainerdConfig), pat)
			}
			files, err := globFiles(h, pat)
			if err != nil {
				continue
			}
			for _, f := range files {
				d, err := h.ReadFile(f)
				if err != nil {
					return nil, err
				}
				m, err := ParseTOML(f, d)
				if err != nil {
					return nil, err
				}
				delete(m, "version")
				delete(m, "imports")
				mergeTables(root, m, 0)
				r.Files = append(r.Files, f)
			}
		}
	}
	return decodeContainerd(root, r), nil
}

func decodeContainerd(root map[string]any, r *ContainerdRuntime) *ContainerdRuntime {
	r.Version, _ = intval(root, "version")
	if r.Version == 0 {
		r.Version = 1
	}
	plugin := "io.containerd.grpc.v1.cri"
	if r.Version >= 3 {
		plugin = "io.containerd.cri.v1.runtime"
	}
	cri := table(root, "plugins", plugin)
	if r.Version == 1 {
		cri = table(root, "plugins", "cri")
	}
	if cri == nil {
		return r
	}
	if b, ok := boolean(cri, "enable_cdi"); ok {
		r.EnableCDI = &b
	}
	r.CDISpecDirs, r.HasCDISpecDir = strs(cri, "cdi_spec_dirs")
	ctd := table(cri, "containerd")
	r.DefaultName = str(ctd, "default_runtime_name")
	if nv := table(ctd, "runtimes", "nvidia"); nv != nil {
		r.HasNvidia = true
		r.BinaryName = str(table(nv, "options"), "BinaryName")
	}
	return r
}

var defaultCDIDirs = []string{"/etc/cdi", "/var/run/cdi"}

func containerdVersion(h *host) string {
	for _, p := range [...]string{"containerd.io", "containerd"} {
		if v, ok := h.pkgs[p]; ok {
			return upstreamVersion(v)
		}
	}
	return ""
}

const fixContainerdConfigure = "nvidia-ctk runtime configure --runtime=containerd && systemctl restart containerd"

func containerdCheck(h *host) check.Check {
	f := newFinding(CheckContainerd, "4.1")
	ver := containerdVersion(h)
	r, err := ReadContainerd(h.fs)
	switch {
	case isNotExist(err):
		if ver == "" && findBinary(h.fs, "containerd") == "" {
			f.c.Status, f.c.Current, f.c.Detail = check.Absent, "containerd not installed", "no "+ContainerdConfig+" and no containerd"
			return f.c
		}
		r = decodeContainerd(map[string]any{}, &ContainerdRuntime{})
		f.note("no " + ContainerdConfig + " (built-in defaults)")
	case err != nil:
		return errorCheck(CheckContainerd, "4.1", ContainerdConfig, err)
	}
	f.c.Expected = "nvidia runtime with an existing BinaryName, CDI enabled"
	cur := []string{fmt.Sprintf("config version %d", r.Version)}
	if ver != "" {
		cur = append([]string{"containerd " + ver}, cur...)
	}
	cur = f.nvidiaRuntime(h, cur, nvidiaEntry{
		present: r.HasNvidia, absent: "no nvidia runtime in the CRI plugin",
		field: "BinaryName", unset: "runtimes.nvidia.options.BinaryName is unset (containerd would run plain runc)",
		binary: r.BinaryName, fix: fixContainerdConfigure,
	})
	if r.DefaultName != "" {
		cur = append(cur, "default runtime "+r.DefaultName)
	}
	// CDI is off by default before containerd 2.0 and on from 2.0 (config
	// version 3 is 2.x's).
	cdiDefault := r.Version >= 3 || ver != "" && versionAtLeast(ver, 2, 0)
	cdiOn := cdiDefault
	if r.EnableCDI != nil {
		cdiOn = *r.EnableCDI
	}
	if cdiOn {
		cur = append(cur, "CDI on")
	} else {
		cur = append(cur, "CDI off")
		f.drift("enable_cdi is not true: CDI device names (nvidia.com/gpu=...) are not resolved", "nvidia-ctk runtime configure --runtime=containerd --cdi.enabled && systemctl restart containerd")
	}
	dirs := r.CDISpecDirs
	if !r.HasCDISpecDir {
		dirs = defaultCDIDirs
	}
	if cdiOn && r.HasCDISpecDir && !coversCDIDirs(dirs) {
		f.drift(fmt.Sprintf("cdi_spec_dirs %v leaves out /etc/cdi and /var/run/cdi, where nvidia-ctk writes specs", dirs), `# set cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"] and restart containerd`)
	}
	f.c.Current = strings.Join(cur, ", ")
	if len(r.Files) > 1 {
		f.note("read " + strings.Join(r.Files, ", "))
	}
	return f.done()
}

func coversCDIDirs(dirs []string) bool {
	for _, d := range dirs {
		d = path.Clean(d)
		if d == "/etc/cdi" || d == "/var/run/cdi" || d == "/run/cdi" {
			return true
		}
	}
	return false
}

// CRI-O's configuration.
const (
	CRIOConfig = "/etc/crio/crio.conf"
	CRIODropIn = "/etc/crio/crio.conf.d"
)

// CRIORuntime is what the check found in CRI-O's configuration.
type CRIORuntime struct {
	Files         []string
	HasNvidia     bool
	RuntimePath   string
	Default       string
	CDISpecDirs   []string
	HasCDISpecDir bool
}

// ReadCRIO reads crio.conf and the drop-ins in crio.conf.d in name order
// (later files override earlier ones). fs.ErrNotExist: neither exists.
func ReadCRIO(h *hostfs.FS) (*CRIORuntime, error) {
	root := map[string]any{}
	r := &CRIORuntime{}
	files := []string{}
	if h.Exists(CRIOConfig) {
		files = append(files, CRIOConfig)
	}
	if drop, err := globFiles(h, CRIODropIn+"/*.conf"); err == nil {
		files = append(files, drop...)
	}
	if len(files) == 0 {
		return nil, fs.ErrNotExist
	}
	for _, f := range files {
		d, err := h.ReadFile(f)
		if err != nil {
			return nil, err
		}
		m, err := ParseTOML(f, d)
		if err != nil {
			return nil, err
		}
		mergeTables(root, m, 0)
		r.Files = append(r.Files, f)
	}
	return decodeCRIO(root, r), nil
}

// DecodeCRIO reads the nvidia runtime and CDI dirs from parsed (merged)
// CRI-O configuration tables.
func DecodeCRIO(root map[string]any) *CRIORuntime { return decodeCRIO(root, &CRIORuntime{}) }

func decodeCRIO(root map[string]any, r *CRIORuntime) *CRIORuntime {
	rt := table(root, "crio", "runtime")
	r.Default = str(rt, "default_runtime")
	r.CDISpecDirs, r.HasCDISpecDir = strs(rt, "cdi_spec_dirs")
	if nv := table(rt, "runtimes", "nvidia"); nv != nil {
		r.HasNvidia = true
		r.RuntimePath = str(nv, "runtime_path")
	}
	return r
}

const fixCRIOConfigure = "nvidia-ctk runtime configure --runtime=crio && systemctl restart crio"

func crioCheck(h *host) check.Check {
	f := newFinding(CheckCRIO, "4.1")
	_, pkg := h.pkgs["cri-o"]
	r, err := ReadCRIO(h.fs)
	switch {
	case isNotExist(err):
		if !pkg && findBinary(h.fs, "crio") == "" {
			f.c.Status, f.c.Current, f.c.Detail = check.Absent, "CRI-O not installed", "no "+CRIOConfig+", no "+CRIODropIn+" and no crio"
			return f.c
		}
		r = &CRIORuntime{}
		f.note("no " + CRIOConfig + " or drop-ins (built-in defaults)")
	case err != nil:
		return errorCheck(CheckCRIO, "4.1", CRIOConfig, err)
	}
	f.c.Expected = "nvidia runtime with an existing runtime_path, CDI spec dirs /etc/cdi, /var/run/cdi"
	var cur []string
	if v, ok := h.pkgs["cri-o"]; ok {
		cur = append(cur, "CRI-O "+upstreamVersion(v))
	}
	cur = f.nvidiaRuntime(h, cur, nvidiaEntry{
		present: r.HasNvidia, absent: "no [crio.runtime.runtimes.nvidia]",
		field: "runtime_path", unset: "crio.runtime.runtimes.nvidia.runtime_path is unset",
		binary: r.RuntimePath, fix: fixCRIOConfigure,
	})
	if r.Default != "" {
		cur = append(cur, "default runtime "+r.Default)
	}
	if r.HasCDISpecDir && !coversCDIDirs(r.CDISpecDirs) {
		f.drift(fmt.Sprintf("cdi_spec_dirs %v leaves out /etc/cdi and /var/run/cdi", r.CDISpecDirs), `# set cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"] under [crio.runtime] and restart crio`)
	}
	f.c.Current = strings.Join(cur, ", ")
	if len(r.Files) > 0 {
		f.note("read " + strings.Join(r.Files, ", "))
	}
	return f.done()
}

// DecodeContainerd reads the nvidia runtime and CDI settings from parsed
// config.toml tables (imports not followed).
func DecodeContainerd(root map[string]any) *ContainerdRuntime {
	return decodeContainerd(root, &ContainerdRuntime{})
}

// nvidiaEntry is what a CRI runtime's config says of its nvidia runtime:
// whether the entry exists, and the binary it runs (field names the key
// holding it: containerd's BinaryName, CRI-O's runtime_path).
type nvidiaEntry struct {
	present bool
	absent  string // the problem when there is no entry
	field   string
	unset   string // the problem when field is empty
	binary  string
	fix     string // the runtime's configure command
}

// nvidiaRuntime judges e (the entry exists, names a binary, the binary is
// installed) and returns cur with what it found: the containerd and CRI-O
// checks share it.
func (f *finding) nvidiaRuntime(h *host, cur []string, e nvidiaEntry) []string {
	switch {
	case !e.present:
		f.drift(e.absent, e.fix)
		return append(cur, "no nvidia runtime")
	case e.binary == "":
		f.drift(e.unset, e.fix)
		return append(cur, "nvidia runtime without "+e.field)
	case findBinary(h.fs, e.binary) == "":
		f.drift(fmt.Sprintf("%s %q does not exist", e.field, e.binary), fixInstallToolkit, e.fix)
		return append(cur, "nvidia "+e.field+" "+e.binary+" (missing)")
	}
	return append(cur, "nvidia "+e.field+" "+e.binary)
}
