package container_test

import (
	"errors"
	"testing"

	"github.com/gpunode/gpunode/internal/bind"
	"github.com/gpunode/gpunode/internal/container"
)

func isInput(err error) bool { return errors.Is(err, bind.ErrInput) }

func FuzzParseDaemonJSON(f *testing.F) {
	f.Add([]byte(`{"runtimes":{"nvidia":{"path":"nvidia-container-runtime"}},"default-ulimits":{"memlock":{"Name":"memlock","Hard":-1,"Soft":-1}}}`))
	f.Add([]byte("{\n  \"features\": {\"cdi\": true},\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := container.ParseDaemonJSON("daemon.json", data)
		if err == nil && c == nil {
			t.Fatal("nil config without error")
		}
		var pe *container.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not a ParseError", err)
		}
	})
}

func FuzzParseContainerdTOML(f *testing.F) {
	f.Add([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\n"))
	f.Add([]byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\nenable_cdi = true\ncdi_spec_dirs = ['/etc/cdi']\n"))
	f.Add([]byte("enable_cdi =\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := container.ParseTOML("config.toml", data)
		var pe *container.ParseError
		switch {
		case err != nil && !errors.As(err, &pe):
			t.Fatalf("error %v is not a ParseError", err)
		case err == nil && m == nil:
			t.Fatal("nil tables without error")
		case err == nil:
			_ = container.DecodeContainerd(m)
		}
	})
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add([]byte("1412 1133 0:312 / / rw,relatime master:611 - overlay overlay rw,lowerdir=/a\n1420 1412 259:2 /raid/d\\040x /data ro - xfs /dev/md0 rw\n"))
	f.Add([]byte("1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := container.ParseMountInfo(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.FSType == "" {
				t.Fatalf("mount without fstype: %+v", m)
			}
		}
		if len(ms) > 0 {
			if _, ok := container.MountOf(ms, ms[0].MountPoint); !ok {
				t.Fatalf("mount point %q not found in its own table", ms[0].MountPoint)
			}
		}
	})
}
