package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gpunode/gpunode/internal/hostfs"
	"github.com/gpunode/gpunode/internal/yamljson"
)

// fake is a backend described by a YAML or JSON file holding a Status.
type fake struct {
	mu     sync.Mutex
	status Status
}

var _ Backend = (*fake)(nil)

// OpenFake reads the fake GPU description at host path p. A missing file
// returns an error that wraps fs.ErrNotExist.
func OpenFake(host *hostfs.FS, p string) (Backend, error) {
	data, err := host.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("fake GPU file: %w", err)
	}
	st, err := ParseFake(data, host.Path(p))
	if err != nil {
		return nil, err
	}
	return NewFake(st), nil
}

// NewFake returns a fake backend serving st.
func NewFake(st Status) Backend {
	st.Backend = KindFake
	st.normalize()
	return &fake{status: st}
}

// ParseFake parses a fake GPU description (YAML or JSON, the schema of
// 'gpunode gpu status -o yaml'); unknown fields are errors. Files in the
// older schema (pciAddress, memoryMiB; see fakelegacy.go) are read too. name
// is used in error messages.
func ParseFake(data []byte, name string) (Status, error) {
	var file fakeFileStatus
	if err := yamljson.UnmarshalStrict(data, &file); err != nil {
		return Status{}, fmt.Errorf("%s: %w", name, err)
	}
	st, err := file.status()
	if err != nil {
		return Status{}, fmt.Errorf("%s: %w", name, err)
	}
	if st.SchemaVersion != "" && st.SchemaVersion != SchemaVersion {
		return Status{}, fmt.Errorf("%s: schemaVersion: %q is not %q", name, st.SchemaVersion, SchemaVersion)
	}
	idx := map[int]bool{}
	uuids := map[string]bool{}
	for i, g := range st.GPUs {
		field := fmt.Sprintf("%s: gpus[%d]", name, i)
		if g.UUID == "" {
			return Status{}, fmt.Errorf("%s.uuid: missing", field)
		}
		if uuids[g.UUID] {
			return Status{}, fmt.Errorf("%s.uuid: duplicate %q", field, g.UUID)
		}
		uuids[g.UUID] = true
		if g.Index < 0 || idx[g.Index] {
			return Status{}, fmt.Errorf("%s.index: %d is negative or duplicate", field, g.Index)
		}
		idx[g.Index] = true
		if _, err := NormalizePCIAddress(g.PCIAddress); err != nil {
			return Status{}, fmt.Errorf("%s.bdf: %w", field, err)
		}
		for j, l := range g.NVLinks {
			if l.RemotePCIAddress == "" {
				continue
			}
			a, err := NormalizePCIAddress(l.RemotePCIAddress)
			if err != nil {
				return Status{}, fmt.Errorf("%s.nvlinks[%d].remoteBdf: %w", field, j, err)
			}
			st.GPUs[i].NVLinks[j].RemotePCIAddress = a
		}
		if c := g.Clocks.Locked; c != nil && c.MinMHz > c.MaxMHz {
			return Status{}, fmt.Errorf("%s.clocks.locked: minMHz %d > maxMHz %d", field, c.MinMHz, c.MaxMHz)
		}
	}
	st.Backend = KindFake
	st.normalize()
	return st, nil
}

func (f *fake) Name() string { return KindFake }

func (f *fake) Status(ctx context.Context) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Deep copy, so callers never alias the backend's state.
	data, err := json.Marshal(f.status)
	if err != nil {
		return Status{}, err
	}
	var out Status
	if err := json.Unmarshal(data, &out); err != nil {
		return Status{}, err
	}
	return out, nil
}

func (f *fake) gpu(uuid string) (*GPU, error) {
	for i := range f.status.GPUs {
		if f.status.GPUs[i].UUID == uuid {
			return &f.status.GPUs[i], nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownGPU, uuid)
}

func (f *fake) SetPersistence(ctx context.Context, uuid string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpu(uuid)
	if err != nil {
		return err
	}
	g.Persistence = &on
	return nil
}

func (f *fake) LockClocks(ctx context.Context, uuid string, r ClockRange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpu(uuid)
	if err != nil {
		return err
	}
	if g.Clocks.MaxGraphicsMHz != 0 && r.MaxMHz > g.Clocks.MaxGraphicsMHz {
		return fmt.Errorf("GPU %s: %d MHz is above the maximum graphics clock %d MHz", uuid, r.MaxMHz, g.Clocks.MaxGraphicsMHz)
	}
	g.Clocks.Locked = &r
	g.ClockEvents = DecodeClockEvents(g.ClockEvents.Mask | ReasonApplicationsClocks)
	return nil
}

func (f *fake) ResetClocks(ctx context.Context, uuid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, err := f.gpu(uuid)
	if err != nil {
		return err
	}
	g.Clocks.Locked = nil
	g.ClockEvents = DecodeClockEvents(g.ClockEvents.Mask &^ ReasonApplicationsClocks)
	return nil
}

func (f *fake) Close() error { return nil }
