/*
 * test_iter.c: Newton-Schulz and the order-7 hyperpower inverse (src/solvers/iter.c) on tile
 * stores built directly (spills to the real scratch store in tu_tmpdir()).
 * - convergence: LAPACK's inverse ratio of the result < 30 (computed here, in core) for diagonally
 *   dominant, Matern SPD and well-conditioned general input, both methods, n not a multiple of the
 *   tile, a cache far smaller than the five matrices (spills) and one that holds them all; the
 *   start chosen is the one iter.h specifies for each type;
 * - iteration counts within 2 of theory: for a matrix built so that ||E_0||_1 is the spectral
 *   radius (E_0 <= 0 entrywise with equal column sums) the count predicted from the measured r_0;
 *   for the symmetric starts (Matern, general) from ||E_0||_2 = rho(E_0) computed here with
 *   LAPACK; and each measured step obeys the error law r_{k+1} <= r_k^2 (newton) or
 *   r_k^7 (3 + r_k)^2 / 16 (hyper7) until rounding;
 * - warm start from the inverse of A (1 + 1e-3 u), u uniform in [-1, 1): <= 3 Newton steps;
 * - divergence: a start scaled 3x too large, a warm start 3x too large, a symmetric matrix with a
 *   positive diagonal that is not definite: OOC_ERR_ACCURACY naming the cause and suggesting gj;
 *   the iteration cap: OOC_ERR_ACCURACY "did not converge";
 * - host peak within cache + iter_workspace_bytes + bookkeeping;
 * - every product through the executor seam (a host stand-in, asynchronous like the GPU's, one
 *   and two C buffers): the same start, steps, products and residuals as the host path.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "exec/exec.h"
#include "gen/gen.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/iter.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)
#define SLACK (64 * 1024)

static uint64_t g_rng = 88172645463325252ULL;
static double urand(void) { /* [-1, 1) */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double norminf(int64_t n, const double *A) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += fabs(A[i + j * n]);
    m = fmax(m, s);
  }
  return m;
}

static int is_symmetric(int64_t n, const double *A) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++)
      if (fabs(A[i + j * n] - A[j + i * n]) > 1e-12 * fmax(fabs(A[i + j * n]), fabs(A[j + i * n])))
        return 0;
  return 1;
}

typedef struct {
  ooc_status_t st;
  iter_result_t r;
  char err[2048];
  double *V;      /* result, n x n (NULL unless OK) */
  double ratio;   /* in-core LAPACK ratio of V */
  int64_t peak, budget, spills;
} outcome_t;

/* g_exec_cblk = 1 or 2 makes run() send every product through the strict host executor
 * (exec.h: separate device buffers, asynchronous and late like a GPU, so a schedule bug gives a
 * wrong result) with that many C buffers; 0: the host path. */
static int g_exec_cblk;

