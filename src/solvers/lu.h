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
 *   Everything moves through the ring (exec/ring.h) a tile COLUMN per item: a slot is n x b
 *   (ld n, rows at their global offsets), gathered from or scattered to the tile store in one
 *   batch by the tile cache's copy threads (ts_read_tiles / ts_take_tiles / ts_put_tiles), so the
 *   host moves ~n b doubles per item instead of b^2 (one tile per item left the host the bound:
 *   issue 22's 12.9 s at n = 40000 on an H100).
 *   1. the stripe (all n rows, A's row order) moves into the n x W executor buffer P, a tile
 *      column per item;
 *   2. every earlier tile column j (columns [c0, c1), in increasing order, read only, rows
 *      [c0, n)) streams through the ring: P[c0:c1] := L_jj^-1 P[c0:c1] (one trsm, unit lower),
 *      then P[c1:n] -= L[c1:n, c0:c1] P[c0:c1] (ONE gemm over every row below). A stored column
 *      keeps the row order of the end of its own chunk d_j (swaps ipiv[0, d_j), step 3); rather
 *      than re-pivot every streamed copy, P is brought to that order before column j's group
 *      (laswp of ipiv[d_prev, d_j), applied once per step in all: a row operation commutes with
 *      the later swaps, S (P - L U) = S P - (S L) U). After the last group P holds ipiv[0, k0);
 *      its rows [0, k0) are U's block above the stripe;
 *   3. the panel: rows [k0, n) of P factored in chunks of `chunk` columns (LU_CHUNK, whole
 *      tiles), right-looking inside the stripe as a blocked getrf: getrf of chunk c's rows
 *      [a, n) (the panel call, ex_getrf: on CUDA cuSOLVER's getrf; pivots by argmax over the
 *      full column height, LAPACK's choice), then its swaps, L_cc^-1 and one gemm on the chunks
 *      right of it, and the next chunk's getrf queued behind them before the host sends chunk c
 *      back to the store through the ring (its gets on the copy queue): a chunk's scatter
 *      overlaps the device's work on the next. A chunk's columns are final once factored except
 *      for the later chunks' swaps below them, which they take lazily like any earlier column
 *      (d_j = the chunk's end). The first step has nothing to its left: its chunks are gathered
 *      one at a time and factored left-looking inside the stripe as they arrive (the chunks
 *      before each applied to it, then its getrf; chunk c-2 goes back to the store after chunk
 *      c is gathered), so the first stripe's trip in and out overlaps its own factorization; the
 *      last chunk's updates read each earlier region for the last time, and the next stripe's
 *      columns go there as soon as the device is past that read (an event per region on the
 *      copy queue; the last chunk's region a tile column at a time, each column's trip in
 *      behind its own trip out: lu.c last_region). In the later steps, a chunk's region of P,
 *      once back in the store and read by no pending update, receives the next step's stripe's
 *      columns (prefetch). Either way step 1 of the next step is done by then (unless a
 *      checkpoint follows the step). With deferred moves the host queues each chunk's trips in
 *      and out and the prefetch before the chunk's getrf, whose enqueue (cuSOLVER's) returns
 *      only once its stream has reached it (lu.c getrf_first);
 *   4. after the last step, one pass over the columns before the last chunk applies the swaps
 *      that came after them (ipiv[d_j, n), rows >= d_j), so the store ends in LAPACK's layout
 *      (not for LU_SOLVE, below): on the device, a tile column at a time through the ring
 *      (rows d_j on to a twin, laswp, back; lent tiles by DMA); on a unified executor in place
 *      in the tile cache (ts_swap_rows) where a column's tiles are all cached, else through the
 *      ring's slot. On the device the last step's left pass already applies each earlier
 *      column's swaps of its own step (ipiv[d_j, k0)) to its twin and moves it back (lu.c
 *      left_fold, where no checkpoint follows and nothing of A is in scratch), so that this
 *      pass moves rows [k0, n) only. A caller that writes the factor out (the pipeline's
 *      factor job) can leave the pass to its writer instead (lu_args_t.swaps): where every
 *      tile ends in the tile cache the store keeps each column's rows below done[j] as they
 *      are, and a row map (tstore.h ts_rowmap_t: per distinct done[], the swaps ipiv[done, n)
 *      applied to the row numbers) tells the writer where each row of the result lies.
 *   Flops 2n^3/3. Step s reads the k0 earlier columns below their diagonal blocks once:
 *   ~8 (n k0 - k0^2/2) bytes for ~2 (n - k0/2) k0 w flops, i.e. ~W/4 flop per byte (read-only
 *   streaming, as Cholesky), plus one take + put of the stripe (8 n w bytes each); the swaps
 *   cost k0 w per step. Total: reads ~ 8 n^3 / (3 W) bytes, the stripes 16 n^2 bytes, the final
 *   swap pass reads and writes the strictly lower part left of the last stripe once (<= 8 n^2
 *   bytes each way). Per item the device does a trsm (b^2 w) and a gemm (2 (n - c1) b w flops)
 *   while the host gathers the next column (8 (n - c0) b bytes): ~W/4 flops per byte, so at
 *   W = 16384 a device doing 50 TFLOP/s needs ~12 GB/s from the host's gathers.
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
 *   (one trsm unit lower on its diagonal block + ONE gemm over every row below) for j
 *   increasing, a backward sweep streaming rows [0, c1) (one trsm upper + ONE gemm over every
 *   row above) for j decreasing. 2 n^2 m flops; per RHS stripe the factors are read once in all
 *   (8 n^2 bytes). B (n x m, tile b) is overwritten by X. The factor's step 4 is skipped (A is
 *   left with each column in the row order of its own step, not a result): the forward sweep
 *   takes the swaps lazily as step 2 does (laswp of the RHS stripe to column j's order before
 *   its trsm; rows below a column's step are the only ones later swaps move, and U's rows and
 *   the diagonal blocks are above it), which saves reading and writing up to 8 n^2 bytes.
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
 * Direct moves (issue 22; lu_args_t.direct, off a unified executor; NOT the default, measured
 *   below): an item whose tiles are
 *   all in the tile cache does not go through the ring's slot. The cache lends their buffers in
 *   place (tstore.h ts_lend; xdirect.h, shared with gj_x.c and chol.c) and each tile moves to or
 *   from its rows of the device column by one
 *   DMA (ex_put / ex_get with the tile's own leading dimension); the ring's retire gives them
 *   back (kept for L's reads, taken for the stripe in, cached for the stripe out, whose buffers
 *   the cache finds or makes as a put would). Each byte then crosses host memory once, where the
 *   slot's gather read and wrote it before the DMA read it again: on an H100 host the gathers ran
 *   at 23-26 GB/s and held the caller's thread for 1.8 s of 3.0 (n = 40000, --gpu-mem 8G), where
 *   DMA from pinned tiles runs at 48-54 GB/s (tools/pin_bench.c) on the copy engines. The
 *   executor pins a buffer the first time it is lent (ex_host_register: ~33 GB/s, once per
 *   buffer: the cache recycles them), and lu_run unpins them all at its end (the executor goes
 *   with the run). Items with a spilled or source tile and an inverse's identity columns (made
 *   in the slot) go through the slot as before. The
 *   host scans (the growth, ||A||_inf) read the lent tiles. Arithmetic is unchanged: results are
 *   bit-identical either way (tests/test_lu.c t_direct).
 *   Measured (H200, one call, bench_lu_cuda factor 40000 1024 8G, LU_DIRECT=0/1 alternately):
 *   the slot 3.157 and 2.541 s, direct 4.085 and 2.988 s; stripe out 0.60 -> 0.28 s, but stripe
 *   in 0.64 -> 1.12 s: pinning 11.9 GiB tile by tile (1523 buffers of 8 MiB) on the critical
 *   path costs more than the gathers it saves, and the unpin at the end adds ~0.2 s.
 *   With the tiles pinned as the load fills them (tstore.h tcache_pin_new; lu_run then keeps
 *   the pinner it finds: pin_caches), the factor itself pays (H200, one call, LU_DIRECT=0/2
 *   alternately): n = 40000 --gpu-mem 8G 2.378, 2.277 s -> 1.711, 1.672 s (0.67x cuSOLVER's
 *   in-core 1.128 s); n = 65536 --gpu-mem 16G 7.026 -> 5.753 s. The pinning moves into the
 *   load: +0.8 s for 12.8 GB (the fill 0.87-0.90 -> 1.59-1.83 s), +2.3 s for 34 GB, and the
 *   unpin (0.3 s, 0.9 s) to the end: it pays end to end only where the load waits for the disk
 *   anyway. The pipeline (job_lu_prepare, --method lu on the GPU) therefore makes the executor
 *   before the load and pins each strip's new tile buffers on a pool thread while the next
 *   strip is read from HDF5 (tstore.h TCACHE_PIN_LATER), then runs with direct = 1 and unpins
 *   after the run: through the CLI on an H200 the solve at n = 65536 with 256 right-hand sides
 *   moved all 120.6 GiB in place, compute 8.23, 7.71 -> 7.36, 7.32 s with the read phase no
 *   longer (docs/PERFORMANCE.md "LU end to end"). The flag stays off for callers that set no
 *   pinner (lu_run pins on first lend then).
 *   Deferred (since 2026-11-29; H200, the CLI's factor at n = 40000, --gpu-mem 8G: 1.63, 1.62
 *   -> 1.52, 1.54 s, docs/PERFORMANCE.md "twelfth session"): the stripe's trip in and
 *   the panel's chunks' trip out are batches of lent tile columns whose DMAs are queued without
 *   the ring, and the host goes on at once (lu.c "deferred moves"); the tiles go back when a
 *   later need finds the batch's event passed. The final swaps' items were lent for update and
 *   swapped on the device (lu.c fix_columns) since the same session.
 *
 * logdet (every job that factors): log|det A| = sum log|u_jj|, sign = (-1)^(swaps) prod sign u_jj.
 *
 * Scans: the pivot growth max|U| / max|A| and ||A||_inf come from ex_absscan operations on the
 *   executor (exec.h), over P where the data already is: each stripe column right after its put
 *   into P (A as loaded: max |a| and the row sums, on the put's queue, so the sums add up in
 *   the order the columns arrive: the same bits on every backend and on a resumed run), and each
 *   factored column before its get (U's part, rows <= the column). Their results stay in a
 *   device buffer of n + 2 doubles (counted by lu_device_stripe and lu_workspace_bytes) and come
 *   to the host at the factor's end and before a checkpoint (after_step's state). Why: on the
 *   host they held the thread that feeds the device for 0.39 s of the CLI's 2.2 s factor at
 *   n = 40000 (H200, 80 scans, even on 16 threads), where the device scans a column in well
 *   under a millisecond on a queue beside the arithmetic.
 *
 * Steps and safe points (resumable runs, lu_args_t.start_step/after_step): step s < F (F =
 *   ceil(n / W)) is factor stripe s; for LU_SOLVE and LU_INVERT steps F .. F + R - 1 are the R
 *   RHS stripes (lu_steps). After factor step s the store holds columns [0, (s+1)W) factored,
 *   each tile column in the row order of the end of its own chunk (done[], recomputed from W,
 *   the chunk width and b on a resume), the columns right of it as loaded, ipiv is valid for
 *   rows < (s+1)W; the final swap pass (step 4) runs after step F - 1 is reported, so a run
 *   resumed at F runs it and one resumed after F finds it done. After RHS stripe r, B's stripes
 *   up to r hold X (for LU_INVERT, Z's). The next stripe's prefetch (step 3) is the only thing
 *   that crosses a step: it is skipped in the steps after which a checkpoint is due.
 *   LU_SOLVE_FACTORED and nopiv runs (rbt.c) are not resumed by the pipeline (docs/RELIABILITY.md).
 *
 * Memory: with exec NULL, lu_run creates a host executor over `ops` (2 queues; unified: the
 * operations read the ring's slot directly, so one slot and no device twins) and allocates
 * lu_workspace_bytes(n, b, W, m) host bytes in all outside the tile cache (through ooc_malloc):
 * P (n x W), one n x b ring slot, the small host arrays and the executor itself (~80 KiB of
 * queue state). The fix pass and the RHS stripes reuse P. With an executor given that is not
 * unified (CUDA, the strict host executor), P and K = nslots (default LU_SLOTS) device twins of
 * n x b are its device memory (ex_alloc), and the host holds K pinned n x b slots
 * (ex_host_alloc) and the small arrays: 8 K n b + small host bytes (lu_host_bytes).
 */
#ifndef OOC_LU_H
#define OOC_LU_H

#include "exec/cuda/exec_cuda.h"
#include "exec/exec.h"
#include "kernels/ops.h"
#include "solvers/check.h"
#include "tiling/tstore.h"

enum { LU_FACTOR = 0, LU_SOLVE = 1, LU_SOLVE_FACTORED = 2, LU_INVERT = 3 };

#define LU_CHUNK 4096 /* the panel's chunk width: narrow enough that a chunk's trip back to
                         the store hides behind the next chunk's work, wide enough for the
                         gemms to run at speed */
#define LU_SLOTS 3 /* ring slots: the gather of column q+2 overlaps the work on q and q+1 */

typedef struct lu_args {
  tstore_t *A;             /* n x n: overwritten by L\U (read only for LU_SOLVE_FACTORED) */
  tstore_t *B;             /* LU_SOLVE(_FACTORED): n x m, overwritten by X; LU_INVERT: n x n,
                              receives (LU)^-1 (its tiles are only put) */
  int64_t stripe;          /* W: ts_stripe(n, b, stripe) is what runs */
  const ooc_ops_t *ops;    /* host kernels (required): the host executor's when exec is NULL,
                              and the final swaps of a column not wholly in the tile cache */
  ooc_exec_t *exec;        /* NULL: a host executor over ops, created and destroyed inside */
  int job;
  const double *colnorm;   /* ||A[:, j]||_1 for the eps pivot test; NULL: exact zeros only */
  int64_t *ipiv;           /* n entries, 0-based global: written (factor), read (SOLVE_FACTORED) */
  int64_t chunk;           /* the panel's chunk width (0: LU_CHUNK; whole tiles, >= one) */
  int nslots;              /* ring slots on an executor that is not unified: 1 .. LU_SLOTS,
                              0 = LU_SLOTS (the planner lowers it when pinned memory is short) */
  int direct;              /* 1: move items in place where they can ("Direct moves": faster
                              when a pinner set before the load pinned the tiles, as the
                              pipeline's LU on the GPU does; slower when lu_run pins them on
                              first lend, so off unless the caller pinned) */
  int nopiv;               /* 1: no row interchanges (A = L U, ipiv written as the identity, no
                              laswp anywhere): for a matrix made safe for it (rbt.h's butterfly)
                              or diagonally dominant. 0 (the default): partial pivoting */
  /* Resumable runs (docs/RELIABILITY.md), as gj.h's and chol.h's, for LU_FACTOR, LU_SOLVE and
   * LU_INVERT (see "Steps and safe points" above). start_step: the first step to run (0: from
   * the beginning); the stores hold the result of the steps before it, ipiv their pivots and
   * state0 the rest of their state (as after_step was handed it). after_step, when set, is
   * called after every step with the pivots and the state; the point is safe (no tile checked
   * out) for every step for which step_due returned nonzero, or for every step when step_due
   * is NULL. step_due is asked exactly once per step, before anything of the next step is
   * taken out of a store (a factor step with step_due's no prefetches the next stripe): a
   * factor step is asked before it runs (before = 1), the others as they end (0). A failure
   * either returns stops the run. */
  int64_t start_step;
  const struct lu_state *state0;
  int (*step_due)(void *user, int64_t step, int64_t nsteps, int before);
  ooc_status_t (*after_step)(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv,
                             const struct lu_state *state);
  void *step_user;
  /* Columns as they are needed (issue 27: the input read while the factor runs). When set, the
   * factor calls need(need_user, c) before it first takes a tile of A's columns below c from
   * the store; when it returns, A's columns [0, c) must be in the store and colnorm[0, c)
   * final. c grows from call to call, up to n; the time spent in it is lu_stats_t.t_need (the
   * device works on meanwhile). A failure stops the run. NULL: all of A (and colnorm) is
   * there at the call. B is always all there at the call. */
  ooc_status_t (*need)(void *user, int64_t c);
  void *need_user;
  /* LU_FACTOR's final row swaps (step 4; LU_SOLVE never makes them, LU_INVERT always does):
   * LU_SWAPS_STORE (0) in the store, which ends in LAPACK's layout; LU_SWAPS_NONE nowhere
   * (the factors are not a result: a log-determinant); LU_SWAPS_WRITER left to the caller's
   * writer, which moves the rows into place with *rowmap (tstore.h ts_permute_start: on the
   * copy threads, while it writes the rows above the first one moved), when every tile of A
   * ends the factor in the tile cache, else in the store as LU_SWAPS_STORE; stats->swaps_left
   * says which (0: rowmap left empty). Why: on the device the pass moves each column below its
   * chunk's end to the GPU and back after the last getrf, with nothing to overlap (0.09-0.10 s
   * of the 1.36-1.38 s factor at n = 40000 on an H200), where the writer's first half needs
   * none of those rows. */
  int swaps;
  ts_rowmap_t *rowmap;
} lu_args_t;

enum { LU_SWAPS_STORE = 0, LU_SWAPS_NONE = 1, LU_SWAPS_WRITER = 2 };

/* What an LU run carries from step to step besides the stores and ipiv: with it, a run started
 * at start_step continues exactly as the run that wrote it would have (the same bits: the row
 * sums are accumulated in the same column order). */
typedef struct lu_state {
  double amax, umax;       /* max |A| over the stripes loaded, max |U| over those factored */
  double logdet;           /* sum of log |u_jj| over the factored columns */
  int sign;                /* (-1)^(swaps) prod sign u_jj so far */
  int64_t tiny;            /* nopiv: the tiny pivots counted so far (lu_stats_t.tiny) */
  double min_pivot;        /* nopiv: lu_stats_t.min_pivot so far */
  double *rowsum;          /* n: sum_j |a_ij| over the columns loaded so far (||A||_inf) */
} lu_state_t;

/* The steps of a->job on n x n with tile b, stripe W and m right-hand-side columns (m: n for
 * LU_INVERT, ignored for LU_FACTOR): the factor's ceil(n / W) stripes, then, for LU_SOLVE and
 * LU_INVERT, the RHS stripes (whole tile columns, W / b per stripe). *nfactor (may be NULL):
 * the factor's steps. */
int64_t lu_steps(int job, int64_t n, int64_t b, int64_t W, int64_t m, int64_t *nfactor);

/* The end of the chunk of the panel that factors column c (n x n, tile b, the stripe that
 * runs W = ts_stripe(n, b, ...), chunk width chunk, 0: LU_CHUNK): the rows of c that later
 * chunks and steps swap lazily start there (lu.h "Steps"). */
int64_t lu_chunk_end(int64_t n, int64_t b, int64_t W, int64_t chunk, int64_t c);

/* The disk tier's traffic of LU_FACTOR (issue 27) when the tile cache keeps no tile between
 * uses: every stripe read in and put back once (8 n^2 bytes each
 * way), each later step's left pass reads every earlier tile column from its diagonal block
 * down, and the final swaps read and put back each column's tile rows from its chunk's end
 * down (lu_chunk_end; the last stripe's columns need none). *spilled: bytes written to
 * scratch; *read: bytes read back. Stripe W as ts_stripe gives it, the default chunk. The
 * host executor's run with a one-byte cache moves exactly this (test_pipeline t_spill_model);
 * a larger cache reads back less, and the load's writes and the run's together stay within
 * 8 n^2 plus *spilled (a tile the load left cached may be written during the run instead). */
void lu_spill_model(int64_t n, int64_t b, int64_t W, int64_t *spilled, int64_t *read);

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
  double t_in, t_left, t_panel, t_out, t_fix; /* the factor's phases (wall, summed over steps):
                              stripe in, earlier columns, getrf, stripe out, the final swaps */
  double t_need;           /* in lu_args_t.need (inside the phases above) */
  int64_t bytes_streamed;  /* tile-store bytes moved through the rings */
  int64_t bytes_direct;    /* the part of them moved in place (lent tiles, "Direct moves") */
  int64_t bytes_pinned;    /* tile-cache bytes pinned for it at the end (then unpinned) */
  int64_t pin_refused;     /* tile buffers the executor could not pin (copied synchronously) */
  int swaps_left;          /* LU_SWAPS_WRITER: 1 when the final swaps went to the rowmap */
  int64_t rows_mapped;     /* then: the rows the map moves, summed over the tile columns' widths
                              (the elements the writer moves into place) */
} lu_stats_t;

/* Host bytes lu_run allocates outside the tile cache with the host executor (exec NULL) for
 * n, tile b, stripe W (ts_stripe is applied) and m right-hand sides (unused: the RHS stripes
 * live in P). */
int64_t lu_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m);

/* Host bytes lu_run allocates with an executor given that is not unified (CUDA): K pinned
 * n x b ring slots and the small arrays. */
int64_t lu_host_bytes(int64_t n, int64_t b, int64_t W, int K);

/* What LU's CUDA executor's host memory grows to in a run of order n beyond what it holds when
 * made: cuSOLVER's host workspace (64 KiB allowed) and laswp's row table (12 bytes a row,
 * doubled as it grows). The GPU budget sweep (test_budget gpu) found an LU inverse at n = 1800
 * 64 KiB over --host-mem when a queue's growth went uncounted. */
#define LU_EXEC_GROWTH(n) (24 * (int64_t)(n) + ((int64_t)64 << 10))

/* The stripe on device executor ex (ex->budget bytes) with K ring slots: the n x W panel and K
 * n x b twins, less what the panel factor takes for itself (ex_getrf_ws of an n x LU_CHUNK
 * block, the largest chunk getrf; LU_DEV_MARGIN if the executor cannot tell), evened out over
 * the steps it takes (whole tiles); n when everything fits; 0 when not even one tile column
 * does. *need (may be NULL): the budget one tile column would need. */
#define LU_DEV_MARGIN ((int64_t)512 << 20)
int64_t lu_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int K, int64_t *need);

