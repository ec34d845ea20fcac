/*
 * rbt.h: solve A X = B by a random butterfly transformation, LU without pivoting and iterative
 * refinement against the original A, out of core (issue 23).
 *
 * Why: partial pivoting out of core costs the row swaps across every tile and a pivot search that
 * serializes the panel. Parker's recursive butterflies make LU without pivoting safe with high
 * probability at O(n^2) cost, and refinement in FP64 against the ORIGINAL A (not the transformed
 * matrix, as MAGMA's gerfs_nopiv does) restores and proves the accuracy. Seed reference 003 and
 * docs/NUMERICS.md ("rbt") say what it costs and when it wins.
 *
 * Transformation. N >= n is n padded with a multiple of the identity (A_pad = [A 0; 0 aI],
 * B_pad = [B; 0], a = max|a_ij|: with a = 1 a matrix scaled near underflow or overflow (LAPACK's
 * DGE types 10, 11) mixes entries 1e290 apart and loses everything; finding a costs one more read
 * of A, only when N > n);
 * the transformed store has tile bt <= b, and N = 2^d k bt with k = ceil(n / (2^d b)) and
 * bt = ceil(n / (2^d k)): a multiple of 2^d x tile, as the butterfly's tile-wise application
 * needs, padding fewer than 2^d k rows (rbt_shape; padding to 2^d b would cost up to 4 tiles of
 * rows, e.g. N = 4n for a single tile). A depth-d recursive butterfly is U = U_0 U_1 ... U_{d-1}
 * where U_l = diag(B_1, ..., B_{2^l}) holds 2^l butterflies of size m_l = N / 2^l,
 *     B = 1/sqrt(2) [R  S; R -S],  R, S diagonal with entries exp((r - 1/2) / 10), r ~ U[0, 1)
 * (MAGMA's choice: within [0.951, 1.052], so the transform is well conditioned), drawn from a
 * splitmix64 stream of the seed: u's d levels (N entries each: R at the first half of each
 * butterfly's positions, S at the second), then v's. The same seed gives the same transform and,
 * on one machine and build, the same X. The system solved is (U^T A V) y = U^T b, x = V y.
 * Depth d mixes only rows (columns) i0 + p N/2^d, p < 2^d: a group of (2^d)^2 tiles
 * (rows ti0 + p k, columns tj0 + q k, ti0, tj0 < k) is read from the source, transformed in
 * memory (host threads, base/parloop.h) and put into the store: one pass, A read once,
 * 6 d N^2 flops (3 per element, level and side). In memory a group takes two passes (rbt.c):
 * its row sums, then bundles of the 2^d columns {q bt + c} that U^T and V close over, each
 * through every level and its column norms while it is in the core's cache; every element's
 * operations and every sum's order are the definition's, so the result is bit for bit that of
 * U^T's levels on the columns, then V's on the rows (tests/test_rbt.c), whatever the threads.
 *
 * Then: LU without pivoting of U^T A V (lu.h with nopiv; its tiny-pivot count and smallest
 * pivot ratio are reported), the solve of U^T B_pad with those factors, x = V y, and
 * refinement (the seed's Algorithm 1, corrected): for every right-hand side j,
 *     r = b - A x with A the ORIGINAL matrix streamed from its source tile by tile (FP64),
 *     stop when max|r_j| < sqrt(n) max|x_j| ||A||_inf eps (eps = 2^-53, LAPACK's dlamch('E'))
 *     for every j, else x += V (LU)^-1 U^T r with the kept factors, at most max_iter (30) times.
 * Not converged (or NaN): OOC_ERR_ACCURACY with the numbers; X is then not written. An exact zero
 * or eps-small pivot: OOC_ERR_SINGULAR from lu (the caller may fall back to pivoted LU).
 * Backward error reported: berr = max_j max|r_j| / (||A||_inf max|x_j|), before refinement
 * (berr0) and after (berr); converged means berr < sqrt(n) eps for every column.
 *
 * Cost. Flops: 2N^3/3 (factor) + 2 N^2 m per solve + 2 n^2 m per residual + 6 d N^2 (transform;
 * with padding, one more read of A for max|a_ij|).
 * I/O: A is read once by the transform and once per residual (8 n^2 bytes each); the factor's I/O
 * is lu.h's; each correction solve streams the factors once (8 N^2 bytes).
 * Time of the transform: its 6 d N^2 flops are nothing (13 GFLOP at N = 32768); it is bound by
 * memory: per group the source's parts copied in (a store source: ts_read_rect, each tile met
 * once and only its part, on the cache's copy threads), the two passes, the copies out into the
 * store's new tile buffers (whose first touch, the kernel zeroing 8 N^2 bytes of pages, is the
 * largest part on a CPU host). On the 2-core development machine at n = 8192 it costs 0.8-1.3x
 * the load's read of the same input (docs/NUMERICS.md, "rbt"; tests/bench_rbt times it alone).
 * Host memory outside the tile cache (rbt_workspace_bytes): the group buffer g bt (g bt + 8)
 * doubles (g = 2^d; its leading dimension one cache line more than g bt: rbt.c),
 * the diagonals 2 d N, B, R (n x m each), the padded RHS N x m, one tile of A (b^2) and ||.||
 * arrays (2N), the padded stores' bookkeeping and staging tiles (tstore_overhead_bytes of
 * N x N and N x m at bt), plus lu_workspace_bytes for the factor and the solves; X is the
 * caller's.
 */
