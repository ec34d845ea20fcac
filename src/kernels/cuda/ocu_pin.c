/* ocu_pin.c: pinned host memory for the executors. See ocu_pin.h. */
#include "kernels/cuda/ocu_pin.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct touch {
  char *p, *end;
} touch_t;

static void *touch_pages(void *arg) {
  touch_t *t = arg;
  for (char *q = t->p; q < t->end; q += 4096) *(volatile char *)q = 0;
  return NULL;
}

/* Allocate, fault the pages in on several threads (huge pages where the kernel gives them), then
 * page-lock them in place. NULL on any failure. */
static void *pin_big(int64_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, (size_t)2 << 20, (size_t)bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, (size_t)bytes, MADV_HUGEPAGE); /* a hint: failure is fine */
#endif
  long nt = sysconf(_SC_NPROCESSORS_ONLN);
  nt = nt < 1 ? 1 : nt > 16 ? 16 : nt;
  pthread_t th[16];
  touch_t t[16];
  int started = 0;
  for (long i = 0; i < nt; i++) {
    t[i].p = (char *)p + bytes * i / nt / 4096 * 4096;
    t[i].end = (char *)p + (i + 1 == nt ? bytes : bytes * (i + 1) / nt / 4096 * 4096);
    if (i > 0 && pthread_create(&th[i], NULL, touch_pages, &t[i]) == 0) started |= 1 << i;
  }
  touch_pages(&t[0]);
  for (long i = 1; i < nt; i++) {
    if (started & (1 << i)) pthread_join(th[i], NULL);
    else touch_pages(&t[i]);
  }
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
