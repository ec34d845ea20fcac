/* oocgemm.c: the blocked out-of-core product. See oocgemm.h for the schedule and its I/O. */
#include "solvers/oocgemm.h"
#include "solvers/gemm_model.h"

#include "base/parloop.h"

#include <math.h>
#include <string.h>

int64_t gemm_block(int64_t b, int64_t s) {
  if (b <= 0) return 0;
  return ooc_max64(b, s / b * b);
}

int64_t gemm_workspace_bytes(int64_t m, int64_t n, int64_t k, int64_t b, int64_t s) {
  s = gemm_block(b, s);
  int64_t mb = ooc_min64(s, m), nb = ooc_min64(s, n), kb = ooc_min64(s, k);
  /* the host executor, the buffers' and events' headers (oocgemm.c's NBACK + 4 events) */
  return 8 * (mb * nb + mb * kb + kb * nb) + ex_host_bytes(1) + 4096;
}

int64_t gemm_block_for(int64_t m, int64_t n, int64_t k, int64_t b, int64_t mem) {
  int64_t top = ooc_cdiv64(ooc_max64(m, ooc_max64(n, k)), b);
  if (top < 1 || gemm_workspace_bytes(m, n, k, b, b) > mem) return 0;
  int64_t lo = 1, hi = top; /* workspace grows with s: largest count of tiles that fits */
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (gemm_workspace_bytes(m, n, k, b, mid * b) <= mem) lo = mid;
    else hi = mid - 1;
  }
  return lo * b;
}

ooc_status_t gemm_device_plan(ooc_ctx_t *ctx, ooc_exec_t *ex, int64_t m, int64_t n, int64_t k,
                              int64_t b, int64_t host_max, int64_t *s, int64_t *kb, int *nslots,
                              int *ncblk) {
  /* each buffer may round up by EX_DEV_ALIGN: keep room for that */
  int64_t budget = ex->budget - EX_DEV_ALIGN * (GEMM_MAX_CBLK + 2 * GEMM_MAX_SLOTS);
  int64_t room = host_max > 0 ? ooc_min64(budget, host_max) : budget;
  gemm_rates_t r = gemm_rates_gpu();
  gemm_shape_t best;
  /* the ends a device executor has (all of them: upload, part, end_cols); beta is not known
   * here and moves every plan alike */
  int found = gemm_model_plan(m, n, k, b, room, GEMM_END_FIRST | GEMM_END_LAST, 0, &r, &best,
                              NULL);
  *s = best.s;
  *kb = best.kb;
  *nslots = found ? best.nslots : 2;
  *ncblk = found ? best.ncblk : 1;
  if (found) return OOC_OK;
  char have[32], hb[32];
  int64_t kb1 = ooc_min64(b, ooc_cdiv64(ooc_max64(k, 1), b) * b);
  if (host_max > 0 &&
      gemm_exec_bytes(ooc_min64(b, m), ooc_min64(b, n), ooc_min64(kb1, k), 2, 1) > host_max)
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem leaves %s for the GPU product's pinned "
                    "buffers: too small for a block of one tile (%lld) with two panel buffers; "
                    "raise --host-mem or lower --tile", ooc_fmt_bytes(host_max, hb, sizeof hb),
                    (long long)b);
  return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem leaves %s for the product's buffers on %s: too "
                  "small for a block of one tile (%lld) with two panel buffers; raise --gpu-mem or "
                  "lower --tile", ooc_fmt_bytes(ex->budget, have, sizeof have), ex->name,
                  (long long)b);
}

/* ---- the device side: buffers, copies and products on the executor ------------------------
 *
 * The C block (MB x NB) stays resident on the device; each k panel (A: mb x kb, B: kb x nb) goes
 * from one of `nslots` staging buffer pairs (pinned on a GPU) to its device pair on the copy
 * queue, and the product accumulates it into the block on the compute queue after the copy's
 * event. The host fills slot s+1 while slot s is copied and multiplied; slot_wait(s) waits for the
 * event recorded after the product that last read slot s. end() queues the block's copy back on a
 * third queue in up to NCHUNK column chunks, each with an event that fetch() waits for, so the
 * host finishes and stores the first columns while the rest are in flight. With ncblk = 2 device
 * C buffers, block i+1's products run while block i comes back and is stored.
 * On a unified executor (the host's) the staging buffers are the device buffers: no copies, the
 * products run on the executor's worker on the buffers the host filled, and the events order
 * them with the host's gathers and stores exactly as on a device.
 * Why three slots on a GPU: the host gathers panel q+2 while panel q+1 crosses PCIe and panel q
 * multiplies (with two, a panel's H2D starts only once its gather is done: on the H100 host that
 * left the GPU waiting 15-20% of each panel at n = 49152). */
#define NCHUNK 16 /* a C block comes back in chunks of ~nb / NCHUNK columns (gemm_model.c) */
/* chunk events per C buffer: the chunks of end() plus, with end_cols, at most one short chunk
 * per column group and one for what end() copies after them */
#define NBACK (NCHUNK + GEMM_MAX_PIECES + 1)

typedef struct gemm_dev {
  ooc_exec_t *e;
  int own;                       /* e was made with the buffers (a host executor over ops) */
  int nslots, ncblk, qcopy, qcomp, qback;
  int64_t MB, NB, KB;
  double *apan[GEMM_MAX_SLOTS], *bpan[GEMM_MAX_SLOTS], *cblk[GEMM_MAX_CBLK]; /* staging */
  double *dA[GEMM_MAX_SLOTS], *dB[GEMM_MAX_SLOTS], *dC[GEMM_MAX_CBLK];       /* device */
  ex_event_t *ev_copied[GEMM_MAX_SLOTS], *ev_used[GEMM_MAX_SLOTS];
  ex_event_t *ev_loaded[GEMM_MAX_CBLK], *ev_done[GEMM_MAX_CBLK];
  ex_event_t *ev_back[GEMM_MAX_CBLK][NBACK];
  int64_t chunk_end[GEMM_MAX_CBLK][NBACK]; /* columns back once chunk i's event has passed */
  int nchunks[GEMM_MAX_CBLK];
  int64_t queued[GEMM_MAX_CBLK]; /* columns [0, queued) of the block have their copy back queued */
  int used[GEMM_MAX_SLOTS];
} gdev_t;

