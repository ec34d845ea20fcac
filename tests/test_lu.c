/*
 * test_lu.c: LU with partial pivoting (src/solvers/lu.c) on tile stores built directly (source =
 * a matrix in memory, spill = the real scratch store in tu_tmpdir()), on the host executor over
 * the cpu and ref kernels.
 * - factor: ||PA - LU||_1 / (n ||A||_1 eps) < 30 and the pivots equal LAPACK's dgetrf's; the
 *   logdet and the determinant's sign equal dgetrf's (relative 1e-10); the growth equals
 *   max|U| / max|A| of the result;
 * - solve (1 and 13 right-hand sides, several RHS stripes): HPL ratio < 16; solve from the
 *   factors (LU_SOLVE_FACTORED): HPL ratio < 16 and X within 1e-11 max|X| of the solve's (not
 *   bit for bit: the solve takes the late swaps lazily, so its gemms order rows differently);
 * - inverse (LU_INVERT + lu_inverse_perm): ||I - A X||_1 / (n ||A||_1 ||X||_1 eps) < 30;
 * for n in {1, 2, 3, 50, 130}, tiles 1 (n <= 3), 7, 64, n, stripes of one tile, three tiles
 * and n, the panel in chunks of 2 tiles (in core) and 1 (out of core), in core and out of core (cache < 1/4 of the matrix: spills are asserted), with the host
 * peak within cache + lu_workspace_bytes + the stores' overhead + slack;
 * - singular: a zero column z gives OOC_ERR_SINGULAR with info = z + 1 (LAPACK's), a column
 *   whose pivot is tiny relative to its norm the eps message; a zero on a factor's diagonal too;
 * - an executor given by the caller (1 and 3 queues): the same ratios, its buffers all freed;
 * - the strict host executor (not unified, delayed, NaN-poisoned gets), 1 to 3 ring slots, tiles
 *   1/7/64/n, stripes of 1, 2.5 (asked) and n/b tiles, in and out of core: the same ratios;
 * - fault loop: the Nth host allocation fails, N = 1, 2, ... until the solve succeeds: each
 *   failure is OOC_ERR_NOMEM, nothing leaks (tu_ctx_done), the last run is right;
 * - resumed runs (lu.h "Steps and safe points"): a run stopped by after_step after step k and
 *   continued from the same stores with start_step = k + 1 and the state it was handed gives the
 *   uninterrupted run's bits (factors, X, Z, ipiv, growth, ||A||_inf, logdet and sign, the
 *   no-pivot counters), for every k, several chunks per stripe, n not a multiple of the tile,
 *   in and out of core, with and without pivoting.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "exec/exset.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/lu.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)
#define SLACK (64 * 1024)

typedef struct {
  tstore_t *s;
  const double *A;
  double *cn;
  int64_t n, b, have; /* columns [0, have) put */
  int64_t first;      /* the first call's c */
  int calls, bad;     /* calls; those that asked for no new column or beyond n */
} lazy_t;

typedef struct {
  ooc_status_t st;
  int64_t info, spills, peak, budget;
  int64_t kept_pinned; /* g_direct 2: bytes still pinned after lu_run (the caller's pinner) */
  lazy_t lazy;         /* g_lazy: what lu_run asked for */
  lu_stats_t stats;
  double *LU;   /* the store A after the run (n x n) */
  double *X;    /* the store B after the run (n x m), or NULL */
  int64_t *ipiv;
  char err[512];
} outcome_t;

/* The executor given to lu_run (NULL: lu_run makes its own); g_exec_queues > 0: a host
 * executor with that many queues, created per run; strict (g_strict) with g_nslots ring slots
 * (exec.h: not unified, delayed, NaN-poisoned gets: every column must really travel through the
 * slots, the twins and back, in order, as on a GPU). */
static int g_exec_queues, g_strict, g_nslots;
static int64_t g_chunk; /* the panel's chunk width (lu_args_t.chunk; 0: LU_CHUNK) */
/* lu_args_t.nopiv for the runs (t_nopiv) */
static int g_nopiv;
/* lu_args_t.direct for the runs (t_direct); 2: the caller pins the cache with the executor
 * before the run (tcache_pin_new, as a load would) and unpins it after */
static int g_direct;
/* A's tiles put into the cache before the run, as the pipeline's load leaves them (else they
 * are its source's until first read): then the stripe's columns are lent on their way in too
 * (a read lend needs every tile cached) */
static int g_cached;
/* > 0: the run stops after step g_stop_at - 1 (its after_step fails) and a second lu_run
 * continues it from the same stores at start_step g_stop_at (t_resume) */
static int64_t g_stop_at;
/* A's columns put only when lu_run asks for them (lu_args_t.need, t_need): A's store has no
 * source (a tile never put reads as zeros) and its column norms are NaN until then, so a run
 * that took a column, or its norm, before asking computes something else */
static int g_lazy;
/* lu_args_t.swaps (t_rowmap): with LU_SWAPS_WRITER the result LU is read through the run's row
 * map (ts_read_mapped, tile by tile, as the pipeline's writer does); with LU_SWAPS_NONE as the
 * store holds it */
static int g_swaps;

static ooc_status_t lazy_need(void *user, int64_t c) {
  lazy_t *z = user;
  if (z->calls++ == 0) z->first = c;
  if (c <= z->have || c > z->n) z->bad++;
  int64_t end = ooc_min64(z->n, ooc_cdiv64(c, z->b) * z->b);
  for (int64_t tj = z->have / z->b; tj * z->b < end; tj++)
    OOC_TRY(ts_put_col(z->s, tj, z->A + tj * z->b * z->n, z->n));
  for (int64_t j = z->have; j < end; j++) {
    z->cn[j] = 0;
    for (int64_t i = 0; i < z->n; i++) z->cn[j] += fabs(z->A[i + j * z->n]);
  }
  if (end > z->have) z->have = end;
  return OOC_OK;
}

typedef struct {
  lu_state_t s;    /* the state after_step was handed at the stop, rowsum copied */
  double *rowsum;
  int64_t n;
  int hit;
} stop_t;

/* A checkpoint only where the run stops: the other steps prefetch as an unjournaled run does. */
static int stop_due(void *user, int64_t step, int64_t nsteps, int before) {
  (void)user;
  (void)nsteps;
  (void)before;
  return step + 1 == g_stop_at;
}

static ooc_status_t stop_after(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv,
                               const lu_state_t *s) {
  stop_t *k = user;
  (void)nsteps;
  (void)ipiv;
  if (step + 1 != g_stop_at) return OOC_OK;
  k->s = *s;
  memcpy(k->rowsum, s->rowsum, (size_t)k->n * sizeof(double));
  k->s.rowsum = k->rowsum;
  k->hit = 1;
  return OOC_ERR_INTERRUPTED; /* the run stops here, the stores as they are */
}

