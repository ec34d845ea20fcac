/*
 * test_chol_exec.c: chol.c's device schedule (chol.h: the split pivot, V through the ring with
 * transposes on the device, the in-device sweep, copies on their own queues) on the CPU, so CI
 * covers it without a GPU: chol_run on the strict host executor (exec.h: not unified, so every
 * put and get happens as on a GPU; three queues on threads; every operation starts late; a get
 * poisons its destination with NaN until it has run; queries say "not yet" first). A missing
 * event, sync or put reads stale data or NaN and fails the checks. Results: inverse ratio < 30,
 * logdet and result as the CPU path's (the unified host executor) within rounding, the solve's
 * HPL ratio < 16, the not-SPD minor equal to LAPACK's; n in {1, 3, 100, 300}, tiles 7 and 64
 * (not dividing n), stripes of 1 and 3 tiles and n, rings of 1, 2 and 4 slots, the in-device
 * sweep in one block (potri) and in blocks of 16; full and lower-triangle results; and the CPU
 * path's own in-core sweep in blocks.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "gen/gen.h"
#include "kernels/ops.h"
#include "exec/exec.h"
#include "solvers/chol.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)

/* ---- runs ------------------------------------------------------------------------------------ */

typedef struct {
  const double *M;
  int64_t ld;
} memsrc_t;
static ooc_status_t mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, s->M + r0 + (c0 + j) * s->ld, (size_t)nr * sizeof(double));
  return OOC_OK;
}

static double *gen(gen_kind_t kind, int64_t rows, int64_t cols, uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, kind, rows);
  s.cols = cols;
  s.seed = seed;
  s.symmetric = 1;
  if (kind == GEN_MATERN) s.nugget = 1e-2;
  return tu_gen_spec(&s);
}

typedef struct {
  ooc_status_t st;
  int64_t info;
  double logdet;
  double *R;
} outcome_t;

/* nslots 0: the CPU path (no executor: chol_run's unified host executor); else the strict host
 * executor with 3 queues and that many ring slots; nb: the sweep's block (0: the default);
 * lower: chol_args_t.lower_only (the result read back with its upper triangle mirrored). */
static outcome_t run_on(int job, const double *A, int64_t n, const double *B, int64_t m, int64_t b,
                        int64_t W, int nslots, int64_t nb, int lower, int64_t budget,
                        int64_t *dev_peak) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, mem_read, NULL, NULL}, srcb = {&mb, mem_read, NULL, NULL};
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 40, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &srca, NULL, &sa) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &srcb, NULL, &sb) == OOC_OK);
  ooc_exec_t *x = NULL;
  if (nslots) CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 3, budget, 2, &x) == OOC_OK);
  chol_args_t args = {.A = sa, .B = sb, .stripe = W >= n ? (n + b - 1) / b * b : W,
                      .ops = ooc_ops_cpu(), .job = job, .lower_only = lower, .exec = x,
                      .nslots = nslots, .nb = nb};
  r.st = chol_run(ctx, &args, NULL, &r.info, &r.logdet);
  if (r.st != OOC_OK && r.st != OOC_ERR_NOT_SPD) fprintf(stderr, "\n  chol_run: %s\n", ooc_ctx_error(ctx));
  if (x) {
    if (dev_peak) *dev_peak = x->stats.dev_peak;
    CU_ASSERT_EQUAL(x->dev_bytes, 0); /* chol_run freed what it allocated */
    CU_ASSERT_EQUAL(x->staging_bytes, 0);
    ex_destroy(x);
  }
  if (r.st == OOC_OK) {
    tstore_t *out = B ? sb : sa;
    int64_t rc = B ? m : n;
    part_t pr = ts_rows(out), pc = ts_cols(out);
    r.R = malloc((size_t)(n * rc + 1) * sizeof(double));
    for (int64_t tj = 0; tj < pc.count; tj++)
      for (int64_t ti = 0; ti < pr.count; ti++)
        CU_ASSERT(ts_read(out, ti, tj, r.R + part_start(pr, ti) + part_start(pc, tj) * n, n) == OOC_OK);
    for (int64_t j = 0; lower && j < n; j++) /* zeros above the diagonal, then the mirror */
      for (int64_t i = 0; i < j; i++) {
        CU_ASSERT(r.R[i + j * n] == 0.0);
        r.R[i + j * n] = r.R[j + i * n];
      }
  }
  tstore_destroy(sa);
  tstore_destroy(sb);
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  return r;
}

static outcome_t run(int job, const double *A, int64_t n, const double *B, int64_t m, int64_t b,
                     int64_t W, int nslots, int64_t nb, int lower) {
  return run_on(job, A, n, B, m, b, W, nslots, nb, lower, 0, NULL);
}

