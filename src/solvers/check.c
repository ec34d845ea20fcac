/* check.c: residual ratios by streaming. See check.h. */
#include "solvers/check.h"

#include <float.h>
#include <math.h>
#include <string.h>

double check_eps(int f32) { return f32 ? FLT_EPSILON / 2 : DBL_EPSILON / 2; }

/* max that lets NaN win: a NaN anywhere must fail the check */
static double nanmax(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  return a > b ? a : b;
}

static double max_colsum(const double *acc, int64_t n) {
  double m = 0;
  for (int64_t j = 0; j < n; j++) m = nanmax(m, acc[j]);
  return m;
}

/* Column block width for `nbuf` buffers of n rows (ours plus the reader's staging) within `mem` bytes: as wide as memory allows
 * (few, large reads), a multiple of the tile when at least one tile wide (aligned with chunks). */
static int64_t block_width(int64_t n, int64_t b, int64_t mem, int nbuf) {
  int64_t w = ooc_min64(n, mem / (8 * n * nbuf));
  if (w >= b) w = w / b * b;
  return ooc_max64(1, w);
}

ooc_status_t check_inverse(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                           const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                           int64_t mem, double *ratio, double *norm1_a, double *norm1_x) {
  ooc_status_t st = OOC_OK;
  int64_t bw = block_width(n, b, mem, 4), p = OOC_CHECK_PROBES;
  part_t cp = part_make(n, bw);
  double *Xj = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Al = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Rj = ooc_malloc(ctx, (size_t)(n * (full ? bw : 2 * p)) * sizeof(double));
  double *acc_a = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_x = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_r = ooc_calloc(ctx, (size_t)(full ? bw : p), sizeof(double));
  double *t = full ? NULL : ooc_malloc(ctx, (size_t)(n * p) * sizeof(double));
  int64_t bi, bj;
  *ratio = NAN;
  if (!Xj || !Al || !Rj || !acc_a || !acc_x || !acc_r || (!full && !t)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double rmax = 0;
  if (full) {
    for (int64_t j = 0; j < cp.count; j++) {
      int64_t c0 = part_start(cp, j), nc = part_len(cp, j);
      OOC_CHECK(st = X->read(X->self, 0, c0, n, nc, Xj, n));
      o->colabs(n, nc, Xj, n, acc_x + c0, &bi, &bj);
      memset(Rj, 0, (size_t)(n * nc) * sizeof(double));
      for (int64_t c = 0; c < nc; c++) Rj[c0 + c + c * n] = -1.0;
      for (int64_t l = 0; l < cp.count; l++) {
        int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
        OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
        if (j == 0) o->colabs(n, nl, Al, n, acc_a + l0, &bi, &bj);
        o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Xj + l0, n, 1.0, Rj, n);
      }
      memset(acc_r, 0, (size_t)nc * sizeof(double));
      o->colabs(n, nc, Rj, n, acc_r, &bi, &bj);
      rmax = nanmax(rmax, max_colsum(acc_r, nc));
      OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / cp.count));
    }
    *norm1_a = max_colsum(acc_a, n);
    *norm1_x = max_colsum(acc_x, n);
    *ratio = rmax / ((double)n * *norm1_a * *norm1_x * eps);
  } else {
    /* u = X t, then r = A u - t; t has +-1 entries from a fixed LCG (reproducible). */
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n * p; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      t[i] = (s >> 63) ? 1.0 : -1.0;
    }
    double *u = Rj, *r = Rj + n * p;
    memset(u, 0, (size_t)(n * p) * sizeof(double));
    for (int64_t j = 0; j < cp.count; j++) {
      int64_t c0 = part_start(cp, j), nc = part_len(cp, j);
      OOC_CHECK(st = X->read(X->self, 0, c0, n, nc, Xj, n));
      o->colabs(n, nc, Xj, n, acc_x + c0, &bi, &bj);
      o->gemm('N', 'N', n, p, nc, 1.0, Xj, n, t + c0, n, 1.0, u, n);
      OOC_CHECK(st = ooc_tick(ctx, "check", 0.5 * (j + 1.0) / cp.count));
    }
    for (int64_t i = 0; i < n * p; i++) r[i] = -t[i];
    for (int64_t l = 0; l < cp.count; l++) {
      int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
      OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
      o->colabs(n, nl, Al, n, acc_a + l0, &bi, &bj);
      o->gemm('N', 'N', n, p, nl, 1.0, Al, n, u + l0, n, 1.0, r, n);
      OOC_CHECK(st = ooc_tick(ctx, "check", 0.5 + 0.5 * (l + 1.0) / cp.count));
    }
    o->colabs(n, p, r, n, acc_r, &bi, &bj);
    *norm1_a = max_colsum(acc_a, n);
    *norm1_x = max_colsum(acc_x, n);
    for (int64_t c = 0; c < p; c++) /* ||t_c||_1 = n */
      rmax = nanmax(rmax, acc_r[c] / (double)n);
    *ratio = rmax / ((double)n * *norm1_a * *norm1_x * eps);
  }
