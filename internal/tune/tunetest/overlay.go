// Package tunetest varies a fixture host tree (a private copy of
// testdata/hosts/<name>) for tests of 'gpunode audit' and 'gpunode tune'.
// The stock, untuned OS those commands read is part of every generated
// fixture host already (internal/testhost, stock.go); what is here is what
// tests must vary: a process with a GPU open, the boot loader, competing
// tuners, and the stock OS layer for the captured
// vm-2vcpu tree.
package tunetest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpunode/gpunode/internal/testhost"
)

// Options vary the fixture.
type Options struct {
	// Stock adds the stock OS layer the generated hosts carry
	// (testhost.StockOS), for the captured vm-2vcpu tree.
	Stock bool
	// Process adds a process (PID 4242) with a GPU open, some swap and a
	// low memlock limit, for --pid checks.
	Process bool
	// Boot picks the boot loader configuration (BootGRUB, the default,
	// BootGRUBDropins, BootBLS, BootSystemdBoot; boot.go).
	Boot string
	// Tuners adds competing tuners (tuned, cpupower.service,
	// power-profiles-daemon, irqbalance enabled; boot.go).
	Tuners bool
}

// Overlay applies the variations of o to root (a copy of a fixture host).
func Overlay(root string, o Options) error {
	if o.Stock {
		if err := testhost.StockOS(root); err != nil {
			return err
		}
	}
	w := &writer{root: root}
	writeBoot(w, o.Boot)
	if o.Tuners {
		writeTuners(w)
	}
	if o.Process {
		writeProcess(w)
	}
	return w.err
}

func writeProcess(w *writer) {
	d := "/proc/4242"
	status := func(tid int, cpus string) string {
		return fmt.Sprintf("Name:\tpython3\nPid:\t%d\nVmRSS:\t83886080 kB\nVmLck:\t0 kB\nVmPin:\t1048576 kB\nVmSwap:\t20480 kB\nCpus_allowed_list:\t%s\n", tid, cpus)
	}
	w.file(d+"/status", status(4242, "0-55,112-167"), 0o444)
	w.file(d+"/task/4242/status", status(4242, "0-55,112-167"), 0o444)
	w.file(d+"/task/4250/status", status(4250, "0-223"), 0o444)
	w.file(d+"/limits", "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 1048576              files     \nMax locked memory         8388608              8388608              bytes     \n", 0o444)
	w.file(d+"/maps", "55d0c0000000-55d0c0001000 r--p 00000000 103:04 1 /usr/bin/python3.12\n7f0000000000-7f0000001000 r-xp 00000000 103:04 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n", 0o444)
	w.file(d+"/numa_maps", "55d0c0000000 default file=/usr/bin/python3.12 mapped=1 N0=1\n7f1000000000 bind:1 anon=262144 dirty=262144 N1=262144\n", 0o444)
	w.file(d+"/comm", "python3\n", 0o444)
	w.link(d+"/fd/0", "/dev/pts/0")
	w.link(d+"/fd/7", "/dev/nvidiactl")
	w.link(d+"/fd/8", "/dev/nvidia0")
}

type writer struct {
	root string
	err  error
}

func (w *writer) file(p, content string, mode os.FileMode) {
	if w.err != nil {
		return
	}
	full := filepath.Join(w.root, p)
	if w.err = os.MkdirAll(filepath.Dir(full), 0o755); w.err != nil {
		return
	}
	if w.err = os.WriteFile(full, []byte(content), mode); w.err != nil {
		return
	}
	w.err = os.Chmod(full, mode)
}

func (w *writer) remove(p string) {
	if w.err == nil {
		if err := os.Remove(filepath.Join(w.root, p)); err != nil && !os.IsNotExist(err) {
			w.err = err
		}
	}
}

func (w *writer) link(p, target string) {
	if w.err != nil {
		return
	}
	full := filepath.Join(w.root, p)
	if w.err = os.MkdirAll(filepath.Dir(full), 0o755); w.err != nil {
		return
	}
	w.err = os.Symlink(target, full)
}
