/*
 * test_exec.c: the executor interface (src/exec/exec.h) and the ring (src/exec/ring.h), as a
 * conformance suite every executor must pass. Each test runs on every executor the factory table
 * below can make here (the host executor over the ref and cpu tables; a backend added to the
 * table is skipped where it cannot start, e.g. CUDA without a GPU).
 *
 * Operations are compared with the ops table run directly on host copies: bit for bit on a host
 * executor (the same kernels), within a few ulps per flop on a device (other kernels round
 * differently). Queues, events, the budget, buffers left at destroy, allocation faults and the
 * ring's order and error path are exercised; a schedule bug here (a missing wait) corrupts a
 * result, it does not pass by luck: the host executor runs queues on real threads.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec.h"
#include "exec/ring.h"
#include "testutil.h"

#define AT(M, ld, i, j) ((M)[(size_t)(i) + (size_t)(j) * (size_t)(ld)])

typedef struct factory {
  const char *name;
  ooc_status_t (*make)(ooc_ctx_t *ctx, int nqueues, int64_t budget, ooc_exec_t **out);
  int exact; /* results bit-identical to ops_cpu on host data */
} factory_t;

static ooc_status_t mk_ref(ooc_ctx_t *ctx, int nq, int64_t budget, ooc_exec_t **out) {
  return ex_host_create(ctx, ooc_ops_ref(), nq, budget, out);
}
static ooc_status_t mk_cpu(ooc_ctx_t *ctx, int nq, int64_t budget, ooc_exec_t **out) {
  return ex_host_create(ctx, ooc_ops_cpu(), nq, budget, out);
}

static ooc_status_t mk_strict(ooc_ctx_t *ctx, int nq, int64_t budget, ooc_exec_t **out) {
  return ex_host_create_strict(ctx, ooc_ops_cpu(), nq, budget, 20, out);
}
#ifdef OOC_HAVE_CUDA
#include "exec/cuda/exec_cuda.h"
/* The CUDA executor on device 0 (fails to create, and is skipped, without a GPU). A budget is
 * what ex_alloc may hand out: the executor's own overhead (a 1 MiB cuBLAS workspace per queue
 * here) comes on top of it. */
static ooc_status_t mk_cuda(ooc_ctx_t *ctx, int nq, int64_t budget, ooc_exec_t **out) {
  ex_cuda_config_t c = {.device = 0, .nqueues = nq, .blas_ws = 1 << 20};
  if (budget > 0) c.gpu_mem = budget + ex_cuda_overhead(&c);
  return ex_cuda_create(ctx, &c, out);
}
#endif

static const factory_t FACTORIES[] = {
    {"host-ref", mk_ref, 0},
    {"host-cpu", mk_cpu, 1},
    {"host-strict", mk_strict, 1},
#ifdef OOC_HAVE_CUDA
    {"cuda", mk_cuda, 0},
#endif
};
#define NFACT ((int)(sizeof FACTORIES / sizeof FACTORIES[0]))

/* The ops table a factory's results are compared with. */
static const ooc_ops_t *oracle(const factory_t *f) {
  return f->make == mk_ref ? ooc_ops_ref() : ooc_ops_cpu();
}

/* The strict host executor turns the two schedule bugs a GPU punishes into wrong results here:
 * reading a get's destination before the sync (NaN), and refilling a staging buffer before the
 * put that reads it has run (the device gets the new data). The correct schedule gets neither. */
static void t_strict(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  /* Operations start 200 ms late: the window in which a read before the sync sees the poisoned
   * destination, long enough that a loaded machine's scheduler cannot close it (with 2 ms and a
   * fixed 1 ms sleep the check failed on a busy 2-core machine). */
  CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 2, 0, 200000, &e) == OOC_OK);
  CU_ASSERT(!e->unified);
  double *h, *d;
  CU_ASSERT_FATAL(ex_host_alloc(e, 64 * sizeof(double), &h) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e, 64 * sizeof(double), &d) == OOC_OK);
  ex_event_t *ev;
  CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
  for (int i = 0; i < 64; i++) h[i] = 1.0;
  CU_ASSERT(ex_put(e, 0, 64, 1, h, 64, d, 64) == OOC_OK);
  CU_ASSERT(ex_record(e, 0, ev) == OOC_OK);
  CU_ASSERT(ex_query(e, ev) == 0); /* still "on the device" */
  for (int i = 0; i < 64; i++) h[i] = 2.0; /* the bug: refilled before the put has run */
  CU_ASSERT(ex_sync(e, ev) == OOC_OK);
  CU_ASSERT(ex_query(e, ev) == 1);
  CU_ASSERT(ex_get(e, 1, 64, 1, d, 64, h, 64) == OOC_OK);
  /* the bug: read before the sync. The get poisons its destination when it starts and fills it
   * 200 ms later; wait (at most 10 s) until it has started, then read. */
  volatile double *hv = h;
  for (int k = 0; k < 100000 && !isnan(hv[63]); k++)
    nanosleep(&(struct timespec){0, 100000L}, NULL);
  CU_ASSERT(isnan(hv[0]) && isnan(hv[63]));
  CU_ASSERT(ex_record(e, 1, ev) == OOC_OK);
  CU_ASSERT(ex_sync(e, ev) == OOC_OK);
  CU_ASSERT(h[0] == 2.0 && h[63] == 2.0); /* the device got the refilled data */
  ex_event_destroy(e, ev);
  ex_destroy(e);
  tu_ctx_done(ctx);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double urand(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

static double *rmat(int64_t m, int64_t n, int64_t ld) {
  (void)m; /* every row of ld is filled: padding rows hold data too */
  double *A = malloc((size_t)(ld * (n > 0 ? n : 1)) * sizeof *A);
  for (int64_t i = 0; i < ld * n; i++) A[i] = urand();
  return A;
}

/* max |X - Y| / (scale * k * eps) over m x n; 0 means identical. */
static double diff(int64_t m, int64_t n, const double *X, int64_t ldx, const double *Y,
                   int64_t ldy, double scale, double k) {
  double d = 0.0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double e = fabs(AT(X, ldx, i, j) - AT(Y, ldy, i, j));
      if (!(e <= d)) d = e; /* NaN wins */
    }
  return d / (scale * (k > 1 ? k : 1) * DBL_EPSILON);
}

static void qsync(ooc_exec_t *e, int q) {
  ex_event_t *ev;
  CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
  CU_ASSERT(ex_record(e, q, ev) == OOC_OK);
  CU_ASSERT(ex_sync(e, ev) == OOC_OK);
  ex_event_destroy(e, ev);
}

/* Upload host h (m x n, ld) into a new device buffer of the same ld; returns once h may change
 * (a put reads the host memory when it runs, not when it is enqueued). */
static double *up(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *h, int64_t ld) {
  double *d = NULL;
  CU_ASSERT_FATAL(ex_alloc(e, (size_t)(ld * n) * sizeof(double), &d) == OOC_OK);
  CU_ASSERT(ex_put(e, q, m, n, h, ld, d, ld) == OOC_OK);
  qsync(e, q);
  return d;
}

static void down(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *d, int64_t ld,
                 double *h) {
  CU_ASSERT(ex_get(e, q, m, n, d, ld, h, ld) == OOC_OK);
  qsync(e, q);
}

#define CHECK_CLOSE(f, d, tol)                                                                     \
  do {                                                                                             \
    double d_ = (d);                                                                               \
    int ok_ = (f)->exact ? d_ == 0.0 : d_ <= (tol);                                                \
    CU_ASSERT(ok_);                                                                                \
    if (!ok_)                                                                                      \
      fprintf(stderr, "  %s line %d: difference %.3g (tolerance %g)\n", (f)->name, __LINE__, d_,   \
              (double)(tol));                                                                      \
  } while (0)

/* ---- BLAS 3 and copies ------------------------------------------------------------------- */

