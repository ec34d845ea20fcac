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
 * Memory: chol_workspace_bytes() host bytes outside the tile cache, all through ooc_malloc (the
 * host executor's buffers included): the n x W panel, an n x b column slot (when W < n or
 * solving), a b x b transpose buffer, the diagonal and the executor's bookkeeping.
 *
 * The executor (src/exec/exec.h). Every job is written once over ex_* operations; chol_run runs
 * it on args->exec, or on a host executor over args->ops made for the call (unified: no copies,
 * one queue, one slot: the host code path). The device keeps the stripe's panel (n x W) resident;
 * tile columns stream through the one ring (ring.h) of K staging slots (pinned on a GPU) and, off
 * a unified executor, K device column buffers. Queues: 0 copies in, 1 compute, 2 copies out (as
 * many as the executor has). Per job:
 * - factor: the stripe to the device; earlier columns of L through the ring (put, syrk + gemm);
 *   potrf of D, trsm below; the upper triangle of D zeroed (ex_mirror); the panel back.
 * - invert in core (W = n): the whole lower triangle to the device; the sweep of the matrix
 *   *inside* the device with inner blocks of nb columns (per block: potrf of the pivot block,
 *   whose failure names the minor and whose diagonal gives the logdet, two trsm, one gemm per
 *   other column block for the rank-nb update, two trsm and potri): n^3 flops nearly all in large
 *   GEMMs; the upper triangle mirrored or zeroed on the device; the panel back. With nb >= n (the
 *   host's default) that is potrf + potri in place, LAPACK's in-core inverse.
 * - invert out of core (W < n), per step: V moves through the ring, no host panel: D's columns
 *   first, then tile row P's tiles left of the stripe (transposed on the device, so the host only
 *   copies) and the columns below the stripe, column block by block; the pivot is split so that
 *   the device works while V streams in ("split pivot"): once D is in, potrf of D (the minor, the
 *   logdet) and, off a unified executor, D^-1 by the in-device sweep on a W x W copy of D; then
 *   W = V L^-T block by block as V's blocks arrive (Z_T = -W_T below the stripe: every update is
 *   then one GEMM with alpha +1 left of P, -1 right of it). Every other tile column goes through
 *   the ring (put, syrk + gemm, get: copies of one column overlap the products of the next);
 *   then F_P = -W L^-1 block by block from the last, each block's D^-1 copied in and mirrored,
 *   and each block's moves out start once its event has passed. A unified executor has no room
 *   for the W x W copy (host memory is the budget): it runs the trsm whole once V is in and takes
 *   D^-1 by potri of L after the last trsm, the host code's order.
 * - solve: per stripe of B, the panel to the device; L's tile columns through the ring twice
 *   (forward: trsm + gemm; backward: gemm + trsm); the panel back.
 * Several devices (issue 26, chol_args_t.xs / nx; as gj.h "Several devices"): the out-of-core
 * inverse spreads over nx executors (one per device, exset.h) from the one caller thread. V:
 * off unified executors (GPUs, the strict host) every move of V goes to every device through
 * its own ring (ring_run_multi, a move per device in turn; the devices before the last read its
 * tiles from the store, the last takes them), and every device runs the split pivot's potrf of
 * D and W = V L^-T on its own panel (no broadcast of W: its copies would start only after the
 * trsm); unified executors (the host) share the first's panel, filled and solved there. The
 * pivot's verdict (the minor, the logdet) is the first device's, once. The sweep: the step's
 * other tile columns go round robin over the devices' rings, each device updating from its own
 * panel (unified: the first's, after the verdict's sync, which orders it after the trsm). Then
 * D^-1 (dE: the first device only), store() and V's moves out on the first device, once the
 * rings have retired every sweep column. Every column gets the same operations on the same
 * data whichever device runs it, so the result is bit-identical to one device's where the
 * devices compute alike (the host executors do: tests/test_mgpu.c). In core (W = n) there is no
 * sweep to spread, and factor and solve stream read-only columns into one panel: those run on
 * the first device alone. Memory: each device after the first holds its ring (and, off unified
 * executors, its panel, diagonal and column twins); chol_workspace_bytes_nd and
 * chol_staging_bytes_nd count them on the host.
 * Direct moves (chol_args_t.direct; NOT the default: no faster, below): the out-of-core
 *   inverse's sweep items (a tile column from its diagonal down, the stripe's rows left out:
 *   s_rows) went through a pinned slot, gathered and scattered by the caller's thread; at
 *   n = 65536 the host moved ~280 GB at ~32 GB/s and two GPUs ran no faster than one. With direct
 *   on (off a unified executor), an item whose tiles are all cached is lent in place (tstore.h
 *   ts_lend, TS_LEND_UPDATE, two ranges: the rows above the stripe and below it), each tile goes
 *   to its rows of the device column by one ex_put with its own leading dimension and comes back
 *   by one ex_get, and the ring's retire returns the tiles (cached, dirty; on the last step after
 *   the host work the slot's put does, on the lent tiles in place: the diagonal tile's upper
 *   triangle zeroed or mirrored and, for a full inverse, the column's transposes put into tile
 *   row tj). Items with a spilled tile take the slot as before; so do V's moves in and out, the
 *   factor and the solve. Pinning and the cache's pinner as gj.h's
 *   "Direct moves" (xdirect.h, shared with lu.c and gj_x.c). Arithmetic is unchanged: the result
 *   and the logdet are bit-identical to the slot path (tests/test_mgpu.c t_chol_direct, one and
 *   two strict devices, full and lower-only, in core and spilling). chol_stats_t.bytes_swept
 *   counts the sweep's bytes in and out, bytes_direct the part moved in place. Measured (H100,
 *   one call, CHOL_DIRECT=0 then 2, bench_cuda_chol run 65536 1024 16G, the cache pinned as the
 *   preload filled it): compute 7.32 -> 6.57 s (38.5 -> 42.8 TFLOP/s at n^3), the caller's takes
 *   and puts 2.69 -> 1.31 s, all 73.5 GiB of the sweep moved in place, the logdet bit for bit the
 *   same; the unpin of the 32 GiB cache took 1.2 s more (the preload that pinned took 5.6 s,
 *   the one that did not 7.7 s: one sample each, within the preloads' noise), so end to end it
 *   pays only where the pinning and unpinning hide behind the disk. Off by default
 *   (OOCSOLVE_SWEEP_DIRECT=1 sets it in the pipeline, api/job_int.h): on two H200s (the CLI,
 *   n = 65536 f32, --gpu-mem 16G) the inverse's compute took 7.42 s direct (16.4 GiB pinned as
 *   first lent) against 6.50 s by the slot path, 7.36 s on one GPU.
 * Rounding: on a unified executor with nb >= W every operation is the host code's, on the same
 * data in the same order (sign changes are exact), so results are bit-identical to the host code
 * before the executor. The in-device sweep (nb < w) and the block-wise trsm of the split pivot
 * order the sums differently: rounding within the same error bounds (potri's and trsm's).
 */