/* Runs the operations lu_run queues (getrf, laswp, trsm, gemm, the scans) once on a small
 * block of device ex, synchronously, so that the libraries load their kernels now: on an H200
 * the factor's first cuSOLVER getrf took 0.115 s where the next ones took 0.035 s (CUDA loads a
 * library's kernels lazily, at their first launch). The time moves, it does not go: the pipeline calls
 * it when it makes LU's executor (job_lu_device), so that t_factor is timed warm as cuSOLVER's
 * peer is, and t_compute still counts it; the bench calls it before its clock starts. Nothing
 * on a unified executor (the host's kernels need no loading). */
ooc_status_t lu_warm(ooc_exec_t *ex);

/* The CUDA executor LU runs on, for an n x n factor (the pipeline's job_lu_device and
 * bench_lu_cuda, so that the bench measures the CLI's executor): three queues (QC, QT, QG);
 * the copy queues urgent (ex_cuda_config_t.urgent_copies: their scans and small copies wait for
 * no gemm); rings that hold eight laswp tables of a chunk's pivots (32 bytes a pivot), at most
 * 1 MiB: the first stripe queues four chunks' updates at a time, each with its table, beside
 * getrf's pivots and diagonals, and in the 64 KiB ring (grown to 256 KB by the first table)
 * laswp's enqueues waited for room, 0.25 s in all at n = 40000 on an H200 (exec_cuda.c
 * rec_take). */
