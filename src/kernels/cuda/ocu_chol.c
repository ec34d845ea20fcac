/* ocu_chol.c: the CUDA Cholesky executor (see ocu_chol.h for what it does, solvers/chol.h for
 * the algorithms and the chol_exec_t contract it serves). */
#include "kernels/cuda/ocu_chol.h"
#include "kernels/cuda/ocu_rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ocu_chol_kernels.cu: columns [j0, j1) of A above the diagonal := S's lower triangle
 * transposed (full) or zero; S may be A */
cudaError_t ocu_chol_upper(double *A, int64_t lda, const double *S, int64_t lds, int64_t j0,
                           int64_t j1, int full, cudaStream_t s);

#define NB_DEFAULT 1024 /* the in-device sweep's block; n = 32768 on an H100 (bench_cuda_chol incore):
                          * 512 0.94 s, 768 0.89, 1024 0.90, 1536 0.92, 2048 0.97, 4096 1.07: K = 1024
                          * GEMMs run near the DGEMM peak already, larger blocks waste more on the
                          * diagonal blocks and in the panel's trsm */
#define NSLOTS 4        /* ring of column blocks: one being copied in, one multiplied, one out */
#define ALIGN(x) OCU_RT_ROUND(x)

/* span kinds (ocu_rt.h): copies, the streamed updates, the pivot work */
enum { K_COPY = OCU_SPAN_COPY, K_UPDATE = OCU_SPAN_KERNEL + 1, K_PIVOT };

typedef struct xc {
  chol_exec_t e;
  ooc_ctx_t *ctx;
  ocu_rt_t rt; /* pool, pinned buffers, streams, events, handles, trace */
  int64_t n, b, W, nb;
  int job, sweeps;
  cudaStream_t st[3]; /* 0 H2D, 1 compute, 2 D2H */
  cublasHandle_t bl, blc[2]; /* on the compute stream; on the H2D and D2H streams (transposes) */
  /* device */
  double *dP, *dV, *dE, *dC[NSLOTS], *dDiag;
  int *dInfo;
  int64_t ninfo;
  void *dWs, *hWs;
  size_t ws, hws;
  int64_t potri_lwork; /* doubles, inside dWs */
  /* pinned host */
  int *hInfo;
  double *hDiag;
  cudaEvent_t ev_load, ev_h2d[NSLOTS], ev_comp[NSLOTS], ev_done[NSLOTS];
  cudaEvent_t *ev_blk; /* per tile column block of the stripe: x_store has finished it */
  int64_t nblk;
  int busy[NSLOTS];
  /* the step */
  int64_t k0, w, r0;
  int pjob, incore;
  int begun;     /* x_pivot_begin ran; x_vready has done columns [0, ready) */
  int64_t ready;
  int64_t bytes_h2d, bytes_d2h;
  double fl_update, fl_pivot;
} xc_t;

#define H2D cudaMemcpyHostToDevice
#define D2H cudaMemcpyDeviceToHost
#define D2D cudaMemcpyDeviceToDevice

/* ---- sizes and planning --------------------------------------------------------------------- */

/* The copy streams' handles run only geam (transposes): a token workspace, so that cuBLAS
 * allocates none of its own outside the pool. */
static int64_t copy_ws(int64_t budget) {
  return ooc_min64((int64_t)1 << 20, ooc_max64(4096, budget / 256)) / 256 * 256;
}

static int64_t eff_nb(int64_t nb, int64_t W) { return ooc_max64(1, ooc_min64(nb > 0 ? nb : NB_DEFAULT, W)); }
static int needs_sweep(int job) { return job == CHOL_INVERT; }

/* cuSOLVER workspace (device bytes, host bytes, potri's lwork in doubles) for a stripe W: potrf
 * of W x W with ld n, and the sweep's potrf + potri of nb x nb with ld W. */
static void sol_ws(cusolverDnHandle_t h, cusolverDnParams_t par, int64_t n, int64_t W, int64_t nb,
                   int job, size_t *dev, size_t *host, int64_t *lwork) {
  size_t d1 = 0, h1 = 0, d2 = 0, h2 = 0;
  int lw = 0;
  if (cusolverDnXpotrf_bufferSize(h, par, CUBLAS_FILL_MODE_LOWER, W, CUDA_R_64F, NULL, n,
                                  CUDA_R_64F, &d1, &h1) != CUSOLVER_STATUS_SUCCESS)
    d1 = (size_t)(8 * W * 256);
  if (needs_sweep(job)) {
    if (cusolverDnXpotrf_bufferSize(h, par, CUBLAS_FILL_MODE_LOWER, nb, CUDA_R_64F, NULL, W,
                                    CUDA_R_64F, &d2, &h2) != CUSOLVER_STATUS_SUCCESS)
      d2 = (size_t)(8 * nb * 256);
    if (cusolverDnDpotri_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)nb, NULL, (int)W, &lw) !=
        CUSOLVER_STATUS_SUCCESS)
      lw = (int)(nb * 256);
  }
  size_t d3 = (size_t)lw * 8;
  *dev = d1 > d2 ? d1 : d2;
  if (d3 > *dev) *dev = d3;
  *host = h1 > h2 ? h1 : h2;
  *lwork = lw;
}

static int64_t dev_bytes(int64_t n, int64_t b, int64_t W, int job, int64_t nb, size_t ws,
                         int64_t budget) {
  int sweeps = W < n;
  int64_t t = ALIGN(8 * n * W) + ALIGN(8 * W) + ALIGN(4 * (2 * ooc_cdiv64(W, nb) + 8)) +
              ALIGN((int64_t)ws) + ocu_rt_cublas_ws(budget) + 2 * copy_ws(budget);
  if (needs_sweep(job)) {
    t += ALIGN(8 * W * nb);
    if (sweeps) t += ALIGN(8 * W * W);
  }
  if (sweeps) t += NSLOTS * ALIGN(8 * n * ooc_min64(b, n));
  return t;
}

