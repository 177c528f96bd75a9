/* ckernel: an independent implementation of vector_add and gemm
 * (every mode) behind the npuverify exec backend protocol (docs/exec-backend.md).
 *
 *   ckernel DIR        reads DIR/case.json and the input .npy files, writes
 *                      DIR/out/<output>.npy and DIR/out/timing.json
 *
 * It shares no code with the Go emulator: fp16 is the compiler's _Float16
 * (conversions round to nearest even), bf16 is done with bit operations on
 * float, and gemm sums each dot product in four interleaved partial sums
 * (lane k mod 4, in the mode's accumulator format) combined pairwise at
 * the end -- a summation order
 * different from both of the emulator's models, which the bound policy
 * must accept.
 *
 * Exit status: 0 done, 1 I/O or format error, 2 unsupported case.
 * Build: cc -O2 -std=c11 -o ckernel main.c npy.c -lm
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "npy.h"

static const char *case_dir;

static void die(int code, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
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
	if (n == cap) die(1, "%s: larger than 1 MiB", path);
	fclose(f);
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

typedef struct {
	char name[64];
	char file[256];
} entry;

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

typedef struct {
	int saturate;  /* overflow: saturate (else inf) */
	int flush;     /* subnormals: flush (else keep) */
	int half_away; /* int8_rounding: half_away (else half_even) */
} numerics;

typedef struct {
	char op[64];
	char dtype[16], mode[32], alpha[64], beta[64];
	numerics num;
	entry in[8], out[8];
	int nin, nout;
} casefile;

static void parse_case(const char *path, casefile *c) {
	char *js = read_file(path);
	const char *end = js + strlen(js);
	memset(c, 0, sizeof *c);
	if (!get_string(js, end, "op", c->op, sizeof c->op)) die(1, "case.json: no op");
	const char *pb = find_key(js, end, "params");
	if (!pb || *pb != '{') die(1, "case.json: no params object");
	const char *pe = match(pb);
	get_string(pb, pe, "dtype", c->dtype, sizeof c->dtype);
	get_string(pb, pe, "mode", c->mode, sizeof c->mode);
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
	c->nin = get_entries(js, "inputs", c->in, 8);
	c->nout = get_entries(js, "outputs", c->out, 8);
	free(js);
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

static void read_input(const casefile *c, const char *name, const char *descr, npy_array *a) {
	char err[512];
	const entry *e = lookup(c->in, c->nin, name);
	if (!e) die(1, "case.json: input %s missing", name);
	if (npy_read(path_of(e), descr, a, err, sizeof err) != 0) die(1, "input %s: %s", name, err);
}

static void write_output(const casefile *c, const char *name, const char *descr, int ndim,
                         const long *shape, const void *data, size_t itemsize) {
	char err[512];
	const entry *e = lookup(c->out, c->nout, name);
	if (!e) die(1, "case.json: output %s missing", name);
	if (npy_write(path_of(e), descr, ndim, shape, data, itemsize, err, sizeof err) != 0)
		die(1, "output %s: %s", name, err);
}

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void write_timing(double ns) {
	char path[4096];
	snprintf(path, sizeof path, "%s/out/timing.json", case_dir);
	FILE *f = fopen(path, "w");
	if (!f) die(1, "%s: cannot create", path);
	fprintf(f, "{\"kernel_ns\": [%.0f]}\n", ns);
	if (fclose(f) != 0) die(1, "%s: write failed", path);
}

/* ---- stores under the numerics profile ---- */

static _Float16 store_f16(float v, const numerics *nm) {
	if (isnan(v)) return nm->saturate ? (_Float16)0.0f : (_Float16)v;
	_Float16 h = (_Float16)v; /* round to nearest even, overflow to inf */
	if (nm->saturate && isinf((float)h)) h = (_Float16)copysignf(65504.0f, v);
	if (nm->flush && h != 0 && fabsf((float)h) < 0x1p-14f) h = (_Float16)copysignf(0.0f, v);
	return h;
}

static float store_f32(float v, const numerics *nm) {
	if (isnan(v)) return nm->saturate ? 0.0f : v;
	if (nm->saturate && isinf(v)) v = copysignf(FLT_MAX, v);
	if (nm->flush && v != 0 && fabsf(v) < FLT_MIN) v = copysignf(0.0f, v);
	return v;
}

static float bf16_to_f32(uint16_t b) {
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t store_bf16(float v, const numerics *nm) {
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

static int8_t store_i8(float v, const numerics *nm) {
	if (isnan(v)) return 0;
	float r = nm->half_away ? roundf(v) : nearbyintf(v); /* default rounding mode: ties to even */
	if (r > 127) r = 127;
	if (r < -128) r = -128;
	return (int8_t)r;
}

/* ---- kernels ---- */

static void vector_add(const casefile *c) {
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
	void *z = malloc(n * x.itemsize + 1);
	if (!z) die(1, "out of memory");
	double t0 = now_ns();
	if (!strcmp(dt, "fp16")) {
		const _Float16 *a = x.data, *b = y.data;
		_Float16 *o = z;
		for (size_t i = 0; i < n; i++) o[i] = store_f16((float)a[i] + (float)b[i], &c->num);
	} else if (!strcmp(dt, "fp32")) {
		const float *a = x.data, *b = y.data;
		float *o = z;
		for (size_t i = 0; i < n; i++) o[i] = store_f32(a[i] + b[i], &c->num);
	} else if (!strcmp(dt, "bf16")) {
		const uint16_t *a = x.data, *b = y.data;
		uint16_t *o = z;
		for (size_t i = 0; i < n; i++) o[i] = store_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]), &c->num);
	} else {
		const int8_t *a = x.data, *b = y.data;
		int8_t *o = z;
		for (size_t i = 0; i < n; i++) o[i] = store_i8((float)a[i] + (float)b[i], &c->num);
	}
	double t1 = now_ns();
	long shape[1] = {(long)n};
	write_output(c, "z", descr, 1, shape, z, x.itemsize);
	write_timing(t1 - t0);
	free(z);
	npy_free(&x);
	npy_free(&y);
}

