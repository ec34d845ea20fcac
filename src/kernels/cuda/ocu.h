/*
 * ocu.h: the CUDA backend's device-level pieces (built only when CMake finds a CUDA toolkit:
 * OOC_HAVE_CUDA). The executor every method runs on is src/exec/cuda (exec_cuda.h); the runtime
 * it is built on (device pool, pinned allocator, streams, trace) is ocu_rt.h; the methods' device
 * plans ask an executor (exec.h) what only cuSOLVER can answer.
 *
 * - ocu_probe: is there a usable GPU (the driver answers, one device, memory can be queried)?
 */
#ifndef OOC_OCU_H
#define OOC_OCU_H

#include "base/base.h"

/* 1 and a description ("NVIDIA H100 80GB HBM3, 79.2 GiB free") if a GPU is usable; else 0 and
 * the reason in desc. */
int ocu_probe(char *desc, size_t cap);

#endif
