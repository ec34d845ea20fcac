/*
 * job_gj.c: the Gauss-Jordan method in the pipeline (job_gj_run, methods.c's gj entry): gj_run
 * on the loaded stores (inverse or solve), journaled and resumable, on the CUDA gj executor
 * (gj_exec_t) when the job runs on the GPU.
 */
#include <stdio.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/gj.h"

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
  ckpt_start(j);
  gj_stats_t gs;
  if (j->cuda) {
    ocu_config_t c = plan_gpu_config(&j->o);
    OOC_TRY(ooc_cuda()->exec_create(ctx, j->n, j->b, j->W, j->m, &c, &j->exec));
    ga.exec = j->exec;
  }
  ooc_status_t st = gj_run(ctx, &ga, &gs, &r->info);
  *steps = gs.steps;
  if (j->exec) {
    ocu_stats_t os;
    char pk[32], bu[32];
    ooc_cuda()->exec_stats(j->exec, &os);
    ooc_warn(r->warnings, sizeof r->warnings, "GPU peak %s of --gpu-mem %s, %d streams",
             ooc_fmt_bytes(os.dev_peak, pk, sizeof pk), ooc_fmt_bytes(os.dev_budget, bu, sizeof bu),
             os.streams);
    ooc_status_t st2 = ooc_cuda()->exec_destroy(j->exec);
    j->exec = NULL;
    if (st == OOC_OK) st = st2;
  }
  if (st == OOC_ERR_SINGULAR) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  if (st == OOC_ERR_CORRUPT) /* a scratch tile: say which matrix, and how tile ids map */
    ooc_error_context(ctx, "%s (tile id = tile row * %lld + tile column, tiles of %lld)",
                      h5m_name(j->in_a), (long long)ooc_cdiv64(j->n, j->b), (long long)j->b);
  return st;
}
