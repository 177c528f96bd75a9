/* ckernel.h: what the per-op kernels of ckernel share: the parsed
 * case.json, input and output .npy files, timing, and stores under the
 * case's numerics profile (case.c). */
#ifndef CKERNEL_H
#define CKERNEL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "npy.h"

typedef struct {
	char name[64];
	char file[256];
} entry;

typedef struct {
	int saturate;  /* overflow: saturate (else inf) */
	int flush;     /* subnormals: flush (else keep) */
	int half_away; /* int8_rounding: half_away (else half_even) */
} numerics;

typedef struct {
	char op[64];
	char dtype[16], mode[32], alpha[64], beta[64];
	char layout[16], cache_dtype[16], scale[64]; /* KV-cache ops ("" = default) */
	char params[4096]; /* the params object's text, for case_param */
	numerics num;
	entry in[12], out[12];
	int nin, nout;
} casefile;

extern const char *case_dir;

/* die reports an error on stderr and exits with code; in worker mode
 * (die_jump set) it puts the message in die_msg and jumps back to the
 * request loop instead, which fails the case and serves the next. */
_Noreturn void die(int code, const char *fmt, ...);
extern jmp_buf *die_jump;
extern char die_msg[1024];
void parse_case(const char *path, casefile *c);
int case_param(const casefile *c, const char *key, char *out, size_t n);
void read_input(const casefile *c, const char *name, const char *descr, npy_array *a);
void write_output(const casefile *c, const char *name, const char *descr, int ndim,
                  const long *shape, const void *data, size_t itemsize);
double now_ns(void);
void write_timing(double ns);
_Float16 store_f16(float v, const numerics *nm);
float store_f32(float v, const numerics *nm);
float bf16_to_f32(uint16_t b);
uint16_t store_bf16(float v, const numerics *nm);
int8_t store_i8(float v, const numerics *nm);

/* Injected faults (NPUVERIFY_CKERNEL_FAULT, see case.c): the bugs the
 * default check must catch through the exec backend, one per class of
 * issue 9. fault_on(name) reports whether that fault is switched on. */
int fault_on(const char *name);
double round_half_away(double x, int p, int emin);
void clobber_input(const casefile *c, const char *name, const void *data, size_t bytes);

/* one kernel per op, in <op>.c */
void vector_add(const casefile *c);
void gemm(const casefile *c);
void kv_update(const casefile *c);
void decode_attention(const casefile *c);
void sparse24_prune(const casefile *c);
void gemm24(const casefile *c);
void sparse_compress(const casefile *c);

#endif
