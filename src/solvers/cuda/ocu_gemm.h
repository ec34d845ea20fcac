/*
 * ocu_gemm.h: the out-of-core product on the GPU: its plan, and the CUDA executor it runs on.
 * The schedule and the device mechanics are oocgemm.c's, written once over exec.h (the product's
 * buffers are a gemm_dev_t on the executor); what is the GPU's is the plan below and the
 * executor's configuration (three queues: H2D, compute, D2H).
 *
 * I/O per flop: per panel 8 kb (mb + nb) bytes cross PCIe for 2 mb nb kb flops, mb nb /
 * (4 (mb + nb)) flop per byte, s/8 for square blocks (kb does not matter): at 55 GB/s H2D and
 * 65 TFLOP/s, s >= ~9,500 keeps the GPU busy. The host gathers the same bytes from the tile store
 * into the pinned panels with the cache's copy threads (ts_read_tiles).
 *
 * Budgets: device bytes = 8 (ncblk MB NB + nslots (MB KB + KB NB)) plus the executor's own part
 * (ex_cuda_overhead: a cuBLAS workspace per queue), each buffer from the runtime's pool
 * (ocu_rt.h), which refuses to pass cfg->gpu_mem (0 = free memory minus max(1 GiB, 1/32)) and
 * asks the fault seam; the plan leaves room for the pool's rounding. The same host bytes are
 * pinned and charged to the context's host count (so --host-mem covers them).
 */
#ifndef OOC_OCU_GEMM_H
#define OOC_OCU_GEMM_H

#include "kernels/cuda/ocu.h"
#include "exec/cuda/exec_cuda.h"
#include "solvers/oocgemm.h"

/* The CUDA executor's configuration for the product (cfg's device, --gpu-mem, trace). */
ex_cuda_config_t ocu_gemm_exec_config(const ocu_config_t *cfg);
/* Device bytes of the product's buffers (gemm_exec_bytes); also the bytes it pins on the host. */
int64_t ocu_gemm_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk);
/* The buffers for an m x n x k product with tile b whose buffers fit the device budget and, if
 * host_max > 0, host_max pinned bytes: gemm_model_plan (gemm_model.h) with the GPU hosts' rates:
 * panels of one tile (kb = b); one or two C buffers, two or three slots, and a square block s
 * (multiple of b): the largest that fits or an even split of the shape into as many or a few more
 * blocks, whichever the model (the schedule replayed, its ends included) says is fastest.
 * OOC_ERR_BUDGET if not even s = b fits. */
ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t host_max, int64_t *s, int64_t *kb,
                           int *nslots, int *ncblk);

#endif
