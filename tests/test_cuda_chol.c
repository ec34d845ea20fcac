/*
 * test_cuda_chol.c: chol.c's schedule on the CUDA executor (exec_cuda.h, planned by
 * chol.h's device plan) under chol_run and through the public API. Skips itself (exit 77, with the reason) when the build has no CUDA or
 * the machine no usable GPU. On the GPU host:
 * - inverse: LAPACK's inverse ratio < 30 for Matern covariances (lengths 0.05, 0.3, 1; nuggets
 *   1e-6..1e-1) and cond = 1e10 SPD, n in {1, 2, 3, 100, 1000}, tiles 7, 64 and n (7 and 64 do
 *   not divide 100 or 1000), in GPU core (one step: the in-device sweep, with its default block
 *   and with small blocks so it runs many inner steps) and out of GPU core (stripes of 1 and 3
 *   tiles: the ring of slots); exactly symmetric; logdet against LAPACK (n <= 200) and against
 *   the CPU backend (n = 1000); agrees with the CPU backend's inverse;
 * - factor: ||A - L L^T||_1 / (n ||A||_1 eps) < 30, zero upper, logdet against LAPACK;
 * - solve (factor and substitutions on the GPU): HPL ratio < 16, 1 and 50 RHS;
 * - not SPD: OOC_ERR_NOT_SPD with LAPACK's (= the CPU backend's) leading minor for factor,
 *   invert and solve, in one step and in several, with the failing minor in a later inner block;
 *   NaN in the strict upper triangle is never read;
 * - out of GPU core with a budget: a matrix >= 4x --gpu-mem (chol_device_stripe), the pool's
 *   peak <= the budget, agrees with the CPU backend; a budget too small fails with OOC_ERR_BUDGET;
 * - the API on --device cuda: invert (method chol and auto), logdet and solve; not SPD names the
 *   CPU's minor; auto falls back to gj; the report says cuda and chol.
 * `test_cuda_chol sanitize` runs one small case of each kind (for compute-sanitizer).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef OOC_HAVE_CUDA
int main(void) {
  printf("test_cuda_chol: SKIPPED: this build has no CUDA backend (no CUDA toolkit found by CMake)\n");
  return 77;
}
#else

#include <lapacke.h>

#include "gen/gen.h"
#include "io/scratch.h"
#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "tiling/tstore.h"

#define EPS (DBL_EPSILON / 2)

static int g_logged;
#define LOG(...)                                                                                   \
  do {                                                                                             \
    if (g_logged++ < 40) fprintf(stderr, __VA_ARGS__);                                             \
  } while (0)

static double *gen_matrix(gen_kind_t kind, int64_t rows, int64_t cols, double length,
                          double nugget, double cond, uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, kind, rows);
  s.cols = cols;
  s.seed = seed;
  if (length > 0) s.length = length;
  if (nugget > 0) s.nugget = nugget;
  if (cond > 0) s.cond = cond;
  s.symmetric = 1;
  return tu_gen_spec(&s);
}

/* ---- stores over memory ------------------------------------------------------------------- */

typedef struct {
  ooc_ctx_t *ctx;
  const char *tag;
  scratch_t *s;
} spill_t;
static ooc_status_t sp_open(void *self, size_t slot, void **h) {
  spill_t *sl = self;
  OOC_TRY(scratch_open(sl->ctx, tu_tmpdir(), sl->tag, slot, 0, &sl->s));
  *h = sl->s;
  return OOC_OK;
}
static ooc_status_t sp_put(void *h, int64_t id, const void *d, size_t bytes) {
  return scratch_put(h, id, d, bytes);
}
static ooc_status_t sp_get(void *h, int64_t id, void *d, size_t colb, size_t ncols,
                           size_t stride) {
  return scratch_get_cols(h, id, d, colb, ncols, stride);
}

typedef struct {
  ooc_status_t st;
  int64_t info, steps, W, dev_peak, dev_budget;
  double logdet;
  double *R; /* the store after the run: A's result (n x n) or X (n x m); NULL on failure */
} outcome_t;

