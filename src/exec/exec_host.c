/* exec_host.c: the host executor (exec.h). Every queue is a worker thread that runs its
 * operations in order through the ops table; events are (queue, sequence number) pairs.
 *
 * Why threads and not synchronous calls: a method's caller thread moves tiles between the tile
 * store and the ring's slots (scratch reads and writes, checksums) while the device computes; on
 * the host the "device" is the worker, so the store traffic overlaps the products exactly as it
 * does on a GPU, and a schedule that forgets an ex_sync before reusing a slot races here too
 * (ASan and the tests see it) instead of only on the GPU host. The queue threads are streams,
 * not workers of the process's pool (base/parloop.h): a loop inside an operation runs on the
 * pool like any other, with the queue thread as its worker 0. */
#include "exec/exec.h"

#include "base/absscan.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
  OP_PUT, OP_GET, OP_COPY, OP_FILL, OP_TRANSPOSE, OP_MIRROR, OP_GEMM, OP_SYRK, OP_TRSM, OP_LASWP, OP_GETRF,
  OP_POTRF, OP_POTRI, OP_GETRI, OP_TRTRI, OP_GEQRF, OP_ORMQR, OP_LASET, OP_ABSSCAN, OP_WAIT,
  OP_STOP
};

typedef struct hop {
  int kind;
  char c0, c1, c2, c3;          /* ta/tb, side/uplo/trans/diag as the operation has them */
  int64_t m, n, k, lda, ldb, ldc;
  double alpha, beta;
  const double *A, *B;
  double *C;
  int64_t *ipiv, *info;         /* outputs (getrf, potrf, ...) */
  int64_t *piv_in;              /* laswp: the executor's copy (malloc, freed by the worker) */
  int64_t k1, k2;
  int wq;                       /* OP_WAIT: the queue and sequence number to wait for */
  int64_t wseq;
} hop_t;

#define QCAP 64 /* operations in flight per queue before an enqueue waits */

typedef struct hqueue {
  hop_t ring[QCAP];
  int64_t head, tail;          /* enqueued = tail, started = head */
  int64_t done;                /* operations completed */
  pthread_t th;
  int started;
  double busy;                 /* seconds this queue's worker ran operations (under mu) */
  struct host *h; /* the worker's way back to the executor it runs for */
} hqueue_t;

typedef struct host {
  const ooc_ops_t *ops;
  int delay_us; /* strict mode: each operation starts this late */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  hqueue_t *q;         /* nqueues of them, allocated with the executor */
  struct hblk *blocks; /* every live buffer (device and staging): destroy frees what is left */
} host_t;

/* The header in front of every buffer the executor hands out (64 bytes: keeps ooc_malloc's
 * alignment). */
typedef struct hblk {
  struct hblk *prev, *next;
  int64_t bytes;
  int device; /* counts against the budget */
  char pad[64 - 2 * sizeof(void *) - sizeof(int64_t) - sizeof(int)];
} hblk_t;
_Static_assert(sizeof(hblk_t) == 64, "the header keeps 64-byte alignment");

struct ex_event {
  int q;        /* -1: never recorded (complete) */
  int64_t seq;  /* complete once q's done count reaches it */
  int polled;   /* strict mode: queried since it was recorded */
};

static host_t *H(ooc_exec_t *e) { return e->impl; }

/* ---- the worker -------------------------------------------------------------------------- */

static void copy2d(int64_t m, int64_t n, const double *s, int64_t lds, double *d, int64_t ldd) {
  if (m <= 0 || n <= 0) return;
  if (lds == m && ldd == m) {
    memcpy(d, s, (size_t)(m * n) * sizeof(double));
    return;
  }
  for (int64_t j = 0; j < n; j++) memcpy(d + j * ldd, s + j * lds, (size_t)m * sizeof(double));
}

