package agent

// The agent's emitted names and limits, pinned as literals from the spec
// (README "Fleet", deploy/ rules): metric names, HELP texts, types and
// label names; the series bounds at, below and above their edge; the NFD
// file limit; log fields; HTTP answers. Nothing here is built from the
// package's own constants.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/irq"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

func mtTopo() *topo.Topology {
	return &topo.Topology{
		NUMANodes: []topo.NUMANode{{ID: 0, CPUs: topo.NewCPUList(cpuset.New(0, 1))}, {ID: 1, CPUs: topo.NewCPUList(cpuset.New(2, 3))}},
		GPUs: []topo.PCIDevice{
			{Kind: "gpu", Name: "GPU0", BDF: "0000:1B:00.0", NUMANode: 0, LinkWidth: 8, MaxLinkWidth: 16,
				LinkSpeed: topo.ParsePCIeSpeed("16.0 GT/s PCIe"), MaxLinkSpeed: topo.ParsePCIeSpeed("32.0 GT/s PCIe"), LinkDowngraded: true},
			{Kind: "gpu", Name: "GPU1", BDF: "0000:41:00.0", NUMANode: 1},
		},
		NICs: []topo.PCIDevice{{Kind: "nic", Name: "mlx5_0", BDF: "0000:1c:00.0", NUMANode: 0, LinkWidth: 16, MaxLinkWidth: 16}},
		Links: []topo.Link{
			{A: "GPU0", B: "mlx5_0", Class: "PIX"},
			{A: "mlx5_0", B: "GPU1", Class: "SYS"},
		},
	}
}

func mtResult() Result {
	aligned := true
	return Result{
		Report: &tune.Report{Profile: "base", Checks: []check.Check{
			{ID: "cpu.governor", Layer: "cpu", Status: check.Drift},
			{ID: "cpu.governor", Layer: "cpu", Status: check.OK}, // same key: one series
			{ID: "gpu.mig", Subject: "GPU0", Layer: "gpu", Status: check.OK},
		}, Summary: check.Summary{OK: 1, Drift: 1}},
		Topo: mtTopo(),
		GPUs: []GPU{{Index: 0, BDF: "0000:1b:00.0", UUID: "GPU-aaaa", Model: "H100"}},
		IRQ: &irq.Report{Devices: []irq.Device{{Kind: "gpu", Name: "GPU0", BDF: "0000:1b:00.0",
			IRQs: []irq.IRQ{{IRQ: 1, OffNode: true}, {IRQ: 2}, {IRQ: 3, OffNode: true}}}}},
		Pods: &podresources.Report{Pods: []podresources.Pod{{Namespace: "ml", Name: "train-0",
			Containers: []podresources.Container{{Name: "main", Aligned: &aligned, GPUs: []podresources.GPU{{BDF: "0000:1b:00.0"}}}}}}},
	}
}

func gather(t *testing.T, a *Agent) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelNames(m *dto.Metric) string {
	var ns []string
	for _, l := range m.GetLabel() {
		ns = append(ns, l.GetName())
	}
	sort.Strings(ns)
	return strings.Join(ns, ",")
}

func series(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(kv)
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		out[strings.Join(kv, ",")] = v
	}
	return out
}

