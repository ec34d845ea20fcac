/*
 * chol.h: SPD matrices out of core on tile stores: Cholesky factor, inverse, solve, log-determinant.
 *
 * Storage. Only the lower triangle of A is read: tiles (ti, tj) with ti >= tj, and in diagonal
 * tiles only the entries on and below the diagonal. The strict upper triangle of the input may
 * hold anything (even NaN); it is never used in a computation.
 *
 * CHOL_FACTOR: left-looking blocked Cholesky by stripes of W columns [k0, k0+W).
 *   1. take the lower part of the stripe (rows [k0, n)) into an n x W panel (ld n, global rows);
 *   2. for every earlier tile column j (read-only, ts_read, alternating direction between steps),
 *      read L[k0:n, j] and update panel -= L[k0:n, j] L[k0:k0+W, j]^T (syrk on the diagonal
 *      block, gemm below);
 *   3. potrf of the W x W diagonal block, trsm below; put the stripe back.
 *   The store then holds L: lower tiles of L, diagonal tiles with a zero strict upper triangle,
 *   upper tiles dropped (they read as zero).
 *   Flops n^3/3. Stripe s reads the k0 earlier columns once below row k0: 8 (n-k0) k0 bytes for
 *   2 (n-k0) W k0 flops, i.e. W/4 flop per byte, and never writes them (read-only streaming).
 *   Total read traffic ~ 8 n^3 / (6 W) bytes, plus one take + put of the lower triangle.
 *   Why left-looking: earlier columns are only read (no write-back traffic; a read of a spilled
 *   tile costs one scratch read, no rewrite), and the stripe being built is the only dirty data.
 *
 * CHOL_INVERT: symmetric striped Gauss-Jordan without pivoting on the lower triangle (the
 *   "sweep" operator, signs arranged so the store ends holding +A^-1). With K = [0, k0) already
 *   swept, P = [k0, k0+W) the stripe, T = [k0+W, n), the state is
 *        F = [[A_KK^-1, Y^T], [Y, S]],  Y = A_RK A_KK^-1,  S = A_RR - A_RK A_KK^-1 A_KR (Schur).
 *   Step on P, with V = F[K u T, P] gathered into the panel (rows in K come from tile row P,
 *   transposed) and D = S_PP (diagonal block):
 *     D = L L^T (potrf: a failure at local j is the global leading minor k0 + j + 1; the Schur
 *       complement's leading minors are positive iff A's are), logdet += 2 sum log L_jj;
 *     W = V L^-T (trsm);
 *     every other lower tile:  F_KK += W_K W_K^T;  F_TK -= W_T W_K^T;  F_TT -= W_T W_T^T
 *       (syrk on diagonal tiles, gemm elsewhere: the bulk of the flops);
 *     panel:  F_KP = -W_K L^-1,  F_TP = W_T L^-1,  F_PP = D^-1 (potri).
 *   After the last step F = A^-1. Flops per step (n-W)^2 W + 2 (n-W) W^2 + W^3 = n^2 W, so n^3 in
 *   all: the same as potrf + potri (n^3/3 + 2n^3/3) and half of general Gauss-Jordan.
 *   I/O per step: take + put of the lower triangle, ~8 n^2 bytes for n^2 W flops (W/8 flop per
 *   byte, as gj); n/W steps. The last step also puts the upper triangle (transposed tiles) unless
 *   lower_only, so no extra pass is needed to symmetrize.
 *   Why not potri out of core (potrf, then trtri of L, then lauum L^-T L^-1): the same n^3 flops
 *   in three out-of-core phases with three streaming schedules (and trtri/lauum read and write
 *   the whole triangle per stripe as well), where the sweep is one loop with gj's structure, its
 *   diagonal-block potrf yields the logdet and the failing minor, and with W = n (the matrix fits
 *   the budget) it is exactly in-core potrf + potri on one buffer, i.e. LAPACK's speed.
 *   Numerics: no pivoting is needed for SPD; every pivot block is an SPD Schur complement.
 *   Result: the full symmetric A^-1 in the store (both triangles); with lower_only, the lower
 *   triangle and zeros above (upper tiles dropped, diagonal tiles' strict upper zeroed).
 *
 * CHOL_SOLVE: X = A^-1 B without the inverse: CHOL_FACTOR, then per stripe of W columns of B
 *   (gathered into the same panel) a forward solve L Y = B and a backward solve L^T X = Y, each
 *   streaming the tile columns of L once (read-only): 2 n^2 mw flops for 8 n^2 bytes per stripe.
 *   B (n x m, same tile b, any m) is overwritten by X; A is left holding L.
 *
 * CHOL_SOLVE_FACTORED: the same solve with A already holding L (a factor written earlier by
 *   CHOL_FACTOR, or by anyone: only the lower triangle is read). A diagonal entry of L that is not
 *   positive and finite is OOC_ERR_FORMAT (*info = its 1-based index); logdet = 2 sum log L_jj.
 *
 * Not SPD: OOC_ERR_NOT_SPD, *info = 1-based global order of the first leading minor that is not
 * positive (LAPACK dpotrf's convention), also when a pivot is NaN or Inf. Message:
 * "matrix is not positive definite: leading minor of order %lld is not positive".
 * The store is then left in an unspecified intermediate state.
 *
 * Memory: chol_workspace_bytes() host bytes outside the tile cache, all through ooc_malloc:
 * the n x W panel, an n x b column buffer (when W < n or solving), a b x b transpose buffer.
 * An executor run of CHOL_INVERT with W < n uses the column buffer's room for a b x n tile-row
 * buffer instead: the last step's mirror of the upper triangle then runs on threads, a tile row
 * at a time (tile row P moves through the executor's slots, transposed there).
 */
