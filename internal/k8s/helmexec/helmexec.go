// Package helmexec is how 'k8s lint' renders Helm charts without linking
// the Helm SDK: it runs the helper executable gpunode-helm
// (cmd/gpunode-helm, which links internal/k8s/helmchart and the SDK) and
// talks to it in one JSON request on its stdin and one JSON response on
// its stdout. gpunode-full then starts without the SDK's package
// initialisers (its JSON-schema meta-schemas alone cost about 10 ms of CPU
// and 1.7 MB at every start), and only a lint with a chart among its
// inputs pays for them, once, in the child.
//
// This package holds the protocol (both sides) and the parent's exec; it
// imports nothing of Helm.
package helmexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gpunode/gpunode/internal/userfile"
)

// HelperName is the helper executable, and EnvHelper the variable that
// names it explicitly (a path).
const (
	HelperName = "gpunode-helm"
	EnvHelper  = "GPUNODE_HELM"
)

// SchemaVersion tags the request and the response.
const SchemaVersion = "gpunode.helm.render/v1"

// Defaults of `helm template`.
const (
	DefaultRelease   = "release-name"
	DefaultNamespace = "default"
)

// MaxRequestBytes bounds the request the helper reads (the values files
// travel in it, base64-encoded).
const MaxRequestBytes = 1 << 30

// Values is one values file as read by the caller.
type Values struct {
	File string `json:"file"`
	Data []byte `json:"data"`
}

// Request asks for the charts to be rendered with the values files merged
// in order (later files winning), as `helm template -f A -f B` renders.
type Request struct {
	SchemaVersion string   `json:"schemaVersion"`
	Charts        []string `json:"charts"`
	Values        []Values `json:"values,omitempty"`
	Release       string   `json:"release"`
	Namespace     string   `json:"namespace"`
	// MaxBytes bounds the rendered bytes of all charts together.
	MaxBytes int64 `json:"maxBytes"`
}

// Template is one rendered template file: Path is its path under the
// chart directory as given, Data what it renders to.
type Template struct {
	Path string `json:"path"`
	Data string `json:"data"`
}

// Chart is one rendered chart, its templates in path order.
type Chart struct {
	Chart     string     `json:"chart"`
	Templates []Template `json:"templates"`
}

// Response is the helper's answer: the charts, in the request's order, or
// an error.
type Response struct {
	SchemaVersion string  `json:"schemaVersion"`
	Charts        []Chart `json:"charts,omitempty"`
	Error         *Error  `json:"error,omitempty"`
}

// Error is a failed render. Input is set when the input is at fault (a
// values file that is not a mapping, a chart that does not load or
// render): the caller's usage error; otherwise the helper failed.
type Error struct {
	Message string `json:"message"`
	Input   bool   `json:"input"`
}

// InputError is a chart or values file the helper refused; its message
// names the file, as the helper wrote it.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

// Exit codes of the helper.
const (
	ExitOK      = 0
	ExitInput   = 2
	ExitFailure = 3
)

// Renderer renders the charts of a request (the helper passes the Helm
// SDK's). Every error it returns is the input's fault.
type Renderer func(Request) ([]Chart, error)

// Serve is the helper's side: it reads one request from in, renders it
// and writes the response to out, and returns the helper's exit code.
func Serve(in io.Reader, out io.Writer, render Renderer) int {
	resp := Response{SchemaVersion: SchemaVersion}
	code := ExitOK
	req, err := readRequest(in)
	if err != nil {
		resp.Error = &Error{Message: err.Error()}
		code = ExitFailure
	} else if charts, err := render(req); err != nil {
		resp.Error = &Error{Message: err.Error(), Input: true}
		code = ExitInput
	} else if n := renderedBytes(charts); n > req.MaxBytes {
		resp.Error = &Error{Message: fmt.Sprintf("helm charts %v render to %d bytes, more than the %d allowed (--max-input-bytes)", req.Charts, n, req.MaxBytes), Input: true}
		code = ExitInput
	} else {
		resp.Charts = charts
	}
	if err := json.NewEncoder(out).Encode(&resp); err != nil {
		return ExitFailure
	}
	return code
}

func readRequest(in io.Reader) (Request, error) {
	var req Request
	b, err := userfile.ReadAll(in, HelperName+": the request on stdin", MaxRequestBytes)
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("%s: the request on stdin is not a %s request: %w", HelperName, SchemaVersion, err)
	}
	if req.SchemaVersion != SchemaVersion {
		return req, fmt.Errorf("%s: request schemaVersion %q, want %q (gpunode-full and %s from different builds?)", HelperName, req.SchemaVersion, SchemaVersion, HelperName)
	}
	if req.MaxBytes <= 0 {
		return req, errors.New(HelperName + ": request without maxBytes")
	}
	return req, nil
}

func renderedBytes(charts []Chart) int64 {
	var n int64
	for _, c := range charts {
		for _, t := range c.Templates {
			n += int64(len(t.Data))
		}
	}
	return n
}
