/* lu_check.c: residual checks of LU factors and of solves from them, read back from the files
 * (lu.h). Plain host code through the ops table: a check reads what was written and must not
 * share the executor that produced it. */
#include <math.h>
#include <string.h>

#include "solvers/check.h"
#include "solvers/lu.h"
#include "solvers/readahead.h"

typedef struct {
  ooc_ctx_t *ctx;
  const ooc_ops_t *o;
  int64_t n, b;
  const ooc_source_t *LU;
  double *strip[2];     /* n x b each, ld n: the read-ahead's buffers (readahead.h) */
  double *D;            /* b x b: a diagonal block's lower part while U's is used */
  double *V;            /* n x k */
  double *rowL, *rowU;  /* |L| and |U| row sums (first pass only), or NULL */
} fac_t;

/* Y = L (U T) for T (n x k, ld n), V = U T on the way, in ONE pass over the file's tile columns
 * from the last to the first, each read whole (the next one read in the background while this
 * one's GEMMs run): column j's rows [0, c1) with the entries below the diagonal zeroed add U's
 * part to V; V's rows of block j are then final (only columns >= j reach them), so the same
 * column's rows [c0, n) with the entries on and above the diagonal zeroed add strictly lower L's
 * part to Y at once; the unit diagonal adds V at the end. (Before: U's halves of the columns
 * ascending, then L's: the same bytes in twice the reads, none of them ahead.) */
static ooc_status_t apply_lu(fac_t *f, const double *T, int64_t k, double *Y) {
  int64_t n = f->n, b = f->b;
  part_t p = part_make(n, b);
  double *V = f->V, *D = f->D;
  readahead_t ra;
  memset(V, 0, (size_t)(n * k) * sizeof(double));
  memset(Y, 0, (size_t)(n * k) * sizeof(double));
  ra_begin_rev(&ra, f->LU, n, 0, p, f->strip[0], f->strip[1]);
  for (int64_t j = p.count - 1; j >= 0; j--) {
    int64_t c0 = part_start(p, j), bj = part_len(p, j), c1 = c0 + bj;
    double *S;
    OOC_TRY(ra_next(&ra, &S));
    for (int64_t c = 0; c < bj; c++) /* U: the diagonal block's lower part set aside */
      for (int64_t i = c0 + c + 1; i < c1; i++) {
        D[i - c0 + c * bj] = S[i + c * n];
        S[i + c * n] = 0;
      }
    if (f->rowU)
      for (int64_t c = 0; c < bj; c++)
        for (int64_t i = 0; i < c1; i++) f->rowU[i] += fabs(S[i + c * n]);
    f->o->gemm('N', 'N', c1, k, bj, 1.0, S, n, T + c0, n, 1.0, V, n);
    for (int64_t c = 0; c < bj; c++) /* strictly lower L: the block's lower part back */
      for (int64_t i = c0; i < c1; i++) S[i + c * n] = i > c0 + c ? D[i - c0 + c * bj] : 0;
    if (f->rowL)
      for (int64_t c = 0; c < bj; c++)
        for (int64_t i = c0; i < n; i++) f->rowL[i] += fabs(S[i + c * n]);
    f->o->gemm('N', 'N', n - c0, k, bj, 1.0, S + c0, n, V + c0, n, 1.0, Y + c0, n);
  }
  ra_end(&ra);
  for (int64_t i = 0; i < n * k; i++) Y[i] += V[i];
  return OOC_OK;
}

/* Columns per block for nbuf n-column buffers besides the two strips within mem (at least 1). */
static int64_t cols_for(int64_t n, int64_t b, int64_t mem, int nbuf, int64_t most) {
  int64_t k = (mem - 16 * n * b - 8 * b * b) / (8 * n * nbuf);
  return ooc_max64(1, ooc_min64(k, most));
}

static void rand_pm1(double *T, int64_t n, int64_t k, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n * k; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    T[i] = (s >> 63) ? 1.0 : -1.0;
  }
}

