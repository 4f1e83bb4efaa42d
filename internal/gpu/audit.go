package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
)

// Layer is the layer of the GPU checks.
const Layer = "gpu"

// Check ids. Per-GPU checks carry the subject "gpuN" (N: the GPU index).
const (
	CheckPersistence   = "gpu.persistence"
	CheckECCMode       = "gpu.ecc.mode"
	CheckECCErrors     = "gpu.ecc.uncorrectable"
	CheckRemappedRows  = "gpu.memory.remap"
	CheckLockedClocks  = "gpu.clocks.locked"
	CheckMIGPending    = "gpu.mig.pending"
	CheckCUDACompat    = "gpu.cuda.compat"
	CheckDriverPresent = "gpu.driver"
	CheckBackend       = "gpu.backend"
)

// Runtime fixes of gpu.backend: what makes the NVIDIA container toolkit
// inject the driver's user-space files (libnvidia-ml.so.1, nvidia-smi).
const (
	FixRuntimeClass = "run the pod with runtimeClassName: nvidia (the NVIDIA container toolkit's runtime class; the gpunode Helm chart's runtimeClassName value)"
	FixVisibleEnv   = "or set NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES=utility in the container's environment (deploy/daemonset.yaml does)"
)

// reasons say why each GPU check matters.
var reasons = map[string]string{
	CheckBackend:       "the agent reads the GPUs through the driver's library libnvidia-ml.so.1, which the NVIDIA container runtime mounts into the container; without it every GPU check is blind although the host's driver may be fine (seed 2.1).",
	CheckDriverPresent: "without a driver answering, no CUDA process runs: a node with NVIDIA GPUs on the bus and a missing or broken driver is down (seed 2.1).",
	CheckPersistence:   "without persistence mode the driver tears the GPU state down when the last client exits and the next job pays seconds of initialisation (seed 2.1, system_tuning.sh step 8).",
	CheckECCMode:       "ECC detects and corrects memory errors; training without it risks silent corruption (seed 2.3).",
	CheckECCErrors:     "uncorrectable ECC errors kill the processes using that memory; a growing count means a failing GPU (seed 2.3).",
	CheckRemappedRows:  "row remapping replaces failing memory rows; a failed or pending remap needs a GPU reset or an RMA (seed 2.3).",
	CheckLockedClocks:  "locked or application clocks keep GPU Boost from raising the clock (benchmark settings left behind) (seed 2.4).",
	CheckMIGPending:    "a MIG mode change takes effect only after a GPU reset; until then the GPU runs in the old mode (seed 2.2).",
	CheckCUDACompat:    "a CUDA runtime the driver cannot run fails at cuInit with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH or lacks PTX JIT (seed 2.1).",
}

// Describe lists the GPU checks (check.Describer of Source).
func Describe() []check.Description {
	per := "gpu (gpuN)"
	return append([]check.Description{
		{ID: CheckDriverPresent, Layer: Layer, Section: "2.1", Title: "an NVIDIA driver answers for the NVIDIA PCI functions on the bus"},
		{ID: CheckBackend, Layer: Layer, Section: "2.1", Title: "under --live-root, the container has the NVML library the NVIDIA runtime injects"},
		{ID: CheckPersistence, Layer: Layer, Subject: per, Section: "2.1", Title: "persistence mode on"},
		{ID: CheckECCMode, Layer: Layer, Subject: per, Section: "2.3", Title: "ECC enabled, no mode change pending"},
		{ID: CheckECCErrors, Layer: Layer, Subject: per, Section: "2.3", Title: "no uncorrectable ECC errors"},
		{ID: CheckRemappedRows, Layer: Layer, Subject: per, Section: "2.3", Title: "no failed or pending row remaps / page retirements"},
		{ID: CheckLockedClocks, Layer: Layer, Subject: per, Section: "2.4", Title: "clocks not limited by a lock or application clocks"},
		{ID: CheckMIGPending, Layer: Layer, Subject: per, Section: "2.2", Title: "no MIG mode change pending a GPU reset"},
		{ID: CheckCUDACompat, Layer: Layer, Section: "2.1", Title: "the driver runs the CUDA runtime in use (NVIDIA's compatibility rules)"},
	}, DescribeHealth()...)
}