static ooc_status_t dev_begin(gdev_t *x, int c, int64_t mb, int64_t nb, int load) {
  ooc_exec_t *e = x->e;
  x->nchunks[c] = 0;
  x->queued[c] = 0;
  if (e->unified) { /* the host took the block into cblk[c] (or zeroes it) */
    if (!load) OOC_TRY(ex_fill(e, x->qcomp, mb, nb, 0.0, x->dC[c], mb));
    return OOC_OK;
  }
  if (load) { /* on the copy queue, behind the panels already queued; the products wait for it */
    OOC_TRY(ex_put(e, x->qcopy, mb * nb, 1, x->cblk[c], mb * nb, x->dC[c], mb * nb));
    OOC_TRY(ex_record(e, x->qcopy, x->ev_loaded[c]));
    return ex_wait(e, x->qcomp, x->ev_loaded[c]);
  }
  return ex_fill(e, x->qcomp, mb * nb, 1, 0.0, x->dC[c], mb * nb);
}

static ooc_status_t dev_slot_wait(gdev_t *x, int slot) {
  if (x->used[slot]) OOC_TRY(ex_sync(x->e, x->ev_used[slot]));
  x->used[slot] = 0;
  return OOC_OK;
}

static int dev_slot_busy(gdev_t *x, int slot) {
  return x->used[slot] && !ex_query(x->e, x->ev_used[slot]);
}

/* Rows [i0, i1) of the slot's A panel (a strided piece of the column-major mb x kb panel, unless
 * it is all of it) and columns [j0, j1) of its B panel (contiguous) to the device; the products
 * that read them wait for ev_copied, recorded after the latest piece. */
static ooc_status_t dev_upload(gdev_t *x, int slot, int64_t mb, int64_t kb, int64_t i0, int64_t i1,
                               int64_t j0, int64_t j1) {
  ooc_exec_t *e = x->e;
  if (e->unified) return OOC_OK; /* the products read the staging buffers */
  if (i1 > i0 && kb > 0)
    OOC_TRY(ex_put(e, x->qcopy, i1 - i0, kb, x->apan[slot] + i0, mb, x->dA[slot] + i0, mb));
  if (j1 > j0 && kb > 0)
    OOC_TRY(ex_put(e, x->qcopy, (j1 - j0) * kb, 1, x->bpan[slot] + j0 * kb, (j1 - j0) * kb,
                   x->dB[slot] + j0 * kb, (j1 - j0) * kb));
  return ex_record(e, x->qcopy, x->ev_copied[slot]);
}

static ooc_status_t dev_part(gdev_t *x, int slot, int c, int64_t mb, int64_t kb, int64_t i0,
                             int64_t i1, int64_t j0, int64_t j1, double alpha, double beta,
                             int last) {
  ooc_exec_t *e = x->e;
  if (i1 > i0 && j1 > j0) {
    if (!e->unified) OOC_TRY(ex_wait(e, x->qcomp, x->ev_copied[slot]));
    OOC_TRY(ex_gemm(e, x->qcomp, 'N', 'N', i1 - i0, j1 - j0, kb, alpha, x->dA[slot] + i0, mb,
                    x->dB[slot] + j0 * kb, kb, beta, x->dC[c] + i0 + j0 * mb, mb));
  }
  if (last) {
    OOC_TRY(ex_record(e, x->qcomp, x->ev_used[slot]));
    x->used[slot] = 1;
  }
  return OOC_OK;
}

static ooc_status_t dev_panel(gdev_t *x, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                              double alpha, double beta) {
  OOC_TRY(dev_upload(x, slot, mb, kb, 0, mb, 0, nb));
  return dev_part(x, slot, c, mb, kb, 0, mb, 0, nb, alpha, beta, 1);
}

/* Columns [j0, j1) of block c go back on their own queue once the compute queue has queued their
 * products, in chunks of ~nb / NCHUNK columns with an event each (unified: one event, nothing to
 * copy). */
static ooc_status_t dev_end_cols(gdev_t *x, int c, int64_t mb, int64_t nb, int64_t j0,
                                 int64_t j1) {
  ooc_exec_t *e = x->e;
  if (j0 != x->queued[c] || j1 < j0 || j1 > nb)
    return OOC_FAIL(e->ctx, OOC_ERR_INTERNAL, "product: columns [%lld, %lld) of a block of %lld "
                    "sent back out of order (%lld queued)", (long long)j0, (long long)j1,
                    (long long)nb, (long long)x->queued[c]);
  if (j1 == j0) return OOC_OK;
  OOC_TRY(ex_record(e, x->qcomp, x->ev_done[c]));
  int64_t per = e->unified ? nb : ooc_max64(1, ooc_cdiv64(nb, NCHUNK));
  if (!e->unified) OOC_TRY(ex_wait(e, x->qback, x->ev_done[c]));
  for (int64_t c0 = j0; c0 < j1; c0 += per) {
    int q = x->nchunks[c];
    if (q >= NBACK)
      return OOC_FAIL(e->ctx, OOC_ERR_INTERNAL, "product: more than %d chunks for a block of "
                      "%lld columns", NBACK, (long long)nb);
    int64_t nc = ooc_min64(per, j1 - c0);
    if (e->unified) {
      OOC_TRY(ex_record(e, x->qcomp, x->ev_back[c][q]));
    } else {
      OOC_TRY(ex_get(e, x->qback, mb * nc, 1, x->dC[c] + c0 * mb, mb * nc, x->cblk[c] + c0 * mb,
                     mb * nc));
      OOC_TRY(ex_record(e, x->qback, x->ev_back[c][q]));
    }
    x->chunk_end[c][q] = c0 + nc;
    x->nchunks[c] = q + 1;
  }
  x->queued[c] = j1;
  return OOC_OK;
}

static ooc_status_t dev_end(gdev_t *x, int c, int64_t mb, int64_t nb) {
  return dev_end_cols(x, c, mb, nb, x->queued[c], nb);
}

static ooc_status_t dev_fetch(gdev_t *x, int c, int64_t cols) {
  for (int q = 0; q < x->nchunks[c]; q++)
    if (x->chunk_end[c][q] >= cols || q == x->nchunks[c] - 1)
      return ex_sync(x->e, x->ev_back[c][q]);
  return OOC_OK;
}

