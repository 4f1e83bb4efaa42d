package cli

import (
	"errors"
	"fmt"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// Exit codes. They are part of gpunode's API and documented in README.md.
const (
	ExitOK       = 0 // success, nothing to report
	ExitFindings = 1 // the command worked and found drift, findings, or a rejection
	ExitUsage    = 2 // bad flags, arguments or input files
	ExitFailure  = 3 // the command could not do its job
)

// ErrUsage marks errors caused by the caller's input (exit 2).
var ErrUsage = errors.New("usage")

// ErrFindings is returned by commands that completed but found something the
// user must act on (exit 1). Its output has already been written.
var ErrFindings = errors.New("findings")

// Usagef builds an error that maps to exit code 2.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// usageErr wraps an existing error so that it maps to exit 2 while keeping the
// original in the chain.
type usageErr struct{ err error }

func (u usageErr) Error() string   { return u.err.Error() }
func (u usageErr) Unwrap() []error { return []error{ErrUsage, u.err} }
func isUsage(err error) bool       { return errors.Is(err, ErrUsage) }
func isFindings(err error) bool    { return errors.Is(err, ErrFindings) }
func wrapUsage(err error) error {
	if err == nil || isUsage(err) {
		return err
	}
	return usageErr{err}
}

// ExitCode maps an error returned by a command to gpunode's exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case isFindings(err):
		return ExitFindings
	case isUsage(err), errors.Is(err, hostfs.ErrRefusedOutput):
		// An output path that is not a regular file is the caller's.
		return ExitUsage
	default:
		return ExitFailure
	}
}
