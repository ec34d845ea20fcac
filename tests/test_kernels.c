/*
 * test_kernels.c: the cpu ops table against the reference one, and the reference against the
 * definitions (direct sums, residuals), on odd sizes with leading dimensions larger than the rows.
 *
 * Every matrix lives in a buffer whose padding rows hold a sentinel, and the triangles a kernel
 * must not read hold NaN, so a kernel that touches what it should not fails loudly.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"
#include "testutil.h"

static const int64_t SIZES[] = {1, 2, 3, 17, 64, 100};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))
#define PAD 3               /* extra rows in every leading dimension */
#define SENTINEL (-7777.25) /* what padding must still hold afterwards */
#define EPS DBL_EPSILON

/* ---- helpers --------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x1234567887654321ull;
static double urand(void) { /* uniform [-1, 1), splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

#define AT(M, ld, i, j) ((M)[(size_t)(i) + (size_t)(j) * (size_t)(ld)])

/* An m x n matrix with ld = m + PAD: random entries, sentinel padding. */
static double *mat_new(int64_t m, int64_t n, int64_t *ld) {
  *ld = m + PAD;
  size_t len = (size_t)(*ld) * (size_t)(n > 0 ? n : 1);
  double *A = malloc(len * sizeof *A);
  CU_ASSERT_PTR_NOT_NULL_FATAL(A);
  for (size_t k = 0; k < len; k++) A[k] = SENTINEL;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) AT(A, *ld, i, j) = urand();
  return A;
}

static double *mat_dup(const double *A, int64_t ld, int64_t n) {
  size_t len = (size_t)ld * (size_t)(n > 0 ? n : 1);
  double *B = malloc(len * sizeof *B);
  CU_ASSERT_PTR_NOT_NULL_FATAL(B);
  memcpy(B, A, len * sizeof *B);
  return B;
}

static int padding_intact(int64_t m, int64_t n, const double *A, int64_t ld) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = m; i < ld; i++)
      if (AT(A, ld, i, j) != SENTINEL) return 0;
  return 1;
}

static double max_abs(int64_t m, int64_t n, const double *A, int64_t ld) {
  double s = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++)
      if (!(fabs(AT(A, ld, i, j)) <= s)) s = fabs(AT(A, ld, i, j)); /* NaN sticks */
  return s;
}

/* max |X - Y| / max |Y| over the m x n block; NaN or Inf anywhere gives NaN or Inf. */
static double rel_diff(int64_t m, int64_t n, const double *X, int64_t ldx, const double *Y,
                       int64_t ldy) {
  double d = 0, scale = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double x = AT(X, ldx, i, j), y = AT(Y, ldy, i, j);
      if (!isfinite(x) || !isfinite(y)) return NAN;
      if (fabs(x - y) > d) d = fabs(x - y);
      if (fabs(y) > scale) scale = fabs(y);
    }
  return scale > 0 ? d / scale : d;
}

static int quiet; /* while testing the checker on failures it should report */

/* The one acceptance test: written so that NaN fails (a comparison with NaN is false). */
static int close_enough(double rel, int64_t size, const char *what) {
  double tol = 1e-13 * (double)(size + 1);
  int ok = rel <= tol;
  if (!ok && !quiet) fprintf(stderr, "\n  %s: relative difference %.3e > %.1e\n", what, rel, tol);
  return ok;
}

static int64_t pick(int k) { return SIZES[k % NSIZES]; }

/* ---- the checker itself ---------------------------------------------------------------------- */

static void test_compare_rejects_nonfinite(void) {
  double a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
  quiet = 1;
  CU_ASSERT_TRUE(close_enough(rel_diff(2, 2, a, 2, b, 2), 2, "identical"));
  b[3] = NAN;
  CU_ASSERT_FALSE(close_enough(rel_diff(2, 2, a, 2, b, 2), 2, "NaN in expected (wanted)"));
  b[3] = 4;
  a[0] = NAN;
  CU_ASSERT_FALSE(close_enough(rel_diff(2, 2, a, 2, b, 2), 2, "NaN in result (wanted)"));
  a[0] = INFINITY;
  CU_ASSERT_FALSE(close_enough(rel_diff(2, 2, a, 2, b, 2), 2, "Inf in result (wanted)"));
  a[0] = 1 + 1e-6;
  CU_ASSERT_FALSE(close_enough(rel_diff(2, 2, a, 2, b, 2), 2, "1e-6 off (wanted)"));
  CU_ASSERT_FALSE(close_enough(NAN, 2, "NaN ratio (wanted)"));
  quiet = 0;
}

static void test_names(void) {
  CU_ASSERT_STRING_EQUAL(ooc_ops_ref()->name, "ref");
  CU_ASSERT_STRING_EQUAL(ooc_ops_cpu()->name, "cpu");
}

/* ---- gemm ------------------------------------------------------------------------------------ */