// AuditOptions tune Audit.
type AuditOptions struct {
	// CUDARuntime is the CUDA runtime/toolkit version in use ("12.4"), e.g.
	// from DetectCUDARuntime; empty skips the compatibility check.
	CUDARuntime string
	// CUDARuntimeSource says where CUDARuntime came from (for messages).
	CUDARuntimeSource string
	// CUDARuntimeErr is why the installed runtime's version could not be
	// read (a malformed version.json): the compatibility check is an error.
	CUDARuntimeErr error
	// ForwardCompat lists the CUDA forward-compatibility packages
	// installed (FindForwardCompat).
	ForwardCompat []ForwardCompat
	// PCIFunctions are the NVIDIA GPU functions on the PCI bus
	// (NVIDIAFunctions): with no driver answering, gpu.driver is an error
	// instead of absent.
	PCIFunctions []PCIFunction
}

// Audit checks st: persistence mode, ECC mode and uncorrectable errors,
// remapped-row failures, locked clocks, pending MIG mode changes and
// CUDA-driver compatibility. Without a driver it returns one gpu.driver
// check: error when NVIDIA GPUs are on the PCI bus (the driver is missing
// or broken), absent when there are none or --gpu-backend none asked no
// driver.
func Audit(st Status, o AuditOptions) []check.Check {
	var out []check.Check
	if st.Backend == KindNone {
		c := driverCheck(st, o.PCIFunctions)
		if st.NVMLLibraryMissing && len(o.PCIFunctions) > 0 {
			c = backendLibraryCheck(st, o.PCIFunctions)
		}
		c.Reason = reasons[c.ID]
		return []check.Check{c}
	}
	out = append(out, check.Check{ID: CheckDriverPresent, Layer: Layer, Status: check.OK, Section: "2.1",
		Current: fmt.Sprintf("driver %s (%s), %d GPUs", orDash(st.DriverVersion), st.Backend, len(st.GPUs)), Expected: "a driver answers"})
	defer func() {
		for i := range out {
			out[i].Reason = reasons[out[i].ID]
		}
	}()
	for _, g := range st.GPUs {
		f := func(id string, status check.Status, msg, fix string) {
			c := check.Check{ID: id, Layer: Layer, Subject: fmt.Sprintf("gpu%d", g.Index), Status: status, Current: msg,
				Detail: fmt.Sprintf("GPU %d %s", g.Index, g.UUID)}
			if fix != "" {
				c.Fix = []string{fix}
			}
			out = append(out, c)
		}
		switch {
		case g.Persistence == nil:
			f(CheckPersistence, check.Info, "persistence mode unreadable", "")
		case !*g.Persistence:
			f(CheckPersistence, check.Drift, "persistence mode is off: the driver tears the GPU down when idle and the next job pays a cold start",
				"systemctl enable --now nvidia-persistenced")
		default:
			f(CheckPersistence, check.OK, "persistence mode on", "")
		}
		if e := g.ECC; e != nil {
			switch {
			case !e.Current && !e.Pending:
				f(CheckECCMode, check.Drift, "ECC is disabled: memory errors go undetected", "nvidia-smi -i "+g.UUID+" -e 1, then reset the GPU")
			case e.Current != e.Pending:
				f(CheckECCMode, check.PendingReboot, fmt.Sprintf("ECC mode change pending (%s -> %s) until the GPU is reset", boolWord(e.Current), boolWord(e.Pending)), "reset the GPU or reboot")
			default:
				f(CheckECCMode, check.OK, "ECC enabled", "")
			}
			vu, au := e.Volatile.Uncorrected, e.Aggregate.Uncorrected
			switch {
			case vu != nil && *vu > 0:
				f(CheckECCErrors, check.Error, fmt.Sprintf("%d uncorrectable ECC errors since the driver loaded", *vu),
					"drain the node; check remapped rows and XIDs (dmesg); reset the GPU")
			case au != nil && *au > 0:
				f(CheckECCErrors, check.Drift, fmt.Sprintf("%d uncorrectable ECC errors over the GPU's lifetime", *au), "watch for growth; RMA if it grows")
			case vu != nil || au != nil:
				f(CheckECCErrors, check.OK, "no uncorrectable ECC errors", "")
			}
		}
		if r := g.RemappedRows; r != nil {
			switch {
			case r.Failure:
				f(CheckRemappedRows, check.Error, "row remapping failed: the GPU has run out of spare rows", "RMA the GPU")
			case r.Pending:
				f(CheckRemappedRows, check.Drift, "a row remap is pending until the GPU is reset", "drain and reset the GPU")
			case r.Uncorrectable > 0:
				f(CheckRemappedRows, check.Info, fmt.Sprintf("%d rows remapped for uncorrectable errors", r.Uncorrectable), "")
			}
		}
		if rp := g.RetiredPages; rp != nil && rp.Pending {
			f(CheckRemappedRows, check.Drift, "a page retirement is pending until the GPU is reset", "drain and reset the GPU")
		}
		switch {
		case g.Clocks.Locked != nil:
			f(CheckLockedClocks, check.Drift, fmt.Sprintf("graphics clock locked to %d-%d MHz: GPU Boost cannot raise it", g.Clocks.Locked.MinMHz, g.Clocks.Locked.MaxMHz),
				"gpunode gpu clocks reset --gpu "+fmt.Sprint(g.Index))
		case g.ClockEvents.Mask&ReasonApplicationsClocks != 0:
			f(CheckLockedClocks, check.Drift, "clocks limited by a clocks setting (locked or application clocks)", "gpunode gpu clocks reset --gpu "+fmt.Sprint(g.Index))
		case g.ClockEvents.Known:
			f(CheckLockedClocks, check.OK, "clocks not limited by a setting", "")
		}
		if g.MIG.ResetNeeded() {
			f(CheckMIGPending, check.PendingReboot, fmt.Sprintf("MIG mode change pending (%s -> %s) until the GPU is reset", boolWord(g.MIG.Current), boolWord(g.MIG.Pending)),
				"stop GPU clients (nvidia-persistenced, DCGM, nvidia_drm) and run nvidia-smi -i "+g.UUID+" -r")
		}
	}
	switch {
	case o.CUDARuntimeErr != nil:
		out = append(out, check.Check{ID: CheckCUDACompat, Layer: Layer, Status: check.Error, Section: "2.1",
			Detail: fmt.Sprintf("CUDA runtime version unreadable: %v", o.CUDARuntimeErr)})
	default:
		if c, ok := CUDACompat(st.DriverVersion, st.CUDAVersion, o.CUDARuntime, o.ForwardCompat); ok {
			if o.CUDARuntimeSource != "" {
				c.Detail = check.JoinDetail(c.Detail, "runtime from "+o.CUDARuntimeSource)
			}
			out = append(out, c)
		}
	}
	return out
}

