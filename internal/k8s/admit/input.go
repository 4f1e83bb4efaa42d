package admit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/admit/podres"
	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// ParsePods reads one or more v1.Pod documents (multi-document YAML or JSON,
// or a v1 List of pods) from r; name labels errors. Pods are validated and
// defaulted (requests from limits); every error names the document, field
// and reason, and the file's line (an *objects.Error), and no pod is
// returned when any document is bad.
func ParsePods(r io.Reader, name string) ([]*v1.Pod, error) {
	data, err := objects.ReadAll(r, name)
	if err != nil {
		return nil, err
	}
	pods, err := parsePods(data, name)
	return pods, objects.Locate(err, data)
}

// docError locates err, a document's decode or validation error, as an
// *objects.Error: Pod "x": FIELD: REASON (validatePod's errors start with
// the field path).
func docError(name string, doc, item int, err error) error {
	var pe *podError
	if !errors.As(err, &pe) {
		return &objects.Error{File: name, Doc: doc, Item: item, Reason: err.Error()}
	}
	return &objects.Error{File: name, Doc: doc, Item: item, Object: pe.object, Field: pe.field, Reason: pe.reason}
}

// podError is a bad pod: its label, the field (may be empty) and why.
type podError struct{ object, field, reason string }

func (e *podError) Error() string {
	parts := []string{e.object}
	if e.field != "" {
		parts = append(parts, e.field)
	}
	return strings.Join(append(parts, e.reason), ": ")
}

func parsePods(data []byte, name string) ([]*v1.Pod, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var pods []*v1.Pod
	for doc := 1; ; doc++ {
		b, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &objects.Error{File: name, Doc: doc, Item: -1, Reason: err.Error()}
		}
		if len(bytes.TrimSpace(stripComments(b))) == 0 {
			doc--
			continue
		}
		var meta struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(b, &meta); err != nil {
			return nil, &objects.Error{File: name, Doc: doc, Item: -1, Reason: err.Error()}
		}
		switch {
		case meta.Kind == "List" || strings.HasSuffix(meta.Kind, "List"):
			if meta.APIVersion != "v1" {
				return nil, &objects.Error{File: name, Doc: doc, Item: -1, Field: "apiVersion", Reason: fmt.Sprintf("Unsupported value: %q: supported values: \"v1\"", meta.APIVersion)}
			}
			for i, raw := range meta.Items {
				p, err := decodePod(raw)
				if err != nil {
					return nil, docError(name, doc, i, err)
				}
				pods = append(pods, p)
			}
		default:
			p, err := decodePod(b)
			if err != nil {
				return nil, docError(name, doc, -1, err)
			}
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: no Pod documents", name)
	}
	seen := map[string]int{}
	for i, p := range pods {
		key := p.Namespace + "/" + p.Name
		if j, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s: pod %d (%s): metadata.name: Duplicate value: %q (also pod %d)", name, i+1, p.Name, p.Name, j+1)
		}
		seen[key] = i
		if p.UID == "" {
			p.UID = types.UID(fmt.Sprintf("gpunode-sim-%d-%s", i, key))
		}
	}
	return pods, nil
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func decodePod(b []byte) (*v1.Pod, error) {
	var pod v1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		return nil, err
	}
	label := fmt.Sprintf("Pod %q", pod.Name)
	if pod.Kind != "Pod" {
		return nil, &podError{label, "kind", fmt.Sprintf("Unsupported value: %q: supported values: \"Pod\"", pod.Kind)}
	}
	if pod.APIVersion != "v1" {
		return nil, &podError{label, "apiVersion", fmt.Sprintf("Unsupported value: %q: supported values: \"v1\"", pod.APIVersion)}
	}
	if pod.Name == "" {
		return nil, &podError{label, "metadata.name", "Required value: name is required"}
	}
	if err := validatePod(&pod); err != nil {
		// validatePod's errors are "FIELD: REASON".
		field, reason, _ := strings.Cut(err.Error(), ": ")
		return nil, &podError{label, field, reason}
	}
	podres.Default(&pod)
	return &pod, nil
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
