/* ocu_rt.c: the CUDA executors' runtime: pool, pinned memory, streams, events, handles, timing,
 * trace. See ocu_rt.h for the contract. */
#include "kernels/cuda/ocu_rt.h"
#include "kernels/cuda/ocu_pin.h"
#include "kernels/cuda/ocu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ocu_rt_budget(int dev, int64_t gpu_mem) {
  size_t fr = 0, tot = 0;
  /* the device is made current either way: the plans query cuSOLVER on it next */
  if (cudaSetDevice(dev) != cudaSuccess) cudaGetLastError();
  if (gpu_mem > 0) return gpu_mem;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (int64_t)fr - ooc_max64((int64_t)1 << 30, (int64_t)tot / 32);
}

int64_t ocu_rt_cublas_ws(int64_t budget) {
  int64_t w = ooc_min64((int64_t)32 << 20, ooc_max64((int64_t)256 << 10, budget / 32));
  return w / 256 * 256;
}

const char *ocu_cusolver_string(cusolverStatus_t s) {
  switch (s) {
  case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
  case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
  case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
  case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
  case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
  case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
  case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
  case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
  default: return "an unlisted cuSOLVER status";
  }
}

ooc_status_t ocu_rt_init(ocu_rt_t *rt, ooc_ctx_t *ctx, int dev, int64_t gpu_mem, const char *trace,
                         int timing, const char *title) {
  memset(rt, 0, sizeof *rt);
  rt->ctx = ctx;
  rt->dev = dev;
  rt->budget = gpu_mem > 0 ? gpu_mem : 0; /* 0: resolved by ocu_rt_open */
  rt->trace = trace && *trace ? trace : NULL;
  rt->timing = rt->trace || timing;
  rt->title = title ? title : "oocsolve (cuda)";
  if (pthread_mutex_init(&rt->mu, NULL) != 0)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "cannot initialise the CUDA runtime's mutex");
  rt->mu_on = 1;
  return OOC_OK;
}

ooc_status_t ocu_rt_open(ocu_rt_t *rt) {
  struct cudaDeviceProp p;
  CU(rt, cudaSetDevice(rt->dev));
  rt->opened = 1;
  CU(rt, cudaGetDeviceProperties(&p, rt->dev));
  snprintf(rt->device, sizeof rt->device, "%.127s", p.name);
  if (rt->budget <= 0) rt->budget = ocu_rt_budget(rt->dev, 0);
  return OOC_OK;
}

ooc_status_t ocu_rt_clock(ocu_rt_t *rt) {
  rt->ready = 1; /* a trace is written from here on (none of a failed creation) */
  if (!rt->timing) return OOC_OK;
  if (rt->nst < 1) return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: a clock without streams");
  CU(rt, cudaEventCreate(&rt->base));
  CU(rt, cudaDeviceSynchronize());
  CU(rt, cudaEventRecord(rt->base, rt->st[0]));
  CU(rt, cudaEventSynchronize(rt->base));
  rt->host_base = ooc_now();
  return OOC_OK;
}

/* ---- the pool ------------------------------------------------------------------------------ */

ooc_status_t ocu_rt_dalloc(ocu_rt_t *rt, void *pp, int64_t bytes, const char *what) {
  void **p = pp;
  *p = NULL;
  if (bytes <= 0) return OOC_OK;
  bytes = OCU_RT_ROUND(bytes);
  if (rt->nbuf == OCU_RT_MAXBUF)
    return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: more than %d buffers (%s)",
                    OCU_RT_MAXBUF, what);
  if (rt->used + bytes > rt->budget) {
    char a[32], u[32], bu[32];
    return OOC_FAIL(rt->ctx, OOC_ERR_BUDGET, "--gpu-mem %s exceeded: %s for %s on top of %s in use",
                    ooc_fmt_bytes(rt->budget, bu, sizeof bu), ooc_fmt_bytes(bytes, a, sizeof a),
                    what, ooc_fmt_bytes(rt->used, u, sizeof u));
  }
  /* fault seam (base.h): an armed OOC_FAULT_DEVICE fails here as an out-of-memory would */
  int injected = ooc_fault_hit(rt->ctx, OOC_FAULT_DEVICE) != 0;
  cudaError_t e = injected ? cudaErrorMemoryAllocation : cudaMalloc(p, (size_t)bytes);
  if (e != cudaSuccess) {
    char a[32];
    cudaGetLastError();
    *p = NULL;
    return OOC_FAIL(rt->ctx, OOC_ERR_DEVICE, "device out of memory: cudaMalloc of %s for %s: %s%s",
                    ooc_fmt_bytes(bytes, a, sizeof a), what, cudaGetErrorString(e),
                    injected ? " (injected fault)" : "");
  }
  rt->buf[rt->nbuf++] = (ocu_rt_buf_t){*p, bytes, 0};
  rt->used += bytes;
  rt->nalloc++;
  if (rt->used > rt->peak) rt->peak = rt->used;
  return OOC_OK;
}

