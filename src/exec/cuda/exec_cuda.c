/* exec_cuda.c: the CUDA executor (exec.h's contract; exec_cuda.h says how each part is met). */
#include "exec/cuda/exec_cuda.h"
#include "kernels/cuda/ocu_rt.h"
#include "kernels/cuda/ocu_trtri.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* exec_cuda_kernels.cu */
cudaError_t exc_fill(int64_t m, int64_t n, double v, double *A, int64_t lda, cudaStream_t s);
cudaError_t exc_permute_rows(int64_t ncols, double *A, int64_t lda, const int64_t *src,
                             const int64_t *dst, const int64_t *off, int64_t nseg, int64_t maxseg,
                             cudaStream_t s);
cudaError_t exc_copy_words(int64_t m, int64_t n, const void *s, int64_t lds, void *d, int64_t ldd,
                           int to_host, cudaStream_t st);
cudaError_t exc_diag_info(const double *A, int64_t lda, int64_t n, int mode, const int *cuinfo,
                          int64_t *out, cudaStream_t s);
cudaError_t exc_diag_swap(double *A, int64_t lda, int64_t n, double *save, int restore,
                          cudaStream_t s);
cudaError_t exc_mirror(double *A, int64_t lda, const double *S, int64_t lds, int64_t j0,
                       int64_t j1, int full, cudaStream_t s);
cudaError_t exc_laset(char uplo, int64_t m, int64_t n, double alpha, double beta, double *A,
                      int64_t lda, cudaStream_t s);
cudaError_t exc_absscan(int64_t m, int64_t n, const double *A, int64_t lda, int64_t top,
                        double *mx, double *rowsum, cudaStream_t s);
cudaError_t exc_preload(void);
/* ocu_kernels.cu (getri's split, through ocu_getri_block) */
cudaError_t ocu_preload(void);

#define NOQ INT_MIN /* enter(): a call that names no queue */

enum { DIAG_NONE = 0, DIAG_ZERO = 1, DIAG_POSITIVE = 2 }; /* exc_diag_info's modes */

#define GETRI_NB 512        /* getri's sweep block (as the gj executor's) */
#define SMALL_BYTES 256     /* per queue device: [0] int64 info, [1] cuSOLVER's int info */
#define HRING0 ((int64_t)64 << 10) /* per queue pinned ring, first size (cfg->ring_bytes) */
#define RALIGN 64

/* A record in a queue's pinned ring: what a host function writes to the caller when the
 * operation before it has run; its data (pivots) follows it. */
typedef struct hrec {
  struct cq *q;
  int64_t end;        /* ring position after this record: the tail once it is done */
  int64_t *ipiv_out;  /* NULL, or npiv pivots to convert (1-based -> 0-based) */
  int64_t npiv;
  int64_t *info_out;  /* NULL, or where the info goes */
  int has_info;       /* info below came from the device */
  const char *op;
  int64_t info;       /* D2H target */
  double *out;        /* NULL, or a small get's destination: out_m x out_n (ld out_ld) */
  int64_t out_m, out_n, out_ld;
  char pad[32];
} hrec_t;
_Static_assert(sizeof(hrec_t) % RALIGN == 0, "records keep the ring's alignment");

typedef struct cq {
  struct cx *x;
  int i;
  cudaStream_t st;
  cublasHandle_t bl;
  int64_t *small;      /* device, SMALL_BYTES */
  char *ws;            /* device workspace of the operations, grows */
  int64_t ws_bytes;
  void *hws;           /* cuSOLVER's host workspace (ooc_malloc), grows */
  size_t hws_bytes;
  char *ring;          /* pinned */
  char *ring_dev;      /* the ring as the device addresses it (small_copy), or NULL */
  int64_t cap, head;   /* head: caller's thread */
  _Atomic int64_t tail; /* host functions */
  const char *last;    /* the last operation enqueued (for a device fault's message) */
  int64_t nops;
} cq_t;

struct ex_event {
  cudaEvent_t ev;
  int q; /* -1: never recorded */
};

typedef struct cx {
  ooc_exec_t e;
  ocu_rt_t rt;
  cq_t q[EX_MAX_QUEUES];
  ocu_trtri_cfg_t tt;
  char name[32];
  /* a failure a host function saw (it may not touch the context): reported by sync/finish */
  pthread_mutex_t mu;
  int mu_on, async_failed;
  char async_msg[256];
  /* broken: the first asynchronous failure's status and message, returned again after it */
  ooc_status_t broken;
  char broken_msg[512];
  /* laswp's host scratch (do_laswp): which original row each touched row holds, and the
   * generation that last touched it, for rows < lsw_cap */
  int64_t *lsw_row;
  uint32_t *lsw_gen;
  int64_t lsw_cap;
  uint32_t lsw_now;
  /* with timing: when the operation being enqueued began (begin), for leave's host span */
  double enq_t0;
  const char *enq_op;
} cx_t;

static cx_t *X(ooc_exec_t *e) { return (cx_t *)e; }

/* ---- errors ------------------------------------------------------------------------------- */

/* Every entry point: the executor's device current on the caller's thread, and the queue valid;
 * a broken executor refuses. */
static ooc_status_t enter(cx_t *x, int q, const char *op) {
  if (x->broken)
    return OOC_FAIL(x->e.ctx, x->broken, "executor %s: %s refused after an earlier failure (%s)",
                    x->name, op, x->broken_msg);
  if (q != NOQ && (q < 0 || q >= x->e.nqueues))
    return OOC_FAIL(x->e.ctx, OOC_ERR_INTERNAL, "executor %s: %s on queue %d of %d", x->name, op, q,
                    x->e.nqueues);
  cudaError_t c = cudaSetDevice(x->rt.dev);
  if (c != cudaSuccess)
    return OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE, "executor %s: %s: cudaSetDevice(%d) failed: %s",
                    x->name, op, x->rt.dev, cudaGetErrorString(c));
  if (q != NOQ) {
    x->q[q].last = op;
    x->q[q].nops++;
  }
  return OOC_OK;
}

/* After an enqueue: a device error breaks the executor (its message is the one recorded). With
 * timing, an enqueue that held the caller over 0.2 ms (a library call that waits for the device,
 * a full hardware queue) is a host span named after the operation on the trace's host row: an
 * asynchronous call should return in microseconds. */
static ooc_status_t leave(cx_t *x, ooc_status_t st) {
  if (x->enq_t0 > 0) {
    double t1 = ooc_now();
    if (t1 - x->enq_t0 > 2e-4) ocu_rt_host_span(&x->rt, x->enq_op, x->enq_t0, t1, 0);
    x->enq_t0 = 0;
  }
  if (st == OOC_ERR_DEVICE && !x->broken) {
    x->broken = st;
    snprintf(x->broken_msg, sizeof x->broken_msg, "%s", ooc_ctx_error(x->e.ctx));
  }
  return st;
}

/* An operation's enqueue: enter(), and the executor's counts. */
static ooc_status_t begin(ooc_exec_t *e, int q, const char *op, double flops) {
  OOC_TRY(enter(X(e), q, op));
  if (X(e)->rt.timing) {
    X(e)->enq_t0 = ooc_now();
    X(e)->enq_op = op;
  }
  e->stats.ops++;
  e->stats.flops += flops;
  return OOC_OK;
}

/* A queue's device failure or a host function's report, as the status of a sync or finish. */
static ooc_status_t report(cx_t *x, int q, cudaError_t c) {
  if (x->broken)
    return OOC_FAIL(x->e.ctx, x->broken, "executor %s: broken by an earlier failure (%s)", x->name,
                    x->broken_msg);
  if (c != cudaSuccess) {
    cudaGetLastError();
    const cq_t *Q = &x->q[q >= 0 ? q : 0];
    OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE,
             "executor %s: queue %d failed on the device (the last operation enqueued there: %s, "
             "#%lld): %s",
             x->name, q, Q->last ? Q->last : "none", (long long)Q->nops, cudaGetErrorString(c));
    return leave(x, OOC_ERR_DEVICE);
  }
  pthread_mutex_lock(&x->mu);
  int failed = x->async_failed;
  char msg[sizeof x->async_msg];
  memcpy(msg, x->async_msg, sizeof msg);
  pthread_mutex_unlock(&x->mu);
  if (!failed) return OOC_OK;
  OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE, "executor %s: %s", x->name, msg);
  return leave(x, OOC_ERR_DEVICE);
}

