/* npuverify.h: the npuverify exec and worker protocols for a kernel
 * driver written in C or C++, in one header (docs/exec-backend.md, and
 * clients/c/README.md for the API).
 *
 * A driver lists one function per op it implements and hands the list to
 * nv_main; the same binary then runs under both backends:
 *
 *   npuverify check --backend exec:./driver      one process per case
 *   npuverify check --backend worker:./driver    one process, many cases
 *
 *   #define NPUVERIFY_IMPLEMENTATION   (in exactly one translation unit)
 *   #include "npuverify.h"
 *
 *   static void vector_add(nv_case *c) {
 *       nv_array x, y;
 *       nv_read_input(c, "x", NULL, &x);
 *       nv_read_input(c, "y", NULL, &y);
 *       ...
 *       nv_write_output(c, "z", NULL, x.ndim, x.shape, z);
 *   }
 *
 *   static const nv_kernel kernels[] = {{"vector_add", vector_add}};
 *
 *   int main(int argc, char **argv) {
 *       return nv_main(argc, argv, kernels, sizeof kernels / sizeof kernels[0]);
 *   }
 *
 * Exec mode (NPUVERIFY_WORKER unset): the case directory is the last
 * argument; exit status 0 done, 1 I/O or format error, 2 unsupported case.
 * Worker mode (NPUVERIFY_WORKER=1): one request line {"version": 1,
 * "case_dir": D} per case on stdin, one reply line on stdout,
 * {"case_dir": D, "ok": true} or {"case_dir": D, "ok": false, "error":
 * TEXT}; a failing case fails in its reply and the worker serves the next;
 * exit 0 at the end of stdin. stdout carries the replies only: log to
 * stderr.
 *
 * C11 and its standard library (libc, libm) only; little-endian hosts.
 * Compile the implementation with -std=c11 (or later, or C++11 for the
 * declarations); with _POSIX_C_SOURCE defined before the first #include,
 * nv_now_ns uses the monotonic clock, else C11's timespec_get. */
#ifndef NPUVERIFY_H
#define NPUVERIFY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit statuses of exec mode. */
enum {
	NV_EXIT_OK = 0,          /* outputs written */
	NV_EXIT_ERROR = 1,       /* an I/O or format error */
	NV_EXIT_UNSUPPORTED = 2, /* an op, dtype, mode or profile the driver does not implement */
};

/* Limits of what a case may hold. A case beyond them fails cleanly. */
#define NV_MAX_DIMS 8
#define NV_MAX_TENSORS 16
#define NV_MAX_ELEMENTS (1L << 28)
#define NV_MAX_TIMES 256

/* nv_numerics is the numerics profile the outputs are stored under
 * (case.json's "numerics"); zero is the IEEE default. */
typedef struct {
	int saturate;  /* overflow: saturate (else inf): ±inf stores ±max finite, NaN stores 0 */
	int flush;     /* subnormals: flush (else keep): a subnormal result stores a zero of its sign */
	int half_away; /* int8_rounding: half_away (else half_even) */
} nv_numerics;

/* nv_tensor is one entry of case.json's inputs or outputs. */
typedef struct {
	char name[64];
	char file[256];  /* relative to the case directory */
	char dtype[16];  /* fp16, bf16, fp32, fp64, int8, int32, uint8 */
	char descr[8];   /* its .npy descr: <f2, <u2 (bf16 bit patterns), <f4, <f8, |i1, <i4, |u1 */
	size_t itemsize;
	int ndim;
	long shape[NV_MAX_DIMS];
	size_t count;    /* product of shape */
} nv_tensor;

/* nv_case is one case: case.json parsed, and what the kernel reports. */
typedef struct nv_case {
	const char *dir; /* the case directory */
	char op[64];
	char params[4096]; /* the params object's JSON text; read it with nv_param */
	nv_numerics numerics;
	nv_tensor in[NV_MAX_TENSORS], out[NV_MAX_TENSORS];
	int nin, nout;
	/* kernel_ns: the times nv_add_kernel_ns recorded, written to
	 * out/timing.json when the kernel returns */
	double kernel_ns[NV_MAX_TIMES];
	int ntimes;
	/* private: memory the case owns, freed when it ends */
	void **owned_;
	size_t nowned_, capowned_;
} nv_case;

/* nv_array is a tensor read from an input .npy file. Its data belong to
 * the case and are freed when the case ends: never free them. */
typedef struct {
	char descr[8];
	int ndim;
	long shape[NV_MAX_DIMS];
	size_t count;    /* product of shape */
	size_t itemsize;
	void *data;      /* count·itemsize bytes, C order; never NULL */
} nv_array;

/* nv_kernel maps an op name to the function that computes it. The
 * function reads its inputs, writes every output case.json lists, and
 * returns; an error ends the case through nv_die. */
typedef struct {
	const char *op;
	void (*run)(nv_case *c);
} nv_kernel;

