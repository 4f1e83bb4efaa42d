package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
)

// Health is a GPU's health signals as the driver reports them. Nil fields
// and empty strings are unknown (not reported by this backend or schema).
type Health struct {
	// ResetRequired: the GPU must be reset before it can be used again
	// (nvidia-smi gpu_reset_status, R535+).
	ResetRequired *bool `json:"resetRequired,omitempty"`
	// DrainRecommended: drain the GPU's work and reset it.
	DrainRecommended *bool `json:"drainRecommended,omitempty"`
	// RecoveryAction is the driver's recovery action (schema v13:
	// gpu_recovery_action; NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): "None",
	// "Reset", "Reboot", "Drain P2P", "Drain and Reset".
	RecoveryAction string `json:"recoveryAction,omitempty"`
	// FabricState and FabricStatus are the GPU's NVLink-fabric
	// registration on NVSwitch systems (NVML nvmlDeviceGetGpuFabricInfo;
	// XML <fabric>): state "Not Started", "In Progress", "Completed";
	// status "Success" or the failure.
	FabricState  string `json:"fabricState,omitempty"`
	FabricStatus string `json:"fabricStatus,omitempty"`
	// NVLinkErrors are the per-link error counters (NVML only).
	NVLinkErrors []NVLinkErrors `json:"nvlinkErrors,omitempty"`
	// XIDs are XID events NVML delivered while the status was read.
	XIDs []XIDEvent `json:"xids,omitempty"`
}

// NVLinkErrors are one link's error counters since the driver loaded.
type NVLinkErrors struct {
	Link     int    `json:"link"`
	CRCFlit  uint64 `json:"crcFlit"`
	CRCData  uint64 `json:"crcData"`
	Replay   uint64 `json:"replay"`
	Recovery uint64 `json:"recovery"`
}

// Health check ids.
const (
	CheckReset         = "gpu.health.reset"
	CheckRecovery      = "gpu.health.recovery"
	CheckXID           = "gpu.health.xid"
	CheckNVLinkErrors  = "gpu.health.nvlink"
	CheckFabric        = "gpu.health.fabric"
	CheckFabricManager = "gpu.fabricmanager"
	CheckRetiredPages  = "gpu.health.retired-pages"
	CheckBackendCall   = "gpu.backend.call"
)

// healthReasons say why each health check matters.
var healthReasons = map[string]string{
	CheckReset:         "a GPU that needs a reset fails or corrupts the next job scheduled on it; drain it first (seed 2.3).",
	CheckRecovery:      "the driver's recovery action says what it takes to bring the GPU back (reset, reboot, drain); until done the GPU is not fit for work (seed 2.3).",
	CheckXID:           "XID errors are the driver's record of GPU faults: ECC errors, fallen-off-the-bus, NVLink and GSP failures are the signals SREs drain nodes on (seed 2.3).",
	CheckNVLinkErrors:  "growing NVLink CRC, replay or recovery counters mean a degrading link: collectives slow down, then fail (seed 2.5).",
	CheckFabric:        "on NVSwitch systems a GPU not registered with the fabric cannot run CUDA (cudaErrorSystemNotReady) (seed 2.5).",
	CheckFabricManager: "NVSwitch systems need nvidia-fabricmanager running before CUDA can use the GPUs (seed 2.5).",
	CheckRetiredPages:  "retired pages shrink usable memory; NVIDIA's RMA threshold for dynamic page retirement is 60 retired pages (seed 2.3).",
	CheckBackendCall:   "a driver call that does not answer is a wedged GPU or driver: every tool that touches it hangs (seed 2.1).",
}

// retiredPagesRMA is NVIDIA's dynamic-page-retirement RMA threshold (the
// retirement table holds 64 entries; boards with 60 or more retired pages
// qualify for replacement).
const retiredPagesRMA = 60

// HealthOptions say where HealthChecks reads its host-side signals.
type HealthOptions struct {
	// Host is the host filesystem (--root): the kernel log for XIDs and
	// the fabric manager's state. Nil: neither is read.
	Host *hostfs.FS
	// KernelLog overrides the kernel log files tried (KernelLogFiles).
	KernelLog []string
}

// KernelLogFiles are the text kernel logs searched for NVRM Xid lines, the
// first that exists. /dev/kmsg is not read: it is a character device whose
// read blocks for the next record (hostfs refuses devices), and journald's
// binary journal needs its own reader; rsyslog's text files are plain
// files, which a --root capture carries and a read cannot hang on.
var KernelLogFiles = []string{"/var/log/kern.log", "/var/log/messages", "/var/log/syslog", "/var/log/dmesg"}

// maxLogTail is how much of the end of a kernel log is searched.
const maxLogTail = 8 << 20

