/* ocu_exec.c: the CUDA Gauss-Jordan executor on the CUDA runtime (ocu_rt.h: pool, pinned memory,
 * streams, trace). See ocu.h for the contract and gj.h for the algorithm it serves. */
#include "kernels/cuda/ocu.h"
#include "kernels/cuda/ocu_rt.h"
#include "kernels/cuda/ocu_trtri.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ocu_kernels.cu */
cudaError_t ocu_gather_rows(const double *C, int64_t ldc, const int64_t *src, int64_t nt,
                            int64_t nc, double *G, int64_t ldg, cudaStream_t s);
cudaError_t ocu_scatter_rows(const double *G, int64_t ldg, const int64_t *dst, int64_t t0,
                             int64_t nt, int64_t nc, double *C, int64_t ldc, cudaStream_t s);
cudaError_t ocu_lu_compose(int64_t *ipiv, int64_t nb, int64_t c, int64_t *dst, int64_t *src,
                           int64_t T, cudaStream_t s);
cudaError_t ocu_lu_apply(double *A, int64_t lda, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                         const int64_t *dst, const int64_t *src, int64_t T, int64_t nperm,
                         cudaStream_t s);
cudaError_t ocu_preload(void);

#define MAXS 8                   /* streams */
#define NB 512                   /* getri's block */
#define MAXCH 64                 /* chunks of a written-back panel (one event each) */
#define NPIN 32                  /* events for the arrivals of panel columns (a ring) */
#define ALIGN(x) OCU_RT_ROUND(x)

/* One operation of the recursive panel LU, in execution order (lu_plan). */
typedef struct lu_op {
  int64_t c, n1, n2; /* leaf: columns [c, c+n1); node: trsm + GEMM of [c+n1, c+n1+n2) by [c, c+n1) */
  int leaf;
} lu_op_t;

typedef struct ocu {
  gj_exec_t e;
  ooc_ctx_t *ctx;
  ocu_rt_t rt; /* pool, pinned buffers, streams, events, handles, trace */
  int64_t n, b, W, m;
  int sweeps, S, G, ih2d, id2h, icomp[MAXS];
  cudaStream_t st[MAXS];
  cublasHandle_t bl[MAXS]; /* one per compute stream */
  cusolverDnHandle_t sol;
  cusolverDnParams_t par;
  /* device buffers */
  double *dP, *dC[GJ_MAX_SLOTS], *dG[MAXS], *dWork;
  int64_t *dIpiv, *dRows, *dSrc;
  int *dInfo;
  void *dSolWs, *hSolWs;
  size_t solWs, hSolWsBytes;
  /* pinned host */
  int64_t *hIpiv, *hRows, *hSrc;
  int *hInfo;
  double *hDiag;
  int64_t *cont;
  unsigned char *mark;
  cudaEvent_t ev_h2d[GJ_MAX_SLOTS], ev_comp[GJ_MAX_SLOTS], ev_done[GJ_MAX_SLOTS], ev_panel;
  cudaEvent_t ev_tdone; /* the step's factor and interchange tables are on the device */
  cudaEvent_t ev_pout[MAXCH]; /* chunk i of the written-back panel is on the host */
  int npout;                  /* chunks of the last writeback (0: none pending) */
  int64_t pout_cw;            /* columns per chunk */
  int busy[GJ_MAX_SLOTS];
  int64_t k0, w, tcount, qcount;
  int64_t panel_cols; /* columns of this step's panel already sent by panel_in */
  /* the recursive panel LU (leaf > 0): its operations, how far they are queued, which panel
   * columns are on their way to the device, how many leaves' interchanges exist */
  int64_t leaf, T;    /* leaf width; entries of one leaf's permutation table (2 leaf) */
  lu_op_t *ops;
  int64_t nops, cur, present, ndone;
  int lu_open;        /* a step's LU is being queued (panel_in has started it) */
  int64_t *dLuDst, *dLuSrc; /* permutation tables, one per leaf (lu_compose) */
  cudaEvent_t ev_pin[NPIN]; /* arrival k of the step's panel columns is on the device: [k % NPIN] */
  /* The LU reads only rows [k0, n): panel_in sends those first and the rows above (the N_up
   * part, read first by the transform's trsm) once the last column is sent. */
  int64_t top_sent;   /* columns whose rows [0, k0) are sent this step */
  int top_wait;       /* the updates must wait for ev_top (x_factor) */
  cudaEvent_t ev_top;
  int64_t narrived;     /* arrivals (panel_in calls) this step */
  /* The LU is queued by its own thread: some cuSOLVER/cuBLAS calls block the calling thread
   * until the device has caught up, which would stall gj.c's takes of the next panel columns. */
  pthread_t lu_th;
  int lu_th_on, lu_mu_on;
  pthread_mutex_t lu_mu;
  pthread_cond_t lu_cv;
  int64_t lu_post_hi, lu_post_k; /* posted by panel_in: columns [0, hi) sent, arrival k */
  int lu_last, lu_abort;         /* no more posts this step / stop at once */
  ooc_status_t lu_st;            /* the thread's result */
  int64_t bad;        /* 1 + first j with u_jj == 0 (the factor's), else 0 */
  ocu_trtri_cfg_t tt; /* getri's trtri (ocu_config_t.trtri / trtri_cusolver) */
  int64_t bytes_h2d, bytes_d2h;
} ocu_t;

/* ---- probe and plan ------------------------------------------------------------------------ */

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

static int cfg_streams(const ocu_config_t *cfg) {
  int S = cfg && cfg->streams > 0 ? cfg->streams : 3;
  return S > MAXS ? MAXS : S;
}
static int nslots_for(int S) { return S + 1 < GJ_MAX_SLOTS ? S + 1 : GJ_MAX_SLOTS; }
static int ncompute_for(int S) { return S >= 3 ? S - 2 : 1; }
/* Entries of the panel LU's permutation tables for a panel W wide, any leaf <= the maximum:
 * ceil(W / leaf) tables of 2 leaf entries (lu_compose) < 2 W + 2 leaf. */
static int64_t lu_table_entries(int64_t W) { return 2 * W + 2 * OCU_GETRF_LEAF_MAX; }

