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

// TestCDIRules: each of CDI's rules rejects with CDI's message (the
// product's own prefix before it), and what CDI accepts is accepted;
// conformance/ctk compares the same rules with pkg/cdi itself.
func TestCDIRules(t *testing.T) {
	spec := func(version, edits string) string {
		return "cdiVersion: " + version + "\nkind: vendor.com/class\ndevices:\n- name: d\n  containerEdits:\n" + edits
	}
	for _, c := range []struct{ in, want string }{
		{spec("0.5.0", "    env: [A=1, B=]\n"), ""},
		{spec("0.5.0", "    env: [\"=1\"]\n"), `device "d": invalid container edits: invalid environment variable "=1"`},
		{spec("0.5.0", "    env: [A]\n"), `invalid environment variable "A"`},
		{spec("0.5.0", "    deviceNodes: [{path: /dev/x, type: c, major: 1, minor: 2, permissions: rwm}]\n"), ""},
		{spec("0.5.0", "    deviceNodes: [{path: /dev/x, permissions: none}]\n"), ""},
		{spec("0.5.0", "    deviceNodes: [null]\n"), "invalid (nil) device node"},
		{spec("0.5.0", "    deviceNodes: [{path: /dev/x, type: x}]\n"), `device "/dev/x": invalid type "x"`},
		{spec("0.5.0", "    deviceNodes: [{path: /dev/x, minor: -1}]\n"), `device "/dev/x": invalid (negative) device number 0:-1`},
		{spec("0.5.0", "    deviceNodes: [{path: /dev/x, permissions: rx}]\n"), `device "/dev/x": invalid permissions "rx"`},
		{spec("0.5.0", "    hooks: [{hookName: poststop, path: /bin/h, env: [X=1]}]\n"), ""},
		{spec("0.5.0", "    hooks: [null]\n"), "invalid (nil) hook"},
		{spec("0.5.0", "    hooks: [{hookName: postStop, path: /bin/h}]\n"), `invalid hook name "postStop"`},
		{spec("0.5.0", "    hooks: [{hookName: prestart}]\n"), `invalid hook "prestart" with empty path`},
		{spec("0.5.0", "    hooks: [{hookName: prestart, path: /h, env: [X]}]\n"), `invalid hook "prestart": invalid environment variable "X"`},
		{spec("0.5.0", "    mounts: [null]\n"), "invalid (nil) mount"},
		{spec("0.5.0", "    mounts: [{containerPath: /a}]\n"), "invalid mount, empty host path"},
		{spec("0.5.0", "    mounts: [{hostPath: /a}]\n"), "invalid mount, empty container path"},
		{spec("0.7.0", "    intelRdt: {closID: /}\n"), ""},
		{spec("0.7.0", "    intelRdt: {closID: a/b}\n"), "invalid ClosID"},
		{spec("0.7.0", "    intelRdt: {closID: ..}\n"), "invalid ClosID"},
		{spec("0.7.0", "    intelRdt: {closID: "+strings.Repeat("a", 4096)+"}\n"), "invalid ClosID"},
		{spec("0.7.0", "    additionalGids: [0]\n"), ""},
		{spec("1.1.0", "    netDevices: [{hostInterfaceName: a, name: b}, {hostInterfaceName: c, name: d}]\n"), ""},
		{spec("1.1.0", "    netDevices: [null]\n"), "invalid (nil) linux net device"},
		{spec("1.1.0", "    netDevices: [{name: b}]\n"), "invalid linux net device, empty HostInterfaceName"},
		{spec("1.1.0", "    netDevices: [{hostInterfaceName: a}]\n"), "invalid linux net device, empty Name"},
		{spec("1.1.0", "    netDevices: [{hostInterfaceName: a, name: b}, {hostInterfaceName: a, name: c}]\n"), `duplicate HostInterfaceName "a" with names "c" and "b"`},
		{spec("1.1.0", "    netDevices: [{hostInterfaceName: a, name: b}, {hostInterfaceName: c, name: b}]\n"), `duplicate Name "b" with HostInterfaceName "c" and "a"`},
		{spec("0.5.0", "    netDevices: [{hostInterfaceName: a, name: b}]\n"), "1.1.0"},
		{spec("0.5.0", "    env: []\n"), `device "d": invalid device, empty device edits`},
		{spec("0.5.0", "    env: [A=1]\n- name: d\n  containerEdits:\n    env: [A=1]\n"), `invalid spec, multiple device "d"`},
		{"cdiVersion: 0.5.0\nkind: vendor.com/class\ndevices: []\ncontainerEdits:\n  env: [A]\n", `containerEdits: invalid container edits: invalid environment variable "A"`},
		{"cdiVersion: 0.5.0\nkind: vendor.com/class\ndevices: []\n", "invalid spec, no devices"},
		{"cdiVersion: 0.6.0\nkind: vendor.com/class\nannotations: {\"not/a/key\": x}\ndevices:\n- name: d\n  annotations: {\"bad key\": x}\n  containerEdits:\n    env: [A=1]\n", ""},
	} {
		_, err := ParseCDISpec("/etc/cdi/x.yaml", []byte(c.in))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want an error with %q", c.in, err, c.want)
		}
	}
}
