/* case.c: case.json, .npy inputs and outputs, timing and numerics
 * stores for the per-op kernels (see main.c). */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckernel.h"

const char *case_dir;

jmp_buf *die_jump;
char die_msg[1024];

_Noreturn void die(int code, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	if (die_jump) {
		/* A worker fails the case, not itself. The buffers the case had
		 * allocated leak: the per-op code frees them only on success,
		 * and a failing case is rare enough for a test kernel. */
		(void)code;
		vsnprintf(die_msg, sizeof die_msg, fmt, ap);
		va_end(ap);
		fprintf(stderr, "ckernel: %s\n", die_msg);
		longjmp(*die_jump, 1);
	}
	fputs("ckernel: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

/* ---- a tiny scanner for the parts of case.json we need ---- */

static char *read_file(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) die(1, "%s: cannot open", path);
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap + 1);
	if (!b) die(1, "out of memory");
	n = fread(b, 1, cap, f);
	fclose(f);
	if (n == cap) die(1, "%s: larger than 1 MiB", path);
	b[n] = 0;
	return b;
}

/* skip a JSON string starting at the opening quote; returns the char after it */
static const char *skip_string(const char *p) {
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1]) p++;
	return *p ? p + 1 : p;
}

/* end of the object or array starting at p ('{' or '['): the matching closer */
static const char *match(const char *p) {
	int depth = 0;
	for (; *p; p++) {
		if (*p == '"') {
			p = skip_string(p) - 1;
		} else if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (--depth == 0) return p;
		}
	}
	die(1, "case.json: unbalanced brackets");
	return NULL;
}

/* the value of "key" within [b, e): a pointer to its first character */
static const char *find_key(const char *b, const char *e, const char *key) {
	size_t kl = strlen(key);
	for (const char *p = b; p < e; p++) {
		if (*p != '"') continue;
		if ((size_t)(e - p) > kl + 1 && !strncmp(p + 1, key, kl) && p[kl + 1] == '"') {
			const char *q = p + kl + 2;
			while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r') q++;
			if (*q == ':') {
				q++;
				while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r') q++;
				return q;
			}
		}
		p = skip_string(p) - 1;
	}
	return NULL;
}

/* copy the string value of "key" within [b, e) into out; 0 when absent */
static int get_string(const char *b, const char *e, const char *key, char *out, size_t n) {
	const char *v = find_key(b, e, key);
	if (!v || *v != '"') return 0;
	const char *end = skip_string(v) - 1;
	size_t l = (size_t)(end - v - 1);
	if (l >= n) die(1, "case.json: value of %s too long", key);
	memcpy(out, v + 1, l);
	out[l] = 0;
	return 1;
}


/* the {"name", "file"} objects of the array "key" */
static int get_entries(const char *js, const char *key, entry *out, int max) {
	const char *v = find_key(js, js + strlen(js), key);
	if (!v || *v != '[') die(1, "case.json: no %s array", key);
	const char *end = match(v);
	int n = 0;
	for (const char *p = v + 1; p < end; p++) {
		if (*p != '{') continue;
		const char *oe = match(p);
		if (n == max) die(2, "case.json: too many %s", key);
		if (!get_string(p, oe, "name", out[n].name, sizeof out[n].name) ||
		    !get_string(p, oe, "file", out[n].file, sizeof out[n].file))
			die(1, "case.json: %s entry without name or file", key);
		n++;
		p = oe;
	}
	return n;
}



