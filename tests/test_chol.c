/*
 * test_chol.c: the SPD solver on tile stores built directly (source = a generated matrix in
 * memory, spill = the real scratch store in tu_tmpdir()).
 * - inverse: LAPACK's inverse ratio < 30 for Matern covariances (length 0.05..1, nugget
 *   1e-6..1e-1) and cond = 1e10 SPD, n in {1, 2, 3, 100, 1000}, tiles 7, 64 and n, stripes of one
 *   tile, several tiles and n, ref and cpu; the result is exactly symmetric, or lower only;
 * - logdet against LAPACKE_dpotrf (relative 1e-10);
 * - factor: ||A - L L^T||_1 / (n ||A||_1 eps) < 30, zero above the diagonal;
 * - solve: HPL ratio < 16 with 1 and 50 right-hand sides;
 * - not SPD: OOC_ERR_NOT_SPD with LAPACKE_dpotrf's leading minor; NaN fails, NaN above the
 *   diagonal is never read;
 * - out of core: cache much smaller than the matrix, spills happen, the host peak stays within
 *   cache + chol_workspace_bytes + tstore overhead + slack, results still right.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "gen/gen.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)
#define SLACK (64 * 1024)

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

/* ---- stores over memory, spilling to the real scratch store ------------------------------ */

typedef struct {
  ooc_status_t st;
  int64_t info, spills, peak, budget, steps;
  double logdet;
  double *R; /* the store's content after the run: A (n x n) or X (n x m); NULL on failure */
} outcome_t;

/* Run one job on A (n x n, column-major) [and B, n x m] with tile b, stripe W and cache cap. */
static outcome_t run(const ooc_ops_t *ops, int job, const double *A, int64_t n, const double *B,
                     int64_t m, int64_t b, int64_t W, int64_t cap, int lower_only) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, tu_mem_read, NULL, NULL}, srcb = {&mb, tu_mem_read, NULL, NULL};
  tu_spill_t sla = {ctx, "cholA", NULL, 0}, slb = {ctx, "cholB", NULL, 0};
  ooc_spill_ops_t spa = {&sla, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  spb = {&slb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &srca, &spa, &sa) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &srcb, &spb, &sb) == OOC_OK);
  r.budget = cap + chol_workspace_bytes(n, b, W, B ? m : 0) + tstore_overhead_bytes(n, n, b) +
             (B ? tstore_overhead_bytes(n, m, b) : 0) + SLACK;
  chol_args_t args = {.A = sa, .B = sb, .stripe = W, .ops = ops, .job = job,
                      .lower_only = lower_only};
  chol_stats_t stats;
  r.st = chol_run(ctx, &args, &stats, &r.info, &r.logdet);
  r.peak = ooc_ctx_host_peak(ctx);
  r.steps = stats.steps;
  r.spills = ts_stats(sa)->spills + (sb ? ts_stats(sb)->spills : 0);
  if (r.st != OOC_OK && r.st != OOC_ERR_NOT_SPD)
    fprintf(stderr, "\n  chol_run: %s\n", ooc_ctx_error(ctx));
  if (r.st == OOC_ERR_NOT_SPD) {
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "matrix is not positive definite: leading minor of order") != NULL);
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


static int g_logged;
#define LOG(...)                                                                                   \
  do {                                                                                             \
    if (g_logged++ < 20) fprintf(stderr, __VA_ARGS__);                                             \
  } while (0)

/* ---- inverse ----------------------------------------------------------------------------- */

/* logdet is as sensitive as the smallest pivot: two backward-stable factorizations agree to about
 * cond * eps in it, so 1e-10 is asked of well-conditioned matrices and ldtol of the others. */
static void inverse_case(const ooc_ops_t *ops, const double *A, int64_t n, int64_t b, int64_t W,
                         int64_t cap, const char *what, double ldtol) {
  outcome_t r = run(ops, CHOL_INVERT, A, n, NULL, 0, b, W, cap, 0);
  CU_ASSERT_EQUAL(r.st, OOC_OK);
  if (r.st != OOC_OK) return;
  double ratio = tu_inverse_ratio(n, A, r.R, EPS);
  CU_ASSERT(ratio < 30);
  if (!(ratio < 30))
    LOG("\n  %s %s n=%lld b=%lld W=%lld: inverse ratio %g\n", ops->name, what, (long long)n,
        (long long)b, (long long)W, ratio);
  int sym = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) sym &= r.R[i + j * n] == r.R[j + i * n];
  CU_ASSERT(sym);
  if (n <= 200) {
    double ld;
    CU_ASSERT_FATAL(tu_lapack_potrf(A, n, &ld) == 0);
    double rel = fabs(r.logdet - ld) / fmax(1.0, fabs(ld));
    CU_ASSERT(rel < ldtol);
    if (!(rel < ldtol)) LOG("\n  %s logdet %.17g vs LAPACK %.17g\n", what, r.logdet, ld);
  }
  CU_ASSERT(r.peak <= r.budget);
  free(r.R);
}