/* nv_main runs the driver: one case from the command line (exec mode) or
 * a case per request line (worker mode, NPUVERIFY_WORKER=1). It returns
 * the exit status for main to return. */
int nv_main(int argc, char **argv, const nv_kernel *kernels, size_t nkernels);

/* nv_run_case runs the case in dir through kernels and returns 0, or the
 * exit status with the reason in err: what both modes do per case. */
int nv_run_case(const char *dir, const nv_kernel *kernels, size_t nkernels, char *err, size_t errlen);

/* nv_die ends the case with an error: exit status code (NV_EXIT_ERROR or
 * NV_EXIT_UNSUPPORTED) and the message on stderr in exec mode, "ok":
 * false with the message in worker mode, where the worker goes on. Memory
 * from nv_alloc and nv_read_input is freed; other allocations leak. */
#if defined(__cplusplus)
[[noreturn]]
#else
_Noreturn
#endif
void nv_die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* nv_unsupported ends the case as one the driver does not implement. */
#define nv_unsupported(...) nv_die(NV_EXIT_UNSUPPORTED, __VA_ARGS__)

/* nv_param copies the string value of param key (every value is a JSON
 * string, defaults filled in) into out and returns 1; 0 when the case has
 * no such param. A value longer than n−1 bytes ends the case. */
int nv_param(const nv_case *c, const char *key, char *out, size_t n);

/* nv_param_f64 returns param key as a number, def when absent; a value
 * that is not a number ends the case. */
double nv_param_f64(const nv_case *c, const char *key, double def);

/* nv_param_long returns param key as an integer, def when absent; a value
 * that is not an integer ends the case. */
long nv_param_long(const nv_case *c, const char *key, long def);

/* nv_input returns input name's entry of case.json, or NULL when the case
 * does not have that input (an optional one, such as gemm's c). */
const nv_tensor *nv_input(const nv_case *c, const char *name);

/* nv_output returns output name's entry of case.json, or NULL. */
const nv_tensor *nv_output(const nv_case *c, const char *name);

/* nv_read_input reads input name into a, checking it against case.json
 * (descr and shape) and, when descr is not NULL, that it holds descr (say
 * "<f2"). A missing input or a bad file ends the case. */
void nv_read_input(nv_case *c, const char *name, const char *descr, nv_array *a);

/* nv_write_output writes output name from data (count·itemsize bytes, C
 * order) as D/out/<name>.npy. The descr (NULL: case.json's) and shape
 * must be the ones case.json lists, else the case ends with an error
 * naming the output and nothing is written. */
void nv_write_output(nv_case *c, const char *name, const char *descr, int ndim, const long *shape,
                     const void *data);

/* nv_path returns the path of file (relative to the case directory), in
 * one of four rotating static buffers. */
const char *nv_path(const nv_case *c, const char *file);

/* nv_alloc returns n zeroed bytes the case owns (freed when it ends, also
 * when it fails); out of memory ends the case. */
void *nv_alloc(nv_case *c, size_t n);

/* nv_now_ns is a clock for timing the kernel, in nanoseconds. */
double nv_now_ns(void);

/* nv_add_kernel_ns records one time of the kernel; out/timing.json
 * {"kernel_ns": [...]} lists them when the kernel returns. */
void nv_add_kernel_ns(nv_case *c, double ns);

/* Stores under the numerics profile: a result as it must be written to
 * an output of that dtype. Floats round to nearest, ties to even, in one
 * step from v; see nv_numerics for saturate and flush. fp16 and bf16 are
 * their bit patterns (uint16_t), as in the .npy files. */
uint16_t nv_store_f16(float v, const nv_numerics *nm);
uint16_t nv_store_bf16(float v, const nv_numerics *nm);
float nv_store_f32(float v, const nv_numerics *nm);
int8_t nv_store_i8(float v, const nv_numerics *nm); /* rounds by int8_rounding, saturates, NaN to 0 */

/* Conversions, exact: every fp16 and bf16 value is a float. */
float nv_f16_to_f32(uint16_t h);
float nv_bf16_to_f32(uint16_t b);

/* nv_f32_to_f16 and nv_f32_to_bf16 round to nearest even with IEEE
 * overflow to ±inf; a NaN stays a quiet NaN of its sign. */
uint16_t nv_f32_to_f16(float v);
uint16_t nv_f32_to_bf16(float v);

/* nv_descr returns the .npy descr of case.json's dtype, NULL if unknown. */
const char *nv_descr(const char *dtype);

#ifdef __cplusplus
}
#endif

#endif /* NPUVERIFY_H */

/* ================================================================== */

#ifdef NPUVERIFY_IMPLEMENTATION
#ifndef NPUVERIFY_IMPLEMENTED
#define NPUVERIFY_IMPLEMENTED

#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where nv_die returns to while a case runs. */
static jmp_buf nv__jump;
static int nv__jump_set, nv__code;
static char nv__msg[1024];