/* Run iter_run on A; warm (may be NULL) is V_0. */
static outcome_t run(int method, const double *A, int64_t n, int64_t b, int64_t s, int64_t cap,
                     const double *warm, double v0_scale, int max_iter) {
  outcome_t o;
  memset(&o, 0, sizeof o);
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  static const char *tags[5] = {"iA", "iS0", "iS1", "iS2", "iS3"};
  tu_spill_t sl[5];
  tstore_t *T[5] = {0};
  int ns = iter_stores(method);
  for (int q = 0; q <= ns; q++) {
    sl[q] = (tu_spill_t){ctx, tags[q], NULL, 0};
    ooc_spill_ops_t sp = {&sl[q], tu_sp_open, tu_sp_put, tu_sp_get, 1};
    CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, NULL, &sp, &T[q]) == OOC_OK);
  }
  part_t p = ts_rows(T[0]);
  for (int64_t tj = 0; tj < p.count; tj++)
    for (int64_t ti = 0; ti < p.count; ti++) {
      int64_t off = part_start(p, ti) + part_start(p, tj) * n;
      CU_ASSERT_FATAL(ts_put(T[0], ti, tj, A + off, n) == OOC_OK);
      if (warm) CU_ASSERT_FATAL(ts_put(T[1], ti, tj, warm + off, n) == OOC_OK);
    }
  iter_args_t a = {.A = T[0], .method = method, .ops = ooc_ops_cpu(), .block = s,
                   .spd = is_symmetric(n, A), .warm = warm != NULL, .v0_scale = v0_scale,
                   .norm1_a = tu_norm1(n, A), .norm1_v0 = warm ? tu_norm1(n, warm) : 0, .target = 15,
                   .accept = 30, .max_iter = max_iter};
  for (int i = 0; i < n; i++) a.spd &= A[i + i * n] > 0;
  for (int q = 0; q < ns; q++) a.S[q] = T[q + 1];
  o.budget = cap + iter_workspace_bytes(n, b, s) + (ns + 1) * tstore_overhead_bytes(n, n, b) + SLACK;
  ooc_exec_t *ex = NULL;
  gemm_dev_t *dev = NULL;
  if (g_exec_cblk) { /* panels as wide as the host path's, so the results are the same */
    int64_t MB = ooc_min64(ooc_max64(b, s / b * b), n);
    CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 3, 0, 20, &ex) == OOC_OK);
    CU_ASSERT_FATAL(gemm_dev_create(ex, MB, MB, MB, 2, g_exec_cblk, &dev) == OOC_OK);
    a.dev = dev;
    a.kblock = s;
  }
  ooc_ctx_reset_peak(ctx);
  o.st = iter_run(ctx, &a, &o.r);
  if (dev) {
    CU_ASSERT(gemm_dev_destroy(dev) == OOC_OK);
    ex_destroy(ex);
  }
  o.peak = ooc_ctx_host_peak(ctx);
  snprintf(o.err, sizeof o.err, "%s", ooc_ctx_error(ctx));
  for (int q = 0; q <= ns; q++) o.spills += ts_stats(T[q])->spills;
  if (o.st == OOC_OK) {
    tstore_t *V = a.S[o.r.result];
    o.V = malloc((size_t)(n * n) * sizeof *o.V);
    for (int64_t tj = 0; tj < p.count; tj++)
      for (int64_t ti = 0; ti < p.count; ti++)
        CU_ASSERT(ts_read(V, ti, tj, o.V + part_start(p, ti) + part_start(p, tj) * n, n) ==
                  OOC_OK);
    o.ratio = tu_inverse_ratio(n, A, o.V, EPS);
  }
  for (int q = 0; q <= ns; q++) {
    tstore_destroy(T[q]);
    scratch_close(sl[q].s);
  }
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  return o;
}

static const char *mname(int method) { return method == OOC_METHOD_HYPER7 ? "hyper7" : "newton"; }

/* The measured steps obey the error law (until the rounding floor). */
static void check_law(int method, const iter_result_t *r, double floor) {
  for (int k = 0; k + 1 < r->nres; k++) {
    double rk = r->res[k], rn = r->res[k + 1];
    if (rk >= 1 || rn < floor) continue;
    double bound = method == OOC_METHOD_HYPER7 ? pow(rk, 7) * (3 + rk) * (3 + rk) / 16 : rk * rk;
    int ok = rn <= bound * (1 + 1e-6) + floor;
    CU_ASSERT(ok);
    if (!ok) fprintf(stderr, "\n  %s: r_%d = %g > bound %g from r_%d = %g\n", mname(method), k + 1, rn, bound, k, rk);
  }
}

/* ---- convergence ------------------------------------------------------------------------- */

