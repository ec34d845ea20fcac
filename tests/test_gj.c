/*
 * test_gj.c: the residual suite for striped Gauss-Jordan through the public API.
 * For n in {1, 2, 3, 17, 100, 1000}, tile in {1, 7, 64, n}, every generator, both backends (ref,
 * cpu) and float32/float64 input: the inverse written to disk, read back here, must have LAPACK's
 * inverse ratio < 30 (eps of the output type) and solve must have the HPL ratio < 16.
 * Singular input must stop with OOC_ERR_SINGULAR naming the zero column, and leave no output.
 * Then out of core for real: a matrix >= 4x --host-mem spills, stays within budget, and is right.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lapacke.h>

#include "gen/gen.h"
#include "kernels/ops.h"
#include "exec/exec.h"
#ifdef OOC_HAVE_CUDA
#include "exec/cuda/exec_cuda.h"
#endif
#include "io/scratch.h"
#include "solvers/check.h"
#include "solvers/gj.h"
#include "testutil.h"

static double *make(gen_kind_t kind, int64_t rows, int64_t cols, uint64_t seed) {
  return tu_gen(kind, rows, cols, seed);
}

/* f32 input: what the solver sees is A rounded to float, so check against that. */
static void round_f32(double *A, int64_t len) {
  for (int64_t i = 0; i < len; i++) A[i] = (double)(float)A[i];
}

static int g_failures_logged;

static void invert_case(gen_kind_t kind, int64_t n, int64_t tile, ooc_device_t dev, int f32) {
  char name[128], in[1024], out[1100];
  snprintf(name, sizeof name, "A_%s_%lld_%lld_%d_%d.h5", gen_kind_name(kind), (long long)n,
           (long long)tile, (int)dev, f32);
  snprintf(in, sizeof in, "%s", tu_path(name));
  snprintf(out, sizeof out, "%s.inv.h5", in);
  double *A = make(kind, n, n, 7 + (uint64_t)n);
  if (f32) round_f32(A, n * n);
  tu_write_matrix(in, "/A", n, n, A, f32 ? 1 : 2);

  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.device = dev;
  o.check = OOC_CHECK_FULL;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
  if (kind == GEN_SINGULAR) {
    CU_ASSERT_EQUAL(st, OOC_ERR_SINGULAR);
    CU_ASSERT_EQUAL(rep.info, n / 2 + 1); /* the zero column, 1-based */
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "singular") != NULL);
    CU_ASSERT(!tu_file_exists(out));
  } else {
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK && g_failures_logged++ < 10)
      fprintf(stderr, "\n%s: %s\n", name, ooc_ctx_error(ctx));
    if (st == OOC_OK) {
      int64_t r, c;
      double *X = tu_read_matrix(out, &r, &c);
      CU_ASSERT_FATAL(X != NULL);
      CU_ASSERT(r == n && c == n);
      double eps = f32 ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
      double ratio = tu_inverse_ratio(n, A, X, eps);
      CU_ASSERT(ratio < 30); /* NaN fails too */
      CU_ASSERT(rep.residual < 30);
      if (!(ratio < 30) && g_failures_logged++ < 10)
        fprintf(stderr, "\n%s: ratio %g (library %g)\n", name, ratio, rep.residual);
      free(X);
    }
  }
  tu_ctx_done(ctx);
  remove(in);
  remove(out);
  free(A);
}

