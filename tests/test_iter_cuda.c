/*
 * test_iter_cuda.c: newton and hyper7 with every product on the GPU (the CUDA executor, exec.h;
 * through iter.h's exec). Skips itself (exit 77, with the reason) when the build has no CUDA or
 * the machine no usable GPU; on the GPU host:
 * - iter_run with the GPU executor, a --gpu-mem small enough for several C blocks, one and two C
 *   buffers (two: the epilogues see slices of blocks as they come back), diagonally dominant,
 *   Matern and general input, both methods: the same start and step count as the CPU run, and
 *   LAPACK's inverse ratio of the result < 30 (computed here, in core); the executor's device
 *   peak within --gpu-mem and its streams back to zero;
 * - the public API (ooc_invert, --device cuda and auto, --method newton/hyper7, a small
 *   --gpu-mem and --host-mem): OK, backend "cuda", the GPU product notice, the written inverse
 *   passes the ratio; and the executor planned within --host-mem (host peak <= budget).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef OOC_HAVE_CUDA
int main(void) {
  printf("test_iter_cuda: SKIPPED: this build has no CUDA backend (no CUDA toolkit found by "
         "CMake)\n");
  return 77;
}
#else

#include "gen/gen.h"
#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu.h"
#include "solvers/gemm_model.h"
#include "solvers/oocgemm.h"
#include "kernels/ops.h"
#include "solvers/iter.h"
#include "tiling/tstore.h"

#define EPS (DBL_EPSILON / 2)

/* The suites' inputs: Matern with a 1e-2 nugget, cond with kappa 30, else the defaults. */
static double *gen_matrix(gen_kind_t kind, int64_t n, uint64_t seed) {
  return tu_gen_matrix(kind, n, kind == GEN_COND ? 30 : 0, kind == GEN_MATERN ? 1e-2 : 0, seed);
}

typedef struct {
  ooc_status_t st;
  iter_result_t r;
  double ratio;
  int ncblk;
  int64_t block;
  char err[1024];
} outcome_t;

/* iter_run on A (all stores cached); ncblk < 0: on the CPU, else the GPU executor with that many
 * C buffers (0: the plan's choice) under a device budget of gpu_mem. */
static outcome_t run(int method, const double *A, int64_t n, int64_t b, int ncblk,
                     int64_t gpu_mem) {
  outcome_t o;
  memset(&o, 0, sizeof o);
  ooc_ctx_t *ctx = tu_ctx();
  tcache_t *cache = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &cache) == OOC_OK);
  tstore_t *T[5] = {0};
  int ns = iter_stores(method);
  for (int q = 0; q <= ns; q++)
    CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, NULL, NULL, &T[q]) == OOC_OK);
  part_t p = ts_rows(T[0]);
  CU_ASSERT_FATAL(ts_put_tiles(T[0], 0, p.count, 0, p.count, A, n) == OOC_OK);
  int spd = 1;
  for (int64_t j = 0; j < n && spd; j++) {
    spd &= A[j + j * n] > 0;
    for (int64_t i = 0; i < j && spd; i++) spd &= A[i + j * n] == A[j + i * n];
  }
  iter_args_t a = {.A = T[0], .method = method, .ops = ooc_ops_cpu(), .block = n, .spd = spd,
                   .norm1_a = tu_norm1(n, A), .target = 15, .accept = 30};
  for (int q = 0; q < ns; q++) a.S[q] = T[q + 1];
  ooc_exec_t *ex = NULL;
  gemm_dev_t *dev = NULL;
  if (ncblk >= 0) {
    ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = 3}; /* as plan_exec_config */
    int64_t s, kb;
    int nc, ns;
    CU_ASSERT_FATAL(ex_cuda_create(ctx, &xc, &ex) == OOC_OK);
    CU_ASSERT_FATAL(gemm_device_plan(ctx, ex, n, n, n, b, 0, &s, &kb, &ns, &nc) == OOC_OK);
    if (ncblk > 0 && ncblk != nc) { /* the largest block for the count asked for, 2 slots */
      ns = 2;
      s = ooc_cdiv64(n, b) * b;
      while (s > b && gemm_exec_bytes(ooc_min64(s, n), ooc_min64(s, n), ooc_min64(kb, n), ns,
                                      ncblk) > ex->budget)
        s -= b;
    }
    if (ncblk > 0) nc = ncblk;
    ooc_status_t st = gemm_dev_create(ex, ooc_min64(s, n), ooc_min64(s, n), ooc_min64(kb, n), ns,
                                      nc, &dev);
    CU_ASSERT_FATAL(st == OOC_OK);
    a.dev = dev;
    a.block = s;
    a.kblock = kb;
    o.ncblk = nc;
    o.block = s;
  }
  o.st = iter_run(ctx, &a, &o.r);
  snprintf(o.err, sizeof o.err, "%s", ooc_ctx_error(ctx));
  if (ex) { /* the executor kept to --gpu-mem, its own part included */
    ex_cuda_config_t xc = {.gpu_mem = gpu_mem, .nqueues = 3};
    CU_ASSERT(ex->stats.dev_peak > 0 && ex->stats.dev_peak <= ex->budget &&
              ex->budget + ex_cuda_overhead(&xc) == gpu_mem);
    CU_ASSERT(gemm_dev_destroy(dev) == OOC_OK);
    ex_destroy(ex);
    CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  }
  if (o.st == OOC_OK) {
    double *V = malloc((size_t)(n * n) * sizeof *V);
    CU_ASSERT(ts_read_tiles(a.S[o.r.result], 0, p.count, 0, p.count, V, n) == OOC_OK);
    o.ratio = tu_inverse_ratio(n, A, V, EPS);
    free(V);
  }
  for (int q = 0; q <= ns; q++) tstore_destroy(T[q]);
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  return o;
}

