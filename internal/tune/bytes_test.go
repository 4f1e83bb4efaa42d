package tune

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/check"
)

// TestSizesInBytes: every size a check compares reaches JSON in bytes,
// whatever syntax the setting uses (a dirty ratio, KiB in limits.conf,
// kB in /proc/PID/status), and the table prints binary units; shm.size
// says its expected value is a minimum.
func TestSizesInBytes(t *testing.T) {
	cat := NewCatalogue()
	fsys := mustFS(t, sharedHost(t, "dgx-h100"))
	h := newHost(t, fsys)
	mem, err := h.MemTotal()
	if err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileTraining)
	p.Settings["limits.memlock"] = "65536" // KiB, as pam_limits counts
	p.Settings["systemd.DefaultLimitMEMLOCK"] = "64M"
	r, err := Audit(context.Background(), h, cat, p, Options{PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]check.Check{}
	for _, c := range r.Checks {
		byKey[c.Key()] = c
	}
	u := func(n uint64) *uint64 { return &n }
	for _, tc := range []struct {
		key                string
		current, expected  *uint64
		bound              check.Bound
		tableCur, tableExp string
	}{
		// The stock host runs the kernel's 20% ratio; training wants bytes.
		{"vm.dirty", u(mem * 20 / 100), u(min(mem/64, 32<<30)), "", "20% of memory (", " GiB"},
		{"vm.dirty-background", u(mem * 10 / 100), u(min(mem/64, 32<<30) / 4), "", "10% of memory (", " GiB"},
		{"shm.size", u(mem / 2), u(mem * 50 / 100), check.Minimum, "50% of memory (", ">= 50% of memory ("},
		{"limits.memlock", nil, u(65536 << 10), "", "(unset)", "64.0 MiB"},
		{"systemd.DefaultLimitMEMLOCK", nil, u(64 << 20), "", "(unset)", "64.0 MiB"},
		{"net.core.rmem_max", u(212992), u(268435456), "", "208.0 KiB", "256.0 MiB"},
		{"process.swap/pid4242", u(20480 << 10), u(0), "", "20.0 MiB", "0 B"},
		{"process.memlock/pid4242", u(8388608), nil, "", "8.0 MiB", "unlimited"},
	} {
		c, ok := byKey[tc.key]
		if !ok {
			t.Errorf("%s: no such check", tc.key)
			continue
		}
		eq := func(a, b *uint64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
		if !eq(c.CurrentBytes, tc.current) || !eq(c.ExpectedBytes, tc.expected) || c.Bound != tc.bound {
			t.Errorf("%s: currentBytes %v expectedBytes %v bound %q; want %v %v %q", tc.key, deref(c.CurrentBytes), deref(c.ExpectedBytes), c.Bound,
				deref(tc.current), deref(tc.expected), tc.bound)
		}
		if cur, exp := c.CurrentText(), c.ExpectedText(); !strings.Contains(cur, tc.tableCur) || !strings.Contains(exp, tc.tableExp) {
			t.Errorf("%s: table shows %q / %q; want %q / %q in them", tc.key, cur, exp, tc.tableCur, tc.tableExp)
		}
	}
	// No value or detail in the JSON of a check is in kB or binary units
	// (Reason is prose about the setting, not a value).
	for _, c := range r.Checks {
		b, err := json.Marshal([]string{c.Current, c.Expected, c.Detail})
		if err != nil {
			t.Fatal(err)
		}
		for _, unit := range []string{" kB", "KiB", "MiB", "GiB"} {
			if strings.Contains(string(b), unit) {
				t.Errorf("%s: JSON has a size in %s: %s", c.Key(), unit, b)
			}
		}
	}
}
