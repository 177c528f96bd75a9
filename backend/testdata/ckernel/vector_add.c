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

void vector_add(const casefile *c) {
	npy_array x, y;
	const char *dt = c->dtype[0] ? c->dtype : "fp16";
	const char *descr;
	if (!strcmp(dt, "fp16")) descr = "<f2";
	else if (!strcmp(dt, "fp32")) descr = "<f4";
	else if (!strcmp(dt, "bf16")) descr = "<u2";
	else if (!strcmp(dt, "int8")) descr = "|i1";
	else die(2, "vector_add: unsupported dtype %s", dt);
	read_input(c, "x", descr, &x);
	read_input(c, "y", descr, &y);
	if (x.ndim != 1 || y.ndim != 1 || x.count != y.count) die(1, "vector_add: x and y must be [N] of one size");
	size_t n = x.count;
	void *z = calloc(n * x.itemsize + 1, 1);
	if (!z) die(1, "out of memory");
	/* Faults (case.c): a 16-bit index, ties away from zero. */
	const int index16 = fault_on("index16"), ties = fault_on("ties");
#define AT(i) (index16 ? (size_t)(uint16_t)(i) : (i))
	double t0 = now_ns();
	if (!strcmp(dt, "fp16")) {
		const _Float16 *a = x.data, *b = y.data;
		_Float16 *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = ties ? store_f16((float)round_half_away((double)a[j] + (double)b[j], 11, -14), &c->num)
			            : store_f16((float)a[j] + (float)b[j], &c->num);
		}
	} else if (!strcmp(dt, "fp32")) {
		const float *a = x.data, *b = y.data;
		float *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = ties ? store_f32((float)round_half_away((double)a[j] + (double)b[j], 24, -126), &c->num)
			            : store_f32(a[j] + b[j], &c->num);
		}
	} else if (!strcmp(dt, "bf16")) {
		const uint16_t *a = x.data, *b = y.data;
		uint16_t *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			double s = (double)bf16_to_f32(a[j]) + (double)bf16_to_f32(b[j]);
			o[j] = store_bf16(ties ? (float)round_half_away(s, 8, -126) : bf16_to_f32(a[j]) + bf16_to_f32(b[j]), &c->num);
		}
	} else {
		const int8_t *a = x.data, *b = y.data;
		int8_t *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = store_i8((float)a[j] + (float)b[j], &c->num);
		}
	}
#undef AT
	double t1 = now_ns();
	long shape[1] = {(long)n};
	write_output(c, "z", descr, 1, shape, z, x.itemsize);
	write_timing(t1 - t0);
	if (fault_on("clobber")) clobber_input(c, "x", z, n * x.itemsize);
	free(z);
	npy_free(&x);
	npy_free(&y);
}
