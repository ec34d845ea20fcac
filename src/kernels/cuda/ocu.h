/*
 * ocu.h: the CUDA backend (built only when CMake finds a CUDA toolkit: OOC_HAVE_CUDA).
 *
 * What it gives the rest of the library
 * - ocu_probe: is there a usable GPU (the driver answers, one device, memory can be queried)?
 * - ocu_plan: the widest stripe W whose device buffers fit the GPU byte budget.
 * - ocu_exec_create: the Gauss-Jordan executor (see gj.h) that factors each panel on the GPU
 *   (a recursive LU of rows [k0, n) whose bulk is cuBLAS trsm/GEMM, cusolverDnXgetrf only on
 *   leaves of getrf_leaf columns, started while the panel's later tile columns are still being
 *   taken and copied in; cuBLAS trsm; an in-device getri: a recursive trtri plus a blocked
 *   GEMM/trsm sweep, LAPACK's dgetri). The factored panel stays resident while column blocks
 *   stream through a ring of pinned host buffers: H2D on one stream, row interchanges, two trsm
 *   with the pivot block and two GEMMs on the compute stream(s), D2H on another, ordered by
 *   events (block q+1 is copied in while block q is multiplied and block q-1 copied out); then
 *   the panel becomes N_up / P / N_low and goes back to the host.
 *
 * Budgets (the runtime every CUDA executor shares, ocu_rt.h)
 * - Device: every cudaMalloc goes through the runtime's pool, which refuses to pass the byte
 *   budget (--gpu-mem; 0 = free memory minus max(1 GiB, 1/32 of the card)) and asks the fault
 *   seam. The peak is reported.
 *   Counted: panel n*W, the ring's K device blocks n*b, per compute stream a gather buffer 2W*b,
 *   getri's work W*nb, the panel LU's permutation tables 2 x (2W + 2048) int64, cuSOLVER's
 *   workspace (whole panel and leaves) and each cuBLAS handle's workspace. Not counted:
 *   the CUDA context itself and the libraries' own small internal allocations.
 * - Host: every pinned buffer comes from the runtime (ocu_pin.h underneath), which asks the fault
 *   seam and charges the context's host byte count (so pinned bytes count against --host-mem
 *   exactly as ooc_malloc'd ones do).
 * - Trace (cfg.trace): Chrome/Perfetto JSON, one tid per stream plus tid 0 for the host's tile
 *   store takes and puts (which include disk reads and writes), times from cudaEvents.
 */
#ifndef OOC_OCU_H
#define OOC_OCU_H

#include "base/base.h"
#include "solvers/gj.h"

typedef struct ocu_config {
  int64_t gpu_mem; /* device byte budget; 0 = default (free memory minus a margin) */
  int streams;     /* >= 3: one H2D, one D2H, streams-2 compute; 0 = 3 */
  const char *trace; /* NULL or a JSON path */
  int timing;      /* time every copy and kernel with events (implied by trace) */
  int trtri_cusolver; /* 1: cuSOLVER's trtri on the whole triangle in getri (for comparison);
                         0: the recursive trsm/trmm one */
  const char *trtri; /* NULL: the default; else a variant spec for getri's trtri, e.g. "gemm" or
                        "ws:256" (ocu_trtri_parse, ocu_trtri.h; benchmarks A/B them) */
  int device;        /* CUDA device ordinal of the executor (ocu_rt.h: one runtime per device) */
} ocu_config_t;

#define OCU_GETRF_LEAF 1024     /* the panel LU's default leaf width */
#define OCU_GETRF_LEAF_MAX 1024

typedef struct ocu_stats {
  char device[128];
  int64_t dev_budget, dev_peak, dev_allocs, pinned_bytes;
  int64_t bytes_h2d, bytes_d2h;
  int nslots, streams;
  /* with timing: busy time (union of intervals) of copies and of kernels, and their overlap */
  double t_copy, t_kernel, t_overlap, t_span;
  double t_gemm_update; /* sum of update GEMM spans (column blocks) */
  double t_panel_dev;   /* sum of panel spans on the device (getrf, trsm, trtri, getri) */
  double t_getrf, t_trsm, t_trtri, t_getri; /* its parts */
  double t_host;        /* sum of the host's tile-store spans (takes and puts) */
  int64_t bytes_host;   /* bytes those spans moved */
} ocu_stats_t;

/* 1 and a description ("NVIDIA H100 80GB HBM3, 79.2 GiB free") if a GPU is usable; else 0 and
 * the reason in desc. */
int ocu_probe(char *desc, size_t cap);

/* The stripe for n, tile b, m right-hand sides: the widest multiple of b (or n) whose device
 * buffers fit the budget. *W = 0 (and OOC_ERR_BUDGET with a message) if not even one tile fits.
 * *budget gets the resolved byte budget. */
ooc_status_t ocu_plan(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t m, const ocu_config_t *cfg,
                      int64_t *W, int64_t *budget);

/* Host bytes the executor allocates beyond gj_workspace_bytes(n, b, W, m) (the pinned ring). */
int64_t ocu_host_extra_bytes(int64_t n, int64_t b, int64_t W, int64_t m, const ocu_config_t *cfg);

ooc_status_t ocu_exec_create(ooc_ctx_t *ctx, int64_t n, int64_t b, int64_t W, int64_t m,
                             const ocu_config_t *cfg, gj_exec_t **out);
/* The panel LU of later steps (tests, benchmarks): leaf > 0: the recursive LU with leaves of
 * that many columns (at most OCU_GETRF_LEAF_MAX; the default is OCU_GETRF_LEAF); leaf < 0:
 * cuSOLVER's getrf on the whole panel once all of it is on the device (for comparison). Device
 * memory is planned for any leaf. Call between steps (not while a panel is being sent). */
ooc_status_t ocu_exec_set_leaf(gj_exec_t *e, int leaf);
/* Statistics so far (with timing: waits for the device first). */
void ocu_exec_stats(gj_exec_t *e, ocu_stats_t *s);
/* Frees everything; writes the trace if one was asked for (its failure is the return value). */
ooc_status_t ocu_exec_destroy(gj_exec_t *e);

#endif
