package mps

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpunode/gpunode/internal/output"
)

// ChunkSMs is the number of SMs in one static-partition chunk: 8 on Hopper
// and newer (compute capability 9.0+), 4 before. lspart is authoritative on a
// live daemon (its used-SM column divided by used chunks).
func ChunkSMs(arch, computeCapability string) int {
	switch strings.ToLower(arch) {
	case "hopper", "blackwell":
		return 8
	case "ampere", "ada", "turing", "volta", "pascal":
		return 4
	}
	if maj, _, ok := strings.Cut(computeCapability, "."); ok {
		if n, err := strconv.Atoi(maj); err == nil && n >= 9 {
			return 8
		}
	}
	return 4
}

// Request is one wanted partition: a number of chunks, or a number of SMs
// (rounded up to whole chunks).
type Request struct {
	Chunks int
	SMs    int
}

// ParseRequests parses "5,3,2" (chunks) or "40sm,24sm,16sm" (SMs).
func ParseRequests(s string) ([]Request, error) {
	var out []Request
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		isSM := strings.HasSuffix(f, "sm")
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(f, "sm"), "c"))
		if err != nil || n <= 0 || n > 100000 {
			return nil, fmt.Errorf("partition %q: want a positive number of chunks (5) or SMs (40sm)", f)
		}
		if isSM {
			out = append(out, Request{SMs: n})
		} else {
			out = append(out, Request{Chunks: n})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions requested")
	}
	return out, nil
}

// PartitionPlanSchema is the schema of PartitionPlan.
const PartitionPlanSchema = "gpunode.mps.partition/v1"

// PartitionPlan maps requested partitions to chunks and SMs on one GPU.
type PartitionPlan struct {
	SchemaVersion string `json:"schemaVersion"`
	GPU           int    `json:"gpu"`
	UUID          string `json:"uuid,omitempty"`
	SMCount       int    `json:"smCount"`
	ChunkSMs      int    `json:"chunkSMs"`
	// TotalChunks is the GPU's chunk count: from lspart when a daemon runs
	// (ChunksFrom "lspart"), else SMCount / ChunkSMs ("estimate").
	TotalChunks int                `json:"totalChunks"`
	ChunksFrom  string             `json:"chunksFrom"`
	Partitions  []PlannedPartition `json:"partitions"`
	FreeChunks  int                `json:"freeChunks"`
	Feasible    bool               `json:"feasible"`
	Reason      string             `json:"reason,omitempty"`
}

// PlannedPartition is one partition of a plan.
type PlannedPartition struct {
	Index  int `json:"index"`
	Chunks int `json:"chunks"`
	// SMs is Chunks x ChunkSMs (the driver may hand left-over SMs to a
	// partition; lspart shows the final count).
	SMs     int    `json:"sms"`
	Command string `json:"command"`
}

// PlanPartitions lays requests out on a GPU with smCount SMs and chunkSMs
// SMs per chunk; totalChunks > 0 overrides the chunk count (from lspart).
func PlanPartitions(gpuIndex int, uuid string, smCount, chunkSMs, totalChunks int, req []Request) PartitionPlan {
	p := PartitionPlan{SchemaVersion: PartitionPlanSchema, GPU: gpuIndex, UUID: uuid, SMCount: smCount, ChunkSMs: chunkSMs,
		Partitions: []PlannedPartition{}, ChunksFrom: "lspart"}
	if chunkSMs <= 0 {
		p.Reason = "chunk size unknown"
		return p
	}
	if totalChunks <= 0 {
		totalChunks = smCount / chunkSMs
		p.ChunksFrom = "estimate"
	}
	p.TotalChunks = totalChunks
	used := 0
	target := uuid
	if target == "" {
		target = "<GPU UUID>"
	}
	for i, r := range req {
		c := r.Chunks
		if r.SMs > 0 {
			c = (r.SMs + chunkSMs - 1) / chunkSMs
		}
		used += c
		p.Partitions = append(p.Partitions, PlannedPartition{Index: i, Chunks: c, SMs: c * chunkSMs,
			Command: fmt.Sprintf("echo \"sm_partition add %s %d\" | %s", target, c, ControlBinary)})
	}
	p.FreeChunks = totalChunks - used
	p.Feasible = used <= totalChunks && totalChunks > 0
	if !p.Feasible {
		p.Reason = fmt.Sprintf("%d chunks requested (%d SMs), the GPU has %d chunks of %d SMs (%d SMs)",
			used, used*chunkSMs, totalChunks, chunkSMs, totalChunks*chunkSMs)
		p.FreeChunks = 0
	}
	return p
}

// ListItems implements output.Lister: one row per partition.
func (p PartitionPlan) ListItems() any { return p.Partitions }

// WriteTable implements output.Tabler.
func (p PartitionPlan) WriteTable(w io.Writer, o output.Options) error {
	state := "feasible"
	if !p.Feasible {
		state = "infeasible: " + p.Reason
	}
	who := fmt.Sprintf("GPU %d %s", p.GPU, p.UUID)
	if p.GPU < 0 {
		who = "offline plan"
	}
	g := output.NewGrid("PART", "CHUNKS", "SMS", "COMMAND")
	for _, q := range p.Partitions {
		g.AddRow(fmt.Sprint(q.Index), fmt.Sprint(q.Chunks), fmt.Sprint(q.SMs), q.Command)
	}
	if o.NoHeaders {
		return output.Print(w, g, o)
	}
	fmt.Fprintf(w, "%s: %d SMs, %d chunks of %d SMs (%s); %s\n", who, p.SMCount, p.TotalChunks, p.ChunkSMs, p.ChunksFrom, state)
	if err := output.Print(w, g, o); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "free chunks: %d\nclients select a partition with CUDA_MPS_SM_PARTITION=<reply of sm_partition add> (before CUDA initialises)\n", p.FreeChunks)
	return err
}
