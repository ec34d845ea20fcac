/* lu.c: LU with partial pivoting out of core, on the executor and the ring. See lu.h for the
 * algorithm, flops and I/O.
 *
 * Everything moves through the ring a tile column at a time (slots of n x b, ld n, rows at their
 * global offsets; the tile cache's copy threads gather and scatter a column as one batch): the
 * stripe in and out, the earlier tile columns (read only, never re-pivoted: the stripe's panel P
 * takes the earlier steps' row swaps group by group instead, lu.h), the right-hand sides. Each
 * streamed column costs the device one trsm and one gemm over all the rows it reaches. Queue QC
 * runs the arithmetic in order; QT (a second queue when the executor has one) the copies into
 * the slots' device twins, so that a column's transfer overlaps the products of the columns
 * before it; QG (a third one, else QT) the panel's chunks on their way back, so that they
 * overlap the next stripe's trip in (two copy engines, one each way). */
#include "solvers/lu.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/parloop.h"
#include "exec/ring.h"
#include "solvers/xdirect.h"
#include "solvers/xpanel.h"

enum { QC = 0, LU_NEV = 8, LU_NB = 16 };

/* A batch of the stripe's tile columns moved in place without the ring ("deferred moves"
 * below): their tiles lent, their DMAs queued, given back once ev has passed. */
typedef struct lu_batch {
  int64_t j0, j1; /* tile columns [j0, j1) of A */
  int forget;     /* returned as taken (the stripe's trip in), else cached (a chunk's trip out) */
  ex_event_t *ev;
  xlend_t *d;     /* j1 - j0 ranges (bcap of them) */
} lu_batch_t;

/* Tile columns a deferred batch holds at most: two chunks' (panel_first's last prefetch) and
 * never more than a stripe's (a stripe's trip in is the widest batch). */
static int64_t batch_cap(int64_t b, int64_t W, int64_t chunk) {
  return ooc_min64(2 * ooc_max64(1, chunk / b) + 2, ooc_cdiv64(W, b));
}

/* The most map entries a row map (LU_SWAPS_WRITER) may hold: n rows for each chunk of the
 * default width (lu_chunk_end; the columns of one chunk share their map). A caller's narrower
 * chunks may need more: their swaps then stay in the store (rowmap_make). */
static int64_t rowmap_rows_cap(int64_t n, int64_t b, int64_t W) {
  int64_t chunks = 0;
  for (int64_t c = 0; c < n; c = lu_chunk_end(n, b, W, 0, c)) chunks++;
  return n * chunks;
}

/* The bytes of a row map of that many entries: from and off (tile columns) and the entries,
 * with the three allocations' alignment. */
static int64_t rowmap_bytes(int64_t n, int64_t b, int64_t rows) {
  return 8 * (2 * ooc_cdiv64(n, b) + rows) + 3 * 256;
}

/* Small host arrays: diag (W), local pivots (W), the per-column done marks (tile columns), the
 * row sums of |A| (n), the lent tiles' pointers (LU_SLOTS x tile rows), the deferred
 * batches' (LU_NB x at most a stripe's tile columns x tile rows, with their xlend_t) and the
 * row map. */
static int64_t small_bytes(int64_t n, int64_t b, int64_t W) {
  int64_t nt = ooc_cdiv64(n, b), bcap = ooc_cdiv64(W, b);
  return 8 * (2 * W + nt + n + LU_SLOTS * nt) +
         LU_NB * bcap * ((int64_t)sizeof(xlend_t) + 8 * nt) +
         rowmap_bytes(n, b, rowmap_rows_cap(n, b, W)) + 4096;
}

/* The scans' device buffer (lu.h "Scans"): the row sums of |A| (n), max |A|, max |U|. */
static int64_t scan_bytes(int64_t n) { return 8 * (n + 2); }

/* The host executor's own allocations (its struct with the queues' operation rings, the buffer
 * headers, events): bounded, counted here so the planner leaves room for them. */
#define LU_EXEC_BYTES (96 * 1024)

int64_t lu_workspace_bytes(int64_t n, int64_t b, int64_t W, int64_t m) {
  (void)m;
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  /* the host executor is unified: one ring slot (n x b), no device twins */
  return 8 * n * W + scan_bytes(n) + ring_host_bytes(1, n, b) + small_bytes(n, b, W) +
         LU_EXEC_BYTES;
}

int64_t lu_host_bytes(int64_t n, int64_t b, int64_t W, int K) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  return ring_host_bytes(K, n, b) + small_bytes(n, b, W);
}

