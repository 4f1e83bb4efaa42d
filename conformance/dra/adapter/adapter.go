// Package adapter lets the upstream allocator's own test table
// (k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting,
// an internal package) drive gpunode's exact search: a test file added to
// a temporary copy of the upstream module calls Compare on every Allocate
// and keeps the upstream answer for the table's own checks.
package adapter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/gpunode/gpunode/internal/k8s/dra"
)

// Verdicts of Compare.
const (
	Agree        = "agree"
	Disagree     = "disagree"
	GpunodeError = "gpunode-error"
)

// Compare decides the same Allocate with gpunode's exact search and says
// whether its fits equals upstream's (fits: no error and results).
func Compare(ctx context.Context, features structured.Features, state structured.AllocatedState, classes []*resourceapi.DeviceClass,
	slices []*resourceapi.ResourceSlice, node *corev1.Node, claims []*resourceapi.ResourceClaim,
	upResults []resourceapi.AllocationResult, upErr error) (verdict, detail string) {
	in := &dra.Input{Slices: slices, Classes: classes, State: &state, FeatureSet: &features}
	if node != nil {
		in.NodeObjects = []*corev1.Node{node}
	} else {
		in.NodeObjects = []*corev1.Node{{}}
	}
	for _, c := range claims {
		in.Claims = append(in.Claims, c.DeepCopy())
	}
	upFits := upErr == nil && upResults != nil
	probe := &dra.Input{Slices: in.Slices, Classes: in.Classes, State: in.State, FeatureSet: in.FeatureSet}
	for _, c := range claims {
		probe.Claims = append(probe.Claims, c.DeepCopy())
	}
	un := probe.Unmodelled(ctx, in.NodeObjects[0])
	verdict, detail = compare(ctx, in, upFits, upErr)
	if un != "" {
		// Left to the upstream allocator by gpunode (consumable capacity,
		// alpha features): counted apart.
		verdict = "unmodelled-" + verdict
		detail += " [" + un + "]"
	}
	return verdict, detail
}

func compare(ctx context.Context, in *dra.Input, upFits bool, upErr error) (verdict, detail string) {
	rep, err := dra.Run(ctx, in, dra.Options{Solver: dra.SolverGpunode})
	if err != nil {
		if !upFits {
			return Agree, fmt.Sprintf("both refuse (gpunode: %v; upstream: %v)", err, upErr)
		}
		return GpunodeError, err.Error()
	}
	own := rep.Nodes[0].Fits
	if own == upFits {
		return Agree, fmt.Sprintf("fits=%v", own)
	}
	return Disagree, fmt.Sprintf("gpunode fits=%v, upstream fits=%v (err %v)", own, upFits, upErr)
}
