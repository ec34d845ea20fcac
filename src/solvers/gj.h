/*
 * gj.h: striped, blocked Gauss-Jordan elimination with partial pivoting, in place on tile stores.
 *
 * The stripe algorithm (Carcenac), generalised to stripes of tiles and with the pivoting the
 * seed thesis lacks. Step k eliminates the W columns [k0, k0+W) at once:
 *   1. take the stripe (all rows of those tile columns) into one n x W panel buffer;
 *   2. LU with partial pivoting of its rows [k0, n) picks the W pivots (the same pivots unblocked
 *      Gauss-Jordan would pick: rows above k0 are never candidates);
 *   3. (the panel now holds [A_up; L11\U11; L21]: rows above as they were, the LU below)
 *   4. every other tile column C (streamed through the cache, alternating direction so the
 *      tiles touched last are hit first) gets the row swaps, then with R = C[k0:k0+W]:
 *        Z = L11^-1 R,  C_low -= L21 Z,  C_k = U11^-1 Z,  C_up -= A_up C_k
 *      (two trsm of w^2 nc flops each and two GEMMs: the bulk of the flops);
 *   5. inversion: the panel becomes the Gauss-Jordan transform column, with P = (L11 U11)^-1,
 *        rows above:  N_up  = -A_up P        (two trsm with U11 then L11)
 *        rows below:  N_low = -L21 L11^-1    (one trsm; equals -A_low P)
 *        diagonal:    P                      (getri),
 *      and is put back as the new column block; solve: it is dropped (no transform).
 * Why step 4 does not multiply by the transform column ([N_up; P; N_low] R, one GEMM, the
 * flops of the same count): P is the explicit inverse of the w x w pivot block, and a wide
 * stripe's pivot block carries most of A's condition: P R has errors ~ kappa(A11) eps |P||R|,
 * which the rows above then multiply on. On a cond-1e8 matrix, n = 3000, a 2560 + 440 stripe
 * gave ||I - A X|| ratio 314 where LAPACK's getri gives 0.001; the solves with the factors give
 * 1e-4 (docs/NUMERICS.md, "Gauss-Jordan on wide stripes"). With one step (W = n) nothing changes.
 * Inversion leaves (P_r A)^-1 = A^-1 P_r^T in the store; `perm` then says where each column goes.
 * Per step the store is streamed once: 16 n^2 bytes for 2 n^2 W flops (DESIGN.md section 5).
 *
 * Numerics: a pivot with |u_jj| <= eps * ||A[:, j]||_1 (the original column's norm, so column
 * scaling does not matter) is singular to working precision: OOC_ERR_SINGULAR, *info = j + 1.
 */
#ifndef OOC_GJ_H
#define OOC_GJ_H

#include "exec/exec.h"
#include "kernels/ops.h"
#include "tiling/tstore.h"

/* A tile column a step updates: store and tile-column index (gj_targets). */
typedef struct gj_target {
  tstore_t *ts;
  int64_t tj;
} gj_target_t;

