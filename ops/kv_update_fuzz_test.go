package ops

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// FuzzKVUpdateExpect holds kv_update's Expect to the serial loop
// (kvUpdateExpectSerial) on every element of every output, as
// TestKVUpdateExpectMatchesSerial does on two shapes: here the fuzzer's
// bytes choose the shape, the layout, the cache dtype, the distribution
// and seed of the generated inputs, the overflow and subnormal profile,
// and which elements of x, the projections and the caches become which
// special value (±Inf, NaN, ±65504, −0; in a scale also 0).
func FuzzKVUpdateExpect(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{2, 3, 1, 0, 17, 7, 13, 1, 250, 3, 2, 9, 4, 1, 6, 0, 77, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 10 {
			return
		}
		dims := map[string]int{"b": 1 + int(data[0])%5, "s": 2 + int(data[1])%4, "h": 1 + int(data[2])%3,
			"d": []int{1, 3, 8, 16, 24}[int(data[3])%5], "l": 1 + int(data[4])%40, "bs": 1 + int(data[5])%8}
		layout := []string{KVContiguous, KVPaged}[data[6]&1]
		dt := []string{KVFP16, KVInt8}[data[6]>>1&1]
		num := tensor.Numerics{Overflow: tensor.Overflow(data[6] >> 2 & 1), Subnormals: tensor.Subnormals(data[6] >> 3 & 1)}
		dists := KVUpdate.Dists()
		dist := dists[int(data[7])%len(dists)]
		seed := uint64(data[8])
		p, err := KVUpdate.Validate(Params{"layout": layout, "cache_dtype": dt})
		if err != nil {
			t.Fatal(err)
		}
		in, err := KVUpdate.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
		if err != nil {
			return // a shape the generator refuses
		}
		kvFuzzSpecials(in, []string{"x", "w_k", "w_v", "k_cache", "v_cache", "k_scale", "v_scale"}, data[9:])
		got, err1 := KVUpdate.Expect(p, in, num)
		want, err2 := kvUpdateExpectSerial(p, in, num)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("kv_update %s dist=%s dims=%v seed=%d numerics=%s: Expect: %v / want (serial) %v", p, dist, dims, seed, num, err1, err2)
		}
		if err1 != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("kv_update %s dist=%s dims=%v seed=%d numerics=%s: got %d outputs / want (serial) %d", p, dist, dims, seed, num, len(got), len(want))
		}
		for name, w := range want {
			if i := firstExpectedDiff(got[name], w); i >= 0 {
				t.Fatalf("kv_update %s dist=%s dims=%v seed=%d numerics=%s: %s element %d: got %s / want (serial) %s",
					p, dist, dims, seed, num, name, i, expectedAt(got[name], i), expectedAt(w, i))
			}
		}
	})
}

// kvFuzzSpecials sets elements of the KV inputs named in names to special
// values, one (input, position, value) triple of bytes of r at a time:
// ±Inf, NaN, ±65504 or −0, and in a scale 0, +Inf or NaN. Int8 inputs and
// absent ones are left as they are.
func kvFuzzSpecials(in map[string]*tensor.Tensor, names []string, r []byte) {
	specials := []float64{math.Inf(1), math.Inf(-1), math.NaN(), 65504, -65504, math.Copysign(0, -1)}
	for ; len(r) >= 3; r = r[3:] {
		name := names[int(r[0])%len(names)]
		x, ok := in[name]
		if !ok || x.DType == tensor.Int8 || x.Len() == 0 {
			continue
		}
		v := specials[int(r[2])%len(specials)]
		if name == "k_scale" || name == "v_scale" {
			v = []float64{0, math.Inf(1), math.NaN()}[int(r[2])%3]
		}
		x.SetFloat64(int(r[1])*7919%x.Len(), v, tensor.Numerics{})
	}
}
