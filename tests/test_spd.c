/*
 * test_spd.c: the SPD path through the public API (issue 4): auto picks Cholesky for symmetric
 * input with a positive diagonal and says so; --method chol refuses non-symmetric input; auto falls
 * back to gj when Cholesky meets a non-positive leading minor; logdet agrees with LAPACK; solve and
 * the lower-triangle output pass their checks; out of core within budget.
 */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "testutil.h"

static double *make(gen_kind_t kind, int64_t rows, int64_t cols, double param) {
  gen_spec_t s;
  gen_spec_default(&s, kind, rows);
  s.cols = cols;
  if (kind == GEN_MATERN) s.length = param;
  if (kind == GEN_COND) {
    s.cond = param;
    s.symmetric = 1;
  }
  return tu_gen_spec(&s);
}

static ooc_opts_t opts(int64_t tile, int64_t mem) {
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.host_mem = mem;
  o.force = 1;
  o.check = OOC_CHECK_FULL;
  o.scratch_dir = tu_tmpdir();
  return o;
}

static void t_auto_picks_chol(void) {
  double lengths[] = {0.05, 0.3, 1.0};
  for (int k = 0; k < 3; k++) {
    int64_t n = 300;
    double *A = make(GEN_MATERN, n, n, lengths[k]);
    tu_write_matrix(tu_path("m.h5"), "/A", n, n, A, 2);
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(64, 0);
    ooc_report_t rep;
    CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("m.h5"), tu_path("mi.h5"), &o, &rep), OOC_OK);
    CU_ASSERT_STRING_EQUAL(rep.method, "chol");
    CU_ASSERT(strstr(rep.warnings, "Cholesky") != NULL);
    CU_ASSERT(rep.flops == (double)n * n * n);
    int64_t r, c;
    double *X = tu_read_matrix(tu_path("mi.h5"), &r, &c);
    CU_ASSERT_FATAL(X != NULL);
    CU_ASSERT(tu_inverse_ratio(n, A, X, DBL_EPSILON / 2) < 30);
    /* the full symmetric inverse, exactly symmetric */
    int sym = 1;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < j; i++) sym &= X[i + j * n] == X[j + i * n];
    CU_ASSERT(sym);
    /* logdet in the report equals LAPACK's */
    double *L = malloc((size_t)(n * n) * sizeof *L), ld = 0;
    memcpy(L, A, (size_t)(n * n) * sizeof *L);
    CU_ASSERT_FATAL(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)n) == 0);
    for (int64_t i = 0; i < n; i++) ld += 2 * log(L[i + i * n]);
    CU_ASSERT(fabs(rep.logdet - ld) <= 1e-9 * fabs(ld));
    free(L);
    free(X);
    free(A);
    tu_ctx_done(ctx);
  }
}

