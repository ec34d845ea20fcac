/*
 * test_cuda_rt.c: the CUDA runtime (src/kernels/cuda/ocu_rt.h) and what every CUDA executor gets
 * from it. Skips itself (exit 77) when the build has no CUDA backend.
 *
 * Without a GPU (any build with a CUDA toolkit; the pool's rules need no device):
 * - the pool refuses a request that would pass --gpu-mem with OOC_ERR_BUDGET naming the budget,
 *   the request and what it was for, before asking the fault seam or CUDA (sizes are counted
 *   rounded up to OCU_RT_ALIGN); an armed OOC_FAULT_DEVICE fails a device allocation with
 *   OOC_ERR_DEVICE and a pinned one with OOC_ERR_NOMEM, once or from then on, both saying
 *   "injected", nothing counted; ocu_rt_fini of a runtime that never opened a device is clean;
 * - CU / CB / CS name the library and the call as written and record this file's line;
 * With a GPU:
 * - the runtime itself: device and pinned bytes, the peak, the stream counter, a trace file;
 *   everything back to zero after ocu_rt_fini;
 * - --gpu-mem is enforced by the pool of each executor: gj's, created with a stripe wider than
 *   the budget allows, fails with OOC_ERR_BUDGET ("--gpu-mem ... exceeded"), leaking nothing; on
 *   the CUDA executor of exec.h (chol, the product) a stripe or block beyond its budget is
 *   refused by ex_alloc (OOC_ERR_NOMEM naming the budget); run as planned, each one's peak stays
 *   within --gpu-mem, the executor's own part included;
 * - fault loops, per method (gj, chol and lu invert, newton's products, rbt's solve, least
 *   squares): for N = 1, 2, ...
 *   until a run no longer reaches it, the Nth device-or-pinned allocation (one seam counts both)
 *   fails, once and from then on, in ooc_invert on --device cuda out of GPU core; each time the
 *   status is OOC_ERR_DEVICE (device) or OOC_ERR_NOMEM (pinned) with a message saying
 *   "injected", no output, the input unchanged, host bytes and blocks and CUDA streams back to
 *   zero; the run past the last allocation succeeds; the GPU's free memory before and after
 *   each loop is printed (not asserted: processes beside this one move it).
 * `test_cuda_rt sanitize` runs the runtime case and the budget cases (for compute-sanitizer).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef OOC_HAVE_CUDA
int main(void) {
  printf("test_cuda_rt: SKIPPED: this build has no CUDA backend (no CUDA toolkit found by CMake)\n");
  return 77;
}
#else

#include "exec/cuda/exec_cuda.h"
#include "gen/gen.h"
#include "kernels/cuda/ocu.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/oocgemm.h"
#include "tiling/tstore.h"
#include "kernels/cuda/ocu_rt.h"

static int g_gpu;         /* a usable GPU */
static long g_runs, g_faults;

static int has(ooc_ctx_t *ctx, const char *s) { return strstr(ooc_ctx_error(ctx), s) != NULL; }

/* ---- without a GPU -------------------------------------------------------------------------- */

