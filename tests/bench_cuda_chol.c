/*
 * bench_cuda_chol.c: the CUDA Cholesky executor against cuSOLVER, in one process.
 *   bench_cuda_chol incore N NB[,NB...]
 *       cuSOLVER in core: Xpotrf + Dpotri on the device-resident matrix (2 runs), and its H2D and
 *       D2H of the matrix; then ours on the CUDA executor, for each NB: the in-core path of
 *       chol.c timed step by step (ex_put = H2D; chol_dev_inverse = the in-device sweep and the
 *       mirror of the upper triangle; ex_get = D2H). Prints the ratios of
 *       ours to cuSOLVER (device compute alone, and with the copies), the logdets of both and a
 *       probe residual of ours (||A X t - t||_1 / (n eps ||A||_1 ||X||_1 ||t||_1), host BLAS).
 *   bench_cuda_chol run N TILE GPU_MEM [TRACE]
 *       chol_run (CHOL_INVERT) on the executor with --gpu-mem GPU_MEM (0 = default), the matrix
 *       in a tile store in host memory (HDF5 bypassed: the source is a generated matrix), the
 *       stripe from chol_device_stripe evened out over its steps as the CLI does (ts_even_stripe;
 *       EVEN=0: the planned stripe as it is) and the ring's slots as the CLI's planner chooses
 *       them with the matrix cached (SLOTS=K: K). Prints the wall time of the compute phase and
 *       TFLOP/s counting n^3, and the executor's counts (operations, flops, bytes put and got);
 *       with a TRACE path the executor writes every operation's span there; with N <= 32768 also
 *       a probe residual. COPY_THREADS=T in the environment sets the tile cache's copy threads
 *       (tcache_set_threads); every tile is cached before the clock starts, as the CLI's read
 *       phase leaves them (PRELOAD=lower: the lower ones only). The store ends holding the
 *       lower triangle, as in the CLI, whose writer mirrors it (MIRROR=1: the solver's last
 *       step writes the upper tiles too).
 *       CHOL_DIRECT=1: chol.h's "Direct moves" (chol_args_t.direct: the sweep's tile columns
 *       moved in place from the tile cache, each buffer pinned the first time it is lent);
 *       CHOL_DIRECT=2: the same with every tile pinned as the preload makes it (tstore.h
 *       tcache_pin_new, as the pipeline's load would), outside the timing; 0 or unset: the
 *       slot path. Prints the bytes moved in place.
 * The matrix: a uniform [-1, 1) lower triangle with n added to the diagonal (diagonally dominant,
 * so SPD), filled by 16 threads; only the lower triangle is ever read.
 * Prints one "RESULT ..." line per measurement.
 */
#include <cblas.h>
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
#include "exec/exset.h"
#include "kernels/cuda/ocu.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "tiling/tstore.h"

