/* gj.c: striped Gauss-Jordan with partial pivoting on tile stores. See gj.h for the algorithm
 * and for the executor seam (the CPU executor is in gj_cpu.c; the CUDA one in kernels/cuda). */
#include "solvers/gj.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "solvers/gj_cpu.h"

int64_t gj_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  W = ooc_min64(W, n);
  int sweeps = (W < n || m > 0);
  /* the panel at the CPU executor's padded leading dimension (other executors' is n) */
  return 8 * (gj_cpu_ld(n) * W + n + W) + gj_cpu_workspace_bytes(n, b, W, sweeps);
}

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
  if (step % 2 == 0) /* the tiles touched last are then the first ones taken, still cached */
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

static void span(gj_exec_t *e, const char *what, double t0, int64_t bytes) {
  if (e->host_span) e->host_span(e, what, t0, ooc_now(), bytes);
}

/* Inversion: panel tile column tj goes back to the store as the new column block (once the
 * executor's writeback of it has reached the host). */
static ooc_status_t put_panel_col(gj_exec_t *ex, tstore_t *A, double *panel, int64_t ldp,
                                  int64_t kt0, int64_t tj) {
  part_t cols = ts_cols(A);
  int64_t c0 = (tj - kt0) * cols.b, nc = part_len(cols, tj);
  if (ex->panel_out) OOC_TRY(ex->panel_out(ex, c0, nc));
  double t0 = ooc_now();
  OOC_TRY(ts_put_col(A, tj, panel + c0 * ldp, ldp));
  span(ex, "put panel", t0, 8 * ts_rows(A).n * nc);
  return OOC_OK;
}

/* An executor's sweep calls this once target q is back in the store: progress, as the ring
 * reports it between blocks. */
typedef struct gj_between {
  ooc_ctx_t *ctx;
  int64_t step, nsteps, nt;
} gj_between_t;

static ooc_status_t between(void *user, int64_t q) {
  gj_between_t *w = user;
  return ooc_tick(w->ctx, "eliminate", (w->step + (q + 1.0) / (w->nt + 1.0)) / w->nsteps);
}

