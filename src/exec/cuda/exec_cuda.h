/*
 * exec_cuda.h: the CUDA executor (src/exec/exec.h's contract on one GPU), built on the one CUDA
 * runtime (kernels/cuda/ocu_rt.h: budgeted pool with the fault seam, pinned allocator, counted
 * streams, cuBLAS/cuSOLVER handles, trace). Several GPUs are several executors: the device index
 * is in the config and nothing is global.
 *
 * How each part of exec.h is met
 * - Device memory: every buffer (ex_alloc, and the executor's own) comes from the runtime's pool,
 *   whose budget is cfg->gpu_mem (--gpu-mem; 0: free memory minus max(1 GiB, 1/32 of the card)).
 *   At creation the executor takes its own part (per queue: a cuBLAS workspace and 256 bytes for
 *   info; cfg->ws_bytes more if asked): ex_cuda_overhead(cfg) bytes. e->budget is what is left,
 *   and ex_alloc hands out at most that (sizes rounded up to 256 bytes, and counted so in
 *   e->dev_bytes): OOC_ERR_NOMEM "... budget ..." naming the bytes asked and left when it does
 *   not fit, and OOC_ERR_NOMEM when the fault seam (OOC_FAULT_DEVICE) or cudaMalloc refuses.
 *   ex_free gives the buffer back at once (cudaFree: it waits for the device).
 * - Operation workspaces (cuSOLVER's, getrf's device pivots, laswp's pivots, getri's sweep of
 *   512 columns) are one buffer per queue that grows on first need (waiting for that queue, then
 *   reallocating) from the same pool: they are inside gpu_mem but outside e->budget, so a method
 *   that fills e->budget to the byte and then factors fails with OOC_ERR_NOMEM naming the
 *   workspace. cfg->ws_bytes reserves them up front.
 * - Host staging (ex_host_alloc): pinned through the runtime (the same fault seam; counted in
 *   the context's host bytes), so puts and gets from it are cudaMemcpy2DAsync, asynchronous.
 *   Any other (pageable) host memory works too: cudaMemcpy2DAsync then stages it through the
 *   driver's own pinned buffers, which makes a put read the host memory before it returns and a
 *   get of more than 64 KiB return only once the data is on the host (synchronous for the
 *   caller, ordered on the queue like every operation). A get of at most 64 KiB goes into the
 *   queue's pinned ring and on to the caller's memory by a host function, as host outputs do
 *   (below): asynchronous wherever the host memory lies.
 * - Queues are CUDA streams (non-blocking, counted), each with its own cuBLAS handle; one
 *   cuSOLVER handle is moved to the queue's stream before each call. Events are CUDA events
 *   (timing off). The caller's thread must be the executor's only one; each call makes the
 *   executor's device current on it.
 * - Host outputs (getrf's ipiv, every info, small gets): the device writes them into a per-queue
 *   pinned ring of records, and a host function queued after them (cudaLaunchHostFunc)
 *   converts them (cuSOLVER's 1-based pivots to 0-based) into the caller's pointers: written
 *   when the operation has run, the queue never waits for the host. laswp's row tables are
 *   written into the same ring at enqueue. These small copies between the ring and the device
 *   are done by a kernel through the ring's mapping, not by a copy engine: an engine serves its
 *   copies in order, and one behind a gigabyte of tiles on another queue waited milliseconds
 *   with the compute queue idle (exec_cuda.c `small_copy`).
 * - Operations: gemm/syrk/trsm cuBLAS (_64); transpose cuBLAS geam; copy cudaMemcpy2DAsync;
 *   fill a small kernel, laswp the net row permutation of its pivots (made on the host at enqueue,
 *   applied by a kernel in segments, a row per thread) (exec_cuda_kernels.cu); getrf cusolverDnXgetrf (LAPACK's
 *   argmax pivots); potrf cusolverDnXpotrf, then a diagonal check that adds the NaN/Inf rule of
 *   ops.h; potri cusolverDnDpotri (cuSOLVER has no 64-bit potri: n, lda < 2^31);
 *   trtri: the tuned recursive trtri of ocu_trtri.c (trmm2) for an upper non-unit triangle wider
 *   than its leaf, cusolverDnXtrtri otherwise; getri: that trtri, then LAPACK's sweep
 *   (ocu_getri_block, shared with the gj executor). getrf is cuSOLVER's, not the gj executor's
 *   recursive panel LU: that one is interleaved with gj's panel arrival schedule and tables
 *   and cannot be called on its own without copying it. LAPACK's dgetrf2 recursion over
 *   cuSOLVER's getrf, or over a cooperative getf2 kernel of our own on leaves of 32-64 columns,
 *   was no faster on LU's 40000 x 4000 chunks (a tall getrf is bound by its column steps, ~23 us
 *   a column either way: docs/PERFORMANCE.md "seventeenth session"; branch getrf-rec).
 * - Errors: an enqueue that CUDA, cuBLAS or cuSOLVER refuses returns OOC_ERR_DEVICE at once. A
 *   failure while an operation runs (a kernel's fault, an invalid argument cuSOLVER reports
 *   through info) is reported by the next ex_sync / ex_finish: OOC_ERR_DEVICE naming the queue
 *   and the operation (for a device fault: the last one enqueued on that queue, CUDA does not say
 *   which). From then on the executor is broken: enqueues and syncs return that status again.
 * - Trace (cfg->trace, or cfg->timing for ocu_rt_times): every operation is a span on its
 *   queue's row (two CUDA events); written by ex_destroy. With spans, ex_finish sets
 *   stats.busy to the spans' seconds summed over the queues (as the host executor's).
 */
#ifndef OOC_EXEC_CUDA_H
#define OOC_EXEC_CUDA_H

#include "exec/exec.h"

typedef struct ex_cuda_config {
  int device;         /* CUDA ordinal */
  int64_t gpu_mem;    /* device bytes in all (--gpu-mem); 0: the runtime's default */
  int nqueues;        /* streams, 1 .. EX_MAX_QUEUES; <= 0: 1 */
  int64_t blas_ws;    /* cuBLAS workspace per queue; 0: ocu_rt_cublas_ws(gpu_mem) (32 MiB for 0) */
  int64_t ws_bytes;   /* operation workspace per queue reserved at creation (0: grown on need) */
  int64_t ring_bytes; /* each queue's pinned ring of host outputs and laswp tables to start with
                         (at least 64 KiB, the default): a record larger than the ring grows it
                         (waiting for the queue), a full ring waits for its oldest records */
  int urgent_copies;  /* queues 1.. at the device's greatest stream priority (ocu_rt_stream): for a
                         method whose queues 1.. carry copies and the short kernels beside them
                         (LU's scans of the columns it moves, the small copies), which would
                         otherwise wait for SMs behind queue 0's gemm blocks, and the copies queued
                         after them with them */
  const char *trace;  /* NULL or "": none; else a Chrome/Perfetto JSON path */
  int timing;         /* spans without a trace file */
} ex_cuda_config_t;

/* Device bytes the executor keeps for itself at creation (e->budget = gpu_mem - this). */
int64_t ex_cuda_overhead(const ex_cuda_config_t *cfg);

/* OOC_ERR_NODEVICE when CUDA has no such device; OOC_ERR_BUDGET when gpu_mem leaves nothing
 * after the overhead; OOC_ERR_DEVICE / OOC_ERR_NOMEM for a failing CUDA call or allocation
 * (nothing is left behind). */
ooc_status_t ex_cuda_create(ooc_ctx_t *ctx, const ex_cuda_config_t *cfg, ooc_exec_t **out);

#endif
