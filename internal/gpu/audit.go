package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// Severities of a Finding.
const (
	SevOK   = "ok"
	SevInfo = "info"
	SevWarn = "warn"
	SevFail = "fail"
)

// Finding is the result of one GPU check on one GPU (GPU -1: node-wide).
type Finding struct {
	Check    string `json:"check"`
	GPU      int    `json:"gpu"`
	UUID     string `json:"uuid,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Fix      string `json:"fix,omitempty"`
}

// Check ids.
const (
	CheckPersistence   = "gpu.persistence"
	CheckECCMode       = "gpu.ecc.mode"
	CheckECCErrors     = "gpu.ecc.uncorrectable"
	CheckRemappedRows  = "gpu.memory.remap"
	CheckLockedClocks  = "gpu.clocks.locked"
	CheckMIGPending    = "gpu.mig.pending"
	CheckCUDACompat    = "gpu.cuda.compat"
	CheckDriverPresent = "gpu.driver"
)

// AuditOptions tune Audit.
type AuditOptions struct {
	// CUDARuntime is the CUDA runtime/toolkit version in use ("12.4"), e.g.
	// from DetectCUDARuntime; empty skips the compatibility check.
	CUDARuntime string
	// CUDARuntimeSource says where CUDARuntime came from (for messages).
	CUDARuntimeSource string
}

// Audit checks st: persistence mode, ECC mode and uncorrectable errors,
// remapped-row failures, locked clocks, pending MIG mode changes and
// CUDA-driver compatibility. A node without a driver yields one info finding.
func Audit(st Status, o AuditOptions) []Finding {
	var out []Finding
	if st.Backend == KindNone {
		return []Finding{{Check: CheckDriverPresent, GPU: -1, Severity: SevInfo, Message: st.Reason}}
	}
	for _, g := range st.GPUs {
		f := func(check, sev, msg, fix string) {
			out = append(out, Finding{Check: check, GPU: g.Index, UUID: g.UUID, Severity: sev, Message: msg, Fix: fix})
		}
		switch {
		case g.Persistence == nil:
			f(CheckPersistence, SevInfo, "persistence mode unreadable", "")
		case !*g.Persistence:
			f(CheckPersistence, SevWarn, "persistence mode is off: the driver tears the GPU down when idle and the next job pays a cold start",
				"systemctl enable --now nvidia-persistenced (or: gpunode gpu persistence on)")
		default:
			f(CheckPersistence, SevOK, "persistence mode on", "")
		}
		if e := g.ECC; e != nil {
			switch {
			case !e.Current && !e.Pending:
				f(CheckECCMode, SevWarn, "ECC is disabled: memory errors go undetected", "nvidia-smi -i "+g.UUID+" -e 1, then reset the GPU")
			case e.Current != e.Pending:
				f(CheckECCMode, SevWarn, fmt.Sprintf("ECC mode change pending (%s -> %s) until the GPU is reset", boolWord(e.Current), boolWord(e.Pending)), "reset the GPU or reboot")
			default:
				f(CheckECCMode, SevOK, "ECC enabled", "")
			}
			vu, au := e.Volatile.Uncorrected, e.Aggregate.Uncorrected
			switch {
			case vu != nil && *vu > 0:
				f(CheckECCErrors, SevFail, fmt.Sprintf("%d uncorrectable ECC errors since the driver loaded", *vu),
					"drain the node; check remapped rows and XIDs (dmesg); reset the GPU")
			case au != nil && *au > 0:
				f(CheckECCErrors, SevWarn, fmt.Sprintf("%d uncorrectable ECC errors over the GPU's lifetime", *au), "watch for growth; RMA if it grows")
			case vu != nil || au != nil:
				f(CheckECCErrors, SevOK, "no uncorrectable ECC errors", "")
			}
		}
		if r := g.RemappedRows; r != nil {
			switch {
			case r.Failure:
				f(CheckRemappedRows, SevFail, "row remapping failed: the GPU has run out of spare rows", "RMA the GPU")
			case r.Pending:
				f(CheckRemappedRows, SevWarn, "a row remap is pending until the GPU is reset", "drain and reset the GPU")
			case r.Uncorrectable > 0:
				f(CheckRemappedRows, SevInfo, fmt.Sprintf("%d rows remapped for uncorrectable errors", r.Uncorrectable), "")
			}
		}
		if rp := g.RetiredPages; rp != nil && rp.Pending {
			f(CheckRemappedRows, SevWarn, "a page retirement is pending until the GPU is reset", "drain and reset the GPU")
		}
		switch {
		case g.Clocks.Locked != nil:
			f(CheckLockedClocks, SevWarn, fmt.Sprintf("graphics clock locked to %d-%d MHz: GPU Boost cannot raise it", g.Clocks.Locked.MinMHz, g.Clocks.Locked.MaxMHz),
				"gpunode gpu clocks reset (locks are for benchmarks)")
		case g.ClockEvents.Mask&ReasonApplicationsClocks != 0:
			f(CheckLockedClocks, SevWarn, "clocks limited by a clocks setting (locked or application clocks)", "gpunode gpu clocks reset")
		case g.ClockEvents.Known:
			f(CheckLockedClocks, SevOK, "clocks not limited by a setting", "")
		}
		if g.MIG.ResetNeeded() {
			f(CheckMIGPending, SevWarn, fmt.Sprintf("MIG mode change pending (%s -> %s) until the GPU is reset", boolWord(g.MIG.Current), boolWord(g.MIG.Pending)),
				"stop GPU clients (nvidia-persistenced, DCGM, nvidia_drm) and run nvidia-smi -i "+g.UUID+" -r")
		}
	}
	if c, ok := CUDACompat(st.DriverVersion, st.CUDAVersion, o.CUDARuntime); ok {
		if o.CUDARuntimeSource != "" {
			c.Message += " (runtime from " + o.CUDARuntimeSource + ")"
		}
		out = append(out, c)
	}
	return out
}

// cudaMinDriver is the minimum Linux driver of each CUDA major version for
// minor-version compatibility. Source: NVIDIA CUDA Toolkit release notes,
// table "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor
// Version Compatibility" (13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02).
var cudaMinDriver = map[int]string{11: "450.80.02", 12: "525.60.13", 13: "580.00"}

// CUDACompat checks a CUDA runtime version against the driver: fail when the
// driver is older than the runtime major's minimum; warn when the driver's
// own CUDA version is older than the runtime (minor-version compatibility:
// works, but no PTX JIT of newer code; a cuda-compat package fixes it on
// data-center GPUs); ok otherwise. ok is false when nothing can be checked.
func CUDACompat(driver, driverCUDA, runtime string) (Finding, bool) {
	if runtime == "" || driver == "" {
		return Finding{}, false
	}
	f := Finding{Check: CheckCUDACompat, GPU: -1}
	rMaj, rMin, err := parseMajorMinor(runtime)
	if err != nil {
		f.Severity, f.Message = SevWarn, fmt.Sprintf("CUDA runtime version %q: %v", runtime, err)
		return f, true
	}
	if minDrv, ok := cudaMinDriver[rMaj]; ok && compareVersions(driver, minDrv) < 0 {
		f.Severity = SevFail
		f.Message = fmt.Sprintf("CUDA %s needs driver >= %s; driver is %s", runtime, minDrv, driver)
		f.Fix = "upgrade the driver, or install cuda-compat-" + fmt.Sprint(rMaj) + "-" + fmt.Sprint(rMin) + " (data-center GPUs only)"
		return f, true
	}
	if driverCUDA != "" {
		dMaj, dMin, err := parseMajorMinor(driverCUDA)
		if err == nil && (dMaj < rMaj || (dMaj == rMaj && dMin < rMin)) {
			f.Severity = SevWarn
			f.Message = fmt.Sprintf("CUDA %s runs on driver %s (CUDA %s) only through minor-version compatibility: no PTX JIT of newer code", runtime, driver, driverCUDA)
			f.Fix = fmt.Sprintf("upgrade the driver or install cuda-compat-%d-%d", rMaj, rMin)
			return f, true
		}
	}
	f.Severity = SevOK
	f.Message = fmt.Sprintf("driver %s supports CUDA %s", driver, runtime)
	return f, true
}

func parseMajorMinor(v string) (int, int, error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("want major.minor")
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 || ma > 1000 || mi > 1000 {
		return 0, 0, fmt.Errorf("want numeric major.minor")
	}
	return ma, mi, nil
}

// compareVersions compares dotted numeric versions ("550.54.15"); missing or
// non-numeric parts count as 0.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// RuntimeOptions returns the AuditOptions for the CUDA runtime given by
// --cuda-runtime, or, when that is empty, the toolkit installed under host
// (nil host: none). A missing toolkit is not an error; a malformed one is,
// and the options returned with it check no runtime.
func RuntimeOptions(host *hostfs.FS, runtime string) (AuditOptions, error) {
	if runtime != "" || host == nil {
		return AuditOptions{CUDARuntime: runtime, CUDARuntimeSource: "--cuda-runtime"}, nil
	}
	v, src, err := DetectCUDARuntime(host)
	switch {
	case err == nil:
		return AuditOptions{CUDARuntime: v, CUDARuntimeSource: src}, nil
	case errors.Is(err, fs.ErrNotExist):
		return AuditOptions{}, nil
	}
	return AuditOptions{}, err
}

// CUDAToolkitDir is where DetectCUDARuntime looks for the toolkit.
const CUDAToolkitDir = "/usr/local/cuda"

// DetectCUDARuntime reads the CUDA toolkit version installed at
// /usr/local/cuda (version.json since CUDA 11.1, version.txt before). It
// returns fs.ErrNotExist when no toolkit is installed there.
func DetectCUDARuntime(host *hostfs.FS) (version, source string, err error) {
	p := CUDAToolkitDir + "/version.json"
	data, err := host.ReadFile(p)
	if err == nil {
		v, perr := ParseCUDAVersionJSON(data)
		if perr != nil {
			return "", p, fmt.Errorf("%s: %w", p, perr)
		}
		return v, p, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", p, err
	}
	p = CUDAToolkitDir + "/version.txt"
	s, err := host.ReadString(p)
	if err != nil {
		return "", p, err
	}
	v, perr := ParseCUDAVersionTxt(s)
	if perr != nil {
		return "", p, fmt.Errorf("%s: %w", p, perr)
	}
	return v, p, nil
}

// ParseCUDAVersionJSON parses the toolkit's version.json
// ({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}).
func ParseCUDAVersionJSON(data []byte) (string, error) {
	var doc struct {
		CUDA struct {
			Version string `json:"version"`
		} `json:"cuda"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	if _, _, err := parseMajorMinor(doc.CUDA.Version); err != nil {
		return "", fmt.Errorf("cuda.version %q: %w", doc.CUDA.Version, err)
	}
	return doc.CUDA.Version, nil
}

// ParseCUDAVersionTxt parses the toolkit's version.txt ("CUDA Version 10.2.89").
func ParseCUDAVersionTxt(s string) (string, error) {
	const prefix = "CUDA Version "
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, prefix) {
		return "", fmt.Errorf("want %q followed by a version", prefix)
	}
	v := strings.Fields(strings.TrimPrefix(s, prefix))
	if len(v) == 0 {
		return "", errors.New("no version")
	}
	if _, _, err := parseMajorMinor(v[0]); err != nil {
		return "", fmt.Errorf("version %q: %w", v[0], err)
	}
	return v[0], nil
}