void nv_die(int code, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(nv__msg, sizeof nv__msg, fmt, ap);
	va_end(ap);
	nv__code = code;
	if (nv__jump_set) longjmp(nv__jump, 1);
	fprintf(stderr, "npuverify driver: %s\n", nv__msg);
	exit(code);
}

void *nv_alloc(nv_case *c, size_t n) {
	if (c->nowned_ == c->capowned_) {
		size_t cap = c->capowned_ ? 2 * c->capowned_ : 16;
		void **p = (void **)realloc(c->owned_, cap * sizeof *p);
		if (!p) nv_die(NV_EXIT_ERROR, "out of memory");
		c->owned_ = p;
		c->capowned_ = cap;
	}
	void *p = calloc(n ? n : 1, 1);
	if (!p) nv_die(NV_EXIT_ERROR, "out of memory (%zu bytes)", n);
	c->owned_[c->nowned_++] = p;
	return p;
}

static void nv__release(nv_case *c) {
	for (size_t i = 0; i < c->nowned_; i++) free(c->owned_[i]);
	free(c->owned_);
	c->owned_ = NULL;
	c->nowned_ = c->capowned_ = 0;
}

const char *nv_path(const nv_case *c, const char *file) {
	static char buf[4][4096];
	static int k;
	char *p = buf[k++ & 3];
	if ((size_t)snprintf(p, sizeof buf[0], "%s/%s", c->dir, file) >= sizeof buf[0])
		nv_die(NV_EXIT_ERROR, "path of %s in %s too long", file, c->dir);
	return p;
}

double nv_now_ns(void) {
	struct timespec ts;
#if defined(CLOCK_MONOTONIC)
	clock_gettime(CLOCK_MONOTONIC, &ts);
#else
	timespec_get(&ts, TIME_UTC);
#endif
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void nv_add_kernel_ns(nv_case *c, double ns) {
	if (c->ntimes == NV_MAX_TIMES) nv_die(NV_EXIT_ERROR, "more than %d kernel times", NV_MAX_TIMES);
	if (!(ns >= 0) || isinf(ns)) nv_die(NV_EXIT_ERROR, "kernel time %g ns: want a finite time >= 0", ns);
	c->kernel_ns[c->ntimes++] = ns;
}

/* ---- dtypes ---- */

static const struct {
	const char *dtype, *descr;
	size_t size;
} nv__dtypes[] = {
	{"fp16", "<f2", 2}, {"bf16", "<u2", 2}, {"fp32", "<f4", 4}, {"fp64", "<f8", 8},
	{"int8", "|i1", 1}, {"int32", "<i4", 4}, {"uint8", "|u1", 1},
};

const char *nv_descr(const char *dtype) {
	for (size_t i = 0; i < sizeof nv__dtypes / sizeof nv__dtypes[0]; i++)
		if (!strcmp(nv__dtypes[i].dtype, dtype)) return nv__dtypes[i].descr;
	return NULL;
}

static size_t nv__itemsize(const char *descr) {
	for (size_t i = 0; i < sizeof nv__dtypes / sizeof nv__dtypes[0]; i++)
		if (!strcmp(nv__dtypes[i].descr, descr)) return nv__dtypes[i].size;
	return 0;
}

/* ---- JSON: enough to walk case.json and a request line ---- */

static const char *nv__ws(const char *p) {
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
	return p;
}

/* nv__skip returns the end of the JSON value at p, or NULL if malformed. */
static const char *nv__skip(const char *p) {
	p = nv__ws(p);
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1]) p++;
		return *p ? p + 1 : NULL;
	}
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p = nv__ws(p + 1);
		if (*p == close) return p + 1;
		for (;;) {
			if (close == '}') {
				p = nv__skip(p); /* key */
				if (!p) return NULL;
				p = nv__ws(p);
				if (*p++ != ':') return NULL;
			}
			p = nv__skip(p);
			if (!p) return NULL;
			p = nv__ws(p);
			if (*p == close) return p + 1;
			if (*p++ != ',') return NULL;
		}
	}
	const char *b = p;
	while (*p && !strchr(",}] \t\r\n", *p)) p++;
	return p == b ? NULL : p;
}

/* nv__member returns the value of key in the object at obj, or NULL. */
static const char *nv__member(const char *obj, const char *key) {
	const char *p = nv__ws(obj);
	if (*p++ != '{') return NULL;
	size_t kl = strlen(key);
	for (;;) {
		p = nv__ws(p);
		if (*p != '"') return NULL;
		const char *k = p + 1, *ke = nv__skip(p);
		if (!ke) return NULL;
		p = nv__ws(ke);
		if (*p++ != ':') return NULL;
		p = nv__ws(p);
		if ((size_t)(ke - 1 - k) == kl && !strncmp(k, key, kl)) return p;
		p = nv__skip(p);
		if (!p) return NULL;
		p = nv__ws(p);
		if (*p++ != ',') return NULL;
	}
}

