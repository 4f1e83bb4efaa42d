package gpu

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func addFile(f *testing.F, p string) {
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

func FuzzParseSMIXML(f *testing.F) {
	addFile(f, "testdata/smi/h100x2-v12.xml")
	addFile(f, "testdata/smi/a100-v11-throttle.xml")
	f.Add([]byte(`<nvidia_smi_log><gpu id="00000000:18:00.0"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseSMIXML(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, g := range st.GPUs {
			if _, err := NormalizePCIAddress(g.PCIAddress); err != nil {
				t.Fatalf("accepted GPU with bad PCI address %q", g.PCIAddress)
			}
		}
	})
}

func FuzzParseQueryCSV(f *testing.F) {
	addFile(f, "testdata/smi/h100x2.csv")
	f.Add([]byte("uuid, pci.bus_id\nGPU-1, 00000000:18:00.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseQueryCSV(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, g := range st.GPUs {
			if g.UUID == "" {
				t.Fatal("accepted a GPU without UUID")
			}
		}
	})
}

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

func FuzzCUDAVersion(f *testing.F) {
	f.Add([]byte(`{"cuda":{"version":"12.4.1"}}`), "CUDA Version 10.2.89")
	f.Fuzz(func(t *testing.T, js []byte, txt string) {
		if v, err := ParseCUDAVersionJSON(js); err == nil {
			if _, _, err := parseMajorMinor(v); err != nil {
				t.Fatalf("accepted %q", v)
			}
		}
		if v, err := ParseCUDAVersionTxt(txt); err == nil {
			if _, _, err := parseMajorMinor(v); err != nil {
				t.Fatalf("accepted %q", v)
			}
		}
	})
}
