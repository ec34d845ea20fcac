/* chol.c: out-of-core Cholesky factor, symmetric Gauss-Jordan inverse and solve on tile stores,
 * written once over the executor (exec.h). See chol.h for the algorithms, flop counts, I/O and
 * the schedule on the device. */
#include "solvers/chol.h"

#include "base/parloop.h"
#include "exec/ring.h"
#include "solvers/xdirect.h"

#include <math.h>
#include <string.h>

int64_t chol_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ooc_min64(W, n);
  /* the ring's slot (the host executor has one), the panel, the transpose buffer, the diagonal;
   * the host executor, and 2 KiB for the buffers' and events' headers and the infos (6 on the
   * host executor, whose sweep is one block) */
  int64_t col = (W < n || m > 0) ? ring_host_bytes(1, n, b) : 0;
  return 8 * (n * W + b * b + W) + col + ex_host_bytes(1) + 2048;
}

/* Each device after the first: on unified host executors (the pipeline's CPU devices) its ring's
 * slot (out of core: it sweeps), its executor (ex_host_bytes(1)) and headers and infos; the
 * panel is the first's. */
int64_t chol_workspace_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd) {
  int64_t one = chol_workspace_bytes(n, b, W, m);
  if (n <= 0 || nd <= 1) return one;
  b = ooc_min64(b, n);
  int64_t ring = W < n ? ring_host_bytes(1, n, b) : 0;
  return one + (nd - 1) * (ring + ex_host_bytes(1) + 2048);
}

int64_t chol_host_budget(int64_t n, int64_t b, int64_t W) {
  return n > 0 ? 8 * (n + 1) * ts_stripe(n, ooc_min64(b, n), W) : 0;
}

/* ---- the device plan (chol.h) --------------------------------------------------------------- */

static int64_t eff_nb(int64_t nb, int64_t W) {
  return ooc_max64(1, ooc_min64(nb > 0 ? nb : CHOL_NB, W));
}
/* an executor's workspace answer, or a margin when it cannot tell (-1) */
static int64_t ws_or(int64_t ws, int64_t margin) { return ws < 0 ? margin : ws; }

/* the ring's slots off a unified executor: K, or CHOL_SLOTS for 0 */
static int slots_or(int K) { return K > 0 ? K : CHOL_SLOTS; }

int64_t chol_device_bytes(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W, int job, int64_t nb,
                          int K) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ooc_min64(W, n);
  nb = eff_nb(nb, W);
  int sweep = job == CHOL_INVERT, sweeps = W < n;
  /* the factoring queue's workspace: potrf of the W x W diagonal block (ld n); the sweep's potrf
   * and potri of nb x nb blocks (ld W) one after the other on the same queue: the largest */
  int64_t ws = ws_or(ex_potrf_ws(ex, W, n), 8 * W * 256);
  if (sweep) {
    ws = ooc_max64(ws, ws_or(ex_potrf_ws(ex, nb, W), 8 * nb * 256));
    ws = ooc_max64(ws, ws_or(ex_potri_ws(ex, nb, W), 8 * nb * 256));
  }
  int64_t t = EX_DEV_ROUND(8 * n * W) + EX_DEV_ROUND(8 * W) + EX_DEV_ROUND(ws);
  if (sweep) {
    if (nb < W) t += EX_DEV_ROUND(8 * W * nb);
    if (sweeps) t += EX_DEV_ROUND(8 * W * W);
  }
  if (sweeps || job == CHOL_SOLVE) t += slots_or(K) * EX_DEV_ROUND(8 * n * b);
  return t;
}

/* The block for stripe W and its bytes: CHOL_NB (or nb_req); in core (CHOL_INVERT, W = n)
 * halved down to 512 while that is what keeps the stripe within the budget. */
static int64_t pick_nb(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W, int job, int64_t nb_req,
                       int K, int64_t *bytes) {
  int64_t nb = eff_nb(nb_req, W);
  for (;;) {
    *bytes = chol_device_bytes(ex, n, b, W, job, nb, K);
    if (*bytes <= ex->budget || W < n || job != CHOL_INVERT || nb <= 512 || nb_req > 0) return nb;
    nb /= 2;
  }
}

int64_t chol_device_nb(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W, int job, int K) {
  int64_t bytes = 0;
  return pick_nb(ex, n, b, ooc_min64(W, n), job, 0, K, &bytes);
}

int64_t chol_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int job, int K) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  int64_t bytes = 0;
  pick_nb(ex, n, b, n, job, 0, K, &bytes);
  if (bytes <= ex->budget) return n;
  int64_t lo = 0, hi = ooc_cdiv64(n, b) - 1; /* the most tile columns that fit, < cdiv(n, b) */
  while (lo < hi) { /* the bytes grow with W */
    int64_t mid = (lo + hi + 1) / 2;
    pick_nb(ex, n, b, mid * b, job, 0, K, &bytes);
    if (bytes <= ex->budget) lo = mid;
    else hi = mid - 1;
  }
  return lo * b;
}

int64_t chol_staging_bytes(int64_t n, int64_t b, int64_t W, int job, int K) {
  W = ooc_min64(W, n);
  /* the slots when sweeping or solving; the panel, except for the sweep out of core, whose V
   * moves through the slots */
  int64_t slots = W < n || job == CHOL_SOLVE ? slots_or(K) * 8 * n * ooc_min64(b, n) : 0;
  int panel = W >= n || job != CHOL_INVERT;
  return (panel ? 8 * n * W : 0) + slots + 8 * W + 8 * (2 * W + 8) + 4096;
}

int64_t chol_staging_bytes_nd(int64_t n, int64_t b, int64_t W, int job, int nd, int K) {
  int spread = nd > 1 && job == CHOL_INVERT && W < n; /* chol.h "Several devices" */
  /* each device's ring, diagonal and infos: chol_staging_bytes' sweep out of core, per device */
  return (spread ? nd : 1) * chol_staging_bytes(n, b, W, job, K);
}

/* What every phase needs, set up once by chol_run. Buffers named d* are the executor's device
 * memory, h* its staging memory; on a unified executor each h* is its d*. */
