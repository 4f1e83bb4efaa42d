package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/gpunode/gpunode/internal/journal"
)

// Boot-time overrides: a sysctl or limit that a file read after gpunode's
// own file sets to another value wins at boot (or login), whatever gpunode
// writes. Audit names the winning file and the fix comments out its line;
// apply does the same edit through the journal (overrideEdits), so that
// rollback restores the file byte for byte, or, where the file cannot be
// edited, says why and that the value does not persist.

// readAfter reports whether configuration file f is read after ours (both
// in the same sysctl.d / limits.d scheme: files apply in file-name order,
// and /etc/sysctl.conf after every sysctl.d file).
func readAfter(f, ours string) bool {
	if f == "" || f == ours {
		return false
	}
	if f == "/etc/sysctl.conf" {
		return true
	}
	if f == "/etc/security/limits.conf" {
		return false // pam_limits reads it before limits.d
	}
	return path.Base(f) > path.Base(ours)
}

// sysctlOverride returns the file that sets key at boot after gpunode's
// file, with its value, when that value differs from want.
func (h *Host) sysctlOverride(key, want string) (file, value string, ok bool) {
	s, found := h.sysctlBoot()[key]
	if !found || !readAfter(s.source, fileSysctl) || normSpace(s.value) == normSpace(want) {
		return "", "", false
	}
	return s.source, s.value, true
}

// limitsOverride is sysctlOverride for a limits.conf item ("* soft/hard").
func (h *Host) limitsOverride(item, want string) (file, value string, ok bool) {
	l, found := h.limitsBoot()[item]
	if !found || !readAfter(l.source, fileLimits) || (l.soft == want && l.hard == want) {
		return "", "", false
	}
	return l.source, "soft " + orUnset(l.soft) + ", hard " + orUnset(l.hard), true
}