/* ---- the pinned ring and host outputs ------------------------------------------------------ */

/* The host function after an operation with host outputs (or a laswp's pivots): runs on a CUDA
 * thread once the queue reaches it, so it writes only the caller's outputs and the ring's tail. */
static void CUDART_CB on_done(void *p) {
  hrec_t *r = p;
  cq_t *q = r->q;
  if (r->has_info && r->info < 0) {
    cx_t *x = q->x;
    pthread_mutex_lock(&x->mu);
    if (!x->async_failed)
      snprintf(x->async_msg, sizeof x->async_msg,
               "%s on queue %d: cuSOLVER reports its argument %lld invalid", r->op, q->i,
               (long long)-r->info);
    x->async_failed = 1;
    pthread_mutex_unlock(&x->mu);
  } else if (r->has_info && r->info_out) {
    *r->info_out = r->info;
  }
  if (r->ipiv_out) {
    const int64_t *src = (const int64_t *)(r + 1);
    for (int64_t i = 0; i < r->npiv; i++) r->ipiv_out[i] = src[i] - 1;
  }
  if (r->out) {
    const double *src = (const double *)(r + 1);
    for (int64_t j = 0; j < r->out_n; j++)
      memcpy(r->out + j * r->out_ld, src + j * r->out_m, (size_t)r->out_m * sizeof(double));
  }
  atomic_store_explicit(&q->tail, r->end, memory_order_release);
}

/* The ring's device address (pinned host memory is mapped where the device has unified
 * addressing), or NULL: small_copy then uses the copy engines. */
static void ring_map(cq_t *q) {
  void *d = NULL;
  q->ring_dev = NULL;
  if (q->ring && cudaHostGetDevicePointer(&d, q->ring, 0) == cudaSuccess) q->ring_dev = d;
  else cudaGetLastError();
}

/* m x n 8-byte words between the device and queue q's ring (one side each), on q: by our kernel
 * through the ring's mapping, not a copy engine. An engine serves the copies that reach it in
 * order: a getrf's pivots, an info or a laswp's table queued behind the tiles another queue
 * moves the same way waited for them, 2-14 ms each with the compute queue idle (H200 trace of
 * LU at n = 40000, 2026-11-29). Through the SMs such a copy takes microseconds whatever the
 * engines carry. Without a mapping (or for host memory outside the ring): cudaMemcpy2DAsync. */
static cudaError_t small_copy(cq_t *q, int64_t m, int64_t n, const void *s, int64_t lds, void *d,
                              int64_t ldd, enum cudaMemcpyKind kind) {
  int get = kind == cudaMemcpyDeviceToHost;
  const char *h = get ? d : s; /* the host side: in the ring, all of it? */
  int64_t hld = get ? ldd : lds;
  if (q->ring_dev && h >= q->ring && h + 8 * ((n - 1) * hld + m) <= q->ring + q->cap) {
    char *hd = q->ring_dev + (h - q->ring);
    if (get) return exc_copy_words(m, n, s, lds, hd, ldd, 1, q->st);
    return exc_copy_words(m, n, hd, lds, d, ldd, 0, q->st);
  }
  return cudaMemcpy2DAsync(d, (size_t)(8 * ldd), s, (size_t)(8 * lds), (size_t)(8 * m), (size_t)n,
                           kind, q->st);
}

/* A record with `extra` bytes after it in queue q's ring. A full ring waits until the oldest
 * records are done (their host functions move the tail as the queue reaches them), not for the
 * whole queue: LU's laswp tables (128 KB for a chunk's pivots) filled rings of 64-256 KB, and
 * its laswp enqueues held the host 0.25 s in all at n = 40000 on an H200, 0.047 s with this,
 * larger rings for LU (ex_cuda_config.ring_bytes) and laswp in pieces (do_laswp). Once the
 * queue is idle, or for a record larger than the ring (which is then replaced by one twice its
 * size), the ring starts over. */
static ooc_status_t rec_take(cx_t *x, cq_t *q, int64_t extra, const char *op, hrec_t **out) {
  int64_t bytes = (int64_t)sizeof(hrec_t) + (extra + RALIGN - 1) / RALIGN * RALIGN;
  *out = NULL;
  for (;;) {
    int64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
    int64_t pos = q->cap ? q->head % q->cap : 0, pad = pos + bytes > q->cap ? q->cap - pos : 0;
    if (bytes <= q->cap && q->head + pad + bytes - tail <= q->cap) {
      hrec_t *r = (hrec_t *)(q->ring + (q->head + pad) % q->cap);
      q->head += pad + bytes;
      memset(r, 0, sizeof *r);
      r->q = q;
      r->end = q->head;
      r->op = op;
      *out = r;
      return OOC_OK;
    }
    if (bytes <= q->cap) {
      cudaError_t c = cudaStreamQuery(q->st); /* idle: every host function has run */
      if (c == cudaErrorNotReady) {
        (void)cudaGetLastError();
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
        continue;
      }
      CU(&x->e, c);
    }
    CU(&x->e, cudaStreamSynchronize(q->st));
    q->head = 0;
    atomic_store(&q->tail, 0);
    if (bytes > q->cap) {
      int64_t cap = 2 * bytes > 2 * q->cap ? 2 * bytes : 2 * q->cap;
      OOC_TRY(ocu_rt_release(&x->rt, q->ring));
      q->ring = NULL;
      q->cap = 0;
      ooc_status_t st = ocu_rt_halloc(&x->rt, &q->ring, cap, "an executor queue's output ring");
      if (st != OOC_OK) return st;
      q->cap = cap;
      ring_map(q);
    }
  }
}

/* Queue the host function of record r (after the copies that fill it). */
static ooc_status_t rec_done(cx_t *x, cq_t *q, hrec_t *r) {
  CU(&x->e, cudaLaunchHostFunc(q->st, on_done, r));
  return OOC_OK;
}

/* The info of the operation just queued (device int64 at q->small[0]) into record r. */
static ooc_status_t rec_info(cx_t *x, cq_t *q, hrec_t *r, int64_t *info_out) {
  r->has_info = 1;
  r->info_out = info_out;
  CU(&x->e, small_copy(q, 1, 1, q->small, 1, &r->info, 1, cudaMemcpyDeviceToHost));
  return OOC_OK;
}

/* The info, then the host function that delivers the record. */
static ooc_status_t rec_close(cx_t *x, cq_t *q, hrec_t *r, int64_t *info_out) {
  OOC_TRY(rec_info(x, q, r, info_out));
  return rec_done(x, q, r);
}

/* Queue q's device workspace at least `bytes` (and `hbytes` of cuSOLVER's host workspace). */
static ooc_status_t ws_need(cx_t *x, cq_t *q, int64_t bytes, size_t hbytes, const char *op) {
  if (bytes > q->ws_bytes) {
    CU(&x->e, cudaStreamSynchronize(q->st)); /* the old one may still be read by queued work */
    OOC_TRY(ocu_rt_release(&x->rt, q->ws));
    q->ws = NULL;
    q->ws_bytes = 0;
    int64_t want = OCU_RT_ROUND(bytes);
    ooc_status_t st = ocu_rt_dalloc(&x->rt, &q->ws, want, "an operation's workspace");
    if (st != OOC_OK) {
      char a[32], l[32], why[512];
      snprintf(why, sizeof why, "%s", ooc_ctx_error(x->e.ctx));
      return ooc_fail_replace(x->e.ctx, OOC_ERR_NOMEM,
                              "executor %s: %s on queue %d needs %s of workspace; %s of the "
                              "device budget left: %s",
                              x->name, op, q->i, ooc_fmt_bytes(want, a, sizeof a),
                              ooc_fmt_bytes(x->rt.budget - x->rt.used, l, sizeof l), why);
    }
    q->ws_bytes = want;
    x->e.stats.mem_peak = x->rt.peak; /* the pool's, workspaces included (exec.h) */
  }
  if (hbytes > q->hws_bytes) {
    CU(&x->e, cudaStreamSynchronize(q->st));
    ooc_free(x->e.ctx, q->hws);
    q->hws_bytes = 0;
    if (!(q->hws = ooc_malloc(x->e.ctx, hbytes)))
      return OOC_FAIL(x->e.ctx, OOC_ERR_NOMEM,
                      "executor %s: out of host memory for %zu bytes of cuSOLVER's workspace (%s)",
                      x->name, hbytes, op);
    q->hws_bytes = hbytes;
  }
  return OOC_OK;
}

