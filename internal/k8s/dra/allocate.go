package dra

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// SchedulerFilterTimeout is kube-scheduler's DRA filter timeout
// (DRASchedulerFilterTimeout, default 10 s): an Allocate that takes longer
// is abandoned and the pod retried with backoff.
const SchedulerFilterTimeout = 10 * time.Second

// Features are the allocator features of kube-scheduler v1.37 with its
// default feature gates.
var defaultFeatures = structured.Features{
	AdminAccess:             true,
	PrioritizedList:         true,
	PartitionableDevices:    true,
	DeviceTaints:            true,
	DeviceBindingAndStatus:  true,
	ConsumableCapacity:      true,
	FractionalCapacityRange: true,
}

// Features returns the allocator features Run uses (v1.37 defaults).
func Features() structured.Features { return defaultFeatures }

// DefaultTimeout bounds one node's decision unless Options.Timeout says
// otherwise: half the scheduler's filter timeout.
const DefaultTimeout = 5 * time.Second

// Solver selects who decides.
type Solver string

const (
	// SolverAuto: gpunode's search decides; the upstream allocator runs
	// only where the search cannot (features it does not model, an
	// allocator error to report, its node budget spent).
	SolverAuto Solver = ""
	// SolverGpunode uses only gpunode's exact search (tests, conformance).
	SolverGpunode Solver = "gpunode"
	// SolverUpstream uses only the upstream allocator (up to UpstreamLimit).
	SolverUpstream Solver = "upstream"
)

// Options tune Run.
type Options struct {
	Solver Solver
	// Timeout is the wall-clock bound of each node's decision, the
	// explanation included (default DefaultTimeout; at most
	// SchedulerFilterTimeout, the scheduler's own bound). Past it the node
	// is undecided, naming what was left.
	Timeout time.Duration
	// UpstreamLimit bounds the upstream allocator further (default: the
	// node's Timeout).
	UpstreamLimit time.Duration
	// SearchBudget bounds gpunode's search in nodes (default 5,000,000).
	SearchBudget int
	// Explain adds explanations for nodes that fit too, and nearest fits.
	Explain bool
}

// ErrTimeoutRange: a Timeout outside (0, SchedulerFilterTimeout].
var ErrTimeoutRange = fmt.Errorf("the timeout must be above 0 and at most %s (kube-scheduler's DRA filter timeout)", SchedulerFilterTimeout)

func (o Options) withDefaults() (Options, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 || o.Timeout > SchedulerFilterTimeout {
		return o, fmt.Errorf("timeout %s: %w", o.Timeout, ErrTimeoutRange)
	}
	if o.UpstreamLimit == 0 || o.UpstreamLimit > o.Timeout {
		o.UpstreamLimit = o.Timeout
	}
	if o.SearchBudget == 0 {
		o.SearchBudget = 5_000_000
	}
	return o, nil
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("device class %s not found", name)
}

// AllocatedState is the upstream allocator's view of --allocated.
func (in *Input) AllocatedState() structured.AllocatedState {
	if in.State != nil {
		return *in.State
	}
	st := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, c := range in.Allocated {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID != nil {
				st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					st.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			st.AllocatedDevices.Insert(id)
		}
	}
	return st
}

// upstreamResult is one upstream Allocate.
type upstreamResult struct {
	results []resourceapi.AllocationResult
	err     error
	elapsed time.Duration
}

// RunUpstream runs the upstream allocator once for node under ctx.
func (in *Input) RunUpstream(ctx context.Context, node *corev1.Node) ([]resourceapi.AllocationResult, error) {
	in.init()
	f := defaultFeatures
	if in.FeatureSet != nil {
		f = *in.FeatureSet
	}
	a, err := structured.NewAllocator(ctx, f, in.AllocatedState(), classLister(in.classes), in.Slices, in.celCache())
	if err != nil {
		return nil, err
	}
	claims := make([]*resourceapi.ResourceClaim, len(in.Claims))
	for i, c := range in.Claims {
		claims[i] = c.DeepCopy()
	}
	return a.Allocate(ctx, node, claims)
}

