/*
 * lu.h: LU with partial pivoting out of core on tile stores (issue 22), the first method written
 * once against the executor (exec/exec.h) and the ring (exec/ring.h): the same code runs on the
 * host executor (the ops table on worker threads) and on the CUDA executor.
 *
 * Result layout (LAPACK's dgetrf): PA = LU, the store A holds the unit-lower L strictly below the
 * diagonal and U on and above it; ipiv[i] (0-based, global) is the row swapped with row i, in
 * forward order (LAPACK's 1-based ipiv minus one).
 *
 * LU_FACTOR: left-looking by stripes of W columns [k0, k0+w) (W from the planner, ts_stripe).
 *   Everything moves through the ring a b x b tile per slot.
 *   1. the stripe (all n rows, A's row order) moves into the n x W executor buffer P;
 *   2. every earlier tile column j (columns [c0, c1), in increasing order, read only) streams
 *      through the ring, its tiles from the diagonal down: P[c0:c1] := L_jj^-1 P[c0:c1] (trsm,
 *      unit lower), then P[rows of tile i] -= L_ij P[c0:c1] (gemm) for the tiles below. A stored
 *      column keeps the row order of the end of its own step d_j (swaps ipiv[0, d_j)); rather
 *      than re-pivot every streamed copy, P is brought to that order before column j's group
 *      (laswp of ipiv[d_prev, d_j), applied once per step in all: a row operation commutes with
 *      the later swaps, S (P - L U) = S P - (S L) U). After the last group P holds ipiv[0, k0);
 *      its rows [0, k0) are U's block above the stripe;
 *   3. getrf of rows [k0, n) of P: w pivots by argmax over the full column height (LAPACK's
 *      choice), then P back to the store through the ring;
 *   4. after the last step, one pass over the columns left of the last stripe applies the swaps
 *      that came after them (ipiv[d_j, n), rows >= d_j), so the store ends in LAPACK's layout.
 *   Flops 2n^3/3. Step s reads the k0 earlier columns below their diagonal blocks once:
 *   ~8 (n k0 - k0^2/2) bytes for ~2 (n - k0/2) k0 w flops, i.e. ~W/4 flop per byte (read-only
 *   streaming, as Cholesky), plus one take + put of the stripe; the swaps cost k0 w per step. Total reads ~ 8 n^3 / (3 W) bytes; the final swap pass reads and writes the strictly
 *   lower part once (8 n^2 bytes).
 *   Why left-looking: earlier columns are only read (a spilled tile costs one scratch read, no
 *   rewrite), and the swaps of later steps reach them once, at the end, instead of rewriting the
 *   columns left of the stripe at every step.
 *   Singularity: the first column whose pivot is exactly zero (LAPACK's info) or, earlier, whose
 *   |u_jj| <= eps ||A[:, j]||_1 (colnorm, the same test as gj: such a pivot makes the solve
 *   meaningless) stops the run with OOC_ERR_SINGULAR, *info = that column + 1, the message saying
 *   which test failed. The pivot growth max|U| / max|A| is reported (stats->growth).
 *
 * LU_SOLVE: LU_FACTOR, then X = U^-1 L^-1 P B per stripe of RHS columns (whole tile columns of B,
 *   at most W wide, held in P): laswp, a forward sweep streaming tile column j rows [c0, n)
 *   (trsm unit lower + gemm below) for j increasing, a backward sweep streaming rows [0, c1)
 *   (trsm upper + gemm above) for j decreasing. 2 n^2 m flops; per RHS stripe the factors are
 *   read once in all (8 n^2 bytes). B (n x m, tile b) is overwritten by X.
 * LU_SOLVE_FACTORED: the same solve with A already holding L\U and ipiv given (a factor file).
 *   A zero on U's diagonal: OOC_ERR_SINGULAR, *info = its column + 1.
 * LU_INVERT: LU_FACTOR, then Z = (LU)^-1 = U^-1 L^-1 I into B (an n x n store whose tiles are
 *   only put: the identity's columns are made in the slots, never read), by the solve above with
 *   the forward sweep of RHS stripe [r0, r1) starting at tile column r0/b (the identity's rows
 *   above r0 stay zero under L^-1): 2n^3/3 (factor) + n^3/3 (forward) + n^3 (backward) = 2n^3
 *   flops, as getrf + getri. A^-1 = Z P: column c of A^-1 is column lu_inverse_perm()[c] of Z
 *   (the writer's column permutation, as gj's). I/O: per RHS stripe the factors once (8 n^2
 *   bytes) and B's stripe taken and put once; the store holds A and Z (2 n^2 doubles) where gj's
 *   in-place inverse holds one.
 *
 * nopiv (no row interchanges, issue 23): getrf of the stripe without pivoting (ex_getrf with
 *   ipiv NULL), ipiv written as the identity and every laswp skipped; the rest is the same. The
 *   same singularity test stops the run (message: "no pivoting"). Besides, a pivot with
 *   |u_jj| < sqrt(eps) ||A[:, j]||_1 is counted (stats->tiny) but does not stop it: without
 *   pivoting it allows multipliers up to ~1/sqrt(eps) (~7e7), i.e. a backward error up to
 *   ~sqrt(eps) ||A|| on that column, which FP64 refinement against A can still remove; below
 *   eps ||A[:, j]||_1 nothing can (the factor is singular to working precision). The caller
 *   (rbt.c) reports the count and min |u_jj| / ||A[:, j]||_1 (stats->min_pivot).
 *
 * logdet (every job that factors): log|det A| = sum log|u_jj|, sign = (-1)^(swaps) prod sign u_jj.
 *
 * Memory: with exec NULL, lu_run creates a host executor over `ops` (2 queues) and allocates
 * lu_workspace_bytes(n, b, W, m) host bytes in all outside the tile cache (through ooc_malloc):
 * P (n x W), K = LU_SLOTS ring slots and their device twins (b x b each), the small host arrays
 * and the executor itself (~80 KiB of queue state). The fix pass and the RHS stripes reuse P. With an executor given, P and the twins are its device memory (ex_alloc)
 * and only the slots (ex_host_alloc, pinned on CUDA) and the small arrays are host memory.
 */