static void blas_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 2, 0, &e) == OOC_OK);
  const ooc_ops_t *o = oracle(f);
  static const int64_t S[][3] = {{1, 1, 1}, {17, 5, 9}, {64, 64, 64}, {100, 37, 130}, {0, 3, 4}};
  for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
    int64_t m = S[c][0], n = S[c][1], k = S[c][2], ld = m + k + 3;
    double *A = rmat(ld, k + m, ld), *B = rmat(ld, n + k + m, ld), *C = rmat(ld, n + m, ld);
    double *R = malloc((size_t)(ld * (n + m + 1)) * sizeof *R);
    double *dA = up(e, 0, ld, k + m, A, ld), *dB = up(e, 0, ld, n + k + m, B, ld);
    double *dC = up(e, 0, ld, n + m, C, ld);
    /* gemm NN and TN */
    CU_ASSERT(ex_gemm(e, 0, 'N', 'N', m, n, k, -1.5, dA, ld, dB, ld, 0.5, dC, ld) == OOC_OK);
    o->gemm('N', 'N', m, n, k, -1.5, A, ld, B, ld, 0.5, C, ld);
    CU_ASSERT(ex_gemm(e, 0, 'T', 'N', m, n, k, 1.0, dA, ld, dB, ld, 1.0, dC, ld) == OOC_OK);
    o->gemm('T', 'N', m, n, k, 1.0, A, ld, B, ld, 1.0, C, ld);
    /* syrk lower into the top-left n x n */
    CU_ASSERT(ex_syrk(e, 0, 'L', 'N', n, k, 2.0, dA, ld, 1.0, dC, ld) == OOC_OK);
    o->syrk('L', 'N', n, k, 2.0, A, ld, 1.0, C, ld);
    down(e, 0, ld, n + m, dC, ld, R);
    CHECK_CLOSE(f, diff(m > n ? m : n, n, R, ld, C, ld, 8.0, (double)k), 4.0);
    /* trsm on a well-conditioned triangle: A's diagonal made dominant */
    for (int64_t i = 0; i < m; i++) AT(A, ld, i, i) = 4.0 + m;
    /* and the strict upper part small: the second trsm's unit triangle is then well conditioned
     * too (a random one's inverse grows exponentially with m, and a device's other rounding
     * with it: 14x the tolerance was seen on an H100 at m = 100) */
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < j; i++) AT(A, ld, i, j) /= (double)(m + 1);
    ex_free(e, dA);
    dA = up(e, 1, ld, k + m, A, ld);
    ex_event_t *ev;
    CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
    CU_ASSERT(ex_record(e, 1, ev) == OOC_OK);
    CU_ASSERT(ex_wait(e, 0, ev) == OOC_OK); /* queue 0 reads what queue 1 uploaded */
    CU_ASSERT(ex_trsm(e, 0, 'L', 'L', 'N', 'N', m, n, 1.0, dA, ld, dC, ld) == OOC_OK);
    o->trsm('L', 'L', 'N', 'N', m, n, 1.0, A, ld, C, ld);
    CU_ASSERT(ex_trsm(e, 0, 'R', 'U', 'T', 'U', m, m < n ? m : n, -1.0, dA, ld, dC, ld) == OOC_OK);
    o->trsm('R', 'U', 'T', 'U', m, m < n ? m : n, -1.0, A, ld, C, ld);
    /* transpose, copy, fill */
    CU_ASSERT(ex_transpose(e, 0, m, n, dC, ld, dB, ld) == OOC_OK);
    down(e, 0, ld, n + m, dC, ld, R);
    CHECK_CLOSE(f, diff(m, n, R, ld, C, ld, 8.0, (double)(m + k)), 4.0);
    double *T = malloc((size_t)(ld * (n + k + m + 1)) * sizeof *T); /* dB: n x m after it */
    down(e, 0, ld, n + k + m, dB, ld, T);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) CU_ASSERT(AT(T, ld, j, i) == AT(R, ld, i, j));
    CU_ASSERT(ex_fill(e, 0, m, n, 3.25, dC, ld) == OOC_OK);
    CU_ASSERT(ex_copy(e, 0, m, n, dC, ld, dB, ld) == OOC_OK);
    down(e, 0, ld, n, dB, ld, T);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) CU_ASSERT(AT(T, ld, i, j) == 3.25);
    ex_event_destroy(e, ev);
    ex_free(e, dA);
    ex_free(e, dB);
    ex_free(e, dC);
    free(A), free(B), free(C), free(R), free(T);
  }
  CU_ASSERT(e->dev_bytes == 0);
  CU_ASSERT(ex_finish(e) == OOC_OK);
  ex_destroy(e);
  tu_ctx_done(ctx);
}

/* ---- mirror: the upper triangle from a lower one, or zeros -------------------------------- */

static void mirror_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 2, 0, &e) == OOC_OK);
  static const int64_t N[] = {1, 5, 33, 70, 100};
  for (size_t c = 0; c < sizeof N / sizeof N[0]; c++) {
    int64_t w = N[c], ld = w + 3, lds = w + 5;
    /* column ranges: all, and a middle block not aligned to the kernel's 32 x 32 tiles */
    int64_t rg[2][2] = {{0, w}, {w / 3, w / 3 + (w + 1) / 2}};
    for (int r = 0; r < 2; r++)
      for (int mode = 0; mode < 3; mode++) { /* 0: zero; 1: from S; 2: from A itself */
        int64_t j0 = rg[r][0], j1 = rg[r][1] < w ? rg[r][1] : w;
        double *A = rmat(ld, w, ld), *S = rmat(lds, w, lds), *R = malloc((size_t)(ld * w) * sizeof *R);
        double *dA = up(e, 0, ld, w, A, ld), *dS = up(e, 1, lds, w, S, lds);
        ex_event_t *ev;
        CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
        CU_ASSERT(ex_record(e, 1, ev) == OOC_OK);
        CU_ASSERT(ex_wait(e, 0, ev) == OOC_OK);
        CU_ASSERT(ex_mirror(e, 0, j0, j1, mode != 0, mode == 2 ? dA : dS, mode == 2 ? ld : lds,
                            dA, ld) == OOC_OK);
        down(e, 0, ld, w, dA, ld, R);
        int bad = 0;
        for (int64_t j = 0; j < w; j++)
          for (int64_t i = 0; i < ld; i++) {
            double want = AT(A, ld, i, j); /* untouched outside the range and on/below the diagonal */
            if (j >= j0 && j < j1 && i < j)
              want = mode == 0 ? 0.0 : mode == 1 ? AT(S, lds, j, i) : AT(A, ld, j, i);
            bad += AT(R, ld, i, j) != want;
          }
        CU_ASSERT(bad == 0);
        if (bad) fprintf(stderr, "  %s: mirror w=%lld [%lld, %lld) mode %d: %d wrong\n", f->name,
                         (long long)w, (long long)j0, (long long)j1, mode, bad);
        ex_event_destroy(e, ev);
        ex_free(e, dA);
        ex_free(e, dS);
        free(A), free(S), free(R);
      }
  }
  CU_ASSERT(ex_finish(e) == OOC_OK);
  ex_destroy(e);
  tu_ctx_done(ctx);
}

/* ---- factorizations ---------------------------------------------------------------------- */

