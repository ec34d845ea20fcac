/*
 * test_chol_exec.c: chol.c's executor path (chol_exec_t) on the CPU, so CI covers it without a
 * GPU. A host executor implements the contract of chol.h with the ops table, and defers every
 * update to complete() (as an asynchronous device would finish it later), so chol.c's ring is
 * checked: a slot is completed before it is read, put or refilled; no load/pivot/store with a
 * slot in flight. Results: inverse ratio < 30, factor's logdet and the solve's HPL ratio as the
 * CPU path's, the not-SPD minor equal to LAPACK's; n in {1, 3, 100, 300}, tiles 7 and 64 (not
 * dividing n), stripes of 1 and 3 tiles and n, rings of 1, 2 and 4 slots; the pivot whole and
 * split (pivot_begin/vready: D loaded first, the rest by column blocks, as the CUDA executor
 * overlaps them); full and lower-triangle results.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "gen/gen.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)

/* ---- a host executor ------------------------------------------------------------------------- */

typedef struct hx {
  chol_exec_t e;
  const ooc_ops_t *o;
  int64_t n, b, k0, w, r0;
  int job;
  int begun;                      /* pivot_begin seen (split pivot), not yet pivot */
  int64_t ready, bad;             /* columns readied so far; the split pivot's minor */
  double *P;                      /* the "device" panel, n x W */
  int pending[CHOL_MAX_SLOTS];    /* 0 none, 1 lupdate, 2 supdate, 3 rowload, 4 rowstore,
                                     5 colload, 6 colstore */
  int64_t arg_r0[CHOL_MAX_SLOTS], arg_r1[CHOL_MAX_SLOTS], arg_bj[CHOL_MAX_SLOTS],
      arg_c0[CHOL_MAX_SLOTS];
  int violations;                 /* contract breaches seen */
} hx_t;

static int busy(hx_t *x) {
  for (int s = 0; s < x->e.nslots; s++)
    if (x->pending[s]) return 1;
  return 0;
}

static ooc_status_t h_load(chol_exec_t *e, const double *panel, int64_t k0, int64_t w, int64_t r0) {
  hx_t *x = (hx_t *)e;
  if (busy(x) || w > e->W) x->violations++;
  x->k0 = k0;
  x->w = w;
  x->r0 = r0;
  for (int64_t j = 0; j < w; j++) /* what the step does not load must not be read */
    for (int64_t i = 0; i < x->n; i++) x->P[i + j * x->n] = NAN;
  if (panel)
    for (int64_t j = 0; j < w; j++)
      memcpy(x->P + r0 + j * x->n, panel + r0 + j * x->n, (size_t)(x->n - r0) * sizeof(double));
  return OOC_OK;
}

static ooc_status_t h_lupdate(chol_exec_t *e, int s, int64_t bj) {
  hx_t *x = (hx_t *)e;
  if (x->pending[s]) x->violations++;
  x->pending[s] = 1;
  x->arg_bj[s] = bj;
  return OOC_OK;
}

static ooc_status_t defer(chol_exec_t *e, int s, int what, int64_t c0, int64_t r0, int64_t r1,
                          int64_t bj) {
  hx_t *x = (hx_t *)e;
  if (x->pending[s] || (what >= 3 && c0 + bj > x->w) || r0 > r1) x->violations++;
  x->pending[s] = what;
  x->arg_c0[s] = c0;
  x->arg_r0[s] = r0;
  x->arg_r1[s] = r1;
  x->arg_bj[s] = bj;
  return OOC_OK;
}
static ooc_status_t h_supdate(chol_exec_t *e, int s, int64_t r0, int64_t bj) {
  return defer(e, s, 2, 0, r0, ((hx_t *)e)->n, bj);
}
static ooc_status_t h_rowload(chol_exec_t *e, int s, int64_t c0, int64_t bi) {
  return defer(e, s, 3, c0, 0, 0, bi);
}
static ooc_status_t h_rowstore(chol_exec_t *e, int s, int64_t c0, int64_t bi) {
  return defer(e, s, 4, c0, 0, 0, bi);
}
static ooc_status_t h_colload(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t r1,
                              int64_t bj) {
  return defer(e, s, 5, c0, r0, r1, bj);
}
static ooc_status_t h_colstore(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t bj) {
  return defer(e, s, 6, c0, r0, ((hx_t *)e)->n, bj);
}

