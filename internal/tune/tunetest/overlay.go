// Package tunetest adds what 'gpunode audit' and 'gpunode tune' read to a
// fixture host tree (testdata/hosts/<name>, which holds only what topology
// discovery reads): the /proc/sys knobs, THP, cpufreq and cpuidle files of
// every CPU, /proc/cmdline, swap, mounts, IRQ affinities, PCIe config space
// of switch ports, and the /etc files of a stock Ubuntu 24.04 install. The
// result is a host nobody has tuned yet, so every profile finds drift.
package tunetest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Options vary the overlay.
type Options struct {
	// ACSRedirect writes PCIe switch port config space with ACS P2P
	// redirect enabled (as firmware leaves it on many servers).
	ACSRedirect bool
	// Process adds a process (PID 4242) with a GPU open, some swap and a
	// low memlock limit, for --pid checks.
	Process bool
	// Boot picks the boot loader configuration (BootGRUB, the default,
	// BootGRUBDropins, BootBLS, BootSystemdBoot; boot.go).
	Boot string
	// Tuners adds competing tuners (tuned, cpupower.service,
	// power-profiles-daemon, irqbalance enabled; boot.go).
	Tuners bool
}

// Overlay writes the stock files into root (a copy of a fixture host).
func Overlay(root string, o Options) error {
	w := &writer{root: root}
	files := map[string]string{
		"/proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.8.0-49-generic root=/dev/mapper/ubuntu--vg-ubuntu--lv ro quiet splash\n",
		"/proc/swaps":   "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/swap.img                               file\t\t8388604\t\t0\t\t-2\n",
		"/proc/mounts": "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n" +
			"/dev/mapper/ubuntu--vg-ubuntu--lv / ext4 rw,relatime 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n",
		"/proc/sys/vm/swappiness":                     "60\n",
		"/proc/sys/vm/dirty_ratio":                    "20\n",
		"/proc/sys/vm/dirty_background_ratio":         "10\n",
		"/proc/sys/vm/dirty_bytes":                    "0\n",
		"/proc/sys/vm/dirty_background_bytes":         "0\n",
		"/proc/sys/vm/nr_hugepages":                   "0\n",
		"/proc/sys/vm/zone_reclaim_mode":              "0\n",
		"/proc/sys/kernel/numa_balancing":             "1\n",
		"/proc/sys/net/core/rmem_max":                 "212992\n",
		"/proc/sys/net/core/wmem_max":                 "212992\n",
		"/proc/sys/net/ipv4/tcp_rmem":                 "4096\t131072\t6291456\n",
		"/proc/sys/net/ipv4/tcp_wmem":                 "4096\t16384\t4194304\n",
		"/proc/1/comm":                                "systemd\n",
		"/sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"/sys/kernel/mm/transparent_hugepage/defrag":  "always defer defer+madvise [madvise] never\n",
		"/sys/devices/system/cpu/smt/control":         "on\n",
		"/etc/default/grub": `# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=` + "`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`" + `
GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"
GRUB_CMDLINE_LINUX=""
`,
		"/etc/fstab":                             "# /etc/fstab: static file system information.\n/dev/disk/by-id/dm-uuid-LVM-root / ext4 defaults 0 1\n/dev/disk/by-uuid/8c1e-77aa /boot ext4 defaults 0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n",
		"/etc/security/limits.conf":              "# /etc/security/limits.conf\n#\n#<domain>      <type>  <item>         <value>\n#\n#*               soft    core            0\n#@student        -       maxlogins       4\n\n# End of file\n",
		"/etc/sysctl.conf":                       "#\n# /etc/sysctl.conf - Configuration file for setting system variables\n#\n#net.ipv4.ip_forward=1\n",
		"/etc/sysctl.d/10-network-security.conf": "net.ipv4.conf.default.rp_filter=2\nnet.ipv4.conf.all.rp_filter=2\n",
		"/etc/systemd/system.conf":               "[Manager]\n#DefaultLimitNOFILE=1024:524288\n#DefaultLimitMEMLOCK=8M\n",
		"/etc/default/irqbalance":                "#IRQBALANCE_BANNED_CPULIST=\n",
	}
	for p, c := range files {
		w.file(p, c, 0o644)
	}
	w.link("/etc/sysctl.d/99-sysctl.conf", "../sysctl.conf")
	writeBoot(w, o.Boot)
	if o.Tuners {
		writeTuners(w)
	}
	if w.err == nil {
		w.err = os.MkdirAll(filepath.Join(root, "var/lib"), 0o755)
	}

	// Per-CPU cpufreq and cpuidle.
	cpus, err := cpuIDs(root)
	if err != nil {
		return err
	}
	idle := []struct {
		name string
		lat  int
	}{{"POLL", 0}, {"C1", 2}, {"C1E", 10}, {"C6", 170}}
	for _, c := range cpus {
		d := fmt.Sprintf("/sys/devices/system/cpu/cpu%d", c)
		w.file(d+"/cpufreq/scaling_governor", "powersave\n", 0o644)
		w.file(d+"/cpufreq/scaling_available_governors", "performance powersave\n", 0o444)
		w.file(d+"/cpufreq/energy_performance_preference", "balance_performance\n", 0o644)
		w.file(d+"/cpufreq/energy_performance_available_preferences", "default performance balance_performance balance_power power \n", 0o444)
		for i, s := range idle {
			sd := fmt.Sprintf("%s/cpuidle/state%d", d, i)
			w.file(sd+"/name", s.name+"\n", 0o444)
			w.file(sd+"/latency", strconv.Itoa(s.lat)+"\n", 0o444)
			w.file(sd+"/disable", "0\n", 0o644)
		}
	}

	// Device IRQ affinities: on the device's node (node 0's CPUs when the
	// device has no local_cpulist).
	devs, err := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	if err != nil {
		return err
	}
	node0 := readTrim(filepath.Join(root, "sys/devices/system/node/node0/cpulist"))
	var bridges []string
	for _, d := range devs {
		dp := filepath.Join(root, "sys/bus/pci/devices", d.Name())
		irqs, _ := os.ReadDir(filepath.Join(dp, "msi_irqs"))
		if len(irqs) == 0 {
			if strings.HasPrefix(readTrim(filepath.Join(dp, "class")), "0x0604") {
				bridges = append(bridges, d.Name())
			}
			continue
		}
		local := readTrim(filepath.Join(dp, "local_cpulist"))
		if local == "" {
			local = node0
		}
		for _, irq := range irqs {
			// Fixture hosts from internal/testhost have their own.
			if _, err := os.Stat(filepath.Join(root, "proc/irq", irq.Name(), "smp_affinity_list")); err == nil {
				continue
			}
			w.file("/proc/irq/"+irq.Name()+"/smp_affinity_list", local+"\n", 0o644)
		}
	}
	if o.ACSRedirect {
		// Switch ports: the bridges below the root port (bus+1 and +2).
		sort.Strings(bridges)
		for _, b := range bridges {
			if !strings.HasSuffix(b, ":01.0") { // not a root port
				w.file("/sys/bus/pci/devices/"+b+"/config", string(acsConfig(0x001d)), 0o644)
			}
		}
	}
	if o.Process {
		writeProcess(w)
	}
	return w.err
}

