package bind

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/output"
)

func TestReadShowFromProcFiles(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/4242/status", "Name:\tpython\nCpus_allowed_list:\t56-69,168-181\nMems_allowed_list:\t0-1\n")
	write("proc/4242/numa_maps", "55d0 prefer:1 file=/usr/bin/python3.11 mapped=900 N1=900 kernelpagesize_kB=4\n"+
		"55e0 prefer:1 heap anon=5000 dirty=5000 N0=1000 N1=4000 kernelpagesize_kB=4\n"+
		"7f00 bind:0 anon=10 N0=10 kernelpagesize_kB=4\n"+
		"7ffd prefer:1 stack anon=33 dirty=33 N1=33 kernelpagesize_kB=4\n")
	stat := func(comm string, nice, cpu, rtprio, policy int) string {
		f := make([]string, 52)
		for i := range f {
			f[i] = "0"
		}
		f[0] = "S"
		f[19-3], f[39-3], f[40-3], f[41-3] = itoa(nice), itoa(cpu), itoa(rtprio), itoa(policy)
		return "4242 (" + comm + ") " + strings.Join(f, " ") + "\n"
	}
	write("proc/4242/task/4242/stat", stat("python", -5, 57, 0, 0))
	write("proc/4242/task/4242/status", "Cpus_allowed_list:\t56-69,168-181\n")
	write("proc/4242/task/4250/stat", stat("pt_data (worker) 0", 0, 168, 0, 0))
	write("proc/4242/task/4251/stat", stat("nccl-helper", 0, 60, 10, 1))
	fsys, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadShow(fsys, discover(t, "dgx-h100"), 4242, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteTable(&b, output.Options{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "show-4242.txt", b.Bytes())
	if s.Policy.Mode != "preferred" || len(s.Policy.Nodes) != 1 || s.Policy.Nodes[0] != 1 || s.PolicySource != "numa_maps" {
		t.Errorf("policy %+v from %s", s.Policy, s.PolicySource)
	}
	if len(s.CPUNodes) != 1 || s.CPUNodes[0] != 1 {
		t.Errorf("cpu nodes %v, want [1]", s.CPUNodes)
	}
	if len(s.Threads) != 3 || s.Threads[1].Comm != "pt_data (worker) 0" || s.Threads[2].Policy != "FF" || s.Threads[2].RTPrio != 10 || s.Threads[0].Nice != -5 {
		t.Errorf("threads %+v", s.Threads)
	}
	if len(s.Pages) != 2 || s.Pages[0].Pages != 1010 || s.Pages[1].Pages != 4933 {
		t.Errorf("pages %+v", s.Pages)
	}
	if _, err := ReadShow(fsys, nil, 999, 1); err == nil {
		t.Error("missing process: no error")
	}
}

func TestReadShowSelf(t *testing.T) {
	fsys, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadShow(fsys, nil, 0, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != os.Getpid() || s.PolicySource != "get_mempolicy" || len(s.Threads) == 0 || s.CPUs.Size() == 0 {
		t.Fatalf("show self: %+v", s)
	}
}

func TestParseTaskStatErrors(t *testing.T) {
	for _, in := range []string{"", "1 python S 0", "1 (x) S 1 2 3", "1 (x) S " + strings.Repeat("a ", 60)} {
		if _, err := ParseTaskStat([]byte(in)); err == nil {
			t.Errorf("ParseTaskStat(%q): no error", in)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
