package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// DockerDaemonJSON is Docker's daemon configuration.
const DockerDaemonJSON = "/etc/docker/daemon.json"

// DaemonConfig is the part of daemon.json the check reads.
type DaemonConfig struct {
	Runtimes       map[string]DaemonRuntime `json:"runtimes"`
	DefaultRuntime string                   `json:"default-runtime"`
	Features       map[string]bool          `json:"features"`
	DefaultUlimits map[string]DaemonUlimit  `json:"default-ulimits"`
	DefaultShmSize string                   `json:"default-shm-size"`
	CDISpecDirs    []string                 `json:"cdi-spec-dirs"`
}

// DaemonRuntime is one entry of daemon.json's runtimes.
type DaemonRuntime struct {
	Path        string   `json:"path"`
	RuntimeArgs []string `json:"runtimeArgs"`
}

// DaemonUlimit is one entry of daemon.json's default-ulimits.
type DaemonUlimit struct {
	Name string `json:"Name"`
	Hard int64  `json:"Hard"`
	Soft int64  `json:"Soft"`
}

// maxConfigBytes bounds a runtime configuration file.
const maxConfigBytes = 4 << 20

// ParseDaemonJSON parses daemon.json; a syntax or type error is a
// *ParseError with the line and column.
func ParseDaemonJSON(file string, data []byte) (*DaemonConfig, error) {
	if len(data) > maxConfigBytes {
		return nil, &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	var c DaemonConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, jsonParseError(file, data, err)
	}
	return &c, nil
}

func jsonParseError(file string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	pe := &ParseError{File: file, Reason: err.Error()}
	switch {
	case errors.As(err, &se):
		pe.Line, pe.Column = lineCol(data, se.Offset)
	case errors.As(err, &te):
		pe.Line, pe.Column = lineCol(data, te.Offset)
	}
	return pe
}

const fixDockerConfigure = "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker"

// dockerVersion is the installed Docker engine version, "" if unknown.
func dockerVersion(h *host) (string, bool) {
	for _, p := range [...]string{"docker-ce", "docker.io", "moby-engine", "docker-engine"} {
		if v, ok := h.pkgs[p]; ok {
			return upstreamVersion(v), true
		}
	}
	return "", findBinary(h.fs, "dockerd") != ""
}

