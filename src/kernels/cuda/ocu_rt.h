/*
 * ocu_rt.h: the CUDA runtime the CUDA executor (exec_cuda.c, which every method runs on) is
 * built on, written once. One ocu_rt_t is the state of one executor on one device: several
 * devices are several ocu_rt_t (nothing here is global).
 *
 * Contract
 * - Lifetime: ocu_rt_init (no CUDA call: the pool's rules work without a device, which is how
 *   tests/test_cuda_rt.c checks them on a machine without a GPU), ocu_rt_open (selects the
 *   device, names it, resolves the default budget), then allocations, streams, events and
 *   handles, ocu_rt_clock at the end of a successful creation (the trace's time base), and
 *   ocu_rt_fini, which waits for the device, writes the trace if one was asked for and the
 *   creation got to ocu_rt_clock, and releases everything the runtime handed out, whatever state
 *   a failed creation left. After ocu_rt_fini the context's host bytes and stream count are back
 *   where they were before ocu_rt_init.
 * - Device pool (ocu_rt_dalloc): every device buffer comes from here. The byte budget
 *   (--gpu-mem; 0 = free memory minus max(1 GiB, 1/32 of the card), ocu_rt_budget) is enforced:
 *   a request that would pass it fails with OOC_ERR_BUDGET naming the budget, the request, what
 *   it was for and the bytes in use, before any CUDA call. Then the fault seam (base.h,
 *   OOC_FAULT_DEVICE) is asked; an injected fault and a real cudaMalloc failure both give
 *   OOC_ERR_DEVICE ("device out of memory: ..."). Sizes are rounded up to OCU_RT_ALIGN bytes and
 *   counted so; the peak is kept.
 * - Pinned host memory (ocu_rt_halloc): asks the same seam (OOC_FAULT_DEVICE: device and pinned
 *   allocations are one sequence of calls, so "fail the Nth" reaches each of both), then
 *   ocu_pin_alloc; failures are OOC_ERR_NOMEM. The bytes are charged to the context's host count
 *   and peak (pinned memory counts against --host-mem) and given back by ocu_rt_fini.
 * - ocu_rt_release gives one device or pinned buffer back before ocu_rt_fini (the executor's
 *   ex_free): uncounted, uncharged; cudaFree waits for the device. A pointer the runtime did not
 *   hand out is OOC_ERR_INTERNAL (nothing freed).
 * - Streams (ocu_rt_stream): non-blocking, created on the runtime's device, each counted in the
 *   context's stream counter (the leak check of docs/RELIABILITY.md) and destroyed (uncounted)
 *   by ocu_rt_fini. A stream's index (0, 1, ... in creation order) is its trace row. urgent:
 *   at the device's greatest stream priority (its kernels' blocks are scheduled before those of
 *   streams at the default one as SMs free up), else the default.
 * - Events (ocu_rt_events), cuBLAS handles (ocu_rt_blas: bound to a stream, with a workspace from
 *   the pool, so cuBLAS allocates none outside the budget) and the cuSOLVER handle
 *   (ocu_rt_solver): created here, destroyed by ocu_rt_fini.
 * - Errors: CU / CB / CS (x, call) check a CUDA / cuBLAS / cuSOLVER call and return
 *   OOC_ERR_DEVICE from the calling function, recorded with the caller's file:line and a message
 *   naming the library, the call as written and the library's reason; x is anything with a
 *   `ctx` member (an executor, or the runtime itself).
 * - Timing (when timing or a trace is asked for): ocu_rt_span / ocu_rt_span_end bracket work
 *   queued on stream s with two events (safe from several threads: one mutex);
 *   ocu_rt_host_span records a host interval (trace row 0); ocu_rt_times gives the busy time of
 *   copies and of kernels (unions of intervals), their overlap and the span; ocu_rt_sum the summed
 *   durations of the device spans of one name or one kind. Span kinds: OCU_SPAN_COPY, and
 *   OCU_SPAN_KERNEL or any larger number an executor defines (all count as kernels).
 * - Trace (Chrome/Perfetto JSON, ph "X", microseconds): written by ocu_rt_fini to the path given
 *   to ocu_rt_init; a write failure is its OOC_ERR_IO status.
 */
#ifndef OOC_OCU_RT_H
#define OOC_OCU_RT_H

#include "base/base.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <pthread.h>

#define OCU_RT_ALIGN 256
#define OCU_RT_MAXBUF 256   /* buffers of one runtime (the executor of exec.h hands them to methods) */
#define OCU_RT_MAXSTREAMS 8
#define OCU_RT_MAXBLAS 10
#define OCU_RT_ROUND(x) (((x) + OCU_RT_ALIGN - 1) / OCU_RT_ALIGN * OCU_RT_ALIGN)

enum { OCU_SPAN_COPY = 0, OCU_SPAN_KERNEL = 1 };

typedef struct ocu_span {
  cudaEvent_t a, b;
  int tid; /* 0 host, 1 + stream index */
  int kind;
  const char *name;
  int64_t bytes;
  double flops;
  double t0, t1; /* microseconds since the base */
} ocu_span_t;

