package lint

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	schedv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpunode/gpunode/internal/k8s/objects"
	"github.com/gpunode/gpunode/internal/k8s/place"
)

func gangRules() []Rule {
	return []Rule{
		{ID: "gang.topology-keys", Severity: SeverityError, Section: "5.7.1",
			Summary: "a PodGroup has at most one schedulingConstraints.topology key",
			Check:   checkPodGroupKeys},
		{ID: "gang.min-count", Severity: SeverityError, Section: "5.7.1",
			Summary: "a gang's minCount/minAvailable is not above the pods its Job creates (parallelism, task replicas)",
			Check:   checkMinCount},
		{ID: "gang.kai-levels", Severity: SeverityError, Section: "5.7.2",
			Summary: "KAI required/preferred placement levels are levels of the named Topology, preferred below (inside) required",
			Check:   checkKAILevels},
		{ID: "gang.level-labels", Severity: SeverityWarning, Section: "5.7",
			Summary: "topology level labels (Topology levels, PodGroup keys, KAI/Kueue annotations) are carried by some node",
			Needs:   "--nodes", Check: checkLevelLabels},
		{ID: "gang.volcano-tier", Severity: SeverityError, Section: "5.7.3",
			Summary: "a Volcano Job's highestTierAllowed/highestTierName is a tier the HyperNodes have",
			Check:   checkVolcanoTier},
		{ID: "gang.hypernode", Severity: SeverityError, Section: "5.7.3",
			Summary: "HyperNode trees: no membership cycles, no node in two leaves, no empty selectors",
			Check:   checkHyperNodes},
	}
}

func checkPodGroupKeys(c *Context, emit Emit) {
	for _, o := range c.Kind("PodGroup") {
		pg := o.V.(*schedv1alpha3.PodGroup)
		sc := pg.Spec.SchedulingConstraints
		if sc == nil || len(sc.Topology) < 2 {
			continue
		}
		keys := make([]string, len(sc.Topology))
		for i, t := range sc.Topology {
			keys[i] = t.Key
		}
		emit(o, "spec.schedulingConstraints.topology", fmt.Sprintf("%d topology keys (%s): the API allows at most 1 (the PodGroup is rejected)", len(keys), strings.Join(keys, ", ")),
			"keep the one level the whole gang must share (e.g. the rack label)")
	}
}

func checkMinCount(c *Context, emit Emit) {
	pgs := map[string]*Object{}
	for _, o := range c.Kind("PodGroup") {
		pgs[o.Namespace+"/"+o.Name] = o
	}
	for _, o := range c.Kind("Job") {
		j, ok := o.V.(*batchv1.Job)
		if !ok {
			continue
		}
		sg := j.Spec.Template.Spec.SchedulingGroup
		if sg == nil || sg.PodGroupName == nil {
			continue
		}
		pgo := pgs[o.Namespace+"/"+*sg.PodGroupName]
		if pgo == nil {
			continue
		}
		pg := pgo.V.(*schedv1alpha3.PodGroup)
		n := jobPods(&j.Spec)
		if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil && int(gp.MinCount) > n {
			emit(o, "spec.parallelism", fmt.Sprintf("the Job creates %d pods (parallelism/completions) but PodGroup %s needs minCount %d: the scheduler waits for pods that never come and the gang stays Pending",
				n, pgo.Name, gp.MinCount), fmt.Sprintf("set parallelism and completions to %d, or lower minCount to %d", gp.MinCount, n))
		}
	}
	for _, o := range c.Kind("Job") {
		j, ok := o.V.(*objects.VolcanoJob)
		if !ok {
			continue
		}
		total := 0
		for _, t := range j.Spec.Tasks {
			total += int(t.Replicas)
		}
		if int(j.Spec.MinAvailable) > total {
			emit(o, "spec.minAvailable", fmt.Sprintf("minAvailable %d is more than the %d pods of the job's tasks: Volcano never starts it", j.Spec.MinAvailable, total),
				fmt.Sprintf("set minAvailable to at most %d", total))
		}
	}
}

// kaiAnn reads a KAI annotation from the pod template, else the object.
func kaiAnn(p *PodRef, key string) string {
	if v := p.Meta.Annotations[key]; v != "" {
		return v
	}
	return objectAnnotations(p.Obj)[key]
}

func objectAnnotations(o *Object) map[string]string {
	type annGetter interface{ GetAnnotations() map[string]string }
	if g, ok := o.V.(annGetter); ok {
		return g.GetAnnotations()
	}
	return nil
}

func (c *Context) topologyLevels(name string, kai bool) (*Object, []string) {
	for _, o := range c.Kind("Topology") {
		if o.Name != name || (o.APIVersion == objects.GroupVersionKAI) != kai {
			continue
		}
		lt := o.V.(*objects.LevelTopology)
		var out []string
		for _, l := range lt.Spec.Levels {
			out = append(out, l.NodeLabel)
		}
		return o, out
	}
	return nil, nil
}

