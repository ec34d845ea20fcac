/* test_tiling.c: tile arithmetic (64-bit), the tile cache's budget, LRU order and spilling. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "solvers/readahead.h"
#include "tiling/tstore.h"

/* ---- 64-bit tile arithmetic without allocating the matrix -------------------------------- */

static void t_part_large(void) {
  /* n = 46,341: n^2 = 2,147,488,281 > 2^31, where 32-bit index arithmetic overflows. */
  int64_t n = 46341, b = 4096;
  part_t p = part_make(n, b);
  CU_ASSERT_EQUAL(p.count, 12);
  CU_ASSERT_EQUAL(part_start(p, 11), 45056);
  CU_ASSERT_EQUAL(part_len(p, 11), 46341 - 45056);
  CU_ASSERT_EQUAL(part_index(p, n - 1), 11);
  int64_t elems = n * n; /* the element offset of the last entry, column-major */
  CU_ASSERT_EQUAL(elems, 2147488281LL);
  CU_ASSERT_EQUAL((part_start(p, 11) + part_len(p, 11) - 1) + (n - 1) * n, elems - 1);

  n = 100000;
  p = part_make(n, b);
  CU_ASSERT_EQUAL(p.count, 25);
  CU_ASSERT_EQUAL(part_len(p, 24), 100000 - 24 * 4096);
  /* hyperslab offset of tile (24, 24): row-major element offset in the file */
  int64_t off = part_start(p, 24) * n + part_start(p, 24);
  CU_ASSERT_EQUAL(off, 98304LL * 100000LL + 98304LL);
  CU_ASSERT(off > INT32_MAX);
  /* bytes of the matrix and of a stripe of 3 tile columns */
  CU_ASSERT_EQUAL(8 * n * n, 80000000000LL);
  CU_ASSERT_EQUAL(8 * n * 3 * b, 9830400000LL);
  /* tile = 1 and tile = n */
  CU_ASSERT_EQUAL(part_make(n, 1).count, n);
  CU_ASSERT_EQUAL(part_make(n, n).count, 1);
  CU_ASSERT_EQUAL(part_len(part_make(n, n), 0), n);
  /* bookkeeping of a 100k store with tile 4096 is small: tiles x 9 bytes + one staging tile +
   * the copy and scratch transfer lists for a column (25 tiles: under 8 KiB) */
  CU_ASSERT(tstore_overhead_bytes(n, n, b) < 8 * b * b + 8192 + 625 * 9);
}

/* ---- a spill backend in memory, counting what goes through it ----------------------------- */

typedef struct {
  double *slots[4096];
  size_t bytes[4096];
  int opened;
  _Atomic int puts, gets; /* (concurrent ops: from the copy threads) */
  int fail_put;           /* > 0: that put (1-based) fails with OOC_ERR_IO, nothing stored */
  ooc_ctx_t *ctx;
} memspill_t;

static ooc_status_t ms_open(void *self, size_t slot_bytes, void **h) {
  (void)slot_bytes;
  memspill_t *m = self;
  m->opened++;
  *h = m;
  return OOC_OK;
}
static ooc_status_t ms_put(void *h, int64_t id, const void *d, size_t bytes) {
  memspill_t *m = h;
  if (++m->puts == m->fail_put) return OOC_ERR_IO; /* (counted: the attempts) */
  free(m->slots[id]);
  m->slots[id] = malloc(bytes);
  memcpy(m->slots[id], d, bytes);
  m->bytes[id] = bytes;
  return OOC_OK;
}
static ooc_status_t ms_get(void *h, int64_t id, void *d, size_t colb, size_t ncols,
                           size_t stride) {
  memspill_t *m = h;
  if (!m->slots[id] || m->bytes[id] != colb * ncols) return OOC_ERR_INTERNAL;
  for (size_t c = 0; c < ncols; c++)
    memcpy((char *)d + c * stride, (char *)m->slots[id] + c * colb, colb);
  m->gets++;
  return OOC_OK;
}
static void ms_free(memspill_t *m) {
  for (int i = 0; i < 4096; i++) free(m->slots[i]);
}

static double val(int64_t i, int64_t j) { return (double)(i * 1000 + j) + 0.5; }

static double g_src_bias; /* t_backing: a source that changed */
static ooc_status_t gen_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  (void)self;
  for (int64_t j = 0; j < nc; j++)
    for (int64_t i = 0; i < nr; i++) dst[i + j * ld] = val(r0 + i, c0 + j) + g_src_bias;
  return OOC_OK;
}

static void t_cache_budget_and_spill(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  int64_t n = 50, b = 8; /* 7 x 7 tiles, edge tiles 2 wide */
  int64_t cap = 10 * (8 * 8 * 8 + 64);
  tcache_t *c;
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, &src, &sp, &ts) == OOC_OK);
  part_t p = ts_rows(ts);
  CU_ASSERT_EQUAL(p.count, 7);
  double buf[64];
  /* Take every tile from the source, modify, put back: far more than the cache holds. */
  for (int64_t tj = 0; tj < 7; tj++)
    for (int64_t ti = 0; ti < 7; ti++) {
      int64_t nr = part_len(p, ti), nc = part_len(p, tj);
      CU_ASSERT_FATAL(ts_take(ts, ti, tj, buf, nr) == OOC_OK);
      for (int64_t k = 0; k < nr * nc; k++) buf[k] = -buf[k];
      CU_ASSERT_FATAL(ts_put(ts, ti, tj, buf, nr) == OOC_OK);
      CU_ASSERT(tcache_used(c) <= cap);
    }
  CU_ASSERT(tcache_peak(c) <= cap);
  CU_ASSERT_EQUAL(ms.opened, 1);
  /* at most cap / (smallest charge: a 2x2 corner or 8x2 edge plus the header) tiles stay cached */
  CU_ASSERT(ms.puts >= 49 - cap / (int64_t)(2 * 2 * 8 + 48));
  /* Every tile reads back negated, from cache or scratch, with a foreign leading dimension. */
  double big[10 * 8];
  for (int64_t tj = 0; tj < 7; tj++)
    for (int64_t ti = 0; ti < 7; ti++) {
      int64_t nr = part_len(p, ti), nc = part_len(p, tj);
      CU_ASSERT_FATAL(ts_read(ts, ti, tj, big, 10) == OOC_OK);
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++)
          CU_ASSERT_EQUAL(big[i + j * 10], -val(ti * b + i, tj * b + j));
    }
  /* LRU: the most recently put tile is still cached (no scratch read needed). */
  int gets = ms.gets;
  CU_ASSERT(ts_read(ts, 6, 6, buf, 2) == OOC_OK);
  CU_ASSERT_EQUAL(ms.gets, gets);
  const ts_stats_t *s = ts_stats(ts);
  CU_ASSERT(s->bytes_spilled > 0 && s->bytes_unspilled > 0 && s->hits > 0);
  /* Take twice is a bug the store reports. */
  CU_ASSERT(ts_take(ts, 0, 0, buf, 8) == OOC_OK);
  CU_ASSERT(ts_take(ts, 0, 0, buf, 8) == OOC_ERR_INTERNAL);
  ooc_clear_error(ctx);
  /* Dropped tiles read as zero. */
  ts_drop(ts, 1, 1);
  CU_ASSERT(ts_read(ts, 1, 1, buf, 8) == OOC_OK);
  CU_ASSERT_EQUAL(buf[0], 0.0);
  tstore_destroy(ts);
  CU_ASSERT_EQUAL(tcache_used(c), 0);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

static void t_cache_zero_capacity(void) {
  /* A cache that cannot hold one tile writes through to scratch. */
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  tcache_t *c;
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, 0, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, 16, 16, 16, NULL, &sp, &ts) == OOC_OK);
  double t[256], u[256];
  for (int k = 0; k < 256; k++) t[k] = k;
  CU_ASSERT(ts_put(ts, 0, 0, t, 16) == OOC_OK);
  CU_ASSERT_EQUAL(tcache_used(c), 0);
  CU_ASSERT_EQUAL(ms.puts, 1);
  CU_ASSERT(ts_take(ts, 0, 0, u, 16) == OOC_OK);
  CU_ASSERT(memcmp(t, u, sizeof t) == 0);
  tstore_destroy(ts);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

static void t_no_spill_is_budget_error(void) {
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *c;
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, 100, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, 16, 16, 16, NULL, NULL, &ts) == OOC_OK);
  double t[256] = {0};
  CU_ASSERT_EQUAL(ts_put(ts, 0, 0, t, 16), OOC_ERR_BUDGET);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "budget") != NULL);
  tstore_destroy(ts);
  tcache_destroy(c);
  tu_ctx_done(ctx);
}

/* ---- recycled buffers and copy threads ------------------------------------------------------ */

/* Take/put cycles reuse tile buffers: no allocation after the first fill, and the budget
 * (cached + pooled) is never exceeded, also when puts must evict to make room. */
static void t_cache_recycles_buffers(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  int64_t n = 64, b = 16; /* 4 x 4 tiles of 2 KiB */
  int64_t charge = 16 * 16 * 8 + 48, cap = 12 * charge + 100; /* 12 of 16 tiles fit */
  tcache_t *c;
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &c) == OOC_OK);
  tcache_set_threads(c, 1);
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, &sp, &ts) == OOC_OK);
  double col[64 * 16];
  for (int64_t tj = 0; tj < 4; tj++) {
    for (int64_t k = 0; k < n * b; k++) col[k] = (double)(tj * 10000 + k);
    CU_ASSERT_FATAL(ts_put_col(ts, tj, col, n) == OOC_OK);
  }
  int64_t allocs = ctx->live_allocs, bytes = ctx->host_bytes;
  for (int rep = 0; rep < 5; rep++)
    for (int64_t tj = 0; tj < 4; tj++) {
      CU_ASSERT_FATAL(ts_take_col(ts, tj, col, n) == OOC_OK);
      CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= cap);
      for (int64_t k = 0; k < n * b; k++) col[k] += 1.0;
      CU_ASSERT_FATAL(ts_put_col(ts, tj, col, n) == OOC_OK);
      CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= cap);
      /* no tile buffer is malloc'd or freed in steady state (equal-size tiles) */
      CU_ASSERT_EQUAL(ctx->live_allocs, allocs);
      CU_ASSERT(ctx->host_bytes <= bytes);
    }
  CU_ASSERT(tcache_peak(c) <= cap);
  CU_ASSERT(ms.puts > 0 && ms.gets > 0); /* the cycles did spill and read back */
  for (int64_t tj = 0; tj < 4; tj++) {
    CU_ASSERT_FATAL(ts_take_col(ts, tj, col, n) == OOC_OK);
    int bad = 0;
    for (int64_t k = 0; k < n * b; k++) bad += col[k] != (double)(tj * 10000 + k) + 5.0;
    CU_ASSERT_EQUAL(bad, 0);
  }
  /* everything taken: the buffers wait in the pool, still charged, and a drop pools too */
  CU_ASSERT_EQUAL(tcache_used(c), 0);
  CU_ASSERT(tcache_pooled(c) > 0 && tcache_pooled(c) <= cap);
  tcache_trim(c);
  CU_ASSERT_EQUAL(tcache_pooled(c), 0);
  tstore_destroy(ts);
  CU_ASSERT_EQUAL(tcache_used(c) + tcache_pooled(c), 0);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

