package verify

import (
	"fmt"
	"strings"
)

// Subject names what was checked; every failure message starts with it.
type Subject struct {
	Op     string `json:"op"`
	Params string `json:"params"` // rendered params, e.g. "dtype=fp16" (ops.Params.String)
	Seed   uint64 `json:"seed"`
	Case   string `json:"case,omitempty"` // optional case name
}

// String renders the subject as "vector_add dtype=fp16 seed=42 [case]",
// leaving out empty params and an empty case.
func (s Subject) String() string {
	var b strings.Builder
	op := s.Op
	if op == "" {
		op = "?"
	}
	b.WriteString(op)
	if p := strings.TrimSpace(s.Params); p != "" {
		b.WriteString(" ")
		b.WriteString(p)
	}
	fmt.Fprintf(&b, " seed=%d", s.Seed)
	if s.Case != "" {
		fmt.Fprintf(&b, " [%s]", s.Case)
	}
	return b.String()
}
