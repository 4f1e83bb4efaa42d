package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/goldenfile"
	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

const manifests = "../../../testdata/manifests"

// lintFiles loads files and the optional context next to them: for a
// fixture fail*.yaml / pass.yaml, <variant>.nodes.yaml else nodes.yaml,
// kubelet.yaml and node.yaml.
func lintFiles(t *testing.T, files ...string) *Report {
	t.Helper()
	dir := filepath.Dir(files[0])
	variant := strings.SplitN(strings.TrimSuffix(filepath.Base(files[0]), ".yaml"), "-", 2)[0]
	nodesFile := filepath.Join(dir, variant+".nodes.yaml")
	if _, err := os.Stat(nodesFile); err != nil {
		nodesFile = filepath.Join(dir, "nodes.yaml")
	}
	// the context is set before the objects are read: the per-object
	// rules run as each object is decoded
	l := NewLoader()
	in := l.Input()
	var err error
	if b, err := os.ReadFile(nodesFile); err == nil {
		if in.Nodes, err = objects.LoadNodes(nodesFile, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kubelet.yaml")); err == nil {
		if in.Kubelet, err = kubeletcfg.Load(filepath.Join(dir, "kubelet.yaml"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node.yaml")); err == nil {
		if in.Node, err = node.Load(filepath.Join(dir, "node.yaml"), 0); err != nil {
			t.Fatal(err)
		}
		in.NodeName = in.Node.Name
	}
	if err = addFiles(l, files...); err != nil {
		t.Fatalf("load %v: %v", files, err)
	}
	return Run(in)
}

func loadFiles(files ...string) (*Input, error) {
	l := NewLoader()
	if err := addFiles(l, files...); err != nil {
		return nil, err
	}
	return l.Input(), nil
}

func addFiles(l *Loader, files ...string) error {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := l.Add(f, b); err != nil {
			return err
		}
	}
	return nil
}

func ruleFindings(r *Report, id string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Rule == id {
			out = append(out, f)
		}
	}
	return out
}

// TestEveryRuleFailsAndPasses runs each rule's fixtures: every fail*.yaml
// gives at least one finding of the rule, pass.yaml gives none; every
// registered rule has both.
func TestEveryRuleFailsAndPasses(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules() {
		if ids[r.ID] {
			t.Fatalf("duplicate rule id %s", r.ID)
		}
		ids[r.ID] = true
		if r.Section == "" || r.Summary == "" || r.Check == nil || r.Severity.Rank() == 0 {
			t.Errorf("rule %s: incomplete registration", r.ID)
		}
	}
	for _, r := range Rules() {
		r := r
		t.Run(r.ID, func(t *testing.T) {
			dir := filepath.Join(manifests, "rules", r.ID)
			fails, _ := filepath.Glob(filepath.Join(dir, "fail*.yaml"))
			var cases []string
			for _, f := range fails {
				if !strings.HasSuffix(f, ".nodes.yaml") {
					cases = append(cases, f)
				}
			}
			if len(cases) == 0 {
				t.Fatalf("no failing fixture in %s", dir)
			}
			for _, f := range cases {
				got := ruleFindings(lintFiles(t, f), r.ID)
				if len(got) == 0 {
					t.Errorf("%s: no %s finding", f, r.ID)
				}
				for _, g := range got {
					if g.Severity != r.Severity || g.Section != r.Section || g.Object == "" || g.Message == "" || g.Fix == "" {
						t.Errorf("%s: incomplete finding %+v", f, g)
					}
				}
			}
			pass := filepath.Join(dir, "pass.yaml")
			if _, err := os.Stat(pass); err != nil {
				t.Fatalf("no passing fixture: %v", err)
			}
			if got := ruleFindings(lintFiles(t, pass), r.ID); len(got) != 0 {
				t.Errorf("%s: want no %s finding, got %+v", pass, r.ID, got)
			}
		})
	}
	dirs, _ := os.ReadDir(filepath.Join(manifests, "rules"))
	for _, d := range dirs {
		if !ids[d.Name()] {
			t.Errorf("fixture directory %s names no rule", d.Name())
		}
	}
}

// TestSeed lints the chapter's YAML (5.3-5.7) in one run: the report is a
// golden file, and every finding is one the README justifies (shm.size and
// net.multi-node on the NCCL examples).
func TestSeed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(manifests, "seed", "*.yaml"))
	sort.Strings(files)
	rep := lintFiles(t, files...)
	justified := map[string]bool{"shm.size": true, "net.multi-node": true}
	for _, f := range rep.Findings {
		if !justified[f.Rule] {
			t.Errorf("unexpected finding on the seed: %+v", f)
		}
	}
	if rep.Objects < 30 {
		t.Errorf("objects = %d, want the seed's 30+", rep.Objects)
	}
	var buf bytes.Buffer
	if err := output.Write(&buf, output.JSON, rep, output.Options{}); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/seed.json", buf.Bytes(), *update)
	buf.Reset()
	if err := rep.WriteTable(&buf, output.Options{}); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/seed.txt", buf.Bytes(), *update)
}