/* Buffers and events on the executor. */
static ooc_status_t dev_open(gdev_t *x) {
  ooc_exec_t *e = x->e;
  int64_t MB = x->MB, NB = x->NB, KB = ooc_max64(1, x->KB);
  x->qcopy = 0;
  x->qcomp = e->nqueues > 1 ? 1 : 0;
  x->qback = e->nqueues > 2 ? 2 : x->qcomp;
  for (int c = 0; c < x->ncblk; c++) {
    OOC_TRY(ex_host_alloc(e, (size_t)(MB * NB) * sizeof(double), &x->cblk[c]));
    if (e->unified) x->dC[c] = x->cblk[c];
    else OOC_TRY(ex_alloc(e, (size_t)(MB * NB) * sizeof(double), &x->dC[c]));
    OOC_TRY(ex_event_create(e, &x->ev_loaded[c]));
    OOC_TRY(ex_event_create(e, &x->ev_done[c]));
    for (int q = 0; q < NBACK; q++) OOC_TRY(ex_event_create(e, &x->ev_back[c][q]));
  }
  for (int s = 0; s < x->nslots; s++) {
    OOC_TRY(ex_host_alloc(e, (size_t)(MB * KB) * sizeof(double), &x->apan[s]));
    OOC_TRY(ex_host_alloc(e, (size_t)(KB * NB) * sizeof(double), &x->bpan[s]));
    if (e->unified) {
      x->dA[s] = x->apan[s];
      x->dB[s] = x->bpan[s];
    } else {
      OOC_TRY(ex_alloc(e, (size_t)(MB * KB) * sizeof(double), &x->dA[s]));
      OOC_TRY(ex_alloc(e, (size_t)(KB * NB) * sizeof(double), &x->dB[s]));
    }
    OOC_TRY(ex_event_create(e, &x->ev_copied[s]));
    OOC_TRY(ex_event_create(e, &x->ev_used[s]));
  }
  return OOC_OK;
}