static void lapack_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, 0, &e) == OOC_OK);
  const ooc_ops_t *o = oracle(f);
  static const int64_t N[] = {1, 2, 7, 64, 129};
  for (size_t c = 0; c < sizeof N / sizeof N[0]; c++) {
    int64_t n = N[c], m = n + 13, ld = m + 2;
    /* getrf of a tall block: pivots as LAPACK's, factors within rounding */
    double *A = rmat(ld, n, ld), *R = malloc((size_t)(ld * n) * sizeof *R);
    int64_t *piv = malloc((size_t)n * sizeof *piv), *piv2 = malloc((size_t)n * sizeof *piv2);
    int64_t info = -1, info2;
    double *dA = up(e, 0, m, n, A, ld);
    CU_ASSERT(ex_getrf(e, 0, m, n, dA, ld, piv, &info) == OOC_OK);
    info2 = o->getrf(m, n, A, ld, piv2);
    down(e, 0, m, n, dA, ld, R);
    CU_ASSERT(info == info2);
    CU_ASSERT(memcmp(piv, piv2, (size_t)n * sizeof *piv) == 0);
    CHECK_CLOSE(f, diff(m, n, R, ld, A, ld, 4.0, (double)n), 8.0);
    /* laswp of other columns with those pivots, then getri and trtri of the square part */
    double *B = rmat(ld, 5, ld), *RB = malloc((size_t)(ld * 5) * sizeof *RB);
    double *dB = up(e, 0, m, 5, B, ld);
    CU_ASSERT(ex_laswp(e, 0, 5, dB, ld, 0, n, piv) == OOC_OK);
    memset(piv, 0xff, (size_t)n * sizeof *piv); /* copied at enqueue: changing it is harmless */
    o->laswp(5, B, ld, 0, n, piv2);
    down(e, 0, m, 5, dB, ld, RB);
    CU_ASSERT(diff(m, 5, RB, ld, B, ld, 1.0, 1.0) == 0.0); /* a permutation is exact */
    double *U = malloc((size_t)(ld * n) * sizeof *U);
    memcpy(U, A, (size_t)(ld * n) * sizeof *U);
    CU_ASSERT(ex_trtri(e, 0, 'U', 'N', n, dA, ld, &info) == OOC_OK);
    CU_ASSERT(o->trtri('U', 'N', n, U, ld) == 0);
    /* the oracle against the definition: U0 U^-1 = I (U0: the factor before the inverse) */
    double worst = 0.0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i <= j; i++) {
        double s = 0.0;
        for (int64_t l = i; l <= j; l++) s += AT(A, ld, i, l) * AT(U, ld, l, j);
        double r = fabs(s - (i == j));
        if (!(r <= worst)) worst = r;
      }
    CU_ASSERT(worst < 1e-8);
    CU_ASSERT(ex_trtri(e, 0, 'L', 'U', n, dA, ld, &info2) == OOC_OK);
    CU_ASSERT(o->trtri('L', 'U', n, U, ld) == 0);
    down(e, 0, m, n, dA, ld, R);
    CU_ASSERT(info == 0 && info2 == 0);
    CHECK_CLOSE(f, diff(n, n, R, ld, U, ld, 1e3, (double)n), 8.0);
    /* potrf + potri of an SPD matrix, and a failing minor reported through info */
    double *S = malloc((size_t)(n * n) * sizeof *S);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) AT(S, n, i, j) = (i == j ? n + 1.0 : 0.0) + 0.5 / (1 + i + j);
    double *dS = up(e, 0, n, n, S, n);
    CU_ASSERT(ex_potrf(e, 0, n, dS, n, &info) == OOC_OK);
    CU_ASSERT(ex_potri(e, 0, n, dS, n, &info2) == OOC_OK);
    CU_ASSERT(o->potrf(n, S, n) == 0 && o->potri(n, S, n) == 0);
    double *RS = malloc((size_t)(n * n) * sizeof *RS);
    down(e, 0, n, n, dS, n, RS);
    CU_ASSERT(info == 0 && info2 == 0);
    for (int64_t j = 0; j < n; j++) /* only the lower triangle is defined */
      for (int64_t i = 0; i < j; i++) AT(RS, n, i, j) = AT(S, n, i, j) = 0.0;
    CHECK_CLOSE(f, diff(n, n, RS, n, S, n, 1.0, (double)n), 8.0);
    for (int64_t i = 0; i < n * n; i++) S[i] = 0.0;
    for (int64_t i = 0; i < n; i++) AT(S, n, i, i) = i == n / 2 ? -1.0 : 1.0;
    CU_ASSERT(ex_put(e, 0, n, n, S, n, dS, n) == OOC_OK);
    qsync(e, 0);
    CU_ASSERT(ex_potrf(e, 0, n, dS, n, &info) == OOC_OK);
    CU_ASSERT(ex_finish(e) == OOC_OK);
    CU_ASSERT(info == n / 2 + 1);
    /* getri: the inverse of a diagonally dominant LU */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) AT(S, n, i, j) = (i == j ? 3.0 : 0.0) + urand() / n;
    memcpy(RS, S, (size_t)(n * n) * sizeof *S);
    CU_ASSERT(ex_put(e, 0, n, n, S, n, dS, n) == OOC_OK);
    qsync(e, 0);
    CU_ASSERT(ex_getri(e, 0, n, dS, n, &info) == OOC_OK);
    CU_ASSERT(o->getri(n, RS, n) == 0);
    down(e, 0, n, n, dS, n, S);
    CU_ASSERT(info == 0);
    CHECK_CLOSE(f, diff(n, n, S, n, RS, n, 1.0, (double)n), 8.0);
    ex_free(e, dA), ex_free(e, dB), ex_free(e, dS);
    free(A), free(R), free(piv), free(piv2), free(B), free(RB), free(U), free(S), free(RS);
  }
  ex_destroy(e);
  tu_ctx_done(ctx);
}

/* Leave exactly ws bytes of e's budget free of ex_alloc (in whole 4 KiB pages, what ex_alloc
 * rounds to); the filler, or NULL when nothing was left to fill. */
static double *leave_free(ooc_exec_t *e, int64_t ws) {
  double *fill = NULL;
  int64_t rest = (e->budget - e->dev_bytes - ws) / 4096 * 4096;
  if (rest > 0) CU_ASSERT_FATAL(ex_alloc(e, (size_t)rest, &fill) == OOC_OK);
  return fill;
}
/* The operation that ran in what leave_free left: it succeeded with info 0; the filler freed. */
static void ran_within(ooc_exec_t *e, ooc_status_t st, const int64_t *info, double *fill) {
  CU_ASSERT(st == OOC_OK);
  CU_ASSERT(ex_finish(e) == OOC_OK);
  CU_ASSERT(*info == 0);
  if (fill) ex_free(e, fill);
}

/* ex_getrf_ws, ex_getri_ws, ex_potrf_ws and ex_potri_ws: with exactly that much of a 64 MiB
 * budget left free of ex_alloc, a getrf of the block, a getri, a potrf or a potri runs (the CUDA
 * executor's workspaces come from the same device memory); the host's are 0. */
static void getrf_ws_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, (int64_t)64 << 20, &e) == OOC_OK);
  static const int64_t S[][2] = {{1, 1}, {300, 64}, {2000, 256}};
  for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
    int64_t m = S[c][0], n = S[c][1], ws = ex_getrf_ws(e, m, n);
    CU_ASSERT(ws >= 0);
    if (e->kind == EX_HOST) CU_ASSERT_EQUAL(ws, 0);
    double *A = rmat(m, n, m), *dA = up(e, 0, m, n, A, m), *fill = leave_free(e, ws);
    int64_t *ipiv = malloc((size_t)n * sizeof *ipiv), info = -1;
    ran_within(e, ex_getrf(e, 0, m, n, dA, m, ipiv, &info), &info, fill);
    ex_free(e, dA);
    free(A), free(ipiv);
  }
  static const int64_t N[] = {1, 300, 1100}; /* ex_getri_ws the same way (1100: three blocks) */
  for (size_t c = 0; c < sizeof N / sizeof N[0]; c++) {
    int64_t n = N[c], ws = ex_getri_ws(e, n);
    CU_ASSERT(ws >= 0);
    if (e->kind == EX_HOST) CU_ASSERT_EQUAL(ws, 0);
    double *A = rmat(n, n, n);
    for (int64_t j = 0; j < n; j++) AT(A, n, j, j) += (double)n; /* a regular L\U */
    double *dA = up(e, 0, n, n, A, n), *fill = leave_free(e, ws);
    int64_t info = -1;
    ran_within(e, ex_getri(e, 0, n, dA, n, &info), &info, fill);
    ex_free(e, dA);
    free(A);
  }
  ex_destroy(e);
  /* ex_potrf_ws and ex_potri_ws the same way, with a leading dimension wider than n as the
   * Cholesky's panel has. A queue keeps the largest workspace it was given, so each case gets a
   * fresh executor, and potri (after the potrf that makes its factor) the larger of the two:
   * what a plan keeps free for the pair (chol_device_bytes) */
  static const int64_t P[][2] = {{1, 1}, {300, 300}, {700, 1100}};
  for (size_t c = 0; c < sizeof P / sizeof P[0]; c++) {
    int64_t n = P[c][0], ld = P[c][1];
    for (int inv = 0; inv < 2; inv++) {
      CU_ASSERT_FATAL(f->make(ctx, 1, (int64_t)64 << 20, &e) == OOC_OK);
      int64_t wf = ex_potrf_ws(e, n, ld), ws = inv ? ooc_max64(wf, ex_potri_ws(e, n, ld)) : wf;
      CU_ASSERT(wf >= 0 && ws >= 0);
      if (e->kind == EX_HOST) CU_ASSERT_EQUAL(ws, 0);
      double *A = rmat(ld, n, ld);
      for (int64_t j = 0; j < n; j++) AT(A, ld, j, j) += (double)(2 * n); /* SPD in its lower part */
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < j; i++) AT(A, ld, i, j) = AT(A, ld, j, i);
      double *dA = up(e, 0, ld, n, A, ld);
      int64_t info = -1;
      if (inv) { /* potri takes a factor: potrf first */
        CU_ASSERT(ex_potrf(e, 0, n, dA, ld, &info) == OOC_OK);
        CU_ASSERT(ex_finish(e) == OOC_OK && info == 0);
      }
      double *fill = leave_free(e, ws);
      info = -1;
      ran_within(e, inv ? ex_potri(e, 0, n, dA, ld, &info) : ex_potrf(e, 0, n, dA, ld, &info),
                 &info, fill);
      ex_free(e, dA);
      free(A);
      ex_destroy(e);
    }
  }
  tu_ctx_done(ctx);
}

/* getrf without pivoting (ipiv NULL): the same factors as ooc_getrf_nopiv over the oracle table,
 * and those factors against the definition (L U = A, diagonally dominant so no pivoting is
 * stable); a tall block as LU's panel is, and an exact zero leading pivot reported as info 1. */
