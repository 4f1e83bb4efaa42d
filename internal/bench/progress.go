package bench

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// ErrInput marks errors caused by the request (bad flags or names).
var ErrInput = errors.New("invalid input")

// inputErr is an error of the request: errors.Is(err, ErrInput), with the
// message alone.
type inputErr struct{ err error }

func (e inputErr) Error() string   { return e.err.Error() }
func (e inputErr) Unwrap() []error { return []error{ErrInput, e.err} }

func inputf(format string, args ...any) error { return inputErr{fmt.Errorf(format, args...)} }

// Progress receives the progress of a run.
type Progress interface {
	// Start announces total steps expected to take about estimate.
	Start(what string, total int, estimate time.Duration)
	Add(n int)
	Done()
}

// NoProgress shows nothing.
type NoProgress struct{}

func (NoProgress) Start(string, int, time.Duration) {}
func (NoProgress) Add(int)                          {}
func (NoProgress) Done()                            {}

// Bar is a progress bar (github.com/schollz/progressbar) on w for runs
// longer than a second: it appears at Start when the estimate exceeds a
// second, else once a second has passed.
type Bar struct {
	W io.Writer
	// Threshold is the run time after which the bar appears (default 1 s).
	Threshold time.Duration

	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	what  string
	total int
	done  int
	start time.Time
}

// NewBar returns a Bar writing to w.
func NewBar(w io.Writer) *Bar { return &Bar{W: w, Threshold: time.Second} }

func (b *Bar) Start(what string, total int, estimate time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finishLocked()
	b.what, b.total, b.done, b.start = what, total, 0, time.Now()
	if estimate > b.Threshold {
		b.showLocked()
	}
}

func (b *Bar) showLocked() {
	b.bar = progressbar.NewOptions(b.total,
		progressbar.OptionSetWriter(b.W),
		progressbar.OptionSetDescription(b.what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)
	_ = b.bar.Set(b.done)
}

func (b *Bar) Add(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	if b.bar == nil && !b.start.IsZero() && time.Since(b.start) > b.Threshold {
		b.showLocked()
		return
	}
	if b.bar != nil {
		_ = b.bar.Add(n)
	}
}

// Shown reports whether the bar was drawn.
func (b *Bar) Shown() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bar != nil
}

func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finishLocked()
}

func (b *Bar) finishLocked() {
	if b.bar != nil {
		_ = b.bar.Finish()
		b.bar = nil
	}
}
