package place

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpunode/gpunode/internal/k8s/objects"
)

// Domain is one network domain: the nodes under one label value (below its
// parent's value) or one HyperNode.
type Domain struct {
	Level    int // index into Topology.Levels; -1 for the whole cluster
	Name     string
	Parent   int // -1 at the outermost level
	Children []int
	Nodes    []int // indices into Cluster.Nodes, ascending
}

// Topology is the levels (outermost first) and their domains.
type Topology struct {
	Levels  []string
	Domains []Domain
	ByLevel [][]int
}

// LevelIndex returns the index of level key, or -1.
func (t *Topology) LevelIndex(key string) int {
	for i, l := range t.Levels {
		if l == key {
			return i
		}
	}
	return -1
}

// LabelTopology groups nodes by the label keys (outermost first): a domain at
// level i is one value of keys[i] under one domain of level i-1 (so two racks
// with the same name in different blocks are different domains, as Kueue and
// KAI treat them). A node without keys[i] is in no domain at level i or below.
func LabelTopology(c *Cluster, keys []string) *Topology {
	t := &Topology{Levels: append([]string(nil), keys...), ByLevel: make([][]int, len(keys))}
	type key struct {
		parent int
		value  string
	}
	ids := map[key]int{}
	// exports list nodes rack by rack: reuse the previous node's domain when
	// the parent and value repeat, before hashing
	prev := make([]int, len(keys))
	for i := range prev {
		prev[i] = -1
	}
	for ni := range c.Nodes {
		lab := c.Nodes[ni].Obj.Labels
		parent := -1
		for li, k := range keys {
			v, ok := lab[k]
			if !ok {
				break
			}
			id := prev[li]
			if id < 0 || t.Domains[id].Parent != parent || t.Domains[id].Name != v {
				id, ok = ids[key{parent, v}]
			}
			if !ok {
				id = len(t.Domains)
				ids[key{parent, v}] = id
				t.Domains = append(t.Domains, Domain{Level: li, Name: v, Parent: parent})
				t.ByLevel[li] = append(t.ByLevel[li], id)
				if parent >= 0 {
					t.Domains[parent].Children = append(t.Domains[parent].Children, id)
				}
			}
			t.Domains[id].Nodes = append(t.Domains[id].Nodes, ni)
			prev[li] = id
			parent = id
		}
	}
	return t
}

// TierLevel is the level key of a Volcano tier.
func TierLevel(tier int) string { return "tier-" + strconv.Itoa(tier) }

