package agent

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/podresources/podresourcestest"
	"github.com/gpunode/gpunode/internal/testhost"
)

// podsAudit is fixtureAudit on dgx-h100 plus the pods the test kubelet
// serves (podresourcestest.DGXH100), read over its socket.
func podsAudit(t *testing.T) AuditFunc {
	fixture := testhost.Path(t, "dgx-h100")
	sock := t.TempDir()
	podresourcestest.Serve(t, sock, podresources.DefaultSocket, podresourcestest.DGXH100(t, sock))
	base := fixtureAudit(t, fixture)
	return func(ctx context.Context) (Result, error) {
		res, err := base(ctx)
		if err != nil {
			return res, err
		}
		ffs, _ := hostfs.New(fixture)
		b, err := gpu.OpenFake(ffs, gpu.FakeFile)
		if err != nil {
			return res, err
		}
		st, _ := b.Status(ctx)
		sfs, _ := hostfs.New(sock)
		pr, err := podresources.Read(ctx, sfs, "", time.Second)
		if err != nil {
			return res, err
		}
		res.Pods = podresources.Analyze(pr, podresources.Options{Topo: res.Topo, GPUs: podresources.HostGPUs(res.Topo, &st), Host: sfs})
		return res, nil
	}
}

func hasLabel(m *dto.Metric, name string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return true
		}
	}
	return false
}

func TestPodLabelsAndAlignment(t *testing.T) {
	a := newAgent(t, Config{Audit: podsAudit(t)})
	if s := a.Cycle(context.Background()); s.Err != "" {
		t.Fatal(s.Err)
	}
	_, body := get(t, a.Handler(), "GET", "/metrics")
	mf := parseMetrics(t, body)

	al := mf["gpunode_pod_numa_aligned"]
	if al == nil {
		t.Fatalf("no gpunode_pod_numa_aligned:\n%s", body)
	}
	want := map[string]float64{"ml/infer-7/server": 0, "ml/train-0/trainer": 1, "research/notebook-2/jupyter": 1}
	if len(al.GetMetric()) != len(want) {
		t.Errorf("%d aligned series, want %d (containers with GPUs only)", len(al.GetMetric()), len(want))
	}
	for _, m := range al.GetMetric() {
		k := label(m, "namespace") + "/" + label(m, "pod") + "/" + label(m, "container")
		if v, ok := want[k]; !ok || m.GetGauge().GetValue() != v {
			t.Errorf("gpunode_pod_numa_aligned{%s} = %g", k, m.GetGauge().GetValue())
		}
	}

	// Per-GPU series: a held GPU names its container, a free one has the
	// three labels empty (as dcgm-exporter), a time-sliced one its holder.
	holders := map[string]string{"GPU0": "ml/train-0/trainer", "GPU3": "ml/train-0/trainer", "GPU4": "ml/infer-7/server",
		"GPU5": "research/notebook-2/jupyter", "GPU6": "//", "GPU7": "//"}
	for _, name := range []string{"gpunode_gpu_info", "gpunode_gpu_local_nics", "gpunode_gpu_nearest_nic_info"} {
		fam := mf[name]
		if fam == nil {
			t.Fatalf("no %s", name)
		}
		if name != "gpunode_gpu_nearest_nic_info" && len(fam.GetMetric()) != 8 {
			t.Errorf("%s: %d series, want 8 (one holder per GPU here)", name, len(fam.GetMetric()))
		}
		for _, m := range fam.GetMetric() {
			for _, l := range []string{"namespace", "pod", "container"} {
				if !hasLabel(m, l) {
					t.Errorf("%s{gpu=%q} has no %s label", name, label(m, "gpu"), l)
				}
			}
			g := label(m, "gpu")
			if w, ok := holders[g]; ok {
				if got := label(m, "namespace") + "/" + label(m, "pod") + "/" + label(m, "container"); got != w {
					t.Errorf("%s{gpu=%q}: holder %q, want %q", name, g, got, w)
				}
			}
		}
	}
}

// One GPU held by two containers (MIG devices, time-sliced replicas) has a
// series per holder; a container holding two shares of one GPU has one.
func TestGPUHolders(t *testing.T) {
	idx := 2
	g := podresources.GPU{Index: &idx, BDF: "0000:3A:00.0"}
	r := &podresources.Report{Pods: []podresources.Pod{
		{Namespace: "a", Name: "p", Containers: []podresources.Container{{Name: "c", GPUs: []podresources.GPU{g, g}}}},
		{Namespace: "b", Name: "q", Containers: []podresources.Container{{Name: "d", GPUs: []podresources.GPU{g}}, {Name: "cpu-only"}}},
	}}
	h := gpuHolders(r)
	if got := h["0000:3a:00.0"]; len(got) != 2 || got[0] != (holder{"a", "p", "c"}) || got[1] != (holder{"b", "q", "d"}) {
		t.Errorf("holders %v", got)
	}
	if len(gpuHolders(nil)) != 0 {
		t.Error("nil report")
	}
}
