/* gemm.c: every gemm mode, K summed in four interleaved lanes (see
 * main.c). */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckernel.h"

#define LANES 4

/* Per-mode formats: the input descr, the output descr, and whether the
 * accumulator is fp16 (mode fp16) or the inputs are int8. */
typedef struct {
	const char *name, *in, *out;
} gemm_mode;

static const gemm_mode gemm_modes[] = {
	{"fp32", "<f4", "<f4"},
	{"fp16_fp32acc", "<f2", "<f2"},
	{"fp16", "<f2", "<f2"},
	{"bf16_fp32acc", "<u2", "<u2"},
	{"int8_int32acc", "|i1", "<f2"},
};

/* load_f32 widens an input matrix of descr to float (exact for every
 * input format). */
static float *load_f32(const nv_array *a, const char *descr) {
	float *f = malloc(a->count * sizeof(float) + 1);
	if (!f) nv_die(1, "out of memory");
	for (size_t i = 0; i < a->count; i++) {
		if (!strcmp(descr, "<f4")) f[i] = ((const float *)a->data)[i];
		else if (!strcmp(descr, "<f2")) f[i] = (float)((const _Float16 *)a->data)[i];
		else if (!strcmp(descr, "<u2")) f[i] = nv_bf16_to_f32(((const uint16_t *)a->data)[i]);
		else f[i] = (float)((const int8_t *)a->data)[i];
	}
	return f;
}

/* misplace_second_tiles is the tile2 fault (case.c): the M×N results in
 * 64×64 tiles dealt round-robin to 24 cores, each core storing every tile
 * at its first tile's origin (clipped to the matrix), so with more tiles
 * than cores the later tiles land on the first ones and their own places
 * stay zero. */
static void misplace_second_tiles(float *res, size_t M, size_t N) {
	const size_t T = 64, cores = 24;
	size_t tm = (M + T - 1) / T, tn = (N + T - 1) / T;
	if (tm * tn <= cores) return;
	float *moved = calloc(M * N + 1, sizeof(float));
	if (!moved) nv_die(1, "out of memory");
	for (size_t t = 0; t < tm * tn; t++) {
		size_t d = t % cores;
		size_t m0 = t / tn * T, n0 = t % tn * T, d0 = d / tn * T, e0 = d % tn * T;
		for (size_t i = 0; i < T && m0 + i < M && d0 + i < M; i++)
			for (size_t j = 0; j < T && n0 + j < N && e0 + j < N; j++) moved[(d0 + i) * N + e0 + j] = res[(m0 + i) * N + n0 + j];
	}
	memcpy(res, moved, M * N * sizeof(float));
	free(moved);
}

/* gemm computes out = alpha·(A·B) + beta·C in every mode of the contract,
 * in its own order: each dot product in LANES interleaved partial sums
 * (k mod LANES) combined pairwise, which matches neither of the emulator's
 * accumulate models. fp16 mode keeps the partial sums in _Float16 (every
 * product and sum rounded to fp16); int8 sums exactly in 64-bit integers. */
