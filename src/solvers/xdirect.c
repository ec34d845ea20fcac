/* xdirect.c: direct moves, shared by the methods that stream tile columns (xdirect.h). */
#include "solvers/xdirect.h"

#include "exec/exset.h"

ooc_status_t xl_alloc(ooc_ctx_t *ctx, xlend_t *d, int n, int64_t ntiles) {
  for (int i = 0; i < n; i++) {
    d[i] = (xlend_t){0};
    d[i].tile = ooc_malloc(ctx, (size_t)ooc_max64(1, ntiles) * sizeof(double *));
    if (!d[i].tile)
      return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the lent tiles' pointers "
                      "(%lld tile rows)", (long long)ntiles);
  }
  return OOC_OK;
}

void xl_free(ooc_ctx_t *ctx, xlend_t *d, int n) {
  for (int i = 0; i < n; i++) {
    ooc_free(ctx, d[i].tile);
    d[i].tile = NULL;
  }
}

int xl_any(const xlend_t *d, int n) {
  for (int i = 0; i < n; i++)
    if (xl_lent(&d[i])) return 1;
  return 0;
}

ooc_status_t xl_lend(xlend_t *d, int n, tstore_t *S, int64_t tj, const int64_t *t0,
                     const int64_t *t1, int mode, int *ok, int64_t *bytes) {
  part_t rows = ts_rows(S);
  int64_t moved = 0, bj = part_len(ts_cols(S), tj);
  *ok = 0;
  for (int i = 0; i < n; i++) d[i].t0 = d[i].t1 = 0;
  for (int i = 0; i < n; i++) {
    if (t0[i] >= t1[i]) continue;
    int lent = 0;
    ooc_status_t st = ts_lend(S, t0[i], t1[i], tj, mode, d[i].tile, &lent);
    if (st != OOC_OK || !lent) { /* all or nothing: the ranges before it go back as they were */
      xl_return(d, i, 0);
      return st;
    }
    d[i].S = S;
    d[i].tj = tj;
    d[i].t0 = t0[i];
    d[i].t1 = t1[i];
    moved += 8 * bj * (part_start(rows, t1[i] - 1) + part_len(rows, t1[i] - 1) -
                       part_start(rows, t0[i]));
  }
  *ok = 1;
  if (bytes) *bytes = moved;
  return OOC_OK;
}

ooc_status_t xl_move(const xlend_t *d, int n, ooc_exec_t *ex, int q, double *dev, int64_t ldd,
                     int get) {
  for (int i = 0; i < n; i++) {
    if (!xl_lent(&d[i])) continue;
    part_t rows = ts_rows(d[i].S);
    int64_t bj = part_len(ts_cols(d[i].S), d[i].tj);
    for (int64_t ti = d[i].t0; ti < d[i].t1; ti++) {
      int64_t nr = part_len(rows, ti);
      double *h = d[i].tile[ti - d[i].t0], *dv = dev + part_start(rows, ti);
      OOC_TRY(get ? ex_get(ex, q, nr, bj, dv, ldd, h, nr) : ex_put(ex, q, nr, bj, h, nr, dv, ldd));
    }
  }
  return OOC_OK;
}

void xl_return(xlend_t *d, int n, int forget) {
  for (int i = 0; i < n; i++) {
    if (xl_lent(&d[i])) ts_return(d[i].S, d[i].t0, d[i].t1, d[i].tj, forget);
    d[i].t0 = d[i].t1 = 0;
  }
}

void xpin_on(xpin_t *p, ooc_exec_t *ex, tstore_t *A, tstore_t *B) {
  *p = (xpin_t){0};
  if (!ex || !ex_can_register(ex)) return;
  p->ex = ex;
  p->c[0] = ts_cache(A);
  p->c[1] = B ? ts_cache(B) : NULL;
  if (p->c[1] == p->c[0]) p->c[1] = NULL;
  for (int i = 0; i < 2; i++) {
    if (!p->c[i]) continue;
    p->own[i] = tcache_pin_user(p->c[i]) == NULL;
    if (p->own[i]) tcache_set_pin(p->c[i], ex_pin_cb, ex_unpin_cb, ex);
  }
}

void xpin_off(xpin_t *p, int64_t *pinned, int64_t *refused) {
  if (!p->ex) return;
  for (int i = 0; i < 2; i++) {
    if (!p->c[i]) continue;
    int64_t pn, rf;
    tcache_pin_stats(p->c[i], &pn, &rf);
    *pinned += pn;
    *refused += rf;
    if (p->own[i]) tcache_set_pin(p->c[i], NULL, NULL, NULL);
  }
  *p = (xpin_t){0};
}