static void nopiv_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, 0, &e) == OOC_OK);
  const ooc_ops_t *o = oracle(f);
  static const int64_t N[] = {1, 2, 7, 9, 64, 129};
  for (size_t c = 0; c < sizeof N / sizeof N[0]; c++) {
    int64_t n = N[c], m = n + 13, ld = m + 2;
    double *A = rmat(ld, n, ld), *R = malloc((size_t)(ld * n) * sizeof *R);
    double *A0 = malloc((size_t)(ld * n) * sizeof *A0);
    for (int64_t j = 0; j < n; j++) AT(A, ld, j, j) += (double)m;
    memcpy(A0, A, (size_t)(ld * n) * sizeof *A);
    int64_t info = -1;
    double *dA = up(e, 0, m, n, A, ld);
    CU_ASSERT(ex_getrf(e, 0, m, n, dA, ld, NULL, &info) == OOC_OK);
    int64_t info2 = ooc_getrf_nopiv(o, m, n, A, ld);
    down(e, 0, m, n, dA, ld, R);
    CU_ASSERT(info == 0 && info2 == 0);
    CHECK_CLOSE(f, diff(m, n, R, ld, A, ld, (double)m, (double)n), 8.0);
    double worst = 0.0; /* (L U)[i, j] = sum_{l <= min(i, j)} L[i, l] U[l, j], L unit */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double s = 0.0;
        for (int64_t l = 0; l <= (i < j ? i : j); l++)
          s += (l == i ? 1.0 : AT(A, ld, i, l)) * AT(A, ld, l, j);
        double r = fabs(s - AT(A0, ld, i, j));
        if (!(r <= worst)) worst = r;
      }
    CU_ASSERT(worst < 1e-12 * m * m);
    AT(A0, ld, 0, 0) = 0.0; /* a zero leading entry: no pivoting stops at column 0 */
    CU_ASSERT(ex_put(e, 0, m, n, A0, ld, dA, ld) == OOC_OK);
    qsync(e, 0);
    CU_ASSERT(ex_getrf(e, 0, m, n, dA, ld, NULL, &info) == OOC_OK);
    CU_ASSERT(ex_finish(e) == OOC_OK);
    CU_ASSERT(info == 1);
    ex_free(e, dA);
    free(A), free(A0), free(R);
  }
  ex_destroy(e);
  tu_ctx_done(ctx);
}

/* ---- queues and events ------------------------------------------------------------------- */

/* A chain across queues: q0 uploads, q1 waits and doubles, q2 waits and adds; many rounds in
 * flight at once. Without the waits the later queues would read stale data. */
static void events_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 3, 0, &e) == OOC_OK);
  int nq = e->nqueues;
  CU_ASSERT(nq >= 1);
  enum { R = 40, M = 300 };
  double *h, *d, *one;
  CU_ASSERT_FATAL(ex_host_alloc(e, (size_t)(R * M) * sizeof(double), &h) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e, (size_t)(R * M) * sizeof(double), &d) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e, sizeof(double), &one) == OOC_OK);
  CU_ASSERT(ex_fill(e, 0, 1, 1, 1.0, one, 1) == OOC_OK);
  ex_event_t *ev[3];
  for (int i = 0; i < 3; i++) CU_ASSERT_FATAL(ex_event_create(e, &ev[i]) == OOC_OK);
  CU_ASSERT(ex_sync(e, ev[0]) == OOC_OK); /* never recorded: complete */
  for (int r = 0; r < R; r++)
    for (int i = 0; i < M; i++) h[r * M + i] = r + i;
  int q1 = 1 % nq, q2 = 2 % nq;
  for (int r = 0; r < R; r++) {
    double *col = d + r * M;
    CU_ASSERT(ex_put(e, 0, M, 1, h + r * M, M, col, M) == OOC_OK);
    CU_ASSERT(ex_record(e, 0, ev[0]) == OOC_OK);
    CU_ASSERT(ex_wait(e, q1, ev[0]) == OOC_OK);
    /* col = col * [1] + col: doubled on q1, then again on q2 */
    CU_ASSERT(ex_gemm(e, q1, 'N', 'N', M, 1, 1, 1.0, col, M, one, 1, 1.0, col, M) == OOC_OK);
    CU_ASSERT(ex_record(e, q1, ev[1]) == OOC_OK);
    CU_ASSERT(ex_wait(e, q2, ev[1]) == OOC_OK);
    CU_ASSERT(ex_gemm(e, q2, 'N', 'N', M, 1, 1, 1.0, col, M, one, 1, 1.0, col, M) == OOC_OK);
  }
  CU_ASSERT(ex_record(e, q2, ev[2]) == OOC_OK);
  CU_ASSERT(ex_wait(e, 0, ev[2]) == OOC_OK);
  CU_ASSERT(ex_get(e, 0, M, R, d, M, h, M) == OOC_OK);
  CU_ASSERT(ex_record(e, 0, ev[0]) == OOC_OK);
  CU_ASSERT(ex_sync(e, ev[0]) == OOC_OK);
  int bad = 0;
  for (int r = 0; r < R; r++)
    for (int i = 0; i < M; i++) bad += h[r * M + i] != 4.0 * (r + i); /* doubled twice */
  CU_ASSERT(bad == 0);
  for (int i = 0; i < 3; i++) ex_event_destroy(e, ev[i]);
  CU_ASSERT(ex_finish(e) == OOC_OK);
  ex_destroy(e); /* frees d, one and h: destroy owns what is left */
  tu_ctx_done(ctx);
}

/* ---- memory: budget, leftovers, faults --------------------------------------------------- */

static void memory_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, 1 << 20, &e) == OOC_OK);
  double *a = NULL, *b = NULL, *c = NULL;
  CU_ASSERT(ex_alloc(e, 600 << 10, &a) == OOC_OK);
  CU_ASSERT(ex_alloc(e, 600 << 10, &b) == OOC_ERR_NOMEM);
  CU_ASSERT(b == NULL);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "budget") != NULL);
  ooc_clear_error(ctx);
  CU_ASSERT(ex_alloc(e, 400 << 10, &b) == OOC_OK);
  CU_ASSERT(e->dev_bytes == (1000 << 10));
  ex_free(e, a);
  CU_ASSERT(e->dev_bytes == (400 << 10));
  CU_ASSERT(ex_alloc(e, 600 << 10, &a) == OOC_OK);
  CU_ASSERT(e->stats.dev_peak == (1000 << 10));
  CU_ASSERT(ex_host_alloc(e, 1 << 16, &c) == OOC_OK);
  ex_destroy(e); /* a, b and c still allocated: destroy frees them (tu_ctx_done checks) */
  tu_ctx_done(ctx);

  /* A host allocation that fails at each point of creating an executor and a ring: a clean
   * NOMEM and nothing leaked (host executors: ooc_malloc is their allocator). */
  if (!strncmp(f->name, "host", 4))
    for (int64_t nth = 1; nth <= 20; nth++) {
      ctx = tu_ctx();
      ooc_fault_arm(ctx, OOC_FAULT_ALLOC, nth, 0, 0);
      ooc_status_t st = f->make(ctx, 2, 0, &e);
      ring_t *r = NULL;
      if (st == OOC_OK) {
        st = ring_create(e, 3, 10, 2, &r);
        ring_destroy(r);
        ex_destroy(e);
      }
      CU_ASSERT(st == OOC_OK || st == OOC_ERR_NOMEM);
      int64_t hit = ooc_fault_injected(ctx, OOC_FAULT_ALLOC);
      CU_ASSERT(hit ? st == OOC_ERR_NOMEM : st == OOC_OK);
      tu_ctx_done(ctx);
    }
}

/* ---- the ring ---------------------------------------------------------------------------- */

typedef struct rt {
  ooc_exec_t *e;
  double *dev;       /* one device column per slot */
  double *store;     /* nitems columns of ld: the "tile store" */
  int64_t ld, rows;
  int64_t next_put;  /* items are put in order */
  int64_t fail_at;   /* work fails at this item (-1: never) */
  int order_ok;
} rt_t;

static ooc_status_t rt_take(void *u, int64_t q, double *slot, int64_t ld) {
  rt_t *t = u;
  memcpy(slot, t->store + q * t->ld, (size_t)t->rows * sizeof(double));
  (void)ld;
  return OOC_OK;
}

/* On the device: x = 3 x + 1, alternating between the queues. */
static ooc_status_t rt_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  rt_t *t = u;
  if (q == t->fail_at) return OOC_FAIL(t->e->ctx, OOC_ERR_IO, "item %lld refused", (long long)q);
  int qu = (int)(q % t->e->nqueues);
  double *d = t->dev + s * ld;
  OOC_TRY(ex_put(t->e, qu, t->rows, 1, slot, ld, d, ld));
  OOC_TRY(ex_gemm(t->e, qu, 'N', 'N', t->rows, 1, 1, 2.0, d, ld, t->dev + 8 * ld, 1, 1.0, d, ld));
  OOC_TRY(ex_get(t->e, qu, t->rows, 1, d, ld, slot, ld));
  *last = qu;
  return OOC_OK;
}

static ooc_status_t rt_put(void *u, int64_t q, double *slot, int64_t ld) {
  rt_t *t = u;
  (void)ld;
  if (q != t->next_put) t->order_ok = 0;
  t->next_put = q + 1;
  memcpy(t->store + q * t->ld, slot, (size_t)t->rows * sizeof(double));
  return OOC_OK;
}

