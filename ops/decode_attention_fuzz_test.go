package ops

import (
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// FuzzDecodeExpect holds decode_attention's Expect (its chunked kernels,
// the assembly and the Go ones) to the serial loop (decodeExpectSerial)
// on every element, bit for bit (NaNs by NaN-ness), as
// TestDecodeExpectSpecialsMatchSerial does on 24 drawn cases: here the
// fuzzer's bytes choose the shape, the layout, the cache dtype, the
// distribution and seed of the generated inputs, the overflow and
// subnormal profile, and which elements of q, the caches and the scales
// become which special value (±Inf, NaN, ±65504, −0, and 0 for a scale).
func FuzzDecodeExpect(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{3, 2, 1, 0, 200, 7, 9, 3, 1, 0, 5, 4, 2, 1, 0, 255, 3, 1, 4, 1, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 10 {
			return
		}
		h := 1 + int(data[0])%3
		dims := map[string]int{"b": 1 + int(data[1])%4, "s": 2 + int(data[2])%4, "h": h, "hq": h * (1 + int(data[3])%3),
			"d": []int{1, 5, 16, 20, 33}[int(data[4])%5], "l": 1 + int(data[5])%(2*decodeChunk+9), "bs": 1 + int(data[6])%20}
		layout := []string{KVContiguous, KVPaged}[data[7]&1]
		dt := []string{KVFP16, KVInt8}[data[7]>>1&1]
		num := tensor.Numerics{Overflow: tensor.Overflow(data[7] >> 2 & 1), Subnormals: tensor.Subnormals(data[7] >> 3 & 1)}
		dists := DecodeAttention.Dists()
		dist := dists[int(data[8])%len(dists)]
		seed := uint64(data[9])
		p, err := DecodeAttention.Validate(Params{"layout": layout, "cache_dtype": dt})
		if err != nil {
			t.Fatal(err)
		}
		in, err := DecodeAttention.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
		if err != nil {
			return // a shape the generator refuses (more sequences than slots, …)
		}
		kvFuzzSpecials(in, []string{"q", "k_cache", "v_cache", "k_scale", "v_scale"}, data[10:])
		want := decodeExpectSerial(t, p, in, num)
		saved := daUseAsm
		defer func() { daUseAsm = saved }()
		for _, asm := range []bool{true, false} {
			daUseAsm = asm && saved
			got, err := DecodeAttention.Expect(p, in, num)
			if err != nil {
				t.Fatalf("decode_attention %s dist=%s dims=%v seed=%d numerics=%s: %v", p, dist, dims, seed, num, err)
			}
			if i := firstExpectedDiffNaN(got["out"], want); i >= 0 {
				t.Fatalf("decode_attention %s dist=%s dims=%v seed=%d numerics=%s useAsm=%v: element %d: got %s / want (serial) %s",
					p, dist, dims, seed, num, daUseAsm, i, expectedAt(got["out"], i), expectedAt(want, i))
			}
		}
	})
}
