package container_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	toml "github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/container"
)

func isInput(err error) bool { return errors.Is(err, bind.ErrInput) }

// checkPosition: a ParseError's position is inside the input: line 1 to
// the number of lines, column 1 to one past the end of that line (or both
// 0 when unknown).
func checkPosition(t *testing.T, data []byte, pe *container.ParseError) {
	t.Helper()
	if pe.Line == 0 && pe.Column == 0 {
		return
	}
	lines := bytes.Split(data, []byte("\n"))
	if pe.Line < 1 || pe.Line > len(lines) {
		t.Fatalf("%v: line %d outside 1..%d", pe, pe.Line, len(lines))
	}
	if n := len(lines[pe.Line-1]); pe.Column < 0 || pe.Column > n+1 {
		t.Fatalf("%v: column %d outside 1..%d of line %d", pe, pe.Column, n+1, pe.Line)
	}
}

// FuzzParseDaemonJSON: an error is a ParseError positioned inside the
// input; an accepted config written back as JSON parses to an equal one.
func FuzzParseDaemonJSON(f *testing.F) {
	f.Add([]byte(`{"runtimes":{"nvidia":{"path":"nvidia-container-runtime"}},"default-ulimits":{"memlock":{"Name":"memlock","Hard":-1,"Soft":-1}}}`))
	f.Add([]byte("{\n  \"features\": {\"cdi\": true},\n}\n"))
	f.Add([]byte("{\"runtimes\": {\"nvidia\": {\"path\": 7}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := container.ParseDaemonJSON("daemon.json", data)
		var pe *container.ParseError
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			checkPosition(t, data, pe)
			return
		}
		if c == nil {
			t.Fatal("nil config without error")
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := container.ParseDaemonJSON("again.json", out)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("%+v -> %s -> %+v, %v", c, out, again, err)
		}
	})
}

// FuzzParseContainerdTOML: an error is a ParseError positioned inside the
// input; accepted tables written back as TOML parse to equal tables, from
// which DecodeContainerd reads the same runtime settings.
func FuzzParseContainerdTOML(f *testing.F) {
	f.Add([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\n"))
	f.Add([]byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\nenable_cdi = true\ncdi_spec_dirs = ['/etc/cdi']\n"))
	f.Add([]byte("enable_cdi =\n"))
	f.Add([]byte("a = 1979-05-27T07:32:00Z\nb = 1.5\nc = [[1], ['x']]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := container.ParseTOML("config.toml", data)
		var pe *container.ParseError
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			checkPosition(t, data, pe)
			return
		}
		if m == nil {
			t.Fatal("nil tables without error")
		}
		out, err := toml.Marshal(m)
		if err != nil {
			return // values the encoder cannot write (NaN keys and the like)
		}
		again, err := container.ParseTOML("again.toml", out)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%v -> %s -> %v, %v", m, out, again, err)
		}
		if a, b := container.DecodeContainerd(m), container.DecodeContainerd(again); !reflect.DeepEqual(a, b) {
			t.Fatalf("DecodeContainerd differs after the round trip: %+v, %+v", a, b)
		}
	})
}

// mangle escapes a mountinfo path the way the kernel does (octal \ooo),
// here for every byte outside printable ASCII and for the backslash.
func mangle(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			fmt.Fprintf(&b, `\%03o`, c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzParseMountInfo: every mount has a file system type and is found by
// its own mount point; the table written back as mountinfo (paths
// escaped, no optional fields) parses to the same mounts.
func FuzzParseMountInfo(f *testing.F) {
	f.Add([]byte("1412 1133 0:312 / / rw,relatime master:611 - overlay overlay rw,lowerdir=/a\n1420 1412 259:2 /raid/d\\040x /data ro - xfs /dev/md0 rw\n"))
	f.Add([]byte("1 2 3 4\n"))
	f.Add([]byte("+1 -2 0:0 /a\\ /b\\12 - - - - x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := container.ParseMountInfo(data)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, m := range ms {
			if m.FSType == "" {
				t.Fatalf("mount without fstype: %+v", m)
			}
			fmt.Fprintf(&b, "%d %d 0:0 %s %s %s - %s %s rw\n", m.ID, m.Parent, mangle(m.Root), mangle(m.MountPoint), m.Options, m.FSType, mangle(m.Source))
		}
		if len(ms) > 0 {
			if _, ok := container.MountOf(ms, ms[0].MountPoint); !ok {
				t.Fatalf("mount point %q not found in its own table", ms[0].MountPoint)
			}
		}
		again, err := container.ParseMountInfo([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, ms) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", data, ms, b.String(), again, err)
		}
	})
}

// cdiSeeds are specs in the shapes 'nvidia-ctk cdi generate' writes, JSON
// included, and ones each rule of the validator rejects.
var cdiSeeds = []string{
	"---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  hooks:\n  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n    args: [nvidia-cdi-hook, update-ldcache]\n    env: [NVIDIA_CTK_DEBUG=false]\n  mounts:\n  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15\n    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15\n    options: [ro, nosuid, nodev, bind]\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n",
	`{"cdiVersion":"1.1.0","kind":"example.com/net","devices":[{"name":"eth","containerEdits":{"netDevices":[{"hostInterfaceName":"eth1","name":"net0"}],"intelRdt":{"closID":"/"},"additionalGids":[5]}}]}`,
	"cdiVersion: 0.6.0\nkind: vendor.com/class\nannotations: {a: b}\ndevices:\n- name: d\n  annotations: {\"bad key/x/y\": v}\n  containerEdits:\n    deviceNodes: [{path: /dev/x, hostPath: /dev/y, type: c, major: 195, minor: 1, permissions: rw, fileMode: 0666, uid: 1, gid: 2}]\n",
	"cdiVersion: 0.5.0\nkind: v.com/c\ndevices:\n- name: d\n  containerEdits:\n    deviceNodes: [{path: /dev/x, type: z}]\n",
	"cdiVersion: 0.5.0\nkind: v.com/c\ndevices:\n- name: d\n  containerEdits: {}\n",
	"cdiVersion: 0.5.0\nkind: v.com/c\ndevices:\n- name: d\n  containerEdits:\n    env: [X=1]\n- name: d\n  containerEdits:\n    env: [\"=1\"]\n",
	"cdiVersion: 0.3.0\nkind: v.com/c\ndevices:\n- name: d\n  containerEdits:\n    hooks: [{hookName: prestart, path: \"\"}]\n    mounts: [{hostPath: /a}]\n",
	"cdiVersion: 0.5.0\nkind: v.com/c\ndevices:\n- name: d\n  containerEdits:\n    netDevices: [{hostInterfaceName: a, name: b}]\n",
	"cdiVersion: 9.9.9\nkind: v/c\ndevices: []\nbogus: 1\n",
	"cdiVersion: 0.5.0\nkind: v.com/c\ncontainerEdits:\n  mounts: [null]\ndevices:\n- name: d\n  containerEdits:\n    deviceNodes: [null]\n",
	"null\n",
	"",
}

// yamlLines counts lines as YAML does: a line ends at \n, \r\n, \r, NEL,
// LS or PS, in the text after decoding (UTF-16 where a byte-order mark
// says so).
func yamlLines(data []byte) int {
	if len(data) >= 2 && (data[0] == 0xfe && data[1] == 0xff || data[0] == 0xff && data[1] == 0xfe) {
		units := make([]uint16, 0, len(data)/2)
		for i := 2; i+1 < len(data); i += 2 {
			if data[0] == 0xfe {
				units = append(units, uint16(data[i])<<8|uint16(data[i+1]))
			} else {
				units = append(units, uint16(data[i+1])<<8|uint16(data[i]))
			}
		}
		data = []byte(string(utf16.Decode(units)))
	}
	n := 1
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\n':
			n++
		case data[i] == '\r':
			n++
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
		case bytes.HasPrefix(data[i:], []byte("\u0085")), bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			n++
		}
	}
	return n
}