// Run decides every node of in, each within o.Timeout.
func Run(ctx context.Context, in *Input, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	if err := Validate(in); err != nil {
		return nil, err
	}
	rep := &Report{SchemaVersion: SchemaAllocate}
	nodes := in.NodeObjects
	if len(nodes) == 0 {
		for _, name := range in.NodeNames() {
			nodes = append(nodes, NodeObject(name))
		}
	}
	for _, node := range nodes {
		nr, err := runNode(ctx, in, node, o)
		if err != nil {
			return nil, err
		}
		rep.Nodes = append(rep.Nodes, *nr)
		if nr.Fits {
			rep.Fits = true
		}
		if nr.Undecided {
			rep.Undecided = true
		}
	}
	return rep, nil
}

// runNode decides one node within o.Timeout: gpunode's search first; the
// upstream allocator only where the search cannot decide.
func runNode(parent context.Context, in *Input, node *corev1.Node, o Options) (*NodeReport, error) {
	nr := &NodeReport{Node: node.Name, Allocations: []ClaimAllocation{}}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	upstream := func(note string, p *problem, s *searcher) error {
		upCtx, cancelUp := context.WithTimeout(ctx, o.UpstreamLimit)
		defer cancelUp()
		t := time.Now()
		res, err := in.RunUpstream(upCtx, node)
		r := upstreamResult{results: res, err: err, elapsed: time.Since(t)}
		if parent.Err() != nil {
			return parent.Err()
		}
		if err := nr.fromUpstream(ctx, in, r, o, withProblem(p, s)); err != nil {
			return err
		}
		if note != "" {
			if nr.Explain == nil {
				nr.Explain = &Explain{Solver: "upstream"}
			}
			nr.Explain.Note = note
		}
		if nr.Undecided {
			limit := o.UpstreamLimit
			if ctx.Err() != nil {
				limit = o.Timeout
			}
			nr.undecided(o, limit, time.Since(begin), "", s, true)
		}
		return nil
	}
	if o.Solver == SolverUpstream {
		return nr, upstream("", nil, nil)
	}
	p, perr := buildProblem(ctx, in, node)
	if perr != nil && parent.Err() != nil {
		return nil, parent.Err()
	}
	if perr != nil && ctx.Err() != nil {
		nr.undecided(o, o.Timeout, time.Since(begin), "building the problem (CEL selectors over every device)", nil, false)
		return nr, nil
	}
	var sol []pick
	var serr error
	var s *searcher
	if perr == nil {
		if p.unsupported != "" && o.Solver != SolverGpunode {
			serr = fmt.Errorf("not modelled by gpunode's search: %s", p.unsupported)
		} else {
			s = newSearcher(ctx, p, o.SearchBudget)
			sol, serr = s.solve()
		}
	}
	searchTime := time.Since(begin)
	if parent.Err() != nil {
		return nil, parent.Err()
	}
	if serr != nil && ctx.Err() != nil {
		nr.undecided(o, o.Timeout, searchTime, "", s, false)
		return nr, nil
	}
	if o.Solver == SolverGpunode {
		if perr != nil {
			nr.Fits = false
			nr.Explain = &Explain{Solver: "gpunode", Reason: perr.Error()}
			return nr, nil
		}
		if serr != nil {
			return nil, fmt.Errorf("node %s: %w", node.Name, serr)
		}
		nr.fromSolution(p, sol)
		if !nr.Fits || o.Explain {
			nr.Explain = explain(ctx, in, p, s, o, !nr.Fits)
			nr.Explain.Solver = "gpunode"
		}
		return nr, nil
	}
	switch {
	case perr == nil && serr == nil && sol == nil:
		nr.Fits = false
		nr.Explain = explain(ctx, in, p, s, o, true)
		nr.Explain.Solver = "gpunode"
		nr.Explain.Upstream = fmt.Sprintf("gpunode proved this in %s of search; the upstream allocator was not needed", roundDur(searchTime))
		nr.Explain.GpunodeMillis = ms(searchTime)
		return nr, nil
	case perr == nil && serr == nil:
		nr.fromSolution(p, sol)
		if o.Explain {
			nr.Explain = explain(ctx, in, p, s, o, false)
			nr.Explain.Solver, nr.Explain.GpunodeMillis = "gpunode", ms(searchTime)
			nr.Explain.Upstream = "gpunode's devices: a valid allocation; where the claims fit easily they are the scheduler's first fit, otherwise they may differ from it"
		}
		return nr, nil
	default:
		// gpunode could not decide (unsupported feature, budget) or the
		// problem has an allocator error: upstream decides.
		note := ""
		if serr != nil {
			note = "gpunode's search did not decide: " + serr.Error()
		}
		return nr, upstream(note, p, s)
	}
}

