package ctk

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/gpunode/gpunode/internal/container"
	"github.com/gpunode/gpunode/internal/testhost"
)

// Where gpunode's CDI spec validation (internal/container ParseCDISpec,
// its own rules over CDI's specs-go and pkg/parser) and the CDI library's
// (pkg/cdi ReadSpec: what a CDI-enabled runtime's cache runs on every spec
// file) are known to say different things. Accept/reject never differs.
//
//   - pkg/cdi v1.1.2 can panic on a null device node or mount
//     ("deviceNodes: [null]"): specs-go's ValidateVersion, which it runs
//     first, reads them (unless it has decided before reaching them).
//     gpunode rejects the spec: the first rule it breaks, often "invalid
//     (nil) device node", the message CDI's edit rules have for it.
//   - A document that is empty of a spec ("null", "---"): CDI says "failed
//     to parse CDI Spec <path>, no Spec data", gpunode "empty spec".
//   - Prefixes: CDI writes "invalid CDI Spec: failed add device "d": invalid
//     device "d": <rule>", gpunode "device "d": <rule>" (and "kind <k>: ",
//     "containerEdits: " where CDI has none). The rule's own text, and a
//     decoder error whole, are the same; the test checks that CDI's text
//     with its prefixes cut is the end of gpunode's.
const (
	diffNullEntry = "null device node or mount: pkg/cdi panics"
	diffNoSpec    = "no spec in the document: other words"
)

var (
	lineRE = regexp.MustCompile(`line (\d+)`)
	quoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)
)

// cdiFixtures: the fixture hosts' specs, the seeds and crashers of
// internal/container's FuzzParseCDISpec, and the specs in the CDI module's
// own README and tutorial.
func cdiFixtures(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	names, _ := testhost.Names()
	for _, n := range names {
		for _, pat := range []string{"/etc/cdi/*", "/var/run/cdi/*"} {
			files, _ := filepath.Glob(filepath.Join(dir, n, pat))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err == nil {
					out[strings.TrimPrefix(f, dir)] = string(b)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no CDI spec among the fixture hosts")
	}
	fuzzDir := filepath.Join(filepath.Dir(dir), "..", "internal", "container", "testdata", "fuzz", "FuzzParseCDISpec")
	files, _ := filepath.Glob(filepath.Join(fuzzDir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a one-value fuzz corpus file", f)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out["fuzz/"+filepath.Base(f)] = s
	}
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "tags.cncf.io/container-device-interface").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	docs := 0
	for _, md := range []string{"README.md", "TUTORIAL.md", "SPEC.md"} {
		b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(mod)), md))
		if err != nil {
			t.Fatal(err)
		}
		for i, spec := range specsInMarkdown(string(b)) {
			out[fmt.Sprintf("cdi/%s#%d", md, i)] = spec
			docs++
		}
	}
	if docs < 3 {
		t.Fatalf("%d specs found in the CDI module's documents, want at least 3", docs)
	}
	return out
}

// specsInMarkdown returns each fenced block that mentions cdiVersion: the
// body of its here-document where it has one ("cat > x.json <<EOF"), else
// the block, indentation removed.
func specsInMarkdown(md string) []string {
	heredoc := regexp.MustCompile(`<<\s*'?(\w+)'?\s*$`)
	var out []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
			j++
		}
		block := lines[i+1 : min(j, len(lines))]
		i = j
		if !strings.Contains(strings.Join(block, "\n"), "cdiVersion") {
			continue
		}
		body := block
		for k, l := range block {
			if m := heredoc.FindStringSubmatch(l); m != nil {
				end := k + 1
				for end < len(block) && strings.TrimSpace(block[end]) != m[1] {
					end++
				}
				body = block[k+1 : end]
				break
			}
		}
		indent := -1
		for _, l := range body {
			if strings.TrimSpace(l) != "" {
				if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
					indent = n
				}
			}
		}
		var b strings.Builder
		for _, l := range body {
			if len(l) >= indent && indent > 0 {
				l = l[indent:]
			}
			b.WriteString(l + "\n")
		}
		out = append(out, b.String())
	}
	return out
}

// cdiGen draws specs: most fields valid, each one wrong now and then (a
// bad value, a null entry, an unknown field, a wrong type), written as
// YAML or JSON, and sometimes cut or edited as text.
type cdiGen struct {
	r *rand.Rand
	// faulty: this spec may break rules (about half do); the others
	// break none, so that both answers are well represented.
	faulty bool
}

// p is true one time in n.
func (g *cdiGen) p(n int) bool { return g.r.IntN(n) == 0 }

