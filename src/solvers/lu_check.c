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

/* The bytes of the two strips and D, which cols_for leaves aside: a pass by rows (check.h
 * check_lu_rows, check_mul_rows) uses them instead. */
static int64_t strips_mem(int64_t n, int64_t b) { return 16 * n * b + 8 * b * b; }

/* The strip buffers and D, allocated the first time a pass goes by strips. */
static ooc_status_t fac_strips(fac_t *f) {
  for (int s = 0; s < 2; s++)
    if (!f->strip[s]) f->strip[s] = ooc_malloc(f->ctx, (size_t)(f->n * f->b) * sizeof(double));
  if (!f->D) f->D = ooc_malloc(f->ctx, (size_t)(f->b * f->b) * sizeof(double));
  if (f->strip[0] && f->strip[1] && f->D) return OOC_OK;
  return OOC_FAIL(f->ctx, OOC_ERR_NOMEM, "out of host memory for the LU check's strips (n = %lld)",
                  (long long)f->n);
}

static void fac_free(fac_t *f) {
  ooc_free(f->ctx, f->V);
  ooc_free(f->ctx, f->strip[0]);
  ooc_free(f->ctx, f->strip[1]);
  ooc_free(f->ctx, f->D);
}

/* Y = L (U T) for T (n x k, ld n), V = U T on the way. By two passes over the factor's rows
 * where it streams them and k is small (check.h check_lu_rows: each byte through memory once per
 * pass, its arithmetic done while the read left it in cache). Else in ONE pass over the file's
 * tile columns from the last to the first, each read whole (the next one read in the background
 * while this one's GEMMs run): column j's rows [0, c1) with the entries below the diagonal
 * zeroed add U's part to V; V's rows of block j are then final (only columns >= j reach them),
 * so the same column's rows [c0, n) with the entries on and above the diagonal zeroed add
 * strictly lower L's part to Y at once; the unit diagonal adds V at the end. (Before: U's halves
 * of the columns ascending, then L's: the same bytes in twice the reads, none of them ahead.) */
