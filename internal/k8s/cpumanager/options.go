package cpumanager

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Names of the static policy options (cpuManagerPolicyOptions keys).
const (
	FullPCPUsOnlyOption             = "full-pcpus-only"
	DistributeCPUsAcrossNUMAOption  = "distribute-cpus-across-numa"
	AlignBySocketOption             = "align-by-socket"
	DistributeCPUsAcrossCoresOption = "distribute-cpus-across-cores"
	StrictCPUReservationOption      = "strict-cpu-reservation"
	PreferAlignByUnCoreCacheOption  = "prefer-align-cpus-by-uncorecache"
)

// Maturity levels of the options in kubelet v1.37.
const (
	Alpha  = "alpha"
	Beta   = "beta"
	Stable = "GA"
)

// Options are the parsed static policy options.
type Options struct {
	FullPhysicalCPUsOnly      bool
	DistributeCPUsAcrossNUMA  bool
	AlignBySocket             bool
	DistributeCPUsAcrossCores bool
	StrictCPUReservation      bool
	PreferAlignByUncoreCache  bool
}

// optionSpec describes one option: its maturity in kubelet v1.37 and the
// Options field it sets.
type optionSpec struct {
	maturity string
	field    func(*Options) *bool
}

// lookupOption returns the description of a known option.
func lookupOption(name string) (optionSpec, bool) {
	switch name {
	case FullPCPUsOnlyOption:
		return optionSpec{Stable, func(o *Options) *bool { return &o.FullPhysicalCPUsOnly }}, true
	case DistributeCPUsAcrossNUMAOption:
		return optionSpec{Beta, func(o *Options) *bool { return &o.DistributeCPUsAcrossNUMA }}, true
	case AlignBySocketOption:
		return optionSpec{Alpha, func(o *Options) *bool { return &o.AlignBySocket }}, true
	case DistributeCPUsAcrossCoresOption:
		return optionSpec{Alpha, func(o *Options) *bool { return &o.DistributeCPUsAcrossCores }}, true
	case StrictCPUReservationOption:
		return optionSpec{Stable, func(o *Options) *bool { return &o.StrictCPUReservation }}, true
	case PreferAlignByUnCoreCacheOption:
		return optionSpec{Stable, func(o *Options) *bool { return &o.PreferAlignByUncoreCache }}, true
	}
	return optionSpec{}, false
}

// OptionMaturity returns the maturity of option in kubelet v1.37 ("alpha",
// "beta", "GA") or "" when the option is unknown: alpha options need the
// CPUManagerPolicyAlphaOptions feature gate (off by default), beta options
// CPUManagerPolicyBetaOptions (on by default).
func OptionMaturity(option string) string {
	spec, _ := lookupOption(option)
	return spec.maturity
}

// Gates are the feature gates that make CPU Manager options available.
type Gates struct {
	AlphaOptions bool // CPUManagerPolicyAlphaOptions, default false
	BetaOptions  bool // CPUManagerPolicyBetaOptions, default true
}

// DefaultGates are kubelet v1.37's defaults.
func DefaultGates() Gates { return Gates{AlphaOptions: false, BetaOptions: true} }

// GatesFrom reads the two gates from a KubeletConfiguration featureGates map.
func GatesFrom(featureGates map[string]bool) Gates {
	g := DefaultGates()
	if v, ok := featureGates["CPUManagerPolicyAlphaOptions"]; ok {
		g.AlphaOptions = v
	}
	if v, ok := featureGates["CPUManagerPolicyBetaOptions"]; ok {
		g.BetaOptions = v
	}
	return g
}

// CheckPolicyOptionAvailable returns kubelet's error for an unknown option or
// one whose feature gate is off.
func CheckPolicyOptionAvailable(option string, g Gates) error {
	spec, known := lookupOption(option)
	switch {
	case !known:
		return fmt.Errorf(quoteUnknownOption, option)
	case spec.maturity == Alpha && !g.AlphaOptions:
		return fmt.Errorf(quoteAlphaOptionsOff, option)
	case spec.maturity == Beta && !g.BetaOptions:
		return fmt.Errorf(quoteBetaOptionsOff, option)
	}
	return nil
}

// exclusiveOptions are the pairs kubelet refuses together, in the order it
// checks them (the first pair found is the error).
func exclusiveOptions() [4][2]string {
	return [...][2]string{
		{FullPCPUsOnlyOption, DistributeCPUsAcrossCoresOption},
		{DistributeCPUsAcrossNUMAOption, DistributeCPUsAcrossCoresOption},
		{PreferAlignByUnCoreCacheOption, DistributeCPUsAcrossCoresOption},
		{PreferAlignByUnCoreCacheOption, DistributeCPUsAcrossNUMAOption},
	}
}

// ParseOptions parses cpuManagerPolicyOptions as kubelet's
// NewStaticPolicyOptions does. Options are taken in name order, so the first
// error is deterministic (kubelet walks its map in random order).
func ParseOptions(policyOptions map[string]string, g Gates) (Options, error) {
	var opts Options
	names := make([]string, 0, len(policyOptions))
	for name := range policyOptions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := CheckPolicyOptionAvailable(name, g); err != nil {
			return opts, err
		}
		on, err := strconv.ParseBool(policyOptions[name])
		if err != nil {
			return opts, fmt.Errorf(quoteBadOptionValue, name, err)
		}
		spec, _ := lookupOption(name)
		*spec.field(&opts) = on
	}
	for _, pair := range exclusiveOptions() {
		a, _ := lookupOption(pair[0])
		b, _ := lookupOption(pair[1])
		if *a.field(&opts) && *b.field(&opts) {
			return opts, fmt.Errorf(quoteOptionsExclusive, pair[0], pair[1])
		}
	}
	return opts, nil
}

// ValidateOptions checks the options against the machine and the Topology
// Manager policy, as kubelet's ValidateStaticPolicyOptions.
func ValidateOptions(opts Options, topo *CPUTopology, topologyPolicy string) error {
	const singleNUMA = "single-numa-node"
	switch {
	case !opts.AlignBySocket:
		return nil
	case topologyPolicy == singleNUMA:
		return fmt.Errorf(quoteSocketVsSingleNUMA, singleNUMA, AlignBySocketOption)
	case topo.NumSockets > topo.NumNUMANodes:
		return errors.New(quoteSocketsAboveNUMA)
	}
	return nil
}
