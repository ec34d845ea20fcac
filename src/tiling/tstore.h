/*
 * tstore.h: tiled matrices that live in a byte-budgeted host cache and spill to a scratch store.
 *
 * A tile store is a rows x cols float64 matrix cut into tiles of b x b (edge tiles smaller),
 * each tile stored column-major and contiguous. A tile is, at any moment, in exactly one place:
 *   SOURCE  never touched: its content is the source's (an input file, a generator) or zero
 *   CACHED  in the host cache (memory charged to the cache's budget)
 *   SPILLED in the scratch store (written when the cache evicted it)
 *   TAKEN   checked out by the caller (ts_take) until it is put back (ts_put)
 * Several stores share one cache, so [A | B] or A and its inverse share one budget.
 *
 * Contract
 * - The cache never holds more than its capacity: ts_put evicts least-recently-used tiles to their
 *   store's scratch first, and writes straight to scratch a tile that cannot fit at all.
 *   A store without scratch (NULL, or a scratch opener that fails) cannot spill: OOC_ERR_BUDGET.
 * - Scratch is opened lazily, on the first spill, through the opener given at creation, so a run
 *   that fits in memory creates no scratch file.
 * - ts_take/ts_read copy a tile into a caller buffer with any leading dimension; ts_put copies
 *   one in. ts_take forgets the tile (its memory returns to the cache budget). ts_drop forgets a
 *   tile whose content is no longer needed (it then reads as zero).
 * - Tile indices and element offsets are 64-bit: part_start(p, k) = k*b never overflows for any
 *   matrix that fits in an int64 element count.
 *
 * Speed (the stores stream 16 n^2 bytes per Gauss-Jordan step, so this is the host's hot path)
 * - Tile buffers are recycled: a taken or dropped tile's buffer goes to the cache's free pool and
 *   the next put of a tile of the same size reuses it (no free/malloc per take/put, so no page
 *   faults and no fresh mmap for large tiles). Pooled buffers stay charged to the budget:
 *   used + pooled <= capacity always; a put that needs room frees pooled buffers before it
 *   evicts (spills) any cached tile. tcache_used counts cached tiles only.
 * - Copies of whole tile columns (ts_take_col / ts_put_col), of blocks of tiles (ts_*_tiles) and
 *   of large single tiles are split over threads of the process's pool (base/parloop.h: a
 *   background loop started when the copies are queued and joined, with the caller's help, when
 *   they must be done), at most tcache_set_threads at once (default: the online CPUs, at most
 *   16); copies under 4 MiB stay on the calling thread. A copy of 4 MiB or more writes its
 *   destination with streaming stores (no read of each destination line first: tstore.c says
 *   why). Source reads stay on the calling thread (one at a time, in order), overlapping the
 *   threads' copies of cached tiles of the same block.
 * - Scratch transfers go side by side on the copy threads where the spill ops are concurrent
 *   (issue 27: one at a time on the caller they moved ~3.8 GB/s on an H200 host, and were most
 *   of what a run at half the host memory lost): a block's spilled tiles are read straight into
 *   the caller's buffer (the scatter is the read's: no staging tile) while the caller reads the
 *   source tiles; and a batch of puts first makes room for all its new tiles at once
 *   (make_room: the least-recently-used tiles that the puts would evict one by one), writing
 *   the victims to scratch together and keeping their buffers for the puts (side by side they
 *   read 11-24 GB/s there and, once the pipeline's files were spread by tile row and column,
 *   wrote 10-16 GB/s: docs/PERFORMANCE.md, twentieth and twenty-first sessions; a victim batch
 *   is often one tile column, so spill ops over several files must not put a column in one).
 *   A failed write leaves its tile cached and the batch's first error is returned. The API
 *   itself is single-threaded: one thread calls a cache and its stores at a time.
 */
#ifndef OOC_TSTORE_H
#define OOC_TSTORE_H

#include "base/base.h"
#include "base/parloop.h"