/* nv__put_utf8 appends code point cp to out[*o], within n. */
static int nv__put_utf8(char *out, size_t *o, size_t n, unsigned long cp) {
	unsigned char b[4];
	size_t k;
	if (cp < 0x80) b[0] = (unsigned char)cp, k = 1;
	else if (cp < 0x800) b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), k = 2;
	else if (cp < 0x10000)
		b[0] = (unsigned char)(0xe0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
		b[2] = (unsigned char)(0x80 | (cp & 0x3f)), k = 3;
	else
		b[0] = (unsigned char)(0xf0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (unsigned char)(0x80 | (cp & 0x3f)), k = 4;
	if (*o + k >= n) return 0;
	memcpy(out + *o, b, k);
	*o += k;
	return 1;
}

static int nv__hex4(const char *p, unsigned long *v) {
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char ch = p[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (d < 0) return 0;
		*v = *v << 4 | (unsigned long)d;
	}
	return 1;
}

/* nv__string unescapes the JSON string at p into out (n bytes). It
 * returns 1, 0 when p is no string, −1 when it is too long or malformed. */
static int nv__string(const char *p, char *out, size_t n) {
	if (!p || *p != '"') return 0;
	size_t o = 0;
	for (p++; *p != '"'; p++) {
		if (!*p) return -1;
		char ch = *p;
		if (ch == '\\') {
			switch (*++p) {
			case '"': case '\\': case '/': ch = *p; break;
			case 'n': ch = '\n'; break;
			case 't': ch = '\t'; break;
			case 'r': ch = '\r'; break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'u': {
				unsigned long cp, lo;
				if (!nv__hex4(p + 1, &cp)) return -1;
				p += 4;
				if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
					if (p[1] != '\\' || p[2] != 'u' || !nv__hex4(p + 3, &lo) || lo < 0xdc00 || lo >= 0xe000) return -1;
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
				if (cp == 0 || !nv__put_utf8(out, &o, n, cp)) return -1;
				continue;
			}
			default: return -1;
			}
		}
		if (o + 1 >= n) return -1;
		out[o++] = ch;
	}
	out[o] = 0;
	return 1;
}

/* nv__get copies the string member key of obj into out; 0 when absent.
 * A value that is not a string, or too long, ends the case. */
static int nv__get(const char *obj, const char *key, char *out, size_t n, const char *what) {
	const char *v = nv__member(obj, key);
	if (!v) return 0;
	int r = nv__string(v, out, n);
	if (r != 1) nv_die(NV_EXIT_ERROR, "%s: %s is %s", what, key, r ? "too long or malformed" : "not a string");
	return 1;
}

static void nv__tensors(const char *js, const char *key, nv_tensor *t, int *nt) {
	const char *v = nv__member(js, key);
	if (!v || *v != '[') nv_die(NV_EXIT_ERROR, "case.json: no %s array", key);
	const char *p = nv__ws(v + 1);
	*nt = 0;
	while (*p == '{') {
		if (*nt == NV_MAX_TENSORS) nv_die(NV_EXIT_UNSUPPORTED, "case.json: more than %d %s", NV_MAX_TENSORS, key);
		nv_tensor *e = &t[(*nt)++];
		memset(e, 0, sizeof *e);
		if (!nv__get(p, "name", e->name, sizeof e->name, "case.json") || !nv__get(p, "file", e->file, sizeof e->file, "case.json") ||
		    !nv__get(p, "dtype", e->dtype, sizeof e->dtype, "case.json"))
			nv_die(NV_EXIT_ERROR, "case.json: an entry of %s without name, file or dtype", key);
		const char *d = nv_descr(e->dtype);
		if (!d) nv_die(NV_EXIT_UNSUPPORTED, "case.json: %s %s has dtype %s, which this driver does not know", key, e->name, e->dtype);
		strcpy(e->descr, d);
		e->itemsize = nv__itemsize(d);
		const char *s = nv__member(p, "shape");
		if (!s || *s != '[') nv_die(NV_EXIT_ERROR, "case.json: %s %s has no shape", key, e->name);
		s = nv__ws(s + 1);
		e->count = 1;
		while (*s != ']') {
			char *end;
			errno = 0;
			long dim = strtol(s, &end, 10);
			if (end == s || errno || dim < 0 || e->ndim == NV_MAX_DIMS)
				nv_die(NV_EXIT_ERROR, "case.json: bad shape of %s %s", key, e->name);
			if (dim && e->count > (size_t)NV_MAX_ELEMENTS / (size_t)dim)
				nv_die(NV_EXIT_UNSUPPORTED, "case.json: %s %s has more than %ld elements", key, e->name, NV_MAX_ELEMENTS);
			e->shape[e->ndim++] = dim;
			e->count *= (size_t)dim;
			s = nv__ws(end);
			if (*s == ',') s = nv__ws(s + 1);
		}
		p = nv__skip(p);
		if (!p) nv_die(NV_EXIT_ERROR, "case.json: malformed %s", key);
		p = nv__ws(p);
		if (*p == ',') p = nv__ws(p + 1);
	}
	if (*p != ']') nv_die(NV_EXIT_ERROR, "case.json: malformed %s", key);
}

/* nv__read_file reads path whole (at most max bytes), NUL-terminated. */
static char *nv__read_file(nv_case *c, const char *path, size_t max) {
	FILE *f = fopen(path, "rb");
	if (!f) nv_die(NV_EXIT_ERROR, "%s: cannot open: %s", path, strerror(errno));
	char *b = (char *)nv_alloc(c, max + 1);
	size_t n = fread(b, 1, max, f);
	int big = n == max && fgetc(f) != EOF;
	fclose(f);
	if (big) nv_die(NV_EXIT_ERROR, "%s: larger than %zu bytes", path, max);
	b[n] = 0;
	return b;
}

static void nv__parse(nv_case *c) {
	const char *path = nv_path(c, "case.json");
	const char *js = nv__read_file(c, path, 1 << 20);
	if (*nv__ws(js) != '{' || !nv__skip(js)) nv_die(NV_EXIT_ERROR, "%s: not a JSON object", path);
	const char *v = nv__member(js, "version");
	if (!v || strncmp(v, "1", 1) != 0 || (v[1] && !strchr(",} \t\r\n", v[1])))
		nv_die(NV_EXIT_UNSUPPORTED, "%s: version is not 1 (the version this driver knows)", path);
	if (!nv__get(js, "op", c->op, sizeof c->op, "case.json")) nv_die(NV_EXIT_ERROR, "case.json: no op");
	const char *pb = nv__member(js, "params");
	const char *pe = pb && *pb == '{' ? nv__skip(pb) : NULL;
	if (!pe) nv_die(NV_EXIT_ERROR, "case.json: no params object");
	if ((size_t)(pe - pb) >= sizeof c->params) nv_die(NV_EXIT_UNSUPPORTED, "case.json: params object too long");
	memcpy(c->params, pb, (size_t)(pe - pb));
	c->params[pe - pb] = 0;
	const char *nb = nv__member(js, "numerics");
	if (nb && *nb == '{') {
		static const struct {
			const char *key, *ieee, *other;
		} keys[] = {{"overflow", "inf", "saturate"}, {"subnormals", "keep", "flush"}, {"int8_rounding", "half_even", "half_away"}};
		int *field[] = {&c->numerics.saturate, &c->numerics.flush, &c->numerics.half_away};
		for (int i = 0; i < 3; i++) {
			char val[32];
			if (!nv__get(nb, keys[i].key, val, sizeof val, "case.json numerics")) continue;
			if (!strcmp(val, keys[i].other)) *field[i] = 1;
			else if (strcmp(val, keys[i].ieee) != 0)
				nv_die(NV_EXIT_UNSUPPORTED, "case.json: numerics %s=%s is not %s or %s", keys[i].key, val, keys[i].ieee, keys[i].other);
		}
	}
	nv__tensors(js, "inputs", c->in, &c->nin);
	nv__tensors(js, "outputs", c->out, &c->nout);
}

int nv_param(const nv_case *c, const char *key, char *out, size_t n) {
	return nv__get(c->params, key, out, n, "case.json params");
}

double nv_param_f64(const nv_case *c, const char *key, double def) {
	char s[128], *end;
	if (!nv_param(c, key, s, sizeof s)) return def;
	double v = strtod(s, &end);
	if (end == s || *end) nv_die(NV_EXIT_ERROR, "param %s=%s is not a number", key, s);
	return v;
}

long nv_param_long(const nv_case *c, const char *key, long def) {
	char s[64], *end;
	if (!nv_param(c, key, s, sizeof s)) return def;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno) nv_die(NV_EXIT_ERROR, "param %s=%s is not an integer", key, s);
	return v;
}

