/*
 * exec.h: the executor, where a method's arithmetic runs (issue 18: one executor under every
 * method). A method (LU, and gj, chol and the product as they move here) is written once against
 * this interface; it runs on the host executor (exec_host.c: the ops table on worker threads) or
 * the CUDA executor (src/exec/cuda) unchanged.
 *
 * An executor is one device. The host is one more device: its "device memory" is host memory and
 * its copies are memcpy, so the same method code runs everywhere and the CPU tests cover the GPU's
 * schedule. Several devices (GPUs, later MPI ranks) are several executors, one per device: a
 * method that spreads work takes an array of them; nothing here assumes there is one.
 *
 * Model
 * - Device buffers: ex_alloc(bytes) hands out device memory within the executor's budget (the
 *   planner's --gpu-mem for CUDA, the method's planned workspace for the host). A pointer into a
 *   device buffer is `double *` but may not be dereferenced by the caller (on CUDA it is a device
 *   address): methods only do arithmetic on it (p + i + j * ld) and pass it to operations.
 * - Host staging memory: ex_host_alloc(bytes) is where the host fills data to send and receives
 *   data that comes back (pinned on CUDA so copies are asynchronous; plain host memory on the host
 *   executor). Counted in ooc_ctx's host bytes like every host buffer. ex_put/ex_get also accept
 *   any other host memory (the CUDA executor then copies through the driver's staging buffers:
 *   synchronously for the caller, exec_cuda.h).
 * - Queues: 0 .. nqueues-1. Operations on one queue run in the order they were enqueued; operations
 *   on different queues may run concurrently. Enqueueing returns at once (it may block while the
 *   executor's internal queue is full). An operation's host arguments (ipiv to apply, scalars) are
 *   copied at enqueue; its host outputs (ipiv, info) and the host side of ex_get are written when
 *   the operation runs, valid once the caller has waited for an event recorded after it.
 * - Events: ex_record(q, ev) marks the point the queue has reached; ex_wait(q, ev) makes queue q
 *   wait for it; ex_sync(ev) makes the caller wait; ex_query(ev) says, without waiting, whether
 *   it is complete (1) or not (0; an error is left for the next sync). An event may be recorded
 *   again (it then marks the new point); one never recorded is complete.
 * - Unified memory (e->unified): device pointers are host pointers, so a method may hand a
 *   staging buffer (ex_host_alloc) to operations directly instead of putting it into a device
 *   buffer and getting it back: the host executor is unified (no copies, the same memory as the
 *   old host code paths), the CUDA executor is not. Ordering still goes through events: an
 *   operation on a staging buffer runs on a worker thread, and the caller touches the buffer
 *   again only after a sync.
 * - Errors: an enqueue returns a status for what it can tell at once (a bad argument, an earlier
 *   error: the executor is "broken" after the first asynchronous failure and refuses everything
 *   but syncs and destroy). A failure while an operation runs (a kernel's or the device's error)
 *   is reported by the next ex_sync / ex_finish on the caller's thread, with its message recorded
 *   in the executor's context (what failed, on which queue, which call). Numerical outcomes
 *   (a zero pivot, a minor not positive) are not failures: they are the `info` outputs.
 *   Host bookkeeping (ooc_malloc, OOC_FAIL) happens only on the thread that calls these
 *   functions; the executor's own threads never touch the context.
 * - Thread safety: one caller thread per executor (the method's), like the tile store.
 *
 * Operations (column-major FP64, leading dimensions in elements, 64-bit sizes; the same contracts
 * as kernels/ops.h, whose names and argument orders they follow, on device pointers):
 *   ex_put   host (ldh) -> device (ldd), m x n          ex_get   device -> host
 *   ex_copy  device -> device, m x n                    ex_fill  device m x n := value
 *   ex_gemm, ex_syrk, ex_trsm: BLAS 3 as ops.h
 *   ex_laswp: apply ipiv[k1..k2) (0-based, relative to row 0 of A) to ncols columns, forward;
 *             on a device it takes at most EX_LASWP_WS(k2 - k1) bytes of its queue's workspace
 *             (the CUDA executor: the net row permutation, made on the host at enqueue)
 *   ex_getrf: LU with partial pivoting of the m x n block: ipiv (host, min(m, n) entries, 0-based
 *             relative to the block's first row) and *info (host: 0 or the first j+1 with an exact
 *             zero pivot) are written when it runs. Backends may use their tuned panel code
 *             (the CUDA executor: cuSOLVER's getrf, exec_cuda.h says why); pivots are always
 *             the argmax of the column (LAPACK's choice), so the factors match LAPACK's up to
 *             rounding. ipiv NULL: no row interchanges, A = L U (host: ooc_getrf_nopiv over
 *             the kernel table; CUDA: cusolverDnXgetrf with a NULL pivot array); *info is then
 *             the first exact zero pivot j+1, after which the factors are unspecified.
 *   ex_getrf_ws: the device bytes one ex_getrf of an m x n block takes for itself (workspace and
 *             device pivots) from the device memory e->budget is carved from: a method that
 *             factors keeps that much of e->budget free of ex_alloc. 0 on the host executor;
 *             -1 when the backend cannot tell (the caller then keeps a margin of its own).
 *   ex_potrf, ex_potri, ex_getri, ex_trtri: as ops.h / LAPACK, info to host as for getrf
 *   ex_getri_ws: as ex_getrf_ws for one ex_getri of n x n (CUDA: the triangular inverse's
 *             cuSOLVER workspace and the n x 512 sweep buffer; 0 on the host executor; -1 when
 *             the backend cannot tell)
 *   ex_potrf_ws, ex_potri_ws: as ex_getrf_ws for one ex_potrf / ex_potri of n x n with leading
 *             dimension lda (CUDA: cuSOLVER's workspace; 0 on the host executor; -1 when the
 *             backend cannot tell): the Cholesky's device plan asks them (chol.h)
 *   ex_transpose: device dst (n x m, ldd) := src^T (m x n, lds)
 *   ex_mirror: columns [j0, j1) of A strictly above the diagonal (rows i < j) := the transpose
 *             of S's strict lower triangle, A[i + j lda] = S[j + i lds] (full), or 0 (full = 0).
 *             S may be A itself (the upper triangle filled from the lower: no element is both
 *             read and written). A symmetric result's upper half, or a factor's cleared one.
 *   ex_geqrf: Householder QR of the m x n block in place (ops.h: LAPACK's dgeqrf layout); tau is
 *             a device buffer of min(m, n) doubles (the reflectors' scalars stay on the device:
 *             only ex_ormqr reads them). No info: QR cannot fail; rank is read from R's diagonal.
 *   ex_ormqr: C (m x n, device) := Q^T C (trans 'T') or Q C ('N'), Q from ex_geqrf's k
 *             reflectors in A (m x k) and tau; left side only (what least squares needs).
 *   ex_laset: LAPACK's dlaset (ops.h): a triangle (uplo 'L' strictly lower, 'U' strictly upper,
 *             other: all off-diagonal) := alpha, the diagonal := beta. Clears the reflectors
 *             geqrf leaves under R.
 *   ex_absscan: one pass over |A| (m x n, lda): *mx := max(*mx, |a_ij|) and, rowsum not NULL,
 *             rowsum[i] += |a_ij| column after column, on rows [0, m) of each column (top < 0)
 *             or rows [0, min(m, top + j + 1)) of column j (U's part); mx (one double) and
 *             rowsum (m) are device buffers. base/absscan.h's contract, bit for bit on every
 *             backend (a row's sum is the sequential sum over the columns in the order they
 *             were scanned): LU's pivot growth and ||A||_inf, scanned where the data already
 *             is instead of on the host thread that feeds the device.
 */
