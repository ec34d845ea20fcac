/* chol.c: out-of-core Cholesky factor, symmetric Gauss-Jordan inverse and solve on tile stores.
 * See chol.h for the algorithms, flop counts and I/O. */
#include "solvers/chol.h"

#include "base/parloop.h"

#include <math.h>
#include <string.h>

int64_t chol_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ooc_min64(W, n);
  /* the column buffer (host code), or with an executor the tile-row buffer (chol_t.M) */
  int64_t col = (W < n || m > 0) ? n * b : 0;
  return 8 * (n * W + col + b * b);
}

/* What every phase needs, set up once by chol_run. */
typedef struct chol {
  ooc_ctx_t *ctx;
  const chol_args_t *a;
  const ooc_ops_t *o;
  tstore_t *A;
  part_t p;         /* rows = cols partition of A */
  int64_t n, b, W;
  double *P;        /* n x W panel, ld n, row index = global row */
  double *C;        /* n x b column buffer, ld n, global rows (NULL when not needed) */
  double *S;        /* b x b transpose buffer */
  double *M;        /* b x n: one tile row (put_row_t / take_row_t), with an executor only, in
                       the room of the column buffer it does not use; else NULL */
  chol_stats_t *stats;
  int64_t *info;
  double logdet;
} chol_t;

/* ---- small dense helpers ----------------------------------------------------------------- */

static void zero_upper(double *A, int64_t ld, int64_t w) {
  for (int64_t j = 1; j < w; j++) memset(A + j * ld, 0, (size_t)j * sizeof(double));
}

/* Blocked so both sides stay in cache: a plain loop walks one side with stride ld, which at
 * n = 4096 costs as much as a tenth of the potri it follows. */
#define TB 64

/* dst (nc x nr, ld ldd) = src^T, src nr x nc with ld lds. */
static void transpose(const double *src, int64_t lds, int64_t nr, int64_t nc, double *dst,
                      int64_t ldd) {
  for (int64_t j0 = 0; j0 < nc; j0 += TB)
    for (int64_t i0 = 0; i0 < nr; i0 += TB) {
      int64_t j1 = ooc_min64(nc, j0 + TB), i1 = ooc_min64(nr, i0 + TB);
      for (int64_t j = j0; j < j1; j++)
        for (int64_t i = i0; i < i1; i++) dst[j + i * ldd] = src[i + j * lds];
    }
}

/* Copy the strict lower triangle of the w x w block onto its strict upper triangle. */
static void symmetrize(double *A, int64_t ld, int64_t w) {
  for (int64_t j0 = 0; j0 < w; j0 += TB)
    for (int64_t i0 = 0; i0 <= j0; i0 += TB) { /* upper block (i0, j0) <- lower block (j0, i0) */
      int64_t j1 = ooc_min64(w, j0 + TB), i1 = ooc_min64(w, i0 + TB);
      for (int64_t j = j0; j < j1; j++)
        for (int64_t i = i0; i < i1 && i < j; i++) A[i + j * ld] = A[j + i * ld];
    }
}

/* Tiles [t0, t1) of tile column tj to or from the column buffer col (rows at their global
 * offsets, ld n), as one batch: the tile cache spreads a batch over its copy threads, which a
 * tile-by-tile loop of 8 MiB copies cannot keep busy. */
enum { MOVE_TAKE, MOVE_READ, MOVE_PUT };
static ooc_status_t move_col(chol_t *c, int how, int64_t t0, int64_t t1, int64_t tj, double *col) {
  if (t0 >= t1) return OOC_OK;
  double *at = col + part_start(c->p, t0);
  if (how == MOVE_TAKE) return ts_take_tiles(c->A, t0, t1, tj, tj + 1, at, c->n);
  if (how == MOVE_READ) return ts_read_tiles(c->A, t0, t1, tj, tj + 1, at, c->n);
  return ts_put_tiles(c->A, t0, t1, tj, tj + 1, at, c->n);
}

/* The same for the rows of tile column tj from its diagonal down, leaving out the stripe's tile
 * rows [kt0, kt1) (the sweep's columns outside the stripe). */
static ooc_status_t move_outside(chol_t *c, int how, int64_t tj, int64_t kt0, int64_t kt1,
                                 double *col) {
  OOC_TRY(move_col(c, how, tj, ooc_min64(kt0, c->p.count), tj, col));
  return move_col(c, how, ooc_max64(tj, kt1), c->p.count, tj, col);
}

static ooc_status_t not_spd(chol_t *c, int64_t order) {
  if (c->info) *c->info = order;
  return OOC_FAIL(c->ctx, OOC_ERR_NOT_SPD,
                  "matrix is not positive definite: leading minor of order %lld is not positive",
                  (long long)order);
}

/* Factor the w x w block D (ld n) at global offset k0; adds its share of the log-determinant. */
static ooc_status_t factor_diag(chol_t *c, int64_t k0, int64_t w, double *D) {
  int64_t bad = c->o->potrf(w, D, c->n);
  if (bad) return not_spd(c, k0 + bad);
  double s = 0.0;
  for (int64_t j = 0; j < w; j++) s += log(D[j + j * c->n]);
  c->logdet += 2.0 * s;
  return OOC_OK;
}