static void run_op(const ooc_ops_t *o, hop_t *p) {
  switch (p->kind) {
  case OP_GET:
    copy2d(p->m, p->n, p->A, p->lda, p->C, p->ldc);
    break;
  case OP_PUT:
  case OP_COPY:
    copy2d(p->m, p->n, p->A, p->lda, p->C, p->ldc);
    break;
  case OP_FILL:
    for (int64_t j = 0; j < p->n; j++)
      for (int64_t i = 0; i < p->m; i++) p->C[i + j * p->ldc] = p->alpha;
    break;
  case OP_TRANSPOSE: /* blocked so both sides stay in cache */
    for (int64_t j0 = 0; j0 < p->n; j0 += 64)
      for (int64_t i0 = 0; i0 < p->m; i0 += 64)
        for (int64_t j = j0; j < p->n && j < j0 + 64; j++)
          for (int64_t i = i0; i < p->m && i < i0 + 64; i++)
            p->C[j + i * p->ldc] = p->A[i + j * p->lda];
    break;
  case OP_MIRROR: /* columns [k1, k2) above the diagonal, full in m; blocked as transpose */
    for (int64_t j0 = p->k1; j0 < p->k2; j0 += 64)
      for (int64_t i0 = 0; i0 < j0 + 64 && i0 < p->k2; i0 += 64)
        for (int64_t j = j0; j < p->k2 && j < j0 + 64; j++)
          for (int64_t i = i0; i < j && i < i0 + 64; i++)
            p->C[i + j * p->ldc] = p->m ? p->A[j + i * p->lda] : 0.0;
    break;
  case OP_GEMM:
    o->gemm(p->c0, p->c1, p->m, p->n, p->k, p->alpha, p->A, p->lda, p->B, p->ldb, p->beta, p->C,
            p->ldc);
    break;
  case OP_SYRK:
    o->syrk(p->c0, p->c1, p->n, p->k, p->alpha, p->A, p->lda, p->beta, p->C, p->ldc);
    break;
  case OP_TRSM:
    o->trsm(p->c0, p->c1, p->c2, p->c3, p->m, p->n, p->alpha, p->A, p->lda, p->C, p->ldc);
    break;
  case OP_LASWP:
    /* ops.h's laswp reads ipiv[k1..k2); the copy holds just those entries */
    o->laswp(p->n, p->C, p->ldc, p->k1, p->k2, p->piv_in - p->k1);
    free(p->piv_in);
    break;
  case OP_GETRF: {
    /* ipiv NULL: no row interchanges (exec.h), the recursive trsm + gemm LU over the table */
    int64_t r = p->ipiv ? o->getrf(p->m, p->n, p->C, p->ldc, p->ipiv)
                        : ooc_getrf_nopiv(o, p->m, p->n, p->C, p->ldc);
    if (p->info) *p->info = r;
    break;
  }
  case OP_POTRF: {
    int64_t r = o->potrf(p->n, p->C, p->ldc);
    if (p->info) *p->info = r;
    break;
  }
  case OP_POTRI: {
    int64_t r = o->potri(p->n, p->C, p->ldc);
    if (p->info) *p->info = r;
    break;
  }
  case OP_GETRI: {
    int64_t r = o->getri(p->n, p->C, p->ldc);
    if (p->info) *p->info = r;
    break;
  }
  case OP_TRTRI: {
    int64_t r = o->trtri(p->c0, p->c1, p->n, p->C, p->ldc);
    if (p->info) *p->info = r;
    break;
  }
  case OP_GEQRF: /* tau rides in B (a device buffer: host memory here) */
    o->geqrf(p->m, p->n, p->C, p->ldc, (double *)p->B);
    break;
  case OP_ORMQR:
    o->ormqr(p->c0, p->m, p->n, p->k, (double *)p->A, p->lda, p->B, p->C, p->ldc);
    break;
  case OP_LASET:
    o->laset(p->c0, p->m, p->n, p->alpha, p->beta, p->C, p->ldc);
    break;
  case OP_ABSSCAN: /* mx rides in C, rowsum in B (device buffers: host memory here) */
    ooc_absscan(p->m, p->n, p->A, p->lda, p->k1, p->C, (double *)p->B);
    break;
  default:
    break;
  }
}

/* Strict mode: the operation starts late, and a get first fills its host destination with NaN
 * for that while (what a caller that reads it before its sync sees, if not the old content). */
