package tune

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// hugepagesKnob reserves the same number of default-size (2 MiB) hugepages
// on every NUMA node that has CPUs, so each GPU's local node has its pool.
type hugepagesKnob struct{ exact }

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
	return spec{kind: valInt, min: 0, max: 1 << 30}.validate(v)
}
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
