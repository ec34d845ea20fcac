/*
 * bench_gpu.c: oocbench's GPU peers, built into their own module liboocbench_cuda.so (with the
 * CUDA runtime, cuBLAS and cuSOLVER) only when the build has CUDA; oocbench itself links no CUDA
 * library and loads the module when it needs a GPU row (bench_gpu_load.c; bench.h gives the
 * contract: a failing CUDA call becomes the row's error, naming the call, never a crash, and
 * everything allocated is freed on every path).
 *
 * The peers run in core on the device, timed with the matrix already resident (as DESIGN.md and
 * tests/bench_cuda.c quote cuSOLVER); the copies in and out are timed apart (t_h2d, t_d2h) from
 * pageable host memory. The result is copied back and checked on the host with the same residual
 * code as oocsolve's (bench_check_inverse).
 */
#include <math.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <pthread.h>
#include <unistd.h>

#include "solvers/check.h"

#define GCK(call)                                                                                  \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      bench_row_error(row, "%s failed: %s (%s)", #call, cudaGetErrorName(e_),                     \
                      cudaGetErrorString(e_));                                                     \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
#define SCK(call)                                                                                  \
  do {                                                                                             \
    cusolverStatus_t e_ = (call);                                                                  \
    if (e_ != CUSOLVER_STATUS_SUCCESS) {                                                           \
      bench_row_error(row, "%s failed: cusolverStatus_t %d", #call, (int)e_);                      \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
#define BCK(call)                                                                                  \
  do {                                                                                             \
    cublasStatus_t e_ = (call);                                                                    \
    if (e_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      bench_row_error(row, "%s failed: cublasStatus_t %d", #call, (int)e_);                        \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

static void driver_string(char *buf, size_t cap) {
  buf[0] = 0;
  FILE *f = fopen("/proc/driver/nvidia/version", "r");
  if (!f) return;
  char line[512];
  if (fgets(line, sizeof line, f)) {
    /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." or "... Open
     * Kernel Module for x86_64  580.159.04  Release Build ...": the first token shaped 1.2 */
    for (char *t = strtok(line, " \t\n"); t; t = strtok(NULL, " \t\n"))
      if (isdigit((unsigned char)t[0]) && strchr(t, '.')) {
        ooc_fmt(buf, cap, "%s", t);
        break;
      }
  }
  fclose(f);
}

/* The loader (bench_gpu_load.c) has asked the library's own test of "usable" (the plugin's
 * probe, whose description is `why`): the rest of the description. */
static int gpu_describe(bench_machine_t *m, const char *why) {
  m->gpu_usable = 1;
  struct cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
    snprintf(m->gpu_name, sizeof m->gpu_name, "%s", p.name);
    m->gpu_memory = (int64_t)p.totalGlobalMem;
  } else {
    snprintf(m->gpu_name, sizeof m->gpu_name, "%s", why);
  }
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess)
    snprintf(m->cuda_runtime, sizeof m->cuda_runtime, "%d.%d", v / 1000, v % 1000 / 10);
  if (cudaDriverGetVersion(&v) == cudaSuccess)
    snprintf(m->cuda_driver_api, sizeof m->cuda_driver_api, "%d.%d", v / 1000, v % 1000 / 10);
  driver_string(m->gpu_driver, sizeof m->gpu_driver);
  return 1;
}

/* Device memory free now; the row is skipped (saying so) when `need` does not fit with a margin
 * of 2% of the card for the libraries' own workspaces. */
static int dev_fits(bench_row_t *row, int64_t need, const char *what) {
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    bench_row_error(row, "cudaMemGetInfo failed");
    return 0;
  }
  if ((double)need <= (double)fr - 0.02 * (double)tot) return 1;
  char a[32], b[32];
  bench_row_skip(row, "does not fit in device memory: %s need %s, %s free", what,
                 ooc_fmt_bytes(need, a, sizeof a), ooc_fmt_bytes((int64_t)fr, b, sizeof b));
  return 0;
}

static int gpu_cusolver_inverse(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32,
                                int reps, int check_full) {
  int64_t n = row->n, nn = n * n;
  size_t es = f32 ? sizeof(float) : sizeof(double), bytes = (size_t)nn * es;
  cudaDataType ty = f32 ? CUDA_R_32F : CUDA_R_64F;
  int potri = !strcmp(row->name, "cusolver-potri");
  double nf = (double)n;
  snprintf(row->backend, sizeof row->backend, "cusolver");
  /* getrf 2/3 n^3 + getrs on n right-hand sides 2 n^3 = 8/3 n^3 done; 2 n^3 is the useful count
   * of an inverse (what getrf + getri does), so the rate compares with gj and LAPACK. */
  row->flops = row->flops_effective = potri ? nf * nf * nf : 2 * nf * nf * nf;
  row->flops_done = potri ? nf * nf * nf : 8.0 / 3.0 * nf * nf * nf;
  void *dA = NULL, *dB = NULL, *dws = NULL, *hws = NULL, *hA = NULL, *hX = NULL, *ones = NULL;
  int64_t *dipiv = NULL;
  int *dinfo = NULL;
  double *X = NULL;
  cusolverDnHandle_t h = NULL;
  cusolverDnParams_t par = NULL;
  if (potri && n > 46340) {
    bench_row_skip(row, "cusolverDn<t>potri has only the 32-bit API: n = %lld is beyond it",
                   (long long)n);
    return 0;
  }
  if (!dev_fits(row, (int64_t)bytes * (potri ? 1 : 2) + 8 * n,
                potri ? "A" : "A and the identity right-hand side"))
    return 0;
  const char *whyh = "the host copies of A and the result";
  int64_t hneed = nn * 8 + (f32 ? nn * 8 : 0);
  if ((double)hneed > 0.9 * (double)bench_mem_available()) {
    char a[32];
    bench_row_skip(row, "does not fit in host memory: %s need %s more", whyh,
                   ooc_fmt_bytes(hneed, a, sizeof a));
    return 0;
  }
  X = malloc((size_t)nn * sizeof *X);
  if (f32) hA = malloc(bytes);
  ones = malloc(es * (size_t)n);
  if (!X || (f32 && !hA) || !ones) {
    bench_row_skip(row, "out of host memory for the host copies");
    goto done;
  }
  if (f32) {
    float *s = hA, *o = ones;
    for (int64_t i = 0; i < nn; i++) s[i] = (float)A[i];
    for (int64_t i = 0; i < n; i++) o[i] = 1.0f;
    hX = hA; /* the float result comes back into the float staging copy */
  } else {
    double *o = ones;
    for (int64_t i = 0; i < n; i++) o[i] = 1.0;
    hA = (void *)A; /* uploaded straight from the caller's matrix, never written */
    hX = X;
  }
  GCK(cudaMalloc(&dA, bytes));
  if (!potri) GCK(cudaMalloc(&dB, bytes));
  GCK(cudaMalloc((void **)&dipiv, (size_t)n * sizeof(int64_t)));
  GCK(cudaMalloc((void **)&dinfo, sizeof(int)));
  SCK(cusolverDnCreate(&h));
  SCK(cusolverDnCreateParams(&par));
  size_t dwsb = 0, hwsb = 0;
  int lwork = 0;
  if (potri) {
    size_t d2 = 0, h2 = 0;
    SCK(cusolverDnXpotrf_bufferSize(h, par, CUBLAS_FILL_MODE_LOWER, n, ty, dA, n, ty, &d2, &h2));
    if (f32) SCK(cusolverDnSpotri_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, &lwork));
    else SCK(cusolverDnDpotri_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, &lwork));
    dwsb = d2 > (size_t)lwork * es ? d2 : (size_t)lwork * es; /* one buffer serves both calls */
    hwsb = h2;
  } else {
    SCK(cusolverDnXgetrf_bufferSize(h, par, n, n, ty, dA, n, ty, &dwsb, &hwsb));
  }
  GCK(cudaMalloc(&dws, dwsb ? dwsb : 1));
  if (hwsb && !(hws = malloc(hwsb))) {
    bench_row_skip(row, "out of host memory for cuSOLVER's host workspace");
    goto done;
  }
  row->dev_peak = (int64_t)bytes * (potri ? 1 : 2) + n * 8 + (int64_t)dwsb;
  row->host_peak = nn * 8 /* A */ + nn * 8 + (f32 ? (int64_t)bytes : 0);
  double th2d[BENCH_MAX_REPS] = {0};
  for (int r = 0; r < reps; r++) {
    double t0 = ooc_now();
    GCK(cudaMemcpy(dA, hA, bytes, cudaMemcpyHostToDevice));
    GCK(cudaDeviceSynchronize());
    th2d[r] = ooc_now() - t0;
    if (!potri) { /* B = I: zero, then n ones strided n + 1 apart down the diagonal */
      GCK(cudaMemset(dB, 0, bytes));
      GCK(cudaMemcpy2D(dB, (size_t)(n + 1) * es, ones, es, es, (size_t)n, cudaMemcpyHostToDevice));
      GCK(cudaDeviceSynchronize());
    }
    int info = 0;
    const char *step;
    t0 = ooc_now();
    if (potri) {
      step = "potrf";
      SCK(cusolverDnXpotrf(h, par, CUBLAS_FILL_MODE_LOWER, n, ty, dA, n, ty, dws, dwsb, hws, hwsb,
                           dinfo));
      GCK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
      if (!info) {
        step = "potri";
        if (f32)
          SCK(cusolverDnSpotri(h, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, dws, lwork, dinfo));
        else
          SCK(cusolverDnDpotri(h, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, dws, lwork, dinfo));
        GCK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
      }
    } else {
      step = "getrf";
      SCK(cusolverDnXgetrf(h, par, n, n, ty, dA, n, dipiv, ty, dws, dwsb, hws, hwsb, dinfo));
      GCK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
      if (!info) {
        step = "getrs";
        SCK(cusolverDnXgetrs(h, par, CUBLAS_OP_N, n, n, ty, dA, n, dipiv, ty, dB, n, dinfo));
        GCK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
      }
    }
    GCK(cudaDeviceSynchronize());
    row->t[r] = row->tc[r] = ooc_now() - t0; /* the blocking info copies end each phase */
    if (info) {
      bench_row_error(row, "cuSOLVER %s returned info = %d (%s)", step, info,
                      info < 0 ? "an illegal argument"
                      : potri  ? "not positive definite at that leading minor"
                               : "that diagonal element of U is exactly zero");
      goto done;
    }
    row->reps = r + 1;
  }
  bench_row_stats(row);
  row->t_h2d = th2d[0];
  for (int r = 1; r < reps; r++) row->t_h2d = fmin(row->t_h2d, th2d[r]);
  double t0 = ooc_now();
  GCK(cudaMemcpy(hX, potri ? dA : dB, bytes, cudaMemcpyDeviceToHost));
  row->t_d2h = ooc_now() - t0;
  row->bytes_h2d = (int64_t)bytes + (potri ? 0 : n * (int64_t)es); /* A, and I's diagonal */
  row->bytes_d2h = (int64_t)bytes;
  if (f32) {
    const float *s = hX;
    for (int64_t i = 0; i < nn; i++) X[i] = (double)s[i];
  }
  if (potri) /* potri leaves the lower triangle: mirror it */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j + 1; i < n; i++) X[j + i * n] = X[i + j * n];
  snprintf(row->check, sizeof row->check, "%s", check_full ? "full" : "probe");
  row->residual = bench_check_inverse(ctx, n, A, X, check_full, check_eps(f32));
  bench_row_verdict(row);
done:
  if (par) cusolverDnDestroyParams(par);
  if (h) cusolverDnDestroy(h);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dws);
  cudaFree(dipiv);
  cudaFree(dinfo);
  free(hws);
  free(X);
  if (f32) free(hA);
  free(ones);
  return 0;
}

