package tune

import (
	"fmt"
	"path"
	"strings"
)

// Boot loaders.
//
// Kernel parameters are configured where the host's boot loader reads
// them; gpunode detects which one that is:
//
//	grub          Debian/Ubuntu GRUB: GRUB_CMDLINE_LINUX(_DEFAULT) of
//	              /etc/default/grub and /etc/default/grub.d/*.cfg (sourced in
//	              name order after the main file: later files win);
//	              regenerated with update-grub
//	grub-bls      RHEL, Rocky, Alma, Fedora: Boot Loader Specification
//	              entries /boot/loader/entries/*.conf whose "options" line
//	              is the command line (RHEL 8's $kernelopts comes from
//	              /boot/grub2/grubenv); changed with
//	              grubby --update-kernel=ALL --args=...; /etc/kernel/cmdline
//	              seeds the entries of kernels installed later
//	systemd-boot  /etc/kernel/cmdline (one line), read by kernel-install
//	              when it writes a kernel's entry; a loader.conf in the ESP
//	              and no /etc/default/grub
//
// Detection: systemd-boot when a loader.conf exists under /boot/efi/loader,
// /efi/loader or /boot/loader and /etc/default/grub does not; grub-bls when
// BLS entries exist and /etc/default/grub does not say
// GRUB_ENABLE_BLSCFG=false; grub when /etc/default/grub exists; otherwise
// none (boot parameters are then reported without a boot configuration).

// Boot loader kinds.
const (
	BootGRUB        = "grub"
	BootGRUBBLS     = "grub-bls"
	BootSystemdBoot = "systemd-boot"
)

const (
	blsDir           = "/boot/loader/entries"
	fileKernelCmd    = "/etc/kernel/cmdline"
	fileGrubEnv      = "/boot/grub2/grubenv"
	fileGrubDropins  = "/etc/default/grub.d"
	maxBootEntries   = 256
	kernelInstallCmd = `kernel-install add "$(uname -r)" "/boot/vmlinuz-$(uname -r)"`
)

var loaderConfs = []string{"/boot/efi/loader/loader.conf", "/efi/loader/loader.conf", "/boot/loader/loader.conf"}

// bootConfig is the kernel command line the boot loader is configured
// with.
type bootConfig struct {
	// kind is one of the Boot* constants, "" when none was found.
	kind   string
	exists bool
	// params configured; last occurrence wins.
	params map[string]string
	// source of each parameter (the file that sets it last).
	source map[string]string
	// files gpunode edits on apply (grub: the file whose
	// GRUB_CMDLINE_LINUX wins; grub-bls: every entry, and
	// /etc/kernel/cmdline when present; systemd-boot: /etc/kernel/cmdline).
	files []string
	// note explains a limitation found while reading.
	note string
}

// BootLoader returns the kind of boot loader the host uses ("" when none
// was found).
func (h *Host) BootLoader() string { return h.bootConf().kind }

// bootConf detects the boot loader and reads its configured command line.
func (h *Host) bootConf() *bootConfig {
	if h.boot != nil {
		return h.boot
	}
	b := &bootConfig{params: map[string]string{}, source: map[string]string{}}
	h.boot = b
	grubText, grubErr := h.FS.ReadFile(grubFile)
	hasGrub := grubErr == nil
	blsOff := hasGrub && parseShellVars(grubText, map[string]string{})["GRUB_ENABLE_BLSCFG"] == "false"
	entries := h.blsEntries()
	switch {
	case !hasGrub && h.anyExists(loaderConfs):
		b.kind = BootSystemdBoot
		h.readKernelCmdline(b)
	case len(entries) > 0 && !blsOff:
		b.kind = BootGRUBBLS
		h.readBLS(b, entries)
	case hasGrub:
		b.kind = BootGRUB
		g := h.grubConf()
		b.exists, b.params, b.source = g.exists, g.params, g.source
		b.files = []string{g.target}
	}
	return b
}