static void gemm_case(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha,
                      double beta) {
  int64_t lda, ldb, ldc;
  int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
  int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
  double *A = mat_new(ar, ac, &lda), *B = mat_new(br, bc, &ldb), *C0 = mat_new(m, n, &ldc);
  if (beta == 0.0) /* C is output only: its NaN must not reach the result */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) AT(C0, ldc, i, j) = NAN;
  double *Cr = mat_dup(C0, ldc, n), *Cc = mat_dup(C0, ldc, n), *Cd = mat_dup(C0, ldc, n);
  ooc_ops_ref()->gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, Cr, ldc);
  ooc_ops_cpu()->gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, Cc, ldc);
  /* The definition, summed directly. */
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++)
        s += (ta == 'N' ? AT(A, lda, i, l) : AT(A, lda, l, i)) *
             (tb == 'N' ? AT(B, ldb, l, j) : AT(B, ldb, j, l));
      AT(Cd, ldc, i, j) = alpha * s + (beta == 0.0 ? 0.0 : beta * AT(C0, ldc, i, j));
    }
  char what[96];
  snprintf(what, sizeof what, "gemm %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g", ta, tb,
           (long long)m, (long long)n, (long long)k, alpha, beta);
  CU_ASSERT_TRUE(close_enough(rel_diff(m, n, Cr, ldc, Cd, ldc), k, what));
  CU_ASSERT_TRUE(close_enough(rel_diff(m, n, Cc, ldc, Cr, ldc), k, what));
  CU_ASSERT_TRUE(padding_intact(m, n, Cr, ldc));
  CU_ASSERT_TRUE(padding_intact(m, n, Cc, ldc));
  free(A);
  free(B);
  free(C0);
  free(Cr);
  free(Cc);
  free(Cd);
}

static void test_gemm(void) {
  const char tr[2] = {'N', 'T'};
  const double ab[][2] = {{1.0, 0.0}, {-0.5, 2.0}, {1.25, 1.0}};
  for (int t = 0; t < 4; t++)
    for (int im = 0; im < NSIZES; im++)
      for (int in = 0; in < NSIZES; in += 2)
        for (int ik = 0; ik < NSIZES; ik++) {
          const double *p = ab[(im + in + ik) % 3];
          gemm_case(tr[t / 2], tr[t % 2], pick(im), pick(in + im), pick(ik), p[0], p[1]);
        }
}

static void test_gemm_degenerate(void) {
  const char tr[2] = {'N', 'T'};
  /* alpha = 0 reads neither A nor B (BLAS semantics): their NaN must not reach C. */
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    int64_t lda, ldc;
    double *A = mat_new(4, 4, &lda), *C = mat_new(4, 4, &ldc), *C0 = mat_dup(C, ldc, 4);
    AT(A, lda, 1, 2) = NAN;
    ops->gemm('N', 'N', 4, 4, 4, 0.0, A, lda, A, lda, 2.0, C, ldc);
    int ok = 1;
    for (int64_t j = 0; j < 4; j++)
      for (int64_t i = 0; i < 4; i++) ok &= AT(C, ldc, i, j) == 2.0 * AT(C0, ldc, i, j);
    CU_ASSERT_TRUE(ok);
    free(A);
    free(C);
    free(C0);
  }
  /* one column (cpu.c hands it to dgemv): tall and wide, C NaN under beta = 0 */
  for (int t = 0; t < 4; t++) {
    gemm_case(tr[t / 2], tr[t % 2], 3001, 1, 257, -0.5, 0.0);
    gemm_case(tr[t / 2], tr[t % 2], 257, 1, 3001, 1.0, 0.0);
    gemm_case(tr[t / 2], tr[t % 2], 257, 1, 3001, 1.25, -2.0);
  }
  for (int t = 0; t < 4; t++) {
    gemm_case(tr[t / 2], tr[t % 2], 5, 4, 0, 1.0, 0.5); /* k = 0: C = beta C */
    gemm_case(tr[t / 2], tr[t % 2], 5, 4, 0, 1.0, 0.0); /* and C = 0 even from NaN */
    gemm_case(tr[t / 2], tr[t % 2], 0, 4, 3, 1.0, 0.5);
    gemm_case(tr[t / 2], tr[t % 2], 5, 0, 3, 1.0, 0.5);
  }
}

/* ---- trsm ------------------------------------------------------------------------------------ */

/* A triangular p x p matrix, well conditioned (off-diagonal scaled by 1/p, diagonal in [1, 2)
 * with random sign), with NaN in every entry the variant must not read. */
static double *tri_new(int64_t p, char uplo, char diag, int64_t *ld) {
  double *A = mat_new(p, p, ld);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) {
      int in_tri = uplo == 'U' ? i < j : i > j;
      if (i == j) {
        double r = urand();
        AT(A, *ld, i, j) = diag == 'U' ? NAN : (r < 0 ? -1.0 : 1.0) * (1.5 + 0.5 * r);
      } else {
        AT(A, *ld, i, j) = in_tri ? AT(A, *ld, i, j) / (double)p : NAN;
      }
    }
  return A;
}