ooc_status_t ocu_rt_halloc(ocu_rt_t *rt, void *pp, int64_t bytes, const char *what) {
  void **p = pp;
  *p = NULL;
  if (bytes <= 0) return OOC_OK;
  if (rt->nbuf == OCU_RT_MAXBUF)
    return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: more than %d buffers (%s)",
                    OCU_RT_MAXBUF, what);
  char a[32];
  if (ooc_fault_hit(rt->ctx, OOC_FAULT_DEVICE))
    return OOC_FAIL(rt->ctx, OOC_ERR_NOMEM, "pinned allocation of %s for %s failed (injected fault)",
                    ooc_fmt_bytes(bytes, a, sizeof a), what);
  int how = 0;
  cudaError_t e = ocu_pin_alloc(p, bytes, &how);
  if (e != cudaSuccess)
    return OOC_FAIL(rt->ctx, OOC_ERR_NOMEM, "pinned allocation of %s for %s failed: %s",
                    ooc_fmt_bytes(bytes, a, sizeof a), what, cudaGetErrorString(e));
  rt->buf[rt->nbuf++] = (ocu_rt_buf_t){*p, bytes, how};
  rt->pinned += bytes;
  ooc_ctx_count_host(rt->ctx, bytes); /* pinned memory counts against --host-mem */
  return OOC_OK;
}

/* One buffer back to where it came from, uncounted (shared by ocu_rt_release and ocu_rt_fini). */
static void buf_free(ocu_rt_t *rt, const ocu_rt_buf_t *r) {
  if (r->pinned) {
    ocu_pin_free(r->p, r->pinned);
    ooc_ctx_count_host(rt->ctx, -r->bytes);
    rt->pinned -= r->bytes;
  } else {
    cudaFree(r->p);
    rt->used -= r->bytes;
  }
}

ooc_status_t ocu_rt_release(ocu_rt_t *rt, void *p) {
  if (!p) return OOC_OK;
  for (int i = rt->nbuf - 1; i >= 0; i--)
    if (rt->buf[i].p == p) {
      buf_free(rt, &rt->buf[i]);
      rt->buf[i] = rt->buf[--rt->nbuf]; /* the table has no order: fini frees them all */
      return OOC_OK;
    }
  return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: release of %p, which it did not hand out",
                  p);
}

/* ---- streams, events, handles -------------------------------------------------------------- */

ooc_status_t ocu_rt_stream(ocu_rt_t *rt, cudaStream_t *s, const char *role, int urgent) {
  *s = NULL;
  if (rt->nst == OCU_RT_MAXSTREAMS)
    return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: more than %d streams",
                    OCU_RT_MAXSTREAMS);
  int least = 0, greatest = 0;
  if (urgent) CU(rt, cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CU(rt, cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, greatest));
  rt->role[rt->nst] = role;
  rt->st[rt->nst++] = *s;
  rt->ctx->streams++; /* leak counter, base.h */
  return OOC_OK;
}

