package hostfs

import (
	"fmt"
	"sort"
	"sync"
)

// maxRefused bounds the refusals an FS remembers (each is also returned as an
// error to the reader; the log only makes sure a command reports them).
const maxRefused = 64

// refusals remembers the host paths an FS refused to read because they were
// not regular files, so that a command reports them even where its caller
// turned the read error into a silent default.
type refusals struct {
	mu    sync.Mutex
	paths map[string]string // path -> file type
	more  int               // refusals beyond maxRefused
}

func (f *FS) noteRefused(p, kind string) {
	r := f.refused
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.paths[p]; ok {
		return
	}
	if len(r.paths) >= maxRefused {
		r.more++
		return
	}
	r.paths[p] = kind
}

// Refused returns one message per host path the FS refused to read because it
// was not a regular file ("/proc/interrupts: not a regular file (FIFO)"),
// sorted by path, plus a count of further refusals beyond the first 64.
func (f *FS) Refused() []string {
	r := f.refused
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.paths)+1)
	for p, kind := range r.paths {
		out = append(out, fmt.Sprintf("%s: %v (%s)", p, ErrNotRegular, kind))
	}
	sort.Strings(out)
	if r.more > 0 {
		out = append(out, fmt.Sprintf("... and %d more host paths that are not regular files", r.more))
	}
	return out
}
