package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeSMIOnPath puts the stand-in nvidia-smi (internal/gpu/testdata/bin)
// first on PATH, serving the recorded sample xml (and csv) in mode.
func fakeSMIOnPath(t *testing.T, xml, csv, mode string) {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join("..", "gpu", "testdata", "recorded")
	for src, dst := range map[string]string{xml: "q.xml", csv: "query.csv"} {
		if src == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(rec, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := filepath.Abs(filepath.Join("..", "gpu", "testdata", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("FAKE_SMI_DIR", dir)
	t.Setenv("FAKE_SMI_MODE", mode)
}

// The nvidia-smi backend end to end on a recorded A100 with 4 MIG devices:
// gpu status shows the MIG devices with inferred profiles, mig export
// reads them (it refused the backend before), mig apply names what it
// needs.
func TestGPUStatusRecordedSMI(t *testing.T) {
	fakeSMIOnPath(t, "a100-sxm4-80gb-mig-535.xml", "", "")
	root := gpuHost("nodriver")
	out, stderr, code := runGPUCLI(t, "gpu", "status", "-o", "json", "--gpu-backend", "nvidia-smi", "--gpu-smi-live", "--root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st struct {
		Backend  string   `json:"backend"`
		Warnings []string `json:"warnings"`
		GPUs     []struct {
			MIGInstances []struct {
				GPUInstanceID int    `json:"gpuInstanceId"`
				Profile       string `json:"profile"`
				SMCount       int    `json:"smCount"`
			} `json:"migInstances"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Backend != "nvidia-smi" || len(st.GPUs) != 1 || len(st.GPUs[0].MIGInstances) != 4 || len(st.Warnings) != 1 {
		t.Fatalf("status %s", out)
	}
	for _, gi := range st.GPUs[0].MIGInstances {
		if gi.Profile != "1g.20gb" || gi.SMCount != 14 {
			t.Errorf("GI %d: profile %q, %d SMs", gi.GPUInstanceID, gi.Profile, gi.SMCount)
		}
	}
	out, stderr, code = runGPUCLI(t, "mig", "export", "--gpu-backend", "nvidia-smi", "--gpu-smi-live", "--root", root)
	if code != 0 || !strings.Contains(out, "1g.20gb: 4") {
		t.Errorf("mig export: exit %d\n%s%s", code, out, stderr)
	}
	_, stderr, code = runGPUCLI(t, "mig", "apply", "-f", migLiveConfig(), "-c", "all-1g.10gb", "--gpu-backend", "nvidia-smi", "--gpu-smi-live", "--root", root)
	if code == 0 || !strings.Contains(stderr, "mig apply with --gpu-backend nvidia-smi") || !strings.Contains(stderr, "NVML backend") {
		t.Errorf("mig apply: exit %d %s", code, stderr)
	}
}

// A hung nvidia-smi ends at --gpu-timeout with an error naming the call.
func TestGPUStatusTimeout(t *testing.T) {
	fakeSMIOnPath(t, "tesla-t4-515.xml", "", "hang")
	start := time.Now()
	_, stderr, code := runGPUCLI(t, "gpu", "status", "--gpu-backend", "nvidia-smi", "--gpu-smi-live", "--gpu-timeout", "300ms", "--root", gpuHost("nodriver"))
	if code < 3 || !strings.Contains(stderr, "nvidia-smi -q -x (GPU all): timed out") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// Defect: topo never showed NV# through the nvidia-smi backend. The
// recorded 'topo -m' (GPU0-GPU1 NV4) beside an nvidia-smi document whose
// two GPUs sit at the DGX fixture's GPU0 and GPU1 addresses.
func TestTopoNVLinkThroughSMI(t *testing.T) {
	dir := t.TempDir()
	xml, err := os.ReadFile(filepath.Join("..", "gpu", "testdata", "smi", "h100x2-v12.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// The GPUs take the UUIDs of the recorded nvlink -s sample (GPU0 and
	// GPU1 there have 4 active links each).
	x := strings.ReplaceAll(string(xml), "00000000:2A:00.0", "00000000:19:00.0")
	x = strings.ReplaceAll(x, "GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b10000", "GPU-5baec991-de63-c196-1766-04c38407e133")
	x = strings.ReplaceAll(x, "GPU-5b1a3c2e-7d4f-4e8a-9c1b-0000a0b10001", "GPU-39fc2446-cb50-2067-2867-d95efd470a2c")
	rec := filepath.Join("..", "gpu", "testdata", "recorded")
	tm, err := os.ReadFile(filepath.Join(rec, "topo-m-rtx-a6000x3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	nl, err := os.ReadFile(filepath.Join(rec, "nvlink-s-rtx-a6000x3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"q.xml": []byte(x), "topo-m.txt": tm, "nvlink-s.txt": nl} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin, _ := filepath.Abs(filepath.Join("..", "gpu", "testdata", "bin"))
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("FAKE_SMI_DIR", dir)
	t.Setenv("FAKE_SMI_MODE", "")
	root := filepath.Join("..", "..", "testdata", "hosts", "dgx-h100")
	out, stderr, code := runGPUCLI(t, "topo", "-o", "json", "--gpu-backend", "nvidia-smi", "--gpu-smi-live", "--root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var tp struct {
		Links []struct{ A, B, Class string } `json:"links"`
	}
	if err := json.Unmarshal([]byte(out), &tp); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range tp.Links {
		if l.A == "GPU0" && l.B == "GPU1" {
			found = l.Class == "NV4"
		}
		if l.A == "GPU0" && l.B == "GPU2" && strings.HasPrefix(l.Class, "NV") {
			t.Errorf("GPU0-GPU2 %s: not an NVLink pair", l.Class)
		}
	}
	if !found {
		t.Errorf("GPU0-GPU1 not NV4: %+v", tp.Links[:3])
	}
	// Without --gpu-smi-live the captured root never runs this host's
	// nvidia-smi: topo keeps the PCIe classes and says why.
	out, _, code = runGPUCLI(t, "topo", "-o", "json", "--gpu-backend", "nvidia-smi", "--root", root)
	if code != 0 || !strings.Contains(out, "--gpu-smi-live") || strings.Contains(out, `"class": "NV4"`) {
		t.Errorf("refused: exit %d %s", code, out)
	}
}