/* The deferred work, done when chol.c waits for it. */
static ooc_status_t h_complete(chol_exec_t *e, int s) {
  hx_t *x = (hx_t *)e;
  const ooc_ops_t *o = x->o;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w, bj = x->arg_bj[s], r0 = x->arg_r0[s];
  double *C = e->slot[s], *P = x->P;
  if (x->pending[s] == 1) { /* panel -= C C^T, rows >= k0 */
    o->syrk('L', 'N', w, bj, -1.0, C + k0, n, 1.0, P + k0, n);
    if (n - k1 > 0) o->gemm('N', 'T', n - k1, w, bj, -1.0, C + k1, n, C + k0, n, 1.0, P + k1, n);
  } else if (x->pending[s] == 2) { /* chol.h: F_KK += W_K W_K^T, F_TK -= ..., F_TT -= ... */
    const double *Wj = P + r0;
    if (r0 < k0) {
      o->syrk('L', 'N', bj, w, 1.0, Wj, n, 1.0, C + r0, n);
      if (k0 - r0 - bj > 0) o->gemm('N', 'T', k0 - r0 - bj, bj, w, 1.0, Wj + bj, n, Wj, n, 1.0, C + r0 + bj, n);
      if (n - k1 > 0) o->gemm('N', 'T', n - k1, bj, w, -1.0, P + k1, n, Wj, n, 1.0, C + k1, n);
    } else {
      o->syrk('L', 'N', bj, w, -1.0, Wj, n, 1.0, C + r0, n);
      if (n - r0 - bj > 0) o->gemm('N', 'T', n - r0 - bj, bj, w, -1.0, Wj + bj, n, Wj, n, 1.0, C + r0 + bj, n);
    }
  } else if (x->pending[s] == 3 || x->pending[s] == 4) { /* rows [0, k0) of columns c0.. <-> C^T */
    for (int64_t j = 0; j < bj; j++)
      for (int64_t i = 0; i < k0; i++) {
        double *pv = P + i + (x->arg_c0[s] + j) * n, *cv = C + j + i * bj;
        if (x->pending[s] == 3) *pv = *cv;
        else *cv = *pv;
      }
  } else if (x->pending[s] >= 5) { /* rows [r0, r1) of columns c0.. <-> C (ld n) */
    for (int64_t j = 0; j < bj; j++) {
      double *pv = P + r0 + (x->arg_c0[s] + j) * n, *cv = C + r0 + j * n;
      memcpy(x->pending[s] == 5 ? pv : cv, x->pending[s] == 5 ? cv : pv,
             (size_t)(x->arg_r1[s] - r0) * sizeof(double));
    }
  }
  x->pending[s] = 0;
  return OOC_OK;
}

/* Rows [r0, r0 + m) of the panel's columns [c0, c0 + bj) := V L^-T, given the columns left of
 * c0 done: V -= X_left L[c0.., :c0]^T, then a trsm with the diagonal block (the executors' split
 * pivot does the trsm of the whole W this way, column block by column block). */
static void fwd_block(hx_t *x, int64_t r0, int64_t m, int64_t c0, int64_t bj) {
  int64_t n = x->n;
  double *P = x->P, *D = P + x->k0, *V = P + r0 + c0 * n;
  if (m <= 0) return;
  if (c0 > 0) x->o->gemm('N', 'T', m, bj, c0, -1.0, P + r0, n, D + c0, n, 1.0, V, n);
  x->o->trsm('R', 'L', 'T', 'N', m, bj, 1.0, D + c0 + c0 * n, n, V, n);
}

/* Rows [r0, r0 + m) := sgn V L^-1 by column blocks of b from the last (columns right of j0 done
 * when block j0 runs), as an executor that stores each block as soon as it is final. */
static void bwd_blocks(hx_t *x, int64_t r0, int64_t m, double sgn) {
  int64_t n = x->n, w = x->w;
  double *P = x->P, *D = P + x->k0;
  if (m <= 0) return;
  for (int64_t j0 = (w - 1) / x->b * x->b; j0 >= 0; j0 -= x->b) {
    int64_t bj = ooc_min64(x->b, w - j0), j1 = j0 + bj;
    double *V = P + r0 + j0 * n;
    if (j1 < w) x->o->gemm('N', 'N', m, bj, w - j1, -1.0, P + r0 + j1 * n, n, D + j1 + j0 * n, n, sgn, V, n);
    x->o->trsm('R', 'L', 'N', 'N', m, bj, j1 < w ? 1.0 : sgn, D + j0 + j0 * n, n, V, n);
  }
}

