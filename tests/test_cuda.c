/*
 * test_cuda.c: the CUDA backend. Skips itself (exit 77, with the reason) when the build has no
 * CUDA or the machine no usable GPU; on the GPU host it runs for real:
 * - the residual suite of test_gj on --device cuda: n in {1, 2, 3, 17, 100, 1000}, tiles
 *   {1, 7, 64, n}, every generator, float64 and float32 input; each case both in one step (the
 *   stripe as wide as the GPU allows) and in several (narrow stripes: the column pipeline);
 * - solve with 1 and 50 right-hand sides;
 * - wide stripes on ill-conditioned input (cond up to 0.1/eps): within 10x of LAPACK's getri;
 * - out of GPU core: a matrix >= 4x --gpu-mem through gj_run on the CUDA executor directly, so
 *   its peak can be checked against the budget; the result agrees with the CPU backend's; 1 to
 *   4 queues; the panel LU in chunks of every shape; a trace file is written and well-formed;
 * - the same through the public API with --gpu-mem, and a budget too small to start;
 * - getri's trtri (ocu_trtri.h): every variant alone at sizes around its leaves and splits.
 * `test_cuda quick` runs all but the n = 1000 sweep and the solves, `test_cuda n1000` and
 * `test_cuda solve` those two (quick + n1000 + solve = the full run, in parallel processes);
 * `test_cuda trtri` only the trtri cases; `test_cuda sanitize` small out-of-core cases (for compute-sanitizer), `test_cuda race K` one of
 * three such cases (K = 0, 1, 2: for racecheck, ~50x slower, one process each).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#ifndef OOC_HAVE_CUDA
int main(void) {
  printf("test_cuda: SKIPPED: this build has no CUDA backend (no CUDA toolkit found by CMake)\n");
  return 77;
}
#else

static const char *g_case = "";
static void on_segv(int sig) { /* say which case crashed, with a raw backtrace */
  void *bt[64];
  int k = backtrace(bt, 64);
  fprintf(stderr, "\nsignal %d in case %s\n", sig, g_case);
  backtrace_symbols_fd(bt, k, 2);
  _exit(128 + sig);
}

#include "gen/gen.h"
#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu.h"
#include "kernels/cuda/ocu_trtri.h"
#include "kernels/ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include "solvers/gj.h"
#include "tiling/tstore.h"

static double *make(gen_kind_t kind, int64_t rows, int64_t cols, uint64_t seed) {
  return tu_gen(kind, rows, cols, seed);
}

static void round_f32(double *A, int64_t len) {
  for (int64_t i = 0; i < len; i++) A[i] = (double)(float)A[i];
}

static int g_failures_logged;

static void invert_case(gen_kind_t kind, int64_t n, int64_t tile, int64_t stripe, int f32) {
  char name[160], in[1024], out[1100];
  snprintf(name, sizeof name, "C_%s_%lld_%lld_%lld_%d.h5", gen_kind_name(kind), (long long)n,
           (long long)tile, (long long)stripe, f32);
  snprintf(in, sizeof in, "%s", tu_path(name));
  snprintf(out, sizeof out, "%s.inv.h5", in);
  g_case = name;
  double *A = make(kind, n, n, 7 + (uint64_t)n);
  if (f32) round_f32(A, n * n);
  tu_write_matrix(in, "/A", n, n, A, f32 ? 1 : 2);

  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.stripe = stripe;
  o.method = OOC_METHOD_GJ; /* auto may pick chol, which runs on the CPU */
  o.device = OOC_DEVICE_CUDA;
  o.check = OOC_CHECK_FULL;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
  if (kind == GEN_SINGULAR) {
    CU_ASSERT_EQUAL(st, OOC_ERR_SINGULAR);
    CU_ASSERT_EQUAL(rep.info, n / 2 + 1);
    CU_ASSERT(!tu_file_exists(out));
  } else {
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK && g_failures_logged++ < 10)
      fprintf(stderr, "\n%s: %s\n", name, ooc_ctx_error(ctx));
    if (st == OOC_OK) {
      CU_ASSERT(strcmp(rep.backend, "cuda") == 0);
      CU_ASSERT(strstr(rep.warnings, "using GPU") != NULL);
      int64_t r, c;
      double *X = tu_read_matrix(out, &r, &c);
      CU_ASSERT_FATAL(X != NULL);
      double eps = f32 ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
      double ratio = tu_inverse_ratio(n, A, X, eps);
      CU_ASSERT(ratio < 30);
      CU_ASSERT(rep.residual < 30);
      if (!(ratio < 30) && g_failures_logged++ < 10)
        fprintf(stderr, "\n%s: ratio %g (library %g), stripe %lld\n", name, ratio, rep.residual,
                (long long)rep.stripe);
      free(X);
    }
  }
  tu_ctx_done(ctx);
  remove(in);
  remove(out);
  free(A);
}