void parse_case(const char *path, casefile *c) {
	char *js = read_file(path);
	const char *end = js + strlen(js);
	memset(c, 0, sizeof *c);
	if (!get_string(js, end, "op", c->op, sizeof c->op)) die(1, "case.json: no op");
	const char *pb = find_key(js, end, "params");
	if (!pb || *pb != '{') die(1, "case.json: no params object");
	const char *pe = match(pb);
	if ((size_t)(pe - pb + 1) >= sizeof c->params) die(1, "case.json: params object too long");
	memcpy(c->params, pb, (size_t)(pe - pb + 1));
	get_string(pb, pe, "dtype", c->dtype, sizeof c->dtype);
	get_string(pb, pe, "mode", c->mode, sizeof c->mode);
	get_string(pb, pe, "layout", c->layout, sizeof c->layout);
	get_string(pb, pe, "cache_dtype", c->cache_dtype, sizeof c->cache_dtype);
	get_string(pb, pe, "scale", c->scale, sizeof c->scale);
	if (!get_string(pb, pe, "alpha", c->alpha, sizeof c->alpha)) strcpy(c->alpha, "1");
	if (!get_string(pb, pe, "beta", c->beta, sizeof c->beta)) strcpy(c->beta, "0");
	const char *nb = find_key(js, end, "numerics");
	if (nb && *nb == '{') {
		const char *ne = match(nb);
		char v[32];
		if (get_string(nb, ne, "overflow", v, sizeof v)) c->num.saturate = !strcmp(v, "saturate");
		if (get_string(nb, ne, "subnormals", v, sizeof v)) c->num.flush = !strcmp(v, "flush");
		if (get_string(nb, ne, "int8_rounding", v, sizeof v)) c->num.half_away = !strcmp(v, "half_away");
	}
	c->nin = get_entries(js, "inputs", c->in, (int)(sizeof c->in / sizeof c->in[0]));
	c->nout = get_entries(js, "outputs", c->out, (int)(sizeof c->out / sizeof c->out[0]));
	free(js);
}

/* case_param copies the string value of params key into out; 0 when
 * the case has no such param. */
int case_param(const casefile *c, const char *key, char *out, size_t n) {
	return get_string(c->params, c->params + strlen(c->params), key, out, n);
}

static const entry *lookup(const entry *e, int n, const char *name) {
	for (int i = 0; i < n; i++)
		if (!strcmp(e[i].name, name)) return &e[i];
	return NULL;
}

static char *path_of(const entry *e) {
	static char buf[4][4096];
	static int k;
	char *p = buf[k++ & 3];
	snprintf(p, sizeof buf[0], "%s/%s", case_dir, e->file);
	return p;
}

void read_input(const casefile *c, const char *name, const char *descr, npy_array *a) {
	char err[512];
	const entry *e = lookup(c->in, c->nin, name);
	if (!e) die(1, "case.json: input %s missing", name);
	if (npy_read(path_of(e), descr, a, err, sizeof err) != 0) die(1, "input %s: %s", name, err);
}

void write_output(const casefile *c, const char *name, const char *descr, int ndim,
                         const long *shape, const void *data, size_t itemsize) {
	char err[512];
	const entry *e = lookup(c->out, c->nout, name);
	if (!e) die(1, "case.json: output %s missing", name);
	if (npy_write(path_of(e), descr, ndim, shape, data, itemsize, err, sizeof err) != 0)
		die(1, "output %s: %s", name, err);
}

double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void write_timing(double ns) {
	char path[4096];
	snprintf(path, sizeof path, "%s/out/timing.json", case_dir);
	FILE *f = fopen(path, "w");
	if (!f) die(1, "%s: cannot create", path);
	fprintf(f, "{\"kernel_ns\": [%.0f]}\n", ns);
	if (fclose(f) != 0) die(1, "%s: write failed", path);
}

/* ---- stores under the numerics profile ---- */

_Float16 store_f16(float v, const numerics *nm) {
	if (isnan(v)) return nm->saturate ? (_Float16)0.0f : (_Float16)v;
	_Float16 h = (_Float16)v; /* round to nearest even, overflow to inf */
	if (nm->saturate && isinf((float)h)) h = (_Float16)copysignf(65504.0f, v);
	if (nm->flush && h != 0 && fabsf((float)h) < 0x1p-14f) h = (_Float16)copysignf(0.0f, v);
	return h;
}

float store_f32(float v, const numerics *nm) {
	if (isnan(v)) return nm->saturate ? 0.0f : v;
	if (nm->saturate && isinf(v)) v = copysignf(FLT_MAX, v);
	if (nm->flush && v != 0 && fabsf(v) < FLT_MIN) v = copysignf(0.0f, v);
	return v;
}

