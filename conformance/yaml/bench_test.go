package yaml

import (
	"os"
	"testing"

	sigs "sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/yamljson"
)

// The mig-parted file of internal/mig's tests, the input of 'gpunode mig
// validate' and of ParseMigParted's YAMLToJSON.
const migPartedFixture = "../../internal/mig/testdata/mig-parted-examples/systemd-config-default.yaml"

func benchToJSON(b *testing.B, f func([]byte) ([]byte, error)) {
	src, err := os.ReadFile(migPartedFixture)
	if err != nil {
		b.Fatal(err)
	}
	want, err := sigs.YAMLToJSON(src)
	if err != nil {
		b.Fatal(err)
	}
	if got, err := f(src); err != nil || string(got) != string(want) {
		b.Fatalf("converted differently: %v", err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkYAMLToJSON(b *testing.B) {
	b.Run("yamljson", func(b *testing.B) { benchToJSON(b, yamljson.YAMLToJSON) })
	b.Run("sigs", func(b *testing.B) { benchToJSON(b, sigs.YAMLToJSON) })
}