int64_t lu_device_stripe(ooc_exec_t *ex, int64_t n, int64_t b, int K, int64_t *need) {
  if (n <= 0) return 0;
  b = ooc_min64(b, n);
  int64_t ws = ex_getrf_ws(ex, n, ooc_min64(LU_CHUNK, n));
  if (ws < 0) ws = LU_DEV_MARGIN;
  ws += EX_LASWP_WS(n) * ex->nqueues; /* each queue's laswp tables (exec.h) */
  ws += EX_DEV_ROUND(scan_bytes(n));
  if (need) *need = ws + 8 * (K + 1) * n * b;
  int64_t room = ex->budget - ws - 8 * K * n * b;
  if (room < 8 * n * b) return 0;
  int64_t W = room / (8 * n);
  if (W >= n) return n;
  W = W / b * b;
  if (W < b) return 0;
  /* as even as whole tiles allow: a short last step would read every earlier column for a few
   * columns of work */
  return ts_stripe(n, b, ts_even_stripe(n, b, W));
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

int64_t lu_steps(int job, int64_t n, int64_t b, int64_t W, int64_t m, int64_t *nfactor) {
  if (n <= 0) {
    if (nfactor) *nfactor = 0;
    return 0;
  }
  W = ts_stripe(n, b, W > 0 ? W : n); /* as lu_run */
  int64_t nf = job == LU_SOLVE_FACTORED ? 0 : ooc_cdiv64(n, W);
  if (nfactor) *nfactor = nf;
  if (job == LU_FACTOR) return nf;
  if (job == LU_INVERT) m = n;
  /* solve(): RHS stripes of whole tile columns of B, W / b of them (at least one) */
  return nf + ooc_cdiv64(ooc_cdiv64(m, b), ooc_max64(1, W / b));
}

/* ---- state ------------------------------------------------------------------------------ */

/* The items of a ring pass are tile columns; each moves a range of its tile rows as one n x b
 * slot (ld n, rows at their global offsets), gathered or scattered by the tile cache's copy
 * threads in one batch (ts_*_tiles):
 *   ALL    tile columns [c_lo, c_hi), every tile row (the stripe, the right-hand sides);
 *   LOWER  tile columns [c_lo, c_hi), rows from the diagonal down (L: one trsm + one gemm);
 *   UPPER  tile columns c_hi-1 down to c_lo, rows from the top to the diagonal (U: the same);
 *   FIX    tile columns [c_lo, c_hi), rows from done[tj] / b down (the last swaps). */
enum { P_ALL, P_LOWER, P_UPPER, P_FIX };


typedef struct lu {
  ooc_ctx_t *ctx;
  const lu_args_t *a;
  ooc_exec_t *ex;
  ring_t *ring;
  int K;                  /* ring slots: 1 on a unified executor (the slot is its device memory,
                             so the gather of column q+1 waits for the work on q, as in chol:
                             a column's gather is ~1/100 of its gemm on a CPU, and a second
                             n x b slot would narrow the stripe under a tight --host-mem),
                             else nslots or LU_SLOTS */
  int uni;                /* ex->unified: operations read the slots directly, no twins */
  int QT;                 /* the transfer queue (to the device) */
  int QG;                 /* the panel's chunks' gets (chunk_out): a third queue, else QT */
  tstore_t *A, *B;
  part_t p;               /* rows = cols partition of A (and B's rows) */
  int64_t n, b, W, nt;
  double *P;              /* device n x W, ld n, global rows */
  double *D[LU_SLOTS];    /* device twins of the ring slots, n x b, ld n (NULL when unified) */
  ex_event_t *evput[LU_SLOTS], *ev;
  int direct;             /* items may move in place (off a unified executor) */
  xpin_t pin;             /* A's and B's caches pin what they lend (xdirect.h) */
  xlend_t lend[LU_SLOTS]; /* per ring slot: its item's lent tiles (lu.h "Direct moves": slot s's
                             item's tiles [t0, t1) of tile column tj of S; none: the slot) */
  double *sc;             /* device: the scans' row sums (n), max |A|, max |U| (lu.h "Scans") */
  int64_t *ipiv;          /* the caller's, global 0-based */
  int64_t *loc;           /* getrf's local pivots (W) */
  double *diag;           /* U's diagonal of the stripe (W) */
  double *rowsum;         /* sum_j |a_ij| (n), for ||A||_inf: the device's (sc) once fetched */
  int64_t *done;          /* per tile column: the end of its step (its rows are in the order of
                             the swaps ipiv[0, done)) */
  lu_stats_t *st;
  double amax, umax;      /* for the growth: a resumed run's, then the device's once fetched */
  /* the pass */
  int kind;
  tstore_t *S;            /* the store the pass moves (A or B) */
  int64_t c_lo, c_hi;
  int64_t applied;        /* left: P holds the swaps ipiv[0, applied) */
  int64_t pc0;            /* column of the store at P's column 0 (stripe k0, RHS r0) */
  int64_t k0, w;          /* factor step */
  int64_t mw;             /* solve: RHS columns in P */
  int64_t zero_col;       /* SOLVE_FACTORED: first zero on U's diagonal (-1 none, -2 not looked) */
  int invert;
  int64_t chunk;          /* the panel's chunk width (whole tiles, at least one) */
  lu_batch_t bt[LU_NB];   /* deferred moves in flight, a FIFO: bt[(b0 + i) % LU_NB], i < nb */
  int b0, nb;
  int64_t bcap;           /* tile columns a batch holds at most (batch_cap) */
  ex_event_t *evp[2];     /* chunk c's getrf done (alternating) */
  ex_event_t *evr[LU_NEV];/* panel_first: chunk region d read for the last time (d < LU_NEV - 1;
                             the last one: every region from LU_NEV - 1 on) */
  int loaded;             /* P already holds the next step's stripe (panel's prefetch) */
  int64_t needed;         /* lu_args_t.need has been asked for A's columns [0, needed) */
  int outq;               /* the queue of an out pass's gets: QC, or QG for the panel's chunks
                             (final once their getrf has run, which the host has synced) */
  double logdet;
  int sign;
  /* resumable runs (lu.h "Steps and safe points") */
  int64_t nf, nsteps;     /* the factor's steps; all steps (factor + RHS stripes) */
  int64_t start;          /* the first step this call runs */
  int no_prefetch;        /* a checkpoint is due after this step: nothing of the next is taken */
  int fold;               /* this left pass writes its columns back with later swaps (left_fold) */
  int back[LU_SLOTS];     /* slot s's column, folded in the slot (not lent), goes back at retire */
} lu_t;

static int64_t cstart(const lu_t *L, int64_t j) { return part_start(L->p, j); }
static int64_t clen(const lu_t *L, int64_t j) { return part_len(L->p, j); }
static int64_t ccols(const lu_t *L, int64_t j) { return part_len(ts_cols(L->S), j); }
static int64_t cstart_s(const lu_t *L, int64_t j) { return part_start(ts_cols(L->S), j); }

/* Item q's tile column. */
static int64_t item_col(const lu_t *L, int64_t q) {
  return L->kind == P_UPPER ? L->c_hi - 1 - q : L->c_lo + q;
}

/* The tile rows [*t0, *t1) item column tj moves, and their element rows [*r0, *r1). */
static void item_rows(const lu_t *L, int64_t tj, int64_t *t0, int64_t *t1, int64_t *r0,
                      int64_t *r1) {
  *t0 = L->kind == P_LOWER ? tj : L->kind == P_FIX ? L->done[tj] / L->b : 0;
  *t1 = L->kind == P_UPPER ? tj + 1 : L->nt;
  *r0 = cstart(L, *t0);
  *r1 = *t1 > *t0 ? cstart(L, *t1 - 1) + clen(L, *t1 - 1) : *r0;
}

static ooc_status_t run_pass(lu_t *L, int kind, tstore_t *S, int64_t c_lo, int64_t c_hi,
                             const ring_ops_t *ops) {
  L->kind = kind;
  L->S = S;
  L->c_lo = c_lo;
  L->c_hi = c_hi;
  ring_stats_t before = L->ring->stats;
  ooc_status_t st = ring_run(L->ring, ooc_max64(0, c_hi - c_lo), ops, L);
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

/* QC waits for the copies q has queued. */
static ooc_status_t join_q(lu_t *L, int q) {
  if (q == QC) return OOC_OK;
  OOC_TRY(ex_record(L->ex, q, L->evput[0]));
  return ex_wait(L->ex, QC, L->evput[0]);
}

/* QC waits for the puts QT has queued (the stripe's columns in P). */
static ooc_status_t join_qt(lu_t *L) { return join_q(L, L->QT); }

/* Where row r0 of item column tj of the pass's store sits in P. */
static double *in_panel(lu_t *L, int64_t r0, int64_t tj) {
  return L->P + r0 + (cstart_s(L, tj) - L->pc0) * L->n;
}

/* ---- the scans of |A| and |U| on the executor (lu.h "Scans") ------------------------------- */

/* Rows [r0, r1) of item column tj, just put into P (A's columns as loaded: the stripe, in A's
 * row order) or about to leave it (the factored stripe: U's part, rows <= the column), scanned
 * on queue q behind the put or ahead of the get. */
static ooc_status_t scan_item(lu_t *L, int q, int64_t tj, int64_t r0, int64_t r1, int upper) {
  if (L->S != L->A || L->kind != P_ALL) return OOC_OK;
  int64_t n = L->n;
  return ex_absscan(L->ex, q, r1 - r0, ccols(L, tj), in_panel(L, r0, tj), n,
                    upper ? cstart_s(L, tj) - r0 : -1, L->sc + n + (upper ? 1 : 0),
                    upper ? NULL : L->sc + r0);
}

/* The scans so far to the host: rowsum, and amax / umax raised to the device's maxima (a
 * resumed run's start from its state; maxima are idempotent, so fetching twice is harmless).
 * Every queue is joined and drained: the point is quiet. */
static ooc_status_t scan_fetch(lu_t *L) {
  double mx[2] = {0, 0};
  OOC_TRY(join_qt(L)); /* the scans beside the puts, and beside the gets: */
  if (L->QG != L->QT) OOC_TRY(join_q(L, L->QG));
  OOC_TRY(ex_get(L->ex, QC, L->n, 1, L->sc, L->n, L->rowsum, L->n));
  OOC_TRY(ex_get(L->ex, QC, 2, 1, L->sc + L->n, 2, mx, 2));
  OOC_TRY(drain(L));
  L->amax = fmax(L->amax, mx[0]);
  L->umax = fmax(L->umax, mx[1]);
  return OOC_OK;
}

/* ---- direct moves (lu.h): an item's tiles lent by the tile cache, moved by DMA ------------- */

/* Slot s's item (tile column tj of the pass's store) lent in place when it can be: read (every
 * tile cached), write (buffers made as a put makes them), or for update (the final swaps: every
 * tile cached, swapped on the device and moved back in place); *ok = 0: it goes through the
 * slot. Never for an inverse's identity (made in the slot). */
static ooc_status_t lend_item(lu_t *L, int s, int64_t tj, int write, int *ok) {
  xlend_t *d = &L->lend[s];
  int64_t t0, t1, r0, r1, bytes = 0;
  int upd = L->kind == P_FIX || (L->kind == P_LOWER && L->fold && L->done[tj] < L->k0);
  /* (a column left_fold moves back) */
  int mode = upd ? TS_LEND_UPDATE : write ? TS_LEND_WRITE : TS_LEND_READ;
  d->t0 = d->t1 = 0;
  *ok = 0;
  if (!L->direct || (L->invert && L->S == L->B && !write)) return OOC_OK;
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  OOC_TRY(xl_lend(d, 1, L->S, tj, &t0, &t1, mode, ok, &bytes));
  L->st->bytes_direct += upd ? 2 * bytes : bytes; /* an update moves them both ways */
  return OOC_OK;
}

static int is_lent(const lu_t *L, int s) { return xl_lent(&L->lend[s]); }

/* Slot s's lent tiles to (get = 0) or from (get = 1) the device column whose row 0 is at dev
 * (ld n), tile by tile, on queue q. */
static ooc_status_t move_lent(lu_t *L, int s, int q, double *dev, int get) {
  return xl_move(&L->lend[s], 1, L->ex, q, dev, L->n, get);
}

/* The ring retired slot s's item: its lent tiles back to the cache (forget: as taken). */
static void give_back(lu_t *L, int s, int forget) { xl_return(&L->lend[s], 1, forget); }

/* The ring's retire of a read pass (L's columns, kept cached; a folded one put back from the
 * slot when its tiles were not lent: left_fold) and of an in pass (taken). */
static ooc_status_t keep_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int s = (int)(q % L->K);
  if (L->back[s]) {
    int64_t t0, t1, r0, r1, j = item_col(L, q);
    item_rows(L, j, &t0, &t1, &r0, &r1);
    L->back[s] = 0;
    return ts_put_tiles(L->A, t0, t1, j, j + 1, slot + r0, ld);
  }
  give_back(L, s, 0);
  return OOC_OK;
}

/* The retire of an in pass: its lent tiles back to the cache as taken. */
static ooc_status_t in_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  (void)slot, (void)ld;
  give_back(L, (int)(q % L->K), 1);
  return OOC_OK;
}

/* Rows [r0, r1) of slot s (ld n) where QC reads them: its device twin after a put on QT that QC
 * waits for, or the slot itself on a unified executor. */
static ooc_status_t to_twin(lu_t *L, int s, const double *slot, int64_t r0, int64_t r1,
                            int64_t bj, const double **dev) {
  if (L->uni) {
    *dev = slot;
    return OOC_OK;
  }
  if (is_lent(L, s))
    OOC_TRY(move_lent(L, s, L->QT, L->D[s], 0));
  else
    OOC_TRY(ex_put(L->ex, L->QT, r1 - r0, bj, slot + r0, L->n, L->D[s] + r0, L->n));
  if (L->QT != QC) {
    OOC_TRY(ex_record(L->ex, L->QT, L->evput[s]));
    OOC_TRY(ex_wait(L->ex, QC, L->evput[s]));
  }
  *dev = L->D[s];
  return OOC_OK;
}

/* ---- deferred moves: the stripe's columns in and out without waiting for them --------------
 * Off a unified executor, with direct moves, the stripe's trip in (the first step's chunks, the
 * next stripe's prefetch) and the panel's chunks' trip out are queued as DMAs from and to the
 * lent tiles, a batch of tile columns at a time, and the host goes on at once: it gives the
 * tiles back when a later need finds the batch's event passed (or waits for it then). Through
 * the ring the host waited for every column's copy before it queued the next arithmetic, which
 * left the device idle whenever the wait outlasted the work already queued (the first stripe's
 * chunks: 0.38 s of the 0.41 s of gaps in the CLI's factor at n = 40000 on an H200; with the
 * batches that factor went from 1.63, 1.62 to 1.52, 1.54 s, docs/PERFORMANCE.md). A batch
 * that cannot be lent whole (a tile not cached, the cache's lend cap) goes through the ring as
 * before. The device's order: QC waits for QT's puts (join_qt), QG's gets follow the host's sync
 * of the chunk's getrf, and a prefetch's puts into a chunk's region wait for the gets out of it
 * (wait_outs). */

