/*
 * job_lu.c: the LU method in the pipeline (issue 22). job.c chooses the method, loads the stores
 * and writes the result; this file runs lu_run for the call (factor, solve, solve from a factor
 * file, inverse, logdet), reads and writes an LU factor file's pivots, and checks an LU factor or
 * a solve from one. The factor file's layout (docs/CLI.md "factor files"): the n x n dataset
 * holds LAPACK's packed L\U, its attribute "ipiv" names the 1-D int64 dataset of the 1-based
 * pivots beside it ("/ipiv" for "/LU", else "<dataset>_ipiv"), factor = "lu".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "io/h5vec.h"
#include "solvers/lu.h"

int job_lu_is_factor_file(job_t *j) {
  char f[32];
  return j->o.method == OOC_METHOD_LU ||
         (h5vec_attr_str(j->in_a, "factor", f, sizeof f) && !strcmp(f, "lu"));
}

/* "/LU" -> "/ipiv"; "/grp/mylu" -> "/grp/mylu_ipiv". */
static void ipiv_path(const char *dset, char *out, size_t cap) {
  const char *slash = strrchr(dset, '/');
  const char *base = slash ? slash + 1 : dset;
  int dir = slash ? (int)(slash - dset) : 0;
  if (!strcmp(base, "LU")) snprintf(out, cap, "%.*s/ipiv", dir, dset);
  else snprintf(out, cap, "%s_ipiv", dset);
}

static ooc_status_t alloc_ipiv(job_t *j) {
  if (j->ipiv) return OOC_OK;
  j->ipiv = ooc_malloc(j->ctx, (size_t)(j->n + 1) * sizeof(int64_t));
  if (!j->ipiv)
    return OOC_FAIL(j->ctx, OOC_ERR_NOMEM, "out of host memory for %lld pivots", (long long)j->n);
  return OOC_OK;
}

ooc_status_t job_lu_read_ipiv(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  char path[512], dset[600];
  if (!h5vec_attr_str(j->in_a, "ipiv", path, sizeof path)) {
    const char *name = h5m_name(j->in_a), *colon = strrchr(name, ':');
    ipiv_path(colon ? colon + 1 : "/LU", path, sizeof path);
  }
  snprintf(dset, sizeof dset, "%s", path);
  OOC_TRY(alloc_ipiv(j));
  h5mat_t *v = NULL;
  double *buf = NULL;
  ooc_status_t st = h5m_open2(ctx, h5m_path(j->in_a), dset, 0, &v);
  if (st != OOC_OK) {
    ooc_error_context(ctx, "%s: the pivots of this LU factor file", h5m_name(j->in_a));
    return st;
  }
  if (h5m_rows(v) != j->n || h5m_cols(v) != 1) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: the pivots must be a vector of %lld entries (the "
                  "factor is %lld x %lld); found %lld x %lld", h5m_name(v), (long long)j->n,
                  (long long)j->n, (long long)j->n, (long long)h5m_rows(v),
                  (long long)h5m_cols(v));
    goto done;
  }
  buf = ooc_malloc(ctx, (size_t)(j->n + 1) * sizeof(double));
  if (!buf) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(v));
    goto done;
  }
  OOC_CHECK(st = h5m_read(v, 0, 0, j->n, 1, buf, j->n));
  for (int64_t i = 0; i < j->n; i++) {
    double p = buf[i];
    if (!(p >= (double)(i + 1) && p <= (double)j->n) || p != floor(p)) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: element [%lld] is %.17g; LAPACK's 1-based pivots "
                    "satisfy row + 1 <= ipiv[row] <= n = %lld (0-based row)", h5m_name(v),
                    (long long)i, p, (long long)j->n);
      goto done;
    }
    j->ipiv[i] = (int64_t)p - 1;
  }
done:
  ooc_free(ctx, buf);
  h5m_close(v);
  return st;
}

/* The GPU: LU (of the n x n matrix with tile b; rbt's padded one too) on the CUDA executor
 * (three queues: arithmetic, copies to the device, the panel's chunks back: lu.c QC, QT, QG).
 * The stripe is what the device holds (lu_device_stripe): the n x W panel and the ring's K
 * n x b twins within the executor's budget, less getrf's own workspace (ex_getrf_ws), evened out
 * over the steps, at most --stripe (as on the host). The host only stages columns through K
 * pinned n x b slots.
 * - LU's own, planned on the GPU (plan.h lu_gpu): K is the plan's, and the slots' and the
 *   executor's host bytes are in the planner's reservation (methods.c lu_ws).
 * - Else (rbt's LU, planned as the host's; auto's LU when the plan found the device too small):
 *   the most slots, up to LU_SLOTS, whose bytes (lu_host_bytes) fit the host stripe *W's
 *   workspace (lu_workspace_bytes), with the executor's own bytes taken from the cache's room
 *   before the load and from the ring's after it.
 * Not even one tile column on the device: --device cuda fails with OOC_ERR_BUDGET (as plan.c's
 * GPU plans do), auto runs on the CPU with a notice (*out NULL, j->cuda 0). */