#define LANES 4

/* Per-mode formats: the input descr, the output descr, and whether the
 * accumulator is fp16 (mode fp16) or the inputs are int8. */
typedef struct {
	const char *name, *in, *out;
} gemm_mode;

static const gemm_mode gemm_modes[] = {
	{"fp32", "<f4", "<f4"},
	{"fp16_fp32acc", "<f2", "<f2"},
	{"fp16", "<f2", "<f2"},
	{"bf16_fp32acc", "<u2", "<u2"},
	{"int8_int32acc", "|i1", "<f2"},
};

/* load_f32 widens an input matrix of descr to float (exact for every
 * input format). */
static float *load_f32(const npy_array *a, const char *descr) {
	float *f = malloc(a->count * sizeof(float) + 1);
	if (!f) die(1, "out of memory");
	for (size_t i = 0; i < a->count; i++) {
		if (!strcmp(descr, "<f4")) f[i] = ((const float *)a->data)[i];
		else if (!strcmp(descr, "<f2")) f[i] = (float)((const _Float16 *)a->data)[i];
		else if (!strcmp(descr, "<u2")) f[i] = bf16_to_f32(((const uint16_t *)a->data)[i]);
		else f[i] = (float)((const int8_t *)a->data)[i];
	}
	return f;
}

/* gemm computes out = alpha·(A·B) + beta·C in every mode of the contract,
 * in its own order: each dot product in LANES interleaved partial sums
 * (k mod LANES) combined pairwise, which matches neither of the emulator's
 * accumulate models. fp16 mode keeps the partial sums in _Float16 (every
 * product and sum rounded to fp16); int8 sums exactly in 64-bit integers. */
