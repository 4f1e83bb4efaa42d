package tune

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/journal"
)

// Competing tuners.
//
// Other daemons and boot services set the same knobs gpunode does and undo
// its settings, at boot or every few seconds:
//
//	tuner.tuned                  tuned's active profile (/etc/tuned/active_profile,
//	                             its tuned.conf and the profiles it includes):
//	                             [cpu] governor/energy_performance_preference/
//	                             energy_perf_bias, [vm] transparent_hugepages,
//	                             [sysctl] keys, against the profile's values
//	tuner.cpupower               cpupower.service (/etc/sysconfig/cpupower,
//	                             /etc/default/cpupower: CPUPOWER_START_OPTS
//	                             frequency-set -g) and Debian's cpufrequtils
//	                             (/etc/default/cpufrequtils GOVERNOR=) setting
//	                             another governor at boot
//	tuner.power-profiles-daemon  a running power-profiles-daemon whose profile
//	                             (/var/lib/power-profiles-daemon/state.ini) is not
//	                             performance: it rewrites EPP
//	tuner.irqbalance             irqbalance running or enabled after
//	                             'gpunode irq apply' placed IRQs, without
//	                             --banirq/--policyscript in IRQBALANCE_ARGS: it
//	                             moves them again every 10 s
//
// Each is absent when the tuner is not installed, ok when it does not
// conflict with the profile, drift with the conflicts and a fix otherwise.

// Check ids of the competing tuners.
const (
	CheckTuned    = "tuner.tuned"
	CheckCpupower = "tuner.cpupower"
	CheckPPD      = "tuner.power-profiles-daemon"
	CheckIRQBal   = "tuner.irqbalance"
	// LayerTuners is their layer.
	LayerTuners = "tuners"
)

const (
	fileTunedActive   = "/etc/tuned/active_profile"
	tunedGpunode      = "gpunode"
	fileTunedGpunode  = "/etc/tuned/gpunode/tuned.conf"
	filePPDState      = "/var/lib/power-profiles-daemon/state.ini"
	fileCpufrequtils  = "/etc/default/cpufrequtils"
	systemdWants      = "/etc/systemd/system/multi-user.target.wants/"
	maxTunedIncludes  = 8
	tunedProfileLimit = 16
)

var (
	tunedProfileDirs = []string{"/etc/tuned", "/etc/tuned/profiles", "/usr/lib/tuned", "/usr/lib/tuned/profiles"}
	cpupowerConfigs  = []string{"/etc/sysconfig/cpupower", "/etc/default/cpupower"}
	irqbalConfigs    = []string{"/etc/default/irqbalance", "/etc/sysconfig/irqbalance"}
)

// TunerSource reports the competing tuners of the host against a
// profile. JournalDir is where 'gpunode irq apply' journals ("" means
// journal.DefaultDir).
type TunerSource struct {
	Host       *Host
	Cat        *Catalogue
	Profile    *Profile
	JournalDir string
}

var _ check.Source = TunerSource{}

// Name implements check.Named.
func (TunerSource) Name() string { return "tuner" }

// Describe implements check.Describer.
func (TunerSource) Describe() []check.Description {
	return []check.Description{
		{ID: CheckTuned, Layer: LayerTuners, Title: "tuned's active profile does not undo the profile's settings"},
		{ID: CheckCpupower, Layer: LayerTuners, Title: "cpupower.service/cpufrequtils set no other governor at boot"},
		{ID: CheckPPD, Layer: LayerTuners, Title: "power-profiles-daemon does not rewrite EPP"},
		{ID: CheckIRQBal, Layer: LayerTuners, Title: "irqbalance does not move the IRQs 'gpunode irq apply' placed"},
	}
}

// Checks implements check.Source.
func (s TunerSource) Checks(ctx context.Context) ([]check.Check, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []check.Check{s.tuned(), s.cpupower(), s.ppd(), s.irqbalance()}
	for i := range out {
		out[i].Layer = LayerTuners
		for j, f := range out[i].Fix {
			out[i].Fix[j] = renderPaths(f, s.Host.FixRoot)
		}
	}
	return out, nil
}