#ifndef OOC_EXEC_H
#define OOC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "kernels/ops.h"

#define EX_MAX_QUEUES 8
/* The most device workspace one ex_laswp of np pivots takes on its queue (exec_cuda.c's do_laswp:
 * source and destination rows, 2 np each, and a segment table), for planners. */
#define EX_LASWP_WS(np) (8 * (4 * (int64_t)(np) + (int64_t)(np) / 512 + 2) + 256)
/* Each device buffer costs at most its bytes rounded up to EX_DEV_ALIGN (the CUDA pool's
 * rounding, OCU_RT_ALIGN): device plans count a buffer as EX_DEV_ROUND(bytes). */
#define EX_DEV_ALIGN 256
#define EX_DEV_ROUND(x) (((int64_t)(x) + EX_DEV_ALIGN - 1) / EX_DEV_ALIGN * EX_DEV_ALIGN)
#define EX_MAX_DEVICES 16 /* executors one method may spread over (issue 26, exset.h) */

typedef struct ooc_exec ooc_exec_t;
typedef struct ex_event ex_event_t;

enum { EX_HOST = 0, EX_CUDA = 1 };

/* What an executor counts, for the report, traces and tests. */
typedef struct ex_stats {
  int64_t bytes_put, bytes_get;  /* host <-> device */
  int64_t ops;                   /* operations enqueued */
  double flops;                  /* of the BLAS 3 and factorization operations enqueued */
  int64_t dev_peak;              /* peak device bytes allocated through ex_alloc */
  int64_t mem_peak;              /* peak device bytes held in all, against mem_budget: on CUDA
                                    the pool's (ex_alloc's buffers with the executor's own part,
                                    its cuBLAS workspaces and info, and the operations'
                                    workspaces that grow on need), <= mem_budget as the pool
                                    enforces it; on the host dev_peak */
  int64_t staging_peak;          /* peak staging bytes (ex_host_alloc: pinned on a GPU) */
  int64_t registered;            /* host buffers registered now (ex_host_register's, not yet
                                    unregistered): 0 again when their user is done */
  double busy;                   /* seconds the device ran operations, summed over its queues,
                                    as of the last ex_finish (host executor: its workers' time in
                                    operations; CUDA: its operations' spans, when it has them
                                    (timing or a trace: exec_cuda.h), else 0) */
} ex_stats_t;