done:
  ooc_free(ctx, Xj);
  ooc_free(ctx, Al);
  ooc_free(ctx, Rj);
  ooc_free(ctx, acc_a);
  ooc_free(ctx, acc_x);
  ooc_free(ctx, acc_r);
  ooc_free(ctx, t);
  return st;
}

static double absmax(const double *v, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = nanmax(m, fabs(v[i]));
  return m;
}

/* The solve ratio with A given either as itself (L == NULL... see check.h) or as a factor L:
 * then A X = L (L^T X) is formed strip by strip of L, Y_l = L[:, l]^T X, R += L[:, l] Y_l,
 * one pass over L per block of right-hand sides, and ||A||_inf is `anorm` when > 0, else the
 * bound ||L||_inf ||L||_1. */
static ooc_status_t solve_ratio(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *A, int factored, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x) {
  ooc_status_t st = OOC_OK;
  int64_t bw = block_width(n, b, mem, factored ? 6 : 5);
  part_t cp = part_make(m, bw), ap = part_make(n, bw);
  double *Xj = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Rj = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Al = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *rowsum = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_x = ooc_calloc(ctx, (size_t)bw, sizeof(double));
  double *b_inf = ooc_calloc(ctx, (size_t)bw, sizeof(double));
  double *colsum = factored ? ooc_calloc(ctx, (size_t)n, sizeof(double)) : NULL;
  double *Yl = factored ? ooc_malloc(ctx, (size_t)(bw * bw) * sizeof(double)) : NULL;
  int64_t bi, bj;
  *ratio = NAN;
  *norm1_x = 0;
  if (!Xj || !Rj || !Al || !rowsum || !acc_x || !b_inf || (factored && (!colsum || !Yl))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double worst = 0, anorm_inf = 0;
  for (int64_t j = 0; j < cp.count; j++) {
    int64_t c0 = part_start(cp, j), nc = part_len(cp, j);
    OOC_CHECK(st = X->read(X->self, 0, c0, n, nc, Xj, n));
    OOC_CHECK(st = B->read(B->self, 0, c0, n, nc, Rj, n));
    memset(acc_x, 0, (size_t)nc * sizeof(double));
    o->colabs(n, nc, Xj, n, acc_x, &bi, &bj);
    *norm1_x = nanmax(*norm1_x, max_colsum(acc_x, nc));
    for (int64_t c = 0; c < nc; c++) b_inf[c] = absmax(Rj + c * n, n);
    for (int64_t i = 0; i < n * nc; i++) Rj[i] = -Rj[i]; /* R = A X - B, streaming A */
    for (int64_t l = 0; l < ap.count; l++) {
      int64_t l0 = part_start(ap, l), nl = part_len(ap, l);
      OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
      if (j == 0)
        for (int64_t q = 0; q < nl; q++)
          for (int64_t i = 0; i < n; i++) rowsum[i] += fabs(Al[i + q * n]);
      if (factored) {
        if (j == 0) o->colabs(n, nl, Al, n, colsum + l0, &bi, &bj);
        o->gemm('T', 'N', nl, nc, n, 1.0, Al, n, Xj, n, 0.0, Yl, nl);
        o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Yl, nl, 1.0, Rj, n);
      } else {
        o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Xj + l0, n, 1.0, Rj, n);
      }
    }
    if (j == 0)
      anorm_inf = !factored ? absmax(rowsum, n)
                  : anorm > 0 ? anorm : absmax(rowsum, n) * max_colsum(colsum, n);
    for (int64_t c = 0; c < nc; c++) {
      double r_inf = absmax(Rj + c * n, n), x_inf = absmax(Xj + c * n, n);
      worst = nanmax(worst, r_inf / (eps * (anorm_inf * x_inf + b_inf[c]) * (double)n));
    }
    OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / cp.count));
  }
  *ratio = worst;
