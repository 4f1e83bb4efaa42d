package cli

import (
	"errors"
	"fmt"
	"strings"

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

// WrapUsage marks err as a usage error (exit 2).
func WrapUsage(err error) error {
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

// commandLineErr marks a usage error about the command line itself (a flag
// that does not parse, a wrong number of arguments, an unknown command):
// the help is pointed to after it.
type commandLineErr struct{ err error }

func (e commandLineErr) Error() string { return e.err.Error() }
func (e commandLineErr) Unwrap() error { return e.err }

func commandLine(err error) error {
	if err == nil {
		return nil
	}
	return commandLineErr{err}
}

// usageHint reports whether the help is pointed to after a usage error:
// after command-line errors and errors naming a flag ("--node: ..."), not
// after a bad input file, whose message names the file, line and field
// (the help would not fix it).
func usageHint(err error, msg string) bool {
	var cl commandLineErr
	return errors.As(err, &cl) || strings.Contains(msg, "--") || strings.HasPrefix(msg, "-")
}
