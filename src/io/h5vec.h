/*
 * h5vec.h: small companions of a matrix dataset in the same HDF5 file: a 1-D int64 dataset
 * written beside an output (the LU factor's pivots, docs/CLI.md "factor files") and string
 * attributes read back from an input (which factor a file holds).
 * Contract: h5vec_write_i64 runs on an open output before its commit, in the same temporary file,
 * so the vector is renamed into place with the matrix or not at all; `path` is absolute in the
 * file ("/ipiv"); an existing dataset of that name is replaced (the output's own --force already
 * allowed replacing the file's matrix). Failures are OOC_ERR_IO naming the file and dataset.
 * h5vec_attr_str never fails: 0 when the attribute is missing or not a string.
 */
#ifndef OOC_H5VEC_H
#define OOC_H5VEC_H

#include "io/h5mat.h"

ooc_status_t h5vec_write_i64(ooc_ctx_t *ctx, h5mat_t *out, const char *path, const int64_t *v,
                             int64_t n);
int h5vec_attr_str(h5mat_t *m, const char *name, char *buf, size_t cap);
/* A small float64 dataset beside the output (the QR state file's d, x and residual norms): rows x
 * cols from column-major v (ld rows), stored as h5py shows a rows x cols array (element (i, j) at
 * (i, j)); cols 0: a 1-D dataset of `rows` elements. Same contract as h5vec_write_i64. */
ooc_status_t h5vec_write_f64(ooc_ctx_t *ctx, h5mat_t *out, const char *path, const double *v,
                             int64_t rows, int64_t cols, int64_t ld);

#endif