static void t_logdet_call(void) {
  int64_t n = 200;
  double *A = make(GEN_COND, n, n, 1e8);
  tu_write_matrix(tu_path("c.h5"), "/A", n, n, A, 2);
  double *L = malloc((size_t)(n * n) * sizeof *L), ref = 0, ld = 0;
  memcpy(L, A, (size_t)(n * n) * sizeof *L);
  CU_ASSERT_FATAL(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)n) == 0);
  for (int64_t i = 0; i < n; i++) ref += 2 * log(L[i + i * n]);
  ooc_ctx_t *ctx = tu_ctx();
  /* out of core: 320 KB matrix (the smallest budget is 262 KiB, 12 KiB more than before chol
   * ran on the host executor, whose queue takes 10 KiB) */
  ooc_opts_t o = opts(32, 272 << 10);
  ooc_report_t rep;
  CU_ASSERT_EQUAL_FATAL(ooc_logdet(ctx, tu_path("c.h5"), &o, &rep, &ld), OOC_OK);
  CU_ASSERT(fabs(ld - ref) <= 1e-6 * fabs(ref) + 1e-9); /* cond 1e8: ~cond*eps agreement */
  CU_ASSERT(rep.host_peak <= 272 << 10);
  CU_ASSERT(!tu_file_exists(tu_path("c.inv.h5")));
  /* not SPD: --method chol names the leading minor, as LAPACK; auto takes LU (issue 22) and
   * gives log|det A| and its sign, as dgetrf */
  A[7 + 7 * n] = -1;
  tu_write_matrix(tu_path("c2.h5"), "/A", n, n, A, 2);
  memcpy(L, A, (size_t)(n * n) * sizeof *L);
  lapack_int *piv = malloc((size_t)n * sizeof *piv);
  CU_ASSERT_FATAL(LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, L, (lapack_int)n,
                                 piv) == 0);
  double lref = 0;
  int sref = 1;
  for (int64_t i = 0; i < n; i++) {
    lref += log(fabs(L[i + i * n]));
    sref *= (L[i + i * n] < 0 ? -1 : 1) * (piv[i] != i + 1 ? -1 : 1);
  }
  free(piv);
  o.host_mem = 0; /* LU's own budget cases are in test_lu and test_lapack_types */
  CU_ASSERT_EQUAL(ooc_logdet(ctx, tu_path("c2.h5"), &o, &rep, &ld), OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.method, "lu");
  CU_ASSERT(fabs(ld - lref) <= 1e-6 * fabs(lref) + 1e-9);
  CU_ASSERT_EQUAL(rep.logdet_sign, sref);
  o.host_mem = 272 << 10; /* the out-of-core budget above (the host executor included) */
  memcpy(L, A, (size_t)(n * n) * sizeof *L);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)n);
  o.method = OOC_METHOD_CHOL;
  CU_ASSERT_EQUAL(ooc_logdet(ctx, tu_path("c2.h5"), &o, &rep, &ld), OOC_ERR_NOT_SPD);
  CU_ASSERT_EQUAL(rep.info, info);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "c2.h5:/A") != NULL);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "leading minor of order 8") != NULL);
  CU_ASSERT(isnan(ld));
  free(L);
  free(A);
  tu_ctx_done(ctx);
}

static void t_forced_chol_and_fallback(void) {
  int64_t n = 150;
  double *R = make(GEN_RANDOM, n, n, 0);
  tu_write_matrix(tu_path("r.h5"), "/A", n, n, R, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o = opts(32, 0);
  o.method = OOC_METHOD_CHOL;
  ooc_report_t rep;
  CU_ASSERT_EQUAL(ooc_invert(ctx, tu_path("r.h5"), tu_path("ri.h5"), &o, &rep), OOC_ERR_NOT_SPD);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "symmetric") != NULL);
  CU_ASSERT(!tu_file_exists(tu_path("ri.h5")));
  /* symmetric, positive diagonal, indefinite: auto tries chol, falls back to gj, still inverts */
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) R[i + j * n] = R[j + i * n];
  for (int64_t i = 0; i < n; i++) R[i + i * n] = 0.5;
  tu_write_matrix(tu_path("s.h5"), "/A", n, n, R, 2);
  o.method = OOC_METHOD_AUTO;
  o.host_mem = 160 << 10; /* out of core (180 KB matrix): the fallback must reload the input */
  o.tile = 16;
  ooc_status_t st = ooc_invert(ctx, tu_path("s.h5"), tu_path("si.h5"), &o, &rep);
  if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.method, "gj");
  CU_ASSERT(strstr(rep.warnings, "fell back") != NULL);
  CU_ASSERT(rep.info == 0);
  int64_t r, c;
  double *X = tu_read_matrix(tu_path("si.h5"), &r, &c);
  CU_ASSERT_FATAL(X != NULL);
  CU_ASSERT(tu_inverse_ratio(n, R, X, DBL_EPSILON / 2) < 30);
  free(X);
  free(R);
  tu_ctx_done(ctx);
}

