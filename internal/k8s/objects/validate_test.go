package objects

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The byte-loop syntax checks agree with apimachinery's validators (the
// ones the API server runs) on edge cases and on random strings drawn from
// the characters that matter.
func TestSyntaxChecksMatchApimachinery(t *testing.T) {
	edge := []string{"", "a", "A", "-", "a-", "-a", "a.b", "a..b", ".a", "a.", "a_b", "a/b", "/b", "a/", "a/b/c",
		"example.com/x", "Example.com/x", "nvidia.com/gpu", "a-b.c-d/e_f.G", "kubernetes.io/hostname",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 253), strings.Repeat("a", 254),
		strings.Repeat("a.", 126) + "a", strings.Repeat("a", 64) + ".b", "p/" + strings.Repeat("a", 63), "p/" + strings.Repeat("a", 64),
		"Bad_Name!", "0", "a b", "é", "a\x00"}
	const chars = "aZ09-_./!é "
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		n := r.IntN(12)
		if r.IntN(20) == 0 {
			n = 60 + r.IntN(8)
		}
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(chars[r.IntN(len(chars))])
		}
		edge = append(edge, b.String())
	}
	for _, s := range edge {
		for _, c := range []struct {
			name string
			mine bool
			up   []string
		}{
			{"DNS-1123 label", dns1123Label(s), validation.IsDNS1123Label(s)},
			{"DNS-1123 subdomain", dns1123Subdomain(s), validation.IsDNS1123Subdomain(s)},
			{"qualified name", qualifiedName(s), validation.IsQualifiedName(s)},
			{"label value", labelValue(s), validation.IsValidLabelValue(s)},
		} {
			if c.mine != (len(c.up) == 0) {
				t.Fatalf("%s %q: gpunode says valid=%v, apimachinery %q", c.name, s, c.mine, c.up)
			}
		}
	}
}

// The examples, as the loaders refuse them (field named).
func TestLoadersRefuseWhatTheAPIServerRefuses(t *testing.T) {
	pod := func(req string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers:\n  - name: c\n    resources:\n" + req
	}
	node := func(meta, status string) string {
		return "apiVersion: v1\nkind: Node\nmetadata: {" + meta + "}\nstatus: {" + status + "}\n"
	}
	for _, tc := range []struct {
		name, nodes, pods, want string
	}{
		{"negative GPU request", "", pod("      requests: {nvidia.com/gpu: \"-1\"}\n      limits: {nvidia.com/gpu: \"-1\"}\n"),
			`spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"fractional GPU", "", pod("      limits: {nvidia.com/gpu: 500m}\n"),
			`spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer`},
		{"GPU request without limit", "", pod("      requests: {nvidia.com/gpu: 1}\n"),
			`spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`},
		{"GPU request != limit", "", pod("      requests: {nvidia.com/gpu: 1}\n      limits: {nvidia.com/gpu: 2}\n"),
			`spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2`},
		{"cpu request > limit", "", pod("      requests: {cpu: 2}\n      limits: {cpu: 1}\n"),
			`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"unknown resource", "", pod("      requests: {gpu: 1}\n"),
			`spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers`},
		{"bad node name", node(`name: "Bad_Name!"`, ""), "", `Node "Bad_Name!": metadata.name: Invalid value: "Bad_Name!": a lowercase RFC 1123 subdomain`},
		{"bad label value", node(`name: node1, labels: {a: "b c"}`, ""), "", `metadata.labels: Invalid value: "b c": a valid label must be`},
		{"bad label key", node(`name: node1, labels: {"a/b/c": x}`, ""), "", `metadata.labels: Invalid value: "a/b/c": a valid label key must consist`},
		{"negative allocatable", node(`name: node1`, `allocatable: {nvidia.com/gpu: "-8"}`), "", `status.allocatable[nvidia.com/gpu]: Invalid value: "-8": must be greater than or equal to 0`},
		{"pods given as nodes", pod("      requests: {cpu: 1}\n"), "", `kind: this is a v1 Pod "p", not a v1 Node (or a List of Nodes)`},
		{"nodes given as pods", "", node(`name: node1`, ""), `kind: this is a v1 Node "node1", not a v1 Pod (or a List of Pods)`},
		{"List of pods given as nodes", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: q}\n  spec: {containers: [{name: c}]}\n", "",
			`items[0]: kind: this is a v1 Pod "q", not a v1 Node (or a List of Nodes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.nodes != "" {
				_, err = LoadNodes("f.yaml", []byte(tc.nodes))
			} else {
				_, err = LoadPods("f.yaml", []byte(tc.pods))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
	// At the edges: valid values load.
	ok := pod("      requests: {nvidia.com/gpu: 0, cpu: 1500m}\n      limits: {nvidia.com/gpu: 0}\n")
	if _, err := LoadPods("f.yaml", []byte(ok)); err != nil {
		t.Fatalf("valid pod refused: %v", err)
	}
	if _, err := LoadNodes("f.yaml", []byte(node("name: "+strings.Repeat("a", 253)+", labels: {example.com/x: \"\"}", `allocatable: {nvidia.com/gpu: "0"}`))); err != nil {
		t.Fatalf("valid node refused: %v", err)
	}
	if _, err := LoadNodes("f.yaml", []byte(node("name: "+strings.Repeat("a", 254), ""))); err == nil {
		t.Fatal("254-byte node name loaded")
	}
}

// TestExtendedResource: the verdict without building "requests." + n is
// the one with it.
func TestExtendedResource(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, n := range []string{"nvidia.com/gpu", "example.com/a/b", "/gpu", "requests.x/y", "kubernetes.io/x", "cpu", "x.y/-a", "x..y/a",
		long + "." + long + "." + long + "." + strings.Repeat("b", 52) + "/g", long + "." + long + "." + long + "." + strings.Repeat("b", 53) + "/g",
		long + "." + long + "." + long + "." + strings.Repeat("b", 60) + "/g", "Example.com/gpu", "a/" + long, "a/" + long + "x"} {
		want := !nativeResource(n) && !strings.HasPrefix(n, "requests.") && qualifiedName("requests."+n)
		if got := extendedResource(n); got != want {
			t.Errorf("%q: %v, want %v", n, got, want)
		}
	}
}