static void t_pool_rules(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ocu_rt_t rt;
  void *p = &rt;
  CU_ASSERT_FATAL(ocu_rt_init(&rt, ctx, 0, 1 << 20, NULL, 0, "test") == OOC_OK);
  CU_ASSERT(rt.budget == 1 << 20);
  /* beyond the budget: refused before the seam and before CUDA */
  int64_t calls = ooc_fault_calls(ctx, OOC_FAULT_DEVICE);
  CU_ASSERT(ocu_rt_dalloc(&rt, &p, 2 << 20, "a test buffer") == OOC_ERR_BUDGET);
  CU_ASSERT(p == NULL);
  CU_ASSERT(has(ctx, "--gpu-mem") && has(ctx, "exceeded") && has(ctx, "a test buffer"));
  CU_ASSERT(ooc_fault_calls(ctx, OOC_FAULT_DEVICE) == calls);
  CU_ASSERT(rt.used == 0 && rt.nbuf == 0 && rt.nalloc == 0);
  fprintf(stderr, "[%s] ", ooc_ctx_error(ctx));
  ooc_clear_error(ctx);
  /* sizes are counted rounded up: 300 bytes are 512 in a budget of 511 */
  rt.budget = 2 * OCU_RT_ALIGN - 1;
  CU_ASSERT(ocu_rt_dalloc(&rt, &p, 300, "a small buffer") == OOC_ERR_BUDGET);
  ooc_clear_error(ctx);
  rt.budget = 1 << 20;
  /* nothing asked, nothing done */
  CU_ASSERT(ocu_rt_dalloc(&rt, &p, 0, "nothing") == OOC_OK && p == NULL);
  CU_ASSERT(ooc_fault_calls(ctx, OOC_FAULT_DEVICE) == calls);
  /* the seam, once: the device allocation fails as an out-of-memory would */
  ooc_fault_arm(ctx, OOC_FAULT_DEVICE, 1, 0, 0);
  p = &rt;
  CU_ASSERT(ocu_rt_dalloc(&rt, &p, 1000, "a faulted buffer") == OOC_ERR_DEVICE);
  CU_ASSERT(p == NULL && has(ctx, "injected") && has(ctx, "a faulted buffer"));
  CU_ASSERT(ooc_fault_injected(ctx, OOC_FAULT_DEVICE) == 1);
  ooc_clear_error(ctx);
  /* pinned: the same seam, OOC_ERR_NOMEM, nothing charged to the host count */
  int64_t hb = ctx->host_bytes;
  ooc_fault_arm(ctx, OOC_FAULT_DEVICE, 1, 0, 0);
  CU_ASSERT(ocu_rt_halloc(&rt, &p, 4096, "a pinned buffer") == OOC_ERR_NOMEM);
  CU_ASSERT(p == NULL && has(ctx, "injected") && has(ctx, "a pinned buffer"));
  CU_ASSERT(ctx->host_bytes == hb && rt.pinned == 0);
  ooc_clear_error(ctx);
  /* persistent: every call from the first on */
  ooc_fault_arm(ctx, OOC_FAULT_DEVICE, 1, 1, 0);
  for (int i = 0; i < 3; i++) {
    CU_ASSERT(ocu_rt_dalloc(&rt, &p, 64, "d") == OOC_ERR_DEVICE);
    CU_ASSERT(ocu_rt_halloc(&rt, &p, 64, "h") == OOC_ERR_NOMEM);
    ooc_clear_error(ctx);
  }
  CU_ASSERT(ooc_fault_injected(ctx, OOC_FAULT_DEVICE) == 6);
  CU_ASSERT(ooc_fault_calls(ctx, OOC_FAULT_DEVICE) == 6);
  ooc_fault_arm(ctx, OOC_FAULT_DEVICE, 0, 0, 0);
  CU_ASSERT(rt.used == 0 && rt.peak == 0 && rt.nbuf == 0);
  /* release: NULL is nothing; a pointer the pool did not hand out is a bug, nothing freed */
  CU_ASSERT(ocu_rt_release(&rt, NULL) == OOC_OK);
  CU_ASSERT(ocu_rt_release(&rt, &rt) == OOC_ERR_INTERNAL && has(ctx, "did not hand out"));
  ooc_clear_error(ctx);
  CU_ASSERT(ocu_rt_fini(&rt) == OOC_OK);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  tu_ctx_done(ctx);
  /* the helpers */
  CU_ASSERT(ocu_rt_budget(0, 12345) == 12345);
  CU_ASSERT(ocu_rt_cublas_ws((int64_t)1 << 40) == (int64_t)32 << 20);
  CU_ASSERT(ocu_rt_cublas_ws(0) == (int64_t)256 << 10);
  CU_ASSERT(!strcmp(ocu_cusolver_string(CUSOLVER_STATUS_INVALID_VALUE),
                    "CUSOLVER_STATUS_INVALID_VALUE"));
}

typedef struct {
  ooc_ctx_t *ctx;
} holder_t;
static ooc_status_t bad_cuda(holder_t *x) {
  CU(x, cudaSetDevice(-1));
  return OOC_OK;
}
/* (the libraries' own failures need a device or crash on bad handles: these stand in) */
static cublasStatus_t blas_fails(void) { return CUBLAS_STATUS_INVALID_VALUE; }
static cusolverStatus_t solver_fails(void) { return CUSOLVER_STATUS_INVALID_VALUE; }
static ooc_status_t bad_cublas(holder_t *x) {
  CB(x, blas_fails());
  return OOC_OK;
}
static ooc_status_t bad_cusolver(holder_t *x) {
  CS(x, solver_fails());
  return OOC_OK;
}

