/* rbt.c: random butterfly transformation + LU without pivoting + refinement against the original
 * A, out of core. See rbt.h for the method, its cost and its stopping rule. */
#include "solvers/rbt.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/parloop.h"
#include "solvers/lu.h"

#define RSQRT2 0.70710678118654752440

void rbt_shape(int64_t n, int64_t b, int depth, int64_t *N, int64_t *bt) {
  if (n <= 0) {
    *N = *bt = 0;
    return;
  }
  int64_t g = (int64_t)1 << depth;
  b = b > 0 ? ooc_min64(b, n) : n;
  int64_t k = ooc_cdiv64(n, g * b);  /* groups per dimension: tile rows per butterfly quarter */
  *bt = ooc_cdiv64(n, g * k);        /* <= b: the smallest tile with that many groups */
  *N = g * k * *bt;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void rbt_diagonals(uint64_t seed, int64_t N, int depth, double *u, double *v) {
  uint64_t s = seed;
  for (int64_t i = 0; i < depth * N; i++)
    u[i] = exp(((double)(splitmix(&s) >> 11) * 0x1.0p-53 - 0.5) / 10.0);
  for (int64_t i = 0; i < depth * N; i++)
    v[i] = exp(((double)(splitmix(&s) >> 11) * 0x1.0p-53 - 0.5) / 10.0);
}

/* Level l of U^T (or of V from the right, transposed: the same formula) on rows i < j = i + h of
 * each butterfly: x_i, x_j := r_i (x_i + x_j) / sqrt2, s_i (x_i - x_j) / sqrt2. */
void rbt_apply_ut(int64_t N, int depth, const double *u, int64_t m, double *W, int64_t ld) {
  for (int l = 0; l < depth; l++) {
    int64_t ml = N >> l, h = ml / 2;
    const double *w = u + l * N;
    for (int64_t c = 0; c < m; c++) {
      double *x = W + c * ld;
      for (int64_t s0 = 0; s0 < N; s0 += ml)
        for (int64_t i = s0; i < s0 + h; i++) {
          double a = x[i], b = x[i + h];
          x[i] = w[i] * (a + b) * RSQRT2;
          x[i + h] = w[i + h] * (a - b) * RSQRT2;
        }
    }
  }
}

/* x = V y = V_0 (V_1 (... V_{d-1} y)): B y = (r_i y_i + s_i y_j, r_i y_i - s_i y_j) / sqrt2. */
void rbt_apply_v(int64_t N, int depth, const double *v, int64_t m, double *W, int64_t ld) {
  for (int l = depth - 1; l >= 0; l--) {
    int64_t ml = N >> l, h = ml / 2;
    const double *w = v + l * N;
    for (int64_t c = 0; c < m; c++) {
      double *x = W + c * ld;
      for (int64_t s0 = 0; s0 < N; s0 += ml)
        for (int64_t i = s0; i < s0 + h; i++) {
          double a = w[i] * x[i], b = w[i + h] * x[i + h];
          x[i] = (a + b) * RSQRT2;
          x[i + h] = (a - b) * RSQRT2;
        }
    }
  }
}

/* ---- the transform of A, group by group ------------------------------------------------- */

typedef struct rbt {
  ooc_ctx_t *ctx;
  const rbt_args_t *a;
  rbt_stats_t *st;
  int64_t n, m, b, N, bt, k, g;  /* g = 2^d blocks per group side */
  int d;
  double *u, *v;                 /* d N each */
  double *G;                     /* the group: (g bt) x (g bt), leading dimension ldG */
  int64_t ldG;                   /* g bt + RBT_LD_PAD (group_ld) */
  int64_t gi, gj;                /* the group being transformed (ti0, tj0) */
  int64_t rchunk, cchunk;        /* rows per P_ROWSUM job, column bundles per P_MIX job */
  double *colnorm;               /* ||(U^T A V)[:, j]||_1, N */
  double *rowsum;                /* sum_j |a_ij| of the original, n */
  double pad;                    /* the padding's diagonal: max|a_ij| (rbt.h) */
  int phase;                     /* the group pass running (group_job) */
} rbt_t;

/* The group's two passes, each parallel so that every job owns what it writes and every element's
 * arithmetic is the definition's, in its order (the store is bit for bit what U^T's levels on
 * every column, then V's on every row, give; the sums add in the same order whatever the
 * threads):
 *   P_ROWSUM rows:   sum_j |a_ij| of the original rows (< n) into rowsum (||A||_inf), the columns
 *                    in order, a contiguous run of rows per column (vectorized across rows);
 *   P_MIX    column bundles: U^T and V close over the g columns {q bt + c : q < g} of one c < bt
 *                    (U^T mixes rows within a column, V the columns of a bundle), so a job takes
 *                    a bundle, g ldg doubles that stay in the core's cache, through U^T's levels,
 *                    V's levels and the column 1-norms ||(U^T A V)[:, j]||_1 (lu's pivot tests),
 *                    one read and one write of the group from memory in all, instead of a pass
 *                    per level. */
enum { P_ROWSUM, P_MIX };

/* G's leading dimension: g bt and one cache line more. With g bt a power of two (n = 8192 or
 * 32768 and the default tile) the g columns of a bundle lay a power of two apart, in the same
 * cache sets, and their pairs ran 3-4.5x slower: the mix of n = 16384, tile 4096 (bt = 4096,
 * as n = 32768) took 1.0 s on 2 threads unpadded, 0.22 s padded (docs/NUMERICS.md, "rbt"). */
#define RBT_LD_PAD 8
static int64_t group_ld(int64_t rows) { return rows + RBT_LD_PAD; }

static void rowsum_job(rbt_t *R, int64_t lo, int64_t hi) {
  int64_t bt = R->bt, k = R->k, ldg = R->g * bt, ldG = R->ldG;
  for (int64_t p = lo / bt; p * bt < hi; p++) {
    int64_t i0 = (R->gi + p * k) * bt - p * bt; /* row i0 + lr of A for the group's row lr */
    int64_t a = ooc_max64(lo, p * bt), e = ooc_min64(ooc_min64(hi, (p + 1) * bt), R->n - i0);
    if (e <= a) continue;
    double *rs = R->rowsum + i0;
    for (int64_t c = 0; c < ldg; c++) {
      const double *x = R->G + c * ldG;
      for (int64_t lr = a; lr < e; lr++) rs[lr] += fabs(x[lr]);
    }
  }
}

/* x, y := w_x (x + y) / sqrt2, w_y (x - y) / sqrt2 elementwise: one butterfly pair. */
static void pair(int64_t len, double *restrict x, double *restrict y, const double *wx,
                 const double *wy) {
  for (int64_t r = 0; r < len; r++) {
    double a = x[r], b = y[r];
    x[r] = wx[r] * (a + b) * RSQRT2;
    y[r] = wy[r] * (a - b) * RSQRT2;
  }
}

/* The same with scalar weights (V's pair of columns: one weight each). */
static void pair_s(int64_t len, double *restrict x, double *restrict y, double wx, double wy) {
  for (int64_t r = 0; r < len; r++) {
    double a = x[r], b = y[r];
    x[r] = wx * (a + b) * RSQRT2;
    y[r] = wy * (a - b) * RSQRT2;
  }
}

static void mix_bundle(rbt_t *R, int64_t c) {
  int64_t g = R->g, bt = R->bt, k = R->k, ldg = g * bt, ldG = R->ldG, N = R->N;
  double *G = R->G;
  for (int64_t q = 0; q < g; q++) { /* U^T: every level on column q bt + c */
    double *col = G + (q * bt + c) * ldG;
    for (int l = 0; l < R->d; l++) {
      int64_t hp = g >> (l + 1), half = hp * k * bt;
      for (int64_t p = 0; p < g; p++) {
        if (p % (2 * hp) >= hp) continue;
        const double *wi = R->u + l * N + (R->gi + p * k) * bt;
        pair(bt, col + p * bt, col + (p + hp) * bt, wi, wi + half);
      }
    }
  }
  for (int l = 0; l < R->d; l++) { /* V from the right: column q bt + c with (q + hq) bt + c */
    int64_t hq = g >> (l + 1), half = hq * k * bt;
    const double *w = R->v + l * N;
    for (int64_t q = 0; q < g; q++) {
      if (q % (2 * hq) >= hq) continue;
      int64_t i = (R->gj + q * k) * bt + c;
      pair_s(ldg, G + (q * bt + c) * ldG, G + ((q + hq) * bt + c) * ldG, w[i], w[i + half]);
    }
  }
  /* the column sums, each in row order (g is even): two columns at a time, two chains of adds */
  for (int64_t q = 0; q < g; q += 2) {
    const double *x = G + (q * bt + c) * ldG, *y = G + ((q + 1) * bt + c) * ldG;
    double sx = 0, sy = 0;
    for (int64_t r = 0; r < ldg; r++) {
      sx += fabs(x[r]);
      sy += fabs(y[r]);
    }
    R->colnorm[(R->gj + q * k) * bt + c] += sx;
    R->colnorm[(R->gj + (q + 1) * k) * bt + c] += sy;
  }
}

static void group_job(void *arg, int64_t job, int worker) {
  (void)worker;
  rbt_t *R = arg;
  if (R->phase == P_ROWSUM) {
    int64_t lo = job * R->rchunk;
    rowsum_job(R, lo, ooc_min64(R->g * R->bt, lo + R->rchunk));
  } else {
    int64_t lo = job * R->cchunk, hi = ooc_min64(R->bt, lo + R->cchunk);
    for (int64_t c = lo; c < hi; c++) mix_bundle(R, c);
  }
}

static ooc_status_t transform(rbt_t *R, tstore_t *S) {
  int64_t g = R->g, bt = R->bt, ldg = g * bt, ldG = R->ldG, n = R->n;
  int threads = R->a->threads > 0 ? R->a->threads : ooc_par_cpus(OOC_PAR_MAX_THREADS);
  R->rchunk = ooc_max64(64, ooc_cdiv64(ldg, 4 * threads));
  R->cchunk = ooc_max64(1, ooc_cdiv64(bt, 4 * threads));
  int64_t rjobs = ooc_cdiv64(ldg, R->rchunk), cjobs = ooc_cdiv64(bt, R->cchunk);
  for (R->gj = 0; R->gj < R->k; R->gj++)
    for (R->gi = 0; R->gi < R->k; R->gi++) {
      double t0 = ooc_now();
      /* A_pad's (g x g) blocks of the group: the source's part, zeros and pad I beyond n */
      for (int64_t q = 0; q < g; q++)
        for (int64_t p = 0; p < g; p++) {
          int64_t r0 = (R->gi + p * R->k) * bt, c0 = (R->gj + q * R->k) * bt;
          double *blk = R->G + p * bt + q * bt * ldG;
          int64_t nr = ooc_max64(0, ooc_min64(bt, n - r0)), nc = ooc_max64(0, ooc_min64(bt, n - c0));
          if (nr < bt || nc < bt) /* the source fills only its part below n */
            for (int64_t c = 0; c < bt; c++) memset(blk + c * ldG, 0, (size_t)bt * sizeof(double));
          if (nr > 0 && nc > 0) {
            OOC_TRY(R->a->A->read(R->a->A->self, r0, c0, nr, nc, blk, ldG));
            R->st->bytes_a += 8 * nr * nc;
          }
          for (int64_t t = 0; t < bt; t++)
            if (r0 + t == c0 + t && r0 + t >= n) blk[t + t * ldG] = R->pad;
        }
      double t1 = ooc_now();
      R->phase = P_ROWSUM;
      ooc_parallel(threads, rjobs, group_job, R);
      R->phase = P_MIX;
      ooc_parallel(threads, cjobs, group_job, R);
      double t2 = ooc_now();
      for (int64_t q = 0; q < g; q++)
        for (int64_t p = 0; p < g; p++)
          OOC_TRY(ts_put(S, R->gi + p * R->k, R->gj + q * R->k, R->G + p * bt + q * bt * ldG, ldG));
      R->st->t_gather += t1 - t0;
      R->st->t_mix += t2 - t1;
      R->st->t_put += ooc_now() - t2;
      OOC_TRY(ooc_tick(R->ctx, "transform", (R->gj * R->k + R->gi + 1.0) / (double)(R->k * R->k)));
    }
  return OOC_OK;
}

typedef struct {
  const double *T;
  int64_t nr, nc, ld, cpj;
  double part[4 * OOC_PAR_MAX_THREADS];
} amax_t;

static void amax_job(void *arg, int64_t job, int worker) {
  (void)worker;
  amax_t *t = arg;
  double m = 0;
  for (int64_t c = job * t->cpj; c < ooc_min64(t->nc, (job + 1) * t->cpj); c++)
    m = ooc_absmax(t->T + c * t->ld, t->nr, m);
  t->part[job] = m;
}

/* max|a_ij| of the original, a tile at a time, each tile's columns on the threads (only when
 * there is padding: rbt.h; single-threaded it cost as much as the rest of the transform) */
static ooc_status_t amax(rbt_t *R, double *T, double *out) {
  int64_t n = R->n, b = R->b;
  int threads = R->a->threads > 0 ? R->a->threads : ooc_par_cpus(OOC_PAR_MAX_THREADS);
  amax_t t = {.T = T, .ld = b};
  double m = 0;
  for (int64_t c0 = 0; c0 < n; c0 += b)
    for (int64_t r0 = 0; r0 < n; r0 += b) {
      int64_t nr = ooc_min64(b, n - r0), nc = ooc_min64(b, n - c0);
      OOC_TRY(R->a->A->read(R->a->A->self, r0, c0, nr, nc, T, b));
      R->st->bytes_a += 8 * nr * nc;
      t.nr = nr, t.nc = nc;
      int64_t jobs = nr * nc < ((int64_t)1 << 16) ? 1 : ooc_min64(4 * (int64_t)threads, nc);
      jobs = ooc_min64(jobs, 4 * OOC_PAR_MAX_THREADS); /* t.part's room */
      t.cpj = ooc_cdiv64(nc, jobs);
      jobs = ooc_cdiv64(nc, t.cpj);
      if (jobs == 1) amax_job(&t, 0, 0);
      else ooc_parallel(threads, jobs, amax_job, &t);
      for (int64_t j = 0; j < jobs; j++) m = fmax(m, t.part[j]);
    }
  *out = m;
  return OOC_OK;
}

/* ---- solves with the kept factors, residuals ----------------------------------------------- */

/* Z (n x m, ld n) := V (LU)^-1 U^T [Rhs; 0]: through the N x m buffer P and the store SB. */
static ooc_status_t correction(rbt_t *R, tstore_t *SA, tstore_t *SB, int64_t *ipiv,
                               const double *Rhs, double *P, double *Z) {
  int64_t n = R->n, N = R->N, m = R->m, bt = R->bt;
  for (int64_t c = 0; c < m; c++) {
    memcpy(P + c * N, Rhs + c * n, (size_t)n * sizeof(double));
    memset(P + c * N + n, 0, (size_t)(N - n) * sizeof(double));
  }
  rbt_apply_ut(N, R->d, R->u, m, P, N);
  part_t rp = ts_rows(SB), cp = ts_cols(SB);
  for (int64_t tj = 0; tj < cp.count; tj++)
    for (int64_t ti = 0; ti < rp.count; ti++)
      OOC_TRY(ts_put(SB, ti, tj, P + ti * bt + tj * bt * N, N));
  lu_args_t la = {.A = SA, .B = SB, .stripe = R->a->stripe, .ops = R->a->ops,
                  .exec = R->a->exec, .nslots = R->a->nslots, .job = LU_SOLVE_FACTORED,
                  .ipiv = ipiv, .nopiv = 1};
  lu_stats_t ls;
  OOC_TRY(lu_run(R->ctx, &la, &ls, NULL));
  for (int64_t tj = 0; tj < cp.count; tj++)
    for (int64_t ti = 0; ti < rp.count; ti++)
      OOC_TRY(ts_take(SB, ti, tj, P + ti * bt + tj * bt * N, N));
  rbt_apply_v(N, R->d, R->v, m, P, N);
  for (int64_t c = 0; c < m; c++) memcpy(Z + c * n, P + c * N, (size_t)n * sizeof(double));
  return OOC_OK;
}

/* Res := B - A X (n x m, ld n), A streamed from its source a tile of b x b at a time. */
static ooc_status_t residual(rbt_t *R, const double *B, const double *X, double *T, double *Res) {
  int64_t n = R->n, m = R->m, b = R->b;
  memcpy(Res, B, (size_t)(n * m) * sizeof(double));
  for (int64_t r0 = 0; r0 < n; r0 += b)
    for (int64_t c0 = 0; c0 < n; c0 += b) {
      int64_t nr = ooc_min64(b, n - r0), nc = ooc_min64(b, n - c0);
      OOC_TRY(R->a->A->read(R->a->A->self, r0, c0, nr, nc, T, b));
      R->st->bytes_a += 8 * nr * nc;
      R->a->ops->gemm('N', 'N', nr, m, nc, -1.0, T, b, X + c0, n, 1.0, Res + r0, n);
    }
  return OOC_OK;
}

/* The stopping rule per column: max|r_j| < sqrt(n) max|x_j| ||A||_inf eps; *berr the worst
 * max|r_j| / (||A||_inf max|x_j|), *bad the first column that fails (-1: none); NaN or Inf in
 * r or x fails (and makes *berr NaN or Inf, which ends the refinement at once). */
static int converged(rbt_t *R, const double *X, const double *Res, double *berr, int64_t *bad) {
  int64_t n = R->n;
  double anrm = R->st->norm_inf, worst = 0;
  *bad = -1;
  for (int64_t c = 0; c < R->m; c++) {
    double rn = 0, xn = 0;
    for (int64_t i = 0; i < n; i++) {
      double r = fabs(Res[i + c * n]), x = fabs(X[i + c * n]);
      rn = ooc_nanmax(rn, r);
      xn = ooc_nanmax(xn, x);
    }
    double be = !isfinite(xn) ? NAN : rn == 0 ? 0 : rn / (anrm * xn);
    worst = ooc_nanmax(worst, be); /* a NaN column stays the worst: the loop stops on it */
    int ok = isfinite(xn) && (rn == 0 || rn < R->st->tol * xn * anrm);
    if (!ok && *bad < 0) *bad = c;
  }
  *berr = worst;
  return *bad < 0;
}

/* ---- the driver --------------------------------------------------------------------------- */

int64_t rbt_workspace_bytes(int64_t n, int64_t m, int64_t b, int depth, int64_t stripe) {
  if (n <= 0) return 0;
  if (depth <= 0) depth = RBT_DEPTH;
  int64_t N, bt, g = (int64_t)1 << depth;
  rbt_shape(n, b, depth, &N, &bt);
  b = ooc_min64(b > 0 ? b : n, n);
  /* + the padded stores' bookkeeping and staging tiles (SA, SB: tstore_create in rbt_run;
   * issue 18's GPU sweep found them unplanned, 0.5% over --host-mem) */
  return 8 * (g * bt * group_ld(g * bt) + 2 * depth * N + 2 * n * m + N * m + n * m + b * b +
              2 * N + n) +
         lu_workspace_bytes(N, bt, stripe, m) + tstore_overhead_bytes(N, N, bt) +
         tstore_overhead_bytes(N, m, bt) + 4096;
}

/* The padding's diagonal (max|a_ij|, only when N > n), then the transform into S. */
static ooc_status_t pad_and_transform(rbt_t *R, double *T, tstore_t *S) {
  R->pad = 1.0;
  if (R->N > R->n) OOC_TRY(amax(R, T, &R->pad));
  if (!(R->pad > 0) || isinf(R->pad)) R->pad = 1.0; /* a zero A (singular anyway) or Inf */
  return transform(R, S);
}

ooc_status_t rbt_transform_store(ooc_ctx_t *ctx, const rbt_args_t *a, tstore_t *S,
                                 double *colnorm, double *rowsum, rbt_stats_t *stats) {
  int d = a->depth > 0 ? a->depth : RBT_DEPTH;
  rbt_stats_t st;
  if (!stats) stats = &st;
  memset(stats, 0, sizeof *stats);
  rbt_t R = {.ctx = ctx, .a = a, .st = stats, .n = a->n, .m = a->m, .d = d, .g = (int64_t)1 << d,
             .colnorm = colnorm, .rowsum = rowsum};
  R.b = ooc_min64(a->b > 0 ? a->b : a->n, a->n);
  rbt_shape(a->n, R.b, d, &R.N, &R.bt);
  if (a->n == 0) return OOC_OK;
  R.k = R.N / (R.g * R.bt);
  if (ts_rows(S).n != R.N || ts_cols(S).n != R.N || ts_rows(S).b != R.bt)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "rbt: the store must be %lld x %lld with tile %lld",
                    (long long)R.N, (long long)R.N, (long long)R.bt);
  R.ldG = group_ld(R.g * R.bt);
  ooc_status_t st2 = OOC_OK;
  R.u = ooc_malloc(ctx, (size_t)(d * R.N) * sizeof(double));
  R.v = ooc_malloc(ctx, (size_t)(d * R.N) * sizeof(double));
  R.G = ooc_malloc(ctx, (size_t)(R.ldG * R.g * R.bt) * sizeof(double));
  double *T = ooc_malloc(ctx, (size_t)(R.b * R.b) * sizeof(double));
  if (!R.u || !R.v || !R.G || !T)
    st2 = OOC_FAIL(ctx, OOC_ERR_NOMEM, "rbt: out of host memory for the transform (n = %lld)",
                   (long long)a->n);
  if (st2 == OOC_OK) {
    rbt_diagonals(a->seed, R.N, d, R.u, R.v);
    double t0 = ooc_now();
    st2 = pad_and_transform(&R, T, S);
    stats->t_transform = ooc_now() - t0;
  }
  ooc_free(ctx, R.u);
  ooc_free(ctx, R.v);
  ooc_free(ctx, R.G);
  ooc_free(ctx, T);
  return st2;
}