/* ---- memory ------------------------------------------------------------------------------- */

static ooc_status_t c_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  cx_t *x = X(e);
  *out = NULL;
  OOC_TRY(enter(x, NOQ, "alloc"));
  int64_t b = OCU_RT_ROUND((int64_t)bytes);
  if (e->dev_bytes + b > e->budget)
    return OOC_FAIL(e->ctx, OOC_ERR_NOMEM,
                    "executor %s: %zu bytes asked with %lld of its %lld-byte budget in use "
                    "(%lld left)",
                    x->name, bytes, (long long)e->dev_bytes, (long long)e->budget,
                    (long long)(e->budget - e->dev_bytes));
  ooc_status_t st = ocu_rt_dalloc(&x->rt, out, b, "an executor buffer");
  if (st != OOC_OK) { /* the pool's budget (workspaces grew into it), the fault seam, cudaMalloc */
    char why[512];
    snprintf(why, sizeof why, "%s", ooc_ctx_error(e->ctx));
    return ooc_fail_replace(e->ctx, OOC_ERR_NOMEM,
                            "executor %s: %zu bytes asked with %lld of its %lld-byte budget in "
                            "use: %s",
                            x->name, bytes, (long long)e->dev_bytes, (long long)e->budget, why);
  }
  e->dev_bytes += b;
  if (e->dev_bytes > e->stats.dev_peak) e->stats.dev_peak = e->dev_bytes;
  e->stats.mem_peak = x->rt.peak;
  return OOC_OK;
}

static void c_free(ooc_exec_t *e, double *p) {
  cx_t *x = X(e);
  for (int i = 0; i < x->rt.nbuf; i++)
    if (x->rt.buf[i].p == p && !x->rt.buf[i].pinned) {
      e->dev_bytes -= x->rt.buf[i].bytes;
      break;
    }
  cudaSetDevice(x->rt.dev);
  (void)ocu_rt_release(&x->rt, p);
}

static ooc_status_t c_host_alloc(ooc_exec_t *e, size_t bytes, double **out) {
  cx_t *x = X(e);
  *out = NULL;
  OOC_TRY(enter(x, NOQ, "host_alloc"));
  /* only the staging buffers count, not the executor's own pinned rings (rt.pinned has both) */
  int64_t before = x->rt.pinned;
  OOC_TRY(ocu_rt_halloc(&x->rt, out, (int64_t)bytes, "executor staging"));
  e->staging_bytes += x->rt.pinned - before;
  if (e->staging_bytes > e->stats.staging_peak) e->stats.staging_peak = e->staging_bytes;
  return OOC_OK;
}

static void c_host_free(ooc_exec_t *e, double *p) {
  cudaSetDevice(X(e)->rt.dev);
  int64_t before = X(e)->rt.pinned;
  (void)ocu_rt_release(&X(e)->rt, p);
  e->staging_bytes -= before - X(e)->rt.pinned;
}

/* exec.h: pinned in place, for every device (Portable: several executors may read the same
 * tile). A refusal (the locked-memory limit, memory already registered) is not an error. */
static int c_host_register(ooc_exec_t *e, void *p, size_t bytes) {
  cudaSetDevice(X(e)->rt.dev);
  if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) {
    e->stats.registered++;
    return 1;
  }
  (void)cudaGetLastError();
  return 0;
}

static void c_host_span(ooc_exec_t *e, const char *name, double t0, double t1, int64_t bytes) {
  ocu_rt_host_span(&X(e)->rt, name, t0, t1, bytes);
}

static void c_host_unregister(ooc_exec_t *e, void *p) {
  cudaSetDevice(X(e)->rt.dev);
  if (cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError();
  e->stats.registered--;
}

/* ---- events ------------------------------------------------------------------------------- */

static ooc_status_t c_event_create(ooc_exec_t *e, ex_event_t **out) {
  cx_t *x = X(e);
  *out = NULL;
  OOC_TRY(enter(x, NOQ, "event_create"));
  ex_event_t *ev = ooc_malloc(e->ctx, sizeof *ev);
  if (!ev) return OOC_FAIL(e->ctx, OOC_ERR_NOMEM, "executor %s: no memory for an event", x->name);
  cudaError_t c = cudaEventCreateWithFlags(&ev->ev, cudaEventDisableTiming);
  if (c != cudaSuccess) {
    ooc_free(e->ctx, ev);
    cudaGetLastError();
    return OOC_FAIL(e->ctx, OOC_ERR_DEVICE, "executor %s: cudaEventCreateWithFlags failed: %s",
                    x->name, cudaGetErrorString(c));
  }
  ev->q = -1;
  *out = ev;
  return OOC_OK;
}

static void c_event_destroy(ooc_exec_t *e, ex_event_t *ev) {
  cudaSetDevice(X(e)->rt.dev);
  cudaEventDestroy(ev->ev);
  ooc_free(e->ctx, ev);
}

static ooc_status_t c_record(ooc_exec_t *e, int q, ex_event_t *ev) {
  cx_t *x = X(e);
  OOC_TRY(enter(x, q, "record"));
  CU(e, cudaEventRecord(ev->ev, x->q[q].st));
  ev->q = q;
  return OOC_OK;
}

static ooc_status_t c_wait(ooc_exec_t *e, int q, ex_event_t *ev) {
  cx_t *x = X(e);
  OOC_TRY(enter(x, q, "wait"));
  if (ev->q < 0 || ev->q == q) return OOC_OK; /* complete, or ordered by the queue itself */
  CU(e, cudaStreamWaitEvent(x->q[q].st, ev->ev, 0));
  return OOC_OK;
}

static ooc_status_t c_sync(ooc_exec_t *e, ex_event_t *ev) {
  cx_t *x = X(e);
  cudaSetDevice(x->rt.dev);
  cudaError_t c = ev->q < 0 ? cudaSuccess : cudaEventSynchronize(ev->ev);
  return report(x, ev->q, c);
}

/* Not ready is no error: an asynchronous failure is left for the next sync to report. */
static int c_query(ooc_exec_t *e, ex_event_t *ev) {
  if (ev->q < 0) return 1;
  cudaSetDevice(X(e)->rt.dev);
  cudaError_t c = cudaEventQuery(ev->ev);
  if (c == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return 0;
  }
  return 1;
}

static ooc_status_t c_finish(ooc_exec_t *e) {
  cx_t *x = X(e);
  cudaSetDevice(x->rt.dev);
  int bad = -1;
  cudaError_t first = cudaSuccess;
  for (int i = 0; i < e->nqueues; i++) {
    cudaError_t c = cudaStreamSynchronize(x->q[i].st);
    if (c != cudaSuccess && first == cudaSuccess) {
      first = c;
      bad = i;
    }
  }
  /* with spans (timing or a trace): the device's busy seconds, summed over its queues */
  if (first == cudaSuccess && x->rt.timing) e->stats.busy = ocu_rt_sum(&x->rt, NULL, -1);
  return report(x, bad, first);
}

/* ---- operations --------------------------------------------------------------------------- */

static cublasOperation_t op_of(char t) { return t == 'T' || t == 't' || t == 'C' || t == 'c' ? CUBLAS_OP_T : CUBLAS_OP_N; }
static cublasFillMode_t fill_of(char u) { return u == 'U' || u == 'u' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER; }
static cublasSideMode_t side_of(char s) { return s == 'R' || s == 'r' ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT; }
static cublasDiagType_t diag_of(char d) { return d == 'U' || d == 'u' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT; }

/* A span around work queued on q (trace / timing only; -1 otherwise). */
static int64_t span(cx_t *x, int q, int kind, const char *name, int64_t bytes, double flops) {
  return ocu_rt_span(&x->rt, q, kind, name, bytes, flops);
}

static ooc_status_t copy2d(cx_t *x, int q, const char *op, int64_t m, int64_t n, const double *s,
                           int64_t lds, double *d, int64_t ldd, enum cudaMemcpyKind kind) {
  if (m <= 0 || n <= 0) return OOC_OK;
  int64_t sp = span(x, q, OCU_SPAN_COPY, op, 8 * m * n, 0);
  cudaError_t c = cudaMemcpy2DAsync(d, (size_t)(8 * ldd), s, (size_t)(8 * lds), (size_t)(8 * m),
                                    (size_t)n, kind, x->q[q].st);
  ocu_rt_span_end(&x->rt, sp, q);
  if (c != cudaSuccess) {
    cudaGetLastError();
    return OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE,
                    "executor %s: %s of %lld x %lld on queue %d: cudaMemcpy2DAsync failed: %s",
                    x->name, op, (long long)m, (long long)n, q, cudaGetErrorString(c));
  }
  return OOC_OK;
}

