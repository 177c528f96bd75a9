/* decode_attention.c: two-pass softmax over the whole context (no
 * partitions), scores and the weighted sum in four interleaved fp32
 * lanes; contiguous or paged, fp16 or int8 cache, grouped-query heads. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckernel.h"

void decode_attention(nv_case *c) {
	const int paged = !strcmp(param(c, "layout", "contiguous"), "paged"), int8 = !strcmp(param(c, "cache_dtype", "fp16"), "int8");
	const char *cd = int8 ? "|i1" : "<f2";
	nv_array q, kc, vc, ks = {0}, vs = {0}, bt = {0}, sl, si;
	nv_read_input(c, "q", "<f2", &q);
	nv_read_input(c, "k_cache", cd, &kc);
	nv_read_input(c, "v_cache", cd, &vc);
	nv_read_input(c, "seq_lens", "<i4", &sl);
	nv_read_input(c, "seq_ids", "<i4", &si);
	if (int8) {
		nv_read_input(c, "k_scale", "<f4", &ks);
		nv_read_input(c, "v_scale", "<f4", &vs);
	}
	if (paged) nv_read_input(c, "block_tables", "<i4", &bt);
	if (q.ndim != 3 || kc.ndim != 4) nv_die(1, "decode_attention: q must be [B,Hq,D] and the caches rank 4");
	const long B = q.shape[0], HQ = q.shape[1], D = q.shape[2], H = kc.shape[2];
	const long L = paged ? bt.shape[1] * kc.shape[1] : kc.shape[1], BS = kc.shape[1], MB = paged ? bt.shape[1] : 0;
	const long G = HQ / H;
	const char *scale_s = param(c, "scale", "");
	double scale = scale_s[0] ? strtod(scale_s, NULL) : 1 / sqrt((double)D);
	const float sigma = (float)scale;
	const int32_t *lens = sl.data, *ids = si.data, *tab = bt.data;
	_Float16 *out = calloc((size_t)(B * HQ * D) + 1, 2);
	float *sc = malloc((size_t)L * 4 + 4), *acc = malloc((size_t)D * 4 * 4 + 4);
	long *rows = malloc((size_t)L * sizeof(long) + 8);
	if (!out || !sc || !acc || !rows) nv_die(1, "out of memory");
	double t0 = nv_now_ns();
	for (long b = 0; b < B; b++) {
		int32_t s = ids[b];
		if (s < 0 || lens[s] == 0) continue;
		long n = lens[s];
		for (long p = 0; p < n; p++) rows[p] = paged ? (long)tab[s * MB + p / BS] * BS + p % BS : s * L + p;
		for (long hq = 0; hq < HQ; hq++) {
			long h = hq / G;
			const _Float16 *qr = (const _Float16 *)q.data + (b * HQ + hq) * D;
			float m = -INFINITY;
			for (long p = 0; p < n; p++) {
				long off = (rows[p] * H + h) * D;
				float ksc = int8 ? ((const float *)ks.data)[rows[p] * H + h] : 1;
				float l4[4] = {0, 0, 0, 0};
				for (long i = 0; i < D; i++) {
					float k = int8 ? (float)((const int8_t *)kc.data)[off + i] * ksc : (float)((const _Float16 *)kc.data)[off + i];
					l4[i % 4] += (float)qr[i] * k;
				}
				sc[p] = ((l4[0] + l4[1]) + (l4[2] + l4[3])) * sigma;
				m = fmaxf(m, sc[p]);
			}
			float z = 0;
			for (long p = 0; p < n; p++) {
				sc[p] = expf(sc[p] - m);
				z += sc[p];
			}
			memset(acc, 0, (size_t)D * 4 * 4);
			for (long p = 0; p < n; p++) {
				long off = (rows[p] * H + h) * D;
				float vsc = int8 ? ((const float *)vs.data)[rows[p] * H + h] : 1;
				float *lane = acc + (p % 4) * D;
				for (long i = 0; i < D; i++) {
					float v = int8 ? (float)((const int8_t *)vc.data)[off + i] * vsc : (float)((const _Float16 *)vc.data)[off + i];
					lane[i] += sc[p] * v;
				}
			}
			_Float16 *o = out + (b * HQ + hq) * D;
			for (long i = 0; i < D; i++)
				o[i] = store_f16(((acc[i] + acc[D + i]) + (acc[2 * D + i] + acc[3 * D + i])) / z, &c->numerics);
			/* The outblock fault (case.c): the row goes out in 32-byte
			 * blocks of 16 fp16, the partial last block (D mod 16) from the
			 * source offset of the last whole block, (D/16 − 1)·16, not
			 * D/16·16; a row shorter than a block goes out whole. */
			if (fault_on("outblock") && D > 16 && D % 16 != 0)
				memmove(o + D / 16 * 16, o + (D / 16 - 1) * 16, (size_t)(D % 16) * sizeof *o);
		}
	}
	nv_add_kernel_ns(c, nv_now_ns() - t0);
	nv_write_output(c, "out", "<f2", 3, q.shape, out);
}