ooc_status_t lu_check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                             const ooc_source_t *A, const ooc_source_t *LU, const int64_t *ipiv,
                             int full, double anorm1, double eps, int64_t mem,
                             const check_probe_t *probe, double *ratio) {
  *ratio = 0;
  if (n == 0) return OOC_OK;
  b = ooc_min64(b, n);
  int loaded = !full && check_probe_done(probe); /* A T formed by the load: no pass over A */
  int64_t k = full ? cols_for(n, b, mem, 4, n) : loaded ? CHECK_PROBE_K : OOC_CHECK_PROBES;
  k = ooc_min64(k, full ? n : k);
  fac_t f = {ctx, o, n, b, LU, {NULL, NULL}, NULL, NULL, NULL, NULL};
  /* T: the probes (the load's vectors as they are, else made here) */
  double *T = loaded ? NULL : ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  const double *Tp = loaded ? check_probe_v(probe) : T;
  double *Y = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  double *Z = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  f.V = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  f.strip[0] = ooc_malloc(ctx, (size_t)(n * b) * sizeof(double));
  f.strip[1] = ooc_malloc(ctx, (size_t)(n * b) * sizeof(double));
  f.D = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  ooc_status_t st = OOC_OK;
  if (!Tp || !Y || !Z || !f.V || !f.strip[0] || !f.strip[1] || !f.D) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory checking the LU factor (n = %lld)",
                  (long long)n);
    goto done;
  }
  double worst = 0;
  int64_t nblk = full ? ooc_cdiv64(n, k) : 1;
  for (int64_t blk = 0; blk < nblk; blk++) {
    int64_t t0 = blk * k, kk = full ? ooc_min64(k, n - t0) : k;
    if (full) {
      memset(T, 0, (size_t)(n * kk) * sizeof(double));
      for (int64_t c = 0; c < kk; c++) T[t0 + c + c * n] = 1.0;
    } else if (!loaded) {
      rand_pm1(T, n, kk, 0x5eed1u);
    }
    OOC_CHECK(st = apply_lu(&f, Tp, kk, Y));
    memset(Z, 0, (size_t)(n * kk) * sizeof(double));
    if (loaded) memcpy(Z, check_probe_av(probe), (size_t)(n * kk) * sizeof(double));
    /* A's tile columns where T has rows (all for the probes), each read while the last's GEMM
     * runs */
    int64_t a0 = full ? t0 / b * b : 0, a1 = full ? ooc_min64(n, ooc_cdiv64(t0 + kk, b) * b) : n;
    if (!loaded) {
      readahead_t ra;
      ra_begin(&ra, A, n, a0, part_make(a1 - a0, b), f.strip[0], f.strip[1]);
      for (int64_t c0 = a0; c0 < a1; c0 += b) {
        double *S;
        OOC_CHECK(st = ra_next(&ra, &S)); /* a failed one leaves no read running */
        o->gemm('N', 'N', n, kk, ooc_min64(b, n - c0), 1.0, S, n, Tp + c0, n, 1.0, Z, n);
      }
      ra_end(&ra);
    }
    o->laswp(kk, Z, n, 0, n, ipiv); /* P A T */
    for (int64_t c = 0; c < kk; c++) {
      double s = 0, tn = 0;
      for (int64_t i = 0; i < n; i++) {
        s += fabs(Y[i + c * n] - Z[i + c * n]);
        tn += fabs(Tp[i + c * n]);
      }
      double r = s / tn;
      worst = (r > worst || isnan(r)) && !isnan(worst) ? r : worst;
    }
    OOC_CHECK(st = ooc_tick(ctx, "check", (blk + 1.0) / nblk));
  }
  *ratio = worst / (n * anorm1 * eps);
  if (anorm1 == 0) *ratio = worst == 0 ? 0 : NAN;
done:
  ooc_free(ctx, T);
  ooc_free(ctx, Y);
  ooc_free(ctx, Z);
  ooc_free(ctx, f.V);
  ooc_free(ctx, f.strip[0]);
  ooc_free(ctx, f.strip[1]);
  ooc_free(ctx, f.D);
  return st;
}