typedef struct chol {
  ooc_ctx_t *ctx;
  const chol_args_t *a;
  ooc_exec_t *e;
  int uni;          /* e->unified: no copies, the host takes and puts device buffers directly */
  int qin, qc, qout;
  tstore_t *A;
  part_t p;         /* rows = cols partition of A */
  int64_t n, b, W, nb;
  double *dP, *hP;  /* n x W panel, ld n, row index = global row (hP NULL: V through the ring) */
  ring_t *ring;     /* K slots of n x b (ld n, global rows), when W < n or solving */
  double *dC[CHOL_MAX_SLOTS]; /* the slots' device buffers (NULL on a unified executor) */
  ex_event_t *ev_in[CHOL_MAX_SLOTS], *ev_comp[CHOL_MAX_SLOTS];
  double *dV;       /* the in-device sweep's W x nb panel (NULL when one block covers it) */
  double *dE;       /* W x W: D's copy, swept into D^-1 while V streams in (W < n, not unified) */
  double *dDiag, *hDiag; /* W: L's diagonal */
  int64_t *inf;     /* host infos: sweep blocks' potrf [0, ns), potri [ns, 2 ns); D's potrf at
                       2 nsw, its potri at 2 nsw + 1 (nsw: blocks of the widest stripe) */
  int64_t ninf, nsw;
  ex_event_t *ev_load, *ev_done;
  ex_event_t **ev_blk; /* per tile column block of the stripe: its F_P is final (store) */
  int64_t nblk;
  double *S;        /* b x b transpose buffer */
  double *M;        /* b x n: one tile row (put_row_t), off a unified executor; else NULL */
  chol_stats_t *stats;
  int64_t *info;
  double logdet;
  /* the step */
  int64_t step, nsteps, k0, w, kt0, kt1;
  int last, upper;
  int64_t mw;       /* solve: columns of B in the panel */
  /* Several devices (issue 26, chol.h "Several devices"): every device's part is dv[0 .. nd),
   * this one dv[d]; the fields above that are not the executor's (A, p, n, W, the step, the
   * stats) are the same in each. The first holds what store() and V's moves out use. */
  struct chol *dv;
  ring_t **rings;   /* dv[i].ring, for ring_run_multi */
  int d;            /* this device */
  int nd;           /* devices the sweep spreads over (1: the first alone) */
  int npf;          /* devices with a panel of their own: nd off unified executors, else 1 (the
                       others share the first's: host memory) */
  /* Direct moves of the sweep (chol.h), the first device's: per sweep item in flight, q % nlend
   * (nlend = nd K: the s its work receives, ring.h), its two lent ranges (the rows above the
   * stripe, the rows below it); the cache's pinner */
  int direct;
  xlend_t *lend;
  int nlend;
  xpin_t pin;
  int64_t needed; /* chol_args_t.need has been asked for A's columns [0, needed) (the first's) */
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

/* A's columns up to the end of tile column tj in the store before a tile of them is taken
 * (chol_args_t.need: the input read as the first step asks for it). */
static ooc_status_t need_col(chol_t *c, int64_t tj) {
  chol_t *f = c->dv; /* the first device's count: the devices share one store */
  int64_t end = part_start(c->p, tj) + part_len(c->p, tj);
  if (!c->a->need || end <= f->needed) return OOC_OK;
  OOC_TRY(c->a->need(c->a->need_user, end));
  f->needed = end;
  return OOC_OK;
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

/* Tile rows moved with a transpose. A tile row ti of the store, tiles (ti, u) for u in [u0, u1),
 * holds the transposes of the blocks of a column buffer B (rows at their global offsets, ld n,
 * bi columns): put_row_t writes them there, take_row_t takes them back into B. Only the mirror
 * of the upper triangle on the last step of a full inverse needs it (tile row P itself goes
 * through the executor, which transposes it). With the tile-row buffer M (off a unified
 * executor) the transposes run on threads and the tile row moves as one batch (one thread tile
 * by tile took most of the host time at n = 65536); without it, one tile at a time through S. */
typedef struct {
  const double *B;
  const xlend_t *d; /* the column's tiles lent in place (chol.h "Direct moves"), or NULL: B */
  double *M;
  part_t p;
  int64_t n, bi, u0;
} trow_t;

/* Block u of the column (bu x bi): in B (ld n), or tile u's lent buffer (ld bu). */
static const double *trow_src(const trow_t *t, int64_t u, int64_t *ld) {
  *ld = t->d ? part_len(t->p, u) : t->n;
  return t->d ? t->d->tile[u - t->d->t0] : t->B + part_start(t->p, u);
}

static void trow_job(void *arg, int64_t k, int worker) {
  const trow_t *t = arg;
  (void)worker;
  int64_t u = t->u0 + k, bu = part_len(t->p, u), off = part_start(t->p, u) - part_start(t->p, t->u0);
  int64_t ld;
  const double *src = trow_src(t, u, &ld);
  transpose(src, ld, bu, t->bi, t->M + off * t->bi, t->bi);
}

/* d: the lent range of the column that holds blocks [u0, u1), or NULL (B). */
static ooc_status_t put_row_t(chol_t *c, int64_t ti, const double *B, const xlend_t *d,
                              int64_t u0, int64_t u1) {
  if (u0 >= u1) return OOC_OK;
  int64_t bi = part_len(c->p, ti);
  trow_t t = {B, d, c->M, c->p, c->n, bi, u0};
  if (!c->M) {
    for (int64_t u = u0; u < u1; u++) {
      int64_t ld;
      const double *src = trow_src(&t, u, &ld);
      transpose(src, ld, part_len(c->p, u), bi, c->S, bi);
      OOC_TRY(ts_put(c->A, ti, u, c->S, bi));
    }
    return OOC_OK;
  }
  ooc_parallel(ooc_par_cpus(OOC_PAR_MAX_THREADS), u1 - u0, trow_job, &t);
  return ts_put_tiles(c->A, ti, ti + 1, u0, u1, c->M, bi);
}


/* Run `call` (an ooc_status_t expression) and add its seconds to *acc (chol_stats_t's split of
 * the host time). */
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

/* Put tile column tj (outside the stripe, rows from its diagonal down, in C) back; on the last
 * step also its transposes into the upper triangle (or zero the diagonal tile's upper). With d
 * (chol.h "Direct moves": the column's two lent ranges, the rows above the stripe and below it)
 * the column is in the lent tiles instead: the same work on them in place, then they go back
 * (after the transposes, which read them: a returned tile may be evicted by the next put). */
static ooc_status_t sweep_put(chol_t *c, int64_t tj, double *C, xlend_t *d, int64_t kt0,
                              int64_t kt1, int last) {
  part_t p = c->p;
  int64_t n = c->n, r0 = part_start(p, tj), bj = part_len(p, tj);
  /* the diagonal block: in C, or the first tile of the lent range that starts at tj */
  double *dg = !d ? C + r0 : xl_lent(&d[0]) ? d[0].tile[0] : d[1].tile[0];
  int64_t ldg = d ? bj : n;
  if (last) {
    if (c->a->lower_only) zero_upper(dg, ldg, bj);
    else symmetrize(dg, ldg, bj);
  }
  if (!d) OOC_TRY(move_outside(c, MOVE_PUT, tj, kt0, kt1, C));
  if (last && !c->a->lower_only) { /* the upper triangle's copy: tile row tj, outside the stripe */
    OOC_TRY(put_row_t(c, tj, C, d ? &d[0] : NULL, tj + 1, ooc_min64(kt0, p.count)));
    OOC_TRY(put_row_t(c, tj, C, d ? &d[1] : NULL, ooc_max64(tj + 1, kt1), p.count));
  }
  if (d) xl_return(d, 2, 0);
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
    OOC_TRY(put_row_t(c, tj, col, NULL, kt1, c->p.count));  /* right of it */
  }
  return move_col(c, MOVE_PUT, tj, c->p.count, tj, col);
}


#define EX(call) OOC_TRY(call)

/* Everything enqueued on queue q so far has run (and its host outputs are written). */
static ooc_status_t sync_q(chol_t *c, int q) {
  OOC_TRY(ex_record(c->e, q, c->ev_done));
  return ex_sync(c->e, c->ev_done);
}

/* Queue `to` waits for what queue `from` has enqueued so far. */
static ooc_status_t follow(chol_t *c, int to, int from, ex_event_t *ev) {
  if (to == from) return OOC_OK;
  OOC_TRY(ex_record(c->e, from, ev));
  return ex_wait(c->e, to, ev);
}

/* L's diagonal (w entries of D, ld n) into dDiag, and to the host (after the next sync). */
static ooc_status_t diag_of(chol_t *c, const double *D, int64_t ld, int64_t w, int64_t off) {
  EX(ex_copy(c->e, c->qc, 1, w, D, ld + 1, c->dDiag + off, 1));
  if (!c->uni) EX(ex_get(c->e, c->qc, 1, w, c->dDiag + off, 1, c->hDiag + off, 1));
  return OOC_OK;
}

/* log det of the block whose diagonal hDiag[0:w) holds, added as the host code always has. */
static void add_logdet(chol_t *c, int64_t w) {
  double s = 0.0;
  for (int64_t j = 0; j < w; j++) s += log(c->hDiag[j]);
  c->logdet += 2.0 * s;
}

/* ---- the in-device sweep ----------------------------------------------------------------- */

/* F (w x w, lower triangle, ld ldf) := F^-1 by chol.h's symmetric sweep with blocks of nb, all on
 * the compute queue; with diag, L's diagonal (the pivot blocks' Cholesky factors' diagonals) into
 * dDiag. The strict upper triangle of F is neither read nor kept. With V the w x nb panel (ld w)
 * and, for the pivot block P = [i0, i1): V = F[:, P] (rows above P from row block P, transposed);
 * D = V[P] = L L^T; V_K = W_K = V_K L^-T, V_T = Z_T = -V_T L^-T (the sign makes every update one
 * GEMM with alpha = +1 left of P, -1 right of it); the other column blocks j get F[j0:w, j] +=
 * alpha V[j0:w] V[j]^T; then V_K = -W_K L^-1, V_T = W_T L^-1, D = D^-1, and V is written back.
 * Block s's potrf and potri infos go to inf[s] and inf[ns + s] (ns = the block count);
 * sweep_bad reads them. Nothing here waits: the host goes on queueing (V's moves), and a failed
 * block only makes the later ones compute garbage that sweep_bad never reports. One block
 * (nb >= w) is potrf + potri in place: no V. */
static ooc_status_t sweep(chol_t *c, double *F, int64_t ldf, int64_t w, int diag) {
  ooc_exec_t *e = c->e;
  int q = c->qc;
  int64_t nb = ooc_min64(c->nb, w), ns = ooc_cdiv64(w, nb);
  if (2 * ns + 2 > c->ninf)
    return OOC_FAIL(c->ctx, OOC_ERR_INTERNAL, "Cholesky sweep: %lld blocks, %lld info slots",
                    (long long)ns, (long long)c->ninf);
  if (ns == 1) {
    EX(ex_potrf(e, q, w, F, ldf, &c->inf[0]));
    if (diag) OOC_TRY(diag_of(c, F, ldf, w, 0));
    return ex_potri(e, q, w, F, ldf, &c->inf[1]);
  }
  double *V = c->dV;
  if (!V) return OOC_FAIL(c->ctx, OOC_ERR_INTERNAL, "Cholesky sweep: no panel for %lld blocks",
                          (long long)ns);
  for (int64_t s = 0; s < ns; s++) {
    int64_t i0 = s * nb, ib = ooc_min64(nb, w - i0), i1 = i0 + ib, below = w - i1;
    double *D = V + i0;
    EX(ex_copy(e, q, w - i0, ib, F + i0 + i0 * ldf, ldf, V + i0, w));
    if (i0 > 0) EX(ex_transpose(e, q, ib, i0, F + i0, ldf, V, w)); /* V[0:i0] = F[P, 0:i0]^T */
    EX(ex_potrf(e, q, ib, D, w, &c->inf[s]));
    if (diag) OOC_TRY(diag_of(c, D, w, ib, i0));
    if (i0 > 0) EX(ex_trsm(e, q, 'R', 'L', 'T', 'N', i0, ib, 1.0, D, w, V, w));
    if (below > 0) EX(ex_trsm(e, q, 'R', 'L', 'T', 'N', below, ib, -1.0, D, w, V + i1, w));
    for (int64_t j = 0; j < ns; j++) {
      if (j == s) continue;
      int64_t j0 = j * nb, jb = ooc_min64(nb, w - j0);
      /* rows [j0, w): for j left of P this includes rows P, whose result is overwritten below */
      EX(ex_gemm(e, q, 'N', 'T', w - j0, jb, ib, j < s ? 1.0 : -1.0, V + j0, w, V + j0, w, 1.0,
                 F + j0 + j0 * ldf, ldf));
    }
    if (i0 > 0) EX(ex_trsm(e, q, 'R', 'L', 'N', 'N', i0, ib, -1.0, D, w, V, w));
    if (below > 0) EX(ex_trsm(e, q, 'R', 'L', 'N', 'N', below, ib, -1.0, D, w, V + i1, w));
    EX(ex_potri(e, q, ib, D, w, &c->inf[ns + s]));
    EX(ex_copy(e, q, w - i0, ib, V + i0, w, F + i0 + i0 * ldf, ldf));
    if (i0 > 0) EX(ex_transpose(e, q, i0, ib, V, w, F + i0, ldf));
  }
  return OOC_OK;
}

/* After a sync: the sweep of w's first failing leading minor (1-based, 0: none). */
static ooc_status_t sweep_bad(chol_t *c, int64_t w, int64_t *bad) {
  int64_t nb = ooc_min64(c->nb, w), ns = ooc_cdiv64(w, nb);
  *bad = 0;
  for (int64_t t = 0; t < ns; t++)
    if (c->inf[t] != 0) {
      *bad = t * nb + c->inf[t];
      return OOC_OK;
    }
  for (int64_t t = 0; t < ns; t++)
    if (c->inf[ns + t] != 0) /* potri after a successful potrf: L_jj = 0 cannot happen */
      return OOC_FAIL(c->ctx, OOC_ERR_INTERNAL, "Cholesky sweep: potri info %lld in block %lld",
                      (long long)c->inf[ns + t], (long long)t);
  return OOC_OK;
}

/* The in-core inverse of F (n x n, ld n) on the compute queue: sweep, judge (a sync), mirror. */
static ooc_status_t incore_inverse(chol_t *c, double *F, int full, int64_t *bad) {
  int64_t n = c->n;
  OOC_TRY(sweep(c, F, n, n, 1));
  OOC_TRY(sync_q(c, c->qc));
  OOC_TRY(sweep_bad(c, n, bad));
  if (*bad) return OOC_OK;
  add_logdet(c, n);
  return ex_mirror(c->e, c->qc, 0, n, full, F, n, F, n);
}

/* ---- factor: left-looking by stripes ----------------------------------------------------- */

static int64_t fcol(const chol_t *c, int64_t q) { /* alternate: last read is read first */
  return (c->step % 2 == 0) ? c->kt0 - 1 - q : q;
}

static ooc_status_t f_take(void *u, int64_t q, double *slot, int64_t ld) {
  chol_t *c = u;
  (void)ld;
  return move_col(c, MOVE_READ, c->kt0, c->p.count, fcol(c, q), slot);
}

static ooc_status_t f_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *lastq) {
  chol_t *c = u;
  ooc_exec_t *e = c->e;
  int64_t n = c->n, k0 = c->k0, w = c->w, below = n - k0 - w, bj = part_len(c->p, fcol(c, q));
  double *C = c->uni ? slot : c->dC[s];
  (void)ld;
  if (!c->uni) {
    EX(ex_put(e, c->qin, n - k0, bj, slot + k0, n, C + k0, n));
    OOC_TRY(follow(c, c->qc, c->qin, c->ev_in[s]));
  }
  EX(ex_syrk(e, c->qc, 'L', 'N', w, bj, -1.0, C + k0, n, 1.0, c->dP + k0, n));
  if (below > 0)
    EX(ex_gemm(e, c->qc, 'N', 'T', below, w, bj, -1.0, C + k0 + w, n, C + k0, n, 1.0,
               c->dP + k0 + w, n));
  *lastq = c->qc;
  return ooc_tick(c->ctx, "factor", (c->step + (q + 1.0) / (c->kt0 + 1.0)) / c->nsteps);
}