static const char *mname(int method) { return method == OOC_METHOD_HYPER7 ? "hyper7" : "newton"; }

static void t_executor(void) {
  static const gen_kind_t kinds[3] = {GEN_DIAGDOM, GEN_MATERN, GEN_COND};
  static const char *const starts[3] = {"diagonal", "identity", "transpose"};
  int64_t n = 700, b = 64;
  /* the executor's own part (small cuBLAS workspaces at this budget) + 3 MiB: blocks of a few
   * hundred, so 2 x 2 or more blocks */
  ex_cuda_config_t xc = {.gpu_mem = (int64_t)4 << 20, .nqueues = 3};
  int64_t gpu_mem = ((int64_t)3 << 20) + ex_cuda_overhead(&xc);
  for (int q = 0; q < 3; q++) {
    double *A = gen_matrix(kinds[q], n, 11 + (uint64_t)q);
    for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++) {
      outcome_t h = run(method, A, n, b, -1, 0);
      CU_ASSERT(h.st == OOC_OK && h.ratio < 30);
      for (int nc = 1; nc <= 2; nc++) {
        outcome_t g = run(method, A, n, b, nc, gpu_mem);
        int ok = g.st == OOC_OK && g.ratio < 30 && !strcmp(g.r.start, starts[q]) &&
                 abs(g.r.iterations - h.r.iterations) <= 1 && g.block < 700;
        CU_ASSERT(ok);
        fprintf(stderr, "[%s %s gpu %d buf, block %lld: %d steps (cpu %d), ratio %.2g] ",
                starts[q], mname(method), nc, (long long)g.block, g.r.iterations,
                h.r.iterations, g.ratio);
        if (!ok)
          fprintf(stderr, "\n  %s %s: %s, start %s: %s\n", starts[q], mname(method),
                  ooc_status_str(g.st), g.r.start, g.err);
      }
    }
    free(A);
  }
}

/* Through the public API: --device cuda and auto, both methods. */
static void t_api(void) {
  int64_t n = 900;
  double *A = gen_matrix(GEN_MATERN, n, 5);
  const char *in = tu_path("iter_cuda_matern.h5");
  tu_write_matrix(in, "/A", n, n, A, 2);
  for (int method = OOC_METHOD_NEWTON; method <= OOC_METHOD_HYPER7; method++)
    for (int dev = 0; dev < 2; dev++) {
      char out[1100];
      snprintf(out, sizeof out, "%s.%d.%d.inv.h5", in, method, dev);
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o;
      ooc_opts_default(&o);
      o.method = method;
      o.device = dev ? OOC_DEVICE_AUTO : OOC_DEVICE_CUDA;
      o.tile = 128;
      o.gpu_mem = ((int64_t)32 << 20) + ((int64_t)8 << 20);
      o.host_mem = (int64_t)256 << 20;
      o.check = OOC_CHECK_FULL;
      ooc_report_t rep;
      ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
      CU_ASSERT(st == OOC_OK);
      if (st != OOC_OK) fprintf(stderr, "\n  api %s: %s\n", mname(method), ooc_ctx_error(ctx));
      if (st == OOC_OK) {
        CU_ASSERT(strcmp(rep.backend, "cuda") == 0);
        CU_ASSERT(strstr(rep.warnings, "GPU products") != NULL);
        CU_ASSERT(rep.residual < 30);
        CU_ASSERT(rep.host_peak <= rep.host_budget);
        int64_t r, c;
        double *X = tu_read_matrix(out, &r, &c);
        CU_ASSERT_FATAL(X != NULL);
        double ratio = tu_inverse_ratio(n, A, X, EPS);
        CU_ASSERT(ratio < 30);
        fprintf(stderr, "[api %s %s: %d steps, ratio %.2g, block %lld; %s] ", mname(method),
                dev ? "auto" : "cuda", rep.iterations, ratio, (long long)rep.stripe,
                rep.warnings);
        free(X);
      }
      tu_ctx_done(ctx);
      remove(out);
    }
  remove(in);
  free(A);
}

int main(void) {
  char why[256];
  if (!ocu_probe(why, sizeof why)) {
    printf("test_iter_cuda: SKIPPED: no usable GPU (%s)\n", why);
    return 77;
  }
  printf("test_iter_cuda: on %s\n", why);
  static const tu_test_t tests[] = {
      {"iter_run with the GPU executor (1 and 2 C buffers): as on the CPU", t_executor},
      {"ooc_invert --method newton/hyper7 --device cuda/auto", t_api},
      {NULL, NULL},
  };
  return tu_run("iter_cuda", tests);
}
#endif
