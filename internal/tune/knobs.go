package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// observation is what a knob reads from the host.
type observation struct {
	// Current is the live value in canonical form.
	Current string
	// Boot is the value configured for the next boot ("" when nothing
	// configures it); only meaningful when HasBoot.
	Boot    string
	HasBoot bool
	// Check knobs decide themselves: Good reports whether the host passes.
	Check bool
	Good  bool
	// Detail is a note for the report (where a value comes from, which
	// devices fail a check).
	Detail string
	// CurrentBytes is the live value in bytes when the knob measured it
	// directly (shm.size); otherwise a sizeKnob converts Current.
	CurrentBytes *uint64
}

// sizeKnob is implemented by knobs whose values are sizes: toBytes
// converts a canonical value (live or wanted) into bytes; false when the
// value is not a size ("unlimited", "(unset)"). Audit puts the results in
// Check.CurrentBytes and ExpectedBytes.
type sizeKnob interface {
	toBytes(h *Host, v string) (uint64, bool)
}

// minimumKnob is implemented by knobs whose wanted value is a minimum
// (equal reports current >= want); audit marks their checks
// check.Minimum.
type minimumKnob interface {
	minimum()
}

// shareOfMemory converts "50%" into bytes of MemTotal.
func shareOfMemory(h *Host, v string) (uint64, bool) {
	p, ok := strings.CutSuffix(v, "%")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(p, 10, 64)
	if err != nil || n > 100 {
		return 0, false
	}
	mem, err := h.MemTotal()
	if err != nil {
		return 0, false
	}
	if mem >= 1<<56 {
		return mem / 100 * n, true
	}
	return mem * n / 100, true
}

// knob is how one catalogue entry reads, compares and changes its setting.
type knob interface {
	// read returns the live (and boot-configured) value; errAbsent when the
	// knob does not exist on this kernel or hardware.
	read(ctx context.Context, h *Host) (observation, error)
	// validate checks a profile value without looking at a host.
	validate(v string) error
	// resolve turns a valid profile value into the canonical desired value
	// for h ("auto" values are computed from the topology here).
	resolve(h *Host, v string) (string, error)
	// equal reports whether the current value satisfies want.
	equal(current, want string) bool
	// fix returns the commands a person would run to fix drift.
	fix(h *Host, want string) []string
	// changes returns what 'tune apply' does for want: runtime changes
	// (only those needed now) and persistent contributions.
	changes(h *Host, obs observation, want string) ([]change, persist, error)
}

// change is one runtime change: a journal step recorded before apply runs.
type change struct {
	Desc  string
	Step  journal.Step
	Apply func(ctx context.Context) error
}

// persist collects a setting's contributions to the persistent files.
type persist struct {
	sysctl   [][2]string // key, value
	tmpfiles [][2]string // path (glob), value
	limits   []string    // limits.conf lines
	systemd  [][2]string // [Manager] key, value
	boot     [][2]string // kernel parameter, value ("" for a flag)
	swapOff  bool        // comment swap entries out of /etc/fstab
	manual   []string    // commands gpunode does not run itself
}

func (p *persist) add(o persist) {
	p.sysctl = append(p.sysctl, o.sysctl...)
	p.tmpfiles = append(p.tmpfiles, o.tmpfiles...)
	p.limits = append(p.limits, o.limits...)
	p.systemd = append(p.systemd, o.systemd...)
	p.boot = append(p.boot, o.boot...)
	p.swapOff = p.swapOff || o.swapOff
	p.manual = append(p.manual, o.manual...)
}

// valueChange builds the runtime change writing value to kernel file p.
// original is the value to write back (in the form the file accepts).
func valueChange(h *Host, id, p, original, value string) change {
	raw, _ := h.FS.ReadFile(p)
	return change{
		Desc: fmt.Sprintf("echo %s > %s", shellQuote(value), p),
		Step: journal.Step{Kind: journal.KindValue, ID: id, Path: p, Original: original, OriginalRaw: raw, New: value},
		Apply: func(context.Context) error {
			return h.FS.WriteString(p, value)
		},
	}
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/+=%@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ---- value specs ----

// spec validates profile values of a knob.
type spec struct {
	kind    string // "int", "choice", "ints", "word", "limit", "cpulist"
	min     int64
	max     int64
	choices []string
	n       int // number of ints for "ints"
}

func (s spec) validate(v string) error {
	switch s.kind {
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < s.min || (s.max != 0 && n > s.max) {
			return fmt.Errorf("%d is outside %d..%d", n, s.min, s.max)
		}
	case "ints":
		f := strings.Fields(v)
		if len(f) != s.n {
			return fmt.Errorf("%q: want %d integers separated by spaces", v, s.n)
		}
		for _, x := range f {
			if _, err := strconv.ParseInt(x, 10, 64); err != nil {
				return fmt.Errorf("%q: %q is not an integer", v, x)
			}
		}
	case "choice":
		for _, c := range s.choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", v, strings.Join(s.choices, ", "))
	case "word":
		if v == "" || strings.ContainsAny(v, " \t\n'\"") {
			return fmt.Errorf("%q is not a single word", v)
		}
	case "limit":
		if v == "unlimited" || v == "infinity" {
			return nil
		}
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not a number or unlimited", v)
		}
	case "cpulist":
		if _, err := sysfmt.ParseCPUList(v); err != nil {
			return fmt.Errorf("%q is not a cpulist: %w", v, err)
		}
	default:
		// A catalogue bug; TestCatalogueSpecKinds keeps it from shipping.
		return fmt.Errorf("setting has an unknown value kind %q: no value is valid", s.kind)
	}
	return nil
}

