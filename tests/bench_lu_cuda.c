/*
 * bench_lu_cuda.c: LU with partial pivoting out of core on the CUDA executor (src/solvers/lu.c
 * on exec.h's ex_cuda) against cuSOLVER's in-core Xgetrf, in one process (issue 22). Built by
 * CMake when CUDA is found; not a ctest.
 *   bench_lu_cuda cusolver N              cusolverDnXgetrf of an N x N matrix resident on the
 *                                         device (best of 2): seconds, TFLOP/s at 2n^3/3
 *   bench_lu_cuda factor N TILE GPUMEM [W [CHUNK]]
 *                                         the same matrix in a host tile store (all cached: what
 *                                         is timed is the method, the executor and the ring, no
 *                                         HDF5), factored by lu_run on the CLI's CUDA executor
 *                                         (lu_cuda_config: its queues, priorities and rings;
 *                                         before 2026-11-29's fourteenth session the bench's
 *                                         rings were 64 KiB, the CLI's 1 MiB) with
 *                                         --gpu-mem GPUMEM and stripe W (default: the widest the
 *                                         budget holds, whole tiles; 0: that) and the
 *                                         panel's chunk CHUNK (0: LU_CHUNK); then a probe check
 *                                         ||P A t - L (U t)||_1 / (n ||A||_1 ||t||_1 eps) on one
 *                                         random t, streamed from the store on the host
 *   bench_lu_cuda host N TILE [W]         the same factor on the host executor over the cpu
 *                                         kernels (no GPU needed), stripe W (0: n / 4)
 * LU_DIRECT=1 in the environment: lu.h's "Direct moves" (lu_args_t.direct: columns moved in
 * place from pinned tiles, not gathered into the ring's slot), each tile pinned the first time
 * it is lent; LU_DIRECT=2: the same with every tile pinned as the fill makes it (tstore.h
 * tcache_pin_new: what the pipeline's load does), outside the timed factor.
 * LU_TRACE=PATH: the executor's Chrome/Perfetto trace (as oocsolve --trace; tools/trace_sum.py).
 * LU_QUEUES=2: the executor with two queues, where the pipeline's has three (lu.c QG: the panel's
 * chunks then go back on the queue that carries the next stripe in).
 * LU_URGENT=0: the copy queues at the default stream priority, where the pipeline's are urgent
 * (ex_cuda_config_t.urgent_copies: the scans beside the copies get SMs before the gemms' blocks).
 * The executor's libraries load their kernels before the clock starts (lu_warm, as the pipeline
 * does before its load); LU_COLD=1: in the factor's first getrf instead (on an H200 that getrf
 * took 0.115 s, the later ones 0.035-0.040 s).
 * The matrix: entries uniform in [-1, 1] from a hash of (i, j), as `oocgen random`: partial
 * pivoting moves nearly every row, as it does on the CLI's inputs. LU_DIAGDOM=1: diagonal + n
 * instead (what this bench used before 2026-11-29): the pivots stay on the diagonal, so no row
 * moves and the row interchanges (the device's laswp, the host's final swaps) cost nothing; the
 * CLI's factor at n = 40000 was 0.6 s slower than this bench's for that reason.
 * Lines starting with RESULT are the figures.
 */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda/exec_cuda.h"
#include "exec/exset.h"
#include "kernels/ops.h"
#include "solvers/lu.h"
#include "tiling/tstore.h"

static void die(ooc_ctx_t *ctx, const char *what) {
  fprintf(stderr, "bench_lu_cuda: %s: %s\n", what, ctx ? ooc_ctx_error(ctx) : "");
  exit(1);
}