static void t_exec(void) {
  int64_t ns[] = {1, 3, 100, 300};
  int slots[] = {1, 2, 4};
  for (int i = 0; i < 4; i++) {
    int64_t n = ns[i];
    double *A = gen(GEN_MATERN, n, n, 5 + (uint64_t)n);
    double *B = gen(GEN_RHS, n, 50, 6);
    int64_t bs[] = {7, 64};
    for (int t = 0; t < 2; t++) {
      int64_t b = bs[t] < n ? bs[t] : n;
      int64_t Ws[] = {b, 3 * b, n};
      for (int w = 0; w < 3; w++)
        for (int k = 0; k < 6; k++) {
          int K = slots[k % 3], lower = k == 1 || k == 4;
          int64_t nb = k >= 3 ? 16 : 0; /* the in-device sweep in blocks, or one (potri) */
          outcome_t c = run(CHOL_INVERT, A, n, NULL, 0, b, Ws[w], 0, 0, 0);
          outcome_t r = run(CHOL_INVERT, A, n, NULL, 0, b, Ws[w], K, nb, lower);
          CU_ASSERT_FATAL(c.st == OOC_OK && r.st == OOC_OK);
          double ratio = tu_inverse_ratio(n, A, r.R, EPS);
          CU_ASSERT(ratio < 30);
          CU_ASSERT(fabs(r.logdet - c.logdet) <= 1e-12 * fmax(1, fabs(c.logdet)));
          double d = 0;
          for (int64_t q = 0; q < n * n; q++) d = fmax(d, fabs(r.R[q] - c.R[q]));
          CU_ASSERT(d <= 1e-12 * fmax(1, fabs(c.R[0])) * n);
          if (!(ratio < 30)) fprintf(stderr, "\n  n=%lld b=%lld W=%lld K=%d: ratio %g\n", (long long)n, (long long)b, (long long)Ws[w], K, ratio);
          free(c.R);
          free(r.R);
          c = run(CHOL_SOLVE, A, n, B, 50, b, Ws[w], 0, 0, 0);
          r = run(CHOL_SOLVE, A, n, B, 50, b, Ws[w], K, nb, 0);
          CU_ASSERT_FATAL(c.st == OOC_OK && r.st == OOC_OK);
          CU_ASSERT(tu_solve_ratio(n, 50, A, r.R, B, EPS) < 16);
          CU_ASSERT(fabs(r.logdet - c.logdet) <= 1e-12 * fmax(1, fabs(c.logdet)));
          free(c.R);
          free(r.R);
        }
    }
    free(A);
    free(B);
  }
}

static void t_not_spd(void) {
  int64_t n = 100;
  double *A = gen(GEN_MATERN, n, n, 8);
  A[60 + 60 * n] = -1.0; /* leading minor of order 61 */
  for (int job = 0; job < 3; job++) {
    double *B = calloc((size_t)n, sizeof *B);
    for (int v = 0; v < 4; v++) { /* strict, strict with the sweep in blocks, CPU path in core */
      int64_t W = v < 2 ? 21 : n;
      outcome_t r = run(job, A, n, job == CHOL_SOLVE ? B : NULL, 1, 7, W, v < 2 ? 2 : 0,
                        v % 2 ? 16 : 0, 0);
      CU_ASSERT_EQUAL(r.st, OOC_ERR_NOT_SPD);
      CU_ASSERT_EQUAL(r.info, 61);
      free(r.R);
    }
    free(B);
  }
  free(A);
}

/* The CPU path's in-core inverse with the sweep in blocks (chol_args_t.nb < n: the schedule a GPU
 * runs in core) against its default (potrf + potri): the same inverse within rounding. */
static void t_incore_blocks(void) {
  int64_t n = 300, b = 64;
  double *A = gen(GEN_MATERN, n, n, 11);
  outcome_t c = run(CHOL_INVERT, A, n, NULL, 0, b, n, 0, 0, 0);
  int64_t nbs[] = {1, 7, 64, 100, 299};
  for (int i = 0; i < 5; i++) {
    outcome_t r = run(CHOL_INVERT, A, n, NULL, 0, b, n, 0, nbs[i], i % 2);
    CU_ASSERT_FATAL(c.st == OOC_OK && r.st == OOC_OK);
    CU_ASSERT(tu_inverse_ratio(n, A, r.R, EPS) < 30);
    CU_ASSERT(fabs(r.logdet - c.logdet) <= 1e-12 * fmax(1, fabs(c.logdet)));
    double d = 0;
    for (int64_t q = 0; q < n * n; q++) d = fmax(d, fabs(r.R[q] - c.R[q]));
    CU_ASSERT(d <= 1e-12 * fmax(1, fabs(c.R[0])) * n);
    free(r.R);
  }
  free(c.R);
  free(A);
}

