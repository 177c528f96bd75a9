package golden

import (
	"fmt"

	"github.com/npuverify/npuverify/ops"
)

func init() { opDefaults["gemm"] = gemmDefaults }

// gemmDefaults is the default gemm set, per mode:
//
//   - 33×47×17 uniform (every dimension off the 16/32 fractal) under both
//     accumulate models;
//   - alpha = −1.5, beta = 0.25 with a C term on 17×33×15;
//   - special values (±0, ±inf, NaN, subnormals, max) and large
//     magnitudes (overflow, overflow-ambiguous fp16 accumulation) on
//     16×16×16, cancellation on 8×64×8;
//   - a long K (16×512×16) where accumulation error dominates;
//   - special values again under the saturate numerics profile.
//
// Names are <mode>_<what>_<M>x<K>x<N>[_<accumulate>][_sat].
func gemmDefaults() []ops.Case {
	const op = "gemm"
	var out []ops.Case
	for _, mode := range ops.GEMMModes() {
		add := func(what string, dims [3]int, dist string, params ops.Params, sat bool) {
			p := ops.Params{"mode": mode.Name}
			for k, v := range params {
				p[k] = v
			}
			name := fmt.Sprintf("%s_%s_%dx%dx%d", mode.Name, what, dims[0], dims[1], dims[2])
			if acc := p["accumulate"]; acc != "" {
				name += "_" + acc
			}
			labels := []string{"mode:" + mode.Name, "dtype:" + mode.In.String(), "dist:" + dist}
			if sat {
				name += "_sat"
				labels = append(labels, "numerics:saturate")
			}
			c := newCase(op, name, p, map[string]int{"m": dims[0], "k": dims[1], "n": dims[2]}, dist, labels...)
			if sat {
				num := saturate
				c.Numerics = &num
			}
			out = append(out, c)
		}
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			add("uniform", [3]int{33, 47, 17}, ops.DistUniform, ops.Params{"accumulate": acc}, false)
		}
		add("alphabeta", [3]int{17, 33, 15}, ops.DistNormal, ops.Params{"alpha": "-1.5", "beta": "0.25"}, false)
		add("special", [3]int{16, 16, 16}, ops.DistSpecial, nil, false)
		add("large", [3]int{16, 16, 16}, ops.DistLarge, nil, false)
		add("cancel", [3]int{8, 64, 8}, ops.DistCancel, nil, false)
		add("longk", [3]int{16, 512, 16}, ops.DistUniform, nil, false)
		add("special", [3]int{16, 16, 16}, ops.DistSpecial, nil, true)
	}
	return out
}
