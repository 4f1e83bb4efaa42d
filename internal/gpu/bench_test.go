package gpu

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// BenchmarkParseSMIXML8 parses an 8-GPU 'nvidia-smi -q -x' document (the
// fixture's first GPU repeated).
func BenchmarkParseSMIXML8(b *testing.B) {
	data, err := os.ReadFile("testdata/smi/h100x2-v12.xml")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	start, end := strings.Index(s, "<gpu id="), strings.Index(s, "</gpu>")+len("</gpu>")
	doc := s[:start] + strings.Repeat(s[start:end], 8) + s[strings.LastIndex(s, "</nvidia_smi_log>"):]
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSMIXML(bytes.NewReader([]byte(doc))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFakeStatusAudit reads the 8 x H100 fake node and audits it.
func BenchmarkFakeStatusAudit(b *testing.B) {
	fsys, err := hostfs.New("testdata/hosts/h100x8")
	if err != nil {
		b.Fatal(err)
	}
	be, err := OpenFake(fsys, FakeFile)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		st, err := be.Status(ctx)
		if err != nil {
			b.Fatal(err)
		}
		_ = Audit(st, AuditOptions{CUDARuntime: "12.4"})
		_ = NVLinkClassesOf(st)
	}
}
