/*
 * bench_gemm_cuda.c: the out-of-core product on the GPU executor (src/solvers/oocgemm.c)
 * against the in-core cuBLAS DGEMM ceiling, in one process. Built by CMake when CUDA is found.
 *   bench_gemm_cuda check                 GPU product vs the CPU product (odd shapes, tiles, a
 *                                         256 MiB GPU budget forcing many blocks; one and two C
 *                                         buffers, two and three slots, the schedule's ends on
 *                                         and off): max rel. error
 *   bench_gemm_cuda ceil [n=16384]        cublasDgemm_64 in core, best of 3: TFLOP/s
 *   bench_gemm_cuda ooc N TILE GPUMEM [V...]
 *                                         C = A B, N x N, stores in host memory (all cached, no
 *                                         HDF5: what is timed is the executor and the tile store
 *                                         gather), --gpu-mem GPUMEM, once per variant V, all in
 *                                         one process (the first into a fresh C store: "cold"):
 *                                         V = BASE[sS][bB][kK][eE][c][t1], BASE = "plan"
 *                                         (gemm_device_plan's choice) or C = 1 or 2 C buffers with
 *                                         the largest block that fits; then, each optional:
 *                                         sS: S = 2 or 3 panel slots (default: the plan's);
 *                                         bB: block edge B tiles; kK: panels of K tiles;
 *                                         eE: the schedule's ends in effect (oocgemm.h
 *                                         GEMM_END_*: 0 none, 1 first, 2 last, 3 both, the
 *                                         default); c: into a fresh C store (cold; the cache's
 *                                         pooled buffers freed first); t1: one copy thread (the
 *                                         old gather). Default "plan 1". TFLOP/s, gather and
 *                                         wait time, and the model's prediction (gemm_model.h).
 *                                         The plan before the model replayed the schedule, at
 *                                         N = 49152, TILE 4096, 12G: "2s3e0" (block 20480).
 *   bench_gemm_cuda gemms N TILE GPUMEM [V...]
 *                                         only the GEMMs of variant V's schedule (same block
 *                                         and panel shapes, same count), back to back on device
 *                                         buffers, no copies: the sustained DGEMM rate the
 *                                         product can reach (the ceiling of `ooc`; the in-core
 *                                         `ceil` is a 0.13 s burst)
 * Lines starting with RESULT are the figures.
 */
#include <pthread.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu.h"
#include "kernels/ops.h"
#include "solvers/gemm_model.h"
#include "solvers/oocgemm.h"

