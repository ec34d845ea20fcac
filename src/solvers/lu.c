/* lu.c: LU with partial pivoting out of core, on the executor and the ring. See lu.h for the
 * algorithm, flops and I/O.
 *
 * Everything moves through the ring a tile at a time (slots of b x b): the stripe in and out,
 * the earlier tile columns (read only, never re-pivoted: the stripe's panel P takes the earlier
 * steps' row swaps group by group instead, lu.h), the right-hand sides. So the host needs only
 * K tiles of staging besides the panel, whatever n. Queue QC runs the arithmetic in order; QT (a
 * second queue when the executor has one) the copies into the slots' device twins, so that a
 * tile's transfer overlaps the products of the tiles before it. */
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

/* The host executor's own allocations (its struct with the queues' operation rings, the buffer
 * headers, events): bounded, counted here so the planner leaves room for them. */
#define LU_EXEC_BYTES (96 * 1024)

int64_t lu_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  (void)m;
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  return 8 * n * W + 8 * LU_SLOTS * b * b + ring_host_bytes(LU_SLOTS, b, b) +
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

/* The tiles a ring pass visits, in order (the cursor moves one tile per item):
 *   ALL    tile columns [c_lo, c_hi), every tile row (the stripe, the right-hand sides);
 *   LOWER  tile columns [c_lo, c_hi), rows from the diagonal down (L: diagonal tile first);
 *   UPPER  tile columns c_hi-1 down to c_lo, rows from the diagonal up (U: diagonal first);
 *   FIX    tile columns [c_lo, c_hi), rows from done[tj] / b down (the last swaps). */
enum { P_ALL, P_LOWER, P_UPPER, P_FIX };

typedef struct lu {
  ooc_ctx_t *ctx;
  const lu_args_t *a;
  ooc_exec_t *ex;
  ring_t *ring;
  int QT;                 /* the transfer queue */
  tstore_t *A, *B;
  part_t p;               /* rows = cols partition of A (and B's rows) */
  int64_t n, b, W, nt;
  double *P;              /* device n x W, ld n, global rows */
  double *D[LU_SLOTS];    /* device twins of the ring slots, b x b, ld b */
  ex_event_t *evput[LU_SLOTS], *ev;
  int64_t *ipiv;          /* the caller's, global 0-based */
  int64_t *loc;           /* getrf's local pivots (W) */
  double *diag;           /* U's diagonal of the stripe (W) */
  double *rowsum;         /* sum_j |a_ij| (n), for ||A||_inf */
  int64_t *done;          /* per tile column: the end of its step (its rows are in the order of
                             the swaps ipiv[0, done)) */
  lu_stats_t *st;
  double amax, umax;      /* for the growth */
  /* the pass: its tiles, the cursor, each slot's tile */
  int kind;
  tstore_t *S;            /* the store the pass moves (A or B) */
  int64_t c_lo, c_hi, ti, tj;
  int64_t sti[LU_SLOTS], stj[LU_SLOTS];
  int64_t applied;        /* left: P holds the swaps ipiv[0, applied) */
  int64_t pc0;            /* column of the store at P's column 0 (stripe k0, RHS r0, fix c0) */
  int64_t pcol_end;       /* first store column past P's (for ALL passes of B: r1) */
  int64_t k0, w;          /* factor step */
  int64_t mw;             /* solve: RHS columns in P */
  int64_t zero_col;       /* SOLVE_FACTORED: first zero on U's diagonal (-1 none, -2 not looked) */
  int invert;
} lu_t;

static int64_t cstart(const lu_t *L, int64_t j) { return part_start(L->p, j); }
static int64_t clen(const lu_t *L, int64_t j) { return part_len(L->p, j); }
static int64_t ccols(const lu_t *L, int64_t j) { return part_len(ts_cols(L->S), j); }
static int64_t cstart_s(const lu_t *L, int64_t j) { return part_start(ts_cols(L->S), j); }

static int64_t row0(const lu_t *L, int64_t tj) {
  return L->kind == P_LOWER ? tj : L->kind == P_FIX ? L->done[tj] / L->b : 0;
}

static int64_t pass_items(lu_t *L) {
  int64_t c = 0;
  for (int64_t tj = L->c_lo; tj < L->c_hi; tj++)
    c += L->kind == P_UPPER ? tj + 1 : L->nt - row0(L, tj);
  return c;
}

