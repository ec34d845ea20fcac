/* ocu_chol.c: the plan of the Cholesky on the CUDA executor (see ocu_chol.h; the schedule is
 * solvers/chol.c's). */
#include "solvers/cuda/ocu_chol.h"
#include "kernels/cuda/ocu_rt.h"

#define QUEUES 3 /* chol.c's: copies in, compute, copies out */
#define ALIGN(x) OCU_RT_ROUND(x)

ex_cuda_config_t ocu_chol_exec_config(const ocu_config_t *cfg) {
  return (ex_cuda_config_t){.device = cfg ? cfg->device : 0, .gpu_mem = cfg ? cfg->gpu_mem : 0,
                            .nqueues = QUEUES, .trace = cfg ? cfg->trace : NULL,
                            .timing = cfg ? cfg->timing : 0};
}

/* ---- sizes and planning --------------------------------------------------------------------- */

static int64_t eff_nb(int64_t nb, int64_t W) { return ooc_max64(1, ooc_min64(nb > 0 ? nb : CHOL_NB, W)); }
static int needs_sweep(int job) { return job == CHOL_INVERT; }

/* cuSOLVER workspace (device bytes, host bytes, potri's lwork in doubles) for a stripe W: potrf
 * of W x W with ld n, and the sweep's potrf + potri of nb x nb with ld W. */
static void sol_ws(cusolverDnHandle_t h, cusolverDnParams_t par, int64_t n, int64_t W, int64_t nb,
                   int job, size_t *dev, size_t *host, int64_t *lwork) {
  size_t d1 = 0, h1 = 0, d2 = 0, h2 = 0;
  int lw = 0;
  if (cusolverDnXpotrf_bufferSize(h, par, CUBLAS_FILL_MODE_LOWER, W, CUDA_R_64F, NULL, n,
                                  CUDA_R_64F, &d1, &h1) != CUSOLVER_STATUS_SUCCESS)
    d1 = (size_t)(8 * W * 256);
  if (needs_sweep(job)) {
    if (cusolverDnXpotrf_bufferSize(h, par, CUBLAS_FILL_MODE_LOWER, nb, CUDA_R_64F, NULL, W,
                                    CUDA_R_64F, &d2, &h2) != CUSOLVER_STATUS_SUCCESS)
      d2 = (size_t)(8 * nb * 256);
    if (cusolverDnDpotri_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)nb, NULL, (int)W, &lw) !=
        CUSOLVER_STATUS_SUCCESS)
      lw = (int)(nb * 256);
  }
  size_t d3 = (size_t)lw * 8;
  *dev = d1 > d2 ? d1 : d2;
  if (d3 > *dev) *dev = d3;
  *host = h1 > h2 ? h1 : h2;
  *lwork = lw;
}

/* chol.c's device buffers for stripe W (chol.h), the executor's own part and cuSOLVER's
 * workspace. */
static int64_t dev_bytes(int64_t n, int64_t b, int64_t W, int job, int64_t nb, size_t ws,
                         int64_t budget) {
  int sweeps = W < n;
  ex_cuda_config_t xc = {.gpu_mem = budget, .nqueues = QUEUES};
  int64_t t = ALIGN(8 * n * W) + ALIGN(8 * W) + ALIGN((int64_t)ws) + ex_cuda_overhead(&xc);
  if (needs_sweep(job)) {
    if (nb < W) t += ALIGN(8 * W * nb);
    if (sweeps) t += ALIGN(8 * W * W);
  }
  if (sweeps || job == CHOL_SOLVE) t += CHOL_SLOTS * ALIGN(8 * n * ooc_min64(b, n));
  return t;
}

/* The sweep out of core (invert, W < n) moves V through the slots: no host panel. */
static int host_panel(int64_t n, int64_t W, int job) { return W >= n || !needs_sweep(job); }

int64_t ocu_chol_host_bytes(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg) {
  (void)cfg;
  W = ooc_min64(W, n);
  int64_t slots = W < n || job == CHOL_SOLVE ? CHOL_SLOTS * 8 * n * ooc_min64(b, n) : 0;
  return (host_panel(n, W, job) ? 8 * n * W : 0) + slots + 8 * W + 8 * (2 * W + 8) + 4096;
}

/* The block for stripe W: the requested (or default) one; in core, halved down to 512 while
 * that is what keeps W = n within the budget. *bytes: the device bytes with it. */
static int64_t pick_nb(cusolverDnHandle_t h, cusolverDnParams_t par, int64_t n, int64_t b,
                       int64_t W, int job, int64_t nb_req, int64_t budget, int64_t *bytes) {
  int64_t nb = eff_nb(nb_req, W);
  for (;;) {
    size_t d = 0, hh = 0;
    int64_t lw = 0;
    sol_ws(h, par, n, W, nb, job, &d, &hh, &lw);
    *bytes = dev_bytes(n, b, W, job, nb, d, budget);
    if (*bytes <= budget || W < n || !needs_sweep(job) || nb <= 512 || nb_req > 0) return nb;
    nb /= 2;
  }
}

static int64_t plan_bytes(const ocu_rt_shape_t *a, int64_t W, cusolverDnHandle_t h,
                          cusolverDnParams_t par) {
  int64_t bytes = 0;
  pick_nb(h, par, a->n, a->b, W, a->job, a->nb, a->budget, &bytes);
  return bytes;
}

ooc_status_t ocu_chol_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int job, int64_t nb,
                           const ocu_config_t *cfg, int64_t *W, int64_t *budget) {
  ocu_rt_shape_t a = {.n = n, .b = b, .nb = nb, .job = job};
  return ocu_rt_widest(ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, &a, plan_bytes,
                       "the Cholesky of ", CHOL_SLOTS, W, budget);
}

int64_t ocu_chol_nb(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg) {
  int64_t budget = ocu_rt_budget(cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0), bytes = 0;
  cusolverDnHandle_t h = NULL;
  cusolverDnParams_t par = NULL;
  int64_t nb = eff_nb(0, ooc_min64(W, n));
  if (cusolverDnCreate(&h) == CUSOLVER_STATUS_SUCCESS &&
      cusolverDnCreateParams(&par) == CUSOLVER_STATUS_SUCCESS)
    nb = pick_nb(h, par, n, b, ooc_min64(W, n), job, 0, budget, &bytes);
  if (par) cusolverDnDestroyParams(par);
  if (h) cusolverDnDestroy(h);
  return nb;
}

