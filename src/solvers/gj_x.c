/* gj_x.c: striped Gauss-Jordan written once on the executor (exec/exec.h) and the ring
 * (exec/ring.h), issue 18. gj.h states the algorithm and, under "Gauss-Jordan on the executor",
 * how this file schedules it; the panel LU's pieces are xpanel.h's, shared with lu.c. */
#include "solvers/gj.h"

#include <math.h>
#include <string.h>

#include "exec/ring.h"
#include "solvers/xdirect.h"
#include "solvers/xpanel.h"

/* The host executor's own bytes beyond ex_host_bytes: a 64-byte header per buffer and event
 * (P, two slots, the ring's and our events: under 32 in all). */
#define GJ_X_HEADERS (64 * 32)
/* Beside what getrf and getri take (ex_getrf_ws, ex_getri_ws): the laswp tables each queue's
 * workspace holds (EX_LASWP_WS(n) a queue, counted apart) and the pool's rounding of a few buffers
 * (256 bytes each). When the executor cannot tell its getri's workspace, the sweep block's
 * n x 512 (exec_cuda.c) and 64 MiB more are kept instead. */
#define GJ_X_DEV_MARGIN ((int64_t)64 << 10)
#define GJ_X_GETRI_NB 512

/* One device's part (issue 26: several devices are several executors, exec.h). */
typedef struct gdev {
  ooc_exec_t *ex;
  ring_t *ring;           /* NULL when nothing streams (a unified executor, one step, no B) */
  double *P;              /* device n x W, ld `ld`, rows at their global offsets; on unified
                             devices other than the first, the first's (host memory: shared) */
  double *D[GJ_X_SLOTS];  /* device twins of the ring's slots (NULL when unified) */
  ex_event_t *evin[GJ_X_SLOTS], *evc[GJ_X_SLOTS]; /* slot s: put done, products done */
  ex_event_t *evp[2];     /* chunk getrf done (alternating) */
  ex_event_t *evj, *evpan, *evt; /* panel columns in, panel factored, transform done */
  int64_t *loc;           /* a chunk's getrf pivots, local to its first row (W) */
  double *diag;           /* a chunk's U diagonal as getrf leaves it (W; staging memory, so the
                             get is asynchronous on CUDA: into pageable memory it would block
                             the host until the getrf has run) */
  int64_t gbad[2], rbad;  /* getrf's and getri's info, written when they run */
  int64_t started;        /* sweep items started here: the compute queues' round robin */
} gdev_t;

typedef struct gx {
  ooc_ctx_t *ctx;
  const gj_args_t *a;
  int nd;                 /* devices (a->nx, or 1: a->x) */
  gdev_t dv[EX_MAX_DEVICES];
  ring_t *rings[EX_MAX_DEVICES]; /* dv[d].ring, for ring_run_multi */
  int npf;                /* devices that hold and factor a panel of their own: all when not
                             unified (the stripe goes to each, each factors it: no broadcast
                             of the factored panel after the fact), 1 when unified (the others
                             read the first's P, host memory) */
  int uni;                /* the executors are unified: P and the slots are host memory */
  int K;                  /* ring slots per device */
  int QI, QO, G, qc[EX_MAX_QUEUES]; /* copy in, copy out, the compute queues (qc[0] factors) */
  int64_t n, b, W, wc, nsteps;
  part_t cols;            /* A's tile columns */
  int64_t ld;             /* P's and the slots' leading dimension: n, or on a unified executor
                             host_ld(n) */
  int64_t *ipiv;          /* n, global 0-based */
  double *udiag;          /* |u_jj| of the step (W) */
  gj_target_t *t;         /* the step's other tile columns, in sweep order */
  int64_t nt;
  gj_stats_t *st;
  int direct;             /* sweep items may move in place (gj.h "Direct moves") */
  xpin_t pin;             /* the stores' caches pin what they lend (xdirect.h) */
  /* per sweep item in flight, q % (nd K) (the s its work receives, ring.h): its lent tiles */
  xlend_t lend[EX_MAX_DEVICES * GJ_X_SLOTS];
  /* the step */
  int64_t step, k0, w, kt0, kt1;
  int64_t lo;             /* the panel pass's first tile column */
  int64_t needed;         /* a->need has been asked for A's columns [0, needed) */
} gx_t;

