package tune

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// Host is what the catalogue's knobs read: the host filesystem, its
// topology, and the boot-time configuration files parsed once per run.
// Build one with NewHost; it is not safe for concurrent use.
type Host struct {
	FS *hostfs.FS
	// Topo is the discovered topology, nil when discovery failed (TopoErr).
	Topo    *topo.Topology
	TopoErr error
	// FixRoot is the tree printed fixes name host paths under ("" on the
	// host itself; tests render fixes against a copy of a fixture).
	FixRoot string
	// GPULoad is the GPU backend's reading of each GPU's utilisation and
	// link (nil: not read); pcie.link judges a busy GPU's link speed by it.
	GPULoad []GPULoad

	memTotal    *uint64
	memErr      error
	cmdline     map[string]string
	cmdlineErr  error
	cmdlineRead bool
	grub        *grubConfig
	boot        *bootConfig
	sysctl      map[string]sysctlSetting
	tmpfiles    map[string]string
	limits      map[string]limitSetting
	systemd     map[string]confValue
	cpuDirs     []string
	cpuDirsErr  error
	cpuDirsRead bool
	idle        []idleState
	idleErr     error
	idleRead    bool
	acs         *acsScan
}

// NewHost discovers the topology of fsys (a failed discovery is kept in
// TopoErr: topology-dependent settings then report an error, the others
// still run).
func NewHost(ctx context.Context, fsys *hostfs.FS) *Host {
	h := &Host{FS: fsys}
	h.Topo, h.TopoErr = topo.Discover(ctx, fsys)
	return h
}

// errAbsent marks a knob that does not exist on this kernel or hardware.
var errAbsent = errors.New("absent")

func absentf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errAbsent, fmt.Sprintf(format, args...))
}

// readKernel reads a kernel file; a missing file is errAbsent.
func (h *Host) readKernel(p string) (string, error) {
	s, err := h.FS.ReadString(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", absentf("%s does not exist on this kernel", p)
	}
	return s, err
}

// MemTotal returns the machine's memory in bytes (/proc/meminfo).
func (h *Host) MemTotal() (uint64, error) {
	if h.memTotal != nil || h.memErr != nil {
		return deref(h.memTotal), h.memErr
	}
	b, err := h.FS.ReadFile("/proc/meminfo")
	if err != nil {
		h.memErr = err
		return 0, err
	}
	mi, err := sysfmt.ParseMeminfo(b)
	v := mi["MemTotal"]
	if err == nil && v == 0 {
		err = errors.New("no MemTotal line")
	}
	if err != nil {
		h.memErr = fmt.Errorf("/proc/meminfo: %w", err)
		return 0, h.memErr
	}
	h.memTotal = &v
	return v, nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// Cmdline returns the running kernel's command line as key -> value
// ("" for flags; the last occurrence wins).
func (h *Host) Cmdline() (map[string]string, error) {
	if !h.cmdlineRead {
		h.cmdlineRead = true
		s, err := h.FS.ReadString("/proc/cmdline")
		if err != nil {
			h.cmdlineErr = err
		} else {
			h.cmdline = parseCmdline(s)
		}
	}
	return h.cmdline, h.cmdlineErr
}

// parseCmdline splits a kernel command line into parameters. Quoted values
// ("a b") are kept whole.
func parseCmdline(s string) map[string]string {
	out := map[string]string{}
	for _, f := range splitCmdline(s) {
		k, v, _ := strings.Cut(f, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return out
}

// splitCmdline splits at blanks outside double quotes. It works on bytes:
// the command line is not necessarily UTF-8, and every byte is kept.
func splitCmdline(s string) []string {
	var out []string
	var cur strings.Builder
	inQ := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			inQ = !inQ
			cur.WriteByte(c)
		case (c == ' ' || c == '\t' || c == '\n') && !inQ:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// ---- /etc/default/grub ----

// grubConfig is the kernel command line configured in /etc/default/grub and
// /etc/default/grub.d/*.cfg.
type grubConfig struct {
	exists bool
	// params of GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT.
	params map[string]string
	// where each parameter was last set.
	source map[string]string
	// target is the file whose GRUB_CMDLINE_LINUX wins: the last one
	// that assigns it without including the earlier value.
	target string
}

const grubFile = "/etc/default/grub"

func (h *Host) grubConf() *grubConfig {
	if h.grub != nil {
		return h.grub
	}
	g := &grubConfig{params: map[string]string{}, source: map[string]string{}, target: grubFile}
	vars := map[string]string{}
	files := []string{grubFile}
	if names, err := h.FS.ReadDirNames("/etc/default/grub.d"); err == nil {
		for _, n := range names {
			if strings.HasSuffix(n, ".cfg") {
				files = append(files, "/etc/default/grub.d/"+n)
			}
		}
	}
	for _, f := range files {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			continue
		}
		g.exists = true
		if f != grubFile && assignsCmdline(b) {
			g.target = f
		}
		parseShellVars(b, vars)
		// Track where parameters come from, file by file.
		cur := parseCmdline(vars["GRUB_CMDLINE_LINUX"] + " " + vars["GRUB_CMDLINE_LINUX_DEFAULT"])
		for k, v := range cur {
			if old, ok := g.params[k]; !ok || old != v {
				g.source[k] = f
			}
		}
		g.params = cur
	}
	h.grub = g
	return g
}

// assignsCmdline reports whether a grub.d drop-in replaces
// GRUB_CMDLINE_LINUX (assigns it without $GRUB_CMDLINE_LINUX).
func assignsCmdline(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "export ")
		v, ok := strings.CutPrefix(l, "GRUB_CMDLINE_LINUX=")
		if ok && !strings.Contains(v, "$GRUB_CMDLINE_LINUX") && !strings.Contains(v, "${GRUB_CMDLINE_LINUX}") {
			return true
		}
	}
	return false
}

// parseShellVars reads VAR=value assignments of a shell fragment (the
// subset /etc/default/grub uses: quotes and $VAR / ${VAR} expansion of
// earlier values). It returns the variables assigned in b.
func parseShellVars(b []byte, env map[string]string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimPrefix(line, "export ")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !isShellName(k) {
			continue
		}
		val := shellValue(v, func(name string) string {
			if x, ok := out[name]; ok {
				return x
			}
			return env[name]
		})
		out[k] = val
		env[k] = val
	}
	return out
}

