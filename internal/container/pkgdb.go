package container

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"strings"

	"github.com/gpunode/gpunode/internal/hostfs"
)

// DpkgStatus is Debian's package database.
const DpkgStatus = "/var/lib/dpkg/status"

// maxPackages bounds the packages read from the database.
const maxPackages = 100000

// readDpkg returns the installed packages of the dpkg database with their
// versions (epoch dropped). A host without dpkg has none.
func readDpkg(h *hostfs.FS) (map[string]string, error) {
	data, err := h.ReadFile(DpkgStatus)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return map[string]string{}, err
	}
	return parseDpkg(data), nil
}

func parseDpkg(data []byte) map[string]string {
	out := map[string]string{}
	var name, ver string
	installed := false
	flush := func() {
		if name != "" && installed && len(out) < maxPackages {
			out[name] = ver
		}
		name, ver, installed = "", "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "Package: "):
			name = strings.TrimSpace(strings.TrimPrefix(line, "Package: "))
		case strings.HasPrefix(line, "Status: "):
			installed = strings.HasSuffix(strings.TrimSpace(line), " installed")
		case strings.HasPrefix(line, "Version: "):
			ver = strings.TrimSpace(strings.TrimPrefix(line, "Version: "))
			if _, v, ok := strings.Cut(ver, ":"); ok {
				ver = v
			}
		}
	}
	flush()
	return out
}

// upstreamVersion is the leading dotted-number part of a package version
// ("27.3.1-1~ubuntu.22.04~jammy" -> "27.3.1", "1.7.24-0ubuntu1" -> "1.7.24").
func upstreamVersion(v string) string {
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.') {
		end++
	}
	return strings.TrimSuffix(v[:end], ".")
}
