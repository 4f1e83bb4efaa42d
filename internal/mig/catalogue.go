package mig

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// MaxProfiles bounds the number of GI profiles a product may have.
const MaxProfiles = 12

// maxSlices bounds the memory-slice axis (8 on all products known today).
const maxSlices = 16

// Placement is a GI placement on the memory-slice axis.
type Placement struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

func (p Placement) String() string { return fmt.Sprintf("%d:%d", p.Start, p.Size) }

// CIProfile is a compute-instance profile inside a GI profile.
type CIProfile struct {
	// Name as nvidia-smi and mig-parted print it ("1c.3g.40gb"; the full-size
	// CI carries the GI name).
	Name          string `json:"name"`
	ComputeSlices int    `json:"computeSlices"`
	MaxCount      int    `json:"maxCount"`
	// Starts are the CI placements (start offsets, size ComputeSlices) on the
	// GI's compute-slice axis.
	Starts []int `json:"starts"`
	// Default marks the CI created by `nvidia-smi mig -cgi ... -C`.
	Default bool `json:"default,omitempty"`
}

// Profile is a GPU-instance profile.
type Profile struct {
	// ID is the profile ID printed by `nvidia-smi mig -lgip` (and NVML's
	// GpuInstanceProfileInfo.Id).
	ID int `json:"id"`
	// NVMLProfile is the enum passed to nvmlDeviceGetGpuInstanceProfileInfo
	// (GPU_INSTANCE_PROFILE_1_SLICE = 0, ...).
	NVMLProfile     int    `json:"nvmlProfile"`
	Name            string `json:"name"`
	ComputeSlices   int    `json:"computeSlices"`
	MemorySlices    int    `json:"memorySlices"`
	MemoryGB        int    `json:"memoryGB"`
	MaxCount        int    `json:"maxCount"`
	Starts          []int  `json:"starts"`
	SMs             int    `json:"sms,omitempty"`
	MediaExtensions bool   `json:"mediaExtensions,omitempty"`
	// Note qualifies the profile (e.g. the driver it needs).
	Note string `json:"note,omitempty"`
	// ComputeInstances are the CI profiles this GI can be split into.
	ComputeInstances []CIProfile `json:"computeInstances,omitempty"`
}

// PlacementString renders the placements like `nvidia-smi mig -lgipp`:
// "{0,4}:4".
func (p Profile) PlacementString() string {
	s := make([]string, len(p.Starts))
	for i, st := range p.Starts {
		s[i] = strconv.Itoa(st)
	}
	return "{" + strings.Join(s, ",") + "}:" + strconv.Itoa(p.MemorySlices)
}

// Product is one MIG-capable GPU product and its profiles.
type Product struct {
	// Key is gpunode's short name ("H100-80GB").
	Key string `json:"key"`
	// Names are product names as nvidia-smi prints them.
	Names []string `json:"names"`
	// Aliases are further accepted short forms.
	Aliases []string `json:"aliases,omitempty"`
	// DeviceIDs are PCI device ids (vendor 0x10de).
	DeviceIDs     []uint16 `json:"deviceIDs"`
	ComputeSlices int      `json:"computeSlices"`
	MemorySlices  int      `json:"memorySlices"`
	// MediaExtensionLimit is how many media-extension (+me) instances fit on
	// one GPU in total (the GPU has one OFA/JPEG set).
	MediaExtensionLimit int       `json:"mediaExtensionLimit"`
	Profiles            []Profile `json:"profiles"`
	// Source says where the data comes from ("builtin", "nvml").
	Source string `json:"source"`
	// Note qualifies the data (e.g. placements not yet confirmed on a device).
	Note string `json:"note,omitempty"`
}

// Profile returns the profile named name (case-insensitive) or false.
func (p *Product) Profile(name string) (int, bool) {
	for i := range p.Profiles {
		if strings.EqualFold(p.Profiles[i].Name, name) {
			return i, true
		}
	}
	return -1, false
}

// ProfileByID returns the index of the profile with -lgip ID id or false.
func (p *Product) ProfileByID(id int) (int, bool) {
	for i := range p.Profiles {
		if p.Profiles[i].ID == id {
			return i, true
		}
	}
	return -1, false
}

// DeviceIDStrings renders the device ids as 0xDDDD.
func (p *Product) DeviceIDStrings() []string {
	out := make([]string, len(p.DeviceIDs))
	for i, d := range p.DeviceIDs {
		out[i] = fmt.Sprintf("0x%04X", d)
	}
	return out
}

