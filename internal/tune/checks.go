package tune

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/sysfmt"
	"github.com/gpunode/gpunode/internal/topo"
)

// checkKnob is a read-only check: the host passes or it does not. Profile
// values: "check" (drift when it fails) or "report" (never drift).
type checkKnob struct {
	exact
	run   func(h *Host) (good bool, current, detail string, err error)
	fixes []string
	// fixFor, when set, computes the fixes from the host (the failing
	// devices) instead of fixes.
	fixFor func(h *Host) []string
}

func (k checkKnob) read(_ context.Context, h *Host) (observation, error) {
	good, cur, detail, err := k.run(h)
	if err != nil {
		return observation{}, err
	}
	return observation{Current: cur, Check: true, Good: good, Detail: detail}, nil
}
func (checkKnob) validate(v string) error {
	return spec{kind: valChoice, choices: []string{"check"}}.validate(v)
}
func (checkKnob) equal(string, string) bool { return false }
func (k checkKnob) fix(h *Host, _ string) []string {
	if k.fixFor != nil {
		return k.fixFor(h)
	}
	return k.fixes
}
func (k checkKnob) changes(*Host, observation, string) ([]change, persist, error) {
	return nil, persist{manual: k.fixes}, nil
}

// manualKnob has a desired state gpunode does not change itself (a service,
// a mount): apply prints the commands.
type manualKnob struct {
	exact
	spec spec
	get  func(h *Host) (string, string, error)
	cmds func(want string) []string
}

func (k manualKnob) read(_ context.Context, h *Host) (observation, error) {
	cur, detail, err := k.get(h)
	if err != nil {
		return observation{}, err
	}
	return observation{Current: cur, Detail: detail}, nil
}
func (k manualKnob) validate(v string) error        { return k.spec.validate(v) }
func (k manualKnob) fix(_ *Host, w string) []string { return k.cmds(w) }
func (k manualKnob) changes(_ *Host, o observation, w string) ([]change, persist, error) {
	if o.Current == w {
		return nil, persist{}, nil
	}
	return nil, persist{manual: k.cmds(w)}, nil
}

// shmKnob: /dev/shm must hold at least the given share of memory (NCCL and
// DataLoader workers put their buffers there; containers default to 64 MiB).
type shmKnob struct{ exact }

func (shmKnob) size(h *Host) (uint64, uint64, error) {
	fstype, opts, err := h.mountOptions("/dev/shm")
	if err != nil {
		return 0, 0, err
	}
	if fstype != "tmpfs" {
		return 0, 0, absentf("/dev/shm is %s, not tmpfs", fstype)
	}
	mem, err := h.MemTotal()
	if err != nil {
		return 0, 0, err
	}
	s, ok := opts["size"]
	if !ok {
		return mem / 2, mem, nil // tmpfs default
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/mounts: /dev/shm size=%q: %w", s, err)
		}
		return mem * n / 100, mem, nil
	}
	// /proc/mounts prints size in k (size=65536k).
	b, err := sysfmt.ParseBytes(s)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/mounts: /dev/shm size=%q: %w", s, err)
	}
	return b, mem, nil
}

func (k shmKnob) read(_ context.Context, h *Host) (observation, error) {
	size, mem, err := k.size(h)
	if err != nil {
		return observation{}, err
	}
	return observation{Current: fmt.Sprintf("%d%%", size*100/mem), CurrentBytes: check.Bytes(size),
		Detail: fmt.Sprintf("%d of %d bytes of memory", size, mem)}, nil
}
func (shmKnob) toBytes(h *Host, v string) (uint64, bool) { return shareOfMemory(h, v) }
func (shmKnob) minimum()                                 {}
func (shmKnob) validate(v string) error {
	p, ok := strings.CutSuffix(v, "%")
	if !ok {
		return fmt.Errorf("%q: want a share of memory like 50%%", v)
	}
	return spec{kind: valInt, min: 1, max: 100}.validate(p)
}
func (shmKnob) equal(c, w string) bool {
	ci, err1 := strconv.Atoi(strings.TrimSuffix(c, "%"))
	wi, err2 := strconv.Atoi(strings.TrimSuffix(w, "%"))
	return err1 == nil && err2 == nil && ci >= wi
}
func (shmKnob) fix(_ *Host, w string) []string {
	return []string{"mount -o remount,size=" + w + " /dev/shm",
		"# persist: tmpfs /dev/shm tmpfs defaults,size=" + w + " 0 0 in /etc/fstab; containers: --shm-size or an emptyDir medium: Memory"}
}
func (k shmKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	if k.equal(o.Current, w) {
		return nil, persist{}, nil
	}
	return nil, persist{manual: k.fix(h, w)}, nil
}