static ooc_status_t apply_lu(fac_t *f, const double *T, int64_t k, double *Y) {
  int64_t n = f->n, b = f->b;
  int rows = 0;
  OOC_TRY(check_lu_rows(f->ctx, n, k, f->LU, T, f->V, Y, f->rowU, f->rowL, strips_mem(n, b),
                        &rows));
  if (rows) return OOC_OK;
  OOC_TRY(fac_strips(f));
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

/* The largest ||Y t_c - Z t_c||_1 / ||t_c||_1 over the k columns, and `worst` (NaN sticks). */
static double worst_col(const double *Y, const double *Z, const double *T, int64_t n, int64_t k,
                        double worst) {
  for (int64_t c = 0; c < k; c++) {
    double s = 0, tn = 0;
    for (int64_t i = 0; i < n; i++) {
      s += fabs(Y[i + c * n] - Z[i + c * n]);
      tn += fabs(T[i + c * n]);
    }
    double r = s / tn;
    worst = (r > worst || isnan(r)) && !isnan(worst) ? r : worst;
  }
  return worst;
}

/* Columns per block for nbuf n-column buffers besides the two strips within mem (at least 1). */
static int64_t cols_for(int64_t n, int64_t b, int64_t mem, int nbuf, int64_t most) {
  int64_t k = (mem - strips_mem(n, b)) / (8 * n * nbuf);
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
  ooc_status_t st = OOC_OK;
  if (!Tp || !Y || !Z || !f.V) {
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
    /* A T: by one pass over A's rows where A streams them (the probes), else A's tile columns
     * where T has rows (all for the probes), each read while the last's GEMM runs */
    int64_t a0 = full ? t0 / b * b : 0, a1 = full ? ooc_min64(n, ooc_cdiv64(t0 + kk, b) * b) : n;
    int by_rows = 0;
    if (!loaded && !full)
      OOC_CHECK(st = check_mul_rows(ctx, n, kk, A, Tp, Z, strips_mem(n, b), &by_rows));
    if (!loaded && !by_rows) {
      OOC_CHECK(st = fac_strips(&f));
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
    worst = worst_col(Y, Z, Tp, n, kk, worst);
    OOC_CHECK(st = ooc_tick(ctx, "check", (blk + 1.0) / nblk));
  }
  *ratio = worst / (n * anorm1 * eps);
  if (anorm1 == 0) *ratio = worst == 0 ? 0 : NAN;
done:
  ooc_free(ctx, T);
  ooc_free(ctx, Y);
  ooc_free(ctx, Z);
  fac_free(&f);
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
  double *rows = anorm_inf > 0 ? NULL : ooc_calloc(ctx, (size_t)(2 * n), sizeof(double));
  ooc_status_t st = OOC_OK;
  if (!Xb || !Bb || !Y || !f.V || (anorm_inf <= 0 && !rows)) {
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
  fac_free(&f);
  ooc_free(ctx, rows);
  return st;
}

/* ---- the factor's probe check formed as the factor is written (issue 27) ------------------ */

#define LU_FUSED_BAND 16 /* rows of a float32 chunk converted at a time */
#define LU_FUSED_TRI 64  /* the diagonal band's triangles in blocks of this many rows */

struct lu_fused {
  ooc_ctx_t *ctx;
  const ooc_ops_t *o;
  const check_probe_t *a; /* T (its V) and A T */
  int64_t n, cap;         /* cap: the most rows a chunk may have (D is cap x cap) */
  double *V, *Y;          /* n x K: U T, and L's strictly lower part times it */
  double *D;              /* the chunk row's diagonal band, row-major, ld cap */
  double *conv;           /* LU_FUSED_BAND x n: float32 rows as float64 */
  int64_t r0, rows;       /* the chunk row being written (r0 < 0: none) */
  int64_t seen;           /* its elements seen */
  int64_t done;           /* rows [0, done) complete: their V final */
  int broken;             /* a chunk out of that order, twice, or outside: fall back */
};

int64_t lu_fused_bytes(int64_t n, int64_t chunk_rows) {
  return (int64_t)sizeof(lu_fused_t) + 16 * n * CHECK_PROBE_K + 8 * chunk_rows * chunk_rows +
         8 * LU_FUSED_BAND * n;
}

ooc_status_t lu_fused_create(ooc_ctx_t *ctx, const ooc_ops_t *o, const check_probe_t *a,
                             int64_t n, int64_t chunk_rows, lu_fused_t **out) {
  *out = NULL;
  lu_fused_t *f = ooc_calloc(ctx, 1, sizeof *f);
  if (!f) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the factor's check");
  *f = (lu_fused_t){.ctx = ctx, .o = o, .a = a, .n = n, .cap = ooc_max64(1, chunk_rows)};
  f->V = ooc_malloc(ctx, (size_t)(n * CHECK_PROBE_K) * sizeof(double));
  f->Y = ooc_malloc(ctx, (size_t)(n * CHECK_PROBE_K) * sizeof(double));
  f->D = ooc_malloc(ctx, (size_t)(f->cap * f->cap) * sizeof(double));
  f->conv = ooc_malloc(ctx, (size_t)(LU_FUSED_BAND * ooc_max64(n, 1)) * sizeof(double));
  if (!f->V || !f->Y || !f->D || !f->conv) {
    lu_fused_destroy(f);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the factor's check (n = %lld)",
                    (long long)n);
  }
  lu_fused_reset(f);
  *out = f;
  return OOC_OK;
}

void lu_fused_destroy(lu_fused_t *f) {
  if (!f) return;
  ooc_free(f->ctx, f->V);
  ooc_free(f->ctx, f->Y);
  ooc_free(f->ctx, f->D);
  ooc_free(f->ctx, f->conv);
  ooc_free(f->ctx, f);
}

void lu_fused_reset(lu_fused_t *f) {
  memset(f->V, 0, (size_t)(f->n * CHECK_PROBE_K) * sizeof(double));
  memset(f->Y, 0, (size_t)(f->n * CHECK_PROBE_K) * sizeof(double));
  f->r0 = -1;
  f->rows = f->seen = f->done = 0;
  f->broken = 0;
}

/* Rows [0, h) of a chunk row's part M (row-major, ld lm: rows r0 + [0, h), columns [c, c + w)):
 * into V (w columns at or right of every row's diagonal: U) or Y (left of them: L, whose V rows
 * are final). */
static void fused_gemm(lu_fused_t *f, const double *M, int64_t lm, int64_t r0, int64_t h,
                       int64_t c, int64_t w, int upper) {
  if (w <= 0 || h <= 0) return;
  int64_t n = f->n;
  const double *T = upper ? check_probe_v(f->a) : f->V;
  f->o->gemm('T', 'N', h, CHECK_PROBE_K, w, 1.0, M, lm, T + c, n, 1.0,
             (upper ? f->V : f->Y) + r0, n);
}

/* The chunk row [r0, r0 + rows) is complete: its diagonal band D (rows x rows, the band's
 * columns r0 + [0, rows)) adds U's part (on and above the diagonal) to V, whose rows are then
 * final, and L's strictly lower part times them to Y. Blocks of LU_FUSED_TRI rows: the parts
 * off the blocks' diagonals by GEMM, the small triangles by loops. */
static void fused_band(lu_fused_t *f) {
  int64_t n = f->n, r0 = f->r0, rows = f->rows, ld = f->cap, K = CHECK_PROBE_K;
  const double *T = check_probe_v(f->a);
  double *V = f->V, *Y = f->Y, *D = f->D;
  for (int64_t i0 = 0; i0 < rows; i0 += LU_FUSED_TRI) {
    int64_t h = ooc_min64(LU_FUSED_TRI, rows - i0);
    fused_gemm(f, D + i0 * ld + i0 + h, ld, r0 + i0, h, r0 + i0 + h, rows - i0 - h, 1);
    for (int64_t i = i0; i < i0 + h; i++)
      for (int64_t c = i; c < i0 + h; c++)
        for (int64_t q = 0; q < K; q++) V[r0 + i + q * n] += D[i * ld + c] * T[r0 + c + q * n];
  }
  for (int64_t i0 = 0; i0 < rows; i0 += LU_FUSED_TRI) {
    int64_t h = ooc_min64(LU_FUSED_TRI, rows - i0);
    fused_gemm(f, D + i0 * ld, ld, r0 + i0, h, r0, i0, 0);
    for (int64_t i = i0; i < i0 + h; i++)
      for (int64_t c = i0; c < i; c++)
        for (int64_t q = 0; q < K; q++) Y[r0 + i + q * n] += D[i * ld + c] * V[r0 + c + q * n];
  }
}

/* Rows [i0, i0 + h) of a chunk (row-major float64, ld lm) at (r0, c0), cols wide. */
static void fused_rows(lu_fused_t *f, const double *M, int64_t lm, int64_t r0, int64_t i0,
                       int64_t h, int64_t c0, int64_t cols) {
  int64_t d0 = f->r0, d1 = f->r0 + f->rows; /* the band's columns */
  int64_t lo1 = ooc_min64(c0 + cols, d0), up0 = ooc_max64(c0, d1);
  fused_gemm(f, M, lm, r0 + i0, h, c0, lo1 - c0, 0);                   /* L, left of the band */
  fused_gemm(f, M + (up0 - c0), lm, r0 + i0, h, up0, c0 + cols - up0, 1); /* U, right of it */
  int64_t b0 = ooc_max64(c0, d0), b1 = ooc_min64(c0 + cols, d1);
  if (b1 > b0) /* the band, for when the row is complete */
    for (int64_t i = 0; i < h; i++)
      memcpy(f->D + (r0 - d0 + i0 + i) * f->cap + (b0 - d0), M + i * lm + (b0 - c0),
             (size_t)(b1 - b0) * sizeof(double));
}

void lu_fused_x(void *user, int64_t r0, int64_t c0, int64_t rows, int64_t cols, const void *data,
                int es, int64_t ld) {
  lu_fused_t *f = user;
  int64_t n = f->n;
  if (f->broken) return;
  if (r0 < 0 || c0 < 0 || rows <= 0 || cols <= 0 || r0 + rows > n || c0 + cols > n ||
      (es != 4 && es != 8)) {
    f->broken = 1;
    return;
  }
  if (f->r0 < 0) { /* a new chunk row: right below the complete ones, and no taller than D */
    if (r0 != f->done || rows > f->cap) {
      f->broken = 1;
      return;
    }
    f->r0 = r0;
    f->rows = rows;
    f->seen = 0;
  } else if (r0 != f->r0 || rows != f->rows) { /* another row before this one was complete */
    f->broken = 1;
    return;
  }
  if (es == 8) {
    fused_rows(f, data, ld, r0, 0, rows, c0, cols);
  } else {
    for (int64_t i0 = 0; i0 < rows; i0 += LU_FUSED_BAND) { /* the float32 values as written */
      int64_t h = ooc_min64(LU_FUSED_BAND, rows - i0);
      const float *src = (const float *)data + i0 * ld;
      for (int64_t i = 0; i < h; i++)
        for (int64_t c = 0; c < cols; c++) f->conv[c + i * cols] = (double)src[c + i * ld];
      fused_rows(f, f->conv, cols, r0, i0, h, c0, cols);
    }
  }
  f->seen += rows * cols;
  if (f->seen > rows * n) { /* some element twice */
    f->broken = 1;
  } else if (f->seen == rows * n) {
    fused_band(f);
    f->done = r0 + rows;
    f->r0 = -1;
  }
}

int lu_fused_complete(const lu_fused_t *f) {
  return f && !f->broken && f->done == f->n && check_probe_done(f->a);
}

double lu_fused_ratio(lu_fused_t *f, const int64_t *ipiv, double anorm1, double eps) {
  int64_t n = f->n, K = CHECK_PROBE_K;
  if (n == 0) return 0;
  /* L (U T) = Y + V (L's unit diagonal), against P A T: the load's A T, permuted in V's room */
  double *LUT = f->Y;
  for (int64_t i = 0; i < n * K; i++) LUT[i] += f->V[i];
  double *Z = f->V; /* U T is not needed any more */
  memcpy(Z, check_probe_av(f->a), (size_t)(n * K) * sizeof(double));
  f->o->laswp(K, Z, n, 0, n, ipiv); /* P A T */
  double worst = worst_col(LUT, Z, check_probe_v(f->a), n, K, 0);
  f->broken = 1; /* V and Y are spent */
  if (anorm1 == 0) return worst == 0 ? 0 : NAN;
  return worst / (n * anorm1 * eps);
}