static void converge_case(const char *what, const double *A, int64_t n, const char *start) {
  for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++)
    for (int small = 0; small < 2; small++) {
      int64_t b = 32, s = small ? 64 : 1000;
      int64_t cap = small ? (int64_t)n * n * 8 : (int64_t)64 << 20; /* small: 1 of 5 matrices */
      outcome_t o = run(method, A, n, b, s, cap, NULL, 0, 0);
      int ok = o.st == OOC_OK && o.ratio < 30 && o.r.ratio < 15;
      CU_ASSERT(ok);
      CU_ASSERT(strcmp(o.r.start, start) == 0);
      CU_ASSERT(o.peak <= o.budget);
      if (small) CU_ASSERT(o.spills > 0);
      fprintf(stderr, "[%s %s%s: %d steps, ratio %.2g] ", what, mname(method),
              small ? " ooc" : "", o.r.iterations, o.ratio);
      if (!ok || strcmp(o.r.start, start))
        fprintf(stderr, "\n  %s %s: %s, start %s, ratio %g (own %g): %s\n", what, mname(method),
                ooc_status_str(o.st), o.r.start, o.ratio, o.r.ratio, o.err);
      if (o.st == OOC_OK) check_law(method, &o.r, 1e-12);
      free(o.V);
    }
}

static void t_converge_diagdom(void) {
  int64_t n = 150;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 3);
  converge_case("diagdom", A, n, "diagonal");
  free(A);
}

static void t_converge_matern(void) {
  int64_t n = 150;
  double *A = tu_gen_matrix(GEN_MATERN, n, 0, 1e-2, 4);
  converge_case("matern", A, n, "identity");
  free(A);
}

static void t_converge_general(void) {
  int64_t n = 150;
  double *A = tu_gen_matrix(GEN_COND, n, 30, 0, 5); /* not symmetric, kappa_2 = 30 */
  converge_case("general", A, n, "transpose");
  free(A);
}

/* Every start on input scaled by 1e+160 and 1e-160 (issue 19: the transpose start's
 * 1 / (||A||_1 ||A||_inf) overflowed to 0 or inf, "not finite (r_0 = 1)"): the same steps as
 * unscaled and a ratio < 30 on the scaled matrix. */
static void t_scaled(void) {
  int64_t n = 60;
  const int kinds[3] = {GEN_DIAGDOM, GEN_MATERN, GEN_COND};
  const char *starts[3] = {"diagonal", "identity", "transpose"};
  for (int k = 0; k < 3; k++) {
    double *A = tu_gen_matrix(kinds[k], n, kinds[k] == GEN_COND ? 30 : 0,
                              kinds[k] == GEN_MATERN ? 1e-2 : 0, 6);
    double *S = malloc((size_t)(n * n) * sizeof *S);
    for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
      outcome_t base = run(method, A, n, 16, 64, (int64_t)64 << 20, NULL, 0, 0);
      CU_ASSERT(base.st == OOC_OK);
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        double f = sgn > 0 ? 1e160 : 1e-160;
        for (int64_t i = 0; i < n * n; i++) S[i] = A[i] * f;
        outcome_t o = run(method, S, n, 16, 64, (int64_t)64 << 20, NULL, 0, 0);
        int ok = o.st == OOC_OK && o.ratio < 30 && o.r.iterations == base.r.iterations &&
                 strcmp(o.r.start, starts[k]) == 0;
        CU_ASSERT(ok);
        fprintf(stderr, "[%s %s x%g: %d steps (unscaled %d), ratio %.2g] ", starts[k],
                mname(method), f, o.r.iterations, base.r.iterations, o.ratio);
        if (!ok)
          fprintf(stderr, "\n  %s: %s\n", ooc_status_str(o.st), o.err);
        free(o.V);
      }
      free(base.V);
    }
    free(A);
    free(S);
  }
}

/* ---- iteration counts against theory ----------------------------------------------------- */

/* Count predicted for starting radius rho until the residual is below the stopping goal. */
static int predict(int method, double rho, const double *A, int64_t n, double norm1_v) {
  double goal = 15.0 * (double)n * tu_norm1(n, A) * norm1_v * EPS;
  return iter_predict(method, rho, goal);
}

