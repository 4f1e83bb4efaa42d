package place

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// Annotations that carry topology constraints (KAI on the Job or its pod
// template, Kueue on the pod template).
const (
	AnnotationKAITopology  = "kai.scheduler/topology"
	AnnotationKAIRequired  = "kai.scheduler/topology-required-placement"
	AnnotationKAIPreferred = "kai.scheduler/topology-preferred-placement"
	AnnotationKueueReq     = "kueue.x-k8s.io/podset-required-topology"
	AnnotationKueuePref    = "kueue.x-k8s.io/podset-preferred-topology"
)

// Styles of constraint.
const (
	StylePodGroup = "PodGroup"
	StyleKAI      = "KAI"
	StyleVolcano  = "Volcano"
	StyleKueue    = "Kueue"
	StyleLevels   = "levels"
	StyleNone     = "none"
)

// MaxGangPods bounds the pods of one gang.
const MaxGangPods = 1 << 20

// Input is everything place reads.
type Input struct {
	Nodes    []*objects.Node
	Pods     []*objects.Pod
	Topology *objects.Topology // nil: none
	Levels   []string          // --levels
	Workload *objects.Workload
}

// spec is the gang before levels are resolved.
type spec struct {
	gang     *Gang
	req      string // required level key ("" none)
	pref     string
	kaiTopo  string
	tierMax  *int // Volcano highestTierAllowed
	tierName string
}

func newTask(name string, count int, names []string, tmpl *v1.PodTemplateSpec) *Task {
	pod := &v1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	a := pod.Spec.Affinity
	return &Task{Name: name, Count: count, PodNames: names, Template: pod, Requests: EffectiveRequests(pod),
		affinity: nodeaffinity.GetRequiredNodeAffinity(pod),
		selects:  len(pod.Spec.NodeSelector) > 0 || a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil}
}

func readSpec(w *objects.Workload) (*spec, error) {
	nJobs := len(w.Jobs) + len(w.VolcanoJobs)
	if nJobs != 1 {
		var s objects.Source
		switch {
		case len(w.Jobs) > 1:
			s = w.Jobs[1].Source
		case len(w.VolcanoJobs) > 0 && len(w.Jobs) > 0:
			s = w.VolcanoJobs[0].Source
		case len(w.VolcanoJobs) > 1:
			s = w.VolcanoJobs[1].Source
		case len(w.PodGroups) > 0:
			s = w.PodGroups[0].Source
			return nil, s.Errorf("", "", "Required value: the workload file holds no Job (a PodGroup alone creates no pods)")
		default:
			return nil, &objects.Error{Item: -1, Reason: "no Job in the workload file"}
		}
		return nil, s.Errorf("", "", "Invalid value: the workload file holds %d Jobs; place one gang at a time", nJobs)
	}
	if len(w.VolcanoJobs) == 1 {
		return volcanoSpec(w)
	}
	j := w.Jobs[0]
	obj := fmt.Sprintf("Job %q", j.Name)
	n := 1
	if j.Spec.Parallelism != nil {
		n = int(*j.Spec.Parallelism)
	}
	if j.Spec.Completions != nil && int(*j.Spec.Completions) < n {
		n = int(*j.Spec.Completions)
	}
	if n <= 0 || n > MaxGangPods {
		return nil, j.Errorf(obj, "spec.parallelism", "Invalid value: %d: want 1..%d pods", n, MaxGangPods)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = j.Name + "-" + strconv.Itoa(i)
	}
	if len(j.Spec.Template.Spec.Containers) == 0 {
		return nil, j.Errorf(obj, "spec.template.spec.containers", "Required value: must have at least one container")
	}
	sp := &spec{gang: &Gang{Workload: obj, Tasks: []*Task{newTask("", n, names, &j.Spec.Template)}, Required: -1, Preferred: -1}}
	g := sp.gang
	ann := func(k string) string {
		if v := j.Spec.Template.Annotations[k]; v != "" {
			return v
		}
		return j.Annotations[k]
	}
	var pgName string
	if sg := j.Spec.Template.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		pgName = *sg.PodGroupName
	}
	switch {
	case pgName != "":
		g.Style = StylePodGroup
		var pg *objects.PodGroup
		for i := range w.PodGroups {
			if w.PodGroups[i].Name == pgName {
				pg = &w.PodGroups[i]
			}
		}
		if pg == nil {
			return nil, j.Errorf(obj, "spec.template.spec.schedulingGroup.podGroupName", "Not found: %q: no PodGroup of that name in the workload file", pgName)
		}
		g.Workload = fmt.Sprintf("%s (PodGroup %q)", obj, pg.Name)
		if sc := pg.Spec.SchedulingConstraints; sc != nil {
			switch len(sc.Topology) {
			case 0:
			case 1:
				sp.req = sc.Topology[0].Key
				if sp.req == "" {
					return nil, pg.Errorf(fmt.Sprintf("PodGroup %q", pg.Name), "spec.schedulingConstraints.topology[0].key", "Required value")
				}
			default:
				return nil, pg.Errorf(fmt.Sprintf("PodGroup %q", pg.Name), "spec.schedulingConstraints.topology", "Too many: %d: must have at most 1 items", len(sc.Topology))
			}
		}
		if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil && int(gp.MinCount) > n {
			g.Notes = append(g.Notes, fmt.Sprintf("PodGroup minCount %d is more than the Job's %d pods: the scheduler would wait for pods that never come", gp.MinCount, n))
		}
	case ann(AnnotationKAIRequired) != "" || ann(AnnotationKAIPreferred) != "" || ann(AnnotationKAITopology) != "":
		g.Style = StyleKAI
		sp.req, sp.pref, sp.kaiTopo = ann(AnnotationKAIRequired), ann(AnnotationKAIPreferred), ann(AnnotationKAITopology)
	case ann(AnnotationKueueReq) != "" || ann(AnnotationKueuePref) != "":
		g.Style = StyleKueue
		sp.req, sp.pref = ann(AnnotationKueueReq), ann(AnnotationKueuePref)
	default:
		g.Style = StyleNone
	}
	return sp, nil
}

