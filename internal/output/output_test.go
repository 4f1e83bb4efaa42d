package output

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

type model struct {
	SchemaVersion string `json:"schemaVersion"`
	Name          string `json:"name"`
}

func (m model) WriteTable(w io.Writer, o Options) error {
	_, err := io.WriteString(w, o.Paint("bold", m.Name)+"\n")
	return err
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": Table, "table": Table, "JSON": JSON, " yaml ": YAML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "table, wide, json, yaml, jsonpath=TEMPLATE or custom-columns=SPEC") {
		t.Errorf("ParseFormat(xml) error = %v", err)
	}
}

func TestWriteFormatsFromOneModel(t *testing.T) {
	m := model{SchemaVersion: "gpunode.test/v1", Name: "a->b"}
	var j, y, tb bytes.Buffer
	if err := Write(&j, JSON, m, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&y, YAML, m, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&tb, Table, m, Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(j.String(), `"schemaVersion": "gpunode.test/v1"`) || !strings.Contains(y.String(), "schemaVersion: gpunode.test/v1") {
		t.Errorf("json %q yaml %q", j.String(), y.String())
	}
	if !strings.HasPrefix(y.String(), "schemaVersion: gpunode.test/v1\n") {
		t.Errorf("yaml does not start with schemaVersion (keys were sorted): %q", y.String())
	}
	if tb.String() != "\x1b[1ma->b\x1b[0m\n" {
		t.Errorf("table %q", tb.String())
	}
	if err := Write(&tb, Table, struct{}{}, Options{}); err == nil || !strings.Contains(err.Error(), "no table form") {
		t.Errorf("table of a model without WriteTable: %v", err)
	}
}

func TestHumanBytes(t *testing.T) {
	for in, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 << 20: "1.5 GiB", 1 << 40: "1.0 TiB"} {
		if got := HumanBytes(in); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestErrWriterKeepsFirstError(t *testing.T) {
	ew := &ErrWriter{W: &failWriter{n: 1}}
	ew.Printf("ok\n")
	ew.Printf("fails\n")
	ew.Printf("skipped\n")
	if ew.Err == nil || ew.Err.Error() != "disk full" {
		t.Fatalf("Err = %v", ew.Err)
	}
}
