package cpumanager

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/gpunode/gpunode/internal/k8s/node"
)

func guaranteedPod(uid string, cpus ...string) *v1.Pod {
	p := &v1.Pod{}
	p.UID = k8stypes.UID("uid-" + uid)
	for i, c := range cpus {
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(c), v1.ResourceMemory: resource.MustParse("1Gi")}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}})
	}
	return p
}

func hintsString(hs []node.Hint) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.String())
	}
	return strings.Join(parts, " ")
}

func TestStaticHintsAndAllocate(t *testing.T) {
	// Two sockets of 3 SMT2 cores, sockets interleaved in the numbering:
	// socket 0 holds CPUs 0,2,4 and their siblings 6,8,10.
	twoSocketSMT := hwNamed(t, "tiny-2s-3c-smt2-interleaved").topology(t, nil)
	for _, tc := range []struct {
		name      string
		topo      *CPUTopology
		reserved  cpuset.CPUSet
		numRes    int
		opts      Options
		request   string
		affinity  *node.Mask
		wantHints string
		wantCPUs  string
		wantErr   string
	}{
		{name: "dual socket HT, 2 cpus", topo: twoSocketSMT, numRes: 1, request: "2",
			wantHints: "{0} preferred {1} preferred {0,1}", wantCPUs: "2,8"},
		{name: "dual socket HT, 6 cpus, affinity 1", topo: twoSocketSMT, numRes: 1, request: "6", affinity: ptr(node.MaskOf(1)),
			wantHints: "{1} preferred {0,1}", wantCPUs: "1,3,5,7,9,11"},
		{name: "dual socket HT, 7 cpus", topo: twoSocketSMT, numRes: 1, request: "7",
			wantHints: "{0,1} preferred", wantCPUs: "1,3,5-7,9,11"},
		{name: "reserved explicit", topo: twoSocketSMT, reserved: cpuset.New(0, 6), numRes: 2, request: "6",
			wantHints: "{1} preferred {0,1}", wantCPUs: "1,3,5,7,9,11"},
		{name: "fragmented node yields non-preferred", topo: twoSocketSMT, reserved: cpuset.New(0, 1), numRes: 2, request: "6",
			wantHints: "{0,1}", wantCPUs: "2-4,8-10"},
		{name: "full-pcpus-only odd request", topo: twoSocketSMT, numRes: 1, opts: Options{FullPhysicalCPUsOnly: true}, request: "3",
			wantHints: "{0} preferred {1} preferred {0,1}", wantErr: "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"},
		{name: "fractional cpu is shared", topo: twoSocketSMT, numRes: 1, request: "1500m", wantHints: "", wantCPUs: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewStatic(tc.topo, tc.numRes, tc.reserved, tc.opts, "best-effort")
			if err != nil {
				t.Fatal(err)
			}
			pod := guaranteedPod("a", tc.request)
			h := p.ContainerHints(pod, &pod.Spec.Containers[0])
			if got := hintsString(h["cpu"]); got != tc.wantHints {
				t.Errorf("hints = %q, want %q", got, tc.wantHints)
			}
			cs, err := p.Allocate(pod, &pod.Spec.Containers[0], tc.affinity)
			if tc.wantErr != "" {
				var smt SMTAlignmentError
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &smt) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cs.String() != tc.wantCPUs {
				t.Errorf("cpus = %s, want %s", cs, tc.wantCPUs)
			}
			if !p.DefaultSet().Intersection(cs).IsEmpty() {
				t.Errorf("allocated CPUs still in the shared pool")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNumReservedAndOptions(t *testing.T) {
	q := resource.MustParse("500m")
	if n, err := NumReservedCPUs(cpuset.New(), &q, &q); err != nil || n != 1 {
		t.Errorf("500m+500m -> %d, %v", n, err)
	}
	q2 := resource.MustParse("1100m")
	if n, _ := NumReservedCPUs(cpuset.New(), &q2, nil); n != 2 {
		t.Errorf("1100m -> %d, want 2", n)
	}
	if n, _ := NumReservedCPUs(cpuset.New(0, 1, 2), &q2, nil); n != 3 {
		t.Errorf("reservedSystemCPUs overrides: %d", n)
	}
	if _, err := NumReservedCPUs(cpuset.New(), nil, nil); err == nil || !strings.Contains(err.Error(), "unable to determine reserved CPU resources") {
		t.Errorf("no reservation: %v", err)
	}
	for _, tc := range []struct {
		opts  map[string]string
		gates Gates
		want  string
	}{
		{map[string]string{"full-pcpus-only": "true"}, DefaultGates(), ""},
		{map[string]string{"bogus": "true"}, DefaultGates(), `unknown CPU Manager Policy option: "bogus"`},
		{map[string]string{"align-by-socket": "true"}, DefaultGates(), `CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{map[string]string{"distribute-cpus-across-numa": "true"}, Gates{}, `CPU Manager Policy Beta-level Options not enabled`},
		{map[string]string{"full-pcpus-only": "yes"}, DefaultGates(), `bad value for option "full-pcpus-only"`},
		{map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}, Gates{AlphaOptions: true, BetaOptions: true}, "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"},
		{map[string]string{"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"}, DefaultGates(), "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be used at the same time"},
	} {
		_, err := ParseOptions(tc.opts, tc.gates)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: err = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if err := ValidateOptions(Options{AlignBySocket: true}, hwNamed(t, "tiny-2s-3c-smt2-interleaved").topology(t, nil), "single-numa-node"); err == nil {
		t.Error("align-by-socket with single-numa-node accepted")
	}
}
