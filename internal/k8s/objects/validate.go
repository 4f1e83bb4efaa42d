package objects

// Validation of the fields gpunode reads, as the API server judges them
// (k8s.io/kubernetes/pkg/apis/core/validation: ValidateObjectMeta,
// ValidateLabels, ValidateAnnotations, ValidateNodeName, ValidatePodSpec's
// nodeName/nodeSelector/container names, validateResourceRequirements,
// ValidateNodeResources; batch validation's non-negative parallelism and
// completions). An object the API server would refuse is a bad input (exit
// 2) naming the field, not something to reason about: a request of
// nvidia.com/gpu "-1" does not "fit".
//
// The syntax checks are byte loops (a 10,240-node export has ~200,000
// labels); a value they refuse is checked again with apimachinery's own
// validator, whose message is the one reported, and which has the last
// word. conformance/dra's TestValidationMatchesAPIServer feeds these loaders
// and the API server's validation the same 1,000 mutated objects.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The API server's limits and messages (apimachinery and core validation).
const (
	maxAnnotationsBytes = 256 * 1024 // TotalAnnotationSizeLimitB
	msgNegative         = "must be greater than or equal to 0"
	msgNotInteger       = "must be an integer"

	qualifiedNameMaxLength = 63 // apimachinery's qualifiedNameMaxLength
)

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func alnumMixed(c byte) bool { return alnum(c) || c >= 'A' && c <= 'Z' }

// dns1123Label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes.
func dns1123Label(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123LabelMaxLength || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !alnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// dns1123Subdomain: dot-separated DNS-1123 labels' syntax (each label is
// not bounded to 63 bytes here, as upstream), at most 253 bytes.
func dns1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if len(part) == 0 || !alnum(part[0]) || !alnum(part[len(part)-1]) {
			return false
		}
		for i := 1; i < len(part)-1; i++ {
			if !alnum(part[i]) && part[i] != '-' {
				return false
			}
		}
	}
	return true
}

// qualifiedPart: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 bytes.
func qualifiedPart(s string) bool {
	if len(s) == 0 || len(s) > qualifiedNameMaxLength || !alnumMixed(s[0]) || !alnumMixed(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnumMixed(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// qualifiedName: [prefix/]name, the prefix a DNS-1123 subdomain.
func qualifiedName(s string) bool {
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		return qualifiedPart(s)
	}
	return prefix != "" && !strings.Contains(name, "/") && dns1123Subdomain(prefix) && qualifiedPart(name)
}

// labelValue: empty, or a qualified name's name part.
func labelValue(s string) bool { return s == "" || qualifiedPart(s) }

// fieldErrors is a small collector of "field: reason" errors; the first
// one is reported.
type fieldErrors struct {
	field, reason string
}

func (e *fieldErrors) add(field, reason string) {
	if e.field == "" && e.reason == "" {
		e.field, e.reason = field, reason
	}
}

func (e *fieldErrors) failed() bool { return e.field != "" || e.reason != "" }

// invalid records apimachinery's messages for value (when it agrees the
// value is bad).
func (e *fieldErrors) invalid(field string, value any, msgs []string) {
	if len(msgs) > 0 {
		e.add(field, fmt.Sprintf("Invalid value: %s: %s", quoteValue(value), strings.Join(msgs, "; ")))
	}
}

func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", short(s))
	}
	return fmt.Sprint(v)
}

// short cuts a value quoted in a message to 80 bytes (a 4 MB name is
// refused by its length, not printed).
func short(s string) string {
	if len(s) <= 80 {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:64], len(s))
}

func checkDNSSubdomain(e *fieldErrors, field, s string) {
	if !dns1123Subdomain(s) {
		e.invalid(field, s, validation.IsDNS1123Subdomain(s))
	}
}

