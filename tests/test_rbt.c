/*
 * test_rbt.c: the random butterfly solver (src/solvers/rbt.c): U^T A V, LU without pivoting,
 * refinement against the original A, on tile stores with the real scratch store (tu_tmpdir()).
 * - shape: N >= n is a multiple of 2^d bt, bt <= b, fewer than 2^d k rows of padding;
 * - butterflies: rbt_apply_ut / rbt_apply_v against dense U^T and V built from the definition
 *   (U = U_0 ... U_{d-1}, U_l = diag of 2^l blocks [R S; R -S] / sqrt 2), depths 1, 2, 3;
 * - LAPACK's DGE types 1-11 (DLATMS, as dchkge builds them), plus a zero leading entry (needs
 *   pivoting), a tiny leading entry (growth ~1e12 for plain no-pivot LU) and Wilkinson's
 *   growth matrix (2^(n-1) for partial pivoting), for n in {1, 2, 3, 5, 10, 50, 100} and tiles
 *   1 (n <= 10), 7, 64, n, the cpu and ref kernels; n = 300 out of core (cache < 1/4 of the
 *   transformed matrix: scratch writes asserted). Every nonsingular case: OOC_OK with HPL ratio
 *   < 16, or an honest OOC_ERR_ACCURACY / OOC_ERR_SINGULAR with the numbers in its message
 *   (counted, printed; asserted absent for the well-conditioned types 1-4, 10, 11 and the
 *   pivoting / growth matrices); singular types (5-7): OOC_ERR_SINGULAR / ACCURACY, or OOC_OK only
 *   with tiny pivots flagged and a backward error below sqrt(n) eps (NUMERICS.md: the butterfly
 *   mixes a zero column away, so a solution with |X| ~ 1/eps exists). The iterations and the
 *   backward errors before / after are asserted reported (berr < sqrt(n) eps on success,
 *   berr0 >= berr or iters == 0);
 * - reproducibility: the same seed gives the same X bit for bit; another seed other diagonals;
 * - non-convergence: max_iter 1 on type 9 (cond 0.1/eps) fails with OOC_ERR_ACCURACY and the
 *   caller's X untouched, or converges within that step (then X passes);
 * - no memory leaks (tu_ctx_done) on every path.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "oocsolve.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/rbt.h"
#include "latms.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)

typedef struct {
  ooc_status_t st;
  rbt_stats_t s;
  double *X;
  int64_t spills;
  char err[1024];
} outcome_t;

/* g_strict: LU on the strict host executor (exec.h: delayed, NaN-poisoned gets, not unified),
 * so a missing sync in the no-pivot path or the factored solves gives a wrong X;
 * g_fault_at > 0: that host allocation fails (once). */
static int g_strict;
static int64_t g_fault_at;

static outcome_t run(const ooc_ops_t *ops, const double *A, int64_t n, const double *B, int64_t m,
                     int64_t b, int64_t cap, uint64_t seed, int depth, int max_iter) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL};
  tu_spill_t la = {ctx, "rbtA", NULL, 0}, lb = {ctx, "rbtB", NULL, 0};
  ooc_spill_ops_t pa = {&la, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pb = {&lb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  r.X = malloc((size_t)(n * m + 1) * sizeof *r.X);
  for (int64_t i = 0; i < n * m; i++) r.X[i] = -7.0; /* untouched unless it succeeds */
  rbt_args_t a = {.n = n, .m = m, .b = b, .A = &sa, .B = &sb, .depth = depth, .seed = seed,
                  .max_iter = max_iter, .cache = cache, .spill_a = &pa, .spill_b = &pb,
                  .stripe = 0, .ops = ops, .threads = 2, .X = r.X, .ldx = n};
  ooc_exec_t *ex = NULL;
  if (g_strict) {
    CU_ASSERT_FATAL(ex_host_create_strict(ctx, ops, 2, 0, 20, &ex) == OOC_OK);
    a.exec = ex;
    a.stripe = 2 * b; /* several steps, so the earlier columns stream through the ring */
  }
  if (g_fault_at > 0) ooc_fault_arm(ctx, OOC_FAULT_ALLOC, g_fault_at, 0, 0);
  r.st = rbt_solve(ctx, &a, &r.s);
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 0, 0, 0);
  if (ex) {
    CU_ASSERT_EQUAL(ex->dev_bytes, 0);
    ex_destroy(ex);
  }
  snprintf(r.err, sizeof r.err, "%s", ooc_ctx_error(ctx));
  r.spills = la.puts + lb.puts;
  tcache_destroy(cache);
  scratch_close(la.s);
  scratch_close(lb.s);
  tu_ctx_done(ctx);
  return r;
}

/* ---- shape and butterflies ----------------------------------------------------------------- */

