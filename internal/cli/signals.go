package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// SignalGrace is how long a command has, after SIGINT or SIGTERM cancelled
// its context, to return on its own before MainWithSignals ends it. Every
// loop over host data and every blocking host read honours the context well
// within it; the grace only catches what cannot be cancelled from inside the
// process: a read of a pipe the user named (-f -, -f <(...)), or a child
// process that does not die when killed. Half of the 1 s promise: the rest
// is the exit itself, which a loaded machine can stretch to a few hundred ms.
const SignalGrace = 500 * time.Millisecond

// MainWithSignals runs Main with a context that SIGINT and SIGTERM cancel,
// and returns the process exit code. A command that has not returned
// SignalGrace after the signal, or a second signal, ends the run with exit
// status 128+signal (130 for SIGINT, 143 for SIGTERM) and a message on
// stderr; the caller then exits, which ends whatever was still blocked. A
// command that returns a failure after the signal (its context's error)
// exits with the same status.
// Transactions stay safe: a journaled change survives a SIGKILL at any point,
// and this is no worse.
//
// 'bind' keeps the default disposition instead: it reads a few sysfs files
// and execs the rank, so a SIGINT or SIGTERM before the exec ends it at once
// (status 128+signal, nothing to clean up), and after the exec the signal is
// the rank's. Asking for signals costs a dedicated signal thread, about 0.3
// ms of a start-up that is on every rank's launch path. So do 'version',
// which only prints, and gpunode's stand-ins of the forwarded commands,
// which exec the companion at once (it then asks for signals itself).
func MainWithSignals(env Env, extra ...Command) int {
	if defaultSignals(env.Args, extra) {
		return Main(context.Background(), env, extra...)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- Main(ctx, env, extra...) }()
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel()
	grace := time.NewTimer(SignalGrace)
	defer grace.Stop()
	select {
	case code := <-done:
		if code < ExitFailure {
			return code // it finished its work anyway
		}
		return signalExit(sig)
	case <-grace.C:
	case <-sigs:
	}
	fmt.Fprintf(env.Stderr, "gpunode: stopped by %v\n", sig)
	return signalExit(sig)
}

// signalExit is the conventional exit status of a run ended by sig.
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return ExitFailure
}

// defaultSignals reports whether args run a command that keeps the default
// signal disposition (see MainWithSignals). The forwarded commands are
// stand-ins only in gpunode, which passes no extra commands.
func defaultSignals(args []string, extra []Command) bool {
	switch t := runTarget(args); t {
	case "bind", "version":
		return true
	case "":
		return false
	default:
		if len(extra) > 0 {
			return false // the companion: these are the real commands
		}
		for _, f := range forwardedCommands() {
			if f.name == t {
				return true
			}
		}
		return false
	}
}
