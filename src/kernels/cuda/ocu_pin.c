/* ocu_pin.c: pinned host memory for the executors. See ocu_pin.h. */
#include "kernels/cuda/ocu_pin.h"

#include "base/parloop.h"

#include <stdlib.h>
#include <sys/mman.h>

enum { TOUCH_CHUNK = 64 << 20 }; /* bytes a thread faults in per job */

typedef struct touch {
  char *p;
  int64_t bytes;
} touch_t;

static void touch_job(void *arg, int64_t k, int worker) {
  const touch_t *t = arg;
  (void)worker;
  int64_t end = (k + 1) * (int64_t)TOUCH_CHUNK < t->bytes ? (k + 1) * (int64_t)TOUCH_CHUNK : t->bytes;
  for (int64_t q = k * (int64_t)TOUCH_CHUNK; q < end; q += 4096) *(volatile char *)(t->p + q) = 0;
}

/* Allocate, fault the pages in on several threads (huge pages where the kernel gives them; one
 * thread faulting tens of GB in is what made cudaHostAlloc slow), then page-lock them in place.
 * NULL on any failure. */
static void *pin_big(int64_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, (size_t)2 << 20, (size_t)bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, (size_t)bytes, MADV_HUGEPAGE); /* a hint: failure is fine */
#endif
  touch_t t = {p, bytes};
  ooc_parallel(ooc_par_cpus(16), (bytes + TOUCH_CHUNK - 1) / TOUCH_CHUNK, touch_job, &t);
  if (cudaHostRegister(p, (size_t)bytes, cudaHostRegisterDefault) != cudaSuccess) {
    cudaGetLastError();
    free(p);
    return NULL;
  }
  return p;
}

cudaError_t ocu_pin_alloc(void **p, int64_t bytes, int *how) {
  *p = NULL;
  *how = 0;
  if (bytes >= OCU_PIN_BIG && (*p = pin_big(bytes)) != NULL) {
    *how = OCU_PIN_REGISTERED;
    return cudaSuccess;
  }
  cudaError_t e = cudaHostAlloc(p, (size_t)bytes, cudaHostAllocDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *p = NULL;
    return e;
  }
  *how = OCU_PIN_HOSTALLOC;
  return cudaSuccess;
}

void ocu_pin_free(void *p, int how) {
  if (!p) return;
  if (how == OCU_PIN_REGISTERED) {
    cudaHostUnregister(p);
    free(p);
  } else {
    cudaFreeHost(p);
  }
}
