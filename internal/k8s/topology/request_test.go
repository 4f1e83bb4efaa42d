package topology

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMergeRequestErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", ``, "empty input"},
		{"no policy", `{"numaNodes":[0]}`, "policy: required"},
		{"bad policy", `{"policy":"strict","numaNodes":[0]}`, `policy: unknown policy "strict"`},
		{"no nodes", `{"policy":"restricted"}`, "numaNodes: at least one"},
		{"node range", `{"policy":"restricted","numaNodes":[0,64]}`, "numaNodes[1]: NUMA id 64 beyond 63"},
		{"dup node", `{"policy":"restricted","numaNodes":[1,1]}`, "numaNodes[1]: duplicate NUMA id 1"},
		{"distances rows", `{"policy":"restricted","numaNodes":[0,1],"distances":[[10,20]]}`, "distances: 1 rows for 2 NUMA nodes"},
		{"distances cols", `{"policy":"restricted","numaNodes":[0,1],"distances":[[10,20],[20]]}`, "distances[1]: 1 columns for 2 NUMA nodes"},
		{"affinity range", `{"policy":"restricted","numaNodes":[0,1],"providers":[{},{"gpu":[{"affinity":[0],"preferred":true},{"affinity":[70]}]}]}`, "providers[1].gpu[1].affinity: NUMA id 70 beyond 63"},
		// A NUMA id the request's numaNodes do not have (it was merged).
		{"affinity not a node", `{"policy":"best-effort","numaNodes":[0,1],"providers":[{"cpu":[{"affinity":[5],"preferred":true}]}]}`, "providers[0].cpu[0].affinity: NUMA id 5 is not in numaNodes [0 1]"},
		{"unknown field", `{"policy":"restricted","numaNodes":[0],"polcy":1}`, `unknown field "polcy"`},
		{"unknown hint field", `{"policy":"restricted","numaNodes":[0],"providers":[{"cpu":[{"affinty":[0]}]}]}`, `providers[0].cpu[0]: json: unknown field "affinty"`},
		{"wrong type", `{"policy":"restricted","numaNodes":"0"}`, "numaNodes: cannot use JSON string"},
		{"hint wrong type", `{"policy":"restricted","numaNodes":[0],"providers":[{"cpu":[{"preferred":"yes"}]}]}`, "providers[0].cpu[0]: preferred: cannot use JSON string"},
		{"trailing", `{"policy":"restricted","numaNodes":[0]} {}`, "unexpected data after the JSON value"},
		{"empty resource", `{"policy":"restricted","numaNodes":[0],"providers":[{"":null}]}`, "providers[0]: empty resource name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMergeRequest([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRunMergeRequest(t *testing.T) {
	req, err := ParseMergeRequest([]byte(`{"policy":"restricted","options":{"prefer-closest-numa-nodes":"true"},
		"numaNodes":[0,1,2,3],"distances":[[10,12,20,20],[12,10,20,20],[20,20,10,12],[20,20,12,10]],
		"providers":[{"cpu":null,"memory":[]},
		             {"gpu":[{"affinity":[0,2],"preferred":true},{"affinity":[2,3],"preferred":true},{"affinity":null,"preferred":false}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Providers[0]["cpu"] != nil || req.Providers[0]["memory"] == nil || len(req.Providers[0]["memory"]) != 0 {
		t.Fatalf("null/[] not kept apart: %#v", req.Providers[0])
	}
	res, err := RunMergeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	// memory [] makes every combination non-preferred: restricted rejects.
	if res.Admit || res.Preferred || res.SchemaVersion != MergeResultSchema {
		t.Fatalf("res = %+v", res)
	}
	// Closest among the 2-node masks: {2,3} (distance 12) beats {0,2} (20).
	if len(res.Affinity) != 2 || res.Affinity[0] != 2 || res.Affinity[1] != 3 {
		t.Fatalf("affinity = %v, want [2 3]", res.Affinity)
	}
}

func FuzzParseMergeRequest(f *testing.F) {
	f.Add([]byte(`{"policy":"best-effort","numaNodes":[0,1],"providers":[{"cpu":[{"affinity":[0],"preferred":true}],"gpu":null,"mem":[]}]}`))
	f.Add([]byte(`{"policy":"single-numa-node","options":{"prefer-closest-numa-nodes":"true"},"numaNodes":[0,1],"distances":[[10,21],[21,10]],"providers":[{"cpu":[{"affinity":null,"preferred":true}]}]}`))
	f.Add([]byte(`{"policy":"restricted","numaNodes":[3,9],"providers":[{},{"x":[{"affinity":[],"preferred":false}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseMergeRequest(b)
		// The one-pass decode and the piecewise one accept the same inputs
		// and build the same request.
		located, lerr := parseMergeRequestLocated(b)
		if (err == nil) != (lerr == nil) {
			t.Fatalf("one-pass error %v, piecewise error %v", err, lerr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(req, located) {
			t.Fatalf("one-pass %#v, piecewise %#v", req, located)
		}
		p, err := req.NewPolicy()
		if err != nil {
			return
		}
		in := bruteInput{req.Policy, req.NUMANodes, p.Options().PreferClosestNUMA, req.Distances, req.Providers}
		// The brute force compares exact integer sums of distances: keep
		// to inputs where kubelet's float64 means are exact too.
		small := true
		for _, row := range req.Distances {
			for _, d := range row {
				small = small && d < 1<<20
			}
		}
		n := 1
		for _, l := range bruteLists(in) {
			n *= max(1, len(l))
			small = small && n <= 4096
		}
		got, ga := p.Merge(req.Providers)
		if small {
			want, wa := bruteMerge(in)
			if !got.IsEqual(want) || ga != wa {
				t.Fatalf("merge %v %v, brute force %v %v", got, ga, want, wa)
			}
		}
	})
}

// ReadMergeRequest's errors name the file's line of the field.
func TestReadMergeRequestNamesLine(t *testing.T) {
	in := "{\n  \"policy\": \"restricted\",\n  \"numaNodes\": [0, 1],\n  \"providers\": [\n    {\"cpu\": [{\"affinity\": [0], \"preferred\": true}]},\n    {\"gpu\": [{\"affinity\": [7]}]}\n  ]\n}\n"
	_, err := ReadMergeRequest(strings.NewReader(in), "hints.json", 0)
	if want := "hints.json:6: providers[1].gpu[0].affinity: NUMA id 7 is not in numaNodes [0 1]"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	_, err = ReadMergeRequest(strings.NewReader("{\"policy\": \"restricted\",\n \"numaNodes\": [0],\n \"providers\": [{\"cpu\": [\n  {\"affinty\": [0]}]}]}"), "h.json", 0)
	if err == nil || !strings.HasPrefix(err.Error(), "h.json:4: providers[0].cpu[0]: ") {
		t.Errorf("unknown hint field: %v", err)
	}
}