static void t_shape(void) {
  static const int64_t ns[] = {1, 2, 3, 5, 13, 50, 100, 300, 4097, 30000};
  static const int64_t bs[] = {1, 7, 64, 2048, 0};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    for (size_t j = 0; j < sizeof bs / sizeof *bs; j++)
      for (int d = 1; d <= 3; d++) {
        int64_t n = ns[i], b = bs[j] ? bs[j] : n, N, bt, g = (int64_t)1 << d;
        rbt_shape(n, b, d, &N, &bt);
        int64_t k = N / (g * bt);
        CU_ASSERT(N >= n && bt >= 1 && bt <= ooc_min64(b, n) && N % (g * bt) == 0);
        CU_ASSERT(N - n < g * k);
      }
  int64_t N, bt;
  rbt_shape(50, 50, 2, &N, &bt); /* one tile: not 4 x 50 */
  CU_ASSERT(N == 52 && bt == 13);
}

/* Dense U (N x N) from the definition, for the diagonals w (depth * N). */
static double *dense_u(int64_t N, int d, const double *w) {
  double *U = calloc((size_t)(N * N), sizeof *U), *T = malloc((size_t)(N * N) * sizeof *T);
  double *Ul = malloc((size_t)(N * N) * sizeof *Ul);
  for (int64_t i = 0; i < N; i++) U[i + i * N] = 1;
  for (int l = 0; l < d; l++) { /* U := U U_l */
    memset(Ul, 0, (size_t)(N * N) * sizeof *Ul);
    int64_t ml = N >> l, h = ml / 2;
    for (int64_t s = 0; s < N; s += ml)
      for (int64_t i = s; i < s + h; i++) {
        double r = w[l * N + i] / sqrt(2.0), q = w[l * N + i + h] / sqrt(2.0);
        Ul[i + i * N] = r, Ul[i + (i + h) * N] = q;
        Ul[i + h + i * N] = r, Ul[i + h + (i + h) * N] = -q;
      }
    for (int64_t j = 0; j < N; j++)
      for (int64_t i = 0; i < N; i++) {
        double acc = 0;
        for (int64_t k = 0; k < N; k++) acc += U[i + k * N] * Ul[k + j * N];
        T[i + j * N] = acc;
      }
    memcpy(U, T, (size_t)(N * N) * sizeof *U);
  }
  free(T);
  free(Ul);
  return U;
}

static void t_butterflies(void) {
  static const int64_t Ns[] = {8, 24, 40};
  for (int d = 1; d <= 3; d++)
    for (size_t c = 0; c < 3; c++) {
      int64_t N = Ns[c];
      double *u = malloc((size_t)(d * N) * sizeof *u), *v = malloc((size_t)(d * N) * sizeof *v);
      rbt_diagonals(42, N, d, u, v);
      int inrange = 1;
      for (int64_t i = 0; i < d * N; i++)
        inrange &= u[i] >= exp(-0.05) && u[i] <= exp(0.05) && v[i] >= exp(-0.05) && v[i] <= exp(0.05);
      CU_ASSERT(inrange);
      CU_ASSERT(u[0] != v[0] && u[0] != u[1]);
      double *U = dense_u(N, d, u), *V = dense_u(N, d, v);
      double *I1 = calloc((size_t)(N * N), sizeof *I1), *I2 = calloc((size_t)(N * N), sizeof *I2);
      for (int64_t i = 0; i < N; i++) I1[i + i * N] = I2[i + i * N] = 1;
      rbt_apply_ut(N, d, u, N, I1, N); /* U^T */
      rbt_apply_v(N, d, v, N, I2, N);  /* V */
      double e1 = 0, e2 = 0;
      for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < N; i++) {
          e1 = fmax(e1, fabs(I1[i + j * N] - U[j + i * N]));
          e2 = fmax(e2, fabs(I2[i + j * N] - V[i + j * N]));
        }
      CU_ASSERT(e1 < 1e-14 && e2 < 1e-14);
      if (!(e1 < 1e-14 && e2 < 1e-14))
        fprintf(stderr, "\n  depth %d N %lld: |U^T - .| %.3g |V - .| %.3g\n", d, (long long)N, e1, e2);
      free(u), free(v), free(U), free(V), free(I1), free(I2);
    }
}

/* A tile store (tile b) as the transform's source, read as job_rbt.c reads the loaded A: any
 * rectangle through ts_read_rect, the bt x bt blocks of the groups straddling the b x b tiles. */
static ooc_status_t store_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               double *dst, int64_t ld) {
  return ts_read_rect(self, r0, c0, nr, nc, dst, ld);
}

/* U^T A_pad V of the transform (store T, N x N) bit for bit: U^T's levels on every column
 * (rbt_apply_ut), then V's on every row (the same formula on the transpose, with v): the order
 * the group passes keep; n_bad the elements that differ. */