func checkDNSLabel(e *fieldErrors, field, s string) {
	if !dns1123Label(s) {
		e.invalid(field, s, validation.IsDNS1123Label(s))
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	return keys
}

// checkLabels is ValidateLabels: keys are qualified names, values label
// values.
func checkLabels(e *fieldErrors, field string, labels map[string]string) {
	bad := false
	for k, v := range labels {
		if !qualifiedName(k) || !labelValue(v) {
			bad = true
			break
		}
	}
	if !bad {
		return
	}
	for _, k := range sortedKeys(labels) {
		if !qualifiedName(k) {
			e.invalid(field, k, validation.IsQualifiedName(k))
		}
		if v := labels[k]; !labelValue(v) {
			e.invalid(field, v, validation.IsValidLabelValue(v))
		}
	}
}

// checkAnnotations is ValidateAnnotations: keys are qualified names
// (compared lower-cased), the total at most 256 KiB.
func checkAnnotations(e *fieldErrors, field string, ann map[string]string) {
	total := 0
	for k, v := range ann {
		total += len(k) + len(v)
		if lk := strings.ToLower(k); !qualifiedName(lk) {
			if msgs := validation.IsQualifiedName(lk); len(msgs) > 0 {
				e.invalid(field, k, msgs)
			}
		}
	}
	if total > maxAnnotationsBytes {
		e.add(field, fmt.Sprintf("Too long: may not be more than %d bytes", maxAnnotationsBytes))
	}
}

// checkMeta is ValidateObjectMeta for the name, namespace, labels and
// annotations (the name a DNS-1123 subdomain for Nodes, Pods and Jobs).
func checkMeta(e *fieldErrors, name, namespace string, labels, annotations map[string]string) {
	if name != "" {
		checkDNSSubdomain(e, "metadata.name", name)
	}
	if namespace != "" {
		checkDNSLabel(e, "metadata.namespace", namespace)
	}
	checkLabels(e, "metadata.labels", labels)
	checkAnnotations(e, "metadata.annotations", annotations)
}

// Resource name classes (core/helper).
func nativeResource(n string) bool {
	return !strings.Contains(n, "/") || strings.Contains(n, "kubernetes.io/")
}

func hugePages(n string) bool { return strings.HasPrefix(n, v1.ResourceHugePagesPrefix) }

// extendedResource: not native, and "requests." + n is a qualified name
// (judged without building that string: n's prefix must leave room for
// "requests." in a DNS-1123 subdomain).
func extendedResource(n string) bool {
	if nativeResource(n) || strings.HasPrefix(n, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	prefix, name, found := strings.Cut(n, "/")
	if !found {
		return qualifiedName(v1.DefaultResourceRequestsPrefix + n)
	}
	return prefix != "" && len(prefix)+len(v1.DefaultResourceRequestsPrefix) <= validation.DNS1123SubdomainMaxLength &&
		dns1123Subdomain(prefix) && !strings.Contains(name, "/") && qualifiedPart(name)
}

func integerResource(n string) bool {
	switch v1.ResourceName(n) {
	case v1.ResourcePods, v1.ResourceQuotas, v1.ResourceServices, v1.ResourceReplicationControllers, v1.ResourceSecrets,
		v1.ResourceConfigMaps, v1.ResourcePersistentVolumeClaims, v1.ResourceServicesNodePorts, v1.ResourceServicesLoadBalancers:
		return true
	}
	return extendedResource(n)
}

func overcommitAllowed(n string) bool { return nativeResource(n) && !hugePages(n) }

func standardContainerResource(n string) bool {
	switch v1.ResourceName(n) {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return true
	}
	return hugePages(n)
}

// quantityOK is checkQuantity's verdict without the message.
func quantityOK(name string, q *resource.Quantity) bool {
	return q.Sign() >= 0 && (!integerResource(name) || q.MilliValue()%1000 == 0)
}

// checkQuantity is ValidateResourceQuantityValue.
func checkQuantity(e *fieldErrors, field, name string, q resource.Quantity) {
	if q.Sign() < 0 {
		e.add(field, fmt.Sprintf("Invalid value: %q: %s", q.String(), msgNegative))
	}
	if integerResource(name) && q.MilliValue()%1000 != 0 {
		e.add(field, fmt.Sprintf("Invalid value: %q: %s", q.String(), msgNotInteger))
	}
}

// containerResourceNameOK is checkContainerResourceName's verdict without
// the message.
func containerResourceNameOK(n string) bool {
	if !qualifiedName(n) {
		return false
	}
	if !strings.Contains(n, "/") {
		return standardContainerResource(n)
	}
	return nativeResource(n) || extendedResource(n)
}

// checkContainerResourceName is ValidateContainerResourceName.
func checkContainerResourceName(e *fieldErrors, field, n string) {
	if !qualifiedName(n) {
		e.invalid(field, n, validation.IsQualifiedName(n))
		return
	}
	switch {
	case !strings.Contains(n, "/"):
		if !standardContainerResource(n) {
			e.add(field, fmt.Sprintf("Invalid value: %q: must be a standard resource for containers", n))
		}
	case !nativeResource(n) && !extendedResource(n):
		e.add(field, fmt.Sprintf("Invalid value: %q: doesn't follow extended resource name standard", n))
	}
}

// ordered returns l sorted by name: l itself when it is (as kubectl and
// json.Marshal write maps), else a sorted copy.
func (l ResourceList) ordered() ResourceList {
	for i := 1; i < len(l); i++ {
		if l[i].Name < l[i-1].Name {
			out := append(ResourceList(nil), l...)
			sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
			return out
		}
	}
	return l
}

// checkResources is validateResourceRequirements for names and
// quantities (claims are not read by gpunode's loaders' users).
func checkResources(e *fieldErrors, field string, limits, requests ResourceList) {
	for _, r := range limits.ordered() {
		n := string(r.Name)
		if !containerResourceNameOK(n) || !quantityOK(n, &r.Quantity) {
			f := field + ".limits[" + n + "]"
			checkContainerResourceName(e, f, n)
			checkQuantity(e, f, n, r.Quantity)
		}
	}
	for _, r := range requests.ordered() {
		n, q := string(r.Name), r.Quantity
		if !containerResourceNameOK(n) || !quantityOK(n, &q) {
			f := field + ".requests[" + n + "]"
			checkContainerResourceName(e, f, n)
			checkQuantity(e, f, n, q)
		}
		lim, ok := limits.Get(r.Name)
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommitAllowed(n):
			e.add(field+".requests", fmt.Sprintf("Invalid value: %q: must be equal to %s limit of %s", q.String(), n, lim.String()))
		case ok && q.Cmp(lim) > 0:
			e.add(field+".requests", fmt.Sprintf("Invalid value: %q: must be less than or equal to %s limit of %s", q.String(), n, lim.String()))
		case !ok && !overcommitAllowed(n):
			e.add(field+".limits", "Required value: Limit must be set for non overcommitable resources")
		}
	}
}

// checkPodSpec checks the parts of a pod spec gpunode reads: nodeName,
// nodeSelector, container names (DNS-1123 labels, unique across
// containers and init containers) and resources.
func checkPodSpec(e *fieldErrors, field, nodeName string, nodeSelector map[string]string, containers, initContainers []Container) {
	if nodeName != "" {
		checkDNSSubdomain(e, field+".nodeName", nodeName)
	}
	checkLabels(e, field+".nodeSelector", nodeSelector)
	var seenSmall [4]string
	seen := seenSmall[:0]
	check := func(kind string, cs []Container) {
		for i := range cs {
			c := &cs[i]
			f := ""
			at := func() string {
				if f == "" {
					f = field + "." + kind + "[" + strconv.Itoa(i) + "]"
				}
				return f
			}
			if c.Name == "" {
				e.add(at()+".name", "Required value")
			} else {
				if !dns1123Label(c.Name) {
					checkDNSLabel(e, at()+".name", c.Name)
				}
				if slices.Contains(seen, c.Name) {
					e.add(at()+".name", fmt.Sprintf("Duplicate value: %q", c.Name))
				}
				seen = append(seen, c.Name)
			}
			if len(c.Limits) > 0 || len(c.Requests) > 0 {
				checkResources(e, at()+".resources", c.Limits, c.Requests)
			}
		}
	}
	check("containers", containers)
	check("initContainers", initContainers)
}

func nodeFieldError(n *Node) (field, reason string) {
	var e fieldErrors
	checkMeta(&e, n.Name, n.Namespace, n.Labels, n.Annotations)
	for _, part := range []struct {
		field string
		list  ResourceList
	}{{"status.capacity", n.Capacity}, {"status.allocatable", n.Allocatable}} {
		for _, r := range part.list.ordered() {
			if !quantityOK(string(r.Name), &r.Quantity) {
				checkQuantity(&e, part.field+"["+string(r.Name)+"]", string(r.Name), r.Quantity)
			}
		}
	}
	return e.field, e.reason
}

func podFieldError(p *Pod) (field, reason string) {
	var e fieldErrors
	var ann, sel map[string]string
	if p.More != nil {
		ann, sel = p.More.Annotations, p.More.NodeSelector
	}
	checkMeta(&e, p.Name, p.Namespace, p.Labels, ann)
	checkPodSpec(&e, "spec", p.NodeName, sel, p.Containers, p.Inits())
	return e.field, e.reason
}

// NodeFieldError is the first field of n the API server would refuse
// (ValidateNode's metadata and ValidateNodeResources), "" when none.
func NodeFieldError(n *v1.Node) (field, reason string) { return nodeFieldError(NodeFromV1(n)) }

// PodFieldError is the first field of p the API server would refuse (of
// those gpunode reads), "" when none.
func PodFieldError(p *v1.Pod) (field, reason string) { return podFieldError(PodFromV1(p)) }

// podTemplateFieldError checks a workload's pod template (labels and
// spec) under field.
func podTemplateFieldError(field string, t *v1.PodTemplateSpec) (string, string) {
	var e fieldErrors
	checkLabels(&e, field+".metadata.labels", t.Labels)
	checkAnnotations(&e, field+".metadata.annotations", t.Annotations)
	checkPodSpec(&e, field+".spec", t.Spec.NodeName, t.Spec.NodeSelector, containersFromV1(t.Spec.Containers), containersFromV1(t.Spec.InitContainers))
	return e.field, e.reason
}

// validNode and validPod turn a refused field into the loaders' *Error.
func validNode(d Document, item int, n *Node) error {
	if f, r := nodeFieldError(n); f != "" || r != "" {
		return d.errorf(item, fmt.Sprintf("Node %q", short(n.Name)), f, "%s", r)
	}
	return nil
}

func validPod(d Document, item int, p *Pod) error {
	if f, r := podFieldError(p); f != "" || r != "" {
		return d.errorf(item, fmt.Sprintf("Pod %q", short(p.Name)), f, "%s", r)
	}
	return nil
}

// validJob checks a batch/v1 Job's name, labels, counts and pod template.
func validJob(o Object, j *batchv1.Job) error {
	var e fieldErrors
	checkMeta(&e, j.Name, j.Namespace, j.Labels, j.Annotations)
	if p := j.Spec.Parallelism; p != nil && *p < 0 {
		e.add("spec.parallelism", fmt.Sprintf("Invalid value: %d: %s", *p, msgNegative))
	}
	if c := j.Spec.Completions; c != nil && *c < 0 {
		e.add("spec.completions", fmt.Sprintf("Invalid value: %d: %s", *c, msgNegative))
	}
	if !e.failed() {
		e.field, e.reason = podTemplateFieldError("spec.template", &j.Spec.Template)
	}
	if e.failed() {
		return o.Errorf(o.Label(), e.field, "%s", e.reason)
	}
	return nil
}

// validVolcanoJob checks a Volcano Job's name, task counts and templates.
func validVolcanoJob(o Object, j *VolcanoJob) error {
	var e fieldErrors
	checkMeta(&e, j.Name, j.Namespace, j.Labels, j.Annotations)
	for i := range j.Spec.Tasks {
		t := &j.Spec.Tasks[i]
		f := fmt.Sprintf("spec.tasks[%d]", i)
		if t.Replicas < 0 {
			e.add(f+".replicas", fmt.Sprintf("Invalid value: %d: %s", t.Replicas, msgNegative))
		}
		if !e.failed() {
			e.field, e.reason = podTemplateFieldError(f+".template", &t.Template)
		}
	}
	if e.failed() {
		return o.Errorf(o.Label(), e.field, "%s", e.reason)
	}
	return nil
}

// WrongKind is the message for a document of a kind the flag does not
// take: which kinds were wanted, which was found, by name.
func WrongKind(found TypeMeta, want string) string {
	what := found.Kind
	if found.APIVersion != "" {
		what = found.APIVersion + " " + found.Kind
	}
	if found.Metadata.Name != "" {
		what += fmt.Sprintf(" %q", found.Metadata.Name)
	}
	return fmt.Sprintf("this is a %s, not a %s", what, want)
}

// wrongKind explains a document that failed to decode as want: when it (or
// an item of its List) is of another kind, the error says so, by name,
// instead of the first field want does not have. Runs on the error path
// only; nil when the kinds are right (the decode error stands).
func wrongKind(d Document, want, wantDesc string) *Error {
	m, err := Peek(d)
	if err != nil {
		return nil
	}
	if m.Kind != "" && m.Kind != want && m.Kind != "List" && m.Kind != want+"List" {
		return d.errorf(-1, "", "kind", "%s", WrongKind(m, wantDesc))
	}
	if m.Kind != "List" && m.Kind != want+"List" {
		return nil
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(d.JSON, &l) != nil {
		return nil
	}
	for i, raw := range l.Items {
		im, err := Peek(Document{File: d.File, Index: d.Index, JSON: raw})
		if err == nil && im.Kind != "" && im.Kind != want {
			return d.errorf(i, "", "kind", "%s", WrongKind(im, wantDesc))
		}
	}
	return nil
}

// NodeNameError is why name cannot name a Node (ValidateNodeName: a
// DNS-1123 subdomain), "" when it can.
func NodeNameError(name string) string {
	if dns1123Subdomain(name) {
		return ""
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Sprintf("Invalid value: %q: %s", short(name), strings.Join(msgs, "; "))
	}
	return ""
}
