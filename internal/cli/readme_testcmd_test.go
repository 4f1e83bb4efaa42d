package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMETestCommand: the README's test command (Quick start) runs every
// conformance module (each with its run.sh through run.sh, the others with
// go test), and its table of kubelet parity cases names every test file of
// conformance/kubelet, so a new parity file cannot go undocumented.
func TestREADMETestCommand(t *testing.T) {
	sec := readmeSection(t, "## Quick start")
	cmd := regexp.MustCompile("(?m)^go test \\./\\.\\.\\. && .*$").FindString(sec)
	if cmd == "" {
		t.Fatal("Quick start has no complete test command (a line starting 'go test ./... && ')")
	}
	loop := regexp.MustCompile(`for m in ([a-z ]+); do conformance/\$m/run\.sh; done`).FindStringSubmatch(cmd)
	inLoop := map[string]bool{}
	if loop != nil {
		for _, m := range strings.Fields(loop[1]) {
			inLoop[m] = true
		}
	}
	mods, err := os.ReadDir("../../conformance")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		dir := filepath.Join("../../conformance", m.Name())
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			continue
		}
		_, hasRun := os.Stat(filepath.Join(dir, "run.sh"))
		switch {
		case hasRun == nil && !inLoop[m.Name()] && !strings.Contains(cmd, "conformance/"+m.Name()+"/run.sh"):
			t.Errorf("the test command does not run conformance/%s/run.sh", m.Name())
		case hasRun != nil && !strings.Contains(cmd, "cd conformance/"+m.Name()+" && go test ./..."):
			t.Errorf("the test command does not run conformance/%s (cd conformance/%s && go test ./...)", m.Name(), m.Name())
		}
	}
	var files []string
	err = filepath.WalkDir("../../conformance/kubelet", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel("../../conformance/kubelet", p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Helpers shared by the parity files need no row of their own.
	shared := map[string]bool{"admit_common_test.go": true, "admit_bench_test.go": true, "bench_test.go": true}
	for _, f := range files {
		if !shared[f] && !strings.Contains(sec, "`"+f+"`") {
			t.Errorf("the kubelet parity table does not name conformance/kubelet/%s", f)
		}
	}
	if !strings.Contains(sec, "Run time") {
		t.Error("Quick start does not state the conformance modules' run time")
	}
}
