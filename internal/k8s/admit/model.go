package admit

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/output"
)

// SchemaVersion of the admit report.
const SchemaVersion = "gpunode.k8s.admit/v1"

// Report is the output of 'gpunode k8s admit'.
type Report struct {
	SchemaVersion string      `json:"schemaVersion"`
	Node          NodeSummary `json:"node"`
	Settings      Settings    `json:"settings"`
	// BoundPods are the pods already bound to a live node (k8s admit
	// --node NAME), admitted first as the node's state; they do not count
	// in Admitted or Rejected.
	BoundPods []PodResult `json:"boundPods,omitempty"`
	Pods      []PodResult `json:"pods"`
	Admitted  int         `json:"admitted"`
	Rejected  int         `json:"rejected"`
}

// NodeSummary describes the simulated node.
type NodeSummary struct {
	Name      string        `json:"name,omitempty"`
	NUMANodes []NUMASummary `json:"numaNodes"`
	// NUMASource says where a live node's NUMA layout came from:
	// "agent-topo" (the gpunode agent's /topo on that node) or "nfd-labels"
	// (the agent's NFD labels, split evenly); empty for a node file or --live.
	NUMASource string `json:"numaSource,omitempty"`
	// Allocatable is the live Node's status.allocatable.
	Allocatable map[string]string `json:"allocatable,omitempty"`
}

// NUMASummary is one NUMA node of the node summary.
type NUMASummary struct {
	ID      int            `json:"id"`
	CPUs    string         `json:"cpus"`
	Memory  string         `json:"memory"`
	Devices map[string]int `json:"devices,omitempty"`
}

// PodResult is the admission result of one pod.
type PodResult struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	QOSClass  string `json:"qosClass"`
	Admitted  bool   `json:"admitted"`
	// Reason and Message are what kubelet writes to the pod status when it
	// rejects the pod.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// PodHint is the merged hint with topologyManagerScope=pod.
	PodHint       *HintOut            `json:"podHint,omitempty"`
	ProviderHints map[string][]string `json:"providerHints,omitempty"`
	Containers    []ContainerResult   `json:"containers,omitempty"`
	Explanation   []string            `json:"explanation,omitempty"`
}

// ContainerResult is what one container got.
type ContainerResult struct {
	Name string `json:"name"`
	// Kind is init, sidecar or app.
	Kind       string   `json:"kind"`
	MergedHint *HintOut `json:"mergedHint,omitempty"`
	// ProviderHints lists each resource's hints (container scope).
	ProviderHints map[string][]string `json:"providerHints,omitempty"`
	CPUs          string              `json:"cpus,omitempty"`
	Memory        []MemoryBlock       `json:"memory,omitempty"`
	Devices       map[string][]string `json:"devices,omitempty"`
}

// MemoryBlock is memory of one type pinned to NUMA nodes.
type MemoryBlock struct {
	NUMANodes []int  `json:"numaNodes"`
	Type      string `json:"type"`
	Size      string `json:"size"`
	Bytes     uint64 `json:"bytes"`
}

// HintOut is a topology hint in the output: numaNodes null means any.
type HintOut struct {
	NUMANodes []int `json:"numaNodes"`
	Preferred bool  `json:"preferred"`
}

func hintOut(h *node.Hint) *HintOut {
	if h == nil {
		return nil
	}
	o := &HintOut{Preferred: h.Preferred}
	if h.Affinity != nil {
		o.NUMANodes = h.Affinity.Bits()
	}
	return o
}

func (h *HintOut) String() string {
	if h == nil {
		return "-"
	}
	a := "any"
	if h.NUMANodes != nil {
		parts := make([]string, len(h.NUMANodes))
		for i, n := range h.NUMANodes {
			parts[i] = fmt.Sprint(n)
		}
		a = "{" + strings.Join(parts, ",") + "}"
	}
	if h.Preferred {
		return a + " preferred"
	}
	return a + " non-preferred"
}

// maxListedHints bounds how many hints per resource the report lists.
const maxListedHints = 8

