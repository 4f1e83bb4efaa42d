package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/goldenfile"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got, *update)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func host(t *testing.T, name string) *hostfs.FS {
	t.Helper()
	fsys, err := hostfs.New(filepath.Join("testdata", "hosts", name))
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// copyHost copies a fixture host to a temp dir, for tests that write.
func copyHost(t *testing.T, name string) *hostfs.FS {
	t.Helper()
	dst := t.TempDir()
	if err := testhost.CopyTree(filepath.Join("testdata", "hosts", name), dst); err != nil {
		t.Fatal(err)
	}
	fsys, err := hostfs.New(dst)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func TestParseSMIXMLGolden(t *testing.T) {
	for _, name := range []string{"h100x2-v12.xml", "a100-v11-throttle.xml"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "smi", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := ParseSMIXML(f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(name, ".xml")+".json", mustJSON(t, st))
			checkSMIXMLSecondReader(t, name, st)
		})
	}
}

func TestParseSMIXMLFields(t *testing.T) {
	data, err := os.ReadFile("testdata/smi/h100x2-v12.xml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseSMIXML(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.GPUs) != 2 || st.DriverVersion != "550.54.15" || st.CUDAVersion != "12.4" {
		t.Fatalf("got %d GPUs, driver %q cuda %q", len(st.GPUs), st.DriverVersion, st.CUDAVersion)
	}
	g := st.GPUs[1]
	if g.PCIAddress != "0000:2a:00.0" {
		t.Errorf("PCI address %q, want sysfs form 0000:2a:00.0", g.PCIAddress)
	}
	if want := []string{"ApplicationsClocksSetting", "SwPowerCap"}; !reflect.DeepEqual(g.ClockEvents.Reasons, want) || g.ClockEvents.Mask != 6 {
		t.Errorf("clock events %+v, want mask 6 %v", g.ClockEvents, want)
	}
	if *g.ECC.Volatile.Corrected != 5 || *g.ECC.Volatile.Uncorrected != 2 || *g.ECC.Aggregate.Corrected != 41 {
		t.Errorf("ecc %+v", g.ECC)
	}
	if !g.MIG.ResetNeeded() || g.ComputeMode != "Exclusive_Process" || *g.Persistence {
		t.Errorf("mig %+v compute %q persistence %v", g.MIG, g.ComputeMode, *g.Persistence)
	}
	if g.RemappedRows == nil || !g.RemappedRows.Pending || g.RemappedRows.Uncorrectable != 1 {
		t.Errorf("remapped rows %+v", g.RemappedRows)
	}
	if st.GPUs[0].RetiredPages != nil {
		t.Errorf("retired pages N/A must stay nil, got %+v", st.GPUs[0].RetiredPages)
	}
	old, err := os.ReadFile("testdata/smi/a100-v11-throttle.xml")
	if err != nil {
		t.Fatal(err)
	}
	st, err = ParseSMIXML(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	a := st.GPUs[0]
	if a.ClockEvents.Mask != ReasonGPUIdle|ReasonHWThermalSlowdown {
		t.Errorf("throttle mask %#x", a.ClockEvents.Mask)
	}
	if *a.ECC.Volatile.Corrected != 3 || *a.ECC.Aggregate.Uncorrected != 1 || a.ECC.Pending {
		t.Errorf("old ECC layout %+v", a.ECC)
	}
	if a.RetiredPages == nil || a.RetiredPages.SingleBit != 2 || !a.RetiredPages.Pending {
		t.Errorf("retired pages %+v", a.RetiredPages)
	}
	if a.Power.DrawW != 0 || a.Power.LimitW != 400 || a.PCIe.Width != 8 {
		t.Errorf("power %+v pcie %+v", a.Power, a.PCIe)
	}
}

func TestParseSMIXMLErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"not xml":    "GPU 0: NVIDIA H100",
		"other root": "<foo/>",
		"truncated":  `<nvidia_smi_log><gpu id="00000000:18:00.0">`,
		"bad entity": `<nvidia_smi_log>&foo;</nvidia_smi_log>`,
	} {
		if _, err := ParseSMIXML(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCSVMatchesXML: both nvidia-smi parsers produce the same model for the
// fields the CSV query carries.
func TestCSVMatchesXML(t *testing.T) {
	x, err := os.ReadFile("testdata/smi/h100x2-v12.xml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile("testdata/smi/h100x2.csv")
	if err != nil {
		t.Fatal(err)
	}
	xs, err := ParseSMIXML(bytes.NewReader(x))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ParseQueryCSV(bytes.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "h100x2-csv.json", mustJSON(t, cs))
	project := func(s Status) Status {
		s.CUDAVersion = ""
		for i := range s.GPUs {
			g := &s.GPUs[i]
			g.Architecture = ""
			g.RetiredPages, g.RemappedRows = nil, nil
			g.Clocks.DefaultAppGraphicsMHz = 0
		}
		return s
	}
	if got, want := mustJSON(t, project(cs)), mustJSON(t, project(xs)); !bytes.Equal(got, want) {
		t.Errorf("CSV model differs from XML model:\n--- csv\n%s\n--- xml\n%s", got, want)
	}
}

func TestParseQueryCSVErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"no uuid":   "index, name\n0, x\n",
		"bad index": "index, uuid, pci.bus_id\n-1, GPU-1, 00000000:18:00.0\n",
		"bad bus":   "index, uuid, pci.bus_id\n0, GPU-1, nope\n",
		"bad mask":  "uuid, pci.bus_id, clocks_event_reasons.active\nGPU-1, 00000000:18:00.0, 0xZZ\n",
		"quote":     "uuid\n\"GPU-1\n",
	} {
		if _, err := ParseQueryCSV(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDecodeClockEvents(t *testing.T) {
	for _, tc := range []struct {
		mask uint64
		want []string
	}{
		{0, nil},
		{0x1, []string{"GpuIdle"}},
		{0x2 | 0x40, []string{"ApplicationsClocksSetting", "HwThermalSlowdown"}},
		{0x1ff, []string{"GpuIdle", "ApplicationsClocksSetting", "SwPowerCap", "HwSlowdown", "SyncBoost",
			"SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown", "DisplayClockSetting"}},
		{0x200 | 0x8, []string{"HwSlowdown", "0x200"}},
	} {
		ev := DecodeClockEvents(tc.mask)
		if !reflect.DeepEqual(ev.Reasons, tc.want) || !ev.Known || ev.Mask != tc.mask {
			t.Errorf("DecodeClockEvents(%#x) = %+v, want %v", tc.mask, ev, tc.want)
		}
	}
}

func TestNormalizePCIAddress(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"0000:2A:00.0":     "0000:2a:00.0",
		"00000001:C1:1F.7": "0001:c1:1f.7",
		" 0000:db:00.0\n":  "0000:db:00.0",
	} {
		got, err := NormalizePCIAddress(in)
		if err != nil || got != want {
			t.Errorf("NormalizePCIAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "18:00.0", "1ffff0000:18:00.0", "0000:18:20.0", "0000:18:00.8", "0000:100:00.0", "zz:zz:zz.z"} {
		if got, err := NormalizePCIAddress(bad); err == nil {
			t.Errorf("NormalizePCIAddress(%q) = %q, want error", bad, got)
		}
	}
}

func TestFakeFixtures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		host    string
		backend string
		gpus    int
	}{
		{"h100x8", KindFake, 8},
		{"a100-mig", KindFake, 8},
		{"nodriver", KindNone, 0},
	} {
		t.Run(tc.host, func(t *testing.T) {
			h := host(t, tc.host)
			b, err := Open(ctx, Options{Host: h})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Name() != tc.backend {
				t.Fatalf("backend %s, want %s", b.Name(), tc.backend)
			}
			st, err := b.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if warns := Annotate(h, &st); len(warns) > 0 {
				t.Fatal(warns)
			}
			if len(st.GPUs) != tc.gpus {
				t.Fatalf("%d GPUs, want %d", len(st.GPUs), tc.gpus)
			}
			for _, g := range st.GPUs {
				if g.NUMANode == nil {
					t.Errorf("GPU %d: NUMA node not read from sysfs", g.Index)
				}
			}
			golden(t, "status-"+tc.host+".json", mustJSON(t, st))
			var buf bytes.Buffer
			if err := output.Write(&buf, output.Table, st, output.Options{}); err != nil {
				t.Fatal(err)
			}
			golden(t, "status-"+tc.host+".txt", buf.Bytes())
		})
	}
}

func TestParseFakeErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown field", "gpus:\n- index: 0\n  uuid: GPU-1\n  bdf: 0000:18:00.0\n  colour: red\n", "colour"},
		{"missing uuid", "gpus:\n- index: 0\n  bdf: 0000:18:00.0\n", "gpus[0].uuid"},
		{"dup uuid", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0'}\n- {index: 1, uuid: GPU-1, bdf: '0000:19:00.0'}\n", "duplicate"},
		{"dup index", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0'}\n- {index: 0, uuid: GPU-2, bdf: '0000:19:00.0'}\n", "gpus[1].index"},
		{"bad pci", "gpus:\n- {index: 0, uuid: GPU-1, bdf: nope}\n", "gpus[0].bdf"},
		{"bad nvlink", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0', nvlinks: [{link: 0, active: true, remoteBdf: x}]}\n", "nvlinks[0]"},
		{"bad lock", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0', clocks: {locked: {minMHz: 9, maxMHz: 1}}}\n", "clocks.locked"},
		{"schema", "schemaVersion: gpunode.gpu/v9\n", "schemaVersion"},
		{"not yaml", "gpus: [", "f.yaml"},
		{"old and new bdf", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0', pciAddress: '0000:18:00.0'}\n", "gpus[0].bdf and pciAddress"},
		{"old and new memory", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0', memoryBytes: 1048576, memoryMiB: 1}\n", "gpus[0].memoryBytes and memoryMiB"},
		{"bad old pci", "gpus:\n- {index: 0, uuid: GPU-1, pciAddress: nope}\n", "gpus[0].bdf"},
		{"huge old memory", "gpus:\n- {index: 0, uuid: GPU-1, bdf: '0000:18:00.0', memoryMiB: 18446744073709551615}\n", "too large"},
	} {
		_, err := ParseFake([]byte(tc.in), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "f.yaml") {
			t.Errorf("%s: error %v, want one naming f.yaml and %q", tc.name, err, tc.want)
		}
	}
}

// TestParseFakeOldKeys reads a fake GPU file written before the JSON keys
// became bdf and bytes, and checks that what gpunode writes back uses only
// the new keys.
func TestParseFakeOldKeys(t *testing.T) {
	in := `gpus:
- index: 0
  uuid: GPU-1
  pciAddress: "00000000:18:00.0"
  memoryMiB: 81559
  memoryUsedMiB: 2
  nvlinks: [{link: 0, active: true, remotePciAddress: "0000:19:00.0"}]
  nvlinkPeers: [{pciAddress: "0000:19:00.0", links: 18}]
  migInstances:
  - {gpuInstanceId: 1, profileId: 19, profile: 1g.10gb, start: 0, size: 1, memoryMiB: 9856,
     computeInstances: [{computeInstanceId: 0, profileId: 0, profile: 1g.10gb, memoryUsedMiB: 12}]}
`
	st, err := ParseFake([]byte(in), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := st.GPUs[0]
	if g.PCIAddress != "0000:18:00.0" || g.MemoryBytes != 81559<<20 || g.MemoryUsedBytes == nil || *g.MemoryUsedBytes != 2<<20 {
		t.Errorf("old keys read as bdf %q, memory %d, used %v", g.PCIAddress, g.MemoryBytes, g.MemoryUsedBytes)
	}
	if len(g.NVLinks) != 1 || g.NVLinks[0].RemotePCIAddress != "0000:19:00.0" || len(g.NVLinkPeers) != 1 || g.NVLinkPeers[0].PCIAddress != "0000:19:00.0" {
		t.Errorf("old NVLink keys read as %+v, %+v", g.NVLinks, g.NVLinkPeers)
	}
	if len(g.MIGInstances) != 1 || g.MIGInstances[0].MemoryBytes != 9856<<20 || len(g.MIGInstances[0].ComputeInstances) != 1 ||
		*g.MIGInstances[0].ComputeInstances[0].MemoryUsedBytes != 12<<20 {
		t.Errorf("old MIG keys read as %+v", g.MIGInstances)
	}
	out := string(mustJSON(t, st))
	for _, old := range []string{"pciAddress", "PciAddress", "MiB"} {
		if strings.Contains(out, old) {
			t.Errorf("written status still has %q:\n%s", old, out)
		}
	}
	for _, key := range []string{`"bdf": "0000:18:00.0"`, `"remoteBdf": "0000:19:00.0"`, `"memoryBytes": 85520809984`} {
		if !strings.Contains(out, key) {
			t.Errorf("written status lacks %s:\n%s", key, out)
		}
	}
	// The new file parses to the same status.
	again, err := ParseFake([]byte(out), "new.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(mustJSON(t, again)); got != out {
		t.Errorf("the written status does not read back the same:\n%s\n%s", got, out)
	}
}

func TestOpenSelection(t *testing.T) {
	ctx := context.Background()
	live, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	failNVML := func() (Backend, error) { return nil, errors.New("ERROR_LIBRARY_NOT_FOUND") }
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	okPath := func(string) (string, error) { return "/usr/bin/nvidia-smi", nil }
	for _, tc := range []struct {
		name, kind string
		h          *hostfs.FS
		nvml       func() (Backend, error)
		look       func(string) (string, error)
		want       string
		wantErr    bool
		reason     string
	}{
		{"live, nvml ok", "", live, func() (Backend, error) { return NewFake(Status{}), nil }, noPath, KindFake, false, ""},
		{"live, smi", "auto", live, failNVML, okPath, KindNVIDIASMI, false, ""},
		{"live, nothing", "auto", live, failNVML, noPath, KindNone, false, "ERROR_LIBRARY_NOT_FOUND; nvidia-smi not found"},
		{"root with fake", "", host(t, "h100x8"), failNVML, noPath, KindFake, false, ""},
		{"root without fake", "", host(t, "nodriver"), failNVML, okPath, KindNone, false, "has no /etc/gpunode/fake-gpus.yaml"},
		{"explicit fake missing", "fake", host(t, "nodriver"), failNVML, okPath, "", true, ""},
		{"explicit nvml fails", "nvml", live, failNVML, okPath, "", true, ""},
		{"explicit none", "none", host(t, "h100x8"), failNVML, okPath, KindNone, false, ""},
		{"explicit smi", "NVIDIA-SMI", live, failNVML, noPath, KindNVIDIASMI, false, ""},
		{"explicit smi under --root", "nvidia-smi", host(t, "h100x8"), failNVML, okPath, "", true, ""},
		{"unknown", "rocm", live, failNVML, okPath, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(ctx, Options{Kind: tc.kind, Host: tc.h, NewNVML: tc.nvml, LookPath: tc.look})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got backend %s, want error", b.Name())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name() != tc.want {
				t.Fatalf("backend %s, want %s", b.Name(), tc.want)
			}
			if tc.reason != "" {
				st, _ := b.Status(ctx)
				if !strings.Contains(st.Reason, tc.reason) || !strings.HasPrefix(st.Reason, "no NVIDIA driver: ") {
					t.Errorf("reason %q, want it to contain %q", st.Reason, tc.reason)
				}
			}
		})
	}
}

func TestNoneNeverFails(t *testing.T) {
	ctx := context.Background()
	b := NewNone("test")
	st, err := b.Status(ctx)
	if err != nil || len(st.GPUs) != 0 || st.GPUs == nil {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := b.SetPersistence(ctx, "GPU-1", true); !errors.Is(err, ErrNoDriver) {
		t.Errorf("SetPersistence: %v", err)
	}
	if f := Audit(st, AuditOptions{}); len(f) != 1 || f[0].Status != check.Absent {
		t.Errorf("audit of a node without driver or GPUs: %+v", f)
	}
	if m := NVLinkClassesOf(st); len(m) != 0 {
		t.Errorf("nvlink classes %v", m)
	}
}

// fakeRunner answers nvidia-smi calls from a map of "args" -> output.
type fakeRunner struct {
	out   map[string]string
	calls []string
}

func (r *fakeRunner) Run(_ context.Context, c Cmd) ([]byte, error) {
	key := strings.Join(c.Args, " ")
	r.calls = append(r.calls, c.Name+" "+key)
	for k, v := range r.out {
		if strings.HasPrefix(key, k) {
			return []byte(v), nil
		}
	}
	return nil, errors.New("exit status 9: unknown")
}

func TestSMIBackend(t *testing.T) {
	ctx := context.Background()
	x, _ := os.ReadFile("testdata/smi/h100x2-v12.xml")
	c, _ := os.ReadFile("testdata/smi/h100x2.csv")
	r := &fakeRunner{out: map[string]string{"-q -x": string(x)}}
	st, err := NewSMI(r).Status(ctx)
	if err != nil || len(st.GPUs) != 2 || st.Backend != KindNVIDIASMI {
		t.Fatalf("xml: %+v %v", st, err)
	}
	// XML broken: falls back to CSV.
	r = &fakeRunner{out: map[string]string{"-q -x": "garbage", "--query-gpu=": string(c)}}
	st, err = NewSMI(r).Status(ctx)
	if err != nil || len(st.GPUs) != 2 {
		t.Fatalf("csv fallback: %+v %v", st, err)
	}
	// Both fail: an error naming both.
	r = &fakeRunner{out: map[string]string{}}
	if _, err := NewSMI(r).Status(ctx); err == nil || !strings.Contains(err.Error(), "--query-gpu") {
		t.Fatalf("both failing: %v", err)
	}
	r = &fakeRunner{out: map[string]string{"-i": ""}}
	b := NewSMI(r)
	_ = b.SetPersistence(ctx, "GPU-1", true)
	_ = b.LockClocks(ctx, "GPU-1", ClockRange{MinMHz: 1410, MaxMHz: 1410})
	_ = b.ResetClocks(ctx, "GPU-1")
	want := []string{"nvidia-smi -i GPU-1 -pm 1", "nvidia-smi -i GPU-1 -lgc 1410,1410", "nvidia-smi -i GPU-1 -rgc"}
	if !reflect.DeepEqual(r.calls, want) {
		t.Errorf("calls %q, want %q", r.calls, want)
	}
}

func TestNVLinkClasses(t *testing.T) {
	ctx := context.Background()
	b, err := OpenFake(host(t, "h100x8"), FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NVLinkClasses(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 28 {
		t.Fatalf("%d pairs, want 28 (8 choose 2)", len(m))
	}
	if c := m[[2]string{"0000:18:00.0", "0000:db:00.0"}]; c != "NV18" {
		t.Errorf("18<->db = %q, want NV18", c)
	}
	// Direct links: 4 links 0<->1, 2 links 1<->2 reported from one end only,
	// GPU 3 without NVLink.
	link := func(n int, peer string) []NVLink {
		var l []NVLink
		for i := 0; i < n; i++ {
			l = append(l, NVLink{Link: i, Active: true, RemotePCIAddress: peer})
		}
		return l
	}
	st := Status{GPUs: []GPU{
		{Index: 0, PCIAddress: "0000:01:00.0", NVLinks: link(4, "0000:02:00.0")},
		{Index: 1, PCIAddress: "0000:02:00.0", NVLinks: append(link(4, "0000:01:00.0"), link(2, "0000:03:00.0")...)},
		{Index: 2, PCIAddress: "0000:03:00.0", NVLinks: []NVLink{{Link: 0, Active: false, RemotePCIAddress: "0000:02:00.0"}}},
		{Index: 3, PCIAddress: "0000:04:00.0"},
	}}
	got := NVLinkClassesOf(st)
	want := map[[2]string]string{
		{"0000:01:00.0", "0000:02:00.0"}: "NV4",
		{"0000:02:00.0", "0000:03:00.0"}: "NV2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAuditFixtures(t *testing.T) {
	ctx := context.Background()
	for _, h := range []string{"h100x8", "a100-mig", "nodriver"} {
		t.Run(h, func(t *testing.T) {
			b, err := Open(ctx, Options{Host: host(t, h)})
			if err != nil {
				t.Fatal(err)
			}
			st, err := b.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f := Audit(st, AuditOptions{CUDARuntime: "12.4", CUDARuntimeSource: "test"})
			golden(t, "audit-"+h+".json", mustJSON(t, f))
		})
	}
}

func TestCUDACompat(t *testing.T) {
	fwd13 := []ForwardCompat{{Dir: "/usr/local/cuda-13.0/compat", Major: 13, Minor: 0}}
	for _, tc := range []struct {
		driver, dcuda, runtime string
		fwd                    []ForwardCompat
		want                   check.Status
	}{
		{"550.54.15", "12.4", "12.4", nil, check.OK},
		{"550.54.15", "12.4", "12.2", nil, check.OK},
		{"550.54.15", "12.4", "11.8", nil, check.OK},
		{"535.161.08", "12.2", "12.4", nil, check.OK}, // minor-version compatibility
		{"525.60.13", "12.0", "12.8", nil, check.OK},
		{"525.60.12", "12.0", "12.0", nil, check.OK}, // its own CUDA version
		{"525.60.12", "", "12.1", nil, check.Error},  // below 12.x's minimum
		{"470.223.02", "11.4", "12.1", nil, check.Error},
		{"470.223.02", "11.4", "11.8", nil, check.OK},
		{"575.51.03", "12.9", "13.0", nil, check.Error},
		{"550.54.15", "12.4", "14.0", nil, check.Error}, // newer major fails (was a warning)
		{"575.51.03", "12.9", "13.0", fwd13, check.OK},  // forward compatibility package
		{"575.51.03", "12.9", "13.1", fwd13, check.Error},
		{"580.65.06", "13.0", "13.0", nil, check.OK},
		{"550.54.15", "12.4", "twelve", nil, check.Error},
	} {
		c, ok := CUDACompat(tc.driver, tc.dcuda, tc.runtime, tc.fwd)
		if !ok || c.Status != tc.want {
			t.Errorf("driver %s (CUDA %s) runtime %s fwd %v: %s %q, want %s", tc.driver, tc.dcuda, tc.runtime, tc.fwd, c.Status, c.Detail, tc.want)
		}
		if c.Status == check.Error && c.Detail == "" {
			t.Errorf("runtime %s: error without detail", tc.runtime)
		}
	}
	if _, ok := CUDACompat("", "", "12.4", nil); ok {
		t.Error("no driver must skip the check")
	}
	for _, bad := range []string{"banana", "12", "12.x", "-1.0", "12.4.1.2", "12.4.x"} {
		if err := ParseCUDARuntime(bad); err == nil {
			t.Errorf("ParseCUDARuntime(%q) accepted", bad)
		}
		if _, err := RuntimeOptions(nil, bad); err == nil {
			t.Errorf("RuntimeOptions(%q) accepted", bad)
		}
	}
	for _, good := range []string{"12.4", "13.0.1"} {
		if err := ParseCUDARuntime(good); err != nil {
			t.Errorf("ParseCUDARuntime(%q): %v", good, err)
		}
	}
}

// TestDriverMissingIsError: NVIDIA functions on the PCI bus and no driver
// answering is an error (it was "info"/"absent", exit 0).
func TestDriverMissingIsError(t *testing.T) {
	ctx := context.Background()
	h, err := hostfs.New(testhost.Path(t, "dgx-h100"))
	if err != nil {
		t.Fatal(err)
	}
	fns, err := NVIDIAFunctions(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 8 || fns[0].Driver != "nvidia" {
		t.Fatalf("NVIDIA functions %+v, want the 8 H100s bound to nvidia", fns)
	}
	cs, err := Source{Backend: NewNone("nvidia-smi: not found"), FS: h}.Checks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != CheckDriverPresent || cs[0].Status != check.Error ||
		!strings.Contains(cs[0].Current, "8 NVIDIA GPU functions") || !strings.Contains(cs[0].Detail, "nvidia-smi: not found") {
		t.Errorf("driver check %+v, want an error naming the 8 functions and the reason", cs)
	}
	vm, err := hostfs.New(testhost.Path(t, "vm-2vcpu"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err = Source{Backend: NewNone("no driver"), FS: vm}.Checks(ctx)
	if err != nil || len(cs) != 1 || cs[0].Status != check.Absent {
		t.Errorf("no GPUs: %+v %v, want absent", cs, err)
	}
}

// TestBackendNoneIsNotAsked: --gpu-backend none asks no driver, so the
// NVIDIA functions on the bus are not judged: gpu.driver is absent (not
// the error of a driver that does not answer), and says why.
func TestBackendNoneIsNotAsked(t *testing.T) {
	ctx := context.Background()
	h, err := hostfs.New(testhost.Path(t, "dgx-h100"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, Options{Kind: "none", Host: h})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil || !st.NotAsked || st.Backend != "none" {
		t.Fatalf("status %+v %v, want backend none, not asked", st, err)
	}
	cs, err := Source{Backend: b, FS: h}.Checks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != "gpu.driver" || cs[0].Status != check.Absent ||
		cs[0].Current != "not checked: --gpu-backend none" || !strings.Contains(cs[0].Detail, "8 NVIDIA GPU functions") {
		t.Errorf("driver check %+v, want absent, not checked, naming the 8 functions", cs)
	}
	// The same host with a backend that found no driver is still an error.
	cs, _ = Source{Backend: NewNone("nvidia-smi: not found"), FS: h}.Checks(ctx)
	if len(cs) != 1 || cs[0].Status != check.Error {
		t.Errorf("no driver found: %+v, want an error", cs)
	}
}

func TestDetectCUDARuntime(t *testing.T) {
	h := copyHost(t, "nodriver")
	if _, _, err := DetectCUDARuntime(h); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no toolkit: %v", err)
	}
	if o, err := RuntimeOptions(h, ""); err != nil || !reflect.DeepEqual(o, AuditOptions{}) {
		t.Fatalf("RuntimeOptions without a toolkit: %+v %v", o, err)
	}
	if err := os.MkdirAll(h.Path("/usr/local/cuda"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path("/usr/local/cuda/version.txt"), []byte("CUDA Version 10.2.89\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, _, err := DetectCUDARuntime(h); err != nil || v != "10.2.89" {
		t.Fatalf("version.txt: %q %v", v, err)
	}
	if err := os.WriteFile(h.Path("/usr/local/cuda/version.json"), []byte(`{"cuda":{"name":"CUDA SDK","version":"12.4.1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, src, err := DetectCUDARuntime(h); err != nil || v != "12.4.1" || src != "/usr/local/cuda/version.json" {
		t.Fatalf("version.json: %q %q %v", v, src, err)
	}
	if o, err := RuntimeOptions(h, ""); err != nil || o.CUDARuntime != "12.4.1" || o.CUDARuntimeSource != "/usr/local/cuda/version.json" {
		t.Fatalf("RuntimeOptions from the toolkit: %+v %v", o, err)
	}
	if o, err := RuntimeOptions(h, "11.8"); err != nil || o.CUDARuntime != "11.8" || o.CUDARuntimeSource != "--cuda-runtime" {
		t.Fatalf("RuntimeOptions with --cuda-runtime: %+v %v", o, err)
	}
	if err := os.WriteFile(h.Path("/usr/local/cuda/version.json"), []byte(`{"cuda":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DetectCUDARuntime(h); err == nil || !strings.Contains(err.Error(), "version.json") {
		t.Fatalf("bad version.json: %v", err)
	}
	if o, err := RuntimeOptions(h, ""); err != nil || o.CUDARuntime != "" || o.CUDARuntimeErr == nil {
		t.Fatalf("RuntimeOptions with a bad version.json: %+v %v, want CUDARuntimeErr", o, err)
	}
}

// TestApplyAndRollback: persistence and clock changes are journaled and a
// journal rollback restores them.
func TestApplyAndRollback(t *testing.T) {
	ctx := context.Background()
	h := copyHost(t, "h100x8")
	b, err := OpenFake(h, FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := b.Status(ctx)
	sel, err := SelectGPUs(st, []string{"5,7"})
	if err != nil {
		t.Fatal(err)
	}
	const dir = "/var/lib/gpunode"

	// Dry run touches nothing.
	p := PlanPersistence(b.Name(), sel, true)
	if got, err := Apply(ctx, b, h, dir, p, "test", true); err != nil || got.Applied {
		t.Fatalf("dry run: %+v %v", got, err)
	}
	if _, err := os.Stat(h.Path(dir)); !os.IsNotExist(err) {
		t.Fatalf("dry run created the journal dir: %v", err)
	}
	if p.Changes[0].Needed || !p.Changes[1].Needed {
		t.Fatalf("GPU 5 is on already, GPU 7 is off: %+v", p.Changes)
	}
	got, err := Apply(ctx, b, h, dir, p, "test", false)
	if err != nil || !got.Applied || got.Journal == "" {
		t.Fatalf("apply: %+v %v", got, err)
	}
	cp, err := PlanClockLock(b.Name(), sel, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, b, h, dir, cp, "test", false); err != nil {
		t.Fatal(err)
	}
	after, _ := b.Status(ctx)
	g7, _ := FindGPU(after, "7")
	g5, _ := FindGPU(after, "5")
	if !*g7.Persistence || g7.Clocks.Locked == nil || g7.Clocks.Locked.MaxMHz != 1980 || g5.Clocks.Locked.MinMHz != 1980 {
		t.Fatalf("after apply: gpu7 %+v %+v gpu5 %+v", g7.Persistence, g7.Clocks.Locked, g5.Clocks.Locked)
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, b); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Rollback(ctx, h, dir, journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	back, _ := b.Status(ctx)
	g7, _ = FindGPU(back, "7")
	g5, _ = FindGPU(back, "5")
	if *g7.Persistence || g7.Clocks.Locked != nil || g5.Clocks.Locked == nil || g5.Clocks.Locked.MaxMHz != 1410 {
		t.Fatalf("after rollback: gpu7 persistence %v lock %+v; gpu5 lock %+v (want off, none, 1410)", *g7.Persistence, g7.Clocks.Locked, g5.Clocks.Locked)
	}
}

func TestPlanErrors(t *testing.T) {
	gpus := []GPU{{Index: 0, UUID: "GPU-1", Clocks: Clocks{MaxGraphicsMHz: 1980}}}
	if _, err := PlanClockLock("fake", gpus, 2500); !errors.Is(err, ErrClockRange) {
		t.Errorf("lock above max: %v", err)
	}
	if _, err := PlanClockLock("fake", []GPU{{Index: 0}}, 0); err == nil {
		t.Error("lock max with unknown max: no error")
	}
	// An unreadable lock with the clocks-setting reason active: always apply.
	c := clockChange(GPU{ClockEvents: DecodeClockEvents(ReasonApplicationsClocks)}, nil)
	if !c.Needed || c.From != ClocksUnknown {
		t.Errorf("unknown lock: %+v", c)
	}
	for _, s := range []string{"x", "9-1", "1-", "-5"} {
		if _, _, err := ParseClockState(s); err == nil {
			t.Errorf("ParseClockState(%q): no error", s)
		}
	}
}

func TestSelectGPUs(t *testing.T) {
	st := Status{GPUs: []GPU{
		{Index: 0, UUID: "GPU-aaaa1111-0000", PCIAddress: "0000:18:00.0"},
		{Index: 1, UUID: "GPU-aaaa2222-0000", PCIAddress: "0000:2a:00.0"},
	}}
	for _, tc := range []struct {
		sels []string
		want []int
		bad  bool
	}{
		{nil, []int{0, 1}, false},
		{[]string{"1"}, []int{1}, false},
		{[]string{"GPU-aaaa2"}, []int{1}, false},
		{[]string{"00000000:18:00.0,1,0"}, []int{0, 1}, false},
		{[]string{"all"}, []int{0, 1}, false},
		{[]string{"GPU-aaaa"}, nil, true}, // ambiguous prefix
		{[]string{"7"}, nil, true},
	} {
		got, err := SelectGPUs(st, tc.sels)
		if tc.bad {
			if err == nil || !errors.Is(err, ErrUnknownGPU) {
				t.Errorf("%v: %v, want ErrUnknownGPU", tc.sels, err)
			}
			continue
		}
		var idx []int
		for _, g := range got {
			idx = append(idx, g.Index)
		}
		if err != nil || !reflect.DeepEqual(idx, tc.want) {
			t.Errorf("%v: %v %v, want %v", tc.sels, idx, err, tc.want)
		}
	}
}

func TestSource(t *testing.T) {
	ctx := context.Background()
	h := host(t, "h100x8")
	b, err := OpenFake(h, FakeFile)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := Source{Backend: b, FS: h, CUDARuntime: "12.4"}.Checks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	drift := map[string]bool{}
	known := map[string]bool{}
	for _, d := range Describe() {
		known[d.ID] = true
	}
	for _, c := range checks {
		if c.Layer != "gpu" || !known[c.ID] {
			t.Errorf("check %s layer %q: not described", c.Key(), c.Layer)
		}
		if c.Status == check.Drift {
			drift[c.Key()] = true
		}
	}
	want := map[string]bool{"gpu.persistence/gpu7": true, "gpu.clocks.locked/gpu5": true}
	if !reflect.DeepEqual(drift, want) {
		t.Errorf("drift %v, want %v", drift, want)
	}
	none, err := Source{Backend: NewNone("test")}.Checks(ctx)
	if err != nil || len(none) != 1 || none[0].Status != check.Absent {
		t.Errorf("no driver: %+v %v", none, err)
	}
}

// TestExecRunnerDaemon: a command whose background child keeps stdout open
// returns soon after the command itself exits.
func TestExecRunnerDaemon(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	out, err := ExecRunner{}.Run(ctx, Cmd{Name: "/bin/sh", Args: []string{"-c", "echo started; sleep 30 &"}})
	if err != nil || !strings.Contains(string(out), "started") {
		t.Fatalf("%q %v", out, err)
	}
	out, err = ExecRunner{}.Run(ctx, Cmd{Name: "/bin/sh", Args: []string{"-c", "cat; echo $X >&2; exit 3"}, Env: []string{"X=from-env"}, Stdin: "in\n"})
	if err == nil || !strings.Contains(err.Error(), "from-env") || string(out) != "in\n" {
		t.Fatalf("failing command: %q %v", out, err)
	}
}