// HealthChecks turns st's health signals into checks: reset required,
// recovery action, fabric state, NVLink error counters, retired-page
// thresholds and XIDs (NVML events in st, else the kernel log), plus the
// fabric manager on NVSwitch systems. Backend call failures recorded in
// st.Warnings as timeouts are errors naming the call.
func HealthChecks(st Status, o HealthOptions) []check.Check {
	var out []check.Check
	if st.Backend == KindNone {
		return nil
	}
	for _, f := range st.FailedCalls {
		c := check.Check{ID: CheckBackendCall, Layer: Layer, Subject: callSubject(f.GPU), Section: "2.1",
			Current: f.Error(), Expected: "every driver call answers within --gpu-timeout"}
		if f.Timeout {
			c.Status = check.Error
			c.Fix = []string{"nvidia-smi -q; dmesg | grep -e NVRM -e Xid   # a wedged GPU needs a reset or a reboot"}
		} else {
			c.Status = check.Info
		}
		out = append(out, c)
	}
	nvmlXIDs := false
	var events []XIDEvent
	for _, g := range st.GPUs {
		subject := fmt.Sprintf("gpu%d", g.Index)
		detail := fmt.Sprintf("GPU %d %s", g.Index, g.UUID)
		add := func(id string, s check.Status, cur, exp string, fix ...string) {
			out = append(out, check.Check{ID: id, Layer: Layer, Subject: subject, Section: "2.3", Status: s,
				Current: cur, Expected: exp, Fix: fix, Detail: detail})
		}
		if h := g.Health; h != nil {
			switch {
			case h.ResetRequired != nil && *h.ResetRequired:
				add(CheckReset, check.Error, "the driver says the GPU needs a reset", "no reset required",
					"drain the GPU, stop its clients, then nvidia-smi -i "+g.UUID+" -r")
			case h.DrainRecommended != nil && *h.DrainRecommended:
				add(CheckReset, check.Drift, "the driver recommends draining and resetting the GPU", "no reset required",
					"drain the GPU, then nvidia-smi -i "+g.UUID+" -r")
			case h.ResetRequired != nil:
				add(CheckReset, check.OK, "no reset required", "no reset required")
			}
			if a := h.RecoveryAction; a != "" {
				if strings.EqualFold(a, "None") {
					add(CheckRecovery, check.OK, "recovery action: none", "none")
				} else {
					add(CheckRecovery, check.Error, "the driver asks for recovery action: "+a, "none", recoveryFix(a, g.UUID))
				}
			}
			if h.FabricState != "" || h.FabricStatus != "" {
				switch {
				case strings.EqualFold(h.FabricState, "Completed") && (h.FabricStatus == "" || strings.EqualFold(h.FabricStatus, "Success")):
					add(CheckFabric, check.OK, "fabric registration completed", "Completed/Success")
				case strings.EqualFold(h.FabricState, "Not Supported"):
				default:
					add(CheckFabric, check.Error, fmt.Sprintf("fabric state %s, status %s: CUDA cannot use the GPU until it registers", orDash(h.FabricState), orDash(h.FabricStatus)),
						"Completed/Success", "systemctl status nvidia-fabricmanager; journalctl -u nvidia-fabricmanager")
				}
			}
			if len(h.NVLinkErrors) > 0 {
				var bad []string
				for _, e := range h.NVLinkErrors {
					if e.CRCFlit+e.CRCData+e.Replay+e.Recovery > 0 {
						bad = append(bad, fmt.Sprintf("link %d crc-flit %d crc-data %d replay %d recovery %d", e.Link, e.CRCFlit, e.CRCData, e.Replay, e.Recovery))
					}
				}
				if len(bad) == 0 {
					add(CheckNVLinkErrors, check.OK, fmt.Sprintf("no NVLink errors on %d links", len(h.NVLinkErrors)), "no errors")
				} else {
					add(CheckNVLinkErrors, check.Drift, strings.Join(bad, "; "), "no errors",
						"watch for growth (nvidia-smi nvlink -e -i "+g.UUID+"); recovery errors or fast growth: drain and reset, reseat or RMA")
				}
			}
			if h.XIDs != nil {
				nvmlXIDs = true
				events = append(events, h.XIDs...)
			}
		}
		if rp := g.RetiredPages; rp != nil {
			total := rp.SingleBit + rp.DoubleBit
			switch {
			case total >= retiredPagesRMA:
				add(CheckRetiredPages, check.Error, fmt.Sprintf("%d pages retired (%d single-bit, %d double-bit): at NVIDIA's RMA threshold of %d", total, rp.SingleBit, rp.DoubleBit, retiredPagesRMA),
					fmt.Sprintf("< %d retired pages", retiredPagesRMA), "drain the node and RMA the GPU")
			case rp.DoubleBit > 0:
				add(CheckRetiredPages, check.Drift, fmt.Sprintf("%d pages retired for double-bit errors (%d single-bit)", rp.DoubleBit, rp.SingleBit),
					fmt.Sprintf("< %d retired pages", retiredPagesRMA), "watch for growth; run diagnostics at the next drain")
			default:
				add(CheckRetiredPages, check.OK, fmt.Sprintf("%d pages retired", total), fmt.Sprintf("< %d retired pages", retiredPagesRMA))
			}
		}
	}
	switch {
	case nvmlXIDs:
		out = append(out, xidChecks(st, events, "NVML events")...)
	case o.Host != nil:
		ev, src, err := kernelXIDs(o.Host, o.KernelLog)
		switch {
		case err != nil:
			out = append(out, check.Check{ID: CheckXID, Layer: Layer, Section: "2.3", Status: check.Error,
				Current: "kernel log unreadable", Detail: err.Error()})
		case src == "":
			out = append(out, check.Check{ID: CheckXID, Layer: Layer, Section: "2.3", Status: check.Absent,
				Current: "no text kernel log (" + strings.Join(kernelLogs(o.KernelLog), ", ") + ")",
				Detail:  "XIDs not checked: read them with journalctl -k | grep Xid"})
		default:
			out = append(out, xidChecks(st, ev, src)...)
		}
	}
	if o.Host != nil {
		if c, ok := FabricManagerCheck(o.Host, st); ok {
			out = append(out, c)
		}
	}
	for i := range out {
		out[i].Reason = healthReasons[out[i].ID]
	}
	return out
}

