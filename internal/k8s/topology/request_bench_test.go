package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// bigMergeRequest is the large request: 16 NUMA nodes, 3 providers
// of 65,535 hints each (every non-empty mask), about 10 MB of JSON.
func bigMergeRequest(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"policy":"best-effort","options":{"max-allowable-numa-nodes":"16"},"numaNodes":[`)
	for i := 0; i < 16; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprint(&buf, i)
	}
	buf.WriteString(`],"providers":[`)
	for p := 0; p < 3; p++ {
		if p > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"r%d":[`, p)
		for m := 1; m < 1<<16; m++ {
			if m > 1 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"affinity":[`)
			first := true
			for b := 0; b < 16; b++ {
				if m&(1<<b) != 0 {
					if !first {
						buf.WriteByte(',')
					}
					fmt.Fprint(&buf, b)
					first = false
				}
			}
			fmt.Fprintf(&buf, `],"preferred":%v}`, m&(m-1) == 0)
		}
		buf.WriteString(`]}`)
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// BenchmarkParseMergeRequest16NUMA is the strict parse of the large
// request; BenchmarkPlainJSONDecode16NUMA is its anchor, Go's plain
// encoding/json decode of the same bytes into the same types (no
// unknown-field check, no validation), and BenchmarkMergeParsed16NUMA the
// merge itself. Target: parse <= 2 x (plain decode + merge).
func BenchmarkParseMergeRequest16NUMA(b *testing.B) {
	in := bigMergeRequest(b)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseMergeRequest(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlainJSONDecode16NUMA(b *testing.B) {
	in := bigMergeRequest(b)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var w wireRequest
		if err := json.Unmarshal(in, &w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMergeParsed16NUMA(b *testing.B) {
	req, err := ParseMergeRequest(bigMergeRequest(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := RunMergeRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
