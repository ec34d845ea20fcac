/*
 * bench_chol.c: chol inverse (tile store, budget that fits in memory) vs LAPACKE dpotrf + dpotri
 * on the same OpenBLAS, same process. Not a test (not named test_*.c); build by hand:
 *   gcc -O2 -std=c11 -Iinclude -Isrc tests/bench_chol.c build-chol-nw/liboocsolve.a \
 *       -lhdf5_serial -lzstd -llapacke -lopenblas -lpthread -lm -o /tmp/bench_chol
 *   /tmp/bench_chol [n=4096] [tile=n] [stripe=n] [reps=3]
 * Times: chol_run(CHOL_INVERT) on a store already loaded in the cache (as ooc_invert's load phase
 * leaves it), full symmetric result; LAPACK on a copy already in memory, lower triangle only.
 */
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "tiling/tstore.h"

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
  int64_t b = argc > 2 ? atoll(argv[2]) : n;
  int64_t W = argc > 3 ? atoll(argv[3]) : n;
  int reps = argc > 4 ? atoi(argv[4]) : 3;
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) return 1;
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  gen_t *g = NULL;
  if (gen_create(ctx, &s, &g) != OOC_OK) return 1;
  double *A = malloc((size_t)(n * n) * sizeof *A), *X = malloc((size_t)(n * n) * sizeof *X);
  gen_tile(g, 0, 0, n, n, A, n);
  gen_destroy(g);
  double best_l = 1e30, best_c = 1e30, ld_c = 0;
  for (int r = 0; r < reps; r++) {
    memcpy(X, A, (size_t)(n * n) * sizeof *X);
    double t0 = ooc_now();
    int i1 = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (int)n, X, (int)n);
    int i2 = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', (int)n, X, (int)n);
    double t = ooc_now() - t0;
    if (i1 || i2) return 2;
    if (t < best_l) best_l = t;

    int64_t nt = (n + b - 1) / b;
    int64_t cap = 8 * n * n + nt * nt * 256 + (1 << 20);
    tcache_t *cache = NULL;
    tstore_t *ts = NULL;
    if (tcache_create(ctx, cap, &cache) != OOC_OK ||
        tstore_create(ctx, cache, n, n, b, NULL, NULL, &ts) != OOC_OK)
      return 3;
    part_t p = ts_rows(ts);
    for (int64_t tj = 0; tj < p.count; tj++)
      for (int64_t ti = 0; ti < p.count; ti++)
        if (ts_put(ts, ti, tj, A + part_start(p, ti) + part_start(p, tj) * n, n) != OOC_OK)
          return 4;
    chol_args_t a = {ts, NULL, W, ooc_ops_cpu(), CHOL_INVERT, 0, NULL};
    chol_stats_t st;
    int64_t info;
    t0 = ooc_now();
    ooc_status_t rc = chol_run(ctx, &a, &st, &info, &ld_c);
    t = ooc_now() - t0;
    if (rc != OOC_OK) {
      fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
      return 5;
    }
    if (t < best_c) best_c = t;
    printf("rep %d: lapack %.3f s, chol %.3f s (panel %.3f, update %.3f, steps %lld)\n", r,
           best_l, t, st.t_panel, st.t_update, (long long)st.steps);
    tstore_destroy(ts);
    tcache_destroy(cache);
  }
  printf("n=%lld tile=%lld stripe=%lld: LAPACKE dpotrf+dpotri %.3f s (%.1f GFLOP/s), chol invert "
         "%.3f s (%.1f GFLOP/s), ratio %.3f, logdet %.10g\n",
         (long long)n, (long long)b, (long long)W, best_l, (double)n * n * n / best_l * 1e-9,
         best_c, (double)n * n * n / best_c * 1e-9, best_c / best_l, ld_c);
  free(A);
  free(X);
  ooc_ctx_destroy(ctx);
  return 0;
}
