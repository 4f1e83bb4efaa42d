package gpu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
)

// recordedSMI is a stand-in nvidia-smi serving recorded outputs: "-q -x"
// gets xml, "--query-gpu" csv, "nvlink -s" and "topo -m" their samples
// (empty output when none is given, as nvidia-smi prints on GPUs without
// NVLink). hang makes every call block until its context ends; ignoreCtx
// makes it block regardless (a driver call that cannot be interrupted).
type recordedSMI struct {
	xml, csv, nvlink, topo, list string
	// rejectNewer fails a --query-gpu asking for remapped_rows.* like a
	// pre-R460 driver.
	rejectNewer bool
	hang        bool
	ignoreCtx   chan struct{}
	calls       []string
}

func (r *recordedSMI) Run(ctx context.Context, c Cmd) ([]byte, error) {
	key := strings.Join(c.Args, " ")
	r.calls = append(r.calls, key)
	if r.ignoreCtx != nil {
		<-r.ignoreCtx
		return nil, errors.New("released")
	}
	if r.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	switch {
	case key == "-q -x" && r.xml != "":
		return []byte(r.xml), nil
	case strings.HasPrefix(key, "--query-gpu="):
		if r.rejectNewer && strings.Contains(key, "remapped_rows") {
			return nil, errors.New(`exit status 2: Field "remapped_rows.correctable" is not a valid field to query.`)
		}
		if r.csv != "" {
			return []byte(r.csv), nil
		}
	case key == "nvlink -s":
		return []byte(r.nvlink), nil
	case key == "topo -m":
		return []byte(r.topo), nil
	case key == "-L":
		return []byte(r.list), nil
	}
	return nil, errors.New("exit status 9: not recorded")
}

func readRecorded(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func recordedGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden(t, filepath.Join("recorded", name), got)
}

