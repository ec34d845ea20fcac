/* tstore.c: the host tile cache (LRU, byte budget, recycled buffers, copies on the pool's
 * threads) and tile stores. See tstore.h. */
#include "tiling/tstore.h"

#include "base/parloop.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { T_SOURCE = 0, T_CACHED, T_SPILLED, T_TAKEN, T_ZERO, T_LENT };

/* A copy smaller than this stays on the calling thread: waking threads costs more than it saves. */
#define PAR_MIN_BYTES ((int64_t)4 << 20)
/* The unit a copy thread claims at a time: large enough to amortise the claim, small enough to
 * balance a column of a few tiles over 8 threads. */
#define PIECE_BYTES ((int64_t)1 << 20)
#define MAX_THREADS OOC_PAR_MAX_THREADS /* the most one loop of the pool takes */
#define DEFAULT_MAX_THREADS 16 /* 8 threads reached 33-43 GB/s on a 16-core GPU host, 5.7 with 1 */
/* A copy at least this large writes its destination with streaming (non-temporal) stores: it
 * does not fit the caches its reader would find it in anyway (a ring slot that the device reads
 * by DMA, a tile that waits in the cache), and an ordinary store first reads each destination
 * line from memory (read for ownership): three passes over memory per byte instead of two.
 * Measured (tools/stream_copy.c: 8 KiB columns of 1024 x 1024 tiles into a 16384-row slot) on
 * this project's 2-core machine: memcpy 8-10 GB/s a thread, streaming stores 14-17 (1.5-1.7x). */
#define STREAM_MIN_BYTES ((int64_t)4 << 20)

typedef struct entry {
  struct entry *prev, *next; /* LRU list (prev = more recently used), or the pool (next) */
  tstore_t *ts;
  int64_t idx;
  int64_t charge; /* bytes charged to the cache: header + payload */
  int16_t lent;   /* lent (ts_lend): in the LRU list, but never evicted */
  int16_t pin;    /* 0 not asked, 1 pinned (unpin before free), -1 refused, 2 to be pinned once
                     its first copy is done (tcache_pin_new) */
  int16_t clean;  /* its content is the store's source's (put while loading, ts_set_loading):
                     evicted, it goes back to the source instead of to scratch */
  double data[];
} entry_t;

/* One copy of nr x nc doubles from src (leading dimension lds) to dst (ldd); src NULL fills
 * zeros, or with touch only writes a byte per page (ts_prefill: the first touch of a new buffer,
 * whose content does not matter). Cut into pieces of cpp columns, numbered from `first` among
 * the batch's pieces. */
typedef struct cjob {
  const double *src;
  double *dst;
  int64_t lds, ldd, nr, nc, cpp, first;
  int touch;
  int stream; /* write dst with streaming stores (STREAM_MIN_BYTES) */
} cjob_t;

/* One scratch transfer of the cache's io list (tstore.h "Scratch transfers"): run on the copy
 * threads side by side where the spill ops are concurrent, else on the calling thread. */
enum { SJ_READ, SJ_WRITE, SJ_SUM };
typedef struct sjob {
  tstore_t *ts;
  int64_t idx, nr, nc, ld;
  double *data; /* READ: the destination (ld); WRITE and SUM: the victim's tile (ld = nr), or
                   SUM: a kept load's tile that goes straight back (ts_put_tiles: ld, read) */
  struct entry *victim; /* WRITE and SUM: the entry evicted (make_room); NULL: none (a load's) */
  int kind;     /* SJ_READ: scratch into data; SJ_WRITE: data to scratch; SJ_SUM: a clean tile's
                   checksum before it goes back to its source (drop_to_source) */
  ooc_status_t st;
} sjob_t;

struct tcache {
  ooc_ctx_t *ctx;
  int64_t cap, used, pooled, peak;
  entry_t *head, *tail; /* head = most recently used */
  entry_t *pool;        /* recycled buffers (charged as pooled) */
  int threads;          /* copy threads including the caller */
  ooc_par_group_t copy; /* the batch, on the pool (base/parloop.h) while running */
  int running;          /* a batch is handed to the pool */
  /* the batch being built: copies, and taken entries that go to the pool once they are done */
  cjob_t *jobs;
  int64_t njobs, capjobs, jbytes;
  entry_t **pend;
  int64_t npend, cappend;
  /* lending (tstore.h): the pinner, and what it did */
  int (*pin)(void *user, void *p, size_t bytes);
  void (*unpin)(void *user, void *p);
  void *pin_user;
  int pin_new; /* pin each buffer as it is made (tcache_pin_new), not when first lent */
  int pin_later; /* TCACHE_PIN_LATER: the queue waits for tcache_pin_start, not each batch */
  entry_t **topin; /* made under pin_new, pinned when the batch that fills them is done */
  int64_t ntopin, captopin;
  ooc_task_t pin_task; /* tcache_pin_start's pinning of the queue */
  int64_t pinned, pin_refused;
  int64_t lent; /* bytes of lent tiles (at most half the capacity: ts_lend) */
  /* scratch transfers (sjob_t): the list, and its loop on the pool while it runs */
  sjob_t *io;
  int64_t nio, capio;
  ooc_par_group_t iog;
  int io_running;
};

struct tstore {
  ooc_ctx_t *ctx;
  tcache_t *cache;
  part_t rows, cols;
  ooc_source_t source;
  int has_source;
  int loading; /* puts are the source's content (ts_set_loading: 0, 1, TS_LOAD_KEEP) */
  const char *source_name; /* ts_set_backing: for messages */
  uint64_t *srcsum; /* ts_set_backing: per tile, XXH3 of what went back to the source (0: not
                       known), checked when it is read back */
  ooc_spill_ops_t spill;
  int has_spill;
  void *spill_handle;
  uint8_t *state;
  entry_t **ent;
  double *staging; /* one tile, for scratch transfers with a foreign leading dimension */
  ts_stats_t st;
};

/* ---- copies --------------------------------------------------------------------------------- */

#define TOUCH_STRIDE 4096 /* the smallest page size: one write per page faults each in */

/* n doubles from s to d with streaming stores (the caller fences). */
static void stream_copy(double *restrict d, const double *restrict s, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (((uintptr_t)d & 15) && n > 0) { /* d to a 16-byte boundary: doubles are 8-aligned */
    d[0] = s[0];
    i = 1;
  }
  for (; i + 8 <= n; i += 8) {
    _mm_stream_pd(d + i, _mm_loadu_pd(s + i));
    _mm_stream_pd(d + i + 2, _mm_loadu_pd(s + i + 2));
    _mm_stream_pd(d + i + 4, _mm_loadu_pd(s + i + 4));
    _mm_stream_pd(d + i + 6, _mm_loadu_pd(s + i + 6));
  }
#endif
  for (; i < n; i++) d[i] = s[i];
}

static void copy_cols(const cjob_t *j, int64_t c0, int64_t c1) {
  size_t colb = (size_t)j->nr * sizeof(double);
  if (j->touch) { /* contiguous (ldd == nr): a store per page, not a memset of the whole range */
    char *p = (char *)(j->dst + c0 * j->ldd), *e = (char *)(j->dst + c1 * j->ldd);
    if (p < e) e[-1] = 0; /* the last page, which the stride may step over */
    for (; p < e; p += TOUCH_STRIDE) *p = 0;
  } else if (!j->src) {
    if (j->ldd == j->nr) memset(j->dst + c0 * j->ldd, 0, colb * (size_t)(c1 - c0));
    else
      for (int64_t c = c0; c < c1; c++) memset(j->dst + c * j->ldd, 0, colb);
  } else if (j->stream) {
    if (j->lds == j->nr && j->ldd == j->nr)
      stream_copy(j->dst + c0 * j->nr, j->src + c0 * j->nr, j->nr * (c1 - c0));
    else
      for (int64_t c = c0; c < c1; c++) stream_copy(j->dst + c * j->ldd, j->src + c * j->lds, j->nr);
#if defined(__SSE2__)
    _mm_sfence(); /* streaming stores are weakly ordered: visible before the batch says done */
#endif
  } else if (j->lds == j->nr && j->ldd == j->nr) {
    memcpy(j->dst + c0 * j->nr, j->src + c0 * j->nr, colb * (size_t)(c1 - c0));
  } else {
    for (int64_t c = c0; c < c1; c++) memcpy(j->dst + c * j->ldd, j->src + c * j->lds, colb);
  }
}

/* Piece k of the batch (pieces numbered across its copies by batch_start). */
static void copy_piece(void *arg, int64_t k, int worker) {
  (void)worker;
  const tcache_t *c = arg;
  int64_t lo = 0, hi = c->njobs - 1; /* the last job whose first piece is <= k */
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (c->jobs[mid].first <= k) lo = mid;
    else hi = mid - 1;
  }
  const cjob_t *j = &c->jobs[lo];
  int64_t c0 = (k - j->first) * j->cpp;
  copy_cols(j, c0, ooc_min64(j->nc, c0 + j->cpp));
}

/* ---- pinning (tstore.h "Lending") ---------------------------------------------------------- */

/* A queued buffer (pin 2) out of the queue (pinned now, or freed). */
static void unqueue(tcache_t *c, entry_t *e) {
  if (e->pin == 2)
    for (int64_t i = 0; i < c->ntopin; i++)
      if (c->topin[i] == e) c->topin[i] = NULL;
}

