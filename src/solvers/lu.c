/* lu.c: LU with partial pivoting out of core, on the executor and the ring. See lu.h for the
 * algorithm, flops and I/O. Queue QC runs the arithmetic in order; QT (a second queue when the
 * executor has one) the copies into device buffers, so that a column's transfer overlaps the
 * products of the columns before it. */
#include "solvers/lu.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "exec/ring.h"

enum { QC = 0 };

/* Small host arrays: diag (W), local pivots (W), the per-column done marks (tile columns), the
 * row sums of |A| (n). */
static int64_t small_bytes(int64_t n, int64_t b, int64_t W) {
  return 8 * (2 * W + ooc_cdiv64(n, b) + n) + 4096;
}

/* The host executor's own allocations (its struct, the queues' operation rings, the buffer
 * headers, events): bounded, counted here so the planner leaves room for them. */
#define LU_EXEC_BYTES (96 * 1024)

int64_t lu_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  (void)m;
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  return 8 * n * W + 8 * LU_SLOTS * n * b + ring_host_bytes(LU_SLOTS, n, b) +
         small_bytes(n, b, W) + LU_EXEC_BYTES;
}

void lu_inverse_perm(int64_t n, const int64_t *ipiv, int64_t *perm) {
  /* p = the row order of PA (row i of PA is row p[i] of A): the swaps applied to 0..n-1.
   * A^-1 = (LU)^-1 P and row i of P is e_{p[i]}^T, so column p[i] of A^-1 is column i of Z:
   * perm = p^-1, inverted in place cycle by cycle (done entries are stored as -1 - value). */
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = ipiv[i], t = perm[i];
    perm[i] = perm[k];
    perm[k] = t;
  }
  for (int64_t i = 0; i < n; i++) {
    if (perm[i] < 0) continue;
    int64_t j = i, k = perm[i];
    while (k != i) {
      int64_t next = perm[k];
      perm[k] = -1 - j;
      j = k;
      k = next;
    }
    perm[i] = -1 - j;
  }
  for (int64_t i = 0; i < n; i++) perm[i] = -1 - perm[i];
}

/* ---- state ------------------------------------------------------------------------------ */

typedef struct lu {
  ooc_ctx_t *ctx;
  const lu_args_t *a;
  ooc_exec_t *ex;
  ring_t *ring;
  int QT;                 /* the transfer queue */
  tstore_t *A, *B;
  part_t p;               /* rows = cols partition of A */
  int64_t n, b, W, nt;
  double *P;              /* device n x W, ld n, global rows */
  double *D[LU_SLOTS];    /* device twins of the ring slots, n x b, ld n, global rows */
  ex_event_t *evput[LU_SLOTS], *ev;
  int64_t *ipiv;          /* the caller's, global 0-based */
  int64_t *loc;           /* getrf's local pivots (W) */
  double *diag;           /* U's diagonal of the stripe (W) */
  double *rowsum;         /* sum_j |a_ij| (n), for ||A||_inf */
  int64_t *done;          /* per tile column: swaps ipiv[0, done) are applied to it in the store */
  lu_stats_t *st;
  double amax, umax;      /* for the growth */
  /* the current ring pass */
  int64_t k0, w, kt0, kt1; /* factor step: the stripe */
  int64_t r0, rt0, rt1, mw; /* solve: the RHS stripe (columns of B) */
  int64_t j0;             /* forward sweep: first tile column */
  int64_t zero_col;       /* SOLVE_FACTORED: first zero on U's diagonal (-1: none) */
  int invert;
} lu_t;

static int64_t cstart(const lu_t *L, int64_t j) { return part_start(L->p, j); }
static int64_t clen(const lu_t *L, int64_t j) { return part_len(L->p, j); }

/* ---- factor: stripe in ------------------------------------------------------------------ */

