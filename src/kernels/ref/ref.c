/*
 * ref.c: the reference ops table (see kernels/ops.h for the contract).
 *
 * This is the oracle the other backends are tested against, so every routine is the textbook loop
 * nest, written to be checked by eye. Loops are ordered so the innermost index walks down a column
 * (unit stride in column-major) wherever the algorithm allows it; that keeps the reference usable
 * on the tile sizes the solver tests run, without blocking that would hide mistakes.
 */
#include <math.h>
#include <stddef.h>

#include "base/base.h"
#include "kernels/ops.h"

#define AT(M, ld, i, j) ((M)[(size_t)(i) + (size_t)(j) * (size_t)(ld)])

static void ref_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                     double *C, int64_t ldc) {
  int ta_n = (ta == 'N' || ta == 'n'), tb_n = (tb == 'N' || tb == 'n');
  for (int64_t j = 0; j < n; j++) {
    /* BLAS semantics: beta == 0 means C is output only, so NaN in it must not survive. */
    if (beta == 0.0)
      for (int64_t i = 0; i < m; i++) AT(C, ldc, i, j) = 0.0;
    else if (beta != 1.0)
      for (int64_t i = 0; i < m; i++) AT(C, ldc, i, j) *= beta;
    /* alpha == 0 reads neither A nor B (as BLAS), so garbage there cannot leak into C. */
    if (alpha == 0.0) continue;
    if (ta_n) {
      for (int64_t l = 0; l < k; l++) {
        double t = alpha * (tb_n ? AT(B, ldb, l, j) : AT(B, ldb, j, l));
        for (int64_t i = 0; i < m; i++) AT(C, ldc, i, j) += t * AT(A, lda, i, l);
      }
    } else {
      /* op(A)(i, :) is column i of A: a dot product down two columns. */
      for (int64_t i = 0; i < m; i++) {
        double s = 0.0;
        for (int64_t l = 0; l < k; l++)
          s += AT(A, lda, l, i) * (tb_n ? AT(B, ldb, l, j) : AT(B, ldb, j, l));
        AT(C, ldc, i, j) += alpha * s;
      }
    }
  }
}

static void ref_trsm(char side, char uplo, char trans, char diag, int64_t m, int64_t n,
                     double alpha, const double *A, int64_t lda, double *B, int64_t ldb) {
  int left = (side == 'L' || side == 'l');
  int upper = (uplo == 'U' || uplo == 'u');
  int notr = (trans == 'N' || trans == 'n');
  int unit = (diag == 'U' || diag == 'u');
  /* op(A) is upper triangular iff (A upper) == (no transpose). */
  int op_upper = (upper == notr);

  for (int64_t j = 0; j < n; j++) {
    if (alpha == 0.0)
      for (int64_t i = 0; i < m; i++) AT(B, ldb, i, j) = 0.0;
    else if (alpha != 1.0)
      for (int64_t i = 0; i < m; i++) AT(B, ldb, i, j) *= alpha;
  }
  if (alpha == 0.0) return;

  if (left) {
    /* op(A) X = B, one column of B at a time. With no transpose, substitution by columns of A
     * (axpy form); with transpose, row i of op(A) is column i of A (dot form). Both unit stride. */
    for (int64_t j = 0; j < n; j++) {
      double *x = &AT(B, ldb, 0, j);
      if (notr && !upper) { /* L x = b: forward, axpy */
        for (int64_t kk = 0; kk < m; kk++) {
          if (!unit) x[kk] /= AT(A, lda, kk, kk);
          double t = x[kk];
          for (int64_t i = kk + 1; i < m; i++) x[i] -= t * AT(A, lda, i, kk);
        }
      } else if (notr && upper) { /* U x = b: backward, axpy */
        for (int64_t kk = m - 1; kk >= 0; kk--) {
          if (!unit) x[kk] /= AT(A, lda, kk, kk);
          double t = x[kk];
          for (int64_t i = 0; i < kk; i++) x[i] -= t * AT(A, lda, i, kk);
        }
      } else if (upper) { /* U^T x = b: forward, dot */
        for (int64_t i = 0; i < m; i++) {
          double s = x[i];
          for (int64_t kk = 0; kk < i; kk++) s -= AT(A, lda, kk, i) * x[kk];
          x[i] = unit ? s : s / AT(A, lda, i, i);
        }
      } else { /* L^T x = b: backward, dot */
        for (int64_t i = m - 1; i >= 0; i--) {
          double s = x[i];
          for (int64_t kk = i + 1; kk < m; kk++) s -= AT(A, lda, kk, i) * x[kk];
          x[i] = unit ? s : s / AT(A, lda, i, i);
        }
      }
    }
    return;
  }

  /* X op(A) = B, column by column of X: B(:, j) = sum_k X(:, k) op(A)(k, j). For op(A) upper,
   * column j depends on columns k < j (solve left to right), for lower on k > j. Every update is
   * a whole-column axpy, so the inner loop is unit stride whatever the variant. */
#define OPA(kk, jj) (notr ? AT(A, lda, kk, jj) : AT(A, lda, jj, kk))
  for (int64_t s = 0; s < n; s++) {
    int64_t j = op_upper ? s : n - 1 - s;
    double *bj = &AT(B, ldb, 0, j);
    int64_t k0 = op_upper ? 0 : j + 1, k1 = op_upper ? j : n;
    for (int64_t kk = k0; kk < k1; kk++) {
      double t = OPA(kk, j);
      if (t == 0.0) continue;
      const double *xk = &AT(B, ldb, 0, kk);
      for (int64_t i = 0; i < m; i++) bj[i] -= t * xk[i];
    }
    if (!unit) {
      double d = AT(A, lda, j, j);
      for (int64_t i = 0; i < m; i++) bj[i] /= d;
    }
  }
#undef OPA
}