/* The oldest batch back to the store once its moves have run (wait: sync first; else only if
 * they have). *back: one was given back. */
static ooc_status_t batch_reap(lu_t *L, int wait, int *back) {
  *back = 0;
  if (L->nb == 0) return OOC_OK;
  lu_batch_t *bt = &L->bt[L->b0];
  if (!wait && !ex_query(L->ex, bt->ev)) return OOC_OK;
  double t0 = ooc_now();
  OOC_TRY(ex_sync(L->ex, bt->ev));
  double t1 = ooc_now();
  L->st->t_wait += t1 - t0;
  if (t1 - t0 > 2e-4) ex_host_span(L->ex, "lu batch wait", t0, t1, 0); /* (the trace's host row) */
  xl_return(bt->d, (int)(bt->j1 - bt->j0), bt->forget);
  L->b0 = (L->b0 + 1) % LU_NB;
  L->nb--;
  *back = 1;
  return OOC_OK;
}

/* Batches back, oldest first, until none holds a tile column of [j0, j1) (j1 = INT64_MAX,
 * j0 = 0: every one). */
static ooc_status_t batch_free_cols(lu_t *L, int64_t j0, int64_t j1) {
  for (;;) {
    int hit = 0, back;
    for (int i = 0; i < L->nb && !hit; i++) {
      const lu_batch_t *bt = &L->bt[(L->b0 + i) % LU_NB];
      hit = bt->j0 < j1 && j0 < bt->j1;
    }
    if (!hit) return OOC_OK;
    OOC_TRY(batch_reap(L, 1, &back)); /* the oldest: batches go back in order */
  }
}

static ooc_status_t batch_drain(lu_t *L) { return batch_free_cols(L, 0, INT64_MAX); }

/* Tile columns [j0, j1) of A, all rows, lent (mode) into the next batch: *bt NULL when they go
 * through the ring instead (not all lendable, too many, no direct moves). Finished batches go
 * back first, and the oldest waits when all LU_NB are in flight. */
static ooc_status_t batch_lend(lu_t *L, int64_t j0, int64_t j1, int mode, lu_batch_t **out) {
  *out = NULL;
  if (!L->direct || j1 - j0 > L->bcap || j1 <= j0) return OOC_OK;
  int back = 1;
  while (back) OOC_TRY(batch_reap(L, 0, &back));
  OOC_TRY(batch_free_cols(L, j0, j1)); /* (their trip in, done long before their trip out) */
  if (L->nb == LU_NB) OOC_TRY(batch_reap(L, 1, &back));
  lu_batch_t *bt = &L->bt[(L->b0 + L->nb) % LU_NB];
  for (int64_t tj = j0; tj < j1; tj++) {
    int64_t t0 = 0, t1 = L->nt, bytes = 0;
    int ok = 0;
    ooc_status_t st = xl_lend(&bt->d[tj - j0], 1, L->A, tj, &t0, &t1, mode, &ok, &bytes);
    if (st != OOC_OK || !ok) { /* all or nothing: the ones lent go back as they were */
      xl_return(bt->d, (int)(tj - j0), 0);
      return st;
    }
    L->st->bytes_direct += bytes;
    L->st->bytes_streamed += bytes;
  }
  bt->j0 = j0;
  bt->j1 = j1;
  *out = bt;
  return OOC_OK;
}

/* The batch's moves are queued on q: it joins the FIFO. */
static ooc_status_t batch_push(lu_t *L, lu_batch_t *bt, int q, int forget) {
  bt->forget = forget;
  L->nb++;
  return ex_record(L->ex, q, bt->ev);
}

/* ---- columns into P and back (the stripe, the fixes, the right-hand sides) ---------------- */

static ooc_status_t in_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = item_col(L, q), t0, t1, r0, r1, bj = ccols(L, tj);
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  if (L->invert && L->S == L->B) { /* the identity's columns */
    int64_t c0 = cstart_s(L, tj);
    for (int64_t c = 0; c < bj; c++) {
      memset(slot + c * ld, 0, (size_t)L->n * sizeof(double));
      slot[c0 + c + c * ld] = 1.0;
    }
    return OOC_OK;
  }
  int s = (int)(q % L->K), lent;
  OOC_TRY(lend_item(L, s, tj, 0, &lent));
  if (!lent) OOC_TRY(ts_take_tiles(L->S, t0, t1, tj, tj + 1, slot + r0, ld));
  L->st->bytes_streamed += 8 * (r1 - r0) * bj;
  return OOC_OK;
}

static ooc_status_t in_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  int64_t tj = item_col(L, q), t0, t1, r0, r1;
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  if (is_lent(L, s))
    OOC_TRY(move_lent(L, s, L->QT, in_panel(L, 0, tj), 0));
  else
    OOC_TRY(ex_put(L->ex, L->QT, r1 - r0, ccols(L, tj), slot + r0, ld, in_panel(L, r0, tj),
                   L->n));
  OOC_TRY(scan_item(L, L->QT, tj, r0, r1, 0)); /* A as loaded: max |a|, the row sums */
  *last = L->QT;
  return OOC_OK;
}

static ooc_status_t out_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  int64_t tj = item_col(L, q), t0, t1, r0, r1;
  int lent;
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  OOC_TRY(scan_item(L, L->outq, tj, r0, r1, 1)); /* the factored stripe: max |u| */
  OOC_TRY(lend_item(L, s, tj, 1, &lent));
  if (lent)
    OOC_TRY(move_lent(L, s, L->outq, in_panel(L, 0, tj), 1));
  else
    OOC_TRY(ex_get(L->ex, L->outq, r1 - r0, ccols(L, tj), in_panel(L, r0, tj), L->n, slot + r0,
                   ld));
  *last = L->outq;
  return OOC_OK;
}

static ooc_status_t out_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = item_col(L, q), t0, t1, r0, r1, bj = ccols(L, tj);
  int s = (int)(q % L->K);
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  if (is_lent(L, s))
    give_back(L, s, 0);
  else
    OOC_TRY(ts_put_tiles(L->S, t0, t1, tj, tj + 1, slot + r0, ld));
  L->st->bytes_streamed += 8 * (r1 - r0) * bj;
  return OOC_OK;
}

/* The stripe's tile columns [j0, j1) of A into P (pc0: the store's column at P's column 0) on
 * QT: deferred when they can be lent, else through the ring (the host waits). */
static ooc_status_t in_cols(lu_t *L, int64_t j0, int64_t j1) {
  lu_batch_t *bt;
  /* the caller's columns up to the end of these, first (lu_args_t.need) */
  int64_t c = j1 < L->nt ? cstart(L, j1) : L->n;
  if (L->a->need && c > L->needed) {
    double t0 = ooc_now();
    OOC_TRY(L->a->need(L->a->need_user, c));
    L->needed = c;
    L->st->t_need += ooc_now() - t0;
  }
  L->S = L->A;
  L->kind = P_ALL;
  OOC_TRY(batch_lend(L, j0, j1, TS_LEND_READ, &bt));
  if (!bt) {
    ring_ops_t in = {in_take, in_work, in_put};
    return run_pass(L, P_ALL, L->A, j0, j1, &in);
  }
  for (int64_t tj = j0; tj < j1; tj++) {
    OOC_TRY(xl_move(&bt->d[tj - j0], 1, L->ex, L->QT, in_panel(L, 0, tj), L->n, 0));
    OOC_TRY(scan_item(L, L->QT, tj, 0, L->n, 0)); /* A as loaded: max |a|, the row sums */
  }
  return batch_push(L, bt, L->QT, 1);
}

/* The factored stripe's tile columns [j0, j1) out of P (pc0 = k0) to the store on QG, deferred
 * when they can be lent (the caller has synced their getrf: nothing writes them after it). */
static ooc_status_t out_cols(lu_t *L, int64_t j0, int64_t j1) {
  lu_batch_t *bt;
  L->S = L->A;
  L->kind = P_ALL;
  OOC_TRY(batch_lend(L, j0, j1, TS_LEND_WRITE, &bt));
  if (!bt) {
    ring_ops_t out = {NULL, out_work, out_put};
    L->outq = L->QG;
    ooc_status_t st = run_pass(L, P_ALL, L->A, j0, j1, &out);
    L->outq = QC;
    return st;
  }
  for (int64_t tj = j0; tj < j1; tj++) {
    OOC_TRY(scan_item(L, L->QG, tj, 0, L->n, 1)); /* the factored stripe: max |u| */
    OOC_TRY(xl_move(&bt->d[tj - j0], 1, L->ex, L->QG, in_panel(L, 0, tj), L->n, 1));
  }
  return batch_push(L, bt, L->QG, 0);
}

/* Queue q waits for the gets out of tile columns [j0, j1) queued so far (QG runs in order: the
 * newest batch that holds one of them covers the rest). */
static ooc_status_t wait_outs(lu_t *L, int q, int64_t j0, int64_t j1) {
  for (int i = L->nb - 1; i >= 0; i--) {
    const lu_batch_t *bt = &L->bt[(L->b0 + i) % LU_NB];
    if (!bt->forget && bt->j0 < j1 && j0 < bt->j1) return ex_wait(L->ex, q, bt->ev);
  }
  return OOC_OK;
}

/* ---- factor: the earlier tile columns stream through, read only --------------------------- */

/* Tile column j from its diagonal block down (LOWER) or from the top to its diagonal block
 * (UPPER), read (the factors stay cached for the next step or RHS stripe). */
