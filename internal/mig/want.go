package mig

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrBadDemand is wrapped by errors about a demand the user must fix (unknown
// profile, wrong model, count beyond what the GPUs can hold).
var ErrBadDemand = errors.New("bad demand")

// demandError is an ErrBadDemand with its own text.
type demandError string

func (e demandError) Error() string        { return string(e) }
func (e demandError) Is(target error) bool { return target == ErrBadDemand }

func badDemandf(format string, args ...any) error { return demandError(fmt.Sprintf(format, args...)) }

// Want is one "profile=count" item of a demand, as the user wrote it.
type Want struct {
	Profile string `json:"profile"`
	Count   int    `json:"count"`
}

// maxWantCount bounds a single count in --want.
const maxWantCount = 4096

// ParseWant parses "3g.40gb=1,2g.20gb=1,1g.10gb=2". A bare profile means a
// count of 1; repeated profiles add up (in first-seen order). Profile names
// are checked against a product later by Resolve.
func ParseWant(s string) ([]Want, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--want: empty demand (want e.g. 3g.40gb=1,1g.10gb=2)")
	}
	var out []Want
	idx := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("--want %q: empty item", s)
		}
		name, cnt, hasEq := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		n := 1
		if hasEq {
			v, err := strconv.Atoi(strings.TrimSpace(cnt))
			if err != nil {
				return nil, fmt.Errorf("--want %q: count %q of %q is not a number", s, cnt, name)
			}
			if v < 0 || v > maxWantCount {
				return nil, fmt.Errorf("--want %q: count %d of %q out of range 0..%d", s, v, name, maxWantCount)
			}
			n = v
		}
		if name == "" {
			return nil, fmt.Errorf("--want %q: item %q has no profile name", s, item)
		}
		key := strings.ToLower(name)
		if i, ok := idx[key]; ok {
			out[i].Count += n
			if out[i].Count > maxWantCount {
				return nil, fmt.Errorf("--want %q: count of %q out of range 0..%d", s, name, maxWantCount)
			}
			continue
		}
		idx[key] = len(out)
		out = append(out, Want{Profile: name, Count: n})
	}
	return out, nil
}

// FormatWant renders a demand in --want syntax.
func FormatWant(w []Want) string {
	var parts []string
	for _, x := range w {
		if x.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", x.Profile, x.Count))
		}
	}
	return strings.Join(parts, ",")
}

// resolveProfile maps a user profile string to a profile index of p. It
// accepts GI names ("3g.40gb", "1g.10gb+me"), CI forms ("1c.3g.40gb") and
// -lgip IDs ("9"). ci is the index of the CI profile for CI forms that are
// not the full-size CI, else -1.
func (c *Catalogue) resolveProfile(p *Product, name string) (gi, ci int, err error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if i, ok := p.Profile(n); ok {
		return i, -1, nil
	}
	if id, err := strconv.Atoi(n); err == nil {
		if i, ok := p.ProfileByID(id); ok {
			return i, -1, nil
		}
		return -1, -1, badDemandf("%s has no profile with ID %d (IDs: %s)", p.Key, id, profileIDs(p))
	}
	// CI form "<c>c.<gi>".
	if cs, gis, ok := strings.Cut(n, "."); ok && strings.HasSuffix(cs, "c") {
		if i, ok := p.Profile(gis); ok {
			if cs == fmt.Sprintf("%dc", p.Profiles[i].ComputeSlices) {
				return i, -1, nil
			}
			for j, cp := range p.Profiles[i].ComputeInstances {
				if strings.EqualFold(cp.Name, n) {
					if cp.ComputeSlices == p.Profiles[i].ComputeSlices {
						return i, -1, nil
					}
					return i, j, nil
				}
			}
			return -1, -1, badDemandf("%s: %q is not a compute-instance profile of %s (options: %s)",
				p.Key, name, gis, ciNames(p.Profiles[i]))
		}
	}
	if owners := c.ProfileOwners(n, p); len(owners) > 0 {
		msg := fmt.Sprintf("profile %q belongs to %s, not %s", name, strings.Join(owners, ", "), p.Key)
		if s := suggestProfile(n, p); s != "" {
			msg += fmt.Sprintf("; on %s did you mean %s?", p.Key, s)
		}
		return -1, -1, demandError(msg)
	}
	msg := fmt.Sprintf("unknown profile %q for %s", name, p.Key)
	if s := suggestProfile(n, p); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	msg += fmt.Sprintf(" (profiles: %s)", strings.Join(profileNames(p), ", "))
	return -1, -1, demandError(msg)
}

func profileNames(p *Product) []string {
	out := make([]string, len(p.Profiles))
	for i, pr := range p.Profiles {
		out[i] = pr.Name
	}
	return out
}

func profileIDs(p *Product) string {
	out := make([]string, len(p.Profiles))
	for i, pr := range p.Profiles {
		out[i] = strconv.Itoa(pr.ID)
	}
	return strings.Join(out, ", ")
}

