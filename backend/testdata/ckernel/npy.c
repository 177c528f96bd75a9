#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t descr_itemsize(const char *d) {
	if (!strcmp(d, "<f2") || !strcmp(d, "<u2")) return 2;
	if (!strcmp(d, "<f4") || !strcmp(d, "<i4")) return 4;
	if (!strcmp(d, "|i1") || !strcmp(d, "|u1")) return 1;
	return 0;
}

/* find the value following the dictionary key 'key' (quoted with ' or "). */
static const char *dict_value(const char *h, const char *key) {
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

void npy_free(npy_array *a) {
	free(a->data);
	a->data = NULL;
}

int npy_read(const char *path, const char *want, npy_array *a, char *err, size_t errlen) {
	memset(a, 0, sizeof *a);
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	unsigned char pre[10];
	char *hdr = NULL;
	if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
		snprintf(err, errlen, "%s: not a .npy file", path);
		goto fail;
	}
	size_t hlen;
	if (pre[6] == 1) {
		if (fread(pre + 8, 1, 2, f) != 2) goto trunc;
		hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
	} else if (pre[6] == 2 || pre[6] == 3) {
		unsigned char l[4];
		if (fread(l, 1, 4, f) != 4) goto trunc;
		hlen = (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
	} else {
		snprintf(err, errlen, "%s: unsupported version %d", path, pre[6]);
		goto fail;
	}
	if (hlen > 65536) {
		snprintf(err, errlen, "%s: header too long", path);
		goto fail;
	}
	hdr = malloc(hlen + 1);
	if (!hdr || fread(hdr, 1, hlen, f) != hlen) goto trunc;
	hdr[hlen] = 0;

	const char *v = dict_value(hdr, "descr");
	if (!v || (*v != '\'' && *v != '"')) {
		snprintf(err, errlen, "%s: no descr", path);
		goto fail;
	}
	char q = *v++;
	size_t n = 0;
	while (v[n] && v[n] != q && n < sizeof a->descr - 1) n++;
	memcpy(a->descr, v, n);
	a->descr[n] = 0;
	if (strcmp(a->descr, want) != 0) {
		snprintf(err, errlen, "%s: descr '%s', want '%s'", path, a->descr, want);
		goto fail;
	}
	a->itemsize = descr_itemsize(a->descr);
	v = dict_value(hdr, "fortran_order");
	if (!v || strncmp(v, "False", 5) != 0) {
		snprintf(err, errlen, "%s: fortran_order must be False", path);
		goto fail;
	}
	v = dict_value(hdr, "shape");
	if (!v || *v != '(') {
		snprintf(err, errlen, "%s: no shape", path);
		goto fail;
	}
	v++;
	a->count = 1;
	for (;;) {
		while (*v == ' ' || *v == ',') v++;
		if (*v == ')') break;
		char *end;
		long d = strtol(v, &end, 10);
		if (end == v || d < 0 || a->ndim == NPY_MAX_DIMS) {
			snprintf(err, errlen, "%s: bad shape", path);
			goto fail;
		}
		if (d != 0 && a->count > (size_t)NPY_MAX_ELEMENTS / (size_t)d) {
			snprintf(err, errlen, "%s: too many elements", path);
			goto fail;
		}
		a->count *= (size_t)d;
		a->shape[a->ndim++] = d;
		v = end;
	}
	if (a->count > 0) {
		a->data = malloc(a->count * a->itemsize);
		if (!a->data) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto fail;
		}
		if (fread(a->data, a->itemsize, a->count, f) != a->count) goto trunc;
	}
	if (fgetc(f) != EOF) {
		snprintf(err, errlen, "%s: trailing data", path);
		goto fail;
	}
	free(hdr);
	fclose(f);
	return 0;
trunc:
	snprintf(err, errlen, "%s: truncated", path);
fail:
	free(hdr);
	npy_free(a);
	fclose(f);
	return -1;
}

int npy_write(const char *path, const char *descr, int ndim, const long *shape,
              const void *data, size_t itemsize, char *err, size_t errlen) {
	char dict[512], shp[256];
	size_t count = 1, o = 0;
	shp[o++] = '(';
	for (int i = 0; i < ndim; i++) {
		o += (size_t)snprintf(shp + o, sizeof shp - o, i ? ", %ld" : "%ld", shape[i]);
		count *= (size_t)shape[i];
	}
	snprintf(shp + o, sizeof shp - o, ndim == 1 ? ",)" : ")");
	int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shp);
	size_t total = 10 + (size_t)dl + 1;
	size_t pad = (64 - total % 64) % 64;
	size_t hlen = (size_t)dl + pad + 1;
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot create", path);
		return -1;
	}
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)dl, f) == (size_t)dl;
	for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
	ok = ok && fputc('\n', f) != EOF;
	if (ok && count > 0) ok = fwrite(data, itemsize, count, f) == count;
	if (fclose(f) != 0) ok = 0;
	if (!ok) {
		snprintf(err, errlen, "%s: write failed", path);
		return -1;
	}
	return 0;
}