// bad is true one time in n in a faulty spec, never in another.
func (g *cdiGen) bad(n int) bool { return g.faulty && g.p(n) }

func (g *cdiGen) node() any {
	if g.bad(40) {
		return nil
	}
	n := map[string]any{"path": pick(g.r, "/dev/nvidia0", "/dev/nvidiactl", "/dev/dri/card1")}
	if g.bad(30) {
		n["path"] = ""
	}
	if g.p(3) {
		n["hostPath"] = pick(g.r, "/dev/nvidia1", "/vendor/dev/card1")
	}
	if g.p(2) {
		n["type"] = pick(g.r, "c", "b", "u", "p", "c", "")
		if g.bad(20) {
			n["type"] = pick(g.r, "x", "C", "cb")
		}
	}
	if g.p(2) {
		n["major"], n["minor"] = pick(g.r, 0, 1, 195, 511), pick(g.r, 0, 1, 255)
		if g.bad(20) {
			n["minor"] = -1
		}
		if g.bad(40) {
			n["major"] = "x"
		}
	}
	if g.p(2) {
		n["permissions"] = pick(g.r, "rw", "rwm", "r", "none", "mwr")
		if g.bad(20) {
			n["permissions"] = pick(g.r, "rx", "None", " rw")
		}
	}
	if g.p(3) {
		n["fileMode"], n["uid"], n["gid"] = pick(g.r, 384, 438, 8630), pick(g.r, 0, 1000), pick(g.r, 0, 44)
	}
	if g.bad(60) {
		n["bogus"] = true
	}
	return n
}

func (g *cdiGen) hook() any {
	if g.bad(40) {
		return nil
	}
	h := map[string]any{"hookName": pick(g.r, "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"),
		"path": "/usr/bin/nvidia-cdi-hook"}
	if g.bad(20) {
		h["hookName"] = pick(g.r, "", "preStart", "create-container")
	}
	if g.bad(20) {
		delete(h, "path")
	}
	if g.p(2) {
		h["args"] = []string{"nvidia-cdi-hook", "update-ldcache"}
	}
	if g.p(3) {
		h["env"] = []string{pick(g.r, "NVIDIA_CTK_DEBUG=false", "A=")}
		if g.bad(3) {
			h["env"] = []string{pick(g.r, "=x", "NOEQ")}
		}
	}
	if g.p(4) {
		h["timeout"] = pick(g.r, 1, 30)
	}
	return h
}

func (g *cdiGen) mount() any {
	if g.bad(40) {
		return nil
	}
	m := map[string]any{"hostPath": "/usr/lib/libcuda.so.1", "containerPath": "/usr/lib/libcuda.so.1"}
	if g.bad(25) {
		delete(m, pick(g.r, "hostPath", "containerPath"))
	}
	if g.p(2) {
		m["options"] = []string{"ro", "nosuid", "nodev", "bind"}
	}
	if g.p(4) {
		m["type"] = pick(g.r, "bind", "tmpfs")
	}
	return m
}

func (g *cdiGen) edits(device bool) map[string]any {
	e := map[string]any{}
	if g.p(2) {
		e["env"] = []string{"NVIDIA_VISIBLE_DEVICES=void"}
		if g.bad(15) {
			e["env"] = []string{"A=1", pick(g.r, "=1", "B", "")}
		}
	}
	list := func(key string, n int, item func() any) {
		if n > 0 {
			xs := make([]any, n)
			for i := range xs {
				xs[i] = item()
			}
			e[key] = xs
		}
	}
	list("deviceNodes", g.r.IntN(3), g.node)
	if g.p(2) {
		list("hooks", g.r.IntN(3), g.hook)
	}
	if g.p(2) {
		list("mounts", g.r.IntN(3), g.mount)
	}
	if g.p(8) {
		rdt := map[string]any{"closID": pick(g.r, "", "/", "clos1", strings.Repeat("c", 4095))}
		if g.bad(3) {
			rdt["closID"] = pick(g.r, ".", "..", "a/b", "a\nb", strings.Repeat("c", 4096))
		}
		if g.p(2) {
			rdt["schemata"] = []string{"L3:0=ff"}
		}
		if g.p(3) {
			rdt["enableMonitoring"] = true
		}
		e["intelRdt"] = rdt
	}
	if g.p(8) {
		i := 0
		list("netDevices", 1+g.r.IntN(3), func() any {
			i++
			if g.bad(30) {
				return nil
			}
			d := map[string]any{}
			if !g.bad(15) {
				d["hostInterfaceName"] = fmt.Sprintf("eth%d", i)
				if g.faulty {
					d["hostInterfaceName"] = pick(g.r, "eth0", "eth1", "ib0")
				}
			}
			if !g.bad(15) {
				d["name"] = fmt.Sprintf("net%d", i)
				if g.faulty {
					d["name"] = pick(g.r, "net0", "net1", "net2")
				}
			}
			return d
		})
	}
	if g.p(10) {
		e["additionalGids"] = []int{pick(g.r, 0, 44, 1000)}
	}
	if g.bad(80) {
		e["devices"] = 1
	}
	if device && len(e) == 0 && !g.bad(10) {
		e["env"] = []string{"X=1"}
	}
	return e
}