func volcanoSpec(w *objects.Workload) (*spec, error) {
	j := w.VolcanoJobs[0]
	obj := fmt.Sprintf("Job %q", j.Name)
	sp := &spec{gang: &Gang{Workload: "Volcano " + obj, Style: StyleVolcano, Required: -1, Preferred: -1}}
	if len(j.Spec.Tasks) == 0 {
		return nil, j.Errorf(obj, "spec.tasks", "Required value: at least one task")
	}
	total := 0
	seen := map[string]bool{}
	for ti, t := range j.Spec.Tasks {
		field := fmt.Sprintf("spec.tasks[%d]", ti)
		if t.Name == "" {
			return nil, j.Errorf(obj, field+".name", "Required value")
		}
		if seen[t.Name] {
			return nil, j.Errorf(obj, field+".name", "Duplicate value: %q", t.Name)
		}
		seen[t.Name] = true
		if t.Replicas < 0 || total+int(t.Replicas) > MaxGangPods {
			return nil, j.Errorf(obj, field+".replicas", "Invalid value: %d", t.Replicas)
		}
		if len(t.Template.Spec.Containers) == 0 {
			return nil, j.Errorf(obj, field+".template.spec.containers", "Required value: must have at least one container")
		}
		total += int(t.Replicas)
		names := make([]string, t.Replicas)
		for i := range names {
			names[i] = j.Name + "-" + t.Name + "-" + strconv.Itoa(i)
		}
		if t.Replicas > 0 {
			sp.gang.Tasks = append(sp.gang.Tasks, newTask(t.Name, int(t.Replicas), names, &j.Spec.Tasks[ti].Template))
		}
	}
	if total == 0 {
		return nil, j.Errorf(obj, "spec.tasks", "Invalid value: no replicas")
	}
	if j.Spec.MinAvailable > int32(total) {
		sp.gang.Notes = append(sp.gang.Notes, fmt.Sprintf("minAvailable %d is more than the job's %d pods: Volcano would never start it", j.Spec.MinAvailable, total))
	}
	if nt := j.Spec.NetworkTopology; nt != nil {
		mode := nt.Mode
		if mode == "" {
			mode = objects.NetworkTopologyHard
		}
		if mode != objects.NetworkTopologyHard && mode != objects.NetworkTopologySoft {
			return nil, j.Errorf(obj, "spec.networkTopology.mode", "Unsupported value: %q: supported values: \"hard\", \"soft\"", nt.Mode)
		}
		if nt.HighestTierAllowed != nil && nt.HighestTierName != "" {
			return nil, j.Errorf(obj, "spec.networkTopology", "Invalid value: highestTierAllowed and highestTierName cannot both be set")
		}
		sp.gang.Mode = mode
		sp.tierMax, sp.tierName = nt.HighestTierAllowed, nt.HighestTierName
		if sp.tierMax == nil && sp.tierName == "" {
			one := 1
			sp.tierMax = &one
			sp.gang.Notes = append(sp.gang.Notes, "networkTopology.highestTierAllowed unset: tier 1 (the CRD default)")
		}
	}
	return sp, nil
}

// Run places the workload: the whole pipeline after loading. Errors are bad
// input (*objects.Error).
func Run(ctx context.Context, in Input) (*Report, error) {
	sp, err := readSpec(in.Workload)
	if err != nil {
		return nil, err
	}
	g := sp.gang
	res := GangResources(g.Tasks)
	c := NewCluster(in.Nodes, in.Pods, res)
	topo, err := buildTopology(c, in, sp)
	if err != nil {
		return nil, err
	}
	return Place(ctx, c, topo, g)
}

