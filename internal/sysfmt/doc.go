// Package sysfmt holds the pure parsers of the kernel's text formats: CPU
// lists and hex CPU masks, /proc/meminfo and per-node meminfo, NUMA distance
// rows and PCI addresses. It imports nothing of the host: callers read the
// bytes (through hostfs for a host file, or from a flag or a node file) and
// hand them here, so the Kubernetes simulators can parse without importing
// the door to the host.
package sysfmt
