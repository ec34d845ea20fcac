/* lufix.c: LU's last row swaps in the background (lufix.h). A round is a flat list of jobs, each
 * OOC_ROWSWAP_COLS columns of one tile column with that column's interchange list (rowswap.h);
 * lists and jobs are built on the caller, from the lent tiles' buffers, so a round reads nothing
 * the caller may change. */
#include "solvers/lufix.h"

#include <stdatomic.h>

#include "base/parloop.h"
#include "base/rowswap.h"
#include "solvers/xdirect.h"

typedef struct {
  const ooc_rowswap_t *sw;
  int64_t nsw, c0, c1;
} fjob_t;

struct lufix {
  ooc_ctx_t *ctx;
  tstore_t *A;
  ooc_exec_t *trace;
  part_t rows, cols;
  xlend_t *d;          /* per tile column: its lent tiles (none: not joined, or nothing to do) */
  int64_t *from;       /* per tile column: the swaps queued, ipiv[0, from) (-1: not joined) */
  int threads;         /* a background round's (the caller keeps feeding the device) */
  /* the round */
  ooc_par_group_t g;
  int running;
  ooc_rowswap_t *sw;
  fjob_t *job;
  atomic_llong left;   /* its jobs not yet finished */
  double t0, t1;       /* its start; its end (written by the job that finishes last) */
  double busy;
};

static void run_job(void *arg, int64_t k, int worker) {
  (void)worker;
  lufix_t *f = arg;
  const fjob_t *j = &f->job[k];
  ooc_rowswap_cols(j->sw, j->nsw, j->c0, j->c1);
  if (atomic_fetch_sub(&f->left, 1) == 1) f->t1 = ooc_now(); /* read after the join */
}

/* The round's lists back; its span on the trace. */
static void join(lufix_t *f) {
  if (!f->running) return;
  ooc_par_join(&f->g);
  f->running = 0;
  f->busy += f->t1 - f->t0;
  ex_host_span(f->trace, "lu swaps (background)", f->t0, f->t1, 0);
  ooc_free(f->ctx, f->sw);
  ooc_free(f->ctx, f->job);
  f->sw = NULL;
  f->job = NULL;
}