/* A 1-D partition of [0, n) into tiles of b (the last one shorter when b does not divide n). */
typedef struct part {
  int64_t n, b, count;
} part_t;

static inline part_t part_make(int64_t n, int64_t b) {
  part_t p = {n, b, b > 0 ? (n + b - 1) / b : 0};
  return p;
}
static inline int64_t part_start(part_t p, int64_t k) { return k * p.b; }
static inline int64_t part_len(part_t p, int64_t k) {
  int64_t r = p.n - k * p.b;
  return r < p.b ? r : p.b;
}
static inline int64_t part_index(part_t p, int64_t i) { return i / p.b; }

/* Read-only content provider: read fills the nr x nc block at (r0, c0), column-major, leading
 * dim ld. read_t (optional, NULL where the provider has none) fills the block's transpose
 * instead (nc x nr, ld >= nc): where the data is stored row-major (an HDF5 file) that read
 * costs no transposition, and a reader whose arithmetic can take either layout (the checks'
 * passes, check.c) asks for it. rows (optional, NULL where none) streams every row through fn
 * in `groups` ranges, each on one thread, windows of about win_bytes (h5mat.h h5m_stream_rows,
 * whose contract it is); *streamed = 0 where it cannot (the caller reads rectangles). */
typedef void (*ooc_rows_fn)(void *user, int g, int64_t r0, int64_t nr, const double *rows,
                            int64_t ld);
typedef struct ooc_source {
  void *self;
  ooc_status_t (*read)(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                       int64_t ld);
  ooc_status_t (*read_t)(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                         int64_t ld);
  ooc_status_t (*rows)(void *self, int64_t groups, int64_t win_bytes, ooc_rows_fn fn,
                       void *user, int *streamed);
} ooc_source_t;

/* Opens the scratch file on first need (see scratch.h); the tiling layer does not know files.
 * get fills ncols columns of col_bytes, column c at data + c * stride (a tile into a buffer with
 * a larger leading dimension: stride = ld * 8; contiguous: ncols 1). concurrent: puts and gets
 * of distinct ids may run on several threads at once (the copy threads'), as the scratch store's
 * uncompressed ones do; 0 keeps them on the calling thread, one at a time. */
typedef struct ooc_spill_ops {
  void *self;
  ooc_status_t (*open)(void *self, size_t slot_bytes, void **handle);
  ooc_status_t (*put)(void *handle, int64_t id, const void *data, size_t bytes);
  ooc_status_t (*get)(void *handle, int64_t id, void *data, size_t col_bytes, size_t ncols,
                      size_t stride);
  int concurrent;
} ooc_spill_ops_t;

typedef struct tcache tcache_t;
typedef struct tstore tstore_t;

typedef struct ts_stats {
  int64_t hits, misses;          /* takes/reads served from cache vs elsewhere */
  int64_t bytes_source;          /* read from the source */
  int64_t bytes_spilled, bytes_unspilled;
  int64_t spills;                /* tiles written to scratch */
  int64_t bytes_dropped, drops;  /* clean tiles evicted back to their source (ts_set_backing):
                                    bytes not written to scratch, and tiles */
  double t_source, t_spill;      /* seconds in source reads, in scratch writes + reads */
  double t_spill_write;          /* the part of t_spill that wrote */
  int64_t bytes_spilled_alone,   /* moved one tile at a time on the calling thread: evictions */
      bytes_unspilled_alone;     /* one by one (entry_get), write-through, single-tile reads */
} ts_stats_t;