static int64_t bits_differ(const double *Ap, int64_t N, int d, const double *u, const double *v,
                           const double *T) {
  double *W = malloc((size_t)(N * N) * sizeof *W), *Wt = malloc((size_t)(N * N) * sizeof *Wt);
  memcpy(W, Ap, (size_t)(N * N) * sizeof *W);
  rbt_apply_ut(N, d, u, N, W, N);
  for (int64_t j = 0; j < N; j++)
    for (int64_t i = 0; i < N; i++) Wt[j + i * N] = W[i + j * N];
  rbt_apply_ut(N, d, v, N, Wt, N);
  int64_t bad = 0;
  for (int64_t j = 0; j < N; j++)
    for (int64_t i = 0; i < N; i++) bad += memcmp(&Wt[j + i * N], &T[i + j * N], sizeof *T) != 0;
  free(W), free(Wt);
  return bad;
}

/* The tile-group transform against its definition: the store rbt_transform_store fills equals
 * U^T A_pad V formed densely (A_pad = [A 0; 0 max|a_ij| I], U and V from dense_u), its column
 * norms are that matrix's, its row sums A's; shapes with padding and without, several groups,
 * depths 1-3, one group of one tile. And bit for bit: the store is exactly the levels applied
 * in the definition's order (bits_differ), and the same when A comes from a tile store of tile b
 * (bt < b: the group's blocks straddle its tiles, n not a multiple of b, padding) whose cache
 * holds a third of it (spilled tiles, read whole) as job_rbt.c's loaded A does: a straddled read
 * that took wrong rows or columns, or read outside the rectangle, changes the bits; n = 401 with
 * tile 400 pads with max|a_ij| found on the threads (tiles of 400^2: amax's parallel path). */
static void t_transform(void) {
  static const int64_t cases[][3] = {{13, 2, 2}, {50, 7, 2}, {50, 50, 2}, {37, 5, 3},
                                     {64, 8, 1}, {64, 4, 2}, {1, 1, 2}, {300, 32, 2},
                                     {301, 32, 3}, {203, 64, 2}, {130, 100, 1}, {77, 20, 2},
                                     {401, 400, 1}, {401, 400, 2}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    int64_t n = cases[c][0], b = cases[c][1], N, bt;
    int d = (int)cases[c][2];
    rbt_shape(n, b, d, &N, &bt);
    double *A = tu_rand_matrix(n, n, 40 + c);
    double *T = NULL, *T2 = NULL, *cn = calloc((size_t)N, sizeof *cn);
    double *rs = calloc((size_t)n, sizeof *rs), *cn2 = calloc((size_t)N, sizeof *cn2);
    double *rs2 = calloc((size_t)n, sizeof *rs2);
    for (int from_store = 0; from_store < 2; from_store++) {
      ooc_ctx_t *ctx = tu_ctx();
      tcache_t *cache, *acache = NULL;
      tstore_t *S, *SA = NULL;
      tu_memsrc_t ma = {A, n};
      ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL};
      tu_spill_t sl = {ctx, "rbtT", NULL, 0};
      ooc_spill_ops_t sp = {&sl, tu_sp_open, tu_sp_put, tu_sp_get, 1};
      if (from_store) { /* A in a store of tile b, a third of it cached, the rest spilled */
        CU_ASSERT_FATAL(tcache_create(ctx, 8 * n * n / 3 + 64 * 64, &acache) == OOC_OK);
        CU_ASSERT_FATAL(tstore_create(ctx, acache, n, n, b, NULL, &sp, &SA) == OOC_OK);
        part_t p = ts_rows(SA);
        for (int64_t tj = 0; tj < p.count; tj++)
          for (int64_t ti = 0; ti < p.count; ti++)
            CU_ASSERT_FATAL(ts_put(SA, ti, tj, A + part_start(p, ti) + part_start(p, tj) * n,
                                   n) == OOC_OK);
        sa = (ooc_source_t){SA, store_read, NULL, NULL};
      }
      CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &cache) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, N, N, bt, NULL, NULL, &S) == OOC_OK);
      rbt_args_t a = {.n = n, .m = 0, .b = b, .A = &sa, .depth = d, .seed = 77, .threads = 3};
      CU_ASSERT_FATAL(rbt_transform_store(ctx, &a, S, from_store ? cn2 : cn,
                                          from_store ? rs2 : rs, NULL) == OOC_OK);
      if (from_store) T2 = tu_read_store(S, N);
      else T = tu_read_store(S, N);
      if (SA && n > 64) CU_ASSERT(ts_stats(SA)->bytes_unspilled > 0);
      tstore_destroy(S);
      tcache_destroy(cache);
      if (SA) tstore_destroy(SA);
      if (acache) tcache_destroy(acache);
      if (sl.s) scratch_close(sl.s);
      tu_ctx_done(ctx);
    }
    double amax = 0;
    for (int64_t i = 0; i < n * n; i++) amax = fmax(amax, fabs(A[i]));
    double *Ap = calloc((size_t)(N * N), sizeof *Ap), *u = malloc((size_t)(d * N) * sizeof *u);
    double *v = malloc((size_t)(d * N) * sizeof *v), *W = calloc((size_t)(N * N), sizeof *W);
    for (int64_t j = 0; j < N; j++)
      for (int64_t i = 0; i < N; i++)
        Ap[i + j * N] = i < n && j < n ? A[i + j * n] : i == j ? (N > n ? amax : 1) : 0;
    rbt_diagonals(77, N, d, u, v);
    int64_t nbits = bits_differ(Ap, N, d, u, v, T);
    int same = memcmp(T, T2, (size_t)(N * N) * sizeof *T) == 0 &&
               memcmp(cn, cn2, (size_t)N * sizeof *cn) == 0 &&
               memcmp(rs, rs2, (size_t)n * sizeof *rs) == 0;
    CU_ASSERT_EQUAL(nbits, 0);
    CU_ASSERT(same);
    double *U = dense_u(N, d, u), *V = dense_u(N, d, v);
    double err = 0, cerr = 0, rerr = 0;
    for (int64_t j = 0; j < N; j++) /* W = A_pad V */
      for (int64_t i = 0; i < N; i++) {
        double acc = 0;
        for (int64_t l = 0; l < N; l++) acc += Ap[i + l * N] * V[l + j * N];
        W[i + j * N] = acc;
      }
    for (int64_t j = 0; j < N; j++) {
      double col = 0;
      for (int64_t i = 0; i < N; i++) { /* (U^T W)[i, j] */
        double acc = 0;
        for (int64_t l = 0; l < N; l++) acc += U[l + i * N] * W[l + j * N];
        err = fmax(err, fabs(acc - T[i + j * N]));
        col += fabs(acc);
      }
      cerr = fmax(cerr, fabs(col - cn[j]) / fmax(col, 1e-300));
    }
    for (int64_t i = 0; i < n; i++) {
      double r = 0;
      for (int64_t j = 0; j < n; j++) r += fabs(A[i + j * n]);
      rerr = fmax(rerr, fabs(r - rs[i]) / fmax(r, 1e-300));
    }
    CU_ASSERT(err <= 1e-13 * fmax(amax, 1) && cerr < 1e-12 && rerr < 1e-12);
    if (!(err <= 1e-13 * fmax(amax, 1) && cerr < 1e-12 && rerr < 1e-12) || nbits || !same)
      fprintf(stderr, "\n  n %lld b %lld d %d (N %lld bt %lld): |T - U^T A V| %.3g, colnorm %.3g, "
              "rowsum %.3g, %lld elements not bit for bit the levels', from a store %s\n",
              (long long)n, (long long)b, d, (long long)N, (long long)bt, err, cerr, rerr,
              (long long)nbits, same ? "the same" : "DIFFERENT");
    free(A), free(cn), free(rs), free(cn2), free(rs2), free(T), free(T2), free(Ap), free(u);
    free(v), free(W), free(U), free(V);
  }
}