// TestRecordedSamples: every recorded 'nvidia-smi -q -x' document through
// the nvidia-smi backend, as 'gpu status' (json and table) and 'gpu audit'
// (Audit + HealthChecks) see it.
//
// Each golden was checked by hand against its XML (reviewer: the issue 13
// helper, 2026-12-01). Checked per sample: driver and CUDA version,
// attached_gpus vs the <gpu> elements listed (warning), name, UUID, bus id
// in sysfs form, pci_device_id, persistence, compute mode, MIG mode, ECC
// mode and counters, clock values (current, application, default
// application, max), clock-event reasons (event and throttle spellings),
// fb total and used, utilisation, temperature, power draw and limit
// (v13: average_power_draw as the draw, instant_power_draw apart), PCIe
// gen/width, retired pages / remapped rows, gpu_reset_status and
// gpu_recovery_action, and for the A100 the four <mig_device> entries
// (GI 3-6, CI 0, 14 SMs, 19968 MiB total, 12 MiB used). Audit goldens:
// persistence off -> drift (A100, T4), ECC off -> drift (A5000), reset
// status "No" -> ok (A100), recovery action "None" -> ok (A5000), retired
// pages 0 -> ok (T4), no CUDA runtime given -> no compatibility check.
// The A5000 document has both GPUs (81:00.0 and c1:00.0; GPU 1: 17253 MiB
// used, 15 C, 13.60 W average / 13.59 W instant), checked the same way; no
// NVLink is active on any sample, so topo -m is not run.
func TestRecordedSamples(t *testing.T) {
	for _, name := range []string{"a100-sxm4-80gb-mig-535", "tesla-t4-515", "rtx-a5000x2-v13-590"} {
		t.Run(name, func(t *testing.T) {
			r := &recordedSMI{xml: readRecorded(t, name+".xml")}
			st, err := NewSMI(r).Status(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			recordedGolden(t, name+".status.json", mustJSON(t, st))
			var tb bytes.Buffer
			if err := st.WriteTable(&tb, output.Options{}); err != nil {
				t.Fatal(err)
			}
			recordedGolden(t, name+".status.txt", tb.Bytes())
			checks := append(Audit(st, AuditOptions{}), HealthChecks(st, HealthOptions{})...)
			recordedGolden(t, name+".audit.json", mustJSON(t, checks))
		})
	}
}

// Defect: <mig_devices> never reached 'gpu status -o json'.
func TestRecordedMIGDevices(t *testing.T) {
	st, err := ParseSMIXML(strings.NewReader(readRecorded(t, "a100-sxm4-80gb-mig-535.xml")))
	if err != nil {
		t.Fatal(err)
	}
	g := st.GPUs[0]
	if len(g.MIGInstances) != 4 {
		t.Fatalf("%d MIG instances, want 4: %+v", len(g.MIGInstances), g.MIGInstances)
	}
	for i, gi := range g.MIGInstances {
		if gi.GPUInstanceID != 3+i || gi.SMCount != 14 || gi.MemoryBytes != 19968<<20 || gi.ProfileID != ProfileUnknown || gi.Size != 0 {
			t.Errorf("GI %d: %+v", i, gi)
		}
		if len(gi.ComputeInstances) != 1 || gi.ComputeInstances[0].ComputeInstanceID != 0 || *gi.ComputeInstances[0].Index != i ||
			*gi.ComputeInstances[0].MemoryUsedBytes != 12<<20 {
			t.Errorf("GI %d CIs: %+v", i, gi.ComputeInstances)
		}
	}
	if st, _ := ParseSMIXML(strings.NewReader(readRecorded(t, "tesla-t4-515.xml"))); len(st.GPUs[0].MIGInstances) != 0 {
		t.Errorf("<mig_devices>None</mig_devices> gave %+v", st.GPUs[0].MIGInstances)
	}
}

// Defect: attached_gpus was not compared with the GPUs listed.
func TestRecordedAttachedGPUs(t *testing.T) {
	st, err := ParseSMIXML(strings.NewReader(readRecorded(t, "a100-sxm4-80gb-mig-535.xml")))
	if err != nil {
		t.Fatal(err)
	}
	if st.AttachedGPUs == nil || *st.AttachedGPUs != 4 || len(st.GPUs) != 1 ||
		len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "4 attached GPUs but lists 1") {
		t.Errorf("attached %v, %d GPUs, warnings %q", st.AttachedGPUs, len(st.GPUs), st.Warnings)
	}
	st, _ = ParseSMIXML(strings.NewReader(readRecorded(t, "tesla-t4-515.xml")))
	if len(st.Warnings) != 0 {
		t.Errorf("T4 (1 of 1): warnings %q", st.Warnings)
	}
}

// Defect: one bus id that does not parse (a 5-digit VMD domain) failed the
// whole document.
func TestRecordedBusIDs(t *testing.T) {
	doc := readRecorded(t, "tesla-t4-515.xml")
	vmd := strings.ReplaceAll(doc, "00000000:00:1E.0", "00010000:E1:00.0")
	st, err := ParseSMIXML(strings.NewReader(vmd))
	if err != nil {
		t.Fatal(err)
	}
	if g := st.GPUs[0]; g.PCIAddress != "10000:e1:00.0" || len(st.Warnings) != 0 {
		t.Errorf("VMD address %q, warnings %q", g.PCIAddress, st.Warnings)
	}
	// Two GPUs, one with a bus id nothing can parse: both listed, one
	// warning.
	bad := strings.Replace(doc, "<gpu id=\"00000000:00:1E.0\">", "<gpu id=\"zz\">", 1)
	bad = strings.Replace(bad, "<pci_bus_id>00000000:00:1E.0</pci_bus_id>", "<pci_bus_id>zz</pci_bus_id>", 1)
	i := strings.Index(doc, "<gpu id=")
	j := strings.Index(doc, "</gpu>") + len("</gpu>")
	two := strings.Replace(bad, "</gpu>", "</gpu>\n"+strings.ReplaceAll(doc[i:j], "GPU-d37e67a5", "GPU-e37e67a5"), 1)
	two = strings.Replace(two, "<attached_gpus>1</attached_gpus>", "<attached_gpus>2</attached_gpus>", 1)
	st, err = ParseSMIXML(strings.NewReader(two))
	if err != nil {
		t.Fatalf("one bad bus id failed the document: %v", err)
	}
	if len(st.GPUs) != 2 || st.GPUs[0].PCIAddress != "" || st.GPUs[1].PCIAddress != "0000:00:1e.0" ||
		len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "pci_bus_id") {
		t.Errorf("GPUs %d (%q, %q), warnings %q", len(st.GPUs), st.GPUs[0].PCIAddress, st.GPUs[len(st.GPUs)-1].PCIAddress, st.Warnings)
	}
}