/* One chol_run of job on A [B] with tile b and stripe W (W >= n: one step). gpu: on a CUDA
 * executor with block nb (0 = default) and device budget gpu_mem (0 = default); else cpu ops. */
static outcome_t run(int gpu, int job, const double *A, int64_t n, const double *B, int64_t m,
                     int64_t b, int64_t W, int64_t nb, int64_t gpu_mem) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, tu_mem_read, NULL, NULL}, srcb = {&mb, tu_mem_read, NULL, NULL};
  spill_t sla = {ctx, "gcA", NULL}, slb = {ctx, "gcB", NULL};
  ooc_spill_ops_t spa = {&sla, sp_open, sp_put, sp_get, 1}, spb = {&slb, sp_open, sp_put, sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 40, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &srca, &spa, &sa) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &srcb, &spb, &sb) == OOC_OK);
  int64_t stripe = W >= n ? (n + b - 1) / b * b : W;
  ooc_exec_t *ex = NULL;
  ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = 3, .timing = 1}; /* as plan_exec_config */
  if (gpu) {
    ooc_status_t st = ex_cuda_create(ctx, &xc, &ex);
    if (st != OOC_OK) fprintf(stderr, "\n  ex_cuda_create: %s\n", ooc_ctx_error(ctx));
    CU_ASSERT_FATAL(st == OOC_OK);
  }
  chol_args_t args = {.A = sa, .B = sb, .stripe = stripe, .ops = ooc_ops_cpu(), .job = job,
                      .exec = ex, .nb = nb};
  chol_stats_t stats;
  int64_t staging0 = ex ? ex->staging_bytes : 0; /* the executor's own (its output rings) */
  r.st = chol_run(ctx, &args, &stats, &r.info, &r.logdet);
  r.steps = stats.steps;
  if (r.st != OOC_OK && r.st != OOC_ERR_NOT_SPD)
    fprintf(stderr, "\n  chol_run: %s\n", ooc_ctx_error(ctx));
  if (r.st == OOC_ERR_NOT_SPD)
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "matrix is not positive definite: leading minor of order") != NULL);
  if (ex) { /* the pool's bytes: the executor's own part and what chol_run allocated */
    int64_t own = ex_cuda_overhead(&xc);
    r.W = W >= n ? n : W;
    r.dev_peak = ex->stats.dev_peak + own;
    r.dev_budget = ex->budget + own;
    CU_ASSERT(ex->stats.dev_peak <= ex->budget);
    CU_ASSERT(ex->dev_bytes == 0 && ex->staging_bytes == staging0); /* chol_run freed its own */
    CU_ASSERT(ex_finish(ex) == OOC_OK);
    ex_destroy(ex);
  }
  if (r.st == OOC_OK) {
    tstore_t *out = B ? sb : sa;
    r.R = tu_read_store(out, n);
  }
  tstore_destroy(sa);
  tstore_destroy(sb);
  tcache_destroy(cache);
  scratch_close(sla.s);
  scratch_close(slb.s);
  tu_ctx_done(ctx);
  return r;
}


static double rel_diff(int64_t len, const double *X, const double *Y) {
  double d = 0, y = 0;
  for (int64_t i = 0; i < len; i++) {
    d = fmax(d, fabs(X[i] - Y[i]));
    y = fmax(y, fabs(Y[i]));
  }
  return isnan(d) ? NAN : d / fmax(y, DBL_MIN);
}

/* ---- inverse ------------------------------------------------------------------------------ */

