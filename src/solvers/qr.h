/*
 * qr.h: linear least squares by Householder QR out of core, with updating (issue 24). Written once
 * against the executor (exec/exec.h) and the ring (exec/ring.h): the same code runs on the host
 * executor (ref or cpu kernels) and on the CUDA executor.
 *
 * Problem: min ||A x - b||_2 for A m x n (m >= n, float64) and nrhs right-hand sides b at once.
 *
 * The state (qr_state_t): R (n x n upper triangular), D = Q^T B's first n rows (n x nrhs), the
 * number of rows folded, the residual norm of each right-hand side, and the column map (which
 * original column of A each column of R is: the identity until columns are removed). Q is never
 * formed or stored: every row block's reflectors are applied to B's block as they are made and
 * then dropped. A state is exactly what the QR state file holds (docs/CLI.md "lstsq").
 *
 * qr_fold (factor, and the add-rows update): the rows of [A B] arrive in blocks of p rows (the
 *   `read` callback, on the caller's thread, into the ring's slots) and are folded into the state:
 *   the executor holds S = [R D; panel] ((n + P) x (n + nrhs), P >= p: args.panel). Each block is
 *   put under the t valid rows of [R D] (t = min(rows folded, n)) and the blocks already there;
 *   when the next block would not fit in the P panel rows (or at the end), the panel is factored:
 *     1. geqrf of all n + nrhs columns of the t + fill rows ([A B] augmented: Q_i^T reaches the
 *        right-hand sides without an ormqr): their top n rows become D, and rows n .. n+nrhs-1
 *        the upper-triangular R22 of the part orthogonal to R's range, which leaves the problem;
 *     2. R22 comes back to a host buffer; column k's residual component is R22[0..k, k] (Q
 *        keeps norms), added to the residual norm once it has arrived (hypot of the old norm and
 *        its scaled 2-norm: no ||b||^2 - ||d||^2 cancellation, no overflow);
 *     3. laset clears the reflectors under R's diagonal, so S's top is [R D] again.
 *   (cuSOLVER's ormqr wants a workspace of the panel's size, m x k doubles: the augmented geqrf
 *   costs ~2 (t + P) n nrhs flops more and no memory.)
 *   Why a panel larger than a block: a geqrf call costs O(n) kernel launches whatever its rows
 *   (cuSOLVER's panel loop), so on a GPU the factorizations should be few and tall, while the
 *   pinned slots stay small.
 *   Flops per factorization: geqrf of a (t + P) x (n + nrhs) block, ~2 (t + P) n^2 - 2 n^3 / 3 +
 *   4 (t + P) n nrhs; for P >= n about (2 + 4/3 n/P) m n^2 in all against LAPACK's
 *   2 m n^2 - 2 n^3/3
 *   (the structured [R; A_i] reduction that skips R's zeros, tpqrt-like, is a follow-up).
 *   I/O: A and B are read once (8 m (n + nrhs) bytes), nothing is written until the end.
 *   The add-rows update is the same fold starting from a stored state: O((n + p) n^2) per p rows,
 *   independent of the rows folded before.
 * qr_remove_cols (update): columns [c0, c1) of R are deleted; R's columns right of them are then
 *   upper Hessenberg-like (c1 - c0 subdiagonals), re-triangularised by geqrf of rows [c0, n) of
 *   the columns from c0 on, Q^T applied to D's rows [c0, n); D's last c1 - c0 rows become
 *   residual components (added to the residual norms; the same augmented geqrf as the fold, of
 *   [R' D] from row c0). R only: A is not read. O((n - c0)^2 p).
 * qr_solve: X = R^-1 D (trsm on the executor) after the rank test below.
 *
 * Rank: R's diagonal against the columns' norms. ||R[0:j+1, j]||_2 = ||A[:, j]||_2 (Q is
 *   orthogonal), so |r_jj| / ||R[:, j]|| is the sine of the angle between column j and the span of
 *   the columns before it. Column j is numerically dependent when |r_jj| <= tol ||R[:, j]||_2
 *   with tol = QR_RANK_TOL_N * n * DBL_EPSILON (2^-52; a zero column always is); the numerical
 *   rank is n minus the dependent columns. This sees a column that is (nearly) a combination
 *   of earlier ones (every exact rank deficiency shows up so); without column pivoting it can
 *   miss a matrix that
 *   is ill-conditioned without any such column (Kahan's example): qr_rank's condition
 *   estimate max|r_jj| / min|r_jj| is only a lower bound. A deficient problem is refused
 *   (OOC_ERR_SINGULAR: no x is returned, rather than a meaningless one).
 *
 * Memory: device (ex_alloc): S (8 (n + P)(n + nrhs) bytes), tau (8 n), and for qr_solve an n x
 *   (n + nrhs) buffer; host: the state (8 n (n + nrhs) + 8 n + 8 nrhs), QR_SLOTS ring slots of
 *   p x (n + nrhs) and the residual buffer (P x nrhs), staging memory (pinned on CUDA). On the
 *   host executor device memory is host memory: qr_workspace_bytes counts both. R must fit: an
 *   n x n that does not fit the budget is refused by the planner (a tiled Householder QR for
 *   that case is a follow-up).
 */