static const nv_tensor *nv__lookup(const nv_tensor *t, int n, const char *name) {
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].name, name)) return &t[i];
	return NULL;
}

const nv_tensor *nv_input(const nv_case *c, const char *name) { return nv__lookup(c->in, c->nin, name); }
const nv_tensor *nv_output(const nv_case *c, const char *name) { return nv__lookup(c->out, c->nout, name); }

/* ---- .npy (NEP 1): C order, little-endian ---- */

/* nv__dict_value finds the value of key in an .npy header dict. */
static const char *nv__dict_value(const char *h, const char *key) {
	size_t kl = strlen(key);
	for (const char *p = h; (p = strstr(p, key)) != NULL; p += kl) {
		if (p == h || (p[-1] != '\'' && p[-1] != '"') || p[kl] != p[-1]) continue;
		const char *q = p + kl + 1;
		while (*q == ' ') q++;
		if (*q != ':') continue;
		q++;
		while (*q == ' ') q++;
		return q;
	}
	return NULL;
}

static void nv__shape_text(char *out, size_t n, int ndim, const long *shape) {
	size_t o = 0;
	out[0] = 0;
	for (int i = 0; i < ndim && o < n; i++) o += (size_t)snprintf(out + o, n - o, i ? ",%ld" : "%ld", shape[i]);
}