/* ldtol: logdet tolerance (1e-10 for well-conditioned, cond * eps-ish otherwise, see test_chol) */
static void inverse_case(const double *A, int64_t n, int64_t b, int64_t W, int64_t nb,
                         const char *what, double ldtol, const double *Xcpu, double ldcpu) {
  outcome_t r = run(1, CHOL_INVERT, A, n, NULL, 0, b, W, nb, 0);
  CU_ASSERT_EQUAL(r.st, OOC_OK);
  if (r.st != OOC_OK) {
    LOG("\n  %s n=%lld b=%lld W=%lld nb=%lld: status %d\n", what, (long long)n, (long long)b,
        (long long)W, (long long)nb, (int)r.st);
    return;
  }
  double ratio = tu_inverse_ratio(n, A, r.R, EPS);
  CU_ASSERT(ratio < 30);
  if (!(ratio < 30))
    LOG("\n  %s n=%lld b=%lld W=%lld nb=%lld: inverse ratio %g\n", what, (long long)n,
        (long long)b, (long long)W, (long long)nb, ratio);
  int sym = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) sym &= r.R[i + j * n] == r.R[j + i * n];
  CU_ASSERT(sym);
  double ld = ldcpu;
  if (n <= 200) CU_ASSERT_FATAL(tu_lapack_potrf(A, n, &ld) == 0);
  double rel = fabs(r.logdet - ld) / fmax(1.0, fabs(ld));
  CU_ASSERT(rel < ldtol);
  if (!(rel < ldtol)) LOG("\n  %s n=%lld logdet %.17g vs %.17g\n", what, (long long)n, r.logdet, ld);
  if (Xcpu) { /* both backward stable: they agree to about cond * eps (loose: a gross-error net) */
    double d = rel_diff(n * n, r.R, Xcpu), tol = ldtol < 1e-8 ? 1e-8 : 1e-3;
    CU_ASSERT(d < tol);
    if (!(d < tol)) LOG("\n  %s n=%lld b=%lld W=%lld: |X - Xcpu| / |Xcpu| = %g\n", what, (long long)n, (long long)b, (long long)W, d);
  }
  free(r.R);
}

static const double LENGTHS[] = {0.05, 0.3, 1.0};
static const double NUGGETS[] = {1e-6, 1e-3, 1e-1};

static void sweep_inverse(int64_t n, int64_t small_nb) {
  int64_t tiles[] = {7, 64, n};
  for (int k = 0; k < 4; k++) {
    double *A = k < 3 ? gen_matrix(GEN_MATERN, n, n, LENGTHS[k], NUGGETS[(k + n) % 3], 0, 3 + k)
                      : gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 9);
    char what[64];
    snprintf(what, sizeof what, k < 3 ? "matern(%g, %g)" : "cond(1e10)",
             k < 3 ? LENGTHS[k] : 0.0, k < 3 ? NUGGETS[(k + n) % 3] : 0.0);
    double ldtol = k < 3 && NUGGETS[(k + n) % 3] >= 1e-3 ? 1e-10 : 1e-6;
    /* the CPU backend's result, for n = 1000 (LAPACK's logdet is slow to recompute each time) */
    outcome_t c = {0};
    if (n > 200) {
      c = run(0, CHOL_INVERT, A, n, NULL, 0, 64, n, 0, 0);
      CU_ASSERT_FATAL(c.st == OOC_OK);
    }
    for (int t = 0; t < 3; t++) {
      int64_t b = ooc_min64(tiles[t], n);
      if (t > 0 && b == ooc_min64(tiles[t - 1], n)) continue;
      inverse_case(A, n, b, n, 0, what, ldtol, c.R, c.logdet);           /* in core, one block */
      inverse_case(A, n, b, n, small_nb, what, ldtol, c.R, c.logdet);    /* in core, many blocks */
      if (b < n) {
        inverse_case(A, n, b, b, small_nb, what, ldtol, c.R, c.logdet);  /* a tile per step */
        if (3 * b < n) inverse_case(A, n, b, 3 * b, 0, what, ldtol, c.R, c.logdet);
      }
    }
    free(c.R);
    free(A);
  }
}

static void t_inverse_tiny(void) {
  for (int64_t n = 1; n <= 3; n++) sweep_inverse(n, 1);
}
static void t_inverse_100(void) { sweep_inverse(100, 16); }
static void t_inverse_1000(void) { sweep_inverse(1000, 96); }

