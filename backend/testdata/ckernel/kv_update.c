/* kv_update.c: project the new token (four interleaved fp32 lanes per
 * dot product, another order than the emulator's), write it at each
 * sequence's length in a contiguous or paged, fp16 or int8 cache copied
 * from the input, bump seq_lens. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckernel.h"

static void *dup_data(const nv_array *a) {
	void *p = malloc(a->count * a->itemsize + 1);
	if (!p) nv_die(1, "out of memory");
	if (a->count) memcpy(p, a->data, a->count * a->itemsize);
	return p;
}

void kv_update(nv_case *c) {
	const int paged = !strcmp(param(c, "layout", "contiguous"), "paged"), int8 = !strcmp(param(c, "cache_dtype", "fp16"), "int8");
	const char *cd = int8 ? "|i1" : "<f2";
	nv_array x, wk, wv, kc, vc, ks = {0}, vs = {0}, bt = {0}, sl, si;
	nv_read_input(c, "x", "<f2", &x);
	nv_read_input(c, "w_k", "<f2", &wk);
	nv_read_input(c, "w_v", "<f2", &wv);
	nv_read_input(c, "k_cache", cd, &kc);
	nv_read_input(c, "v_cache", cd, &vc);
	nv_read_input(c, "seq_lens", "<i4", &sl);
	nv_read_input(c, "seq_ids", "<i4", &si);
	if (int8) {
		nv_read_input(c, "k_scale", "<f4", &ks);
		nv_read_input(c, "v_scale", "<f4", &vs);
	}
	if (paged) nv_read_input(c, "block_tables", "<i4", &bt);
	if (x.ndim != 3 || kc.ndim != 4) nv_die(1, "kv_update: x must be [B,H,D] and the caches rank 4");
	const long B = x.shape[0], H = x.shape[1], D = x.shape[2];
	const long L = paged ? bt.shape[1] * kc.shape[1] : kc.shape[1], BS = kc.shape[1], MB = paged ? bt.shape[1] : 0;
	const int32_t *lens = sl.data, *ids = si.data, *tab = bt.data;
	void *kout = dup_data(&kc), *vout = dup_data(&vc);
	float *ksout = int8 ? dup_data(&ks) : NULL, *vsout = int8 ? dup_data(&vs) : NULL;
	int32_t *lout = dup_data(&sl);
	uint8_t *written = calloc((size_t)B + 1, 1);
	_Float16 *nk = calloc((size_t)(B * H * D) + 1, 2), *nv = calloc((size_t)(B * H * D) + 1, 2);
	float lane[4];
	if (!written || !nk || !nv) nv_die(1, "out of memory");
	double t0 = nv_now_ns();
	for (long b = 0; b < B; b++) {
		int32_t s = ids[b];
		if (s < 0) continue;
		long pos = lens[s], row = -1;
		if (pos < L) row = paged ? (long)tab[s * MB + pos / BS] * BS + pos % BS : s * L + pos;
		for (int which = 0; which < 2; which++) {
			const _Float16 *w = which ? wv.data : wk.data;
			_Float16 *nw = which ? nv : nk;
			for (long h = 0; h < H; h++) {
				const _Float16 *xr = (const _Float16 *)x.data + (b * H + h) * D;
				_Float16 *o = nw + (b * H + h) * D;
				for (long j = 0; j < D; j++) {
					memset(lane, 0, sizeof lane);
					for (long i = 0; i < D; i++) lane[i % 4] += (float)xr[i] * (float)w[(h * D + i) * D + j];
					o[j] = store_f16((lane[0] + lane[1]) + (lane[2] + lane[3]), &c->numerics);
				}
				if (row < 0) continue;
				long dst = (row * H + h) * D;
				if (!int8) {
					memcpy((_Float16 *)(which ? vout : kout) + dst, o, (size_t)D * 2);
					continue;
				}
				float amax = 0;
				for (long j = 0; j < D; j++) amax = fmaxf(amax, fabsf((float)o[j]));
				float sc = amax / 127.0f;
				int8_t *q = (int8_t *)(which ? vout : kout) + dst;
				for (long j = 0; j < D; j++) {
					int8_t v = amax == 0 ? 0 : nv_store_i8((float)o[j] / sc, &c->numerics);
					q[j] = v < -127 ? -127 : v;
				}
				(which ? vsout : ksout)[row * H + h] = amax == 0 ? 0 : sc;
			}
		}
		if (row >= 0) {
			written[b] = 1;
			lout[s] = lens[s] + 1;
		}
	}
	nv_add_kernel_ns(c, nv_now_ns() - t0);
	nv_write_output(c, "new_k", "<f2", 3, x.shape, nk);
	nv_write_output(c, "new_v", "<f2", 3, x.shape, nv);
	nv_write_output(c, "k_cache", cd, 4, kc.shape, kout);
	nv_write_output(c, "v_cache", cd, 4, vc.shape, vout);
	if (int8) {
		nv_write_output(c, "k_scale", "<f4", 3, ks.shape, ksout);
		nv_write_output(c, "v_scale", "<f4", 3, vs.shape, vsout);
	}
	nv_write_output(c, "seq_lens", "<i4", 1, sl.shape, lout);
	nv_write_output(c, "written", "|u1", 1, si.shape, written);
}