static void trsm_case(char side, char uplo, char trans, char diag, int64_t m, int64_t n,
                      double alpha) {
  int64_t p = side == 'L' ? m : n, lda, ldb;
  double *A = tri_new(p, uplo, diag, &lda);
  double *B = mat_new(m, n, &ldb);
  double *Xr = mat_dup(B, ldb, n), *Xc = mat_dup(B, ldb, n);
  ooc_ops_ref()->trsm(side, uplo, trans, diag, m, n, alpha, A, lda, Xr, ldb);
  ooc_ops_cpu()->trsm(side, uplo, trans, diag, m, n, alpha, A, lda, Xc, ldb);

  /* Residual of the reference: op(A) X (or X op(A)) must give alpha B. */
  double *T = calloc((size_t)(p * p), sizeof *T); /* op(A) dense, with the implied zeros/ones */
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) {
      int64_t r = trans == 'N' ? i : j, c = trans == 'N' ? j : i; /* op(A)(i,j) = A(r,c) */
      int in_tri = uplo == 'U' ? r < c : r > c;
      T[i + j * p] = r == c   ? (diag == 'U' ? 1.0 : AT(A, lda, r, c))
                     : in_tri ? AT(A, lda, r, c)
                              : 0;
    }
  double worst = 0, bscale = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      if (side == 'L')
        for (int64_t l = 0; l < m; l++) s += T[i + l * p] * AT(Xr, ldb, l, j);
      else
        for (int64_t l = 0; l < n; l++) s += AT(Xr, ldb, i, l) * T[l + j * p];
      double r = fabs(s - alpha * AT(B, ldb, i, j));
      if (!(r <= worst)) worst = r;
      if (fabs(alpha * AT(B, ldb, i, j)) > bscale) bscale = fabs(alpha * AT(B, ldb, i, j));
    }
  char what[96];
  snprintf(what, sizeof what, "trsm %c%c%c%c m=%lld n=%lld alpha=%g", side, uplo, trans, diag,
           (long long)m, (long long)n, alpha);
  CU_ASSERT_TRUE(close_enough(bscale > 0 ? worst / bscale : worst, p, what));
  CU_ASSERT_TRUE(close_enough(rel_diff(m, n, Xc, ldb, Xr, ldb), p, what));
  CU_ASSERT_TRUE(padding_intact(m, n, Xr, ldb));
  CU_ASSERT_TRUE(padding_intact(m, n, Xc, ldb));
  free(T);
  free(A);
  free(B);
  free(Xr);
  free(Xc);
}

static void test_trsm(void) {
  const char *sides = "LR", *uplos = "UL", *transs = "NT", *diags = "NU";
  for (int v = 0; v < 16; v++)
    for (int im = 0; im < NSIZES; im++)
      for (int in = 0; in < NSIZES; in += 2)
        trsm_case(sides[v >> 3], uplos[(v >> 2) & 1], transs[(v >> 1) & 1], diags[v & 1], pick(im),
                  pick(in + im), (im + in) % 2 ? -0.75 : 1.0);
}

static void test_trsm_alpha_zero(void) {
  /* alpha = 0 sets B to zero without solving: NaN in B must not survive. */
  int64_t lda, ldb;
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    double *A = tri_new(4, 'L', 'N', &lda), *B = mat_new(4, 3, &ldb);
    AT(B, ldb, 2, 1) = NAN;
    ops->trsm('L', 'L', 'N', 'N', 4, 3, 0.0, A, lda, B, ldb);
    CU_ASSERT_EQUAL(max_abs(4, 3, B, ldb), 0.0);
    free(A);
    free(B);
  }
}

/* ---- getrf ----------------------------------------------------------------------------------- */

/* ||P A - L U||_max / (||A||_max * k * eps), with P from ipiv, L\U the m x n result. */
static double lu_ratio(int64_t m, int64_t n, const double *A, int64_t lda, const double *LU,
                       int64_t ldlu, const int64_t *ipiv) {
  int64_t mn = m < n ? m : n;
  double *PA = malloc((size_t)(m * n + 1) * sizeof *PA);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) PA[i + j * m] = AT(A, lda, i, j);
  for (int64_t kk = 0; kk < mn; kk++)
    for (int64_t j = 0; j < n; j++) {
      double t = PA[kk + j * m];
      PA[kk + j * m] = PA[ipiv[kk] + j * m];
      PA[ipiv[kk] + j * m] = t;
    }
  double worst = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0;
      for (int64_t l = 0; l <= (i < j ? i : j) && l < mn; l++) {
        double lv = l == i ? 1.0 : AT(LU, ldlu, i, l);
        s += lv * AT(LU, ldlu, l, j);
      }
      double r = fabs(PA[i + j * m] - s);
      if (!(r <= worst)) worst = r;
    }
  free(PA);
  double an = max_abs(m, n, A, lda);
  return worst / ((an > 0 ? an : 1) * (double)(mn + 1) * EPS);
}