/* As test_gj's wide-stripe case: ill-conditioned input (cond 1e8, 1e12, 0.1/eps) in a wide
 * first step and a narrow last one (the tile does not divide n), and in narrow steps: ratio
 * < 30 and within 10x of LAPACK's own getri ratio on the same matrix (issue 19: the update with
 * the explicit inverse of the pivot block gave kappa-size ratios, 489 at n = 3000, cond 1e8). */
static void t_wide(void) {
  const double conds[] = {1e8, 1e12, 0.1 / DBL_EPSILON};
  const int64_t cfg[][2] = {{128, 768}, {100, 700}, {128, 128}}; /* tile, stripe; n = 1000 */
  int64_t n = 1000;
  double worst = 0, eps = DBL_EPSILON / 2;
  char in[1024], out[1100];
  snprintf(in, sizeof in, "%s", tu_path("W_A.h5"));
  snprintf(out, sizeof out, "%s.inv.h5", in);
  for (int c = 0; c < 3; c++) {
    double *A = tu_gen_matrix(GEN_COND, n, conds[c], 0, 5);
    tu_write_matrix(in, "/A", n, n, A, 2);
    double lapack = tu_lapack_inverse_ratio(n, A, eps);
    CU_ASSERT(lapack < 30);
    for (int k = 0; k < 3; k++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o;
      ooc_opts_default(&o);
      o.tile = cfg[k][0];
      o.stripe = cfg[k][1];
      o.method = OOC_METHOD_GJ;
      o.device = OOC_DEVICE_CUDA;
      o.check = OOC_CHECK_FULL;
      o.force = 1;
      ooc_report_t rep;
      ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
      CU_ASSERT_EQUAL(st, OOC_OK);
      if (st != OOC_OK) fprintf(stderr, "\nwide cuda: %s\n", ooc_ctx_error(ctx));
      if (st == OOC_OK) {
        int64_t r, cc;
        double *X = tu_read_matrix(out, &r, &cc);
        CU_ASSERT_FATAL(X != NULL);
        double ratio = tu_inverse_ratio(n, A, X, eps);
        CU_ASSERT(strcmp(rep.backend, "cuda") == 0);
        CU_ASSERT(rep.steps >= 2);
        CU_ASSERT(ratio < 30);
        CU_ASSERT(ratio <= 10 * lapack);
        if (ratio / lapack > worst) worst = ratio / lapack;
        if (!(ratio < 30 && ratio <= 10 * lapack))
          fprintf(stderr, "\nwide cuda: cond %g tile %lld stripe %lld (%lld steps): ratio %g, "
                  "LAPACK getri %g\n", conds[c], (long long)o.tile, (long long)o.stripe,
                  (long long)rep.steps, ratio, lapack);
        free(X);
      }
      tu_ctx_done(ctx);
      remove(out);
    }
    remove(in);
    free(A);
  }
  printf("[9 runs, worst ratio / LAPACK getri's %.3g] ", worst);
}

static const gen_kind_t KINDS[] = {GEN_RANDOM, GEN_DIAGDOM, GEN_MATERN, GEN_COND, GEN_SINGULAR};
static const int64_t TILES[] = {1, 7, 64, 0}; /* 0 = n */

static void sweep(int64_t n) {
  for (int f32 = 0; f32 < 2; f32++)
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
      for (size_t t = 0; t < 4; t++) {
        int64_t tile = TILES[t] ? TILES[t] : n;
        if (TILES[t] && tile >= n && t > 0 && TILES[t - 1] >= n) continue;
        invert_case(KINDS[k], n, tile, 0, f32); /* one step when the GPU holds the panel */
        /* several steps: stripes of about n/4 (at least a tile), through the column pipeline */
        int64_t narrow = ooc_max64(tile, n / 4 / tile * tile);
        if (narrow < n) invert_case(KINDS[k], n, tile, narrow, f32);
      }
}

static void t_tiny(void) {
  for (int64_t n = 1; n <= 3; n++) sweep(n);
}
static void t_17(void) { sweep(17); }
static void t_100(void) { sweep(100); }
static void t_1000(void) { sweep(1000); }

