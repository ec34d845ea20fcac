/*
 * blas_rate.c: the host BLAS's DGEMM rate in the shape of the solve check's product (check.c
 * solve_ratio: R += A_strip X_strip, n x m by n x w strips of A; issue 22's n = 65536 solve
 * with m = 256 spent 25-30 s in its check on an H200 host, where reading the 17 GB input alone
 * takes ~4 s at the rate the inverse's check reads). Standalone (not built by CMake):
 *   cc -O2 -o /tmp/blas_rate tools/blas_rate.c $(pkg-config --cflags --libs openblas)
 *   /tmp/blas_rate
 *   /tmp/blas_rate N M W REPS    (default 65536 256 1024 4)
 * Prints OpenBLAS's core and thread count, then the best of REPS products' GFLOP/s (2 N M W
 * flops each) on all threads and on one. Seen on the H200 hosts' VMs (2026-11-28, Debian's
 * OpenBLAS 0.3.21, 16 threads): core Prescott 103 GFLOP/s (7.3 on one) on one machine, core
 * Cooperlake 358 (49.9) on the next; OPENBLAS_CORETYPE=SkylakeX 460, Haswell 278, Zen 332
 * (docs/PERFORMANCE.md "LU end to end through the CLI").
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

char *openblas_get_corename(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double best(long n, long m, long w, int reps, const double *A, const double *X, double *R) {
  double b = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m, (int)w, 1.0, A, (int)n,
                X, (int)w, 1.0, R, (int)n);
    double t = now() - t0;
    if (t < b) b = t;
  }
  return 2.0 * (double)n * (double)m * (double)w / b * 1e-9;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 65536, m = argc > 2 ? atol(argv[2]) : 256;
  long w = argc > 3 ? atol(argv[3]) : 1024;
  int reps = argc > 4 ? atoi(argv[4]) : 4;
  double *A = malloc(sizeof(double) * (size_t)(n * w));
  double *X = malloc(sizeof(double) * (size_t)(w * m));
  double *R = calloc((size_t)(n * m), sizeof(double));
  if (!A || !X || !R) return 1;
  for (long i = 0; i < n * w; i++) A[i] = (double)(i % 7) - 3.0;
  for (long i = 0; i < w * m; i++) X[i] = (double)(i % 5) - 2.0;
  int t = openblas_get_num_threads();
  printf("openblas core %s, %d threads\n", openblas_get_corename(), t);
  printf("RESULT dgemm %ld x %ld x %ld: %.1f GFLOP/s on %d threads", n, m, w,
         best(n, m, w, reps, A, X, R), t);
  openblas_set_num_threads(1);
  printf(", %.1f on one\n", best(n, m, w, reps > 2 ? 2 : reps, A, X, R));
  free(A);
  free(X);
  free(R);
  return 0;
}