static int64_t ref_getrf(int64_t m, int64_t n, double *A, int64_t lda, int64_t *ipiv) {
  int64_t info = 0, mn = m < n ? m : n;
  for (int64_t j = 0; j < mn; j++) {
    /* First index of the largest magnitude, as idamax: ties and all-zero columns pick the
     * topmost row, so ipiv matches LAPACK's exactly on such inputs. */
    int64_t p = j;
    double best = fabs(AT(A, lda, j, j));
    for (int64_t i = j + 1; i < m; i++) {
      double v = fabs(AT(A, lda, i, j));
      if (v > best) {
        best = v;
        p = i;
      }
    }
    ipiv[j] = p;
    if (AT(A, lda, p, j) != 0.0) {
      if (p != j)
        for (int64_t c = 0; c < n; c++) {
          double t = AT(A, lda, j, c);
          AT(A, lda, j, c) = AT(A, lda, p, c);
          AT(A, lda, p, c) = t;
        }
      double piv = AT(A, lda, j, j);
      for (int64_t i = j + 1; i < m; i++) AT(A, lda, i, j) /= piv;
    } else if (info == 0) {
      /* LAPACK reports the first zero pivot and carries on, so U is complete for the caller. */
      info = j + 1;
    }
    for (int64_t c = j + 1; c < n; c++) {
      double t = AT(A, lda, j, c);
      if (t == 0.0) continue;
      for (int64_t i = j + 1; i < m; i++) AT(A, lda, i, c) -= AT(A, lda, i, j) * t;
    }
  }
  return info;
}

