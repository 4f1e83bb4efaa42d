package podresources

import (
	"context"

	"github.com/gpunode/gpunode/internal/check"
)

// Source is the k8s.pod.numa checks as an audit source (the agent adds it
// to its audit): Checks runs Run once and keeps its report for the pod
// labels of the agent's per-GPU series.
type Source struct {
	Run    func(ctx context.Context) *Report
	report *Report
}

// Checks implements check.Source.
func (s *Source) Checks(ctx context.Context) ([]check.Check, error) {
	s.report = s.Run(ctx)
	if s.report == nil {
		return nil, nil
	}
	return s.report.Checks, nil
}

// Report is the last report Checks produced (nil before).
func (s *Source) Report() *Report { return s.report }

// Describe implements check.Describer.
func (*Source) Describe() []check.Description { return Describe() }

// Describe lists the check ids of the package.
func Describe() []check.Description {
	return []check.Description{{ID: CheckNUMA, Layer: Layer, Subject: "container", Section: section,
		Title: "a running container's GPUs, CPUs and memory share NUMA nodes (kubelet pod-resources API)"}}
}