/* ---- matrices ------------------------------------------------------------------------------ */

#ifdef OOC_HAVE_TMGLIB
/* DGE type imat (tests/latms.h); NULL where dchkge skips it. */
static double *dge_matrix(int imat, int n, int *izero) {
  int info;
  double *A = latms_matrix(0, imat, n, izero, &info);
  CU_ASSERT_FATAL(info == 0);
  return A;
}
#endif

/* Types beyond DLATMS: 12 a zero leading entry, 13 a leading entry 1e-12 (plain no-pivot LU's
 * growth ~1e12), 14 Wilkinson's matrix (1 on the diagonal and in the last column, -1 below:
 * growth 2^(n-1) under partial pivoting). */
static double *extra_matrix(int t, int n) {
  double *A = tu_rand_matrix(n, n, 1000 + (uint64_t)(t * 131 + n));
  if (t == 12) A[0] = 0;
  if (t == 13) A[0] = 1e-12;
  if (t == 14)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) A[i + (size_t)j * n] = i == j || j == n - 1 ? 1 : i > j ? -1 : 0;
  return A;
}

/* ---- the sweep ----------------------------------------------------------------------------- */

typedef struct {
  int cases, ok, honest, flagged, regular_failed, iters_max;
  double hpl_max, berr0_max;
} sweep_t;
static sweep_t g_sw;
static int g_logged;

/* must_pass: a well-conditioned type (no honest failure allowed); singular: a failure, or OOC_OK
 * flagged by tiny pivots with berr < sqrt(n) eps. */