/* cuSOLVER workspace (device, host) for getrf on up to n x W (the whole panel, or leaves of up
 * to OCU_GETRF_LEAF_MAX columns) and trtri on W. */
static void sol_ws(cusolverDnHandle_t h, cusolverDnParams_t par, int64_t n, int64_t W, size_t *dev,
                   size_t *host) {
  size_t d1 = 0, h1 = 0, d2 = 0, h2 = 0, d3 = 0, h3 = 0;
  if (cusolverDnXgetrf_bufferSize(h, par, n, ooc_min64(OCU_GETRF_LEAF_MAX, W), CUDA_R_64F, NULL, n,
                                  CUDA_R_64F, &d3, &h3) != CUSOLVER_STATUS_SUCCESS)
    d3 = (size_t)(8 * (n + OCU_GETRF_LEAF_MAX) * 64);
  if (cusolverDnXgetrf_bufferSize(h, par, n, W, CUDA_R_64F, NULL, n, CUDA_R_64F, &d1, &h1) !=
      CUSOLVER_STATUS_SUCCESS)
    d1 = (size_t)(8 * (n + W) * 64); /* conservative guess */
  if (cusolverDnXtrtri_bufferSize(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, W, CUDA_R_64F,
                                  NULL, n, &d2, &h2) != CUSOLVER_STATUS_SUCCESS)
    d2 = (size_t)(8 * W * 64);
  *dev = d1 > d2 ? d1 : d2;
  *host = h1 > h2 ? h1 : h2;
  if (d3 > *dev) *dev = d3;
  if (h3 > *host) *host = h3;
}

static int64_t device_bytes(int64_t n, int64_t b, int64_t W, int64_t m, int S, size_t solws,
                            int64_t budget) {
  int sweeps = W < n || m > 0, K = nslots_for(S), G = ncompute_for(S);
  int64_t t = ALIGN(8 * n * W) + ALIGN(8 * W * ooc_min64(W, NB)) + ALIGN(8 * W) +
              2 * ALIGN(8 * 2 * W) + ALIGN(8) + ALIGN((int64_t)solws) +
              (int64_t)G * ocu_rt_cublas_ws(budget);
  t += 2 * ALIGN(8 * lu_table_entries(W));
  if (sweeps) t += K * ALIGN(8 * n * b) + G * ALIGN(8 * 2 * W * b);
  return t;
}

int64_t ocu_host_extra_bytes(int64_t n, int64_t b, int64_t W, int64_t m, const ocu_config_t *cfg) {
  int sweeps = W < n || m > 0;
  int64_t K = nslots_for(cfg_streams(cfg));
  return (sweeps ? 8 * K * n * b : 0) + 8 * (W + 4 * W + W) + 64 + 9 * n + 4096;
}

static int64_t plan_bytes(const ocu_rt_shape_t *a, int64_t W, cusolverDnHandle_t h,
                          cusolverDnParams_t par) {
  size_t d = 0, hh = 0;
  sol_ws(h, par, a->n, W, &d, &hh);
  return device_bytes(a->n, a->b, W, a->m, a->streams, d, a->budget);
}

ooc_status_t ocu_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t m, const ocu_config_t *cfg,
                      int64_t *W, int64_t *budget) {
  ocu_rt_shape_t a = {.n = n, .b = b, .m = m, .streams = cfg_streams(cfg)};
  return ocu_rt_widest(ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, &a, plan_bytes, "",
                       nslots_for(a.streams), W, budget);
}

/* ---- timing (ocu_rt.h's spans; copies are the spans named h2d... and d2h...) --------------- */

static int64_t sp_begin(ocu_t *x, int s, const char *name, int64_t bytes) {
  int copy = !strncmp(name, "h2d", 3) || !strncmp(name, "d2h", 3);
  return ocu_rt_span(&x->rt, s, copy ? OCU_SPAN_COPY : OCU_SPAN_KERNEL, name, bytes, 0);
}

static void sp_end(ocu_t *x, int64_t i, int s) { ocu_rt_span_end(&x->rt, i, s); }

static void host_span(gj_exec_t *e, const char *what, double t0, double t1, int64_t bytes) {
  ocu_rt_host_span(&((ocu_t *)e)->rt, what, t0, t1, bytes);
}

void ocu_exec_stats(gj_exec_t *e, ocu_stats_t *s) {
  ocu_t *x = (ocu_t *)e;
  ocu_rt_t *rt = &x->rt;
  ocu_rt_times_t t;
  memset(s, 0, sizeof *s);
  memcpy(s->device, rt->device, sizeof s->device);
  s->dev_budget = rt->budget;
  s->dev_peak = rt->peak;
  s->dev_allocs = rt->nalloc;
  s->pinned_bytes = rt->pinned;
  s->bytes_h2d = x->bytes_h2d;
  s->bytes_d2h = x->bytes_d2h;
  s->nslots = x->e.nslots;
  s->streams = x->S;
  ocu_rt_times(rt, &t);
  s->t_copy = t.copy;
  s->t_kernel = t.kernel;
  s->t_overlap = t.overlap;
  s->t_span = t.span;
  s->t_host = t.host;
  s->bytes_host = t.bytes_host;
  s->t_getrf = ocu_rt_sum(rt, "getrf", -1);
  s->t_trsm = ocu_rt_sum(rt, "trsm", -1);
  s->t_trtri = ocu_rt_sum(rt, "trtri", -1);
  s->t_getri = ocu_rt_sum(rt, "getri", -1);
  s->t_gemm_update = ocu_rt_sum(rt, "gemm", -1);
  s->t_panel_dev = s->t_getrf + s->t_trsm + s->t_trtri + s->t_getri;
}

/* ---- the executor -------------------------------------------------------------------------- */