void nv_read_input(nv_case *c, const char *name, const char *descr, nv_array *a) {
	const nv_tensor *t = nv_input(c, name);
	if (!t) nv_die(NV_EXIT_ERROR, "input %s: not in case.json", name);
	if (descr && strcmp(descr, t->descr) != 0)
		nv_die(NV_EXIT_UNSUPPORTED, "input %s: case.json says %s (%s), the kernel reads %s", name, t->dtype, t->descr, descr);
	const char *path = nv_path(c, t->file);
	memset(a, 0, sizeof *a);
	FILE *f = fopen(path, "rb");
	if (!f) nv_die(NV_EXIT_ERROR, "input %s: %s: cannot open: %s", name, path, strerror(errno));
	unsigned char pre[12];
	const char *why = NULL;
	char *hdr = NULL;
	size_t hlen = 0;
	if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) why = "not a .npy file";
	else if (pre[6] == 1) {
		if (fread(pre + 8, 1, 2, f) != 2) why = "truncated";
		else hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
	} else if (pre[6] == 2 || pre[6] == 3) {
		if (fread(pre + 8, 1, 4, f) != 4) why = "truncated";
		else hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
	} else why = "unsupported .npy version";
	if (!why && hlen > 65536) why = "header too long";
	if (!why) {
		hdr = (char *)nv_alloc(c, hlen + 1);
		if (fread(hdr, 1, hlen, f) != hlen) why = "truncated";
	}
	if (!why) {
		const char *v = nv__dict_value(hdr, "descr");
		size_t n = 0;
		if (v && (*v == '\'' || *v == '"')) {
			char q = *v++;
			while (v[n] && v[n] != q && n < sizeof a->descr - 1) n++;
			memcpy(a->descr, v, n);
		}
		v = nv__dict_value(hdr, "fortran_order");
		if (strcmp(a->descr, t->descr) != 0) why = "descr is not case.json's";
		else if (!v || strncmp(v, "False", 5) != 0) why = "fortran_order is not False";
		else if (!(v = nv__dict_value(hdr, "shape")) || *v != '(') why = "no shape";
		else {
			v++;
			a->count = 1;
			for (;;) {
				while (*v == ' ' || *v == ',') v++;
				if (*v == ')') break;
				char *end;
				long d = strtol(v, &end, 10);
				if (end == v || d < 0 || a->ndim == NV_MAX_DIMS) {
					why = "bad shape";
					break;
				}
				a->shape[a->ndim++] = d;
				v = end;
			}
			if (!why && (a->ndim != t->ndim || memcmp(a->shape, t->shape, (size_t)t->ndim * sizeof(long)) != 0))
				why = "shape is not case.json's";
		}
	}
	if (!why) {
		a->count = t->count;
		a->itemsize = t->itemsize;
		a->data = nv_alloc(c, a->count * a->itemsize);
		if (a->count && fread(a->data, a->itemsize, a->count, f) != a->count) why = "truncated";
		else if (fgetc(f) != EOF) why = "trailing data";
	}
	fclose(f);
	if (why) {
		char want[128];
		nv__shape_text(want, sizeof want, t->ndim, t->shape);
		nv_die(NV_EXIT_ERROR, "input %s: %s: %s (case.json: %s [%s])", name, path, why, t->dtype, want);
	}
}

void nv_write_output(nv_case *c, const char *name, const char *descr, int ndim, const long *shape, const void *data) {
	const nv_tensor *t = nv_output(c, name);
	if (!t) nv_die(NV_EXIT_ERROR, "output %s: not in case.json", name);
	char want[128], got[128];
	nv__shape_text(want, sizeof want, t->ndim, t->shape);
	if (descr && strcmp(descr, t->descr) != 0)
		nv_die(NV_EXIT_ERROR, "output %s: the kernel wrote %s, case.json wants %s (%s [%s])", name, descr, t->descr, t->dtype, want);
	if (ndim != t->ndim || (ndim && memcmp(shape, t->shape, (size_t)ndim * sizeof(long)) != 0)) {
		nv__shape_text(got, sizeof got, ndim, shape);
		nv_die(NV_EXIT_ERROR, "output %s: the kernel wrote shape [%s], case.json wants %s [%s]", name, got, t->dtype, want);
	}
	char dict[512], shp[256];
	size_t o = 0;
	shp[o++] = '(';
	for (int i = 0; i < ndim && o < sizeof shp; i++) o += (size_t)snprintf(shp + o, sizeof shp - o, i ? ", %ld" : "%ld", shape[i]);
	if (o < sizeof shp) snprintf(shp + o, sizeof shp - o, ndim == 1 ? ",)" : ")");
	int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", t->descr, shp);
	size_t pad = (64 - (10 + (size_t)dl + 1) % 64) % 64, hlen = (size_t)dl + pad + 1;
	const char *path = nv_path(c, t->file);
	FILE *f = fopen(path, "wb");
	if (!f) nv_die(NV_EXIT_ERROR, "output %s: %s: cannot create: %s", name, path, strerror(errno));
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)dl, f) == (size_t)dl;
	for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
	ok = ok && fputc('\n', f) != EOF;
	if (ok && t->count) ok = fwrite(data, t->itemsize, t->count, f) == t->count;
	if (fclose(f) != 0) ok = 0;
	if (!ok) nv_die(NV_EXIT_ERROR, "output %s: %s: write failed", name, path);
}

