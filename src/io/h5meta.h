/*
 * h5meta.h: what makes an output a good netCDF-4 / xarray citizen.
 *
 * Without dimension scales netCDF-C and h5netcdf invent "phony_dim_N" dimensions for every
 * axis. h5meta_describe gives each axis of the output dataset a dimension scale named after the
 * input's netCDF dimension on the corresponding axis (the inverse of A(i, j) is indexed (j, i);
 * X = A^-1 B by (A's column dim, B's column dim); L like A; C = A B by (A's row, B's column
 * dim)), or "<dataset>_row"/"<dataset>_col" when the input has none. A scale is reused where the
 * output file already has that dimension with the right length (the input's own file, when the
 * output is added to it); otherwise it is created in the output's group, with the input
 * coordinate variable's values when the input dimension had one (else as a netCDF "dimension
 * without variable"). It also writes:
 *   history     "<UTC date>: <command line>" (opts->history, or the call and its inputs)
 *   input_path  the input's absolute path and dataset (rhs_path for B, factor's L too)
 *   units       where units follow: inverse u -> u^-1 ("K2" -> "K-2"), solve B/A, factor
 *               sqrt(u) (even exponents only), gemm A*B; units are UDUNITS products of
 *               "name[exponent]" terms; anything else (a '/', a number) is left out.
 * Contract: called on an open output before h5m_commit; failures are output I/O errors
 * (OOC_ERR_IO), the output is then not committed.
 */
#ifndef OOC_H5META_H
#define OOC_H5META_H

#include "io/h5mat.h"

typedef enum { H5META_INVERSE, H5META_SOLVE, H5META_FACTOR, H5META_GEMM } h5meta_kind_t;

ooc_status_t h5meta_describe(ooc_ctx_t *ctx, h5mat_t *out, h5mat_t *a, h5mat_t *b,
                             h5meta_kind_t kind, const char *history);

/* Units algebra (exposed for tests): out = in^p (p = -1, 1/2 as 1, 2) and units products.
 * Returns 0 and "" when the units are not a product of "name[int]" terms or a power is not
 * integral. */
int h5meta_units_pow(const char *in, int num, int den, char *out, size_t cap);
int h5meta_units_mul(const char *a, const char *b, char *out, size_t cap);

#endif
