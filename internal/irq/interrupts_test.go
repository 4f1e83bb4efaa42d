package irq

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
)

// A real-world shaped table: gaps in the CPU columns (CPU2 offline), legacy
// IO-APIC rows, MSI-X rows with and without interrupt remapping, a shared
// handler, arm64 ITS rows and per-CPU named rows.
const sample = `            CPU0       CPU1       CPU3
   0:         44          0          0  IR-IO-APIC    2-edge      timer
   9:          0          0          0  IR-IO-APIC    9-fasteoi   acpi
  33:          0          5          0  IR-PCI-MSIX-0000:18:00.0    0-edge      nvidia
 575:          0         16          0  IR-PCI-MSI-0000:c1:00.0    0-edge      nvidia
  98:         12          0          7  IR-PCI-MSIX-0000:1a:00.0    3-edge      mlx5_comp3@pci:0000:1a:00.0
 120:          1          2          3  PCI-MSI 524288-edge      eth0-TxRx-0, eth0-rx
 300:          9          0          0  ITS-PCI-MSIX-0009:01:00.0   0 Edge      nvidia
 301:          0          0          0  ITS-MSI 1048576 Edge      nvme0q0
NMI:          1          2          3   Non-maskable interrupts
LOC:     123456     234567     345678   Local timer interrupts
ERR:          0
MIS:          0
`