// CallCheck turns a driver call that timed out (a *CallError from a
// backend's Status) into the gpu.backend.call error check naming the GPU
// and the call; ok is false for other errors.
func CallCheck(err error) (check.Check, bool) {
	var ce *CallError
	if !errors.As(err, &ce) || !ce.Timeout {
		return check.Check{}, false
	}
	return check.Check{ID: CheckBackendCall, Layer: Layer, Subject: callSubject(ce.GPU), Section: "2.1", Status: check.Error,
		Current: ce.Error(), Expected: "every driver call answers within --gpu-timeout",
		Fix:    []string{"nvidia-smi -q; dmesg | grep -e NVRM -e Xid   # a wedged GPU needs a reset or a reboot"},
		Reason: healthReasons[CheckBackendCall]}, true
}

func recoveryFix(action, uuid string) string {
	switch strings.ToLower(action) {
	case "reset", "gpu reset":
		return "drain the GPU, stop its clients, then nvidia-smi -i " + uuid + " -r"
	case "reboot", "node reboot":
		return "drain and reboot the node"
	case "drain p2p":
		return "drain the GPU's peer-to-peer (NVLink) work, then reset it"
	default:
		return "drain the node, then follow the action: " + action
	}
}

func kernelLogs(files []string) []string {
	if len(files) > 0 {
		return files
	}
	return KernelLogFiles
}

// kernelXIDs reads the first kernel log that exists (its last maxLogTail
// bytes) and returns its XID events and its path ("" when none exists).
func kernelXIDs(host *hostfs.FS, files []string) ([]XIDEvent, string, error) {
	for _, p := range kernelLogs(files) {
		data, err := host.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, p, fmt.Errorf("%s: %w", p, err)
		}
		if len(data) > maxLogTail {
			data = data[len(data)-maxLogTail:]
		}
		return ParseKernelXIDs(data), p, nil
	}
	return nil, "", nil
}

// DescribeHealth lists the health checks (for check.Describer).
func DescribeHealth() []check.Description {
	per := "gpu (gpuN)"
	return []check.Description{
		{ID: CheckBackendCall, Layer: Layer, Section: "2.1", Title: "every nvidia-smi / NVML call answers within --gpu-timeout"},
		{ID: CheckReset, Layer: Layer, Subject: per, Section: "2.3", Title: "no GPU reset required or recommended"},
		{ID: CheckRecovery, Layer: Layer, Subject: per, Section: "2.3", Title: "no driver recovery action pending"},
		{ID: CheckXID, Layer: Layer, Subject: per, Section: "2.3", Title: "no XID errors (NVML events, else the kernel log)"},
		{ID: CheckNVLinkErrors, Layer: Layer, Subject: per, Section: "2.5", Title: "no NVLink CRC, replay or recovery errors"},
		{ID: CheckFabric, Layer: Layer, Subject: per, Section: "2.5", Title: "GPU registered with the NVLink fabric (NVSwitch systems)"},
		{ID: CheckFabricManager, Layer: Layer, Section: "2.5", Title: "nvidia-fabricmanager running on NVSwitch systems"},
		{ID: CheckRetiredPages, Layer: Layer, Subject: per, Section: "2.3", Title: "retired pages below NVIDIA's RMA threshold (60)"},
	}
}

// callSubject is the subject of a gpu.backend.call check for the GPU a call
// addressed (CallError.GPU): gpuN for an index, else the UUID or "all", so
// that subjects never hold a blank and profiles can select them
// (gpu.backend.call/gpu3).
func callSubject(gpu string) string {
	if gpu != "" && strings.Trim(gpu, "0123456789") == "" {
		return "gpu" + gpu
	}
	return gpu
}