ooc_status_t rbt_solve(ooc_ctx_t *ctx, const rbt_args_t *a, rbt_stats_t *stats) {
  rbt_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  int d = a->depth > 0 ? a->depth : RBT_DEPTH;
  int max_iter = a->max_iter > 0 ? a->max_iter : RBT_MAX_ITER;
  if (d > RBT_MAX_DEPTH)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "rbt: butterfly depth %d is above the maximum %d", d,
                    RBT_MAX_DEPTH);
  if (!a->ops || !a->A || !a->B || !a->X || a->ldx < a->n)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "rbt: missing kernels, source, output or ld < n");
  int64_t n = a->n, m = a->m, b = ooc_min64(a->b > 0 ? a->b : n, n);
  stats->depth = d;
  stats->seed = a->seed;
  stats->tol = sqrt((double)n) * (DBL_EPSILON / 2);
  if (n == 0 || m == 0) {
    stats->converged = 1;
    return OOC_OK;
  }
  rbt_t R = {.ctx = ctx, .a = a, .st = stats, .n = n, .m = m, .b = b, .d = d,
             .g = (int64_t)1 << d};
  rbt_shape(n, b, d, &R.N, &R.bt);
  R.k = R.N / (R.g * R.bt);
  stats->N = R.N;
  stats->bt = R.bt;
  int64_t N = R.N;
  R.ldG = group_ld(R.g * R.bt);
  ooc_status_t st = OOC_OK;
  tstore_t *SA = NULL, *SB = NULL;
  double *B = NULL, *Res = NULL, *P = NULL, *T = NULL, *Z = NULL;
  int64_t *ipiv = NULL;
  R.u = ooc_malloc(ctx, (size_t)(d * N) * sizeof(double));
  R.v = ooc_malloc(ctx, (size_t)(d * N) * sizeof(double));
  R.G = ooc_malloc(ctx, (size_t)(R.ldG * R.g * R.bt) * sizeof(double));
  R.colnorm = ooc_calloc(ctx, (size_t)N, sizeof(double));
  R.rowsum = ooc_calloc(ctx, (size_t)n, sizeof(double));
  B = ooc_malloc(ctx, (size_t)(n * m) * sizeof(double));
  Res = ooc_malloc(ctx, (size_t)(n * m) * sizeof(double));
  Z = ooc_malloc(ctx, (size_t)(n * m) * sizeof(double));
  P = ooc_malloc(ctx, (size_t)(N * m) * sizeof(double));
  T = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  ipiv = ooc_malloc(ctx, (size_t)N * sizeof(int64_t));
  if (!R.u || !R.v || !R.G || !R.colnorm || !R.rowsum || !B || !Res || !Z || !P || !T || !ipiv) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "rbt: out of host memory for n = %lld, %lld right-hand "
                  "sides (%lld bytes of workspace)", (long long)n, (long long)m,
                  (long long)rbt_workspace_bytes(n, m, b, d, a->stripe));
    goto done;
  }
  rbt_diagonals(a->seed, N, d, R.u, R.v);
  OOC_CHECK(st = a->B->read(a->B->self, 0, 0, n, m, B, n));
  OOC_CHECK(st = tstore_create(ctx, a->cache, N, N, R.bt, NULL, a->spill_a, &SA));
  OOC_CHECK(st = tstore_create(ctx, a->cache, N, m, R.bt, NULL, a->spill_b, &SB));
  /* 1. U^T A V into SA */
  double t0 = ooc_now();
  OOC_CHECK(st = pad_and_transform(&R, T, SA));
  for (int64_t i = 0; i < n; i++) stats->norm_inf = fmax(stats->norm_inf, R.rowsum[i]);
  stats->t_transform = ooc_now() - t0;
  /* 2. LU without pivoting; the eps test on U^T A V's columns, tiny pivots counted */
  t0 = ooc_now();
  lu_args_t la = {.A = SA, .stripe = a->stripe, .ops = a->ops, .exec = a->exec,
                  .nslots = a->nslots, .job = LU_FACTOR,
                  .colnorm = R.colnorm, .ipiv = ipiv, .nopiv = 1};
  lu_stats_t ls;
  int64_t info = 0;
  st = lu_run(ctx, &la, &ls, &info);
  if (st != OOC_OK) {
    if (st == OOC_ERR_SINGULAR)
      ooc_error_context(ctx, "rbt (depth %d, seed %llu): LU of the transformed matrix "
                        "U^T A V (n = %lld padded to %lld)", d, (unsigned long long)a->seed,
                        (long long)n, (long long)N);
    goto done;
  }
  stats->growth = ls.growth;
  stats->tiny = ls.tiny;
  stats->min_pivot = ls.min_pivot;
  stats->t_factor = ooc_now() - t0;
  /* 3. x = V (LU)^-1 U^T b */
  t0 = ooc_now();
  OOC_CHECK(st = correction(&R, SA, SB, ipiv, B, P, Z));
  stats->t_solve = ooc_now() - t0;
  /* 4. refinement against the original A; the caller's X is written only once it converged */
  t0 = ooc_now();
  double *X = Z; /* the current x (n x m, ld n) */
  int64_t bad = -1;
  double berr = 0;
  for (int it = 0;; it++) {
    OOC_CHECK(st = residual(&R, B, X, T, Res));
    int ok = converged(&R, X, Res, &berr, &bad);
    if (it == 0) stats->berr0 = berr;
    stats->berr = berr;
    stats->iters = it;
    if (ok) break;
    if (it == max_iter || isnan(berr) || isinf(berr)) {
      stats->t_refine = ooc_now() - t0;
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "rbt (depth %d, seed %llu): refinement did not converge in %d steps: "
                    "right-hand side %lld has max|r| / (||A||_inf max|x|) = %.3g, not below "
                    "sqrt(n) eps = %.3g (worst over all columns %.3g before refinement, %.3g "
                    "after; LU growth %.3g, %lld pivots below sqrt(eps) ||col||_1); pivoted LU "
                    "(--method lu) does not depend on the butterfly", d,
                    (unsigned long long)a->seed, it, (long long)bad, berr, stats->tol,
                    stats->berr0, berr, stats->growth, (long long)stats->tiny);
      goto done;
    }
    /* x += V (LU)^-1 U^T r: the correction into Res's place (Res is consumed) */
    OOC_CHECK(st = correction(&R, SA, SB, ipiv, Res, P, Res));
    for (int64_t i = 0; i < n * m; i++) X[i] += Res[i];
    OOC_CHECK(st = ooc_tick(ctx, "refine", (it + 1.0) / max_iter));
  }
  stats->converged = 1;
  for (int64_t c = 0; c < m; c++)
    memcpy(a->X + c * a->ldx, X + c * n, (size_t)n * sizeof(double));
  stats->t_refine = ooc_now() - t0;
done:
  for (int k = 0; k < 2; k++) {
    tstore_t *S = k ? SB : SA;
    if (!S) continue;
    stats->spilled += ts_stats(S)->bytes_spilled;
    stats->unspilled += ts_stats(S)->bytes_unspilled;
  }
  tstore_destroy(SA);
  tstore_destroy(SB);
  ooc_free(ctx, R.u);
  ooc_free(ctx, R.v);
  ooc_free(ctx, R.G);
  ooc_free(ctx, R.colnorm);
  ooc_free(ctx, R.rowsum);
  ooc_free(ctx, B);
  ooc_free(ctx, Res);
  ooc_free(ctx, Z);
  ooc_free(ctx, P);
  ooc_free(ctx, T);
  ooc_free(ctx, ipiv);
  return st;
}