// undecided marks nr as not decided within the timeout and names what was
// left: where gpunode's search stood, what the upstream allocator did.
func (nr *NodeReport) undecided(o Options, limit, took time.Duration, stage string, s *searcher, upstreamRan bool) {
	nr.Fits, nr.Undecided, nr.Allocations = false, true, []ClaimAllocation{}
	left := stage
	if left == "" && s != nil {
		left = fmt.Sprintf("gpunode's search had explored %d states and was at %s", s.nodes, s.left())
	}
	reason := fmt.Sprintf("undecided within %s", roundDur(limit))
	if left != "" {
		reason += ": " + left
	}
	if upstreamRan {
		reason += "; the upstream allocator did not finish"
	}
	ex := nr.Explain
	if ex == nil {
		ex = &Explain{Solver: "gpunode"}
		if o.Solver == SolverUpstream {
			ex.Solver = "upstream"
		}
	}
	ex.Reason = reason + fmt.Sprintf(" (stopped after %s; kube-scheduler gives up after %s (DRASchedulerFilterTimeout) and retries the pod with backoff)", roundDur(took), SchedulerFilterTimeout)
	ex.Failing, ex.NearestFits = nil, nil
	nr.Explain = ex
}

type upstreamExtra struct {
	p *problem
	s *searcher
}

func withProblem(p *problem, s *searcher) upstreamExtra { return upstreamExtra{p, s} }

func (nr *NodeReport) fromUpstream(ctx context.Context, in *Input, r upstreamResult, o Options, extra ...upstreamExtra) error {
	var p *problem
	var s *searcher
	if len(extra) > 0 {
		p, s = extra[0].p, extra[0].s
	}
	switch {
	case r.err != nil && (errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled)):
		nr.Fits = false
		nr.Undecided = true
		nr.Explain = &Explain{Solver: "upstream", UpstreamMillis: ms(r.elapsed),
			Reason: fmt.Sprintf("the upstream allocator did not finish within %s", roundDur(o.UpstreamLimit))}
		return nil
	case r.err != nil:
		nr.Fits = false
		nr.Explain = &Explain{Solver: "upstream", UpstreamMillis: ms(r.elapsed), Reason: "allocator error: " + r.err.Error()}
		return nil
	case r.results == nil:
		nr.Fits = false
		if p != nil {
			nr.Explain = explain(ctx, in, p, s, o, true)
		} else {
			nr.Explain = &Explain{}
		}
		nr.Explain.Solver, nr.Explain.UpstreamMillis = "upstream", ms(r.elapsed)
		return nil
	}
	nr.Fits = true
	for i, res := range r.results {
		ca := ClaimAllocation{Claim: in.Claims[i].Namespace + "/" + in.Claims[i].Name, Results: []DeviceResult{}}
		for _, d := range res.Devices.Results {
			ca.Results = append(ca.Results, DeviceResult{Request: d.Request, Driver: d.Driver, Pool: d.Pool, Device: d.Device})
		}
		nr.Allocations = append(nr.Allocations, ca)
	}
	if o.Explain {
		if p != nil {
			nr.Explain = explain(ctx, in, p, s, o, false)
		} else {
			nr.Explain = &Explain{}
		}
		nr.Explain.Solver, nr.Explain.UpstreamMillis = "upstream", ms(r.elapsed)
	}
	return nil
}

func (nr *NodeReport) fromSolution(p *problem, sol []pick) {
	if sol == nil {
		nr.Fits = false
		return
	}
	nr.Fits = true
	for ci, c := range p.claims {
		ca := ClaimAllocation{Claim: c.key, Results: []DeviceResult{}}
		for _, pk := range sol {
			if pk.claim != ci {
				continue
			}
			d := p.devices[pk.device].id
			ca.Results = append(ca.Results, DeviceResult{Request: pk.alt.name, Driver: d.driver, Pool: d.pool, Device: d.name})
		}
		nr.Allocations = append(nr.Allocations, ca)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func roundDur(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}