// FuzzParseCDISpec: an error is a ParseError for the file, its line
// inside the input (lines counted as YAML counts them); an accepted spec has a valid kind, at least one
// device, valid unique names and a path for every device node, and the
// same spec written back as JSON (specs-go's field names) parses to the
// same devices. conformance/ctk compares accept/reject with pkg/cdi.
func FuzzParseCDISpec(f *testing.F) {
	for _, s := range cdiSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := container.ParseCDISpec("spec.yaml", data)
		var pe *container.ParseError
		if err != nil {
			if !errors.As(err, &pe) || pe.File != "spec.yaml" {
				t.Fatalf("error %v is not a ParseError for spec.yaml", err)
			}
			if pe.Column != 0 || pe.Line < 0 || pe.Line > yamlLines(data) {
				t.Fatalf("%v: position outside the input's %d lines", pe, yamlLines(data))
			}
			return
		}
		if s == nil || len(s.Devices) == 0 || s.File != "spec.yaml" {
			t.Fatalf("accepted %+v", s)
		}
		vendor, class := parser.ParseQualifier(s.Kind)
		if parser.ValidateVendorName(vendor) != nil || parser.ValidateClassName(class) != nil {
			t.Fatalf("accepted kind %q", s.Kind)
		}
		seen := map[string]bool{}
		for _, d := range s.Devices {
			if parser.ValidateDeviceName(d.Name) != nil || seen[d.Name] {
				t.Fatalf("accepted device name %q (twice: %v)", d.Name, seen[d.Name])
			}
			seen[d.Name] = true
			for _, n := range d.Nodes {
				if n == "" {
					t.Fatalf("device %q: a node without a path: %+v", d.Name, s)
				}
			}
		}
		// Round trip through specs-go's JSON form.
		var raw cdispec.Spec
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("accepted, but a second decode fails: %v", err)
		}
		out, err := json.Marshal(&raw)
		if err != nil {
			t.Fatal(err)
		}
		again, err := container.ParseCDISpec("spec.json", out)
		if err != nil {
			t.Fatalf("%q accepted, its JSON form %s not: %v", data, out, err)
		}
		again.File = s.File
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("%q -> %+v; as JSON %s -> %+v", data, s, out, again)
		}
	})
}