/* A buffer pinned by the cache's pinner (asked once: a refusal is remembered). */
static void pin_entry(tcache_t *c, entry_t *e) {
  unqueue(c, e);
  e->pin = c->pin(c->pin_user, e, (size_t)e->charge) ? 1 : -1;
  if (e->pin > 0) c->pinned += e->charge;
  else c->pin_refused++;
}

/* The cache's lists (copies, pending buffers, buffers to pin, scratch transfers): a list's
 * array of `used` elements of `elem` bytes moved into a new one of `cap`; NULL when host memory
 * ran out (the old array is left as it was), else the new one (the old is freed). */
static void *list_grow(ooc_ctx_t *ctx, void *arr, int64_t used, int64_t cap, size_t elem) {
  void *p = ooc_malloc(ctx, (size_t)cap * elem);
  if (!p) return NULL;
  if (used) memcpy(p, arr, (size_t)used * elem);
  ooc_free(ctx, arr);
  return p;
}

/* A new buffer under tcache_pin_new: pinned once the copy that fills it is done (registering
 * touched memory ran at 25-49 GB/s in tools/pin_bench.c; registering fresh memory faults every
 * page in on the calling thread: 2.1 GB/s on an H200 host), or at once if the queue cannot grow. */
static void queue_pin(tcache_t *c, entry_t *e) {
  if (c->ntopin == c->captopin) {
    int64_t cap = ooc_max64(64, 2 * c->captopin);
    entry_t **q = list_grow(c->ctx, c->topin, c->ntopin, cap, sizeof *q);
    if (!q) {
      pin_entry(c, e);
      return;
    }
    c->topin = q;
    c->captopin = cap;
  }
  e->pin = 2;
  c->topin[c->ntopin++] = e;
}

/* The queued buffers pinned (no copy is running: their content is in place). On the caller's
 * thread: pinning them on the pool's 16 threads filled the cache no faster on an H200 host
 * (docs/PERFORMANCE.md, sixth session). */
static void pin_pending(tcache_t *c) {
  for (int64_t i = 0; i < c->ntopin; i++) {
    entry_t *e = c->topin[i];
    c->topin[i] = NULL;
    if (e && e->pin == 2) {
      e->pin = 0; /* out of the queue: it was its only place */
      pin_entry(c, e);
    }
  }
  c->ntopin = 0;
}

static void pin_task(void *c) { pin_pending(c); }

void tcache_pin_start(tcache_t *c) {
  if (c->ntopin) ooc_task_start(&c->pin_task, pin_task, c);
}

void tcache_pin_wait(tcache_t *c) { ooc_task_wait(&c->pin_task); }

static void batch_finish(tcache_t *c);
static int io_grow(tcache_t *c, int64_t n);

/* Room for njobs more copies and pending buffers; 0 when host memory ran out (nothing changed
 * then but what already fit). A batch still running (ts_prefill_start's) is finished first:
 * its group covers only the jobs it started with. */
static int batch_grow(tcache_t *c, int64_t njobs) {
  if (c->running) batch_finish(c);
  if (c->njobs + njobs > c->capjobs) {
    int64_t cap = ooc_max64(16, c->njobs + njobs);
    cjob_t *j = list_grow(c->ctx, c->jobs, c->njobs, cap, sizeof *j);
    if (!j) return 0;
    c->jobs = j;
    c->capjobs = cap;
  }
  if (c->npend + njobs > c->cappend) {
    int64_t cap = ooc_max64(16, c->npend + njobs);
    entry_t **p = list_grow(c->ctx, c->pend, c->npend, cap, sizeof *p);
    if (!p) return 0;
    c->pend = p;
    c->cappend = cap;
  }
  return 1;
}

static ooc_status_t batch_reserve(tcache_t *c, int64_t njobs) {
  return batch_grow(c, njobs) ? OOC_OK
                              : OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "out of host memory (tile copy list)");
}

/* Queue a copy (capacity reserved by batch_reserve). */
static void batch_add(tcache_t *c, const double *src, int64_t lds, double *dst, int64_t ldd,
                      int64_t nr, int64_t nc) {
  if (nr <= 0 || nc <= 0) return;
  c->jobs[c->njobs++] = (cjob_t){src, dst, lds, ldd, nr, nc, 0, 0, 0,
                                 nr * nc * (int64_t)sizeof(double) >= STREAM_MIN_BYTES};
  c->jbytes += nr * nc * (int64_t)sizeof(double);
}

/* Hand the queued copies to the pool's threads (they start at once, while the caller goes on;
 * it joins in batch_finish). Small batches, or one thread, are left for batch_finish to copy on
 * the calling thread. The batch's jobs are not touched until then. */
static void batch_start(tcache_t *c) {
  if (c->running || c->njobs == 0 || c->threads <= 1 || c->jbytes < PAR_MIN_BYTES) return;
  int64_t np = 0;
  for (int64_t i = 0; i < c->njobs; i++) {
    cjob_t *j = &c->jobs[i];
    j->cpp = ooc_max64(1, PIECE_BYTES / (j->nr * (int64_t)sizeof(double)));
    j->first = np;
    np += ooc_cdiv64(j->nc, j->cpp);
  }
  /* at most `threads` copy at once: pool threads now, the caller at the join if one of the
   * workers' places is still free then */
  ooc_par_start(&c->copy, c->threads, np, copy_piece, c);
  c->running = 1;
}

/* Finish every queued copy (helping the pool's threads), then recycle the entries taken
 * meanwhile. */
static void batch_finish(tcache_t *c) {
  if (c->running) {
    ooc_par_join(&c->copy);
    c->running = 0;
  } else {
    for (int64_t i = 0; i < c->njobs; i++) copy_cols(&c->jobs[i], 0, c->jobs[i].nc);
  }
  c->njobs = 0;
  c->jbytes = 0;
  for (int64_t i = 0; i < c->npend; i++) { /* already counted in pooled */
    c->pend[i]->next = c->pool;
    c->pool = c->pend[i];
  }
  c->npend = 0;
  if (!c->pin_later) pin_pending(c);
}

static void batch_run(tcache_t *c) {
  batch_start(c);
  batch_finish(c);
}

/* ---- cache ------------------------------------------------------------------------------- */

static int default_threads(void) { return ooc_par_cpus(DEFAULT_MAX_THREADS); }

ooc_status_t tcache_create(ooc_ctx_t *ctx, int64_t cap, tcache_t **out) {
  tcache_t *c = ooc_calloc(ctx, 1, sizeof *c);
  if (!c) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory creating the tile cache");
  c->ctx = ctx;
  c->cap = cap < 0 ? 0 : cap;
  c->threads = default_threads();
  *out = c;
  return OOC_OK;
}

int64_t tcache_capacity(const tcache_t *c) { return c->cap; }
int64_t tcache_used(const tcache_t *c) { return c->used; }
int64_t tcache_pooled(const tcache_t *c) { return c->pooled; }
int64_t tcache_lent(const tcache_t *c) { return c->lent; }
int64_t tcache_peak(const tcache_t *c) { return c->peak; }
int tcache_threads(const tcache_t *c) { return c->threads; }

void tcache_set_threads(tcache_t *c, int threads) {
  if (threads <= 0) threads = default_threads();
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  c->threads = threads;
}

/* Every tile buffer is freed here: a pinned one is unpinned first. */
static void buf_free(tcache_t *c, entry_t *e) {
  unqueue(c, e);
  if (e->pin == 1) {
    c->unpin(c->pin_user, e);
    c->pinned -= e->charge;
  }
  ooc_free(c->ctx, e);
}

void tcache_trim(tcache_t *c) {
  while (c->pool) {
    entry_t *e = c->pool;
    c->pool = e->next;
    c->pooled -= e->charge;
    buf_free(c, e);
  }
}

static void unpin_all(tcache_t *c, entry_t *e) {
  for (; e; e = e->next)
    if (e->pin == 1) {
      c->unpin(c->pin_user, e);
      c->pinned -= e->charge;
      e->pin = 0;
    } else if (e->pin < 0 || e->pin == 2) {
      e->pin = 0; /* a new pinner may accept it (queued ones: the queue is dropped) */
    }
}

void tcache_set_pin(tcache_t *c, int (*pin)(void *user, void *p, size_t bytes),
                    void (*unpin)(void *user, void *p), void *user) {
  tcache_pin_wait(c);
  if (pin && unpin && pin == c->pin && unpin == c->unpin && user == c->pin_user)
    return; /* the same pinner: what it pinned stays pinned */
  if (c->unpin) {
    unpin_all(c, c->head); /* the LRU list (lent tiles included) */
    unpin_all(c, c->pool);
  }
  c->pin = pin && unpin ? pin : NULL; /* a pinner must be able to unpin */
  c->unpin = c->pin ? unpin : NULL;
  c->pin_user = user;
  c->pin_new = c->pin_later = 0;
  c->ntopin = 0;
}

void tcache_pin_new(tcache_t *c, int on) {
  tcache_pin_wait(c);
  c->pin_new = on && c->pin;
  c->pin_later = c->pin_new && on == TCACHE_PIN_LATER;
}

void *tcache_pin_user(const tcache_t *c) { return c->pin ? c->pin_user : NULL; }

void tcache_pin_stats(const tcache_t *c, int64_t *pinned, int64_t *refused) {
  if (pinned) *pinned = c->pinned;
  if (refused) *refused = c->pin_refused;
}