static void getrf_case(int64_t m, int64_t n, int64_t zero_col, int64_t want_info) {
  int64_t lda, mn = m < n ? m : n;
  double *A = mat_new(m, n, &lda);
  if (zero_col >= 0)
    for (int64_t i = 0; i < m; i++) AT(A, lda, i, zero_col) = 0.0;
  double *Fr = mat_dup(A, lda, n), *Fc = mat_dup(A, lda, n);
  int64_t *pr = malloc((size_t)(mn + 1) * sizeof *pr), *pc = malloc((size_t)(mn + 1) * sizeof *pc);
  int64_t ir = ooc_ops_ref()->getrf(m, n, Fr, lda, pr);
  int64_t ic = ooc_ops_cpu()->getrf(m, n, Fc, lda, pc);
  char what[96];
  snprintf(what, sizeof what, "getrf m=%lld n=%lld zero_col=%lld", (long long)m, (long long)n,
           (long long)zero_col);
  if (ir != want_info || ic != want_info)
    fprintf(stderr, "\n  %s: info ref %lld cpu %lld, expected %lld\n", what, (long long)ir,
            (long long)ic, (long long)want_info);
  CU_ASSERT_EQUAL(ir, want_info);
  CU_ASSERT_EQUAL(ic, want_info);
  int same_piv = 1;
  for (int64_t k = 0; k < mn; k++) {
    CU_ASSERT_TRUE(pr[k] >= k && pr[k] < m);
    CU_ASSERT_TRUE(pc[k] >= k && pc[k] < m);
    if (pr[k] != pc[k]) same_piv = 0;
  }
  CU_ASSERT_TRUE(same_piv);
  if (same_piv) {
    CU_ASSERT_TRUE(close_enough(rel_diff(m, n, Fc, lda, Fr, lda), mn, what));
  }
  double rr = lu_ratio(m, n, A, lda, Fr, lda, pr), rc = lu_ratio(m, n, A, lda, Fc, lda, pc);
  if (!(rr < 30 && rc < 30))
    fprintf(stderr, "\n  %s: ||PA - LU|| ratio ref %.3g cpu %.3g\n", what, rr, rc);
  CU_ASSERT_TRUE(rr < 30);
  CU_ASSERT_TRUE(rc < 30);
  CU_ASSERT_TRUE(padding_intact(m, n, Fr, lda));
  CU_ASSERT_TRUE(padding_intact(m, n, Fc, lda));
  free(A);
  free(Fr);
  free(Fc);
  free(pr);
  free(pc);
}

static void test_getrf_shapes(void) {
  for (int im = 0; im < NSIZES; im++)
    for (int in = 0; in < NSIZES; in++) getrf_case(SIZES[im], SIZES[in], -1, 0);
  getrf_case(0, 5, -1, 0);
  getrf_case(5, 0, -1, 0);
}

static void test_getrf_singular(void) {
  const int64_t shapes[][2] = {{1, 1}, {3, 3}, {17, 17}, {64, 64}, {100, 17}, {17, 100}, {2, 3}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t m = shapes[s][0], n = shapes[s][1], mn = m < n ? m : n;
    int64_t cols[3] = {0, mn / 2, mn - 1};
    for (int c = 0; c < 3; c++) getrf_case(m, n, cols[c], cols[c] + 1);
    /* A zero column that is never a pivot column (m < n, j >= m) is not a failure. */
    if (n > m) getrf_case(m, n, n - 1, 0);
  }
}

/* ---- getri ----------------------------------------------------------------------------------- */

static void test_getri(void) {
  const int64_t ns[] = {1, 2, 3, 17, 64, 100, 300};
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    int64_t n = ns[t], lda;
    for (int boost = 0; boost < 2; boost++) {
      /* Plain random (condition up to ~1e4) for the residual; diagonally boosted (condition
       * ~1) for comparing the two inverses entry by entry. */
      double *A = mat_new(n, n, &lda);
      if (boost)
        for (int64_t i = 0; i < n; i++) AT(A, lda, i, i) += (double)n;
      double *F = mat_dup(A, lda, n);
      int64_t *ipiv = malloc((size_t)n * sizeof *ipiv);
      CU_ASSERT_EQUAL_FATAL(ooc_ops_ref()->getrf(n, n, F, lda, ipiv), 0);
      double *Xr = mat_dup(F, lda, n), *Xc = mat_dup(F, lda, n);
      CU_ASSERT_EQUAL(ooc_ops_ref()->getri(n, Xr, lda), 0);
      CU_ASSERT_EQUAL(ooc_ops_cpu()->getri(n, Xc, lda), 0);
      CU_ASSERT_TRUE(padding_intact(n, n, Xr, lda));
      CU_ASSERT_TRUE(padding_intact(n, n, Xc, lda));
      /* getri inverts L U = P A: check against P A, packed (tu_inverse_ratio wants ld = n). */
      double *PA = malloc((size_t)(n * n) * sizeof *PA),
             *Xrp = malloc((size_t)(n * n) * sizeof *Xrp),
             *Xcp = malloc((size_t)(n * n) * sizeof *Xcp);
      ooc_ops_ref()->laswp(n, A, lda, 0, n, ipiv);
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
          PA[i + j * n] = AT(A, lda, i, j);
          Xrp[i + j * n] = AT(Xr, lda, i, j);
          Xcp[i + j * n] = AT(Xc, lda, i, j);
        }
      double rr = tu_inverse_ratio(n, PA, Xrp, EPS), rc = tu_inverse_ratio(n, PA, Xcp, EPS);
      if (!(rr < 30 && rc < 30))
        fprintf(stderr, "\n  getri n=%lld: inverse ratio ref %.3g cpu %.3g\n", (long long)n, rr,
                rc);
      CU_ASSERT_TRUE(rr < 30);
      CU_ASSERT_TRUE(rc < 30);
      if (boost) {
        char what[64];
        snprintf(what, sizeof what, "getri n=%lld", (long long)n);
        CU_ASSERT_TRUE(close_enough(rel_diff(n, n, Xc, lda, Xr, lda), n, what));
      }
      free(A);
      free(F);
      free(ipiv);
      free(Xr);
      free(Xc);
      free(PA);
      free(Xrp);
      free(Xcp);
    }
  }
}

