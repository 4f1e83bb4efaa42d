package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// The resources gpunode reads (deploy/clusterrole.yaml grants get, list and
// watch on exactly these).
var (
	ResNodes          = Resource{Version: "v1", Name: "nodes"}
	ResPods           = Resource{Version: "v1", Name: "pods", Namespaced: true}
	ResResourceSlices = Resource{Group: "resource.k8s.io", Version: "v1", Name: "resourceslices"}
	ResDeviceClasses  = Resource{Group: "resource.k8s.io", Version: "v1", Name: "deviceclasses"}
	ResClaims         = Resource{Group: "resource.k8s.io", Version: "v1", Name: "resourceclaims", Namespaced: true}
	ResClaimTemplates = Resource{Group: "resource.k8s.io", Version: "v1", Name: "resourceclaimtemplates", Namespaced: true}
	ResJobs           = Resource{Group: "batch", Version: "v1", Name: "jobs", Namespaced: true}
	ResPodGroupsB1    = Resource{Group: "scheduling.k8s.io", Version: "v1beta1", Name: "podgroups", Namespaced: true}
	ResPodGroups      = Resource{Group: "scheduling.k8s.io", Version: "v1alpha3", Name: "podgroups", Namespaced: true}
	ResPodGroupsA2    = Resource{Group: "scheduling.k8s.io", Version: "v1alpha2", Name: "podgroups", Namespaced: true}
	ResVolcanoJobs    = Resource{Group: "batch.volcano.sh", Version: "v1alpha1", Name: "jobs", Namespaced: true}
	ResHyperNodes     = Resource{Group: "topology.volcano.sh", Version: "v1alpha1", Name: "hypernodes"}
	ResKAITopologies  = Resource{Group: "kai.scheduler", Version: "v1alpha1", Name: "topologies"}
	ResKueueTopo      = Resource{Group: "kueue.x-k8s.io", Version: "v1beta2", Name: "topologies"}
	ResKueueTopoB1    = Resource{Group: "kueue.x-k8s.io", Version: "v1beta1", Name: "topologies"}
	ResFlavors        = Resource{Group: "kueue.x-k8s.io", Version: "v1beta2", Name: "resourceflavors"}
	ResFlavorsB1      = Resource{Group: "kueue.x-k8s.io", Version: "v1beta1", Name: "resourceflavors"}
	ResLocalQueues    = Resource{Group: "kueue.x-k8s.io", Version: "v1beta2", Name: "localqueues", Namespaced: true}
	ResLocalQueuesB1  = Resource{Group: "kueue.x-k8s.io", Version: "v1beta1", Name: "localqueues", Namespaced: true}
	ResClusterQueues  = Resource{Group: "kueue.x-k8s.io", Version: "v1beta2", Name: "clusterqueues"}
	ResClusterQB1     = Resource{Group: "kueue.x-k8s.io", Version: "v1beta1", Name: "clusterqueues"}
)

// lintKinds are the kinds 'k8s lint --cluster' reads, in the versions
// gpunode decodes (the first the server serves is used).
var lintKinds = []struct {
	kind string
	res  Resource
}{
	{"Node", ResNodes},
	{"Pod", ResPods},
	{"Namespace", Resource{Version: "v1", Name: "namespaces"}},
	{"ConfigMap", Resource{Version: "v1", Name: "configmaps", Namespaced: true}},
	{"PodTemplate", Resource{Version: "v1", Name: "podtemplates", Namespaced: true}},
	{"RuntimeClass", Resource{Group: "node.k8s.io", Version: "v1", Name: "runtimeclasses"}},
	{"Deployment", Resource{Group: "apps", Version: "v1", Name: "deployments", Namespaced: true}},
	{"StatefulSet", Resource{Group: "apps", Version: "v1", Name: "statefulsets", Namespaced: true}},
	{"DaemonSet", Resource{Group: "apps", Version: "v1", Name: "daemonsets", Namespaced: true}},
	{"Job", ResJobs},
	{"CronJob", Resource{Group: "batch", Version: "v1", Name: "cronjobs", Namespaced: true}},
	{"Job", ResVolcanoJobs},
	{"PodGroup", ResPodGroups},
	{"HyperNode", ResHyperNodes},
	{"Topology", ResKAITopologies},
	{"Topology", ResKueueTopo},
	{"DeviceClass", ResDeviceClasses},
	{"ResourceClaim", ResClaims},
	{"ResourceClaimTemplate", ResClaimTemplates},
	{"ResourceSlice", ResResourceSlices},
	{"ComputeDomain", Resource{Group: "resource.nvidia.com", Version: "v1beta1", Name: "computedomains", Namespaced: true}},
	{"ClusterPolicy", Resource{Group: "nvidia.com", Version: "v1", Name: "clusterpolicies"}},
	{"MPIJob", Resource{Group: "kubeflow.org", Version: "v2beta1", Name: "mpijobs", Namespaced: true}},
	{"PyTorchJob", Resource{Group: "kubeflow.org", Version: "v1", Name: "pytorchjobs", Namespaced: true}},
	{"ResourceFlavor", ResFlavors},
	{"LocalQueue", ResLocalQueues},
	{"ClusterQueue", ResClusterQueues},
}

