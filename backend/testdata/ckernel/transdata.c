/* transdata.c: the layout conversions of transdata (see main.c), NCHW/NHWC
 * <-> NC1HWC0 and ND <-> FRACTAL_NZ, for any dtype as bytes. Where the
 * emulator walks destination tiles, this walks the source element by
 * element and scatters each one to its destination (skipping the source's
 * padding, which it never reads); the destination starts zeroed, so its
 * padding is +0. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckernel.h"

static long cdiv(long a, long b) { return (a + b - 1) / b; }

void transdata(nv_case *c) {
	const char *dt = param(c, "dtype", "fp16");
	const char *src = param(c, "src_format", "NCHW");
	const char *dst = param(c, "dst_format", "NC1HWC0");
	const char *descr;
	if (!strcmp(dt, "fp16")) descr = "<f2";
	else if (!strcmp(dt, "fp32")) descr = "<f4";
	else if (!strcmp(dt, "bf16")) descr = "<u2";
	else if (!strcmp(dt, "int8")) descr = "|i1";
	else nv_die(2, "transdata: unsupported dtype %s", dt);
	long pc = atol(param(c, "c", "0")), pm = atol(param(c, "m", "0")), pk = atol(param(c, "k", "0"));
	nv_array x;
	nv_read_input(c, "x", descr, &x);
	const size_t es = x.itemsize;
	const long c0 = (long)(32 / es);
	const unsigned char *in = x.data;
	long shape[NV_MAX_DIMS];
	int ndim;
	size_t count = 1;
	/* The plain side as [outer][rows][ch] (NHWC, ND) or [outer][ch][rows]
	 * (NCHW); the fractal side as [outer][c1][rowsPad][c0]. */
	long outer, rows, rowsPad, ch;
	int toFrac, chMajor;
	const long *s = x.shape;
	if (!strcmp(src, "NCHW") || !strcmp(src, "NHWC")) {
		if (x.ndim != 4) nv_die(1, "transdata: x must be 4-D for %s", src);
		chMajor = !strcmp(src, "NCHW");
		long n = s[0], cc = chMajor ? s[1] : s[3], h = chMajor ? s[2] : s[1], w = chMajor ? s[3] : s[2];
		toFrac = 1, outer = n, rows = rowsPad = h * w, ch = cc;
		ndim = 5;
		shape[0] = n, shape[1] = cdiv(cc, c0), shape[2] = h, shape[3] = w, shape[4] = c0;
	} else if (!strcmp(src, "NC1HWC0")) {
		if (x.ndim != 5 || s[4] != c0) nv_die(1, "transdata: x must be [N,C1,H,W,C0]");
		chMajor = !strcmp(dst, "NCHW");
		long cc = pc ? pc : s[1] * c0;
		toFrac = 0, outer = s[0], rows = rowsPad = s[2] * s[3], ch = cc;
		ndim = 4;
		shape[0] = s[0];
		if (chMajor) shape[1] = cc, shape[2] = s[2], shape[3] = s[3];
		else shape[1] = s[2], shape[2] = s[3], shape[3] = cc;
	} else if (!strcmp(src, "ND")) {
		if (x.ndim < 2 || x.ndim > NV_MAX_DIMS - 2) nv_die(1, "transdata: x must be ND of rank 2..%d", NV_MAX_DIMS - 2);
		long m = s[x.ndim - 2], k = s[x.ndim - 1];
		outer = 1;
		for (int i = 0; i < x.ndim - 2; i++) outer *= s[i], shape[i] = s[i];
		toFrac = 1, chMajor = 0, rows = m, rowsPad = cdiv(m, 16) * 16, ch = k;
		ndim = x.ndim + 2;
		shape[x.ndim - 2] = cdiv(k, c0), shape[x.ndim - 1] = cdiv(m, 16), shape[x.ndim] = 16, shape[x.ndim + 1] = c0;
	} else if (!strcmp(src, "FRACTAL_NZ")) {
		if (x.ndim < 4 || s[x.ndim - 1] != c0 || s[x.ndim - 2] != 16) nv_die(1, "transdata: x must be [...,K1,M1,16,C0]");
		long m = pm ? pm : s[x.ndim - 3] * 16, k = pk ? pk : s[x.ndim - 4] * c0;
		outer = 1;
		for (int i = 0; i < x.ndim - 4; i++) outer *= s[i], shape[i] = s[i];
		toFrac = 0, chMajor = 0, rows = m, rowsPad = s[x.ndim - 3] * 16, ch = k;
		ndim = x.ndim - 2;
		shape[x.ndim - 4] = m, shape[x.ndim - 3] = k;
	} else {
		nv_die(2, "transdata: unsupported src_format %s", src);
	}
	for (int i = 0; i < ndim; i++) count *= (size_t)shape[i];
	unsigned char *out = calloc(count * es + 1, 1);
	if (!out) nv_die(1, "out of memory");
	const long c1 = cdiv(ch, c0);
	double t0 = nv_now_ns();
	for (long o = 0; o < outer; o++)
		for (long q = 0; q < ch; q++)
			for (long r = 0; r < rows; r++) {
				size_t plain = (size_t)(chMajor ? (o * ch + q) * rows + r : (o * rows + r) * ch + q);
				size_t frac = (size_t)(((o * c1 + q / c0) * rowsPad + r) * c0 + q % c0);
				if (toFrac) memcpy(out + frac * es, in + plain * es, es);
				else memcpy(out + plain * es, in + frac * es, es);
			}
	double t1 = nv_now_ns();
	nv_write_output(c, "y", descr, ndim, shape, out);
	nv_add_kernel_ns(c, t1 - t0);
	free(out);
}