/* ---- sizes ----------------------------------------------------------------------------------- */

/* P's leading dimension on a unified executor: padded when n is a multiple of 256, so the
 * columns of a row block do not share cache sets (n = 4096 in core ran ~2% slower unpadded). */
static int64_t host_ld(int64_t n) { return n > 0 && n % 256 == 0 ? n + 8 : n; }

static int sweeps(int64_t n, int64_t W, int64_t m) { return W < n || m > 0; }

/* ipiv (n), loc, diag and udiag (W each), the targets (tile columns of A and B, + 1): exactly
 * what gj_x allocates (ooc_malloc counts the bytes asked), and a little for rounding. */
static int64_t small_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  int64_t targets = ooc_cdiv64(n, b) + (m > 0 ? ooc_cdiv64(m, b) : 0) + 1;
  return 8 * (n + 3 * W) + (int64_t)sizeof(gj_target_t) * targets + 512;
}

int64_t gj_x_workspace_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd) {
  if (n <= 0) return 0;
  nd = nd < 1 ? 1 : nd;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  int64_t ld = host_ld(n); /* unified: the padded leading dimension, one slot per device */
  int64_t ring = sweeps(n, W, m) ? ring_host_bytes(1, ld, b) : 0;
  /* one P (the devices share it), a ring, an executor and its headers per device */
  return 8 * ld * W + small_bytes(n, b, W, m) + nd * (ring + ex_host_bytes(1) + GJ_X_HEADERS);
}

int64_t gj_x_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  return gj_x_workspace_bytes_nd(n, b, W, m, 1);
}

int64_t gj_x_host_bytes_nd(int64_t n, int64_t b, int64_t W, int64_t m, int nd) {
  if (n <= 0) return 0;
  nd = nd < 1 ? 1 : nd;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  /* each device: its ring's pinned slots, and beyond the first its own chunk pivots and U
   * diagonal (W each) */
  return nd * ring_host_bytes(GJ_X_SLOTS, n, b) + (nd - 1) * (16 * W + 128) +
         small_bytes(n, b, W, m);
}

int64_t gj_x_host_budget(int64_t n, int64_t b, int64_t W) {
  return n > 0 ? 8 * host_ld(n) * ts_stripe(n, ooc_min64(b, n), W) : 0;
}

ooc_status_t gj_x_host_exec(ooc_ctx_t *ctx, const ooc_ops_t *ops, int64_t n, int64_t b, int64_t W,
                            ooc_exec_t **out) {
  /* one queue: a unified executor makes no copies, so a second would only hold products */
  return ex_host_create(ctx, ops, 1, gj_x_host_budget(n, b, W), out);
}

/* Device bytes of a stripe W (whole tiles or n): P, the ring's twins, and beside them the
 * factoring queue's workspace: getrf of a chunk and getri of the pivot block run on it one after
 * the other, so the larger of the two. */
static int64_t device_bytes(ooc_exec_t *ex, int64_t n, int64_t b, int64_t W) {
  int64_t rf = ex_getrf_ws(ex, n, ooc_min64(GJ_X_CHUNK, W)), ri = ex_getri_ws(ex, W);
  if (ri < 0) ri = 8 * W * ooc_min64(W, GJ_X_GETRI_NB) + ((int64_t)64 << 20);
  int64_t ws = (rf < 0 ? ooc_max64(ri, (int64_t)512 << 20) : ooc_max64(rf, ri)) +
               GJ_X_DEV_MARGIN + EX_LASWP_WS(n) * ex->nqueues;
  return 8 * n * W + 8 * GJ_X_SLOTS * n * b + ws;
}

int64_t gj_x_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int64_t Wmax) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  Wmax = ts_stripe(n, b, Wmax);
  if (device_bytes(ex, n, b, Wmax) <= ex->budget) return Wmax;
  /* the widest whole number of tile columns that fits (the bytes grow with W) */
  int64_t lo = 0, hi = Wmax / b;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (device_bytes(ex, n, b, mid * b) <= ex->budget) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0) return 0;
  return ts_stripe(n, b, ts_even_stripe(n, b, lo * b)); /* even steps, as lu_device_stripe */
}

/* ---- helpers --------------------------------------------------------------------------------- */

