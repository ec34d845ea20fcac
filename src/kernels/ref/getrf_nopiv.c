/* getrf_nopiv.c: LU without row interchanges, A = L U, for any kernel table (ops.h's
 * ooc_getrf_nopiv). Recursive on columns (Toledo's left/right split): the left half is factored,
 * the right half's top block solved by its unit lower L (trsm) and its bottom updated (gemm), and
 * the bottom right factored the same way; so nearly all flops are the table's gemm and trsm, and
 * the cpu table's threaded BLAS makes it as fast as dgetrf without the pivot search. The leaves
 * (LEAF columns) run a right-looking rank-1 loop. */
#include "kernels/ops.h"

#define LEAF 8

static int64_t leaf(int64_t m, int64_t n, double *A, int64_t lda) {
  int64_t mn = m < n ? m : n, info = 0;
  for (int64_t j = 0; j < mn; j++) {
    double p = A[j + j * lda];
    if (p == 0.0) { /* no pivoting cannot step past a zero: the rest is left unspecified */
      if (!info) info = j + 1;
      continue;
    }
    double r = 1.0 / p;
    for (int64_t i = j + 1; i < m; i++) A[i + j * lda] *= r;
    for (int64_t c = j + 1; c < n; c++) {
      double u = A[j + c * lda];
      if (u == 0.0) continue;
      for (int64_t i = j + 1; i < m; i++) A[i + c * lda] -= A[i + j * lda] * u;
    }
  }
  return info;
}

int64_t ooc_getrf_nopiv(const ooc_ops_t *o, int64_t m, int64_t n, double *A, int64_t lda) {
  int64_t mn = m < n ? m : n;
  if (mn <= LEAF) return leaf(m, n, A, lda);
  int64_t n1 = mn / 2, n2 = n - n1;
  int64_t info = ooc_getrf_nopiv(o, m, n1, A, lda);
  double *A12 = A + n1 * lda, *A21 = A + n1, *A22 = A + n1 + n1 * lda;
  o->trsm('L', 'L', 'N', 'U', n1, n2, 1.0, A, lda, A12, lda);
  o->gemm('N', 'N', m - n1, n2, n1, -1.0, A21, lda, A12, lda, 1.0, A22, lda);
  int64_t i2 = ooc_getrf_nopiv(o, m - n1, n2, A22, lda);
  if (!info && i2) info = i2 + n1;
  return info;
}
