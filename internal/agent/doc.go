// Package agent is 'gpunode agent': a long-running process that audits the
// node every interval (jittered) into an immutable Snapshot and serves the
// last snapshot read-only over HTTP:
//
//	/metrics      Prometheus exposition (prometheus/client_golang, own registry)
//	/healthz      200 while the process runs
//	/readyz       200 once the first audit has succeeded, 503 before
//	/report       the audit JSON (schema gpunode.audit/v1, as 'gpunode audit -o json')
//	/report.html  the one-page HTML report (internal/report), when a renderer is set
//	/topo         the topology JSON (schema gpunode.topo/v1)
//
// Scrapes never run an audit: every handler reads the current snapshot,
// which the audit loop replaces atomically. The loop survives a failing or
// panicking audit (recorded as an error, counted in
// gpunode_audit_errors_total, the previous good snapshot kept).
//
// After each audit the agent writes a Node Feature Discovery feature file
// (NFDFeatures) atomically (a dot-file renamed into place), when a
// features directory is configured.
//
// The agent has no package-level state: its Prometheus registry and
// collectors are built by New, so commands that do not run the agent pay
// nothing for them.
package agent
