package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Each registry name is the name of the command its constructor builds, so
// a run that builds only its own command builds the right one.
func TestCommandNames(t *testing.T) {
	a := &App{}
	for _, c := range commands() {
		if got := c.new(a).Name(); got != c.name {
			t.Errorf("commands(): %q constructs %q", c.name, got)
		}
	}
}

func TestRunTarget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bind", "--node", "0", "--", "true"}, "bind"},
		{[]string{"--root", "/x", "-o", "json", "audit"}, "audit"},
		{[]string{"--root=/x", "-ojson", "--no-color", "--gpu-timeout", "2s", "tune", "plan"}, "tune"},
		{[]string{"--output=yaml", "--gpu-smi-live", "gpu"}, "gpu"},
		{[]string{"help", "bind"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "bind", ""}, ""},
		{[]string{"--help"}, ""},
		{[]string{"--bogus", "bind"}, ""},
		{nil, ""},
	} {
		if got := runTarget(tc.args); got != tc.want {
			t.Errorf("runTarget(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Building only the command a run needs changes nothing it prints: each
// command's help, a usage error inside it, and an unknown command (which
// builds the whole tree for cobra's suggestions) read the same as with the
// whole tree.
func TestPartialTreeRunsLikeTheWholeTree(t *testing.T) {
	runWith := func(full bool, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
			Exec: func(string, []string, []string) error { return nil }}
		a := &App{Env: env}
		var target string
		if !full {
			target = runTarget(args)
		}
		root := a.newRoot(nil, target)
		root.SetArgs(args)
		root.SetIn(env.Stdin)
		root.SetOut(&out)
		root.SetErr(&errb)
		err := root.ExecuteContext(context.Background())
		if err != nil {
			errb.WriteString(err.Error())
		}
		return ExitCode(err), out.String(), errb.String()
	}
	cases := [][]string{{"bnid"}, {"version", "-o", "json"}}
	for _, c := range commands() {
		cases = append(cases, []string{c.name, "--help"}, []string{"-o", "json", c.name, "--no-such-flag"}, []string{c.name, "no-such-sub", "x"})
	}
	for _, args := range cases {
		fc, fo, fe := runWith(true, args...)
		pc, po, pe := runWith(false, args...)
		if fc != pc || fo != po || fe != pe {
			t.Errorf("%q: whole tree exit %d\n%s%s\nonly its command exit %d\n%s%s", args, fc, fo, fe, pc, po, pe)
		}
	}
}
