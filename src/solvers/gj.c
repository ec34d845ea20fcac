/* gj.c: striped Gauss-Jordan with partial pivoting on tile stores: the entry (gj_run) and what
 * the algorithm decides beside the executor's arithmetic (pivot test, sweep order, perm). The
 * schedule on the executor is gj_x.c's; gj.h states both. */
#include "solvers/gj.h"

#include <float.h>
#include <math.h>
#include <string.h>


/* ---- the algorithm -------------------------------------------------------------------------- */

/* gj.h step 2: the pivots the executor found must be usable. */
ooc_status_t gj_check_pivots(ooc_ctx_t *ctx, int64_t k0, int64_t w, const double *udiag,
                             const double *colnorm, int64_t *info) {
  for (int64_t j = 0; j < w; j++) {
    double u = udiag[j];
    if (!(u > DBL_EPSILON * colnorm[k0 + j])) { /* also catches NaN */
      *info = k0 + j + 1;
      return OOC_FAIL(ctx, OOC_ERR_SINGULAR,
                      "matrix is singular to working precision: no usable pivot for column %lld "
                      "(0-based; |pivot| = %.3g, column norm %.3g)",
                      (long long)(k0 + j), u, colnorm[k0 + j]);
    }
  }
  return OOC_OK;
}

int64_t gj_targets(const gj_args_t *a, int64_t step, int64_t kt0, int64_t kt1, gj_target_t *t) {
  int64_t nt = 0;
  for (int64_t tj = 0; tj < ts_cols(a->A).count; tj++)
    if ((a->B ? tj >= kt1 : (tj < kt0 || tj >= kt1))) t[nt++] = (gj_target_t){a->A, tj};
  if (a->B)
    for (int64_t tj = 0; tj < ts_cols(a->B).count; tj++) t[nt++] = (gj_target_t){a->B, tj};
  if ((step + (a->need != NULL)) % 2 == 0) /* the tiles touched last are then the first ones
                                              taken, still cached */
    for (int64_t q = 0; q < nt / 2; q++) {
      gj_target_t tmp = t[q];
      t[q] = t[nt - 1 - q];
      t[nt - 1 - q] = tmp;
    }
  return nt;
}

void gj_perm(int64_t n, const int64_t *ipiv, int64_t *perm) {
  for (int64_t c = 0; c < n; c++) perm[c] = c;
  for (int64_t r = n - 1; r >= 0; r--) {
    int64_t p = ipiv[r], tmp = perm[r];
    perm[r] = perm[p];
    perm[p] = tmp;
  }
}

ooc_status_t gj_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info) {
  if (a->x) return gj_x_run(ctx, a, stats, info);
  /* no executor given: a host executor over the ops table, made for the call */
  part_t rows = ts_rows(a->A);
  ooc_exec_t *x = NULL;
  *info = 0;
  memset(stats, 0, sizeof *stats);
  OOC_TRY(gj_x_host_exec(ctx, a->ops, rows.n, rows.b, a->stripe, &x));
  gj_args_t h = *a;
  h.x = x;
  ooc_status_t st = gj_x_run(ctx, &h, stats, info);
  ex_destroy(x);
  return st;
}
