package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ldCacheMagic starts glibc's ld.so.cache in the format glibc has written
// since 2.32 (and appended to the old format before that).
const ldCacheMagic = "glibc-ld.so.cache1.1"

// ldCacheHeader is the size of the new-format header: magic and version
// (20 bytes), library count, string-table length, flags and padding, the
// extension offset and three unused words.
const (
	ldCacheHeader = 48
	ldCacheEntry  = 24 // flags, key, value, osversion (4 bytes each), hwcap (8)
	ldCacheMaxLib = 1 << 20
)

// LDCacheEntry is one library of ld.so.cache.
type LDCacheEntry struct {
	Name string // soname, e.g. libjemalloc.so.2
	Path string // file, e.g. /lib/x86_64-linux-gnu/libjemalloc.so.2
	// Flags is the entry's type word (ELF class and architecture; 0x0303 is
	// x86-64 libc6).
	Flags int32
}

// ParseLDCache reads the library list of an ld.so.cache file (the new
// format, alone or after the old one). String offsets are relative to the
// start of the new-format header.
func ParseLDCache(b []byte) ([]LDCacheEntry, error) {
	off := bytes.Index(b, []byte(ldCacheMagic))
	if off < 0 {
		return nil, errors.New("ld.so.cache: no " + ldCacheMagic + " header")
	}
	d := b[off:]
	if len(d) < ldCacheHeader {
		return nil, errors.New("ld.so.cache: truncated header")
	}
	n := binary.LittleEndian.Uint32(d[20:24])
	if n > ldCacheMaxLib || uint64(ldCacheHeader)+uint64(n)*ldCacheEntry > uint64(len(d)) {
		return nil, fmt.Errorf("ld.so.cache: %d entries do not fit in %d bytes", n, len(d))
	}
	out := make([]LDCacheEntry, 0, n)
	for i := range int(n) {
		e := d[ldCacheHeader+i*ldCacheEntry:]
		key := binary.LittleEndian.Uint32(e[4:8])
		val := binary.LittleEndian.Uint32(e[8:12])
		name, ok1 := cString(d, key)
		path, ok2 := cString(d, val)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("ld.so.cache: entry %d: string offset outside the file", i)
		}
		out = append(out, LDCacheEntry{Name: name, Path: path, Flags: int32(binary.LittleEndian.Uint32(e[0:4]))})
	}
	return out, nil
}

func cString(d []byte, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(d)) {
		return "", false
	}
	s := d[off:]
	end := bytes.IndexByte(s, 0)
	if end < 0 || end > 4096 {
		return "", false
	}
	return string(s[:end]), true
}
