package container

// Decisions of the container checks at their edges.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"

	"github.com/gpunode/gpunode/internal/output"
)

func TestVersionAtLeastEdges(t *testing.T) {
	for _, c := range []struct {
		v            string
		major, minor int
		want         bool
	}{
		{"28.3", 28, 3, true}, {"28.2", 28, 3, false}, {"28.4", 28, 3, true},
		{"27.9", 28, 3, false}, {"29.0", 28, 3, true}, {"28.3.1", 28, 3, true},
		{"28", 28, 0, false}, {"28.y", 28, 0, false}, {"x.3", 0, 3, false}, {"", 0, 0, false},
	} {
		if got := versionAtLeast(c.v, c.major, c.minor); got != c.want {
			t.Errorf("versionAtLeast(%q, %d, %d) = %v, want %v", c.v, c.major, c.minor, got, c.want)
		}
	}
}

// Drop-in tables merge recursively down to depth 32; deeper, a table
// replaces the one it meets.
func TestMergeTablesDepthBound(t *testing.T) {
	nest := func(key string, depth int) map[string]any {
		root := map[string]any{}
		cur := root
		for i := 0; i < depth; i++ {
			next := map[string]any{}
			cur[key] = fmt.Sprint(i)
			cur["t"] = next
			cur = next
		}
		return root
	}
	dst, src := nest("keep", 40), nest("new", 40)
	mergeTables(dst, src, 0)
	cur := dst
	for level := 0; level < 40; level++ {
		_, keep := cur["keep"]
		_, nw := cur["new"]
		// Levels 0..32 are merged (the table at depth 32 is entered from
		// depth 31's merge); from 33 on src's table replaced dst's.
		if wantKeep := level <= 32; keep != wantKeep || !nw {
			t.Fatalf("level %d: keep %v new %v, want keep %v new true", level, keep, nw, wantKeep)
		}
		cur = cur["t"].(map[string]any)
	}
}

func TestCDIDeviceEditsValidated(t *testing.T) {
	spec := `cdiVersion: "0.6.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: ""
containerEdits: {}
`
	_, err := ParseCDISpec("/etc/cdi/x.yaml", []byte(spec))
	var pe *ParseError
	if err == nil || !errors.As(err, &pe) || pe.File != "/etc/cdi/x.yaml" || !strings.Contains(err.Error(), `device "0": `) {
		t.Errorf("a device node without a path: %v", err)
	}
}

func TestContainerSpecBadYAMLNamesLine(t *testing.T) {
	for _, in := range []string{"kind: Pod\nspec: [\n", "a: b\n c: d\n\tx"} {
		_, err := ParseContainerSpec("/tmp/pod.yaml", []byte(in))
		var pe *ParseError
		if err == nil || !errors.As(err, &pe) || pe.File != "/tmp/pod.yaml" || pe.Line == 0 {
			t.Errorf("%q: %v, want a parse error naming file and line", in, err)
		}
	}
}

func TestFlagsTableGPUsLine(t *testing.T) {
	var b bytes.Buffer
	if err := (Flags{Runtime: "docker"}).WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "GPUS") || !strings.Contains(b.String(), "RUNTIME") {
		t.Errorf("no GPUs: %q", b.String())
	}
	b.Reset()
	f := Flags{Runtime: "docker", GPUs: []FlagsGPU{{Index: 3, BDF: "0000:3b:00.0", NUMANode: 1}}}
	if err := f.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "3 (0000:3b:00.0, NUMA 1)") {
		t.Errorf("one GPU: %q", b.String())
	}
}

// containerd imports: a relative pattern is relative to the main config's
// directory, an absolute one is taken as it is.
func TestContainerdImports(t *testing.T) {
	root := t.TempDir()
	w := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("etc/containerd/config.toml", "version = 2\nimports = [\"conf.d/*.toml\", \"/opt/dropins/*.toml\"]\n")
	w("etc/containerd/conf.d/a.toml", "[plugins]\n")
	w("opt/dropins/b.toml", "[plugins]\n")
	w("conf.d/wrong.toml", "[plugins]\n") // relative to / would find this
	h, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadContainerd(h)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(r.Files, " "), "/etc/containerd/config.toml /etc/containerd/conf.d/a.toml /opt/dropins/b.toml"; got != want {
		t.Errorf("files %s, want %s", got, want)
	}
}