static void solve_case(gen_kind_t kind, int64_t n, int64_t m, int64_t tile, int64_t stripe) {
  char in[1024], rhs[1024], out[1024];
  snprintf(in, sizeof in, "%s", tu_path("CS_A.h5"));
  snprintf(rhs, sizeof rhs, "%s", tu_path("CS_B.h5"));
  snprintf(out, sizeof out, "%s", tu_path("CS_X.h5"));
  double *A = make(kind, n, n, 11), *B = make(GEN_RHS, n, m, 12);
  tu_write_matrix(in, "/A", n, n, A, 2);
  tu_write_matrix(rhs, "/B", n, m, B, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.stripe = stripe;
  o.method = OOC_METHOD_GJ;
  o.device = OOC_DEVICE_CUDA;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_solve(ctx, in, rhs, out, &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_OK);
  if (st != OOC_OK) fprintf(stderr, "\nsolve n=%lld: %s\n", (long long)n, ooc_ctx_error(ctx));
  if (st == OOC_OK) {
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    CU_ASSERT_FATAL(X != NULL);
    double ratio = tu_solve_ratio(n, m, A, X, B, DBL_EPSILON / 2);
    CU_ASSERT(ratio < 16);
    if (!(ratio < 16))
      fprintf(stderr, "\nsolve n=%lld tile=%lld: ratio %g\n", (long long)n, (long long)tile, ratio);
    free(X);
  }
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

static void t_solve(void) {
  int64_t ns[] = {1, 2, 3, 17, 100, 1000};
  for (size_t i = 0; i < 6; i++)
    for (size_t t = 1; t < 4; t++) {
      int64_t n = ns[i], tile = TILES[t] ? TILES[t] : n;
      solve_case(GEN_RANDOM, n, 1, tile, 0);
      solve_case(GEN_MATERN, n, 50, tile, 0);
      solve_case(GEN_RANDOM, n, 50, tile, ooc_max64(tile, n / 3));
    }
}

/* ---- out of GPU core, through gj_run and the executor (so the pool can be inspected) ------- */

typedef struct {
  const double *M;
  int64_t n;
} memsrc_t;

static ooc_status_t mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, s->M + r0 + (c0 + j) * s->n, (size_t)nr * sizeof(double));
  return OOC_OK;
}

/* Invert A (n x n, in memory) with gj_run on the given executor (NULL: a host executor over the
 * cpu ops); X gets A^-1. chunk: the panel LU's chunk width (0: gj_x's default). */
static ooc_status_t run_gj(ooc_ctx_t *ctx, const double *A, int64_t n, int64_t b, int64_t W,
                           ooc_exec_t *ex, int64_t chunk, double *X, int64_t *steps,
                           int64_t *info_out) {
  memsrc_t ms = {A, n};
  ooc_source_t src = {&ms, mem_read, NULL, NULL};
  double *colnorm = calloc((size_t)n, sizeof *colnorm);
  int64_t *perm = malloc((size_t)n * sizeof *perm), bi, bj;
  ooc_ops_cpu()->colabs(n, n, A, n, colnorm, &bi, &bj);
  tcache_t *cache = NULL;
  tstore_t *ts = NULL;
  ooc_status_t st = tcache_create(ctx, 2 * 8 * n * n + (1 << 20), &cache);
  if (st == OOC_OK) st = tstore_create(ctx, cache, n, n, b, &src, NULL, &ts);
  gj_args_t ga = {.A = ts, .stripe = W, .ops = ooc_ops_cpu(), .colnorm = colnorm, .perm = perm,
                  .x = ex, .chunk = chunk};
  gj_stats_t gs = {0};
  int64_t info = 0;
  if (st == OOC_OK) st = gj_run(ctx, &ga, &gs, &info);
  *steps = gs.steps;
  if (info_out) *info_out = info;
  if (st == OOC_OK) {
    part_t p = part_make(n, b);
    double *S = malloc((size_t)(n * n) * sizeof *S);
    for (int64_t tj = 0; tj < p.count; tj++)
      for (int64_t ti = 0; ti < p.count; ti++)
        ts_read(ts, ti, tj, S + part_start(p, ti) + part_start(p, tj) * n, n);
    for (int64_t c = 0; c < n; c++) memcpy(X + c * n, S + perm[c] * n, (size_t)n * sizeof *X);
    free(S);
  }
  tstore_destroy(ts);
  tcache_destroy(cache);
  free(colnorm);
  free(perm);
  return st;
}

/* The CUDA executor with `queues` streams (gj.h: copy in, compute..., copy out), the stripe the
 * planner would give it (gj_x_device_stripe, capped at Wreq when > 0). */
