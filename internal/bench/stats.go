package bench

import (
	"math"
	"slices"

	"k8s.io/utils/cpuset"
)

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// RelSpread is the relative spread of xs: 1.4826 times the median absolute
// deviation over the median (a robust standard deviation, relative), 0 for
// fewer than two samples or a zero median.
func RelSpread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Median(xs)
	if m == 0 {
		return 0
	}
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return 1.4826 * Median(dev) / math.Abs(m)
}

// MinMax returns the smallest and largest of xs.
func MinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func cpusetOf(cpus []int) cpuset.CPUSet { return cpuset.New(cpus...) }
