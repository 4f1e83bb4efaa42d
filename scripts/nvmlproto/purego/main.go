// Command purego is the NVML-without-cgo prototype of the decision in
// docs/ARCHITECTURE.md ("NVML: cgo or purego"): built with CGO_ENABLED=0,
// it loads libnvidia-ml.so.1 with dlopen (purego) and prints, for every
// GPU, what 'gpunode gpu status' starts from (index, bus id, UUID, name),
// as scripts/nvmlproto/cgo does through go-nvml. Run against the stub:
//
//	testdata/nvml-stub/build.sh /tmp/stub
//	CGO_ENABLED=0 go build -o /tmp/nvml-purego ./scripts/nvmlproto/purego
//	GPUNODE_NVML_STUB=testdata/nvml-stub/dgx-h100.json LD_LIBRARY_PATH=/tmp/stub /tmp/nvml-purego
//
// scripts/nvmlproto/measure.sh measures both (start-up, RSS, size); main_test.go
// runs this one against the stub, built without cgo.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/ebitengine/purego"
)

// pciInfo is nvmlPciInfo_t (NVML's nvml.h: a 16-byte legacy bus id, five
// unsigned ints, a 32-byte bus id).
type pciInfo struct {
	busIDLegacy                                      [16]byte
	domain, bus, device, pciDeviceID, pciSubSystemID uint32
	busID                                            [32]byte
}

type lib struct {
	init      func() int32
	shutdown  func() int32
	driver    func(buf *byte, n uint32) int32
	count     func(n *uint32) int32
	handle    func(i uint32, dev *uintptr) int32
	uuid      func(dev uintptr, buf *byte, n uint32) int32
	name      func(dev uintptr, buf *byte, n uint32) int32
	pci       func(dev uintptr, p *pciInfo) int32
	errString func(r int32) string
}

func load() (*lib, error) {
	h, err := purego.Dlopen("libnvidia-ml.so.1", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("NVML library libnvidia-ml.so.1 not found: %w", err)
	}
	l := &lib{}
	for _, f := range []struct {
		sym string
		fp  any
	}{
		{"nvmlInit_v2", &l.init}, {"nvmlShutdown", &l.shutdown}, {"nvmlSystemGetDriverVersion", &l.driver},
		{"nvmlDeviceGetCount_v2", &l.count}, {"nvmlDeviceGetHandleByIndex_v2", &l.handle},
		{"nvmlDeviceGetUUID", &l.uuid}, {"nvmlDeviceGetName", &l.name}, {"nvmlDeviceGetPciInfo_v3", &l.pci},
		{"nvmlErrorString", &l.errString},
	} {
		sym, err := purego.Dlsym(h, f.sym)
		if err != nil {
			return nil, fmt.Errorf("libnvidia-ml.so.1: %s: %w", f.sym, err)
		}
		purego.RegisterFunc(f.fp, sym)
	}
	return l, nil
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func run() error {
	l, err := load()
	if err != nil {
		return err
	}
	if r := l.init(); r != 0 {
		return fmt.Errorf("nvmlInit_v2: %s (%d)", l.errString(r), r)
	}
	defer l.shutdown()
	var buf [96]byte
	if r := l.driver(&buf[0], uint32(len(buf))); r == 0 {
		fmt.Printf("driver %s\n", cstr(buf[:]))
	}
	var n uint32
	if r := l.count(&n); r != 0 {
		return fmt.Errorf("nvmlDeviceGetCount_v2: %s", l.errString(r))
	}
	for i := range min(n, 64) {
		var dev uintptr
		if r := l.handle(i, &dev); r != 0 {
			return fmt.Errorf("GPU %d: nvmlDeviceGetHandleByIndex_v2: %s", i, l.errString(r))
		}
		var p pciInfo
		var uuid, name [96]byte
		if r := l.pci(dev, &p); r != 0 {
			return fmt.Errorf("GPU %d: nvmlDeviceGetPciInfo_v3: %s", i, l.errString(r))
		}
		l.uuid(dev, &uuid[0], uint32(len(uuid)))
		l.name(dev, &name[0], uint32(len(name)))
		fmt.Printf("%d %s %s %s\n", i, cstr(p.busID[:]), cstr(uuid[:]), cstr(name[:]))
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nvml-purego:", err)
		os.Exit(3)
	}
}