/* The sweep out of core (invert, W < n) moves V through the slots: no host panel. */
static int host_panel(int64_t n, int64_t W, int job) { return W >= n || !needs_sweep(job); }

int64_t ocu_chol_host_bytes(int64_t n, int64_t b, int64_t W, int job, const ocu_config_t *cfg) {
  (void)cfg;
  W = ooc_min64(W, n);
  int64_t slots = W < n ? NSLOTS * 8 * n * ooc_min64(b, n) : 0;
  return (host_panel(n, W, job) ? 8 * n * W : 0) + slots + 8 * W + 4 * (2 * W + 8) + 4096;
}

/* The block for stripe W: the requested (or default) one; in core, halved down to 512 while
 * that is what keeps W = n within the budget. *bytes: the device bytes with it. */
static int64_t pick_nb(cusolverDnHandle_t h, cusolverDnParams_t par, int64_t n, int64_t b,
                       int64_t W, int job, int64_t nb_req, int64_t budget, int64_t *bytes) {
  int64_t nb = eff_nb(nb_req, W);
  for (;;) {
    size_t d = 0, hh = 0;
    int64_t lw = 0;
    sol_ws(h, par, n, W, nb, job, &d, &hh, &lw);
    *bytes = dev_bytes(n, b, W, job, nb, d, budget);
    if (*bytes <= budget || W < n || !needs_sweep(job) || nb <= 512 || nb_req > 0) return nb;
    nb /= 2;
  }
}

static int64_t plan_bytes(const ocu_rt_shape_t *a, int64_t W, cusolverDnHandle_t h,
                          cusolverDnParams_t par) {
  int64_t bytes = 0;
  pick_nb(h, par, a->n, a->b, W, a->job, a->nb, a->budget, &bytes);
  return bytes;
}

ooc_status_t ocu_chol_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int job, int64_t nb,
                           const ocu_config_t *cfg, int64_t *W, int64_t *budget) {
  ocu_rt_shape_t a = {.n = n, .b = b, .nb = nb, .job = job};
  return ocu_rt_widest(ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, &a, plan_bytes,
                       "the Cholesky of ", NSLOTS, W, budget);
}

/* ---- timing (ocu_rt.h's spans; the flops are counted with or without timing) ---------------- */

static int64_t sp_begin(xc_t *x, int s, int kind, const char *name, int64_t bytes, double flops) {
  if (kind == K_UPDATE) x->fl_update += flops;
  else if (kind == K_PIVOT) x->fl_pivot += flops;
  return ocu_rt_span(&x->rt, s, kind, name, bytes, flops);
}

static void sp_end(xc_t *x, int64_t i, int s) { ocu_rt_span_end(&x->rt, i, s); }

void ocu_chol_stats(chol_exec_t *e, ocu_chol_stats_t *s) {
  xc_t *x = (xc_t *)e;
  ocu_rt_times_t t;
  memset(s, 0, sizeof *s);
  memcpy(s->device, x->rt.device, sizeof s->device);
  s->W = x->W;
  s->nb = x->nb;
  s->dev_budget = x->rt.budget;
  s->dev_peak = x->rt.peak;
  s->pinned_bytes = x->rt.pinned;
  s->bytes_h2d = x->bytes_h2d;
  s->bytes_d2h = x->bytes_d2h;
  s->nslots = x->e.nslots;
  s->flops_update = x->fl_update;
  s->flops_pivot = x->fl_pivot;
  ocu_rt_times(&x->rt, &t);
  s->t_copy = t.copy;
  s->t_kernel = t.kernel;
  s->t_overlap = t.overlap;
  s->t_span = t.span;
  s->t_update = ocu_rt_sum(&x->rt, NULL, K_UPDATE);
  s->t_pivot = ocu_rt_sum(&x->rt, NULL, K_PIVOT);
}

/* ---- the in-device sweep -------------------------------------------------------------------- */

/* F (w x w, lower triangle, ld ldf) := F^-1 by chol.h's symmetric sweep with blocks of nb, all on
 * the compute stream; dDiag[0:w) gets L's diagonal (the pivot blocks' Cholesky factors are the
 * diagonal blocks of A's). The strict upper triangle of F is neither read nor kept. With V the
 * w x nb panel (ld w) and, for the pivot block P = [i0, i1): V = F[:, P] (rows above P from row
 * block P, transposed); D = V[P] = L L^T; V_K = W_K = V_K L^-T, V_T = Z_T = -V_T L^-T (the sign
 * makes every update one GEMM with alpha = +1 left of P, -1 right of it, see chol.h); the other
 * column blocks j get F[j0:w, j] += alpha V[j0:w] V[j]^T; then V_K = -W_K L^-1, V_T = W_T L^-1,
 * D = D^-1, and V is written back. Block s's potrf and potri infos go to dInfo[s] and
 * dInfo[ns + s] (ns = the block count); sweep_result reads them. Nothing here waits for the
 * device: the host goes on queueing (V's moves, chol.h's split pivot), and a failed block only
 * makes the later ones compute garbage that sweep_result never reports. */