typedef struct gj_args {
  tstore_t *A;            /* n x n; invert: overwritten by A^-1 P_r^T; solve: destroyed */
  tstore_t *B;            /* n x m right-hand sides, overwritten by X; NULL to invert */
  int64_t stripe;         /* W: columns per step, a multiple of the tile (clamped to n) */
  const ooc_ops_t *ops;
  const double *colnorm;  /* ||A[:, j]||_1 of the input, n entries (for the singularity test) */
  int64_t *perm;          /* invert only, n entries out: A^-1[:, c] = store[:, perm[c]] */
  /* The executor the arithmetic runs on (exec/exec.h: host, strict host or CUDA); NULL: a host
   * executor over ops made for the call (gj_x_host_exec). chunk: the panel LU's chunk width
   * (whole tiles, >= one; 0: the whole stripe on a unified executor, GJ_X_CHUNK on others). */
  ooc_exec_t *x;
  int64_t chunk;
  /* Issue 26: nx > 1 spreads gj_x over the executors xs[0 .. nx) (xs[0] == x), one per device,
   * of one kind (gj.h "Several devices"); the result is bit-identical to x alone when the
   * devices compute alike. nx <= 1: x alone. */
  ooc_exec_t *const *xs;
  int nx;
  int direct;             /* 1: sweep items move in place where they can ("Direct moves" below;
                             no faster on one GPU: off by default). Only off a unified
                             executor; ignored on one */
  /* Resumable runs (docs/RELIABILITY.md). start_step: the first step to run; the store holds the
   * result of the steps before it and ipiv0 (n entries) their pivots. after_step, when set, is
   * called after every completed step at a safe point (no tile checked out, the store holds the
   * step's result, ipiv valid for rows < (step + 1) W); a failure it returns stops the run. */
  int64_t start_step;
  const int64_t *ipiv0;
  ooc_status_t (*after_step)(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv);
  void *step_user;
  /* Columns as they are needed (issue 27: the input read while the run goes, job.c lazy_room).
   * When set, gj calls need(need_user, c) before it first takes a tile of A's columns below c
   * (on the calling thread, c growing up to n), and the first step's sweep goes left to right
   * (gj_targets) so that the asks come in order; by step 0's after_step every column of A has
   * been asked for (need(n): gj_x_run asks for what the step did not take). */
  ooc_status_t (*need)(void *user, int64_t c);
  void *need_user;
} gj_args_t;

typedef struct gj_stats {
  int64_t steps;
  double t_panel, t_update; /* seconds in panel factorization and in column updates (incl. I/O) */
  /* Off a unified executor: the sweep's bytes between the tile stores and the devices (each
   * item in and out), the part of them moved in place ("Direct moves"), the tile-cache bytes
   * pinned for it at the end (then unpinned) and the buffers the executor could not pin. */
  int64_t bytes_swept, bytes_direct, bytes_pinned, pin_refused;
} gj_stats_t;

/* Runs gj_x_run on a->x, or on a host executor over a->ops made for the call (a->x NULL; the
 * host bytes it takes are gj_x_workspace_bytes). */
ooc_status_t gj_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info);

/* ---- Gauss-Jordan on the executor (gj_x.c) -----------------------------------------------------
 * The steps above, written once over exec/exec.h and exec/ring.h (as lu.c), so they run unchanged
 * on the host executor and the CUDA executor. Per step:
 *   - the stripe moves into the device buffer P (n x W, all rows at their global offsets) a tile
 *     column at a time (through the ring's slots and ex_put on the copy-in queue; on a unified
 *     executor taken straight into P), in chunks of `chunk` columns (on a unified executor one
 *     chunk by default: the library's getrf of the whole stripe), and the panel LU of rows
 *     [k0, n) is left-looking by chunks (xpanel.h): each chunk, once its columns are in, takes
 *     the updates of the chunks before it and its getrf, while the host takes the next chunk's
 *     columns; at the end every chunk takes the later chunks' row swaps (LAPACK's layout), so P
 *     holds [A_up; L11\U11; L21] with the pivots LAPACK's getrf picks (argmax);
 *   - each chunk's pivots are checked as soon as the host has them (the test above: the same
 *     info and message as the CPU executor's path, which checks after the whole panel);
 *   - every other tile column streams through the ring (exec/ring.h): taken into a slot on the
 *     caller's thread, put to its device twin on the copy-in queue, then on a compute queue
 *     (round robin when the executor has several) laswp, Z = L11^-1 R in place, C_low -= L21 Z,
 *     C_k = U11^-1 Z in place, C_up -= A_up C_k, and back on the copy-out queue; the slot is put
 *     back to its store when its event has passed (step 4's operations, not the transform
 *     column's product: see above). Unified executors use the slot itself, no twins;
 *   - inversion: the transform on the panel's queue (two trsm above, one below, getri of the
 *     pivot block), then the panel's tile columns go back, last first, through the ring (gets on
 *     the copy-out queue) or straight from P on a unified executor; solve drops the stripe.
 * Queues: with 3 or more, queue 0 copies in, the last copies out, the ones between compute
 * (the first of them also factors); with 2, queue 0 copies, 1 computes; with 1, everything on 0.
 * Not done here, though the CUDA gj executor this replaced (ocu_exec.c, removed in issue 18; it
 * was no faster: docs/PERFORMANCE.md) did them: sending rows [k0, n) of every panel column
 * before the rows above (the LU's columns arrive sooner by the rows above k0), a recursive panel
 * LU (here: chunks of getrf with trsm/gemm between them), and the transform's writeback in chunks
 * as getri finishes them (here: after the transform, column by column).
 * Memory: P (n x W) and, when not unified, K = GJ_X_SLOTS device twins of n x b from ex_alloc;
 * the ring's K staging slots of n x b (ex_host_alloc: pinned on CUDA; 1 on a unified executor,
 * none when one step inverts without sweeping) and small arrays on the host. */