/* ---- factor: left-looking by stripes ----------------------------------------------------- */

static ooc_status_t factor(chol_t *c) {
  const ooc_ops_t *o = c->o;
  tstore_t *A = c->A;
  part_t p = c->p;
  int64_t n = c->n, b = c->b, W = c->W;
  double *P = c->P, *Lc = c->C;
  int64_t nsteps = ooc_cdiv64(n, W);
  for (int64_t step = 0; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0), below = n - k0 - w;
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    double t0 = ooc_now();

    for (int64_t tj = kt0; tj < kt1; tj++) {
      double *col = P + (part_start(p, tj) - k0) * n;
      OOC_TRY(move_col(c, MOVE_TAKE, tj, p.count, tj, col));
    }
    zero_upper(P + k0, n, w); /* the input's upper triangle is never used */

    for (int64_t q = 0; q < kt0; q++) {
      int64_t j = (step % 2 == 0) ? kt0 - 1 - q : q; /* alternate: last read is read first */
      int64_t bj = part_len(p, j);
      OOC_TRY(move_col(c, MOVE_READ, kt0, p.count, j, Lc));
      o->syrk('L', 'N', w, bj, -1.0, Lc + k0, n, 1.0, P + k0, n);
      if (below > 0)
        o->gemm('N', 'T', below, w, bj, -1.0, Lc + k0 + w, n, Lc + k0, n, 1.0, P + k0 + w, n);
      OOC_TRY(ooc_tick(c->ctx, "factor", (step + (q + 1.0) / (kt0 + 1.0)) / nsteps));
    }
    double t1 = ooc_now();
    c->stats->t_update += t1 - t0;

    OOC_TRY(factor_diag(c, k0, w, P + k0));
    if (below > 0) o->trsm('R', 'L', 'T', 'N', below, w, 1.0, P + k0, n, P + k0 + w, n);
    double t2 = ooc_now();
    c->stats->t_panel += t2 - t1;

    for (int64_t tj = kt0; tj < kt1; tj++) {
      double *col = P + (part_start(p, tj) - k0) * n;
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj); /* L is lower: upper reads as 0 */
      OOC_TRY(move_col(c, MOVE_PUT, tj, p.count, tj, col));
    }
    c->stats->t_update += ooc_now() - t2;
    c->stats->steps++;
    OOC_TRY(ooc_tick(c->ctx, "factor", (step + 1.0) / nsteps));
  }
  return OOC_OK;
}

/* ---- invert: symmetric Gauss-Jordan (sweep) on the lower triangle ------------------------ */

static ooc_status_t sweep_put(chol_t *c, int64_t tj, double *C, int64_t kt0, int64_t kt1,
                              int last);

/* Tile rows moved with a transpose. A tile row ti of the store, tiles (ti, u) for u in [u0, u1),
 * holds the transposes of the blocks of a column buffer B (rows at their global offsets, ld n,
 * bi columns): put_row_t writes them there, take_row_t takes them back into B. The host code
 * needs this for the sweep's gather and put of tile row P (chol.h's V) and for the mirror of the
 * upper triangle on the last step of a full inverse; executor runs only for the mirror (tile row
 * P goes through the executor, which transposes it: gather_vx, put_vx). With the tile-row buffer
 * M (executor runs) the transposes run on threads and the tile row moves as one batch (one
 * thread tile by tile took most of the host time at n = 65536); without it, one tile at a time
 * through S. */
typedef struct {
  const double *B;
  double *M;
  part_t p;
  int64_t n, bi, u0;
} trow_t;

static void trow_job(void *arg, int64_t k, int worker) {
  const trow_t *t = arg;
  (void)worker;
  int64_t u = t->u0 + k, bu = part_len(t->p, u), off = part_start(t->p, u) - part_start(t->p, t->u0);
  transpose(t->B + part_start(t->p, u), t->n, bu, t->bi, t->M + off * t->bi, t->bi);
}

static ooc_status_t put_row_t(chol_t *c, int64_t ti, const double *B, int64_t u0, int64_t u1) {
  if (u0 >= u1) return OOC_OK;
  int64_t bi = part_len(c->p, ti);
  if (!c->M) {
    for (int64_t u = u0; u < u1; u++) {
      transpose(B + part_start(c->p, u), c->n, part_len(c->p, u), bi, c->S, bi);
      OOC_TRY(ts_put(c->A, ti, u, c->S, bi));
    }
    return OOC_OK;
  }
  trow_t t = {B, c->M, c->p, c->n, bi, u0};
  ooc_parallel(ooc_par_cpus(OOC_PAR_MAX_THREADS), u1 - u0, trow_job, &t);
  return ts_put_tiles(c->A, ti, ti + 1, u0, u1, c->M, bi);
}

static ooc_status_t take_row_t(chol_t *c, int64_t ti, double *B, int64_t u0, int64_t u1) {
  int64_t bi = part_len(c->p, ti);
  for (int64_t u = u0; u < u1; u++) {
    OOC_TRY(ts_take(c->A, ti, u, c->S, bi));
    transpose(c->S, bi, bi, part_len(c->p, u), B + part_start(c->p, u), c->n);
  }
  return OOC_OK;
}