func dockerCheck(h *host) check.Check {
	f := newFinding(CheckDocker, "4.1")
	ver, installed := dockerVersion(h)
	data, err := h.fs.ReadFile(DockerDaemonJSON)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !installed {
			f.c.Status, f.c.Current, f.c.Detail = check.Absent, "Docker not installed", "no "+DockerDaemonJSON+" and no Docker engine"
			return f.c
		}
		data = []byte("{}")
		f.note("no " + DockerDaemonJSON)
	case err != nil:
		return errorCheck(CheckDocker, "4.1", DockerDaemonJSON, err)
	}
	cfg, err := ParseDaemonJSON(DockerDaemonJSON, data)
	if err != nil {
		return errorCheck(CheckDocker, "4.1", DockerDaemonJSON, err)
	}
	f.c.Expected = "nvidia runtime registered, CDI on, memlock -1:-1, default-shm-size >= 1g"
	var cur []string
	if ver != "" {
		cur = append(cur, "Docker "+ver)
	}
	rt, ok := cfg.Runtimes["nvidia"]
	switch {
	case !ok:
		cur = append(cur, "no nvidia runtime")
		f.drift("daemon.json registers no nvidia runtime", fixDockerConfigure)
	case findBinary(h.fs, rt.Path) == "":
		cur = append(cur, "nvidia runtime "+strconv.Quote(rt.Path)+" (missing)")
		f.drift(fmt.Sprintf("runtimes.nvidia.path %q does not exist", rt.Path), fixInstallToolkit, fixDockerConfigure)
	default:
		cur = append(cur, "nvidia runtime "+rt.Path)
	}
	if cfg.DefaultRuntime != "" {
		cur = append(cur, "default-runtime "+cfg.DefaultRuntime)
		if _, known := cfg.Runtimes[cfg.DefaultRuntime]; !known && cfg.DefaultRuntime != "runc" && cfg.DefaultRuntime != "io.containerd.runc.v2" {
			f.drift(fmt.Sprintf("default-runtime %q is not a registered runtime", cfg.DefaultRuntime), fixDockerConfigure)
		}
	}
	// CDI: experimental from 25.0 behind features.cdi, on by default in 28.3.
	switch cdi, set := cfg.Features["cdi"]; {
	case ver != "" && versionAtLeast(ver, 28, 3):
		if set && !cdi {
			cur = append(cur, "CDI off")
			f.drift("features.cdi is false (Docker "+ver+" enables CDI by default)", `# remove "cdi": false from "features" in `+DockerDaemonJSON+` && systemctl restart docker`)
		} else {
			cur = append(cur, "CDI on")
		}
	case ver != "" && versionAtLeast(ver, 25, 0):
		if cdi {
			cur = append(cur, "CDI on")
		} else {
			cur = append(cur, "CDI off")
			f.drift("Docker "+ver+` needs "features": {"cdi": true} for --device nvidia.com/gpu=...`, `nvidia-ctk runtime configure --runtime=docker --cdi.enabled && systemctl restart docker`)
		}
	case ver != "":
		cur = append(cur, "CDI unsupported")
		f.note("Docker " + ver + " predates CDI (25.0): use --gpus or the nvidia runtime")
	default:
		if cdi {
			cur = append(cur, "CDI on")
		}
	}
	switch ml, ok := cfg.DefaultUlimits["memlock"]; {
	case !ok:
		cur = append(cur, "memlock default")
		f.drift("no default memlock ulimit: containers inherit the daemon's limit and pinned memory (cudaHostAlloc, NCCL, RDMA) fails or falls back", `# add "default-ulimits": {"memlock": {"Name": "memlock", "Hard": -1, "Soft": -1}} to `+DockerDaemonJSON+`, or run with --ulimit memlock=-1:-1`)
	case ml.Hard != -1 || ml.Soft != -1:
		cur = append(cur, fmt.Sprintf("memlock %d:%d", ml.Soft, ml.Hard))
		f.drift(fmt.Sprintf("default memlock ulimit %d:%d is limited", ml.Soft, ml.Hard), `# set "default-ulimits": {"memlock": {"Name": "memlock", "Hard": -1, "Soft": -1}} in `+DockerDaemonJSON)
	default:
		cur = append(cur, "memlock unlimited")
	}
	switch n, err := ParseSize(cfg.DefaultShmSize); {
	case cfg.DefaultShmSize == "":
		cur = append(cur, "shm 64M (default)")
		f.drift("default-shm-size unset: Docker's 64M /dev/shm is too small for NCCL and DataLoader workers", `# add "default-shm-size": "16g" to `+DockerDaemonJSON+`, or run with --shm-size=16g (or --ipc=host)`)
	case err != nil:
		cur = append(cur, "shm "+cfg.DefaultShmSize)
		f.drift(fmt.Sprintf("default-shm-size %q: %v", cfg.DefaultShmSize, err), `# set "default-shm-size": "16g" in `+DockerDaemonJSON)
	case n < 1<<30:
		cur = append(cur, "shm "+cfg.DefaultShmSize)
		f.drift(fmt.Sprintf("default-shm-size %s is under 1g", cfg.DefaultShmSize), `# set "default-shm-size": "16g" in `+DockerDaemonJSON+`, or run with --shm-size=16g`)
	default:
		cur = append(cur, "shm "+cfg.DefaultShmSize)
	}
	f.c.Current = strings.Join(cur, ", ")
	if len(f.c.Fix) > 0 && !slices.Contains(f.c.Fix, fixDockerConfigure) {
		f.c.Fix = append(f.c.Fix, "systemctl restart docker")
	}
	return f.done()
}

// ParseSize parses a Docker-style size: bytes, or a number with b, k, m,
// g or t (binary multiples, case-insensitive, optional trailing b/ib).
func ParseSize(s string) (int64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, errors.New("empty size")
	}
	v, err := sysfmt.ParseBytes(s)
	if err != nil || v > 1<<60 {
		return 0, fmt.Errorf("size %q: want a number with an optional b, k, m, g or t suffix", s)
	}
	return int64(v), nil
}
