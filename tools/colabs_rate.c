/*
 * colabs_rate.c: the column norms' rate (ops.h colabs: sum |a_ij| per column and the non-finite
 * count, what every load does to each strip and every check to X), the reference kernel (one
 * thread) against the cpu table's (columns in blocks on the pool). Standalone (not built by
 * CMake), against a build's static library:
 *   cc -O2 -Isrc -Iinclude -o /tmp/colabs_rate tools/colabs_rate.c build/liboocsolve.a \
 *      -lopenblas -llapacke -lhdf5_serial -lzstd -lz -lm -lpthread
 *   /tmp/colabs_rate [M N REPS]     (default 12288 8192 3: a 805 MB block)
 * Seen on this project's 2-core VM, idle (2026-11-29): ref 9.5-9.7 GB/s, cpu 18.6-19.2 GB/s;
 * with another build running beside it the cpu table fell to the reference's rate.
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "kernels/ops.h"

int main(int argc, char **argv) {
  int64_t m = argc > 1 ? atoll(argv[1]) : 12288, n = argc > 2 ? atoll(argv[2]) : 8192;
  int reps = argc > 3 ? atoi(argv[3]) : 3;
  double *A = malloc((size_t)(m * n) * sizeof *A), *acc = calloc((size_t)n, sizeof *acc);
  if (!A || !acc) return 1;
  for (int64_t k = 0; k < m * n; k++) A[k] = (double)(k % 7) - 3.0;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) {
      const ooc_ops_t *o = k ? ooc_ops_cpu() : ooc_ops_ref();
      int64_t bi, bj;
      double t = ooc_now();
      o->colabs(m, n, A, m, acc, &bi, &bj);
      t = ooc_now() - t;
      printf("%s colabs %lld x %lld: %.3f s, %.1f GB/s\n", k ? "cpu" : "ref", (long long)m,
             (long long)n, t, 8.0 * (double)m * (double)n / t * 1e-9);
    }
  free(A);
  free(acc);
  return 0;
}