static ooc_status_t col_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t j = item_col(L, q), t0, t1, r0, r1;
  int lent;
  item_rows(L, j, &t0, &t1, &r0, &r1);
  OOC_TRY(lend_item(L, (int)(q % L->K), j, 0, &lent));
  if (!lent) OOC_TRY(ts_read_tiles(L->A, t0, t1, j, j + 1, slot + r0, ld));
  L->st->bytes_streamed += 8 * (r1 - r0) * clen(L, j);
  return OOC_OK;
}

/* ex_laswp of ipiv[k1, k2) on ncols columns of A: nothing without pivoting (ipiv is the
 * identity there) or when the range is empty. Every row interchange of the method goes here. */
static ooc_status_t swaps(lu_t *L, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                          int64_t k2, const int64_t *ipiv) {
  if (L->a->nopiv || k1 >= k2) return OOC_OK;
  return ex_laswp(L->ex, q, ncols, A, lda, k1, k2, ipiv);
}

/* The last step's left pass has each earlier column on the device (rows [c0, n) in its twin),
 * and the column still lacks the later swaps ipiv[done[j], n), which the final pass moves it
 * to the device and back for (fix_columns). The swaps ipiv[done[j], k0) are known by then:
 * applied to the twin after the column's gemm and moved back (on QG, idle in the left pass),
 * they leave the final pass only ipiv[k0, n), rows [k0, n) instead of [done[j], n) (at
 * n = 40000 with W = 20000: 1.28 GB less each way of the 5.8 GB the final swaps move).
 * Only where the final pass follows this step with nothing between (no checkpoint after it:
 * resume() derives done[] from the chunks), off a unified executor (there the columns are read
 * in place), with pivoting, and while nothing of A has gone to scratch: the columns moved back
 * are written again, which beyond host memory is disk traffic (lu_spill_model counts the
 * unified path's). A row swap is exact, so the factors' bits are the same. */
static int left_fold_due(const lu_t *L) {
  return !L->uni && !L->a->nopiv && L->a->job != LU_SOLVE &&
         !(L->a->job == LU_FACTOR && L->a->swaps == LU_SWAPS_NONE) &&
         L->k0 + L->w >= L->n &&
         !L->no_prefetch && ts_stats(L->A)->bytes_spilled == 0;
}

static ooc_status_t left_fold(lu_t *L, int s, int64_t j, double *slot, int *last) {
  int64_t t0, t1, r0, r1, bj = clen(L, j);
  if (!L->fold || L->done[j] >= L->k0) return OOC_OK;
  item_rows(L, j, &t0, &t1, &r0, &r1);
  OOC_TRY(swaps(L, QC, bj, L->D[s], L->n, L->done[j], L->k0, L->ipiv));
  OOC_TRY(ex_record(L->ex, QC, L->evput[s]));
  OOC_TRY(ex_wait(L->ex, L->QG, L->evput[s]));
  if (is_lent(L, s)) {
    OOC_TRY(move_lent(L, s, L->QG, L->D[s], 1));
  } else {
    OOC_TRY(ex_get(L->ex, L->QG, r1 - r0, bj, L->D[s] + r0, L->n, slot + r0, L->n));
    L->back[s] = 1;
  }
  L->st->bytes_streamed += 8 * (r1 - r0) * bj; /* (as out_put counts a column back) */
  L->done[j] = L->k0;
  *last = L->QG;
  return OOC_OK;
}

/* P := L_j's update by tile column j of L (rows [c0, n), stored in the row order of
 * ipiv[0, done[j]): P is brought to that order first, group by group (lu.h), so the column
 * needs no swaps of its own): one trsm on its diagonal block, one gemm for all rows below. */
static ooc_status_t left_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)ld;
  int64_t j = item_col(L, q), bj = clen(L, j), c0 = cstart(L, j), n = L->n;
  int64_t below = n - c0 - bj;
  const double *D;
  OOC_TRY(to_twin(L, s, slot, c0, n, bj, &D));
  if (L->applied < L->done[j]) {
    OOC_TRY(swaps(L, QC, L->w, L->P, n, L->applied, L->done[j], L->ipiv));
    L->applied = L->done[j];
  }
  OOC_TRY(ex_trsm(L->ex, QC, 'L', 'L', 'N', 'U', bj, L->w, 1.0, D + c0, n, L->P + c0, n));
  if (below > 0)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', below, L->w, bj, -1.0, D + c0 + bj, n, L->P + c0, n,
                    1.0, L->P + c0 + bj, n));
  *last = QC;
  return left_fold(L, s, j, slot, last);
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

/* Tile columns [0, nfix) lack the swaps of the steps after theirs (ipiv[done[j], n), rows
 * >= done[j]).
 * - Off a unified executor the device takes them: each column's rows [done[j], n) go to a ring
 *   twin on QT (its tiles lent for update and moved by DMA, else through the slot), ex_laswp
 *   there on QC, and back on QG, so that a column's trip back, the next one's laswp and the one
 *   after's trip in overlap (two copy engines). At n = 40000 on an H200 the pass takes 0.14 s
 *   (0.20 s with the laswp and the trip back on one queue). Why not the host: in place
 *   (ts_swap_rows) the swaps took 0.27-0.32 s of a 1.75 s factor, after the device's last
 *   operation; on the pool during the last panel (tried in 2026-11-29's e5ce6d6) the rounds
 *   took 0.5 s and 0.28-0.38 s were still left after it. Our reckoning, not measured: a swap
 *   uses 8 bytes of each of two cache lines per column, some 70 GB of line traffic for the
 *   ~6 GB those columns hold, where the device's trip is those ~6 GB each way by DMA.
 * - On a unified executor (the host's cores are the device): in place in the tile cache where a
 *   column's tiles all lie there (each row crosses host memory once), else taken into the
 *   ring's slot, swapped there by the executor's laswp and put back.
 * A row swap is exact: the bits are the same either way. */
static ooc_status_t fix_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  int64_t tj = item_col(L, q);
  if (L->done[tj] >= L->n) return OOC_OK; /* none to take (the last chunk's) */
  /* the last chunks may still be on their way out (deferred): this column waits for its own
   * batch only, so the earlier columns' fixes overlap those gets */
  OOC_TRY(batch_free_cols(L, tj, tj + 1));
  return in_take(u, q, slot, ld);
}

static ooc_status_t fix_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  int64_t tj = item_col(L, q), t0, t1, r0, r1, bj = clen(L, tj);
  const double *in;
  (void)ld;
  *last = QC;
  if (L->done[tj] >= L->n) return OOC_OK;
  item_rows(L, tj, &t0, &t1, &r0, &r1);
  OOC_TRY(to_twin(L, s, slot, r0, r1, bj, &in));
  double *D = L->uni ? slot : L->D[s]; /* where to_twin put it (in), swapped in place */
  OOC_TRY(swaps(L, QC, bj, D, L->n, L->done[tj], L->n, L->ipiv));
  if (L->uni) return OOC_OK;
  if (L->QG != QC) { /* back on QG, beside the next column's laswp on QC */
    OOC_TRY(ex_record(L->ex, QC, L->evput[s]));
    OOC_TRY(ex_wait(L->ex, L->QG, L->evput[s]));
  }
  *last = L->QG;
  if (is_lent(L, s)) return move_lent(L, s, L->QG, L->D[s], 1);
  return ex_get(L->ex, L->QG, r1 - r0, bj, D + r0, L->n, slot + r0, L->n);
}

static ooc_status_t fix_put(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  if (L->done[item_col(L, q)] < L->n) OOC_TRY(out_put(u, q, slot, ld));
  L->done[item_col(L, q)] = L->n;
  return OOC_OK;
}

/* The final swaps as a row map for the writer (LU_SWAPS_WRITER) instead of a pass: tile column
 * j's rows from done[j] on are stored in the order of ipiv[0, done[j]) and the result's are in
 * that of ipiv[0, n), so its result row i >= done[j] is the stored row the swaps ipiv[done[j],
 * n) bring to i: those swaps applied to the row numbers. One map per distinct done[] (the
 * columns of a chunk share one). 0 when it would take more than rowmap_rows_cap (a caller's
 * narrow chunks) or the memory is not there: the pass runs then. */
static int rowmap_make(lu_t *L, ts_rowmap_t *m) {
  int64_t n = L->n, nt = L->nt, total = 0;
  *m = (ts_rowmap_t){.nt = nt};
  m->from = ooc_malloc(L->ctx, (size_t)nt * sizeof(int64_t));
  m->off = ooc_malloc(L->ctx, (size_t)nt * sizeof(int64_t));
  if (!m->from || !m->off) goto fail;
  for (int64_t tj = 0; tj < nt; tj++) { /* a map per distinct done[] (the earlier ones' ends) */
    int64_t d = ooc_min64(L->done[tj], n), k = 0;
    m->from[tj] = d;
    m->off[tj] = 0;
    if (d >= n) continue;
    for (k = 0; k < tj && (m->from[k] != d); k++) {}
    if (k < tj) {
      m->off[tj] = m->off[k];
      continue;
    }
    m->off[tj] = total;
    total += n - d;
  }
  if (total > rowmap_rows_cap(n, L->b, L->W)) goto fail;
  m->rows = ooc_malloc(L->ctx, (size_t)ooc_max64(total, 1) * sizeof(int64_t));
  if (!m->rows) goto fail;
  m->nrows = total;
  for (int64_t tj = 0, made = 0; tj < nt; tj++) {
    int64_t d = m->from[tj];
    if (d >= n || m->off[tj] < made) continue; /* none, or an earlier column's map */
    made += n - d;
    int64_t *v = m->rows + m->off[tj];
    for (int64_t i = d; i < n; i++) v[i - d] = i;
    for (int64_t k = d; k < n; k++) {
      int64_t p = L->ipiv[k], t = v[k - d];
      v[k - d] = v[p - d];
      v[p - d] = t;
    }
  }
  for (int64_t tj = 0; tj < nt; tj++) L->st->rows_mapped += (n - m->from[tj]) * clen(L, tj);
  return 1;
fail:
  ts_rowmap_free(L->ctx, m);
  return 0;
}

