package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"training":               "training",
		"./my profile.yaml":      "my_profile.yaml",
		"":                       "unknown",
		"---":                    "unknown",
		"NVIDIA H100 80GB HBM3":  "NVIDIA_H100_80GB_HBM3",
		strings.Repeat("a", 100): strings.Repeat("a", 63),
		"é":                      "unknown",
	} {
		got := LabelValue(in)
		if got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
		if len(got) > 63 || !labelValueRE.MatchString(got) {
			t.Errorf("LabelValue(%q) = %q is not a label value", in, got)
		}
	}
}

func FuzzLabelValue(f *testing.F) {
	f.Add("/etc/gpunode/profiles/x.yaml")
	f.Add("a\nb=c")
	f.Fuzz(func(t *testing.T, s string) {
		v := LabelValue(s)
		if len(v) > 63 || !labelValueRE.MatchString(v) || v == "" {
			t.Fatalf("LabelValue(%q) = %q", s, v)
		}
	})
}

func TestWriteNFDFile(t *testing.T) {
	dir := t.TempDir()
	fs := []Feature{{"b", "2"}, {"a", "1"}}
	if err := WriteNFDFile(dir, "gpunode", fs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gpunode"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "gpunode.io/a=1\ngpunode.io/b=2\n") || !strings.HasPrefix(string(b), "#") {
		t.Fatalf("feature file:\n%s", b)
	}
	// A stale temporary file from a killed write is replaced, not kept.
	for _, stale := range []string{".gpunode.tmp", ".gpunode.gpunode-tmp-1-x"} {
		if err := os.WriteFile(filepath.Join(dir, stale), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteNFDFile(dir, "gpunode", fs[:1]); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("%d entries left", len(ents))
	}
	for _, bad := range []string{"", ".x", "a/b"} {
		if err := WriteNFDFile(dir, bad, fs); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if err := WriteNFDFile(filepath.Join(dir, "missing"), "gpunode", fs); err == nil {
		t.Error("missing directory accepted")
	}
	big := make([]Feature, 0, 2000)
	for range 2000 {
		big = append(big, Feature{strings.Repeat("x", 40), "1"})
	}
	if err := WriteNFDFile(dir, "gpunode", big); err == nil {
		t.Error("a feature file over 64 KiB accepted")
	}
}