/* The strict upper triangle is never read, on the device either. */
static void t_upper_not_read(void) {
  int64_t n = 120;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 4);
  double *An = malloc((size_t)(n * n) * sizeof *An);
  memcpy(An, A, (size_t)(n * n) * sizeof *An);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) An[i + j * n] = NAN;
  int64_t Ws[] = {16, 48, n};
  int64_t nbs[] = {0, 10};
  for (int w = 0; w < 3; w++)
    for (int k = 0; k < 2; k++) {
      outcome_t r = run(1, CHOL_INVERT, An, n, NULL, 0, 16, Ws[w], nbs[k], 0);
      CU_ASSERT_FATAL(r.st == OOC_OK);
      double ratio = tu_inverse_ratio(n, A, r.R, EPS);
      CU_ASSERT(ratio < 30);
      if (!(ratio < 30)) LOG("\n  NaN above, W=%lld nb=%lld: ratio %g\n", (long long)Ws[w], (long long)nbs[k], ratio);
      free(r.R);
      r = run(1, CHOL_FACTOR, An, n, NULL, 0, 16, Ws[w], nbs[k], 0);
      CU_ASSERT(r.st == OOC_OK);
      free(r.R);
    }
  free(A);
  free(An);
}

/* ---- factor and solve ----------------------------------------------------------------------- */

static void factor_case(const double *A, int64_t n, int64_t b, int64_t W, double ldtol) {
  outcome_t r = run(1, CHOL_FACTOR, A, n, NULL, 0, b, W, 0, 0);
  CU_ASSERT_EQUAL_FATAL(r.st, OOC_OK);
  double *E = malloc((size_t)(n * n) * sizeof *E);
  int upper_zero = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      if (i < j) upper_zero &= r.R[i + j * n] == 0.0;
      double s = 0;
      for (int64_t k = 0; k <= (i < j ? i : j); k++) s += r.R[i + k * n] * r.R[j + k * n];
      E[i + j * n] = (i >= j ? A[i + j * n] : A[j + i * n]) - s;
    }
  CU_ASSERT(upper_zero);
  double ratio = tu_norm1(n, E) / ((double)n * tu_norm1(n, A) * EPS);
  CU_ASSERT(ratio < 30);
  if (!(ratio < 30)) LOG("\n  factor n=%lld b=%lld W=%lld: ratio %g\n", (long long)n, (long long)b, (long long)W, ratio);
  double ld;
  CU_ASSERT_FATAL(tu_lapack_potrf(A, n, &ld) == 0);
  CU_ASSERT(fabs(r.logdet - ld) / fmax(1.0, fabs(ld)) < ldtol);
  free(E);
  free(r.R);
}

static void t_factor(void) {
  int64_t ns[] = {1, 2, 3, 100, 300};
  for (int i = 0; i < 5; i++) {
    int64_t n = ns[i];
    double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 2);
    factor_case(A, n, ooc_min64(7, n), ooc_min64(7, n), 1e-10);
    factor_case(A, n, ooc_min64(64, n), ooc_min64(128, n), 1e-10);
    factor_case(A, n, ooc_min64(64, n), n, 1e-10);
    free(A);
    A = gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 3);
    factor_case(A, n, ooc_min64(7, n), ooc_min64(21, n), 1e-6);
    free(A);
  }
}

static void solve_case(const double *A, int64_t n, int64_t m, int64_t b, int64_t W) {
  double *B = gen_matrix(GEN_RHS, n, m, 0, 0, 0, 12 + (uint64_t)m);
  outcome_t r = run(1, CHOL_SOLVE, A, n, B, m, b, W, 0, 0);
  CU_ASSERT_EQUAL(r.st, OOC_OK);
  if (r.st == OOC_OK) {
    double ratio = tu_solve_ratio(n, m, A, r.R, B, EPS);
    CU_ASSERT(ratio < 16);
    if (!(ratio < 16))
      LOG("\n  solve n=%lld m=%lld b=%lld W=%lld: ratio %g\n", (long long)n, (long long)m,
          (long long)b, (long long)W, ratio);
    free(r.R);
  }
  free(B);
}

