/* vector_add.c: z = x + y, one rounding to the dtype (see main.c). */
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

/* segments lists the ranges [lo, hi) of z the kernel computes, as a
 * vector kernel schedules them: the whole 32-byte blocks (blk elements)
 * in one pass, then the tail of fewer than a block in a step of half a
 * block, a step of a quarter block, and a scalar cleanup of what is left
 * (fewer than a quarter). The vtail fault (case.c) guards the
 * quarter-block step with > where >= is meant: a tail of exactly a
 * quarter block after the half step is then left to the cleanup, which
 * takes what remains modulo a quarter block, nothing, and those elements
 * of z are never written. */
static size_t segments(size_t n, size_t blk, int vtail, size_t seg[4][2]) {
	size_t k = 0, r = n % blk, off = n - r, half = blk / 2, quarter = blk / 4;
	seg[k][0] = 0, seg[k++][1] = off;
	if (r >= half) {
		seg[k][0] = off, seg[k++][1] = off + half;
		off += half, r -= half;
	}
	if (vtail ? r > quarter : r >= quarter) {
		seg[k][0] = off, seg[k++][1] = off + quarter;
		off += quarter, r -= quarter;
	}
	seg[k][0] = off, seg[k++][1] = off + r % quarter;
	return k;
}

void vector_add(nv_case *c) {
	nv_array x, y;
	const char *dt = param(c, "dtype", "fp16");
	const char *descr;
	if (!strcmp(dt, "fp16")) descr = "<f2";
	else if (!strcmp(dt, "fp32")) descr = "<f4";
	else if (!strcmp(dt, "bf16")) descr = "<u2";
	else if (!strcmp(dt, "int8")) descr = "|i1";
	else nv_die(2, "vector_add: unsupported dtype %s", dt);
	nv_read_input(c, "x", descr, &x);
	nv_read_input(c, "y", descr, &y);
	if (x.ndim != 1 || y.ndim != 1 || x.count != y.count) nv_die(1, "vector_add: x and y must be [N] of one size");
	size_t n = x.count;
	void *z = calloc(n * x.itemsize + 1, 1);
	if (!z) nv_die(1, "out of memory");
	/* Faults (case.c): a 16-bit index, ties away from zero, the tail's
	 * quarter-block step skipped. */
	const int index16 = fault_on("index16"), ties = fault_on("ties");
	size_t seg[4][2], nseg = segments(n, 32 / x.itemsize, fault_on("vtail"), seg);
#define AT(i) (index16 ? (size_t)(uint16_t)(i) : (i))
#define EACH(i) for (size_t s = 0; s < nseg; s++) for (size_t i = seg[s][0]; i < seg[s][1]; i++)
	double t0 = nv_now_ns();
	if (!strcmp(dt, "fp16")) {
		const _Float16 *a = x.data, *b = y.data;
		_Float16 *o = z;
		EACH(i) {
			size_t j = AT(i);
			o[j] = ties ? store_f16((float)round_half_away((double)a[j] + (double)b[j], 11, -14), &c->numerics)
			            : store_f16((float)a[j] + (float)b[j], &c->numerics);
		}
	} else if (!strcmp(dt, "fp32")) {
		const float *a = x.data, *b = y.data;
		float *o = z;
		EACH(i) {
			size_t j = AT(i);
			o[j] = ties ? nv_store_f32((float)round_half_away((double)a[j] + (double)b[j], 24, -126), &c->numerics)
			            : nv_store_f32(a[j] + b[j], &c->numerics);
		}
	} else if (!strcmp(dt, "bf16")) {
		const uint16_t *a = x.data, *b = y.data;
		uint16_t *o = z;
		EACH(i) {
			size_t j = AT(i);
			double s = (double)nv_bf16_to_f32(a[j]) + (double)nv_bf16_to_f32(b[j]);
			o[j] = nv_store_bf16(ties ? (float)round_half_away(s, 8, -126) : nv_bf16_to_f32(a[j]) + nv_bf16_to_f32(b[j]), &c->numerics);
		}
	} else {
		const int8_t *a = x.data, *b = y.data;
		int8_t *o = z;
		EACH(i) {
			size_t j = AT(i);
			o[j] = nv_store_i8((float)a[j] + (float)b[j], &c->numerics);
		}
	}
#undef AT
#undef EACH
	double t1 = nv_now_ns();
	long shape[1] = {(long)n};
	nv_write_output(c, "z", descr, 1, shape, z);
	nv_add_kernel_ns(c, t1 - t0);
	if (fault_on("clobber")) clobber_input(c, "x", z, n * x.itemsize);
	free(z);
}
