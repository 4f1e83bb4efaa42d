package dra

import (
	"context"
	"testing"
)

// TestClassifyByEveryValueBit: devices are interchangeable only when their
// constraint values are equal in every bit: value ids differing in bit 16
// or bit 24 make different classes, equal ones one class.
func TestClassifyByEveryValueBit(t *testing.T) {
	in := pcieInput(t, 4)
	in.init()
	for _, c := range in.Claims {
		DefaultClaimSpec(&c.Spec)
	}
	p, err := buildProblem(context.Background(), in, NodeObject("n1"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSearcher(context.Background(), p, 1000)
	if len(s.val[0]) == 0 || s.classOf[0] != s.classOf[1] {
		t.Fatalf("GPUs 0 and 1 (one root) are not one class: %v", s.classOf)
	}
	for _, bit := range []int32{1 << 8, 1 << 16, 1 << 24} {
		v := s.val[0][0][0]
		s.val[0][0][1] = v | bit
		s.classify()
		if s.classOf[0] == s.classOf[1] {
			t.Errorf("values %#x and %#x: one class", v, v|bit)
		}
		s.val[0][0][1] = v
	}
}
