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

// Solver selects who decides.
type Solver string

const (
	// SolverAuto races the upstream allocator and gpunode's search.
	SolverAuto Solver = ""
	// SolverGpunode uses only gpunode's exact search (tests, conformance).
	SolverGpunode Solver = "gpunode"
	// SolverUpstream uses only the upstream allocator (up to UpstreamLimit).
	SolverUpstream Solver = "upstream"
)

// Options tune Run.
type Options struct {
	Solver Solver
	// PickBudget is how long to wait for the upstream allocator's own
	// devices once gpunode has found that the claims fit (default 1 s).
	PickBudget time.Duration
	// UpstreamLimit bounds the upstream allocator when gpunode's search
	// cannot decide (default SchedulerFilterTimeout).
	UpstreamLimit time.Duration
	// SearchBudget bounds gpunode's search in nodes (default 5,000,000).
	SearchBudget int
	// UpstreamDelay is how long the upstream allocator waits for gpunode's
	// search before it starts anyway (default 0: both start together, so no
	// input the upstream allocator answers quickly waits for gpunode; a
	// delay saves CPU on a loaded machine).
	UpstreamDelay time.Duration
	// Explain adds explanations for nodes that fit too, and nearest fits.
	Explain bool
}

func (o Options) withDefaults() Options {
	if o.PickBudget == 0 {
		o.PickBudget = time.Second
	}
	if o.UpstreamLimit == 0 {
		o.UpstreamLimit = SchedulerFilterTimeout
	}
	if o.SearchBudget == 0 {
		o.SearchBudget = 5_000_000
	}
	return o
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
	a, err := structured.NewAllocator(ctx, f, in.AllocatedState(), classLister(in.classes), in.Slices, in.cel)
	if err != nil {
		return nil, err
	}
	claims := make([]*resourceapi.ResourceClaim, len(in.Claims))
	for i, c := range in.Claims {
		claims[i] = c.DeepCopy()
	}
	return a.Allocate(ctx, node, claims)
}

// Run decides every node of in.
func Run(ctx context.Context, in *Input, o Options) (*Report, error) {
	o = o.withDefaults()
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
	}
	return rep, nil
}

func runNode(ctx context.Context, in *Input, node *corev1.Node, o Options) (*NodeReport, error) {
	nr := &NodeReport{Node: node.Name, Allocations: []ClaimAllocation{}}
	begin := time.Now()
	var up chan upstreamResult
	upCtx, cancelUp := context.WithTimeout(ctx, o.UpstreamLimit)
	defer cancelUp()
	startUp := make(chan struct{})
	var startOnce bool
	start := func() {
		if !startOnce {
			startOnce = true
			close(startUp)
		}
	}
	defer start()
	if o.Solver != SolverGpunode {
		up = make(chan upstreamResult, 1)
		// The upstream allocator gets its own CEL cache: the cache is
		// safe for concurrent use, the selector memo of Input is not used.
		delay := o.UpstreamDelay
		if o.Solver == SolverUpstream {
			delay = 0
		}
		go func() {
			// gpunode's search usually answers within a few milliseconds;
			// the upstream allocator starts after it (or after delay), so
			// the two do not compete for the CPU when they need not.
			if delay > 0 {
				timer := time.NewTimer(delay)
				select {
				case <-timer.C:
				case <-startUp:
				case <-upCtx.Done():
					timer.Stop()
					up <- upstreamResult{err: upCtx.Err()}
					return
				}
				timer.Stop()
			}
			t := time.Now()
			res, err := in.RunUpstream(upCtx, node)
			up <- upstreamResult{results: res, err: err, elapsed: time.Since(t)}
		}()
	}
	if o.Solver == SolverUpstream {
		r := <-up
		return nr, nr.fromUpstream(in, r, o)
	}
	p, perr := buildProblem(ctx, in, node)
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
	// Race: take upstream's answer when it is already there.
	select {
	case r := <-up:
		return nr, nr.fromUpstream(in, r, o, withProblem(p, s))
	default:
	}
	switch {
	case perr == nil && serr == nil && sol == nil:
		// Proven infeasible: no need to wait for upstream.
		cancelUp()
		nr.Fits = false
		nr.Explain = explain(ctx, in, p, s, o, true)
		nr.Explain.Solver = "gpunode"
		nr.Explain.Upstream = fmt.Sprintf("gpunode proved this in %s of search, before the upstream allocator answered (it was stopped)", roundDur(searchTime))
		nr.Explain.GpunodeMillis = ms(searchTime)
		return nr, nil
	case perr == nil && serr == nil:
		// Fits: wait a little for upstream's own choice of devices.
		start()
		timer := time.NewTimer(o.PickBudget)
		defer timer.Stop()
		select {
		case r := <-up:
			return nr, nr.fromUpstream(in, r, o, withProblem(p, s))
		case <-timer.C:
		}
		cancelUp()
		nr.fromSolution(p, sol)
		nr.Explain = &Explain{Solver: "gpunode", GpunodeMillis: ms(searchTime),
			Upstream: fmt.Sprintf("the upstream allocator had not answered after %s: these are gpunode's devices, a valid allocation that may differ from the scheduler's first fit", roundDur(time.Since(begin)))}
		if o.Explain {
			ex := explain(ctx, in, p, s, o, false)
			ex.Solver, ex.Upstream, ex.GpunodeMillis = nr.Explain.Solver, nr.Explain.Upstream, nr.Explain.GpunodeMillis
			nr.Explain = ex
		}
		return nr, nil
	default:
		// gpunode could not decide (unsupported feature, budget) or the
		// problem has an allocator error: upstream decides.
		start()
		r := <-up
		err := nr.fromUpstream(in, r, o, withProblem(p, s))
		if nr.Explain == nil {
			nr.Explain = &Explain{}
		}
		if serr != nil {
			nr.Explain.Note = "gpunode's search did not decide: " + serr.Error()
		}
		return nr, err
	}
}

type upstreamExtra struct {
	p *problem
	s *searcher
}

func withProblem(p *problem, s *searcher) upstreamExtra { return upstreamExtra{p, s} }

func (nr *NodeReport) fromUpstream(in *Input, r upstreamResult, o Options, extra ...upstreamExtra) error {
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
		if o.UpstreamLimit >= SchedulerFilterTimeout {
			nr.Explain.Reason += "; kube-scheduler gives up after 10 s (DRASchedulerFilterTimeout): the pod never schedules on this node, it is retried with backoff"
		}
		return nil
	case r.err != nil:
		nr.Fits = false
		nr.Explain = &Explain{Solver: "upstream", UpstreamMillis: ms(r.elapsed), Reason: "allocator error: " + r.err.Error()}
		return nil
	case r.results == nil:
		nr.Fits = false
		if p != nil {
			nr.Explain = explain(context.Background(), in, p, s, o, true)
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
			nr.Explain = explain(context.Background(), in, p, s, o, false)
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
