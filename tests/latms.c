/* latms.c: see latms.h. */
#include "latms.h"

#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* DLATMS from LAPACK's test-matrix library (Fortran; hidden string lengths last). */
extern void dlatms_(const int *m, const int *n, const char *dist, int *iseed, const char *sym,
                    double *d, const int *mode, const double *cond, const double *dmax,
                    const int *kl, const int *ku, const char *pack, double *a, const int *lda,
                    double *work, int *info, size_t ldist, size_t lsym, size_t lpack);

/* DLATB4 for "DGE" (po = 0) and "DPO" (po = 1). */
static void dlatb4(int po, int imat, int n, char *type, int *kl, int *ku, double *cond,
                   double *anorm) {
  double eps = DBL_EPSILON; /* DLAMCH('Precision') = eps * base = 2^-52 */
  double badc2 = 0.1 / eps, badc1 = sqrt(badc2);
  double small = 0.25 * (DBL_MIN / eps), large = 1.0 / small;
  *type = po ? 'P' : 'N';
  *cond = 2;
  *anorm = 1;
  if (!po) {
    *kl = imat == 1 || imat == 2 ? 0 : (n > 1 ? n - 1 : 0);
    *ku = imat == 1 || imat == 3 ? 0 : (n > 1 ? n - 1 : 0);
    if (imat == 8) *cond = badc1;
    if (imat == 9) *cond = badc2;
    if (imat == 10) *anorm = small;
    if (imat == 11) *anorm = large;
  } else {
    *kl = *ku = imat == 1 ? 0 : (n > 1 ? n - 1 : 0);
    if (imat == 6) *cond = badc1;
    if (imat == 7) *cond = badc2;
    if (imat == 8) *anorm = small;
    if (imat == 9) *anorm = large;
  }
  if (n <= 1) *cond = 1;
}

double *latms_matrix(int po, int imat, int n, int *izero, int *info) {
  int zerot = po ? (imat >= 3 && imat <= 5) : (imat >= 5 && imat <= 7);
  *izero = 0;
  *info = 0;
  if (zerot && n < imat - (po ? 2 : 4)) return NULL;
  char type, dist = 'S', pack = 'N';
  int kl, ku, mode = 3, lda = n > 1 ? n : 1;
  int iseed[4] = {1988, 1989, 1990, 1991};
  double cond, anorm;
  dlatb4(po, imat, n, &type, &kl, &ku, &cond, &anorm);
  double *A = calloc((size_t)lda * (size_t)(n > 0 ? n : 1) + 1, sizeof *A);
  double *d = malloc((size_t)(n + 1) * sizeof *d);
  double *work = malloc((size_t)(3 * n + 3) * sizeof *work);
  if (!A || !d || !work) *info = -1000;
  else if (n > 0)
    dlatms_(&n, &n, &dist, iseed, &type, d, &mode, &cond, &anorm, &kl, &ku, &pack, A, &lda, work,
            info, 1, 1, 1);
  free(d);
  free(work);
  if (*info) {
    free(A);
    return NULL;
  }
  *izero = latms_derive(po, imat, n, 0, A);
  return A;
}

int latms_base(int po, int imat) {
  if (po) return (imat >= 3 && imat <= 5) || imat == 8 || imat == 9 ? 2 : imat;
  return (imat >= 5 && imat <= 7) || imat == 10 || imat == 11 ? 4 : imat;
}

int latms_derive(int po, int imat, int n, int scale, double *A) {
  if (scale) {
    char type;
    int kl, ku;
    double cond, anorm;
    dlatb4(po, imat, n, &type, &kl, &ku, &cond, &anorm);
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] *= anorm;
  }
  int zerot = po ? (imat >= 3 && imat <= 5) : (imat >= 5 && imat <= 7);
  if (!zerot) return 0;
  int izero = imat == (po ? 3 : 5) ? 1 : imat == (po ? 4 : 6) ? n : n / 2 + 1, z = izero - 1;
  if (!po && imat == 7) { /* columns izero..n */
    for (int j = z; j < n; j++)
      for (int i = 0; i < n; i++) A[i + (size_t)j * n] = 0;
  } else {
    for (int i = 0; i < n; i++) A[i + (size_t)z * n] = 0;
    if (po)
      for (int j = 0; j < n; j++) A[z + (size_t)j * n] = 0;
  }
  return izero;
}

double latms_lapack_spd_ratio(int n, const double *A, double eps) {
  if (n == 0) return 0;
  double *X = malloc((size_t)n * n * sizeof *X);
  memcpy(X, A, (size_t)n * n * sizeof *X);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, X, n);
  if (info == 0) info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, X, n);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < j; i++) X[i + (size_t)j * n] = X[j + (size_t)i * n];
  double r = info == 0 ? tu_inverse_ratio(n, A, X, eps) : NAN;
  free(X);
  return r;
}
