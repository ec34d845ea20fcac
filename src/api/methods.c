/* methods.c: the method table (methods.h). */
#include "api/methods.h"

#include <stdio.h>
#include <string.h>

#include "api/job_int.h"
#include "solvers/gemm_model.h"
#include "solvers/qr.h"
#include "solvers/rbt.h"

/* ---- flops: the usual counts ------------------------------------------------------------- */

static double gj_flops(job_kind_t kind, double n, double m) {
  return kind == JOB_SOLVE ? n * n * n + 2 * n * n * m : 2 * n * n * n;
}

/* Cholesky (f = 1) and LU (f = 2): potrf f n^3/3 (getrf); + potrs (getrs) 2 n^2 m; the inverse
 * as potrf + potri (getrf + getri) f n^3 */
static double factor_flops(double f, job_kind_t kind, double n, double m) {
  switch (kind) {
  case JOB_FACTORED: return 2 * n * n * m;
  case JOB_SOLVE: return f * n * n * n / 3 + 2 * n * n * m;
  case JOB_INVERT: return f * n * n * n;
  default: return f * n * n * n / 3;
  }
}
static double chol_flops(job_kind_t k, double n, double m) { return factor_flops(1, k, n, m); }
static double lu_flops(job_kind_t k, double n, double m) { return factor_flops(2, k, n, m); }

/* ---- workspaces, as the planner sizes them ----------------------------------------------- */

/* The striped methods run the stripe ts_stripe makes of W (what is planned is what runs). */
static int64_t stripe(const plan_t *p, int64_t W) { return ts_stripe(p->q.n, p->b, W); }

static int64_t gj_ws(const plan_t *p, int64_t W) {
  /* per device its ring and executor (gj.h "Several devices"); on the GPU (plan_gpu) the
   * panel is the devices': the host keeps the pinned rings */
  if (p->gj_gpu) return gj_x_host_bytes_nd(p->q.n, p->b, stripe(p, W), p->q.m, p->q.ndev);
  return gj_x_workspace_bytes_nd(p->q.n, p->b, stripe(p, W), p->q.m, p->q.ndev);
}

static int64_t chol_ws(const plan_t *p, int64_t W) {
  int64_t n = p->q.n, b = p->b, m = p->q.m;
  W = stripe(p, W);
  /* the inverse spreads over the job's devices (chol.h "Several devices"): per device its ring
   * and executor; the other jobs run on the first device */
  int nd = p->q.chol_job == CHOL_INVERT && p->q.ndev > 1 ? p->q.ndev : 1;
  int64_t host = chol_workspace_bytes_nd(n, b, W, m, nd);
  /* on the GPU the executors' pinned panel and rings stand for the host panel; when auto may
   * still pick gj (gj_gpu: the plan is gj's) the room covers chol either way, so that chol runs
   * on the GPU in it (plan_chol_gpu) */
  if (p->chol_gpu || p->gj_gpu) {
    int64_t gpu = chol_staging_bytes_nd(n, b, W, p->q.chol_job, nd, p->chol_slots) +
                  chol_workspace_bytes(n, b, W, m) - 8 * n * W;
    return p->chol_gpu ? gpu : ooc_max64(host, gpu);
  }
  return host;
}

static int64_t lu_ws(const plan_t *p, int64_t W) {
  /* on the GPU (plan_gpu: lu_gpu) the panel is the device's: the host keeps the executor's
   * pinned slots (small arrays sized for any stripe) and its own bytes */
  if (p->lu_gpu) return lu_host_bytes(p->q.n, p->b, p->q.n, p->lu_slots) + p->lu_exh;
  return lu_workspace_bytes(p->q.n, p->b, stripe(p, W), p->q.m);
}

/* + job_rbt.c's X (n x m); its sources read through the stores' own staging tiles */
static int64_t rbt_ws(const plan_t *p, int64_t W) {
  int64_t n = p->q.n, b = p->b, m = p->q.m;
  return rbt_workspace_bytes(n, m, b, p->q.o->rbt_depth, stripe(p, W)) + 8 * n * m;
}

/* newton/hyper7 at GEMM block s: the work stores' bookkeeping, and the larger of the loader's /
 * writer's n x b strip and the iteration's own buffers with the products' (the GPU executor's
 * pinned buffers once they are planned, else the host workspace). */
static int64_t iter_ws(const plan_t *p, int64_t s) {
  int64_t n = p->q.n, b = p->b, gemm, nd = p->q.ndev > 1 ? p->q.ndev : 1;
  if (p->cuda && p->gncblk > 0) {
    int64_t MB = ooc_min64(ooc_cdiv64(s, b) * b, n);
    gemm = gemm_exec_bytes(MB, MB, ooc_min64(p->gkb, n), p->gslots, p->gncblk);
  } else {
    gemm = gemm_workspace_bytes(n, n, n, ooc_min64(b, n), s);
  }
  gemm *= nd; /* the products spread over the job's devices: each holds its buffers (issue 26) */
  return iter_stores(p->q.o->method) * tstore_overhead_bytes(n, n, b) +
         ooc_max64(8 * n * b, gemm + iter_own_bytes(n, b));
}

/* the product at block s: the larger of the loader's / writer's strip of tiles and the block's
 * buffers (the GPU executor's pinned ones when it runs there), those once per device when the
 * product spreads (issue 26); C is n x m, A n x k (plan_gemm) */