void gemm(nv_case *c) {
	const char *name = param(c, "mode", "fp16_fp32acc");
	const gemm_mode *mode = NULL;
	for (size_t i = 0; i < sizeof gemm_modes / sizeof gemm_modes[0]; i++)
		if (!strcmp(gemm_modes[i].name, name)) mode = &gemm_modes[i];
	if (!mode) nv_die(2, "gemm: unsupported mode %s", name);
	const int fp16acc = !strcmp(name, "fp16"), int8 = !strcmp(name, "int8_int32acc");
	double alpha = nv_param_f64(c, "alpha", 1), beta = nv_param_f64(c, "beta", 0);
	nv_array a, b, cm = {0}, sa = {0}, sb = {0};
	nv_read_input(c, "a", mode->in, &a);
	nv_read_input(c, "b", mode->in, &b);
	/* Layouts: a, b and out (c follows out) ND or FRACTAL_NZ; the
	 * logical M, K, N from the params m, k, n when set, else from an ND
	 * operand, else an NZ operand's padded extent. */
	const int nza = nz_is(c, "format_a"), nzb = nz_is(c, "format_b"), nzo = nz_is(c, "format_out");
	if (a.ndim != (nza ? 4 : 2) || b.ndim != (nzb ? 4 : 2)) nv_die(1, "gemm: a and b must be [M,K] and [K,N] (4-D when FRACTAL_NZ)");
	if (beta != 0) {
		nv_read_input(c, "c", mode->out, &cm);
		if (cm.ndim != (nzo ? 4 : 2)) nv_die(1, "gemm: c must be [M,N] (4-D when format_out is FRACTAL_NZ)");
	}
	size_t M = (size_t)atol(param(c, "m", "0")), K = (size_t)atol(param(c, "k", "0")), N = (size_t)atol(param(c, "n", "0"));
	const size_t c0in = 32 / a.itemsize;
	if (!M) M = !nza ? (size_t)a.shape[0] : beta != 0 && !nzo ? (size_t)cm.shape[0] : (size_t)a.shape[1] * 16;
	if (!K) K = !nza ? (size_t)a.shape[1] : !nzb ? (size_t)b.shape[0] : (size_t)a.shape[0] * c0in;
	if (!N) N = !nzb ? (size_t)b.shape[1] : beta != 0 && !nzo ? (size_t)cm.shape[1] : (size_t)b.shape[0] * c0in;
	if (!nza && ((size_t)a.shape[0] != M || (size_t)a.shape[1] != K)) nv_die(1, "gemm: a must be [M,K]");
	if (!nzb && ((size_t)b.shape[0] != K || (size_t)b.shape[1] != N)) nv_die(1, "gemm: b must be [K,N]");
	float *cf = NULL;
	if (beta != 0) {
		if (!nzo && ((size_t)cm.shape[0] != M || (size_t)cm.shape[1] != N)) nv_die(1, "gemm: c must be [M,N]");
		cf = load_f32(&cm, mode->out);
		if (nzo) {
			float *nd = nz_gather(cf, M, N, cm.itemsize);
			free(cf);
			cf = nd;
		}
	}
	if (int8) {
		nv_read_input(c, "scale_a", "<f4", &sa);
		nv_read_input(c, "scale_b", "<f4", &sb);
		if (sa.count != 1 && sa.count != M) nv_die(1, "gemm: scale_a must be [M] or [1]");
		if (sb.count != 1 && sb.count != N) nv_die(1, "gemm: scale_b must be [N] or [1]");
	}
	float *af = load_f32(&a, mode->in), *bf = load_f32(&b, mode->in);
	if (nza) {
		float *nd = nz_gather(af, M, K, a.itemsize);
		free(af);
		af = nd;
	}
	if (nzb) {
		float *nd = nz_gather(bf, K, N, b.itemsize);
		free(bf);
		bf = nd;
	}
	float *acc = malloc(LANES * N * sizeof(float) + 1);
	_Float16 *acc16 = malloc(LANES * N * sizeof(_Float16) + 1);
	int64_t *iacc = malloc(N * sizeof(int64_t) + 1);
	float *res = malloc(M * N * sizeof(float) + 1);
	if (!acc || !acc16 || !iacc || !res) nv_die(1, "out of memory");

	/* Faults (case.c): splitk loses the last 256-k chunk for K > 4096;
	 * lossy rounds the fp32 lanes to the 16-bit output dtype after every
	 * chunk for K > 4096. */
	const size_t chunk = 256;
	size_t kend = K;
	if (fault_on("splitk") && K > 4096) kend = chunk * ((K - 1) / chunk);
	/* The kunroll fault (case.c): K walked four k at a time, one per lane,
	 * and the last K mod 4 k by a fall-through switch (case 3: lane 2,
	 * then lane 1, then case 1: lane 0) whose "case 2:" label is missing:
	 * a remainder of two jumps to the default, which adds nothing, so the
	 * last two k never reach their lanes. */
	if (fault_on("kunroll") && K % 4 == 2) kend = K - 2;
	const int lossy = fault_on("lossy") && K > 4096 && strcmp(mode->out, "<f4") != 0;
	double t0 = nv_now_ns();
	for (size_t i = 0; i < M; i++) {
		if (int8) {
			memset(iacc, 0, N * sizeof(int64_t));
			for (size_t k = 0; k < kend; k++)
				for (size_t j = 0; j < N; j++) iacc[j] += (int64_t)af[i * K + k] * (int64_t)bf[k * N + j];
			const float *sav = sa.data, *sbv = sb.data;
			for (size_t j = 0; j < N; j++) {
				float s = sav[sa.count == 1 ? 0 : i] * sbv[sb.count == 1 ? 0 : j];
				res[i * N + j] = s * (float)iacc[j];
			}
			continue;
		}
		if (fp16acc) {
			for (size_t l = 0; l < LANES * N; l++) acc16[l] = 0;
			for (size_t k = 0; k < kend; k++) {
				const _Float16 aik = (_Float16)af[i * K + k];
				_Float16 *lane = acc16 + (k % LANES) * N;
				for (size_t j = 0; j < N; j++) {
					_Float16 p = (_Float16)(aik * (_Float16)bf[k * N + j]);
					lane[j] = (_Float16)(lane[j] + p);
				}
			}
			for (size_t j = 0; j < N; j++)
				res[i * N + j] = (float)(_Float16)((_Float16)(acc16[j] + acc16[N + j]) + (_Float16)(acc16[2 * N + j] + acc16[3 * N + j]));
			continue;
		}
		memset(acc, 0, LANES * N * sizeof(float));
		for (size_t k = 0; k < kend; k++) {
			const float aik = af[i * K + k];
			float *lane = acc + (k % LANES) * N;
			const float *brow = bf + k * N;
			for (size_t j = 0; j < N; j++) lane[j] += aik * brow[j];
			if (lossy && (k + 1) % chunk == 0)
				for (size_t l = 0; l < LANES * N; l++)
					acc[l] = !strcmp(mode->out, "<f2") ? (float)(_Float16)acc[l] : nv_bf16_to_f32(nv_store_bf16(acc[l], &c->numerics));
		}
		for (size_t j = 0; j < N; j++) res[i * N + j] = (acc[j] + acc[N + j]) + (acc[2 * N + j] + acc[3 * N + j]);
	}
	if (fault_on("tile2")) misplace_second_tiles(res, M, N);
	/* Epilogue in fp16 for mode fp16, else fp32. */
	void *out = malloc(M * N * 4 + 1);
	if (!out) nv_die(1, "out of memory");
	for (size_t i = 0; i < M * N; i++) {
		float v = res[i];
		if (fp16acc) {
			_Float16 h = (_Float16)v;
			if (alpha != 1) h = (_Float16)((_Float16)alpha * h);
			if (beta != 0) h = (_Float16)(h + (_Float16)((_Float16)beta * (_Float16)cf[i]));
			v = (float)h;
		} else {
			if (alpha != 1) v = (float)alpha * v;
			if (beta != 0) v = v + (float)beta * cf[i];
		}
		if (!strcmp(mode->out, "<f4")) ((float *)out)[i] = nv_store_f32(v, &c->numerics);
		else if (!strcmp(mode->out, "<u2")) ((uint16_t *)out)[i] = nv_store_bf16(v, &c->numerics);
		else ((_Float16 *)out)[i] = store_f16(v, &c->numerics);
	}
	double t1 = nv_now_ns();
	if (nzo) {
		long shape[4];
		void *nz = nz_scatter(out, M, N, !strcmp(mode->out, "<f4") ? 4 : 2, shape);
		nv_write_output(c, "out", mode->out, 4, shape, nz);
		free(nz);
	} else {
		long shape[2] = {(long)M, (long)N};
		nv_write_output(c, "out", mode->out, 2, shape, out);
	}
	nv_add_kernel_ns(c, t1 - t0);
	if (fault_on("clobber")) {
		size_t osz = !strcmp(mode->out, "<f4") ? 4 : 2, ob = M * N * osz, ab = M * K * a.itemsize;
		clobber_input(c, "a", out, ob < ab ? ob : ab);
	}
	free(af);
	free(bf);
	free(cf);
	free(acc);
	free(acc16);
	free(iacc);
	free(res);
	free(out);
}