func (g *cdiGen) spec() map[string]any {
	g.faulty = g.p(2)
	s := map[string]any{
		"cdiVersion": "1.1.0",
		"kind":       pick(g.r, "nvidia.com/gpu", "vendor.com/device", "example.com/net", "tutorial.cdi.cncf.io/sensor", "a.b/c-d_e"),
	}
	switch {
	case g.bad(25):
		s["cdiVersion"] = pick(g.r, "", "v1.0.0", "2.0.0", "1.0", "0.2.0", "0.1.0")
	case g.bad(2):
		s["cdiVersion"] = pick(g.r, "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0")
	}
	if g.bad(25) {
		s["kind"] = pick(g.r, "nvidia.com/", "/gpu", "gpu", "bad_vendor.com/gpu", "-v.com/c", "v.com/c/d", "v.com/c.d", "v.com/c:d", "x/y")
	}
	if g.p(8) {
		s["annotations"] = map[string]any{pick(g.r, "a", "vendor.com/x", "bad key", "a/b/c"): "v"}
	}
	if g.p(2) {
		s["containerEdits"] = g.edits(false)
	}
	var devs []any
	names := []string{"0", "1", "gpu0", "all", "MIG-1a2b3c4d-0003-5e6f-8a9b-000000000003", "0:1", "dev.1", "dev-2", "dev_3"}
	n := 1 + g.r.IntN(3)
	if g.bad(15) {
		n = 0
	}
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i := range n {
		d := map[string]any{"name": names[i], "containerEdits": g.edits(true)}
		if g.faulty {
			d["name"] = pick(g.r, names...) // may be a name twice
		}
		if g.bad(25) {
			d["name"] = pick(g.r, "", "a b", "-x", "x-", "_x", "x/y", "x=y")
		}
		if g.p(10) {
			d["annotations"] = map[string]any{pick(g.r, "k", "bad key/x/y"): "v"}
		}
		if g.bad(60) {
			d["bogus"] = 1
		}
		devs = append(devs, d)
	}
	if devs != nil || !g.bad(10) {
		s["devices"] = devs
	}
	if g.bad(80) {
		s["version"] = "0.5.0"
	}
	return s
}

// text renders a spec as YAML or JSON, then now and then edits the text:
// cut short, a byte dropped, a byte put in, a line repeated.
func (g *cdiGen) text() (string, error) {
	s := g.spec()
	var b []byte
	var err error
	if g.p(3) {
		b, err = json.MarshalIndent(s, "", "  ")
	} else {
		b, err = yaml.Marshal(s)
		if g.p(4) {
			b = append([]byte("---\n"), b...)
		}
	}
	if err != nil || len(b) == 0 || !g.bad(12) {
		return string(b), err
	}
	i := g.r.IntN(len(b))
	switch g.r.IntN(4) {
	case 0:
		b = b[:i]
	case 1:
		b = append(b[:i:i], b[i+1:]...)
	case 2:
		b = append(b[:i:i], append([]byte{pick[byte](g.r, ':', '-', '[', '{', '"', '\'', '\t', '#', '&', '*', '!', '|', '>', '\n', ' ')}, b[i:]...)...)
	default:
		lines := strings.SplitAfter(string(b), "\n")
		k := g.r.IntN(len(lines))
		lines = append(lines[:k+1], lines[k:]...)
		return strings.Join(lines, ""), nil
	}
	return string(b), nil
}

// readSpec runs pkg/cdi's loader on the file, a panic taken as a
// rejection (see diffNullEntry).
func readSpec(path string) (s *cdiapi.Spec, err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			s, err, panicked = nil, fmt.Errorf("panic: %v", p), true
		}
	}()
	s, err = cdiapi.ReadSpec(path, 0)
	return s, err, false
}

