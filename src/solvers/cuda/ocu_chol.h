/*
 * ocu_chol.h: the Cholesky (factor, logdet, solve, and the symmetric Gauss-Jordan sweep for the
 * inverse) on the GPU: its plan, and the CUDA executor it runs on. The schedule and the device
 * mechanics are chol.c's, written once over exec.h (chol.h: the in-device sweep in core, the
 * split pivot, V through the ring's slots with transposes on the device, copies on their own
 * queues); what is the GPU's is the plan below and the executor's configuration (three queues:
 * H2D, compute, D2H). Built only with OOC_HAVE_CUDA.
 *
 * Budgets: device bytes for stripe W = the panel n W, the diagonal W, the sweep's panel W nb
 * (invert) and, out of core, the W x W copy of D (invert) and CHOL_SLOTS column blocks of n x
 * tile (out of core, or solving), plus the executor's own part (ex_cuda_overhead: a cuBLAS
 * workspace and info per queue) and cuSOLVER's workspace (potrf of W with ld n, the sweep's
 * potrf + potri of nb x nb with ld W), which the executor grows on the compute queue inside
 * --gpu-mem but outside its buffer budget. Every buffer from the runtime's pool (ocu_rt.h), which
 * refuses to pass --gpu-mem and asks the fault seam. Host (pinned, ex_host_alloc): the ring's
 * slots, and the staging panel n W except for the sweep out of core, whose V moves through the
 * slots.
 */
#ifndef OOC_OCU_CHOL_H
#define OOC_OCU_CHOL_H

#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu.h"
#include "solvers/chol.h"

/* The CUDA executor's configuration for the Cholesky (cfg's device, --gpu-mem, trace, timing;
 * three queues). */
ex_cuda_config_t ocu_chol_exec_config(const ocu_config_t *cfg);

/* The widest stripe (a multiple of b, or n) whose device buffers fit the budget for job
 * (CHOL_FACTOR, CHOL_INVERT, CHOL_SOLVE), with the sweep's block nb (0 = default; narrowed in core
 * when that lets W = n fit). *W = 0 and OOC_ERR_BUDGET (message) if not even one tile fits. */
ooc_status_t ocu_chol_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int job, int64_t nb,
                           const ocu_config_t *cfg, int64_t *W, int64_t *budget);

/* The sweep's block for stripe W (chol_args_t.nb): CHOL_NB, in core halved down to 512 while that
 * is what keeps W = n within the budget. */
int64_t ocu_chol_nb(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg);

/* Pinned host bytes chol_run allocates on the executor for stripe W and job (the panel and the
 * ring; no panel for CHOL_INVERT with W < n, whose panel moves through the ring). */
int64_t ocu_chol_host_bytes(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg);

#endif
