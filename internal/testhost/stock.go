package testhost

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The stock OS layer: what 'gpunode audit' and 'gpunode tune' read besides
// topology, as a stock Ubuntu 24.04 install leaves it on a host nobody has
// tuned yet (so every profile finds drift): the /proc/sys knobs, THP,
// cpufreq and cpuidle of every CPU, /proc/cmdline, swap, mounts, the /etc
// files (GRUB, fstab, limits, sysctl, systemd, irqbalance) and the PCIe
// config space of switch ports with ACS P2P redirect on (as firmware leaves
// it on many servers). Every generated host carries it (build); StockOS
// adds it to a captured tree (vm-2vcpu) for tests that tune one.

// stockKernelArgs are the kernel arguments of a stock install (after
// BOOT_IMAGE and before the spec's BootArgs).
const stockKernelArgs = "root=/dev/mapper/ubuntu--vg-ubuntu--lv ro quiet splash"

// acsRedirectOn is the ACS control register with source validation,
// request and completion redirect and upstream forwarding enabled.
const acsRedirectOn = 0x001d

// stockFiles returns the stock OS files (path -> content) and links (path
// -> absolute target) of a host with the given CPUs, kernel release, extra
// kernel arguments (also in GRUB_CMDLINE_LINUX_DEFAULT) and system-wide
// hugepages.
func stockFiles(cpus []int, kernel, bootArgs string, hugepages int) (map[string]string, map[string]string) {
	cmdline := "BOOT_IMAGE=/vmlinuz-" + kernel + " " + stockKernelArgs
	grubDefault := "quiet splash"
	if bootArgs != "" {
		cmdline += " " + bootArgs
		grubDefault += " " + bootArgs
	}
	files := map[string]string{
		"/proc/cmdline": cmdline + "\n",
		"/proc/swaps":   "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/swap.img                               file\t\t8388604\t\t0\t\t-2\n",
		"/proc/mounts": "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n" +
			"/dev/mapper/ubuntu--vg-ubuntu--lv / ext4 rw,relatime 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n",
		"/proc/sys/vm/swappiness":                     "60\n",
		"/proc/sys/vm/dirty_ratio":                    "20\n",
		"/proc/sys/vm/dirty_background_ratio":         "10\n",
		"/proc/sys/vm/dirty_bytes":                    "0\n",
		"/proc/sys/vm/dirty_background_bytes":         "0\n",
		"/proc/sys/vm/nr_hugepages":                   strconv.Itoa(hugepages) + "\n",
		"/proc/sys/vm/zone_reclaim_mode":              "0\n",
		"/proc/sys/kernel/numa_balancing":             "1\n",
		"/proc/sys/net/core/rmem_max":                 "212992\n",
		"/proc/sys/net/core/wmem_max":                 "212992\n",
		"/proc/sys/net/ipv4/tcp_rmem":                 "4096\t131072\t6291456\n",
		"/proc/sys/net/ipv4/tcp_wmem":                 "4096\t16384\t4194304\n",
		"/proc/1/comm":                                "systemd\n",
		"/sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"/sys/kernel/mm/transparent_hugepage/defrag":  "always defer defer+madvise [madvise] never\n",
		"/etc/default/grub": `# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=` + "`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`" + `
GRUB_CMDLINE_LINUX_DEFAULT="` + grubDefault + `"
GRUB_CMDLINE_LINUX=""
`,
		"/etc/fstab":                             "# /etc/fstab: static file system information.\n/dev/disk/by-id/dm-uuid-LVM-root / ext4 defaults 0 1\n/dev/disk/by-uuid/8c1e-77aa /boot ext4 defaults 0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n",
		"/etc/security/limits.conf":              "# /etc/security/limits.conf\n#\n#<domain>      <type>  <item>         <value>\n#\n#*               soft    core            0\n#@student        -       maxlogins       4\n\n# End of file\n",
		"/etc/sysctl.conf":                       "#\n# /etc/sysctl.conf - Configuration file for setting system variables\n#\n#net.ipv4.ip_forward=1\n",
		"/etc/sysctl.d/10-network-security.conf": "net.ipv4.conf.default.rp_filter=2\nnet.ipv4.conf.all.rp_filter=2\n",
		"/etc/systemd/system.conf":               "[Manager]\n#DefaultLimitNOFILE=1024:524288\n#DefaultLimitMEMLOCK=8M\n",
		"/etc/default/irqbalance":                "#IRQBALANCE_BANNED_CPULIST=\n",
	}
	// /etc/machine-id and its /var/lib/dbus link also keep /var/lib (where
	// the tune journal goes) in git, which keeps no empty directories.
	files["/etc/machine-id"] = "4f3a9c1e2b7d4e8a9c1b5d6e7f8a9b0c\n"
	links := map[string]string{
		"/etc/sysctl.d/99-sysctl.conf": "/etc/sysctl.conf",
		"/var/lib/dbus/machine-id":     "/etc/machine-id",
	}
	idle := []struct {
		name string
		lat  int
	}{{"POLL", 0}, {"C1", 2}, {"C1E", 10}, {"C6", 170}}
	for _, c := range cpus {
		d := fmt.Sprintf("/sys/devices/system/cpu/cpu%d", c)
		files[d+"/cpufreq/scaling_governor"] = "powersave\n"
		files[d+"/cpufreq/scaling_available_governors"] = "performance powersave\n"
		files[d+"/cpufreq/energy_performance_preference"] = "balance_performance\n"
		files[d+"/cpufreq/energy_performance_available_preferences"] = "default performance balance_performance balance_power power \n"
		for i, s := range idle {
			sd := fmt.Sprintf("%s/cpuidle/state%d", d, i)
			files[sd+"/name"] = s.name + "\n"
			files[sd+"/latency"] = strconv.Itoa(s.lat) + "\n"
			files[sd+"/disable"] = "0\n"
		}
	}
	return files, links
}

