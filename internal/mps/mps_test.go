package mps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/gpu"
	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParsePSSeed(t *testing.T) {
	ps, err := ParsePS(read(t, "ps-seed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Process{
		{PID: 3817508, ID: 1, Server: 3817822, Device: "GPU-f707b56f-f3ae-f293", Namespace: "4026531836", Command: ".../.venv/bin/python3"},
		{PID: 3817500, ID: 2, Server: 3817822, Device: "GPU-f707b56f-f3ae-f293", Namespace: "4026531836", Command: ".../.venv/bin/python3"},
	}
	if !reflect.DeepEqual(ps, want) {
		t.Errorf("got %+v", ps)
	}
	// Older drivers: no NAMESPACE column; commands with spaces.
	ps, err = ParsePS("PID ID SERVER DEVICE COMMAND\n12 3 10 GPU-1 ./a.out --x 1\n")
	if err != nil || len(ps) != 1 || ps[0].Command != "./a.out --x 1" || ps[0].Namespace != "" {
		t.Errorf("no namespace: %+v %v", ps, err)
	}
	if ps, err := ParsePS(""); err != nil || len(ps) != 0 {
		t.Errorf("empty: %+v %v", ps, err)
	}
	for _, bad := range []string{
		"garbage\n",
		"PID ID SERVER DEVICE\n1 2 3 GPU-1\n",
		"PID ID SERVER DEVICE COMMAND\nx 1 2 GPU-1 a\n",
		"PID ID SERVER DEVICE COMMAND\n1 2 GPU-1\n",
		"PID ID SERVER DEVICE COMMAND\n0 1 2 GPU-1 a\n",
	} {
		if _, err := ParsePS(bad); err == nil {
			t.Errorf("ParsePS(%q): no error", bad)
		}
	}
}

func TestParseLsPartSeed(t *testing.T) {
	parts, err := ParseLsPart(read(t, "lspart-seed-empty.txt"))
	if err != nil || len(parts) != 1 || *parts[0].FreeChunks != 10 || *parts[0].FreeSMs != 92 || parts[0].ID != "" {
		t.Fatalf("empty: %+v %v", parts, err)
	}
	parts, err = ParseLsPart(read(t, "lspart-seed-full.txt"))
	if err != nil || len(parts) != 4 {
		t.Fatalf("full: %+v %v", parts, err)
	}
	d := parts[1]
	if d.ID != "Dx4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" || *d.UsedChunks != 5 || *d.UsedSMs != 40 || d.FreeChunks != nil || d.Clients != "Yes" {
		t.Errorf("partition D: %+v", d)
	}
	// The seed's B partition: 2 chunks but 28 SMs (left-over SMs).
	if *parts[3].UsedSMs != 28 {
		t.Errorf("partition B SMs %d", *parts[3].UsedSMs)
	}
	for _, bad := range []string{"nope\n", "GPU Partition\nGPU-1 - 1 2 3\n", "GPU Partition\nGPU-1 - x 0 1 1 -\n"} {
		if _, err := ParseLsPart(bad); err == nil {
			t.Errorf("ParseLsPart(%q): no error", bad)
		}
	}
}

func TestParsePartitionAdd(t *testing.T) {
	got, err := ParsePartitionAdd("GPU-74d43ed3-cdf7-e667-3644-bf5b4f46ed65/Dx4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n")
	if err != nil || got != "GPU-74d43ed3-cdf7-e667-3644-bf5b4f46ed65/Dx4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("%q %v", got, err)
	}
	for _, bad := range []string{"", "error: not enabled", "GPU-1/", "x/y", "GPU-1/a b"} {
		if _, err := ParsePartitionAdd(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestChunkSMs(t *testing.T) {
	for _, tc := range []struct {
		arch, cc string
		want     int
	}{
		{"Hopper", "", 8}, {"Blackwell", "", 8}, {"Ampere", "8.0", 4}, {"", "9.0", 8}, {"", "8.6", 4}, {"", "", 4}, {"", "10.0", 8},
	} {
		if got := ChunkSMs(tc.arch, tc.cc); got != tc.want {
			t.Errorf("ChunkSMs(%q, %q) = %d, want %d", tc.arch, tc.cc, got, tc.want)
		}
	}
}

func TestPlanPartitions(t *testing.T) {
	req, err := ParseRequests("5,3,2")
	if err != nil {
		t.Fatal(err)
	}
	// H100 SXM: 132 SMs, 8 per chunk -> 16 chunks.
	p := PlanPartitions(0, "GPU-1", 132, 8, 0, req)
	if !p.Feasible || p.TotalChunks != 16 || p.FreeChunks != 6 || p.Partitions[0].SMs != 40 || p.ChunksFrom != "estimate" {
		t.Errorf("H100 5,3,2: %+v", p)
	}
	if !strings.Contains(p.Partitions[1].Command, `sm_partition add GPU-1 3`) {
		t.Errorf("command %q", p.Partitions[1].Command)
	}
	// The seed's GPU: lspart says 10 chunks; 5+3+2 uses all of them.
	p = PlanPartitions(0, "GPU-74d43ed3", 92, 8, 10, req)
	if !p.Feasible || p.FreeChunks != 0 || p.ChunksFrom != "lspart" {
		t.Errorf("seed: %+v", p)
	}
	req, _ = ParseRequests("64sm,33sm,40sm")
	p = PlanPartitions(0, "", 132, 8, 0, req)
	if p.Feasible || p.Partitions[1].Chunks != 5 || !strings.Contains(p.Reason, "18 chunks requested") {
		t.Errorf("too much: %+v", p)
	}
	// A100: 108 SMs, 4 per chunk.
	req, _ = ParseRequests("14,13")
	if p := PlanPartitions(0, "", 108, 4, 0, req); !p.Feasible || p.FreeChunks != 0 {
		t.Errorf("A100: %+v", p)
	}
	for _, bad := range []string{"", "0", "-1", "x", "5,,sm", "1000001"} {
		if _, err := ParseRequests(bad); err == nil {
			t.Errorf("ParseRequests(%q): no error", bad)
		}
	}
}

// recRunner records commands and answers from a function.
type recRunner struct {
	calls []gpu.Cmd
	reply func(c gpu.Cmd) (string, error)
}

func (r *recRunner) Run(_ context.Context, c gpu.Cmd) ([]byte, error) {
	r.calls = append(r.calls, c)
	out, err := r.reply(c)
	return []byte(out), err
}

func newHost(t *testing.T) *hostfs.FS {
	t.Helper()
	h, err := hostfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestStartStopRollback(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	r := &recRunner{}
	m := &Manager{Host: h, Runner: r}
	r.reply = func(c gpu.Cmd) (string, error) {
		pipe := ""
		for _, e := range c.Env {
			if v, ok := strings.CutPrefix(e, "CUDA_MPS_PIPE_DIRECTORY="); ok {
				pipe = v
			}
		}
		switch {
		case len(c.Args) > 0 && c.Args[0] == "-d":
			return "", os.WriteFile(filepath.Join(pipe, "control"), nil, 0o600)
		case c.Stdin == "quit\n":
			return "", os.Remove(filepath.Join(pipe, "control"))
		case c.Stdin == "ps\n":
			return read(t, "ps-seed.txt"), nil
		}
		return "", nil
	}
	d, err := m.DaemonFor("GPU-f707b56f-f3ae-f293", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	kinds := journal.NewKinds()
	if err := RegisterJournalKinds(kinds, m); err != nil {
		t.Fatal(err)
	}
	a, ok := m.StartAction(d, true)
	if !ok {
		t.Fatal("start: daemon already running")
	}
	if _, err := journal.Run(ctx, h, "/var/lib/gpunode", journal.Meta{Owner: JournalOwner}, func(context.Context, *journal.Tx) ([]journal.Action, error) {
		return []journal.Action{a}, nil
	}, journal.WithKinds(kinds)); err != nil {
		t.Fatalf("start: %v", err)
	}
	start := r.calls[0]
	wantEnv := []string{"CUDA_VISIBLE_DEVICES=GPU-f707b56f-f3ae-f293",
		"CUDA_MPS_PIPE_DIRECTORY=" + h.Path("/run/gpunode/mps/GPU-f707b56f-f3ae-f293/pipe"),
		"CUDA_MPS_LOG_DIRECTORY=" + h.Path("/run/gpunode/mps/GPU-f707b56f-f3ae-f293/log")}
	if start.Name != ControlBinary || !reflect.DeepEqual(start.Args, []string{"-d", "-S"}) || !reflect.DeepEqual(start.Env, wantEnv) {
		t.Errorf("start command %+v", start)
	}
	if _, err := os.Stat(h.Path(d.LogDir)); err != nil {
		t.Errorf("log dir not created: %v", err)
	}
	// Idempotent.
	if _, ok := m.StartAction(d, true); ok {
		t.Error("second start: not idempotent")
	}
	ds := m.Inspect(ctx, d, false)
	if !ds.Running || len(ds.Clients) != 2 || ds.Clients[0].Server != 3817822 {
		t.Errorf("inspect: %+v", ds)
	}
	found, err := m.Discover()
	if err != nil || len(found) != 1 || found[0].Device != d.Device {
		t.Errorf("discover: %+v %v", found, err)
	}
	// Rollback stops the daemon.
	if _, err := journal.Rollback(ctx, h, "/var/lib/gpunode", journal.WithOwner(JournalOwner), journal.WithKinds(kinds)); err != nil {
		t.Fatal(err)
	}
	if m.Running(d) {
		t.Error("rollback left the daemon running")
	}
	if changed, err := m.Stop(ctx, d); err != nil || changed {
		t.Errorf("stop of a stopped daemon: %v %v", changed, err)
	}
}

func TestTargets(t *testing.T) {
	h := newHost(t)
	m := &Manager{Host: h}
	mig := gpu.GPU{Index: 1, UUID: "GPU-bbbb", MIG: &gpu.MIGMode{Current: true, Pending: true},
		MIGInstances: []gpu.MIGInstance{{GPUInstanceID: 1, ComputeInstances: []gpu.MIGCompute{{UUID: "MIG-1111"}, {UUID: "MIG-2222"}}}}}
	st := gpu.Status{GPUs: []gpu.GPU{{Index: 0, UUID: "GPU-aaaa"}, mig}}
	ds, err := m.Targets(st, nil, nil)
	if err != nil || len(ds) != 1 || ds[0].Device != "GPU-aaaa" {
		t.Errorf("all GPUs skip MIG GPUs: %+v %v", ds, err)
	}
	if _, err := m.Targets(st, []string{"1"}, nil); err == nil || !strings.Contains(err.Error(), "--mig") {
		t.Errorf("MIG GPU by --gpu: %v", err)
	}
	ds, err = m.Targets(st, nil, []string{"all"})
	if err != nil || len(ds) != 2 || ds[1].Device != "MIG-2222" || !ds[1].MIG || ds[1].PipeDir != "/run/gpunode/mps/MIG-2222/pipe" {
		t.Errorf("--mig all: %+v %v", ds, err)
	}
	if _, err := m.Targets(st, nil, []string{"GPU-aaaa"}); err == nil {
		t.Error("--mig with a GPU UUID: no error")
	}
	// A MIG UUID the backend does not list, when it lists MIG devices, is
	// a typo: refused, naming the known ones (it was taken as given).
	if _, err := m.Targets(st, nil, []string{"MIG-zzzz,MIG-1111"}); err == nil || !strings.Contains(err.Error(), `"MIG-zzzz": no such MIG device`) || !strings.Contains(err.Error(), "MIG-1111") {
		t.Errorf("--mig with an unknown UUID: %v", err)
	}
	// A backend that lists no MIG devices (nvidia-smi): taken as given,
	// in sorted order (not map order).
	blind := gpu.Status{GPUs: []gpu.GPU{{Index: 0, UUID: "GPU-aaaa"}, {Index: 1, UUID: "GPU-bbbb", MIG: &gpu.MIGMode{Current: true}}}}
	ds, err = m.Targets(blind, nil, []string{"MIG-zzzz,MIG-yyyy,MIG-xxxx"})
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d %s", d.GPU, d.Device))
	}
	if want := []string{"-1 MIG-xxxx", "-1 MIG-yyyy", "-1 MIG-zzzz"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("--mig with unlisted UUIDs: %q %v, want %q", got, err, want)
	}
	if _, err := m.DaemonFor("../../etc", 0, false); err == nil {
		t.Error("path traversal in device accepted")
	}
}

func TestAddPartition(t *testing.T) {
	ctx := context.Background()
	h := newHost(t)
	r := &recRunner{reply: func(c gpu.Cmd) (string, error) { return "GPU-1/Dx4AAAA\n", nil }}
	m := &Manager{Host: h, Runner: r}
	d, _ := m.DaemonFor("GPU-1", 0, false)
	if _, err := m.AddPartition(ctx, d, "GPU-1", 5); err == nil {
		t.Fatal("add without a daemon: no error")
	}
	if _, err := h.MkdirAll(d.PipeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path(d.PipeDir+"/control"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := m.AddPartition(ctx, d, "GPU-1", 5)
	if err != nil || id != "GPU-1/Dx4AAAA" || r.calls[0].Stdin != "sm_partition add GPU-1 5\n" {
		t.Errorf("%q %v %+v", id, err, r.calls)
	}
	if _, err := m.AddPartition(ctx, d, "GPU-1", 0); err == nil {
		t.Error("0 chunks: no error")
	}
}

func FuzzParsePS(f *testing.F) {
	f.Add("PID ID SERVER DEVICE NAMESPACE COMMAND\n1 2 3 GPU-1 4 a b\n")
	f.Add("PID SERVER COMMAND\n7 9   /usr/bin/python3   train.py\n\n8 0 x\n")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePS(s)
		if err != nil || len(ps) == 0 {
			return
		}
		// Render what was read as a full table (without the DEVICE or
		// NAMESPACE column when no row has one) and parse again: the
		// same processes.
		hasDev, hasNS := ps[0].Device != "", ps[0].Namespace != ""
		cols := []string{"PID", "ID", "SERVER"}
		if hasDev {
			cols = append(cols, "DEVICE")
		}
		if hasNS {
			cols = append(cols, "NAMESPACE")
		}
		var b strings.Builder
		b.WriteString(strings.Join(append(cols, "COMMAND"), " ") + "\n")
		for _, p := range ps {
			if p.PID <= 0 || p.Command == "" || (p.Device != "") != hasDev || (p.Namespace != "") != hasNS {
				t.Fatalf("%q: accepted %+v", s, p)
			}
			row := []string{strconv.Itoa(p.PID), strconv.Itoa(p.ID), strconv.Itoa(p.Server)}
			if hasDev {
				row = append(row, p.Device)
			}
			if hasNS {
				row = append(row, p.Namespace)
			}
			b.WriteString(strings.Join(append(row, p.Command), "  ") + "\n")
		}
		again, err := ParsePS(b.String())
		if err != nil || !reflect.DeepEqual(again, ps) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, ps, b.String(), again, err)
		}
	})
}

// FuzzParseLsPart: counts are never negative, and the partitions rendered
// back as lspart output (the two header lines, "-" for what is absent)
// parse to the same partitions.
func FuzzParseLsPart(f *testing.F) {
	b, err := os.ReadFile("testdata/lspart-seed-full.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("GPU Partition freeChunk usedChunk freeSM usedSM clients\nGPU-1 - 007 - 0 - Yes\n")
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseLsPart(s)
		if err != nil {
			return
		}
		var b strings.Builder
		b.WriteString("GPU Partition free used free used clients\n  chunk chunk SM SM\n")
		dash := func(v string) string {
			if v == "" {
				return "-"
			}
			return v
		}
		for _, p := range parts {
			row := []string{p.GPU, dash(p.ID)}
			for _, n := range []*int{p.FreeChunks, p.UsedChunks, p.FreeSMs, p.UsedSMs} {
				if n == nil {
					row = append(row, "-")
					continue
				}
				if *n < 0 {
					t.Fatalf("negative count in %+v", p)
				}
				row = append(row, strconv.Itoa(*n))
			}
			b.WriteString(strings.Join(append(row, dash(p.Clients)), " ") + "\n")
		}
		again, err := ParseLsPart(b.String())
		if err != nil || !reflect.DeepEqual(again, parts) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, parts, b.String(), again, err)
		}
	})
}

