package yamlpos

import (
	"fmt"
	"strings"

	"github.com/gpunode/gpunode/internal/yamljson"
)

// WrongKind returns an error when src's (first) document declares a kind
// other than wantKind: "this is a v1 Pod "a-0", not a WHAT", so that a file
// given to the wrong flag is named for what it is instead of for the first
// field the wanted kind lacks. nil when the kind is right, absent, or src
// does not decode (the strict decode that follows reports those).
func WrongKind(src []byte, wantKind, what string) error {
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if yamljson.Unmarshal(src, &m) != nil || m.Kind == "" || m.Kind == wantKind {
		return nil
	}
	found := m.Kind
	if m.APIVersion != "" {
		found = m.APIVersion + " " + m.Kind
	}
	if n := m.Metadata.Name; n != "" {
		if len(n) > 80 {
			n = n[:64] + "..."
		}
		found += fmt.Sprintf(" %q", n)
	}
	return fmt.Errorf("kind: this is a %s, not a %s", found, what)
}

// decoderPrefixes are the layers sigs.k8s.io/yaml (and internal/yamljson,
// which writes the same) and encoding/json put in front of a strict
// decode's message; a user reads the message without them.
var decoderPrefixes = []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "}

// CleanMessage removes the decoders' own prefixes from msg, and turns
// encoding/json's "cannot unmarshal X into Go struct field T.f of type Y"
// into "f: cannot unmarshal X (want Y)".
func CleanMessage(msg string) string {
	for {
		trimmed := false
		for _, p := range decoderPrefixes {
			if i := strings.Index(msg, p); i >= 0 {
				msg = msg[:i] + msg[i+len(p):]
				trimmed = true
			}
		}
		if !trimmed {
			break
		}
	}
	const into = " into Go struct field "
	if i := strings.Index(msg, into); i >= 0 {
		rest := msg[i+len(into):]
		if j := strings.Index(rest, " of type "); j >= 0 {
			path := rest[:j]
			if k := strings.Index(path, "."); k >= 0 {
				path = path[k+1:]
			}
			head := msg[:i]
			pre := ""
			if k := strings.LastIndex(head, ": "); k >= 0 {
				pre, head = head[:k+2], head[k+2:]
			}
			msg = pre + path + ": " + head + " (want " + rest[j+len(" of type "):] + ")"
		}
	}
	return msg
}

// cleanErr is err with a cleaned message; errors.Is/As still see err.
type cleanErr struct {
	msg string
	err error
}

func (e *cleanErr) Error() string { return e.msg }
func (e *cleanErr) Unwrap() error { return e.err }

// Clean returns err with CleanMessage applied (nil stays nil).
func Clean(err error) error {
	if err == nil {
		return nil
	}
	if m := CleanMessage(err.Error()); m != err.Error() {
		return &cleanErr{msg: m, err: err}
	}
	return err
}