/* Run `call` (an ooc_status_t expression) and add its seconds to *acc (the executor paths'
 * split of the host time, chol_stats_t). */
#define TIMED(acc, call)                                                                           \
  do {                                                                                             \
    double t_ = ooc_now();                                                                         \
    ooc_status_t s_ = (call);                                                                      \
    (acc) += ooc_now() - t_;                                                                       \
    if (s_ != OOC_OK) return s_;                                                                   \
  } while (0)
#define TIMED_CHECK(acc, call)                                                                     \
  do {                                                                                             \
    double t_ = ooc_now();                                                                         \
    st = (call);                                                                                   \
    (acc) += ooc_now() - t_;                                                                       \
    if (st != OOC_OK) goto done;                                                                   \
  } while (0)

/* Update tile column tj (outside the stripe) with W = panel (see chol.h), put it back; on the last
 * step also write its transposes into the upper triangle (or zero the diagonal tile's upper). */
static ooc_status_t sweep_column(chol_t *c, int64_t tj, int64_t k0, int64_t w, int64_t kt0,
                                 int64_t kt1, int last) {
  const ooc_ops_t *o = c->o;
  part_t p = c->p;
  int64_t n = c->n, below = n - k0 - w;
  double *P = c->P, *C = c->C;
  int64_t r0 = part_start(p, tj), bj = part_len(p, tj);
  OOC_TRY(move_outside(c, MOVE_TAKE, tj, kt0, kt1, C));

  if (tj < kt0) { /* column in K: rows [r0, k0) are K x K (+), rows in T are T x K (-) */
    o->syrk('L', 'N', bj, w, 1.0, P + r0, n, 1.0, C + r0, n);
    int64_t m1 = k0 - r0 - bj;
    if (m1 > 0) o->gemm('N', 'T', m1, bj, w, 1.0, P + r0 + bj, n, P + r0, n, 1.0, C + r0 + bj, n);
    if (below > 0)
      o->gemm('N', 'T', below, bj, w, -1.0, P + k0 + w, n, P + r0, n, 1.0, C + k0 + w, n);
  } else { /* column in T: all T x T (-) */
    o->syrk('L', 'N', bj, w, -1.0, P + r0, n, 1.0, C + r0, n);
    int64_t m1 = n - r0 - bj;
    if (m1 > 0) o->gemm('N', 'T', m1, bj, w, -1.0, P + r0 + bj, n, P + r0, n, 1.0, C + r0 + bj, n);
  }

  return sweep_put(c, tj, C, kt0, kt1, last);
}

/* Put tile column tj (outside the stripe, rows from its diagonal down, in C) back; on the last
 * step also its transposes into the upper triangle (or zero the diagonal tile's upper). */
static ooc_status_t sweep_put(chol_t *c, int64_t tj, double *C, int64_t kt0, int64_t kt1,
                              int last) {
  part_t p = c->p;
  int64_t n = c->n, r0 = part_start(p, tj), bj = part_len(p, tj);
  if (last) {
    if (c->a->lower_only) zero_upper(C + r0, n, bj);
    else symmetrize(C + r0, n, bj);
  }
  OOC_TRY(move_outside(c, MOVE_PUT, tj, kt0, kt1, C));
  if (last && !c->a->lower_only) { /* the upper triangle's copy: tile row tj, outside the stripe */
    OOC_TRY(put_row_t(c, tj, C, tj + 1, ooc_min64(kt0, p.count)));
    OOC_TRY(put_row_t(c, tj, C, ooc_max64(tj + 1, kt1), p.count));
  }
  return OOC_OK;
}

/* Stripe column tj of the panel (col: ld n, rows at their global offsets): its rows from the
 * diagonal down come from the lower tiles; put back, on the last step of a full inverse (upper)
 * also the upper tiles it gives: above the stripe, in it, and right of it (transposed). */
static ooc_status_t take_scol(chol_t *c, int64_t tj, double *col) {
  return move_col(c, MOVE_TAKE, tj, c->p.count, tj, col);
}

static ooc_status_t put_scol(chol_t *c, int64_t tj, double *col, int64_t kt0, int64_t kt1,
                             int upper) {
  if (upper) {
    OOC_TRY(move_col(c, MOVE_PUT, 0, kt0, tj, col));  /* above the stripe */
    OOC_TRY(move_col(c, MOVE_PUT, kt0, tj, tj, col)); /* in the stripe */
    OOC_TRY(put_row_t(c, tj, col, kt1, c->p.count));  /* right of it */
  }
  return move_col(c, MOVE_PUT, tj, c->p.count, tj, col);
}

static double *pcol(chol_t *c, int64_t k0, int64_t tj) {
  return c->P + (part_start(c->p, tj) - k0) * c->n;
}

/* Gather V (host code): the stripe's columns, and rows < k0 from tile row P (transposed). */
static ooc_status_t gather_v(chol_t *c, int64_t k0, int64_t kt0, int64_t kt1) {
  for (int64_t tj = kt0; tj < kt1; tj++) OOC_TRY(take_scol(c, tj, pcol(c, k0, tj)));
  for (int64_t ti = kt0; ti < kt1; ti++) OOC_TRY(take_row_t(c, ti, pcol(c, k0, ti), 0, kt0));
  return OOC_OK;
}