static ooc_status_t dev_sweep(xc_t *x, double *F, int64_t ldf, int64_t w) {
  cudaStream_t sc = x->st[1];
  cublasHandle_t h = x->bl;
  int64_t nb = ooc_min64(x->nb, w), ns = ooc_cdiv64(w, nb);
  double one = 1.0, mone = -1.0, zero = 0.0;
  double *V = x->dV;
  if (2 * ns + 1 > x->ninfo) return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "sweep: too few info slots");
  for (int64_t s = 0; s < ns; s++) {
    int64_t i0 = s * nb, ib = ooc_min64(nb, w - i0), i1 = i0 + ib, below = w - i1;
    double *D = V + i0;
    double fl = (double)w * w * ib;
    int64_t sp = sp_begin(x, 1, K_PIVOT, "sweep block", 0, fl);
    CU(x, cudaMemcpy2DAsync(V + i0, (size_t)(8 * w), F + i0 + i0 * ldf, (size_t)(8 * ldf),
                            (size_t)(8 * (w - i0)), (size_t)ib, D2D, sc));
    if (i0 > 0) /* V[0:i0] = F[P, 0:i0]^T (B = A with beta 0: nothing uninitialised is read) */
      CB(x, cublasDgeam_64(h, CUBLAS_OP_T, CUBLAS_OP_T, i0, ib, &one, F + i0, ldf, &zero, F + i0,
                           ldf, V, w));
    CS(x, cusolverDnXpotrf(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, ib, CUDA_R_64F, D, w,
                           CUDA_R_64F, x->dWs, x->ws, x->hWs, x->hws, x->dInfo + s));
    CU(x, cudaMemcpy2DAsync(x->dDiag + i0, sizeof(double), D, (size_t)(8 * (w + 1)),
                            sizeof(double), (size_t)ib, D2D, sc));
    if (i0 > 0)
      CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                           CUBLAS_DIAG_NON_UNIT, i0, ib, &one, D, w, V, w));
    if (below > 0)
      CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                           CUBLAS_DIAG_NON_UNIT, below, ib, &mone, D, w, V + i1, w));
    for (int64_t j = 0; j < ns; j++) {
      if (j == s) continue;
      int64_t j0 = j * nb, jb = ooc_min64(nb, w - j0);
      /* rows [j0, w): for j left of P this includes rows P, whose result is overwritten below */
      CB(x, cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_T, w - j0, jb, ib, j < s ? &one : &mone,
                           V + j0, w, V + j0, w, &one, F + j0 + j0 * ldf, ldf));
    }
    if (i0 > 0)
      CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                           CUBLAS_DIAG_NON_UNIT, i0, ib, &mone, D, w, V, w));
    if (below > 0)
      CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                           CUBLAS_DIAG_NON_UNIT, below, ib, &mone, D, w, V + i1, w));
    CS(x, cusolverDnDpotri(x->rt.sol, CUBLAS_FILL_MODE_LOWER, (int)ib, D, (int)w, (double *)x->dWs,
                           (int)x->potri_lwork, x->dInfo + ns + s));
    CU(x, cudaMemcpy2DAsync(F + i0 + i0 * ldf, (size_t)(8 * ldf), V + i0, (size_t)(8 * w),
                            (size_t)(8 * (w - i0)), (size_t)ib, D2D, sc));
    if (i0 > 0)
      CB(x, cublasDgeam_64(h, CUBLAS_OP_T, CUBLAS_OP_T, ib, i0, &one, V, w, &zero, V, w, F + i0,
                           ldf));
    sp_end(x, sp, 1);
  }
  return OOC_OK;
}

/* Waits for the compute stream and judges dev_sweep's blocks for w (and, with potrf_info, the
 * split pivot's potrf, whose info is dInfo[2 cdiv(W, nb)]): *bad = the 1-based order of the first leading minor that is
 * not positive, 0 if none. */
static ooc_status_t sweep_result(xc_t *x, int64_t w, int potrf_info, int64_t *bad) {
  int64_t nb = ooc_min64(x->nb, w), ns = ooc_cdiv64(w, nb), pi = 2 * ooc_cdiv64(x->W, x->nb);
  int64_t k = potrf_info ? pi + 1 : 2 * ns;
  *bad = 0;
  CU(x, cudaMemcpyAsync(x->hInfo, x->dInfo, (size_t)(4 * k), D2H, x->st[1]));
  CU(x, cudaStreamSynchronize(x->st[1]));
  for (int64_t t = 0; t < k; t++)
    if (x->hInfo[t] < 0)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cuSOLVER: argument %d invalid (info slot %lld)",
                      -x->hInfo[t], (long long)t);
  for (int64_t t = 0; t < ns; t++)
    if (x->hInfo[t] > 0) {
      *bad = t * nb + x->hInfo[t];
      return OOC_OK;
    }
  for (int64_t t = 0; t < ns; t++)
    if (x->hInfo[ns + t] != 0) /* potri after a successful potrf: L_jj = 0 cannot happen */
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cusolverDnDpotri: info %d in block %lld",
                      x->hInfo[ns + t], (long long)t);
  if (potrf_info) *bad = x->hInfo[pi]; /* after a successful sweep only by rounding */
  return OOC_OK;
}

/* ---- the executor --------------------------------------------------------------------------- */

static ooc_status_t x_load(chol_exec_t *e, const double *panel, int64_t k0, int64_t w, int64_t r0) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n;
  if (w > x->W || k0 + w > n || r0 > k0)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: step [%lld, +%lld) from row %lld "
                    "outside the stripe %lld", (long long)k0, (long long)w, (long long)r0,
                    (long long)x->W);
  x->k0 = k0;
  x->w = w;
  x->r0 = r0;
  x->begun = 0;
  if (!panel) return OOC_OK; /* V comes through the slots: x_colload, x_rowload */
  int64_t bytes = 8 * (n - r0) * w;
  int64_t sp = sp_begin(x, 0, K_COPY, "h2d panel", bytes, 0);
  CU(x, cudaMemcpy2DAsync(x->dP + r0, (size_t)(8 * n), panel + r0, (size_t)(8 * n),
                          (size_t)(8 * (n - r0)), (size_t)w, H2D, x->st[0]));
  sp_end(x, sp, 0);
  x->bytes_h2d += bytes;
  CU(x, cudaEventRecord(x->ev_load, x->st[0]));
  CU(x, cudaStreamWaitEvent(x->st[1], x->ev_load, 0));
  return OOC_OK;
}