static void one_case(const char *what, const ooc_ops_t *ops, const double *A, int n,
                     const double *B, int64_t b, int64_t cap, int must_pass, int singular) {
  outcome_t r = run(ops, A, n, B, 3, b, cap, 12345, 0, 0);
  g_sw.cases++;
  if (singular) {
    /* the butterfly mixes the zero columns away: no exact zero pivot is left, and a singular A
     * has X with a tiny backward error (|X| ~ 1/eps): accepted only flagged by tiny pivots */
    int flagged = r.st == OOC_OK && r.s.tiny > 0 && r.s.berr < r.s.tol;
    CU_ASSERT(r.st == OOC_ERR_SINGULAR || r.st == OOC_ERR_ACCURACY || flagged);
    if (!(r.st == OOC_ERR_SINGULAR || r.st == OOC_ERR_ACCURACY || flagged) && g_logged++ < 20)
      fprintf(stderr, "\n  %s: singular, %s: steps %d berr %.3g -> %.3g tiny %lld\n", what,
              r.st == OOC_OK ? "solved" : r.err, r.s.iters, r.s.berr0, r.s.berr,
              (long long)r.s.tiny);
    g_sw.honest += r.st != OOC_OK;
    g_sw.flagged += flagged;
    free(r.X);
    return;
  }
  if (r.st == OOC_OK) {
    double hpl = tu_solve_ratio(n, 3, A, r.X, B, EPS);
    CU_ASSERT(hpl < 16);
    CU_ASSERT(r.s.converged && r.s.berr < r.s.tol && r.s.iters >= 0 && r.s.iters <= 30);
    CU_ASSERT(r.s.iters == 0 || r.s.berr0 >= r.s.berr);
    CU_ASSERT(r.s.N >= n && r.s.norm_inf > 0 && r.s.t_factor >= 0);
    if (!(hpl < 16) && g_logged++ < 20)
      fprintf(stderr, "\n  %s: HPL %.3g after %d steps\n", what, hpl, r.s.iters);
    g_sw.ok++;
    g_sw.hpl_max = fmax(g_sw.hpl_max, hpl);
    g_sw.berr0_max = fmax(g_sw.berr0_max, r.s.berr0);
    if (r.s.iters > g_sw.iters_max) g_sw.iters_max = r.s.iters;
  } else {
    int honest = (r.st == OOC_ERR_ACCURACY && strstr(r.err, "did not converge")) ||
                 r.st == OOC_ERR_SINGULAR;
    CU_ASSERT(honest);
    CU_ASSERT(r.X[0] == -7.0); /* X untouched */
    CU_ASSERT(!must_pass);
    g_sw.honest++;
    g_sw.regular_failed++;
    if ((must_pass || !honest) && g_logged++ < 20)
      fprintf(stderr, "\n  %s: %s\n", what, r.err);
  }
  free(r.X);
}

static void t_types(void) {
  static const int sizes[] = {1, 2, 3, 5, 10, 50, 100, 300};
  static const int64_t tiles[] = {1, 7, 64, 0};
  const ooc_ops_t *opss[] = {ooc_ops_cpu(), ooc_ops_ref()};
  memset(&g_sw, 0, sizeof g_sw);
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si], ooc = n >= 300;
    double *B = tu_rand_matrix(n, 3, 77);
    for (int t = 1; t <= 14; t++) {
      int izero = 0;
      double *A = NULL;
#ifdef OOC_HAVE_TMGLIB
      if (t <= 11) A = dge_matrix(t, n, &izero);
#endif
      if (t >= 12 && n >= 2) A = extra_matrix(t, n);
      if (!A) continue;
      if (ooc && t != 4 && t != 8 && t != 9 && t < 12) {
        free(A);
        continue;
      }
      int must = t <= 4 || t == 10 || t == 11 || t >= 12;
      for (int o = 0; o < 2; o++) {
        if (o && (n > 10 || ooc)) continue; /* ref: the kernels' oracle, small n */
        int64_t done[4];
        int nd = 0;
        for (size_t ti = 0; ti < 4; ti++) {
          int64_t b = tiles[ti] && tiles[ti] < n ? tiles[ti] : n;
          if (tiles[ti] == 1 && n > 10) continue;
          if (ooc && tiles[ti] != 7 && tiles[ti] != 64) continue;
          int dup = 0;
          for (int k = 0; k < nd; k++) dup |= done[k] == b;
          if (dup) continue;
          done[nd++] = b;
          /* out of core: the cache holds under a quarter of the transformed matrix */
          int64_t cap = ooc ? 8 * (int64_t)n * n / 5 : (int64_t)1 << 40;
          char what[160];
          snprintf(what, sizeof what, "type %d n %d tile %lld %s%s", t, n, (long long)b,
                   opss[o]->name, ooc ? " ooc" : "");
          one_case(what, opss[o], A, n, B, b, cap, must, izero != 0);
        }
      }
      free(A);
    }
    free(B);
  }
  printf("[%d cases: %d solved (HPL max %.3g, steps max %d, backward error before refinement max "
         "%.3g); %d failed honestly (OOC_ERR_SINGULAR / ACCURACY), %d of them regular; %d singular "
         "ones solved to backward error < sqrt(n) eps, flagged by tiny pivots] ", g_sw.cases,
         g_sw.ok, g_sw.hpl_max, g_sw.iters_max, g_sw.berr0_max, g_sw.honest, g_sw.regular_failed,
         g_sw.flagged);
  CU_ASSERT(g_sw.ok > 0);
}

