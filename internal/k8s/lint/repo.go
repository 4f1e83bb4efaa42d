package lint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SkippedFile is a file of a walked directory that holds no Kubernetes
// objects (a Helm chart's Chart.yaml, values and templates), reported with
// one line instead of failing the lint.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// RuleNoObjects is the finding when the inputs hold no object lint checks
// (an empty file or directory, only kinds it does not know): a warning, so that --fail-on warning (the
// default) fails a lint that checked nothing.
const RuleNoObjects = "input.no-objects"

// NoObjectsFinding is RuleNoObjects' finding for paths.
func NoObjectsFinding(paths []string) Finding {
	return Finding{Rule: RuleNoObjects, Severity: SeverityWarning, Object: "no objects", File: strings.Join(paths, ", "), Item: -1,
		Message: fmt.Sprintf("no Kubernetes objects found in %s (none of a kind lint checks)", strings.Join(paths, ", ")),
		Fix:     "give the manifests' files or directories with -f (a Helm chart: helm template CHART | gpunode k8s lint -f -)",
		Section: "-"}
}

// isChartDir reports whether dir is a Helm chart (holds Chart.yaml).
func isChartDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// chartSkips lists the files of the chart at dir, each with why it is not
// linted as it is (at most MaxFiles).
func chartSkips(dir string) ([]SkippedFile, error) {
	var out []SkippedFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if len(out) >= MaxFiles {
			return fmt.Errorf("%s: more than %d files", dir, MaxFiles)
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		base := filepath.Base(path)
		reason := "a file of the Helm chart " + dir
		switch {
		case rel == "Chart.yaml":
			reason = "Helm chart metadata, not a Kubernetes object"
		case rel == "Chart.lock":
			reason = "Helm chart lock file, not a Kubernetes object"
		case strings.HasPrefix(base, "values") && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".json")) && filepath.Dir(rel) == ".":
			reason = "Helm chart values, not a Kubernetes object"
		case strings.HasPrefix(rel, "templates"+string(filepath.Separator)):
			reason = "Helm template: lint the rendered chart (helm template " + dir + " | gpunode k8s lint -f -)"
		}
		out = append(out, SkippedFile{File: path, Reason: reason})
		return nil
	})
	return out, err
}

// SourcesSkipping expands paths (files, directories walked recursively for
// .yaml, .yml and .json files, "-" for stdin) into file names, in order. A
// file named explicitly may be a pipe (-f <(helm template ...)); in
// directories only regular files are read. It also returns the files of
// walked directories that hold no Kubernetes objects (Helm charts found
// inside a directory), skipped with one line each; a chart directory named
// explicitly is skipped the same way.
func SourcesSkipping(paths []string) ([]string, []SkippedFile, error) {
	var out []string
	var skipped []SkippedFile
	for _, p := range paths {
		if p == "-" {
			out = append(out, "-")
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if len(found)+len(out)+len(skipped) > MaxFiles {
				return fmt.Errorf("%s: more than %d files", p, MaxFiles)
			}
			if d.IsDir() {
				if isChartDir(path) {
					s, err := chartSkips(path)
					if err != nil {
						return err
					}
					skipped = append(skipped, s...)
					return fs.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				// only regular files (or links to them): a FIFO named
				// x.yaml in a directory would block the read
				if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
					found = append(found, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, skipped, nil
}
