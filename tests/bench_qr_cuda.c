/*
 * bench_qr_cuda.c: least squares by QR (src/solvers/qr.c) on the CUDA executor against cuSOLVER's
 * in-core geqrf + ormqr + trsm, in one process (issue 24). Built by CMake when CUDA is found; not
 * a ctest.
 *   bench_qr_cuda M N NRHS GPUMEM P PANEL
 * 1. the GEMM ceiling of this run: cuBLAS dgemm 8192^3 on the executor (best of 3);
 * 2. cuSOLVER in core: A (M x N) and B (M x NRHS) resident on the device, Xgeqrf, Dormqr (Q^T B),
 *    trsm (best of 2); seconds, TFLOP/s at 2MN^2 - 2N^3/3 (geqrf's count);
 * 3. ours: the same A and B in host memory (no HDF5: the method, the executor and the ring),
 *    folded by qr_fold in blocks of P rows (ring slots; factored PANEL rows at a time) on a CUDA
 *    executor with --gpu-mem GPUMEM (the rows copied into the slots on 8 threads), then
 *    qr_solve; seconds, the same TFLOP/s, the ratio to cuSOLVER, and x's relative difference.
 * The matrix: entries uniform in [-1, 1] from a hash of (i, j). Lines starting with RESULT are the
 * figures.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda/exec_cuda.h"
#include "kernels/ops.h"
#include "solvers/qr.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    int e_ = (int)(x);                                                                             \
    if (e_) {                                                                                      \
      fprintf(stderr, "bench_qr_cuda: %s failed (%d) at line %d\n", #x, e_, __LINE__);             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double entry(int64_t i, int64_t j) {
  uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)j * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return (double)(h % 2001) / 1000.0 - 1.0;
}

typedef struct {
  const double *A, *B;
  int64_t m, n, nrhs;
} src_t;

typedef struct {
  const src_t *s;
  int64_t r0, nr, j0, j1, lda, ldb;
  double *A, *B;
} part_t;

static void *copy_part(void *arg) {
  part_t *p = arg;
  const src_t *s = p->s;
  for (int64_t j = p->j0; j < p->j1; j++) {
    if (j < s->n)
      memcpy(p->A + j * p->lda, s->A + p->r0 + j * s->m, (size_t)p->nr * sizeof(double));
    else
      memcpy(p->B + (j - s->n) * p->ldb, s->B + p->r0 + (j - s->n) * s->m,
             (size_t)p->nr * sizeof(double));
  }
  return NULL;
}

/* The rows into the slot on 8 threads (the HDF5 reader, h5m_read, is multi-threaded too). */
static ooc_status_t rd(void *user, int64_t r0, int64_t nr, double *A, int64_t lda, double *B,
                       int64_t ldb) {
  src_t *s = user;
  enum { T = 8 };
  pthread_t th[T];
  part_t pt[T];
  int64_t cols = s->n + s->nrhs;
  for (int t = 0; t < T; t++) {
    pt[t] = (part_t){s, r0, nr, cols * t / T, cols * (t + 1) / T, lda, ldb, A, B};
    pthread_create(&th[t], NULL, copy_part, &pt[t]);
  }
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  return OOC_OK;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: bench_qr_cuda M N NRHS GPUMEM P PANEL\n");
    return 2;
  }
  int64_t m = atoll(argv[1]), n = atoll(argv[2]), nrhs = atoll(argv[3]), p = atoll(argv[5]);
  int64_t panel = atoll(argv[6]);
  int64_t gmem = ooc_parse_size(argv[4]);
  double fl = 2.0 * m * n * n - 2.0 * n * n * n / 3.0;
  double *A = malloc((size_t)(m * n) * sizeof *A), *B = malloc((size_t)(m * nrhs) * sizeof *B);
  if (!A || !B) return 1;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) A[i + j * m] = entry(i, j);
  for (int64_t j = 0; j < nrhs; j++)
    for (int64_t i = 0; i < m; i++) B[i + j * m] = entry(i + 7 * m, j + 3);
  ooc_ctx_t *ctx;
  CK(ooc_ctx_create(&ctx));

  /* 1. the GEMM ceiling (cuBLAS through the executor) */
  {
    ex_cuda_config_t c = {.device = 0, .gpu_mem = 0, .nqueues = 1};
    ooc_exec_t *e;
    CK(ex_cuda_create(ctx, &c, &e));
    int64_t k = 8192;
    double *X, *Y, *Z;
    CK(ex_alloc(e, (size_t)(k * k) * 8, &X));
    CK(ex_alloc(e, (size_t)(k * k) * 8, &Y));
    CK(ex_alloc(e, (size_t)(k * k) * 8, &Z));
    CK(ex_fill(e, 0, k, k, 0.5, X, k));
    CK(ex_fill(e, 0, k, k, 0.25, Y, k));
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
      CK(ex_finish(e));
      double t0 = ooc_now();
      CK(ex_gemm(e, 0, 'N', 'N', k, k, k, 1.0, X, k, Y, k, 0.0, Z, k));
      CK(ex_finish(e));
      double t = ooc_now() - t0;
      if (t < best) best = t;
    }
    printf("RESULT gemm_ceiling n=%lld %.2f TFLOP/s\n", (long long)k, 2.0 * k * k * k / best * 1e-12);
    ex_destroy(e);
  }

  /* 2. cuSOLVER in core (its time kept for the ratio) */
  double *xs = malloc((size_t)(n * nrhs) * sizeof *xs), keep = 0.0;
  {
    cusolverDnHandle_t sol;
    cublasHandle_t bl;
    CK(cusolverDnCreate(&sol));
    CK(cublasCreate(&bl));
    cusolverDnParams_t par;
    CK(cusolverDnCreateParams(&par));
    double *dA, *dB, *tau, *dwork;
    int *info;
    CK(cudaMalloc((void **)&dA, (size_t)(m * n) * 8));
    CK(cudaMalloc((void **)&dB, (size_t)(m * nrhs) * 8));
    CK(cudaMalloc((void **)&tau, (size_t)n * 8));
    CK(cudaMalloc((void **)&info, sizeof(int)));
    size_t dws = 0, hws = 0;
    CK(cusolverDnXgeqrf_bufferSize(sol, par, m, n, CUDA_R_64F, dA, m, CUDA_R_64F, tau, CUDA_R_64F,
                                   &dws, &hws));
    int lw = 0;
    CK(cusolverDnDormqr_bufferSize(sol, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, (int)m, (int)nrhs, (int)n,
                                   dA, (int)m, tau, dB, (int)m, &lw));
    size_t need = dws > (size_t)lw * 8 ? dws : (size_t)lw * 8;
    CK(cudaMalloc((void **)&dwork, need));
    void *hw = hws ? malloc(hws) : NULL;
    double best = 1e30, bg = 1e30;
    for (int r = 0; r < 2; r++) {
      CK(cudaMemcpy(dA, A, (size_t)(m * n) * 8, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dB, B, (size_t)(m * nrhs) * 8, cudaMemcpyHostToDevice));
      CK(cudaDeviceSynchronize());
      double t0 = ooc_now();
      CK(cusolverDnXgeqrf(sol, par, m, n, CUDA_R_64F, dA, m, CUDA_R_64F, tau, CUDA_R_64F, dwork,
                          dws, hw, hws, info));
      CK(cudaDeviceSynchronize());
      double tg = ooc_now() - t0;
      CK(cusolverDnDormqr(sol, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, (int)m, (int)nrhs, (int)n, dA,
                          (int)m, tau, dB, (int)m, dwork, lw, info));
      double one = 1.0;
      CK(cublasDtrsm(bl, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                     CUBLAS_DIAG_NON_UNIT, (int)n, (int)nrhs, &one, dA, (int)m, dB, (int)m));
      CK(cudaDeviceSynchronize());
      double t = ooc_now() - t0;
      if (t < best) best = t;
      if (tg < bg) bg = tg;
    }
    CK(cudaMemcpy2D(xs, (size_t)n * 8, dB, (size_t)m * 8, (size_t)n * 8, (size_t)nrhs,
                    cudaMemcpyDeviceToHost));
    printf("RESULT cusolver m=%lld n=%lld nrhs=%lld geqrf+ormqr+trsm %.3f s (geqrf %.3f s) = %.2f "
           "TFLOP/s\n", (long long)m, (long long)n, (long long)nrhs, best, bg, fl / best * 1e-12);
    cudaFree(dA), cudaFree(dB), cudaFree(tau), cudaFree(info), cudaFree(dwork), free(hw);
    cusolverDnDestroyParams(par);
    cusolverDnDestroy(sol);
    cublasDestroy(bl);
    keep = best;
  }
  {
    /* 3. ours */
    ex_cuda_config_t c = {.device = 0, .gpu_mem = gmem, .nqueues = 1};
    ooc_exec_t *e;
    CK(ex_cuda_create(ctx, &c, &e));
    qr_state_t *s;
    CK(qr_state_new(ctx, n, nrhs, &s));
    src_t src = {A, B, m, n, nrhs};
    qr_args_t a = {.ctx = ctx, .exec = e, .ops = ooc_ops_cpu(), .m = m, .block = p,
                   .panel = panel, .read = rd, .user = &src};
    qr_stats_t st;
    double t0 = ooc_now();
    if (qr_fold(&a, s, &st) != OOC_OK) {
      fprintf(stderr, "bench_qr_cuda: fold: %s\n", ooc_ctx_error(ctx));
      return 1;
    }
    double *x = malloc((size_t)(n * nrhs) * sizeof *x);
    if (qr_solve(ctx, e, NULL, s, x, n, NULL) != OOC_OK) {
      fprintf(stderr, "bench_qr_cuda: solve: %s\n", ooc_ctx_error(ctx));
      return 1;
    }
    double t = ooc_now() - t0;
    double d = 0.0, xn = 0.0;
    for (int64_t i = 0; i < n * nrhs; i++) d = hypot(d, x[i] - xs[i]), xn = hypot(xn, xs[i]);
    printf("RESULT ours m=%lld n=%lld nrhs=%lld block=%lld panel=%lld gpu_mem=%s: %.3f s "
           "(setup %.3f s, reads %.3f s, waits %.3f s, %lld blocks, %lld factorizations, %.3g "
           "flop executed = %.2f TFLOP/s) = %.2f TFLOP/s at geqrf's count; cusolver/ours = %.2f; "
           "|x - x_cusolver| / |x| = %.3g; residual %.6g\n",
           (long long)m, (long long)n, (long long)nrhs, (long long)p, (long long)panel, argv[4], t,
           st.t_setup, st.t_read, st.t_wait, (long long)st.blocks, (long long)st.factorizations,
           st.flops, st.flops / t * 1e-12, fl / t * 1e-12, keep / t, d / xn, s->res[0]);
    free(x);
    qr_state_free(ctx, s);
    ex_destroy(e);
  }
  free(xs);
  free(A), free(B);
  ooc_ctx_destroy(ctx);
  return 0;
}
