package lint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// TestSARIF checks the log against the SARIF 2.1.0 schema's required
// properties and enums (sarif-schema-2.1.0.json: sarifLog requires version
// and runs; run requires tool; tool requires driver; toolComponent requires
// name; reportingDescriptor requires id; result requires message; message
// requires text (or id); level is none|note|warning|error; region lines
// are >= 1; ruleIndex is >= 0 and points at the rule with ruleId).
func TestSARIF(t *testing.T) {
	file := filepath.Join(manifests, "rules", "deviceplugin.shared-request", "fail.yaml")
	rep := lintFiles(t, file)
	if len(rep.Findings) == 0 {
		t.Fatal("fixture gave no findings")
	}
	var buf bytes.Buffer
	if err := rep.WriteSARIF(&buf, map[string][]int{file: {1, 8}}); err != nil {
		t.Fatal(err)
	}
	var log map[string]any
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log["version"] != "2.1.0" {
		t.Errorf("version %v", log["version"])
	}
	runs, _ := log["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs: %v", log["runs"])
	}
	run := runs[0].(map[string]any)
	driver := must(t, must(t, run, "tool"), "driver")
	if name, _ := driver["name"].(string); name == "" {
		t.Error("driver.name required")
	}
	rules, _ := driver["rules"].([]any)
	if len(rules) != len(Rules()) {
		t.Errorf("%d rules, want %d", len(rules), len(Rules()))
	}
	for _, r := range rules {
		if id, _ := r.(map[string]any)["id"].(string); id == "" {
			t.Error("reportingDescriptor.id required")
		}
	}
	results, _ := run["results"].([]any)
	if len(results) != len(rep.Findings) {
		t.Fatalf("%d results for %d findings", len(results), len(rep.Findings))
	}
	levels := map[string]bool{"none": true, "note": true, "warning": true, "error": true}
	for i, x := range results {
		res := x.(map[string]any)
		if text, _ := must(t, res, "message")["text"].(string); text == "" {
			t.Errorf("result %d: message.text required", i)
		}
		if !levels[res["level"].(string)] {
			t.Errorf("result %d: level %v", i, res["level"])
		}
		idx := int(res["ruleIndex"].(float64))
		if idx < 0 || idx >= len(rules) || rules[idx].(map[string]any)["id"] != res["ruleId"] {
			t.Errorf("result %d: ruleIndex %d does not point at %v", i, idx, res["ruleId"])
		}
		locs, _ := res["locations"].([]any)
		if len(locs) != 1 {
			t.Fatalf("result %d: locations %v", i, res["locations"])
		}
		phys := must(t, locs[0].(map[string]any), "physicalLocation")
		if uri, _ := must(t, phys, "artifactLocation")["uri"].(string); uri == "" {
			t.Errorf("result %d: no uri", i)
		}
		if reg, ok := phys["region"].(map[string]any); ok {
			if reg["startLine"].(float64) < 1 {
				t.Errorf("result %d: startLine %v", i, reg["startLine"])
			}
		} else {
			t.Errorf("result %d: no region although the file's lines are known", i)
		}
	}
}

func must(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("%s required, got %v", key, m[key])
	}
	return v
}

func TestDocumentLines(t *testing.T) {
	data := []byte("# c\n---\napiVersion: v1\nkind: Pod\n---\n\n# only a comment\n---\nkind: X\n")
	got := DocumentLines(data)
	if len(got) != 2 || got[0] != 3 || got[1] != 9 {
		t.Errorf("lines %v, want [3 9]", got)
	}
	if got := DocumentLines([]byte(` {"kind":"List"}`)); len(got) != 1 || got[0] != 1 {
		t.Errorf("json: %v", got)
	}
}

// TestDocumentLinesMatchLoader: for every fixture, DocumentLines finds as
// many documents as the loader, so SARIF lines point at the right one.
func TestDocumentLinesMatchLoader(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(manifests, "*", "*", "*.yaml"))
	seed, _ := filepath.Glob(filepath.Join(manifests, "seed", "*.yaml"))
	files = append(files, seed...)
	if len(files) < 40 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := objects.Documents(f, b)
		if err != nil {
			t.Fatal(err)
		}
		lines := DocumentLines(b)
		if len(lines) != len(docs) {
			t.Errorf("%s: %d documents, %d start lines", f, len(docs), len(lines))
		}
	}
}