/* ---- the panel LU ---------------------------------------------------------------------------
 * cuSOLVER's getrf runs at about half the DGEMM rate on a tall panel and can only start once the
 * whole panel is on the device. The recursive LU (Toledo) of rows [k0, n) of the panel,
 *   node(c, nc): node(c, n1); A12 = L11^-1 A12 (trsm); A22 -= A21 A12 (GEMM); node(c+n1, n2),
 * puts almost all of its flops in large trsm/GEMMs and leaves only leaves of `leaf` columns to
 * cusolverDnXgetrf; and since node(c, nc) needs only columns < c + nc, its operations are queued
 * as the panel's tile columns arrive (panel_in), so the take and H2D of the panel overlap its
 * factorization. Each leaf's interchanges go at once, as one row permutation (lu_compose), to
 * every other column already sent; columns sent later first get the interchanges of all leaves
 * so far (catch-up), in order. Row swaps commute with the delayed trsm/GEMMs of columns they do
 * not read, so this is the same elimination as LAPACK's getrf: the same partial pivoting (the
 * largest |entry| of the updated column), pivots and |u_jj| reported as before. */

static void lu_plan(ocu_t *x, int64_t c, int64_t nc) {
  if (nc <= x->leaf) {
    x->ops[x->nops++] = (lu_op_t){c, nc, 0, 1};
    return;
  }
  /* n1 a multiple of the leaf, so every leaf starts at a multiple of it and all but the last
   * are full (leaf index = c / leaf); 0 < n1 < nc since nc > leaf */
  int64_t n1 = ooc_cdiv64(ooc_cdiv64(nc, 2), x->leaf) * x->leaf;
  lu_plan(x, c, n1);
  x->ops[x->nops++] = (lu_op_t){c, n1, nc - n1, 0};
  lu_plan(x, c + n1, nc - n1);
}

ooc_status_t ocu_exec_set_leaf(gj_exec_t *e, int leaf) {
  ocu_t *x = (ocu_t *)e;
  if (leaf > OCU_GETRF_LEAF_MAX)
    return OOC_FAIL(x->ctx, OOC_ERR_ARG, "panel LU leaf %d > %d", leaf, OCU_GETRF_LEAF_MAX);
  x->lu_open = 0;
  x->leaf = leaf > 0 ? leaf : 0;
  x->T = 2 * x->leaf;
  ooc_free(x->ctx, x->ops);
  x->ops = NULL;
  if (x->leaf == 0) return OOC_OK;
  x->ops = ooc_malloc(x->ctx, (size_t)(2 * ooc_cdiv64(x->W, x->leaf) + 1) * sizeof *x->ops);
  if (!x->ops) return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "out of host memory (panel LU plan)");
  return OOC_OK;
}

static void lu_begin(ocu_t *x, int64_t k0, int64_t w) {
  x->k0 = k0;
  x->w = w;
  x->top_sent = 0;
  x->nops = x->cur = x->present = x->ndone = x->narrived = 0;
  lu_plan(x, 0, w);
  x->lu_open = 1;
}

/* Queue the operations whose columns have all been sent. */
static ooc_status_t lu_advance(ocu_t *x) {
  int64_t n = x->n, m = n - x->k0, T = x->T;
  int c0 = x->icomp[0];
  cudaStream_t sc = x->st[c0];
  cublasHandle_t h = x->bl[0];
  double *A = x->dP + x->k0; /* the sub-panel: rows [k0, n), ld n */
  double one = 1.0, mone = -1.0;
  for (; x->cur < x->nops; x->cur++) {
    const lu_op_t *o = &x->ops[x->cur];
    int64_t c = o->c;
    if (c + o->n1 + o->n2 > x->present) break;
    int64_t sp = sp_begin(x, c0, "getrf", 0);
    if (o->leaf) {
      int64_t nc = o->n1, li = c / x->leaf;
      double *L = A + c + c * n;
      size_t d = 0, hb = 0;
      CS(x, cusolverDnXgetrf_bufferSize(x->sol, x->par, m - c, nc, CUDA_R_64F, L, n, CUDA_R_64F,
                                        &d, &hb));
      if (d > x->solWs || hb > x->hSolWsBytes)
        return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cuSOLVER getrf wants %zu+%zu bytes of "
                        "workspace, %zu+%zu planned", d, hb, x->solWs, x->hSolWsBytes);
      CS(x, cusolverDnXgetrf(x->sol, x->par, m - c, nc, CUDA_R_64F, L, n, x->dIpiv + c,
                             CUDA_R_64F, x->dSolWs, x->solWs, x->hSolWs, x->hSolWsBytes, x->dInfo));
      if (li != x->ndone)
        return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "panel LU: leaf %lld out of order",
                        (long long)li);
      int64_t *dst = x->dLuDst + li * T, *src = x->dLuSrc + li * T;
      CU(x, ocu_lu_compose(x->dIpiv + c, nc, c, dst, src, T, sc));
      CU(x, ocu_lu_apply(A, n, 0, c, c + nc, x->present, dst, src, T, 1, sc));
      x->ndone++;
    } else {
      int64_t n1 = o->n1, n2 = o->n2;
      CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                           CUBLAS_DIAG_UNIT, n1, n2, &one, A + c + c * n, n, A + c + (c + n1) * n,
                           n));
      if (m - c - n1 > 0)
        CB(x, cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m - c - n1, n2, n1, &mone,
                             A + c + n1 + c * n, n, A + c + (c + n1) * n, n, &one,
                             A + c + n1 + (c + n1) * n, n));
    }
    sp_end(x, sp, c0);
  }
  return OOC_OK;
}

/* Panel columns [present, hi) have been queued for H2D and arrival k's event recorded after
 * them: let the compute stream wait for them, give them the interchanges of the leaves factored
 * so far, and queue what they allow. (A newer record of the same ring event only waits longer:
 * the H2D stream is in order.) */
static ooc_status_t lu_arrive(ocu_t *x, int64_t hi, int64_t k) {
  int c0 = x->icomp[0];
  CU(x, cudaStreamWaitEvent(x->st[c0], x->ev_pin[k % NPIN], 0));
  if (x->ndone > 0) {
    int64_t sp = sp_begin(x, c0, "getrf", 0);
    CU(x, ocu_lu_apply(x->dP + x->k0, x->n, x->present, hi, 0, 0, x->dLuDst, x->dLuSrc, x->T,
                       x->ndone, x->st[c0]));
    sp_end(x, sp, c0);
  }
  x->present = hi;
  return lu_advance(x);
}