static ooc_status_t fix_columns(lu_t *L, int64_t nfix) {
  ring_ops_t fix = {fix_take, fix_work, fix_put};
  for (int64_t j = 0; L->uni && j < nfix; j++) {
    int in_place = 0;
    if (L->done[j] >= L->n) continue;
    OOC_TRY(ts_swap_rows(L->A, L->done[j] / L->b, L->nt, j, L->done[j], L->n, L->ipiv,
                         &in_place));
    if (!in_place) /* a tile of it is spilled: this column and the rest through the ring */
      return run_pass(L, P_FIX, L->A, j, nfix, &fix);
    L->done[j] = L->n;
  }
  return L->uni ? OOC_OK : run_pass(L, P_FIX, L->A, 0, nfix, &fix);
}

/* Chunk [a, a + wc) of the stripe, factored (getrf of rows [a, n)): its pivots into ipiv, its
 * diagonal checked (the eps test, LAPACK's info), logdet and sign. The caller has synced. */
static ooc_status_t chunk_pivots(lu_t *L, int64_t a, int64_t wc, int64_t bad, int64_t *info) {
  for (int64_t i = 0; i < wc; i++) L->ipiv[a + i] = a + (L->a->nopiv ? i : L->loc[i]);
  for (int64_t i = 0; i < wc; i++) {
    double u = L->diag[i];
    int64_t col = a + i;
    if (bad && i == bad - 1) return singular(L, col, 1, u, info);
    double cn = L->a->colnorm ? L->a->colnorm[col] : 0;
    if (!(fabs(u) > DBL_EPSILON * cn)) return singular(L, col, u == 0, u, info);
    if (L->a->nopiv && cn > 0) { /* lu.h: counted, not fatal */
      L->st->tiny += fabs(u) < sqrt(DBL_EPSILON) * cn;
      L->st->min_pivot = fmin(L->st->min_pivot, fabs(u) / cn);
    }
    L->logdet += log(fabs(u));
    if (u < 0) L->sign = -L->sign;
    if (L->ipiv[col] != col) L->sign = -L->sign;
  }
  return OOC_OK;
}

/* The panel call (xpanel.h): getrf of chunk [a, a + wc) of the stripe, rows [a, n), on QC. */
static ooc_status_t panel_getrf(lu_t *L, int64_t a, int64_t wc, int64_t *bad, ex_event_t *evp) {
  return xpanel_getrf(L->ex, QC, L->P, L->n, L->n, L->k0, a, wc, L->a->nopiv ? NULL : L->loc,
                      bad, L->diag, evp);
}

/* Chunk [a, a1) of the stripe back to the store through the ring, gets on QG (nothing writes it
 * after its getrf, which the host has synced; later work only reads it), so that the host's
 * scatter overlaps the device's work on the next chunk, and the gets overlap the puts of the
 * next stripe's prefetch on QT: at n = 40000 on an H200 the one copy queue carrying both
 * made the step boundary 0.15 s of device idle time. Its columns take the later chunks' and
 * steps' swaps lazily (done[] = a1). */
static ooc_status_t chunk_out(lu_t *L, int64_t a, int64_t a1) {
  int64_t b = L->b;
  double t1 = ooc_now();
  ooc_status_t st = out_cols(L, a / b, ooc_cdiv64(a1, b));
  L->st->t_out += ooc_now() - t1;
  OOC_TRY(st);
  for (int64_t tj = a / b; tj < ooc_cdiv64(a1, b); tj++) L->done[tj] = a1;
  return OOC_OK;
}

/* Chunk d = [d0, d1) of the stripe (factored) applied to chunk [a, a1) (left-looking inside the
 * stripe): xpanel_update on QC. */
static ooc_status_t chunk_update(lu_t *L, int64_t d0, int64_t d1, int64_t a, int64_t a1) {
  return xpanel_update(L->ex, QC, L->P, L->n, L->n, L->k0, L->a->nopiv ? NULL : L->ipiv, d0, d1,
                       a, a1);
}

/* P's columns [x0, x1) (a chunk's region, free) receive the next step's stripe's columns there,
 * if any: the next stripe's trip in overlaps this step's panel. */
static ooc_status_t prefetch(lu_t *L, int64_t x0, int64_t x1) {
  int64_t b = L->b, k1 = L->k0 + L->W, w1 = ooc_min64(L->W, L->n - k1);
  x1 = ooc_min64(x1, w1);
  if (k1 >= L->n || x1 <= x0 || L->no_prefetch) return OOC_OK;
  double t0 = ooc_now();
  /* the region's chunk may still be on its way out (out_cols): the puts wait for its gets */
  ooc_status_t st = wait_outs(L, L->QT, (L->k0 + x0) / b, ooc_cdiv64(L->k0 + x1, b));
  L->pc0 = k1;
  if (st == OOC_OK) st = in_cols(L, (k1 + x0) / b, ooc_cdiv64(k1 + x1, b));
  L->pc0 = L->k0;
  L->st->t_in += ooc_now() - t0;
  return st;
}

/* The host's order around a chunk's getrf. With deferred moves (direct) its enqueue goes last:
 * cuSOLVER's getrf held the host 23-90 ms in the first stripe at n = 40000 on an H200 (the
 * CUDA executor's enqueue spans; not the ring of records), and the chunks' trips in and out,
 * queued after it, started that much later; deferred moves return at once, so queuing them
 * first costs the getrf nothing. Through the ring the host waits for each column's copy: the
 * getrf goes first then, so that the device works while the host moves columns. */
static int getrf_first(const lu_t *L) { return !L->direct || L->uni || L->a->need; }

/* Chunk [a, a1) of the stripe, factored, back to the store (chunk_out), and the region of the
 * chunk before it, whose update of the others ran before this chunk's getrf (which the host has
 * synced) and which is back in the store, takes the next stripe's columns. */
static ooc_status_t panel_out(lu_t *L, int64_t a, int64_t a1, int64_t wc) {
  OOC_TRY(chunk_out(L, a, a1));
  return a > L->k0 ? prefetch(L, a - wc - L->k0, a - L->k0) : OOC_OK;
}

/* Step 3 of lu.h in chunks of the stripe (right-looking inside it, as a blocked getrf): chunk c
 * is factored, its swaps, trsm and gemm update the chunks right of it, and chunk c+1's getrf is
 * queued behind them before the host sends chunk c back to the store through the ring (gets on
 * QT: nothing writes chunk c after its getrf, which the host has synced, and the update only
 * reads it): the host's scatter of a chunk overlaps the device's work on the next. A chunk's
 * columns are final once factored except for the later chunks' swaps below them, which they
 * take lazily like any earlier column (done[] = the chunk's end). */
static ooc_status_t panel(lu_t *L, int64_t *info) {
  int64_t n = L->n, b = L->b, k0 = L->k0, w = L->w, end = k0 + w;
  int64_t wc = ooc_min64(w, ooc_max64(b, L->chunk / b * b));
  int64_t bad[2] = {0, 0}; /* chunk c's info, written when its getrf runs (read after the sync) */
  int c = 0;
  OOC_TRY(panel_getrf(L, k0, ooc_min64(wc, w), &bad[0], L->evp[0]));
  for (int64_t a = k0; a < end; a += wc, c ^= 1) {
    int64_t cw = ooc_min64(wc, end - a), a1 = a + cw, nr = end - a1;
    double t0 = ooc_now();
    OOC_TRY(ex_sync(L->ex, L->evp[c]));
    L->st->t_wait += ooc_now() - t0;
    OOC_TRY(chunk_pivots(L, a, cw, bad[c], info));
    /* the chunks right of this one: its swaps, then L_cc^-1 and the gemm */
    if (nr > 0) OOC_TRY(chunk_update(L, a, a1, a1, end));
    if (!getrf_first(L)) OOC_TRY(panel_out(L, a, a1, wc)); /* (see getrf_first) */
    if (nr > 0) OOC_TRY(panel_getrf(L, a1, ooc_min64(wc, end - a1), &bad[c ^ 1], L->evp[c ^ 1]));
    if (getrf_first(L)) OOC_TRY(panel_out(L, a, a1, wc)); /* while the device works on */
  }
  OOC_TRY(prefetch(L, (w - 1) / wc * wc, w)); /* the last chunk's region */
  L->loaded = k0 + L->W < n && !L->no_prefetch;
  return OOC_OK;
}

/* The first stripe's last chunk [a, w) is being factored (its updates queued, evr recorded after
 * each region's last read): the one before it (prev) goes back now, beside the last getrf
 * (nothing writes it after its own), so that its region takes the next stripe's columns with
 * the others' instead of after the last chunk, and every region before the last takes them.
 * The step's end left the device idle 0.11 s at n = 40000 on an H200, waiting for the trips
 * out and in of the last two chunks' regions and for the prefetch, which the host queued only
 * once the last getrf's enqueue returned (getrf_first). */
static ooc_status_t first_ahead(lu_t *L, int64_t prev, int64_t a, int64_t wc) {
  if (prev >= 0) OOC_TRY(chunk_out(L, prev, a));
  for (int64_t d = 0; d < a; d += wc) {
    OOC_TRY(ex_wait(L->ex, L->QT, L->evr[ooc_min64(d / wc, LU_NEV - 1)]));
    OOC_TRY(prefetch(L, d, d + wc));
  }
  return OOC_OK;
}

