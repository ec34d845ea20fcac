/* ocu_gemm.c: the GPU executor of the out-of-core product. See ocu_gemm.h (contract, budgets)
 * and oocgemm.h (the schedule it serves). */
#include "kernels/cuda/ocu_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define WS_BYTES ((int64_t)32 << 20) /* cuBLAS workspace (what Hopper wants) */

typedef struct og {
  gemm_exec_t e; /* first: the seam's pointer is ours */
  ooc_ctx_t *ctx;
  cudaStream_t copy, comp;
  cublasHandle_t bl;
  double *dC, *dA[GEMM_MAX_SLOTS], *dB[GEMM_MAX_SLOTS];
  void *dWs;
  cudaEvent_t ev_copied[GEMM_MAX_SLOTS], ev_used[GEMM_MAX_SLOTS];
  int used[GEMM_MAX_SLOTS];
  int64_t dev_bytes, pinned_bytes, bytes_h2d, bytes_d2h;
  int have_streams, have_handle, nevents;
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

int64_t ocu_gemm_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots) {
  return 8 * (MB * NB + (int64_t)nslots * (MB * KB + KB * NB));
}

static int64_t budget_of(const ocu_config_t *cfg) {
  if (cfg && cfg->gpu_mem > 0) return cfg->gpu_mem;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return 0;
  return (int64_t)fr - ooc_max64((int64_t)1 << 30, (int64_t)tot / 32);
}

ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t *s, int64_t *kb) {
  int64_t budget = budget_of(cfg) - WS_BYTES;
  int64_t top = ooc_cdiv64(ooc_max64(m, n), b) * b, kt = ooc_cdiv64(ooc_max64(k, 1), b) * b;
  *s = 0;
  /* panels of one tile: kb does not change the flop per byte (ocu_gemm.h), so memory goes to the
   * C block, whose edge sets it */
  *kb = ooc_min64(b, kt);
  for (int64_t t = b; t <= top; t += b) {
    int64_t MB = ooc_min64(t, m), NB = ooc_min64(t, n);
    if (ocu_gemm_bytes(MB, NB, ooc_min64(*kb, k), 2) > budget) break;
    *s = t;
  }
  if (*s == 0) {
    char have[32];
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem %s is too small for a product block of one "
                    "tile (%lld) with two panel buffers; raise --gpu-mem or lower --tile",
                    ooc_fmt_bytes(budget + WS_BYTES, have, sizeof have), (long long)b);
  }
  return OOC_OK;
}

static ooc_status_t og_begin(gemm_exec_t *e, int64_t mb, int64_t nb, int load) {
  og_t *x = (og_t *)e;
  size_t bytes = (size_t)(mb * nb) * sizeof(double);
  if (load) {
    CU(x, cudaMemcpyAsync(x->dC, e->cblk, bytes, cudaMemcpyHostToDevice, x->comp));
    x->bytes_h2d += (int64_t)bytes;
  } else {
    CU(x, cudaMemsetAsync(x->dC, 0, bytes, x->comp));
  }
  return OOC_OK;
}

static ooc_status_t og_slot_wait(gemm_exec_t *e, int slot) {
  og_t *x = (og_t *)e;
  if (x->used[slot]) CU(x, cudaEventSynchronize(x->ev_used[slot]));
  x->used[slot] = 0;
  return OOC_OK;
}

static ooc_status_t og_panel(gemm_exec_t *e, int slot, int64_t mb, int64_t nb, int64_t kb,
                             double alpha, double beta) {
  og_t *x = (og_t *)e;
  size_t ba = (size_t)(mb * kb) * sizeof(double), bb = (size_t)(kb * nb) * sizeof(double);
  CU(x, cudaMemcpyAsync(x->dA[slot], e->apan[slot], ba, cudaMemcpyHostToDevice, x->copy));
  CU(x, cudaMemcpyAsync(x->dB[slot], e->bpan[slot], bb, cudaMemcpyHostToDevice, x->copy));
  CU(x, cudaEventRecord(x->ev_copied[slot], x->copy));
  CU(x, cudaStreamWaitEvent(x->comp, x->ev_copied[slot], 0));
  CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_N, mb, nb, kb, &alpha, x->dA[slot], mb,
                       x->dB[slot], kb, &beta, x->dC, mb));
  CU(x, cudaEventRecord(x->ev_used[slot], x->comp));
  x->used[slot] = 1;
  x->bytes_h2d += (int64_t)(ba + bb);
  return OOC_OK;
}

static ooc_status_t og_end(gemm_exec_t *e, int64_t mb, int64_t nb) {
  og_t *x = (og_t *)e;
  size_t bytes = (size_t)(mb * nb) * sizeof(double);
  CU(x, cudaMemcpyAsync(e->cblk, x->dC, bytes, cudaMemcpyDeviceToHost, x->comp));
  CU(x, cudaStreamSynchronize(x->comp));
  x->bytes_d2h += (int64_t)bytes;
  return OOC_OK;
}

static ooc_status_t dev_alloc(og_t *x, void **p, int64_t bytes) {
  CU(x, cudaMalloc(p, (size_t)ooc_max64(bytes, 8)));
  x->dev_bytes += bytes;
  return OOC_OK;
}