func summarize(ph []map[string][]node.Hint) map[string][]string {
	out := map[string][]string{}
	for _, m := range ph {
		for r, hs := range m {
			if hs == nil {
				out[r] = []string{"any (no NUMA preference)"}
				continue
			}
			if len(hs) == 0 {
				out[r] = []string{"none (cannot be satisfied)"}
				continue
			}
			// The best maxListedHints hints (preferred first, then narrowest),
			// selected without sorting the whole list (it can hold 10^4+ masks).
			less := func(a, b node.Hint) bool {
				if a.Preferred != b.Preferred {
					return a.Preferred
				}
				if a.Affinity == nil || b.Affinity == nil {
					return a.Affinity == nil && b.Affinity != nil
				}
				return a.Affinity.IsNarrowerThan(*b.Affinity)
			}
			top := make([]node.Hint, 0, maxListedHints+1)
			for _, h := range hs {
				if len(top) == maxListedHints && !less(h, top[len(top)-1]) {
					continue
				}
				i := len(top)
				top = append(top, h)
				for i > 0 && less(top[i], top[i-1]) {
					top[i], top[i-1] = top[i-1], top[i]
					i--
				}
				if len(top) > maxListedHints {
					top = top[:maxListedHints]
				}
			}
			var l []string
			for i := range top {
				l = append(l, hintOut(&top[i]).String())
			}
			if len(hs) > len(top) {
				l = append(l, fmt.Sprintf("... %d more", len(hs)-len(top)))
			}
			out[r] = l
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// WriteTable implements output.Tabler.
func (r *Report) WriteTable(w io.Writer, o output.Options) error {
	if o.NoHeaders {
		// one row per pod, for scripts
		g := output.NewGrid("POD", "QOS", "RESULT", "REASON")
		for _, p := range r.Pods {
			res, reason := "ADMITTED", "-"
			if !p.Admitted {
				res, reason = "REJECTED", p.Reason
			}
			g.AddRow(podName(p), p.QOSClass, res, reason)
		}
		return output.Print(w, g, o)
	}
	fmt.Fprintf(w, "Node %s: topologyManagerPolicy=%s scope=%s cpuManagerPolicy=%s memoryManagerPolicy=%s",
		def(r.Node.Name, "(unnamed)"), r.Settings.TopologyManagerPolicy, r.Settings.TopologyManagerScope, r.Settings.CPUManagerPolicy, r.Settings.MemoryManagerPolicy)
	if r.Settings.ReservedCPUs != "" {
		fmt.Fprintf(w, " reservedCPUs=%s", r.Settings.ReservedCPUs)
	}
	fmt.Fprintln(w)
	if r.Node.NUMASource != "" {
		fmt.Fprintf(w, "NUMA layout: %s (numaSource)\n", r.Node.NUMASource)
	}
	if len(r.BoundPods) > 0 {
		held := 0
		for _, p := range r.BoundPods {
			if p.Admitted {
				held++
			}
		}
		fmt.Fprintf(w, "Bound pods: %d, %d of them holding resources in the simulation\n", len(r.BoundPods), held)
		for _, p := range r.BoundPods {
			if !p.Admitted {
				fmt.Fprintf(w, "  bound pod %s/%s does not fit the simulated node (%s: %s); it holds nothing\n", p.Namespace, p.Name, p.Reason, p.Message)
			}
		}
	}
	for _, p := range r.Pods {
		status := o.Paint("green", "ADMITTED")
		if !p.Admitted {
			status = o.Paint("red", "REJECTED")
		}
		fmt.Fprintf(w, "\nPod %s (%s): %s", podName(p), p.QOSClass, status)
		if !p.Admitted {
			fmt.Fprintf(w, " %s: %s", p.Reason, p.Message)
		}
		fmt.Fprintln(w)
		if p.PodHint != nil {
			fmt.Fprintf(w, "  pod hint: %s\n", p.PodHint)
			writeProviderHints(w, "  ", p.ProviderHints)
		}
		if len(p.Containers) > 0 {
			g := output.NewGrid("CONTAINER", "KIND", "HINT", "CPUS", "MEMORY", "DEVICES")
			g.Indent = "  "
			g.Columns[3].Wrap, g.Columns[4].Wrap, g.Columns[5].Wrap = true, true, true
			for _, c := range p.Containers {
				g.AddRow(c.Name, c.Kind, fmt.Sprint(c.MergedHint), dash(c.CPUs), memString(c.Memory), devString(c.Devices))
			}
			if err := output.Print(w, g, o); err != nil {
				return err
			}
			for _, c := range p.Containers {
				if len(c.ProviderHints) > 0 {
					fmt.Fprintf(w, "  hints for %s:\n", c.Name)
					writeProviderHints(w, "    ", c.ProviderHints)
				}
			}
		}
		for _, e := range p.Explanation {
			if err := output.Para(w, "  ", "why: "+e, o); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintf(w, "\n%d admitted, %d rejected\n", r.Admitted, r.Rejected)
	return err
}

// ListItems implements output.Lister: one row per pod.
func (r *Report) ListItems() any { return r.Pods }

func podName(p PodResult) string {
	if p.Namespace != "" {
		return p.Namespace + "/" + p.Name
	}
	return p.Name
}

func writeProviderHints(w io.Writer, indent string, m map[string][]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s%s: %s\n", indent, k, strings.Join(m[k], ", "))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func memString(bs []MemoryBlock) string {
	if len(bs) == 0 {
		return "-"
	}
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%s %s@%s", b.Type, b.Size, intsString(b.NUMANodes)))
	}
	return strings.Join(parts, " ")
}

func devString(m map[string][]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+strings.Join(m[k], ","))
	}
	return strings.Join(parts, " ")
}

func intsString(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