ooc_status_t job_lu_device(job_t *j, const char *who, int64_t n, int64_t b, ooc_exec_t **out,
                           int64_t *W, int *K) {
  ooc_report_t *r = j->rep;
  /* the first listed device (--devices): LU does not spread */
  ex_cuda_config_t xc = lu_cuda_config(j->dev[0], j->o.gpu_mem, n, j->o.trace);
  int64_t h0 = ooc_ctx_host_bytes(j->ctx), exh = 0;
  OOC_TRY(ooc_cuda()->ex_create(j->ctx, &xc, out));
  int k = LU_SLOTS;
  if (j->plan.lu_gpu && j->o.method != OOC_METHOD_RBT) { /* planned (plan.h lu_gpu) */
    k = j->plan.lu_slots;
  } else { /* the executor's bytes from the cache's room before the load, the ring's after */
    exh = ooc_ctx_host_bytes(j->ctx) - h0 + LU_EXEC_GROWTH(n);
    if (!j->cache) j->fixed += exh;
    int64_t reserved = lu_workspace_bytes(n, b, *W, j->m);
    while (k > 1 && lu_host_bytes(n, b, n, k) + (j->cache ? exh : 0) > reserved) k--;
  }
  char why[400];
  int64_t Wd = plan_lu_device_stripe(*out, &j->o, who, n, b, k, why, sizeof why);
  if (Wd == 0) {
    ex_destroy(*out);
    *out = NULL;
    if (!j->cache) j->fixed -= exh;
    /* as plan.c's GPU plans: --device cuda keeps the error, auto runs on the CPU and says why */
    if (j->o.device == OOC_DEVICE_CUDA)
      return OOC_FAIL(j->ctx, OOC_ERR_BUDGET, "%s; raise --gpu-mem or lower --tile", why);
    ooc_warn(r->warnings, sizeof r->warnings, "GPU not used: %s: running on the CPU", why);
    j->cuda = 0;
    snprintf(r->backend, sizeof r->backend, "%s", j->ops->name);
    return OOC_OK;
  }
  *W = Wd;
  *K = k;
  return lu_warm(*out); /* the libraries' kernels loaded here, not in the factor's first getrf */
}

/* Why early: pinning a tile buffer on first lend put the registration on the factor's critical
 * path (lu.h "Direct moves": slower than the slot); pinned as the load makes them, on a pool
 * thread while the loader waits for its next HDF5 read, the pinning hid in the read phase and
 * the compute of the solve at n = 65536 with 256 right-hand sides fell 8.23, 7.71 -> 7.36,
 * 7.32 s (H200, --gpu-mem 16G, docs/PERFORMANCE.md "LU end to end through the CLI"). */
ooc_status_t job_lu_prepare(job_t *j) {
  if (!j->cuda || j->o.method != OOC_METHOD_LU || j->resuming) return OOC_OK;
  j->lu_W = plan_lu_stripe(&j->plan);
  if (j->lu_W == 0) return OOC_OK; /* job_lu_run says why */
  /* lu_gx NULL after it: on the CPU after all (job_lu_device said why) */
  return job_lu_device(j, "lu", j->n, j->b, &j->lu_gx, &j->lu_W, &j->lu_K);
}

void job_lu_release(job_t *j) {
  if (!j->lu_gx) return;
  if (j->cache && tcache_pin_user(j->cache) == j->lu_gx)
    tcache_set_pin(j->cache, NULL, NULL, NULL); /* every tile unpinned before its pinner goes */
  ex_destroy(j->lu_gx);
  j->lu_gx = NULL;
}

ooc_status_t job_lu_result_store(job_t *j) {
  if (j->iv[0]) return OOC_OK;
  j->ispill[0] = (spill_slot_t){.job = j, .tag = "Z"};
  ooc_spill_ops_t sp = job_spill_ops(&j->ispill[0], j->n);
  return tstore_create(j->ctx, j->cache, j->n, j->n, j->b, NULL, &sp, &j->iv[0]);
}

/* A checkpoint names the input by the hash of all of it (checkpoint.c): the rest of A is read
 * before the first one is written. */
static ooc_status_t lazy_after_step(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv,
                                    const lu_state_t *state) {
  job_t *j = user;
  if (j->aload && j->lu_due_step == step) OOC_TRY(job_lazy_finish(j));
  return ckpt_lu_after_step(user, step, nsteps, ipiv, state);
}

