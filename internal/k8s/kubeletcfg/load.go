package kubeletcfg

import (
	"bytes"
	"errors"
	"fmt"
	"maps"

	"sigs.k8s.io/yaml"

	"github.com/gpunode/gpunode/internal/k8s/topology"
	"github.com/gpunode/gpunode/internal/sysfmt"

	"github.com/gpunode/gpunode/internal/userfile"
	"github.com/gpunode/gpunode/internal/yamlpos"
)

// The apiVersion and kind of a KubeletConfiguration file.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// Policy names as KubeletConfiguration spells them.
const (
	CPUPolicyNone      = "none"
	CPUPolicyStatic    = "static"
	MemoryPolicyNone   = "None"
	MemoryPolicyStatic = "Static"
)

// defaultEvictionHard is kubelet's eviction.DefaultEvictionHard on Linux.
func defaultEvictionHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// Config is a loaded KubeletConfiguration with kubelet's defaults for the
// resource managers applied.
type Config struct {
	// Name is the file name (or "-") for messages.
	Name string
	// KC is the decoded configuration, defaults applied.
	KC KubeletConfiguration
	// EvictionHardDefaulted is true when evictionHard was absent and
	// kubelet's defaults apply.
	EvictionHardDefaulted bool
}

// Load reads and decodes a KubeletConfiguration file, at most limit bytes
// (--max-input-bytes; limit <= 0: userfile.DefaultMaxBytes).
func Load(path string, limit int64) (*Config, error) {
	b, err := userfile.Read(path, limit)
	if err != nil {
		return nil, fmt.Errorf("kubelet config: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes a KubeletConfiguration strictly; errors read
// "NAME:LINE: field: reason" (the line when the field is found).
func Parse(b []byte, name string) (*Config, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty KubeletConfiguration", name)
	}
	kc, err := parse(b)
	if err != nil {
		return nil, yamlpos.Wrap(name, b, err)
	}
	return New(name, kc), nil
}

// parse decodes and checks b; errors start with the field they are about.
func parse(b []byte) (KubeletConfiguration, error) {
	var kc KubeletConfiguration
	if err := yamlpos.WrongKind(b, Kind, APIVersion+" "+Kind); err != nil {
		return kc, err
	}
	if err := yaml.UnmarshalStrict(b, &kc); err != nil {
		return kc, err
	}
	switch {
	case kc.APIVersion == "":
		return kc, fmt.Errorf("apiVersion: required (%s)", APIVersion)
	case kc.APIVersion != APIVersion:
		return kc, fmt.Errorf("apiVersion: %q is not supported (want %s)", kc.APIVersion, APIVersion)
	case kc.Kind != Kind:
		return kc, fmt.Errorf("kind: %q, want %s", kc.Kind, Kind)
	}
	// kubelet's cpuset.Parse allocates per id: refuse an absurd list here,
	// before lint or admit parse it (a syntax error is lint's to report).
	if err := sysfmt.CheckCPUList(kc.ReservedSystemCPUs); errors.Is(err, sysfmt.ErrCPUListBound) {
		return kc, fmt.Errorf("reservedSystemCPUs: %w", err)
	}
	return kc, nil
}

// New wraps a decoded KubeletConfiguration and applies kubelet's defaults
// for the resource managers (SetDefaults_KubeletConfiguration and kubelet's
// loader for evictionHard); kc's maps are not modified.
func New(name string, kc KubeletConfiguration) *Config {
	c := &Config{Name: name, KC: kc}
	c.applyDefaults()
	return c
}

func (c *Config) applyDefaults() {
	kc := &c.KC
	if kc.CPUManagerPolicy == "" {
		kc.CPUManagerPolicy = CPUPolicyNone
	}
	if kc.MemoryManagerPolicy == "" {
		kc.MemoryManagerPolicy = MemoryPolicyNone
	}
	if kc.TopologyManagerPolicy == "" {
		kc.TopologyManagerPolicy = topology.PolicyNone
	}
	if kc.TopologyManagerScope == "" {
		kc.TopologyManagerScope = topology.ScopeContainer
	}
	if kc.EvictionHard == nil {
		kc.EvictionHard = defaultEvictionHard()
		c.EvictionHardDefaulted = true
	} else if kc.MergeDefaultEvictionSettings != nil && *kc.MergeDefaultEvictionSettings {
		kc.EvictionHard = maps.Clone(kc.EvictionHard)
		for k, v := range defaultEvictionHard() {
			if _, ok := kc.EvictionHard[k]; !ok {
				kc.EvictionHard[k] = v
			}
		}
	}
}