/* Run the rings of the first nr devices over nitems (ring_run_multi: item q on device q % nr;
 * nr = 1: the first device's ring alone) and add their host times to the stats. */
static ooc_status_t run_ring(chol_t *c, int nr, int64_t nitems, const ring_ops_t *ops) {
  ring_stats_t before[EX_MAX_DEVICES];
  for (int i = 0; i < nr; i++) before[i] = c->rings[i]->stats;
  ooc_status_t st = ring_run_multi(c->rings, nr, nitems, ops, c);
  for (int i = 0; i < nr; i++) {
    const ring_stats_t *r = &c->rings[i]->stats;
    c->stats->t_take += r->t_take - before[i].t_take;
    c->stats->t_put += r->t_put - before[i].t_put;
    c->stats->t_wait += r->t_wait - before[i].t_wait;
  }
  return st;
}

/* The device and slot of a ring item that ring_run_multi hands over nr rings (ring.h: s =
 * ring + nr x slot); with nr = 1 the first device and s itself. */
static chol_t *item_dev(chol_t *c, int nr, int s, int *slot) {
  *slot = s / nr;
  return &c->dv[s % nr];
}

/* The step, on every device (chol_t.dv: the same in each). */
static void step_at(chol_t *c, int64_t step) {
  for (int d = 0; d < c->nd; d++) {
    chol_t *x = &c->dv[d];
    x->step = step;
    x->k0 = step * x->W;
    x->w = ooc_min64(x->W, x->n - x->k0);
    x->kt0 = x->k0 / x->b;
    x->kt1 = ooc_cdiv64(x->k0 + x->w, x->b);
    x->last = step == x->nsteps - 1;
  }
}