ooc_status_t tcache_create(ooc_ctx_t *ctx, int64_t capacity_bytes, tcache_t **out);
int64_t tcache_capacity(const tcache_t *c);
int64_t tcache_used(const tcache_t *c);   /* bytes of cached tiles (headers included) */
int64_t tcache_pooled(const tcache_t *c); /* bytes of recycled buffers waiting for reuse */
int64_t tcache_lent(const tcache_t *c);   /* bytes of tiles lent now (ts_lend): 0 between runs */
int64_t tcache_peak(const tcache_t *c);   /* peak of used + pooled: never above the capacity */
/* Copy threads at once, the caller's help included (1 = copy on the calling thread only; <= 0 =
 * default; at most OOC_PAR_MAX_THREADS). Takes effect at the next copy; the pool's threads are
 * started lazily, on the first loop that has work for them. */
void tcache_set_threads(tcache_t *c, int threads);
int tcache_threads(const tcache_t *c);
void tcache_trim(tcache_t *c);    /* free the pooled buffers */
void tcache_destroy(tcache_t *c); /* stores must be destroyed first */

/* Bytes of the per-tile bookkeeping and staging buffer a store allocates outside the cache. */
int64_t tstore_overhead_bytes(int64_t rows, int64_t cols, int64_t b);
/* What the cache charges a cached tile besides its data (its entry): a cache that holds k
 * tiles of d data bytes in all holds d + k tcache_entry_bytes(). */
int64_t tcache_entry_bytes(void);

/* The stripe a method runs for a requested width: n when want >= n (one step, whether or not b
 * divides n), else whole tile columns, at least one. The planner (src/api/plan.c) reports this
 * value and sizes the workspace for it, and every striped method (gj, chol) runs exactly it: one
 * function, so the plan and the run cannot disagree. */
int64_t ts_stripe(int64_t n, int64_t b, int64_t want);

/* The narrowest stripe (a multiple of b, at most W) that covers n in as many steps as W does:
 * the steps then carry equal work. Every sweep step streams the whole matrix (or its lower
 * triangle) whatever its width, so a narrow last step (n = 65536, W = 20480: 20480 x 3 + 4096)
 * pays a full pass of copies for a fifth of a step's flops; and a step's pivot work
 * (2 (n-w) w^2 + w^3) falls as w narrows, at no extra pass. W >= n is returned unchanged.
 * (Cholesky's plans, and the GPU stripes of LU and gj on the executor.) */
int64_t ts_even_stripe(int64_t n, int64_t b, int64_t W);

ooc_status_t tstore_create(ooc_ctx_t *ctx, tcache_t *cache, int64_t rows, int64_t cols, int64_t b,
                           const ooc_source_t *source, const ooc_spill_ops_t *spill,
                           tstore_t **out);
void tstore_destroy(tstore_t *ts);

part_t ts_rows(const tstore_t *ts);
part_t ts_cols(const tstore_t *ts);
const ts_stats_t *ts_stats(const tstore_t *ts);

ooc_status_t ts_take(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld);
ooc_status_t ts_read(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld);
ooc_status_t ts_put(tstore_t *ts, int64_t ti, int64_t tj, const double *src, int64_t ld);
void ts_drop(tstore_t *ts, int64_t ti, int64_t tj);

/* Whole tile columns: take/put/read every row tile of tile column tj into/from a buffer of
 * rows x len(tj) with leading dimension ld. */
ooc_status_t ts_take_col(tstore_t *ts, int64_t tj, double *dst, int64_t ld);
ooc_status_t ts_put_col(tstore_t *ts, int64_t tj, const double *src, int64_t ld);
/* Blocks of tiles: read/take/put tiles [t0, t1) x [u0, u1) from/into a buffer whose element
 * (0, 0) is the first element of tile (t0, u0), leading dimension ld. Like the column calls, one
 * batch: the cached tiles of the whole block are copied by the threads together (also when each
 * tile is under the 4 MiB threshold), and the spilled ones are read straight into the buffer
 * (on the threads too where the spill ops are concurrent), while this thread reads the source's.
 * The out-of-core product gathers its panels with these. */
