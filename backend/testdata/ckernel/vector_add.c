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
	/* Faults (case.c): a 16-bit index, ties away from zero. */
	const int index16 = fault_on("index16"), ties = fault_on("ties");
#define AT(i) (index16 ? (size_t)(uint16_t)(i) : (i))
	double t0 = nv_now_ns();
	if (!strcmp(dt, "fp16")) {
		const _Float16 *a = x.data, *b = y.data;
		_Float16 *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = ties ? store_f16((float)round_half_away((double)a[j] + (double)b[j], 11, -14), &c->numerics)
			            : store_f16((float)a[j] + (float)b[j], &c->numerics);
		}
	} else if (!strcmp(dt, "fp32")) {
		const float *a = x.data, *b = y.data;
		float *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = ties ? nv_store_f32((float)round_half_away((double)a[j] + (double)b[j], 24, -126), &c->numerics)
			            : nv_store_f32(a[j] + b[j], &c->numerics);
		}
	} else if (!strcmp(dt, "bf16")) {
		const uint16_t *a = x.data, *b = y.data;
		uint16_t *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			double s = (double)nv_bf16_to_f32(a[j]) + (double)nv_bf16_to_f32(b[j]);
			o[j] = nv_store_bf16(ties ? (float)round_half_away(s, 8, -126) : nv_bf16_to_f32(a[j]) + nv_bf16_to_f32(b[j]), &c->numerics);
		}
	} else {
		const int8_t *a = x.data, *b = y.data;
		int8_t *o = z;
		for (size_t i = 0; i < n; i++) {
			size_t j = AT(i);
			o[j] = nv_store_i8((float)a[j] + (float)b[j], &c->numerics);
		}
	}
#undef AT
	double t1 = nv_now_ns();
	long shape[1] = {(long)n};
	nv_write_output(c, "z", descr, 1, shape, z);
	nv_add_kernel_ns(c, t1 - t0);
	if (fault_on("clobber")) clobber_input(c, "x", z, n * x.itemsize);
	free(z);
}
