package container

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpunode/gpunode/internal/check"
	"github.com/gpunode/gpunode/internal/userfile"
)

// MountInfo is the mount table gpunode reads.
const MountInfo = "/proc/self/mountinfo"

// maxMounts bounds the mount table.
const maxMounts = 100000

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	ID, Parent int
	Root       string
	MountPoint string
	Options    string
	FSType     string
	Source     string
}

// ParseMountInfo parses /proc/PID/mountinfo (proc(5)): "36 35 98:0 /mnt1
// /mnt2 rw,noatime master:1 - ext3 /dev/root rw". Octal escapes (\040) in
// paths are decoded. A malformed line is an error naming it.
func ParseMountInfo(data []byte) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(out) >= maxMounts {
			return out, fmt.Errorf("%s: more than %d mounts", MountInfo, maxMounts)
		}
		fields := strings.Fields(line)
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 7 || sep < 0 || sep+2 >= len(fields) {
			return out, fmt.Errorf("%s:%d: want 'ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE SOURCE SUPEROPTS'", MountInfo, n)
		}
		id, err1 := strconv.Atoi(fields[0])
		parent, err2 := strconv.Atoi(fields[1])
		if err1 != nil || err2 != nil {
			return out, fmt.Errorf("%s:%d: mount ids %q %q are not numbers", MountInfo, n, fields[0], fields[1])
		}
		out = append(out, Mount{
			ID: id, Parent: parent, Root: unescapeMount(fields[3]), MountPoint: unescapeMount(fields[4]),
			Options: fields[5], FSType: fields[sep+1], Source: unescapeMount(fields[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", MountInfo, err)
	}
	return out, nil
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountOf returns the mount that holds p: the longest mount point that
// is p or a parent of it, the later one on a tie (it is on top).
func MountOf(ms []Mount, p string) (Mount, bool) {
	p = path.Clean("/" + p)
	best, found := -1, false
	var m Mount
	for _, x := range ms {
		mp := path.Clean("/" + x.MountPoint)
		if mp != "/" && p != mp && !strings.HasPrefix(p, mp+"/") {
			continue
		}
		if len(mp) >= best {
			best, m, found = len(mp), x, true
		}
	}
	return m, found
}

// SpecMount is one mount of a container spec: where it lands in the
// container and what backs it.
type SpecMount struct {
	Destination string
	Kind        string // bind, volume, tmpfs, hostPath, emptyDir, ...
	Source      string // host path for bind/hostPath
}

// ContainerSpec is the mounts of a container from docker inspect JSON or
// a Kubernetes Pod.
type ContainerSpec struct {
	Name   string
	Mounts []SpecMount
}

// ParseContainerSpec reads docker inspect JSON (an array of containers,
// or one) or a Pod (YAML or JSON; all containers' volumeMounts).
func ParseContainerSpec(file string, data []byte) ([]ContainerSpec, error) {
	if len(data) > maxConfigBytes {
		return nil, &ParseError{File: file, Reason: fmt.Sprintf("larger than %d bytes", maxConfigBytes)}
	}
	trim := bytes.TrimSpace(data)
	if bytes.HasPrefix(trim, []byte("[")) {
		var ds []dockerInspect
		if err := json.Unmarshal(data, &ds); err != nil {
			return nil, jsonParseError(file, data, err)
		}
		var out []ContainerSpec
		for _, d := range ds {
			out = append(out, d.spec())
		}
		return out, nil
	}
	var probe struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, yamlParseError(file, err)
	}
	if probe.Kind == "Pod" {
		var p pod
		if err := yaml.Unmarshal(data, &p); err != nil {
			return nil, yamlParseError(file, err)
		}
		return p.specs(), nil
	}
	var d dockerInspect
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, jsonParseError(file, data, err)
	}
	return []ContainerSpec{d.spec()}, nil
}

func yamlParseError(file string, err error) error {
	pe := &ParseError{File: file, Reason: err.Error()}
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		pe.Line, _ = strconv.Atoi(m[1])
	}
	return pe
}

type dockerInspect struct {
	Name   string `json:"Name"`
	Mounts []struct {
		Type        string `json:"Type"`
		Source      string `json:"Source"`
		Destination string `json:"Destination"`
	} `json:"Mounts"`
}

func (d dockerInspect) spec() ContainerSpec {
	s := ContainerSpec{Name: strings.TrimPrefix(d.Name, "/")}
	for _, m := range d.Mounts {
		s.Mounts = append(s.Mounts, SpecMount{Destination: m.Destination, Kind: m.Type, Source: m.Source})
	}
	return s
}

