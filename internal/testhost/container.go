package testhost

import (
	"fmt"
	"strings"
)

// withContainerFiles adds each host's container-runtime files (package
// database, toolkit binaries, Docker/containerd/CRI-O configuration, CDI
// specs, /dev nodes, the driver version and a mount table): dgx-h100 is
// set up as nvidia-ctk leaves a node, downgraded has the runtime missing
// from daemon.json and a stale CDI spec, amd-8numa has files that do not
// parse.
func withContainerFiles(specs []Spec) []Spec {
	for i := range specs {
		var extra map[string]string
		switch specs[i].Name {
		case "dgx-h100":
			extra = containerDGX()
		case "downgraded":
			extra = containerDowngraded()
		case "amd-8numa":
			extra = containerBroken()
		}
		if len(extra) == 0 {
			continue
		}
		files := make(map[string]string, len(specs[i].Files)+len(extra))
		for k, v := range specs[i].Files {
			files[k] = v
		}
		for k, v := range extra {
			files[k] = v
		}
		specs[i].Files = files
	}
	return specs
}

// dpkgStatus writes a /var/lib/dpkg/status with the packages (name,
// version) installed.
func dpkgStatus(pkgs ...[2]string) string {
	var b strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&b, "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: utils\nArchitecture: amd64\nVersion: %s\nDescription: %s\n\n", p[0], p[1], p[0])
	}
	return b.String()
}

func toolkitFiles(m map[string]string, libVersion string) {
	for _, b := range []string{"nvidia-ctk", "nvidia-container-runtime", "nvidia-container-runtime-hook", "nvidia-container-cli", "nvidia-cdi-hook"} {
		m["/usr/bin/"+b] = ""
	}
	m["/usr/lib/x86_64-linux-gnu/libnvidia-container.so.1"] = ""
	m["/usr/lib/x86_64-linux-gnu/libnvidia-container.so."+libVersion] = ""
}

func devNodes(m map[string]string, gpus int) {
	for _, d := range []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"} {
		m["/dev/"+d] = ""
	}
	for i := 0; i < gpus; i++ {
		m[fmt.Sprintf("/dev/nvidia%d", i)] = ""
	}
}

func driverVersion(v string) string {
	return fmt.Sprintf("NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n", v)
}

// cdiSpec renders a spec in the shape 'nvidia-ctk cdi generate' writes:
// common device nodes and library mounts, one device per GPU by index and
// by UUID, and "all".
func cdiSpec(driver string, uuids []string) string {
	var b strings.Builder
	b.WriteString("---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidia-modeset\n  - path: /dev/nvidia-uvm\n  - path: /dev/nvidia-uvm-tools\n  - path: /dev/nvidiactl\n")
	b.WriteString("  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n")
	fmt.Fprintf(&b, "  hooks:\n  - args:\n    - nvidia-cdi-hook\n    - create-symlinks\n    - --link\n    - libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so\n    env:\n    - NVIDIA_CTK_DEBUG=false\n    hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n")
	fmt.Fprintf(&b, "  - args:\n    - nvidia-cdi-hook\n    - update-ldcache\n    - --folder\n    - /usr/lib/x86_64-linux-gnu\n    hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n")
	b.WriteString("  mounts:\n")
	for _, lib := range []string{"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so"} {
		p := "/usr/lib/x86_64-linux-gnu/" + lib + "." + driver
		fmt.Fprintf(&b, "  - containerPath: %s\n    hostPath: %s\n    options:\n    - ro\n    - nosuid\n    - nodev\n    - bind\n", p, p)
	}
	b.WriteString("devices:\n")
	node := func(i int) string {
		return fmt.Sprintf("- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n", i)
	}
	for i, u := range uuids {
		fmt.Fprintf(&b, "%s  name: \"%d\"\n", node(i), i)
		fmt.Fprintf(&b, "%s  name: %s\n", node(i), u)
	}
	b.WriteString("- containerEdits:\n    deviceNodes:\n")
	for i := range uuids {
		fmt.Fprintf(&b, "    - path: /dev/nvidia%d\n", i)
	}
	b.WriteString("  name: all\nkind: nvidia.com/gpu\n")
	return b.String()
}

