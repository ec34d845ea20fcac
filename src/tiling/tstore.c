/* tstore.c: the host tile cache (LRU, byte budget) and tile stores. See tstore.h. */
#include "tiling/tstore.h"

#include <string.h>

enum { T_SOURCE = 0, T_CACHED, T_SPILLED, T_TAKEN, T_ZERO };

typedef struct entry {
  struct entry *prev, *next; /* prev = more recently used */
  tstore_t *ts;
  int64_t idx;
  int64_t charge; /* bytes charged to the cache: header + payload */
  double data[];
} entry_t;

struct tcache {
  ooc_ctx_t *ctx;
  int64_t cap, used, peak;
  entry_t *head, *tail; /* head = most recently used */
};

struct tstore {
  ooc_ctx_t *ctx;
  tcache_t *cache;
  part_t rows, cols;
  ooc_source_t source;
  int has_source;
  ooc_spill_ops_t spill;
  int has_spill;
  void *spill_handle;
  uint8_t *state;
  entry_t **ent;
  double *staging; /* one tile, for scratch transfers with a foreign leading dimension */
  ts_stats_t st;
};

/* ---- cache ------------------------------------------------------------------------------- */

ooc_status_t tcache_create(ooc_ctx_t *ctx, int64_t cap, tcache_t **out) {
  tcache_t *c = ooc_calloc(ctx, 1, sizeof *c);
  if (!c) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory creating the tile cache");
  c->ctx = ctx;
  c->cap = cap < 0 ? 0 : cap;
  *out = c;
  return OOC_OK;
}

int64_t tcache_capacity(const tcache_t *c) { return c->cap; }
int64_t tcache_used(const tcache_t *c) { return c->used; }
int64_t tcache_peak(const tcache_t *c) { return c->peak; }
void tcache_destroy(tcache_t *c) {
  if (c) ooc_free(c->ctx, c);
}

static void lru_unlink(tcache_t *c, entry_t *e) {
  if (e->prev) e->prev->next = e->next;
  else c->head = e->next;
  if (e->next) e->next->prev = e->prev;
  else c->tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_push_front(tcache_t *c, entry_t *e) {
  e->prev = NULL;
  e->next = c->head;
  if (c->head) c->head->prev = e;
  c->head = e;
  if (!c->tail) c->tail = e;
}

static void entry_free(tcache_t *c, entry_t *e) {
  lru_unlink(c, e);
  c->used -= e->charge;
  e->ts->ent[e->idx] = NULL;
  ooc_free(c->ctx, e);
}

/* ---- store ------------------------------------------------------------------------------- */

int64_t tstore_overhead_bytes(int64_t rows, int64_t cols, int64_t b) {
  int64_t nt = ooc_cdiv64(rows, b) * ooc_cdiv64(cols, b);
  return (int64_t)sizeof(tstore_t) + nt * (int64_t)(1 + sizeof(entry_t *)) + b * b * 8;
}

ooc_status_t tstore_create(ooc_ctx_t *ctx, tcache_t *cache, int64_t rows, int64_t cols, int64_t b,
                           const ooc_source_t *source, const ooc_spill_ops_t *spill,
                           tstore_t **out) {
  *out = NULL;
  if (rows < 0 || cols < 0 || b <= 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "tile store: bad shape %lld x %lld, tile %lld",
                    (long long)rows, (long long)cols, (long long)b);
  tstore_t *ts = ooc_calloc(ctx, 1, sizeof *ts);
  if (!ts) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory creating a tile store");
  ts->ctx = ctx;
  ts->cache = cache;
  ts->rows = part_make(rows, b);
  ts->cols = part_make(cols, b);
  if (source) {
    ts->source = *source;
    ts->has_source = 1;
  }
  if (spill) {
    ts->spill = *spill;
    ts->has_spill = 1;
  }
  int64_t nt = ts->rows.count * ts->cols.count;
  ts->state = ooc_calloc(ctx, (size_t)(nt ? nt : 1), 1);
  ts->ent = ooc_calloc(ctx, (size_t)(nt ? nt : 1), sizeof *ts->ent);
  ts->staging = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  if (!ts->state || !ts->ent || !ts->staging) {
    tstore_destroy(ts);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the tile index (%lld tiles)",
                    (long long)nt);
  }
  *out = ts;
  return OOC_OK;
}

void tstore_destroy(tstore_t *ts) {
  if (!ts) return;
  if (ts->ent) {
    int64_t nt = ts->rows.count * ts->cols.count;
    for (int64_t i = 0; i < nt; i++)
      if (ts->ent[i]) entry_free(ts->cache, ts->ent[i]);
  }
  ooc_free(ts->ctx, ts->state);
  ooc_free(ts->ctx, ts->ent);
  ooc_free(ts->ctx, ts->staging);
  ooc_free(ts->ctx, ts);
}

