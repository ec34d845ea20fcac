/*
 * check.h: residual ratios, computed by streaming tiles of the original input and of the result
 * as written (so the check sees what a user will read, dtype rounding and permutation included).
 *
 * Definitions (LAPACK test suite / HPL; eps = unit roundoff of the output type, 2^-53 or 2^-24):
 *   inverse, full:  ||I - A X||_1 / (n ||A||_1 ||X||_1 eps)                   pass if < 30
 *   inverse, estimate (full = 0): est / (n ||A||_1 ||X||_1 eps), est = Hager-Higham's estimate of
 *                   ||I - A X||_1 (LAPACK dlacn2: products with I - A X and its transpose, O(n^2)
 *                   I/O and flops; 2 to 11 products, typically 4-5), including p random +-1
 *                   probes in its first product. A lower bound of the full ratio: never larger.
 *                   Passes: the first product two (one over X, one over A), every later one
 *                   exactly one, over one of them (neighbouring products share their passes:
 *                   check.c estimate), so k products read k + 1 matrices (by rows,
 *                   from a raw file, also one column of n per product with B^T).
 *   solve:          max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n)
 *   solve with a factor (A = L L^T known only through L): the same, with A x_j formed as
 *                   L (L^T x_j) and ||A||_inf given (the factor's record of its input) or bounded
 *                   by ||L||_inf ||L||_1                                         pass if < 16
 *   factor, full:   ||L L^T - A||_1 / (n ||A||_1 eps)  (LAPACK dpot01)          pass if < 30
 *   factor, probe:  max_c ||(L L^T - A) t_c||_1 / (||t_c||_1 n ||A||_1 eps)
 *   least squares (A m x n, m >= n, x = argmin ||A x - b||_2; docs/NUMERICS.md "Check"):
 *                   max_k ||A^T r_k||_2 / (max(m, n) eps ||A||_F (||A||_F ||x_k||_2 + ||b_k||_2)),
 *                   r = b - A x: O(1) for a backward-stable solve whatever cond(A)  pass if < 30
 * NaN or Inf anywhere makes the ratio NaN, which callers treat as a failure.
 * Memory: at most `mem` bytes of host buffers (at least a few tiles' worth are always used).
 */
#ifndef OOC_CHECK_H
#define OOC_CHECK_H

#include "kernels/ops.h"
#include "solvers/qr.h"
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
  int band;      /* fused: the second product's X^T xi came from the writer (check_fused_band) */
} check_info_t;

ooc_status_t check_inverse(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                           const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                           int64_t mem, double *ratio, double *norm1_a, double *norm1_x);

/* check_inverse with what it found in *info (may be NULL). */
ooc_status_t check_inverse_ex(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                              const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                              int64_t mem, double *ratio, double *norm1_a, double *norm1_x,
                              check_info_t *info);

/* Y = M X for M (n x n) and X (n x k, ld n) by one pass over M's rows where M streams them and
 * k is at most 8 (as check_lu_rows below). *done = 0: not by rows (nothing done). */
ooc_status_t check_mul_rows(ooc_ctx_t *ctx, int64_t n, int64_t k, const ooc_source_t *M,
                            const double *X, double *Y, int64_t mem, int *done);

/* Y = L (U X) for an LU factor F in LAPACK's layout (n x n: unit lower L strictly below the
 * diagonal, U on and above it) and X (n x k, ld n), by two passes over F's rows where F streams
 * them (ooc_source_t.rows) and k is at most 8 (beyond, GEMMs over strips do the arithmetic
 * faster than rows' dots): V = U X (n x k, the caller's), then Y = L V. rowU and rowL (NULL:
 * not wanted) receive |U|'s and strictly lower |L|'s row sums. Each row's dots are blocked as
 * the other row passes' (check.c dot), and every row is done by one thread: the same Y on any
 * thread count. *done = 0: not by rows (nothing done; the caller goes by strips). */
ooc_status_t check_lu_rows(ooc_ctx_t *ctx, int64_t n, int64_t k, const ooc_source_t *F,
                           const double *X, double *V, double *Y, double *rowU, double *rowL,
                           int64_t mem, int *done);

/* ---- a probe product formed while the loader reads A (issue 27) ----------------------------
 * The vectors V (n x CHECK_PROBE_K, ld n) are fixed before the run: column 0 x = (1/n) e,
 * column 1 the alternating vector of Hager-Higham's estimator, columns 2.. OOC_CHECK_PROBES
 * random +-1 probes (a fixed seed: reproducible). A V is formed from the column strips the
 * loader reads (check_probe_a: all n rows of each, in float64 as loaded, which is what a read of
 * the input gives), so that a check needs no pass over A for it: the inverse's estimate (its
 * first product, check_fused below) and the LU factor's probes (lu_check_factor).
 * - check_probe_reset: A V from the start (a reload after a fallback reads A anew);
 * - check_probe_done: every column of A came exactly once and none outside the matrix;
 * - check_probe_v / check_probe_av: V and A V (n x CHECK_PROBE_K, ld n). */
#define CHECK_PROBE_K (2 + OOC_CHECK_PROBES)
typedef struct check_probe check_probe_t;
int64_t check_probe_bytes(int64_t n);
ooc_status_t check_probe_create(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n,
                                check_probe_t **out);
