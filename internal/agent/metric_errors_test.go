package agent

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpunode/gpunode/internal/topo"
	"github.com/gpunode/gpunode/internal/tune"
)

func metricValue(t *testing.T, ms []prometheus.Metric, name string) (float64, int) {
	t.Helper()
	n, v := 0, 0.0
	for _, m := range ms {
		if !strings.Contains(m.Desc().String(), `fqName: "`+name+`"`) {
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		n++
		if c := pb.GetCounter(); c != nil {
			v = c.GetValue()
		} else {
			v = pb.GetGauge().GetValue()
		}
	}
	return v, n
}

// A series that cannot be built (a device name that is not UTF-8) is left
// out and counted in gpunode_metric_errors_total; the other series stay.
func TestMetricConstructionErrorsCounted(t *testing.T) {
	a, err := New(Config{Audit: func(context.Context) (Result, error) { return Result{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	good := &Snapshot{Seq: 1}
	ms := a.buildMetrics(good)
	if v, n := metricValue(t, ms, "gpunode_metric_errors_total"); n != 1 || v != 0 {
		t.Fatalf("healthy snapshot: gpunode_metric_errors_total = %v (%d series), want 0 (1 series)", v, n)
	}
	bad := &Snapshot{Seq: 2, Result: Result{Report: &tune.Report{}, Topo: &topo.Topology{GPUs: []topo.PCIDevice{
		{Name: "GPU\xff", Kind: "gpu", BDF: "0000:01:00.0", LinkWidth: 16, MaxLinkWidth: 16},
		{Name: "GPU1", Kind: "gpu", BDF: "0000:02:00.0", LinkWidth: 8, MaxLinkWidth: 16},
	}}}}
	ms = a.buildMetrics(bad)
	// GPU\xff: its link width, max width, downgraded, info and local-NICs
	// series (5) fail.
	if v, _ := metricValue(t, ms, "gpunode_metric_errors_total"); v != 5 {
		t.Errorf("gpunode_metric_errors_total = %v, want 5", v)
	}
	if v, n := metricValue(t, ms, "gpunode_pcie_link_width"); n != 1 || v != 8 {
		t.Errorf("gpunode_pcie_link_width: %d series (last %v), want GPU1's 8 only", n, v)
	}
	// The counter is cumulative across snapshots.
	ms = a.buildMetrics(bad)
	if v, _ := metricValue(t, ms, "gpunode_metric_errors_total"); v != 10 {
		t.Errorf("after a second snapshot gpunode_metric_errors_total = %v, want 10", v)
	}
}

// Describe sends every descriptor of descs once: the list is made where
// the descriptors are, so it cannot fall behind the struct.
func TestDescribeSendsEveryDescriptor(t *testing.T) {
	a, err := New(Config{Audit: func(context.Context) (Result, error) { return Result{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	collector{a}.Describe(ch)
	close(ch)
	got := map[*prometheus.Desc]bool{}
	for d := range ch {
		if d == nil || got[d] {
			t.Fatalf("Describe sent %v twice or nil", d)
		}
		got[d] = true
	}
	v := reflect.ValueOf(a.descs)
	fields := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Type() != reflect.TypeFor[*prometheus.Desc]() {
			continue
		}
		fields++
		if !got[(*prometheus.Desc)(f.UnsafePointer())] {
			t.Errorf("Describe does not send descs.%s", v.Type().Field(i).Name)
		}
	}
	if fields < 22 || len(got) != fields {
		t.Errorf("Describe sent %d descriptors; descs has %d", len(got), fields)
	}
}
