//go:build !amd64 || purego

package dgemm

// kernel and mul are the portable micro-kernels where there are no
// assembly ones.
var (
	kernel kernelFunc = kernelGo
	mul               = goTile(mrMul)
)

// kernelName names MulAbs's micro-kernel, for benchmarks and tests.
const kernelName = "go"

// mulTiles lists every Mul micro-kernel this machine runs, for the tests.
func mulTiles() []mulTile { return []mulTile{mul} }

// mulH is none here: an fp16 B is packed as float64 values, for mul.
var mulH mulTile

// mulHTiles lists no fp16-panel tiles: they are assembly's.
func mulHTiles() []mulTile { return nil }

// ellKernel is none here: MulAbsELL runs ellRowGo.
var ellKernel func(kh int, v *float64, c *int, panel, d, s *float64)

// h32Kernel is none here: MulAbsH32 reports false.
var h32Kernel h32Func
