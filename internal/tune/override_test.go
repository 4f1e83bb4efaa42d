package tune

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// TestBootOverrideNamed: /etc/sysctl.conf (read after every sysctl.d file)
// sets vm.swappiness back to 60 at boot, and a limits.d file after
// gpunode's sets memlock. Audit drifts naming the winning file, the first
// fix comments out its line, and plan says the value cannot persist (it
// suggested appending to the losing file, and apply said "changed").
func TestBootOverrideNamed(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cat := NewCatalogue()
	root, fsys := stockHost(t, "gh200")
	write := func(p, c string) { t.Helper(); writeUnder(t, root, p, c) }
	write("proc/sys/vm/swappiness", "0\n")
	write("etc/sysctl.d/90-gpunode.conf", "vm.swappiness = 0\n")
	write("etc/sysctl.conf", "# local\nvm.swappiness = 60\n")
	write("etc/security/limits.d/99-site.conf", "* soft memlock 65536\n* hard memlock 65536\n")
	p := mustLoad(t, cat, fsys, ProfileTraining)
	audit := func() *Report {
		t.Helper()
		r, err := Audit(context.Background(), newHost(t, fsys), cat, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := audit()
	sw := checkByID(r, "vm.swappiness")
	if sw.Status != StatusDrift || !strings.Contains(sw.Detail, "/etc/sysctl.conf, which is read after /etc/sysctl.d/90-gpunode.conf") {
		t.Errorf("vm.swappiness: %s %q, want drift naming /etc/sysctl.conf", sw.Status, sw.Detail)
	}
	if len(sw.Fix) == 0 || !strings.Contains(sw.Fix[0], "/etc/sysctl.conf") {
		t.Fatalf("vm.swappiness fixes %q: the first must edit /etc/sysctl.conf", sw.Fix)
	}
	ml := checkByID(r, "limits.memlock")
	if ml.Status != StatusDrift || !strings.Contains(ml.Detail, "99-site.conf (applies at the next login), which is read after") || !strings.Contains(ml.Fix[0], "99-site.conf") {
		t.Errorf("limits.memlock: %s %q %q, want drift naming 99-site.conf", ml.Status, ml.Detail, ml.Fix)
	}
	pr, err := Plan(context.Background(), newHost(t, fsys), cat, ApplyRequest{Profile: p, StateDir: "/var/lib/gpunode"})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(pr.Notes, "\n")
	if !strings.Contains(notes, "vm.swappiness = 0: /etc/sysctl.d/99-sysctl.conf sets 60") || !strings.Contains(notes, "comments that line out in /etc/sysctl.conf (for /etc/sysctl.d/99-sysctl.conf)") ||
		!strings.Contains(notes, "limits memlock unlimited: /etc/security/limits.d/99-site.conf sets soft 65536, hard 65536") {
		t.Errorf("plan notes:\n%s\nwant the two overrides and the edits", notes)
	}
	// Run the printed sed fixes against the copy: the overriding lines
	// are commented out and the verdict follows.
	for _, fix := range []string{sw.Fix[0], ml.Fix[0]} {
		cmd := strings.ReplaceAll(strings.ReplaceAll(fix, " /etc/", " "+root+"/etc/"), "@{", "")
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", cmd, err, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "etc/sysctl.conf"))
	if !strings.Contains(string(b), "#gpunode# vm.swappiness = 60") || !strings.Contains(string(b), "# local") {
		t.Errorf("sysctl.conf after the fix:\n%s", b)
	}
	r = audit()
	if c := checkByID(r, "vm.swappiness"); c.Status != StatusOK {
		t.Errorf("after the fix vm.swappiness is %s: %s", c.Status, c.Detail)
	}
}

// overrideHost is the gh200 stock host with the values training persists
// overridden at boot: /etc/sysctl.conf (through Debian's
// /etc/sysctl.d/99-sysctl.conf link) sets vm.swappiness, a vendor file
// sorting after gpunode's sets net.core.rmem_max, and a limits.d file after
// gpunode's sets memlock.
func overrideHost(t *testing.T) (string, *hostfs.FS) {
	t.Helper()
	root, fsys := stockHost(t, "gh200")
	write := func(p, c string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/sysctl.conf", "# local\nvm.swappiness = 60\nkernel.pid_max = 4194304\n", 0o640)
	write("usr/lib/sysctl.d/95-vendor.conf", "# vendor\nnet.core.rmem_max = 212992\n", 0o644)
	write("etc/security/limits.d/99-site.conf", "# site\n* soft memlock 65536\n* hard memlock 65536\n@gpu - nofile 4096\n", 0o644)
	return root, fsys
}

// TestOverrideApplyWins: apply comments out the overriding lines (in
// /etc/sysctl.conf through the link, in a masking /etc/sysctl.d copy of
// the vendor file, in limits.d), so audit says ok; a second apply changes
// nothing; rollback puts every file back byte for byte, modes and the
// link included. Before, apply wrote only gpunode's own files and noted
// that the values did not persist.
func TestOverrideApplyWins(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := overrideHost(t)
	base := baseline(t, root)
	p := mustLoad(t, cat, fsys, ProfileTraining)
	if p.Settings["net.core.rmem_max"] == "" {
		t.Fatalf("training does not set net.core.rmem_max: %v", p.Settings)
	}
	audit := func() *Report {
		t.Helper()
		r, err := Audit(ctx, newHost(t, fsys), cat, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, id := range []string{"vm.swappiness", "net.core.rmem_max", "limits.memlock"} {
		if c := checkByID(audit(), id); c.Status != StatusDrift {
			t.Fatalf("before apply %s is %s (%s), want drift", id, c.Status, c.Detail)
		}
	}
	rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
	if err != nil {
		t.Fatal(err)
	}
	var edited []string
	for _, f := range rep.Files {
		if f.Reason != "" {
			edited = append(edited, f.Action+" "+f.Path)
		}
	}
	if got, want := strings.Join(edited, ","), "create /etc/sysctl.d/95-vendor.conf,replace /etc/sysctl.conf,replace /etc/security/limits.d/99-site.conf"; got != want {
		t.Errorf("edited files %q, want %q", got, want)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("etc/sysctl.conf"); got != "# local\n#gpunode# vm.swappiness = 60\nkernel.pid_max = 4194304\n" {
		t.Errorf("sysctl.conf after apply:\n%s", got)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/sysctl.conf")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("sysctl.conf mode %v (%v), want 0640 kept", fi.Mode(), err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "etc/sysctl.d/99-sysctl.conf")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the 99-sysctl.conf link was replaced: %v %v", fi.Mode(), err)
	}
	if got := read("etc/sysctl.d/95-vendor.conf"); got != "# vendor\n#gpunode# net.core.rmem_max = 212992\n" {
		t.Errorf("masking copy of the vendor file:\n%s", got)
	}
	if got := read("usr/lib/sysctl.d/95-vendor.conf"); got != "# vendor\nnet.core.rmem_max = 212992\n" {
		t.Errorf("the vendor file was edited:\n%s", got)
	}
	if got := read("etc/security/limits.d/99-site.conf"); got != "# site\n#gpunode# * soft memlock 65536\n#gpunode# * hard memlock 65536\n@gpu - nofile 4096\n" {
		t.Errorf("99-site.conf after apply:\n%s", got)
	}
	st, err := GetStatus(ctx, newHost(t, fsys), cat, stateDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"vm.swappiness", "net.core.rmem_max", "limits.memlock"} {
		if c := checkByID(st.Audit, id); c.Status != StatusOK {
			t.Errorf("status after apply: %s is %s (%s)", id, c.Status, c.Detail)
		}
	}
	if len(st.ModifiedFiles) > 0 {
		t.Errorf("status after apply: modified %v", st.ModifiedFiles)
	}
	again, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
	if err != nil || again.Changed || again.Journal != "" {
		t.Errorf("second apply: changed %v journal %q (%v), want nothing to change", again.Changed, again.Journal, err)
	}
	if _, err := Rollback(ctx, fsys, stateDir, false); err != nil {
		t.Fatal(err)
	}
	dropJournals(t, fsys)
	assertBaseline(t, base, "rollback")
}

// TestOverrideRefused: a file that wins at boot but cannot be edited is
// refused with the reason naming it: hard-linked (replacing it would
// leave the other name with the old line), or immutable (chattr +i, where
// the test can set it). The value is not claimed to persist, the file is
// untouched and audit still says drift.
func TestOverrideRefused(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	for _, tc := range []struct{ name, want string }{
		{"hardlink", "/etc/security/limits.d/99-site.conf has 2 hard links"},
		{"immutable", "/etc/security/limits.d/99-site.conf: operation not permitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, fsys := overrideHost(t)
			site := filepath.Join(root, "etc/security/limits.d/99-site.conf")
			switch tc.name {
			case "hardlink":
				if err := os.Link(site, filepath.Join(root, "etc/security/site-limits")); err != nil {
					t.Fatal(err)
				}
			case "immutable":
				setImmutable(t, site)
			}
			before, _ := os.ReadFile(site)
			p := mustLoad(t, cat, fsys, ProfileTraining)
			rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(rep.Notes, "\n")
			if !strings.Contains(notes, "limits memlock unlimited: not persistent: /etc/security/limits.d/99-site.conf sets soft 65536, hard 65536") || !strings.Contains(notes, tc.want) {
				t.Errorf("notes:\n%s\nwant the refusal naming the file: %q", notes, tc.want)
			}
			if n := strings.Count(notes, ": not persistent: "); n != 1 {
				t.Errorf("%d refusal notes, want 1:\n%s", n, notes)
			}
			if after, _ := os.ReadFile(site); !bytes.Equal(after, before) {
				t.Errorf("refused file changed:\n%s", after)
			}
			r, err := Audit(ctx, newHost(t, fsys), cat, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c := checkByID(r, "limits.memlock"); c.Status != StatusDrift || !strings.Contains(c.Detail, "99-site.conf") {
				t.Errorf("limits.memlock after a refused edit: %s %q, want drift naming 99-site.conf", c.Status, c.Detail)
			}
			// The other overrides were still made to lose.
			if c := checkByID(r, "vm.swappiness"); c.Status != StatusOK {
				t.Errorf("vm.swappiness: %s (%s)", c.Status, c.Detail)
			}
		})
	}
}

// TestOverrideKillSweep kills 'tune apply' (a SIGKILL in a child process,
// TestKillChild) at each write-side operation on the files it edits to
// make its values win, and at a sample of the others; status + rollback
// restore the tree byte for byte every time.
func TestOverrideKillSweep(t *testing.T) {
	if os.Getenv("GPUNODE_KILL_CHILD") != "" {
		return
	}
	onTmpfs(t)
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := overrideHost(t)
	base := baseline(t, root)
	nosync := fsys.WithFaults(&hostfs.Faults{NoSync: true})
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpunode"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileTraining)
	count := countApply(t, cat, fsys, p)
	var points []int
	seen := map[int]bool{}
	for i, l := range count.Log() {
		if strings.Contains(l, "/etc/sysctl.conf") || strings.Contains(l, "95-vendor.conf") || strings.Contains(l, "99-site.conf") {
			points = append(points, i+1)
			seen[i+1] = true
		}
	}
	if len(points) == 0 {
		t.Fatalf("no write-side operation on the overriding files in:\n%s", strings.Join(count.Log(), "\n"))
	}
	for _, k := range sample(count.Count(), 4) {
		if !seen[k] {
			points = append(points, k)
		}
	}
	for _, k := range points {
		c := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
		c.Env = append(os.Environ(), "GPUNODE_KILL_CHILD="+root, "GPUNODE_KILL_AT="+strconv.Itoa(k), "GPUNODE_KILL_CMD=apply", "GPUNODE_KILL_PROFILE="+ProfileTraining)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("apply killed at %d: child ended with %v, want SIGKILL:\n%s", k, err, out.String())
		}
		what := fmt.Sprintf("apply killed at %d/%d (%s)", k, count.Count(), count.Log()[k-1])
		recoverHost(ctx, t, nosync, cat, what)
		assertBaseline(t, base, what)
		dropJournals(t, nosync)
	}
	t.Logf("SIGKILL: tune apply killed at %d points (every operation on the edited files and %d others); all byte-identical after recovery", len(points), len(points)-len(seen))
}

// TestOverrideLosingLineLeftAlone: a line read after gpunode's file that
// sets another value but loses to a file read later still (which sets the
// wanted value) does not override anything. 95-site.conf sets
// vm.swappiness 60, /etc/sysctl.conf (read last, it wins) sets 0, the
// training value; a limits.d file sets memlock 65536 and a later one
// unlimited. Plan and apply leave 95-site.conf and 95-site-limits.conf
// alone and have nothing to change. Before, every later wrong line was
// commented out, the note said it "would win at boot", and apply reported
// a change.
func TestOverrideLosingLineLeftAlone(t *testing.T) {
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := stockHost(t, "gh200")
	writeUnder(t, root, "etc/sysctl.conf", "# local\nvm.swappiness = 0\n")
	p := mustLoad(t, cat, fsys, ProfileTraining)
	if p.Settings["vm.swappiness"] != "0" || p.Settings["limits.memlock"] != "unlimited" {
		t.Fatalf("training sets vm.swappiness %q, limits.memlock %q; the test needs 0 and unlimited", p.Settings["vm.swappiness"], p.Settings["limits.memlock"])
	}
	if _, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p)); err != nil {
		t.Fatal(err)
	}
	site := map[string]string{
		"etc/sysctl.d/95-site.conf":                 "vm.swappiness = 60\n",
		"etc/security/limits.d/95-site-limits.conf": "* soft memlock 65536\n* hard memlock 65536\n",
		"etc/security/limits.d/99-site.conf":        "* - memlock unlimited\n",
	}
	for f, c := range site {
		writeUnder(t, root, f, c)
	}
	r, err := Audit(ctx, newHost(t, fsys), cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"vm.swappiness", "limits.memlock"} {
		if c := checkByID(r, id); c.Status != StatusOK {
			t.Errorf("audit %s: %s (%s), want ok: the file read last sets the wanted value", id, c.Status, c.Detail)
		}
	}
	pr, err := Plan(ctx, newHost(t, fsys), cat, ApplyRequest{Profile: p, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pr.Files {
		if f.Action != "unchanged" {
			t.Errorf("plan would %s %s (%s)", f.Action, f.Path, f.Reason)
		}
	}
	for _, n := range pr.Notes {
		if strings.Contains(n, "95-site") || strings.Contains(n, "win at boot") {
			t.Errorf("plan note %q: the losing lines override nothing", n)
		}
	}
	rep, err := Apply(ctx, newHost(t, fsys), cat, applyReq(p))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed || rep.Journal != "" {
		t.Errorf("apply: changed %v journal %q, want nothing to change", rep.Changed, rep.Journal)
	}
	for f, c := range site {
		if b, err := os.ReadFile(filepath.Join(root, f)); err != nil || string(b) != c {
			t.Errorf("%s after apply: %q (%v), want it untouched: %q", f, b, err, c)
		}
	}
}

// TestOverrideFixIsApply: the fixes audit prints for the override host do
// what apply does. The vendor file /usr/lib/sysctl.d/95-vendor.conf is
// masked by an edited copy in /etc/sysctl.d (a package update rewrites the
// vendor file), /etc/sysctl.conf is edited in place (Debian's
// 99-sysctl.conf link kept) and so is the limits.d file. Pasted in order
// (TestFixesRun's runner, twice) into one copy of the host, they leave every
// check they fix ok and nothing for plan to do, and the three edited files
// hold the bytes apply writes into another copy. Before, the vendor fix was
// 'sed -i' on the vendor file itself, which apply never touches.
func TestOverrideFixIsApply(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	ctx := context.Background()
	cat := NewCatalogue()
	fixRoot, fixFS := overrideHost(t)
	p := mustLoad(t, cat, fixFS, ProfileTraining)
	r, err := Audit(ctx, newHost(t, fixFS), cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"net.core.rmem_max": `mkdir -p /etc/sysctl.d && sed -E '/^[[:space:]]*net\.core\.rmem_max[[:space:]]*=/s/^/#gpunode# /' /usr/lib/sysctl.d/95-vendor.conf > /etc/sysctl.d/95-vendor.conf`,
		"vm.swappiness":     `sed -i -E '/^[[:space:]]*vm\.swappiness[[:space:]]*=/s/^/#gpunode# /' /etc/sysctl.conf`,
		"limits.memlock":    `sed -i -E '/^[[:space:]]*\*[[:space:]]+[a-z-]+[[:space:]]+memlock[[:space:]]/s/^/#gpunode# /' /etc/security/limits.d/99-site.conf`,
	} {
		if c := checkByID(r, id); len(c.Fix) == 0 || c.Fix[0] != want {
			t.Errorf("%s: first fix %q, want %q", id, c.Fix, want)
		}
	}
	runFixes(t, bash, fixStubDir(t), fixRoot, nil, ProfileTraining)

	applyRoot, applyFS := overrideHost(t)
	if _, err := Apply(ctx, newHost(t, applyFS), cat, applyReq(p)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etc/sysctl.d/95-vendor.conf", "etc/sysctl.conf", "etc/security/limits.d/99-site.conf", "usr/lib/sysctl.d/95-vendor.conf"} {
		fixed, err := os.ReadFile(filepath.Join(fixRoot, f))
		if err != nil {
			t.Errorf("after the fixes: %v", err)
			continue
		}
		applied, err := os.ReadFile(filepath.Join(applyRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fixed, applied) {
			t.Errorf("/%s: the fixes leave\n%s\napply writes\n%s", f, fixed, applied)
		}
	}
	if fi, err := os.Lstat(filepath.Join(fixRoot, "etc/sysctl.d/99-sysctl.conf")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the fixes replaced the 99-sysctl.conf link: %v %v", fi.Mode(), err)
	}
}

// TestOverrideFixMaskingLink: where /etc/sysctl.d/NAME is a link to the
// vendor file it names, apply replaces the link with the edited copy, and
// so does the printed fix: it removes the link before writing (writing
// through it would truncate the vendor file it reads).
func TestOverrideFixMaskingLink(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	ctx := context.Background()
	cat := NewCatalogue()
	root, fsys := overrideHost(t)
	if err := os.Symlink("/usr/lib/sysctl.d/95-vendor.conf", filepath.Join(root, "etc/sysctl.d/95-vendor.conf")); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, cat, fsys, ProfileTraining)
	h := newHost(t, fsys)
	h.FixRoot = root
	r, err := Audit(ctx, h, cat, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := checkByID(r, "net.core.rmem_max")
	q := shellQuote
	want := fmt.Sprintf(`rm -f %s && sed -E '/^[[:space:]]*net\.core\.rmem_max[[:space:]]*=/s/^/#gpunode# /' %s > %s`,
		q(root+"/etc/sysctl.d/95-vendor.conf"), q(root+"/usr/lib/sysctl.d/95-vendor.conf"), q(root+"/etc/sysctl.d/95-vendor.conf"))
	if c.Status != StatusDrift || len(c.Fix) == 0 || c.Fix[0] != want {
		t.Fatalf("net.core.rmem_max: %s, first fix %q, want %q", c.Status, c.Fix, want)
	}
	for round := 1; round <= 2; round++ {
		if out, err := exec.Command(bash, "-e", "-c", c.Fix[0]).CombinedOutput(); err != nil {
			t.Fatalf("round %d: %v %s", round, err, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "usr/lib/sysctl.d/95-vendor.conf")); string(b) != "# vendor\nnet.core.rmem_max = 212992\n" {
		t.Errorf("the vendor file after the fix: %q", b)
	}
	fi, err := os.Lstat(filepath.Join(root, "etc/sysctl.d/95-vendor.conf"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the masking name after the fix: %v %v, want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/sysctl.d/95-vendor.conf")); string(b) != "# vendor\n#gpunode# net.core.rmem_max = 212992\n" {
		t.Errorf("the masking copy after the fix: %q", b)
	}
}