/* The store in the result's row order, as the pipeline's writer gets it: the map's rows moved
 * into place in the background (ts_permute_start) while the tile rows above its first moved row
 * are read, then the rest after the join. */
static double *read_mapped(tstore_t *ts, const ts_rowmap_t *m, int64_t n) {
  part_t p = ts_rows(ts);
  double *R = malloc((size_t)(n * n + 1) * sizeof(double));
  ts_permute_t mv;
  CU_ASSERT_FATAL(ts_permute_start(ts, m, &mv) == OOC_OK);
  CU_ASSERT(mv.first < n);
  for (int pass = 0; pass < 2; pass++) {
    if (pass) ts_permute_join(&mv);
    for (int64_t ti = 0; ti < p.count; ti++) {
      int64_t above = part_start(p, ti) + part_len(p, ti) <= mv.first;
      if (pass == above) continue; /* above first: read meanwhile; the rest after the join */
      for (int64_t tj = 0; tj < p.count; tj++)
        CU_ASSERT(ts_read(ts, ti, tj, R + part_start(p, ti) + part_start(p, tj) * n, n) ==
                  OOC_OK);
    }
  }
  ts_permute_join(&mv); /* (a second join does nothing) */
  return R;
}

/* One lu_run of `job` on A [B] with tile b, stripe W, cache cap; ipiv_in for SOLVE_FACTORED.
 * fault_at > 0: the fault_at-th host allocation fails (once). */
static outcome_t run(const ooc_ops_t *ops, int job, const double *A, int64_t n, const double *B,
                     int64_t m, int64_t b, int64_t W, int64_t cap, const int64_t *ipiv_in,
                     int64_t fault_at) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, tu_mem_read, NULL, NULL}, srcb = {&mb, tu_mem_read, NULL, NULL};
  tu_spill_t sla = {ctx, "luA", NULL, 0}, slb = {ctx, "luB", NULL, 0};
  ooc_spill_ops_t spa = {&sla, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  spb = {&slb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  int64_t mb_cols = job == LU_INVERT ? n : m;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, g_lazy ? NULL : &srca, &spa, &sa) == OOC_OK);
  if (job != LU_FACTOR)
    CU_ASSERT_FATAL(tstore_create(ctx, cache, n, mb_cols, b, job == LU_INVERT ? NULL : &srcb,
                                  &spb, &sb) == OOC_OK);
  for (int64_t tj = 0; g_cached && tj < ts_cols(sa).count; tj++)
    CU_ASSERT_FATAL(ts_put_col(sa, tj, A + tj * b * n, n) == OOC_OK);
  r.budget = cap + lu_workspace_bytes(n, b, W, mb_cols) + tstore_overhead_bytes(n, n, b) +
             (sb ? tstore_overhead_bytes(n, mb_cols, b) : 0) + SLACK + 8 * n;
  if (g_strict) /* the ring's other slots and the device twins of all of them (n x b each) */
    r.budget += 2 * 8 * LU_SLOTS * n * b + ex_host_bytes(g_exec_queues) + SLACK;
  double *cn = calloc((size_t)n + 1, sizeof *cn);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) cn[j] += fabs(A[i + j * n]);
  if (g_lazy)
    for (int64_t j = 0; j < n; j++) cn[j] = NAN;
  r.lazy = (lazy_t){.s = sa, .A = A, .cn = cn, .n = n, .b = b};
  r.ipiv = malloc((size_t)(n + 1) * sizeof *r.ipiv);
  if (ipiv_in) memcpy(r.ipiv, ipiv_in, (size_t)n * sizeof *r.ipiv);
  ts_rowmap_t rm = {0};
  lu_args_t args = {.A = sa, .B = sb, .stripe = W, .ops = ops, .job = job, .colnorm = cn,
                    .ipiv = r.ipiv, .chunk = g_chunk, .nopiv = g_nopiv,
                    .direct = g_direct > 0, .swaps = g_swaps, .rowmap = &rm};
  if (g_lazy) {
    args.need = lazy_need;
    args.need_user = &r.lazy;
  }
  ooc_exec_t *ex = NULL;
  if (g_exec_queues > 0) {
    ooc_status_t xs = g_strict ? ex_host_create_strict(ctx, ops, g_exec_queues, 0, 2, &ex)
                               : ex_host_create(ctx, ops, g_exec_queues, 0, &ex);
    CU_ASSERT_FATAL(xs == OOC_OK);
    args.exec = ex;
    args.nslots = g_nslots;
    if (g_direct == 2) {
      tcache_set_pin(cache, ex_pin_cb, ex_unpin_cb, ex);
      tcache_pin_new(cache, 1);
    }
  }
  if (fault_at > 0) ooc_fault_arm(ctx, OOC_FAULT_ALLOC, fault_at, 0, 0);
  stop_t stop = {.n = n, .rowsum = malloc((size_t)(n + 1) * sizeof(double))};
  if (g_stop_at > 0) {
    args.step_due = stop_due;
    args.after_step = stop_after;
    args.step_user = &stop;
  }
  r.st = lu_run(ctx, &args, &r.stats, &r.info);
  if (g_stop_at > 0) { /* as a resumed pipeline run: the stores, ipiv and the state it saw */
    CU_ASSERT(r.st == OOC_ERR_INTERRUPTED && stop.hit);
    args.start_step = g_stop_at;
    args.state0 = &stop.s;
    args.step_due = NULL;
    args.after_step = NULL;
    r.st = lu_run(ctx, &args, &r.stats, &r.info);
  }
  free(stop.rowsum);
  if (ex && g_direct == 2) { /* lu_run kept the pinner it found and what it pinned */
    CU_ASSERT(tcache_pin_user(cache) == ex);
    tcache_pin_stats(cache, &r.kept_pinned, NULL);
    tcache_set_pin(cache, NULL, NULL, NULL);
  }
  if (ex) {
    CU_ASSERT_EQUAL(ex->dev_bytes, 0); /* lu_run freed what it allocated on the executor */
    CU_ASSERT(ex->stats.ops > 0);      /* and ran its operations there */
    CU_ASSERT_EQUAL(ex->stats.registered, 0); /* every lent tile it pinned is unpinned */
    ex_destroy(ex);
  }
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 0, 0, 0);
  snprintf(r.err, sizeof r.err, "%s", ooc_ctx_error(ctx));
  r.peak = ooc_ctx_host_peak(ctx);
  r.spills = ts_stats(sa)->spills + (sb ? ts_stats(sb)->spills : 0);
  if (r.st == OOC_OK) {
    r.LU = rm.from ? read_mapped(sa, &rm, n) : tu_read_store(sa, n);
    if (sb) r.X = tu_read_store(sb, n);
  }
  CU_ASSERT(!rm.from == !r.stats.swaps_left); /* a map exactly when the swaps were left */
  ts_rowmap_free(ctx, &rm);
  tstore_destroy(sa);
  tstore_destroy(sb);
  tcache_destroy(cache);
  scratch_close(sla.s);
  scratch_close(slb.s);
  free(cn);
  tu_ctx_done(ctx);
  return r;
}

