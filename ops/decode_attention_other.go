//go:build !amd64 || purego

package ops

import "github.com/x448/float16"

// daUseAsm is false: no assembly kernels on this platform or build.
var daUseAsm = false

// daCvtF16 is daCvtF16Go.
func daCvtF16(dst []float64, src []float16.Float16) { daCvtF16Go(dst, src) }

// daScores is daScoresGo.
func daScores(qT, k []float64, d int, s4, m4 []float64) { daScoresGo(qT, k, d, s4, m4) }

// daAccumOA is daAccumOAGo from column 0.
func daAccumOA(p, v []float64, o, a []float64) { daAccumOAGo(p, v, 0, o, a) }

// daAccumT3 is daAccumT3Go from column 0.
func daAccumT3(w, v []float64, o, t3 []float64) { daAccumT3Go(w, v, 0, o, t3) }

// daCvtF16Rows is daCvtF16RowsGo.
func daCvtF16Rows(dst []float64, src []float16.Float16, rows []int, n, d, stride int) {
	daCvtF16RowsGo(dst, src, rows, n, d, stride)
}