/* Slot s's rows [a, c) (bj columns) host -> device on the H2D stream. */
static ooc_status_t h2d_rows(xc_t *x, int s, int64_t a, int64_t c, int64_t bj) {
  if (c <= a) return OOC_OK;
  int64_t n = x->n, bytes = 8 * (c - a) * bj;
  int64_t sp = sp_begin(x, 0, K_COPY, "h2d col", bytes, 0);
  CU(x, cudaMemcpy2DAsync(x->dC[s] + a, (size_t)(8 * n), x->e.slot[s] + a, (size_t)(8 * n),
                          (size_t)(8 * (c - a)), (size_t)bj, H2D, x->st[0]));
  sp_end(x, sp, 0);
  x->bytes_h2d += bytes;
  return OOC_OK;
}

static ooc_status_t d2h_rows(xc_t *x, int s, int64_t a, int64_t c, int64_t bj) {
  if (c <= a) return OOC_OK;
  int64_t n = x->n, bytes = 8 * (c - a) * bj;
  int64_t sp = sp_begin(x, 2, K_COPY, "d2h col", bytes, 0);
  CU(x, cudaMemcpy2DAsync(x->e.slot[s] + a, (size_t)(8 * n), x->dC[s] + a, (size_t)(8 * n),
                          (size_t)(8 * (c - a)), (size_t)bj, D2H, x->st[2]));
  sp_end(x, sp, 2);
  x->bytes_d2h += bytes;
  return OOC_OK;
}

static ooc_status_t x_lupdate(chol_exec_t *e, int s, int64_t bj) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, below = n - k0 - w;
  double *C = x->dC[s], mone = -1.0, one = 1.0;
  if (s < 0 || s >= e->nslots || x->busy[s])
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: slot %d not free", s);
  OOC_TRY(h2d_rows(x, s, k0, n, bj));
  CU(x, cudaEventRecord(x->ev_h2d[s], x->st[0]));
  CU(x, cudaStreamWaitEvent(x->st[1], x->ev_h2d[s], 0));
  int64_t sp = sp_begin(x, 1, K_UPDATE, "syrk+gemm", 0,
                        (double)w * w * bj + 2.0 * below * w * bj);
  CB(x, cublasDsyrk_64(x->bl, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, w, bj, &mone, C + k0, n, &one,
                       x->dP + k0, n));
  if (below > 0)
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_T, below, w, bj, &mone, C + k0 + w, n,
                         C + k0, n, &one, x->dP + k0 + w, n));
  sp_end(x, sp, 1);
  CU(x, cudaEventRecord(x->ev_done[s], x->st[1]));
  x->busy[s] = 1;
  return OOC_OK;
}

static ooc_status_t x_supdate(chol_exec_t *e, int s, int64_t r0, int64_t bj) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w;
  double *C = x->dC[s], one = 1.0, mone = -1.0;
  if (s < 0 || s >= e->nslots || x->busy[s] || x->pjob != CHOL_INVERT)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: slot %d not free or no sweep", s);
  int left = r0 < k0; /* a column of K (else of T) */
  if (left) { /* rows of the stripe are neither copied nor updated */
    OOC_TRY(h2d_rows(x, s, r0, k0, bj));
    OOC_TRY(h2d_rows(x, s, k1, n, bj));
  } else {
    OOC_TRY(h2d_rows(x, s, r0, n, bj));
  }
  CU(x, cudaEventRecord(x->ev_h2d[s], x->st[0]));
  CU(x, cudaStreamWaitEvent(x->st[1], x->ev_h2d[s], 0));
  /* the device panel holds W_K above the stripe and Z_T = -W_T below it (dev_sweep's signs) */
  const double *al = left ? &one : &mone, *Zj = x->dP + r0;
  int64_t m1 = left ? k0 - r0 - bj : n - r0 - bj, m2 = left ? n - k1 : 0;
  int64_t sp = sp_begin(x, 1, K_UPDATE, "syrk+gemm", 0,
                        (double)bj * bj * w + 2.0 * (m1 + m2) * bj * w);
  CB(x, cublasDsyrk_64(x->bl, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, bj, w, al, Zj, n, &one, C + r0,
                       n));
  if (m1 > 0)
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_T, m1, bj, w, al, Zj + bj, n, Zj, n, &one,
                         C + r0 + bj, n));
  if (m2 > 0)
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_T, m2, bj, w, al, x->dP + k1, n, Zj, n,
                         &one, C + k1, n));
  sp_end(x, sp, 1);
  CU(x, cudaEventRecord(x->ev_comp[s], x->st[1]));
  CU(x, cudaStreamWaitEvent(x->st[2], x->ev_comp[s], 0));
  if (left) {
    OOC_TRY(d2h_rows(x, s, r0, k0, bj));
    OOC_TRY(d2h_rows(x, s, k1, n, bj));
  } else {
    OOC_TRY(d2h_rows(x, s, r0, n, bj));
  }
  CU(x, cudaEventRecord(x->ev_done[s], x->st[2]));
  x->busy[s] = 1;
  return OOC_OK;
}

static ooc_status_t x_complete(chol_exec_t *e, int s) {
  xc_t *x = (xc_t *)e;
  if (s < 0 || s >= NSLOTS || !x->busy[s]) return OOC_OK;
  x->busy[s] = 0;
  CU(x, cudaEventSynchronize(x->ev_done[s]));
  return OOC_OK;
}