ooc_status_t ocu_rt_events(ocu_rt_t *rt, cudaEvent_t *ev, int64_t k, unsigned flags) {
  memset(ev, 0, (size_t)k * sizeof *ev);
  if (rt->nev + k > rt->capev) {
    int64_t cap = ooc_max64(rt->nev + k, rt->capev ? 2 * rt->capev : 64);
    cudaEvent_t *p = realloc(rt->ev, (size_t)cap * sizeof *p);
    if (!p) return OOC_FAIL(rt->ctx, OOC_ERR_NOMEM, "out of host memory (%lld CUDA events)", (long long)cap);
    rt->ev = p;
    rt->capev = cap;
  }
  for (int64_t i = 0; i < k; i++) {
    CU(rt, cudaEventCreateWithFlags(&ev[i], flags));
    rt->ev[rt->nev++] = ev[i];
  }
  return OOC_OK;
}

ooc_status_t ocu_rt_blas(ocu_rt_t *rt, cublasHandle_t *h, cudaStream_t s, int64_t ws_bytes) {
  void *ws;
  *h = NULL;
  if (rt->nbl == OCU_RT_MAXBLAS)
    return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: more than %d cuBLAS handles",
                    OCU_RT_MAXBLAS);
  CB(rt, cublasCreate(h));
  rt->bl[rt->nbl++] = *h;
  CB(rt, cublasSetStream(*h, s)); /* before the workspace: it resets it */
  OOC_TRY(ocu_rt_dalloc(rt, &ws, ws_bytes, "cuBLAS workspace"));
  CB(rt, cublasSetWorkspace(*h, ws, (size_t)OCU_RT_ROUND(ws_bytes)));
  return OOC_OK;
}

ooc_status_t ocu_rt_solver(ocu_rt_t *rt, cudaStream_t s) {
  if (rt->sol) return OOC_FAIL(rt->ctx, OOC_ERR_INTERNAL, "CUDA runtime: a second cuSOLVER handle");
  CS(rt, cusolverDnCreate(&rt->sol));
  CS(rt, cusolverDnCreateParams(&rt->par));
  CS(rt, cusolverDnSetStream(rt->sol, s));
  return OOC_OK;
}

/* ---- timing spans -------------------------------------------------------------------------- */

