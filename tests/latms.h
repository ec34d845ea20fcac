/*
 * latms.h: LAPACK's own test matrices, as its TESTING/LIN drivers build them (DLATMS from
 * libtmglib with the parameters DLATB4 gives), shared by test_lapack_types (CI, small n) and
 * gpu_types (the GPU host, large n).
 *   DGE (dchkge, types 1-11): 1 diagonal, 2 upper triangular, 3 lower triangular, 4 random
 *        (cond 2), 5 / 6 / 7 first / last / columns n/2+1.. zero (singular), 8 cond
 *        sqrt(0.1/eps), 9 cond 0.1/eps, 10 scaled near underflow, 11 scaled near overflow;
 *   DPO (dchkpo, types 1-9): 1 diagonal, 2 random (cond 2), 3 / 4 / 5 first / last / middle row
 *        and column zero (not positive definite), 6 cond sqrt(0.1/eps), 7 cond 0.1/eps,
 *        8 / 9 scaled near underflow / overflow.
 * (eps = DLAMCH('P') = 2^-52, "near underflow" = 0.25 safmin / eps, as DLATB4 sets them.)
 * Only built where libtmglib is (OOC_HAVE_TMGLIB).
 */
#ifndef OOC_TEST_LATMS_H
#define OOC_TEST_LATMS_H

/* Type imat of size n (po = 0: DGE, 1: DPO), column-major n x n, caller frees with free().
 * *izero = the zeroed column (1-based, LAPACK's info), 0 if none. NULL with *info = 0 when the
 * driver skips the type at this size (zero-column types on tiny n); NULL with *info != 0 when
 * DLATMS failed (its info) or memory ran out (-1000). */
double *latms_matrix(int po, int imat, int n, int *izero, int *info);

/* The type whose DLATMS call type imat shares (imat itself if none): types that differ from it
 * only by the drivers' zero columns (DGE 5-7, DPO 3-5: the same cond 2 matrix, as each call
 * restarts the seed) or by DLATB4's norm (DGE 10, 11, DPO 8, 9: 0.25 safmin/eps = 2^-972 and its
 * reciprocal, powers of two; DLATMS scales the singular values before its orthogonal transforms,
 * so scaling the cond 2 matrix afterwards gives the same bits where nothing under- or overflows).
 * gpu_types generates only the base types at n = 4096 (DLATMS is level-2 and slow). */
int latms_base(int po, int imat);
/* Turn a copy of type imat's base matrix into type imat in place: scale it by DLATB4's norm
 * (when `scale`) and set the drivers' zero columns; returns izero (as latms_matrix). */
int latms_derive(int po, int imat, int n, int scale, double *A);

/* LAPACK's inverse of an SPD matrix (dpotrf + dpotri, mirrored) and its inverse ratio
 * ||I - A X||_1 / (n ||A||_1 ||X||_1 eps); NaN if it fails. */
double latms_lapack_spd_ratio(int n, const double *A, double eps);

#endif