static int gpu_gemm(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps) {
  (void)ctx;
  int64_t n = row->gemm_n > 0 ? row->gemm_n : row->n, nn = n * n;
  row->gemm_n = n;
  size_t es = f32 ? sizeof(float) : sizeof(double), bytes = (size_t)nn * es;
  double nf = (double)n;
  row->flops = row->flops_done = row->flops_effective = 2 * nf * nf * nf;
  snprintf(row->backend, sizeof row->backend, "cublas");
  void *dA = NULL, *dB = NULL, *dC = NULL, *hA = NULL, *hB = NULL, *hC = NULL;
  double *A = NULL, *B = NULL, *C = NULL;
  cublasHandle_t bl = NULL;
  if (!dev_fits(row, 3 * (int64_t)bytes, "A, B and C")) return 0;
  A = malloc((size_t)nn * 8);
  B = malloc((size_t)nn * 8);
  C = malloc((size_t)nn * 8);
  if (f32) {
    hA = malloc(bytes);
    hB = malloc(bytes);
    hC = malloc(bytes);
  }
  if (!A || !B || !C || (f32 && (!hA || !hB || !hC))) {
    bench_row_skip(row, "out of host memory for the GEMM operands");
    goto done;
  }
  bench_fill_gemm_inputs(A, B, n);
  if (f32) {
    float *a = hA, *b = hB;
    for (int64_t i = 0; i < nn; i++) {
      a[i] = (float)A[i];
      b[i] = (float)B[i];
    }
  } else {
    hA = A;
    hB = B;
    hC = C;
  }
  GCK(cudaMalloc(&dA, bytes));
  GCK(cudaMalloc(&dB, bytes));
  GCK(cudaMalloc(&dC, bytes));
  row->dev_peak = 3 * (int64_t)bytes;
  row->host_peak = nn * 24 + (f32 ? 3 * (int64_t)bytes : 0);
  GCK(cudaMemcpy(dA, hA, bytes, cudaMemcpyHostToDevice));
  GCK(cudaMemcpy(dB, hB, bytes, cudaMemcpyHostToDevice));
  BCK(cublasCreate(&bl));
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up (kernel selection), not timed */
    GCK(cudaDeviceSynchronize());
    double t0 = ooc_now();
    if (f32)
      BCK(cublasSgemm(bl, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &onef, dA, (int)n, dB,
                      (int)n, &zerof, dC, (int)n));
    else
      BCK(cublasDgemm(bl, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, dA, (int)n, dB,
                      (int)n, &zero, dC, (int)n));
    GCK(cudaDeviceSynchronize());
    if (r >= 0) row->t[r] = row->tc[r] = ooc_now() - t0;
  }
  row->reps = reps;
  bench_row_stats(row);
  GCK(cudaMemcpy(hC, dC, bytes, cudaMemcpyDeviceToHost));
  if (f32) {
    const float *c = hC;
    for (int64_t i = 0; i < nn; i++) C[i] = (double)c[i];
  }
  snprintf(row->check, sizeof row->check, "probe");
  row->residual = bench_check_gemm(n, A, B, C, check_eps(f32));
  bench_row_verdict(row);