ex_cuda_config_t lu_cuda_config(int device, int64_t gpu_mem, int64_t n, const char *trace);

/* The column permutation of an inverse: A^-1[:, c] = Z[:, perm[c]] for Z = (LU)^-1 (LU_INVERT). */
void lu_inverse_perm(int64_t n, const int64_t *ipiv, int64_t *perm);

/* Runs a->job. info (may be NULL): 0 or the failing column + 1. */
ooc_status_t lu_run(ooc_ctx_t *ctx, const lu_args_t *a, lu_stats_t *stats, int64_t *info);

/* ---- checks of LU results as written (src/solvers/lu_check.c), for the pipeline ------------
 * Both stream the factor file (L\U, LAPACK's layout, with its 0-based pivots) tile column by tile
 * column through `mem` bytes of buffers at most (at least a strip and one column per buffer),
 * forming L (U T) for blocks T of columns.
 * lu_check_factor: ||PA - LU||_1 / (n ||A||_1 eps) (LAPACK dget01; anorm1 = ||A||_1). full: T
 *   runs over the identity's columns (the exact ratio, O(n^3) flops); else probe columns t_c
 *   (max_c ||(PA - LU) t_c||_1 / (||t_c||_1 n ||A||_1 eps), a lower bound): OOC_CHECK_PROBES
 *   random +-1 columns, A T from a pass over A; or, with probe (done: check_probe_done), its
 *   CHECK_PROBE_K vectors and the A V the load formed, and no pass over A (issue 27: the
 *   check then reads the factor alone, half of its bytes at n = 40000).
 * lu_check_solve_factor: the HPL ratio of X against B with A x formed as P^T L (U x);
 *   anorm_inf = ||A||_inf as the factor file records it, or <= 0: bounded by ||L||_inf ||U||_inf.
 *   *norm1_x = ||X||_1.
 * NaN anywhere gives a NaN ratio (a failure for the caller). */