func (h *Host) anyExists(ps []string) bool {
	for _, p := range ps {
		if h.FS.Exists(p) {
			return true
		}
	}
	return false
}

// blsEntries lists the BLS entry files, sorted.
func (h *Host) blsEntries() []string {
	names, err := h.FS.ReadDirNames(blsDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".conf") && len(out) < maxBootEntries {
			out = append(out, blsDir+"/"+n)
		}
	}
	return out
}

func (h *Host) readKernelCmdline(b *bootConfig) {
	b.files = []string{fileKernelCmd}
	s, err := h.FS.ReadString(fileKernelCmd)
	if err != nil {
		b.note = fileKernelCmd + " does not exist: kernel-install uses the running kernel's /proc/cmdline"
		return
	}
	b.exists = true
	for k, v := range parseCmdline(s) {
		b.params[k], b.source[k] = v, fileKernelCmd
	}
}

// readBLS reads the options of the entry of the running kernel (or, when
// none matches, the last entry in name order, the newest kernel).
func (h *Host) readBLS(b *bootConfig, entries []string) {
	release, _ := h.FS.ReadString("/proc/sys/kernel/osrelease")
	chosen, chosenOpts := "", ""
	for _, e := range entries {
		data, err := h.FS.ReadFile(e)
		if err != nil {
			continue
		}
		ent := parseBLS(string(data))
		b.files = append(b.files, e)
		if chosen == "" || release != "" && (ent["version"] == release || strings.HasSuffix(ent["linux"], "-"+release)) {
			chosen, chosenOpts = e, ent["options"]
		}
		if release != "" && ent["version"] == release {
			break
		}
	}
	// Every entry is edited, not only those read before the match.
	b.files = entries
	if h.FS.Exists(fileKernelCmd) {
		b.files = append(b.files, fileKernelCmd)
	}
	if chosen == "" {
		return
	}
	b.exists = true
	opts := chosenOpts
	if strings.Contains(opts, "$kernelopts") {
		env, _ := h.FS.ReadString(fileGrubEnv)
		ko := ""
		for _, l := range strings.Split(env, "\n") {
			if v, ok := strings.CutPrefix(l, "kernelopts="); ok {
				ko = v
			}
		}
		opts = strings.ReplaceAll(opts, "$kernelopts", ko)
		b.note = "options use $kernelopts from " + fileGrubEnv
	}
	for k, v := range parseCmdline(opts) {
		b.params[k], b.source[k] = v, chosen
	}
}

// parseBLS reads the key/value lines of a BLS entry.
func parseBLS(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' {
			continue
		}
		k, v, _ := strings.Cut(l, " ")
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// setParams returns cmdline with params set (replacing earlier values,
// appended in order), every other word kept.
func setParams(cmdline string, params [][2]string) string {
	drop := map[string]bool{}
	for _, kv := range params {
		drop[kv[0]] = true
	}
	var out []string
	for _, w := range splitCmdline(cmdline) {
		k, _, _ := strings.Cut(w, "=")
		if !drop[k] {
			out = append(out, w)
		}
	}
	for _, kv := range params {
		out = append(out, bootParam(kv))
	}
	return strings.Join(out, " ")
}

// editBLSEntry sets params in the options line of a BLS entry, keeping
// every other byte (grub variables like $tuned_params stay where they
// are); an entry whose options are $kernelopts is refused (RHEL 8 keeps
// the value in grubenv, which grub2-editenv owns).
func editBLSEntry(b []byte, params [][2]string) ([]byte, error) {
	lines := strings.SplitAfter(string(b), "\n")
	found := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		k, v, _ := strings.Cut(t, " ")
		if k != "options" {
			continue
		}
		if strings.Contains(v, "$kernelopts") {
			return nil, fmt.Errorf("options use $kernelopts (kept in %s); run grubby instead", fileGrubEnv)
		}
		nl := ""
		if strings.HasSuffix(l, "\n") {
			nl = "\n"
		}
		lines[i] = "options " + setParams(strings.TrimSpace(v), params) + nl
		found = true
	}
	if !found {
		if n := len(lines); n > 0 && lines[n-1] != "" && !strings.HasSuffix(lines[n-1], "\n") {
			lines[n-1] += "\n"
		}
		lines = append(lines, "options "+setParams("", params)+"\n")
	}
	return []byte(strings.Join(lines, "")), nil
}