/* Rows [r0, r1) of panel columns [c0, c0+nc) to the device. */
static ooc_status_t send_rows(ocu_t *x, const double *panel, int64_t c0, int64_t nc, int64_t r0,
                              int64_t r1, const char *what) {
  int64_t n = x->n, bytes = 8 * (r1 - r0) * nc;
  if (bytes <= 0) return OOC_OK;
  int64_t sp = sp_begin(x, x->ih2d, what, bytes);
  if (r1 - r0 == n)
    CU(x, cudaMemcpyAsync(x->dP + c0 * n, panel + c0 * n, (size_t)bytes, cudaMemcpyHostToDevice,
                          x->st[x->ih2d]));
  else
    CU(x, cudaMemcpy2DAsync(x->dP + r0 + c0 * n, (size_t)(8 * n), panel + r0 + c0 * n,
                            (size_t)(8 * n), (size_t)(8 * (r1 - r0)), (size_t)nc,
                            cudaMemcpyHostToDevice, x->st[x->ih2d]));
  sp_end(x, sp, x->ih2d);
  x->bytes_h2d += bytes;
  return OOC_OK;
}

/* The recursive LU's columns: rows [k0, n) now (all the LU reads), rows [0, k0) by send_top. */
static ooc_status_t send_panel(ocu_t *x, const double *panel, int64_t c0, int64_t nc) {
  return send_rows(x, panel, c0, nc, x->k0, x->n, "h2d panel");
}

/* Rows [0, k0) of the columns not yet sent that way, behind every LU row already queued on the
 * H2D stream; the transform waits for them (ev_top). At n = 49152, 12 GiB, step 2 (k0 = 26624)
 * sent whole columns at ~8 ms per tile column while the LU of its 22528 rows needed ~5: the LU
 * waited ~0.12 s for its columns. */
static ooc_status_t send_top(ocu_t *x, const double *panel) {
  if (x->k0 == 0 || x->top_sent >= x->w) return OOC_OK;
  OOC_TRY(send_rows(x, panel, x->top_sent, x->w - x->top_sent, 0, x->k0, "h2d panel top"));
  x->top_sent = x->w;
  CU(x, cudaEventRecord(x->ev_top, x->st[x->ih2d]));
  x->top_wait = 1;
  return OOC_OK;
}

/* The LU's thread: queue the LU for the columns panel_in posts, until the last post. */
static void *lu_thread(void *arg) {
  ocu_t *x = arg;
  ooc_status_t st = cudaSetDevice(x->rt.dev) == cudaSuccess ? OOC_OK : OOC_ERR_DEVICE;
  if (st != OOC_OK) (void)OOC_FAIL(x->ctx, OOC_ERR_DEVICE, "panel LU thread: cudaSetDevice failed");
  for (;;) {
    pthread_mutex_lock(&x->lu_mu);
    while (!x->lu_abort && !x->lu_last && x->lu_post_hi == x->present)
      pthread_cond_wait(&x->lu_cv, &x->lu_mu);
    int64_t hi = x->lu_post_hi, k = x->lu_post_k;
    int stop = x->lu_abort || (x->lu_last && hi == x->present);
    pthread_mutex_unlock(&x->lu_mu);
    if (stop || st != OOC_OK) break;
    st = lu_arrive(x, hi, k);
  }
  x->lu_st = st;
  return NULL;
}

static void lu_post(ocu_t *x, int64_t hi, int64_t k, int last, int abort) {
  pthread_mutex_lock(&x->lu_mu);
  if (hi >= 0) {
    x->lu_post_hi = hi;
    x->lu_post_k = k;
  }
  x->lu_last |= last;
  x->lu_abort |= abort;
  pthread_cond_signal(&x->lu_cv);
  pthread_mutex_unlock(&x->lu_mu);
}

/* Wait for the LU's thread (abort: make it stop at once); its status. */
static ooc_status_t lu_join(ocu_t *x, int abort) {
  if (!x->lu_th_on) return OOC_OK;
  lu_post(x, -1, 0, 1, abort);
  pthread_join(x->lu_th, NULL);
  x->lu_th_on = 0;
  return x->lu_st;
}

/* Record arrival k (columns sent up to hi) on the H2D stream. */
static ooc_status_t lu_record(ocu_t *x, int64_t *k) {
  *k = x->narrived++;
  CU(x, cudaEventRecord(x->ev_pin[*k % NPIN], x->st[x->ih2d]));
  return OOC_OK;
}

/* gj.c took panel columns [c0, c0+nc) of the step (k0, w): send them while it takes the next
 * ones, and (recursive LU) start factoring what they complete. */
static ooc_status_t x_panel_in(gj_exec_t *e, double *panel, int64_t n, int64_t k0, int64_t w,
                               int64_t c0, int64_t nc) {
  ocu_t *x = (ocu_t *)e;
  (void)n;
  if (x->leaf == 0) { /* cuSOLVER's getrf: it starts once the whole panel is there */
    OOC_TRY(send_rows(x, panel, c0, nc, 0, x->n, "h2d panel"));
    x->panel_cols += nc;
    return OOC_OK;
  }
  if (c0 == 0 || !x->lu_open || x->k0 != k0 || x->w != w) {
    OOC_TRY(lu_join(x, 1)); /* (none normally: factor joined it) */
    lu_begin(x, k0, w);
    x->lu_post_hi = 0;
    x->lu_last = x->lu_abort = 0;
    x->lu_st = OOC_OK;
    if (pthread_create(&x->lu_th, NULL, lu_thread, x) != 0)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cannot start the panel LU's thread");
    x->lu_th_on = 1;
  }
  if (c0 != x->lu_post_hi)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "panel columns sent out of order (%lld, expected "
                    "%lld)", (long long)c0, (long long)x->lu_post_hi);
  int64_t k;
  OOC_TRY(send_panel(x, panel, c0, nc));
  OOC_TRY(lu_record(x, &k));
  lu_post(x, c0 + nc, k, 0, 0);
  if (c0 + nc == w) OOC_TRY(send_top(x, panel));
  return OOC_OK;
}