ooc_status_t ts_read_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                           double *dst, int64_t ld);
ooc_status_t ts_take_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                           double *dst, int64_t ld);
ooc_status_t ts_put_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                          const double *src, int64_t ld);
/* Any rectangle [r0, r0 + nr) x [c0, c0 + nc), tile edges or not, into dst (leading dimension
 * ld >= nr), read as ts_read_tiles reads a block, each tile it meets once and only the part it
 * needs: a cached tile's part is copied (by the threads, one batch for the rectangle), a source
 * tile's part read from the source; a spilled tile is read whole from scratch into the staging
 * tile (scratch slots are whole tiles) and its part copied. Outside the store: OOC_ERR_INTERNAL.
 * A reader at any offset (rbt's transform reads blocks that straddle the tiles: reading whole
 * tiles for each of them cost up to 4x the bytes). */
ooc_status_t ts_read_rect(tstore_t *ts, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                          double *dst, int64_t ld);

/* Row interchanges in place: for k = k1 .. k2-1 swap rows k and ipiv[k] (global 0-based rows,
 * ipiv[k] >= k, both inside tile rows [t0, t1); LAPACK's forward laswp) in tile column tj,
 * where its tiles lie in the cache: no copy out and back (a gather, the swaps and a scatter
 * cross host memory about three times as often). Only when every tile of the range is cached:
 * then *done = 1; otherwise nothing changes and *done = 0, and the caller moves the tiles itself
 * (take, swap, put). Columns are swapped side by side on the cache's copy-thread count.
 * OOC_ERR_INTERNAL for a range or a pivot outside the store or the tile rows. */
ooc_status_t ts_swap_rows(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int64_t k1, int64_t k2,
                          const int64_t *ipiv, int *done);

/* A store whose tile columns keep part of their rows in another order (LU's factor with its
 * final row swaps left to the writer, lu.h LU_SWAPS_WRITER): row i >= from[tj] of tile column
 * tj (its place in the result) is the store's row rows[off[tj] + i - from[tj]]; from[tj] >= the
 * rows' count: none. Columns with the same from may share their map (the same off). */
typedef struct ts_rowmap {
  int64_t nt;     /* tile columns */
  int64_t *from;  /* nt */
  int64_t *off;   /* nt */
  int64_t *rows;  /* the maps */
  int64_t nrows;  /* entries in rows */
} ts_rowmap_t;
void ts_rowmap_free(ooc_ctx_t *ctx, ts_rowmap_t *m); /* (leaves it empty; NULL or empty: nothing) */
/* Host bytes a map holds (its three arrays). */
int64_t ts_rowmap_bytes(const ts_rowmap_t *m);
/* 1 when every tile of the store is cached (none spilled, dropped or its source's): what
 * ts_permute_start needs, for a caller to decide before it leaves rows where they are. */
int ts_all_cached(const tstore_t *ts);

/* The map's rows moved into place, in the background: ts_permute_start queues, on the cache's
 * copy threads (ooc_par_start), each column of each tile column with from < n: its rows
 * [from, n) gathered in the map's order into a worker's buffer, then stored back. A column's
 * rows below from lie in (n - from) / b + 1 tiles, about 8 (n - from) bytes that stay in the
 * core's cache, so each line is read and written about once (a gather straight into the
 * writer's row blocks reads a line per element: by reckoning, not measured, ~36 GB of line
 * traffic for the 4.5 GB LU's factor moves at n = 40000). Once ts_permute_join returns, the store holds the
 * result's order and the map is no longer needed. Meanwhile (p->first: the smallest from) the
 * caller may read tiles of rows < p->first only, and must not put, take, drop, evict or lend
 * anything of the store: the threads write the tiles below from by pointer. Fails (nothing
 * started, OOC_ERR_INTERNAL) where a tile the map moves is not cached, OOC_ERR_NOMEM without
 * the workers' buffers (8 (n - p->first) bytes per copy thread). An empty map: nothing to do,
 * p->first = n. join: exactly once after a successful start (and harmless without one). */
