// Package helmchart renders a Helm chart directory as `helm template` does,
// with the Helm SDK's own chart loader and template engine
// (helm.sh/helm/v3 pkg/chart/loader and pkg/engine, the ones
// conformance/helm renders deploy/helm/gpunode with), so that `gpunode k8s
// lint -f CHART` lints the objects the chart makes.
//
// Values files (--helm-values, repeatable) are merged over the chart's
// values.yaml in order, later files winning key by key as `helm template
// -f A -f B` merges them. The release is named and placed as `helm
// template` does by default ("release-name" in "default").
//
// The SDK links only into the helper executable gpunode-helm
// (cmd/gpunode-helm, served through internal/k8s/helmexec), which 'k8s
// lint' runs when a chart is among its inputs; the houserules link tests
// keep it out of gpunode, gpunode-agent and gpunode-full.
package helmchart

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpunode/gpunode/internal/k8s/helmexec"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Defaults of `helm template`.
const (
	DefaultRelease   = helmexec.DefaultRelease
	DefaultNamespace = helmexec.DefaultNamespace
)

// MaxTemplates bounds the rendered files of one chart (subcharts included).
const MaxTemplates = 10000

// Values is one values file, read by the caller (through userfile): the
// protocol's own type, so that a request's values pass through as they are.
type Values = helmexec.Values

// Options name and place the release.
type Options struct {
	Release   string
	Namespace string
}

// File is one rendered template: Path is the template's path under the
// chart directory as given (dir/templates/x.yaml, dir/charts/sub/templates/
// y.yaml), Data what it renders to.
type File struct {
	Path string
	Data []byte
}

// ValuesError is a values file that is not a YAML mapping: the error names
// the file (a usage error for the caller).
type ValuesError struct {
	File string
	Err  error
}

func (e *ValuesError) Error() string {
	return fmt.Sprintf("--helm-values %s: %v", e.File, e.Err)
}

func (e *ValuesError) Unwrap() error { return e.Err }

// ParseValues reads a values file as a mapping, as helm reads one
// (chartutil.ReadValues).
func ParseValues(v Values) (map[string]any, error) {
	m, err := chartutil.ReadValues(v.Data)
	if err != nil {
		return nil, &ValuesError{File: v.File, Err: fmt.Errorf("not a YAML mapping of values: %w", err)}
	}
	if m == nil {
		return map[string]any{}, nil
	}
	return m, nil
}

// merge puts src over dst, maps merged key by key, anything else replaced
// (what `helm template -f A -f B` does with A and B).
func merge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// Render loads the chart at dir and renders its templates with the values
// files merged in order. Partials (_*.tpl), NOTES.txt and templates that
// render to nothing (blank, comments, disabled by values) are left out;
// the rest come in path order.
func Render(dir string, values []Values, opt Options) ([]File, error) {
	user, err := mergeValues(values)
	if err != nil {
		return nil, err
	}
	return render(dir, user, opt)
}

// mergeValues parses the values files and merges them in order.
func mergeValues(values []Values) (map[string]any, error) {
	user := map[string]any{}
	for _, v := range values {
		m, err := ParseValues(v)
		if err != nil {
			return nil, err
		}
		user = merge(user, m)
	}
	return user, nil
}

// render is Render with the values files merged (user is not modified:
// the SDK coalesces a copy of it).
func render(dir string, user map[string]any, opt Options) ([]File, error) {
	if opt.Release == "" {
		opt.Release = DefaultRelease
	}
	if opt.Namespace == "" {
		opt.Namespace = DefaultNamespace
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", dir, err)
	}
	rv, err := chartutil.ToRenderValues(ch, user, chartutil.ReleaseOptions{Name: opt.Release, Namespace: opt.Namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: values: %w", dir, err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("helm chart %s: %w", dir, err)
	}
	if len(out) > MaxTemplates {
		return nil, fmt.Errorf("helm chart %s: more than %d templates", dir, MaxTemplates)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var files []File
	for _, n := range names {
		base := filepath.Base(n)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || empty(out[n]) {
			continue
		}
		// "<chart name>/templates/x.yaml" -> "<dir>/templates/x.yaml"
		rel := n
		if i := strings.IndexByte(n, '/'); i >= 0 {
			rel = n[i+1:]
		}
		files = append(files, File{Path: filepath.Join(dir, filepath.FromSlash(rel)), Data: []byte(out[n])})
	}
	return files, nil
}

// empty reports whether rendered YAML holds no document (blank lines,
// comments, separators).
func empty(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if t != "" && t != "---" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// RenderRequest renders a helmexec request's charts in order, each with
// the request's values files, parsed and merged once (gpunode-helm's
// renderer).
func RenderRequest(req helmexec.Request) ([]helmexec.Chart, error) {
	user, err := mergeValues(req.Values)
	if err != nil {
		return nil, err
	}
	out := make([]helmexec.Chart, 0, len(req.Charts))
	for _, dir := range req.Charts {
		files, err := render(dir, user, Options{Release: req.Release, Namespace: req.Namespace})
		if err != nil {
			return nil, err
		}
		c := helmexec.Chart{Chart: dir, Templates: make([]helmexec.Template, 0, len(files))}
		for _, f := range files {
			c.Templates = append(c.Templates, helmexec.Template{Path: f.Path, Data: string(f.Data)})
		}
		out = append(out, c)
	}
	return out, nil
}