/* Queue `to` of ex waits for what `from` has queued so far. */
static ooc_status_t join(ooc_exec_t *ex, int from, int to, ex_event_t *ev) {
  if (from == to) return OOC_OK;
  OOC_TRY(ex_record(ex, from, ev));
  return ex_wait(ex, to, ev);
}

/* Where tile column tj of the stripe sits in device d's P. */
static double *pcol(const gx_t *X, int d, int64_t tj) {
  return X->dv[d].P + (part_start(X->cols, tj) - X->k0) * X->ld;
}

static void assign_queues(gx_t *X) {
  int nq = X->dv[0].ex->nqueues;
  X->G = nq >= 3 ? nq - 2 : 1;
  X->QI = 0;
  X->QO = nq >= 3 ? nq - 1 : 0;
  for (int g = 0; g < X->G; g++) X->qc[g] = nq >= 3 ? 1 + g : nq - 1;
}

/* A's columns before tile column tj's end from the caller first (gj_args_t.need). */
static ooc_status_t need_cols(gx_t *X, int64_t tj) {
  int64_t c = ooc_min64(X->n, part_start(X->cols, tj + 1));
  if (!X->a->need || c <= X->needed) return OOC_OK;
  OOC_TRY(X->a->need(X->a->need_user, c));
  X->needed = c;
  return OOC_OK;
}

/* ---- the panel: in by chunks, factored as they arrive ---------------------------------------- */

/* Panel item q: tile column lo + q / npf for device q % npf (ring_run_multi's round robin over
 * the npf rings gives every device every column). The devices before the last read the column
 * (a copy: it stays in the store), the last takes it out. */
static ooc_status_t pin_take(void *u, int64_t q, double *slot, int64_t ld) {
  gx_t *X = u;
  int64_t tj = X->lo + q / X->npf;
  if (q % X->npf < X->npf - 1)
    return ts_read_tiles(X->a->A, 0, ts_rows(X->a->A).count, tj, tj + 1, slot, ld);
  return ts_take_col(X->a->A, tj, slot, ld);
}

static ooc_status_t pin_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  gx_t *X = u;
  int d = s % X->npf;
  int64_t tj = X->lo + q / X->npf;
  OOC_TRY(ex_put(X->dv[d].ex, X->QI, X->n, part_len(X->cols, tj), slot, ld, pcol(X, d, tj),
                 X->ld));
  *last = X->QI;
  return OOC_OK;
}

/* The stripe's columns [a, a1) (relative to k0, whole tiles) into every panel device's P; their
 * factoring queues wait for them. A unified executor takes them straight into P (its device
 * memory is host memory): the worker meanwhile only touches the chunks before them. */
static ooc_status_t panel_in(gx_t *X, int64_t a, int64_t a1) {
  int64_t t0 = X->kt0 + a / X->b, t1 = X->kt0 + ooc_cdiv64(a1, X->b);
  OOC_TRY(need_cols(X, t1 - 1));
  if (X->uni) {
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_take_col(X->a->A, tj, pcol(X, 0, tj), X->ld));
    return OOC_OK;
  }
  ring_ops_t in = {pin_take, pin_work, NULL};
  X->lo = t0;
  OOC_TRY(ring_run_multi(X->rings, X->npf, (t1 - t0) * X->npf, &in, X));
  for (int d = 0; d < X->npf; d++)
    OOC_TRY(join(X->dv[d].ex, X->QI, X->qc[0], X->dv[d].evj));
  return OOC_OK;
}

/* Chunk [a, a + wc) (relative) has been factored on every panel device (getrf event evp[c]):
 * its pivots (global) and |u_jj| from the first device, and gj.h's pivot test, as soon as the
 * host has them. Every device applies these pivots from here on, so a device whose own getrf
 * picked others (devices that do not compute alike) is refused rather than used. */
