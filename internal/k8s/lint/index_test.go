package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/kubeletcfg"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// lintBoth lints files twice: as the Loader does (per-object rules as each
// object is read, the cross-object rules on the reduced index) and with
// every object kept whole and every rule run at the end (the reference).
func lintBoth(t *testing.T, files []string, ctx func(*Input)) (indexed, whole *Report) {
	t.Helper()
	for _, w := range []bool{false, true} {
		l := NewLoader()
		l.Input().whole = w
		ctx(l.Input())
		if err := addFiles(l, files...); err != nil {
			t.Fatalf("%v: %v", files, err)
		}
		if w {
			whole = Run(l.Input())
		} else {
			indexed = Run(l.Input())
		}
	}
	return indexed, whole
}

// TestIndexKeepsWhatRulesRead: for every rule fixture, the seed manifests,
// the upstream examples and a mixed benchmark input, the index gives the
// same report as the whole objects: nothing a cross-object rule reads is
// dropped.
func TestIndexKeepsWhatRulesRead(t *testing.T) {
	var sets [][]string
	fixtures, _ := filepath.Glob(filepath.Join(manifests, "rules", "*", "*.yaml"))
	for _, f := range fixtures {
		base := filepath.Base(f)
		if strings.HasSuffix(base, ".nodes.yaml") || base == "nodes.yaml" || base == "kubelet.yaml" || base == "node.yaml" {
			continue
		}
		sets = append(sets, []string{f})
	}
	if len(sets) < 40 {
		t.Fatalf("only %d rule fixtures", len(sets))
	}
	seed, _ := filepath.Glob(filepath.Join(manifests, "seed", "*.yaml"))
	upstream, _ := filepath.Glob("testdata/upstream/*.yaml")
	sets = append(sets, seed, upstream)
	bench := filepath.Join(t.TempDir(), "bench.yaml")
	if err := os.WriteFile(bench, benchManifests(300), 0o644); err != nil {
		t.Fatal(err)
	}
	sets = append(sets, []string{bench})
	findings := 0
	for _, files := range sets {
		dir := filepath.Dir(files[0])
		ctx := func(in *Input) {
			if b, err := os.ReadFile(filepath.Join(dir, "nodes.yaml")); err == nil {
				in.Nodes, _ = objects.LoadNodes("nodes.yaml", b)
			}
			if kc, err := kubeletcfg.Load(filepath.Join(dir, "kubelet.yaml"), 0); err == nil {
				in.Kubelet = kc
			}
			if n, err := node.Load(filepath.Join(dir, "node.yaml"), 0); err == nil {
				in.Node, in.NodeName = n, n.Name
			}
		}
		got, want := lintBoth(t, files, ctx)
		findings += len(want.Findings)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: the index's report differs from the whole objects':\n%s\n--- whole\n%s", files, dump(got), dump(want))
		}
	}
	if findings < 100 {
		t.Errorf("only %d findings over all inputs: the comparison proves little", findings)
	}
}

func dump(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "objects %d skipped %d\n", r.Objects, r.Skipped)
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s %s %s: %s\n", f.Rule, f.Object, f.Field, f.Message)
	}
	return b.String()
}

