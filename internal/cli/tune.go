package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/tune"
)

func (a *App) newTuneCommand() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Apply a tuning profile reversibly: plan, apply, rollback, status (system_tuning.sh done right)",
		Long: `Apply a tuning profile to the node, reversibly.

  gpunode tune profiles              list built-in and user profiles
  gpunode tune show NAME             the resolved settings of a profile
  gpunode tune plan --profile NAME   what apply would change (changes nothing)
  gpunode tune apply --profile NAME  change runtime values and write persistent drop-ins
  gpunode tune rollback              put back every value and file, byte for byte
  gpunode tune status                the applied profile and any drift since

apply writes runtime values (sysctl, sysfs, every CPU's governor/EPP/cpuidle)
and generates /etc/sysctl.d/90-gpunode.conf, /etc/tmpfiles.d/90-gpunode.conf
(sysfs values at boot), /etc/security/limits.d/90-gpunode.conf and
/etc/systemd/system.conf.d/90-gpunode.conf, and comments swap out of
/etc/fstab. Lines of files read after those that would set the same values
back at boot (/etc/sysctl.conf, a 99-*.conf) are commented out with a
'#gpunode# ' prefix (a vendor sysctl file is masked by an edited copy in
/etc/sysctl.d); a file that cannot be edited is refused with the reason in a
note. Kernel parameters are only planned unless --bootloader is given;
then GRUB_CMDLINE_LINUX in /etc/default/grub is edited (a backup goes to
/etc/default/grub.gpunode.bak). Every original is journaled in --journal-dir
before it changes (versioned, checksummed, atomic, mode 0600). Applying twice
changes nothing; a failure part way rolls back what was done and exits 3; a
killed apply is rolled back by the next 'tune rollback'.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&stateDir, "journal-dir", journal.DefaultDir, "journal directory (a host path under --root)")
	// --state-dir is the old name of --journal-dir (every other command
	// that changes the host calls it --journal-dir).
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", journal.DefaultDir, "deprecated alias of --journal-dir")
	DeprecatedAlias(cmd.PersistentFlags(), "state-dir", "use --journal-dir (the same directory)")
	cmd.AddCommand(a.newTuneProfilesCommand(), a.newTuneShowCommand(), a.newTunePlanCommand(&stateDir, false),
		a.newTunePlanCommand(&stateDir, true), a.newTuneRollbackCommand(&stateDir), a.newTuneStatusCommand(&stateDir))
	return cmd
}

func (a *App) newTuneProfilesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in profiles and the user profiles in /etc/gpunode/profiles (exit 1 when one does not load)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fs, err := a.Host()
			if err != nil {
				return err
			}
			l := &tune.Loader{Cat: tune.NewCatalogue(), Host: fs, Checks: sourceChecks()}
			list := l.List()
			broken := false
			for _, p := range list {
				broken = broken || p.Error != ""
			}
			// A profile that does not load is a finding: exit 1.
			return a.RenderFindings(&tune.ProfileList{SchemaVersion: tune.SchemaProfiles, Profiles: list}, broken)
		},
	}
}

func (a *App) newTuneShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME|FILE",
		Short: "Print a profile's resolved settings (includes and overrides applied) and how each is applied",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("tune show: want one profile name or file, got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: a.completeProfiles,
		RunE: func(_ *cobra.Command, args []string) error {
			_, cat, p, err := a.LoadProfile(args[0])
			if err != nil {
				return err
			}
			return a.Render(tune.View(cat, p))
		},
	}
}

// newTunePlanCommand builds 'tune plan' (apply false) and 'tune apply'.
func (a *App) newTunePlanCommand(stateDir *string, apply bool) *cobra.Command {
	var (
		profile    string
		dryRun     bool
		bootloader bool
		exitCode   bool
	)
	use, short := "plan", "Show what 'tune apply' would change (changes nothing)"
	if apply {
		use, short = "apply", "Apply a profile: runtime values and persistent drop-ins, every original journaled first"
	}
	cmd := &cobra.Command{
		Use:   use + " --profile NAME|FILE",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if profile == "" {
				return Usagef("tune %s: --profile is required (try 'gpunode tune profiles')", use)
			}
			ctx := cmd.Context()
			fs, cat, p, err := a.LoadProfile(profile)
			if err != nil {
				return err
			}
			req := tune.ApplyRequest{Profile: p, StateDir: *stateDir, DryRun: dryRun, Bootloader: bootloader,
				Command: a.CommandLine()}
			h := tune.NewHost(ctx, fs)
			var rep *tune.PlanReport
			if apply {
				rep, err = tune.Apply(ctx, h, cat, req)
			} else {
				rep, err = tune.Plan(ctx, h, cat, req)
			}
			if rep != nil && (err == nil || errors.As(err, new(*tune.ApplyError))) {
				if rerr := a.Render(rep); rerr != nil && err == nil {
					err = rerr
				}
			}
			if err == nil && exitCode && rep != nil && rep.Changed {
				return ErrFindings
			}
			if err == nil && rep != nil && len(rep.Skipped) > 0 {
				// An optional setting left out is a finding, never a note.
				return ErrFindings
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", "", "profile to apply: a built-in or user profile name, or a YAML file")
	f.BoolVar(&bootloader, "bootloader", false, "also write kernel parameters to /etc/default/grub (backed up first)")
	if apply {
		f.BoolVar(&dryRun, "dry-run", false, "show what would change without changing anything")
	} else {
		f.BoolVar(&exitCode, "exit-code", false, "exit 1 when the plan changes something (like 'git diff --exit-code'); without it plan exits 0 whenever it computed a plan (1 when it skipped a setting the profile marks optional)")
	}
	_ = cmd.RegisterFlagCompletionFunc("profile", a.completeProfiles)
	return cmd
}

func (a *App) newTuneRollbackCommand(stateDir *string) *cobra.Command {
	var dryRun, force bool
	var skip []string
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo every 'tune apply' (interrupted ones included), newest first, byte for byte",
		Long: `Undo every 'tune apply' recorded in --journal-dir, newest first: kernel values