static ooc_status_t chunk_done(gx_t *X, int64_t a, int64_t wc, int c, int64_t *info) {
  for (int d = 0; d < X->npf; d++) OOC_TRY(ex_sync(X->dv[d].ex, X->dv[d].evp[c]));
  int64_t r = X->k0 + a;
  const gdev_t *g0 = &X->dv[0];
  for (int d = 1; d < X->npf; d++)
    for (int64_t i = 0; i < wc; i++)
      if (X->dv[d].loc[i] != g0->loc[i])
        return OOC_FAIL(X->ctx, OOC_ERR_INTERNAL, "gj: %s picked pivot row %lld for column %lld, "
                        "%s row %lld: the devices do not factor the panel alike (use devices "
                        "of one kind, or one device)", X->dv[d].ex->name,
                        (long long)(r + X->dv[d].loc[i]), (long long)(r + i), g0->ex->name,
                        (long long)(r + g0->loc[i]));
  for (int64_t i = 0; i < wc; i++) {
    X->ipiv[r + i] = r + g0->loc[i];
    X->udiag[a + i] = fabs(g0->diag[i]);
  }
  return gj_check_pivots(X->ctx, r, wc, X->udiag + a, X->a->colnorm, info);
}

/* gj.h step 2 on the executor (gj.h "Gauss-Jordan on the executor"): left-looking by chunks of
 * wc columns; the host takes chunk c + 1 while the devices factor chunk c. Every chunk ends with
 * the later chunks' swaps, so P holds [A_up; L11\U11; L21] in LAPACK's layout (rows above k0 are
 * never pivot candidates, so A_up is as taken). Each panel device runs the same operations on
 * the same columns (issue 26: no broadcast of the factored panel, whose copies would wait for
 * the whole factorization). */
static ooc_status_t panel(gx_t *X, int64_t *info) {
  int64_t n = X->n, k0 = X->k0, w = X->w, wc = ooc_min64(X->wc, w), prev = -1;
  int qf = X->qc[0], c = 0;
  for (int64_t a = 0; a < w; a += wc, c ^= 1) {
    int64_t a1 = ooc_min64(w, a + wc);
    OOC_TRY(panel_in(X, a, a1));
    for (int d = 0; d < X->npf; d++)
      for (int64_t e = 0; e < prev; e += wc) /* chunks whose pivots the host has */
        OOC_TRY(xpanel_update(X->dv[d].ex, qf, X->dv[d].P, n, X->ld, k0, X->ipiv, k0 + e,
                              k0 + ooc_min64(w, e + wc), k0 + a, k0 + a1));
    if (prev >= 0) /* the one before: its pivots first */
      OOC_TRY(chunk_done(X, prev, a - prev, c ^ 1, info));
    for (int d = 0; d < X->npf; d++) {
      gdev_t *g = &X->dv[d];
      if (prev >= 0)
        OOC_TRY(xpanel_update(g->ex, qf, g->P, n, X->ld, k0, X->ipiv, k0 + prev, k0 + a, k0 + a,
                              k0 + a1));
      OOC_TRY(xpanel_getrf(g->ex, qf, g->P, n, X->ld, k0, k0 + a, a1 - a, g->loc, &g->gbad[c],
                           g->diag, g->evp[c]));
    }
    prev = a;
  }
  OOC_TRY(chunk_done(X, prev, w - prev, c ^ 1, info));
  for (int d = 0; d < X->npf; d++) {
    gdev_t *g = &X->dv[d];
    for (int64_t e = 0; e + wc < w; e += wc)
      OOC_TRY(ex_laswp(g->ex, qf, wc, g->P + e * X->ld, X->ld, k0 + e + wc, k0 + w, X->ipiv));
    for (int q = 1; q < X->G; q++) OOC_TRY(join(g->ex, qf, X->qc[q], g->evpan));
  }
  if (X->npf < X->nd) { /* the other devices read the first's P: it must be factored first */
    OOC_TRY(ex_record(X->dv[0].ex, qf, X->dv[0].evpan));
    OOC_TRY(ex_sync(X->dv[0].ex, X->dv[0].evpan));
  }
  return OOC_OK;
}

/* ---- the sweep: every other tile column through the rings ------------------------------------ */

/* Sweep item q's lent tiles: ring_run_multi's s for q is q % (nd K) (ring.h), so the items in
 * flight (at most nd K) never share one. */
static xlend_t *item_lend(gx_t *X, int64_t q) { return &X->lend[q % (X->nd * X->K)]; }

/* The item's tile column lent in place when every tile of it is cached (gj.h "Direct moves");
 * else the slot takes it. */