static void ring_on(const factory_t *f) {
  for (int K = 1; K <= 4; K++)
    for (int fail = 0; fail < 2; fail++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_exec_t *e;
      CU_ASSERT_FATAL(f->make(ctx, 2, 0, &e) == OOC_OK);
      int64_t rows = 1000, ld = 1000, nitems = 23;
      rt_t t = {.e = e, .ld = ld, .rows = rows, .fail_at = fail ? 9 : -1, .order_ok = 1};
      t.store = malloc((size_t)(ld * nitems) * sizeof(double));
      for (int64_t i = 0; i < ld * nitems; i++) t.store[i] = (double)(i % 977);
      CU_ASSERT_FATAL(ex_alloc(e, (size_t)(9 * ld) * sizeof(double), &t.dev) == OOC_OK);
      CU_ASSERT(ex_fill(e, 0, 1, 1, 1.0, t.dev + 8 * ld, 1) == OOC_OK); /* the 1 x 1 "one" */
      ex_event_t *ev;
      CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
      CU_ASSERT(ex_record(e, 0, ev) == OOC_OK);
      for (int qq = 1; qq < e->nqueues; qq++) CU_ASSERT(ex_wait(e, qq, ev) == OOC_OK);
      ring_t *r;
      CU_ASSERT_FATAL(ring_create(e, K, ld, 1, &r) == OOC_OK);
      ring_ops_t ops = {rt_take, rt_work, rt_put};
      ooc_status_t st = ring_run(r, nitems, &ops, &t);
      int64_t done = fail ? 9 : nitems; /* items before the failure are put, the rest are not */
      CU_ASSERT(fail ? st == OOC_ERR_IO : st == OOC_OK);
      CU_ASSERT(t.order_ok);
      CU_ASSERT(r->stats.items <= done);
      CU_ASSERT(fail || r->stats.items == nitems);
      int bad = 0;
      for (int64_t q = 0; q < nitems; q++)
        for (int64_t i = 0; i < rows; i++) {
          double x = (double)((q * ld + i) % 977);
          double want = q < r->stats.items ? 3.0 * x : x;
          bad += t.store[q * ld + i] != want;
        }
      CU_ASSERT(bad == 0);
      ring_destroy(r);
      ex_event_destroy(e, ev);
      ex_destroy(e);
      free(t.store);
      tu_ctx_done(ctx);
    }
}

/* ---- drivers ------------------------------------------------------------------------------ */

static void for_each(void (*fn)(const factory_t *)) {
  for (int i = 0; i < NFACT; i++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_exec_t *e = NULL;
    ooc_status_t st = FACTORIES[i].make(ctx, 1, 0, &e);
    ex_destroy(e);
    tu_ctx_done(ctx);
    if (st != OOC_OK) {
      printf("  [%s: not available here, skipped]\n", FACTORIES[i].name);
      continue;
    }
    fn(&FACTORIES[i]);
  }
}

/* ---- CUDA only ---------------------------------------------------------------------------- */
#ifdef OOC_HAVE_CUDA
/* The executor here, or NULL (and a line saying it is skipped). */
static ooc_exec_t *cuda_or_skip(ooc_ctx_t *ctx, int nq, int64_t budget) {
  ooc_exec_t *e = NULL;
  if (mk_cuda(ctx, nq, budget, &e) != OOC_OK) {
    printf("  [cuda: not available here, skipped]\n");
    ooc_clear_error(ctx);
    return NULL;
  }
  return e;
}

/* getrf of wide blocks on the CUDA executor (as gj's and LU's chunks are: thousands of columns;
 * the suites above stop at 129): LAPACK's pivots and info (OpenBLAS's getrf as the oracle), the
 * factor ratio ||P A - L U||_1 / (n ||A||_1 eps), the first of two exact zero columns found where
 * LAPACK finds it (and the factor past it), the first of two equal largest magnitudes far apart
 * taken as the pivot, no pivoting (ipiv NULL) on a diagonally dominant block, and the block's
 * ex_getrf_ws: with exactly that much of the budget free, it runs. */
static double factor_ratio(int64_t m, int64_t n, const double *A0, const double *F, int64_t ld,
                           const int64_t *piv) {
  double *PA = malloc((size_t)(ld * n) * sizeof *PA), *L = calloc((size_t)(m * n), sizeof *L);
  double *U = calloc((size_t)(n * n), sizeof *U), anorm = 0, rnorm = 0;
  memcpy(PA, A0, (size_t)(ld * n) * sizeof *PA);
  if (piv) ooc_ops_cpu()->laswp(n, PA, ld, 0, n, piv);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      if (i > j) L[i + j * m] = AT(F, ld, i, j);
      else if (i == j) L[i + j * m] = 1.0, U[i + j * n] = AT(F, ld, i, j);
      else U[i + j * n] = AT(F, ld, i, j);
    }
  ooc_ops_cpu()->gemm('N', 'N', m, n, n, -1.0, L, m, U, n, 1.0, PA, ld);
  for (int64_t j = 0; j < n; j++) {
    double a = 0, r = 0;
    for (int64_t i = 0; i < m; i++) a += fabs(AT(A0, ld, i, j)), r += fabs(AT(PA, ld, i, j));
    if (a > anorm) anorm = a;
    if (!(r <= rnorm)) rnorm = r;
  }
  free(PA), free(L), free(U);
  return rnorm / ((double)n * anorm * DBL_EPSILON);
}

static void t_cuda_getrf_wide(void) {
  static const int64_t S[][2] = {{3000, 2600}, {2049, 2049}, {5000, 1025}};
  for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
    int64_t m = S[c][0], n = S[c][1], ld = m + 3;
    /* random; two zero columns; no pivoting; entries +-1 (ties in every column at first: the
     * first of equal magnitudes is the pivot) */
    for (int kind = 0; kind < 4; kind++) {
      /* a fresh executor each time: a queue's workspace only grows, and the budget check below
       * leaves exactly this block's free */
      ooc_ctx_t *ctx = tu_ctx();
      ooc_exec_t *e = cuda_or_skip(ctx, 1, (int64_t)1 << 30);
      if (!e) {
        tu_ctx_done(ctx);
        return;
      }
      double *A = rmat(ld, n, ld), *A0 = malloc((size_t)(ld * n) * sizeof *A0);
      double *R = malloc((size_t)(ld * n) * sizeof *R);
      /* the first zero column is info's (LAPACK's) */
      int64_t zc = n / 4 + 3, zc2 = n / 2 + 7;
      if (kind == 1)
        for (int64_t i = 0; i < ld; i++) AT(A, ld, i, zc) = AT(A, ld, i, zc2) = 0.0;
      if (kind == 2)
        for (int64_t j = 0; j < n; j++) AT(A, ld, j, j) += (double)m;
      if (kind == 3) { /* the first column's two largest, equal magnitudes far apart: row 100
                        * is the pivot */
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < ld; i++) AT(A, ld, i, j) = AT(A, ld, i, j) < 0 ? -1.0 : 1.0;
        AT(A, ld, 100, 0) = -3.0, AT(A, ld, m - 5, 0) = 3.0;
      }
      memcpy(A0, A, (size_t)(ld * n) * sizeof *A0);
      int64_t *piv = malloc((size_t)n * sizeof *piv), *piv2 = malloc((size_t)n * sizeof *piv2);
      int64_t info = -1, info2, ws = ex_getrf_ws(e, m, n), rest;
      double *dA = up(e, 0, m, n, A, ld), *fill = NULL;
      CU_ASSERT(ws > 0);
      rest = (e->budget - e->dev_bytes - ws) / 4096 * 4096;
      if (rest > 0) CU_ASSERT_FATAL(ex_alloc(e, (size_t)rest, &fill) == OOC_OK);
      CU_ASSERT(ex_getrf(e, 0, m, n, dA, ld, kind == 2 ? NULL : piv, &info) == OOC_OK);
      down(e, 0, m, n, dA, ld, R);
      if (fill) ex_free(e, fill);
      if (kind == 2) {
        CU_ASSERT(info == 0);
        double r = factor_ratio(m, n, A0, R, ld, NULL);
        CU_ASSERT(r < 30);
        printf("  [%lldx%lld no pivoting: ratio %.3g]\n", (long long)m, (long long)n, r);
      } else {
        info2 = ooc_ops_cpu()->getrf(m, n, A, ld, piv2);
        CU_ASSERT(info == info2);
        CU_ASSERT(kind == 1 ? info == zc + 1 : info == 0);
        /* past a zero column the factorization goes on (LAPACK's): P A = L U still holds. With
         * +-1 entries the ties of later columns depend on the rounding of the updates, which
         * differ between any two blocked LUs (OpenBLAS's and cuSOLVER's too): the first
         * column's pivot must be LAPACK's, the rest only factor well */
        int64_t np = kind == 3 ? 1 : n;
        CU_ASSERT(memcmp(piv, piv2, (size_t)np * sizeof *piv) == 0);
        CU_ASSERT(kind != 3 || piv[0] == 100);
        double r = factor_ratio(m, n, A0, R, ld, piv);
        CU_ASSERT(r < 30);
        static const char *what[] = {"", ", zero columns", "", ", entries +-1"};
        printf("  [%lldx%lld%s: pivots as LAPACK's, ratio %.3g]\n", (long long)m, (long long)n,
               what[kind], r);
      }
      ex_free(e, dA);
      free(A), free(A0), free(R), free(piv), free(piv2);
      CU_ASSERT(ex_finish(e) == OOC_OK);
      ex_destroy(e);
      tu_ctx_done(ctx);
    }
  }
}