// Every family the agent exports: its name, type, HELP and label names,
// as the README documents them.
func TestMetricFamiliesLiteral(t *testing.T) {
	enf := &Enforcer{Apply: func(context.Context) (EnforceResult, error) { return EnforceResult{Steps: 1}, nil }, MinInterval: time.Hour}
	res := mtResult()
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) { return res, nil }, Enforce: enf,
		Build: Build{Version: "v1", Commit: "abc", GoVersion: "go1"}})
	a.Cycle(context.Background())
	want := map[string][3]string{
		"gpunode_check_status":                            {"GAUGE", "1 for the current status of each check (check is id or id/subject).", "check,layer,status"},
		"gpunode_checks":                                  {"GAUGE", "Number of checks by status in the last successful audit.", "status"},
		"gpunode_gpu_info":                                {"GAUGE", "1 per GPU: PCI address, UUID, NUMA node and model.", "bdf,container,gpu,model,namespace,numa_node,pod,uuid"},
		"gpunode_numa_nodes":                              {"GAUGE", "Number of NUMA nodes.", ""},
		"gpunode_pcie_link_width":                         {"GAUGE", "Current PCIe link width (lanes) of a GPU or NIC.", "bdf,device,kind"},
		"gpunode_pcie_link_max_width":                     {"GAUGE", "Maximum PCIe link width (lanes) of a GPU or NIC.", "bdf,device,kind"},
		"gpunode_pcie_link_speed_gts":                     {"GAUGE", "Current PCIe link speed in GT/s of a GPU or NIC.", "bdf,device,kind"},
		"gpunode_pcie_link_max_speed_gts":                 {"GAUGE", "Maximum PCIe link speed in GT/s of a GPU or NIC.", "bdf,device,kind"},
		"gpunode_pcie_link_downgraded":                    {"GAUGE", "1 when the PCIe link trained below its capability in width or speed (speed alone is often idle power saving: alert on width, or on the pcie.link check).", "bdf,device,kind"},
		"gpunode_gpu_local_nics":                          {"GAUGE", "Number of NICs on the GPU's NUMA node (0: GPU/NIC misaligned).", "container,gpu,namespace,numa_node,pod"},
		"gpunode_gpu_nearest_nic_info":                    {"GAUGE", "1 per GPU: its nearest NIC and their link class (PIX, PXB, PHB, NODE, SYS).", "class,container,gpu,namespace,nic,pod"},
		"gpunode_device_irqs":                             {"GAUGE", "Number of IRQs of a GPU or NIC.", "bdf,device,kind"},
		"gpunode_device_irqs_off_node":                    {"GAUGE", "Number of a device's IRQs routed (or, with a sample, served) off its NUMA node.", "bdf,device,kind"},
		"gpunode_audit_duration_seconds":                  {"GAUGE", "Duration of the last audit cycle.", ""},
		"gpunode_audits_total":                            {"COUNTER", "Audit cycles run since the agent started.", ""},
		"gpunode_audit_errors_total":                      {"COUNTER", "Audit cycles that failed (error or panic) since the agent started.", ""},
		"gpunode_audit_success":                           {"GAUGE", "1 when the last audit cycle succeeded.", ""},
		"gpunode_last_successful_audit_timestamp_seconds": {"GAUGE", "Unix time of the last successful audit.", ""},
		"gpunode_build_info":                              {"GAUGE", "1, labelled with gpunode's build.", "commit,goversion,version"},
		"gpunode_enforce_actions_total":                   {"COUNTER", "--enforce actions by outcome (applied, nothing, failed, rate-limited).", "outcome"},
		"gpunode_metric_errors_total":                     {"COUNTER", "Series the agent could not build (a label value that is not UTF-8, a label count that does not match) since it started: they are left out of /metrics.", ""},
		"gpunode_pod_numa_aligned":                        {"GAUGE", "1 when a running container's GPUs are on NUMA nodes of its CPUs and its memory, 0 when not (check k8s.pod.numa; no series when it cannot be decided).", "container,namespace,pod"},
	}
	got := gather(t, a)
	for name, w := range want {
		mf := got[name]
		if mf == nil {
			t.Errorf("no family %s", name)
			continue
		}
		if mf.GetType().String() != w[0] || mf.GetHelp() != w[1] {
			t.Errorf("%s: %s %q, want %s %q", name, mf.GetType(), mf.GetHelp(), w[0], w[1])
		}
		for _, m := range mf.GetMetric() {
			if l := labelNames(m); l != w[2] {
				t.Errorf("%s: labels %s, want %s", name, l, w[2])
			}
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		}
	}
	// Values and label values.
	for _, c := range []struct {
		fam  string
		want map[string]float64
	}{
		{"gpunode_check_status", map[string]float64{"check=cpu.governor,layer=cpu,status=drift": 1, "check=gpu.mig/GPU0,layer=gpu,status=ok": 1}},
		{"gpunode_checks", map[string]float64{"status=ok": 1, "status=drift": 1, "status=pending-reboot": 0, "status=absent": 0, "status=error": 0, "status=info": 0}},
		{"gpunode_gpu_info", map[string]float64{
			"bdf=0000:1B:00.0,container=main,gpu=GPU0,model=H100,namespace=ml,numa_node=0,pod=train-0,uuid=GPU-aaaa": 1,
			"bdf=0000:41:00.0,container=,gpu=GPU1,model=,namespace=,numa_node=1,pod=,uuid=":                          1}},
		{"gpunode_gpu_local_nics", map[string]float64{"container=main,gpu=GPU0,namespace=ml,numa_node=0,pod=train-0": 1, "container=,gpu=GPU1,namespace=,numa_node=1,pod=": 0}},
		{"gpunode_gpu_nearest_nic_info", map[string]float64{"class=PIX,container=main,gpu=GPU0,namespace=ml,nic=mlx5_0,pod=train-0": 1, "class=SYS,container=,gpu=GPU1,namespace=,nic=mlx5_0,pod=": 1}},
		{"gpunode_pcie_link_width", map[string]float64{"bdf=0000:1B:00.0,device=GPU0,kind=gpu": 8, "bdf=0000:1c:00.0,device=mlx5_0,kind=nic": 16}},
		{"gpunode_pcie_link_max_width", map[string]float64{"bdf=0000:1B:00.0,device=GPU0,kind=gpu": 16, "bdf=0000:1c:00.0,device=mlx5_0,kind=nic": 16}},
		{"gpunode_pcie_link_speed_gts", map[string]float64{"bdf=0000:1B:00.0,device=GPU0,kind=gpu": 16}},
		{"gpunode_pcie_link_max_speed_gts", map[string]float64{"bdf=0000:1B:00.0,device=GPU0,kind=gpu": 32}},
		{"gpunode_pcie_link_downgraded", map[string]float64{"bdf=0000:1B:00.0,device=GPU0,kind=gpu": 1, "bdf=0000:1c:00.0,device=mlx5_0,kind=nic": 0}},
		{"gpunode_device_irqs", map[string]float64{"bdf=0000:1b:00.0,device=GPU0,kind=gpu": 3}},
		{"gpunode_device_irqs_off_node", map[string]float64{"bdf=0000:1b:00.0,device=GPU0,kind=gpu": 2}},
		{"gpunode_numa_nodes", map[string]float64{"": 2}},
		{"gpunode_audits_total", map[string]float64{"": 1}},
		{"gpunode_audit_errors_total", map[string]float64{"": 0}},
		{"gpunode_audit_success", map[string]float64{"": 1}},
		{"gpunode_build_info", map[string]float64{"commit=abc,goversion=go1,version=v1": 1}},
		{"gpunode_enforce_actions_total", map[string]float64{"outcome=applied": 1, "outcome=nothing": 0, "outcome=failed": 0, "outcome=rate-limited": 0}},
		{"gpunode_pod_numa_aligned", map[string]float64{"container=main,namespace=ml,pod=train-0": 1}},
	} {
		mf := got[c.fam]
		if mf == nil {
			continue
		}
		s := series(mf)
		if fmt.Sprint(s) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.fam, s, c.want)
		}
	}
}