/* Columns large enough for the copy threads (>= 4 MiB), with a foreign leading dimension, edge
 * tiles, and a cache smaller than one column, so puts evict tiles of the column being put and
 * takes read scratch and source tiles while the threads copy the cached ones. */
static void t_threaded_column_copies(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  /* b = 512: 5 row tiles, the last 52 rows, a column 8.6 MB; b = 768: 3 row tiles (the last 564
   * rows), each full tile 4.7 MB, over STREAM_MIN_BYTES: streaming stores, into columns that
   * alternate between 16-byte aligned and not (ld odd) */
  for (int64_t n = 2100, b = 512, ld = n + 5; b <= 768; b += 256)
  for (int threads = 1; threads <= 4; threads += 3)
    for (int capt = 0; capt < 3; capt++) {
      /* caches of 30 tiles (all fit), 9 tiles (1.8 columns) and 3 tiles (0.6 of a column) */
      int64_t big = 8 * b * b + 48;
      int64_t cap = (capt == 0 ? 30 : capt == 1 ? 9 : 3) * big;
      tcache_t *c;
      tstore_t *ts;
      CU_ASSERT_FATAL(tcache_create(ctx, cap, &c) == OOC_OK);
      tcache_set_threads(c, threads);
      CU_ASSERT_EQUAL(tcache_threads(c), threads);
      sp.concurrent = threads > 1; /* scratch moves on the copy threads too */
      CU_ASSERT_FATAL(tstore_create(ctx, c, n, 3 * b, b, &src, &sp, &ts) == OOC_OK);
      double *buf = malloc((size_t)(8 * ld * 2 * b));
      CU_ASSERT_FATAL(buf != NULL);
      /* two tile columns side by side in one buffer: 2 takes then 2 puts, three rounds */
      for (int round = 0; round < 3; round++) {
        for (int64_t tj = 0; tj < 3; tj++) {
          CU_ASSERT_FATAL(ts_take_col(ts, tj, buf, ld) == OOC_OK);
          int bad = 0;
          for (int64_t j = 0; j < b; j++)
            for (int64_t i = 0; i < n; i++)
              bad += buf[i + j * ld] != val(i, tj * b + j) + round;
          CU_ASSERT_EQUAL(bad, 0);
          for (int64_t j = 0; j < b; j++)
            for (int64_t i = 0; i < n; i++) buf[i + j * ld] += 1.0;
          CU_ASSERT_FATAL(ts_put_col(ts, tj, buf, ld) == OOC_OK);
          CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= cap);
        }
      }
      CU_ASSERT(tcache_peak(c) <= cap);
      if (cap < ts_rows(ts).count * 3 * big) CU_ASSERT(ts_stats(ts)->spills > 0);
      /* single tiles through ts_read with yet another leading dimension */
      for (int64_t ti = 0; ti < ts_rows(ts).count; ti++) {
        int64_t nr = part_len(ts_rows(ts), ti);
        CU_ASSERT_FATAL(ts_read(ts, ti, 1, buf, nr + 1) == OOC_OK);
        int bad = 0;
        for (int64_t j = 0; j < b; j++)
          for (int64_t i = 0; i < nr; i++) bad += buf[i + j * (nr + 1)] != val(ti * b + i, b + j) + 3;
        CU_ASSERT_EQUAL(bad, 0);
      }
      free(buf);
      tstore_destroy(ts);
      tcache_destroy(c);
      ms_free(&ms);
      memset(&ms, 0, sizeof ms);
      ms.ctx = ctx;
    }
  tu_ctx_done(ctx);
}

/* A put of a column taller than the cache (tstore.c put_rows; LU's factor, whose workspace
 * leaves its cache a few tiles): its tiles are put in groups, each group's evictions written
 * together, none one at a time on the caller; the same tiles spilled as one by one (all but the
 * last cache-full put), and every tile reads back what was put. With 1 and 4 copy threads. */
static void t_put_taller_than_cache(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  enum { N = 2048, B = 128, T = N / B, LD = N + 5, COLS = 3 };
  int64_t tileb = 8 * B * B + (int64_t)tcache_entry_bytes();
  double *buf = malloc((size_t)(8 * LD * B));
  for (int threads = 1; threads <= 4; threads += 3) {
    memspill_t ms = {.ctx = ctx};
    ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, threads > 1};
    tcache_t *c;
    tstore_t *ts;
    CU_ASSERT_FATAL(tcache_create(ctx, 6 * tileb, &c) == OOC_OK);
    tcache_set_threads(c, threads);
    CU_ASSERT_FATAL(tstore_create(ctx, c, N, N, B, &src, &sp, &ts) == OOC_OK);
    for (int64_t tj = 0; tj < COLS; tj++) {
      for (int64_t j = 0; j < B; j++)
        for (int64_t i = 0; i < N; i++) buf[i + j * LD] = val(i, tj * B + j) + 7.0;
      CU_ASSERT_FATAL(ts_put_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
      CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= 6 * tileb);
    }
    const ts_stats_t *st = ts_stats(ts);
    CU_ASSERT_EQUAL(st->spills, COLS * T - 6);
    CU_ASSERT_EQUAL(st->spills, ms.puts);
    CU_ASSERT_EQUAL(st->bytes_spilled_alone, 0);
    printf("\n  %d thread(s): %lld tiles through a cache of 6, %lld spilled, %lld bytes alone",
           threads, (long long)(COLS * T), (long long)st->spills,
           (long long)st->bytes_spilled_alone);
    int bad = 0;
    for (int64_t tj = 0; tj < COLS; tj++) {
      CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
      for (int64_t j = 0; j < B; j++)
        for (int64_t i = 0; i < N; i++) bad += buf[i + j * LD] != val(i, tj * B + j) + 7.0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(tcache_peak(c) <= 6 * tileb);
    tstore_destroy(ts);
    tcache_destroy(c);
    ms_free(&ms);
  }
  free(buf);
  tu_ctx_done(ctx);
}

/* make_room (tstore.h "Scratch transfers"): puts of whole columns into a full cache evict a
 * column's worth of dirty tiles at once, written side by side on 4 threads (concurrent ops) or
 * one by one (not), then read back straight into a foreign leading dimension. A write that fails
 * among them fails the put before anything of the column is put: its victim stays cached, the
 * others are spilled, and every tile still reads what was last put; so do the clean tiles (the
 * source's) dropped among the victims of a store with a backing. */
