package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deprecatedAnnotation marks a flag kept as an old name for scripts; its
// value is the advice the warning gives.
const deprecatedAnnotation = "gpunode/deprecated"

// DeprecatedAlias keeps flag old working for the scripts that pass it,
// out of the help, with a warning on stderr saying what to use instead
// (use: "use --journal-dir"). Not cobra's MarkDeprecated, which prints its
// notice on the command's output stream, breaking -o json for a script.
func DeprecatedAlias(fs *pflag.FlagSet, old, use string) {
	_ = fs.SetAnnotation(old, deprecatedAnnotation, []string{use})
	_ = fs.MarkHidden(old)
}

// warnDeprecated warns about every deprecated flag cmd was given.
func (a *App) warnDeprecated(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if use := f.Annotations[deprecatedAnnotation]; f.Changed && len(use) == 1 {
			a.Warnf("--%s is deprecated: %s", f.Name, use[0])
		}
	})
}

// checkSkipRefs validates rollback's --skip values: "<transaction id>:<step
// index>", as a failed rollback prints them ("000003-tune:4"). A malformed
// one skipped nothing and was silently ignored; it is a usage error.
func checkSkipRefs(refs []string) error {
	for _, r := range refs {
		id, n, ok := strings.Cut(r, ":")
		if _, err := strconv.Atoi(n); !ok || id == "" || err != nil || strings.HasPrefix(n, "-") || strings.HasPrefix(n, "+") {
			return Usagef("--skip %q: want TRANSACTION:STEP as a failed rollback prints it, e.g. 000003-tune:4", r)
		}
	}
	return nil
}