// cdiCore cuts the prefixes pkg/cdi puts before a rule's own message.
func cdiCore(msg, path string) string {
	msg = strings.TrimPrefix(msg, fmt.Sprintf("failed to parse CDI Spec %q: ", path))
	msg = strings.TrimPrefix(msg, "invalid CDI Spec: ")
	for _, pre := range []string{"failed add device ", "invalid device "} {
		if rest, ok := strings.CutPrefix(msg, pre); ok {
			if q, err := strconv.QuotedPrefix(rest); err == nil && strings.HasPrefix(rest[len(q):], ": ") {
				msg = rest[len(q)+2:]
			}
		}
	}
	return msg
}

func TestCDISpecValidation(t *testing.T) {
	corpus := cdiFixtures(t)
	fixtures := len(corpus)
	g := &cdiGen{r: rand.New(rand.NewPCG(29, 5))}
	for i := 0; i < 2**cases; i++ {
		s, err := g.text()
		if err != nil {
			t.Fatal(err)
		}
		corpus[fmt.Sprintf("gen%d", i)] = s
	}
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	sort.Strings(names)
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	accepted, rejected, sameText := 0, 0, 0
	reasons := map[string]int{}
	diffs := map[string]int{}
	for _, name := range names {
		text := corpus[name]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ours, oerr := container.ParseCDISpec(path, []byte(text))
		theirs, terr, panicked := readSpec(path)
		if (oerr == nil) != (terr == nil) {
			t.Errorf("%s: gpunode %v, pkg/cdi %v\n%s", name, oerr, terr, text)
			continue
		}
		if oerr != nil {
			rejected++
			var pe *container.ParseError
			if !errors.As(oerr, &pe) || pe.File != path {
				t.Errorf("%s: %v is not a ParseError for %s", name, oerr, path)
				continue
			}
			core := cdiCore(terr.Error(), path)
			reasons[quoted.ReplaceAllString(strings.SplitN(core, ":", 2)[0], "…")]++
			switch {
			case panicked:
				diffs[diffNullEntry]++
				// Rejected (any rule may come first: CDI
				// panics before it checks names).
				t.Logf("%s: pkg/cdi %v; gpunode %s", name, terr, pe.Reason)
			case core == fmt.Sprintf("failed to parse CDI Spec %q, no Spec data", path):
				diffs[diffNoSpec]++
				if pe.Reason != "empty spec" {
					t.Errorf("%s: pkg/cdi %q, gpunode %q", name, core, pe.Reason)
				}
			case !strings.HasSuffix(pe.Reason, core):
				t.Errorf("%s: message differs\n  pkg/cdi: %s\n  gpunode: %s\n%s", name, terr, pe.Reason, text)
			default:
				sameText++
			}
			if m := lineRE.FindStringSubmatch(terr.Error()); m != nil && strconv.Itoa(pe.Line) != m[1] {
				t.Errorf("%s: pkg/cdi names line %s, gpunode %d (%v)", name, m[1], pe.Line, oerr)
			}
			continue
		}
		accepted++
		if ours.Kind != theirs.Kind || ours.Version != theirs.Version || len(ours.Devices) != len(theirs.Devices) {
			t.Errorf("%s: gpunode %s %s %d devices, pkg/cdi %s %s %d", name, ours.Kind, ours.Version, len(ours.Devices), theirs.Kind, theirs.Version, len(theirs.Devices))
			continue
		}
		var common []string
		for _, n := range theirs.ContainerEdits.DeviceNodes {
			common = append(common, cmp.Or(n.HostPath, n.Path))
		}
		for i, d := range theirs.Devices {
			want := append([]string(nil), common...)
			for _, n := range theirs.GetDevice(d.Name).ContainerEdits.DeviceNodes {
				want = append(want, cmp.Or(n.HostPath, n.Path))
			}
			got := ours.Devices[i]
			if got.Name != d.Name || strings.Join(got.Nodes, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: device %d: gpunode %q %q, pkg/cdi %q %q", name, i, got.Name, got.Nodes, d.Name, want)
			}
		}
	}
	t.Logf("%d specs (%d fixtures and documents, %d generated): %d accepted by both, %d rejected by both, %d of those with CDI's message at the end of gpunode's; known differences in wording: %v",
		len(corpus), fixtures, len(corpus)-fixtures, accepted, rejected, sameText, diffs)
	t.Logf("rejections by CDI's reason: %v", reasons)
	// A corpus that is all one answer proves little.
	if accepted < len(corpus)/5 || rejected < len(corpus)/5 {
		t.Errorf("corpus too one-sided: %d accepted, %d rejected of %d", accepted, rejected, len(corpus))
	}
	if diffs[diffNullEntry] == 0 {
		t.Error("no spec with a null device node or mount: the generator lost a case")
	}
}