/* put, get and copy: one enqueue, the bytes moved counted in *count (NULL: not counted). */
static ooc_status_t xfer(ooc_exec_t *e, int q, const char *op, int64_t m, int64_t n,
                         const double *s, int64_t lds, double *d, int64_t ldd,
                         enum cudaMemcpyKind kind, int64_t *count) {
  OOC_TRY(begin(e, q, op, 0));
  if (count) *count += 8 * m * n;
  return leave(X(e), copy2d(X(e), q, op, m, n, s, lds, d, ldd, kind));
}
static ooc_status_t c_put(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *h, int64_t ldh,
                          double *d, int64_t ldd) {
  return xfer(e, q, "put", m, n, h, ldh, d, ldd, cudaMemcpyHostToDevice, &e->stats.bytes_put);
}
/* A get of at most SMALL_GET bytes (a panel's diagonal, a few pivots' worth): into a record of
 * the ring by small_copy, then to h by the record's host function. Through a copy engine it
 * waited behind the tiles on their way back (small_copy), and into pageable memory it also held
 * the caller until then (exec.h). */
#define SMALL_GET ((int64_t)64 << 10)
static ooc_status_t small_get(cx_t *x, int q, int64_t m, int64_t n, const double *d,
                              int64_t ldd, double *h, int64_t ldh) {
  cq_t *Q = &x->q[q];
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 8 * m * n, "get", &r));
  int64_t sp = span(x, q, OCU_SPAN_COPY, "get", 8 * m * n, 0);
  CU(&x->e, small_copy(Q, m, n, d, ldd, r + 1, m, cudaMemcpyDeviceToHost));
  ocu_rt_span_end(&x->rt, sp, q);
  r->out = h;
  r->out_m = m;
  r->out_n = n;
  r->out_ld = ldh;
  return rec_done(x, Q, r);
}
static ooc_status_t c_get(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *d, int64_t ldd,
                          double *h, int64_t ldh) {
  if (m <= 0 || n <= 0 || 8 * m * n > SMALL_GET)
    return xfer(e, q, "get", m, n, d, ldd, h, ldh, cudaMemcpyDeviceToHost, &e->stats.bytes_get);
  OOC_TRY(begin(e, q, "get", 0));
  e->stats.bytes_get += 8 * m * n;
  return leave(X(e), small_get(X(e), q, m, n, d, ldd, h, ldh));
}
static ooc_status_t c_copy(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s, int64_t lds,
                           double *d, int64_t ldd) {
  return xfer(e, q, "copy", m, n, s, lds, d, ldd, cudaMemcpyDeviceToDevice, NULL);
}

/* After one of our kernels was launched on queue q (span sp): a launch failure is the
 * operation's error ("executor X: <what> on queue q: launch failed: ..."), and leaves the op. */
static ooc_status_t launched(cx_t *x, int q, int64_t sp, cudaError_t c, const char *what) {
  ocu_rt_span_end(&x->rt, sp, q);
  if (c == cudaSuccess) return OOC_OK;
  cudaGetLastError();
  return leave(x, OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE, "executor %s: %s on queue %d: launch "
                           "failed: %s", x->name, what, q, cudaGetErrorString(c)));
}

static ooc_status_t c_absscan(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *A,
                              int64_t lda, int64_t top, double *mx, double *rowsum) {
  cx_t *x = X(e);
  if (m <= 0 || n <= 0) return OOC_OK;
  OOC_TRY(begin(e, q, "absscan", 0));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "absscan", 8 * m * n, 0);
  char what[64];
  snprintf(what, sizeof what, "absscan of %lld x %lld", (long long)m, (long long)n);
  return launched(x, q, sp, exc_absscan(m, n, A, lda, top, mx, rowsum, x->q[q].st), what);
}

static ooc_status_t c_fill(ooc_exec_t *e, int q, int64_t m, int64_t n, double v, double *d,
                           int64_t ldd) {
  cx_t *x = X(e);
  OOC_TRY(begin(e, q, "fill", 0));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "fill", 0, 0);
  char what[64];
  snprintf(what, sizeof what, "fill of %lld x %lld", (long long)m, (long long)n);
  return launched(x, q, sp, exc_fill(m, n, v, d, ldd, x->q[q].st), what);
}

static ooc_status_t do_transpose(cx_t *x, int q, int64_t m, int64_t n, const double *s,
                                 int64_t lds, double *d, int64_t ldd) {
  double one = 1.0, zero = 0.0;
  if (m <= 0 || n <= 0) return OOC_OK;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "transpose", 0, 0);
  /* d (n x m) = 1 * s^T + 0 * d: geam with beta 0 does not read its B */
  CB(&x->e, cublasDgeam_64(x->q[q].bl, CUBLAS_OP_T, CUBLAS_OP_N, n, m, &one, s, lds, &zero, d, ldd,
                           d, ldd));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_transpose(ooc_exec_t *e, int q, int64_t m, int64_t n, const double *s,
                                int64_t lds, double *d, int64_t ldd) {
  OOC_TRY(begin(e, q, "transpose", 0));
  return leave(X(e), do_transpose(X(e), q, m, n, s, lds, d, ldd));
}

static ooc_status_t c_mirror(ooc_exec_t *e, int q, int64_t j0, int64_t j1, int full,
                             const double *S, int64_t lds, double *A, int64_t lda) {
  cx_t *x = X(e);
  OOC_TRY(begin(e, q, "mirror", 0));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "mirror", 0, 0);
  char what[64];
  snprintf(what, sizeof what, "mirror of columns [%lld, %lld)", (long long)j0, (long long)j1);
  return launched(x, q, sp, exc_mirror(A, lda, S, lds, j0, j1, full, x->q[q].st), what);
}