#ifndef OOC_QR_H
#define OOC_QR_H

#include "exec/exec.h"
#include "kernels/ops.h"

#define QR_SLOTS 3 /* ring slots: the read of block q+2 overlaps the folds of q and q+1 */
#define QR_RANK_TOL_N 1.0 /* tol = QR_RANK_TOL_N * n * DBL_EPSILON */

typedef struct qr_state {
  int64_t n, nrhs;
  int64_t rows;    /* rows of A folded so far (m) */
  double *R;       /* n x n, ld n: upper triangle; zeros below */
  double *D;       /* n x nrhs, ld n: the first n rows of Q^T B */
  double *res;     /* nrhs: ||B[:, k] - A X[:, k]||_2 of the least-squares solution */
  int64_t *colmap; /* n: the original column of A that column j of R is */
} qr_state_t;

/* A fresh state (rows 0, R = D = 0, residuals 0, the identity column map), host memory through
 * ooc_malloc. qr_state_free(NULL) is fine. */
ooc_status_t qr_state_new(ooc_ctx_t *ctx, int64_t n, int64_t nrhs, qr_state_t **out);
void qr_state_free(ooc_ctx_t *ctx, qr_state_t *s);

/* Rows [r0, r0 + nr) of A into A (nr x n, lda) and of B into B (nr x nrhs, ldb). */
typedef ooc_status_t (*qr_read_fn)(void *user, int64_t r0, int64_t nr, double *A, int64_t lda,
                                   double *B, int64_t ldb);

typedef struct qr_stats {
  double t_read;   /* seconds in `read` (caller's thread) */
  double t_wait;   /* seconds waiting for the executor */
  double t_setup;  /* seconds allocating (device buffers, pinned slots) before the first block */
  double t_total;
  double flops;    /* of the operations enqueued */
  int64_t blocks, factorizations;
} qr_stats_t;

typedef struct qr_args {
  ooc_ctx_t *ctx;
  ooc_exec_t *exec;      /* NULL: a host executor over ops, created and destroyed inside */
  const ooc_ops_t *ops;
  int64_t m;             /* rows to fold */
  int64_t block;         /* p: rows per block (>= 1): a ring slot's rows */
  int64_t panel;         /* P: rows of S under [R d] (0 or < block: block): blocks accumulate
                            there and are factored together when the next would not fit */
  qr_read_fn read;
  void *user;
  const char *phase;     /* progress phase name (ooc_tick); NULL: "qr" */
} qr_args_t;

/* Fold m rows into the state (a fresh one: the factorization; a stored one: add rows). On failure
 * the state is unspecified. */
ooc_status_t qr_fold(const qr_args_t *a, qr_state_t *s, qr_stats_t *stats);

/* Delete columns [c0, c1) (0-based, of R's current columns) and re-triangularise; the column map
 * drops them. OOC_ERR_ARG if the range is empty or outside [0, n) or leaves no column (the state
 * unchanged); on another failure the state is unspecified (R is compacted in place first). */
ooc_status_t qr_remove_cols(ooc_ctx_t *ctx, ooc_exec_t *exec, const ooc_ops_t *ops, qr_state_t *s,
                            int64_t c0, int64_t c1);

/* The rank test above: the numerical rank, the first dependent column (-1: none) and the
 * estimate max|r_jj| / min|r_jj| (inf for a zero diagonal). */
int64_t qr_rank(const qr_state_t *s, int64_t *first_bad, double *cond_est);

/* X (n x nrhs, ldx) = R^-1 D. Refuses a rank-deficient state with OOC_ERR_SINGULAR, the message
 * naming the first dependent column, its ratio, the tolerance and the rank. *info (may be NULL)
 * is that column + 1 or 0. An x that overflowed (not finite) is OOC_ERR_ACCURACY. */
ooc_status_t qr_solve(ooc_ctx_t *ctx, ooc_exec_t *exec, const ooc_ops_t *ops, const qr_state_t *s,
                      double *X, int64_t ldx, int64_t *info);

/* Host bytes qr_fold allocates with the host executor (exec NULL) outside the state, for block
 * rows p and panel P (< p: p); and the largest p (with P = p) within `bytes` (0: not even one
 * row). */
int64_t qr_workspace_bytes(int64_t n, int64_t nrhs, int64_t p, int64_t P);
int64_t qr_block_rows(int64_t bytes, int64_t n, int64_t nrhs);
/* Bytes of a state of n columns and nrhs right-hand sides. */
int64_t qr_state_bytes(int64_t n, int64_t nrhs);

/* The useful flops of folding m rows into a state that holds rows_before (what a report's rate is
 * measured against; the fold runs more, see "Flops per factorization" above): from scratch,
 * LAPACK's dgeqrf of m x n (k = min(m, n): 4 m n k - 2 (m + n) k^2 + 4 k^3 / 3, which is
 * 2 m n^2 - 2 n^3 / 3 for m >= n) and dormqr's Q^T b (4 m k - 2 k^2 per right-hand side);
 * onto a stored triangle, dtpqrt's 2 m n^2 and 4 m n per right-hand side. */
double qr_fold_flops(int64_t rows_before, int64_t m, int64_t n, int64_t nrhs);

#endif