// TestIndexIsSmall: Pods that no cross-object rule concerns leave nothing
// in the index; GPU Deployments leave one limitRef each and no decoded
// object; a GPU Job leaves a reduced template (no image, no volumes, no
// CPU or memory).
func TestIndexIsSmall(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: cpu%d}\nspec:\n  containers:\n  - {name: c, image: app, resources: {limits: {cpu: \"1\", memory: 1Gi}}}\n---\n", i)
	}
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu%d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      volumes: [{name: v, emptyDir: {}}]\n      containers:\n      - {name: c, image: app, resources: {limits: {cpu: \"1\", memory: 1Gi, nvidia.com/gpu: \"1\"}}}\n---\n", i)
	}
	b.WriteString("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 2\n  template:\n    spec:\n      restartPolicy: Never\n      volumes: [{name: v, emptyDir: {}}]\n      containers:\n      - {name: c, image: app, resources: {limits: {cpu: \"1\", memory: 1Gi, nvidia.com/gpu: \"1\"}}}\n")
	l := NewLoader()
	if err := l.Add("pods.yaml", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	in := l.Input()
	if in.Checked != 301 || len(in.Objects) != 1 || len(in.pods) != 1 || len(in.limits) != 101 {
		t.Fatalf("checked %d, kept %d objects, %d pod templates, %d limits; want 301, 1, 1, 101", in.Checked, len(in.Objects), len(in.pods), len(in.limits))
	}
	for _, lr := range in.limits[:100] {
		if lr.obj.V != nil || lr.obj.Kind != "Deployment" || lr.res != "nvidia.com/gpu" || lr.value != 1 || lr.path != "spec.template.spec.containers[0]" {
			t.Fatalf("limitRef %+v", lr)
		}
	}
	p := in.pods[0]
	c := p.Spec.Containers[0]
	if p.Obj.Kind != "Job" || c.Image != "" || len(p.Spec.Volumes) != 0 || len(c.Resources.Limits) != 1 || p.Replicas != 2 {
		t.Fatalf("kept more than the rules read: %+v %+v", p.Obj, p.Spec)
	}
}

// TestAPIValidationFields: each refused value is an error finding on its
// object naming the field, as the API server would name it.
func TestAPIValidationFields(t *testing.T) {
	rep := lintFiles(t, filepath.Join(manifests, "rules", RuleAPIValidation, "fail.yaml"))
	var got []string
	for _, f := range ruleFindings(rep, RuleAPIValidation) {
		if f.Severity != SeverityError {
			t.Errorf("%+v: want severity error", f)
		}
		got = append(got, f.Object+" "+f.Field)
	}
	want := []string{
		"Pod/Team-A/Bad_Name metadata.labels", "Pod/Team-A/Bad_Name metadata.labels", "Pod/Team-A/Bad_Name metadata.name",
		"Pod/Team-A/Bad_Name metadata.namespace", "Pod/Team-A/Bad_Name spec.containers[0].name", "Pod/Team-A/Bad_Name spec.nodeSelector",
		"Deployment/ml/web spec.template.metadata.labels", "Namespace/ml.team metadata.name",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields\n%q\nwant\n%q", got, want)
	}
	// the other rules still run on the refused objects
	if len(ruleFindings(rep, "gpu.limits")) != 0 || rep.Objects != 3 {
		t.Errorf("report: %s", dump(rep))
	}
}

// TestKubeletRefusedOnce: a kubelet config the simulator cannot start with
// is said once for the input, not once per object (the rule runs object by
// object).
func TestKubeletRefusedOnce(t *testing.T) {
	dir := filepath.Join(manifests, "rules", "topology.single-numa")
	l := NewLoader()
	in := l.Input()
	var err error
	if in.Kubelet, err = kubeletcfg.Load(filepath.Join(dir, "kubelet.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	in.Kubelet.KC.TopologyManagerScope = "bogus"
	if in.Node, err = node.Load(filepath.Join(dir, "node.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	pods := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c, image: i}]}\n"
	if err := l.Add("pods.yaml", []byte(pods)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range ruleFindings(Run(in), "topology.single-numa") {
		if strings.Contains(f.Message, "kubelet would not start") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d 'kubelet would not start' findings for 2 pods, want 1", n)
	}
}

// The device plugin configs of a ConfigMap's data and of the device plugin
// chart's config.map are found key by key, each finding naming its key in
// the source's own terms.
func TestMapDPsFields(t *testing.T) {
	const bad = "version: v1\n    flags:\n      migStrategy: bogus\n"
	cfg := func(indent string) string { return strings.ReplaceAll(bad, "\n    ", "\n"+indent) }
	l := NewLoader()
	for _, d := range []struct{ file, doc string }{
		{"cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp, namespace: gpu}\ndata:\n  k2: |\n    " + cfg("    ") + "  k1: |\n    " + cfg("    ")},
		{"values.yaml", "config:\n  map:\n    b: |\n      " + cfg("      ") + "    a: |\n      " + cfg("      ")},
	} {
		if err := l.Add(d.file, []byte(d.doc)); err != nil {
			t.Fatalf("%s: %v", d.file, err)
		}
	}
	var got []string
	for _, f := range Run(l.Input()).Findings {
		if f.Rule == "deviceplugin.config" {
			got = append(got, f.File+" "+f.Field)
		}
	}
	want := []string{"cm.yaml data[k1].flags.migStrategy", "cm.yaml data[k2].flags.migStrategy",
		"values.yaml config.map[a].flags.migStrategy", "values.yaml config.map[b].flags.migStrategy"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