static void t_evict_together(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  enum { N = 1024, B = 128, T = N / B, LD = N + 3 };
  int64_t tileb = 8 * B * B + (int64_t)tcache_entry_bytes();
  double *buf = malloc((size_t)(8 * LD * B));
  for (int conc = 0; conc < 2; conc++)
    for (int fail = 0; fail < 2; fail++) {
      memspill_t ms = {.ctx = ctx};
      ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, conc};
      tcache_t *c;
      tstore_t *ts;
      CU_ASSERT_FATAL(tcache_create(ctx, 20 * tileb, &c) == OOC_OK);
      tcache_set_threads(c, 4);
      CU_ASSERT_FATAL(tstore_create(ctx, c, N, N, B, &src, &sp, &ts) == OOC_OK);
      /* every column read, + 1 (+ 2 for column 0), put back: 64 tiles through 20 */
      for (int64_t tj = 0; tj < T; tj++) {
        CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
        for (int64_t j = 0; j < B; j++)
          for (int64_t i = 0; i < N; i++) buf[i + j * LD] += tj == 0 ? 2.0 : 1.0;
        CU_ASSERT_FATAL(ts_put_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
        CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= 20 * tileb);
      }
      CU_ASSERT_EQUAL(ts_stats(ts)->spills, ms.puts);
      CU_ASSERT(ms.puts >= 40);
      int64_t spills = ts_stats(ts)->spills;
      /* column 0 again, + 1, while the third write of its room fails */
      CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, 0, 1, buf, LD) == OOC_OK);
      for (int64_t j = 0; j < B; j++)
        for (int64_t i = 0; i < N; i++) buf[i + j * LD] += 1.0;
      ms.fail_put = fail ? ms.puts + 3 : 0;
      ooc_status_t st = ts_put_tiles(ts, 0, T, 0, 1, buf, LD);
      CU_ASSERT_EQUAL(st, fail ? OOC_ERR_IO : OOC_OK);
      if (fail) CU_ASSERT_EQUAL(ts_stats(ts)->spills, spills + (ms.puts - spills) - 1);
      ms.fail_put = 0;
      int bad = 0; /* column 0: + 2, or + 3 once its put went through; the others + 1 */
      for (int64_t tj = 0; tj < T; tj++) {
        CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
        double add = tj ? 1.0 : fail ? 2.0 : 3.0;
        for (int64_t j = 0; j < B; j++)
          for (int64_t i = 0; i < N; i++) bad += buf[i + j * LD] != val(i, tj * B + j) + add;
      }
      CU_ASSERT_EQUAL(bad, 0);
      CU_ASSERT(ts_stats(ts)->bytes_unspilled > 0);
      CU_ASSERT(tcache_peak(c) <= 20 * tileb);
      /* columns 7 .. 3 again, + 1: most of a column is cached, a few tiles spilled, so each
       * put changes cached tiles in place and evicts a few (make_room); then every tile + 10
       * through single puts (in place where cached, evicted one by one by entry_get where
       * not), then all read back */
      int64_t puts0 = ms.puts;
      for (int64_t tj = T - 1; tj >= 3; tj--) {
        CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
        for (int64_t j = 0; j < B; j++)
          for (int64_t i = 0; i < N; i++) buf[i + j * LD] += 1.0;
        CU_ASSERT_FATAL(ts_put_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
      }
      CU_ASSERT(ms.puts > puts0);
      double *t = malloc((size_t)(8 * B * B));
      for (int64_t tj = 0; tj < T; tj++)
        for (int64_t ti = 0; ti < T; ti++) {
          CU_ASSERT_FATAL(ts_read(ts, ti, tj, t, B) == OOC_OK);
          for (int64_t q = 0; q < B * B; q++) t[q] += 10.0;
          CU_ASSERT_FATAL(ts_put(ts, ti, tj, t, B) == OOC_OK);
        }
      for (int64_t tj = T - 1; tj >= 0; tj--) {
        CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
        double add = (tj ? 11.0 : fail ? 12.0 : 13.0) + (tj >= 3 ? 1.0 : 0.0);
        for (int64_t j = 0; j < B; j++)
          for (int64_t i = 0; i < N; i++) bad += buf[i + j * LD] != val(i, tj * B + j) + add;
      }
      CU_ASSERT_EQUAL(bad, 0);
      free(t);
      tstore_destroy(ts);
      tcache_destroy(c);
      ms_free(&ms);
    }
  /* clean victims: a store with a backing, loaded (clean), then half of it changed: the puts'
   * room is made of clean tiles (dropped: checksummed on the threads, nothing written) and
   * dirty ones (spilled); all read back right, the clean ones from the source */
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 1};
  tcache_t *c;
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, 20 * tileb, &c) == OOC_OK);
  tcache_set_threads(c, 4);
  CU_ASSERT_FATAL(tstore_create(ctx, c, N, N, B, NULL, &sp, &ts) == OOC_OK);
  CU_ASSERT_FATAL(ts_set_backing(ts, &src, "gen") == OOC_OK);
  ts_set_loading(ts, 1);
  for (int64_t tj = 0; tj < T; tj++) {
    CU_ASSERT_FATAL(gen_read(NULL, 0, tj * B, N, B, buf, LD) == OOC_OK);
    CU_ASSERT_FATAL(ts_put_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
  }
  ts_set_loading(ts, 0);
  CU_ASSERT(ts_stats(ts)->drops > 0);
  CU_ASSERT_EQUAL(ms.puts, 0);
  for (int64_t tj = 0; tj < T; tj += 2) {
    CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
    for (int64_t j = 0; j < B; j++)
      for (int64_t i = 0; i < N; i++) buf[i + j * LD] += 1.0;
    CU_ASSERT_FATAL(ts_put_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
  }
  CU_ASSERT(ms.puts > 0);
  int bad = 0;
  for (int64_t tj = T - 1; tj >= 0; tj--) {
    CU_ASSERT_FATAL(ts_read_tiles(ts, 0, T, tj, tj + 1, buf, LD) == OOC_OK);
    for (int64_t j = 0; j < B; j++)
      for (int64_t i = 0; i < N; i++) bad += buf[i + j * LD] != val(i, tj * B + j) + (tj % 2 ? 0 : 1);
  }
  CU_ASSERT_EQUAL(bad, 0);
  tstore_destroy(ts);
  tcache_destroy(c);
  ms_free(&ms);
  free(buf);
  tu_ctx_done(ctx);
}

/* The mixed store of t_tile_blocks and t_rects: 1100 x 1000 in 256-tiles (5 x 4, edges of 76
 * and 232) in a cache of 8 tiles, every tile state at once: columns 0-1 read, + 1 and put back
 * (10 puts into 8 tiles: some spill), tile (4, 3) dropped (zero), the rest still at the source. */
enum { MIX_ROWS = 1100, MIX_COLS = 1000, MIX_B = 256 };
#define MIX_CAP (8 * (8 * MIX_B * MIX_B + 48))

static double mix_expect(int64_t i, int64_t j) {
  return j < 2 * MIX_B ? val(i, j) + 1.0 : (i >= 4 * MIX_B && j >= 3 * MIX_B) ? 0.0 : val(i, j);
}

/* tile: a scratch buffer of MIX_B^2 doubles; ms must outlive the store. */
static tstore_t *mix_store(ooc_ctx_t *ctx, memspill_t *ms, int threads, double *tile,
                           tcache_t **c) {
  ooc_spill_ops_t sp = {ms, ms_open, ms_put, ms_get, threads > 1};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  tstore_t *ts;
  CU_ASSERT_FATAL(tcache_create(ctx, MIX_CAP, c) == OOC_OK);
  tcache_set_threads(*c, threads);
  CU_ASSERT_FATAL(tstore_create(ctx, *c, MIX_ROWS, MIX_COLS, MIX_B, &src, &sp, &ts) == OOC_OK);
  for (int64_t tj = 0; tj < 2; tj++)
    for (int64_t ti = 0; ti < 5; ti++) {
      int64_t nr = part_len(ts_rows(ts), ti), nc = part_len(ts_cols(ts), tj);
      CU_ASSERT_FATAL(ts_read(ts, ti, tj, tile, nr) == OOC_OK);
      for (int64_t q = 0; q < nr * nc; q++) tile[q] += 1.0;
      CU_ASSERT_FATAL(ts_put(ts, ti, tj, tile, nr) == OOC_OK);
    }
  ts_drop(ts, 4, 3);
  CU_ASSERT(ts_stats(ts)->spills > 0);
  return ts;
}

/* Blocks of tiles (ts_read_tiles / ts_take_tiles / ts_put_tiles): every tile state in one block
 * (source, cached, spilled, dropped = zero), edge tiles, a foreign leading dimension, blocks over
 * the 4 MiB threshold with 1 and 4 threads, against per-tile ts_read; a take leaves the block
 * checked out until the put; ranges outside the store are refused. */
static void t_tile_blocks(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t rows = MIX_ROWS, cols = MIX_COLS, b = MIX_B, ld = 1111;
  double *buf = malloc((size_t)(8 * ld * cols)), *tile = malloc((size_t)(8 * b * b));
  CU_ASSERT_FATAL(buf && tile);
  for (int threads = 1; threads <= 4; threads += 3) {
    memspill_t ms = {.ctx = ctx};
    tcache_t *c;
    tstore_t *ts = mix_store(ctx, &ms, threads, tile, &c);
    /* the whole store, then an inner block of 3 x 2 tiles at tile (1, 1) */
    static const int64_t blocks[][4] = {{0, 5, 0, 4}, {1, 4, 1, 3}, {4, 5, 2, 4}};
    for (int q = 0; q < 3; q++) {
      int64_t t0 = blocks[q][0], t1 = blocks[q][1], u0 = blocks[q][2], u1 = blocks[q][3];
      int64_t r0 = t0 * b, c0 = u0 * b;
      int64_t nr = ooc_min64(t1 * b, rows) - r0, nc = ooc_min64(u1 * b, cols) - c0;
      memset(buf, 0xff, (size_t)(8 * ld * cols));
      CU_ASSERT_FATAL(ts_read_tiles(ts, t0, t1, u0, u1, buf, ld) == OOC_OK);
      int64_t bad = 0;
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) bad += buf[i + j * ld] != mix_expect(r0 + i, c0 + j);
      CU_ASSERT_EQUAL(bad, 0);
      if (bad) fprintf(stderr, "\n  read block %d (threads %d): %lld wrong\n", q, threads, (long long)bad);
    }
    /* take a block, see it checked out, modify it, put it back */
    CU_ASSERT_FATAL(ts_take_tiles(ts, 1, 5, 1, 4, buf, ld) == OOC_OK);
    CU_ASSERT(ts_read(ts, 2, 2, tile, b) == OOC_ERR_INTERNAL);
    int64_t nr = rows - b, nc = cols - b, bad = 0;
    for (int64_t j = 0; j < nc; j++)
      for (int64_t i = 0; i < nr; i++) {
        bad += buf[i + j * ld] != mix_expect(b + i, b + j);
        buf[i + j * ld] = -val(b + i, b + j);
      }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_FATAL(ts_put_tiles(ts, 1, 5, 1, 4, buf, ld) == OOC_OK);
    CU_ASSERT(tcache_peak(c) <= MIX_CAP);
    bad = 0;
    for (int64_t tj = 0; tj < 4; tj++)
      for (int64_t ti = 0; ti < 5; ti++) {
        int64_t tr = part_len(ts_rows(ts), ti), tc = part_len(ts_cols(ts), tj);
        CU_ASSERT_FATAL(ts_read(ts, ti, tj, tile, tr) == OOC_OK);
        for (int64_t j = 0; j < tc; j++)
          for (int64_t i = 0; i < tr; i++) {
            int64_t gi = ti * b + i, gj = tj * b + j;
            double want = (ti >= 1 && tj >= 1) ? -val(gi, gj) : mix_expect(gi, gj);
            bad += tile[i + j * tr] != want;
          }
      }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(ts_read_tiles(ts, 0, 6, 0, 1, buf, ld) == OOC_ERR_INTERNAL);
    CU_ASSERT(ts_put_tiles(ts, 2, 1, 0, 1, buf, ld) == OOC_ERR_INTERNAL);
    tstore_destroy(ts);
    tcache_destroy(c);
    ms_free(&ms);
  }
  free(buf);
  free(tile);
  tu_ctx_done(ctx);
}

/* ts_read_rect: rectangles at any offset (inside one tile, across tile edges in both directions,
 * up to the short edge tiles, the whole store, one element, empty) over tiles in every state
 * (source, cached, spilled, dropped), 1 and 4 threads, a foreign leading dimension: exactly the
 * rectangle's elements land where they belong and nothing around them is written; a source tile
 * gives only the part asked for (bytes_source grows by the rectangle), a spilled one is read
 * whole; outside the store or over a checked-out tile: OOC_ERR_INTERNAL. */