// processRunning reports whether a process whose comm is name runs.
func processRunning(h *Host, name string) (bool, error) {
	ents, err := h.FS.ReadDirNames("/proc")
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if e[0] < '0' || e[0] > '9' {
			continue
		}
		if c, err := h.FS.ReadString("/proc/" + e + "/comm"); err == nil && c == name {
			return true, nil
		}
	}
	return false, nil
}

func irqbalanceState(h *Host) (string, string, error) {
	on, err := processRunning(h, "irqbalance")
	if err != nil {
		return "", "", err
	}
	detail := ""
	if b, err := h.FS.ReadFile("/etc/default/irqbalance"); err == nil {
		vars := parseShellVars(b, map[string]string{})
		if v := vars["IRQBALANCE_BANNED_CPULIST"]; v != "" {
			detail = "IRQBALANCE_BANNED_CPULIST=" + v
		} else if v := vars["IRQBALANCE_BANNED_CPUS"]; v != "" {
			detail = "IRQBALANCE_BANNED_CPUS=" + v + " (deprecated hex mask)"
		}
	}
	if on {
		return "running", detail, nil
	}
	return "stopped", detail, nil
}

// ---- topology checks ----

func needTopo(h *Host) (*topo.Topology, error) {
	if h.Topo == nil {
		return nil, fmt.Errorf("topology discovery failed: %w", h.TopoErr)
	}
	return h.Topo, nil
}

func pcieDevices(t *topo.Topology) []topo.PCIDevice {
	var out []topo.PCIDevice
	out = append(out, t.GPUs...)
	out = append(out, t.NICs...)
	out = append(out, t.NVMe...)
	return out
}

// GPULoad is what the GPU backend reported for one GPU at one moment: its
// utilisation and the PCIe link generation it ran at then. The caller
// reads the backend (tune reads no GPU driver) and sets Host.GPULoad.
type GPULoad struct {
	// BDF is the GPU's PCI address in sysfs form ("0000:18:00.0").
	BDF string
	// UtilizationPct is the GPU utilisation over the driver's last sample
	// period (nvidia-smi utilization.gpu); negative when not reported.
	UtilizationPct int
	// LinkGen and MaxLinkGen are the PCIe generation now and at most
	// (pcie.link.gen.current / .max); 0 when not reported.
	LinkGen, MaxLinkGen int
}

// BusyPct is the GPU utilisation from which pcie.link judges a link's
// speed as under load: a GPU that busy runs in its top performance state,
// where the driver keeps the link at its maximum generation.
const BusyPct = 50

func genString(g int) string {
	if r := topo.GenGTs(g); r > 0 {
		return fmt.Sprintf("Gen%d (%g GT/s)", g, r)
	}
	return fmt.Sprintf("Gen%d", g)
}

// busySlow reports whether GPU d, busy by the backend's reading, runs its
// link below its maximum speed, and says so; the backend's own generations
// (the same reading as the utilisation) are preferred to sysfs's.
func busySlow(d topo.PCIDevice, l GPULoad) (string, bool) {
	if l.LinkGen > 0 && l.MaxLinkGen > 0 {
		if l.LinkGen >= l.MaxLinkGen {
			return "", false
		}
		return fmt.Sprintf("%s (%s) at %s while %d%% busy (GPU backend), capable of %s: the link stays slow under load",
			d.Name, d.BDF, genString(l.LinkGen), l.UtilizationPct, genString(l.MaxLinkGen)), true
	}
	cur, top := d.LinkSpeed.GTs, d.MaxLinkSpeed.GTs
	if cur <= 0 || top <= 0 || cur >= top {
		return "", false
	}
	return fmt.Sprintf("%s (%s) at %g GT/s while %d%% busy (GPU backend), capable of %g GT/s: the link stays slow under load",
		d.Name, d.BDF, cur, l.UtilizationPct, top), true
}

