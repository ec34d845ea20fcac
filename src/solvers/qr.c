/* qr.c: least squares by Householder QR out of core, with updating (qr.h is the contract). */
#include "solvers/qr.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "exec/ring.h"

#define AT(M, ld, i, j) ((M)[(size_t)(i) + (size_t)(j) * (size_t)(ld)])

int64_t qr_state_bytes(int64_t n, int64_t nrhs) {
  return 8 * n * (n + nrhs) + 8 * nrhs + 8 * n + 4 * 64;
}

ooc_status_t qr_state_new(ooc_ctx_t *ctx, int64_t n, int64_t nrhs, qr_state_t **out) {
  *out = NULL;
  qr_state_t *s = ooc_calloc(ctx, 1, sizeof *s);
  if (s) {
    s->R = ooc_calloc(ctx, (size_t)(n * n > 0 ? n * n : 1), sizeof(double));
    s->D = ooc_calloc(ctx, (size_t)(n * nrhs > 0 ? n * nrhs : 1), sizeof(double));
    s->res = ooc_calloc(ctx, (size_t)(nrhs > 0 ? nrhs : 1), sizeof(double));
    s->colmap = ooc_malloc(ctx, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  }
  if (!s || !s->R || !s->D || !s->res || !s->colmap) {
    qr_state_free(ctx, s);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the QR state (n = %lld, %lld "
                    "right-hand sides: R and Q^T b take %lld bytes)", (long long)n,
                    (long long)nrhs, (long long)qr_state_bytes(n, nrhs));
  }
  s->n = n;
  s->nrhs = nrhs;
  for (int64_t j = 0; j < n; j++) s->colmap[j] = j;
  *out = s;
  return OOC_OK;
}

void qr_state_free(ooc_ctx_t *ctx, qr_state_t *s) {
  if (!s) return;
  ooc_free(ctx, s->R);
  ooc_free(ctx, s->D);
  ooc_free(ctx, s->res);
  ooc_free(ctx, s->colmap);
  ooc_free(ctx, s);
}

double qr_fold_flops(int64_t rows_before, int64_t m, int64_t n, int64_t nrhs) {
  double dm = (double)m, dn = (double)n, dr = (double)nrhs;
  if (rows_before > 0) return 2.0 * dm * dn * dn + 4.0 * dm * dn * dr;
  double k = (double)(m < n ? m : n);
  return 4.0 * dm * dn * k - 2.0 * (dm + dn) * k * k + 4.0 * k * k * k / 3.0 +
         dr * (4.0 * dm * k - 2.0 * k * k);
}

int64_t qr_workspace_bytes(int64_t n, int64_t nrhs, int64_t p, int64_t P) {
  int64_t w = n + nrhs;
  if (P < p) P = p;
  return 8 * (n + P) * w + 8 * (w + 1) + 8 * P * (nrhs > 0 ? nrhs : 1) +
         ring_host_bytes(QR_SLOTS, p, w) + ex_host_bytes(1) + 16 * 64 + 4096;
}

int64_t qr_block_rows(int64_t bytes, int64_t n, int64_t nrhs) {
  int64_t w = n + nrhs, fixed = qr_workspace_bytes(n, nrhs, 0, 0);
  if (bytes <= fixed) return 0;
  /* each row of a block costs a row of S, of each slot and of the residual buffer */
  return (bytes - fixed) / (8 * w * (1 + QR_SLOTS) + 8 * (nrhs > 0 ? nrhs : 1));
}

/* ---- the fold -------------------------------------------------------------------------------- */

typedef struct fold {
  const qr_args_t *a;
  qr_state_t *s;
  ooc_exec_t *ex;
  double *S, *tau;    /* device */
  int64_t ldS, w, t;  /* t: valid rows of [R d] at S's top */
  int64_t P, fill;    /* S's rows under them (the panel), and how many hold blocks now */
  int64_t nitems;
  double *resbuf;     /* staging, P x nrhs: a factorization's residual rows come back here */
  ex_event_t *resev;  /* recorded after that get */
  int64_t respend;    /* rows in resbuf not yet added to the norms */
  double t_read;
  int64_t nblocks, nfact;
} fold_t;

static int64_t block_rows(const fold_t *F, int64_t q) {
  int64_t r0 = q * F->a->block, r1 = r0 + F->a->block;
  return (r1 < F->a->m ? r1 : F->a->m) - r0;
}

/* The residual block of the last factorization into the norms: column c's residual component is
 * the upper-triangular column R22[0..c, c] (Q orthogonal keeps its norm; the entries below R22's
 * diagonal are reflectors): hypot of the old norm and its scaled 2-norm, once its get has run. */
static ooc_status_t res_drain(fold_t *F) {
  if (F->respend <= 0) return OOC_OK;
  OOC_TRY(ex_sync(F->ex, F->resev));
  for (int64_t c = 0; c < F->s->nrhs; c++) {
    int64_t rows = c + 1 < F->respend ? c + 1 : F->respend;
    F->s->res[c] = hypot(F->s->res[c], ooc_nrm2(rows, F->resbuf + c * F->P));
  }
  F->respend = 0;
  return OOC_OK;
}

/* Factor the t + fill rows at S's top: geqrf of all n + nrhs columns ([A b] augmented), so the
 * right-hand sides need no ormqr: their top n rows become d = Q^T b and rows n .. n + nrhs - 1
 * the triangular R22 of what is left, whose column norms are the block's residual norms. [R d]
 * is then on top again. (cuSOLVER's ormqr would also need a workspace the size of the panel.) */
static ooc_status_t factor(fold_t *F) {
  ooc_exec_t *e = F->ex;
  int64_t n = F->s->n, nrhs = F->s->nrhs, h = F->t + F->fill, k = h < n ? h : n;
  double *S = F->S, *SB = F->S + F->ldS * n;
  OOC_TRY(ex_geqrf(e, 0, h, F->w, S, F->ldS, F->tau));
  if (h > n && nrhs > 0) {
    int64_t r2 = h - n < nrhs ? h - n : nrhs; /* R22's rows */
    OOC_TRY(res_drain(F)); /* resbuf is free once the previous get has run */
    OOC_TRY(ex_get(e, 0, r2, nrhs, SB + n, F->ldS, F->resbuf, F->P));
    OOC_TRY(ex_record(e, 0, F->resev));
    F->respend = r2;
  }
  /* the reflectors under R's diagonal: S's strict lower part of rows [0, k) in the first n
   * columns (everything from row n down, R22 and reflectors, is overwritten by the next blocks'
   * puts before the next factorization reads it) */
  if (k > 1) OOC_TRY(ex_laset(e, 0, 'L', k - 1, n, 0.0, 0.0, S + 1, F->ldS));
  F->t = k;
  F->fill = 0;
  F->nfact++;
  return OOC_OK;
}

static ooc_status_t f_take(void *user, int64_t q, double *slot, int64_t ld) {
  fold_t *F = user;
  int64_t nr = block_rows(F, q), n = F->s->n;
  double t0 = ooc_now();
  ooc_status_t st = F->a->read(F->a->user, q * F->a->block, nr, slot, ld, slot + ld * n, ld);
  F->t_read += ooc_now() - t0;
  return st;
}

/* A block into the panel; the panel factored when the next block would not fit (or at the end). */
static ooc_status_t f_work(void *user, int64_t q, int si, double *slot, int64_t ld, int *lastq) {
  fold_t *F = user;
  int64_t p = block_rows(F, q);
  (void)si;
  *lastq = 0;
  OOC_TRY(ex_put(F->ex, 0, p, F->w, slot, ld, F->S + F->t + F->fill, F->ldS));
  F->fill += p;
  if (q == F->nitems - 1 || F->fill + block_rows(F, q + 1) > F->P) OOC_TRY(factor(F));
  return OOC_OK;
}

static ooc_status_t f_put(void *user, int64_t q, double *slot, int64_t ld) {
  fold_t *F = user;
  (void)slot, (void)ld;
  F->nblocks++;
  ooc_note_step(F->a->ctx, q + 1, F->nitems);
  return ooc_tick(F->a->ctx, F->a->phase ? F->a->phase : "qr",
                  (double)(q + 1) / (double)F->nitems);
}

ooc_status_t qr_fold(const qr_args_t *a, qr_state_t *s, qr_stats_t *stats) {
  ooc_ctx_t *ctx = a->ctx;
  double t0 = ooc_now();
  if (stats) memset(stats, 0, sizeof *stats);
  if (a->block < 1 || a->m < 0 || !a->read)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "qr_fold: block %lld rows, m = %lld",
                    (long long)a->block, (long long)a->m);
  if (a->m == 0) return OOC_OK;
  ooc_exec_t *ex = a->exec, *own = NULL;
  ooc_status_t st = OOC_OK;
  ring_t *ring = NULL;
  int64_t n = s->n, nrhs = s->nrhs, p = a->block < a->m ? a->block : a->m;
  int64_t P = a->panel > p ? a->panel : p;
  if (P > a->m) P = a->m > p ? a->m : p;
  fold_t F = {.a = a, .s = s, .w = n + nrhs, .ldS = n + P, .P = P,
              .nitems = (a->m + a->block - 1) / a->block};
  F.t = s->rows < n ? s->rows : n;
  double flops0 = 0.0, t1 = t0;
  if (!ex) {
    OOC_CHECK(st = ex_host_create(ctx, a->ops, 1, 0, &own));
    ex = own;
  }
  F.ex = ex;
  flops0 = ex->stats.flops;
  OOC_CHECK(st = ex_alloc(ex, (size_t)(F.ldS * F.w) * sizeof(double), &F.S));
  OOC_CHECK(st = ex_alloc(ex, (size_t)(F.w + 1) * sizeof(double), &F.tau));
  OOC_CHECK(st = ex_host_alloc(ex, (size_t)(P * (nrhs > 0 ? nrhs : 1)) * sizeof(double),
                               &F.resbuf)); /* ld P: R22 has at most nrhs <= P rows */
  OOC_CHECK(st = ex_event_create(ex, &F.resev));
  /* the state's valid rows on top: [R D] (R's zeros below the diagonal included) */
  if (F.t > 0) {
    OOC_CHECK(st = ex_put(ex, 0, F.t, n, s->R, n, F.S, F.ldS));
    OOC_CHECK(st = ex_put(ex, 0, F.t, nrhs, s->D, n, F.S + F.ldS * n, F.ldS));
  }
  OOC_CHECK(st = ring_create(ex, QR_SLOTS, p, F.w, &ring));
  static const ring_ops_t ops = {f_take, f_work, f_put};
  t1 = ooc_now();
  OOC_CHECK(st = ring_run(ring, F.nitems, &ops, &F));
  OOC_CHECK(st = res_drain(&F));
  /* back to the state: R's and D's valid rows; the rest stays zero */
  OOC_CHECK(st = ex_get(ex, 0, F.t, n, F.S, F.ldS, s->R, n));
  OOC_CHECK(st = ex_get(ex, 0, F.t, nrhs, F.S + F.ldS * n, F.ldS, s->D, n));
  OOC_CHECK(st = ex_finish(ex));
  s->rows += a->m;
  if (stats) {
    stats->t_read = F.t_read;
    stats->t_wait = ring->stats.t_wait;
    stats->t_setup = t1 - t0;
    stats->blocks = F.nblocks;
    stats->factorizations = F.nfact;
    stats->flops = ex->stats.flops - flops0;
  }
done:
  ring_destroy(ring);
  if (ex) {
    (void)ex_finish(ex); /* on a failure, operations on S may still be queued */
    ex_free(ex, F.S);
    ex_free(ex, F.tau);
    ex_host_free(ex, F.resbuf);
    ex_event_destroy(ex, F.resev);
  }
  ex_destroy(own);
  if (stats) stats->t_total = ooc_now() - t0;
  return st;
}

