package topo

import (
	"encoding/json"
	"testing"
)

func TestParsePCIeSpeed(t *testing.T) {
	for _, c := range []struct {
		in   string
		gts  float64
		gen  int
		name string
	}{
		{"2.5 GT/s PCIe", 2.5, 1, "Gen1"},
		{"2.5 GT/s", 2.5, 1, "Gen1"}, // kernels before 5.x print no "PCIe"
		{"5.0 GT/s PCIe", 5, 2, "Gen2"},
		{"5 GT/s", 5, 2, "Gen2"},
		{"8.0 GT/s PCIe", 8, 3, "Gen3"},
		{"16.0 GT/s PCIe", 16, 4, "Gen4"},
		{"32.0 GT/s PCIe", 32, 5, "Gen5"},
		{"64.0 GT/s PCIe", 64, 6, "Gen6"},
		{"128.0 GT/s PCIe", 128, 7, "Gen7"},
		{"256.0 GT/s PCIe", 256, 7, "Gen7"},
		{" 16.0 GT/s PCIe\n", 16, 4, "Gen4"},
		// Not a rate: the text stays, the numbers are 0.
		{"Unknown", 0, 0, ""},
		{"Unknown speed", 0, 0, ""},
		{"16.0", 0, 0, ""},           // no unit (tune's old parser took it as 16)
		{"16.0 Gb/s", 0, 0, ""},      // another unit
		{"0 GT/s PCIe", 0, 0, ""},    // not positive
		{"-8.0 GT/s PCIe", 0, 0, ""}, // not positive
		{"NaN GT/s", 0, 0, ""},
		{"", 0, 0, ""},
	} {
		got := ParsePCIeSpeed(c.in)
		if got.GTs != c.gts || got.Gen != c.gen || got.GenName() != c.name || got.Known() != (c.gts > 0) {
			t.Errorf("ParsePCIeSpeed(%q) = %+v (%q), want %g GT/s Gen%d", c.in, got, got.GenName(), c.gts, c.gen)
		}
	}
	for g, want := range map[int]float64{0: 0, 1: 2.5, 4: 16, 5: 32, 6: 64, 7: 128, 8: 0, -1: 0} {
		if got := GenGTs(g); got != want {
			t.Errorf("GenGTs(%d) = %g, want %g", g, got, want)
		}
	}
}

// The typed speed serialises as the kernel's text and is left out when
// absent, as the string field it replaced.
func TestPCIeSpeedJSON(t *testing.T) {
	d := PCIDevice{LinkSpeed: ParsePCIeSpeed("16.0 GT/s PCIe")}
	b, err := json.Marshal(struct {
		L PCIeSpeed `json:"linkSpeed,omitzero"`
		M PCIeSpeed `json:"maxLinkSpeed,omitzero"`
	}{d.LinkSpeed, d.MaxLinkSpeed})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"linkSpeed":"16.0 GT/s PCIe"}` {
		t.Errorf("JSON = %s", b)
	}
	var back PCIDevice
	if err := json.Unmarshal([]byte(`{"linkSpeed":"32.0 GT/s PCIe","maxLinkSpeed":"Unknown"}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.LinkSpeed.Gen != 5 || back.LinkSpeed.Text != "32.0 GT/s PCIe" || back.MaxLinkSpeed.Text != "Unknown" || back.MaxLinkSpeed.Known() {
		t.Errorf("decoded %+v / %+v", back.LinkSpeed, back.MaxLinkSpeed)
	}
	if err := json.Unmarshal([]byte(`{"linkSpeed":16}`), &back); err == nil {
		t.Error("a number for linkSpeed decoded")
	}
}

func FuzzParsePCIeSpeed(f *testing.F) {
	for _, s := range []string{"16.0 GT/s PCIe", "2.5 GT/s", "Unknown", "", "1e309 GT/s", "5 GT/sx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := ParsePCIeSpeed(s)
		if (p.GTs > 0) != (p.Gen > 0) || p.Gen < 0 || p.Gen > 7 {
			t.Fatalf("%q: %+v", s, p)
		}
		if p.Gen > 0 && (p.GTs > GenGTs(p.Gen) && p.Gen < 7 || p.Gen > 1 && p.GTs <= GenGTs(p.Gen-1)) {
			t.Fatalf("%q: %g GT/s is not Gen%d", s, p.GTs, p.Gen)
		}
		if again := ParsePCIeSpeed(p.Text); again != p {
			t.Fatalf("%q: reparse of text %+v != %+v", s, again, p)
		}
	})
}
