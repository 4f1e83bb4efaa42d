package companion

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/cli"
	"github.com/gpunode/gpunode/internal/testhost"
)

// BenchmarkTopoJSONCommand runs 'gpunode topo -o json' on the DGX-shaped
// fixture in-process: discovery plus rendering, without process start-up.
func BenchmarkTopoJSONCommand(b *testing.B) {
	root := testhost.Path(b, "dgx-h100")
	env := cli.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	b.ReportAllocs()
	for b.Loop() {
		env.Args = []string{"topo", "--root", root, "-o", "json"}
		if code := mainFull(context.Background(), env); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
