package mig

import (
	"fmt"
	"testing"
)

// checkPlanProperties is TestGoldenPlans' independent check, computed
// here from the plan's own layouts, not by the planner: on every GPU the
// instances' memory placements do not overlap and lie inside the GPU's
// memory slices, the slices used are the sums of the instances, the free
// list is the complement, and a feasible plan places exactly the GI demand
// (one instance per wanted GI); an infeasible one places nothing and says
// why.
func checkPlanProperties(t *testing.T, pl *Plan) {
	t.Helper()
	if !pl.Feasible {
		if len(pl.Layouts) != 0 || len(pl.Reasons) == 0 {
			t.Errorf("infeasible plan with %d layouts and reasons %v", len(pl.Layouts), pl.Reasons)
		}
		return
	}
	if len(pl.Layouts) != pl.GPUs {
		t.Errorf("%d layouts for %d GPUs", len(pl.Layouts), pl.GPUs)
	}
	placed := map[string]int{}
	compute, memory := 0, 0
	for _, l := range pl.Layouts {
		used := make([]bool, l.MemoryTotal)
		cu, mu := 0, 0
		for i, in := range l.Instances {
			if in.Order != i+1 {
				t.Errorf("GPU %d: instance %d has order %d", l.GPU, i, in.Order)
			}
			p := in.Placement
			if p.Start < 0 || p.Size < 1 || p.Start+p.Size > l.MemoryTotal {
				t.Errorf("GPU %d: %s at %d+%d outside 0..%d", l.GPU, in.Profile, p.Start, p.Size, l.MemoryTotal)
				continue
			}
			for s := p.Start; s < p.Start+p.Size; s++ {
				if used[s] {
					t.Errorf("GPU %d: memory slice %d used twice", l.GPU, s)
				}
				used[s] = true
			}
			cu += in.ComputeSlices
			mu += p.Size
			placed[in.Profile]++
		}
		if cu != l.ComputeUsed || cu > l.ComputeTotal || mu != l.MemoryUsed {
			t.Errorf("GPU %d: compute %d (says %d of %d), memory %d (says %d)", l.GPU, cu, l.ComputeUsed, l.ComputeTotal, mu, l.MemoryUsed)
		}
		var free []int
		for s, u := range used {
			if !u {
				free = append(free, s)
			}
		}
		if fmt.Sprint(free) != fmt.Sprint(l.FreeMemory) && !(len(free) == 0 && len(l.FreeMemory) == 0) {
			t.Errorf("GPU %d: free slices %v, the layout says %v", l.GPU, free, l.FreeMemory)
		}
		compute += cu
		memory += mu
	}
	want := map[string]int{}
	for _, w := range pl.Want {
		want[w.Profile] += w.Count
	}
	if fmt.Sprint(placed) != fmt.Sprint(want) {
		t.Errorf("placed %v, want %v", placed, want)
	}
	if compute != pl.ComputeNeeded {
		t.Errorf("compute slices placed %d, needed %d", compute, pl.ComputeNeeded)
	}
}
