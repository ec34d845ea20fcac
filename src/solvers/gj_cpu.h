/*
 * gj_cpu.h: the CPU executor of gj (gj.h's gj_exec_t seam): host kernels through the ops table,
 * on threads it owns.
 *
 * Why it owns its threads: out of core, a step's column sweep is half arithmetic and half tile
 * store traffic (scratch reads and writes, checksums), which runs on the calling thread. With the
 * BLAS library's own threads, the traffic and the products take turns, and the library's idle
 * threads spin between calls on the cores the traffic needs. Here every kernel call runs with
 * one library thread (ops->threads(1) for the executor's life, restored by gj_cpu_destroy), on
 * `threads` threads: the caller and threads - 1 workers. The caller is also the only thread that
 * calls the tile store (tstore.h: single-threaded API); the workers only compute.
 *
 * - factor: below 1024 columns, a recursive LU whose leaves (64 columns) are getrf on the caller
 *   and whose updates run in row chunks on all threads; from 1024 columns (e.g. in core) the
 *   library's getrf on all of its threads, where they pay.
 * - transform (after the sweep, so the slot is free): when the slot (below) holds a copy of the
 *   w x w pivot block and at least one b x w product buffer beside it (a function of n, b and w
 *   only): getri of the copy on the caller while the other threads run the trsm of the rows
 *   below in row chunks, then the rows above as GEMMs with the inverse (N_up = -A_up P, tile
 *   rows through the buffers, on all threads), then the inverse into the panel. Otherwise the
 *   trsm of rows above and below on all threads, then getri in place on the caller (library
 *   threads as for getrf). The transform column is only written back, never multiplied.
 * - sweep (gj.h): row tile by row tile. Each target's tile column is taken into one n x b slot
 *   tile by tile, its products are cut into chunks of whole row tiles (C_rows = beta C_rows +
 *   panel_rows R, beta 0 in the pivot rows), and a row tile goes back to the store as soon as
 *   its chunk is done; the next target's tile takes its place at once. The row swaps of the next
 *   target and its two triangular solves with the factored pivot block (Z = L11^-1 R in place
 *   in the slot's pivot rows, K = U11^-1 Z into a W x b buffer; on the caller: 2 w^2 b flops)
 *   need only its rows [k0, n), so chunks run in the order rows below (C_low -= L21 Z), pivot
 *   rows (C_k = K, once every rows-below chunk has read Z), rows above (C_up -= A_up K): the
 *   caller's takes, puts and solves of the next target overlap the products of the rows above
 *   of this one. K is double-buffered (two W x b buffers, as R was before the update used the
 *   factored panel: the workspace did not grow). The caller computes chunks too whenever it has
 *   no tile to move.
 * The chunks are a fixed function of (n, b, k0, w): which thread runs one does not change a bit
 * of the result, so runs stay bit-identical to each other and to resumed runs.
 */
#ifndef OOC_GJ_CPU_H
#define OOC_GJ_CPU_H

#include "solvers/gj.h"

/* The leading dimension of the panel and the slot: n, plus 8 when n is a multiple of 256 (a
 * stride of 2 KiB multiples puts the columns of a row block in the same cache sets; measured:
 * 512 x 256 x 512 chunk products at ld 4096 49.7 GFLOP/s, at ld 4104 50.7). Other n cost
 * nothing extra, so budgets planned at the edge still fit. */
int64_t gj_cpu_ld(int64_t n);

/* Host bytes gj_cpu_create allocates (slot ld x b, two R of W x b when sweeps, local pivots). */
int64_t gj_cpu_workspace_bytes(int64_t n, int64_t b, int64_t W, int sweeps);

/* threads <= 0: the online CPUs (at most 16). Fewer workers start if the system refuses some. */
ooc_status_t gj_cpu_create(ooc_ctx_t *ctx, const ooc_ops_t *ops, int64_t n, int64_t b, int64_t W,
                           int sweeps, int threads, gj_exec_t **out);
void gj_cpu_destroy(gj_exec_t *e);

#endif