static void t_error_macros(void) {
  holder_t h = {tu_ctx()};
  ooc_ctx_t *ctx = h.ctx;
  CU_ASSERT(bad_cuda(&h) == OOC_ERR_DEVICE);
  CU_ASSERT(has(ctx, "CUDA: cudaSetDevice(-1) failed: "));
  CU_ASSERT(strstr(ctx->err_where, "test_cuda_rt.c") != NULL);
  fprintf(stderr, "[%s at %s] ", ooc_ctx_error(ctx), ctx->err_where);
  cudaGetLastError();
  ooc_clear_error(ctx);
  CU_ASSERT(bad_cublas(&h) == OOC_ERR_DEVICE);
  CU_ASSERT(has(ctx, "cuBLAS: blas_fails() failed: "));
  fprintf(stderr, "[%s] ", ooc_ctx_error(ctx));
  ooc_clear_error(ctx);
  CU_ASSERT(bad_cusolver(&h) == OOC_ERR_DEVICE);
  CU_ASSERT(has(ctx, "cuSOLVER: solver_fails() failed: CUSOLVER_STATUS_INVALID_VALUE"));
  fprintf(stderr, "[%s] ", ooc_ctx_error(ctx));
  tu_ctx_done(ctx);
}

/* ---- with a GPU: the runtime ---------------------------------------------------------------- */

static void t_runtime(void) {
  if (!g_gpu) return;
  ooc_ctx_t *ctx = tu_ctx();
  ocu_rt_t rt;
  const char *tr = tu_path("rt_trace.json");
  int64_t budget = 8 << 20;
  CU_ASSERT_FATAL(ocu_rt_init(&rt, ctx, 0, budget, tr, 0, "oocsolve test (cuda)") == OOC_OK);
  CU_ASSERT_FATAL(ocu_rt_open(&rt) == OOC_OK);
  CU_ASSERT(strlen(rt.device) > 0);
  cudaStream_t s0, s1;
  cudaEvent_t ev[3];
  cublasHandle_t bl;
  double *d = NULL, *h = NULL;
  CU_ASSERT_FATAL(ocu_rt_stream(&rt, &s0, "H2D", 1) == OOC_OK);
  CU_ASSERT_FATAL(ocu_rt_stream(&rt, &s1, "compute", 0) == OOC_OK);
  CU_ASSERT(ooc_ctx_streams(ctx) == 2);
  CU_ASSERT_FATAL(ocu_rt_events(&rt, ev, 3, cudaEventDisableTiming) == OOC_OK);
  CU_ASSERT_FATAL(ocu_rt_blas(&rt, &bl, s1, 1 << 20) == OOC_OK);
  CU_ASSERT(rt.used == 1 << 20);
  CU_ASSERT_FATAL(ocu_rt_dalloc(&rt, &d, 8 * 1000, "a vector") == OOC_OK);
  CU_ASSERT(rt.used == (1 << 20) + OCU_RT_ROUND(8000) && rt.peak == rt.used && rt.nalloc == 2);
  int64_t hb = ctx->host_bytes;
  CU_ASSERT_FATAL(ocu_rt_halloc(&rt, &h, 8 * 1000, "a pinned vector") == OOC_OK);
  CU_ASSERT(ctx->host_bytes == hb + 8000 && rt.pinned == 8000);
  void *big = NULL;
  CU_ASSERT(ocu_rt_dalloc(&rt, &big, budget, "too much") == OOC_ERR_BUDGET && big == NULL);
  ooc_clear_error(ctx);
  CU_ASSERT_FATAL(ocu_rt_clock(&rt) == OOC_OK);
  for (int i = 0; i < 1000; i++) h[i] = i;
  int64_t sp = ocu_rt_span(&rt, 0, OCU_SPAN_COPY, "h2d vec", 8000, 0);
  CU_ASSERT(cudaMemcpyAsync(d, h, 8000, cudaMemcpyHostToDevice, s0) == cudaSuccess);
  ocu_rt_span_end(&rt, sp, 0);
  CU_ASSERT(cudaEventRecord(ev[0], s0) == cudaSuccess);
  CU_ASSERT(cudaStreamWaitEvent(s1, ev[0], 0) == cudaSuccess);
  double two = 2;
  sp = ocu_rt_span(&rt, 1, OCU_SPAN_KERNEL, "scal", 0, 1000);
  CU_ASSERT(cublasDscal(bl, 1000, &two, d, 1) == CUBLAS_STATUS_SUCCESS);
  ocu_rt_span_end(&rt, sp, 1);
  ocu_rt_host_span(&rt, "take col", ooc_now(), ooc_now(), 8);
  CU_ASSERT(cudaMemcpyAsync(h, d, 8000, cudaMemcpyDeviceToHost, s1) == cudaSuccess);
  CU_ASSERT(cudaStreamSynchronize(s1) == cudaSuccess);
  CU_ASSERT(h[999] == 2 * 999);
  ocu_rt_times_t t;
  ocu_rt_times(&rt, &t);
  CU_ASSERT(t.copy > 0 && t.kernel > 0 && t.span >= t.kernel && t.bytes_host == 8);
  CU_ASSERT(ocu_rt_sum(&rt, "scal", -1) > 0 && ocu_rt_sum(&rt, NULL, OCU_SPAN_COPY) > 0);
  CU_ASSERT(ocu_rt_fini(&rt) == OOC_OK);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0 && ctx->host_bytes == hb);
  tu_ctx_done(ctx);
  FILE *f = fopen(tr, "r");
  CU_ASSERT_FATAL(f != NULL);
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  buf[len] = 0;
  fclose(f);
  CU_ASSERT(strstr(buf, "\"traceEvents\"") && strstr(buf, "\"name\":\"scal\"") &&
            strstr(buf, "stream 1 (compute)") && strstr(buf, "oocsolve test (cuda)") &&
            strstr(buf, "\"name\":\"take col\""));
}

