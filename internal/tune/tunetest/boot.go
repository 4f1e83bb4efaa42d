package tunetest

// Boot loader and competing tuner variants of the overlay (Options.Boot,
// Options.Tuners): what a stock install of each distribution family has.

// Boot loader variants of Options.Boot.
const (
	// BootGRUB is Ubuntu's GRUB with /etc/default/grub only (the default).
	BootGRUB = ""
	// BootGRUBDropins adds /etc/default/grub.d drop-ins, as Ubuntu cloud
	// images ship them: 50-cloudimg-settings.cfg extends
	// GRUB_CMDLINE_LINUX_DEFAULT, and 60-site.cfg replaces
	// GRUB_CMDLINE_LINUX (so it, not /etc/default/grub, wins).
	BootGRUBDropins = "grub-dropins"
	// BootBLS is a Rocky/RHEL 9 host: GRUB with BLS entries, grubby,
	// /etc/kernel/cmdline.
	BootBLS = "bls"
	// BootSystemdBoot is a systemd-boot host: no /etc/default/grub, a
	// loader.conf in the ESP, /etc/kernel/cmdline.
	BootSystemdBoot = "systemd-boot"
)

const (
	rhelKernel = "5.14.0-427.13.1.el9_4.x86_64"
	machineID  = "4f3a9c1e2b7d4e8a9c1b5d6e7f8a9b0c"
)

func writeBoot(w *writer, boot string) {
	switch boot {
	case BootGRUBDropins:
		w.file("/etc/default/grub.d/50-cloudimg-settings.cfg", "# Cloud Image specific Grub settings for Generic Cloud Images\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT console=tty1 console=ttyS0\"\nGRUB_TIMEOUT=0\n", 0o644)
		w.file("/etc/default/grub.d/60-site.cfg", "# site defaults\nGRUB_CMDLINE_LINUX=\"iommu=on\"\n", 0o644)
	case BootBLS:
		w.remove("/etc/default/grub")
		w.file("/etc/default/grub", "GRUB_TIMEOUT=5\nGRUB_DISTRIBUTOR=\"$(sed 's, release .*$,,g' /etc/system-release)\"\nGRUB_DEFAULT=saved\nGRUB_DISABLE_SUBMENU=true\nGRUB_TERMINAL_OUTPUT=\"console\"\nGRUB_CMDLINE_LINUX=\"crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap\"\nGRUB_DISABLE_RECOVERY=\"true\"\nGRUB_ENABLE_BLSCFG=true\n", 0o644)
		opts := "root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap"
		for _, k := range []string{"5.14.0-362.8.1.el9_3.x86_64", rhelKernel} {
			w.file("/boot/loader/entries/"+machineID+"-"+k+".conf", "title Rocky Linux ("+k+") 9.4 (Blue Onyx)\nversion "+k+"\nlinux /vmlinuz-"+k+"\ninitrd /initramfs-"+k+".img $tuned_initrd\noptions "+opts+" $tuned_params\ngrub_users $grub_users\ngrub_arg --unrestricted\ngrub_class rocky\n", 0o644)
		}
		w.file("/etc/kernel/cmdline", opts+"\n", 0o644)
		w.file("/proc/sys/kernel/osrelease", rhelKernel+"\n", 0o444)
		w.file("/proc/cmdline", "BOOT_IMAGE=(hd0,gpt2)/vmlinuz-"+rhelKernel+" "+opts+"\n", 0o444)
	case BootSystemdBoot:
		w.remove("/etc/default/grub")
		w.file("/boot/efi/loader/loader.conf", "timeout 3\neditor no\n", 0o644)
		w.file("/etc/kernel/cmdline", "root=UUID=0a3407de-014b-458b-b5c1-848e92a327a3 ro quiet\n", 0o644)
	}
}

// writeTuners adds the competing tuners of Options.Tuners: tuned running
// with hpc-compute (which includes latency-performance), cpupower.service
// enabled with the powersave governor, power-profiles-daemon running with
// its balanced profile, irqbalance enabled.
func writeTuners(w *writer) {
	w.file("/etc/tuned/active_profile", "hpc-compute\n", 0o644)
	w.file("/etc/tuned/profile_mode", "manual\n", 0o644)
	w.file("/usr/lib/tuned/latency-performance/tuned.conf", "#\n# tuned configuration\n#\n\n[main]\nsummary=Optimize for deterministic performance at the cost of increased power consumption\n\n[cpu]\nforce_latency=cstate.id_no_zero:1|3\ngovernor=performance\nenergy_perf_bias=performance\nmin_perf_pct=100\n\n[sysctl]\nvm.dirty_ratio=10\nvm.dirty_background_ratio=3\nvm.swappiness=10\n", 0o644)
	w.file("/usr/lib/tuned/hpc-compute/tuned.conf", "#\n# tuned configuration\n#\n\n[main]\nsummary=Optimize for HPC compute workloads\ninclude=latency-performance\n\n[vm]\ntransparent_hugepages=always\n\n[sysctl]\nvm.min_free_kbytes=135168\nvm.zone_reclaim_mode=0\n", 0o644)
	w.file("/proc/2210/comm", "tuned\n", 0o444)
	w.link("/etc/systemd/system/multi-user.target.wants/tuned.service", "/usr/lib/systemd/system/tuned.service")
	w.file("/etc/sysconfig/cpupower", "# See 'cpupower help' and cpupower(1) for more info\nCPUPOWER_START_OPTS=\"frequency-set -g powersave\"\nCPUPOWER_STOP_OPTS=\"frequency-set -g ondemand\"\n", 0o644)
	w.link("/etc/systemd/system/multi-user.target.wants/cpupower.service", "/usr/lib/systemd/system/cpupower.service")
	w.file("/proc/2300/comm", "power-profiles-daemon\n", 0o444)
	w.file("/var/lib/power-profiles-daemon/state.ini", "[State]\nDriver=intel_pstate\nPlatformDriver=placeholder\nProfile=balanced\n", 0o644)
	w.link("/etc/systemd/system/multi-user.target.wants/irqbalance.service", "/usr/lib/systemd/system/irqbalance.service")
}