static void count_case(const char *what, const double *A, int64_t n, double rho, int from_r0) {
  for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
    outcome_t o = run(method, A, n, 32, 64, (int64_t)64 << 20, NULL, 0, 0);
    CU_ASSERT_FATAL(o.st == OOC_OK);
    double r0 = from_r0 ? o.r.res[0] : rho;
    int k = predict(method, r0, A, n, o.r.norm1_v);
    int ok = k >= 0 && abs(o.r.iterations - k) <= 2;
    CU_ASSERT(ok);
    fprintf(stderr, "[%s %s: rho %.4g, %d steps, theory %d] ", what, mname(method), r0,
            o.r.iterations, k);
    free(o.V);
  }
}

/* E_0 = I - A D^-1 is <= 0 off the diagonal with every column summing to -q: ||E_0||_1 = rho = q
 * and ||E_0^j||_1 = q^j exactly, so the norm bound is the truth. */
static void t_count_exact(void) {
  int64_t n = 130;
  double *A = malloc((size_t)(n * n) * sizeof *A);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) A[i + j * n] = A[j + i * n] = 0.5 + 0.5 * urand();
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    A[j + j * n] = 0;
    for (int64_t i = 0; i < n; i++) s += A[i + j * n];
    A[j + j * n] = s / 0.6; /* q = 0.6 */
  }
  count_case("exact", A, n, 0.6, 1);
  free(A);
}

/* rho(E_0) of the symmetric starts, from LAPACK's eigenvalues of E_0 (computed here). */
static double rho_symmetric_start(const double *A, int64_t n, int transpose) {
  double *E = malloc((size_t)(n * n) * sizeof *E), *w = malloc((size_t)n * sizeof *w);
  double n1 = tu_norm1(n, A), ni = norminf(n, A);
  if (transpose) { /* E = I - A A^T / (||A||_1 ||A||_inf) */
    ooc_ops_cpu()->gemm('N', 'T', n, n, n, -1.0 / (n1 * ni), A, n, A, n, 0.0, E, n);
  } else {
    for (int64_t i = 0; i < n * n; i++) E[i] = -A[i] / n1;
  }
  for (int64_t i = 0; i < n; i++) E[i + i * n] += 1.0;
  CU_ASSERT_FATAL(LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'L', (int)n, E, (int)n, w) == 0);
  double rho = 0;
  for (int64_t i = 0; i < n; i++) rho = fmax(rho, fabs(w[i]));
  free(E);
  free(w);
  return rho;
}

static void t_count_symmetric_starts(void) {
  int64_t n = 120;
  double *M = tu_gen_matrix(GEN_MATERN, n, 0, 1e-2, 6);
  count_case("matern", M, n, rho_symmetric_start(M, n, 0), 0);
  double *G = tu_gen_matrix(GEN_COND, n, 10, 0, 7);
  count_case("general", G, n, rho_symmetric_start(G, n, 1), 0);
  free(M);
  free(G);
}

/* ---- warm start ---------------------------------------------------------------------------- */

static double *inverse(const double *A, int64_t n) {
  double *X = malloc((size_t)(n * n) * sizeof *X);
  lapack_int *ip = malloc((size_t)n * sizeof *ip);
  memcpy(X, A, (size_t)(n * n) * sizeof *X);
  CU_ASSERT_FATAL(LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, X, (int)n, ip) == 0);
  CU_ASSERT_FATAL(LAPACKE_dgetri(LAPACK_COL_MAJOR, (int)n, X, (int)n, ip) == 0);
  free(ip);
  return X;
}

static void t_warm_start(void) {
  int64_t n = 140;
  const gen_kind_t kinds[2] = {GEN_MATERN, GEN_COND};
  for (int q = 0; q < 2; q++) {
    double *A = tu_gen_matrix(kinds[q], n, 100, 1e-1, 8 + q); /* kappa ~ 1e2 */
    double *P = malloc((size_t)(n * n) * sizeof *P);
    for (int64_t i = 0; i < n * n; i++) P[i] = A[i] * (1 + 1e-3 * urand());
    double *W = inverse(P, n);
    for (int small = 0; small < 2; small++) {
      outcome_t o = run(OOC_METHOD_NEWTON, A, n, 32, 64, small ? n * n * 8 : 64 << 20, W, 0, 0);
      int ok = o.st == OOC_OK && o.r.iterations <= 3 && o.ratio < 30 && o.r.res[0] < 1;
      CU_ASSERT(ok);
      CU_ASSERT(strcmp(o.r.start, "warm") == 0);
      fprintf(stderr, "[warm %s: r_0 %.3g, %d steps, ratio %.2g] ", gen_kind_name(kinds[q]),
              o.r.res[0], o.r.iterations, o.ratio);
      if (!ok) fprintf(stderr, "\n  warm: %s %s\n", ooc_status_str(o.st), o.err);
      free(o.V);
    }
    free(A);
    free(P);
    free(W);
  }
}