/* The operations table: one per backend. Callers use the ex_* wrappers below. */
typedef struct ex_ops {
  ooc_status_t (*alloc)(ooc_exec_t *e, size_t bytes, double **out);
  void (*free)(ooc_exec_t *e, double *p);
  ooc_status_t (*host_alloc)(ooc_exec_t *e, size_t bytes, double **out);
  void (*host_free)(ooc_exec_t *e, double *p);
  ooc_status_t (*event_create)(ooc_exec_t *e, ex_event_t **out);
  void (*event_destroy)(ooc_exec_t *e, ex_event_t *ev);
  ooc_status_t (*record)(ooc_exec_t *e, int q, ex_event_t *ev);
  ooc_status_t (*wait)(ooc_exec_t *e, int q, ex_event_t *ev);
  ooc_status_t (*sync)(ooc_exec_t *e, ex_event_t *ev);
  int (*query)(ooc_exec_t *e, ex_event_t *ev);
  ooc_status_t (*finish)(ooc_exec_t *e);
  ooc_status_t (*put)(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *h, int64_t ldh,
                      double *d, int64_t ldd);
  ooc_status_t (*get)(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *d, int64_t ldd,
                      double *h, int64_t ldh);
  ooc_status_t (*copy)(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s, int64_t lds,
                       double *d, int64_t ldd);
  ooc_status_t (*fill)(ooc_exec_t *e, int q, int64_t m, int64_t n, double v, double *d, int64_t ldd);
  ooc_status_t (*transpose)(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s,
                            int64_t lds, double *d, int64_t ldd);
  ooc_status_t (*mirror)(ooc_exec_t *e, int q, int64_t j0, int64_t j1, int full, const double *S,
                         int64_t lds, double *A, int64_t lda);
  ooc_status_t (*gemm)(ooc_exec_t *e, int q, char ta, char tb, int64_t m, int64_t n, int64_t k,
                       double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
                       double beta, double *C, int64_t ldc);
  ooc_status_t (*syrk)(ooc_exec_t *e, int q, char uplo, char trans, int64_t n, int64_t k,
                       double alpha, const double *A, int64_t lda, double beta, double *C,
                       int64_t ldc);
  ooc_status_t (*trsm)(ooc_exec_t *e, int q, char side, char uplo, char trans, char diag, int64_t m,
                       int64_t n, double alpha, const double *A, int64_t lda, double *B, int64_t ldb);
  ooc_status_t (*laswp)(ooc_exec_t *e, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                        int64_t k2, const int64_t *ipiv);
  ooc_status_t (*getrf)(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                        int64_t *ipiv, int64_t *info);
  int64_t (*getrf_ws)(ooc_exec_t *e, int64_t m, int64_t n);
  int64_t (*getri_ws)(ooc_exec_t *e, int64_t n);
  int64_t (*potrf_ws)(ooc_exec_t *e, int64_t n, int64_t lda);
  int64_t (*potri_ws)(ooc_exec_t *e, int64_t n, int64_t lda);
  ooc_status_t (*potrf)(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info);
  ooc_status_t (*potri)(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info);
  ooc_status_t (*getri)(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info);
  ooc_status_t (*trtri)(ooc_exec_t *e, int q, char uplo, char diag, int64_t n, double *A,
                        int64_t lda, int64_t *info);
  ooc_status_t (*geqrf)(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                        double *tau);
  ooc_status_t (*ormqr)(ooc_exec_t *e, int q, char trans, int64_t m, int64_t n, int64_t k,
                        double *A, int64_t lda, const double *tau, double *C, int64_t ldc);
  ooc_status_t (*laset)(ooc_exec_t *e, int q, char uplo, int64_t m, int64_t n, double alpha,
                        double beta, double *A, int64_t lda);
  ooc_status_t (*absscan)(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *A,
                          int64_t lda, int64_t top, double *mx, double *rowsum);
  /* optional (NULL: host memory needs nothing to be copied asynchronously) */
  int (*host_register)(ooc_exec_t *e, void *p, size_t bytes);
  void (*host_unregister)(ooc_exec_t *e, void *p);
  /* optional (NULL: nothing to record): the caller's host interval [t0, t1] (ooc_now seconds)
   * named `name` (a string that outlives the executor) on the trace's host row, when the
   * executor traces (CUDA: cfg->trace or cfg->timing); for where a method's host time goes */
  void (*host_span)(ooc_exec_t *e, const char *name, double t0, double t1, int64_t bytes);
  /* optional (NULL: nothing to reserve): queue q's operation workspace grown to at least bytes
   * now (ex_reserve) */
  ooc_status_t (*reserve)(ooc_exec_t *e, int q, int64_t bytes);
  void (*destroy)(ooc_exec_t *e);
} ex_ops_t;