// HyperNodeTopology builds the domains of Volcano HyperNodes: one level per
// tier (highest tier outermost), a HyperNode's nodes being its Node members
// (exactMatch, regexMatch on the node name, labelMatch) and the nodes of its
// HyperNode members. Duplicate names, bad selectors and membership cycles
// are bad input.
func HyperNodeTopology(c *Cluster, hns []objects.HyperNodeObject) (*Topology, error) {
	byName := map[string]int{}
	for i, h := range hns {
		if j, dup := byName[h.Name]; dup {
			return nil, h.Errorf(fmt.Sprintf("HyperNode %q", h.Name), "metadata.name", "Duplicate value: %q (also %s document %d)", h.Name, hns[j].File, hns[j].Doc)
		}
		byName[h.Name] = i
	}
	tiers := map[int]bool{}
	for _, h := range hns {
		tiers[h.Spec.Tier] = true
	}
	var tierList []int
	for tr := range tiers {
		tierList = append(tierList, tr)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(tierList)))
	t := &Topology{ByLevel: make([][]int, len(tierList))}
	levelOf := map[int]int{}
	for i, tr := range tierList {
		t.Levels = append(t.Levels, TierLevel(tr))
		levelOf[tr] = i
	}
	direct := make([][]int, len(hns))   // node members
	children := make([][]int, len(hns)) // HyperNode members
	names := make([]string, 0, len(c.Nodes))
	for i := range c.Nodes {
		names = append(names, c.Nodes[i].Name)
	}
	hnNames := make([]string, len(hns))
	for i, h := range hns {
		hnNames[i] = h.Name
	}
	for hi, h := range hns {
		obj := fmt.Sprintf("HyperNode %q", h.Name)
		if len(h.Spec.Members) == 0 {
			return nil, h.Errorf(obj, "spec.members", "Required value: at least one member")
		}
		for mi, m := range h.Spec.Members {
			field := fmt.Sprintf("spec.members[%d]", mi)
			sel := m.Selector
			n := 0
			if sel.ExactMatch != nil {
				n++
			}
			if sel.RegexMatch != nil {
				n++
			}
			if sel.LabelMatch != nil {
				n++
			}
			if n != 1 {
				return nil, h.Errorf(obj, field+".selector", "Invalid value: exactly one of exactMatch, regexMatch, labelMatch must be set")
			}
			var pool []string
			switch m.Type {
			case objects.MemberNode:
				pool = names
			case objects.MemberHyperNode:
				pool = hnNames
				if sel.LabelMatch != nil {
					return nil, h.Errorf(obj, field+".selector.labelMatch", "Invalid value: labelMatch selects only Node members")
				}
			default:
				return nil, h.Errorf(obj, field+".type", "Unsupported value: %q: supported values: \"Node\", \"HyperNode\"", m.Type)
			}
			var match []int
			switch {
			case sel.ExactMatch != nil:
				if sel.ExactMatch.Name == "" {
					return nil, h.Errorf(obj, field+".selector.exactMatch.name", "Required value")
				}
				for i, nm := range pool {
					if nm == sel.ExactMatch.Name {
						match = append(match, i)
					}
				}
			case sel.RegexMatch != nil:
				re, err := regexp.Compile(sel.RegexMatch.Pattern)
				if err != nil || sel.RegexMatch.Pattern == "" {
					return nil, h.Errorf(obj, field+".selector.regexMatch.pattern", "Invalid value: %q: not a regular expression", sel.RegexMatch.Pattern)
				}
				for i, nm := range pool {
					if re.MatchString(nm) {
						match = append(match, i)
					}
				}
			default:
				s, err := metav1.LabelSelectorAsSelector(sel.LabelMatch)
				if err != nil {
					return nil, h.Errorf(obj, field+".selector.labelMatch", "Invalid value: %v", err)
				}
				for i := range c.Nodes {
					if s.Matches(labels.Set(c.Nodes[i].Obj.Labels)) {
						match = append(match, i)
					}
				}
			}
			if m.Type == objects.MemberNode {
				direct[hi] = append(direct[hi], match...)
			} else {
				children[hi] = append(children[hi], match...)
			}
		}
	}
	// Cycles: depth-first with colours.
	state := make([]int8, len(hns))
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		state[i] = 1
		stack = append(stack, i)
		for _, ch := range children[i] {
			if state[ch] == 1 {
				var path []string
				for k := len(stack) - 1; k >= 0; k-- {
					path = append([]string{hns[stack[k]].Name}, path...)
					if stack[k] == ch {
						break
					}
				}
				path = append(path, hns[ch].Name)
				return hns[i].Errorf(fmt.Sprintf("HyperNode %q", hns[i].Name), "spec.members", "Invalid value: HyperNode membership cycle %s", strings.Join(path, " -> "))
			}
			if state[ch] == 0 {
				if err := visit(ch); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = 2
		return nil
	}
	for i := range hns {
		if state[i] == 0 {
			if err := visit(i); err != nil {
				return nil, err
			}
		}
	}
	// Node sets, children first (the graph is acyclic).
	sets := make([][]int, len(hns))
	done := make([]bool, len(hns))
	var nodesOf func(i int) []int
	nodesOf = func(i int) []int {
		if done[i] {
			return sets[i]
		}
		all := append([]int(nil), direct[i]...)
		for _, ch := range children[i] {
			all = append(all, nodesOf(ch)...)
		}
		sort.Ints(all)
		out := all[:0]
		for k, v := range all {
			if k == 0 || v != all[k-1] {
				out = append(out, v)
			}
		}
		sets[i], done[i] = out, true
		return out
	}
	t.Domains = make([]Domain, len(hns))
	for i, h := range hns {
		lv := levelOf[h.Spec.Tier]
		t.Domains[i] = Domain{Level: lv, Name: h.Name, Parent: -1, Nodes: nodesOf(i)}
	}
	for i := range hns {
		for _, ch := range children[i] {
			if t.Domains[ch].Parent < 0 {
				t.Domains[ch].Parent = i
			}
			t.Domains[i].Children = append(t.Domains[i].Children, ch)
		}
	}
	order := make([]int, len(hns))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return hns[order[a]].Name < hns[order[b]].Name })
	for _, i := range order {
		lv := t.Domains[i].Level
		t.ByLevel[lv] = append(t.ByLevel[lv], i)
	}
	return t, nil
}
