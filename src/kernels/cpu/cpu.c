/*
 * cpu.c: the ops table on CBLAS + LAPACKE (OpenBLAS). Contract: kernels/ops.h.
 *
 * OpenBLAS on Debian is LP64: every dimension and leading dimension of one call must fit in a
 * 32-bit int. The solver only passes tiles and panels, which always do; if a call ever does not,
 * it is handed to the reference kernel instead of being truncated (these entry points have no
 * error channel, and a slow correct result beats a silently wrong one). That path is a safety net,
 * not a feature: it is not fast.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/parloop.h"
#include "kernels/ops.h"

static int fits(int64_t v) { return v >= 0 && v <= INT32_MAX; }

/* LAPACK insists on ld >= 1 even when the matrix is empty; callers may pass 0 then. */
static lapack_int ld32(int64_t ld) { return ld < 1 ? 1 : (lapack_int)ld; }

static enum CBLAS_TRANSPOSE cb_trans(char t) {
  return (t == 'T' || t == 't' || t == 'C' || t == 'c') ? CblasTrans : CblasNoTrans;
}

static void cpu_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                     double *C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  /* k == 0 or alpha == 0 only scales C and reads neither A nor B; BLAS would still insist on
   * valid leading dimensions for them. */
  if (k == 0 || alpha == 0.0 || !fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) ||
      !fits(ldc)) {
    ooc_ops_ref()->gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (n == 1 && cb_trans(tb) == CblasNoTrans) {
    /* One column (the checks' estimator products: a pass over a matrix as tall as the input):
     * OpenBLAS 0.3.21's dgemv streams it at about twice dgemm's n = 1 rate (A^T x: 21 against
     * 8-9 GB/s on the 2-core VM; on the 16-core H200 host a column pass of the chol check at
     * n = 65536 spent 0.84 s of arithmetic where it spent 1.85 s). BLAS's beta = 0 must not
     * read C, while dgemv scales y by beta: y is zeroed first and added to. */
    int tr = cb_trans(ta) == CblasTrans;
    if (beta == 0.0) memset(C, 0, (size_t)m * sizeof(double));
    cblas_dgemv(CblasColMajor, cb_trans(ta), (int)(tr ? k : m), (int)(tr ? m : k), alpha, A,
                ld32(lda), B, 1, beta == 0.0 ? 1.0 : beta, C, 1);
    return;
  }
  cblas_dgemm(CblasColMajor, cb_trans(ta), cb_trans(tb), (int)m, (int)n, (int)k, alpha, A,
              ld32(lda), B, ld32(ldb), beta, C, ld32(ldc));
}

static void cpu_trsm(char side, char uplo, char trans, char diag, int64_t m, int64_t n,
                     double alpha, const double *A, int64_t lda, double *B, int64_t ldb) {
  if (m == 0 || n == 0) return;
  if (!fits(m) || !fits(n) || !fits(lda) || !fits(ldb)) {
    ooc_ops_ref()->trsm(side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
    return;
  }
  cblas_dtrsm(CblasColMajor, (side == 'L' || side == 'l') ? CblasLeft : CblasRight,
              (uplo == 'U' || uplo == 'u') ? CblasUpper : CblasLower, cb_trans(trans),
              (diag == 'U' || diag == 'u') ? CblasUnit : CblasNonUnit, (int)m, (int)n, alpha, A,
              ld32(lda), B, ld32(ldb));
}

static int64_t cpu_getrf(int64_t m, int64_t n, double *A, int64_t lda, int64_t *ipiv) {
  int64_t mn = m < n ? m : n;
  if (mn == 0) return 0;
  if (!fits(m) || !fits(n) || !fits(lda)) return ooc_ops_ref()->getrf(m, n, A, lda, ipiv);
  /* LAPACK writes min(m, n) 32-bit pivots; they fit in the first half of the caller's 64-bit
   * array, so no allocation is needed. Widening from the end is safe in place: entry i lands on
   * 32-bit slots 2i and 2i+1, which for i >= 1 are past i and already widened. memcpy because the
   * storage is reused under a different type (no strict-aliasing assumptions). */
  lapack_int *p32 = (lapack_int *)(void *)ipiv;
  lapack_int info =
      LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, A, ld32(lda), p32);
  unsigned char *bytes = (unsigned char *)ipiv;
  for (int64_t i = mn - 1; i >= 0; i--) {
    lapack_int v;
    memcpy(&v, bytes + (size_t)i * sizeof v, sizeof v);
    int64_t w = (int64_t)v - 1;
    memcpy(bytes + (size_t)i * sizeof w, &w, sizeof w);
  }
  return info > 0 ? (int64_t)info : 0;
}

