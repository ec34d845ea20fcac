/*
 * bench_cuda.c: the CUDA backend against its ceilings and its in-core peer, in one process.
 *   bench_cuda ceil                       DGEMM rate (n = 8192) and pinned PCIe H2D / D2H
 *   bench_cuda cusolver N                 cuSOLVER in core: getrf + getrs with an identity RHS
 *   bench_cuda gj N TILE GPU_MEM QUEUES [TRACE|-] [w=W1,W2,...] [chunk=C1,C2,...]
 *                                         oocsolve's striped GJ (gj_x.c) on the CUDA executor with
 *                                         QUEUES streams: matrix in host memory (a tile store,
 *                                         HDF5 bypassed), GPU_MEM 0 = default budget; prints
 *                                         time, TFLOP/s (2n^3), bytes moved; TRACE: first run;
 *                                         w=: one run per stripe width (0 = the plan's, the
 *                                         widest the budget allows) x chunk=: the panel LU's
 *                                         chunk width (0: GJ_X_CHUNK), same matrix.
 *                                         GJ_DIRECT=1 in the environment: gj.h's "Direct moves"
 *                                         (gj_args_t.direct: sweep columns moved in place from
 *                                         the tile cache, each buffer pinned the first time it
 *                                         is lent); GJ_DIRECT=2: the same with every tile pinned
 *                                         as the preload makes it (tstore.h tcache_pin_new, as
 *                                         the pipeline's load would), outside the timing; 0 or
 *                                         unset: the slot path. Prints the bytes moved in place.
 *   bench_cuda trtri W LD [WSCOLS] [SPEC ...]
 *                                         inv(U) alone on a device-resident well-conditioned
 *                                         upper-triangular W x W (leading dimension LD, as in the
 *                                         panel) per variant: TFLOP/s (W^3/3), residual
 *                                         ||U X V - V|| / ||V||, distance to cuSOLVER's X, lower
 *                                         part untouched; workspace W x WSCOLS (default 2048 =
 *                                         what the executor lends at tile 1024); cuSOLVER's
 *                                         whole-triangle trtri runs first (the reference);
 *                                         default specs: a spread of variants and leaves
 *   bench_cuda tstore N TILE              host tile store: take_col + put_col GB/s, with 1 and 8
 *                                         copy threads and the default count
 * Prints one "RESULT ..." line per measurement.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda/exec_cuda.h"
#include "exec/exset.h"
#include "kernels/cuda/ocu.h"
#include "kernels/cuda/ocu_trtri.h"
#include "kernels/ops.h"
#include "solvers/gj.h"
#include "tiling/tstore.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    int e_ = (int)(x);                                                                             \
    if (e_) {                                                                                      \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, e_);                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct {
  double *A;
  int64_t n, c0, c1;
  uint64_t seed;
} fill_t;

static void *fill_cols(void *p) {
  fill_t *f = p;
  for (int64_t j = f->c0; j < f->c1; j++) {
    uint64_t s = f->seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(j + 1));
    for (int64_t i = 0; i < f->n; i++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      f->A[i + j * f->n] = (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
  }
  return NULL;
}

/* uniform [-1, 1) random n x n, column-major, filled by 16 threads */
static double *gen_random(int64_t n, int pinned) {
  double *A = NULL;
  if (pinned) CK(cudaHostAlloc((void **)&A, (size_t)(8 * n * n), cudaHostAllocDefault));
  else A = malloc((size_t)(8 * n * n));
  if (!A) exit(1);
  pthread_t th[16];
  fill_t f[16];
  for (int t = 0; t < 16; t++) {
    f[t] = (fill_t){A, n, n * t / 16, n * (t + 1) / 16, 12345};
    pthread_create(&th[t], NULL, fill_cols, &f[t]);
  }
  for (int t = 0; t < 16; t++) pthread_join(th[t], NULL);
  return A;
}

static double tnow(void) { return ooc_now(); }

