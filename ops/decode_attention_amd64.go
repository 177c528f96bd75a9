//go:build amd64 && !purego

package ops

import (
	"unsafe"

	"github.com/x448/float16"
	"golang.org/x/sys/cpu"
)

// daUseAsm selects the AVX2 kernels of decode_attention_amd64.s; tests
// switch it off to run the portable path. The fp16 conversion needs F16C.
var daUseAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// Implemented in decode_attention_amd64.s; see the Go versions in
// decode_attention_kern.go for what each computes.

//go:noescape
func cvtF16F64AVX(dst *float64, src *float16.Float16, n int)

//go:noescape
func cvtF16RowsAVX(dst *float64, src *float16.Float16, rows *int, n, avail, d, stride int)

//go:noescape
func scores4AVX(qT, k *float64, d, n int, s4, m4 *float64)

//go:noescape
func accumOAAVX(p, v *float64, d, n, cols int, o, a *float64)

//go:noescape
func accumT3AVX(w, v *float64, d, n, cols int, o, t3 *float64)

// daCvtF16 is daCvtF16Go: groups of four through the assembly, the rest
// in Go.
func daCvtF16(dst []float64, src []float16.Float16) {
	n := len(src) &^ 3
	if !daUseAsm || n == 0 {
		daCvtF16Go(dst, src)
		return
	}
	_ = dst[len(src)-1]
	cvtF16F64AVX(&dst[0], unsafe.SliceData(src), n)
	daCvtF16Go(dst[n:len(src)], src[n:])
}

// daCvtF16Rows is daCvtF16RowsGo; with d a multiple of 4, one call to
// the assembly, which prefetches rows ahead, up to the end of rows.
func daCvtF16Rows(dst []float64, src []float16.Float16, rows []int, n, d, stride int) {
	if !daUseAsm || d%4 != 0 || d == 0 || n == 0 {
		daCvtF16RowsGo(dst, src, rows, n, d, stride)
		return
	}
	_ = dst[n*d-1]
	for _, r := range rows { // the assembly does not check bounds
		_ = src[r*stride : r*stride+d]
	}
	cvtF16RowsAVX(&dst[0], unsafe.SliceData(src), &rows[0], n, len(rows), d, stride)
}

// daScores is daScoresGo: blocks of four rows through the assembly.
func daScores(qT, k []float64, d int, s4, m4 []float64) {
	n := len(s4) / daLanes
	nb := n &^ 3
	if !daUseAsm || nb == 0 || d == 0 {
		daScoresGo(qT, k, d, s4, m4)
		return
	}
	_, _, _ = qT[d*daLanes-1], k[n*d-1], m4[n*daLanes-1]
	scores4AVX(&qT[0], &k[0], d, nb, &s4[0], &m4[0])
	daScoresGo(qT, k[nb*d:], d, s4[nb*daLanes:n*daLanes], m4[nb*daLanes:n*daLanes])
}

// daAccumOA is daAccumOAGo from column 0: blocks of 16 columns through
// the assembly.
func daAccumOA(p, v []float64, o, a []float64) {
	d := len(o)
	cols := d &^ 15
	if !daUseAsm || cols == 0 || len(p) == 0 {
		daAccumOAGo(p, v, 0, o, a)
		return
	}
	_, _ = v[len(p)*d-1], a[d-1]
	accumOAAVX(&p[0], &v[0], d, len(p), cols, &o[0], &a[0])
	daAccumOAGo(p, v, cols, o, a)
}

// daAccumT3 is daAccumT3Go from column 0: blocks of 16 columns through
// the assembly.
func daAccumT3(w, v []float64, o, t3 []float64) {
	d := len(o)
	cols := d &^ 15
	if !daUseAsm || cols == 0 || len(w) == 0 {
		daAccumT3Go(w, v, 0, o, t3)
		return
	}
	_, _ = v[len(w)*d-1], t3[d-1]
	accumT3AVX(&w[0], &v[0], d, len(w), cols, &o[0], &t3[0])
	daAccumT3Go(w, v, cols, o, t3)
}