struct ooc_exec {
  const ex_ops_t *op;
  ooc_ctx_t *ctx;
  const char *name;   /* "cpu", "ref", "cuda:0" (for messages and the report) */
  int kind;           /* EX_HOST, EX_CUDA */
  int nqueues;        /* 1 .. EX_MAX_QUEUES */
  int unified;        /* device memory is host memory (see above) */
  int64_t budget;     /* device bytes ex_alloc may hand out in all */
  int64_t mem_budget; /* device bytes the executor may hold in all (stats.mem_peak's bound): on
                         CUDA --gpu-mem (cfg->gpu_mem, or the runtime's default for 0), of which
                         budget is what its own part leaves; on the host budget (0: unlimited) */
  int64_t dev_bytes;  /* device bytes allocated now */
  int64_t staging_bytes; /* staging bytes allocated now */
  ex_stats_t stats;
  void *impl;         /* the backend's state */
};

/* ---- the host executor (exec_host.c) ------------------------------------------------------ */

/* The ops table (cpu or ref) on `nqueues` worker threads, one per queue (<= 0: 1). Each
 * operation runs with the ops table's own threading (ops->threads as the caller left it).
 * budget: the bytes ex_alloc may hand out (host memory through ooc_malloc, so they count in the
 * host peak as the planner budgets them); <= 0: unlimited. */
ooc_status_t ex_host_create(ooc_ctx_t *ctx, const ooc_ops_t *ops, int nqueues, int64_t budget,
                            ooc_exec_t **out);
/* Host bytes the host executor itself takes with nqueues queues (its buffers not included; each
 * buffer and event costs a 64-byte header more than asked), for planners. */
int64_t ex_host_bytes(int nqueues);

/* The same, made to expose schedule bugs for tests: not unified (device buffers are separate
 * host memory, so a method must put and get as on a GPU), every operation starts only after
 * `delay_us` microseconds on its worker (a device still busy), an ex_get that starts fills its
 * host destination with NaN for that while, and ex_query says "not yet" at its first look at an
 * event after each record (so what a method does while it waits runs, whatever the timing). A method that reads a result before its sync reads
 * the old content or NaN; one that refills a staging buffer before the put that reads it has run
 * sends the new data: either way its result is wrong, not lucky. */
ooc_status_t ex_host_create_strict(ooc_ctx_t *ctx, const ooc_ops_t *ops, int nqueues,
                                   int64_t budget, int delay_us, ooc_exec_t **out);

/* ---- calls (thin wrappers: the table is the contract) ---------------------------------------- */

/* Device memory within the budget: OOC_ERR_NOMEM (message: what was asked, what is left) when it
 * does not fit or the backend refuses (the fault seam OOC_FAULT_DEVICE on CUDA). */
