/*
 * job_chol.c: the Cholesky method in the pipeline (job_chol_run, methods.c's chol entry). job.c
 * chooses the method, loads the stores and writes the result; this file runs chol_run for the
 * call (factor, inverse, solve, solve from a factor, logdet), on the CUDA executor when the plan
 * puts it there, and under auto hands a matrix that is not positive definite to gj or lu (the
 * stores reloaded from the input).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/chol.h"

/* The inverse out of core spreads over the job's devices (chol.h "Several devices"); in core,
 * factor and solve run on the first, so no other device is made. */
static int chol_ndev(const job_t *j, int job) {
  return job == CHOL_INVERT && j->W < j->n ? j->ndev : 1;
}

/* chol's executors into xs (exset.h; empty: chol_run makes its own host executor, the CPU
 * path). On CUDA one per device (chol_ndev) at the planner's stripe and ring slots
 * (plan_chol_gpu), the stripe narrowed to the widest that every device's budget holds (the plan
 * asked the first device; another's free memory may be less); chol runs on the CPU with a
 * notice when its pinned buffers do not fit the planned host room. On the CPU backends an
 * inverse with several devices gets a host executor per device, each budgeted for the panel
 * (chol_host_budget: the first holds it, the others share it), as the planner charged them
 * (chol_workspace_bytes_nd). */
static ooc_status_t chol_executors(job_t *j, chol_args_t *ca, ex_set_t *xs) {
  ooc_report_t *r = j->rep;
  int nd = chol_ndev(j, ca->job);
  ex_set_init(xs);
  if (!j->cuda) {
    if (nd > 1) OOC_TRY(job_executors(j, 1, chol_host_budget(j->n, j->b, j->W), xs));
  } else {
    int64_t W = 0;
    int K = 0;
    char why[256];
    OOC_TRY(plan_chol_gpu(j->ctx, &j->plan, ca->job, &W, &K, why, sizeof why));
    if (W == 0) {
      j->cuda = 0;
      snprintf(r->backend, sizeof r->backend, "%s", j->ops->name);
      ooc_warn(r->warnings, sizeof r->warnings, "%s", why);
      return OOC_OK;
    }
    ex_cuda_config_t xc = plan_exec_config(&j->o);
    OOC_TRY(job_executors_cfg(j, &xc, nd, xc.nqueues, 0, xs));
    for (int d = 0; d < xs->n && W > 0; d++)
      W = ooc_min64(W, chol_device_stripe(xs->ex[d], j->n, j->b, ca->job, K));
    if (W == 0) {
      char bu[32];
      ooc_fmt_bytes(xs->ex[0]->budget, bu, sizeof bu);
      ex_set_destroy(xs);
      return OOC_FAIL(j->ctx, OOC_ERR_BUDGET, "chol: --gpu-mem leaves %s on a device for the "
                      "Cholesky's buffers, less than a stripe of one tile column with its %d "
                      "column blocks (n = %lld, tile %lld); raise --gpu-mem or lower --tile", bu,
                      K, (long long)j->n, (long long)j->b);
    }
    ca->nb = chol_device_nb(xs->ex[0], j->n, j->b, W, ca->job, K);
    ca->nslots = K;
    ca->stripe = W;
    j->W = W; /* before ckpt_start: the journal records the stripe that runs */
    r->stripe = W;
  }
  if (xs->n > 0) {
    ca->exec = xs->ex[0];
    ca->xs = xs->ex;
    ca->nx = xs->n;
    ca->direct = job_sweep_direct(j);
  }
  return OOC_OK;
}

/* A checkpoint names the input by the hash of all of it (checkpoint.c), and the first step's
 * sweep has asked for every column: the load ends (its checks, its hash) before the first
 * step's checkpoint can be written (chol_args_t.need). */
static ooc_status_t lazy_after_step(void *user, int64_t step, int64_t nsteps, double logdet) {
  job_t *j = user;
  OOC_TRY(job_lazy_finish(j));
  return ckpt_chol_after_step(user, step, nsteps, logdet);
}