ooc_status_t gemm_dev_create(ooc_exec_t *e, int64_t MB, int64_t NB, int64_t KB, int nslots,
                             int ncblk, gemm_dev_t **out) {
  *out = NULL;
  if (nslots < 1 || nslots > GEMM_MAX_SLOTS || ncblk < 1 || ncblk > GEMM_MAX_CBLK || MB < 1 ||
      NB < 1 || KB < 0)
    return OOC_FAIL(e->ctx, OOC_ERR_INTERNAL, "product: %d slots, %d C buffers of %lld x %lld "
                    "(panels %lld) asked for", nslots, ncblk, (long long)MB, (long long)NB,
                    (long long)KB);
  gdev_t *x = ooc_calloc(e->ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(e->ctx, OOC_ERR_NOMEM, "out of host memory for the product");
  *x = (gdev_t){.e = e, .nslots = nslots, .ncblk = ncblk, .MB = MB, .NB = NB, .KB = KB};
  ooc_status_t st = dev_open(x);
  if (st != OOC_OK) {
    (void)gemm_dev_destroy(x);
    return st;
  }
  *out = x;
  return OOC_OK;
}

ooc_status_t gemm_dev_destroy(gemm_dev_t *x) {
  if (!x) return OOC_OK;
  ooc_exec_t *e = x->e;
  ooc_ctx_t *ctx = e->ctx;
  ooc_status_t st = ex_finish(e); /* nothing in flight uses a buffer once it returns */
  for (int c = 0; c < GEMM_MAX_CBLK; c++) {
    if (!e->unified) ex_free(e, x->dC[c]);
    ex_host_free(e, x->cblk[c]);
    ex_event_destroy(e, x->ev_loaded[c]);
    ex_event_destroy(e, x->ev_done[c]);
    for (int q = 0; q < NBACK; q++) ex_event_destroy(e, x->ev_back[c][q]);
  }
  for (int s = 0; s < GEMM_MAX_SLOTS; s++) {
    if (!e->unified) {
      ex_free(e, x->dA[s]);
      ex_free(e, x->dB[s]);
    }
    ex_host_free(e, x->apan[s]);
    ex_host_free(e, x->bpan[s]);
    ex_event_destroy(e, x->ev_copied[s]);
    ex_event_destroy(e, x->ev_used[s]);
  }
  if (x->own) ex_destroy(e);
  ooc_free(ctx, x);
  return st;
}

/* ---- the schedule ------------------------------------------------------------------------ */

/* A finished C block waiting to be stored (epilogue, then ts_put_tiles), tile column by tile
 * column: with two C buffers while the next block's panels run. */
typedef struct pend {
  int active, c;
  int64_t t0, t1, u0, u1, r0, c0, mb, nb;
  int64_t ucur;   /* tile columns [u0, ucur) are stored */
  int64_t cols;   /* columns known to be back in Cb (fetched) */
  double *Cb;
} pend_t;

typedef struct sched {
  ooc_ctx_t *ctx;
  const gemm_args_t *a;
  gdev_t *x;
  gemm_stats_t *gs;
  int64_t done_blocks, nblocks;
  double p0, p1;
  const char *phase;
} sched_t;

/* The epilogue on columns [c0, c0 + nc) of a block, split into up to a->epilogue_threads column
 * ranges run in parallel when it is large enough to pay for starting threads. */
typedef struct epi_job {
  const gemm_args_t *a;
  int64_t r0, c0, nr, nc, ld, nt;
  double *blk;
  ooc_status_t st[OOC_PAR_MAX_THREADS];
} epi_job_t;

static void epi_range(void *arg, int64_t t, int worker) {
  epi_job_t *e = arg;
  (void)worker;
  int64_t j0 = e->nc * t / e->nt, j1 = e->nc * (t + 1) / e->nt;
  e->st[t] = e->a->epilogue(e->a->user, e->r0, e->c0 + j0, e->nr, j1 - j0, e->blk + j0 * e->ld,
                            e->ld);
}

#define EPI_MIN_ELEMS ((int64_t)1 << 16) /* per thread: 512 KiB, much more than a thread's start */

static ooc_status_t run_epilogue(const gemm_args_t *a, int64_t r0, int64_t c0, int64_t nr,
                                 int64_t nc, double *blk, int64_t ld) {
  int64_t nt = ooc_min64(ooc_min64(a->epilogue_threads, OOC_PAR_MAX_THREADS), nc);
  nt = ooc_min64(nt, nr * nc / EPI_MIN_ELEMS);
  if (nt <= 1) return a->epilogue(a->user, r0, c0, nr, nc, blk, ld);
  epi_job_t e = {.a = a, .r0 = r0, .c0 = c0, .nr = nr, .nc = nc, .ld = ld, .nt = nt, .blk = blk};
  ooc_parallel((int)nt, nt, epi_range, &e);
  for (int64_t t = 0; t < nt; t++)
    if (e.st[t] != OOC_OK) return e.st[t];
  return OOC_OK;
}

/* Store tile columns [ucur, u_end) of the pending block: fetch them from the executor, scale (k =
 * 0), epilogue, put. Completing the block counts it and ticks the progress. */
static ooc_status_t store_upto(sched_t *sc, pend_t *p, int64_t u_end) {
  if (!p->active || u_end <= p->ucur) return OOC_OK;
  const gemm_args_t *a = sc->a;
  part_t cn = ts_cols(a->C);
  u_end = ooc_min64(u_end, p->u1);
  int64_t cs = part_start(cn, p->ucur) - p->c0;
  int64_t ce = u_end == p->u1 ? p->nb : part_start(cn, u_end) - p->c0;
  if (ce > p->cols) {
    double t = ooc_now();
    OOC_TRY(dev_fetch(sc->x, p->c, ce));
    sc->gs->fetches++;
    sc->gs->t_gemm += ooc_now() - t; /* waiting for the device */
    p->cols = ce;
  }
  double *blk = p->Cb + cs * p->mb;
  int64_t len = p->mb * (ce - cs);
  if (ts_cols(a->A).n == 0 && a->beta != 0.0 && a->beta != 1.0) /* k == 0: C = beta C */
    for (int64_t i = 0; i < len; i++) blk[i] *= a->beta;
  if (a->epilogue) {
    double t = ooc_now();
    OOC_TRY(run_epilogue(a, p->r0, p->c0 + cs, p->mb, ce - cs, blk, p->mb));
    sc->gs->t_epilogue += ooc_now() - t;
  }
  double t = ooc_now();
  OOC_TRY(ts_put_tiles(a->C, p->t0, p->t1, p->ucur, u_end, blk, p->mb));
  sc->gs->t_io += ooc_now() - t;
  p->ucur = u_end;
  if (u_end == p->u1) {
    p->active = 0;
    sc->gs->blocks++;
    sc->done_blocks++;
    OOC_TRY(ooc_tick(sc->ctx, sc->phase,
                     sc->p0 + (sc->p1 - sc->p0) * sc->done_blocks / (double)sc->nblocks));
  }
  return OOC_OK;
}

/* Before slot_wait(slot): while the device still holds the slot, touch new buffers for the C
 * tiles still to be put (the rest of the pending block and the block being multiplied), a step
 * of a few ms of page faults on the copy threads at a time, so the gather that follows starts
 * at most a step late. *more drops to 0 once nothing is left to do: after C's tiles are cached
 * or pooled (the warm case) this costs one scan per block. */
#define PREFILL_STEP ((int64_t)64 << 20)
static ooc_status_t prefill_while_busy(sched_t *sc, const pend_t *p, ts_range_t cur, int slot,
                                       int *more) {
  ts_range_t r[2];
  int nr = 0;
  if (p->active && p->ucur < p->u1) r[nr++] = (ts_range_t){p->t0, p->t1, p->ucur, p->u1};
  r[nr++] = cur;
  while (*more && dev_slot_busy(sc->x, slot)) {
    int64_t made = 0;
    double t = ooc_now();
    OOC_TRY(ts_prefill(sc->a->C, r, nr, PREFILL_STEP, &made));
    sc->gs->t_prefill += ooc_now() - t;
    sc->gs->bytes_prefill += made;
    *more = made > 0;
  }
  return OOC_OK;
}

/* A C block in the schedule: buffer c, tiles [t0, t1) x [u0, u1), elements at (r0, c0). */
typedef struct cblock {
  int c;
  int64_t t0, t1, u0, u1, r0, c0, mb, nb;
} cblock_t;

/* Element offsets in the block of the boundaries of tile row t / tile column u (t1, u1: the
 * block's edge, whose tiles may be short). */
static int64_t row_off(const sched_t *sc, const cblock_t *k, int64_t t) {
  return t >= k->t1 ? k->mb : part_start(ts_rows(sc->a->C), t) - k->r0;
}
static int64_t col_off(const sched_t *sc, const cblock_t *k, int64_t u) {
  return u >= k->u1 ? k->nb : part_start(ts_cols(sc->a->C), u) - k->c0;
}

/* Multiply the panel of slot, uploaded whole: in one part, or with by_cols (GEMM_END_LAST,
 * oocgemm.h: the block's last panel when nothing overlaps its store) in groups of tile columns,
 * each copied back as soon as its product is queued. */
static ooc_status_t multiply_uploaded(sched_t *sc, const cblock_t *k, int slot, int64_t kb,
                                      double beta, int by_cols) {
  gdev_t *x = sc->x;
  int64_t ui = k->u1 - k->u0;
  int G = by_cols ? gemm_last_groups(ui) : 1;
  if (G <= 1) return dev_part(x, slot, k->c, k->mb, kb, 0, k->mb, 0, k->nb, sc->a->alpha, beta, 1);
  sc->gs->split_panels++;
  sc->gs->col_ended++;
  for (int g = 0; g < G; g++) {
    int64_t j0 = col_off(sc, k, k->u0 + gemm_piece(ui, G, g));
    int64_t j1 = col_off(sc, k, k->u0 + gemm_piece(ui, G, g + 1));
    OOC_TRY(dev_part(x, slot, k->c, k->mb, kb, 0, k->mb, j0, j1, sc->a->alpha, beta, g == G - 1));
    OOC_TRY(dev_end_cols(x, k->c, k->mb, k->nb, j0, j1));
  }
  return OOC_OK;
}

/* GEMM_END_FIRST (oocgemm.h): gather and upload the panel of slot in pieces; with split, multiply
 * each piece as it arrives (the first panel), else the whole panel after the last piece (by
 * columns with by_cols). Seconds in the gathers add to *t_gather. */
static ooc_status_t panel_in_pieces(sched_t *sc, const cblock_t *k, int slot, int64_t k0t,
                                    int64_t k1t, int64_t kb, double beta, int split, int by_cols,
                                    double *t_gather) {
  gdev_t *x = sc->x;
  const gemm_args_t *a = sc->a;
  int64_t ti = k->t1 - k->t0, ui = k->u1 - k->u0;
  int P = gemm_first_pieces(ti, ui);
  if (P > 1) sc->gs->piece_panels++;
  if (P > 1 && split) sc->gs->split_panels++;
  for (int p = 0; p < P; p++) {
    int64_t ta = k->t0 + gemm_piece(ti, P, p), tb = k->t0 + gemm_piece(ti, P, p + 1);
    int64_t ua = k->u0 + gemm_piece(ui, P, p), ub = k->u0 + gemm_piece(ui, P, p + 1);
    int64_t i0 = row_off(sc, k, ta), i1 = row_off(sc, k, tb);
    int64_t j0 = col_off(sc, k, ua), j1 = col_off(sc, k, ub);
    double t = ooc_now();
    if (tb > ta) OOC_TRY(ts_read_tiles(a->A, ta, tb, k0t, k1t, x->apan[slot] + i0, k->mb));
    if (ub > ua) OOC_TRY(ts_read_tiles(a->B, k0t, k1t, ua, ub, x->bpan[slot] + j0 * kb, kb));
    *t_gather += ooc_now() - t;
    OOC_TRY(dev_upload(x, slot, k->mb, kb, i0, i1, j0, j1));
    if (split) { /* its rows against the columns so far, the rows so far against its columns */
      OOC_TRY(dev_part(x, slot, k->c, k->mb, kb, i0, i1, 0, j1, a->alpha, beta, 0));
      OOC_TRY(dev_part(x, slot, k->c, k->mb, kb, 0, i0, j0, j1, a->alpha, beta, p == P - 1));
    }
  }
  return split ? OOC_OK : multiply_uploaded(sc, k, slot, kb, beta, by_cols);
}

/* ---- several devices (issue 26, oocgemm.h "Several devices") -------------------------------- */

typedef struct mdev {
  gdev_t *x;
  sched_t sc;     /* its x; done_blocks kept in step with the product's (mstore) */
  pend_t pd;      /* its finished block waiting to be stored */
  cblock_t k;     /* the block it multiplies in this round */
  int slot;
  int64_t nloc;   /* blocks it has begun: its C buffers in turn */
} mdev_t;

/* store_upto on device d's pending block, the blocks done counted over all devices. */
static ooc_status_t mstore(mdev_t *md, int d, int64_t u_end, int64_t *done) {
  md[d].sc.done_blocks = *done;
  ooc_status_t st = store_upto(&md[d].sc, &md[d].pd, u_end);
  *done = md[d].sc.done_blocks;
  return st;
}

/* The product's blocks round robin over a->ndev devices (a->devs), driven from this thread: in
 * each round every device begins its block, then the rounds' panels go out interleaved (panel
 * kq of each device's block in turn, so one device multiplies while the host gathers for the
 * next), then each block ends and its store starts (the previous round's blocks are stored in
 * shares between the panels, as with one device). The ends (GEMM_END_*) are not used: they
 * trim one device's start and finish. Each block is the same operations on the same panels in
 * the same order as with one device, so C is bit-identical to it on the host kernels. */
static ooc_status_t run_multi(ooc_ctx_t *ctx, const gemm_args_t *a, gemm_stats_t *gs, int64_t s,
                              int64_t sk) {
  tstore_t *A = a->A, *B = a->B, *C = a->C;
  part_t ak = ts_cols(A), cm = ts_rows(C), cn = ts_cols(C);
  int64_t m = cm.n, n = cn.n, k = ak.n, b = cm.b;
  int nd = a->ndev;
  mdev_t md[EX_MAX_DEVICES];
  memset(md, 0, sizeof md);
  for (int d = 0; d < nd; d++) {
    gdev_t *x = a->devs[d];
    if (!x || x->e->unified != a->devs[0]->e->unified || x->nslots != a->devs[0]->nslots ||
        x->ncblk != a->devs[0]->ncblk)
      return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: device %d's buffers differ from device 0's "
                      "(the devices of a product are of one kind)", d);
    if (ooc_min64(s, m) > x->MB || ooc_min64(s, n) > x->NB || ooc_min64(sk, k) > x->KB)
      return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: device %d's buffers %lld x %lld (k %lld) "
                      "unusable for block %lld", d, (long long)x->MB, (long long)x->NB,
                      (long long)x->KB, (long long)s);
    md[d].x = x;
  }
  int64_t st_ = s / b, kt_ = sk / b;
  int64_t nbi = ooc_cdiv64(cm.count, st_), nbj = ooc_cdiv64(cn.count, st_);
  int64_t nkp = ooc_cdiv64(ak.count, kt_), nblocks = nbi * nbj, done = 0;
  for (int d = 0; d < nd; d++)
    md[d].sc = (sched_t){.ctx = ctx, .a = a, .x = md[d].x, .gs = gs, .nblocks = nblocks,
                         .p0 = a->progress0,
                         .p1 = a->progress1 > a->progress0 ? a->progress1 : 1.0,
                         .phase = a->phase ? a->phase : "multiply"};
  int nslots = md[0].x->nslots, ncblk = md[0].x->ncblk, uni = md[0].x->e->unified;
  int64_t first_store = ooc_min64(nslots - 1, nkp - 1);
  ooc_status_t st = OOC_OK;
  for (int64_t r = 0; r < nblocks; r += nd) {
    int nr = (int)ooc_min64(nd, nblocks - r);
    for (int d = 0; d < nr; d++) { /* begin block r + d on device d (one device's order) */
      mdev_t *v = &md[d];
      int64_t seq = r + d, bi = seq / nbj, q = seq % nbj;
      int64_t bj = (bi % 2 == 0) ? q : nbj - 1 - q;
      int64_t t0 = bi * st_, t1 = ooc_min64(cm.count, t0 + st_);
      int64_t u0 = bj * st_, u1 = ooc_min64(cn.count, u0 + st_);
      int64_t r0 = part_start(cm, t0), c0 = part_start(cn, u0);
      v->k = (cblock_t){.c = (int)(v->nloc++ % ncblk), .t0 = t0, .t1 = t1, .u0 = u0, .u1 = u1,
                        .r0 = r0, .c0 = c0, .mb = ooc_min64(s, m - r0), .nb = ooc_min64(s, n - c0)};
      if (v->pd.active && v->pd.c == v->k.c) OOC_CHECK(st = mstore(md, d, v->pd.u1, &done));
      double t_a = ooc_now();
      if (a->beta != 0.0)
        OOC_CHECK(st = ts_take_tiles(C, t0, t1, u0, u1, v->x->cblk[v->k.c], v->k.mb));
      OOC_CHECK(st = dev_begin(v->x, v->k.c, v->k.mb, v->k.nb, a->beta != 0.0));
      gs->t_io += ooc_now() - t_a;
    }
    for (int64_t kq = 0; kq < nkp; kq++)
      for (int d = 0; d < nr; d++) { /* panel kq of each device's block in turn */
        mdev_t *v = &md[d];
        int64_t seq = r + d, kp = (seq % 2 == 0) ? kq : nkp - 1 - kq;
        int64_t k0t = kp * kt_, k1t = ooc_min64(ak.count, k0t + kt_);
        int64_t kb = ooc_min64(sk, k - part_start(ak, k0t));
        double t1s = ooc_now();
        OOC_CHECK(st = dev_slot_wait(v->x, v->slot));
        double t1r = ooc_now();
        OOC_CHECK(st = ts_read_tiles(A, v->k.t0, v->k.t1, k0t, k1t, v->x->apan[v->slot],
                                     v->k.mb));
        OOC_CHECK(st = ts_read_tiles(B, k0t, k1t, v->k.u0, v->k.u1, v->x->bpan[v->slot], kb));
        double t_gather = ooc_now() - t1r;
        double beta = (kq == 0 && a->beta != 0.0) ? a->beta : 1.0;
        OOC_CHECK(st = dev_panel(v->x, v->slot, v->k.c, v->k.mb, v->k.nb, kb, a->alpha, beta));
        v->slot = (v->slot + 1) % nslots;
        gs->panels++;
        gs->t_gemm += ooc_now() - t1s - t_gather;
        gs->t_io += t_gather;
        pend_t *p = &v->pd;
        if (p->active && kq >= first_store)
          OOC_CHECK(st = mstore(md, d, p->u0 + ooc_cdiv64((kq + 1 - first_store) * (p->u1 - p->u0),
                                                          nkp - first_store), &done));
      }
    for (int d = 0; d < nr; d++) { /* end each block; its store begins */
      mdev_t *v = &md[d];
      double t_e = ooc_now();
      OOC_CHECK(st = dev_end(v->x, v->k.c, v->k.mb, v->k.nb));
      gs->t_gemm += ooc_now() - t_e;
      OOC_CHECK(st = mstore(md, d, v->pd.u1, &done)); /* what is left of its previous block */
      v->pd = (pend_t){.active = 1, .c = v->k.c, .t0 = v->k.t0, .t1 = v->k.t1, .u0 = v->k.u0,
                       .u1 = v->k.u1, .r0 = v->k.r0, .c0 = v->k.c0, .mb = v->k.mb, .nb = v->k.nb,
                       .ucur = v->k.u0, .Cb = v->x->cblk[v->k.c]};
    }
    for (int d = 0; d < nr && (uni || ncblk == 1); d++) /* no second C buffer to overlap with */
      OOC_CHECK(st = mstore(md, d, md[d].pd.u1, &done));
  }
  for (int d = 0; d < nd; d++) OOC_CHECK(st = mstore(md, d, md[d].pd.u1, &done));
  gs->flops += 2.0 * (double)m * (double)n * (double)k;
