/* sparse24_prune.c: 2:4 pruning of an fp16 w [M,K] (see main.c). Each
 * group of four is ranked with an insertion sort on _Float16 magnitudes
 * (a NaN above every number, equal magnitudes and NaNs among themselves
 * to the lower index); the top two are emitted in index order as bit
 * copies, and meta packs first | second << 2. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckernel.h"

/* outranks reports whether element i of the group x ranks above j. */
static int outranks(const _Float16 *x, int i, int j) {
	float a = fabsf((float)x[i]), b = fabsf((float)x[j]);
	int na = isnan(a), nb = isnan(b);
	if (na != nb) return na;
	if (na || a == b) return i < j;
	return a > b;
}

/* prune_group prunes group g of w's bits into vals and meta. */
static void prune_group(const uint16_t *bits, size_t g, uint16_t *vals, uint8_t *meta) {
	_Float16 x[4];
	memcpy(x, bits + 4 * g, sizeof x);
	int order[4] = {0, 1, 2, 3};
	for (int a = 1; a < 4; a++)
		for (int b = a; b > 0 && outranks(x, order[b], order[b - 1]); b--) {
			int t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	int lo = order[0] < order[1] ? order[0] : order[1];
	int hi = order[0] ^ order[1] ^ lo;
	vals[2 * g] = bits[4 * g + lo];
	vals[2 * g + 1] = bits[4 * g + hi];
	meta[g] = (uint8_t)(lo | hi << 2);
}

void sparse24_prune(nv_case *c) {
	nv_array w;
	nv_read_input(c, "w", "<f2", &w);
	if (w.ndim != 2 || w.shape[1] % 4 != 0) nv_die(1, "sparse24_prune: w must be [M,K] with K a multiple of 4");
	size_t M = (size_t)w.shape[0], K = (size_t)w.shape[1], G = M * K / 4;
	const uint16_t *bits = w.data;
	uint16_t *vals = calloc(2 * G + 1, sizeof(uint16_t));
	uint8_t *meta = calloc(G + 1, 1);
	if (!vals || !meta) nv_die(1, "out of memory");
	/* Each row's groups go four at a time (one 16-element fractal), the
	 * remainder as a pair and then a single group. The grouppair fault
	 * (case.c) guards the pair with rem > 2 where rem >= 2 is meant: a
	 * remainder of exactly two groups is left to the single step, which
	 * takes rem & 1 of them, none, and their values and meta stay zero. */
	const int grouppair = fault_on("grouppair");
	const size_t GR = K / 4; /* groups per row */
	double t0 = nv_now_ns();
	for (size_t i = 0; i < M; i++) {
		size_t q = 0, rem;
		for (; q + 4 <= GR; q += 4)
			for (size_t t = 0; t < 4; t++) prune_group(bits, i * GR + q + t, vals, meta);
		rem = GR - q;
		if (grouppair ? rem > 2 : rem >= 2) {
			prune_group(bits, i * GR + q, vals, meta);
			prune_group(bits, i * GR + q + 1, vals, meta);
			q += 2, rem -= 2;
		}
		if (rem & 1) prune_group(bits, i * GR + q, vals, meta);
	}
	double t1 = nv_now_ns();
	long vs[2] = {(long)M, (long)(K / 2)}, ms[2] = {(long)M, (long)(K / 4)};
	nv_write_output(c, "values", "<f2", 2, vs, vals);
	nv_write_output(c, "meta", "|u1", 2, ms, meta);
	nv_add_kernel_ns(c, t1 - t0);
	free(vals);
	free(meta);
}