typedef struct ts_permute {
  ooc_par_group_t g;
  int running;
  int64_t first;       /* rows [0, first) are final already */
  ooc_ctx_t *ctx;
  const ts_rowmap_t *m;
  int64_t n, b, nmt, mmax;    /* nmt: the moved tile columns; mmax: n - first */
  int64_t *cum;        /* columns before each moved tile column (nmt + 1) */
  int64_t *tcol;       /* the moved tile columns */
  double **tile;       /* per moved tile column, its tiles' data from row from / b down */
  int64_t *tld;        /* and their leading dimensions */
  int64_t *tbase;      /* where each moved tile column's tiles start in tile / tld */
  double *scratch;     /* a buffer of mmax per worker */
} ts_permute_t;
ooc_status_t ts_permute_start(tstore_t *ts, const ts_rowmap_t *m, ts_permute_t *p);
/* The host bytes ts_permute_start(ts, m) allocates until its join (0 for an empty map). */
int64_t ts_permute_bytes(const tstore_t *ts, const ts_rowmap_t *m);
void ts_permute_join(ts_permute_t *p);

/* Prefill: first touch of tile buffers ahead of the puts that will need them, so that the page
 * faults of fresh memory (a first product into a new output store) are taken while the caller
 * would otherwise wait (for a device), not while a put copies. A put into a tile that is not
 * cached takes a pooled buffer of its size if there is one; ts_prefill makes there be one.
 * - The tiles of the ranges [t0, t1) x [u0, u1) (the puts to come; tiles in two ranges count
 *   twice) that are not cached need a buffer each; pooled buffers of their sizes count as
 *   already there. For the rest, new buffers are allocated, their pages written once on the
 *   copy threads, and left in the free pool (charged as pooled: used + pooled <= capacity
 *   holds). Only free room is used: no cached tile is evicted, no pooled buffer freed, so a
 *   prefill that does not fit does less, or nothing.
 * - At most max_bytes of new buffers per call (at least one buffer when any is needed, whatever
 *   its size), so a caller can prefill in steps between polls of what it waits for. *made:
 *   bytes of new buffers; 0 means nothing more to do (everything pooled or cached: the warm
 *   case costs a scan of the ranges and the pool) or no room.
 * - Fails only on a range outside the store (OOC_ERR_INTERNAL). Running out of host memory
 *   stops the prefill quietly (nothing recorded): the put that needs the buffer reports it.
 * - Buffers are interchangeable within a size: a put of any tile (of any store of the cache)
 *   may take them, and a put of another size that needs room frees them first, as any pooled
 *   buffer. */
typedef struct ts_range {
  int64_t t0, t1, u0, u1;
} ts_range_t;
ooc_status_t ts_prefill(tstore_t *ts, const ts_range_t *r, int nr, int64_t max_bytes,
                        int64_t *made);
/* The same, the pages written on the copy threads in the background (issue 27: the input's
 * load faults its fresh tile buffers in while it waits for its next HDF5 read, where the puts
 * used to fault them after it): the buffers are allocated here, on the caller, and the copy
 * list is grown first (host memory running out: nothing is done, quietly). Until
 * tcache_prefill_wait(ts's cache) the caller must not use the cache nor any store of it (an
 * operation that queues copies waits for the touching first); what it may do meanwhile is
 * work that touches neither, such as a source's read. tcache_prefill_wait with nothing running
 * returns at once. */
ooc_status_t ts_prefill_start(tstore_t *ts, const ts_range_t *r, int nr, int64_t max_bytes,
                              int64_t *made);
void tcache_prefill_wait(tcache_t *c);