static void t_solve(void) {
  int64_t ns[] = {1, 2, 3, 100, 1000};
  for (int i = 0; i < 5; i++) {
    int64_t n = ns[i];
    double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-3, 0, 7);
    for (int64_t m = 1; m <= 50; m += 49) {
      solve_case(A, n, m, ooc_min64(7, n), ooc_min64(14, n));
      solve_case(A, n, m, ooc_min64(64, n), n);
    }
    free(A);
    A = gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 8);
    solve_case(A, n, 50, ooc_min64(64, n), ooc_min64(128, n));
    free(A);
  }
}

/* ---- not SPD --------------------------------------------------------------------------------- */

static void not_spd_case(const double *A, int64_t n, const char *what) {
  lapack_int want = tu_lapack_potrf(A, n, NULL);
  CU_ASSERT_FATAL(want > 0);
  int64_t bs[] = {7, 64};
  for (int job = 0; job < 3; job++)
    for (int t = 0; t < 2; t++)
      for (int w = 0; w < 2; w++) {
        int64_t b = ooc_min64(bs[t], n), W = w ? n : 2 * b;
        double *B = calloc((size_t)n, sizeof *B);
        outcome_t c = run(0, job, A, n, job == CHOL_SOLVE ? B : NULL, 1, b, W, 0, 0);
        outcome_t r = run(1, job, A, n, job == CHOL_SOLVE ? B : NULL, 1, b, W, 5, 0);
        free(B);
        CU_ASSERT_EQUAL(r.st, OOC_ERR_NOT_SPD);
        CU_ASSERT_EQUAL(r.info, (int64_t)want);
        CU_ASSERT_EQUAL(r.info, c.info);
        if (r.info != want || c.info != want)
          LOG("\n  not SPD %s job %d b=%lld W=%lld: gpu %lld, cpu %lld, LAPACK %d\n", what, job,
              (long long)b, (long long)W, (long long)r.info, (long long)c.info, (int)want);
        free(r.R);
        free(c.R);
      }
}

static void t_not_spd(void) {
  int64_t n = 100;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 11);
  int64_t minors[] = {1, 37, 70, 100};
  for (int k = 0; k < 4; k++) {
    double *M = malloc((size_t)(n * n) * sizeof *M);
    memcpy(M, A, (size_t)(n * n) * sizeof *M);
    int64_t q = minors[k] - 1;
    M[q + q * n] = -1.0; /* the leading minor of order q + 1 is the first not positive */
    char what[32];
    snprintf(what, sizeof what, "minor %lld", (long long)minors[k]);
    not_spd_case(M, n, what);
    free(M);
  }
  /* indefinite everywhere: a random symmetric matrix */
  double *R = gen_matrix(GEN_RANDOM, n, n, 0, 0, 0, 13);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) R[i + j * n] = R[j + i * n];
  for (int64_t j = 0; j < n; j++) R[j + j * n] = fabs(R[j + j * n]) + 0.5;
  if (tu_lapack_potrf(R, n, NULL) > 0) not_spd_case(R, n, "random symmetric");
  free(R);
  free(A);
}

/* ---- out of GPU core, with a budget --------------------------------------------------------- */

