package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/testhost"
)

func TestEnforceRateLimitedAndCounted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := 0
	mode := "apply"
	e := &Enforcer{MinInterval: 10 * time.Minute, Apply: func(context.Context) (EnforceResult, error) {
		calls++
		switch mode {
		case "fail":
			return EnforceResult{Journal: "j1", State: "rolled-back"}, errors.New("write refused")
		case "panic":
			panic("boom")
		case "nothing":
			return EnforceResult{}, nil
		}
		return EnforceResult{Steps: 3, Journal: "j0", State: "committed"}, nil
	}}
	// The DGX fixture drifts under the base profile.
	a := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100")), Enforce: e, Now: func() time.Time { return now }})
	step := func(d time.Duration, m string) *Snapshot {
		now = now.Add(d)
		mode = m
		return a.Cycle(context.Background())
	}
	step(0, "apply")             // applied
	step(time.Minute, "apply")   // rate-limited
	step(10*time.Minute, "fail") // failed
	step(11*time.Minute, "panic")
	s := step(11*time.Minute, "nothing")
	want := map[string]uint64{EnforceApplied: 1, EnforceRateLimited: 1, EnforceFailed: 2, EnforceNothing: 1}
	for k, v := range want {
		if s.Enforced[k] != v {
			t.Errorf("%s = %d, want %d (%v)", k, s.Enforced[k], v, s.Enforced)
		}
	}
	if calls != 4 {
		t.Errorf("apply called %d times, want 4 (one rate-limited)", calls)
	}
	_, body := get(t, a.Handler(), "GET", "/metrics")
	mf := parseMetrics(t, body)
	got := map[string]float64{}
	for _, m := range mf[MetricEnforce].GetMetric() {
		got[label(m, "outcome")] = m.GetCounter().GetValue()
	}
	if got[EnforceFailed] != 2 || got[EnforceApplied] != 1 || len(got) != 4 {
		t.Errorf("%s = %v", MetricEnforce, got)
	}
	// Without --enforce there is no enforce metric and nothing is applied.
	b := newAgent(t, Config{Audit: fixtureAudit(t, testhost.Path(t, "dgx-h100"))})
	b.Cycle(context.Background())
	_, body = get(t, b.Handler(), "GET", "/metrics")
	if parseMetrics(t, body)[MetricEnforce] != nil {
		t.Error("enforce metric without --enforce")
	}
}
