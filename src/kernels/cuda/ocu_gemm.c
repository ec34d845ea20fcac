/* ocu_gemm.c: the GPU executor of the out-of-core product. See ocu_gemm.h (contract, budgets)
 * and oocgemm.h (the schedule it serves). */
#include "kernels/cuda/ocu_gemm.h"
#include "kernels/cuda/ocu_rt.h"
#include "solvers/gemm_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WS_BYTES ((int64_t)32 << 20) /* cuBLAS workspace (what Hopper wants) */
#define NCHUNK 16                    /* a C block comes back in chunks of ~nb / NCHUNK columns */
/* chunk events per C buffer: the chunks of end() plus, with end_cols, at most one short chunk
 * per column group and one for what end() copies after them */
#define NBACK (NCHUNK + GEMM_MAX_PIECES + 1)

typedef struct og {
  gemm_exec_t e; /* first: the seam's pointer is ours */
  ooc_ctx_t *ctx;
  ocu_rt_t rt;                   /* pool, pinned buffers, streams, events, handle */
  cudaStream_t copy, comp, back; /* H2D (panels, C loads); GEMMs; D2H of C blocks */
  cublasHandle_t bl;
  double *dC[GEMM_MAX_CBLK], *dA[GEMM_MAX_SLOTS], *dB[GEMM_MAX_SLOTS];
  cudaEvent_t ev_copied[GEMM_MAX_SLOTS], ev_used[GEMM_MAX_SLOTS];
  cudaEvent_t ev_loaded[GEMM_MAX_CBLK], ev_done[GEMM_MAX_CBLK], ev_back[GEMM_MAX_CBLK][NBACK];
  int64_t chunk_end[GEMM_MAX_CBLK][NBACK]; /* columns back once chunk i's event has passed */
  int nchunks[GEMM_MAX_CBLK];
  int64_t queued[GEMM_MAX_CBLK]; /* columns [0, queued) of the block have their copy back queued */
  int used[GEMM_MAX_SLOTS];
  int64_t bytes_h2d, bytes_d2h;
} og_t;

int64_t ocu_gemm_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk) {
  return gemm_exec_bytes(MB, NB, KB, nslots, ncblk);
}

ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t host_max, int64_t *s, int64_t *kb,
                           int *nslots, int *ncblk) {
  /* the pool rounds each buffer up to OCU_RT_ALIGN bytes: keep room for that */
  int64_t budget = ocu_rt_budget(cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0) - WS_BYTES -
                   OCU_RT_ALIGN * (GEMM_MAX_CBLK + 2 * GEMM_MAX_SLOTS);
  int64_t room = host_max > 0 ? ooc_min64(budget, host_max) : budget;
  gemm_rates_t r = gemm_rates_gpu();
  gemm_shape_t best;
  /* the ends this executor has (all of them: upload, part, end_cols); beta is not known here
   * and moves every plan alike */
  int found = gemm_model_plan(m, n, k, b, room, GEMM_END_FIRST | GEMM_END_LAST, 0, &r, &best,
                              NULL);
  *s = best.s;
  *kb = best.kb;
  *nslots = found ? best.nslots : 2;
  *ncblk = found ? best.ncblk : 1;
  if (!found) {
    char have[32], hb[32];
    int64_t kb1 = ooc_min64(b, ooc_cdiv64(ooc_max64(k, 1), b) * b);
    if (host_max > 0 &&
        ocu_gemm_bytes(ooc_min64(b, m), ooc_min64(b, n), ooc_min64(kb1, k), 2, 1) > host_max)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem leaves %s for the GPU product's pinned "
                      "buffers: too small for a block of one tile (%lld) with two panel buffers; "
                      "raise --host-mem or lower --tile", ooc_fmt_bytes(host_max, hb, sizeof hb),
                      (long long)b);
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem %s is too small for a product block of one "
                    "tile (%lld) with two panel buffers; raise --gpu-mem or lower --tile",
                    ooc_fmt_bytes(ocu_rt_budget(cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0), have, sizeof have),
                    (long long)b);
  }
  return OOC_OK;
}

static ooc_status_t og_begin(gemm_exec_t *e, int c, int64_t mb, int64_t nb, int load) {
  og_t *x = (og_t *)e;
  size_t bytes = (size_t)(mb * nb) * sizeof(double);
  x->nchunks[c] = 0;
  x->queued[c] = 0;
  if (load) { /* on the copy stream, behind the panels already queued; the GEMMs wait for it */
    CU(x, cudaMemcpyAsync(x->dC[c], e->cblk[c], bytes, cudaMemcpyHostToDevice, x->copy));
    CU(x, cudaEventRecord(x->ev_loaded[c], x->copy));
    CU(x, cudaStreamWaitEvent(x->comp, x->ev_loaded[c], 0));
    x->bytes_h2d += (int64_t)bytes;
  } else {
    CU(x, cudaMemsetAsync(x->dC[c], 0, bytes, x->comp));
  }
  return OOC_OK;
}