ooc_status_t job_lu_run(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int job = j->lu_in ? LU_SOLVE_FACTORED
            : j->B   ? LU_SOLVE
            : j->kind == JOB_LOGDET || j->kind == JOB_FACTOR ? LU_FACTOR
                                               : LU_INVERT;
  OOC_TRY(alloc_ipiv(j));
  /* (LU)^-1 goes to a store of its own; the writer permutes columns */
  if (job == LU_INVERT) OOC_TRY(job_lu_result_store(j));
  /* auto chose LU after the load: LU fits the room planned for gj/chol (plan_lu_stripe) */
  int64_t W = plan_lu_stripe(&j->plan);
  if (W == 0) {
    char have[32], need[32];
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s: --host-mem %s is too small for LU with n = %lld "
                    "and tile %lld: its workspace needs %s for a stripe of one tile column "
                    "beside the tile cache; raise --host-mem or lower --tile%s", h5m_name(j->in_a),
                    ooc_fmt_bytes(j->budget, have, sizeof have), (long long)j->n, (long long)j->b,
                    ooc_fmt_bytes(lu_workspace_bytes(j->n, j->b, j->b, j->m), need, sizeof need),
                    j->B ? " (or solve with --method gj)" : "");
  }
  if (j->lu_gx) /* made before the load (job_lu_prepare) */
    W = j->lu_W;
  else if (j->cuda)
    OOC_TRY(job_lu_device(j, "lu", j->n, j->b, &j->lu_gx, &W, &j->lu_K));
  ooc_exec_t *gx = j->lu_gx; /* NULL: the host executor lu_run makes */
  r->stripe = W;
  /* direct moves where the load pinned the tiles (the pinner is this executor) */
  int direct = gx && tcache_pin_user(j->cache) == gx;
  /* a factor file's final row swaps are made by the writer, which moves those rows into place
   * while it writes the rows above them (lu.h LU_SWAPS_WRITER, job.c write_rows); a
   * log-determinant's are never made. OOCSOLVE_LU_SWAPS=store makes them in the store, as
   * before 2026-11-30 (to compare) */
  const char *sw = getenv("OOCSOLVE_LU_SWAPS");
  int swaps = j->kind == JOB_LOGDET                                   ? LU_SWAPS_NONE
              : j->kind == JOB_FACTOR && !(sw && !strcmp(sw, "store")) ? LU_SWAPS_WRITER
                                                                       : LU_SWAPS_STORE;
  ts_rowmap_free(ctx, &j->lu_rowmap);
  lu_args_t a = {.A = j->A, .B = job == LU_INVERT ? j->iv[0] : j->B, .stripe = W,
                 .ops = j->ops, .exec = gx, .job = job, .colnorm = j->lu_in ? NULL : j->colnorm,
                 .ipiv = j->ipiv, .nslots = j->lu_K, .direct = direct, .swaps = swaps,
                 .rowmap = &j->lu_rowmap};
  /* Journaled like gj and chol (docs/RELIABILITY.md), except a solve from a factor file, whose
   * only work is the sweeps (as Cholesky's solve --factor) */
  if (job != LU_SOLVE_FACTORED) {
    a.step_due = ckpt_lu_step_due;
    a.after_step = j->aload ? lazy_after_step : ckpt_lu_after_step;
    a.step_user = j;
    ckpt_start(j);
  }
  if (j->aload) {
    a.need = job_lazy_need;
    a.need_user = j;
  }
  if (j->resuming) { /* ckpt_restore_stores left the pivots in perm and the rest in lu_state0 */
    int64_t total = lu_steps(job, j->n, j->b, W, j->m, NULL);
    if (W != j->resume_stripe || j->resume_step > total) { /* the GPU's follows its memory */
      ckpt_disown(j);
      job_lu_release(j);
      return OOC_FAIL(ctx, OOC_ERR_ARG, "cannot resume from the journal '%s': it was written by "
                      "LU with stripe %lld, this run plans %lld for LU (rerun with the same "
                      "--method lu, --stripe, --host-mem and --gpu-mem: auto plans an inverse or "
                      "a factor for other methods)", j->jpath, (long long)j->resume_stripe,
                      (long long)W);
    }
    memcpy(j->ipiv, j->perm, (size_t)j->n * sizeof(int64_t));
    a.start_step = j->resume_step;
    a.state0 = &j->lu_state0;
    r->resumed_step = j->resume_step;
  }
  lu_stats_t s;
  ooc_status_t st = lu_run(ctx, &a, &s, &r->info);
  int load_failed = 0; /* its messages name the file already */
  st = job_lazy_settle(j, st, "lu", "the factor", &load_failed);
  if (direct) { /* every tile unpinned before its pinner goes (tstore.h) */
    double t_unpin = ooc_now();
    tcache_set_pin(j->cache, NULL, NULL, NULL);
    char mv[32], all[32];
    if (st == OOC_OK)
      ooc_warn(r->warnings, sizeof r->warnings, "lu: %s of %s moved between the tile cache and "
               "the GPU in place (tiles pinned by the load, unpinned in %.2f s)",
               ooc_fmt_bytes(s.bytes_direct, mv, sizeof mv),
               ooc_fmt_bytes(s.bytes_streamed, all, sizeof all), ooc_now() - t_unpin);
  }
  job_gpu_done(j, &j->lu_gx, "its budget", "lu", W);
  *steps = job == LU_SOLVE_FACTORED ? s.rhs_steps : s.steps;
  if (st != OOC_OK) {
    if ((st == OOC_ERR_SINGULAR || st == OOC_ERR_FORMAT) && !load_failed)
      ooc_error_context(ctx, "%s", h5m_name(j->in_a));
    return st;
  }
  if (s.swaps_left)
    ooc_warn(r->warnings, sizeof r->warnings, "lu: the final row swaps made as the factor is "
             "written (%.1f M elements moved into place on the copy threads while the rows "
             "above them were written), not in a pass of the factor's own",
             (double)s.rows_mapped * 1e-6);
  r->t_factor = s.t_factor; /* inside t_compute, beside the executor's setup and unpinning */
  r->t_solve = s.t_solve;
  if (job != LU_SOLVE_FACTORED) {
    r->pivot_growth = s.growth;
    r->logdet = s.logdet;
    r->logdet_sign = s.sign;
    j->norminf_a = s.norm_inf;
  }
  if (job == LU_INVERT) {
    lu_inverse_perm(j->n, j->ipiv, j->perm);
    j->result = j->iv[0];
  }
  return OOC_OK;
}

