package perf

import (
	"fmt"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// The cube input classes, each with its own peak rate (Peaks).
const (
	CubeFP16 = "fp16" // fp16 and bf16 inputs
	CubeFP32 = "fp32"
	CubeInt8 = "int8"
)

// Work is the least any kernel must do for one case, whatever its tiling:
// the global-memory bytes it must move (each input element it has to
// read, once; each output element, once) and the operations it must
// compute, split by the unit that can do them fastest. It depends on the
// case alone (op, params, inputs), never on the device.
type Work struct {
	// Bytes is the minimum global-memory traffic, both ways.
	Bytes int64 `json:"bytes"`
	// CubeFlops are the matrix products' flops (2 per multiply-accumulate)
	// and Cube the input class that sets their rate.
	CubeFlops float64 `json:"cube_flops,omitempty"`
	Cube      string  `json:"cube,omitempty"`
	// VectorOps are elementwise operations (one per element per step)
	// and VectorElemBytes the width of their elements, which sets how many
	// a vector unit takes per cycle.
	VectorOps       float64 `json:"vector_ops,omitempty"`
	VectorElemBytes int     `json:"vector_elem_bytes,omitempty"`
}

// Flops is all the computation counted, cube and vector: the numerator
// of the achieved GFLOP/s.
func (w Work) Flops() float64 { return w.CubeFlops + w.VectorOps }

// workers holds, per op, the one place its work is counted from its
// contract tensors. An op missing here has no roofline (WorkOf says so,
// and a test lists every registered op).
var workers = map[string]func(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error){
	"vector_add":       vectorAddWork,
	"gemm":             gemmWork,
	"gemm24":           gemm24Work,
	"kv_update":        kvUpdateWork,
	"decode_attention": decodeAttentionWork,
	"sparse_compress":  sparseCompressWork,
	"sparse24_prune":   sparse24PruneWork,
	"transdata":        transDataWork,
}

// WorkOf counts the work of op on validated params p and inputs in that
// hold to its contract (the outputs are the contract's, not a kernel's).
func WorkOf(opName string, p ops.Params, in map[string]*tensor.Tensor) (Work, error) {
	f, ok := workers[opName]
	if !ok {
		return Work{}, fmt.Errorf("no roofline for op %q: perf.WorkOf does not count its work", opName)
	}
	op, err := ops.Lookup(opName)
	if err != nil {
		return Work{}, err
	}
	out, err := op.Outputs(p, in)
	if err != nil {
		return Work{}, fmt.Errorf("%s: outputs: %w", opName, err)
	}
	w, err := f(p, in, out)
	if err != nil {
		return Work{}, fmt.Errorf("%s: %w", opName, err)
	}
	return w, nil
}

func size(t *tensor.Tensor) int64 {
	if t == nil {
		return 0
	}
	return int64(t.Len()) * int64(t.DType.Size())
}

func specSize(s ops.TensorSpec) int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= int64(d)
	}
	return n * int64(s.DType.Size())
}

// allBytes is every input and output read or written once: the traffic
// of an op that must touch all of both.
func allBytes(in map[string]*tensor.Tensor, out []ops.TensorSpec) int64 {
	var b int64
	for _, t := range in {
		b += size(t)
	}
	for _, s := range out {
		b += specSize(s)
	}
	return b
}

func need(in map[string]*tensor.Tensor, names ...string) error {
	for _, n := range names {
		if in[n] == nil {
			return fmt.Errorf("input %q is missing", n)
		}
	}
	return nil
}

// vector_add: every x, y and z element once; one add per element, at the
// width of the dtype.
func vectorAddWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "x"); err != nil {
		return Work{}, err
	}
	x := in["x"]
	return Work{Bytes: allBytes(in, out), VectorOps: float64(x.Len()), VectorElemBytes: x.DType.Size()}, nil
}

func cubeClass(d tensor.DType) string {
	switch d {
	case tensor.Int8:
		return CubeInt8
	case tensor.Float32:
		return CubeFP32
	}
	return CubeFP16
}

// gemm: a, b (c and the scales when given) and out once; 2·M·N·K flops on
// the cube at the mode's input class. The epilogue (alpha, beta,
// dequantisation) is not counted: M·N operations against M·N·K.
func gemmWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	cfg, err := ops.ParseGEMM(p)
	if err != nil {
		return Work{}, err
	}
	m, k, n, err := ops.GEMMShape(p, in)
	if err != nil {
		return Work{}, err
	}
	return Work{Bytes: allBytes(in, out), CubeFlops: 2 * float64(m) * float64(n) * float64(k), Cube: cubeClass(cfg.Mode.In)}, nil
}

// gemm24: the kept values, the metadata, b (scales when given) and out
// once; only the kept K/2 products are computed: 2·M·N·(K/2) flops.
func gemm24Work(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	cfg, err := ops.ParseGEMM24(p)
	if err != nil {
		return Work{}, err
	}
	m, k, n, err := ops.GEMM24Shape(p, in)
	if err != nil {
		return Work{}, err
	}
	return Work{Bytes: allBytes(in, out), CubeFlops: 2 * float64(m) * float64(n) * float64(k/2), Cube: cubeClass(cfg.Mode.In)}, nil
}

