package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/bench"
	"github.com/gpunode/gpunode/internal/check"
)

// viewport is the window width the page must fit without scrolling
// sideways (issue 28: a 1,400 px window).
const viewport = 1400

// probeJS measures the page as Chromium laid it out and writes the figures
// as JSON into <pre id="probe">, which --dump-dom then prints. It runs only
// in the test's copy of the page; the report itself has no script.
const probeJS = `<script>
(function () {
  var W = window.innerWidth, out = {innerWidth: W, scrollWidth: document.documentElement.scrollWidth, overflow: [], rows: [], fixes: [], nodeText: []};
  function name(e) { return e.tagName + (e.id ? '#' + e.id : '') + (e.getAttribute('class') ? '.' + e.getAttribute('class').replace(/ /g, '.') : ''); }
  document.querySelectorAll('body *').forEach(function (e) {
    var b = e.getBoundingClientRect();
    if (b.width > 0 && (b.right > W + 0.5 || b.left < -0.5)) out.overflow.push(name(e) + ' ' + b.left.toFixed(1) + '..' + b.right.toFixed(1));
  });
  document.querySelectorAll('#audit tr.check').forEach(function (r) {
    out.rows.push({status: r.getAttribute('data-status'), key: r.querySelector('code').textContent});
  });
  document.querySelectorAll('code.fix').forEach(function (e) {
    var td = e.closest('td').getBoundingClientRect(), b = e.getBoundingClientRect(), rg = document.createRange();
    rg.selectNodeContents(e);
    var tops = {};
    Array.prototype.forEach.call(rg.getClientRects(), function (r) { if (r.width > 0) tops[Math.round(r.top)] = 1; });
    out.fixes.push({chars: e.textContent.length, right: b.right, cellRight: td.right, scrollWidth: e.scrollWidth, clientWidth: e.clientWidth, lines: Object.keys(tops).length});
  });
  var svg = document.getElementById('topo-svg');
  if (svg) {
    var s = svg.getBoundingClientRect();
    out.svg = {left: s.left, right: s.right, width: s.width, viewBoxWidth: svg.viewBox.baseVal.width};
    svg.querySelectorAll('g.numa').forEach(function (g) {
      var box = g.querySelector('rect').getBBox();
      g.querySelectorAll('text').forEach(function (t) {
        var b = t.getBBox();
        if (b.x + b.width > box.x + box.width || b.x < box.x) out.nodeText.push(g.getAttribute('data-node') + ': ' + t.textContent);
      });
    });
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

type probe struct {
	InnerWidth  float64  `json:"innerWidth"`
	ScrollWidth float64  `json:"scrollWidth"`
	Overflow    []string `json:"overflow"`
	Rows        []struct {
		Status check.Status `json:"status"`
		Key    string       `json:"key"`
	} `json:"rows"`
	Fixes []struct {
		Chars       int     `json:"chars"`
		Right       float64 `json:"right"`
		CellRight   float64 `json:"cellRight"`
		ScrollWidth float64 `json:"scrollWidth"`
		ClientWidth float64 `json:"clientWidth"`
		Lines       int     `json:"lines"`
	} `json:"fixes"`
	SVG *struct {
		Left, Right, Width, ViewBoxWidth float64
	} `json:"svg"`
	NodeText []string `json:"nodeText"`
}

// numaBench is a saved NUMA result over nodes 0..n-1 (every pair), so
// that the page shows an n x n matrix.
func numaBench(t *testing.T, n int) *bench.Saved {
	r := &bench.NUMAResult{ArrayBytes: 840 << 20, LatencyBytes: 840 << 20, DurationSeconds: 60}
	for c := 0; c < n; c++ {
		r.Nodes = append(r.Nodes, c)
		for m := 0; m < n; m++ {
			p := bench.NUMAPair{CPUNode: c, MemNode: m, Distance: 10, CopyGBps: 200, TriadGBps: 220, LatencyNs: 90}
			if c != m {
				p.Distance, p.CopyGBps, p.TriadGBps, p.LatencyNs, p.CopyVsLocal = 32, 95.2, 104.8, 189, 0.476
			}
			r.Pairs = append(r.Pairs, p)
		}
	}
	return saved(t, fmt.Sprintf("numa-%d", n), r)
}

func benchSamples(t *testing.T, nodes int) []*bench.Saved {
	h2d := &bench.H2DResult{GPU: 0, BDF: "0000:18:00.0", GPUNode: 0, RemoteNode: 1, LinkGen: "Gen5", LinkWidth: 16, LinkGBps: 63, Method: "cuMemcpyHtoD/DtoH of 512 MiB, 16 copies per sample, median of 3 samples"}
	for _, dir := range []string{"h2d", "d2h"} {
		for _, mem := range []string{"pageable", "pinned"} {
			for i, pl := range []string{"local", "remote"} {
				h2d.Cases = append(h2d.Cases, bench.H2DCase{Direction: dir, Memory: mem, Placement: pl, Node: i, CPUs: "0-55,112-167", GBps: 50 - 10*float64(i), VsLink: (50 - 10*float64(i)) / 63})
			}
		}
	}
	alloc := &bench.AllocResult{Workload: "threads", Command: []string{"gpunode", "bench", "alloc-workload"}, Repeats: 3, Runs: []bench.AllocRun{
		{Allocator: "glibc", WallSeconds: []float64{1.2, 1.0, 1.1}, MedianWallSeconds: 1.1, MedianUserSeconds: 2.2, MedianSysSeconds: 0.1, MedianMaxRSSBytes: 100 << 20, WallSpread: 0.135},
		{Allocator: "jemalloc", Library: "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", WallSeconds: []float64{0.5, 0.6, 0.55}, MedianWallSeconds: 0.55, MedianUserSeconds: 1.1, MedianSysSeconds: 0.1, MedianMaxRSSBytes: 80 << 20, WallVsGlibc: 0.5, RSSVsGlibc: 0.8},
	}}
	return []*bench.Saved{numaBench(t, nodes), saved(t, "h2d-gpu0", h2d), saved(t, "alloc-threads", alloc)}
}

// The page in a real browser (Debian's chromium, headless) at 1,400 px, on
// dgx-h100 and amd-8numa with saved benches: it loads with no console
// errors; the DOM Chromium built holds one SVG element per GPU, NIC and
// NUMA node; and, measured by a probe script in a copy of the page,
// nothing reaches past 1,400 px, the picture is drawn at full size, the
// audit rows are in severity order, every fix stays in its cell and the
// long ones wrap onto several lines. -update rewrites the screenshots
// testdata/report-HOST.png; GPUNODE_ARTIFACTS=DIR writes them there.
func TestChromium(t *testing.T) {
	chromium := ""
	for _, c := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(c); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("GPUNODE_REAL_CHROMIUM") == "1" {
			t.Fatal("GPUNODE_REAL_CHROMIUM=1 (set by .ci/run) but no chromium, chromium-browser or google-chrome on PATH")
		}
		t.Skip("no chromium installed (GPUNODE_REAL_CHROMIUM=1 makes this a failure)")
	}
	for _, c := range []struct {
		host  string
		nodes int
	}{{"dgx-h100", 2}, {"amd-8numa", 8}} {
		t.Run(c.host, func(t *testing.T) {
			in := fixtureInput(t, c.host)
			in.Bench = benchSamples(t, c.nodes)
			b, err := HTML(in)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			runs := 0
			run := func(page []byte, args ...string) (string, string) {
				runs++
				file := filepath.Join(dir, fmt.Sprintf("page%d.html", runs))
				if err := os.WriteFile(file, page, 0o644); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
					"--disable-sync", "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, fmt.Sprintf("profile%d", runs)),
					"--enable-logging=stderr", "--v=0", fmt.Sprintf("--window-size=%d,1200", viewport)}
				cmd := exec.CommandContext(ctx, chromium, append(append(base, args...), "file://"+file)...)
				cmd.Dir = dir
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
				}
				return out.String(), errb.String()
			}

			// The page as shipped: no console errors, the elements, a screenshot.
			shot := filepath.Join(dir, "shot.png")
			dom, logs := run(b, "--dump-dom")
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "Refused to") {
					t.Errorf("console: %s", l)
				}
			}
			if !strings.Contains(dom, `<svg xmlns="http://www.w3.org/2000/svg" id="topo-svg"`) {
				t.Fatal("no topology SVG in the DOM")
			}
			for cls, want := range map[string]int{"gpu": len(in.Topo.GPUs), "nic": len(in.Topo.NICs), "numa": len(in.Topo.NUMANodes)} {
				if n := count([]byte(dom), `<g class="`+cls+`[ "]`); n != want || want == 0 {
					t.Errorf("DOM: %d %s elements, want %d", n, cls, want)
				}
			}
			run(b, "--screenshot="+shot)
			png, err := os.ReadFile(shot)
			if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 20000 {
				t.Fatalf("screenshot: %v, %d bytes", err, len(png))
			}
			name := "report-" + c.host + ".png"
			if art := os.Getenv("GPUNODE_ARTIFACTS"); art != "" {
				if err := os.WriteFile(filepath.Join(art, name), png, 0o644); err != nil {
					t.Error(err)
				}
			}
			if *update {
				if err := os.WriteFile(filepath.Join("testdata", name), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			// The probe: the same page with the script allowed and added.
			csp := "default-src 'none';"
			if bytes.Count(b, []byte(csp)) != 1 || bytes.Count(b, []byte("</body>")) != 1 {
				t.Fatalf("page has no single %q or </body> to instrument", csp)
			}
			probed := bytes.Replace(b, []byte(csp), []byte(csp+" script-src 'unsafe-inline';"), 1)
			probed = bytes.Replace(probed, []byte("</body>"), []byte(probeJS+"</body>"), 1)
			dom, _ = run(probed, "--dump-dom")
			m := regexp.MustCompile(`<pre id="probe">([^<]*)</pre>`).FindStringSubmatch(dom)
			if m == nil {
				t.Fatal("the probe wrote nothing")
			}
			var p probe
			if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &p); err != nil {
				t.Fatalf("probe: %v", err)
			}
			t.Logf("window %v px, page %v px wide; SVG %+v; %d rows, %d fixes", p.InnerWidth, p.ScrollWidth, p.SVG, len(p.Rows), len(p.Fixes))
			if p.InnerWidth != viewport {
				t.Fatalf("window %v px wide, want %d", p.InnerWidth, viewport)
			}
			if p.ScrollWidth > viewport {
				t.Errorf("page %v px wide, more than the %d px window", p.ScrollWidth, viewport)
			}
			for i, o := range p.Overflow {
				if i == 10 {
					t.Errorf("... and %d more elements past the window's edges", len(p.Overflow)-i)
					break
				}
				t.Errorf("element past the window's edges: %s", o)
			}
			if p.SVG == nil {
				t.Fatal("no SVG measured")
			}
			if p.SVG.Right > viewport || p.SVG.Width < p.SVG.ViewBoxWidth-0.5 {
				t.Errorf("SVG at %v..%v, %v px for %v units: cut off or shrunk", p.SVG.Left, p.SVG.Right, p.SVG.Width, p.SVG.ViewBoxWidth)
			}
			for _, s := range p.NodeText {
				t.Errorf("text outside its NUMA node box: node %s", s)
			}
			if len(p.Rows) != len(in.Report.Checks) {
				t.Errorf("%d audit rows, %d checks", len(p.Rows), len(in.Report.Checks))
			}
			for i := 1; i < len(p.Rows); i++ {
				a, z := p.Rows[i-1], p.Rows[i]
				if a.Status.Severity() > z.Status.Severity() || (a.Status == z.Status && a.Key > z.Key) {
					t.Errorf("row %d (%s %s) after row %d (%s %s): not in severity order", i, z.Status, z.Key, i-1, a.Status, a.Key)
				}
			}
			wrapped := 0
			for i, f := range p.Fixes {
				if f.Right > f.CellRight+0.5 || f.ScrollWidth > f.ClientWidth {
					t.Errorf("fix %d (%d characters) overflows its cell: right %v, cell %v, scroll %v of %v", i, f.Chars, f.Right, f.CellRight, f.ScrollWidth, f.ClientWidth)
				}
				if f.Chars > 200 && f.Lines < 2 {
					t.Errorf("fix %d (%d characters) on %d line(s)", i, f.Chars, f.Lines)
				}
				if f.Lines > 1 {
					wrapped++
				}
			}
			if wrapped == 0 {
				t.Errorf("no fix wraps (%d fixes): the test sees no long fix", len(p.Fixes))
			}
		})
	}
}