done:
  /* nothing in flight may use a buffer once we return */
  for (int d = 0; d < nd; d++) {
    ooc_status_t s2 = ex_finish(md[d].x->e);
    if (st == OOC_OK) st = s2;
  }
  return st;
}

ooc_status_t gemm_run(ooc_ctx_t *ctx, const gemm_args_t *a, gemm_stats_t *stats) {
  tstore_t *A = a->A, *B = a->B, *C = a->C;
  if (!A || !B || !C || C == A || C == B)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: C must be a store distinct from A and B");
  part_t am = ts_rows(A), ak = ts_cols(A), bk = ts_rows(B), bn = ts_cols(B);
  part_t cm = ts_rows(C), cn = ts_cols(C);
  int64_t m = am.n, k = ak.n, n = bn.n, b = am.b;
  if (bk.n != k || cm.n != m || cn.n != n || ak.b != b || bk.b != b || bn.b != b || cm.b != b ||
      cn.b != b)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL,
                    "gemm: shapes (%lld x %lld)(%lld x %lld) -> %lld x %lld or tiles do not match",
                    (long long)m, (long long)k, (long long)bk.n, (long long)n, (long long)cm.n,
                    (long long)cn.n);
  gemm_stats_t local = {0};
  gemm_stats_t *gs = stats ? stats : &local;
  if (m == 0 || n == 0) return OOC_OK;
  int64_t s = gemm_block(b, a->block);
  int64_t sk = a->kblock > 0 ? gemm_block(b, a->kblock) : s;
  if (a->ndev > 1) { /* several devices: their buffers bound the block and the panels */
    if (a->ndev > EX_MAX_DEVICES || !a->devs || a->devs[0] != a->dev)
      return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: %d devices (at most %d; devs[0] is dev)",
                      a->ndev, EX_MAX_DEVICES);
    for (int d = 0; d < a->ndev; d++) {
      gdev_t *y = a->devs[d];
      if (!y) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: device %d has no buffers", d);
      if (y->MB < m) s = ooc_min64(s, ooc_max64(b, y->MB / b * b));
      if (y->NB < n) s = ooc_min64(s, ooc_max64(b, y->NB / b * b));
      if (y->KB < k) sk = ooc_min64(sk, ooc_max64(b, y->KB / b * b));
    }
    return run_multi(ctx, a, gs, s, sk);
  }
  gdev_t *x = a->dev;
  if (x) { /* its buffers bound the block and the panels (a buffer that holds the whole
            * dimension bounds nothing, also when it is not a multiple of the tile) */
    if (x->MB < m) s = ooc_min64(s, ooc_max64(b, x->MB / b * b));
    if (x->NB < n) s = ooc_min64(s, ooc_max64(b, x->NB / b * b));
    if (x->KB < k) sk = ooc_min64(sk, ooc_max64(b, x->KB / b * b));
    if (ooc_min64(s, m) > x->MB || ooc_min64(s, n) > x->NB || ooc_min64(sk, k) > x->KB)
      return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: buffers %lld x %lld (k %lld) unusable for "
                      "tile %lld", (long long)x->MB, (long long)x->NB, (long long)x->KB,
                      (long long)b);
  }
  int64_t st_ = s / b, kt_ = sk / b; /* tiles per block edge, per panel */
  ooc_status_t st = OOC_OK;
  if (!x) { /* the host: the ops table on one worker, on the buffers the host fills */
    ooc_exec_t *he = NULL;
    OOC_TRY(ex_host_create(ctx, a->ops, 1, 0, &he));
    st = gemm_dev_create(he, ooc_min64(s, m), ooc_min64(s, n), ooc_min64(sk, k), 1, 1, &x);
    if (st != OOC_OK) {
      ex_destroy(he);
      return st;
    }
    x->own = 1;
  }
  ooc_exec_t *ex = x->e;
  int ncblk = x->ncblk, nslots = x->nslots;
  int64_t nbi = ooc_cdiv64(cm.count, st_), nbj = ooc_cdiv64(cn.count, st_);
  int64_t nkp = ooc_cdiv64(ak.count, kt_);
  sched_t sc = {.ctx = ctx, .a = a, .x = x, .gs = gs, .nblocks = nbi * nbj,
                .p0 = a->progress0, .p1 = a->progress1 > a->progress0 ? a->progress1 : 1.0,
                .phase = a->phase ? a->phase : "multiply"};
  pend_t pd = {0};
  int slot = 0;
  int64_t seq = 0;
  /* the ends pay where copies and products overlap the host's gathers and stores: on a device */
  int ends = ex->unified ? 0 : (GEMM_END_FIRST | GEMM_END_LAST) & ~a->ends_off;
  /* with several slots the previous block's store starts once they are all queued, so the device
   * has their products to run while the host waits for the first columns to come back */
  int64_t first_store = ooc_min64(nslots - 1, nkp - 1);
  for (int64_t bi = 0; bi < nbi; bi++) {
    for (int64_t q = 0; q < nbj; q++, seq++) {
      /* serpentine over block columns: the B panels read last are read first again */
      int64_t bj = (bi % 2 == 0) ? q : nbj - 1 - q;
      int64_t t0 = bi * st_, t1 = ooc_min64(cm.count, t0 + st_);
      int64_t u0 = bj * st_, u1 = ooc_min64(cn.count, u0 + st_);
      int64_t r0 = part_start(cm, t0), c0 = part_start(cn, u0);
      int64_t mb = ooc_min64(s, m - r0), nb = ooc_min64(s, n - c0);
      int c = (int)(seq % ncblk);
      double *Cb = x->cblk[c];
      cblock_t kblk = {.c = c, .t0 = t0, .t1 = t1, .u0 = u0, .u1 = u1, .r0 = r0, .c0 = c0,
                       .mb = mb, .nb = nb};
      /* a block whose copy back and store no later block overlaps: its last panel by columns */
      int by_cols =
          (ends & GEMM_END_LAST) && (seq == sc.nblocks - 1 || ncblk == 1) && u1 - u0 > 1;
      if (pd.active && pd.c == c) OOC_CHECK(st = store_upto(&sc, &pd, pd.u1)); /* buffer reuse */
      double t_a = ooc_now();
      if (a->beta != 0.0) OOC_CHECK(st = ts_take_tiles(C, t0, t1, u0, u1, Cb, mb));
      OOC_CHECK(st = dev_begin(x, c, mb, nb, a->beta != 0.0));
      gs->t_io += ooc_now() - t_a;
      int prefill = !ex->unified; /* until a prefill finds nothing left to do */
      for (int64_t kq = 0; kq < nkp; kq++) {
        int64_t kp = (seq % 2 == 0) ? kq : nkp - 1 - kq;
        int64_t k0t = kp * kt_, k1t = ooc_min64(ak.count, k0t + kt_);
        int64_t kb = ooc_min64(sk, k - part_start(ak, k0t));
        double t1s = ooc_now(), t_gather = 0;
        if (prefill)
          OOC_CHECK(st = prefill_while_busy(&sc, &pd, (ts_range_t){t0, t1, u0, u1}, slot,
                                            &prefill));
        OOC_CHECK(st = dev_slot_wait(x, slot));
        /* the first panel applies beta (C was read, or zeroed when beta == 0) */
        double beta = (kq == 0 && a->beta != 0.0) ? a->beta : 1.0;
        int cols_now = by_cols && kq == nkp - 1;
        if ((ends & GEMM_END_FIRST) && seq == 0 && kq < gemm_first_panels(nslots)) {
          /* (a first panel that is also the block's last is split by pieces, not columns) */
          OOC_CHECK(st = panel_in_pieces(&sc, &kblk, slot, k0t, k1t, kb, beta, kq == 0,
                                         cols_now, &t_gather));
        } else {
          double t1r = ooc_now();
          OOC_CHECK(st = ts_read_tiles(A, t0, t1, k0t, k1t, x->apan[slot], mb));
          OOC_CHECK(st = ts_read_tiles(B, k0t, k1t, u0, u1, x->bpan[slot], kb));
          t_gather = ooc_now() - t1r;
          if (cols_now) {
            OOC_CHECK(st = dev_upload(x, slot, mb, kb, 0, mb, 0, nb));
            OOC_CHECK(st = multiply_uploaded(&sc, &kblk, slot, kb, beta, 1));
          } else {
            OOC_CHECK(st = dev_panel(x, slot, c, mb, nb, kb, a->alpha, beta));
          }
        }
        slot = (slot + 1) % nslots;
        gs->panels++;
        gs->t_gemm += ooc_now() - t1s - t_gather; /* waiting for the device */
        gs->t_io += t_gather;
        if (pd.active && kq >= first_store) /* a share of the previous block, spread evenly */
          OOC_CHECK(st = store_upto(&sc, &pd,
                                    pd.u0 + ooc_cdiv64((kq + 1 - first_store) * (pd.u1 - pd.u0),
                                                       nkp - first_store)));
      }
      double t_e = ooc_now();
      OOC_CHECK(st = dev_end(x, c, mb, nb));
      gs->t_gemm += ooc_now() - t_e;
      OOC_CHECK(st = store_upto(&sc, &pd, pd.u1)); /* what is left of the previous block */
      pd = (pend_t){.active = 1, .c = c, .t0 = t0, .t1 = t1, .u0 = u0, .u1 = u1, .r0 = r0,
                    .c0 = c0, .mb = mb, .nb = nb, .ucur = u0, .Cb = Cb};
      if (ex->unified) {
        OOC_CHECK(st = store_upto(&sc, &pd, pd.u1));
      } else if (ncblk == 1 || by_cols) { /* column by column: a column's store overlaps the
                                           * next's D2H (and with by_cols the last products) */
        for (int64_t u = u0 + 1; u <= u1; u++) OOC_CHECK(st = store_upto(&sc, &pd, u));
      }
    }
  }
  OOC_CHECK(st = store_upto(&sc, &pd, pd.u1));
  gs->flops += 2.0 * (double)m * (double)n * (double)k;
