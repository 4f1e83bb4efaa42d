package agent

import (
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/podresources"
	"github.com/gpunode/gpunode/internal/topo"
)

// Metric names: the exposition's API (README "Fleet", deploy/ rules and
// dashboard use them). Renaming one is a breaking change.
const (
	MetricCheckStatus       = "gpunode_check_status"
	MetricChecks            = "gpunode_checks"
	MetricGPUInfo           = "gpunode_gpu_info"
	MetricNUMANodes         = "gpunode_numa_nodes"
	MetricPCIeWidth         = "gpunode_pcie_link_width"
	MetricPCIeMaxWidth      = "gpunode_pcie_link_max_width"
	MetricPCIeSpeed         = "gpunode_pcie_link_speed_gts"
	MetricPCIeMaxSpeed      = "gpunode_pcie_link_max_speed_gts"
	MetricPCIeDowngraded    = "gpunode_pcie_link_downgraded"
	MetricGPULocalNICs      = "gpunode_gpu_local_nics"
	MetricGPUNearestNIC     = "gpunode_gpu_nearest_nic_info"
	MetricIRQs              = "gpunode_device_irqs"
	MetricIRQsOffNode       = "gpunode_device_irqs_off_node"
	MetricAuditDuration     = "gpunode_audit_duration_seconds"
	MetricAudits            = "gpunode_audits_total"
	MetricAuditErrors       = "gpunode_audit_errors_total"
	MetricAuditUp           = "gpunode_audit_success"
	MetricLastSuccess       = "gpunode_last_successful_audit_timestamp_seconds"
	MetricBuildInfo         = "gpunode_build_info"
	MetricEnforce           = "gpunode_enforce_actions_total"
	MetricPodNUMAAligned    = "gpunode_pod_numa_aligned"
	MetricMetricErrors      = "gpunode_metric_errors_total"
	maxCheckSeries          = 4096 // bound per snapshot: a runaway source cannot blow up the exposition
	maxDeviceSeriesPerKind  = 1024
	labelCheck, labelStatus = "check", "status"
	// The pod labels of the per-GPU series, as dcgm-exporter names them:
	// empty on a GPU no container holds.
	labelNamespace, labelPod, labelContainer = "namespace", "pod", "container"
)

type descs struct {
	checkStatus, checks, gpuInfo, numaNodes                         *prometheus.Desc
	pcieWidth, pcieMaxWidth, pcieSpeed, pcieMaxSpeed, pcieDowngrade *prometheus.Desc
	localNICs, nearestNIC, irqs, irqsOff                            *prometheus.Desc
	duration, audits, errors, up, lastSuccess, build                *prometheus.Desc
	enforce, podAligned, metricErrors                               *prometheus.Desc
	// all is every descriptor above, in the order made (Describe).
	all []*prometheus.Desc
}