type pod struct {
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Containers []struct {
			Name         string `yaml:"name"`
			VolumeMounts []struct {
				Name      string `yaml:"name"`
				MountPath string `yaml:"mountPath"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
		Volumes []map[string]any `yaml:"volumes"`
	} `yaml:"spec"`
}

func (p pod) specs() []ContainerSpec {
	kinds := map[string]SpecMount{}
	for _, v := range p.Spec.Volumes {
		name, _ := v["name"].(string)
		m := SpecMount{Kind: "volume"}
		for k, val := range v {
			if k == "name" {
				continue
			}
			m.Kind = k
			if hp, ok := val.(map[string]any); ok && k == "hostPath" {
				m.Source, _ = hp["path"].(string)
			}
		}
		kinds[name] = m
	}
	var out []ContainerSpec
	for _, c := range p.Spec.Containers {
		s := ContainerSpec{Name: p.Metadata.Name + "/" + c.Name}
		for _, vm := range c.VolumeMounts {
			m := kinds[vm.Name]
			m.Destination = vm.MountPath
			if m.Kind == "" {
				m.Kind = "unknown volume " + vm.Name
			}
			s.Mounts = append(s.Mounts, m)
		}
		out = append(out, s)
	}
	return out
}

// The overlay fixes are advice (how a container is started is not the
// host's to change), printed as "# ..." comments like the other advice so
// that a pasted fix list runs nothing.
const (
	fixBindData = "# mount the data instead of copying it into the image: docker run -v /host/data:%s (or --mount type=bind), a Kubernetes hostPath / PVC volume at %s"
	fixBindHost = "# bind-mount a path from a real filesystem (ext4, xfs, NFS, Lustre) instead of %s"
)

func overlayChecks(h *host, o Options) []check.Check {
	base := check.Check{ID: CheckOverlay, Section: "4.2"}
	if len(o.Data) == 0 && o.ContainerSpec == "" {
		base.Status, base.Current = check.Info, "no data paths given (--data PATH, --container-spec FILE)"
		return []check.Check{base}
	}
	data, err := h.fs.ReadFile(MountInfo)
	if err != nil {
		return []check.Check{errorCheck(CheckOverlay, "4.2", MountInfo, err)}
	}
	mounts, err := ParseMountInfo(data)
	if err != nil {
		return []check.Check{errorCheck(CheckOverlay, "4.2", MountInfo, err)}
	}
	var out []check.Check
	if o.ContainerSpec == "" {
		for i, p := range o.Data {
			if i >= 256 {
				break
			}
			out = append(out, hostPathCheck(mounts, p, p))
		}
		return out
	}
	raw, err := userfile.ReadUnder(h.fs, o.ContainerSpec, o.MaxInputBytes)
	if err != nil {
		return []check.Check{errorCheck(CheckOverlay, "4.2", o.ContainerSpec, err)}
	}
	specs, err := ParseContainerSpec(o.ContainerSpec, raw)
	if err != nil {
		return []check.Check{errorCheck(CheckOverlay, "4.2", o.ContainerSpec, err)}
	}
	for _, s := range specs {
		paths := o.Data
		if len(paths) == 0 {
			for _, m := range s.Mounts {
				paths = append(paths, m.Destination)
			}
		}
		for i, p := range paths {
			if i >= 256 {
				break
			}
			out = append(out, specPathCheck(mounts, s, p))
		}
		if len(paths) == 0 {
			c := base
			c.Subject, c.Status, c.Current = s.Name, check.Info, "no mounts and no --data paths"
			out = append(out, c)
		}
	}
	return out
}

// hostPathCheck judges a path as this mount namespace sees it.
func hostPathCheck(ms []Mount, subject, p string) check.Check {
	c := check.Check{ID: CheckOverlay, Section: "4.2", Subject: subject, Expected: "a bind mount or volume (not overlay)"}
	m, ok := MountOf(ms, p)
	if !ok {
		c.Status, c.Current = check.Error, "no mount holds "+p
		return c
	}
	c.Current = fmt.Sprintf("%s on %s (mounted at %s)", p, m.FSType, m.MountPoint)
	if m.FSType == "overlay" {
		c.Status = check.Drift
		c.Detail = "on overlayfs: every first write copies the file up and lookups walk the image layers"
		c.Fix = []string{fmt.Sprintf(fixBindData, p, p)}
		return c
	}
	c.Status = check.OK
	if m.Root != "/" && m.Root != "" {
		c.Detail = "bind mount of " + m.Root + " from " + m.Source
	}
	return c
}

// specPathCheck judges a path inside a container from its spec: covered
// by a mount (whose host side must not be overlay either), or on the
// container's own overlay root.
func specPathCheck(ms []Mount, s ContainerSpec, p string) check.Check {
	c := check.Check{ID: CheckOverlay, Section: "4.2", Subject: s.Name + ":" + p, Expected: "a bind mount or volume (not overlay)"}
	best := -1
	var m SpecMount
	cp := path.Clean("/" + p)
	for _, x := range s.Mounts {
		d := path.Clean("/" + x.Destination)
		if (cp == d || d == "/" || strings.HasPrefix(cp, d+"/")) && len(d) > best {
			best, m = len(d), x
		}
	}
	if best < 0 {
		c.Status = check.Drift
		c.Current = p + " on the container's overlayfs root (no mount covers it)"
		c.Detail = "data written or read through the image layers pays copy-up and layer lookups"
		c.Fix = []string{fmt.Sprintf(fixBindData, p, p)}
		return c
	}
	c.Current = fmt.Sprintf("%s on a %s mount at %s", p, m.Kind, m.Destination)
	c.Status = check.OK
	if (m.Kind == "bind" || m.Kind == "hostPath") && m.Source != "" {
		if hm, ok := MountOf(ms, m.Source); ok {
			c.Current += " from " + m.Source
			switch {
			case hm.MountPoint == "/" && hm.FSType == "overlay":
				// This mount table is a container's own: the host side
				// of the bind is not visible from here.
				c.Detail = "the host side of the mount is not visible here (this mount table's root is overlay)"
			case hm.FSType == "overlay":
				c.Current += " (overlay)"
				c.Status = check.Drift
				c.Detail = "the host side of the mount is itself on overlayfs"
				c.Fix = []string{fmt.Sprintf(fixBindHost, m.Source)}
			default:
				c.Current += " (" + hm.FSType + ")"
			}
		}
	}
	if m.Kind == "emptyDir" {
		c.Detail = "emptyDir lives on the node's kubelet disk (not overlay)"
	}
	return c
}
