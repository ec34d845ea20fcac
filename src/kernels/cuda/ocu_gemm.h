/*
 * ocu_gemm.h: the GPU executor of the out-of-core product (oocgemm.h's gemm_exec_t seam).
 *
 * The C block (MB x NB) stays resident on the device; each k panel (A: mb x kb, B: kb x nb) goes
 * from one of `nslots` pinned host buffer pairs to its device pair on the copy stream, and
 * cublasDgemm_64 accumulates it into the block on the compute stream after the copy's event.
 * The host fills slot s+1 while slot s is copied and multiplied; slot_wait(s) waits for the event
 * recorded after the GEMM that last read slot s. end() queues the block's copy back on a third
 * stream in up to 16 column chunks, each with an event that fetch() waits for. With ncblk = 2
 * device C buffers (and two pinned ones), block i+1's GEMMs run while block i comes back and the
 * host finishes and stores it (oocgemm.c), so the device is not idle between blocks.
 *
 * I/O per flop: per panel 8 kb (mb + nb) bytes cross PCIe for 2 mb nb kb flops, mb nb /
 * (4 (mb + nb)) flop per byte, s/8 for square blocks (kb does not matter): at 55 GB/s H2D and
 * 65 TFLOP/s, s >= ~9,500 keeps the GPU busy. The host gathers the same bytes from the tile store
 * into the pinned panels with the cache's copy threads (ts_read_tiles).
 *
 * Three slots let the host gather panel q+2 while panel q+1 crosses PCIe and panel q multiplies
 * (with two, a panel's H2D starts only once its gather is done: on the H100 host that left the
 * GPU waiting 15-20% of each panel at n = 49152).
 *
 * The schedule's ends (oocgemm.h, GEMM_END_*): upload() copies a piece of a slot's panels (a
 * group of A's rows is a strided 2-D copy), part() runs cublasDgemm_64 on a sub-block of C after
 * the slot's latest piece, end_cols() queues the copy back of finished columns; end() sends what
 * end_cols() has not. panel() is upload() of everything then one part().
 *
 * Budgets: device bytes = 8 (ncblk MB NB + nslots (MB KB + KB NB)) + the cuBLAS workspace, each
 * buffer from the runtime's pool (ocu_rt.h), which refuses to pass cfg->gpu_mem (0 = free memory
 * minus max(1 GiB, 1/32)) and asks the fault seam; the plan leaves room for the pool's rounding.
 * The same host bytes are pinned and charged to the context's host count (so --host-mem covers
 * them). A failed creation releases everything (*out = NULL).
 */
#ifndef OOC_OCU_GEMM_H
#define OOC_OCU_GEMM_H

#include "kernels/cuda/ocu.h"
#include "solvers/oocgemm.h"

/* Bytes the executor allocates on the device less the cuBLAS workspace; also the bytes it pins
 * on the host. */
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
ooc_status_t ocu_gemm_create(ooc_ctx_t *ctx, int64_t MB, int64_t NB, int64_t KB, int nslots,
                             int ncblk, const ocu_config_t *cfg, gemm_exec_t **out);
/* Device peak and copy/kernel totals so far into s (fields of ocu_stats_t it knows). */
void ocu_gemm_stats(gemm_exec_t *e, ocu_stats_t *s);
ooc_status_t ocu_gemm_destroy(gemm_exec_t *e); /* NULL is fine */

#endif
