//go:build linux

package helmexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunKillsTheProcessGroup: the end of the context kills the helper's
// child too (`go run` from a checkout dies without passing SIGTERM on),
// not the helper alone.
func TestRunKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	argv, env := helper(t, "spawn")
	env = append(env, envPidFile+"="+pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := make(chan int, 1)
	go func() {
		defer cancel()
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				pid <- n
				return
			}
		}
		pid <- 0
	}()
	_, err := Run(ctx, argv, env, 2*time.Minute, Request{Charts: []string{"a"}, MaxBytes: 1 << 10})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancelled context", err)
	}
	p := <-pid
	if p <= 0 {
		t.Fatal("the helper wrote no child pid")
	}
	for end := time.Now().Add(10 * time.Second); running(p); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			_ = syscall.Kill(p, syscall.SIGKILL)
			t.Fatalf("the helper's child %d outlived the cancelled render", p)
		}
	}
}

// running: pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