/* ---- with a GPU: --gpu-mem enforced by each executor's pool ------------------------------- */

static void refused(ooc_ctx_t *ctx, ooc_status_t st, const char *who) {
  CU_ASSERT(st == OOC_ERR_BUDGET);
  CU_ASSERT(has(ctx, "--gpu-mem") && has(ctx, "exceeded"));
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  fprintf(stderr, "[%s: %s] ", who, ooc_ctx_error(ctx));
  tu_ctx_done(ctx);
}

/* A's n x n in a tile store (tile b) over a cache that holds it all. */
static tstore_t *whole_store(ooc_ctx_t *ctx, const double *A, int64_t n, int64_t b,
                             tcache_t **cache) {
  tstore_t *ts = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 40, cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, *cache, n, n, b, NULL, NULL, &ts) == OOC_OK);
  part_t p = ts_rows(ts);
  for (int64_t tj = 0; tj < p.count; tj++)
    CU_ASSERT(ts_put_tiles(ts, 0, p.count, tj, tj + 1, A + part_start(p, tj) * n, n) == OOC_OK);
  return ts;
}

/* A method's run on executor ex within --gpu-mem `budget` (the executor's own part overhead):
 * with the whole matrix as the stripe (first) refused by ex_alloc naming the budget; at the
 * planned stripe W within the budget. Either way nothing is left allocated or streaming. */
static void budget_outcome(ooc_ctx_t *ctx, const char *what, int first, ooc_status_t st,
                           ooc_exec_t *ex, int64_t overhead, int64_t budget, int64_t W) {
  if (first) {
    CU_ASSERT(st == OOC_ERR_NOMEM && has(ctx, "budget"));
    fprintf(stderr, "[%s: %s] ", what, ooc_ctx_error(ctx));
  } else {
    if (st != OOC_OK) fprintf(stderr, "\n%s: %s\n", what, ooc_ctx_error(ctx));
    CU_ASSERT(st == OOC_OK);
    CU_ASSERT(ex->stats.dev_peak <= ex->budget && ex->budget + overhead == budget);
    fprintf(stderr, "[%s stripe %lld: peak %lld of %lld] ", what, (long long)W,
            (long long)ex->stats.dev_peak, (long long)ex->budget);
  }
  CU_ASSERT(ex->dev_bytes == 0);
  ex_destroy(ex);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
}