func (s spec) canon(v string) string {
	switch s.kind {
	case "ints":
		return normSpace(v)
	case "limit":
		if v == "infinity" {
			return "unlimited"
		}
	}
	return v
}

// ---- sysctl ----

// sysctlKnob is a /proc/sys value, persisted in /etc/sysctl.d.
type sysctlKnob struct {
	key  string
	spec spec
	// size: the value is a byte count (net.core.rmem_max).
	size bool
}

func (k sysctlKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if !k.size {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

func sysctlPath(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

func (k sysctlKnob) read(_ context.Context, h *Host) (observation, error) {
	v, err := h.readKernel(sysctlPath(k.key))
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: normSpace(v), HasBoot: true}
	if s, ok := h.sysctlBoot()[k.key]; ok {
		o.Boot = s.value
		o.Detail = "boot value from " + s.source
		if readAfter(s.source, fileSysctl) {
			o.Detail += ", which is read after " + fileSysctl + " (what gpunode writes there does not win)"
		}
	}
	return o, nil
}
func (k sysctlKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k sysctlKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k sysctlKnob) equal(c, w string) bool                    { return c == w }
func (k sysctlKnob) fix(h *Host, w string) []string {
	if f, _, ok := h.sysctlOverride(k.key, w); ok {
		return []string{overrideFix(h, f, k.key, false), fixEcho(sysctlPath(k.key), w), fixWrite(fileSysctl)}
	}
	return []string{fixEcho(sysctlPath(k.key), w), fixWrite(fileSysctl)}
}
func (k sysctlKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	p := persist{sysctl: [][2]string{{k.key, w}}}
	if o.Current == w {
		return nil, p, nil
	}
	return []change{valueChange(h, k.key, sysctlPath(k.key), o.Current, w)}, p, nil
}

// ---- sysfs files ----

// sysfsKnob is a sysfs file; bracket files ("always [madvise] never") read
// as the selected word. Persisted with a tmpfiles.d "w" line.
type sysfsKnob struct {
	path    string
	spec    spec
	bracket bool
}

var bracketRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]`) }) // compiled on first use

func (k sysfsKnob) current(h *Host) (string, error) {
	v, err := h.readKernel(k.path)
	if err != nil {
		return "", err
	}
	if k.bracket {
		if m := bracketRE().FindStringSubmatch(v); m != nil {
			return m[1], nil
		}
	}
	return normSpace(v), nil
}

func (k sysfsKnob) read(_ context.Context, h *Host) (observation, error) {
	v, err := k.current(h)
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: v, HasBoot: true}
	if b, ok := h.tmpfilesWrites()[k.path]; ok {
		o.Boot = b
	}
	return o, nil
}
func (k sysfsKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k sysfsKnob) resolve(_ *Host, v string) (string, error) { return v, nil }
func (k sysfsKnob) equal(c, w string) bool                    { return c == w }
func (k sysfsKnob) fix(_ *Host, w string) []string {
	return []string{fixEcho(k.path, w), fixWrite(fileTmpfiles)}
}
func (k sysfsKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	p := persist{tmpfiles: [][2]string{{k.path, w}}}
	if o.Current == w {
		return nil, p, nil
	}
	return []change{valueChange(h, path.Base(k.path), k.path, o.Current, w)}, p, nil
}

// ---- per-CPU sysfs files ----

// cpuDirs lists /sys/devices/system/cpu/cpuN directories, in CPU order.
func cpuDirs(h *Host) ([]string, error) {
	names, err := h.FS.ReadDirNames("/sys/devices/system/cpu")
	if err != nil {
		return nil, err
	}
	type c struct {
		n int
		p string
	}
	var cs []c
	for _, n := range names {
		if id, err := strconv.Atoi(strings.TrimPrefix(n, "cpu")); err == nil && strings.HasPrefix(n, "cpu") {
			cs = append(cs, c{id, "/sys/devices/system/cpu/" + n})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].n < cs[j].n })
	out := make([]string, len(cs))
	for i, x := range cs {
		out[i] = x.p
	}
	return out, nil
}

// perCPUKnob is a file present once per CPU (cpufreq governor, EPP).
type perCPUKnob struct {
	rel   string // below cpuN: "cpufreq/scaling_governor"
	avail string // file listing the accepted values, if any
	spec  spec
}

func (k perCPUKnob) glob() string { return "/sys/devices/system/cpu/cpu*/" + k.rel }

// values reads the knob of every CPU that has it: cpu dir -> value.
func (k perCPUKnob) values(h *Host) ([]string, map[string]string, error) {
	dirs, err := cpuDirs(h)
	if err != nil {
		return nil, nil, err
	}
	var have []string
	vals := map[string]string{}
	for _, d := range dirs {
		v, err := h.FS.ReadString(d + "/" + k.rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		have = append(have, d)
		vals[d] = v
	}
	if len(have) == 0 {
		return nil, nil, absentf("no CPU has %s (no cpufreq driver, or a VM)", k.rel)
	}
	return have, vals, nil
}

func (k perCPUKnob) read(_ context.Context, h *Host) (observation, error) {
	dirs, vals, err := k.values(h)
	if err != nil {
		return observation{}, err
	}
	count := map[string]int{}
	for _, d := range dirs {
		count[vals[d]]++
	}
	o := observation{HasBoot: true}
	if len(count) == 1 {
		o.Current = vals[dirs[0]]
	} else {
		keys := make([]string, 0, len(count))
		for v := range count {
			keys = append(keys, v)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, v := range keys {
			parts[i] = fmt.Sprintf("%s(%d CPUs)", v, count[v])
		}
		o.Current = "mixed: " + strings.Join(parts, " ")
	}
	if b, ok := h.tmpfilesWrites()[k.glob()]; ok {
		o.Boot = b
	}
	return o, nil
}
func (k perCPUKnob) validate(v string) error { return k.spec.validate(v) }
func (k perCPUKnob) resolve(h *Host, v string) (string, error) {
	if k.avail == "" {
		return v, nil
	}
	dirs, err := cpuDirs(h)
	if err != nil || len(dirs) == 0 {
		return v, nil
	}
	for _, d := range dirs {
		a, err := h.FS.ReadString(d + "/" + k.avail)
		if err != nil {
			continue
		}
		for _, x := range strings.Fields(a) {
			if x == v {
				return v, nil
			}
		}
		return "", fmt.Errorf("%q is not available on this host (%s: %s)", v, d+"/"+k.avail, a)
	}
	return v, nil
}
func (k perCPUKnob) equal(c, w string) bool { return c == w }
func (k perCPUKnob) fix(_ *Host, w string) []string {
	return []string{fixEcho(k.glob(), w), fixWrite(fileTmpfiles)}
}
func (k perCPUKnob) changes(h *Host, _ observation, w string) ([]change, persist, error) {
	p := persist{tmpfiles: [][2]string{{k.glob(), w}}}
	dirs, vals, err := k.values(h)
	if err != nil {
		return nil, p, err
	}
	var cs []change
	for _, d := range dirs {
		if vals[d] != w {
			cs = append(cs, valueChange(h, path.Base(d)+"/"+k.rel, d+"/"+k.rel, vals[d], w))
		}
	}
	return cs, p, nil
}

// ---- cpuidle ----

// cpuidleKnob limits the deepest idle state: states whose exit latency
// exceeds the desired microseconds are disabled on every CPU (the runtime
// equivalent of processor.max_cstate, without holding /dev/cpu_dma_latency
// open in a daemon).
type cpuidleKnob struct{}

type idleState struct {
	file    string // .../stateN/disable
	state   string // "state3"
	name    string
	latency int
	disable bool
}

// states reads every CPU's idle states. The states (names, exit latencies)
// belong to the cpuidle driver and are the same on every CPU of a server, so
// they are read once, from the first CPU that has them; only each CPU's
// disable flag is read per CPU (2,700 fewer reads on a 224-CPU host).
func (cpuidleKnob) states(h *Host) ([]idleState, error) {
	dirs, err := cpuDirs(h)
	if err != nil {
		return nil, err
	}
	type proto struct {
		state, name string
		latency     int
	}
	var protos []proto
	for _, d := range dirs {
		names, err := h.FS.ReadDirNames(d + "/cpuidle")
		if err != nil {
			continue
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "state") {
				continue
			}
			lat, err := h.FS.ReadInt(d + "/cpuidle/" + n + "/latency")
			if err != nil {
				continue
			}
			name, _ := h.FS.ReadString(d + "/cpuidle/" + n + "/name")
			protos = append(protos, proto{n, name, int(lat)})
		}
		if len(protos) > 0 {
			break
		}
	}
	if len(protos) == 0 {
		return nil, absentf("no cpuidle states (/sys/devices/system/cpu/cpu*/cpuidle)")
	}
	var out []idleState
	for _, d := range dirs {
		for _, p := range protos {
			f := d + "/cpuidle/" + p.state + "/disable"
			dis, err := h.FS.ReadString(f)
			if err != nil {
				continue // offline CPU, or a CPU without this state
			}
			out = append(out, idleState{file: f, state: p.state, name: p.name, latency: p.latency, disable: dis == "1"})
		}
	}
	return out, nil
}

func (k cpuidleKnob) read(_ context.Context, h *Host) (observation, error) {
	sts, err := k.states(h)
	if err != nil {
		return observation{}, err
	}
	deepest := -1
	name := ""
	for _, s := range sts {
		if !s.disable && s.latency > deepest {
			deepest, name = s.latency, s.name
		}
	}
	o := observation{Current: strconv.Itoa(deepest), HasBoot: true, Detail: fmt.Sprintf("deepest enabled state %s, exit latency %d us", name, deepest)}
	// Boot: tmpfiles lines disabling every too-deep state index.
	tf := h.tmpfilesWrites()
	maxBoot := -1
	for _, s := range sts {
		if tf["/sys/devices/system/cpu/cpu*/cpuidle/"+s.state+"/disable"] == "1" {
			continue
		}
		if s.latency > maxBoot {
			maxBoot = s.latency
		}
	}
	if maxBoot != deepest || hasPrefixKey(tf, "/sys/devices/system/cpu/cpu*/cpuidle/") {
		o.Boot = strconv.Itoa(maxBoot)
	}
	return o, nil
}

func hasPrefixKey(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func (cpuidleKnob) validate(v string) error {
	return spec{kind: "int", min: 0, max: 1000000}.validate(v)
}
func (cpuidleKnob) resolve(_ *Host, v string) (string, error) { return v, nil }
func (cpuidleKnob) equal(c, w string) bool {
	ci, err1 := strconv.Atoi(c)
	wi, err2 := strconv.Atoi(w)
	return err1 == nil && err2 == nil && ci <= wi
}
func (k cpuidleKnob) fix(h *Host, w string) []string {
	// The states deeper than w, disabled on every CPU (what
	// 'cpupower idle-set -D' does, without needing cpupower installed).
	max, _ := strconv.Atoi(w)
	sts, err := k.states(h)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range sts {
		if s.latency > max && !seen[s.state] {
			seen[s.state] = true
			out = append(out, fixEcho("/sys/devices/system/cpu/cpu*/cpuidle/"+s.state+"/disable", "1"))
		}
	}
	return append(out, fixWrite(fileTmpfiles))
}
func (k cpuidleKnob) changes(h *Host, _ observation, w string) ([]change, persist, error) {
	max, _ := strconv.Atoi(w)
	sts, err := k.states(h)
	if err != nil {
		return nil, persist{}, err
	}
	var p persist
	seen := map[string]bool{}
	var cs []change
	for _, s := range sts {
		if s.latency <= max {
			continue
		}
		if !seen[s.state] {
			seen[s.state] = true
			p.tmpfiles = append(p.tmpfiles, [2]string{"/sys/devices/system/cpu/cpu*/cpuidle/" + s.state + "/disable", "1"})
		}
		if !s.disable {
			cs = append(cs, valueChange(h, "cpuidle", s.file, "0", "1"))
		}
	}
	return cs, p, nil
}

// ---- kernel command line ----

// cmdlineKnob is a kernel boot parameter: read from /proc/cmdline, configured
// in /etc/default/grub, written only with --bootloader.
type cmdlineKnob struct {
	param string
	spec  spec
	// auto computes the value of "auto" from the host.
	auto func(h *Host) (string, error)
	// cpulist compares values as CPU sets (flags like "domain," ignored).
	cpulist bool
	// vendor limits the parameter to CPUs whose model names it ("Intel",
	// "Intel|AMD"); elsewhere the setting is absent.
	vendor string
	// sameAs names another CPU-list parameter ("isolcpus") this one should
	// equal: the profile value sameAs resolves to that parameter's live
	// value, the setting is judged only where the host sets both, and
	// the detail names both lists when they differ.
	sameAs string
}

// judged reports whether the setting has anything to judge on h with the
// profile value v: a sameAs value needs both parameters on the live
// command line (a host that isolates no CPUs, or isolates them with the
// tick left on, is not this setting's business).
func (k cmdlineKnob) judged(h *Host, v string) bool {
	if k.sameAs == "" || v != k.sameAs {
		return true
	}
	cl, err := h.Cmdline()
	if err != nil {
		return true // read reports the error
	}
	_, a := cl[k.param]
	_, b := cl[k.sameAs]
	return a && b
}

// sameAsDetail says how the live values of k.param and k.sameAs differ
// ("" when they are equal or either is unset or unparsable).
func (k cmdlineKnob) sameAsDetail(cl map[string]string) string {
	v, ok1 := cl[k.param]
	o, ok2 := cl[k.sameAs]
	if !ok1 || !ok2 {
		return ""
	}
	a, err1 := sysfmt.ParseCPUList(stripCPUFlags(v))
	b, err2 := sysfmt.ParseCPUList(stripCPUFlags(o))
	if err1 != nil || err2 != nil || a.Equals(b) {
		return ""
	}
	msg := fmt.Sprintf("%s=%s differs from %s=%s", k.param, stripCPUFlags(v), k.sameAs, stripCPUFlags(o))
	if d := b.Difference(a); d.Size() > 0 {
		msg += fmt.Sprintf("; CPUs %s are in %s but not in %s", d, k.sameAs, k.param)
	}
	if d := a.Difference(b); d.Size() > 0 {
		msg += fmt.Sprintf("; CPUs %s are in %s but not in %s", d, k.param, k.sameAs)
	}
	return msg
}

// cpuVendorMatches reports whether the host's CPU model names one of the
// vendors ("Intel|AMD"). An unknown model matches nothing.
func cpuVendorMatches(h *Host, vendors string) bool {
	if h.Topo == nil {
		return true // cannot tell; let the read decide
	}
	for _, v := range strings.Split(vendors, "|") {
		if strings.Contains(h.Topo.CPUModel, v) {
			return true
		}
	}
	return false
}

const unset = "(unset)"

func (k cmdlineKnob) read(_ context.Context, h *Host) (observation, error) {
	if k.vendor != "" && !cpuVendorMatches(h, k.vendor) {
		model := "unknown"
		if h.Topo != nil && h.Topo.CPUModel != "" {
			model = h.Topo.CPUModel
		}
		return observation{}, absentf("%s only applies to %s CPUs (this host: %s)", k.param, strings.ReplaceAll(k.vendor, "|", "/"), model)
	}
	cl, err := h.Cmdline()
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: unset}
	if v, ok := cl[k.param]; ok {
		o.Current = v
		if v == "" {
			o.Current = "(set)"
		}
	}
	if k.sameAs != "" {
		o.Detail = k.sameAsDetail(cl)
	}
	g := h.bootConf()
	if g.exists {
		o.HasBoot = true
		if v, ok := g.params[k.param]; ok {
			o.Boot = v
			if v == "" {
				o.Boot = "(set)"
			}
			o.Detail = joinDetail(o.Detail, "configured in "+g.source[k.param])
		} else {
			o.Boot = unset
		}
	}
	return o, nil
}
func (k cmdlineKnob) validate(v string) error {
	if v == "auto" && k.auto != nil || v == k.sameAs && v != "" {
		return nil
	}
	return k.spec.validate(v)
}
func (k cmdlineKnob) resolve(h *Host, v string) (string, error) {
	if v == "auto" && k.auto != nil {
		return k.auto(h)
	}
	if v == k.sameAs && v != "" {
		cl, err := h.Cmdline()
		if err != nil {
			return "", err
		}
		o, ok := cl[k.sameAs]
		if !ok {
			return unset, nil
		}
		return stripCPUFlags(o), nil
	}
	return v, nil
}
func (k cmdlineKnob) equal(c, w string) bool {
	if c == w {
		return true
	}
	if k.cpulist {
		a, err1 := sysfmt.ParseCPUList(stripCPUFlags(c))
		b, err2 := sysfmt.ParseCPUList(stripCPUFlags(w))
		return err1 == nil && err2 == nil && c != unset && w != unset && a.Equals(b)
	}
	return false
}

// stripCPUFlags drops isolcpus flags ("managed_irq,domain,2-7" -> "2-7").
func stripCPUFlags(s string) string {
	parts := strings.Split(s, ",")
	keep := parts[:0]
	for _, p := range parts {
		if p != "" && (p[0] >= '0' && p[0] <= '9') {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ",")
}
func (k cmdlineKnob) fix(_ *Host, w string) []string {
	return []string{fixBootTemplate}
}
func (k cmdlineKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{boot: [][2]string{{k.param, w}}}, nil
}

// ---- limits.d ----

// limitsKnob is a pam_limits item for every user ("*"), persisted in
// /etc/security/limits.d. It takes effect at the next login or service start.
type limitsKnob struct {
	item string
	spec spec
}

func (k limitsKnob) read(_ context.Context, h *Host) (observation, error) {
	l, ok := h.limitsBoot()[k.item]
	o := observation{Current: unset}
	if ok {
		switch {
		case l.soft == l.hard:
			o.Current = l.soft
		case l.soft == "":
			o.Current = "hard=" + l.hard
		case l.hard == "":
			o.Current = "soft=" + l.soft
		default:
			o.Current = "soft=" + l.soft + " hard=" + l.hard
		}
		o.Detail = "from " + l.source + " (applies at the next login)"
		if readAfter(l.source, fileLimits) {
			o.Detail += ", which is read after " + fileLimits + " (what gpunode writes there does not win)"
		}
	}
	return o, nil
}

// toBytes: pam_limits counts memlock in KiB; nofile is not a size.
func (k limitsKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if k.item != "memlock" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > 1<<53 {
		return 0, false
	}
	return n << 10, true
}
func (k limitsKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k limitsKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k limitsKnob) equal(c, w string) bool                    { return c == w }
func (k limitsKnob) fix(h *Host, w string) []string {
	if f, _, ok := h.limitsOverride(k.item, w); ok {
		return []string{overrideFix(h, f, k.item, true), fixWrite(fileLimits)}
	}
	return []string{fixWrite(fileLimits)}
}
func (k limitsKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{limits: []string{"* soft " + k.item + " " + w, "* hard " + k.item + " " + w}}, nil
}

// ---- systemd system.conf ----

// systemdKnob is a [Manager] default of systemd (DefaultLimitMEMLOCK):
// services inherit it; it takes effect after 'systemctl daemon-reexec'.
type systemdKnob struct {
	key  string
	spec spec
}

func (k systemdKnob) read(_ context.Context, h *Host) (observation, error) {
	o := observation{Current: unset}
	if v, ok := h.systemdManager()[k.key]; ok {
		o.Current = k.spec.canon(v.value)
		o.Detail = "from " + v.source
	}
	return o, nil
}

// toBytes: systemd reads DefaultLimitMEMLOCK in bytes, with optional
// K, M, G, T suffixes (base 1024); NOFILE is not a size.
func (k systemdKnob) toBytes(_ *Host, v string) (uint64, bool) {
	if k.key != "DefaultLimitMEMLOCK" || v == "unlimited" || v == "infinity" {
		return 0, false
	}
	n, err := sysfmt.ParseBytes(v)
	return n, err == nil
}
func (k systemdKnob) validate(v string) error                   { return k.spec.validate(v) }
func (k systemdKnob) resolve(_ *Host, v string) (string, error) { return k.spec.canon(v), nil }
func (k systemdKnob) equal(c, w string) bool                    { return c == w }
func (k systemdKnob) fix(_ *Host, w string) []string {
	return []string{fixWrite(fileSystemd), "systemctl daemon-reexec"}
}
func (k systemdKnob) changes(_ *Host, _ observation, w string) ([]change, persist, error) {
	return nil, persist{systemd: [][2]string{{k.key, systemdValue(w)}}}, nil
}

func systemdValue(v string) string {
	if v == "unlimited" {
		return "infinity"
	}
	return v
}

// ---- swap ----

// swapKnob: no swap in use, and none configured in /etc/fstab. gpunode
// comments out the fstab entries but does not run swapoff itself: moving
// gigabytes back into RAM on a loaded node can take minutes or trigger the
// OOM killer, so that command is left to the operator.
type swapKnob struct{}

func (swapKnob) read(_ context.Context, h *Host) (observation, error) {
	sw, err := h.activeSwaps()
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: "off"}
	if len(sw) > 0 {
		o.Current = "on: " + strings.Join(sw, ",")
	}
	if b, err := h.FS.ReadFile("/etc/fstab"); err == nil {
		o.HasBoot = true
		o.Boot = "off"
		if fs := fstabSwaps(b); len(fs) > 0 {
			o.Boot = "on: " + strings.Join(fs, ",")
		}
	}
	return o, nil
}
func (swapKnob) validate(v string) error {
	return spec{kind: "choice", choices: []string{"off"}}.validate(v)
}
func (swapKnob) resolve(_ *Host, v string) (string, error) { return v, nil }
func (swapKnob) equal(c, w string) bool                    { return c == w }
func (swapKnob) fix(*Host, string) []string {
	// The sed comments out the same lines as commentFstabSwaps.
	return []string{"swapoff -a", `sed -i -E 's/^([[:space:]]*[^#[:space:]][^[:space:]]*[[:space:]]+[^[:space:]]+[[:space:]]+swap([[:space:]]|$))/` + overrideMark + `\1/' ` + fixPath(fileFstab)}
}
func (swapKnob) changes(_ *Host, o observation, _ string) ([]change, persist, error) {
	p := persist{swapOff: true}
	if o.Current != "off" {
		p.manual = append(p.manual, "swapoff -a   # gpunode does not run it: it can take minutes and OOM a loaded node")
	}
	return nil, p, nil
}

// ---- vm.dirty_* ----

// dirtyKnob is the pair vm.dirty_ratio/vm.dirty_bytes (or the background
// pair): the kernel uses one of them and zeroes the other when either is
// written. Values are "20%" (ratio) or a byte count; "auto" picks bytes from
// the machine's memory size.
type dirtyKnob struct{ background bool }

func (k dirtyKnob) keys() (ratio, bytes string) {
	if k.background {
		return "vm.dirty_background_ratio", "vm.dirty_background_bytes"
	}
	return "vm.dirty_ratio", "vm.dirty_bytes"
}

// parseDirty parses "20%" (ratio) or "34359738368", "32G", "32GiB" (bytes).
func parseDirty(v string) (n uint64, ratio bool, err error) {
	if r, ok := strings.CutSuffix(v, "%"); ok {
		x, err := strconv.ParseUint(r, 10, 64)
		if err != nil || x > 100 {
			return 0, false, fmt.Errorf("%q: a ratio is 0%%..100%%", v)
		}
		return x, true, nil
	}
	b, err := sysfmt.ParseBytes(v)
	if err != nil {
		return 0, false, fmt.Errorf("%q: want a percentage (20%%), a byte size (32G) or auto", v)
	}
	if b < 8192 {
		return 0, false, fmt.Errorf("%q: the kernel ignores dirty byte limits under two pages", v)
	}
	return b, false, nil
}

func dirtyString(ratioV, bytesV string) string {
	if bytesV != "" && bytesV != "0" {
		return bytesV
	}
	return ratioV + "%"
}

func (k dirtyKnob) read(_ context.Context, h *Host) (observation, error) {
	rk, bk := k.keys()
	r, err := h.readKernel(sysctlPath(rk))
	if err != nil {
		return observation{}, err
	}
	b, err := h.readKernel(sysctlPath(bk))
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: dirtyString(r, b), HasBoot: true}
	boot := h.sysctlBoot()
	rs, rok := boot[rk]
	bs, bok := boot[bk]
	switch {
	case bok && (!rok || bs.order > rs.order) && bs.value != "0":
		o.Boot, o.Detail = bs.value, "boot value from "+bs.source
	case rok:
		o.Boot, o.Detail = rs.value+"%", "boot value from "+rs.source
	}
	return o, nil
}

// toBytes converts a byte limit, or a ratio through MemTotal. The kernel
// applies the ratio to dirtyable memory (free plus reclaimable page
// cache), which is less than MemTotal: for a ratio the bytes are the most
// the limit can be.
func (k dirtyKnob) toBytes(h *Host, v string) (uint64, bool) {
	if _, ok := strings.CutSuffix(v, "%"); ok {
		return shareOfMemory(h, v)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
func (k dirtyKnob) validate(v string) error {
	if v == "auto" {
		return nil
	}
	_, _, err := parseDirty(v)
	return err
}

// autoDirty chooses the dirty limits from memory size: ratios on machines
// up to 64 GiB (the chapter's 20%/10%), else byte limits of 1/64 of memory
// capped at 32 GiB (8 GiB background), the chapter's numbers for big nodes:
// 20% of 2 TiB would let 400 GiB of dirty pages pile up before writers block.
func autoDirty(mem uint64, background bool) string {
	if mem <= 64<<30 {
		if background {
			return "10%"
		}
		return "20%"
	}
	b := min(mem/64, uint64(32)<<30)
	if background {
		b /= 4
	}
	return strconv.FormatUint(b, 10)
}

func (k dirtyKnob) resolve(h *Host, v string) (string, error) {
	if v == "auto" {
		mem, err := h.MemTotal()
		if err != nil {
			return "", fmt.Errorf("auto needs the memory size: %w", err)
		}
		return autoDirty(mem, k.background), nil
	}
	n, ratio, err := parseDirty(v)
	if err != nil {
		return "", err
	}
	if ratio {
		return strconv.FormatUint(n, 10) + "%", nil
	}
	return strconv.FormatUint(n, 10), nil
}
func (k dirtyKnob) equal(c, w string) bool { return c == w }
func (k dirtyKnob) fix(_ *Host, w string) []string {
	rk, bk := k.keys()
	key, val := bk, w
	if r, ok := strings.CutSuffix(w, "%"); ok {
		key, val = rk, r
	}
	return []string{fixEcho(sysctlPath(key), val), fixWrite(fileSysctl)}
}

// KindDirty is the journal step kind of a vm.dirty_* change (see
// revertDirty).
const KindDirty = "tune.dirty"

func (k dirtyKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	rk, bk := k.keys()
	rp, bp := sysctlPath(rk), sysctlPath(bk)
	key, val := bk, w
	if r, ok := strings.CutSuffix(w, "%"); ok {
		key, val = rk, r
	}
	p := persist{sysctl: [][2]string{{key, val}}}
	if o.Current == w {
		return nil, p, nil
	}
	rRaw, err := h.FS.ReadFile(rp)
	if err != nil {
		return nil, p, err
	}
	bRaw, err := h.FS.ReadFile(bp)
	if err != nil {
		return nil, p, err
	}
	step := journal.Step{Kind: KindDirty, ID: key, Path: sysctlPath(key), Original: o.Current, New: w,
		Data: map[string]string{"ratioPath": rp, "bytesPath": bp, "ratioRaw": string(rRaw), "bytesRaw": string(bRaw)}}
	apply := func(context.Context) error {
		if err := h.FS.WriteString(sysctlPath(key), val); err != nil {
			return err
		}
		// The kernel zeroes the other file of the pair; a captured tree
		// has plain files, so do it by hand there.
		other := bp
		if key == bk {
			other = rp
		}
		if !h.FS.IsKernelFile(other) {
			return h.FS.WriteString(other, "0\n")
		}
		return nil
	}
	return []change{{Desc: fmt.Sprintf("sysctl -w %s=%s", key, val), Step: step, Apply: apply}}, p, nil
}

// revertDirty puts a vm.dirty_* pair back. On a kernel, writing the original
// ratio (or bytes) makes the kernel zero the other file; a write of 0 to a
// *_bytes file is silently ignored (proc_doulongvec_minmax skips values
// under dirty_bytes_min, two pages), so a ratio is restored through the
// ratio file - written twice when unchanged, since dirty_ratio_handler only
// zeroes the bytes value when the ratio changes. In a captured tree both
// files get their exact bytes back.
func revertDirty(_ context.Context, fsys *hostfs.FS, s journal.Step) error {
	rp, bp := s.Data["ratioPath"], s.Data["bytesPath"]
	if rp == "" || bp == "" {
		return errors.New("tune.dirty step without ratioPath/bytesPath")
	}
	// Write only what differs: a change that failed (or never happened)
	// left the files as they were, and one of them may refuse writes.
	same := func(p, raw string) bool {
		b, err := fsys.ReadFile(p)
		return err == nil && string(b) == raw
	}
	rSame, bSame := same(rp, s.Data["ratioRaw"]), same(bp, s.Data["bytesRaw"])
	if rSame && bSame {
		return nil
	}
	if !fsys.IsKernelFile(rp) {
		if !rSame {
			if err := fsys.WriteString(rp, s.Data["ratioRaw"]); err != nil {
				return err
			}
		}
		if !bSame {
			return fsys.WriteString(bp, s.Data["bytesRaw"])
		}
		return nil
	}
	if r, ok := strings.CutSuffix(s.Original, "%"); ok {
		if cur, _ := fsys.ReadString(bp); cur != "0" {
			n, _ := strconv.Atoi(r)
			other := n + 1
			if n >= 100 {
				other = n - 1
			}
			if err := fsys.WriteString(rp, strconv.Itoa(other)); err != nil {
				return err
			}
		}
		return fsys.WriteString(rp, r)
	}
	return fsys.WriteString(bp, s.Original)
}

// ---- hugepages per NUMA node ----

// hugepagesKnob reserves the same number of default-size (2 MiB) hugepages
// on every NUMA node that has CPUs, so each GPU's local node has its pool.
type hugepagesKnob struct{}

func (hugepagesKnob) files(h *Host) ([]string, error) {
	names, err := h.FS.ReadDirNames("/sys/devices/system/node")
	if err != nil {
		return nil, absentf("no NUMA sysfs (/sys/devices/system/node)")
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, "node") {
			continue
		}
		if _, err := strconv.Atoi(n[4:]); err != nil {
			continue
		}
		f := "/sys/devices/system/node/" + n + "/hugepages/hugepages-2048kB/nr_hugepages"
		if h.FS.Exists(f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, absentf("no 2 MiB hugepage pools per node")
	}
	sort.Slice(out, func(i, j int) bool { return nodeNum(out[i]) < nodeNum(out[j]) })
	return out, nil
}

func nodeNum(p string) int {
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, "node") {
			if n, err := strconv.Atoi(part[4:]); err == nil {
				return n
			}
		}
	}
	return -1
}

func (k hugepagesKnob) read(_ context.Context, h *Host) (observation, error) {
	fs, err := k.files(h)
	if err != nil {
		return observation{}, err
	}
	var parts []string
	same := true
	first := ""
	for i, f := range fs {
		v, err := h.FS.ReadString(f)
		if err != nil {
			return observation{}, err
		}
		if i == 0 {
			first = v
		} else if v != first {
			same = false
		}
		parts = append(parts, fmt.Sprintf("node%d=%s", nodeNum(f), v))
	}
	o := observation{Current: first, HasBoot: true}
	if !same {
		o.Current = strings.Join(parts, ",")
	}
	tf := h.tmpfilesWrites()
	bootSame := true
	bootFirst := ""
	for i, f := range fs {
		v := tf[f]
		if i == 0 {
			bootFirst = v
		} else if v != bootFirst {
			bootSame = false
		}
	}
	if bootSame {
		o.Boot = bootFirst
	}
	return o, nil
}
func (hugepagesKnob) validate(v string) error {
	return spec{kind: "int", min: 0, max: 1 << 30}.validate(v)
}
func (hugepagesKnob) resolve(_ *Host, v string) (string, error) { return v, nil }
func (hugepagesKnob) equal(c, w string) bool                    { return c == w }
func (hugepagesKnob) fix(_ *Host, w string) []string {
	return []string{fixEcho("/sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages", w), fixWrite(fileTmpfiles)}
}
func (k hugepagesKnob) changes(h *Host, _ observation, w string) ([]change, persist, error) {
	fs, err := k.files(h)
	if err != nil {
		return nil, persist{}, err
	}
	var p persist
	var cs []change
	for _, f := range fs {
		p.tmpfiles = append(p.tmpfiles, [2]string{f, w})
		v, err := h.FS.ReadString(f)
		if err != nil {
			return nil, p, err
		}
		if v != w {
			cs = append(cs, valueChange(h, "hugepages", f, v, w))
		}
	}
	return cs, p, nil
}

// ---- CPU isolation from topology ----

// housekeeping returns the CPUs kept for the kernel and system services
// when isolating: on every NUMA node with CPUs, the first 1/8 of its
// physical cores (at least one), with all their SMT siblings. The rest are
// isolated for pinned data-loader and communication threads.
func housekeeping(h *Host) (hk, iso cpuset.CPUSet, err error) {
	if h.Topo == nil {
		return cpuset.New(), cpuset.New(), fmt.Errorf("needs the topology: %w", h.TopoErr)
	}
	// The rule lives in topo, so that 'gpunode bind' recognises the
	// isolation this profile sets and places ranks on it.
	return h.Topo.PipelineSplit()
}

func autoIsolated(h *Host) (string, error) {
	_, iso, err := housekeeping(h)
	if err != nil {
		return "", err
	}
	return iso.String(), nil
}

func autoHousekeeping(h *Host) (string, error) {
	hk, _, err := housekeeping(h)
	if err != nil {
		return "", err
	}
	return hk.String(), nil
}