ooc_status_t lufix_create(ooc_ctx_t *ctx, tstore_t *A, ooc_exec_t *trace, lufix_t **out) {
  *out = NULL;
  lufix_t *f = ooc_calloc(ctx, 1, sizeof *f);
  if (!f) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (LU's row swaps)");
  f->ctx = ctx;
  f->A = A;
  f->trace = trace;
  f->rows = ts_rows(A);
  f->cols = ts_cols(A);
  /* half the copy threads: the other half keeps the ring's copies and the caller's thread,
   * which feeds the device, from waiting for a core */
  f->threads = ooc_max64(1, tcache_threads(ts_cache(A)) / 2);
  int64_t nc = f->cols.count;
  f->d = ooc_calloc(ctx, (size_t)ooc_max64(1, nc), sizeof *f->d);
  f->from = ooc_malloc(ctx, (size_t)ooc_max64(1, nc) * sizeof *f->from);
  *out = f;
  if (!f->d || !f->from) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (LU's row swaps)");
  for (int64_t j = 0; j < nc; j++) f->from[j] = -1;
  return OOC_OK;
}

ooc_status_t lufix_add(lufix_t *f, int64_t tj, int64_t from, int *ok) {
  *ok = 0;
  if (tj < 0 || tj >= f->cols.count || f->from[tj] >= 0)
    return OOC_FAIL(f->ctx, OOC_ERR_INTERNAL, "lu swaps: tile column %lld joined twice or is "
                    "outside the store", (long long)tj);
  if (from >= f->rows.n) {
    *ok = 1;
    return OOC_OK;
  }
  if (!f->d[tj].tile) OOC_TRY(xl_alloc(f->ctx, &f->d[tj], 1, f->rows.count));
  int64_t t0 = from / f->rows.b, t1 = f->rows.count;
  OOC_TRY(xl_lend(&f->d[tj], 1, f->A, tj, &t0, &t1, TS_LEND_UPDATE, ok, NULL));
  if (*ok) f->from[tj] = from;
  return OOC_OK;
}

/* The next round's lists and jobs: every joined column's ipiv[from_j, known). */
static ooc_status_t build(lufix_t *f, const int64_t *ipiv, int64_t known, int64_t *njob) {
  int64_t nsw = 0, nj = 0, n = f->rows.n, b = f->rows.b;
  *njob = 0;
  for (int64_t tj = 0; tj < f->cols.count; tj++)
    if (f->from[tj] >= 0 && f->from[tj] < known) {
      nsw += known - f->from[tj];
      nj += ooc_cdiv64(part_len(f->cols, tj), OOC_ROWSWAP_COLS);
    }
  if (nsw == 0) return OOC_OK;
  for (int64_t tj = 0; tj < f->cols.count; tj++)
    for (int64_t k = f->from[tj]; f->from[tj] >= 0 && k < known; k++)
      if (ipiv[k] < k || ipiv[k] >= n)
        return OOC_FAIL(f->ctx, OOC_ERR_INTERNAL, "lu swaps: row swap %lld <-> %lld outside "
                        "rows [%lld, %lld)", (long long)k, (long long)ipiv[k], (long long)k,
                        (long long)n);
  f->sw = ooc_malloc(f->ctx, (size_t)nsw * sizeof *f->sw);
  f->job = ooc_malloc(f->ctx, (size_t)nj * sizeof *f->job);
  if (!f->sw || !f->job) {
    ooc_free(f->ctx, f->sw);
    ooc_free(f->ctx, f->job);
    f->sw = NULL;
    f->job = NULL;
    return OOC_FAIL(f->ctx, OOC_ERR_NOMEM, "out of host memory (LU's row swaps: %lld)",
                    (long long)nsw);
  }
  int64_t s = 0;
  for (int64_t tj = 0; tj < f->cols.count; tj++) {
    if (f->from[tj] < 0 || f->from[tj] >= known) continue;
    const xlend_t *d = &f->d[tj];
    int64_t s0 = s;
    for (int64_t k = f->from[tj]; k < known; k++) {
      int64_t p = ipiv[k];
      if (p == k) continue;
      f->sw[s++] = (ooc_rowswap_t){d->tile[k / b - d->t0] + k % b, d->tile[p / b - d->t0] + p % b,
                                   part_len(f->rows, k / b), part_len(f->rows, p / b)};
    }
    for (int64_t c0 = 0, nc = part_len(f->cols, tj); c0 < nc && s > s0; c0 += OOC_ROWSWAP_COLS)
      f->job[(*njob)++] = (fjob_t){f->sw + s0, s - s0, c0, ooc_min64(nc, c0 + OOC_ROWSWAP_COLS)};
    f->from[tj] = known;
  }
  return OOC_OK;
}

ooc_status_t lufix_advance(lufix_t *f, const int64_t *ipiv, int64_t known, int wait) {
  if (f->running) {
    if (!wait && atomic_load(&f->left) > 0) return OOC_OK; /* the next call takes these */
    join(f);
  }
  int64_t njob = 0;
  OOC_TRY(build(f, ipiv, known, &njob));
  if (njob == 0) { /* nothing, or only pivots in place */
    ooc_free(f->ctx, f->sw);
    ooc_free(f->ctx, f->job);
    f->sw = NULL;
    f->job = NULL;
    return OOC_OK;
  }
  f->t0 = f->t1 = ooc_now();
  atomic_store(&f->left, njob);
  f->running = 1;
  /* wait: the device is done, every copy thread takes part (the join runs jobs on the caller) */
  ooc_par_start(&f->g, wait ? tcache_threads(ts_cache(f->A)) : f->threads, njob, run_job, f);
  if (wait) join(f);
  return OOC_OK;
}

void lufix_end(lufix_t *f, int64_t *done) {
  if (!f) return;
  join(f);
  for (int64_t tj = 0; f->d && tj < f->cols.count; tj++) {
    if (f->from && f->from[tj] >= 0 && done) done[tj] = f->from[tj];
    xl_return(&f->d[tj], 1, 0);
    xl_free(f->ctx, &f->d[tj], 1);
  }
  ooc_free(f->ctx, f->d);
  ooc_free(f->ctx, f->from);
  ooc_free(f->ctx, f);
}

double lufix_time(const lufix_t *f) { return f ? f->busy : 0; }