ooc_status_t gj_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info) {
  if (a->x) return gj_x_run(ctx, a, stats, info);
  part_t rows = ts_rows(a->A), cols = ts_cols(a->A);
  int64_t n = rows.n, b = rows.b, m = a->B ? ts_cols(a->B).n : 0;
  int64_t W = ts_stripe(n, b, a->stripe);
  ooc_status_t st = OOC_OK;
  *info = 0;
  memset(stats, 0, sizeof *stats);
  if (n == 0) return OOC_OK;

  int sweeps = (W < n || m > 0);
  gj_exec_t *cpu = NULL, *ex = a->exec;
  if (!ex) {
    st = gj_cpu_create(ctx, a->ops, n, b, W, sweeps, a->threads, &cpu);
    if (st != OOC_OK) return st;
    ex = cpu;
  }
  double *own_panel = NULL;
  double *panel = ex->panel;
  int64_t ldp = ex->panel_ld > 0 ? ex->panel_ld : n;
  gj_between_t bw = {.ctx = ctx};
  if (!panel) panel = own_panel = ooc_malloc(ctx, (size_t)(ldp * W) * sizeof(double));
  int64_t *ipiv = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  double *udiag = ooc_malloc(ctx, (size_t)W * sizeof(double));
  int64_t ntargets = cols.count + (a->B ? ts_cols(a->B).count : 0);
  gj_target_t *targets = ooc_malloc(ctx, (size_t)(ntargets + 1) * sizeof(gj_target_t));
  if (!panel || !ipiv || !udiag || !targets) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM,
                  "out of host memory for the Gauss-Jordan workspace (%lld bytes)",
                  (long long)gj_workspace_bytes(n, b, W, m));
    goto done;
  }
  int K = sweeps && !ex->sweep ? ex->nslots : 0;
  if (sweeps && !ex->sweep && (K < 1 || K > GJ_MAX_SLOTS || !ex->slot[0])) {
    st = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "executor %s has %d column slots", ex->name, K);
    goto done;
  }

  int64_t nsteps = ooc_cdiv64(n, W);
  if (a->start_step > 0 && a->ipiv0) memcpy(ipiv, a->ipiv0, (size_t)n * sizeof(int64_t));
  for (int64_t step = a->start_step; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0);
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    double t0 = ooc_now();

    for (int64_t tj = kt0; tj < kt1; tj++) {
      OOC_CHECK(st = ts_take_col(a->A, tj, panel + (tj - kt0) * b * ldp, ldp));
      if (ex->panel_in)
        OOC_CHECK(st = ex->panel_in(ex, panel, n, k0, w, (tj - kt0) * b, part_len(cols, tj)));
    }
    span(ex, "take panel", t0, 8 * n * w);
    OOC_CHECK(st = ex->factor(ex, panel, n, k0, w, ipiv, udiag));
    OOC_CHECK(st = gj_check_pivots(ctx, k0, w, udiag, a->colnorm, info));
    double t1 = ooc_now();
    stats->t_panel += t1 - t0;

    int64_t nt = gj_targets(a, step, kt0, kt1, targets);
    /* A ring of K slots: block q is taken into slot q % K while the executor still works on
     * blocks q-K+1 .. q-1; before a slot is reused, its block is completed and put back.
     * The blocks are updated from the factored panel (gj.h step 4), so the panel is
     * transformed only after the ring (step 5) and its tile columns go back after that, last
     * column first (an executor finishes the transform's columns last to first). */
    if (ex->sweep) {
      bw.step = step;
      bw.nsteps = nsteps;
      bw.nt = nt;
      OOC_CHECK(st = ex->sweep(ex, targets, nt, between, &bw));
    }
    for (int64_t q = 0; q < (ex->sweep ? 0 : nt + K); q++) {
      if (q >= K && q - K < nt) { /* retire block q-K */
        int s = (int)((q - K) % K);
        gj_target_t t = targets[q - K];
        OOC_CHECK(st = ex->complete(ex, s));
        double tp = ooc_now();
        OOC_CHECK(st = ts_put_col(t.ts, t.tj, ex->slot[s], n));
        span(ex, "put col", tp, 8 * n * part_len(ts_cols(t.ts), t.tj));
        OOC_CHECK(st = ooc_tick(ctx, "eliminate", (step + (q - K + 1.0) / (nt + 1.0)) / nsteps));
      }
      if (q < nt) {
        int s = (int)(q % K);
        gj_target_t t = targets[q];
        int64_t nc = part_len(ts_cols(t.ts), t.tj);
        double tt = ooc_now();
        OOC_CHECK(st = ts_take_col(t.ts, t.tj, ex->slot[s], n));
        span(ex, "take col", tt, 8 * n * nc);
        OOC_CHECK(st = ex->update(ex, s, nc));
      }
    }
    stats->t_update += ooc_now() - t1;
    if (!a->B) { /* step 5: the panel becomes the transform column, the new column block */
      double t2 = ooc_now();
      int64_t bad = 0;
      OOC_CHECK(st = ex->transform(ex, panel, 1, &bad));
      if (bad) {
        *info = k0 + bad;
        st = OOC_FAIL(ctx, OOC_ERR_SINGULAR, "matrix is singular: zero pivot in column %lld",
                      (long long)(k0 + bad - 1));
        goto done;
      }
      stats->t_panel += ooc_now() - t2;
      t1 = ooc_now();
    }
    for (int64_t pput = kt1 - 1; !a->B && pput >= kt0; pput--)
      OOC_CHECK(st = put_panel_col(ex, a->A, panel, ldp, kt0, pput));
    if (a->B)
      for (int64_t tj = kt0; tj < kt1; tj++)
        for (int64_t ti = 0; ti < rows.count; ti++) ts_drop(a->A, ti, tj);
    if (!a->B) stats->t_update += ooc_now() - t1;
    stats->steps++;
    if (a->after_step) OOC_CHECK(st = a->after_step(a->step_user, step, nsteps, ipiv));
    OOC_CHECK(st = ooc_tick(ctx, "eliminate", (step + 1.0) / nsteps));
  }

  if (a->perm) gj_perm(n, ipiv, a->perm);

done:
  /* An error with blocks in flight: let the executor finish them before buffers go away. */
  if (st != OOC_OK && a->exec)
    for (int s = 0; s < ex->nslots; s++) (void)ex->complete(ex, s);
  ooc_free(ctx, own_panel);
  gj_cpu_destroy(cpu);
  ooc_free(ctx, ipiv);
  ooc_free(ctx, udiag);
  ooc_free(ctx, targets);
  return st;
}