/* Out of core: the transformed matrix spills (scratch writes), the result is still right. */
static void t_out_of_core(void) {
  int n = 300;
  double *A = tu_rand_matrix(n, n, 5), *B = tu_rand_matrix(n, 2, 6);
  outcome_t r = run(ooc_ops_cpu(), A, n, B, 2, 32, 8 * (int64_t)n * n / 5, 9, 0, 0);
  CU_ASSERT_EQUAL(r.st, OOC_OK);
  CU_ASSERT(r.spills > 0);
  if (r.st == OOC_OK) CU_ASSERT(tu_solve_ratio(n, 2, A, r.X, B, EPS) < 16);
  printf("[n %d tile 32: %lld scratch writes, %d steps, berr %.3g -> %.3g] ", n,
         (long long)r.spills, r.s.iters, r.s.berr0, r.s.berr);
  free(r.X), free(A), free(B);
}

static void t_seed(void) {
  int n = 70;
  double *A = extra_matrix(12, n), *B = tu_rand_matrix(n, 2, 3);
  outcome_t r1 = run(ooc_ops_cpu(), A, n, B, 2, 16, (int64_t)1 << 40, 2026, 0, 0);
  outcome_t r2 = run(ooc_ops_cpu(), A, n, B, 2, 16, (int64_t)1 << 40, 2026, 0, 0);
  outcome_t r3 = run(ooc_ops_cpu(), A, n, B, 2, 16, (int64_t)1 << 40, 2027, 3, 0);
  CU_ASSERT(r1.st == OOC_OK && r2.st == OOC_OK && r3.st == OOC_OK);
  CU_ASSERT(memcmp(r1.X, r2.X, (size_t)(2 * n) * sizeof(double)) == 0);
  CU_ASSERT(r1.s.berr0 == r2.s.berr0 && r1.s.iters == r2.s.iters && r1.s.seed == 2026);
  CU_ASSERT(r1.s.berr0 != r3.s.berr0 && r3.s.depth == 3); /* another transform */
  CU_ASSERT(tu_solve_ratio(n, 2, A, r3.X, B, EPS) < 16);
  free(r1.X), free(r2.X), free(r3.X), free(A), free(B);
}

/* The refinement's failure path: DGE type 5 (first column zero) at n = 50, tile 7, seed 12345
 * needs 11 steps to reach a backward error < sqrt(n) eps (t_types); capped at 1 it must fail
 * with OOC_ERR_ACCURACY, the numbers in the message, and the caller's X untouched. */
static void t_no_convergence(void) {
#ifdef OOC_HAVE_TMGLIB
  int n = 50, izero;
  double *A = dge_matrix(5, n, &izero), *B = tu_rand_matrix(n, 3, 77);
  outcome_t r = run(ooc_ops_cpu(), A, n, B, 3, 7, (int64_t)1 << 40, 12345, 0, 1);
  CU_ASSERT_EQUAL(r.st, OOC_ERR_ACCURACY);
  CU_ASSERT(strstr(r.err, "did not converge in 1 steps") != NULL);
  CU_ASSERT(strstr(r.err, "sqrt(n) eps") != NULL);
  CU_ASSERT(r.X[0] == -7.0);
  CU_ASSERT(r.s.iters == 1 && r.s.berr > r.s.tol);
  printf("[%s] ", r.err);
  free(r.X), free(A), free(B);
#endif
}

/* NaN never passes, even next to a good column: right-hand side 0 holds a NaN, 1 is fine. The
 * refinement must stop at once (not run its 30 steps with the NaN column's error forgotten) and
 * fail with X untouched; the test oracle tu_solve_ratio must say NaN for such an X too. */
static void t_nan_column(void) {
  int n = 40;
  double *A = extra_matrix(13, n), *B = tu_rand_matrix(n, 2, 5);
  B[3] = NAN;
  outcome_t r = run(ooc_ops_cpu(), A, n, B, 2, 7, (int64_t)1 << 40, 1, 0, 0);
  CU_ASSERT_EQUAL(r.st, OOC_ERR_ACCURACY);
  CU_ASSERT(r.s.iters == 0 && isnan(r.s.berr));
  CU_ASSERT(r.X[0] == -7.0);
  B[3] = 0.0;
  outcome_t g = run(ooc_ops_cpu(), A, n, B, 2, 7, (int64_t)1 << 40, 1, 0, 0);
  CU_ASSERT_FATAL(g.st == OOC_OK);
  CU_ASSERT(tu_solve_ratio(n, 2, A, g.X, B, EPS) < 16);
  g.X[5] = NAN; /* column 0 spoiled, column 1 still right */
  CU_ASSERT(isnan(tu_solve_ratio(n, 2, A, g.X, B, EPS)));
  free(r.X), free(g.X), free(A), free(B);
}

/* The strict host executor (LU's device buffers separate, gets delayed and NaN-poisoned): the
 * same X as the plain host run within refinement's accuracy, HPL < 16. */
