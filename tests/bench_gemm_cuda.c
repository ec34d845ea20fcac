/*
 * bench_gemm_cuda.c: the out-of-core product on the GPU executor (src/kernels/cuda/ocu_gemm.c)
 * against the in-core cuBLAS DGEMM ceiling, in one process. Built by CMake when CUDA is found.
 *   bench_gemm_cuda check                 GPU product vs the CPU product (odd shapes, tiles, a
 *                                         256 MiB GPU budget forcing many blocks; one and two C
 *                                         buffers): max rel. error
 *   bench_gemm_cuda ceil [n=16384]        cublasDgemm_64 in core, best of 3: TFLOP/s
 *   bench_gemm_cuda ooc N TILE GPUMEM [V...]
 *                                         C = A B, N x N, stores in host memory (all cached, no
 *                                         HDF5: what is timed is the executor and the tile store
 *                                         gather), --gpu-mem GPUMEM, once per variant V:
 *                                         "plan" (ocu_gemm_plan's choice), "C[sS][t1]": C = 1 or 2
 *                                         C buffers, S = 2 or 3 panel slots (default: the
 *                                         plan's), the largest block that fits; t1: one copy
 *                                         thread (the old gather). Default "plan 1". TFLOP/s,
 *                                         gather and wait time.
 * Lines starting with RESULT are the figures.
 */
#include <pthread.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/ocu_gemm.h"
#include "kernels/ops.h"
#include "solvers/oocgemm.h"

static void die(ooc_ctx_t *ctx, const char *what) {
  fprintf(stderr, "bench_gemm_cuda: %s: %s\n", what, ctx ? ooc_ctx_error(ctx) : "");
  exit(1);
}

static double pattern(int64_t i, int64_t j, int seed) {
  uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)j * 0xC2B2AE3D27D4EB4FULL ^
               (uint64_t)seed;
  h ^= h >> 29;
  return (double)(h % 2001) / 1000.0 - 1.0;
}

typedef struct {
  double *strip;
  int64_t rows, c0, nc, j0, j1;
  int seed;
} fill_t;

static void *fill_part(void *arg) {
  fill_t *f = arg;
  for (int64_t j = f->j0; j < f->j1; j++)
    for (int64_t i = 0; i < f->rows; i++) f->strip[i + j * f->rows] = pattern(i, f->c0 + j, f->seed);
  return NULL;
}

/* A store of rows x cols filled with a cheap pattern (value depends on the seed, i and j), a
 * tile column at a time, the pattern computed by 16 threads. */
static tstore_t *filled(ooc_ctx_t *ctx, tcache_t *c, int64_t rows, int64_t cols, int64_t b,
                        int seed) {
  tstore_t *ts = NULL;
  if (tstore_create(ctx, c, rows, cols, b, NULL, NULL, &ts) != OOC_OK) die(ctx, "store");
  part_t cp = ts_cols(ts);
  double *strip = malloc((size_t)(rows * b + 1) * sizeof *strip);
  if (!strip) die(NULL, "out of memory");
  enum { NT = 16 };
  for (int64_t tj = 0; tj < cp.count; tj++) {
    int64_t nc = part_len(cp, tj);
    pthread_t th[NT];
    fill_t f[NT];
    for (int t = 0; t < NT; t++) {
      f[t] = (fill_t){strip, rows, part_start(cp, tj), nc, nc * t / NT, nc * (t + 1) / NT, seed};
      pthread_create(&th[t], NULL, fill_part, &f[t]);
    }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    if (ts_put_col(ts, tj, strip, rows) != OOC_OK) die(ctx, "fill");
  }
  free(strip);
  return ts;
}

static double *read_all(tstore_t *ts) {
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  double *M = malloc((size_t)(rp.n * cp.n) * sizeof *M);
  for (int64_t tj = 0; tj < cp.count; tj++)
    for (int64_t ti = 0; ti < rp.count; ti++)
      ts_read(ts, ti, tj, M + part_start(rp, ti) + part_start(cp, tj) * rp.n, rp.n);
  return M;
}

