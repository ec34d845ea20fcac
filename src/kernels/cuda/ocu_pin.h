/*
 * ocu_pin.h: pinned (page-locked) host memory under the CUDA runtime (ocu_rt_halloc, ocu_rt.h).
 *
 * Why not plain cudaHostAlloc: it faults in and zeroes every page on one thread, about 1.2 GB/s
 * on the H100 host (9 s for the gj panel at n = 49152, 3.9 s of chol's setup at n = 32768). A
 * buffer of OCU_PIN_BIG bytes or more is instead allocated 2 MiB-aligned, asked for huge pages,
 * faulted in by up to 16 threads, then page-locked in place with cudaHostRegister; smaller ones,
 * and any big one whose registration fails, come from cudaHostAlloc.
 *
 * Contract
 * - ocu_pin_alloc(&p, bytes, &how): cudaSuccess and p, how (what ocu_pin_free needs), or the
 *   error of the cudaHostAlloc fallback with p = NULL (the CUDA error state is cleared).
 * - ocu_pin_free(p, how): releases p (NULL is fine). No accounting: ocu_rt_halloc charges the
 *   bytes to the context's host memory.
 */
#ifndef OOC_OCU_PIN_H
#define OOC_OCU_PIN_H

#include <cuda_runtime.h>
#include <stdint.h>

#define OCU_PIN_BIG ((int64_t)256 << 20)

enum { OCU_PIN_HOSTALLOC = 1, OCU_PIN_REGISTERED = 2 };

cudaError_t ocu_pin_alloc(void **p, int64_t bytes, int *how);
void ocu_pin_free(void *p, int how);

#endif