static ooc_status_t do_gemm(cx_t *x, int q, char ta, char tb, int64_t m, int64_t n, int64_t k,
                            double alpha, const double *A, int64_t lda, const double *B,
                            int64_t ldb, double beta, double *C, int64_t ldc) {
  if (m <= 0 || n <= 0) return OOC_OK;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "gemm", 0, 2.0 * m * n * k);
  CB(&x->e, cublasDgemm_64(x->q[q].bl, op_of(ta), op_of(tb), m, n, k, &alpha, A, lda, B, ldb,
                           &beta, C, ldc));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_gemm(ooc_exec_t *e, int q, char ta, char tb, int64_t m, int64_t n, int64_t k,
                           double alpha, const double *A, int64_t lda, const double *B, int64_t ldb,
                           double beta, double *C, int64_t ldc) {
  OOC_TRY(begin(e, q, "gemm", 2.0 * m * n * k));
  return leave(X(e), do_gemm(X(e), q, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

static ooc_status_t do_syrk(cx_t *x, int q, char uplo, char trans, int64_t n, int64_t k,
                            double alpha, const double *A, int64_t lda, double beta, double *C,
                            int64_t ldc) {
  if (n <= 0) return OOC_OK;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "syrk", 0, 1.0 * n * (n + 1) * k);
  CB(&x->e, cublasDsyrk_64(x->q[q].bl, fill_of(uplo), op_of(trans), n, k, &alpha, A, lda, &beta, C,
                           ldc));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_syrk(ooc_exec_t *e, int q, char uplo, char trans, int64_t n, int64_t k,
                           double alpha, const double *A, int64_t lda, double beta, double *C,
                           int64_t ldc) {
  OOC_TRY(begin(e, q, "syrk", 1.0 * n * (n + 1) * k));
  return leave(X(e), do_syrk(X(e), q, uplo, trans, n, k, alpha, A, lda, beta, C, ldc));
}

static ooc_status_t do_trsm(cx_t *x, int q, char side, char uplo, char trans, char diag, int64_t m,
                            int64_t n, double alpha, const double *A, int64_t lda, double *B,
                            int64_t ldb) {
  if (m <= 0 || n <= 0) return OOC_OK;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "trsm", 0, 0);
  CB(&x->e, cublasDtrsm_64(x->q[q].bl, side_of(side), fill_of(uplo), op_of(trans), diag_of(diag),
                           m, n, &alpha, A, lda, B, ldb));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_trsm(ooc_exec_t *e, int q, char side, char uplo, char trans, char diag,
                           int64_t m, int64_t n, double alpha, const double *A, int64_t lda,
                           double *B, int64_t ldb) {
  OOC_TRY(begin(e, q, "trsm", (side == 'L' || side == 'l') ? 1.0 * m * m * n : 1.0 * m * n * n));
  return leave(X(e), do_trsm(X(e), q, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb));
}

/* laswp: the swaps of pivots [k1, k2) turned on the host, at enqueue, into the net permutation of
 * the rows they touch, in segments of LASWP_SEG pivots (at most 2 LASWP_SEG rows each: one per
 * thread of a block), and applied by exc_permute_rows: every column and row in parallel. The
 * sequential form (one thread per column through every swap) took 1.1 s of gj's 7.5 s at
 * n = 49152 with --gpu-mem 12G on an H100 (12.7 ms a call, 24576 swaps on 1024 columns); with
 * the parallel one gj's update phase went from 4.01 to 3.57 s and the run from 7.33 to 7.00 s.
 * Segments of 512 rather than 2048 (the kernel's registers in place of shared memory): the
 * kernel's comment (exec_cuda_kernels.cu). A segment's tables are a few KB and the segments'
 * rows overlap little, so the shorter segments move about as many rows in all. */
#define LASWP_SEG 512
static ooc_status_t lsw_scratch(cx_t *x, int64_t rows) {
  if (rows <= x->lsw_cap) return OOC_OK;
  int64_t cap = rows > 2 * x->lsw_cap ? rows : 2 * x->lsw_cap;
  int64_t *r = ooc_malloc(x->e.ctx, (size_t)cap * sizeof *r);
  uint32_t *g = ooc_calloc(x->e.ctx, (size_t)cap, sizeof *g);
  if (!r || !g) {
    ooc_free(x->e.ctx, r);
    ooc_free(x->e.ctx, g);
    return OOC_FAIL(x->e.ctx, OOC_ERR_NOMEM, "executor %s: out of host memory for laswp's row "
                    "table (%lld rows)", x->name, (long long)cap);
  }
  ooc_free(x->e.ctx, x->lsw_row);
  ooc_free(x->e.ctx, x->lsw_gen);
  x->lsw_row = r, x->lsw_gen = g, x->lsw_cap = cap, x->lsw_now = 0;
  return OOC_OK;
}

static ooc_status_t laswp_piece(cx_t *x, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                                int64_t k2, const int64_t *ipiv) {
  cq_t *Q = &x->q[q];
  int64_t np = k2 - k1, nseg = (np + LASWP_SEG - 1) / LASWP_SEG, rows = k2;
  for (int64_t k = k1; k < k2; k++)
    if (ipiv[k] + 1 > rows) rows = ipiv[k] + 1;
  OOC_TRY(lsw_scratch(x, rows));
  /* src and dst (at most 2 np entries each) and the segments' offsets, in one record */
  int64_t bytes = 8 * (4 * np + nseg + 1); /* within EX_LASWP_WS(np) */
  OOC_TRY(ws_need(x, Q, bytes, 0, "laswp"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, bytes, "laswp", &r));
  int64_t *src = (int64_t *)(r + 1), *dst = src + 2 * np, *off = dst + 2 * np, t = 0, maxseg = 0;
  for (int64_t s = 0; s < nseg; s++) {
    int64_t a = k1 + s * LASWP_SEG, b = a + LASWP_SEG < k2 ? a + LASWP_SEG : k2, t0 = t;
    if (++x->lsw_now == 0) { /* the generation wrapped: no row may look touched */
      memset(x->lsw_gen, 0, (size_t)x->lsw_cap * sizeof *x->lsw_gen);
      x->lsw_now = 1;
    }
    uint32_t g = x->lsw_now;
    /* the touched rows in dst[t0..] for now; lsw_row[r]: the original row row r holds */
    for (int64_t k = a; k < b; k++) {
      int64_t p = ipiv[k], u[2] = {k, p};
      for (int i = 0; i < 2; i++)
        if (x->lsw_gen[u[i]] != g) {
          x->lsw_gen[u[i]] = g;
          x->lsw_row[u[i]] = u[i];
          dst[t++] = u[i];
        }
      int64_t tmp = x->lsw_row[k];
      x->lsw_row[k] = x->lsw_row[p];
      x->lsw_row[p] = tmp;
    }
    int64_t w = t0; /* keep the rows that moved */
    for (int64_t i = t0; i < t; i++)
      if (x->lsw_row[dst[i]] != dst[i]) {
        src[w] = x->lsw_row[dst[i]];
        dst[w++] = dst[i];
      }
    t = w;
    off[s] = t0;
    if (t - t0 > maxseg) maxseg = t - t0;
  }
  off[nseg] = t;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "laswp", 0, 0);
  int64_t *dws = (int64_t *)Q->ws;
  CU(&x->e, small_copy(Q, bytes / 8, 1, r + 1, bytes / 8, dws, bytes / 8, cudaMemcpyHostToDevice));
  CU(&x->e, exc_permute_rows(ncols, A, lda, dws, dws + 2 * np, dws + 4 * np, nseg, maxseg, Q->st));
  ocu_rt_span_end(&x->rt, sp, q);
  return rec_done(x, Q, r); /* the record is free once the copy has run */
}

/* In pieces of at most LASWP_CALL pivots, applied in order as laswp's swaps are: a piece's
 * tables (32 bytes a pivot, 256 KB) fit a queue's ring, which a table for all of LU's final
 * swaps at n = 40000 (1.2 MB) made grow, and growing waits for the queue. */
#define LASWP_CALL 8192
static ooc_status_t do_laswp(cx_t *x, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                             int64_t k2, const int64_t *ipiv) {
  if (k2 <= k1 || ncols <= 0) return OOC_OK;
  for (int64_t a = k1; a < k2; a += LASWP_CALL)
    OOC_TRY(laswp_piece(x, q, ncols, A, lda, a, a + LASWP_CALL < k2 ? a + LASWP_CALL : k2, ipiv));
  return OOC_OK;
}
static ooc_status_t c_laswp(ooc_exec_t *e, int q, int64_t ncols, double *A, int64_t lda, int64_t k1,
                            int64_t k2, const int64_t *ipiv) {
  OOC_TRY(begin(e, q, "laswp", 0));
  return leave(X(e), do_laswp(X(e), q, ncols, A, lda, k1, k2, ipiv));
}

/* The cuSOLVER handle on queue q's stream. */
static ooc_status_t sol_on(cx_t *x, int q) {
  CS(&x->e, cusolverDnSetStream(x->rt.sol, x->q[q].st));
  return OOC_OK;
}

static ooc_status_t do_getrf(cx_t *x, int q, int64_t m, int64_t n, double *A, int64_t lda,
                             int64_t *ipiv, int64_t *info) {
  cq_t *Q = &x->q[q];
  int64_t mn = m < n ? m : n;
  if (mn < 0) mn = 0;
  size_t d = 0, h = 0;
  if (mn > 0) {
    OOC_TRY(sol_on(x, q));
    CS(&x->e, cusolverDnXgetrf_bufferSize(x->rt.sol, x->rt.par, m, n, CUDA_R_64F, A, lda,
                                          CUDA_R_64F, &d, &h));
  }
  int64_t dws = OCU_RT_ROUND((int64_t)d);
  OOC_TRY(ws_need(x, Q, dws + 8 * mn, h, "getrf"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 8 * mn, "getrf", &r));
  /* ipiv NULL: cusolverDnXgetrf with a NULL pivot array does no pivoting (A = L U; cuSOLVER's
   * documentation of getrf), and no pivots come back */
  int64_t *dpiv = ipiv ? (int64_t *)(Q->ws + dws) : NULL;
  int *cuinfo = (int *)(Q->small + 1);
  if (mn > 0) {
    int64_t sp = span(x, q, OCU_SPAN_KERNEL, "getrf", 0, 0);
    CS(&x->e, cusolverDnXgetrf(x->rt.sol, x->rt.par, m, n, CUDA_R_64F, A, lda, dpiv, CUDA_R_64F,
                               Q->ws, d, Q->hws, h, cuinfo));
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, cuinfo, Q->small, Q->st));
    ocu_rt_span_end(&x->rt, sp, q);
    if (ipiv) {
      CU(&x->e, small_copy(Q, mn, 1, dpiv, mn, r + 1, mn, cudaMemcpyDeviceToHost));
      r->ipiv_out = ipiv;
      r->npiv = mn;
    }
  } else {
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, NULL, Q->small, Q->st)); /* info 0 */
  }
  return rec_close(x, Q, r, info);
}
static ooc_status_t c_reserve(ooc_exec_t *e, int q, int64_t bytes) {
  OOC_TRY(enter(X(e), q, "reserve"));
  return leave(X(e), ws_need(X(e), &X(e)->q[q], bytes, 0, "reserve"));
}