done:
  if (bl) cublasDestroy(bl);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  if (f32) {
    free(hA);
    free(hB);
    free(hC);
  }
  free(A);
  free(B);
  free(C);
  return 0;
}

/* ---- device memory sampler ----------------------------------------------------------------- */

struct bench_devmon {
  pthread_t th;
  volatile int stop;
  int64_t base, peak;
};

static void *devmon_main(void *p) {
  bench_devmon_t *m = p;
  while (!m->stop) {
    size_t fr, tot;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && (int64_t)(tot - fr) > m->peak)
      m->peak = (int64_t)(tot - fr);
    usleep(2000);
  }
  return NULL;
}

static bench_devmon_t *devmon_start(void) {
  size_t fr, tot;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return NULL;
  bench_devmon_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->base = m->peak = (int64_t)(tot - fr);
  if (pthread_create(&m->th, NULL, devmon_main, m) != 0) {
    free(m);
    return NULL;
  }
  return m;
}

static int64_t devmon_stop(bench_devmon_t *m) {
  if (!m) return -1;
  m->stop = 1;
  pthread_join(m->th, NULL);
  int64_t d = m->peak - m->base;
  free(m);
  return d;
}

/* The module's one export (tools/bench.h: oocbench_cuda_t). */
__attribute__((visibility("default"))) const oocbench_cuda_t *oocbench_cuda_v1(void) {
  static const oocbench_cuda_t t = {.abi = OOCBENCH_CUDA_ABI,
                                    .row_size = sizeof(bench_row_t),
                                    .machine_size = sizeof(bench_machine_t),
                                    .describe = gpu_describe,
                                    .cusolver_inverse = gpu_cusolver_inverse,
                                    .gemm = gpu_gemm,
                                    .devmon_start = devmon_start,
                                    .devmon_stop = devmon_stop};
  return &t;
}
