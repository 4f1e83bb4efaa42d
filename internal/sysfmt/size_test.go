package sysfmt

import (
	"strconv"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"4096", 4096}, {"4096B", 4096}, {"4096b", 4096},
		{"32K", 32 << 10}, {"32768K", 32 << 20}, {"65536k", 64 << 20}, {"36M", 36 << 20},
		{"16g", 16 << 30}, {"32G", 32 << 30}, {"32GB", 32 << 30}, {"32GiB", 32 << 30}, {"32gib", 32 << 30},
		{"2T", 2 << 40}, {"2TiB", 2 << 40}, {" 1 g\n", 1 << 30}, {"1.5g", 3 << 29}, {"0.5K", 512},
		{"1.0001K", 1024}, // rounded down to a byte
		{"8388607T", 8388607 << 40},
		{strconv.FormatUint(MaxBytes, 10), MaxBytes},
	} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{
		"", " ", "k", "G", "-1", "-1k", "+5", "1e3", "0x10", "inf", "NaN", "1.", ".5", "1..5k", "1.5.5",
		"5iB", "5i", "5P", "5kk", "lots", "16 g b x",
		"9223372036854775808",  // 2^63
		"8388608T",             // 2^63
		"18446744073709551616", // 2^64
		"99999999999999999999999999999999999999999999999999999999999999999999999",
	} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"32K", "1.5g", "4096", "32GiB", "", "8388608T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err != nil {
			return
		}
		if v > MaxBytes {
			t.Fatalf("%q: %d beyond MaxBytes", s, v)
		}
		// The canonical form parses to the same size.
		if back, err := ParseBytes(strconv.FormatUint(v, 10)); err != nil || back != v {
			t.Fatalf("%q: %d does not round-trip: %d, %v", s, v, back, err)
		}
	})
}