static void strict_start(const host_t *h, const hop_t *op) {
  if (op->kind == OP_GET)
    for (int64_t j = 0; j < op->n; j++)
      for (int64_t i = 0; i < op->m; i++) op->C[i + j * op->ldc] = NAN;
  nanosleep(&(struct timespec){0, 1000L * h->delay_us}, NULL);
}

static void *worker_main(void *arg) {
  hqueue_t *q = arg;
  host_t *h = q->h;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (q->head == q->tail) pthread_cond_wait(&h->cv, &h->mu);
    hop_t op = q->ring[q->head % QCAP];
    if (op.kind == OP_STOP) {
      q->head++;
      q->done++;
      pthread_cond_broadcast(&h->cv);
      break;
    }
    if (op.kind == OP_WAIT) {
      while (h->q[op.wq].done < op.wseq) pthread_cond_wait(&h->cv, &h->mu);
    } else {
      pthread_mutex_unlock(&h->mu);
      if (h->delay_us > 0) strict_start(h, &op);
      double t0 = ooc_now();
      run_op(h->ops, &op);
      double dt = ooc_now() - t0;
      pthread_mutex_lock(&h->mu);
      q->busy += dt;
    }
    q->head++;
    q->done++;
    pthread_cond_broadcast(&h->cv); /* waiters on events, and an enqueuer waiting for room */
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- enqueue ----------------------------------------------------------------------------- */

static ooc_status_t push(ooc_exec_t *e, int qi, const hop_t *op) {
  host_t *h = H(e);
  if (qi < 0 || qi >= e->nqueues)
    return OOC_FAIL(e->ctx, OOC_ERR_INTERNAL, "executor %s: queue %d of %d", e->name, qi,
                    e->nqueues);
  hqueue_t *q = &h->q[qi];
  pthread_mutex_lock(&h->mu);
  while (q->tail - q->head >= QCAP) pthread_cond_wait(&h->cv, &h->mu);
  q->ring[q->tail % QCAP] = *op;
  q->tail++;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->mu);
  e->stats.ops++;
  return OOC_OK;
}