/* L's diagonal (dDiag[0:w)) to the host: 2 sum log L_jj. */
static ooc_status_t logdet_of(xc_t *x, int64_t w, double *logdet) {
  CU(x, cudaMemcpyAsync(x->hDiag, x->dDiag, (size_t)(8 * w), D2H, x->st[1]));
  CU(x, cudaStreamSynchronize(x->st[1]));
  double s = 0.0;
  for (int64_t j = 0; j < w; j++) s += log(x->hDiag[j]);
  *logdet = 2.0 * s;
  return OOC_OK;
}

/* D (w x w, ld n) = L L^T on the compute stream, info to *info (device); the workspace is the
 * one planned for the widest stripe. */
static ooc_status_t potrf_d(xc_t *x, double *D, int64_t w, int *info) {
  size_t d = 0, hh = 0;
  CS(x, cusolverDnXpotrf_bufferSize(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, w, CUDA_R_64F, D,
                                    x->n, CUDA_R_64F, &d, &hh));
  if (d > x->ws || hh > x->hws)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cuSOLVER potrf wants %zu+%zu bytes of workspace, "
                    "%zu+%zu planned", d, hh, x->ws, x->hws);
  CS(x, cusolverDnXpotrf(x->rt.sol, x->rt.par, CUBLAS_FILL_MODE_LOWER, w, CUDA_R_64F, D, x->n,
                         CUDA_R_64F, x->dWs, x->ws, x->hWs, x->hws, info));
  return OOC_OK;
}

/* Rows [r0, r0 + m) of the panel's column block [c0, c0 + bj) := sgn V L^-T, the blocks left
 * of c0 done (X L^T = sgn V by column blocks: V_J := sgn V_J - X_<J L_J,<J^T, then the diagonal
 * block's trsm). The pivot's trsm of W = V L^-T (and Z_T = -W_T) in the pieces x_vready runs as
 * V's column blocks arrive. */
static ooc_status_t fwd_block(xc_t *x, int64_t r0, int64_t m, int64_t c0, int64_t bj, double sgn) {
  int64_t n = x->n;
  double *D = x->dP + x->k0, *V = x->dP + r0 + c0 * n, mone = -1.0, one = 1.0;
  if (m <= 0) return OOC_OK;
  if (c0 > 0)
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_T, m, bj, c0, &mone, x->dP + r0, n, D + c0,
                         n, &sgn, V, n));
  CB(x, cublasDtrsm_64(x->bl, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                       CUBLAS_DIAG_NON_UNIT, m, bj, c0 > 0 ? &one : &sgn, D + c0 + c0 * n, n, V, n));
  return OOC_OK;
}

/* The split pivot's first half (chol.h; invert out of core): D is on the device (or queued
 * ahead), the rest of V is not. D^-1 by the in-device sweep on the copy dE (minor, logdet) and
 * D = L L^T for the trsm; nothing waits for the device. */
static ooc_status_t x_pivot_begin(chol_exec_t *e, int job) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, w = x->w, nsw = ooc_cdiv64(x->W, x->nb);
  double *D = x->dP + x->k0;
  if (job != CHOL_INVERT || !needs_sweep(x->job) || x->begun || (x->k0 == 0 && w == n))
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: split pivot for job %d", job);
  x->pjob = job;
  x->incore = 0;
  CU(x, cudaMemcpy2DAsync(x->dE, (size_t)(8 * x->W), D, (size_t)(8 * n), (size_t)(8 * w),
                          (size_t)w, D2D, x->st[1]));
  OOC_TRY(dev_sweep(x, x->dE, x->W, w));
  int64_t sp = sp_begin(x, 1, K_PIVOT, "potrf", 0, (double)w * w * w / 3);
  OOC_TRY(potrf_d(x, D, w, x->dInfo + 2 * nsw));
  sp_end(x, sp, 1);
  x->begun = 1;
  x->ready = 0;
  return OOC_OK;
}

/* V's columns [c0, c0 + bj) are all queued in: their trsm (W_K = V_K L^-T, Z_T = -V_T L^-T). */
static ooc_status_t x_vready(chol_exec_t *e, int64_t c0, int64_t bj) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, k0 = x->k0, k1 = k0 + x->w;
  if (!x->begun || c0 != x->ready || bj < 1 || c0 + bj > x->w)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: V's columns [%lld, +%lld) ready "
                    "out of order (%lld done)", (long long)c0, (long long)bj, (long long)x->ready);
  int64_t sp = sp_begin(x, 1, K_PIVOT, "trsm block", 0, (double)(n - x->w) * bj * (2 * c0 + bj));
  OOC_TRY(fwd_block(x, 0, k0, c0, bj, 1.0));
  OOC_TRY(fwd_block(x, k1, n - k1, c0, bj, -1.0));
  sp_end(x, sp, 1);
  x->ready = c0 + bj;
  return OOC_OK;
}

