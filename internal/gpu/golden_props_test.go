package gpu

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkSMIXMLSecondReader is TestParseSMIXMLGolden's independent check: a
// second, regexp-based reader of the same XML finds the same GPUs (one per
// <gpu id=...>), in order, with the same UUIDs, names and PCI addresses.
func checkSMIXMLSecondReader(t *testing.T, name string, st Status) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "smi", name))
	if err != nil {
		t.Fatal(err)
	}
	gpus := regexp.MustCompile(`(?s)<gpu id="([^"]+)">(.*?)</gpu>`).FindAllStringSubmatch(string(b), -1)
	if len(gpus) == 0 || len(gpus) != len(st.GPUs) {
		t.Fatalf("second reader: %d <gpu> elements, parser: %d GPUs", len(gpus), len(st.GPUs))
	}
	field := func(body, tag string) string {
		m := regexp.MustCompile(`<` + tag + `>([^<]*)</` + tag + `>`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.TrimSpace(m[1])
	}
	for i, g := range gpus {
		got := st.GPUs[i]
		if u := field(g[2], "uuid"); u != got.UUID {
			t.Errorf("GPU %d: uuid %q in the XML, parsed %q", i, u, got.UUID)
		}
		if n := field(g[2], "product_name"); n != got.Name {
			t.Errorf("GPU %d: product_name %q in the XML, parsed %q", i, n, got.Name)
		}
		// nvidia-smi's 8-digit domain, the kernel's 4-digit one.
		_, xb, _ := strings.Cut(g[1], ":")
		_, pb, _ := strings.Cut(got.PCIAddress, ":")
		if xb == "" || !strings.EqualFold(xb, pb) {
			t.Errorf("GPU %d: id %q in the XML, parsed PCI address %q", i, g[1], got.PCIAddress)
		}
	}
}