ooc_status_t job_lu_check(job_t *j, const ooc_source_t *A, const ooc_source_t *B,
                          const ooc_source_t *X, int full, double eps, int64_t mem) {
  ooc_report_t *r = j->rep;
  if (j->kind == JOB_FACTOR) {
    double a1 = 0;
    for (int64_t c = 0; c < j->n; c++) a1 = fmax(a1, j->colnorm[c]);
    r->norm1_a = a1;
    if (!full && lu_fused_complete(j->lufused)) {
      ooc_warn(r->warnings, sizeof r->warnings, "check: P A T formed while A was read, L (U T) "
               "while the factor was written; nothing read back");
      r->residual = lu_fused_ratio(j->lufused, j->ipiv, a1, eps);
      return OOC_OK;
    }
    int loaded = !full && check_probe_done(j->probe);
    if (loaded)
      ooc_warn(r->warnings, sizeof r->warnings, "check: P A T formed while A was read; the "
               "factor read back once, A not again");
    return lu_check_factor(j->ctx, j->ops, j->n, j->b, A, X, j->ipiv, full, a1, eps, mem,
                           j->probe, &r->residual);
  }
  double ainf = 0; /* the factor file's record of ||A||_inf */
  if (!h5m_attr_get_f64(j->in_a, "norminf_input", &ainf))
    ooc_warn(r->warnings, sizeof r->warnings, "%s records no norminf_input: the solve check "
             "bounds ||A||_inf by ||L||_inf ||U||_inf", h5m_name(j->in_a));
  return lu_check_solve_factor(j->ctx, j->ops, j->n, j->m, j->b, A, j->ipiv, ainf, B, X, eps,
                               mem, &r->residual, &r->norm1_x);
}

ooc_status_t job_lu_commit_extra(job_t *j) {
  ooc_report_t *r = j->rep;
  h5mat_t *o = j->out;
  char path[600];
  ipiv_path(j->out_dset, path, sizeof path);
  int64_t *one = ooc_malloc(j->ctx, (size_t)(j->n + 1) * sizeof(int64_t));
  if (!one) return OOC_FAIL(j->ctx, OOC_ERR_NOMEM, "out of host memory writing the pivots");
  for (int64_t i = 0; i < j->n; i++) one[i] = j->ipiv[i] + 1; /* LAPACK's 1-based ipiv */
  ooc_status_t st = h5vec_write_i64(j->ctx, o, path, one, j->n);
  ooc_free(j->ctx, one);
  OOC_TRY(st);
  double a1 = 0;
  for (int64_t c = 0; c < j->n; c++) a1 = fmax(a1, j->colnorm[c]);
  OOC_TRY(h5m_attr_str(o, "factor", "lu"));
  OOC_TRY(h5m_attr_str(o, "ipiv", path));
  OOC_TRY(h5m_attr_f64(o, "norm1_input", a1));
  OOC_TRY(h5m_attr_f64(o, "norminf_input", j->norminf_a));
  OOC_TRY(h5m_attr_f64(o, "logdet_input", r->logdet));
  OOC_TRY(h5m_attr_i64(o, "logdet_sign", r->logdet_sign));
  return h5m_attr_f64(o, "pivot_growth", r->pivot_growth);
}
