package helmexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Timeouts of one render: an installed helper, and `go run` from a
// checkout, whose first run compiles the helper and the Helm SDK (minutes
// on a small machine).
const (
	DefaultTimeout = 2 * time.Minute
	GoRunTimeout   = 15 * time.Minute
)

// stderrTail bounds what is kept of the helper's stderr (for the error of a
// helper that crashed).
const stderrTail = 16 << 10

// Run renders req's charts with the helper run as argv (env its
// environment; nil inherits this process's). The helper runs in its own
// process group, which ctx's end (SIGINT/SIGTERM in gpunode) or the
// timeout kills whole. A chart or values file the helper refuses is an
// *InputError; anything else (no answer, a crash, an answer over the
// bound) is a failure.
func Run(ctx context.Context, argv, env []string, timeout time.Duration, req Request) ([]Chart, error) {
	if len(argv) == 0 {
		return nil, errors.New(HelperName + ": no command")
	}
	if req.MaxBytes <= 0 {
		return nil, errors.New(HelperName + ": request without maxBytes")
	}
	req.SchemaVersion = SchemaVersion
	body, err := json.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("%s: encode the request: %w", HelperName, err)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(body)
	// JSON escapes a byte in at most 6; the rest is framing.
	out := &boundedBuffer{max: 6*req.MaxBytes + 1<<20}
	errOut := &tailBuffer{max: stderrTail}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = 2 * time.Second
	ownProcessGroup(cmd)
	runErr := cmd.Run()
	name := strings.Join(argv, " ")
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	case tctx.Err() != nil:
		return nil, fmt.Errorf("%s: no answer within %s: %w", name, timeout, tctx.Err())
	case out.over:
		return nil, fmt.Errorf("%s: answer larger than %d bytes", name, out.max)
	}
	var resp Response
	if err := json.Unmarshal(out.buf.Bytes(), &resp); err != nil || resp.SchemaVersion != SchemaVersion {
		if runErr == nil {
			runErr = fmt.Errorf("not a %s response", SchemaVersion)
		}
		return nil, fmt.Errorf("%s: %w%s", name, runErr, errOut.String())
	}
	if resp.Error != nil {
		if resp.Error.Input {
			return nil, &InputError{Message: resp.Error.Message}
		}
		return nil, fmt.Errorf("%s: %s", name, resp.Error.Message)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w%s", name, runErr, errOut.String())
	}
	if len(resp.Charts) != len(req.Charts) {
		return nil, fmt.Errorf("%s: %d charts rendered, %d asked", name, len(resp.Charts), len(req.Charts))
	}
	return resp.Charts, nil
}

// boundedBuffer keeps at most max bytes; a write past it fails (the helper
// then dies of a broken pipe) and sets over.
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if int64(b.buf.Len())+int64(len(p)) > b.max {
		b.over = true
		return 0, errors.New("answer too large")
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// String is the tail as the end of an error message ("" when empty).
func (b *tailBuffer) String() string {
	s := strings.TrimSpace(string(b.buf))
	if s == "" {
		return ""
	}
	return ": " + s
}
