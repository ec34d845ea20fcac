/*
 * job_rbt.c: --method rbt in the pipeline (issue 23). job.c loads A and B into their stores (the
 * whole of A, as for LU: finite values checked, column norms), plans rbt's workspace (plan.c) and
 * writes j->B; this file runs rbt_solve (solvers/rbt.h) with the loaded stores as its sources (so
 * the refinement's residuals are against the original A, read from the cache or the scratch, not
 * the file again), puts X into j->B and fills the report. On the GPU the LU of the transformed
 * matrix runs on the CUDA executor, sized as job_lu.c sizes LU's; the transform, the residuals and
 * the corrections' O(n^2) work stay on the host.
 */
#include <math.h>
#include <string.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/rbt.h"

/* A tile store as rbt's source: any rectangle, each tile it meets read once and only the part
 * it needs (ts_read_rect: rbt's groups of bt x bt blocks straddle the b x b tiles). */
static ooc_status_t store_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               double *dst, int64_t ld) {
  return ts_read_rect(self, r0, c0, nr, nc, dst, ld);
}

ooc_status_t job_rbt_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int64_t n = j->n, m = j->m, b = j->b, N, bt;
  int depth = j->o.rbt_depth > 0 ? j->o.rbt_depth : RBT_DEPTH;
  rbt_shape(n, b, depth, &N, &bt);
  int64_t W = plan_lu_stripe(&j->plan);
  if (W == 0)
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s: --host-mem is too small for rbt with n = %lld and "
                    "tile %lld: raise --host-mem or lower --tile", h5m_name(j->in_a),
                    (long long)n, (long long)b);
  ooc_exec_t *gx = NULL;
  int K = 0;
  if (j->cuda) OOC_TRY(job_lu_device(j, "rbt", N, bt, &gx, &W, &K));
  r->stripe = ts_stripe(N, bt, W);
  double *X = ooc_malloc(ctx, (size_t)(n * m + 1) * sizeof(double));
  ooc_status_t st = OOC_OK;
  rbt_stats_t s;
  memset(&s, 0, sizeof s);
  if (!X) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "rbt: out of host memory for the %lld x %lld solution",
                  (long long)n, (long long)m);
    goto done;
  }
  ooc_source_t srca = {j->A, store_read, NULL, NULL}, srcb = {j->B, store_read, NULL, NULL};
  j->ispill[0] = (spill_slot_t){.job = j, .tag = "RA"};
  j->ispill[1] = (spill_slot_t){.job = j, .tag = "RB"};
  ooc_spill_ops_t spa = job_spill_ops(&j->ispill[0], n), spb = job_spill_ops(&j->ispill[1], m);
  rbt_args_t a = {.n = n, .m = m, .b = b, .A = &srca, .B = &srcb, .depth = depth,
                  .seed = (uint64_t)j->o.seed, .max_iter = j->o.max_iter, .cache = j->cache,
                  .spill_a = &spa, .spill_b = &spb, .stripe = W, .ops = j->ops, .exec = gx,
                  .nslots = K, .X = X, .ldx = n};
  st = rbt_solve(ctx, &a, &s);
  if (st == OOC_OK) { /* X into B's store: the writer writes it as any solve's */
    part_t pr = ts_rows(j->B), pc = ts_cols(j->B);
    for (int64_t tj = 0; tj < pc.count && st == OOC_OK; tj++)
      for (int64_t ti = 0; ti < pr.count && st == OOC_OK; ti++)
        st = ts_put(j->B, ti, tj, X + part_start(pr, ti) + part_start(pc, tj) * n, n);
  }
done:
  job_gpu_done(j, &gx, "its budget", "rbt's LU", W);
  ooc_free(ctx, X);
  /* the report, also on failure (the numbers of a refinement that did not converge) */
  r->seed = (int64_t)s.seed;
  r->rbt_depth = s.depth;
  r->rbt_n = s.N;
  r->iterations = s.iters;
  r->berr_before = s.berr0;
  r->berr_after = s.berr;
  r->t_transform = s.t_transform;
  r->t_factor = s.t_factor;
  r->t_solve = s.t_solve;
  r->t_refine = s.t_refine;
  r->tiny_pivots = s.tiny;
  r->pivot_growth = s.growth > 0 ? s.growth : NAN;
  if (st == OOC_OK && s.tiny > 0)
    ooc_warn(r->warnings, sizeof r->warnings, "rbt: %lld pivots of the transformed matrix are "
             "below sqrt(eps) times their column's 1-norm (smallest ratio %.3g): A may be nearly "
             "singular; X's backward error is %.3g (below sqrt(n) eps), its forward error may "
             "be large", (long long)s.tiny, s.min_pivot, s.berr);
  j->extra_spilled += s.spilled;
  j->extra_unspilled += s.unspilled;
  double Nd = (double)s.N, nd = (double)n, md = (double)m;
  j->iter_flops = 2 * Nd * Nd * Nd / 3 + (s.iters + 1) * 2 * md * (Nd * Nd + nd * nd) +
                  6.0 * depth * Nd * Nd;
  *steps = s.N > 0 ? ooc_cdiv64(s.N, ts_stripe(s.N, s.bt, W)) : 0;
  if (st == OOC_ERR_ACCURACY || st == OOC_ERR_SINGULAR)
    ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  return st;
}