static int check(void) {
  ooc_ctx_t *ctx;
  ooc_ctx_create(&ctx);
  const int64_t shapes[][4] = {{3000, 2500, 2700, 512}, {777, 1300, 901, 128}, {64, 64, 1, 64}};
  double worst = 0;
  for (int q = 0; q < 3; q++) {
    int64_t m = shapes[q][0], n = shapes[q][1], k = shapes[q][2], b = shapes[q][3];
    tcache_t *c;
    tcache_create(ctx, (int64_t)8 << 30, &c);
    tstore_t *A = filled(ctx, c, m, k, b, 1), *B = filled(ctx, c, k, n, b, 2);
    tstore_t *C[5];
    for (int i = 0; i < 5; i++) C[i] = filled(ctx, c, m, n, b, 3);
    for (int gpu = 0; gpu < 5; gpu++) { /* 0: CPU; 1-4: GPU with 1, 2 C buffers x 2, 3 slots */
      gemm_args_t g = {.A = A, .B = B, .C = C[gpu], .alpha = -1.5, .beta = 0.5,
                       .ops = ooc_ops_cpu(), .block = 1 << 30};
      gemm_exec_t *ex = NULL;
      if (gpu) {
        ocu_config_t cfg = {.gpu_mem = (int64_t)256 << 20};
        int64_t s, kb;
        int nc, ns, want_c = (gpu + 1) / 2, want_s = 2 + (gpu + 1) % 2;
        if (ocu_gemm_plan(ctx, m, n, k, b, &cfg, 0, &s, &kb, &ns, &nc) != OOC_OK) die(ctx, "plan");
        /* the configuration asked for: the largest block that fits it */
        while (s > b && ocu_gemm_bytes(ooc_min64(s, m), ooc_min64(s, n), ooc_min64(kb, k), want_s,
                                       want_c) + ((int64_t)32 << 20) > cfg.gpu_mem)
          s -= b;
        if (ocu_gemm_create(ctx, ooc_min64(s, m), ooc_min64(s, n), ooc_min64(kb, k), want_s,
                            want_c, &cfg, &ex) != OOC_OK)
          die(ctx, "create");
        g.block = s;
        g.kblock = kb;
        g.exec = ex;
        printf("check %lld x %lld x %lld tile %lld: GPU block %lld, panels %lld x %d, %d C "
               "buffer(s) (plan: %lld x %d, %d)\n", (long long)m, (long long)n, (long long)k,
               (long long)b, (long long)s, (long long)kb, want_s, want_c, (long long)kb, ns, nc);
      }
      if (gemm_run(ctx, &g, NULL) != OOC_OK) die(ctx, "gemm_run");
      if (ex && ocu_gemm_destroy(ex) != OOC_OK) die(ctx, "destroy");
    }
    double *X = read_all(C[0]);
    for (int gpu = 1; gpu < 5; gpu++) {
      double *Y = read_all(C[gpu]), scale = 0, err = 0;
      for (int64_t i = 0; i < m * n; i++) {
        scale = fmax(scale, fabs(X[i]));
        err = fmax(err, isnan(Y[i]) ? INFINITY : fabs(X[i] - Y[i]));
      }
      double rel = err / (scale > 0 ? scale : 1);
      printf("check %lld x %lld x %lld, GPU config %d: max |GPU - CPU| / max |C| = %.3g\n",
             (long long)m, (long long)n, (long long)k, gpu, rel);
      worst = fmax(worst, isnan(rel) ? INFINITY : rel);
      free(Y);
    }
    free(X);
    tstore_destroy(A);
    tstore_destroy(B);
    for (int i = 0; i < 5; i++) tstore_destroy(C[i]);
    tcache_destroy(c);
  }
  printf("RESULT check worst relative difference %.3g (%s)\n", worst, worst < 1e-12 ? "PASS" : "FAIL");
  ooc_ctx_destroy(ctx);
  return worst < 1e-12 ? 0 : 1;
}

