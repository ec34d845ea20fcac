/*
 * iter.h: inverse by division-free iteration on tile stores, every product an out-of-core GEMM
 * (oocgemm.h): Newton-Schulz (order 2) and Soleymani's order-7 hyperpower method (the climate
 * data-assimilation paper, reference digest 004).
 *
 * With X_k = A V_k and E_k = I - X_k:
 *   newton:  V_{k+1} = V_k (2I - X_k)                              E_{k+1} = E_k^2
 *            2 products per step (4 n^3 flops): X_k = A V_k, then V_k (2I - X_k).
 *   hyper7:  V_{k+1} = V_k p(X_k) / 16, by Horner with the coefficients the digest verified
 *            p(x) = 120 - 393x + 735x^2 - 861x^3 + 651x^4 - 315x^5 + 93x^6 - 15x^7 + x^8,
 *            for which 1 - x p(x)/16 = (1-x)^7 (4-x)^2 / 16, i.e.  E_{k+1} = E_k^7 (3I + E_k)^2 / 16.
 *            9 products per step (18 n^3 flops): X_k, 7 Horner products Q_{i+1} = X_k Q_i + c_i I
 *            (the first folds Q_0 = X_k - 15I in: X_k X_k - 15 X_k + 93 I), then V_k Q_7 / 16.
 *            (Paterson-Stockmeyer would need 6 products but 2 more n x n stores; we keep the
 *            paper's method.)
 * The additive c I and the residual are applied in the GEMM's epilogue, so no extra pass.
 *
 * Start V_0 (the paper's "matrix type identification", one O(n^2) pass over A for row sums):
 *   strictly diagonally dominant rows (|a_ii| > sum_{j != i} |a_ij|): V_0 = diag(1/a_ii); then
 *     rho(I - A V_0) = rho(I - V_0 A) <= ||I - D^-1 A||_inf < 1;
 *   else symmetric with a positive diagonal (args->spd, from the job's pre-pass): V_0 = I/||A||_1,
 *     E_0 = I - A/||A||_1 has eigenvalues in [0, 1 - 1/kappa_2) if A is SPD (kappa_eff = kappa);
 *   else V_0 = A^T / (||A||_1 ||A||_inf): E_0 = I - A A^T/c with eigenvalues in [0, 1)
 *     (kappa_eff = kappa^2, so ~log2(kappa^2) slow Newton steps before the fast phase), formed
 *     as (a / ||A||_1) / ||A||_inf: the norms' product over- or underflows for entries near
 *     1e+-160, the quotients do not (every start is scale-invariant: same steps on s A);
 *   or the caller's warm start (args->warm: S[0] already holds it, e.g. yesterday's inverse).
 *
 * Stopping rule, from r_k = ||I - A V_k||_1, which the product A V_k yields for free:
 *   ratio_k = r_k / (n ||A||_1 ||V_k||_1 eps)   (the LAPACK inverse ratio, eps = 2^-53)
 *   - ratio_k < target: done, the result is V_k (the product A V_k that proves it is the last);
 *   - r_{k-1} < 1 and r_k >= r_{k-1}: in exact arithmetic r_k <= r_{k-1}^2 (newton) or
 *     r_{k-1}^7 (3 + r_{k-1})^2 / 16 < r_{k-1} (hyper7), so this is the rounding floor: accept V_k
 *     if ratio_k < accept, else OOC_ERR_ACCURACY ("stagnated");
 *   - r_k not finite, or r_k > sqrt(n) max(1, r_0): diverged, OOC_ERR_ACCURACY. Why this bound:
 *     the 1-norm may grow for a while in a convergent run (seen: 1.12 -> 1.71 over three Newton
 *     steps on a kappa = 100 general matrix), but for the symmetric E_0 of the identity and
 *     transpose starts ||E_k||_1 <= sqrt(n) ||E_k||_2 <= sqrt(n) ||E_0||_2 <= sqrt(n) r_0 while
 *     converging, so exceeding it proves divergence (spectral radius >= 1: e.g. a symmetric
 *     matrix with a positive diagonal that is not definite, or a start scaled too large).
 *     For the diagonal start it is a heuristic (no transient growth was seen);
 *   - a warm start with r_0 >= 1: OOC_ERR_ACCURACY (nothing guarantees convergence; a useful warm
 *     start is much closer). The built-in starts may have r_0 >= 1 in the 1-norm while the
 *     spectral radius is < 1 (E_0 symmetric with ||E_0||_1 up to sqrt(n) ||E_0||_2): not an error;
 *   - k = max_iter without any of the above: OOC_ERR_ACCURACY ("no convergence").
 * The errors name the residual history and suggest gj (general) or chol (SPD).
 * Theory (iter_predict): steps until r_0's bound r -> r^2 or r^7 (3+r)^2/16 falls below the target
 * residual; with ||.||_1 submultiplicative it is an upper bound when r_0 < 1.
 *
 * Stores: A (read only) and iter_stores(method) work stores S[] (n x n, same tile and cache);
 * dead iterates are dropped (ts_drop) as soon as they are dead so the cache holds live data.
 * Memory: iter_workspace_bytes() host bytes outside the cache (GEMM block, O(n) vectors, two tiles);
 * with an executor (args->dev) iter_own_bytes() plus the product's buffers on it.
 */
