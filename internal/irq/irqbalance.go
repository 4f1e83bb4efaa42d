package irq

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// irqbalance environment files: Debian/Ubuntu, then RHEL/SUSE.
var irqbalanceConfigs = []string{"/etc/default/irqbalance", "/etc/sysconfig/irqbalance"}

// DetectIRQBalance looks for running irqbalance processes (/proc/<pid>/comm)
// and its environment file. A /proc that cannot be listed is an error; a
// process that exits while being read is skipped.
func DetectIRQBalance(fsys *hostfs.FS) (IRQBalance, error) {
	var ib IRQBalance
	names, err := fsys.ReadDirNames("/proc")
	if err != nil {
		return ib, err
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		comm, err := fsys.ReadString("/proc/" + n + "/comm")
		if err != nil {
			continue
		}
		if comm == "irqbalance" {
			ib.PIDs = append(ib.PIDs, pid)
		}
	}
	sort.Ints(ib.PIDs)
	ib.Running = len(ib.PIDs) > 0
	for _, p := range irqbalanceConfigs {
		b, err := fsys.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ib, err
		}
		ib.ConfigFile = p
		env := parseEnvFile(b)
		if v, ok := env["IRQBALANCE_BANNED_CPULIST"]; ok {
			ib.CurrentBanned = v
		} else if v, ok := env["IRQBALANCE_BANNED_CPUS"]; ok {
			if set, err := sysfmt.ParseCPUMask(v); err == nil {
				ib.CurrentBanned = set.String()
			} else {
				ib.CurrentBanned = v
			}
		}
		break
	}
	return ib, nil
}

// parseEnvFile reads KEY=VALUE lines (shell-style quotes removed, comments
// skipped).
func parseEnvFile(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// fill computes the settings that keep irqbalance from undoing rep's plan.
func (ib *IRQBalance) fill(rep *Report) {
	ib.BannedCPUList = rep.Excluded.All.String()
	var irqs []int
	for _, d := range rep.Devices {
		for _, q := range d.IRQs {
			if q.Planned.Size() > 0 {
				irqs = append(irqs, q.IRQ)
			}
		}
	}
	if len(irqs) == 0 {
		return
	}
	var args []string
	for _, n := range irqs {
		args = append(args, fmt.Sprintf("--banirq=%d", n))
	}
	ib.Args = strings.Join(args, " ")
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\n# irqbalance --policyscript: $1 is the device's sysfs path, $2 the IRQ.\n")
	sb.WriteString("# Written by gpunode irq plan: leave these IRQs where gpunode put them.\ncase \"$2\" in\n")
	const perLine = 16
	for i := 0; i < len(irqs); i += perLine {
		end := min(i+perLine, len(irqs))
		parts := make([]string, 0, end-i)
		for _, n := range irqs[i:end] {
			parts = append(parts, strconv.Itoa(n))
		}
		sb.WriteString("  " + strings.Join(parts, "|") + ") echo ban=true ;;\n")
	}
	sb.WriteString("esac\n")
	ib.PolicyScript = sb.String()
}