/* ---- remove columns ---------------------------------------------------------------------- */

ooc_status_t qr_remove_cols(ooc_ctx_t *ctx, ooc_exec_t *exec, const ooc_ops_t *ops, qr_state_t *s,
                            int64_t c0, int64_t c1) {
  int64_t n = s->n, nrhs = s->nrhs, pc = c1 - c0, n2 = n - pc;
  if (c0 < 0 || c1 > n || c0 >= c1 || n2 < 1)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "remove columns [%lld, %lld): R has %lld columns (0-based, "
                    "end exclusive; at least one must remain)", (long long)c0, (long long)c1,
                    (long long)n);
  /* R without the columns, in place (a column only moves left) */
  for (int64_t j = c0; j < n2; j++)
    memmove(s->R + j * n, s->R + (j + pc) * n, (size_t)n * sizeof(double));
  for (int64_t j = c0; j < n2; j++) s->colmap[j] = s->colmap[j + pc];
  ooc_exec_t *ex = exec, *own = NULL;
  ooc_status_t st = OOC_OK;
  double *W = NULL, *tau = NULL;
  int64_t h = n - c0, wc = n2 - c0, ld = h; /* the block [R'[c0:n, c0:n2] D[c0:n]] */
  if (!ex) {
    OOC_CHECK(st = ex_host_create(ctx, ops, 1, 0, &own));
    ex = own;
  }
  OOC_CHECK(st = ex_alloc(ex, (size_t)(ld * (wc + nrhs)) * sizeof(double), &W));
  OOC_CHECK(st = ex_alloc(ex, (size_t)(wc + nrhs + 1) * sizeof(double), &tau));
  OOC_CHECK(st = ex_put(ex, 0, h, wc, s->R + c0 + c0 * n, n, W, ld));
  OOC_CHECK(st = ex_put(ex, 0, h, nrhs, s->D + c0, n, W + ld * wc, ld));
  /* geqrf of [R' D] augmented (as the fold): d's rows in place, R22 under them */
  OOC_CHECK(st = ex_geqrf(ex, 0, h, wc + nrhs, W, ld, tau));
  if (wc > 0 && h > 1) OOC_CHECK(st = ex_laset(ex, 0, 'L', h - 1, wc, 0.0, 0.0, W + 1, ld));
  OOC_CHECK(st = ex_get(ex, 0, h, wc, W, ld, s->R + c0 + c0 * n, n));
  OOC_CHECK(st = ex_get(ex, 0, h, nrhs, W + ld * wc, ld, s->D + c0, n));
  OOC_CHECK(st = ex_finish(ex));
  /* D's rows [n2, n) now hold R22 (upper triangular; reflectors below): the components that
   * leave the problem. Column c's are R22[0..c, c]. */
  for (int64_t c = 0; c < nrhs; c++) {
    int64_t rows = c + 1 < pc ? c + 1 : pc;
    s->res[c] = hypot(s->res[c], ooc_nrm2(rows, s->D + n2 + c * n));
  }
  /* compact to ld n2 (in place: every element moves to a lower or equal address) */
  for (int64_t j = 0; j < n2; j++)
    memmove(s->R + j * n2, s->R + j * n, (size_t)n2 * sizeof(double));
  for (int64_t c = 0; c < nrhs; c++)
    memmove(s->D + c * n2, s->D + c * n, (size_t)n2 * sizeof(double));
  s->n = n2;
