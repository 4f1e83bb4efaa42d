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
	exact
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