// want is the resolved value the profile wants for setting id ("" when
// the profile does not manage it or reports it only).
func (s TunerSource) want(id string) string {
	v, ok := s.Profile.Settings[id]
	st := s.Cat.Get(id)
	if !ok || v == ValueReport || st == nil {
		return ""
	}
	w, err := st.knob.resolve(s.Host, v)
	if err != nil {
		return ""
	}
	return w
}

// enabled reports whether unit is enabled at boot: its link in
// multi-user.target.wants (a link into /usr/lib, which a captured tree may
// not hold, so the link itself counts).
func (s TunerSource) enabled(unit string) bool {
	_, err := s.Host.FS.Lstat(systemdWants + unit)
	return err == nil
}

func (s TunerSource) running(comm string) bool {
	on, _ := processRunning(s.Host, comm)
	return on
}

// ---- tuned ----

// tunedProfile is a tuned profile's settings after its includes: section
// -> key -> value, and where each value comes from.
type tunedProfile struct {
	values map[string]map[string]string
	source map[string]string // "section.key" -> file
	// order of the [sysctl] keys as tuned applies them: a child
	// overriding a key keeps its place, new keys go last.
	order map[string]int
	err   string
}

func (s TunerSource) tunedFile(name string) string {
	for _, d := range tunedProfileDirs {
		if p := d + "/" + name + "/tuned.conf"; s.Host.FS.Exists(p) {
			return p
		}
	}
	return ""
}

// loadTuned merges profile name (and, first, its includes) into tp.
func (s TunerSource) loadTuned(tp *tunedProfile, name string, depth int) {
	if depth > maxTunedIncludes {
		tp.err = "tuned profile includes nest deeper than 8"
		return
	}
	f := s.tunedFile(name)
	if f == "" {
		tp.err = fmt.Sprintf("tuned profile %q not found in %s", name, strings.Join(tunedProfileDirs, ", "))
		return
	}
	b, err := s.Host.FS.ReadFile(f)
	if err != nil {
		tp.err = err.Error()
		return
	}
	secs, keys := parseINIOrdered(b)
	for _, inc := range strings.Split(secs["main"]["include"], ",") {
		if inc = strings.TrimSpace(inc); inc != "" && !strings.Contains(inc, "$") {
			s.loadTuned(tp, inc, depth+1)
		}
	}
	for _, sk := range keys {
		sec, k := sk[0], sk[1]
		if sec == "main" {
			continue
		}
		if tp.values[sec] == nil {
			tp.values[sec] = map[string]string{}
		}
		tp.values[sec][k] = secs[sec][k]
		tp.source[sec+"."+k] = f
		if _, ok := tp.order[sec+"."+k]; !ok {
			tp.order[sec+"."+k] = len(tp.order)
		}
	}
}

// parseINI reads every section of a tuned.conf (keys as written).
func parseINI(b []byte) map[string]map[string]string {
	out, _ := parseINIOrdered(b)
	return out
}

// parseINIOrdered is parseINI that also returns the section and key of
// every assignment in file order (a key once, where it first appears).
func parseINIOrdered(b []byte) (map[string]map[string]string, [][2]string) {
	out := map[string]map[string]string{}
	var keys [][2]string
	sec := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sec = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || sec == "" {
			continue
		}
		if out[sec] == nil {
			out[sec] = map[string]string{}
		}
		k = strings.TrimSpace(k)
		if _, ok := out[sec][k]; !ok {
			keys = append(keys, [2]string{sec, k})
		}
		out[sec][k] = strings.TrimSpace(v)
	}
	return out, keys
}

// tunedConflict is one tuned setting that differs from the profile's.
type tunedConflict struct {
	section, key, tuned, want, setting, source string
}