static ooc_status_t load_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = L->kt0 + q, bj = clen(L, tj);
  OOC_TRY(ts_take_tiles(L->A, 0, L->nt, tj, tj + 1, slot, ld));
  L->st->bytes_streamed += 8 * L->n * bj;
  /* the growth's denominator (the input's largest entry) and ||A||_inf: the stripe in the store
   * is A's columns in A's row order (the swaps are applied on the device) */
  double m = L->amax, *rs = L->rowsum;
  for (int64_t c = 0; c < bj; c++)
    for (int64_t i = 0; i < L->n; i++) {
      double v = fabs(slot[i + c * ld]);
      m = fmax(m, v);
      rs[i] += v;
    }
  L->amax = m;
  return OOC_OK;
}

static ooc_status_t load_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)s;
  int64_t tj = L->kt0 + q;
  OOC_TRY(ex_put(L->ex, L->QT, L->n, clen(L, tj), slot, ld, L->P + (cstart(L, tj) - L->k0) * L->n,
                 L->n));
  *last = L->QT;
  return OOC_OK;
}

/* ---- factor: earlier columns stream through, read only ---------------------------------- */

static ooc_status_t left_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t j = q, c0 = cstart(L, j);
  OOC_TRY(ts_read_tiles(L->A, j, L->nt, j, j + 1, slot + c0, ld));
  L->st->bytes_streamed += 8 * (L->n - c0) * clen(L, j);
  return OOC_OK;
}

/* Slot s into its device twin, rows [r0, r1); QC waits for the copy. */
static ooc_status_t to_twin(lu_t *L, int s, const double *slot, int64_t r0, int64_t r1,
                            int64_t bj) {
  OOC_TRY(ex_put(L->ex, L->QT, r1 - r0, bj, slot + r0, L->n, L->D[s] + r0, L->n));
  if (L->QT != QC) {
    OOC_TRY(ex_record(L->ex, L->QT, L->evput[s]));
    OOC_TRY(ex_wait(L->ex, QC, L->evput[s]));
  }
  return OOC_OK;
}

static ooc_status_t left_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)ld;
  int64_t j = q, c0 = cstart(L, j), bj = clen(L, j), c1 = c0 + bj, n = L->n, w = L->w;
  double *Dj = L->D[s];
  OOC_TRY(to_twin(L, s, slot, c0, n, bj));
  /* the swaps of the steps after column j's own: rows >= done[j] only */
  if (L->done[j] < L->k0)
    OOC_TRY(ex_laswp(L->ex, QC, bj, Dj, n, L->done[j], L->k0, L->ipiv));
  OOC_TRY(ex_trsm(L->ex, QC, 'L', 'L', 'N', 'U', bj, w, 1.0, Dj + c0, n, L->P + c0, n));
  if (n > c1)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', n - c1, w, bj, -1.0, Dj + c1, n, L->P + c0, n, 1.0,
                    L->P + c1, n));
  *last = QC;
  return OOC_OK;
}

/* ---- factor: stripe out ----------------------------------------------------------------- */

static ooc_status_t store_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)s;
  int64_t tj = L->kt0 + q;
  OOC_TRY(ex_get(L->ex, QC, L->n, clen(L, tj), L->P + (cstart(L, tj) - L->k0) * L->n, L->n, slot,
                 ld));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t store_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = L->kt0 + q, c0 = cstart(L, tj), bj = clen(L, tj);
  double m = L->umax; /* U: rows 0..c of column c */
  for (int64_t c = 0; c < bj; c++)
    for (int64_t i = 0; i <= c0 + c; i++) m = fmax(m, fabs(slot[i + c * ld]));
  L->umax = m;
  OOC_TRY(ts_put_tiles(L->A, 0, L->nt, tj, tj + 1, slot, ld));
  L->st->bytes_streamed += 8 * L->n * bj;
  L->done[tj] = L->k0 + L->w;
  return OOC_OK;
}

/* ---- factor: the last swaps into the columns left of the last stripe -------------------- */

static ooc_status_t fix_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t j = q, d = L->done[j];
  OOC_TRY(ts_take_tiles(L->A, d / L->b, L->nt, j, j + 1, slot + d, ld));
  L->st->bytes_streamed += 8 * (L->n - d) * clen(L, j);
  return OOC_OK;
}