done:
  ooc_free(ctx, Xj);
  ooc_free(ctx, Rj);
  ooc_free(ctx, Al);
  ooc_free(ctx, rowsum);
  ooc_free(ctx, acc_x);
  ooc_free(ctx, b_inf);
  ooc_free(ctx, colsum);
  ooc_free(ctx, Yl);
  return st;
}

ooc_status_t check_solve(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m, int64_t b,
                         const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *X,
                         double eps, int64_t mem, double *ratio, double *norm1_x) {
  return solve_ratio(ctx, o, n, m, b, A, 0, 0, B, X, eps, mem, ratio, norm1_x);
}

ooc_status_t check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *L, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x) {
  return solve_ratio(ctx, o, n, m, b, L, 1, anorm, B, X, eps, mem, ratio, norm1_x);
}

ooc_status_t check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                          const ooc_source_t *A, const ooc_source_t *L, int full, double eps,
                          int64_t mem, double *ratio, double *norm1_a) {
  ooc_status_t st = OOC_OK;
  int64_t bw = block_width(n, b, mem, 4), p = OOC_CHECK_PROBES;
  int64_t rc = full ? bw : p; /* columns of the residual block */
  part_t cp = part_make(n, bw);
  double *Al = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Rj = ooc_malloc(ctx, (size_t)(n * rc) * sizeof(double));
  double *Yl = ooc_malloc(ctx, (size_t)(bw * ooc_max64(bw, p)) * sizeof(double));
  double *acc_a = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_r = ooc_calloc(ctx, (size_t)rc, sizeof(double));
  double *t = full ? NULL : ooc_malloc(ctx, (size_t)(n * p) * sizeof(double));
  int64_t bi, bj;
  *ratio = NAN;
  if (!Al || !Rj || !Yl || !acc_a || !acc_r || (!full && !t)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double rmax = 0;
  /* Residual block R = L L^T T - A T for T = the identity's columns [c0, c0+nc) (full) or the
   * probe vectors: A T by streaming A, L (L^T T) by streaming L, both by column strips. */
  int64_t nblocks = full ? cp.count : 1;
  if (!full) {
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n * p; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      t[i] = (s >> 63) ? 1.0 : -1.0;
    }
  }
  for (int64_t j = 0; j < nblocks; j++) {
    int64_t c0 = full ? part_start(cp, j) : 0, nc = full ? part_len(cp, j) : p;
    memset(Rj, 0, (size_t)(n * nc) * sizeof(double));
    for (int64_t l = 0; l < cp.count; l++) { /* R -= A T */
      int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
      if (full && l != j) continue; /* A T for T = I[:, block j] is just A's block j */
      OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
      o->colabs(n, nl, Al, n, acc_a + l0, &bi, &bj);
      if (full)
        for (int64_t i = 0; i < n * nl; i++) Rj[i] = -Al[i];
      else
        o->gemm('N', 'N', n, nc, nl, -1.0, Al, n, t + l0, n, 1.0, Rj, n);
    }
    for (int64_t l = 0; l < cp.count; l++) { /* R += L (L^T T), strip by strip of L */
      int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
      if (full && l0 > c0 + nc - 1) break; /* L^T T is zero below row c0 + nc - 1 */
      OOC_CHECK(st = L->read(L->self, 0, l0, n, nl, Al, n));
      if (full) /* Y = L[:, l]^T I[:, c0:c0+nc] = rows c0.. of L[:, l], transposed */
        for (int64_t c = 0; c < nc; c++)
          for (int64_t q = 0; q < nl; q++) Yl[q + c * nl] = Al[c0 + c + q * n];
      else
        o->gemm('T', 'N', nl, nc, n, 1.0, Al, n, t, n, 0.0, Yl, nl);
      o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Yl, nl, 1.0, Rj, n);
    }
    memset(acc_r, 0, (size_t)nc * sizeof(double));
    o->colabs(n, nc, Rj, n, acc_r, &bi, &bj);
    for (int64_t c = 0; c < nc; c++) /* ||t_c||_1 = n for a probe, 1 for a unit vector */
      rmax = nanmax(rmax, acc_r[c] / (full ? 1.0 : (double)n));
    OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / nblocks));
  }
  *norm1_a = max_colsum(acc_a, n);
  *ratio = rmax / ((double)n * *norm1_a * eps);
done:
  ooc_free(ctx, Al);
  ooc_free(ctx, Rj);
  ooc_free(ctx, Yl);
  ooc_free(ctx, acc_a);
  ooc_free(ctx, acc_r);
  ooc_free(ctx, t);
  return st;
}
