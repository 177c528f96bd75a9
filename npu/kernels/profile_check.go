package kernels

import (
	"fmt"
	"strings"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Every profile is held to what the kernels here need of the device
// (npu.Profile.Validate runs checkProfile): a profile whose UB cannot hold
// one tile of some op is an input error naming ub_bytes when it is
// loaded, where such a profile used to pass validation and then fail
// every case of that op as a backend error, or worse, make a tile of no
// elements that never advanced.
func init() { npu.RegisterProfileCheck(checkProfile) }

// checkProfile returns the first op whose smallest tile does not fit p,
// as "<field>: <value> cannot hold one tile of <op> (needs N)". It runs
// each op's own tiling function on its smallest shape, so the
// requirement is the kernel's, not a copy of it.
func checkProfile(p npu.Profile) error {
	for _, check := range []func(npu.Profile) error{
		checkVectorAdd, checkSparse24Prune, checkGEMM, checkKVUpdate, checkDecodeAttention, checkSparseCompress, checkTransData,
	} {
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

// ubShort is the error for a UB of p that holds less than need bytes.
func ubShort(p npu.Profile, op string, need int) error {
	return fmt.Errorf("ub_bytes: %d cannot hold one tile of %s (needs %d)", p.UBBytes, op, need)
}

func checkVectorAdd(p npu.Profile) error {
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		if _, err := NewVectorAddTiling(p, 1, dt); err != nil {
			return ubShort(p, "vector_add", 2*vectorAddQueues*p.UBAlign())
		}
	}
	return nil
}

func checkSparse24Prune(p npu.Profile) error {
	if sparse24PruneTile(p) < 1 {
		return ubShort(p, "sparse24_prune", sparse24PruneMinUB(p))
	}
	return nil
}

// checkGEMM tiles a 1×K×1 product of every gemm mode (K one fractal k,
// or 16 for blocked16) and gemm24's: the fractal must fit L0A, L0B and
// L0C, two panels L1, one epilogue row the UB. The field named is the
// memory the tiling found too small.
func checkGEMM(p npu.Profile) error {
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			cfg := ops.GEMMConfig{Mode: mode, Accumulate: acc, Alpha: 1, Beta: 1}
			if _, err := GEMMTilingWith(p, cfg, 1, 1, 1, GEMMOptions{}); err != nil {
				return gemmShort(p, "gemm", mode.Name, err)
			}
		}
	}
	for _, name := range gemm24ModeNames() {
		vp, err := ops.GEMM24.Validate(ops.Params{"mode": name})
		if err != nil {
			return fmt.Errorf("gemm24: mode %s: %w", name, err)
		}
		cfg, err := ops.ParseGEMM24(vp)
		if err != nil {
			return fmt.Errorf("gemm24: mode %s: %w", name, err)
		}
		if _, err := NewGEMM24Tiling(p, cfg, 1, 4, 1, GEMM24Options{}); err != nil {
			return gemmShort(p, "gemm24", name, err)
		}
	}
	return nil
}

// gemmShort names the memory a gemm tiling error is about: the first of
// UB, L1, L0A, L0B, L0C its message names (GEMMTilingWith names one).
func gemmShort(p npu.Profile, op, mode string, err error) error {
	msg := err.Error()
	for _, f := range []string{"cube_fractal_fp16", "cube_fractal_int8"} {
		if strings.Contains(msg, f+".k") {
			return fmt.Errorf("%s.k: cannot hold one tile of %s (mode %s): %w", f, op, mode, err)
		}
	}
	field := "ub_bytes"
	for _, m := range []struct{ space, field string }{
		{"UB", "ub_bytes"}, {"L1", "l1_bytes"}, {"L0A", "l0a_bytes"}, {"L0B", "l0b_bytes"}, {"L0C", "l0c_bytes"},
	} {
		if strings.Contains(msg, m.space) {
			field = m.field
			break
		}
	}
	return fmt.Errorf("%s: cannot hold one tile of %s (mode %s): %w", field, op, mode, err)
}

// gemm24ModeNames lists gemm24's modes from its contract.
func gemm24ModeNames() []string {
	for _, s := range ops.GEMM24.ParamSpecs() {
		if s.Name == "mode" {
			return s.Values
		}
	}
	return nil
}

func checkKVUpdate(p npu.Profile) error {
	_, err := kvCubeLayout(p, 1, 1, 1)
	return err
}

func checkDecodeAttention(p npu.Profile) error {
	for _, esz := range []int{1, 2} {
		if _, _, err := decodeLayout(p, 1, esz, 1); err != nil {
			return ubShort(p, "decode_attention", daUBBytes(p, 1, esz, 1, 1))
		}
	}
	return nil
}

// checkSparseCompress: a head of one token of one element takes the
// in-UB path; a long head, the chunked path, needs its histogram and a
// chunk of scores beside one row piece.
func checkSparseCompress(p npu.Profile) error {
	if !sparseCompressFitsUB(p, 1, 1) {
		return ubShort(p, "sparse_compress", 2*p.UBAlign())
	}
	if _, err := sparseCompressPiece(p, 1); err != nil {
		a := p.UBAlign()
		return ubShort(p, "sparse_compress", scHistBins*4+roundUp(scLongChunk*4, a)*2+roundUp(scLongChunk, a)+a)
	}
	return nil
}

func checkTransData(p npu.Profile) error {
	if transDataTile(p) < ops.TransDataM0 {
		return ubShort(p, "transdata", 4*(ops.TransDataM0*32+p.UBAlign()))
	}
	return nil
}
