/*
 * ocu.h: the CUDA backend's device-level pieces (built only when CMake finds a CUDA toolkit:
 * OOC_HAVE_CUDA). The executor every method runs on is src/exec/cuda (exec_cuda.h); the runtime
 * it is built on (device pool, pinned allocator, streams, trace) is ocu_rt.h; the plans that need
 * cuSOLVER to answer are ocu_chol.h and ocu_gemm.h.
 *
 * - ocu_probe: is there a usable GPU (the driver answers, one device, memory can be queried)?
 * - ocu_config_t: what the options say of the GPU, for those plans (api/plan.h's
 *   plan_gpu_config makes it).
 */
#ifndef OOC_OCU_H
#define OOC_OCU_H

#include "base/base.h"

typedef struct ocu_config {
  int64_t gpu_mem; /* device byte budget; 0 = default (free memory minus a margin) */
  int streams;     /* >= 3: one H2D, one D2H, streams-2 compute; 0 = 3 */
  const char *trace; /* NULL or a JSON path */
  int timing;      /* time every copy and kernel with events (implied by trace) */
  int device;      /* CUDA device ordinal of the executor (ocu_rt.h: one runtime per device) */
} ocu_config_t;

/* 1 and a description ("NVIDIA H100 80GB HBM3, 79.2 GiB free") if a GPU is usable; else 0 and
 * the reason in desc. */
int ocu_probe(char *desc, size_t cap);

#endif