static ooc_status_t h_put(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *hst,
                          int64_t ldh, double *d, int64_t ldd) {
  e->stats.bytes_put += 8 * m * n;
  return push(e, q, &(hop_t){.kind = OP_PUT, .m = m, .n = n, .A = hst, .lda = ldh, .C = d,
                             .ldc = ldd});
}
static ooc_status_t h_get(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *d, int64_t ldd,
                          double *hst, int64_t ldh) {
  e->stats.bytes_get += 8 * m * n;
  return push(e, q, &(hop_t){.kind = OP_GET, .m = m, .n = n, .A = d, .lda = ldd, .C = hst,
                             .ldc = ldh});
}
static ooc_status_t h_copy(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s, int64_t lds,
                           double *d, int64_t ldd) {
  return push(e, q, &(hop_t){.kind = OP_COPY, .m = m, .n = n, .A = s, .lda = lds, .C = d,
                             .ldc = ldd});
}
static ooc_status_t h_fill(ooc_exec_t *e, int q, int64_t m, int64_t n, double v, double *d,
                           int64_t ldd) {
  return push(e, q, &(hop_t){.kind = OP_FILL, .m = m, .n = n, .alpha = v, .C = d, .ldc = ldd});
}
static ooc_status_t h_transpose(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s,
                                int64_t lds, double *d, int64_t ldd) {
  return push(e, q, &(hop_t){.kind = OP_TRANSPOSE, .m = m, .n = n, .A = s, .lda = lds, .C = d,
                             .ldc = ldd});
}
static ooc_status_t h_mirror(ooc_exec_t *e, int q, int64_t j0, int64_t j1, int full,
                             const double *S, int64_t lds, double *A, int64_t lda) {
  if (j1 <= j0) return OOC_OK;
  return push(e, q, &(hop_t){.kind = OP_MIRROR, .m = full != 0, .k1 = j0, .k2 = j1, .A = S,
                             .lda = lds, .C = A, .ldc = lda});
}
static ooc_status_t h_gemm(ooc_exec_t *e, int q, char ta, char tb, int64_t m, int64_t n, int64_t k,
                           double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
                           double beta, double *C, int64_t ldc) {
  e->stats.flops += 2.0 * m * n * k;
  return push(e, q, &(hop_t){.kind = OP_GEMM, .c0 = ta, .c1 = tb, .m = m, .n = n, .k = k,
                             .alpha = alpha, .A = A, .lda = lda, .B = B, .ldb = ldb, .beta = beta,
                             .C = C, .ldc = ldc});
}
static ooc_status_t h_syrk(ooc_exec_t *e, int q, char uplo, char trans, int64_t n, int64_t k,
                           double alpha, const double *A, int64_t lda, double beta, double *C,
                           int64_t ldc) {
  e->stats.flops += 1.0 * n * (n + 1) * k;
  return push(e, q, &(hop_t){.kind = OP_SYRK, .c0 = uplo, .c1 = trans, .n = n, .k = k,
                             .alpha = alpha, .A = A, .lda = lda, .beta = beta, .C = C, .ldc = ldc});
}
static ooc_status_t h_trsm(ooc_exec_t *e, int q, char side, char uplo, char trans, char diag,
                           int64_t m, int64_t n, double alpha, const double *A, int64_t lda,
                           double *B, int64_t ldb) {
  e->stats.flops += (side == 'L' || side == 'l') ? 1.0 * m * m * n : 1.0 * m * n * n;
  return push(e, q, &(hop_t){.kind = OP_TRSM, .c0 = side, .c1 = uplo, .c2 = trans, .c3 = diag,
                             .m = m, .n = n, .alpha = alpha, .A = A, .lda = lda, .C = B,
                             .ldc = ldb});
}
static ooc_status_t h_laswp(ooc_exec_t *e, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                            int64_t k2, const int64_t *ipiv) {
  if (k2 <= k1 || ncols <= 0) return OOC_OK;
  int64_t *c = malloc((size_t)(k2 - k1) * sizeof(int64_t));
  if (!c)
    return OOC_FAIL(e->ctx, OOC_ERR_NOMEM, "executor %s: no memory for %lld row interchanges",
                    e->name, (long long)(k2 - k1));
  memcpy(c, ipiv + k1, (size_t)(k2 - k1) * sizeof(int64_t));
  ooc_status_t st = push(e, q, &(hop_t){.kind = OP_LASWP, .n = ncols, .C = A, .ldc = lda,
                                        .k1 = k1, .k2 = k2, .piv_in = c});
  if (st != OOC_OK) free(c);
  return st;
}
/* The host's getrf, getri, potrf and potri work in A (and ipiv) alone. */
static int64_t h_getrf_ws(ooc_exec_t *e, int64_t m, int64_t n) {
  (void)e, (void)m, (void)n;
  return 0;
}
static int64_t h_getri_ws(ooc_exec_t *e, int64_t n) {
  (void)e, (void)n;
  return 0;
}
static int64_t h_potr_ws(ooc_exec_t *e, int64_t n, int64_t lda) {
  (void)e, (void)n, (void)lda;
  return 0;
}
static ooc_status_t h_getrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                            int64_t *ipiv, int64_t *info) {
  int64_t mn = m < n ? m : n;
  /* LAPACK's count (2n^3/3 square): the bracket is the multiplications, as many additions */
  e->stats.flops += 2.0 * (1.0 * m * n * mn - 0.5 * (m + n) * mn * mn + mn * mn * mn / 3.0);
  return push(e, q, &(hop_t){.kind = OP_GETRF, .m = m, .n = n, .C = A, .ldc = lda, .ipiv = ipiv,
                             .info = info});
}
static ooc_status_t h_potrf(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  e->stats.flops += n * (double)n * n / 3.0;
  return push(e, q, &(hop_t){.kind = OP_POTRF, .n = n, .C = A, .ldc = lda, .info = info});
}
static ooc_status_t h_potri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  e->stats.flops += 2.0 * n * (double)n * n / 3.0;
  return push(e, q, &(hop_t){.kind = OP_POTRI, .n = n, .C = A, .ldc = lda, .info = info});
}
static ooc_status_t h_getri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  e->stats.flops += 4.0 * n * (double)n * n / 3.0;
  return push(e, q, &(hop_t){.kind = OP_GETRI, .n = n, .C = A, .ldc = lda, .info = info});
}
static ooc_status_t h_trtri(ooc_exec_t *e, int q, char uplo, char diag, int64_t n, double *A,
                            int64_t lda, int64_t *info) {
  e->stats.flops += n * (double)n * n / 3.0;
  return push(e, q, &(hop_t){.kind = OP_TRTRI, .c0 = uplo, .c1 = diag, .n = n, .C = A, .ldc = lda,
                             .info = info});
}
static ooc_status_t h_geqrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                            double *tau) {
  int64_t k = m < n ? m : n;
  e->stats.flops += 4.0 * m * n * k - 2.0 * (double)(m + n) * k * k + 4.0 * k * k * k / 3.0;
  return push(e, q, &(hop_t){.kind = OP_GEQRF, .m = m, .n = n, .C = A, .ldc = lda, .B = tau});
}
static ooc_status_t h_ormqr(ooc_exec_t *e, int q, char trans, int64_t m, int64_t n, int64_t k,
                            double *A, int64_t lda, const double *tau, double *C, int64_t ldc) {
  e->stats.flops += 4.0 * m * n * k - 2.0 * n * k * k;
  return push(e, q, &(hop_t){.kind = OP_ORMQR, .c0 = trans, .m = m, .n = n, .k = k, .A = A,
                             .lda = lda, .B = tau, .C = C, .ldc = ldc});
}
static ooc_status_t h_laset(ooc_exec_t *e, int q, char uplo, int64_t m, int64_t n, double alpha,
                            double beta, double *A, int64_t lda) {
  return push(e, q, &(hop_t){.kind = OP_LASET, .c0 = uplo, .m = m, .n = n, .alpha = alpha,
                             .beta = beta, .C = A, .ldc = lda});
}
static ooc_status_t h_absscan(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *A,
                              int64_t lda, int64_t top, double *mx, double *rowsum) {
  if (m <= 0 || n <= 0) return OOC_OK;
  return push(e, q, &(hop_t){.kind = OP_ABSSCAN, .m = m, .n = n, .A = A, .lda = lda, .k1 = top,
                             .C = mx, .B = rowsum});
}

