package sysfmt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// MaxCPUID bounds the CPU ids every CPU list and mask parser accepts (ids are
// 0..MaxCPUID-1), and the number of ids one list may name in all. It is the
// platform maximum: the largest CONFIG_NR_CPUS any Linux architecture accepts
// is 8192 (x86_64's NR_CPUS_RANGE_END, powerpc's NR_CPUS range; arm64 and the
// others stop at or below 4096), and 16384 leaves that a doubling of room. A
// bigger id is a corrupt or hostile file, and refusing it before allocating
// keeps a list like "0-999999999" from costing gigabytes.
const MaxCPUID = 1 << 14

// ErrCPUListBound marks a CPU list refused because it names an id beyond
// MaxCPUID-1 or more than MaxCPUID ids in all (counting repeats).
var ErrCPUListBound = errors.New("beyond the platform maximum")

// ParseCPUList parses a kernel cpulist ("0-3,8,10-11"), as found in
// cpulist, local_cpulist, isolated, nohz_full and smp_affinity_list files,
// and is the one CPU-list parser for user flags (bind --exclude-cpus) and
// files. Whitespace around the list and around each element is ignored; an
// empty list (or "(null)", which nohz_full prints when unset) is the empty set.
//
// The list is checked whole (syntax, every id below MaxCPUID, at most
// MaxCPUID ids in all) before anything is allocated, so its cost is bounded
// by MaxCPUID whatever the input.
func ParseCPUList(s string) (cpuset.CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" {
		return cpuset.New(), nil
	}
	if _, err := scanCPUList(s, nil); err != nil {
		return cpuset.CPUSet{}, err
	}
	var bitmap [MaxCPUID / 64]uint64
	distinct := 0
	_, _ = scanCPUList(s, func(a, b int) {
		for i := a; i <= b; i++ {
			if bitmap[i/64]&(1<<(i%64)) == 0 {
				bitmap[i/64] |= 1 << (i % 64)
				distinct++
			}
		}
	})
	ids := make([]int, 0, distinct)
	for w, v := range bitmap {
		for v != 0 {
			b := bits.TrailingZeros64(v)
			ids = append(ids, w*64+b)
			v &^= 1 << b
		}
	}
	return cpuset.New(ids...), nil
}

// CheckCPUList checks the bounds of a CPU list without allocating: every id
// below MaxCPUID and at most MaxCPUID ids in all. Callers that must parse a
// list with another parser's exact syntax (kubelet's cpuset.Parse for a
// KubeletConfiguration or a node file) call it first and refuse a list for
// which errors.Is(err, ErrCPUListBound): such a list would make that parser
// allocate one entry per id. Other errors are syntax errors of this
// package's (slightly more lenient) syntax.
func CheckCPUList(s string) error {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" {
		return nil
	}
	_, err := scanCPUList(s, nil)
	return err
}

// scanCPUList validates the non-empty list s and calls fn (when not nil) for
// each range a-b in order. It returns the number of ids named, repeats
// included. It allocates nothing unless it fails.
func scanCPUList(s string, fn func(a, b int)) (int, error) {
	total := 0
	// Every element names at least one id, so the total bound also bounds
	// the number of elements and this loop.
	for rest, more := s, true; more; {
		var part string
		part, rest, more = strings.Cut(rest, ",")
		part = strings.TrimSpace(part)
		if part == "" {
			return 0, fmt.Errorf("cpulist %q: empty element", shorten(s))
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPUID(lo)
		if err != nil {
			return 0, fmt.Errorf("cpulist %q: %w", shorten(s), err)
		}
		b := a
		if isRange {
			if b, err = parseCPUID(hi); err != nil {
				return 0, fmt.Errorf("cpulist %q: %w", shorten(s), err)
			}
			if b < a {
				return 0, fmt.Errorf("cpulist %q: range %d-%d is reversed", shorten(s), a, b)
			}
		}
		total += b - a + 1
		if total > MaxCPUID {
			return 0, fmt.Errorf("cpulist %q: names more than %d CPU ids in all, %w (%d)", shorten(s), MaxCPUID, ErrCPUListBound, MaxCPUID)
		}
		if fn != nil {
			fn(a, b)
		}
	}
	return total, nil
}

func parseCPUID(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) && s[0] != '-' {
		return 0, fmt.Errorf("CPU id %s is %w (ids 0-%d)", shorten(s), ErrCPUListBound, MaxCPUID-1)
	}
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad CPU id %q", shorten(s))
	}
	if n >= MaxCPUID {
		return 0, fmt.Errorf("CPU id %d is %w (ids 0-%d)", n, ErrCPUListBound, MaxCPUID-1)
	}
	return n, nil
}

