package companion

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/helmexec"
	"github.com/gpunode/gpunode/internal/testhost"
)

func runStdin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{
		Args: args, Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		// GPUNODE_HELM: 'k8s lint' renders Helm charts in gpunode-helm,
		// built on the first lint of a chart.
		Getenv: func(k string) string {
			if k == helmexec.EnvHelper {
				return helmHelper(t)
			}
			return ""
		},
		Environ: func() []string { return nil },
		Exec:    func(string, []string, []string) error { t.Fatal("unexpected exec"); return nil },
	}
	return mainFull(context.Background(), env), out.String(), errb.String()
}

func TestK8sMerge(t *testing.T) {
	const seed = `{"policy":"single-numa-node","numaNodes":[0,1],"providers":[
	  {"cpu":[{"affinity":[0],"preferred":true},{"affinity":[1],"preferred":true},{"affinity":[0,1],"preferred":false}]},
	  {"nvidia.com/gpu":%s}]}`
	for _, tc := range []struct {
		name, gpu string
		code      int
		want      string
	}{
		{"4 GPUs fit node 0", `[{"affinity":[0],"preferred":true},{"affinity":[0,1],"preferred":false}]`, cli.ExitOK, `"affinity": [
    0
  ],
  "preferred": true,
  "admit": true`},
		{"8 GPUs need both nodes", `[{"affinity":[0,1],"preferred":true}]`, cli.ExitFindings, `"affinity": null,
  "preferred": false,
  "admit": false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(seed, "%s", tc.gpu, 1)
			code, out, stderr := runStdin(t, in, "k8s", "merge", "-f", "-", "-o", "json")
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d (want %d)\n%s\n%s", code, tc.code, out, stderr)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"schemaVersion", "affinity", "preferred", "admit"} {
				if _, ok := m[k]; !ok {
					t.Errorf("output lacks %q", k)
				}
			}
		})
	}
	code, _, stderr := runStdin(t, `{"policy":"best-effort","numaNodes":[0,1],"providers":[{},{"gpu":[{"affinity":[70]}]}]}`, "k8s", "merge", "-f", "-")
	if code != cli.ExitUsage || !strings.Contains(stderr, "stdin:1: providers[1].gpu[0].affinity: NUMA id 70 beyond 63") {
		t.Errorf("bad input: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runStdin(t, "", "k8s", "merge", "-f", filepath.Join(t.TempDir(), "missing.json"))
	if code != cli.ExitUsage || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestK8sKubelet(t *testing.T) {
	dir := t.TempDir()
	nodeFile := filepath.Join("..", "..", "k8s", "kubeletcfg", "testdata", "node-2numa-smt.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nmemoryManagerPolicy: Static\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runStdin(t, "", "k8s", "kubelet", "lint", bad, "--node", nodeFile)
	if code != cli.ExitFindings || !strings.Contains(out, "[cpumanager] unable to determine reserved CPU resources for static policy") {
		t.Fatalf("lint bad: exit %d\n%s", code, out)
	}
	// recommend -> lint round trip, for a node file and a live (fixture) host.
	for _, src := range [][]string{{"--node", nodeFile}, {"--root", testhost.Path(t, "dgx-h100")}} {
		for _, profile := range []string{"training", "inference"} {
			code, out, stderr := runStdin(t, "", append([]string{"k8s", "kubelet", "recommend", "--profile", profile}, src...)...)
			if code != cli.ExitOK || !strings.Contains(out, "kind: KubeletConfiguration") {
				t.Fatalf("recommend %v %s: exit %d\n%s%s", src, profile, code, out, stderr)
			}
			rec := filepath.Join(dir, "rec.yaml")
			if err := os.WriteFile(rec, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			lintArgs := []string{"k8s", "kubelet", "lint", rec}
			if src[0] == "--node" {
				lintArgs = append(lintArgs, src...)
			} else {
				lintArgs = append(lintArgs, "--live", "--root", src[1])
			}
			code, out, stderr = runStdin(t, "", lintArgs...)
			if code != cli.ExitOK {
				t.Fatalf("lint of recommendation %v %s: exit %d\n%s%s", src, profile, code, out, stderr)
			}
		}
	}
	code, _, stderr := runStdin(t, "", "k8s", "kubelet", "recommend", "--profile", "batch", "--node", nodeFile)
	if code != cli.ExitUsage || !strings.Contains(stderr, `unknown profile "batch"`) {
		t.Errorf("bad profile: exit %d %q", code, stderr)
	}
	code, _, stderr = runStdin(t, "", "k8s", "kubelet", "lint", filepath.Join(dir, "nope.yaml"))
	if code != cli.ExitUsage {
		t.Errorf("missing config: exit %d %q", code, stderr)
	}
}

// mainFull is gpunode-full's Main.
func mainFull(ctx context.Context, env cli.Env) int { return cli.Main(ctx, env, Commands()...) }

// run runs gpunode-full with args and no stdin.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runStdin(t, "", args...)
}