/* ---- events ------------------------------------------------------------------------------ */

static ooc_status_t h_event_create(ooc_exec_t *e, ex_event_t **out) {
  ex_event_t *ev = ooc_malloc(e->ctx, sizeof *ev);
  if (!ev) return OOC_FAIL(e->ctx, OOC_ERR_NOMEM, "executor %s: no memory for an event", e->name);
  ev->q = -1;
  ev->seq = 0;
  *out = ev;
  return OOC_OK;
}
static void h_event_destroy(ooc_exec_t *e, ex_event_t *ev) { ooc_free(e->ctx, ev); }

static ooc_status_t h_record(ooc_exec_t *e, int qi, ex_event_t *ev) {
  if (qi < 0 || qi >= e->nqueues)
    return OOC_FAIL(e->ctx, OOC_ERR_INTERNAL, "executor %s: queue %d of %d", e->name, qi,
                    e->nqueues);
  host_t *h = H(e);
  pthread_mutex_lock(&h->mu);
  ev->q = qi;
  ev->seq = h->q[qi].tail;
  ev->polled = 0;
  pthread_mutex_unlock(&h->mu);
  return OOC_OK;
}
static ooc_status_t h_wait(ooc_exec_t *e, int qi, ex_event_t *ev) {
  if (ev->q < 0 || ev->q == qi) return OOC_OK; /* complete, or ordered by the queue itself */
  return push(e, qi, &(hop_t){.kind = OP_WAIT, .wq = ev->q, .wseq = ev->seq});
}
static ooc_status_t h_sync(ooc_exec_t *e, ex_event_t *ev) {
  if (ev->q < 0) return OOC_OK;
  host_t *h = H(e);
  pthread_mutex_lock(&h->mu);
  while (h->q[ev->q].done < ev->seq) pthread_cond_wait(&h->cv, &h->mu);
  pthread_mutex_unlock(&h->mu);
  return OOC_OK; /* host operations cannot fail once enqueued */
}
static int h_query(ooc_exec_t *e, ex_event_t *ev) {
  if (ev->q < 0) return 1;
  host_t *h = H(e);
  if (h->delay_us > 0 && !ev->polled++) return 0; /* strict: busy at the first look */
  pthread_mutex_lock(&h->mu);
  int done = h->q[ev->q].done >= ev->seq;
  pthread_mutex_unlock(&h->mu);
  return done;
}