func containerDGX() map[string]string {
	m := map[string]string{}
	m["/var/lib/dpkg/status"] = dpkgStatus(
		[2]string{"containerd.io", "1.7.25-1"},
		[2]string{"docker-ce", "5:27.5.1-1~ubuntu.22.04~jammy"},
		[2]string{"libnvidia-container-tools", "1.17.4-1"},
		[2]string{"libnvidia-container1", "1.17.4-1"},
		[2]string{"nvidia-container-toolkit", "1.17.4-1"},
		[2]string{"nvidia-container-toolkit-base", "1.17.4-1"},
	)
	toolkitFiles(m, "1.17.4")
	m["/usr/bin/dockerd"] = ""
	m["/usr/bin/containerd"] = ""
	devNodes(m, 8)
	m["/proc/driver/nvidia/version"] = driverVersion("550.54.15")
	// As 'nvidia-ctk runtime configure --runtime=docker --cdi.enabled'
	// writes it, plus the memlock and shm defaults.
	m["/etc/docker/daemon.json"] = `{
    "default-shm-size": "16g",
    "default-ulimits": {
        "memlock": {
            "Hard": -1,
            "Name": "memlock",
            "Soft": -1
        }
    },
    "features": {
        "cdi": true
    },
    "runtimes": {
        "nvidia": {
            "args": [],
            "path": "nvidia-container-runtime"
        }
    }
}
`
	// containerd 1.7, config version 2, as nvidia-ctk configures it.
	m["/etc/containerd/config.toml"] = `version = 2

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]
    enable_cdi = true
    cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_engine = ""
          runtime_root = ""
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
            SystemdCgroup = true

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true
`
	uuids := make([]string, 8)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b1%04x", i)
	}
	m["/etc/cdi/nvidia.yaml"] = cdiSpec("550.54.15", uuids)
	// The verbs devices of the 12 ConnectX ports (a class directory of
	// links on a real host; what is read is each one's ibdev).
	for i := 0; i < 12; i++ {
		m[fmt.Sprintf("/sys/class/infiniband_verbs/uverbs%d/ibdev", i)] = fmt.Sprintf("mlx5_%d\n", i)
	}
	// gpunode inside a container: an overlay root, the data set bind-mounted
	// from the host's RAID, /dev/shm a tmpfs.
	m["/proc/self/mountinfo"] = `1412 1133 0:312 / / rw,relatime master:611 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/6Q3N7ZDPJ3ML:/var/lib/docker/overlay2/l/ZB7KQ2,upperdir=/var/lib/docker/overlay2/9a1c/diff,workdir=/var/lib/docker/overlay2/9a1c/work
1413 1412 0:315 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
1414 1412 0:316 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755,inode64
1419 1414 0:314 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=16777216k,inode64
1420 1412 259:2 /raid/datasets/imagenet /data ro,relatime - xfs /dev/md0 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota
1421 1412 259:2 /raid/ckpt/run\040042 /checkpoints rw,relatime - xfs /dev/md0 rw,attr2,inode64,logbufs=8,logbsize=32k,noquota
1422 1412 8:2 /var/lib/docker/containers/9a1c/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/sda2 rw
`
	m["/root/inspect-train.json"] = `[
    {
        "Id": "9a1c5e0f3b2d",
        "Name": "/train",
        "GraphDriver": {"Name": "overlay2"},
        "Mounts": [
            {"Type": "bind", "Source": "/raid/datasets/imagenet", "Destination": "/data", "Mode": "ro", "RW": false, "Propagation": "rprivate"},
            {"Type": "volume", "Name": "ckpt", "Source": "/var/lib/docker/volumes/ckpt/_data", "Destination": "/checkpoints", "Driver": "local", "Mode": "z", "RW": true, "Propagation": ""}
        ]
    }
]
`
	m["/root/image-pytorch.json"] = `[
    {
        "Id": "sha256:4d2f",
        "RepoTags": ["nvcr.io/nvidia/pytorch:25.01-py3"],
        "Config": {
            "Env": [
                "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "CUDA_VERSION=12.8.0.038",
                "NVIDIA_REQUIRE_CUDA=cuda>=9.0",
                "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video"
            ]
        }
    }
]
`
	m["/root/pod-train.yaml"] = `apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:25.01-py3
    volumeMounts:
    - name: data
      mountPath: /data
    - name: dshm
      mountPath: /dev/shm
  volumes:
  - name: data
    hostPath:
      path: /raid/datasets/imagenet
  - name: dshm
    emptyDir:
      medium: Memory
      sizeLimit: 16Gi
`
	return m
}