static void done(outcome_t *r) {
  free(r->LU);
  free(r->X);
  free(r->ipiv);
}

/* Two runs' results bit for bit: the factors, the pivots and mx columns of X (0: none). */
static int same_bits(const outcome_t *a, const outcome_t *b, int64_t n, int64_t mx) {
  return !memcmp(a->LU, b->LU, (size_t)(n * n) * sizeof(double)) &&
         !memcmp(a->ipiv, b->ipiv, (size_t)n * sizeof(int64_t)) &&
         (!mx || !memcmp(a->X, b->X, (size_t)(n * mx) * sizeof(double)));
}

static int g_logged;
#define LOG(...)                                                                                   \
  do {                                                                                             \
    if (g_logged++ < 30) fprintf(stderr, __VA_ARGS__);                                             \
  } while (0)

/* ||PA - LU||_1 / (n ||A||_1 eps) (LAPACK dget01). */
static double factor_ratio(int64_t n, const double *A, const double *LU, const int64_t *ipiv) {
  double *PA = malloc((size_t)(n * n + 1) * sizeof *PA);
  memcpy(PA, A, (size_t)(n * n) * sizeof *PA);
  for (int64_t k = 0; k < n; k++)
    if (ipiv[k] != k)
      for (int64_t j = 0; j < n; j++) {
        double t = PA[k + j * n];
        PA[k + j * n] = PA[ipiv[k] + j * n];
        PA[ipiv[k] + j * n] = t;
      }
  double worst = 0;
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = 0; /* (LU)[i, j] = sum_k L[i, k] U[k, j], k <= min(i, j) */
      for (int64_t k = 0; k <= (i < j ? i : j); k++)
        v += (k == i ? 1.0 : LU[i + k * n]) * LU[k + j * n];
      s += fabs(PA[i + j * n] - v);
    }
    worst = s > worst || isnan(s) ? s : worst;
  }
  free(PA);
  double an = tu_norm1(n, A);
  return n ? worst / (n * an * EPS) : 0;
}

/* LAPACK's pivots, logdet and sign. */
static lapack_int lapack_lu(const double *A, int64_t n, int64_t *ipiv, double *logdet, int *sign) {
  double *F = malloc((size_t)(n * n + 1) * sizeof *F);
  lapack_int *p = malloc((size_t)(n + 1) * sizeof *p);
  memcpy(F, A, (size_t)(n * n) * sizeof *F);
  lapack_int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, F,
                                   (lapack_int)n, p);
  double s = 0;
  int sg = 1;
  for (int64_t j = 0; j < n; j++) {
    ipiv[j] = p[j] - 1;
    s += log(fabs(F[j + j * n]));
    if (F[j + j * n] < 0) sg = -sg;
    if (ipiv[j] != j) sg = -sg;
  }
  *logdet = s;
  *sign = sg;
  free(F);
  free(p);
  return info;
}

static const ooc_ops_t *OPS[2];
static double g_maxdiff; /* max |X_factored - X_solve| / max |X_solve| seen */

static void full_case(const ooc_ops_t *ops, const double *A, int64_t n, int64_t b, int64_t W,
                      int ooc) {
  int64_t big = (int64_t)1 << 40;
  /* out of core: the cache holds under a quarter of A (but at least a few tiles) */
  int64_t cap = ooc ? 8 * n * n / 5 : big;
  char what[160];
  snprintf(what, sizeof what, "%s n=%lld b=%lld W=%lld %s", ops->name, (long long)n, (long long)b,
           (long long)W, ooc ? "ooc" : "in core");
  /* factor */
  outcome_t f = run(ops, LU_FACTOR, A, n, NULL, 0, b, W, cap, NULL, 0);
  CU_ASSERT_EQUAL(f.st, OOC_OK);
  if (f.st != OOC_OK) {
    LOG("\n  %s: factor %s\n", what, f.err);
    done(&f);
    return;
  }
  double fr = factor_ratio(n, A, f.LU, f.ipiv);
  CU_ASSERT(fr < 30);
  if (!(fr < 30)) LOG("\n  %s: factor ratio %g\n", what, fr);
  int64_t *lp = malloc((size_t)(n + 1) * sizeof *lp);
  double ld;
  int sg;
  CU_ASSERT_FATAL(lapack_lu(A, n, lp, &ld, &sg) == 0);
  int same = 1;
  for (int64_t i = 0; i < n; i++) same &= lp[i] == f.ipiv[i];
  CU_ASSERT(same);
  if (!same) LOG("\n  %s: pivots differ from LAPACK's\n", what);
  CU_ASSERT(fabs(f.stats.logdet - ld) <= 1e-10 * fmax(1, fabs(ld)));
  CU_ASSERT_EQUAL(f.stats.sign, sg);
  CU_ASSERT(f.stats.growth >= 1.0 - 1e-12);
  { /* the growth is max|U| / max|A| of the result (the scans of the slots, lu.c) */
    double um = 0, am = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        am = fmax(am, fabs(A[i + j * n]));
        if (i <= j) um = fmax(um, fabs(f.LU[i + j * n]));
      }
    CU_ASSERT(f.stats.growth == um / am);
    if (f.stats.growth != um / am) LOG("\n  %s: growth %.17g, expected %.17g\n", what,
                                       f.stats.growth, um / am);
  }
  CU_ASSERT(f.peak <= f.budget);
  if (!(f.peak <= f.budget)) LOG("\n  %s: peak %lld > budget %lld\n", what, (long long)f.peak,
                                 (long long)f.budget);
  if (ooc && n >= 50) CU_ASSERT(f.spills > 0);
  CU_ASSERT_EQUAL(f.stats.steps, ooc_cdiv64(n, ts_stripe(n, b, W)));
  /* solve, and the same from the factors */
  int64_t ms[] = {1, 13};
  for (int k = 0; k < 2; k++) {
    int64_t m = ms[k];
    double *B = tu_rand_matrix(n, m, 100 + m);
    outcome_t s = run(ops, LU_SOLVE, A, n, B, m, b, W, cap, NULL, 0);
    CU_ASSERT_EQUAL(s.st, OOC_OK);
    if (s.st == OOC_OK) {
      double hr = tu_solve_ratio(n, m, A, s.X, B, EPS);
      CU_ASSERT(hr < 16);
      if (!(hr < 16)) LOG("\n  %s: solve m=%lld HPL ratio %g\n", what, (long long)m, hr);
      CU_ASSERT(s.peak <= s.budget);
      outcome_t g = run(ops, LU_SOLVE_FACTORED, f.LU, n, B, m, b, W, cap, f.ipiv, 0);
      CU_ASSERT_EQUAL(g.st, OOC_OK);
      if (g.st == OOC_OK) { /* the solve takes the factor's late swaps lazily (lu.h), so its
                               * gemms see rows in another order: equal up to rounding */
        double gr = tu_solve_ratio(n, m, A, g.X, B, EPS), dx = 0, xm = 0;
        CU_ASSERT(gr < 16);
        for (int64_t i = 0; i < n * m; i++) {
          dx = fmax(dx, fabs(g.X[i] - s.X[i]));
          xm = fmax(xm, fabs(s.X[i]));
        }
        CU_ASSERT(dx <= 1e-11 * xm);
        if (!(dx <= 1e-11 * xm)) LOG("\n  %s: factored solve differs by %g of %g\n", what, dx, xm);
        g_maxdiff = fmax(g_maxdiff, xm > 0 ? dx / xm : dx);
      }
      done(&g);
    } else {
      LOG("\n  %s: solve %s\n", what, s.err);
    }
    done(&s);
    free(B);
  }
  /* inverse */
  outcome_t v = run(ops, LU_INVERT, A, n, NULL, 0, b, W, cap, NULL, 0);
  CU_ASSERT_EQUAL(v.st, OOC_OK);
  if (v.st == OOC_OK) {
    int64_t *perm = malloc((size_t)(n + 1) * sizeof *perm);
    lu_inverse_perm(n, v.ipiv, perm);
    double *X = malloc((size_t)(n * n + 1) * sizeof *X);
    for (int64_t c = 0; c < n; c++)
      memcpy(X + c * n, v.X + perm[c] * n, (size_t)n * sizeof *X);
    double ir = tu_inverse_ratio(n, A, X, EPS);
    CU_ASSERT(ir < 30);
    if (!(ir < 30)) LOG("\n  %s: inverse ratio %g\n", what, ir);
    CU_ASSERT(v.peak <= v.budget);
    free(X);
    free(perm);
  }
  done(&v);
  done(&f);
  free(lp);
}