static const double LENGTHS[] = {0.05, 0.3, 1.0};
static const double NUGGETS[] = {1e-6, 1e-3, 1e-1};

static void sweep_inverse(const ooc_ops_t *ops, int64_t n) {
  int64_t tiles[] = {7, 64, n};
  for (int k = 0; k < 4; k++) {
    double *A = k < 3 ? gen_matrix(GEN_MATERN, n, n, LENGTHS[k], NUGGETS[(k + n) % 3], 0, 3 + k)
                      : gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 9);
    char what[64];
    snprintf(what, sizeof what, k < 3 ? "matern(%g)" : "cond(1e10)", k < 3 ? LENGTHS[k] : 0.0);
    for (int t = 0; t < 3; t++) {
      int64_t b = ooc_min64(tiles[t], n);
      if (t > 0 && b == ooc_min64(tiles[t - 1], n)) continue;
      int64_t Ws[] = {b, 3 * b, n};
      for (int w = 0; w < 3; w++) {
        if (w > 0 && Ws[w] >= n && Ws[w - 1] >= n) continue;
        inverse_case(ops, A, n, b, Ws[w], (int64_t)1 << 40, what,
                     k < 3 && NUGGETS[(k + n) % 3] >= 1e-3 ? 1e-10 : 1e-6);
      }
    }
    free(A);
  }
}

static void t_inverse_tiny(void) {
  for (int64_t n = 1; n <= 3; n++) {
    sweep_inverse(ooc_ops_ref(), n);
    sweep_inverse(ooc_ops_cpu(), n);
  }
}
static void t_inverse_100(void) {
  sweep_inverse(ooc_ops_ref(), 100);
  sweep_inverse(ooc_ops_cpu(), 100);
}
static void t_inverse_1000_cpu(void) { sweep_inverse(ooc_ops_cpu(), 1000); }
static void t_inverse_1000_ref(void) {
  double *A = gen_matrix(GEN_MATERN, 1000, 1000, 0.3, 1e-3, 0, 5);
  inverse_case(ooc_ops_ref(), A, 1000, 64, 320, (int64_t)1 << 40, "matern(0.3)", 1e-10);
  free(A);
  A = gen_matrix(GEN_COND, 1000, 1000, 0, 0, 1e10, 6);
  inverse_case(ooc_ops_ref(), A, 1000, 64, 192, (int64_t)1 << 40, "cond(1e10)", 1e-6);
  free(A);
}

static void t_lower_only(void) {
  int64_t n = 100;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 4);
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    int64_t Ws[] = {7, 21, 100};
    for (int w = 0; w < 3; w++) {
      outcome_t f = run(ops, CHOL_INVERT, A, n, NULL, 0, 7, Ws[w], (int64_t)1 << 40, 0);
      outcome_t l = run(ops, CHOL_INVERT, A, n, NULL, 0, 7, Ws[w], (int64_t)1 << 40, 1);
      CU_ASSERT_FATAL(f.st == OOC_OK && l.st == OOC_OK);
      int ok = 1;
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++)
          ok &= i >= j ? l.R[i + j * n] == f.R[i + j * n] : l.R[i + j * n] == 0.0;
      CU_ASSERT(ok);
      free(f.R);
      free(l.R);
    }
  }
  free(A);
}