// bootEdit is one file apply --bootloader writes.
type bootEdit struct {
	path string
	data []byte
}

// bootEdits computes the files apply --bootloader writes for params, and
// the command to run afterwards. Unchanged files are left out.
func (h *Host) bootEdits(params [][2]string) (edits []bootEdit, after string, err error) {
	b := h.bootConf()
	add := func(p string, nb, old []byte) {
		if string(nb) != string(old) {
			edits = append(edits, bootEdit{p, nb})
		}
	}
	switch b.kind {
	case BootGRUB:
		target := b.files[0]
		g, err := h.FS.ReadFile(target)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", target, err)
		}
		ng, err := editGrub(g, params)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", target, err)
		}
		add(target, ng, g)
		return edits, "update-grub && reboot   # kernel parameters take effect at boot", nil
	case BootGRUBBLS:
		for _, p := range b.files {
			old, err := h.FS.ReadFile(p)
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", p, err)
			}
			var nb []byte
			if p == fileKernelCmd {
				nb = []byte(setParams(strings.TrimSpace(string(old)), params) + "\n")
			} else if nb, err = editBLSEntry(old, params); err != nil {
				return nil, "", fmt.Errorf("%s: %w", p, err)
			}
			add(p, nb, old)
		}
		return edits, "reboot   # kernel parameters take effect at boot (the boot entries are written)", nil
	case BootSystemdBoot:
		old, _ := h.FS.ReadFile(fileKernelCmd)
		cur := strings.TrimSpace(string(old))
		if len(old) == 0 {
			cur, _ = h.FS.ReadString("/proc/cmdline")
			cur = dropBootImage(cur)
		}
		add(fileKernelCmd, []byte(setParams(cur, params)+"\n"), old)
		return edits, kernelInstallCmd + " && reboot   # kernel-install writes the entry from " + fileKernelCmd, nil
	}
	return nil, "", fmt.Errorf("no boot loader configuration found (%s, %s/*.conf, %s)", grubFile, blsDir, fileKernelCmd)
}

