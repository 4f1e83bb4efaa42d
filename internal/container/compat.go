package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/userfile"
)

// DriverVersionFile is the kernel module's version line.
const DriverVersionFile = "/proc/driver/nvidia/version"

// Compiled on first use: package initialisers run at every start.
var driverVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)`) })

// ParseDriverVersion reads the version from /proc/driver/nvidia/version
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...", or
// "... Open Kernel Module for x86_64  580.65.06  ...").
func ParseDriverVersion(s string) (string, error) {
	m := driverVersionRE().FindStringSubmatch(s)
	if m == nil {
		return "", errors.New("no 'Kernel Module <version>' in the NVRM line")
	}
	return m[1], nil
}

// ImageCUDA reads the CUDA version of an image from the JSON of 'docker
// inspect IMAGE' (an array or one object with Config.Env) or an OCI image
// config (config.Env): CUDA_VERSION, else the cuda>= term of
// NVIDIA_REQUIRE_CUDA. "" when the image names none.
func ImageCUDA(file string, data []byte) (string, error) {
	if len(data) > maxConfigBytes {
		return "", &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	type cfg struct {
		Env []string `json:"Env"`
	}
	type doc struct {
		Config    *cfg `json:"Config"`
		OCIConfig *cfg `json:"config"`
	}
	var docs []doc
	trim := strings.TrimSpace(string(data))
	var err error
	if strings.HasPrefix(trim, "[") {
		err = json.Unmarshal(data, &docs)
	} else {
		var d doc
		err = json.Unmarshal(data, &d)
		docs = []doc{d}
	}
	if err != nil {
		return "", jsonParseError(file, data, err)
	}
	var env []string
	for _, d := range docs {
		for _, c := range []*cfg{d.Config, d.OCIConfig} {
			if c != nil {
				env = append(env, c.Env...)
			}
		}
	}
	var require string
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case "CUDA_VERSION":
			// NGC images carry a build number: 12.8.0.038.
			if parts := strings.Split(v, "."); len(parts) > 3 {
				v = strings.Join(parts[:3], ".")
			}
			return v, nil
		case "NVIDIA_REQUIRE_CUDA":
			require = v
		}
	}
	for _, term := range strings.Fields(require) {
		if v, ok := strings.CutPrefix(term, "cuda>="); ok {
			return v, nil
		}
	}
	return "", nil
}

func (h *host) driver() (version, cudaVersion, source string, err error) {
	if h.st != nil && h.st.DriverVersion != "" {
		return h.st.DriverVersion, h.st.CUDAVersion, "GPU backend " + h.st.Backend, nil
	}
	s, err := h.fs.ReadString(DriverVersionFile)
	if err != nil {
		return "", "", DriverVersionFile, err
	}
	v, err := ParseDriverVersion(s)
	if err != nil {
		return "", "", DriverVersionFile, fmt.Errorf("%s: %w", DriverVersionFile, err)
	}
	return v, "", DriverVersionFile, nil
}

func compatCheck(h *host, o Options) check.Check {
	base := check.Check{ID: CheckCUDACompat, Section: "4.1"}
	cuda, from := o.CUDA, "--cuda"
	if cuda == "" && o.ImageConfig != "" {
		from = o.ImageConfig
		data, err := userfile.ReadUnder(h.fs, o.ImageConfig, o.MaxInputBytes)
		if err != nil {
			return errorCheck(CheckCUDACompat, "4.1", o.ImageConfig, err)
		}
		if cuda, err = ImageCUDA(o.ImageConfig, data); err != nil {
			return errorCheck(CheckCUDACompat, "4.1", o.ImageConfig, err)
		}
		if cuda == "" {
			base.Status, base.Current = check.Info, "image names no CUDA version (no CUDA_VERSION or NVIDIA_REQUIRE_CUDA in its Env)"
			return base
		}
		if err := gpu.ParseCUDARuntime(cuda); err != nil {
			return errorCheck(CheckCUDACompat, "4.1", o.ImageConfig, err)
		}
	}
	if cuda == "" {
		v, src, err := gpu.DetectCUDARuntime(h.fs)
		switch {
		case err == nil:
			cuda, from = v, src
		case errors.Is(err, fs.ErrNotExist):
			base.Status = check.Info
			base.Current = "no CUDA version to check (give --cuda or --image-config; no toolkit in " + gpu.CUDAToolkitDir + ")"
			return base
		default:
			return errorCheck(CheckCUDACompat, "4.1", src, err)
		}
	}
	drv, drvCUDA, src, err := h.driver()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		base.Status, base.Current = check.Absent, "no NVIDIA driver ("+DriverVersionFile+" missing)"
		if len(h.gpus) > 0 {
			base.Status = check.Error
			base.Fix = []string{"nvidia-smi; dmesg | grep -i NVRM   # the GPUs have no driver answering"}
		}
		return base
	case err != nil:
		return errorCheck(CheckCUDACompat, "4.1", src, err)
	}
	c, ok := gpu.CUDACompat(drv, drvCUDA, cuda, gpu.FindForwardCompat(h.fs))
	if !ok {
		base.Status, base.Current = check.Info, "nothing to compare"
		return base
	}
	c.ID, c.Section = CheckCUDACompat, "4.1"
	c.Detail = check.JoinDetail(c.Detail, "CUDA "+cuda+" from "+from+", driver from "+src)
	if c.Status == check.Error {
		// The container would fail at cuInit: that is drift to fix, not a
		// check that could not decide.
		c.Status = check.Drift
	}
	return c
}
