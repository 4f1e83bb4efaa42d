package yaml

import "testing"

// FuzzDifferential looks for an input on which yamljson and
// sigs.k8s.io/yaml disagree, beyond the listed known differences.
func FuzzDifferential(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	for _, c := range edgeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 4096 {
			return
		}
		if d := difference(src); d != "" {
			if known(src) == "" {
				t.Errorf("%q: %s", src, d)
			}
		}
	})
}