/* Panel width of cpu_getri. dgetri's ilaenv default (64) leaves the dgemm narrow; 256 measured
 * ~20% faster at n = 2048..4096 on OpenBLAS, for a workspace of n x 256 doubles. */
#define GETRI_NB 256

static int64_t cpu_getri(int64_t n, double *A, int64_t lda) {
  if (n == 0) return 0;
  if (!fits(n) || !fits(lda)) return ooc_ops_ref()->getri(n, A, lda);
  /* dgetri's algorithm with a wider panel: inv(U) in place (dtrtri refuses, untouched, on a zero
   * diagonal), then X L = inv(U) solved panel by panel from the right. Each panel of L is moved to
   * the workspace first because X overwrites it. */
  int64_t nb = n < GETRI_NB ? n : GETRI_NB;
  double *W = malloc((size_t)n * (size_t)nb * sizeof *W);
  if (!W) return ooc_ops_ref()->getri(n, A, lda); /* the reference kernel needs no workspace */
  lapack_int n32 = (lapack_int)n, ld = ld32(lda);
  lapack_int info = LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, 'U', 'N', n32, A, ld);
  if (info != 0) {
    free(W);
    return info > 0 ? (int64_t)info : 0;
  }
  /* W(i, jj) for rows i in [j0, n) holds L(i, j0 + jj); ld n keeps row indices global. */
  for (int64_t j0 = ((n - 1) / nb) * nb; j0 >= 0; j0 -= nb) {
    int64_t jb = n - j0 < nb ? n - j0 : nb;
    for (int64_t jj = 0; jj < jb; jj++) {
      double *a = A + (size_t)(j0 + jj) * (size_t)lda, *w = W + (size_t)jj * (size_t)n;
      for (int64_t i = j0 + jj + 1; i < n; i++) {
        w[i] = a[i];
        a[i] = 0.0;
      }
    }
    double *Aj = A + (size_t)j0 * (size_t)lda;
    int64_t rest = n - j0 - jb;
    if (rest > 0)
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n32, (int)jb, (int)rest, -1.0,
                  Aj + (size_t)jb * (size_t)lda, ld, W + j0 + jb, n32, 1.0, Aj, ld);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasUnit, n32, (int)jb, 1.0,
                W + j0, n32, Aj, ld);
  }
  free(W);
  return 0;
}

static void cpu_laswp(int64_t ncols, double *A, int64_t lda, int64_t k1, int64_t k2,
                      const int64_t *ipiv) {
  /* dlaswp walks rows across all columns (stride lda) for each pivot; one column at a time with
   * all pivots applied is the cache-friendly order for column-major data, which is what the
   * reference kernel does. */
  ooc_ops_ref()->laswp(ncols, A, lda, k1, k2, ipiv);
}

/* colabs on threads: each job a block of whole columns, each column summed in order as the
 * reference kernel sums it (the same bits), the check for non-finite entries only where a
 * column's sum is not finite (then the reference kernel finds them in that column). */
#define COLABS_COLS 16
typedef struct {
  int64_t m, n, lda;
  const double *A;
  double *acc;
  int64_t *bad, *bad_i; /* per job: non-finite entries, and the first one's row and column */
  int64_t *bad_j;
} colabs_t;

static void colabs_job(void *arg, int64_t k, int worker) {
  (void)worker;
  const colabs_t *c = arg;
  int64_t j0 = k * COLABS_COLS, j1 = j0 + COLABS_COLS < c->n ? j0 + COLABS_COLS : c->n;
  c->bad[k] = 0;
  for (int64_t j = j0; j < j1; j++) {
    const double *col = c->A + j * c->lda;
    double s = 0.0;
    for (int64_t i = 0; i < c->m; i++) s += fabs(col[i]);
    if (!isfinite(s)) { /* a NaN or an Inf, or finite entries whose sum overflowed */
      int64_t bi = 0, bj = 0, nb = ooc_ops_ref()->colabs(c->m, 1, col, c->lda, &(double){0}, &bi,
                                                          &bj);
      if (nb && !c->bad[k]) {
        c->bad_i[k] = bi;
        c->bad_j[k] = j;
      }
      c->bad[k] += nb;
    }
    c->acc[j] += s;
  }
}