void tcache_destroy(tcache_t *c) {
  if (!c) return;
  tcache_pin_wait(c);
  tcache_trim(c);
  ooc_free(c->ctx, c->jobs);
  ooc_free(c->ctx, c->pend);
  ooc_free(c->ctx, c->topin);
  ooc_free(c->ctx, c->io);
  ooc_free(c->ctx, c);
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

/* At the least-recently-used end: the next to be evicted (a TS_LOAD_KEEP load's tiles, so that
 * the last one kept goes first and the first ones, which the method needs first, stay longest) */
static void lru_push_back(tcache_t *c, entry_t *e) {
  e->next = NULL;
  e->prev = c->tail;
  if (c->tail) c->tail->next = e;
  c->tail = e;
  if (!c->head) c->head = e;
}

/* A tile put into the LRU order: most recently used, or last in it while a TS_LOAD_KEEP load
 * puts it (lru_push_back) */
static void lru_put(const tstore_t *ts, entry_t *e) {
  if (ts->loading == TS_LOAD_KEEP) lru_push_back(ts->cache, e);
  else lru_push_front(ts->cache, e);
}

/* Take a cached entry out of its store and the LRU list; its bytes stay charged, now as pooled. */
static void entry_detach(tcache_t *c, entry_t *e) {
  if (e->lent) { /* a lent tile forgotten (a failed run's store destroyed or restored) */
    c->lent -= e->charge;
    e->lent = 0;
  }
  lru_unlink(c, e);
  c->used -= e->charge;
  c->pooled += e->charge;
  e->ts->ent[e->idx] = NULL;
  e->ts = NULL;
}

static void entry_to_pool(tcache_t *c, entry_t *e) {
  entry_detach(c, e);
  e->next = c->pool;
  c->pool = e;
}

static void entry_free(tcache_t *c, entry_t *e) {
  entry_detach(c, e);
  c->pooled -= e->charge;
  buf_free(c, e);
}

/* ---- store ------------------------------------------------------------------------------- */

int64_t ts_stripe(int64_t n, int64_t b, int64_t want) {
  if (want >= n || b >= n) return n;
  return ooc_max64(b, want / b * b);
}

int64_t ts_even_stripe(int64_t n, int64_t b, int64_t W) {
  if (W >= n || b < 1 || W < b) return W;
  int64_t tiles = ooc_cdiv64(n, b), steps = ooc_cdiv64(tiles, W / b);
  return ooc_cdiv64(tiles, steps) * b;
}

int64_t tcache_entry_bytes(void) { return (int64_t)sizeof(entry_t); }

int64_t tstore_overhead_bytes(int64_t rows, int64_t cols, int64_t b) {
  int64_t rt = ooc_cdiv64(rows, b), nt = rt * ooc_cdiv64(cols, b);
  /* + the cache's copy list and scratch transfer list for a column of this store (jobs,
   * pending entries, transfers) */
  return (int64_t)sizeof(tstore_t) + nt * (int64_t)(1 + sizeof(entry_t *)) + b * b * 8 +
         (rt + 16) * (int64_t)(sizeof(cjob_t) + sizeof(entry_t *) + sizeof(sjob_t));
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
  /* the copy list and the scratch transfer list for one column now, so a later take/put of a
   * column cannot fail on them (and make_room's victims fit the list it has) */
  ooc_status_t st = batch_reserve(cache, ts->rows.count + 1);
  if (st == OOC_OK && !io_grow(cache, ts->rows.count + 16))
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (scratch transfer list)");
  if (st != OOC_OK) {
    tstore_destroy(ts);
    return st;
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
  tcache_trim(ts->cache); /* the store's memory goes back now, not when the cache goes */
  ooc_free(ts->ctx, ts->state);
  ooc_free(ts->ctx, ts->ent);
  ooc_free(ts->ctx, ts->staging);
  ooc_free(ts->ctx, ts->srcsum);
  ooc_free(ts->ctx, ts);
}

part_t ts_rows(const tstore_t *ts) { return ts->rows; }
part_t ts_cols(const tstore_t *ts) { return ts->cols; }
const ts_stats_t *ts_stats(const tstore_t *ts) { return &ts->st; }

static void copy_block(int64_t nr, int64_t nc, const double *src, int64_t lds, double *dst,
                       int64_t ldd) {
  cjob_t j = {src, dst, lds, ldd, nr, nc, nc, 0, 0,
              nr * nc * (int64_t)sizeof(double) >= STREAM_MIN_BYTES};
  if (nr > 0 && nc > 0) copy_cols(&j, 0, nc);
}

/* The store's scratch, opened on its first spill. */
static ooc_status_t spill_ready(tstore_t *ts) {
  if (!ts->has_spill)
    return OOC_FAIL(ts->ctx, OOC_ERR_BUDGET,
                    "the host budget is too small and spilling to scratch is not available");
  if (!ts->spill_handle)
    OOC_TRY(ts->spill.open(ts->spill.self, (size_t)(ts->rows.b * ts->cols.b) * sizeof(double),
                           &ts->spill_handle));
  return OOC_OK;
}

/* Tile idx is in scratch now (bytes written in t seconds of the caller's). */
static void spilled(tstore_t *ts, int64_t idx, int64_t bytes, double t) {
  ts->st.t_spill += t;
  ts->st.t_spill_write += t;
  ts->st.bytes_spilled += bytes;
  ts->st.spills++;
  ts->state[idx] = T_SPILLED;
}

static ooc_status_t spill_write(tstore_t *ts, int64_t idx, const double *data, int64_t bytes) {
  double t0 = ooc_now();
  OOC_TRY(spill_ready(ts));
  OOC_TRY(ts->spill.put(ts->spill_handle, idx, data, (size_t)bytes));
  spilled(ts, idx, bytes, ooc_now() - t0);
  ts->st.bytes_spilled_alone += bytes;
  return OOC_OK;
}

static int64_t tile_index(const tstore_t *ts, int64_t ti, int64_t tj, int64_t *nr, int64_t *nc) {
  *nr = part_len(ts->rows, ti);
  *nc = part_len(ts->cols, tj);
  return ti * ts->cols.count + tj;
}

/* A clean tile (nr x nc at src, leading dimension ld) back to its source: the next read of it
 * reads the source and checks it against this checksum (source_read). */
/* Tile idx went back to its source (its checksum, where the store keeps them, taken). */
static void dropped(tstore_t *ts, int64_t idx, int64_t bytes) {
  ts->st.bytes_dropped += bytes;
  ts->st.drops++;
  ts->state[idx] = T_SOURCE;
}

static void drop_to_source(tstore_t *ts, int64_t idx, const double *src, int64_t nr, int64_t nc,
                           int64_t ld) {
  if (ts->srcsum)
    ts->srcsum[idx] = ooc_xxh3_cols(src, (size_t)nr * sizeof(double), (size_t)nc,
                                    (size_t)ld * sizeof(double));
  dropped(ts, idx, nr * nc * (int64_t)sizeof(double));
}

/* ---- scratch transfers (tstore.h; sjob_t) ---------------------------------------------------- */

/* Room for n more jobs in the io list; 0 when host memory ran out. */
static int io_grow(tcache_t *c, int64_t n) {
  if (c->nio + n <= c->capio) return 1;
  int64_t cap = ooc_max64(16, c->nio + n);
  sjob_t *q = list_grow(c->ctx, c->io, c->nio, cap, sizeof *q);
  if (!q) return 0;
  c->io = q;
  c->capio = cap;
  return 1;
}

static void io_piece(void *arg, int64_t k, int worker) {
  (void)worker;
  sjob_t *j = &((tcache_t *)arg)->io[k];
  tstore_t *ts = j->ts;
  size_t colb = (size_t)j->nr * sizeof(double);
  j->st = OOC_OK;
  if (j->kind == SJ_READ)
    j->st = ts->spill.get(ts->spill_handle, j->idx, j->data, colb, (size_t)j->nc,
                          (size_t)j->ld * sizeof(double));
  else if (j->kind == SJ_WRITE)
    j->st = ts->spill.put(ts->spill_handle, j->idx, j->data, colb * (size_t)j->nc);
  else if (ts->srcsum)
    ts->srcsum[j->idx] =
        ooc_xxh3_cols(j->data, colb, (size_t)j->nc, (size_t)j->ld * sizeof(double));
}

/* The io list handed to the copy threads, when it has two jobs or more and every scratch
 * transfer in it may run beside the others (concurrent spill ops); else io_join runs it. */
static void io_start(tcache_t *c) {
  if (c->io_running || c->nio < 2 || c->threads <= 1) return;
  for (int64_t k = 0; k < c->nio; k++)
    if (c->io[k].kind != SJ_SUM && !c->io[k].ts->spill.concurrent) return;
  ooc_par_start(&c->iog, (int)ooc_min64(c->threads, c->nio), c->nio, io_piece, c);
  c->io_running = 1;
}

/* Every job of the io list done (the caller helping, or alone); the seconds it waited. The
 * caller reads the jobs' results, then empties the list. */
static double io_join(tcache_t *c) {
  double t0 = ooc_now();
  if (c->io_running) {
    ooc_par_join(&c->iog);
    c->io_running = 0;
  } else {
    for (int64_t k = 0; k < c->nio; k++) io_piece(c, k, 0);
  }
  return ooc_now() - t0;
}

/* Tile (ti, tj) from the source into dst (ld), checked against what went back to it: a source
 * that changed under the run (the input file rewritten) is an error, never a wrong result. */
static ooc_status_t source_read(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld) {
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  double t0 = ooc_now();
  OOC_TRY(ts->source.read(ts->source.self, part_start(ts->rows, ti), part_start(ts->cols, tj), nr,
                          nc, dst, ld));
  ts->st.t_source += ooc_now() - t0;
  ts->st.bytes_source += nr * nc * (int64_t)sizeof(double);
  ts->st.misses++;
  uint64_t want = ts->srcsum ? ts->srcsum[idx] : 0;
  if (want && ooc_xxh3_cols(dst, (size_t)nr * sizeof(double), (size_t)nc,
                            (size_t)ld * sizeof(double)) != want)
    return OOC_FAIL(ts->ctx, OOC_ERR_CORRUPT, "%s: tile (%lld, %lld) (rows %lld.., columns "
                    "%lld..) read back is not what was loaded from it: it changed during the run",
                    ts->source_name ? ts->source_name : "the source", (long long)ti,
                    (long long)tj, (long long)part_start(ts->rows, ti),
                    (long long)part_start(ts->cols, tj));
  return OOC_OK;
}

/* The cache bytes that puts of tiles [t0, t1) x [u0, u1) take anew: those not cached now and
 * not too large to be cached at all (put() writes those through). */
static int64_t new_bytes(const tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1) {
  int64_t need = 0;
  for (int64_t tj = u0; tj < u1; tj++)
    for (int64_t ti = t0; ti < t1; ti++) {
      int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
      int64_t charge = (int64_t)sizeof(entry_t) + nr * nc * (int64_t)sizeof(double);
      if (ts->state[idx] != T_CACHED && ts->state[idx] != T_LENT && charge <= ts->cache->cap)
        need += charge;
    }
  return need;
}

/* Room for `need` bytes of new tiles of ts, the tiles [t0, t1) x [u0, u1) of it (which are
 * not evicted for them): the least-recently-used tiles that entry_get would evict one by one for
 * those puts, evicted here together, their scratch writes (and the clean ones' checksums) side by
 * side on the copy threads. Their buffers go to the pool, where the puts find them (pooled
 * buffers count as room: entry_get takes or frees them before it evicts). A victim whose write
 * failed stays cached; the first failure is returned. */
static ooc_status_t make_room(tstore_t *ts, int64_t need, int64_t t0, int64_t t1, int64_t u0,
                              int64_t u1) {
  tcache_t *c = ts->cache;
  int64_t over = c->used + need - c->cap;
  if (over <= 0) return OOC_OK;
  /* victims for the list a column's worth (tstore_overhead_bytes counts it); where more are
   * needed, or no memory for the list, entry_get evicts the rest one by one */
  if (!io_grow(c, ts->rows.count + 16)) return OOC_OK;
  int64_t got = 0, wbytes = 0;
  ooc_status_t st = OOC_OK;
  for (entry_t *v = c->tail; v && got < over && st == OOC_OK && c->nio < c->capio; v = v->prev) {
    int64_t vt = v->idx / v->ts->cols.count, vu = v->idx % v->ts->cols.count, nr, nc;
    if (v->lent || (v->ts == ts && vt >= t0 && vt < t1 && vu >= u0 && vu < u1)) continue;
    tile_index(v->ts, vt, vu, &nr, &nc);
    int clean = v->clean && v->ts->has_source; /* back to the source: nothing to write */
    if (!clean) {
      st = spill_ready(v->ts);
      wbytes += nr * nc * (int64_t)sizeof(double);
    }
    c->io[c->nio++] = (sjob_t){v->ts, v->idx, nr, nc, nr, v->data, v, clean ? SJ_SUM : SJ_WRITE,
                               OOC_OK};
    got += v->charge;
  }
  if (st != OOC_OK || c->nio == 0) {
    c->nio = 0;
    return st;
  }
  if (c->njobs) batch_run(c); /* queued copies may still read or fill a victim */
  io_start(c);
  double dt = io_join(c);
  for (int64_t k = 0; k < c->nio; k++) {
    sjob_t *j = &c->io[k];
    int64_t bytes = j->nr * j->nc * (int64_t)sizeof(double);
    if (j->st != OOC_OK) {
      if (st == OOC_OK) st = j->st;
      continue;
    }
    if (j->kind == SJ_WRITE) spilled(j->ts, j->idx, bytes, dt * (double)bytes / (double)wbytes);
    else dropped(j->ts, j->idx, bytes);
    entry_to_pool(c, j->victim);
  }
  c->nio = 0;
  return st;
}

/* A buffer for a tile of `charge` bytes, charged as used: a pooled one of that size, else room
 * is made (pooled buffers freed first, then least-recently-used tiles of any store spilled) and
 * a new one allocated. Queued copies finish before anything is spilled, so nothing half-copied
 * is ever written to scratch. */
static ooc_status_t entry_get(tcache_t *c, int64_t charge, entry_t **out) {
  entry_t *e = NULL;
  *out = NULL;
  for (entry_t **pp = &c->pool; *pp; pp = &(*pp)->next)
    if ((*pp)->charge == charge) {
      e = *pp;
      *pp = e->next;
      c->pooled -= charge;
      goto got;
    }
  while (c->used + c->pooled + charge > c->cap && c->pool) {
    entry_t *f = c->pool;
    c->pool = f->next;
    c->pooled -= f->charge;
    buf_free(c, f);
  }
  entry_t *v = c->tail;
  while (c->used + c->pooled + charge > c->cap && v) {
    if (v->lent) { /* a device still reads or writes it */
      v = v->prev;
      continue;
    }
    if (c->njobs) batch_run(c);
    if (v->clean && v->ts->has_source) { /* the source has it: nothing to write */
      int64_t nr, nc;
      tile_index(v->ts, v->idx / v->ts->cols.count, v->idx % v->ts->cols.count, &nr, &nc);
      drop_to_source(v->ts, v->idx, v->data, nr, nc, nr);
    } else
      OOC_TRY(spill_write(v->ts, v->idx, v->data, v->charge - (int64_t)sizeof(entry_t)));
    if (v->charge == charge) { /* reuse the victim's buffer */
      entry_detach(c, v);
      c->pooled -= charge;
      e = v;
      goto got;
    }
    entry_t *up = v->prev;
    entry_free(c, v);
    v = up;
  }
  if (c->used + c->pooled + charge > c->cap)
    return OOC_FAIL(c->ctx, OOC_ERR_INTERNAL, "tile cache: %lld bytes cannot be made room for",
                    (long long)charge);
  e = ooc_malloc(c->ctx, (size_t)charge);
  if (!e) return OOC_ERR_NOMEM; /* the caller says which tile */
  e->pin = 0;
got:
  e->prev = e->next = NULL;
  e->lent = 0;
  e->clean = 0;
  e->charge = charge;
  if (c->pin_new && e->pin == 0) queue_pin(c, e);
  c->used += charge;
  if (c->used + c->pooled > c->peak) c->peak = c->used + c->pooled;
  *out = e;
  return OOC_OK;
}

/* Copy tile content to dst; `forget` makes the tile TAKEN (take) rather than leaving it (read).
 * Copies out of the cache and zero fills are queued on the cache's batch (the caller runs it);
 * with io == 0 only those are done and tiles that need a scratch or source read are left alone
 * (*left = 1); with io == 1 everything is done (reads on this thread). */
static ooc_status_t fetch(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld,
                          int forget, int io, int *left) {
  tcache_t *c = ts->cache;
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  int64_t bytes = nr * nc * (int64_t)sizeof(double);
  int zero = 0;
  switch (ts->state[idx]) {
  case T_CACHED: {
    entry_t *e = ts->ent[idx];
    batch_add(c, e->data, nr, dst, ld, nr, nc);
    ts->st.hits++;
    if (forget) { /* to the pool once the copy is done */
      entry_detach(c, e);
      c->pend[c->npend++] = e;
    }
    break;
  }
  case T_SPILLED: {
    if (!io) {
      *left = 1;
      return OOC_OK;
    }
    /* straight from scratch into dst, whatever its leading dimension (the read scatters) */
    double t0 = ooc_now();
    OOC_TRY(ts->spill.get(ts->spill_handle, idx, dst, (size_t)nr * sizeof(double), (size_t)nc,
                          (size_t)ld * sizeof(double)));
    ts->st.t_spill += ooc_now() - t0;
    ts->st.bytes_unspilled += bytes;
    ts->st.bytes_unspilled_alone += bytes;
    ts->st.misses++;
    break;
  }
  case T_SOURCE:
    if (ts->has_source) {
      if (!io) {
        *left = 1;
        return OOC_OK;
      }
      OOC_TRY(source_read(ts, ti, tj, dst, ld));
      break;
    }
    zero = 1; /* a store without source starts as zeros */
    break;
  case T_ZERO: zero = 1; break;
  default:
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "tile (%lld, %lld) read while checked out",
                    (long long)ti, (long long)tj);
  }
  if (zero) batch_add(c, NULL, 0, dst, ld, nr, nc);
  if (forget) ts->state[idx] = T_TAKEN;
  return OOC_OK;
}

static ooc_status_t fetch_one(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld,
                              int forget) {
  int left = 0;
  OOC_TRY(batch_reserve(ts->cache, 1));
  ooc_status_t st = fetch(ts, ti, tj, dst, ld, forget, 1, &left);
  batch_run(ts->cache);
  return st;
}

ooc_status_t ts_take(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld) {
  return fetch_one(ts, ti, tj, dst, ld, 1);
}

ooc_status_t ts_read(tstore_t *ts, int64_t ti, int64_t tj, double *dst, int64_t ld) {
  return fetch_one(ts, ti, tj, dst, ld, 0);
}

/* A buffer for tile idx (nr x nc) that is not cached, charged and made its entry (entry_get). */
static ooc_status_t entry_new(tstore_t *ts, int64_t idx, int64_t nr, int64_t nc, entry_t **out) {
  ooc_status_t st = entry_get(ts->cache, (int64_t)sizeof(entry_t) + nr * nc * 8, out);
  if (st == OOC_ERR_NOMEM)
    return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory caching a %lld x %lld tile",
                    (long long)nr, (long long)nc);
  OOC_TRY(st);
  (*out)->ts = ts;
  (*out)->idx = idx;
  ts->ent[idx] = *out;
  return OOC_OK;
}