/* Put the panel back (host code): the stripe's columns, tile row P (transposed). */
static ooc_status_t put_v(chol_t *c, int64_t k0, int64_t kt0, int64_t kt1, int last) {
  int upper = last && !c->a->lower_only;
  for (int64_t tj = kt0; tj < kt1; tj++) OOC_TRY(put_scol(c, tj, pcol(c, k0, tj), kt0, kt1, upper));
  for (int64_t ti = kt0; ti < kt1; ti++) OOC_TRY(put_row_t(c, ti, pcol(c, k0, ti), 0, kt0));
  return OOC_OK;
}

static ooc_status_t invert(chol_t *c) {
  const ooc_ops_t *o = c->o;
  tstore_t *A = c->A;
  part_t p = c->p;
  int64_t n = c->n, b = c->b, W = c->W;
  int lower_only = c->a->lower_only;
  double *P = c->P;
  int64_t nsteps = ooc_cdiv64(n, W);
  if (c->a->start_step > 0) c->logdet = c->a->logdet0;
  for (int64_t step = c->a->start_step; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0), below = n - k0 - w;
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    int last = (step == nsteps - 1);
    double *D = P + k0;
    double t0 = ooc_now();

    OOC_TRY(gather_v(c, k0, kt0, kt1));
    zero_upper(D, n, w);
    double t1 = ooc_now();
    c->stats->t_update += t1 - t0;

    OOC_TRY(factor_diag(c, k0, w, D));
    if (k0 > 0) o->trsm('R', 'L', 'T', 'N', k0, w, 1.0, D, n, P, n);
    if (below > 0) o->trsm('R', 'L', 'T', 'N', below, w, 1.0, D, n, P + k0 + w, n);
    double t2 = ooc_now();
    c->stats->t_panel += t2 - t1;

    int64_t nt = p.count - (kt1 - kt0);
    for (int64_t q = 0; q < nt; q++) {
      int64_t r = (step % 2 == 0) ? nt - 1 - q : q; /* alternate direction between steps */
      int64_t tj = r < kt0 ? r : r + (kt1 - kt0);
      OOC_TRY(sweep_column(c, tj, k0, w, kt0, kt1, last));
      OOC_TRY(ooc_tick(c->ctx, "invert", (step + (q + 1.0) / (nt + 1.0)) / nsteps));
    }
    double t3 = ooc_now();
    c->stats->t_update += t3 - t2;

    if (k0 > 0) o->trsm('R', 'L', 'N', 'N', k0, w, -1.0, D, n, P, n);
    if (below > 0) o->trsm('R', 'L', 'N', 'N', below, w, 1.0, D, n, P + k0 + w, n);
    int64_t bad = o->potri(w, D, n);
    if (bad) return not_spd(c, k0 + bad); /* cannot happen after a successful potrf */
    if (last && !lower_only) symmetrize(D, n, w);
    else zero_upper(D, n, w);
    double t4 = ooc_now();
    c->stats->t_panel += t4 - t3;

    OOC_TRY(put_v(c, k0, kt0, kt1, last));
    c->stats->t_update += ooc_now() - t4;
    c->stats->steps++;
    if (c->a->after_step) OOC_TRY(c->a->after_step(c->a->step_user, step, nsteps, c->logdet));
    OOC_TRY(ooc_tick(c->ctx, "invert", (step + 1.0) / nsteps));
  }
  if (lower_only)
    for (int64_t tj = 1; tj < p.count; tj++)
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj);
  return OOC_OK;
}

/* ---- the same two algorithms on an executor (chol.h: chol_exec_t) -------------------------- */

/* Wait for every slot in flight; on the sweep, put each finished column back. owner[s] is the
 * tile column slot s holds (-1: none). Called before the slots are reused and on errors (then
 * put is 0: the buffers must not go away under the device, the data no longer matters). */
static ooc_status_t drain(chol_t *c, int64_t *owner, int put, int64_t kt0, int64_t kt1, int last) {
  chol_exec_t *e = c->a->exec;
  ooc_status_t st = OOC_OK;
  for (int s = 0; s < e->nslots; s++) {
    if (owner[s] < 0) continue;
    double t0 = ooc_now();
    ooc_status_t s1 = e->complete(e, s);
    double t1 = ooc_now();
    c->stats->t_wait += t1 - t0;
    if (st == OOC_OK) st = s1;
    if (st == OOC_OK && put) {
      st = sweep_put(c, owner[s], e->slot[s], kt0, kt1, last);
      c->stats->t_put += ooc_now() - t1;
    }
    owner[s] = -1;
  }
  return st;
}

/* V on an executor (W < n): it moves through the slots, no host panel (chol.h: colload/rowload,
 * colstore/rowstore; the executor transposes tile rows). A move is stripe column t's rows of tiles
 * [t0, t1) (VM_COL) or tile row t's tiles left of the stripe (VM_ROW, only when kt0 > 0). */
enum { VM_COL, VM_ROW };

/* Take move (kind, t, tiles [t0, t1)) into a free slot and start its load; *q counts the
 * step's moves (slot q % K, completed first if still in flight). */