func countSeries(t *testing.T, a *Agent, fam string) int {
	t.Helper()
	if mf := gather(t, a)[fam]; mf != nil {
		return len(mf.GetMetric())
	}
	return 0
}

func cycleWith(t *testing.T, res Result) *Agent {
	t.Helper()
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) { return res, nil }})
	a.Cycle(context.Background())
	return a
}

// Series bounds: 4096 check series, 1024 devices per kind, 2048 IRQ
// devices, 4096 pod series; one below, at and one above each.
func TestSeriesBoundsAtTheEdge(t *testing.T) {
	for _, n := range []int{4095, 4096, 4097} {
		r := &tune.Report{}
		for i := 0; i < n; i++ {
			r.Checks = append(r.Checks, check.Check{ID: fmt.Sprintf("c%d", i), Layer: "x", Status: check.OK})
		}
		if got, want := countSeries(t, cycleWith(t, Result{Report: r}), "gpunode_check_status"), min(n, 4096); got != want {
			t.Errorf("%d checks: %d series, want %d", n, got, want)
		}
	}
	for _, n := range []int{1023, 1024, 1025} {
		tp := &topo.Topology{}
		for i := 0; i < n; i++ {
			tp.GPUs = append(tp.GPUs, topo.PCIDevice{Kind: "gpu", Name: fmt.Sprintf("GPU%d", i), BDF: fmt.Sprintf("b%d", i), NUMANode: 0, LinkWidth: 16})
			tp.NICs = append(tp.NICs, topo.PCIDevice{Kind: "nic", Name: fmt.Sprintf("n%d", i), BDF: fmt.Sprintf("nb%d", i), NUMANode: 0, LinkWidth: 16})
		}
		a := cycleWith(t, Result{Report: &tune.Report{}, Topo: tp})
		if got, want := countSeries(t, a, "gpunode_pcie_link_width"), 2*min(n, 1024); got != want {
			t.Errorf("%d GPUs and NICs: %d width series, want %d", n, got, want)
		}
		if got, want := countSeries(t, a, "gpunode_gpu_info"), min(n, 1024); got != want {
			t.Errorf("%d GPUs: %d info series, want %d", n, got, want)
		}
	}
	for _, n := range []int{2047, 2048, 2049} {
		q := &irq.Report{}
		for i := 0; i < n; i++ {
			q.Devices = append(q.Devices, irq.Device{Kind: "nic", Name: fmt.Sprintf("d%d", i), BDF: fmt.Sprintf("b%d", i)})
		}
		if got, want := countSeries(t, cycleWith(t, Result{Report: &tune.Report{}, IRQ: q}), "gpunode_device_irqs"), min(n, 2048); got != want {
			t.Errorf("%d IRQ devices: %d series, want %d", n, got, want)
		}
	}
	for _, n := range []int{4095, 4096, 4097} {
		yes := true
		p := &podresources.Report{}
		for i := 0; i < n; i++ {
			p.Pods = append(p.Pods, podresources.Pod{Namespace: "ns", Name: fmt.Sprintf("p%d", i), Containers: []podresources.Container{{Name: "c", Aligned: &yes}, {Name: "undecided"}}})
		}
		if got, want := countSeries(t, cycleWith(t, Result{Report: &tune.Report{}, Pods: p}), "gpunode_pod_numa_aligned"), min(n, 4096); got != want {
			t.Errorf("%d decided containers: %d series, want %d", n, got, want)
		}
	}
}