static ooc_exec_t *cuda_exec(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t gpu_mem, int queues,
                             const char *trace, int64_t Wreq, int64_t *W) {
  ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = queues, .trace = trace, .timing = 1};
  ooc_exec_t *ex = NULL;
  ooc_status_t st = ex_cuda_create(ctx, &xc, &ex);
  if (st != OOC_OK) fprintf(stderr, "\nexec: %s\n", ooc_ctx_error(ctx));
  CU_ASSERT_FATAL(st == OOC_OK);
  *W = gj_x_device_stripe(ex, n, b, n);
  CU_ASSERT_FATAL(*W >= ooc_min64(b, n));
  if (Wreq > 0) *W = ts_stripe(n, b, ooc_min64(*W, Wreq));
  return ex;
}

static void direct_case(int64_t n, int64_t b, int64_t gpu_mem, int queues, const char *trace) {
  double *A = make(GEN_RANDOM, n, n, 5);
  double *X = malloc((size_t)(n * n) * sizeof *X), *Xc = malloc((size_t)(n * n) * sizeof *Xc);
  CU_ASSERT(8 * n * n >= 2 * gpu_mem); /* out of core: W < n asserted below */
  ooc_ctx_t *ctx = tu_ctx();
  int64_t W = 0, steps = 0, steps_c = 0;
  ooc_exec_t *ex = cuda_exec(ctx, n, b, gpu_mem, queues, trace, 0, &W);
  CU_ASSERT(W < n && W >= b && W % b == 0);
  double t0 = ooc_now();
  ooc_status_t st = run_gj(ctx, A, n, b, W, ex, 0, X, &steps, NULL);
  double t1 = ooc_now();
  if (st != OOC_OK) fprintf(stderr, "\ngj (cuda): %s\n", ooc_ctx_error(ctx));
  CU_ASSERT(st == OOC_OK);
  ex_stats_t es = ex->stats;
  int64_t budget = ex->budget;
  CU_ASSERT(es.dev_peak <= budget && budget < gpu_mem); /* the pool holds the rest: <= gpu_mem */
  CU_ASSERT(es.dev_peak > 0 && es.bytes_put > 0 && es.bytes_get > 0);
  CU_ASSERT(steps > 1);
  ex_destroy(ex);
  CU_ASSERT(run_gj(ctx, A, n, b, W, NULL, 0, Xc, &steps_c, NULL) == OOC_OK);
  double eps = DBL_EPSILON / 2, r = tu_inverse_ratio(n, A, X, eps), rc = tu_inverse_ratio(n, A, Xc, eps);
  double dn = 0, xn = 0;
  for (int64_t i = 0; i < n * n; i++) {
    dn += fabs(X[i] - Xc[i]);
    xn += fabs(Xc[i]);
  }
  CU_ASSERT(r < 30);
  CU_ASSERT(rc < 30);
  CU_ASSERT(dn / xn < 1e-8);
  fprintf(stderr,
          "[n=%lld b=%lld gpu-mem=%lld queues=%d: W=%lld, %lld steps, ex_alloc peak %lld of %lld, "
          "ratio %.3g (cpu %.3g), |X-Xcpu|/|Xcpu| = %.2g, %.3f s, put %.1f MB, get %.1f MB] ",
          (long long)n, (long long)b, (long long)gpu_mem, queues, (long long)W, (long long)steps,
          (long long)es.dev_peak, (long long)budget, r, rc, dn / xn, t1 - t0, es.bytes_put * 1e-6,
          es.bytes_get * 1e-6);
  tu_ctx_done(ctx);
  free(A);
  free(X);
  free(Xc);
}

static void t_out_of_gpu_core(void) {
  direct_case(2000, 32, 8000000, 3, NULL);  /* 32 MB matrix, 8 MB of GPU: 4x */
  direct_case(1500, 50, 4 << 20, 1, NULL);  /* tile does not divide n; one queue */
  direct_case(1500, 50, 4 << 20, 2, NULL);
  direct_case(2000, 32, 8000000, 4, NULL);  /* two compute queues */
}

/* The panel LU in chunks (xpanel.h; many chunks, panels arriving in many tile columns, chunks
 * not dividing the panel): the same result as the CPU backend (same pivots: partial pivoting),
 * a residual ratio < 30, the CPU's singular column. W = 0: in core. */
