package cli

import (
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// Values the caller gets wrong are usage errors (exit 2) naming the flag,
// before the command reasons about them (issue 28 item 2).
func TestFlagValuesJudgedBeforeUse(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bogus MIG UUID", []string{"--root", dgx, "container", "flags", "--gpu", "0", "--runtime", "docker", "--mig", "MIG-bogus"}, ExitUsage,
			`--mig "MIG-bogus": Invalid value: not a MIG device UUID`},
		{"MIG UUID one digit short", []string{"--root", dgx, "container", "flags", "--gpu", "0", "--runtime", "docker", "--mig", "MIG-4e0f1a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4"}, ExitUsage,
			`not a MIG device UUID`},
		{"legacy MIG UUID without CI", []string{"--root", dgx, "container", "flags", "--gpu", "0", "--runtime", "docker", "--mig", "MIG-GPU-4e0f1a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b/1"}, ExitUsage,
			`not a MIG device UUID`},
		{"data path missing", []string{"--root", dgx, "container", "check", "--data", "/nonexistent"}, ExitUsage,
			`--data /nonexistent: Not found: no such file or directory under --root`},
		{"data under a mount point of the captured tree", []string{"--root", dgx, "container", "check", "--data", "/data/sub"}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d (want %d)\n%s%s\nwant stderr to contain %s", code, tc.code, out, errs, tc.want)
			}
		})
	}
	for _, ok := range []string{"MIG-4e0f1a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b", "MIG-GPU-4e0f1a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b/1/0"} {
		if err := checkMIGUUID("--mig", ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}
