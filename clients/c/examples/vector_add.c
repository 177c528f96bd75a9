/* vector_add.c: a complete npuverify driver for vector_add in C, on
 * clients/c/npuverify.h: z = x + y for every dtype of the contract
 * (docs/operators.md), the sum computed in fp32 and rounded once to the
 * dtype under the case's numerics profile (fp16 and bf16 from the float's
 * bits, ties to even; int8 saturated to [-128, 127]).
 *
 *   cc -std=c11 -O2 -I clients/c -o vector_add clients/c/examples/vector_add.c -lm
 *   npuverify check --op vector_add --backend exec:$PWD/vector_add
 *   npuverify check --op vector_add --backend worker:$PWD/vector_add
 *
 * To put a real kernel under test, keep this structure and replace the
 * loops with the call into your runtime. */
#define NPUVERIFY_IMPLEMENTATION
#include "npuverify.h"

#include <string.h>

static void vector_add(nv_case *c) {
	char dtype[16] = "fp16";
	nv_param(c, "dtype", dtype, sizeof dtype);
	nv_array x, y;
	nv_read_input(c, "x", NULL, &x); /* checked against case.json's dtype and shape */
	nv_read_input(c, "y", NULL, &y);
	if (x.ndim != 1 || y.ndim != 1 || x.count != y.count) nv_die(NV_EXIT_ERROR, "vector_add: x and y must be [N] of one size");
	const size_t n = x.count;
	void *z = nv_alloc(c, n * x.itemsize); /* freed by the library when the case ends */
	const nv_numerics *nm = &c->numerics;
	double t0 = nv_now_ns();
	if (!strcmp(dtype, "fp16")) {
		const uint16_t *a = x.data, *b = y.data; /* fp16 bit patterns */
		uint16_t *o = z;
		for (size_t i = 0; i < n; i++) o[i] = nv_store_f16(nv_f16_to_f32(a[i]) + nv_f16_to_f32(b[i]), nm);
	} else if (!strcmp(dtype, "bf16")) {
		const uint16_t *a = x.data, *b = y.data; /* bf16 bit patterns ('<u2') */
		uint16_t *o = z;
		for (size_t i = 0; i < n; i++) o[i] = nv_store_bf16(nv_bf16_to_f32(a[i]) + nv_bf16_to_f32(b[i]), nm);
	} else if (!strcmp(dtype, "fp32")) {
		const float *a = x.data, *b = y.data;
		float *o = z;
		for (size_t i = 0; i < n; i++) o[i] = nv_store_f32(a[i] + b[i], nm);
	} else if (!strcmp(dtype, "int8")) {
		const int8_t *a = x.data, *b = y.data;
		int8_t *o = z;
		for (size_t i = 0; i < n; i++) o[i] = nv_store_i8((float)a[i] + (float)b[i], nm);
	} else {
		nv_unsupported("vector_add: dtype %s not implemented", dtype);
	}
	nv_add_kernel_ns(c, nv_now_ns() - t0); /* out/timing.json */
	nv_write_output(c, "z", NULL, 1, x.shape, z);
}

static const nv_kernel kernels[] = {
	{"vector_add", vector_add},
};

int main(int argc, char **argv) {
	return nv_main(argc, argv, kernels, sizeof kernels / sizeof kernels[0]);
}
