package tune

import "github.com/gpunode/gpunode/internal/check"

// Describe lists the catalogue's settings, and the checks of tune's own
// source of the competing tuners (tuners.go), as check descriptions (ids a
// profile may name; 'gpunode audit --list-checks').
func (c *Catalogue) Describe() []check.Description {
	out := make([]check.Description, 0, len(c.settings)+4)
	for _, s := range c.settings {
		out = append(out, check.Description{ID: s.ID, Layer: s.Layer, Title: s.Title, Section: s.Section()})
	}
	return append(out, TunerSource{}.Describe()...)
}

// ProcessChecks describes the checks --pid adds (subject: pidN).
func ProcessChecks() []check.Description {
	d := func(id, title string) check.Description {
		return check.Description{ID: id, Layer: LayerProcess, Subject: "process (pidN)", Title: title}
	}
	return []check.Description{
		d("process.swap", "no memory of the process swapped out"),
		d("process.memlock", "RLIMIT_MEMLOCK unlimited (pinned memory for CUDA and RDMA)"),
		d("process.allocator", "the malloc the process uses (report only)"),
		d("process.cpu-affinity", "the process's threads run on CPUs of its GPUs' NUMA nodes"),
		d("process.numa-policy", "the process's memory policy matches its GPUs' NUMA nodes"),
	}
}

// LayerOrder lists the layers in display order.
func LayerOrder() []string {
	out := make([]string, len(layerOrder))
	for l, i := range layerOrder {
		out[i] = l
	}
	return out
}