/* The strict upper triangle is never read: NaN there changes nothing. */
static void t_upper_not_read(void) {
  int64_t n = 50;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 4);
  double *An = malloc((size_t)(n * n) * sizeof *An);
  memcpy(An, A, (size_t)(n * n) * sizeof *An);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < j; i++) An[i + j * n] = NAN;
  double *B = gen_matrix(GEN_RHS, n, 3, 0, 0, 0, 8);
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    outcome_t r = run(ops, CHOL_INVERT, An, n, NULL, 0, 8, 16, (int64_t)1 << 40, 0);
    CU_ASSERT_FATAL(r.st == OOC_OK);
    CU_ASSERT(tu_inverse_ratio(n, A, r.R, EPS) < 30);
    free(r.R);
    r = run(ops, CHOL_SOLVE, An, n, B, 3, 8, 16, (int64_t)1 << 40, 0);
    CU_ASSERT_FATAL(r.st == OOC_OK);
    CU_ASSERT(tu_solve_ratio(n, 3, A, r.R, B, EPS) < 16);
    free(r.R);
  }
  free(A);
  free(An);
  free(B);
}

/* ---- factor ------------------------------------------------------------------------------ */

static void factor_case(const ooc_ops_t *ops, const double *A, int64_t n, int64_t b, int64_t W,
                        int64_t cap, double ldtol) {
  outcome_t r = run(ops, CHOL_FACTOR, A, n, NULL, 0, b, W, cap, 0);
  CU_ASSERT_EQUAL_FATAL(r.st, OOC_OK);
  double *E = malloc((size_t)(n * n) * sizeof *E);
  int upper_zero = 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      if (i < j) upper_zero &= r.R[i + j * n] == 0.0;
      /* A - L L^T, from the lower triangle of A mirrored */
      double s = 0;
      for (int64_t k = 0; k <= (i < j ? i : j); k++) s += r.R[i + k * n] * r.R[j + k * n];
      E[i + j * n] = (i >= j ? A[i + j * n] : A[j + i * n]) - s;
    }
  CU_ASSERT(upper_zero);
  double ratio = tu_norm1(n, E) / ((double)n * tu_norm1(n, A) * EPS);
  CU_ASSERT(ratio < 30);
  if (!(ratio < 30)) LOG("\n  factor %s n=%lld: ratio %g\n", ops->name, (long long)n, ratio);
  double ld;
  CU_ASSERT_FATAL(tu_lapack_potrf(A, n, &ld) == 0);
  CU_ASSERT(fabs(r.logdet - ld) / fmax(1.0, fabs(ld)) < ldtol);
  CU_ASSERT(r.peak <= r.budget);
  free(E);
  free(r.R);
}

static void t_factor(void) {
  int64_t ns[] = {1, 2, 3, 100, 300};
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    for (int i = 0; i < 5; i++) {
      int64_t n = ns[i];
      double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-2, 0, 2);
      factor_case(ops, A, n, ooc_min64(7, n), ooc_min64(7, n), (int64_t)1 << 40, 1e-10);
      factor_case(ops, A, n, ooc_min64(64, n), ooc_min64(128, n), (int64_t)1 << 40, 1e-10);
      factor_case(ops, A, n, n, n, (int64_t)1 << 40, 1e-10);
      free(A);
      A = gen_matrix(GEN_MATERN, n, n, 0.05, 1e-6, 0, 2);
      factor_case(ops, A, n, ooc_min64(7, n), ooc_min64(14, n), (int64_t)1 << 40, 1e-6);
      free(A);
      A = gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 3);
      factor_case(ops, A, n, ooc_min64(7, n), ooc_min64(21, n), (int64_t)1 << 40, 1e-6);
      free(A);
    }
  }
}

/* ---- solve ------------------------------------------------------------------------------- */

static void solve_case(const ooc_ops_t *ops, const double *A, int64_t n, int64_t m, int64_t b,
                       int64_t W, int64_t cap) {
  double *B = gen_matrix(GEN_RHS, n, m, 0, 0, 0, 12 + (uint64_t)m);
  outcome_t r = run(ops, CHOL_SOLVE, A, n, B, m, b, W, cap, 0);
  CU_ASSERT_EQUAL(r.st, OOC_OK);
  if (r.st == OOC_OK) {
    double ratio = tu_solve_ratio(n, m, A, r.R, B, EPS);
    CU_ASSERT(ratio < 16);
    if (!(ratio < 16))
      LOG("\n  solve %s n=%lld m=%lld b=%lld W=%lld: ratio %g\n", ops->name, (long long)n,
          (long long)m, (long long)b, (long long)W, ratio);
    CU_ASSERT(r.peak <= r.budget);
    free(r.R);
  }
  free(B);
}