static void test_getri_singular(void) {
  /* A zero on U's diagonal: info = j + 1 and, as dtrtri, the block is left as it was. */
  int64_t n = 17, lda;
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    for (int64_t zj = 0; zj < n; zj += 8) {
      double *F = mat_new(n, n, &lda);
      AT(F, lda, zj, zj) = 0.0;
      double *X = mat_dup(F, lda, n);
      CU_ASSERT_EQUAL(ops->getri(n, X, lda), zj + 1);
      CU_ASSERT_EQUAL(memcmp(X, F, (size_t)(lda * n) * sizeof *X), 0);
      free(F);
      free(X);
    }
    CU_ASSERT_EQUAL(ops->getri(0, NULL, 1), 0);
  }
}

/* ---- laswp ----------------------------------------------------------------------------------- */

static void test_laswp(void) {
  for (int im = 0; im < NSIZES; im++)
    for (int in = 0; in < NSIZES; in++) {
      int64_t m = SIZES[im], ncols = SIZES[in], lda;
      int64_t *ipiv = malloc((size_t)m * sizeof *ipiv);
      /* getrf-shaped pivots (ipiv[k] >= k) on odd k, arbitrary rows (ipiv[k] < k) on even k. */
      for (int64_t k = 0; k < m; k++) {
        double u = 0.5 * (urand() + 1.0);
        ipiv[k] = k % 2 ? k + (int64_t)(u * (double)(m - k)) : (int64_t)(u * (double)m);
        if (ipiv[k] >= m) ipiv[k] = m - 1;
      }
      int64_t ranges[3][2] = {{0, m}, {m / 3, m}, {0, (m + 1) / 2}};
      for (int r = 0; r < 3; r++) {
        int64_t k1 = ranges[r][0], k2 = ranges[r][1];
        double *A = mat_new(m, ncols, &lda);
        double *Ar = mat_dup(A, lda, ncols), *Ac = mat_dup(A, lda, ncols);
        ooc_ops_ref()->laswp(ncols, Ar, lda, k1, k2, ipiv);
        ooc_ops_cpu()->laswp(ncols, Ac, lda, k1, k2, ipiv);
        /* The definition: whole rows swapped in forward order. */
        for (int64_t k = k1; k < k2; k++)
          for (int64_t j = 0; j < ncols; j++) {
            double t = AT(A, lda, k, j);
            AT(A, lda, k, j) = AT(A, lda, ipiv[k], j);
            AT(A, lda, ipiv[k], j) = t;
          }
        size_t bytes = (size_t)(lda * ncols) * sizeof *A;
        CU_ASSERT_EQUAL(memcmp(Ar, A, bytes), 0);
        CU_ASSERT_EQUAL(memcmp(Ac, A, bytes), 0);
        free(A);
        free(Ar);
        free(Ac);
      }
      free(ipiv);
    }
}

/* ---- colabs ---------------------------------------------------------------------------------- */

/* The cpu kernel's threaded path (a block of 2^20 elements or more, columns in blocks on the
 * pool): the same bits as the reference kernel, the same count and first position of non-finite
 * entries (two in a later column block, one in an earlier one: the earliest wins), and a column
 * of finite entries whose sum overflows (counted as no non-finite entry, as the reference). */
static void test_colabs_threads(void) {
  int64_t m = 1100, n = 1000, lda = 1103;
  double *A = malloc((size_t)(lda * n) * sizeof *A);
  CU_ASSERT_FATAL(A != NULL);
  uint64_t x = 7;
  for (int64_t k = 0; k < lda * n; k++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    A[k] = (double)(int64_t)(x >> 11) / 9007199254740992.0 - 0.5;
  }
  for (int q = 0; q < 2; q++) {
    if (q) { /* the non-finite and overflowing entries */
      AT(A, lda, 5, 700) = NAN;
      AT(A, lda, 9, 701) = INFINITY;
      AT(A, lda, 1099, 333) = -INFINITY;
      AT(A, lda, 0, 900) = DBL_MAX;
      AT(A, lda, 1, 900) = DBL_MAX;
    }
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    for (int64_t j = 0; j < n; j++) a[j] = b[j] = 0.25 * (double)j;
    int64_t ri = -1, rj = -1, ci = -1, cj = -1;
    int64_t r = ooc_ops_ref()->colabs(m, n, A, lda, a, &ri, &rj);
    int64_t c = ooc_ops_cpu()->colabs(m, n, A, lda, b, &ci, &cj);
    CU_ASSERT_EQUAL(r, q ? 3 : 0);
    CU_ASSERT_EQUAL(c, r);
    if (q) {
      CU_ASSERT(ri == 1099 && rj == 333);
      CU_ASSERT(ci == 1099 && cj == 333);
      CU_ASSERT(isinf(b[900]) && !isfinite(b[700]));
    }
    CU_ASSERT(memcmp(a, b, (size_t)n * sizeof *a) == 0); /* bit for bit, NaN included */
    free(a);
    free(b);
  }
  free(A);
}

