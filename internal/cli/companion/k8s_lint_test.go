package companion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestK8sLintCommand(t *testing.T) {
	m := filepath.Join("..", "..", "..", "testdata", "manifests")
	rule := func(r, f string) string { return filepath.Join(m, "rules", r, f) }
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.yaml")
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n"
	if err := os.WriteFile(dup, []byte(pod+"---\n"+pod), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"error finding", []string{"k8s", "lint", "-f", rule("gpu.limits", "fail.yaml")}, 1, "[gpu.limits, section 5.2]", ""},
		{"clean", []string{"k8s", "lint", "-f", rule("gpu.limits", "pass.yaml")}, 0, "no findings (1 objects checked, 0 skipped)", ""},
		{"warning under fail-on error", []string{"k8s", "lint", "-f", rule("operator.dcgm-exporter", "fail.yaml"), "--fail-on", "error"}, 0, "operator.dcgm-exporter", ""},
		{"warning at default fail-on", []string{"k8s", "lint", "-f", rule("operator.dcgm-exporter", "fail.yaml")}, 1, "operator.dcgm-exporter", ""},
		{"directory", []string{"k8s", "lint", "-f", filepath.Join(m, "seed")}, 1, "Job/default/training-workers", ""},
		{"files", []string{"k8s", "lint", "-f", rule("gang.hypernode", "fail.yaml"), "-f", rule("gpu.limits", "pass.yaml")}, 1, "HyperNode membership cycle", ""},
		{"single-numa with node and kubelet", []string{"k8s", "lint", "-f", rule("topology.single-numa", "fail.yaml"), "--node-file", rule("topology.single-numa", "node.yaml"), "--kubelet-config", rule("topology.single-numa", "kubelet.yaml")}, 1, "TopologyAffinityError", ""},
		{"nodes", []string{"k8s", "lint", "-f", rule("computedomain.clique", "fail.yaml"), "--nodes", rule("computedomain.clique", "nodes.yaml")}, 1, "2 NVLink cliques", ""},
		{"duplicate", []string{"k8s", "lint", "-f", dup}, 2, "", "dup.yaml:8: document 2: Pod/default/a: metadata.name: Duplicate value"},
		{"no -f", []string{"k8s", "lint"}, 2, "", "-f PATH or --cluster is required"},
		{"bad fail-on", []string{"k8s", "lint", "-f", dup, "--fail-on", "fatal"}, 2, "", "--fail-on"},
		{"bad output", []string{"k8s", "lint", "-f", dup, "-o", "xml"}, 2, "", "or sarif"},
		{"rules", []string{"k8s", "lint", "--rules"}, 0, "computedomain.channel", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("code %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			if tc.code == 2 && out != "" {
				t.Errorf("bad input printed a report: %s", out)
			}
		})
	}
	// stdin, JSON
	b, err := os.ReadFile(rule("deviceplugin.shared-request", "fail.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runStdin(t, string(b), "k8s", "lint", "-f", "-", "-o", "json")
	var rep struct {
		SchemaVersion string `json:"schemaVersion"`
		Findings      []struct{ Rule, Severity, Object, Field, Message, Fix, Section string }
		Objects       int `json:"objects"`
		Skipped       int `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("json: %v code %d %s", err, code, errs)
	}
	if rep.SchemaVersion != "gpunode.k8s.lint/v1" || rep.Objects != 2 || len(rep.Findings) != 1 || rep.Findings[0].Rule != "deviceplugin.shared-request" ||
		rep.Findings[0].Object != "Pod/default/two-shared" || rep.Findings[0].Field != "spec.containers[0].resources.limits[nvidia.com/gpu]" {
		t.Errorf("report %+v", rep)
	}
	// SARIF
	code, out, _ = run(t, "k8s", "lint", "-f", rule("gpu.limits", "fail.yaml"), "-o", "sarif")
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						Region struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil || code != 1 {
		t.Fatalf("sarif: %v code %d", err, code)
	}
	if sarif.Version != "2.1.0" || len(sarif.Runs) != 1 || len(sarif.Runs[0].Results) != 1 || sarif.Runs[0].Results[0].RuleID != "gpu.limits" ||
		sarif.Runs[0].Results[0].Locations[0].PhysicalLocation.Region.StartLine != 2 {
		t.Errorf("sarif %s", out)
	}
}
