package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/topo"
)

// NFDPrefix is the label namespace of gpunode's NFD features.
const NFDPrefix = "gpunode.io/"

// nfdMaxBytes is NFD's limit on one feature file.
const nfdMaxBytes = 64 << 10

// Feature is one NFD feature label (name without the prefix).
type Feature struct{ Name, Value string }

// NFDFeatures are the node labels of one audit: the profile, whether every
// check passes, drift and error counts, NUMA node, GPU and NIC counts,
// GPU/NIC alignment, PCIe downgrades and MIG capability.
func NFDFeatures(r Result, profile string) []Feature {
	var fs []Feature
	add := func(name, v string) { fs = append(fs, Feature{name, LabelValue(v)}) }
	if r.Report != nil {
		if profile == "" {
			profile = r.Report.Profile
		}
		add("profile", profile)
		add("audit.pass", strconv.FormatBool(!r.Report.Drifted()))
		add("audit.drift", strconv.Itoa(r.Report.Summary.Drift))
		add("audit.error", strconv.Itoa(r.Report.Summary.Error))
		mig := "false"
		for _, c := range r.Report.Checks {
			if strings.HasPrefix(c.ID, "gpu.mig") && c.Status != "absent" {
				mig = "true"
				break
			}
		}
		if len(r.GPUs) > 0 || (r.Topo != nil && len(r.Topo.GPUs) > 0) {
			add("gpu.mig-capable", mig)
		}
	}
	if t := r.Topo; t != nil {
		add("numa.nodes", strconv.Itoa(len(t.NUMANodes)))
		add("gpu.count", strconv.Itoa(len(t.GPUs)))
		add("nic.count", strconv.Itoa(len(t.NICs)))
		if len(t.GPUs) > 0 {
			aligned := len(t.NICs) > 0
			for _, g := range t.GPUs {
				if len(t.LocalNICs(g)) == 0 {
					aligned = false
				}
			}
			add("gpu-nic.aligned", strconv.FormatBool(aligned))
			add("gpu-nic.nearest", worstNearest(t))
		}
		down := false
		for _, d := range append(append([]topo.PCIDevice{}, t.GPUs...), t.NICs...) {
			down = down || (d.LinkWidth > 0 && d.MaxLinkWidth > 0 && d.LinkWidth < d.MaxLinkWidth)
		}
		add("pcie.narrow-link", strconv.FormatBool(down)) // width only: a lower speed is often idle power saving
	}
	return fs
}

// worstNearest is the worst nearest-NIC class over the GPUs ("SYS" when a
// GPU's nearest NIC is across sockets), "none" without NICs.
func worstNearest(t *topo.Topology) string {
	worst := ""
	for _, g := range t.GPUs {
		_, c := t.NearestNIC(g.Name)
		if c == "" {
			return "none"
		}
		if worst == "" || topo.LinkRank(c) > topo.LinkRank(worst) {
			worst = c
		}
	}
	return worst
}

// LabelValue makes v a valid Kubernetes label value: at most 63 characters
// of [A-Za-z0-9._-], beginning and ending alphanumeric; anything else
// becomes '_' (and an empty result "unknown").
func LabelValue(v string) string {
	b := []byte(v)
	if len(b) > 63 {
		b = b[:63]
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	s := strings.TrimFunc(string(b), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if s == "" {
		return "unknown"
	}
	return s
}

// FormatNFD renders features in NFD's feature-file format, sorted.
func FormatNFD(fs []Feature) []byte {
	sorted := append([]Feature(nil), fs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	b.WriteString("# written by gpunode agent after each audit; do not edit\n")
	for _, f := range sorted {
		fmt.Fprintf(&b, "%s%s=%s\n", NFDPrefix, f.Name, f.Value)
	}
	return []byte(b.String())
}

// WriteNFDFile writes the feature file dir/name atomically: the content
// goes to a dot-file in dir (NFD ignores dot-files), is synced and renamed
// into place, so NFD never reads half a file.
func WriteNFDFile(dir, name string, fs []Feature) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("nfd feature file name %q: want a plain file name", name)
	}
	b := FormatNFD(fs)
	if len(b) > nfdMaxBytes {
		return fmt.Errorf("nfd feature file: %d bytes, over NFD's %d", len(b), nfdMaxBytes)
	}
	// The agent is the one writer of its feature file: temporary files a
	// killed write left behind (dot-files, which NFD ignores) go first.
	stale, _ := filepath.Glob(filepath.Join(dir, "."+name+".gpunode-tmp-*"))
	for _, t := range append(stale, filepath.Join(dir, "."+name+".tmp")) {
		_ = os.Remove(t)
	}
	// One writer for every user-named output file (hostfs.WriteOutput):
	// a dot-file in dir, fsynced and renamed into place, so NFD never
	// reads half a file; a FIFO, device or link in its place is refused.
	if err := hostfs.WriteOutput(filepath.Join(dir, name), b, 0o644, hostfs.OutputOptions{}); err != nil {
		return fmt.Errorf("nfd feature file: %w", err)
	}
	return nil
}