// Defect: on schema v13 the instant reading was taken as the power draw;
// NVML and CSV power.draw are the one-second average.
func TestRecordedPowerV13(t *testing.T) {
	st, err := ParseSMIXML(strings.NewReader(readRecorded(t, "rtx-a5000x2-v13-590.xml")))
	if err != nil {
		t.Fatal(err)
	}
	if p := st.GPUs[0].Power; p.DrawW != 6.41 || p.InstantW != 6.52 || p.LimitW != 230 {
		t.Errorf("power %+v, want draw 6.41 (average), instant 6.52, limit 230", p)
	}
	// v12 and older: power_draw is the draw.
	st, _ = ParseSMIXML(strings.NewReader(readRecorded(t, "tesla-t4-515.xml")))
	if p := st.GPUs[0].Power; p.DrawW != 26.78 || p.InstantW != 0 || p.LimitW != 70 {
		t.Errorf("T4 power %+v", p)
	}
}

// Defect: the CSV fallback asked for clocks_event_reasons.active (R535+
// only) and lost retired pages and remapped rows; an old driver's
// rejection of a newer field is retried with the fields every driver has.
func TestCSVFallbackFields(t *testing.T) {
	for _, f := range append(append([]string{}, QueryFields...), QueryFieldsNewer...) {
		if strings.HasPrefix(f, "clocks_event_reasons") {
			t.Errorf("query field %s exists only from R535 on", f)
		}
	}
	csv := readRecorded(t, "tesla-t4-515.csv")
	r := &recordedSMI{xml: "not xml", csv: csv, rejectNewer: true}
	st, err := NewSMI(r).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	q := 0
	for _, c := range r.calls {
		if strings.HasPrefix(c, "--query-gpu=") {
			q++
			if strings.Contains(c, "clocks_event_reasons") {
				t.Errorf("asked for clocks_event_reasons: %s", c)
			}
		}
	}
	if q != 2 {
		t.Errorf("%d --query-gpu runs, want 2 (full, then the fields every driver has): %q", q, r.calls)
	}
	xs, err := ParseSMIXML(strings.NewReader(readRecorded(t, "tesla-t4-515.xml")))
	if err != nil {
		t.Fatal(err)
	}
	// The CSV path carries what the XML path has, except what the query
	// cannot ask for (architecture, the driver's CUDA version, default
	// application clocks, instant power, health).
	project := func(s Status) Status {
		s.CUDAVersion, s.Sources, s.Warnings, s.FailedCalls = "", nil, nil, nil
		for i := range s.GPUs {
			g := &s.GPUs[i]
			g.Architecture, g.Clocks.DefaultAppGraphicsMHz, g.Health = "", 0, nil
			g.NVLinks, g.NVLinkPeers = nil, nil
		}
		return s
	}
	if got, want := mustJSON(t, project(st)), mustJSON(t, project(xs)); !bytes.Equal(got, want) {
		t.Errorf("CSV model differs from XML model:\n--- csv\n%s\n--- xml\n%s", got, want)
	}
	if st.GPUs[0].RetiredPages == nil || st.GPUs[0].MemoryUsedBytes == nil || *st.GPUs[0].MemoryUsedBytes != 1032<<20 {
		t.Errorf("CSV lost retired pages or memory used: %+v", st.GPUs[0])
	}
}

