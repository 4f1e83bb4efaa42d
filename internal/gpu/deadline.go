package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultTimeout is the default deadline of one nvidia-smi run or NVML call
// (--gpu-timeout). A healthy driver answers nvidia-smi -q -x for 8 GPUs in
// well under a second; a wedged GPU never answers.
const DefaultTimeout = 5 * time.Second

// CallError is a driver call that failed or did not answer in time.
type CallError struct {
	// Call is what was run: "nvidia-smi -q -x", "nvmlDeviceGetPowerUsage".
	Call string `json:"call"`
	// GPU is the GPU addressed ("all", an index or a UUID).
	GPU string `json:"gpu"`
	// Timeout is set when the call did not answer within After.
	Timeout bool          `json:"timeout"`
	After   time.Duration `json:"-"`
	Err     string        `json:"error"`
}

func (e *CallError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("%s (GPU %s): timed out: no answer within %s (--gpu-timeout); the driver or the GPU may be wedged", e.Call, e.GPU, e.After)
	}
	return fmt.Sprintf("%s (GPU %s): %s", e.Call, e.GPU, e.Err)
}

// ErrTimeout is wrapped by every timed-out CallError.
var ErrTimeout = errors.New("driver call timed out")

func (e *CallError) Unwrap() error {
	if e.Timeout {
		return ErrTimeout
	}
	return nil
}

// withDeadline runs f under a deadline of d (d <= 0: DefaultTimeout) and
// returns when f does or when the deadline passes, whichever is first.
//
// f runs in its own goroutine so that a call which ignores its context (an
// NVML call blocked in the kernel on a wedged GPU cannot be interrupted)
// can be abandoned. The trade-off: an abandoned call's goroutine stays
// blocked until the driver returns, possibly never, holding whatever the
// call holds. gpunode is a short-lived CLI, and each call is abandoned at
// most once, so a wedged GPU costs one parked goroutine per call rather
// than a hung command. The result channel is buffered so a late answer
// never blocks its goroutine.
func withDeadline[T any](ctx context.Context, d time.Duration, call, gpuName string, f func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		d = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f(cctx)
		ch <- result{v, err}
	}()
	var zero T
	select {
	case r := <-ch:
		if r.err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return zero, &CallError{Call: call, GPU: gpuName, Timeout: true, After: d, Err: r.err.Error()}
		}
		return r.v, r.err
	case <-cctx.Done():
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		return zero, &CallError{Call: call, GPU: gpuName, Timeout: true, After: d, Err: "deadline exceeded"}
	}
}