static int64_t ref_getri(int64_t n, double *A, int64_t lda) {
  /* As dtrtri: refuse before touching anything, so a singular input is left as it was. */
  for (int64_t j = 0; j < n; j++)
    if (AT(A, lda, j, j) == 0.0) return j + 1;

  /* The ops table gives kernels no allocator, so this avoids dgetri's workspace (it copies each
   * column of L out before overwriting it): invert U and L in place, then form inv(U) inv(L) in
   * place in an order that reads every factor entry before it is overwritten. */

  /* inv(U), columns left to right (dtrti2, upper): column j of inv(U) is
   * -inv(U)(0:j, 0:j) U(0:j, j) / U(j, j), and the leading j x j block is already inverted. */
  for (int64_t j = 0; j < n; j++) {
    AT(A, lda, j, j) = 1.0 / AT(A, lda, j, j);
    double ajj = -AT(A, lda, j, j);
    double *x = &AT(A, lda, 0, j);
    /* x := T x with T upper (dtrmv): ascending kk is safe in place, x[kk] is still the input
     * when step kk reads it. */
    for (int64_t kk = 0; kk < j; kk++) {
      double t = x[kk];
      for (int64_t i = 0; i < kk; i++) x[i] += t * AT(A, lda, i, kk);
      x[kk] = t * AT(A, lda, kk, kk);
    }
    for (int64_t i = 0; i < j; i++) x[i] *= ajj;
  }

  /* inv(L), unit lower, columns right to left (dtrti2, lower, unit): rows j+1.. of column j are
   * -inv(L)(j+1:, j+1:) L(j+1:, j), the trailing block already inverted. */
  for (int64_t j = n - 1; j >= 0; j--) {
    double *x = &AT(A, lda, 0, j);
    /* x := T x with T unit lower: descending kk keeps x[kk] the input when it is read. */
    for (int64_t kk = n - 1; kk > j; kk--) {
      double t = x[kk];
      for (int64_t i = kk + 1; i < n; i++) x[i] += t * AT(A, lda, i, kk);
    }
    for (int64_t i = j + 1; i < n; i++) x[i] = -x[i];
  }

  /* X = inv(U) inv(L): X(:, j) = inv(U)(:, j) + sum_{k>j} inv(U)(0:k, k) inv(L)(k, j). Columns
   * ascending: column j reads only columns k > j, still untouched inv(U). Within a column, k
   * ascending: row k's multiplier is taken out just before row k becomes an accumulator, and
   * rows below k (still multipliers) are not written at step k. */
  for (int64_t j = 0; j < n; j++) {
    for (int64_t k = j + 1; k < n; k++) {
      double t = AT(A, lda, k, j);
      AT(A, lda, k, j) = 0.0;
      if (t == 0.0) continue;
      const double *uk = &AT(A, lda, 0, k);
      for (int64_t i = 0; i <= k; i++) AT(A, lda, i, j) += t * uk[i];
    }
  }
  return 0;
}

static void ref_laswp(int64_t ncols, double *A, int64_t lda, int64_t k1, int64_t k2,
                      const int64_t *ipiv) {
  /* All swaps on one column before the next: same result as swapping whole rows in order, but
   * each column is walked while it is in cache. */
  for (int64_t c = 0; c < ncols; c++) {
    double *col = &AT(A, lda, 0, c);
    for (int64_t kk = k1; kk < k2; kk++) {
      int64_t p = ipiv[kk];
      if (p == kk) continue;
      double t = col[kk];
      col[kk] = col[p];
      col[p] = t;
    }
  }
}

static int64_t ref_colabs(int64_t m, int64_t n, const double *A, int64_t lda, double *acc,
                          int64_t *bad_i, int64_t *bad_j) {
  int64_t bad = 0;
  for (int64_t j = 0; j < n; j++) {
    double s = 0.0;
    for (int64_t i = 0; i < m; i++) {
      double v = AT(A, lda, i, j);
      if (!isfinite(v)) {
        if (bad == 0) {
          if (bad_i) *bad_i = i;
          if (bad_j) *bad_j = j;
        }
        bad++;
      }
      s += fabs(v);
    }
    acc[j] += s;
  }
  return bad;
}

/* ---- Cholesky family (appended) ------------------------------------------------------------ */

static void ref_syrk(char uplo, char trans, int64_t n, int64_t k, double alpha, const double *A,
                     int64_t lda, double beta, double *C, int64_t ldc) {
  int lower = (uplo == 'L' || uplo == 'l'), notr = (trans == 'N' || trans == 'n');
  for (int64_t j = 0; j < n; j++) {
    int64_t i0 = lower ? j : 0, i1 = lower ? n : j + 1; /* the stored part of column j */
    if (beta == 0.0)
      for (int64_t i = i0; i < i1; i++) AT(C, ldc, i, j) = 0.0;
    else if (beta != 1.0)
      for (int64_t i = i0; i < i1; i++) AT(C, ldc, i, j) *= beta;
    if (alpha == 0.0) continue;
    if (notr) { /* C(:, j) += alpha A A(j, :)^T: axpy down columns of A */
      for (int64_t l = 0; l < k; l++) {
        double t = alpha * AT(A, lda, j, l);
        for (int64_t i = i0; i < i1; i++) AT(C, ldc, i, j) += t * AT(A, lda, i, l);
      }
    } else { /* C(i, j) += alpha A(:, i) . A(:, j): dot products down columns */
      for (int64_t i = i0; i < i1; i++) {
        double s = 0.0;
        for (int64_t l = 0; l < k; l++) s += AT(A, lda, l, i) * AT(A, lda, l, j);
        AT(C, ldc, i, j) += alpha * s;
      }
    }
  }
}