static void t_strict(void) {
  int n = 100;
  double *A = extra_matrix(13, n), *B = tu_rand_matrix(n, 3, 8);
  outcome_t p = run(ooc_ops_cpu(), A, n, B, 3, 16, (int64_t)1 << 40, 4, 0, 0);
  g_strict = 1;
  outcome_t q = run(ooc_ops_cpu(), A, n, B, 3, 16, 8 * (int64_t)n * n / 5, 4, 0, 0);
  g_strict = 0;
  CU_ASSERT(p.st == OOC_OK && q.st == OOC_OK);
  if (p.st == OOC_OK && q.st == OOC_OK) {
    CU_ASSERT(tu_solve_ratio(n, 3, A, q.X, B, EPS) < 16);
    double d = 0;
    for (int64_t i = 0; i < 3 * n; i++) d = fmax(d, fabs(p.X[i] - q.X[i]) / fmax(1e-300, fabs(p.X[i])));
    CU_ASSERT(d < 1e-10);
  }
  free(p.X), free(q.X), free(A), free(B);
}

/* Fault loop: the Nth host allocation fails, N = 1, 2, ... until the solve succeeds: each
 * failure is OOC_ERR_NOMEM (or OOC_ERR_IO from the scratch store), nothing leaks (tu_ctx_done),
 * the last run is right. */
static void t_fault(void) {
  int n = 60;
  double *A = extra_matrix(12, n), *B = tu_rand_matrix(n, 2, 9);
  int64_t k = 1;
  for (; k < 400; k++) {
    g_fault_at = k;
    outcome_t r = run(ooc_ops_cpu(), A, n, B, 2, 8, 8 * (int64_t)n * n / 5, 3, 0, 0);
    int done = r.st == OOC_OK;
    if (done) {
      CU_ASSERT(tu_solve_ratio(n, 2, A, r.X, B, EPS) < 16);
    } else {
      CU_ASSERT(r.st == OOC_ERR_NOMEM || r.st == OOC_ERR_IO);
    }
    free(r.X);
    if (done) break;
  }
  g_fault_at = 0;
  CU_ASSERT(k > 1 && k < 400);
  printf("[%lld injected allocation failures, then success] ", (long long)(k - 1));
  free(A), free(B);
}

/* ---- through the library and the CLI ------------------------------------------------------ */

/* ooc_solve with method rbt: in core and out of core (--host-mem below A's size: scratch
 * asserted), the written X passes HPL < 16, the report carries rbt's numbers (method, seed,
 * depth, padded n, steps, backward errors, the parts' times) and its JSON too; the same seed
 * writes the same X; an inverse with rbt is OOC_ERR_ARG. */
static void t_api(void) {
  int n = 300;
  double *A = extra_matrix(12, n), *B = tu_rand_matrix(n, 2, 11);
  char in[1024], rhs[1024], out[1024];
  snprintf(in, sizeof in, "%s", tu_path("rbt_a.h5"));
  snprintf(rhs, sizeof rhs, "%s", tu_path("rbt_b.h5"));
  snprintf(out, sizeof out, "%s", tu_path("rbt_x.h5"));
  tu_write_matrix(in, "/A", n, n, A, 2);
  tu_write_matrix(rhs, "/B", n, 2, B, 2);
  double *X0 = NULL;
  for (int ooc = 0; ooc < 2; ooc++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_opts_default(&o);
    o.method = OOC_METHOD_RBT;
    o.device = OOC_DEVICE_CPU;
    o.tile = 32;
    o.seed = 99;
    o.force = 1;
    o.check = OOC_CHECK_FULL;
    if (ooc) o.host_mem = 600 << 10; /* A is 720 KB */
    ooc_report_t rep;
    ooc_status_t st = ooc_solve(ctx, in, rhs, out, &o, &rep);
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK) fprintf(stderr, "\n  rbt api: %s\n", ooc_ctx_error(ctx));
    CU_ASSERT_STRING_EQUAL(rep.method, "rbt");
    CU_ASSERT(rep.seed == 99 && rep.rbt_depth == 2 && rep.rbt_n >= n);
    CU_ASSERT(rep.iterations >= 0 && rep.berr_after < sqrt((double)n) * EPS);
    CU_ASSERT(rep.berr_before >= rep.berr_after && rep.t_factor > 0 && rep.t_transform > 0);
    CU_ASSERT(rep.residual < 16);
    if (ooc) CU_ASSERT(rep.bytes_spilled > 0 && rep.host_peak <= rep.host_budget);
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    CU_ASSERT_FATAL(X != NULL && r == n && c == 2);
    CU_ASSERT(tu_solve_ratio(n, 2, A, X, B, EPS) < 16);
    if (!X0) X0 = X;
    else {
      /* out of core: other stripes, the same transform: X within refinement's accuracy */
      double d = 0;
      for (int64_t i = 0; i < 2 * n; i++) d = fmax(d, fabs(X[i] - X0[i]) / fmax(1e-300, fabs(X0[i])));
      CU_ASSERT(d < 1e-10);
      free(X);
    }
    char js[8192];
    ooc_report_json_str(&rep, st, "", js, sizeof js);
    CU_ASSERT(strstr(js, "\"berr_after\":") && strstr(js, "\"t_refine\":") &&
              strstr(js, "\"seed\": 99"));
    printf("[%s: %d steps, berr %.3g -> %.3g, HPL %.3g, spilled %lld B] ", ooc ? "ooc" : "in core",
           rep.iterations, rep.berr_before, rep.berr_after, rep.residual,
           (long long)rep.bytes_spilled);
    o.host_mem = 0;
    ooc_report_t r2;
    CU_ASSERT_EQUAL(ooc_invert(ctx, in, out, &o, &r2), OOC_ERR_ARG);
    CU_ASSERT(strstr(ooc_ctx_error(ctx), "--method rbt solves") != NULL);
    tu_ctx_done(ctx);
  }
  free(X0), free(A), free(B);
  remove(in), remove(rhs), remove(out);
}