static void flush(hx_t *x) { /* as a stream runs what was queued before */
  for (int s = 0; s < x->e.nslots; s++)
    if (x->pending[s]) h_complete(&x->e, s);
}

static int has_nan(const double *A, int64_t ld, int64_t m, int64_t nc) {
  for (int64_t j = 0; j < nc; j++)
    for (int64_t i = 0; i < m; i++)
      if (isnan(A[i + j * ld])) return 1;
  return 0;
}

/* The split pivot (chol.h): D is loaded when pivot_begin comes; each column block's rows above
 * and below the stripe when vready comes. The executor's queue runs the loads first (flush). */
static ooc_status_t h_pivot_begin(chol_exec_t *e, int job) {
  hx_t *x = (hx_t *)e;
  flush(x);
  if (job != CHOL_INVERT || x->begun) x->violations++;
  x->job = job;
  x->begun = 1;
  x->ready = 0;
  x->bad = x->o->potrf(x->w, x->P + x->k0, x->n);
  return OOC_OK;
}

static ooc_status_t h_vready(chol_exec_t *e, int64_t c0, int64_t bj) {
  hx_t *x = (hx_t *)e;
  int64_t n = x->n, k0 = x->k0, k1 = k0 + x->w;
  flush(x);
  if (!x->begun || c0 != x->ready || c0 + bj > x->w ||
      has_nan(x->P + c0 * n, n, k0, bj) || has_nan(x->P + k1 + c0 * n, n, n - k1, bj))
    x->violations++;
  x->ready = c0 + bj;
  if (x->bad) return OOC_OK;
  fwd_block(x, 0, k0, c0, bj);
  fwd_block(x, k1, n - k1, c0, bj);
  return OOC_OK;
}

static ooc_status_t h_pivot(chol_exec_t *e, int job, int64_t *bad, double *logdet) {
  hx_t *x = (hx_t *)e;
  const ooc_ops_t *o = x->o;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w;
  double *D = x->P + k0;
  if (busy(x) || (x->begun && (job != x->job || x->ready != w))) x->violations++;
  x->job = job;
  *logdet = 0;
  *bad = x->begun ? x->bad : o->potrf(w, D, n);
  int begun = x->begun;
  x->begun = 0;
  if (*bad) return OOC_OK;
  for (int64_t j = 0; j < w; j++) *logdet += 2 * log(D[j + j * n]);
  if (begun) return OOC_OK;
  if (job == CHOL_INVERT && k0 > 0) o->trsm('R', 'L', 'T', 'N', k0, w, 1.0, D, n, x->P, n);
  if (n - k1 > 0) o->trsm('R', 'L', 'T', 'N', n - k1, w, 1.0, D, n, x->P + k1, n);
  return OOC_OK;
}

static ooc_status_t h_store(chol_exec_t *e, double *panel, int full) {
  hx_t *x = (hx_t *)e;
  const ooc_ops_t *o = x->o;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w;
  double *D = x->P + k0;
  if (busy(x)) x->violations++;
  if (x->job == CHOL_INVERT) {
    bwd_blocks(x, 0, k0, -1.0);
    bwd_blocks(x, k1, n - k1, 1.0);
    if (o->potri(w, D, n)) x->violations++;
  }
  for (int64_t j = 0; j < w; j++)
    for (int64_t i = 0; i < j; i++) D[i + j * n] = full ? D[j + i * n] : 0.0;
  int64_t r0 = full ? 0 : x->r0;
  for (int64_t j = 0; j < w && panel; j++)
    memcpy(panel + r0 + j * n, x->P + r0 + j * n, (size_t)(n - r0) * sizeof(double));
  return OOC_OK;
}

