package bind

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

func TestParseSched(t *testing.T) {
	ok := map[string]Sched{"nice:-5": {SchedNice, -5}, "fifo:10": {SchedFIFO, 10}, "RR:99": {SchedRR, 99}, "batch": {SchedBatch, 0}, "idle": {SchedIdle, 0}, "other:3": {SchedOther, 3}}
	for in, want := range ok {
		got, err := ParseSched(in)
		if err != nil || *got != want {
			t.Errorf("ParseSched(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"nice", "nice:-21", "nice:20", "fifo", "fifo:0", "fifo:100", "rr:x", "deadline:1", "idle:1", ":5"} {
		if _, err := ParseSched(in); !errors.Is(err, ErrInput) {
			t.Errorf("ParseSched(%q): %v, want an input error", in, err)
		}
	}
	if s, err := ParseSched(""); s != nil || err != nil {
		t.Errorf("empty: %v %v", s, err)
	}
}

func TestParseCUDAVisibleDevices(t *testing.T) {
	got, err := ParseCUDAVisibleDevices(" 3, GPU-abcd ,MIG-x")
	if err != nil || len(got) != 3 || got[0].Index != 3 || got[1].UUID != "GPU-abcd" || got[2].UUID != "MIG-x" {
		t.Fatalf("%+v %v", got, err)
	}
	for _, in := range []string{"0,", "-1", "a", "0,,1"} {
		if _, err := ParseCUDAVisibleDevices(in); !errors.Is(err, ErrInput) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func FuzzParseSched(f *testing.F) {
	for _, s := range []string{"nice:-5", "fifo:10", "rr:10", "idle", "batch:19", "x:y:z", "fifo:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSched(s)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v is not an input error", err)
			}
			return
		}
		if got == nil {
			return
		}
		switch got.Policy {
		case SchedFIFO, SchedRR:
			if got.Value < 1 || got.Value > 99 {
				t.Fatalf("%q: priority %d accepted", s, got.Value)
			}
		default:
			if got.Value < -20 || got.Value > 19 {
				t.Fatalf("%q: nice %d accepted", s, got.Value)
			}
		}
		// Round trip.
		again, err := ParseSched(got.String())
		if err != nil || *again != *got {
			t.Fatalf("%q -> %v -> %v %v", s, got, again, err)
		}
	})
}

func FuzzParseCPUs(f *testing.F) {
	for _, s := range []string{"0-3,8", "", " 1 , 2-4 ", "3-1", "65536", "0-65535", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUs("--exclude-cpus", s)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v is not an input error", err)
			}
			return
		}
		again, err := ParseCPUs("--exclude-cpus", set.String())
		if err != nil || !again.Equals(set) {
			t.Fatalf("%q -> %s -> %s %v", s, set, again, err)
		}
	})
}

func FuzzParseCUDAVisibleDevices(f *testing.F) {
	for _, s := range []string{"0,1", "GPU-1234,3", "MIG-abc", "", ",", "-1", " 3, gpu-ab ,007", "+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCUDAVisibleDevices(s)
		if err != nil {
			if !errors.Is(err, ErrInput) || got != nil {
				t.Fatalf("%q: %v, %v: want an input error and no devices", s, got, err)
			}
			return
		}
		// A second reader: one entry per comma-separated field, in order.
		var fields []string
		if strings.TrimSpace(s) != "" {
			fields = strings.Split(strings.TrimSpace(s), ",")
		}
		if len(got) != len(fields) {
			t.Fatalf("%q: %d entries for %d fields", s, len(got), len(fields))
		}
		parts := make([]string, len(got))
		for i, v := range got {
			e := strings.TrimSpace(fields[i])
			switch {
			case v.UUID != "":
				if v.Index != -1 || v.UUID != e {
					t.Fatalf("%q: entry %d %+v, field %q", s, i, v, e)
				}
				parts[i] = v.UUID
			default:
				if n, err := strconv.Atoi(e); err != nil || n != v.Index || v.Index < 0 {
					t.Fatalf("%q: entry %d %+v, field %q", s, i, v, e)
				}
				parts[i] = strconv.Itoa(v.Index)
			}
		}
		// Render and parse again: the same devices.
		again, err := ParseCUDAVisibleDevices(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q -> %v -> %v, %v", s, got, again, err)
		}
	})
}

