/*
 * bench_exec.c: the CUDA executor (src/exec/cuda) against the libraries it calls, so the cost of
 * the executor layer is visible: one line per row.
 *   gemm    n x n x n through ex_gemm vs cublasDgemm_64 on a stream of our own (TFLOP/s)
 *   getrf   an m x w panel through ex_getrf (pivots and info to the host) vs cusolverDnXgetrf
 *           (pivots left on the device); the pivots must agree; then how long the getrf call
 *           holds the host on an idle stream and behind 4 queued n^3 gemms (Xgetrf and the
 *           legacy Dgetrf)
 *   put/get bandwidth of an n x n/4 block from / to pinned staging (ex_host_alloc) vs
 *           cudaMemcpyAsync, and from / to pageable memory (the driver's staging)
 *   laswp   ex_laswp (the host's net-permutation tables and the kernel) on LU's shapes at n = m:
 *           a left pass (m rows x min(n^2/m, n) columns, w pivots), a panel chunk (m x w, w
 *           pivots), a tile column's final swaps (m x 1000, pivots [w, m)), pivots uniform over
 *           the rows below them as LU's on a random matrix; ms and GB/s at 16 bytes a pivot and
 *           column (an interchange reads and writes two rows)
 *   depth   how many 1000 x 1000 puts queue 1 takes, while it waits for an event behind an n^3
 *           gemm on queue 0, before an enqueue holds the host (LU's prefetch into regions the
 *           compute queue has yet to read held the host until the gemm before each region's
 *           event was done: docs/PERFORMANCE.md "fourteenth session")
 *   absscan an m x 1000 block (LU's scan of a tile column) on queue 1: alone, and behind the
 *           start of an n^3 gemm on queue 0, with queue 1 at the default priority and urgent
 *           (ex_cuda_config_t.urgent_copies)
 * Times: wall clock around the operation and a wait for it, best of `reps`.
 * Usage: bench_exec [n=8192] [m=8192] [w=1024] [reps=5]. Built only with CUDA; not a ctest.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/cuda/exec_cuda.h"

#define DIE(...)                                                                                   \
  do {                                                                                             \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fprintf(stderr, "\n");                                                                         \
    exit(1);                                                                                       \
  } while (0)
#define OK(call)                                                                                   \
  do {                                                                                             \
    if ((call) != OOC_OK) DIE("%s: %s", #call, ooc_ctx_error(ctx));                                \
  } while (0)
#define CUOK(call)                                                                                 \
  do {                                                                                             \
    int c_ = (int)(call);                                                                          \
    if (c_) DIE("%s failed: %d", #call, c_);                                                       \
  } while (0)

static double best(double a, double b) { return a < b ? a : b; }

/* absscan of an m x 1000 block on queue 1 of a fresh executor (urgent_copies as given): alone,
 * then queued just after an n^3 gemm on queue 0 (the time from the scan's enqueue to its end). */