static void t_budget(void) {
  if (!g_gpu) return;
  int64_t n = 1000, b = 40, budget = 4 << 20; /* the matrix is 2x the budget */
  /* gj on the CUDA executor (gj_x.c): the whole matrix as the stripe is refused by ex_alloc
   * (the budget named); at the stripe the planner gives (gj_x_device_stripe) the run stays
   * within --gpu-mem, the executor's own part included */
  ooc_ctx_t *ctx = tu_ctx();
  int64_t W = 0;
  for (int k = 0; k < 2; k++) {
    ex_cuda_config_t gc = {.gpu_mem = budget, .nqueues = 3};
    ooc_exec_t *ge = NULL;
    CU_ASSERT_FATAL(ex_cuda_create(ctx, &gc, &ge) == OOC_OK);
    W = gj_x_device_stripe(ge, n, b, n);
    CU_ASSERT(W >= b && W < n);
    double *A = tu_gen_matrix(GEN_RANDOM, n, 0, 0, 3);
    double *colnorm = calloc((size_t)n, sizeof *colnorm);
    int64_t *perm = malloc((size_t)n * sizeof *perm), bi, bj, info = 0;
    ooc_ops_cpu()->colabs(n, n, A, n, colnorm, &bi, &bj);
    tcache_t *cache = NULL;
    tstore_t *ts = whole_store(ctx, A, n, b, &cache);
    gj_args_t a = {.A = ts, .stripe = k ? W : n, .ops = ooc_ops_cpu(), .colnorm = colnorm,
                   .perm = perm, .x = ge};
    gj_stats_t gs = {0};
    ooc_status_t st = gj_run(ctx, &a, &gs, &info);
    if (k) CU_ASSERT(gs.steps > 1);
    budget_outcome(ctx, "gj", !k, st, ge, ex_cuda_overhead(&gc), budget, W);
    tstore_destroy(ts);
    tcache_destroy(cache);
    free(A);
    free(colnorm);
    free(perm);
  }
  tu_ctx_done(ctx);
  /* chol on the CUDA executor: the whole matrix as the stripe is refused by ex_alloc (the budget
   * named); as planned, the run stays within --gpu-mem, the executor's own part included */
  ctx = tu_ctx();
  for (int k = 0; k < 2; k++) {
    ex_cuda_config_t cx = {.gpu_mem = budget, .nqueues = 3}; /* as plan_exec_config */
    ooc_exec_t *ce = NULL;
    CU_ASSERT_FATAL(ex_cuda_create(ctx, &cx, &ce) == OOC_OK);
    W = chol_device_stripe(ce, n, b, CHOL_INVERT, 0);
    CU_ASSERT(W >= b && W < n);
    double *A = tu_gen_matrix(GEN_MATERN, n, 0, 1e-2, 3);
    tcache_t *cache = NULL;
    tstore_t *ts = whole_store(ctx, A, n, b, &cache);
    chol_args_t a = {.A = ts, .stripe = k ? W : n, .ops = ooc_ops_cpu(), .job = CHOL_INVERT,
                     .lower_only = 1, .exec = ce,
                     .nb = chol_device_nb(ce, n, b, W, CHOL_INVERT, 0)};
    ooc_status_t st = chol_run(ctx, &a, NULL, NULL, NULL);
    budget_outcome(ctx, "chol", !k, st, ce, ex_cuda_overhead(&cx), budget, W);
    tstore_destroy(ts);
    tcache_destroy(cache);
    free(A);
  }
  tu_ctx_done(ctx);
  /* the product on the CUDA executor: beyond what the executor hands out, refused by ex_alloc
   * (OOC_ERR_NOMEM naming the budget); as planned, within --gpu-mem, the executor's own part
   * (a cuBLAS workspace per queue) included */
  ex_cuda_config_t xc = {.gpu_mem = budget, .nqueues = 3};
  xc.gpu_mem = ex_cuda_overhead(&xc) + budget;
  ooc_exec_t *gx = NULL;
  gemm_dev_t *gd = NULL;
  ctx = tu_ctx();
  CU_ASSERT_FATAL(ex_cuda_create(ctx, &xc, &gx) == OOC_OK);
  CU_ASSERT(gemm_dev_create(gx, n, n, b, 2, 1, &gd) == OOC_ERR_NOMEM && gd == NULL);
  CU_ASSERT(has(ctx, "budget"));
  fprintf(stderr, "[product: %s] ", ooc_ctx_error(ctx));
  CU_ASSERT(gx->dev_bytes == 0);
  ex_destroy(gx);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  tu_ctx_done(ctx);
  ctx = tu_ctx();
  int64_t s = 0, kb = 0;
  int ns = 0, nc = 0;
  CU_ASSERT_FATAL(ex_cuda_create(ctx, &xc, &gx) == OOC_OK);
  CU_ASSERT_FATAL(gemm_device_plan(ctx, gx, n, n, n, b, 0, &s, &kb, &ns, &nc) == OOC_OK);
  CU_ASSERT_FATAL(gemm_dev_create(gx, ooc_min64(s, n), ooc_min64(s, n), ooc_min64(kb, n), ns, nc,
                                  &gd) == OOC_OK);
  CU_ASSERT(s < n && gx->stats.dev_peak <= gx->budget && gx->budget + ex_cuda_overhead(&xc) ==
                                                               xc.gpu_mem);
  fprintf(stderr, "[product block %lld: peak %lld of %lld] ", (long long)s,
          (long long)gx->stats.dev_peak, (long long)gx->budget);
  CU_ASSERT(ooc_ctx_streams(ctx) == 3);
  CU_ASSERT(gemm_dev_destroy(gd) == OOC_OK);
  ex_destroy(gx);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  tu_ctx_done(ctx);
}

