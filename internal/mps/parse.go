package mps

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Process is one line of the control daemon's 'ps' output: an MPS client
// and the server it is attached to.
type Process struct {
	PID       int    `json:"pid"`
	ID        int    `json:"id"`
	Server    int    `json:"server"`
	Device    string `json:"device"`
	Namespace string `json:"namespace,omitempty"`
	Command   string `json:"command"`
}

// ParsePS parses the output of 'echo ps | nvidia-cuda-mps-control':
//
//	PID       ID        SERVER         DEVICE                    NAMESPACE      COMMAND
//	3817508   1         3817822        GPU-f707b56f-f3ae-f293    4026531836     .../python3
//
// Columns are found by header name (NAMESPACE is missing on older drivers);
// COMMAND is the rest of the line and may contain spaces. Empty output (no
// clients) parses to no processes.
func ParsePS(out string) ([]Process, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cols []string
	procs := []Process{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		if cols == nil {
			if f[0] != "PID" {
				return nil, fmt.Errorf("mps ps: line %d: want a header starting with PID, got %q", line, text)
			}
			cols = f
			if cols[len(cols)-1] != "COMMAND" {
				return nil, fmt.Errorf("mps ps: line %d: header must end with COMMAND", line)
			}
			continue
		}
		if len(f) < len(cols) {
			return nil, fmt.Errorf("mps ps: line %d: %d fields, want %d (%s)", line, len(f), len(cols), strings.Join(cols, " "))
		}
		var p Process
		for i, c := range cols[:len(cols)-1] {
			v := f[i]
			var err error
			switch c {
			case "PID":
				p.PID, err = strconv.Atoi(v)
			case "ID":
				p.ID, err = strconv.Atoi(v)
			case "SERVER":
				p.Server, err = strconv.Atoi(v)
			case "DEVICE":
				p.Device = v
			case "NAMESPACE":
				p.Namespace = v
			}
			if err != nil {
				return nil, fmt.Errorf("mps ps: line %d: %s %q: not a number", line, c, v)
			}
		}
		if p.PID <= 0 {
			return nil, fmt.Errorf("mps ps: line %d: PID %d", line, p.PID)
		}
		p.Command = strings.Join(f[len(cols)-1:], " ")
		procs = append(procs, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mps ps: %w", err)
	}
	return procs, nil
}

// Partition is one row of 'lspart'. The row of a GPU as a whole has an empty
// ID and reports free/used chunks and SMs; a partition row reports what it
// uses. Counts that lspart prints as "-" are nil.
type Partition struct {
	GPU        string `json:"gpu"`
	ID         string `json:"id,omitempty"`
	FreeChunks *int   `json:"freeChunks,omitempty"`
	UsedChunks *int   `json:"usedChunks,omitempty"`
	FreeSMs    *int   `json:"freeSMs,omitempty"`
	UsedSMs    *int   `json:"usedSMs,omitempty"`
	// Clients is "Yes" when a client uses the partition ("" for "-").
	Clients string `json:"clients,omitempty"`
}

// ParseLsPart parses the output of 'echo lspart | nvidia-cuda-mps-control'
// (two header lines, then "GPU Partition freeChunk usedChunk freeSM usedSM
// clients" rows; "-" means not applicable).
func ParseLsPart(out string) ([]Partition, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	parts := []Partition{}
	header := false
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !header {
			if f[0] != "GPU" || len(f) < 2 || f[1] != "Partition" {
				return nil, fmt.Errorf("lspart: line %d: want a header starting with \"GPU Partition\", got %q", line, sc.Text())
			}
			header = true
			continue
		}
		if f[0] == "chunk" { // second header line
			continue
		}
		if len(f) != 7 {
			return nil, fmt.Errorf("lspart: line %d: %d fields, want 7", line, len(f))
		}
		p := Partition{GPU: f[0]}
		if f[1] != "-" {
			p.ID = f[1]
		}
		nums := []**int{&p.FreeChunks, &p.UsedChunks, &p.FreeSMs, &p.UsedSMs}
		for i, dst := range nums {
			v := f[2+i]
			if v == "-" {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("lspart: line %d: column %d %q: not a count", line, 3+i, v)
			}
			*dst = &n
		}
		if f[6] != "-" {
			p.Clients = f[6]
		}
		parts = append(parts, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lspart: %w", err)
	}
	if !header && len(parts) == 0 && strings.TrimSpace(out) != "" {
		return nil, errors.New("lspart: no header")
	}
	return parts, nil
}

// ParsePartitionAdd parses the reply to 'sm_partition add <GPU> <chunks>':
// the partition's full name "<GPU UUID>/<partition id>", which is the value
// of CUDA_MPS_SM_PARTITION for clients.
func ParsePartitionAdd(out string) (string, error) {
	s := strings.TrimSpace(out)
	gpuID, part, ok := strings.Cut(s, "/")
	if !ok || !strings.HasPrefix(gpuID, "GPU-") || part == "" || strings.ContainsAny(s, " \t\n") {
		return "", fmt.Errorf("sm_partition add: unexpected reply %q (want <GPU UUID>/<partition>)", s)
	}
	return s, nil
}
