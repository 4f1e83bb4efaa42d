package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// Version is the journal file format version this build writes. Version 2
// added step states, temp files, revert errors and displaced files; this
// build also reads version 1 (whose steps have no state: they are treated
// as done).
const Version = 2

// minVersion is the oldest format version this build reads.
const minVersion = 1

// magic starts every journal file.
const magic = "gpunode-journal"

// Sentinel errors of Load/Decode; test with errors.Is.
var (
	// ErrCorrupt: the file is not a journal, or its checksum does not match
	// its payload (truncated, edited, or damaged).
	ErrCorrupt = errors.New("journal is corrupted")
	// ErrVersion: the file was written by a gpunode with another journal
	// format version.
	ErrVersion = errors.New("journal has a foreign format version")
	// ErrUnknownKind: a step kind that no registered reverter handles.
	ErrUnknownKind = errors.New("unknown step kind")
	// ErrInterrupted: an earlier transaction of the same owner never
	// committed (the process died); it must be rolled back first.
	ErrInterrupted = errors.New("an earlier change was interrupted")
	// ErrLocked: another gpunode process holds the journal directory.
	ErrLocked = errors.New("journal directory is locked by another gpunode process")
)

// State is the life-cycle state of a transaction.
type State string

// Transaction states.
const (
	// StateOpen: steps are being recorded; a journal still open when no
	// process owns it was interrupted and is rolled back by the next Rollback.
	StateOpen State = "open"
	// StateCommitted: every step was applied.
	StateCommitted State = "committed"
	// StateRolledBack: every step was reverted.
	StateRolledBack State = "rolled-back"
)

// StepState is how far one step got.
type StepState string

// Step states. A step is persisted as an intent before its change is made
// and as done after; the other states are written by a revert.
const (
	StepIntent   StepState = "intent"
	StepDone     StepState = "done"
	StepFailed   StepState = "failed"   // its change returned an error
	StepReverted StepState = "reverted" // a revert put the original back
	StepSkipped  StepState = "skipped"  // rollback --skip: original NOT written back, kept here
)

// Built-in step kinds.
const (
	// KindValue is a write of a kernel file (sysfs, procfs): Path, Original
	// (the value to write back, in the form the file accepts) and New.
	KindValue = "kernel.value"
	// KindFile is the creation, replacement or removal of an ordinary file,
	// symlink or directory: Path and File (the original state, "absent"
	// when it did not exist). Reverting restores File byte for byte.
	KindFile = "file"
)

// FileType is the type of a path's original state.
type FileType string

// File types recorded in FileState.
const (
	FileAbsent  FileType = "absent"
	FileRegular FileType = "file"
	FileSymlink FileType = "symlink"
	FileDir     FileType = "dir"
)

// FileState is a snapshot of one path: enough to put it back exactly.
type FileState struct {
	Type FileType `json:"type"`
	// Mode holds the permission bits (with setuid/setgid/sticky) of a file
	// or directory.
	Mode fs.FileMode `json:"mode,omitempty"`
	UID  int         `json:"uid"`
	GID  int         `json:"gid"`
	// Data is a regular file's contents.
	Data []byte `json:"data,omitempty"`
	// Link is a symlink's target.
	Link string `json:"link,omitempty"`
}

// Step is one recorded change. It is persisted before the change is made.
type Step struct {
	// Kind selects how the step is reverted: KindValue, KindFile or a kind
	// registered by the caller (e.g. "gpu.persistence").
	Kind string `json:"kind"`
	// ID names the setting or object this step belongs to (e.g. a catalogue
	// id "vm.swappiness", or "irq/575"); informational.
	ID string `json:"id,omitempty"`
	// Path is the host path changed (host-absolute, under --root); custom
	// kinds may leave it empty and use Target.
	Path string `json:"path,omitempty"`
	// Target names what a custom kind changes (e.g. a GPU UUID).
	Target string `json:"target,omitempty"`
	// Original is the value before the change (KindValue and custom kinds).
	Original string `json:"original,omitempty"`
	// OriginalRaw holds the exact bytes of a KindValue file before the
	// change. Reverting a kernel file writes Original (the form the kernel
	// accepts: "madvise", not "always [madvise] never"); reverting a plain
	// file in a captured tree writes OriginalRaw back byte for byte.
	OriginalRaw []byte `json:"originalRaw,omitempty"`
	// New is the value written (KindValue and custom kinds).
	New string `json:"new,omitempty"`
	// File is the original state of Path (KindFile).
	File *FileState `json:"file,omitempty"`
	// NewSHA256 is the sha256 of the bytes written (KindFile), so that
	// drift since the change can be detected.
	NewSHA256 string `json:"newSha256,omitempty"`
	// Data carries extra fields for custom kinds.
	Data map[string]string `json:"data,omitempty"`
	// Note is free text shown in reports.
	Note string `json:"note,omitempty"`
	// State is how far the step got ("" in version 1 files: done).
	State StepState `json:"state,omitempty"`
	// Temp is the host path of the temporary file the change creates
	// (KindFile), named here before it exists so that a revert removes one
	// left by a kill.
	Temp string `json:"temp,omitempty"`
	// RevertError is why the last revert of this step failed.
	RevertError string `json:"revertError,omitempty"`
	// Displaced is what an administrator had put at Path (edited since
	// gpunode wrote it) when rollback --force restored the original.
	Displaced *FileState `json:"displaced,omitempty"`
}