ooc_status_t lu_check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                   int64_t b, const ooc_source_t *LU, const int64_t *ipiv,
                                   double anorm_inf, const ooc_source_t *B, const ooc_source_t *X,
                                   double eps, int64_t mem, double *ratio, double *norm1_x) {
  *ratio = 0;
  *norm1_x = 0;
  if (n == 0 || m == 0) return OOC_OK;
  b = ooc_min64(b, n);
  int64_t k = cols_for(n, b, mem, 4, m);
  fac_t f = {ctx, o, n, b, LU, {NULL, NULL}, NULL, NULL, NULL, NULL};
  double *Xb = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  double *Bb = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  double *Y = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  f.V = ooc_malloc(ctx, (size_t)(n * k) * sizeof(double));
  f.strip[0] = ooc_malloc(ctx, (size_t)(n * b) * sizeof(double));
  f.strip[1] = ooc_malloc(ctx, (size_t)(n * b) * sizeof(double));
  f.D = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  double *rows = anorm_inf > 0 ? NULL : ooc_calloc(ctx, (size_t)(2 * n), sizeof(double));
  ooc_status_t st = OOC_OK;
  if (!Xb || !Bb || !Y || !f.V || !f.strip[0] || !f.strip[1] || !f.D ||
      (anorm_inf <= 0 && !rows)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory checking the solve (n = %lld)",
                  (long long)n);
    goto done;
  }
  double worst = 0, xn1 = 0;
  for (int64_t c0 = 0; c0 < m; c0 += k) {
    int64_t kk = ooc_min64(k, m - c0);
    OOC_CHECK(st = X->read(X->self, 0, c0, n, kk, Xb, n));
    OOC_CHECK(st = B->read(B->self, 0, c0, n, kk, Bb, n));
    f.rowU = rows && c0 == 0 ? rows : NULL;
    f.rowL = rows && c0 == 0 ? rows + n : NULL;
    OOC_CHECK(st = apply_lu(&f, Xb, kk, Y));
    if (rows && c0 == 0) { /* ||A||_inf <= ||P^T|| ||L||_inf ||U||_inf, ||P^T||_inf = 1 */
      double lu = 0, uu = 0;
      for (int64_t i = 0; i < n; i++) {
        lu = fmax(lu, rows[n + i] + 1.0);
        uu = fmax(uu, rows[i]);
      }
      anorm_inf = lu * uu;
    }
    for (int64_t c = 0; c < kk; c++) { /* P^T Y: the swaps backwards */
      double *y = Y + c * n;
      for (int64_t i = n - 1; i >= 0; i--) {
        double t = y[i];
        y[i] = y[ipiv[i]];
        y[ipiv[i]] = t;
      }
      double rn = 0, xn = 0, bn = 0, x1 = 0;
      for (int64_t i = 0; i < n; i++) {
        rn = fmax(rn, fabs(y[i] - Bb[i + c * n]));
        if (isnan(y[i])) rn = NAN;
        xn = fmax(xn, fabs(Xb[i + c * n]));
        bn = fmax(bn, fabs(Bb[i + c * n]));
        x1 += fabs(Xb[i + c * n]);
      }
      double r = rn / (eps * (anorm_inf * xn + bn) * n);
      if (rn == 0) r = 0;
      worst = (r > worst || isnan(r)) && !isnan(worst) ? r : worst;
      xn1 = fmax(xn1, x1);
    }
    OOC_CHECK(st = ooc_tick(ctx, "check", (double)(c0 + kk) / m));
  }
  *ratio = worst;
  *norm1_x = xn1;
done:
  ooc_free(ctx, Xb);
  ooc_free(ctx, Bb);
  ooc_free(ctx, Y);
  ooc_free(ctx, f.V);
  ooc_free(ctx, f.strip[0]);
  ooc_free(ctx, f.strip[1]);
  ooc_free(ctx, f.D);
  ooc_free(ctx, rows);
  return st;
}
