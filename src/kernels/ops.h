/*
 * ops.h: the kernel table. Solvers call dense linear algebra only through an ooc_ops_t, so every
 * algorithm runs on every backend (the BLIS split: portable framework, kernels per backend).
 *
 * Backends
 * - ref: plain C, no dependencies, always built. The oracle for tests: simple loops, obviously right.
 * - cpu: CBLAS + LAPACKE on OpenBLAS (LP64: each single call must have m, n, k, ld < 2^31, which
 *   tiles and panels always satisfy; the kernels check and abort the call with an error otherwise).
 * - cuda: src/kernels/cuda (separate issue).
 *
 * Contract (all matrices column-major, FP64, leading dimensions in elements, 64-bit sizes)
 * - gemm:  C = alpha op(A) op(B) + beta C; ta/tb are 'N' or 'T'. m, n or k may be 0.
 * - trsm:  B = alpha op(A)^-1 B (side 'L') or alpha B op(A)^-1 (side 'R'); uplo 'U'/'L',
 *          trans 'N'/'T', diag 'N'/'U'. A is triangular, m x m (side L) or n x n (side R).
 * - getrf: LU with partial pivoting of the m x n block, in place. ipiv[i] (0-based, relative to
 *          the block) is the row swapped with row i, for i < min(m, n). Returns 0, or j+1 for the
 *          first column j whose pivot is exactly zero (factorization still completed, as LAPACK).
 * - getri: replace the n x n block holding L\U factors (no further pivoting) by (LU)^-1.
 *          Returns 0 or j+1 if U(j,j) == 0.
 * - laswp: apply ipiv[k1..k2) (0-based, relative to row 0 of A) to the rows of the m x ncols
 *          block, forward order: swap row k with row ipiv[k].
 * - colabs: acc[j] += sum_i |A(i,j)| for the m x n block. Returns the number of non-finite
 *           entries and, if any, the position of the first in *bad_i, *bad_j.
 * - syrk:  C = alpha A A^T + beta C (trans 'N', A n x k) or alpha A^T A + beta C (trans 'T',
 *          A k x n); only the uplo ('L'/'U') triangle of the n x n C is read and written.
 *          beta == 0 makes C output only; alpha == 0 or k == 0 reads no A.
 * - potrf: Cholesky A = L L^T of the n x n block, lower triangle only (the strict upper is neither
 *          read nor written). Returns 0, or j+1 for the first j whose pivot
 *          a_jj - sum_k L(j,k)^2 is not positive, is NaN or is infinite (LAPACK's dpotrf test plus
 *          NaN/Inf, which OpenBLAS lets through); columns before j are then factored.
 * - potri: from L (lower, as potrf leaves it) overwrite the lower triangle with that of
 *          (L L^T)^-1 = L^-T L^-1; strict upper untouched. Returns 0, or j+1 if L(j,j) == 0
 *          (then the block is left as it was).
 * - trtri: inverse of the n x n triangular block in place (uplo 'L'/'U', diag 'N'/'U'; the other
 *          triangle untouched). Returns 0, or j+1 if diag is 'N' and A(j,j) == 0 (the block is then
 *          left in an unspecified state).
 * - geqrf: Householder QR of the m x n block in place, LAPACK's dgeqrf layout: R on and above the
 *          diagonal, the reflectors' vectors v_i (v_i(i) = 1 implied) below it, tau[i] for
 *          i < min(m, n); Q = H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T (dlarfg's choice of
 *          sign: beta = -sign(alpha) ||x||; tau = 0 when the column below the diagonal is zero).
 * - ormqr: C := op(Q) C for the m x n block C (left side only), Q from geqrf's k reflectors in
 *          the m x k block A (rows >= the diagonal read, the strictly upper part never); trans
 *          'T' applies Q^T (H_0 first), 'N' applies Q. A is not changed (the cpu kernel may set
 *          its diagonal to 1 during the call and restore it, as LAPACK's dorm2r does: no other
 *          operation may read A's diagonal meanwhile).
 * - laset: LAPACK's dlaset: the strictly lower (uplo 'L'), strictly upper ('U') or whole (other)
 *          off-diagonal part of the m x n block := alpha, its diagonal := beta ('L'/'U': the
 *          diagonal too, as dlaset does).
 * - threads: the number of threads the backend's own library runs one call on, for the whole
 *            process (OpenBLAS keeps one setting); t > 0 sets it, t <= 0 only asks. Returns the
 *            setting before the call. NULL, or 1 always, for a backend without threads (ref).
 *            With 1, the kernels may be called from several threads at once: a caller that runs
 *            its own threads (gj's CPU executor) sets 1 and restores what it found.
 */