static void test_colabs(void) {
  for (int im = 0; im < NSIZES; im++)
    for (int in = 0; in < NSIZES; in++) {
      int64_t m = SIZES[im], n = SIZES[in], lda;
      for (int want_bad = 0; want_bad < 3; want_bad++) {
        double *A = mat_new(m, n, &lda);
        /* Bad entries placed so the first in column-major order is known. */
        int64_t fi = m / 2, fj = n / 2, nbad = want_bad;
        if (want_bad >= 1) AT(A, lda, fi, fj) = NAN;
        if (want_bad >= 2) {
          if (fi + 1 < m)
            AT(A, lda, fi + 1, fj) = -INFINITY;
          else if (fj + 1 < n)
            AT(A, lda, 0, fj + 1) = INFINITY;
          else
            nbad = 1; /* 1 x 1: no room for a second one */
        }
        double *want = malloc((size_t)n * sizeof *want);
        for (int64_t j = 0; j < n; j++) {
          want[j] = 0.5; /* acc is accumulated into, not overwritten */
          for (int64_t i = 0; i < m; i++) want[j] += fabs(AT(A, lda, i, j));
        }
        for (int k = 0; k < 2; k++) {
          const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
          double *acc = malloc((size_t)n * sizeof *acc);
          for (int64_t j = 0; j < n; j++) acc[j] = 0.5;
          int64_t bi = -1, bj = -1;
          int64_t got = ops->colabs(m, n, A, lda, acc, &bi, &bj);
          CU_ASSERT_EQUAL(got, nbad);
          if (nbad) {
            CU_ASSERT_EQUAL(bi, fi);
            CU_ASSERT_EQUAL(bj, fj);
          }
          for (int64_t j = 0; j < n; j++) {
            if (isfinite(want[j])) {
              CU_ASSERT_DOUBLE_EQUAL(acc[j], want[j], 1e-13 * want[j] * (double)m);
            } else {
              CU_ASSERT_FALSE(isfinite(acc[j]));
            }
          }
          free(acc);
        }
        free(want);
        free(A);
      }
    }
}

/* ---- a whole small inverse, through the table only ------------------------------------------- */

static void test_lu_inverse_pipeline(void) {
  /* getrf + getri + column permutation reproduce A^-1 on both backends: the sequence the
   * solvers use, with the inverse ratio of LAPACK's test suite. */
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    int64_t n = 64, lda;
    double *A = mat_new(n, n, &lda), *F = mat_dup(A, lda, n);
    int64_t ipiv[64];
    CU_ASSERT_EQUAL_FATAL(ops->getrf(n, n, F, lda, ipiv), 0);
    CU_ASSERT_EQUAL_FATAL(ops->getri(n, F, lda), 0);
    /* (P A)^-1 = A^-1 P^T, so A^-1 = F P: undo the row swaps on columns, last first. */
    for (int64_t j = n - 1; j >= 0; j--)
      if (ipiv[j] != j)
        for (int64_t i = 0; i < n; i++) {
          double t = AT(F, lda, i, j);
          AT(F, lda, i, j) = AT(F, lda, i, ipiv[j]);
          AT(F, lda, i, ipiv[j]) = t;
        }
    double *Ap = malloc((size_t)(n * n) * sizeof *Ap), *Xp = malloc((size_t)(n * n) * sizeof *Xp);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        Ap[i + j * n] = AT(A, lda, i, j);
        Xp[i + j * n] = AT(F, lda, i, j);
      }
    double r = tu_inverse_ratio(n, Ap, Xp, EPS);
    CU_ASSERT_TRUE(r < 30);
    free(A);
    free(F);
    free(Ap);
    free(Xp);
  }
}

/* ---- syrk, potrf, potri (the Cholesky solver's kernels) ------------------------------------- */

static void syrk_case(char uplo, char trans, int64_t n, int64_t k, double alpha, double beta) {
  int64_t lda, ldc, ar = trans == 'N' ? n : k, ac = trans == 'N' ? k : n;
  double *A = mat_new(ar, ac, &lda), *C0 = mat_new(n, n, &ldc);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      int in_tri = uplo == 'L' ? i >= j : i <= j;
      if (!in_tri || beta == 0.0) AT(C0, ldc, i, j) = NAN; /* not to be read */
    }
  double *Cr = mat_dup(C0, ldc, n), *Cc = mat_dup(C0, ldc, n), *Cd = mat_dup(C0, ldc, n);
  ooc_ops_ref()->syrk(uplo, trans, n, k, alpha, A, lda, beta, Cr, ldc);
  ooc_ops_cpu()->syrk(uplo, trans, n, k, alpha, A, lda, beta, Cc, ldc);
  int untouched = 1;
  double d = 0, scale = 0, dc = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      int in_tri = uplo == 'L' ? i >= j : i <= j;
      if (!in_tri) {
        untouched &= isnan(AT(Cr, ldc, i, j)) && isnan(AT(Cc, ldc, i, j));
        continue;
      }
      double sum = 0;
      for (int64_t l = 0; l < k; l++)
        sum += trans == 'N' ? AT(A, lda, i, l) * AT(A, lda, j, l)
                            : AT(A, lda, l, i) * AT(A, lda, l, j);
      double want = alpha * sum + (beta == 0.0 ? 0.0 : beta * AT(C0, ldc, i, j));
      AT(Cd, ldc, i, j) = want;
      double gr = AT(Cr, ldc, i, j), gc = AT(Cc, ldc, i, j);
      if (!isfinite(gr) || !isfinite(gc)) d = NAN;
      if (fabs(gr - want) > d) d = fabs(gr - want);
      if (fabs(gc - gr) > dc) dc = fabs(gc - gr);
      if (fabs(want) > scale) scale = fabs(want);
    }
  char what[96];
  snprintf(what, sizeof what, "syrk %c%c n=%lld k=%lld alpha=%g beta=%g", uplo, trans,
           (long long)n, (long long)k, alpha, beta);
  CU_ASSERT_TRUE(untouched);
  CU_ASSERT_TRUE(close_enough(scale > 0 ? d / scale : d, k, what));
  CU_ASSERT_TRUE(close_enough(scale > 0 ? dc / scale : dc, k, what));
  CU_ASSERT_TRUE(padding_intact(n, n, Cr, ldc));
  CU_ASSERT_TRUE(padding_intact(n, n, Cc, ldc));
  free(A);
  free(C0);
  free(Cr);
  free(Cc);
  free(Cd);
}