are written back, generated files removed, edited files (fstab, grub) restored
byte for byte with their modes. An apply that was killed part way is rolled
back too. A journal that is corrupted (checksum mismatch) or from another
journal format version is refused, and nothing is changed.

A value that cannot be written back (a read-only /proc/sys, chattr +i) stops
nothing else: every other step is restored, the transaction stays open, and
the error names the step (e.g. 000003-tune:4), its path and the original.
Fix the cause and run rollback again, or rerun with --skip 000003-tune:4: the
step is marked skipped, its original stays in the journal and is printed, and
apply works again. Generated files edited by hand since apply are not
overwritten unless --force (the edited version is kept in the journal first).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkSkipRefs(skip); err != nil {
				return err
			}
			fs, err := a.Host()
			if err != nil {
				return err
			}
			rep, err := tune.Rollback(cmd.Context(), fs, *stateDir, dryRun, journal.WithSkip(skip...), journal.WithForce(force))
			if rep != nil && len(rep.Transactions) > 0 || err == nil {
				if rerr := a.Render(rep); rerr != nil && err == nil {
					err = rerr
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be restored without changing anything")
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "skip step ID:N (as a failed rollback prints it) whose original cannot be written back; the original stays in the journal")
	cmd.Flags().BoolVar(&force, "force", false, "restore generated files edited since apply too (the edited versions are kept in the journal)")
	return cmd
}

func (a *App) newTuneStatusCommand(stateDir *string) *cobra.Command {
	var gf GPUFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the applied profile and any drift since it was applied (exit 1 on drift)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			fs, err := a.CheckedHost()
			if err != nil {
				return err
			}
			h := tune.NewHost(ctx, fs)
			opt := tune.Options{Sources: a.AuditSources(ctx, h, gf.backend, "", 0)}
			st, err := tune.GetStatus(ctx, h, tune.NewCatalogue(), *stateDir, opt)
			if err != nil {
				return err
			}
			return a.RenderFindings(st, st.Drifted())
		},
	}
	gf.Register(cmd, false)
	return cmd
}
