// Package objects loads the cluster objects gpunode's cluster-layer commands
// read, as users export them with `kubectl get ... -o yaml|json`: v1 Nodes and
// Pods, PodGroups (scheduling.k8s.io v1alpha2/v1alpha3), batch/v1 Jobs,
// Volcano Jobs and HyperNodes, KAI and Kueue Topologies.
//
// Every file may hold several YAML documents, one JSON value, or a List.
// Each document is decoded once, strictly (unknown and duplicate fields are
// errors, field names are case-sensitive), straight into k8s.io/api types (or
// this package's types for the CRDs the product does not import). Every error
// is an *Error naming the file, the document, the List item and the field.
//
// `gpunode k8s place` (internal/k8s/place) and `gpunode k8s lint` share these
// loaders: they check only what decoding needs (kinds, API versions, names),
// so a lint can still report a PodGroup with two topology keys or a HyperNode
// cycle.
package objects

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"
)

// MaxDocuments bounds the documents read from one file (empty ones
// counted): a file with more is refused.
const MaxDocuments = 100000

// Error is a bad-input error: File, Line (1-based line in the file of the
// field, item or document; 0 = not known, see Locate), Doc (1-based, 0 =
// the whole file), Item (index in a List's items, -1 = not in a List),
// Object ("Kind \"name\"" when known), Field (dotted path, may be empty)
// and Reason. It reads "FILE:LINE: document N: items[i]: Kind "name":
// field: reason".
type Error struct {
	File   string
	Line   int
	Doc    int
	Item   int
	Object string
	Field  string
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Doc > 0 {
		fmt.Fprintf(&b, ": document %d", e.Doc)
	}
	if e.Item >= 0 {
		fmt.Fprintf(&b, ": items[%d]", e.Item)
	}
	if e.Object != "" {
		b.WriteString(": " + e.Object)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Reason)
	return b.String()
}

// Document is one document of a file, as JSON.
type Document struct {
	File  string
	Index int // 1-based, counting non-empty documents
	JSON  []byte
}

func (d Document) errorf(item int, object, field, format string, args ...any) *Error {
	return &Error{File: d.File, Doc: d.Index, Item: item, Object: object, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Documents splits data into documents: one JSON value when data starts with
// '{', else multi-document YAML (each converted to JSON, duplicate keys
// rejected). Empty documents are skipped. Input that cannot be Kubernetes
// objects is refused first, without conversion (sniff).
func Documents(file string, data []byte) ([]Document, error) {
	var docs []Document
	err := EachDocument(file, data, func(d Document) error {
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return docs, nil
}

func isEmptyYAML(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return false
		}
	}
	return true
}

// TypeMeta is the apiVersion and kind of a document.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// Peek reads a document's apiVersion, kind and name (not strictly).
func Peek(d Document) (TypeMeta, error) {
	var m TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(d.JSON, &m); err != nil {
		msg := cleanJSONError(err)
		if f, r, ok := splitGoFieldError(msg); ok {
			return m, d.errorf(-1, "", f, "%s", r)
		}
		return m, d.errorf(-1, "", "", "%s", msg)
	}
	return m, nil
}

// strict decodes JSON into v strictly; on failure it returns the field and
// reason it can name.
func strict(b []byte, v any) (field, reason string, failed bool) {
	serrs, err := sigsjson.UnmarshalStrict(b, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		msg := cleanJSONError(err)
		if f, r, ok := findBadQuantity(b); ok && strings.Contains(msg, "quantities must match") {
			return f, r, true
		}
		if f, r, ok := splitGoFieldError(msg); ok {
			return f, r, true
		}
		return "", msg, true
	}
	if len(serrs) > 0 {
		return "", cleanJSONError(serrs[0]), true
	}
	return "", "", false
}

// splitGoFieldError turns encoding/json's "cannot unmarshal X into Go struct
// field T.a.b of type Y" into field "a.b" and reason "cannot unmarshal X (want Y)".
func splitGoFieldError(msg string) (field, reason string, ok bool) {
	const into = " into Go struct field "
	i := strings.Index(msg, into)
	if i < 0 {
		return "", "", false
	}
	rest := msg[i+len(into):]
	j := strings.Index(rest, " of type ")
	if j < 0 {
		return "", "", false
	}
	path := rest[:j]
	if k := strings.Index(path, "."); k >= 0 {
		path = path[k+1:]
	}
	return path, "Invalid value: " + strings.TrimPrefix(msg[:i], "cannot unmarshal ") + " (want " + rest[j+len(" of type "):] + ")", true
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// isQuantityParent reports whether a map field holds resource.Quantity values.
func isQuantityParent(k string) bool {
	switch k {
	case "allocatable", "capacity", "requests", "limits", "overhead":
		return true
	}
	return false
}

// findBadQuantity locates the first quantity that does not parse (the
// quantity decoder's error carries no path). Used only on the error path.
func findBadQuantity(b []byte) (field, reason string, ok bool) {
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, &v); err != nil {
		return "", "", false
	}
	budget := 1 << 20
	var walk func(v any, path string, parent string) bool
	walk = func(v any, path string, parent string) bool {
		if budget--; budget < 0 {
			return false
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if isQuantityParent(parent) {
					if s, isStr := x[k].(string); isStr {
						if _, err := resource.ParseQuantity(s); err != nil {
							field = path + "[" + k + "]"
							reason = fmt.Sprintf("Invalid value: %q: %v", s, err)
							return true
						}
					}
					continue
				}
				if walk(x[k], p, k) {
					return true
				}
			}
		case []any:
			for i, e := range x {
				if walk(e, path+"["+strconv.Itoa(i)+"]", "") {
					return true
				}
			}
		}
		return false
	}
	if walk(v, "", "") {
		return field, reason, true
	}
	return "", "", false
}
