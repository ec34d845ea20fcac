/*
 * check.h: residual ratios, computed by streaming tiles of the original input and of the result
 * as written (so the check sees what a user will read, dtype rounding and permutation included).
 *
 * Definitions (LAPACK test suite / HPL; eps = unit roundoff of the output type, 2^-53 or 2^-24):
 *   inverse, full:  ||I - A X||_1 / (n ||A||_1 ||X||_1 eps)                   pass if < 30
 *   inverse, estimate (full = 0): est / (n ||A||_1 ||X||_1 eps), est = Hager-Higham's estimate of
 *                   ||I - A X||_1 (LAPACK dlacn2: products with I - A X and its transpose, each
 *                   one streamed pass over X and one over A, O(n^2) I/O and flops; 2 to 11
 *                   products, typically 4-5), including p random +-1 probes in its first
 *                   product. A lower bound of the full ratio: never larger.
 *   solve:          max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n)
 *   solve with a factor (A = L L^T known only through L): the same, with A x_j formed as
 *                   L (L^T x_j) and ||A||_inf given (the factor's record of its input) or bounded
 *                   by ||L||_inf ||L||_1                                         pass if < 16
 *   factor, full:   ||L L^T - A||_1 / (n ||A||_1 eps)  (LAPACK dpot01)          pass if < 30
 *   factor, probe:  max_c ||(L L^T - A) t_c||_1 / (||t_c||_1 n ||A||_1 eps)
 * NaN or Inf anywhere makes the ratio NaN, which callers treat as a failure.
 * Memory: at most `mem` bytes of host buffers (at least a few tiles' worth are always used).
 */
#ifndef OOC_CHECK_H
#define OOC_CHECK_H

#include "kernels/ops.h"
#include "tiling/tstore.h"

#define OOC_CHECK_PROBES 4

/* The estimator's products at most: the first (2 + OOC_CHECK_PROBES vectors), the transposed
 * one, then up to 4 x (one with a unit vector, one transposed), the last without its partner. */
#define CHECK_EST_MAX_PRODUCTS 11

double check_eps(int f32);

/* What an inverse check found besides its ratio. */
typedef struct check_info {
  double rnorm;  /* ||I - A X||_1 (full) or its estimate (a lower bound of it) */
  double probe;  /* estimate only: the random probes' ratio alone (what the check gave before) */
  int products;  /* streamed products with I - A X (full: column blocks of it) */
} check_info_t;

ooc_status_t check_inverse(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                           const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                           int64_t mem, double *ratio, double *norm1_a, double *norm1_x);

/* check_inverse with what it found in *info (may be NULL). */
ooc_status_t check_inverse_ex(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                              const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                              int64_t mem, double *ratio, double *norm1_a, double *norm1_x,
                              check_info_t *info);

ooc_status_t check_solve(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m, int64_t b,
                         const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *X,
                         double eps, int64_t mem, double *ratio, double *norm1_x);

ooc_status_t check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *L, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x);

ooc_status_t check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                          const ooc_source_t *A, const ooc_source_t *L, int full, double eps,
                          int64_t mem, double *ratio, double *norm1_a);

#endif