/* What do_getrf's ws_need asks for an m x n block: cuSOLVER's device workspace and the pivots. */
static int64_t c_getrf_ws(ooc_exec_t *e, int64_t m, int64_t n) {
  cx_t *x = X(e);
  int64_t mn = m < n ? m : n;
  if (mn <= 0) return 0;
  size_t d = 0, h = 0;
  /* a query, not an operation: no context error on failure (the caller keeps a margin) */
  if (x->broken || cudaSetDevice(x->rt.dev) != cudaSuccess) return -1;
  if (cusolverDnXgetrf_bufferSize(x->rt.sol, x->rt.par, m, n, CUDA_R_64F, NULL, m, CUDA_R_64F, &d,
                                  &h) != CUSOLVER_STATUS_SUCCESS)
    return -1;
  return OCU_RT_ROUND(OCU_RT_ROUND((int64_t)d) + 8 * mn);
}
static ooc_status_t c_getrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                            int64_t *ipiv, int64_t *info) {
  int64_t mn = m < n ? m : n;
  /* LAPACK's count (2n^3/3 square): the bracket is the multiplications, as many additions */
  OOC_TRY(begin(e, q, "getrf", 2.0 * (1.0 * m * n * mn - 0.5 * (m + n) * mn * mn + mn * mn * mn / 3.0)));
  return leave(X(e), do_getrf(X(e), q, m, n, A, lda, ipiv, info));
}

static ooc_status_t do_potrf(cx_t *x, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  cq_t *Q = &x->q[q];
  size_t d = 0, h = 0;
  if (n > 0) {
    OOC_TRY(sol_on(x, q));
    CS(&x->e, cusolverDnXpotrf_bufferSize(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, n,
                                          CUDA_R_64F, A, lda, CUDA_R_64F, &d, &h));
  }
  OOC_TRY(ws_need(x, Q, (int64_t)d, h, "potrf"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 0, "potrf", &r));
  int *cuinfo = (int *)(Q->small + 1);
  if (n > 0) {
    int64_t sp = span(x, q, OCU_SPAN_KERNEL, "potrf", 0, n * (double)n * n / 3.0);
    CS(&x->e, cusolverDnXpotrf(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, A, lda,
                               CUDA_R_64F, Q->ws, d, Q->hws, h, cuinfo));
    CU(&x->e, exc_diag_info(A, lda, n, DIAG_POSITIVE, cuinfo, Q->small, Q->st));
    ocu_rt_span_end(&x->rt, sp, q);
  } else {
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, NULL, Q->small, Q->st)); /* info 0 */
  }
  return rec_close(x, Q, r, info);
}
/* do_potrf's and do_potri's workspaces (exec.h): queries, no context error on failure */
static int64_t c_potrf_ws(ooc_exec_t *e, int64_t n, int64_t lda) {
  cx_t *x = X(e);
  size_t d = 0, h = 0;
  if (n <= 0) return 0;
  if (x->broken || cudaSetDevice(x->rt.dev) != cudaSuccess) return -1;
  if (cusolverDnXpotrf_bufferSize(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F,
                                  NULL, lda, CUDA_R_64F, &d, &h) != CUSOLVER_STATUS_SUCCESS)
    return -1;
  return OCU_RT_ROUND((int64_t)d);
}
static int64_t c_potri_ws(ooc_exec_t *e, int64_t n, int64_t lda) {
  cx_t *x = X(e);
  int lw = 0;
  if (n <= 0) return 0;
  if (n > INT_MAX || lda > INT_MAX) return -1;
  if (x->broken || cudaSetDevice(x->rt.dev) != cudaSuccess) return -1;
  if (cusolverDnDpotri_bufferSize(x->rt.sol, CUBLAS_FILL_MODE_LOWER, (int)n, NULL, (int)lda, &lw) !=
      CUSOLVER_STATUS_SUCCESS)
    return -1;
  return OCU_RT_ROUND(8 * (int64_t)lw);
}
static ooc_status_t c_potrf(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  OOC_TRY(begin(e, q, "potrf", n * (double)n * n / 3.0));
  return leave(X(e), do_potrf(X(e), q, n, A, lda, info));
}

static ooc_status_t do_potri(cx_t *x, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  cq_t *Q = &x->q[q];
  if (n > INT_MAX || lda > INT_MAX)
    return OOC_FAIL(x->e.ctx, OOC_ERR_ARG, "executor %s: potri of n = %lld, lda = %lld: cuSOLVER's "
                    "potri takes 32-bit sizes", x->name, (long long)n, (long long)lda);
  int lw = 0;
  if (n > 0) {
    OOC_TRY(sol_on(x, q));
    CS(&x->e, cusolverDnDpotri_bufferSize(x->rt.sol, CUBLAS_FILL_MODE_LOWER, (int)n, A, (int)lda,
                                          &lw));
  }
  OOC_TRY(ws_need(x, Q, 8 * (int64_t)lw, 0, "potri"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 0, "potri", &r));
  int *cuinfo = (int *)(Q->small + 1);
  if (n > 0) {
    int64_t sp = span(x, q, OCU_SPAN_KERNEL, "potri", 0, 2.0 * n * (double)n * n / 3.0);
    CS(&x->e, cusolverDnDpotri(x->rt.sol, CUBLAS_FILL_MODE_LOWER, (int)n, A, (int)lda,
                               (double *)Q->ws, lw, cuinfo));
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, cuinfo, Q->small, Q->st));
    ocu_rt_span_end(&x->rt, sp, q);
  } else {
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, NULL, Q->small, Q->st)); /* info 0 */
  }
  return rec_close(x, Q, r, info);
}
static ooc_status_t c_potri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  OOC_TRY(begin(e, q, "potri", 2.0 * n * (double)n * n / 3.0));
  return leave(X(e), do_potri(X(e), q, n, A, lda, info));
}

/* inv of the n x n triangle at A on queue q, its info at Q->small[0]. The tuned recursive trtri
 * (ocu_trtri.c) for an upper non-unit triangle wider than its leaf (it does not check the
 * diagonal: exc_diag_info does, first), cuSOLVER's otherwise; a unit triangle goes to cuSOLVER
 * as a non-unit one with its diagonal set to 1 and restored after (exc_diag_swap says why;
 * save: n doubles of device scratch for it). work/work_elems: device scratch the tuned one may
 * use for out-of-place trmm (NULL: in place). The device workspace must hold trtri_ws(...)
 * bytes at Q->ws. */
static int use_tuned(const cx_t *x, char uplo, char diag, int64_t n) {
  int64_t leaf = x->tt.leaf > 0 ? x->tt.leaf : OCU_TRTRI_LEAF;
  return fill_of(uplo) == CUBLAS_FILL_MODE_UPPER && diag_of(diag) == CUBLAS_DIAG_NON_UNIT &&
         n > leaf;
}
static ooc_status_t trtri_ws(cx_t *x, char uplo, char diag, int64_t n, double *A, int64_t lda,
                             size_t *d, size_t *h) {
  *d = *h = 0;
  if (n <= 0) return OOC_OK;
  (void)diag; /* cuSOLVER is always asked for a non-unit triangle (trtri_run) */
  CS(&x->e, cusolverDnXtrtri_bufferSize(x->rt.sol, fill_of(uplo), CUBLAS_DIAG_NON_UNIT, n,
                                        CUDA_R_64F, A, lda, d, h));
  return OOC_OK;
}
static ooc_status_t trtri_run(cx_t *x, int q, char uplo, char diag, int64_t n, double *A,
                              int64_t lda, size_t d, size_t h, double *save, double *work,
                              int64_t work_elems) {
  cq_t *Q = &x->q[q];
  int *cuinfo = (int *)(Q->small + 1);
  if (n <= 0) {
    CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, NULL, Q->small, Q->st));
    return OOC_OK;
  }
  if (use_tuned(x, uplo, diag, n)) {
    CU(&x->e, exc_diag_info(A, lda, n, DIAG_ZERO, NULL, Q->small, Q->st));
    ocu_trtri_ws_t ws = {work, work_elems, Q->ws, d, Q->hws, h, cuinfo};
    int code = 0;
    const char *err = ocu_trtri(Q->bl, x->rt.sol, A, n, lda, &x->tt, &ws, &code);
    if (err)
      return OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE, "executor %s: trtri (%s) of n = %lld on queue %d: "
                      "%s failed (status %d)", x->name, ocu_trtri_name(x->tt.variant),
                      (long long)n, q, err, code);
    return OOC_OK;
  }
  int unit = diag_of(diag) == CUBLAS_DIAG_UNIT;
  if (unit) CU(&x->e, exc_diag_swap(A, lda, n, save, 0, Q->st));
  CS(&x->e, cusolverDnXtrtri(x->rt.sol, fill_of(uplo), CUBLAS_DIAG_NON_UNIT, n, CUDA_R_64F, A, lda,
                             Q->ws, d, Q->hws, h, cuinfo));
  CU(&x->e, exc_diag_info(A, lda, 0, DIAG_NONE, cuinfo, Q->small, Q->st));
  if (unit) CU(&x->e, exc_diag_swap(A, lda, n, save, 1, Q->st));
  return OOC_OK;
}