static void chunk_case(gen_kind_t kind, int64_t n, int64_t b, int64_t Wreq, int64_t chunk,
                       int queues) {
  double *A = make(kind, n, n, 21 + (uint64_t)n);
  double *X = malloc((size_t)(n * n) * sizeof *X), *Xc = malloc((size_t)(n * n) * sizeof *Xc);
  ooc_ctx_t *ctx = tu_ctx();
  int64_t W = 0, steps = 0, steps_c = 0, info = 0, info_c = 0;
  ooc_exec_t *ex = cuda_exec(ctx, n, b, 0, queues, NULL, Wreq, &W);
  ooc_status_t st = run_gj(ctx, A, n, b, W, ex, chunk, X, &steps, &info);
  ex_destroy(ex);
  ooc_status_t stc = run_gj(ctx, A, n, b, W, NULL, 0, Xc, &steps_c, &info_c);
  CU_ASSERT_EQUAL(st, stc);
  CU_ASSERT_EQUAL(info, info_c);
  double r = -1, dn = 0, xn = 0;
  if (kind == GEN_SINGULAR) {
    CU_ASSERT_EQUAL(st, OOC_ERR_SINGULAR);
    CU_ASSERT_EQUAL(info, n / 2 + 1);
  } else {
    if (st != OOC_OK) fprintf(stderr, "\ngj (cuda): %s\n", ooc_ctx_error(ctx));
    CU_ASSERT_FATAL(st == OOC_OK && stc == OOC_OK);
    r = tu_inverse_ratio(n, A, X, DBL_EPSILON / 2);
    for (int64_t i = 0; i < n * n; i++) {
      dn += fabs(X[i] - Xc[i]);
      xn += fabs(Xc[i]);
    }
    CU_ASSERT(r < 30);
    if (kind != GEN_COND) CU_ASSERT(dn / xn < 1e-8);
  }
  fprintf(stderr, "[%s n=%lld b=%lld W=%lld chunk=%lld queues=%d: %lld steps, info %lld, ratio "
          "%.3g, |X-Xcpu|/|Xcpu| = %.2g] ", gen_kind_name(kind), (long long)n, (long long)b,
          (long long)W, (long long)chunk, queues, (long long)steps, (long long)info, r,
          xn > 0 ? dn / xn : 0);
  tu_ctx_done(ctx);
  free(A);
  free(X);
  free(Xc);
}

static void t_chunks(void) {
  chunk_case(GEN_RANDOM, 1024, 64, 0, 64, 3);     /* in core: 16 chunks of one tile */
  chunk_case(GEN_RANDOM, 1000, 64, 0, 128, 3);    /* 960 + 40: chunks of two tiles, then less */
  chunk_case(GEN_RANDOM, 1000, 64, 320, 64, 3);   /* 4 steps, the last 40 wide */
  chunk_case(GEN_RANDOM, 777, 50, 0, 150, 3);     /* nothing divides anything */
  chunk_case(GEN_RANDOM, 600, 7, 0, 7, 3);        /* one-tile chunks of 7 columns */
  chunk_case(GEN_DIAGDOM, 500, 20, 0, 40, 3);     /* few interchanges */
  chunk_case(GEN_MATERN, 500, 20, 200, 40, 3);
  chunk_case(GEN_COND, 500, 32, 0, 64, 3);
  chunk_case(GEN_SINGULAR, 300, 16, 0, 32, 3);    /* zero column inside a chunk */
  chunk_case(GEN_SINGULAR, 300, 16, 96, 32, 3);   /* ... in a later step */
  chunk_case(GEN_RANDOM, 900, 30, 300, 60, 1);    /* one queue */
  chunk_case(GEN_RANDOM, 900, 30, 300, 60, 4);    /* two compute queues */
  chunk_case(GEN_RANDOM, 1000, 64, 0, 0, 3);      /* the default chunk */
  chunk_case(GEN_RANDOM, 1000, 64, 250, 1000, 3); /* the whole stripe in one getrf */
}

/* ocu_trtri alone, every variant: sizes around the leaf and split (1, a leaf, one past it, none
 * dividing anything), small leaves (deep recursion), leaves not multiples of the split, and the
 * workspace absent, small (several chunks per trmm) and ample. inv(U) of a well-conditioned
 * triangle (D + N, ||D^-1 N||_inf < 1) against U X = I, and the strictly lower part and the
 * rows below the block (ld > w) untouched. */