static void t_ratios(void) {
  static const int64_t sizes[] = {1, 2, 3, 50, 130};
  int cases = 0;
  for (int o = 0; o < 2; o++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      int64_t n = sizes[si];
      double *A = tu_rand_matrix(n, n, (uint64_t)n);
      int64_t tiles[] = {1, 7, 64, n};
      for (int t = 0; t < 4; t++) {
        int64_t b = ooc_min64(tiles[t], n);
        if (tiles[t] == 1 && n > 3) continue; /* n^2 tiny tiles through the executor: slow */
        if (t > 0 && b == ooc_min64(tiles[t - 1], n)) continue;
        int64_t Ws[] = {b, 3 * b, n};
        for (int w = 0; w < 3; w++) {
          if (w > 0 && ts_stripe(n, b, Ws[w]) == ts_stripe(n, b, Ws[w - 1])) continue;
          for (int ooc = 0; ooc < 2; ooc++) {
            if (ooc && n < 50) continue;
            g_chunk = ooc ? b : 2 * b; /* the panel in chunks of 1 and 2 tiles */
            full_case(OPS[o], A, n, b, Ws[w], ooc);
            cases++;
          }
        }
      }
      free(A);
    }
  g_chunk = 0;
  printf("[%d configurations: factor, 2 solves, 2 factored solves, inverse each; factored solves "
         "within %.2g of the solves] ", cases, g_maxdiff);
}

/* No pivoting (lu_args_t.nopiv): on diagonally dominant matrices (where it is stable) the
 * factors equal ooc_getrf_nopiv's on the whole matrix (within rounding: blocking differs), ipiv
 * is the identity, the solve's HPL ratio < 16 and the factored solve gives the same X, for tiles
 * 1, 7, 64, n, stripes of one tile and n, in and out of core; the smallest pivot ratio is reported
 * and no pivot counts as tiny. A zero leading entry (fine for pivoted LU) stops it with info 1. */
static void t_nopiv(void) {
  static const int64_t sizes[] = {3, 50, 130};
  int cases = 0;
  g_nopiv = 1;
  for (int o = 0; o < 2; o++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      int64_t n = sizes[si];
      double *A = tu_rand_matrix(n, n, 7 + (uint64_t)n);
      for (int64_t j = 0; j < n; j++) A[j + j * n] += n;
      double *F = malloc((size_t)(n * n) * sizeof *F);
      memcpy(F, A, (size_t)(n * n) * sizeof *F);
      CU_ASSERT(ooc_getrf_nopiv(OPS[o], n, n, F, n) == 0);
      double *B = tu_rand_matrix(n, 3, 5);
      int64_t tiles[] = {1, 7, 64, n};
      for (int t = 0; t < 4; t++) {
        int64_t b = ooc_min64(tiles[t], n);
        if (tiles[t] == 1 && n > 3) continue;
        int64_t Ws[] = {b, n};
        for (int w = 0; w < 2; w++)
          for (int ooc = 0; ooc < 2; ooc++) {
            if (ooc && n < 50) continue;
            int64_t cap = ooc ? 8 * n * n / 5 : (int64_t)1 << 40;
            outcome_t f = run(OPS[o], LU_FACTOR, A, n, NULL, 0, b, Ws[w], cap, NULL, 0);
            CU_ASSERT_EQUAL_FATAL(f.st, OOC_OK);
            int ident = 1;
            double d = 0, fm = 0;
            for (int64_t i = 0; i < n; i++) ident &= f.ipiv[i] == i;
            for (int64_t i = 0; i < n * n; i++) {
              d = fmax(d, fabs(f.LU[i] - F[i]));
              fm = fmax(fm, fabs(F[i]));
            }
            CU_ASSERT(ident);
            CU_ASSERT(d <= 64 * n * DBL_EPSILON * fm);
            CU_ASSERT(factor_ratio(n, A, f.LU, f.ipiv) < 30);
            CU_ASSERT(f.stats.min_pivot > 0 && f.stats.min_pivot < INFINITY);
            CU_ASSERT_EQUAL(f.stats.tiny, 0);
            if (ooc) CU_ASSERT(f.spills > 0);
            outcome_t s = run(OPS[o], LU_SOLVE, A, n, B, 3, b, Ws[w], cap, NULL, 0);
            CU_ASSERT_EQUAL_FATAL(s.st, OOC_OK);
            CU_ASSERT(tu_solve_ratio(n, 3, A, s.X, B, EPS) < 16);
            outcome_t g = run(OPS[o], LU_SOLVE_FACTORED, f.LU, n, B, 3, b, Ws[w], cap, f.ipiv, 0);
            CU_ASSERT_EQUAL_FATAL(g.st, OOC_OK);
            CU_ASSERT(memcmp(g.X, s.X, (size_t)(n * 3) * sizeof(double)) == 0);
            done(&f), done(&s), done(&g);
            cases++;
          }
      }
      A[0] = 0; /* partial pivoting would swap; without it the first pivot is zero */
      outcome_t z = run(OPS[o], LU_FACTOR, A, n, NULL, 0, ooc_min64(7, n), n, (int64_t)1 << 40,
                        NULL, 0);
      CU_ASSERT_EQUAL(z.st, OOC_ERR_SINGULAR);
      CU_ASSERT_EQUAL(z.info, 1);
      CU_ASSERT(strstr(z.err, "without pivoting") != NULL);
      done(&z);
      free(A), free(F), free(B);
    }
  g_nopiv = 0;
  printf("[%d configurations: factor, solve, factored solve each] ", cases);
}