#define GJ_X_CHUNK 4096 /* panel chunk on a device: as lu.h's LU_CHUNK */
#define GJ_X_SLOTS 3    /* ring slots on an executor that is not unified */

/* ---- Several devices (issue 26) ----------------------------------------------------------------
 * gj_args_t.xs / nx: the same steps spread over nx executors (one per device, exset.h) from the
 * one caller thread. The panel: when the executors are not unified (GPUs, the strict host), the
 * stripe's tile columns go to every device's P through the rings (ring_run_multi, a column per
 * device in turn; the devices before the last read it from the store, the last takes it) and
 * every device factors its panel with the same operations (no broadcast of the factored panel:
 * its copies would start only after the whole factorization); the host takes the pivots from
 * the first device and refuses a device whose own getrf picked other rows (devices that do not
 * compute alike). Unified executors (the host) share the first's P, factored there. The sweep:
 * the step's other tile columns go round robin over the devices' rings (ring.h,
 * ring_run_multi), each device updating its columns from its own copy of the panel. Inversion:
 * the transform on the first device, its columns back through the first device's ring. Every
 * column gets the same operations on the same data whichever device runs it, so the result is
 * bit-identical to one device's where the devices compute alike (the host executors do:
 * tests/test_mgpu.c). */

/* ---- Direct moves (gj_args_t.direct; NOT the default: no faster on one GPU or two) -------------
 * The sweep's items are tile columns of n rows (1 GiB at n = 65536, tile 2048) that the slot
 * path gathers into a pinned ring slot on the caller's thread (a memcpy at ~25-32 GB/s), DMAs to
 * the device, and copies back and scatters into the cache: on two H100s the sweep waited for the
 * host. With direct on (off a unified executor: GPUs, the strict host), a sweep item whose tiles
 * are all in the tile cache is lent in place instead (tstore.h ts_lend, TS_LEND_UPDATE: the
 * tiles stay cached, dirty), each tile goes to its rows of the device twin D by one ex_put with
 * its own leading dimension, the update runs as on the slot path, each tile comes back by one
 * ex_get, and the ring's retire returns them (xdirect.h, shared with lu.c's "Direct moves"). An
 * item with a spilled or source-backed tile (the first step reads the input) goes through the
 * slot as before; so do the panel's columns in (pin_take: every device reads the column) and
 * the transform's columns out. With several devices each item still belongs to the one device
 * ring_run_multi gives it. The cache pins a buffer through the first executor the first time it
 * is lent (ex_host_register; cudaHostRegisterPortable, so every device's DMA may use it), unless
 * the caller already set a pinner (the job or the bench pinned the tiles as the load filled
 * them: tcache_pin_new), which the run keeps; what the run pinned is unpinned at its end
 * (stats: bytes_pinned, pin_refused). Lent tiles stay charged to the cache and at most half of
 * it is lent: an item that would exceed that takes the slot. Arithmetic is unchanged: results
 * are bit-identical to the slot path (tests/test_mgpu.c t_gj_direct, one and two strict
 * devices, in core and spilling, invert and solve). stats->bytes_swept counts the sweep's bytes
 * in and out, bytes_direct the part moved in place.
 * Off by default (the pipeline sets it with OOCSOLVE_SWEEP_DIRECT=1, api/job_int.h): on one GPU
 * it is no faster. Measured (H100, one call, alternately, GJ_DIRECT=0/2 bench_cuda gj 49152 1024
 * 12G 3, the cache pinned as the preload filled it): compute 6.947, 6.597 s on the slot path
 * against 6.599, 6.639 s direct, all 36.0 GiB of the sweep moved in place, the same probe
 * residual (4.48e-5); the unpin of the 18 GiB cache took 0.7 s more. One GPU's sweep at this
 * size waits for the device, not the host (panel 3.1 s, update 3.4 s). On two H200s (32-core
 * host, the CLI, n = 65536 f32, --gpu-mem 16G) neither: 12.11 s by the slot path, 15.30 s
 * direct with the same device busy seconds, the difference the 32 GiB pinned as first lent. */