#ifndef OOC_CHOL_H
#define OOC_CHOL_H

#include "exec/exec.h"
#include "kernels/ops.h"
#include "tiling/tstore.h"

enum { CHOL_FACTOR = 0, CHOL_INVERT = 1, CHOL_SOLVE = 2, CHOL_SOLVE_FACTORED = 3 };

#define CHOL_NB 1024   /* the in-device sweep's block off a unified executor; n = 32768 on an
                        * H100 (bench_cuda_chol incore): 512 0.94 s, 768 0.89, 1024 0.90, 1536
                        * 0.92, 2048 0.97, 4096 1.07: K = 1024 GEMMs run near the DGEMM peak
                        * already, larger blocks waste more on the diagonal blocks and the trsm */
#define CHOL_SLOTS 4   /* ring slots off a unified executor: one copied in, one multiplied, one
                        * copied out */
#define CHOL_SLOTS_LEAN 2 /* the planner's other choice (plan.c chol_gpu_plan): where the host's
                        * moves, not the device, set the pace (the stores spill) or two slots
                        * fewer make the stripe wider. Each slot is n x b on the device and
                        * pinned on the host: at n = 32768, tile 2048, --gpu-mem 4G,
                        * --host-mem 4G (an H200, docs/PERFORMANCE.md twenty-second session) 2
                        * slots ran stripe 8192 in 4 steps where 4 ran 6144 in 6, the cache
                        * 1 GiB larger: 8.5 GB spilled instead of 20.8, 11.2-11.8 s instead
                        * of 13.7-16.6; with the whole matrix cached 9.3-10.5 s against
                        * 9.6-9.8 */
#define CHOL_MAX_SLOTS 8

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
  ooc_exec_t *exec;       /* NULL: a host executor over ops for the call (unified, 1 queue); else
                             e.g. the CUDA executor, whose budget must hold the stripe's buffers
                             (chol_device_stripe) */
  /* Issue 26: nx > 1 spreads CHOL_INVERT out of core (W < n) over the executors xs[0 .. nx)
   * (xs[0] == exec), one per device, of one kind ("Several devices" above); the result is
   * bit-identical to exec alone when the devices compute alike. In core, factor and solve run
   * on exec alone. nx <= 1: exec alone. */
  ooc_exec_t *const *xs;
  int nx;
  int nslots;             /* ring slots (0: 1 on a unified executor, CHOL_SLOTS otherwise; the
                             pipeline passes the plan's, plan_t.chol_slots) */
  int64_t nb;             /* the in-device sweep's block (0: the whole stripe on a unified
                             executor, CHOL_NB otherwise) */
  /* CHOL_INVERT's columns as they are needed (issue 27: the input read while the first step
   * runs). When set, the inverse calls need(need_user, c) before it first takes a tile of A's
   * columns below c from the store; when it returns, A's columns [0, c) must be in the store.
   * c grows from call to call, up to n, all within the first step (its sweep touches every
   * column), and the first step's sweep goes through the columns left to right (the later
   * steps alternate from there), so the device updates column j while the caller reads on.
   * A failure stops the run. NULL: all of A is there at the call. */
  ooc_status_t (*need)(void *user, int64_t c);
  void *need_user;
  int direct;             /* 1: the out-of-core inverse's sweep items move in place where they
                             can ("Direct moves" above; the pipeline does not pin yet: off by
                             default). Only off a unified executor; ignored on one */
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
  /* The out-of-core inverse off a unified executor: the sweep's bytes between the tile store
   * and the devices (each item in and out), the part of them moved in place ("Direct moves"),
   * the tile-cache bytes pinned for it at the end (then unpinned) and the buffers the executor
   * could not pin. */
  int64_t bytes_swept, bytes_direct, bytes_pinned, pin_refused;
} chol_stats_t;