static int64_t gemm_ws(const plan_t *p, int64_t s) {
  int64_t m = p->q.n, n = p->q.m, k = p->q.k, b = p->b, nd = p->q.ndev > 1 ? p->q.ndev : 1;
  int64_t strip = 8 * b * ooc_max64(1, ooc_max64(m, ooc_max64(n, k)));
  if (p->cuda)
    return ooc_max64(strip, nd * gemm_exec_bytes(ooc_min64(s, m), ooc_min64(s, n),
                                                 ooc_min64(p->gkb, k), p->gslots, p->gncblk));
  return ooc_max64(strip, nd * gemm_workspace_bytes(m, n, k, b, s));
}

/* least squares at panel P (plan_qr; p->b is the row block): on the host executor qr_fold's
 * buffers; on a GPU its pinned slots and the residual rows (P <= 16 blocks), as plan_qr counts
 * them */
static int64_t qr_ws(const plan_t *p, int64_t P) {
  int64_t n = p->q.n, nrhs = p->q.m;
  if (p->cuda) return 8 * p->b * ((n + nrhs) * QR_SLOTS + 16 * nrhs);
  return qr_workspace_bytes(n, nrhs, p->b, P);
}

/* ---- the table --------------------------------------------------------------------------- */

#define FACTOR_JOBS (JOB_BIT(JOB_FACTOR) | JOB_BIT(JOB_FACTORED) | JOB_BIT(JOB_LOGDET))
#define SQUARE_JOBS (JOB_BIT(JOB_INVERT) | JOB_BIT(JOB_SOLVE) | FACTOR_JOBS)

const char *const method_names[] = {"auto", "gj", "chol", "newton", "hyper7", "lu", "rbt", NULL};

static const method_t table[METHOD_COUNT] = {
    [OOC_METHOD_AUTO] = {.jobs = SQUARE_JOBS, .classify = 1, .lower = 1},
    [OOC_METHOD_GJ] = {.jobs = JOB_BIT(JOB_INVERT) | JOB_BIT(JOB_SOLVE), .flops = gj_flops,
                       .ws = gj_ws, .run = job_gj_run},
    [OOC_METHOD_CHOL] = {.jobs = SQUARE_JOBS, .classify = 1, .lower = 1, .flops = chol_flops,
                         .ws = chol_ws, .run = job_chol_run},
    [OOC_METHOD_NEWTON] = {.jobs = JOB_BIT(JOB_INVERT), .classify = 1,
                           .refusal = "computes inverses only; solve with gj or chol",
                           .ws = iter_ws, .run = job_iter_run},
    [OOC_METHOD_HYPER7] = {.jobs = JOB_BIT(JOB_INVERT), .classify = 1,
                           .refusal = "computes inverses only; solve with gj or chol",
                           .ws = iter_ws, .run = job_iter_run},
    [OOC_METHOD_LU] = {.jobs = SQUARE_JOBS, .keep_first = 1, .flops = lu_flops, .ws = lu_ws,
                       .run = job_lu_run},
    /* rbt: LU without pivoting on a transformed store of its own, then refinement sweeps */
    [OOC_METHOD_RBT] = {.jobs = JOB_BIT(JOB_SOLVE), .unjournaled = 1,
                        .refusal = "solves A X = B (oocsolve solve A B); for an inverse use "
                                   "--method lu",
                        .ws = rbt_ws, .run = job_rbt_run},
    [METHOD_GEMM] = {.jobs = JOB_BIT(JOB_PRODUCT), .ws = gemm_ws, .run = job_gemm_run},
    /* least squares: streamed blocks of rows, not tile stores (job_qr.c) */
    [METHOD_QR] = {.jobs = JOB_BIT(JOB_LSTSQ) | JOB_BIT(JOB_LSTSQ_UPDATE), .unjournaled = 1,
                   .ws = qr_ws, .open = job_qr_open, .plan = job_qr_plan, .run = job_qr_run},
};

const method_t *method_get(int id) {
  return id >= 0 && id < METHOD_COUNT && table[id].jobs ? &table[id] : NULL;
}

const char *method_name(int id) {
  return id == METHOD_GEMM ? "gemm" : id == METHOD_QR ? "qr"
         : id >= 0 && id < METHOD_GEMM ? method_names[id] : "?";
}

ooc_status_t method_check(ooc_ctx_t *ctx, int id, job_kind_t kind, const char *input) {
  const method_t *m = method_get(id);
  if (!m) return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown method %d", id);
  if (m->jobs & JOB_BIT(kind)) return OOC_OK;
  if (!(FACTOR_JOBS & JOB_BIT(kind)))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: --method %s %s", input, method_name(id),
                    m->refusal ? m->refusal : "does not do this job");
  char list[128] = ""; /* the methods that do it: "auto, chol or lu" */
  int count = 0, done = 0;
  for (int k = 0; k < METHOD_COUNT; k++) count += (table[k].jobs & JOB_BIT(kind)) != 0;
  for (int k = 0; k < METHOD_COUNT; k++)
    if (table[k].jobs & JOB_BIT(kind))
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
               !done++ ? "" : done == count ? " or " : ", ", method_name(k));
  return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: a factor is computed or used here (%s); --method must "
                  "be %s", input, kind == JOB_LOGDET ? "logdet" : kind == JOB_FACTOR ? "factor"
                  : "solve --factor", list);
}