/* The stripe's columns between the tile store and the staging panel, and the panel (rows
 * [r0, n)) between staging and device. */
static ooc_status_t stripe_take(chol_t *c) {
  for (int64_t tj = c->kt0; tj < c->kt1; tj++) {
    OOC_TRY(need_col(c, tj));
    TIMED(c->stats->t_take, take_scol(c, tj, c->hP + (part_start(c->p, tj) - c->k0) * c->n));
  }
  if (c->uni) return OOC_OK;
  EX(ex_put(c->e, c->qin, c->n - c->k0, c->w, c->hP + c->k0, c->n, c->dP + c->k0, c->n));
  return follow(c, c->qc, c->qin, c->ev_load);
}

static ooc_status_t panel_back(chol_t *c, int64_t r0, int64_t w) {
  if (!c->uni) EX(ex_get(c->e, c->qc, c->n - r0, w, c->dP + r0, c->n, c->hP + r0, c->n));
  double t0 = ooc_now();
  ooc_status_t st = sync_q(c, c->qc);
  c->stats->t_wait += ooc_now() - t0;
  return st;
}

static ooc_status_t factor(chol_t *c) {
  ooc_exec_t *e = c->e;
  tstore_t *A = c->A;
  part_t p = c->p;
  int64_t n = c->n;
  static const ring_ops_t ops = {f_take, f_work, NULL};
  for (int64_t step = 0; step < c->nsteps; step++) {
    step_at(c, step);
    int64_t k0 = c->k0, w = c->w, below = n - k0 - w;
    double *D = c->dP + k0;
    double t0 = ooc_now();
    OOC_TRY(stripe_take(c));
    if (c->kt0 > 0) OOC_TRY(run_ring(c, 1, c->kt0, &ops)); /* earlier columns, read-only */
    double t1 = ooc_now();
    c->stats->t_update += t1 - t0;

    int64_t *bad = &c->inf[2 * c->nsw];
    EX(ex_potrf(e, c->qc, w, D, n, bad));
    if (below > 0) EX(ex_trsm(e, c->qc, 'R', 'L', 'T', 'N', below, w, 1.0, D, n, D + w, n));
    OOC_TRY(diag_of(c, D, n, w, 0));
    EX(ex_mirror(e, c->qc, 0, w, 0, D, n, D, n)); /* L is lower: the input's upper goes */
    OOC_TRY(panel_back(c, k0, w));
    if (*bad) return not_spd(c, k0 + *bad);
    add_logdet(c, w);
    double t2 = ooc_now();
    c->stats->t_panel += t2 - t1;

    for (int64_t tj = c->kt0; tj < c->kt1; tj++) {
      double *col = c->hP + (part_start(p, tj) - k0) * n;
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj); /* L is lower: upper reads as 0 */
      TIMED(c->stats->t_put, move_col(c, MOVE_PUT, tj, p.count, tj, col));
    }
    c->stats->t_update += ooc_now() - t2;
    c->stats->steps++;
    OOC_TRY(ooc_tick(c->ctx, "factor", (step + 1.0) / c->nsteps));
  }
  return OOC_OK;
}

/* ---- invert: symmetric Gauss-Jordan (sweep) on the lower triangle ------------------------ */

/* V's moves (W < n): stripe column t's rows of tiles [t0, t1) (VM_COL) or tile row t's tiles
 * left of the stripe (VM_ROW, only when kt0 > 0). In: D's columns first (VM_COL of tiles
 * [t, kt1) for each stripe block t), then per block t its VM_ROW and its VM_COL below the stripe;
 * out: from the last block to the first, its VM_COL (rows from its diagonal down, from row 0 on
 * the last step of a full inverse) then its VM_ROW. */
enum { VM_COL, VM_ROW };
typedef struct vmove {
  int kind;
  int64_t t, t0, t1;
  int first_done; /* in: the last of D's columns (the pivot starts) */
  int block_done; /* in: block t's last move (its trsm can run) */
} vmove_t;

static vmove_t v_in_move(const chol_t *c, int64_t q) {
  int64_t kt0 = c->kt0, kt1 = c->kt1, nt = c->p.count, n1 = kt1 - kt0;
  int m2 = (kt0 > 0) + (kt1 < nt);
  vmove_t v = {0};
  if (q < n1) {
    v = (vmove_t){VM_COL, kt0 + q, kt0 + q, kt1, q == n1 - 1, 0};
    return v;
  }
  int64_t r = q - n1, k = r % m2;
  v.t = kt0 + r / m2;
  v.kind = (k == 0 && kt0 > 0) ? VM_ROW : VM_COL;
  v.t0 = v.kind == VM_ROW ? 0 : kt1;
  v.t1 = v.kind == VM_ROW ? kt0 : nt;
  v.block_done = k == m2 - 1;
  return v;
}

static vmove_t v_out_move(const chol_t *c, int64_t q) {
  int64_t m = c->kt0 > 0 ? 2 : 1;
  vmove_t v = {0};
  v.t = c->kt1 - 1 - q / m;
  v.kind = q % m ? VM_ROW : VM_COL;
  return v;
}

/* Stripe column block [c0, c0 + bj), rows [r0, r0 + m) := sgn V L^-T, the blocks left of c0 done
 * (X L^T = sgn V by column blocks: V_J := sgn V_J - X_<J L_J,<J^T, then the diagonal block's
 * trsm). The pivot's W = V L^-T (and Z_T = -W_T) in the pieces V's blocks arrive in. */
static ooc_status_t fwd_block(chol_t *c, int64_t r0, int64_t m, int64_t c0, int64_t bj,
                              double sgn) {
  int64_t n = c->n;
  double *D = c->dP + c->k0, *V = c->dP + r0 + c0 * n;
  if (m <= 0) return OOC_OK;
  if (c0 > 0)
    EX(ex_gemm(c->e, c->qc, 'N', 'T', m, bj, c0, -1.0, c->dP + r0, n, D + c0, n, sgn, V, n));
  return ex_trsm(c->e, c->qc, 'R', 'L', 'T', 'N', m, bj, c0 > 0 ? 1.0 : sgn, D + c0 + c0 * n, n,
                 V, n);
}

/* Rows [r0, r0 + m) of column block [j0, j0 + bj) := -V L^-1, the blocks right of it done
 * (X L = -V backwards: V_J := -V_J - X_>J L_>J,J, then the diagonal block's trsm): F_KP =
 * -W_K L^-1 and F_TP = W_T L^-1 = -Z_T L^-1, block by block from the last, so that each block's
 * copies out start while the next is computed. */
static ooc_status_t bwd_block(chol_t *c, int64_t r0, int64_t m, int64_t j0, int64_t bj) {
  int64_t n = c->n, w = c->w, j1 = j0 + bj;
  double *D = c->dP + c->k0, *V = c->dP + r0 + j0 * n;
  if (m <= 0) return OOC_OK;
  if (j1 < w)
    EX(ex_gemm(c->e, c->qc, 'N', 'N', m, bj, w - j1, -1.0, c->dP + r0 + j1 * n, n,
               D + j1 + j0 * n, n, -1.0, V, n));
  return ex_trsm(c->e, c->qc, 'R', 'L', 'N', 'N', m, bj, j1 < w ? 1.0 : -1.0, D + j0 + j0 * n, n,
                 V, n);
}

/* The split pivot's first half: D is queued in, the rest of V is not. potrf of D (the minor, the
 * logdet, L for the trsm) and, with dE, D^-1 by the in-device sweep on the copy. */
static ooc_status_t pivot_begin(chol_t *c) {
  int64_t n = c->n, w = c->w;
  double *D = c->dP + c->k0;
  if (c->dE) {
    EX(ex_copy(c->e, c->qc, w, w, D, n, c->dE, c->W));
    OOC_TRY(sweep(c, c->dE, c->W, w, 0));
  }
  EX(ex_potrf(c->e, c->qc, w, D, n, &c->inf[2 * c->nsw]));
  return diag_of(c, D, n, w, 0);
}

