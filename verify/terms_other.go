//go:build !amd64 || purego

package verify

// termSums is termSumsGo: there is no vector form off amd64 (or with
// purego).
func termSums(g, r []float64, scaleE, scaleV float64, _ bool, l *laneSums) float64 {
	return termSumsGo(g, r, scaleE, scaleV, l)
}

// chunkMax is chunkMaxGo: there is no vector form off amd64 (or with purego).
func chunkMax(g, r []float64) (maxE, maxV float64) { return chunkMaxGo(g, r) }

// useAVX2 is false: no vector form runs here.
var useAVX2 = false

// exactRunAVX2 is never called here (useAVX2 is false).
func exactRunAVX2(*exactRunVec, *float64, *float64, int) int { return 0 }

// acceptRunAVX2 is never called here (useAVX2 is false).
func acceptRunAVX2(*exactRunVec, *float64, *float64, int, uint64) int { return 0 }

// sameRun16AVX2 is never called here (useAVX2 is false).
func sameRun16AVX2(*byte, *byte, int, uint16, bool) (int, int) { return 0, 0 }

// sumSquares4AVX2 is never called here (useAVX2 is false).
func sumSquares4AVX2(*float64, *float64, *float64, *float64, int, *[4]float64, *[4][4]float64) {}

// sumSquares4F16AVX2 is never called here (useF16C is false).
func sumSquares4F16AVX2(*uint16, *uint16, *uint16, *uint16, int, *[4][4]float64, *[4][4]float64) {}

// maxAbsAVX2 is never called here (useAVX2 is false).
func maxAbsAVX2(*float64, int) float64 { return 0 }

// leanRunAVX2 is never called here (useAVX2 is false).
func leanRunAVX2(*leanVec, *float64, *float64, int) int { return 0 }

// useF16C is false: no vector form runs here.
var useF16C = false

// leanRunH16AVX2 is never called here (useF16C is false).
func leanRunH16AVX2(*leanVec, *uint16, *float64, int) int { return 0 }

// leanRunH16SumAVX2 is never called here (useF16C is false).
func leanRunH16SumAVX2(*leanVec, *uint16, *uint16, *uint16, int) int { return 0 }