/* Item q's tile into the cursor and its slot's record (items come in order, one take each). */
static void advance(lu_t *L, int64_t q) {
  if (q == 0) {
    L->tj = L->kind == P_UPPER ? L->c_hi - 1 : L->c_lo;
    L->ti = L->kind == P_UPPER ? L->tj : row0(L, L->tj);
  } else if (L->kind == P_UPPER) {
    if (--L->ti < 0) {
      L->tj--;
      L->ti = L->tj;
    }
  } else if (++L->ti >= L->nt) {
    L->tj++;
    L->ti = row0(L, L->tj);
  }
  L->sti[q % LU_SLOTS] = L->ti;
  L->stj[q % LU_SLOTS] = L->tj;
}

static ooc_status_t run_pass(lu_t *L, int kind, tstore_t *S, int64_t c_lo, int64_t c_hi,
                             const ring_ops_t *ops) {
  L->kind = kind;
  L->S = S;
  L->c_lo = c_lo;
  L->c_hi = c_hi;
  int64_t items = c_hi > c_lo ? pass_items(L) : 0;
  ring_stats_t before = L->ring->stats;
  ooc_status_t st = ring_run(L->ring, items, ops, L);
  L->st->t_take += L->ring->stats.t_take - before.t_take;
  L->st->t_put += L->ring->stats.t_put - before.t_put;
  L->st->t_wait += L->ring->stats.t_wait - before.t_wait;
  return st;
}

/* The slot's tile into its device twin; QC waits for the copy. */
static ooc_status_t to_twin(lu_t *L, int s, const double *slot, int64_t bi, int64_t bj) {
  OOC_TRY(ex_put(L->ex, L->QT, bi, bj, slot, L->b, L->D[s], L->b));
  if (L->QT != QC) {
    OOC_TRY(ex_record(L->ex, L->QT, L->evput[s]));
    OOC_TRY(ex_wait(L->ex, QC, L->evput[s]));
  }
  return OOC_OK;
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

/* Where tile (ti, tj) of the pass's store sits in P. */
static double *in_panel(lu_t *L, int64_t ti, int64_t tj) {
  return L->P + cstart(L, ti) + (cstart_s(L, tj) - L->pc0) * L->n;
}

/* ---- tiles into P and back (the stripe, the fixes, the right-hand sides) ------------------ */

static ooc_status_t in_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  advance(L, q);
  int64_t ti = L->ti, tj = L->tj, bi = clen(L, ti), bj = ccols(L, tj);
  if (L->invert && L->S == L->B) { /* the identity's tile */
    memset(slot, 0, (size_t)(ld * bj) * sizeof(double));
    int64_t r0 = cstart(L, ti), c0 = cstart_s(L, tj);
    for (int64_t c = 0; c < bj; c++)
      if (c0 + c >= r0 && c0 + c < r0 + bi) slot[c0 + c - r0 + c * ld] = 1.0;
    return OOC_OK;
  }
  OOC_TRY(ts_take(L->S, ti, tj, slot, ld));
  L->st->bytes_streamed += 8 * bi * bj;
  if (L->S == L->A && L->kind == P_ALL) {
    /* the stripe as first loaded is A's columns in A's row order (swaps are applied in P):
     * the growth's denominator and ||A||_inf */
    double m = L->amax, *rs = L->rowsum + cstart(L, ti);
    for (int64_t c = 0; c < bj; c++)
      for (int64_t i = 0; i < bi; i++) {
        double v = fabs(slot[i + c * ld]);
        m = fmax(m, v);
        rs[i] += v;
      }
    L->amax = m;
  }
  return OOC_OK;
}

static ooc_status_t in_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)q;
  int64_t ti = L->sti[s], tj = L->stj[s];
  OOC_TRY(ex_put(L->ex, L->QT, clen(L, ti), ccols(L, tj), slot, ld, in_panel(L, ti, tj), L->n));
  *last = L->QT;
  return OOC_OK;
}

static ooc_status_t out_take(void *u, int64_t q, double *slot, int64_t ld) {
  (void)slot;
  (void)ld;
  advance(u, q);
  return OOC_OK;
}

