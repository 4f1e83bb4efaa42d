package lint

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// benchManifests writes n workloads (Deployments, Jobs, Pods with DRA
// claims in turn) plus a device plugin ConfigMap, a ClusterPolicy and a
// ComputeDomain, as one multi-document YAML.
func benchManifests(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: cluster-policy}\nspec:\n  devicePlugin:\n    config: {name: dp, default: any}\n---\n")
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp, namespace: gpu-operator}\ndata:\n  any: |-\n    version: v1\n    sharing:\n      timeSlicing:\n        failRequestsGreaterThanOne: true\n        resources:\n        - {name: nvidia.com/gpu, replicas: 4}\n---\n")
	b.WriteString("apiVersion: resource.nvidia.com/v1beta1\nkind: ComputeDomain\nmetadata: {name: cd}\nspec:\n  numNodes: 0\n  channel: {resourceClaimTemplate: {name: cd-channel}}\n---\n")
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d%d, namespace: ns%d}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - name: app\n        image: my-nccl-app:latest\n        resources:\n          requests: {cpu: \"8\", memory: 64Gi}\n          limits: {cpu: \"8\", memory: 64Gi, nvidia.com/gpu: \"%d\"}\n---\n", i, i%50, 1+i%2)
		case 1:
			fmt.Fprintf(&b, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j%d, namespace: ns%d}\nspec:\n  parallelism: 4\n  completions: 4\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: w\n        image: pytorch/pytorch\n        command: [torchrun, train.py]\n        resources:\n          limits: {nvidia.com/gpu: \"1\"}\n---\n", i, i%50)
		default:
			fmt.Fprintf(&b, "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t%d, namespace: ns%d}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n          selectors:\n          - cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'\"}\n---\n", i, i%50)
		}
	}
	return []byte(b.String())
}

func BenchmarkLint(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		data := benchManifests(n)
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				l := NewLoader()
				if err := l.Add("bench.yaml", data); err != nil {
					b.Fatal(err)
				}
				rep := Run(l.Input())
				if len(rep.Findings) == 0 {
					b.Fatal("no findings")
				}
			}
		})
	}
}

func BenchmarkRulesOnly(b *testing.B) {
	l := NewLoader()
	if err := l.Add("bench.yaml", benchManifests(10000)); err != nil {
		b.Fatal(err)
	}
	in := l.Input()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rep := Run(in); len(rep.Findings) == 0 {
			b.Fatal("no findings")
		}
	}
}

// TestWriteBenchManifests writes the 10,000-object benchmark input for a
// whole-process measurement: go test ./internal/k8s/lint -run TestWriteBenchManifests -bench-out FILE
func TestWriteBenchManifests(t *testing.T) {
	if *benchOut == "" {
		t.Skip("no -bench-out")
	}
	if err := os.WriteFile(*benchOut, benchManifests(10000), 0o644); err != nil {
		t.Fatal(err)
	}
}

var benchOut = flag.String("bench-out", "", "write the benchmark manifests here")