static void ceil_bench(void) {
  int64_t n = 8192;
  double *A, *B, *C;
  CK(cudaMalloc((void **)&A, 8 * n * n));
  CK(cudaMalloc((void **)&B, 8 * n * n));
  CK(cudaMalloc((void **)&C, 8 * n * n));
  double *h = gen_random(n, 1);
  CK(cudaMemcpy(A, h, 8 * n * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, h, 8 * n * n, cudaMemcpyHostToDevice));
  cublasHandle_t bl;
  CK(cublasCreate(&bl));
  double one = 1, zero = 0;
  for (int r = 0; r < 2; r++)
    CK(cublasDgemm(bl, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n));
  CK(cudaDeviceSynchronize());
  int reps = 10;
  double t0 = tnow();
  for (int r = 0; r < reps; r++)
    CK(cublasDgemm(bl, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n));
  CK(cudaDeviceSynchronize());
  double t = (tnow() - t0) / reps;
  printf("RESULT dgemm n=%lld: %.4f s, %.2f TFLOP/s\n", (long long)n, t, 2.0 * n * n * n / t * 1e-12);
  size_t bytes = 8 * n * n; /* 512 MiB */
  for (int dir = 0; dir < 2; dir++) {
    CK(cudaMemcpy(dir ? h : (void *)A, dir ? (void *)A : h, bytes,
                  dir ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice));
    t0 = tnow();
    for (int r = 0; r < 5; r++)
      CK(cudaMemcpy(dir ? h : (void *)A, dir ? (void *)A : h, bytes,
                    dir ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice));
    t = (tnow() - t0) / 5;
    printf("RESULT pinned %s: %.1f GB/s\n", dir ? "D2H" : "H2D", bytes / t * 1e-9);
  }
  /* both directions at once */
  cudaStream_t s1, s2;
  CK(cudaStreamCreate(&s1));
  CK(cudaStreamCreate(&s2));
  double *h2 = gen_random(n, 1);
  t0 = tnow();
  for (int r = 0; r < 5; r++) {
    CK(cudaMemcpyAsync(A, h, bytes, cudaMemcpyHostToDevice, s1));
    CK(cudaMemcpyAsync(h2, B, bytes, cudaMemcpyDeviceToHost, s2));
  }
  CK(cudaDeviceSynchronize());
  t = (tnow() - t0) / 5;
  printf("RESULT pinned both directions: %.1f GB/s total\n", 2 * bytes / t * 1e-9);
  /* host memcpy (what a tile-store take or put costs) */
  double *p1 = gen_random(n, 0);
  t0 = tnow();
  memcpy(h2, p1, bytes);
  t = tnow() - t0;
  printf("RESULT host memcpy (1 thread, pageable -> pinned): %.1f GB/s\n", bytes / t * 1e-9);
  free(p1);
  cudaFreeHost(h);
  cudaFreeHost(h2);
  cudaFree(A);
  cudaFree(B);
  cudaFree(C);
  cublasDestroy(bl);
}

static void cusolver_bench(int64_t n) {
  double *h = gen_random(n, 1);
  double *A, *B;
  int64_t *ipiv;
  int *info;
  CK(cudaMalloc((void **)&A, 8 * n * n));
  CK(cudaMalloc((void **)&B, 8 * n * n));
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
  double best = 1e30, bestf = 0;
  for (int rep = 0; rep < 2; rep++) {
    CK(cudaMemcpy(A, h, 8 * n * n, cudaMemcpyHostToDevice));
    CK(cudaMemset(B, 0, 8 * n * n));
    double one = 1;
    for (int64_t i = 0; i < n; i++) CK(cudaMemcpy(B + i + i * n, &one, 8, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    double t0 = tnow();
    CK(cusolverDnXgetrf(s, par, n, n, CUDA_R_64F, A, n, ipiv, CUDA_R_64F, dw, dws, hw, hws, info));
    CK(cudaDeviceSynchronize());
    double t1 = tnow();
    CK(cusolverDnXgetrs(s, par, CUBLAS_OP_N, n, n, CUDA_R_64F, A, n, ipiv, CUDA_R_64F, B, n, info));
    CK(cudaDeviceSynchronize());
    double t2 = tnow();
    if (t2 - t0 < best) {
      best = t2 - t0;
      bestf = t1 - t0;
    }
  }
  printf("RESULT cusolver n=%lld in core (device-resident): getrf %.3f s + getrs(I) %.3f s = %.3f s, "
         "%.2f TFLOP/s counting 2n^3\n",
         (long long)n, bestf, best - bestf, best, 2.0 * n * n * n / best * 1e-12);
  cudaFree(A);
  cudaFree(B);
  cudaFree(ipiv);
  cudaFree(info);
  cudaFree(dw);
  free(hw);
  cusolverDnDestroyParams(par);
  cusolverDnDestroy(s);
  cudaFreeHost(h);
}

typedef struct {
  const double *M;
  int64_t n;
} memsrc_t;

static ooc_status_t mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, s->M + r0 + (c0 + j) * s->n, (size_t)nr * sizeof(double));
  return OOC_OK;
}

