package ops

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestSparse24BadInputs: K not a multiple of 4, malformed meta (an index
// ≥ 4, first ≥ second) and values/meta shapes that disagree are errors
// naming the tensor.
func TestSparse24BadInputs(t *testing.T) {
	f16 := func(shape ...int) *tensor.Tensor { return tensor.MustNew(tensor.Float16, shape...) }
	meta := func(b ...uint8) *tensor.Tensor {
		m := tensor.MustNew(tensor.Uint8, 1, len(b))
		copy(m.U8(), b)
		return m
	}
	p, _ := GEMM24.Validate(Params{})
	for _, tc := range []struct {
		name string
		op   Op
		in   map[string]*tensor.Tensor
		want string
	}{
		{"prune K%4", Sparse24Prune, map[string]*tensor.Tensor{"w": f16(2, 6)}, `"w": K = 6 is not a multiple of 4`},
		{"gemm24 K%4", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 3), "a_meta": meta(4), "b": f16(6, 2)}, `"b": K = 6`},
		{"index ≥ 4", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 4), "a_meta": meta(EncodeMeta24(0, 1), 0x14), "b": f16(8, 2)}, `"a_meta": entry [0,1] = 0x14 is malformed: bits 4–7 set`},
		{"first ≥ second", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 2), "a_meta": meta(EncodeMeta24(2, 1)), "b": f16(4, 2)}, `"a_meta": entry [0,0] = 0x06 is malformed: first index ≥ second`},
		{"equal indices", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 2), "a_meta": meta(EncodeMeta24(1, 1)), "b": f16(4, 2)}, `first index ≥ second`},
		{"values shape", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 3), "a_meta": meta(4), "b": f16(4, 2)}, `input "a_values": shape [1 3], want [1 2]`},
		{"meta shape", GEMM24, map[string]*tensor.Tensor{"a_values": f16(1, 4), "a_meta": meta(4), "b": f16(8, 2)}, `input "a_meta": shape [1 1], want [1 2]`},
	} {
		pp := p
		if tc.op == Sparse24Prune {
			pp = Params{}
		}
		err := CheckInputs(tc.op, pp, tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %s: err = %v, want one containing %q", tc.op.Name(), tc.name, err, tc.want)
		}
	}
}