static void t_singular(void) {
  for (int o = 0; o < 2; o++) {
    g_chunk = o ? 7 : 0; /* the zero columns in a later chunk of the panel, or in its only one */
    int64_t n = 40, zs[] = {0, 17, 39};
    for (int k = 0; k < 3; k++) {
      double *A = tu_rand_matrix(n, n, 5);
      for (int64_t i = 0; i < n; i++) A[i + zs[k] * n] = 0;
      outcome_t r = run(OPS[o], LU_FACTOR, A, n, NULL, 0, 7, 14, (int64_t)1 << 30, NULL, 0);
      CU_ASSERT_EQUAL(r.st, OOC_ERR_SINGULAR);
      CU_ASSERT_EQUAL(r.info, zs[k] + 1);
      CU_ASSERT(strstr(r.err, "exactly zero") != NULL);
      if (r.info != zs[k] + 1) LOG("\n  zero column %lld: info %lld %s\n", (long long)zs[k],
                                   (long long)r.info, r.err);
      done(&r);
      /* column 17 a combination of two others up to rounding: a tiny pivot, not an exact zero */
      if (k == 1) {
        for (int64_t i = 0; i < n; i++) A[i + 17 * n] = A[i + 3 * n] / 3.0 + A[i + 9 * n] / 7.0;
        outcome_t s = run(OPS[o], LU_SOLVE, A, n, A, 1, 7, 14, (int64_t)1 << 30, NULL, 0);
        CU_ASSERT_EQUAL(s.st, OOC_ERR_SINGULAR);
        CU_ASSERT(s.info >= 1 && s.info <= n);
        if (s.st != OOC_ERR_SINGULAR) LOG("\n  dependent column: %s\n", s.err);
        done(&s);
      }
      free(A);
    }
    /* a factor file with a zero on U's diagonal */
    int64_t n2 = 20;
    double *F = tu_rand_matrix(n2, n2, 8), *B = tu_rand_matrix(n2, 2, 9);
    int64_t *ip = malloc((size_t)n2 * sizeof *ip);
    for (int64_t i = 0; i < n2; i++) ip[i] = i;
    F[11 + 11 * n2] = 0;
    outcome_t r = run(OPS[o], LU_SOLVE_FACTORED, F, n2, B, 2, 7, 7, (int64_t)1 << 30, ip, 0);
    CU_ASSERT_EQUAL(r.st, OOC_ERR_SINGULAR);
    CU_ASSERT_EQUAL(r.info, 12);
    done(&r);
    ip[3] = 1; /* a pivot above its row: not a factor LAPACK makes */
    F[11 + 11 * n2] = 1;
    r = run(OPS[o], LU_SOLVE_FACTORED, F, n2, B, 2, 7, 7, (int64_t)1 << 30, ip, 0);
    CU_ASSERT_EQUAL(r.st, OOC_ERR_FORMAT);
    done(&r);
    free(ip);
    free(F);
    free(B);
  }
  g_chunk = 0;
}

/* An executor given by the caller (as the pipeline will pass the CUDA one): one queue (copies and
 * products in one order) and three; the same ratios. */
static void t_given_exec(void) {
  int64_t n = 90;
  double *A = tu_rand_matrix(n, n, 21);
  for (int q = 1; q <= 3; q += 2) {
    g_exec_queues = q;
    full_case(OPS[0], A, n, 16, 32, 1);
    full_case(OPS[1], A, n, 7, 7, 0);
  }
  g_exec_queues = 0;
  free(A);
}

/* The strict host executor (as the GPU runs it: K pinned n x b slots, their device twins, copies
 * on a second queue, the panel's chunks back on a third or the second):
 * tiles 1, 7, 64 and n, stripes of one tile, of 2.5 tiles asked (two run)
 * and n, 1 to 3 ring slots, in core and out of core, 13 right-hand sides over stripes narrower
 * than them; the same ratios and pivots as the CPU path. */
static void t_strict(void) {
  static const int64_t sizes[] = {3, 50, 130};
  int cases = 0;
  g_exec_queues = 2;
  g_strict = 1;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int64_t n = sizes[si];
    double *A = tu_rand_matrix(n, n, (uint64_t)n + 7);
    int64_t tiles[] = {1, 7, 64, n};
    for (int t = 0; t < 4; t++) {
      int64_t b = ooc_min64(tiles[t], n);
      if (tiles[t] == 1 && n > 3) continue;
      if (t > 0 && b == ooc_min64(tiles[t - 1], n)) continue;
      int64_t Ws[] = {b, 5 * b / 2, n};
      for (int w = 0; w < 3; w++) {
        if (w > 0 && ts_stripe(n, b, Ws[w]) == ts_stripe(n, b, Ws[w - 1])) continue;
        g_nslots = 1 + (int)((t + w) % 3);
        g_chunk = (1 + w % 2) * b; /* panel chunks of 1 or 2 tiles: their gets overlap */
        g_exec_queues = 2 + (int)((si + t + w) % 2); /* 3: the chunks' gets on a queue of their own */
        full_case(OPS[(t + w) % 2], A, n, b, Ws[w], n >= 50 && w != 1);
        cases++;
      }
    }
    free(A);
  }
  g_exec_queues = g_strict = g_nslots = 0;
  g_chunk = 0;
  printf("[%d configurations on the strict executor] ", cases);
}

