package report

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"testing"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune"
)

var update = flag.Bool("update", false, "rewrite the screenshots testdata/report-dgx-h100.png and report-amd-8numa.png (TestChromium)")

func fixtureInput(t *testing.T, host string) Input {
	t.Helper()
	fs, err := hostfs.New(testhost.Path(t, host))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cat := tune.NewCatalogue()
	p, err := (&tune.Loader{Cat: cat, Host: fs, Checks: irq.Source{}.Describe()}).Load(tune.ProfileBase)
	if err != nil {
		t.Fatal(err)
	}
	h := tune.NewHost(ctx, fs)
	r, err := tune.Audit(ctx, h, cat, p, tune.Options{Sources: []check.Source{irq.Source{FS: fs, Topo: h.Topo}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := irq.Analyze(ctx, fs, h.Topo, irq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Input{Report: r, Topo: h.Topo, IRQ: q, Generated: "2026-01-01T00:00:00Z"}
}

func count(b []byte, re string) int { return len(regexp.MustCompile(re).FindAll(b, -1)) }

func TestHTMLFixtures(t *testing.T) {
	for _, host := range []string{"dgx-h100", "gh200", "amd-8numa", "downgraded", "vm-2vcpu"} {
		t.Run(host, func(t *testing.T) {
			in := fixtureInput(t, host)
			b, err := HTML(in)
			if err != nil {
				t.Fatal(err)
			}
			tp := in.Topo
			if n := count(b, `<g class="gpu[ "]`); n != len(tp.GPUs) {
				t.Errorf("%d GPU elements, %d GPUs", n, len(tp.GPUs))
			}
			if n := count(b, `<g class="nic[ "]`); n != len(tp.NICs) {
				t.Errorf("%d NIC elements, %d NICs", n, len(tp.NICs))
			}
			if n := count(b, `<g class="numa"`); n != len(tp.NUMANodes) {
				t.Errorf("%d NUMA elements, %d nodes", n, len(tp.NUMANodes))
			}
			down := 0
			for _, d := range append(append(tp.GPUs[:len(tp.GPUs):len(tp.GPUs)], tp.NICs...), tp.NVSwitches...) {
				if d.LinkDowngraded {
					down++
				}
			}
			if n := count(b, `<g class="[a-z]+( bad)? downgraded"`); n != down {
				t.Errorf("%d downgraded elements, %d downgraded links", n, down)
			}
			if n := count(b, `<tr class="check" `); n != len(in.Report.Checks) {
				t.Errorf("%d audit rows, %d checks", n, len(in.Report.Checks))
			}
			for _, bad := range []string{"<script", "http://", "https://", "src=", "@import"} {
				if bytes.Contains(b, []byte(bad)) && !(bad == "http://" && bytes.Count(b, []byte(bad)) == bytes.Count(b, []byte(`xmlns="http://www.w3.org/2000/svg"`))) {
					t.Errorf("page contains %q: not self-contained", bad)
				}
			}
		})
	}
}

func TestHTMLEscapes(t *testing.T) {
	in := fixtureInput(t, "vm-2vcpu")
	in.Report.Hostname = `<script>alert(1)</script>`
	in.Topo.NICs = append(in.Topo.NICs, in.Topo.NICs...)
	if len(in.Topo.NICs) > 0 {
		in.Topo.NICs[0].Name = `"><script>x</script>`
	}
	b, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("<script")) {
		t.Fatalf("unescaped input in the page")
	}
	if _, err := HTML(Input{}); err == nil {
		t.Fatal("no report accepted")
	}
}

// The audit table of the page prints sizes as a table does: binary units
// and ">= " for a minimum, not the JSON's bytes.
func TestHTMLSizes(t *testing.T) {
	in := fixtureInput(t, "vm-2vcpu")
	in.Report.Checks = append(in.Report.Checks, check.Check{ID: "shm.size", Layer: "memory", Status: check.OK,
		Current: "100%", CurrentBytes: check.Bytes(8 << 30), Expected: "50%", ExpectedBytes: check.Bytes(4 << 30), Bound: check.Minimum})
	b, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>100% of memory (8.0 GiB)</td>", "<td>&gt;= 50% of memory (4.0 GiB)</td>"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
}