static void t_rects(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t rows = MIX_ROWS, cols = MIX_COLS, b = MIX_B, ld = 1111;
  double *buf = malloc((size_t)(8 * ld * (cols + 1))), *tile = malloc((size_t)(8 * b * b));
  CU_ASSERT_FATAL(buf && tile);
  for (int threads = 1; threads <= 4; threads += 3) {
    memspill_t ms = {.ctx = ctx};
    tcache_t *c;
    tstore_t *ts = mix_store(ctx, &ms, threads, tile, &c);
    int64_t rects[64][4] = {{0, 0, 1100, 1000}, {255, 255, 2, 2}, {1099, 999, 1, 1},
                            {10, 20, 100, 30}, {300, 600, 500, 300}, {1000, 700, 100, 300},
                            {0, 511, 1100, 2}, {5, 5, 0, 7}, {5, 5, 7, 0}, {251, 3, 502, 997}};
    int nrect = 10;
    uint64_t z = 12345;
    for (; nrect < 64; nrect++) { /* and random ones */
      z = z * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t r0 = (int64_t)((z >> 33) % (uint64_t)rows);
      int64_t c0 = (int64_t)((z >> 13) % (uint64_t)cols);
      z = z * 6364136223846793005ULL + 1442695040888963407ULL;
      rects[nrect][0] = r0, rects[nrect][1] = c0;
      rects[nrect][2] = (int64_t)((z >> 33) % (uint64_t)(rows - r0 + 1));
      rects[nrect][3] = (int64_t)((z >> 13) % (uint64_t)(cols - c0 + 1));
    }
    int64_t bad = 0, outside = 0;
    for (int q = 0; q < nrect; q++) {
      int64_t r0 = rects[q][0], c0 = rects[q][1], nr = rects[q][2], nc = rects[q][3];
      for (int64_t i = 0; i < ld * (nc + 1); i++) buf[i] = -1.0; /* a sentinel around it */
      int64_t src0 = ts_stats(ts)->bytes_source;
      CU_ASSERT_FATAL(ts_read_rect(ts, r0, c0, nr, nc, buf, ld) == OOC_OK);
      for (int64_t j = 0; j <= nc; j++)
        for (int64_t i = 0; i < ld; i++) {
          int in = i < nr && j < nc;
          if (in) bad += buf[i + j * ld] != mix_expect(r0 + i, c0 + j);
          else outside += buf[i + j * ld] != -1.0;
        }
      if (q == 4) /* all of it from the source tiles: only the rectangle read from the source */
        CU_ASSERT_EQUAL(ts_stats(ts)->bytes_source - src0, 8 * nr * nc);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(outside, 0);
    if (bad || outside)
      fprintf(stderr, "\n  rects (threads %d): %lld wrong, %lld written outside\n", threads,
              (long long)bad, (long long)outside);
    CU_ASSERT(ts_stats(ts)->bytes_unspilled > 0);
    CU_ASSERT(ts_read_rect(ts, 1000, 0, 101, 1, buf, ld) == OOC_ERR_INTERNAL);
    CU_ASSERT(ts_read_rect(ts, 0, 999, 1, 2, buf, ld) == OOC_ERR_INTERNAL);
    CU_ASSERT(ts_read_rect(ts, -1, 0, 1, 1, buf, ld) == OOC_ERR_INTERNAL);
    CU_ASSERT(ts_read_rect(ts, 0, 0, 10, 1, buf, 5) == OOC_ERR_INTERNAL);
    CU_ASSERT_FATAL(ts_take(ts, 2, 2, tile, b) == OOC_OK);
    CU_ASSERT(ts_read_rect(ts, 500, 500, 40, 40, buf, ld) == OOC_ERR_INTERNAL);
    CU_ASSERT_FATAL(ts_put(ts, 2, 2, tile, b) == OOC_OK);
    CU_ASSERT(tcache_peak(c) <= MIX_CAP);
    tstore_destroy(ts);
    tcache_destroy(c);
    ms_free(&ms);
  }
  free(buf);
  free(tile);
  tu_ctx_done(ctx);
}

/* ts_prefill_start / tcache_prefill_wait: the same buffers, touched on the copy threads while
 * the caller goes on (2 MiB tiles, four threads: a batch that runs in the background); puts after
 * the wait take them without allocating; a put without the wait (a misuse) still lands whole,
 * because queuing copies finishes the running batch first; running out of memory at the start
 * does nothing, quietly; a wait with nothing running returns. */
static void t_prefill_start(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 2048, b = 512; /* 16 tiles of 2 MiB */
  double *m = malloc((size_t)(n * n) * sizeof *m), *back = malloc((size_t)(n * n) * sizeof *m);
  CU_ASSERT_FATAL(m && back);
  for (int64_t i = 0; i < n * n; i++) m[i] = (double)i;
  for (int misuse = 0; misuse < 2; misuse++) {
    tcache_t *c;
    tstore_t *ts;
    CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &c) == OOC_OK);
    tcache_set_threads(c, 4);
    CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, NULL, &ts) == OOC_OK);
    tcache_prefill_wait(c); /* nothing running */
    ts_range_t r[2] = {{0, 4, 0, 1}, {1, 4, 1, 2}}; /* a lower load's first two tile columns */
    int64_t made = 0, allocs = ctx->live_allocs;
    CU_ASSERT(ts_prefill_start(ts, r, 2, INT64_MAX, &made) == OOC_OK);
    /* seven buffers of one tile each (payload and a header), allocated here, on the caller (the
     * copy list may have grown too: two more blocks at most) */
    CU_ASSERT(ctx->live_allocs >= allocs + 7 && ctx->live_allocs <= allocs + 9);
    CU_ASSERT(made % 7 == 0 && made / 7 >= b * b * 8 && made / 7 < b * b * 8 + 4096);
    CU_ASSERT_EQUAL(tcache_pooled(c), made);
    if (!misuse) tcache_prefill_wait(c);
    allocs = ctx->live_allocs;
    CU_ASSERT_FATAL(ts_put_tiles(ts, 0, 4, 0, 1, m, n) == OOC_OK);
    CU_ASSERT_FATAL(ts_put_tiles(ts, 1, 4, 1, 2, m + b * n + b, n) == OOC_OK);
    CU_ASSERT_EQUAL(ctx->live_allocs, allocs); /* the pooled buffers, no new ones */
    CU_ASSERT_EQUAL(tcache_pooled(c), 0);
    CU_ASSERT_FATAL(ts_read_tiles(ts, 0, 4, 0, 1, back, n) == OOC_OK);
    CU_ASSERT_FATAL(ts_read_tiles(ts, 1, 4, 1, 2, back + b * n + b, n) == OOC_OK);
    int same = 1;
    for (int64_t j = 0; j < 2 * b; j++)
      for (int64_t i = j < b ? 0 : b; i < n; i++) same &= back[i + j * n] == m[i + j * n];
    CU_ASSERT(same);
    /* out of memory at the start: nothing, quietly; the puts after it allocate as usual */
    ts_range_t rest = {0, 4, 2, 4};
    ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 1, 1, 0);
    CU_ASSERT(ts_prefill_start(ts, &rest, 1, INT64_MAX, &made) == OOC_OK);
    ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 0, 0, 0);
    tcache_prefill_wait(c);
    CU_ASSERT_EQUAL(made, 0);
    CU_ASSERT_EQUAL(tcache_pooled(c), 0);
    CU_ASSERT_EQUAL(ooc_ctx_error(ctx)[0], '\0');
    CU_ASSERT_FATAL(ts_put_tiles(ts, 0, 4, 2, 4, m + 2 * b * n, n) == OOC_OK);
    CU_ASSERT_FATAL(ts_read_tiles(ts, 0, 4, 2, 4, back + 2 * b * n, n) == OOC_OK);
    CU_ASSERT(memcmp(m + 2 * b * n, back + 2 * b * n, (size_t)(2 * b * n) * sizeof *m) == 0);
    tstore_destroy(ts);
    tcache_destroy(c);
  }
  free(m);
  free(back);
  tu_ctx_done(ctx);
}

/* ts_prefill: buffers for the uncached tiles of the ranges go to the pool, touched, within the
 * free room only (cached tiles stay cached, nothing spills); pooled buffers count; a following
 * put takes them (no allocation); max_bytes bounds a call; an allocation failure stops it
 * quietly; edge tiles (four sizes); large tiles on the copy threads. */
static void t_prefill(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  tcache_t *c;
  tstore_t *ts;
  double t[256];
  for (int k = 0; k < 256; k++) t[k] = k;
  /* a 16 x 16 tile's charge (payload + header), measured */
  CU_ASSERT_FATAL(tcache_create(ctx, 1 << 20, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, 16, 16, 16, NULL, NULL, &ts) == OOC_OK);
  CU_ASSERT_FATAL(ts_put(ts, 0, 0, t, 16) == OOC_OK);
  int64_t charge = tcache_used(c), hdr = charge - 16 * 16 * 8;
  tstore_destroy(ts);
  tcache_destroy(c);
  int64_t cap = 10 * charge + 100; /* 10 of 16 tiles fit */
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, 64, 64, 16, NULL, &sp, &ts) == OOC_OK);
  for (int64_t ti = 0; ti < 3; ti++) CU_ASSERT_FATAL(ts_put(ts, ti, 0, t, 16) == OOC_OK);
  CU_ASSERT_EQUAL(tcache_used(c), 3 * charge);
  int64_t allocs = ctx->live_allocs, made = -1;
  /* tile columns 0-1: 8 tiles, 3 cached, so 5 buffers */
  ts_range_t r01 = {0, 4, 0, 2};
  CU_ASSERT(ts_prefill(ts, &r01, 1, 1 << 30, &made) == OOC_OK);
  CU_ASSERT_EQUAL(made, 5 * charge);
  CU_ASSERT_EQUAL(tcache_pooled(c), 5 * charge);
  CU_ASSERT_EQUAL(tcache_used(c), 3 * charge);
  CU_ASSERT_EQUAL(ctx->live_allocs, allocs + 5);
  CU_ASSERT(ts_prefill(ts, &r01, 1, 1 << 30, &made) == OOC_OK); /* pooled ones count */
  CU_ASSERT_EQUAL(made, 0);
  CU_ASSERT_EQUAL(ctx->live_allocs, allocs + 5);
  /* the whole store: 13 uncached, 5 pooled, but room for only 2 more; nothing is evicted */
  ts_range_t all = {0, 4, 0, 4};
  CU_ASSERT(ts_prefill(ts, &all, 1, 1, &made) == OOC_OK); /* max_bytes: one buffer a call */
  CU_ASSERT_EQUAL(made, charge);
  CU_ASSERT(ts_prefill(ts, &all, 1, 1 << 30, &made) == OOC_OK);
  CU_ASSERT_EQUAL(made, charge);
  CU_ASSERT(ts_prefill(ts, &all, 1, 1 << 30, &made) == OOC_OK);
  CU_ASSERT_EQUAL(made, 0);
  CU_ASSERT_EQUAL(tcache_used(c), 3 * charge);
  CU_ASSERT_EQUAL(tcache_pooled(c), 7 * charge);
  CU_ASSERT(tcache_peak(c) <= cap);
  CU_ASSERT_EQUAL(ms.puts, 0);
  /* two ranges count their tiles twice: column 1 (4 uncached) twice wants 8 > 7 pooled, but
   * there is no room for an eighth */
  ts_range_t twice[2] = {{0, 4, 1, 2}, {0, 4, 1, 2}};
  CU_ASSERT(ts_prefill(ts, twice, 2, 1 << 30, &made) == OOC_OK);
  CU_ASSERT_EQUAL(made, 0); /* no room */
  /* puts take the pooled buffers: no allocation */
  allocs = ctx->live_allocs;
  for (int64_t tj = 1; tj < 3; tj++)
    for (int64_t ti = 0; ti < 3; ti++) CU_ASSERT_FATAL(ts_put(ts, ti, tj, t, 16) == OOC_OK);
  CU_ASSERT_EQUAL(ctx->live_allocs, allocs);
  CU_ASSERT_EQUAL(tcache_used(c), 9 * charge);
  CU_ASSERT_EQUAL(tcache_pooled(c), 1 * charge);
  CU_ASSERT_EQUAL(ms.puts, 0);
  double u[256];
  CU_ASSERT(ts_read(ts, 2, 2, u, 16) == OOC_OK);
  CU_ASSERT(memcmp(t, u, sizeof t) == 0);
  /* a range outside the store is a bug; an allocation failure stops quietly */
  ts_range_t bad = {0, 5, 0, 1};
  CU_ASSERT(ts_prefill(ts, &bad, 1, 1 << 30, &made) == OOC_ERR_INTERNAL);
  ooc_clear_error(ctx);
  tcache_trim(c);
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 1, 1, 0);
  CU_ASSERT(ts_prefill(ts, &all, 1, 1 << 30, &made) == OOC_OK);
  CU_ASSERT(ooc_fault_injected(ctx, OOC_FAULT_ALLOC) > 0);
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 0, 0, 0);
  CU_ASSERT_EQUAL(made, 0);
  CU_ASSERT_EQUAL(ooc_ctx_error(ctx)[0], '\0');
  CU_ASSERT_EQUAL(tcache_pooled(c), 0);
  tstore_destroy(ts);
  tcache_destroy(c);
  ms_free(&ms);

  /* edge tiles (40 = 2 x 16 + 8: four sizes) and 2 MiB tiles (an 8 MiB batch: copy threads) */
  for (int q = 0; q < 2; q++) {
    int64_t n = q ? 1024 + 100 : 40, b = q ? 512 : 16;
    CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &c) == OOC_OK);
    tcache_set_threads(c, q ? 4 : 1);
    CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, NULL, &ts) == OOC_OK);
    ts_range_t whole = {0, 3, 0, 3};
    CU_ASSERT(ts_prefill(ts, &whole, 1, (int64_t)1 << 30, &made) == OOC_OK);
    CU_ASSERT_EQUAL(made, 9 * hdr + n * n * 8);
    double *m = malloc((size_t)(n * n) * sizeof *m), *back = malloc((size_t)(n * n) * sizeof *m);
    CU_ASSERT_FATAL(m && back);
    for (int64_t i = 0; i < n * n; i++) m[i] = (double)i;
    allocs = ctx->live_allocs;
    CU_ASSERT_FATAL(ts_put_tiles(ts, 0, 3, 0, 3, m, n) == OOC_OK);
    CU_ASSERT_EQUAL(ctx->live_allocs, allocs);
    CU_ASSERT_EQUAL(tcache_pooled(c), 0);
    CU_ASSERT_FATAL(ts_read_tiles(ts, 0, 3, 0, 3, back, n) == OOC_OK);
    CU_ASSERT(memcmp(m, back, (size_t)(n * n) * sizeof *m) == 0);
    free(m);
    free(back);
    tstore_destroy(ts);
    tcache_destroy(c);
  }
  tu_ctx_done(ctx);
}