#define CK(x)                                                                                      \
  do {                                                                                             \
    int e_ = (int)(x);                                                                             \
    if (e_) {                                                                                      \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, e_);                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define OK(ctx, x)                                                                                 \
  do {                                                                                             \
    if ((x) != OOC_OK) {                                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ooc_ctx_error(ctx));             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct {
  double *A;
  int64_t n, c0, c1;
} fill_t;

static void *fill_cols(void *p) {
  fill_t *f = p;
  for (int64_t j = f->c0; j < f->c1; j++) {
    uint64_t s = 0x2545F4914F6CDD1Dull ^ (0x9E3779B97F4A7C15ull * (uint64_t)(j + 1));
    double *col = f->A + j * f->n;
    for (int64_t i = 0; i < j; i++) col[i] = 0.0; /* the upper triangle: never read */
    for (int64_t i = j; i < f->n; i++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      col[i] = (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    }
    col[j] += (double)f->n;
  }
  return NULL;
}

static void fill_spd(double *A, int64_t n) {
  pthread_t th[16];
  fill_t f[16];
  for (int t = 0; t < 16; t++) {
    f[t] = (fill_t){A, n, n * t / 16, n * (t + 1) / 16};
    pthread_create(&th[t], NULL, fill_cols, &f[t]);
  }
  for (int t = 0; t < 16; t++) pthread_join(th[t], NULL);
}

/* ||A||_1 of the symmetric matrix whose lower triangle A holds. */
static double sym_norm1(const double *A, int64_t n) {
  double *c = calloc((size_t)n, sizeof *c), m = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = j; i < n; i++) {
      double a = fabs(A[i + j * n]);
      c[j] += a;
      if (i != j) c[i] += a;
    }
  for (int64_t j = 0; j < n; j++) m = fmax(m, c[j]);
  free(c);
  return m;
}

/* Probe residual of X (column j by get(j), full symmetric inverse) against A (lower). */
typedef void (*getcol_t)(void *self, int64_t j0, int64_t nc, double *dst); /* n x nc, ld n */
static double probe(const double *A, int64_t n, int64_t bc, void *self, getcol_t get) {
  double *t = malloc((size_t)n * sizeof *t), *y = calloc((size_t)n, sizeof *y);
  double *z = malloc((size_t)n * sizeof *z);
  double *buf = malloc((size_t)(n * bc) * sizeof *buf), xn = 0;
  uint64_t s = 99;
  double tn = 0;
  for (int64_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    t[i] = (double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    tn += fabs(t[i]);
  }
  for (int64_t j0 = 0; j0 < n; j0 += bc) { /* y = X t, and ||X||_1 */
    int64_t nc = n - j0 < bc ? n - j0 : bc;
    get(self, j0, nc, buf);
    cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)nc, 1.0, buf, (int)n, t + j0, 1, 1.0, y, 1);
    for (int64_t c = 0; c < nc; c++) {
      double cs = 0;
      for (int64_t i = 0; i < n; i++) cs += fabs(buf[i + c * n]);
      xn = fmax(xn, cs);
    }
  }
  cblas_dsymv(CblasColMajor, CblasLower, (int)n, 1.0, A, (int)n, y, 1, 0.0, z, 1);
  double r = 0;
  for (int64_t i = 0; i < n; i++) r += fabs(z[i] - t[i]);
  double ratio = r / ((double)n * (DBL_EPSILON / 2) * sym_norm1(A, n) * xn * tn);
  free(t);
  free(y);
  free(z);
  free(buf);
  return ratio;
}

typedef struct {
  const double *X;
  int64_t n;
} dense_t;
static void dense_get(void *self, int64_t j0, int64_t nc, double *dst) {
  dense_t *d = self;
  memcpy(dst, d->X + j0 * d->n, (size_t)(8 * d->n * nc));
}

/* ---- in core: cuSOLVER potrf + potri vs the executor ----------------------------------------- */

static void incore(int64_t n, const char *nbs) {
  ooc_ctx_t *ctx = NULL;
  CK(ooc_ctx_create(&ctx) != OOC_OK);
  double *A = malloc((size_t)(8 * n * n));
  fill_spd(A, n);
  /* cuSOLVER, device-resident */
  double *dA, *pin;
  int *dinfo;
  CK(cudaMalloc((void **)&dA, (size_t)(8 * n * n)));
  CK(cudaMalloc((void **)&dinfo, sizeof(int)));
  CK(cudaHostAlloc((void **)&pin, (size_t)(8 * n * n), cudaHostAllocDefault));
  memcpy(pin, A, (size_t)(8 * n * n));
  cusolverDnHandle_t s;
  cusolverDnParams_t par;
  CK(cusolverDnCreate(&s));
  CK(cusolverDnCreateParams(&par));
  size_t dws = 0, hws = 0;
  int lw = 0;
  CK(cusolverDnXpotrf_bufferSize(s, par, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, dA, n, CUDA_R_64F,
                                 &dws, &hws));
  CK(cusolverDnDpotri_bufferSize(s, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, &lw));
  size_t wsb = dws > (size_t)lw * 8 ? dws : (size_t)lw * 8;
  void *dw, *hw = hws ? malloc(hws) : NULL;
  CK(cudaMalloc(&dw, wsb ? wsb : 8));
  double best = 1e30, bestf = 0, th2d = 0, td2h = 0, ldc = 0;
  for (int rep = 0; rep < 2; rep++) {
    CK(cudaDeviceSynchronize());
    double t0 = ooc_now();
    CK(cudaMemcpy(dA, pin, (size_t)(8 * n * n), cudaMemcpyHostToDevice));
    double t1 = ooc_now();
    CK(cusolverDnXpotrf(s, par, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, dA, n, CUDA_R_64F, dw, dws,
                        hw, hws, dinfo));
    CK(cudaDeviceSynchronize());
    double t2 = ooc_now();
    if (rep == 0) { /* logdet from the factor's diagonal */
      double *dg = malloc((size_t)(8 * n));
      CK(cudaMemcpy2D(dg, 8, dA, (size_t)(8 * (n + 1)), 8, (size_t)n, cudaMemcpyDeviceToHost));
      for (int64_t j = 0; j < n; j++) ldc += 2 * log(dg[j]);
      free(dg);
    }
    CK(cudaDeviceSynchronize());
    double t2b = ooc_now();
    CK(cusolverDnDpotri(s, CUBLAS_FILL_MODE_LOWER, (int)n, dA, (int)n, (double *)dw, lw, dinfo));
    CK(cudaDeviceSynchronize());
    double t3 = ooc_now();
    CK(cudaMemcpy(pin, dA, (size_t)(8 * n * n), cudaMemcpyDeviceToHost));
    double t4 = ooc_now();
    int info = -1;
    CK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
    double tc = (t2 - t1) + (t3 - t2b);
    printf("RESULT cusolver n=%lld run %d: potrf %.3f s + potri %.3f s = %.3f s (info %d); H2D %.3f s, "
           "D2H %.3f s\n", (long long)n, rep, t2 - t1, t3 - t2b, tc, info, t1 - t0, t4 - t3);
    if (tc < best) {
      best = tc;
      bestf = t2 - t1;
      th2d = t1 - t0;
      td2h = t4 - t3;
    }
    memcpy(pin, A, (size_t)(8 * n * n));
  }
  cudaFree(dA);
  cudaFree(dw);
  cudaFreeHost(pin);
  free(hw);
  cusolverDnDestroyParams(par);
  cusolverDnDestroy(s);
  printf("RESULT cusolver n=%lld best: potrf %.3f + potri %.3f = %.3f s device (%.2f TFLOP/s at n^3); "
         "with H2D+D2H %.3f s\n", (long long)n, bestf, best - bestf, best,
         (double)n * n * n / best * 1e-12, best + th2d + td2h);

  char list[256];
  snprintf(list, sizeof list, "%s", nbs);
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    int64_t nb = atoll(tok);
    ex_cuda_config_t xc = {.nqueues = 3, .timing = 1};
    ooc_exec_t *e = NULL;
    double *dF = NULL, *hF = NULL;
    OK(ctx, ex_cuda_create(ctx, &xc, &e));
    OK(ctx, ex_alloc(e, (size_t)(8 * n * n), &dF));
    OK(ctx, ex_host_alloc(e, (size_t)(8 * n * n), &hF));
    int64_t nbe = nb > 0 ? (nb < n ? nb : n) : CHOL_NB;
    for (int rep = 0; rep < 2; rep++) {
      memcpy(hF, A, (size_t)(8 * n * n));
      int64_t bad = 0;
      double ld = 0;
      OK(ctx, ex_finish(e));
      double t0 = ooc_now();
      OK(ctx, ex_put(e, 0, n, n, hF, n, dF, n));
      OK(ctx, ex_finish(e));
      double t1 = ooc_now();
      OK(ctx, chol_dev_inverse(e, dF, n, nb, 1, &bad, &ld)); /* the sweep and the mirror */
      double t2 = ooc_now();
      OK(ctx, ex_get(e, 0, n, n, dF, n, hF, n));
      OK(ctx, ex_finish(e));
      double t3 = ooc_now();
      double dev = t2 - t1, all = t3 - t0;
      printf("RESULT ours n=%lld nb=%lld run %d: H2D %.3f s, sweep %.3f s (%.2f TFLOP/s at n^3), "
             "mirror+D2H %.3f s, total %.3f s; bad %lld; logdet %.15g (cusolver %.15g, rel %.1e)\n",
             (long long)n, (long long)nbe, rep, t1 - t0, dev, (double)n * n * n / dev * 1e-12,
             t3 - t2, all, (long long)bad, ld, ldc, fabs(ld - ldc) / fabs(ldc));
      printf("RESULT ratio ours/cusolver n=%lld nb=%lld run %d: device compute %.3f, with copies %.3f\n",
             (long long)n, (long long)nbe, rep, dev / best, all / (best + th2d + td2h));
      if (rep == 1) {
        dense_t d = {hF, n};
        printf("RESULT ours n=%lld nb=%lld probe residual %.3g\n", (long long)n, (long long)nbe,
               probe(A, n, 1024, &d, dense_get));
      }
    }
    ex_host_free(e, hF);
    ex_free(e, dF);
    OK(ctx, ex_finish(e));
    ex_destroy(e);
  }
  free(A);
  ooc_ctx_destroy(ctx);
}