/* ---- failures ---------------------------------------------------------------------------- */

static void expect_fail(const outcome_t *o, const char *needle, int line) {
  int ok = o->st == OOC_ERR_ACCURACY && strstr(o->err, needle) && strstr(o->err, "gj") &&
           o->V == NULL;
  CU_assertImplementation(ok, (unsigned)line, "OOC_ERR_ACCURACY with the cause and gj", __FILE__,
                          "", CU_FALSE);
  if (!ok) fprintf(stderr, "\n  line %d: %s: %s\n", line, ooc_status_str(o->st), o->err);
}

static void t_diverge(void) {
  int64_t n = 100;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 11);
  for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
    outcome_t o = run(method, A, n, 32, 64, 64 << 20, NULL, 3.0, 0); /* V_0 = 3 D^-1 */
    expect_fail(&o, "diverged", __LINE__);
    CU_ASSERT(o.r.res[0] > 1.5 && o.r.iterations >= 1 && o.r.iterations < 10);
    fprintf(stderr, "[%s 3 D^-1: stopped after %d steps] ", mname(method), o.r.iterations);
    free(o.V);
  }
  /* a warm start 3x too large: r_0 ~ 2, refused at once */
  double *X = inverse(A, n);
  for (int64_t i = 0; i < n * n; i++) X[i] *= 3;
  outcome_t o = run(OOC_METHOD_NEWTON, A, n, 32, 64, 64 << 20, X, 0, 0);
  expect_fail(&o, "warm start", __LINE__);
  CU_ASSERT(o.r.iterations == 0);
  free(X);
  free(A);
  /* symmetric, positive diagonal, not definite: eigenvalues 1 +- 1.5 in 2x2 blocks */
  n = 60;
  double *S = calloc((size_t)(n * n), sizeof *S);
  for (int64_t i = 0; i < n; i += 2) {
    S[i + i * n] = S[(i + 1) + (i + 1) * n] = 1;
    S[i + (i + 1) * n] = S[(i + 1) + i * n] = 1.5;
  }
  o = run(OOC_METHOD_NEWTON, S, n, 16, 32, 64 << 20, NULL, 0, 0);
  expect_fail(&o, "diverged", __LINE__);
  free(S);
}

static void t_max_iter(void) {
  int64_t n = 100;
  double *A = tu_gen_matrix(GEN_MATERN, n, 0, 1e-3, 12);
  outcome_t o = run(OOC_METHOD_NEWTON, A, n, 32, 64, 64 << 20, NULL, 0, 2);
  expect_fail(&o, "did not converge in 2 steps", __LINE__);
  CU_ASSERT(o.r.iterations == 2 && o.r.nres == 3);
  free(A);
}

static void t_predict(void) {
  CU_ASSERT(iter_predict(OOC_METHOD_NEWTON, 0.5, 0.5) == 0);
  CU_ASSERT(iter_predict(OOC_METHOD_NEWTON, 0.5, 0.25) == 1);
  CU_ASSERT(iter_predict(OOC_METHOD_NEWTON, 0.5, 1e-10) == 6); /* 0.5^32 < 1e-10 < 0.5^16 */
  CU_ASSERT(iter_predict(OOC_METHOD_HYPER7, 0.5, 1e-10) == 2);
  CU_ASSERT(iter_predict(OOC_METHOD_NEWTON, 1.0, 1e-10) == -1);
  CU_ASSERT(iter_stores(OOC_METHOD_NEWTON) == 3 && iter_stores(OOC_METHOD_HYPER7) == 4);
}

