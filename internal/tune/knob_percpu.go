package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// cpuDirs lists /sys/devices/system/cpu/cpuN directories, in CPU order,
// listing the directory once per Host (every per-CPU knob walks them).
// The slice is shared: callers do not change it.
func cpuDirs(h *Host) ([]string, error) {
	if !h.cpuDirsRead {
		h.cpuDirsRead = true
		h.cpuDirs, h.cpuDirsErr = listCPUDirs(h)
	}
	return h.cpuDirs, h.cpuDirsErr
}

func listCPUDirs(h *Host) ([]string, error) {
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
	exact
	rel   string // below cpuN: "cpufreq/scaling_governor"
	avail string // file listing the accepted values, if any
	spec  spec
}

func (k perCPUKnob) glob() string { return "/sys/devices/system/cpu/cpu*/" + k.rel }

// cpuValue is one CPU's value of a per-CPU knob, as read.
type cpuValue struct {
	dir string // /sys/devices/system/cpu/cpuN
	val string // the value, trimmed
	raw []byte // the file's bytes (a journal step's OriginalRaw)
}

// values reads the knob of every CPU that has it, in CPU order.
func (k perCPUKnob) values(h *Host) ([]cpuValue, error) {
	dirs, err := cpuDirs(h)
	if err != nil {
		return nil, err
	}
	var out []cpuValue
	for _, d := range dirs {
		b, err := h.FS.ReadFile(d + "/" + k.rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, cpuValue{dir: d, val: strings.TrimSpace(string(b)), raw: b})
	}
	if len(out) == 0 {
		return nil, absentf("no CPU has %s (no cpufreq driver, or a VM)", k.rel)
	}
	return out, nil
}

func (k perCPUKnob) read(_ context.Context, h *Host) (observation, error) {
	vals, err := k.values(h)
	if err != nil {
		return observation{}, err
	}
	count := map[string]int{}
	for _, v := range vals {
		count[v.val]++
	}
	// The values go with the observation: changes (apply's plan and the
	// fixes' file contents) work from them and read no file again.
	o := observation{HasBoot: true, perCPU: vals}
	if len(count) == 1 {
		o.Current = vals[0].val
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
func (k perCPUKnob) fix(_ *Host, w string) []string {
	return []string{fixEcho(k.glob(), w), fixWrite(fileTmpfiles)}
}

// persists implements persister: one tmpfiles line for every CPU.
func (k perCPUKnob) persists(w string) persist {
	return persist{tmpfiles: [][2]string{{k.glob(), w}}}
}

func (k perCPUKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	p := k.persists(w)
	if o.perCPU == nil {
		// read keeps at least one CPU's value or fails, and a failed
		// read's setting never gets here (plan, profilePersist).
		return nil, p, fmt.Errorf("%s: no per-CPU values read", k.rel)
	}
	var cs []change
	for _, v := range o.perCPU {
		if v.val != w {
			cs = append(cs, valueChangeRaw(h, path.Base(v.dir)+"/"+k.rel, v.dir+"/"+k.rel, v.val, v.raw, w))
		}
	}
	return cs, p, nil
}
