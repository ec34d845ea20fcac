/*
 * oocgemm.h: out-of-core matrix product C = alpha A B + beta C on tile stores.
 *
 * A (m x k), B (k x n) and C (m x n) are tile stores with the same tile edge b (shapes need not
 * be multiples of b), any of them larger than the host budget: their tiles live in the shared
 * byte-budgeted cache and spill to scratch (tstore.h). C must be a store distinct from A and B.
 *
 * Schedule: one C block of mb x nb (whole tiles, mb = min(s, m), nb = min(s, n)) stays resident
 * in a workspace buffer while the k dimension streams through it in panels of kb = min(s, k)
 * columns of A (mb x kb, one ts_read_tiles: the cache's copy threads gather the panel) and kb
 * rows of B (kb x nb):
 *     for each C block (I, J), block rows outer, block columns inner:
 *       C_IJ = beta C_IJ (read only when beta != 0; ts_take_tiles, so its cache memory is free
 *                         meanwhile)
 *       for each k panel (direction alternating between consecutive blocks):
 *         C_IJ += alpha A_IK B_KJ          (one ops->gemm on the panels: the flops)
 *       epilogue(C_IJ), then ts_put_tiles of its tiles (with two C buffers: interleaved with
 *       the next block's panels, see the executor below; the same bytes move)
 * With an executor, the schedule's ends (GEMM_END_FIRST/LAST below) cut the first block's first
 * panels into pieces and the last block's last panel into column groups; gemm_model.h replays
 * this order to predict its time.
 * Inputs are only read (ts_read): a spilled A or B tile costs one scratch read, never a rewrite;
 * C tiles are written exactly once.
 *
 * I/O per flop (DESIGN.md section 5). Per k panel the block reads 8 (mb kb + kb nb) bytes and does
 * 2 mb nb kb flops: mb nb / (4 (mb + nb)) flop per byte, s/8 for square blocks, the same w/8 as a
 * Gauss-Jordan stripe of width w. In all, A is read ceil(n/s) times and B ceil(m/s) times:
 *     bytes = 8 (m k ceil(n/s) + k n ceil(m/s) + m n (1 + [beta != 0])).
 * With M = 3 s^2 words of workspace this is 2 sqrt(3) m n k / sqrt(M) words plus the compulsory
 * traffic, within a small constant of the Hong-Kung lower bound (~2 m n k / sqrt(M)) for any
 * schedule that keeps M words in fast memory. Reversing the k order between consecutive blocks
 * makes the panels read last (still in the LRU cache) the first ones read again.
 * Why not a k-outer (outer-product) order: it would read and rewrite C once per k panel.
 *
 * Epilogue: an optional callback on each finished C block before it is stored: the iterative
 * inversion uses it to take ||I - A V||_1 and to form 2I - A V or X Q + c I without another pass.
 * It runs on the host. Without an executor it sees each C block whole; with one it may see a
 * block as several slices of whole tile columns (rows of the block, columns [c0, c0 + nc)) as
 * they come back from the device. Either way every element of C exactly once, tile-aligned.
 *
 * Memory: gemm_workspace_bytes() host bytes outside the tile cache (ooc_malloc): the C block and
 * the two panels. The cache must hold at least a tile per store in flight (any capacity works:
 * tiles that cannot be cached go to scratch).
 */
#ifndef OOC_OOCGEMM_H
#define OOC_OOCGEMM_H

#include "exec/exec.h"
#include "kernels/ops.h"
#include "tiling/tstore.h"

/* Called on each C block or slice of one (rows [r0, r0+nr), columns [c0, c0+nc), column-major,
 * leading dimension ld) after its product is complete and before it is stored. May modify it. */
typedef ooc_status_t (*gemm_epilogue_fn)(void *user, int64_t r0, int64_t c0, int64_t nr,
                                         int64_t nc, double *blk, int64_t ld);

/* The executor (src/exec/exec.h): where the panel products run, written once for every device.
 * The C block stays resident in a device buffer; each panel goes from one of `nslots` staging
 * buffer pairs to the device on a copy queue and is multiplied into the block on a compute queue,
 * so gathering panel q+1 from the tile store overlaps the copy and product of panel q; the block
 * comes back on a third queue in column chunks, each stored as it lands. With ncblk = 2 C
 * buffers, block i+1's panels are multiplied while block i is copied back, finished (epilogue)
 * and stored, a slice of tile columns after each of block i+1's panels; with ncblk = 1 block i is
 * stored before block i+1 starts. While a slot is still in use, the host touches C's new tile
 * buffers ahead of their puts (ts_prefill): the page faults of a first product into a fresh store
 * move into time the host would spend waiting. Without an executor (args->exec NULL) gemm_run
 * makes a host executor over args->ops for the call: unified memory, so the panels are
 * multiplied where the host gathered them, one slot and one C buffer (the host workspace below),
 * and the ends (next) are off: they hide copies a host does not make.
 * Device bytes: gemm_exec_bytes (gemm_model.h) for the block and panel shapes, as many staging
 * bytes (pinned on a GPU). */