static ooc_status_t do_trtri(cx_t *x, int q, char uplo, char diag, int64_t n, double *A,
                             int64_t lda, int64_t *info) {
  cq_t *Q = &x->q[q];
  size_t d = 0, h = 0;
  if (n > 0) OOC_TRY(sol_on(x, q));
  OOC_TRY(trtri_ws(x, uplo, diag, n, A, lda, &d, &h));
  int64_t dws = OCU_RT_ROUND((int64_t)d);
  OOC_TRY(ws_need(x, Q, dws + 8 * (n > 0 ? n : 0), h, "trtri"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 0, "trtri", &r));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "trtri", 0, n * (double)n * n / 3.0);
  OOC_TRY(trtri_run(x, q, uplo, diag, n, A, lda, d, h, (double *)(Q->ws + dws), NULL, 0));
  ocu_rt_span_end(&x->rt, sp, q);
  return rec_close(x, Q, r, info);
}
static ooc_status_t c_trtri(ooc_exec_t *e, int q, char uplo, char diag, int64_t n, double *A,
                            int64_t lda, int64_t *info) {
  OOC_TRY(begin(e, q, "trtri", n * (double)n * n / 3.0));
  return leave(X(e), do_trtri(X(e), q, uplo, diag, n, A, lda, info));
}

/* getri as LAPACK's dgetri without pivoting: inv(U) in place (trtri above; its info is
 * getri's: the first zero u_jj), then the sweep X L = inv(U) by blocks of GETRI_NB columns,
 * last to first (ocu_getri_block). Workspace: cuSOLVER's trtri, then the sweep's n x NB block,
 * which the tuned trtri also uses for its out-of-place trmm (the sweep comes after it). */
static ooc_status_t do_getri(cx_t *x, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  cq_t *Q = &x->q[q];
  size_t d = 0, h = 0;
  if (n > 0) OOC_TRY(sol_on(x, q));
  OOC_TRY(trtri_ws(x, 'U', 'N', n, A, lda, &d, &h));
  int64_t dws = OCU_RT_ROUND((int64_t)d), nb = n < GETRI_NB ? n : GETRI_NB;
  OOC_TRY(ws_need(x, Q, dws + 8 * n * nb, h, "getri"));
  hrec_t *r;
  OOC_TRY(rec_take(x, Q, 0, "getri", &r));
  double *work = (double *)(Q->ws + dws);
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "getri", 0, 4.0 * n * (double)n * n / 3.0);
  OOC_TRY(trtri_run(x, q, 'U', 'N', n, A, lda, d, h, NULL, work, n * nb));
  for (int64_t j = n > 0 ? (n - 1) / GETRI_NB * GETRI_NB : -1; j >= 0; j -= GETRI_NB) {
    int code = 0;
    const char *err = ocu_getri_block(Q->bl, A, lda, n, j, n - j < GETRI_NB ? n - j : GETRI_NB,
                                      work, &code);
    if (err)
      return OOC_FAIL(x->e.ctx, OOC_ERR_DEVICE, "executor %s: getri of n = %lld on queue %d: %s "
                      "failed (status %d)", x->name, (long long)n, q, err, code);
  }
  ocu_rt_span_end(&x->rt, sp, q);
  return rec_close(x, Q, r, info);
}
/* do_getri's workspace for n (exec.h): a query, no context error on failure */
static int64_t c_getri_ws(ooc_exec_t *e, int64_t n) {
  cx_t *x = X(e);
  size_t d = 0, h = 0;
  if (n <= 0) return 0;
  if (x->broken || cudaSetDevice(x->rt.dev) != cudaSuccess) return -1;
  if (cusolverDnXtrtri_bufferSize(x->rt.sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n,
                                  CUDA_R_64F, NULL, n, &d, &h) != CUSOLVER_STATUS_SUCCESS)
    return -1;
  return OCU_RT_ROUND(OCU_RT_ROUND((int64_t)d) + 8 * n * (n < GETRI_NB ? n : GETRI_NB));
}
static ooc_status_t c_getri(ooc_exec_t *e, int q, int64_t n, double *A, int64_t lda, int64_t *info) {
  OOC_TRY(begin(e, q, "getri", 4.0 * n * (double)n * n / 3.0));
  return leave(X(e), do_getri(X(e), q, n, A, lda, info));
}

/* QR (issue 24). geqrf: cuSOLVER's 64-bit generic API; its info (an argument check only: QR
 * cannot fail numerically) lands in the queue's small buffer and is not read back. ormqr:
 * cuSOLVER has only the 32-bit Dormqr (sizes are checked). laset: exc_laset's kernel. */
static ooc_status_t do_geqrf(cx_t *x, int q, int64_t m, int64_t n, double *A, int64_t lda,
                             double *tau) {
  cq_t *Q = &x->q[q];
  if (m <= 0 || n <= 0) return OOC_OK;
  size_t d = 0, h = 0;
  OOC_TRY(sol_on(x, q));
  CS(&x->e, cusolverDnXgeqrf_bufferSize(x->rt.sol, x->rt.par, m, n, CUDA_R_64F, A, lda, CUDA_R_64F,
                                        tau, CUDA_R_64F, &d, &h));
  OOC_TRY(ws_need(x, Q, (int64_t)d, h, "geqrf"));
  int64_t mn = m < n ? m : n;
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "geqrf", 0,
                    4.0 * m * n * mn - 2.0 * (double)(m + n) * mn * mn + 4.0 * mn * mn * mn / 3.0);
  CS(&x->e, cusolverDnXgeqrf(x->rt.sol, x->rt.par, m, n, CUDA_R_64F, A, lda, CUDA_R_64F, tau,
                             CUDA_R_64F, Q->ws, d, Q->hws, h, (int *)(Q->small + 1)));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_geqrf(ooc_exec_t *e, int q, int64_t m, int64_t n, double *A, int64_t lda,
                            double *tau) {
  int64_t k = m < n ? m : n;
  OOC_TRY(begin(e, q, "geqrf", 4.0 * m * n * k - 2.0 * (double)(m + n) * k * k + 4.0 * k * k * k / 3.0));
  return leave(X(e), do_geqrf(X(e), q, m, n, A, lda, tau));
}

static ooc_status_t do_ormqr(cx_t *x, int q, char trans, int64_t m, int64_t n, int64_t k,
                             double *A, int64_t lda, const double *tau, double *C, int64_t ldc) {
  cq_t *Q = &x->q[q];
  if (m <= 0 || n <= 0 || k <= 0) return OOC_OK;
  if (m > INT_MAX || n > INT_MAX || lda > INT_MAX || ldc > INT_MAX)
    return OOC_FAIL(x->e.ctx, OOC_ERR_ARG, "executor %s: ormqr of %lld x %lld (lda %lld, ldc "
                    "%lld): cuSOLVER's ormqr takes 32-bit sizes", x->name, (long long)m,
                    (long long)n, (long long)lda, (long long)ldc);
  cublasOperation_t t = op_of(trans);
  int lw = 0;
  OOC_TRY(sol_on(x, q));
  CS(&x->e, cusolverDnDormqr_bufferSize(x->rt.sol, CUBLAS_SIDE_LEFT, t, (int)m, (int)n, (int)k, A,
                                        (int)lda, tau, C, (int)ldc, &lw));
  OOC_TRY(ws_need(x, Q, 8 * (int64_t)lw, 0, "ormqr"));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "ormqr", 0, 4.0 * m * n * k - 2.0 * n * k * k);
  CS(&x->e, cusolverDnDormqr(x->rt.sol, CUBLAS_SIDE_LEFT, t, (int)m, (int)n, (int)k, A, (int)lda,
                             tau, C, (int)ldc, (double *)Q->ws, lw, (int *)(Q->small + 1)));
  ocu_rt_span_end(&x->rt, sp, q);
  return OOC_OK;
}
static ooc_status_t c_ormqr(ooc_exec_t *e, int q, char trans, int64_t m, int64_t n, int64_t k,
                            double *A, int64_t lda, const double *tau, double *C, int64_t ldc) {
  OOC_TRY(begin(e, q, "ormqr", 4.0 * m * n * k - 2.0 * n * k * k));
  return leave(X(e), do_ormqr(X(e), q, trans, m, n, k, A, lda, tau, C, ldc));
}