func newDescs() descs {
	dev := []string{"device", "kind", "bdf"}
	holder := []string{labelNamespace, labelPod, labelContainer}
	var all []*prometheus.Desc
	desc := func(name, help string, labels []string, constLabels prometheus.Labels) *prometheus.Desc {
		x := prometheus.NewDesc(name, help, labels, constLabels)
		all = append(all, x)
		return x
	}
	d := descs{
		checkStatus:   desc(MetricCheckStatus, "1 for the current status of each check (check is id or id/subject).", []string{labelCheck, "layer", labelStatus}, nil),
		checks:        desc(MetricChecks, "Number of checks by status in the last successful audit.", []string{labelStatus}, nil),
		gpuInfo:       desc(MetricGPUInfo, "1 per GPU: PCI address, UUID, NUMA node and model.", append([]string{"gpu", "bdf", "uuid", "numa_node", "model"}, holder...), nil),
		numaNodes:     desc(MetricNUMANodes, "Number of NUMA nodes.", nil, nil),
		pcieWidth:     desc(MetricPCIeWidth, "Current PCIe link width (lanes) of a GPU or NIC.", dev, nil),
		pcieMaxWidth:  desc(MetricPCIeMaxWidth, "Maximum PCIe link width (lanes) of a GPU or NIC.", dev, nil),
		pcieSpeed:     desc(MetricPCIeSpeed, "Current PCIe link speed in GT/s of a GPU or NIC.", dev, nil),
		pcieMaxSpeed:  desc(MetricPCIeMaxSpeed, "Maximum PCIe link speed in GT/s of a GPU or NIC.", dev, nil),
		pcieDowngrade: desc(MetricPCIeDowngraded, "1 when the PCIe link trained below its capability in width or speed (speed alone is often idle power saving: alert on width, or on the pcie.link check).", dev, nil),
		localNICs:     desc(MetricGPULocalNICs, "Number of NICs on the GPU's NUMA node (0: GPU/NIC misaligned).", append([]string{"gpu", "numa_node"}, holder...), nil),
		nearestNIC:    desc(MetricGPUNearestNIC, "1 per GPU: its nearest NIC and their link class (PIX, PXB, PHB, NODE, SYS).", append([]string{"gpu", "nic", "class"}, holder...), nil),
		irqs:          desc(MetricIRQs, "Number of IRQs of a GPU or NIC.", dev, nil),
		irqsOff:       desc(MetricIRQsOffNode, "Number of a device's IRQs routed (or, with a sample, served) off its NUMA node.", dev, nil),
		duration:      desc(MetricAuditDuration, "Duration of the last audit cycle.", nil, nil),
		audits:        desc(MetricAudits, "Audit cycles run since the agent started.", nil, nil),
		errors:        desc(MetricAuditErrors, "Audit cycles that failed (error or panic) since the agent started.", nil, nil),
		up:            desc(MetricAuditUp, "1 when the last audit cycle succeeded.", nil, nil),
		lastSuccess:   desc(MetricLastSuccess, "Unix time of the last successful audit.", nil, nil),
		enforce:       desc(MetricEnforce, "--enforce actions by outcome (applied, nothing, failed, rate-limited).", []string{"outcome"}, nil),
		podAligned:    desc(MetricPodNUMAAligned, "1 when a running container's GPUs are on NUMA nodes of its CPUs and its memory, 0 when not (check k8s.pod.numa; no series when it cannot be decided).", holder, nil),
		build:         desc(MetricBuildInfo, "1, labelled with gpunode's build.", []string{"version", "commit", "goversion"}, nil),
		metricErrors:  desc(MetricMetricErrors, "Series the agent could not build (a label value that is not UTF-8, a label count that does not match) since it started: they are left out of /metrics.", nil, nil),
	}
	d.all = all
	return d
}

// collector serves the current snapshot's pre-built metrics: a scrape
// copies a slice, it never audits.
type collector struct{ a *Agent }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c.a.descs.all {
		ch <- x
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.a.snap.Load().metrics {
		ch <- m
	}
}