static void t_solve_and_lower(void) {
  int64_t n = 500;
  double *A = make(GEN_MATERN, n, n, 0.3), *B = make(GEN_RHS, n, 50, 0);
  tu_write_matrix(tu_path("a.h5"), "/A", n, n, A, 2);
  tu_write_matrix(tu_path("b.h5"), "/B", n, 50, B, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o = opts(32, 640 << 10); /* 2 MB matrix + 200 KB of right-hand sides */
  ooc_report_t rep;
  ooc_status_t st = ooc_solve(ctx, tu_path("a.h5"), tu_path("b.h5"), tu_path("x.h5"), &o, &rep);
  if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.method, "chol");
  CU_ASSERT(rep.bytes_spilled > 0);
  CU_ASSERT(rep.host_peak <= 640 << 10);
  int64_t r, c;
  double *X = tu_read_matrix(tu_path("x.h5"), &r, &c);
  CU_ASSERT_FATAL(X != NULL);
  CU_ASSERT(tu_solve_ratio(n, 50, A, X, B, DBL_EPSILON / 2) < 16);
  free(X);
  /* the lower triangle only: zeros above, and the check (which symmetrizes) passes */
  o.lower_only = 1;
  CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("a.h5"), tu_path("l.h5"), &o, &rep), OOC_OK);
  CU_ASSERT(rep.residual < 30);
  X = tu_read_matrix(tu_path("l.h5"), &r, &c);
  CU_ASSERT_FATAL(X != NULL);
  int zeros = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) zeros &= X[i + j * n] == 0.0;
  CU_ASSERT(zeros);
  for (int64_t j = 0; j < n; j++) /* mirror and check as a user would */
    for (int64_t i = 0; i < j; i++) X[i + j * n] = X[j + i * n];
  CU_ASSERT(tu_inverse_ratio(n, A, X, DBL_EPSILON / 2) < 30);
  free(X);
  free(A);
  free(B);
  tu_ctx_done(ctx);
}

/* factor writes L (LAPACK's L, zeros above) with its records; solve --factor reuses it for 1 and
 * 50 right-hand sides, out of core, agreeing with a direct solve; bad factors are refused. */
