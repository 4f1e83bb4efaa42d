package journaltest

import (
	"fmt"
	"slices"
	"testing"
)

func TestPointsCoverEveryKind(t *testing.T) {
	t.Setenv(FullSweepsEnv, "")
	var log []string
	for i := 1; i <= 500; i++ {
		op, p := "write", "/etc/sysctl.d/90-gpunode.conf"
		switch {
		case i%50 == 0:
			op, p = "rename", "/var/lib/gpunode/tx-1.json"
		case i%7 == 0:
			op, p = "fsync", "/var/lib/gpunode/tx-1.json"
		case i == 333:
			op = "symlink" // a kind that occurs once
		}
		log = append(log, fmt.Sprintf("%d %s %s", i, op, p))
	}
	got := Points(log, 2)
	if !slices.IsSorted(got) || got[0] != 1 || got[len(got)-1] != 500 {
		t.Fatalf("points %v: not sorted or without the first and last operation", got)
	}
	if len(got) > 20 || !slices.Contains(got, 333) {
		t.Fatalf("points %v: want at most 20 with the only symlink (333)", got)
	}
	kinds := map[string]int{}
	for _, k := range got {
		kinds[kindOf(log[k-1])]++
	}
	want := []string{"fsync journal", "rename journal", "symlink host", "write host"}
	if !slices.Equal(Kinds(log), want) {
		t.Fatalf("Kinds = %v, want %v", Kinds(log), want)
	}
	for _, k := range want {
		if kinds[k] == 0 {
			t.Errorf("no point of kind %q in %v", k, got)
		}
	}
	if !slices.Contains(got, 50) || !slices.Contains(got, 7) || !slices.Contains(got, 497) {
		t.Errorf("points %v lack the first rename (50), the first fsync (7) or the last fsync (497)", got)
	}
	if again := Points(log, 2); !slices.Equal(again, got) {
		t.Errorf("not deterministic: %v then %v", got, again)
	}
	t.Setenv(FullSweepsEnv, "1")
	if all := Points(log, 2); len(all) != 500 || all[0] != 1 || all[499] != 500 {
		t.Errorf("full sweep: %d points", len(all))
	}
	if Size(3, 100) != 100 {
		t.Error("Size ignores GPUNODE_FULL_SWEEPS=1")
	}
	t.Setenv(FullSweepsEnv, "")
	if Size(3, 100) != 3 {
		t.Error("Size without the switch")
	}
}