/* A column slot large enough (n b >= 2^22 elements) that the growth's scans run on threads:
 * growth and pivots as the small cases assert them. */
/* Columns as the factor needs them (lu_args_t.need): A's store starts empty and without a
 * source, its column norms NaN, and lazy_need puts the columns asked for; every job gives the
 * same bits as with A all there, on lu_run's own executor and on the strict one (two queues
 * through the ring, three with the stripe's columns lent in deferred batches), in and out of
 * core, one step or several. The columns are asked for in order, before all of A when the run
 * has several steps, and all of them in the end. */
static void t_need(void) {
  int64_t n = 130, m = 13, b = 7;
  double *A = tu_rand_matrix(n, n, 41), *B = tu_rand_matrix(n, m, 42);
  static const int jobs[] = {LU_FACTOR, LU_SOLVE, LU_INVERT};
  int cases = 0;
  for (int ex = 0; ex < 3; ex++)
    for (int ooc = 0; ooc < 2; ooc++)
      for (int wi = 0; wi < 3; wi++)
        for (int k = 0; k < 3; k++) {
          int64_t W = wi == 0 ? b : wi == 1 ? 5 * b : n, mc = jobs[k] == LU_INVERT ? n : m;
          int64_t cap = ooc ? 8 * n * n / 5 : (int64_t)1 << 40;
          g_exec_queues = ex == 0 ? 0 : ex + 1;
          g_strict = ex > 0;
          g_direct = ex == 2 ? 2 : 0;
          g_chunk = b;
          outcome_t e = run(OPS[0], jobs[k], A, n, B, m, b, W, cap, NULL, 0);
          g_lazy = 1;
          outcome_t z = run(OPS[0], jobs[k], A, n, B, m, b, W, cap, NULL, 0);
          g_lazy = 0;
          CU_ASSERT_FATAL(e.st == OOC_OK && z.st == OOC_OK);
          CU_ASSERT(same_bits(&e, &z, n, jobs[k] == LU_FACTOR ? 0 : mc));
          CU_ASSERT(z.lazy.bad == 0 && z.lazy.have == n && z.lazy.calls >= 1);
          if (W < n) CU_ASSERT(z.lazy.calls > 1 && z.lazy.first < n);
          CU_ASSERT_EQUAL(e.stats.t_need, 0);
          cases++;
          done(&e);
          done(&z);
        }
  g_exec_queues = g_strict = g_direct = 0;
  g_chunk = 0;
  printf("[%d cases, each bit-identical to the run with A all there] ", cases);
  free(A);
  free(B);
}

/* Direct moves (lu.h): on the strict executor every job gives the same bits with and without
 * lending, in and out of core, tiles 7 and 64, one step or several, A read from its source or
 * already in the cache (g_cached: then the stripe's trips in and out are deferred batches,
 * lu.c; three queues, chunks of one tile). In core the columns move in place (bytes_direct > 0, the tiles pinned
 * through the executor, every one unpinned at the end: run() checks stats.registered); out of
 * core the spilled ones go through the slot. */
static void t_direct(void) {
  int64_t n = 130, m = 13;
  double *A = tu_rand_matrix(n, n, 31), *B = tu_rand_matrix(n, m, 32);
  static const int jobs[] = {LU_FACTOR, LU_SOLVE, LU_INVERT};
  int cases = 0;
  g_strict = 1;
  for (g_cached = 0; g_cached < 2; g_cached++)
  for (int64_t b = 7; b <= 64; b += 57)
    for (int ooc = 0; ooc < 2; ooc++)
      for (int wi = 0; wi < 3; wi++)
        for (int k = 0; k < 3; k++) {
          /* one tile, five (several chunks a stripe, several steps: the prefetch into a chunk's
           * region while the device may still read it), all */
          int64_t W = wi == 0 ? b : wi == 1 ? 5 * b : n;
          if (W > n) continue;
          int job = jobs[k];
          int64_t cap = ooc ? 8 * n * n / 5 : (int64_t)1 << 40, mc = job == LU_INVERT ? n : m;
          g_exec_queues = 2 + g_cached;
          /* chunks of one tile: many trips in and out; in core also the default chunk (wider
           * than the matrix: the batches' size is bounded by the stripe) */
          g_chunk = g_cached && (ooc || k != 1 || wi != 0) ? b : 0;
          g_direct = 0;
          outcome_t c = run(OPS[0], job, A, n, B, m, b, W, cap, NULL, 0);
          g_direct = 1;
          outcome_t d = run(OPS[0], job, A, n, B, m, b, W, cap, NULL, 0);
          g_direct = 2;
          outcome_t e = run(OPS[0], job, A, n, B, m, b, W, cap, NULL, 0);
          g_direct = 0;
          CU_ASSERT_FATAL(c.st == OOC_OK && d.st == OOC_OK && e.st == OOC_OK);
          /* the deferred batches' bookkeeping counted too (lu_workspace_bytes) */
          CU_ASSERT(c.peak <= c.budget && d.peak <= d.budget && e.peak <= e.budget);
          CU_ASSERT(same_bits(&c, &d, n, job == LU_FACTOR ? 0 : mc));
          CU_ASSERT(same_bits(&c, &e, n, job == LU_FACTOR ? 0 : mc));
          CU_ASSERT(e.kept_pinned > 0);
          /* (out of core with deferred batches, what is lent at once, so what the lend cap
           * refuses, depends on when the batches' copies are seen done) */
          if (!(ooc && g_cached)) CU_ASSERT_EQUAL(e.stats.bytes_direct, d.stats.bytes_direct);
          CU_ASSERT_EQUAL(c.stats.bytes_direct, 0);
          /* out of core, lent tiles are not evicted, so what is evicted, and so which columns
           * go through the slot, differs between lending and not; the bits do not (above) */
          if (!ooc) CU_ASSERT_EQUAL(c.stats.bytes_streamed, d.stats.bytes_streamed);
          if (!ooc) CU_ASSERT(d.stats.bytes_direct > 0 && d.stats.bytes_pinned > 0);
          CU_ASSERT(d.stats.bytes_direct <= d.stats.bytes_streamed);
          if (!g_cached) /* the stripe's columns come from A's source through the slot */
            CU_ASSERT(d.stats.bytes_direct < d.stats.bytes_streamed);
          cases++;
          done(&c);
          done(&d);
          done(&e);
        }
  g_exec_queues = g_strict = g_cached = 0;
  g_chunk = 0;
  printf("[%d cases, each bit-identical with and without lending, pinned first or not] ", cases);
  free(A);
  free(B);
}