static void t_out_of_gpu_core(void) {
  int64_t n = 2000, b = 64, budget = 8 * n * n / 4; /* the matrix is 4x --gpu-mem */
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-3, 0, 21);
  outcome_t c = run(0, CHOL_INVERT, A, n, NULL, 0, b, n, 0, 0);
  CU_ASSERT_FATAL(c.st == OOC_OK);
  int jobs[] = {CHOL_INVERT, CHOL_FACTOR};
  for (int k = 0; k < 2; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ex_cuda_config_t xc = {.gpu_mem = budget, .nqueues = 3};
    ooc_exec_t *x = NULL;
    CU_ASSERT_FATAL(ex_cuda_create(ctx, &xc, &x) == OOC_OK);
    int64_t W = chol_device_stripe(x, n, b, jobs[k], 0);
    ex_destroy(x);
    tu_ctx_done(ctx);
    CU_ASSERT(W >= b && W < n && W % b == 0);
    outcome_t r = run(1, jobs[k], A, n, NULL, 0, b, W, 0, budget);
    CU_ASSERT_FATAL(r.st == OOC_OK);
    CU_ASSERT(r.steps > 1);
    CU_ASSERT(r.dev_peak <= budget && r.dev_budget == budget);
    fprintf(stderr, "[job %d: n=%lld, --gpu-mem %lld, stripe %lld, %lld steps, peak %lld] ",
            jobs[k], (long long)n, (long long)budget, (long long)W, (long long)r.steps,
            (long long)r.dev_peak);
    if (jobs[k] == CHOL_INVERT) {
      double ratio = tu_inverse_ratio(n, A, r.R, EPS), d = rel_diff(n * n, r.R, c.R);
      CU_ASSERT(ratio < 30);
      CU_ASSERT(d < 1e-9);
      CU_ASSERT(fabs(r.logdet - c.logdet) < 1e-10 * fmax(1.0, fabs(c.logdet)));
      fprintf(stderr, "[ratio %.3g, |X - Xcpu|/|Xcpu| %.2g] ", ratio, d);
    }
    free(r.R);
  }
  /* a budget too small for one tile column */
  ooc_ctx_t *ctx = tu_ctx();
  ex_cuda_config_t xc = {.gpu_mem = 3 << 20, .nqueues = 3};
  ooc_exec_t *x = NULL;
  CU_ASSERT_FATAL(ex_cuda_create(ctx, &xc, &x) == OOC_OK);
  CU_ASSERT(chol_device_stripe(x, n, 256, CHOL_INVERT, 0) == 0);
  CU_ASSERT(chol_device_bytes(x, n, 256, 256, CHOL_INVERT, 0, 0) > x->budget);
  ex_destroy(x);
  tu_ctx_done(ctx);
  free(c.R);
  free(A);
}

/* ---- the API on --device cuda ------------------------------------------------------------- */

static void api_opts(ooc_opts_t *o, int method, int64_t gpu_mem) {
  ooc_opts_default(o);
  o->tile = 40;
  o->method = method;
  o->device = OOC_DEVICE_CUDA;
  o->gpu_mem = gpu_mem;
  o->check = OOC_CHECK_FULL;
  o->force = 1;
}

/* --gpu-mem that leaves a quarter of the matrix for the Cholesky's buffers: the CUDA executor's
 * own part (a cuBLAS workspace and info per queue, ex_cuda_overhead) on top. */
static int64_t quarter_budget(int64_t n) {
  ex_cuda_config_t xc = {.gpu_mem = 8 * n * n / 4, .nqueues = 3};
  return 8 * n * n / 4 + ex_cuda_overhead(&xc);
}