float bf16_to_f32(uint16_t b) {
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t store_bf16(float v, const numerics *nm) {
	uint32_t u;
	if (isnan(v)) {
		if (nm->saturate) return 0;
		memcpy(&u, &v, 4);
		return (uint16_t)(u >> 16 | 0x0040); /* quiet NaN, sign kept */
	}
	memcpy(&u, &v, 4);
	u += 0x7fffu + (u >> 16 & 1u); /* round to nearest even; overflows into inf */
	uint16_t b = (uint16_t)(u >> 16);
	if (nm->saturate && (b & 0x7fff) == 0x7f80) b = (uint16_t)((b & 0x8000) | 0x7f7f);
	if (nm->flush && (b & 0x7f80) == 0 && (b & 0x7f) != 0) b &= 0x8000;
	return b;
}

int8_t store_i8(float v, const numerics *nm) {
	if (isnan(v)) return 0;
	float r = nm->half_away ? roundf(v) : nearbyintf(v); /* default rounding mode: ties to even */
	if (r > 127) r = 127;
	if (r < -128) r = -128;
	return (int8_t)r;
}

/* ---- injected faults ----
 *
 * NPUVERIFY_CKERNEL_FAULT names one fault to switch on; unset or empty,
 * the kernel is correct. Each models a real kernel bug, and each must make
 * the default `npuverify check` fail (backend/ckernel_faults_test.go):
 *
 *   index16  size: vector_add's element index held in 16 bits, so every
 *            element past 2^16 is read and written at its index mod 2^16
 *            and the rest of z is never written (vLLM #1486: an int32
 *            index that overflows at 64K blocks)
 *   tile2    size: gemm's output in 64x64 tiles dealt to 24 cores, and a
 *            core's second tile stored over its first (offset computed
 *            outside the tile loop): wrong only with more tiles than cores
 *   splitk   size: gemm with K > 4096 split by 256-k chunk, the reduction
 *            losing the last chunk's partial sum
 *   ties     vector_add rounds the sum half away from zero (C's round())
 *            where round-to-nearest-even is required
 *   clobber  the result is also written over the input file x (vector_add)
 *            or a (gemm): an in-place kernel clobbering its input
 *   lossy    gemm with K > 4096 in an fp32-accumulating mode with a 16-bit
 *            output keeps its partial sums in the output dtype after every
 *            256-k chunk: inside the any-order bound, caught only by the
 *            dual benchmark (ascend-dual) */
int fault_on(const char *name) {
	const char *f = getenv("NPUVERIFY_CKERNEL_FAULT");
	return f && !strcmp(f, name);
}

/* round_half_away rounds x to a binary format of p significant bits and
 * minimum normal exponent emin, ties away from zero (the value, not the
 * format's overflow: callers store it through store_*). */
double round_half_away(double x, int p, int emin) {
	if (x == 0 || isnan(x) || isinf(x)) return x;
	int e;
	frexp(x, &e); /* |x| = m·2^e, 1/2 ≤ m < 1: leading bit 2^(e−1) */
	double q = ldexp(1, (e - 1 < emin ? emin : e - 1) - p + 1);
	double t = fabs(x) / q; /* exact: q is a power of two */
	double r = floor(t);
	if (t - r >= 0.5) r += 1; /* ties (and above) away from zero */
	return copysign(r * q, x);
}

/* clobber_input overwrites the first bytes of input name's data (after
 * its .npy header) with data: an in-place kernel writing into its input. */
void clobber_input(const casefile *c, const char *name, const void *data, size_t bytes) {
	const entry *e = lookup(c->in, c->nin, name);
	if (!e) die(1, "case.json: input %s missing", name);
	FILE *f = fopen(path_of(e), "r+b");
	if (!f) die(1, "input %s: cannot open for writing", name);
	unsigned char h[12];
	if (fread(h, 1, sizeof h, f) != sizeof h) die(1, "input %s: short header", name);
	long off = h[6] == 1 ? 10L + (h[8] | h[9] << 8) : 12L + (long)(h[8] | h[9] << 8 | h[10] << 16 | (unsigned long)h[11] << 24);
	if (fseek(f, off, SEEK_SET) != 0 || fwrite(data, 1, bytes, f) != bytes) die(1, "input %s: cannot write", name);
	fclose(f);
}