static void t_big_scan(void) {
  int64_t n = 2048;
  double *A = tu_rand_matrix(n, n, 77);
  outcome_t f = run(OPS[0], LU_FACTOR, A, n, NULL, 0, n, n, (int64_t)1 << 40, NULL, 0);
  CU_ASSERT_EQUAL_FATAL(f.st, OOC_OK);
  double um = 0, am = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      am = fmax(am, fabs(A[i + j * n]));
      if (i <= j) um = fmax(um, fabs(f.LU[i + j * n]));
    }
  CU_ASSERT(f.stats.growth == um / am);
  int64_t *lp = malloc((size_t)n * sizeof *lp);
  double ld;
  int sg;
  CU_ASSERT_FATAL(lapack_lu(A, n, lp, &ld, &sg) == 0);
  CU_ASSERT(memcmp(lp, f.ipiv, (size_t)n * sizeof *lp) == 0);
  double ninf = 0; /* ||A||_inf from the row sums the scan adds up */
  for (int64_t i = 0; i < n; i++) {
    double r = 0;
    for (int64_t j = 0; j < n; j++) r += fabs(A[i + j * n]);
    ninf = fmax(ninf, r);
  }
  CU_ASSERT(fabs(f.stats.norm_inf - ninf) <= 1e-12 * ninf);
  printf("[n = %lld, growth %.3f] ", (long long)n, f.stats.growth);
  free(lp);
  done(&f);
  free(A);
}

static void t_fault(void) {
  int64_t n = 60, b = 8, W = 16, m = 3;
  double *A = tu_rand_matrix(n, n, 11), *B = tu_rand_matrix(n, m, 12);
  int64_t cap = 8 * n * n / 5;
  int64_t at;
  int failures = 0;
  for (at = 1; at < 2000; at++) {
    outcome_t r = run(OPS[0], LU_SOLVE, A, n, B, m, b, W, cap, NULL, at);
    if (r.st == OOC_OK) {
      CU_ASSERT(tu_solve_ratio(n, m, A, r.X, B, EPS) < 16);
      done(&r);
      break;
    }
    failures++;
    CU_ASSERT_EQUAL(r.st, OOC_ERR_NOMEM);
    if (r.st != OOC_ERR_NOMEM) LOG("\n  fault at %lld: %s %s\n", (long long)at,
                                   ooc_status_str(r.st), r.err);
    done(&r);
  }
  CU_ASSERT(at < 2000);
  CU_ASSERT(failures > 5);
  printf("[%d injected allocation failures, then success] ", failures);
  free(A);
  free(B);
}

/* One configuration stopped after every step in turn and resumed: bit for bit the uninterrupted
 * run (which prefetches the next stripe where the stopped one may not). */
static int resume_case(const double *A, int64_t n, const double *B, int64_t m, int job, int64_t b,
                       int64_t W, int64_t cap) {
  g_stop_at = 0;
  outcome_t ref = run(OPS[0], job, A, n, B, m, b, W, cap, NULL, 0);
  CU_ASSERT_EQUAL_FATAL(ref.st, OOC_OK);
  int64_t steps = lu_steps(job, n, b, W, job == LU_INVERT ? n : m, NULL), cases = 0;
  for (g_stop_at = 1; g_stop_at < steps; g_stop_at++, cases++) {
    outcome_t r = run(OPS[0], job, A, n, B, m, b, W, cap, NULL, 0);
    int64_t mx = job == LU_FACTOR ? 0 : job == LU_INVERT ? n : m;
    int same = r.st == OOC_OK && same_bits(&r, &ref, n, mx) &&
               !memcmp(&r.stats.growth, &ref.stats.growth, sizeof(double)) &&
               !memcmp(&r.stats.norm_inf, &ref.stats.norm_inf, sizeof(double)) &&
               !memcmp(&r.stats.logdet, &ref.stats.logdet, sizeof(double)) &&
               r.stats.sign == ref.stats.sign && r.stats.tiny == ref.stats.tiny &&
               !memcmp(&r.stats.min_pivot, &ref.stats.min_pivot, sizeof(double));
    CU_ASSERT(same);
    if (!same)
      LOG("\n  resumed at step %lld of %lld (job %d, n=%lld b=%lld W=%lld cap=%lld nopiv=%d): "
          "%s\n", (long long)g_stop_at, (long long)steps, job, (long long)n, (long long)b,
          (long long)W, (long long)cap, g_nopiv, r.st == OOC_OK ? "other bits" : r.err);
    done(&r);
  }
  g_stop_at = 0;
  done(&ref);
  return (int)cases;
}

static void t_resume(void) {
  int cases = 0;
  static const int64_t sizes[] = {50, 130};
  for (size_t si = 0; si < 2; si++)
    for (g_nopiv = 0; g_nopiv < 2; g_nopiv++) {
      int64_t n = sizes[si];
      double *A = tu_rand_matrix(n, n, 11 + (uint64_t)n), *B = tu_rand_matrix(n, 13, 5);
      if (g_nopiv)
        for (int64_t j = 0; j < n; j++) A[j + j * n] += n;
      for (int64_t b = 7; b <= 16; b += 9) /* 7 divides neither n, 16 neither */
        for (int ooc = 0; ooc < 2; ooc++) {
          int64_t cap = ooc ? 8 * n * n / 5 : (int64_t)1 << 40;
          g_chunk = b; /* chunks of one tile: several per stripe, done[] = each chunk's end */
          for (int job = LU_FACTOR; job <= LU_INVERT; job++)
            if (job != LU_SOLVE_FACTORED) cases += resume_case(A, n, B, 13, job, b, 3 * b, cap);
        }
      free(A);
      free(B);
    }
  g_nopiv = 0;
  g_chunk = 0;
  printf("[%d runs stopped after a step and resumed, every one bit-identical] ", cases);
}

/* The final swaps left to the writer (lu_args_t.swaps = LU_SWAPS_WRITER): the factor read
 * through the row map is the factor with the swaps made in the store, bit for bit, on the host
 * executor (unified) and the strict one (columns through slots and twins, the last step's
 * left pass folding each column's own step's swaps in), tiles 1, 7, 16 and n, stripes of one
 * tile, three and all, chunks of one tile and the default; a map is left exactly where every
 * tile ends in the cache (out of core the store makes them, as before); LU_SWAPS_NONE leaves
 * the same U and pivots, without a map. An inverse or a solve takes no map. */