static ooc_status_t x_factor(gj_exec_t *e, double *panel, int64_t n, int64_t k0, int64_t w,
                             int64_t *ipiv, double *udiag) {
  ocu_t *x = (ocu_t *)e;
  int c0 = x->icomp[0];
  cudaStream_t sc = x->st[c0];
  if (x->leaf > 0) {
    if (x->lu_open && (x->k0 != k0 || x->w != w)) {
      OOC_TRY(lu_join(x, 1));
      x->lu_open = 0;
    }
    OOC_TRY(lu_join(x, 0)); /* everything panel_in posted is queued */
    if (!x->lu_open) lu_begin(x, k0, w);
    if (x->present < w) { /* columns panel_in did not send: here, on this thread */
      int64_t k;
      OOC_TRY(send_panel(x, panel, x->present, w - x->present));
      OOC_TRY(lu_record(x, &k));
      OOC_TRY(lu_arrive(x, w, k));
    }
    OOC_TRY(send_top(x, panel));
    x->lu_open = 0;
    if (x->cur != x->nops)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "panel LU: %lld of %lld operations queued",
                      (long long)x->cur, (long long)x->nops);
  } else {
    x->k0 = k0;
    x->w = w;
    if (x->panel_cols != w) /* not (all) sent by panel_in: send it now */
      OOC_TRY(send_rows(x, panel, 0, w, 0, n, "h2d panel"));
    x->panel_cols = 0;
    CU(x, cudaEventRecord(x->ev_panel, x->st[x->ih2d]));
    CU(x, cudaStreamWaitEvent(sc, x->ev_panel, 0));
    size_t d = 0, h = 0;
    CS(x, cusolverDnXgetrf_bufferSize(x->sol, x->par, n - k0, w, CUDA_R_64F, x->dP + k0, n,
                                      CUDA_R_64F, &d, &h));
    if (d > x->solWs || h > x->hSolWsBytes)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cuSOLVER getrf wants %zu+%zu bytes of workspace, "
                      "%zu+%zu planned", d, h, x->solWs, x->hSolWsBytes);
    int64_t sp = sp_begin(x, c0, "getrf", 0);
    CS(x, cusolverDnXgetrf(x->sol, x->par, n - k0, w, CUDA_R_64F, x->dP + k0, n, x->dIpiv,
                           CUDA_R_64F, x->dSolWs, x->solWs, x->hSolWs, x->hSolWsBytes, x->dInfo));
    sp_end(x, sp, c0);
  }
  /* pivots (1-based, relative to row k0) and the diagonal of U */
  CU(x, cudaMemcpyAsync(x->hIpiv, x->dIpiv, (size_t)(8 * w), cudaMemcpyDeviceToHost, sc));
  CU(x, cudaMemcpy2DAsync(x->hDiag, sizeof(double), x->dP + k0, (size_t)(8 * (n + 1)),
                          sizeof(double), (size_t)w, cudaMemcpyDeviceToHost, sc));
  CU(x, cudaMemcpyAsync(x->hInfo, x->dInfo, sizeof(int), cudaMemcpyDeviceToHost, sc));
  CU(x, cudaStreamSynchronize(sc));
  if (*x->hInfo < 0)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cusolverDnXgetrf: argument %d invalid", -*x->hInfo);
  x->bad = 0;
  for (int64_t j = 0; j < w; j++) {
    ipiv[k0 + j] = k0 + x->hIpiv[j] - 1;
    udiag[j] = fabs(x->hDiag[j]);
    if (x->hDiag[j] == 0 && !x->bad) x->bad = j + 1;
  }
  /* The rows the interchanges touch and, for each, the row its content comes from. */
  int64_t tc = 0;
  for (int64_t j = 0; j < w; j++) {
    x->hRows[tc++] = k0 + j;
    x->mark[k0 + j] = 1;
  }
  for (int64_t j = 0; j < w; j++) {
    int64_t p = ipiv[k0 + j], t = x->cont[k0 + j];
    x->cont[k0 + j] = x->cont[p];
    x->cont[p] = t;
    if (!x->mark[p]) {
      x->mark[p] = 1;
      x->hRows[tc++] = p;
    }
  }
  for (int64_t t = 0; t < tc; t++) x->hSrc[t] = x->cont[x->hRows[t]];
  for (int64_t t = 0; t < tc; t++) {
    x->cont[x->hRows[t]] = x->hRows[t];
    x->mark[x->hRows[t]] = 0;
  }
  x->tcount = tc;
  /* The column blocks are updated from the factored panel (gj.h step 4), before the transform:
   * they need the rows above (send_top) and the interchange tables on the device. */
  if (x->top_wait) {
    CU(x, cudaStreamWaitEvent(sc, x->ev_top, 0));
    x->top_wait = 0;
  }
  if (x->sweeps) {
    CU(x, cudaMemcpyAsync(x->dRows, x->hRows, (size_t)(8 * tc), cudaMemcpyHostToDevice, sc));
    CU(x, cudaMemcpyAsync(x->dSrc, x->hSrc, (size_t)(8 * tc), cudaMemcpyHostToDevice, sc));
  }
  CU(x, cudaEventRecord(x->ev_tdone, sc)); /* x_update waits for this */
  return OOC_OK;
}

/* gj.c puts panel columns [c0, c0+nc) back: wait for the chunks of the writeback holding them. */
static ooc_status_t x_panel_out(gj_exec_t *e, int64_t c0, int64_t nc) {
  ocu_t *x = (ocu_t *)e;
  if (x->npout == 0) return OOC_OK;
  int64_t i1 = ooc_min64((c0 + nc - 1) / x->pout_cw, x->npout - 1);
  for (int64_t i = c0 / x->pout_cw; i <= i1; i++) CU(x, cudaEventSynchronize(x->ev_pout[i]));
  return OOC_OK;
}

/* Chunk i of the written-back panel: D2H once the compute stream has got this far. */
static ooc_status_t writeback_chunk(ocu_t *x, double *panel, int64_t i) {
  int64_t n = x->n, c = i * x->pout_cw, nc = ooc_min64(x->pout_cw, x->w - c);
  CU(x, cudaEventRecord(x->ev_panel, x->st[x->icomp[0]]));
  CU(x, cudaStreamWaitEvent(x->st[x->id2h], x->ev_panel, 0));
  int64_t sp = sp_begin(x, x->id2h, "d2h panel", 8 * n * nc);
  CU(x, cudaMemcpyAsync(panel + c * n, x->dP + c * n, (size_t)(8 * n * nc), cudaMemcpyDeviceToHost,
                        x->st[x->id2h]));
  sp_end(x, sp, x->id2h);
  CU(x, cudaEventRecord(x->ev_pout[i], x->st[x->id2h]));
  return OOC_OK;
}

