// Package printers checks gpunode's -o jsonpath engine (internal/output,
// written for gpunode so that cmd/gpunode does not link client-go) against
// client-go's k8s.io/client-go/util/jsonpath, the engine kubectl runs with
// AllowMissingKeys: the same templates on the same documents give the same
// text, and a template one refuses the other refuses.
package printers

import (
	"bytes"
	"encoding/json"
	"flag"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/jsonpath"

	"github.com/gpunode/gpunode/internal/output"
)

// run.sh passes -cases to every package of the module.
var _ = flag.Int("cases", 0, "unused in this package")

const doc = `{
  "schemaVersion": "gpunode.audit/v1",
  "profile": "training",
  "host": {"name": "dgx-h100-01", "cpus": 224, "smt": true, "kernel": null},
  "summary": {"ok": 3, "drift": 2, "error": 0, "info": 1},
  "checks": [
    {"id": "cpu.governor", "layer": "cpu", "subject": "cpu0", "status": "drift", "current": "powersave", "expected": "performance", "fix": ["cpupower frequency-set -g performance"]},
    {"id": "vm.swappiness", "layer": "os", "status": "ok", "current": "10", "expected": "10", "currentBytes": 0},
    {"id": "hugepages", "layer": "memory", "subject": "node0", "status": "drift", "bound": 1.5, "fix": ["echo 1024 > /sys/...", "sysctl -w vm.nr_hugepages=1024"]},
    {"id": "gpu.persistence", "layer": "gpu", "subject": "gpu7", "status": "ok"},
    {"id": "irq.off-node", "layer": "irq", "status": "info", "detail": "4 IRQs", "labels": {"node": "1", "kind": "gpu"}},
    {"id": "numa.balancing", "layer": "os", "status": "ok", "current": "0"}
  ],
  "gpus": [{"index": 0, "bdf": "0000:18:00.0", "numaNode": 0}, {"index": 7, "bdf": "0000:bb:00.0", "numaNode": 1}],
  "empty": [],
  "flags": [{"n": "a", "on": false}, {"n": "b", "on": null}, {"n": "c"}, {"n": "d", "on": true}],
  "labels": {"a.b/c": "dotted", "plain": "x"}
}`

var templates = []string{
	`{.schemaVersion}`,
	`{.profile} on {.host.name}`,
	`{.host}`,
	`{.host.cpus} {.host.smt} {.host.kernel}`,
	`{.summary.drift}`,
	`{.checks[*].id}`,
	`{.checks[0].id}`,
	`{.checks[-1].id}`,
	`{.checks[1:3].id}`,
	`{.checks[:2].status}`,
	`{.checks[4:].id}`,
	`{.checks[0:6:2].id}`,
	`{.checks[0,2].id}`,
	`{.checks[*].subject}`,
	`{.checks[*].fix}`,
	`{.checks[*].fix[*]}`,
	`{.checks[?(@.status=="drift")].id}`,
	`{.checks[?(@.status!="ok")].id}`,
	`{.checks[?(@.subject)].id}`,
	`{.checks[?(@.bound>1)].id}`,
	`{.checks[?(@.bound<1)].id}`,
	`{.gpus[?(@.numaNode==1)].bdf}`,
	`{.gpus[?(@.index>=0)].index}`,
	`{.checks[?(@.bound>1.0)].id}`,
	`{.checks[?(@.bound<=1.5)].id}`,
	`{.checks[?(@.layer=='os')].current}`,
	`{.checks[?(@.status=="ok")].subject}`,
	`{.host.name}{"\n"}`,
	`{.checks[*]['id','status']}`,
	`{range .checks[*]}{.id}{"\t"}{.status}{"\n"}{end}`,
	`{range .gpus[*]}[{.index}={.bdf}]{end}`,
	`{range .checks[?(@.status=="drift")]}{.id}: {.fix[0]}{"\n"}{end}`,
	`{..id}`,
	`{..bdf}`,
	`{.labels['a.b/c']}`,
	`{.labels['a\.b/c']}`,
	`{.labels.a\.b/c}`,
	`{.labels.plain}`,
	`{.nosuch}`,
	`{.checks[*].nosuch}`,
	`{.empty}`,
	`{.empty[*]}`,
	`{.gpus[0]}`,
	`{.summary.*}`,
	`{.checks[5].id}`,
	`{.checks[9].id}`,
	`{.profile[0]}`,
	`text only`,
	`{"literal"}`,
	`{.checks[?(@.labels.kind=="gpu")].detail}`,
	`{range .checks[*]}{.id}{end`,
	`{.checks[}`,
	`{end}`,
	`{.flags[?(@.on)].n}`,
	`{.flags[?(@.on==true)].n}`,
	`{.flags[?(@.n<"c")].n}`,
	`{.checks[?(@.fix[*]=="x")].id}`,
	`{.checks[?(@.labels==@.labels)].id}`,
	`{.checks[?(@.status==1)].id}`,
	`{.gpus[?(@.index==0.0)].bdf}`,
	`{.host[?(@.name)]}`,
	`{.host.kernel[0]}`,
	`{.host.kernel[?(@.a)]}`,
	`{.checks[1:9].id}`,
	`{.checks[-9:].id}`,
	`{.checks[3:1].id}`,
	`{.checks[6:].id}`,
	`{.checks[2:2:0].id}`,
	`{.checks[1::9223372036854775807].id}`,
}

func TestJSONPathMatchesClientGo(t *testing.T) {
	var data any
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&data); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, tmpl := range templates {
		want, wantErr := clientGo(tmpl, kubectlNumbers(data))
		var got bytes.Buffer
		gotErr := output.Write(&got, output.Format("jsonpath="+tmpl), data, output.Options{})
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("%s: gpunode error %v, client-go error %v (client-go printed %q, gpunode %q)", tmpl, gotErr, wantErr, want, got.String())
			continue
		}
		if unordered[tmpl] {
			// a map's wildcard: client-go walks the map in Go's random
			// order, gpunode in key order; the words must be the same
			g, w := strings.Fields(got.String()), strings.Fields(want)
			slices.Sort(g)
			slices.Sort(w)
			if !slices.Equal(g, w) {
				t.Errorf("%s: gpunode %q, client-go %q (any order)", tmpl, got.String(), want)
			}
		} else if wantErr == nil && got.String() != want {
			t.Errorf("%s:\n  gpunode:   %q\n  client-go: %q", tmpl, got.String(), want)
		}
		compared++
	}
	if compared < 30 {
		t.Errorf("only %d templates compared", compared)
	}
}

var unordered = map[string]bool{`{.summary.*}`: true}

// kubectlNumbers turns json.Numbers into the int64 and float64 that
// kubectl's objects hold (unstructured decoding), so that client-go
// compares them as numbers in filters.
func kubectlNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = kubectlNumbers(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = kubectlNumbers(x)
		}
		return l
	}
	return v
}

func clientGo(tmpl string, data any) (string, error) {
	jp := jsonpath.New("t").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return "", err
	}
	var b bytes.Buffer
	err := jp.Execute(&b, data)
	return b.String(), err
}