// Validate checks a product's internal consistency.
func (p *Product) Validate() error {
	if p.Key == "" {
		return errors.New("product has no key")
	}
	if p.MemorySlices < 1 || p.MemorySlices > maxSlices {
		return fmt.Errorf("product %s: memory slices %d out of range 1..%d", p.Key, p.MemorySlices, maxSlices)
	}
	if p.ComputeSlices < 1 {
		return fmt.Errorf("product %s: compute slices %d out of range", p.Key, p.ComputeSlices)
	}
	if len(p.Profiles) == 0 || len(p.Profiles) > MaxProfiles {
		return fmt.Errorf("product %s: %d profiles, want 1..%d", p.Key, len(p.Profiles), MaxProfiles)
	}
	seen := map[string]bool{}
	for _, pr := range p.Profiles {
		if pr.Name == "" || seen[strings.ToLower(pr.Name)] {
			return fmt.Errorf("product %s: empty or duplicate profile name %q", p.Key, pr.Name)
		}
		seen[strings.ToLower(pr.Name)] = true
		if pr.MemorySlices < 1 || pr.MemorySlices > p.MemorySlices {
			return fmt.Errorf("product %s: profile %s: memory slices %d out of range", p.Key, pr.Name, pr.MemorySlices)
		}
		if pr.ComputeSlices < 1 || pr.ComputeSlices > p.ComputeSlices {
			return fmt.Errorf("product %s: profile %s: compute slices %d out of range", p.Key, pr.Name, pr.ComputeSlices)
		}
		if pr.MaxCount < 1 || pr.MaxCount > 255 {
			return fmt.Errorf("product %s: profile %s: max count %d out of range", p.Key, pr.Name, pr.MaxCount)
		}
		if len(pr.Starts) == 0 {
			return fmt.Errorf("product %s: profile %s: no placements", p.Key, pr.Name)
		}
		for _, s := range pr.Starts {
			if s < 0 || s+pr.MemorySlices > p.MemorySlices {
				return fmt.Errorf("product %s: profile %s: placement %d:%d outside %d memory slices", p.Key, pr.Name, s, pr.MemorySlices, p.MemorySlices)
			}
		}
	}
	return nil
}

// Catalogue is a set of products. Its zero value is empty; use Builtin. It
// caches each product's feasible configurations on first use and is safe for
// concurrent use.
type Catalogue struct {
	products []*Product

	mu     sync.Mutex
	spaces map[string]*space
}

// NewCatalogue builds a catalogue from products after validating them.
func NewCatalogue(products ...Product) (*Catalogue, error) {
	c := &Catalogue{spaces: map[string]*space{}}
	for i := range products {
		p := products[i]
		if err := p.Validate(); err != nil {
			return nil, err
		}
		c.products = append(c.products, &p)
	}
	return c, nil
}

// Builtin returns a fresh catalogue of the built-in products.
func Builtin() *Catalogue {
	c, err := NewCatalogue(builtinProducts()...)
	if err != nil {
		panic("mig: builtin catalogue invalid: " + err.Error())
	}
	return c
}

// With returns a new catalogue in which p replaces the product with the same
// key (or any product sharing one of its device ids), or is added. Live
// backends use it to override the built-in data with what NVML reports.
func (c *Catalogue) With(p Product) (*Catalogue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	ids := map[uint16]bool{}
	for _, d := range p.DeviceIDs {
		ids[d] = true
	}
	var out []Product
	for _, q := range c.products {
		clash := strings.EqualFold(q.Key, p.Key)
		for _, d := range q.DeviceIDs {
			if ids[d] {
				clash = true
			}
		}
		if !clash {
			out = append(out, *q)
		}
	}
	out = append(out, p)
	return NewCatalogue(out...)
}

// Products lists the catalogue's products in catalogue order.
func (c *Catalogue) Products() []*Product { return c.products }

// ErrUnknownModel is wrapped by Lookup errors for names that match nothing.
var ErrUnknownModel = errors.New("unknown GPU model")

// ErrNotMIGCapable is wrapped by Lookup errors for known GPUs without MIG.
var ErrNotMIGCapable = errors.New("GPU is not MIG-capable")

