/* ckernel.h: what the per-op kernels of ckernel share beyond the
 * protocol, which is clients/c/npuverify.h (the header any C or C++
 * driver uses): params with their defaults, fp16 stores as _Float16, and
 * the injected faults (case.c). */
#ifndef CKERNEL_H
#define CKERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "../../../clients/c/npuverify.h"

/* param returns the value of param key, or def when the case has none (in
 * one of eight rotating buffers, so that a few can be held at once). */
const char *param(const nv_case *c, const char *key, const char *def);

/* store_f16 is nv_store_f16 as the compiler's _Float16. */
_Float16 store_f16(float v, const nv_numerics *nm);

/* Injected faults (NPUVERIFY_CKERNEL_FAULT, see case.c): bugs the
 * default check must catch through the exec backend, one per class of
 * issue 9, and bugs it must not (they show only at sizes the golden set
 * does not hold; an explored case catches each). fault_on(name) reports
 * whether that fault is switched on. */
int fault_on(const char *name);
double round_half_away(double x, int p, int emin);
void clobber_input(const nv_case *c, const char *name, const void *data, size_t bytes);

/* FRACTAL_NZ operands of gemm and gemm24 (gemm.c): an ND [rows, cols]
 * matrix of elements of size bytes held as [ceil(cols/C0), ceil(rows/16),
 * 16, C0], C0 = 32/size, padding +0. nz_is reports whether the param
 * names FRACTAL_NZ; nz_gather returns the floats of the ND matrix an NZ
 * one holds (f: its elements widened, in NZ order); nz_scatter lays out
 * ND bytes as NZ (zeroed padding) and sets shape. */
int nz_is(const nv_case *c, const char *param_name);
size_t nz_at(size_t r, size_t col, size_t m1, size_t c0); /* element (r, col) of an NZ matrix of m1 row fractals */
float *nz_gather(const float *f, size_t rows, size_t cols, size_t size);
void *nz_scatter(const void *nd, size_t rows, size_t cols, size_t size, long shape[4]);

/* one kernel per op, in <op>.c */
void vector_add(nv_case *c);
void gemm(nv_case *c);
void kv_update(nv_case *c);
void decode_attention(nv_case *c);
void sparse24_prune(nv_case *c);
void gemm24(nv_case *c);
void sparse_compress(nv_case *c);
void transdata(nv_case *c);

#endif