func containerDowngraded() map[string]string {
	m := map[string]string{}
	// A partial toolkit upgrade, Docker 28.3 (CDI on by default) without
	// the nvidia runtime, containerd 2.0 with a v3 config whose
	// BinaryName points at a GPU-operator path that is gone, and a CDI
	// spec from when the node had four GPUs.
	m["/var/lib/dpkg/status"] = dpkgStatus(
		[2]string{"containerd", "2.0.2-0ubuntu1~24.04.1"},
		[2]string{"cri-o", "1.31.3-1.1"},
		[2]string{"docker-ce", "5:28.3.2-1~ubuntu.24.04~noble"},
		[2]string{"libnvidia-container-tools", "1.14.3-1"},
		[2]string{"libnvidia-container1", "1.14.3-1"},
		[2]string{"nvidia-container-toolkit", "1.13.5-1"},
	)
	toolkitFiles(m, "1.14.3")
	delete(m, "/usr/bin/nvidia-ctk")
	m["/usr/bin/dockerd"] = ""
	m["/usr/bin/crio"] = ""
	m["/usr/libexec/crio/crun"] = ""
	devNodes(m, 2)
	m["/proc/driver/nvidia/version"] = driverVersion("535.183.01")
	m["/etc/docker/daemon.json"] = `{
  "log-driver": "json-file",
  "log-opts": {
    "max-size": "100m"
  },
  "default-shm-size": "64M"
}
`
	m["/etc/containerd/config.toml"] = `version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    enable_cdi = true
    cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'nvidia'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
          runtime_type = 'io.containerd.runc.v2'

          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]
            BinaryName = '/usr/local/nvidia/toolkit/nvidia-container-runtime'
            SystemdCgroup = true
`
	m["/etc/crio/crio.conf.d/10-crio.conf"] = `[crio.runtime]
default_runtime = "crun"

[crio.runtime.runtimes.crun]
runtime_path = "/usr/libexec/crio/crun"
runtime_root = "/run/crun"
monitor_path = "/usr/libexec/crio/conmon"
allowed_annotations = [
    "io.containers.trace-syscall",
]
`
	m["/etc/crio/crio.conf.d/99-nvidia.conf"] = `
[crio]

  [crio.runtime]
    default_runtime = "nvidia"

    [crio.runtime.runtimes]

      [crio.runtime.runtimes.nvidia]
        runtime_path = "/usr/bin/nvidia-container-runtime"
        runtime_type = "oci"
        monitor_path = "/usr/libexec/crio/conmon"
`
	m["/var/run/cdi/nvidia.yaml"] = cdiSpec("525.85.12", []string{
		"GPU-0f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8", "GPU-1f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8",
		"GPU-2f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8", "GPU-3f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8",
	})
	// The host's own mount table: ext4 root, a container's overlay.
	m["/proc/self/mountinfo"] = `22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
25 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=131565768k,nr_inodes=32891442,mode=755,inode64
26 25 0:24 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64
30 22 8:3 / /home rw,relatime shared:9 - ext4 /dev/nvme0n1p3 rw
612 22 0:63 / /var/lib/docker/overlay2/77c4/merged rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/AB12,upperdir=/var/lib/docker/overlay2/77c4/diff,workdir=/var/lib/docker/overlay2/77c4/work
`
	return m
}

func containerBroken() map[string]string {
	m := map[string]string{}
	m["/var/lib/dpkg/status"] = dpkgStatus(
		[2]string{"containerd.io", "1.7.25-1"},
		[2]string{"docker-ce", "5:26.1.4-1~debian.12~bookworm"},
	)
	m["/usr/bin/dockerd"] = ""
	// A trailing comma (line 6) and a TOML key without a value (line 4).
	m["/etc/docker/daemon.json"] = `{
  "runtimes": {
    "nvidia": {
      "path": "nvidia-container-runtime"
    }
  },
}
`
	m["/etc/containerd/config.toml"] = `version = 2

[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi =
`
	m["/etc/cdi/nvidia.yaml"] = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  bogus: 1\n"
	return m
}