/* inv(U) in place for the w x w upper triangle at U (ocu_trtri.h). Its workspace is whichever
 * is larger of getri's work and compute stream 0's gather buffer: both are used only on this
 * stream (the sweep after trtri; x_update's gathers of g = 0), so stream order makes them idle
 * here, and both are already in the pool's count. */
static ooc_status_t trtri(ocu_t *x, double *U, int64_t w, int64_t ld) {
  ocu_trtri_ws_t ws = {x->dWork, x->W * ooc_min64(x->W, NB), x->dSolWs, x->solWs, x->hSolWs,
                       x->hSolWsBytes, x->dInfo};
  if (x->sweeps && x->dG[0] && 2 * x->W * x->b > ws.work_elems) {
    ws.work = x->dG[0];
    ws.work_elems = 2 * x->W * x->b;
  }
  int code = 0;
  const char *err = ocu_trtri(x->bl[0], x->sol, U, w, ld, &x->tt, &ws, &code);
  if (err) return OOC_FAIL(x->ctx, OOC_ERR_DEVICE, "trtri (%s): %s failed (status %d)",
                           ocu_trtri_name(x->tt.variant), err, code);
  return OOC_OK;
}

static ooc_status_t x_transform(gj_exec_t *e, double *panel, int writeback, int64_t *bad) {
  ocu_t *x = (ocu_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, below = n - k0 - w;
  int c0 = x->icomp[0];
  cudaStream_t sc = x->st[c0];
  cublasHandle_t h = x->bl[0];
  double one = 1.0, mone = -1.0;
  double *L11 = x->dP + k0;
  *bad = 0;
  /* gj.c calls this after the step's column blocks are complete (they read the factored
   * panel this overwrites); the rows above arrived before them (x_factor). */
  int64_t sp = sp_begin(x, c0, "trsm", 0);
  if (k0 > 0) {
    CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                         CUBLAS_DIAG_NON_UNIT, k0, w, &one, L11, n, x->dP, n));
    CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                         CUBLAS_DIAG_UNIT, k0, w, &mone, L11, n, x->dP, n));
  }
  if (below > 0)
    CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                         CUBLAS_DIAG_UNIT, below, w, &mone, L11, n, x->dP + k0 + w, n));
  sp_end(x, sp, c0);
  if (x->bad) { /* u_jj == 0: no inverse (gj.c's pivot test normally stops this earlier) */
    *bad = x->bad;
    CU(x, cudaStreamSynchronize(sc));
    return OOC_OK;
  }
  /* getri (LAPACK's dgetri, no pivoting): inv(U) by trtri, then solve X L = inv(U) from the
   * right, a block of NB columns at a time: GEMM-rate except the small triangular solves. */
  sp = sp_begin(x, c0, "trtri", 0);
  OOC_TRY(trtri(x, L11, w, n)); /* the variant OCU_TRTRI_CUSOLVER: cuSOLVER's, to compare */
  sp_end(x, sp, c0);
  /* The writeback goes in chunks of whole tiles, each as soon as getri's sweep has finished its
   * columns (it runs last to first: after block j, columns >= j are final), so the D2H and
   * gj.c's puts overlap the rest of getri. */
  x->npout = 0;
  int64_t cw = 0, next = -1;
  if (writeback) {
    int64_t nch = ooc_min64(MAXCH, ooc_cdiv64(w, x->b));
    cw = ooc_cdiv64(ooc_cdiv64(w, nch), x->b) * x->b;
    x->npout = (int)ooc_cdiv64(w, cw);
    x->pout_cw = cw;
    next = x->npout - 1;
    x->bytes_d2h += 8 * n * w;
  }
  sp = sp_begin(x, c0, "getri", 0);
  for (int64_t j = (w - 1) / NB * NB; j >= 0; j -= NB) {
    int code = 0;
    const char *err = ocu_getri_block(h, L11, n, w, j, ooc_min64(NB, w - j), x->dWork, &code);
    if (err) return OOC_FAIL(x->ctx, OOC_ERR_DEVICE, "getri: %s failed (status %d)", err, code);
    for (; next >= 0 && next * cw >= j; next--) OOC_TRY(writeback_chunk(x, panel, next));
  }
  sp_end(x, sp, c0);
  for (; next >= 0; next--) OOC_TRY(writeback_chunk(x, panel, next)); /* (none left: j reaches 0) */
  CU(x, cudaMemcpyAsync(x->hInfo, x->dInfo, sizeof(int), cudaMemcpyDeviceToHost, sc));
  if (x->tt.variant == OCU_TRTRI_CUSOLVER) { /* its info says whether inv(U) exists: wait */
    CU(x, cudaStreamSynchronize(sc));
    if (*x->hInfo > 0) *bad = *x->hInfo;
    else if (*x->hInfo < 0)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cusolverDnXtrtri: argument %d invalid", -*x->hInfo);
  }
  /* Otherwise return while the device still works: u_jj != 0 was known from the factor, and
   * gj.c can put the first written-back columns meanwhile. */
  return OOC_OK;
}