// Resources lists every resource gpunode may read (for the ClusterRole
// and its test), as group -> resource names.
func Resources() map[string][]string {
	m := map[string][]string{}
	seen := map[string]bool{}
	add := func(r Resource) {
		if !seen[r.Group+"/"+r.Name] {
			seen[r.Group+"/"+r.Name] = true
			m[r.Group] = append(m[r.Group], r.Name)
		}
	}
	for _, k := range lintKinds {
		add(k.res)
	}
	for _, r := range []Resource{ResPodGroupsA2, ResKueueTopoB1, ResFlavorsB1, ResLocalQueuesB1, ResClusterQB1, ResPodsProxy} {
		add(r)
	}
	for g := range m {
		sort.Strings(m[g])
	}
	return m
}

func (r Resource) in(ns string) Resource { r.Namespace = ns; return r }

// Nodes lists every Node.
func (c *Client) Nodes(ctx context.Context) ([]*v1.Node, error) {
	var out []*v1.Node
	err := listTyped[v1.NodeList](ctx, c, c.cs.CoreV1().RESTClient(), ResNodes, metav1.ListOptions{}, func(l *v1.NodeList) {
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	})
	return out, err
}

// BoundPods lists the pods bound to a node (nodeName "" any node) and not
// terminal (Succeeded, Failed), in every namespace. The field selector
// asks the server to filter; the same rule is applied here too.
func (c *Client) BoundPods(ctx context.Context, nodeName string) ([]*v1.Pod, error) {
	var out []*v1.Pod
	err := c.eachBoundPod(ctx, nodeName, func(p *v1.Pod) { out = append(out, p) })
	return out, err
}

func (c *Client) eachBoundPod(ctx context.Context, nodeName string, fn func(*v1.Pod)) error {
	sel := "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
	if nodeName != "" {
		sel = "spec.nodeName=" + nodeName + ",status.phase!=Succeeded,status.phase!=Failed"
	}
	return listTyped[v1.PodList](ctx, c, c.cs.CoreV1().RESTClient(), ResPods, metav1.ListOptions{FieldSelector: sel}, func(l *v1.PodList) {
		for i := range l.Items {
			p := &l.Items[i]
			if p.Spec.NodeName == "" || (nodeName != "" && p.Spec.NodeName != nodeName) || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue
			}
			fn(p)
		}
	})
}

// PlannerNodes lists every Node as the planners read it (objects.Node),
// each page converted as it arrives so that no whole v1 Node is kept.
func (c *Client) PlannerNodes(ctx context.Context) ([]*objects.Node, error) {
	var out []*objects.Node
	err := listTyped[v1.NodeList](ctx, c, c.cs.CoreV1().RESTClient(), ResNodes, metav1.ListOptions{}, func(l *v1.NodeList) {
		for i := range l.Items {
			out = append(out, objects.NodeFromV1(&l.Items[i]))
		}
	})
	return out, err
}

// PlannerPods is BoundPods as the planners read them (objects.Pod), each
// page converted as it arrives.
func (c *Client) PlannerPods(ctx context.Context, nodeName string) ([]*objects.Pod, error) {
	var out []*objects.Pod
	err := c.eachBoundPod(ctx, nodeName, func(p *v1.Pod) { out = append(out, objects.PodFromV1(p)) })
	return out, err
}

// Node reads one Node.
func (c *Client) Node(ctx context.Context, name string) (*v1.Node, error) {
	n := &v1.Node{}
	if err := c.cs.CoreV1().RESTClient().Get().Resource("nodes").Name(name).Do(ctx).Into(n); err != nil {
		return nil, c.explain(ctx, err, "get", ResNodes, name)
	}
	return n, nil
}

// Pod reads one Pod in the namespace in effect.
func (c *Client) Pod(ctx context.Context, name string) (*v1.Pod, error) {
	p := &v1.Pod{}
	if err := c.cs.CoreV1().RESTClient().Get().Namespace(c.namespace).Resource("pods").Name(name).Do(ctx).Into(p); err != nil {
		return nil, c.explain(ctx, err, "get", ResPods.in(c.namespace), name)
	}
	return p, nil
}

