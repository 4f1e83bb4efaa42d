package tune

import (
	"fmt"
	"path"
	"strings"
)

// Boot-time overrides: a sysctl or limit that a file read after gpunode's
// own file sets to another value wins at boot (or login), whatever gpunode
// writes. Audit names the winning file; the fix comments out its line;
// apply says it cannot persist the value instead of claiming it did.

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

// overrideDetail explains an override for audit.
func overrideDetail(file, value, ours string) string {
	return fmt.Sprintf("overridden at boot: %s sets %s and is read after %s, so it wins whatever gpunode writes", file, value, ours)
}

// overrideFix comments out the lines of file that set key (a sysctl key,
// or a limits item of the "*" domain), keeping them for reference.
func overrideFix(file, key string, limits bool) string {
	pat := `^[[:space:]]*` + strings.ReplaceAll(regexpQuote(key), "/", `\/`) + `[[:space:]]*=`
	if limits {
		pat = `^[[:space:]]*\*[[:space:]]+[a-z-]+[[:space:]]+` + regexpQuote(key) + `[[:space:]]`
	}
	return fmt.Sprintf("sed -i -E '/%s/s/^/#gpunode# /' %s", pat, file)
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

// overrideNotes lists, for apply and plan, the values it writes that a
// later file overrides at boot: gpunode does not edit files it does not
// own, so it says so instead of claiming the value persists.
func overrideNotes(h *Host, all persist) []string {
	var out []string
	for _, kv := range all.sysctl {
		if f, v, ok := h.sysctlOverride(kv[0], kv[1]); ok {
			out = append(out, fmt.Sprintf("%s = %s: not persistent: %s sets %s and is read after %s; comment it out there: %s",
				kv[0], kv[1], f, v, fileSysctl, overrideFix(f, kv[0], false)))
		}
	}
	seen := map[string]bool{}
	for _, l := range all.limits {
		fs := strings.Fields(l) // "* soft memlock unlimited"
		if len(fs) != 4 || seen[fs[2]] {
			continue
		}
		seen[fs[2]] = true
		if f, v, ok := h.limitsOverride(fs[2], fs[3]); ok {
			out = append(out, fmt.Sprintf("limits %s %s: not persistent: %s sets %s and is read after %s; comment it out there: %s",
				fs[2], fs[3], f, v, fileLimits, overrideFix(f, fs[2], true)))
		}
	}
	return out
}
