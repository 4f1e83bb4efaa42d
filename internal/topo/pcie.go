package topo

import (
	"encoding/json"
	"strconv"
	"strings"
)

// PCIeSpeed is a PCIe link speed, parsed once at discovery from the
// kernel's text ("16.0 GT/s PCIe", "2.5 GT/s" on older kernels, "Unknown")
// so that every layer reads the same typed values. It serialises as the
// kernel's text, so JSON and YAML keep the string.
type PCIeSpeed struct {
	// Text is the speed as the kernel printed it, trimmed; "" when absent.
	Text string
	// GTs is the transfer rate in GT/s; 0 when absent or not a rate.
	GTs float64
	// Gen is the PCIe generation (1-7) of that rate; 0 when GTs is 0.
	Gen int
}

// pcieGenGTs is the transfer rate of PCIe generations 1-7 (GT/s).
var pcieGenGTs = [...]float64{0, 2.5, 5, 8, 16, 32, 64, 128}

// ParsePCIeSpeed parses a sysfs current_link_speed or max_link_speed value:
// a positive number followed by a unit starting "GT/s". Anything else keeps
// its text with GTs and Gen 0.
func ParsePCIeSpeed(s string) PCIeSpeed {
	sp := PCIeSpeed{Text: strings.TrimSpace(s)}
	f := strings.Fields(sp.Text)
	if len(f) < 2 || !strings.HasPrefix(f[1], "GT/s") {
		return sp
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 || v != v || v > 1e6 {
		return sp
	}
	sp.GTs = v
	sp.Gen = len(pcieGenGTs) - 1
	for g := 1; g < len(pcieGenGTs); g++ {
		if v <= pcieGenGTs[g] {
			sp.Gen = g
			break
		}
	}
	return sp
}

// GenGTs is the transfer rate of PCIe generation g in GT/s; 0 for a
// generation outside 1-7.
func GenGTs(g int) float64 {
	if g > 0 && g < len(pcieGenGTs) {
		return pcieGenGTs[g]
	}
	return 0
}

// String is the kernel's text.
func (s PCIeSpeed) String() string { return s.Text }

// GenName is the generation as "Gen4", or "" when unknown.
func (s PCIeSpeed) GenName() string {
	if s.Gen == 0 {
		return ""
	}
	return "Gen" + strconv.Itoa(s.Gen)
}

// Known reports whether the speed parsed as a rate.
func (s PCIeSpeed) Known() bool { return s.GTs > 0 }

// IsZero reports an absent speed (for omitzero).
func (s PCIeSpeed) IsZero() bool { return s.Text == "" }

// MarshalJSON writes the kernel's text.
func (s PCIeSpeed) MarshalJSON() ([]byte, error) { return json.Marshal(s.Text) }

// UnmarshalJSON reads the kernel's text and parses it.
func (s *PCIeSpeed) UnmarshalJSON(b []byte) error {
	var t string
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	*s = ParsePCIeSpeed(t)
	return nil
}
