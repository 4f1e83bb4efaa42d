package gpu

import "testing"

func TestCPUsFromWords(t *testing.T) {
	for _, tc := range []struct {
		words []uint
		want  string
	}{
		{nil, ""},
		{[]uint{0}, ""},
		{[]uint{0b1011}, "0-1,3"},
		{[]uint{1 << 63, 1}, "63-64"},
		{[]uint{0xffffffffffffffff, 0xff00000000000000}, "0-63,120-127"},
	} {
		if got := CPUsFromWords(tc.words).String(); got != tc.want {
			t.Errorf("CPUsFromWords(%x) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