static ooc_status_t x_update(gj_exec_t *e, int s, int64_t nc) {
  ocu_t *x = (ocu_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, tc = x->tcount;
  int g = (int)(x->qcount++ % x->G), ic = x->icomp[g];
  cudaStream_t sc = x->st[ic];
  cublasHandle_t h = x->bl[g];
  double *C = x->dC[s], *R = x->dG[g];
  double one = 1.0, mone = -1.0;
  const double *L11 = x->dP + k0;
  int64_t bytes = 8 * n * nc;

  int64_t sp = sp_begin(x, x->ih2d, "h2d col", bytes);
  CU(x, cudaMemcpyAsync(C, e->slot[s], (size_t)bytes, cudaMemcpyHostToDevice, x->st[x->ih2d]));
  sp_end(x, sp, x->ih2d);
  CU(x, cudaEventRecord(x->ev_h2d[s], x->st[x->ih2d]));
  CU(x, cudaStreamWaitEvent(sc, x->ev_h2d[s], 0));
  CU(x, cudaStreamWaitEvent(sc, x->ev_tdone, 0)); /* the factor and its tables */
  x->bytes_h2d += bytes;

  sp = sp_begin(x, ic, "swap", 0);
  CU(x, ocu_gather_rows(C, n, x->dSrc, tc, nc, R, tc, sc));
  CU(x, ocu_scatter_rows(R, tc, x->dRows, w, tc, nc, C, n, sc));
  sp_end(x, sp, ic);
  /* gj.h step 4 from the factored panel [A_up; L11\U11; L21], R (the pivot rows, rows [0, w)
   * of the gather buffer) in place: Z = L11^-1 R, C_low -= L21 Z, K = U11^-1 Z, C_k = K,
   * C_up -= A_up K. Not one GEMM with the transform column [N_up; P; N_low]: its explicit
   * inverse P of a wide, ill-conditioned pivot block cost kappa(A11) in accuracy (NUMERICS.md,
   * "Gauss-Jordan on wide stripes"). The same flops; 2 w^2 nc of them in trsm. */
  sp = sp_begin(x, ic, "gemm", 0);
  CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT,
                       w, nc, &one, L11, n, R, tc));
  if (n - k0 - w > 0)
    CB(x, cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, n - k0 - w, nc, w, &mone, L11 + w, n, R, tc,
                         &one, C + k0 + w, n));
  CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                       CUBLAS_DIAG_NON_UNIT, w, nc, &one, L11, n, R, tc));
  CU(x, cudaMemcpy2DAsync(C + k0, (size_t)(8 * n), R, (size_t)(8 * tc), (size_t)(8 * w),
                          (size_t)nc, cudaMemcpyDeviceToDevice, sc));
  if (k0 > 0)
    CB(x, cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, k0, nc, w, &mone, x->dP, n, R, tc, &one, C,
                         n));
  sp_end(x, sp, ic);
  CU(x, cudaEventRecord(x->ev_comp[s], sc));

  CU(x, cudaStreamWaitEvent(x->st[x->id2h], x->ev_comp[s], 0));
  sp = sp_begin(x, x->id2h, "d2h col", bytes);
  CU(x, cudaMemcpyAsync(e->slot[s], C, (size_t)bytes, cudaMemcpyDeviceToHost, x->st[x->id2h]));
  sp_end(x, sp, x->id2h);
  CU(x, cudaEventRecord(x->ev_done[s], x->st[x->id2h]));
  x->bytes_d2h += bytes;
  x->busy[s] = 1;
  return OOC_OK;
}

static ooc_status_t x_complete(gj_exec_t *e, int s) {
  ocu_t *x = (ocu_t *)e;
  if (!x->busy[s]) return OOC_OK;
  x->busy[s] = 0;
  CU(x, cudaEventSynchronize(x->ev_done[s]));
  return OOC_OK;
}

ooc_status_t ocu_exec_destroy(gj_exec_t *e) {
  if (!e) return OOC_OK;
  ocu_t *x = (ocu_t *)e;
  (void)lu_join(x, 1);
  ooc_status_t st = ocu_rt_fini(&x->rt); /* waits for the device first */
  free(x->hSolWs);
  ooc_free(x->ctx, x->ops);
  if (x->lu_mu_on) {
    pthread_mutex_destroy(&x->lu_mu);
    pthread_cond_destroy(&x->lu_cv);
  }
  ooc_free(x->ctx, x);
  return st;
}

/* Load cuSOLVER's getrf and trtri now (lazy module loading): the first leaf getrf of a run was
 * measured at 99 ms instead of 4. A panel-shaped getrf on [I; 0] in the panel buffer (whatever
 * is there is overwritten by the first panel). */
static ooc_status_t warm_up(ocu_t *x) {
  int64_t n = x->n, lw = ooc_min64(OCU_GETRF_LEAF, x->W),
          tw = ooc_min64(x->tt.leaf > 0 ? x->tt.leaf : OCU_TRTRI_LEAF, x->W);
  cudaStream_t sc = x->st[x->icomp[0]];
  double *ones = malloc((size_t)lw * sizeof *ones);
  if (!ones) return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "out of host memory (warm-up)");
  for (int64_t i = 0; i < lw; i++) ones[i] = 1.0;
  cudaError_t e = cudaMemsetAsync(x->dP, 0, (size_t)(8 * n * lw), sc);
  if (e == cudaSuccess)
    e = cudaMemcpy2DAsync(x->dP, (size_t)(8 * (n + 1)), ones, sizeof(double), sizeof(double),
                          (size_t)lw, cudaMemcpyHostToDevice, sc);
  if (e == cudaSuccess) e = cudaStreamSynchronize(sc);
  free(ones);
  CU(x, e);
  size_t d = 0, hb = 0;
  CS(x, cusolverDnXgetrf_bufferSize(x->sol, x->par, n, lw, CUDA_R_64F, x->dP, n, CUDA_R_64F, &d,
                                    &hb));
  if (d <= x->solWs && hb <= x->hSolWsBytes)
    CS(x, cusolverDnXgetrf(x->sol, x->par, n, lw, CUDA_R_64F, x->dP, n, x->dIpiv, CUDA_R_64F,
                           x->dSolWs, x->solWs, x->hSolWs, x->hSolWsBytes, x->dInfo));
  CS(x, cusolverDnXtrtri_bufferSize(x->sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, tw,
                                    CUDA_R_64F, x->dP, n, &d, &hb));
  if (d <= x->solWs && hb <= x->hSolWsBytes)
    CS(x, cusolverDnXtrtri(x->sol, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, tw, CUDA_R_64F,
                           x->dP, n, x->dSolWs, x->solWs, x->hSolWs, x->hSolWsBytes, x->dInfo));
  CU(x, cudaStreamSynchronize(sc));
  return OOC_OK;
}