static void t_solve(void) {
  int64_t ns[] = {1, 2, 3, 100, 1000};
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    for (int i = 0; i < 5; i++) {
      int64_t n = ns[i];
      if (!k && n == 1000) continue;
      double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-3, 0, 7);
      for (int64_t m = 1; m <= 50; m += 49) {
        solve_case(ops, A, n, m, ooc_min64(7, n), ooc_min64(14, n), (int64_t)1 << 40);
        solve_case(ops, A, n, m, ooc_min64(64, n), n, (int64_t)1 << 40);
      }
      free(A);
      A = gen_matrix(GEN_COND, n, n, 0, 0, 1e10, 8);
      solve_case(ops, A, n, 50, ooc_min64(64, n), ooc_min64(128, n), (int64_t)1 << 40);
      free(A);
    }
  }
}

/* ---- not SPD ----------------------------------------------------------------------------- */

static void not_spd_case(const double *A, int64_t n, const char *what) {
  lapack_int want = tu_lapack_potrf(A, n, NULL);
  CU_ASSERT_FATAL(want > 0);
  int64_t bs[] = {7, 64};
  for (int k = 0; k < 2; k++) {
    const ooc_ops_t *ops = k ? ooc_ops_cpu() : ooc_ops_ref();
    for (int job = 0; job < 3; job++)
      for (int t = 0; t < 2; t++) {
        int64_t b = ooc_min64(bs[t], n);
        double *B = calloc((size_t)n, sizeof *B);
        outcome_t r = run(ops, job, A, n, job == CHOL_SOLVE ? B : NULL, 1, b, 2 * b,
                          (int64_t)1 << 40, 0);
        free(B);
        CU_ASSERT_EQUAL(r.st, OOC_ERR_NOT_SPD);
        CU_ASSERT_EQUAL(r.info, (int64_t)want);
        if (r.info != want)
          LOG("\n  not SPD %s %s job %d b=%lld: info %lld, LAPACK %d\n", what, ops->name, job,
              (long long)b, (long long)r.info, (int)want);
        free(r.R);
      }
  }
}

static void t_not_spd(void) {
  int64_t n = 100;
  /* Matern with a negative diagonal shift: eigenvalues near zero become negative. */
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-3, 0, 3);
  for (int64_t i = 0; i < n; i++) A[i + i * n] -= 0.05;
  not_spd_case(A, n, "matern - 0.05 I");
  free(A);
  /* A random matrix, symmetrized (lower triangle is what counts). */
  A = gen_matrix(GEN_RANDOM, n, n, 0, 0, 0, 4);
  for (int64_t i = 0; i < n; i++) A[i + i * n] = fabs(A[i + i * n]) + 2.0;
  not_spd_case(A, n, "random symmetrized");
  free(A);
  /* SPD up to row 57, where the diagonal is made negative. */
  A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-1, 0, 5);
  A[57 + 57 * n] = -1.0;
  not_spd_case(A, n, "negative a_57,57");
  free(A);
  /* n = 1 with a zero, and n = 2 with a negative */
  double z = 0.0;
  not_spd_case(&z, 1, "[0]");
  double t[4] = {1, 2, 2, 1};
  not_spd_case(t, 2, "[[1,2],[2,1]]");
}

static void t_nan_fails(void) {
  int64_t n = 60;
  double *A = gen_matrix(GEN_MATERN, n, n, 0.3, 1e-1, 0, 6);
  int64_t pos[][2] = {{0, 0}, {20, 5}, {41, 41}, {59, 30}};
  for (int q = 0; q < 4; q++) {
    int64_t i = pos[q][0], j = pos[q][1];
    double keep = A[i + j * n];
    A[i + j * n] = NAN;
    for (int k = 0; k < 2; k++)
      for (int job = 0; job < 2; job++) {
        outcome_t r = run(k ? ooc_ops_cpu() : ooc_ops_ref(), job, A, n, NULL, 0, 8, 16,
                          (int64_t)1 << 40, 0);
        CU_ASSERT_EQUAL(r.st, OOC_ERR_NOT_SPD);
        CU_ASSERT_EQUAL(r.info, i + 1); /* the first leading minor that holds the NaN */
        free(r.R);
      }
    A[i + j * n] = keep;
  }
  free(A);
}

/* ---- out of core ------------------------------------------------------------------------- */