static ooc_status_t og_slot_wait(gemm_exec_t *e, int slot) {
  og_t *x = (og_t *)e;
  if (x->used[slot]) CU(x, cudaEventSynchronize(x->ev_used[slot]));
  x->used[slot] = 0;
  return OOC_OK;
}

static int og_slot_busy(gemm_exec_t *e, int slot) {
  og_t *x = (og_t *)e;
  if (!x->used[slot] || cudaEventQuery(x->ev_used[slot]) != cudaErrorNotReady)
    return 0; /* free, or an error og_slot_wait will report */
  (void)cudaGetLastError(); /* "not ready" is no error: leave none for a later launch check */
  return 1;
}

/* Rows [i0, i1) of the slot's A panel (a strided piece of the column-major mb x kb panel, unless
 * it is all of it) and columns [j0, j1) of its B panel (contiguous) to the device; the GEMMs that
 * read them wait for ev_copied, recorded after the latest piece. */
static ooc_status_t og_upload(gemm_exec_t *e, int slot, int64_t mb, int64_t nb, int64_t kb,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  og_t *x = (og_t *)e;
  (void)nb;
  if (i1 > i0 && kb > 0) {
    size_t w = (size_t)(i1 - i0) * sizeof(double), pitch = (size_t)mb * sizeof(double);
    if (i0 == 0 && i1 == mb)
      CU(x, cudaMemcpyAsync(x->dA[slot], e->apan[slot], w * (size_t)kb, cudaMemcpyHostToDevice,
                            x->copy));
    else
      CU(x, cudaMemcpy2DAsync(x->dA[slot] + i0, pitch, e->apan[slot] + i0, pitch, w, (size_t)kb,
                              cudaMemcpyHostToDevice, x->copy));
    x->bytes_h2d += (int64_t)w * kb;
  }
  if (j1 > j0 && kb > 0) {
    size_t bytes = (size_t)((j1 - j0) * kb) * sizeof(double);
    CU(x, cudaMemcpyAsync(x->dB[slot] + j0 * kb, e->bpan[slot] + j0 * kb, bytes,
                          cudaMemcpyHostToDevice, x->copy));
    x->bytes_h2d += (int64_t)bytes;
  }
  CU(x, cudaEventRecord(x->ev_copied[slot], x->copy));
  return OOC_OK;
}

static ooc_status_t og_part(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                            int64_t i0, int64_t i1, int64_t j0, int64_t j1, double alpha,
                            double beta, int last) {
  og_t *x = (og_t *)e;
  (void)nb;
  if (i1 > i0 && j1 > j0) {
    CU(x, cudaStreamWaitEvent(x->comp, x->ev_copied[slot], 0));
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_N, i1 - i0, j1 - j0, kb, &alpha,
                         x->dA[slot] + i0, mb, x->dB[slot] + j0 * kb, kb, &beta,
                         x->dC[c] + i0 + j0 * mb, mb));
  }
  if (last) {
    CU(x, cudaEventRecord(x->ev_used[slot], x->comp));
    x->used[slot] = 1;
  }
  return OOC_OK;
}

static ooc_status_t og_panel(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                             double alpha, double beta) {
  OOC_TRY(og_upload(e, slot, mb, nb, kb, 0, mb, 0, nb));
  return og_part(e, slot, c, mb, nb, kb, 0, mb, 0, nb, alpha, beta, 1);
}

/* Columns [j0, j1) of block c go back on their own stream once the compute stream has queued
 * their products, in chunks of ~nb / NCHUNK columns with an event each, so the host can finish
 * and store the first columns while the rest are in flight and GEMMs run on the compute stream. */
static ooc_status_t og_end_cols(gemm_exec_t *e, int c, int64_t mb, int64_t nb, int64_t j0,
                                int64_t j1) {
  og_t *x = (og_t *)e;
  if (j0 != x->queued[c] || j1 < j0 || j1 > nb)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "GPU product: columns [%lld, %lld) of a block of "
                    "%lld sent back out of order (%lld queued)", (long long)j0, (long long)j1,
                    (long long)nb, (long long)x->queued[c]);
  if (j1 == j0) return OOC_OK;
  CU(x, cudaEventRecord(x->ev_done[c], x->comp));
  CU(x, cudaStreamWaitEvent(x->back, x->ev_done[c], 0));
  int64_t per = ooc_max64(1, ooc_cdiv64(nb, NCHUNK));
  for (int64_t c0 = j0; c0 < j1; c0 += per) {
    int q = x->nchunks[c];
    if (q >= NBACK)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "GPU product: more than %d chunks for a block "
                      "of %lld columns", NBACK, (long long)nb);
    int64_t nc = ooc_min64(per, j1 - c0);
    size_t bytes = (size_t)(mb * nc) * sizeof(double);
    CU(x, cudaMemcpyAsync(e->cblk[c] + c0 * mb, x->dC[c] + c0 * mb, bytes, cudaMemcpyDeviceToHost,
                          x->back));
    CU(x, cudaEventRecord(x->ev_back[c][q], x->back));
    x->chunk_end[c][q] = c0 + nc;
    x->nchunks[c] = q + 1;
    x->bytes_d2h += (int64_t)bytes;
  }
  x->queued[c] = j1;
  return OOC_OK;
}