static ooc_status_t c_laset(ooc_exec_t *e, int q, char uplo, int64_t m, int64_t n, double alpha,
                            double beta, double *A, int64_t lda) {
  cx_t *x = X(e);
  OOC_TRY(begin(e, q, "laset", 0));
  int64_t sp = span(x, q, OCU_SPAN_KERNEL, "laset", 0, 0);
  char what[64];
  snprintf(what, sizeof what, "laset of %lld x %lld", (long long)m, (long long)n);
  return launched(x, q, sp, exc_laset(uplo, m, n, alpha, beta, A, lda, x->q[q].st), what);
}

/* ---- creation and the end ------------------------------------------------------------------ */

static void c_destroy(ooc_exec_t *e) {
  cx_t *x = X(e);
  ooc_ctx_t *ctx = e->ctx;
  if (x->rt.opened) {
    cudaSetDevice(x->rt.dev);
    for (int i = 0; i < e->nqueues; i++)
      if (x->q[i].st) cudaStreamSynchronize(x->q[i].st); /* host functions still write */
  }
  for (int i = 0; i < EX_MAX_QUEUES; i++) ooc_free(ctx, x->q[i].hws);
  ooc_free(ctx, x->lsw_row);
  ooc_free(ctx, x->lsw_gen);
  (void)ocu_rt_fini(&x->rt); /* every buffer still allocated, streams, handles; the trace */
  if (x->mu_on) pthread_mutex_destroy(&x->mu);
  ooc_free(ctx, x);
}

static const ex_ops_t cuda_ops = {
    .alloc = c_alloc, .free = c_free, .host_alloc = c_host_alloc, .host_free = c_host_free,
    .event_create = c_event_create, .event_destroy = c_event_destroy, .record = c_record,
    .wait = c_wait, .sync = c_sync, .query = c_query, .finish = c_finish, .put = c_put, .get = c_get, .copy = c_copy,
    .fill = c_fill, .absscan = c_absscan, .transpose = c_transpose, .mirror = c_mirror, .gemm = c_gemm, .syrk = c_syrk, .trsm = c_trsm,
    .laswp = c_laswp, .getrf = c_getrf, .getrf_ws = c_getrf_ws, .getri_ws = c_getri_ws,
    .potrf_ws = c_potrf_ws, .potri_ws = c_potri_ws, .potrf = c_potrf,
    .potri = c_potri, .getri = c_getri,
    .trtri = c_trtri, .geqrf = c_geqrf, .ormqr = c_ormqr, .laset = c_laset,
    .host_register = c_host_register, .host_unregister = c_host_unregister,
    .host_span = c_host_span, .reserve = c_reserve, .destroy = c_destroy,
};

static int nqueues_of(const ex_cuda_config_t *cfg) {
  int nq = cfg->nqueues > 0 ? cfg->nqueues : 1;
  return nq > EX_MAX_QUEUES ? EX_MAX_QUEUES : nq;
}
static int64_t blas_ws_of(const ex_cuda_config_t *cfg) {
  return cfg->blas_ws > 0 ? OCU_RT_ROUND(cfg->blas_ws)
                          : ocu_rt_cublas_ws(cfg->gpu_mem > 0 ? cfg->gpu_mem : INT64_MAX);
}

int64_t ex_cuda_overhead(const ex_cuda_config_t *cfg) {
  int64_t per = blas_ws_of(cfg) + SMALL_BYTES + (cfg->ws_bytes > 0 ? OCU_RT_ROUND(cfg->ws_bytes) : 0);
  return nqueues_of(cfg) * per;
}

static ooc_status_t create(cx_t *x, const ex_cuda_config_t *cfg) {
  ocu_rt_t *rt = &x->rt;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || cfg->device < 0 || cfg->device >= count) {
    cudaGetLastError();
    return OOC_FAIL(x->e.ctx, OOC_ERR_NODEVICE, "executor %s: no CUDA device %d (%d found)",
                    x->name, cfg->device, count);
  }
  OOC_TRY(ocu_rt_open(rt));
  CU(&x->e, exc_preload());
  CU(&x->e, ocu_preload());
  int64_t bws = blas_ws_of(cfg);
  for (int i = 0; i < x->e.nqueues; i++) {
    cq_t *q = &x->q[i];
    q->x = x;
    q->i = i;
    OOC_TRY(ocu_rt_stream(rt, &q->st, "queue", i > 0 && cfg->urgent_copies));
    OOC_TRY(ocu_rt_blas(rt, &q->bl, q->st, bws));
    OOC_TRY(ocu_rt_dalloc(rt, &q->small, SMALL_BYTES, "an executor queue's info"));
    if (cfg->ws_bytes > 0) {
      OOC_TRY(ocu_rt_dalloc(rt, &q->ws, cfg->ws_bytes, "an executor queue's workspace"));
      q->ws_bytes = OCU_RT_ROUND(cfg->ws_bytes);
    }
    int64_t cap = cfg->ring_bytes > HRING0 ? cfg->ring_bytes : HRING0;
    OOC_TRY(ocu_rt_halloc(rt, &q->ring, cap, "an executor queue's output ring"));
    q->cap = cap;
    ring_map(q);
  }
  OOC_TRY(ocu_rt_solver(rt, x->q[0].st));
  x->e.budget = rt->budget - rt->used;
  x->e.mem_budget = rt->budget; /* --gpu-mem, or the default ocu_rt_open resolved */
  x->e.stats.mem_peak = rt->peak;
  if (x->e.budget <= 0) {
    char b[32], u[32];
    return OOC_FAIL(x->e.ctx, OOC_ERR_BUDGET,
                    "--gpu-mem %s leaves nothing for buffers: executor %s keeps %s itself (%d "
                    "queues: cuBLAS workspaces, info, reserved workspaces)",
                    ooc_fmt_bytes(rt->budget, b, sizeof b), x->name,
                    ooc_fmt_bytes(rt->used, u, sizeof u), x->e.nqueues);
  }
  return ocu_rt_clock(rt);
}

ooc_status_t ex_cuda_create(ooc_ctx_t *ctx, const ex_cuda_config_t *cfg, ooc_exec_t **out) {
  *out = NULL;
  ex_cuda_config_t c0 = {0};
  if (!cfg) cfg = &c0;
  const char *tspec = OCU_TRTRI_DEFAULT;
  cx_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the CUDA executor");
  snprintf(x->name, sizeof x->name, "cuda:%d", cfg->device);
  x->e = (ooc_exec_t){.op = &cuda_ops, .ctx = ctx, .name = x->name, .kind = EX_CUDA,
                      .nqueues = nqueues_of(cfg), .impl = x};
  if (ocu_trtri_parse(tspec, &x->tt)) {
    ooc_free(ctx, x);
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "executor: unknown trtri variant '%s'", tspec);
  }
  for (int i = 0; i < EX_MAX_QUEUES; i++) atomic_init(&x->q[i].tail, 0);
  ooc_status_t st = ocu_rt_init(&x->rt, ctx, cfg->device, cfg->gpu_mem, cfg->trace, cfg->timing,
                                "oocsolve executor (cuda)");
  if (st == OOC_OK) {
    if (pthread_mutex_init(&x->mu, NULL) == 0) x->mu_on = 1;
    else st = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "executor %s: cannot initialise a mutex", x->name);
  }
  if (st == OOC_OK) st = create(x, cfg);
  if (st != OOC_OK) {
    c_destroy(&x->e);
    return st;
  }
  *out = &x->e;
  return OOC_OK;
}
