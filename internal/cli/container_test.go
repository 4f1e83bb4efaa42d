package cli

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/testhost"
)

var updateContainer = flag.Bool("update-container", false, "rewrite the golden files of gpunode container check")

func TestContainerCheckCLI(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"dgx-h100", []string{"--root", dgx, "container", "check", "--cuda", "12.8", "--data", "/data,/checkpoints"}, ExitOK},
		{"dgx-h100-overlay", []string{"--root", dgx, "container", "check", "--image-config", "/root/image-pytorch.json", "--container-spec", "/root/inspect-train.json", "--data", "/data,/workspace"}, ExitFindings},
		{"downgraded", []string{"--root", testhost.Path(t, "downgraded"), "container", "check", "--cuda", "13.0"}, ExitFindings},
		{"amd-8numa", []string{"--root", testhost.Path(t, "amd-8numa"), "container", "check"}, ExitFindings},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			goldenfile.Check(t, filepath.Join("testdata", "container", "check-"+tc.name+".txt"), []byte(out), *updateContainer)
		})
	}
	code, out, _ := run(t, "--root", dgx, "-o", "json", "container", "check")
	var r struct {
		SchemaVersion string `json:"schemaVersion"`
		Checks        []struct{ ID, Layer, Status string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.SchemaVersion != "gpunode.container.check/v1" || len(r.Checks) != 7 || code != ExitOK {
		t.Fatalf("json: %d %v %+v", code, err, r)
	}
}

func TestContainerFlagsCLI(t *testing.T) {
	dgx := testhost.Path(t, "dgx-h100")
	code, out, errs := run(t, "--root", dgx, "-o", "json", "container", "flags", "--gpu", "0,1", "--runtime", "docker")
	var f struct {
		SchemaVersion string            `json:"schemaVersion"`
		Args          []string          `json:"args"`
		Env           map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil || code != ExitOK || f.SchemaVersion != "gpunode.container.flags/v1" || f.Env == nil {
		t.Fatalf("%d %v %s %s", code, err, out, errs)
	}
	if got := strings.Join(f.Args, " "); got != `--gpus "device=0,1" --cpuset-cpus 0-55,112-167 --cpuset-mems 0 --ulimit memlock=-1:-1 --shm-size 16g` {
		t.Errorf("args %q", got)
	}
	code, out, _ = run(t, "--root", dgx, "container", "flags", "--gpu", "4", "--runtime", "podman")
	if code != ExitOK || !strings.Contains(out, "podman run --device nvidia.com/gpu=4 --cpuset-cpus 56-111,168-223 --cpuset-mems 1") {
		t.Errorf("table: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"container", "flags", "--gpu", "8", "--runtime", "docker"},
		{"container", "flags", "--gpu", "0", "--runtime", "lxc"},
		{"container", "flags", "--runtime", "docker"},
		{"container", "run", "--gpu", "0", "--runtime", "docker", "--", "img"},
		{"container", "run", "--gpu", "0", "--runtime", "kubernetes", "--", "img"},
		{"container", "run", "--gpu", "0", "--runtime", "docker"},
		{"container", "check", "--cuda", "twelve"},
	} {
		if code, _, errs := run(t, append([]string{"--root", dgx}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}