// backendLibraryCheck is gpu.backend when, under a live root, this
// process has neither libnvidia-ml.so.1 nor nvidia-smi although NVIDIA GPUs
// are on the host's PCI bus: the container was started without the NVIDIA
// runtime, which says nothing about the host's driver.
func backendLibraryCheck(st Status, fns []PCIFunction) check.Check {
	return check.Check{ID: CheckBackend, Layer: Layer, Section: "2.1", Status: check.Error,
		Current:  "NVML library " + NVMLLibrary + " not found in this container",
		Expected: "the NVIDIA container runtime injects " + NVMLLibrary,
		Detail:   fmt.Sprintf("%d NVIDIA GPU functions on the host's PCI bus; %s", len(fns), st.Reason),
		Fix:      []string{FixRuntimeClass, FixVisibleEnv}}
}

// driverCheck is gpu.driver when no driver answers: absent when no driver
// was asked (--gpu-backend none) or there is no NVIDIA GPU, an error when
// NVIDIA GPUs are on the PCI bus and none answers.
func driverCheck(st Status, fns []PCIFunction) check.Check {
	c := check.Check{ID: CheckDriverPresent, Layer: Layer, Section: "2.1", Expected: "a driver answers"}
	if st.NotAsked {
		c.Status, c.Current = check.Absent, "not checked: --gpu-backend none"
		if len(fns) > 0 {
			c.Detail = fmt.Sprintf("%d NVIDIA GPU functions on the PCI bus; drop --gpu-backend none to ask their driver", len(fns))
		}
		return c
	}
	if len(fns) == 0 {
		c.Status, c.Current = check.Absent, "no NVIDIA GPU on the PCI bus"
		c.Detail = st.Reason
		return c
	}
	bound := 0
	var list []string
	for i, f := range fns {
		if f.Driver == "nvidia" {
			bound++
		}
		if i < 4 {
			d := f.Driver
			if d == "" {
				d = "no driver"
			}
			list = append(list, f.BDF+" ("+d+")")
		}
	}
	if len(fns) > 4 {
		list = append(list, fmt.Sprintf("... %d more", len(fns)-4))
	}
	c.Status = check.Error
	c.Current = fmt.Sprintf("%d NVIDIA GPU functions on the PCI bus (%d bound to nvidia), no driver answers", len(fns), bound)
	c.Detail = st.Reason + "; functions: " + strings.Join(list, ", ")
	c.Fix = []string{"nvidia-smi; dmesg | grep -i -e NVRM -e nvidia   # see why the driver does not answer, then reinstall or reload it"}
	return c
}