typedef struct ocu_rt_buf {
  void *p;
  int64_t bytes;
  int pinned; /* 0 device, else how ocu_pin_alloc made it (OCU_PIN_*) */
} ocu_rt_buf_t;

typedef struct ocu_rt {
  ooc_ctx_t *ctx;
  int dev, opened, ready; /* ready: ocu_rt_clock ran (the executor was created) */
  char device[128];
  /* the pool */
  int64_t budget, used, peak, nalloc, pinned;
  ocu_rt_buf_t buf[OCU_RT_MAXBUF];
  int nbuf;
  /* streams, events, library handles */
  cudaStream_t st[OCU_RT_MAXSTREAMS];
  const char *role[OCU_RT_MAXSTREAMS];
  int nst;
  cudaEvent_t *ev;
  int64_t nev, capev;
  cublasHandle_t bl[OCU_RT_MAXBLAS];
  int nbl;
  cusolverDnHandle_t sol;
  cusolverDnParams_t par;
  /* timing and trace */
  int timing;
  const char *trace, *title;
  ocu_span_t *spans;
  int64_t nspans, capspans;
  cudaEvent_t base;
  double host_base;
  pthread_mutex_t mu;
  int mu_on;
} ocu_rt_t;

typedef struct ocu_rt_times {
  double copy, kernel, overlap, span; /* device: busy times (s) and the whole span */
  double host;                        /* sum of host spans (s) and the bytes they moved */
  int64_t bytes_host;
} ocu_rt_times_t;

/* The budget for --gpu-mem (0: free memory of device dev minus max(1 GiB, 1/32 of the card));
 * makes dev the calling thread's current device. The executors' queueing calls assume their
 * runtime's device is current on the calling thread (ocu_rt_open makes it so). */
int64_t ocu_rt_budget(int dev, int64_t gpu_mem);
/* A cuBLAS handle's workspace for a budget: 32 MiB (what Hopper wants) unless the budget is tiny. */
int64_t ocu_rt_cublas_ws(int64_t budget);
/* "CUSOLVER_STATUS_..." for a cuSOLVER status. */
const char *ocu_cusolver_string(cusolverStatus_t s);

/* title names the trace's process ("oocsolve gj (cuda)"); trace NULL or "" for none. */
ooc_status_t ocu_rt_init(ocu_rt_t *rt, ooc_ctx_t *ctx, int dev, int64_t gpu_mem, const char *trace,
                         int timing, const char *title);
ooc_status_t ocu_rt_open(ocu_rt_t *rt);
ooc_status_t ocu_rt_clock(ocu_rt_t *rt);
ooc_status_t ocu_rt_fini(ocu_rt_t *rt);

ooc_status_t ocu_rt_dalloc(ocu_rt_t *rt, void *pp, int64_t bytes, const char *what);
ooc_status_t ocu_rt_halloc(ocu_rt_t *rt, void *pp, int64_t bytes, const char *what);
ooc_status_t ocu_rt_release(ocu_rt_t *rt, void *p); /* NULL is fine */
ooc_status_t ocu_rt_stream(ocu_rt_t *rt, cudaStream_t *s, const char *role, int urgent);
ooc_status_t ocu_rt_events(ocu_rt_t *rt, cudaEvent_t *ev, int64_t k, unsigned flags); /* k of them */
ooc_status_t ocu_rt_blas(ocu_rt_t *rt, cublasHandle_t *h, cudaStream_t s, int64_t ws_bytes);
ooc_status_t ocu_rt_solver(ocu_rt_t *rt, cudaStream_t s); /* rt->sol and rt->par, on stream s */

/* Index of the span (or -1: no timing, or no memory for it); pass it to ocu_rt_span_end. */
int64_t ocu_rt_span(ocu_rt_t *rt, int s, int kind, const char *name, int64_t bytes, double flops);
void ocu_rt_span_end(ocu_rt_t *rt, int64_t i, int s);
void ocu_rt_host_span(ocu_rt_t *rt, const char *name, double t0, double t1, int64_t bytes);
/* With timing (waits for the device first); zeros without. */
void ocu_rt_times(ocu_rt_t *rt, ocu_rt_times_t *t);
/* Seconds summed over the device spans named name (NULL: any) of kind kind (< 0: any). */
double ocu_rt_sum(ocu_rt_t *rt, const char *name, int kind);

#define OCU_CHECK_(x, T, call, ok, lib, why)                                                       \
  do {                                                                                             \
    T e_ = (call);                                                                                 \
    if (e_ != (ok))                                                                                \
      return ooc_fail_at((x)->ctx, OOC_ERR_DEVICE, __FILE__, __LINE__, "%s: %s failed: %s", lib,   \
                         #call, why(e_));                                                          \
  } while (0)
#define CU(x, call) OCU_CHECK_(x, cudaError_t, call, cudaSuccess, "CUDA", cudaGetErrorString)
#define CB(x, call)                                                                                \
  OCU_CHECK_(x, cublasStatus_t, call, CUBLAS_STATUS_SUCCESS, "cuBLAS", cublasGetStatusString)
#define CS(x, call)                                                                                \
  OCU_CHECK_(x, cusolverStatus_t, call, CUSOLVER_STATUS_SUCCESS, "cuSOLVER", ocu_cusolver_string)

#endif