done:
  if (ex) {
    (void)ex_finish(ex); /* nothing may still use W when it is freed */
    ex_free(ex, W);
    ex_free(ex, tau);
  }
  ex_destroy(own);
  return st;
}

/* ---- rank and solve ---------------------------------------------------------------------- */

static double col_ratio(const qr_state_t *s, int64_t j, double *cn) {
  *cn = ooc_nrm2(j + 1, s->R + j * s->n);
  double r = fabs(AT(s->R, s->n, j, j));
  return *cn > 0.0 ? r / *cn : 0.0;
}

int64_t qr_rank(const qr_state_t *s, int64_t *first_bad, double *cond_est) {
  int64_t n = s->n, rank = 0;
  double tol = QR_RANK_TOL_N * (double)n * DBL_EPSILON, dmax = 0.0, dmin = INFINITY;
  if (first_bad) *first_bad = -1;
  for (int64_t j = 0; j < n; j++) {
    double cn, r = col_ratio(s, j, &cn), d = fabs(AT(s->R, n, j, j));
    if (d > dmax) dmax = d;
    if (d < dmin) dmin = d;
    if (r > tol && j < s->rows) rank++;
    else if (first_bad && *first_bad < 0) *first_bad = j;
  }
  if (cond_est) *cond_est = n == 0 ? 1.0 : dmin > 0.0 ? dmax / dmin : INFINITY;
  return rank;
}