/* The first stripe's last chunk [a, a1) (factored, synced) back to the store and its region
 * refilled with the next stripe's columns, a tile column at a time: each column's trip in
 * waits for its own trip out only, so that the two copy engines overlap them. As one batch
 * each, the trip in waited for the whole chunk's trip out, and the next step's left pass, which
 * needs the whole stripe, for both: 27 + 34 ms of device idle time at the step boundary
 * (n = 40000, chunk 4000, on an H200). The columns' done[] is the chunk's end, as chunk_out's. */
static ooc_status_t last_region(lu_t *L, int64_t a, int64_t a1) {
  for (int64_t tj = a / L->b; tj < ooc_cdiv64(a1, L->b); tj++) {
    int64_t c0 = cstart(L, tj), c1 = ooc_min64(a1, c0 + clen(L, tj));
    OOC_TRY(chunk_out(L, c0, c1));
    L->done[tj] = a1;
    OOC_TRY(prefetch(L, c0 - L->k0, c1 - L->k0));
  }
  return OOC_OK;
}

/* The first step: nothing to its left, so its stripe need not be all on the device before the
 * panel starts. Chunk by chunk (left-looking inside the stripe): the host gathers chunk c into
 * P, the device applies the chunks before it and factors it, and the host sends chunk c-2 back
 * meanwhile, so the first stripe's trip in and out overlaps its own factorization. Why c-2 and
 * after the gather: the device then has chunk c-1's getrf and the earlier chunks' updates of c
 * queued while the host moves chunk c's columns and chunk c-2's, where sending c-1 back before
 * gathering c left the device idle 17-37 ms after each getrf (n = 40000 on an H200). The last
 * chunk's updates read each earlier region for the last time: the next stripe's columns go
 * there as soon as the device is past that read (evr, on the copy queue), so the next step's
 * trip in overlaps the end of this one, as panel()'s prefetch does in the later steps. */
static ooc_status_t panel_first(lu_t *L, int64_t *info) {
  int64_t b = L->b, w = L->w, wc = ooc_min64(w, ooc_max64(b, L->chunk / b * b));
  int64_t bad[2] = {0, 0}, prev = -1, pprev = -1; /* the chunks factored last and before it */
  int c = 0, ahead = L->k0 + L->W < L->n && !L->no_prefetch;
  L->pc0 = 0;
  for (int64_t a = 0; a < w; a += wc, c ^= 1) {
    int64_t a1 = ooc_min64(w, a + wc);
    int last = a1 == w && ahead;
    double t0 = ooc_now();
    if (a == 0 || getrf_first(L)) OOC_TRY(in_cols(L, a / b, ooc_cdiv64(a1, b))); /* else queued */
    OOC_TRY(join_qt(L));
    L->st->t_in += ooc_now() - t0;
    for (int64_t d = 0; d < prev; d += wc) { /* the chunks whose pivots the host has */
      OOC_TRY(chunk_update(L, d, ooc_min64(w, d + wc), a, a1));
      if (last) OOC_TRY(ex_record(L->ex, QC, L->evr[ooc_min64(d / wc, LU_NEV - 1)]));
    }
    if (pprev >= 0) OOC_TRY(chunk_out(L, pprev, prev)); /* while the device works on */
    if (prev >= 0) { /* the one before: its pivots first */
      double t1 = ooc_now();
      OOC_TRY(ex_sync(L->ex, L->evp[c ^ 1]));
      L->st->t_wait += ooc_now() - t1;
      OOC_TRY(chunk_pivots(L, prev, a - prev, bad[c ^ 1], info));
      OOC_TRY(chunk_update(L, prev, a, a, a1));
      if (last) OOC_TRY(ex_record(L->ex, QC, L->evr[ooc_min64(prev / wc, LU_NEV - 1)]));
    }
    if (!getrf_first(L)) { /* (see getrf_first) */
      if (last) OOC_TRY(first_ahead(L, prev, a, wc));
      double t2 = ooc_now();
      if (a1 < w) OOC_TRY(in_cols(L, a1 / b, ooc_cdiv64(ooc_min64(w, a1 + wc), b))); /* next */
      L->st->t_in += ooc_now() - t2;
    }
    OOC_TRY(panel_getrf(L, a, a1 - a, &bad[c], L->evp[c]));
    if (getrf_first(L) && last) OOC_TRY(first_ahead(L, prev, a, wc));
    pprev = prev;
    prev = a;
  }
  if (pprev >= 0 && !ahead) OOC_TRY(chunk_out(L, pprev, prev)); /* (else sent in the loop) */
  double t1 = ooc_now();
  OOC_TRY(ex_sync(L->ex, L->evp[c ^ 1]));
  L->st->t_wait += ooc_now() - t1;
  OOC_TRY(chunk_pivots(L, prev, w - prev, bad[c ^ 1], info));
  if (!ahead) return chunk_out(L, prev, w);
  OOC_TRY(last_region(L, prev, w)); /* read for the last time: back, and the next columns in */
  L->loaded = 1;
  return OOC_OK;
}

/* ---- steps and safe points (lu.h) ---------------------------------------------------------- */

/* Will after_step checkpoint after `step`? Asked once per step (lu_args_t.step_due), `before`
 * it runs or as it ends. */
static int step_due(lu_t *L, int64_t step, int before) {
  const lu_args_t *a = L->a;
  return a->after_step && (!a->step_due || a->step_due(a->step_user, step, L->nsteps, before));
}

/* `step` is done and nothing is checked out of a store: after_step with the state so far. asked:
 * step_due was asked for this step already (a factor step asks before its prefetch). */
static ooc_status_t step_end(lu_t *L, int64_t step, int asked) {
  const lu_args_t *a = L->a;
  if (!a->after_step) return OOC_OK;
  if (!asked) (void)step_due(L, step, 0);
  lu_state_t s = {.amax = L->amax, .umax = L->umax, .logdet = L->logdet, .sign = L->sign,
                  .tiny = L->st->tiny, .min_pivot = L->st->min_pivot, .rowsum = L->rowsum};
  return a->after_step(a->step_user, step, L->nsteps, L->ipiv, &s);
}

/* The end of the chunk column c was factored in (its done[] once its step is over): the chunks
 * of panel() and panel_first(), wc wide from the stripe's start. */
int64_t lu_chunk_end(int64_t n, int64_t b, int64_t W, int64_t chunk, int64_t c) {
  if (chunk <= 0) chunk = LU_CHUNK;
  int64_t k0 = c / W * W, w = ooc_min64(W, n - k0);
  int64_t wc = ooc_min64(w, ooc_max64(b, chunk / b * b));
  return ooc_min64(k0 + ((c - k0) / wc + 1) * wc, k0 + w);
}

static int64_t chunk_end(const lu_t *L, int64_t c) {
  return lu_chunk_end(L->n, L->b, L->W, L->chunk, c);
}

void lu_spill_model(int64_t n, int64_t b, int64_t W, int64_t *spilled, int64_t *read) {
  *spilled = *read = 0;
  if (n <= 0 || b <= 0) return;
  b = ooc_min64(b, n);
  W = ts_stripe(n, b, W);
  part_t p = part_make(n, b);
  int64_t left = 0, fix = 0;
  for (int64_t j = 0; j < p.count; j++) {
    int64_t c0 = part_start(p, j), bj = part_len(p, j), k0 = c0 / W * W;
    /* read by the left pass of every later step: rows from its diagonal block down */
    left += (ooc_cdiv64(n, W) - 1 - k0 / W) * bj * (n - c0);
    int64_t done = lu_chunk_end(n, b, W, 0, c0);
    if (done < n) fix += bj * (n - done / b * b); /* whole tiles from the one done falls in */
  }
  *spilled = 8 * (n * n + fix);
  *read = 8 * (n * n + left + fix);
}

/* A run resumed at L->start: the state the run that wrote state0 had after step start - 1. */
static ooc_status_t resume(lu_t *L) {
  const lu_state_t *s = L->a->state0;
  if (!s || !s->rowsum || L->start > L->nsteps)
    return OOC_FAIL(L->ctx, OOC_ERR_INTERNAL, "lu: resumed at step %lld of %lld without its "
                    "state", (long long)L->start, (long long)L->nsteps);
  L->amax = s->amax;
  L->umax = s->umax;
  L->logdet = s->logdet;
  L->sign = s->sign;
  L->st->tiny = s->tiny;
  L->st->min_pivot = s->min_pivot;
  memcpy(L->rowsum, s->rowsum, (size_t)L->n * sizeof(double));
  /* the factored columns' row orders; after the final swap pass (reported with step nf - 1,
   * run before step nf) every column is in LAPACK's order, as fix_columns leaves it */
  int fixed = L->start > L->nf && !L->a->nopiv && L->a->job != LU_SOLVE;
  int64_t end = ooc_min64(L->start, L->nf) * L->W;
  for (int64_t tj = 0; tj < L->nt && cstart(L, tj) < end; tj++)
    L->done[tj] = fixed ? L->n : chunk_end(L, cstart(L, tj));
  return OOC_OK;
}

/* A factor step is over: a checkpoint after it (no_prefetch) finds every tile back in the store
 * and the scans fetched; then after_step and the progress. */
static ooc_status_t factor_step_done(lu_t *L, int64_t step) {
  L->st->steps++;
  if (L->no_prefetch) {
    OOC_TRY(batch_drain(L));
    OOC_TRY(scan_fetch(L));
  }
  OOC_TRY(step_end(L, step, 1));
  return ooc_tick(L->ctx, "factor", (step + 1.0) / L->nf);
}

