package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// DefaultPrecisionConfig is the table the report command renders:
// 512×512×512 on uniform, normal and cancelling data.
func DefaultPrecisionConfig() report.PrecisionConfig {
	return report.PrecisionConfig{M: 512, K: 512, N: 512, Dists: []string{ops.DistUniform, ops.DistNormal, ops.DistCancel}, Seed: 1}
}

// PrecisionModes builds the precision-mode table from harness runs of gemm
// in every mode on b: each run is judged like any other case (the mode's
// own bound, inputs unchanged, guard bands), and its output is also
// measured against the float64 product of the source (reference.MatMul).
//
// The runs are independent, so they run concurrently (one per CPU); rows
// keep the order distribution by distribution, mode by mode.
//
// cfg.Timeout (> 0) bounds each long step as a case's --timeout does: the
// source and float64 product of a distribution, and each row's run and
// reference; the first error (a deadline included) cancels the rows not
// yet finished and is returned.
func PrecisionModes(ctx context.Context, b backend.Backend, num tensor.Numerics, cfg report.PrecisionConfig) (*report.PrecisionTable, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &report.PrecisionTable{Config: cfg, Backend: b.Name()}
	modes := ops.GEMMModes()
	t.Rows = make([]report.PrecisionRow, len(cfg.Dists)*len(modes))
	errs := make([]error, len(t.Rows))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var crash panicguard.Catcher // a row's panic, raised again once every row is done
	var srcErr error
dists:
	for d, dist := range cfg.Dists {
		src, err := within(ctx, cfg.Timeout, "precision table: "+dist+": the float64 source and its product", func() (source, error) {
			a64, b64, err := precisionSource(cfg, dist)
			if err != nil {
				return source{}, err
			}
			truth, _ := reference.MatMul(cfg.M, cfg.K, cfg.N, a64.F64(), b64.F64())
			return source{a64, b64, truth}, nil
		})
		if err != nil {
			srcErr = err
			cancel()
			break
		}
		vsTruth := &bound.Expected{Ref: src.truth, Bound: infs(len(src.truth)), Alt: make([]bound.Special, len(src.truth))}
		for m, mode := range modes {
			i := d*len(modes) + m
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break dists
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				defer crash.Catch()
				t.Rows[i], errs[i] = precisionRow(ctx, b, num, cfg, dist, mode, src.a, src.b, vsTruth)
				if errs[i] != nil || crash.Caught() {
					cancel()
				}
			}()
		}
	}
	wg.Wait()
	crash.Rethrow()
	if srcErr != nil {
		return nil, srcErr
	}
	// The first error in row order that is not merely the cancellation
	// another row's error caused.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || (errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled))) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("precision table: %w", err)
	}
	return t, nil
}

// source is one distribution's float64 matrices and their product.
type source struct {
	a, b  *tensor.Tensor
	truth []float64
}

// within runs f under ctx and limit (> 0): f takes no context (float64
// loops), so when the deadline comes first the table stops waiting, f
// finishes in the background and its result is dropped. The error names
// what and the limit.
func within[T any](ctx context.Context, limit time.Duration, what string, f func() (T, error)) (T, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	// A panic in f is raised again here; when the deadline came first it
	// is dropped with f's result (the step's timeout is what is reported).
	var crash panicguard.Catcher
	go func() {
		var r result
		defer func() { done <- r }()
		defer crash.Catch()
		r.v, r.err = f()
	}()
	select {
	case r := <-done:
		crash.Rethrow()
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		err := fmt.Errorf("%s: %w", what, ctx.Err())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && limit > 0 {
			err = fmt.Errorf("%w (timed out after %s)", err, limit)
		}
		return zero, err
	}
}

// precisionRow runs one mode on one distribution's source.
func precisionRow(ctx context.Context, b backend.Backend, num tensor.Numerics, cfg report.PrecisionConfig, dist string, mode ops.GEMMMode,
	a64, b64 *tensor.Tensor, vsTruth *bound.Expected) (report.PrecisionRow, error) {
	c := ops.Case{
		Name: "precision_" + mode.Name + "_" + dist, Op: "gemm", Params: ops.Params{"mode": mode.Name},
		Dims: map[string]int{"m": cfg.M, "k": cfg.K, "n": cfg.N}, Dist: dist, Seed: cfg.Seed,
	}
	pc, err := harness.PrepareInputs(c, castInputs(mode, a64, b64, cfg))
	if err != nil {
		return report.PrecisionRow{}, fmt.Errorf("precision table: %s: %w", harness.Subject(c), err)
	}
	res, err := harness.RunPrepared(ctx, b, pc, harness.Options{Numerics: num, Stream: true, Timeout: cfg.Timeout, StepTimeout: cfg.Timeout})
	if err != nil {
		return report.PrecisionRow{}, fmt.Errorf("precision table: %w", err)
	}
	i := slices.IndexFunc(res.Verify.Outputs, func(o verify.OutputResult) bool { return o.Name == "out" })
	if i < 0 {
		return report.PrecisionRow{}, fmt.Errorf("precision table: %s: no verdict on output \"out\"", harness.Subject(c))
	}
	own := res.Verify.Outputs[i].Metrics
	vs := verify.Compute(res.Outputs["out"], vsTruth)
	row := report.PrecisionRow{
		Dist: dist, Mode: mode.Name,
		MaxRel: verify.Float(vs.MaxRel), MERE: verify.Float(vs.MERE), RMSE: verify.Float(vs.RMSE), Cosine: verify.Float(vs.Cosine),
		BoundPassed: res.Pass(), Tightness: verify.Float(own.Tightness),
	}
	if cost := emulator.Cost(res.Measurement); cost != nil {
		row.Cycles, row.GMBytes, row.CubeUtil = cost.Cycles, cost.GMBytesIn+cost.GMBytesOut, verify.Float(cost.CubeUtil)
		row.HBMBytes = cost.HBMBytes
	}
	return row, nil
}