ooc_status_t qr_solve(ooc_ctx_t *ctx, ooc_exec_t *exec, const ooc_ops_t *ops, const qr_state_t *s,
                      double *X, int64_t ldx, int64_t *info) {
  int64_t n = s->n, nrhs = s->nrhs, bad;
  if (info) *info = 0;
  int64_t rank = qr_rank(s, &bad, NULL);
  if (rank < n) {
    double cn, r = col_ratio(s, bad, &cn);
    if (info) *info = bad + 1;
    if (s->rows < n)
      return OOC_FAIL(ctx, OOC_ERR_SINGULAR, "least squares: %lld rows for %lld unknowns: rank at "
                      "most %lld, the solution is not unique (underdetermined problems are not "
                      "supported)", (long long)s->rows, (long long)n, (long long)s->rows);
    return OOC_FAIL(ctx, OOC_ERR_SINGULAR, "least squares: A is rank deficient: numerical rank "
                    "%lld of %lld; column %lld (0-based, original column %lld) has |r_jj| / "
                    "||A[:, j]|| = %.3g <= tol = n eps = %.3g (it is nearly a combination of the "
                    "columns before it): no solution is returned; remove it (--remove-cols) or "
                    "regularise", (long long)rank, (long long)n, (long long)bad,
                    (long long)s->colmap[bad], r, QR_RANK_TOL_N * (double)n * DBL_EPSILON);
  }
  ooc_exec_t *ex = exec, *own = NULL;
  ooc_status_t st = OOC_OK;
  double *T = NULL;
  if (!ex) {
    OOC_CHECK(st = ex_host_create(ctx, ops, 1, 0, &own));
    ex = own;
  }
  OOC_CHECK(st = ex_alloc(ex, (size_t)(n * (n + nrhs)) * sizeof(double), &T));
  OOC_CHECK(st = ex_put(ex, 0, n, n, s->R, n, T, n));
  OOC_CHECK(st = ex_put(ex, 0, n, nrhs, s->D, n, T + n * n, n));
  OOC_CHECK(st = ex_trsm(ex, 0, 'L', 'U', 'N', 'N', n, nrhs, 1.0, T, n, T + n * n, n));
  OOC_CHECK(st = ex_get(ex, 0, n, nrhs, T + n * n, n, X, ldx));
  OOC_CHECK(st = ex_finish(ex));
  /* R's rank test passed, yet R^-1 d can overflow (A tiny against b): never hand out an Inf */
  for (int64_t c = 0; c < nrhs; c++)
    for (int64_t j = 0; j < n; j++)
      if (!isfinite(AT(X, ldx, j, c))) {
        st = OOC_FAIL(ctx, OOC_ERR_ACCURACY, "least squares: x[%lld, %lld] (original column "
                      "%lld) is %g: R^-1 d overflowed (A is too small against b: scale them)",
                      (long long)j, (long long)c, (long long)s->colmap[j], AT(X, ldx, j, c));
        goto done;
      }
done:
  if (ex) {
    (void)ex_finish(ex);
    ex_free(ex, T);
  }
  ex_destroy(own);
  return st;
}