static void solve_case(gen_kind_t kind, int64_t n, int64_t m, int64_t tile, ooc_device_t dev,
                       int f32) {
  char in[1024], rhs[1024], out[1024];
  snprintf(in, sizeof in, "%s", tu_path("S_A.h5"));
  snprintf(rhs, sizeof rhs, "%s", tu_path("S_B.h5"));
  snprintf(out, sizeof out, "%s", tu_path("S_X.h5"));
  double *A = make(kind, n, n, 11), *B = make(GEN_RHS, n, m, 12);
  if (f32) {
    round_f32(A, n * n);
    round_f32(B, n * m);
  }
  tu_write_matrix(in, "/A", n, n, A, f32 ? 1 : 2);
  tu_write_matrix(rhs, "/B", n, m, B, f32 ? 1 : 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.device = dev;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_solve(ctx, in, rhs, out, &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_OK);
  if (st != OOC_OK) fprintf(stderr, "\nsolve n=%lld: %s\n", (long long)n, ooc_ctx_error(ctx));
  if (st == OOC_OK) {
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    CU_ASSERT_FATAL(X != NULL);
    CU_ASSERT(r == n && c == m);
    double ratio = tu_solve_ratio(n, m, A, X, B, f32 ? FLT_EPSILON / 2 : DBL_EPSILON / 2);
    CU_ASSERT(ratio < 16);
    CU_ASSERT(rep.residual < 16);
    if (!(ratio < 16)) fprintf(stderr, "\nsolve n=%lld tile=%lld: ratio %g\n", (long long)n, (long long)tile, ratio);
    free(X);
  }
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

static const gen_kind_t KINDS[] = {GEN_RANDOM, GEN_DIAGDOM, GEN_MATERN, GEN_COND, GEN_SINGULAR};
static const int64_t TILES[] = {1, 7, 64, 0}; /* 0 = n */

static void sweep(int64_t n, ooc_device_t dev) {
  for (int f32 = 0; f32 < 2; f32++)
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
      for (size_t t = 0; t < 4; t++) {
        int64_t tile = TILES[t] ? TILES[t] : n;
        if (TILES[t] && tile >= n && t > 0 && TILES[t - 1] >= n) continue; /* same as tile = n */
        invert_case(KINDS[k], n, tile, dev, f32);
      }
}

static void t_tiny_ref(void) {
  for (int64_t n = 1; n <= 3; n++) sweep(n, OOC_DEVICE_REF);
}
static void t_tiny_cpu(void) {
  for (int64_t n = 1; n <= 3; n++) sweep(n, OOC_DEVICE_CPU);
}
static void t_17_ref(void) { sweep(17, OOC_DEVICE_REF); }
static void t_17_cpu(void) { sweep(17, OOC_DEVICE_CPU); }
static void t_100_ref(void) { sweep(100, OOC_DEVICE_REF); }
static void t_100_cpu(void) { sweep(100, OOC_DEVICE_CPU); }
static void t_1000_cpu(void) { sweep(1000, OOC_DEVICE_CPU); }
static void t_1000_ref(void) {
  /* the plain-C oracle at n = 1000: every kind and dtype with tile 64 (the other tiles run on cpu) */
  for (int f32 = 0; f32 < 2; f32++)
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
      invert_case(KINDS[k], 1000, 64, OOC_DEVICE_REF, f32);
}

/* Ill-conditioned input (2-norm condition 1e8, 1e12, 0.1/eps) in several steps, with a first
 * stripe much wider than the last (the tile does not divide n) and with narrow stripes: the
 * inverse must meet LAPACK's threshold and stay within 10x of LAPACK's own getri ratio on the
 * same matrix. Before the update used the factored pivot block, the wide case gave ratios of
 * kappa(A11)-size (n = 600, cond 1e12: ~1e4). */
static void wide_case(ooc_device_t dev, int64_t n, double cond, int64_t tile, int64_t stripe,
                      double *worst_rel) {
  char in[1024], out[1100];
  snprintf(in, sizeof in, "%s", tu_path("W_A.h5"));
  snprintf(out, sizeof out, "%s.inv.h5", in);
  double *A = tu_gen_matrix(GEN_COND, n, cond, 0, 5);
  tu_write_matrix(in, "/A", n, n, A, 2);
  double eps = DBL_EPSILON / 2, lapack = tu_lapack_inverse_ratio(n, A, eps);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.stripe = stripe;
  o.device = dev;
  o.method = OOC_METHOD_GJ;
  o.check = OOC_CHECK_FULL;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_OK);
  CU_ASSERT(lapack < 30);
  if (st == OOC_OK) {
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    CU_ASSERT_FATAL(X != NULL);
    double ratio = tu_inverse_ratio(n, A, X, eps);
    CU_ASSERT(ratio < 30);
    CU_ASSERT(ratio <= 10 * lapack);
    CU_ASSERT(rep.steps >= 2);
    if (ratio / lapack > *worst_rel) *worst_rel = ratio / lapack;
    if (!(ratio < 30 && ratio <= 10 * lapack))
      fprintf(stderr, "\nwide: dev %d n %lld cond %g tile %lld stripe %lld (%lld steps): ratio %g, "
              "LAPACK getri %g\n", (int)dev, (long long)n, cond, (long long)tile,
              (long long)stripe, (long long)rep.steps, ratio, lapack);
    free(X);
  } else {
    fprintf(stderr, "\nwide: %s\n", ooc_ctx_error(ctx));
  }
  tu_ctx_done(ctx);
  remove(in);
  remove(out);
  free(A);
}

static void t_wide(void) {
  const double conds[] = {1e8, 1e12, 0.1 / DBL_EPSILON};
  const int64_t cfg[][2] = {{128, 512}, {100, 500}, {64, 64}}; /* tile, stripe: 600 = 512 + 88 */
  double worst = 0;
  int runs = 0;
  for (int d = 0; d < 2; d++)
    for (int c = 0; c < 3; c++)
      for (int k = 0; k < 3; k++) {
        if (d == 0 && k == 2) continue; /* ref: narrow stripes are slow and change nothing */
        wide_case(d ? OOC_DEVICE_CPU : OOC_DEVICE_REF, 600, conds[c], cfg[k][0], cfg[k][1], &worst);
        runs++;
      }
  printf("[%d runs, worst ratio / LAPACK getri's %.3g] ", runs, worst);
}

static void t_solve(void) {
  int64_t ns[] = {1, 2, 3, 17, 100, 1000};
  for (size_t i = 0; i < 6; i++)
    for (size_t t = 0; t < 4; t++) {
      int64_t n = ns[i], tile = TILES[t] ? TILES[t] : n;
      if (n == 1000 && tile == 1) continue;
      solve_case(GEN_RANDOM, n, 1, tile, OOC_DEVICE_CPU, 0);
      solve_case(GEN_MATERN, n, 50, tile, OOC_DEVICE_CPU, 0);
    }
  solve_case(GEN_RANDOM, 100, 7, 7, OOC_DEVICE_REF, 0);
  solve_case(GEN_RANDOM, 100, 7, 64, OOC_DEVICE_REF, 1);
  solve_case(GEN_COND, 1000, 3, 64, OOC_DEVICE_REF, 0);
}

/* Out of core for real: the matrix is >= 4x --host-mem; the scratch store must be used, the
 * budget respected (every byte the library allocates is counted), and the result right. */
static void ooc_case(ooc_device_t dev, int64_t n, int64_t tile, int64_t mem, int solve) {
  const char *in = tu_path("O_A.h5"), *rhs = tu_path("O_B.h5"), *out = tu_path("O_X.h5");
  double *A = make(GEN_RANDOM, n, n, 5), *B = solve ? make(GEN_RHS, n, 4, 6) : NULL;
  tu_write_matrix(in, "/A", n, n, A, 2);
  if (solve) tu_write_matrix(rhs, "/B", n, 4, B, 2);
  CU_ASSERT(8 * n * n >= 4 * mem);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.device = dev;
  o.host_mem = mem;
  o.force = 1;
  o.scratch_dir = tu_tmpdir();
  ooc_report_t rep;
  unlink(out); /* force would add the dataset to an earlier case's file (h5commit.h) */
  ooc_status_t st = solve ? ooc_solve(ctx, in, rhs, out, &o, &rep)
                          : ooc_invert(ctx, in, out, &o, &rep);
  if (st != OOC_OK) fprintf(stderr, "\nout-of-core n=%lld: %s\n", (long long)n, ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  CU_ASSERT(rep.bytes_spilled > 0);
  CU_ASSERT(rep.bytes_unspilled > 0);
  CU_ASSERT(rep.steps > 1);
  CU_ASSERT(rep.host_peak <= mem);
  CU_ASSERT(ooc_ctx_host_peak(ctx) <= mem);
  fprintf(stderr, "[n=%lld tile=%lld mem=%lld: peak %lld, stripe %lld, %lld steps, spilled %lld] ",
          (long long)n, (long long)tile, (long long)mem, (long long)rep.host_peak,
          (long long)rep.stripe, (long long)rep.steps, (long long)rep.bytes_spilled);
  int64_t r, c;
  double *X = tu_read_matrix(out, &r, &c);
  CU_ASSERT_FATAL(X != NULL);
  double ratio = solve ? tu_solve_ratio(n, 4, A, X, B, DBL_EPSILON / 2)
                       : tu_inverse_ratio(n, A, X, DBL_EPSILON / 2);
  CU_ASSERT(ratio < (solve ? 16 : 30));
  free(X);
  free(A);
  free(B);
  tu_ctx_done(ctx);
}

static void t_out_of_core(void) {
  ooc_case(OOC_DEVICE_CPU, 1000, 64, 7 << 18, 0);  /* 8 MB matrix, 1.75 MiB budget */
  ooc_case(OOC_DEVICE_CPU, 777, 50, 1 << 20, 0);   /* tile does not divide n */
  ooc_case(OOC_DEVICE_REF, 500, 32, 480 << 10, 0);
  ooc_case(OOC_DEVICE_CPU, 1000, 64, 3 << 19, 1);  /* solve, 1.5 MiB */
}

static void t_budget_too_small(void) {
  const char *in = tu_path("T_A.h5");
  double *A = make(GEN_RANDOM, 500, 500, 5);
  tu_write_matrix(in, "/A", 500, 500, A, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = 256;
  o.host_mem = 100 << 10;
  ooc_status_t st = ooc_invert(ctx, in, tu_path("T_X.h5"), &o, NULL);
  CU_ASSERT_EQUAL(st, OOC_ERR_BUDGET);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "--host-mem") != NULL);
  CU_ASSERT(!tu_file_exists(tu_path("T_X.h5")));
  tu_ctx_done(ctx);
  free(A);
}

/* The library's checker must fail a wrong inverse and a NaN, not only pass right ones. */
static void t_checker_fails_bad_results(void) {
  int64_t n = 60;
  double *A = make(GEN_RANDOM, n, n, 3), *X = malloc((size_t)(n * n) * sizeof *X);
  lapack_int ipiv[60];
  memcpy(X, A, (size_t)(n * n) * sizeof *X);
  CU_ASSERT_FATAL(LAPACKE_dgetrf(LAPACK_COL_MAJOR, 60, 60, X, 60, ipiv) == 0);
  CU_ASSERT_FATAL(LAPACKE_dgetri(LAPACK_COL_MAJOR, 60, X, 60, ipiv) == 0);
  tu_memsrc_t sa = {A, n}, sx = {X, n};
  ooc_source_t srcA = {&sa, tu_mem_read, NULL, NULL}, srcX = {&sx, tu_mem_read, NULL, NULL};
  ooc_ctx_t *ctx = tu_ctx();
  double eps = check_eps(0);
  for (int full = 0; full < 2; full++) {
    double r, na, nx;
    CU_ASSERT(check_inverse(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcX, full, eps, 1 << 20, &r,
                            &na, &nx) == OOC_OK);
    CU_ASSERT(r < 30);
    CU_ASSERT(fabs(r - tu_inverse_ratio(n, A, X, eps)) < 30 || !full);
    double keep = X[5 + 7 * n];
    X[5 + 7 * n] *= 1 + 1e-6; /* a wrong inverse, by far more than rounding */
    CU_ASSERT(check_inverse(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcX, full, eps, 1 << 20, &r,
                            &na, &nx) == OOC_OK);
    CU_ASSERT(r > 1000);
    X[5 + 7 * n] = NAN;
    CU_ASSERT(check_inverse(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcX, full, eps, 1 << 20, &r,
                            &na, &nx) == OOC_OK);
    CU_ASSERT(isnan(r));
    CU_ASSERT(!(r < 30));
    X[5 + 7 * n] = keep;
  }
  /* solve: X = A^-1 B with one wrong entry */
  double *B = make(GEN_RHS, n, 3, 4), *Y = malloc((size_t)(n * 3) * sizeof *Y);
  for (int64_t c = 0; c < 3; c++)
    for (int64_t i = 0; i < n; i++) {
      double s = 0;
      for (int64_t l = 0; l < n; l++) s += X[i + l * n] * B[l + c * n];
      Y[i + c * n] = s;
    }
  tu_memsrc_t sb = {B, n}, sy = {Y, n};
  ooc_source_t srcB = {&sb, tu_mem_read, NULL, NULL}, srcY = {&sy, tu_mem_read, NULL, NULL};
  double r, nx;
  /* and with A's pass by rows (a file's: h5m_stream_rows): the same ratios up to rounding */
  ooc_source_t srcAr = srcA;
  srcAr.rows = tu_mem_rows;
  double rr, nxr;
  CU_ASSERT(check_solve(ctx, ooc_ops_ref(), n, 3, 16, &srcA, &srcB, &srcY, eps, 1 << 20, &r,
                        &nx) == OOC_OK);
  CU_ASSERT(check_solve(ctx, ooc_ops_ref(), n, 3, 16, &srcAr, &srcB, &srcY, eps, 1 << 20, &rr,
                        &nxr) == OOC_OK);
  CU_ASSERT(r < 16 && rr < 16 && nxr == nx);
  Y[10 + 2 * n] += 1e-6;
  CU_ASSERT(check_solve(ctx, ooc_ops_ref(), n, 3, 16, &srcA, &srcB, &srcY, eps, 1 << 20, &r,
                        &nx) == OOC_OK);
  CU_ASSERT(check_solve(ctx, ooc_ops_ref(), n, 3, 16, &srcAr, &srcB, &srcY, eps, 1 << 20, &rr,
                        &nxr) == OOC_OK);
  CU_ASSERT(r > 1000 && fabs(rr - r) <= 1e-6 * r);
  tu_ctx_done(ctx);
  free(A);
  free(X);
  free(B);
  free(Y);
}

/* The Cholesky factor's probe check (check_factor, A T formed by a pass over A) by strips and,
 * where the sources stream rows, by two passes over L's rows: on a right factor both are
 * rounding (< 30), on a factor with one wrong entry the same ratio to 1e-6. */
static void t_factor_check_rows(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 300;
  double *A = make(GEN_MATERN, n, n, 21), *L = malloc((size_t)(n * n) * sizeof *L);
  memcpy(L, A, (size_t)(n * n) * sizeof *L);
  CU_ASSERT_FATAL(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)n) == 0);
  for (int64_t j = 1; j < n; j++)
    for (int64_t i = 0; i < j; i++) L[i + j * n] = 0;
  tu_memsrc_t sa = {A, n}, sl = {L, n};
  ooc_source_t srcA = {&sa, tu_mem_read, NULL, NULL}, srcL = {&sl, tu_mem_read, NULL, NULL};
  ooc_source_t rowA = {&sa, tu_mem_read, NULL, tu_mem_rows};
  ooc_source_t rowL = {&sl, tu_mem_read, NULL, tu_mem_rows};
  double eps = check_eps(0);
  for (int wrong = 0; wrong < 2; wrong++) {
    if (wrong) L[200 + 37 * n] *= 1 + 1e-6;
    double r[3], na[3];
    CU_ASSERT(check_factor(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcL, 0, eps, 1 << 20, NULL, NULL,
                           &r[0], &na[0], NULL) == OOC_OK);
    CU_ASSERT(check_factor(ctx, ooc_ops_cpu(), n, 16, &srcA, &rowL, 0, eps, 1 << 20, NULL, NULL,
                           &r[1], &na[1], NULL) == OOC_OK);
    CU_ASSERT(check_factor(ctx, ooc_ops_cpu(), n, 16, &rowA, &rowL, 0, eps, 1 << 20, NULL, NULL,
                           &r[2], &na[2], NULL) == OOC_OK);
    for (int k = 1; k < 3; k++) {
      CU_ASSERT(wrong ? r[k] > 30 && fabs(r[k] - r[0]) <= 1e-6 * r[0] : r[k] < 30);
      CU_ASSERT(fabs(na[k] - na[0]) <= 1e-13 * na[0]); /* column sums in another order */
    }
    CU_ASSERT(wrong ? r[0] > 30 : r[0] < 30);
    printf("[%s factor: strips %.4g, L by rows %.4g, A and L by rows %.4g] ",
           wrong ? "wrong" : "right", r[0], r[1], r[2]);
  }
  tu_ctx_done(ctx);
  free(A);
  free(L);
}