/* ---- with a GPU: fault loops through the API ---------------------------------------------- */

/* The methods on the GPU: gj, chol and newton's products invert; lu inverts (its factor and the
 * solve of the identity); rbt solves 3 right-hand sides; least squares A (3000 x 200) b; lu-lazy
 * factors, reading A as LU asks for it (OOCSOLVE_LAZY_READ, issue 27). */
enum { GJ = 0, CHOL = 1, PRODUCT = 2, LU = 3, RBT = 4, LSTSQ = 5, LAZY = 6, NEX = 7 };
static const char *ex_name(int ex) {
  static const char *names[NEX] = {"gj", "chol", "product", "lu", "rbt", "lstsq", "lu-lazy"};
  return names[ex];
}
static char g_in[NEX][1100], g_rhs[NEX][1100];
static int64_t g_n[NEX] = {1000, 1000, 300, 1000, 1000, 200, 1000};
static const char *lazy_said = "A read while the factor ran";
static int g_read_first; /* LAZY reads A before the factor all the same (t_lazy_bits) */
#define LSTSQ_ROWS 3000

static void make_input(int ex) {
  if (g_in[ex][0]) return;
  int64_t n = g_n[ex], rows = ex == LSTSQ ? LSTSQ_ROWS : n;
  snprintf(g_in[ex], sizeof g_in[ex], "%s/rt_%s.h5", tu_tmpdir(), ex_name(ex));
  double *A = ex == CHOL || ex == PRODUCT ? tu_gen_matrix(GEN_MATERN, n, 0, 1e-2, 7)
              : ex == LSTSQ              ? tu_rand_matrix(rows, n, 7)
                                         : tu_gen_matrix(GEN_RANDOM, n, 0, 0, 7);
  tu_write_matrix(g_in[ex], "/A", rows, n, A, 2);
  free(A);
  if (ex == RBT || ex == LSTSQ) {
    snprintf(g_rhs[ex], sizeof g_rhs[ex], "%s/rt_%s_b.h5", tu_tmpdir(), ex_name(ex));
    double *B = tu_rand_matrix(rows, 3, 8);
    tu_write_matrix(g_rhs[ex], "/B", rows, 3, B, 2);
    free(B);
  }
}

static ooc_status_t run_api(ooc_ctx_t *ctx, int ex, const char *out, ooc_report_t *rep) {
  int64_t n = g_n[ex];
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CUDA;
  o.tile = 40;
  static const ooc_method_t m[NEX] = {OOC_METHOD_GJ,   OOC_METHOD_CHOL, OOC_METHOD_NEWTON,
                                      OOC_METHOD_LU,   OOC_METHOD_RBT,  OOC_METHOD_AUTO,
                                      OOC_METHOD_LU};
  o.method = m[ex];
  /* out of GPU core for gj, chol, lu and rbt (the ring of slots); several blocks for the
   * product; least squares' panel in row blocks */
  o.gpu_mem = (ex == PRODUCT ? (int64_t)32 << 20 : ex == LSTSQ ? (int64_t)576 << 20 : 0) +
              8 * n * n / 2; /* lstsq: plan.c keeps 512 MiB for cuSOLVER's QR workspaces */
  o.checkpoint = OOC_CHECKPOINT_NEVER;
  o.check = OOC_CHECK_FULL;
  o.force = 1;
  if (ex == LSTSQ) return ooc_lstsq(ctx, g_in[ex], g_rhs[ex], out, &o, rep);
  if (ex == RBT) return ooc_solve(ctx, g_in[ex], g_rhs[ex], out, &o, rep);
  if (ex == LAZY) {
    if (!g_read_first) setenv("OOCSOLVE_LAZY_READ", "1", 1);
    ooc_status_t st = ooc_factor(ctx, g_in[ex], out, &o, rep);
    unsetenv("OOCSOLVE_LAZY_READ");
    return st;
  }
  return ooc_invert(ctx, g_in[ex], out, &o, rep);
}

static int64_t gpu_free(void) {
  size_t fr = 0, tot = 0;
  cudaDeviceSynchronize();
  return cudaMemGetInfo(&fr, &tot) == cudaSuccess ? (int64_t)fr : -1;
}