// policyNumber is policyAbbrev's inverse, written from sched(7): the
// number a stat line carries for each abbreviation.
func policyNumber(t *testing.T, abbrev string) int {
	switch abbrev {
	case "TS":
		return 0
	case "FF":
		return 1
	case "RR":
		return 2
	case "B":
		return 3
	case "IDL":
		return 5
	case "DLN":
		return 6
	}
	n, err := strconv.Atoi(strings.TrimPrefix(abbrev, "#"))
	if err != nil || !strings.HasPrefix(abbrev, "#") {
		t.Fatalf("policy %q is neither a name nor #<number>", abbrev)
	}
	return n
}

// taskStatLine renders th as a proc(5) stat line: comm in parentheses,
// nice in field 19, processor 39, rt_priority 40, policy 41, zeros
// elsewhere.
func taskStatLine(t *testing.T, th Thread) string {
	f := make([]string, 42)
	for i := range f {
		f[i] = "0"
	}
	f[1], f[2], f[3] = "1", "("+th.Comm+")", "S"
	f[19], f[39], f[40], f[41] = strconv.Itoa(th.Nice), strconv.Itoa(th.LastCPU), strconv.Itoa(th.RTPrio), strconv.Itoa(policyNumber(t, th.Policy))
	return strings.Join(f[1:], " ")
}

func FuzzParseTaskStat(f *testing.F) {
	f.Add("4242 (python) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 -5 3 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 0 0 17 57 0 0 0 0 0")
	f.Add("1 ((x) y)) R")
	f.Add("7 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -20 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 63 99 1073741825")
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseTaskStat([]byte(s))
		if err != nil {
			if !reflect.DeepEqual(th, Thread{}) {
				t.Fatalf("%q: %v with %+v", s, err, th)
			}
			return
		}
		if th.Policy == "" {
			t.Fatalf("%q: no policy", s)
		}
		// The comm is what lies between the first '(' and the last ')'.
		if i := strings.Index(s, "("+th.Comm+")"); i < 0 || i != strings.IndexByte(s, '(') {
			t.Fatalf("%q: comm %q", s, th.Comm)
		}
		// Render the thread as a stat line and parse again: the same thread.
		line := taskStatLine(t, th)
		again, err := ParseTaskStat([]byte(line))
		if err != nil || !reflect.DeepEqual(again, th) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, th, line, again, err)
		}
	})
}

// policyWord renders a memory policy as numa_maps writes it:
// mode[=flag|flag][:nodes].
func policyWord(p MemPolicyState) string {
	w := p.Mode
	if p.Flags != nil {
		w += "=" + strings.Join(p.Flags, "|")
	}
	if len(p.Nodes) > 0 {
		w += ":" + cpuset.New(p.Nodes...).String()
	}
	return w
}

func FuzzParseNumaMaps(f *testing.F) {
	f.Add("55d0 prefer:1 file=/x N1=900\n7ffd bind:0-1 stack N0=3 N1=4\n")
	f.Add("x interleave=static:0-3 N99999999999=1\n")
	f.Add("a default N1023=1 N1024=2 N-1=3 N0=x\nb default\nc bind:2\n")
	f.Fuzz(func(t *testing.T, s string) {
		pol, pages := ParseNumaMaps([]byte(s))
		if pol.Nodes == nil || pol.Mode == "" || pol.Mode == "prefer" {
			t.Fatalf("%q: policy %+v", s, pol)
		}
		for i, p := range pages {
			if p.Node < 0 || p.Node >= maxNodes || i > 0 && p.Node <= pages[i-1].Node {
				t.Fatalf("%q: pages not sorted or off the node range: %+v", s, pages)
			}
		}
		if !sort.IntsAreSorted(pol.Nodes) {
			t.Fatalf("%q: nodes %v not sorted", s, pol.Nodes)
		}
		// Render what was read as one numa_maps line and read it again:
		// the same policy and the same pages.
		var b strings.Builder
		b.WriteString("7f00 " + policyWord(pol))
		for _, p := range pages {
			fmt.Fprintf(&b, " N%d=%d", p.Node, p.Pages)
		}
		pol2, pages2 := ParseNumaMaps([]byte(b.String() + "\n"))
		if pol2.Mode != pol.Mode || !slices.Equal(pol2.Flags, pol.Flags) || !slices.Equal(pol2.Nodes, pol.Nodes) || !slices.Equal(pages2, pages) {
			t.Fatalf("%q -> %+v %v -> %q -> %+v %v", s, pol, pages, b.String(), pol2, pages2)
		}
	})
}