func FuzzParseRequests(f *testing.F) {
	f.Add("5,3,2")
	f.Add("40sm,8")
	f.Fuzz(func(t *testing.T, s string) {
		req, err := ParseRequests(s)
		if err != nil {
			return
		}
		// One request per non-empty comma field, exactly one of chunks or
		// SMs set and positive; written back ("N" or "Nsm") it reads the same.
		fields := 0
		for _, f := range strings.Split(s, ",") {
			if strings.TrimSpace(f) != "" {
				fields++
			}
		}
		if len(req) != fields {
			t.Fatalf("%q: %d requests for %d fields", s, len(req), fields)
		}
		parts := make([]string, len(req))
		for i, r := range req {
			switch {
			case r.Chunks > 0 && r.SMs == 0:
				parts[i] = strconv.Itoa(r.Chunks)
			case r.SMs > 0 && r.Chunks == 0:
				parts[i] = strconv.Itoa(r.SMs) + "sm"
			default:
				t.Fatalf("%q: request %+v", s, r)
			}
		}
		if again, err := ParseRequests(strings.Join(parts, ",")); err != nil || !reflect.DeepEqual(again, req) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, req, strings.Join(parts, ","), again, err)
		}
		p := PlanPartitions(0, "", 132, 8, 0, req)
		used := 0
		for _, q := range p.Partitions {
			if q.Chunks <= 0 {
				t.Fatalf("partition with %d chunks", q.Chunks)
			}
			used += q.Chunks
		}
		if p.Feasible != (used <= 16) {
			t.Fatalf("feasible %v with %d chunks of 16", p.Feasible, used)
		}
	})
}