func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// shellValue unquotes a shell word, expanding $VAR and ${VAR} outside single
// quotes. A trailing comment after whitespace is dropped.
func shellValue(v string, lookup func(string) string) string {
	var b strings.Builder
	q := byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == ' ' || c == '\t'):
			return b.String()
		case c == '$' && q != '\'' && i+1 < len(v):
			j := i + 1
			brace := v[j] == '{'
			if brace {
				j++
			}
			k := j
			for k < len(v) && (v[k] == '_' || v[k] >= 'A' && v[k] <= 'Z' || v[k] >= 'a' && v[k] <= 'z' || v[k] >= '0' && v[k] <= '9') {
				k++
			}
			if k == j {
				b.WriteByte(c)
				continue
			}
			b.WriteString(lookup(v[j:k]))
			if brace && k < len(v) && v[k] == '}' {
				k++
			}
			i = k - 1
		case c == '\\' && q != '\'' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ---- sysctl.d ----

type sysctlSetting struct {
	value  string
	source string
	order  int
}

// sysctlDirs are read in systemd-sysctl's order: a file name in an earlier
// directory masks the same name in later ones; files apply sorted by name;
// /etc/sysctl.conf (99-sysctl.conf on Debian) applies last.
var sysctlDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// sysctlBoot returns the sysctl values configured for boot, by key
// ("vm.swappiness"), with the file that sets them.
func (h *Host) sysctlBoot() map[string]sysctlSetting {
	if h.sysctl != nil {
		return h.sysctl
	}
	files := confFiles(h.FS, sysctlDirs, ".conf")
	files = append(files, "/etc/sysctl.conf")
	out := map[string]sysctlSetting{}
	order := 0
	for _, f := range files {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			continue
		}
		for _, kv := range parseSysctlConfOrdered(b) {
			order++
			out[kv[0]] = sysctlSetting{value: kv[1], source: f, order: order}
		}
	}
	h.sysctl = out
	return out
}

// confFiles lists *.ext files of dirs, earlier directories masking later
// ones by file name, sorted by file name.
func confFiles(fsys *hostfs.FS, dirs []string, ext string) []string {
	byName := map[string]string{}
	for _, d := range dirs {
		names, err := fsys.ReadDirNames(d)
		if err != nil {
			continue
		}
		for _, n := range names {
			if !strings.HasSuffix(n, ext) {
				continue
			}
			if _, masked := byName[n]; !masked {
				byName[n] = path.Join(d, n)
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out
}

// parseSysctlConfOrdered parses sysctl.conf syntax into key, value pairs in
// file order. Keys use dots ("net/core/x" is normalised).
func parseSysctlConfOrdered(b []byte) [][2]string {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimPrefix(strings.TrimSpace(k), "-")
		k = strings.ReplaceAll(k, "/", ".")
		out = append(out, [2]string{k, normSpace(v)})
	}
	return out
}

// normSpace collapses runs of whitespace (tcp_rmem reads "4096\t87380\t6291456").
func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// ---- tmpfiles.d ----

var tmpfilesDirs = []string{"/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/local/lib/tmpfiles.d", "/usr/lib/tmpfiles.d"}

// tmpfilesWrites returns the "w" (write) lines of tmpfiles.d: path (glob
// as written) -> argument. systemd-tmpfiles applies them at boot.
func (h *Host) tmpfilesWrites() map[string]string {
	if h.tmpfiles != nil {
		return h.tmpfiles
	}
	out := map[string]string{}
	for _, f := range confFiles(h.FS, tmpfilesDirs, ".conf") {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			continue
		}
		for p, v := range parseTmpfilesWrites(b) {
			out[p] = v
		}
	}
	h.tmpfiles = out
	return out
}

func parseTmpfilesWrites(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || (f[0] != "w" && f[0] != "w!") {
			continue
		}
		out[f[1]] = strings.Join(f[6:], " ")
	}
	return out
}

