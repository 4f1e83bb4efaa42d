package helmexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary is its own helper: with envMode set, TestMain serves one
// request with the behaviour named there instead of running the tests.
const envMode = "HELMEXEC_TEST_MODE"

// envPidFile names the file where the "spawn" helper writes its child's pid.
const envPidFile = "HELMEXEC_TEST_PIDFILE"

func TestMain(m *testing.M) {
	switch os.Getenv(envMode) {
	case "":
		os.Exit(m.Run())
	case "serve":
		os.Exit(Serve(os.Stdin, os.Stdout, fakeRender))
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: boom")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "spawn":
		// A helper that started a child of its own (as `go run` does),
		// which holds the stdout pipe: its pid goes to $envPidFile.
		self, err := os.Executable()
		if err != nil {
			os.Exit(3)
		}
		c := exec.Command(self)
		c.Env = append(os.Environ(), envMode+"=hang")
		c.Stdout = os.Stdout
		if c.Start() != nil || os.WriteFile(os.Getenv(envPidFile), []byte(strconv.Itoa(c.Process.Pid)), 0o600) != nil {
			os.Exit(3)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	case "flood":
		b := bytes.Repeat([]byte("x"), 1<<16)
		for i := 0; i < 1<<14; i++ {
			if _, err := os.Stdout.Write(b); err != nil {
				os.Exit(3)
			}
		}
		os.Exit(0)
	}
	os.Exit(3)
}

// fakeRender renders each chart to one template per values file (its
// data), and refuses a chart named "bad".
func fakeRender(req Request) ([]Chart, error) {
	var out []Chart
	for _, c := range req.Charts {
		if c == "bad" {
			return nil, errors.New("helm chart bad: parse error at (x/templates/a.yaml:3)")
		}
		ch := Chart{Chart: c}
		for _, v := range req.Values {
			ch.Templates = append(ch.Templates, Template{Path: c + "/templates/" + v.File, Data: string(v.Data) + " " + req.Release + "/" + req.Namespace})
		}
		out = append(out, ch)
	}
	return out, nil
}

func helper(t *testing.T, mode string) ([]string, []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self}, append(os.Environ(), envMode+"="+mode)
}

func TestRunRoundTrip(t *testing.T) {
	argv, env := helper(t, "serve")
	req := Request{Charts: []string{"a", "b"}, Values: []Values{{File: "v1.yaml", Data: []byte("k: 1\n\x00\xff")}},
		Release: "r", Namespace: "ns", MaxBytes: 1 << 20}
	got, err := Run(context.Background(), argv, env, time.Minute, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Chart != "a" || got[1].Chart != "b" || len(got[1].Templates) != 1 {
		t.Fatalf("charts %+v", got)
	}
	if tp := got[1].Templates[0]; tp.Path != "b/templates/v1.yaml" || !strings.HasPrefix(tp.Data, "k: 1\n\x00") || !strings.HasSuffix(tp.Data, " r/ns") {
		t.Fatalf("template %+v", tp)
	}
}

func TestRunInputError(t *testing.T) {
	argv, env := helper(t, "serve")
	_, err := Run(context.Background(), argv, env, time.Minute, Request{Charts: []string{"a", "bad"}, MaxBytes: 1 << 20})
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != "helm chart bad: parse error at (x/templates/a.yaml:3)" {
		t.Fatalf("err %v (%T), want the renderer's message as an InputError", err, err)
	}
	// Over MaxBytes: the input's fault too.
	_, err = Run(context.Background(), argv, env, time.Minute, Request{Charts: []string{"a"}, Values: []Values{{File: "v", Data: bytes.Repeat([]byte("y"), 100)}}, MaxBytes: 50})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "more than the 50 allowed") {
		t.Fatalf("over MaxBytes: %v", err)
	}
}

