/*
 * ocu_trtri.c: inv(U) on the device, several formulations (ocu_trtri.h says which and why).
 */
#include "kernels/cuda/ocu_trtri.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ocu_kernels.cu */
cudaError_t ocu_split_lower(double *A, int64_t lda, int64_t w, int64_t j, int64_t jb,
                            double *work, int64_t ldw, cudaStream_t s);

static const char *const names[OCU_TRTRI_NVARIANTS] = {"rec", "ws", "gemm", "trmm2", "cusolver"};

const char *ocu_trtri_name(int v) { return v >= 0 && v < OCU_TRTRI_NVARIANTS ? names[v] : "?"; }

int ocu_trtri_parse(const char *spec, ocu_trtri_cfg_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  size_t len = strcspn(spec, ":");
  cfg->variant = -1;
  for (int v = 0; v < OCU_TRTRI_NVARIANTS; v++)
    if (strlen(names[v]) == len && !strncmp(spec, names[v], len)) cfg->variant = v;
  if (cfg->variant < 0) return -1;
  int64_t *field[3] = {&cfg->leaf, &cfg->gleaf, &cfg->split};
  const char *p = spec + len;
  for (int i = 0; i < 3 && *p == ':'; i++) {
    char *end;
    long long v = strtoll(p + 1, &end, 10);
    if (end == p + 1 || v < 0) return -1;
    *field[i] = v;
    p = end;
  }
  return *p ? -1 : 0;
}

static int64_t leaf_of(const ocu_trtri_cfg_t *c) { return c->leaf > 0 ? c->leaf : OCU_TRTRI_LEAF; }
static int64_t gleaf_of(const ocu_trtri_cfg_t *c) { return c->gleaf > 0 ? c->gleaf : OCU_TRTRI_GLEAF; }
static int64_t split_of(const ocu_trtri_cfg_t *c) { return c->split > 0 ? c->split : OCU_TRTRI_SPLIT; }

const char *ocu_trtri_describe(const ocu_trtri_cfg_t *c, char *buf, size_t cap) {
  if (c->variant == OCU_TRTRI_CUSOLVER) snprintf(buf, cap, "cusolver (whole triangle)");
  else if (c->variant == OCU_TRTRI_GEMM)
    snprintf(buf, cap, "gemm leaf %lld gleaf %lld split %lld", (long long)leaf_of(c),
             (long long)gleaf_of(c), (long long)split_of(c));
  else
    snprintf(buf, cap, "%s leaf %lld split %lld", ocu_trtri_name(c->variant), (long long)leaf_of(c),
             (long long)split_of(c));
  return buf;
}

/* One recursion's context: what every level needs, and the first failure. */
typedef struct rc {
  cublasHandle_t h;
  cusolverDnHandle_t sol;
  cudaStream_t st;
  const ocu_trtri_cfg_t *cfg;
  const ocu_trtri_ws_t *ws;
  const char *err;
  int code;
} rc_t;