/* Where a move of stripe column t goes between the tile store and the device: on a unified
 * executor the panel itself (the slot is not used), else the slot. */
static double *vcol(const chol_t *c, int64_t t, double *slot) {
  return c->uni ? c->dP + (part_start(c->p, t) - c->k0) * c->n : slot;
}

/* V's moves in go to every device with a panel of its own (npf): ring item i is move i / npf
 * for device i % npf (ring_run_multi's round robin), so each move goes to the devices in turn;
 * the devices before the last read its tiles from the store, the last takes them (as gj_x's
 * panel). One device: item i is move i, taken. */
static ooc_status_t vin_take(void *u, int64_t i, double *slot, int64_t ld) {
  chol_t *c = u;
  vmove_t v = v_in_move(c, i / c->npf);
  int take = i % c->npf == c->npf - 1;
  (void)ld;
  OOC_TRY(need_col(c, v.t)); /* (a row move's tiles lie left of its column) */
  if (v.kind == VM_ROW)
    return (take ? ts_take_tiles : ts_read_tiles)(c->A, v.t, v.t + 1, 0, c->kt0, slot,
                                                  part_len(c->p, v.t));
  return move_col(c, take ? MOVE_TAKE : MOVE_READ, v.t0, v.t1, v.t, vcol(c, v.t, slot));
}

/* Each panel device runs the same operations on the move (its own split pivot): W = V L^-T on
 * every panel, so that each device's sweep columns read their own. */
static ooc_status_t vin_work(void *u, int64_t i, int si, double *slot, int64_t ld, int *lastq) {
  int s;
  chol_t *c = item_dev(u, ((chol_t *)u)->npf, si, &s);
  ooc_exec_t *e = c->e;
  vmove_t v = v_in_move(c, i / c->npf);
  int64_t n = c->n, k0 = c->k0, c0 = part_start(c->p, v.t) - k0, bt = part_len(c->p, v.t);
  double *P = c->dP + c0 * n;
  (void)ld;
  *lastq = c->qin;
  if (v.kind == VM_ROW) { /* the slot holds bt x k0 (ld bt): its transpose is rows [0, k0) */
    const double *src = slot;
    if (!c->uni) {
      EX(ex_put(e, c->qin, bt, k0, slot, bt, c->dC[s], bt));
      src = c->dC[s];
    }
    EX(ex_transpose(e, c->qin, bt, k0, src, bt, P, n));
    OOC_TRY(follow(c, c->qc, c->qin, c->ev_in[s]));
  } else if (!c->uni) {
    int64_t r0 = part_start(c->p, v.t0), r1 = v.t1 < c->p.count ? part_start(c->p, v.t1) : n;
    EX(ex_put(e, c->qin, r1 - r0, bt, slot + r0, n, P + r0, n));
    OOC_TRY(follow(c, c->qc, c->qin, c->ev_in[s]));
  }
  if (v.first_done) OOC_TRY(pivot_begin(c));
  if (v.block_done && !c->uni) { /* W_K = V_K L^-T, Z_T = -V_T L^-T for this block */
    OOC_TRY(fwd_block(c, 0, k0, c0, bt, 1.0));
    OOC_TRY(fwd_block(c, k0 + c->w, n - k0 - c->w, c0, bt, -1.0));
  }
  if (v.block_done && c->uni && v.t == c->kt1 - 1) { /* unified: whole, the host code's trsm */
    OOC_TRY(fwd_block(c, 0, k0, 0, c->w, 1.0));
    OOC_TRY(fwd_block(c, k0 + c->w, n - k0 - c->w, 0, c->w, -1.0));
  }
  return OOC_OK;
}

/* The sweep's update of the tile columns outside the stripe, through the ring. */
static int64_t scol(const chol_t *c, int64_t q) {
  int64_t nt = c->p.count - (c->kt1 - c->kt0);
  /* alternate direction between steps; the first step left to right where A is still read
   * (chol_args_t.need) */
  int64_t r = (c->step % 2 == (c->a->need ? 1 : 0)) ? nt - 1 - q : q;
  return r < c->kt0 ? r : r + (c->kt1 - c->kt0);
}

/* Sweep item q's two lent ranges (in the first device's chol_t, c->dv). */
static xlend_t *s_lend(const chol_t *c, int64_t q) {
  return c->dv->lend + 2 * (q % c->dv->nlend);
}

/* Sweep item q's lent ranges when s_take lent it (direct moves on, every tile cached), else
 * NULL: the slot holds it. */
static xlend_t *s_lent(const chol_t *c, int64_t q) {
  xlend_t *d = c->dv->direct ? s_lend(c, q) : NULL;
  return d && xl_any(d, 2) ? d : NULL;
}

/* The item's tiles (move_outside's: from the diagonal down, the stripe's rows left out) lent in
 * place when every one is cached (chol.h "Direct moves"); else the slot takes them. */
static ooc_status_t s_take(void *u, int64_t q, double *slot, int64_t ld) {
  chol_t *c = u;
  int64_t tj = scol(c, q), bytes = 0, bj = part_len(c->p, tj), r0 = part_start(c->p, tj);
  int lent = 0;
  (void)ld;
  OOC_TRY(need_col(c, tj));
  if (!c->uni) /* the rows s_rows moves: above the stripe (a column of K) and below it */
    c->stats->bytes_swept += 2 * 8 * bj *
                             ((tj < c->kt0 ? c->k0 - r0 : 0) + c->n - ooc_max64(r0, c->k0 + c->w));
  if (c->direct) {
    int64_t t0[2] = {tj, ooc_max64(tj, c->kt1)}, t1[2] = {ooc_min64(c->kt0, c->p.count),
                                                         c->p.count};
    OOC_TRY(xl_lend(s_lend(c, q), 2, c->A, tj, t0, t1, TS_LEND_UPDATE, &lent, &bytes));
    c->stats->bytes_direct += 2 * bytes; /* in and out */
  }
  return lent ? OOC_OK : move_outside(c, MOVE_TAKE, tj, c->kt0, c->kt1, slot);
}

/* Rows of tile column tj the sweep touches: [r0, k0) and [k1, n) for a column of K (the
 * stripe's rows are neither copied nor updated), [r0, n) for one of T. */
static ooc_status_t s_rows(chol_t *c, int get, int s, double *slot, int64_t r0, int64_t bj,
                           int left) {
  int64_t n = c->n, k0 = c->k0, k1 = k0 + c->w;
  int64_t ra[2] = {r0, k1}, rb[2] = {left ? k0 : n, n};
  for (int i = 0; i < 1 + left; i++) {
    if (rb[i] <= ra[i]) continue;
    if (get) EX(ex_get(c->e, c->qout, rb[i] - ra[i], bj, c->dC[s] + ra[i], n, slot + ra[i], n));
    else EX(ex_put(c->e, c->qin, rb[i] - ra[i], bj, slot + ra[i], n, c->dC[s] + ra[i], n));
  }
  return OOC_OK;
}

/* Sweep item q on device s % nd (ring_run_multi's round robin), its slot s / nd: every device
 * updates its columns from its own panel (unified: the first's, which they share). */