done:;
  /* nothing in flight may use a buffer once we return (the caller's buffers stay for its next
   * product) */
  ooc_status_t s2 = a->dev ? ex_finish(ex) : gemm_dev_destroy(x);
  return st != OOC_OK ? st : s2;
}

/* ---- probe check ------------------------------------------------------------------------- */

/* y (rows x p) += S t for the source S (rows x cols) streamed by column strips of w; also its
 * column abs sums into norm1 (max). */
static ooc_status_t stream_apply(const ooc_ops_t *o, const ooc_source_t *S, int64_t rows,
                                 int64_t cols, int64_t w, double *buf, const double *t,
                                 int64_t ldt, int64_t p, double *y, double *norm1, double *acc) {
  int64_t bi, bj;
  *norm1 = 0;
  for (int64_t c0 = 0; c0 < cols; c0 += w) {
    int64_t nc = ooc_min64(w, cols - c0);
    OOC_TRY(S->read(S->self, 0, c0, rows, nc, buf, rows));
    memset(acc, 0, (size_t)nc * sizeof(double));
    o->colabs(rows, nc, buf, rows, acc, &bi, &bj);
    for (int64_t c = 0; c < nc; c++) *norm1 = (acc[c] > *norm1 || acc[c] != acc[c]) ? acc[c] : *norm1;
    o->gemm('N', 'N', rows, p, nc, 1.0, buf, rows, t + c0, ldt, 1.0, y, rows);
  }
  return OOC_OK;
}

