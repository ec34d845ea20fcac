/* pin_bench.c: what pinning host memory costs on a GPU host, against what it saves (issue 22:
 * DMA straight from the tile cache's buffers instead of gathering tiles into pinned slots).
 *   cc -O2 -o pin_bench tools/pin_bench.c -I$CUDA/include -L$CUDA/lib64 -lcudart -lpthread
 *   ./pin_bench [GiB] [piece MiB]
 * Prints, for `GiB` of host memory in pieces of `piece` MiB (a tile's size):
 *   - first touch of malloc'd memory (4 KiB pages, then with MADV_HUGEPAGE);
 *   - cudaHostRegister of the touched pieces, and cudaHostUnregister;
 *   - cudaHostAlloc of the same pieces, and their first touch;
 *   - H2D and D2H DMA rates from registered pieces (one piece at a time into a device buffer);
 *   - a 16-thread memcpy of the same bytes (the gather the DMA would replace). */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                 \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

typedef struct {
  char *d;
  const char *s;
  size_t n;
} cp_t;
static void *cp(void *a) {
  cp_t *c = a;
  memcpy(c->d, c->s, c->n);
  return NULL;
}
static void pcopy(char *d, const char *s, size_t n, int th) {
  pthread_t t[64];
  cp_t c[64];
  for (int i = 0; i < th; i++) {
    size_t a = n / th * i, b = i == th - 1 ? n : n / th * (i + 1);
    c[i] = (cp_t){d + a, s + a, b - a};
    pthread_create(&t[i], NULL, cp, &c[i]);
  }
  for (int i = 0; i < th; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
  double gib = argc > 1 ? atof(argv[1]) : 8;
  size_t piece = (size_t)(argc > 2 ? atof(argv[2]) : 128) << 20;
  size_t np = (size_t)(gib * (1 << 30)) / piece, tot = np * piece;
  double G = tot / 1e9;
  char **p = calloc(np, sizeof *p);
  CK(cudaFree(0));
  for (int huge = 0; huge < 2; huge++) {
    double t0 = now();
    for (size_t i = 0; i < np; i++) {
      p[i] = aligned_alloc(2 << 20, piece);
      if (huge) madvise(p[i], piece, MADV_HUGEPAGE);
      memset(p[i], 1, piece);
    }
    double t1 = now();
    for (size_t i = 0; i < np; i++) CK(cudaHostRegister(p[i], piece, cudaHostRegisterDefault));
    double t2 = now();
    for (size_t i = 0; i < np; i++) CK(cudaHostUnregister(p[i]));
    double t3 = now();
    printf("RESULT %s pages: touch %.2f GB/s, register %.2f GB/s (%.3f s for %.1f GB), "
           "unregister %.2f GB/s\n", huge ? "huge" : "4k", G / (t1 - t0), G / (t2 - t1), t2 - t1,
           G, G / (t3 - t2));
    if (huge) break;
    for (size_t i = 0; i < np; i++) free(p[i]);
  }
  /* DMA from registered pieces, and the copy it replaces */
  for (size_t i = 0; i < np; i++) CK(cudaHostRegister(p[i], piece, cudaHostRegisterDefault));
  void *dbuf;
  CK(cudaMalloc(&dbuf, piece));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int dir = 0; dir < 2; dir++) {
    CK(cudaStreamSynchronize(s));
    double t0 = now();
    for (size_t i = 0; i < np; i++)
      CK(dir ? cudaMemcpyAsync(p[i], dbuf, piece, cudaMemcpyDeviceToHost, s)
             : cudaMemcpyAsync(dbuf, p[i], piece, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
    printf("RESULT DMA %s from registered pieces: %.2f GB/s\n", dir ? "D2H" : "H2D",
           G / (now() - t0));
  }
  /* a tile (b x b, ld b) into a column slot on the device (ld n): what lending a tile does */
  {
    size_t b = 1;
    while ((b * 2) * (b * 2) * 8 <= piece) b *= 2;
    size_t n = 40000, dp = n * 8;
    void *dslot;
    CK(cudaMalloc(&dslot, dp * b));
    for (int dir = 0; dir < 2; dir++) {
      CK(cudaStreamSynchronize(s));
      double t0 = now();
      for (size_t i = 0; i < np; i++) {
        size_t off = (i % (n / b)) * b * 8;
        CK(dir ? cudaMemcpy2DAsync(p[i], b * 8, (char *)dslot + off, dp, b * 8, b,
                                   cudaMemcpyDeviceToHost, s)
               : cudaMemcpy2DAsync((char *)dslot + off, dp, p[i], b * 8, b * 8, b,
                                   cudaMemcpyHostToDevice, s));
      }
      CK(cudaStreamSynchronize(s));
      printf("RESULT DMA 2D tile %zu x %zu %s (device ld %zu): %.2f GB/s\n", b, b,
             dir ? "D2H" : "H2D", n, (double)np * b * b * 8 / 1e9 / (now() - t0));
    }
    CK(cudaFree(dslot));
  }
  char *big = malloc(tot);
  memset(big, 2, tot);
  for (int th = 1; th <= 16; th *= 4) {
    double t0 = now();
    for (size_t i = 0; i < np; i++) pcopy(big + i * piece, p[i], piece, th);
    printf("RESULT memcpy %d threads: %.2f GB/s\n", th, G / (now() - t0));
  }
  for (size_t i = 0; i < np; i++) {
    CK(cudaHostUnregister(p[i]));
    free(p[i]);
  }
  double t0 = now();
  for (size_t i = 0; i < np; i++) CK(cudaHostAlloc((void **)&p[i], piece, cudaHostAllocDefault));
  double t1 = now();
  for (size_t i = 0; i < np; i++) memset(p[i], 1, piece);
  double t2 = now();
  for (size_t i = 0; i < np; i++) CK(cudaFreeHost(p[i]));
  printf("RESULT cudaHostAlloc %.2f GB/s, then first touch %.2f GB/s, cudaFreeHost %.2f GB/s\n",
         G / (t1 - t0), G / (t2 - t1), G / (now() - t2));
  return 0;
}
