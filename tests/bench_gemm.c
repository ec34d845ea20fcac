/*
 * bench_gemm.c: in-core cblas_dgemm (the ceiling for the out-of-core product on this machine) on
 * the same OpenBLAS as liboocsolve, and the product's C store into fresh tiles. Not a test (not
 * named test_*.c); build by hand:
 *   gcc -O2 -std=c11 -Iinclude -Isrc -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *       tests/bench_gemm.c build/liboocsolve.a -lhdf5_serial -lzstd -llapacke -lopenblas \
 *       -lpthread -lm -o /tmp/bench_gemm
 *   /tmp/bench_gemm [n=4096] [reps=3]       -> best GFLOP/s of C = A B, n x n, float64
 *   /tmp/bench_gemm store [GiB=4] [tile=4096] [reps=3]
 *                                           -> ts_put_col of a store of GiB in tiles of tile
 *       (tile columns of 8 tiles) from one column buffer, as the product stores C: into a fresh
 *       store ("cold": every tile buffer new, faulted in by the copy), after ts_prefill of the
 *       whole store in the product's 64 MiB steps ("prefilled": the put's time, and the
 *       prefill's), and again into the same store ("warm": tiles cached). Best of reps.
 *   /tmp/bench_gemm model [n=49152] [tile=4096] [gpu-mem=12G]
 *                                           -> the GPU product's cost model (gemm_model.h): the
 *       plan gemm_device_plan picks for an n x n x n product with that --gpu-mem, and predictions
 *       of it and of the previous plan (block 20480 at n = 49152), with and without the
 *       schedule's ends (GEMM_END_FIRST/LAST). No GPU needed.
 * Compare with `oocsolve gemm --json ... A.h5 B.h5` (its "gflops" is the compute phase) run
 * right after it: docs/NUMERICS.md, "Iterative inverse: measurements".
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solvers/gemm_model.h"
#include "solvers/oocgemm.h"
#include "tiling/tstore.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double put_all(tstore_t *ts, const double *col) {
  part_t cp = ts_cols(ts);
  double t0 = now();
  for (int64_t tj = 0; tj < cp.count; tj++)
    if (ts_put_col(ts, tj, col, ts_rows(ts).n) != OOC_OK) return -1;
  return now() - t0;
}

static int store_bench(double gib, int64_t b, int reps) {
  const int64_t rt = 8; /* row tiles: a column of 8 tiles, like a product block's */
  int64_t rows = rt * b, bytes_tile = 8 * b * b;
  int64_t ct = (int64_t)(gib * 1073741824.0 / (double)(rt * bytes_tile) + 0.5), cols = ct * b;
  if (ct < 1) return 2;
  double gb = 8.0 * (double)rows * (double)cols / 1e9;
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) return 1;
  double *col = malloc((size_t)(rows * b) * sizeof *col);
  if (!col) return 1;
  for (int64_t i = 0; i < rows * b; i++) col[i] = (double)(i % 1000);
  double cold = 1e30, put = 1e30, pre = 1e30, warm = 1e30;
  int threads = 0;
  for (int r = 0; r < reps; r++)
    for (int q = 0; q < 2; q++) {
      int mode = (q + r) % 2; /* alternate which goes first: the first touch of memory the
                               * process never had can cost more (a VM's host faults too) */
      tcache_t *c;
      tstore_t *ts;
      if (tcache_create(ctx, 2 * (int64_t)(gb * 1e9), &c) != OOC_OK ||
          tstore_create(ctx, c, rows, cols, b, NULL, NULL, &ts) != OOC_OK)
        return 1;
      threads = tcache_threads(c);
      if (mode == 1) { /* the product's steps: 64 MiB (at least a tile) a call */
        ts_range_t all = {0, rt, 0, ct};
        int64_t made = 1;
        double t0 = now();
        while (made > 0)
          if (ts_prefill(ts, &all, 1, (int64_t)64 << 20, &made) != OOC_OK) return 1;
        double t = now() - t0;
        pre = t < pre ? t : pre;
      }
      double t = put_all(ts, col);
      if (t < 0) return 1;
      if (mode == 0) cold = t < cold ? t : cold;
      else put = t < put ? t : put;
      t = put_all(ts, col); /* same store again: cached tiles */
      if (t < 0) return 1;
      warm = t < warm ? t : warm;
      tstore_destroy(ts);
      tcache_destroy(c);
    }
  printf("{\"store_gb\": %.2f, \"tile\": %lld, \"threads\": %d, \"cold_s\": %.3f, "
         "\"cold_gbs\": %.2f, \"prefill_s\": %.3f, \"prefill_gbs\": %.2f, \"put_after_prefill_s\": "
         "%.3f, \"put_after_prefill_gbs\": %.2f, \"warm_s\": %.3f, \"warm_gbs\": %.2f}\n",
         gb, (long long)b, threads, cold, gb / cold, pre, gb / pre, put, gb / put, warm, gb / warm);
  free(col);
  ooc_ctx_destroy(ctx);
  return 0;
}

