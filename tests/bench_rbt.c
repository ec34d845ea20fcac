/*
 * bench_rbt.c: rbt's transform U^T A V alone (src/solvers/rbt.h), from A in a tile store as
 * job_rbt.c gets it from the load, with its parts timed. Not a ctest.
 *   bench_rbt N TILE [DEPTH [THREADS [REPS]]]     (depth 2, threads: the CPUs, reps 3)
 * A (entries uniform in [-1, 1) from a hash of (i, j)) is put into a store of tile TILE in a
 * cache that holds it and the transformed matrix (fresh tile buffers, as the load's puts are:
 * "put A" is that part of the load); then REPS times a new N x N store of tile bt is filled by
 * rbt_transform_store, A read through ts_read_rect as job_rbt.c reads it. Prints per run the
 * transform's seconds and its parts (gather: the groups' reads; mix: the row-sum and
 * butterfly passes; put: into the store) and an FNV-1a hash of the transformed store, colnorm
 * and rowsum (the same for every run, build and thread count: the arithmetic's order is fixed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/rbt.h"

static double val(int64_t i, int64_t j) {
  uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)j + 0x632BE59BD9B4E019ULL) *
                                                       0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

static ooc_status_t store_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               double *dst, int64_t ld) {
  return ts_read_rect(self, r0, c0, nr, nc, dst, ld);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ULL;
  return h;
}

static void die(ooc_ctx_t *ctx, const char *what) {
  fprintf(stderr, "bench_rbt: %s: %s\n", what, ctx ? ooc_ctx_error(ctx) : "");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_rbt N TILE [DEPTH [THREADS [REPS]]]\n");
    return 2;
  }
  int64_t n = atoll(argv[1]), b = atoll(argv[2]);
  int depth = argc > 3 ? atoi(argv[3]) : RBT_DEPTH, threads = argc > 4 ? atoi(argv[4]) : 0;
  int reps = argc > 5 ? atoi(argv[5]) : 3;
  if (n < 1 || b < 1 || depth < 1 || depth > RBT_MAX_DEPTH || reps < 1) die(NULL, "bad arguments");
  b = ooc_min64(b, n);
  int64_t N, bt;
  rbt_shape(n, b, depth, &N, &bt);
  ooc_ctx_t *ctx;
  tcache_t *cache;
  tstore_t *A, *S;
  if (ooc_ctx_create(&ctx) != OOC_OK) die(NULL, "context");
  if (tcache_create(ctx, 8 * (n * n + N * N) + ((int64_t)64 << 20), &cache) != OOC_OK)
    die(ctx, "cache");
  if (tstore_create(ctx, cache, n, n, b, NULL, NULL, &A) != OOC_OK) die(ctx, "store");
  part_t p = ts_rows(A);
  double *col = malloc((size_t)(8 * n * b));
  if (!col) die(NULL, "out of memory");
  double t_put_a = 0;
  for (int64_t tj = 0; tj < p.count; tj++) {
    int64_t nc = part_len(p, tj);
    for (int64_t j = 0; j < nc; j++)
      for (int64_t i = 0; i < n; i++) col[i + j * n] = val(i, tj * b + j);
    double t0 = ooc_now();
    if (ts_put_col(A, tj, col, n) != OOC_OK) die(ctx, "put A");
    t_put_a += ooc_now() - t0;
  }
  free(col);
  printf("n %lld tile %lld depth %d: N %lld bt %lld; put A into its store %.3f s\n", (long long)n,
         (long long)b, depth, (long long)N, (long long)bt, t_put_a);
  ooc_source_t src = {A, store_read, NULL, NULL};
  double *cn = malloc((size_t)(8 * N)), *rs = malloc((size_t)(8 * n));
  double *T = malloc((size_t)(8 * bt * bt));
  if (!cn || !rs || !T) die(NULL, "out of memory");
  for (int r = 0; r < reps; r++) {
    memset(cn, 0, (size_t)(8 * N));
    memset(rs, 0, (size_t)(8 * n));
    if (tstore_create(ctx, cache, N, N, bt, NULL, NULL, &S) != OOC_OK) die(ctx, "store");
    rbt_args_t a = {.n = n, .b = b, .A = &src, .depth = depth, .seed = 1, .threads = threads};
    rbt_stats_t st;
    if (rbt_transform_store(ctx, &a, S, cn, rs, &st) != OOC_OK) die(ctx, "transform");
    uint64_t h = 0xcbf29ce484222325ULL;
    part_t q = ts_rows(S);
    for (int64_t tj = 0; tj < q.count; tj++)
      for (int64_t ti = 0; ti < q.count; ti++) {
        if (ts_read(S, ti, tj, T, bt) != OOC_OK) die(ctx, "read");
        h = fnv(h, T, (size_t)(8 * part_len(q, ti) * part_len(q, tj)));
      }
    h = fnv(fnv(h, cn, (size_t)(8 * N)), rs, (size_t)(8 * n));
    printf("run %d: transform %.3f s = gather %.3f + mix %.3f + put %.3f (+ %.3f); hash %016llx\n",
           r + 1, st.t_transform, st.t_gather, st.t_mix, st.t_put,
           st.t_transform - st.t_gather - st.t_mix - st.t_put, (unsigned long long)h);
    tstore_destroy(S);
  }
  free(cn), free(rs), free(T);
  tstore_destroy(A);
  tcache_destroy(cache);
  ooc_ctx_destroy(ctx);
  return 0;
}
