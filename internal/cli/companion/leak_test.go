package companion

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// leaks are Go-internal texts that must not reach a user (issue 28 item 6):
// the parsers' own messages, fmt's verb errors and temporary file names.
var leaks = regexp.MustCompile(`strconv\.|json: cannot unmarshal|error unmarshaling JSON|while decoding JSON|Go struct field|%!|\.tmp-?[0-9]|gpunode-[0-9]{6,}`)

// TestBadInputCorpusLeaksNothing runs every input flag of the k8s commands
// on a corpus of bad files and greps stdout and stderr for leaks; every run
// must be a usage error (exit 2) or a finding (exit 1), never a pass.
func TestBadInputCorpusLeaksNothing(t *testing.T) {
	dir := t.TempDir()
	bad := map[string]string{
		"junk":          "::: this is not YAML {{{\n",
		"scalar":        "hello\n",
		"list":          "- a\n- b\n",
		"name-int":      `{"apiVersion":"v1","kind":"Node","metadata":{"name":1}}`,
		"pod-type":      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: x}\n",
		"pod-neg":       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"-1\"}}}]}\n",
		"pod-qty":       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {cpu: 1x}}}]}\n",
		"kc-type":       "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: many\n",
		"kc-unknown":    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nbogus: 1\n",
		"nodefile-type": "apiVersion: gpunode.io/v1\nkind: Node\nname: n\nnumaNodes: x\n",
		"node-bad-name": "apiVersion: v1\nkind: Node\nmetadata: {name: Bad_Name!}\n",
		"unknown-field": "apiVersion: v1\nkind: Node\nmetadata: {name: a, bogus: 1}\n",
	}
	var files []string
	for name, body := range bad {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	place := filepath.Join("..", "..", "k8s", "place", "testdata", "kueue-nofit")
	admit := filepath.Join("..", "..", "k8s", "admit", "testdata", "seed-5.5.4")
	cmds := []func(f string) []string{
		func(f string) []string {
			return []string{"k8s", "place", "--nodes", f, "--workload", filepath.Join(place, "workload.yaml"), "--topology", filepath.Join(place, "topology.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "place", "--nodes", filepath.Join(place, "nodes.yaml"), "--pods", f, "--workload", filepath.Join(place, "workload.yaml"), "--topology", filepath.Join(place, "topology.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "place", "--nodes", filepath.Join(place, "nodes.yaml"), "--workload", f, "--topology", filepath.Join(place, "topology.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "admit", "--node", f, "-f", filepath.Join(admit, "pods.yaml"), "--kubelet-config", filepath.Join(admit, "kubelet-config.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "admit", "--node", filepath.Join(admit, "node.yaml"), "-f", f, "--kubelet-config", filepath.Join(admit, "kubelet-config.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "admit", "--node", filepath.Join(admit, "node.yaml"), "-f", filepath.Join(admit, "pods.yaml"), "--kubelet-config", f}
		},
		func(f string) []string { return []string{"k8s", "kubelet", "lint", f} },
		func(f string) []string { return []string{"k8s", "lint", "-f", f} },
		func(f string) []string {
			return []string{"k8s", "dra", "allocate", "--slices", f, "--classes", draSeed("classes.yaml"), "--claims", draSeed("5.3.3-claim.yaml")}
		},
		func(f string) []string {
			return []string{"k8s", "dra", "allocate", "--slices", draSeed("slices-dgx-h100.yaml"), "--classes", draSeed("classes.yaml"), "--claims", f}
		},
	}
	runs := 0
	for _, f := range files {
		for _, c := range cmds {
			args := c(f)
			code, out, errs := run(t, args...)
			runs++
			if m := leaks.FindString(out + errs); m != "" {
				t.Errorf("%s: leaks %q:\n%s%s", strings.Join(args, " "), m, out, errs)
			}
			// k8s lint reports what the API server would refuse as
			// findings of its own rules (gpu.limits, ...) and does not
			// check object names: a badly named Node is linted.
			lintName := args[1] == "lint" && strings.HasSuffix(f, "node-bad-name.yaml")
			if code == 0 && !lintName {
				t.Errorf("%s: exit 0 on a bad input\n%s", strings.Join(args, " "), out)
			}
		}
	}
	t.Logf("%d runs", runs)
}