static ooc_status_t sw_take(void *u, int64_t q, double *slot, int64_t ld) {
  gx_t *X = u;
  const gj_target_t *t = &X->t[q];
  int64_t t0 = 0, t1 = ts_rows(t->ts).count, bytes = 0;
  int lent = 0;
  if (t->ts == X->a->A) OOC_TRY(need_cols(X, t->tj));
  if (!X->uni) X->st->bytes_swept += 2 * 8 * X->n * part_len(ts_cols(t->ts), t->tj);
  if (X->direct)
    OOC_TRY(xl_lend(item_lend(X, q), 1, t->ts, t->tj, &t0, &t1, TS_LEND_UPDATE, &lent, &bytes));
  X->st->bytes_direct += 2 * bytes; /* in and out */
  return lent ? OOC_OK : ts_take_col(t->ts, t->tj, slot, ld);
}

/* gj.h step 4 on column block C (n x nc, ld ldc) on device g's queue q: the step's swaps, then,
 * R = C[k0:k0+w] in place: Z = L11^-1 R, C_low -= L21 Z, C_k = U11^-1 Z, C_up -= A_up C_k (stream
 * order makes the gemm read Z before the second trsm turns it into C_k). */
static ooc_status_t update(gx_t *X, gdev_t *g, int q, double *C, int64_t ldc, int64_t nc) {
  ooc_exec_t *ex = g->ex;
  int64_t n = X->n, k0 = X->k0, w = X->w, below = n - k0 - w, ld = X->ld;
  const double *L11 = g->P + k0;
  OOC_TRY(ex_laswp(ex, q, nc, C, ldc, k0, k0 + w, X->ipiv));
  OOC_TRY(ex_trsm(ex, q, 'L', 'L', 'N', 'U', w, nc, 1.0, L11, ld, C + k0, ldc));
  if (below > 0)
    OOC_TRY(ex_gemm(ex, q, 'N', 'N', below, nc, w, -1.0, L11 + w, ld, C + k0, ldc, 1.0,
                    C + k0 + w, ldc));
  OOC_TRY(ex_trsm(ex, q, 'L', 'U', 'N', 'N', w, nc, 1.0, L11, ld, C + k0, ldc));
  if (k0 > 0)
    OOC_TRY(ex_gemm(ex, q, 'N', 'N', k0, nc, w, -1.0, g->P, ld, C + k0, ldc, 1.0, C, ldc));
  return OOC_OK;
}

/* Sweep item q on device s % nd (ring_run_multi's round robin), its slot s / nd. */
static ooc_status_t sw_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  gx_t *X = u;
  gdev_t *g = &X->dv[s % X->nd];
  int sl = s / X->nd;
  int64_t n = X->n, nc = part_len(ts_cols(X->t[q].ts), X->t[q].tj);
  int qc = X->qc[g->started++ % X->G];
  if (X->uni) { /* the slot is device memory */
    OOC_TRY(update(X, g, qc, slot, ld, nc));
    *last = qc;
    return OOC_OK;
  }
  const xlend_t *d = item_lend(X, q);
  if (xl_lent(d)) OOC_TRY(xl_move(d, 1, g->ex, X->QI, g->D[sl], n, 0));
  else OOC_TRY(ex_put(g->ex, X->QI, n, nc, slot, ld, g->D[sl], n));
  OOC_TRY(join(g->ex, X->QI, qc, g->evin[sl]));
  OOC_TRY(update(X, g, qc, g->D[sl], n, nc));
  OOC_TRY(join(g->ex, qc, X->QO, g->evc[sl]));
  if (xl_lent(d)) OOC_TRY(xl_move(d, 1, g->ex, X->QO, g->D[sl], n, 1));
  else OOC_TRY(ex_get(g->ex, X->QO, n, nc, g->D[sl], n, slot, ld));
  *last = X->QO;
  return OOC_OK;
}

/* The ring has retired the item (its gets have run): lent tiles go back cached (dirty since
 * the lend), a slot is put. */
static ooc_status_t sw_put(void *u, int64_t q, double *slot, int64_t ld) {
  gx_t *X = u;
  xlend_t *d = item_lend(X, q);
  if (xl_lent(d)) xl_return(d, 1, 0);
  else OOC_TRY(ts_put_col(X->t[q].ts, X->t[q].tj, slot, ld));
  return ooc_tick(X->ctx, "eliminate", (X->step + (q + 1.0) / (X->nt + 1.0)) / X->nsteps);
}

