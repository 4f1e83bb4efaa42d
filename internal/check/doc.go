// Package check is the one vocabulary of gpunode's audits: every layer
// (tune's catalogue of kernel and OS settings, the GPU layer, the IRQ
// layer, process checks, and later containers, lint and the agent) reports
// its results as [Check] values with one set of statuses, and plugs into
// 'gpunode audit' as a [Source].
//
// # Checks
//
// A Check is one verdict about one thing:
//
//   - ID is the check's stable id ("vm.swappiness", "gpu.persistence",
//     "irq.off-node"): lower case, dot separated, the same for every subject.
//   - Subject names the thing checked when the check runs once per device
//     ("gpu7", a PCI bdf "0000:1b:00.0", a process "pid/4242"); empty for a
//     node-wide check. [Check.Key] is "ID/Subject" (or ID), the name audit
//     prints and profiles select.
//   - Layer groups checks for display ("cpu", "memory", "gpu", "irq", ...).
//   - Status is one of [OK], [Drift], [PendingReboot], [Absent], [Error],
//     [Info] (see below).
//   - Current and Expected are the values compared, in the setting's own
//     syntax ("20%", "unlimited", "madvise") or a short description. A
//     check that compares sizes also sets CurrentBytes and ExpectedBytes,
//     the same values in bytes: JSON carries every size in bytes, and
//     only tables print binary units ([Check.CurrentText],
//     [Check.ExpectedText]). Bound is [Minimum] when Expected is a lower
//     bound (shm.size: at least 50% of memory); tables print it as ">= ".
//   - Fix lists complete commands that fix a non-ok status, in order.
//   - Reason says why the check matters; Section points into the seed
//     chapter ("1.4.3"); Detail explains this verdict (the error, which
//     file wins, which devices fail).
//   - NeedsReboot says the fix takes effect at the next boot.
//
// # Statuses
//
//	ok              the host is as expected
//	drift           the host differs from what is expected (alert)
//	pending-reboot  configured for the next boot, not live yet
//	absent          the thing checked does not exist here (no such knob,
//	                no such hardware): not a failure
//	error           the check could not decide, or the thing checked is
//	                broken (a GPU whose driver does not answer) (alert)
//	info            a fact worth showing, never a verdict
//
// [Status.Failing] reports the statuses an alert fires on (drift, error);
// audit exits 1 when any check is failing.
//
// # Sources
//
// A [Source] produces checks: `Checks(ctx) ([]Check, error)`. A source is
// constructed with what it reads (a hostfs.FS, a topology, a GPU backend)
// and never changes the host. A source that can say in advance which ids
// it produces implements [Describer]; 'gpunode audit --list-checks' prints
// the union of every source's descriptions, and profiles validate ids
// against it.
//
// # Selectors
//
// Profiles refer to checks by [Selector]: an id ("gpu.persistence"), an id
// and a subject ("gpu.persistence/gpu7"), or shell-style patterns in either
// part ("gpu.*", "gpu.persistence/*", "irq.off-node/0000:1b:*"). A selector
// without a subject matches every subject. [Policy] applies a profile's
// selectors to a list of checks: disabled checks are dropped, report-only
// checks never drift.
package check