func checkKAILevels(c *Context, emit Emit) {
	done := map[*Object]bool{}
	for _, p := range c.Pods {
		if done[p.Obj] {
			continue
		}
		req, pref, topo := kaiAnn(p, place.AnnotationKAIRequired), kaiAnn(p, place.AnnotationKAIPreferred), kaiAnn(p, place.AnnotationKAITopology)
		if req == "" && pref == "" {
			continue
		}
		done[p.Obj] = true
		field := "metadata.annotations[" + place.AnnotationKAIPreferred + "]"
		if req != "" && pref == req {
			emit(p.Obj, field, fmt.Sprintf("the preferred level %s is the required level: a preference must be a level inside the required one (closer nodes)", pref), "prefer a lower level (e.g. the rack under the block), or drop the preference")
			continue
		}
		to, levels := c.topologyLevels(topo, true)
		if to == nil {
			continue
		}
		for _, a := range []struct{ key, val string }{{place.AnnotationKAIRequired, req}, {place.AnnotationKAIPreferred, pref}} {
			if a.val != "" && slices.Index(levels, a.val) < 0 {
				emit(p.Obj, "metadata.annotations["+a.key+"]", fmt.Sprintf("%s is not a level of KAI Topology %s (levels %s)", a.val, to.Name, strings.Join(levels, ", ")),
					"use one of the Topology's nodeLabel values")
			}
		}
		ri, pi := slices.Index(levels, req), slices.Index(levels, pref)
		if ri >= 0 && pi >= 0 && pi <= ri {
			emit(p.Obj, field, fmt.Sprintf("the preferred level %s (level %d of %s, outermost first) is not below the required level %s (level %d): the preference is wider than the requirement and never tightens placement",
				pref, pi, to.Name, req, ri), fmt.Sprintf("prefer a level after %s in the Topology's list (%s)", req, strings.Join(levels[ri+1:], ", ")))
		}
	}
}

type levelUse struct {
	obj   *Object
	field string
	key   string
}

func (c *Context) levelUses() []levelUse {
	var out []levelUse
	for _, o := range c.Kind("Topology") {
		for i, l := range o.V.(*objects.LevelTopology).Spec.Levels {
			out = append(out, levelUse{o, fmt.Sprintf("spec.levels[%d].nodeLabel", i), l.NodeLabel})
		}
	}
	for _, o := range c.Kind("PodGroup") {
		if sc := o.V.(*schedv1alpha3.PodGroup).Spec.SchedulingConstraints; sc != nil {
			for i, t := range sc.Topology {
				out = append(out, levelUse{o, fmt.Sprintf("spec.schedulingConstraints.topology[%d].key", i), t.Key})
			}
		}
	}
	done := map[*Object]bool{}
	for _, p := range c.Pods {
		if done[p.Obj] {
			continue
		}
		done[p.Obj] = true
		for _, k := range []string{place.AnnotationKAIRequired, place.AnnotationKAIPreferred, place.AnnotationKueueReq, place.AnnotationKueuePref} {
			if v := kaiAnn(p, k); v != "" {
				out = append(out, levelUse{p.Obj, "metadata.annotations[" + k + "]", v})
			}
		}
	}
	return out
}

func checkLevelLabels(c *Context, emit Emit) {
	if len(c.In.Nodes) == 0 {
		return
	}
	carried := map[string]int{}
	for _, n := range c.In.Nodes {
		for k := range n.Labels {
			carried[k]++
		}
	}
	for _, u := range c.levelUses() {
		if carried[u.key] == 0 {
			emit(u.obj, u.field, fmt.Sprintf("level label %s is carried by none of the %d nodes: the scheduler finds no domain at that level (a required level leaves the gang Pending)", u.key, len(c.In.Nodes)),
				fmt.Sprintf("label the nodes with %s (or fix the key)", u.key))
		}
	}
}

func checkVolcanoTier(c *Context, emit Emit) {
	hns := c.Kind("HyperNode")
	if len(hns) == 0 {
		return
	}
	maxTier := 0
	tierNames := map[string]bool{}
	for _, o := range hns {
		h := o.V.(*objects.HyperNode)
		if h.Spec.Tier > maxTier {
			maxTier = h.Spec.Tier
		}
		if h.Spec.TierName != "" {
			tierNames[h.Spec.TierName] = true
		}
	}
	for _, o := range c.Kind("Job") {
		j, ok := o.V.(*objects.VolcanoJob)
		if !ok || j.Spec.NetworkTopology == nil {
			continue
		}
		nt := j.Spec.NetworkTopology
		if nt.HighestTierAllowed != nil && *nt.HighestTierAllowed > maxTier {
			emit(o, "spec.networkTopology.highestTierAllowed", fmt.Sprintf("highestTierAllowed %d is above the highest HyperNode tier %d: no HyperNode of that tier exists, so the limit bounds nothing (and with mode hard the job may never be placed)",
				*nt.HighestTierAllowed, maxTier), fmt.Sprintf("set highestTierAllowed to a tier from 1 to %d", maxTier))
		}
		if nt.HighestTierName != "" && !tierNames[nt.HighestTierName] {
			names := make([]string, 0, len(tierNames))
			for n := range tierNames {
				names = append(names, n)
			}
			sort.Strings(names)
			emit(o, "spec.networkTopology.highestTierName", fmt.Sprintf("highestTierName %q is the tierName of no HyperNode (tier names: %s)", nt.HighestTierName, strings.Join(names, ", ")), "use a HyperNode's spec.tierName or highestTierAllowed")
		}
	}
}