// A link is reported only where the topology has one: no width series
// without a width, no downgrade series without speed or width.
func TestPCIeSeriesOnlyWhereKnown(t *testing.T) {
	tp := &topo.Topology{GPUs: []topo.PCIDevice{
		{Kind: "gpu", Name: "w", BDF: "1", MaxLinkWidth: 16},                               // max width only
		{Kind: "gpu", Name: "s", BDF: "2", LinkSpeed: topo.ParsePCIeSpeed("8.0 GT/s")},     // speed only
		{Kind: "gpu", Name: "none", BDF: "3", MaxLinkSpeed: topo.ParsePCIeSpeed("8 GT/s")}, // nothing current
	}}
	a := cycleWith(t, Result{Report: &tune.Report{}, Topo: tp})
	fams := gather(t, a)
	if s := series(fams["gpunode_pcie_link_width"]); fmt.Sprint(s) != "map[bdf=1,device=w,kind=gpu:0]" {
		t.Errorf("width series %v", s)
	}
	if s := series(fams["gpunode_pcie_link_downgraded"]); fmt.Sprint(s) != "map[bdf=2,device=s,kind=gpu:0]" {
		t.Errorf("downgraded series %v", s)
	}
	for _, c := range []struct {
		in string
		v  float64
		ok bool
	}{{"16.0 GT/s PCIe", 16, true}, {"2.5 GT/s", 2.5, true}, {"1 GT/s", 1, true}, {"0 GT/s", 0, false}, {"-1 GT/s", 0, false},
		{"8.0 GB/s", 0, false}, {"8.0", 0, false}, {"Unknown", 0, false}, {"x GT/s", 0, false}} {
		if sp := topo.ParsePCIeSpeed(c.in); sp.GTs != c.v || sp.Known() != c.ok {
			t.Errorf("ParsePCIeSpeed(%q) = %v %v, want %v %v", c.in, sp.GTs, sp.Known(), c.v, c.ok)
		}
	}
}

