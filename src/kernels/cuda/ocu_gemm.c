/* ocu_gemm.c: the GPU executor of the out-of-core product. See ocu_gemm.h (contract, budgets)
 * and oocgemm.h (the schedule it serves). */
#include "kernels/cuda/ocu_gemm.h"
#include "kernels/cuda/ocu_pin.h"
#include "solvers/gemm_model.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
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
  cudaStream_t copy, comp, back; /* H2D (panels, C loads); GEMMs; D2H of C blocks */
  cublasHandle_t bl;
  double *dC[GEMM_MAX_CBLK], *dA[GEMM_MAX_SLOTS], *dB[GEMM_MAX_SLOTS];
  void *dWs;
  cudaEvent_t ev_copied[GEMM_MAX_SLOTS], ev_used[GEMM_MAX_SLOTS];
  cudaEvent_t ev_loaded[GEMM_MAX_CBLK], ev_done[GEMM_MAX_CBLK], ev_back[GEMM_MAX_CBLK][NBACK];
  int64_t chunk_end[GEMM_MAX_CBLK][NBACK]; /* columns back once chunk i's event has passed */
  int nchunks[GEMM_MAX_CBLK];
  int64_t queued[GEMM_MAX_CBLK]; /* columns [0, queued) of the block have their copy back queued */
  int used[GEMM_MAX_SLOTS];
  int how_c[GEMM_MAX_CBLK], how_a[GEMM_MAX_SLOTS], how_b[GEMM_MAX_SLOTS]; /* ocu_pin_free's */
  int64_t dev_bytes, pinned_bytes, bytes_h2d, bytes_d2h;
  int have_streams, have_handle, have_events;
} og_t;

#define CU(x, call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      return OOC_FAIL((x)->ctx, OOC_ERR_DEVICE, "CUDA (product): %s failed: %s", #call,            \
                      cudaGetErrorString(e_));                                                     \
  } while (0)
#define CB(x, call)                                                                                \
  do {                                                                                             \
    cublasStatus_t e_ = (call);                                                                    \
    if (e_ != CUBLAS_STATUS_SUCCESS)                                                               \
      return OOC_FAIL((x)->ctx, OOC_ERR_DEVICE, "cuBLAS (product): %s failed: %s", #call,          \
                      cublasGetStatusString(e_));                                                  \
  } while (0)

int64_t ocu_gemm_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk) {
  return gemm_exec_bytes(MB, NB, KB, nslots, ncblk);
}

static int64_t budget_of(const ocu_config_t *cfg) {
  if (cfg && cfg->gpu_mem > 0) return cfg->gpu_mem;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return 0;
  return (int64_t)fr - ooc_max64((int64_t)1 << 30, (int64_t)tot / 32);
}

ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t host_max, int64_t *s, int64_t *kb,
                           int *nslots, int *ncblk) {
  int64_t budget = budget_of(cfg) - WS_BYTES;
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
                    ooc_fmt_bytes(budget + WS_BYTES, have, sizeof have), (long long)b);
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

static ooc_status_t dev_alloc(og_t *x, void **p, int64_t bytes) {
  CU(x, cudaMalloc(p, (size_t)ooc_max64(bytes, 8)));
  x->dev_bytes += bytes;
  return OOC_OK;
}