static ooc_status_t x_pivot(chol_exec_t *e, int job, int64_t *bad, double *logdet) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w, below = n - k1;
  cudaStream_t sc = x->st[1];
  cublasHandle_t h = x->bl;
  double one = 1.0, *D = x->dP + k0;
  *bad = 0;
  *logdet = 0.0;
  for (int s = 0; s < NSLOTS; s++)
    if (x->busy[s]) return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: pivot with slot %d busy", s);
  if (job == CHOL_INVERT && !needs_sweep(x->job))
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor created without the sweep's buffers");
  x->pjob = job;
  x->incore = job == CHOL_INVERT && k0 == 0 && w == n;
  if (x->incore) { /* the whole inverse, in place */
    OOC_TRY(dev_sweep(x, x->dP, n, n));
    OOC_TRY(sweep_result(x, n, 0, bad));
    if (*bad) return OOC_OK;
    return logdet_of(x, w, logdet);
  }
  if (job == CHOL_INVERT) { /* the split pivot, whole if chol.c did not split it */
    if (!x->begun) {
      OOC_TRY(x_pivot_begin(e, job));
      OOC_TRY(x_vready(e, 0, w));
    }
    x->begun = 0;
    if (x->ready != w)
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: pivot with V's columns [%lld, %lld) "
                      "not ready", (long long)x->ready, (long long)w);
    OOC_TRY(sweep_result(x, w, 1, bad));
    if (*bad) return OOC_OK;
    return logdet_of(x, w, logdet);
  }
  int64_t sp = sp_begin(x, 1, K_PIVOT, "potrf+trsm", 0, (double)w * w * w / 3 + (double)w * w * below);
  OOC_TRY(potrf_d(x, D, w, x->dInfo));
  if (below > 0)
    CB(x, cublasDtrsm_64(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                         CUBLAS_DIAG_NON_UNIT, below, w, &one, D, n, x->dP + k1, n));
  CU(x, cudaMemcpy2DAsync(x->dDiag, sizeof(double), D, (size_t)(8 * (n + 1)), sizeof(double),
                          (size_t)w, D2D, sc));
  sp_end(x, sp, 1);
  CU(x, cudaMemcpyAsync(x->hInfo, x->dInfo, sizeof(int), D2H, sc));
  CU(x, cudaStreamSynchronize(sc));
  int info = x->hInfo[0];
  if (info < 0) return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "cusolverDnXpotrf: argument %d invalid", -info);
  if (info > 0) {
    *bad = info;
    return OOC_OK;
  }
  return logdet_of(x, w, logdet);
}

/* Rows [r0, r0 + m) of the panel's column block [j0, j0 + bj) := -V L^-1, the blocks right of it
 * done (X L = -V backwards: V_J := -V_J - X_>J L_>J,J, then the diagonal block's trsm): F_KP =
 * -W_K L^-1 and F_TP = W_T L^-1 = -Z_T L^-1, block by block from the last, so that each block's
 * copies out start while the next is computed. */
static ooc_status_t bwd_block(xc_t *x, int64_t r0, int64_t m, int64_t j0, int64_t bj) {
  int64_t n = x->n, w = x->w, j1 = j0 + bj;
  double *D = x->dP + x->k0, *V = x->dP + r0 + j0 * n, mone = -1.0, one = 1.0;
  if (m <= 0) return OOC_OK;
  if (j1 < w)
    CB(x, cublasDgemm_64(x->bl, CUBLAS_OP_N, CUBLAS_OP_N, m, bj, w - j1, &mone,
                         x->dP + r0 + j1 * n, n, D + j1 + j0 * n, n, &mone, V, n));
  CB(x, cublasDtrsm_64(x->bl, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                       CUBLAS_DIAG_NON_UNIT, m, bj, j1 < w ? &one : &mone, D + j0 + j0 * n, n, V, n));
  return OOC_OK;
}

static ooc_status_t x_store(chol_exec_t *e, double *panel, int full) {
  xc_t *x = (xc_t *)e;
  int64_t n = x->n, k0 = x->k0, w = x->w, k1 = k0 + w, r0 = x->r0;
  cudaStream_t sc = x->st[1];
  double *D = x->dP + k0;
  for (int s = 0; s < NSLOTS; s++)
    if (x->busy[s]) return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: store with slot %d busy", s);
  if (x->pjob == CHOL_INVERT && !x->incore) {
    /* F_KP = -W_K L^-1, F_TP = W_T L^-1, F_PP = D^-1 (from dE), by tile column blocks from the
     * last: block J's L is last used by block J itself, so D's block J then takes D^-1's; its
     * event lets V's moves out of block J (x_colstore, x_rowstore) start at once */
    if (x->nblk < ooc_cdiv64(w, x->b))
      return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: store without block events");
    for (int64_t J = ooc_cdiv64(w, x->b) - 1; J >= 0; J--) {
      int64_t j0 = J * x->b, bj = ooc_min64(x->b, w - j0);
      int64_t sp = sp_begin(x, 1, K_PIVOT, "trsm+copy block", 0,
                            (double)(n - w) * bj * (2 * (w - j0 - bj) + bj));
      OOC_TRY(bwd_block(x, 0, k0, j0, bj));
      OOC_TRY(bwd_block(x, k1, n - k1, j0, bj));
      CU(x, cudaMemcpy2DAsync(D + j0 + j0 * n, (size_t)(8 * n), x->dE + j0 + j0 * x->W,
                              (size_t)(8 * x->W), (size_t)(8 * (w - j0)), (size_t)bj, D2D, sc));
      CU(x, ocu_chol_upper(D, n, x->dE, x->W, j0, j0 + bj, full, sc));
      sp_end(x, sp, 1);
      CU(x, cudaEventRecord(x->ev_blk[J], sc));
    }
    if (!panel) return OOC_OK; /* V leaves through the slots: x_colstore, x_rowstore */
  } else {
    CU(x, ocu_chol_upper(D, n, D, n, 0, w, full, sc));
  }
  CU(x, cudaEventRecord(x->ev_load, sc));
  CU(x, cudaStreamWaitEvent(x->st[2], x->ev_load, 0));
  if (!panel) return OOC_OK;
  if (full) r0 = 0; /* the last step of a full inverse: its rows above k0 are upper tiles */
  int64_t bytes = 8 * (n - r0) * w;
  int64_t sp = sp_begin(x, 2, K_COPY, "d2h panel", bytes, 0);
  CU(x, cudaMemcpy2DAsync(panel + r0, (size_t)(8 * n), x->dP + r0, (size_t)(8 * n),
                          (size_t)(8 * (n - r0)), (size_t)w, D2H, x->st[2]));
  sp_end(x, sp, 2);
  x->bytes_d2h += bytes;
  CU(x, cudaStreamSynchronize(x->st[2]));
  return OOC_OK;
}