/* As the CUDA executor: no host panel for the sweep out of core; split: the pivot in pieces. */
static hx_t *hx_create(int64_t n, int64_t b, int64_t W, int nslots, int job, int split) {
  hx_t *x = calloc(1, sizeof *x);
  x->o = ooc_ops_cpu();
  x->n = n;
  x->b = b;
  x->e.name = "host";
  x->e.W = W;
  x->e.nslots = nslots;
  for (int s = 0; s < nslots; s++) x->e.slot[s] = malloc((size_t)(n * b) * sizeof(double));
  if (W >= n || job != CHOL_INVERT) x->e.panel = malloc((size_t)(n * W) * sizeof(double));
  x->P = malloc((size_t)(n * W) * sizeof(double));
  x->e.load = h_load;
  x->e.lupdate = h_lupdate;
  x->e.pivot = h_pivot;
  x->e.supdate = h_supdate;
  x->e.complete = h_complete;
  x->e.store = h_store;
  x->e.colload = h_colload;
  x->e.colstore = h_colstore;
  x->e.rowload = h_rowload;
  x->e.rowstore = h_rowstore;
  if (split) {
    x->e.pivot_begin = h_pivot_begin;
    x->e.vready = h_vready;
  }
  return x;
}

static void hx_destroy(hx_t *x) {
  for (int s = 0; s < x->e.nslots; s++) free(x->e.slot[s]);
  free(x->e.panel);
  free(x->P);
  free(x);
}

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
  ooc_ctx_t *ctx = tu_ctx();
  gen_spec_t s;
  gen_spec_default(&s, kind, rows);
  s.cols = cols;
  s.seed = seed;
  s.symmetric = 1;
  if (kind == GEN_MATERN) s.nugget = 1e-2;
  gen_t *g = NULL;
  CU_ASSERT_FATAL(gen_create(ctx, &s, &g) == OOC_OK);
  double *A = malloc((size_t)(rows * cols + 1) * sizeof *A);
  gen_tile(g, 0, 0, rows, cols, A, rows);
  gen_destroy(g);
  tu_ctx_done(ctx);
  return A;
}

typedef struct {
  ooc_status_t st;
  int64_t info;
  double logdet;
  double *R;
} outcome_t;

/* nslots 0: the CPU path (no executor); split: the executor splits the pivot (chol.h); lower:
 * chol_args_t.lower_only (the result read back with its upper triangle mirrored). */
static outcome_t run(int job, const double *A, int64_t n, const double *B, int64_t m, int64_t b,
                     int64_t W, int nslots, int split, int lower) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  tstore_t *sa = NULL, *sb = NULL;
  memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t srca = {&ma, mem_read}, srcb = {&mb, mem_read};
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 40, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &srca, NULL, &sa) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &srcb, NULL, &sb) == OOC_OK);
  int64_t Wr = W >= n ? n : W;
  hx_t *x = nslots ? hx_create(n, b, Wr, nslots, job, split) : NULL;
  chol_args_t args = {.A = sa, .B = sb, .stripe = W >= n ? (n + b - 1) / b * b : W,
                      .ops = ooc_ops_cpu(), .job = job, .lower_only = lower,
                      .exec = x ? &x->e : NULL};
  r.st = chol_run(ctx, &args, NULL, &r.info, &r.logdet);
  if (r.st != OOC_OK && r.st != OOC_ERR_NOT_SPD) fprintf(stderr, "\n  chol_run: %s\n", ooc_ctx_error(ctx));
  if (x) {
    CU_ASSERT_EQUAL(x->violations, 0);
    hx_destroy(x);
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
          int K = slots[k % 3], split = k >= 3, lower = k == 1 || k == 4;
          outcome_t c = run(CHOL_INVERT, A, n, NULL, 0, b, Ws[w], 0, 0, 0);
          outcome_t r = run(CHOL_INVERT, A, n, NULL, 0, b, Ws[w], K, split, lower);
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
          r = run(CHOL_SOLVE, A, n, B, 50, b, Ws[w], K, split, 0);
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
    for (int split = 0; split < 2; split++) {
      outcome_t r = run(job, A, n, job == CHOL_SOLVE ? B : NULL, 1, 7, 21, 2, split, 0);
      CU_ASSERT_EQUAL(r.st, OOC_ERR_NOT_SPD);
      CU_ASSERT_EQUAL(r.info, 61);
      free(r.R);
    }
    free(B);
  }
  free(A);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"host executor: invert and solve as the CPU path, rings of 1..4 slots", t_exec},
      {"host executor: not SPD", t_not_spd},
      {NULL, NULL}};
  return tu_run("chol-exec", tests);
}
