package cpumanager

import (
	"fmt"
	"sort"
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

// OptionMaturity returns the maturity of option in kubelet v1.37 ("alpha",
// "beta", "GA") or "" when the option is unknown: alpha options need the
// CPUManagerPolicyAlphaOptions feature gate (off by default), beta options
// CPUManagerPolicyBetaOptions (on by default).
func OptionMaturity(option string) string {
	switch option {
	case AlignBySocketOption, DistributeCPUsAcrossCoresOption:
		return Alpha
	case DistributeCPUsAcrossNUMAOption:
		return Beta
	case FullPCPUsOnlyOption, StrictCPUReservationOption, PreferAlignByUnCoreCacheOption:
		return Stable
	}
	return ""
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
	switch OptionMaturity(option) {
	case "":
		return fmt.Errorf("unknown CPU Manager Policy option: %q", option)
	case Alpha:
		if !g.AlphaOptions {
			return fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", option)
		}
	case Beta:
		if !g.BetaOptions {
			return fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", option)
		}
	}
	return nil
}

// Options are the parsed static policy options.
type Options struct {
	FullPhysicalCPUsOnly      bool
	DistributeCPUsAcrossNUMA  bool
	AlignBySocket             bool
	DistributeCPUsAcrossCores bool
	StrictCPUReservation      bool
	PreferAlignByUncoreCache  bool
}

// ParseOptions parses cpuManagerPolicyOptions as kubelet's
// NewStaticPolicyOptions does (options are checked in name order, so the
// first error is deterministic; kubelet's map order is random).
func ParseOptions(policyOptions map[string]string, g Gates) (Options, error) {
	var opts Options
	names := make([]string, 0, len(policyOptions))
	for n := range policyOptions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		value := policyOptions[name]
		if err := CheckPolicyOptionAvailable(name, g); err != nil {
			return opts, err
		}
		v, err := strconv.ParseBool(value)
		if err != nil {
			return opts, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		switch name {
		case FullPCPUsOnlyOption:
			opts.FullPhysicalCPUsOnly = v
		case DistributeCPUsAcrossNUMAOption:
			opts.DistributeCPUsAcrossNUMA = v
		case AlignBySocketOption:
			opts.AlignBySocket = v
		case DistributeCPUsAcrossCoresOption:
			opts.DistributeCPUsAcrossCores = v
		case StrictCPUReservationOption:
			opts.StrictCPUReservation = v
		case PreferAlignByUnCoreCacheOption:
			opts.PreferAlignByUncoreCache = v
		}
	}
	if opts.FullPhysicalCPUsOnly && opts.DistributeCPUsAcrossCores {
		return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", FullPCPUsOnlyOption, DistributeCPUsAcrossCoresOption)
	}
	if opts.DistributeCPUsAcrossNUMA && opts.DistributeCPUsAcrossCores {
		return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", DistributeCPUsAcrossNUMAOption, DistributeCPUsAcrossCoresOption)
	}
	if opts.PreferAlignByUncoreCache && opts.DistributeCPUsAcrossCores {
		return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", PreferAlignByUnCoreCacheOption, DistributeCPUsAcrossCoresOption)
	}
	if opts.PreferAlignByUncoreCache && opts.DistributeCPUsAcrossNUMA {
		return opts, fmt.Errorf("static policy options %s and %s can not be used at the same time", PreferAlignByUnCoreCacheOption, DistributeCPUsAcrossNUMAOption)
	}
	return opts, nil
}

// ValidateOptions checks the options against the machine and the Topology
// Manager policy, as kubelet's ValidateStaticPolicyOptions (the typo
// "Topolgy" is kubelet's).
func ValidateOptions(opts Options, topo *CPUTopology, topologyPolicy string) error {
	if opts.AlignBySocket {
		if topologyPolicy == "single-numa-node" {
			return fmt.Errorf("Topolgy manager %s policy is incompatible with CPUManager %s policy option", "single-numa-node", AlignBySocketOption)
		}
		if topo.NumSockets > topo.NumNUMANodes {
			return fmt.Errorf("Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
		}
	}
	return nil
}
