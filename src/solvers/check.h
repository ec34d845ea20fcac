/*
 * check.h: residual ratios, computed by streaming tiles of the original input and of the result
 * as written (so the check sees what a user will read, dtype rounding and permutation included).
 *
 * Definitions (LAPACK test suite / HPL; eps = unit roundoff of the output type, 2^-53 or 2^-24):
 *   inverse, full:  ||I - A X||_1 / (n ||A||_1 ||X||_1 eps)                   pass if < 30
 *   inverse, probe: max_c ||t_c - A (X t_c)||_1 / (||t_c||_1 n ||A||_1 ||X||_1 eps), p random
 *                   +-1 vectors t; never larger than the full ratio, O(n^2) work
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

double check_eps(int f32);

ooc_status_t check_inverse(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                           const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                           int64_t mem, double *ratio, double *norm1_a, double *norm1_x);

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