#define TRY(r, call, what)                                                                         \
  do {                                                                                             \
    int c_ = (int)(call);                                                                          \
    if (c_) {                                                                                      \
      (r)->err = what;                                                                             \
      (r)->code = c_;                                                                              \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

static const double ONE = 1.0, MONE = -1.0;

/* B := X B, X upper non-unit m x m. Out of place into the workspace a chunk of columns at a
 * time (columns of B are independent), copied back; in place when there is no room for 64. */
static int trmm_left(rc_t *r, const double *X, int64_t ldx, double *B, int64_t m, int64_t nn,
                     int64_t ldb) {
  int64_t c = r->ws->work ? r->ws->work_elems / m : 0;
  if (c < 64 || r->cfg->variant == OCU_TRTRI_REC) {
    TRY(r, cublasDtrmm_64(r->h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, m, nn, &ONE, X, ldx, B, ldb, B, ldb),
        "cublasDtrmm_64 (in place)");
    return 0;
  }
  if (c > nn) c = nn;
  for (int64_t j = 0; j < nn; j += c) {
    int64_t cj = nn - j < c ? nn - j : c;
    TRY(r, cublasDtrmm_64(r->h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, m, cj, &ONE, X, ldx, B + j * ldb, ldb,
                          r->ws->work, m),
        "cublasDtrmm_64 (left, out of place)");
    TRY(r, cudaMemcpy2DAsync(B + j * ldb, (size_t)(8 * ldb), r->ws->work, (size_t)(8 * m),
                             (size_t)(8 * m), (size_t)cj, cudaMemcpyDeviceToDevice, r->st),
        "cudaMemcpy2DAsync (trmm chunk back)");
  }
  return 0;
}

/* B := alpha B X, X upper non-unit m x m, B mm x m: rows of B are independent, so a chunk of
 * rows at a time through the workspace; in place when there is no room for 64 rows. */
static int trmm_right(rc_t *r, double alpha, const double *X, int64_t ldx, double *B, int64_t mm,
                      int64_t m, int64_t ldb) {
  int64_t c = r->ws->work ? r->ws->work_elems / m : 0;
  if (c < 64) {
    TRY(r, cublasDtrmm_64(r->h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, mm, m, &alpha, X, ldx, B, ldb, B, ldb),
        "cublasDtrmm_64 (right, in place)");
    return 0;
  }
  if (c > mm) c = mm;
  for (int64_t i = 0; i < mm; i += c) {
    int64_t ci = mm - i < c ? mm - i : c;
    TRY(r, cublasDtrmm_64(r->h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, ci, m, &alpha, X, ldx, B + i, ldb, r->ws->work,
                          ci),
        "cublasDtrmm_64 (right, out of place)");
    TRY(r, cudaMemcpy2DAsync(B + i, (size_t)(8 * ldb), r->ws->work, (size_t)(8 * ci),
                             (size_t)(8 * ci), (size_t)m, cudaMemcpyDeviceToDevice, r->st),
        "cudaMemcpy2DAsync (trmm chunk back)");
  }
  return 0;
}

/* The split of m columns: the first part a multiple of s near m / 2 (0 < m1 < m for m > s). */
static int64_t half(int64_t m, int64_t s) {
  int64_t m1 = (m / 2 + s - 1) / s * s;
  return m1 >= m ? m / 2 : m1;
}

/* B := alpha B inv(U), U upper non-unit m x m, B mm x m. With U = [A C; 0 D], B = [P Q]:
 * P := alpha P inv(A), Q := (alpha Q - P C) inv(D): the bulk is one GEMM per level. */
static int trsm_right_rec(rc_t *r, double alpha, const double *U, int64_t ldu, double *B,
                          int64_t mm, int64_t m, int64_t ldb) {
  if (m <= gleaf_of(r->cfg)) {
    TRY(r, cublasDtrsm_64(r->h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, mm, m, &alpha, U, ldu, B, ldb),
        "cublasDtrsm_64");
    return 0;
  }
  int64_t m1 = half(m, split_of(r->cfg)), m2 = m - m1;
  if (trsm_right_rec(r, alpha, U, ldu, B, mm, m1, ldb)) return -1;
  TRY(r, cublasDgemm_64(r->h, CUBLAS_OP_N, CUBLAS_OP_N, mm, m2, m1, &MONE, B, ldb, U + m1 * ldu,
                        ldu, &alpha, B + m1 * ldb, ldb),
      "cublasDgemm_64 (trsm)");
  return trsm_right_rec(r, 1.0, U + m1 + m1 * ldu, ldu, B + m1 * ldb, mm, m2, ldb);
}

/* B := X B, X upper non-unit m x m, B m x nn. With X = [A C; 0 D], B = [P; Q]:
 * P := A P + C Q (P first: it needs Q as it was), Q := D Q. */
static int trmm_left_rec(rc_t *r, const double *X, int64_t ldx, double *B, int64_t m, int64_t nn,
                         int64_t ldb) {
  if (m <= gleaf_of(r->cfg)) return trmm_left(r, X, ldx, B, m, nn, ldb);
  int64_t m1 = half(m, split_of(r->cfg)), m2 = m - m1;
  if (trmm_left_rec(r, X, ldx, B, m1, nn, ldb)) return -1;
  TRY(r, cublasDgemm_64(r->h, CUBLAS_OP_N, CUBLAS_OP_N, m1, nn, m2, &ONE, X + m1 * ldx, ldx,
                        B + m1, ldb, &ONE, B, ldb),
      "cublasDgemm_64 (trmm)");
  return trmm_left_rec(r, X + m1 + m1 * ldx, ldx, B + m1, m2, nn, ldb);
}

static int leaf(rc_t *r, double *U, int64_t w, int64_t ld) {
  size_t d = 0, hh = 0;
  TRY(r, cusolverDnXtrtri_bufferSize(r->sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, w,
                                     CUDA_R_64F, U, ld, &d, &hh),
      "cusolverDnXtrtri_bufferSize");
  if (d > r->ws->dsol_bytes || hh > r->ws->hsol_bytes) {
    r->err = "cusolverDnXtrtri: wants more workspace than given";
    r->code = 0;
    return -1;
  }
  TRY(r, cusolverDnXtrtri(r->sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, w, CUDA_R_64F, U,
                          ld, r->ws->dsol, r->ws->dsol_bytes, r->ws->hsol, r->ws->hsol_bytes,
                          r->ws->dinfo),
      "cusolverDnXtrtri");
  return 0;
}

static int rec(rc_t *r, double *U, int64_t w, int64_t ld) {
  int v = r->cfg->variant;
  if (w <= leaf_of(r->cfg) || v == OCU_TRTRI_CUSOLVER) return leaf(r, U, w, ld);
  int64_t w1 = half(w, split_of(r->cfg)), w2 = w - w1;
  double *U11 = U, *U12 = U + w1 * ld, *U22 = U + w1 + w1 * ld;
  if (v == OCU_TRTRI_TRMM2) { /* X22 first, then U12 := -U12 X22 and X11 U12 by trmm only */
    if (rec(r, U22, w2, ld) || trmm_right(r, -1.0, U22, ld, U12, w1, w2, ld)) return -1;
    if (rec(r, U11, w1, ld)) return -1;
    return trmm_left(r, U11, ld, U12, w1, w2, ld);
  }
  if (v == OCU_TRTRI_GEMM) {
    if (trsm_right_rec(r, -1.0, U22, ld, U12, w1, w2, ld)) return -1;
  } else {
    TRY(r, cublasDtrsm_64(r->h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                          CUBLAS_DIAG_NON_UNIT, w1, w2, &MONE, U22, ld, U12, ld),
        "cublasDtrsm_64");
  }
  if (rec(r, U11, w1, ld)) return -1;
  if (v == OCU_TRTRI_GEMM) {
    if (trmm_left_rec(r, U11, ld, U12, w1, w2, ld)) return -1;
  } else if (trmm_left(r, U11, ld, U12, w1, w2, ld)) {
    return -1;
  }
  return rec(r, U22, w2, ld);
}

const char *ocu_trtri(cublasHandle_t h, cusolverDnHandle_t sol, double *U, int64_t w, int64_t ld,
                      const ocu_trtri_cfg_t *cfg, const ocu_trtri_ws_t *ws, int *code) {
  rc_t r = {h, sol, NULL, cfg, ws, NULL, 0};
  *code = 0;
  if (cfg->variant < 0 || cfg->variant >= OCU_TRTRI_NVARIANTS) return "ocu_trtri: unknown variant";
  int c = (int)cublasGetStream(h, &r.st);
  if (c) {
    *code = c;
    return "cublasGetStream";
  }
  if (w > 0 && rec(&r, U, w, ld)) {
    *code = r.code;
    return r.err;
  }
  return NULL;
}

const char *ocu_getri_block(cublasHandle_t h, double *A, int64_t lda, int64_t w, int64_t j,
                            int64_t jb, double *work, int *code) {
  cudaStream_t st;
  int c = 0;
  const char *err = NULL;
  if ((c = (int)cublasGetStream(h, &st))) err = "cublasGetStream";
  else if ((c = (int)ocu_split_lower(A, lda, w, j, jb, work, w, st))) err = "ocu_split_lower";
  else if (j + jb < w &&
           (c = (int)cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, w, jb, w - j - jb, &MONE,
                                    A + (j + jb) * lda, lda, work + j + jb, w, &ONE, A + j * lda,
                                    lda)))
    err = "cublasDgemm_64 (getri)";
  else if ((c = (int)cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                    CUBLAS_DIAG_UNIT, w, jb, &ONE, work + j, w, A + j * lda, lda)))
    err = "cublasDtrsm_64 (getri)";
  *code = c;
  return err;
}