func checkHyperNodes(c *Context, emit Emit) {
	objs := c.Kind("HyperNode")
	if len(objs) == 0 {
		return
	}
	hns := make([]objects.HyperNodeObject, len(objs))
	bySrc := map[objects.Source]*Object{}
	for i, o := range objs {
		hns[i] = objects.HyperNodeObject{Source: o.Src, HyperNode: o.V.(*objects.HyperNode)}
		bySrc[o.Src] = o
	}
	// Empty selectors place's loader accepts: a labelMatch with nothing in
	// it selects every node.
	for _, o := range objs {
		h := o.V.(*objects.HyperNode)
		for i, m := range h.Spec.Members {
			if lm := m.Selector.LabelMatch; lm != nil && len(lm.MatchLabels) == 0 && len(lm.MatchExpressions) == 0 {
				emit(o, fmt.Sprintf("spec.members[%d].selector.labelMatch", i), "an empty labelMatch selects every node: this HyperNode holds the whole cluster", "give labelMatch matchLabels or matchExpressions, or use exactMatch/regexMatch")
			}
		}
	}
	nodes := make([]*objects.Node, len(c.In.Nodes))
	for i, n := range c.In.Nodes {
		nodes[i] = objects.NodeFromV1(n)
	}
	cluster := place.NewCluster(nodes, nil, nil)
	if _, err := place.HyperNodeTopology(cluster, hns); err != nil {
		var oe *objects.Error
		if errors.As(err, &oe) {
			if o := bySrc[objects.Source{File: oe.File, Doc: oe.Doc, Item: oe.Item}]; o != nil {
				emit(o, oe.Field, strings.TrimPrefix(oe.Reason, "Invalid value: "), hyperNodeFix(oe.Reason))
				return
			}
		}
		emit(objs[0], "", err.Error(), "fix the HyperNode members")
		return
	}
	// A node in two leaves (HyperNodes with only Node members).
	owner := map[string]*Object{}
	for _, o := range objs {
		h := o.V.(*objects.HyperNode)
		leaf := true
		for _, m := range h.Spec.Members {
			if m.Type == objects.MemberHyperNode {
				leaf = false
			}
		}
		if !leaf {
			continue
		}
		for i, m := range h.Spec.Members {
			for _, n := range memberNodes(c, m) {
				if prev := owner[n]; prev != nil && prev != o {
					emit(o, fmt.Sprintf("spec.members[%d]", i), fmt.Sprintf("node %s is in two leaf HyperNodes (%s and %s): Volcano's tiers no longer describe one switch per node and placement inside either may cross switches",
						n, prev.Name, o.Name), "put each node in exactly one leaf HyperNode")
				} else {
					owner[n] = o
				}
			}
		}
	}
}

func hyperNodeFix(reason string) string {
	if strings.Contains(reason, "cycle") {
		return "make the HyperNode members a tree: a HyperNode lists only lower-tier HyperNodes"
	}
	return "give each member exactly one non-empty selector (exactMatch.name, regexMatch.pattern or labelMatch)"
}

// memberNodes lists the node names a Node member selects: exactMatch
// without --nodes, any selector with them.
func memberNodes(c *Context, m objects.HyperNodeMember) []string {
	if m.Type != objects.MemberNode {
		return nil
	}
	sel := m.Selector
	if sel.ExactMatch != nil && len(c.In.Nodes) == 0 {
		return []string{sel.ExactMatch.Name}
	}
	var out []string
	for _, n := range c.In.Nodes {
		switch {
		case sel.ExactMatch != nil:
			if n.Name == sel.ExactMatch.Name {
				out = append(out, n.Name)
			}
		case sel.RegexMatch != nil:
			if re, err := regexp.Compile(sel.RegexMatch.Pattern); err == nil && re.MatchString(n.Name) {
				out = append(out, n.Name)
			}
		case sel.LabelMatch != nil:
			if s, err := metav1.LabelSelectorAsSelector(sel.LabelMatch); err == nil && s.Matches(labels.Set(n.Labels)) {
				out = append(out, n.Name)
			}
		}
	}
	return out
}