func TestRunFailures(t *testing.T) {
	var ie *InputError
	argv, env := helper(t, "crash")
	_, err := Run(context.Background(), argv, env, time.Minute, Request{Charts: []string{"a"}, MaxBytes: 1 << 20})
	if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), "exit status 3: panic: boom") {
		t.Fatalf("crash: %v", err)
	}
	argv, env = helper(t, "flood")
	_, err = Run(context.Background(), argv, env, time.Minute, Request{Charts: []string{"a"}, MaxBytes: 1 << 10})
	if err == nil || !strings.Contains(err.Error(), "answer larger than") {
		t.Fatalf("flood: %v", err)
	}
	argv, env = helper(t, "hang")
	start := time.Now()
	_, err = Run(context.Background(), argv, env, 200*time.Millisecond, Request{Charts: []string{"a"}, MaxBytes: 1 << 10})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("hang: returned after %s", d)
	}
	// The caller's context (SIGINT in gpunode) ends the helper too.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = Run(ctx, argv, env, time.Minute, Request{Charts: []string{"a"}, MaxBytes: 1 << 10})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err = Run(context.Background(), []string{"/nonexistent/gpunode-helm"}, nil, time.Minute, Request{Charts: []string{"a"}, MaxBytes: 1}); err == nil {
		t.Fatal("missing helper: no error")
	}
}

func TestServeRefusesBadRequests(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "{", "is not a " + SchemaVersion + " request"},
		{"other version", `{"schemaVersion":"gpunode.helm.render/v0","maxBytes":1}`, `want "` + SchemaVersion + `"`},
		{"no bound", `{"schemaVersion":"` + SchemaVersion + `"}`, "without maxBytes"},
	} {
		var out bytes.Buffer
		code := Serve(strings.NewReader(tc.in), &out, func(Request) ([]Chart, error) { t.Fatal("rendered a bad request"); return nil, nil })
		var resp Response
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			t.Fatalf("%s: response %q: %v", tc.name, out.String(), err)
		}
		if code != ExitFailure || resp.Error == nil || resp.Error.Input || !strings.Contains(resp.Error.Message, tc.want) || resp.SchemaVersion != SchemaVersion {
			t.Errorf("%s: exit %d, response %s", tc.name, code, out.String())
		}
	}
}

// boundedBuffer takes up to its bound exactly, and refuses the byte past it.
func TestBoundedBufferEdge(t *testing.T) {
	b := &boundedBuffer{max: 10}
	if n, err := b.Write(make([]byte, 9)); n != 9 || err != nil || b.over {
		t.Fatalf("below the bound: %d %v over=%v", n, err, b.over)
	}
	if n, err := b.Write(make([]byte, 1)); n != 1 || err != nil || b.over {
		t.Fatalf("at the bound: %d %v over=%v", n, err, b.over)
	}
	if n, err := b.Write(make([]byte, 1)); n != 0 || err == nil || !b.over || b.buf.Len() != 10 {
		t.Fatalf("past the bound: %d %v over=%v len %d", n, err, b.over, b.buf.Len())
	}
}

// MaxBytes bounds the rendered bytes: a render of exactly MaxBytes is
// answered, one byte more is the input's fault.
func TestServeMaxBytesEdge(t *testing.T) {
	// fakeRender: one template of the values data + " r/ns" (8 + 5 bytes).
	const rendered = 13
	for _, tc := range []struct {
		max  int64
		code int
	}{{rendered + 1, ExitOK}, {rendered, ExitOK}, {rendered - 1, ExitInput}} {
		req, _ := json.Marshal(Request{SchemaVersion: SchemaVersion, Charts: []string{"a"}, Values: []Values{{File: "v", Data: []byte("12345678")}},
			Release: "r", Namespace: "ns", MaxBytes: tc.max})
		var out bytes.Buffer
		code := Serve(bytes.NewReader(req), &out, fakeRender)
		var resp Response
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		if code != tc.code || (code == ExitOK) != (resp.Error == nil) || (code == ExitOK && len(resp.Charts) != 1) {
			t.Errorf("maxBytes %d: exit %d (want %d), response %s", tc.max, code, tc.code, out.String())
		}
	}
}