/* ---- gj_run without an executor (a host one made for the call), in and out of core ---------- */

/* gj_run on stores over A [and B] (n x n, n x m) with tile b, stripe W and cache cap. Returns
 * the result store's content (A^-1 P_r^T, or X) and perm. */
static double *gj_direct(const ooc_ops_t *ops, const double *A, int64_t n, const double *B,
                         int64_t m, int64_t b, int64_t W, int64_t cap, int64_t *perm,
                         int64_t *spills) {
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, tu_mem_read, NULL, NULL}, srcb = {&mb, tu_mem_read, NULL, NULL};
  tu_spill_t sla = {ctx, "gjthr", NULL, 0}, slb = {ctx, "gjthr", NULL, 0};
  ooc_spill_ops_t spa = {&sla, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  spb = {&slb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &srca, &spa, &sa) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &srcb, &spb, &sb) == OOC_OK);
  double *colnorm = calloc((size_t)n, sizeof *colnorm);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) colnorm[j] += fabs(A[i + j * n]);
  gj_args_t args = {.A = sa, .B = sb, .stripe = W, .ops = ops, .colnorm = colnorm,
                    .perm = B ? NULL : perm};
  gj_stats_t stats;
  int64_t info = 0;
  ooc_status_t st = gj_run(ctx, &args, &stats, &info);
  CU_ASSERT_EQUAL(st, OOC_OK);
  if (st != OOC_OK) fprintf(stderr, "\n  gj_run: %s\n", ooc_ctx_error(ctx));
  CU_ASSERT(stats.steps == ooc_cdiv64(n, ts_stripe(n, b, W)));
  double *R = NULL;
  *spills = ts_stats(sa)->spills + (sb ? ts_stats(sb)->spills : 0);
  if (st == OOC_OK) {
    tstore_t *out = B ? sb : sa;
    R = tu_read_store(out, n);
  }
  tstore_destroy(sa);
  tstore_destroy(sb);
  tcache_destroy(cache);
  scratch_close(sla.s);
  scratch_close(slb.s);
  free(colnorm);
  tu_ctx_done(ctx);
  return R;
}