/* The product's executor as the CLI makes it (api/plan.h plan_exec_config: three queues) */
static ex_cuda_config_t gemm_xc(int64_t gpu_mem) {
  return (ex_cuda_config_t){.gpu_mem = gpu_mem, .nqueues = 3};
}

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
    enum { NCFG = 9 };
    tstore_t *C[NCFG];
    for (int i = 0; i < NCFG; i++) C[i] = filled(ctx, c, m, n, b, 3);
    for (int gpu = 0; gpu < NCFG; gpu++) { /* 0: CPU; 1-4: GPU with 1, 2 C buffers x 2, 3 slots;
                                            * 5-8: the same without the schedule's ends */
      gemm_args_t g = {.A = A, .B = B, .C = C[gpu], .alpha = -1.5, .beta = 0.5,
                       .ops = ooc_ops_cpu(), .block = 1 << 30,
                       .ends_off = gpu > 4 ? GEMM_END_FIRST | GEMM_END_LAST : 0};
      ooc_exec_t *ex = NULL;
      gemm_dev_t *dev = NULL;
      if (gpu) {
        ex_cuda_config_t xc = gemm_xc((int64_t)256 << 20);
        int64_t s, kb;
        int cfgi = (gpu - 1) % 4 + 1;
        int nc, ns, want_c = (cfgi + 1) / 2, want_s = 2 + (cfgi + 1) % 2;
        if (ex_cuda_create(ctx, &xc, &ex) != OOC_OK) die(ctx, "create");
        if (gemm_device_plan(ctx, ex, m, n, k, b, 0, &s, &kb, &ns, &nc) != OOC_OK) die(ctx, "plan");
        /* the configuration asked for: the largest block that fits it */
        while (s > b && gemm_exec_bytes(ooc_min64(s, m), ooc_min64(s, n), ooc_min64(kb, k), want_s,
                                        want_c) > ex->budget)
          s -= b;
        if (gemm_dev_create(ex, ooc_min64(s, m), ooc_min64(s, n), ooc_min64(kb, k), want_s, want_c,
                            &dev) != OOC_OK)
          die(ctx, "create");
        g.block = s;
        g.kblock = kb;
        g.dev = dev;
        printf("check %lld x %lld x %lld tile %lld: GPU block %lld, panels %lld x %d, %d C "
               "buffer(s), ends %s (plan: %lld x %d, %d)\n", (long long)m, (long long)n,
               (long long)k, (long long)b, (long long)s, (long long)kb, want_s, want_c,
               gpu > 4 ? "off" : "on", (long long)kb, ns, nc);
      }
      if (gemm_run(ctx, &g, NULL) != OOC_OK) die(ctx, "gemm_run");
      if (dev && gemm_dev_destroy(dev) != OOC_OK) die(ctx, "destroy");
      ex_destroy(ex);
    }
    double *X = read_all(C[0]);
    for (int gpu = 1; gpu < NCFG; gpu++) {
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
    for (int i = 0; i < NCFG; i++) tstore_destroy(C[i]);
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

/* A variant of the product (see the usage above). */
typedef struct variant {
  int64_t s, kb; /* block edge, panel width */
  int ns, nc, ends, cold, one_thread;
} variant_t;

static int64_t num_after(const char *v, char key) {
  for (const char *p = v; *p; p++)
    if (*p == key && p[1] >= '0' && p[1] <= '9') return atoll(p + 1);
  return -1;
}

static void parse_variant(ooc_ctx_t *ctx, const char *var, int64_t n, int64_t b, int64_t gpu_mem,
                          variant_t *v) {
  int is_plan = !strncmp(var, "plan", 4);
  const char *rest = is_plan ? var + 4 : var;
  while (*rest >= '0' && *rest <= '9') rest++; /* past the C count */
  ex_cuda_config_t xc = gemm_xc(gpu_mem);
  ooc_exec_t *x = NULL;
  if (ex_cuda_create(ctx, &xc, &x) != OOC_OK) die(ctx, "create");
  if (gemm_device_plan(ctx, x, n, n, n, b, 0, &v->s, &v->kb, &v->ns, &v->nc) != OOC_OK)
    die(ctx, "plan");
  ex_destroy(x);
  int want_c = is_plan ? 0 : atoi(var);
  int64_t want_s = num_after(rest, 's'), want_b = num_after(rest, 'b');
  int64_t want_k = num_after(rest, 'k'), want_e = num_after(rest, 'e');
  v->ends = want_e >= 0 ? (int)want_e : GEMM_END_FIRST | GEMM_END_LAST;
  v->cold = strchr(rest, 'c') != NULL;
  v->one_thread = strstr(rest, "t1") != NULL;
  if (want_c > 0) v->nc = want_c;
  if (want_s > 0) v->ns = (int)want_s;
  if (want_k > 0) v->kb = want_k * b;
  if (want_b > 0) {
    v->s = want_b * b;
  } else if (want_c > 0 || want_s > 0 || want_k > 0) { /* the largest block for the forced one */
    v->s = 0;
    for (int64_t t = b; t <= ooc_cdiv64(n, b) * b; t += b)
      if (gemm_exec_bytes(ooc_min64(t, n), ooc_min64(t, n), ooc_min64(v->kb, n), v->ns, v->nc) +
              ((int64_t)32 << 20) <= gpu_mem)
        v->s = t;
  }
  if (v->s == 0 ||
      gemm_exec_bytes(ooc_min64(v->s, n), ooc_min64(v->s, n), ooc_min64(v->kb, n), v->ns, v->nc) +
              ((int64_t)32 << 20) > gpu_mem) {
    fprintf(stderr, "bench_gemm_cuda: variant %s does not fit %lld bytes\n", var,
            (long long)gpu_mem);
    exit(1);
  }
}

/* The variant's GEMMs alone, as gemm_run issues them (whole panels), on device buffers. */
static int gemms_bench(int64_t n, int64_t b, int64_t gpu_mem, int nv, char **variants) {
  static char *defaults[] = {"plan"};
  if (nv == 0) {
    nv = 1;
    variants = defaults;
  }
  ooc_ctx_t *ctx;
  ooc_ctx_create(&ctx);
  for (int q = 0; q < nv; q++) {
    variant_t v;
    parse_variant(ctx, variants[q], n, b, gpu_mem, &v);
    int64_t MB = ooc_min64(v.s, n), KB = ooc_min64(v.kb, n);
    double *dA, *dB, *dC[2];
    if (cudaMalloc((void **)&dA, (size_t)(MB * KB) * 8) ||
        cudaMalloc((void **)&dB, (size_t)(KB * MB) * 8) ||
        cudaMalloc((void **)&dC[0], (size_t)(MB * MB) * 8) ||
        cudaMalloc((void **)&dC[1], (size_t)(MB * MB) * 8)) {
      fprintf(stderr, "bench_gemm_cuda: cudaMalloc failed\n");
      return 1;
    }
    cudaMemset(dA, 0, (size_t)(MB * KB) * 8);
    cudaMemset(dB, 0, (size_t)(KB * MB) * 8);
    cublasHandle_t h;
    cublasCreate(&h);
    double one = 1, zero = 0;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int64_t nblk = ooc_cdiv64(n, v.s), nkp = ooc_cdiv64(n, v.kb), calls = 0;
    cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, MB, MB, KB, &one, dA, MB, dB, KB, &zero, dC[0],
                   MB); /* warm-up */
    cudaEventRecord(e0, 0);
    for (int64_t bi = 0; bi < nblk; bi++)
      for (int64_t bj = 0; bj < nblk; bj++) {
        int64_t mb = ooc_min64(v.s, n - bi * v.s), nb = ooc_min64(v.s, n - bj * v.s);
        for (int64_t kp = 0; kp < nkp; kp++, calls++) {
          int64_t kb = ooc_min64(v.kb, n - kp * v.kb);
          cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, mb, nb, kb, &one, dA, mb, dB, kb,
                         kp ? &one : &zero, dC[(bi * nblk + bj) % 2], mb);
        }
      }
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    double t = ms / 1e3, fl = 2.0 * n * n * n;
    gemm_rates_t r = gemm_rates_gpu();
    printf("RESULT gemms [%s] n=%lld block %lld panels %lld: %lld GEMMs back to back in %.3f s, "
           "%.2f TFLOP/s sustained (the model assumes %.1f)\n", variants[q], (long long)n,
           (long long)v.s, (long long)v.kb, (long long)calls, t, fl / t * 1e-12, r.flops * 1e-12);
    fflush(stdout);
    cublasDestroy(h);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC[0]);
    cudaFree(dC[1]);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  ooc_ctx_destroy(ctx);
  return 0;
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
    variant_t vv;
    parse_variant(ctx, var, n, b, gpu_mem, &vv);
    int64_t s = vv.s, kb = vv.kb;
    int ns = vv.ns, nc = vv.nc;
    if (vv.cold && v > 0) { /* a fresh C: new tiles, none of the old ones' buffers pooled */
      tstore_destroy(C);
      tcache_trim(c);
      if (tstore_create(ctx, c, n, n, b, NULL, NULL, &C) != OOC_OK) die(ctx, "store C");
    }
    tcache_set_threads(c, vv.one_thread ? 1 : 0);
    ooc_exec_t *ex = NULL;
    gemm_dev_t *dev = NULL;
    ex_cuda_config_t xc = gemm_xc(gpu_mem);
    if (ex_cuda_create(ctx, &xc, &ex) != OOC_OK ||
        gemm_dev_create(ex, ooc_min64(s, n), ooc_min64(s, n), ooc_min64(kb, n), ns, nc, &dev) !=
            OOC_OK)
      die(ctx, "create");
    gemm_args_t g = {.A = A, .B = B, .C = C, .alpha = 1, .beta = 0, .ops = ooc_ops_cpu(),
                     .block = s, .kblock = kb, .dev = dev,
                     .ends_off = (GEMM_END_FIRST | GEMM_END_LAST) & ~vv.ends};
    gemm_stats_t gs = {0};
    t0 = ooc_now();
    if (gemm_run(ctx, &g, &gs) != OOC_OK) die(ctx, "gemm_run");
    double t = ooc_now() - t0;
    double flops = 2.0 * n * n * n;
    gemm_rates_t rates = gemm_rates_gpu();
    gemm_shape_t sh = {.m = n, .n = n, .k = n, .b = b, .s = s, .kb = kb, .nslots = ns,
                       .ncblk = nc, .ends = vv.ends};
    gemm_pred_t pr;
    gemm_model(&sh, &rates, &pr);
    printf("RESULT ooc [%s] n=%lld tile %lld gpu-mem %.1f GiB: block %lld, panels %lld x %d, %d C "
           "buffer(s), %lld blocks, ends %d, %d copy threads, C %s: %.2f s, %.2f TFLOP/s (host "
           "gather/store %.2f s, waiting for the GPU %.2f s of which prefilling C's new tiles "
           "%.2f s for %.1f GiB, H2D %.1f GiB, D2H %.1f GiB, device %.2f GiB, pinned %.2f GiB; "
           "model %.2f s: GEMMs %.2f s, head %.0f ms, tail %.0f ms)\n",
           var, (long long)n, (long long)b, gpu_mem / 1073741824.0, (long long)s, (long long)kb,
           ns, nc, (long long)gs.blocks, vv.ends, tcache_threads(c),
           v == 0 || vv.cold ? "cold" : "warm", t, flops / t * 1e-12, gs.t_io, gs.t_gemm,
           gs.t_prefill, gs.bytes_prefill / 1073741824.0,
           ex->stats.bytes_put / 1073741824.0, ex->stats.bytes_get / 1073741824.0,
           ex->stats.dev_peak / 1073741824.0, ex->stats.staging_peak / 1073741824.0, pr.total, pr.device, 1e3 * pr.head, 1e3 * pr.tail);
    gemm_dev_destroy(dev);
    ex_destroy(ex);
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
  if (argc > 4 && !strcmp(argv[1], "gemms"))
    return gemms_bench(atoll(argv[2]), atoll(argv[3]), ooc_parse_size(argv[4]), argc - 5,
                       argv + 5);
  fprintf(stderr, "usage: bench_gemm_cuda check | ceil [n] | ooc N TILE GPUMEM "
          "[plan|C][sS][bB][kK][eE][c][t1] ... | gemms N TILE GPUMEM [variants]\n");
  return 2;
}
