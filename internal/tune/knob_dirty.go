package tune

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/journal"
	"github.com/gpunode/gpunode/internal/sysfmt"
)

// dirtyKnob is the pair vm.dirty_ratio/vm.dirty_bytes (or the background
// pair): the kernel uses one of them and zeroes the other when either is
// written. Values are "20%" (ratio) or a byte count; "auto" picks bytes from
// the machine's memory size.
type dirtyKnob struct {
	exact
	background bool
}

func (k dirtyKnob) keys() (ratio, bytes string) {
	if k.background {
		return "vm.dirty_background_ratio", "vm.dirty_background_bytes"
	}
	return "vm.dirty_ratio", "vm.dirty_bytes"
}

// parseDirty parses "20%" (ratio) or "34359738368", "32G", "32GiB" (bytes).
func parseDirty(v string) (n uint64, ratio bool, err error) {
	if r, ok := strings.CutSuffix(v, "%"); ok {
		x, err := strconv.ParseUint(r, 10, 64)
		if err != nil || x > 100 {
			return 0, false, fmt.Errorf("%q: a ratio is 0%%..100%%", v)
		}
		return x, true, nil
	}
	b, err := sysfmt.ParseBytes(v)
	if err != nil {
		return 0, false, fmt.Errorf("%q: want a percentage (20%%), a byte size (32G) or auto", v)
	}
	if b < 8192 {
		return 0, false, fmt.Errorf("%q: the kernel ignores dirty byte limits under two pages", v)
	}
	return b, false, nil
}

func dirtyString(ratioV, bytesV string) string {
	if bytesV != "" && bytesV != "0" {
		return bytesV
	}
	return ratioV + "%"
}

func (k dirtyKnob) read(_ context.Context, h *Host) (observation, error) {
	rk, bk := k.keys()
	r, err := h.readKernel(sysctlPath(rk))
	if err != nil {
		return observation{}, err
	}
	b, err := h.readKernel(sysctlPath(bk))
	if err != nil {
		return observation{}, err
	}
	o := observation{Current: dirtyString(r, b), HasBoot: true}
	boot := h.sysctlBoot()
	rs, rok := boot[rk]
	bs, bok := boot[bk]
	switch {
	case bok && (!rok || bs.order > rs.order) && bs.value != "0":
		o.Boot, o.Detail = bs.value, "boot value from "+bs.source
	case rok:
		o.Boot, o.Detail = rs.value+"%", "boot value from "+rs.source
	}
	return o, nil
}