/* Right (LAPACK's ratios), spilling when the cache is small, and the same bits run to run. */
static void direct_case(const ooc_ops_t *ops, int64_t n, int64_t m, int64_t b, int64_t W,
                        int64_t cap) {
  double *A = make(GEN_RANDOM, n, n, 21), *B = m ? make(GEN_RHS, n, m, 22) : NULL;
  int64_t rc = m ? m : n;
  int64_t *perm0 = malloc((size_t)n * sizeof *perm0), *perm = malloc((size_t)n * sizeof *perm);
  int64_t spills = 0;
  double *R0 = gj_direct(ops, A, n, B, m, b, W, cap, perm0, &spills);
  CU_ASSERT_FATAL(R0 != NULL);
  if (cap < 8 * n * (n + m)) CU_ASSERT(spills > 0);
  /* the answer is right */
  double *X = malloc((size_t)(n * rc) * sizeof *X);
  for (int64_t c = 0; c < rc; c++)
    memcpy(X + c * n, R0 + (m ? c : perm0[c]) * n, (size_t)n * sizeof *X); /* A^-1 = R0 P_r */
  double ratio = m ? tu_solve_ratio(n, m, A, X, B, DBL_EPSILON / 2)
                   : tu_inverse_ratio(n, A, X, DBL_EPSILON / 2);
  CU_ASSERT(ratio < (m ? 16 : 30));
  if (!(ratio < (m ? 16 : 30)))
    fprintf(stderr, "\n  n=%lld m=%lld b=%lld W=%lld: ratio %g\n", (long long)n, (long long)m,
            (long long)b, (long long)W, ratio);
  double *R = gj_direct(ops, A, n, B, m, b, W, cap, perm, &spills);
  CU_ASSERT_FATAL(R != NULL);
  CU_ASSERT(memcmp(R, R0, (size_t)(n * rc) * sizeof *R) == 0);
  if (!m) CU_ASSERT(memcmp(perm, perm0, (size_t)n * sizeof *perm) == 0);
  free(R);
  free(X);
  free(R0);
  free(A);
  free(B);
  free(perm0);
  free(perm);
}

/* The inverse check above the full-check size: Hager-Higham's estimate of ||I - A X||_1.
 * Wrong inverses built to hide from random +-1 probes (one wrong column, one wrong row: the
 * probes see their error divided by ~sqrt(n) or n) and a dense perturbation: the estimate must
 * fail them where the probes alone pass, never exceed the full ratio, and stay within 3x below
 * it; a right inverse passes. Prints the estimate / full and the products taken. */