part_t ts_rows(const tstore_t *ts) { return ts->rows; }
part_t ts_cols(const tstore_t *ts) { return ts->cols; }
const ts_stats_t *ts_stats(const tstore_t *ts) { return &ts->st; }

static void copy_block(int64_t nr, int64_t nc, const double *src, int64_t lds, double *dst,
                       int64_t ldd) {
  if (lds == nr && ldd == nr) {
    memcpy(dst, src, (size_t)(nr * nc) * sizeof(double));
    return;
  }
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ldd, src + j * lds, (size_t)nr * sizeof(double));
}

static ooc_status_t spill_write(tstore_t *ts, int64_t idx, const double *data, int64_t bytes) {
  if (!ts->has_spill)
    return OOC_FAIL(ts->ctx, OOC_ERR_BUDGET,
                    "the host budget is too small and spilling to scratch is not available");
  double t0 = ooc_now();
  if (!ts->spill_handle)
    OOC_TRY(ts->spill.open(ts->spill.self, (size_t)(ts->rows.b * ts->cols.b) * sizeof(double),
                           &ts->spill_handle));
  OOC_TRY(ts->spill.put(ts->spill_handle, idx, data, (size_t)bytes));
  ts->st.t_spill += ooc_now() - t0;
  ts->st.bytes_spilled += bytes;
  ts->st.spills++;
  ts->state[idx] = T_SPILLED;
  return OOC_OK;
}

/* Evict least-recently-used tiles (of any store) until `need` more bytes fit. */
static ooc_status_t make_room(tcache_t *c, int64_t need) {
  while (c->used + need > c->cap && c->tail) {
    entry_t *e = c->tail;
    int64_t bytes = e->charge - (int64_t)sizeof(entry_t);
    OOC_TRY(spill_write(e->ts, e->idx, e->data, bytes));
    entry_free(c, e);
  }
  return OOC_OK;
}

static int64_t tile_index(const tstore_t *ts, int64_t ti, int64_t tj, int64_t *nr, int64_t *nc) {
  *nr = part_len(ts->rows, ti);
  *nc = part_len(ts->cols, tj);
  return ti * ts->cols.count + tj;
}

/* Copy tile content to dst; `forget` makes the tile TAKEN (take) rather than leaving it (read). */
static ooc_status_t fetch(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld,
                          int forget) {
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  int64_t bytes = nr * nc * (int64_t)sizeof(double);
  switch (ts->state[idx]) {
  case T_CACHED: {
    entry_t *e = ts->ent[idx];
    copy_block(nr, nc, e->data, nr, dst, ld);
    ts->st.hits++;
    if (forget) entry_free(ts->cache, e);
    break;
  }
  case T_SPILLED: {
    double t0 = ooc_now();
    OOC_TRY(ts->spill.get(ts->spill_handle, idx, ts->staging, (size_t)bytes));
    ts->st.t_spill += ooc_now() - t0;
    ts->st.bytes_unspilled += bytes;
    ts->st.misses++;
    copy_block(nr, nc, ts->staging, nr, dst, ld);
    break;
  }
  case T_SOURCE:
    if (ts->has_source) {
      double t0 = ooc_now();
      OOC_TRY(ts->source.read(ts->source.self, part_start(ts->rows, ti), part_start(ts->cols, tj),
                              nr, nc, dst, ld));
      ts->st.t_source += ooc_now() - t0;
      ts->st.bytes_source += bytes;
      ts->st.misses++;
      break;
    }
    for (int64_t j = 0; j < nc; j++) memset(dst + j * ld, 0, (size_t)nr * sizeof(double));
    break; /* a store without source starts as zeros */
  case T_ZERO:
    for (int64_t j = 0; j < nc; j++) memset(dst + j * ld, 0, (size_t)nr * sizeof(double));
    break;
  default:
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "tile (%lld, %lld) read while checked out",
                    (long long)ti, (long long)tj);
  }
  if (forget) ts->state[idx] = T_TAKEN;
  return OOC_OK;
}

ooc_status_t ts_take(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld) {
  return fetch(ts, ti, tj, dst, ld, 1);
}

ooc_status_t ts_read(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld) {
  return fetch(ts, ti, tj, dst, ld, 0);
}