#ifndef OOC_LU_H
#define OOC_LU_H

#include "exec/exec.h"
#include "kernels/ops.h"
#include "tiling/tstore.h"

enum { LU_FACTOR = 0, LU_SOLVE = 1, LU_SOLVE_FACTORED = 2, LU_INVERT = 3 };

#define LU_SLOTS 3 /* ring slots: the take of column q+2 overlaps the work on q and q+1 */

typedef struct lu_args {
  tstore_t *A;             /* n x n: overwritten by L\U (read only for LU_SOLVE_FACTORED) */
  tstore_t *B;             /* LU_SOLVE(_FACTORED): n x m, overwritten by X; LU_INVERT: n x n,
                              receives (LU)^-1 (its tiles are only put) */
  int64_t stripe;          /* W: ts_stripe(n, b, stripe) is what runs */
  const ooc_ops_t *ops;    /* the host executor's kernels when exec is NULL */
  ooc_exec_t *exec;        /* NULL: a host executor over ops, created and destroyed inside */
  int job;
  const double *colnorm;   /* ||A[:, j]||_1 for the eps pivot test; NULL: exact zeros only */
  int64_t *ipiv;           /* n entries, 0-based global: written (factor), read (SOLVE_FACTORED) */
  int nopiv;               /* 1: no row interchanges (A = L U, ipiv written as the identity, no
                              laswp anywhere): for a matrix made safe for it (rbt.h's butterfly)
                              or diagonally dominant. 0 (the default): partial pivoting */
} lu_args_t;

typedef struct lu_stats {
  int64_t steps;           /* stripes factored */
  int64_t rhs_steps;       /* RHS stripes solved */
  double growth;           /* max|U| / max|A| (0 for a solve from a factor file) */
  double norm_inf;         /* ||A||_inf (factor jobs), for a factor file's later checks */
  double logdet;           /* log|det A| (factor jobs; NaN otherwise) */
  int sign;                /* sign of det A: +1 or -1 (0 when not computed) */
  int64_t tiny;            /* nopiv: pivots with |u_jj| < sqrt(eps) ||A[:, j]||_1 (lu.h) */
  double min_pivot;        /* nopiv: min_j |u_jj| / ||A[:, j]||_1 (colnorm given; else 0) */
  double t_factor, t_solve;/* seconds */
  double t_take, t_put, t_wait; /* the rings' host time: store takes/reads, puts, device waits */
  int64_t bytes_streamed;  /* tile-store bytes moved through the rings */
} lu_stats_t;

/* Host bytes lu_run allocates outside the tile cache with the host executor (exec NULL) for
 * n, tile b, stripe W (ts_stripe is applied) and m right-hand sides (unused: the RHS stripes
 * live in P). */
int64_t lu_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m);

/* The column permutation of an inverse: A^-1[:, c] = Z[:, perm[c]] for Z = (LU)^-1 (LU_INVERT). */
void lu_inverse_perm(int64_t n, const int64_t *ipiv, int64_t *perm);

/* Runs a->job. info (may be NULL): 0 or the failing column + 1. */
ooc_status_t lu_run(ooc_ctx_t *ctx, const lu_args_t *a, lu_stats_t *stats, int64_t *info);

/* ---- checks of LU results as written (src/solvers/lu_check.c), for the pipeline ------------
 * Both stream the factor file (L\U, LAPACK's layout, with its 0-based pivots) tile column by tile
 * column through `mem` bytes of buffers at most (at least a strip and one column per buffer),
 * forming L (U T) for blocks T of columns.
 * lu_check_factor: ||PA - LU||_1 / (n ||A||_1 eps) (LAPACK dget01; anorm1 = ||A||_1). full: T
 *   runs over the identity's columns (the exact ratio, O(n^3) flops); else OOC_CHECK_PROBES
 *   random +-1 columns t_c (max_c ||(PA - LU) t_c||_1 / (||t_c||_1 n ||A||_1 eps), a lower bound).
 * lu_check_solve_factor: the HPL ratio of X against B with A x formed as P^T L (U x);
 *   anorm_inf = ||A||_inf as the factor file records it, or <= 0: bounded by ||L||_inf ||U||_inf.
 *   *norm1_x = ||X||_1.
 * NaN anywhere gives a NaN ratio (a failure for the caller). */
ooc_status_t lu_check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                             const ooc_source_t *A, const ooc_source_t *LU, const int64_t *ipiv,
                             int full, double anorm1, double eps, int64_t mem, double *ratio);
ooc_status_t lu_check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                   int64_t b, const ooc_source_t *LU, const int64_t *ipiv,
                                   double anorm_inf, const ooc_source_t *B, const ooc_source_t *X,
                                   double eps, int64_t mem, double *ratio, double *norm1_x);

#endif