/* Queue the copy of a tile into the cache (or write it through to scratch). Capacity of the
 * batch is reserved by the caller; the caller runs the batch. */
static ooc_status_t put(tstore_t *ts, int64_t ti, int64_t tj, const double *src, int64_t ld) {
  tcache_t *c = ts->cache;
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  int64_t bytes = nr * nc * (int64_t)sizeof(double);
  if (ts->state[idx] == T_LENT)
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "tile (%lld, %lld) put while lent",
                    (long long)ti, (long long)tj);
  int clean = ts->loading && ts->has_source;
  if (ts->state[idx] == T_CACHED) {
    entry_t *e = ts->ent[idx];
    batch_add(c, src, ld, e->data, nr, nr, nc);
    e->clean = (int16_t)clean;
    lru_unlink(c, e);
    lru_put(ts, e);
    return OOC_OK;
  }
  int64_t charge = (int64_t)sizeof(entry_t) + bytes;
  if (charge > c->cap && clean) { /* can never be cached, and the source has it */
    drop_to_source(ts, idx, src, nr, nc, ld);
    return OOC_OK;
  }
  if (charge > c->cap) { /* can never be cached: straight to scratch */
    const double *p = src;
    if (ld != nr) {
      copy_block(nr, nc, src, ld, ts->staging, nr);
      p = ts->staging;
    }
    return spill_write(ts, idx, p, bytes);
  }
  entry_t *e;
  OOC_TRY(entry_new(ts, idx, nr, nc, &e));
  batch_add(c, src, ld, e->data, nr, nr, nc);
  e->clean = (int16_t)clean;
  lru_put(ts, e);
  ts->state[idx] = T_CACHED;
  return OOC_OK;
}