/* The trace's name for stream s. */
static const char *role(const ocu_t *x, int s) {
  int h = s == x->ih2d, d = s == x->id2h, c = s == x->icomp[0] || (s > x->ih2d && s < x->id2h);
  return h && d ? (c ? "copies + compute" : "copies") : h ? "H2D" : d ? "D2H" : "compute";
}

static ooc_status_t create(ocu_t *x, const ocu_config_t *cfg) {
  int64_t n = x->n, b = x->b, W = x->W;
  ocu_rt_t *rt = &x->rt;
  OOC_TRY(ocu_rt_open(rt));
  x->S = cfg_streams(cfg);
  x->G = ncompute_for(x->S);
  if (x->S == 1) {
    x->ih2d = x->id2h = 0;
    x->icomp[0] = 0;
  } else if (x->S == 2) {
    x->ih2d = x->id2h = 0;
    x->icomp[0] = 1;
  } else {
    x->ih2d = 0;
    x->id2h = x->S - 1;
    for (int g = 0; g < x->G; g++) x->icomp[g] = 1 + g;
  }
  CU(x, ocu_preload());
  for (int s = 0; s < x->S; s++) OOC_TRY(ocu_rt_stream(rt, &x->st[s], role(x, s)));
  OOC_TRY(ocu_rt_solver(rt, x->st[x->icomp[0]]));
  x->sol = rt->sol;
  x->par = rt->par;
  sol_ws(x->sol, x->par, n, W, &x->solWs, &x->hSolWsBytes);
  for (int g = 0; g < x->G; g++)
    OOC_TRY(ocu_rt_blas(rt, &x->bl[g], x->st[x->icomp[g]], ocu_rt_cublas_ws(rt->budget)));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dP, 8 * n * W, "the panel"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dWork, 8 * W * ooc_min64(W, NB), "getri's work"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dIpiv, 8 * W, "pivots"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dRows, 8 * 2 * W, "interchanges"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dSrc, 8 * 2 * W, "interchanges"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dInfo, 8, "info"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dSolWs, (int64_t)x->solWs, "cuSOLVER workspace"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dLuDst, 8 * lu_table_entries(W), "the panel LU's interchanges"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dLuSrc, 8 * lu_table_entries(W), "the panel LU's interchanges"));
  OOC_TRY(ocu_exec_set_leaf(&x->e, OCU_GETRF_LEAF));
  if (x->hSolWsBytes && !(x->hSolWs = malloc(x->hSolWsBytes)))
    return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "out of host memory (cuSOLVER host workspace)");
  OOC_TRY(ocu_rt_halloc(rt, &x->e.panel, 8 * n * W, "the panel"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hIpiv, 8 * W, "pivots"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hDiag, 8 * W, "pivots"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hRows, 8 * 2 * W, "interchanges"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hSrc, 8 * 2 * W, "interchanges"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hInfo, 64, "info"));
  OOC_TRY(ocu_rt_halloc(rt, &x->cont, 8 * n, "interchanges"));
  OOC_TRY(ocu_rt_halloc(rt, &x->mark, n, "interchanges"));
  for (int64_t i = 0; i < n; i++) x->cont[i] = i;
  memset(x->mark, 0, (size_t)n);
  x->e.nslots = x->sweeps ? nslots_for(x->S) : 1;
  if (x->sweeps) {
    for (int g = 0; g < x->G; g++)
      OOC_TRY(ocu_rt_dalloc(rt, &x->dG[g], 8 * 2 * W * b, "row gather"));
    for (int s = 0; s < x->e.nslots; s++) {
      OOC_TRY(ocu_rt_dalloc(rt, &x->dC[s], 8 * n * b, "a column block"));
      OOC_TRY(ocu_rt_halloc(rt, &x->e.slot[s], 8 * n * b, "a column block"));
    }
  }
  OOC_TRY(warm_up(x));
  unsigned nt = cudaEventDisableTiming;
  OOC_TRY(ocu_rt_events(rt, x->ev_h2d, GJ_MAX_SLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_comp, GJ_MAX_SLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_done, GJ_MAX_SLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, &x->ev_panel, 1, nt));
  OOC_TRY(ocu_rt_events(rt, &x->ev_tdone, 1, nt));
  OOC_TRY(ocu_rt_events(rt, &x->ev_top, 1, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_pin, NPIN, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_pout, MAXCH, nt | cudaEventBlockingSync));
  return ocu_rt_clock(rt);
}

ooc_status_t ocu_exec_create(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t W, int64_t m,
                             const ocu_config_t *cfg, gj_exec_t **out) {
  *out = NULL;
  ocu_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory");
  x->ctx = ctx;
  x->n = n;
  x->b = ooc_min64(b, n);
  x->W = ooc_min64(W, n);
  x->m = m;
  x->sweeps = x->W < n || m > 0;
  x->e.name = "cuda";
  x->e.factor = x_factor;
  x->e.transform = x_transform;
  x->e.update = x_update;
  x->e.complete = x_complete;
  x->e.host_span = host_span;
  x->e.panel_in = x_panel_in;
  x->e.panel_out = x_panel_out;
  const char *tspec = cfg && cfg->trtri ? cfg->trtri : OCU_TRTRI_DEFAULT;
  if (ocu_trtri_parse(tspec, &x->tt)) {
    ooc_free(ctx, x);
    return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown trtri variant '%s' (ocu_trtri.h)", tspec);
  }
  if (cfg && cfg->trtri_cusolver) x->tt.variant = OCU_TRTRI_CUSOLVER;
  ooc_status_t st = ocu_rt_init(&x->rt, ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, cfg ? cfg->trace : NULL,
                                cfg && cfg->timing, "oocsolve gj (cuda)");
  if (st == OOC_OK && pthread_mutex_init(&x->lu_mu, NULL) == 0) {
    if (pthread_cond_init(&x->lu_cv, NULL) == 0) x->lu_mu_on = 1;
    else pthread_mutex_destroy(&x->lu_mu);
  }
  if (st == OOC_OK && !x->lu_mu_on)
    st = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "cannot initialise the executor's mutexes");
  if (st == OOC_OK) st = create(x, cfg);
  if (st == OOC_OK) *out = &x->e;
  else ocu_exec_destroy(&x->e);
  return st;
}