static void test_syrk(void) {
  const double ab[][2] = {{1.0, 0.0}, {-1.0, 1.0}, {0.5, -2.0}};
  for (int v = 0; v < 4; v++)
    for (int in = 0; in < NSIZES; in++)
      for (int ik = 0; ik < NSIZES; ik++) {
        const double *p = ab[(in + ik) % 3];
        syrk_case("LU"[v >> 1], "NT"[v & 1], SIZES[in], SIZES[ik], p[0], p[1]);
      }
  syrk_case('L', 'N', 5, 0, 1.0, 0.5);
  syrk_case('U', 'T', 5, 0, 1.0, 0.0);
}

/* An SPD n x n matrix (M M^T / n + I) with NaN in the strict upper triangle (never read). */
static double *spd_new(int64_t n, int64_t *ld) {
  int64_t ldm;
  double *M = mat_new(n, n, &ldm), *A = mat_new(n, n, ld);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double s = 0;
      for (int64_t l = 0; l < n; l++) s += AT(M, ldm, i, l) * AT(M, ldm, j, l);
      AT(A, *ld, i, j) = i < j ? NAN : s / (double)n + (i == j ? 1.0 : 0.0);
    }
  free(M);
  return A;
}

static int upper_nan(int64_t n, const double *A, int64_t ld) {
  int ok = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) ok &= isnan(AT(A, ld, i, j));
  return ok;
}

static void test_potrf(void) {
  for (int s = 0; s < NSIZES; s++) {
    int64_t n = SIZES[s], lda;
    double *A = spd_new(n, &lda);
    double *Lr = mat_dup(A, lda, n), *Lc = mat_dup(A, lda, n);
    CU_ASSERT_EQUAL(ooc_ops_ref()->potrf(n, Lr, lda), 0);
    CU_ASSERT_EQUAL(ooc_ops_cpu()->potrf(n, Lc, lda), 0);
    CU_ASSERT_TRUE(upper_nan(n, Lr, lda) && upper_nan(n, Lc, lda));
    CU_ASSERT_TRUE(padding_intact(n, n, Lr, lda) && padding_intact(n, n, Lc, lda));
    double worst = 0, an = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j; i < n; i++) {
        double sum = 0;
        for (int64_t l = 0; l <= j; l++) sum += AT(Lr, lda, i, l) * AT(Lr, lda, j, l);
        double r = fabs(sum - AT(A, lda, i, j));
        if (!(r <= worst)) worst = r;
        if (fabs(AT(A, lda, i, j)) > an) an = fabs(AT(A, lda, i, j));
      }
    char what[64];
    snprintf(what, sizeof what, "potrf n=%lld", (long long)n);
    CU_ASSERT_TRUE(close_enough(worst / an, n, what));
    double dl = 0, sl = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j; i < n; i++) {
        double x = AT(Lc, lda, i, j), y = AT(Lr, lda, i, j);
        if (!isfinite(x)) dl = NAN;
        if (fabs(x - y) > dl) dl = fabs(x - y);
        if (fabs(y) > sl) sl = fabs(y);
      }
    CU_ASSERT_TRUE(close_enough(dl / sl, n, what));
    /* not SPD at j: info j+1 on both, as LAPACK; NaN in row i: info i+1 */
    for (int64_t j = 0; j < n; j += (n > 10 ? n / 3 : 1)) {
      for (int bad = 0; bad < 3; bad++) {
        double *B = mat_dup(A, lda, n);
        int64_t i = j, want = j + 1;
        if (bad == 0) AT(B, lda, j, j) = -1.0;
        else if (bad == 1) AT(B, lda, j, j) = 0.0;
        else {
          i = n - 1;
          want = n;
          AT(B, lda, i, j) = NAN;
        }
        double *Br = mat_dup(B, lda, n), *Bc = mat_dup(B, lda, n);
        int64_t ir = ooc_ops_ref()->potrf(n, Br, lda), ic = ooc_ops_cpu()->potrf(n, Bc, lda);
        if (bad == 1 && j == 0) want = 1;
        CU_ASSERT_EQUAL(ir, want);
        CU_ASSERT_EQUAL(ic, want);
        if (ir != want || ic != want)
          fprintf(stderr, "\n  potrf n=%lld bad %d at %lld: info ref %lld cpu %lld want %lld\n",
                  (long long)n, bad, (long long)j, (long long)ir, (long long)ic,
                  (long long)want);
        free(B);
        free(Br);
        free(Bc);
      }
    }
    free(A);
    free(Lr);
    free(Lc);
  }
  CU_ASSERT_EQUAL(ooc_ops_ref()->potrf(0, NULL, 1), 0);
  CU_ASSERT_EQUAL(ooc_ops_cpu()->potrf(0, NULL, 1), 0);
}