ooc_status_t ts_put(tstore_t *ts, int64_t ti, int64_t tj, const double *src, int64_t ld) {
  OOC_TRY(batch_reserve(ts->cache, 1));
  ooc_status_t st = put(ts, ti, tj, src, ld);
  batch_run(ts->cache);
  return st;
}

void ts_drop(tstore_t *ts, int64_t ti, int64_t tj) {
  int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
  if (ts->state[idx] == T_LENT) return; /* tstore.h: a device still uses it */
  if (ts->state[idx] == T_CACHED) entry_to_pool(ts->cache, ts->ent[idx]);
  ts->state[idx] = T_ZERO;
}

/* Where tile (ti, tj) of the block whose corner is tile (t0, u0) lies in a buffer with ld. */
static int64_t block_off(const tstore_t *ts, int64_t t0, int64_t u0, int64_t ti, int64_t tj,
                         int64_t ld) {
  return (part_start(ts->rows, ti) - part_start(ts->rows, t0)) +
         (part_start(ts->cols, tj) - part_start(ts->cols, u0)) * ld;
}

/* A block of tiles [t0, t1) x [u0, u1): the threads copy the cached tiles (and zero fills) and
 * read the spilled ones straight into dst (concurrent spill ops; else this thread reads them)
 * while this thread reads the source tiles in order; all of it is done when it returns, also on
 * failure. Pass 2 touches only tiles whose content pass 1 left (still SPILLED, or SOURCE with a
 * source), so the running batch is not touched. */
static ooc_status_t fetch_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                                double *dst, int64_t ld, int forget) {
  tcache_t *c = ts->cache;
  int left = 0;
  ooc_status_t st = batch_reserve(c, (t1 - t0) * (u1 - u0));
  for (int64_t tj = u0; st == OOC_OK && tj < u1; tj++)
    for (int64_t ti = t0; st == OOC_OK && ti < t1; ti++)
      st = fetch(ts, ti, tj,
                 dst + block_off(ts, t0, u0, ti, tj, ld), ld, forget, 0, &left);
  if (left && st == OOC_OK && !io_grow(c, (t1 - t0) * (u1 - u0)))
    st = OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "out of host memory (scratch transfer list)");
  for (int64_t tj = u0; left && st == OOC_OK && tj < u1; tj++)
    for (int64_t ti = t0; ti < t1; ti++) {
      int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
      if (ts->state[idx] == T_SPILLED)
        c->io[c->nio++] = (sjob_t){ts, idx, nr, nc, ld, dst + block_off(ts, t0, u0, ti, tj, ld),
                                   NULL, SJ_READ, OOC_OK};
    }
  batch_start(c);
  io_start(c);
  for (int64_t tj = u0; left && st == OOC_OK && tj < u1; tj++)
    for (int64_t ti = t0; st == OOC_OK && ti < t1; ti++) {
      int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
      if (ts->state[idx] == T_SOURCE && ts->has_source)
        st = fetch(ts, ti, tj, dst + block_off(ts, t0, u0, ti, tj, ld), ld, forget, 1, &left);
    }
  if (st != OOC_OK && !c->io_running) c->nio = 0; /* failed: no more reads */
  ts->st.t_spill += io_join(c);
  for (int64_t k = 0; k < c->nio; k++) {
    sjob_t *j = &c->io[k];
    if (j->st != OOC_OK) {
      if (st == OOC_OK) st = j->st;
      continue;
    }
    ts->st.bytes_unspilled += j->nr * j->nc * (int64_t)sizeof(double);
    ts->st.misses++;
    if (forget) ts->state[j->idx] = T_TAKEN;
  }
  c->nio = 0;
  batch_finish(c);
  return st;
}

static ooc_status_t check_range(const tstore_t *ts, int64_t t0, int64_t t1, int64_t u0,
                                int64_t u1) {
  if (t0 < 0 || u0 < 0 || t1 > ts->rows.count || u1 > ts->cols.count || t0 > t1 || u0 > u1)
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL,
                    "tile range [%lld, %lld) x [%lld, %lld) outside a %lld x %lld tile store",
                    (long long)t0, (long long)t1, (long long)u0, (long long)u1,
                    (long long)ts->rows.count, (long long)ts->cols.count);
  return OOC_OK;
}

ooc_status_t ts_read_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                           double *dst, int64_t ld) {
  OOC_TRY(check_range(ts, t0, t1, u0, u1));
  return fetch_tiles(ts, t0, t1, u0, u1, dst, ld, 0);
}

ooc_status_t ts_take_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                           double *dst, int64_t ld) {
  OOC_TRY(check_range(ts, t0, t1, u0, u1));
  return fetch_tiles(ts, t0, t1, u0, u1, dst, ld, 1);
}

/* Any rectangle: each tile it meets once. Pass 1 queues the parts of cached tiles (and zero
 * fills) for the threads; pass 2, while they copy, reads the rest on this thread: the part of a
 * source tile straight from the source, a spilled tile whole (a scratch slot is one checksummed
 * unit) into the staging tile and its part copied from there. */
ooc_status_t ts_read_rect(tstore_t *ts, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                          double *dst, int64_t ld) {
  if (r0 < 0 || c0 < 0 || nr < 0 || nc < 0 || r0 + nr > ts->rows.n || c0 + nc > ts->cols.n ||
      (nr > 0 && ld < nr))
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL,
                    "rectangle %lld x %lld at (%lld, %lld) outside a %lld x %lld tile store",
                    (long long)nr, (long long)nc, (long long)r0, (long long)c0,
                    (long long)ts->rows.n, (long long)ts->cols.n);
  if (nr == 0 || nc == 0) return OOC_OK;
  tcache_t *c = ts->cache;
  int64_t t0 = part_index(ts->rows, r0), t1 = part_index(ts->rows, r0 + nr - 1) + 1;
  int64_t u0 = part_index(ts->cols, c0), u1 = part_index(ts->cols, c0 + nc - 1) + 1;
  ooc_status_t st = batch_reserve(c, (t1 - t0) * (u1 - u0));
  int left = 0;
  for (int pass = 0; pass < 2 && st == OOC_OK; pass++) {
    if (pass == 1) {
      batch_start(c);
      if (!left) break;
    }
    for (int64_t tj = u0; st == OOC_OK && tj < u1; tj++)
      for (int64_t ti = t0; st == OOC_OK && ti < t1; ti++) {
        int64_t tr, tc, idx = tile_index(ts, ti, tj, &tr, &tc);
        int64_t tr0 = part_start(ts->rows, ti), tc0 = part_start(ts->cols, tj);
        int64_t a0 = ooc_max64(r0, tr0), a1 = ooc_min64(r0 + nr, tr0 + tr);
        int64_t e0 = ooc_max64(c0, tc0), e1 = ooc_min64(c0 + nc, tc0 + tc);
        double *to = dst + (a0 - r0) + (e0 - c0) * ld;
        int64_t bytes = tr * tc * (int64_t)sizeof(double);
        double t = 0;
        switch (ts->state[idx]) {
        case T_CACHED:
          if (pass == 0) {
            const double *from = ts->ent[idx]->data;
            ts->st.hits++;
            batch_add(c, from + (a0 - tr0) + (e0 - tc0) * tr, tr, to, ld, a1 - a0, e1 - e0);
          }
          break;
        case T_SPILLED:
          if (pass == 0) {
            left = 1;
            break;
          }
          t = ooc_now();
          st = ts->spill.get(ts->spill_handle, idx, ts->staging, (size_t)bytes, 1, (size_t)bytes);
          ts->st.t_spill += ooc_now() - t;
          ts->st.bytes_unspilled += bytes;
          ts->st.bytes_unspilled_alone += bytes;
          ts->st.misses++;
          if (st == OOC_OK)
            copy_block(a1 - a0, e1 - e0, ts->staging + (a0 - tr0) + (e0 - tc0) * tr, tr, to, ld);
          break;
        case T_SOURCE:
        case T_ZERO: /* a store without source starts as zeros */
          if (ts->state[idx] == T_ZERO || !ts->has_source) {
            if (pass == 0) batch_add(c, NULL, 0, to, ld, a1 - a0, e1 - e0);
          } else if (pass == 0) {
            left = 1;
          } else if (ts->srcsum && ts->srcsum[idx]) { /* checked whole, as a spilled one */
            st = source_read(ts, ti, tj, ts->staging, tr);
            if (st == OOC_OK)
              copy_block(a1 - a0, e1 - e0, ts->staging + (a0 - tr0) + (e0 - tc0) * tr, tr, to, ld);
          } else {
            t = ooc_now();
            st = ts->source.read(ts->source.self, a0, e0, a1 - a0, e1 - e0, to, ld);
            ts->st.t_source += ooc_now() - t;
            ts->st.bytes_source += (a1 - a0) * (e1 - e0) * (int64_t)sizeof(double);
            ts->st.misses++;
          }
          break;
        default:
          st = OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "tile (%lld, %lld) read while checked out",
                        (long long)ti, (long long)tj);
        }
      }
  }
  batch_finish(c);
  return st;
}