static void fault_loop(int ex, int persistent, int64_t max_n) {
  if (!g_gpu) return;
  make_input(ex);
  char out[1200];
  snprintf(out, sizeof out, "%s.out.h5", g_in[ex]);
  uint64_t h_in = tu_file_hash(g_in[ex]);
  { /* a clean run first: the libraries loaded, and the reference that the loop ends with */
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    ooc_status_t st = run_api(ctx, ex, out, &rep);
    if (st != OOC_OK) fprintf(stderr, "\n  %s: the clean run failed: %s ", ex_name(ex), ooc_ctx_error(ctx));
    CU_ASSERT_FATAL(st == OOC_OK);
    CU_ASSERT(!strcmp(rep.backend, "cuda"));
    if (ex == LAZY) CU_ASSERT(strstr(rep.warnings, lazy_said) != NULL);
    remove(out);
    tu_ctx_done(ctx);
  }
  int64_t free0 = gpu_free(), n;
  long faults = 0, dev = 0, pinned = 0;
  for (n = 1; n <= max_n; n++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    ooc_fault_arm(ctx, OOC_FAULT_DEVICE, n, persistent, 0);
    ooc_status_t st = run_api(ctx, ex, out, &rep);
    int64_t injected = ooc_fault_injected(ctx, OOC_FAULT_DEVICE);
    ooc_fault_arm(ctx, OOC_FAULT_DEVICE, 0, 0, 0);
    g_runs++;
    char what[512];
    snprintf(what, sizeof what, "%s %s device fault #%lld: %s \"%s\"", ex_name(ex),
             persistent ? "persistent" : "one-shot", (long long)n, ooc_status_str(st),
             ooc_ctx_error(ctx));
    int leak = ctx->live_allocs != 0 || ctx->host_bytes != 0 || ooc_ctx_streams(ctx) != 0;
    CU_ASSERT(!leak);
    if (leak)
      fprintf(stderr, "\n  LEAK after %s: %lld blocks, %lld bytes, %lld streams\n", what,
              (long long)ctx->live_allocs, (long long)ctx->host_bytes,
              (long long)ooc_ctx_streams(ctx));
    CU_ASSERT(tu_file_hash(g_in[ex]) == h_in);
    int present = tu_file_exists(out);
    if (injected == 0) { /* past the last allocation: the run completes */
      CU_ASSERT(st == OOC_OK && present);
      if (st != OOC_OK) fprintf(stderr, "\n  no fault but %s\n", what);
      remove(out);
      tu_ctx_done(ctx);
      break;
    }
    faults += injected;
    int good = (st == OOC_ERR_DEVICE || st == OOC_ERR_NOMEM) && has(ctx, "injected") && !present;
    CU_ASSERT(good);
    if (!good) fprintf(stderr, "\n  unexpected after %s (output %s)\n", what, present ? "present" : "absent");
    if (st == OOC_ERR_DEVICE) dev++;
    else if (st == OOC_ERR_NOMEM) pinned++;
    remove(out);
    tu_ctx_done(ctx);
  }
  /* Device buffers cannot outlive a run: every one is in its runtime's pool, which ocu_rt_fini
   * empties, and every executor creates its streams before any buffer, so a runtime that was
   * not finished shows in the stream count asserted above. The GPU's free memory is printed,
   * not asserted: other processes on the GPU (the suites run side by side) move it by GiBs. */
  int64_t free1 = gpu_free();
  g_faults += faults;
  fprintf(stderr, "\n  [%s %s: %lld runs, %ld faults (%ld device, %ld pinned), GPU free memory "
          "%+lld bytes] ", ex_name(ex), persistent ? "persistent" : "one-shot", (long long)n,
          faults, dev, pinned, (long long)(free1 - free0));
  CU_ASSERT(n > 1 && dev > 0 && pinned > 0);
  CU_ASSERT(n <= max_n); /* the loop got past the last allocation */
}

static void t_fault_gj_once(void) { fault_loop(GJ, 0, 200); }
static void t_fault_gj_persistent(void) { fault_loop(GJ, 1, 200); }
static void t_fault_chol_once(void) { fault_loop(CHOL, 0, 200); }
static void t_fault_chol_persistent(void) { fault_loop(CHOL, 1, 200); }
static void t_fault_product_once(void) { fault_loop(PRODUCT, 0, 200); }
static void t_fault_product_persistent(void) { fault_loop(PRODUCT, 1, 200); }
static void t_fault_lu_once(void) { fault_loop(LU, 0, 200); }
static void t_fault_lu_persistent(void) { fault_loop(LU, 1, 200); }
static void t_fault_rbt_once(void) { fault_loop(RBT, 0, 200); }
static void t_fault_rbt_persistent(void) { fault_loop(RBT, 1, 200); }
static void t_fault_lstsq_once(void) { fault_loop(LSTSQ, 0, 200); }
static void t_fault_lstsq_persistent(void) { fault_loop(LSTSQ, 1, 200); }
static void t_fault_lazy_once(void) { fault_loop(LAZY, 0, 200); }