static ooc_status_t pin_alloc(og_t *x, double **p, int *how, int64_t bytes) {
  bytes = ooc_max64(bytes, 8);
  cudaError_t err = ocu_pin_alloc((void **)p, bytes, how);
  if (err != cudaSuccess) {
    char b[32];
    return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "pinned allocation of %s (product buffers) failed: "
                    "%s", ooc_fmt_bytes(bytes, b, sizeof b), cudaGetErrorString(err));
  }
  x->pinned_bytes += bytes;
  x->ctx->host_bytes += bytes; /* pinned memory counts against --host-mem */
  if (x->ctx->host_bytes > x->ctx->host_peak) x->ctx->host_peak = x->ctx->host_bytes;
  return OOC_OK;
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
  *out = e;
  int64_t budget = budget_of(cfg), need = ocu_gemm_bytes(MB, NB, KB, e->nslots, ncblk) + WS_BYTES;
  if (need > budget) {
    char nb[32], have[32];
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem %s is too small for %d product block(s) of "
                    "%lld x %lld with panels of %lld (%s needed)",
                    ooc_fmt_bytes(budget, have, sizeof have), ncblk, (long long)MB, (long long)NB,
                    (long long)KB, ooc_fmt_bytes(need, nb, sizeof nb));
  }
  CU(x, cudaSetDevice(0));
  CU(x, cudaStreamCreateWithFlags(&x->copy, cudaStreamNonBlocking));
  CU(x, cudaStreamCreateWithFlags(&x->comp, cudaStreamNonBlocking));
  CU(x, cudaStreamCreateWithFlags(&x->back, cudaStreamNonBlocking));
  x->have_streams = 1;
  CB(x, cublasCreate(&x->bl));
  x->have_handle = 1;
  CB(x, cublasSetStream(x->bl, x->comp));
  OOC_TRY(dev_alloc(x, &x->dWs, WS_BYTES));
  CB(x, cublasSetWorkspace(x->bl, x->dWs, (size_t)WS_BYTES));
  for (int c = 0; c < ncblk; c++) {
    OOC_TRY(dev_alloc(x, (void **)&x->dC[c], 8 * MB * NB));
    OOC_TRY(pin_alloc(x, &e->cblk[c], &x->how_c[c], 8 * MB * NB));
  }
  for (int s = 0; s < e->nslots; s++) {
    OOC_TRY(dev_alloc(x, (void **)&x->dA[s], 8 * MB * KB));
    OOC_TRY(dev_alloc(x, (void **)&x->dB[s], 8 * KB * NB));
    OOC_TRY(pin_alloc(x, &e->apan[s], &x->how_a[s], 8 * MB * KB));
    OOC_TRY(pin_alloc(x, &e->bpan[s], &x->how_b[s], 8 * KB * NB));
  }
  /* all events at once (the destroy path frees them by one flag) */
  cudaError_t err = cudaSuccess;
  for (int s = 0; s < GEMM_MAX_SLOTS && err == cudaSuccess; s++) {
    err = cudaEventCreateWithFlags(&x->ev_copied[s], cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&x->ev_used[s], cudaEventDisableTiming);
  }
  for (int c = 0; c < GEMM_MAX_CBLK && err == cudaSuccess; c++) {
    err = cudaEventCreateWithFlags(&x->ev_loaded[c], cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&x->ev_done[c], cudaEventDisableTiming);
    for (int q = 0; q < NBACK && err == cudaSuccess; q++)
      err = cudaEventCreateWithFlags(&x->ev_back[c][q], cudaEventDisableTiming);
  }
  x->have_events = 1;
  if (err != cudaSuccess)
    return OOC_FAIL(ctx, OOC_ERR_DEVICE, "CUDA (product): creating events failed: %s",
                    cudaGetErrorString(err));
  return OOC_OK;
}

void ocu_gemm_stats(gemm_exec_t *e, ocu_stats_t *s) {
  og_t *x = (og_t *)e;
  memset(s, 0, sizeof *s);
  if (!x) return;
  s->dev_peak = x->dev_bytes;
  s->pinned_bytes = x->pinned_bytes;
  s->bytes_h2d = x->bytes_h2d;
  s->bytes_d2h = x->bytes_d2h;
  s->streams = 3;
  s->nslots = e->nslots;
}

ooc_status_t ocu_gemm_destroy(gemm_exec_t *e) {
  og_t *x = (og_t *)e;
  if (!x) return OOC_OK;
  ooc_status_t st = OOC_OK;
  if (x->have_streams) {
    cudaError_t err = cudaStreamSynchronize(x->comp);
    if (err == cudaSuccess) err = cudaStreamSynchronize(x->copy);
    if (err == cudaSuccess) err = cudaStreamSynchronize(x->back);
    if (err != cudaSuccess)
      st = OOC_FAIL(x->ctx, OOC_ERR_DEVICE, "CUDA (product): the last copies failed: %s",
                    cudaGetErrorString(err));
  }
  if (x->have_events) { /* never-created handles are NULL: destroying those is harmless */
    for (int s = 0; s < GEMM_MAX_SLOTS; s++) {
      if (x->ev_copied[s]) cudaEventDestroy(x->ev_copied[s]);
      if (x->ev_used[s]) cudaEventDestroy(x->ev_used[s]);
    }
    for (int c = 0; c < GEMM_MAX_CBLK; c++) {
      if (x->ev_loaded[c]) cudaEventDestroy(x->ev_loaded[c]);
      if (x->ev_done[c]) cudaEventDestroy(x->ev_done[c]);
      for (int q = 0; q < NBACK; q++)
        if (x->ev_back[c][q]) cudaEventDestroy(x->ev_back[c][q]);
    }
  }
  for (int c = 0; c < GEMM_MAX_CBLK; c++) {
    ocu_pin_free(e->cblk[c], x->how_c[c]);
    cudaFree(x->dC[c]);
  }
  for (int s = 0; s < GEMM_MAX_SLOTS; s++) {
    ocu_pin_free(e->apan[s], x->how_a[s]);
    ocu_pin_free(e->bpan[s], x->how_b[s]);
    cudaFree(x->dA[s]);
    cudaFree(x->dB[s]);
  }
  x->ctx->host_bytes -= x->pinned_bytes;
  cudaFree(x->dWs);
  if (x->have_handle) cublasDestroy(x->bl);
  if (x->have_streams) {
    cudaStreamDestroy(x->copy);
    cudaStreamDestroy(x->comp);
    cudaStreamDestroy(x->back);
  }
  ooc_free(x->ctx, x);
  return st;
}