static int64_t cpu_colabs(int64_t m, int64_t n, const double *A, int64_t lda, double *acc,
                          int64_t *bad_i, int64_t *bad_j) {
  /* Memory-bound and must count non-finite entries, which no BLAS routine does. The reference
   * kernel summed 9.5 GB/s on one thread of this project's VM, this one 19 GB/s on its two
   * cores (a 12288 x 8192 block, tools/colabs_rate.c): at one thread's rate a 16 GB load spent
   * 1.7 s here on the loader's thread. A small block stays on the caller. */
  int64_t jobs = (n + COLABS_COLS - 1) / COLABS_COLS;
  if (m * n < ((int64_t)1 << 20) || jobs < 2)
    return ooc_ops_ref()->colabs(m, n, A, lda, acc, bad_i, bad_j);
  int64_t *w = malloc((size_t)(3 * jobs) * sizeof *w);
  if (!w) return ooc_ops_ref()->colabs(m, n, A, lda, acc, bad_i, bad_j);
  colabs_t c = {m, n, lda, A, acc, w, w + jobs, w + 2 * jobs};
  ooc_parallel(ooc_par_cpus(16), jobs, colabs_job, &c);
  int64_t bad = 0;
  for (int64_t k = 0; k < jobs; k++) {
    if (c.bad[k] && !bad) {
      if (bad_i) *bad_i = c.bad_i[k];
      if (bad_j) *bad_j = c.bad_j[k];
    }
    bad += c.bad[k];
  }
  free(w);
  return bad;
}

static void cpu_syrk(char uplo, char trans, int64_t n, int64_t k, double alpha, const double *A,
                     int64_t lda, double beta, double *C, int64_t ldc) {
  if (n == 0) return;
  if (k == 0 || alpha == 0.0 || !fits(n) || !fits(k) || !fits(lda) || !fits(ldc)) {
    ooc_ops_ref()->syrk(uplo, trans, n, k, alpha, A, lda, beta, C, ldc);
    return;
  }
  cblas_dsyrk(CblasColMajor, (uplo == 'U' || uplo == 'u') ? CblasUpper : CblasLower,
              cb_trans(trans), (int)n, (int)k, alpha, A, ld32(lda), beta, C, ld32(ldc));
}

/* First diagonal entry in [0, lim) that is not a usable pivot (NaN, Inf, <= 0), as j+1; else 0. */
static int64_t bad_diag(int64_t lim, const double *A, int64_t lda) {
  for (int64_t j = 0; j < lim; j++) {
    double d = A[(size_t)j * (size_t)(lda + 1)];
    if (!(d > 0.0) || isinf(d)) return j + 1;
  }
  return 0;
}

static int64_t cpu_potrf(int64_t n, double *A, int64_t lda) {
  if (n == 0) return 0;
  if (!fits(n) || !fits(lda)) return ooc_ops_ref()->potrf(n, A, lda);
  lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, A, ld32(lda));
  /* OpenBLAS tests only ajj <= 0: a NaN pivot passes and poisons the rest. A NaN anywhere in the
   * lower triangle reaches the diagonal of its row, so scanning the factored diagonal finds the
   * first leading minor that is not positive, as the reference kernel reports it. */
  int64_t lim = info > 0 ? (int64_t)info - 1 : n;
  int64_t bad = bad_diag(lim, A, lda);
  if (bad) return bad;
  return info > 0 ? (int64_t)info : 0;
}

static int64_t cpu_potri(int64_t n, double *A, int64_t lda) {
  if (n == 0) return 0;
  if (!fits(n) || !fits(lda)) return ooc_ops_ref()->potri(n, A, lda);
  lapack_int info = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', (lapack_int)n, A, ld32(lda));
  return info > 0 ? (int64_t)info : 0;
}

static int64_t cpu_trtri(char uplo, char diag, int64_t n, double *A, int64_t lda) {
  if (n == 0) return 0;
  if (!fits(n) || !fits(lda)) return ooc_ops_ref()->trtri(uplo, diag, n, A, lda);
  lapack_int info = LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, uplo, diag, (lapack_int)n, A, ld32(lda));
  return info > 0 ? (int64_t)info : 0;
}