/* V through slot s (chol.h: colload, colstore, rowload, rowstore). A stripe column block goes
 * straight between the slot and the panel (ld n both); tile row P's bi x k0 block in the slot
 * (ld bi) is the transpose of the panel's rows [0, k0) of columns [c0, c0 + bi), transposed on
 * the device by cublasDgeam through dC[s] on the copy stream itself, so that neither direction
 * queues behind the compute stream's pivot work. Moves out wait for x_store's block event. */
static ooc_status_t v_check(xc_t *x, int s, int64_t c0, int64_t bj) {
  if (s < 0 || s >= x->e.nslots || x->busy[s] || c0 < 0 || bj < 1 || c0 + bj > x->w ||
      !needs_sweep(x->job) || c0 % x->b != 0 || c0 / x->b >= x->nblk)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: V's columns [%lld, +%lld) of a step "
                    "of %lld in slot %d", (long long)c0, (long long)bj, (long long)x->w, s);
  return OOC_OK;
}

/* Stripe columns [c0, c0 + bj), rows [r0, r1): H2D slot -> panel on the copy-in stream (the
 * compute stream waits for it), or D2H panel -> slot on the copy-out stream once x_store has
 * finished the block. */
static ooc_status_t col_move(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t r1,
                             int64_t bj, enum cudaMemcpyKind dir) {
  xc_t *x = (xc_t *)e;
  OOC_TRY(v_check(x, s, c0, bj));
  int in = dir == H2D, q = in ? 0 : 2;
  int64_t n = x->n, bytes = 8 * (r1 - r0) * bj;
  if (r0 < 0 || r1 > n || r1 < r0)
    return OOC_FAIL(x->ctx, OOC_ERR_INTERNAL, "chol executor: rows [%lld, %lld) of V",
                    (long long)r0, (long long)r1);
  double *dev = x->dP + c0 * n + r0, *host = e->slot[s] + r0;
  if (!in) CU(x, cudaStreamWaitEvent(x->st[2], x->ev_blk[c0 / x->b], 0));
  int64_t sp = sp_begin(x, q, K_COPY, in ? "h2d panel" : "d2h panel", bytes, 0);
  if (bytes > 0)
    CU(x, cudaMemcpy2DAsync(in ? dev : host, (size_t)(8 * n), in ? host : dev, (size_t)(8 * n),
                            (size_t)(8 * (r1 - r0)), (size_t)bj, dir, x->st[q]));
  sp_end(x, sp, q);
  *(in ? &x->bytes_h2d : &x->bytes_d2h) += bytes;
  CU(x, cudaEventRecord(x->ev_done[s], x->st[q]));
  if (in) CU(x, cudaStreamWaitEvent(x->st[1], x->ev_done[s], 0));
  x->busy[s] = 1;
  return OOC_OK;
}

/* Tile row P: in, H2D slot -> dC[s], then a transpose of dC[s] into the panel, both on the
 * copy-in stream (the compute stream waits for them); out, after x_store's block, a transpose of
 * the panel into dC[s] and the D2H dC[s] -> slot, both on the copy-out stream. */
static ooc_status_t row_move(chol_exec_t *e, int s, int64_t c0, int64_t bi, int in) {
  xc_t *x = (xc_t *)e;
  OOC_TRY(v_check(x, s, c0, bi));
  int q = in ? 0 : 2;
  int64_t n = x->n, k0 = x->k0, bytes = 8 * bi * k0, sp;
  double one = 1.0, zero = 0.0, *P = x->dP + c0 * n, *T = x->dC[s];
  cublasHandle_t h = x->blc[in ? 0 : 1];
  if (in) {
    sp = sp_begin(x, 0, K_COPY, "h2d row", bytes, 0);
    CU(x, cudaMemcpyAsync(T, e->slot[s], (size_t)bytes, H2D, x->st[0]));
    sp_end(x, sp, 0);
    x->bytes_h2d += bytes;
  } else {
    CU(x, cudaStreamWaitEvent(x->st[2], x->ev_blk[c0 / x->b], 0));
  }
  sp = sp_begin(x, q, K_COPY, "transpose row", 0, 0);
  if (in) CB(x, cublasDgeam_64(h, CUBLAS_OP_T, CUBLAS_OP_N, k0, bi, &one, T, bi, &zero, P, n, P, n));
  else CB(x, cublasDgeam_64(h, CUBLAS_OP_T, CUBLAS_OP_N, bi, k0, &one, P, n, &zero, T, bi, T, bi));
  sp_end(x, sp, q);
  if (!in) {
    sp = sp_begin(x, 2, K_COPY, "d2h row", bytes, 0);
    CU(x, cudaMemcpyAsync(e->slot[s], T, (size_t)bytes, D2H, x->st[2]));
    sp_end(x, sp, 2);
    x->bytes_d2h += bytes;
  }
  CU(x, cudaEventRecord(x->ev_done[s], x->st[q]));
  if (in) CU(x, cudaStreamWaitEvent(x->st[1], x->ev_done[s], 0));
  x->busy[s] = 1;
  return OOC_OK;
}

static ooc_status_t x_colload(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t r1,
                              int64_t bj) {
  return col_move(e, s, c0, r0, r1, bj, H2D);
}
static ooc_status_t x_colstore(chol_exec_t *e, int s, int64_t c0, int64_t r0, int64_t bj) {
  return col_move(e, s, c0, r0, ((xc_t *)e)->n, bj, D2H);
}
static ooc_status_t x_rowload(chol_exec_t *e, int s, int64_t c0, int64_t bi) {
  return row_move(e, s, c0, bi, 1);
}
static ooc_status_t x_rowstore(chol_exec_t *e, int s, int64_t c0, int64_t bi) {
  return row_move(e, s, c0, bi, 0);
}

/* ---- create / destroy ----------------------------------------------------------------------- */