static void t_factor_and_reuse(void) {
  int64_t n = 400;
  double *A = make(GEN_MATERN, n, n, 0.2);
  tu_write_matrix(tu_path("fa.h5"), "/A", n, n, A, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o = opts(48, 900 << 10); /* 1.28 MB matrix: out of core, tile does not divide n */
  ooc_report_t rep;
  ooc_status_t st = ooc_factor(ctx, tu_path("fa.h5"), NULL, &o, &rep);
  if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.kind, "factor");
  CU_ASSERT(strstr(rep.output, "fa.chol.h5:/L") != NULL);
  CU_ASSERT(rep.residual < 30);
  CU_ASSERT(rep.bytes_spilled > 0 && rep.host_peak <= 900 << 10);
  int64_t r, c;
  double *L = tu_read_matrix(tu_path("fa.chol.h5"), &r, &c);
  CU_ASSERT_FATAL(L != NULL && r == n && c == n);
  double *R = malloc((size_t)(n * n) * sizeof *R), ld = 0, dmax = 0, upper = 0;
  memcpy(R, A, (size_t)(n * n) * sizeof *R);
  CU_ASSERT_FATAL(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, R, (lapack_int)n) == 0);
  for (int64_t j = 0; j < n; j++) {
    ld += 2 * log(R[j + j * n]);
    for (int64_t i = 0; i < n; i++) {
      if (i >= j) dmax = fmax(dmax, fabs(L[i + j * n] - R[i + j * n]));
      else upper = fmax(upper, fabs(L[i + j * n]));
    }
  }
  CU_ASSERT(dmax < 1e-10);
  CU_ASSERT(upper == 0.0);
  CU_ASSERT(fabs(rep.logdet - ld) <= 1e-9 * fabs(ld));

  int64_t ms[] = {1, 50};
  for (int k = 0; k < 2; k++) {
    int64_t m = ms[k];
    double *B = make(GEN_RHS, n, m, 0);
    tu_write_matrix(tu_path("fb.h5"), "/B", n, m, B, 2);
    st = ooc_solve_factor(ctx, tu_path("fa.chol.h5"), tu_path("fb.h5"), tu_path("fx.h5"), &o,
                          &rep);
    if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
    CU_ASSERT_STRING_EQUAL(rep.kind, "solve");
    CU_ASSERT(rep.residual < 16);
    CU_ASSERT(rep.flops == 2.0 * n * n * m);
    CU_ASSERT(fabs(rep.logdet - ld) <= 1e-9 * fabs(ld));
    CU_ASSERT(strstr(rep.warnings, "norm1_input") == NULL); /* our factor records ||A|| */
    double *X = tu_read_matrix(tu_path("fx.h5"), &r, &c);
    CU_ASSERT_FATAL(X != NULL && c == m);
    CU_ASSERT(tu_solve_ratio(n, m, A, X, B, DBL_EPSILON / 2) < 16);
    free(X);
    free(B);
  }

  /* a factor with a negative diagonal entry: refused, naming the entry */
  L[5 + 5 * n] = -L[5 + 5 * n];
  tu_write_matrix(tu_path("bad.h5"), "/L", n, n, L, 2);
  st = ooc_solve_factor(ctx, tu_path("bad.h5"), tu_path("fb.h5"), tu_path("fy.h5"), &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_ERR_FORMAT);
  CU_ASSERT(rep.info == 6);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "bad.h5:/L") != NULL);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "L[5, 5]") != NULL);
  CU_ASSERT(!tu_file_exists(tu_path("fy.h5")));
  /* a wrong "factor" (one that does not solve: the check catches it) */
  L[5 + 5 * n] = -L[5 + 5 * n];
  L[9 + 3 * n] += 0.5;
  tu_write_matrix(tu_path("bad.h5"), "/L", n, n, L, 2);
  st = ooc_solve_factor(ctx, tu_path("bad.h5"), tu_path("fb.h5"), tu_path("fy.h5"), &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_OK); /* consistent with its own L L^T: that is what was asked */
  CU_ASSERT(strstr(rep.warnings, "norm1_input") != NULL);
  /* gj cannot factor; not SPD input names the minor */
  o.method = OOC_METHOD_GJ;
  CU_ASSERT_EQUAL(ooc_factor(ctx, tu_path("fa.h5"), tu_path("g.h5"), &o, &rep), OOC_ERR_ARG);
  o.method = OOC_METHOD_AUTO;
  A[11 + 11 * n] = -1;
  tu_write_matrix(tu_path("fn.h5"), "/A", n, n, A, 2);
  CU_ASSERT_EQUAL(ooc_factor(ctx, tu_path("fn.h5"), NULL, &o, &rep), OOC_ERR_NOT_SPD);
  CU_ASSERT(rep.info == 12);
  CU_ASSERT(!tu_file_exists(tu_path("fn.chol.h5")));
  free(R);
  free(L);
  free(A);
  tu_ctx_done(ctx);
}

/* The pre-pass (run during the load, compared on threads, tile by tile) names the first
 * differing pair in the order the input is read (by column of the upper element, then row), for
 * tiles and stripes of several sizes, and sees a non-positive diagonal. */
