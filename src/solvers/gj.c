/* gj.c: striped Gauss-Jordan with partial pivoting on tile stores. See gj.h for the algorithm. */
#include "solvers/gj.h"

#include <float.h>
#include <math.h>
#include <string.h>

int64_t gj_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  W = ooc_min64(W, n);
  int64_t sweeps = (W < n || m > 0);
  return 8 * (n * W + (sweeps ? n * b + W * b : 0) + n + W);
}

typedef struct target {
  tstore_t *ts;
  int64_t tj;
} target_t;

typedef struct step {
  const ooc_ops_t *ops;
  int64_t n, k0, w;
  const double *panel; /* n x w, ld n: N_up, P, N_low */
  const int64_t *ipiv; /* global, 0-based */
  double *R;           /* w x b */
} step_t;

/* Apply one elimination step to a gathered column block C (n x nc, ld n). */
static void update_block(const step_t *s, double *C, int64_t nc) {
  const ooc_ops_t *o = s->ops;
  int64_t n = s->n, k0 = s->k0, w = s->w, below = n - k0 - w;
  o->laswp(nc, C, n, k0, k0 + w, s->ipiv);
  for (int64_t j = 0; j < nc; j++) memcpy(s->R + j * w, C + k0 + j * n, (size_t)w * sizeof(double));
  if (k0 > 0) o->gemm('N', 'N', k0, nc, w, 1.0, s->panel, n, s->R, w, 1.0, C, n);
  if (below > 0)
    o->gemm('N', 'N', below, nc, w, 1.0, s->panel + k0 + w, n, s->R, w, 1.0, C + k0 + w, n);
  o->gemm('N', 'N', w, nc, w, 1.0, s->panel + k0, n, s->R, w, 0.0, C + k0, n);
}

/* Factor the panel in place (see gj.h step 2-3). Returns OOC_ERR_SINGULAR with *info set. */
static ooc_status_t factor_panel(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t k0,
                                 int64_t w, double *P, int64_t *ipiv_local, int64_t *ipiv,
                                 const double *colnorm, int64_t *info) {
  int64_t below = n - k0 - w;
  o->getrf(n - k0, w, P + k0, n, ipiv_local);
  for (int64_t j = 0; j < w; j++) {
    ipiv[k0 + j] = k0 + ipiv_local[j];
    double u = fabs(P[k0 + j + j * n]);
    if (!(u > DBL_EPSILON * colnorm[k0 + j])) { /* also catches NaN */
      *info = k0 + j + 1;
      return OOC_FAIL(ctx, OOC_ERR_SINGULAR,
                      "matrix is singular to working precision: no usable pivot for column %lld "
                      "(0-based; |pivot| = %.3g, column norm %.3g)",
                      (long long)(k0 + j), u, colnorm[k0 + j]);
    }
  }
  double *L11 = P + k0;
  if (k0 > 0) {
    o->trsm('R', 'U', 'N', 'N', k0, w, 1.0, L11, n, P, n);
    o->trsm('R', 'L', 'N', 'U', k0, w, -1.0, L11, n, P, n);
  }
  if (below > 0) o->trsm('R', 'L', 'N', 'U', below, w, -1.0, L11, n, P + k0 + w, n);
  int64_t bad = o->getri(w, L11, n);
  if (bad) {
    *info = k0 + bad;
    return OOC_FAIL(ctx, OOC_ERR_SINGULAR, "matrix is singular: zero pivot in column %lld",
                    (long long)(k0 + bad - 1));
  }
  return OOC_OK;
}