static ooc_status_t factor(lu_t *L, int64_t *info) {
  int64_t n = L->n, b = L->b, W = L->W;
  int64_t nsteps = L->nf;
  double t0 = ooc_now();
  ring_ops_t left = {col_take, left_work, keep_put};
  for (int64_t step = L->start; step < nsteps; step++) {
    L->k0 = step * W;
    L->w = ooc_min64(W, n - L->k0);
    int64_t k0 = L->k0, w = L->w, kt0 = k0 / b, kt1 = ooc_cdiv64(k0 + w, b);
    L->pc0 = k0;
    L->no_prefetch = step_due(L, step, 1); /* before this step's panel takes the next stripe */
    double ta = ooc_now();
    if (step == 0) {
      OOC_TRY(panel_first(L, info));
      L->st->t_panel += ooc_now() - ta;
      ex_host_span(L->ex, "lu first stripe", ta, ooc_now(), 0);
      OOC_TRY(factor_step_done(L, step));
      continue;
    }
    if (!L->loaded) OOC_TRY(in_cols(L, kt0, kt1)); /* else prefetched */
    L->loaded = 0;
    OOC_TRY(join_qt(L));
    OOC_TRY(batch_free_cols(L, 0, kt0)); /* the earlier stripes' chunks are back: the left
                                            pass lends them */
    double tb = ooc_now();
    L->applied = 0;
    L->fold = left_fold_due(L);
    ooc_status_t lp = run_pass(L, P_LOWER, L->A, 0, kt0, &left);
    L->fold = 0;
    OOC_TRY(lp);
    if (L->applied < k0) OOC_TRY(swaps(L, QC, w, L->P, n, L->applied, k0, L->ipiv));
    OOC_TRY(drain(L)); /* free: the ring retired every column, so this times the panel alone */
    double tc = ooc_now();
    OOC_TRY(panel(L, info));
    double td = ooc_now();
    L->st->t_in += tb - ta;
    L->st->t_left += tc - tb;
    L->st->t_panel += td - tc;
    ex_host_span(L->ex, "lu stripe in", ta, tb, 0); /* (a prefetched stripe: the join) */
    ex_host_span(L->ex, "lu earlier columns", tb, tc, 0);
    ex_host_span(L->ex, "lu panel", tc, td, 0);
    OOC_TRY(factor_step_done(L, step));
  }
  /* the columns before the last stripe (done[] is a multiple of b there) take their later swaps
   * now, except for a solve: its forward sweep applies them lazily, as step 2 does (lu.h), and
   * its store A is not a result; without pivoting there are no later swaps. A run resumed after
   * the first RHS stripe finds them taken (resume()). */
  int64_t nfix = 0; /* up to the last column that lacks some */
  for (int64_t j = 0; L->start <= nsteps && !L->a->nopiv && L->a->job != LU_SOLVE && j < L->nt;
       j++)
    if (L->done[j] < n) nfix = j + 1;
  double tf = ooc_now();
  if (L->uni) OOC_TRY(batch_drain(L)); /* (else fix_take waits for each column's batch) */
  int own = L->a->job == LU_FACTOR; /* (an inverse's sweeps need LAPACK's layout) */
  if (nfix > 0 && own && L->a->swaps == LU_SWAPS_NONE) nfix = 0;
  if (nfix > 0 && own && L->a->swaps == LU_SWAPS_WRITER && L->a->rowmap) {
    OOC_TRY(batch_drain(L)); /* every chunk back in the store: where the tiles are is final */
    if (ts_all_cached(L->A) && rowmap_make(L, L->a->rowmap)) {
      L->st->swaps_left = 1;
      nfix = 0;
    }
  }
  OOC_TRY(fix_columns(L, nfix));
  OOC_TRY(batch_drain(L)); /* the last chunks back in the store */
  L->st->t_fix = ooc_now() - tf;
  ex_host_span(L->ex, "lu final swaps", tf, ooc_now(), 0);
  OOC_TRY(scan_fetch(L));
  L->st->growth = L->amax > 0 ? L->umax / L->amax : 0;
  for (int64_t i = 0; i < n; i++) L->st->norm_inf = fmax(L->st->norm_inf, L->rowsum[i]);
  L->st->logdet = L->logdet;
  L->st->sign = L->sign;
  L->st->t_factor += ooc_now() - t0;
  ex_host_span(L->ex, "lu factor", t0, ooc_now(), 0);
  return OOC_OK;
}

/* ---- solve: RHS stripes through P --------------------------------------------------------- */

/* One tile column j of a triangular sweep over the RHS stripe in P, in two operations: its
 * diagonal block solves P's block j (trsm; L unit lower on the forward sweep, U upper on the
 * backward one), then one gemm updates every block it reaches (below j forward, above j
 * backward) with the solved block. */
static ooc_status_t sweep_work(lu_t *L, int64_t q, int s, double *slot, int *last, int bwd) {
  int64_t j = item_col(L, q), bj = clen(L, j), c0 = cstart(L, j), n = L->n, t0, t1, r0, r1;
  item_rows(L, j, &t0, &t1, &r0, &r1);
  double *Pj = L->P + c0;
  const double *D;
  OOC_TRY(to_twin(L, s, slot, r0, r1, bj, &D));
  OOC_TRY(ex_trsm(L->ex, QC, 'L', bwd ? 'U' : 'L', 'N', bwd ? 'N' : 'U', bj, L->mw, 1.0, D + c0,
                  n, Pj, n));
  if (!bwd && n - c0 - bj > 0)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', n - c0 - bj, L->mw, bj, -1.0, D + c0 + bj, n, Pj, n,
                    1.0, Pj + bj, n));
  if (bwd && c0 > 0)
    OOC_TRY(ex_gemm(L->ex, QC, 'N', 'N', c0, L->mw, bj, -1.0, D, n, Pj, n, 1.0, L->P, n));
  *last = QC;
  return OOC_OK;
}

/* The forward sweep takes the swaps lazily, as the factor's step 2: P is brought to the row
 * order column j is stored in (ipiv[0, done[j])) before its trsm. An inverse's identity is not
 * permuted at all (A^-1 = (LU)^-1 P: the writer permutes its columns), and its factor is in
 * LAPACK's layout (done[] = n). */
static ooc_status_t fwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  lu_t *L = u;
  (void)ld;
  int64_t j = item_col(L, q);
  if (!L->invert && L->applied < L->done[j]) {
    OOC_TRY(swaps(L, QC, L->mw, L->P, L->n, L->applied, L->done[j], L->ipiv));
    L->applied = L->done[j];
  }
  return sweep_work(u, q, s, slot, last, 0);
}

static ooc_status_t bwd_take(void *u, int64_t q, double *slot, int64_t ld) {
  lu_t *L = u;
  OOC_TRY(col_take(u, q, slot, ld));
  int64_t j = item_col(L, q);
  if (L->zero_col != -2) { /* a factor file: U's diagonal must be nonzero */
    int64_t c0 = cstart(L, j);
    const xlend_t *d = &L->lend[q % L->K];
    /* the diagonal block: the lent column's last tile (UPPER ends at it), or in the slot */
    const double *dg = d->t1 > d->t0 ? d->tile[j - d->t0] : slot + c0;
    int64_t ldg = d->t1 > d->t0 ? clen(L, j) : ld;
    for (int64_t c = 0; c < clen(L, j); c++)
      if (dg[c + c * ldg] == 0.0 && (L->zero_col < 0 || c0 + c < L->zero_col))
        L->zero_col = c0 + c;
  }
  return OOC_OK;
}

static ooc_status_t bwd_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  (void)ld;
  return sweep_work(u, q, s, slot, last, 1);
}

static ooc_status_t solve(lu_t *L, int64_t *info) {
  part_t cp = ts_cols(L->B);
  int64_t n = L->n;
  double t0 = ooc_now();
  /* RHS stripes (lu_steps counts them): whole tile columns of B, as many as P holds (at least
   * one: W >= b) */
  int64_t per = ooc_max64(1, L->W / L->b);
  int64_t nstripes = L->nsteps - L->nf;
  ring_ops_t in = {in_take, in_work, in_put}, out = {NULL, out_work, out_put};
  ring_ops_t fwd = {col_take, fwd_work, keep_put}, bwd = {bwd_take, bwd_work, keep_put};
  L->zero_col = L->a->job == LU_SOLVE_FACTORED ? -1 : -2;
  for (int64_t sidx = ooc_max64(0, L->start - L->nf); sidx < nstripes; sidx++) {
    int64_t rt0 = sidx * per, rt1 = ooc_min64(cp.count, rt0 + per);
    L->pc0 = part_start(cp, rt0);
    L->mw = part_start(cp, rt1 - 1) + part_len(cp, rt1 - 1) - L->pc0;
    OOC_TRY(run_pass(L, P_ALL, L->B, rt0, rt1, &in));
    OOC_TRY(join_qt(L));
    L->applied = 0;
    /* the identity's rows above r0 stay zero under L^-1: start at its tile column */
    OOC_TRY(run_pass(L, P_LOWER, L->A, L->invert ? L->pc0 / L->b : 0, L->nt, &fwd));
    if (!L->invert && L->applied < n) /* (every column's done[] is n but the swaps' ends) */
      OOC_TRY(swaps(L, QC, L->mw, L->P, n, L->applied, n, L->ipiv));
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
    OOC_TRY(step_end(L, L->nf + sidx, 0));
    OOC_TRY(ooc_tick(L->ctx, "solve", (sidx + 1.0) / nstripes));
  }
  OOC_TRY(drain(L));
  L->st->t_solve += ooc_now() - t0;
  return OOC_OK;
}

/* ---- setup -------------------------------------------------------------------------------- */

ex_cuda_config_t lu_cuda_config(int device, int64_t gpu_mem, int64_t n, const char *trace) {
  int64_t ring = ooc_min64((int64_t)1 << 20, 8 * 32 * ooc_min64(n, LU_CHUNK));
  return (ex_cuda_config_t){.device = device, .gpu_mem = gpu_mem, .nqueues = 3, .trace = trace,
                            .ring_bytes = ring, .urgent_copies = 1};
}