// DRA is what 'k8s dra allocate' reads from the cluster.
type DRA struct {
	Slices  []*resourceapi.ResourceSlice
	Classes []*resourceapi.DeviceClass
	// Claims are every ResourceClaim (all namespaces); Allocated are those
	// with status.allocation.
	Claims, Allocated []*resourceapi.ResourceClaim
	// Templates are the ResourceClaimTemplates of the namespace in effect.
	Templates []*resourceapi.ResourceClaimTemplate
}

// DRAObjects lists ResourceSlices, DeviceClasses, every ResourceClaim and
// the ResourceClaimTemplates of namespace ns (when templates is set).
func (c *Client) DRAObjects(ctx context.Context, templates bool, ns string) (*DRA, error) {
	if ns == "" {
		ns = c.namespace
	}
	d := &DRA{}
	rc := c.cs.ResourceV1().RESTClient()
	if err := listTyped[resourceapi.ResourceSliceList](ctx, c, rc, ResResourceSlices, metav1.ListOptions{}, func(l *resourceapi.ResourceSliceList) {
		for i := range l.Items {
			d.Slices = append(d.Slices, &l.Items[i])
		}
	}); err != nil {
		return nil, err
	}
	if err := listTyped[resourceapi.DeviceClassList](ctx, c, rc, ResDeviceClasses, metav1.ListOptions{}, func(l *resourceapi.DeviceClassList) {
		for i := range l.Items {
			d.Classes = append(d.Classes, &l.Items[i])
		}
	}); err != nil {
		return nil, err
	}
	if err := listTyped[resourceapi.ResourceClaimList](ctx, c, rc, ResClaims, metav1.ListOptions{}, func(l *resourceapi.ResourceClaimList) {
		for i := range l.Items {
			cl := &l.Items[i]
			d.Claims = append(d.Claims, cl)
			if cl.Status.Allocation != nil {
				d.Allocated = append(d.Allocated, cl)
			}
		}
	}); err != nil {
		return nil, err
	}
	if templates {
		if err := listTyped[resourceapi.ResourceClaimTemplateList](ctx, c, rc, ResClaimTemplates.in(ns), metav1.ListOptions{}, func(l *resourceapi.ResourceClaimTemplateList) {
			for i := range l.Items {
				d.Templates = append(d.Templates, &l.Items[i])
			}
		}); err != nil {
			return nil, err
		}
	}
	for _, s := range d.Slices {
		s.APIVersion, s.Kind = "resource.k8s.io/v1", "ResourceSlice"
	}
	for _, s := range d.Classes {
		s.APIVersion, s.Kind = "resource.k8s.io/v1", "DeviceClass"
	}
	for _, s := range d.Claims {
		s.APIVersion, s.Kind = "resource.k8s.io/v1", "ResourceClaim"
	}
	for _, s := range d.Templates {
		s.APIVersion, s.Kind = "resource.k8s.io/v1", "ResourceClaimTemplate"
	}
	return d, nil
}

// firstServed reads with each resource version in turn, moving on only
// when the server does not serve one (404).
func firstServed[T any](rs []Resource, read func(Resource) (T, error)) (T, error) {
	var zero T
	var err error
	for _, r := range rs {
		var v T
		if v, err = read(r); err == nil || !NotFound(err) {
			return v, err
		}
	}
	return zero, err
}

// Source names a cluster read in messages, where a file name goes.
func (c *Client) Source(what string) string { return "cluster " + c.server + " (" + what + ")" }

