package kubeletcfg

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/cpumanager"
	"github.com/gpunode/gpunode/internal/k8s/memorymanager"
	"github.com/gpunode/gpunode/internal/k8s/node"
	"github.com/gpunode/gpunode/internal/k8s/topology"
	"github.com/gpunode/gpunode/internal/output"
)

// Severity of a lint finding.
type Severity string

// Severities: an error stops kubelet from starting; a warning is a setting
// kubelet accepts but ignores or that silently defeats NUMA alignment; info
// is context.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Stages name where kubelet checks a rule.
const (
	StageValidation = "config validation"
	StageStartup    = "kubelet startup"
	StageCPU        = "cpu manager"
	StageMemory     = "memory manager"
	StageTopology   = "topology manager"
	StageAllocable  = "node allocatable"
)

// Finding is one lint result. Message is kubelet's own error text for
// errors.
type Finding struct {
	Severity Severity `json:"severity"`
	Field    string   `json:"field"`
	Stage    string   `json:"stage"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// Report is the output of 'gpunode k8s kubelet lint'.
type Report struct {
	SchemaVersion string    `json:"schemaVersion"`
	File          string    `json:"file"`
	Node          string    `json:"node,omitempty"`
	NodeChecked   bool      `json:"nodeChecked"`
	Findings      []Finding `json:"findings"`
}

// ReportSchema is Report's schemaVersion.
const ReportSchema = "gpunode.k8s.kubelet-lint/v1"

// Problems counts errors and warnings (info does not count).
func (r Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity != SeverityInfo {
			n++
		}
	}
	return n
}

// Errors counts the findings that stop kubelet.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// ListItems implements output.Lister: one row per finding.
func (r Report) ListItems() any { return r.Findings }

// WriteTable prints the findings for humans, errors first.
func (r Report) WriteTable(w io.Writer, o output.Options) error {
	g := output.NewGrid("SEVERITY", "FIELD", "STAGE", "MESSAGE")
	g.Columns[1].Wrap, g.Columns[3].Wrap = true, true
	g.Columns[0].Color = func(s string) string {
		switch Severity(s) {
		case SeverityError:
			return "red"
		case SeverityWarning:
			return "yellow"
		}
		return ""
	}
	fs := slices.Clone(r.Findings)
	rank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	slices.SortStableFunc(fs, func(a, b Finding) int { return rank[a.Severity] - rank[b.Severity] })
	for _, f := range fs {
		g.AddRow(string(f.Severity), f.Field, f.Stage, f.Message)
		if f.Fix != "" {
			g.AddRow("", "", "", "fix: "+f.Fix)
		}
	}
	if len(r.Findings) > 0 {
		if err := output.Print(w, g, o); err != nil {
			return err
		}
	}
	if o.NoHeaders {
		return nil
	}
	scope := "without a node model (use --node for NUMA, CPU and capacity rules)"
	if r.NodeChecked {
		scope = "against node " + r.Node
	}
	sep := "\n"
	if len(r.Findings) == 0 {
		sep = ""
	}
	_, err := fmt.Fprintf(w, "%s%s: %d error(s), %d warning(s), checked %s\n", sep, r.File, r.Errors(), r.Problems()-r.Errors(), scope)
	return err
}

type linter struct {
	c    *Config
	kc   *KubeletConfiguration
	n    *node.Node
	out  []Finding
	gate map[string]bool
}

func (l *linter) add(sev Severity, field, stage, fix, format string, args ...any) {
	l.out = append(l.out, Finding{Severity: sev, Field: field, Stage: stage, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// Lint checks c against kubelet v1.37.2's rules; n (may be nil) enables the
// rules that need the machine.
func Lint(c *Config, n *node.Node) Report {
	l := &linter{c: c, kc: &c.KC, n: n, gate: featureGates(c.KC.FeatureGates)}
	l.validation()
	kubeReserved, systemReserved := l.reservations()
	nar := l.allocatableReservation(kubeReserved, systemReserved)
	l.topologyManager()
	l.cpuManager(nar)
	l.memoryManager(nar)
	l.nodeAllocatable(nar)
	l.alignment()
	r := Report{SchemaVersion: ReportSchema, File: c.Name, NodeChecked: n != nil, Findings: l.out}
	if n != nil {
		r.Node = n.Name
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	return r
}

// featureGates returns the gates the Topology Manager reads, with v1.37
// defaults (the CPU Manager's come from cpumanager.GatesFrom).
func featureGates(set map[string]bool) map[string]bool {
	g := map[string]bool{
		"TopologyManagerPolicyAlphaOptions": false,
		"TopologyManagerPolicyBetaOptions":  true,
	}
	for k, v := range set {
		g[k] = v
	}
	return g
}

// validation mirrors the resource-manager part of
// pkg/kubelet/apis/config/validation.ValidateKubeletConfiguration.
func (l *linter) validation() {
	kc := l.kc
	switch kc.TopologyManagerPolicy {
	case topology.PolicyNone, topology.PolicyBestEffort, topology.PolicyRestricted, topology.PolicySingleNUMANode:
	default:
		l.add(SeverityError, "topologyManagerPolicy", StageValidation, "use one of "+strings.Join(topology.Policies(), ", "),
			"invalid configuration: topologyManagerPolicy (--topology-manager-policy) %q must be one of: %q", kc.TopologyManagerPolicy, topology.Policies())
	}
	switch kc.TopologyManagerScope {
	case topology.ScopeContainer, topology.ScopePod:
	default:
		l.add(SeverityError, "topologyManagerScope", StageValidation, "use container or pod",
			"invalid configuration: topologyManagerScope (--topology-manager-scope) %q must be one of: %q, or %q", kc.TopologyManagerScope, topology.ScopeContainer, topology.ScopePod)
	}
	if kc.ReservedSystemCPUs != "" {
		if kc.SystemReservedCgroup != "" || kc.KubeReservedCgroup != "" {
			l.add(SeverityError, "reservedSystemCPUs", StageValidation, "drop systemReservedCgroup/kubeReservedCgroup or reservedSystemCPUs",
				"invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
		}
		if _, err := cpuset.Parse(kc.ReservedSystemCPUs); err != nil {
			l.add(SeverityError, "reservedSystemCPUs", StageValidation, `write a CPU list like "0,1,64,65"`,
				"invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) %v, error: %v", kc.ReservedSystemCPUs, err)
		}
	}
	dup := map[int32]map[v1.ResourceName]bool{}
	for i, rm := range kc.ReservedMemory {
		if dup[rm.NumaNode] == nil {
			dup[rm.NumaNode] = map[v1.ResourceName]bool{}
		}
		for _, name := range slices.Sorted(maps.Keys(rm.Limits)) {
			q := rm.Limits[name]
			field := fmt.Sprintf("reservedMemory[%d].limits.%s", i, name)
			if !memorymanager.IsHugePageResourceName(name) && name != v1.ResourceMemory {
				l.add(SeverityError, field, StageValidation, "only memory and hugepages-<size> can be reserved per NUMA node",
					"invalid configuration: the limit type %q for NUMA node %d is not supported, only %v is accepted", name, rm.NumaNode, []v1.ResourceName{v1.ResourceMemory, v1.ResourceHugePagesPrefix + "<HugePageSize>"})
			}
			if q.IsZero() {
				l.add(SeverityError, field, StageValidation, "remove the entry instead of reserving zero",
					"invalid configuration: reserved memory may not be zero for NUMA node %d and resource %q", rm.NumaNode, name)
			}
			if dup[rm.NumaNode][name] {
				l.add(SeverityError, field, StageValidation, "merge the entries for this NUMA node",
					"invalid configuration: the reserved memory has a duplicate value for NUMA node %d and resource %q", rm.NumaNode, name)
			}
			dup[rm.NumaNode][name] = true
		}
	}
}

// reservations mirrors cmd/kubelet/app/server.go: reservedSystemCPUs
// overrides the CPU reservations, then kubeReserved and systemReserved are
// parsed (ParseReserved).
func (l *linter) reservations() (kube, system v1.ResourceList) {
	kc := l.kc
	kr := maps.Clone(kc.KubeReserved)
	sr := maps.Clone(kc.SystemReserved)
	if kc.ReservedSystemCPUs != "" {
		if set, err := cpuset.Parse(kc.ReservedSystemCPUs); err == nil && set.Size() > 0 {
			if l.n != nil {
				all := l.n.AllCPUs()
				if !set.IsSubsetOf(all) {
					l.add(SeverityError, "reservedSystemCPUs", StageStartup, "reserve CPUs that exist on the node: "+all.String(),
						"reserved-cpus: %s is not a subset of online-cpus: %s", kc.ReservedSystemCPUs, all.String())
				}
			}
			if kc.KubeReserved["cpu"] != "" || kc.SystemReserved["cpu"] != "" {
				l.add(SeverityInfo, "reservedSystemCPUs", StageStartup, "drop kubeReserved.cpu and systemReserved.cpu",
					"reservedSystemCPUs (%d CPUs) overwrites kubeReserved.cpu (%q) and systemReserved.cpu (%q)", set.Size(), kc.KubeReserved["cpu"], kc.SystemReserved["cpu"])
			}
			delete(kr, "cpu")
			if sr == nil {
				sr = map[string]string{}
			}
			sr["cpu"] = strconv.Itoa(set.Size())
		}
	}
	var err error
	if kube, err = ParseReserved(kr); err != nil {
		l.add(SeverityError, "kubeReserved", StageStartup, "", quoteKubeReservedFailed, err)
	}
	if system, err = ParseReserved(sr); err != nil {
		l.add(SeverityError, "systemReserved", StageStartup, "", quoteSystemReservedFailed, err)
	}
	return kube, system
}

// ParseReserved reads a kubeReserved or systemReserved map the way kubelet
// does at startup. Only cpu, memory, ephemeral-storage and pid may be
// reserved; each value must be a non-negative quantity, and cpu is rounded
// half up to whole millicores. An empty map gives a nil list. Entries are
// checked in key order, so of several bad entries the first by name is the
// one reported (kubelet reports whichever its map walk meets first).
func ParseReserved(entries map[string]string) (v1.ResourceList, error) {
	names := make([]v1.ResourceName, 0, len(entries))
	for k := range entries {
		names = append(names, v1.ResourceName(k))
	}
	slices.Sort(names)
	out := make(v1.ResourceList, len(names))
	var first error
	for _, name := range names {
		q, bad := reservedQuantity(name, entries[string(name)])
		first = cmp.Or(first, bad)
		out[name] = q
	}
	switch {
	case first != nil:
		return nil, first
	case len(out) == 0:
		return nil, nil
	}
	return out, nil
}

// reservedQuantity checks one entry (name first, then the quantity's syntax,
// then its sign) and returns the quantity kubelet keeps.
func reservedQuantity(name v1.ResourceName, text string) (resource.Quantity, error) {
	var bad error
	q, syntax := resource.ParseQuantity(text)
	switch {
	case name != v1.ResourceCPU && name != v1.ResourceMemory && name != v1.ResourceEphemeralStorage && name != "pid":
		bad = fmt.Errorf(quoteReserveUnknown, name)
	case syntax != nil:
		bad = fmt.Errorf(quoteReserveBadQuantity, text, name, syntax)
	case q.Sign() < 0:
		bad = fmt.Errorf(quoteReserveNegative, name, text)
	case name == v1.ResourceCPU:
		q = wholeMillicores(q)
	}
	return q, bad
}

// wholeMillicores rounds half up to 1m, in int64 micro-units like kubelet
// (so an absurdly large value wraps the same way), keeping the format.
func wholeMillicores(q resource.Quantity) resource.Quantity {
	return *resource.NewMilliQuantity((q.ScaledValue(resource.Micro)+500)/1000, q.Format)
}

// validSignal reports kubelet's eviction signals (eviction/helpers.go).
func validSignal(s string) bool {
	switch s {
	case "memory.available", "allocatableMemory.available",
		"imagefs.available", "imagefs.inodesFree",
		"containerfs.available", "containerfs.inodesFree",
		"nodefs.available", "nodefs.inodesFree", "pid.available":
		return true
	}
	return false
}

// memoryCapacity is the node's memory capacity as cAdvisor reports it.
func (l *linter) memoryCapacity() (resource.Quantity, bool) {
	if l.n == nil {
		return resource.Quantity{}, false
	}
	return *resource.NewQuantity(int64(l.n.MemoryBytes()), resource.BinarySI), true
}

// evictionMemory parses evictionHard like eviction.ParseThresholdConfig and
// returns the memory.available reservation (hardEvictionReservation).
func (l *linter) evictionMemory() (*resource.Quantity, bool) {
	var mem *resource.Quantity
	ok := true
	for _, sig := range slices.Sorted(maps.Keys(l.kc.EvictionHard)) {
		val := l.kc.EvictionHard[sig]
		field := "evictionHard." + sig
		if !validSignal(sig) {
			l.add(SeverityError, field, StageStartup, "", "unsupported eviction signal %v", sig)
			ok = false
			continue
		}
		if strings.HasSuffix(val, "%") {
			if val == "0%" || val == "100%" {
				continue
			}
			p, err := strconv.ParseFloat(strings.TrimRight(val, "%"), 32)
			if err != nil {
				l.add(SeverityError, field, StageStartup, "", "%v", err)
				ok = false
				continue
			}
			pct := float32(p) / 100 // kubelet's parsePercentage
			if pct < 0 {
				l.add(SeverityError, field, StageStartup, "", "eviction percentage threshold %v must be >= 0%%: %s", sig, val)
				ok = false
				continue
			}
			if pct > 1 {
				l.add(SeverityError, field, StageStartup, "", "eviction percentage threshold %v must be <= 100%%: %s", sig, val)
				ok = false
				continue
			}
			if sig == "memory.available" {
				capq, known := l.memoryCapacity()
				if !known {
					l.add(SeverityInfo, field, StageAllocable, "pass --node to check reservedMemory against it",
						"memory.available=%s depends on the node's memory capacity", val)
					ok = false
					continue
				}
				mem = resource.NewQuantity(int64(float64(capq.Value())*float64(pct)), resource.BinarySI)
			}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			l.add(SeverityError, field, StageStartup, "", "%v", err)
			ok = false
			continue
		}
		if q.Sign() < 0 || q.IsZero() {
			l.add(SeverityError, field, StageStartup, "", "eviction threshold %v must be positive: %s", sig, &q)
			ok = false
			continue
		}
		if sig == "memory.available" {
			mem = &q
		}
	}
	if !l.c.EvictionHardDefaulted && l.kc.EvictionHard["memory.available"] == "" {
		l.add(SeverityWarning, "evictionHard", StageStartup, `add memory.available (e.g. "500Mi") or set mergeDefaultEvictionSettings: true`,
			"evictionHard is set without memory.available and mergeDefaultEvictionSettings is off: kubelet never evicts on memory pressure and reserves no memory for it")
	}
	return mem, ok
}

// allocatableReservation mirrors GetNodeAllocatableReservation for cpu and
// memory: systemReserved + kubeReserved + hard eviction, zero values
// dropped. The bool in the result map tells whether the value is known.
type reservation struct {
	list  v1.ResourceList
	known bool // false when a part could not be computed
}

// NodeAllocatableReservation returns what kubelet's
// GetNodeAllocatableReservation hands the CPU and Memory Managers for c on
// n (n may be nil): systemReserved + kubeReserved (after reservedSystemCPUs
// overrides their cpu) + the memory.available hard-eviction threshold, for
// cpu, memory and ephemeral-storage, zero values dropped. ok is false when it
// cannot be computed (a value does not parse, or memory.available is a
// percentage and n is nil); Reservation says why.
func NodeAllocatableReservation(c *Config, n *node.Node) (list v1.ResourceList, ok bool) {
	list, err := Reservation(c, n)
	return list, err == nil
}

// Reservation is NodeAllocatableReservation with the reason it cannot be
// computed: kubelet's start-up error for the field, or the missing node.
func Reservation(c *Config, n *node.Node) (v1.ResourceList, error) {
	l := &linter{c: c, kc: &c.KC, n: n, gate: featureGates(c.KC.FeatureGates)}
	kube, system := l.reservations()
	r := l.allocatableReservation(kube, system)
	for k := range r.list {
		if k != v1.ResourceCPU && k != v1.ResourceMemory && k != v1.ResourceEphemeralStorage {
			delete(r.list, k)
		}
	}
	for _, f := range l.out {
		if f.Severity == SeverityError {
			return r.list, fmt.Errorf("%s: %s", f.Field, f.Message)
		}
	}
	if !r.known {
		return r.list, fmt.Errorf("evictionHard.memory.available: %s is a percentage of the node's memory: a node is needed", c.KC.EvictionHard["memory.available"])
	}
	return r.list, nil
}

func (l *linter) allocatableReservation(kube, system v1.ResourceList) reservation {
	evict, ok := l.evictionMemory()
	r := reservation{list: v1.ResourceList{}, known: ok}
	keys := map[v1.ResourceName]bool{v1.ResourceCPU: true, v1.ResourceMemory: true}
	for k := range kube {
		keys[k] = true
	}
	for k := range system {
		keys[k] = true
	}
	for k := range keys {
		value := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := system[k]; ok {
			value.Add(q)
		}
		if q, ok := kube[k]; ok {
			value.Add(q)
		}
		if k == v1.ResourceMemory && evict != nil {
			value.Add(*evict)
		}
		if !value.IsZero() {
			r.list[k] = *value
		}
	}
	return r
}

// topologyManager mirrors topologymanager.NewManager.
func (l *linter) topologyManager() {
	kc := l.kc
	opts := kc.TopologyManagerPolicyOptions
	if kc.TopologyManagerPolicy == topology.PolicyNone {
		if len(opts) > 0 {
			l.add(SeverityWarning, "topologyManagerPolicyOptions", StageTopology, "set topologyManagerPolicy or drop the options",
				"topologyManagerPolicyOptions %v are ignored with topologyManagerPolicy none", opts)
		}
		if l.n != nil && len(l.n.NUMANodes) > topology.DefaultMaxAllowableNUMANodes {
			l.add(SeverityInfo, "topologyManagerPolicy", StageTopology, "",
				"the node has %d NUMA nodes: any policy other than none also needs %s >= %d", len(l.n.NUMANodes), topology.OptionMaxAllowableNUMANodes, len(l.n.NUMANodes))
		}
		return
	}
	o := topology.Options{MaxAllowableNUMANodes: topology.DefaultMaxAllowableNUMANodes}
	optsOK := true
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		if err := topology.CheckOptionAvailable(name, l.gate); err != nil {
			l.add(SeverityError, "topologyManagerPolicyOptions."+name, StageTopology, "", "%v", err)
			optsOK = false
			continue
		}
		one, err := topology.ParseOptions(map[string]string{name: opts[name]})
		if err != nil {
			l.add(SeverityError, "topologyManagerPolicyOptions."+name, StageTopology, "", "%v", err)
			optsOK = false
			continue
		}
		switch name {
		case topology.OptionPreferClosestNUMANodes:
			o.PreferClosestNUMA = one.PreferClosestNUMA
		case topology.OptionMaxAllowableNUMANodes:
			o.MaxAllowableNUMANodes = one.MaxAllowableNUMANodes
			if o.MaxAllowableNUMANodes > topology.DefaultMaxAllowableNUMANodes {
				l.add(SeverityInfo, "topologyManagerPolicyOptions."+name, StageTopology, "",
					"WARNING: the value of max-allowable-numa-nodes is more than the default recommended value (%d > %d): gpunode's merge stays fast, kubelet's may take minutes per pod", o.MaxAllowableNUMANodes, topology.DefaultMaxAllowableNUMANodes)
			}
		}
	}
	if l.n == nil || !optsOK {
		return
	}
	if o.PreferClosestNUMA && !l.n.HasDistances() {
		l.add(SeverityError, "topologyManagerPolicyOptions."+topology.OptionPreferClosestNUMANodes, StageTopology, "the node reports no NUMA distances; drop the option",
			"cannot discover NUMA topology: error getting NUMA distances from cadvisor")
	}
	if len(l.n.NUMANodes) > o.MaxAllowableNUMANodes {
		l.add(SeverityError, "topologyManagerPolicyOptions."+topology.OptionMaxAllowableNUMANodes, StageTopology,
			fmt.Sprintf("set topologyManagerPolicyOptions.%s: %q", topology.OptionMaxAllowableNUMANodes, strconv.Itoa(len(l.n.NUMANodes))),
			"unsupported on machines with more than %v NUMA Nodes", o.MaxAllowableNUMANodes)
	}
}

// cpuManager mirrors cpumanager.NewManager / NewStaticPolicy.
func (l *linter) cpuManager(nar reservation) {
	kc := l.kc
	switch kc.CPUManagerPolicy {
	case CPUPolicyNone:
		if len(kc.CPUManagerPolicyOptions) > 0 {
			l.add(SeverityError, "cpuManagerPolicyOptions", StageCPU, "drop the options or use cpuManagerPolicy: static",
				"new none policy error: None policy: received unsupported options=%v", kc.CPUManagerPolicyOptions)
		}
		return
	case CPUPolicyStatic:
	default:
		l.add(SeverityError, "cpuManagerPolicy", StageCPU, "use none or static", "unknown policy: \"%s\"", kc.CPUManagerPolicy)
		return
	}
	reserved, ok := nar.list[v1.ResourceCPU]
	if !ok {
		l.add(SeverityError, "kubeReserved.cpu", StageCPU, "reserve CPUs with reservedSystemCPUs (whole cores) or kubeReserved/systemReserved cpu",
			"[cpumanager] unable to determine reserved CPU resources for static policy")
		return
	}
	numReserved := int(math.Ceil(float64(reserved.MilliValue()) / 1000))
	// NewStaticPolicyOptions: options in name order (kubelet: map order).
	opts := map[string]bool{}
	gates := cpumanager.GatesFrom(kc.FeatureGates)
	for _, name := range slices.Sorted(maps.Keys(kc.CPUManagerPolicyOptions)) {
		field := "cpuManagerPolicyOptions." + name
		if err := cpumanager.CheckPolicyOptionAvailable(name, gates); err != nil {
			fix := ""
			switch cpumanager.OptionMaturity(name) {
			case cpumanager.Alpha:
				fix = "set featureGates.CPUManagerPolicyAlphaOptions: true"
			case cpumanager.Beta:
				fix = "set featureGates.CPUManagerPolicyBetaOptions: true"
			}
			l.add(SeverityError, field, StageCPU, fix, "new static policy error: %v", err)
			continue
		}
		v, err := strconv.ParseBool(kc.CPUManagerPolicyOptions[name])
		if err != nil {
			l.add(SeverityError, field, StageCPU, "", "new static policy error: bad value for option %q: %v", name, err)
			continue
		}
		opts[name] = v
	}
	for _, pair := range [][2]string{
		{cpumanager.FullPCPUsOnlyOption, cpumanager.DistributeCPUsAcrossCoresOption},
		{cpumanager.DistributeCPUsAcrossNUMAOption, cpumanager.DistributeCPUsAcrossCoresOption},
		{cpumanager.PreferAlignByUnCoreCacheOption, cpumanager.DistributeCPUsAcrossCoresOption},
		{cpumanager.PreferAlignByUnCoreCacheOption, cpumanager.DistributeCPUsAcrossNUMAOption},
	} {
		if opts[pair[0]] && opts[pair[1]] {
			l.add(SeverityError, "cpuManagerPolicyOptions", StageCPU, "drop one of the two options",
				"new static policy error: static policy options %s and %s can not be used at the same time", pair[0], pair[1])
		}
	}
	if opts[cpumanager.AlignBySocketOption] {
		if kc.TopologyManagerPolicy == topology.PolicySingleNUMANode {
			l.add(SeverityError, "cpuManagerPolicyOptions."+cpumanager.AlignBySocketOption, StageCPU, "",
				"new static policy error: Topolgy manager %s policy is incompatible with CPUManager %s policy option", topology.PolicySingleNUMANode, cpumanager.AlignBySocketOption)
		}
		// kubelet compares with the NUMA nodes that have CPUs (CPUTopology.NumNUMANodes).
		if l.n != nil && l.sockets() > l.cpuNUMANodes() {
			l.add(SeverityError, "cpuManagerPolicyOptions."+cpumanager.AlignBySocketOption, StageCPU, "",
				"new static policy error: Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
		}
	}
	if l.n == nil {
		return
	}
	all := l.n.AllCPUs()
	var set cpuset.CPUSet
	if kc.ReservedSystemCPUs != "" {
		set, _ = cpuset.Parse(kc.ReservedSystemCPUs)
	}
	if set.Size() == 0 && numReserved > all.Size() {
		// takeByTopology fails and kubelet prints the empty set it got back.
		l.add(SeverityError, "kubeReserved.cpu", StageCPU, fmt.Sprintf("the node has %d CPUs", all.Size()),
			"new static policy error: [cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", "", numReserved)
	}
	if set.Size() > 0 && set.IsSubsetOf(all) {
		split := l.splitCores(set)
		if !split.IsEmpty() {
			msg := "reservedSystemCPUs %s holds only part of the cores of CPUs %s: "
			if opts[cpumanager.FullPCPUsOnlyOption] {
				msg += "with full-pcpus-only their siblings are never given to exclusive containers (lost capacity)"
			} else {
				msg += "exclusive containers can get their siblings and share those cores with system daemons"
			}
			l.add(SeverityWarning, "reservedSystemCPUs", StageCPU, "reserve whole cores (all SMT siblings)", msg, set.String(), split.String())
		}
	}
}

// sockets counts the node's sockets.
func (l *linter) sockets() int {
	s := map[int]bool{}
	for _, c := range l.n.CPUs {
		s[c.Socket] = true
	}
	return len(s)
}

// cpuNUMANodes counts the NUMA nodes with CPUs.
func (l *linter) cpuNUMANodes() int {
	s := map[int]bool{}
	for _, c := range l.n.CPUs {
		s[c.NUMANode] = true
	}
	return len(s)
}

// splitCores returns the CPUs outside set whose core has a CPU in set.
func (l *linter) splitCores(set cpuset.CPUSet) cpuset.CPUSet {
	cores := map[int]bool{}
	for _, c := range l.n.CPUs {
		if set.Contains(c.ID) {
			cores[c.Core] = true
		}
	}
	var out []int
	for _, c := range l.n.CPUs {
		if cores[c.Core] && !set.Contains(c.ID) {
			out = append(out, c.ID)
		}
	}
	return cpuset.New(out...)
}

// memoryManager mirrors memorymanager.NewManager / NewPolicyStatic.
func (l *linter) memoryManager(nar reservation) {
	kc := l.kc
	switch kc.MemoryManagerPolicy {
	case MemoryPolicyNone:
		if len(kc.ReservedMemory) > 0 {
			l.add(SeverityWarning, "reservedMemory", StageMemory, "set memoryManagerPolicy: Static or drop reservedMemory",
				"reservedMemory is ignored with memoryManagerPolicy None")
		}
		return
	case MemoryPolicyStatic:
	default:
		l.add(SeverityError, "memoryManagerPolicy", StageMemory, "use None or Static (case matters)", "unknown policy: %q", kc.MemoryManagerPolicy)
		return
	}
	// getTotalMemoryTypeReserved
	total := map[v1.ResourceName]*resource.Quantity{}
	perNode := map[int32]map[v1.ResourceName]int64{}
	for i, rm := range kc.ReservedMemory {
		if l.n != nil && l.n.NUMA(int(rm.NumaNode)) == nil {
			l.add(SeverityError, fmt.Sprintf("reservedMemory[%d].numaNode", i), StageMemory, "the node has NUMA nodes "+fmt.Sprint(l.n.NUMAIDs()),
				"the reserved memory configuration references a NUMA node %d that does not exist on this machine", rm.NumaNode)
			// kubelet stops here; lint goes on to report the other rules too.
		}
		if perNode[rm.NumaNode] == nil {
			perNode[rm.NumaNode] = map[v1.ResourceName]int64{}
		}
		for _, name := range slices.Sorted(maps.Keys(rm.Limits)) {
			q := rm.Limits[name]
			if t, ok := total[name]; ok {
				q.Add(*t)
			}
			qq := q.DeepCopy()
			total[name] = &qq
			orig := rm.Limits[name]
			perNode[rm.NumaNode][name] += orig.Value()
		}
	}
	if !nar.known {
		l.add(SeverityInfo, "reservedMemory", StageMemory, "", "the reservedMemory sum could not be checked (see the other findings)")
	} else {
		common := map[v1.ResourceName]bool{}
		for k := range total {
			common[k] = true
		}
		for k := range nar.list {
			if memorymanager.IsHugePageResourceName(k) || k == v1.ResourceMemory {
				common[k] = true
			}
		}
		names := make([]v1.ResourceName, 0, len(common))
		for k := range common {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
		for _, k := range names {
			alloc := resource.NewQuantity(0, resource.DecimalSI)
			if v, ok := nar.list[k]; ok {
				alloc.Add(v)
			}
			res := resource.NewQuantity(0, resource.DecimalSI)
			if v, ok := total[k]; ok {
				res.Add(*v)
			}
			if !alloc.Equal(*res) {
				fix := fmt.Sprintf("make the %s entries of reservedMemory sum to %s (kubeReserved + systemReserved + evictionHard memory.available), e.g. with 'gpunode k8s kubelet recommend'", k, alloc.String())
				if memorymanager.IsHugePageResourceName(k) {
					fix = "kubelet cannot reserve hugepages through kubeReserved/systemReserved, so reservedMemory must not list " + string(k)
				}
				l.add(SeverityError, "reservedMemory", StageMemory, fix,
					"the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", res.String(), k, alloc.String())
			}
		}
	}
	var sysMem int64
	for _, m := range perNode {
		sysMem += m[v1.ResourceMemory]
	}
	if sysMem <= 0 {
		l.add(SeverityError, "reservedMemory", StageMemory, "reserve memory on at least one NUMA node (it must equal kubeReserved + systemReserved + evictionHard memory)",
			"[memorymanager] you should specify the system reserved memory")
	}
	if l.n != nil {
		for _, id := range slices.Sorted(maps.Keys(perNode)) {
			nn := l.n.NUMA(int(id))
			if v := perNode[id][v1.ResourceMemory]; nn != nil && v > 0 && uint64(v) >= nn.MemoryBytes {
				l.add(SeverityWarning, "reservedMemory", StageMemory, "spread the reservation over NUMA nodes with memory",
					"reservedMemory reserves %s on NUMA node %d which has only %s: no Guaranteed pod can get memory there",
					resource.NewQuantity(v, resource.BinarySI), id, resource.NewQuantity(int64(nn.MemoryBytes), resource.BinarySI))
			}
		}
	}
}

// nodeAllocatable mirrors containerManagerImpl.validateNodeAllocatable.
func (l *linter) nodeAllocatable(nar reservation) {
	if l.n == nil {
		return
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU: *resource.NewQuantity(int64(len(l.n.CPUs)), resource.DecimalSI),
	}
	if m, ok := l.memoryCapacity(); ok {
		capacity[v1.ResourceMemory] = m
	}
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(nar.list)) {
		c, ok := capacity[k]
		if !ok {
			continue
		}
		v := nar.list[k]
		value := c.DeepCopy()
		value.Sub(v)
		if value.Sign() < 0 {
			errs = append(errs, fmt.Sprintf("Resource %q has a reservation of %v but capacity of %v. Expected capacity >= reservation.", k, &v, &c))
		}
	}
	if len(errs) > 0 {
		l.add(SeverityError, "kubeReserved", StageAllocable, "", "invalid Node Allocatable configuration. %s", strings.Join(errs, " "))
	}
}

// alignment reports combinations kubelet accepts that quietly give up NUMA
// alignment.
func (l *linter) alignment() {
	kc := l.kc
	if kc.TopologyManagerPolicy == topology.PolicyNone && (kc.CPUManagerPolicy == CPUPolicyStatic || kc.MemoryManagerPolicy == MemoryPolicyStatic) {
		l.add(SeverityWarning, "topologyManagerPolicy", StageTopology, "set topologyManagerPolicy: restricted (or single-numa-node)",
			"topologyManagerPolicy none: the CPU, memory and device managers allocate independently, so a Guaranteed pod's CPUs, memory and GPUs may land on different NUMA nodes")
	}
	if kc.TopologyManagerPolicy != topology.PolicyNone && kc.CPUManagerPolicy != CPUPolicyStatic && kc.MemoryManagerPolicy != MemoryPolicyStatic {
		l.add(SeverityInfo, "cpuManagerPolicy", StageTopology, "set cpuManagerPolicy: static and memoryManagerPolicy: Static",
			"topologyManagerPolicy %s with cpuManagerPolicy none and memoryManagerPolicy None only aligns devices with each other", kc.TopologyManagerPolicy)
	}
}