/* The CLI: a refinement that cannot converge in --max-iter 1 steps exits 4 with the numbers on
 * stderr and writes nothing; --seed without --method rbt is a usage error (exit 2); the report
 * line of a successful run. */
static void t_cli(void) {
#ifdef OOC_HAVE_TMGLIB
  int n = 50, izero;
  double *A = dge_matrix(5, n, &izero), *B = tu_rand_matrix(n, 3, 77);
  char in[1024], rhs[1024], out[1024], log[1024], cmd[5000];
  snprintf(in, sizeof in, "%s", tu_path("rbt_c.h5"));
  snprintf(rhs, sizeof rhs, "%s", tu_path("rbt_cb.h5"));
  snprintf(out, sizeof out, "%s", tu_path("rbt_cx.h5"));
  snprintf(log, sizeof log, "%s", tu_path("rbt_cli.log"));
  tu_write_matrix(in, "/A", n, n, A, 2);
  tu_write_matrix(rhs, "/B", n, 3, B, 2);
  snprintf(cmd, sizeof cmd, "%s/oocsolve solve --method rbt --tile 7 --seed 12345 --max-iter 1 "
           "--device cpu --out %s %s %s > %s 2>&1", OOC_TOOLS_DIR, out, in, rhs, log);
  int rc = system(cmd);
  CU_ASSERT(WIFEXITED(rc) && WEXITSTATUS(rc) == 4);
  CU_ASSERT(!tu_file_exists(out));
  FILE *f = fopen(log, "r");
  char text[4096] = {0};
  if (f) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
  }
  CU_ASSERT(strstr(text, "did not converge in 1 steps") && strstr(text, "rbt_c.h5"));
  snprintf(cmd, sizeof cmd, "%s/oocsolve solve --seed 3 --out %s %s %s > %s 2>&1", OOC_TOOLS_DIR,
           out, in, rhs, log);
  rc = system(cmd);
  CU_ASSERT(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  free(A);
  A = extra_matrix(12, n); /* regular, with a zero leading entry */
  tu_write_matrix(in, "/A", n, n, A, 2);
  snprintf(cmd, sizeof cmd, "%s/oocsolve solve --method rbt --tile 7 --device cpu --out %s %s %s "
           "> %s 2>&1", OOC_TOOLS_DIR, out, in, rhs, log);
  rc = system(cmd);
  CU_ASSERT(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  CU_ASSERT(tu_file_exists(out));
  f = fopen(log, "r");
  memset(text, 0, sizeof text);
  if (f) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
  }
  CU_ASSERT(strstr(text, "refine ") && strstr(text, "backward error"));
  free(A), free(B);
  remove(in), remove(rhs), remove(out), remove(log);
#endif
}

int main(void) {
  static const tu_test_t tests[] = {
      {"shape: N a multiple of 2^d bt, bt <= b, little padding", t_shape},
      {"butterflies: U^T and V against their definition, depths 1-3", t_butterflies},
      {"the tile-group transform: the store holds U^T A_pad V, its norms", t_transform},
      {"DGE types 1-11 + zero / tiny leading entry + Wilkinson: HPL < 16 or honest failure", t_types},
      {"out of core: the transformed matrix spills, X still right", t_out_of_core},
      {"reproducible with the seed; another seed, another transform", t_seed},
      {"refinement capped at one step: OOC_ERR_ACCURACY with the numbers, X untouched",
       t_no_convergence},
      {"a NaN right-hand side next to a good one: refinement stops at once, fails", t_nan_column},
      {"the strict host executor: the same X", t_strict},
      {"fault loop: host allocations over an out-of-core rbt solve", t_fault},
      {"ooc_solve with rbt: in and out of core, the report's numbers, an inverse refused", t_api},
      {"the CLI: exit 4 when refinement does not converge, --seed needs rbt, a report", t_cli},
      {NULL, NULL}};
  return tu_run("rbt", tests);
}
