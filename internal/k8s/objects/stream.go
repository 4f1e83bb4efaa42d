package objects

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// EachDocument calls fn with each document of data in turn, as Documents
// splits them (one JSON value when data starts with '{', else
// multi-document YAML converted to JSON one document at a time), so that
// only one document's JSON is alive at a time. An error of fn stops the
// walk and is returned as it is.
func EachDocument(file string, data []byte, fn func(Document) error) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	isJSON := len(trimmed) > 0 && trimmed[0] == '{'
	if err := sniff(file, data, isJSON); err != nil {
		return err
	}
	if isJSON {
		return fn(Document{File: file, Index: 1, JSON: trimmed})
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	docs := 0
	for n := 0; ; n++ {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		idx := docs + 1
		if n == MaxDocuments {
			// the bound counts every document read, empty ones too
			return &Error{File: file, Item: -1, Reason: fmt.Sprintf("more than %d documents", MaxDocuments)}
		}
		if err != nil {
			return &Error{File: file, Doc: idx, Item: -1, Reason: err.Error()}
		}
		if isEmptyYAML(b) {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(b)
		if err != nil {
			return &Error{File: file, Doc: idx, Item: -1, Reason: err.Error()}
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || t[0] != '{' {
			return &Error{File: file, Doc: idx, Item: -1, Reason: "not an object (want a Kubernetes object with apiVersion and kind)"}
		}
		docs++
		if err := fn(Document{File: file, Index: idx, JSON: j}); err != nil {
			return err
		}
	}
	if docs == 0 {
		return &Error{File: file, Item: -1, Reason: "no documents"}
	}
	return nil
}

// EachObject calls fn with each object of data in turn (a List's items
// expanded), one document decoded at a time: a caller that keeps only what
// it needs of each object reads a file of any number of objects in the
// memory of one document. Errors are located in data (Locate).
func EachObject(file string, data []byte, fn func(Object) error) (retErr error) {
	defer func() { retErr = Locate(retErr, data) }()
	return EachDocument(file, data, func(d Document) error {
		m, err := Peek(d)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(m.Kind, "List") {
			return fn(Object{Source: Source{File: file, Doc: d.Index, Item: -1}, TypeMeta: m, JSON: d.JSON})
		}
		var l struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   listMeta          `json:"metadata"`
			Items      []json.RawMessage `json:"items"`
		}
		if field, reason, bad := strict(d.JSON, &l); bad {
			return d.errorf(-1, "", field, "%s", reason)
		}
		for i, raw := range l.Items {
			im, err := Peek(Document{File: file, Index: d.Index, JSON: raw})
			if err != nil {
				return d.errorf(i, "", "", "%s", err.(*Error).Reason)
			}
			if err := fn(Object{Source: Source{File: file, Doc: d.Index, Item: i}, TypeMeta: im, JSON: raw}); err != nil {
				return err
			}
		}
		return nil
	})
}