static ooc_status_t v_in(chol_t *c, int64_t *owner, int64_t *q, int kind, int64_t t, int64_t t0,
                         int64_t t1, int64_t k0, int64_t kt0) {
  chol_exec_t *e = c->a->exec;
  int s = (int)(*q % e->nslots);
  int64_t start = part_start(c->p, t), bt = part_len(c->p, t);
  if (owner[s] >= 0) {
    TIMED(c->stats->t_wait, e->complete(e, s));
    owner[s] = -1;
  }
  if (kind == VM_ROW) {
    TIMED(c->stats->t_take, ts_take_tiles(c->A, t, t + 1, 0, kt0, e->slot[s], bt));
    OOC_TRY(e->rowload(e, s, start - k0, bt));
  } else {
    TIMED(c->stats->t_take, move_col(c, MOVE_TAKE, t0, t1, t, e->slot[s]));
    OOC_TRY(e->colload(e, s, start - k0, part_start(c->p, t0),
                       t1 < c->p.count ? part_start(c->p, t1) : c->n, bt));
  }
  owner[s] = (*q)++;
  return OOC_OK;
}

/* The step's V into the device panel. With pivot_begin (chol.h) D first, then the pivot starts
 * while the rest streams in, column block by column block; else the stripe's columns whole, then
 * tile row P. */
static ooc_status_t gather_vx(chol_t *c, int64_t *owner, int64_t k0, int64_t w, int64_t kt0,
                              int64_t kt1) {
  chol_exec_t *e = c->a->exec;
  int64_t nt = c->p.count, q = 0;
  ooc_status_t st = e->load(e, NULL, k0, w, k0);
  if (st == OOC_OK && e->pivot_begin) {
    for (int64_t t = kt0; t < kt1 && st == OOC_OK; t++)
      st = v_in(c, owner, &q, VM_COL, t, t, kt1, k0, kt0);
    if (st == OOC_OK) st = e->pivot_begin(e, CHOL_INVERT);
    for (int64_t t = kt0; t < kt1 && st == OOC_OK; t++) {
      if (kt0 > 0) st = v_in(c, owner, &q, VM_ROW, t, 0, kt0, k0, kt0);
      if (st == OOC_OK && kt1 < nt) st = v_in(c, owner, &q, VM_COL, t, kt1, nt, k0, kt0);
      if (st == OOC_OK) st = e->vready(e, part_start(c->p, t) - k0, part_len(c->p, t));
    }
  } else {
    for (int64_t t = kt0; t < kt1 && st == OOC_OK; t++)
      st = v_in(c, owner, &q, VM_COL, t, t, nt, k0, kt0);
    for (int64_t t = kt0; t < kt1 && st == OOC_OK && kt0 > 0; t++)
      st = v_in(c, owner, &q, VM_ROW, t, 0, kt0, k0, kt0);
  }
  ooc_status_t s2 = drain(c, owner, 0, 0, 0, 0);
  return st != OOC_OK ? st : s2;
}

/* Put move q of V, from the last column block to the first (chol.h): column block t = kt1 - 1 -
 * q / m (m = 2 moves per block with rows above the stripe, else 1), its column then its row. */
static void v_out_move(int64_t q, int64_t kt0, int64_t kt1, int64_t *t, int *kind) {
  int64_t m = kt0 > 0 ? 2 : 1;
  *t = kt1 - 1 - q / m;
  *kind = q % m ? VM_ROW : VM_COL;
}

static ooc_status_t v_fetch(chol_t *c, int s, int64_t q, int64_t k0, int64_t kt0, int64_t kt1,
                            int upper) {
  chol_exec_t *e = c->a->exec;
  int64_t t;
  int kind;
  v_out_move(q, kt0, kt1, &t, &kind);
  int64_t start = part_start(c->p, t), bt = part_len(c->p, t);
  if (kind == VM_COL) return e->colstore(e, s, start - k0, upper ? 0 : start, bt);
  return e->rowstore(e, s, start - k0, bt);
}

static ooc_status_t v_put(chol_t *c, int s, int64_t q, int64_t kt0, int64_t kt1, int upper) {
  int64_t t;
  int kind;
  v_out_move(q, kt0, kt1, &t, &kind);
  if (kind == VM_COL) return put_scol(c, t, c->a->exec->slot[s], kt0, kt1, upper);
  return ts_put_tiles(c->A, t, t + 1, 0, kt0, c->a->exec->slot[s], part_len(c->p, t));
}

/* The step's V back, after store: K moves in flight, each put by this thread when it lands. On
 * the last step of a full inverse the stripe's columns come with their rows above the diagonal
 * (the upper tiles they give). */
static ooc_status_t put_vx(chol_t *c, int64_t *owner, int64_t k0, int64_t kt0, int64_t kt1,
                           int upper) {
  chol_exec_t *e = c->a->exec;
  int64_t nq = (kt1 - kt0) * (kt0 > 0 ? 2 : 1);
  ooc_status_t st = OOC_OK;
  for (int64_t q = 0; q < nq && q < e->nslots; q++) {
    OOC_CHECK(st = v_fetch(c, (int)q, q, k0, kt0, kt1, upper));
    owner[q] = q;
  }
  for (int64_t q = 0; q < nq; q++) {
    int s = (int)(q % e->nslots);
    TIMED_CHECK(c->stats->t_wait, e->complete(e, s));
    owner[s] = -1;
    TIMED_CHECK(c->stats->t_put, v_put(c, s, q, kt0, kt1, upper));
    if (q + e->nslots < nq) {
      OOC_CHECK(st = v_fetch(c, s, q + e->nslots, k0, kt0, kt1, upper));
      owner[s] = q + e->nslots;
    }
  }
  return OOC_OK;
done:
  (void)drain(c, owner, 0, 0, 0, 0);
  return st;
}

