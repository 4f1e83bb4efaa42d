package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// SavedSchema identifies the layout of a saved result file.
const SavedSchema = "gpunode.bench.saved/v1"

// Kinds of results.
const (
	KindNUMA  = "numa"
	KindH2D   = "h2d"
	KindAlloc = "alloc"
)

// Saved is one result kept under <state-dir>/bench/NAME.json.
type Saved struct {
	SchemaVersion string          `json:"schemaVersion"`
	Name          string          `json:"name"`
	Kind          string          `json:"kind"`
	SavedAt       string          `json:"savedAt"`
	Result        json.RawMessage `json:"result"`
}

// Decoded returns the saved result as *NUMAResult, *H2DResult or
// *AllocResult.
func (s *Saved) Decoded() (any, error) {
	var v any
	switch s.Kind {
	case KindNUMA:
		v = &NUMAResult{}
	case KindH2D:
		v = &H2DResult{}
	case KindAlloc:
		v = &AllocResult{}
	default:
		return nil, fmt.Errorf("saved result %q: unknown kind %q", s.Name, s.Kind)
	}
	if err := json.Unmarshal(s.Result, v); err != nil {
		return nil, fmt.Errorf("saved result %q: %w", s.Name, err)
	}
	return v, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Dir is the directory of saved results below a state directory (what
// the deprecated --state-dir named).
func Dir(stateDir string) string { return path.Join(stateDir, "bench") }

// DefaultDir is the default --bench-dir: bench/ of gpunode's state
// directory, /var/lib/gpunode.
const DefaultDir = "/var/lib/gpunode/bench"

func kindOf(v any) (string, error) {
	switch v.(type) {
	case *NUMAResult:
		return KindNUMA, nil
	case *H2DResult:
		return KindH2D, nil
	case *AllocResult:
		return KindAlloc, nil
	}
	return "", fmt.Errorf("cannot save a %T", v)
}

// Save writes result v as NAME.json in dir, the results directory (a
// host path below the FS's root), atomically, replacing an older result of
// that name.
func Save(fsys *hostfs.FS, dir, name string, v any) (string, error) {
	if !nameRE.MatchString(name) || strings.HasSuffix(name, ".json") {
		return "", inputf("--save %q: a name is 1-64 letters, digits, '.', '_' or '-' (not ending in .json)", name)
	}
	kind, err := kindOf(v)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	b, err := json.MarshalIndent(Saved{SchemaVersion: SavedSchema, Name: name, Kind: kind, SavedAt: time.Now().UTC().Format(time.RFC3339Nano), Result: raw}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	if _, err := fsys.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench results directory: %w", err)
	}
	p := path.Join(dir, name+".json")
	if err := fsys.WriteOutputFile(p, append(b, '\n'), 0o644, hostfs.OutputOptions{}); err != nil {
		return "", fmt.Errorf("save %s: %w", name, err)
	}
	return p, nil
}

// Load reads the saved result NAME from the results directory dir.
func Load(fsys *hostfs.FS, dir, name string) (*Saved, error) {
	if !nameRE.MatchString(name) {
		return nil, inputf("result name %q", name)
	}
	p := path.Join(dir, name+".json")
	b, err := fsys.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, inputf("no saved result %q (%s)", name, p)
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	var s Saved
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if s.SchemaVersion != SavedSchema {
		return nil, fmt.Errorf("%s: schemaVersion %q, want %q", p, s.SchemaVersion, SavedSchema)
	}
	if _, err := s.Decoded(); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &s, nil
}

// LoadAll reads every saved result, oldest first; files that do not parse
// are reported in the second value and skipped. A missing directory is no
// results. At most 10,000 files are read.
func LoadAll(fsys *hostfs.FS, dir string) ([]*Saved, []error) {
	names, err := fsys.ReadDirNames(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var out []*Saved
	var errs []error
	for i, n := range names {
		if i >= 10000 {
			errs = append(errs, fmt.Errorf("%s: more than 10000 files; the rest is skipped", dir))
			break
		}
		if !strings.HasSuffix(n, ".json") || hostfs.IsTempName(n) {
			continue
		}
		s, err := Load(fsys, dir, strings.TrimSuffix(n, ".json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SavedAt < out[j].SavedAt })
	return out, errs
}

// Latest returns the newest saved result of each kind (the bench section of
// 'gpunode report').
func Latest(fsys *hostfs.FS, dir string) (map[string]*Saved, []error) {
	all, errs := LoadAll(fsys, dir)
	out := map[string]*Saved{}
	for _, s := range all {
		out[s.Kind] = s
	}
	return out, errs
}

// CompareSchema identifies the JSON/YAML layout of Comparison.
const CompareSchema = "gpunode.bench.compare/v1"

// Comparison sets two results of one kind side by side.
type Comparison struct {
	SchemaVersion string   `json:"schemaVersion"`
	Kind          string   `json:"kind"`
	A             string   `json:"a"`
	B             string   `json:"b"`
	Metrics       []Metric `json:"metrics"`
	// NoiseRule says how "within noise" is decided.
	NoiseRule string `json:"noiseRule"`
}

// Metric is one figure of both results.
type Metric struct {
	Name string  `json:"name"`
	Unit string  `json:"unit"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	// ChangePct is (B-A)/A in percent; Better says whether B improves on A
	// (lower is better for times, latency and RSS).
	ChangePct float64 `json:"changePct"`
	Better    bool    `json:"better"`
	// NoisePct is the combined relative spread of the two sample sets in
	// percent (robust sigma: 1.4826 x MAD over the median); WithinNoise is
	// set when |ChangePct| is at most twice NoisePct, or when either side
	// has fewer than 3 samples and the change is under 5%.
	NoisePct    float64 `json:"noisePct"`
	WithinNoise bool    `json:"withinNoise"`
	SamplesA    int     `json:"samplesA"`
	SamplesB    int     `json:"samplesB"`
}

type series struct {
	name, unit    string
	lowerIsBetter bool
	median        float64
	samples       []float64
}

func numaSeries(r *NUMAResult) []series {
	var out []series
	for _, p := range r.Pairs {
		id := fmt.Sprintf("cpu%d-mem%d", p.CPUNode, p.MemNode)
		out = append(out,
			series{id + " copy", "GB/s", false, p.CopyGBps, p.CopySamplesGBps},
			series{id + " triad", "GB/s", false, p.TriadGBps, p.TriadSamplesGBps},
			series{id + " latency", "ns", true, p.LatencyNs, p.LatencySamplesNs})
	}
	return out
}

func h2dSeries(r *H2DResult) []series {
	var out []series
	for _, c := range r.Cases {
		out = append(out, series{fmt.Sprintf("%s %s %s", c.Direction, c.Memory, c.Placement), "GB/s", false, c.GBps, c.SamplesGBps})
	}
	return out
}

func allocSeries(r *AllocResult) []series {
	var out []series
	for _, run := range r.Runs {
		out = append(out,
			series{run.Allocator + " wall", "s", true, run.MedianWallSeconds, run.WallSeconds},
			series{run.Allocator + " user", "s", true, run.MedianUserSeconds, run.UserSeconds},
			series{run.Allocator + " sys", "s", true, run.MedianSysSeconds, run.SysSeconds},
			series{run.Allocator + " maxRSS", "MiB", true, float64(run.MedianMaxRSSBytes) / (1 << 20), scale(u64f(run.MaxRSSBytes), 1.0/(1<<20))})
	}
	return out
}

func scale(xs []float64, k float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * k
	}
	return out
}

func seriesOf(v any) ([]series, error) {
	switch r := v.(type) {
	case *NUMAResult:
		return numaSeries(r), nil
	case *H2DResult:
		return h2dSeries(r), nil
	case *AllocResult:
		return allocSeries(r), nil
	}
	return nil, fmt.Errorf("cannot compare a %T", v)
}

// Compare compares saved results a and b, which must be of one kind.
func Compare(a, b *Saved) (*Comparison, error) {
	if a.Kind != b.Kind {
		return nil, inputf("%s is a %s result and %s a %s result", a.Name, a.Kind, b.Name, b.Kind)
	}
	va, err := a.Decoded()
	if err != nil {
		return nil, err
	}
	vb, err := b.Decoded()
	if err != nil {
		return nil, err
	}
	sa, _ := seriesOf(va)
	sb, _ := seriesOf(vb)
	byName := map[string]series{}
	for _, s := range sb {
		byName[s.name] = s
	}
	c := &Comparison{SchemaVersion: CompareSchema, Kind: a.Kind, A: a.Name, B: b.Name, Metrics: []Metric{},
		NoiseRule: "noise = sqrt(spreadA^2 + spreadB^2), spread = 1.4826*MAD/median of each side's samples; a change within 2x noise (or under 5% with fewer than 3 samples a side) is within noise"}
	for _, x := range sa {
		y, ok := byName[x.name]
		if !ok {
			continue
		}
		m := Metric{Name: x.name, Unit: x.unit, A: x.median, B: y.median, SamplesA: len(x.samples), SamplesB: len(y.samples)}
		if x.median != 0 {
			m.ChangePct = round3(100 * (y.median - x.median) / x.median)
		}
		m.Better = (y.median > x.median) != x.lowerIsBetter && y.median != x.median
		noise := math.Hypot(RelSpread(x.samples), RelSpread(y.samples)) * 100
		m.NoisePct = round3(noise)
		if len(x.samples) < 3 || len(y.samples) < 3 {
			m.WithinNoise = math.Abs(m.ChangePct) < 5
		} else {
			m.WithinNoise = math.Abs(m.ChangePct) <= 2*noise
		}
		c.Metrics = append(c.Metrics, m)
	}
	return c, nil
}

// ListSchema identifies the JSON/YAML layout of List.
const ListSchema = "gpunode.bench.list/v1"

// List is the saved results ('gpunode bench list').
type List struct {
	SchemaVersion string      `json:"schemaVersion"`
	Dir           string      `json:"dir"`
	Results       []ListEntry `json:"results"`
}

// ListEntry is one saved result.
type ListEntry struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	SavedAt string `json:"savedAt"`
}
