package helmchart

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/helmexec"
)

const deployDir = "../../../deploy"

// generic decodes one manifest into a generic map (nil for no document).
func generic(t *testing.T, name string, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// TestRendersDeploy: the chart rendered as the plain manifests were made
// (release gpunode in namespace gpunode) gives the objects of deploy/*.yaml,
// compared as decoded YAML, one template per object.
func TestRendersDeploy(t *testing.T) {
	files, err := Render(filepath.Join(deployDir, "helm", "gpunode"), nil, Options{Release: "gpunode", Namespace: "gpunode"})
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]string{
		"daemonset.yaml": "daemonset.yaml", "service.yaml": "service.yaml", "serviceaccount.yaml": "serviceaccount.yaml",
		"networkpolicy.yaml": "networkpolicy.yaml", "servicemonitor.yaml": "servicemonitor.yaml", "prometheusrule.yaml": "prometheusrule.yaml",
	}
	seen := 0
	for _, f := range files {
		if !strings.HasPrefix(f.Path, filepath.Join(deployDir, "helm", "gpunode", "templates")+string(filepath.Separator)) {
			t.Errorf("rendered file %s is not under the chart's templates", f.Path)
		}
		want, ok := plain[filepath.Base(f.Path)]
		if !ok {
			continue
		}
		seen++
		b, err := os.ReadFile(filepath.Join(deployDir, want))
		if err != nil {
			t.Fatal(err)
		}
		if got, w := generic(t, f.Path, f.Data), generic(t, want, b); !reflect.DeepEqual(got, w) {
			t.Errorf("%s renders\n%v\nwant deploy/%s\n%v", f.Path, got, want, w)
		}
	}
	if seen != len(plain) {
		t.Errorf("%d of the %d plain manifests had a template", seen, len(plain))
	}
	for _, f := range files {
		if b := filepath.Base(f.Path); strings.HasPrefix(b, "_") || b == "NOTES.txt" {
			t.Errorf("partial or notes rendered: %s", f.Path)
		}
	}
}

// TestValuesMerge: later values files win key by key; maps merge.
func TestValuesMerge(t *testing.T) {
	a, err := ParseValues(Values{File: "a.yaml", Data: []byte("x: {p: 1, q: 2}\nys: [1]\n")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseValues(Values{File: "b.yaml", Data: []byte("x: {q: 3, r: 4}\nys: [2]\n")})
	if err != nil {
		t.Fatal(err)
	}
	got := merge(merge(map[string]any{}, a), b)
	want := map[string]any{"x": map[string]any{"p": float64(1), "q": float64(3), "r": float64(4)}, "ys": []any{float64(2)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if _, err := ParseValues(Values{File: "bad.yaml", Data: []byte("- 1\n")}); err == nil || !strings.Contains(err.Error(), "--helm-values bad.yaml") {
		t.Errorf("a list as values: %v", err)
	}
}

// TestRenderErrors: a directory without a chart and a template that fails
// are errors naming the chart.
func TestRenderErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Render(dir, nil, Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("no Chart.yaml: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"templates/cm.yaml": "{{ required \"set .Values.name\" .Values.name }}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Render(dir, nil, Options{}); err == nil || !strings.Contains(err.Error(), "set .Values.name") {
		t.Errorf("required value: %v", err)
	}
}

// RenderRequest (gpunode-helm's renderer) gives what Render gives, chart by
// chart in the request's order, and Render's error for a bad values file.
func TestRenderRequestIsRender(t *testing.T) {
	chart := filepath.Join(deployDir, "helm", "gpunode")
	vals := []helmexec.Values{{File: "v.yaml", Data: []byte("agent:\n  port: 9999\n")}}
	got, err := RenderRequest(helmexec.Request{Charts: []string{chart, chart}, Values: vals, Release: "r1", Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(chart, []Values{{File: "v.yaml", Data: vals[0].Data}}, Options{Release: "r1", Namespace: "ns1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(want) == 0 {
		t.Fatalf("%d charts, %d templates", len(got), len(want))
	}
	port := false
	for _, f := range want {
		port = port || strings.Contains(string(f.Data), "9999")
	}
	if !port {
		t.Fatal("the values file's agent.port 9999 is in no template")
	}
	for _, c := range got {
		if c.Chart != chart || len(c.Templates) != len(want) {
			t.Fatalf("chart %s: %d templates, want %d", c.Chart, len(c.Templates), len(want))
		}
		for i, f := range c.Templates {
			if f.Path != want[i].Path || f.Data != string(want[i].Data) {
				t.Errorf("template %d: %s differs from Render's %s", i, f.Path, want[i].Path)
			}
		}
	}
	_, err = RenderRequest(helmexec.Request{Charts: []string{chart}, Values: []helmexec.Values{{File: "bad.yaml", Data: []byte("- a\n")}}})
	var ve *ValuesError
	if !errors.As(err, &ve) || ve.File != "bad.yaml" {
		t.Fatalf("bad values: %v", err)
	}
}
