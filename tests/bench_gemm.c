/*
 * bench_gemm.c: in-core cblas_dgemm (the ceiling for the out-of-core product on this machine) on
 * the same OpenBLAS as liboocsolve. Not a test (not named test_*.c); build by hand:
 *   gcc -O2 -std=c11 tests/bench_gemm.c -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *       -lopenblas -o /tmp/bench_gemm
 *   /tmp/bench_gemm [n=4096] [reps=3]       -> best GFLOP/s of C = A B, n x n, float64
 * Compare with `oocsolve gemm --json ... A.h5 B.h5` (its "gflops" is the compute phase) run
 * right after it: docs/NUMERICS.md, "Iterative inverse: measurements".
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 4096;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  double *A = malloc(sizeof(double) * (size_t)(n * n)), *B = malloc(sizeof(double) * (size_t)(n * n)),
         *C = malloc(sizeof(double) * (size_t)(n * n));
  if (!A || !B || !C) return 1;
  for (long i = 0; i < n * n; i++) {
    A[i] = (double)((i * 7919) % 1000) / 1000.0 - 0.5;
    B[i] = (double)((i * 104729) % 1000) / 1000.0 - 0.5;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, A, (int)n,
                B, (int)n, 0.0, C, (int)n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("{\"n\": %ld, \"seconds\": %.4f, \"gflops\": %.2f}\n", n, best,
         2.0 * n * n * n / best * 1e-9);
  free(A);
  free(B);
  free(C);
  return 0;
}