static void test_potri(void) {
  const int64_t ns[] = {1, 2, 3, 17, 64, 100, 300};
  for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
    int64_t n = ns[t], lda;
    double *A = spd_new(n, &lda);
    double *L = mat_dup(A, lda, n);
    CU_ASSERT_EQUAL_FATAL(ooc_ops_cpu()->potrf(n, L, lda), 0);
    double *Xr = mat_dup(L, lda, n), *Xc = mat_dup(L, lda, n);
    CU_ASSERT_EQUAL(ooc_ops_ref()->potri(n, Xr, lda), 0);
    CU_ASSERT_EQUAL(ooc_ops_cpu()->potri(n, Xc, lda), 0);
    CU_ASSERT_TRUE(upper_nan(n, Xr, lda) && upper_nan(n, Xc, lda));
    CU_ASSERT_TRUE(padding_intact(n, n, Xr, lda) && padding_intact(n, n, Xc, lda));
    double *Ap = malloc((size_t)(n * n) * sizeof *Ap), *Rp = malloc((size_t)(n * n) * sizeof *Rp),
           *Cp = malloc((size_t)(n * n) * sizeof *Cp);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        int64_t r = i >= j ? i : j, c = i >= j ? j : i; /* mirror the lower triangle */
        Ap[i + j * n] = AT(A, lda, r, c);
        Rp[i + j * n] = AT(Xr, lda, r, c);
        Cp[i + j * n] = AT(Xc, lda, r, c);
      }
    double rr = tu_inverse_ratio(n, Ap, Rp, EPS), rc = tu_inverse_ratio(n, Ap, Cp, EPS);
    if (!(rr < 30 && rc < 30))
      fprintf(stderr, "\n  potri n=%lld: inverse ratio ref %.3g cpu %.3g\n", (long long)n, rr, rc);
    CU_ASSERT_TRUE(rr < 30);
    CU_ASSERT_TRUE(rc < 30);
    char what[64];
    snprintf(what, sizeof what, "potri n=%lld", (long long)n);
    CU_ASSERT_TRUE(close_enough(rel_diff(n, n, Cp, n, Rp, n), n, what));
    /* a zero on L's diagonal: info j+1, block untouched */
    for (int k = 0; k < 2; k++) {
      const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
      int64_t zj = n / 2;
      double *Z = mat_dup(L, lda, n);
      AT(Z, lda, zj, zj) = 0.0;
      double *Z0 = mat_dup(Z, lda, n);
      CU_ASSERT_EQUAL(ops->potri(n, Z, lda), zj + 1);
      CU_ASSERT_EQUAL(memcmp(Z, Z0, (size_t)(lda * n) * sizeof *Z), 0);
      free(Z);
      free(Z0);
    }
    free(A);
    free(L);
    free(Xr);
    free(Xc);
    free(Ap);
    free(Rp);
    free(Cp);
  }
}

static const tu_test_t tests[] = {
    {"compare rejects NaN/Inf", test_compare_rejects_nonfinite},
    {"table names", test_names},
    {"gemm: all transposes and sizes, cpu = ref = definition", test_gemm},
    {"gemm: k = 0, m = 0, n = 0, alpha = 0, beta = 0 over NaN", test_gemm_degenerate},
    {"trsm: 16 variants, residual and cpu = ref", test_trsm},
    {"trsm: alpha = 0", test_trsm_alpha_zero},
    {"getrf: m > n, m < n, m = n, cpu = ref, ||PA - LU||", test_getrf_shapes},
    {"getrf: exact zero column gives info, factorization completes", test_getrf_singular},
    {"getri: inverse ratio and cpu = ref", test_getri},
    {"getri: zero pivot gives info, block untouched", test_getri_singular},
    {"laswp: against row swaps", test_laswp},
    {"colabs: sums, NaN/Inf count and first position", test_colabs},
    {"colabs on threads: the reference's bits, count and first position", test_colabs_threads},
    {"getrf + getri + permutation = A^-1", test_lu_inverse_pipeline},
    {"syrk: both triangles and transposes, cpu = ref = definition", test_syrk},
    {"potrf: L L^T, cpu = ref, not SPD / NaN info", test_potrf},
    {"potri: inverse ratio, cpu = ref, zero pivot", test_potri},
    {NULL, NULL},
};

int main(void) { return tu_run("kernels", tests); }