/* Lending (issue 22): a device reads and writes the cache's buffers in place by DMA, so each
 * byte crosses host memory once, where a gather into a staging slot moves it three times (read,
 * write, then the DMA's read) and ran at 23-26 GB/s on a 16-core GPU host.
 * - tcache_set_pin(c, pin, unpin, user): pin(user, p, bytes) makes a buffer DMA-able in place
 *   (the CUDA executor's ex_host_register; nonzero = done), asked once per buffer, the first
 *   time it is lent (a recycled buffer stays pinned); unpin(user, p) runs before a pinned buffer
 *   is freed. Setting a pinner (NULL included) first unpins every buffer the previous one
 *   pinned: set NULL before that pinner goes away; setting the pinner already set changes
 *   nothing. A buffer pin refuses is lent all the same (the device then copies it
 *   synchronously). tcache_pin_stats: bytes pinned now, refusals. tcache_pin_user: the
 *   pinner's user, NULL when there is none.
 * - tcache_pin_new(c, on): every buffer made from now on is pinned once the copy that first
 *   fills it is done (while the loader fills the cache: memory already touched registers at
 *   25-49 GB/s, fresh memory faults in page by page at ~2 GB/s), not the first time it is lent
 *   (on the run's critical path: lu.h "Direct moves"). A buffer lent before that is pinned
 *   when lent. Needs a pinner; setting another pinner turns it off.
 *   on = TCACHE_PIN_LATER: the new buffers are only queued; tcache_pin_start(c) pins the queue
 *   on a pool thread while the caller does something else (the loader: its next HDF5 read),
 *   and tcache_pin_wait(c) waits for it. Between the two the caller must not use the cache or
 *   any of its stores (the job owns the queue and the buffers' pin state). What is still
 *   queued when pin_new goes back to 1 or 0 is pinned at the end of the next batch of copies,
 *   as under on = 1. tcache_pin_new, tcache_set_pin and tcache_destroy wait for a job first.
 * - ts_lend(ts, t0, t1, tj, write, p, &lent): tiles [t0, t1) of tile column tj lent in place,
 *   p[i] = tile t0 + i's buffer (column-major, leading dimension = its rows).
 *   Read (write = TS_LEND_READ, 0): only when every one is cached (else lent = 0, nothing
 *   changes: the caller copies instead); the borrower must not change them.
 *   Write (write = TS_LEND_WRITE, 1): buffers found or made as ts_put makes them (evicting,
 *   spilling; taken or spilled tiles get a new buffer), whose content is undefined until the
 *   borrower writes all of it.
 *   Update (write = TS_LEND_UPDATE, 2): as read (only when every one is cached, the content is
 *   the tiles'), and the borrower may change them (they are dirty from here: a sweep reads a
 *   tile column and writes it back in place).
 *   Either way lent = 0 when the lend would take the cache's lent bytes over half its capacity:
 *   lent tiles stay charged to the cache and are never evicted, so the other half keeps room for
 *   any put. Until returned, any other call on a lent tile fails as on a taken one (ts_drop
 *   leaves it alone).
 * - ts_return(ts, t0, t1, tj, forget): lent tiles back (others in the range are left alone):
 *   cached, most recently used (a write lend's now holding what the borrower wrote), or with
 *   forget as after ts_take (taken; the buffers to the pool, pinned as they were).
 * - ts_cache: the cache a store lives in (the one to give a pinner). */
enum { TS_LEND_READ = 0, TS_LEND_WRITE = 1, TS_LEND_UPDATE = 2 };
void tcache_set_pin(tcache_t *c, int (*pin)(void *user, void *p, size_t bytes),
                    void (*unpin)(void *user, void *p), void *user);
void tcache_pin_stats(const tcache_t *c, int64_t *pinned, int64_t *refused);
void *tcache_pin_user(const tcache_t *c);
#define TCACHE_PIN_LATER 2
void tcache_pin_new(tcache_t *c, int on);
void tcache_pin_start(tcache_t *c);
void tcache_pin_wait(tcache_t *c);
ooc_status_t ts_lend(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int write, double **p,
                     int *lent);
void ts_return(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int forget);
tcache_t *ts_cache(const tstore_t *ts);