ooc_status_t ocu_chol_destroy(chol_exec_t *e) {
  if (!e) return OOC_OK;
  xc_t *x = (xc_t *)e;
  ooc_status_t st = ocu_rt_fini(&x->rt); /* waits for the device first */
  free(x->ev_blk);
  free(x->hWs);
  ooc_free(x->ctx, x);
  return st;
}

static ooc_status_t create(xc_t *x, int64_t nb_req) {
  int64_t n = x->n, b = x->b, W = x->W;
  ocu_rt_t *rt = &x->rt;
  static const char *role[3] = {"H2D", "compute", "D2H"};
  OOC_TRY(ocu_rt_open(rt));
  for (int s = 0; s < 3; s++) OOC_TRY(ocu_rt_stream(rt, &x->st[s], role[s]));
  OOC_TRY(ocu_rt_solver(rt, x->st[1]));
  int64_t bytes = 0;
  x->nb = pick_nb(x->rt.sol, x->rt.par, n, b, W, x->job, nb_req, rt->budget, &bytes);
  sol_ws(x->rt.sol, x->rt.par, n, W, x->nb, x->job, &x->ws, &x->hws, &x->potri_lwork);
  OOC_TRY(ocu_rt_blas(rt, &x->bl, x->st[1], ocu_rt_cublas_ws(rt->budget)));
  for (int i = 0; i < 2; i++) /* the copy streams' transposes (V's tile row P) */
    OOC_TRY(ocu_rt_blas(rt, &x->blc[i], x->st[2 * i], copy_ws(rt->budget)));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dP, 8 * n * W, "the panel"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dDiag, 8 * W, "the factor's diagonal"));
  x->ninfo = 2 * ooc_cdiv64(W, x->nb) + 8;
  OOC_TRY(ocu_rt_dalloc(rt, &x->dInfo, 4 * x->ninfo, "info"));
  OOC_TRY(ocu_rt_dalloc(rt, &x->dWs, (int64_t)x->ws, "cuSOLVER workspace"));
  if (needs_sweep(x->job)) {
    OOC_TRY(ocu_rt_dalloc(rt, &x->dV, 8 * W * x->nb, "the sweep's panel"));
    if (x->sweeps) OOC_TRY(ocu_rt_dalloc(rt, &x->dE, 8 * W * W, "the pivot block's inverse"));
  }
  if (x->hws && !(x->hWs = malloc(x->hws)))
    return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "out of host memory (cuSOLVER host workspace)");
  if (host_panel(n, W, x->job)) OOC_TRY(ocu_rt_halloc(rt, &x->e.panel, 8 * n * W, "the panel"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hDiag, 8 * W, "the factor's diagonal"));
  OOC_TRY(ocu_rt_halloc(rt, &x->hInfo, 4 * x->ninfo, "info"));
  x->e.nslots = x->sweeps ? NSLOTS : 0;
  for (int s = 0; s < x->e.nslots; s++) {
    OOC_TRY(ocu_rt_dalloc(rt, &x->dC[s], 8 * n * b, "a column block"));
    OOC_TRY(ocu_rt_halloc(rt, &x->e.slot[s], 8 * n * b, "a column block"));
  }
  unsigned nt = cudaEventDisableTiming;
  OOC_TRY(ocu_rt_events(rt, x->ev_h2d, NSLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_comp, NSLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, x->ev_done, NSLOTS, nt));
  OOC_TRY(ocu_rt_events(rt, &x->ev_load, 1, nt));
  if (x->sweeps && needs_sweep(x->job)) { /* x_store's blocks */
    int64_t nblk = ooc_cdiv64(W, b);
    if (!(x->ev_blk = calloc((size_t)nblk, sizeof *x->ev_blk)))
      return OOC_FAIL(x->ctx, OOC_ERR_NOMEM, "out of host memory (%lld events)", (long long)nblk);
    OOC_TRY(ocu_rt_events(rt, x->ev_blk, nblk, nt));
    x->nblk = nblk;
  }
  return ocu_rt_clock(rt);
}

ooc_status_t ocu_chol_create(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t W, int job, int64_t nb,
                             const ocu_config_t *cfg, chol_exec_t **out) {
  *out = NULL;
  if (n <= 0 || b <= 0 || W <= 0 || (job != CHOL_FACTOR && job != CHOL_INVERT && job != CHOL_SOLVE))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "chol executor: n = %lld, tile %lld, stripe %lld, job %d",
                    (long long)n, (long long)b, (long long)W, job);
  xc_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory");
  x->ctx = ctx;
  x->n = n;
  x->b = ooc_min64(b, n);
  /* chol_run's rounding, except that any W >= n is the whole matrix (one step) */
  x->W = W >= n ? n : ooc_max64(x->b, W / x->b * x->b);
  x->job = job;
  x->sweeps = x->W < n;
  x->e.name = "cuda";
  x->e.W = x->W;
  x->e.load = x_load;
  x->e.lupdate = x_lupdate;
  x->e.pivot = x_pivot;
  x->e.supdate = x_supdate;
  x->e.complete = x_complete;
  x->e.store = x_store;
  x->e.colload = x_colload;
  x->e.colstore = x_colstore;
  x->e.rowload = x_rowload;
  x->e.rowstore = x_rowstore;
  if (x->sweeps && needs_sweep(job)) { /* chol.h: the pivot split while V streams in */
    x->e.pivot_begin = x_pivot_begin;
    x->e.vready = x_vready;
  }
  ooc_status_t st = ocu_rt_init(&x->rt, ctx, cfg ? cfg->device : 0, cfg ? cfg->gpu_mem : 0, cfg ? cfg->trace : NULL,
                                cfg && cfg->timing, "oocsolve chol (cuda)");
  if (st == OOC_OK) st = create(x, nb);
  if (st == OOC_OK) *out = &x->e;
  else ocu_chol_destroy(&x->e);
  return st;
}
