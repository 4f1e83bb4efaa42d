package topology

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxNUMANodes is the number of NUMA ids a Bitmask can hold (ids 0..63), the
// same limit as kubelet's bitmask package.
const MaxNUMANodes = 64

// Bitmask is a set of NUMA node ids 0..63, bit i standing for node i. It has
// the semantics of kubelet's bitmask.BitMask (a uint64).
type Bitmask uint64

// NewBitmask returns the mask holding ids. An id outside 0..63 is an error.
func NewBitmask(ids ...int) (Bitmask, error) {
	var m Bitmask
	for _, id := range ids {
		if id < 0 || id >= MaxNUMANodes {
			return 0, fmt.Errorf("NUMA id %d beyond %d", id, MaxNUMANodes-1)
		}
		m |= 1 << uint(id)
	}
	return m, nil
}

// MustBitmask is NewBitmask for constant ids; it panics on an id out of range.
func MustBitmask(ids ...int) Bitmask {
	m, err := NewBitmask(ids...)
	if err != nil {
		panic(err)
	}
	return m
}

// Ptr returns a pointer to a copy of m, for Hint.Affinity.
func (m Bitmask) Ptr() *Bitmask { return &m }

// Count is the number of ids in m.
func (m Bitmask) Count() int { return bits.OnesCount64(uint64(m)) }

// IsEmpty reports whether m holds no id.
func (m Bitmask) IsEmpty() bool { return m == 0 }

// IsSet reports whether id is in m.
func (m Bitmask) IsSet(id int) bool {
	return id >= 0 && id < MaxNUMANodes && m&(1<<uint(id)) != 0
}

// IsEqual reports whether m and o hold the same ids.
func (m Bitmask) IsEqual(o Bitmask) bool { return m == o }

// IsLessThan reports whether m's uint64 value is below o's ("more
// lower-numbered bits set" in kubelet's words).
func (m Bitmask) IsLessThan(o Bitmask) bool { return m < o }

// IsNarrowerThan reports whether m has fewer ids than o, or as many and a
// lower value (kubelet's BitMask.IsNarrowerThan).
func (m Bitmask) IsNarrowerThan(o Bitmask) bool {
	cm, co := m.Count(), o.Count()
	if cm == co {
		return m < o
	}
	return cm < co
}

// And returns the ids in both m and o.
func (m Bitmask) And(o Bitmask) Bitmask { return m & o }

// Or returns the ids in m or o.
func (m Bitmask) Or(o Bitmask) Bitmask { return m | o }

// Bits returns the ids in m in ascending order (nil for an empty mask).
func (m Bitmask) Bits() []int {
	var out []int
	for v := uint64(m); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// String formats m as a list like "0-2,5" (empty string for no ids).
func (m Bitmask) String() string {
	var b strings.Builder
	ids := m.Bits()
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// IterateBitmasks calls fn for every non-empty subset of ids, in kubelet's
// order (bitmask.IterateBitMasks): by size, then lexicographically by the
// positions in ids. It enumerates 2^len(ids)-1 masks: hint providers use it
// on small sets only.
func IterateBitmasks(ids []int, fn func(Bitmask)) {
	n := len(ids)
	// pick holds the positions in ids of the current subset, increasing;
	// below[k] is the mask of pick[:k], so a step rebuilds only the tail.
	pick := make([]int, n)
	below := make([]Bitmask, n+1)
	for size := 1; size <= n; size++ {
		for k := 0; k < size; k++ {
			pick[k] = k
			below[k+1] = below[k] | 1<<uint(ids[k])
		}
		for {
			fn(below[size])
			// The rightmost position that can still move right moves
			// one step; the positions after it follow it closely.
			j := size - 1
			for j >= 0 && pick[j] == n-size+j {
				j--
			}
			if j < 0 {
				break
			}
			pick[j]++
			below[j+1] = below[j] | 1<<uint(ids[pick[j]])
			for k := j + 1; k < size; k++ {
				pick[k] = pick[k-1] + 1
				below[k+1] = below[k] | 1<<uint(ids[pick[k]])
			}
		}
	}
}
