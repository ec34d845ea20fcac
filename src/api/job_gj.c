/*
 * job_gj.c: the Gauss-Jordan method in the pipeline (job_gj_run, methods.c's gj entry): gj_run
 * on the loaded stores (inverse or solve), journaled and resumable, on a host executor over the
 * job's ops, or on the CUDA executor (ooc_cuda()->ex_create, plan_gj_exec_config) when the job
 * runs on the GPU; the planner sized the stripe for the same executor (plan_gpu).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/gj.h"

/* The GPU: the CUDA executor as planned, and the widest stripe up to the planned one whose panel
 * and ring twins fit its budget (the plan's, unless the device's free memory shrank since). */
static ooc_status_t x_device(job_t *j, ooc_exec_t **out) {
  ex_cuda_config_t xc = plan_gj_exec_config(&j->o);
  OOC_TRY(ooc_cuda()->ex_create(j->ctx, &xc, out));
  int64_t W = gj_x_device_stripe(*out, j->n, j->b, j->W);
  if (W == 0) {
    char bu[32];
    ooc_fmt_bytes((*out)->budget, bu, sizeof bu);
    ex_destroy(*out);
    *out = NULL;
    return OOC_FAIL(j->ctx, OOC_ERR_BUDGET, "gj: --gpu-mem leaves %s for Gauss-Jordan's panel, "
                    "less than one tile column with its ring and workspaces (n = %lld, tile "
                    "%lld); raise --gpu-mem or lower --tile", bu, (long long)j->n,
                    (long long)j->b);
  }
  j->W = W; /* before ckpt_start: the journal records the stripe that runs */
  j->rep->stripe = W;
  return OOC_OK;
}

/* gj_x on the job's executor: the CUDA one above, or a host executor over the job's ops. */
static ooc_status_t run_x(job_t *j, gj_args_t *ga, gj_stats_t *gs) {
  ooc_exec_t *x = NULL;
  if (j->cuda) OOC_TRY(x_device(j, &x));
  else OOC_TRY(gj_x_host_exec(j->ctx, j->ops, j->n, j->b, j->W, &x));
  ga->x = x;
  ga->stripe = j->W;
  ckpt_start(j);
  ooc_status_t st = gj_run(j->ctx, ga, gs, &j->rep->info);
  if (j->cuda) job_gpu_done(j, &x, "--gpu-mem", "gj on the executor", j->W);
  else ex_destroy(x);
  return st;
}

ooc_status_t job_gj_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  gj_args_t ga = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops, .colnorm = j->colnorm,
                  .perm = j->B ? NULL : j->perm, .after_step = ckpt_after_step, .step_user = j};
  if (j->resuming) { /* restore_stores left the journal's pivots in perm (gj copies them first) */
    ga.start_step = j->resume_step;
    ga.ipiv0 = j->perm;
    r->resumed_step = j->resume_step;
  }
  gj_stats_t gs = {0};
  ooc_status_t st = run_x(j, &ga, &gs);
  *steps = gs.steps;
  if (st == OOC_ERR_SINGULAR) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  if (st == OOC_ERR_CORRUPT) /* a scratch tile: say which matrix, and how tile ids map */
    ooc_error_context(ctx, "%s (tile id = tile row * %lld + tile column, tiles of %lld)",
                      h5m_name(j->in_a), (long long)ooc_cdiv64(j->n, j->b), (long long)j->b);
  return st;
}