static void t_classify(void) {
  int64_t n = 150;
  double *A = make(GEN_MATERN, n, n, 0.3);
  tu_write_matrix(tu_path("cl_sym.h5"), "/A", n, n, A, 2);
  A[130 + 20 * n] *= 1.5; /* its upper element A[20, 130] is in column 130 */
  A[100 + 40 * n] *= 1.5; /* A[40, 100]: column 100, the first in read order */
  A[140 + 140 * n] += 1.0;
  tu_write_matrix(tu_path("cl_asym.h5"), "/A", n, n, A, 2);
  ooc_ctx_t *ctx = tu_ctx();
  int64_t tiles[] = {16, 16, 8}, stripes[] = {0, 16, 8};
  for (int k = 0; k < 3; k++) {
    ooc_opts_t o = opts(tiles[k], 0);
    o.stripe = stripes[k];
    o.method = OOC_METHOD_CHOL;
    ooc_report_t rep;
    CU_ASSERT_EQUAL(ooc_invert(ctx, tu_path("cl_asym.h5"), tu_path("cl_x.h5"), &o, &rep),
                    OOC_ERR_NOT_SPD);
    char want[128];
    snprintf(want, sizeof want, "A[100, 40] = %.17g but A[40, 100] = %.17g", A[100 + 40 * n],
             A[40 + 100 * n]);
    CU_ASSERT(strstr(ooc_ctx_error(ctx), want) != NULL);
    if (!strstr(ooc_ctx_error(ctx), want)) fprintf(stderr, "\n  %s\n", ooc_ctx_error(ctx));
  }
  /* tiles of 1024 (bands of 512 columns in classify.c): a pair in the second band of a tile
   * column (A[300, 1700]: offset 676 in tile column 1), then one in a diagonal tile
   * (A[1200, 1500]), each alone */
  {
    int64_t m = 2048, at[2][2] = {{1700, 300}, {1500, 1200}}; /* (plan_tile keeps 1024) */
    for (int k = 0; k < 2; k++) {
      double *G = make(GEN_MATERN, m, m, 0.3);
      G[at[k][0] + at[k][1] * m] *= 1.5; /* the lower element, read first */
      tu_write_matrix(tu_path("cl_band.h5"), "/A", m, m, G, 2);
      ooc_opts_t o = opts(1024, 0);
      o.method = OOC_METHOD_CHOL;
      ooc_report_t rep;
      CU_ASSERT_EQUAL(ooc_invert(ctx, tu_path("cl_band.h5"), tu_path("cl_x.h5"), &o, &rep),
                      OOC_ERR_NOT_SPD);
      char want[128];
      snprintf(want, sizeof want, "A[%lld, %lld] = %.17g but A[%lld, %lld] = %.17g",
               (long long)at[k][0], (long long)at[k][1], G[at[k][0] + at[k][1] * m],
               (long long)at[k][1], (long long)at[k][0], G[at[k][1] + at[k][0] * m]);
      CU_ASSERT(strstr(ooc_ctx_error(ctx), want) != NULL);
      if (!strstr(ooc_ctx_error(ctx), want)) fprintf(stderr, "\n  %s\n", ooc_ctx_error(ctx));
      free(G);
    }
  }
  /* symmetric again, one diagonal entry negative: auto says so and uses gj */
  double *S = make(GEN_MATERN, n, n, 0.3);
  S[140 + 140 * n] = -1.0;
  tu_write_matrix(tu_path("cl_neg.h5"), "/A", n, n, S, 2);
  ooc_opts_t o = opts(16, 160 << 10);
  ooc_report_t rep;
  CU_ASSERT_EQUAL(ooc_invert(ctx, tu_path("cl_neg.h5"), tu_path("cl_x.h5"), &o, &rep), OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.method, "gj");
  CU_ASSERT(strstr(rep.warnings, "the diagonal is not positive") != NULL);
  free(S);
  free(A);
  tu_ctx_done(ctx);
}

/* Cholesky keeps only the lower triangle in the tile store: with a budget where the lower tiles
 * fit and the whole matrix does not, inverse, solve, logdet and solve --factor spill nothing. */
