package tune

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// cpuidleKnob limits the deepest idle state: states whose exit latency
// exceeds the desired microseconds are disabled on every CPU (the runtime
// equivalent of processor.max_cstate, without holding /dev/cpu_dma_latency
// open in a daemon).
type cpuidleKnob struct{ exact }

type idleState struct {
	file    string // .../stateN/disable
	state   string // "state3"
	name    string
	latency int
	disable bool
}

// states reads every CPU's idle states, once per Host: read, fix and
// changes all walk them (a fresh Host, as Apply makes under the journal
// lock, reads them again). The states (names, exit latencies) belong to
// the cpuidle driver and are the same on every CPU of a server, so they
// are read once, from the first CPU that has them; only each CPU's
// disable flag is read per CPU (2,700 fewer reads on a 224-CPU host).
// The slice is shared: callers do not change it.
func (cpuidleKnob) states(h *Host) ([]idleState, error) {
	if !h.idleRead {
		h.idleRead = true
		h.idle, h.idleErr = readIdleStates(h)
	}
	return h.idle, h.idleErr
}

func readIdleStates(h *Host) ([]idleState, error) {
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
	return spec{kind: valInt, min: 0, max: 1000000}.validate(v)
}
func (cpuidleKnob) equal(c, w string) bool {
	ci, err1 := strconv.Atoi(c)
	wi, err2 := strconv.Atoi(w)
	return err1 == nil && err2 == nil && ci <= wi
}
func (k cpuidleKnob) fix(h *Host, w string) []string {
	// The states deeper than w, disabled on every CPU (what
	// 'cpupower idle-set -D' does, without needing cpupower installed).
	maxLatency, _ := strconv.Atoi(w)
	sts, err := k.states(h)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range sts {
		if s.latency > maxLatency && !seen[s.state] {
			seen[s.state] = true
			out = append(out, fixEcho("/sys/devices/system/cpu/cpu*/cpuidle/"+s.state+"/disable", "1"))
		}
	}
	return append(out, fixWrite(fileTmpfiles))
}
func (k cpuidleKnob) changes(h *Host, _ observation, w string) ([]change, persist, error) {
	maxLatency, _ := strconv.Atoi(w)
	sts, err := k.states(h)
	if err != nil {
		return nil, persist{}, err
	}
	var p persist
	seen := map[string]bool{}
	var cs []change
	for _, s := range sts {
		if s.latency <= maxLatency {
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