// ---- limits.conf ----

type limitSetting struct {
	soft, hard string
	source     string
}

// limitsBoot returns the pam_limits settings for domain "*" by item
// ("memlock"): limits.conf, then limits.d/*.conf in name order.
func (h *Host) limitsBoot() map[string]limitSetting {
	if h.limits != nil {
		return h.limits
	}
	out := map[string]limitSetting{}
	files := []string{"/etc/security/limits.conf"}
	files = append(files, confFiles(h.FS, []string{"/etc/security/limits.d"}, ".conf")...)
	for _, f := range files {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range parseLimits(b) {
			if l.domain != "*" {
				continue
			}
			cur := out[l.item]
			switch l.typ {
			case "soft":
				cur.soft = l.value
			case "hard":
				cur.hard = l.value
			case "-":
				cur.soft, cur.hard = l.value, l.value
			}
			cur.source = f
			out[l.item] = cur
		}
	}
	h.limits = out
	return out
}

type limitLine struct{ domain, typ, item, value string }

func parseLimits(b []byte) []limitLine {
	var out []limitLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		v := f[3]
		if v == "infinity" || v == "-1" {
			v = "unlimited"
		}
		out = append(out, limitLine{f[0], f[1], f[2], v})
	}
	return out
}

// ---- systemd system.conf ----

type confValue struct {
	value  string
	source string
}

var systemdConfDirs = []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d"}

// systemdManager returns the [Manager] settings of systemd's system.conf and
// its drop-ins (drop-ins override the main file).
func (h *Host) systemdManager() map[string]confValue {
	if h.systemd != nil {
		return h.systemd
	}
	out := map[string]confValue{}
	files := append([]string{"/etc/systemd/system.conf"}, confFiles(h.FS, systemdConfDirs, ".conf")...)
	for _, f := range files {
		b, err := h.FS.ReadFile(f)
		if err != nil {
			continue
		}
		for k, v := range parseINISection(b, "Manager") {
			out[k] = confValue{value: v, source: f}
		}
	}
	h.systemd = out
	return out
}

func parseINISection(b []byte, section string) map[string]string {
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			in = strings.TrimSpace(strings.Trim(line, "[]")) == section
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// ---- /proc/swaps and /etc/fstab ----

// activeSwaps lists the swap areas in use (/proc/swaps).
func (h *Host) activeSwaps() ([]string, error) {
	b, err := h.FS.ReadFile("/proc/swaps")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, absentf("/proc/swaps does not exist (kernel without swap support)")
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue
		}
		out = append(out, unescapeOctal(f[0]))
	}
	return out, nil
}

// fstabSwaps lists the active swap entries of /etc/fstab.
func fstabSwaps(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && !strings.HasPrefix(f[0], "#") && f[2] == "swap" {
			out = append(out, f[0])
		}
	}
	return out
}

// commentFstabSwaps comments out every active swap entry of an fstab,
// keeping every other byte.
func commentFstabSwaps(b []byte) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) >= 3 && !strings.HasPrefix(f[0], "#") && f[2] == "swap" {
			lines[i] = overrideMark + line
		}
	}
	return []byte(strings.Join(lines, ""))
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountOption returns the options of the mount at mountpoint in
// /proc/mounts.
func (h *Host) mountOptions(mountpoint string) (fstype string, opts map[string]string, err error) {
	b, err := h.FS.ReadFile("/proc/mounts")
	if err != nil {
		return "", nil, err
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || unescapeOctal(f[1]) != mountpoint {
			continue
		}
		found = true
		fstype = f[2]
		opts = map[string]string{}
		for _, o := range strings.Split(f[3], ",") {
			k, v, _ := strings.Cut(o, "=")
			opts[k] = v
		}
	}
	if !found {
		return "", nil, absentf("%s is not mounted", mountpoint)
	}
	return fstype, opts, nil
}