/* Pageable host memory (malloc) on both sides of put/get, sub-blocks with padded leading
 * dimensions, behind and ahead of asynchronous work on another queue; and two executors on the
 * same device at once (nothing global: each has its own pool, queues and outputs). */
static void t_cuda_pageable(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e = cuda_or_skip(ctx, 2, 0), *e2 = NULL;
  if (!e) {
    tu_ctx_done(ctx);
    return;
  }
  CU_ASSERT_FATAL(mk_cuda(ctx, 1, 0, &e2) == OOC_OK);
  int64_t m = 333, n = 77, ldh = 401, ldd = 350;
  double *h = rmat(ldh, n, ldh), *back = malloc((size_t)(ldh * n) * sizeof *back), *pin, *d, *d2;
  double *z; /* zeros: 2 d = 1 * z z^T + 2 d, the scaling below */
  for (int64_t i = 0; i < ldh * n; i++) back[i] = -7.0;
  CU_ASSERT_FATAL(ex_host_alloc(e, (size_t)(ldh * n) * sizeof(double), &pin) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e, (size_t)(ldd * n) * sizeof(double), &d) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e, (size_t)ldd * sizeof(double), &z) == OOC_OK);
  CU_ASSERT(ex_fill(e, 0, ldd, 1, 0.0, z, ldd) == OOC_OK);
  CU_ASSERT_FATAL(ex_alloc(e2, (size_t)(ldd * n) * sizeof(double), &d2) == OOC_OK);
  ex_event_t *ev;
  CU_ASSERT_FATAL(ex_event_create(e, &ev) == OOC_OK);
  /* queue 1 scales d by 2 after the pageable put on queue 0; the pageable get on queue 0
   * waits for it */
  CU_ASSERT(ex_put(e, 0, m, n, h, ldh, d, ldd) == OOC_OK);
  CU_ASSERT(ex_record(e, 0, ev) == OOC_OK);
  CU_ASSERT(ex_wait(e, 1, ev) == OOC_OK);
  CU_ASSERT(ex_gemm(e, 1, 'N', 'N', m, n, 1, 1.0, z, ldd, z, 1, 2.0, d, ldd) == OOC_OK);
  CU_ASSERT(ex_record(e, 1, ev) == OOC_OK);
  CU_ASSERT(ex_wait(e, 0, ev) == OOC_OK);
  CU_ASSERT(ex_get(e, 0, m, n, d, ldd, back, ldh) == OOC_OK);
  CU_ASSERT(ex_get(e, 0, m, n, d, ldd, pin, ldh) == OOC_OK); /* pinned, asynchronous */
  /* the second executor: the same data through its own queue, pageable both ways */
  CU_ASSERT(ex_put(e2, 0, m, n, h, ldh, d2, ldd) == OOC_OK);
  CU_ASSERT(ex_fill(e2, 0, 1, n, 5.0, d2 + m - 1, ldd) == OOC_OK);
  double *back2 = malloc((size_t)(ldh * n) * sizeof *back2);
  CU_ASSERT(ex_get(e2, 0, m, n, d2, ldd, back2, ldh) == OOC_OK);
  CU_ASSERT(ex_finish(e2) == OOC_OK);
  CU_ASSERT(ex_record(e, 0, ev) == OOC_OK);
  CU_ASSERT(ex_sync(e, ev) == OOC_OK);
  int bad = 0;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < ldh; i++) {
      double want = i < m ? 2.0 * AT(h, ldh, i, j) : -7.0; /* rows past m untouched */
      bad += AT(back, ldh, i, j) != want;
      if (i < m) bad += AT(pin, ldh, i, j) != want;
      if (i < m) bad += AT(back2, ldh, i, j) != (i == m - 1 ? 5.0 : AT(h, ldh, i, j));
    }
  CU_ASSERT(bad == 0);
  CU_ASSERT(e->stats.bytes_put == 8 * m * n && e->stats.bytes_get == 16 * m * n);
  ex_event_destroy(e, ev);
  ex_destroy(e2);
  ex_destroy(e);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  free(h), free(back), free(back2);
  tu_ctx_done(ctx);
}

/* One run of everything that allocates device or pinned memory: creation (cuBLAS workspaces,
 * info buffers, output rings), buffers, staging, a ring's slots, and a factorization's
 * workspace grown on first use. */
static ooc_status_t fault_run(ooc_ctx_t *ctx) {
  ooc_exec_t *e;
  OOC_TRY(mk_cuda(ctx, 2, 0, &e));
  double *a, *b, *h, *A0 = rmat(64, 32, 64);
  int64_t piv[32], info = -1;
  ring_t *r = NULL;
  ooc_status_t st = ex_alloc(e, 1 << 20, &a);
  if (st == OOC_OK) st = ex_alloc(e, 64 * 32 * sizeof(double), &b);
  if (st == OOC_OK) st = ex_host_alloc(e, 1 << 16, &h);
  if (st == OOC_OK) st = ring_create(e, 2, 100, 2, &r);
  if (st == OOC_OK) st = ex_put(e, 1, 64, 32, A0, 64, b, 64);
  if (st == OOC_OK) st = ex_getrf(e, 1, 64, 32, b, 64, piv, &info);
  if (st == OOC_OK) st = ex_finish(e);
  if (st == OOC_OK) CU_ASSERT(info == 0);
  ring_destroy(r);
  ex_destroy(e); /* a, b and h too */
  free(A0);
  return st;
}

/* Fail the Nth device or pinned allocation (the seam OOC_FAULT_DEVICE), once and from then on,
 * for every N the run makes: a clean OOC_ERR_NOMEM / OOC_ERR_DEVICE exactly when a fault was
 * injected, nothing leaked (host bytes, blocks, streams). */
static void t_cuda_faults(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e = cuda_or_skip(ctx, 1, 0);
  ex_destroy(e);
  tu_ctx_done(ctx);
  if (!e) return;
  ctx = tu_ctx(); /* the seam's count from a fresh context, as each run below has */
  CU_ASSERT(fault_run(ctx) == OOC_OK);
  int64_t calls = ooc_fault_calls(ctx, OOC_FAULT_DEVICE);
  CU_ASSERT(calls >= 10); /* 2 queues x 3 at creation, 2 buffers, staging, 2 slots, workspace */
  tu_ctx_done(ctx);
  int failed = 0, runs = 0;
  for (int persistent = 0; persistent < 2; persistent++)
    for (int64_t nth = 1; nth <= calls + 1; nth++) {
      ctx = tu_ctx();
      ooc_fault_arm(ctx, OOC_FAULT_DEVICE, nth, persistent, 0);
      ooc_status_t st = fault_run(ctx);
      int64_t hit = ooc_fault_injected(ctx, OOC_FAULT_DEVICE);
      int ok = hit ? (st == OOC_ERR_NOMEM || st == OOC_ERR_DEVICE) : st == OOC_OK;
      CU_ASSERT(ok);
      CU_ASSERT((nth <= calls) == (hit > 0));
      if (!ok) printf("  fault %lld (%s): status %d, %lld injected: %s\n", (long long)nth,
                      persistent ? "always" : "once", (int)st, (long long)hit, ooc_ctx_error(ctx));
      CU_ASSERT(ooc_ctx_streams(ctx) == 0);
      failed += st != OOC_OK;
      runs++;
      tu_ctx_done(ctx);
    }
  printf("  [cuda: %lld allocations, %d faulted runs of %d]\n", (long long)calls, failed, runs);
}

/* The tuned paths: trtri of an upper non-unit triangle wider than its leaf (ocu_trtri's trmm2),
 * getri over several sweep blocks; a zero on the diagonal is their info; and an enqueue that
 * cuSOLVER refuses (lda < m) breaks the executor: OOC_ERR_DEVICE naming the call, then every
 * enqueue and sync returns it, and destroy is clean. */