// ParseCPUMask parses a kernel hex CPU mask: comma-separated 32-bit hex words,
// most significant first ("ffffffff,00000003"), as in smp_affinity and
// local_cpus. An optional 0x prefix is accepted.
func ParseCPUMask(s string) (cpuset.CPUSet, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" {
		return cpuset.CPUSet{}, fmt.Errorf("cpumask: empty")
	}
	words := strings.Split(s, ",")
	if len(words)*32 > MaxCPUID {
		return cpuset.CPUSet{}, fmt.Errorf("cpumask %q: %d words is beyond %d CPUs", shorten(s), len(words), MaxCPUID)
	}
	var ids []int
	for i := range words {
		w := strings.TrimSpace(words[len(words)-1-i])
		if w == "" || len(w) > 8 {
			return cpuset.CPUSet{}, fmt.Errorf("cpumask %q: bad word %q", shorten(s), w)
		}
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return cpuset.CPUSet{}, fmt.Errorf("cpumask %q: bad word %q", shorten(s), w)
		}
		for v != 0 {
			b := bits.TrailingZeros64(v)
			ids = append(ids, i*32+b)
			v &^= 1 << b
		}
	}
	return cpuset.New(ids...), nil
}

// FormatCPUMask renders set in the kernel's hex mask format, padded to cover
// at least ncpus CPUs.
func FormatCPUMask(set cpuset.CPUSet, ncpus int) string {
	width := ncpus
	for _, c := range set.UnsortedList() {
		if c+1 > width {
			width = c + 1
		}
	}
	nwords := (width + 31) / 32
	if nwords == 0 {
		nwords = 1
	}
	words := make([]uint32, nwords)
	for _, c := range set.UnsortedList() {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, nwords)
	for i := range words {
		parts[nwords-1-i] = fmt.Sprintf("%08x", words[i])
	}
	return strings.Join(parts, ",")
}

// ParseNodeMeminfo parses /sys/devices/system/node/nodeN/meminfo
// ("Node 0 MemTotal:  65793868 kB") into bytes (or plain counts for the
// HugePages_* lines) keyed by field name.
func ParseNodeMeminfo(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		// Node <n> <Key>: <value> [kB]
		if len(f) < 4 || f[0] != "Node" || !strings.HasSuffix(f[2], ":") {
			return nil, fmt.Errorf("line %d: want \"Node N Key: value [kB]\", got %q", ln, shorten(line))
		}
		key := strings.TrimSuffix(f[2], ":")
		v, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: bad value %q", ln, key, f[3])
		}
		if len(f) >= 5 {
			if f[4] != "kB" {
				return nil, fmt.Errorf("line %d: %s: unknown unit %q", ln, key, f[4])
			}
			if v > (1<<64-1)/1024 {
				return nil, fmt.Errorf("line %d: %s: value overflows", ln, key)
			}
			v *= 1024
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fields")
	}
	return out, nil
}

// ParseMeminfo parses /proc/meminfo ("MemTotal:  65793868 kB") into bytes
// (plain counts for lines without a unit, such as HugePages_Total) keyed by
// field name. A malformed value is an error naming its line.
func ParseMeminfo(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		key, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) == 0 || len(f) > 2 {
			return nil, fmt.Errorf("line %d: want \"Key: value [kB]\", got %q", ln, shorten(line))
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: bad value %q", ln, key, f[0])
		}
		if len(f) == 2 {
			if f[1] != "kB" {
				return nil, fmt.Errorf("line %d: %s: unknown unit %q", ln, key, f[1])
			}
			if v > (1<<64-1)/1024 {
				return nil, fmt.Errorf("line %d: %s: value overflows", ln, key)
			}
			v *= 1024
		}
		out[strings.TrimSpace(key)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fields")
	}
	return out, nil
}

// ParseBDF converts a PCI address in sysfs form ("0000:c1:00.0") or in the
// NVML/nvidia-smi form with an 8-digit domain and any case
// ("00000000:C1:00.0") to the sysfs form. The domain is required.
func ParseBDF(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return "", fmt.Errorf("PCI address %q: want domain:bus:device.function", s)
	}
	dom := parts[0]
	if len(dom) > 4 {
		if strings.Trim(dom[:len(dom)-4], "0") != "" {
			return "", fmt.Errorf("PCI address %q: domain out of range", s)
		}
		dom = dom[len(dom)-4:]
	}
	var d, b, dev, fn uint64
	if _, err := fmt.Sscanf(dom+" "+parts[1]+" "+parts[2], "%x %x %x.%x", &d, &b, &dev, &fn); err != nil {
		return "", fmt.Errorf("PCI address %q: %w", s, err)
	}
	if b > 0xff || dev > 0x1f || fn > 7 {
		return "", fmt.Errorf("PCI address %q: bus, device or function out of range", s)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, dev, fn), nil
}

// ParseDistances parses a node's distance row ("10 21 21 21").
func ParseDistances(s string) ([]int, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return nil, fmt.Errorf("distance: empty")
	}
	out := make([]int, len(f))
	for i, x := range f {
		n, err := strconv.Atoi(x)
		if err != nil || n < 0 || n > 255 {
			return nil, fmt.Errorf("distance %q: bad entry %q (want 0-255)", shorten(s), x)
		}
		out[i] = n
	}
	return out, nil
}

func shorten(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