/* ---- chol_run on the executor, tile store in memory ----------------------------------------- */

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

typedef struct {
  tstore_t *ts;
  int64_t n, b;
  int lower; /* the store holds the lower triangle (diagonal tiles' upper zero): mirror it */
} store_get_t;
static void store_get(void *self, int64_t j0, int64_t nc, double *dst) { /* j0, nc: one tile column */
  store_get_t *g = self;
  part_t p = ts_rows(g->ts);
  for (int64_t tj = j0 / g->b; tj * g->b < j0 + nc; tj++) {
    int64_t c0 = part_start(p, tj), bj = part_len(p, tj);
    double *col = dst + (c0 - j0) * g->n;
    for (int64_t ti = g->lower ? tj : 0; ti < p.count; ti++)
      if (ts_read(g->ts, ti, tj, col + part_start(p, ti), g->n) != OOC_OK) exit(1);
    if (!g->lower) continue;
    for (int64_t j = 0; j < bj; j++) /* the diagonal tile's upper triangle */
      for (int64_t i = 0; i < j; i++) col[c0 + i + j * g->n] = col[c0 + j + i * g->n];
    for (int64_t ti = 0; ti < tj; ti++) { /* upper tiles: transposes of tile row tj's */
      int64_t r0 = part_start(p, ti), bi = part_len(p, ti);
      double *t = malloc((size_t)(bj * bi) * sizeof *t);
      if (!t || ts_read(g->ts, tj, ti, t, bj) != OOC_OK) exit(1);
      for (int64_t j = 0; j < bj; j++)
        for (int64_t i = 0; i < bi; i++) col[r0 + i + j * g->n] = t[j + i * bj];
      free(t);
    }
  }
}

