package gpu

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/check"
)

// XIDInfo is what an XID number means and what to do about it. The texts
// are gpunode's summaries of NVIDIA's "XID Errors" catalogue (docs.nvidia.com
// deploy/xid-errors): facts about the driver, not quotes.
type XIDInfo struct {
	XID     int
	Meaning string
	// Status is the check verdict one occurrence earns: info for errors an
	// application usually causes itself, drift for a GPU that needs
	// attention at the next drain, error for a GPU that is unusable or
	// failing.
	Status check.Status
	Action string
}

// xidTable lists the XIDs an SRE meets most. Unknown XIDs are reported as
// info with a pointer to the catalogue.
var xidTable = []XIDInfo{
	{13, "graphics engine exception (usually an application fault: illegal instruction or out-of-range access)", check.Info, "check the application (cuda-memcheck / compute-sanitizer); repeated across jobs: run diagnostics (dcgmi diag -r 3)"},
	{31, "GPU memory page fault (usually an application's illegal memory access)", check.Info, "check the application; repeated across jobs: run diagnostics"},
	{43, "GPU stopped processing (a channel was reset after an application fault)", check.Info, "check the application; the GPU itself keeps working"},
	{48, "double-bit ECC error (uncorrectable memory error)", check.Error, "drain the node; the processes on the GPU are lost; reset the GPU, then check remapped rows / retired pages"},
	{63, "ECC page retirement or row remap recorded (takes effect at the next GPU reset)", check.Drift, "drain and reset the GPU at the next opportunity"},
	{64, "ECC page retirement or row remapper recording failure", check.Error, "drain the node, reset the GPU, run diagnostics; RMA if it returns"},
	{74, "NVLink error (link fault or training failure)", check.Error, "drain the node; check nvidia-smi nvlink -e counters and the fabric manager; reset the GPU(s)"},
	{79, "GPU has fallen off the bus (no longer reachable over PCIe)", check.Error, "drain and reboot the node; check power and PCIe seating; RMA if it returns"},
	{92, "high single-bit ECC error rate", check.Drift, "watch the corrected-error counters; run diagnostics at the next drain"},
	{94, "contained ECC error (only the affected application was stopped)", check.Drift, "reset the GPU when its clients are drained (row remap pending)"},
	{95, "uncontained ECC error (every application on the GPU is affected)", check.Error, "drain the node and reset the GPU"},
	{119, "GSP RPC timeout (the GPU System Processor firmware did not answer)", check.Error, "drain the node, reset the GPU or reboot; update the driver if it recurs"},
	{120, "GSP error (GPU System Processor firmware fault)", check.Error, "drain the node, reset the GPU or reboot; update the driver if it recurs"},
}

// XIDMeaning returns the table entry of xid (ok false for XIDs outside the
// table).
func XIDMeaning(xid int) (XIDInfo, bool) {
	for _, x := range xidTable {
		if x.XID == xid {
			return x, true
		}
	}
	return XIDInfo{XID: xid, Meaning: "see NVIDIA's XID catalogue", Status: check.Info}, false
}

// XIDEvent is one XID occurrence.
type XIDEvent struct {
	XID int `json:"xid"`
	// PCIAddress (JSON "bdf") is the GPU's bus id as the kernel log names
	// it (domain, bus and device; the log has no function): "0000:3b:00".
	// NVML events carry the GPU's UUID instead.
	PCIAddress string `json:"bdf,omitempty"`
	UUID       string `json:"uuid,omitempty"`
	// Text is the rest of the kernel log line (pid, process, message).
	Text string `json:"text,omitempty"`
}

// xidLine matches the driver's kernel log line
// "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
// Compiled on first use: package initialisers run at every start.
var xidLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`NVRM: Xid \(PCI:([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\): (\d{1,5})\b,? ?(.*)$`)
})

// maxXIDEvents bounds the events kept from one log.
const maxXIDEvents = 4096