/* Host bytes chol_run allocates outside the tile cache for n, tile b, stripe W and m right-hand
 * sides (m > 0 means CHOL_SOLVE) on its own host executor. On another executor the staging
 * buffers are that executor's (chol_staging_bytes) and chol_run's own host bytes are
 * the transpose buffer and, for CHOL_INVERT with W < n, a b x n tile-row buffer. */
int64_t chol_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m);
/* The same with nd unified host devices (chol_args_t.xs, "Several devices" above; the pipeline
 * makes them: one queue each, budget chol_host_budget): one panel that all share, and per device
 * after the first its ring slot (W < n), its executor (ex_host_bytes(1)) and headers. */
int64_t chol_workspace_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd);
/* The ex_alloc bytes chol_run takes on a unified executor for stripe W: the panel n W and the
 * diagonal W (the budget of the pipeline's host devices, which are per device as --gpu-mem). */
int64_t chol_host_budget(int64_t n, int64_t b, int64_t W);


/* The device plan, on an executor that is not unified (CUDA), asked of the one the run will use
 * (or one made as it will be): the device bytes chol_run takes for stripe W and job (CHOL_FACTOR,
 * CHOL_INVERT, CHOL_SOLVE) with sweep block nb (0: CHOL_NB): the panel n W, the diagonal W, the
 * sweep's panel W nb (invert, nb < W) and, out of core, the W x W copy of D (invert), K ring
 * slots' column blocks of n x b (out of core, or solving; K = 0: CHOL_SLOTS, the default of
 * chol_args_t.nslots), and the factoring queue's workspace, the
 * largest of the executor's answers for potrf of W (ld n) and the sweep's potrf and potri of nb
 * (ld W); each buffer rounded as EX_DEV_ROUND. chol_device_stripe: the widest stripe, n or whole
 * tile columns, whose bytes (with chol_device_nb's block) fit ex->budget; 0 when not even one
 * tile column does. chol_device_nb: the sweep's block for stripe W (chol_args_t.nb): CHOL_NB, in
 * core halved down to 512 while that is what keeps W = n within the budget.
 * chol_staging_bytes: the staging (pinned) host bytes chol_run allocates on such an executor for
 * stripe W and job: the ring's K slots and the staging panel n W, except for the sweep out of
 * core, whose V moves through the slots. */
int64_t chol_device_bytes(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W, int job, int64_t nb,
                          int K);
int64_t chol_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int job, int K);
int64_t chol_device_nb(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W, int job, int K);
int64_t chol_staging_bytes(int64_t n, int64_t b, int64_t W, int job, int K);
/* The staging bytes of chol_run spread over nd such executors ("Several devices" above): the
 * inverse out of core takes each device's ring and diagonal (chol_staging_bytes each); the
 * rest runs on the first device alone. */
int64_t chol_staging_bytes_nd(int64_t n, int64_t b, int64_t W, int job, int nd, int K);

/* The in-core inverse on an executor, as chol_run's in-core step runs it: F (n x n, ld n, device
 * memory of e) holds A's lower triangle (its upper is never read); F := A^-1's lower triangle by
 * the in-device sweep with blocks of nb (0: CHOL_NB), its strict upper triangle then mirrored
 * (full) or zeroed, all on queue 0 and finished on return. *bad = the failing leading minor (0:
 * none; F then unspecified), *logdet = log det A. For benchmarks and tests. */
ooc_status_t chol_dev_inverse(ooc_exec_t *e, double *F, int64_t n, int64_t nb, int full,
                              int64_t *bad, double *logdet);

/* Runs a->job. info (may be NULL) gets 0 or the failing leading minor; logdet (may be NULL) gets
 * log det A = 2 sum log L_jj when the factorization succeeds. */
ooc_status_t chol_run(ooc_ctx_t *ctx, const chol_args_t *a, chol_stats_t *stats, int64_t *info,
                      double *logdet);

#endif