func (s TunerSource) tuned() check.Check {
	c := check.Check{ID: CheckTuned, Expected: "no conflict",
		Reason: "tuned applies its profile at boot and whenever it starts, and keeps some settings (governor, EPP, THP, sysctls) as it likes: a tuned profile that disagrees undoes 'gpunode tune apply' at the next boot (seed 1.7)."}
	raw, err := s.Host.FS.ReadString(fileTunedActive)
	if err != nil {
		c.Status, c.Detail = check.Absent, "tuned is not installed ("+fileTunedActive+" does not exist)"
		return c
	}
	names := strings.Fields(raw)
	if len(names) == 0 {
		c.Status, c.Current, c.Detail = check.OK, "off", "no active tuned profile (tuned-adm off)"
		return c
	}
	if len(names) > tunedProfileLimit {
		names = names[:tunedProfileLimit]
	}
	c.Current = "profile " + strings.Join(names, " ")
	if !s.running("tuned") && !s.enabled("tuned.service") {
		c.Status, c.Detail = check.OK, "tuned is neither running nor enabled: its profile applies to nothing"
		return c
	}
	tp := &tunedProfile{values: map[string]map[string]string{}, source: map[string]string{}, order: map[string]int{}}
	for _, n := range names {
		s.loadTuned(tp, n, 0)
	}
	if tp.err != "" {
		c.Status, c.Detail = check.Error, tp.err
		return c
	}
	var cs []tunedConflict
	add := func(sec, key, setting, want string, same func(tuned string) bool) {
		v, ok := tp.values[sec][key]
		if !ok || want == "" || same(v) {
			return
		}
		cs = append(cs, tunedConflict{sec, key, v, want, setting, tp.source[sec+"."+key]})
	}
	first := func(v string) string { x, _, _ := strings.Cut(v, "|"); return strings.TrimSpace(x) }
	eq := func(w string) func(string) bool { return func(v string) bool { return first(v) == w } }
	gov := s.want("cpu.governor")
	add("cpu", "governor", "cpu.governor", gov, eq(gov))
	epp := s.want("cpu.epp")
	add("cpu", "energy_performance_preference", "cpu.epp", epp, eq(epp))
	if epp == "performance" {
		add("cpu", "energy_perf_bias", "cpu.epp", epp, eq("performance"))
	}
	thp := s.want("mm.thp.enabled")
	add("vm", "transparent_hugepages", "mm.thp.enabled", thp, eq(thp))
	add("vm", "transparent_hugepage", "mm.thp.enabled", thp, eq(thp))
	for _, key := range sortedKeys(tp.values["sysctl"]) {
		id, want := key, ""
		switch key {
		case "vm.dirty_ratio", "vm.dirty_bytes":
			id = "vm.dirty"
		case "vm.dirty_background_ratio", "vm.dirty_background_bytes":
			id = "vm.dirty-background"
		}
		want = s.want(id)
		if want == "" {
			continue
		}
		if id != key {
			rk, bk := dirtyKnob{background: id == "vm.dirty-background"}.keys()
			// The kernel keeps whichever of the pair tuned writes last:
			// only that one counts, and it must be gpunode's key and
			// value.
			other := bk
			if key == bk {
				other = rk
			}
			if o, ok := tp.order["sysctl."+other]; ok && o > tp.order["sysctl."+key] {
				continue
			}
			r, isRatio := strings.CutSuffix(want, "%")
			wk, wv := bk, want
			if isRatio {
				wk, wv = rk, r
			}
			add("sysctl", key, id, wk+"="+wv, func(v string) bool { return key == wk && normSpace(v) == wv })
			continue
		}
		add("sysctl", key, id, want, func(v string) bool { return normSpace(v) == want })
	}
	if len(cs) == 0 {
		c.Status, c.Detail = check.OK, "no setting of the tuned profile conflicts with the profile's"
		return c
	}
	c.Status = check.Drift
	var parts []string
	for _, x := range cs {
		parts = append(parts, fmt.Sprintf("[%s] %s=%s (%s wants %s; %s)", x.section, x.key, x.tuned, x.setting, x.want, x.source))
	}
	c.Detail = "tuned will undo: " + strings.Join(parts, "; ")
	c.Fix = s.tunedFix(names, cs)
	return c
}