// ParseKernelXIDs finds the NVRM Xid lines in kernel log text (kern.log,
// syslog, messages or dmesg output), oldest first, at most maxXIDEvents
// (the newest are kept).
func ParseKernelXIDs(data []byte) []XIDEvent {
	var out []XIDEvent
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !bytes.Contains(line, []byte("NVRM: Xid")) {
			continue
		}
		m := xidLine().FindSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(string(m[2]))
		if err != nil {
			continue
		}
		dom, rest, _ := strings.Cut(strings.ToLower(string(m[1])), ":")
		if len(dom) > 4 {
			dom = strings.TrimLeft(dom[:len(dom)-4], "0") + dom[len(dom)-4:]
		}
		out = append(out, XIDEvent{XID: n, PCIAddress: dom + ":" + rest, Text: strings.TrimSpace(string(m[3]))})
		if len(out) > maxXIDEvents {
			out = out[1:]
		}
	}
	return out
}

// xidChecks makes one gpu.health.xid check per GPU from the events: the
// worst verdict of its XIDs, each XID counted with its meaning. GPUs
// without events get an ok check when the log was read (source non-empty).
func xidChecks(st Status, events []XIDEvent, source string) []check.Check {
	var out []check.Check
	matched := make([]bool, len(events))
	for _, g := range st.GPUs {
		counts := map[int]int{}
		var order []int
		last := map[int]string{}
		for i, e := range events {
			if !eventIsGPU(e, g) {
				continue
			}
			matched[i] = true
			if counts[e.XID] == 0 {
				order = append(order, e.XID)
			}
			counts[e.XID]++
			last[e.XID] = e.Text
		}
		c := check.Check{ID: CheckXID, Layer: Layer, Subject: fmt.Sprintf("gpu%d", g.Index), Section: "2.3",
			Expected: "no XID errors", Detail: fmt.Sprintf("GPU %d %s; XIDs from %s", g.Index, g.UUID, source)}
		if len(order) == 0 {
			c.Status, c.Current = check.OK, "no XID errors"
			out = append(out, c)
			continue
		}
		c.Status = check.Info
		var parts []string
		for _, x := range order {
			info, _ := XIDMeaning(x)
			c.Status = worse(c.Status, info.Status)
			parts = append(parts, fmt.Sprintf("XID %d x%d: %s", x, counts[x], info.Meaning))
			if info.Action != "" && info.Status != check.Info {
				c.Fix = appendNew(c.Fix, fmt.Sprintf("XID %d: %s", x, info.Action))
			}
			if t := last[x]; t != "" {
				c.Detail = check.JoinDetail(c.Detail, fmt.Sprintf("last XID %d: %s", x, t))
			}
		}
		c.Current = strings.Join(parts, "; ")
		out = append(out, c)
	}
	// Events of a GPU the backend does not list (fallen off the bus, or
	// bound elsewhere) are reported on their own.
	other := map[string][]int{}
	var keys []string
	for i, e := range events {
		if matched[i] {
			continue
		}
		k := e.PCIAddress
		if k == "" {
			k = e.UUID
		}
		if other[k] == nil {
			keys = append(keys, k)
		}
		other[k] = append(other[k], e.XID)
	}
	for _, k := range keys {
		st := check.Info
		seen := map[int]bool{}
		var parts []string
		for _, x := range other[k] {
			info, _ := XIDMeaning(x)
			st = worse(st, info.Status)
			if !seen[x] {
				seen[x] = true
				parts = append(parts, fmt.Sprintf("XID %d: %s", x, info.Meaning))
			}
		}
		out = append(out, check.Check{ID: CheckXID, Layer: Layer, Subject: k, Section: "2.3", Status: st,
			Current:  fmt.Sprintf("%d XID events of a GPU the backend does not list: %s", len(other[k]), strings.Join(parts, "; ")),
			Expected: "no XID errors", Detail: "XIDs from " + source})
	}
	return out
}

func eventIsGPU(e XIDEvent, g GPU) bool {
	if e.UUID != "" {
		return strings.EqualFold(e.UUID, g.UUID)
	}
	return e.PCIAddress != "" && g.PCIAddress != "" && strings.HasPrefix(g.PCIAddress, e.PCIAddress+".")
}

// worse returns the more severe of two statuses (error > drift >
// pending-reboot > info > ok).
func worse(a, b check.Status) check.Status {
	rank := func(s check.Status) int {
		switch s {
		case check.Error:
			return 4
		case check.Drift:
			return 3
		case check.PendingReboot:
			return 2
		case check.Info:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