#ifndef OOC_CHOL_H
#define OOC_CHOL_H

#include "kernels/ops.h"
#include "tiling/tstore.h"

enum { CHOL_FACTOR = 0, CHOL_INVERT = 1, CHOL_SOLVE = 2, CHOL_SOLVE_FACTORED = 3 };

/* The executor: where a step's arithmetic runs (the seam, as gj_exec_t is for gj.c). The
 * algorithm, the tile-store traffic and all judging (failing minor, logdet) stay in chol.c; with
 * args->exec == NULL chol.c runs the host code above through the ops table, unchanged. The CUDA
 * executor (src/kernels/cuda/ocu_chol.h) keeps the stripe's panel resident on the device and
 * streams tile columns through a ring of pinned slots. Per step (host buffers column-major, ld n,
 * row index = global row, like the panel above):
 * - panel: host n x W buffer the executor owns (pinned); chol.c gathers the stripe into it.
 *   NULL allowed for CHOL_INVERT with W < n, where the panel's columns and rows move through
 *   the slots instead (colload/rowload, colstore/rowstore below).
 * - load(panel, k0, w, r0): start the step; copy rows [r0, n) of the panel's w columns to the
 *   device (r0 = k0; none when panel is NULL). Only the lower triangle of the diagonal block D =
 *   rows [k0, k0+w) is ever read: its strict upper triangle may hold anything (even NaN).
 * - lupdate(s, bj) [factor]: panel[k0:n] -= C[k0:n] C[k0:k0+w]^T for the bj columns of L in slot
 *   s (rows >= k0 valid). May return before done.
 * - pivot(job, bad, logdet): job CHOL_FACTOR: D = L L^T, rows below := rows below L^-T.
 *   CHOL_INVERT: the sweep step's first half (chol.h: D = L L^T, W = V L^-T) and D^-1. *bad = the
 *   1-based order, local to D, of the first leading minor that is not positive (0: none); then
 *   nothing else is defined. *logdet = 2 sum log L_jj otherwise.
 * - supdate(s, r0, bj) [invert]: the sweep's update of the tile column in slot s (bj columns,
 *   first row r0, rows [r0, n) valid except the stripe's rows, which are ignored). May return
 *   before done; complete(s) waits until slot s holds the result (or, after lupdate, may be
 *   refilled). chol.c calls the tile store from its own thread only, between complete and the
 *   next update of a slot, and completes every slot before it calls load, pivot or store.
 * - store(panel, full): finish the step (invert: F_KP, F_TP, F_PP = D^-1) and copy rows [r0, n)
 *   back to the host panel (full: rows [0, n); panel NULL: nothing); the diagonal block's strict
 *   upper triangle is zero (full = 0) or its lower triangle's transpose (full = 1: the last sweep
 *   step of a full inverse).
 * - V through the slots [invert, W < n]. colload(s, c0, r0, r1, bj): slot s holds rows [r0, r1)
 *   of bj columns (ld n, global rows) that become those rows of the panel's columns [c0, c0 + bj)
 *   (after load); colstore(s, c0, r0, bj) moves rows [r0, n) back (after store). chol.c stores
 *   V's column blocks from the last to the first: the order in which an executor that finishes
 *   the step by column blocks (F_P = -W L^-1 runs backwards) has them. rowload(s, c0, bi): slot
 *   s holds a bi x k0 block, ld bi (tile row P's tiles left of the stripe side by side, as
 *   ts_take_tiles leaves them); the panel's rows [0, k0) of columns [c0, c0 + bi) become its
 *   transpose;
 *   rowstore(s, c0, bi) the reverse. All four may return before done; complete(s) waits. The
 *   executor transposes tile row P so that the host only copies (the host's strided transposes
 *   took about a quarter of the compute phase at n = 65536), and the copies of one move overlap
 *   the host's work on the next (no host panel between tile store and device).
 * - The pivot in pieces [invert, W < n; optional, both NULL or both set], so that the device
 *   works while V streams in: chol.c first loads D (the stripe's columns, rows [k0, k0 + w)),
 *   calls pivot_begin(CHOL_INVERT), then loads the rest of V column block by column block (tile
 *   row P's block, then the column's rows below the stripe) and calls vready(c0, bj) after each
 *   block's loads, in increasing c0, covering [0, w); then pivot() reports as usual. Without them,
 *   V is loaded whole (columns, then tile row P) and pivot() does everything. */