/* ts_swap_rows: in place, against LAPACK's laswp on a dense copy (tile rows from t0 down, edge
 * tiles, a pivot that moves a row twice, one column large enough for the threads); nothing
 * changed and *done = 0 when a tile of the range is spilled or still at its source; pivots
 * outside the tile rows refused. */
static void t_swap_rows(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  static const int64_t shapes[][3] = {{1100, 256, 3}, {3000, 1000, 2}}; /* rows, b, tile columns */
  for (int sh = 0; sh < 2; sh++) {
    int64_t n = shapes[sh][0], b = shapes[sh][1], nc = shapes[sh][2] * b, nt = (n + b - 1) / b;
    tcache_t *c;
    tstore_t *ts;
    CU_ASSERT_FATAL(tcache_create(ctx, 8 * n * nc + 4096 * nt * 4, &c) == OOC_OK);
    CU_ASSERT_FATAL(tstore_create(ctx, c, n, nc, b, &src, &sp, &ts) == OOC_OK);
    double *M = malloc((size_t)(8 * n * nc)), *R = malloc((size_t)(8 * n * b));
    int64_t *ipiv = malloc((size_t)(8 * n));
    CU_ASSERT_FATAL(M && R && ipiv);
    for (int64_t tj = 0; tj < nc / b; tj++) { /* cached: read from the source, put back */
      CU_ASSERT_FATAL(ts_take_col(ts, tj, M + tj * b * n, n) == OOC_OK);
      CU_ASSERT_FATAL(ts_put_col(ts, tj, M + tj * b * n, n) == OOC_OK);
    }
    uint64_t x = 12345;
    int64_t k1 = b + 7; /* rows from tile row 1 on (inside it), to the end */
    for (int64_t k = k1; k < n; k++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      ipiv[k] = k + (int64_t)((x >> 33) % (uint64_t)(n - k));
    }
    ipiv[k1 + 1] = k1 + 2; /* row k1+2 moves twice: to k1+1 here, then on */
    ipiv[k1 + 2] = n - 1;
    int done = -1;
    CU_ASSERT(ts_swap_rows(ts, 1, nt, 1, k1, n, ipiv, &done) == OOC_OK);
    CU_ASSERT_EQUAL(done, 1);
    for (int64_t j = 0; j < b; j++) { /* the reference: tile column 1 of the dense copy */
      double *a = M + (b + j) * n;
      for (int64_t k = k1; k < n; k++) {
        double t = a[k];
        a[k] = a[ipiv[k]];
        a[ipiv[k]] = t;
      }
    }
    int bad = 0;
    for (int64_t tj = 0; tj < nc / b; tj++) {
      CU_ASSERT_FATAL(ts_read_tiles(ts, 0, nt, tj, tj + 1, R, n) == OOC_OK);
      for (int64_t j = 0; j < b; j++)
        for (int64_t i = 0; i < n; i++) bad += R[i + j * n] != M[i + (tj * b + j) * n];
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* a pivot above the tile rows, or backwards: refused */
    int64_t keep = ipiv[k1];
    ipiv[k1] = 0;
    CU_ASSERT(ts_swap_rows(ts, 1, nt, 1, k1, n, ipiv, &done) == OOC_ERR_INTERNAL);
    ipiv[k1] = keep;
    CU_ASSERT(ts_swap_rows(ts, 2, nt, 1, k1, n, ipiv, &done) == OOC_ERR_INTERNAL);
    /* a tile of the range at its source (column 2 never read in the second shape has none; use a
     * fresh store): nothing done, nothing changed */
    tstore_t *t2;
    CU_ASSERT_FATAL(tstore_create(ctx, c, n, b, b, &src, &sp, &t2) == OOC_OK);
    CU_ASSERT(ts_swap_rows(t2, 1, nt, 0, k1, n, ipiv, &done) == OOC_OK);
    CU_ASSERT_EQUAL(done, 0);
    CU_ASSERT_FATAL(ts_read_tiles(t2, 0, nt, 0, 1, R, n) == OOC_OK);
    bad = 0;
    for (int64_t j = 0; j < b; j++)
      for (int64_t i = 0; i < n; i++) bad += R[i + j * n] != val(i, j);
    CU_ASSERT_EQUAL(bad, 0);
    tstore_destroy(t2);
    free(M), free(R), free(ipiv);
    tstore_destroy(ts);
    tcache_destroy(c);
    ms_free(&ms);
    memset(&ms, 0, sizeof ms);
    ms.ctx = ctx;
  }
  tu_ctx_done(ctx);
}

/* Lending (tstore.h): read lends only of cached tiles, write lends of any, lent tiles checked
 * out for every other call, never evicted, at most half the cache lent, returned kept or taken;
 * the pinner asked once per buffer, refusals counted, everything it pinned unpinned when it is
 * replaced; a store destroyed with tiles still lent leaves nothing charged. */
typedef struct {
  int pins, unpins, asked;
  int refuse;          /* every refuse-th asked is refused (0: none) */
  int64_t small, sum;  /* asks for fewer bytes than a header; bytes pinned */
  int filled;          /* buffers whose payload's last value was a full tile's 63 or a 2-row 15 */
} pinner_t;
static int pin_cb(void *u, void *p, size_t bytes) {
  pinner_t *k = u;
  (void)p;
  if (bytes < 64) k->small++;
  if (bytes >= 64) { /* the payload ends the buffer (white box): filled before it is pinned? */
    double last;
    memcpy(&last, (const char *)p + bytes - sizeof last, sizeof last);
    k->filled += last == 63.0 || last == 15.0;
  }
  if (k->refuse && ++k->asked % k->refuse == 0) return 0;
  if (!k->refuse) k->asked++;
  k->pins++;
  k->sum += (int64_t)bytes;
  return 1;
}
static void unpin_cb(void *u, void *p) {
  (void)p;
  ((pinner_t *)u)->unpins++;
}

static void t_lend(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  int64_t n = 50, b = 8, tile = 8 * 8 * 8 + 64; /* 7 x 7 tiles; a charge is at most `tile` */
  int64_t cap = 4 * 7 * tile;
  tcache_t *c;
  tstore_t *ts;
  pinner_t pk = {.refuse = 3}; /* every third refused */
  double *p[7], buf[64];
  int lent;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, &src, &sp, &ts) == OOC_OK);
  CU_ASSERT(ts_cache(ts) == c);
  tcache_set_pin(c, pin_cb, unpin_cb, &pk);
  /* a read lend of tiles still in the source: nothing lent */
  CU_ASSERT(ts_lend(ts, 0, 7, 0, 0, p, &lent) == OOC_OK && lent == 0);
  for (int64_t ti = 0; ti < 7; ti++) { /* column 0 cached */
    int64_t nr = part_len(ts_rows(ts), ti);
    CU_ASSERT_FATAL(ts_take(ts, ti, 0, buf, nr) == OOC_OK);
    CU_ASSERT_FATAL(ts_put(ts, ti, 0, buf, nr) == OOC_OK);
  }
  CU_ASSERT(ts_lend(ts, 0, 7, 0, 0, p, &lent) == OOC_OK && lent == 1);
  CU_ASSERT_EQUAL(p[6][1 + 2 * 1], val(49, 1)); /* tile 6 is 2 rows: ld 2 */
  CU_ASSERT_EQUAL(p[3][5], val(29, 0));
  CU_ASSERT_EQUAL(pk.asked, 7); /* each buffer asked once... */
  int64_t pinned, refused;
  tcache_pin_stats(c, &pinned, &refused);
  CU_ASSERT(refused == 2 && pinned > 0);
  CU_ASSERT(ts_read(ts, 0, 0, buf, 8) == OOC_ERR_INTERNAL); /* lent: checked out */
  CU_ASSERT(ts_put(ts, 0, 0, buf, 8) == OOC_ERR_INTERNAL);
  CU_ASSERT(ts_lend(ts, 2, 3, 0, 1, p + 2, &lent) == OOC_ERR_INTERNAL); /* lent twice */
  ooc_clear_error(ctx);
  ts_drop(ts, 0, 0); /* leaves a lent tile alone */
  ts_return(ts, 0, 7, 0, 0);
  CU_ASSERT(ts_read(ts, 0, 0, buf, 8) == OOC_OK && buf[9] == val(1, 1));
  CU_ASSERT(ts_lend(ts, 0, 7, 0, 0, p, &lent) == OOC_OK && lent == 1);
  CU_ASSERT_EQUAL(pk.asked, 7); /* ...only once */
  ts_return(ts, 0, 7, 0, 0);
  /* a write lend of source tiles: buffers made; what the borrower writes is the tile */
  CU_ASSERT(ts_lend(ts, 0, 7, 1, 1, p, &lent) == OOC_OK && lent == 1);
  for (int64_t ti = 0; ti < 7; ti++)
    for (int64_t k = 0; k < part_len(ts_rows(ts), ti) * 8; k++) p[ti][k] = -1.0 - (double)ti;
  ts_return(ts, 0, 7, 1, 0);
  CU_ASSERT(ts_read(ts, 4, 1, buf, 8) == OOC_OK && buf[63] == -5.0);
  /* returned as taken: the tiles are out, their memory back in the pool */
  int64_t used = tcache_used(c);
  CU_ASSERT(ts_lend(ts, 0, 7, 1, 0, p, &lent) == OOC_OK && lent == 1);
  ts_return(ts, 0, 7, 1, 1);
  CU_ASSERT(tcache_used(c) < used);
  CU_ASSERT(ts_read(ts, 0, 1, buf, 8) == OOC_ERR_INTERNAL);
  ooc_clear_error(ctx);
  for (int64_t ti = 0; ti < 7; ti++) /* column 1 back (from the pool's buffers) */
    CU_ASSERT(ts_put(ts, ti, 1, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  /* at most half the cache lent: two columns (each 7 tiles, under 2 x 7 tiles' charge) yes, a
   * third no; then puts of everything else spill around the lent tiles, which keep their data */
  CU_ASSERT(ts_lend(ts, 0, 7, 0, 0, p, &lent) == OOC_OK && lent == 1);
  double *q[7];
  CU_ASSERT(ts_lend(ts, 0, 7, 2, 1, q, &lent) == OOC_OK && lent == 1);
  for (int64_t ti = 0; ti < 7; ti++)
    for (int64_t k = 0; k < part_len(ts_rows(ts), ti) * 8; k++) q[ti][k] = 7.0;
  double *r[7];
  CU_ASSERT(ts_lend(ts, 0, 7, 3, 1, r, &lent) == OOC_OK && lent == 0);
  for (int64_t tj = 3; tj < 7; tj++)
    for (int64_t ti = 0; ti < 7; ti++) {
      int64_t nr = part_len(ts_rows(ts), ti);
      CU_ASSERT_FATAL(ts_take(ts, ti, tj, buf, nr) == OOC_OK);
      CU_ASSERT_FATAL(ts_put(ts, ti, tj, buf, nr) == OOC_OK);
      CU_ASSERT(tcache_used(c) + tcache_pooled(c) <= cap);
    }
  CU_ASSERT(ms.puts > 0);
  CU_ASSERT_EQUAL(p[3][5], val(29, 0));
  CU_ASSERT_EQUAL(q[6][15], 7.0);
  ts_return(ts, 0, 7, 0, 0);
  /* a new pinner: everything the old one pinned is unpinned first */
  tcache_set_pin(c, NULL, NULL, NULL);
  CU_ASSERT(pk.pins > 0 && pk.unpins == pk.pins);
  tcache_pin_stats(c, &pinned, NULL);
  CU_ASSERT_EQUAL(pinned, 0);
  /* column 2 still lent: the store goes all the same, nothing stays charged */
  tstore_destroy(ts);
  CU_ASSERT_EQUAL(tcache_used(c), 0);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

/* tcache_pin_new: every buffer pinned as it is made (the load), with its whole charge; lending
 * it later asks nothing; setting the same pinner again keeps what it pinned; NULL unpins all. */
static void t_pin_new(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 50, b = 8;
  tcache_t *c;
  tstore_t *ts;
  pinner_t pk = {0};
  double *p[7], buf[64];
  int lent;
  CU_ASSERT_FATAL(tcache_create(ctx, 1 << 20, &c) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, NULL, &ts) == OOC_OK);
  CU_ASSERT(tcache_pin_user(c) == NULL);
  tcache_pin_new(c, 1); /* no pinner: nothing to do */
  CU_ASSERT(ts_put(ts, 0, 6, buf, 8) == OOC_OK);
  tcache_set_pin(c, pin_cb, unpin_cb, &pk);
  tcache_pin_new(c, 1);
  CU_ASSERT(tcache_pin_user(c) == &pk);
  for (int64_t k = 0; k < 64; k++) buf[k] = (double)k;
  for (int64_t ti = 0; ti < 7; ti++)
    CU_ASSERT_FATAL(ts_put(ts, ti, 0, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  CU_ASSERT_EQUAL(pk.asked, 7); /* the tile made before the pinner is not pinned */
  CU_ASSERT_EQUAL(pk.small, 0);
  CU_ASSERT_EQUAL(pk.filled, 7); /* each pinned once its copy was done */
  int64_t pinned, refused;
  tcache_pin_stats(c, &pinned, &refused);
  CU_ASSERT(pinned == pk.sum && refused == 0 && pk.sum > 8 * n * b); /* payloads and headers */
  tcache_set_pin(c, pin_cb, unpin_cb, &pk); /* the same pinner: nothing unpinned */
  CU_ASSERT_EQUAL(pk.unpins, 0);
  CU_ASSERT(ts_lend(ts, 0, 7, 0, 0, p, &lent) == OOC_OK && lent == 1);
  CU_ASSERT_EQUAL(pk.asked, 7); /* pinned already */
  CU_ASSERT_EQUAL(p[2][9], 9.0);
  ts_return(ts, 0, 7, 0, 0);
  tcache_set_pin(c, pin_cb, unpin_cb, &pk); /* re-set: pin_new is off (another pinner turns it off) */
  tcache_set_pin(c, NULL, NULL, NULL);
  CU_ASSERT(pk.unpins == 7 && tcache_pin_user(c) == NULL);
  tcache_pin_stats(c, &pinned, NULL);
  CU_ASSERT_EQUAL(pinned, 0);
  tstore_destroy(ts);
  tcache_destroy(c);
  tu_ctx_done(ctx);
}

/* tcache_pin_new(c, TCACHE_PIN_LATER): new buffers are only queued; tcache_pin_start pins the
 * queue (on a pool thread, or the caller at the wait) after their copies, and tcache_pin_wait
 * waits; a queued buffer lent first is pinned at the lend; one evicted while queued is never
 * pinned; turning it off leaves the rest to the next batch. */
static void t_pin_later(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  int64_t n = 50, b = 8, tile = 8 * 8 * 8 + 64; /* 7 x 7 tiles */
  tcache_t *c;
  tstore_t *ts;
  pinner_t pk = {0};
  double *p[7], buf[64];
  int lent;
  for (int64_t k = 0; k < 64; k++) buf[k] = (double)k;
  CU_ASSERT_FATAL(tcache_create(ctx, 3 * 7 * tile, &c) == OOC_OK); /* three tile columns */
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, &sp, &ts) == OOC_OK);
  tcache_set_pin(c, pin_cb, unpin_cb, &pk);
  tcache_pin_new(c, TCACHE_PIN_LATER);
  tcache_pin_wait(c); /* nothing started: nothing to wait for */
  for (int64_t ti = 0; ti < 7; ti++)
    CU_ASSERT_FATAL(ts_put(ts, ti, 0, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  CU_ASSERT_EQUAL(pk.asked, 0); /* queued, not pinned by the batches */
  tcache_pin_start(c);
  tcache_pin_start(c); /* one job at a time: a second start changes nothing */
  tcache_pin_wait(c);
  CU_ASSERT_EQUAL(pk.asked, 7);
  CU_ASSERT_EQUAL(pk.filled, 7); /* each after its copy */
  tcache_pin_wait(c);
  tcache_pin_start(c); /* an empty queue */
  tcache_pin_wait(c);
  CU_ASSERT_EQUAL(pk.asked, 7);
  for (int64_t ti = 0; ti < 7; ti++) /* column 1 queued; lent before any start: pinned there */
    CU_ASSERT_FATAL(ts_put(ts, ti, 1, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  CU_ASSERT(ts_lend(ts, 0, 7, 1, 0, p, &lent) == OOC_OK && lent == 1);
  CU_ASSERT_EQUAL(pk.asked, 14);
  CU_ASSERT_EQUAL(p[3][10], 10.0);
  ts_return(ts, 0, 7, 1, 0);
  tcache_pin_start(c); /* those left the queue when lent: nothing pinned twice */
  tcache_pin_wait(c);
  CU_ASSERT_EQUAL(pk.asked, 14);
  /* columns 2..5 queued while the cache holds three (evictions, spills) */
  for (int64_t tj = 2; tj < 6; tj++)
    for (int64_t ti = 0; ti < 7; ti++)
      CU_ASSERT_FATAL(ts_put(ts, ti, tj, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  CU_ASSERT(ts_stats(ts)->spills > 0);
  tcache_pin_start(c);
  tcache_pin_wait(c);
  int64_t pinned, refused;
  tcache_pin_stats(c, &pinned, &refused);
  /* evicted while queued: recycled still queued (pinned once filled) or freed unpinned */
  CU_ASSERT(pk.asked > 14); /* the live ones pinned, each after its copy */
  CU_ASSERT_EQUAL(pk.filled, pk.asked);
  CU_ASSERT(refused == 0 && pinned > 0);
  CU_ASSERT(pinned <= tcache_used(c) + tcache_pooled(c));
  /* off again: what is queued then is pinned at the end of the next batch */
  for (int64_t ti = 0; ti < 7; ti++)
    CU_ASSERT_FATAL(ts_put(ts, ti, 6, buf, part_len(ts_rows(ts), ti)) == OOC_OK);
  int64_t asked = pk.asked;
  tcache_pin_new(c, 0);
  CU_ASSERT_EQUAL(pk.asked, asked);
  CU_ASSERT(ts_read(ts, 0, 6, buf, 8) == OOC_OK); /* a batch */
  CU_ASSERT(pk.asked > asked);
  tcache_set_pin(c, NULL, NULL, NULL);
  tcache_pin_stats(c, &pinned, NULL);
  CU_ASSERT_EQUAL(pinned, 0);
  CU_ASSERT_EQUAL(pk.unpins, pk.pins); /* every pin undone once */
  tstore_destroy(ts);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

/* readahead.h: a source that logs the rectangles it is asked for (in order), fails its k-th read
 * when asked, and checks that no two reads overlap in time. */
typedef struct {
  int64_t log[64][4]; /* r0, c0, nr, nc */
  int nlog, fail_at, busy, overlapped;
} rasrc_t;

static ooc_status_t ra_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                            double *dst, int64_t ld) {
  rasrc_t *s = self;
  if (__atomic_fetch_add(&s->busy, 1, __ATOMIC_SEQ_CST)) s->overlapped = 1;
  int k = s->nlog++;
  if (k < 64) {
    s->log[k][0] = r0;
    s->log[k][1] = c0;
    s->log[k][2] = nr;
    s->log[k][3] = nc;
  }
  ooc_status_t st = OOC_OK;
  if (k + 1 == s->fail_at) st = OOC_ERR_IO;
  else gen_read(NULL, r0, c0, nr, nc, dst, ld);
  __atomic_fetch_sub(&s->busy, 1, __ATOMIC_SEQ_CST);
  return st;
}

/* Every strip as the source has it, in order (or reversed, or by row bands, from a first column),
 * read once each, one read at a time; a failed read is returned at its strip, no read is left
 * running, and nothing after it is read. */
static void t_readahead(void) {
  const int64_t n = 37, w = 8; /* 5 strips, the last 5 wide */
  double b0[37 * 8], b1[37 * 8];
  part_t p = part_make(n, w);
  for (int mode = 0; mode < 4; mode++) { /* columns, reversed, row bands, from column 3 */
    int rev = mode == 1, rows = mode == 2;
    rasrc_t rs = {.fail_at = 0};
    ooc_source_t src = {&rs, ra_read, NULL, NULL};
    readahead_t ra;
    int64_t c0 = mode == 3 ? 3 : 0;
    part_t q = mode == 3 ? part_make(n - 3, w) : p;
    if (rev) ra_begin_rev(&ra, &src, n, 0, q, b0, b1);
    else if (rows) ra_begin_rows(&ra, &src, n, q, b0, b1);
    else ra_begin(&ra, &src, n, c0, q, b0, b1);
    int bad = 0;
    for (int64_t k = 0; k < q.count; k++) {
      int64_t s = rev ? q.count - 1 - k : k, at = part_start(q, s), len = part_len(q, s);
      double *d = NULL;
      CU_ASSERT_FATAL(ra_next(&ra, &d) == OOC_OK);
      CU_ASSERT(d == (k % 2 ? b1 : b0));
      for (int64_t j = 0; j < (rows ? n : len); j++)
        for (int64_t i = 0; i < (rows ? len : n); i++) {
          double want = rows ? val(at + i, j) : val(i, c0 + at + j);
          bad += d[i + j * (rows ? len : n)] != want;
        }
      CU_ASSERT(rs.log[k][rows ? 0 : 1] == (rows ? at : c0 + at));
    }
    ra_end(&ra);
    ra_end(&ra); /* twice is harmless */
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(rs.nlog, q.count); /* each strip once, none beyond the last */
    CU_ASSERT_EQUAL(rs.overlapped, 0);
  }
  for (int fail = 1; fail <= 5; fail++) { /* the fail-th read fails */
    rasrc_t rs = {.fail_at = fail};
    ooc_source_t src = {&rs, ra_read, NULL, NULL};
    readahead_t ra;
    ra_begin(&ra, &src, n, 0, p, b0, b1);
    ooc_status_t st = OOC_OK;
    int64_t got = 0;
    double *d;
    while (got < p.count && (st = ra_next(&ra, &d)) == OOC_OK) got++;
    CU_ASSERT_EQUAL(st, OOC_ERR_IO);
    CU_ASSERT_EQUAL(got, fail - 1);
    CU_ASSERT_EQUAL(ra.task.running, 0); /* nothing left running (white box) ... */
    ra_end(&ra);
    CU_ASSERT_EQUAL(rs.nlog, fail); /* ... nor started: nothing read after the failure */
  }
  readahead_t ra; /* an empty pass */
  rasrc_t rs = {0};
  ooc_source_t src = {&rs, ra_read, NULL, NULL};
  ra_begin(&ra, &src, n, 0, part_make(0, w), b0, b1);
  ra_end(&ra);
  CU_ASSERT_EQUAL(rs.nlog, 0);
}

/* ts_set_backing / ts_set_loading (issue 27): tiles put while loading go back to the source
 * when evicted (no scratch write) and read back from it, checked (a changed source is an
 * error); tiles never put stay zero; a put after
 * the load, a write lend and row swaps make a tile dirty (spilled again); a checkpoint writes
 * only the dirty ones, names the clean ones the source's (where 2), and a restore reads them
 * from the source. */
static void t_backing(void) {
  ooc_ctx_t *ctx = tu_ctx();
  memspill_t ms = {.ctx = ctx};
  ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 0};
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  int64_t n = 40, b = 8, tile = 8 * 8 * 8 + 64; /* 5 x 5 tiles */
  tcache_t *c;
  tstore_t *ts;
  double col[40 * 8], buf[64];
  CU_ASSERT_FATAL(tcache_create(ctx, 12 * tile, &c) == OOC_OK); /* half of it lends a column */
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, &sp, &ts) == OOC_OK);
  ts_set_loading(ts, 1); /* no source yet: nothing is clean */
  CU_ASSERT_FATAL(ts_set_backing(ts, &src, "gen") == OOC_OK);
  ts_set_loading(ts, 1);
  for (int64_t tj = 0; tj < 4; tj++) { /* columns 0-3 as the loader puts them; 4 never */
    gen_read(NULL, 0, tj * b, n, b, col, n);
    CU_ASSERT_FATAL(ts_put_col(ts, tj, col, n) == OOC_OK);
  }
  ts_set_loading(ts, 0);
  const ts_stats_t *st = ts_stats(ts);
  CU_ASSERT(st->drops >= 8 && st->bytes_dropped == st->drops * 8 * 64);
  CU_ASSERT_EQUAL(st->spills, 0);
  CU_ASSERT_EQUAL(ms.puts, 0);
  int bad = 0;
  for (int64_t tj = 0; tj < 5; tj++) /* every tile as loaded (or zero), wherever it is */
    for (int64_t ti = 0; ti < 5; ti++) {
      CU_ASSERT_FATAL(ts_read(ts, ti, tj, buf, 8) == OOC_OK);
      for (int64_t q = 0; q < 64; q++)
        bad += buf[q] != (tj < 4 ? val(ti * 8 + q % 8, tj * 8 + q / 8) : 0.0);
    }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT(st->bytes_source > 0);
  g_src_bias = 1.0; /* the source changed under the store: what went back to it is refused */
  CU_ASSERT(ts_read(ts, 0, 0, buf, 8) == OOC_ERR_CORRUPT);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "gen: tile (0, 0)") != NULL);
  CU_ASSERT(ts_read_rect(ts, 1, 1, 3, 3, buf, 3) == OOC_ERR_CORRUPT);
  CU_ASSERT(ts_read(ts, 0, 4, buf, 8) == OOC_OK && buf[0] == 0.0); /* never put: zeros */
  ooc_clear_error(ctx);
  g_src_bias = 0;
  /* dirty: a put after the load (tile (0, 0)), a write lend (column 3, cached clean), row swaps
   * (column 2) */
  for (int64_t q = 0; q < 64; q++) buf[q] = -1.0;
  CU_ASSERT(ts_put(ts, 0, 0, buf, 8) == OOC_OK);
  double *p[5];
  int lent;
  CU_ASSERT_FATAL(ts_lend(ts, 0, 5, 3, 1, p, &lent) == OOC_OK && lent == 1);
  for (int64_t ti = 0; ti < 5; ti++)
    for (int64_t q = 0; q < 64; q++) p[ti][q] = -2.0;
  ts_return(ts, 0, 5, 3, 0);
  for (int64_t ti = 0; ti < 5; ti++) { /* column 2 cached again, clean (as the loader) */
    gen_read(NULL, ti * 8, 16, 8, 8, buf, 8);
    ts_set_loading(ts, 1);
    CU_ASSERT(ts_put(ts, ti, 2, buf, 8) == OOC_OK);
    ts_set_loading(ts, 0);
  }
  int64_t ipiv[40];
  for (int64_t r = 0; r < 40; r++) ipiv[r] = r;
  ipiv[3] = 35;
  int done = 0;
  CU_ASSERT(ts_swap_rows(ts, 0, 5, 2, 3, 4, ipiv, &done) == OOC_OK && done == 1);
  /* 14 new tiles in a cache of 12 evict all 11 dirty ones: column 4 (written after the load),
   * then column 1 and column 0 below its first tile as the loader puts them */
  int64_t spills = st->spills;
  for (int64_t q = 0; q < 64; q++) buf[q] = 4.0;
  for (int64_t ti = 0; ti < 5; ti++) CU_ASSERT(ts_put(ts, ti, 4, buf, 8) == OOC_OK);
  ts_set_loading(ts, 1);
  for (int64_t ti = 0; ti < 5; ti++) {
    gen_read(NULL, ti * 8, 8, 8, 8, buf, 8);
    CU_ASSERT(ts_put(ts, ti, 1, buf, 8) == OOC_OK);
    if (ti == 0) continue;
    gen_read(NULL, ti * 8, 0, 8, 8, buf, 8);
    CU_ASSERT(ts_put(ts, ti, 0, buf, 8) == OOC_OK);
  }
  ts_set_loading(ts, 0);
  CU_ASSERT(st->spills >= spills + 11);
  CU_ASSERT(ts_read(ts, 0, 0, buf, 8) == OOC_OK && buf[9] == -1.0);
  CU_ASSERT(ts_read(ts, 2, 3, buf, 8) == OOC_OK && buf[63] == -2.0);
  CU_ASSERT(ts_read(ts, 0, 2, buf, 8) == OOC_OK && buf[3] == val(35, 16)); /* swapped, kept */
  CU_ASSERT(ts_read(ts, 4, 2, buf, 8) == OOC_OK && buf[3] == val(3, 16));
  CU_ASSERT(ts_read(ts, 1, 1, buf, 8) == OOC_OK && buf[10] == val(10, 9)); /* clean */
  /* a checkpoint: dirty cached tiles written, clean ones (cached or not) the source's */
  for (int64_t ti = 0; ti < 5; ti++) { /* column 1 cached and clean */
    gen_read(NULL, ti * 8, 8, 8, 8, buf, 8);
    ts_set_loading(ts, 1);
    CU_ASSERT(ts_put(ts, ti, 1, buf, 8) == OOC_OK);
    ts_set_loading(ts, 0);
  }
  int puts = ms.puts;
  CU_ASSERT_FATAL(ts_flush(ts) == OOC_OK);
  uint8_t where[25];
  int clean = 0;
  for (int64_t idx = 0; idx < 25; idx++) {
    int w = ts_where(ts, idx);
    CU_ASSERT(w >= 0 && w <= 2);
    where[idx] = (uint8_t)w;
    clean += w == 2;
  }
  CU_ASSERT_EQUAL(where[0], 1);      /* tile (0, 0): dirty */
  CU_ASSERT_EQUAL(where[1 * 5 + 1], 2); /* tile (1, 1): clean, cached */
  CU_ASSERT_EQUAL(where[2 * 5 + 3], 1); /* tile (2, 3): written by a borrower */
  CU_ASSERT_EQUAL(where[0 * 5 + 2], 1); /* tile (0, 2): swapped */
  CU_ASSERT(clean >= 5 && ms.puts - puts <= 25 - clean);
  CU_ASSERT_FATAL(ts_restore(ts, where) == OOC_OK);
  CU_ASSERT(ts_read(ts, 1, 1, buf, 8) == OOC_OK && buf[10] == val(10, 9));
  CU_ASSERT(ts_read(ts, 2, 3, buf, 8) == OOC_OK && buf[63] == -2.0);
  CU_ASSERT(ts_read(ts, 0, 0, buf, 8) == OOC_OK && buf[9] == -1.0);
  CU_ASSERT(ts_read(ts, 0, 2, buf, 8) == OOC_OK && buf[3] == val(35, 16));
  tstore_t *t2; /* a where 2 needs a source */
  CU_ASSERT_FATAL(tstore_create(ctx, c, n, n, b, NULL, &sp, &t2) == OOC_OK);
  CU_ASSERT(ts_restore(t2, where) == OOC_ERR_INTERNAL);
  ooc_clear_error(ctx);
  tstore_destroy(t2);
  tstore_destroy(ts);
  tcache_destroy(c);
  ms_free(&ms);
  tu_ctx_done(ctx);
}

/* TS_LOAD_KEEP (issue 27): a load taller than the cache keeps its first tiles and leaves the
 * rest in the source (dropped with their checksums, nothing evicted, nothing spilled), so the
 * first columns are then read from the cache and only the later ones from the source, checked;
 * with the plain loading mode (LRU) the first columns would have been evicted. One copy thread
 * and four (the checksums queued on the threads). */
static void t_load_keep(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_source_t src = {NULL, gen_read, NULL, NULL};
  enum { N = 96, B = 8, T = N / B, C = 30 }; /* 144 tiles; 30 fit: columns 0, 1, 6 tiles of 2 */
  double col[N * B], buf[B * B];
  for (int threads = 1; threads <= 4; threads += 3) {
    memspill_t ms = {.ctx = ctx};
    ooc_spill_ops_t sp = {&ms, ms_open, ms_put, ms_get, 1};
    tcache_t *c;
    tstore_t *ts;
    CU_ASSERT_FATAL(tcache_create(ctx, C * (tcache_entry_bytes() + 8 * B * B), &c) == OOC_OK);
    tcache_set_threads(c, threads);
    CU_ASSERT_FATAL(tstore_create(ctx, c, N, N, B, NULL, &sp, &ts) == OOC_OK);
    CU_ASSERT_FATAL(ts_set_backing(ts, &src, "gen") == OOC_OK);
    ts_set_loading(ts, TS_LOAD_KEEP);
    for (int64_t tj = 0; tj < T; tj++) {
      gen_read(NULL, 0, tj * B, N, B, col, N);
      CU_ASSERT_FATAL(ts_put_col(ts, tj, col, N) == OOC_OK);
    }
    ts_set_loading(ts, 0);
    const ts_stats_t *st = ts_stats(ts);
    CU_ASSERT_EQUAL(st->drops, T * T - C);
    CU_ASSERT_EQUAL(st->spills, 0);
    CU_ASSERT_EQUAL(ms.puts, 0);
    CU_ASSERT_EQUAL(st->bytes_source, 0);
    int bad = 0;
    for (int64_t q = 0; q < C; q++) { /* the first C tiles in the load's order: cached */
      int64_t ti = q % T, tj = q / T;
      CU_ASSERT_FATAL(ts_read(ts, ti, tj, buf, B) == OOC_OK);
      for (int64_t e = 0; e < B * B; e++) bad += buf[e] != val(ti * B + e % B, tj * B + e / B);
    }
    CU_ASSERT_EQUAL(st->bytes_source, 0);
    for (int64_t tj = T - 1; tj >= C / T; tj--) /* the rest from the source, checked */
      for (int64_t ti = tj == C / T ? C % T : 0; ti < T; ti++) {
        CU_ASSERT_FATAL(ts_read(ts, ti, tj, buf, B) == OOC_OK);
        for (int64_t e = 0; e < B * B; e++) bad += buf[e] != val(ti * B + e % B, tj * B + e / B);
      }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(st->bytes_source, (T * T - C) * 8 * B * B);
    g_src_bias = 1.0; /* what went back to the source was checksummed from the load's buffer */
    CU_ASSERT(ts_read(ts, T - 1, T - 1, buf, B) == OOC_ERR_CORRUPT);
    ooc_clear_error(ctx);
    g_src_bias = 0;
    tstore_destroy(ts);
    tcache_destroy(c);
    ms_free(&ms);
  }
  tu_ctx_done(ctx);
}

static void t_parse_size(void) {
  CU_ASSERT_EQUAL(ooc_parse_size("4096"), 4096);
  CU_ASSERT_EQUAL(ooc_parse_size("64M"), 64LL << 20);
  CU_ASSERT_EQUAL(ooc_parse_size("2G"), 2LL << 30);
  CU_ASSERT_EQUAL(ooc_parse_size("1.5GiB"), 3LL << 29);
  CU_ASSERT_EQUAL(ooc_parse_size("8k"), 8192);
  CU_ASSERT_EQUAL(ooc_parse_size("12x"), -1);
  CU_ASSERT_EQUAL(ooc_parse_size("-3M"), -1);
  CU_ASSERT_EQUAL(ooc_parse_size(""), -1);
  CU_ASSERT_EQUAL(ooc_parse_size("M"), -1);
}

static void t_xxh64_known_values(void) {
  /* Reference values of XXH64 (seed 0) from the algorithm's specification test vectors. */
  CU_ASSERT_EQUAL(ooc_xxh64("", 0, 0), 0xEF46DB3751D8E999ULL);
  CU_ASSERT_EQUAL(ooc_xxh64("a", 1, 0), 0xD24EC4F1A98C6E5BULL);
  CU_ASSERT_EQUAL(ooc_xxh64("abc", 3, 0), 0x44BC2CF5AD770999ULL);
}

static void t_xxh3_known_values(void) {
  /* XXH3-64 (seed 0) of byte patterns whose lengths reach every path of the algorithm (0, 1-3,
   * 4-8, 9-16, 17-128, 129-240, more than 240: whole and partial blocks of 1024), values from
   * the xxHash library 0.8 (XXH3_64bits). */
  static const struct {
    size_t len;
    uint64_t sum;
  } v[] = {
      {0, 0x2D06800538D394C2ULL},     {1, 0x4C5CCA45D0F4811FULL},
      {3, 0x6E3E2670E61106ACULL},     {4, 0x5C4C63133443D03FULL},
      {8, 0xF9FD4DD0B04D78F5ULL},     {9, 0x7C20DF9712C26EDFULL},
      {16, 0x86ABF6BACCEA0858ULL},    {17, 0xB58BF5DC5022D071ULL},
      {128, 0x10D17F72C0CCBA41ULL},   {129, 0x1648BDC3DB49D1A2ULL},
      {240, 0xB6CFAF343FAB81E6ULL},   {241, 0x956CAE592C67279EULL},
      {1024, 0x70BD377D9574F4BBULL},  {1025, 0x66C4487C41E127A7ULL},
      {2051, 0x238337CB257A58E0ULL},  {100000, 0x14CE8D6FC2C4868BULL},
  };
  unsigned char *b = malloc(100000);
  CU_ASSERT_FATAL(b != NULL);
  for (int i = 0; i < 100000; i++) b[i] = (unsigned char)(i * 131 + 7);
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    CU_ASSERT_EQUAL(ooc_xxh3(b, v[k].len), v[k].sum);
    /* the same bytes cut into columns (lengths that do and do not divide 64 and 1024), spread
     * out with gaps between them, hash the same */
    static const size_t cuts[] = {1, 7, 64, 100, 1024, 2048};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
      size_t cb = cuts[c], nc = cb ? v[k].len / cb : 0, stride = cb + 24;
      if (nc < 2 || nc * cb != v[k].len) continue;
      unsigned char *spread = malloc(nc * stride);
      CU_ASSERT_FATAL(spread != NULL);
      memset(spread, 0xA5, nc * stride);
      for (size_t j = 0; j < nc; j++) memcpy(spread + j * stride, b + j * cb, cb);
      CU_ASSERT_EQUAL(ooc_xxh3_cols(spread, cb, nc, stride), v[k].sum);
      free(spread);
    }
  }
  CU_ASSERT_EQUAL(ooc_xxh3("abc", 3), 0x78AF5F94892F3950ULL);
  CU_ASSERT_NOT_EQUAL(ooc_xxh3(b, 4096), ooc_xxh3(b + 1, 4096));
  free(b);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"64-bit tile arithmetic at n = 46341 and 100000", t_part_large},
      {"cache budget, LRU and spill round trip", t_cache_budget_and_spill},
      {"zero-capacity cache writes through", t_cache_zero_capacity},
      {"no scratch: budget error", t_no_spill_is_budget_error},
      {"buffers recycled, budget kept", t_cache_recycles_buffers},
      {"column copies on threads, cache smaller than a column", t_threaded_column_copies},
      {"evictions together: written side by side, a failed write, clean victims", t_evict_together},
      {"a put taller than the cache: its evictions in groups, none alone", t_put_taller_than_cache},
      {"blocks of tiles: every state, threads, take/put", t_tile_blocks},
      {"rectangles at any offset: every state, threads, only the part read", t_rects},
      {"prefill: free room only, reused by puts, steps, faults", t_prefill},
      {"prefill in the background: puts after the wait, a put without it, out of memory",
       t_prefill_start},
      {"row swaps in place: as laswp, refused ranges, not when a tile is not cached", t_swap_rows},
      {"lending: read and write lends, checked out, never evicted, half the cache, pins", t_lend},
      {"pinned as made (tcache_pin_new), the same pinner kept", t_pin_new},
      {"pinned later, in the background (TCACHE_PIN_LATER)", t_pin_later},
      {"read-ahead: strips in order, reversed, by rows; one read at a time; failures", t_readahead},
      {"a source behind the loaded tiles: dropped, not spilled; dirty ones spilled; checkpoints", t_backing},
      {"a load taller than the cache keeps its first tiles, the rest left in the source", t_load_keep},
      {"size parsing", t_parse_size},
      {"xxh64 test vectors", t_xxh64_known_values},
      {"xxh3 test vectors, whole and in columns", t_xxh3_known_values},
      {NULL, NULL}};
  return tu_run("tiling", tests);
}
