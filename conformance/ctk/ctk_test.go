package ctk

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/containerd"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/crio"
	"github.com/NVIDIA/nvidia-container-toolkit/pkg/config/engine/docker"
	ctktoml "github.com/NVIDIA/nvidia-container-toolkit/pkg/config/toml"

	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/testhost"
)

var cases = flag.Int("cases", 2000, "generated configurations per runtime")

// fixtureFiles returns every fixture host's file at p that exists.
func fixtureFiles(t *testing.T, p string) map[string]string {
	t.Helper()
	dir, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	names, _ := testhost.Names()
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n, p))
		if err == nil {
			out[n+p] = string(b)
		}
	}
	return out
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

var binaries = []string{"nvidia-container-runtime", "/usr/bin/nvidia-container-runtime", "/usr/local/nvidia/toolkit/nvidia-container-runtime", "nvidia-container-runtime.cdi", ""}

func genDaemon(r *rand.Rand) string {
	var parts []string
	if r.IntN(4) > 0 {
		var rts []string
		for _, name := range []string{"nvidia", "runc", "nvidia-cdi"} {
			if r.IntN(2) == 0 {
				continue
			}
			path := pick(r, binaries...)
			if path == "" {
				rts = append(rts, fmt.Sprintf("%q: {\"runtimeArgs\": []}", name))
			} else {
				rts = append(rts, fmt.Sprintf("%q: {\"path\": %q, \"args\": []}", name, path))
			}
		}
		parts = append(parts, `"runtimes": {`+strings.Join(rts, ", ")+`}`)
	}
	if r.IntN(2) == 0 {
		parts = append(parts, fmt.Sprintf(`"default-runtime": %q`, pick(r, "nvidia", "runc", "nvidia-cdi")))
	}
	if r.IntN(2) == 0 {
		parts = append(parts, `"features": {"cdi": true}`)
	}
	return "{" + strings.Join(parts, ",\n") + "}\n"
}

func TestDockerRuntimeDetection(t *testing.T) {
	corpus := fixtureFiles(t, "/etc/docker/daemon.json")
	r := rand.New(rand.NewPCG(1, 17))
	for i := 0; i < *cases; i++ {
		corpus[fmt.Sprintf("gen%d", i)] = genDaemon(r)
	}
	dir := t.TempDir()
	compared := 0
	for name, text := range corpus {
		file := filepath.Join(dir, "daemon.json")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ours, oerr := container.ParseDaemonJSON(file, []byte(text))
		theirs, terr := docker.New(docker.WithPath(file))
		if (oerr == nil) != (terr == nil) {
			t.Errorf("%s: gpunode error %v, nvidia-ctk error %v\n%s", name, oerr, terr, text)
			continue
		}
		if oerr != nil {
			continue
		}
		compared++
		var ourPath string
		if rt, ok := ours.Runtimes["nvidia"]; ok {
			ourPath = rt.Path
		}
		var theirPath string
		if rc, err := theirs.GetRuntimeConfig("nvidia"); err == nil && rc != nil {
			theirPath = rc.GetBinaryPath()
		}
		if ourPath != theirPath || ours.DefaultRuntime != theirs.DefaultRuntime() {
			t.Errorf("%s: gpunode nvidia=%q default=%q, nvidia-ctk nvidia=%q default=%q\n%s", name, ourPath, ours.DefaultRuntime, theirPath, theirs.DefaultRuntime(), text)
		}
	}
	t.Logf("%d daemon.json files compared", compared)
}

func genContainerd(r *rand.Rand) string {
	ver := pick(r, 1, 2, 3)
	plugin := `"io.containerd.grpc.v1.cri"`
	switch ver {
	case 1:
		plugin = "cri"
	case 3:
		plugin = pick(r, `"io.containerd.cri.v1.runtime"`, `'io.containerd.cri.v1.runtime'`)
	}
	var b strings.Builder
	if ver > 1 || r.IntN(2) == 0 {
		fmt.Fprintf(&b, "version = %d\n\n", ver)
	}
	base := "plugins." + plugin + ".containerd"
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "[%s]\n  default_runtime_name = %q\n\n", base, pick(r, "nvidia", "runc"))
	}
	for _, name := range []string{"nvidia", "runc"} {
		if r.IntN(3) == 0 {
			continue
		}
		fmt.Fprintf(&b, "[%s.runtimes.%s]\n  runtime_type = \"io.containerd.runc.v2\"\n\n", base, name)
		if bin := pick(r, binaries...); bin != "" {
			fmt.Fprintf(&b, "[%s.runtimes.%s.options]\n  BinaryName = %q\n  SystemdCgroup = %v\n\n", base, name, bin, r.IntN(2) == 0)
		}
	}
	return b.String()
}