static void t_api(void) {
  int64_t n = 1200; /* with tile 40, a quarter of the matrix holds a stripe plus the ring */
  char in[1024], out[1100];
  snprintf(in, sizeof in, "%s", tu_path("GC_cov.h5"));
  snprintf(out, sizeof out, "%s.inv.h5", in);
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-3, 0, 31);
  tu_write_matrix(in, "/A", n, n, A, 2);
  /* in core; a quarter of the matrix on the GPU; the same with half the matrix in host memory,
   * where the stores spill and the planner takes the lean ring (plan.h chol_slots) */
  int64_t gms[] = {0, quarter_budget(n), quarter_budget(n)};
  for (int g = 0; g < 3; g++)
    for (int meth = 0; meth < 2; meth++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o;
      ooc_report_t rep;
      api_opts(&o, meth ? OOC_METHOD_CHOL : OOC_METHOD_AUTO, gms[g]);
      if (g == 2) o.host_mem = 8 * n * n / 2;
      ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
      if (st != OOC_OK) fprintf(stderr, "\n  ooc_invert: %s\n", ooc_ctx_error(ctx));
      CU_ASSERT_FATAL(st == OOC_OK);
      CU_ASSERT(!strcmp(rep.method, "chol"));
      CU_ASSERT(!strcmp(rep.backend, "cuda"));
      if (strcmp(rep.backend, "cuda")) fprintf(stderr, "\n  not on the GPU: %s\n", rep.warnings);
      CU_ASSERT(rep.residual < 30);
      CU_ASSERT(strstr(rep.warnings, g ? "ring slots, stripe" : "(chol, stripe") != NULL);
      if (g) CU_ASSERT(rep.steps > 1);
      if (g == 2) CU_ASSERT(strstr(rep.warnings, "chol, 2 ring slots") && rep.bytes_spilled > 0);
      fprintf(stderr, "[api gpu_mem %lld host_mem %lld: stripe %lld, %lld steps, %.3g MB "
              "spilled, residual %.3g] ", (long long)gms[g], (long long)o.host_mem,
              (long long)rep.stripe, (long long)rep.steps, rep.bytes_spilled / 1e6,
              rep.residual);
      char spec[1200];
      int64_t xr = 0, xc = 0;
      snprintf(spec, sizeof spec, "%s:/inverse", out);
      double *X = tu_read_matrix(spec, &xr, &xc);
      CU_ASSERT_FATAL(X != NULL && xr == n && xc == n);
      CU_ASSERT(tu_inverse_ratio(n, A, X, EPS) < 30);
      free(X);
      tu_ctx_done(ctx);
    }
  /* logdet against the CPU backend */
  double ld[2] = {NAN, NAN};
  for (int d = 0; d < 2; d++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_report_t rep;
    api_opts(&o, OOC_METHOD_AUTO, quarter_budget(n));
    o.device = d ? OOC_DEVICE_CPU : OOC_DEVICE_CUDA;
    CU_ASSERT(ooc_logdet(ctx, in, &o, &rep, &ld[d]) == OOC_OK);
    CU_ASSERT(!strcmp(rep.backend, d ? "cpu" : "cuda"));
    tu_ctx_done(ctx);
  }
  CU_ASSERT(fabs(ld[0] - ld[1]) < 1e-10 * fmax(1.0, fabs(ld[1])));
  fprintf(stderr, "[logdet cuda %.17g cpu %.17g] ", ld[0], ld[1]);
  /* solve */
  double *B = gen_matrix(GEN_RHS, n, 50, 0, 0, 0, 32);
  char bin[1024], xout[1100];
  snprintf(bin, sizeof bin, "%s", tu_path("GC_rhs.h5"));
  snprintf(xout, sizeof xout, "%s", tu_path("GC_x.h5"));
  tu_write_matrix(bin, "/B", n, 50, B, 2);
  {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_report_t rep;
    api_opts(&o, OOC_METHOD_CHOL, 0);
    ooc_status_t st = ooc_solve(ctx, in, bin, xout, &o, &rep);
    if (st != OOC_OK) fprintf(stderr, "\n  ooc_solve: %s\n", ooc_ctx_error(ctx));
    CU_ASSERT(st == OOC_OK);
    CU_ASSERT(rep.residual < 16);
    CU_ASSERT(!strcmp(rep.backend, "cuda"));
    tu_ctx_done(ctx);
  }
  free(B);
  /* not SPD: the CPU's minor; auto falls back to gj and still inverts */
  double *M = malloc((size_t)(n * n) * sizeof *M);
  memcpy(M, A, (size_t)(n * n) * sizeof *M);
  M[700 + 700 * n] = -1.0;
  char bad[1024], badout[1100];
  snprintf(bad, sizeof bad, "%s", tu_path("GC_bad.h5"));
  snprintf(badout, sizeof badout, "%s.inv.h5", bad);
  tu_write_matrix(bad, "/A", n, n, M, 2);
  int64_t info[2] = {-1, -1};
  for (int d = 0; d < 2; d++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_report_t rep;
    api_opts(&o, OOC_METHOD_CHOL, quarter_budget(n));
    o.device = d ? OOC_DEVICE_CPU : OOC_DEVICE_CUDA;
    CU_ASSERT(ooc_invert(ctx, bad, badout, &o, &rep) == OOC_ERR_NOT_SPD);
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "leading minor of order 701") != NULL);
    info[d] = rep.info;
    tu_ctx_done(ctx);
  }
  CU_ASSERT(info[0] == 701 && info[1] == 701);
  /* auto: a negative diagonal entry sends it straight to gj; to meet Cholesky's failure, the
   * matrix must look SPD to the pre-pass (symmetric, positive diagonal) and not be */
  memcpy(M, A, (size_t)(n * n) * sizeof *M);
  M[700 + 699 * n] = M[699 + 700 * n] = 3.0;
  tu_write_matrix(bad, "/A", n, n, M, 2);
  {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_report_t rep;
    api_opts(&o, OOC_METHOD_AUTO, 0);
    ooc_status_t st = ooc_invert(ctx, bad, badout, &o, &rep);
    if (st != OOC_OK) fprintf(stderr, "\n  ooc_invert (auto, not SPD): %s\n", ooc_ctx_error(ctx));
    CU_ASSERT(st == OOC_OK);
    CU_ASSERT(!strcmp(rep.method, "gj"));
    CU_ASSERT(strstr(rep.warnings, "fell back to Gauss-Jordan") != NULL);
    CU_ASSERT(rep.residual < 30);
    tu_ctx_done(ctx);
  }
  free(M);
  free(A);
}