static ooc_status_t og_end(gemm_exec_t *e, int c, int64_t mb, int64_t nb) {
  return og_end_cols(e, c, mb, nb, ((og_t *)e)->queued[c], nb);
}

static ooc_status_t og_fetch(gemm_exec_t *e, int c, int64_t cols) {
  og_t *x = (og_t *)e;
  for (int q = 0; q < x->nchunks[c]; q++)
    if (x->chunk_end[c][q] >= cols || q == x->nchunks[c] - 1) {
      CU(x, cudaEventSynchronize(x->ev_back[c][q]));
      break;
    }
  return OOC_OK;
}

/* Streams, the handle, the buffers (device and pinned) and the events, all from the runtime. */
static ooc_status_t create(og_t *x) {
  ocu_rt_t *rt = &x->rt;
  gemm_exec_t *e = &x->e;
  int64_t MB = e->MB, NB = e->NB, KB = e->KB;
  unsigned nt = cudaEventDisableTiming;
  OOC_TRY(ocu_rt_open(rt));
  OOC_TRY(ocu_rt_stream(rt, &x->copy, "H2D"));
  OOC_TRY(ocu_rt_stream(rt, &x->comp, "compute"));
  OOC_TRY(ocu_rt_stream(rt, &x->back, "D2H"));
  OOC_TRY(ocu_rt_blas(rt, &x->bl, x->comp, WS_BYTES));
  for (int c = 0; c < e->ncblk; c++) {
    OOC_TRY(ocu_rt_dalloc(rt, &x->dC[c], 8 * MB * NB, "a product block"));
    OOC_TRY(ocu_rt_halloc(rt, &e->cblk[c], 8 * MB * NB, "a product block"));
  }
  for (int s = 0; s < e->nslots; s++) {
    OOC_TRY(ocu_rt_dalloc(rt, &x->dA[s], 8 * MB * KB, "a panel of A"));
    OOC_TRY(ocu_rt_dalloc(rt, &x->dB[s], 8 * KB * NB, "a panel of B"));
    OOC_TRY(ocu_rt_halloc(rt, &e->apan[s], 8 * MB * KB, "a panel of A"));
    OOC_TRY(ocu_rt_halloc(rt, &e->bpan[s], 8 * KB * NB, "a panel of B"));
  }
  OOC_TRY(ocu_rt_events(rt, x->ev_copied, GEMM_MAX_SLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_used, GEMM_MAX_SLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_loaded, GEMM_MAX_CBLK, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_done, GEMM_MAX_CBLK, nt));
  for (int c = 0; c < GEMM_MAX_CBLK; c++) OOC_TRY(ocu_rt_events(rt, x->ev_back[c], NBACK, nt));
  return ocu_rt_clock(rt);
}

ooc_status_t ocu_gemm_create(ooc_ctx_t *ctx, int64_t MB, int64_t NB, int64_t KB, int nslots,
                             int ncblk, const ocu_config_t *cfg, gemm_exec_t **out) {
  *out = NULL;
  if (ncblk < 1 || ncblk > GEMM_MAX_CBLK || nslots < 1 || nslots > GEMM_MAX_SLOTS)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "GPU product: %d C block buffers, %d slots asked for",
                    ncblk, nslots);
  og_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the GPU product");
  x->ctx = ctx;
  gemm_exec_t *e = &x->e;
  e->nslots = nslots;
  e->ncblk = ncblk;
  e->MB = MB;
  e->NB = NB;
  e->KB = KB;
  e->begin = og_begin;
  e->slot_wait = og_slot_wait;
  e->panel = og_panel;
  e->end = og_end;
  e->fetch = og_fetch;
  e->slot_busy = og_slot_busy;
  e->upload = og_upload;
  e->part = og_part;
  e->end_cols = og_end_cols;
  ooc_status_t st = ocu_rt_init(&x->rt, ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, NULL, 0,
                                "oocsolve product (cuda)");
  if (st == OOC_OK) st = create(x);
  if (st == OOC_OK) *out = e;
  else ocu_gemm_destroy(e);
  return st;
}

void ocu_gemm_stats(gemm_exec_t *e, ocu_stats_t *s) {
  og_t *x = (og_t *)e;
  memset(s, 0, sizeof *s);
  if (!x) return;
  memcpy(s->device, x->rt.device, sizeof s->device);
  s->dev_budget = x->rt.budget;
  s->dev_peak = x->rt.peak;
  s->dev_allocs = x->rt.nalloc;
  s->pinned_bytes = x->rt.pinned;
  s->bytes_h2d = x->bytes_h2d;
  s->bytes_d2h = x->bytes_d2h;
  s->streams = 3;
  s->nslots = e->nslots;
}

ooc_status_t ocu_gemm_destroy(gemm_exec_t *e) {
  og_t *x = (og_t *)e;
  if (!x) return OOC_OK;
  ooc_status_t st = ocu_rt_fini(&x->rt); /* waits for the last copies; their failure is st */
  ooc_free(x->ctx, x);
  return st;
}