// Meta describes a transaction.
type Meta struct {
	// Owner is the component that made the change ("tune", "irq", "gpu");
	// Rollback can be limited to one owner.
	Owner string `json:"owner"`
	// Command is the command line or operation, for humans.
	Command string `json:"command,omitempty"`
	// Profile is the profile or plan applied, if any.
	Profile string `json:"profile,omitempty"`
	// Started is when the transaction began (set by Begin when zero).
	Started time.Time `json:"started"`
	// Labels carry owner-specific data (e.g. the profile's digest).
	Labels map[string]string `json:"labels,omitempty"`
}

// Transaction is the payload of one journal file.
type Transaction struct {
	// ID is the file's base name without ".journal" ("000042-tune").
	ID    string    `json:"id"`
	Meta  Meta      `json:"meta"`
	State State     `json:"state"`
	Steps []Step    `json:"steps"`
	Ended time.Time `json:"ended,omitzero"`
	// Reason says why a transaction was rolled back ("rollback", or the
	// error that aborted an apply).
	Reason string `json:"reason,omitempty"`
}

// Encode serialises tx in the journal file format:
//
//	gpunode-journal v1 sha256:<hex of payload>\n
//	<payload: the transaction as JSON>\n
func Encode(tx *Transaction) ([]byte, error) {
	payload, err := json.MarshalIndent(tx, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encode journal %s: %w", tx.ID, err)
	}
	payload = append(payload, '\n')
	if len(payload) > MaxSize-128 {
		return nil, fmt.Errorf("encode journal %s: %d bytes, over the %d MiB bound of a journal", tx.ID, len(payload), MaxSize>>20)
	}
	sum := sha256.Sum256(payload)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s v%d sha256:%s\n", magic, Version, hex.EncodeToString(sum[:]))
	b.Write(payload)
	return b.Bytes(), nil
}

// Decode parses and verifies a journal file. It refuses a file whose header
// is not a gpunode journal or whose checksum does not match (ErrCorrupt),
// one written in another format version (ErrVersion), and payloads whose
// steps are malformed (ErrCorrupt). It does not check step kinds against a
// registry; Rollback does.
func Decode(b []byte) (*Transaction, error) {
	header, payload, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("%w: no header line", ErrCorrupt)
	}
	fields := strings.Fields(string(header))
	if len(fields) != 3 || fields[0] != magic {
		return nil, fmt.Errorf("%w: header %q is not %q", ErrCorrupt, shorten(string(header)), magic+" v<N> sha256:<hex>")
	}
	v, err := strconv.Atoi(strings.TrimPrefix(fields[1], "v"))
	if !strings.HasPrefix(fields[1], "v") || err != nil || v < minVersion || v > Version {
		return nil, fmt.Errorf("%w: file is format %s, this gpunode reads v%d to v%d; use the gpunode that wrote it", ErrVersion, shorten(fields[1]), minVersion, Version)
	}
	want, ok := strings.CutPrefix(fields[2], "sha256:")
	if !ok {
		return nil, fmt.Errorf("%w: header has no sha256 checksum", ErrCorrupt)
	}
	sum := sha256.Sum256(payload)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("%w: payload sha256 %s does not match the header's %s (truncated or edited)", ErrCorrupt, got[:12], shorten(want))
	}
	var tx Transaction
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tx); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrCorrupt, err)
	}
	if err := tx.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &tx, nil
}

func (tx *Transaction) validate() error {
	switch tx.State {
	case StateOpen, StateCommitted, StateRolledBack:
	default:
		return fmt.Errorf("state %q is not open, committed or rolled-back", tx.State)
	}
	if tx.Meta.Owner == "" {
		return errors.New("meta.owner is empty")
	}
	for i, s := range tx.Steps {
		if s.Kind == "" {
			return fmt.Errorf("step %d: kind is empty", i)
		}
		switch s.State {
		case "", StepIntent, StepDone, StepFailed, StepReverted, StepSkipped:
		default:
			return fmt.Errorf("step %d: state %q is not intent, done, failed, reverted or skipped", i, s.State)
		}
		if s.Temp != "" && (s.Path == "" || path.Clean(s.Temp) != s.Temp || path.Dir(s.Temp) != path.Dir(s.Path) || !strings.Contains(path.Base(s.Temp), ".gpunode-tmp-")) {
			return fmt.Errorf("step %d: temp %q is not a gpunode temp file next to %q", i, s.Temp, s.Path)
		}
		if s.Path != "" && (!path.IsAbs(s.Path) || path.Clean(s.Path) != s.Path) {
			return fmt.Errorf("step %d: path %q is not a clean absolute host path", i, s.Path)
		}
		switch s.Kind {
		case KindValue:
			if s.Path == "" {
				return fmt.Errorf("step %d (%s): path is empty", i, s.Kind)
			}
		case KindFile:
			if s.Path == "" || s.Path == "/" {
				return fmt.Errorf("step %d (%s): path is empty or /", i, s.Kind)
			}
			if s.File == nil {
				return fmt.Errorf("step %d (%s): original file state is missing", i, s.Kind)
			}
			switch s.File.Type {
			case FileAbsent, FileRegular, FileDir:
			case FileSymlink:
				if s.File.Link == "" {
					return fmt.Errorf("step %d (%s): symlink target is empty", i, s.Kind)
				}
			default:
				return fmt.Errorf("step %d (%s): file type %q is not absent, file, symlink or dir", i, s.Kind, s.File.Type)
			}
		}
	}
	return nil
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