static ooc_status_t fix_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  int64_t j = q, d = L->done[j], bj = clen(L, j), n = L->n;
  OOC_TRY(to_twin(L, s, slot, d, n, bj));
  OOC_TRY(ex_laswp(L->ex, QC, bj, L->D[s], n, d, n, L->ipiv));
  OOC_TRY(ex_get(L->ex, QC, n - d, bj, L->D[s] + d, n, slot + d, ld));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t fix_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t j = q, d = L->done[j];
  OOC_TRY(ts_put_tiles(L->A, d / L->b, L->nt, j, j + 1, slot + d, ld));
  L->st->bytes_streamed += 8 * (L->n - d) * clen(L, j);
  L->done[j] = L->n;
  return OOC_OK;
}

static ooc_status_t run_ring(lu_t *L, int64_t nitems, const ring_ops_t *ops) {
  ring_stats_t before = L->ring->stats;
  ooc_status_t st = ring_run(L->ring, nitems, ops, L);
  L->st->t_take += L->ring->stats.t_take - before.t_take;
  L->st->t_put += L->ring->stats.t_put - before.t_put;
  L->st->t_wait += L->ring->stats.t_wait - before.t_wait;
  return st;
}

/* Every queue's work so far is done (the host may read what ex_get and getrf wrote). */
static ooc_status_t drain(lu_t *L) {
  double t0 = ooc_now();
  OOC_TRY(ex_record(L->ex, QC, L->ev));
  ooc_status_t st = ex_sync(L->ex, L->ev);
  L->st->t_wait += ooc_now() - t0;
  return st;
}

/* QC waits for the copies QT has queued. */
static ooc_status_t join_qt(lu_t *L) {
  if (L->QT == QC) return OOC_OK;
  OOC_TRY(ex_record(L->ex, L->QT, L->evput[0]));
  return ex_wait(L->ex, QC, L->evput[0]);
}

static ooc_status_t singular(lu_t *L, int64_t col, int exact, double u, int64_t *info) {
  if (info) *info = col + 1;
  double cn = L->a->colnorm ? L->a->colnorm[col] : 0;
  if (exact)
    return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                    "matrix is singular: the pivot of column %lld (0-based) is exactly zero "
                    "(LAPACK's info %lld)", (long long)col, (long long)(col + 1));
  return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                  "matrix is singular to working precision: the pivot of column %lld (0-based) "
                  "is |u_jj| = %.3g <= eps * ||A[:, j]||_1 = %.3g (LU with partial pivoting)",
                  (long long)col, fabs(u), DBL_EPSILON * cn);
}

