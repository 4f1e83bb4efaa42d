package bind

import (
	"errors"
	"testing"
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
	for _, s := range []string{"0,1", "GPU-1234,3", "MIG-abc", "", ",", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCUDAVisibleDevices(s)
		if err != nil && !errors.Is(err, ErrInput) {
			t.Fatalf("error %v is not an input error", err)
		}
		for _, v := range got {
			if v.UUID == "" && v.Index < 0 {
				t.Fatalf("%q: entry %+v", s, v)
			}
		}
	})
}

func FuzzParseTaskStat(f *testing.F) {
	f.Add("4242 (python) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 -5 3 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 0 0 17 57 0 0 0 0 0")
	f.Add("1 ((x) y)) R")
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseTaskStat([]byte(s))
		if err == nil && th.Policy == "" {
			t.Fatalf("%q: no policy", s)
		}
	})
}

func FuzzParseNumaMaps(f *testing.F) {
	f.Add("55d0 prefer:1 file=/x N1=900\n7ffd bind:0-1 stack N0=3 N1=4\n")
	f.Add("x interleave=static:0-3 N99999999999=1\n")
	f.Fuzz(func(t *testing.T, s string) {
		pol, pages := ParseNumaMaps([]byte(s))
		if pol.Nodes == nil {
			t.Fatal("nil nodes")
		}
		for i := 1; i < len(pages); i++ {
			if pages[i].Node <= pages[i-1].Node {
				t.Fatalf("pages not sorted: %+v", pages)
			}
		}
	})
}