static ooc_status_t s_work(void *u, int64_t q, int si, double *slot, int64_t ld, int *lastq) {
  int s;
  chol_t *c = item_dev(u, ((chol_t *)u)->nd, si, &s);
  ooc_exec_t *e = c->e;
  int64_t tj = scol(c, q), n = c->n, k0 = c->k0, w = c->w, k1 = k0 + w;
  int64_t r0 = part_start(c->p, tj), bj = part_len(c->p, tj);
  int left = tj < c->kt0; /* a column of K (else of T) */
  double *C = c->uni ? slot : c->dC[s];
  const xlend_t *d = s_lent(c, q);
  (void)ld;
  if (!c->uni) {
    if (d) OOC_TRY(xl_move(d, 2, e, c->qin, C, n, 0));
    else OOC_TRY(s_rows(c, 0, s, slot, r0, bj, left));
    OOC_TRY(follow(c, c->qc, c->qin, c->ev_in[s]));
  }
  /* the panel holds W_K above the stripe and Z_T = -W_T below it */
  double al = left ? 1.0 : -1.0, *Zj = c->dP + r0;
  int64_t m1 = left ? k0 - r0 - bj : n - r0 - bj, m2 = left ? n - k1 : 0;
  EX(ex_syrk(e, c->qc, 'L', 'N', bj, w, al, Zj, n, 1.0, C + r0, n));
  if (m1 > 0) EX(ex_gemm(e, c->qc, 'N', 'T', m1, bj, w, al, Zj + bj, n, Zj, n, 1.0, C + r0 + bj, n));
  if (m2 > 0) EX(ex_gemm(e, c->qc, 'N', 'T', m2, bj, w, al, c->dP + k1, n, Zj, n, 1.0, C + k1, n));
  *lastq = c->qc;
  if (!c->uni) {
    OOC_TRY(follow(c, c->qout, c->qc, c->ev_comp[s]));
    if (d) OOC_TRY(xl_move(d, 2, e, c->qout, C, n, 1));
    else OOC_TRY(s_rows(c, 1, s, slot, r0, bj, left));
    *lastq = c->qout;
  }
  int64_t nt = c->p.count - (c->kt1 - c->kt0);
  return ooc_tick(c->ctx, "invert", (c->step + (q + 1.0) / (nt + 1.0)) / c->nsteps);
}

/* The ring has retired the item (its gets have run): the slot put back, or the lent tiles
 * given back (cached, dirty since the lend). */
static ooc_status_t s_put(void *u, int64_t q, double *slot, int64_t ld) {
  chol_t *c = u;
  (void)ld;
  return sweep_put(c, scol(c, q), slot, s_lent(c, q), c->kt0, c->kt1, c->last);
}

/* Finish the step on the device: F_KP = -W_K L^-1, F_TP = W_T L^-1, F_PP = D^-1 with its upper
 * triangle mirrored (the last step of a full inverse) or zeroed. With dE by tile column blocks
 * from the last: block J's L is last used by block J itself, so D's block J then takes D^-1's;
 * its event lets V's moves out of block J start at once. Unified: the trsm whole, then potri. */
static ooc_status_t store(chol_t *c) {
  ooc_exec_t *e = c->e;
  int64_t n = c->n, k0 = c->k0, w = c->w, k1 = k0 + w, b = c->b;
  double *D = c->dP + k0;
  if (!c->dE) {
    OOC_TRY(bwd_block(c, 0, k0, 0, w));
    OOC_TRY(bwd_block(c, k1, n - k1, 0, w));
    EX(ex_potri(e, c->qc, w, D, n, &c->inf[2 * c->nsw + 1]));
    EX(ex_mirror(e, c->qc, 0, w, c->upper, D, n, D, n));
    for (int64_t J = 0; J < ooc_cdiv64(w, b); J++) EX(ex_record(e, c->qc, c->ev_blk[J]));
    return OOC_OK;
  }
  for (int64_t J = ooc_cdiv64(w, b) - 1; J >= 0; J--) {
    int64_t j0 = J * b, bj = ooc_min64(b, w - j0);
    OOC_TRY(bwd_block(c, 0, k0, j0, bj));
    OOC_TRY(bwd_block(c, k1, n - k1, j0, bj));
    EX(ex_copy(e, c->qc, w - j0, bj, c->dE + j0 + j0 * c->W, c->W, D + j0 + j0 * n, n));
    EX(ex_mirror(e, c->qc, j0, j0 + bj, c->upper, c->dE, c->W, D, n));
    EX(ex_record(e, c->qc, c->ev_blk[J]));
  }
  return OOC_OK;
}

static ooc_status_t vout_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *lastq) {
  chol_t *c = u;
  ooc_exec_t *e = c->e;
  vmove_t v = v_out_move(c, q);
  int64_t n = c->n, k0 = c->k0, c0 = part_start(c->p, v.t) - k0, bt = part_len(c->p, v.t);
  double *P = c->dP + c0 * n;
  (void)ld;
  if (c->uni) { /* after the store's operations on the one compute queue */
    *lastq = c->qc;
    if (v.kind == VM_ROW) EX(ex_transpose(e, c->qc, k0, bt, P, n, slot, bt));
    return OOC_OK;
  }
  *lastq = c->qout;
  EX(ex_wait(e, c->qout, c->ev_blk[c0 / c->b]));
  if (v.kind == VM_ROW) {
    EX(ex_transpose(e, c->qout, k0, bt, P, n, c->dC[s], bt));
    return ex_get(e, c->qout, bt, k0, c->dC[s], bt, slot, bt);
  }
  int64_t r0 = c->upper ? 0 : part_start(c->p, v.t);
  return ex_get(e, c->qout, n - r0, bt, P + r0, n, slot + r0, n);
}

static ooc_status_t vout_put(void *u, int64_t q, double *slot, int64_t ld) {
  chol_t *c = u;
  vmove_t v = v_out_move(c, q);
  (void)ld;
  if (v.kind == VM_ROW)
    return ts_put_tiles(c->A, v.t, v.t + 1, 0, c->kt0, slot, part_len(c->p, v.t));
  return put_scol(c, v.t, vcol(c, v.t, slot), c->kt0, c->kt1, c->upper);
}

/* One out-of-core sweep step (W < n). */
static ooc_status_t invert_step(chol_t *c) {
  static const ring_ops_t vin = {vin_take, vin_work, NULL}, upd = {s_take, s_work, s_put},
                          vout = {NULL, vout_work, vout_put};
  int64_t n1 = c->kt1 - c->kt0, m2 = (c->kt0 > 0) + (c->kt1 < c->p.count);
  double t0 = ooc_now();
  OOC_TRY(run_ring(c, c->npf, (n1 + n1 * m2) * c->npf, &vin));
  double t1 = ooc_now();
  c->stats->t_vmove += t1 - t0;
  c->stats->t_update += t1 - t0;

  /* the pivot's verdict, the first device's (the logdet counted once): potrf of D, then the
   * sweep's; on unified devices this also orders the others' sweep after the W = V L^-T they
   * read in the first's panel */
  OOC_TRY(sync_q(c, c->qc));
  int64_t bad = c->inf[2 * c->nsw];
  if (!bad && c->dE) OOC_TRY(sweep_bad(c, c->w, &bad));
  if (bad) return not_spd(c, c->k0 + bad);
  add_logdet(c, c->w);
  double t2 = ooc_now();
  c->stats->t_wait += t2 - t1;
  c->stats->t_panel += t2 - t1;

  int64_t nt = c->p.count - n1;
  /* round robin over the devices; every item retired (waited for) on return, so store() may
   * change the panel the sweep read */
  if (nt > 0) OOC_TRY(run_ring(c, c->nd, nt, &upd));
  double t3 = ooc_now();
  c->stats->t_update += t3 - t2;

  OOC_TRY(store(c));
  double t4 = ooc_now();
  c->stats->t_panel += t4 - t3;
  OOC_TRY(run_ring(c, 1, n1 * (c->kt0 > 0 ? 2 : 1), &vout));
  if (!c->dE && c->inf[2 * c->nsw + 1]) /* cannot happen after a successful potrf */
    return not_spd(c, c->k0 + c->inf[2 * c->nsw + 1]);
  double t5 = ooc_now();
  c->stats->t_vmove += t5 - t4;
  c->stats->t_update += t5 - t4;
  return OOC_OK;
}

/* The one step of a matrix within the stripe: in core. */
static ooc_status_t invert_incore(chol_t *c) {
  double t0 = ooc_now();
  OOC_TRY(stripe_take(c));
  double t1 = ooc_now();
  c->stats->t_update += t1 - t0;
  int64_t bad = 0;
  OOC_TRY(incore_inverse(c, c->dP, c->upper, &bad));
  if (bad) return not_spd(c, bad);
  OOC_TRY(panel_back(c, 0, c->n));
  double t2 = ooc_now();
  c->stats->t_panel += t2 - t1;
  for (int64_t tj = 0; tj < c->p.count; tj++)
    TIMED(c->stats->t_put, put_scol(c, tj, c->hP + part_start(c->p, tj) * c->n, 0, c->kt1,
                                    c->upper));
  c->stats->t_update += ooc_now() - t2;
  return OOC_OK;
}

