package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpunode/gpunode/internal/testhost"
	"github.com/gpunode/gpunode/internal/tune/tunetest"
)

// shared holds stocked, read-only fixture trees built once per test binary:
// copying a 10,000-file fixture per test is too slow on a loaded machine.
var shared struct {
	mu    sync.Mutex
	dir   string
	hosts map[string]string
}

func TestMain(m *testing.M) {
	// The test binary doubles as the stand-ins of fix commands
	// (fixstub_test.go).
	if os.Getenv("GPUNODE_FIX_STUB") != "" {
		os.Exit(runFixStub(filepath.Base(os.Args[0]), os.Args[1:]))
	}
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedHost returns a stocked copy of fixture host name that tests must not
// modify (golden audits, benchmarks).
func sharedHost(t testing.TB, name string) string {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if p, ok := shared.hosts[name]; ok {
		return p
	}
	if shared.dir == "" {
		d, err := os.MkdirTemp(testhost.TmpfsDir(), "gpunode-tune-hosts-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir, shared.hosts = d, map[string]string{}
	}
	src, err := testhost.HostsDir()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(shared.dir, name)
	if err := testhost.CopyTree(filepath.Join(src, name), dst); err != nil {
		t.Fatal(fmt.Errorf("copy %s: %w", name, err))
	}
	if err := tunetest.Overlay(dst, tunetest.Options{Stock: name == "vm-2vcpu", Process: name == "dgx-h100"}); err != nil {
		t.Fatal(err)
	}
	shared.hosts[name] = dst
	return dst
}
