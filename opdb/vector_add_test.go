package opdb_test

import (
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/tensor"
)

// TestVectorAddSizes documents the sizes the vector_add set derives from
// the emulator's tiling on ascend910b: the tile is a sixth of the 192 KiB
// UB (double-buffered x, y, z), the pass one 32-byte block on each of the
// 48 vector cores.
func TestVectorAddSizes(t *testing.T) {
	for _, c := range []struct {
		d          tensor.DType
		tile, pass int
	}{
		{tensor.Float16, 16384, 768}, {tensor.BFloat16, 16384, 768},
		{tensor.Float32, 8192, 384}, {tensor.Int8, 32768, 1536},
	} {
		s, err := opdb.NewVectorAddSizes(npu.Ascend910B(), c.d)
		if err != nil {
			t.Fatal(err)
		}
		if s.Tile != c.tile || s.Pass != c.pass || s.MultiTile != 48*c.tile+1 {
			t.Errorf("vector_add dtype=%s: sizes tile %d pass %d multi-tile %d, want %d %d %d", c.d, s.Tile, s.Pass, s.MultiTile, c.tile, c.pass, 48*c.tile+1)
		}
	}
}