static ooc_status_t pin_alloc(og_t *x, double **p, int64_t bytes) {
  bytes = ooc_max64(bytes, 8);
  cudaError_t err = cudaHostAlloc((void **)p, (size_t)bytes, cudaHostAllocDefault);
  if (err != cudaSuccess) {
    *p = NULL;
    char b[32];
    return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "cudaHostAlloc of %s (pinned, product buffers) failed: "
                    "%s", ooc_fmt_bytes(bytes, b, sizeof b), cudaGetErrorString(err));
  }
  x->pinned_bytes += bytes;
  x->ctx->host_bytes += bytes; /* pinned memory counts against --host-mem */
  if (x->ctx->host_bytes > x->ctx->host_peak) x->ctx->host_peak = x->ctx->host_bytes;
  return OOC_OK;
}

ooc_status_t ocu_gemm_create(ooc_ctx_t *ctx, int64_t MB, int64_t NB, int64_t KB,
                             const ocu_config_t *cfg, gemm_exec_t **out) {
  *out = NULL;
  og_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the GPU product");
  x->ctx = ctx;
  gemm_exec_t *e = &x->e;
  e->nslots = 2;
  e->MB = MB;
  e->NB = NB;
  e->KB = KB;
  e->begin = og_begin;
  e->slot_wait = og_slot_wait;
  e->panel = og_panel;
  e->end = og_end;
  *out = e;
  int64_t budget = budget_of(cfg);
  if (ocu_gemm_bytes(MB, NB, KB, e->nslots) + WS_BYTES > budget) {
    char need[32], have[32];
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem %s is too small for a %lld x %lld product "
                    "block with panels of %lld (%s needed)",
                    ooc_fmt_bytes(budget, have, sizeof have), (long long)MB, (long long)NB,
                    (long long)KB,
                    ooc_fmt_bytes(ocu_gemm_bytes(MB, NB, KB, e->nslots) + WS_BYTES, need,
                                  sizeof need));
  }
  CU(x, cudaSetDevice(0));
  CU(x, cudaStreamCreateWithFlags(&x->copy, cudaStreamNonBlocking));
  CU(x, cudaStreamCreateWithFlags(&x->comp, cudaStreamNonBlocking));
  x->have_streams = 1;
  CB(x, cublasCreate(&x->bl));
  x->have_handle = 1;
  CB(x, cublasSetStream(x->bl, x->comp));
  OOC_TRY(dev_alloc(x, &x->dWs, WS_BYTES));
  CB(x, cublasSetWorkspace(x->bl, x->dWs, (size_t)WS_BYTES));
  OOC_TRY(dev_alloc(x, (void **)&x->dC, 8 * MB * NB));
  OOC_TRY(pin_alloc(x, &e->cblk, 8 * MB * NB));
  for (int s = 0; s < e->nslots; s++) {
    OOC_TRY(dev_alloc(x, (void **)&x->dA[s], 8 * MB * KB));
    OOC_TRY(dev_alloc(x, (void **)&x->dB[s], 8 * KB * NB));
    OOC_TRY(pin_alloc(x, &e->apan[s], 8 * MB * KB));
    OOC_TRY(pin_alloc(x, &e->bpan[s], 8 * KB * NB));
    CU(x, cudaEventCreateWithFlags(&x->ev_copied[s], cudaEventDisableTiming));
    CU(x, cudaEventCreateWithFlags(&x->ev_used[s], cudaEventDisableTiming));
    x->nevents = s + 1;
  }
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
  s->streams = 2;
  s->nslots = e->nslots;
}

ooc_status_t ocu_gemm_destroy(gemm_exec_t *e) {
  og_t *x = (og_t *)e;
  if (!x) return OOC_OK;
  ooc_status_t st = OOC_OK;
  if (x->have_streams) {
    cudaError_t err = cudaStreamSynchronize(x->comp);
    if (err == cudaSuccess) err = cudaStreamSynchronize(x->copy);
    if (err != cudaSuccess)
      st = OOC_FAIL(x->ctx, OOC_ERR_DEVICE, "CUDA (product): the last copies failed: %s",
                    cudaGetErrorString(err));
  }
  for (int s = 0; s < x->nevents; s++) {
    cudaEventDestroy(x->ev_copied[s]);
    cudaEventDestroy(x->ev_used[s]);
  }
  double *pins[1 + 2 * GEMM_MAX_SLOTS] = {e->cblk};
  for (int s = 0; s < GEMM_MAX_SLOTS; s++) {
    pins[1 + 2 * s] = e->apan[s];
    pins[2 + 2 * s] = e->bpan[s];
  }
  for (int i = 0; i < 1 + 2 * GEMM_MAX_SLOTS; i++)
    if (pins[i]) cudaFreeHost(pins[i]);
  x->ctx->host_bytes -= x->pinned_bytes;
  cudaFree(x->dC);
  cudaFree(x->dWs);
  for (int s = 0; s < GEMM_MAX_SLOTS; s++) {
    cudaFree(x->dA[s]);
    cudaFree(x->dB[s]);
  }
  if (x->have_handle) cublasDestroy(x->bl);
  if (x->have_streams) {
    cudaStreamDestroy(x->copy);
    cudaStreamDestroy(x->comp);
  }
  ooc_free(x->ctx, x);
  return st;
}
