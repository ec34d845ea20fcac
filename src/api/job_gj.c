/*
 * job_gj.c: the Gauss-Jordan method in the pipeline (job_gj_run, methods.c's gj entry): gj_run
 * on the loaded stores (inverse or solve), journaled and resumable, spread over the job's
 * devices (host executors over the job's ops, or CUDA executors made as plan_exec_config
 * says when the job runs on the GPU); the planner sized the stripe for the same executor
 * (plan_gpu).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/gj.h"

/* gj_x on the job's executors, one per device (job_executors: --devices, one by default):
 * on CUDA as planned (plan_exec_config), with the widest stripe up to the planned one whose
 * panel and ring twins fit every device's budget (the plan's, unless a device's free memory
 * shrank since); on the CPU backends host executors over the job's ops. */
static ooc_status_t run_x(job_t *j, gj_args_t *ga, gj_stats_t *gs) {
  ex_set_t xs;
  if (j->cuda) {
    ex_cuda_config_t xc = plan_exec_config(&j->o);
    OOC_TRY(job_executors_cfg(j, &xc, j->ndev, xc.nqueues, 0, &xs));
    int64_t W = j->W;
    for (int d = 0; d < xs.n && W > 0; d++) W = gj_x_device_stripe(xs.ex[d], j->n, j->b, W);
    if (W == 0) {
      char bu[32];
      ooc_fmt_bytes(xs.ex[0]->budget, bu, sizeof bu);
      ex_set_destroy(&xs);
      return OOC_FAIL(j->ctx, OOC_ERR_BUDGET, "gj: --gpu-mem leaves %s for Gauss-Jordan's "
                      "panel, less than one tile column with its ring and workspaces (n = %lld, "
                      "tile %lld); raise --gpu-mem or lower --tile", bu, (long long)j->n,
                      (long long)j->b);
    }
    j->W = W; /* before ckpt_start: the journal records the stripe that runs */
    j->rep->stripe = W;
  } else {
    OOC_TRY(job_executors(j, 1, gj_x_host_budget(j->n, j->b, j->W), &xs));
  }
  ga->x = xs.ex[0];
  ga->xs = xs.ex;
  ga->nx = xs.n;
  ga->stripe = j->W;
  ga->direct = job_sweep_direct(j);
  ckpt_start(j);
  ooc_status_t st = gj_run(j->ctx, ga, gs, &j->rep->info);
  if (st == OOC_OK && ga->direct && gs->bytes_swept > 0)
    job_sweep_direct_note(j, "gj", gs->bytes_direct, gs->bytes_swept, gs->bytes_pinned,
                          gs->pin_refused);
  ooc_status_t st2 = job_executors_done(j, &xs, "gj", j->W);
  return st != OOC_OK ? st : st2;
}

ooc_status_t job_gj_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  gj_args_t ga = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops, .colnorm = j->colnorm,
                  .perm = j->B ? NULL : j->perm, .after_step = ckpt_after_step, .step_user = j};
  if (j->aload) { /* A read as the sweep asks for it (job.c lazy_room); all of it by the end of
                   * step 0 (gj.h), before any checkpoint hashes it */
    ga.need = job_lazy_need;
    ga.need_user = j;
  }
  if (j->resuming) { /* restore_stores left the journal's pivots in perm (gj copies them first) */
    ga.start_step = j->resume_step;
    ga.ipiv0 = j->perm;
    r->resumed_step = j->resume_step;
  }
  gj_stats_t gs = {0};
  ooc_status_t st = run_x(j, &ga, &gs);
  *steps = gs.steps;
  int load_failed = 0; /* its messages name the file already */
  st = job_lazy_settle(j, st, "gj", j->B ? "the solve" : "the inversion", &load_failed);
  if (load_failed) return st;
  if (st == OOC_ERR_SINGULAR) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  if (st == OOC_ERR_CORRUPT) /* a scratch tile: say which matrix, and how tile ids map */
    ooc_error_context(ctx, "%s (tile id = tile row * %lld + tile column, tiles of %lld)",
                      h5m_name(j->in_a), (long long)ooc_cdiv64(j->n, j->b), (long long)j->b);
  return st;
}