static ooc_status_t factor_x(chol_t *c) {
  chol_exec_t *e = c->a->exec;
  tstore_t *A = c->A;
  part_t p = c->p;
  int64_t n = c->n, b = c->b, W = c->W;
  double *P = c->P;
  int64_t nsteps = ooc_cdiv64(n, W), owner[CHOL_MAX_SLOTS];
  for (int s = 0; s < CHOL_MAX_SLOTS; s++) owner[s] = -1;
  ooc_status_t st = OOC_OK;
  for (int64_t step = 0; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0);
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    double t0 = ooc_now();
    for (int64_t tj = kt0; tj < kt1; tj++) {
      double *col = P + (part_start(p, tj) - k0) * n;
      TIMED(c->stats->t_take, move_col(c, MOVE_TAKE, tj, p.count, tj, col));
    }
    OOC_TRY(e->load(e, P, k0, w, k0));
    /* Ring of slots: column q is read into slot q % K while the device works on earlier ones. */
    for (int64_t q = 0; q < kt0; q++) {
      int64_t j = (step % 2 == 0) ? kt0 - 1 - q : q;
      int s = (int)(q % e->nslots);
      if (owner[s] >= 0) {
        TIMED_CHECK(c->stats->t_wait, e->complete(e, s));
        owner[s] = -1;
      }
      TIMED_CHECK(c->stats->t_take, move_col(c, MOVE_READ, kt0, p.count, j, e->slot[s]));
      OOC_CHECK(st = e->lupdate(e, s, part_len(p, j)));
      owner[s] = j;
      OOC_CHECK(st = ooc_tick(c->ctx, "factor", (step + (q + 1.0) / (kt0 + 1.0)) / nsteps));
    }
    OOC_CHECK(st = drain(c, owner, 0, 0, 0, 0));
    double t1 = ooc_now();
    c->stats->t_update += t1 - t0;

    int64_t bad = 0;
    double ld = 0.0;
    TIMED(c->stats->t_wait, e->pivot(e, CHOL_FACTOR, &bad, &ld));
    if (bad) return not_spd(c, k0 + bad);
    c->logdet += ld;
    TIMED(c->stats->t_wait, e->store(e, P, 0));
    double t2 = ooc_now();
    c->stats->t_panel += t2 - t1;

    for (int64_t tj = kt0; tj < kt1; tj++) {
      double *col = P + (part_start(p, tj) - k0) * n;
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj);
      TIMED(c->stats->t_put, move_col(c, MOVE_PUT, tj, p.count, tj, col));
    }
    c->stats->t_update += ooc_now() - t2;
    c->stats->steps++;
    OOC_TRY(ooc_tick(c->ctx, "factor", (step + 1.0) / nsteps));
  }
  return OOC_OK;
done:
  (void)drain(c, owner, 0, 0, 0, 0);
  return st;
}