static ooc_status_t factor(lu_t *L, int64_t *info) {
  int64_t n = L->n, b = L->b, W = L->W;
  int64_t nsteps = ooc_cdiv64(n, W);
  double t0 = ooc_now();
  ring_ops_t load = {load_take, load_work, NULL}, left = {left_take, left_work, NULL};
  ring_ops_t store = {NULL, store_work, store_put}, fix = {fix_take, fix_work, fix_put};
  double logdet = 0;
  int sign = 1;
  for (int64_t step = 0; step < nsteps; step++) {
    L->k0 = step * W;
    L->w = ooc_min64(W, n - L->k0);
    L->kt0 = L->k0 / b;
    L->kt1 = ooc_cdiv64(L->k0 + L->w, b);
    int64_t k0 = L->k0, w = L->w;
    OOC_TRY(run_ring(L, L->kt1 - L->kt0, &load));
    OOC_TRY(join_qt(L));
    if (k0 > 0) OOC_TRY(ex_laswp(L->ex, QC, w, L->P, n, 0, k0, L->ipiv));
    OOC_TRY(run_ring(L, L->kt0, &left));
    int64_t bad = 0;
    OOC_TRY(ex_getrf(L->ex, QC, n - k0, w, L->P + k0, n, L->loc, &bad));
    OOC_TRY(ex_get(L->ex, QC, 1, w, L->P + k0, n + 1, L->diag, 1));
    OOC_TRY(drain(L));
    for (int64_t i = 0; i < w; i++) L->ipiv[k0 + i] = k0 + L->loc[i];
    for (int64_t i = 0; i < w; i++) {
      double u = L->diag[i];
      int64_t col = k0 + i;
      if (bad && i == bad - 1) return singular(L, col, 1, u, info);
      double cn = L->a->colnorm ? L->a->colnorm[col] : 0;
      if (!(fabs(u) > DBL_EPSILON * cn)) return singular(L, col, u == 0, u, info);
      logdet += log(fabs(u));
      if (u < 0) sign = -sign;
      if (L->ipiv[col] != col) sign = -sign;
    }
    OOC_TRY(run_ring(L, L->kt1 - L->kt0, &store));
    L->st->steps++;
    OOC_TRY(ooc_tick(L->ctx, "factor", (step + 1.0) / nsteps));
  }
  /* the swaps after each column's own step, into the store (tile columns before the last
   * stripe; done[] is a multiple of b there) */
  int64_t nfix = 0;
  while (nfix < L->nt && L->done[nfix] < n) nfix++;
  OOC_TRY(run_ring(L, nfix, &fix));
  L->st->growth = L->amax > 0 ? L->umax / L->amax : 0;
  for (int64_t i = 0; i < n; i++) L->st->norm_inf = fmax(L->st->norm_inf, L->rowsum[i]);
  L->st->logdet = logdet;
  L->st->sign = sign;
  L->st->t_factor += ooc_now() - t0;
  return OOC_OK;
}

/* ---- solve: RHS stripes through P --------------------------------------------------------- */

static ooc_status_t rhs_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = L->rt0 + q;
  part_t cp = ts_cols(L->B);
  int64_t bj = part_len(cp, tj);
  if (L->invert) { /* the identity's columns [c0, c0 + bj) */
    int64_t c0 = part_start(cp, tj);
    for (int64_t c = 0; c < bj; c++) {
      memset(slot + c * ld, 0, (size_t)L->n * sizeof(double));
      slot[c0 + c + c * ld] = 1.0;
    }
    return OOC_OK;
  }
  OOC_TRY(ts_take_tiles(L->B, 0, L->nt, tj, tj + 1, slot, ld));
  L->st->bytes_streamed += 8 * L->n * bj;
  return OOC_OK;
}

static ooc_status_t rhs_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)s;
  part_t cp = ts_cols(L->B);
  int64_t tj = L->rt0 + q;
  OOC_TRY(ex_put(L->ex, L->QT, L->n, part_len(cp, tj), slot, ld,
                 L->P + (part_start(cp, tj) - L->r0) * L->n, L->n));
  *last = L->QT;
  return OOC_OK;
}

static ooc_status_t fwd_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  return left_take(u, L->j0 + q, slot, ld);
}

static ooc_status_t fwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)ld;
  int64_t j = L->j0 + q, c0 = cstart(L, j), bj = clen(L, j), c1 = c0 + bj, n = L->n;
  OOC_TRY(to_twin(L, s, slot, c0, n, bj));
  OOC_TRY(ex_trsm(L->ex, QC, 'L', 'L', 'N', 'U', bj, L->mw, 1.0, L->D[s] + c0, n, L->P + c0, n));
  if (n > c1)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', n - c1, L->mw, bj, -1.0, L->D[s] + c1, n, L->P + c0, n,
                    1.0, L->P + c1, n));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t bwd_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t j = L->nt - 1 - q, c0 = cstart(L, j), bj = clen(L, j);
  OOC_TRY(ts_read_tiles(L->A, 0, j + 1, j, j + 1, slot, ld));
  L->st->bytes_streamed += 8 * (c0 + bj) * bj;
  for (int64_t c = 0; c < bj && L->zero_col != -2; c++) /* -2: not checking */
    if (slot[c0 + c + c * ld] == 0.0 && (L->zero_col < 0 || c0 + c < L->zero_col))
      L->zero_col = c0 + c;
  return OOC_OK;
}