func buildTopology(c *Cluster, in Input, sp *spec) (*Topology, error) {
	g := sp.gang
	kinds := 0
	t := in.Topology
	if t == nil {
		t = &objects.Topology{}
	}
	for _, n := range []int{len(t.HyperNodes), len(t.KAI), len(t.Kueue), len(in.Levels)} {
		if n > 0 {
			kinds++
		}
	}
	if kinds > 1 {
		return nil, &objects.Error{File: "--topology/--levels", Item: -1, Reason: "give one topology: HyperNodes, a KAI Topology, a Kueue Topology or --levels"}
	}
	var topo *Topology
	switch {
	case len(t.HyperNodes) > 0:
		var err error
		if topo, err = HyperNodeTopology(c, t.HyperNodes); err != nil {
			return nil, err
		}
	case len(t.KAI) > 0 || len(t.Kueue) > 0:
		list := append(append([]objects.LevelTopologyObject(nil), t.KAI...), t.Kueue...)
		pick := list[0]
		if sp.kaiTopo != "" {
			found := false
			for _, lt := range list {
				if lt.Name == sp.kaiTopo {
					pick, found = lt, true
				}
			}
			if !found {
				return nil, &objects.Error{File: list[0].File, Item: -1, Field: "metadata.name",
					Reason: fmt.Sprintf("Not found: the Job's %s annotation names Topology %q", AnnotationKAITopology, sp.kaiTopo)}
			}
		} else if len(list) > 1 {
			return nil, list[1].Errorf(fmt.Sprintf("Topology %q", list[1].Name), "", "Invalid value: %d Topologies and the workload names none (annotation %s)", len(list), AnnotationKAITopology)
		}
		keys := make([]string, len(pick.Spec.Levels))
		for i, l := range pick.Spec.Levels {
			keys[i] = l.NodeLabel
		}
		topo = LabelTopology(c, keys)
	case len(in.Levels) > 0:
		topo = LabelTopology(c, in.Levels)
	case sp.req != "" || sp.pref != "":
		var keys []string
		if sp.req != "" {
			keys = append(keys, sp.req)
		}
		if sp.pref != "" && sp.pref != sp.req {
			keys = append(keys, sp.pref)
		}
		topo = LabelTopology(c, keys)
		g.Notes = append(g.Notes, fmt.Sprintf("no --topology or --levels: levels are the workload's own keys (%s)", strings.Join(keys, ", ")))
	default:
		topo = &Topology{}
	}
	if g.Style == StyleNone && len(topo.Levels) > 0 {
		g.Style = StyleLevels
	}
	if g.Style == StyleVolcano {
		if len(t.HyperNodes) == 0 && sp.gang.Mode != "" {
			return nil, &objects.Error{File: "--topology", Item: -1, Reason: "the Volcano Job has a networkTopology: give its HyperNodes with --topology"}
		}
		if sp.gang.Mode != "" {
			tierMax := 0
			if sp.tierMax != nil {
				tierMax = *sp.tierMax
			} else {
				found := false
				for _, h := range t.HyperNodes {
					if h.Spec.TierName == sp.tierName {
						tierMax, found = h.Spec.Tier, true
					}
				}
				if !found {
					return nil, &objects.Error{File: "--workload", Item: -1, Field: "spec.networkTopology.highestTierName", Reason: fmt.Sprintf("Not found: no HyperNode has tierName %q", sp.tierName)}
				}
			}
			// allowed levels: tiers <= tierMax; the outermost allowed is the bound
			bound := -1
			for i := len(topo.Levels) - 1; i >= 0; i-- {
				tr, _ := strconv.Atoi(strings.TrimPrefix(topo.Levels[i], "tier-"))
				if tr <= tierMax {
					bound = i
				}
			}
			key := TierLevel(tierMax)
			if sp.gang.Mode == objects.NetworkTopologyHard {
				if bound < 0 {
					return nil, &objects.Error{File: "--workload", Item: -1, Field: "spec.networkTopology.highestTierAllowed", Reason: fmt.Sprintf("Invalid value: %d: no HyperNode has a tier that low", tierMax)}
				}
				g.Required, g.RequiredKey = bound, key
			} else if bound >= 0 {
				g.Preferred, g.PreferredKey = bound, key
			}
		}
		return topo, nil
	}
	if sp.req != "" {
		if g.Required = topo.LevelIndex(sp.req); g.Required < 0 {
			return nil, &objects.Error{File: "--topology/--levels", Item: -1, Reason: fmt.Sprintf("the workload requires level %q, which is not a level of the topology (%s)", sp.req, strings.Join(topo.Levels, ", "))}
		}
		g.RequiredKey = sp.req
	}
	if sp.pref != "" {
		if g.Preferred = topo.LevelIndex(sp.pref); g.Preferred < 0 {
			return nil, &objects.Error{File: "--topology/--levels", Item: -1, Reason: fmt.Sprintf("the workload prefers level %q, which is not a level of the topology (%s)", sp.pref, strings.Join(topo.Levels, ", "))}
		}
		g.PreferredKey = sp.pref
		if g.Required >= 0 && g.Preferred < g.Required {
			g.Notes = append(g.Notes, fmt.Sprintf("preferred level %s is above the required level %s: it cannot tighten anything (gpunode k8s lint reports this)", sp.pref, sp.req))
		}
	}
	return topo, nil
}