/* ---- inversion: the transform and the new column block --------------------------------------- */

/* gj.h step 5 on the first device's factoring queue, after the sweep (whose products read the
 * factored panel: the rings have retired them all): N_up = -A_up U11^-1 L11^-1,
 * N_low = -L21 L11^-1, P by getri (after the trsm, which read L11\U11). The other devices' P are
 * not needed again: the next step fills them anew. */
static ooc_status_t transform(gx_t *X, int64_t *info) {
  gdev_t *g = &X->dv[0];
  ooc_exec_t *ex = g->ex;
  int64_t n = X->n, k0 = X->k0, w = X->w, below = n - k0 - w, ld = X->ld;
  int q = X->qc[0];
  double *L11 = g->P + k0;
  if (k0 > 0) {
    OOC_TRY(ex_trsm(ex, q, 'R', 'U', 'N', 'N', k0, w, 1.0, L11, ld, g->P, ld));
    OOC_TRY(ex_trsm(ex, q, 'R', 'L', 'N', 'U', k0, w, -1.0, L11, ld, g->P, ld));
  }
  if (below > 0)
    OOC_TRY(ex_trsm(ex, q, 'R', 'L', 'N', 'U', below, w, -1.0, L11, ld, g->P + k0 + w, ld));
  OOC_TRY(ex_getri(ex, q, w, L11, ld, &g->rbad));
  OOC_TRY(ex_record(ex, q, g->evt));
  OOC_TRY(ex_sync(ex, g->evt));
  if (g->rbad) { /* u_jj == 0 (the pivot test normally stops this earlier) */
    *info = k0 + g->rbad;
    return OOC_FAIL(X->ctx, OOC_ERR_SINGULAR, "matrix is singular: zero pivot in column %lld",
                    (long long)(k0 + g->rbad - 1));
  }
  return OOC_OK;
}

static ooc_status_t pout_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  gx_t *X = u;
  int64_t tj = X->kt1 - 1 - q;
  (void)s;
  OOC_TRY(ex_get(X->dv[0].ex, X->QO, X->n, part_len(X->cols, tj), pcol(X, 0, tj), X->ld, slot,
                 ld));
  *last = X->QO;
  return OOC_OK;
}

static ooc_status_t pout_put(void *u, int64_t q, double *slot, int64_t ld) {
  gx_t *X = u;
  return ts_put_col(X->a->A, X->kt1 - 1 - q, slot, ld);
}

/* The transformed panel back as the new column block, last tile column first (gj.c's order):
 * through the first device's ring, a get per column on the copy-out queue while the host puts
 * the one before; on a unified executor straight from P (the host has synced the transform). */
static ooc_status_t panel_out(gx_t *X) {
  if (X->uni) {
    for (int64_t tj = X->kt1 - 1; tj >= X->kt0; tj--)
      OOC_TRY(ts_put_col(X->a->A, tj, pcol(X, 0, tj), X->ld));
    return OOC_OK;
  }
  ring_ops_t out = {NULL, pout_work, pout_put};
  return ring_run(X->dv[0].ring, X->kt1 - X->kt0, &out, X);
}

/* ---- the run --------------------------------------------------------------------------------- */

static ooc_status_t run_step(gx_t *X, int64_t *info) {
  const gj_args_t *a = X->a;
  double t0 = ooc_now();
  OOC_TRY(panel(X, info));
  double t1 = ooc_now();
  X->st->t_panel += t1 - t0;
  X->nt = gj_targets(a, X->step, X->kt0, X->kt1, X->t);
  ring_ops_t sw = {sw_take, sw_work, sw_put};
  if (X->nt > 0) OOC_TRY(ring_run_multi(X->rings, X->nd, X->nt, &sw, X));
  X->st->t_update += ooc_now() - t1;
  if (a->B) { /* solve: the stripe's columns are not needed again */
    for (int64_t tj = X->kt0; tj < X->kt1; tj++)
      for (int64_t ti = 0; ti < ts_rows(a->A).count; ti++) ts_drop(a->A, ti, tj);
    return OOC_OK;
  }
  double t2 = ooc_now();
  OOC_TRY(transform(X, info));
  double t3 = ooc_now();
  X->st->t_panel += t3 - t2;
  OOC_TRY(panel_out(X));
  X->st->t_update += ooc_now() - t3;
  return OOC_OK;
}