// toBytes converts a byte limit, or a ratio through MemTotal. The kernel
// applies the ratio to dirtyable memory (free plus reclaimable page
// cache), which is less than MemTotal: for a ratio the bytes are the most
// the limit can be.
func (k dirtyKnob) toBytes(h *Host, v string) (uint64, bool) {
	if _, ok := strings.CutSuffix(v, "%"); ok {
		return shareOfMemory(h, v)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
func (k dirtyKnob) validate(v string) error {
	if v == "auto" {
		return nil
	}
	_, _, err := parseDirty(v)
	return err
}

// autoDirty chooses the dirty limits from memory size: ratios on machines
// up to 64 GiB (the chapter's 20%/10%), else byte limits of 1/64 of memory
// capped at 32 GiB (8 GiB background), the chapter's numbers for big nodes:
// 20% of 2 TiB would let 400 GiB of dirty pages pile up before writers block.
func autoDirty(mem uint64, background bool) string {
	if mem <= 64<<30 {
		if background {
			return "10%"
		}
		return "20%"
	}
	b := min(mem/64, uint64(32)<<30)
	if background {
		b /= 4
	}
	return strconv.FormatUint(b, 10)
}

func (k dirtyKnob) resolve(h *Host, v string) (string, error) {
	if v == "auto" {
		mem, err := h.MemTotal()
		if err != nil {
			return "", fmt.Errorf("auto needs the memory size: %w", err)
		}
		return autoDirty(mem, k.background), nil
	}
	n, ratio, err := parseDirty(v)
	if err != nil {
		return "", err
	}
	if ratio {
		return strconv.FormatUint(n, 10) + "%", nil
	}
	return strconv.FormatUint(n, 10), nil
}
func (k dirtyKnob) fix(_ *Host, w string) []string {
	rk, bk := k.keys()
	key, val := bk, w
	if r, ok := strings.CutSuffix(w, "%"); ok {
		key, val = rk, r
	}
	return []string{fixEcho(sysctlPath(key), val), fixWrite(fileSysctl)}
}

// KindDirty is the journal step kind of a vm.dirty_* change (see
// revertDirty).
const KindDirty = "tune.dirty"

func (k dirtyKnob) changes(h *Host, o observation, w string) ([]change, persist, error) {
	rk, bk := k.keys()
	rp, bp := sysctlPath(rk), sysctlPath(bk)
	key, val := bk, w
	if r, ok := strings.CutSuffix(w, "%"); ok {
		key, val = rk, r
	}
	p := persist{sysctl: [][2]string{{key, val}}}
	if o.Current == w {
		return nil, p, nil
	}
	rRaw, err := h.FS.ReadFile(rp)
	if err != nil {
		return nil, p, err
	}
	bRaw, err := h.FS.ReadFile(bp)
	if err != nil {
		return nil, p, err
	}
	step := journal.Step{Kind: KindDirty, ID: key, Path: sysctlPath(key), Original: o.Current, New: w,
		Data: map[string]string{"ratioPath": rp, "bytesPath": bp, "ratioRaw": string(rRaw), "bytesRaw": string(bRaw)}}
	apply := func(context.Context) error {
		if err := h.FS.WriteString(sysctlPath(key), val); err != nil {
			return err
		}
		// The kernel zeroes the other file of the pair; a captured tree
		// has plain files, so do it by hand there.
		other := bp
		if key == bk {
			other = rp
		}
		if !h.FS.IsKernelFile(other) {
			return h.FS.WriteString(other, "0\n")
		}
		return nil
	}
	return []change{{Desc: fmt.Sprintf("sysctl -w %s=%s", key, val), Step: step, Apply: apply}}, p, nil
}

// revertDirty puts a vm.dirty_* pair back. On a kernel, writing the original
// ratio (or bytes) makes the kernel zero the other file; a write of 0 to a
// *_bytes file is silently ignored (proc_doulongvec_minmax skips values
// under dirty_bytes_min, two pages), so a ratio is restored through the
// ratio file - written twice when unchanged, since dirty_ratio_handler only
// zeroes the bytes value when the ratio changes. In a captured tree both
// files get their exact bytes back.
func revertDirty(_ context.Context, fsys *hostfs.FS, s journal.Step) error {
	rp, bp := s.Data["ratioPath"], s.Data["bytesPath"]
	if rp == "" || bp == "" {
		return errors.New("tune.dirty step without ratioPath/bytesPath")
	}
	// Write only what differs: a change that failed (or never happened)
	// left the files as they were, and one of them may refuse writes.
	same := func(p, raw string) bool {
		b, err := fsys.ReadFile(p)
		return err == nil && string(b) == raw
	}
	rSame, bSame := same(rp, s.Data["ratioRaw"]), same(bp, s.Data["bytesRaw"])
	if rSame && bSame {
		return nil
	}
	if !fsys.IsKernelFile(rp) {
		if !rSame {
			if err := fsys.WriteString(rp, s.Data["ratioRaw"]); err != nil {
				return err
			}
		}
		if !bSame {
			return fsys.WriteString(bp, s.Data["bytesRaw"])
		}
		return nil
	}
	if r, ok := strings.CutSuffix(s.Original, "%"); ok {
		if cur, _ := fsys.ReadString(bp); cur != "0" {
			n, _ := strconv.Atoi(r)
			other := n + 1
			if n >= 100 {
				other = n - 1
			}
			if err := fsys.WriteString(rp, strconv.Itoa(other)); err != nil {
				return err
			}
		}
		return fsys.WriteString(rp, r)
	}
	return fsys.WriteString(bp, s.Original)
}