/* flops of the column-block GEMMs: per step 2 n w (n - w) */
static double upd_flops(int64_t n, int64_t W) {
  double f = 0;
  for (int64_t k0 = 0; k0 < n; k0 += W) {
    double w = (double)(n - k0 < W ? n - k0 : W);
    f += 2.0 * (double)n * w * ((double)n - w);
  }
  return f;
}

static void tstore_bench(int64_t n, int64_t b) {
  ooc_ctx_t *ctx;
  CK(ooc_ctx_create(&ctx));
  double *col;
  CK(cudaHostAlloc((void **)&col, (size_t)(8 * n * b), cudaHostAllocDefault)); /* like a slot */
  memset(col, 1, (size_t)(8 * n * b));
  for (int pass = 0; pass < 3; pass++) {
    tcache_t *c;
    tstore_t *ts;
    CK(tcache_create(ctx, 8 * n * n + ((int64_t)1 << 28), &c));
    if (pass < 2) tcache_set_threads(c, pass == 0 ? 1 : 8); /* pass 2: the default */
    CK(tstore_create(ctx, c, n, n, b, NULL, NULL, &ts));
    part_t p = ts_cols(ts);
    double t0 = tnow();
    for (int64_t tj = 0; tj < p.count; tj++) CK(ts_put_col(ts, tj, col, n));
    double tfill = tnow() - t0;
    int64_t bytes = 0;
    t0 = tnow();
    for (int r = 0; r < 2; r++)
      for (int64_t tj = 0; tj < p.count; tj++) {
        CK(ts_take_col(ts, tj, col, n));
        CK(ts_put_col(ts, tj, col, n));
        bytes += 16 * n * part_len(p, tj);
      }
    double t = tnow() - t0;
    printf("RESULT tstore n=%lld tile=%lld threads=%d: first fill %.2f GB/s, take+put %.2f GB/s "
           "(bytes copied / time)\n",
           (long long)n, (long long)b, tcache_threads(c), 8.0 * n * n / tfill * 1e-9,
           bytes / t * 1e-9);
    tstore_destroy(ts);
    tcache_destroy(c);
  }
  cudaFreeHost(col);
  ooc_ctx_destroy(ctx);
}

/* ---- trtri alone (ocu_trtri.c's variants on one device-resident triangle) ------------------- */

#define TR_SENT 12345.0 /* the strictly lower part: must come back untouched */

typedef struct {
  double *U;
  int64_t w, c0, c1;
} trfill_t;

/* u_jj in [1, 2), u_ij (i < j) in [-1, 1) / w: D + N with ||D^-1 N||_inf < 1, so cond(U) is
 * small whatever w (a random triangle's condition grows exponentially with w). */
