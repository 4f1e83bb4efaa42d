package cli

import (
	"errors"
	"fmt"
)

// ErrNoHelper is returned when a helper executable cannot be found.
var ErrNoHelper = errors.New("helper executable not found")

// Helper is how a command runs a helper executable: a small binary that
// holds one heavy library so that the executable calling it does not link
// it (gpunode-helm holds the Helm SDK for 'k8s lint'). Argv is the command
// line to run it with (the helper's own arguments follow); GoRun tells it
// is `go run` from a checkout, whose first run compiles the helper.
type Helper struct {
	Argv  []string
	GoRun bool
}

// FindHelper finds the helper executable name as 'gpunode agent' finds
// gpunode-agent: $env (which must be executable), then name beside this
// executable (symlinks resolved) or on $PATH (absolute entries only), then,
// from a gpunode checkout with a go command on $PATH, `go run
// CHECKOUT/cmd/NAME`. The lookup is of gpunode's own installation, not of
// the host under --root.
func (a *App) FindHelper(name, env string) (Helper, error) {
	if p := a.getenv(env); p != "" {
		if !isExecutable(p) {
			return Helper{}, fmt.Errorf("%s=%s: not an executable file: %w", env, p, ErrNoHelper)
		}
		return Helper{Argv: []string{p}}, nil
	}
	if p, ok := a.lookBeside(name); ok {
		return Helper{Argv: []string{p}}, nil
	}
	if argv, ok := a.goRunCommand(name); ok {
		return Helper{Argv: argv, GoRun: true}, nil
	}
	return Helper{}, fmt.Errorf("%w: %s (looked beside %s and on $PATH): install it beside %s "+
		"(from a checkout of gpunode: go build -o DIR/ ./cmd/%s) or set %s to its path",
		ErrNoHelper, name, CompanionName, CompanionName, name, env)
}
