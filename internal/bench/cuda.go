package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CUDA is the Copier of the CUDA driver API, loaded at run time from
// libcuda.so.1 with dlopen (purego, so gpunode needs neither the CUDA
// toolkit to build nor cgo for this). Open fails with ErrNoDriver when the
// library cannot be loaded.
type CUDA struct {
	// Library overrides the file loaded (default libcuda.so.1).
	Library string
}

// cudaLib is libcuda.so.1's functions used here (CUresult is an int32,
// CUdevice an int32, CUcontext a pointer, CUdeviceptr 64 bits).
type cudaLib struct {
	handle                uintptr
	cuInit                func(flags uint32) int32
	cuDriverGetVersion    func(v *int32) int32
	cuDeviceGetByPCIBusId func(dev *int32, bus string) int32
	cuDeviceGetName       func(name *byte, n int32, dev int32) int32
	cuDevicePrimaryRetain func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryRel    func(dev int32) int32
	cuCtxSetCurrent       func(ctx uintptr) int32
	cuCtxSynchronize      func() int32
	cuMemAlloc            func(p *uint64, size uintptr) int32
	cuMemFree             func(p uint64) int32
	cuMemHostRegister     func(p unsafe.Pointer, size uintptr, flags uint32) int32
	cuMemHostUnregister   func(p unsafe.Pointer) int32
	cuMemcpyHtoD          func(dst uint64, src unsafe.Pointer, size uintptr) int32
	cuMemcpyDtoH          func(dst unsafe.Pointer, src uint64, size uintptr) int32
	cuGetErrorString      func(r int32, s **byte) int32
}

func (CUDA) Name() string { return "cuda" }

func loadCUDA(file string) (*cudaLib, error) {
	h, err := purego.Dlopen(file, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s could not be loaded (%v); bench h2d needs the NVIDIA driver's CUDA library", ErrNoDriver, file, err)
	}
	l := &cudaLib{handle: h}
	for _, f := range []struct {
		name string
		fp   any
	}{
		{"cuInit", &l.cuInit}, {"cuDriverGetVersion", &l.cuDriverGetVersion},
		{"cuDeviceGetByPCIBusId", &l.cuDeviceGetByPCIBusId}, {"cuDeviceGetName", &l.cuDeviceGetName},
		{"cuDevicePrimaryCtxRetain", &l.cuDevicePrimaryRetain}, {"cuDevicePrimaryCtxRelease_v2", &l.cuDevicePrimaryRel},
		{"cuCtxSetCurrent", &l.cuCtxSetCurrent}, {"cuCtxSynchronize", &l.cuCtxSynchronize},
		{"cuMemAlloc_v2", &l.cuMemAlloc}, {"cuMemFree_v2", &l.cuMemFree},
		{"cuMemHostRegister_v2", &l.cuMemHostRegister}, {"cuMemHostUnregister", &l.cuMemHostUnregister},
		{"cuMemcpyHtoD_v2", &l.cuMemcpyHtoD}, {"cuMemcpyDtoH_v2", &l.cuMemcpyDtoH},
		{"cuGetErrorString", &l.cuGetErrorString},
	} {
		sym, err := purego.Dlsym(h, f.name)
		if err != nil || sym == 0 {
			_ = purego.Dlclose(h)
			return nil, fmt.Errorf("%w: %s has no %s (driver too old?)", ErrNoDriver, file, f.name)
		}
		purego.RegisterFunc(f.fp, sym)
	}
	return l, nil
}

func (l *cudaLib) check(what string, r int32) error {
	if r == 0 {
		return nil
	}
	var s *byte
	msg := ""
	if l.cuGetErrorString(r, &s) == 0 && s != nil {
		msg = cStringAt(s, 256)
	}
	return fmt.Errorf("%s: CUDA error %d %s", what, r, msg)
}

type cudaDevice struct {
	mu   sync.Mutex
	l    *cudaLib
	dev  int32
	ctx  uintptr
	dptr uint64
	size int
}

// Open initialises the driver, retains the primary context of the GPU at
// bdf and allocates size bytes of device memory.
func (c CUDA) Open(ctx context.Context, bdf string, size int) (CopyDevice, error) {
	file := c.Library
	if file == "" {
		file = "libcuda.so.1"
	}
	l, err := loadCUDA(file)
	if err != nil {
		return nil, err
	}
	if r := l.cuInit(0); r != 0 {
		return nil, fmt.Errorf("%w: %w", ErrNoDriver, l.check("cuInit", r))
	}
	d := &cudaDevice{l: l, size: size}
	if err := l.check("cuDeviceGetByPCIBusId("+bdf+")", l.cuDeviceGetByPCIBusId(&d.dev, bdf)); err != nil {
		return nil, err
	}
	if err := l.check("cuDevicePrimaryCtxRetain", l.cuDevicePrimaryRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	if err := l.check("cuCtxSetCurrent", l.cuCtxSetCurrent(d.ctx)); err != nil {
		_ = l.cuDevicePrimaryRel(d.dev)
		return nil, err
	}
	if err := l.check(fmt.Sprintf("cuMemAlloc(%d)", size), l.cuMemAlloc(&d.dptr, uintptr(size))); err != nil {
		_ = l.cuDevicePrimaryRel(d.dev)
		return nil, err
	}
	return d, nil
}

// Info returns the driver's CUDA version and the name of the GPU at
// bdf, for reports.
func (d *cudaDevice) Info() string {
	var v int32
	_ = d.l.cuDriverGetVersion(&v)
	name := make([]byte, 128)
	_ = d.l.cuDeviceGetName(&name[0], int32(len(name)), d.dev)
	return strings.TrimSpace(fmt.Sprintf("%s (CUDA driver %d.%d)", cStringAt(&name[0], len(name)), v/1000, (v%1000)/10))
}

func (d *cudaDevice) Pin(host []byte) (func() error, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.l.check("cuCtxSetCurrent", d.l.cuCtxSetCurrent(d.ctx)); err != nil {
		return nil, err
	}
	p := unsafe.Pointer(&host[0])
	if err := d.l.check("cuMemHostRegister", d.l.cuMemHostRegister(p, uintptr(len(host)), 0)); err != nil {
		return nil, err
	}
	return func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.l.check("cuMemHostUnregister", d.l.cuMemHostUnregister(p))
	}, nil
}

func (d *cudaDevice) Copy(host []byte, direction string, loops int) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(host) > d.size {
		return 0, fmt.Errorf("host buffer of %d bytes is larger than the device buffer", len(host))
	}
	if err := d.l.check("cuCtxSetCurrent", d.l.cuCtxSetCurrent(d.ctx)); err != nil {
		return 0, err
	}
	p, n := unsafe.Pointer(&host[0]), uintptr(len(host))
	start := time.Now()
	for range loops {
		var r int32
		if direction == HostToDevice {
			r = d.l.cuMemcpyHtoD(d.dptr, p, n)
		} else {
			r = d.l.cuMemcpyDtoH(p, d.dptr, n)
		}
		if err := d.l.check("cuMemcpy "+direction, r); err != nil {
			return 0, err
		}
	}
	if err := d.l.check("cuCtxSynchronize", d.l.cuCtxSynchronize()); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func (d *cudaDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.l.check("cuMemFree", d.l.cuMemFree(d.dptr))
	if e := d.l.check("cuDevicePrimaryCtxRelease", d.l.cuDevicePrimaryRel(d.dev)); err == nil {
		err = e
	}
	return err
}