#ifndef OOC_RBT_H
#define OOC_RBT_H

#include "exec/exec.h"
#include "kernels/ops.h"
#include "tiling/tstore.h"

#define RBT_DEPTH 2      /* MAGMA's and Parker's default */
#define RBT_MAX_DEPTH 6
#define RBT_MAX_ITER 30  /* the seed's ITERMAX */

/* N and the transformed tile bt for n, tile b, depth d (see above). n = 0: N = bt = 0. */
void rbt_shape(int64_t n, int64_t b, int depth, int64_t *N, int64_t *bt);

/* The random diagonals: u and v, depth * N entries each (level l at [l N, (l+1) N)). */
void rbt_diagonals(uint64_t seed, int64_t N, int depth, double *u, double *v);

/* In place on an N x m array (ld >= N): W := U^T W (rbt_apply_ut) and W := V W (rbt_apply_v). */
void rbt_apply_ut(int64_t N, int depth, const double *u, int64_t m, double *W, int64_t ld);
void rbt_apply_v(int64_t N, int depth, const double *v, int64_t m, double *W, int64_t ld);

typedef struct rbt_args {
  int64_t n, m, b;            /* A n x n, B n x m; b: the tile of the source reads and the bound
                                 of the transformed store's tile */
  const ooc_source_t *A;      /* the original matrix: read, never modified */
  const ooc_source_t *B;      /* the right-hand sides */
  int depth;                  /* <= 0: RBT_DEPTH */
  uint64_t seed;
  int max_iter;               /* <= 0: RBT_MAX_ITER; refinement steps at most */
  tcache_t *cache;            /* for the transformed A (N x N) and RHS (N x m) stores */
  const ooc_spill_ops_t *spill_a, *spill_b; /* their scratch (NULL: none: all must fit) */
  int64_t stripe;             /* LU's stripe W (lu.h) */
  const ooc_ops_t *ops;       /* host kernels (residuals; LU when exec is NULL) */
  ooc_exec_t *exec;           /* LU's executor, NULL: a host executor over ops */
  int nslots;                 /* LU's ring slots on exec (lu_args_t.nslots; 0: LU_SLOTS) */
  int threads;                /* host threads for the transform; <= 0: the CPUs */
  double *X;                  /* out: n x m, ld ldx (written only on success) */
  int64_t ldx;
} rbt_args_t;

typedef struct rbt_stats {
  int64_t N, bt;              /* the padded size and the transformed store's tile */
  int depth;
  uint64_t seed;
  int iters;                  /* refinement steps taken */
  int converged;
  double berr0, berr;         /* backward error before and after refinement (above) */
  double tol;                 /* sqrt(n) eps: berr must be below it */
  double norm_inf;            /* ||A||_inf of the original */
  double growth;              /* LU's max|U| / max|U^T A V| */
  int64_t tiny;               /* pivots below sqrt(eps) ||col||_1 (lu.h) */
  double min_pivot;           /* min |u_jj| / ||(U^T A V)[:, j]||_1 */
  double t_transform, t_factor, t_solve, t_refine; /* seconds; t_refine: residuals + solves */
  double t_gather, t_mix, t_put; /* t_transform's parts: the groups read from A (and padded), the
                                    two passes over them (row sums; U^T, V, column norms), the
                                    puts into the store; the rest is max|a_ij| when padded */
  int64_t bytes_a;            /* bytes of the original A read (transform + residuals) */
  int64_t spilled, unspilled; /* scratch bytes of the transformed stores */
} rbt_stats_t;

/* Host bytes rbt_solve allocates outside the tile cache (the host executor's LU included). */
int64_t rbt_workspace_bytes(int64_t n, int64_t m, int64_t b, int depth, int64_t stripe);

ooc_status_t rbt_solve(ooc_ctx_t *ctx, const rbt_args_t *a, rbt_stats_t *stats);

/* The transform rbt_solve runs, alone (tests, tests/bench_rbt.c): U^T A_pad V of a->A (a->n, b,
 * depth, seed, threads) into S, an N x N store of tile bt (rbt_shape); colnorm (N) and rowsum
 * (n), zeroed by the caller, receive the transformed column 1-norms and the original's row sums;
 * stats (NULL: none) its t_transform, its parts and bytes_a. */
ooc_status_t rbt_transform_store(ooc_ctx_t *ctx, const rbt_args_t *a, tstore_t *S,
                                 double *colnorm, double *rowsum, rbt_stats_t *stats);

#endif