/* One small case of each kind, for compute-sanitizer. */
static void t_sanitize(void) {
  int64_t n = 300;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 41);
  outcome_t r = run(1, CHOL_INVERT, A, n, NULL, 0, 32, n, 48, 0);   /* in core, 7 inner blocks */
  CU_ASSERT(r.st == OOC_OK && tu_inverse_ratio(n, A, r.R, EPS) < 30);
  free(r.R);
  r = run(1, CHOL_INVERT, A, n, NULL, 0, 32, 96, 40, 0);            /* ring of slots */
  CU_ASSERT(r.st == OOC_OK && tu_inverse_ratio(n, A, r.R, EPS) < 30);
  free(r.R);
  r = run(1, CHOL_FACTOR, A, n, NULL, 0, 32, 64, 0, 0);
  CU_ASSERT(r.st == OOC_OK);
  free(r.R);
  A[150 + 150 * n] = -1;
  r = run(1, CHOL_INVERT, A, n, NULL, 0, 32, n, 48, 0);
  CU_ASSERT(r.st == OOC_ERR_NOT_SPD && r.info == 151);
  free(A);
}

int main(int argc, char **argv) {
  char why[256];
  if (!ocu_probe(why, sizeof why)) {
    printf("test_cuda_chol: SKIPPED: no usable GPU (%s)\n", why);
    return 77;
  }
  printf("test_cuda_chol: on %s\n", why);
  if (argc > 1 && !strcmp(argv[1], "sanitize")) {
    static const tu_test_t small[] = {{"small cases, cuda chol", t_sanitize}, {NULL, NULL}};
    return tu_run("cuda-chol-sanitize", small);
  }
  static const tu_test_t tests[] = {
      {"inverse n = 1..3", t_inverse_tiny},
      {"inverse n = 100", t_inverse_100},
      {"inverse n = 1000, agrees with cpu", t_inverse_1000},
      {"upper triangle never read", t_upper_not_read},
      {"factor, logdet", t_factor},
      {"solve, 1 and 50 right-hand sides", t_solve},
      {"not SPD: the CPU's leading minor", t_not_spd},
      {"out of GPU core: 4x --gpu-mem, peak <= budget, agrees with cpu", t_out_of_gpu_core},
      {"API: invert, logdet, solve, not SPD, auto fallback", t_api},
      {"small cases (the sanitizer's)", t_sanitize},
      {NULL, NULL}};
  return tu_run("cuda-chol", tests);
}
#endif