static int64_t ref_potrf(int64_t n, double *A, int64_t lda) {
  /* dpotf2, lower, left-looking by columns: column j gets the updates of columns k < j, then is
   * scaled by its pivot. The pivot test is LAPACK's (not positive) plus NaN and Inf. */
  for (int64_t j = 0; j < n; j++) {
    double *cj = &AT(A, lda, 0, j);
    for (int64_t kk = 0; kk < j; kk++) {
      double t = AT(A, lda, j, kk);
      const double *ck = &AT(A, lda, 0, kk);
      for (int64_t i = j; i < n; i++) cj[i] -= t * ck[i];
    }
    double ajj = cj[j];
    if (!(ajj > 0.0) || isinf(ajj)) return j + 1; /* also NaN */
    ajj = sqrt(ajj);
    cj[j] = ajj;
    for (int64_t i = j + 1; i < n; i++) cj[i] /= ajj;
  }
  return 0;
}

static int64_t ref_potri(int64_t n, double *A, int64_t lda) {
  for (int64_t j = 0; j < n; j++)
    if (AT(A, lda, j, j) == 0.0) return j + 1;
  /* inv(L) in place, columns right to left (dtrti2, lower, non-unit): rows j+1.. of column j are
   * -inv(L)(j+1:, j+1:) L(j+1:, j) / L(j, j), the trailing block already inverted. */
  for (int64_t j = n - 1; j >= 0; j--) {
    AT(A, lda, j, j) = 1.0 / AT(A, lda, j, j);
    double ajj = -AT(A, lda, j, j);
    double *x = &AT(A, lda, 0, j);
    /* x := T x with T lower (dtrmv): descending kk keeps x[kk] the input when it is read. */
    for (int64_t kk = n - 1; kk > j; kk--) {
      double t = x[kk];
      for (int64_t i = kk + 1; i < n; i++) x[i] += t * AT(A, lda, i, kk);
      x[kk] = t * AT(A, lda, kk, kk);
    }
    for (int64_t i = j + 1; i < n; i++) x[i] *= ajj;
  }
  /* inv(L)^T inv(L), lower (dlauu2): R(i, j) = sum_{k >= i} M(k, i) M(k, j) for j <= i. Row i of
   * R needs only rows >= i of M, so rows are overwritten top to bottom; within row i the
   * diagonal M(i, i) is read by every entry, so it is written last. */
  for (int64_t i = 0; i < n; i++) {
    double mii = AT(A, lda, i, i);
    for (int64_t j = 0; j < i; j++) {
      double s = mii * AT(A, lda, i, j);
      for (int64_t kk = i + 1; kk < n; kk++) s += AT(A, lda, kk, i) * AT(A, lda, kk, j);
      AT(A, lda, i, j) = s;
    }
    double s = mii * mii;
    for (int64_t kk = i + 1; kk < n; kk++) s += AT(A, lda, kk, i) * AT(A, lda, kk, i);
    AT(A, lda, i, i) = s;
  }
  return 0;
}

/* dtrti2: columns of the inverse in place, each from the part already inverted. */
static int64_t ref_trtri(char uplo, char diag, int64_t n, double *A, int64_t lda) {
  int unit = (diag == 'U' || diag == 'u'), lower = (uplo == 'L' || uplo == 'l');
  if (!unit)
    for (int64_t j = 0; j < n; j++)
      if (AT(A, lda, j, j) == 0.0) return j + 1;
  if (lower) {
    for (int64_t j = n - 1; j >= 0; j--) { /* the trailing block (j+1.., j+1..) is inverted */
      double ajj = -1.0;
      if (!unit) {
        AT(A, lda, j, j) = 1.0 / AT(A, lda, j, j);
        ajj = -AT(A, lda, j, j);
      }
      double *x = &AT(A, lda, 0, j);
      for (int64_t kk = n - 1; kk > j; kk--) { /* x := T x (dtrmv, lower) */
        double t = x[kk];
        for (int64_t i = kk + 1; i < n; i++) x[i] += t * AT(A, lda, i, kk);
        x[kk] = unit ? t : t * AT(A, lda, kk, kk);
      }
      for (int64_t i = j + 1; i < n; i++) x[i] *= ajj;
    }
  } else {
    for (int64_t j = 0; j < n; j++) { /* the leading block (..j-1, ..j-1) is inverted */
      double ajj = -1.0;
      if (!unit) {
        AT(A, lda, j, j) = 1.0 / AT(A, lda, j, j);
        ajj = -AT(A, lda, j, j);
      }
      double *x = &AT(A, lda, 0, j);
      for (int64_t kk = 0; kk < j; kk++) { /* x := T x (dtrmv, upper): x[kk] still the input */
        double t = x[kk];
        for (int64_t i = 0; i < kk; i++) x[i] += t * AT(A, lda, i, kk);
        x[kk] = unit ? t : t * AT(A, lda, kk, kk);
      }
      for (int64_t i = 0; i < j; i++) x[i] *= ajj;
    }
  }
  return 0;
}

