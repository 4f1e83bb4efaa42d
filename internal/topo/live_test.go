package topo

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// These integration tests compare discovery on the live machine with the
// real tools users compare against. They skip when the tools are missing;
// .ci/run installs numactl (lscpu comes with util-linux).

func liveTopology(t *testing.T) *Topology {
	t.Helper()
	fs, err := hostfs.New("/")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := Discover(context.Background(), fs)
	if err != nil {
		t.Skipf("no live topology: %v", err)
	}
	return topo
}

func TestLiveMatchesNumactl(t *testing.T) {
	if _, err := exec.LookPath("numactl"); err != nil {
		t.Skip("numactl not installed (apt-get install -y numactl)")
	}
	out, err := exec.Command("numactl", "-H").Output()
	if err != nil {
		t.Skipf("numactl -H: %v", err)
	}
	topo := liveTopology(t)
	nodeCPUs := regexp.MustCompile(`^node (\d+) cpus:(.*)$`)
	nodeSize := regexp.MustCompile(`^node (\d+) size: (\d+) MB$`)
	seenNodes := 0
	inDist := false
	var distRows [][]int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case nodeCPUs.MatchString(line):
			m := nodeCPUs.FindStringSubmatch(line)
			id, _ := strconv.Atoi(m[1])
			n := topo.NodeByID(id)
			if n == nil {
				t.Fatalf("numactl lists node %d; gpunode does not", id)
			}
			seenNodes++
			want := strings.Fields(m[2])
			var got []string
			for _, c := range n.CPUs.List() {
				got = append(got, strconv.Itoa(c))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("node %d CPUs: gpunode %v, numactl %v", id, got, want)
			}
		case nodeSize.MatchString(line):
			m := nodeSize.FindStringSubmatch(line)
			id, _ := strconv.Atoi(m[1])
			mb, _ := strconv.ParseUint(m[2], 10, 64)
			got := topo.NodeByID(id).MemTotalBytes >> 20
			// Memory can be hot-(un)plugged or ballooned between the two reads.
			if diff := int64(got) - int64(mb); diff > int64(mb)/10+256 || -diff > int64(mb)/10+256 {
				t.Errorf("node %d size: gpunode %d MB, numactl %d MB", id, got, mb)
			}
		case strings.HasPrefix(line, "node distances:"):
			inDist = true
		case inDist && strings.HasPrefix(line, "node "):
		case inDist && strings.Contains(line, ":"):
			_, rest, _ := strings.Cut(line, ":")
			var row []int
			for _, f := range strings.Fields(rest) {
				v, _ := strconv.Atoi(f)
				row = append(row, v)
			}
			distRows = append(distRows, row)
		}
	}
	if seenNodes != len(topo.NUMANodes) {
		t.Errorf("numactl shows %d nodes with CPUs lines, gpunode %d nodes", seenNodes, len(topo.NUMANodes))
	}
	for i, row := range distRows {
		if fmt.Sprint(row) != fmt.Sprint(topo.NUMANodes[i].Distances) {
			t.Errorf("distance row %d: numactl %v, gpunode %v", i, row, topo.NUMANodes[i].Distances)
		}
	}
}

func TestLiveMatchesLscpu(t *testing.T) {
	out, err := exec.Command("lscpu", "-p=CPU,NODE,SOCKET,CORE,CACHE").Output()
	if err != nil {
		t.Skipf("lscpu: %v", err)
	}
	topo := liveTopology(t)
	byID := map[int]CPU{}
	for _, c := range topo.CPUs {
		byID[c.ID] = c
	}
	// lscpu numbers cores and caches logically; compare the groupings.
	coreOf := map[[2]int]string{} // (socket, core_id) -> lscpu CORE
	l3Of := map[int]string{}      // gpunode L3 index -> lscpu L3 id
	rows, checkedL3 := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 5 {
			t.Fatalf("unexpected lscpu line %q", line)
		}
		id, _ := strconv.Atoi(f[0])
		c, ok := byID[id]
		if !ok {
			t.Errorf("lscpu CPU %d missing in gpunode", id)
			continue
		}
		rows++
		if f[1] != "" && f[1] != strconv.Itoa(c.NUMANode) {
			t.Errorf("CPU %d node: lscpu %s, gpunode %d", id, f[1], c.NUMANode)
		}
		if f[2] != strconv.Itoa(c.Socket) {
			t.Errorf("CPU %d socket: lscpu %s, gpunode %d", id, f[2], c.Socket)
		}
		key := [2]int{c.Socket, c.Core}
		if prev, ok := coreOf[key]; ok && prev != f[3] {
			t.Errorf("CPU %d: gpunode groups it with core %v (lscpu core %s), lscpu says core %s", id, key, prev, f[3])
		}
		coreOf[key] = f[3]
		// The CACHE column prints as ",L1d,L1i,L2,L3" (older: "L1d:L1i:L2:L3").
		caches := f[5:]
		if f[4] != "" {
			caches = strings.Split(f[4], ":")
		}
		if len(caches) >= 4 && c.L3 >= 0 {
			checkedL3++
			l3 := caches[3]
			if prev, ok := l3Of[c.L3]; ok && prev != l3 {
				t.Errorf("CPU %d: L3 group mismatch (lscpu %s vs %s)", id, l3, prev)
			}
			l3Of[c.L3] = l3
		}
	}
	if rows != topo.OnlineCPUs.Size() {
		t.Errorf("lscpu lists %d CPUs, gpunode %d online", rows, topo.OnlineCPUs.Size())
	}
	if len(topo.L3Caches) > 0 && checkedL3 == 0 {
		t.Error("no L3 grouping was compared")
	}
	distinct := map[string]bool{}
	for _, v := range coreOf {
		distinct[v] = true
	}
	if len(distinct) != len(coreOf) {
		t.Errorf("gpunode splits an lscpu core: %v", coreOf)
	}
}
