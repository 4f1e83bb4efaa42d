package check

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	if got := (Check{ID: "gpu.persistence", Subject: "gpu7"}).Key(); got != "gpu.persistence/gpu7" {
		t.Errorf("Key = %q", got)
	}
	if got := (Check{ID: "vm.swappiness"}).Key(); got != "vm.swappiness" {
		t.Errorf("Key = %q", got)
	}
}

// TestStatuses pins the statuses and their alert column to the README's
// table, as literals: ok no, drift yes, pending-reboot no (reboot), absent
// no, error yes, info no.
func TestStatuses(t *testing.T) {
	alerts := []struct {
		status  string
		alert   bool
		summary string // the JSON field that counts it
	}{
		{"ok", false, `"ok":1`},
		{"drift", true, `"drift":1`},
		{"pending-reboot", false, `"pendingReboot":1`},
		{"absent", false, `"absent":1`},
		{"error", true, `"error":1`},
		{"info", false, `"info":1`},
	}
	var want []Status
	for _, a := range alerts {
		want = append(want, Status(a.status))
	}
	if !reflect.DeepEqual(Statuses(), want) {
		t.Errorf("Statuses = %v, want %v", Statuses(), want)
	}
	for _, a := range alerts {
		s := Status(a.status)
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
		if s.Failing() != a.alert {
			t.Errorf("%s.Failing = %v, want %v", s, s.Failing(), a.alert)
		}
		var sum Summary
		sum.Add(s)
		if sum.Failing() != a.alert {
			t.Errorf("Summary of one %s: Failing = %v, want %v", s, sum.Failing(), a.alert)
		}
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), a.summary) || strings.Count(string(b), ":1") != 1 {
			t.Errorf("Summary of one %s = %s, want %s and nothing else counted", s, b, a.summary)
		}
	}
	for _, bad := range []string{"warn", "OK", "Drift", "pending_reboot", ""} {
		if Status(bad).Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
	var none Summary
	if none.Failing() {
		t.Error("an empty summary is failing")
	}
}

func TestSelector(t *testing.T) {
	p := Check{ID: "gpu.persistence", Subject: "gpu7"}
	n := Check{ID: "vm.swappiness"}
	cases := []struct {
		sel  string
		p, n bool
	}{
		{"gpu.persistence", true, false},
		{"gpu.persistence/gpu7", true, false},
		{"gpu.persistence/gpu6", false, false},
		{"gpu.persistence/gpu[4-7]", true, false},
		{"gpu.*", true, false},
		{"*", true, true},
		{"vm.swappiness", false, true},
		{"vm.swappiness/x", false, false},
	}
	for _, c := range cases {
		s, err := ParseSelector(c.sel)
		if err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		if s.String() != c.sel {
			t.Errorf("String = %q, want %q", s.String(), c.sel)
		}
		if got := s.Match(p); got != c.p {
			t.Errorf("%s.Match(%s) = %v", c.sel, p.Key(), got)
		}
		if got := s.Match(n); got != c.n {
			t.Errorf("%s.Match(%s) = %v", c.sel, n.Key(), got)
		}
	}
	for _, bad := range []string{"", "/gpu7", "GPU.x", "gpu.[", "gpu.x/a b", "gpu x"} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("ParseSelector(%q) accepted", bad)
		}
	}
	infos := []Description{{ID: "gpu.persistence"}, {ID: "irq.off-node"}}
	if !MustSelector("gpu.*").Known(infos) || MustSelector("gpu.nope").Known(infos) {
		t.Error("Known wrong")
	}
}

