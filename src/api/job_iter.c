/*
 * job_iter.c: newton and hyper7 in the pipeline (job_iter_run, methods.c's newton and hyper7
 * entries): iter_run on the loaded A with its work stores, the warm start (--warm-start) read
 * through job.c's loader, the products on the GPU executor when the plan puts them there
 * (job_gemm.c's job_gemm_gpu_open / job_gemm_gpu_done); the inverse is left in j->result.
 */
#include <math.h>

#include "api/job_int.h"
#include "solvers/iter.h"

/* The warm start into S[0], through the same loader as the input (finite check, column norms). */
static ooc_status_t load_warm(job_t *j, tstore_t *V, double *norm1_v) {
  ooc_ctx_t *ctx = j->ctx;
  h5mat_t *w = NULL;
  double *cn = NULL;
  ooc_status_t st = job_open_input(j, j->o.warm_start, &w);
  if (st != OOC_OK) return st;
  if (h5m_rows(w) != j->n || h5m_cols(w) != j->n) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: the warm start is %lld x %lld; A is %lld x %lld",
                  h5m_name(w), (long long)h5m_rows(w), (long long)h5m_cols(w), (long long)j->n,
                  (long long)j->n);
    goto done;
  }
  cn = ooc_calloc(ctx, (size_t)j->n, sizeof(double));
  if (!cn) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading the warm start");
    goto done;
  }
  OOC_CHECK(st = job_load(j, V, w, cn));
  *norm1_v = 0;
  for (int64_t i = 0; i < j->n; i++) *norm1_v = fmax(*norm1_v, cn[i]);
  ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "warm start from %s", h5m_name(w));
done:
  ooc_free(ctx, cn);
  h5m_close(w);
  return st;
}

ooc_status_t job_iter_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int64_t n = j->n;
  static const char *const tags[ITER_MAX_STORES] = {"V0", "V1", "V2", "V3"};
  int sym = j->verdict.symmetric, posdiag = j->verdict.posdiag; /* the load's pre-pass */
  int ns = iter_stores(j->method);
  /* plan() made W a multiple of the tile before clamping it to n: undo the clamp, so W = n is
   * one block rather than n rounded down to tiles */
  iter_args_t ia = {.A = j->A, .method = j->method, .ops = j->ops,
                    .block = ooc_cdiv64(j->W, j->b) * j->b,
                    .spd = sym && posdiag, .max_iter = j->o.max_iter};
  for (int k = 0; k < ns; k++) {
    j->ispill[k] = (spill_slot_t){.job = j, .tag = tags[k]};
    ooc_spill_ops_t sp = job_spill_ops(&j->ispill[k], n);
    OOC_TRY(tstore_create(ctx, j->cache, n, n, j->b, NULL, &sp, &j->iv[k]));
    ia.S[k] = j->iv[k];
  }
  for (int64_t i = 0; i < n; i++) ia.norm1_a = fmax(ia.norm1_a, j->colnorm[i]);
  if (j->o.warm_start && *j->o.warm_start) {
    OOC_TRY(load_warm(j, j->iv[0], &ia.norm1_v0));
    ia.warm = 1;
  }
  /* Stop at half the check's threshold: the check recomputes A V from the written file (other
   * summation order, maybe float32), so a ratio just under the threshold could fail it. Always
   * in float64 units, also for a float32 output: the ratio with float32's eps is a weak test when
   * n kappa eps_32 is near 1 (it passes ||I - A V||_1 > 1), so we do not stop on it. */
  double thr = j->o.check_threshold > 0 ? j->o.check_threshold : 30;
  ia.target = thr / 2;
  ia.accept = thr;
  /* every product on the GPU executors (or on several host devices; one CPU device: gemm_run's
   * own host executor), spread over the job's devices (issue 26); epilogues on the host */
  if ((j->cuda && j->plan.gncblk > 0) || (!j->cuda && j->ndev > 1)) {
    int64_t MB = ooc_min64(ia.block, n);
    OOC_TRY(job_gemm_gpu_open(j, MB, MB, j->cuda ? ooc_min64(j->plan.gkb, n) : MB, 1));
    ia.dev = j->gdev;
    ia.devs = j->gdevs;
    ia.ndev = j->gxs.n;
    if (j->cuda) ia.kblock = j->plan.gkb;
  }
  iter_result_t ir;
  ooc_status_t st = iter_run(ctx, &ia, &ir);
  if (j->gx) {
    ooc_status_t st2 = job_gemm_gpu_done(j, ia.block, j->plan.gkb, j->plan.gslots,
                                         j->plan.gncblk, &ir.gemm);
    if (st == OOC_OK) st = st2;
  }
  r->iterations = ir.iterations;
  for (int k = 0; k < OOC_MAX_ITER_REPORT; k++) r->iter_residual[k] = k < ir.nres ? ir.res[k] : NAN;
  *steps = ir.iterations;
  j->iter_flops = ir.gemm.flops;
  ooc_warn(r->warnings, sizeof r->warnings,
           "%s: V_0 = %s, %d steps, %lld out-of-core products (GEMM block %lld)", r->method,
           ir.start, ir.iterations, (long long)ir.products, (long long)j->W);
  if (st == OOC_OK) {
    j->result = j->iv[ir.result];
  } else if (st != OOC_ERR_INTERRUPTED) {
    ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  }
  return st;
}