// kv_update: x, w_k, w_v and seq_ids are read whole; a seq_lens entry per
// non-padding entry; a block_tables entry per written row (paged). new_k,
// new_v and written are written whole, and per written row its K and V
// cache rows (H·D values, H scales each when int8) and its seq_lens entry;
// the rest of the caches is never touched. Each non-padding entry projects
// x[b] through w_k and w_v: 2 · 2·H·D² flops on the cube (fp16). Each
// int8 row written is quantised: a max and a quotient per element, 2·H·D
// fp32 vector operations per cache.
func kvUpdateWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "x", "w_k", "w_v", "seq_ids", "seq_lens"); err != nil {
		return Work{}, err
	}
	g, writes, err := ops.KVUpdateWrites(p, in)
	if err != nil {
		return Work{}, err
	}
	nonPad := 0
	for _, s := range in["seq_ids"].I32() {
		if s >= 0 {
			nonPad++
		}
	}
	hd := int64(g.H) * int64(g.D)
	bytes := size(in["x"]) + size(in["w_k"]) + size(in["w_v"]) + size(in["seq_ids"]) + 4*int64(nonPad)
	for _, s := range out {
		switch s.Name {
		case "new_k", "new_v", "written":
			bytes += specSize(s)
		}
	}
	row := 2 * hd * int64(g.CacheDType().Size()) // K and V
	if g.Int8 {
		row += 2 * int64(g.H) * 4 // the fp32 scales
	}
	if g.Paged {
		row += 4 // the block_tables entry
	}
	bytes += int64(len(writes)) * (row + 4) // + the seq_lens entry written
	w := Work{Bytes: bytes, CubeFlops: float64(nonPad) * 2 * 2 * float64(hd) * float64(g.D), Cube: CubeFP16}
	if g.Int8 && len(writes) > 0 {
		w.VectorOps, w.VectorElemBytes = float64(len(writes))*2*2*float64(hd), 4
	}
	return w, nil
}

// decode_attention: q, seq_ids and out whole; a seq_lens entry per
// non-padding entry; of each sequence some entry reads, its first seq_len
// positions of K and V (Hkv·D values each, Hkv scales when int8) and the
// block_tables entries that map them (paged), once however many entries
// share it; positions past seq_len are never read. Each non-padding entry
// computes scores q·k and the weighted sum of v for its Hq heads: 2 · 2·
// len·Hq·D flops on the cube (fp16), and one exponential per score, len·Hq
// fp32 vector operations.
func decodeAttentionWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "q", "seq_ids", "seq_lens"); err != nil {
		return Work{}, err
	}
	g, err := ops.KVGeomOf(ops.DecodeAttention, p, in)
	if err != nil {
		return Work{}, err
	}
	q := in["q"]
	if len(q.Shape) != 3 {
		return Work{}, fmt.Errorf("input \"q\": rank %d, want 3", len(q.Shape))
	}
	hq := q.Shape[1]
	lens := in["seq_lens"].I32()
	bytes := size(q) + size(in["seq_ids"])
	for _, s := range out {
		bytes += specSize(s)
	}
	var w Work
	seen := map[int32]bool{}
	for _, s := range in["seq_ids"].I32() {
		if s < 0 || int(s) >= len(lens) {
			continue
		}
		n := min(max(int(lens[s]), 0), g.L)
		bytes += 4
		w.CubeFlops += float64(2 * 2 * float64(n) * float64(hq) * float64(g.D))
		w.VectorOps += float64(float64(n) * float64(hq))
		if seen[s] {
			continue
		}
		seen[s] = true
		rows := int64(n)
		bytes += 2 * rows * int64(g.H) * int64(g.D) * int64(g.CacheDType().Size())
		if g.Int8 {
			bytes += 2 * rows * int64(g.H) * 4
		}
		if g.Paged && n > 0 {
			bytes += 4 * int64((n+g.BS-1)/g.BS)
		}
	}
	w.Bytes = bytes
	if w.CubeFlops > 0 {
		w.Cube = CubeFP16
	}
	if w.VectorOps > 0 {
		w.VectorElemBytes = 4
	}
	return w, nil
}

// sparse_compress: k whole (every token's importance needs it), of v only
// the kept rows (as many bytes as v_out), and every output once; the
// importance is a square and an add per element of k in fp32, 2·H·L·D
// vector operations (the selection's comparisons are not counted).
func sparseCompressWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "k"); err != nil {
		return Work{}, err
	}
	bytes := size(in["k"])
	for _, s := range out {
		bytes += specSize(s)
		if s.Name == "v_out" {
			bytes += specSize(s) // the kept rows of v, read
		}
	}
	return Work{Bytes: bytes, VectorOps: 2 * float64(in["k"].Len()), VectorElemBytes: 4}, nil
}

// sparse24_prune: w read and values, meta written once; one magnitude
// comparison per element of w, at fp16 width.
func sparse24PruneWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "w"); err != nil {
		return Work{}, err
	}
	w := in["w"]
	return Work{Bytes: allBytes(in, out), VectorOps: float64(w.Len()), VectorElemBytes: w.DType.Size()}, nil
}

// transdata: a pure data movement: x read once and the output written
// once, its padding included (a kernel must write the +0 pads), with no
// arithmetic, so its roofline is the memory bandwidth alone.
func transDataWork(p ops.Params, in map[string]*tensor.Tensor, out []ops.TensorSpec) (Work, error) {
	if err := need(in, "x"); err != nil {
		return Work{}, err
	}
	return Work{Bytes: allBytes(in, out)}, nil
}