static int ceil_bench(int64_t n) {
  double *dA, *dB, *dC;
  size_t bytes = (size_t)(n * n) * sizeof(double);
  if (cudaMalloc((void **)&dA, bytes) || cudaMalloc((void **)&dB, bytes) ||
      cudaMalloc((void **)&dC, bytes)) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(dA, 0, bytes);
  cudaMemset(dB, 0, bytes);
  cublasHandle_t h;
  cublasCreate(&h);
  double one = 1, zero = 0, best = 1e30;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int r = 0; r < 4; r++) {
    cudaEventRecord(a, 0);
    cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, dA, n, dB, n, &zero, dC, n);
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (r > 0 && ms < best) best = ms; /* the first is warm-up */
  }
  printf("RESULT ceil cublasDgemm_64 n=%lld in core: %.3f s, %.2f TFLOP/s\n", (long long)n,
         best / 1e3, 2.0 * n * n * n / (best / 1e3) * 1e-12);
  cublasDestroy(h);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  return 0;
}

static double spot_check(tstore_t *A, tstore_t *B, tstore_t *C, int64_t n, double *tile) {
  double *row = malloc((size_t)n * sizeof *row), *col = malloc((size_t)n * sizeof *col);
  double maxrel = 0;
  part_t p = ts_rows(A);
  for (int q = 0; q < 3; q++) {
    int64_t i = (q * 7919) % n, j = (q * 104729 + 13) % n;
    int64_t ti = part_index(p, i), tj = part_index(p, j);
    for (int64_t kt = 0; kt < p.count; kt++) { /* row i of A, column j of B */
      int64_t len = part_len(p, kt);
      ts_read(A, ti, kt, tile, part_len(p, ti));
      for (int64_t l = 0; l < len; l++) row[part_start(p, kt) + l] = tile[(i - part_start(p, ti)) + l * part_len(p, ti)];
      ts_read(B, kt, tj, tile, len);
      for (int64_t l = 0; l < len; l++) col[part_start(p, kt) + l] = tile[l + (j - part_start(p, tj)) * len];
    }
    double dot = 0, mag = 0;
    for (int64_t l = 0; l < n; l++) {
      dot += row[l] * col[l];
      mag += fabs(row[l] * col[l]);
    }
    ts_read(C, ti, tj, tile, part_len(p, ti));
    double got = tile[(i - part_start(p, ti)) + (j - part_start(p, tj)) * part_len(p, ti)];
    maxrel = fmax(maxrel, isnan(got) ? INFINITY : fabs(got - dot) / mag);
  }
  free(row);
  free(col);
  return maxrel;
}

