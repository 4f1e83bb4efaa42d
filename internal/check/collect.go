package check

import (
	"context"
	"fmt"
)

// Named is implemented by sources that name themselves ("gpu", "irq"); the
// name becomes the id and layer of the error check Collect reports when
// the source fails.
type Named interface {
	Name() string
}

// Collect runs every source in order and concatenates their checks. A
// source that fails is reported as one Error check (id and layer: its
// Name, or "source"), and the others still run; cancellation of ctx stops
// the loop and is returned.
func Collect(ctx context.Context, srcs ...Source) ([]Check, error) {
	var out []Check
	for _, s := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s == nil {
			continue
		}
		cs, err := s.Checks(ctx)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			name := "source"
			if n, ok := s.(Named); ok {
				name = n.Name()
			}
			out = append(out, Check{ID: name, Layer: name, Status: Error, Detail: fmt.Sprintf("%s checks failed: %v", name, err)})
		}
		out = append(out, cs...)
	}
	return out, nil
}

// Describe returns the descriptions of every source that is a Describer.
func Describe(srcs ...Source) []Description {
	var out []Description
	for _, s := range srcs {
		if d, ok := s.(Describer); ok {
			out = append(out, d.Describe()...)
		}
	}
	return out
}