static ooc_status_t invert_x(chol_t *c) {
  chol_exec_t *e = c->a->exec;
  tstore_t *A = c->A;
  part_t p = c->p;
  int64_t n = c->n, b = c->b, W = c->W;
  int lower_only = c->a->lower_only;
  double *P = c->P;
  int64_t nsteps = ooc_cdiv64(n, W), owner[CHOL_MAX_SLOTS];
  for (int s = 0; s < CHOL_MAX_SLOTS; s++) owner[s] = -1;
  ooc_status_t st = OOC_OK;
  if (c->a->start_step > 0) c->logdet = c->a->logdet0;
  for (int64_t step = c->a->start_step; step < nsteps; step++) {
    int64_t k0 = step * W, w = ooc_min64(W, n - k0);
    int64_t kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    int last = (step == nsteps - 1), upper = last && !lower_only;
    double t0 = ooc_now();
    /* D's upper triangle is left as it is: never read */
    if (W < n) {
      OOC_TRY(gather_vx(c, owner, k0, w, kt0, kt1));
    } else { /* in core: one step through the executor's host panel */
      for (int64_t tj = kt0; tj < kt1; tj++)
        TIMED(c->stats->t_take, take_scol(c, tj, pcol(c, k0, tj)));
      OOC_TRY(e->load(e, P, k0, w, k0));
    }
    double t1 = ooc_now();
    c->stats->t_vmove += t1 - t0;
    c->stats->t_update += t1 - t0;

    int64_t bad = 0;
    double ld = 0.0;
    TIMED(c->stats->t_wait, e->pivot(e, CHOL_INVERT, &bad, &ld));
    if (bad) return not_spd(c, k0 + bad);
    c->logdet += ld;
    double t2 = ooc_now();
    c->stats->t_panel += t2 - t1;

    int64_t nt = p.count - (kt1 - kt0);
    for (int64_t q = 0; q < nt; q++) {
      int64_t r = (step % 2 == 0) ? nt - 1 - q : q; /* alternate direction between steps */
      int64_t tj = r < kt0 ? r : r + (kt1 - kt0);
      int s = (int)(q % e->nslots);
      if (owner[s] >= 0) {
        TIMED_CHECK(c->stats->t_wait, e->complete(e, s));
        TIMED_CHECK(c->stats->t_put, sweep_put(c, owner[s], e->slot[s], kt0, kt1, last));
        owner[s] = -1;
      }
      TIMED_CHECK(c->stats->t_take, move_outside(c, MOVE_TAKE, tj, kt0, kt1, e->slot[s]));
      OOC_CHECK(st = e->supdate(e, s, part_start(p, tj), part_len(p, tj)));
      owner[s] = tj;
      OOC_CHECK(st = ooc_tick(c->ctx, "invert", (step + (q + 1.0) / (nt + 1.0)) / nsteps));
    }
    OOC_CHECK(st = drain(c, owner, 1, kt0, kt1, last));
    double t3 = ooc_now();
    c->stats->t_update += t3 - t2;

    TIMED(c->stats->t_wait, e->store(e, W < n ? NULL : P, upper));
    double t4 = ooc_now();
    c->stats->t_panel += t4 - t3;

    if (W < n) {
      OOC_TRY(put_vx(c, owner, k0, kt0, kt1, upper));
    } else {
      for (int64_t tj = kt0; tj < kt1; tj++)
        TIMED(c->stats->t_put, put_scol(c, tj, pcol(c, k0, tj), kt0, kt1, upper));
    }
    c->stats->t_vmove += ooc_now() - t4;
    c->stats->t_update += ooc_now() - t4;
    c->stats->steps++;
    if (c->a->after_step) OOC_TRY(c->a->after_step(c->a->step_user, step, nsteps, c->logdet));
    OOC_TRY(ooc_tick(c->ctx, "invert", (step + 1.0) / nsteps));
  }
  if (lower_only)
    for (int64_t tj = 1; tj < p.count; tj++)
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj);
  return OOC_OK;
done:
  (void)drain(c, owner, 0, 0, 0, 0);
  return st;
}

/* ---- solve: forward and backward substitution streaming L -------------------------------- */

static ooc_status_t read_lcol(chol_t *c, int64_t tj) {
  return move_col(c, MOVE_READ, tj, c->p.count, tj, c->C);
}

static ooc_status_t solve(chol_t *c, tstore_t *B) {
  const ooc_ops_t *o = c->o;
  part_t p = c->p, bc = ts_cols(B);
  int64_t n = c->n, W = c->W;
  double *P = c->P, *L = c->C;
  int64_t per = ooc_max64(1, W / bc.b); /* B tile columns per stripe */
  int64_t nstripes = ooc_cdiv64(bc.count, per);
  for (int64_t s = 0; s < nstripes; s++) {
    int64_t t0 = s * per, t1 = ooc_min64(bc.count, t0 + per);
    int64_t c0 = part_start(bc, t0), mw = part_start(bc, t1 - 1) + part_len(bc, t1 - 1) - c0;
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_take_col(B, tj, P + (part_start(bc, tj) - c0) * n, n));
    for (int64_t tj = 0; tj < p.count; tj++) { /* L Y = B */
      int64_t r0 = part_start(p, tj), bj = part_len(p, tj), rest = n - r0 - bj;
      OOC_TRY(read_lcol(c, tj));
      o->trsm('L', 'L', 'N', 'N', bj, mw, 1.0, L + r0, n, P + r0, n);
      if (rest > 0) o->gemm('N', 'N', rest, mw, bj, -1.0, L + r0 + bj, n, P + r0, n, 1.0,
                            P + r0 + bj, n);
      OOC_TRY(ooc_tick(c->ctx, "solve", (s + 0.5 * (tj + 1.0) / p.count) / nstripes));
    }
    for (int64_t tj = p.count - 1; tj >= 0; tj--) { /* L^T X = Y */
      int64_t r0 = part_start(p, tj), bj = part_len(p, tj), rest = n - r0 - bj;
      OOC_TRY(read_lcol(c, tj));
      if (rest > 0) o->gemm('T', 'N', bj, mw, rest, -1.0, L + r0 + bj, n, P + r0 + bj, n, 1.0,
                            P + r0, n);
      o->trsm('L', 'L', 'T', 'N', bj, mw, 1.0, L + r0, n, P + r0, n);
      OOC_TRY(ooc_tick(c->ctx, "solve", (s + 0.5 + 0.5 * (p.count - tj) / p.count) / nstripes));
    }
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_put_col(B, tj, P + (part_start(bc, tj) - c0) * n, n));
  }
  return OOC_OK;
}

/* ---- a factor given by the caller ------------------------------------------------------- */

/* CHOL_SOLVE_FACTORED: A already holds L. Check that its diagonal is positive and finite (a
 * zero or negative L_jj is not a Cholesky factor, and the solve would divide by it) and take
 * log det(L L^T) = 2 sum log L_jj from it. */