static void nv__write_timing(nv_case *c) {
	const char *path = nv_path(c, "out/timing.json");
	FILE *f = fopen(path, "w");
	if (!f) nv_die(NV_EXIT_ERROR, "%s: cannot create: %s", path, strerror(errno));
	fputs("{\"kernel_ns\": [", f);
	for (int i = 0; i < c->ntimes; i++) fprintf(f, i ? ", %.0f" : "%.0f", c->kernel_ns[i]);
	fputs("]}\n", f);
	if (fclose(f) != 0) nv_die(NV_EXIT_ERROR, "%s: write failed", path);
}

/* ---- stores ---- */

float nv_bf16_to_f32(uint16_t b) {
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t nv_f32_to_bf16(float v) {
	uint32_t u;
	memcpy(&u, &v, 4);
	if (isnan(v)) return (uint16_t)(u >> 16 | 0x0040); /* quiet, sign kept */
	u += 0x7fffu + (u >> 16 & 1u);                     /* ties to even; overflows into inf */
	return (uint16_t)(u >> 16);
}

float nv_f16_to_f32(uint16_t h) {
	uint32_t s = (uint32_t)(h & 0x8000) << 16, e = h >> 10 & 0x1f, m = h & 0x3ff, u;
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f; /* m·2^-24: zero or subnormal, exact */
		return s ? -v : v;
	}
	u = s | (e == 31 ? 0x7f800000u | m << 13 : (e + 112) << 23 | m << 13);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t nv_f32_to_f16(float v) {
	uint32_t x;
	memcpy(&x, &v, 4);
	uint16_t sign = (uint16_t)(x >> 16 & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | (ax >> 13 & 0x3ff)); /* NaN: quiet */
	if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                       /* ≥ 65520 (or inf): inf */
	if (ax < 0x38800000u) {                                                        /* below 2^-14: subnormal */
		if (ax <= 0x33000000u) return sign;                                        /* ≤ 2^-25: to zero (2^-25 a tie, to even) */
		uint32_t m = (ax & 0x7fffffu) | 0x800000u;
		int shift = 126 - (int)(ax >> 23); /* 14 … 24: value / 2^-24 = m >> shift */
		uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1))) q++;
		return (uint16_t)(sign | q);
	}
	uint32_t r = ax + 0xfffu + (ax >> 13 & 1u); /* ties to even at bit 13 */
	return (uint16_t)(sign | (r - 0x38000000u) >> 13);
}

uint16_t nv_store_f16(float v, const nv_numerics *nm) {
	if (isnan(v)) return nm->saturate ? 0 : nv_f32_to_f16(v);
	uint16_t h = nv_f32_to_f16(v);
	if (nm->saturate && (h & 0x7fff) == 0x7c00) h = (uint16_t)((h & 0x8000) | 0x7bff);
	if (nm->flush && (h & 0x7c00) == 0 && (h & 0x3ff) != 0) h &= 0x8000;
	return h;
}

uint16_t nv_store_bf16(float v, const nv_numerics *nm) {
	if (isnan(v)) return nm->saturate ? 0 : nv_f32_to_bf16(v);
	uint16_t b = nv_f32_to_bf16(v);
	if (nm->saturate && (b & 0x7fff) == 0x7f80) b = (uint16_t)((b & 0x8000) | 0x7f7f);
	if (nm->flush && (b & 0x7f80) == 0 && (b & 0x7f) != 0) b &= 0x8000;
	return b;
}

float nv_store_f32(float v, const nv_numerics *nm) {
	if (isnan(v)) return nm->saturate ? 0.0f : v;
	if (nm->saturate && isinf(v)) v = copysignf(3.40282347e38f, v);
	if (nm->flush && v != 0 && fabsf(v) < FLT_MIN) v = copysignf(0.0f, v);
	return v;
}

int8_t nv_store_i8(float v, const nv_numerics *nm) {
	if (isnan(v)) return 0;
	float r = nm->half_away ? roundf(v) : nearbyintf(v); /* the default rounding mode: ties to even */
	if (r > 127) r = 127;
	if (r < -128) r = -128;
	return (int8_t)r;
}

/* ---- the two modes ---- */