static ooc_status_t h_finish(ooc_exec_t *e) {
  host_t *h = H(e);
  pthread_mutex_lock(&h->mu);
  for (int i = 0; i < e->nqueues; i++)
    while (h->q[i].done < h->q[i].tail) pthread_cond_wait(&h->cv, &h->mu);
  double busy = 0; /* the queues' seconds as of now, for the stats (caller's thread) */
  for (int i = 0; i < e->nqueues; i++) busy += h->q[i].busy;
  e->stats.busy = busy;
  pthread_mutex_unlock(&h->mu);
  return OOC_OK;
}

/* ---- memory ------------------------------------------------------------------------------ */

static ooc_status_t blk_alloc(ooc_exec_t *e, size_t bytes, int device, double **out) {
  host_t *h = H(e);
  *out = NULL;
  if (device && e->budget > 0 && e->dev_bytes + (int64_t)bytes > e->budget)
    return OOC_FAIL(e->ctx, OOC_ERR_NOMEM,
                    "executor %s: %zu bytes asked with %lld of its %lld-byte budget in use",
                    e->name, bytes, (long long)e->dev_bytes, (long long)e->budget);
  hblk_t *p = ooc_malloc(e->ctx, bytes + sizeof(hblk_t));
  if (!p)
    return OOC_FAIL(e->ctx, OOC_ERR_NOMEM, "executor %s: out of host memory for %zu %s bytes",
                    e->name, bytes, device ? "buffer" : "staging");
  *p = (hblk_t){.prev = NULL, .next = h->blocks, .bytes = (int64_t)bytes, .device = device};
  if (h->blocks) h->blocks->prev = p;
  h->blocks = p;
  if (device) {
    e->dev_bytes += (int64_t)bytes;
    if (e->dev_bytes > e->stats.dev_peak) e->stats.dev_peak = e->stats.mem_peak = e->dev_bytes;
  } else {
    e->staging_bytes += (int64_t)bytes;
    if (e->staging_bytes > e->stats.staging_peak) e->stats.staging_peak = e->staging_bytes;
  }
  *out = (double *)(p + 1);
  return OOC_OK;
}

static void blk_free(ooc_exec_t *e, double *d) {
  host_t *h = H(e);
  hblk_t *p = (hblk_t *)d - 1;
  if (p->device) e->dev_bytes -= p->bytes;
  else e->staging_bytes -= p->bytes;
  if (p->prev) p->prev->next = p->next;
  else h->blocks = p->next;
  if (p->next) p->next->prev = p->prev;
  ooc_free(e->ctx, p);
}

static ooc_status_t h_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  return blk_alloc(e, bytes, 1, out);
}
static void h_free(ooc_exec_t *e, double *d) { blk_free(e, d); }
static ooc_status_t h_host_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  return blk_alloc(e, bytes, 0, out);
}
static void h_host_free(ooc_exec_t *e, double *p) { blk_free(e, p); }

static void h_destroy(ooc_exec_t *e) {
  host_t *h = H(e);
  for (int i = 0; i < e->nqueues; i++)
    if (h->q[i].started) (void)push(e, i, &(hop_t){.kind = OP_STOP});
  for (int i = 0; i < e->nqueues; i++)
    if (h->q[i].started) pthread_join(h->q[i].th, NULL);
  while (h->blocks) blk_free(e, (double *)(h->blocks + 1));
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  ooc_ctx_t *ctx = e->ctx;
  ooc_free(ctx, h);
  ooc_free(ctx, e);
}

/* The strict executor registers host memory as the CUDA one pins it: nothing happens to the
 * memory, but the count must come back to zero (tests check stats.registered). */
static int h_host_register(ooc_exec_t *e, void *p, size_t bytes) {
  (void)p, (void)bytes;
  e->stats.registered++;
  return 1;
}
static void h_host_unregister(ooc_exec_t *e, void *p) {
  (void)p;
  e->stats.registered--;
}

