package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/gpunode/gpunode/internal/userfile"
)

// ModulePath is gpunode's Go module.
const ModulePath = "github.com/gpunode/gpunode"

// checkoutRoot is the gpunode checkout dir lies in (the directory whose
// go.mod declares ModulePath and which holds cmd/gpunode-full), "" when
// none. The lookup is of gpunode's own source, not of the host under
// --root, so it reads the real filesystem. At most 64 levels up.
func checkoutRoot(dir string) string {
	for i := 0; i < 64 && dir != ""; i++ {
		if b, err := userfile.Read(filepath.Join(dir, "go.mod"), 1<<20); err == nil {
			module := ""
			for n, line := range strings.Split(string(b), "\n") {
				if n >= 50 {
					break
				}
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					module = strings.Trim(strings.TrimSpace(m), `"`)
					break
				}
			}
			if module == ModulePath {
				if fi, err := os.Stat(filepath.Join(dir, "cmd", CompanionName)); err == nil && fi.IsDir() {
					return dir
				}
			}
			if module != "" {
				return "" // another module: its checkout, not gpunode's
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// goRunCompanion is how a forwarded command runs from a checkout without an
// installed companion (`go run ./cmd/gpunode k8s ...`): `go run
// CHECKOUT/cmd/gpunode-full ARGS` (Go caches the built companion, so only
// the first run compiles it). ok is false outside a checkout or without a
// go command on $PATH.
func (a *App) goRunCompanion() (goPath string, argv []string, ok bool) {
	argv, ok = a.goRunCommand(CompanionName)
	if !ok {
		return "", nil, false
	}
	return argv[0], append(argv, a.Args...), true
}

// goRunCommand is `go run CHECKOUT/cmd/NAME` (go an absolute path), when
// the working directory lies in a gpunode checkout that has cmd/NAME and a
// go command is on $PATH.
func (a *App) goRunCommand(name string) ([]string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, false
	}
	root := checkoutRoot(wd)
	if root == "" {
		return nil, false
	}
	main := filepath.Join(root, "cmd", name)
	if fi, err := os.Stat(main); err != nil || !fi.IsDir() {
		return nil, false
	}
	for _, dir := range filepath.SplitList(a.getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, "go"); isExecutable(p) {
			return []string{p, "run", main}, true
		}
	}
	return nil, false
}
