package tune

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Stand-ins for the commands printed fixes run besides file writes. The
// fix tests put links named after them, pointing at the test binary, first
// on PATH; TestMain runs runFixStub when GPUNODE_FIX_STUB is set. Each acts
// on the tree in GPUNODE_FIX_ROOT the way the real command acts on the host,
// as far as what gpunode reads afterwards is concerned (commands whose
// effect gpunode does not read, like update-grub writing grub.cfg, only
// check their arguments).
var fixStubs = []string{"swapoff", "systemctl", "update-grub", "grubby", "kernel-install", "setpci", "mount", "uname", "gpunode", "tuned-adm", "powerprofilesctl"}

// fixStubDir makes the directory of stand-in links.
func fixStubDir(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range fixStubs {
		if err := os.Symlink(exe, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runFixStub runs stand-in name with args; it returns the exit status.
func runFixStub(name string, args []string) int {
	root := os.Getenv("GPUNODE_FIX_ROOT")
	if root == "" {
		fmt.Fprintln(os.Stderr, name+": GPUNODE_FIX_ROOT not set")
		return 2
	}
	if err := fixStub(root, name, args); err != nil {
		fmt.Fprintf(os.Stderr, "%s (stand-in): %v\n", name, err)
		return 1
	}
	return 0
}

func fixStub(root, name string, args []string) error {
	at := func(p string) string { return filepath.Join(root, p) }
	switch name {
	case "gpunode":
		// Other layers' fixes ('gpunode irq apply'); their effect is
		// tested by those layers (internal/irq), here only the command.
		if strings.Join(args, " ") != "irq apply" {
			return fmt.Errorf("unexpected gpunode command %q", args)
		}
		return nil
	case "uname":
		if len(args) != 1 || args[0] != "-r" {
			return fmt.Errorf("want -r, got %q", args)
		}
		b, err := os.ReadFile(at("/proc/sys/kernel/osrelease"))
		if err != nil {
			b = []byte("6.8.0-49-generic\n")
		}
		fmt.Print(string(b))
		return nil
	case "swapoff":
		if len(args) != 1 || args[0] != "-a" {
			return fmt.Errorf("want -a, got %q", args)
		}
		return os.WriteFile(at("/proc/swaps"), []byte("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"), 0o644)
	case "systemctl":
		if len(args) == 1 && args[0] == "daemon-reexec" {
			return nil
		}
		if len(args) == 3 && args[0] == "disable" && args[1] == "--now" {
			// Stop the unit's processes and drop its enablement link.
			unit := strings.TrimSuffix(args[2], ".service")
			os.Remove(at("/etc/systemd/system/multi-user.target.wants/" + unit + ".service"))
			comms, _ := filepath.Glob(at("/proc/[0-9]*/comm"))
			for _, c := range comms {
				if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == unit {
					if err := os.RemoveAll(filepath.Dir(c)); err != nil {
						return err
					}
				}
			}
			return nil
		}
		return fmt.Errorf("unexpected arguments %q", args)
	case "tuned-adm":
		switch {
		case len(args) == 1 && args[0] == "off":
			return os.WriteFile(at("/etc/tuned/active_profile"), []byte("\n"), 0o644)
		case len(args) == 2 && args[0] == "profile":
			if _, err := os.Stat(at("/etc/tuned/" + args[1] + "/tuned.conf")); err != nil {
				return err
			}
			return os.WriteFile(at("/etc/tuned/active_profile"), []byte(args[1]+"\n"), 0o644)
		}
		return fmt.Errorf("unexpected arguments %q", args)
	case "powerprofilesctl":
		if len(args) != 2 || args[0] != "set" {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		return os.WriteFile(at("/var/lib/power-profiles-daemon/state.ini"), []byte("[State]\nProfile="+args[1]+"\n"), 0o644)
	case "update-grub":
		if len(args) != 0 {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		if _, err := os.Stat(at(grubFile)); err != nil {
			return err
		}
		return nil
	case "kernel-install":
		if len(args) != 3 || args[0] != "add" || !strings.HasPrefix(args[2], "/boot/vmlinuz-") {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		_, err := os.Stat(at(fileKernelCmd))
		return err
	case "grubby":
		// grubby --update-kernel=ALL --args='a=b c': every BLS entry's
		// options, and /etc/kernel/cmdline when present.
		if len(args) != 2 || args[0] != "--update-kernel=ALL" || !strings.HasPrefix(args[1], "--args=") {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		var params [][2]string
		for _, w := range splitCmdline(strings.TrimPrefix(args[1], "--args=")) {
			k, v, _ := strings.Cut(w, "=")
			params = append(params, [2]string{k, v})
		}
		ents, err := filepath.Glob(at(blsDir + "/*.conf"))
		if err != nil || len(ents) == 0 {
			return fmt.Errorf("no BLS entries: %v", err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(e)
			if err != nil {
				return err
			}
			nb, err := editBLSEntry(b, params)
			if err != nil {
				return err
			}
			if err := os.WriteFile(e, nb, 0o644); err != nil {
				return err
			}
		}
		if b, err := os.ReadFile(at(fileKernelCmd)); err == nil {
			return os.WriteFile(at(fileKernelCmd), []byte(setParams(strings.TrimSpace(string(b)), params)+"\n"), 0o644)
		}
		return nil
	case "setpci":
		// setpci -s BDF ECAP_ACS+0x6.w=VALUE
		if len(args) != 3 || args[0] != "-s" || !strings.HasPrefix(args[2], "ECAP_ACS+0x6.w=") {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(args[2], "ECAP_ACS+0x6.w="), 16, 16)
		if err != nil {
			return err
		}
		p := at("/sys/bus/pci/devices/" + args[1] + "/config")
		cfg, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		off := pciExtCapStart
		for i := 0; i < 256 && off >= pciExtCapStart && off+8 <= len(cfg); i++ {
			hdr := binary.LittleEndian.Uint32(cfg[off:])
			if hdr&0xffff == acsCapID {
				binary.LittleEndian.PutUint16(cfg[off+6:], uint16(v))
				return os.WriteFile(p, cfg, 0o644)
			}
			if hdr == 0 {
				break
			}
			off = int(hdr >> 20 & 0xffc)
		}
		return fmt.Errorf("%s: no ACS capability", args[1])
	case "mount":
		// mount -o remount,size=50% /dev/shm
		if len(args) != 3 || args[0] != "-o" || args[2] != "/dev/shm" {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		size, ok := strings.CutPrefix(args[1], "remount,size=")
		if !ok {
			return fmt.Errorf("unexpected options %q", args[1])
		}
		b, err := os.ReadFile(at("/proc/mounts"))
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			f := strings.Fields(l)
			if len(f) >= 4 && f[1] == "/dev/shm" {
				f[3] += ",size=" + size
				lines[i] = strings.Join(f, " ")
			}
		}
		return os.WriteFile(at("/proc/mounts"), []byte(strings.Join(lines, "\n")), 0o644)
	}
	return fmt.Errorf("no stand-in for %s", name)
}
