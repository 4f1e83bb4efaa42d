package dra

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// templateStateLimit: the most search states any node of the random
// templates may need. The old search ran out of its 5,000,000-node budget
// (and minutes) on some of them; the shape is the probe's hidden case.
const templateStateLimit = 20_000

// More with -args -dra.templates=N (CI's DRA step runs 300).
var templateCases = flag.Int("dra.templates", 30, "random device templates TestTemplatesDecidedAndAgree draws")

// TestTemplatesDecidedAndAgree: random device templates (3 nodes, many
// attributes, large matchAttribute groups, some distinctAttribute) are
// decided in a few states per node, and agree with the upstream allocator
// wherever it answers within its limit; every gpunode allocation is one
// the upstream allocator accepts when pinned to exactly its devices.
func TestTemplatesDecidedAndAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := *templateCases
	var agree, fits, upSlow, worst int
	for i := 0; i < cases; i++ {
		in := templateInput(t, r, 3, 8+r.IntN(40), 4+r.IntN(16))
		in.init()
		for _, c := range in.Claims {
			DefaultClaimSpec(&c.Spec)
		}
		for _, name := range in.NodeNames() {
			node := NodeObject(name)
			p, err := buildProblem(context.Background(), in, node)
			if err != nil {
				t.Fatalf("case %d %s: %v", i, name, err)
			}
			s := newSearcher(context.Background(), p, templateStateLimit)
			sol, err := s.solve()
			if err != nil {
				t.Fatalf("case %d %s: not decided in %d states: %v", i, name, templateStateLimit, err)
			}
			worst = max(worst, s.nodes)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			up, uerr := in.RunUpstream(ctx, node)
			cancel()
			if uerr != nil && ctx.Err() != nil {
				upSlow++
				continue
			}
			upFits := uerr == nil && up != nil
			if upFits != (sol != nil) {
				t.Fatalf("case %d %s: gpunode fits=%v, upstream fits=%v (err %v)", i, name, sol != nil, upFits, uerr)
			}
			agree++
			if sol != nil {
				fits++
				pinTemplate(t, i, in, node, p, sol)
			}
		}
	}
	t.Logf("%d templates x 3 nodes: %d agree with upstream (%d fit), %d upstream over 200 ms; at most %d search states per node", cases, agree, fits, upSlow, worst)
	if agree < cases {
		t.Fatalf("only %d comparisons for %d templates", agree, cases)
	}
}

// pinTemplate: the upstream allocator must allocate every claim on the
// devices gpunode chose alone.
func pinTemplate(t *testing.T, i int, in *Input, node *corev1.Node, p *problem, sol []pick) {
	t.Helper()
	chosen := map[deviceID]bool{}
	for _, pk := range sol {
		id := p.devices[pk.device].id
		if chosen[id] {
			t.Fatalf("case %d: device %s twice", i, id)
		}
		chosen[id] = true
	}
	pinned := &Input{Classes: in.Classes}
	for _, c := range in.Claims {
		pinned.Claims = append(pinned.Claims, c.DeepCopy())
	}
	for _, sl := range in.Slices {
		s2 := sl.DeepCopy()
		s2.Spec.Devices = nil
		for _, d := range sl.Spec.Devices {
			if chosen[deviceID{sl.Spec.Driver, sl.Spec.Pool.Name, d.Name}] {
				s2.Spec.Devices = append(s2.Spec.Devices, d)
			}
		}
		pinned.Slices = append(pinned.Slices, s2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := pinned.RunUpstream(ctx, node)
	if ctx.Err() != nil {
		t.Logf("case %d: the upstream allocator did not check the pinned devices within 2 s", i)
		return
	}
	if err != nil || res == nil {
		t.Fatalf("case %d: gpunode's devices are not an allocation the upstream allocator accepts (err %v)", i, err)
	}
}