/* A new span (mutex held); NULL without memory. */
static ocu_span_t *span_new(ocu_rt_t *rt) {
  if (rt->nspans == rt->capspans) {
    int64_t cap = rt->capspans ? 2 * rt->capspans : 1024;
    ocu_span_t *p = realloc(rt->spans, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    rt->spans = p;
    rt->capspans = cap;
  }
  ocu_span_t *sp = &rt->spans[rt->nspans];
  memset(sp, 0, sizeof *sp);
  return sp;
}

int64_t ocu_rt_span(ocu_rt_t *rt, int s, int kind, const char *name, int64_t bytes, double flops) {
  if (!rt->timing || s < 0 || s >= rt->nst) return -1;
  int64_t i = -1;
  pthread_mutex_lock(&rt->mu);
  ocu_span_t *sp = span_new(rt);
  if (sp && cudaEventCreate(&sp->a) == cudaSuccess) {
    if (cudaEventCreate(&sp->b) == cudaSuccess) {
      *sp = (ocu_span_t){sp->a, sp->b, 1 + s, kind, name, bytes, flops, 0, 0};
      cudaEventRecord(sp->a, rt->st[s]);
      i = rt->nspans++;
    } else {
      cudaEventDestroy(sp->a);
    }
  }
  pthread_mutex_unlock(&rt->mu);
  return i;
}

void ocu_rt_span_end(ocu_rt_t *rt, int64_t i, int s) {
  if (i < 0) return;
  pthread_mutex_lock(&rt->mu); /* the array may be moving (another thread's span_new) */
  cudaEventRecord(rt->spans[i].b, rt->st[s]);
  pthread_mutex_unlock(&rt->mu);
}

void ocu_rt_host_span(ocu_rt_t *rt, const char *name, double t0, double t1, int64_t bytes) {
  if (!rt->timing) return;
  pthread_mutex_lock(&rt->mu);
  ocu_span_t *sp = span_new(rt);
  if (sp) {
    *sp = (ocu_span_t){NULL, NULL, 0, OCU_SPAN_COPY, name, bytes, 0, (t0 - rt->host_base) * 1e6,
                       (t1 - rt->host_base) * 1e6};
    rt->nspans++;
  }
  pthread_mutex_unlock(&rt->mu);
}

/* Event times to microseconds since the base (waits for the device), events released. */
static void resolve(ocu_rt_t *rt) {
  if (!rt->timing || !rt->base) return;
  cudaDeviceSynchronize();
  for (int64_t i = 0; i < rt->nspans; i++) {
    ocu_span_t *sp = &rt->spans[i];
    if (!sp->a) continue;
    float a = 0, b = 0;
    cudaEventElapsedTime(&a, rt->base, sp->a);
    cudaEventElapsedTime(&b, rt->base, sp->b);
    sp->t0 = a * 1e3;
    sp->t1 = b * 1e3;
    cudaEventDestroy(sp->a);
    cudaEventDestroy(sp->b);
    sp->a = sp->b = NULL;
  }
}

typedef struct iv {
  double a, b;
} iv_t;
static int iv_cmp(const void *p, const void *q) {
  double a = ((const iv_t *)p)->a, b = ((const iv_t *)q)->a;
  return a < b ? -1 : a > b;
}
/* Sort and merge intervals in place (disjoint afterwards); returns the count. */
static int64_t iv_merge(iv_t *v, int64_t k) {
  if (k == 0) return 0;
  qsort(v, (size_t)k, sizeof *v, iv_cmp);
  int64_t o = 0;
  for (int64_t i = 1; i < k; i++) {
    if (v[i].a <= v[o].b) {
      if (v[i].b > v[o].b) v[o].b = v[i].b;
    } else {
      v[++o] = v[i];
    }
  }
  return o + 1;
}
static double iv_len(const iv_t *v, int64_t k) {
  double s = 0;
  for (int64_t i = 0; i < k; i++) s += v[i].b - v[i].a;
  return s;
}

void ocu_rt_times(ocu_rt_t *rt, ocu_rt_times_t *t) {
  memset(t, 0, sizeof *t);
  if (!rt->timing) return;
  resolve(rt);
  iv_t *cp = malloc((size_t)(rt->nspans + 1) * sizeof *cp);
  iv_t *kn = malloc((size_t)(rt->nspans + 1) * sizeof *kn);
  if (!cp || !kn) {
    free(cp);
    free(kn);
    return;
  }
  int64_t nc = 0, nk = 0;
  double lo = 1e300, hi = -1e300;
  for (int64_t i = 0; i < rt->nspans; i++) {
    const ocu_span_t *sp = &rt->spans[i];
    if (sp->tid == 0) {
      t->host += (sp->t1 - sp->t0) * 1e-6;
      t->bytes_host += sp->bytes;
      continue;
    }
    lo = fmin(lo, sp->t0);
    hi = fmax(hi, sp->t1);
    if (sp->kind == OCU_SPAN_COPY) cp[nc++] = (iv_t){sp->t0, sp->t1};
    else kn[nk++] = (iv_t){sp->t0, sp->t1};
  }
  nc = iv_merge(cp, nc);
  nk = iv_merge(kn, nk);
  t->copy = iv_len(cp, nc) * 1e-6;
  t->kernel = iv_len(kn, nk) * 1e-6;
  double ov = 0;
  for (int64_t i = 0, j = 0; i < nc && j < nk;) { /* intersection of two sorted disjoint lists */
    double a = fmax(cp[i].a, kn[j].a), b = fmin(cp[i].b, kn[j].b);
    if (b > a) ov += b - a;
    if (cp[i].b < kn[j].b) i++;
    else j++;
  }
  t->overlap = ov * 1e-6;
  t->span = hi > lo ? (hi - lo) * 1e-6 : 0;
  free(cp);
  free(kn);
}

double ocu_rt_sum(ocu_rt_t *rt, const char *name, int kind) {
  double s = 0;
  if (!rt->timing) return 0;
  resolve(rt);
  for (int64_t i = 0; i < rt->nspans; i++) {
    const ocu_span_t *sp = &rt->spans[i];
    if (sp->tid > 0 && (!name || !strcmp(sp->name, name)) && (kind < 0 || sp->kind == kind))
      s += (sp->t1 - sp->t0) * 1e-6;
  }
  return s;
}

static ooc_status_t write_trace(ocu_rt_t *rt) {
  resolve(rt);
  FILE *f = fopen(rt->trace, "w");
  if (!f) return OOC_FAIL(rt->ctx, OOC_ERR_IO, "%s: cannot write the trace", rt->trace);
  fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"device\":\"%s\"},\"traceEvents\":[\n"
             "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"%s\"}},\n"
             "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"host: "
             "tile store (cache, disk)\"}}",
          rt->device, rt->title);
  for (int s = 0; s < rt->nst; s++)
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":"
               "\"stream %d (%s)\"}}", s + 1, s, rt->role[s] ? rt->role[s] : "");
  for (int64_t i = 0; i < rt->nspans; i++) {
    const ocu_span_t *sp = &rt->spans[i];
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,"
               "\"dur\":%.3f,\"args\":{\"bytes\":%lld,\"flops\":%.6g}}",
            sp->name, sp->tid == 0 ? "host" : sp->kind == OCU_SPAN_COPY ? "copy" : "kernel", sp->tid,
            sp->t0, sp->t1 - sp->t0, (long long)sp->bytes, sp->flops);
  }
  fprintf(f, "\n]}\n");
  if (fclose(f) != 0) return OOC_FAIL(rt->ctx, OOC_ERR_IO, "%s: writing the trace failed", rt->trace);
  return OOC_OK;
}