/* LU's factor on the GPU reading A as it asks for it: the same bits as the factor that reads A
 * first, the tiles moved in place either way (the strips' buffers pinned as a whole load pins
 * them), the host's peak within its budget. */
static void t_lazy_bits(void) {
  if (!g_gpu) return;
  make_input(LAZY);
  char out[2][1200];
  ooc_report_t rep[2];
  for (int lazy = 0; lazy < 2; lazy++) {
    snprintf(out[lazy], sizeof out[lazy], "%s.%d.h5:/LU", g_in[LAZY], lazy);
    ooc_ctx_t *ctx = tu_ctx();
    g_read_first = !lazy;
    ooc_status_t st = run_api(ctx, LAZY, out[lazy], &rep[lazy]);
    g_read_first = 0;
    if (st != OOC_OK) fprintf(stderr, "\n  lazy %d: %s ", lazy, ooc_ctx_error(ctx));
    CU_ASSERT_FATAL(st == OOC_OK);
    CU_ASSERT((strstr(rep[lazy].warnings, lazy_said) != NULL) == lazy);
    CU_ASSERT(strstr(rep[lazy].warnings, "the GPU in place") != NULL);
    CU_ASSERT(rep[lazy].host_peak <= rep[lazy].host_budget);
    CU_ASSERT(rep[lazy].residual < 30);
    tu_ctx_done(ctx);
  }
  int64_t r0, c0, r1, c1;
  double *X0 = tu_read_matrix(out[0], &r0, &c0), *X1 = tu_read_matrix(out[1], &r1, &c1);
  CU_ASSERT_FATAL(X0 && X1 && r0 == r1 && c0 == c1);
  CU_ASSERT(memcmp(X0, X1, (size_t)(r0 * c0) * sizeof(double)) == 0);
  fprintf(stderr, "\n  [lu factor n = %lld on the GPU: read first %.3f s, read as asked %.3f s "
          "(%s)] ", (long long)g_n[LAZY], rep[0].t_total, rep[1].t_total, rep[1].warnings);
  free(X0);
  free(X1);
}

static void t_totals(void) {
  fprintf(stderr, "\n  [device fault loops: %ld runs, %ld faults injected] ", g_runs, g_faults);
}

int main(int argc, char **argv) {
  char why[256];
  g_gpu = ocu_probe(why, sizeof why);
  printf("test_cuda_rt: %s %s\n", g_gpu ? "on" : "no usable GPU (the pool's rules only):", why);
  if (argc > 1 && !strcmp(argv[1], "sanitize")) {
    static const tu_test_t t[] = {{"the runtime on the GPU", t_runtime},
                                  {"--gpu-mem enforced by the three pools", t_budget},
                                  {NULL, NULL}};
    return tu_run("cuda-rt-sanitize", t);
  }
  static const tu_test_t tests[] = {
      {"pool: budget before seam, seam for device and pinned", t_pool_rules},
      {"CU/CB/CS: library, call, file:line", t_error_macros},
      {"the runtime on the GPU: counts, streams, trace", t_runtime},
      {"--gpu-mem enforced by the gj, chol and product pools", t_budget},
      {"fault loop: gj, one-shot", t_fault_gj_once},
      {"fault loop: gj, persistent", t_fault_gj_persistent},
      {"fault loop: chol, one-shot", t_fault_chol_once},
      {"fault loop: chol, persistent", t_fault_chol_persistent},
      {"fault loop: product, one-shot", t_fault_product_once},
      {"fault loop: product, persistent", t_fault_product_persistent},
      {"fault loop: lu, one-shot", t_fault_lu_once},
      {"fault loop: lu, persistent", t_fault_lu_persistent},
      {"fault loop: rbt, one-shot", t_fault_rbt_once},
      {"fault loop: rbt, persistent", t_fault_rbt_persistent},
      {"fault loop: lstsq, one-shot", t_fault_lstsq_once},
      {"fault loop: lstsq, persistent", t_fault_lstsq_persistent},
      {"lu on the GPU reading A as it asks: the same bits", t_lazy_bits},
      {"fault loop: lu reading A as it asks, one-shot", t_fault_lazy_once},
      {"totals", t_totals},
      {NULL, NULL}};
  return tu_run("cuda-rt", tests);
}
#endif