/* dgeqr2: column by column, dlarfg's reflector (beta = -sign(alpha) hypot(alpha, ||x||)), then
 * H_i applied to the columns right of it. The oracle: O(m n^2) loops, obviously right. */
static void ref_geqrf(int64_t m, int64_t n, double *A, int64_t lda, double *tau) {
  int64_t k = m < n ? m : n;
  for (int64_t i = 0; i < k; i++) {
    double *x = &AT(A, lda, i, i);
    double xnorm = ooc_nrm2(m - i - 1, x + 1);
    if (xnorm == 0.0) {
      tau[i] = 0.0;
      continue;
    }
    double alpha = x[0];
    double beta = -copysign(hypot(alpha, xnorm), alpha);
    tau[i] = (beta - alpha) / beta;
    double s = 1.0 / (alpha - beta);
    for (int64_t r = 1; r < m - i; r++) x[r] *= s;
    x[0] = beta;
    /* A[i:, j] -= tau v (v^T A[i:, j]), v = [1; x(1:)] */
    for (int64_t j = i + 1; j < n; j++) {
      double *c = &AT(A, lda, i, j);
      double w = c[0];
      for (int64_t r = 1; r < m - i; r++) w += x[r] * c[r];
      w *= tau[i];
      c[0] -= w;
      for (int64_t r = 1; r < m - i; r++) c[r] -= w * x[r];
    }
  }
}

/* dorm2r, left side: Q^T C applies H_0 first, Q C applies H_{k-1} first. */
static void ref_ormqr(char trans, int64_t m, int64_t n, int64_t k, double *A, int64_t lda,
                      const double *tau, double *C, int64_t ldc) {
  int qt = (trans == 'T' || trans == 't');
  for (int64_t t = 0; t < k; t++) {
    int64_t i = qt ? t : k - 1 - t;
    if (tau[i] == 0.0) continue;
    const double *v = &AT(A, lda, i, i);
    for (int64_t j = 0; j < n; j++) {
      double *c = &AT(C, ldc, i, j);
      double w = c[0];
      for (int64_t r = 1; r < m - i; r++) w += v[r] * c[r];
      w *= tau[i];
      c[0] -= w;
      for (int64_t r = 1; r < m - i; r++) c[r] -= w * v[r];
    }
  }
}

static void ref_laset(char uplo, int64_t m, int64_t n, double alpha, double beta, double *A,
                      int64_t lda) {
  int lo = (uplo == 'L' || uplo == 'l'), up = (uplo == 'U' || uplo == 'u');
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      if ((lo && i < j) || (up && i > j)) continue;
      AT(A, lda, i, j) = i == j ? beta : alpha;
    }
}

static const ooc_ops_t ref_ops = {
    .name = "ref",
    .gemm = ref_gemm,
    .trsm = ref_trsm,
    .getrf = ref_getrf,
    .getri = ref_getri,
    .laswp = ref_laswp,
    .colabs = ref_colabs,
    .syrk = ref_syrk,
    .potrf = ref_potrf,
    .potri = ref_potri,
    .trtri = ref_trtri,
    .geqrf = ref_geqrf,
    .ormqr = ref_ormqr,
    .laset = ref_laset,
};

const ooc_ops_t *ooc_ops_ref(void) { return &ref_ops; }