/* A source behind the loaded tiles (issue 27: the disk tier writes what it must, not the input
 * again). A store filled by its caller (no source at create) is given one whose content the
 * loader puts:
 * - ts_set_backing(ts, src, name): src reads the same content the loader puts; tiles never put
 *   stay zero (as in a store without source), the others keep their state. name (kept, not
 *   copied; NULL: "the source") is what its errors call it.
 * - ts_set_loading(ts, on): while on (and the store has a source), a put marks its tile clean:
 *   its content is the source's. A clean tile that is evicted is not written to scratch: it
 *   goes back to the source (state SOURCE, ts_stats bytes_dropped/drops) and later reads read
 *   the source; a tile too large for the cache is not written either. Any change to a tile
 *   (a put with loading off, a write lend, ts_swap_rows) makes it dirty again; a take ends it.
 *   The source must stay readable until the store goes; every source read happens on the
 *   thread that calls the store (as scratch reads do). What goes back to the source is
 *   checksummed (XXH3, 8 bytes per tile of the store: ts_set_backing allocates them,
 *   OOC_ERR_NOMEM) and a read of it is checked whole: a source that changed meanwhile fails
 *   the read with OOC_ERR_CORRUPT. Tiles a checkpoint named the source's are not checked after
 *   a restore (the journal's resume checks the input's content instead).
 * - ts_set_loading(ts, TS_LOAD_KEEP): loading as with 1, and a block put (ts_put_tiles,
 *   ts_put_col) evicts nothing: a tile that is not cached and does not fit the cache's free room
 *   goes back to the source at once (checksummed from the caller's buffer, on the copy
 *   threads); and the tiles it puts go to the least-recently-used end of the cache's order, so
 *   that later evictions take the last one kept first. A load that overflows the cache then
 *   keeps its first tiles, and a method that starts at the first columns and puts its own tiles
 *   back as it goes consumes them before it evicts them (with LRU's order the load kept its
 *   last tiles, and those it kept first were the first evicted: at half the host memory LU read
 *   every tile of the input twice; issue 27). ts_put of one tile loads as with 1. */
#define TS_LOAD_KEEP 2
ooc_status_t ts_set_backing(tstore_t *ts, const ooc_source_t *src, const char *name);
void ts_set_loading(tstore_t *ts, int on);
/* 1 when the store's reads and evictions may call its source (created with one, or
 * ts_set_backing): a caller that reads the same file on another thread must not run beside
 * them (HDF5 is not thread-safe). */
int ts_has_source(const tstore_t *ts);

/* Checkpoints (resumable runs, docs/RELIABILITY.md), at a safe point where no tile is checked out.
 * - ts_flush writes every cached tile that is not clean (ts_set_loading) to scratch through the
 *   spill ops (the tile stays cached and is still charged to the cache), so that afterwards
 *   every tile is zero, has its current content in scratch, or is its source's. Costs one
 *   scratch write per such tile, side by side on the copy threads where the spill ops are
 *   concurrent ("Scratch transfers" above). OOC_ERR_INTERNAL if a tile is checked out.
 * - ts_where(ts, idx) with idx = ti * cols.count + tj (the scratch tile id): 0 zero, 1 the
 *   scratch holds its content (after ts_flush), 2 its content is the source's (a source read, a
 *   clean tile), -1 neither (cached and not flushed, checked out).
 * - ts_restore: every tile with where[idx] = 1 is in scratch (state SPILLED; the scratch is opened
 *   through the spill opener, which must reopen the checkpoint's file), 2 its source's (the store
 *   must have the same source: OOC_ERR_INTERNAL without one), every other one is zero. Cached
 *   tiles are forgotten first.
 * - ts_spill_handle: the handle the spill opener returned, NULL before the first spill. */
ooc_status_t ts_flush(tstore_t *ts);
int ts_where(const tstore_t *ts, int64_t idx);
ooc_status_t ts_restore(tstore_t *ts, const uint8_t *where);
void *ts_spill_handle(const tstore_t *ts);

#endif
