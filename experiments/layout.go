package experiments

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// LayoutConfig sizes the layout study: a gemm of M×K×N in fp16_fp32acc,
// and a channel-wise bias add (the epilogue of a convolution) over an
// fp16 activation of N×C×H×W.
type LayoutConfig struct {
	GEMM       [3]int
	N, C, H, W int
	Seed       uint64
}

// DefaultLayoutConfig is the study the report renders: a 512³ gemm, and a
// bias add over 2×100×14×14 (C not a multiple of C0 = 16, so NC1HWC0
// pads 12 channels; 196-element planes, a conv layer's late stage).
func DefaultLayoutConfig() LayoutConfig {
	return LayoutConfig{GEMM: [3]int{512, 512, 512}, N: 2, C: 100, H: 14, W: 14, Seed: 1}
}

// LayoutCost runs, on prof, the emulated gemm kernel with every operand
// ND and with every operand FRACTAL_NZ, and a bias-add kernel over NCHW
// and over NC1HWC0, and reads the cost model's figures for each.
//
// The bias add is written here as an Ascend C vector kernel would be: the
// work units (NCHW: the N·C planes of H·W values, one channel each;
// NC1HWC0: the N·C1 slabs of H·W·C0 values) are dealt round-robin to the
// vector cores; each unit is one contiguous DataCopy into UB, one vector
// instruction adding its bias (a scalar per plane; per lane of C0 in a
// slab), one DataCopy out. The bias is loaded once per core. The values
// are seeded uniform fp16; the cost model does not read them.
func LayoutCost(ctx context.Context, prof npu.Profile, cfg LayoutConfig) (*report.LayoutTable, error) {
	m, k, n := cfg.GEMM[0], cfg.GEMM[1], cfg.GEMM[2]
	if m <= 0 || k <= 0 || n <= 0 || cfg.N <= 0 || cfg.C <= 0 || cfg.H <= 0 || cfg.W <= 0 {
		return nil, fmt.Errorf("layout study: sizes gemm %v, bias add %d×%d×%d×%d must be positive", cfg.GEMM, cfg.N, cfg.C, cfg.H, cfg.W)
	}
	dev, err := npu.NewDevice(prof)
	if err != nil {
		return nil, fmt.Errorf("layout study: %w", err)
	}
	tab := &report.LayoutTable{Device: prof.Name, Notes: []string{
		fmt.Sprintf("GEMM %d×%d×%d fp16_fp32acc: a, b and out ND, then all three FRACTAL_NZ (the same product; the NZ out holds the same bits laid out).", m, k, n),
		"An NZ operand's GM → L1 load is a burst per column fractal of whole 32-byte fractal rows and an NZ out's store contiguous fractal-row bursts, where ND takes a burst per row; the model charges the 32-byte blocks a burst touches and no overhead per burst, so at a shape whose rows are whole blocks, as this one, the layouts cost the same cycles and differ in the bursts they take.",
		fmt.Sprintf("Bias add: y = x + bias[c] over fp16 x %d×%d×%d×%d, NCHW (a plane of %d values per channel) against NC1HWC0 (C0 = 16: %d slabs of %d values, %d padding channels).",
			cfg.N, cfg.C, cfg.H, cfg.W, cfg.H*cfg.W, cfg.N*((cfg.C+15)/16), cfg.H*cfg.W*16, (cfg.C+15)/16*16-cfg.C),
		"A copy is charged by its bursts (its contiguous GM runs, one per row of a strided copy), each moving the whole 32-byte GM blocks it touches: GM bursts counts them.",
	}}
	for _, f := range []string{ops.FormatND, ops.FormatFractalNZ} {
		cost, err := layoutGEMM(ctx, dev, m, k, n, f, cfg.Seed)
		if err != nil {
			return nil, err
		}
		tab.Rows = append(tab.Rows, layoutRow(fmt.Sprintf("gemm %d×%d×%d", m, k, n), "a, b, out "+f, cost))
	}
	for _, frac := range []bool{false, true} {
		cost, err := biasAdd(ctx, dev, cfg, frac)
		if err != nil {
			return nil, err
		}
		layout := "NCHW"
		if frac {
			layout = "NC1HWC0"
		}
		tab.Rows = append(tab.Rows, layoutRow(fmt.Sprintf("bias add %d×%d×%d×%d", cfg.N, cfg.C, cfg.H, cfg.W), layout, cost))
	}
	return tab, nil
}