/* ---- the end ------------------------------------------------------------------------------- */

ooc_status_t ocu_rt_fini(ocu_rt_t *rt) {
  ooc_status_t st = OOC_OK;
  if (rt->opened) {
    cudaSetDevice(rt->dev);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
      st = OOC_FAIL(rt->ctx, OOC_ERR_DEVICE, "CUDA: the device's last work failed: %s",
                    cudaGetErrorString(e));
    if (rt->trace && rt->ready && rt->base && st == OOC_OK) st = write_trace(rt);
  }
  for (int64_t i = 0; i < rt->nspans; i++)
    if (rt->spans[i].a) {
      cudaEventDestroy(rt->spans[i].a);
      cudaEventDestroy(rt->spans[i].b);
    }
  free(rt->spans);
  for (int64_t i = 0; i < rt->nev; i++) cudaEventDestroy(rt->ev[i]);
  free(rt->ev);
  if (rt->base) cudaEventDestroy(rt->base);
  for (int i = 0; i < rt->nbl; i++) cublasDestroy(rt->bl[i]);
  if (rt->par) cusolverDnDestroyParams(rt->par);
  if (rt->sol) cusolverDnDestroy(rt->sol);
  for (int i = rt->nbuf - 1; i >= 0; i--) buf_free(rt, &rt->buf[i]);
  for (int s = 0; s < rt->nst; s++) {
    cudaStreamDestroy(rt->st[s]);
    rt->ctx->streams--; /* leak counter, base.h */
  }
  if (rt->mu_on) pthread_mutex_destroy(&rt->mu);
  rt->spans = NULL;
  rt->ev = NULL;
  rt->nspans = rt->nev = rt->nbuf = rt->nst = rt->nbl = rt->mu_on = 0;
  rt->sol = NULL;
  rt->par = NULL;
  rt->base = NULL;
  return st;
}

int ocu_probe(char *desc, size_t cap) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    snprintf(desc, cap, "%s", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
    cudaGetLastError();
    return 0;
  }
  size_t fr = 0, tot = 0;
  struct cudaDeviceProp p;
  if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess) {
    snprintf(desc, cap, "%s", cudaGetErrorString(e));
    cudaGetLastError();
    return 0;
  }
  char f[32];
  snprintf(desc, cap, "%s, %s free", p.name, ooc_fmt_bytes((int64_t)fr, f, sizeof f));
  return 1;
}