/* OpenBLAS (pthreads build) runs a call with one thread directly on the caller's thread, so
 * calls from several threads at once do not share its thread pool; its idle pool threads spin
 * (sched_yield) for a while after each threaded call and then sleep. */
static int cpu_threads(int t) {
  int was = openblas_get_num_threads();
  if (t > 0 && t != was) openblas_set_num_threads(t);
  return was;
}

/* LAPACKE's high-level calls allocate dgeqrf's / dormqr's workspace (malloc, outside the
 * context's count: ~n x 64 doubles); if that fails the reference kernel does the call without
 * workspace (these entry points have no error channel). */
static void cpu_geqrf(int64_t m, int64_t n, double *A, int64_t lda, double *tau) {
  if (m == 0 || n == 0) return;
  if (!fits(m) || !fits(n) || !fits(lda) ||
      LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, A, ld32(lda), tau) != 0)
    ooc_ops_ref()->geqrf(m, n, A, lda, tau);
}

static void cpu_ormqr(char trans, int64_t m, int64_t n, int64_t k, double *A, int64_t lda,
                      const double *tau, double *C, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0) return;
  char t = (trans == 'T' || trans == 't') ? 'T' : 'N';
  if (!fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldc) ||
      LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', t, (lapack_int)m, (lapack_int)n, (lapack_int)k, A,
                     ld32(lda), tau, C, ld32(ldc)) != 0)
    ooc_ops_ref()->ormqr(trans, m, n, k, A, lda, tau, C, ldc);
}

static void cpu_laset(char uplo, int64_t m, int64_t n, double alpha, double beta, double *A,
                      int64_t lda) {
  if (m == 0 || n == 0) return;
  if (!fits(m) || !fits(n) || !fits(lda)) {
    ooc_ops_ref()->laset(uplo, m, n, alpha, beta, A, lda);
    return;
  }
  char u = (uplo == 'L' || uplo == 'l') ? 'L' : (uplo == 'U' || uplo == 'u') ? 'U' : 'A';
  LAPACKE_dlaset_work(LAPACK_COL_MAJOR, u, (lapack_int)m, (lapack_int)n, alpha, beta, A, ld32(lda));
}

static const ooc_ops_t cpu_ops = {
    .name = "cpu",
    .gemm = cpu_gemm,
    .trsm = cpu_trsm,
    .getrf = cpu_getrf,
    .getri = cpu_getri,
    .laswp = cpu_laswp,
    .colabs = cpu_colabs,
    .syrk = cpu_syrk,
    .potrf = cpu_potrf,
    .potri = cpu_potri,
    .threads = cpu_threads,
    .trtri = cpu_trtri,
    .geqrf = cpu_geqrf,
    .ormqr = cpu_ormqr,
    .laset = cpu_laset,
};

const ooc_ops_t *ooc_ops_cpu(void) { return &cpu_ops; }

char *openblas_get_corename(void);

const char *ooc_ops_cpu_better_core(const char **chosen) {
  static const char *generic[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                  "Atom", "Katmai", "Coppermine", "Northwood", "Banias",
                                  "Sandybridge", "Barcelona", "Opteron", "Bobcat"};
  const char *test = getenv("OOCSOLVE_TEST_BLAS_CORE");
  const char *core = test && *test ? test : openblas_get_corename();
  if (chosen) *chosen = core;
#if defined(__x86_64__) && defined(__GNUC__)
  /* (__builtin_cpu_supports asks the OS too: AVX state saved across switches) */
  if (!core || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
  for (size_t k = 0; k < sizeof generic / sizeof generic[0]; k++)
    if (!strcasecmp(core, generic[k])) return __builtin_cpu_supports("avx512f") ? "SkylakeX"
                                                                                : "Haswell";
#endif
  return NULL;
}

int ooc_ops_cpu_untuned(char *msg, size_t cap) {
  const char *core, *want = ooc_ops_cpu_better_core(&core);
  if (cap) msg[0] = 0;
  if (!want) return 0;
  snprintf(msg, cap, "the host BLAS runs OpenBLAS's %s kernels on a CPU with %s: host products "
           "(the check's among them) run several times below this CPU's speed; set "
           "OPENBLAS_CORETYPE=%s in the environment", core,
           strcmp(want, "SkylakeX") ? "AVX2 and FMA" : "AVX-512", want);
  return 1;
}