// buildMetrics renders s as const metrics, once per snapshot.
func (a *Agent) buildMetrics(s *Snapshot) (out []prometheus.Metric) {
	d := a.descs
	defer func() {
		// last, so that it counts this snapshot's failures too
		out = append(out, prometheus.MustNewConstMetric(d.metricErrors, prometheus.CounterValue, float64(a.metricErrors.Load())))
	}()
	add := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(desc, t, v, labels...)
		if err != nil {
			// Counted and left out: one bad label value must not cost
			// the scrape its other series.
			a.metricErrors.Add(1)
			return
		}
		out = append(out, m)
	}
	b := a.cfg.Build
	add(d.build, prometheus.GaugeValue, 1, b.Version, b.Commit, b.GoVersion)
	add(d.audits, prometheus.CounterValue, float64(s.Audits))
	add(d.errors, prometheus.CounterValue, float64(s.Errors))
	if a.cfg.Enforce != nil {
		for _, o := range []string{EnforceApplied, EnforceNothing, EnforceFailed, EnforceRateLimited} {
			add(d.enforce, prometheus.CounterValue, float64(s.Enforced[o]), o)
		}
	}
	if s.Seq > 0 {
		add(d.duration, prometheus.GaugeValue, s.Duration.Seconds())
		up := 0.0
		if s.Err == "" {
			up = 1
		}
		add(d.up, prometheus.GaugeValue, up)
	}
	if !s.LastSuccess.IsZero() {
		add(d.lastSuccess, prometheus.GaugeValue, float64(s.LastSuccess.UnixMilli())/1e3)
	}
	r := s.Result
	if r.Report == nil {
		return out
	}
	seen := map[string]bool{}
	for i, c := range r.Report.Checks {
		if i >= maxCheckSeries {
			break
		}
		key := c.Key()
		if seen[key] { // two checks with one key would make the registry refuse the scrape
			continue
		}
		seen[key] = true
		add(d.checkStatus, prometheus.GaugeValue, 1, key, c.Layer, string(c.Status))
	}
	sum := r.Report.Summary
	counts := map[check.Status]int{check.OK: sum.OK, check.Drift: sum.Drift, check.PendingReboot: sum.PendingReboot,
		check.Absent: sum.Absent, check.Error: sum.Error, check.Info: sum.Info}
	for _, st := range check.Statuses() {
		add(d.checks, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
	if t := r.Topo; t != nil {
		a.topoMetrics(t, r.GPUs, gpuHolders(r.Pods), add)
	}
	if p := r.Pods; p != nil {
		n := 0
		for _, pod := range p.Pods {
			for _, c := range pod.Containers {
				if c.Aligned == nil || n >= maxCheckSeries {
					continue
				}
				n++
				add(d.podAligned, prometheus.GaugeValue, b2f(*c.Aligned), pod.Namespace, pod.Name, c.Name)
			}
		}
	}
	if q := r.IRQ; q != nil {
		for i, dev := range q.Devices {
			if i >= 2*maxDeviceSeriesPerKind {
				break
			}
			off := 0
			for _, x := range dev.IRQs {
				if x.OffNode {
					off++
				}
			}
			add(d.irqs, prometheus.GaugeValue, float64(len(dev.IRQs)), dev.Name, dev.Kind, dev.BDF)
			add(d.irqsOff, prometheus.GaugeValue, float64(off), dev.Name, dev.Kind, dev.BDF)
		}
	}
	return out
}

// holder is a container holding a GPU: its namespace, pod and container
// names, the values of the per-GPU series' pod labels.
type holder [3]string

// gpuHolders maps each GPU's PCI address to the containers holding it
// (several for MIG devices and time-sliced replicas), each once.
func gpuHolders(p *podresources.Report) map[string][]holder {
	out := map[string][]holder{}
	if p == nil {
		return out
	}
	for _, pod := range p.Pods {
		for _, c := range pod.Containers {
			h := holder{pod.Namespace, pod.Name, c.Name}
			for _, g := range c.GPUs {
				bdf := strings.ToLower(g.BDF)
				if bdf != "" && !slices.Contains(out[bdf], h) {
					out[bdf] = append(out[bdf], h)
				}
			}
		}
	}
	return out
}

func (a *Agent) topoMetrics(t *topo.Topology, gpus []GPU, holders map[string][]holder, add func(*prometheus.Desc, prometheus.ValueType, float64, ...string)) {
	d := a.descs
	add(d.numaNodes, prometheus.GaugeValue, float64(len(t.NUMANodes)))
	byBDF := map[string]GPU{}
	for _, g := range gpus {
		byBDF[strings.ToLower(g.BDF)] = g
	}
	for _, devs := range [][]topo.PCIDevice{t.GPUs, t.NICs} {
		for i, p := range devs {
			if i >= maxDeviceSeriesPerKind {
				break
			}
			if p.MaxLinkWidth > 0 || p.LinkWidth > 0 {
				add(d.pcieWidth, prometheus.GaugeValue, float64(p.LinkWidth), p.Name, p.Kind, p.BDF)
				add(d.pcieMaxWidth, prometheus.GaugeValue, float64(p.MaxLinkWidth), p.Name, p.Kind, p.BDF)
			}
			if p.LinkSpeed.Known() {
				add(d.pcieSpeed, prometheus.GaugeValue, p.LinkSpeed.GTs, p.Name, p.Kind, p.BDF)
			}
			if p.MaxLinkSpeed.Known() {
				add(d.pcieMaxSpeed, prometheus.GaugeValue, p.MaxLinkSpeed.GTs, p.Name, p.Kind, p.BDF)
			}
			if p.LinkSpeed.Text != "" || p.LinkWidth > 0 {
				add(d.pcieDowngrade, prometheus.GaugeValue, b2f(p.LinkDowngraded), p.Name, p.Kind, p.BDF)
			}
		}
	}
	for i, g := range t.GPUs {
		if i >= maxDeviceSeriesPerKind {
			break
		}
		info := byBDF[strings.ToLower(g.BDF)]
		node := strconv.Itoa(g.NUMANode)
		nic, class := t.NearestNIC(g.Name)
		hs := holders[strings.ToLower(g.BDF)]
		if len(hs) == 0 {
			hs = []holder{{}} // a GPU no container holds: empty labels, as dcgm-exporter
		}
		for _, h := range hs {
			add(d.gpuInfo, prometheus.GaugeValue, 1, g.Name, g.BDF, info.UUID, node, info.Model, h[0], h[1], h[2])
			add(d.localNICs, prometheus.GaugeValue, float64(len(t.LocalNICs(g))), g.Name, node, h[0], h[1], h[2])
			if nic != "" {
				add(d.nearestNIC, prometheus.GaugeValue, 1, g.Name, nic, class, h[0], h[1], h[2])
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