// Before the first audit, and after failed ones, what the agent says.
func TestFailedCyclesAndEndpoints(t *testing.T) {
	fail := true
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) {
		if fail {
			return Result{}, errors.New("boom")
		}
		return mtResult(), nil
	}, HTML: func(s *Snapshot) ([]byte, error) { return []byte("<html>" + s.Result.Report.Profile), nil }})
	h := a.Handler()
	for _, p := range []string{"/report", "/topo", "/report.html"} {
		code, body := get(t, h, "GET", p)
		if code != 503 || string(body) != "not available yet (no successful audit, or not configured)\n" {
			t.Errorf("%s before an audit: %d %q", p, code, body)
		}
	}
	s := a.Cycle(context.Background())
	if s.Err != "boom" || s.Errors != 1 || s.Audits != 1 || s.Ready() {
		t.Errorf("failed cycle: err %q errors %d audits %d ready %v", s.Err, s.Errors, s.Audits, s.Ready())
	}
	fams := gather(t, a)
	if v := series(fams["gpunode_audit_success"]); fmt.Sprint(v) != "map[:0]" {
		t.Errorf("success after a failure: %v", v)
	}
	if _, ok := fams["gpunode_last_successful_audit_timestamp_seconds"]; ok {
		t.Error("a last-success timestamp before any success")
	}
	fail = false
	a.Cycle(context.Background())
	code, body := get(t, h, "GET", "/report.html")
	if code != 200 || string(body) != "<html>base" {
		t.Errorf("/report.html: %d %q", code, body)
	}
	code, body = get(t, h, "GET", "/report")
	if code != 200 || !bytes.HasPrefix(body, []byte("{\n  \"schemaVersion\": ")) || !bytes.HasSuffix(body, []byte("}\n")) {
		t.Errorf("/report is not indented JSON with two spaces: %d %.40q", code, body)
	}
	fail = true
	s = a.Cycle(context.Background())
	if s.Err != "boom" || s.Errors != 2 || s.Audits != 3 || s.Seq != 3 || !s.Ready() {
		t.Errorf("failure after a success keeps the last result: err %q errors %d audits %d seq %d ready %v", s.Err, s.Errors, s.Audits, s.Seq, s.Ready())
	}
	if code, _ := get(t, h, "GET", "/report"); code != 200 {
		t.Errorf("/report after a later failure: %d", code)
	}
	// Writes are refused with the Allow header.
	rec := doReq(h, "POST", "/metrics")
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

// An HTML renderer that fails leaves /report.html unavailable, not empty.
func TestHTMLFailureIsNotServed(t *testing.T) {
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) { return mtResult(), nil },
		HTML: func(*Snapshot) ([]byte, error) { return []byte("partial"), errors.New("render failed") }})
	a.Cycle(context.Background())
	if code, body := get(t, a.Handler(), "GET", "/report.html"); code != 503 {
		t.Errorf("/report.html after a failed render: %d %q", code, body)
	}
}

// The audit log line names its fields as the README's log example does.
func TestAuditLogFields(t *testing.T) {
	var buf bytes.Buffer
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) { return mtResult(), nil },
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	a.Cycle(context.Background())
	var line map[string]any
	if err := json.Unmarshal(bytes.SplitN(buf.Bytes(), []byte("\n"), 2)[0], &line); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	for k, v := range map[string]any{"msg": "audit", "seq": 1.0, "profile": "base", "ok": 1.0, "drift": 1.0,
		"pendingReboot": 0.0, "absent": 0.0, "error": 0.0, "info": 0.0} {
		if line[k] != v {
			t.Errorf("log field %s = %v, want %v (%s)", k, line[k], v, buf.Bytes())
		}
	}
	if _, ok := line["durationSeconds"]; !ok {
		t.Errorf("no durationSeconds in %s", buf.Bytes())
	}
}