func infs(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.Inf(1)
	}
	return s
}

// precisionSource draws the float64 source matrices for one distribution
// from the op's own generator at fp64, so "cancel" cancels in the source.
func precisionSource(cfg report.PrecisionConfig, dist string) (a, b *tensor.Tensor, err error) {
	g := ops.Gen{Dims: map[string]int{"m": cfg.M, "k": cfg.K, "n": cfg.N}, Dist: dist, Seed: cfg.Seed}
	rng := g.Rand()
	if a, err = ops.Fill(rng, dist, tensor.Float64, cfg.M, cfg.K); err != nil {
		return nil, nil, fmt.Errorf("precision table: %w", err)
	}
	if b, err = ops.Fill(rng, dist, tensor.Float64, cfg.K, cfg.N); err != nil {
		return nil, nil, fmt.Errorf("precision table: %w", err)
	}
	if dist == ops.DistCancel {
		// Pairs of k whose terms nearly cancel: a[:, 2p+1] = a[:, 2p] and
		// b[2p+1, :] = −b[2p, :]·(1+δ) with |δ| ≤ 2^-7, so each pair adds
		// only a[i,2p]·b[2p,j]·δ while the terms stay large. δ is well above
		// fp16 and bf16 resolution at the scale of b, so casting keeps it.
		for p := 0; p+1 < cfg.K; p += 2 {
			for i := 0; i < cfg.M; i++ {
				a.SetBits(i*cfg.K+p+1, a.Bits(i*cfg.K+p))
			}
			for j := 0; j < cfg.N; j++ {
				delta := float64((2*float64(rng.Float64()) - 1) / 128)
				b.SetFloat64((p+1)*cfg.N+j, -b.Float64(p*cfg.N+j)*(1+delta), tensor.Numerics{})
			}
		}
	}
	return a, b, nil
}

// castInputs casts the source to mode's input dtype; int8 modes quantise
// symmetrically per row of A and per column of B and pass the scales.
func castInputs(mode ops.GEMMMode, a, b *tensor.Tensor, cfg report.PrecisionConfig) map[string]*tensor.Tensor {
	if !mode.Int8() {
		return map[string]*tensor.Tensor{"a": cast(a, mode.In), "b": cast(b, mode.In)}
	}
	qa, sa := quantise(a, cfg.M, cfg.K, true)
	qb, sb := quantise(b, cfg.K, cfg.N, false)
	return map[string]*tensor.Tensor{"a": qa, "b": qb, "scale_a": sa, "scale_b": sb}
}

func cast(t *tensor.Tensor, d tensor.DType) *tensor.Tensor {
	out := tensor.MustNew(d, t.Shape...)
	for i := 0; i < t.Len(); i++ {
		out.SetFloat64(i, t.Float64(i), tensor.Numerics{})
	}
	return out
}

// quantise maps each row (byRow) or column of the rows×cols matrix t to
// int8 with scale max|x|/127 (1 for an all-zero line), rounding half to even.
func quantise(t *tensor.Tensor, rows, cols int, byRow bool) (q, scale *tensor.Tensor) {
	lines, length := cols, rows
	at := func(line, i int) int { return i*cols + line }
	if byRow {
		lines, length = rows, cols
		at = func(line, i int) int { return line*cols + i }
	}
	q = tensor.MustNew(tensor.Int8, rows, cols)
	scale = tensor.MustNew(tensor.Float32, lines)
	for l := 0; l < lines; l++ {
		m := 0.0
		for i := 0; i < length; i++ {
			m = math.Max(m, math.Abs(t.Float64(at(l, i))))
		}
		s := 1.0
		if m > 0 {
			s = float64(float32(m / 127))
		}
		scale.SetFloat64(l, s, tensor.Numerics{})
		for i := 0; i < length; i++ {
			q.SetFloat64(at(l, i), t.Float64(at(l, i))/s, tensor.Numerics{})
		}
	}
	return q, scale
}
