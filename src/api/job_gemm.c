/*
 * job_gemm.c: the product in the pipeline (job_gemm_run, methods.c's gemm entry): C = alpha A B +
 * beta C0 by gemm_run into the store job.c loaded C0 into, over the job's devices (issue 26);
 * and the products' executors and buffers (job_gemm_gpu_open / job_gemm_gpu_done), which newton
 * and hyper7 (job_iter.c) use too.
 */
#include <stdio.h>

#include "api/job_int.h"
#include "solvers/oocgemm.h"

/* The products' executors and buffers (job_int.h): one per device of the job when spread,
 * else the first device's alone. */
ooc_status_t job_gemm_gpu_open(job_t *j, int64_t MB, int64_t NB, int64_t KB, int spread) {
  int slots = 1, ncblk = 1;
  ex_cuda_config_t xc = {0};
  if (j->cuda) {
    xc = plan_exec_config(&j->o);
    slots = j->plan.gslots;
    ncblk = j->plan.gncblk;
  }
  OOC_TRY(job_executors_cfg(j, j->cuda ? &xc : NULL, spread ? j->ndev : 1,
                            j->cuda ? xc.nqueues : 1, 0, &j->gxs));
  for (int d = 0; d < j->gxs.n; d++)
    OOC_TRY(gemm_dev_create(j->gxs.ex[d], MB, NB, KB, slots, ncblk, &j->gdevs[d]));
  j->gx = j->gxs.ex[0];
  j->gdev = j->gdevs[0];
  return OOC_OK;
}

/* After the products: the figures into the report's notices (the GPU's) and devices, then the
 * buffers and the executors freed. Returns the first late device error. */
ooc_status_t job_gemm_gpu_done(job_t *j, int64_t block, int64_t kblock, int slots, int ncblk,
                               const gemm_stats_t *gs) {
  ooc_report_t *r = j->rep;
  char pk[32], pn[32], ep[48] = "";
  if (gs->t_epilogue > 0) snprintf(ep, sizeof ep, ", epilogues %.2f s", gs->t_epilogue);
  ooc_status_t st = OOC_OK;
  for (int d = 0; d < j->gxs.n; d++) { /* waits for its executor: its figures are final */
    ooc_status_t s2 = gemm_dev_destroy(j->gdevs[d]);
    j->gdevs[d] = NULL;
    if (st == OOC_OK) st = s2;
  }
  j->gdev = NULL;
  if (j->cuda)
    ooc_warn(r->warnings, sizeof r->warnings, "GPU products: device %s, pinned %s, block %lld, "
             "panels %lld x %d, %d C buffer(s); host gather/store %.2f s%s, waiting for the GPU "
             "%.2f s", ooc_fmt_bytes(j->gx->stats.dev_peak, pk, sizeof pk),
             ooc_fmt_bytes(j->gx->stats.staging_peak, pn, sizeof pn), (long long)block,
             (long long)kblock, slots, ncblk, gs->t_io, ep, gs->t_gemm);
  j->gx = NULL;
  ooc_status_t s3 = job_executors_done(j, &j->gxs, "products", block);
  return st != OOC_OK ? st : s3;
}

/* C = alpha A B + beta C0 into j->iv[0] (job_load_inputs made it, C0 in it), on the GPU executor
 * when the plan says so. */
ooc_status_t job_gemm_run(job_t *j, int64_t *steps) {
  int64_t m = j->n, n = j->m, k = j->k, s = j->W, kb = j->plan.gkb;
  gemm_args_t g = {.A = j->A, .B = j->B, .C = j->iv[0], .alpha = j->alpha, .beta = j->beta,
                   .ops = j->ops, .block = s, .kblock = kb};
  gemm_stats_t gs = {0};
  /* on a GPU, or over several devices (issue 26: the blocks go round robin over them); one CPU
   * device: gemm_run's own host executor (kb is the block then) */
  if (j->cuda || j->ndev > 1) {
    int64_t KB = ooc_min64(j->cuda ? kb : s, ooc_max64(k, 1));
    OOC_TRY(job_gemm_gpu_open(j, ooc_min64(s, m), ooc_min64(s, n), KB, 1));
    g.dev = j->gdev;
    g.devs = j->gdevs;
    g.ndev = j->gxs.n;
  }
  OOC_TRY(gemm_run(j->ctx, &g, &gs));
  if (j->gx) OOC_TRY(job_gemm_gpu_done(j, s, kb, j->plan.gslots, j->plan.gncblk, &gs));
  *steps = gs.blocks;
  j->iter_flops = gs.flops;
  j->result = j->iv[0];
  return OOC_OK;
}
