package container_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

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