/* Host bytes gj_x allocates outside the tile cache with a host executor over the ops table that
 * the caller makes for it with gj_x_host_exec (unified, one queue; the executor's own bytes and
 * P included). */
int64_t gj_x_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m);

/* The host executor the pipeline gives gj_x on the CPU: one queue (unified: no copies), its
 * device budget exactly P. */
ooc_status_t gj_x_host_exec(ooc_ctx_t *ctx, const ooc_ops_t *ops, int64_t n, int64_t b, int64_t W,
                            ooc_exec_t **out);
/* Its device budget: P at the padded leading dimension (gj_x_host_exec's; the pipeline's host
 * devices for gj get it each, exset.h: budgets are per device). */
int64_t gj_x_host_budget(int64_t n, int64_t b, int64_t W);

/* The same for gj_x spread over nd devices (issue 26, "Several devices" above): on unified host
 * executors one P that all share, and per device its ring slot, its executor (ex_host_bytes(1))
 * and headers (the caller makes the devices beyond the first with ex_host_create, one queue,
 * budget 0: they allocate no device memory); on executors that are not unified each device's
 * ring and pivots. gj_x_host_bytes_nd: the host bytes gj_x allocates with executors that are not
 * unified (CUDA): each device's ring of K pinned slots, and the small arrays. */
int64_t gj_x_workspace_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd);
int64_t gj_x_host_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd);

/* The widest stripe (whole tiles, <= Wmax) whose device buffers (P and the K twins) fit ex's
 * budget beside what getrf and getri take for themselves; 0 when not even one tile column does. */
int64_t gj_x_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int64_t Wmax);

/* The pivot test of gj.h step 2 on columns [k0, k0 + w): OOC_ERR_SINGULAR
 * and *info = column + 1 for the first |u_jj| <= eps ||A[:, j]||_1 (or NaN). */
ooc_status_t gj_check_pivots(ooc_ctx_t *ctx, int64_t k0, int64_t w, const double *udiag,
                             const double *colnorm, int64_t *info);
/* The tile columns step `step` (tile columns [kt0, kt1)) updates, into t (A's others, or for a
 * solve A's right of the stripe and all of B's): in an order that alternates between steps, so
 * the tiles touched last are taken first while the cache still holds them. Step 0 goes right to
 * left (a load's LRU order leaves A's last columns cached), or left to right where A arrives as
 * it is needed (a->need). Returns their count. */
int64_t gj_targets(const gj_args_t *a, int64_t step, int64_t kt0, int64_t kt1, gj_target_t *t);
/* perm from the pivots: the row interchanges undone as column interchanges, last first. */
void gj_perm(int64_t n, const int64_t *ipiv, int64_t *perm);
/* gj_run with a->x set (the executor given). */
ooc_status_t gj_x_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info);

#endif