static void t_estimator(void) {
  int64_t n = 300;
  double *A = make(GEN_RANDOM, n, n, 5), *X0 = malloc((size_t)(n * n) * sizeof *X0);
  double *X = malloc((size_t)(n * n) * sizeof *X);
  lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
  memcpy(X0, A, (size_t)(n * n) * sizeof *X0);
  CU_ASSERT_FATAL(LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, X0, (lapack_int)n, ipiv) == 0);
  CU_ASSERT_FATAL(LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, X0, (lapack_int)n, ipiv) == 0);
  tu_memsrc_t sa = {A, n}, sx = {X, n};
  ooc_source_t srcA = {&sa, tu_mem_read, NULL, NULL}, srcX = {&sx, tu_mem_read, NULL, NULL};
  ooc_ctx_t *ctx = tu_ctx();
  double eps = check_eps(0), xmax = 0;
  for (int64_t i = 0; i < n * n; i++) xmax = fmax(xmax, fabs(X0[i]));
  uint64_t seed = 99;
  int ncase = 0, probe_missed = 0;
  double lo = 1e300;
  for (int kind = 0; kind < 4; kind++) {
    memcpy(X, X0, (size_t)(n * n) * sizeof *X);
    /* kind 0: right; 1: column 37 off; 2: row 211 off; 3: every entry off, relative 1e-9 */
    tu_spoil_inverse(kind, n, X, xmax, &seed);
    double full, est, na, nx;
    check_info_t ci, cf;
    CU_ASSERT(check_inverse_ex(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcX, 1, eps, 1 << 20, &full,
                               &na, &nx, &cf) == OOC_OK);
    /* 1 MiB: the estimator streams each matrix in several column blocks */
    CU_ASSERT(check_inverse_ex(ctx, ooc_ops_cpu(), n, 16, &srcA, &srcX, 0, eps, 1 << 20, &est,
                               &na, &nx, &ci) == OOC_OK);
    CU_ASSERT(ci.products >= 2 && ci.products <= CHECK_EST_MAX_PRODUCTS);
    CU_ASSERT(ci.probe <= est);
    ncase++;
    if (kind == 0) {
      CU_ASSERT(full < 30 && est < 30);
    } else {
      CU_ASSERT(full > 300);
      CU_ASSERT(est >= 30);                 /* fails, as it must */
      CU_ASSERT(est <= full * (1 + 1e-6));  /* a lower bound */
      CU_ASSERT(est >= full / 3);
      if (ci.probe < 30) probe_missed++;
      lo = fmin(lo, est / full);
    }
    /* the same estimate from transposed strips (a file's sources have read_t: tstore.h) and
     * from passes by rows (a file's sources stream rows: h5m_stream_rows, the groups' partial
     * sums added in group order). A right inverse's residual is rounding, which the sums' order
     * moves (by rows, with it which unit vectors come next: the products may differ); a wrong
     * one's is its error: the same value, from the same products */
    const ooc_source_t vA[2] = {{&sa, tu_mem_read, tu_mem_read_t, NULL},
                                {&sa, tu_mem_read, NULL, tu_mem_rows}};
    const ooc_source_t vX[2] = {{&sx, tu_mem_read, tu_mem_read_t, NULL},
                                {&sx, tu_mem_read, NULL, tu_mem_rows}};
    const char *vname[2] = {"transposed", "by rows"};
    double ev[2];
    int pv[2];
    for (int v = 0; v < 2; v++) {
      check_info_t cv;
      CU_ASSERT(check_inverse_ex(ctx, ooc_ops_cpu(), n, 16, &vA[v], &vX[v], 0, eps, 1 << 20,
                                 &ev[v], &na, &nx, &cv) == OOC_OK);
      pv[v] = cv.products;
      if (v == 0 || kind > 0) CU_ASSERT_EQUAL(cv.products, ci.products);
      CU_ASSERT(cv.probe <= ev[v]);
      CU_ASSERT(kind == 0 ? ev[v] < 30 && ev[v] <= 2 * est && est <= 2 * ev[v]
                          : ev[v] >= 30 && fabs(ev[v] - est) <= 1e-6 * est);
      if (kind > 0 && (cv.products != ci.products || fabs(ev[v] - est) > 1e-6 * est))
        printf("[kind %d: %s %.17g (%d products), plain %.17g (%d)] ", kind, vname[v], ev[v],
               cv.products, est, ci.products);
    }
    printf("[case %d: full %.3g, estimate %.3g (%d products; transposed %.3g; by rows %.3g, %d), "
           "probes alone %.3g] ", kind, full, est, ci.products, ev[0], ev[1], pv[1], ci.probe);
  }
  CU_ASSERT(probe_missed >= 2); /* the column and row cases hide from the probes */
  printf("[%d cases, estimate / full >= %.3g, %d the probes alone passed] ", ncase, lo,
         probe_missed);
  tu_ctx_done(ctx);
  free(A);
  free(X0);
  free(X);
  free(ipiv);
}

/* A result over the threshold (here: a threshold no result meets) is never put in place; with
 * keep_failed it lands as "<out without .h5>.rejected.h5", the call still fails, and the report
 * names it. The check above the full size (--check probe) reports the estimate and its products. */
static void t_keep_failed(void) {
  int64_t n = 100;
  char in[1024], out[1024], rej[1024];
  snprintf(in, sizeof in, "%s", tu_path("K_A.h5"));
  snprintf(out, sizeof out, "%s", tu_path("K_A.inv.h5"));
  snprintf(rej, sizeof rej, "%s", tu_path("K_A.inv.rejected.h5"));
  double *A = make(GEN_RANDOM, n, n, 8);
  tu_write_matrix(in, "/A", n, n, A, 2);
  for (int keep = 0; keep < 2; keep++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_opts_default(&o);
    o.tile = 32;
    o.check = OOC_CHECK_PROBE;
    o.check_threshold = 1e-12;
    o.keep_failed = keep;
    ooc_report_t rep;
    CU_ASSERT_EQUAL(ooc_invert(ctx, in, out, &o, &rep), OOC_ERR_ACCURACY);
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "estimated probe ratio") != NULL);
    CU_ASSERT(!tu_file_exists(out));
    /* (tile 32: chunks of 4 x 4 tiles, written whole, so the fused first product already
     * fails it) */
    CU_ASSERT(rep.check_products >= 1 && rep.check_products <= CHECK_EST_MAX_PRODUCTS);
    CU_ASSERT(rep.residual_norm1 > 0 && rep.residual >= 1e-12);
    CU_ASSERT_EQUAL(tu_file_exists(rej), keep);
    CU_ASSERT_EQUAL(rep.rejected[0] != 0, keep);
    if (keep) {
      CU_ASSERT(strstr(ooc_ctx_error(ctx), "kept for inspection") != NULL);
      CU_ASSERT(strstr(rep.rejected, "K_A.inv.rejected.h5:/inverse") != NULL);
      int64_t r, c;
      double *X = tu_read_matrix(rep.rejected, &r, &c);
      CU_ASSERT_FATAL(X != NULL);
      CU_ASSERT(tu_inverse_ratio(n, A, X, DBL_EPSILON / 2) < 30); /* the result as computed */
      free(X);
    }
    tu_ctx_done(ctx);
  }
  remove(rej);
  remove(in);
  free(A);
}

