package main

// transdataBadInputs are the catalogue's entries of issue 35: transdata
// given a format pair that is not a legal conversion, an extent param on
// the wrong pair or not a number, and an x whose shape does not fit the
// source format (rank, the dtype's C0, the 16-row fractal, C1, M1 or K1
// against the extent params, a forward extent that contradicts x). Each
// is exit 2 naming the param, before any kernel runs.
func transdataBadInputs() []badInput {
	run := func(x string, params ...string) []string {
		a := []string{"run", "transdata"}
		for _, p := range params {
			a = append(a, "--param", p)
		}
		return append(a, "--in", "x="+x, "--out", "{out}")
	}
	i8Dict := func(shape string) string {
		return "{'descr': '|i1', 'fortran_order': False, 'shape': " + shape + ", }"
	}
	x := func(dict string, n int) map[string][]byte {
		return map[string][]byte{"{dir}/x.npy": npyV1(dict, zeros(n))}
	}
	atParam := []string{"npuverify: run: --param: transdata: "}
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	atX := []string{"npuverify: run: transdata: ", `input "x": shape `}
	return []badInput{
		{name: "transdata/illegal pair NCHW to NHWC", files: x(fp16Dict("(1, 2, 3, 4)"), 48),
			args: run("{dir}/x.npy", "src_format=NCHW", "dst_format=NHWC"), code: 2,
			want: with(atParam, `param "dst_format"`, "NCHW → NHWC is not a legal conversion", "NCHW→NC1HWC0")},
		{name: "transdata/illegal pair ND to NC1HWC0", files: x(fp16Dict("(4, 4)"), 32),
			args: run("{dir}/x.npy", "src_format=ND", "dst_format=NC1HWC0"), code: 2,
			want: with(atParam, `param "dst_format"`, "ND → NC1HWC0 is not a legal conversion")},
		{name: "transdata/unknown format", files: x(fp16Dict("(4, 4)"), 32),
			args: run("{dir}/x.npy", "src_format=ND", "dst_format=NZ"), code: 2,
			want: with(atParam, `param "dst_format"`, `invalid value "NZ"`)},
		{name: "transdata/extent c on an ND pair", files: x(fp16Dict("(4, 4)"), 32),
			args: run("{dir}/x.npy", "src_format=ND", "dst_format=FRACTAL_NZ", "c=16"), code: 2,
			want: with(atParam, `param "c" = 16: applies only to the NCHW/NHWC ↔ NC1HWC0 pairs`)},
		{name: "transdata/extent not a number", files: x(fp16Dict("(1, 1, 1, 1, 16)"), 32),
			args: run("{dir}/x.npy", "src_format=NC1HWC0", "dst_format=NCHW", "c=many"), code: 2,
			want: with(atParam, `param "c": invalid value "many"`)},
		{name: "transdata/NCHW x of rank 2", files: x(fp16Dict("(2, 3)"), 12),
			args: run("{dir}/x.npy"), code: 2,
			want: with(atX, `[2 3] does not fit param "src_format" = NCHW (want [N,C,H,W])`)},
		{name: "transdata/NC1HWC0 x with fp32's C0 for fp16", files: x(fp16Dict("(1, 1, 2, 2, 8)"), 64),
			args: run("{dir}/x.npy", "src_format=NC1HWC0", "dst_format=NHWC"), code: 2,
			want: with(atX, `does not fit param "src_format" = NC1HWC0`, "C0 = 16 for dtype fp16")},
		{name: "transdata/NC1HWC0 C1 against c", files: x(fp16Dict("(1, 1, 1, 1, 16)"), 32),
			args: run("{dir}/x.npy", "src_format=NC1HWC0", "dst_format=NCHW", "c=17"), code: 2,
			want: with(atX, `C1 = 1 does not fit param "c" = 17`)},
		{name: "transdata/FRACTAL_NZ M1 against m", files: x(fp16Dict("(1, 1, 16, 16)"), 512),
			args: run("{dir}/x.npy", "src_format=FRACTAL_NZ", "dst_format=ND", "m=17", "k=16"), code: 2,
			want: with(atX, `M1 = 1 does not fit param "m" = 17`)},
		{name: "transdata/FRACTAL_NZ K1 against k", files: x(fp16Dict("(1, 1, 16, 16)"), 512),
			args: run("{dir}/x.npy", "src_format=FRACTAL_NZ", "dst_format=ND", "m=16", "k=40"), code: 2,
			want: with(atX, `K1 = 1 does not fit param "k" = 40`)},
		{name: "transdata/int8 NZ with fp16's C0", files: x(i8Dict("(1, 1, 16, 16)"), 256),
			args: run("{dir}/x.npy", "src_format=FRACTAL_NZ", "dst_format=ND", "dtype=int8"), code: 2,
			want: with(atX, `does not fit param "src_format" = FRACTAL_NZ`, "C0 = 32 for dtype int8")},
		{name: "transdata/NCHW C against c", files: x(fp16Dict("(1, 3, 1, 1)"), 6),
			args: run("{dir}/x.npy", "c=4"), code: 2,
			want: with(atX, `C = 3 does not fit param "c" = 4`)},
		{name: "transdata/dtype against x", files: x(fp16Dict("(1, 3, 1, 1)"), 6),
			args: run("{dir}/x.npy", "dtype=fp32"), code: 2,
			want: []string{"npuverify: run: --in x={dir}/x.npy: ", `tensor "x"`, "dtype fp16 ('<f2'), but transdata", "wants fp32 ('<f4'); nothing is cast"}},
	}
}