#define CHOL_MAX_SLOTS 8
typedef struct chol_exec chol_exec_t;
struct chol_exec {
  const char *name;
  int64_t W;              /* the widest stripe the panel holds */
  int nslots;             /* slots (n x tile, ld n); needed when the stripe is narrower than n */
  double *slot[CHOL_MAX_SLOTS];
  double *panel;
  ooc_status_t (*load)(chol_exec_t *e, const double *panel, int64_t k0, int64_t w, int64_t r0);
  ooc_status_t (*lupdate)(chol_exec_t *e, int s, int64_t bj);
  ooc_status_t (*pivot)(chol_exec_t *e, int job, int64_t *bad, double *logdet);
  ooc_status_t (*supdate)(chol_exec_t *e, int s, int64_t r0, int64_t bj);
  ooc_status_t (*complete)(chol_exec_t *e, int s);
  ooc_status_t (*store)(chol_exec_t *e, double *panel, int full);
  ooc_status_t (*colload)(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t r1, int64_t bj);
  ooc_status_t (*colstore)(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t bj);
  ooc_status_t (*rowload)(chol_exec_t *e, int s, int64_t c0, int64_t bi);
  ooc_status_t (*rowstore)(chol_exec_t *e, int s, int64_t c0, int64_t bi);
  ooc_status_t (*pivot_begin)(chol_exec_t *e, int job);
  ooc_status_t (*vready)(chol_exec_t *e, int64_t c0, int64_t bj);
};

typedef struct chol_args {
  tstore_t *A;            /* n x n SPD, lower triangle read; overwritten (see above) */
  tstore_t *B;            /* CHOL_SOLVE: n x m right-hand sides (tile b), overwritten by X */
  int64_t stripe;         /* W: columns per step, rounded down to a multiple of the tile, >= b */
  const ooc_ops_t *ops;
  int job;                /* CHOL_FACTOR, CHOL_INVERT, CHOL_SOLVE */
  int lower_only;         /* CHOL_INVERT: leave only the lower triangle of A^-1 (zeros above) */
  /* Resumable CHOL_INVERT runs (docs/RELIABILITY.md), as in gj.h: start at step start_step with
   * the store holding the earlier steps' result and logdet0 their log-determinant sum;
   * after_step runs after each completed sweep step at a safe point (no tile checked out) with
   * the sum so far, and may stop the run by returning a failure. */
  int64_t start_step;
  double logdet0;
  ooc_status_t (*after_step)(void *user, int64_t step, int64_t nsteps, double logdet);
  void *step_user;
  chol_exec_t *exec;      /* NULL: host code through ops; else e.g. the CUDA executor (its stripe
                             must be the one it was created for). CHOL_SOLVE: the factor runs on
                             the executor, the triangular solves on the host through ops. */
} chol_args_t;

typedef struct chol_stats {
  int64_t steps;          /* stripes factored or swept */
  double t_panel;         /* seconds in diagonal-block factorizations and panel trsm/potri */
  double t_update;        /* seconds gathering and updating (factor: earlier columns; invert:
                             the other tiles), I/O included */
  double t_solve;         /* seconds in the triangular solves (CHOL_SOLVE), I/O included */
  /* With an executor, where the host's time went (parts of t_panel + t_update): tile-store
   * takes and reads, puts (the upper triangle's mirror included), and waits for the device;
   * t_vmove is the part of t_take + t_put that gathers and puts the sweep's panel V */
  double t_take, t_put, t_wait, t_vmove;
} chol_stats_t;

/* Host bytes chol_run allocates outside the tile cache for n, tile b, stripe W and m right-hand
 * sides (m > 0 means CHOL_SOLVE). With an executor, the panel is the executor's and chol_run
 * allocates only the transpose buffer and (solving) the column buffer. */
int64_t chol_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m);

/* The narrowest stripe (a multiple of b, at most W) that covers n in as many steps as W does:
 * the steps then carry equal work. Every sweep step streams the whole lower triangle whatever
 * its width, so a narrow last step (n = 65536, W = 20480: 20480 x 3 + 4096) pays a full pass of
 * copies for a fifth of a step's flops; and a step's pivot work (2 (n-w) w^2 + w^3) falls as w
 * narrows, at no extra pass. W >= n is returned unchanged. */
int64_t chol_even_stripe(int64_t n, int64_t b, int64_t W);

/* Runs a->job. info (may be NULL) gets 0 or the failing leading minor; logdet (may be NULL) gets
 * log det A = 2 sum log L_jj when the factorization succeeds. */
ooc_status_t chol_run(ooc_ctx_t *ctx, const chol_args_t *a, chol_stats_t *stats, int64_t *info,
                      double *logdet);

#endif