// jobPodGroup is the PodGroup a Job's pods name (spec.template.spec.
// schedulingGroup.podGroupName), or "" when it names none or is not a Job
// (the strict decode of the workload reports that).
func jobPodGroup(job json.RawMessage) string {
	var jt struct {
		Spec struct {
			Template struct {
				Spec struct {
					SchedulingGroup *struct {
						PodGroupName string `json:"podGroupName"`
					} `json:"schedulingGroup"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if json.Unmarshal(job, &jt) != nil || jt.Spec.Template.Spec.SchedulingGroup == nil {
		return ""
	}
	return jt.Spec.Template.Spec.SchedulingGroup.PodGroupName
}

// getPodGroup gets a PodGroup from the first scheduling.k8s.io version the
// server serves.
func (c *Client) getPodGroup(ctx context.Context, ns, name string) (json.RawMessage, error) {
	return firstServed([]Resource{ResPodGroupsB1.in(ns), ResPodGroups.in(ns), ResPodGroupsA2.in(ns)}, func(r Resource) (json.RawMessage, error) { return c.getRaw(ctx, r, name) })
}

// Workload reads a pending workload named KIND/NAME in the namespace in
// effect: job/NAME (batch/v1, with the PodGroup its pod template names),
// podgroup/NAME (with the Jobs naming it) or vcjob/NAME (Volcano).
func (c *Client) Workload(ctx context.Context, ref string) (*objects.Workload, error) {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, &ConfigError{fmt.Errorf("--from-cluster %q: want KIND/NAME (job/NAME, podgroup/NAME, vcjob/NAME)", ref)}
	}
	ns := c.namespace
	var items []json.RawMessage
	switch strings.ToLower(kind) {
	case "job", "jobs", "job.batch":
		j, err := c.getRaw(ctx, ResJobs.in(ns), name)
		if err != nil {
			return nil, err
		}
		items = append(items, j)
		if pgName := jobPodGroup(j); pgName != "" {
			pg, err := c.getPodGroup(ctx, ns, pgName)
			if err != nil {
				return nil, err
			}
			items = append(items, pg)
		}
	case "podgroup", "podgroups", "pg":
		pg, err := c.getPodGroup(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		items = append(items, pg)
		jobs, err := c.listRaw(ctx, ResJobs.in(ns), "Job", nil)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if jobPodGroup(j) == name {
				items = append(items, j)
			}
		}
	case "vcjob", "vcjobs", "job.batch.volcano.sh":
		j, err := c.getRaw(ctx, ResVolcanoJobs.in(ns), name)
		if err != nil {
			return nil, err
		}
		items = append(items, j)
	default:
		return nil, &ConfigError{fmt.Errorf("--from-cluster %q: unsupported kind %q: want job, podgroup or vcjob", ref, kind)}
	}
	src := c.Source(ref)
	return objects.LoadWorkload(src, asList(items))
}

// Annotations that name topologies (package place reads them too).
const (
	annKAITopology = "kai.scheduler/topology"
	annKAIPrefix   = "kai.scheduler/topology-"
	annKueuePrefix = "kueue.x-k8s.io/podset-"
	labelKueueLQ   = "kueue.x-k8s.io/queue-name"
)

// Topology reads the topology object the workload is placed against: the
// Volcano HyperNodes for a Volcano Job, the KAI Topology the Job names (or
// every KAI Topology), or the Kueue Topology of the ResourceFlavor of the
// workload's queue. It returns nil when the workload has no topology
// constraint of those kinds, and a note saying what was read.
func (c *Client) Topology(ctx context.Context, w *objects.Workload) (*objects.Topology, string, error) {
	if len(w.VolcanoJobs) > 0 {
		items, err := c.listRaw(ctx, ResHyperNodes, "HyperNode", nil)
		if err != nil {
			if NotFound(err) {
				return nil, "the cluster serves no Volcano HyperNodes (topology.volcano.sh)", nil
			}
			return nil, "", err
		}
		if len(items) == 0 {
			return nil, "the cluster has no Volcano HyperNodes", nil
		}
		t, err := objects.LoadTopology(c.Source("hypernodes"), asList(items))
		return t, fmt.Sprintf("topology: %d Volcano HyperNodes from the cluster", len(items)), err
	}
	for _, j := range w.Jobs {
		ann := map[string]string{}
		for k, v := range j.Annotations {
			ann[k] = v
		}
		for k, v := range j.Spec.Template.Annotations {
			ann[k] = v
		}
		kai, kueue := false, false
		for k := range ann {
			kai = kai || k == annKAITopology || strings.HasPrefix(k, annKAIPrefix)
			kueue = kueue || strings.HasPrefix(k, annKueuePrefix)
		}
		switch {
		case kai:
			var items []json.RawMessage
			var err error
			if name := ann[annKAITopology]; name != "" {
				var it json.RawMessage
				if it, err = c.getRaw(ctx, ResKAITopologies, name); err == nil {
					items = append(items, it)
				}
			} else {
				items, err = c.listRaw(ctx, ResKAITopologies, "Topology", nil)
			}
			if err != nil {
				return nil, "", err
			}
			if len(items) == 0 {
				return nil, "the cluster has no KAI Topology", nil
			}
			t, err := objects.LoadTopology(c.Source("topologies.kai.scheduler"), asList(items))
			return t, fmt.Sprintf("topology: KAI Topology from the cluster (%d)", len(items)), err
		case kueue:
			return c.kueueTopology(ctx, j.Namespace, j.Labels[labelKueueLQ], j.Spec.Template.Labels[labelKueueLQ])
		}
	}
	return nil, "", nil
}

// kueueTopology follows LocalQueue -> ClusterQueue -> ResourceFlavors ->
// spec.topologyName -> Topology.
func (c *Client) kueueTopology(ctx context.Context, ns, lq, lqTmpl string) (*objects.Topology, string, error) {
	if lq == "" {
		lq = lqTmpl
	}
	if ns == "" {
		ns = c.namespace
	}
	var flavorNames []string
	via := ""
	if lq != "" {
		b, err := firstServed([]Resource{ResLocalQueues.in(ns), ResLocalQueuesB1.in(ns)}, func(r Resource) (json.RawMessage, error) { return c.getRaw(ctx, r, lq) })
		if err != nil {
			return nil, "", err
		}
		var q struct {
			Spec struct {
				ClusterQueue string `json:"clusterQueue"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(b, &q)
		cq := q.Spec.ClusterQueue
		b, err = firstServed([]Resource{ResClusterQueues, ResClusterQB1}, func(r Resource) (json.RawMessage, error) { return c.getRaw(ctx, r, cq) })
		if err != nil {
			return nil, "", err
		}
		var cqo struct {
			Spec struct {
				ResourceGroups []struct {
					Flavors []struct {
						Name string `json:"name"`
					} `json:"flavors"`
				} `json:"resourceGroups"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(b, &cqo)
		for _, rg := range cqo.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				flavorNames = append(flavorNames, f.Name)
			}
		}
		via = fmt.Sprintf("LocalQueue %s/%s -> ClusterQueue %s", ns, lq, cq)
	}
	flavors, err := firstServed([]Resource{ResFlavors, ResFlavorsB1}, func(r Resource) ([]json.RawMessage, error) { return c.listRaw(ctx, r, "ResourceFlavor", nil) })
	if err != nil {
		if NotFound(err) {
			return nil, "the cluster serves no Kueue ResourceFlavors", nil
		}
		return nil, "", err
	}
	want := map[string]bool{}
	for _, f := range flavorNames {
		want[f] = true
	}
	topos := map[string]string{} // topology -> flavor
	for _, b := range flavors {
		var f struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				TopologyName string `json:"topologyName"`
			} `json:"spec"`
		}
		if json.Unmarshal(b, &f) != nil || f.Spec.TopologyName == "" || (lq != "" && !want[f.Metadata.Name]) {
			continue
		}
		topos[f.Spec.TopologyName] = f.Metadata.Name
	}
	if len(topos) == 0 {
		return nil, "no Kueue ResourceFlavor names a Topology" + strings.TrimSuffix(" ("+via+")", " ()"), nil
	}
	if len(topos) > 1 {
		var names []string
		for t := range topos {
			names = append(names, t)
		}
		sort.Strings(names)
		return nil, "", &ConfigError{fmt.Errorf("the ResourceFlavors name %d Topologies (%s): label the Job with %s to say which queue", len(names), strings.Join(names, ", "), labelKueueLQ)}
	}
	var name, flavor string
	for name, flavor = range topos {
	}
	b, err := firstServed([]Resource{ResKueueTopo, ResKueueTopoB1}, func(r Resource) (json.RawMessage, error) { return c.getRaw(ctx, r, name) })
	if err != nil {
		return nil, "", err
	}
	t, err := objects.LoadTopology(c.Source("topologies.kueue.x-k8s.io/"+name), asList([]json.RawMessage{b}))
	note := fmt.Sprintf("topology: Kueue Topology %q of ResourceFlavor %q from the cluster", name, flavor)
	if via != "" {
		note += " (" + via + ")"
	}
	return t, note, err
}

// LintSources lists every kind 'k8s lint' knows, for Loader.Add: one
// (name, List JSON) per resource the cluster serves and has objects of.
// Kinds the cluster does not serve are skipped; a forbidden one is an
// error.
func (c *Client) LintSources(ctx context.Context) (names []string, lists [][]byte, err error) {
	for _, k := range lintKinds {
		switch k.kind {
		case "ResourceFlavor", "LocalQueue", "ClusterQueue":
			continue // read for the topology, not linted
		}
		items, err := c.listRaw(ctx, k.res, k.kind, nil)
		if err != nil {
			if NotFound(err) {
				continue
			}
			return nil, nil, err
		}
		if len(items) == 0 {
			continue
		}
		names = append(names, c.Source(k.res.String()))
		lists = append(lists, asList(items))
	}
	return names, lists, nil
}