ooc_status_t lu_check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                             const ooc_source_t *A, const ooc_source_t *LU, const int64_t *ipiv,
                             int full, double anorm1, double eps, int64_t mem,
                             const check_probe_t *probe, double *ratio);
ooc_status_t lu_check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                   int64_t b, const ooc_source_t *LU, const int64_t *ipiv,
                                   double anorm_inf, const ooc_source_t *B, const ooc_source_t *X,
                                   double eps, int64_t mem, double *ratio, double *norm1_x);

/* ---- the factor's probe check formed while the factor is written (issue 27) -----------------
 * lu_check_factor's probe ratio with the load's vectors (check_probe_t: T and A T), its L (U T)
 * formed from the chunks the writer hands to the file (an h5m_set_tap tap: the bytes the file
 * receives, float32 rounding included), so the check reads nothing back: at n = 40000 it read
 * the 12.8 GB factor again after the write. One pass suffices when the chunks come a chunk row
 * at a time, top to bottom (the pipeline's writer, write_rows, writes a tile row per call):
 * U T's rows are final once their chunk row is complete, and L's part left of a chunk row's
 * diagonal band needs only rows above it; the band itself (chunk_rows x chunk_rows, kept) is
 * taken when its row is complete.
 * - lu_fused_bytes(n, chunk_rows): the host bytes it holds (the planner counts them);
 * - lu_fused_create: a borrows the probe (it must outlive f); chunk_rows: the tallest chunk
 *   the tap may see (a taller one makes it fall back);
 * - lu_fused_reset: from the start (before the writer starts);
 * - lu_fused_x: the h5m_tap_fn (user = f). Chunks out of that order, an element twice or outside
 *   the matrix: from then on nothing is formed and lu_fused_complete says 0;
 * - lu_fused_complete: every element of the factor came once, in order, and the probe saw every
 *   column of A;
 * - lu_fused_ratio: then the ratio lu_check_factor gives with the probe (to rounding: the sums
 *   run in another order), with the pivots (0-based) and ||A||_1. Once per write: it spends the
 *   state (lu_fused_complete says 0 afterwards). */
typedef struct lu_fused lu_fused_t;
int64_t lu_fused_bytes(int64_t n, int64_t chunk_rows);
ooc_status_t lu_fused_create(ooc_ctx_t *ctx, const ooc_ops_t *o, const check_probe_t *a,
                             int64_t n, int64_t chunk_rows, lu_fused_t **out);
void lu_fused_destroy(lu_fused_t *f);
void lu_fused_reset(lu_fused_t *f);
void lu_fused_x(void *user, int64_t r0, int64_t c0, int64_t rows, int64_t cols, const void *data,
                int es, int64_t ld);
int lu_fused_complete(const lu_fused_t *f);
double lu_fused_ratio(lu_fused_t *f, const int64_t *ipiv, double anorm1, double eps);

#endif