// Defect: the CUDA compatibility check was ok on an unknown driver CUDA
// version (the CSV fallback has none).
func TestCUDACompatUnknownDriverCUDA(t *testing.T) {
	c, ok := CUDACompat("535.54.03", "", "12.4", nil)
	if !ok || c.Status != check.Info || !strings.Contains(c.Detail, "unknown") {
		t.Errorf("unknown driver CUDA: %+v", c)
	}
	c, _ = CUDACompat("535.54.03", "N/A", "12.4", nil)
	if c.Status == check.OK {
		t.Errorf("unparsable driver CUDA: %+v", c)
	}
	// A driver below the major's minimum is an error whatever is unknown.
	if c, _ := CUDACompat("470.223.02", "", "12.1", nil); c.Status != check.Error {
		t.Errorf("old driver, unknown CUDA: %+v", c)
	}
	if c, _ := CUDACompat("535.54.03", "12.2", "12.2", nil); c.Status != check.OK {
		t.Errorf("known and equal: %+v", c)
	}
}

// Defect: nvidia-smi ran without a timeout; a hung driver blocked gpu
// status until killed.
func TestSMITimeout(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	_, err := NewSMITimeout(&recordedSMI{hang: true}, 50*time.Millisecond).Status(ctx)
	var ce *CallError
	if !errors.As(err, &ce) || !ce.Timeout || ce.Call != "nvidia-smi -q -x" || ce.GPU != "all" || !errors.Is(err, ErrTimeout) {
		t.Fatalf("hang: %v", err)
	}
	if !strings.Contains(err.Error(), "--gpu-timeout") {
		t.Errorf("message %q does not name the flag", err)
	}
	// A call that ignores its context is abandoned at the deadline.
	rel := make(chan struct{})
	defer close(rel)
	_, err = NewSMITimeout(&recordedSMI{ignoreCtx: rel}, 50*time.Millisecond).Status(ctx)
	if !errors.As(err, &ce) || !ce.Timeout {
		t.Fatalf("uninterruptible call: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// Setters name the GPU.
	err = NewSMITimeout(&recordedSMI{hang: true}, 20*time.Millisecond).SetPersistence(ctx, "GPU-1", true)
	if !errors.As(err, &ce) || ce.GPU != "GPU-1" || ce.Call != "nvidia-smi -i GPU-1 -pm 1" {
		t.Errorf("setter timeout: %v", err)
	}
}

// TestFakeNVIDIASMIScript: the stand-in nvidia-smi (testdata/bin) through
// the real ExecRunner: served samples, a failing driver, and a hang the
// deadline kills.
func TestFakeNVIDIASMIScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	for src, dst := range map[string]string{"a100-sxm4-80gb-mig-535.xml": "q.xml", "tesla-t4-515.csv": "query.csv"} {
		if err := os.WriteFile(filepath.Join(dir, dst), []byte(readRecorded(t, src)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("testdata/bin/nvidia-smi")
	if err != nil {
		t.Fatal(err)
	}
	// The served and failing runs get 10 s (a loaded CI machine took more
	// than 300 ms to fork a shell); the hang gets 300 ms and must end well
	// within 4 s.
	open := func(mode string, timeout time.Duration) Backend {
		b := NewSMITimeout(ExecRunner{Environ: []string{"FAKE_SMI_DIR=" + dir, "FAKE_SMI_MODE=" + mode, "PATH=/usr/bin:/bin"}}, timeout)
		b.(*smi).path = script
		return b
	}
	ctx := context.Background()
	st, err := open("", 10*time.Second).Status(ctx)
	if err != nil || len(st.GPUs) != 1 || len(st.GPUs[0].MIGInstances) != 4 {
		t.Fatalf("served: %v %+v", err, st)
	}
	if _, err := open("fail", 10*time.Second).Status(ctx); err == nil || !strings.Contains(err.Error(), "couldn't communicate with the NVIDIA driver") {
		t.Errorf("failing driver: %v", err)
	}
	start := time.Now()
	_, err = open("hang", 300*time.Millisecond).Status(ctx)
	if !errors.Is(err, ErrTimeout) || time.Since(start) > 4*time.Second {
		t.Errorf("hang: %v after %v", err, time.Since(start))
	}
}

// Defect: topo never showed NV# through the nvidia-smi backend.
func TestSMINVLinkClasses(t *testing.T) {
	// Three GPUs with the recorded UUIDs; the addresses are assumptions
	// (the sample has none).
	st := Status{Backend: KindNVIDIASMI, GPUs: []GPU{
		{Index: 0, UUID: "GPU-5baec991-de63-c196-1766-04c38407e133", PCIAddress: "0000:01:00.0"},
		{Index: 1, UUID: "GPU-39fc2446-cb50-2067-2867-d95efd470a2c", PCIAddress: "0000:25:00.0"},
		{Index: 2, UUID: "GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3", PCIAddress: "0000:41:00.0"},
	}}
	r := &recordedSMI{nvlink: readRecorded(t, "nvlink-s-rtx-a6000x3.txt"), topo: readRecorded(t, "topo-m-rtx-a6000x3.txt")}
	(&smi{run: r, timeout: time.Second}).addNVLinks(context.Background(), &st)
	want := map[[2]string]string{{"0000:01:00.0", "0000:25:00.0"}: "NV4"}
	if got := NVLinkClassesOf(st); !reflect.DeepEqual(got, want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	if n := st.GPUs[0].ActiveNVLinks(); n != 4 || st.GPUs[0].NVLinks[0].SpeedGBps != 14.062 || len(st.GPUs[2].NVLinks) != 0 {
		t.Errorf("links %+v / %+v", st.GPUs[0].NVLinks, st.GPUs[2].NVLinks)
	}
	if !reflect.DeepEqual(st.Sources, []string{"nvidia-smi nvlink -s", "nvidia-smi topo -m"}) {
		t.Errorf("sources %q", st.Sources)
	}
	m, err := ParseTopoMatrix([]byte(readRecorded(t, "topo-m-rtx-a6000x3.txt")))
	if err != nil || m.String() != "GPU0-GPU1 NV4, GPU0-GPU2 NODE, GPU1-GPU2 NODE" {
		t.Errorf("matrix %q %v", m.String(), err)
	}
	if _, err := ParseTopoMatrix([]byte("garbage\n")); err == nil {
		t.Error("no header: no error")
	}
	// NVLink commands that hang are recorded failed calls, not a failed
	// status.
	st2 := st
	st2.Sources, st2.FailedCalls = nil, nil
	(&smi{run: &recordedSMI{hang: true}, timeout: 20 * time.Millisecond}).addNVLinks(context.Background(), &st2)
	if len(st2.FailedCalls) != 2 || st2.FailedCalls[0].Call != "nvidia-smi nvlink -s" || st2.FailedCalls[1].Call != "nvidia-smi topo -m" || !st2.FailedCalls[1].Timeout {
		t.Errorf("failed calls %+v", st2.FailedCalls)
	}
	var tb bytes.Buffer
	if err := st2.WriteTable(&tb, output.Options{}); err != nil || !strings.Contains(tb.String(), "warning: nvidia-smi topo -m (GPU all): timed out") {
		t.Errorf("table does not show the failed call: %v\n%s", err, tb.String())
	}
}

// Defect: --gpu-backend nvidia-smi with a non-/ root ran the live host's
// nvidia-smi beside the captured sysfs without saying so.
func TestSMIRefusedUnderRoot(t *testing.T) {
	h := host(t, "h100x8")
	_, err := Open(context.Background(), Options{Kind: KindNVIDIASMI, Host: h})
	if !errors.Is(err, ErrLiveSMIRefused) || !strings.Contains(err.Error(), "--gpu-smi-live") {
		t.Errorf("refusal: %v", err)
	}
	b, err := Open(context.Background(), Options{Kind: KindNVIDIASMI, Host: h, LiveSMI: true})
	if err != nil || b.Name() != KindNVIDIASMI {
		t.Errorf("with LiveSMI: %v", err)
	}
}

func writeHostFile(t *testing.T, root, p, data string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkByKey(cs []check.Check) map[string]check.Check {
	m := map[string]check.Check{}
	for _, c := range cs {
		m[c.Key()] = c
	}
	return m
}

// kernLog holds driver lines in the form the driver logs them (the GPU
// addresses are the h100x8 fixture's).
const kernLog = `Dec  1 03:12:44 node kernel: [1234.5] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.
Dec  1 03:12:45 node kernel: [1235.1] NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.
Dec  1 04:00:00 node kernel: [4000.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=4242, name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address
Dec  1 04:00:01 node kernel: [4001.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=4242, name=python, Graphics Exception: ESR 0x504648=0x1000e
Dec  1 05:00:00 node kernel: [5000.0] NVRM: Xid (PCI:0000:3a:00): 94, pid=777, name=train, Contained: SM (0x1). RST: No, D-RST: No
Dec  1 06:00:00 node kernel: [6000.0] NVRM: Xid (PCI:0000:ff:00): 48, pid=1, name=x, An uncorrectable double bit error
`

// XIDs, fabric manager and retired pages as checks.
func TestHealthChecks(t *testing.T) {
	root := t.TempDir()
	writeHostFile(t, root, "/var/log/kern.log", kernLog)
	h, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenFake(host(t, "h100x8"), FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := b.Status(context.Background())
	st.GPUs[3].RetiredPages = &RetiredPages{SingleBit: 50, DoubleBit: 12}
	st.GPUs[4].RetiredPages = &RetiredPages{DoubleBit: 2}
	st.GPUs[5].Health = &Health{RecoveryAction: "Drain and Reset", ResetRequired: ptr(true)}
	st.GPUs[6].Health = &Health{FabricState: "In Progress", FabricStatus: "N/A"}
	st.GPUs[7].Health = &Health{FabricState: "Completed", FabricStatus: "Success",
		NVLinkErrors: []NVLinkErrors{{Link: 0}, {Link: 3, CRCFlit: 12, Replay: 1}}}
	st.FailedCalls = []CallError{{Call: "nvidia-smi topo -m", GPU: "all", Timeout: true, After: time.Second}}
	m := checkByKey(HealthChecks(st, HealthOptions{Host: h}))
	for key, want := range map[string]check.Status{
		"gpu.health.xid/gpu0":           check.Error, // 79
		"gpu.health.xid/gpu1":           check.Info,  // 13 x2
		"gpu.health.xid/gpu2":           check.Drift, // 94
		"gpu.health.xid/gpu3":           check.OK,
		"gpu.health.xid/0000:ff:00":     check.Error, // 48 on a GPU not listed
		"gpu.health.retired-pages/gpu3": check.Error,
		"gpu.health.retired-pages/gpu4": check.Drift,
		"gpu.health.recovery/gpu5":      check.Error,
		"gpu.health.reset/gpu5":         check.Error,
		"gpu.health.fabric/gpu6":        check.Error,
		"gpu.health.fabric/gpu7":        check.OK,
		"gpu.health.nvlink/gpu7":        check.Drift,
		"gpu.backend.call/all":          check.Error,
		"gpu.fabricmanager":             check.Error,
	} {
		c, ok := m[key]
		if !ok {
			t.Errorf("%s: missing (have %d checks)", key, len(m))
			continue
		}
		if c.Status != want {
			t.Errorf("%s: %s (%s), want %s", key, c.Status, c.Current, want)
		}
		if c.Reason == "" {
			t.Errorf("%s: no reason", key)
		}
	}
	if c := m["gpu.health.xid/gpu1"]; !strings.Contains(c.Current, "XID 13 x2: graphics engine exception") {
		t.Errorf("xid 13: %q", c.Current)
	}
	if c := m["gpu.health.xid/gpu0"]; len(c.Fix) != 1 || !strings.Contains(c.Detail, "/var/log/kern.log") {
		t.Errorf("xid 79: %+v", c)
	}
	// The fabric manager running (its process under /proc) makes it ok.
	writeHostFile(t, root, "/proc/4321/comm", "nv-fabricmanage\n")
	m = checkByKey(HealthChecks(st, HealthOptions{Host: h}))
	if c := m["gpu.fabricmanager"]; c.Status != check.OK || !strings.Contains(c.Current, "4321") {
		t.Errorf("fabric manager running: %+v", c)
	}
	// No kernel log: the XID check says it could not look.
	empty, _ := hostfs.New(t.TempDir())
	m = checkByKey(HealthChecks(st, HealthOptions{Host: empty}))
	if c := m["gpu.health.xid"]; c.Status != check.Absent {
		t.Errorf("no kernel log: %+v", c)
	}
}

func ptr[T any](v T) *T { return &v }

func TestXIDTable(t *testing.T) {
	for _, x := range []int{13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120} {
		info, ok := XIDMeaning(x)
		if !ok || info.Meaning == "" || !info.Status.Valid() || info.Action == "" {
			t.Errorf("XID %d: %+v", x, info)
		}
	}
	if info, ok := XIDMeaning(999); ok || info.Status != check.Info {
		t.Errorf("unknown XID: %+v", info)
	}
	ev := ParseKernelXIDs([]byte(kernLog + "NVRM: Xid (PCI:00010000:e1:00): 119, pid=9, Timeout after 6s of waiting for RPC response from GPU0 GSP!\nno newline NVRM: Xid (PCI:zz): 1"))
	if len(ev) != 6 || ev[0].XID != 79 || ev[0].PCIAddress != "0000:18:00" || ev[5].PCIAddress != "10000:e1:00" || ev[5].XID != 119 {
		t.Errorf("events %+v", ev)
	}
}

// MIG device UUIDs (what CUDA_VISIBLE_DEVICES names) come from nvidia-smi
// -L when the XML lists MIG devices without them.
func TestSMIListMIGUUIDs(t *testing.T) {
	list := readRecorded(t, "smi-L-a100-40gb-mig.txt")
	m := ParseSMIList([]byte(list))
	if len(m) != 2 || m["GPU-2927D07E-3FE9-7904-9E08-B08B82D9A37D"][0] != "MIG-6e95ef19-5145-571b-b040-7e731f1c1af3" {
		t.Fatalf("parsed %v", m)
	}
	// The recorded A100-80GB document with the -L lines of its GPU (the
	// MIG UUIDs are the JASMIN sample's, reused: an assumption).
	doc := readRecorded(t, "a100-sxm4-80gb-mig-535.xml")
	l := "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n" +
		"  MIG 1g.20gb     Device  0: (UUID: MIG-6e95ef19-5145-571b-b040-7e731f1c1af3)\n" +
		"  MIG 1g.20gb     Device  2: (UUID: MIG-b4bcd4f3-6f69-516d-9404-b5ada80d760b)\n"
	r := &recordedSMI{xml: doc, list: l}
	st, err := NewSMI(r).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gis := st.GPUs[0].MIGInstances
	if gis[0].ComputeInstances[0].UUID != "MIG-6e95ef19-5145-571b-b040-7e731f1c1af3" || gis[1].ComputeInstances[0].UUID != "" ||
		gis[2].ComputeInstances[0].UUID != "MIG-b4bcd4f3-6f69-516d-9404-b5ada80d760b" {
		t.Errorf("MIG UUIDs %+v", gis)
	}
	if st.Sources[len(st.Sources)-1] != "nvidia-smi -L" {
		t.Errorf("sources %q", st.Sources)
	}
}