// layoutRow is one row of the table from a launch's cost.
func layoutRow(workload, layout string, c *npu.Cost) report.LayoutRow {
	var dma int64
	for _, cc := range c.Cores {
		dma += cc.DMACycles
	}
	return report.LayoutRow{Workload: workload, Layout: layout, Cycles: c.Cycles, GMBytesIn: c.GMBytesIn, GMBytesOut: c.GMBytesOut, GMBursts: c.GMBursts, DMACycles: dma}
}

// layoutGEMM runs gemm with every operand in format f.
func layoutGEMM(ctx context.Context, dev *npu.Device, m, k, n int, f string, seed uint64) (*npu.Cost, error) {
	p := ops.Params{"format_a": f, "format_b": f, "format_out": f, "m": fmt.Sprint(m), "k": fmt.Sprint(k), "n": fmt.Sprint(n)}
	vp, err := ops.GEMM.Validate(p)
	if err != nil {
		return nil, fmt.Errorf("layout study: %w", err)
	}
	in, err := ops.GEMM.Generate(vp, ops.Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: ops.DistUniform, Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("layout study: %w", err)
	}
	_, cost, err := kernels.GEMMKernel(ctx, dev, vp, in)
	if err != nil {
		return nil, fmt.Errorf("layout study: gemm %s: %w", f, err)
	}
	return cost, nil
}

// biasAdd runs the bias-add kernel over NCHW (frac false) or NC1HWC0.
func biasAdd(ctx context.Context, dev *npu.Device, cfg LayoutConfig, frac bool) (*npu.Cost, error) {
	const c0 = 16
	hw := cfg.H * cfg.W
	units, unit, chans := cfg.N*cfg.C, hw, cfg.C // NCHW: a plane per (n, c)
	if frac {
		c1 := (cfg.C + c0 - 1) / c0
		units, unit, chans = cfg.N*c1, hw*c0, c1*c0 // a slab per (n, c1); padding channels' bias 0
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c61796f7574)) // "layout"
	x, err := ops.Fill(rng, ops.DistUniform, tensor.Float16, units*unit)
	if err != nil {
		return nil, fmt.Errorf("layout study: bias add: %w", err)
	}
	bias := tensor.MustNew(tensor.Float16, chans) // padding channels stay +0
	b, err := ops.Fill(rng, ops.DistUniform, tensor.Float16, min(cfg.C, chans))
	if err != nil {
		return nil, fmt.Errorf("layout study: bias add: %w", err)
	}
	for i := range b.Len() {
		bias.SetBits(i, b.Bits(i))
	}
	y := tensor.MustNew(tensor.Float16, units*unit)
	blockDim := min(units, dev.Profile().VectorCores)
	cost, err := dev.LaunchOn(ctx, npu.VectorCore, blockDim, func(core *npu.Core) error {
		xb, err := core.AllocUB(unit * 2)
		if err != nil {
			return err
		}
		bb, err := core.AllocUB(chans * 2)
		if err != nil {
			return err
		}
		if err := core.DataCopyPadIn(bb, bias, 0, chans); err != nil {
			return err
		}
		for u := core.BlockIdx; u < units; u += core.BlockDim {
			if err := core.DataCopyPadIn(xb, x, u*unit, unit); err != nil {
				return err
			}
			ch := u % cfg.C // NCHW: the plane's channel
			if frac {
				ch = u % (chans / c0) * c0 // the slab's first channel
			}
			err := core.VectorFused("bias add", unit*2, func() {
				v, b := xb.F16(), bb.F16()
				for i := range unit {
					j := ch
					if frac {
						j += i % c0
					}
					v[i] = float16.Fromfloat32(v[i].Float32() + b[j].Float32()) // one rounding of the exact fp16 sum
				}
			}, npu.VectorOperand{Name: "x", Buf: xb, Bytes: unit * 2, ReadBytes: unit * 2}, npu.VectorOperand{Name: "bias", Buf: bb, Bytes: chans * 2, ReadBytes: 2})
			if err != nil {
				return err
			}
			if err := core.DataCopyPadOut(y, u*unit, xb, unit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("layout study: bias add: %w", err)
	}
	return cost, nil
}
