package companion

import (
	"slices"
	"strings"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// checkNodeNameFlag refuses a node name the API server would refuse
// (exit 2, the flag named).
func checkNodeNameFlag(flag, name string) error {
	if why := objects.NodeNameError(name); why != "" {
		return cli.Usagef("%s: %s", flag, why)
	}
	return nil
}

// checkDRANodes refuses --node names that are not node names, and, when
// every slice names its node (spec.nodeName or each device's nodeName, no
// selector, allNodes or per-device selection), names that no slice names:
// an unknown node is an input error, not "does not fit".
func checkDRANodes(in *dra.Input, nodes []string) error {
	for _, n := range nodes {
		if err := checkNodeNameFlag("--node", n); err != nil {
			return err
		}
	}
	if len(nodes) == 0 || len(in.Slices) == 0 {
		return nil
	}
	named := map[string]bool{}
	for _, s := range in.Slices {
		switch {
		case s.Spec.NodeName != nil && *s.Spec.NodeName != "":
			named[*s.Spec.NodeName] = true
		case s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection:
			for _, d := range s.Spec.Devices {
				if d.NodeName == nil || *d.NodeName == "" {
					return nil // a device selects its nodes: any name may match
				}
				named[*d.NodeName] = true
			}
		default:
			return nil // nodeSelector or allNodes: any name may match
		}
	}
	var known []string
	for n := range named {
		known = append(known, n)
	}
	slices.Sort(known)
	for _, n := range nodes {
		if !named[n] {
			return cli.Usagef("--node %q: Not found: no ResourceSlice is on this node (the slices name %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}
