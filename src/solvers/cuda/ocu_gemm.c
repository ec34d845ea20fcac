/* ocu_gemm.c: the plan of the out-of-core product on the CUDA executor. See ocu_gemm.h. */
#include "solvers/cuda/ocu_gemm.h"
#include "kernels/cuda/ocu_rt.h"
#include "solvers/gemm_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The CUDA executor the product runs on: three queues (H2D, compute, D2H, oocgemm.c), each with
 * its cuBLAS workspace. */
#define GEMM_QUEUES 3

ex_cuda_config_t ocu_gemm_exec_config(const ocu_config_t *cfg) {
  return (ex_cuda_config_t){.device = cfg ? cfg->device : 0, .gpu_mem = cfg ? cfg->gpu_mem : 0,
                            .nqueues = GEMM_QUEUES, .trace = cfg ? cfg->trace : NULL};
}

int64_t ocu_gemm_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk) {
  return gemm_exec_bytes(MB, NB, KB, nslots, ncblk);
}

ooc_status_t ocu_gemm_plan(ooc_ctx_t *ctx, int64_t m, int64_t n, int64_t k, int64_t b,
                           const ocu_config_t *cfg, int64_t host_max, int64_t *s, int64_t *kb,
                           int *nslots, int *ncblk) {
  /* the executor's own part (its queues' cuBLAS workspaces), and the pool rounds each buffer up
   * to OCU_RT_ALIGN bytes: keep room for that */
  ex_cuda_config_t xc = ocu_gemm_exec_config(cfg);
  int64_t budget = ocu_rt_budget(cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0) -
                   ex_cuda_overhead(&xc) - OCU_RT_ALIGN * (GEMM_MAX_CBLK + 2 * GEMM_MAX_SLOTS);
  int64_t room = host_max > 0 ? ooc_min64(budget, host_max) : budget;
  gemm_rates_t r = gemm_rates_gpu();
  gemm_shape_t best;
  /* the ends this executor has (all of them: upload, part, end_cols); beta is not known here
   * and moves every plan alike */
  int found = gemm_model_plan(m, n, k, b, room, GEMM_END_FIRST | GEMM_END_LAST, 0, &r, &best,
                              NULL);
  *s = best.s;
  *kb = best.kb;
  *nslots = found ? best.nslots : 2;
  *ncblk = found ? best.ncblk : 1;
  if (!found) {
    char have[32], hb[32];
    int64_t kb1 = ooc_min64(b, ooc_cdiv64(ooc_max64(k, 1), b) * b);
    if (host_max > 0 &&
        ocu_gemm_bytes(ooc_min64(b, m), ooc_min64(b, n), ooc_min64(kb1, k), 2, 1) > host_max)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem leaves %s for the GPU product's pinned "
                      "buffers: too small for a block of one tile (%lld) with two panel buffers; "
                      "raise --host-mem or lower --tile", ooc_fmt_bytes(host_max, hb, sizeof hb),
                      (long long)b);
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem %s is too small for a product block of one "
                    "tile (%lld) with two panel buffers; raise --gpu-mem or lower --tile",
                    ooc_fmt_bytes(ocu_rt_budget(cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0), have, sizeof have),
                    (long long)b);
  }
  return OOC_OK;
}