static ooc_status_t invert(chol_t *c) {
  tstore_t *A = c->A;
  part_t p = c->p;
  int lower_only = c->a->lower_only;
  if (c->a->start_step > 0) c->logdet = c->a->logdet0;
  for (int64_t step = c->a->start_step; step < c->nsteps; step++) {
    step_at(c, step);
    c->upper = c->last && !lower_only;
    OOC_TRY(c->W < c->n ? invert_step(c) : invert_incore(c));
    c->stats->steps++;
    if (c->a->after_step) OOC_TRY(c->a->after_step(c->a->step_user, step, c->nsteps, c->logdet));
    OOC_TRY(ooc_tick(c->ctx, "invert", (step + 1.0) / c->nsteps));
  }
  if (lower_only)
    for (int64_t tj = 1; tj < p.count; tj++)
      for (int64_t ti = 0; ti < tj; ti++) ts_drop(A, ti, tj);
  return OOC_OK;
}

/* ---- solve: forward and backward substitution streaming L -------------------------------- */

static int64_t lcol(const chol_t *c, int64_t q, int bwd) { return bwd ? c->p.count - 1 - q : q; }

typedef struct {
  chol_t *c;
  int bwd;
  int64_t s, nstripes;
} lring_t;

static ooc_status_t l_take2(void *u, int64_t q, double *slot, int64_t ld) {
  lring_t *l = u;
  (void)ld;
  int64_t tj = lcol(l->c, q, l->bwd);
  return move_col(l->c, MOVE_READ, tj, l->c->p.count, tj, slot);
}

static ooc_status_t l_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *lastq) {
  lring_t *l = u;
  chol_t *c = l->c;
  ooc_exec_t *e = c->e;
  int64_t tj = lcol(c, q, l->bwd), n = c->n, mw = c->mw;
  int64_t r0 = part_start(c->p, tj), bj = part_len(c->p, tj), rest = n - r0 - bj;
  double *L = c->uni ? slot : c->dC[s], *P = c->dP;
  (void)ld;
  if (!c->uni) {
    EX(ex_put(e, c->qin, n - r0, bj, slot + r0, n, L + r0, n));
    OOC_TRY(follow(c, c->qc, c->qin, c->ev_in[s]));
  }
  if (!l->bwd) { /* L Y = B */
    EX(ex_trsm(e, c->qc, 'L', 'L', 'N', 'N', bj, mw, 1.0, L + r0, n, P + r0, n));
    if (rest > 0)
      EX(ex_gemm(e, c->qc, 'N', 'N', rest, mw, bj, -1.0, L + r0 + bj, n, P + r0, n, 1.0,
                 P + r0 + bj, n));
  } else { /* L^T X = Y */
    if (rest > 0)
      EX(ex_gemm(e, c->qc, 'T', 'N', bj, mw, rest, -1.0, L + r0 + bj, n, P + r0 + bj, n, 1.0,
                 P + r0, n));
    EX(ex_trsm(e, c->qc, 'L', 'L', 'T', 'N', bj, mw, 1.0, L + r0, n, P + r0, n));
  }
  *lastq = c->qc;
  double f = l->bwd ? 0.5 + 0.5 * (q + 1.0) / c->p.count : 0.5 * (q + 1.0) / c->p.count;
  return ooc_tick(c->ctx, "solve", (l->s + f) / l->nstripes);
}

static ooc_status_t solve(chol_t *c, tstore_t *B) {
  part_t bc = ts_cols(B);
  int64_t n = c->n, W = c->W;
  int64_t per = ooc_max64(1, W / bc.b); /* B tile columns per stripe */
  int64_t nstripes = ooc_cdiv64(bc.count, per);
  static const ring_ops_t ops = {l_take2, l_work, NULL};
  for (int64_t s = 0; s < nstripes; s++) {
    int64_t t0 = s * per, t1 = ooc_min64(bc.count, t0 + per);
    int64_t c0 = part_start(bc, t0), mw = part_start(bc, t1 - 1) + part_len(bc, t1 - 1) - c0;
    c->mw = mw;
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_take_col(B, tj, c->hP + (part_start(bc, tj) - c0) * n, n));
    if (!c->uni) {
      EX(ex_put(c->e, c->qin, n, mw, c->hP, n, c->dP, n));
      OOC_TRY(follow(c, c->qc, c->qin, c->ev_load));
    }
    for (int bwd = 0; bwd < 2; bwd++) {
      lring_t l = {c, bwd, s, nstripes};
      ring_stats_t before = c->ring->stats;
      ooc_status_t st = ring_run(c->ring, c->p.count, &ops, &l);
      c->stats->t_wait += c->ring->stats.t_wait - before.t_wait;
      OOC_TRY(st);
    }
    OOC_TRY(panel_back(c, 0, mw));
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_put_col(B, tj, c->hP + (part_start(bc, tj) - c0) * n, n));
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

/* A device's panel is its own (allocated here), or on unified devices after the first the
 * first's (host memory they share). */
static int own_panel(const chol_t *c) { return c->d == 0 || !c->uni; }

/* The buffers and events of a run (chol.h's schedule) on device c->d; freed by release(). The
 * devices after the first (chol.h "Several devices") only sweep and, with a panel of their own,
 * take V and run the pivot's potrf and W = V L^-T: no D^-1 (dE, dV), no store events, no
 * tile-row buffers. */
static ooc_status_t setup(chol_t *c, int job, int solving) {
  ooc_exec_t *e = c->e;
  int64_t n = c->n, W = c->W, bb = c->b;
  int invert = job == CHOL_INVERT, ringed = W < n || solving, first = c->d == 0;
  int nq = e->nqueues;
  c->qin = 0;
  c->qc = nq > 1 ? 1 : 0;
  c->qout = nq > 2 ? 2 : c->qc;
  c->nsw = ooc_cdiv64(W, c->nb);
  c->ninf = 2 * c->nsw + 4;
  c->inf = ooc_calloc(c->ctx, (size_t)c->ninf, sizeof(int64_t));
  if (!c->inf) return OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "out of host memory for the Cholesky infos");
  if (own_panel(c)) {
    EX(ex_alloc(e, (size_t)(n * W) * sizeof(double), &c->dP));
    EX(ex_alloc(e, (size_t)W * sizeof(double), &c->dDiag));
  } else {
    c->dP = c->dv[0].dP;
  }
  if (c->uni) c->hP = c->dP;
  else if (!invert || W >= n) EX(ex_host_alloc(e, (size_t)(n * W) * sizeof(double), &c->hP));
  if (c->uni) c->hDiag = c->dDiag;
  else EX(ex_host_alloc(e, (size_t)W * sizeof(double), &c->hDiag));
  if (first && invert && c->nb < ooc_min64(W, n) && (W >= n || !c->uni))
    EX(ex_alloc(e, (size_t)(W * c->nb) * sizeof(double), &c->dV));
  if (first && invert && W < n && !c->uni)
    EX(ex_alloc(e, (size_t)(W * W) * sizeof(double), &c->dE));
  EX(ex_event_create(e, &c->ev_load));
  EX(ex_event_create(e, &c->ev_done));
  if (ringed) {
    int K = c->a->nslots > 0 ? c->a->nslots : c->uni ? 1 : CHOL_SLOTS;
    if (K > CHOL_MAX_SLOTS || K > RING_MAX_SLOTS)
      return OOC_FAIL(c->ctx, OOC_ERR_ARG, "Cholesky: %d ring slots (at most %d)", K,
                      CHOL_MAX_SLOTS);
    EX(ring_create(e, K, n, bb, &c->ring));
    for (int s = 0; s < K; s++) {
      if (!c->uni) EX(ex_alloc(e, (size_t)(n * bb) * sizeof(double), &c->dC[s]));
      EX(ex_event_create(e, &c->ev_in[s]));
      EX(ex_event_create(e, &c->ev_comp[s]));
    }
  }
  if (!first) return OOC_OK;
  if (invert && W < n) {
    c->nblk = ooc_cdiv64(W, bb);
    c->ev_blk = ooc_calloc(c->ctx, (size_t)c->nblk, sizeof *c->ev_blk);
    if (!c->ev_blk) return OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "out of host memory for events");
    for (int64_t J = 0; J < c->nblk; J++) EX(ex_event_create(e, &c->ev_blk[J]));
  }
  c->S = ooc_malloc(c->ctx, (size_t)(bb * bb) * sizeof(double));
  /* the tile-row buffer of a full inverse's mirror (chol_t.M), off a unified executor */
  int need_row = invert && W < n && !c->uni && !c->a->lower_only;
  c->M = need_row ? ooc_malloc(c->ctx, (size_t)(n * bb) * sizeof(double)) : NULL;
  if (!c->S || (need_row && !c->M))
    return OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "out of host memory for the Cholesky workspace");
  return OOC_OK;
}