static ooc_status_t out_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)q;
  int64_t ti = L->sti[s], tj = L->stj[s];
  OOC_TRY(ex_get(L->ex, QC, clen(L, ti), ccols(L, tj), in_panel(L, ti, tj), L->n, slot, ld));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t out_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int s = (int)(q % LU_SLOTS);
  int64_t ti = L->sti[s], tj = L->stj[s], bi = clen(L, ti), bj = ccols(L, tj);
  if (L->S == L->A && L->kind == P_ALL) { /* the stripe: U is rows 0..c of column c */
    int64_t r0 = cstart(L, ti), c0 = cstart_s(L, tj);
    double m = L->umax;
    for (int64_t c = 0; c < bj; c++)
      for (int64_t i = 0; i < bi && r0 + i <= c0 + c; i++) m = fmax(m, fabs(slot[i + c * ld]));
    L->umax = m;
  }
  OOC_TRY(ts_put(L->S, ti, tj, slot, ld));
  L->st->bytes_streamed += 8 * bi * bj;
  return OOC_OK;
}

/* ---- factor: the earlier tile columns stream through, read only --------------------------- */

static ooc_status_t left_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  advance(L, q);
  OOC_TRY(ts_read(L->A, L->ti, L->tj, slot, ld));
  L->st->bytes_streamed += 8 * clen(L, L->ti) * clen(L, L->tj);
  return OOC_OK;
}

/* P := L_j's update, tile (ti, j) of L (stored in the row order of ipiv[0, done[j]): P is
 * brought to that order first, group by group (lu.h), so the tile needs no swaps of its own. */
static ooc_status_t left_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)q;
  (void)ld;
  int64_t ti = L->sti[s], j = L->stj[s], bi = clen(L, ti), bj = clen(L, j);
  int64_t c0 = cstart(L, j), n = L->n;
  OOC_TRY(to_twin(L, s, slot, bi, bj));
  if (ti == j) {
    if (L->applied < L->done[j] && !L->a->nopiv) {
      OOC_TRY(ex_laswp(L->ex, QC, L->w, L->P, n, L->applied, L->done[j], L->ipiv));
      L->applied = L->done[j];
    }
    OOC_TRY(ex_trsm(L->ex, QC, 'L', 'L', 'N', 'U', bj, L->w, 1.0, L->D[s], L->b, L->P + c0, n));
  } else {
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', bi, L->w, bj, -1.0, L->D[s], L->b, L->P + c0, n, 1.0,
                    L->P + cstart(L, ti), n));
  }
  *last = QC;
  return OOC_OK;
}

/* ---- the swaps after each column's own step ----------------------------------------------- */

static ooc_status_t singular(lu_t *L, int64_t col, int exact, double u, int64_t *info) {
  if (info) *info = col + 1;
  double cn = L->a->colnorm ? L->a->colnorm[col] : 0;
  if (exact && L->a->nopiv)
    return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                    "LU without pivoting met an exactly zero pivot in column %lld (0-based; "
                    "info %lld): the matrix may still be regular (pivoted LU decides)",
                    (long long)col, (long long)(col + 1));
  if (exact)
    return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                    "matrix is singular: the pivot of column %lld (0-based) is exactly zero "
                    "(LAPACK's info %lld)", (long long)col, (long long)(col + 1));
  return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                  "matrix is singular to working precision: the pivot of column %lld (0-based) "
                  "is |u_jj| = %.3g <= eps * ||A[:, j]||_1 = %.3g (LU %s)",
                  (long long)col, fabs(u), DBL_EPSILON * cn,
                  L->a->nopiv ? "without pivoting" : "with partial pivoting");
}

/* Tile columns [0, nfix) lack the swaps of the steps after theirs: batches of them go through P
 * (rows from done[j] down), take the swaps there (laswp per column) and go back. */
static ooc_status_t fix_columns(lu_t *L, int64_t nfix) {
  ring_ops_t in = {in_take, in_work, NULL}, out = {out_take, out_work, out_put};
  int64_t per = ooc_max64(1, L->W / L->b);
  for (int64_t j0 = 0; j0 < nfix; j0 += per) {
    int64_t j1 = ooc_min64(nfix, j0 + per);
    L->pc0 = cstart(L, j0);
    OOC_TRY(run_pass(L, P_FIX, L->A, j0, j1, &in));
    OOC_TRY(join_qt(L));
    for (int64_t j = j0; j < j1; j++)
      OOC_TRY(ex_laswp(L->ex, QC, clen(L, j), L->P + (cstart(L, j) - L->pc0) * L->n, L->n,
                       L->done[j], L->n, L->ipiv));
    OOC_TRY(run_pass(L, P_FIX, L->A, j0, j1, &out));
    for (int64_t j = j0; j < j1; j++) L->done[j] = L->n;
  }
  return OOC_OK;
}