static void gemm(const casefile *c) {
	const char *name = c->mode[0] ? c->mode : "fp16_fp32acc";
	const gemm_mode *mode = NULL;
	for (size_t i = 0; i < sizeof gemm_modes / sizeof gemm_modes[0]; i++)
		if (!strcmp(gemm_modes[i].name, name)) mode = &gemm_modes[i];
	if (!mode) die(2, "gemm: unsupported mode %s", name);
	const int fp16acc = !strcmp(name, "fp16"), int8 = !strcmp(name, "int8_int32acc");
	char *end;
	double alpha = strtod(c->alpha, &end);
	if (*end) die(1, "gemm: bad alpha %s", c->alpha);
	double beta = strtod(c->beta, &end);
	if (*end) die(1, "gemm: bad beta %s", c->beta);
	npy_array a, b, cm = {0}, sa = {0}, sb = {0};
	read_input(c, "a", mode->in, &a);
	read_input(c, "b", mode->in, &b);
	if (a.ndim != 2 || b.ndim != 2 || a.shape[1] != b.shape[0]) die(1, "gemm: a must be [M,K] and b [K,N]");
	size_t M = (size_t)a.shape[0], K = (size_t)a.shape[1], N = (size_t)b.shape[1];
	float *cf = NULL;
	if (beta != 0) {
		read_input(c, "c", mode->out, &cm);
		if (cm.ndim != 2 || (size_t)cm.shape[0] != M || (size_t)cm.shape[1] != N) die(1, "gemm: c must be [M,N]");
		cf = load_f32(&cm, mode->out);
	}
	if (int8) {
		read_input(c, "scale_a", "<f4", &sa);
		read_input(c, "scale_b", "<f4", &sb);
		if (sa.count != 1 && sa.count != M) die(1, "gemm: scale_a must be [M] or [1]");
		if (sb.count != 1 && sb.count != N) die(1, "gemm: scale_b must be [N] or [1]");
	}
	float *af = load_f32(&a, mode->in), *bf = load_f32(&b, mode->in);
	float *acc = malloc(LANES * N * sizeof(float) + 1);
	_Float16 *acc16 = malloc(LANES * N * sizeof(_Float16) + 1);
	int64_t *iacc = malloc(N * sizeof(int64_t) + 1);
	float *res = malloc(M * N * sizeof(float) + 1);
	if (!acc || !acc16 || !iacc || !res) die(1, "out of memory");

	double t0 = now_ns();
	for (size_t i = 0; i < M; i++) {
		if (int8) {
			memset(iacc, 0, N * sizeof(int64_t));
			for (size_t k = 0; k < K; k++)
				for (size_t j = 0; j < N; j++) iacc[j] += (int64_t)af[i * K + k] * (int64_t)bf[k * N + j];
			const float *sav = sa.data, *sbv = sb.data;
			for (size_t j = 0; j < N; j++) {
				float s = sav[sa.count == 1 ? 0 : i] * sbv[sb.count == 1 ? 0 : j];
				res[i * N + j] = s * (float)iacc[j];
			}
			continue;
		}
		if (fp16acc) {
			for (size_t l = 0; l < LANES * N; l++) acc16[l] = 0;
			for (size_t k = 0; k < K; k++) {
				const _Float16 aik = (_Float16)af[i * K + k];
				_Float16 *lane = acc16 + (k % LANES) * N;
				for (size_t j = 0; j < N; j++) {
					_Float16 p = (_Float16)(aik * (_Float16)bf[k * N + j]);
					lane[j] = (_Float16)(lane[j] + p);
				}
			}
			for (size_t j = 0; j < N; j++)
				res[i * N + j] = (float)(_Float16)((_Float16)(acc16[j] + acc16[N + j]) + (_Float16)(acc16[2 * N + j] + acc16[3 * N + j]));
			continue;
		}
		memset(acc, 0, LANES * N * sizeof(float));
		for (size_t k = 0; k < K; k++) {
			const float aik = af[i * K + k];
			float *lane = acc + (k % LANES) * N;
			const float *brow = bf + k * N;
			for (size_t j = 0; j < N; j++) lane[j] += aik * brow[j];
		}
		for (size_t j = 0; j < N; j++) res[i * N + j] = (acc[j] + acc[N + j]) + (acc[2 * N + j] + acc[3 * N + j]);
	}
	/* Epilogue in fp16 for mode fp16, else fp32. */
	void *out = malloc(M * N * 4 + 1);
	if (!out) die(1, "out of memory");
	for (size_t i = 0; i < M * N; i++) {
		float v = res[i];
		if (fp16acc) {
			_Float16 h = (_Float16)v;
			if (alpha != 1) h = (_Float16)((_Float16)alpha * h);
			if (beta != 0) h = (_Float16)(h + (_Float16)((_Float16)beta * (_Float16)cf[i]));
			v = (float)h;
		} else {
			if (alpha != 1) v = (float)alpha * v;
			if (beta != 0) v = v + (float)beta * cf[i];
		}
		if (!strcmp(mode->out, "<f4")) ((float *)out)[i] = store_f32(v, &c->num);
		else if (!strcmp(mode->out, "<u2")) ((uint16_t *)out)[i] = store_bf16(v, &c->num);
		else ((_Float16 *)out)[i] = store_f16(v, &c->num);
	}
	double t1 = now_ns();
	long shape[2] = {(long)M, (long)N};
	write_output(c, "out", mode->out, 2, shape, out, !strcmp(mode->out, "<f4") ? 4 : 2);
	write_timing(t1 - t0);
	free(af);
	free(bf);
	free(cf);
	free(acc);
	free(acc16);
	free(iacc);
	free(res);
	free(out);
	npy_free(&a);
	npy_free(&b);
	npy_free(&cm);
	npy_free(&sa);
	npy_free(&sb);
}

int main(int argc, char **argv) {
	const uint16_t one = 1;
	if (*(const unsigned char *)&one != 1) die(2, "big-endian hosts are not supported");
	if (argc < 2) die(1, "usage: ckernel CASE_DIR");
	case_dir = argv[argc - 1];
	char path[4096];
	snprintf(path, sizeof path, "%s/case.json", case_dir);
	const char *env = getenv("NPUVERIFY_CASE");
	if (env && strcmp(env, path) != 0) die(1, "NPUVERIFY_CASE=%s but the case directory is %s", env, case_dir);
	casefile c;
	parse_case(path, &c);
	if (!strcmp(c.op, "vector_add")) vector_add(&c);
	else if (!strcmp(c.op, "gemm")) gemm(&c);
	else die(2, "unsupported op %s", c.op);
	return 0;
}
