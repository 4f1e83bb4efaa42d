package sysfmt

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"", nil, ""},
		{"\n", nil, ""},
		{"(null)\n", nil, ""},
		{"0", []int{0}, ""},
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"0-1,8,10-11\n", []int{0, 1, 8, 10, 11}, ""},
		{" 2 , 4-5 ", []int{2, 4, 5}, ""},
		{"3-1", nil, "reversed"},
		{"a", nil, "bad CPU id"},
		{"1,,2", nil, "empty element"},
		{"-1", nil, "bad CPU id"},
		{"70000", nil, "beyond"},
		{"0-70000", nil, "beyond"},
	} {
		got, err := ParseCPUList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCPUList(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCPUList(%q): %v", tc.in, err)
			continue
		}
		if !got.Equals(cpuset.New(tc.want...)) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseCPUMask(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"1", []int{0}, false},
		{"00000003\n", []int{0, 1}, false},
		{"ffffffff,00000001", append([]int{0}, rangeInts(32, 63)...), false},
		{"0x10", []int{4}, false},
		{"00000000,00000000,80000000", []int{31}, false},
		{"", nil, true},
		{"xyz", nil, true},
		{"1,,2", nil, true},
		{"123456789", nil, true},
	} {
		got, err := ParseCPUMask(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ParseCPUMask(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equals(cpuset.New(tc.want...)) {
			t.Errorf("ParseCPUMask(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatCPUMaskRoundTrip(t *testing.T) {
	for _, set := range []cpuset.CPUSet{cpuset.New(), cpuset.New(0), cpuset.New(1, 33, 64), cpuset.New(rangeInts(0, 223)...)} {
		s := FormatCPUMask(set, 224)
		if n := strings.Count(s, ",") + 1; n != 7 {
			t.Errorf("FormatCPUMask(%v) = %q: %d words, want 7", set, s, n)
		}
		back, err := ParseCPUMask(s)
		if err != nil || !back.Equals(set) {
			t.Errorf("round trip %v -> %q -> %v (%v)", set, s, back, err)
		}
	}
	if got := FormatCPUMask(cpuset.New(0, 1), 2); got != "00000003" {
		t.Errorf("FormatCPUMask = %q, want 00000003", got)
	}
}

func TestParseNodeMeminfo(t *testing.T) {
	in := "Node 0 MemTotal:       65793868 kB\nNode 0 MemFree:        1000 kB\nNode 0 HugePages_Total:     8\n"
	got, err := ParseNodeMeminfo([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got["MemTotal"] != 65793868*1024 || got["MemFree"] != 1000*1024 || got["HugePages_Total"] != 8 {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{"", "MemTotal: 5 kB", "Node 0 MemTotal: x kB", "Node 0 MemTotal: 5 MB", "Node 0 MemTotal: 99999999999999999999 kB"} {
		if _, err := ParseNodeMeminfo([]byte(bad)); err == nil {
			t.Errorf("ParseNodeMeminfo(%q): want error", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := ParseMeminfo([]byte("MemTotal:       1024 kB\nHugePages_Total:   4\n\nMemFree: 512 kB\n"))
	if err != nil || got["MemTotal"] != 1<<20 || got["HugePages_Total"] != 4 || got["MemFree"] != 512<<10 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "MemTotal 5 kB", "MemTotal: x kB", "MemTotal: 5 MB", "MemTotal: 5 kB extra"} {
		if _, err := ParseMeminfo([]byte(bad)); err == nil {
			t.Errorf("ParseMeminfo(%q): want error", bad)
		}
	}
}

func FuzzParseMeminfo(f *testing.F) {
	f.Add([]byte("MemTotal:       65793868 kB\nHugePages_Total: 4\n"))
	f.Add([]byte("X: 1 MB"))
	f.Add([]byte(" a b :7\n: 3 kB\nMemFree: 18014398509481983 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMeminfo(b)
		if err != nil {
			return
		}
		if len(m) == 0 {
			t.Fatal("no error and no fields")
		}
		// Render every field back, as a plain count or in kB when it is
		// a whole number of KiB, and parse again: the same fields.
		var out strings.Builder
		for k, v := range m {
			if strings.TrimSpace(k) != k || strings.Contains(k, ":") {
				t.Fatalf("key %q", k)
			}
			if v%1024 == 0 && v > 0 {
				fmt.Fprintf(&out, "%s:  %d kB\n", k, v/1024)
			} else {
				fmt.Fprintf(&out, "%s: %d\n", k, v)
			}
		}
		again, err := ParseMeminfo([]byte(out.String()))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", b, m, out.String(), again, err)
		}
	})
}

func TestParseDistances(t *testing.T) {
	got, err := ParseDistances("10 21 32\n")
	if err != nil || len(got) != 3 || got[0] != 10 || got[2] != 32 {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "10 x", "10 -1", "10 300"} {
		if _, err := ParseDistances(bad); err == nil {
			t.Errorf("ParseDistances(%q): want error", bad)
		}
	}
}

func rangeInts(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "(null)", "1,,2", "5-2", "0-65535", "0-16383", "0-16383,0", "0-999999999", "16383", " 7 , 1-2 ", "0-8191,0-8191,0-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUList(s)
		// The bound check and the parser agree on every input.
		if cerr := CheckCPUList(s); (cerr == nil) != (err == nil) || errors.Is(cerr, ErrCPUListBound) != errors.Is(err, ErrCPUListBound) {
			t.Fatalf("%q: CheckCPUList %v, ParseCPUList %v", s, cerr, err)
		}
		if err != nil {
			return
		}
		if set.Size() > MaxCPUID || (set.Size() > 0 && set.List()[set.Size()-1] >= MaxCPUID) {
			t.Fatalf("%q: %d CPUs up to %v, beyond the bound", s, set.Size(), set)
		}
		// A parsed list must survive formatting and parsing again.
		back, err := ParseCPUList(set.String())
		if err != nil || !back.Equals(set) {
			t.Fatalf("%q -> %v -> %v (%v)", s, set, back, err)
		}
	})
}

func FuzzParseCPUMask(f *testing.F) {
	for _, s := range []string{"ff", "ffffffff,00000001", "0x3", "", ",", "zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseCPUMask(s)
		if err != nil {
			return
		}
		back, err := ParseCPUMask(FormatCPUMask(set, 0))
		if err != nil || !back.Equals(set) {
			t.Fatalf("%q -> %v -> %v (%v)", s, set, back, err)
		}
	})
}

func FuzzParseNodeMeminfo(f *testing.F) {
	f.Add([]byte("Node 0 MemTotal:       65793868 kB\nNode 0 HugePages_Total: 4\n"))
	f.Add([]byte("Node 1 X: 1"))
	f.Add([]byte("Node 3 a::b:: 9 kB\nNode x : 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseNodeMeminfo(b)
		if err != nil {
			return
		}
		if len(m) == 0 {
			t.Fatal("no error and no fields")
		}
		// Render and parse again: the same fields.
		var out strings.Builder
		for k, v := range m {
			if strings.ContainsAny(k, " \t\n") {
				t.Fatalf("key %q", k)
			}
			if v%1024 == 0 && v > 0 {
				fmt.Fprintf(&out, "Node 0 %s:  %d kB\n", k, v/1024)
			} else {
				fmt.Fprintf(&out, "Node 0 %s: %d\n", k, v)
			}
		}
		again, err := ParseNodeMeminfo([]byte(out.String()))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", b, m, out.String(), again, err)
		}
	})
}

func FuzzParseDistances(f *testing.F) {
	f.Add("10 21")
	f.Add("10 x")
	f.Add(" 0\t255 +7 010 ")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDistances(s)
		if err != nil {
			return
		}
		// A second reader: one entry per field, each its decimal value.
		fields := strings.Fields(s)
		if len(d) != len(fields) {
			t.Fatalf("%q -> %v: %d entries for %d fields", s, d, len(d), len(fields))
		}
		parts := make([]string, len(d))
		for i, v := range d {
			if n, err := strconv.Atoi(fields[i]); err != nil || n != v || v < 0 || v > 255 {
				t.Fatalf("%q -> %v: entry %d is not field %q", s, d, i, fields[i])
			}
			parts[i] = strconv.Itoa(v)
		}
		// Render and parse again: the same distances.
		again, err := ParseDistances(strings.Join(parts, " "))
		if err != nil || !slices.Equal(again, d) {
			t.Fatalf("%q -> %v -> %v, %v", s, d, again, err)
		}
	})
}

func TestParseBDF(t *testing.T) {
	for in, want := range map[string]string{
		"0000:c1:00.0": "0000:c1:00.0", "00000000:C1:00.0": "0000:c1:00.0", "0009:01:1f.7": "0009:01:1f.7", " 0000:db:00.0\n": "0000:db:00.0",
	} {
		if got, err := ParseBDF(in); err != nil || got != want {
			t.Errorf("ParseBDF(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "c1:00.0", "00010000:01:00.0", "0000:18:20.0", "0000:18:00.8", "0000:100:00.0", "zz:zz:zz.z"} {
		if got, err := ParseBDF(bad); err == nil {
			t.Errorf("ParseBDF(%q) = %q, want error", bad, got)
		}
	}
}

func FuzzParseBDF(f *testing.F) {
	for _, s := range []string{"0000:c1:00.0", "00000000:C1:00.0", "c1:00.0", "::."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBDF(s)
		if err != nil {
			return
		}
		// The sysfs form is a fixed point.
		if again, err := ParseBDF(b); err != nil || again != b || len(b) != 12 {
			t.Fatalf("%q -> %q -> %q (%v)", s, b, again, err)
		}
	})
}