// dropBootImage removes the words a boot loader adds itself
// (BOOT_IMAGE=, initrd=) from a running command line.
func dropBootImage(s string) string {
	var out []string
	for _, w := range splitCmdline(s) {
		if strings.HasPrefix(w, "BOOT_IMAGE=") || strings.HasPrefix(w, "initrd=") {
			continue
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

// bootFix returns the commands that configure every kernel parameter of
// the profile (params as the command line spells them) with the host's
// boot loader: complete commands, no reboot among them (a reboot in the
// middle of a pasted fix list would cut it short).
func (h *Host) bootFix(profile string, params []string) []string {
	if len(params) == 0 {
		return nil
	}
	kv := make([][2]string, len(params))
	for i, p := range params {
		k, v, _ := strings.Cut(p, "=")
		kv[i] = [2]string{k, v}
	}
	reboot := fixNote("takes effect at the next boot: reboot, then check /proc/cmdline")
	b := h.bootConf()
	switch b.kind {
	case BootGRUB:
		target := b.files[0]
		edits, _, err := h.bootEdits(kv)
		if err != nil {
			return []string{fixNote(fmt.Sprintf("add %s to GRUB_CMDLINE_LINUX by hand (%v), then run update-grub", strings.Join(params, " "), err))}
		}
		var out []string
		if target == grubFile {
			out = append(out, fmt.Sprintf("[ -e %s ] || cp -p %s %s", fixPath(fileGrubBak), fixPath(grubFile), fixPath(fileGrubBak)))
		}
		for _, e := range edits {
			out = append(out, writeFileTemplate(e.path, e.data))
		}
		return append(out, "update-grub", reboot)
	case BootGRUBBLS:
		out := []string{"grubby --update-kernel=ALL --args=" + shellQuote(strings.Join(params, " "))}
		return append(out, reboot)
	case BootSystemdBoot:
		edits, _, _ := h.bootEdits(kv)
		var out []string
		for _, e := range edits {
			out = append(out, writeFileTemplate(e.path, e.data))
		}
		return append(out, kernelInstallCmd, reboot)
	}
	return []string{fixNote(fmt.Sprintf("no boot loader configuration found: add %s to your boot loader's kernel command line", strings.Join(params, " ")))}
}

// writeFileTemplate is the fix template writing data to p: mkdir -p and
// one printf of every line, the paths marked for rendering.
func writeFileTemplate(p string, data []byte) string {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = shellQuote(l)
		if l == "" {
			q[i] = "''"
		}
		// A line holding the template marker would be rendered as a path.
		q[i] = strings.ReplaceAll(q[i], "@{", "@'{'")
	}
	return fmt.Sprintf("mkdir -p %s && printf '%%s\\n' %s > %s", fixPath(path.Dir(p)), strings.Join(q, " "), fixPath(p))
}

// bootMechanism describes for 'tune show' where kernel parameters go.
const bootMechanism = "the boot loader gpunode detects: GRUB (" + grubFile + " or the " + fileGrubDropins + "/*.cfg drop-in whose GRUB_CMDLINE_LINUX wins; update-grub), GRUB with BLS entries (" + blsDir + "/*.conf and " + fileKernelCmd + ", as grubby --update-kernel=ALL --args does) or systemd-boot (" + fileKernelCmd + ", then kernel-install); only with --bootloader, then reboot"

// isBootFile reports whether p is a boot loader file apply edits (its
// mode is kept).
func isBootFile(p string) bool {
	return strings.HasPrefix(p, blsDir+"/") || p == fileKernelCmd || strings.HasPrefix(p, fileGrubDropins+"/")
}

// bootPlan is plan's part for kernel parameters: the boot loader files to
// write with --bootloader (journaled like every generated file, so
// rollback restores them byte for byte), or a note saying why not.
func bootPlan(h *Host, req ApplyRequest, params [][2]string, rep *PlanReport) []fileOp {
	words := make([]string, len(params))
	for i, kv := range params {
		words[i] = bootParam(kv)
	}
	list := strings.Join(words, " ") // plan lists them in rep.Boot
	edits, after, err := h.bootEdits(params)
	kind := h.BootLoader()
	switch {
	case err != nil:
		rep.Notes = append(rep.Notes, fmt.Sprintf("kernel parameters %s: %v; add them to your boot loader by hand", list, err))
		return nil
	case len(edits) == 0:
		return nil
	case !req.Bootloader:
		where := make([]string, len(edits))
		for i, e := range edits {
			where[i] = e.path
		}
		bak := ""
		if kind == BootGRUB && edits[0].path == grubFile {
			bak = fmt.Sprintf(" (a backup goes to %s)", fileGrubBak)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("kernel parameters not written: run with --bootloader to add %s to the %s configuration in %s%s, then: %s", list, kind, strings.Join(where, ", "), bak, after))
		return nil
	}
	var ops []fileOp
	for _, e := range edits {
		id := "boot"
		if e.path == grubFile {
			id = "grub"
			if !h.FS.Exists(fileGrubBak) {
				if g, err := h.FS.ReadFile(grubFile); err == nil {
					ops = append(ops, fileOp{path: fileGrubBak, data: g, id: "grub-backup"})
				}
			}
		}
		ops = append(ops, fileOp{path: e.path, data: e.data, id: id})
	}
	rep.Manual = append(rep.Manual, after)
	return ops
}
