package gpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// maxNVLinks bounds the links read per GPU (NVML_NVLINK_MAX_LINKS is 18;
// Blackwell has 18 too).
const maxNVLinks = 64

// Compiled on first use: package initialisers run at every start.
var (
	nvlinkGPULine  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^GPU (\d+): .*\(UUID: (GPU-[0-9A-Fa-f-]+)\)\s*$`) })
	nvlinkLinkLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*Link (\d+): (.*)$`) })
)

// ParseNVLinkStatus parses 'nvidia-smi nvlink -s' output into each GPU's
// links, keyed by upper-case UUID:
//
//	GPU 0: NVIDIA RTX A6000 (UUID: GPU-5baec991-...)
//		 Link 0: 14.062 GB/s
//		 Link 4: <inactive>
//
// A link with a speed is active. A GPU whose links are all inactive
// ("NVML: Unable to retrieve NVLink information as all links are
// inActive") has no entry. Lines it does not know are skipped.
func ParseNVLinkStatus(out []byte) map[string][]NVLink {
	res := map[string][]NVLink{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	cur := ""
	for lines := 0; sc.Scan() && lines < 1<<16; lines++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := nvlinkGPULine().FindStringSubmatch(line); m != nil {
			cur = strings.ToUpper(m[2])
			continue
		}
		m := nvlinkLinkLine().FindStringSubmatch(line)
		if m == nil || cur == "" || len(res[cur]) >= maxNVLinks {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= maxNVLinks {
			continue
		}
		l := NVLink{Link: n}
		val := strings.TrimSpace(m[2])
		if f, ok := strings.CutSuffix(val, "GB/s"); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil && v > 0 {
				l.Active, l.SpeedGBps = true, v
			}
		}
		res[cur] = append(res[cur], l)
	}
	return res
}

// TopoMatrix is the GPU-to-GPU part of 'nvidia-smi topo -m': Class[i][j]
// is the connection between GPU i and GPU j ("X", "NV4", "NODE", "SYS",
// "PIX", "PXB", "PHB").
type TopoMatrix struct {
	GPUs  []int
	Class map[int]map[int]string
}

// Compiled on first use: package initialisers run at every start.
var topoDevice = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(GPU|NIC|mlx\d+_)\d+$`) })

// ParseTopoMatrix parses 'nvidia-smi topo -m' output. The header names the
// device columns (GPU0.. and NIC0..), then "CPU Affinity", "NUMA
// Affinity"; each GPU row has one cell per device column. Rows of NICs
// and the legend are skipped.
func ParseTopoMatrix(out []byte) (TopoMatrix, error) {
	m := TopoMatrix{Class: map[int]map[int]string{}}
	var cols []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for lines := 0; sc.Scan() && lines < 1<<16; lines++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if cols == nil {
			if !topoDevice().MatchString(f[0]) {
				continue
			}
			for _, c := range f {
				if !topoDevice().MatchString(c) {
					break
				}
				cols = append(cols, c)
			}
			continue
		}
		if f[0] == "Legend:" {
			break
		}
		row, ok := strings.CutPrefix(f[0], "GPU")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(row)
		if err != nil || len(f) < 1+len(cols) {
			continue
		}
		m.GPUs = append(m.GPUs, i)
		m.Class[i] = map[int]string{}
		for k, c := range cols {
			if j, err := strconv.Atoi(strings.TrimPrefix(c, "GPU")); err == nil && strings.HasPrefix(c, "GPU") {
				m.Class[i][j] = f[1+k]
			}
		}
	}
	if cols == nil {
		return m, errors.New("no GPU0 header row")
	}
	return m, nil
}

// ApplyTopoMatrix sets each GPU's NVLinkPeers from the NV# cells of m
// (GPU i of the matrix is the GPU with index i in st).
func ApplyTopoMatrix(st *Status, m TopoMatrix) {
	byIndex := map[int]int{}
	for k, g := range st.GPUs {
		byIndex[g.Index] = k
	}
	for _, i := range m.GPUs {
		k, ok := byIndex[i]
		if !ok {
			continue
		}
		var peers []NVLinkPeer
		for j := range len(st.GPUs) + 64 {
			cls, ok := m.Class[i][j]
			if !ok {
				continue
			}
			n, ok := strings.CutPrefix(cls, "NV")
			if !ok {
				continue
			}
			links, err := strconv.Atoi(n)
			if err != nil || links <= 0 {
				continue
			}
			if kj, ok := byIndex[j]; ok && st.GPUs[kj].PCIAddress != "" {
				peers = append(peers, NVLinkPeer{PCIAddress: st.GPUs[kj].PCIAddress, Links: links})
			}
		}
		st.GPUs[k].NVLinkPeers = peers
	}
}

// String renders m compactly for messages ("GPU0-GPU1 NV4").
func (m TopoMatrix) String() string {
	var parts []string
	for _, i := range m.GPUs {
		for _, j := range m.GPUs {
			if j > i {
				parts = append(parts, fmt.Sprintf("GPU%d-GPU%d %s", i, j, m.Class[i][j]))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// Compiled on first use: package initialisers run at every start.
var (
	listGPULine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^GPU (\d+): .*\(UUID: (GPU-[0-9A-Fa-f-]+)\)\s*$`) })
	listMIGLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9A-Fa-f-]+)\)\s*$`)
	})
)

// ParseSMIList parses 'nvidia-smi -L' into the MIG device UUIDs of each
// GPU (upper-case GPU UUID -> MIG device index -> MIG UUID):
//
//	GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-2927d07e-...)
//	  MIG 1g.10gb     Device  0: (UUID: MIG-6e95ef19-...)
func ParseSMIList(out []byte) map[string]map[int]string {
	res := map[string]map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	cur := ""
	for lines := 0; sc.Scan() && lines < 1<<16; lines++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if m := listGPULine().FindStringSubmatch(line); m != nil {
			cur = strings.ToUpper(m[2])
			continue
		}
		m := listMIGLine().FindStringSubmatch(line)
		if m == nil || cur == "" {
			continue
		}
		i, err := strconv.Atoi(m[2])
		if err != nil || i >= 1<<10 {
			continue
		}
		if res[cur] == nil {
			res[cur] = map[int]string{}
		}
		res[cur][i] = m[3]
	}
	return res
}

// ApplySMIList sets the UUIDs of MIG devices (by GPU UUID and MIG device
// index) that the XML listed without one.
func ApplySMIList(st *Status, uuids map[string]map[int]string) {
	for i := range st.GPUs {
		g := &st.GPUs[i]
		byIndex := uuids[strings.ToUpper(g.UUID)]
		for j := range g.MIGInstances {
			for k := range g.MIGInstances[j].ComputeInstances {
				c := &g.MIGInstances[j].ComputeInstances[k]
				if c.UUID == "" && c.Index != nil {
					c.UUID = byIndex[*c.Index]
				}
			}
		}
	}
}

// needsMIGUUIDs reports whether a MIG device of st has no UUID.
func needsMIGUUIDs(st Status) bool {
	for _, g := range st.GPUs {
		for _, gi := range g.MIGInstances {
			for _, c := range gi.ComputeInstances {
				if c.UUID == "" {
					return true
				}
			}
		}
	}
	return false
}