// overrideFix comments out the lines of file that set key (a sysctl key,
// or a limits item of the "*" domain), keeping them for reference, in the
// file apply edits (overrideTarget): file itself or its link target, edited
// in place, or, for a vendor sysctl file, a copy of the same name in
// /etc/sysctl.d that masks it (written from the vendor file, so running
// the fix again writes the same copy). Where apply refuses the edit, the
// fix edits file in place, as the refusal note asks.
func overrideFix(h *Host, file, key string, limits bool) string {
	pat := `^[[:space:]]*` + strings.ReplaceAll(regexpQuote(key), "/", `\/`) + `[[:space:]]*=`
	if limits {
		pat = `^[[:space:]]*\*[[:space:]]+[a-z-]+[[:space:]]+` + regexpQuote(key) + `[[:space:]]`
	}
	script := "/" + pat + "/s/^/" + overrideMark + "/"
	dst, from, err := overrideTarget(h, file)
	switch {
	case err != nil:
		return fmt.Sprintf("sed -i -E '%s' %s", script, fixPath(file))
	case dst == from:
		return fmt.Sprintf("sed -i -E '%s' %s", script, fixPath(dst))
	case dst == file:
		// The masking name is a link to the vendor file: replace the
		// link, never write through it.
		return fmt.Sprintf("rm -f %s && sed -E '%s' %s > %s", fixPath(dst), script, fixPath(from), fixPath(dst))
	default:
		return fmt.Sprintf("mkdir -p %s && sed -E '%s' %s > %s", fixPath(path.Dir(dst)), script, fixPath(from), fixPath(dst))
	}
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`.+*?()|[]{}^$\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// overrideMark prefixes a line apply comments out in a file gpunode does
// not own: a line of a file that would override gpunode's, an fstab swap
// entry (the printed sed fixes use the same mark).
const overrideMark = "#gpunode# "

// override is one line of a file read after gpunode's that sets a value
// gpunode persists to another one.
type override struct {
	what string // "vm.swappiness = 0", "limits memlock unlimited"
	was  string // what the line sets: "60", "soft 65536"
}

// overrideEdits plans, for apply and plan, the edits that make the values
// gpunode persists win at boot: every line of a file read after
// gpunode's that sets one of them to another value is commented out
// (overrideMark). A file under /etc is edited in place (through a link,
// its target inside the root); a vendor sysctl file (/usr/lib/sysctl.d,
// /run/sysctl.d, ...) is masked by an edited copy of the same name in
// /etc/sysctl.d, as systemd-sysctl intends. A file that cannot be edited
// (not a regular file, hard-linked, not writable: read-only mount,
// immutable) is refused: a note names it with the reason and the value
// stays overridden. The notes say what is edited or refused.
func overrideEdits(h *Host, all persist) (ops []fileOp, notes []string) {
	// Only the values that the file winning at boot sets to another value
	// are edited: a later line that loses to the winning file is left
	// alone when the winner sets the wanted value. When the winner is
	// wrong, every wrong line read after gpunode's file is commented out,
	// so that none takes its place.
	sysctlWant := map[string]string{}
	for _, kv := range all.sysctl {
		if _, _, ok := h.sysctlOverride(kv[0], kv[1]); ok {
			sysctlWant[kv[0]] = kv[1]
		}
	}
	limitsWant := map[string]string{}
	for _, l := range all.limits {
		if fields := strings.Fields(l); len(fields) == 4 {
			if _, _, ok := h.limitsOverride(fields[2], fields[3]); ok {
				limitsWant[fields[2]] = fields[3]
			}
		}
	}
	// match reports whether a line of src overrides.
	match := func(src, line string) (override, bool) {
		if strings.HasPrefix(src, "/etc/security/") {
			return limitsOverrides(line, limitsWant)
		}
		return sysctlOverrides(line, sysctlWant)
	}
	var files []string
	if len(sysctlWant) > 0 {
		files = append(confFiles(h.FS, sysctlDirs, ".conf"), "/etc/sysctl.conf")
	}
	if len(limitsWant) > 0 {
		files = append(files, confFiles(h.FS, []string{"/etc/security/limits.d"}, ".conf")...)
	}
	done := map[string]bool{} // targets already edited (a link and its target)
	for _, src := range files {
		ours := fileSysctl
		if strings.HasPrefix(src, "/etc/security/") {
			ours = fileLimits
		}
		if !readAfter(src, ours) {
			continue
		}
		b, err := h.FS.ReadFile(src)
		if err != nil {
			continue
		}
		lines := strings.SplitAfter(string(b), "\n")
		var found []override
		for i, l := range lines {
			if o, ok := match(src, strings.TrimSuffix(l, "\n")); ok {
				found = append(found, o)
				lines[i] = overrideMark + l
			}
		}
		if len(found) == 0 {
			continue
		}
		dst, _, err := overrideTarget(h, src)
		switch {
		case err == nil && done[dst]:
			continue // a link to a file already edited
		case err != nil && done["refused: "+err.Error()]:
			continue // a link to a file already refused, for the same reason
		case err != nil:
			done["refused: "+err.Error()] = true
		}
		// One note per value (soft and hard lines together).
		var whats []string
		was := map[string][]string{}
		for _, o := range found {
			if was[o.what] == nil {
				whats = append(whats, o.what)
			}
			was[o.what] = append(was[o.what], o.was)
		}
		for _, w := range whats {
			v := strings.Join(was[w], ", ")
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: not persistent: %s sets %s and is read after %s; gpunode cannot edit it: %v; comment that line out there by hand",
					w, src, v, ours, err))
				continue
			}
			in := dst
			if dst != src {
				in = dst + " (for " + src + ")"
			}
			notes = append(notes, fmt.Sprintf("%s: %s sets %s and is read after %s, so it would win at boot: apply comments that line out in %s (prefix %q; 'gpunode tune rollback' restores the file)",
				w, src, v, ours, in, strings.TrimSpace(overrideMark)))
		}
		if err != nil {
			continue
		}
		done[dst] = true
		ops = append(ops, fileOp{path: dst, data: []byte(strings.Join(lines, "")), id: "override", keepPerm: true,
			reason: "comments out the lines read after gpunode's file that override its values"})
	}
	return ops, notes
}

// sysctlOverrides reports whether a sysctl.conf line sets one of want's
// keys to another value.
func sysctlOverrides(line string, want map[string]string) (override, bool) {
	kv := parseSysctlConfOrdered([]byte(line))
	if len(kv) != 1 {
		return override{}, false
	}
	w, ok := want[kv[0][0]]
	if !ok || normSpace(kv[0][1]) == normSpace(w) {
		return override{}, false
	}
	return override{what: kv[0][0] + " = " + w, was: kv[0][1]}, true
}

// limitsOverrides is sysctlOverrides for a limits.conf line of the "*"
// domain.
func limitsOverrides(line string, want map[string]string) (override, bool) {
	ls := parseLimits([]byte(line))
	if len(ls) != 1 || ls[0].domain != "*" {
		return override{}, false
	}
	w, ok := want[ls[0].item]
	if !ok || ls[0].value == w {
		return override{}, false
	}
	return override{what: "limits " + ls[0].item + " " + w, was: ls[0].typ + " " + ls[0].value}, true
}

// overrideTarget is the host path apply writes to make src lose: src
// itself, the target of a link (inside the root), or an /etc/sysctl.d copy
// masking a vendor file; from is the file holding src's lines (src, or
// its link target): dst, unless dst is a masking copy. The error says why
// src cannot be edited.
func overrideTarget(h *Host, src string) (dst, from string, err error) {
	fi, err := h.FS.Lstat(src)
	if err != nil {
		return "", "", err
	}
	from = src
	if fi.Mode()&fs.ModeSymlink != 0 {
		r, err := h.FS.Resolve(src)
		if err != nil {
			return "", "", fmt.Errorf("%s is a link that does not resolve inside the root: %w", src, err)
		}
		if fi, err = h.FS.Lstat(r); err != nil {
			return "", "", fmt.Errorf("%s is a link to %s: %w", src, r, err)
		}
		from = r
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("%s is not a regular file (%s)", from, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return "", "", fmt.Errorf("%s has %d hard links: replacing it would leave the other names with the old lines", from, st.Nlink)
	}
	if !strings.HasPrefix(from, "/etc/") {
		if !strings.Contains(src, "sysctl.d/") {
			return "", "", fmt.Errorf("%s is outside /etc (a vendor file a package update rewrites)", from)
		}
		// Mask the vendor file: systemd-sysctl reads /etc/sysctl.d/NAME
		// instead of any other NAME.
		dst = path.Join("/etc/sysctl.d", path.Base(src))
		if st, err := journal.Snapshot(h.FS, dst); err == nil && st.Type != journal.FileAbsent && st.Type != journal.FileSymlink {
			return "", "", fmt.Errorf("%s masks %s but is not a link to it", dst, src)
		}
		if err := h.FS.Writable(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		return dst, from, nil
	}
	if err := h.FS.Writable(from); err != nil {
		return "", "", err
	}
	return from, from, nil
}