static ooc_status_t bwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)ld;
  int64_t j = L->nt - 1 - q, c0 = cstart(L, j), bj = clen(L, j), n = L->n;
  OOC_TRY(to_twin(L, s, slot, 0, c0 + bj, bj));
  OOC_TRY(ex_trsm(L->ex, QC, 'L', 'U', 'N', 'N', bj, L->mw, 1.0, L->D[s] + c0, n, L->P + c0, n));
  if (c0 > 0)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', c0, L->mw, bj, -1.0, L->D[s], n, L->P + c0, n, 1.0, L->P,
                    n));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t out_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)s;
  part_t cp = ts_cols(L->B);
  int64_t tj = L->rt0 + q;
  OOC_TRY(ex_get(L->ex, QC, L->n, part_len(cp, tj), L->P + (part_start(cp, tj) - L->r0) * L->n,
                 L->n, slot, ld));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t out_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = L->rt0 + q;
  OOC_TRY(ts_put_tiles(L->B, 0, L->nt, tj, tj + 1, slot, ld));
  L->st->bytes_streamed += 8 * L->n * part_len(ts_cols(L->B), tj);
  return OOC_OK;
}

static ooc_status_t solve(lu_t *L, int64_t *info) {
  part_t cp = ts_cols(L->B);
  int64_t n = L->n;
  double t0 = ooc_now();
  /* RHS stripes: whole tile columns of B, as many as P holds (at least one: W >= b) */
  int64_t per = ooc_max64(1, L->W / L->b);
  int64_t nstripes = ooc_cdiv64(cp.count, per);
  ring_ops_t in = {rhs_take, rhs_work, NULL}, fwd = {fwd_take, fwd_work, NULL};
  ring_ops_t bwd = {bwd_take, bwd_work, NULL}, out = {NULL, out_work, out_put};
  L->zero_col = L->a->job == LU_SOLVE_FACTORED ? -1 : -2;
  for (int64_t sidx = 0; sidx < nstripes; sidx++) {
    L->rt0 = sidx * per;
    L->rt1 = ooc_min64(cp.count, L->rt0 + per);
    L->r0 = part_start(cp, L->rt0);
    L->mw = part_start(cp, L->rt1 - 1) + part_len(cp, L->rt1 - 1) - L->r0;
    OOC_TRY(run_ring(L, L->rt1 - L->rt0, &in));
    OOC_TRY(join_qt(L));
    if (!L->invert) OOC_TRY(ex_laswp(L->ex, QC, L->mw, L->P, n, 0, n, L->ipiv));
    /* the identity's rows above r0 stay zero under L^-1: start at its tile column */
    L->j0 = L->invert ? L->r0 / L->b : 0;
    OOC_TRY(run_ring(L, L->nt - L->j0, &fwd));
    OOC_TRY(run_ring(L, L->nt, &bwd));
    if (L->zero_col >= 0) { /* a factor file's U with a zero on its diagonal */
      OOC_TRY(drain(L));
      if (info) *info = L->zero_col + 1;
      return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                      "the factor is singular: U[%lld, %lld] (0-based) is zero, so A = P^T L U "
                      "has no inverse (LAPACK's info %lld)", (long long)L->zero_col,
                      (long long)L->zero_col, (long long)(L->zero_col + 1));
    }
    L->zero_col = -2; /* the diagonal was checked on the first stripe */
    OOC_TRY(run_ring(L, L->rt1 - L->rt0, &out));
    L->st->rhs_steps++;
    OOC_TRY(ooc_tick(L->ctx, "solve", (sidx + 1.0) / nstripes));
  }
  OOC_TRY(drain(L));
  L->st->t_solve += ooc_now() - t0;
  return OOC_OK;
}

/* ---- setup -------------------------------------------------------------------------------- */