static ooc_status_t factor(lu_t *L, int64_t *info) {
  int64_t n = L->n, b = L->b, W = L->W;
  int64_t nsteps = ooc_cdiv64(n, W);
  double t0 = ooc_now();
  ring_ops_t in = {in_take, in_work, NULL}, out = {out_take, out_work, out_put};
  ring_ops_t left = {left_take, left_work, NULL};
  double logdet = 0;
  int sign = 1;
  for (int64_t step = 0; step < nsteps; step++) {
    L->k0 = step * W;
    L->w = ooc_min64(W, n - L->k0);
    int64_t k0 = L->k0, w = L->w, kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    L->pc0 = k0;
    OOC_TRY(run_pass(L, P_ALL, L->A, kt0, kt1, &in));
    OOC_TRY(join_qt(L));
    L->applied = 0;
    OOC_TRY(run_pass(L, P_LOWER, L->A, 0, kt0, &left));
    if (L->applied < k0 && !L->a->nopiv)
      OOC_TRY(ex_laswp(L->ex, QC, w, L->P, n, L->applied, k0, L->ipiv));
    int64_t bad = 0;
    OOC_TRY(ex_getrf(L->ex, QC, n - k0, w, L->P + k0, n, L->a->nopiv ? NULL : L->loc, &bad));
    OOC_TRY(ex_get(L->ex, QC, 1, w, L->P + k0, n + 1, L->diag, 1));
    OOC_TRY(drain(L));
    for (int64_t i = 0; i < w; i++) L->ipiv[k0 + i] = k0 + (L->a->nopiv ? i : L->loc[i]);
    for (int64_t i = 0; i < w; i++) {
      double u = L->diag[i];
      int64_t col = k0 + i;
      if (bad && i == bad - 1) return singular(L, col, 1, u, info);
      double cn = L->a->colnorm ? L->a->colnorm[col] : 0;
      if (!(fabs(u) > DBL_EPSILON * cn)) return singular(L, col, u == 0, u, info);
      if (L->a->nopiv && cn > 0) { /* lu.h: counted, not fatal */
        L->st->tiny += fabs(u) < sqrt(DBL_EPSILON) * cn;
        L->st->min_pivot = fmin(L->st->min_pivot, fabs(u) / cn);
      }
      logdet += log(fabs(u));
      if (u < 0) sign = -sign;
      if (L->ipiv[col] != col) sign = -sign;
    }
    OOC_TRY(run_pass(L, P_ALL, L->A, kt0, kt1, &out));
    for (int64_t tj = kt0; tj < kt1; tj++) L->done[tj] = k0 + w;
    L->st->steps++;
    OOC_TRY(ooc_tick(L->ctx, "factor", (step + 1.0) / nsteps));
  }
  int64_t nfix = 0; /* the columns before the last stripe (done[] is a multiple of b there) */
  while (nfix < L->nt && L->done[nfix] < n) nfix++;
  if (!L->a->nopiv) OOC_TRY(fix_columns(L, nfix)); /* nopiv: no later swaps to apply */
  L->st->growth = L->amax > 0 ? L->umax / L->amax : 0;
  for (int64_t i = 0; i < n; i++) L->st->norm_inf = fmax(L->st->norm_inf, L->rowsum[i]);
  L->st->logdet = logdet;
  L->st->sign = sign;
  L->st->t_factor += ooc_now() - t0;
  return OOC_OK;
}

/* ---- solve: RHS stripes through P --------------------------------------------------------- */

/* One tile of a triangular sweep over the RHS stripe in P: the diagonal tile solves its block
 * (uplo/diag: L unit lower on the forward sweep, U upper on the backward one), the others update
 * theirs by a gemm. */
static ooc_status_t sweep_work(lu_t *L, int s, double *slot, int *last, char uplo, char diag) {
  int64_t ti = L->sti[s], j = L->stj[s], bi = clen(L, ti), bj = clen(L, j), n = L->n;
  double *Pj = L->P + cstart(L, j);
  OOC_TRY(to_twin(L, s, slot, bi, bj));
  if (ti == j)
    OOC_TRY(ex_trsm(L->ex, QC, 'L', uplo, 'N', diag, bj, L->mw, 1.0, L->D[s], L->b, Pj, n));
  else
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', bi, L->mw, bj, -1.0, L->D[s], L->b, Pj, n, 1.0,
                    L->P + cstart(L, ti), n));
  *last = QC;
  return OOC_OK;
}

static ooc_status_t fwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  (void)q;
  (void)ld;
  return sweep_work(u, s, slot, last, 'L', 'U');
}