/* Tile rows per batch of evictions for a put of [t0, t1) x [u0, u1): all of them (one
 * make_room for the whole block) where its new tiles fit the room the lent tiles leave; else
 * each column's rows in groups of half that room, each group's make_room evicting together what
 * entry_get would evict one by one for it (the least-recently-used tiles: older ones first, then
 * the put's own earlier groups, the same tiles in the same order). Why: LU's factor puts tile
 * columns taller than its cache (its workspace takes most of --host-mem), and every tile past
 * the room was written alone on the caller's thread (4.4 of 12.0 GB spilled at n = 32768,
 * --host-mem 4G on an H200: docs/PERFORMANCE.md, twenty-seventh session). */
static int64_t put_rows(const tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1) {
  const tcache_t *c = ts->cache;
  int64_t room = c->cap - c->lent;
  if (new_bytes(ts, t0, t1, u0, u1) <= room) return t1 - t0;
  int64_t charge = (int64_t)sizeof(entry_t) + ts->rows.b * ts->cols.b * (int64_t)sizeof(double);
  return ooc_max64(1, room / (2 * charge));
}

/* A TS_LOAD_KEEP load's tile that stays in the source (tstore.h): not cached, and more than the
 * cache's free room */
static int keep_drops(const tstore_t *ts, int64_t idx, int64_t nr, int64_t nc) {
  const tcache_t *c = ts->cache;
  return ts->state[idx] != T_CACHED && ts->state[idx] != T_LENT &&
         c->used + (int64_t)sizeof(entry_t) + nr * nc * (int64_t)sizeof(double) > c->cap;
}

ooc_status_t ts_put_tiles(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                          const double *src, int64_t ld) {
  OOC_TRY(check_range(ts, t0, t1, u0, u1));
  tcache_t *c = ts->cache;
  /* a TS_LOAD_KEEP load evicts nothing: what does not fit goes back to the source from src,
   * checksummed side by side on the copy threads (sums; no memory for their list: here) */
  int keep = ts->loading == TS_LOAD_KEEP, sums = keep && io_grow(c, (t1 - t0) * (u1 - u0));
  int64_t g = keep ? t1 - t0 : put_rows(ts, t0, t1, u0, u1);
  if (!keep && g >= t1 - t0) OOC_TRY(make_room(ts, new_bytes(ts, t0, t1, u0, u1), t0, t1, u0, u1));
  ooc_status_t st = batch_reserve(c, (t1 - t0) * (u1 - u0));
  for (int64_t tj = u0; st == OOC_OK && tj < u1; tj++)
    for (int64_t r0 = t0; st == OOC_OK && r0 < t1; r0 += g) {
      int64_t r1 = ooc_min64(t1, r0 + g);
      if (g < t1 - t0) st = make_room(ts, new_bytes(ts, r0, r1, tj, tj + 1), r0, r1, tj, tj + 1);
      for (int64_t ti = r0; st == OOC_OK && ti < r1; ti++) {
        int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
        const double *p = src + block_off(ts, t0, u0, ti, tj, ld);
        if (!keep || !keep_drops(ts, idx, nr, nc))
          st = put(ts, ti, tj, p, ld);
        else if (sums)
          c->io[c->nio++] = (sjob_t){ts, idx, nr, nc, ld, (double *)p, NULL, SJ_SUM, OOC_OK};
        else
          drop_to_source(ts, idx, p, nr, nc, ld);
      }
    }
  batch_run(c);
  if (c->nio) { /* the kept load's sums */
    io_start(c);
    io_join(c);
    for (int64_t q = 0; q < c->nio; q++)
      dropped(ts, c->io[q].idx, c->io[q].nr * c->io[q].nc * (int64_t)sizeof(double));
    c->nio = 0;
  }
  return st;
}

/* ---- prefill (see tstore.h) ----------------------------------------------------------------- */

/* ts_prefill and ts_prefill_start: wait 0 leaves the touching running on the copy threads */
static ooc_status_t prefill(tstore_t *ts, const ts_range_t *r, int nr, int64_t max_bytes,
                            int64_t *made, int wait) {
  tcache_t *c = ts->cache;
  /* what the coming puts need, per tile size: a store has at most four (interior, the two edges,
   * the corner); tiles of equal bytes share a buffer size whatever their shape */
  struct pf_size {
    int64_t charge, nr, nc, want;
  } k[4];
  int nk = 0;
  int64_t want = 0;
  *made = 0;
  for (int q = 0; q < nr; q++) {
    OOC_TRY(check_range(ts, r[q].t0, r[q].t1, r[q].u0, r[q].u1));
    for (int64_t tj = r[q].u0; tj < r[q].u1; tj++)
      for (int64_t ti = r[q].t0; ti < r[q].t1; ti++) {
        int64_t h, w, idx = tile_index(ts, ti, tj, &h, &w);
        int64_t charge = (int64_t)sizeof(entry_t) + h * w * (int64_t)sizeof(double);
        if (ts->state[idx] == T_CACHED || charge > c->cap) continue; /* reused / written through */
        int s = 0;
        while (s < nk && k[s].charge != charge) s++;
        if (s == 4) continue; /* cannot happen (four sizes at most) */
        if (s == nk) k[nk++] = (struct pf_size){charge, h, w, 0};
        k[s].want++;
        want++;
      }
  }
  for (entry_t *e = c->pool; e && want > 0; e = e->next) /* already there (warm: all of them) */
    for (int s = 0; s < nk; s++)
      if (k[s].charge == e->charge && k[s].want > 0) {
        k[s].want--;
        want--;
        break;
      }
  /* new buffers: within the free room only (never an eviction), within max_bytes (but at least
   * one), and within the copy list already reserved, so that nothing here can fail */
  int64_t slots = ooc_min64(c->capjobs - c->njobs, c->cappend - c->npend);
  for (int s = 0; s < nk && slots > 0; s++)
    while (k[s].want > 0 && slots > 0 && (*made == 0 || *made + k[s].charge <= max_bytes) &&
           c->used + c->pooled + k[s].charge <= c->cap) {
      entry_t *e = ooc_malloc(c->ctx, (size_t)k[s].charge);
      if (!e) { /* no memory now: the put that needs it will say so */
        slots = 0;
        break;
      }
      e->prev = e->next = NULL;
      e->ts = NULL;
      e->idx = -1;
      e->lent = e->pin = e->clean = 0;
      e->charge = k[s].charge;
      c->pooled += e->charge;
      c->pend[c->npend++] = e; /* to the pool once touched */
      batch_add(c, NULL, 0, e->data, k[s].nr, k[s].nr, k[s].nc);
      c->jobs[c->njobs - 1].touch = 1;
      k[s].want--;
      slots--;
      *made += e->charge;
    }
  if (c->used + c->pooled > c->peak) c->peak = c->used + c->pooled;
  batch_start(c);
  if (wait || !c->running) batch_finish(c); /* (a small batch, or one thread: here and now) */
  return OOC_OK;
}

ooc_status_t ts_prefill(tstore_t *ts, const ts_range_t *r, int nr, int64_t max_bytes,
                        int64_t *made) {
  return prefill(ts, r, nr, max_bytes, made, 1);
}

ooc_status_t ts_prefill_start(tstore_t *ts, const ts_range_t *r, int nr, int64_t max_bytes,
                              int64_t *made) {
  int64_t want = 0;
  for (int q = 0; q < nr; q++) want += (r[q].t1 - r[q].t0) * (r[q].u1 - r[q].u0);
  if (want > 0 && !batch_grow(ts->cache, want)) { /* quietly: the puts will say it */
    *made = 0;
    return OOC_OK;
  }
  return prefill(ts, r, nr, max_bytes, made, 0);
}

