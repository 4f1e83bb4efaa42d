package gpu

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func addFile(f *testing.F, p string) {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// countSMIGPUs is a second reader of nvidia-smi -q -x: the <gpu> children
// of the first root element, by a token walk.
func countSMIGPUs(data []byte) (int, bool) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	depth, n := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, false
		}
		switch x := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && x.Name.Local == "gpu" {
				n++
			}
		case xml.EndElement:
			if depth--; depth == 0 {
				return n, true
			}
		}
	}
}

// FuzzParseSMIXML: one GPU per <gpu> element (up to maxGPUs, the rest
// warned about), each with a normalised PCI address or none and a warning;
// and the GPUs rendered back as nvidia-smi XML parse to the same names,
// uuids and addresses.
func FuzzParseSMIXML(f *testing.F) {
	addFile(f, "testdata/smi/h100x2-v12.xml")
	addFile(f, "testdata/smi/a100-v11-throttle.xml")
	f.Add([]byte(`<nvidia_smi_log><gpu id="00000000:18:00.0"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>`))
	f.Add([]byte(`<nvidia_smi_log><driver_version> 550 </driver_version><gpu id="x"><uuid>GPU-1</uuid><product_name>A &amp; B</product_name></gpu><gpu><pci><pci_bus_id>00010000:18:00.0</pci_bus_id></pci></gpu></nvidia_smi_log>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseSMIXML(bytes.NewReader(data))
		if err != nil {
			return
		}
		n, ok := countSMIGPUs(data)
		if !ok {
			t.Fatal("accepted what a token walk cannot read")
		}
		if want := min(n, maxGPUs); len(st.GPUs) != want {
			t.Fatalf("%d GPUs, the document has %d <gpu>", len(st.GPUs), n)
		}
		var b bytes.Buffer
		esc := func(s string) string {
			var e bytes.Buffer
			_ = xml.EscapeText(&e, []byte(s))
			return e.String()
		}
		fmt.Fprintf(&b, "<nvidia_smi_log><driver_version>%s</driver_version>\n", esc(st.DriverVersion))
		for i, g := range st.GPUs {
			if g.PCIAddress == "" {
				if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.HasPrefix(w, fmt.Sprintf("GPU %d ", i)) }) {
					t.Fatalf("GPU %d has no address and no warning: %q", i, st.Warnings)
				}
			} else if a, err := NormalizePCIAddress(g.PCIAddress); err == nil && a != g.PCIAddress {
				t.Fatalf("address %q is not normalised (%q)", g.PCIAddress, a)
			}
			fmt.Fprintf(&b, "<gpu><product_name>%s</product_name><uuid>%s</uuid><pci><pci_bus_id>%s</pci_bus_id></pci></gpu>\n",
				esc(g.Name), esc(g.UUID), esc(g.PCIAddress))
		}
		b.WriteString("</nvidia_smi_log>\n")
		again, err := ParseSMIXML(bytes.NewReader(b.Bytes()))
		if err != nil || len(again.GPUs) != len(st.GPUs) || again.DriverVersion != st.DriverVersion {
			t.Fatalf("rendered %q: %+v, %v", b.String(), again, err)
		}
		for i, g := range st.GPUs {
			h := again.GPUs[i]
			if g.Name != h.Name || g.UUID != h.UUID || g.PCIAddress != h.PCIAddress {
				t.Fatalf("GPU %d: %q %q %q, after the round trip %q %q %q", i, g.Name, g.UUID, g.PCIAddress, h.Name, h.UUID, h.PCIAddress)
			}
		}
	})
}

// FuzzParseQueryCSV: one GPU per data row, each with the uuid a second
// reader finds in that row's uuid column; and the GPUs rendered back as
// CSV (uuid, pci.bus_id, index, name) parse to the same GPUs.
func FuzzParseQueryCSV(f *testing.F) {
	addFile(f, "testdata/smi/h100x2.csv")
	f.Add([]byte("uuid, pci.bus_id\nGPU-1, 00000000:18:00.0\n"))
	f.Add([]byte("index, name, uuid, pci.bus_id\n1, \"A, b\", GPU-1, 00000000:18:00.0\n0, x, GPU-0, 0001:19:00.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseQueryCSV(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Second reader: the uuid column by its exact header, the cells
		// trimmed; the parser's header aliases and units are not needed
		// for the uuids.
		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		cr.TrimLeadingSpace = true // nvidia-smi separates with ", "
		rows, err := cr.ReadAll()
		if err != nil || len(rows) == 0 {
			t.Fatalf("the parser accepted what encoding/csv refuses: %v", err)
		}
		uc := -1
		for i, h := range rows[0] {
			if strings.TrimSpace(h) == "uuid" {
				uc = i
			}
		}
		if uc < 0 {
			t.Fatalf("accepted a header without uuid: %q", rows[0])
		}
		if len(st.GPUs) != len(rows)-1 {
			t.Fatalf("%d GPUs from %d data rows", len(st.GPUs), len(rows)-1)
		}
		want := map[string]int{}
		for _, r := range rows[1:] {
			if uc < len(r) {
				want[strings.TrimSpace(r[uc])]++
			}
		}
		for _, g := range st.GPUs {
			if g.UUID == "" || want[g.UUID] == 0 {
				t.Fatalf("GPU uuid %q is not in the uuid column %v", g.UUID, want)
			}
			want[g.UUID]--
			if a, err := NormalizePCIAddress(g.PCIAddress); err == nil && a != g.PCIAddress {
				t.Fatalf("PCI address %q is not normalised (%q)", g.PCIAddress, a)
			}
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write([]string{"uuid", "pci.bus_id", "index", "name"})
		for _, g := range st.GPUs {
			_ = w.Write([]string{g.UUID, g.PCIAddress, strconv.Itoa(g.Index), g.Name})
		}
		w.Flush()
		again, err := ParseQueryCSV(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("rendered %q does not parse: %v", b.String(), err)
		}
		if len(again.GPUs) != len(st.GPUs) {
			t.Fatalf("%d GPUs, %d after the round trip", len(st.GPUs), len(again.GPUs))
		}
		for i, g := range st.GPUs {
			h := again.GPUs[i]
			if g.UUID != h.UUID || g.PCIAddress != h.PCIAddress || g.Index != h.Index || g.Name != h.Name {
				t.Fatalf("GPU %d: %+v, after the round trip %+v", i, g, h)
			}
		}
	})
}

// FuzzParseFake: an error names the file; accepted GPUs have unique
// uuids; and the status written as 'gpu status -o json' writes it (the
// schema the file has) parses back to the same status.
func FuzzParseFake(f *testing.F) {
	addFile(f, "testdata/hosts/h100x8/etc/gpunode/fake-gpus.yaml")
	addFile(f, "testdata/hosts/a100-mig/etc/gpunode/fake-gpus.yaml")
	f.Add([]byte("gpus: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseFake(data, "fuzz.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, g := range st.GPUs {
			if g.UUID == "" || seen[g.UUID] {
				t.Fatalf("accepted missing or duplicate UUID %q", g.UUID)
			}
			seen[g.UUID] = true
		}
		out, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseFake(out, "again.json")
		if err != nil {
			t.Fatalf("the status written back does not parse: %v\n%s", err, out)
		}
		if out2, err := json.Marshal(again); err != nil || !bytes.Equal(out2, out) {
			t.Fatalf("round trip differs (%v):\n%s\n%s", err, out, out2)
		}
	})
}

func FuzzNormalizePCIAddress(f *testing.F) {
	for _, s := range []string{"00000000:18:00.0", "0000:2a:00.0", "1:2:3.4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := NormalizePCIAddress(s)
		if err != nil {
			return
		}
		b, err := NormalizePCIAddress(a)
		if err != nil || a != b {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", s, a, b, err)
		}
	})
}

// checkCUDAVersion is the second reader: v is digits.digits[...], without
// surrounding space, major and minor at most 1000.
func checkCUDAVersion(t *testing.T, from string, v string) {
	t.Helper()
	// The spec's form of a toolkit version: decimal major and minor, then
	// optionally more dot-separated parts (not checked: only major and
	// minor are compared).
	m := regexp.MustCompile(`^([0-9]+)\.([0-9]+)(\..*)?$`).FindStringSubmatch(v)
	if m == nil || strings.TrimSpace(v) != v {
		t.Fatalf("%s: accepted %q, not major.minor[.patch]", from, v)
	}
	for _, p := range m[1:3] {
		if n, err := strconv.Atoi(p); err != nil || n > 1000 {
			t.Fatalf("%s: accepted %q, part %q out of range", from, v, p)
		}
	}
}

// FuzzCUDAVersion: an accepted version is major.minor[.patch] in range and
// is the cuda.version a generic JSON decode finds (the first field after
// "CUDA Version" for the text form); writing it back in either form and
// reading it again gives the same version from both readers.
func FuzzCUDAVersion(f *testing.F) {
	f.Add([]byte(`{"cuda":{"version":"12.4.1"}}`), "CUDA Version 10.2.89")
	f.Add([]byte(`{"cuda":{"version":" 12.4"}}`), "CUDA Version +1.2\n")
	f.Fuzz(func(t *testing.T, js []byte, txt string) {
		var accepted []string
		if v, err := ParseCUDAVersionJSON(js); err == nil {
			checkCUDAVersion(t, "json", v)
			var doc map[string]any
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatalf("accepted JSON that does not decode: %v", err)
			}
			// encoding/json matches keys without regard to case; when
			// several keys fold to the same name the last wins, an order a
			// map loses, so that case is not compared.
			fold := func(m map[string]any, key string) (any, int) {
				var v any
				n := 0
				for k, x := range m {
					if strings.EqualFold(k, key) {
						v, n = x, n+1
					}
				}
				return v, n
			}
			c, n1 := fold(doc, "cuda")
			cuda, _ := c.(map[string]any)
			ver, n2 := fold(cuda, "version")
			if got, _ := ver.(string); n1 == 1 && n2 == 1 && strings.TrimSpace(got) != v {
				t.Fatalf("json: returned %q, the document has %q", v, got)
			}
			accepted = append(accepted, v)
		}
		if v, err := ParseCUDAVersionTxt(txt); err == nil {
			checkCUDAVersion(t, "txt", v)
			rest, ok := strings.CutPrefix(strings.TrimSpace(txt), "CUDA Version ")
			if fs := strings.Fields(rest); !ok || len(fs) == 0 || fs[0] != v {
				t.Fatalf("txt: returned %q from %q", v, txt)
			}
			accepted = append(accepted, v)
		}
		for _, v := range accepted {
			if !utf8.ValidString(v) {
				continue // JSON cannot carry it unchanged
			}
			js, err := json.Marshal(map[string]any{"cuda": map[string]string{"version": v}})
			if err != nil {
				t.Fatal(err)
			}
			a, err1 := ParseCUDAVersionJSON(js)
			b, err2 := ParseCUDAVersionTxt("CUDA Version " + v + "\n")
			if err1 != nil || err2 != nil || a != v || b != v {
				t.Fatalf("%q written back reads as %q (%v) and %q (%v)", v, a, err1, b, err2)
			}
		}
	})
}
