/* ocu_gemm.c: the GPU executor of the out-of-core product. See ocu_gemm.h (contract, budgets)
 * and oocgemm.h (the schedule it serves). */
#include "kernels/cuda/ocu_gemm.h"
#include "kernels/cuda/ocu_pin.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define WS_BYTES ((int64_t)32 << 20) /* cuBLAS workspace (what Hopper wants) */
#define NCHUNK 16                    /* a C block comes back in up to this many column chunks */

typedef struct og {
  gemm_exec_t e; /* first: the seam's pointer is ours */
  ooc_ctx_t *ctx;
  cudaStream_t copy, comp, back; /* H2D (panels, C loads); GEMMs; D2H of C blocks */
  cublasHandle_t bl;
  double *dC[GEMM_MAX_CBLK], *dA[GEMM_MAX_SLOTS], *dB[GEMM_MAX_SLOTS];
  void *dWs;
  cudaEvent_t ev_copied[GEMM_MAX_SLOTS], ev_used[GEMM_MAX_SLOTS];
  cudaEvent_t ev_loaded[GEMM_MAX_CBLK], ev_done[GEMM_MAX_CBLK], ev_back[GEMM_MAX_CBLK][NCHUNK];
  int64_t chunk_end[GEMM_MAX_CBLK][NCHUNK]; /* columns back once chunk i's event has passed */
  int nchunks[GEMM_MAX_CBLK];
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
  return 8 * ((int64_t)ncblk * MB * NB + (int64_t)nslots * (MB * KB + KB * NB));
}

static int64_t budget_of(const ocu_config_t *cfg) {
  if (cfg && cfg->gpu_mem > 0) return cfg->gpu_mem;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return 0;
  return (int64_t)fr - ooc_max64((int64_t)1 << 30, (int64_t)tot / 32);
}

/* Largest block edge t (multiple of b, at most top) whose buffers fit both budgets; 0 if none. */
static int64_t largest_block(int64_t m, int64_t n, int64_t k, int64_t b, int64_t top, int64_t kb,
                             int nslots, int ncblk, int64_t dev_budget, int64_t host_max) {
  int64_t best = 0;
  for (int64_t t = b; t <= top; t += b) {
    int64_t bytes =
        ocu_gemm_bytes(ooc_min64(t, m), ooc_min64(t, n), ooc_min64(kb, k), nslots, ncblk);
    if (bytes > dev_budget || (host_max > 0 && bytes > host_max)) break;
    best = t;
  }
  return best;
}

/* Modelled seconds of the product with block s (see ocu_gemm.h): the slowest of the GPU's flops,
 * the host's gather and store, the panels' H2D; plus, with two slots, the H2D that then waits
 * for the gather instead of overlapping it; plus the C stores the device does not overlap (each
 * block's with one buffer, the last block's with two). Rates of the H100 host, where these were
 * measured; only their ratios choose. */
#define RATE_GPU 60e12  /* DGEMM flop/s */
#define RATE_HOST 35e9  /* gather/store bytes/s with the cache's copy threads */
#define RATE_PCIE 50e9  /* pinned H2D bytes/s */
static double model(int64_t m, int64_t n, int64_t k, int64_t s, int nslots, int ncblk) {
  double bi = (double)ooc_cdiv64(m, s), bj = (double)ooc_cdiv64(n, s);
  double ab = 8.0 * (double)k * ((double)m * bj + (double)n * bi), c = 8.0 * (double)m * (double)n;
  double t = fmax(2.0 * (double)m * (double)n * (double)k / RATE_GPU,
                  fmax((ab + c) / RATE_HOST, ab / RATE_PCIE));
  if (nslots < 3) t += ab / RATE_PCIE;
  return t + c / RATE_HOST / (ncblk == 1 ? 1.0 : bi * bj);
}

ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t host_max, int64_t *s, int64_t *kb,
                           int *nslots, int *ncblk) {
  int64_t budget = budget_of(cfg) - WS_BYTES;
  int64_t top = ooc_cdiv64(ooc_max64(m, n), b) * b, kt = ooc_cdiv64(ooc_max64(k, 1), b) * b;
  /* panels of one tile: kb does not change the flop per byte (ocu_gemm.h), so memory goes to the
   * C block, whose edge sets it */
  *kb = ooc_min64(b, kt);
  *s = 0;
  *nslots = 2;
  *ncblk = 1;
  double best = 0;
  for (int nc = 1; nc <= 2; nc++) /* ties keep the earlier: one buffer, two slots */
    for (int ns = 2; ns <= 3; ns++) {
      int64_t t = largest_block(m, n, k, b, top, *kb, ns, nc, budget, host_max);
      if (t == 0) continue;
      double tm = model(m, n, ooc_max64(k, 1), t, ns, nc);
      if (*s == 0 || tm < best * (1 - 1e-9)) {
        best = tm;
        *s = t;
        *nslots = ns;
        *ncblk = nc;
      }
    }
  if (*s == 0) {
    char have[32], hb[32];
    if (host_max > 0 &&
        ocu_gemm_bytes(ooc_min64(b, m), ooc_min64(b, n), ooc_min64(*kb, k), 2, 1) > host_max)
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

static ooc_status_t og_panel(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                             double alpha, double beta) {
  og_t *x = (og_t *)e;
  size_t ba = (size_t)(mb * kb) * sizeof(double), bb = (size_t)(kb * nb) * sizeof(double);
  CU(x, cudaMemcpyAsync(x->dA[slot], e->apan[slot], ba, cudaMemcpyHostToDevice, x->copy));
  CU(x, cudaMemcpyAsync(x->dB[slot], e->bpan[slot], bb, cudaMemcpyHostToDevice, x->copy));
  CU(x, cudaEventRecord(x->ev_copied[slot], x->copy));
  CU(x, cudaStreamWaitEvent(x->comp, x->ev_copied[slot], 0));
  CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_N, mb, nb, kb, &alpha, x->dA[slot], mb,
                       x->dB[slot], kb, &beta, x->dC[c], mb));
  CU(x, cudaEventRecord(x->ev_used[slot], x->comp));
  x->used[slot] = 1;
  x->bytes_h2d += (int64_t)(ba + bb);
  return OOC_OK;
}

/* The block goes back on its own stream, in column chunks with an event each, so the host can
 * finish and store the first columns while the rest are in flight and the next block's GEMMs
 * run on the compute stream. */
static ooc_status_t og_end(gemm_exec_t *e, int c, int64_t mb, int64_t nb) {
  og_t *x = (og_t *)e;
  CU(x, cudaEventRecord(x->ev_done[c], x->comp));
  CU(x, cudaStreamWaitEvent(x->back, x->ev_done[c], 0));
  int64_t per = ooc_max64(1, ooc_cdiv64(nb, NCHUNK));
  int q = 0;
  for (int64_t c0 = 0; c0 < nb; c0 += per, q++) {
    int64_t nc = ooc_min64(per, nb - c0);
    size_t bytes = (size_t)(mb * nc) * sizeof(double);
    CU(x, cudaMemcpyAsync(e->cblk[c] + c0 * mb, x->dC[c] + c0 * mb, bytes, cudaMemcpyDeviceToHost,
                          x->back));
    CU(x, cudaEventRecord(x->ev_back[c][q], x->back));
    x->chunk_end[c][q] = c0 + nc;
    x->bytes_d2h += (int64_t)bytes;
  }
  x->nchunks[c] = q;
  return OOC_OK;
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
    for (int q = 0; q < NCHUNK && err == cudaSuccess; q++)
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
      for (int q = 0; q < NCHUNK; q++)
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