ooc_status_t lu_warm(ooc_exec_t *ex) {
  /* large enough for cuSOLVER's blocked getrf, whose kernels are the factor's (a tiny block
   * takes another path); a diagonal matrix: nothing to pivot, nothing to overflow. Skipped
   * where it would take more than a quarter of the budget (a budget that small is a test's). */
  enum { M = 2048, N = 1024 };
  if (!ex || ex->unified || ex->budget < 4 * 8 * (int64_t)M * N) return OOC_OK;
  double *A = NULL, *mx = NULL;
  int64_t loc[N], info = 0;
  ex_event_t *ev = NULL;
  ooc_status_t st = ex_alloc(ex, (size_t)M * N * sizeof(double), &A);
  if (st == OOC_OK) st = ex_alloc(ex, 2 * sizeof(double), &mx);
  if (st == OOC_OK) st = ex_event_create(ex, &ev);
  if (st == OOC_OK) st = ex_laset(ex, QC, 'A', M, N, 0.0, 1.0, A, M);
  if (st == OOC_OK) st = ex_fill(ex, QC, 2, 1, 0.0, mx, 2);
  if (st == OOC_OK) st = ex_getrf(ex, QC, M, N, A, M, loc, &info);
  if (st == OOC_OK) st = ex_record(ex, QC, ev);
  if (st == OOC_OK) st = ex_sync(ex, ev); /* the pivots reach the host when getrf has run */
  if (st == OOC_OK) st = ex_laswp(ex, QC, N, A, M, 0, N, loc);
  if (st == OOC_OK) st = ex_trsm(ex, QC, 'L', 'L', 'N', 'U', N, N, 1.0, A, M, A + N, M);
  if (st == OOC_OK) /* three disjoint blocks: rows [N, M) x columns [0, N/2) -= their right
                      * half times rows [0, N/2) of columns [N/2, N) */
    st = ex_gemm(ex, QC, 'N', 'N', M - N, N / 2, N / 2, -1.0, A + N + N / 2 * M, M, A + N / 2 * M,
                 M, 1.0, A + N, M);
  if (st == OOC_OK) st = ex_absscan(ex, QC, M, N, A, M, -1, mx, NULL);
  if (st == OOC_OK) st = ex_record(ex, QC, ev);
  if (st == OOC_OK) st = ex_sync(ex, ev);
  else (void)ex_finish(ex); /* nothing still uses A */
  ex_event_destroy(ex, ev);
  ex_free(ex, mx);
  ex_free(ex, A);
  return st;
}

ooc_status_t lu_run(ooc_ctx_t *ctx, const lu_args_t *a, lu_stats_t *stats, int64_t *info) {
  double t_setup = ooc_now();
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
            .ipiv = a->ipiv, .invert = a->job == LU_INVERT,
            .chunk = a->chunk > 0 ? a->chunk : LU_CHUNK, .outq = QC, .sign = 1,
            .start = a->start_step};
  int64_t W = L.W;
  L.nsteps = lu_steps(a->job, n, b, a->stripe, needs_b ? ts_cols(a->B).n : 0, &L.nf);
  ooc_status_t st = OOC_OK;
  ooc_exec_t *own = NULL;
  if (!a->ops) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "lu: no host kernels");
  L.ex = a->exec;
  if (!L.ex) {
    /* the device buffers the host executor hands out, exactly (lu_workspace_bytes counts them) */
    OOC_TRY(ex_host_create(ctx, a->ops, 2, 8 * n * W + scan_bytes(n), &own));
    L.ex = own;
  }
  L.QT = L.ex->nqueues > 1 ? 1 : QC;
  L.QG = L.ex->nqueues > 2 ? 2 : L.QT;
  L.uni = L.ex->unified;
  L.K = L.uni ? 1 : a->nslots > 0 ? (int)ooc_min64(a->nslots, LU_SLOTS) : LU_SLOTS;
  L.direct = !L.uni && a->direct;
  ooc_status_t lst = xl_alloc(ctx, L.lend, LU_SLOTS, L.nt);
  L.loc = ooc_malloc(ctx, (size_t)W * sizeof(int64_t));
  /* U's diagonal comes back by ex_get: into staging memory off a unified executor, so that the
   * get is asynchronous (into pageable memory the CUDA executor's get returns only once the
   * getrf before it has run: the host could not send the last chunk back meanwhile) */
  if (L.uni)
    L.diag = ooc_malloc(ctx, (size_t)W * sizeof(double));
  else if (ex_host_alloc(L.ex, (size_t)W * sizeof(double), &L.diag) != OOC_OK)
    L.diag = NULL;
  L.done = ooc_calloc(ctx, (size_t)L.nt, sizeof(int64_t));
  L.rowsum = ooc_calloc(ctx, (size_t)n, sizeof(double));
  if (!L.loc || !L.diag || !L.done || !L.rowsum || lst != OOC_OK) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "lu: out of host memory for n = %lld", (long long)n);
    goto done;
  }
  OOC_CHECK(st = ex_alloc(L.ex, (size_t)(n * W) * sizeof(double), &L.P));
  OOC_CHECK(st = ex_alloc(L.ex, (size_t)scan_bytes(n), &L.sc));
  for (int s = 0; s < L.K; s++) {
    if (!L.uni) OOC_CHECK(st = ex_alloc(L.ex, (size_t)(n * b) * sizeof(double), &L.D[s]));
    OOC_CHECK(st = ex_event_create(L.ex, &L.evput[s]));
  }
  OOC_CHECK(st = ex_event_create(L.ex, &L.ev));
  for (int e = 0; e < 2; e++) OOC_CHECK(st = ex_event_create(L.ex, &L.evp[e]));
  for (int e = 0; e < LU_NEV; e++) OOC_CHECK(st = ex_event_create(L.ex, &L.evr[e]));
  /* deferred moves: a batch holds up to two chunks' tile columns (panel_first's last prefetch) */
  L.bcap = batch_cap(b, W, L.chunk);
  for (int i = 0; i < LU_NB && L.direct; i++) {
    L.bt[i].d = ooc_calloc(ctx, (size_t)L.bcap, sizeof(xlend_t));
    if (!L.bt[i].d) {
      st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "lu: out of host memory for the deferred moves");
      goto done;
    }
    OOC_CHECK(st = xl_alloc(ctx, L.bt[i].d, (int)L.bcap, L.nt));
    OOC_CHECK(st = ex_event_create(L.ex, &L.bt[i].ev));
  }
  OOC_CHECK(st = ring_create(L.ex, L.K, n, b, &L.ring));
  if (a->job != LU_SOLVE_FACTORED) { /* the widest chunk's getrf workspace now (ex_reserve) */
    int64_t ws = ex_getrf_ws(L.ex, n, ooc_min64(W, ooc_max64(b, L.chunk / b * b)));
    OOC_CHECK(st = ex_reserve(L.ex, QC, ws));
  }
  if (L.direct) xpin_on(&L.pin, L.ex, L.A, L.B); /* lent tiles pinned as first lent */
  if (L.start > 0) OOC_CHECK(st = resume(&L));
  /* the scans start from zero, or from a resumed run's row sums (its maxima stay on the host) */
  OOC_CHECK(st = ex_fill(L.ex, QC, n + 2, 1, 0.0, L.sc, n + 2));
  if (L.start > 0) OOC_CHECK(st = ex_put(L.ex, QC, n, 1, L.rowsum, n, L.sc, n));
  OOC_CHECK(st = drain(&L)); /* before the first scan on QT */
  ex_host_span(L.ex, "lu setup", t_setup, ooc_now(), 0);
  if (a->job != LU_SOLVE_FACTORED) {
    OOC_CHECK(st = factor(&L, info));
  } else {
    for (int64_t j = 0; j < L.nt; j++) L.done[j] = n; /* a factor in LAPACK's layout */
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
  for (int i = 0; i < L.nb; i++) { /* left lent by a failure: back as they were */
    lu_batch_t *bt = &L.bt[(L.b0 + i) % LU_NB];
    xl_return(bt->d, (int)(bt->j1 - bt->j0), 0);
  }
  for (int s = 0; s < LU_SLOTS; s++) give_back(&L, s, 0); /* left lent by a failure */
  xpin_off(&L.pin, &L.st->bytes_pinned, &L.st->pin_refused);
  if (L.ex) {
    ooc_status_t fin = ex_finish(L.ex);
    if (st == OOC_OK) st = fin;
    ex_event_destroy(L.ex, L.ev);
    for (int e = 0; e < 2; e++) ex_event_destroy(L.ex, L.evp[e]);
    for (int e = 0; e < LU_NEV; e++) ex_event_destroy(L.ex, L.evr[e]);
    for (int i = 0; i < LU_NB; i++)
      if (L.bt[i].ev) ex_event_destroy(L.ex, L.bt[i].ev);
    for (int s = 0; s < LU_SLOTS; s++) {
      ex_event_destroy(L.ex, L.evput[s]);
      ex_free(L.ex, L.D[s]);
    }
    ex_free(L.ex, L.P);
    ex_free(L.ex, L.sc);
    if (!L.uni) ex_host_free(L.ex, L.diag);
  }
  if (L.uni) ooc_free(ctx, L.diag);
  ex_destroy(own);
  xl_free(ctx, L.lend, LU_SLOTS);
  for (int i = 0; i < LU_NB; i++) {
    if (L.bt[i].d) xl_free(ctx, L.bt[i].d, (int)L.bcap);
    ooc_free(ctx, L.bt[i].d);
  }
  ooc_free(ctx, L.loc);
  ooc_free(ctx, L.done);
  ooc_free(ctx, L.rowsum);
  return st;
}