#ifndef OOC_ITER_H
#define OOC_ITER_H

#include "oocsolve.h"
#include "solvers/oocgemm.h"

#define ITER_MAX_STORES 4

typedef struct iter_args {
  tstore_t *A;            /* n x n, read only */
  tstore_t *S[ITER_MAX_STORES]; /* work stores; S[0] holds the warm start when warm */
  int method;             /* OOC_METHOD_NEWTON or OOC_METHOD_HYPER7 */
  const ooc_ops_t *ops;
  int64_t block;          /* GEMM block edge (oocgemm.h) */
  int64_t kblock;         /* GEMM k panel width (0 = block) */
  gemm_dev_t *dev;        /* NULL: products on the host (ops); else every product runs on these
                           * buffers of an executor (e.g. the GPU's), epilogues on the host */
  gemm_dev_t *const *devs; /* ndev > 1: every product over these devices' buffers (issue 26,
                           * oocgemm.h "Several devices"; devs[0] == dev) */
  int ndev;
  int spd;                /* symmetric with a positive diagonal */
  int warm;               /* S[0] holds V_0 */
  double v0_scale;        /* multiply the built-in V_0 by this (0 = 1; tests use it to diverge) */
  double norm1_a;         /* ||A||_1 */
  double norm1_v0;        /* warm: ||V_0||_1 */
  double target;          /* stop when the ratio is below this */
  double accept;          /* at the rounding floor, accept a ratio below this */
  int max_iter;           /* 0 = 100 */
} iter_args_t;

typedef struct iter_result {
  int result;             /* index in S of the store holding the inverse (valid on OOC_OK) */
  int iterations;         /* updates V_k -> V_{k+1} made */
  int nres;               /* entries in res (r_0 .. r_K, at most OOC_MAX_ITER_REPORT) */
  double res[OOC_MAX_ITER_REPORT];
  double ratio;           /* ratio of the last V_k measured */
  double norm1_v;         /* ||V_k||_1 of that V_k */
  char start[16];         /* "diagonal", "identity", "transpose" or "warm" */
  int64_t products;       /* out-of-core GEMMs run */
  gemm_stats_t gemm;
} iter_result_t;

/* Work stores the method needs (3 newton, 4 hyper7). */
int iter_stores(int method);
/* Host bytes iter_run allocates outside the tile cache for n, tile b, GEMM block s, products on
 * the host (without an executor). */
int64_t iter_workspace_bytes(int64_t n, int64_t b, int64_t s);
/* The part of it that is the iteration's own (vectors, tiles): with an executor, add the
 * executor's buffers instead of gemm_workspace_bytes. */
int64_t iter_own_bytes(int64_t n, int64_t b);
/* Steps the norm bound predicts from r0 until the residual is <= goal (-1 if r0 >= 1). */
int iter_predict(int method, double r0, double goal);

ooc_status_t iter_run(ooc_ctx_t *ctx, const iter_args_t *a, iter_result_t *res);

#endif