static ooc_status_t setup_dev(gx_t *X, int d) {
  gdev_t *g = &X->dv[d];
  ooc_exec_t *ex = g->ex;
  int64_t n = X->n, W = X->W;
  if (d < X->npf) {
    g->loc = ooc_malloc(X->ctx, (size_t)W * sizeof(int64_t));
    if (!g->loc)
      return OOC_FAIL(X->ctx, OOC_ERR_NOMEM, "out of host memory for the Gauss-Jordan pivots");
    OOC_TRY(ex_host_alloc(ex, (size_t)W * sizeof(double), &g->diag));
    OOC_TRY(ex_alloc(ex, (size_t)(X->ld * W) * sizeof(double), &g->P));
  } else {
    g->P = X->dv[0].P; /* unified: host memory every device reads */
  }
  for (int s = 0; s < X->K; s++) {
    if (!X->uni) OOC_TRY(ex_alloc(ex, (size_t)(n * X->b) * sizeof(double), &g->D[s]));
    OOC_TRY(ex_event_create(ex, &g->evin[s]));
    OOC_TRY(ex_event_create(ex, &g->evc[s]));
  }
  for (int e = 0; e < 2; e++) OOC_TRY(ex_event_create(ex, &g->evp[e]));
  OOC_TRY(ex_event_create(ex, &g->evj));
  OOC_TRY(ex_event_create(ex, &g->evpan));
  OOC_TRY(ex_event_create(ex, &g->evt));
  if (X->K > 0) OOC_TRY(ring_create(ex, X->K, X->ld, X->b, &g->ring));
  X->rings[d] = g->ring;
  return OOC_OK;
}

static ooc_status_t setup(gx_t *X) {
  ooc_ctx_t *ctx = X->ctx;
  ooc_exec_t *ex = X->dv[0].ex;
  int64_t n = X->n, b = X->b, W = X->W, m = X->a->B ? ts_cols(X->a->B).n : 0;
  for (int d = 1; d < X->nd; d++) { /* one schedule for all: the same memory model and queues */
    const ooc_exec_t *e = X->dv[d].ex;
    if (e->unified != ex->unified || e->nqueues != ex->nqueues)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "gj: devices %s and %s differ (unified %d and %d, %d and "
                      "%d queues); gj spreads over devices of one kind", ex->name, e->name,
                      ex->unified, e->unified, ex->nqueues, e->nqueues);
  }
  X->uni = ex->unified;
  X->npf = X->uni ? 1 : X->nd;
  X->ld = X->uni ? host_ld(n) : n;
  assign_queues(X);
  /* unified: one slot (as lu.c): the take of column q + 1 then waits for the products of q,
   * but on the CPU the copy competes with them for the cores anyway; n = 4096, tile 512, 4
   * steps ran 1.85-1.96 s with one slot, 1.92-2.18 s with two, and one saves n x b */
  X->K = X->uni ? (sweeps(n, W, m) ? 1 : 0) : GJ_X_SLOTS;
  X->ipiv = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  X->udiag = ooc_malloc(ctx, (size_t)W * sizeof(double));
  int64_t ntmax = X->cols.count + (X->a->B ? ts_cols(X->a->B).count : 0) + 1;
  X->t = ooc_malloc(ctx, (size_t)ntmax * sizeof(gj_target_t));
  if (!X->ipiv || !X->udiag || !X->t)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the Gauss-Jordan workspace "
                    "(%lld bytes)", (long long)gj_x_workspace_bytes(n, b, W, m));
  for (int d = 0; d < X->nd; d++) OOC_TRY(setup_dev(X, d));
  X->direct = !X->uni && X->a->direct && X->K > 0;
  if (X->direct) {
    OOC_TRY(xl_alloc(ctx, X->lend, X->nd * X->K, ts_rows(X->a->A).count));
    xpin_on(&X->pin, ex, X->a->A, X->a->B); /* lent tiles pinned as first lent */
  }
  return OOC_OK;
}