static void release(chol_t *c) {
  ooc_exec_t *e = c->e;
  (void)ex_finish(e); /* nothing may still use a buffer */
  ring_destroy(c->ring);
  for (int s = 0; s < CHOL_MAX_SLOTS; s++) {
    ex_free(e, c->dC[s]);
    ex_event_destroy(e, c->ev_in[s]);
    ex_event_destroy(e, c->ev_comp[s]);
  }
  for (int64_t J = 0; J < c->nblk && c->ev_blk; J++) ex_event_destroy(e, c->ev_blk[J]);
  ooc_free(c->ctx, c->ev_blk);
  ex_event_destroy(e, c->ev_load);
  ex_event_destroy(e, c->ev_done);
  ex_free(e, c->dE);
  ex_free(e, c->dV);
  if (!c->uni) {
    ex_host_free(e, c->hP);
    ex_host_free(e, c->hDiag);
  }
  ex_free(e, c->dDiag);
  if (own_panel(c)) ex_free(e, c->dP);
  ooc_free(c->ctx, c->inf);
  ooc_free(c->ctx, c->S);
  ooc_free(c->ctx, c->M);
}

ooc_status_t chol_dev_inverse(ooc_exec_t *e, double *F, int64_t n, int64_t nb, int full,
                              int64_t *bad, double *logdet) {
  *bad = 0;
  *logdet = 0.0;
  if (n <= 0) return OOC_OK;
  chol_stats_t st = {0};
  chol_t c = {.ctx = e->ctx, .e = e, .uni = e->unified, .n = n, .b = n, .W = n,
              .nb = ooc_max64(1, ooc_min64(nb > 0 ? nb : CHOL_NB, n)), .stats = &st};
  c.qin = c.qc = c.qout = 0;
  c.nsw = ooc_cdiv64(n, c.nb);
  c.ninf = 2 * c.nsw + 4;
  ooc_status_t s = OOC_OK;
  c.inf = ooc_calloc(c.ctx, (size_t)c.ninf, sizeof(int64_t));
  if (!c.inf) return OOC_FAIL(c.ctx, OOC_ERR_NOMEM, "out of host memory for the Cholesky infos");
  s = ex_alloc(e, (size_t)n * sizeof(double), &c.dDiag);
  if (s == OOC_OK && !c.uni) s = ex_host_alloc(e, (size_t)n * sizeof(double), &c.hDiag);
  if (c.uni) c.hDiag = c.dDiag;
  if (s == OOC_OK && c.nb < n) s = ex_alloc(e, (size_t)(n * c.nb) * sizeof(double), &c.dV);
  if (s == OOC_OK) s = ex_event_create(e, &c.ev_done);
  if (s == OOC_OK) s = incore_inverse(&c, F, full, bad);
  if (s == OOC_OK) s = sync_q(&c, 0);
  if (s == OOC_OK) *logdet = c.logdet;
  (void)ex_finish(e);
  ex_event_destroy(e, c.ev_done);
  ex_free(e, c.dV);
  if (!c.uni) ex_host_free(e, c.hDiag);
  ex_free(e, c.dDiag);
  ooc_free(c.ctx, c.inf);
  return s;
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
  if (a->need && (a->job != CHOL_INVERT || a->start_step > 0))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "chol: columns as needed only for an inverse from "
                    "its first step");

  int nx = a->nx > 1 ? a->nx : 1;
  if (nx > EX_MAX_DEVICES || (nx > 1 && (!a->xs || a->xs[0] != a->exec)))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "chol: %d devices (at most %d), the first must be "
                    "exec", nx, EX_MAX_DEVICES);
  /* only the sweep out of core spreads (chol.h "Several devices"); the rest runs on the first */
  int nd = a->job == CHOL_INVERT && W < n ? nx : 1;
  for (int d = 1; d < nd; d++) { /* one schedule for all: the same memory model and queues */
    const ooc_exec_t *x0 = a->xs[0], *x = a->xs[d];
    if (x->unified != x0->unified || x->nqueues != x0->nqueues)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "chol: devices %s and %s differ (unified %d and %d, %d "
                      "and %d queues); chol spreads over devices of one kind", x0->name, x->name,
                      x0->unified, x->unified, x0->nqueues, x->nqueues);
  }

  ooc_exec_t *e = a->exec;
  ooc_status_t st = OOC_OK;
  if (!e) OOC_TRY(ex_host_create(ctx, a->ops, 1, 0, &e)); /* the host code path */
  chol_t dv[EX_MAX_DEVICES];
  ring_t *rings[EX_MAX_DEVICES] = {NULL};
  for (int d = 0; d < nd; d++) {
    ooc_exec_t *x = d > 0 ? a->xs[d] : e;
    dv[d] = (chol_t){.ctx = ctx, .a = a, .e = x, .uni = x->unified, .A = a->A, .p = rows,
                     .n = n, .b = ooc_min64(b, n), .W = W, .stats = stats, .info = info,
                     .dv = dv, .rings = rings, .d = d, .nd = nd, .npf = x->unified ? 1 : nd};
    /* the sweep's block: the whole stripe (potri) on a unified executor, CHOL_NB on a device */
    dv[d].nb = ooc_max64(1, ooc_min64(a->nb > 0 ? a->nb : x->unified ? W : CHOL_NB, W));
    dv[d].nsteps = ooc_cdiv64(n, W);
  }
  chol_t *c = &dv[0];
  for (int d = 0; d < nd; d++) {
    OOC_CHECK(st = setup(&dv[d], a->job, solving));
    rings[d] = dv[d].ring;
  }
  c->direct = a->direct && !c->uni && a->job == CHOL_INVERT && W < n;
  if (c->direct) {
    c->nlend = nd * c->ring->K;
    c->lend = ooc_calloc(ctx, (size_t)(2 * c->nlend), sizeof(xlend_t));
    if (!c->lend) {
      st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the lent tiles");
      goto done;
    }
    OOC_CHECK(st = xl_alloc(ctx, c->lend, 2 * c->nlend, rows.count));
    xpin_on(&c->pin, e, a->A, NULL); /* lent tiles pinned as first lent */
  }
  if (a->job == CHOL_INVERT) {
    OOC_CHECK(st = invert(c));
  } else {
    if (a->job == CHOL_SOLVE_FACTORED) OOC_CHECK(st = factored_diag(c));
    else OOC_CHECK(st = factor(c));
    if (solving && ts_cols(a->B).n > 0) {
      double t0 = ooc_now();
      OOC_CHECK(st = solve(c, a->B));
      stats->t_solve += ooc_now() - t0;
    }
  }
  if (logdet) *logdet = c->logdet;
done:
  /* the last first: unified devices after the first read the first's panel */
  for (int d = nd - 1; d >= 0; d--) release(&dv[d]);
  /* tiles a failure left lent, then the pinner (the executors are idle: release waited) */
  if (c->lend) {
    xl_return(c->lend, 2 * c->nlend, 0);
    xl_free(ctx, c->lend, 2 * c->nlend);
    ooc_free(ctx, c->lend);
  }
  xpin_off(&c->pin, &stats->bytes_pinned, &stats->pin_refused);
  for (int d = 0; d < nd && st == OOC_OK; d++) st = ex_finish(dv[d].e); /* a late failure */
  if (!a->exec) ex_destroy(e);
  return st;
}