func ciNames(pr Profile) string {
	out := make([]string, len(pr.ComputeInstances))
	for i, c := range pr.ComputeInstances {
		out[i] = c.Name
	}
	return strings.Join(out, ", ")
}

// maxCIWant bounds the compute instances of one GI profile in a demand.
const maxCIWant = 256

// Resolve maps a demand to p's profiles. Compute-instance forms
// ("1c.3g.40gb=3") are packed into as few GIs as hold them, as mig-parted
// does (three 1c.3g.40gb make one 3g.40gb GI). Unknown profiles, profiles
// of another model and counts beyond what gpus GPUs can ever hold (the
// per-GPU maximum times gpus) are ErrBadDemand errors.
func (c *Catalogue) Resolve(p *Product, wants []Want, gpus int) (demand, error) {
	d, _, err := c.resolve(p, wants, gpus)
	return d, err
}

// resolve is Resolve that also returns, per profile, the CI counts of each
// GI that compute-instance forms were packed into.
func (c *Catalogue) resolve(p *Product, wants []Want, gpus int) (demand, map[int][][]int, error) {
	var d demand
	bins := map[int][][]int{}
	ciNeed := map[int][]int{}
	for _, w := range wants {
		i, ci, err := c.resolveProfile(p, w.Profile)
		if err != nil {
			return d, nil, err
		}
		if ci >= 0 {
			if ciNeed[i] == nil {
				ciNeed[i] = make([]int, len(p.Profiles[i].ComputeInstances))
			}
			ciNeed[i][ci] += w.Count
			total := 0
			for _, v := range ciNeed[i] {
				total += v
			}
			if total > maxCIWant {
				return d, nil, badDemandf("%s: %d compute instances of %s, more than %d", w.Profile, total, p.Profiles[i].Name, maxCIWant)
			}
			continue
		}
		if int(d[i])+w.Count > maxWantCount {
			return d, nil, badDemandf("%s: count %d too large", w.Profile, int(d[i])+w.Count)
		}
		d[i] += uint16(w.Count)
	}
	for i, need := range ciNeed {
		bins[i] = ciBins(p.Profiles[i], need)
		d[i] += uint16(len(bins[i]))
	}
	var over overMax
	for i, pr := range p.Profiles {
		if limit := pr.MaxCount * gpus; int(d[i]) > limit {
			over.msgs = append(over.msgs, fmt.Sprintf("%s x%d exceeds the maximum of %d per GPU (%d on %d GPU(s))",
				pr.Name, d[i], pr.MaxCount, limit, gpus))
			if pr.MaxCount > 0 {
				over.minGPUs = max(over.minGPUs, (int(d[i])+pr.MaxCount-1)/pr.MaxCount)
			}
		}
	}
	if len(over.msgs) > 0 {
		return d, bins, over
	}
	return d, bins, nil
}

// overMax is the ErrBadDemand of a count above what gpus GPUs can hold:
// Plan turns it into an infeasible plan, other callers report it.
type overMax struct {
	msgs []string
	// minGPUs is the fewest GPUs whose per-GPU maxima hold the counts
	// (0: a profile allows none).
	minGPUs int
}

func (e overMax) Error() string        { return strings.Join(e.msgs, "; ") }
func (e overMax) Is(target error) bool { return target == ErrBadDemand }

// wantsOf renders a demand as Want items in catalogue order.
func wantsOf(p *Product, d demand) []Want {
	var out []Want
	for _, i := range displayOrder(p) {
		if pr := p.Profiles[i]; d[i] > 0 {
			out = append(out, Want{Profile: pr.Name, Count: int(d[i])})
		}
	}
	return out
}

// displayOrder lists p's profile indexes largest first (memory slices, then
// compute slices, then catalogue order).
func displayOrder(p *Product) []int {
	order := make([]int, len(p.Profiles))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := p.Profiles[order[a]], p.Profiles[order[b]]
		if pa.MemorySlices != pb.MemorySlices {
			return pa.MemorySlices > pb.MemorySlices
		}
		return pa.ComputeSlices > pb.ComputeSlices
	})
	return order
}

// suggestProfile proposes p's profile nearest to name, preferring the same
// slice count ("3g.20gb" -> "3g.40gb", not "1g.20gb") and the same
// media-extension attribute.
func suggestProfile(name string, p *Product) string {
	g, _, _ := strings.Cut(name, ".")
	me := strings.Contains(name, "+")
	var same []string
	for _, pr := range p.Profiles {
		pg, _, _ := strings.Cut(strings.ToLower(pr.Name), ".")
		if pg == g && strings.Contains(pr.Name, "+") == me {
			same = append(same, pr.Name)
		}
	}
	if s := closest(name, same, 4); s != "" {
		return s
	}
	return closest(name, profileNames(p), 3)
}