void tcache_prefill_wait(tcache_t *c) {
  if (c->running || c->njobs) batch_finish(c);
}

/* ---- lending (tstore.h) ---------------------------------------------------------------------- */

tcache_t *ts_cache(const tstore_t *ts) { return ts->cache; }

ooc_status_t ts_lend(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int write, double **p,
                     int *lent) {
  tcache_t *c = ts->cache;
  *lent = 0;
  OOC_TRY(check_range(ts, t0, t1, tj, tj + 1));
  int64_t bytes = 0;
  for (int64_t ti = t0; ti < t1; ti++) { /* all or nothing, decided before anything changes */
    int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
    uint8_t st = ts->state[idx];
    if (st == T_LENT)
      return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "tile (%lld, %lld) lent twice", (long long)ti,
                      (long long)tj);
    if (write != TS_LEND_WRITE && st != T_CACHED) return OOC_OK;
    bytes += (int64_t)sizeof(entry_t) + nr * nc * (int64_t)sizeof(double);
  }
  /* Lent tiles cannot be evicted: with at most half the capacity lent, a put can always make
   * room for any tile that is lendable at all (it is at most half the capacity too). */
  if (c->lent + bytes > c->cap / 2) return OOC_OK;
  if (write == TS_LEND_WRITE) /* the evictions for the new buffers together (make_room) */
    OOC_TRY(make_room(ts, new_bytes(ts, t0, t1, tj, tj + 1), t0, t1, tj, tj + 1));
  for (int64_t ti = t0; ti < t1; ti++) {
    int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
    entry_t *e = ts->ent[idx];
    if (ts->state[idx] != T_CACHED) /* write: a buffer as put() finds one */
      OOC_TRY(entry_new(ts, idx, nr, nc, &e));
    else
      lru_unlink(c, e);
    lru_push_front(c, e);
    e->lent = 1;
    if (write) e->clean = 0; /* the borrower writes it */
    c->lent += e->charge;
    ts->state[idx] = T_LENT;
    if (c->pin && (e->pin == 0 || e->pin == 2)) pin_entry(c, e); /* the device reads it now */
    p[ti - t0] = e->data;
  }
  *lent = 1;
  return OOC_OK;
}

void ts_return(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int forget) {
  tcache_t *c = ts->cache;
  for (int64_t ti = t0; ti < t1; ti++) {
    int64_t nr, nc, idx = tile_index(ts, ti, tj, &nr, &nc);
    if (ts->state[idx] != T_LENT) continue;
    entry_t *e = ts->ent[idx];
    c->lent -= e->charge;
    e->lent = 0;
    if (forget) { /* as a take: the buffer to the pool */
      entry_to_pool(c, e);
      ts->state[idx] = T_TAKEN;
    } else {
      lru_unlink(c, e);
      lru_push_front(c, e);
      ts->state[idx] = T_CACHED;
    }
  }
}

/* ---- row interchanges in place ------------------------------------------------------------- */

/* One interchange of a column's rows, both ends located once for every column: the element in
 * column 0 of its tile and the tile's column stride. Locating them per column and per swap (two
 * divisions and two remainders each) was what the swaps cost: LU's final swaps at n = 40000
 * took 0.60 s of a 2.2 s factor on an H200 host. */
typedef struct {
  double *a, *q;
  int64_t sa, sq;
} swp_t;

typedef struct {
  const swp_t *sw; /* the interchanges that move something, in order */
  int64_t nsw, nc;
} swap_t;

/* Columns [SWAP_COLS c, SWAP_COLS (c + 1)) of the tile column: their swaps in order (a row may
 * move twice: a column's sequence is one thread's). Several columns per pass over the list, so
 * that the list (32 bytes a swap) is read once for them, not once per column. */
#define SWAP_COLS 8
static void swap_cols(void *arg, int64_t c, int worker) {
  (void)worker;
  const swap_t *w = arg;
  int64_t c0 = c * SWAP_COLS, c1 = ooc_min64(w->nc, c0 + SWAP_COLS);
  for (int64_t i = 0; i < w->nsw; i++) {
    const swp_t *x = &w->sw[i];
    double *a = x->a + c0 * x->sa, *q = x->q + c0 * x->sq;
    for (int64_t k = c0; k < c1; k++, a += x->sa, q += x->sq) {
      double t = *a;
      *a = *q;
      *q = t;
    }
  }
}

ooc_status_t ts_swap_rows(tstore_t *ts, int64_t t0, int64_t t1, int64_t tj, int64_t k1, int64_t k2,
                          const int64_t *ipiv, int *done) {
  *done = 0;
  OOC_TRY(check_range(ts, t0, t1, tj, tj + 1));
  if (t1 <= t0 || k2 <= k1) {
    *done = 1;
    return OOC_OK;
  }
  int64_t r0 = part_start(ts->rows, t0), r1 = part_start(ts->rows, t1 - 1) + part_len(ts->rows, t1 - 1);
  for (int64_t k = k1; k < k2; k++)
    if (k < r0 || ipiv[k] < k || ipiv[k] >= r1)
      return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL,
                      "row swap %lld <-> %lld outside rows [%lld, %lld) or backwards",
                      (long long)k, (long long)ipiv[k], (long long)r0, (long long)r1);
  for (int64_t ti = t0; ti < t1; ti++)
    if (ts->state[ti * ts->cols.count + tj] != T_CACHED) return OOC_OK; /* the caller gathers */
  int64_t nc = part_len(ts->cols, tj), b = ts->rows.b, nsw = 0;
  swp_t *sw = ooc_malloc(ts->ctx, (size_t)(k2 - k1) * sizeof *sw);
  if (!sw) return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory (row swaps)");
  for (int64_t ti = t0; ti < t1; ti++) {
    entry_t *e = ts->ent[ti * ts->cols.count + tj];
    e->clean = 0; /* its rows are about to move */
    lru_unlink(ts->cache, e); /* used: as a put would */
    lru_push_front(ts->cache, e);
  }
  for (int64_t k = k1; k < k2; k++) {
    int64_t p = ipiv[k];
    if (p == k) continue;
    entry_t *ek = ts->ent[(k / b) * ts->cols.count + tj];
    entry_t *ep = ts->ent[(p / b) * ts->cols.count + tj];
    sw[nsw++] = (swp_t){ek->data + k % b, ep->data + p % b, part_len(ts->rows, k / b),
                        part_len(ts->rows, p / b)};
  }
  swap_t w = {.sw = sw, .nsw = nsw, .nc = nc};
  int threads = (r1 - r0) * nc >= ((int64_t)1 << 20) ? ts->cache->threads : 1;
  if (nsw > 0) ooc_parallel(threads, ooc_cdiv64(nc, SWAP_COLS), swap_cols, &w);
  ooc_free(ts->ctx, sw);
  *done = 1;
  return OOC_OK;
}

/* ---- rows into the result's order (ts_rowmap_t) ------------------------------------------- */

void ts_rowmap_free(ooc_ctx_t *ctx, ts_rowmap_t *m) {
  if (!m) return;
  ooc_free(ctx, m->from);
  ooc_free(ctx, m->off);
  ooc_free(ctx, m->rows);
  *m = (ts_rowmap_t){0};
}

int64_t ts_rowmap_bytes(const ts_rowmap_t *m) {
  return m && m->from ? 8 * (2 * m->nt + m->nrows) : 0;
}

int ts_all_cached(const tstore_t *ts) {
  int64_t nt = ts->rows.count * ts->cols.count;
  for (int64_t idx = 0; idx < nt; idx++)
    if (ts->state[idx] != T_CACHED) return 0;
  return 1;
}

/* Column k of the moved ones: its rows [from, n) gathered in the map's order, then stored. */
static void permute_col(void *arg, int64_t k, int worker) {
  const ts_permute_t *p = arg;
  int64_t q = 0, hi = p->nmt; /* the moved tile column holding k: cum[q] <= k < cum[q + 1] */
  while (hi - q > 1) {
    int64_t mid = (q + hi) / 2;
    if (p->cum[mid] <= k) q = mid;
    else hi = mid;
  }
  int64_t tj = p->tcol[q], c = k - p->cum[q], from = p->m->from[tj], b = p->b;
  const int64_t *map = p->m->rows + p->m->off[tj];
  double *const *tile = p->tile + p->tbase[q];
  const int64_t *ld = p->tld + p->tbase[q];
  int64_t t0 = from / b; /* tile[t - t0] is tile row t */
  double *buf = p->scratch + (int64_t)worker * p->mmax;
  for (int64_t i = 0; i < p->n - from; i++) {
    int64_t r = map[i], t = r / b - t0;
    buf[i] = tile[t][r % b + c * ld[t]];
  }
  for (int64_t r = from; r < p->n;) { /* stored back a tile's segment at a time */
    int64_t t = r / b - t0, e = ooc_min64(p->n, (r / b + 1) * b);
    memcpy(tile[t] + r % b + c * ld[t], buf + (r - from), (size_t)(e - r) * sizeof(double));
    r = e;
  }
}

static void permute_free(ts_permute_t *p) {
  ooc_ctx_t *ctx = p->ctx;
  ooc_free(ctx, p->cum);
  ooc_free(ctx, p->tcol);
  ooc_free(ctx, p->tile);
  ooc_free(ctx, p->tld);
  ooc_free(ctx, p->tbase);
  ooc_free(ctx, p->scratch);
  p->cum = p->tcol = p->tld = p->tbase = NULL;
  p->tile = NULL;
  p->scratch = NULL;
}