static void t_direct(void) {
  const int64_t big = (int64_t)1 << 30;
  direct_case(ooc_ops_cpu(), 300, 0, 32, 64, big);      /* in core, edge tile of 12 rows */
  direct_case(ooc_ops_cpu(), 300, 0, 32, 96, 64 << 10); /* spilling: a few tiles cached */
  direct_case(ooc_ops_cpu(), 300, 5, 32, 64, 64 << 10); /* solve: targets in A and B */
  direct_case(ooc_ops_cpu(), 256, 0, 16, 16, big);      /* one tile per step */
  direct_case(ooc_ops_cpu(), 300, 0, 300, 300, big);    /* one step, no sweep */
  direct_case(ooc_ops_ref(), 130, 3, 8, 24, 16 << 10);  /* ref kernels, 17 row tiles */
  direct_case(ooc_ops_cpu(), 1100, 0, 64, 128, 1 << 20); /* chunks of several tiles */
  /* narrow stripes in a small cache (the cases of the old CPU path's two transform paths) */
  direct_case(ooc_ops_cpu(), 256, 0, 16, 64, 64 << 10);
  direct_case(ooc_ops_cpu(), 448, 0, 32, 96, 128 << 10);
}

/* ---- gj on each executor ----------------------------------------------------------------------
 * gj_x runs with no executor given (gj_run makes the pipeline's host one: unified, one queue),
 * on that host executor given, and on the strict host executor (separate device buffers, late
 * operations, NaN-filled gets: a missing sync reads NaN or stale data). All must pick the same
 * pivots (perm equal), give LAPACK-quality results (inverse ratio < 30, solve < 16), and agree
 * bit for bit: they run the same operations on the same data, so a missing sync (NaN or stale
 * data) would differ. In a CUDA build on a GPU host the CUDA executor (three queues, as
 * job_gj.c makes it) runs each case too: the same status, info and message, and the ratios (its
 * pivots may differ from the host's at a near tie). */

enum { X_NONE = 0, X_HOST, X_STRICT, X_CUDA };

/* Is there a GPU for X_CUDA runs (a build with CUDA on a GPU host)? Asked once. */
static int cuda_usable(void) {
  static int usable = -1;
#ifdef OOC_HAVE_CUDA
  if (usable < 0) {
    ooc_ctx_t *ctx = tu_ctx();
    ex_cuda_config_t c = {.device = 0, .nqueues = 3};
    ooc_exec_t *x = NULL;
    usable = ex_cuda_create(ctx, &c, &x) == OOC_OK;
    ex_destroy(x);
    tu_ctx_done(ctx);
    fprintf(stderr, "[gj_x on the CUDA executor: %s] ", usable ? "run" : "no GPU, skipped");
  }
#endif
  return usable > 0;
}

typedef struct gjt {
  ooc_ctx_t *ctx;
  tcache_t *cache;
  tstore_t *sa, *sb;
  tu_memsrc_t ma, mb;
  ooc_source_t srca, srcb;
  tu_spill_t sla, slb;
  ooc_spill_ops_t spa, spb;
  double *colnorm;
  int64_t n, m;
} gjt_t;