static inline ooc_status_t ex_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  return e->op->alloc(e, bytes, out);
}
static inline void ex_free(ooc_exec_t *e, double *p) {
  if (p) e->op->free(e, p);
}
static inline ooc_status_t ex_host_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  return e->op->host_alloc(e, bytes, out);
}
static inline void ex_host_free(ooc_exec_t *e, double *p) {
  if (p) e->op->host_free(e, p);
}
static inline ooc_status_t ex_event_create(ooc_exec_t *e, ex_event_t **out) {
  return e->op->event_create(e, out);
}
static inline void ex_event_destroy(ooc_exec_t *e, ex_event_t *ev) {
  if (ev) e->op->event_destroy(e, ev);
}
static inline ooc_status_t ex_record(ooc_exec_t *e, int q, ex_event_t *ev) {
  return e->op->record(e, q, ev);
}
static inline ooc_status_t ex_wait(ooc_exec_t *e, int q, ex_event_t *ev) {
  return e->op->wait(e, q, ev);
}
static inline ooc_status_t ex_sync(ooc_exec_t *e, ex_event_t *ev) { return e->op->sync(e, ev); }
/* A host interval on the trace (ex_ops_t.host_span); nothing where the executor has none. */
static inline void ex_host_span(ooc_exec_t *e, const char *name, double t0, double t1,
                                int64_t bytes) {
  if (e && e->op->host_span) e->op->host_span(e, name, t0, t1, bytes);
}
/* Queue q's workspace for its operations (what ex_getrf_ws & co. report) grown to at least bytes
 * now, before the caller queues work: on CUDA growing it waits for the queue and frees the old
 * one, and cudaFree waits for the whole device, so the first getrf of LU's factor, larger than
 * lu_warm's, waited for the transfers queued beside it (25 ms at n = 40000 on an H200). Within
 * e->budget like ex_alloc (OOC_ERR_NOMEM otherwise); nothing on the host executor. */