#define HOST_OPS                                                                                   \
  .alloc = h_alloc, .free = h_free, .host_alloc = h_host_alloc, .host_free = h_host_free,          \
  .event_create = h_event_create, .event_destroy = h_event_destroy, .record = h_record,            \
  .wait = h_wait, .sync = h_sync, .query = h_query, .finish = h_finish, .put = h_put,              \
  .get = h_get, .copy = h_copy, .fill = h_fill, .transpose = h_transpose, .mirror = h_mirror,      \
  .gemm = h_gemm, .syrk = h_syrk, .trsm = h_trsm, .laswp = h_laswp, .getrf = h_getrf,              \
  .getrf_ws = h_getrf_ws, .getri_ws = h_getri_ws, .potrf_ws = h_potr_ws, .potri_ws = h_potr_ws,  \
  .potrf = h_potrf, .potri = h_potri, .getri = h_getri, .trtri = h_trtri,                          \
  .geqrf = h_geqrf, .ormqr = h_ormqr, .laset = h_laset, .absscan = h_absscan,                   \
  .destroy = h_destroy
static const ex_ops_t host_ops = {HOST_OPS};
static const ex_ops_t strict_ops = {HOST_OPS, .host_register = h_host_register,
                                    .host_unregister = h_host_unregister};

static ooc_status_t create(ooc_ctx_t *ctx, const ooc_ops_t *ops, int nqueues, int64_t budget,
                           int delay_us, ooc_exec_t **out) {
  *out = NULL;
  if (nqueues <= 0) nqueues = 1;
  if (nqueues > EX_MAX_QUEUES) nqueues = EX_MAX_QUEUES;
  if (!ops || !ops->trtri || !ops->geqrf || !ops->ormqr || !ops->laset)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "host executor: kernel table %s lacks trtri or the "
                    "QR kernels (geqrf, ormqr, laset)",
                    ops ? ops->name : "(none)");
  ooc_exec_t *e = ooc_malloc(ctx, sizeof *e);
  host_t *h = ooc_malloc(ctx, sizeof *h + (size_t)nqueues * sizeof(hqueue_t));
  if (!e || !h) {
    ooc_free(ctx, e);
    ooc_free(ctx, h);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the host executor");
  }
  memset(e, 0, sizeof *e);
  memset(h, 0, sizeof *h + (size_t)nqueues * sizeof(hqueue_t));
  h->q = (hqueue_t *)(h + 1);
  *e = (ooc_exec_t){.op = delay_us > 0 ? &strict_ops : &host_ops, .ctx = ctx, .name = ops->name, .kind = EX_HOST,
                    .nqueues = nqueues, .unified = delay_us <= 0, .budget = budget,
                    .mem_budget = budget > 0 ? budget : 0, .impl = h};
  h->ops = ops;
  h->delay_us = delay_us;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cv, NULL);
  for (int i = 0; i < nqueues; i++) {
    h->q[i].h = h;
    if (pthread_create(&h->q[i].th, NULL, worker_main, &h->q[i]) != 0) {
      e->nqueues = i; /* destroy stops the workers that did start */
      h_destroy(e);
      return OOC_FAIL(ctx, OOC_ERR_NOMEM, "host executor: cannot start worker thread %d of %d", i,
                      nqueues);
    }
    h->q[i].started = 1;
  }
  *out = e;
  return OOC_OK;
}

int64_t ex_host_bytes(int nqueues) {
  return (int64_t)(sizeof(ooc_exec_t) + sizeof(host_t) + 64 * 2) +
         (int64_t)(nqueues > 0 ? nqueues : 1) * (int64_t)sizeof(hqueue_t);
}

ooc_status_t ex_host_create(ooc_ctx_t *ctx, const ooc_ops_t *ops, int nqueues, int64_t budget,
                            ooc_exec_t **out) {
  return create(ctx, ops, nqueues, budget, 0, out);
}

ooc_status_t ex_host_create_strict(ooc_ctx_t *ctx, const ooc_ops_t *ops, int nqueues,
                                   int64_t budget, int delay_us, ooc_exec_t **out) {
  return create(ctx, ops, nqueues, budget, delay_us > 0 ? delay_us : 1, out);
}