static void gjt_open(gjt_t *g, const double *A, int64_t n, const double *B, int64_t m, int64_t b,
                     int64_t cap) {
  memset(g, 0, sizeof *g);
  g->ctx = tu_ctx();
  g->n = n;
  g->m = m;
  g->ma = (tu_memsrc_t){A, n};
  g->mb = (tu_memsrc_t){B, n};
  g->srca = (ooc_source_t){&g->ma, tu_mem_read, NULL, NULL};
  g->srcb = (ooc_source_t){&g->mb, tu_mem_read, NULL, NULL};
  g->sla = (tu_spill_t){g->ctx, "gjx", NULL, 0};
  g->slb = (tu_spill_t){g->ctx, "gjx", NULL, 0};
  g->spa = (ooc_spill_ops_t){&g->sla, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  g->spb = (ooc_spill_ops_t){&g->slb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(g->ctx, cap, &g->cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(g->ctx, g->cache, n, n, b, &g->srca, &g->spa, &g->sa) == OOC_OK);
  if (B)
    CU_ASSERT_FATAL(tstore_create(g->ctx, g->cache, n, m, b, &g->srcb, &g->spb, &g->sb) == OOC_OK);
  g->colnorm = calloc((size_t)n + 1, sizeof *g->colnorm);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) g->colnorm[j] += fabs(A[i + j * n]);
}

typedef struct gjt_run {
  int mode;                 /* X_NONE, X_HOST, X_STRICT, X_CUDA */
  const ooc_ops_t *ops;
  int64_t W, chunk;
  int64_t start_step;       /* resume: the first step, with ipiv0 */
  const int64_t *ipiv0;
  int64_t stop_after;       /* >= 0: after_step fails after this step (to resume from) */
  int64_t *ipiv_at_stop;    /* n: the pivots after_step saw then */
  int64_t n;
} gjt_run_t;

static ooc_status_t stop_cb(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv) {
  gjt_run_t *r = user;
  (void)nsteps;
  if (step != r->stop_after) return OOC_OK;
  memcpy(r->ipiv_at_stop, ipiv, (size_t)r->n * sizeof *ipiv);
  return OOC_ERR_INTERRUPTED;
}

static ooc_status_t gjt_run(gjt_t *g, gjt_run_t *r, int64_t *perm, int64_t *steps, int64_t *info) {
  ooc_exec_t *x = NULL;
  r->n = g->n;
  if (r->mode == X_HOST) /* the pipeline's: unified, one queue, the budget exactly P */
    CU_ASSERT_FATAL(gj_x_host_exec(g->ctx, r->ops, g->n, ts_rows(g->sa).b, r->W, &x) == OOC_OK);
  if (r->mode == X_STRICT) /* copies in, products, copies out on their own queues */
    CU_ASSERT_FATAL(ex_host_create_strict(g->ctx, r->ops, 3, 0, 20, &x) == OOC_OK);
#ifdef OOC_HAVE_CUDA
  if (r->mode == X_CUDA) { /* as job_gj.c makes it */
    ex_cuda_config_t c = {.device = 0, .nqueues = 3};
    CU_ASSERT_FATAL(ex_cuda_create(g->ctx, &c, &x) == OOC_OK);
  }
#endif
  gj_args_t a = {.A = g->sa, .B = g->sb, .stripe = r->W, .ops = r->ops, .colnorm = g->colnorm,
                 .perm = g->sb ? NULL : perm, .x = x, .chunk = r->chunk,
                 .start_step = r->start_step, .ipiv0 = r->ipiv0};
  if (r->stop_after >= 0) {
    a.after_step = stop_cb;
    a.step_user = r;
  }
  gj_stats_t stats;
  ooc_status_t st = gj_run(g->ctx, &a, &stats, info);
  *steps = stats.steps;
  ex_destroy(x);
  return st;
}

static void gjt_close(gjt_t *g) {
  tstore_destroy(g->sa);
  tstore_destroy(g->sb);
  tcache_destroy(g->cache);
  scratch_close(g->sla.s);
  scratch_close(g->slb.s);
  free(g->colnorm);
  tu_ctx_done(g->ctx);
}

/* One run on fresh stores: the result store's content (A^-1 P_r^T, or X), or NULL on failure
 * (then *st, *info and the message in msg). */
static double *gjt_once(const double *A, int64_t n, const double *B, int64_t m, int64_t b,
                        int64_t cap, gjt_run_t *r, int64_t *perm, ooc_status_t *st, int64_t *info,
                        char *msg, size_t cap_msg) {
  gjt_t g;
  gjt_open(&g, A, n, B, m, b, cap);
  int64_t steps = 0;
  *st = gjt_run(&g, r, perm, &steps, info);
  double *R = NULL;
  if (*st == OOC_OK) {
    CU_ASSERT(steps == ooc_cdiv64(n, ts_stripe(n, b, r->W)));
    R = tu_read_store(B ? g.sb : g.sa, n);
  } else if (msg) {
    snprintf(msg, cap_msg, "%s", ooc_ctx_error(g.ctx));
  }
  gjt_close(&g);
  return R;
}

static int g_x_logged;

/* A^-1 from the store's content (column c of A^-1 is column perm[c] of R) or X, and its ratio. */
static double gjt_ratio(const double *A, int64_t n, const double *B, int64_t m, const double *R,
                        const int64_t *perm) {
  int64_t rc = m ? m : n;
  double *X = malloc((size_t)(n * rc + 1) * sizeof *X);
  for (int64_t c = 0; c < rc; c++)
    memcpy(X + c * n, R + (m ? c : perm[c]) * n, (size_t)n * sizeof *X);
  double ratio = m ? tu_solve_ratio(n, m, A, X, B, DBL_EPSILON / 2)
                   : tu_inverse_ratio(n, A, X, DBL_EPSILON / 2);
  free(X);
  return ratio;
}

/* gj_x with no executor given, on the host executor and on the strict one (and CUDA): same
 * perm, good ratios, the host runs bit-identical. */
static void x_case(const ooc_ops_t *ops, gen_kind_t kind, int64_t n, int64_t m, int64_t b,
                   int64_t W, int64_t chunk, int64_t cap) {
  double *A = make(kind, n, n, 31 + (uint64_t)n), *B = m ? make(GEN_RHS, n, m, 32) : NULL;
  int64_t rc = m ? m : n;
  int64_t *perm[4] = {NULL};
  double *R[4] = {NULL};
  ooc_status_t st[4];
  int64_t info[4];
  char msg[4][512];
  int runs = cuda_usable() ? 4 : 3; /* the CUDA executor where there is a GPU */
  for (int k = 0; k < runs; k++) {
    perm[k] = calloc((size_t)n + 1, sizeof *perm[k]);
    gjt_run_t r = {.mode = k, .ops = ops, .W = W, .chunk = chunk, .stop_after = -1};
    msg[k][0] = 0;
    info[k] = 0;
    R[k] = gjt_once(A, n, B, m, b, cap, &r, perm[k], &st[k], &info[k], msg[k], sizeof msg[k]);
  }
  int logit = 0;
  for (int k = 1; k < runs; k++) {
    CU_ASSERT_EQUAL(st[k], st[0]);
    CU_ASSERT_EQUAL(info[k], info[0]);
    if (st[0] != OOC_OK) {
      CU_ASSERT_STRING_EQUAL(msg[k], msg[0]); /* the same test on the same exact zero */
      logit |= strcmp(msg[k], msg[0]) != 0;
      continue;
    }
    if (!R[k]) continue;
    /* the same pivots on the host's kernels; cuSOLVER's roundings may break a near tie */
    if (!m && k != X_CUDA) CU_ASSERT(memcmp(perm[k], perm[0], (size_t)n * sizeof *perm[0]) == 0);
    double ratio = gjt_ratio(A, n, B, m, R[k], perm[k]);
    CU_ASSERT(ratio < (m ? 16 : 30));
    logit |= !(ratio < (m ? 16 : 30));
  }
  if (kind == GEN_SINGULAR) {
    CU_ASSERT_EQUAL(st[0], OOC_ERR_SINGULAR);
    CU_ASSERT_EQUAL(info[0], n / 2 + 1);
  } else {
    CU_ASSERT_EQUAL(st[0], OOC_OK);
  }
  for (int k = 1; k <= X_STRICT; k++)
    if (R[0] && R[k]) {
      CU_ASSERT(memcmp(R[0], R[k], (size_t)(n * rc) * sizeof *R[0]) == 0);
      logit |= memcmp(R[0], R[k], (size_t)(n * rc) * sizeof *R[0]) != 0;
    }
  if (logit && g_x_logged++ < 10)
    fprintf(stderr, "\n  gj_x %s n=%lld m=%lld b=%lld W=%lld chunk=%lld cap=%lld: st %d/%d/%d "
            "info %lld/%lld/%lld '%s' / '%s'\n", gen_kind_name(kind), (long long)n,
            (long long)m, (long long)b, (long long)W, (long long)chunk, (long long)cap, st[0],
            st[1], st[2], (long long)info[0], (long long)info[1], (long long)info[2], msg[0],
            msg[1]);
  for (int k = 0; k < 4; k++) {
    free(R[k]);
    free(perm[k]);
  }
  free(A);
  free(B);
}

/* Sizes (1, 2, odd, tile multiples), tiles 1, 7, 64 and n, one step, several, an uneven last
 * one, chunks of one tile (the panel LU over several chunks), in core and spilling. */
static void t_x_shapes(void) {
  const ooc_ops_t *cpu = ooc_ops_cpu();
  const int64_t big = (int64_t)1 << 30, small = 16 << 10;
  static const int64_t NS[] = {1, 2, 3, 17, 64, 130};
  for (size_t i = 0; i < sizeof NS / sizeof NS[0]; i++) {
    int64_t n = NS[i];
    int64_t tiles[] = {1, 7, 64, n};
    for (int t = 0; t < 4; t++) {
      int64_t b = ooc_min64(tiles[t], n);
      if (b == 1 && n > 17) continue; /* a queue operation per element: seconds, nothing new */
      int64_t Ws[] = {n, b, 2 * b, 3 * b}; /* one step; one tile; uneven last steps */
      for (int w = 0; w < 4; w++) {
        if (w > 0 && Ws[w] >= n && w != 1) continue;
        for (int c = 0; c < 2; c++) {
          int64_t chunk = c ? b : 0; /* chunks of one tile, or GJ_X_CHUNK */
          x_case(cpu, GEN_RANDOM, n, 0, b, Ws[w], chunk, big);
          if (n >= 17) x_case(cpu, GEN_RANDOM, n, 0, b, Ws[w], chunk, small);
          if (n >= 3) x_case(cpu, GEN_RANDOM, n, 5, b, Ws[w], chunk, n >= 17 ? small : big);
        }
      }
    }
  }
}

/* Larger: several chunks of several tiles, spilling, solve with many columns, ref kernels. */
static void t_x_larger(void) {
  const ooc_ops_t *cpu = ooc_ops_cpu();
  x_case(cpu, GEN_RANDOM, 300, 0, 32, 96, 64, 64 << 10);  /* 3 chunks of 2 tiles (and 1 of 1) */
  x_case(cpu, GEN_RANDOM, 300, 0, 32, 300, 64, 1 << 30); /* one step in 5 chunks */
  x_case(cpu, GEN_RANDOM, 300, 50, 32, 64, 0, 64 << 10);  /* solve */
  x_case(cpu, GEN_COND, 300, 0, 32, 128, 32, 1 << 30);    /* cond 1e6 */
  x_case(cpu, GEN_DIAGDOM, 257, 0, 64, 128, 64, 32 << 10);
  x_case(ooc_ops_ref(), GEN_RANDOM, 130, 3, 8, 24, 8, 16 << 10);
}

/* Singular: the first unusable pivot, the same info and message on every executor, in the first
 * chunk, a later chunk, a later step; the zero column last. */
static void t_x_singular(void) {
  const ooc_ops_t *cpu = ooc_ops_cpu();
  x_case(cpu, GEN_SINGULAR, 100, 0, 10, 100, 0, 1 << 30); /* zero column 50, one chunk */
  x_case(cpu, GEN_SINGULAR, 100, 0, 10, 100, 20, 1 << 30); /* its chunk is the third */
  x_case(cpu, GEN_SINGULAR, 100, 0, 10, 30, 10, 1 << 30);  /* the second step */
  x_case(cpu, GEN_SINGULAR, 100, 3, 10, 40, 10, 8 << 10);  /* solve, spilling */
  x_case(cpu, GEN_SINGULAR, 17, 0, 7, 7, 7, 1 << 30);
}

/* Resume: a run stopped after step s and resumed at s + 1 from its pivots gives the bits of the
 * uninterrupted run (host and strict executors, in core and spilling, invert and solve). */
static void x_resume_case(int mode, int64_t n, int64_t m, int64_t b, int64_t W, int64_t cap,
                          int64_t s) {
  double *A = make(GEN_RANDOM, n, n, 41), *B = m ? make(GEN_RHS, n, m, 42) : NULL;
  int64_t rc = m ? m : n, *perm0 = calloc((size_t)n, sizeof *perm0);
  int64_t *perm = calloc((size_t)n, sizeof *perm), *ipiv = calloc((size_t)n, sizeof *ipiv);
  ooc_status_t st0;
  int64_t info = 0, steps = 0;
  gjt_run_t r0 = {.mode = mode, .ops = ooc_ops_cpu(), .W = W, .chunk = b, .stop_after = -1};
  double *R0 = gjt_once(A, n, B, m, b, cap, &r0, perm0, &st0, &info, NULL, 0);
  CU_ASSERT_FATAL(R0 != NULL);
  gjt_t g;
  gjt_open(&g, A, n, B, m, b, cap);
  gjt_run_t r1 = r0;
  r1.stop_after = s;
  r1.ipiv_at_stop = ipiv;
  CU_ASSERT_EQUAL(gjt_run(&g, &r1, perm, &steps, &info), OOC_ERR_INTERRUPTED);
  CU_ASSERT_EQUAL(steps, s + 1);
  gjt_run_t r2 = r0;
  r2.start_step = s + 1;
  r2.ipiv0 = ipiv;
  CU_ASSERT_EQUAL(gjt_run(&g, &r2, perm, &steps, &info), OOC_OK);
  CU_ASSERT_EQUAL(steps, ooc_cdiv64(n, ts_stripe(n, b, W)) - (s + 1));
  double *R = tu_read_store(m ? g.sb : g.sa, n);
  CU_ASSERT(memcmp(R, R0, (size_t)(n * rc) * sizeof *R) == 0);
  if (!m) CU_ASSERT(memcmp(perm, perm0, (size_t)n * sizeof *perm) == 0);
  gjt_close(&g);
  free(R);
  free(R0);
  free(A);
  free(B);
  free(perm0);
  free(perm);
  free(ipiv);
}

static void t_x_resume(void) {
  x_resume_case(X_HOST, 200, 0, 16, 48, 1 << 30, 0);
  x_resume_case(X_HOST, 200, 0, 16, 48, 24 << 10, 2);
  x_resume_case(X_STRICT, 200, 0, 16, 48, 24 << 10, 1);
  x_resume_case(X_HOST, 200, 7, 16, 64, 24 << 10, 1);
  x_resume_case(X_STRICT, 200, 7, 16, 64, 1 << 30, 2);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"n = 1..3, ref", t_tiny_ref},          {"n = 1..3, cpu", t_tiny_cpu},
      {"n = 17, ref", t_17_ref},              {"n = 17, cpu", t_17_cpu},
      {"n = 100, ref", t_100_ref},            {"n = 100, cpu", t_100_cpu},
      {"n = 1000, cpu", t_1000_cpu},          {"n = 1000, ref (tile 64)", t_1000_ref},
      {"wide stripes, cond up to 0.1/eps: ratio < 30 and within 10x of LAPACK getri", t_wide},
      {"solve, 1 and 50 right-hand sides", t_solve},
      {"out of core: 4x the host budget", t_out_of_core},
      {"budget too small", t_budget_too_small},
      {"the checker fails wrong results and NaN", t_checker_fails_bad_results},
      {"the 1-norm estimate fails inverses random probes pass", t_estimator},
      {"the factor's probe check by rows and by strips", t_factor_check_rows},
      {"a failed check: no output; keep_failed keeps it as .rejected.h5", t_keep_failed},
      {"gj_run with no executor given: right in and out of core, the same bits run to run", t_direct},
      {"gj on each executor: shapes, none given, host and strict agree bit for bit", t_x_shapes},
      {"gj on each executor: larger, chunks, cond, ref", t_x_larger},
      {"gj on each executor: singular matrices, the same info and message", t_x_singular},
      {"gj on each executor: resumed runs give the uninterrupted bits", t_x_resume},
      {NULL, NULL}};
  return tu_run("gj", tests);
}