// cudaMinDriver is the minimum Linux driver of each CUDA major version for
// minor-version compatibility. Source: NVIDIA CUDA Toolkit release notes,
// table "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor
// Version Compatibility" (13.x >= 580, 12.x >= 525.60.13, 11.x >= 450.80.02).
var cudaMinDriver = map[int]string{11: "450.80.02", 12: "525.60.13", 13: "580.00"}

// ParseCUDARuntime checks a --cuda-runtime value: major.minor[.patch],
// numbers only.
func ParseCUDARuntime(v string) error {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) > 3 {
		return fmt.Errorf("CUDA runtime %q: want major.minor[.patch]", v)
	}
	if _, _, err := parseMajorMinor(v); err != nil {
		return fmt.Errorf("CUDA runtime %q: %w", v, err)
	}
	if len(parts) == 3 {
		if n, err := strconv.Atoi(parts[2]); err != nil || n < 0 {
			return fmt.Errorf("CUDA runtime %q: want a numeric patch level", v)
		}
	}
	return nil
}

// CUDACompat checks a CUDA runtime version against the driver by NVIDIA's
// compatibility rules:
//
//   - runtime no newer than the driver's own CUDA version: ok;
//   - same major, newer minor (minor-version compatibility): ok when the
//     driver meets the major's minimum (with a note: no PTX JIT of code
//     newer than the driver), error below it;
//   - newer major: error, unless a forward-compatibility package
//     (cuda-compat) for at least that runtime is installed: then ok with
//     the note that it works on data-center GPUs only.
//
// A malformed runtime is an error check. ok is false when nothing can be
// checked (no runtime or no driver version).
func CUDACompat(driver, driverCUDA, runtime string, fwd []ForwardCompat) (check.Check, bool) {
	if runtime == "" || driver == "" {
		return check.Check{}, false
	}
	c := check.Check{ID: CheckCUDACompat, Layer: Layer, Section: "2.1", Current: "CUDA " + runtime + " on driver " + driver}
	rMaj, rMin, err := parseMajorMinor(runtime)
	if err != nil {
		c.Status, c.Detail = check.Error, fmt.Sprintf("CUDA runtime version %q: %v", runtime, err)
		return c, true
	}
	if driverCUDA != "" {
		c.Current += " (CUDA " + driverCUDA + ")"
		c.Expected = "runtime <= " + driverCUDA + ", or forward compatibility"
	}
	var compat *ForwardCompat
	for i := range fwd {
		if fwd[i].Major > rMaj || fwd[i].Major == rMaj && fwd[i].Minor >= rMin {
			compat = &fwd[i]
			break
		}
	}
	withCompat := func() (check.Check, bool) {
		c.Status = check.OK
		c.Detail = check.JoinDetail(fmt.Sprintf("forward compatibility through %s (data-center GPUs only; processes must load it, e.g. LD_LIBRARY_PATH=%s)", compat.Dir, compat.Dir), c.Detail)
		return c, true
	}
	dMaj, dMin, derr := parseMajorMinor(driverCUDA)
	if driverCUDA != "" && derr == nil {
		switch {
		case rMaj > dMaj:
			if compat != nil {
				return withCompat()
			}
			c.Status = check.Error
			c.Detail = fmt.Sprintf("CUDA %d.x needs a driver of that major (CUDA %s driver %s cannot run it; minor-version compatibility works only within a major)", rMaj, driverCUDA, driver)
			c.Fix = []string{fmt.Sprintf("upgrade the driver, or install the cuda-compat-%d-%d package (data-center GPUs only)", rMaj, rMin)}
			return c, true
		case rMaj < dMaj || rMin <= dMin:
			c.Status = check.OK
			return c, true
		}
	}
	if minDrv, ok := cudaMinDriver[rMaj]; ok && compareVersions(driver, minDrv) < 0 {
		if compat != nil {
			return withCompat()
		}
		c.Status = check.Error
		c.Detail = fmt.Sprintf("CUDA %s needs driver >= %s; driver is %s", runtime, minDrv, driver)
		c.Fix = []string{fmt.Sprintf("upgrade the driver, or install the cuda-compat-%d-%d package (data-center GPUs only)", rMaj, rMin)}
		return c, true
	}
	if driverCUDA == "" || derr != nil {
		// Without the driver's own CUDA version (nvidia-smi's CSV query
		// has none) only the minimum-driver rule could be checked: the
		// verdict is unknown, never ok.
		c.Status = check.Info
		c.Current += " (driver CUDA version unknown)"
		what := "did not report the driver's CUDA version"
		if driverCUDA != "" {
			what = fmt.Sprintf("reported the driver's CUDA version as %q", driverCUDA)
		}
		c.Detail = fmt.Sprintf("compatibility unknown: the backend %s; driver %s meets CUDA %d.x's minimum for minor-version compatibility", what, driver, rMaj)
		return c, true
	}
	c.Status = check.OK
	c.Detail = fmt.Sprintf("minor-version compatibility: CUDA %s runs on the CUDA %s driver, but PTX of newer code cannot be JIT-compiled", runtime, driverCUDA)
	return c, true
}