// checkPCIeLinks: every GPU, NIC and NVMe link runs at its capability. A
// link below its maximum speed is idle power saving, unless the GPU
// backend reports that GPU busy (Host.GPULoad, BusyPct) at that moment.
func checkPCIeLinks(h *Host) (bool, string, string, error) {
	t, err := needTopo(h)
	if err != nil {
		return false, "", "", err
	}
	devs := pcieDevices(t)
	load := map[string]GPULoad{}
	for _, l := range h.GPULoad {
		load[l.BDF] = l
	}
	known := 0
	var bad, slow []string
	for _, d := range devs {
		if d.LinkSpeed.Text == "" && d.LinkWidth == 0 {
			continue
		}
		known++
		cur, top := d.LinkSpeed.GTs, d.MaxLinkSpeed.GTs
		switch {
		case d.LinkWidth > 0 && d.MaxLinkWidth > 0 && d.LinkWidth < d.MaxLinkWidth:
			// Links keep their width when idle: a narrow link is a fault.
			bad = append(bad, fmt.Sprintf("%s (%s) trained x%d, capable of x%d", d.Name, d.BDF, d.LinkWidth, d.MaxLinkWidth))
		case upstreamCaps(h, d) > 0 && top > 0 && upstreamCaps(h, d) < top:
			bad = append(bad, fmt.Sprintf("%s (%s) capable of %s but its upstream port tops out at %g GT/s (slot, riser or BIOS PCIe speed setting)",
				d.Name, d.BDF, strings.TrimSuffix(d.MaxLinkSpeed.Text, " PCIe"), upstreamCaps(h, d)))
		case load[d.BDF].UtilizationPct >= BusyPct && load[d.BDF].BDF != "":
			// Busy now: the speed it runs at is its speed under load.
			if msg, ok := busySlow(d, load[d.BDF]); ok {
				bad = append(bad, msg)
			}
		case cur > 0 && top > 0 && cur < top:
			// Speed drops when idle (ASPM / GPU power saving): only a
			// speed that stays low under load is a fault.
			busy := ""
			if l, ok := load[d.BDF]; ok && l.UtilizationPct >= 0 {
				busy = fmt.Sprintf(" (%d%% busy)", l.UtilizationPct)
			}
			slow = append(slow, fmt.Sprintf("%s (%s) at %s now%s, capable of %s", d.Name, d.BDF,
				strings.TrimSuffix(d.LinkSpeed.Text, " PCIe"), busy, strings.TrimSuffix(d.MaxLinkSpeed.Text, " PCIe")))
		}
	}
	if known == 0 {
		return false, "", "", absentf("no GPU, NIC or NVMe link information")
	}
	note := ""
	if len(slow) > 0 {
		note = fmt.Sprintf("%d links below their maximum speed now, which idle devices do to save power (not drift): %s; "+
			"a GPU the backend reports at least %d%% busy is judged at the speed it runs then; "+
			"to check under load, run a job and read nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max --format=csv "+
			"(NICs, NVMe: cat /sys/bus/pci/devices/BDF/current_link_speed while traffic flows); a link still below its maximum then is a fault",
			len(slow), clipList(slow, 4), BusyPct)
	}
	if len(bad) > 0 {
		return false, fmt.Sprintf("%d of %d links below capability", len(bad), known), joinDetail(clipList(bad, 6), note), nil
	}
	if len(slow) > 0 {
		return true, fmt.Sprintf("%d links at full width, %d below max speed now", known, len(slow)), note, nil
	}
	return true, fmt.Sprintf("%d links at full width and maximum speed", known), note, nil
}

// upstreamCaps is the maximum link speed (GT/s) of the port above d (the
// bridge before it on its PCIe path); 0 when unknown.
func upstreamCaps(h *Host, d topo.PCIDevice) float64 {
	if len(d.PCIePath) < 2 {
		return 0
	}
	up := d.PCIePath[len(d.PCIePath)-2]
	if strings.HasPrefix(up, "pci") {
		return 0 // the root complex itself
	}
	s, err := h.FS.ReadString("/sys/bus/pci/devices/" + up + "/max_link_speed")
	if err != nil {
		return 0
	}
	return topo.ParsePCIeSpeed(s).GTs
}

// ACS control bits that force peer-to-peer traffic up to the root complex.
const (
	acsCapID          = 0x000d
	acsReqRedirect    = 1 << 2
	acsCompRedirect   = 1 << 3
	acsUpstreamFwd    = 1 << 4
	acsRedirectAny    = acsReqRedirect | acsCompRedirect | acsUpstreamFwd
	pciExtCapStart    = 0x100
	pciConfigExtended = 4096
)