static void scan_rows(ooc_ctx_t *ctx, int64_t n, int64_t m, int urgent, int reps) {
  ooc_exec_t *e;
  ex_cuda_config_t cfg = {.device = 0, .nqueues = 2, .urgent_copies = urgent};
  OK(ex_cuda_create(ctx, &cfg, &e));
  const int64_t c = 1000;
  double *A, *G, *mx, *rs;
  ex_event_t *ev;
  OK(ex_alloc(e, (size_t)(m * c) * 8, &A));
  OK(ex_alloc(e, (size_t)(n * n) * 8, &G));
  OK(ex_alloc(e, 8, &mx));
  OK(ex_alloc(e, (size_t)m * 8, &rs));
  OK(ex_event_create(e, &ev));
  OK(ex_fill(e, 0, m, c, 0.5, A, m));
  OK(ex_fill(e, 0, n, n, 0.001, G, n));
  OK(ex_fill(e, 0, m, 1, 0.0, rs, m));
  OK(ex_fill(e, 0, 1, 1, 0.0, mx, 1));
  OK(ex_finish(e));
  double alone = 1e30, beside = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = ooc_now();
    OK(ex_absscan(e, 1, m, c, A, m, -1, mx, rs));
    OK(ex_record(e, 1, ev));
    OK(ex_sync(e, ev));
    if (r) alone = best(alone, ooc_now() - t0);
    /* the gemm reads and writes G on queue 0 (its result is not looked at) */
    OK(ex_gemm(e, 0, 'N', 'N', n, n / 2, n / 2, 1.0, G, n, G + n / 2 * n, n, 0.0, G, n));
    nanosleep(&(struct timespec){0, 5000000L}, NULL); /* its blocks occupy the SMs */
    t0 = ooc_now();
    OK(ex_absscan(e, 1, m, c, A, m, -1, mx, rs));
    OK(ex_record(e, 1, ev));
    OK(ex_sync(e, ev));
    if (r) beside = best(beside, ooc_now() - t0);
    OK(ex_finish(e));
  }
  double gb = 8.0 * m * c * 1e-9;
  printf("absscan %lld x %lld on queue 1 (%s): alone %.3f ms (%.0f GB/s), behind a gemm on queue "
         "0 %.3f ms (%.0f GB/s)\n", (long long)m, (long long)c, urgent ? "urgent" : "default",
         alone * 1e3, gb / alone, beside * 1e3, gb / beside);
  ex_event_destroy(e, ev);
  ex_free(e, A), ex_free(e, G), ex_free(e, mx), ex_free(e, rs);
  ex_destroy(e);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 8192, m = argc > 2 ? atoll(argv[2]) : 8192,
          w = argc > 3 ? atoll(argv[3]) : 1024;
  int reps = argc > 4 ? atoi(argv[4]) : 5;
  ooc_ctx_t *ctx;
  if (ooc_ctx_create(&ctx) != OOC_OK) DIE("no context");
  ooc_exec_t *e;
  ex_cuda_config_t cfg = {.device = 0, .nqueues = 2};
  OK(ex_cuda_create(ctx, &cfg, &e));
  cudaStream_t st;
  cublasHandle_t bl;
  cusolverDnHandle_t sol;
  cusolverDnParams_t par;
  CUOK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CUOK(cublasCreate(&bl));
  CUOK(cublasSetStream(bl, st));
  CUOK(cusolverDnCreate(&sol));
  CUOK(cusolverDnCreateParams(&par));
  CUOK(cusolverDnSetStream(sol, st));

  /* ---- gemm ---- */
  double *A, *B, *C, *H;
  size_t nn = (size_t)(n * n);
  OK(ex_alloc(e, nn * 8, &A));
  OK(ex_alloc(e, nn * 8, &B));
  OK(ex_alloc(e, nn * 8, &C));
  OK(ex_host_alloc(e, nn * 8, &H));
  srand(1);
  for (size_t i = 0; i < nn; i++) H[i] = rand() / (double)RAND_MAX - 0.5;
  OK(ex_put(e, 0, n, n, H, n, A, n));
  OK(ex_put(e, 0, n, n, H, n, B, n));
  OK(ex_fill(e, 0, n, n, 0.0, C, n));
  OK(ex_finish(e));
  double one = 1.0, t_ex = 1e30, t_cb = 1e30, fl = 2.0 * n * n * n;
  for (int r = 0; r <= reps; r++) { /* r = 0: warm-up */
    double t0 = ooc_now();
    OK(ex_gemm(e, 0, 'N', 'N', n, n, n, 1.0, A, n, B, n, 1.0, C, n));
    OK(ex_finish(e));
    if (r) t_ex = best(t_ex, ooc_now() - t0);
    t0 = ooc_now();
    CUOK(cublasDgemm_64(bl, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &one, C, n));
    CUOK(cudaStreamSynchronize(st));
    if (r) t_cb = best(t_cb, ooc_now() - t0);
  }
  printf("gemm n=%lld: ex_gemm %.2f TFLOP/s (%.2f ms), cublasDgemm_64 %.2f TFLOP/s (%.2f ms), "
         "ex/cublas %.3f\n",
         (long long)n, fl / t_ex * 1e-12, t_ex * 1e3, fl / t_cb * 1e-12, t_cb * 1e3, t_cb / t_ex);

  /* ---- getrf of an m x w panel ---- */
  if (m * w > n * n) DIE("the panel must fit in the n x n buffers");
  OK(ex_put(e, 0, m, w, H, m, A, m)); /* A: the pristine panel, B: the one factored */
  int64_t *piv = malloc((size_t)w * sizeof *piv), *dpiv, info = -1, *hpiv = malloc((size_t)w * 8);
  int *dinfo;
  size_t d = 0, h = 0;
  CUOK(cusolverDnXgetrf_bufferSize(sol, par, m, w, CUDA_R_64F, B, m, CUDA_R_64F, &d, &h));
  void *dws, *hws = malloc(h ? h : 1);
  CUOK(cudaMalloc(&dws, d ? d : 1));
  CUOK(cudaMalloc((void **)&dpiv, (size_t)w * 8));
  CUOK(cudaMalloc((void **)&dinfo, sizeof(int)));
  double t_exf = 1e30, t_cs = 1e30;
  double fg = (double)m * w * w - (double)w * w * w / 3.0;
  for (int r = 0; r <= reps; r++) {
    OK(ex_copy(e, 0, m, w, A, m, B, m));
    OK(ex_finish(e));
    double t0 = ooc_now();
    OK(ex_getrf(e, 0, m, w, B, m, piv, &info));
    OK(ex_finish(e));
    if (r) t_exf = best(t_exf, ooc_now() - t0);
    OK(ex_copy(e, 0, m, w, A, m, B, m));
    OK(ex_finish(e));
    t0 = ooc_now();
    CUOK(cusolverDnXgetrf(sol, par, m, w, CUDA_R_64F, B, m, dpiv, CUDA_R_64F, dws, d, hws, h,
                          dinfo));
    CUOK(cudaStreamSynchronize(st));
    if (r) t_cs = best(t_cs, ooc_now() - t0);
  }
  CUOK(cudaMemcpy(hpiv, dpiv, (size_t)w * 8, cudaMemcpyDeviceToHost));
  int same = info == 0;
  for (int64_t i = 0; i < w; i++) same &= piv[i] == hpiv[i] - 1;
  printf("getrf %lld x %lld: ex_getrf %.2f TFLOP/s (%.2f ms), cusolverDnXgetrf %.2f TFLOP/s "
         "(%.2f ms), ex/cusolver %.3f, pivots %s\n",
         (long long)m, (long long)w, fg / t_exf * 1e-12, t_exf * 1e3, fg / t_cs * 1e-12, t_cs * 1e3,
         t_cs / t_exf, same ? "identical" : "DIFFER");

  /* ---- how long the getrf call holds the host, on an idle stream and behind queued gemms
   * (LU's trace showed its enqueue returning only when the queue neared it: docs/PERFORMANCE.md
   * "thirteenth session"); the legacy 32-bit cusolverDnDgetrf beside it ---- */
  {
    int lw = 0, *ipiv32;
    CUOK(cusolverDnDgetrf_bufferSize(sol, (int)m, (int)w, B, (int)m, &lw));
    double *lws;
    CUOK(cudaMalloc((void **)&lws, (size_t)(lw > 0 ? lw : 1) * sizeof(double)));
    CUOK(cudaMalloc((void **)&ipiv32, (size_t)w * sizeof(int)));
    const int ahead = 4; /* gemms queued before the getrf */
    for (int legacy = 0; legacy < 2; legacy++)
      for (int queued = 0; queued < 2; queued++) {
        OK(ex_copy(e, 0, m, w, A, m, B, m));
        OK(ex_finish(e));
        for (int k = 0; queued && k < ahead; k++)
          CUOK(cublasDgemm_64(bl, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, A, n, &one, C,
                              n));
        double t0 = ooc_now();
        if (legacy)
          CUOK(cusolverDnDgetrf(sol, (int)m, (int)w, B, (int)m, lws, ipiv32, dinfo));
        else
          CUOK(cusolverDnXgetrf(sol, par, m, w, CUDA_R_64F, B, m, dpiv, CUDA_R_64F, dws, d, hws,
                                h, dinfo));
        double held = ooc_now() - t0;
        CUOK(cudaStreamSynchronize(st));
        double all = ooc_now() - t0;
        printf("getrf %lld x %lld enqueue (%s): the call held the host %.2f ms%s, done after "
               "%.2f ms (host workspace %zu bytes)\n", (long long)m, (long long)w,
               legacy ? "cusolverDnDgetrf" : "cusolverDnXgetrf", held * 1e3,
               queued ? " behind 4 queued gemms" : " on an idle stream", all * 1e3, h);
      }
    CUOK(cudaFree(lws));
    CUOK(cudaFree(ipiv32));
  }

  /* ---- laswp on LU's shapes ---- */
  {
    int64_t *lp = malloc((size_t)m * sizeof *lp), lc = n * n / m < n ? n * n / m : n;
    srand(3);
    for (int64_t k = 0; k < m; k++)
      lp[k] = k + (int64_t)(rand() / ((double)RAND_MAX + 1) * (double)(m - k));
    const struct {
      const char *what;
      int64_t cols, k1, k2;
    } S[] = {{"left pass", lc, 0, w},
             {"panel chunk", w, 0, w},
             {"final swaps", 1000 < n ? 1000 : n, w, m}};
    for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
      double t = 1e30;
      for (int r = 0; r <= reps; r++) {
        double t0 = ooc_now();
        OK(ex_laswp(e, 0, S[c].cols, A, m, S[c].k1, S[c].k2, lp));
        OK(ex_finish(e));
        if (r) t = best(t, ooc_now() - t0);
      }
      printf("laswp %s: %lld x %lld, %lld pivots: %.3f ms, %.0f GB/s\n", S[c].what, (long long)m,
             (long long)S[c].cols, (long long)(S[c].k2 - S[c].k1), t * 1e3,
             16.0 * S[c].cols * (S[c].k2 - S[c].k1) / t * 1e-9);
    }
    free(lp);
  }

  /* ---- put / get bandwidth ---- */
  int64_t cols = n / 4;
  double bytes = 8.0 * n * cols, tp = 1e30, tg = 1e30, tpd = 1e30, tgd = 1e30, tpp = 1e30,
         tgp = 1e30;
  double *pg = malloc((size_t)(bytes));
  memcpy(pg, H, (size_t)bytes);
  for (int r = 0; r <= reps; r++) {
    double t0 = ooc_now();
    OK(ex_put(e, 0, n, cols, H, n, A, n));
    OK(ex_finish(e));
    double t1 = ooc_now();
    OK(ex_get(e, 0, n, cols, A, n, H, n));
    OK(ex_finish(e));
    double t2 = ooc_now();
    CUOK(cudaMemcpyAsync(A, H, (size_t)bytes, cudaMemcpyHostToDevice, st));
    CUOK(cudaStreamSynchronize(st));
    double t3 = ooc_now();
    CUOK(cudaMemcpyAsync(H, A, (size_t)bytes, cudaMemcpyDeviceToHost, st));
    CUOK(cudaStreamSynchronize(st));
    double t4 = ooc_now();
    OK(ex_put(e, 0, n, cols, pg, n, A, n));
    OK(ex_finish(e));
    double t5 = ooc_now();
    OK(ex_get(e, 0, n, cols, A, n, pg, n));
    OK(ex_finish(e));
    double t6 = ooc_now();
    if (r) {
      tp = best(tp, t1 - t0), tg = best(tg, t2 - t1), tpd = best(tpd, t3 - t2);
      tgd = best(tgd, t4 - t3), tpp = best(tpp, t5 - t4), tgp = best(tgp, t6 - t5);
    }
  }
  printf("put %.0f MiB: pinned ex_put %.1f GB/s, cudaMemcpyAsync %.1f GB/s; pageable ex_put %.1f "
         "GB/s\n", bytes / 1048576, bytes / tp * 1e-9, bytes / tpd * 1e-9, bytes / tpp * 1e-9);
  printf("get %.0f MiB: pinned ex_get %.1f GB/s, cudaMemcpyAsync %.1f GB/s; pageable ex_get %.1f "
         "GB/s\n", bytes / 1048576, bytes / tg * 1e-9, bytes / tgd * 1e-9, bytes / tgp * 1e-9);
  printf("executor %s: %lld operations, device peak %lld MiB of a %lld MiB budget\n", e->name,
         (long long)e->stats.ops, (long long)(e->stats.dev_peak >> 20),
         (long long)(e->budget >> 20));

  /* ---- queue depth: puts behind an event that waits for a gemm ---- */
  {
    ex_event_t *ev;
    OK(ex_event_create(e, &ev));
    const int64_t t = 1000, K = 2048, per = (n / t) * (n / t);
    OK(ex_gemm(e, 0, 'N', 'N', n, n, n, 1.0, B, n, B, n, 0.0, C, n));
    OK(ex_record(e, 0, ev));
    OK(ex_wait(e, 1, ev));
    double t0 = ooc_now(), first = -1;
    int64_t at = -1;
    for (int64_t k = 0; k < K; k++) {
      int64_t p = k % per, i = p % (n / t) * t, j = p / (n / t) * t;
      double t1 = ooc_now();
      OK(ex_put(e, 1, t, t, H + i + j * n, n, A + i + j * n, n));
      if (at < 0 && ooc_now() - t1 > 1e-3) at = k, first = ooc_now() - t1;
    }
    double held = ooc_now() - t0;
    OK(ex_finish(e));
    double all = ooc_now() - t0;
    if (at >= 0)
      printf("depth: %lld puts of %lld x %lld behind a waiting event: put %lld held the host "
             "%.2f ms; the %lld enqueues %.2f ms in all, done after %.2f ms\n", (long long)K,
             (long long)t, (long long)t, (long long)at, first * 1e3, (long long)K, held * 1e3,
             all * 1e3);
    else
      printf("depth: %lld puts of %lld x %lld behind a waiting event: none held the host over "
             "1 ms (%.2f ms in all, done after %.2f ms)\n", (long long)K, (long long)t,
             (long long)t, held * 1e3, all * 1e3);
    ex_event_destroy(e, ev);
  }

  scan_rows(ctx, n, m, 0, reps);
  scan_rows(ctx, n, m, 1, reps);

  cudaFree(dws), cudaFree(dpiv), cudaFree(dinfo);
  free(hws), free(piv), free(hpiv), free(pg);
  cusolverDnDestroyParams(par);
  cusolverDnDestroy(sol);
  cublasDestroy(bl);
  cudaStreamDestroy(st);
  ex_destroy(e);
  ooc_ctx_destroy(ctx);
  return 0;
}