func parseMajorMinor(v string) (int, int, error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("want major.minor")
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if !allDigits(parts[0]) || !allDigits(parts[1]) || err1 != nil || err2 != nil || ma < 0 || mi < 0 || ma > 1000 || mi > 1000 {
		return 0, 0, fmt.Errorf("want numeric major.minor")
	}
	return ma, mi, nil
}

// allDigits reports whether s is one or more decimal digits (strconv.Atoi
// also takes a sign).
func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
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
// --cuda-runtime (a malformed value is an error: a usage error for the
// caller), or, when that is empty, the toolkit installed under host (nil
// host: none). A missing toolkit checks nothing; a malformed one sets
// CUDARuntimeErr, which makes the compatibility check an error.
func RuntimeOptions(host *hostfs.FS, runtime string) (AuditOptions, error) {
	if runtime != "" {
		if err := ParseCUDARuntime(runtime); err != nil {
			return AuditOptions{}, fmt.Errorf("--cuda-runtime: %w", err)
		}
		return AuditOptions{CUDARuntime: runtime, CUDARuntimeSource: "--cuda-runtime"}, nil
	}
	if host == nil {
		return AuditOptions{}, nil
	}
	v, src, err := DetectCUDARuntime(host)
	switch {
	case err == nil:
		return AuditOptions{CUDARuntime: v, CUDARuntimeSource: src}, nil
	case errors.Is(err, fs.ErrNotExist):
		return AuditOptions{}, nil
	}
	return AuditOptions{CUDARuntimeErr: err, CUDARuntimeSource: src}, nil
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
	v := strings.TrimSpace(doc.CUDA.Version)
	if _, _, err := parseMajorMinor(v); err != nil {
		return "", fmt.Errorf("cuda.version %q: %w", doc.CUDA.Version, err)
	}
	return v, nil
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