ooc_status_t ts_put(tstore_t *ts, int64_t ti, int64_t tj, const double *src, int64_t ld) {
  tcache_t *c = ts->cache;
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  int64_t bytes = nr * nc * (int64_t)sizeof(double);
  if (ts->state[idx] == T_CACHED) {
    entry_t *e = ts->ent[idx];
    copy_block(nr, nc, src, ld, e->data, nr);
    lru_unlink(c, e);
    lru_push_front(c, e);
    return OOC_OK;
  }
  int64_t charge = (int64_t)sizeof(entry_t) + bytes;
  if (charge > c->cap) { /* can never be cached: straight to scratch */
    const double *p = src;
    if (ld != nr) {
      copy_block(nr, nc, src, ld, ts->staging, nr);
      p = ts->staging;
    }
    return spill_write(ts, idx, p, bytes);
  }
  OOC_TRY(make_room(c, charge));
  entry_t *e = ooc_malloc(ts->ctx, (size_t)charge);
  if (!e)
    return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory caching a %lld x %lld tile",
                    (long long)nr, (long long)nc);
  e->ts = ts;
  e->idx = idx;
  e->charge = charge;
  copy_block(nr, nc, src, ld, e->data, nr);
  lru_push_front(c, e);
  ts->ent[idx] = e;
  ts->state[idx] = T_CACHED;
  c->used += charge;
  if (c->used > c->peak) c->peak = c->used;
  return OOC_OK;
}

void ts_drop(tstore_t *ts, int64_t ti, int64_t tj) {
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  if (ts->state[idx] == T_CACHED) entry_free(ts->cache, ts->ent[idx]);
  ts->state[idx] = T_ZERO;
}

ooc_status_t ts_take_col(tstore_t *ts, int64_t tj, double *dst, int64_t ld) {
  for (int64_t ti = 0; ti < ts->rows.count; ti++)
    OOC_TRY(ts_take(ts, ti, tj, dst + part_start(ts->rows, ti), ld));
  return OOC_OK;
}

ooc_status_t ts_put_col(tstore_t *ts, int64_t tj, const double *src, int64_t ld) {
  for (int64_t ti = 0; ti < ts->rows.count; ti++)
    OOC_TRY(ts_put(ts, ti, tj, src + part_start(ts->rows, ti), ld));
  return OOC_OK;
}

/* ---- checkpoints (new functions only, see tstore.h) ---------------------------------------- */

static ooc_status_t open_spill(tstore_t *ts) {
  if (!ts->has_spill)
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "checkpoint of a tile store without scratch");
  if (!ts->spill_handle)
    OOC_TRY(ts->spill.open(ts->spill.self, (size_t)(ts->rows.b * ts->cols.b) * sizeof(double),
                           &ts->spill_handle));
  return OOC_OK;
}

ooc_status_t ts_flush(tstore_t *ts) {
  if (!ts) return OOC_OK;
  int64_t nt = ts->rows.count * ts->cols.count;
  for (int64_t idx = 0; idx < nt; idx++) {
    uint8_t s = ts->state[idx];
    if (s == T_TAKEN || (s == T_SOURCE && ts->has_source))
      return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "checkpoint with tile %lld %s", (long long)idx,
                      s == T_TAKEN ? "checked out" : "never read from its source");
    if (s != T_CACHED) continue;
    entry_t *e = ts->ent[idx];
    int64_t bytes = e->charge - (int64_t)sizeof(entry_t);
    double t0 = ooc_now();
    OOC_TRY(open_spill(ts));
    OOC_TRY(ts->spill.put(ts->spill_handle, idx, e->data, (size_t)bytes));
    ts->st.t_spill += ooc_now() - t0;
    ts->st.bytes_spilled += bytes;
  }
  return OOC_OK;
}

int ts_where(const tstore_t *ts, int64_t idx) {
  switch (ts->state[idx]) {
  case T_ZERO: return 0;
  case T_SOURCE: return ts->has_source ? -1 : 0;
  case T_SPILLED:
  case T_CACHED: return 1; /* CACHED: valid only right after ts_flush, as documented */
  default: return -1;
  }
}

ooc_status_t ts_restore(tstore_t *ts, const uint8_t *where) {
  int64_t nt = ts->rows.count * ts->cols.count;
  int any = 0;
  for (int64_t idx = 0; idx < nt; idx++) {
    if (ts->ent[idx]) entry_free(ts->cache, ts->ent[idx]);
    ts->state[idx] = where[idx] == 1 ? T_SPILLED : T_ZERO;
    any |= where[idx] == 1;
  }
  if (any) OOC_TRY(open_spill(ts));
  return OOC_OK;
}

void *ts_spill_handle(const tstore_t *ts) { return ts ? ts->spill_handle : NULL; }