// tunedFix keeps tuned but activates a child profile that includes the
// active one and overrides every conflicting value with the profile's.
func (s TunerSource) tunedFix(names []string, cs []tunedConflict) []string {
	if len(names) == 1 && names[0] == tunedGpunode {
		// Already gpunode's child profile: rewrite it with the parent it
		// had.
		b, _ := s.Host.FS.ReadFile(fileTunedGpunode)
		if inc := parseINI(b)["main"]["include"]; inc != "" {
			names = strings.Split(inc, ",")
		}
	}
	lines := []string{"# Written by gpunode: the active tuned profile, with the values gpunode's profile " + s.Profile.Name + " sets.",
		"[main]", "summary=" + strings.Join(names, ",") + " with gpunode's settings", "include=" + strings.Join(names, ",")}
	bySec := map[string][]string{}
	for _, x := range cs {
		v := x.want
		key := x.key
		switch {
		case x.section == "sysctl" && strings.Contains(x.want, "="):
			key, v, _ = strings.Cut(x.want, "=")
		case x.key == "energy_perf_bias":
			key = "energy_performance_preference"
		}
		bySec[x.section] = append(bySec[x.section], key+"="+v)
	}
	for _, sec := range sortedKeys(bySec) {
		lines = append(lines, "["+sec+"]")
		seen := map[string]bool{}
		for _, l := range bySec[sec] {
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	return []string{writeFileTemplate(fileTunedGpunode, []byte(strings.Join(lines, "\n")+"\n")),
		"tuned-adm profile " + tunedGpunode,
		fixNote("or stop tuned from applying any profile: tuned-adm off")}
}

// ---- cpupower / cpufrequtils ----

func (s TunerSource) cpupower() check.Check {
	c := check.Check{ID: CheckCpupower, Expected: "no other governor",
		Reason: "cpupower.service (RHEL's kernel-tools) and cpufrequtils (Debian) set a governor at every boot, after systemd-tmpfiles wrote gpunode's (seed 1.7)."}
	gov := s.want("cpu.governor")
	type src struct{ file, gov, fix string }
	var found []src
	for _, f := range cpupowerConfigs {
		b, err := s.Host.FS.ReadFile(f)
		if err != nil {
			continue
		}
		opts := parseShellVars(b, map[string]string{})["CPUPOWER_START_OPTS"]
		g := ""
		w := strings.Fields(opts)
		for i := 0; i+1 < len(w); i++ {
			if w[i] == "-g" || w[i] == "--governor" {
				g = w[i+1]
			}
		}
		if !s.enabled("cpupower.service") {
			g = "" // installed, not enabled: sets nothing
		}
		found = append(found, src{f, g, `sed -i -E 's/(-g|--governor)[[:space:]]+[^[:space:]"]+/\1 ` + gov + `/' ` + fixPath(f)})
	}
	if b, err := s.Host.FS.ReadFile(fileCpufrequtils); err == nil {
		g := parseShellVars(b, map[string]string{})["GOVERNOR"]
		found = append(found, src{fileCpufrequtils, g, `sed -i -E 's/^GOVERNOR=.*/GOVERNOR="` + gov + `"/' ` + fixPath(fileCpufrequtils)})
	}
	if len(found) == 0 {
		c.Status, c.Detail = check.Absent, "neither cpupower.service nor cpufrequtils is configured"
		return c
	}
	var bad []string
	var cur []string
	for _, x := range found {
		if x.gov == "" {
			continue
		}
		cur = append(cur, x.gov+" ("+x.file+")")
		if gov != "" && x.gov != gov {
			bad = append(bad, x.file+" sets governor "+x.gov)
			c.Fix = append(c.Fix, x.fix)
		}
	}
	c.Current = strings.Join(cur, ", ")
	if c.Current == "" {
		c.Current = "sets no governor"
	}
	if len(bad) == 0 {
		c.Status = check.OK
		return c
	}
	c.Status = check.Drift
	c.Detail = "at boot " + strings.Join(bad, "; ") + "; cpu.governor wants " + gov
	return c
}

// ---- power-profiles-daemon ----

func (s TunerSource) ppd() check.Check {
	c := check.Check{ID: CheckPPD, Expected: "performance or not running",
		Reason: "power-profiles-daemon writes EPP (and the platform profile) for its active profile: balanced or power-saver undoes cpu.epp=performance (seed 1.7)."}
	running := s.running("power-profiles-daemon")
	state, err := s.Host.FS.ReadFile(filePPDState)
	if !running && err != nil {
		c.Status, c.Detail = check.Absent, "power-profiles-daemon is not running"
		return c
	}
	prof := parseINI(state)["State"]["Profile"]
	if prof == "" {
		prof = "balanced" // its default
	}
	c.Current = prof
	epp := s.want("cpu.epp")
	switch {
	case !running:
		c.Status, c.Detail = check.OK, "not running"
	case epp == "" || prof == "performance":
		c.Status = check.OK
	default:
		c.Status = check.Drift
		c.Detail = fmt.Sprintf("power-profiles-daemon runs with profile %s: it sets EPP, cpu.epp wants %s", prof, epp)
		c.Fix = []string{"powerprofilesctl set performance", fixNote("or, on a server, stop it: systemctl disable --now power-profiles-daemon")}
	}
	return c
}

// ---- irqbalance ----

func (s TunerSource) irqbalance() check.Check {
	c := check.Check{ID: CheckIRQBal, Expected: "not moving gpunode's IRQs",
		Reason: "irqbalance rebalances IRQs every 10 s: the placement 'gpunode irq apply' wrote lasts until its next pass unless its IRQs are banned (seed 1.4.3)."}
	running, enabled := s.running("irqbalance"), s.enabled("irqbalance.service")
	cfg, args := "", ""
	for _, f := range irqbalConfigs {
		if b, err := s.Host.FS.ReadFile(f); err == nil {
			cfg, args = f, parseShellVars(b, map[string]string{})["IRQBALANCE_ARGS"]
			break
		}
	}
	if !running && !enabled && cfg == "" {
		c.Status, c.Detail = check.Absent, "irqbalance is not installed"
		return c
	}
	c.Current = "stopped"
	if running {
		c.Current = "running"
	} else if enabled {
		c.Current = "enabled (starts at boot)"
	}
	banned := strings.Contains(args, "--banirq") || strings.Contains(args, "--policyscript") || strings.Contains(args, "-i ") || strings.Contains(args, "-l ")
	applied := s.irqApplied()
	switch {
	case !running && !enabled:
		c.Status = check.OK
	case banned:
		c.Status, c.Detail = check.OK, "IRQBALANCE_ARGS bans IRQs ("+cfg+")"
	case !applied:
		c.Status, c.Detail = check.OK, "no 'gpunode irq apply' placement to undo; after one, ban its IRQs ('gpunode irq plan' prints IRQBALANCE_ARGS) or stop irqbalance"
	default:
		c.Status = check.Drift
		c.Detail = "'gpunode irq apply' placed IRQs and irqbalance runs without banning them: it moves them within 10 s"
		c.Fix = []string{"systemctl disable --now irqbalance",
			fixNote("or keep it and ban gpunode's IRQs: IRQBALANCE_ARGS as 'gpunode irq plan' prints it, in " + orDash(cfg))}
	}
	return c
}

// irqApplied reports whether a committed 'gpunode irq apply' transaction
// is in the journal (its placement is live).
func (s TunerSource) irqApplied() bool {
	dir := s.JournalDir
	if dir == "" {
		dir = journal.DefaultDir
	}
	infos, err := journal.List(s.Host.FS, dir)
	if err != nil {
		return false
	}
	for _, in := range infos {
		// Rolled-back transactions change state; committed ones are live.
		if in.Err == nil && in.Tx.Meta.Owner == "irq" && in.Tx.State == journal.StateCommitted {
			return true
		}
	}
	return false
}