static ooc_status_t teardown(gx_t *X, ooc_status_t st) {
  /* every ring first: each waits for its executor, so nothing reads a P below after this */
  for (int d = 0; d < X->nd; d++) ring_destroy(X->dv[d].ring);
  /* tiles a failure left lent, then the pinner (the executors are idle: the rings waited) */
  xl_return(X->lend, EX_MAX_DEVICES * GJ_X_SLOTS, 0);
  xpin_off(&X->pin, &X->st->bytes_pinned, &X->st->pin_refused);
  xl_free(X->ctx, X->lend, EX_MAX_DEVICES * GJ_X_SLOTS);
  for (int d = X->nd - 1; d >= 0; d--) {
    gdev_t *g = &X->dv[d];
    ooc_exec_t *ex = g->ex;
    if (!ex) continue;
    ooc_status_t fin = ex_finish(ex);
    if (st == OOC_OK) st = fin;
    for (int s = 0; s < GJ_X_SLOTS; s++) {
      ex_event_destroy(ex, g->evin[s]);
      ex_event_destroy(ex, g->evc[s]);
      ex_free(ex, g->D[s]);
    }
    for (int e = 0; e < 2; e++) ex_event_destroy(ex, g->evp[e]);
    ex_event_destroy(ex, g->evj);
    ex_event_destroy(ex, g->evpan);
    ex_event_destroy(ex, g->evt);
    if (d < X->npf) ex_free(ex, g->P);
    ooc_free(X->ctx, g->loc);
    ex_host_free(ex, g->diag);
  }
  ooc_free(X->ctx, X->ipiv);
  ooc_free(X->ctx, X->udiag);
  ooc_free(X->ctx, X->t);
  return st;
}

ooc_status_t gj_x_run(ooc_ctx_t *ctx, const gj_args_t *a, gj_stats_t *stats, int64_t *info) {
  part_t rows = ts_rows(a->A);
  int64_t n = rows.n, b = rows.b;
  *info = 0;
  memset(stats, 0, sizeof *stats);
  if (n == 0) return OOC_OK;
  int nd = a->nx > 1 ? a->nx : 1;
  if (nd > EX_MAX_DEVICES || (nd > 1 && a->xs[0] != a->x))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gj: %d devices (at most %d), the first must be x", nd,
                    EX_MAX_DEVICES);
  gx_t X = {.ctx = ctx, .a = a, .nd = nd, .n = n, .b = b, .W = ts_stripe(n, b, a->stripe),
            .cols = ts_cols(a->A), .st = stats, .npf = 1};
  for (int d = 0; d < nd; d++) X.dv[d].ex = nd > 1 ? a->xs[d] : a->x;
  /* the panel's chunks: on a unified executor one getrf of the whole stripe by default (nothing
   * to overlap with the arrivals but the take's copies, which compete for the same cores; the
   * library's recursive getrf of the whole panel beat two chunks: n = 8192 in one step, 11.9 s
   * in chunks of 4096 against the old path's 11.4 s) */
  int64_t chunk = a->chunk > 0 ? a->chunk : a->x->unified ? X.W : GJ_X_CHUNK;
  X.wc = chunk >= X.W ? X.W : ooc_max64(b, chunk / b * b); /* whole tiles, or the stripe */
  X.nsteps = ooc_cdiv64(n, X.W);
  ooc_status_t st = setup(&X);
  if (st == OOC_OK && a->start_step > 0 && a->ipiv0)
    memcpy(X.ipiv, a->ipiv0, (size_t)n * sizeof(int64_t));
  for (int64_t step = a->start_step; st == OOC_OK && step < X.nsteps; step++) {
    X.step = step;
    X.k0 = step * X.W;
    X.w = ooc_min64(X.W, n - X.k0);
    X.kt0 = X.k0 / b;
    X.kt1 = ooc_cdiv64(X.k0 + X.w, b);
    st = run_step(&X, info);
    if (st == OOC_OK) st = need_cols(&X, X.cols.count - 1); /* (gj_args_t.need) */
    if (st != OOC_OK) break;
    stats->steps++;
    if (a->after_step) st = a->after_step(a->step_user, step, X.nsteps, X.ipiv);
    if (st == OOC_OK) st = ooc_tick(ctx, "eliminate", (step + 1.0) / X.nsteps);
  }
  if (st == OOC_OK && a->perm) gj_perm(n, X.ipiv, a->perm);
  return teardown(&X, st);
}