// buildStock adds the stock OS layer of spec s to t: the spec's own Files
// (written after it) win over it.
func buildStock(s Spec, t *tree, ncpu, cpuNodes int) {
	files, links := stockFiles(seq(ncpu), s.Kernel, s.BootArgs, s.Hugepages2M*cpuNodes)
	for p, c := range files {
		t.file(p, c)
	}
	for p, target := range links {
		t.link(p, target)
	}
	// Switch ports (every bridge below the root port) have their config
	// space, with ACS P2P redirect on.
	for _, d := range s.Devices {
		for i := range d.Bridges {
			if i == 0 {
				continue
			}
			p := filepath.ToSlash(filepath.Join("/sys/devices", d.RootComplex, strings.Join(d.Bridges[:i+1], "/"), "config"))
			t.file(p, string(ACSConfig(acsRedirectOn)))
		}
	}
}

// ACSConfig returns a 4 KiB PCI config space of a PCIe switch port with an
// AER capability and then an ACS capability whose control register is ctrl.
func ACSConfig(ctrl uint16) []byte {
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

// StockOS adds the stock OS layer that generated hosts carry to a captured
// host tree on disk (root, a private copy): the files of stockFiles for the
// tree's CPUs (kernel release from /proc/sys/kernel/osrelease), and an
// smp_affinity_list on the device's node (node 0's CPUs when it has no
// local_cpulist) for every device IRQ without one. Files already there
// are kept.
func StockOS(root string) error {
	ents, err := os.ReadDir(filepath.Join(root, "sys/devices/system/cpu"))
	if err != nil {
		return err
	}
	var cpus []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu")); err == nil && strings.HasPrefix(e.Name(), "cpu") {
			cpus = append(cpus, n)
		}
	}
	sort.Ints(cpus)
	files, links := stockFiles(cpus, readTrim(filepath.Join(root, "proc/sys/kernel/osrelease")), "", 0)
	files["/sys/devices/system/cpu/smt/control"] = "on\n" // generated hosts have theirs (build)
	// A capture keeps only what discovery read; tuning reads the memory
	// size too ("auto" values of vm.dirty, shm.size): /proc/meminfo from
	// the nodes' totals, as the kernel sums them.
	if mi := meminfoFromNodes(root); mi != "" {
		files["/proc/meminfo"] = mi
	}
	devs, err := os.ReadDir(filepath.Join(root, "sys/bus/pci/devices"))
	if err != nil {
		return err
	}
	node0 := readTrim(filepath.Join(root, "sys/devices/system/node/node0/cpulist"))
	for _, d := range devs {
		dp := filepath.Join(root, "sys/bus/pci/devices", d.Name())
		irqs, _ := os.ReadDir(filepath.Join(dp, "msi_irqs"))
		local := readTrim(filepath.Join(dp, "local_cpulist"))
		if local == "" {
			local = node0
		}
		for _, irq := range irqs {
			files["/proc/irq/"+irq.Name()+"/smp_affinity_list"] = local + "\n"
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(root, p)
		if _, err := os.Lstat(full); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return err
		}
	}
	for p, target := range links {
		full := filepath.Join(root, p)
		if _, err := os.Lstat(full); err == nil {
			continue
		}
		rel, err := filepath.Rel(filepath.Dir(p), target)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(rel, full); err != nil {
			return err
		}
	}
	return nil
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// meminfoFromNodes returns a /proc/meminfo for a captured tree from the
// MemTotal of its NUMA nodes' meminfo files ("" when there are none).
func meminfoFromNodes(root string) string {
	nodes, _ := filepath.Glob(filepath.Join(root, "sys/devices/system/node/node*/meminfo"))
	var totalKB int64
	for _, n := range nodes {
		b, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 4 && f[2] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[3], 10, 64)
				totalKB += kb
			}
		}
	}
	if totalKB == 0 {
		return ""
	}
	return fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n",
		totalKB, totalKB/10*7, totalKB/10*7)
}