static void t_rowmap(void) {
  int cases = 0, mapped = 0;
  static const int64_t sizes[] = {1, 2, 50, 130};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int64_t n = sizes[si];
    double *A = tu_rand_matrix(n, n, 21 + (uint64_t)n), *B = tu_rand_matrix(n, 5, 6);
    static const int64_t tiles[] = {1, 7, 16, 0};
    for (int ti = 0; ti < 4; ti++)
      for (int wi = 0; wi < 3; wi++)
        for (int ex = 0; ex < 2; ex++)
          for (int ooc = 0; ooc < 2; ooc++) {
            int64_t b = tiles[ti] ? ooc_min64(tiles[ti], n) : n;
            int64_t W = wi == 0 ? b : wi == 1 ? 3 * b : n;
            if ((b == 1 && n > 50) || W > n) continue;
            int64_t cap = ooc ? 8 * n * n / 5 : (int64_t)1 << 40;
            g_exec_queues = ex ? 2 : 0;
            g_strict = ex;
            g_nslots = ex ? 2 : 0;
            g_chunk = (wi + ti) % 2 ? b : 0;
            g_swaps = LU_SWAPS_STORE;
            outcome_t s0 = run(OPS[0], LU_FACTOR, A, n, NULL, 0, b, W, cap, NULL, 0);
            g_swaps = LU_SWAPS_WRITER;
            outcome_t s1 = run(OPS[0], LU_FACTOR, A, n, NULL, 0, b, W, cap, NULL, 0);
            g_swaps = LU_SWAPS_NONE;
            outcome_t s2 = run(OPS[0], LU_FACTOR, A, n, NULL, 0, b, W, cap, NULL, 0);
            g_swaps = LU_SWAPS_WRITER;
            outcome_t s3 = run(OPS[0], LU_SOLVE, A, n, B, 5, b, W, cap, NULL, 0);
            g_swaps = LU_SWAPS_STORE;
            CU_ASSERT_FATAL(s0.st == OOC_OK && s1.st == OOC_OK && s2.st == OOC_OK &&
                            s3.st == OOC_OK);
            CU_ASSERT(same_bits(&s0, &s1, n, 0));
            CU_ASSERT(s0.peak <= s0.budget && s1.peak <= s1.budget);
            CU_ASSERT_EQUAL(s0.stats.swaps_left, 0);
            CU_ASSERT_EQUAL(s2.stats.swaps_left, 0);
            CU_ASSERT_EQUAL(s3.stats.swaps_left, 0);
            /* in core every tile ends cached: a map wherever there are earlier stripes, with the
             * default chunks (narrower ones may want more maps than lu.c's rowmap_cap allows) */
            if (!ooc && n > 2 && W < n && !g_chunk) CU_ASSERT(s1.stats.swaps_left);
            if (s1.stats.swaps_left) {
              mapped++;
              CU_ASSERT(s1.stats.rows_mapped > 0);
            }
            /* the same pivots, logdet and U (on and above the diagonal: no later swap moves a
             * row above its own step's end) without the pass */
            CU_ASSERT(!memcmp(s0.ipiv, s2.ipiv, (size_t)n * sizeof(int64_t)));
            CU_ASSERT(s0.stats.logdet == s2.stats.logdet && s0.stats.sign == s2.stats.sign);
            int upper = 1;
            for (int64_t j = 0; j < n; j++)
              for (int64_t i = 0; i <= j; i++) upper &= s0.LU[i + j * n] == s2.LU[i + j * n];
            CU_ASSERT(upper);
            cases++;
            done(&s0);
            done(&s1);
            done(&s2);
            done(&s3);
          }
    free(A);
    free(B);
  }
  g_exec_queues = g_strict = g_nslots = 0;
  g_chunk = 0;
  printf("[%d cases (%d with a map), the factor read through the map bit-identical] ", cases,
         mapped);
}

/* lu_warm on the strict host executor (not unified, so it runs; its operations start late, so
 * a laswp queued with pivots the host does not have yet would apply garbage): OK, the budget
 * back to empty; on a budget too small for it, skipped (OK, nothing allocated); on the host
 * executor (unified) and without one, nothing. */
static void t_warm(void) {
  ooc_ctx_t *ctx = tu_ctx();
  static const int64_t budget[] = {(int64_t)256 << 20, (int64_t)1 << 20};
  for (int k = 0; k < 2; k++) {
    ooc_exec_t *ex = NULL;
    CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 2, budget[k], 2000, &ex) ==
                    OOC_OK);
    CU_ASSERT(lu_warm(ex) == OOC_OK);
    CU_ASSERT(ex->dev_bytes == 0);
    CU_ASSERT(k == 1 || ex->stats.dev_peak > 0); /* it ran where the budget allows */
    CU_ASSERT(k == 0 || ex->stats.dev_peak == 0);
    CU_ASSERT(ex_finish(ex) == OOC_OK);
    ex_destroy(ex);
  }
  ooc_exec_t *hx = NULL;
  CU_ASSERT_FATAL(ex_host_create(ctx, ooc_ops_cpu(), 2, 0, &hx) == OOC_OK);
  CU_ASSERT(lu_warm(hx) == OOC_OK && hx->stats.dev_peak == 0);
  ex_destroy(hx);
  CU_ASSERT(lu_warm(NULL) == OOC_OK);
  tu_ctx_done(ctx);
}

int main(void) {
  OPS[0] = ooc_ops_cpu();
  OPS[1] = ooc_ops_ref();
  static const tu_test_t tests[] = {
      {"factor/solve/inverse ratios, pivots, logdet vs LAPACK, in and out of core", t_ratios},
      {"singular: zero columns (LAPACK's info), tiny pivots, bad factor files", t_singular},
      {"no pivoting: factors, identity ipiv, solves, a zero leading entry", t_nopiv},
      {"an executor given by the caller, 1 and 3 queues", t_given_exec},
      {"the strict host executor: columns through slots, twins and back, 1 to 3 slots", t_strict},
      {"direct moves: lent tiles, bit-identical to the slot path, pinned and unpinned, pinned before the run", t_direct},
      {"columns as the factor needs them (need): bit-identical, asked in order", t_need},
      {"growth and ||A||_inf scanned on threads (a 2048 x 2048 column slot)", t_big_scan},
      {"fault loop: host allocations over an out-of-core LU solve", t_fault},
      {"resumed runs: stopped after every step, continued bit for bit", t_resume},
      {"lu_warm: on a device-like executor, a small budget, a unified one", t_warm},
      {"final swaps left to the writer: the factor through the row map, bit for bit", t_rowmap},
      {NULL, NULL}};
  return tu_run("lu", tests);
}
