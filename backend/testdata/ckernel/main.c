/* ckernel: an independent implementation of vector_add, gemm (every
 * mode), kv_update and decode_attention (both layouts, fp16 and int8
 * caches), sparse24_prune, gemm24 and sparse_compress behind the npuverify
 * exec backend protocol (docs/exec-backend.md).
 *
 *   ckernel DIR        reads DIR/case.json and the input .npy files, writes
 *                      DIR/out/<output>.npy and DIR/out/timing.json
 *   NPUVERIFY_WORKER=1 ckernel
 *                      worker mode: serves one case per request line
 *                      {"version": 1, "case_dir": "DIR"} on stdin, the
 *                      same way, and answers each with one line on stdout,
 *                      {"case_dir": "DIR", "ok": true} or "ok": false
 *                      with the error; exits 0 at the end of stdin
 *
 * It shares no code with the Go emulator: fp16 arithmetic is the
 * compiler's _Float16 (conversions round to nearest even), stores and bf16
 * are bit operations on float (npuverify.h), and gemm sums each dot product in four interleaved partial sums
 * (lane k mod 4, in the mode's accumulator format) combined pairwise at
 * the end -- a summation order
 * different from both of the emulator's models, which the bound policy
 * must accept. gemm24 uses the same lanes over its kept k (so it equals
 * this gemm on the decompressed operand bit for bit); sparse24_prune ranks
 * each group by insertion sort; sparse_compress sums k² in four lanes and
 * selects by a full sort on a packed 64-bit key, which may resolve
 * near-ties differently from the emulator inside the tie-aware judge's
 * band.
 *
 * The protocol (case.json, .npy files, timing.json, both modes, exit
 * status 0 done, 1 I/O or format error, 2 unsupported case, which in
 * worker mode fail the case in the reply while the worker goes on) is
 * clients/c/npuverify.h, implemented in this file; the dispatch table
 * below is what internal/ckernel reads as the kernel's scope.
 * Build: cc -O2 -std=c11 -o ckernel *.c -lm
 */
#define _POSIX_C_SOURCE 200809L
#define NPUVERIFY_IMPLEMENTATION

#include "ckernel.h"

/* The ops this kernel implements, one file each. */
static const nv_kernel kernels[] = {
	{"vector_add", vector_add},
	{"gemm", gemm},
	{"kv_update", kv_update},
	{"decode_attention", decode_attention},
	{"sparse24_prune", sparse24_prune},
	{"gemm24", gemm24},
	{"sparse_compress", sparse_compress},
	{"transdata", transdata},
};

int main(int argc, char **argv) {
	return nv_main(argc, argv, kernels, sizeof kernels / sizeof kernels[0]);
}