/* The device plan (chol.h: chol_device_stripe, chol_device_nb, chol_device_bytes) on the strict
 * host executor, whose ex_alloc refuses past its budget as the CUDA pool does, for both rings the
 * planner chooses from (CHOL_SLOTS, CHOL_SLOTS_LEAN): the stripe is the widest whose bytes fit
 * (one tile column more does not), chol_run on it with that ring stays within the budget and
 * gives the CPU path's result; a budget below one tile column gives 0; the lean ring's stripe is
 * never narrower, and wider for some budget out of core. */
static void t_device_plan(void) {
  int64_t n = 300, m = 5;
  double *A = gen(GEN_MATERN, n, n, 13), *B = gen(GEN_RHS, n, m, 14);
  int jobs[] = {CHOL_INVERT, CHOL_FACTOR, CHOL_SOLVE};
  int64_t tiles[] = {7, 64};
  for (int ji = 0; ji < 3; ji++) {
    int job = jobs[ji];
    const double *Bj = job == CHOL_SOLVE ? B : NULL;
    outcome_t c = run(job, A, n, Bj, m, 64, n, 0, 0, 0);
    CU_ASSERT_FATAL(c.st == OOC_OK);
    for (int ti = 0; ti < 2; ti++) {
      int64_t b = tiles[ti], ran = 0, wider = 0;
      for (int step = 0; step < 2 * 10; step++) { /* budgets 0.02 .. 2.4 n^2 doubles, x 1.7 */
        int K = step % 2 ? CHOL_SLOTS_LEAN : CHOL_SLOTS; /* each budget with both rings */
        double frac = 0.02 * pow(1.7, step / 2);
        int64_t budget = (int64_t)(frac * 8.0 * n * n) + 4096;
        ooc_ctx_t *ctx = tu_ctx();
        ooc_exec_t *x = NULL;
        CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 3, budget, 0, &x) == OOC_OK);
        int64_t W = chol_device_stripe(x, n, b, job, K);
        int64_t nb = W ? chol_device_nb(x, n, b, W, job, K) : 0;
        int64_t one = chol_device_bytes(x, n, b, b, job, 0, K);
        if (K == CHOL_SLOTS_LEAN) { /* against the full ring's stripe at this budget */
          int64_t Wf = chol_device_stripe(x, n, b, job, CHOL_SLOTS);
          CU_ASSERT(W >= Wf);
          wider += W > Wf;
        }
        if (W == 0) {
          CU_ASSERT(one > budget);
        } else {
          CU_ASSERT(W == n || (W % b == 0 && W < n));
          CU_ASSERT(chol_device_bytes(x, n, b, W, job, nb, K) <= budget);
          if (W < n) /* one tile column more does not fit */
            CU_ASSERT(chol_device_bytes(x, n, b, ooc_min64(W + b, n), job,
                                        chol_device_nb(x, n, b, ooc_min64(W + b, n), job, K),
                                        K) > budget);
        }
        ex_destroy(x);
        tu_ctx_done(ctx);
        if (W == 0) continue;
        int64_t peak = 0;
        outcome_t r = run_on(job, A, n, Bj, m, b, W, K, nb, 0, budget, &peak);
        CU_ASSERT(r.st == OOC_OK);
        CU_ASSERT(peak > 0 && peak <= budget);
        if (r.st == OOC_OK) {
          int64_t cols = job == CHOL_SOLVE ? m : n;
          double d = 0, sc = 0;
          for (int64_t q = 0; q < n * cols; q++) {
            /* the factor's upper triangle is unspecified on either path: compare the lower */
            if (job == CHOL_FACTOR && q % n < q / n) continue;
            d = fmax(d, fabs(r.R[q] - c.R[q]));
            sc = fmax(sc, fabs(c.R[q]));
          }
          CU_ASSERT(d <= 1e-10 * sc);
          ran++;
        }
        free(r.R);
      }
      CU_ASSERT(ran >= 4); /* out of core and in core both ran, with either ring */
      CU_ASSERT(wider >= 1);
    }
    free(c.R);
  }
  free(A), free(B);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"strict host executor: invert and solve as the CPU path, rings of 1..4 slots", t_exec},
      {"strict host executor and CPU path: not SPD", t_not_spd},
      {"CPU path: the in-core sweep in blocks of 1..299", t_incore_blocks},
      {"device plan: the widest stripe within the budget, and chol_run within it", t_device_plan},
      {NULL, NULL}};
  return tu_run("chol-exec", tests);
}
