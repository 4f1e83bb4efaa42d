// Package tune is gpunode's node audit and reversible tuning: the settings
// catalogue, the profiles built from it, 'gpunode audit' and 'gpunode tune
// plan|apply|rollback|status'.
//
// # Catalogue
//
// NewCatalogue returns one declarative Setting per knob: id, layer, how it
// is read, what each built-in profile wants (Desired), how it is applied at
// runtime and persistently and how it is reverted (Setting.Mechanism),
// whether it needs a reboot, and why it matters with a pointer into the
// seed chapter. Knobs are sysctls, sysfs files (THP, SMT), per-CPU files
// (governor, EPP, cpuidle), kernel parameters (C-states, isolation, IOMMU),
// pam_limits and systemd defaults, swap, the vm.dirty pair, per-node
// hugepages, and read-only checks computed from the topology (PCIe links,
// ACS, device IRQ locality).
//
// # Profiles
//
// Built-ins: base, training (includes base), inference (includes base) and
// inference-isolated (includes inference). User profiles are YAML files
// (see parseProfile) with include: inheritance and per-setting override or
// disable; values "report" (show, never drift) and "auto" (computed from
// the topology or memory size) are accepted where documented.
//
// # Audit
//
// Audit reads every managed setting and reports ok, drift, pending-reboot
// (configured for boot, not live yet), absent (no such knob on this kernel
// or hardware) or error, with the current and expected values, the exact
// fix commands and the reason. A setting that is right now but configured
// differently for the next boot (a stray /etc/sysctl.d file, a tmpfiles
// line) is drift. GPU-layer checks plug in through GPUChecker, IRQ-layer
// checks through Options.IRQ (a Source); --pid adds process checks.
//
// # Apply and rollback
//
// Apply writes runtime values, then generated files (90-gpunode.conf in
// sysctl.d, tmpfiles.d, limits.d, system.conf.d; swap lines of /etc/fstab
// commented; /etc/default/grub only with Bootloader), each original
// recorded in internal/journal first. Files are generated whole from the
// profile, so applying twice changes nothing the second time. A failure
// part way rolls back what was done (ApplyError). Rollback undoes every tune
// transaction, interrupted ones included; GetStatus shows the applied
// profile and drift since.
package tune