func TestParseInterrupts(t *testing.T) {
	in, err := ParseInterrupts([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.CPUs; len(got) != 3 || got[2] != 3 {
		t.Fatalf("CPUs %v, want [0 1 3]", got)
	}
	cases := []struct {
		irq     int
		bdf     string
		actions string
		total   uint64
	}{
		{0, "", "timer", 44},
		{33, "0000:18:00.0", "nvidia", 5},
		{575, "0000:c1:00.0", "nvidia", 16},
		{98, "0000:1a:00.0", "mlx5_comp3@pci:0000:1a:00.0", 19},
		{120, "", "eth0-TxRx-0,eth0-rx", 6},
		{300, "0009:01:00.0", "nvidia", 9},
		{301, "", "nvme0q0", 0},
	}
	for _, c := range cases {
		r := in.Row(c.irq)
		if r == nil {
			t.Fatalf("IRQ %d missing", c.irq)
		}
		if r.BDF != c.bdf || strings.Join(r.Actions, ",") != c.actions || r.Total() != c.total {
			t.Errorf("IRQ %d: bdf %q actions %v total %d; want %q %q %d", c.irq, r.BDF, r.Actions, r.Total(), c.bdf, c.actions, c.total)
		}
	}
	var named []string
	for _, r := range in.Rows {
		if r.IRQ < 0 {
			named = append(named, r.Label)
		}
	}
	if strings.Join(named, ",") != "NMI,LOC,ERR,MIS" {
		t.Errorf("named rows %v", named)
	}
	if loc := in.Rows[len(in.Rows)-3]; loc.Counts[2] != 345678 || loc.Desc != "Local timer interrupts" {
		t.Errorf("LOC row %+v", loc)
	}
}

func TestParseInterruptsErrors(t *testing.T) {
	// A header that does not parse is an error.
	cases := map[string]string{
		"":            "empty",
		"CPU0 CPUx\n": `header field "CPUx"`,
		"CPU0 CPU0\n": "CPU0 listed twice",
		"   \n":       "no CPU columns",
	}
	for in, want := range cases {
		_, err := ParseInterrupts([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/proc/interrupts") {
			t.Errorf("ParseInterrupts(%q) = %v, want an error naming the file and %q", in, err, want)
		}
	}
	// A row that does not parse is skipped with a warning naming its line.
	rows := map[string]string{
		"CPU0 CPU1\n 5: 1\n":                    "line 2 (IRQ 5): 1 counts for 2 CPU columns",
		"CPU0\n 5: 1 x\n 5: 2 y\n":              "line 3: 5 listed twice",
		"CPU0\nno colon here\n":                 "line 2",
		"CPU0\n 7: 99999999999999999999999 x\n": "count",
	}
	for in, want := range rows {
		table, err := ParseInterrupts([]byte(in))
		if err != nil || len(table.Warnings) != 1 || !strings.Contains(table.Warnings[0], want) || !strings.Contains(table.Warnings[0], "/proc/interrupts") {
			t.Errorf("ParseInterrupts(%q) = %v, %v; want one warning naming the file and %q", in, table, err, want)
		}
	}
}

func TestFindBDF(t *testing.T) {
	for in, want := range map[string]string{
		"IR-PCI-MSIX-0000:18:00.0 0-edge nvidia": "0000:18:00.0",
		"mlx5_comp3@pci:0000:1A:00.0":            "0000:1a:00.0",
		"00000000:C1:00.0":                       "0000:c1:00.0",
		"00010000:C1:00.0":                       "",
		"PCI-MSI 524288-edge":                    "",
	} {
		if got := FindBDF(in); got != want {
			t.Errorf("FindBDF(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseFixtures parses every fixture host's /proc/interrupts.
func TestParseFixtures(t *testing.T) {
	for _, name := range []string{"dgx-h100", "amd-8numa", "gh200", "downgraded"} {
		b, err := os.ReadFile(filepath.Join(testhost.Path(t, name), "proc/interrupts"))
		if err != nil {
			t.Fatal(err)
		}
		in, err := ParseInterrupts(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dev := 0
		for _, r := range in.Rows {
			if r.BDF != "" {
				dev++
				if len(r.Actions) == 0 {
					t.Errorf("%s IRQ %d: no actions in %q", name, r.IRQ, r.Desc)
				}
			}
		}
		if dev == 0 {
			t.Errorf("%s: no device rows", name)
		}
	}
}

func FuzzParseInterrupts(f *testing.F) {
	f.Add(sample)
	f.Add("CPU0\n 1: 2 IR-PCI-MSIX-0000:00:01.0 0-edge x\n")
	f.Add("CPU0 CPU1\nERR: 0\n")
	f.Fuzz(func(t *testing.T, s string) {
		in, err := ParseInterrupts([]byte(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/proc/interrupts") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range in.Rows {
			if seen[r.Label] {
				t.Fatalf("label %q twice", r.Label)
			}
			seen[r.Label] = true
			if len(r.Counts) > len(in.CPUs) {
				t.Fatalf("row %q: %d counts for %d CPUs", r.Label, len(r.Counts), len(in.CPUs))
			}
			if r.IRQ >= 0 && len(r.Counts) != len(in.CPUs) {
				t.Fatalf("IRQ %d: %d counts for %d CPUs", r.IRQ, len(r.Counts), len(in.CPUs))
			}
			if r.BDF != "" && FindBDF(r.BDF) != r.BDF {
				t.Fatalf("BDF %q not canonical", r.BDF)
			}
		}
	})
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add("IRQBALANCE_BANNED_CPULIST=\"0-3\"\n# c\nexport IRQBALANCE_ARGS='--banirq=5'\n")
	f.Add(" =\nexport export x= '\"a\"' \nexport #k=v\nA=\"b\nA=c\n")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<15 {
			return // one line must stay under the scanner's 64 KiB
		}
		env := parseEnvFile([]byte(s))
		var b strings.Builder
		for k, v := range env {
			if strings.ContainsAny(k, "\n=") || strings.TrimSpace(k) != k {
				t.Fatalf("key %q", k)
			}
			if strings.Contains(v, "\n") {
				t.Fatalf("value %q", v)
			}
			// Written back exported and double-quoted, as systemd and a
			// shell would read it.
			b.WriteString("export " + k + "=\"" + v + "\"\n")
		}
		if again := parseEnvFile([]byte(b.String())); !maps.Equal(again, env) {
			t.Fatalf("%q -> %q -> %q -> %q", s, env, b.String(), again)
		}
	})
}