void check_probe_destroy(check_probe_t *p);
void check_probe_reset(check_probe_t *p);
void check_probe_a(check_probe_t *p, int64_t c0, int64_t nc, const double *strip, int64_t ld);
int check_probe_done(const check_probe_t *p);
const double *check_probe_v(const check_probe_t *p);
const double *check_probe_av(const check_probe_t *p);

/* ---- the inverse's estimate with its first product fused into the load and the write ----------
 * (issue 27). The residual is the left one, B = I - X A (for an inverse as good a measure as
 * I - A X: the same normalisation, and Higham's bounds for getri/potri-style inverses bound both,
 * docs/NUMERICS.md), so that its first product needs A before X: the probe vectors V (the same
 * 2 + OOC_CHECK_PROBES columns as check_inverse_ex's) are chosen before the run, A V is formed
 * from the column strips the loader reads (a check_probe_t, above), and X (A V) and ||X||_1
 * from the chunks the writer hands to the file (check_fused_x, an h5m_set_tap tap: the bytes the file
 * receives, dtype rounding included). check_fused_finish then runs the rest of Hager-Higham's
 * iteration (products with B^T and B, streamed from the written X and the input A, one pass
 * each) as check_inverse_ex does, and stops early once the estimate already fails (it is a lower bound:
 * a real failure); with the writer's bands (check_fused_band) the second product's pass over X
 * is saved too, so k products read k - 1 matrices back (k without bands).
 * The ratio is est / (n ||A||_1 ||X||_1 eps), est a lower bound of ||I - X A||_1.
 * What the write did not hand to the tap (chunks written through HDF5's own path, or twice) is
 * found by counting each row's and each column's elements: check_fused_complete says 0 and the
 * caller runs check_inverse_ex on the files instead. */
typedef struct check_fused check_fused_t;

/* Host bytes the fused state holds for n besides its probe (the planner counts them). a: the
 * probe that forms A V during the load (borrowed: it must outlive f). */
int64_t check_fused_bytes(int64_t n);
ooc_status_t check_fused_create(ooc_ctx_t *ctx, const ooc_ops_t *o, const check_probe_t *a,
                                check_fused_t **out);
void check_fused_destroy(check_fused_t *f);
/* X from the start again (before the writer starts). */
void check_fused_reset_x(check_fused_t *f);
/* The h5m_tap_fn: a chunk of X as written (user = the check_fused_t). */
void check_fused_x(void *user, int64_t r0, int64_t c0, int64_t rows, int64_t cols,
                   const void *data, int es, int64_t ld);
/* Rows [r0, r0 + nr), columns [c0, c0 + nc) of X as the writer wrote them: column-major
 * nr x nc (ld), or with `trans` its transpose (nc x nr, ld: what h5m_write_t took), in float64
 * (f32: rounded here as a float32 file holds them). Called once every chunk of those rows went
 * through the tap (their rows of X (A V), hence of B x = x - X (A x), are complete): forms
 * w = X^T xi, xi = sgn(B x), the first factor of Hager-Higham's second product B^T xi, so that
 * product reads only A back. w only steers the estimator (which unit vector comes next); no
 * value of the estimate comes from it. Steering by values other than the file's could still
 * make the estimate fall shorter, so the bands must be the file's bytes: each row's sum of the
 * elements' bit patterns is taken here and by the tap, and the finish uses w only when they
 * agree for every row, every element of X came in exactly one band, and each band came after
 * its rows were complete; else it reads X back for that product, as without bands. */
void check_fused_band(check_fused_t *f, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                      const double *data, int64_t ld, int trans, int f32);
/* Every column of A (the probe's) and every element of X exactly once. */
int check_fused_complete(const check_fused_t *f);
/* colnorm_a: A's column 1-norms (the loader's). stop_ratio: stop iterating once the ratio
 * reaches it (the threshold; INFINITY never). A and X: the input and the written output, for
 * the products after the first. */
ooc_status_t check_fused_finish(ooc_ctx_t *ctx, check_fused_t *f, int64_t b,
                                const double *colnorm_a, const ooc_source_t *A,
                                const ooc_source_t *X, double eps, int64_t mem, double stop_ratio,
                                double *ratio, double *norm1_a, double *norm1_x,
                                check_info_t *info);

ooc_status_t check_solve(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m, int64_t b,
                         const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *X,
                         double eps, int64_t mem, double *ratio, double *norm1_x);

ooc_status_t check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *L, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x);

/* The Cholesky factor's ratio. probe (may be NULL) and colnorm_a (A's column 1-norms, the
 * loader's): when the probe is done and full = 0, its vectors are the probes and its A V the
 * A T, so that only L is read back (else A T from a pass over A, with 4 random +-1 probes).
 * L is read back once by strips, or, where it streams rows (a raw file), twice by rows:
 * *l_passes (may be NULL) says which (full: the blocks' passes over L are not counted, 0). */
ooc_status_t check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                          const ooc_source_t *A, const ooc_source_t *L, int full, double eps,
                          int64_t mem, const check_probe_t *probe, const double *colnorm_a,
                          double *ratio, double *norm1_a, int *l_passes);

/* The least-squares ratio above, from one pass over A's and b's rows in blocks of p (`read`, on
 * the caller's thread: qr.h's row callback) and X (n x nrhs, ld n). Host memory: p (n + nrhs) +
 * n nrhs + nrhs doubles. */
ooc_status_t check_lstsq(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t m, int64_t n, int64_t nrhs,
                         int64_t p, qr_read_fn read, void *user, const double *X, double eps,
                         double *ratio);

#endif