#define GEMM_MAX_SLOTS 4
#define GEMM_MAX_CBLK 2
#define GEMM_MAX_PIECES 8 /* the first panel's pieces, the last panel's column groups */

/* Several devices (issue 26): with gemm_args_t.devs / ndev > 1 the C blocks go round robin over
 * the devices' buffers (each made by gemm_dev_create on its own executor, of one kind and
 * shape), driven from the caller's thread: each round every device begins a block, the panels
 * of the round's blocks go out interleaved (one device multiplies while the host gathers for
 * the next), and each block is stored in shares between the next round's panels. The ends are
 * not used. Every block gets the same operations on the same panels in the same order as with
 * one device: C is bit-identical to one device's on the host kernels (tests/test_mgpu.c). The
 * epilogue sees the blocks in another order (each block still whole or in column slices). */

/* The product's buffers on an executor, made once for many products (the iterations' several
 * hundred): ncblk C buffers of MB x NB, nslots panel pairs (MB x KB, KB x NB), each a device
 * buffer (ex_alloc: gemm_exec_bytes in all) and a staging buffer (ex_host_alloc: as many bytes,
 * pinned on a GPU; a unified executor uses the staging buffers only), and their events. Its
 * MB, NB, KB bound the block and the panels of every product run on it. destroy waits for the
 * executor first (the first failure it reports is returned). */
typedef struct gemm_dev gemm_dev_t;
ooc_status_t gemm_dev_create(ooc_exec_t *e, int64_t MB, int64_t NB, int64_t KB, int nslots,
                             int ncblk, gemm_dev_t **out);
ooc_status_t gemm_dev_destroy(gemm_dev_t *d); /* NULL is fine */

/* The schedule's ends on a device executor (gemm_args_t.ends_off turns them off, to measure what
 * they save):
 * GEMM_END_FIRST: the first block's first panels (max(1, nslots - 1) of them: those gathered
 *   before the pipeline has a panel in hand) are gathered and uploaded in up to GEMM_MAX_PIECES
 *   pieces (a group of A's tile rows and one of B's tile columns each), and the first panel is
 *   multiplied piece by piece as the pieces arrive: piece p multiplies its rows against the
 *   columns of pieces 0..p and the rows of pieces 0..p-1 against its columns, so every element
 *   of C is multiplied once. The device starts after a piece instead of a whole panel's gather
 *   and copy.
 * GEMM_END_LAST: a block whose copy back and store no later block's products overlap (the last
 *   block; with one C buffer, every block) multiplies its last panel in up to GEMM_MAX_PIECES
 *   groups of tile columns, each copied back as soon as its product is queued, and is stored
 *   tile column by tile column: the copy back and store of the first columns overlap the
 *   products of the last ones.
 * Parts of a product give the same sums per element as the whole one on the host kernels; on a
 * device the library may pick other kernels for the smaller shapes (rounding within the same
 * error bound, as for any change of block). */
#define GEMM_END_FIRST 1
#define GEMM_END_LAST 2

/* Pieces of the first panel for a block of ti x ui tiles; column groups of the last panel for ui
 * tile columns; the tile offset of boundary p of `pieces` over cnt tiles: an even split, or with
 * fewer tiles than pieces one tile a piece (the later pieces are then empty on that side). The
 * cost model (gemm_model.h) replays the same cuts. */
static inline int gemm_first_pieces(int64_t ti, int64_t ui) {
  int64_t p = ti > ui ? ti : ui;
  return (int)(p < GEMM_MAX_PIECES ? p : GEMM_MAX_PIECES);
}
static inline int gemm_last_groups(int64_t ui) {
  return (int)(ui < GEMM_MAX_PIECES ? ui : GEMM_MAX_PIECES);
}
static inline int64_t gemm_piece(int64_t cnt, int pieces, int p) {
  return cnt >= pieces ? p * cnt / pieces : (p < cnt ? p : cnt);
}
/* How many of the first block's panels go up in pieces with `nslots` slots: those gathered
 * before the pipeline holds a panel ahead (the first's and, with three slots, the second's copy
 * would otherwise wait for their whole gather while the device has nothing to do). */
static inline int64_t gemm_first_panels(int nslots) { return nslots > 2 ? nslots - 1 : 1; }

