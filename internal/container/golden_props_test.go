package container_test

import (
	"testing"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/container"
)

// checkReportProperties is TestCheckGoldens' independent check, computed
// here from the checks themselves: the summary counts each status as the
// checks have it, every key is reported once, and every drift says what is
// wrong or how to fix it.
func checkReportProperties(t *testing.T, r container.Report) {
	t.Helper()
	var want check.Summary
	seen := map[string]bool{}
	for _, c := range r.Checks {
		switch c.Status {
		case check.OK:
			want.OK++
		case check.Drift:
			want.Drift++
			if c.Detail == "" && len(c.Fix) == 0 {
				t.Errorf("%s drifts without a detail or a fix", c.Key())
			}
		case check.PendingReboot:
			want.PendingReboot++
		case check.Absent:
			want.Absent++
		case check.Error:
			want.Error++
			if c.Detail == "" {
				t.Errorf("%s is an error without a detail", c.Key())
			}
		case check.Info:
			want.Info++
		default:
			t.Errorf("%s: status %q", c.Key(), c.Status)
		}
		if seen[c.Key()] {
			t.Errorf("%s reported twice", c.Key())
		}
		seen[c.Key()] = true
	}
	if r.Summary != want {
		t.Errorf("summary %+v, the checks count %+v", r.Summary, want)
	}
	if r.SchemaVersion != "gpunode.container.check/v1" {
		t.Errorf("schemaVersion %q", r.SchemaVersion)
	}
}