static int ooc_bench(int64_t n, int64_t b, int64_t gpu_mem, int nv, char **variants) {
  static char *defaults[] = {"plan", "1"};
  if (nv == 0) {
    nv = 2;
    variants = defaults;
  }
  ooc_ctx_t *ctx;
  ooc_ctx_create(&ctx);
  double *tile = malloc((size_t)(b * b) * sizeof *tile);
  tcache_t *c;
  tcache_create(ctx, (int64_t)100 << 30, &c);
  double t0 = ooc_now();
  tstore_t *A = filled(ctx, c, n, n, b, 1), *B = filled(ctx, c, n, n, b, 2);
  tstore_t *C = NULL;
  if (tstore_create(ctx, c, n, n, b, NULL, NULL, &C) != OOC_OK) die(ctx, "store C");
  printf("filled A, B (%lld x %lld, tile %lld) in %.1f s; %d copy threads\n", (long long)n,
         (long long)n, (long long)b, ooc_now() - t0, tcache_threads(c));
  fflush(stdout);
  int fails = 0;
  for (int v = 0; v < nv; v++) {
    const char *var = variants[v];
    ocu_config_t cfg = {.gpu_mem = gpu_mem};
    int64_t s, kb;
    int nc, ns, want = !strcmp(var, "plan") ? 0 : atoi(var);
    const char *sl = strchr(var, 's');
    int want_s = sl ? atoi(sl + 1) : 0;
    if (ocu_gemm_plan(ctx, n, n, n, b, &cfg, 0, &s, &kb, &ns, &nc) != OOC_OK) die(ctx, "plan");
    if (want || want_s) { /* the largest block for the forced configuration */
      nc = want ? want : nc;
      ns = want_s ? want_s : ns;
      s = 0;
      for (int64_t t = b; t <= ooc_cdiv64(n, b) * b; t += b)
        if (ocu_gemm_bytes(ooc_min64(t, n), ooc_min64(t, n), ooc_min64(kb, n), ns, nc) +
                ((int64_t)32 << 20) <= gpu_mem)
          s = t;
      if (s == 0) die(NULL, "variant does not fit");
    }
    tcache_set_threads(c, strstr(var, "t1") ? 1 : 0);
    gemm_exec_t *ex = NULL;
    if (ocu_gemm_create(ctx, ooc_min64(s, n), ooc_min64(s, n), ooc_min64(kb, n), ns, nc, &cfg,
                        &ex) != OOC_OK)
      die(ctx, "create");
    gemm_args_t g = {.A = A, .B = B, .C = C, .alpha = 1, .beta = 0, .ops = ooc_ops_cpu(),
                     .block = s, .kblock = kb, .exec = ex};
    gemm_stats_t gs = {0};
    t0 = ooc_now();
    if (gemm_run(ctx, &g, &gs) != OOC_OK) die(ctx, "gemm_run");
    double t = ooc_now() - t0;
    ocu_stats_t os;
    ocu_gemm_stats(ex, &os);
    double flops = 2.0 * n * n * n;
    printf("RESULT ooc [%s] n=%lld tile %lld gpu-mem %.1f GiB: block %lld, panels %lld x %d, %d C "
           "buffer(s), %lld blocks, %d copy threads: %.2f s, %.2f TFLOP/s (host gather/store "
           "%.2f s, waiting for the GPU %.2f s of which prefilling C's new tiles %.2f s for "
           "%.1f GiB, H2D %.1f GiB, D2H %.1f GiB, device %.2f GiB, pinned %.2f GiB)\n",
           var, (long long)n, (long long)b, gpu_mem / 1073741824.0, (long long)s, (long long)kb,
           ns, nc, (long long)gs.blocks, tcache_threads(c), t, flops / t * 1e-12, gs.t_io, gs.t_gemm,
           gs.t_prefill, gs.bytes_prefill / 1073741824.0,
           os.bytes_h2d / 1073741824.0, os.bytes_d2h / 1073741824.0, os.dev_peak / 1073741824.0,
           os.pinned_bytes / 1073741824.0);
    ocu_gemm_destroy(ex);
    double maxrel = spot_check(A, B, C, n, tile);
    printf("RESULT ooc [%s] spot check max |C_ij - dot| / sum |a b| = %.3g (%s)\n", var, maxrel,
           maxrel < 1e-13 ? "PASS" : "FAIL");
    fails += !(maxrel < 1e-13);
    fflush(stdout);
  }
  tstore_destroy(A);
  tstore_destroy(B);
  tstore_destroy(C);
  tcache_destroy(c);
  free(tile);
  ooc_ctx_destroy(ctx);
  return fails ? 1 : 0;
}

int main(int argc, char **argv) {
  char why[256];
  if (!ocu_probe(why, sizeof why)) { /* before filling tens of GiB */
    fprintf(stderr, "bench_gemm_cuda: no usable GPU (%s)\n", why);
    return 77;
  }
  if (argc > 1 && !strcmp(argv[1], "check")) return check();
  if (argc > 1 && !strcmp(argv[1], "ceil")) return ceil_bench(argc > 2 ? atoll(argv[2]) : 16384);
  if (argc > 4 && !strcmp(argv[1], "ooc"))
    return ooc_bench(atoll(argv[2]), atoll(argv[3]), ooc_parse_size(argv[4]), argc - 5, argv + 5);
  fprintf(stderr, "usage: bench_gemm_cuda check | ceil [n] | ooc N TILE GPUMEM [plan|C[sS][t1] ...]\n");
  return 2;
}