// acsControl finds the ACS extended capability in a PCI config space and
// returns its control register. ok is false when the device has none.
func acsControl(cfg []byte) (ctrl uint16, ok bool, err error) {
	if len(cfg) < pciConfigExtended {
		return 0, false, errShortConfig
	}
	off := pciExtCapStart
	for i := 0; i < 256 && off >= pciExtCapStart && off+8 <= len(cfg); i++ {
		hdr := binary.LittleEndian.Uint32(cfg[off:])
		if hdr == 0 || hdr == 0xffffffff {
			return 0, false, nil
		}
		if hdr&0xffff == acsCapID {
			return binary.LittleEndian.Uint16(cfg[off+6:]), true, nil
		}
		off = int(hdr >> 20 & 0xffc)
	}
	return 0, false, nil
}

var errShortConfig = errors.New("config space shorter than 4096 bytes")

// acsPorts calls fn, once each, for every PCIe switch port between a GPU or
// NIC and its root port whose config space reads and parses: its address,
// whether it has an ACS capability, and the ACS control register. The root
// port itself is skipped: ACS there isolates whole switches, which is
// wanted. It returns the number of ports read and of bridges. The config
// spaces are read once per Host (scanACS): the check and its fix share
// them. h.Topo is set (needTopo).
func acsPorts(h *Host, fn func(br string, hasACS bool, ctrl uint16)) (read, bridges int) {
	if h.acs == nil {
		h.acs = scanACS(h.Topo, h)
	}
	for _, p := range h.acs.ports {
		fn(p.br, p.hasACS, p.ctrl)
	}
	return len(h.acs.ports), h.acs.bridges
}

// acsScan is what acsPorts read: the check and its fix share it, so each
// bridge's config space is read once per Host.
type acsScan struct {
	ports   []acsPort // the bridges whose config space was read
	bridges int       // every bridge on a GPU's or NIC's path
}

type acsPort struct {
	br     string
	hasACS bool
	ctrl   uint16
}

func scanACS(t *topo.Topology, h *Host) *acsScan {
	out := &acsScan{}
	seen := map[string]bool{}
	for _, d := range append(append([]topo.PCIDevice{}, t.GPUs...), t.NICs...) {
		if len(d.PCIePath) < 3 {
			continue
		}
		// PCIePath: root complex, bridges..., device.
		for _, br := range d.PCIePath[2 : len(d.PCIePath)-1] {
			if seen[br] {
				continue
			}
			seen[br] = true
			out.bridges++
			cfg, err := h.FS.ReadFile("/sys/bus/pci/devices/" + br + "/config")
			if err != nil {
				continue
			}
			ctrl, ok, err := acsControl(cfg)
			if err != nil {
				continue
			}
			out.ports = append(out.ports, acsPort{br: br, hasACS: ok, ctrl: ctrl})
		}
	}
	return out
}

// checkACS: no PCIe bridge between a GPU or NIC and its root port redirects
// peer-to-peer requests to the root complex (ACS P2P redirect), which would
// send GPUDirect P2P/RDMA traffic through the CPU.
func checkACS(h *Host) (bool, string, string, error) {
	if _, err := needTopo(h); err != nil {
		return false, "", "", err
	}
	withACS := 0
	var bad []string
	read, ports := acsPorts(h, func(br string, hasACS bool, ctrl uint16) {
		if !hasACS {
			return
		}
		withACS++
		if ctrl&acsRedirectAny != 0 {
			bad = append(bad, fmt.Sprintf("%s (ACSCtl %#04x)", br, ctrl))
		}
	})
	if ports == 0 {
		// Nothing between the GPUs/NICs and their root ports can redirect
		// peer-to-peer traffic.
		return true, "no PCIe switch ports between GPUs/NICs and their root ports", "", nil
	}
	if read == 0 {
		return false, "", "", absentf("the config space of %d PCIe switch ports is not readable (the extended config space needs root)", ports)
	}
	if len(bad) > 0 {
		return false, fmt.Sprintf("P2P redirect on %d of %d switch ports", len(bad), withACS), clipList(bad, 4), nil
	}
	return true, fmt.Sprintf("no P2P redirect on %d switch ports", read), "", nil
}

// isNotExist is errors.Is(err, fs.ErrNotExist).
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// clipList joins at most n items and counts the rest.
func clipList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:n], "; ") + fmt.Sprintf("; ... %d more", len(items)-n)
}