static inline ooc_status_t ex_reserve(ooc_exec_t *e, int q, int64_t bytes) {
  return e->op->reserve && bytes > 0 ? e->op->reserve(e, q, bytes) : OOC_OK;
}
static inline int ex_query(ooc_exec_t *e, ex_event_t *ev) { return e->op->query(e, ev); }
/* Every queue drained; the first asynchronous failure since the last report, if any. */
static inline ooc_status_t ex_finish(ooc_exec_t *e) { return e->op->finish(e); }
static inline ooc_status_t ex_put(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *h,
                                  int64_t ldh, double *d, int64_t ldd) {
  return e->op->put(e, q, m, n, h, ldh, d, ldd);
}
static inline ooc_status_t ex_get(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *d,
                                  int64_t ldd, double *h, int64_t ldh) {
  return e->op->get(e, q, m, n, d, ldd, h, ldh);
}
static inline ooc_status_t ex_copy(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s,
                                   int64_t lds, double *d, int64_t ldd) {
  return e->op->copy(e, q, m, n, s, lds, d, ldd);
}
static inline ooc_status_t ex_fill(ooc_exec_t *e, int q, int64_t m, int64_t n, double v, double *d,
                                   int64_t ldd) {
  return e->op->fill(e, q, m, n, v, d, ldd);
}
static inline ooc_status_t ex_absscan(ooc_exec_t *e, int q, int64_t m, int64_t n,
                                      const double *A, int64_t lda, int64_t top, double *mx,
                                      double *rowsum) {
  return e->op->absscan(e, q, m, n, A, lda, top, mx, rowsum);
}
static inline ooc_status_t ex_transpose(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s,
                                        int64_t lds, double *d, int64_t ldd) {
  return e->op->transpose(e, q, m, n, s, lds, d, ldd);
}
static inline ooc_status_t ex_mirror(ooc_exec_t *e, int q, int64_t j0, int64_t j1, int full,
                                     const double *S, int64_t lds, double *A, int64_t lda) {
  return e->op->mirror(e, q, j0, j1, full, S, lds, A, lda);
}
static inline ooc_status_t ex_gemm(ooc_exec_t *e, int q, char ta, char tb, int64_t m, int64_t n,
                                   int64_t k, double alpha, const double *A, int64_t lda,
                                   const double *B, int64_t ldb, double beta, double *C,
                                   int64_t ldc) {
  return e->op->gemm(e, q, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
static inline ooc_status_t ex_syrk(ooc_exec_t *e, int q, char uplo, char trans, int64_t n,
                                   int64_t k, double alpha, const double *A, int64_t lda,
                                   double beta, double *C, int64_t ldc) {
  return e->op->syrk(e, q, uplo, trans, n, k, alpha, A, lda, beta, C, ldc);
}
static inline ooc_status_t ex_trsm(ooc_exec_t *e, int q, char side, char uplo, char trans,
                                   char diag, int64_t m, int64_t n, double alpha, const double *A,
                                   int64_t lda, double *B, int64_t ldb) {
  return e->op->trsm(e, q, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb);
}
static inline ooc_status_t ex_laswp(ooc_exec_t *e, int q, int64_t ncols, double *A, int64_t lda,
                                    int64_t k1, int64_t k2, const int64_t *ipiv) {
  return e->op->laswp(e, q, ncols, A, lda, k1, k2, ipiv);
}
static inline int64_t ex_getrf_ws(ooc_exec_t *e, int64_t m, int64_t n) {
  return e->op->getrf_ws(e, m, n);
}
static inline int64_t ex_getri_ws(ooc_exec_t *e, int64_t n) { return e->op->getri_ws(e, n); }
static inline int64_t ex_potrf_ws(ooc_exec_t *e, int64_t n, int64_t lda) {
  return e->op->potrf_ws(e, n, lda);
}
static inline int64_t ex_potri_ws(ooc_exec_t *e, int64_t n, int64_t lda) {
  return e->op->potri_ws(e, n, lda);
}
static inline ooc_status_t ex_getrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A,
                                    int64_t lda, int64_t *ipiv, int64_t *info) {
  return e->op->getrf(e, q, m, n, A, lda, ipiv, info);
}
static inline ooc_status_t ex_potrf(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda,
                                    int64_t *info) {
  return e->op->potrf(e, q, n, A, lda, info);
}
static inline ooc_status_t ex_potri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda,
                                    int64_t *info) {
  return e->op->potri(e, q, n, A, lda, info);
}
static inline ooc_status_t ex_getri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda,
                                    int64_t *info) {
  return e->op->getri(e, q, n, A, lda, info);
}
static inline ooc_status_t ex_trtri(ooc_exec_t *e, int q, char uplo, char diag, int64_t n,
                                    double *A, int64_t lda, int64_t *info) {
  return e->op->trtri(e, q, uplo, diag, n, A, lda, info);
}
static inline ooc_status_t ex_geqrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A,
                                    int64_t lda, double *tau) {
  return e->op->geqrf(e, q, m, n, A, lda, tau);
}
static inline ooc_status_t ex_ormqr(ooc_exec_t *e, int q, char trans, int64_t m, int64_t n,
                                    int64_t k, double *A, int64_t lda, const double *tau,
                                    double *C, int64_t ldc) {
  return e->op->ormqr(e, q, trans, m, n, k, A, lda, tau, C, ldc);
}
static inline ooc_status_t ex_laset(ooc_exec_t *e, int q, char uplo, int64_t m, int64_t n,
                                    double alpha, double beta, double *A, int64_t lda) {
  return e->op->laset(e, q, uplo, m, n, alpha, beta, A, lda);
}
/* Host memory the caller allocated itself (not ex_host_alloc's), made as fast to put from and
 * get into as staging (issue 22: the tile cache lends its buffers to DMA, tstore.h): pinned in
 * place on CUDA (cudaHostRegister: 25-33 GB/s in 8-128 MiB pieces on an H100 host,
 * tools/pin_bench.c, about what a gather costs); nothing to do on the host executor. Returns 1 when the memory is usable so,
 * 0 when the system refused (no error is recorded: puts and gets from it still work, as from
 * any pageable memory, only synchronously). ex_host_unregister (only after a 1) before the
 * memory is freed or the executor destroyed. ex_can_register: whether registering does
 * anything at all (a caller may skip the bookkeeping where it does not). */
static inline int ex_can_register(const ooc_exec_t *e) { return e->op->host_register != NULL; }
static inline int ex_host_register(ooc_exec_t *e, void *p, size_t bytes) {
  return e->op->host_register ? e->op->host_register(e, p, bytes) : 1;
}
static inline void ex_host_unregister(ooc_exec_t *e, void *p) {
  if (e->op->host_unregister) e->op->host_unregister(e, p);
}
/* Waits for everything enqueued, frees what the executor owns (every buffer still allocated is
 * freed too: an error path need not track them). NULL is fine. */
static inline void ex_destroy(ooc_exec_t *e) {
  if (e) e->op->destroy(e);
}

#endif
