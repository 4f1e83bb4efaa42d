package reserved

import (
	_ "unsafe" // for go:linkname

	v1 "k8s.io/api/core/v1"

	// The package that holds kubelet's reservation parser; linking it in is
	// what makes the symbol below resolvable.
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)

// kubeletParseReserved is kubelet's own parser for --kube-reserved and
// --system-reserved, called in place (upstream.s, empty, lets this
// declaration go without a body).
//
//go:linkname kubeletParseReserved k8s.io/kubernetes/cmd/kubelet/app.parseResourceList
func kubeletParseReserved(m map[string]string) (v1.ResourceList, error)