static ooc_status_t factored_diag(chol_t *c) {
  part_t p = c->p;
  for (int64_t t = 0; t < p.count; t++) {
    int64_t w = part_len(p, t), k0 = part_start(p, t);
    OOC_TRY(ts_read(c->A, t, t, c->S, w));
    for (int64_t j = 0; j < w; j++) {
      double d = c->S[j + j * w];
      if (!(d > 0) || !isfinite(d)) {
        if (c->info) *c->info = k0 + j + 1;
        return OOC_FAIL(c->ctx, OOC_ERR_FORMAT,
                        "not a Cholesky factor: L[%lld, %lld] = %g (the diagonal must be "
                        "positive)", (long long)(k0 + j), (long long)(k0 + j), d);
      }
      c->logdet += 2.0 * log(d);
    }
  }
  return OOC_OK;
}

/* ---- entry ------------------------------------------------------------------------------- */

int64_t chol_even_stripe(int64_t n, int64_t b, int64_t W) {
  if (W >= n || b < 1 || W < b) return W;
  int64_t tiles = ooc_cdiv64(n, b), steps = ooc_cdiv64(tiles, W / b);
  return ooc_cdiv64(tiles, steps) * b;
}

ooc_status_t chol_run(ooc_ctx_t *ctx, const chol_args_t *a, chol_stats_t *stats, int64_t *info,
                      double *logdet) {
  chol_stats_t dummy;
  if (!stats) stats = &dummy;
  memset(stats, 0, sizeof *stats);
  if (info) *info = 0;
  if (logdet) *logdet = 0.0;
  part_t rows = ts_rows(a->A), cols = ts_cols(a->A);
  int64_t n = rows.n, b = rows.b;
  if (cols.n != n)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "Cholesky needs a square matrix (got %lld x %lld)",
                    (long long)n, (long long)cols.n);
  if (a->job != CHOL_FACTOR && a->job != CHOL_INVERT && a->job != CHOL_SOLVE &&
      a->job != CHOL_SOLVE_FACTORED)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "Cholesky: unknown job %d", a->job);
  int solving = a->job == CHOL_SOLVE || a->job == CHOL_SOLVE_FACTORED;
  if (solving && (!a->B || ts_rows(a->B).n != n || ts_rows(a->B).b != b || ts_cols(a->B).b != b))
    return OOC_FAIL(ctx, OOC_ERR_ARG,
                    "Cholesky solve: right-hand sides must have %lld rows and tile %lld", (long long)n,
                    (long long)b);
  if (n == 0) return OOC_OK;
  int64_t W = ts_stripe(n, b, a->stripe);
  int64_t m = solving ? ts_cols(a->B).n : 0;
  if (solving && m == 0) m = 1; /* still factor: the workspace is the same shape */
  int64_t bb = ooc_min64(b, n);

  chol_exec_t *ex = a->exec;
  int ring = W < n, vring = ring && a->job == CHOL_INVERT; /* chol.h: V through the slots */
  if (ex && (W > ex->W || (!vring && !ex->panel) ||
             (ring && (ex->nslots < 1 || ex->nslots > CHOL_MAX_SLOTS || !ex->slot[0])) ||
             (vring && (!ex->colload || !ex->colstore || !ex->rowload || !ex->rowstore)) ||
             !ex->pivot_begin != !ex->vready))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "Cholesky executor %s: stripe %lld wider than its %lld, "
                    "or no panel, or %d column slots, or no V moves, or half a split pivot",
                    ex->name, (long long)W,
                    (long long)ex->W, ex->nslots);

  chol_t c = {.ctx = ctx, .a = a, .o = a->ops, .A = a->A, .p = rows, .n = n, .b = b, .W = W,
              .stats = stats, .info = info};
  ooc_status_t st = OOC_OK;
  int need_col = ex ? solving : (W < n || solving);
  c.P = ex ? ex->panel : ooc_malloc(ctx, (size_t)(n * W) * sizeof(double));
  c.C = need_col ? ooc_malloc(ctx, (size_t)(n * bb) * sizeof(double)) : NULL;
  c.S = ooc_malloc(ctx, (size_t)(bb * bb) * sizeof(double));
  int need_row = ex && a->job == CHOL_INVERT && W < n && !need_col; /* chol_t.M */
  c.M = need_row ? ooc_malloc(ctx, (size_t)(n * bb) * sizeof(double)) : NULL;
  if ((!ex && !c.P) || (need_col && !c.C) || !c.S || (need_row && !c.M)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM,
                  "out of host memory for the Cholesky workspace (%lld bytes)",
                  (long long)chol_workspace_bytes(n, b, W, m));
    goto done;
  }
  if (a->job == CHOL_INVERT) {
    OOC_CHECK(st = ex ? invert_x(&c) : invert(&c));
  } else {
    if (a->job == CHOL_SOLVE_FACTORED) OOC_CHECK(st = factored_diag(&c));
    else OOC_CHECK(st = ex ? factor_x(&c) : factor(&c));
    if (solving && ts_cols(a->B).n > 0) {
      double t0 = ooc_now();
      OOC_CHECK(st = solve(&c, a->B));
      stats->t_solve += ooc_now() - t0;
    }
  }
  if (logdet) *logdet = c.logdet;
done:
  if (!ex) ooc_free(ctx, c.P);
  ooc_free(ctx, c.C);
  ooc_free(ctx, c.S);
  ooc_free(ctx, c.M);
  return st;
}
