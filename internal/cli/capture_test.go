package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/testhost"
)

type verdict struct{ ID, Subject, Status, Current, Expected string }

func verdicts(t *testing.T, args ...string) []verdict {
	t.Helper()
	_, out, errs := run(t, append(args, "-o", "json")...)
	var r struct {
		Checks []verdict `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errs)
	}
	return r.Checks
}

// TestCaptureReplaysVerdicts: 'gpunode audit --root CAPTURE' gives the
// verdicts of the host it was captured from, for every built-in profile,
// on every fixture; so do irq plan and gpu status. (The capture held only
// what topology discovery reads: audit on it lost the GPU, limits, sysctl.d
// and container checks.)
func TestCaptureReplaysVerdicts(t *testing.T) {
	for _, host := range []string{"dgx-h100", "amd-8numa", "gh200", "downgraded", "vm-2vcpu"} {
		t.Run(host, func(t *testing.T) {
			src := testhost.Path(t, host)
			out := filepath.Join(testhost.TempDir(t), "cap")
			if code, _, errs := run(t, "--root", src, "topo", "capture", "--out", out); code != ExitOK {
				t.Fatalf("capture: exit %d %s", code, errs)
			}
			for _, p := range captureProfiles {
				want := verdicts(t, "--root", src, "audit", "--profile", p)
				got := verdicts(t, "--root", out, "audit", "--profile", p)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("audit --profile %s differs on the capture:\n got %v\nwant %v", p, got, want)
				}
			}
			for _, args := range [][]string{{"irq", "plan", "--devices", "all"}, {"gpu", "status"}, {"tune", "status"}} {
				c1, want, _ := run(t, append([]string{"--root", src}, append(args, "-o", "json")...)...)
				c2, got, _ := run(t, append([]string{"--root", out}, append(args, "-o", "json")...)...)
				if c1 != c2 || got != want {
					t.Errorf("%v differs on the capture (exit %d vs %d)", args, c2, c1)
				}
			}
		})
	}
}

// TestSaveFakeGPUs: the GPU answers a capture saves read back as the same
// status through the fake backend.
func TestSaveFakeGPUs(t *testing.T) {
	h, err := hostfs.New(testhost.Path(t, "dgx-h100"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gpu.OpenFake(h, gpu.FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st.Backend = gpu.KindNVML // as a driver would answer
	out := t.TempDir()
	if err := saveFakeGPUs(out, st); err != nil {
		t.Fatal(err)
	}
	oh, err := hostfs.New(out)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := gpu.OpenFake(oh, gpu.FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	back, err := rb.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st.Backend = gpu.KindFake
	if !reflect.DeepEqual(back, st) {
		t.Errorf("saved GPU answers differ:\n got %+v\nwant %+v", back, st)
	}
}