static void ooc_case(const ooc_ops_t *ops, int job, int64_t n, int64_t b, int64_t W, int64_t cap) {
  double *A = gen_matrix(GEN_MATERN, n, n, 0.1, 1e-4, 0, 21);
  double *B = job == CHOL_SOLVE ? gen_matrix(GEN_RHS, n, 5, 0, 0, 0, 22) : NULL;
  CU_ASSERT(8 * n * n >= 4 * cap);
  outcome_t r = run(ops, job, A, n, B, 5, b, W, cap, 0);
  CU_ASSERT_EQUAL_FATAL(r.st, OOC_OK);
  CU_ASSERT(r.spills > 0);
  CU_ASSERT(r.steps > 1);
  CU_ASSERT(r.peak <= r.budget);
  fprintf(stderr, "[%s job %d n=%lld b=%lld W=%lld cache %lld: peak %lld <= %lld, %lld spills] ",
          ops->name, job, (long long)n, (long long)b, (long long)W, (long long)cap,
          (long long)r.peak, (long long)r.budget, (long long)r.spills);
  if (job == CHOL_INVERT) {
    double ratio = tu_inverse_ratio(n, A, r.R, EPS);
    CU_ASSERT(ratio < 30);
  } else if (job == CHOL_SOLVE) {
    CU_ASSERT(tu_solve_ratio(n, 5, A, r.R, B, EPS) < 16);
  } else {
    double ld;
    CU_ASSERT_FATAL(tu_lapack_potrf(A, n, &ld) == 0);
    CU_ASSERT(fabs(r.logdet - ld) / fmax(1.0, fabs(ld)) < 1e-10);
  }
  free(r.R);
  free(A);
  free(B);
}

static void t_out_of_core(void) {
  ooc_case(ooc_ops_cpu(), CHOL_INVERT, 1000, 64, 192, 1 << 20); /* 8 MB matrix, 1 MiB cache */
  ooc_case(ooc_ops_cpu(), CHOL_INVERT, 777, 50, 150, 600 << 10);  /* tile does not divide n */
  ooc_case(ooc_ops_cpu(), CHOL_FACTOR, 1000, 64, 128, 1 << 20);
  ooc_case(ooc_ops_cpu(), CHOL_SOLVE, 1000, 64, 256, 1 << 20);
  ooc_case(ooc_ops_ref(), CHOL_INVERT, 400, 32, 96, 256 << 10);
  ooc_case(ooc_ops_ref(), CHOL_SOLVE, 400, 32, 64, 256 << 10);
}

/* ts_even_stripe: never wider than asked, whole tiles, the same number of steps, and the
 * narrowest such width (one tile less would need another step); the n = 65536 case of
 * docs/CUDA.md. */
static void t_even_stripe(void) {
  CU_ASSERT_EQUAL(ts_even_stripe(65536, 1024, 20480), 16384);
  CU_ASSERT_EQUAL(ts_even_stripe(65536, 1024, 65536), 65536);
  CU_ASSERT_EQUAL(ts_even_stripe(1000, 64, 1024), 1024); /* W >= n: unchanged */
  for (int64_t n = 1; n <= 300; n += 7)
    for (int64_t b = 1; b <= n; b += 5)
      for (int64_t W = b; W < n; W += b) {
        int64_t E = ts_even_stripe(n, b, W), steps = ooc_cdiv64(n, W);
        CU_ASSERT(E <= W && E >= b && E % b == 0);
        CU_ASSERT_EQUAL(ooc_cdiv64(n, E), steps);
        if (E > b) CU_ASSERT(ooc_cdiv64(n, E - b) > steps);
      }
}

int main(void) {
  static const tu_test_t tests[] = {
      {"even stripes", t_even_stripe},
      {"inverse n = 1..3, ref and cpu", t_inverse_tiny},
      {"inverse n = 100, ref and cpu", t_inverse_100},
      {"inverse n = 1000, cpu", t_inverse_1000_cpu},
      {"inverse n = 1000, ref", t_inverse_1000_ref},
      {"inverse lower only", t_lower_only},
      {"the strict upper triangle is never read", t_upper_not_read},
      {"factor: ||A - L L^T||, logdet", t_factor},
      {"solve: 1 and 50 right-hand sides", t_solve},
      {"not SPD: leading minor as LAPACK", t_not_spd},
      {"NaN fails", t_nan_fails},
      {"out of core: spills, budget, results", t_out_of_core},
      {NULL, NULL}};
  return tu_run("chol", tests);
}
