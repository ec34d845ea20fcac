/*
 * stream_copy.c: the measurement behind the tile cache's streaming stores (src/tiling/tstore.c,
 * STREAM_MIN_BYTES): 8 KiB columns of 1024 x 1024 tiles copied into one 16384 x 1024 column-major
 * slot (a ring slot's shape), with memcpy and with SSE2 streaming stores, best of 5, on T threads.
 * Standalone (not built by CMake):
 *   cc -O2 -o /tmp/stream_copy tools/stream_copy.c -lpthread && /tmp/stream_copy 1 && /tmp/stream_copy 2
 * The project's 2-core machine, 2026-11-27, idle, three runs: memcpy 8.1-9.6 GB/s, streaming
 * 13.7-16.5 on one thread; 12.8-15.0 and 21.0-22.7 on two (1.5-1.7x). Under load (another
 * build on the same cores) the first figures were 6.5 and 17.5.
 */
#include <emmintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 16384, B = 1024, NT = N / B };
static double *tiles[NT], *slot;
static int threads, mode;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void ntcopy(double *d, const double *s, size_t n) {
  size_t i = 0;
  if (((uintptr_t)d & 15) && n) d[i++] = s[0];
  for (; i + 8 <= n; i += 8) {
    _mm_stream_pd(d + i, _mm_loadu_pd(s + i));
    _mm_stream_pd(d + i + 2, _mm_loadu_pd(s + i + 2));
    _mm_stream_pd(d + i + 4, _mm_loadu_pd(s + i + 4));
    _mm_stream_pd(d + i + 6, _mm_loadu_pd(s + i + 6));
  }
  for (; i < n; i++) d[i] = s[i];
}

static void *work(void *arg) {
  int64_t t = (int64_t)(intptr_t)arg, per = NT / threads;
  for (int64_t k = t * per; k < (t + 1) * per; k++)
    for (int64_t c = 0; c < B; c++) {
      double *d = slot + k * B + c * N;
      const double *s = tiles[k] + c * B;
      if (mode) ntcopy(d, s, B);
      else memcpy(d, s, B * sizeof(double));
    }
  if (mode) _mm_sfence();
  return NULL;
}

int main(int argc, char **argv) {
  threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > NT) return 2;
  for (int k = 0; k < NT; k++) {
    tiles[k] = aligned_alloc(64, (size_t)B * B * sizeof(double));
    memset(tiles[k], 1, (size_t)B * B * sizeof(double));
  }
  slot = aligned_alloc(64, (size_t)N * B * sizeof(double));
  memset(slot, 0, (size_t)N * B * sizeof(double));
  for (mode = 0; mode < 2; mode++) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
      pthread_t th[NT];
      double t0 = now();
      for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, work, (void *)(intptr_t)t);
      for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("%s, %d threads: %.1f GB/s\n", mode ? "streaming stores" : "memcpy", threads,
           (double)N * B * sizeof(double) / best * 1e-9);
  }
  return 0;
}