static void t_lower_only(void) {
  int64_t n = 1000, b = 100;
  double *S = make(GEN_MATERN, n, n, 0.2);
  tu_write_matrix(tu_path("lo.h5"), "/A", n, n, S, 2);
  double *B = make(GEN_RHS, n, 3, 0);
  tu_write_matrix(tu_path("lob.h5"), "/B", n, 3, B, 2);
  /* 8 n^2 = 8 MB; the lower tiles 4.4 MB; stripe of one tile: workspace ~1.7 MB */
  ooc_opts_t o = opts(b, 6800 << 10);
  o.stripe = b;
  o.checkpoint = OOC_CHECKPOINT_NEVER; /* a checkpoint writes the cached tiles to scratch too */
  for (int k = 0; k < 4; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    double ld = 0;
    ooc_status_t st = k == 0   ? ooc_invert(ctx, tu_path("lo.h5"), tu_path("loi.h5"), &o, &rep)
                      : k == 1 ? ooc_solve(ctx, tu_path("lo.h5"), tu_path("lob.h5"),
                                           tu_path("lox.h5"), &o, &rep)
                      : k == 2 ? ooc_factor(ctx, tu_path("lo.h5"), tu_path("loL.h5"), &o, &rep)
                               : ooc_solve_factor(ctx, tu_path("loL.h5"), tu_path("lob.h5"),
                                                  tu_path("lox2.h5"), &o, &rep);
    if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
    CU_ASSERT_EQUAL(st, OOC_OK);
    CU_ASSERT_STRING_EQUAL(rep.method, "chol");
    CU_ASSERT(rep.residual < (k == 1 || k == 3 ? 16 : 30));
    CU_ASSERT(rep.host_peak <= rep.host_budget);
    if (rep.bytes_spilled != 0)
      fprintf(stderr, "\n  case %d spilled %lld bytes\n", k, (long long)rep.bytes_spilled);
    CU_ASSERT_EQUAL(rep.bytes_spilled, 0);
    (void)ld;
    tu_ctx_done(ctx);
  }
  free(S);
  free(B);
}

/* auto on a matrix that is symmetric but for one pair in its last tile column: the load kept
 * only the lower triangle until then, so the upper tiles are read again for gj (and the inverse
 * is of the input, not of its symmetric part: the full check compares with the file). */
static void t_late_asymmetry(void) {
  int64_t n = 300;
  double *A = make(GEN_MATERN, n, n, 0.3);
  A[5 + 290 * n] += 0.25; /* upper element in the last tile column */
  tu_write_matrix(tu_path("la.h5"), "/A", n, n, A, 2);
  int64_t tiles[] = {32, 64, 300};
  for (int k = 0; k < 3; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(tiles[k], k == 0 ? (900 << 10) : 0);
    ooc_report_t rep;
    ooc_status_t st = ooc_invert(ctx, tu_path("la.h5"), tu_path("lai.h5"), &o, &rep);
    if (st) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
    CU_ASSERT_STRING_EQUAL(rep.method, "gj");
    CU_ASSERT(strstr(rep.warnings, "not symmetric") != NULL);
    int64_t r, c;
    double *X = tu_read_matrix(tu_path("lai.h5"), &r, &c);
    CU_ASSERT_FATAL(X != NULL);
    CU_ASSERT(tu_inverse_ratio(n, A, X, DBL_EPSILON / 2) < 30);
    free(X);
    tu_ctx_done(ctx);
  }
  free(A);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"auto picks chol for Matern covariances; logdet matches LAPACK", t_auto_picks_chol},
      {"ooc_logdet out of core, and not SPD names the leading minor", t_logdet_call},
      {"--method chol refuses non-symmetric input; auto falls back to gj", t_forced_chol_and_fallback},
      {"the symmetry pre-pass names the first differing pair and sees the diagonal", t_classify},
      {"chol solve with 50 right-hand sides, lower-triangle output", t_solve_and_lower},
      {"factor writes L; solve --factor reuses it; bad factors refused", t_factor_and_reuse},
      {"Cholesky keeps only the lower triangle: no spill where the whole would", t_lower_only},
      {"auto: asymmetry in the last tile column reloads the upper tiles for gj", t_late_asymmetry},
      {NULL, NULL}};
  return tu_run("spd", tests);
}