static void model_line(const char *what, const gemm_shape_t *sh, const gemm_rates_t *r) {
  gemm_pred_t p, ps;
  gemm_model(sh, r, &p);
  gemm_rates_t slow = *r; /* the plan's second look (gemm_model.h) */
  slow.gather *= GEMM_MODEL_SLOW_HOST;
  slow.store *= GEMM_MODEL_SLOW_HOST;
  gemm_model(sh, &slow, &ps);
  double fl = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k;
  printf("{\"model\": \"%s\", \"block\": %lld, \"blocks\": %lld, \"kb\": %lld, \"slots\": %d, "
         "\"cbuf\": %d, \"ends\": %d, \"total_s\": %.4f, \"tflops\": %.2f, \"device_s\": %.4f, "
         "\"idle_s\": %.4f, \"head_ms\": %.1f, \"tail_ms\": %.1f, \"host_s\": %.4f, "
         "\"wait_s\": %.4f, \"slow_host_total_s\": %.4f}\n",
         what, (long long)sh->s, (long long)p.blocks, (long long)sh->kb, sh->nslots, sh->ncblk,
         sh->ends, p.total, fl / p.total * 1e-12, p.device, p.total - p.device, 1e3 * p.head,
         1e3 * p.tail, p.host, p.total - p.host, ps.total);
}

/* The GPU plan and the ends' savings as the model sees them (gemm_model.h). */
static int model_bench(int64_t n, int64_t b, int64_t gpu_mem) {
  gemm_rates_t r = gemm_rates_gpu();
  const int all = GEMM_END_FIRST | GEMM_END_LAST;
  gemm_shape_t plan;
  /* gemm_device_plan's room: --gpu-mem less the cuBLAS workspace (32 MiB) */
  if (!gemm_model_plan(n, n, n, b, gpu_mem - ((int64_t)32 << 20), all, 0, &r, &plan, NULL)) {
    fprintf(stderr, "bench_gemm model: not even a block of one tile fits\n");
    return 1;
  }
  printf("{\"rates\": {\"tflops\": %.1f, \"gather_gbs\": %.1f, \"store_gbs\": %.1f, "
         "\"h2d_gbs\": %.1f, \"d2h_gbs\": %.1f}}\n", r.flops * 1e-12, r.gather * 1e-9,
         r.store * 1e-9, r.h2d * 1e-9, r.d2h * 1e-9);
  gemm_shape_t sh = plan;
  model_line("plan", &sh, &r);
  for (int e = 0; e < 3; e++) {
    sh.ends = e == 0 ? 0 : e == 1 ? GEMM_END_FIRST : GEMM_END_LAST;
    model_line(e == 0 ? "plan, ends off" : e == 1 ? "plan, first only" : "plan, last only", &sh,
               &r);
  }
  /* the largest block with 2 C buffers and 3 slots: the plan before the model replayed the
   * schedule (20480 at n = 49152, --gpu-mem 12G) */
  int64_t big = 0;
  for (int64_t t = b; t <= ooc_cdiv64(n, b) * b; t += b)
    if (gemm_exec_bytes(ooc_min64(t, n), ooc_min64(t, n), ooc_min64(b, n), 3, 2) <=
        gpu_mem - ((int64_t)32 << 20))
      big = t;
  if (big > 0) {
    sh = (gemm_shape_t){.m = n, .n = n, .k = n, .b = b, .s = big, .kb = b, .nslots = 3,
                        .ncblk = 2, .ends = 0};
    model_line("largest 2s3, ends off (the previous plan)", &sh, &r);
    sh.ends = GEMM_END_FIRST;
    model_line("largest 2s3, first only", &sh, &r);
    sh.ends = GEMM_END_LAST;
    model_line("largest 2s3, last only", &sh, &r);
    sh.ends = all;
    model_line("largest 2s3, ends on", &sh, &r);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "model"))
    return model_bench(argc > 2 ? atoll(argv[2]) : 49152, argc > 3 ? atoll(argv[3]) : 4096,
                       argc > 4 ? ooc_parse_size(argv[4]) : (int64_t)12 << 30);
  if (argc > 1 && !strcmp(argv[1], "store"))
    return store_bench(argc > 2 ? atof(argv[2]) : 4.0, argc > 3 ? atoll(argv[3]) : 4096,
                       argc > 4 ? atoi(argv[4]) : 3);
  long n = argc > 1 ? atol(argv[1]) : 4096;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  double *A = malloc(sizeof(double) * (size_t)(n * n)), *B = malloc(sizeof(double) * (size_t)(n * n)),
         *C = malloc(sizeof(double) * (size_t)(n * n));
  if (!A || !B || !C) return 1;
  for (long i = 0; i < n * n; i++) {
    A[i] = (double)((i * 7919) % 1000) / 1000.0 - 0.5;
    B[i] = (double)((i * 104729) % 1000) / 1000.0 - 0.5;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, A, (int)n,
                B, (int)n, 0.0, C, (int)n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("{\"n\": %ld, \"seconds\": %.4f, \"gflops\": %.2f}\n", n, best,
         2.0 * n * n * n / best * 1e-9);
  free(A);
  free(B);
  free(C);
  return 0;
}