static void run_bench(int64_t n, int64_t b, int64_t gpu_mem, const char *trace) {
  ooc_ctx_t *ctx = NULL;
  CK(ooc_ctx_create(&ctx) != OOC_OK);
  double *A = malloc((size_t)(8 * n * n));
  if (!A) exit(1);
  fill_spd(A, n);
  /* chol's executor as the CLI makes it (api/plan.h plan_exec_config: three queues) */
  ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = 3, .trace = trace, .timing = 1};
  int64_t W = 0;
  tcache_t *cache = NULL;
  tstore_t *ts = NULL;
  memsrc_t ms = {A, n};
  ooc_source_t src = {&ms, mem_read, NULL, NULL};
  OK(ctx, tcache_create(ctx, (int64_t)1 << 50, &cache));
  if (getenv("COPY_THREADS")) tcache_set_threads(cache, atoi(getenv("COPY_THREADS")));
  OK(ctx, tstore_create(ctx, cache, n, n, b, &src, NULL, &ts));
  const char *dm = getenv("CHOL_DIRECT");
  int direct = dm ? atoi(dm) : 0;
  /* the executor before the preload: CHOL_DIRECT=2 pins the tiles with it as they are made */
  ooc_exec_t *e = NULL;
  double tc0 = ooc_now();
  OK(ctx, ex_cuda_create(ctx, &xc, &e));
  /* the ring as the planner chooses it with the matrix cached (plan.c lean_is_better): the lean
   * one where it runs fewer steps; SLOTS=K in the environment sets it */
  int K = CHOL_SLOTS;
  W = chol_device_stripe(e, n, b, CHOL_INVERT, K);
  int64_t Wl = chol_device_stripe(e, n, b, CHOL_INVERT, CHOL_SLOTS_LEAN);
  if (W < n && Wl > 0 && (W == 0 || ooc_cdiv64(n, Wl) < ooc_cdiv64(n, W))) K = CHOL_SLOTS_LEAN;
  if (getenv("SLOTS")) K = atoi(getenv("SLOTS"));
  W = chol_device_stripe(e, n, b, CHOL_INVERT, K);
  if (W == 0) {
    fprintf(stderr, "--gpu-mem too small for one tile column\n");
    exit(1);
  }
  if (!getenv("EVEN") || atoi(getenv("EVEN"))) W = ts_even_stripe(n, b, W); /* as the CLI */
  int64_t nb = chol_device_nb(e, n, b, W, CHOL_INVERT, K);
  double tc1 = ooc_now();
  if (direct == 2) {
    tcache_set_pin(cache, ex_pin_cb, ex_unpin_cb, e);
    tcache_pin_new(cache, 1);
  }
  /* Every tile goes into the host cache first, outside the timing, as the CLI's read phase
   * leaves them (a first take from the source would run on one thread, and time our memcpy; the
   * upper tiles' buffers, which the last step's mirror overwrites, would be faulted in inside
   * the timing). PRELOAD=lower caches only the lower tiles (the measurement before 2026-11-23). */
  part_t pp = part_make(n, b);
  int lower = getenv("PRELOAD") && !strcmp(getenv("PRELOAD"), "lower");
  double tp0 = ooc_now();
  for (int64_t tj = 0; tj < pp.count; tj++) {
    int64_t t0 = lower ? tj : 0;
    OK(ctx, ts_put_tiles(ts, t0, pp.count, tj, tj + 1, A + part_start(pp, t0) + part_start(pp, tj) * n, n));
  }
  double tpre = ooc_now() - tp0;
  /* as the CLI: the lower triangle, the writer mirrors it (MIRROR=1: the solver does) */
  int mirror = getenv("MIRROR") && atoi(getenv("MIRROR"));
  chol_args_t a = {.A = ts, .stripe = W >= n ? (n + b - 1) / b * b : W, .ops = ooc_ops_cpu(),
                   .job = CHOL_INVERT, .lower_only = !mirror, .exec = e, .nb = nb,
                   .nslots = K, .direct = direct > 0};
  chol_stats_t cs;
  int64_t info = 0;
  double ld = 0;
  double t0 = ooc_now();
  OK(ctx, chol_run(ctx, &a, &cs, &info, &ld));
  double t = ooc_now() - t0;
  double f = (double)n * n * n;
  printf("RESULT chol_run n=%lld tile %lld --gpu-mem %.2f GiB: stripe %lld, nb %lld, %d slots, "
         "%lld steps, peak %.2f GiB; executor setup %.2f s; compute %.2f s = %.2f TFLOP/s at n^3 "
         "(host: panel %.2f s, update+I/O %.2f s; of these takes %.2f s, puts %.2f s (panel V's "
         "share %.2f s), waits for the device %.2f s); cache preload (%s) %.2f s, %d copy threads\n",
         (long long)n, (long long)b, (e->budget + ex_cuda_overhead(&xc)) / 1073741824.0,
         (long long)(W < n ? W : n), (long long)nb, K, (long long)cs.steps,
         e->stats.dev_peak / 1073741824.0, tc1 - tc0, t, f / t * 1e-12, cs.t_panel, cs.t_update,
         cs.t_take, cs.t_put, cs.t_vmove, cs.t_wait, lower ? "lower" : "all", tpre,
         tcache_threads(cache));
  printf("RESULT device n=%lld: %lld operations, %.3g flops (%.2f TFLOP/s over the compute phase), "
         "%.1f GB put, %.1f GB got, staging peak %.2f GiB\n", (long long)n,
         (long long)e->stats.ops, e->stats.flops, e->stats.flops / t * 1e-12,
         e->stats.bytes_put * 1e-9, e->stats.bytes_get * 1e-9,
         e->stats.staging_peak / 1073741824.0);
  printf("RESULT chol_run n=%lld logdet %.15g\n", (long long)n, ld);
  double tu = ooc_now();
  tcache_set_pin(cache, NULL, NULL, NULL); /* unpins what the preload pinned (none: nothing) */
  tu = ooc_now() - tu;
  printf("RESULT chol_run n=%lld CHOL_DIRECT=%d (%s): sweep %.1f GiB, %.1f GiB of it moved in "
         "place, %.1f GiB pinned by the run, %lld buffers refused; preload %s, unpin at the end "
         "%.2f s\n", (long long)n, direct, direct ? "direct moves" : "slot copies",
         cs.bytes_swept / 1073741824.0, cs.bytes_direct / 1073741824.0,
         cs.bytes_pinned / 1073741824.0, (long long)cs.pin_refused,
         direct == 2 ? "pinning each tile" : "pageable", tu);
  ex_destroy(e);
  if (n <= 32768) {
    store_get_t g = {ts, n, b, !mirror};
    printf("RESULT chol_run n=%lld probe residual %.3g\n", (long long)n, probe(A, n, b, &g, store_get));
  }
  tstore_destroy(ts);
  tcache_destroy(cache);
  free(A);
  ooc_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  char why[256];
  setvbuf(stdout, NULL, _IOLBF, 0); /* each RESULT line out at once, even into a pipe */
  if (!ocu_probe(why, sizeof why)) {
    printf("bench_cuda_chol: no usable GPU (%s)\n", why);
    return 77;
  }
  printf("bench_cuda_chol: on %s\n", why);
  if (argc >= 4 && !strcmp(argv[1], "incore")) {
    incore(atoll(argv[2]), argv[3]);
  } else if (argc >= 5 && !strcmp(argv[1], "run")) {
    double g = atof(argv[4]);
    int64_t gm = (int64_t)(g * (strchr(argv[4], 'G') ? 1073741824.0 : 1.0));
    run_bench(atoll(argv[2]), atoll(argv[3]), gm, argc > 5 ? argv[5] : NULL);
  } else {
    fprintf(stderr, "usage: bench_cuda_chol incore N NB[,NB..] | run N TILE GPU_MEM[G] [TRACE]\n");
    return 2;
  }
  return 0;
}