// acsConfig returns a 4 KiB PCI config space with an AER capability and
// then an ACS capability whose control register is ctrl.
func acsConfig(ctrl uint16) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint32(b[0:], 0x1af510b5) // vendor/device of a PLX switch
	// 0x100: AER (id 1, v2) -> next 0x148
	binary.LittleEndian.PutUint32(b[0x100:], 0x0001|2<<16|0x148<<20)
	// 0x148: ACS (id 0xd, v1), last
	binary.LittleEndian.PutUint32(b[0x148:], 0x000d|1<<16)
	binary.LittleEndian.PutUint16(b[0x14c:], 0x005f) // capability
	binary.LittleEndian.PutUint16(b[0x14e:], ctrl)
	return b
}

func writeProcess(w *writer) {
	d := "/proc/4242"
	status := func(tid int, cpus string) string {
		return fmt.Sprintf("Name:\tpython3\nPid:\t%d\nVmRSS:\t83886080 kB\nVmLck:\t0 kB\nVmPin:\t1048576 kB\nVmSwap:\t20480 kB\nCpus_allowed_list:\t%s\n", tid, cpus)
	}
	w.file(d+"/status", status(4242, "0-55,112-167"), 0o444)
	w.file(d+"/task/4242/status", status(4242, "0-55,112-167"), 0o444)
	w.file(d+"/task/4250/status", status(4250, "0-223"), 0o444)
	w.file(d+"/limits", "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 1048576              files     \nMax locked memory         8388608              8388608              bytes     \n", 0o444)
	w.file(d+"/maps", "55d0c0000000-55d0c0001000 r--p 00000000 103:04 1 /usr/bin/python3.12\n7f0000000000-7f0000001000 r-xp 00000000 103:04 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n", 0o444)
	w.file(d+"/numa_maps", "55d0c0000000 default file=/usr/bin/python3.12 mapped=1 N0=1\n7f1000000000 bind:1 anon=262144 dirty=262144 N1=262144\n", 0o444)
	w.file(d+"/comm", "python3\n", 0o444)
	w.link(d+"/fd/0", "/dev/pts/0")
	w.link(d+"/fd/7", "/dev/nvidiactl")
	w.link(d+"/fd/8", "/dev/nvidia0")
}

func cpuIDs(root string) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(root, "sys/devices/system/cpu"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu")); err == nil && strings.HasPrefix(e.Name(), "cpu") {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

type writer struct {
	root string
	err  error
}

func (w *writer) file(p, content string, mode os.FileMode) {
	if w.err != nil {
		return
	}
	full := filepath.Join(w.root, p)
	if w.err = os.MkdirAll(filepath.Dir(full), 0o755); w.err != nil {
		return
	}
	if w.err = os.WriteFile(full, []byte(content), mode); w.err != nil {
		return
	}
	w.err = os.Chmod(full, mode)
}

func (w *writer) remove(p string) {
	if w.err == nil {
		if err := os.Remove(filepath.Join(w.root, p)); err != nil && !os.IsNotExist(err) {
			w.err = err
		}
	}
}

func (w *writer) link(p, target string) {
	if w.err != nil {
		return
	}
	full := filepath.Join(w.root, p)
	if w.err = os.MkdirAll(filepath.Dir(full), 0o755); w.err != nil {
		return
	}
	w.err = os.Symlink(target, full)
}