// The NFD feature file is written after each successful audit; only then.
func TestNFDFileWrittenPerCycle(t *testing.T) {
	dir := t.TempDir()
	fail := false
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) {
		if fail {
			return Result{}, errors.New("x")
		}
		return mtResult(), nil
	}, NFDDir: dir})
	a.Cycle(context.Background())
	b, err := os.ReadFile(filepath.Join(dir, "gpunode"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# written by gpunode agent after each audit; do not edit\n" +
		"gpunode.io/audit.drift=1\ngpunode.io/audit.error=0\ngpunode.io/audit.pass=false\n" +
		"gpunode.io/gpu-nic.aligned=false\ngpunode.io/gpu-nic.nearest=SYS\ngpunode.io/gpu.count=2\n" +
		"gpunode.io/gpu.mig-capable=true\ngpunode.io/nic.count=1\ngpunode.io/numa.nodes=2\n" +
		"gpunode.io/pcie.narrow-link=true\ngpunode.io/profile=base\n"
	if string(b) != want {
		t.Errorf("feature file:\n%s\nwant\n%s", b, want)
	}
	os.Remove(filepath.Join(dir, "gpunode"))
	fail = true
	a.Cycle(context.Background())
	if _, err := os.Stat(filepath.Join(dir, "gpunode")); err == nil {
		t.Error("a failed audit wrote the feature file")
	}
}

// NFD features at their decisions: alignment needs a NIC on every GPU's
// node; MIG counts only when its check is not absent; a narrow link is
// width below max (speed does not count).
func TestNFDFeatureDecisions(t *testing.T) {
	get := func(fs []Feature, name string) string {
		for _, f := range fs {
			if f.Name == name {
				return f.Value
			}
		}
		return "<none>"
	}
	tp := mtTopo()
	tp.GPUs[1].NUMANode = 0
	tp.GPUs[0].LinkWidth = 16
	r := Result{Report: &tune.Report{Profile: "p", Checks: []check.Check{{ID: "gpu.mig", Status: "absent"}}}, Topo: tp}
	fs := NFDFeatures(r, "")
	for k, v := range map[string]string{"gpu-nic.aligned": "true", "gpu.mig-capable": "false", "pcie.narrow-link": "false", "profile": "p", "audit.pass": "true"} {
		if got := get(fs, k); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	if got := get(NFDFeatures(r, "override"), "profile"); got != "override" {
		t.Errorf("profile = %s, want override", got)
	}
	tp.NICs = nil
	fs = NFDFeatures(r, "")
	if get(fs, "gpu-nic.aligned") != "false" || get(fs, "gpu-nic.nearest") != "none" {
		t.Errorf("no NICs: aligned %s nearest %s", get(fs, "gpu-nic.aligned"), get(fs, "gpu-nic.nearest"))
	}
	// No GPUs at all: no GPU labels.
	fs = NFDFeatures(Result{Report: &tune.Report{}, Topo: &topo.Topology{}}, "")
	if get(fs, "gpu.mig-capable") != "<none>" || get(fs, "gpu-nic.aligned") != "<none>" {
		t.Errorf("GPU labels without GPUs: %v", fs)
	}
	// GPUs known to the backend only still get the MIG label.
	if got := get(NFDFeatures(Result{Report: &tune.Report{}, GPUs: []GPU{{}}}, ""), "gpu.mig-capable"); got != "false" {
		t.Errorf("backend GPUs: mig-capable %s", got)
	}
}

// NFD's feature-file limit is 64 KiB: a file of exactly 65536 bytes is
// written, one byte more is refused.
func TestNFDFileLimitEdge(t *testing.T) {
	header := len("# written by gpunode agent after each audit; do not edit\n")
	line := func(v string) int { return len("gpunode.io/") + len("f=") + len(v) + 1 }
	for _, total := range []int{65535, 65536, 65537} {
		var fs []Feature
		left := total - header
		for i := 0; left > 0; i++ {
			n := min(60, left-line(""))
			if n < 1 {
				t.Fatalf("cannot fill %d bytes", total)
			}
			fs = append(fs, Feature{"f", strings.Repeat("a", n)})
			left -= line(fs[len(fs)-1].Value)
		}
		if got := len(FormatNFD(fs)); got != total {
			t.Fatalf("built %d bytes, want %d", got, total)
		}
		err := WriteNFDFile(t.TempDir(), "gpunode", fs)
		if (err == nil) != (total <= 65536) {
			t.Errorf("%d bytes: err %v", total, err)
		}
	}
}

// LabelValue at its edges: 63 characters kept, 64 cut; anything but
// [A-Za-z0-9._-] becomes '_', and the ends are alphanumeric.
func TestLabelValueEdges(t *testing.T) {
	for in, want := range map[string]string{
		strings.Repeat("a", 63):             strings.Repeat("a", 63),
		strings.Repeat("a", 64):             strings.Repeat("a", 63),
		"AZaz09.-_x":                        "AZaz09.-_x",
		"a b/c":                             "a_b_c",
		"-._a._-":                           "a",
		"@":                                 "unknown",
		"":                                  "unknown",
		"Z":                                 "Z",
		"0":                                 "0",
		"9.z":                               "9.z",
		"`{[":                               "unknown",
		strings.Repeat("b", 62) + "-c":      strings.Repeat("b", 62), // cut at 63, then the '-' end trimmed
		"x" + strings.Repeat("-", 62) + "y": "x",
	} {
		if got := LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// Run returns the serve error (wrapped) when the listener fails at once.
func TestRunReturnsServeError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	a := newAgent(t, Config{Audit: func(context.Context) (Result, error) { return mtResult(), nil }, Interval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = a.Run(ctx, ln)
	if err == nil || !strings.HasPrefix(err.Error(), "serve: ") || !errors.Is(err, net.ErrClosed) {
		t.Errorf("Run on a closed listener: %v", err)
	}
}

// Enforce: the first drift applies; a second within MinInterval is
// rate-limited; after it, applies again; a failure and "nothing" count.
func TestEnforceOutcomesAtTheInterval(t *testing.T) {
	now := time.Unix(1000, 0)
	steps, fail := 1, false
	e := &Enforcer{MinInterval: time.Minute, Apply: func(context.Context) (EnforceResult, error) {
		if fail {
			return EnforceResult{}, errors.New("x")
		}
		return EnforceResult{Steps: steps}, nil
	}}
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	for i, c := range []struct {
		at   time.Duration
		want string
		set  func()
	}{
		{0, "applied", nil},
		{time.Minute - time.Nanosecond, "rate-limited", nil},
		{time.Minute, "applied", nil},
		{2*time.Minute + time.Second, "nothing", func() { steps = 0 }},
		{4 * time.Minute, "failed", func() { fail = true }},
	} {
		if c.set != nil {
			c.set()
		}
		if got := e.maybeApply(ctx, now.Add(c.at), log); got != c.want {
			t.Errorf("step %d at +%s: %s, want %s", i, c.at, got, c.want)
		}
	}
}

func doReq(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// A scrape of the current snapshot is served from the cached exposition
// (with its length); promhttp, the fallback, streams without one.
func TestScrapeServedFromCache(t *testing.T) {
	a := cycleWith(t, mtResult())
	rec := doReq(a.Handler(), "GET", "/metrics")
	if rec.Code != 200 || rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || rec.Body.Len() == 0 {
		t.Errorf("scrape: %d, Content-Length %q for %d bytes", rec.Code, rec.Header().Get("Content-Length"), rec.Body.Len())
	}
	if !strings.Contains(rec.Body.String(), "\ngpunode_audits_total 1\n") {
		t.Errorf("scrape lacks gpunode_audits_total 1")
	}
}