func TestJSONShape(t *testing.T) {
	rep := lintFiles(t, filepath.Join(manifests, "rules", "gpu.limits", "fail.yaml"))
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := sortedRaw(m)
	if strings.Join(keys, ",") != "findings,objects,schemaVersion,skipped" {
		t.Errorf("top-level keys %v", keys)
	}
	var fs []map[string]json.RawMessage
	if err := json.Unmarshal(m["findings"], &fs); err != nil || len(fs) == 0 {
		t.Fatalf("findings: %v %s", err, m["findings"])
	}
	if k := strings.Join(sortedRaw(fs[0]), ","); k != "field,fix,message,object,rule,section,severity" {
		t.Errorf("finding keys %s", k)
	}
	clean := Run(&Input{})
	b, _ = json.Marshal(clean)
	if !bytes.Contains(b, []byte(`"findings":[]`)) {
		t.Errorf("empty report: %s", b)
	}
}

func sortedRaw(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestBadInput: invalid YAML, a wrong apiVersion for a known kind and a
// duplicate object are errors naming the file, document and field.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a\n", "bad.yaml:3: document 1"},
		{"apiVersion", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: d}\n", "bad.yaml:5: document 2: Deployment \"d\": apiVersion: Unsupported value: \"apps/v1beta1\""},
		{"dra-version", "apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceClaim\nmetadata: {name: c}\n", "apiVersion: Unsupported value: \"resource.k8s.io/v1alpha3\""},
		{"duplicate", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n", "bad.yaml:8: document 2: Pod/default/a: metadata.name: Duplicate value: \"default/a\" (also bad.yaml: document 1)"},
		{"unknown-field", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containerz: []}\n", "document 1: Pod \"a\": "},
		{"no-kind", "apiVersion: v1\nmetadata: {name: a}\n", "kind: Required value"},
		{"cd-field", "apiVersion: resource.nvidia.com/v1beta1\nkind: ComputeDomain\nmetadata: {name: cd}\nspec: {numnodes: 1}\n", "ComputeDomain \"cd\""},
	}
	for _, c := range cases {
		l := NewLoader()
		err := l.Add("bad.yaml", []byte(c.data))
		var oe *objects.Error
		if !errors.As(err, &oe) {
			t.Errorf("%s: want *objects.Error, got %v", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		}
	}
	// a same-named kind of another project is skipped, not an error
	l := NewLoader()
	if err := l.Add("kyverno.yaml", []byte("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec: {rules: []}\n")); err != nil {
		t.Fatal(err)
	}
	if in := l.Input(); in.Skipped != 1 || len(in.Objects) != 0 {
		t.Errorf("kyverno ClusterPolicy: skipped %d objects %d", in.Skipped, len(in.Objects))
	}
}