static void t_cuda_tuned(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e = cuda_or_skip(ctx, 1, 0);
  if (!e) {
    tu_ctx_done(ctx);
    return;
  }
  const ooc_ops_t *o = ooc_ops_cpu();
  static const int64_t N[] = {700, 1100};
  for (int c = 0; c < 2; c++) {
    int64_t n = N[c], ld = n + 5;
    double *A = malloc((size_t)(ld * n) * sizeof *A), *R = malloc((size_t)(ld * n) * sizeof *R);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < ld; i++) AT(A, ld, i, j) = (i == j ? 4.0 : 0.0) + urand() / n;
    double *dA = up(e, 0, ld, n, A, ld);
    int64_t info = -1, info2 = -1;
    CU_ASSERT(ex_trtri(e, 0, 'U', 'N', n, dA, ld, &info) == OOC_OK);
    CU_ASSERT(o->trtri('U', 'N', n, A, ld) == 0);
    down(e, 0, ld, n, dA, ld, R);
    CU_ASSERT(info == 0);
    CU_ASSERT(diff(n, n, R, ld, A, ld, 1.0, (double)n) <= 8.0);
    /* getri of a fresh diagonally dominant L\U */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < ld; i++) AT(A, ld, i, j) = (i == j ? 4.0 : 0.0) + urand() / n;
    CU_ASSERT(ex_put(e, 0, ld, n, A, ld, dA, ld) == OOC_OK);
    CU_ASSERT(ex_getri(e, 0, n, dA, ld, &info2) == OOC_OK);
    down(e, 0, ld, n, dA, ld, R);
    CU_ASSERT(o->getri(n, A, ld) == 0);
    CU_ASSERT(info2 == 0);
    CU_ASSERT(diff(n, n, R, ld, A, ld, 1.0, (double)n) <= 8.0);
    /* zero pivots: trtri's and getri's info */
    AT(A, ld, 5, 5) = 0.0;
    CU_ASSERT(ex_put(e, 0, ld, n, A, ld, dA, ld) == OOC_OK);
    CU_ASSERT(ex_trtri(e, 0, 'U', 'N', n, dA, ld, &info) == OOC_OK);
    AT(A, ld, 7, 7) = 0.0;
    AT(A, ld, 5, 5) = 1.0;
    CU_ASSERT(ex_put(e, 0, ld, n, A, ld, dA, ld) == OOC_OK);
    CU_ASSERT(ex_getri(e, 0, n, dA, ld, &info2) == OOC_OK);
    CU_ASSERT(ex_finish(e) == OOC_OK);
    CU_ASSERT(info == 6 && info2 == 8);
    ex_free(e, dA);
    free(A), free(R);
  }
  /* the other triangles and unit diagonals (cuSOLVER's trtri, a unit diagonal set aside) */
  static const char UD[][2] = {{'L', 'N'}, {'L', 'U'}, {'U', 'U'}, {'U', 'N'}};
  for (int c = 0; c < 4; c++) {
    int64_t n = 100, ld = 103, info = -1;
    double *A = malloc((size_t)(ld * n) * sizeof *A), *R = malloc((size_t)(ld * n) * sizeof *R);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < ld; i++) AT(A, ld, i, j) = (i == j ? 4.0 : 0.0) + urand() / n;
    double *dA = up(e, 0, ld, n, A, ld);
    CU_ASSERT(ex_trtri(e, 0, UD[c][0], UD[c][1], n, dA, ld, &info) == OOC_OK);
    CU_ASSERT(o->trtri(UD[c][0], UD[c][1], n, A, ld) == 0);
    down(e, 0, ld, n, dA, ld, R);
    CU_ASSERT(info == 0);
    double dd = diff(ld, n, R, ld, A, ld, 1.0, (double)n); /* the other triangle: untouched */
    CU_ASSERT(dd <= 8.0);
    if (!(dd <= 8.0)) printf("  trtri %c%c: difference %.3g\n", UD[c][0], UD[c][1], dd);
    ex_free(e, dA);
    free(A), free(R);
  }
  /* refused at enqueue */
  double *d;
  int64_t piv[8], info = 0;
  CU_ASSERT_FATAL(ex_alloc(e, 64 * 8 * sizeof(double), &d) == OOC_OK);
  ooc_status_t st = ex_getrf(e, 0, 64, 8, d, 32, piv, &info);
  if (st == OOC_OK) st = ex_finish(e); /* cuSOLVER may say it through info, when it runs */
  CU_ASSERT(st == OOC_ERR_DEVICE);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "getrf") != NULL);
  printf("  [cuda: lda < m: %s]\n", ooc_ctx_error(ctx));
  ooc_clear_error(ctx);
  CU_ASSERT(ex_fill(e, 0, 4, 4, 1.0, d, 64) == OOC_ERR_DEVICE);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "refused") != NULL);
  ooc_clear_error(ctx);
  CU_ASSERT(ex_finish(e) == OOC_ERR_DEVICE);
  ex_destroy(e);
  CU_ASSERT(ooc_ctx_streams(ctx) == 0);
  tu_ctx_done(ctx);
}
#endif

/* ---- QR (issue 24) ------------------------------------------------------------------------- */

/* geqrf, ormqr and laset against the ops table, and against their definitions: Q^T A is R
 * (zeros below the diagonal), Q (Q^T C) = C, R's diagonal as the oracle's (the same sign
 * convention: dlarfg's). Tall, square, wide and one-element blocks, ld > m. */
static void qr_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, 0, &e) == OOC_OK);
  const ooc_ops_t *o = oracle(f);
  static const int64_t S[][2] = {{1, 1}, {7, 3}, {64, 64}, {129, 40}, {20, 37}, {300, 8}};
  for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
    int64_t m = S[c][0], n = S[c][1], k = m < n ? m : n, ld = m + 3, nr = 5;
    double *A = rmat(ld, n, ld), *A0 = malloc((size_t)(ld * n) * sizeof *A0);
    double *C = rmat(ld, nr, ld), *C0 = malloc((size_t)(ld * nr) * sizeof *C0);
    double *R = malloc((size_t)(ld * n) * sizeof *R), *RC = malloc((size_t)(ld * nr) * sizeof *RC);
    double *tau = malloc((size_t)k * sizeof *tau), *tau2 = malloc((size_t)k * sizeof *tau2);
    memcpy(A0, A, (size_t)(ld * n) * sizeof *A);
    memcpy(C0, C, (size_t)(ld * nr) * sizeof *C);
    double *dA = up(e, 0, m, n, A, ld), *dC = up(e, 0, m, nr, C, ld), *dA0 = up(e, 0, m, n, A, ld);
    double *dtau;
    CU_ASSERT_FATAL(ex_alloc(e, (size_t)k * sizeof(double), &dtau) == OOC_OK);
    CU_ASSERT(ex_geqrf(e, 0, m, n, dA, ld, dtau) == OOC_OK);
    CU_ASSERT(ex_ormqr(e, 0, 'T', m, nr, k, dA, ld, dtau, dC, ld) == OOC_OK);
    o->geqrf(m, n, A, ld, tau);
    o->ormqr('T', m, nr, k, A, ld, tau, C, ld);
    down(e, 0, m, n, dA, ld, R);
    down(e, 0, m, nr, dC, ld, RC);
    down(e, 0, k, 1, dtau, k, tau2);
    double sc = sqrt((double)m);
    CHECK_CLOSE(f, diff(m, n, R, ld, A, ld, sc, (double)n), 16.0);
    CHECK_CLOSE(f, diff(m, nr, RC, ld, C, ld, sc, (double)n), 16.0);
    CHECK_CLOSE(f, diff(k, 1, tau2, k, tau, k, 1.0, (double)m), 16.0);
    /* Q^T A0 = R: the upper part as geqrf left it, zeros below (to rounding) */
    CU_ASSERT(ex_ormqr(e, 0, 'T', m, n, k, dA, ld, dtau, dA0, ld) == OOC_OK);
    double *QA = malloc((size_t)(ld * n) * sizeof *QA);
    down(e, 0, m, n, dA0, ld, QA);
    double worst = 0.0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double want = i <= j ? AT(R, ld, i, j) : 0.0, d = fabs(AT(QA, ld, i, j) - want);
        if (!(d <= worst)) worst = d;
      }
    CU_ASSERT(worst <= 64.0 * sc * (double)n * DBL_EPSILON);
    if (!(worst <= 64.0 * sc * (double)n * DBL_EPSILON))
      fprintf(stderr, "  %s: Q^T A - R %.3g at %lld x %lld\n", f->name, worst, (long long)m,
              (long long)n);
    /* Q (Q^T C0) = C0 */
    CU_ASSERT(ex_ormqr(e, 0, 'N', m, nr, k, dA, ld, dtau, dC, ld) == OOC_OK);
    down(e, 0, m, nr, dC, ld, RC);
    CU_ASSERT(diff(m, nr, RC, ld, C0, ld, sc, (double)n) <= 64.0);
    /* laset: each triangle, exact; rows outside the block untouched */
    static const char UP[] = {'L', 'U', 'A'};
    for (int u = 0; u < 3; u++) {
      CU_ASSERT(ex_put(e, 0, ld, n, A0, ld, dA0, ld) == OOC_OK);
      CU_ASSERT(ex_laset(e, 0, UP[u], m, n, 0.5, -2.0, dA0, ld) == OOC_OK);
      CU_ASSERT(ex_get(e, 0, ld, n, dA0, ld, QA, ld) == OOC_OK);
      qsync(e, 0);
      int bad = 0;
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < ld; i++) {
          double want = AT(A0, ld, i, j);
          int in = i < m && ((UP[u] == 'L' && i >= j) || (UP[u] == 'U' && i <= j) || UP[u] == 'A');
          if (in) want = i == j ? -2.0 : 0.5;
          bad += AT(QA, ld, i, j) != want;
        }
      CU_ASSERT(bad == 0);
    }
    ex_free(e, dA), ex_free(e, dC), ex_free(e, dA0), ex_free(e, dtau);
    free(A), free(A0), free(C), free(C0), free(R), free(RC), free(tau), free(tau2), free(QA);
  }
  CU_ASSERT(ex_finish(e) == OOC_OK);
  ex_destroy(e);
  tu_ctx_done(ctx);
}

