package admit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// ParsePods reads one or more v1.Pod documents (multi-document YAML or JSON,
// or a v1 List of pods) from r, at most userfile.DefaultMaxBytes; name
// labels errors. See LoadPods.
func ParsePods(r io.Reader, name string) ([]*v1.Pod, error) {
	data, err := objects.ReadAll(r, name, 0)
	if err != nil {
		return nil, err
	}
	return LoadPods(name, data)
}

// LoadPods decodes the pods of data (objects.LoadPods: one strict pass that
// keeps the fields the planners read), validates and defaults them
// (requests from limits); every error names the document, field and
// reason, and the file's line (an *objects.Error), and no pod is returned
// when any document is bad.
func LoadPods(name string, data []byte) (_ []*v1.Pod, retErr error) {
	defer func() { retErr = objects.Locate(retErr, data) }()
	pods, err := objects.LoadPods(name, data)
	if err != nil {
		return nil, err
	}
	for i, pod := range pods {
		if err := validatePod(pod); err != nil {
			// validatePod's errors are "FIELD: REASON".
			field, reason, _ := strings.Cut(err.Error(), ": ")
			e := &objects.Error{File: name, Item: -1, Object: fmt.Sprintf("Pod %q", pod.Name), Field: field, Reason: reason}
			e.Doc, e.Item = podDocument(data, name, i)
			return nil, e
		}
		podres.Default(pod)
		if pod.UID == "" {
			pod.UID = types.UID(fmt.Sprintf("gpunode-sim-%d-%s", i, pod.Namespace+"/"+pod.Name))
		}
	}
	return pods, nil
}

// podDocument finds the document (and List item, -1 when none) of the
// i-th pod of data; used on the error path only.
func podDocument(data []byte, name string, i int) (doc, item int) {
	docs, err := objects.Documents(name, data)
	if err != nil {
		return 0, -1
	}
	n := 0
	for _, d := range docs {
		var l struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal(d.JSON, &l)
		if strings.HasSuffix(l.Kind, "List") {
			if i < n+len(l.Items) {
				return d.Index, i - n
			}
			n += len(l.Items)
			continue
		}
		if n == i {
			return d.Index, -1
		}
		n++
	}
	return 0, -1
}

func validatePod(pod *v1.Pod) error {
	if len(pod.Spec.Containers) == 0 {
		return fmt.Errorf("spec.containers: Required value: must have at least one container")
	}
	names := map[string]string{}
	check := func(field string, cs []v1.Container) error {
		for i := range cs {
			c := &cs[i]
			path := fmt.Sprintf("%s[%d]", field, i)
			if c.Name == "" {
				return fmt.Errorf("%s.name: Required value", path)
			}
			if prev, ok := names[c.Name]; ok {
				return fmt.Errorf("%s.name: Duplicate value: %q (also %s)", path, c.Name, prev)
			}
			names[c.Name] = path
			if c.RestartPolicy != nil && field == "spec.containers" {
				return fmt.Errorf("%s.restartPolicy: Forbidden: may not be set for non-init containers", path)
			}
			if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
				return fmt.Errorf("%s.restartPolicy: Unsupported value: %q: supported values: \"Always\"", path, *c.RestartPolicy)
			}
			for _, kind := range []struct {
				name string
				list v1.ResourceList
			}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
				for r, q := range kind.list {
					rp := fmt.Sprintf("%s.resources.%s[%s]", path, kind.name, r)
					if q.Sign() < 0 {
						return fmt.Errorf("%s: Invalid value: %q: must be greater than or equal to 0", rp, q.String())
					}
					if isExtended(r) && q.MilliValue()%1000 != 0 {
						return fmt.Errorf("%s: Invalid value: %q: must be an integer", rp, q.String())
					}
					if memorymanager.IsHugePageResourceName(r) {
						if _, err := resource.ParseQuantity(strings.TrimPrefix(string(r), v1.ResourceHugePagesPrefix)); err != nil {
							return fmt.Errorf("%s: Invalid value: %q: bad hugepages size", rp, r)
						}
					}
				}
			}
			for r, lim := range c.Resources.Limits {
				if req, ok := c.Resources.Requests[r]; ok && req.Cmp(lim) > 0 {
					return fmt.Errorf("%s.resources.requests[%s]: Invalid value: %q: must be less than or equal to %s limit of %s", path, r, req.String(), r, lim.String())
				}
			}
			for r, req := range c.Resources.Requests {
				if !isExtended(r) && !memorymanager.IsHugePageResourceName(r) {
					continue
				}
				lim, ok := c.Resources.Limits[r]
				if !ok || !lim.Equal(req) {
					return fmt.Errorf("%s.resources.requests[%s]: Invalid value: %q: must be equal to %s limit", path, r, req.String(), r)
				}
			}
		}
		return nil
	}
	if err := check("spec.initContainers", pod.Spec.InitContainers); err != nil {
		return err
	}
	return check("spec.containers", pod.Spec.Containers)
}

func isExtended(r v1.ResourceName) bool {
	s := string(r)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/") && !strings.HasPrefix(s, v1.ResourceHugePagesPrefix)
}
