package companion

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/k8s/dra"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// draFiles are the files of 'k8s dra allocate' besides --slices; a file
// given replaces what the cluster holds.
type draFiles struct{ classes, claims, allocated, pod, templates string }

// liveDRAInput reads the allocate inputs from the cluster where no file is
// given.
func (a *app) liveDRAInput(cmd *cobra.Command, files draFiles, fromCluster string) (*dra.Input, error) {
	ctx := cmd.Context()
	c, err := a.k8sCluster(cmd)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	podSrc := files.pod
	switch {
	case fromCluster != "":
		kind, name, ok := strings.Cut(fromCluster, "/")
		if !ok || name == "" || (kind != "pod" && kind != "pods" && kind != "po") {
			return nil, cli.Usagef("--from-cluster %q: want pod/NAME", fromCluster)
		}
		if pod, err = c.Pod(ctx, name); err != nil {
			return nil, err
		}
		podSrc = c.Source("pod " + c.Namespace() + "/" + name)
	case files.pod != "":
		b, err := objects.ReadFile(files.pod, a.MaxInputBytes)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		if pod, err = dra.LoadPod(files.pod, b); err != nil {
			return nil, cli.WrapUsage(err)
		}
	}
	d, err := c.DRAObjects(ctx, pod != nil && files.templates == "", podNamespace(pod, c.Namespace()))
	if err != nil {
		return nil, err
	}
	in := &dra.Input{Slices: d.Slices, Classes: d.Classes, Allocated: d.Allocated}
	read := func(p string) ([]byte, error) {
		if p == "-" {
			return nil, errors.New("- (stdin) is not supported here: give a file")
		}
		return objects.ReadFile(p, a.MaxInputBytes)
	}
	if files.classes != "" {
		b, err := read(files.classes)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		cs, err := dra.LoadClasses(files.classes, b)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		in.Classes = nil
		for _, x := range cs {
			in.Classes = append(in.Classes, x.Obj)
		}
	}
	if files.allocated != "" {
		b, err := read(files.allocated)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		al, err := dra.LoadClaims(files.allocated, b)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		in.Allocated = nil
		for _, x := range al {
			in.Allocated = append(in.Allocated, x.Obj)
		}
	}
	var claims []dra.Loaded[*resourceapi.ResourceClaim]
	if files.claims != "" {
		b, err := read(files.claims)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		if claims, err = dra.LoadClaims(files.claims, b); err != nil {
			return nil, cli.WrapUsage(err)
		}
	} else {
		for i, x := range d.Claims {
			claims = append(claims, dra.Loaded[*resourceapi.ResourceClaim]{Source: objects.Source{File: c.Source("resourceclaims"), Item: i}, Obj: x})
		}
	}
	a.notef("%d ResourceSlices, %d DeviceClasses and %d allocated claims from %s", len(d.Slices), len(in.Classes), len(in.Allocated), c.Server())
	if pod == nil {
		for _, x := range claims {
			in.Claims = append(in.Claims, x.Obj)
		}
		return in, nil
	}
	var tmpls []dra.Loaded[*resourceapi.ResourceClaimTemplate]
	if files.templates != "" {
		b, err := read(files.templates)
		if err != nil {
			return nil, cli.WrapUsage(err)
		}
		if tmpls, err = dra.LoadTemplates(files.templates, b); err != nil {
			return nil, cli.WrapUsage(err)
		}
	} else {
		for i, x := range d.Templates {
			tmpls = append(tmpls, dra.Loaded[*resourceapi.ResourceClaimTemplate]{Source: objects.Source{File: c.Source("resourceclaimtemplates"), Item: i}, Obj: x})
		}
	}
	pc, err := dra.PodClaims(pod, podSrc, tmpls, claims)
	if err != nil {
		return nil, cli.WrapUsage(err)
	}
	for _, x := range pc {
		if x.Status.Allocation == nil {
			in.Claims = append(in.Claims, x)
		}
	}
	return in, nil
}

func podNamespace(p *corev1.Pod, def string) string {
	if p != nil && p.Namespace != "" {
		return p.Namespace
	}
	return def
}
