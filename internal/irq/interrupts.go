package irq

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunode/gpunode/internal/sysfmt"
)

// Interrupts is /proc/interrupts: the CPU columns of the header and one row
// per interrupt source.
type Interrupts struct {
	// CPUs are the CPU ids of the count columns, in order (only online CPUs
	// have a column, so ids may have gaps).
	CPUs []int
	Rows []Row
	// Warnings name the rows that were skipped because they do not parse
	// ("/proc/interrupts line 7: ..."), at most maxRowWarnings of them and
	// then a count of the rest.
	Warnings []string
}

// maxRowWarnings bounds the warnings about skipped rows.
const maxRowWarnings = 20

// Row is one line of /proc/interrupts.
type Row struct {
	// Label is the text before the colon: an IRQ number ("200") or a
	// per-CPU interrupt name ("LOC", "NMI", "IPI0").
	Label string
	// IRQ is the IRQ number, -1 for named rows.
	IRQ int
	// Counts are the per-CPU counts, aligned with Interrupts.CPUs (rows such
	// as ERR carry a single total and have len(Counts) == 1).
	Counts []uint64
	// Desc is the rest of the line after the counts: chip, hardware IRQ,
	// trigger and action names ("IR-PCI-MSIX-0000:18:00.0 0-edge nvidia").
	Desc string
	// Actions are the handler names (the last field group: "nvidia",
	// "mlx5_comp3@pci:0000:1a:00.0"); shared IRQs list several.
	Actions []string
	// BDF is the PCI address found in the chip name or an action name, if any.
	BDF string
}

// Total is the sum of the row's counts.
func (r Row) Total() uint64 {
	var t uint64
	for _, c := range r.Counts {
		t += c
	}
	return t
}

// Name is the row's handler names joined with commas, or Desc.
func (r Row) Name() string {
	if len(r.Actions) > 0 {
		return strings.Join(r.Actions, ",")
	}
	return r.Desc
}

// maxColumns bounds the header: Linux's NR_CPUS is at most 8192.
const maxColumns = 1 << 14

// maxHeaderBytes bounds the header line: maxColumns names "CPUnnnnn" with
// the kernel's padding. maxLineBytes bounds every line: maxColumns counts
// of up to 20 digits each, the description and room to spare.
const (
	maxHeaderBytes = maxColumns * 16
	maxLineBytes   = 1 << 20
)

var bdfRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\b`)
}) // compiled on first use: package inits run at every start

// FindBDF returns the first PCI address in s in sysfs form (4-digit domain,
// lower case), or "".
func FindBDF(s string) string {
	b, err := sysfmt.ParseBDF(bdfRE().FindString(s))
	if err != nil {
		return ""
	}
	return b
}

// ParseInterrupts parses /proc/interrupts. The first line names the CPU
// columns ("CPU0 CPU1 ..."); each following line is "<label>: <count per
// column> <description>". Named rows with fewer counts (ERR, MIS) are kept
// with the counts they have. A header that does not parse is an error; a row
// that does not parse is skipped with a warning naming its line and the
// reason (one odd row must not cost the whole table).
func ParseInterrupts(b []byte) (*Interrupts, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("/proc/interrupts: %w", err)
		}
		return nil, fmt.Errorf("/proc/interrupts: empty")
	}
	out := &Interrupts{}
	seen := map[int]bool{}
	header := sc.Text()
	if len(header) > maxHeaderBytes {
		return nil, fmt.Errorf("/proc/interrupts line 1: longer than %d bytes (%d CPU columns at most)", maxHeaderBytes, maxColumns)
	}
	for _, f := range strings.Fields(header) {
		if len(out.CPUs) >= maxColumns {
			return nil, fmt.Errorf("/proc/interrupts line 1: more than %d CPU columns", maxColumns)
		}
		id, ok := strings.CutPrefix(f, "CPU")
		n, err := strconv.Atoi(id)
		if !ok || err != nil || n < 0 || n >= maxColumns {
			return nil, fmt.Errorf("/proc/interrupts line 1: header field %q is not CPU<n>", short(f))
		}
		if seen[n] {
			return nil, fmt.Errorf("/proc/interrupts line 1: CPU%d listed twice", n)
		}
		seen[n] = true
		out.CPUs = append(out.CPUs, n)
	}
	if len(out.CPUs) == 0 {
		return nil, fmt.Errorf("/proc/interrupts line 1: no CPU columns")
	}
	labels := map[string]bool{}
	skipped := 0
	for ln := 2; sc.Scan(); ln++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		r, err := parseRow(line, ln, len(out.CPUs), labels)
		if err != nil {
			if skipped++; skipped <= maxRowWarnings {
				out.Warnings = append(out.Warnings, err.Error()+" (row skipped)")
			}
			continue
		}
		out.Rows = append(out.Rows, r)
	}
	if skipped > maxRowWarnings {
		out.Warnings = append(out.Warnings, fmt.Sprintf("/proc/interrupts: %d more rows skipped", skipped-maxRowWarnings))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/interrupts: %w", err)
	}
	return out, nil
}

// parseRow parses line ln of /proc/interrupts, a table of ncols CPU
// columns. labels holds the labels of the rows kept so far; a row is added
// to it only when it parses.
func parseRow(line string, ln, ncols int, labels map[string]bool) (Row, error) {
	label, rest, ok := strings.Cut(line, ":")
	label = strings.TrimSpace(label)
	if !ok || label == "" || strings.ContainsAny(label, " \t") {
		return Row{}, fmt.Errorf("/proc/interrupts line %d: want \"<irq>: counts...\", got %q", ln, short(line))
	}
	if labels[label] {
		return Row{}, fmt.Errorf("/proc/interrupts line %d: %s listed twice", ln, short(label))
	}
	r := Row{Label: label, IRQ: -1}
	if n, err := strconv.Atoi(label); err == nil {
		if n < 0 {
			return Row{}, fmt.Errorf("/proc/interrupts line %d: negative IRQ %d", ln, n)
		}
		r.IRQ = n
	}
	// Counts: up to one per column, each a decimal field.
	pos := 0
	for len(r.Counts) < ncols {
		start := pos
		for start < len(rest) && (rest[start] == ' ' || rest[start] == '\t') {
			start++
		}
		end := start
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if end == start || (end < len(rest) && rest[end] != ' ' && rest[end] != '\t') {
			break
		}
		v, err := strconv.ParseUint(rest[start:end], 10, 64)
		if err != nil {
			return Row{}, fmt.Errorf("/proc/interrupts line %d (%s): count %q: %w", ln, short(label), short(rest[start:end]), err)
		}
		r.Counts = append(r.Counts, v)
		pos = end
	}
	if r.IRQ >= 0 && len(r.Counts) != ncols {
		return Row{}, fmt.Errorf("/proc/interrupts line %d (IRQ %d): %d counts for %d CPU columns", ln, r.IRQ, len(r.Counts), ncols)
	}
	r.Desc = strings.Join(strings.Fields(rest[pos:]), " ")
	r.Actions = actions(rest[pos:])
	r.BDF = FindBDF(rest[pos:])
	labels[label] = true
	return r, nil
}

// actions extracts the handler names of a device row: the kernel prints them
// after the trigger ("-edge"/"Edge"/"Level", optionally "-<name>"), two
// spaces before the first and ", " between shared handlers.
func actions(desc string) []string {
	f := strings.Fields(desc)
	idx := -1
	for i, w := range f {
		lw := strings.ToLower(w)
		if strings.HasSuffix(lw, "-edge") || strings.HasSuffix(lw, "-level") || lw == "edge" || lw == "level" ||
			strings.Contains(lw, "-edge-") || strings.Contains(lw, "-level-") ||
			strings.HasPrefix(lw, "edge-") || strings.HasPrefix(lw, "level-") {
			idx = i
		}
	}
	if idx < 0 || idx == len(f)-1 {
		return nil
	}
	var out []string
	for _, a := range strings.Split(strings.Join(f[idx+1:], " "), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Row returns the row of IRQ n, or nil.
func (in *Interrupts) Row(n int) *Row {
	for i := range in.Rows {
		if in.Rows[i].IRQ == n {
			return &in.Rows[i]
		}
	}
	return nil
}

func short(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
