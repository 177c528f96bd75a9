package npu

import (
	"context"
	"slices"
	"testing"
)

func TestFaults(t *testing.T) {
	s := NewFaults("b", "a", "", "b")
	if got := s.List(); !slices.Equal(got, []Fault{"a", "b"}) {
		t.Errorf("NewFaults(b, a, \"\", b).List() = %v, want [a b]", got)
	}
	if !s.Has("a") || !s.Has("b") || s.Has("c") || s.Empty() {
		t.Errorf("Has/Empty wrong for %v", s.List())
	}
	if !(Faults{}).Empty() || (Faults{}).Has("a") {
		t.Error("the zero Faults is not empty")
	}
	ctx := context.Background()
	if !FaultsFrom(ctx).Empty() {
		t.Error("a plain context carries faults")
	}
	ctx = WithFaults(WithFaults(ctx, NewFaults("x")), NewFaults("y"))
	if got := FaultsFrom(ctx).List(); !slices.Equal(got, []Fault{"x", "y"}) {
		t.Errorf("nested WithFaults = %v, want [x y]", got)
	}
	dev := MustNewDevice(Ascend910B())
	var seen [2]bool
	_, err := dev.Launch(ctx, 2, func(c *Core) error {
		seen[c.BlockIdx] = c.Faults().Has("x") && c.Faults().Has("y")
		return nil
	})
	if err != nil || !seen[0] || !seen[1] {
		t.Errorf("cores do not see the launch's faults: %v %v", seen, err)
	}
}
