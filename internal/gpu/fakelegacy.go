package gpu

import "fmt"

// Fake GPU files (and captures) written before gpunode named every PCI
// address "bdf" and every size in bytes carry the old keys: pciAddress,
// remotePciAddress, memoryMiB and memoryUsedMiB. ParseFake reads them into
// the new fields through these input-only shapes; 'gpu status' and capture
// only write the new keys. In each shape the outer field of a JSON name
// hides the embedded one, so the nested lists decode into their own
// legacy-aware shapes; every other key goes to the embedded type and an
// unknown key is still an error.

type fakeFileStatus struct {
	Status
	GPUs []fakeFileGPU `json:"gpus"`
}

type fakeFileGPU struct {
	GPU
	OldPCIAddress    string                `json:"pciAddress,omitempty"`
	OldMemoryMiB     *uint64               `json:"memoryMiB,omitempty"`
	OldMemoryUsedMiB *uint64               `json:"memoryUsedMiB,omitempty"`
	NVLinks          []fakeFileNVLink      `json:"nvlinks,omitempty"`
	NVLinkPeers      []fakeFileNVLinkPeer  `json:"nvlinkPeers,omitempty"`
	MIGInstances     []fakeFileMIGInstance `json:"migInstances,omitempty"`
}

type fakeFileNVLink struct {
	NVLink
	OldRemotePCIAddress string `json:"remotePciAddress,omitempty"`
}

type fakeFileNVLinkPeer struct {
	NVLinkPeer
	OldPCIAddress string `json:"pciAddress,omitempty"`
}

type fakeFileMIGInstance struct {
	MIGInstance
	OldMemoryMiB     *uint64              `json:"memoryMiB,omitempty"`
	ComputeInstances []fakeFileMIGCompute `json:"computeInstances,omitempty"`
}

type fakeFileMIGCompute struct {
	MIGCompute
	OldMemoryUsedMiB *uint64 `json:"memoryUsedMiB,omitempty"`
}

// maxMiB bounds an old MiB value so that the byte count fits in uint64.
const maxMiB = 1<<44 - 1

// oldString fills *dst from an old key's value; both keys set is an error.
func oldString(dst *string, old, newKey, oldKey string) error {
	if old == "" {
		return nil
	}
	if *dst != "" {
		return fmt.Errorf("%s and %s (its old name) are both set; keep %s", newKey, oldKey, newKey)
	}
	*dst = old
	return nil
}

// oldMiB fills a byte count from an old MiB key's value.
func oldMiB(dst *uint64, old *uint64, newKey, oldKey string) error {
	if old == nil {
		return nil
	}
	if *dst != 0 {
		return fmt.Errorf("%s and %s (the old key, in MiB) are both set; keep %s", newKey, oldKey, newKey)
	}
	if *old > maxMiB {
		return fmt.Errorf("%s: %d MiB is too large", oldKey, *old)
	}
	*dst = *old << 20
	return nil
}

// oldMiBPtr is oldMiB for an optional byte count.
func oldMiBPtr(dst **uint64, old *uint64, newKey, oldKey string) error {
	if old == nil {
		return nil
	}
	if *dst != nil {
		return fmt.Errorf("%s and %s (the old key, in MiB) are both set; keep %s", newKey, oldKey, newKey)
	}
	var b uint64
	if err := oldMiB(&b, old, newKey, oldKey); err != nil {
		return err
	}
	*dst = &b
	return nil
}

// status converts the file's shape into a Status; errors name the field.
func (f *fakeFileStatus) status() (Status, error) {
	st := f.Status
	st.GPUs = make([]GPU, 0, len(f.GPUs))
	for i := range f.GPUs {
		g, err := f.GPUs[i].gpu()
		if err != nil {
			return Status{}, fmt.Errorf("gpus[%d].%w", i, err)
		}
		st.GPUs = append(st.GPUs, g)
	}
	return st, nil
}

func (f *fakeFileGPU) gpu() (GPU, error) {
	g := f.GPU
	if err := oldString(&g.PCIAddress, f.OldPCIAddress, "bdf", "pciAddress"); err != nil {
		return GPU{}, err
	}
	if err := oldMiB(&g.MemoryBytes, f.OldMemoryMiB, "memoryBytes", "memoryMiB"); err != nil {
		return GPU{}, err
	}
	if err := oldMiBPtr(&g.MemoryUsedBytes, f.OldMemoryUsedMiB, "memoryUsedBytes", "memoryUsedMiB"); err != nil {
		return GPU{}, err
	}
	g.NVLinks = nil
	for j, l := range f.NVLinks {
		n := l.NVLink
		if err := oldString(&n.RemotePCIAddress, l.OldRemotePCIAddress, "remoteBdf", "remotePciAddress"); err != nil {
			return GPU{}, fmt.Errorf("nvlinks[%d].%w", j, err)
		}
		g.NVLinks = append(g.NVLinks, n)
	}
	g.NVLinkPeers = nil
	for j, p := range f.NVLinkPeers {
		n := p.NVLinkPeer
		if err := oldString(&n.PCIAddress, p.OldPCIAddress, "bdf", "pciAddress"); err != nil {
			return GPU{}, fmt.Errorf("nvlinkPeers[%d].%w", j, err)
		}
		g.NVLinkPeers = append(g.NVLinkPeers, n)
	}
	g.MIGInstances = nil
	for j, m := range f.MIGInstances {
		gi := m.MIGInstance
		if err := oldMiB(&gi.MemoryBytes, m.OldMemoryMiB, "memoryBytes", "memoryMiB"); err != nil {
			return GPU{}, fmt.Errorf("migInstances[%d].%w", j, err)
		}
		gi.ComputeInstances = nil
		for k, c := range m.ComputeInstances {
			ci := c.MIGCompute
			if err := oldMiBPtr(&ci.MemoryUsedBytes, c.OldMemoryUsedMiB, "memoryUsedBytes", "memoryUsedMiB"); err != nil {
				return GPU{}, fmt.Errorf("migInstances[%d].computeInstances[%d].%w", j, k, err)
			}
			gi.ComputeInstances = append(gi.ComputeInstances, ci)
		}
		g.MIGInstances = append(g.MIGInstances, gi)
	}
	return g, nil
}
