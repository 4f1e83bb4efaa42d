package houserules

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module root, two levels above this package.
const repoRoot = "../.."

// provenanceMarkers match text that says a file carries upstream code. The
// patterns are assembled from pieces so that this file does not match itself.
var provenanceMarkers = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(^|[^a-z])port` + `ed (from|of|straight)`),
	regexp.MustCompile(`(?i)(^|[^a-z])(straight|literal|line-by-line) port` + `(ed)?\b`),
	regexp.MustCompile(`(?i)verba` + `tim (copy|copies|from|port)`),
	regexp.MustCompile(`(?i)copied (verbatim )?fr` + `om (kubernetes|kubelet|upstream|mig-parted|nvidia)`),
	regexp.MustCompile(`(?i)licensed under the ap` + `ache license`),
	regexp.MustCompile(`(?i)apache license,? (version )?2\.0`),
	regexp.MustCompile(`(?i)the kubern` + `etes authors`),
	regexp.MustCompile(`(?i)spdx-licen` + `se-identifier`),
	regexp.MustCompile(`(?i)copyright (\(c\) )?(\d{4}[-, ]*)+(the |nvidia|google)`),
}

// scanned reports whether a file is part of the product, test or conformance
// trees: source, scripts and the test data generated or recorded for them.
// Prose (docs, README) is scanned too, so that no file claims a port.
func scanned(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".sh", ".yaml", ".yml", ".json", ".md", ".txt", ".toml", ".c", ".h", ".py":
		return true
	}
	return filepath.Base(path) == "run" // .ci/run
}

func TestNoUpstreamProvenanceMarkers(t *testing.T) {
	files := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !scanned(path) {
			return nil
		}
		files++
		for _, hit := range markersIn(t, path) {
			rel, _ := filepath.Rel(repoRoot, path)
			t.Errorf("%s:%d says it carries upstream code (%q): write it fresh and prove equality with a conformance differential", rel, hit.line, hit.text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned only %d files under %s: the walk is broken", files, repoRoot)
	}
}

type markerHit struct {
	line int
	text string
}

func markersIn(t *testing.T, path string) []markerHit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil // binary
	}
	var hits []markerHit
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, re := range provenanceMarkers {
			if m := re.FindString(line); m != "" {
				hits = append(hits, markerHit{n, strings.TrimSpace(m)})
				break
			}
		}
	}
	return hits
}

// TestProvenanceMarkersMatch keeps the guard able to fail: each sample is a
// header or marker as upstream files and earlier ports carried them.
func TestProvenanceMarkersMatch(t *testing.T) {
	dir := t.TempDir()
	samples := []string{
		"// Code in this file is por" + "ted from Kubernetes v1.37.2",
		"Copy" + "right 2017 The Kuber" + "netes Authors.",
		"Licensed under the Apa" + "che License, Version 2.0 (the \"License\");",
		"# SPDX-" + "License-Identifier: Apache-2.0",
		"Copy" + "right (c) 2021, NVIDIA CORPORATION.  All rights reserved.",
		"// a verba" + "tim copy of upstream's table",
		"keeps a literal po" + "rt of upstream as oracle",
	}
	for i, s := range samples {
		p := filepath.Join(dir, "f.go")
		if err := os.WriteFile(p, []byte("package x\n"+s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if hits := markersIn(t, p); len(hits) != 1 || hits[0].line != 2 {
			t.Errorf("sample %d %q: hits %v, want one on line 2", i, s, hits)
		}
	}
	clean := "// Quotes kubelet's message as it prints it.\nconst quoteTooMany = \"unsupported on machines with more than %v NUMA Nodes\"\n"
	p := filepath.Join(dir, "quotes.go")
	if err := os.WriteFile(p, []byte(clean), 0o644); err != nil {
		t.Fatal(err)
	}
	if hits := markersIn(t, p); len(hits) != 0 {
		t.Errorf("a quoted message is allowed, got %v", hits)
	}
}