static void trtri_one(cublasHandle_t h, cusolverDnHandle_t sol, const char *spec, int64_t w,
                      int wsmode) {
  int64_t ld = w + 3;
  ocu_trtri_cfg_t cf;
  CU_ASSERT_FATAL(ocu_trtri_parse(spec, &cf) == 0);
  double *U = malloc((size_t)(8 * ld * w)), *X = malloc((size_t)(8 * ld * w));
  double *Uu = calloc((size_t)(w * w), 8), *Xu = calloc((size_t)(w * w), 8), *P = malloc((size_t)(8 * w * w));
  uint64_t s = 88172645463325252ull + (uint64_t)w;
  for (int64_t j = 0; j < w; j++)
    for (int64_t i = 0; i < ld; i++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      double r = (double)(s >> 11) * (1.0 / 9007199254740992.0);
      U[i + j * ld] = i < j ? (2 * r - 1) / (double)w : i == j ? 1 + r : -7.25;
      if (i <= j) Uu[i + j * w] = U[i + j * ld];
    }
  double *dU, *work = NULL;
  int *dinfo;
  int64_t welems = wsmode == 0 ? 0 : wsmode == 1 ? 70 * w : w * w;
  size_t dws = 0, hws = 0;
  CU_ASSERT_FATAL(cusolverDnXtrtri_bufferSize(sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, w,
                                              CUDA_R_64F, NULL, ld, &dws, &hws) == 0);
  void *dsol = NULL, *hsol = hws ? malloc(hws) : NULL;
  CU_ASSERT_FATAL(cudaMalloc((void **)&dU, (size_t)(8 * ld * w)) == cudaSuccess);
  CU_ASSERT_FATAL(cudaMalloc((void **)&dinfo, sizeof(int)) == cudaSuccess);
  CU_ASSERT_FATAL(cudaMemset(dinfo, 0, sizeof(int)) == cudaSuccess); /* read back below */
  CU_ASSERT_FATAL(cudaMalloc(&dsol, dws ? dws : 1) == cudaSuccess);
  if (welems) CU_ASSERT_FATAL(cudaMalloc((void **)&work, (size_t)(8 * welems)) == cudaSuccess);
  CU_ASSERT_FATAL(cudaMemcpy(dU, U, (size_t)(8 * ld * w), cudaMemcpyHostToDevice) == cudaSuccess);
  /* from pageable memory cudaMemcpy may return before its DMA lands, and the non-blocking stream
   * of h does not wait for the legacy stream: without this, trtri read a half-copied U when the
   * GPU was shared (two wrong results in the release script's side-by-side test runs) */
  CU_ASSERT_FATAL(cudaDeviceSynchronize() == cudaSuccess);
  ocu_trtri_ws_t ws = {work, welems, dsol, dws, hsol, hws, dinfo};
  int code = 0, info = -1;
  const char *err = ocu_trtri(h, sol, dU, w, ld, &cf, &ws, &code);
  if (err) fprintf(stderr, "\ntrtri %s w=%lld: %s (%d)\n", spec, (long long)w, err, code);
  CU_ASSERT_FATAL(err == NULL);
  CU_ASSERT_FATAL(cudaDeviceSynchronize() == cudaSuccess);
  CU_ASSERT(cudaMemcpy(X, dU, (size_t)(8 * ld * w), cudaMemcpyDeviceToHost) == cudaSuccess);
  CU_ASSERT(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost) == cudaSuccess);
  int64_t changed = 0;
  for (int64_t j = 0; j < w; j++)
    for (int64_t i = 0; i < ld; i++) {
      if (i > j && X[i + j * ld] != -7.25) changed++;
      if (i <= j) Xu[i + j * w] = X[i + j * ld];
    }
  ooc_ops_cpu()->gemm('N', 'N', w, w, w, 1.0, Uu, w, Xu, w, 0.0, P, w);
  double e = 0;
  for (int64_t j = 0; j < w; j++)
    for (int64_t i = 0; i < w; i++) e = fmax(e, fabs(P[i + j * w] - (i == j)));
  CU_ASSERT(changed == 0);
  CU_ASSERT(info == 0 || cf.variant != OCU_TRTRI_CUSOLVER);
  CU_ASSERT(e < 1e-13);
  if (changed || e >= 1e-13 || info != 0)
    fprintf(stderr, "\n[trtri %s w=%lld ws=%d: max|UX - I| = %.3g, lower changed %lld, info %d] ",
            spec, (long long)w, wsmode, e, (long long)changed, info);
  cudaFree(dU);
  cudaFree(dinfo);
  cudaFree(dsol);
  cudaFree(work);
  free(hsol);
  free(U);
  free(X);
  free(Uu);
  free(Xu);
  free(P);
}