func TestContainerdRuntimeDetection(t *testing.T) {
	corpus := fixtureFiles(t, "/etc/containerd/config.toml")
	r := rand.New(rand.NewPCG(2, 17))
	for i := 0; i < *cases; i++ {
		corpus[fmt.Sprintf("gen%d", i)] = genContainerd(r)
	}
	compared := 0
	for name, text := range corpus {
		m, oerr := container.ParseTOML("config.toml", []byte(text))
		theirs, terr := containerd.New(containerd.WithConfigSource(ctktoml.FromString(text)), containerd.WithTopLevelConfigPath(filepath.Join(t.TempDir(), "absent.toml")))
		if (oerr == nil) != (terr == nil) {
			t.Errorf("%s: gpunode error %v, nvidia-ctk error %v\n%s", name, oerr, terr, text)
			continue
		}
		if oerr != nil {
			continue
		}
		compared++
		ours := container.DecodeContainerd(m)
		var theirPath string
		if rc, err := theirs.GetRuntimeConfig("nvidia"); err == nil && rc != nil {
			theirPath = rc.GetBinaryPath()
		}
		if ours.BinaryName != theirPath || ours.DefaultName != theirs.DefaultRuntime() {
			t.Errorf("%s: gpunode BinaryName=%q default=%q, nvidia-ctk %q default=%q\n%s", name, ours.BinaryName, ours.DefaultName, theirPath, theirs.DefaultRuntime(), text)
		}
	}
	t.Logf("%d containerd configs compared", compared)
}

func genCRIO(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "[crio.runtime]\ndefault_runtime = %q\n\n", pick(r, "nvidia", "crun", "runc"))
	}
	for _, name := range []string{"nvidia", "crun"} {
		if r.IntN(3) == 0 {
			continue
		}
		fmt.Fprintf(&b, "[crio.runtime.runtimes.%s]\n", name)
		if bin := pick(r, binaries...); bin != "" {
			fmt.Fprintf(&b, "runtime_path = %q\n", bin)
		}
		fmt.Fprintf(&b, "runtime_type = %q\n\n", pick(r, "oci", "vm"))
	}
	return b.String()
}

func TestCRIORuntimeDetection(t *testing.T) {
	corpus := map[string]string{}
	for name, text := range fixtureFiles(t, "/etc/crio/crio.conf.d/99-nvidia.conf") {
		corpus[name] = text
	}
	r := rand.New(rand.NewPCG(3, 17))
	for i := 0; i < *cases; i++ {
		corpus[fmt.Sprintf("gen%d", i)] = genCRIO(r)
	}
	compared := 0
	for name, text := range corpus {
		m, oerr := container.ParseTOML("crio.conf", []byte(text))
		theirs, terr := crio.New(crio.WithConfigSource(ctktoml.FromString(text)))
		if (oerr == nil) != (terr == nil) {
			t.Errorf("%s: gpunode error %v, nvidia-ctk error %v\n%s", name, oerr, terr, text)
			continue
		}
		if oerr != nil {
			continue
		}
		compared++
		ours := container.DecodeCRIO(m)
		var theirPath string
		if rc, err := theirs.GetRuntimeConfig("nvidia"); err == nil && rc != nil {
			theirPath = rc.GetBinaryPath()
		}
		if ours.RuntimePath != theirPath || ours.Default != theirs.DefaultRuntime() {
			t.Errorf("%s: gpunode runtime_path=%q default=%q, nvidia-ctk %q default=%q\n%s", name, ours.RuntimePath, ours.Default, theirPath, theirs.DefaultRuntime(), text)
		}
	}
	t.Logf("%d CRI-O configs compared", compared)
}