ooc_status_t lu_run(ooc_ctx_t *ctx, const lu_args_t *a, lu_stats_t *stats, int64_t *info) {
  lu_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  stats->logdet = NAN;
  if (info) *info = 0;
  part_t p = ts_rows(a->A);
  int64_t n = p.n, b = p.b;
  if (ts_cols(a->A).n != n)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: A is %lld x %lld, not square", (long long)n,
                    (long long)ts_cols(a->A).n);
  int needs_b = a->job != LU_FACTOR;
  if (needs_b && (!a->B || ts_rows(a->B).n != n || ts_rows(a->B).b != b ||
                  (a->job == LU_INVERT && ts_cols(a->B).n != n)))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: job %d needs B with %lld rows and tile %lld",
                    a->job, (long long)n, (long long)b);
  if (!a->ipiv) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: no ipiv array");
  if (n == 0) {
    stats->logdet = 0;
    stats->sign = 1;
    return OOC_OK;
  }
  lu_t L = {.ctx = ctx, .a = a, .A = a->A, .B = a->B, .p = p, .n = n, .b = b,
            .W = ts_stripe(n, b, a->stripe > 0 ? a->stripe : n), .nt = p.count, .st = stats,
            .ipiv = a->ipiv, .invert = a->job == LU_INVERT};
  int64_t W = L.W;
  ooc_status_t st = OOC_OK;
  ooc_exec_t *own = NULL;
  L.ex = a->exec;
  if (!L.ex) {
    if (!a->ops) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: neither an executor nor kernels");
    /* the device buffers the host executor hands out, exactly (lu_workspace_bytes counts them) */
    OOC_TRY(ex_host_create(ctx, a->ops, 2, 8 * n * W + 8 * LU_SLOTS * n * b, &own));
    L.ex = own;
  }
  L.QT = L.ex->nqueues > 1 ? 1 : QC;
  L.loc = ooc_malloc(ctx, (size_t)W * sizeof(int64_t));
  L.diag = ooc_malloc(ctx, (size_t)W * sizeof(double));
  L.done = ooc_calloc(ctx, (size_t)L.nt, sizeof(int64_t));
  L.rowsum = ooc_calloc(ctx, (size_t)n, sizeof(double));
  if (!L.loc || !L.diag || !L.done || !L.rowsum) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "lu: out of host memory for n = %lld", (long long)n);
    goto done;
  }
  OOC_CHECK(st = ex_alloc(L.ex, (size_t)(n * W) * sizeof(double), &L.P));
  for (int s = 0; s < LU_SLOTS; s++) {
    OOC_CHECK(st = ex_alloc(L.ex, (size_t)(n * b) * sizeof(double), &L.D[s]));
    OOC_CHECK(st = ex_event_create(L.ex, &L.evput[s]));
  }
  OOC_CHECK(st = ex_event_create(L.ex, &L.ev));
  OOC_CHECK(st = ring_create(L.ex, LU_SLOTS, n, b, &L.ring));
  if (a->job != LU_SOLVE_FACTORED) {
    OOC_CHECK(st = factor(&L, info));
  } else {
    for (int64_t i = 0; i < n; i++)
      if (a->ipiv[i] < i || a->ipiv[i] >= n) { /* LAPACK's getrf never swaps upwards */
        if (info) *info = 0;
        st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "the pivot of row %lld is %lld: a factor's pivots "
                      "must lie in [row, n) (0-based; the file stores them 1-based)",
                      (long long)i, (long long)a->ipiv[i]);
        goto done;
      }
  }
  if (a->job != LU_FACTOR) OOC_CHECK(st = solve(&L, info));
done:
  ring_destroy(L.ring); /* waits for the executor: nothing uses a buffer below after this */
  if (L.ex) {
    ooc_status_t fin = ex_finish(L.ex);
    if (st == OOC_OK) st = fin;
    ex_event_destroy(L.ex, L.ev);
    for (int s = 0; s < LU_SLOTS; s++) {
      ex_event_destroy(L.ex, L.evput[s]);
      ex_free(L.ex, L.D[s]);
    }
    ex_free(L.ex, L.P);
  }
  ex_destroy(own);
  ooc_free(ctx, L.loc);
  ooc_free(ctx, L.diag);
  ooc_free(ctx, L.done);
  ooc_free(ctx, L.rowsum);
  return st;
}