// normalizeModel folds a model string: lower case, "nvidia" prefix dropped,
// runs of spaces, '-' and '_' folded into one '-'.
func normalizeModel(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	dash := false
	for _, r := range s {
		if r == ' ' || r == '-' || r == '_' || r == '\t' {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	out := b.String()
	out = strings.TrimPrefix(out, "nvidia-")
	out = strings.TrimPrefix(out, "tesla-")
	return out
}

// nonMIG are product families that nvidia-smi names and that have no MIG.
var nonMIG = []string{"v100", "t4", "a10", "a10g", "a16", "a2", "a40", "l4", "l40", "l40s", "p100", "p40", "p4", "k80",
	"rtx", "quadro", "geforce", "titan", "a6000", "rtx-a6000", "a4000", "a5000"}

// ParseDeviceID parses a PCI device id: "0x2330", "2330", "0x233010DE"
// (mig-parted's device<<16|vendor form, vendor must be 0x10de).
func ParseDeviceID(s string) (uint16, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if t == "" || len(t) > 8 {
		return 0, fmt.Errorf("invalid PCI device id %q", s)
	}
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid PCI device id %q: %w", s, err)
	}
	if len(t) > 4 {
		if v&0xffff != 0x10de {
			return 0, fmt.Errorf("invalid PCI device id %q: vendor 0x%04X is not NVIDIA (0x10DE)", s, v&0xffff)
		}
		v >>= 16
	}
	return uint16(v), nil
}

// ByDeviceID finds the product with a PCI device id.
func (c *Catalogue) ByDeviceID(id uint16) (*Product, error) {
	for _, p := range c.products {
		for _, d := range p.DeviceIDs {
			if d == id {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: PCI device id 0x%04X is not a MIG-capable GPU in the catalogue (known: %s)",
		ErrUnknownModel, id, strings.Join(c.keys(), ", "))
}

func (c *Catalogue) keys() []string {
	var k []string
	for _, p := range c.products {
		k = append(k, p.Key)
	}
	return k
}

// Lookup finds a product by nvidia-smi name, short form or PCI device id,
// case-insensitively.
func (c *Catalogue) Lookup(model string) (*Product, error) {
	n := normalizeModel(model)
	if n == "" {
		return nil, fmt.Errorf("%w: empty model name", ErrUnknownModel)
	}
	for _, p := range c.products {
		if normalizeModel(p.Key) == n {
			return p, nil
		}
		for _, a := range append(append([]string{}, p.Names...), p.Aliases...) {
			if normalizeModel(a) == n {
				return p, nil
			}
		}
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(model)), "0x") {
		id, err := ParseDeviceID(model)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnknownModel, err)
		}
		return c.ByDeviceID(id)
	}
	if isHex4(n) {
		if id, err := ParseDeviceID(model); err == nil {
			if p, err := c.ByDeviceID(id); err == nil {
				return p, nil
			}
		}
	}
	for _, f := range nonMIG {
		if n == f || strings.HasPrefix(n, f+"-") {
			return nil, fmt.Errorf("%w: %q has no MIG support (MIG needs A100, A30, H100, H200, GH200 or B200)", ErrNotMIGCapable, model)
		}
	}
	var matches []string
	for _, p := range c.products {
		for _, name := range append([]string{p.Key}, p.Aliases...) {
			if strings.HasPrefix(normalizeModel(name), n+"-") {
				matches = append(matches, p.Key)
				break
			}
		}
	}
	if len(matches) > 1 {
		return nil, fmt.Errorf("%w: %q is ambiguous: one of %s", ErrUnknownModel, model, strings.Join(matches, ", "))
	}
	if len(matches) == 1 {
		return nil, fmt.Errorf("%w: %q is not a known model name; did you mean %s?", ErrUnknownModel, model, matches[0])
	}
	msg := fmt.Sprintf("%q is not a known MIG-capable GPU model (known: %s)", model, strings.Join(c.keys(), ", "))
	if s := closest(n, c.allModelNames(), 4); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownModel, msg)
}

func isHex4(s string) bool {
	if len(s) != 4 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

func (c *Catalogue) allModelNames() []string {
	var out []string
	for _, p := range c.products {
		out = append(out, p.Key)
		out = append(out, p.Aliases...)
	}
	return out
}

// ProfileOwners lists the products (other than except) that have a profile
// with this name.
func (c *Catalogue) ProfileOwners(name string, except *Product) []string {
	var out []string
	for _, p := range c.products {
		if p == except {
			continue
		}
		if _, ok := p.Profile(name); ok {
			out = append(out, p.Key)
		}
	}
	sort.Strings(out)
	return out
}

// closest returns the candidate nearest to s by edit distance (ties: first),
// or "" when none is within maxDist edits.
func closest(s string, cands []string, maxDist int) string {
	best, bestD := "", maxDist+1
	for _, c := range cands {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
