package lint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RuleNoObjects is the finding when the inputs hold no object lint checks
// (an empty file or directory, only kinds it does not know): a warning, so that --fail-on warning (the
// default) fails a lint that checked nothing.
const RuleNoObjects = "input.no-objects"

// NoObjectsFinding is RuleNoObjects' finding for paths.
func NoObjectsFinding(paths []string) Finding {
	return Finding{Rule: RuleNoObjects, Severity: SeverityWarning, Object: "no objects", File: strings.Join(paths, ", "), Item: -1,
		Message: fmt.Sprintf("no Kubernetes objects found in %s (none of a kind lint checks)", strings.Join(paths, ", ")),
		Fix:     "give the manifests' files or directories (or Helm chart directories) with -f",
		Section: "-"}
}

// isChartDir reports whether dir is a Helm chart (holds Chart.yaml): it is
// rendered (internal/k8s/helmchart), not read as manifests.
func isChartDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// Sources expands paths (files, directories walked recursively for .yaml,
// .yml and .json files, "-" for stdin) into file names, in order. A file
// named explicitly may be a pipe (-f <(helm template ...)); in directories
// only regular files are read. Helm charts (directories with a Chart.yaml,
// named or found in a walk) are returned apart, to be rendered: their
// Chart.yaml, values and templates are not read as manifests.
func Sources(paths []string) (files, charts []string, err error) {
	for _, p := range paths {
		if p == "-" {
			files = append(files, "-")
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if len(found)+len(files)+len(charts) > MaxFiles {
				return fmt.Errorf("%s: more than %d files", p, MaxFiles)
			}
			if d.IsDir() {
				if isChartDir(path) {
					charts = append(charts, path)
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
		files = append(files, found...)
	}
	return files, charts, nil
}
