package metamorphic_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/metamorphic"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Each relation catches a backend that breaks exactly the symmetry it
// states: some comparison of the follow-up with the case fails, and its
// error names the relation after the case's op, params and seed and ends
// with got, want and bound. Which relation catches which fault:
//
//	x+y = y+x                            vector_add/y-read-as-x (emulator fault)
//	prune(decompress(prune(w))) = prune(w) signedPrune: ranks by value, not |w|
//	rows and groups of four permuted     sparse24_prune/index-16-bit (emulator fault)
//	gemm24(prune(w), b) = gemm(decompress(prune(w)), b)  gemm24/meta-bits-swapped (emulator fault)
//	rows of a permuted                   firstScaleA: every row scaled by scale_a[0]
//	batch permutation (kv_update)        sortedEntries: entries take x rows in seq_id order
//	batch permutation (decode_attention) sortedEntries: entries take q rows in seq_id order
//	paged = contiguous (both ops)        identityTables: block_tables read as the identity
//	GQA = repeated MHA                   decode_attention/gqa-head-h-mod-hkv (emulator fault)
func TestRelationsCatchFaults(t *testing.T) {
	emu := emulator.New(npu.Ascend910B())
	fault := func(f npu.Fault) backend.Backend { return emulator.New(npu.Ascend910B(), emulator.WithFaults(f)) }
	for _, tc := range []struct {
		name     string
		b        backend.Backend
		op       string
		relation string
		cases    int
	}{
		{"vector_add-y-read-as-x", fault(kernels.FaultVectorAddYReadAsX), "vector_add", "x+y = y+x", 3},
		{"prune-signed", signedPrune{emu}, "sparse24_prune", "prune(decompress(prune(w))) = prune(w)", 3},
		{"prune-index-16-bit", fault(kernels.FaultSparse24PruneIndex16Bit), "sparse24_prune", "rows and groups of four permuted", 1},
		{"gemm24-meta-bits-swapped", fault(kernels.FaultGEMM24MetaBitsSwapped), "gemm24", "gemm24(prune(w), b) = gemm(decompress(prune(w)), b)", 2},
		{"gemm-first-scale-a", firstScaleA{emu}, "gemm", "rows of a permuted", 10},
		{"kv_update-sorted-entries", sortedEntries{emu}, "kv_update", "batch permutation", 2},
		{"decode_attention-sorted-entries", sortedEntries{emu}, "decode_attention", "batch permutation", 2},
		{"kv_update-identity-tables", identityTables{emu}, "kv_update", "paged = contiguous", 2},
		{"decode_attention-identity-tables", identityTables{emu}, "decode_attention", "paged = contiguous", 2},
		{"decode_attention-gqa-head-modulo", fault(kernels.FaultDecodeAttentionGQAHeadModulo), "decode_attention", "GQA = repeated MHA", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := false
			var all []string
			for _, c := range metamorphic.Cases(tc.op, tc.cases) {
				for _, err := range metamorphic.Check(t.Context(), tc.b, c) {
					startsWithSubject(t, c, err)
					all = append(all, err.Error())
					if e, ok := err.(*metamorphic.Error); ok && e.Relation == tc.relation &&
						strings.HasPrefix(err.Error(), tc.op+" ") && strings.Contains(err.Error(), ": "+tc.relation+": ") &&
						strings.Contains(err.Error(), "got ") && strings.HasSuffix(err.Error(), ")") && strings.Contains(err.Error(), "(bound ") {
						found = true
					}
				}
			}
			if !found {
				t.Errorf("%s: no violation of %q on %d cases of %s; got:\n%s", tc.name, tc.relation, tc.cases, tc.op, strings.Join(all, "\n"))
			}
		})
	}
}

// signedPrune prunes by the two largest values, not magnitudes (NaN
// largest, ties to the lower index): wrong, and not idempotent, since the
// +0s decompress puts back beat kept negative values.
type signedPrune struct{ backend.Backend }

func (signedPrune) Name() string { return "signed-prune" }

func (b signedPrune) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if op != "sparse24_prune" {
		return b.Backend.Run(ctx, op, p, in)
	}
	w := in["w"]
	m, k := w.Shape[0], w.Shape[1]
	vals, meta := tensor.MustNew(tensor.Float16, m, k/2), tensor.MustNew(tensor.Uint8, m, k/4)
	key := func(v float64) float64 {
		if math.IsNaN(v) {
			return math.Inf(1)
		}
		return v
	}
	for g := range m * k / 4 {
		idx := []int{0, 1, 2, 3}
		slices.SortStableFunc(idx, func(i, j int) int { return -cmpF(key(w.Float64(4*g+i)), key(w.Float64(4*g+j))) })
		i0, i1 := min(idx[0], idx[1]), max(idx[0], idx[1])
		vals.SetBits(2*g, w.Bits(4*g+i0))
		vals.SetBits(2*g+1, w.Bits(4*g+i1))
		meta.U8()[g] = uint8(i0 | i1<<2)
	}
	return map[string]*tensor.Tensor{"values": vals, "meta": meta}, nil, nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// firstScaleA scales every row of an int8 gemm by scale_a[0]: a per-row
// scale read as a broadcast one.
type firstScaleA struct{ backend.Backend }

func (firstScaleA) Name() string { return "first-scale-a" }

func (b firstScaleA) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if s := in["scale_a"]; op == "gemm" && s != nil {
		in = maps.Clone(in)
		t := s.Clone()
		for i := range t.Len() {
			t.SetBits(i, s.Bits(0))
		}
		in["scale_a"] = t
	}
	return b.Backend.Run(ctx, op, p, in)
}

// sortedEntries hands the batch entries' rows of x (kv_update) or q
// (decode_attention) to the entries in ascending seq_id order: right when
// seq_ids ascend, every entry paired with another's row otherwise.
type sortedEntries struct{ backend.Backend }

func (sortedEntries) Name() string { return "sorted-entries" }

func (b sortedEntries) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	head := map[string]string{"kv_update": "x", "decode_attention": "q"}[op]
	if head == "" {
		return b.Backend.Run(ctx, op, p, in)
	}
	ids, h := in["seq_ids"].I32(), in[head]
	var entries []int
	for i, s := range ids {
		if s >= 0 {
			entries = append(entries, i)
		}
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(i, j int) int { return int(ids[i]) - int(ids[j]) })
	per := h.Len() / max(len(ids), 1)
	t := h.Clone()
	for k, e := range entries {
		for i := range per {
			t.SetBits(e*per+i, h.Bits(sorted[k]*per+i))
		}
	}
	in = maps.Clone(in)
	in[head] = t
	return b.Backend.Run(ctx, op, p, in)
}

// identityTables reads every block table as the identity (logical block
// j of sequence s in physical block s·MB + j): right for an identity
// table, the wrong blocks for any other.
type identityTables struct{ backend.Backend }

func (identityTables) Name() string { return "identity-tables" }

func (b identityTables) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if bt := in["block_tables"]; bt != nil {
		t := bt.Clone()
		for i := range t.Len() {
			t.I32()[i] = int32(i)
		}
		in = maps.Clone(in)
		in["block_tables"] = t
	}
	return b.Backend.Run(ctx, op, p, in)
}