// TestUpstreamExamples decodes configs NVIDIA publishes (saved under
// testdata/upstream with their source) and expects no finding from the
// rule that checks them.
func TestUpstreamExamples(t *testing.T) {
	files, _ := filepath.Glob("testdata/upstream/*.yaml")
	if len(files) == 0 {
		t.Fatal("no upstream examples")
	}
	for _, f := range files {
		rep := lintFiles(t, f)
		if rep.Objects == 0 {
			t.Errorf("%s: nothing decoded (skipped %d)", f, rep.Skipped)
		}
		for _, fd := range rep.Findings {
			if fd.Rule == "deviceplugin.config" || fd.Rule == "dra.gpuconfig" || fd.Rule == "dra.cel" {
				t.Errorf("%s: %+v", f, fd)
			}
		}
	}
}

// TestNodesFromInput: Node objects among the manifests stand in for
// --nodes (a cluster dump linted as a whole).
func TestNodesFromInput(t *testing.T) {
	dir := filepath.Join(manifests, "rules", "computedomain.clique")
	in, err := loadFiles(filepath.Join(dir, "fail.yaml"), filepath.Join(dir, "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ruleFindings(Run(in), "computedomain.clique"); len(got) != 1 {
		t.Errorf("clique findings with Nodes in the input: %+v", got)
	}
	in, err = loadFiles(filepath.Join(dir, "fail.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ruleFindings(Run(in), "computedomain.clique"); len(got) != 0 {
		t.Errorf("clique findings without nodes: %+v", got)
	}
}

// TestUpstreamDecoded: the published device plugin configs decode into the
// typed config (not only "no finding"), with the values the README gives.
func TestUpstreamDecoded(t *testing.T) {
	in, err := loadFiles("testdata/upstream/device-plugin-readme-configs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := newContext(in)
	if len(c.DP) != 5 {
		t.Fatalf("%d device plugin configs, want 5", len(c.DP))
	}
	byKey := map[string]*DPConfig{}
	for _, d := range c.DP {
		if d.Cfg == nil {
			t.Fatalf("%s: %s", d.Key, d.Err)
		}
		byKey[d.Key] = d
	}
	if s := byKey["config0"].migStrategy(); s != "none" {
		t.Errorf("config0 migStrategy %q", s)
	}
	ts := byKey["timeslicing-renamed"].Cfg.Sharing.TimeSlicing
	if ts == nil || !ts.RenameByDefault || len(ts.Resources) != 1 || *ts.Resources[0].Replicas != 10 || sharedName(ts.Resources[0], true) != "nvidia.com/gpu.shared" {
		t.Errorf("timeslicing-renamed: %+v", ts)
	}
	if m := byKey["mps"].Cfg.Sharing.MPS; m == nil || m.Resources[0].Name != "nvidia.com/gpu" {
		t.Errorf("mps: %+v", m)
	}
	in, err = loadFiles("testdata/upstream/gpu-operator-v1-clusterpolicy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cp := in.Objects[0].V.(*objects.ClusterPolicy)
	if cp.Spec.MIG.Strategy != "single" || !cp.Spec.Driver.On() || !cp.Spec.MIGManager.On() || cp.Spec.Operator.DefaultRuntime != "crio" {
		t.Errorf("ClusterPolicy spec: %+v", cp.Spec)
	}
}

// TestSourcesSkipsFIFO: a FIFO in a directory is not read (it would block).
func TestSourcesSkipsFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: X\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscallMkfifo(filepath.Join(dir, "b.yaml")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got, charts, err := Sources([]string{dir, "-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 0 {
		t.Errorf("charts %v in a directory with no chart", charts)
	}
	if len(got) != 2 || got[0] != filepath.Join(dir, "a.yaml") || got[1] != "-" {
		t.Errorf("sources %v", got)
	}
}
