/*
 * ocu_chol.h: the CUDA Cholesky executor (chol_exec_t, see solvers/chol.h) for the SPD path:
 * factor (logdet, solve), and the symmetric Gauss-Jordan sweep (inverse). Built only with
 * OOC_HAVE_CUDA. Reuses ocu.h's probe and configuration (budget, streams, trace, timing).
 *
 * In core (the stripe W = n: the matrix fits --gpu-mem)
 * - invert: one H2D of the lower triangle, then the sweep of chol.h run *inside* the device with
 *   inner blocks of nb columns (default 1024): per block, cusolverDnXpotrf of the nb x nb pivot
 *   block (its failure names the leading minor, its diagonal gives the logdet), two cuBLAS trsm
 *   on the n x nb panel, one GEMM per other column block for the rank-nb update of the lower
 *   triangle (the bulk: n^3 flops in all, at DGEMM rate), two trsm and a potri of the nb block;
 *   then a kernel mirrors the lower triangle (or zeroes the upper) and one D2H. Same n^3 flops as
 *   potrf + potri, but nearly all in large GEMMs, where cuSOLVER's potri is not.
 * - factor: one H2D, cusolverDnXpotrf, one D2H.
 * Out of core (W < n), the stripes of chol.c with the panel (n x W) resident:
 * - factor (left-looking): earlier tile columns of L stream through the ring of pinned slots
 *   (H2D only) and update the panel by SYRK + GEMM; then potrf + trsm on the device.
 * - invert (sweep): pivot = the in-device sweep on a W x W copy of D (D^-1, minor, logdet) plus
 *   cusolverDnXpotrf of D (L) and the trsm W = V L^-T; every other tile column streams through
 *   the ring (H2D, one SYRK + one GEMM, D2H), block q+1 copied in while block q is multiplied and
 *   q-1 copied out; then F_P = -W L^-1 and F_PP = D^-1. V itself moves through the ring too, and
 *   overlaps the pivot work both ways (chol.h's split pivot): the sweep and potrf start once D
 *   is in, and the trsm runs tile column block by block as the rest of V arrives (pivot_begin,
 *   vready); at the end the finishing trsm runs block by block from the last, each block's
 *   copies out waiting only for its own event. Tile row P is transposed on the copy streams
 *   (their own cuBLAS handles), so neither direction queues behind the compute stream; nothing
 *   waits for the device inside the pivot until its end (the minor is judged there).
 *
 * The strict upper triangle of D (the last step of a full inverse: of the whole stripe) is D^-1's
 * lower transposed or zero, per chol.h's store(full).
 * Budgets: every cudaMalloc through the runtime's pool (ocu_rt.h), which refuses to pass
 * --gpu-mem and asks the fault seam, every pinned buffer charged to the context's host bytes
 * (--host-mem); its three streams are counted for the leak check. Device bytes: panel n W,
 * the sweep's panel W nb and (out of core, invert) the W x W copy of D, K = streams + 1 slots of
 * n x tile (out of core), cuSOLVER and cuBLAS workspaces. Host (pinned): K slots, and the panel
 * n W except for the sweep out of core: there the stripe's columns go between the tile store and
 * the device through the slots (copies of one overlapping the host's work on the next), and tile
 * row P too, transposed on the device (cublasDgeam), so the host only copies.
 */
#ifndef OOC_OCU_CHOL_H
#define OOC_OCU_CHOL_H

#include "kernels/cuda/ocu.h"
#include "solvers/chol.h"

typedef struct ocu_chol_stats {
  char device[128];
  int64_t W, nb;                    /* stripe, the in-device sweep's block */
  int64_t dev_budget, dev_peak, pinned_bytes, bytes_h2d, bytes_d2h;
  int nslots;
  /* with cfg->timing (from cudaEvents): busy time of copies and kernels, their overlap, span */
  double t_copy, t_kernel, t_overlap, t_span;
  double t_update;                  /* streamed column updates (SYRK + GEMM) */
  double t_pivot;                   /* pivot and finish (potrf, sweep, trsm, potri) */
  double flops_update, flops_pivot; /* flops issued in those (n^3 in all for the inverse) */
} ocu_chol_stats_t;

/* The widest stripe (a multiple of b, or n) whose device buffers fit the budget for job
 * (CHOL_FACTOR, CHOL_INVERT, CHOL_SOLVE), with the sweep's block nb (0 = default; narrowed in core
 * when that lets W = n fit). *W = 0 and OOC_ERR_BUDGET (message) if not even one tile fits. */
ooc_status_t ocu_chol_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int job, int64_t nb,
                           const ocu_config_t *cfg, int64_t *W, int64_t *budget);

/* Pinned host bytes the executor allocates for stripe W and job (the panel and the ring; no
 * panel for CHOL_INVERT with W < n, whose panel moves through the ring). */
int64_t ocu_chol_host_bytes(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg);

ooc_status_t ocu_chol_create(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t W, int job, int64_t nb,
                             const ocu_config_t *cfg, chol_exec_t **out);
/* Statistics so far (with timing: waits for the device first). */
void ocu_chol_stats(chol_exec_t *e, ocu_chol_stats_t *s);
/* Frees everything; writes the trace if one was asked for (its failure is the return value). */
ooc_status_t ocu_chol_destroy(chol_exec_t *e);

#endif
