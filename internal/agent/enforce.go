package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Enforce outcomes, the values of gpunode_enforce_actions_total{outcome}.
const (
	EnforceApplied     = "applied"      // the profile was re-applied with changes
	EnforceNothing     = "nothing"      // re-applied, nothing to change (the drift is not the profile's to fix)
	EnforceFailed      = "failed"       // the apply failed (the journal reverted it, or left it open)
	EnforceRateLimited = "rate-limited" // drift seen within MinInterval of the last apply
)

// EnforceResult is what one re-apply did.
type EnforceResult struct {
	Steps   int
	Journal string
	State   string
}

// Enforcer re-applies the profile when an audit drifts (--enforce), at most
// once per MinInterval. Apply goes through the journal (tune apply), so
// every change is recorded and can be rolled back.
type Enforcer struct {
	Apply       func(ctx context.Context) (EnforceResult, error)
	MinInterval time.Duration

	last time.Time // used by the audit loop only
}

// maybeApply runs Apply unless rate-limited and returns the outcome.
func (e *Enforcer) maybeApply(ctx context.Context, now time.Time, log *slog.Logger) string {
	if !e.last.IsZero() && now.Sub(e.last) < e.MinInterval {
		log.Info("enforce", "outcome", EnforceRateLimited, "next", e.last.Add(e.MinInterval).UTC().Format(time.RFC3339))
		return EnforceRateLimited
	}
	e.last = now
	res, err := e.safeApply(ctx)
	switch {
	case err != nil:
		log.Error("enforce", "outcome", EnforceFailed, "err", err, "journal", res.Journal, "state", res.State)
		return EnforceFailed
	case res.Steps == 0:
		log.Info("enforce", "outcome", EnforceNothing)
		return EnforceNothing
	}
	log.Warn("enforce", "outcome", EnforceApplied, "steps", res.Steps, "journal", res.Journal, "state", res.State)
	return EnforceApplied
}

func (e *Enforcer) safeApply(ctx context.Context) (res EnforceResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = EnforceResult{}, fmt.Errorf("apply panicked: %v", p)
		}
	}()
	return e.Apply(ctx)
}