ooc_status_t gemm_check(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t m, int64_t n, int64_t k,
                        const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *C0,
                        const ooc_source_t *C, double alpha, double beta, double eps, int64_t mem,
                        double *ratio) {
  const int64_t p = 4;
  int64_t rows = ooc_max64(1, ooc_max64(m, k)), cols = ooc_max64(1, ooc_max64(n, k));
  /* the strip buffer, the reader's staging of the same size, and the probe vectors */
  int64_t w = ooc_max64(1, ooc_min64(cols, (mem - 8 * 4 * p * (rows + cols)) / 2 / (8 * rows)));
  ooc_status_t st = OOC_OK;
  double *buf = ooc_malloc(ctx, (size_t)(rows * w) * sizeof(double));
  double *acc = ooc_malloc(ctx, (size_t)w * sizeof(double));
  double *t = ooc_malloc(ctx, (size_t)(ooc_max64(1, n) * p) * sizeof(double));
  double *u = ooc_calloc(ctx, (size_t)(ooc_max64(1, k) * p), sizeof(double));
  double *y = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  double *z = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  double *c = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  *ratio = NAN;
  if (!buf || !acc || !t || !u || !y || !z || !c) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the product's check");
    goto done;
  }
  uint64_t s = 0xD1B54A32D192ED03ULL; /* fixed LCG: reproducible probes */
  for (int64_t i = 0; i < n * p; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t[i] = (s >> 63) ? 1.0 : -1.0;
  }
  double na = 0, nb = 0, nc0 = 0, ncc = 0;
  OOC_CHECK(st = stream_apply(o, B, k, n, w, buf, t, n, p, u, &nb, acc));   /* u = B t */
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.25));
  OOC_CHECK(st = stream_apply(o, A, m, k, w, buf, u, k, p, y, &na, acc));   /* y = A u */
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.5));
  if (C0) OOC_CHECK(st = stream_apply(o, C0, m, n, w, buf, t, n, p, z, &nc0, acc));
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.75));
  OOC_CHECK(st = stream_apply(o, C, m, n, w, buf, t, n, p, c, &ncc, acc));  /* c = C t */
  OOC_CHECK(st = ooc_tick(ctx, "check", 1.0));
  double scale = (double)ooc_max64(k, 1) * eps *
                 (fabs(alpha) * na * nb + (C0 ? fabs(beta) * nc0 : 0.0)) * (double)n;
  double worst = 0;
  for (int64_t q = 0; q < p; q++) {
    double r = 0;
    for (int64_t i = 0; i < m; i++)
      r += fabs(c[i + q * m] - alpha * y[i + q * m] - (C0 ? beta * z[i + q * m] : 0.0));
    double v = scale > 0 ? r / scale : (r == 0 ? 0.0 : INFINITY);
    if (v != v || ncc != ncc) {
      worst = NAN;
      break;
    }
    worst = v > worst ? v : worst;
  }
  *ratio = worst;
done:
  ooc_free(ctx, buf);
  ooc_free(ctx, acc);
  ooc_free(ctx, t);
  ooc_free(ctx, u);
  ooc_free(ctx, y);
  ooc_free(ctx, z);
  ooc_free(ctx, c);
  return st;
}