#ifndef OOC_OPS_H
#define OOC_OPS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ooc_ops {
  const char *name;
  void (*gemm)(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha, const double *A,
               int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc);
  void (*trsm)(char side, char uplo, char trans, char diag, int64_t m, int64_t n, double alpha,
               const double *A, int64_t lda, double *B, int64_t ldb);
  int64_t (*getrf)(int64_t m, int64_t n, double *A, int64_t lda, int64_t *ipiv);
  int64_t (*getri)(int64_t n, double *A, int64_t lda);
  void (*laswp)(int64_t ncols, double *A, int64_t lda, int64_t k1, int64_t k2, const int64_t *ipiv);
  int64_t (*colabs)(int64_t m, int64_t n, const double *A, int64_t lda, double *acc, int64_t *bad_i,
                    int64_t *bad_j);
  /* Appended for the Cholesky solver (keep new members at the end: tables are built
   * positionally elsewhere). */
  void (*syrk)(char uplo, char trans, int64_t n, int64_t k, double alpha, const double *A,
               int64_t lda, double beta, double *C, int64_t ldc);
  int64_t (*potrf)(int64_t n, double *A, int64_t lda);
  int64_t (*potri)(int64_t n, double *A, int64_t lda);
  /* Appended for the CPU executor of gj (callers test for NULL). */
  int (*threads)(int t);
  /* Appended for the executor (src/exec/exec.h: ex_trtri). */
  int64_t (*trtri)(char uplo, char diag, int64_t n, double *A, int64_t lda);
  /* Appended for least squares by QR (issue 24: src/solvers/qr.c). */
  void (*geqrf)(int64_t m, int64_t n, double *A, int64_t lda, double *tau);
  void (*ormqr)(char trans, int64_t m, int64_t n, int64_t k, double *A, int64_t lda,
                const double *tau, double *C, int64_t ldc);
  void (*laset)(char uplo, int64_t m, int64_t n, double alpha, double beta, double *A, int64_t lda);
} ooc_ops_t;

const ooc_ops_t *ooc_ops_ref(void);

/* LU without row interchanges of the m x n block in place (A = L U, L unit lower), through o's
 * trsm and gemm (src/kernels/ref/getrf_nopiv.c: recursive, so the table's BLAS 3 does the work).
 * Returns 0, or j+1 for the first column j whose pivot u_jj is exactly zero; elimination cannot
 * pass a zero without pivoting, so the factors after it are then unspecified (finite or not). */
int64_t ooc_getrf_nopiv(const ooc_ops_t *o, int64_t m, int64_t n, double *A, int64_t lda);
const ooc_ops_t *ooc_ops_cpu(void);

/* The cpu table's BLAS runs kernels below what this CPU can run: OpenBLAS (DYNAMIC_ARCH) chose a
 * generic core (Prescott's SSE3, Core2, Nehalem, ...) on a CPU with AVX2, as it did on some of
 * the GPU hosts' VMs (2026-11-28: 103 GFLOP/s for the solve check's GEMM shape where
 * OPENBLAS_CORETYPE=SkylakeX gave 460; tools/blas_rate.c).
 * - ooc_ops_cpu_better_core(&chosen): the OPENBLAS_CORETYPE this CPU should run (SkylakeX with
 *   AVX-512, else Haswell), NULL when OpenBLAS's choice looks right or cannot be told; *chosen
 *   (may be NULL): OpenBLAS's core. OOCSOLVE_TEST_BLAS_CORE in the environment stands for
 *   OpenBLAS's choice (tests: the CPUs they run on are ones OpenBLAS knows).
 * - ooc_ops_cpu_untuned(msg, cap): 1 and says so in msg, naming the OPENBLAS_CORETYPE to set;
 *   0 (msg empty) otherwise. */
const char *ooc_ops_cpu_better_core(const char **chosen);
int ooc_ops_cpu_untuned(char *msg, size_t cap);

#endif
