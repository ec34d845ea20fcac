/*
 * job_gemm.c: the product in the pipeline (job_gemm_run, methods.c's gemm entry): C = alpha A B +
 * beta C0 by gemm_run into the store job.c loaded C0 into; and the products' GPU executor and
 * buffers (job_gemm_gpu_open / job_gemm_gpu_done), which newton and hyper7 (job_iter.c) use too.
 */
#include <stdio.h>

#include "api/job_int.h"
#include "exec/plugin.h"
#include "solvers/oocgemm.h"

/* The products' executor and buffers on the GPU (MB x NB blocks, panels KB). */
ooc_status_t job_gemm_gpu_open(job_t *j, int64_t MB, int64_t NB, int64_t KB) {
  ocu_config_t c = plan_gpu_config(&j->o);
  ex_cuda_config_t xc = ooc_cuda()->gemm_exec_config(&c);
  xc.device = j->dev[0]; /* the first listed device (--devices): the product does not spread yet */
  OOC_TRY(ooc_cuda()->ex_create(j->ctx, &xc, &j->gx));
  return gemm_dev_create(j->gx, MB, NB, KB, j->plan.gslots, j->plan.gncblk, &j->gdev);
}

/* After the products on the GPU executor: its figures into the report's notices, then the
 * buffers and the executor freed. Returns the first late device error. */
ooc_status_t job_gemm_gpu_done(job_t *j, int64_t block, int64_t kblock, int slots, int ncblk,
                               const gemm_stats_t *gs) {
  ooc_report_t *r = j->rep;
  char pk[32], pn[32], ep[48] = "";
  if (gs->t_epilogue > 0) snprintf(ep, sizeof ep, ", epilogues %.2f s", gs->t_epilogue);
  ooc_status_t st = gemm_dev_destroy(j->gdev);
  j->gdev = NULL;
  ooc_warn(r->warnings, sizeof r->warnings, "GPU products: device %s, pinned %s, block %lld, "
           "panels %lld x %d, %d C buffer(s); host gather/store %.2f s%s, waiting for the GPU "
           "%.2f s", ooc_fmt_bytes(j->gx->stats.dev_peak, pk, sizeof pk),
           ooc_fmt_bytes(j->gx->stats.staging_peak, pn, sizeof pn), (long long)block,
           (long long)kblock, slots, ncblk, gs->t_io, ep, gs->t_gemm);
  ex_destroy(j->gx);
  j->gx = NULL;
  return st;
}

/* C = alpha A B + beta C0 into j->iv[0] (job_load_inputs made it, C0 in it), on the GPU executor
 * when the plan says so. */
ooc_status_t job_gemm_run(job_t *j, int64_t *steps) {
  int64_t m = j->n, n = j->m, k = j->k, s = j->W, kb = j->plan.gkb;
  gemm_args_t g = {.A = j->A, .B = j->B, .C = j->iv[0], .alpha = j->alpha, .beta = j->beta,
                   .ops = j->ops, .block = s, .kblock = kb};
  gemm_stats_t gs = {0};
  if (j->cuda) {
    OOC_TRY(job_gemm_gpu_open(j, ooc_min64(s, m), ooc_min64(s, n), ooc_min64(kb, ooc_max64(k, 1))));
    g.dev = j->gdev;
  }
  OOC_TRY(gemm_run(j->ctx, &g, &gs));
  if (j->gx) OOC_TRY(job_gemm_gpu_done(j, s, kb, j->plan.gslots, j->plan.gncblk, &gs));
  *steps = gs.blocks;
  j->iter_flops = gs.flops;
  j->result = j->iv[0];
  return OOC_OK;
}