typedef struct gemm_args {
  tstore_t *A, *B, *C;
  double alpha, beta;        /* beta == 0: C is output only (its old content is never read) */
  const ooc_ops_t *ops;
  int64_t block;             /* s: block edge, rounded down to a multiple of the tile (>= b) */
  gemm_epilogue_fn epilogue; /* may be NULL */
  void *user;
  const char *phase;         /* progress phase name (NULL = "multiply") */
  double progress0, progress1; /* progress fraction range of this product (0, 0 = 0..1) */
  int64_t kblock;            /* k panel width (multiple of the tile; 0 = block) */
  gemm_dev_t *dev;           /* the buffers on an executor (gemm_dev_create); NULL: a host
                              * executor over ops with one slot and one C buffer, for the call */
  gemm_dev_t *const *devs;   /* ndev > 1: the buffers on each of ndev executors, one per device
                              * (devs[0] == dev; issue 26, "Several devices" above) */
  int ndev;
  int ends_off;              /* GEMM_END_* bits: schedule those ends as plain panels (A/B) */
  int epilogue_threads;      /* > 1: the epilogue may run concurrently on disjoint column ranges
                              * of a block (not tile-aligned then): up to this many threads split
                              * each large block or slice (it is a single pass over C in memory,
                              * which one thread makes the bound of a GPU product) */
} gemm_args_t;

typedef struct gemm_stats {
  int64_t blocks;            /* C blocks computed */
  double t_gemm;             /* seconds in ops->gemm */
  double t_io;               /* seconds moving tiles between stores and the workspace */
  double t_epilogue;         /* seconds in the epilogue */
  double t_prefill;          /* seconds touching C's new tile buffers while the device was busy
                              * (part of t_gemm: the wait they used) */
  int64_t bytes_prefill;     /* bytes of those buffers */
  double flops;              /* 2 m n k */
  /* What the schedule did (tests check them against what it should have done): panels
   * multiplied; first panels gathered and uploaded in pieces (GEMM_END_FIRST); panels multiplied
   * in more than one part (the first by pieces, or the last by column groups); blocks whose
   * columns went back in groups before the block's end (GEMM_END_LAST); waits for columns of a
   * C block to come back (one per slice stored). */
  int64_t panels, piece_panels, split_panels, col_ended, fetches;
} gemm_stats_t;

/* The block edge actually used for shape (m, n, k), tile b and requested s. */
int64_t gemm_block(int64_t b, int64_t s);
/* Host bytes gemm_run allocates outside the tile cache without an executor (its host executor
 * included). */
int64_t gemm_workspace_bytes(int64_t m, int64_t n, int64_t k, int64_t b, int64_t s);
/* Largest block edge s (multiple of b, at most max(m, n, k) rounded up) whose workspace fits in
 * mem bytes; 0 if not even s = b fits. */
int64_t gemm_block_for(int64_t m, int64_t n, int64_t k, int64_t b, int64_t mem);

/* The buffers of an m x n x k product with tile b on an executor that is not unified (CUDA),
 * asked of the one the run will use (or one made as it will be): gemm_model_plan (gemm_model.h)
 * with the GPU hosts' rates over ex->budget (less room for the buffers' rounding) and, if
 * host_max > 0, host_max staging bytes: panels of one tile (kb = b); one or two C buffers, two or
 * three slots, and a square block s (multiple of b): the largest that fits or an even split of the
 * shape into as many or a few more blocks, whichever the model says is fastest. OOC_ERR_BUDGET
 * (naming --gpu-mem or --host-mem) if not even s = b fits. */
ooc_status_t gemm_device_plan(ooc_ctx_t *ctx, ooc_exec_t *ex, int64_t m, int64_t n, int64_t k,
                              int64_t b, int64_t host_max, int64_t *s, int64_t *kb, int *nslots,
                              int *ncblk);

/* C = alpha A B + beta C. stats may be NULL (else accumulated into). */
ooc_status_t gemm_run(ooc_ctx_t *ctx, const gemm_args_t *a, gemm_stats_t *stats);

/* Probe check of a product as written, streaming the sources (O((m + n + k) max(m, k)) work per
 * probe, never a second product): with OOC_CHECK_PROBES random +-1 vectors t,
 *     ratio = max_t ||C t - alpha A (B t) - beta C0 t||_1
 *             / (max(k, 1) eps (|alpha| ||A||_1 ||B||_1 + |beta| ||C0||_1) ||t||_1)
 * which is <= about 1 for any correctly rounded product (|fl(AB) - AB| <= gamma_k |A||B|, and
 * the rounding of C to its stored type adds eps |C|). C0 may be NULL (beta ignored). NaN or Inf
 * gives NaN. Host buffers within about `mem` bytes. */
ooc_status_t gemm_check(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t m, int64_t n, int64_t k,
                        const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *C0,
                        const ooc_source_t *C, double alpha, double beta, double eps, int64_t mem,
                        double *ratio);

#endif