/* absscan (base/absscan.h's contract, bit for bit): against a sequential loop written here, on
 * full and upper (top >= 0, and top below the block's first row) scans, ld > m, NaN entries
 * (never the maximum), row sums that accumulate from a nonzero start over two calls, a block
 * large enough for the host's threads (m n >= 2^22), and an empty one. */
static void absscan_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 2, 0, &e) == OOC_OK);
  static const int64_t S[][3] = {{1, 1, -1}, {7, 3, -1}, {7, 3, 2},   {37, 50, 0},
                                 {37, 50, -1}, {300, 9, 5}, {100, 20, 150}, {4200, 1000, -1},
                                 {4200, 1000, 1000}, {5, 0, -1}, {197, 70, 40},
                                 {197, 33, 130}};
  for (size_t c = 0; c < sizeof S / sizeof S[0]; c++) {
    int64_t m = S[c][0], n = S[c][1], top = S[c][2], ld = m + 2, nn = n > 0 ? n : 1;
    double *A = rmat(ld, nn, ld), *rs = rmat(m, 1, m), *want = malloc((size_t)m * sizeof *want);
    double *got = malloc((size_t)m * sizeof *got), mx[2] = {0.25, 0}, wmx = 0.25;
    if (m * n > 40) A[3 + 5 * ld] = NAN, A[m - 1] = NAN;
    memcpy(want, rs, (size_t)m * sizeof *rs);
    for (int pass = 0; pass < 2; pass++) /* the same block twice: sums continue */
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m && (top < 0 || i <= top + j); i++) {
          double v = fabs(AT(A, ld, i, j));
          wmx = v > wmx ? v : wmx;
          want[i] += v;
        }
    double *dA = up(e, 0, m, nn, A, ld), *drs = up(e, 0, m, 1, rs, m), *dmx = up(e, 0, 1, 1, mx, 1);
    for (int pass = 0; pass < 2; pass++)
      CU_ASSERT(ex_absscan(e, 0, m, n, dA, ld, top, dmx, drs) == OOC_OK);
    CU_ASSERT(ex_finish(e) == OOC_OK);
    down(e, 0, m, 1, drs, m, got);
    down(e, 0, 1, 1, dmx, 1, mx + 1);
    int bad = memcmp(&mx[1], &wmx, 8) != 0; /* a NaN row's sum: NaN (its bits are the backend's) */
    for (int64_t i = 0; i < m; i++)
      bad += !(isnan(want[i]) ? isnan(got[i]) : !memcmp(&got[i], &want[i], 8));
    CU_ASSERT(!bad);
    if (bad)
      fprintf(stderr, "  %s: absscan %lld x %lld top %lld: max %.17g want %.17g\n", f->name,
              (long long)m, (long long)n, (long long)top, mx[1], wmx);
    ex_free(e, dA), ex_free(e, drs), ex_free(e, dmx);
    free(A), free(rs), free(want), free(got);
  }
  ex_destroy(e);
  tu_ctx_done(ctx);
}

static void t_blas(void) { for_each(blas_on); }
/* ex_laswp against the oracle's laswp on shapes the factor's single-segment case above does not
 * reach: many segments of the CUDA executor's net permutation (LU's pivots, each uniform over
 * the rows below it), a range starting past row 0, one to seven columns, more columns than its
 * grid holds blocks, and a range of repeated pivots (rows
 * that swap back and forth, so some touched rows end where they began). A permutation is
 * exact: the bits must agree. */
static void laswp_on(const factory_t *f) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_exec_t *e;
  CU_ASSERT_FATAL(f->make(ctx, 1, 0, &e) == OOC_OK);
  const ooc_ops_t *o = oracle(f);
  static const struct {
    int64_t rows, ncols, k1, k2;
    int repeat;
  } C[] = {{3000, 7, 200, 2700, 0}, {3000, 6, 0, 3000, 0}, {2049, 1, 1, 2048, 1},
           {1100, 3, 0, 1100, 1},   {6, 140001, 0, 6, 0}};
  for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
    int64_t m = C[c].rows, w = C[c].ncols, ld = m + 3, k1 = C[c].k1, k2 = C[c].k2;
    double *A = rmat(ld, w, ld), *R = malloc((size_t)(ld * w) * sizeof *R);
    int64_t *piv = malloc((size_t)m * sizeof *piv);
    for (int64_t k = 0; k < m; k++) {
      piv[k] = k + (int64_t)((urand() + 1.0) * 0.5 * (double)(m - k)); /* urand: [-1, 1) */
      if (piv[k] >= m) piv[k] = m - 1;
      if (C[c].repeat && k % 3 == 1) piv[k] = k + 1 < m ? k + 1 : k; /* k+1 back next step */
    }
    double *dA = up(e, 0, m, w, A, ld);
    CU_ASSERT(ex_laswp(e, 0, w, dA, ld, k1, k2, piv) == OOC_OK);
    o->laswp(w, A, ld, k1, k2, piv);
    down(e, 0, m, w, dA, ld, R);
    int64_t bad = 0;
    for (int64_t j = 0; j < w; j++)
      for (int64_t i = 0; i < m; i++) bad += AT(R, ld, i, j) != AT(A, ld, i, j);
    CU_ASSERT(bad == 0);
    if (bad)
      fprintf(stderr, "  %s: laswp rows %lld, %lld columns, pivots [%lld, %lld): %lld wrong\n",
              f->name, (long long)m, (long long)w, (long long)k1, (long long)k2, (long long)bad);
    ex_free(e, dA);
    free(A), free(R), free(piv);
  }
  CU_ASSERT(ex_finish(e) == OOC_OK);
  ex_destroy(e);
  tu_ctx_done(ctx);
}

static void t_lapack(void) { for_each(lapack_on); }
static void t_laswp(void) { for_each(laswp_on); }
static void t_nopiv(void) { for_each(nopiv_on); }
static void t_getrf_ws(void) { for_each(getrf_ws_on); }
static void t_mirror(void) { for_each(mirror_on); }
static void t_qr(void) { for_each(qr_on); }
static void t_absscan(void) { for_each(absscan_on); }
static void t_events(void) { for_each(events_on); }
static void t_memory(void) { for_each(memory_on); }
static void t_ring(void) { for_each(ring_on); }

static const tu_test_t tests[] = {
    {"BLAS 3, copies, transpose, fill (vs the ops table)", t_blas},
    {"getrf pivots, laswp, trtri, potrf/potri, getri, info", t_lapack},
    {"laswp: many segments, odd and even column counts, a wide grid", t_laswp},
    {"getrf without pivoting (ipiv NULL): factors, L U = A, a zero leading pivot", t_nopiv},
    {"getrf_ws, getri_ws, potrf_ws, potri_ws: each runs with that much of the budget left free", t_getrf_ws},
    {"geqrf, ormqr (Q^T and Q), laset (vs the ops table and the definitions)", t_qr},
    {"mirror: a lower triangle's transpose (another's or its own) or zeros above", t_mirror},
    {"absscan: max |a| and row sums of |A|, full and upper, bit for bit", t_absscan},
    {"queues and events: a chain across three queues", t_events},
    {"budget, buffers left at destroy, allocation faults", t_memory},
    {"ring: K = 1..4, order of puts, a failing item", t_ring},
    {"the strict host executor exposes a missing sync", t_strict},
#ifdef OOC_HAVE_CUDA
    {"cuda: getrf of wide blocks: LAPACK's pivots and info, ratios, its ws", t_cuda_getrf_wide},
    {"cuda: pageable put/get, two executors on one device", t_cuda_pageable},
    {"cuda: device and pinned allocation faults, once and always", t_cuda_faults},
    {"cuda: tuned trtri/getri, zero pivots, a refused enqueue", t_cuda_tuned},
#endif
    {NULL, NULL},
};

int main(void) { return tu_run("exec", tests); }