#define CK(x)                                                                                      \
  do {                                                                                             \
    int e_ = (int)(x);                                                                             \
    if (e_) {                                                                                      \
      fprintf(stderr, "bench_lu_cuda: %s failed (%d) at line %d\n", #x, e_, __LINE__);             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int g_diagdom = -1; /* LU_DIAGDOM, read once */

static double entry(int64_t i, int64_t j, int64_t n) {
  uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)j * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return (double)(h % 2001) / 1000.0 - 1.0 + (g_diagdom && i == j ? (double)n : 0.0);
}

typedef struct {
  double *M;
  int64_t n, ld, c0, j0, j1;
} fill_t;

static void *fill_part(void *arg) {
  fill_t *f = arg;
  for (int64_t j = f->j0; j < f->j1; j++)
    for (int64_t i = 0; i < f->n; i++) f->M[i + j * f->ld] = entry(i, f->c0 + j, f->n);
  return NULL;
}

/* Columns [c0, c0 + nc) of the matrix into M (ld), on 16 threads. */
static void fill_cols(double *M, int64_t ld, int64_t n, int64_t c0, int64_t nc) {
  enum { NT = 16 };
  pthread_t th[NT];
  fill_t f[NT];
  for (int t = 0; t < NT; t++) {
    f[t] = (fill_t){M, n, ld, c0, nc * t / NT, nc * (t + 1) / NT};
    pthread_create(&th[t], NULL, fill_part, &f[t]);
  }
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
}

static double tnow(void) { return ooc_now(); }

static void run_cusolver(int64_t n) {
  double *h = malloc((size_t)(n * n) * sizeof *h), *A;
  if (!h) die(NULL, "out of host memory");
  fill_cols(h, n, n, 0, n);
  int64_t *ipiv;
  int *info;
  CK(cudaMalloc((void **)&A, 8 * n * n));
  CK(cudaMalloc((void **)&ipiv, 8 * n));
  CK(cudaMalloc((void **)&info, sizeof(int)));
  cusolverDnHandle_t s;
  cusolverDnParams_t par;
  CK(cusolverDnCreate(&s));
  CK(cusolverDnCreateParams(&par));
  size_t dws = 0, hws = 0;
  CK(cusolverDnXgetrf_bufferSize(s, par, n, n, CUDA_R_64F, A, n, CUDA_R_64F, &dws, &hws));
  void *dw, *hw = hws ? malloc(hws) : NULL;
  CK(cudaMalloc(&dw, dws ? dws : 1));
  double best = 1e30;
  for (int rep = 0; rep < 2; rep++) {
    CK(cudaMemcpy(A, h, 8 * n * n, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    double t0 = tnow();
    CK(cusolverDnXgetrf(s, par, n, n, CUDA_R_64F, A, n, ipiv, CUDA_R_64F, dw, dws, hw, hws, info));
    CK(cudaDeviceSynchronize());
    best = fmin(best, tnow() - t0);
  }
  printf("RESULT cusolver getrf n=%lld in core (device-resident): %.3f s, %.2f TFLOP/s at 2n^3/3\n",
         (long long)n, best, 2.0 * n * n * n / 3.0 / best * 1e-12);
  cudaFree(A), cudaFree(ipiv), cudaFree(info), cudaFree(dw);
  free(hw), free(h);
  cusolverDnDestroyParams(par);
  cusolverDnDestroy(s);
}

/* ||P A t - L (U t)||_1 / (n ||A||_1 ||t||_1 eps) for one random +-1 vector t: U t and L (U t)
 * stream the factors tile column by tile column; A t is regenerated from entry(). */
static double probe_check(ooc_ctx_t *ctx, tstore_t *F, const int64_t *ipiv, int64_t n) {
  part_t p = ts_cols(F);
  int64_t b = p.b;
  double *col = malloc((size_t)(n * b) * sizeof *col), *t = malloc((size_t)n * sizeof *t);
  double *u = calloc((size_t)n, sizeof *u), *y = calloc((size_t)n, sizeof *y);
  double *ax = calloc((size_t)n, sizeof *ax);
  if (!col || !t || !u || !y || !ax) die(NULL, "out of host memory");
  uint64_t s = 12345;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t[i] = (s >> 63) ? 1.0 : -1.0;
  }
  double anorm = 0;
  for (int64_t tj = 0; tj < p.count; tj++) { /* u = U t, y = L u after: two passes */
    int64_t c0 = part_start(p, tj), nc = part_len(p, tj);
    if (ts_read_tiles(F, 0, p.count, tj, tj + 1, col, n) != OOC_OK) die(ctx, "read factor");
    for (int64_t j = 0; j < nc; j++)
      for (int64_t i = 0; i <= c0 + j; i++) u[i] += col[i + j * n] * t[c0 + j];
    /* A t and ||A||_1, regenerated (the store holds the factors) */
    fill_cols(col, n, n, c0, nc);
    for (int64_t j = 0; j < nc; j++) {
      double cs = 0;
      for (int64_t i = 0; i < n; i++) {
        ax[i] += col[i + j * n] * t[c0 + j];
        cs += fabs(col[i + j * n]);
      }
      anorm = fmax(anorm, cs);
    }
  }
  for (int64_t tj = 0; tj < p.count; tj++) { /* y = L u, unit lower */
    int64_t c0 = part_start(p, tj), nc = part_len(p, tj);
    if (ts_read_tiles(F, 0, p.count, tj, tj + 1, col, n) != OOC_OK) die(ctx, "read factor");
    for (int64_t j = 0; j < nc; j++) {
      y[c0 + j] += u[c0 + j];
      for (int64_t i = c0 + j + 1; i < n; i++) y[i] += col[i + j * n] * u[c0 + j];
    }
  }
  for (int64_t i = 0; i < n; i++) { /* P A t: the swaps in forward order */
    double tmp = ax[i];
    ax[i] = ax[ipiv[i]];
    ax[ipiv[i]] = tmp;
  }
  double r = 0;
  for (int64_t i = 0; i < n; i++) r += fabs(ax[i] - y[i]);
  free(col), free(t), free(u), free(y), free(ax);
  return r / ((double)n * anorm * (double)n * DBL_EPSILON);
}

/* gpu_mem 0: on the host executor (lu_run's own, over the cpu kernels), stripe W (0: n / 4). */
static void run_factor(int64_t n, int64_t b, int64_t gpu_mem, int64_t W, int64_t chunk) {
  ooc_ctx_t *ctx;
  if (ooc_ctx_create(&ctx) != OOC_OK) die(NULL, "context");
  tcache_t *c;
  if (tcache_create(ctx, 8 * n * n + ((int64_t)4 << 30), &c) != OOC_OK) die(ctx, "cache");
  tstore_t *A;
  if (tstore_create(ctx, c, n, n, b, NULL, NULL, &A) != OOC_OK) die(ctx, "store");
  const char *dm = getenv("LU_DIRECT");
  int direct = dm ? atoi(dm) : 0;
  const char *nq = getenv("LU_QUEUES"); /* 2: the chunks' gets share the puts' queue */
  const char *ur = getenv("LU_URGENT");
  ex_cuda_config_t xc = lu_cuda_config(0, gpu_mem, n, getenv("LU_TRACE")); /* the CLI's */
  if (nq) xc.nqueues = atoi(nq);
  if (ur) xc.urgent_copies = atoi(ur);
  ooc_exec_t *ex = NULL;
  if (gpu_mem > 0 && ex_cuda_create(ctx, &xc, &ex) != OOC_OK) die(ctx, "executor");
  /* the libraries' kernels loaded before the clock, as the pipeline does before its load and
   * as cuSOLVER's peer is timed (its second run); LU_COLD=1: in the factor's first getrf */
  const char *cold = getenv("LU_COLD");
  if (ex && !(cold && atoi(cold)) && lu_warm(ex) != OOC_OK) die(ctx, "lu_warm");
  if (ex && direct == 2) { /* pinned as the fill makes each tile, as the pipeline's load does */
    tcache_set_pin(c, ex_pin_cb, ex_unpin_cb, ex);
    tcache_pin_new(c, 1);
  }
  part_t cp = ts_cols(A);
  double *strip = malloc((size_t)(n * b) * sizeof *strip);
  double tf = tnow(), tgen = 0;
  for (int64_t tj = 0; tj < cp.count; tj++) {
    double tg = tnow();
    fill_cols(strip, n, n, part_start(cp, tj), part_len(cp, tj));
    tgen += tnow() - tg;
    if (ts_put_col(A, tj, strip, n) != OOC_OK) die(ctx, "fill");
  }
  free(strip);
  printf("RESULT lu fill n=%lld: %.2f s into the store (%s), besides %.2f s generating\n",
         (long long)n, tnow() - tf - tgen, direct == 2 ? "each tile pinned as it is made" : "pageable",
         tgen);
  if (W <= 0) /* as job_lu.c */
    W = ex ? ooc_max64(b, lu_device_stripe(ex, n, b, LU_SLOTS, NULL)) : ooc_max64(b, n / 4);
  int64_t *ipiv = malloc((size_t)n * sizeof *ipiv);
  lu_args_t a = {.A = A, .stripe = W, .ops = ooc_ops_cpu(), .exec = ex, .job = LU_FACTOR,
                 .ipiv = ipiv, .chunk = chunk, .direct = direct > 0};
  lu_stats_t st;
  int64_t info = 0;
  double t0 = tnow();
  if (lu_run(ctx, &a, &st, &info) != OOC_OK) die(ctx, "lu_run");
  double t = tnow() - t0;
  printf("RESULT lu factor n=%lld tile %lld chunk %lld gpu-mem %.1f GiB: stripe %lld, %lld steps, "
         "%.3f s, "
         "%.2f TFLOP/s at 2n^3/3 (host takes %.2f s, puts %.2f s, device waits %.2f s; streamed "
         "%.1f GiB; device peak %.2f GiB; growth %.3g)\n",
         (long long)n, (long long)b, (long long)(chunk > 0 ? chunk : LU_CHUNK),
         gpu_mem / 1073741824.0, (long long)ts_stripe(n, b, W),
         (long long)st.steps, t, 2.0 * n * n * n / 3.0 / t * 1e-12, st.t_take, st.t_put,
         st.t_wait, st.bytes_streamed / 1073741824.0, ex ? ex->stats.dev_peak / 1073741824.0 : 0.0,
         st.growth);
  printf("RESULT lu factor n=%lld phases: stripe in %.2f s, earlier columns %.2f s, panel getrf "
         "%.2f s, stripe out %.2f s, final swaps %.2f s; host store copies %.1f GB/s\n",
         (long long)n, st.t_in, st.t_left, st.t_panel, st.t_out, st.t_fix,
         st.t_take > 0 ? 1e-9 * st.bytes_streamed / (st.t_take + st.t_put) : 0.0);
  printf("RESULT lu factor n=%lld %s: %.1f of %.1f GiB moved in place, %.1f GiB pinned, %lld "
         "buffers refused\n", (long long)n, a.direct ? "direct moves" : "slot copies",
         st.bytes_direct / 1073741824.0, st.bytes_streamed / 1073741824.0,
         st.bytes_pinned / 1073741824.0, (long long)st.pin_refused);
  double tu = tnow();
  tcache_set_pin(c, NULL, NULL, NULL); /* unpins what the fill pinned (none: nothing) */
  if (direct == 2) printf("RESULT lu unpin n=%lld: %.2f s\n", (long long)n, tnow() - tu);
  ex_destroy(ex); /* NULL is fine */
  double r = probe_check(ctx, A, ipiv, n);
  printf("RESULT lu factor n=%lld probe ratio ||PAt - LUt|| / (n ||A|| ||t|| eps) = %.3g (%s)\n",
         (long long)n, r, r < 30 ? "PASS" : "FAIL");
  free(ipiv);
  tstore_destroy(A);
  tcache_destroy(c);
  ooc_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  const char *dd = getenv("LU_DIAGDOM");
  g_diagdom = dd && atoi(dd) > 0;
  if (argc >= 3 && !strcmp(argv[1], "cusolver")) {
    run_cusolver(atoll(argv[2]));
    return 0;
  }
  if (argc >= 5 && !strcmp(argv[1], "factor")) {
    run_factor(atoll(argv[2]), atoll(argv[3]), ooc_parse_size(argv[4]),
               argc > 5 ? atoll(argv[5]) : 0, argc > 6 ? atoll(argv[6]) : 0);
    return 0;
  }
  if (argc >= 4 && !strcmp(argv[1], "host")) {
    run_factor(atoll(argv[2]), atoll(argv[3]), 0, argc > 4 ? atoll(argv[4]) : 0, 0);
    return 0;
  }
  fprintf(stderr, "usage: bench_lu_cuda cusolver N | factor N TILE GPUMEM [W [CHUNK]] | "
                  "host N TILE [W]\n");
  return 2;
}