func TestPolicy(t *testing.T) {
	cs := []Check{
		{ID: "gpu.persistence", Subject: "gpu6", Status: Drift},
		{ID: "gpu.persistence", Subject: "gpu7", Status: Drift},
		{ID: "gpu.ecc.mode", Subject: "gpu7", Status: Drift, Detail: "off"},
		{ID: "irq.off-node", Status: Error},
	}
	pol := Policy{
		{Selector: MustSelector("gpu.persistence/gpu7")},
		{Selector: MustSelector("gpu.ecc.*"), Value: ValueReport},
		{Selector: MustSelector("irq.off-node"), Value: ValueReport},
	}
	got := pol.Apply(cs)
	want := []Check{
		{ID: "gpu.persistence", Subject: "gpu6", Status: Drift},
		{ID: "gpu.ecc.mode", Subject: "gpu7", Status: OK, Detail: "report only; off"},
		{ID: "irq.off-node", Status: Error}, // report-only never hides an error
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Apply =\n%+v\nwant\n%+v", got, want)
	}
	if cs[2].Status != Drift {
		t.Error("Apply modified its input")
	}
	// The last matching rule decides: re-enable one subject.
	pol = append(pol, Rule{Selector: MustSelector("gpu.persistence/gpu7"), Value: ValueCheck})
	if got := pol.Apply(cs); len(got) != 4 {
		t.Errorf("re-enabled: %d checks", len(got))
	}
}

type fakeSource struct {
	name string
	cs   []Check
	err  error
}

func (f fakeSource) Name() string                            { return f.name }
func (f fakeSource) Checks(context.Context) ([]Check, error) { return f.cs, f.err }
func (f fakeSource) Describe() []Description {
	return []Description{{ID: f.name + ".x", Layer: f.name}}
}

func TestCollect(t *testing.T) {
	ctx := context.Background()
	got, err := Collect(ctx, fakeSource{name: "a", cs: []Check{{ID: "a.x", Status: OK}}}, nil, fakeSource{name: "gpu", err: errors.New("boom")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].ID != "gpu" || got[1].Status != Error || got[1].Detail != "gpu checks failed: boom" {
		t.Errorf("Collect = %+v", got)
	}
	if s := Summarize(got); s.OK != 1 || s.Error != 1 || !s.Failing() {
		t.Errorf("Summarize = %+v", s)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Collect(cctx, fakeSource{name: "a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Collect: %v", err)
	}
	if d := Describe(fakeSource{name: "a"}, fakeSource{name: "b"}); len(d) != 2 || d[1].ID != "b.x" {
		t.Errorf("Describe = %+v", d)
	}
}

func TestSortInfos(t *testing.T) {
	in := []Description{{ID: "z", Layer: "zz"}, {ID: "b", Layer: "gpu"}, {ID: "a", Layer: "gpu"}, {ID: "c", Layer: "cpu"}}
	SortInfos(in, []string{"cpu", "gpu"})
	var ids []string
	for _, i := range in {
		ids = append(ids, i.ID)
	}
	if !reflect.DeepEqual(ids, []string{"c", "a", "b", "z"}) {
		t.Errorf("order %v", ids)
	}
}

// TestSizesAndBounds: a size travels in bytes in JSON and reads in binary
// units in a table; a minimum reads ">= ..." and says so in JSON.
func TestSizesAndBounds(t *testing.T) {
	c := Check{ID: "shm.size", Layer: "memory", Status: OK, Current: "100%", Expected: "50%",
		CurrentBytes: Bytes(64 << 30), ExpectedBytes: Bytes(32 << 30), Bound: Minimum}
	if got, want := c.CurrentText(), "100% of memory (64.0 GiB)"; got != want {
		t.Errorf("CurrentText = %q, want %q", got, want)
	}
	if got, want := c.ExpectedText(), ">= 50% of memory (32.0 GiB)"; got != want {
		t.Errorf("ExpectedText = %q, want %q", got, want)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"currentBytes":68719476736`, `"expectedBytes":34359738368`, `"bound":"minimum"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	for _, tc := range []struct {
		v    string
		b    *uint64
		want string
	}{
		{"33806057472", Bytes(33806057472), "31.5 GiB"},
		{"unlimited", nil, "unlimited"},
		{"65536", Bytes(64 << 20), "64.0 MiB"},
		{"soft=1 hard=2", Bytes(1 << 10), "soft=1 hard=2 (1.0 KiB)"},
		{"", nil, ""},
	} {
		if got := (Check{Current: tc.v, CurrentBytes: tc.b}).CurrentText(); got != tc.want {
			t.Errorf("CurrentText(%q, %v) = %q, want %q", tc.v, tc.b, got, tc.want)
		}
	}
	// Without a bound, the expected value prints as it is.
	if got := (Check{Expected: "0"}).ExpectedText(); got != "0" {
		t.Errorf("ExpectedText = %q", got)
	}
}
