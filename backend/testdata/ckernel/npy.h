/* Minimal .npy (NEP 1) reader and writer for the ckernel test kernel.
 * Little-endian hosts only; C order only; descrs '<f2', '<u2', '<f4',
 * '|i1', '|u1', '<i4'. Independent of the Go implementation on purpose. */
#ifndef CKERNEL_NPY_H
#define CKERNEL_NPY_H

#include <stddef.h>

#define NPY_MAX_DIMS 8
#define NPY_MAX_ELEMENTS (1L << 28)

typedef struct {
	char descr[8];
	int ndim;
	long shape[NPY_MAX_DIMS];
	size_t count;    /* product of shape */
	size_t itemsize;
	void *data;      /* count * itemsize bytes (malloc'd; may be NULL when count == 0) */
} npy_array;

/* npy_read reads path, requiring its descr to equal want. On failure it
 * writes a message to err and returns -1. */
int npy_read(const char *path, const char *want, npy_array *a, char *err, size_t errlen);

/* npy_write writes a version 1.0 file with a 64-byte aligned header. */
int npy_write(const char *path, const char *descr, int ndim, const long *shape,
              const void *data, size_t itemsize, char *err, size_t errlen);

void npy_free(npy_array *a);

#endif