/* Blocks large enough for the epilogues to run on several threads (column ranges, not tiles). */
static void t_converge_threaded_epilogues(void) {
  int64_t n = 520;
  double *A = tu_gen_matrix(GEN_MATERN, n, 0, 1e-2, 9);
  for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
    outcome_t o = run(method, A, n, 64, 1000, (int64_t)64 << 20, NULL, 0, 0);
    CU_ASSERT(o.st == OOC_OK && o.ratio < 30 && o.r.ratio < 15);
    CU_ASSERT(strcmp(o.r.start, "identity") == 0);
    if (o.st == OOC_OK) check_law(method, &o.r, 1e-10); /* the floor grows with n */
    fprintf(stderr, "[matern %lld %s: %d steps, ratio %.2g] ", (long long)n, mname(method),
            o.r.iterations, o.ratio);
    free(o.V);
  }
  free(A);
}

/* Every product through an executor (the host stand-in above, one and two C buffers, so the
 * epilogues see slices of blocks): the same starts, steps and residuals as on the host path. */
static void t_executor(void) {
  static const gen_kind_t kinds[3] = {GEN_DIAGDOM, GEN_MATERN, GEN_COND};
  int64_t n = 150;
  for (int q = 0; q < 3; q++) {
    double *A = tu_gen_matrix(kinds[q], n, kinds[q] == GEN_COND ? 30 : 0,
                              kinds[q] == GEN_MATERN ? 1e-2 : 0, 3 + (uint64_t)q);
    for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
      outcome_t h = run(method, A, n, 32, 64, n * n * 8, NULL, 0, 0); /* spills */
      for (int cb = 1; cb <= 2; cb++) {
        g_exec_cblk = cb;
        outcome_t o = run(method, A, n, 32, 64, n * n * 8, NULL, 0, 0);
        g_exec_cblk = 0;
        int same = o.st == OOC_OK && h.st == OOC_OK && o.r.iterations == h.r.iterations &&
                   o.r.nres == h.r.nres && !strcmp(o.r.start, h.r.start) &&
                   o.r.products == h.r.products;
        for (int k = 0; same && k < o.r.nres; k++)
          same = fabs(o.r.res[k] - h.r.res[k]) <= 1e-9 * fmax(1e-6, h.r.res[k]);
        CU_ASSERT(same);
        CU_ASSERT(o.ratio < 30);
        if (cb == 2) CU_ASSERT(o.r.gemm.fetches > o.r.products * 9); /* slices: 9 blocks each */
        if (!same)
          fprintf(stderr, "\n  executor (%d buffers) %s kind %d: %s, %d vs %d steps: %s\n", cb,
                  mname(method), q, ooc_status_str(o.st), o.r.iterations, h.r.iterations, o.err);
        free(o.V);
      }
      free(h.V);
    }
    free(A);
  }
}

int main(void) {
  static const tu_test_t tests[] = {
      {"theory helper", t_predict},
      {"diagonally dominant converges (diag start)", t_converge_diagdom},
      {"Matern SPD converges (I/||A|| start)", t_converge_matern},
      {"general converges (A^T/(||A||_1||A||_inf) start)", t_converge_general},
      {"input scaled by 1e+-160: every start, same steps, ratio < 30", t_scaled},
      {"count = theory when ||E_0||_1 = rho", t_count_exact},
      {"count = theory from rho(E_0) for symmetric starts", t_count_symmetric_starts},
      {"warm start from a 1e-3 perturbation: <= 3 steps", t_warm_start},
      {"divergence detected", t_diverge},
      {"iteration cap", t_max_iter},
      {"every product through an executor (1 and 2 C buffers): same steps", t_executor},
      {"Matern n = 520 in one block: epilogues on threads", t_converge_threaded_epilogues},
      {NULL, NULL},
  };
  return tu_run("iter", tests);
}
