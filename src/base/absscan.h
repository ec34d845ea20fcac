/*
 * absscan.h: one pass over |A| of a column-major block for the largest magnitude and the row
 * sums: LU's pivot growth (max |U| / max |A|) and ||A||_inf (the largest row sum). The host's
 * implementation of the executors' ex_absscan (exec.h): the host executor runs it as an
 * operation, and the CUDA executor's kernel must give the same bits (exec_cuda_kernels.cu).
 *
 * Contract: ooc_absscan(m, n, A, lda, top, mx, rowsum)
 * - column j (0 <= j < n) is scanned on rows [0, e_j): e_j = m when top < 0, else
 *   min(m, top + j + 1) (rows on or above the diagonal of a block whose column j is the matrix's
 *   row top + j: U's part of a factored stripe);
 * - *mx := max(*mx, |a_ij| over the scanned entries); NaN never wins a comparison (as fmax), so
 *   a NaN entry leaves *mx as the other entries make it;
 * - rowsum (may be NULL): rowsum[i] += |a_ij| for j = 0, 1, ... in order, one addition per
 *   entry, so a row's sum has the bits of a sequential sum over the matrix's columns however
 *   many calls and threads it took;
 * - large blocks (m n >= 2^22) run in row chunks on the pool (parloop.h): each chunk owns its
 *   rows, so nothing is shared but the per-worker maxima, combined at the end (max is exact:
 *   the order does not matter).
 * Nothing is allocated; it may run on any thread (an executor's queue thread).
 */
#ifndef OOC_ABSSCAN_H
#define OOC_ABSSCAN_H

#include <stdint.h>

void ooc_absscan(int64_t m, int64_t n, const double *A, int64_t lda, int64_t top, double *mx,
                 double *rowsum);

#endif