int nv_run_case(const char *dir, const nv_kernel *kernels, size_t nkernels, char *err, size_t errlen) {
	static nv_case c; /* large: not on the stack */
	memset(&c, 0, sizeof c);
	c.dir = dir;
	nv__jump_set = 1;
	if (setjmp(nv__jump) != 0) {
		nv__jump_set = 0;
		nv__release(&c);
		snprintf(err, errlen, "%s", nv__msg);
		return nv__code ? nv__code : NV_EXIT_ERROR;
	}
	nv__parse(&c);
	size_t i = 0;
	while (i < nkernels && strcmp(kernels[i].op, c.op) != 0) i++;
	if (i == nkernels) nv_die(NV_EXIT_UNSUPPORTED, "unsupported op %s", c.op);
	kernels[i].run(&c);
	if (c.ntimes) nv__write_timing(&c);
	nv__jump_set = 0;
	nv__release(&c);
	return 0;
}

/* nv__getline reads one line of stdin (without its newline) into *buf;
 * 0 at the end of stdin. */
static int nv__getline(char **buf, size_t *cap) {
	size_t n = 0;
	int ch;
	while ((ch = getchar()) != EOF && ch != '\n') {
		if (n + 1 >= *cap) {
			size_t nc = *cap ? 2 * *cap : 4096;
			char *p = (char *)realloc(*buf, nc);
			if (!p) return -1;
			*buf = p;
			*cap = nc;
		}
		(*buf)[n++] = (char)ch;
	}
	if (ch == EOF && n == 0) return 0;
	if (!*buf) {
		*buf = (char *)malloc(1);
		if (!*buf) return -1;
		*cap = 1;
	}
	(*buf)[n] = 0;
	return 1;
}

static void nv__put_json_string(FILE *f, const char *s) {
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\u%04x", ch);
		else fputc(ch, f);
	}
	fputc('"', f);
}

static void nv__reply(FILE *out, const char *dir, const char *err) {
	fputs("{\"case_dir\": ", out);
	nv__put_json_string(out, dir);
	if (err) {
		fputs(", \"ok\": false, \"error\": ", out);
		nv__put_json_string(out, err);
		fputs("}\n", out);
	} else {
		fputs(", \"ok\": true}\n", out);
	}
	fflush(out);
}

static int nv__serve(const nv_kernel *kernels, size_t nkernels) {
	char *line = NULL, err[1024];
	static char dir[4096];
	size_t cap = 0;
	int r;
	while ((r = nv__getline(&line, &cap)) > 0) {
		const char *v;
		if (*nv__ws(line) != '{' || !nv__skip(line)) {
			nv__reply(stdout, "", "request is not a JSON object");
			continue;
		}
		if (nv__string(nv__member(line, "case_dir"), dir, sizeof dir) != 1) {
			nv__reply(stdout, "", "request without a case_dir string the driver can read");
			continue;
		}
		v = nv__member(line, "version");
		if (!v || *v != '1' || (v[1] && !strchr(",} \t\r\n", v[1]))) {
			nv__reply(stdout, dir, "unsupported request version (this driver knows 1)");
			continue;
		}
		if (nv_run_case(dir, kernels, nkernels, err, sizeof err) != 0) {
			fprintf(stderr, "npuverify driver: %s\n", err);
			nv__reply(stdout, dir, err);
		} else {
			nv__reply(stdout, dir, NULL);
		}
	}
	free(line);
	if (r < 0) {
		fputs("npuverify driver: out of memory reading a request\n", stderr);
		return NV_EXIT_ERROR;
	}
	return 0;
}

int nv_main(int argc, char **argv, const nv_kernel *kernels, size_t nkernels) {
	const uint16_t one = 1;
	if (*(const unsigned char *)&one != 1) {
		fputs("npuverify driver: big-endian hosts are not supported\n", stderr);
		return NV_EXIT_UNSUPPORTED;
	}
	const char *worker = getenv("NPUVERIFY_WORKER");
	if (worker && !strcmp(worker, "1")) return nv__serve(kernels, nkernels);
	if (argc < 2) {
		fprintf(stderr, "usage: %s CASE_DIR (or NPUVERIFY_WORKER=1 %s, a request per line on stdin)\n", argv[0], argv[0]);
		return NV_EXIT_ERROR;
	}
	static char path[4096], err[1024];
	snprintf(path, sizeof path, "%s/case.json", argv[argc - 1]);
	const char *env = getenv("NPUVERIFY_CASE");
	if (env && strcmp(env, path) != 0) {
		fprintf(stderr, "npuverify driver: NPUVERIFY_CASE=%s but the case directory is %s\n", env, argv[argc - 1]);
		return NV_EXIT_ERROR;
	}
	int code = nv_run_case(argv[argc - 1], kernels, nkernels, err, sizeof err);
	if (code) fprintf(stderr, "npuverify driver: %s\n", err);
	return code;
}

#endif /* NPUVERIFY_IMPLEMENTED */
#endif /* NPUVERIFY_IMPLEMENTATION */
