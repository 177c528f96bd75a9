/* gemm24.c: 2:4 structured-sparse GEMM (see main.c). Row i's compressed
 * value t multiplies row 4·(t/2) + (first or second index of its meta
 * byte) of b; the kept products of a dot product are summed in the
 * four interleaved lanes of gemm.c (lane = dense k mod 4, i.e. the kept
 * index within its group) combined pairwise, in an fp32 accumulator (fp16_fp32acc) or exactly in 64-bit integers
 * (int8_int32acc, then scale_a[i]·scale_b[j] applied in fp32). Pruned k
 * are never read. With lanes by dense k, gemm24(prune(w), b) equals this
 * kernel's gemm(decompress(prune(w)), b) bit for bit for finite b (a zero
 * product leaves a lane that is never −0 unchanged), as the contract's
 * property wants. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckernel.h"

#define LANES 4

void gemm24(nv_case *c) {
	const char *mode = param(c, "mode", "fp16_fp32acc");
	int int8 = !strcmp(mode, "int8_int32acc");
	if (!int8 && strcmp(mode, "fp16_fp32acc")) nv_die(2, "gemm24: unsupported mode %s", mode);
	const char *in = int8 ? "|i1" : "<f2";
	nv_array av, am, b, sa = {0}, sb = {0};
	nv_read_input(c, "a_values", in, &av);
	nv_read_input(c, "a_meta", "|u1", &am);
	nv_read_input(c, "b", in, &b);
	/* b ND [K,N], or FRACTAL_NZ (format_b) with K from a_meta and N from
	 * the param n (0: the padded extent); out ND or FRACTAL_NZ. */
	const int nzb = nz_is(c, "format_b"), nzo = nz_is(c, "format_out");
	unsigned char *bnd = NULL;
	if (nzb) {
		if (b.ndim != 4 || am.ndim != 2) nv_die(1, "gemm24: b must be FRACTAL_NZ [N1,K1,16,C0] and a_meta [M,K/4]");
		size_t K = 4 * (size_t)am.shape[1], N = (size_t)atol(param(c, "n", "0")), m1 = (size_t)b.shape[1], c0 = (size_t)b.shape[3];
		if (!N) N = (size_t)b.shape[0] * c0;
		bnd = malloc(K * N * b.itemsize + 1);
		if (!bnd) nv_die(1, "out of memory");
		for (size_t r = 0; r < K; r++)
			for (size_t col = 0; col < N; col++)
				memcpy(bnd + (r * N + col) * b.itemsize, (const unsigned char *)b.data + nz_at(r, col, m1, c0) * b.itemsize, b.itemsize);
		b.data = bnd, b.ndim = 2, b.shape[0] = (long)K, b.shape[1] = (long)N, b.count = K * N;
	}
	if (b.ndim != 2 || b.shape[0] % 4 != 0) nv_die(1, "gemm24: b must be [K,N] with K a multiple of 4");
	size_t K = (size_t)b.shape[0], N = (size_t)b.shape[1];
	if (av.ndim != 2 || (size_t)av.shape[1] != K / 2) nv_die(1, "gemm24: a_values must be [M,K/2]");
	size_t M = (size_t)av.shape[0], KH = K / 2, G = K / 4;
	if (am.ndim != 2 || (size_t)am.shape[0] != M || (size_t)am.shape[1] != G) nv_die(1, "gemm24: a_meta must be [M,K/4]");
	if (int8) {
		nv_read_input(c, "scale_a", "<f4", &sa);
		nv_read_input(c, "scale_b", "<f4", &sb);
		if (sa.count != 1 && sa.count != M) nv_die(1, "gemm24: scale_a must be [M] or [1]");
		if (sb.count != 1 && sb.count != N) nv_die(1, "gemm24: scale_b must be [N] or [1]");
	}
	/* The B row of every compressed position, decoded once from meta. */
	const uint8_t *meta = am.data;
	size_t *row = malloc(M * KH * sizeof(size_t) + 1);
	float *acc = malloc(LANES * N * sizeof(float) + 1);
	int64_t *iacc = malloc(N * sizeof(int64_t) + 1);
	_Float16 *out = malloc(M * N * sizeof(_Float16) + 1);
	if (!row || !acc || !iacc || !out) nv_die(1, "out of memory");
	double t0 = nv_now_ns();
	for (size_t i = 0; i < M; i++)
		for (size_t g = 0; g < G; g++) {
			uint8_t m = meta[i * G + g];
			unsigned first = m & 3u, second = m >> 2 & 3u;
			if (m >= 16 || first >= second) nv_die(1, "gemm24: a_meta[%zu,%zu] = 0x%02x is malformed", i, g, m);
			row[i * KH + 2 * g] = 4 * g + first;
			row[i * KH + 2 * g + 1] = 4 * g + second;
		}
	for (size_t i = 0; i < M; i++) {
		if (int8) {
			const int8_t *a = av.data, *bb = b.data;
			memset(iacc, 0, N * sizeof(int64_t));
			for (size_t t = 0; t < KH; t++) {
				const int8_t *brow = bb + row[i * KH + t] * N;
				int64_t ait = a[i * KH + t];
				for (size_t j = 0; j < N; j++) iacc[j] += ait * brow[j];
			}
			const float *sav = sa.data, *sbv = sb.data;
			for (size_t j = 0; j < N; j++) {
				float s = sav[sa.count == 1 ? 0 : i] * sbv[sb.count == 1 ? 0 : j];
				out[i * N + j] = store_f16(s * (float)iacc[j], &c->numerics);
			}
			continue;
		}
		const _Float16 *a = av.data, *bb = b.data;
		memset(acc, 0, LANES * N * sizeof(float));
		for (size_t t = 0; t < KH; t++) {
			const _Float16 *brow = bb + row[i * KH + t] * N;
			float ait = (float)a[i * KH + t], *lane = acc + (row[i * KH + t] % LANES) * N;
			for (size_t j = 0; j < N; j++) lane[j] += ait * (float)brow[j];
		}
		for (size_t j = 0; j < N; j++)
			out[i * N + j] = store_f16((acc[j] + acc[N + j]) + (acc[2 * N + j] + acc[3 * N + j]), &c->numerics);
	}
	double t1 = nv_now_ns();
	if (nzo) {
		long shape[4];
		void *nz = nz_scatter(out, M, N, 2, shape);
		nv_write_output(c, "out", "<f2", 4, shape, nz);
		free(nz);
	} else {
		long shape[2] = {(long)M, (long)N};
		nv_write_output(c, "out", "<f2", 2, shape, out);
	}
	nv_add_kernel_ns(c, t1 - t0);
	free(bnd);
	free(row);
	free(acc);
	free(iacc);
	free(out);
}