/* Cholesky; under auto, a matrix that is not positive definite falls back to gj (the stores
 * are reloaded from the input, which was never modified). */

ooc_status_t job_chol_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  chol_args_t ca = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops,
                    .job = job_chol_job(j->kind),
                    .lower_only = 1};
  /* A full inverse leaves its upper triangle to the writer (write_rows), which packs it from the
   * lower tiles for free, instead of a transposed put of half the matrix in the last step. */
  j->mirror_out = ca.job == CHOL_INVERT && !j->o.lower_only;
  chol_stats_t cs = {0};
  ex_set_t xs;
  ex_set_init(&xs);
  /* a given factor has nothing to factor: on the CPU, one device */
  if (j->kind != JOB_FACTORED) OOC_TRY(chol_executors(j, &ca, &xs));
  if (ca.job == CHOL_INVERT) { /* resumable; factor and solve are not journaled yet */
    ca.after_step = j->aload ? lazy_after_step : ckpt_chol_after_step;
    ca.step_user = j;
    if (j->aload) { /* A read as the first step asks for it (job.c lazy_room) */
      ca.need = job_lazy_need;
      ca.need_user = j;
    }
    memset(j->perm, 0, (size_t)j->n * sizeof(int64_t)); /* the journal's (unused) pivots */
    if (j->resuming) {
      ca.start_step = j->resume_step;
      ca.logdet0 = j->resume_logdet;
      r->resumed_step = j->resume_step;
    }
    ckpt_start(j);
  }
  ooc_status_t st = chol_run(ctx, &ca, &cs, &r->info, &r->logdet);
  int load_failed = 0; /* its messages name the file already */
  st = job_lazy_settle(j, st, "chol", "the first step", &load_failed);
  *steps = cs.steps;
  if (st == OOC_OK && ca.direct && cs.bytes_swept > 0)
    job_sweep_direct_note(j, "chol", cs.bytes_direct, cs.bytes_swept, cs.bytes_pinned,
                          cs.pin_refused);
  if (st == OOC_OK && isfinite(r->logdet)) r->logdet_sign = 1;
  if (st == OOC_ERR_FORMAT && j->kind == JOB_FACTORED)
    ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  /* chol_run has reported the executors' late failures */
  char what[32] = "chol"; /* on a GPU out of its core: the planned ring (plan.h chol_slots) */
  if (j->cuda && ca.stripe < j->n) snprintf(what, sizeof what, "chol, %d ring slots", ca.nslots);
  if (xs.n > 0) (void)job_executors_done(j, &xs, what, ca.stripe);
  if (st != OOC_ERR_NOT_SPD || load_failed) return st;
  if (j->o.method != OOC_METHOD_AUTO || j->kind == JOB_FACTOR) {
    ooc_error_context(ctx, "%s", h5m_name(j->in_a));
    return st;
  }
  int to_lu = j->B || j->kind == JOB_LOGDET; /* solves and determinants: LU (issue 22) */
  ooc_warn(r->warnings, sizeof r->warnings, "auto: Cholesky found the leading minor of order "
           "%lld not positive; fell back to %s", (long long)r->info,
           to_lu ? "LU with partial pivoting" : "Gauss-Jordan");
  r->info = 0;
  r->logdet = NAN;
  j->mirror_out = 0;
  ooc_clear_error(ctx);
  OOC_TRY(ckpt_drop(j)); /* Cholesky's checkpoints are of no use to gj */
  j->resuming = 0;
  r->resumed_step = 0;
  job_unload_inputs(j);
  j->lower_load = j->classify_load = 0; /* gj needs the whole of A */
  OOC_TRY(job_load_inputs(j));
  j->method = to_lu ? OOC_METHOD_LU : OOC_METHOD_GJ;
  snprintf(r->method, sizeof r->method, "%s", method_name(j->method));
  return OOC_OK;
}