/* The FRACTAL_NZ layout (ckernel.h): element (r, c) at ((c/C0·M1 +
 * r/16)·16 + r%16)·C0 + c%C0. */
size_t nz_at(size_t r, size_t col, size_t m1, size_t c0) {
	return ((col / c0 * m1 + r / 16) * 16 + r % 16) * c0 + col % c0;
}

int nz_is(const nv_case *c, const char *param_name) { return !strcmp(param(c, param_name, "ND"), "FRACTAL_NZ"); }

float *nz_gather(const float *f, size_t rows, size_t cols, size_t size) {
	size_t c0 = 32 / size, m1 = (rows + 15) / 16;
	float *nd = malloc(rows * cols * sizeof(float) + 1);
	if (!nd) nv_die(1, "out of memory");
	for (size_t r = 0; r < rows; r++)
		for (size_t col = 0; col < cols; col++) nd[r * cols + col] = f[nz_at(r, col, m1, c0)];
	return nd;
}

void *nz_scatter(const void *nd, size_t rows, size_t cols, size_t size, long shape[4]) {
	size_t c0 = 32 / size, m1 = (rows + 15) / 16, k1 = (cols + c0 - 1) / c0;
	unsigned char *nz = calloc(k1 * m1 * 16 * c0 * size + 1, 1);
	if (!nz) nv_die(1, "out of memory");
	for (size_t r = 0; r < rows; r++)
		for (size_t col = 0; col < cols; col++) memcpy(nz + nz_at(r, col, m1, c0) * size, (const unsigned char *)nd + (r * cols + col) * size, size);
	shape[0] = (long)k1, shape[1] = (long)m1, shape[2] = 16, shape[3] = (long)c0;
	return nz;
}
