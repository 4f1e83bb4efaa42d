package topology

import (
	"slices"
	"testing"
)

func TestBitmask(t *testing.T) {
	m, err := NewBitmask(0, 2, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count() != 4 || !m.IsSet(3) || m.IsSet(1) || m.IsSet(64) || m.IsSet(-1) {
		t.Errorf("mask %b", m)
	}
	if got := m.String(); got != "0,2-3,5" {
		t.Errorf("String = %q", got)
	}
	if got := m.Bits(); !slices.Equal(got, []int{0, 2, 3, 5}) {
		t.Errorf("Bits = %v", got)
	}
	if _, err := NewBitmask(64); err == nil || err.Error() != "NUMA id 64 beyond 63" {
		t.Errorf("err = %v", err)
	}
	if _, err := NewBitmask(-1); err == nil {
		t.Error("negative id accepted")
	}
	// Narrower: fewer bits, then lower value (kubelet's IsNarrowerThan).
	a, b, c := MustBitmask(1), MustBitmask(0, 1), MustBitmask(0, 2)
	if !a.IsNarrowerThan(b) || b.IsNarrowerThan(a) || !b.IsNarrowerThan(c) || c.IsNarrowerThan(b) || b.IsNarrowerThan(b) {
		t.Error("IsNarrowerThan")
	}
	if Bitmask(0).String() != "" || Bitmask(0).Bits() != nil {
		t.Error("empty mask")
	}
}

func TestIterateBitmasks(t *testing.T) {
	var got []Bitmask
	IterateBitmasks([]int{0, 2, 5}, func(m Bitmask) { got = append(got, m) })
	want := []Bitmask{MustBitmask(0), MustBitmask(2), MustBitmask(5), MustBitmask(0, 2), MustBitmask(0, 5), MustBitmask(2, 5), MustBitmask(0, 2, 5)}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFlatten(t *testing.T) {
	got := Flatten([]map[string][]Hint{
		{},
		{"b": nil, "a": {}, "c": {NewHint(true, 1)}},
	})
	want := []ResourceHints{
		{0, "", []Hint{AnyHint(true)}},
		{1, "a", []Hint{AnyHint(false)}},
		{1, "b", []Hint{AnyHint(true)}},
		{1, "c", []Hint{NewHint(true, 1)}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].Provider != want[i].Provider || got[i].Resource != want[i].Resource || len(got[i].Hints) != len(want[i].Hints) || !got[i].Hints[0].IsEqual(want[i].Hints[0]) {
			t.Errorf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