static ooc_status_t bwd_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  OOC_TRY(left_take(u, q, slot, ld));
  if (L->zero_col != -2 && L->ti == L->tj) { /* a factor file: U's diagonal must be nonzero */
    int64_t c0 = cstart(L, L->tj);
    for (int64_t c = 0; c < clen(L, L->tj); c++)
      if (slot[c + c * ld] == 0.0 && (L->zero_col < 0 || c0 + c < L->zero_col))
        L->zero_col = c0 + c;
  }
  return OOC_OK;
}

static ooc_status_t bwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  (void)q;
  (void)ld;
  return sweep_work(u, s, slot, last, 'U', 'N');
}

static ooc_status_t solve(lu_t *L, int64_t *info) {
  part_t cp = ts_cols(L->B);
  int64_t n = L->n;
  double t0 = ooc_now();
  /* RHS stripes: whole tile columns of B, as many as P holds (at least one: W >= b) */
  int64_t per = ooc_max64(1, L->W / L->b);
  int64_t nstripes = ooc_cdiv64(cp.count, per);
  ring_ops_t in = {in_take, in_work, NULL}, out = {out_take, out_work, out_put};
  ring_ops_t fwd = {left_take, fwd_work, NULL}, bwd = {bwd_take, bwd_work, NULL};
  L->zero_col = L->a->job == LU_SOLVE_FACTORED ? -1 : -2;
  for (int64_t sidx = 0; sidx < nstripes; sidx++) {
    int64_t rt0 = sidx * per, rt1 = ooc_min64(cp.count, rt0 + per);
    L->pc0 = part_start(cp, rt0);
    L->mw = part_start(cp, rt1 - 1) + part_len(cp, rt1 - 1) - L->pc0;
    OOC_TRY(run_pass(L, P_ALL, L->B, rt0, rt1, &in));
    OOC_TRY(join_qt(L));
    if (!L->invert && !L->a->nopiv) OOC_TRY(ex_laswp(L->ex, QC, L->mw, L->P, n, 0, n, L->ipiv));
    /* the identity's rows above r0 stay zero under L^-1: start at its tile column */
    OOC_TRY(run_pass(L, P_LOWER, L->A, L->invert ? L->pc0 / L->b : 0, L->nt, &fwd));
    OOC_TRY(run_pass(L, P_UPPER, L->A, 0, L->nt, &bwd));
    if (L->zero_col >= 0) { /* a factor file's U with a zero on its diagonal */
      OOC_TRY(drain(L));
      if (info) *info = L->zero_col + 1;
      return OOC_FAIL(L->ctx, OOC_ERR_SINGULAR,
                      "the factor is singular: U[%lld, %lld] (0-based) is zero, so A = P^T L U "
                      "has no inverse (LAPACK's info %lld)", (long long)L->zero_col,
                      (long long)L->zero_col, (long long)(L->zero_col + 1));
    }
    L->zero_col = -2; /* the diagonal was checked on the first stripe */
    OOC_TRY(run_pass(L, P_ALL, L->B, rt0, rt1, &out));
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
  stats->min_pivot = a->nopiv && a->colnorm ? INFINITY : 0;
  if (info) *info = 0;
  part_t p = ts_rows(a->A);
  int64_t n = p.n, b = p.b;
  if (ts_cols(a->A).n != n)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: A is %lld x %lld, not square", (long long)n,
                    (long long)ts_cols(a->A).n);
  int needs_b = a->job != LU_FACTOR;
  if (needs_b && (!a->B || ts_rows(a->B).n != n || ts_rows(a->B).b != b ||
                  ts_cols(a->B).b != b || (a->job == LU_INVERT && ts_cols(a->B).n != n)))
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
    OOC_TRY(ex_host_create(ctx, a->ops, 2, 8 * n * W + 8 * LU_SLOTS * b * b, &own));
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
    OOC_CHECK(st = ex_alloc(L.ex, (size_t)(b * b) * sizeof(double), &L.D[s]));
    OOC_CHECK(st = ex_event_create(L.ex, &L.evput[s]));
  }
  OOC_CHECK(st = ex_event_create(L.ex, &L.ev));
  OOC_CHECK(st = ring_create(L.ex, LU_SLOTS, b, b, &L.ring));
  if (a->job != LU_SOLVE_FACTORED) {
    OOC_CHECK(st = factor(&L, info));
  } else {
    for (int64_t i = 0; i < n; i++)
      if (a->ipiv[i] < i || a->ipiv[i] >= n) { /* LAPACK's getrf never swaps upwards */
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