ooc_status_t gj_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info) {
  const ooc_ops_t *o = a->ops;
  part_t rows = ts_rows(a->A), cols = ts_cols(a->A);
  int64_t n = rows.n, b = rows.b, m = a->B ? ts_cols(a->B).n : 0;
  int64_t W = ooc_min64(ooc_max64(b, a->stripe / b * b), n);
  ooc_status_t st = OOC_OK;
  *info = 0;
  memset(stats, 0, sizeof *stats);
  if (n == 0) return OOC_OK;

  int sweeps = (W < n || m > 0);
  double *panel = ooc_malloc(ctx, (size_t)(n * W) * sizeof(double));
  double *C = sweeps ? ooc_malloc(ctx, (size_t)(n * b) * sizeof(double)) : NULL;
  double *R = sweeps ? ooc_malloc(ctx, (size_t)(W * b) * sizeof(double)) : NULL;
  int64_t *ipiv = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  int64_t *ipiv_local = ooc_malloc(ctx, (size_t)W * sizeof(int64_t));
  int64_t ntargets = cols.count + (a->B ? ts_cols(a->B).count : 0);
  target_t *targets = ooc_malloc(ctx, (size_t)(ntargets + 1) * sizeof(target_t));
  if (!panel || (sweeps && (!C || !R)) || !ipiv || !ipiv_local || !targets) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM,
                  "out of host memory for the Gauss-Jordan workspace (%lld bytes)",
                  (long long)gj_workspace_bytes(n, b, W, m));
    goto done;
  }

  int64_t nsteps = ooc_cdiv64(n, W);
  for (int64_t step = 0; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0);
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    double t0 = ooc_now();

    for (int64_t tj = kt0; tj < kt1; tj++)
      OOC_CHECK(st = ts_take_col(a->A, tj, panel + (tj - kt0) * b * n, n));
    OOC_CHECK(st = factor_panel(ctx, o, n, k0, w, panel, ipiv_local, ipiv, a->colnorm, info));
    double t1 = ooc_now();
    stats->t_panel += t1 - t0;

    /* The columns this step must update, in an order that alternates between steps. */
    int64_t nt = 0;
    for (int64_t tj = 0; tj < cols.count; tj++)
      if ((a->B ? tj >= kt1 : (tj < kt0 || tj >= kt1))) targets[nt++] = (target_t){a->A, tj};
    if (a->B)
      for (int64_t tj = 0; tj < ts_cols(a->B).count; tj++) targets[nt++] = (target_t){a->B, tj};
    step_t s = {o, n, k0, w, panel, ipiv, R};
    for (int64_t q = 0; q < nt; q++) {
      target_t t = targets[(step % 2 == 0) ? nt - 1 - q : q];
      int64_t nc = part_len(ts_cols(t.ts), t.tj);
      OOC_CHECK(st = ts_take_col(t.ts, t.tj, C, n));
      update_block(&s, C, nc);
      OOC_CHECK(st = ts_put_col(t.ts, t.tj, C, n));
      OOC_CHECK(st = ooc_tick(ctx, "eliminate", (step + (q + 1.0) / (nt + 1.0)) / nsteps));
    }
    for (int64_t tj = kt0; tj < kt1; tj++) {
      if (a->B) {
        for (int64_t ti = 0; ti < rows.count; ti++) ts_drop(a->A, ti, tj);
      } else {
        OOC_CHECK(st = ts_put_col(a->A, tj, panel + (tj - kt0) * b * n, n));
      }
    }
    stats->t_update += ooc_now() - t1;
    stats->steps++;
    OOC_CHECK(st = ooc_tick(ctx, "eliminate", (step + 1.0) / nsteps));
  }

  if (a->perm) { /* undo the row interchanges as column interchanges, last first */
    for (int64_t c = 0; c < n; c++) a->perm[c] = c;
    for (int64_t r = n - 1; r >= 0; r--) {
      int64_t p = ipiv[r], tmp = a->perm[r];
      a->perm[r] = a->perm[p];
      a->perm[p] = tmp;
    }
  }

done:
  ooc_free(ctx, panel);
  ooc_free(ctx, C);
  ooc_free(ctx, R);
  ooc_free(ctx, ipiv);
  ooc_free(ctx, ipiv_local);
  ooc_free(ctx, targets);
  return st;
}