/* The moved tile columns, their tiles and the smallest from of map m over store ts. */
static void permute_size(const tstore_t *ts, const ts_rowmap_t *m, int64_t *nmt, int64_t *ntiles,
                         int64_t *first) {
  int64_t n = ts->rows.n, b = ts->rows.b;
  *nmt = *ntiles = 0;
  *first = n;
  for (int64_t tj = 0; m && m->from && tj < m->nt && tj < ts->cols.count; tj++)
    if (m->from[tj] < n) {
      (*nmt)++;
      *ntiles += ts->rows.count - m->from[tj] / b;
      *first = ooc_min64(*first, m->from[tj]);
    }
}

int64_t ts_permute_bytes(const tstore_t *ts, const ts_rowmap_t *m) {
  int64_t nmt, ntiles, first;
  permute_size(ts, m, &nmt, &ntiles, &first);
  if (nmt == 0) return 0;
  return 8 * (3 * nmt + 1 + 2 * ntiles + (int64_t)ts->cache->threads * (ts->rows.n - first)) +
         6 * 256; /* (each allocation's alignment) */
}

ooc_status_t ts_permute_start(tstore_t *ts, const ts_rowmap_t *m, ts_permute_t *p) {
  int64_t n = ts->rows.n, b = ts->rows.b, nt = ts->rows.count, cols = ts->cols.count;
  *p = (ts_permute_t){.ctx = ts->ctx, .m = m, .n = n, .b = b, .first = n};
  if (!m || !m->from) return OOC_OK;
  if (m->nt != cols)
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "row map of %lld tile columns for a store of "
                    "%lld", (long long)m->nt, (long long)cols);
  int64_t nmt, ntiles;
  permute_size(ts, m, &nmt, &ntiles, &p->first);
  if (nmt == 0) return OOC_OK;
  p->mmax = n - p->first;
  int threads = ts->cache->threads;
  p->cum = ooc_malloc(ts->ctx, (size_t)(nmt + 1) * sizeof(int64_t));
  p->tcol = ooc_malloc(ts->ctx, (size_t)nmt * sizeof(int64_t));
  p->tbase = ooc_malloc(ts->ctx, (size_t)nmt * sizeof(int64_t));
  p->tile = ooc_malloc(ts->ctx, (size_t)ntiles * sizeof(double *));
  p->tld = ooc_malloc(ts->ctx, (size_t)ntiles * sizeof(int64_t));
  p->scratch = ooc_malloc(ts->ctx, (size_t)(threads * p->mmax) * sizeof(double));
  if (!p->cum || !p->tcol || !p->tbase || !p->tile || !p->tld || !p->scratch) {
    permute_free(p);
    return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory moving %lld rows into place",
                    (long long)(n - p->first));
  }
  int64_t q = 0, at = 0;
  p->cum[0] = 0;
  for (int64_t tj = 0; tj < cols; tj++) {
    if (m->from[tj] >= n) continue;
    p->tcol[q] = tj;
    p->tbase[q] = at;
    for (int64_t ti = m->from[tj] / b; ti < nt; ti++, at++) {
      int64_t idx = ti * cols + tj;
      if (ts->state[idx] != T_CACHED) {
        ooc_status_t st = OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "moving rows into place needs "
                                   "tile (%lld, %lld) in the cache, and it is not",
                                   (long long)ti, (long long)tj);
        permute_free(p);
        return st;
      }
      entry_t *e = ts->ent[idx];
      e->clean = 0; /* its rows are about to move */
      p->tile[at] = e->data;
      p->tld[at] = part_len(ts->rows, ti);
    }
    p->cum[q + 1] = p->cum[q] + part_len(ts->cols, tj);
    q++;
  }
  p->nmt = nmt;
  p->running = 1;
  ooc_par_start(&p->g, threads, p->cum[nmt], permute_col, p);
  return OOC_OK;
}

void ts_permute_join(ts_permute_t *p) {
  if (!p->running) return;
  ooc_par_join(&p->g);
  p->running = 0;
  permute_free(p);
}

ooc_status_t ts_take_col(tstore_t *ts, int64_t tj, double *dst, int64_t ld) {
  return fetch_tiles(ts, 0, ts->rows.count, tj, tj + 1, dst, ld, 1);
}

ooc_status_t ts_put_col(tstore_t *ts, int64_t tj, const double *src, int64_t ld) {
  return ts_put_tiles(ts, 0, ts->rows.count, tj, tj + 1, src, ld);
}

/* ---- a source behind the loaded tiles (tstore.h) ------------------------------------------ */

ooc_status_t ts_set_backing(tstore_t *ts, const ooc_source_t *src, const char *name) {
  int64_t nt = ts->rows.count * ts->cols.count;
  if (!ts->srcsum) {
    ts->srcsum = ooc_calloc(ts->ctx, (size_t)(nt ? nt : 1), sizeof(uint64_t));
    if (!ts->srcsum)
      return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory (a tile store's checksums)");
  }
  for (int64_t idx = 0; idx < nt; idx++) /* never put: zeros, as before */
    if (ts->state[idx] == T_SOURCE) ts->state[idx] = T_ZERO;
  ts->source = *src;
  ts->source_name = name;
  ts->has_source = 1;
  return OOC_OK;
}

void ts_set_loading(tstore_t *ts, int on) { ts->loading = ts->has_source ? on : 0; }

/* ---- checkpoints (new functions only, see tstore.h) ---------------------------------------- */

static ooc_status_t open_spill(tstore_t *ts) {
  if (!ts->has_spill)
    return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "checkpoint of a tile store without scratch");
  return spill_ready(ts);
}

/* The flush's writes of jobs [0, nio): side by side (io_start), then their counts. */
static ooc_status_t flush_batch(tstore_t *ts) {
  tcache_t *c = ts->cache;
  io_start(c);
  double dt = io_join(c);
  ooc_status_t st = OOC_OK;
  int64_t wbytes = 0;
  for (int64_t k = 0; k < c->nio; k++) {
    if (c->io[k].st != OOC_OK && st == OOC_OK) st = c->io[k].st;
    if (c->io[k].st == OOC_OK) wbytes += c->io[k].nr * c->io[k].nc * (int64_t)sizeof(double);
  }
  ts->st.t_spill += dt;
  ts->st.t_spill_write += dt;
  ts->st.bytes_spilled += wbytes;
  c->nio = 0;
  return st;
}

ooc_status_t ts_flush(tstore_t *ts) {
  if (!ts) return OOC_OK;
  tcache_t *c = ts->cache;
  int64_t nt = ts->rows.count * ts->cols.count;
  for (int64_t idx = 0; idx < nt; idx++)
    if (ts->state[idx] == T_TAKEN || ts->state[idx] == T_LENT)
      return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "checkpoint with tile %lld checked out",
                      (long long)idx);
  if (!io_grow(c, ts->rows.count + 16))
    return OOC_FAIL(ts->ctx, OOC_ERR_NOMEM, "out of host memory (scratch transfer list)");
  if (c->njobs) batch_run(c); /* (nothing queued between steps; a copy into a tile would be) */
  /* the dirty cached tiles written in batches of the list's length, side by side as make_room
   * writes its victims (tstore.h "Scratch transfers"); they stay cached */
  for (int64_t idx = 0; idx < nt; idx++) {
    if (ts->state[idx] != T_CACHED) continue;
    entry_t *e = ts->ent[idx];
    if (e->clean && ts->has_source) continue; /* its source holds it (ts_where 2) */
    OOC_TRY(open_spill(ts));
    int64_t nr, nc;
    tile_index(ts, idx / ts->cols.count, idx % ts->cols.count, &nr, &nc);
    c->io[c->nio++] = (sjob_t){ts, idx, nr, nc, nr, e->data, e, SJ_WRITE, OOC_OK};
    if (c->nio == c->capio) OOC_TRY(flush_batch(ts));
  }
  return c->nio ? flush_batch(ts) : OOC_OK;
}

int ts_has_source(const tstore_t *ts) { return ts->has_source; }

int ts_where(const tstore_t *ts, int64_t idx) {
  switch (ts->state[idx]) {
  case T_ZERO: return 0;
  case T_SOURCE: return ts->has_source ? 2 : 0;
  case T_SPILLED: return 1;
  case T_CACHED: /* valid only right after ts_flush, as documented */
    return ts->ent[idx]->clean && ts->has_source ? 2 : 1;
  default: return -1;
  }
}

ooc_status_t ts_restore(tstore_t *ts, const uint8_t *where) {
  int64_t nt = ts->rows.count * ts->cols.count;
  int any = 0;
  for (int64_t idx = 0; idx < nt; idx++)
    if (where[idx] == 2 && !ts->has_source)
      return OOC_FAIL(ts->ctx, OOC_ERR_INTERNAL, "restore: tile %lld is its source's, and the "
                      "store has no source", (long long)idx);
  if (ts->srcsum) memset(ts->srcsum, 0, (size_t)nt * sizeof(uint64_t)); /* not known now */
  for (int64_t idx = 0; idx < nt; idx++) {
    if (ts->ent[idx]) entry_free(ts->cache, ts->ent[idx]);
    ts->state[idx] = where[idx] == 1 ? T_SPILLED : where[idx] == 2 ? T_SOURCE : T_ZERO;
    any |= where[idx] == 1;
  }
  if (any) OOC_TRY(open_spill(ts));
  return OOC_OK;
}

void *ts_spill_handle(const tstore_t *ts) { return ts ? ts->spill_handle : NULL; }