static void *trfill_cols(void *p) {
  trfill_t *f = p;
  for (int64_t j = f->c0; j < f->c1; j++) {
    uint64_t s = 0x2545F4914F6CDD1Dull ^ (0x9E3779B97F4A7C15ull * (uint64_t)(j + 1));
    double *c = f->U + j * f->w;
    for (int64_t i = 0; i < f->w; i++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      double r = (double)(s >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
      c[i] = i < j ? (2 * r - 1) / (double)f->w : i == j ? 1 + r : TR_SENT;
    }
  }
  return NULL;
}

static void trtri_bench(int64_t w, int64_t ld, int64_t wscols, const char **specs, int ns) {
  if (ld < w) ld = w;
  const int64_t nv = 8;
  double *Uh = malloc((size_t)(8 * w * w));
  if (!Uh) exit(1);
  pthread_t th[16];
  trfill_t tf[16];
  for (int t = 0; t < 16; t++) {
    tf[t] = (trfill_t){Uh, w, w * t / 16, w * (t + 1) / 16};
    pthread_create(&th[t], NULL, trfill_cols, &tf[t]);
  }
  for (int t = 0; t < 16; t++) pthread_join(th[t], NULL);
  double *U0, *A, *Xref, *V, *Y, *Yref, *Z, *work = NULL;
  int *dinfo;
  CK(cudaMalloc((void **)&U0, (size_t)(8 * w * w)));
  CK(cudaMalloc((void **)&A, (size_t)(8 * ld * w)));
  CK(cudaMalloc((void **)&Xref, (size_t)(8 * w * w)));
  CK(cudaMalloc((void **)&V, (size_t)(8 * w * nv)));
  CK(cudaMalloc((void **)&Y, (size_t)(8 * w * nv)));
  CK(cudaMalloc((void **)&Yref, (size_t)(8 * w * nv)));
  CK(cudaMalloc((void **)&Z, (size_t)(8 * w * nv)));
  if (wscols > 0) CK(cudaMalloc((void **)&work, (size_t)(8 * w * wscols)));
  CK(cudaMalloc((void **)&dinfo, sizeof(int)));
  CK(cudaMemcpy(U0, Uh, (size_t)(8 * w * w), cudaMemcpyHostToDevice));
  CK(cudaMemset(A, 0x41, (size_t)(8 * ld * w))); /* rows >= w: this byte pattern must survive */
  free(Uh);
  double *Vh = malloc((size_t)(8 * w * nv)), *Yh = malloc((size_t)(8 * w * nv)),
         *Rh = malloc((size_t)(8 * w * nv)), *col = malloc((size_t)(8 * ld));
  for (int64_t i = 0; i < w * nv; i++) Vh[i] = sin(0.37 * (double)i) + 0.5;
  CK(cudaMemcpy(V, Vh, (size_t)(8 * w * nv), cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize()); /* pageable uploads may still be landing; st does not wait for them */
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cublasHandle_t h;
  cusolverDnHandle_t sol;
  CK(cublasCreate(&h));
  CK(cublasSetStream(h, st));
  CK(cusolverDnCreate(&sol));
  CK(cusolverDnSetStream(sol, st));
  size_t dws = 0, hws = 0;
  CK(cusolverDnXtrtri_bufferSize(sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, w, CUDA_R_64F,
                                 A, ld, &dws, &hws));
  void *dsol = NULL, *hsol = hws ? malloc(hws) : NULL;
  CK(cudaMalloc(&dsol, dws ? dws : 1));
  ocu_trtri_ws_t ws = {work, w * wscols, dsol, dws, hsol, hws, dinfo};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double one = 1;
  double fl = (double)w * w * w / 3;
  printf("RESULT trtri W=%lld LD=%lld workspace W x %lld (%.2f GiB), %lld probe columns\n",
         (long long)w, (long long)ld, (long long)wscols, 8.0 * w * wscols / 1073741824.0,
         (long long)nv);
  for (int k = -1; k < 0 || (ns < 0 ? specs[k] != NULL : k < ns); k++) {
    /* k = -1: cuSOLVER's whole-triangle trtri, the reference every variant is compared with */
    ocu_trtri_cfg_t cf;
    const char *spec = k < 0 ? "cusolver" : specs[k];
    if (ocu_trtri_parse(spec, &cf)) {
      printf("RESULT trtri %s: unknown spec\n", spec);
      continue;
    }
    double best = 1e30, sum = 0;
    int reps = k < 0 ? 1 : 3, code = 0;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up, untimed */
      CK(cudaMemcpy2DAsync(A, (size_t)(8 * ld), U0, (size_t)(8 * w), (size_t)(8 * w), (size_t)w,
                           cudaMemcpyDeviceToDevice, st));
      CK(cudaEventRecord(e0, st));
      const char *err = ocu_trtri(h, sol, A, w, ld, &cf, &ws, &code);
      if (err) {
        printf("RESULT trtri %s: %s failed (%d)\n", spec, err, code);
        exit(1);
      }
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 0) {
        best = fmin(best, ms * 1e-3);
        sum += ms * 1e-3;
      }
    }
    int info = 0;
    CK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
    /* Y = X V, Z = U Y: ||Z - V|| / ||V||, and ||Y - Xref V|| / ||Xref V|| */
    CK(cublasDtrmm_64(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                      w, nv, &one, A, ld, V, w, Y, w));
    CK(cublasDtrmm_64(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                      w, nv, &one, U0, w, Y, w, Z, w));
    if (k < 0) {
      CK(cudaMemcpy2DAsync(Xref, (size_t)(8 * w), A, (size_t)(8 * ld), (size_t)(8 * w), (size_t)w,
                           cudaMemcpyDeviceToDevice, st));
      CK(cudaMemcpyAsync(Yref, Y, (size_t)(8 * w * nv), cudaMemcpyDeviceToDevice, st));
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(Rh, Z, (size_t)(8 * w * nv), cudaMemcpyDeviceToHost));
    double rn = 0, vn = 0, dn = 0, yn = 0;
    for (int64_t i = 0; i < w * nv; i++) {
      rn += (Rh[i] - Vh[i]) * (Rh[i] - Vh[i]);
      vn += Vh[i] * Vh[i];
    }
    CK(cudaMemcpy(Yh, Y, (size_t)(8 * w * nv), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(Rh, Yref, (size_t)(8 * w * nv), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < w * nv; i++) {
      dn += (Yh[i] - Rh[i]) * (Yh[i] - Rh[i]);
      yn += Rh[i] * Rh[i];
    }
    /* the strictly lower part and the rows below the triangle: untouched */
    int64_t bad = 0, cols[3] = {0, w / 3, w - 1};
    double pat;
    memset(&pat, 0x41, sizeof pat);
    for (int c = 0; c < 3; c++) {
      CK(cudaMemcpy(col, A + cols[c] * ld, (size_t)(8 * ld), cudaMemcpyDeviceToHost));
      for (int64_t i = cols[c] + 1; i < ld; i++)
        if (memcmp(&col[i], i < w ? &(double){TR_SENT} : &pat, sizeof pat)) bad++;
    }
    char desc[96];
    double res = sqrt(rn / vn), dif = sqrt(dn / yn);
    int ok = info == 0 && bad == 0 && res < 1e-12 && dif < 1e-12;
    printf("RESULT trtri W=%lld %-32s best %.4f s (mean %.4f) = %6.2f TFLOP/s (W^3/3); "
           "||U X V - V||/||V|| %.2e, vs cuSOLVER %.2e, info %d, lower %s: %s\n",
           (long long)w, ocu_trtri_describe(&cf, desc, sizeof desc), best, sum / reps,
           fl / best * 1e-12, res, dif, info, bad ? "CHANGED" : "untouched", ok ? "ok" : "FAIL");
  }
  cudaFree(U0);
  cudaFree(A);
  cudaFree(Xref);
  cudaFree(V);
  cudaFree(Y);
  cudaFree(Yref);
  cudaFree(Z);
  cudaFree(work);
  cudaFree(dinfo);
  cudaFree(dsol);
  free(hsol);
  free(Vh);
  free(Yh);
  free(Rh);
  free(col);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cublasDestroy(h);
  cusolverDnDestroy(sol);
  cudaStreamDestroy(st);
}

static void gj_bench(int64_t n, int64_t b, int64_t gpu_mem, int queues, const char *trace,
                     int64_t chunk, int64_t wreq, const double *A, const double *colnorm) {
  ooc_ctx_t *ctx;
  CK(ooc_ctx_create(&ctx));
  int64_t *perm = malloc((size_t)n * sizeof *perm);
  memsrc_t ms = {A, n};
  ooc_source_t src = {&ms, mem_read, NULL, NULL};
  tcache_t *cache;
  tstore_t *ts;
  CK(tcache_create(ctx, 8 * n * n + (int64_t)(1 << 30), &cache));
  CK(tstore_create(ctx, cache, n, n, b, &src, NULL, &ts));
  part_t p = part_make(n, b);
  const char *dm = getenv("GJ_DIRECT");
  int direct = dm ? atoi(dm) : 0;
  ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = queues, .trace = trace, .timing = 1};
  ooc_exec_t *ex;
  double t0 = tnow();
  if (ex_cuda_create(ctx, &xc, &ex) != OOC_OK) { /* first: GJ_DIRECT=2 pins with it */
    fprintf(stderr, "exec: %s\n", ooc_ctx_error(ctx));
    exit(1);
  }
  double tc = tnow() - t0;
  if (direct == 2) { /* pinned as the preload makes each tile, as the pipeline's load would */
    tcache_set_pin(cache, ex_pin_cb, ex_unpin_cb, ex);
    tcache_pin_new(cache, 1);
  }
  t0 = tnow();
  for (int64_t tj = 0; tj < p.count; tj++) /* preload the host cache (outside the timing) */
    for (int64_t ti = 0; ti < p.count; ti++)
      CK(ts_put(ts, ti, tj, A + part_start(p, ti) + part_start(p, tj) * n, n));
  double tl = tnow() - t0;
  t0 = tnow();
  /* the stripe the pipeline plans (api/plan.c): the widest the executor's budget holds */
  int64_t W = gj_x_device_stripe(ex, n, b, n);
  if (W == 0) {
    fprintf(stderr, "gj: --gpu-mem leaves no room for one tile column\n");
    exit(1);
  }
  if (wreq > 0 && wreq < W) W = ts_stripe(n, b, wreq); /* w=: narrower than the budget allows */
  tc += tnow() - t0;
  gj_args_t ga = {.A = ts, .stripe = W, .ops = ooc_ops_cpu(), .colnorm = colnorm, .perm = perm,
                  .x = ex, .chunk = chunk, .direct = direct > 0};
  gj_stats_t gs;
  int64_t info;
  t0 = tnow();
  ooc_status_t st = gj_run(ctx, &ga, &gs, &info);
  double t = tnow() - t0;
  if (st != OOC_OK) {
    fprintf(stderr, "gj: %s\n", ooc_ctx_error(ctx));
    exit(1);
  }
  ex_stats_t es = ex->stats;
  int64_t budget = ex->budget;
  double tu = tnow();
  tcache_set_pin(cache, NULL, NULL, NULL); /* unpins what the preload pinned (none: nothing) */
  tu = tnow() - tu;
  ex_destroy(ex);
  double fl = 2.0 * n * n * n;
  printf("RESULT gj n=%lld tile=%lld gpu-mem budget %.2f GiB (ex_alloc peak %.2f GiB) W=%lld "
         "steps=%lld queues=%d chunk=%lld: compute %.3f s = %.2f TFLOP/s (2n^3); panel %.3f s, "
         "update %.3f s; exec setup %.3f s, cache preload %.3f s, %d copy threads; H2D %.1f GB, "
         "D2H %.1f GB, staging peak %.2f GiB\n",
         (long long)n, (long long)b, budget / 1073741824.0, es.dev_peak / 1073741824.0,
         (long long)W, (long long)gs.steps, queues, (long long)chunk, t, fl / t * 1e-12,
         gs.t_panel, gs.t_update, tc, tl, tcache_threads(cache), es.bytes_put * 1e-9,
         es.bytes_get * 1e-9, es.staging_peak / 1073741824.0);
  printf("RESULT gj n=%lld GJ_DIRECT=%d (%s): sweep %.1f GiB, %.1f GiB of it moved in place, "
         "%.1f GiB pinned by the run, %lld buffers refused; preload %s, unpin at the end %.2f s\n",
         (long long)n, direct, direct ? "direct moves" : "slot copies",
         gs.bytes_swept / 1073741824.0, gs.bytes_direct / 1073741824.0,
         gs.bytes_pinned / 1073741824.0, (long long)gs.pin_refused,
         direct == 2 ? "pinning each tile" : "pageable", tu);
  /* probe: r = A (X t) - t, X = store[:, perm] */
  double *u = calloc((size_t)n, 8), *y = calloc((size_t)n, 8), *tv = malloc((size_t)n * 8);
  double *xcol = calloc((size_t)n, 8), *tile = malloc((size_t)(8 * b * b));
  for (int64_t c = 0; c < n; c++) tv[c] = sin(0.37 * (double)c) + 0.5;
  for (int64_t c = 0; c < n; c++) u[perm[c]] = tv[c];
  for (int64_t tj = 0; tj < p.count; tj++)
    for (int64_t ti = 0; ti < p.count; ti++) {
      int64_t r0 = part_start(p, ti), c0 = part_start(p, tj), nr = part_len(p, ti), nc = part_len(p, tj);
      CK(ts_read(ts, ti, tj, tile, nr));
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) {
          y[r0 + i] += tile[i + j * nr] * u[c0 + j];
          xcol[c0 + j] += fabs(tile[i + j * nr]);
        }
    }
  double rn = 0, tn = 0, an = 0, xn = 0;
  for (int64_t c = 0; c < n; c++) {
    an = fmax(an, colnorm[c]);
    xn = fmax(xn, xcol[c]);
    tn += fabs(tv[c]);
  }
  double *z = calloc((size_t)n, 8);
  ooc_ops_cpu()->gemm('N', 'N', n, 1, n, 1.0, A, n, y, n, 0.0, z, n);
  for (int64_t i = 0; i < n; i++) rn += fabs(z[i] - tv[i]);
  printf("RESULT   probe residual ||A X t - t||_1 / (n eps ||A||_1 ||X||_1 ||t||_1) = %.3g\n",
         rn / ((double)n * 1.1102230246251565e-16 * an * xn * tn));
  tstore_destroy(ts);
  tcache_destroy(cache);
  free(perm);
  free(u);
  free(y);
  free(tv);
  free(xcol);
  free(tile);
  free(z);
  ooc_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  char why[256];
  setvbuf(stdout, NULL, _IOLBF, 0); /* each RESULT line survives a timeout */
  if (!ocu_probe(why, sizeof why)) {
    printf("bench_cuda: no usable GPU (%s)\n", why);
    return 77;
  }
  printf("bench_cuda on %s\n", why);
  if (argc >= 2 && !strcmp(argv[1], "ceil")) ceil_bench();
  else if (argc >= 3 && !strcmp(argv[1], "cusolver")) cusolver_bench(atoll(argv[2]));
  else if (argc >= 4 && !strcmp(argv[1], "tstore")) tstore_bench(atoll(argv[2]), atoll(argv[3]));
  else if (argc >= 4 && !strcmp(argv[1], "trtri")) {
    int64_t wscols = argc >= 5 ? atoll(argv[4]) : 2048;
    static const char *defaults[] = {"rec", "rec:256", "rec:1024", "ws", "ws:256",
                                     "ws:1024", "trmm2", "trmm2:256", "gemm", "gemm:512:2048",
                                     "gemm:256:1024", "gemm:512:512", "gemm:1024:4096", NULL};
    trtri_bench(atoll(argv[2]), atoll(argv[3]), wscols, argc >= 6 ? (const char **)argv + 5 : defaults,
                argc >= 6 ? argc - 5 : -1);
  }
  else if (argc >= 6 && !strcmp(argv[1], "gj")) {
    int64_t n = atoll(argv[2]), widths[16] = {0}, chunks[16] = {0};
    int nw = 1, nc = 1;
    for (int i = 7; i < argc; i++) {
      int is_w = !strncmp(argv[i], "w=", 2), is_c = !strncmp(argv[i], "chunk=", 6);
      if (!is_w && !is_c) continue;
      int64_t *v = is_w ? widths : chunks;
      int k = 0;
      for (char *q = argv[i] + (is_w ? 2 : 6); *q && k < 16;) {
        v[k++] = strtoll(q, &q, 10);
        if (*q == ',') q++;
        else break;
      }
      if (is_w) nw = k ? k : 1;
      else nc = k ? k : 1;
    }
    double *A = gen_random(n, 0);
    double *colnorm = calloc((size_t)n, sizeof *colnorm);
    int64_t bi, bj;
    ooc_ops_cpu()->colabs(n, n, A, n, colnorm, &bi, &bj);
    for (int u = 0; u < nw; u++)
      for (int v = 0; v < nc; v++)
        gj_bench(n, atoll(argv[3]), ooc_parse_size(argv[4]) > 0 ? ooc_parse_size(argv[4]) : 0,
                 atoi(argv[5]), u == 0 && v == 0 && argc >= 7 && strcmp(argv[6], "-") ? argv[6] : NULL,
                 chunks[v], widths[u], A, colnorm);
    free(A);
    free(colnorm);
  } else {
    fprintf(stderr, "usage: see the comment at the top of tests/bench_cuda.c\n");
    return 2;
  }
  return 0;
}
