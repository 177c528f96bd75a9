package backend

import (
	"context"
	"testing"
	"time"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

func TestProbe2(t *testing.T) {
	e, _ := NewExec("/bin/true", ExecOptions{})
	x := tensor.MustNew(tensor.Float16, 257)
	in := map[string]*tensor.Tensor{"x": x, "y": x.Clone()}
	op, _ := ops.Lookup("vector_add")
	p, _ := op.Validate(ops.Params{})
	var tc, tw, tr, tm time.Duration
	for i := 0; i < 20; i++ {
		s := time.Now()
		cf, _ := e.caseFile(op, p, in)
		d, _ := e.makeDir()
		tm += time.Since(s)
		s = time.Now()
		writeCase(d, cf, in)
		tw += time.Since(s)
		s = time.Now()
		e.command(context.Background(), d)
		tc += time.Since(s)
		s = time.Now()
		removeAll(d)
		tr += time.Since(s)
	}
	t.Logf("mk %v write %v cmd %v rm %v", tm/20, tw/20, tc/20, tr/20)
}