static void t_trtri(void) {
  static const char *specs[] = {"rec", "ws", "gemm", "trmm2", "cusolver", "rec:64:0:32",
                                "ws:64:0:32", "gemm:64:128:32", "gemm:100:300:64",
                                "trmm2:37:0:16", "gemm:512:512:256", NULL};
  static const int64_t sizes[] = {1, 2, 100, 511, 512, 513, 1000, 1337, 2500};
  cudaStream_t st;
  cublasHandle_t h;
  cusolverDnHandle_t sol;
  CU_ASSERT_FATAL(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  CU_ASSERT_FATAL(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  CU_ASSERT_FATAL(cublasSetStream(h, st) == CUBLAS_STATUS_SUCCESS);
  CU_ASSERT_FATAL(cusolverDnCreate(&sol) == CUSOLVER_STATUS_SUCCESS);
  CU_ASSERT_FATAL(cusolverDnSetStream(sol, st) == CUSOLVER_STATUS_SUCCESS);
  int cases = 0;
  for (int k = 0; specs[k]; k++)
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      for (int m = 0; m < 3; m++) {
        if (sizes[i] > 1337 && m != 1) continue; /* the largest with several chunks only */
        trtri_one(h, sol, specs[k], sizes[i], m);
        cases++;
      }
  fprintf(stderr, "[%d trtri cases] ", cases);
  cusolverDnDestroy(sol);
  cublasDestroy(h);
  cudaStreamDestroy(st);
}

static void t_sanitize(void) {
  direct_case(1400, 32, 8 * 1400 * 1400 / 4, 3, NULL);
  direct_case(1400, 32, 8 * 1400 * 1400 / 4, 4, NULL);
  chunk_case(GEN_RANDOM, 700, 50, 0, 100, 3);
  chunk_case(GEN_RANDOM, 700, 50, 200, 50, 4);
}

/* The same paths, one case per process, for racecheck (it serialises every shared-memory
 * access: the sanitize cases take minutes each under it, so the three run side by side as
 * `test_cuda race 0|1|2`; race 1, 21 steps on four queues, took 390 s alone on an H100):
 * several out-of-core steps on three and on four queues, and the panel LU in one-tile chunks. */
static int g_race = 0;
static void t_race(void) {
  switch (g_race) {
  /* half the matrix: ~10 steps (a quarter gave ~30, and racecheck ran past 575 s on an H100) */
  case 0: direct_case(1000, 16, 8 * 1000 * 1000 / 2, 3, NULL); break;
  /* four queues keep four 256 KiB cuBLAS workspaces: a quarter of the matrix leaves no stripe */
  case 1: direct_case(1000, 16, 8 * 1000 * 1000 / 3, 4, NULL); break;
  default: chunk_case(GEN_RANDOM, 300, 20, 100, 20, 4); break;
  }
}

static void t_trace(void) {
  const char *tr = tu_path("trace.json");
  direct_case(1500, 24, 4 << 20, 3, tr);
  FILE *f = fopen(tr, "r");
  CU_ASSERT_FATAL(f != NULL);
  static char buf[1 << 16];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = 0;
  fclose(f);
  CU_ASSERT(strstr(buf, "\"traceEvents\"") != NULL);
  CU_ASSERT(strstr(buf, "\"ph\":\"X\"") != NULL);
  CU_ASSERT(strstr(buf, "\"name\":\"gemm\"") != NULL);
  CU_ASSERT(strstr(buf, "\"name\":\"put\"") != NULL);
  CU_ASSERT(strstr(buf, "\"name\":\"getrf\"") != NULL);
}

/* Through the public API: a matrix 4x --gpu-mem, right, and the notice says so. */
static void t_api_out_of_gpu_core(void) {
  int64_t n = 1800;
  const char *in = tu_path("G_A.h5"), *out = tu_path("G_X.h5");
  double *A = make(GEN_MATERN, n, n, 9);
  tu_write_matrix(in, "/A", n, n, A, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = 40;
  o.method = OOC_METHOD_GJ;
  o.device = OOC_DEVICE_CUDA;
  o.gpu_mem = 8 * n * n / 4;
  o.check = OOC_CHECK_FULL;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
  if (st != OOC_OK) fprintf(stderr, "\napi: %s\n", ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  CU_ASSERT(rep.steps > 1);
  CU_ASSERT(rep.residual < 30);
  CU_ASSERT(strstr(rep.warnings, "GPU peak") != NULL);
  fprintf(stderr, "[stripe %lld, %lld steps, residual %.3g; %s] ", (long long)rep.stripe,
          (long long)rep.steps, rep.residual, rep.warnings);
  int64_t r, c;
  double *X = tu_read_matrix(out, &r, &c);
  CU_ASSERT_FATAL(X != NULL);
  CU_ASSERT(tu_inverse_ratio(n, A, X, DBL_EPSILON / 2) < 30);
  free(X);
  free(A);
  tu_ctx_done(ctx);
}

static void t_budget_too_small(void) {
  const char *in = tu_path("GT_A.h5");
  double *A = make(GEN_RANDOM, 500, 500, 5);
  tu_write_matrix(in, "/A", 500, 500, A, 2);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = 256;
  o.method = OOC_METHOD_GJ;
  o.device = OOC_DEVICE_CUDA;
  o.gpu_mem = 1 << 20;
  ooc_status_t st = ooc_invert(ctx, in, tu_path("GT_X.h5"), &o, NULL);
  CU_ASSERT_EQUAL(st, OOC_ERR_BUDGET);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "--gpu-mem") != NULL);
  CU_ASSERT(!tu_file_exists(tu_path("GT_X.h5")));
  tu_ctx_done(ctx);
  free(A);
}

int main(int argc, char **argv) {
  char why[256];
  signal(SIGSEGV, on_segv);
  if (!ocu_probe(why, sizeof why)) {
    printf("test_cuda: SKIPPED: no usable GPU (%s)\n", why);
    return 77;
  }
  printf("test_cuda: on %s\n", why);
  if (argc > 1 && !strcmp(argv[1], "sanitize")) { /* one small out-of-core case, for compute-sanitizer */
    static const tu_test_t small[] = {{"small out-of-GPU-core case", t_sanitize}, {NULL, NULL}};
    return tu_run("cuda-sanitize", small);
  }
  if (argc > 1 && !strcmp(argv[1], "race")) { /* one case per process, for racecheck */
    g_race = argc > 2 ? atoi(argv[2]) : 0;
    static const tu_test_t small[] = {{"tiny out-of-GPU-core cases", t_race}, {NULL, NULL}};
    return tu_run("cuda-race", small);
  }
  if (argc > 1 && !strcmp(argv[1], "trtri")) { /* getri's trtri variants only */
    static const tu_test_t t[] = {{"trtri variants alone: U X = I, lower part untouched", t_trtri},
                                  {NULL, NULL}};
    return tu_run("cuda-trtri", t);
  }
  if (argc > 1 && !strcmp(argv[1], "n1000")) { /* the rest of the full run, in two processes */
    static const tu_test_t t[] = {{"n = 1000, cuda", t_1000}, {NULL, NULL}};
    return tu_run("cuda-n1000", t);
  }
  if (argc > 1 && !strcmp(argv[1], "solve")) {
    static const tu_test_t t[] = {{"solve, 1 and 50 right-hand sides, cuda", t_solve}, {NULL, NULL}};
    return tu_run("cuda-solve", t);
  }
  if (argc > 1 && !strcmp(argv[1], "quick")) { /* all but the n = 1000 sweep (device time) */
    static const tu_test_t quick[] = {
        {"n = 1..3, cuda", t_tiny},
        {"n = 17, cuda", t_17},
        {"n = 100, cuda", t_100},
        {"wide stripes, cond up to 0.1/eps: within 10x of LAPACK getri, cuda", t_wide},
        {"out of GPU core: 4x --gpu-mem, pool peak <= budget, agrees with cpu", t_out_of_gpu_core},
        {"panel LU in chunks, agrees with cpu", t_chunks},
        {"trtri variants alone: U X = I, lower part untouched", t_trtri},
        {"trace file", t_trace},
        {"out of GPU core through the API", t_api_out_of_gpu_core},
        {"--gpu-mem too small", t_budget_too_small},
        {NULL, NULL}};
    return tu_run("cuda-quick", quick);
  }
  static const tu_test_t tests[] = {
      {"n = 1..3, cuda", t_tiny},
      {"n = 17, cuda", t_17},
      {"n = 100, cuda", t_100},
      {"n = 1000, cuda", t_1000},
      {"wide stripes, cond up to 0.1/eps: within 10x of LAPACK getri, cuda", t_wide},
      {"solve, 1 and 50 right-hand sides, cuda", t_solve},
      {"out of GPU core: 4x --gpu-mem, pool peak <= budget, agrees with cpu", t_out_of_gpu_core},
      {"panel LU in chunks, agrees with cpu", t_chunks},
      {"trtri variants alone: U X = I, lower part untouched", t_trtri},
      {"trace file", t_trace},
      {"out of GPU core through the API", t_api_out_of_gpu_core},
      {"--gpu-mem too small", t_budget_too_small},
      {NULL, NULL}};
  return tu_run("cuda", tests);
}
#endif
