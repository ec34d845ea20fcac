/*
 * test_mgpu.c: several devices in one node (issue 26) without several GPUs. The CPU backends
 * present N host "devices" (exset.h: N host executors, each with its own worker threads), so
 * the multi-device schedules run here:
 * - the ring over several executors (ring_run_multi): items round robin, every item taken,
 *   worked on its ring's executor and put back once, in order, slots never refilled early;
 * - gj on the executor (gj_x.c) over 2 and 3 devices against 1: BIT-IDENTICAL store content and
 *   permutation, on the unified host executors (the pipeline's CPU shape: the devices share the
 *   panel) and on strict ones (not unified, late operations, poisoned gets: each device gets
 *   the stripe and factors its own panel; a missing sync is a wrong result here), in core and
 *   spilling, invert and solve, with the host peak within the cache and gj_x's planned
 *   workspace for that many devices;
 * - the Cholesky inverse out of core (chol.c) over 2 and 3 devices against 1 and against the
 *   pipeline's CPU path (no executor): BIT-IDENTICAL store content and logdet, host (the
 *   devices share the first's panel) and strict devices (each device gets V and solves its own
 *   panel), in core and spilling, full and lower-only, the same info and message for a matrix
 *   that is not SPD, the host peak within the cache and chol's planned workspace; and in the
 *   pipeline (ooc_invert --method chol --devices) the same output file as one device;
 * - the product (oocgemm.c) over 2 and 3 devices against the pipeline's one (gemm_run without
 *   an executor): C bit-identical, host and strict devices, beta 0 and not, in core and
 *   spilling, the host peak within the cache and each device's buffers;
 * - direct moves (gj.h, chol.h "Direct moves") on 1 and 2 strict devices: gj invert and solve,
 *   the Cholesky inverse full and lower-only, in core and spilling, with the slot path, direct
 *   moves, and direct moves into a cache the caller pinned: BIT-IDENTICAL, bytes moved in place
 *   where the columns were cached and fewer than all where some spilled, no tile left lent and
 *   nothing registered, also after a scratch failure in the middle of a sweep;
 * - the device list parser (--devices).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exset.h"
#ifdef OOC_HAVE_CUDA
#include "exec/cuda/exec_cuda.h"
#endif
#include "exec/ring.h"
#include "gen/gen.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/oocgemm.h"
#include "testutil.h"

/* ---- the device list -------------------------------------------------------------------------- */

static void t_parse(void) {
  int dev[EX_MAX_DEVICES], n = -1;
  char err[256];
  CU_ASSERT_EQUAL(ex_devices_parse(NULL, dev, &n, err, sizeof err), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(ex_devices_parse(" ", dev, &n, err, sizeof err), 0);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(ex_devices_parse("0,1, 3", dev, &n, err, sizeof err), 0);
  CU_ASSERT_EQUAL(n, 3);
  CU_ASSERT(dev[0] == 0 && dev[1] == 1 && dev[2] == 3);
  CU_ASSERT_EQUAL(ex_devices_parse("2", dev, &n, err, sizeof err), 0);
  CU_ASSERT(n == 1 && dev[0] == 2);
  CU_ASSERT_EQUAL(ex_devices_parse("0,0", dev, &n, err, sizeof err), -1);
  CU_ASSERT(strstr(err, "twice") != NULL);
  CU_ASSERT_EQUAL(ex_devices_parse("0,x", dev, &n, err, sizeof err), -1);
  CU_ASSERT(strstr(err, "at 'x'") != NULL);
  CU_ASSERT_EQUAL(ex_devices_parse("0;1", dev, &n, err, sizeof err), -1);
  CU_ASSERT_EQUAL(ex_devices_parse("-1", dev, &n, err, sizeof err), -1);
  CU_ASSERT_EQUAL(ex_devices_parse("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", dev, &n, err,
                                   sizeof err), -1);
  CU_ASSERT(strstr(err, "more than") != NULL);
}

/* ---- the ring over several executors --------------------------------------------------------- */

typedef struct mr {
  int nr;
  ooc_exec_t *ex[3];
  double *dbuf[3][RING_MAX_SLOTS]; /* device twins per ring and slot */
  int64_t taken, put, worked[3];
  int order_ok;
  double *out;                     /* item q's result: its value doubled, by the device */
} mr_t;

static ooc_status_t mr_take(void *u, int64_t q, double *slot, int64_t ld) {
  mr_t *m = u;
  if (q != m->taken++) m->order_ok = 0;
  for (int64_t i = 0; i < ld; i++) slot[i] = (double)(q * 1000 + i);
  return OOC_OK;
}

/* Put the slot to its ring's device, double it there (a gemm by a 1 x 1 matrix [2] made by a
 * fill), get it back: a wrong slot, device or a refill before the get has run shows in `out`. */
static ooc_status_t mr_work(void *u, int64_t q, int s, double *slot, int64_t ld, int *last) {
  mr_t *m = u;
  int r = s % m->nr, sl = s / m->nr;
  if (r != q % m->nr) m->order_ok = 0;
  m->worked[r]++;
  ooc_exec_t *ex = m->ex[r];
  double *d = m->dbuf[r][sl];
  OOC_TRY(ex_put(ex, 0, ld, 1, slot, ld, d, ld));
  OOC_TRY(ex_fill(ex, 0, 1, 1, 2.0, d + ld, 1));                       /* d[ld] = 2 */
  OOC_TRY(ex_gemm(ex, 0, 'N', 'N', ld, 1, 1, 1.0, d, ld, d + ld, 1, 0.0, d + ld + 1, ld));
  OOC_TRY(ex_get(ex, 0, ld, 1, d + ld + 1, ld, slot, ld));
  *last = 0;
  return OOC_OK;
}

static ooc_status_t mr_put(void *u, int64_t q, double *slot, int64_t ld) {
  mr_t *m = u;
  if (q != m->put++) m->order_ok = 0;
  memcpy(m->out + q * ld, slot, (size_t)ld * sizeof *slot);
  return OOC_OK;
}

static void t_ring_multi(void) {
  const int64_t ld = 37, nitems = 23;
  for (int nr = 1; nr <= 3; nr++)
    for (int strict = 0; strict < 2; strict++) {
      ooc_ctx_t *ctx = tu_ctx();
      ex_set_t set;
      CU_ASSERT_FATAL(ex_set_host(ctx, ooc_ops_cpu(), nr, NULL, 1, 0, strict, 30, &set) ==
                      OOC_OK);
      mr_t m = {.nr = nr, .order_ok = 1};
      m.out = calloc((size_t)(ld * nitems), sizeof *m.out);
      ring_t *rings[3] = {NULL};
      for (int r = 0; r < nr; r++) {
        m.ex[r] = set.ex[r];
        int K = 2 + r; /* rings of different depths */
        CU_ASSERT_FATAL(ring_create(set.ex[r], K, ld, 1, &rings[r]) == OOC_OK);
        for (int s = 0; s < K; s++)
          CU_ASSERT_FATAL(ex_alloc(set.ex[r], (size_t)(2 * ld + 2) * sizeof(double),
                                   &m.dbuf[r][s]) == OOC_OK);
      }
      ring_ops_t ops = {mr_take, mr_work, mr_put};
      CU_ASSERT_EQUAL(ring_run_multi(rings, nr, nitems, &ops, &m), OOC_OK);
      CU_ASSERT(m.order_ok);
      CU_ASSERT_EQUAL(m.taken, nitems);
      CU_ASSERT_EQUAL(m.put, nitems);
      for (int r = 0; r < nr; r++) {
        CU_ASSERT_EQUAL(m.worked[r], (nitems - r + nr - 1) / nr);
        CU_ASSERT_EQUAL(rings[r]->stats.items, m.worked[r]);
      }
      int bad = 0;
      for (int64_t q = 0; q < nitems; q++)
        for (int64_t i = 0; i < ld; i++) bad += m.out[q * ld + i] != 2.0 * (double)(q * 1000 + i);
      CU_ASSERT_EQUAL(bad, 0);
      if (bad) fprintf(stderr, "\n  ring_run_multi nr=%d strict=%d: %d wrong\n", nr, strict, bad);
      for (int r = 0; r < nr; r++) {
        CU_ASSERT(set.ex[r]->stats.ops > 0);
        ring_destroy(rings[r]);
      }
      ex_set_destroy(&set);
      free(m.out);
      tu_ctx_done(ctx);
    }
}

/* ---- gj over several devices ------------------------------------------------------------------ */

static double *make(gen_kind_t kind, int64_t rows, int64_t cols, uint64_t seed) {
  return tu_gen(kind, rows, cols, seed);
}

typedef struct grun {
  double *R;         /* the result store's content (NULL on failure) */
  int64_t *perm;
  ooc_status_t st;
  int64_t info, steps;
  int64_t over;      /* host peak above the cache and the planned workspace (<= 0: within) */
  double busy[8];    /* each device's busy seconds (host executors), bytes in and out */
  int64_t bin[8], bout[8];
  double t_run;      /* gj_run's wall seconds */
  int64_t W;         /* the stripe run */
  gj_stats_t stats;
  int64_t spills;    /* tiles the stores spilled */
  int64_t lent;      /* bytes the cache still lends after the run (must be 0) */
  int64_t registered;  /* host buffers still registered with the executors after the run */
  int64_t kept_pinned; /* g_direct 2: bytes the caller's pinner still holds after the run */
  char msg[512];
} grun_t;

enum { K_HOST = 0, K_STRICT = 1, K_CUDA = 2 };
static int64_t g_gpu_mem; /* K_CUDA: --gpu-mem of each device */
/* gj_args_t.direct / chol_args_t.direct for the runs (t_gj_direct, t_chol_direct); 2: the
 * caller pins the cache with the first executor before the run (tcache_pin_new, as the job's
 * load would) and unpins it after */
static int g_direct;
/* > 0: the run's g_fault_io-th file operation (scratch reads and writes) fails (t_direct_faults) */
static int64_t g_fault_io;

/* g_direct 2: the caller's pinner on the cache before the run. */
static void caller_pin(tcache_t *cache, ooc_exec_t *x) {
  if (g_direct != 2 || !x) return;
  tcache_set_pin(cache, ex_pin_cb, ex_unpin_cb, x);
  tcache_pin_new(cache, 1);
}

/* After the run: the run kept the pinner it found (g_direct 2: what it holds into *kept, then
 * unset), no tile is still lent, and what is still registered with the executors (*registered:
 * 0 once the caller's pinner is gone). */
static void after_run(tcache_t *cache, const ex_set_t *set, int64_t *lent, int64_t *kept,
                      int64_t *registered) {
  *lent = tcache_lent(cache);
  if (g_direct == 2 && set->n > 0) {
    CU_ASSERT(tcache_pin_user(cache) == set->ex[0]);
    tcache_pin_stats(cache, kept, NULL);
    tcache_set_pin(cache, NULL, NULL, NULL);
  }
  *registered = 0;
  for (int d = 0; d < set->n; d++) *registered += set->ex[d]->stats.registered;
}

#ifdef OOC_HAVE_CUDA
/* GPUs 0 .. nd-1 into set: three queues, g_gpu_mem each, timing on several devices as the
 * pipeline's (job_executors_cfg), so each device's busy seconds are measured. */
static void cuda_set(ooc_ctx_t *ctx, int nd, ex_set_t *set) {
  for (int d = 0; d < nd; d++) {
    ex_cuda_config_t c = {.device = d, .nqueues = 3, .gpu_mem = g_gpu_mem, .timing = nd > 1};
    ooc_exec_t *x = NULL;
    CU_ASSERT_FATAL(ex_cuda_create(ctx, &c, &x) == OOC_OK);
    CU_ASSERT_FATAL(ex_set_add(ctx, set, d, x) == OOC_OK);
  }
}
#endif

/* gj_x on fresh stores with nd devices of a kind: host (unified, as the pipeline makes them:
 * the first gj_x_host_exec's, the others plain one-queue host executors with no device budget),
 * strict (three queues each) or CUDA (devices 0 .. nd-1, three queues, g_gpu_mem each; the
 * stripe the first device's budget holds, at most W). */
static void gj_once(const double *A, int64_t n, const double *B, int64_t m, int64_t b, int64_t W,
                    int64_t chunk, int64_t cap, int nd, int kind, grun_t *g) {
  int strict = kind == K_STRICT;
  memset(g, 0, sizeof *g);
  ooc_ctx_t *ctx = tu_ctx();
  tu_memsrc_t ma = {A, n}, mb = {B, n};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL};
  tu_spill_t la = {ctx, "mgpu", NULL, 0}, lb = {ctx, "mgpu", NULL, 0};
  ooc_spill_ops_t pa = {&la, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pb = {&lb, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  tcache_t *cache = NULL;
  tstore_t *tA = NULL, *tB = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &sa, &pa, &tA) == OOC_OK);
  if (B) CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &sb, &pb, &tB) == OOC_OK);
  double *colnorm = calloc((size_t)n + 1, sizeof *colnorm);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) colnorm[j] += fabs(A[i + j * n]);
  int64_t base = ctx->host_bytes;
  ooc_ctx_reset_peak(ctx);
  ex_set_t set;
  ex_set_init(&set);
  if (kind == K_CUDA) {
#ifdef OOC_HAVE_CUDA
    cuda_set(ctx, nd, &set);
    W = gj_x_device_stripe(set.ex[0], n, b, W);
    CU_ASSERT_FATAL(W > 0);
#endif
  } else if (strict) {
    CU_ASSERT_FATAL(ex_set_host(ctx, ooc_ops_cpu(), nd, NULL, 3, 0, 1, 20, &set) == OOC_OK);
  } else {
    ooc_exec_t *x0 = NULL;
    CU_ASSERT_FATAL(gj_x_host_exec(ctx, ooc_ops_cpu(), n, b, W, &x0) == OOC_OK);
    CU_ASSERT_FATAL(ex_set_add(ctx, &set, 0, x0) == OOC_OK);
    for (int d = 1; d < nd; d++) {
      ooc_exec_t *x = NULL;
      CU_ASSERT_FATAL(ex_host_create(ctx, ooc_ops_cpu(), 1, 1, &x) == OOC_OK);
      CU_ASSERT_FATAL(ex_set_add(ctx, &set, d, x) == OOC_OK);
    }
  }
  g->perm = calloc((size_t)n + 1, sizeof *g->perm);
  gj_args_t a = {.A = tA, .B = tB, .stripe = W, .ops = ooc_ops_cpu(), .colnorm = colnorm,
                 .perm = B ? NULL : g->perm, .x = set.ex[0], .xs = set.ex, .nx = set.n,
                 .chunk = chunk, .direct = g_direct > 0};
  gj_stats_t stats;
  g->W = W;
  caller_pin(cache, set.ex[0]);
  if (g_fault_io > 0) ooc_fault_arm(ctx, OOC_FAULT_IO, g_fault_io, 0, EIO);
  double t0 = ooc_now();
  g->st = gj_run(ctx, &a, &stats, &g->info);
  ooc_fault_arm(ctx, OOC_FAULT_IO, 0, 0, 0);
  g->t_run = ooc_now() - t0;
  g->steps = stats.steps;
  g->stats = stats;
  g->spills = ts_stats(tA)->spills + (tB ? ts_stats(tB)->spills : 0);
  for (int d = 0; d < set.n; d++) (void)ex_finish(set.ex[d]);
  after_run(cache, &set, &g->lent, &g->kept_pinned, &g->registered);
  int set_n = set.n;
  for (int d = 0; d < set.n; d++) {
    (void)ex_finish(set.ex[d]);
    g->busy[d] = set.ex[d]->stats.busy;
    g->bin[d] = set.ex[d]->stats.bytes_put;
    g->bout[d] = set.ex[d]->stats.bytes_get;
  }
  ex_set_destroy(&set);
  if (kind == K_CUDA) nd = 0; /* the host side: the rings' pinned slots, counted below */
  /* strict: its device buffers are host memory too (each device's P and twins, and headers) */
  int64_t bb = ooc_min64(b, n), dev = 8 * n * ts_stripe(n, bb, W) + GJ_X_SLOTS * 8 * n * bb;
  int64_t ws = kind == K_CUDA ? gj_x_host_bytes_nd(n, b, W, m, set_n) + ((int64_t)1 << 20)
               : strict ? gj_x_host_bytes_nd(n, b, W, m, nd) + ex_set_host_bytes(nd, 3) +
                              nd * (dev + 64 * 64)
                        : gj_x_workspace_bytes_nd(n, b, W, m, nd);
  g->over = ooc_ctx_host_peak(ctx) - base - cap - ws;
  if (g->st == OOC_OK) g->R = tu_read_store(B ? tB : tA, n);
  else snprintf(g->msg, sizeof g->msg, "%s", ooc_ctx_error(ctx));
  tstore_destroy(tA);
  tstore_destroy(tB);
  tcache_destroy(cache);
  scratch_close(la.s);
  scratch_close(lb.s);
  free(colnorm);
  tu_ctx_done(ctx);
}

static int g_logged;

/* 1, 2 and 3 devices, unified and strict: one status, info and message; the results and the
 * permutation bit-identical to one device's (and, for the unified host, to the strict one's,
 * as test_gj's x_case asserts for one device); the peak within the plan. */
static void mcase(gen_kind_t kind, int64_t n, int64_t m, int64_t b, int64_t W, int64_t chunk,
                  int64_t cap) {
  double *A = make(kind, n, n, 71 + (uint64_t)n), *B = m ? make(GEN_RHS, n, m, 72) : NULL;
  int64_t rc = m ? m : n;
  grun_t g[2][3];
  int bad = 0;
  for (int strict = 0; strict < 2; strict++)
    for (int nd = 1; nd <= 3; nd++) {
      grun_t *r = &g[strict][nd - 1];
      gj_once(A, n, B, m, b, W, chunk, cap, nd, strict ? K_STRICT : K_HOST, r);
      CU_ASSERT(r->over <= 0);
      bad |= r->over > 0;
      const grun_t *r0 = &g[0][0];
      CU_ASSERT_EQUAL(r->st, r0->st);
      CU_ASSERT_EQUAL(r->info, r0->info);
      bad |= r->st != r0->st || r->info != r0->info;
      if (r->st != OOC_OK || r0->st != OOC_OK) {
        CU_ASSERT_STRING_EQUAL(r->msg, r0->msg);
        bad |= strcmp(r->msg, r0->msg) != 0;
        continue;
      }
      CU_ASSERT_EQUAL(r->steps, ooc_cdiv64(n, ts_stripe(n, ooc_min64(b, n), W)));
      int same = memcmp(r->R, r0->R, (size_t)(n * rc) * sizeof *r->R) == 0 &&
                 memcmp(r->perm, r0->perm, (size_t)n * sizeof *r->perm) == 0;
      CU_ASSERT(same);
      bad |= !same;
      /* every device worked when there was a sweep with columns for it */
      if (!strict && (W < n || m > 0) && ooc_cdiv64(n + m, b) - ooc_cdiv64(W, b) >= nd)
        for (int d = 0; d < nd; d++) CU_ASSERT(r->busy[d] > 0);
    }
  if (kind == GEN_SINGULAR) {
    CU_ASSERT_EQUAL(g[0][0].st, OOC_ERR_SINGULAR);
  } else {
    CU_ASSERT_EQUAL(g[0][0].st, OOC_OK);
  }
  if (bad && g_logged++ < 10) {
    fprintf(stderr, "\n  mgpu gj %s n=%lld m=%lld b=%lld W=%lld chunk=%lld cap=%lld:",
            gen_kind_name(kind), (long long)n, (long long)m, (long long)b, (long long)W,
            (long long)chunk, (long long)cap);
    for (int s = 0; s < 2; s++)
      for (int d = 0; d < 3; d++)
        fprintf(stderr, " [%s %d: st %d info %lld over %lld '%s']", s ? "strict" : "host", d + 1,
                g[s][d].st, (long long)g[s][d].info, (long long)g[s][d].over, g[s][d].msg);
    fprintf(stderr, "\n");
  }
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < 3; d++) {
      free(g[s][d].R);
      free(g[s][d].perm);
    }
  free(A);
  free(B);
}

static void t_gj_in_core(void) {
  const int64_t big = (int64_t)1 << 30;
  mcase(GEN_RANDOM, 130, 0, 16, 48, 0, big);   /* 3 steps, uneven last */
  mcase(GEN_RANDOM, 130, 0, 16, 48, 16, big);  /* chunks of one tile: several panel passes */
  mcase(GEN_RANDOM, 130, 0, 16, 130, 32, big); /* one step, no sweep */
  mcase(GEN_RANDOM, 130, 7, 16, 32, 16, big);  /* solve */
  mcase(GEN_RANDOM, 64, 0, 64, 64, 0, big);    /* one tile */
  mcase(GEN_RANDOM, 17, 3, 7, 7, 7, big);
}

static void t_gj_out_of_core(void) {
  /* caches well under the matrix (130^2 doubles = 135 KB, 300^2 = 720 KB) */
  mcase(GEN_RANDOM, 130, 0, 16, 32, 16, 24 << 10);
  mcase(GEN_RANDOM, 130, 5, 16, 48, 0, 24 << 10);
  mcase(GEN_RANDOM, 300, 0, 32, 96, 64, 128 << 10);
  mcase(GEN_COND, 257, 0, 64, 128, 64, 96 << 10);
}

static void t_gj_singular(void) {
  mcase(GEN_SINGULAR, 100, 0, 10, 30, 10, 1 << 30); /* the zero column in the second step */
  mcase(GEN_SINGULAR, 100, 3, 10, 40, 10, 16 << 10);
}


/* ---- the Cholesky inverse over several devices ----------------------------------------------- */

static double *make_spd(int64_t n, uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  s.cols = n;
  s.seed = seed;
  s.symmetric = 1;
  s.nugget = 1e-2;
  return tu_gen_spec(&s);
}

typedef struct crun {
  double *R;        /* the store's content, n x n (NULL on failure) */
  ooc_status_t st;
  int64_t info, steps;
  double logdet;
  int64_t over;     /* host peak above the cache and the planned workspace (<= 0: within) */
  double busy[4];   /* each device's busy seconds */
  double t_run;     /* chol_run's wall seconds */
  int64_t W;        /* the stripe run */
  chol_stats_t stats;
  int64_t spills, lent, registered, kept_pinned; /* as grun_t's */
  char msg[512];
} crun_t;

/* chol_run's CHOL_INVERT on fresh stores (cache cap) with nd devices of a kind: nd = 0 is the
 * pipeline's one-device CPU path (no executor: chol_run makes its own); host: unified host
 * executors as job_chol.c makes them (one queue, budget chol_host_budget); strict: three queues
 * each, not unified, late operations; CUDA: GPUs 0 .. nd-1 (three queues, g_gpu_mem each, timing
 * on several as the pipeline's), the stripe at most W and what every device holds. */
static void chol_once(const double *A, int64_t n, int64_t b, int64_t W, int lower, int64_t cap,
                      int nd, int kind, crun_t *r) {
  int strict = kind == K_STRICT;
  memset(r, 0, sizeof *r);
  ooc_ctx_t *ctx = tu_ctx();
  tu_memsrc_t ma = {A, n};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL};
  tu_spill_t la = {ctx, "mgchol", NULL, 0};
  ooc_spill_ops_t pa = {&la, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  tcache_t *cache = NULL;
  tstore_t *tA = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &sa, &pa, &tA) == OOC_OK);
  int64_t base = ctx->host_bytes;
  ooc_ctx_reset_peak(ctx);
  ex_set_t set;
  ex_set_init(&set);
  int64_t nb = 0;
  if (kind == K_CUDA) {
#ifdef OOC_HAVE_CUDA
    cuda_set(ctx, nd, &set);
    for (int d = 0; d < nd; d++)
      W = ooc_min64(W, chol_device_stripe(set.ex[d], n, b, CHOL_INVERT, 0));
    CU_ASSERT_FATAL(W > 0);
    nb = chol_device_nb(set.ex[0], n, b, W, CHOL_INVERT, 0);
#endif
  } else if (nd > 0) {
    CU_ASSERT_FATAL(ex_set_host(ctx, ooc_ops_cpu(), nd, NULL, strict ? 3 : 1,
                                strict ? 0 : chol_host_budget(n, b, W), strict, 20, &set) ==
                    OOC_OK);
  }
  chol_args_t a = {.A = tA, .stripe = W, .ops = ooc_ops_cpu(), .job = CHOL_INVERT,
                   .lower_only = lower, .exec = nd > 0 ? set.ex[0] : NULL, .xs = set.ex,
                   .nx = set.n, .nb = nb, .direct = g_direct > 0};
  chol_stats_t stats;
  r->W = W;
  caller_pin(cache, nd > 0 ? set.ex[0] : NULL);
  if (g_fault_io > 0) ooc_fault_arm(ctx, OOC_FAULT_IO, g_fault_io, 0, EIO);
  double t0 = ooc_now();
  r->st = chol_run(ctx, &a, &stats, &r->info, &r->logdet);
  ooc_fault_arm(ctx, OOC_FAULT_IO, 0, 0, 0);
  r->t_run = ooc_now() - t0;
  r->steps = stats.steps;
  r->stats = stats;
  r->spills = ts_stats(tA)->spills;
  for (int d = 0; d < set.n; d++) (void)ex_finish(set.ex[d]);
  after_run(cache, &set, &r->lent, &r->kept_pinned, &r->registered);
  for (int d = 0; d < set.n; d++) {
    (void)ex_finish(set.ex[d]);
    r->busy[d] = set.ex[d]->stats.busy;
    CU_ASSERT_EQUAL(set.ex[d]->dev_bytes, 0); /* chol_run freed what it allocated */
    CU_ASSERT_EQUAL(set.ex[d]->staging_bytes, 0);
  }
  ex_set_destroy(&set);
  /* host: chol's workspace for nd devices; strict: the devices' buffers are host memory too
   * (each its panel, diagonal, ring and twins; the first D's copy, the transpose and tile-row
   * buffers), and headers */
  int64_t bb = ooc_min64(b, n), Ws = ts_stripe(n, bb, W);
  int64_t ws = !strict ? chol_workspace_bytes_nd(n, b, Ws, 0, nd < 1 ? 1 : nd)
                       : ex_set_host_bytes(nd, 3) + 8 * (Ws * Ws + bb * bb + n * bb) +
                             nd * (ring_host_bytes(CHOL_SLOTS, n, bb) + 8 * (n * Ws + 2 * Ws) +
                                   CHOL_SLOTS * 8 * n * bb + 64 * 64);
  r->over = kind == K_CUDA ? 0 : ooc_ctx_host_peak(ctx) - base - cap - ws;
  if (r->st == OOC_OK) r->R = tu_read_store(tA, n);
  else snprintf(r->msg, sizeof r->msg, "%s", ooc_ctx_error(ctx));
  tstore_destroy(tA);
  tcache_destroy(cache);
  scratch_close(la.s);
  tu_ctx_done(ctx);
}

/* 0 (the CPU path), 1, 2 and 3 host devices and 1, 2 and 3 strict ones: one status, info,
 * message; the store and the logdet bit-identical to the kind's one device (host: also to the
 * CPU path); the peak within the plan; every device busy when the sweep has columns for it. */
static void ccase(const double *A, int64_t n, int64_t b, int64_t W, int lower, int64_t cap,
                  int64_t want_info) {
  crun_t r0, g[2][3];
  int bad = 0;
  chol_once(A, n, b, W, lower, cap, 0, K_HOST, &r0);
  CU_ASSERT(r0.over <= 0);
  for (int strict = 0; strict < 2; strict++)
    for (int nd = 1; nd <= 3; nd++) {
      crun_t *r = &g[strict][nd - 1];
      chol_once(A, n, b, W, lower, cap, nd, strict ? K_STRICT : K_HOST, r);
      const crun_t *ref = strict ? &g[1][0] : &r0; /* strict: its own one device (chol.h:
                                                      the split pivot's block-wise trsm) */
      CU_ASSERT(r->over <= 0);
      CU_ASSERT_EQUAL(r->st, ref->st);
      CU_ASSERT_EQUAL(r->info, ref->info);
      CU_ASSERT_EQUAL(r->info, want_info);
      bad |= r->over > 0 || r->st != ref->st || r->info != ref->info || r->info != want_info;
      if (r->st != OOC_OK || ref->st != OOC_OK) {
        CU_ASSERT_STRING_EQUAL(r->msg, ref->msg);
        bad |= strcmp(r->msg, ref->msg) != 0;
        continue;
      }
      int same = memcmp(r->R, ref->R, (size_t)(n * n) * sizeof *r->R) == 0 &&
                 r->logdet == ref->logdet && r->steps == ref->steps;
      CU_ASSERT(same);
      bad |= !same;
      int64_t other = ooc_cdiv64(n, b) - ooc_cdiv64(ts_stripe(n, b, W), b); /* sweep columns */
      if (W < n && other >= nd)
        for (int d = 0; d < nd; d++) CU_ASSERT(r->busy[d] > 0);
    }
  if (want_info == 0) {
    CU_ASSERT_EQUAL(r0.st, OOC_OK);
    if (r0.R) CU_ASSERT(tu_inverse_ratio(n, A, r0.R, DBL_EPSILON / 2) < 30 || lower);
  } else {
    CU_ASSERT_EQUAL(r0.st, OOC_ERR_NOT_SPD);
  }
  if (bad && g_logged++ < 10) {
    fprintf(stderr, "\n  mgpu chol n=%lld b=%lld W=%lld lower=%d cap=%lld: [cpu: st %d info %lld "
            "over %lld '%s']", (long long)n, (long long)b, (long long)W, lower, (long long)cap,
            r0.st, (long long)r0.info, (long long)r0.over, r0.msg);
    for (int s = 0; s < 2; s++)
      for (int d = 0; d < 3; d++)
        fprintf(stderr, " [%s %d: st %d info %lld over %lld logdet %.17g '%s']",
                s ? "strict" : "host", d + 1, g[s][d].st, (long long)g[s][d].info,
                (long long)g[s][d].over, g[s][d].logdet, g[s][d].msg);
    fprintf(stderr, "\n");
  }
  free(r0.R);
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < 3; d++) free(g[s][d].R);
}

static void t_chol_in_core(void) {
  const int64_t big = (int64_t)1 << 30;
  double *A = make_spd(130, 81);
  ccase(A, 130, 16, 130, 0, big, 0); /* one step: the first device alone */
  ccase(A, 130, 16, 48, 0, big, 0);  /* 3 steps, uneven last, edge tiles of 2 */
  ccase(A, 130, 16, 48, 1, big, 0);  /* lower only */
  ccase(A, 130, 16, 16, 0, big, 0);  /* a tile column a step: 9 steps */
  free(A);
  A = make_spd(37, 82);
  ccase(A, 37, 7, 14, 0, big, 0);    /* a few tile columns: some devices idle in some steps */
  free(A);
}

static void t_chol_out_of_core(void) {
  /* caches well under the matrix (its lower triangle: 130^2 / 2 doubles = 68 KB, 257^2 / 2 = 264
   * KB) */
  double *A = make_spd(130, 83);
  ccase(A, 130, 16, 32, 0, 24 << 10, 0);
  ccase(A, 130, 16, 48, 1, 24 << 10, 0);
  free(A);
  A = make_spd(257, 84);
  ccase(A, 257, 32, 96, 0, 96 << 10, 0);
  free(A);
}

/* ---- direct moves (gj.h, chol.h "Direct moves") ---------------------------------------------- */

/* One configuration on nd strict devices with the slot path (direct 0), direct moves (1) and
 * direct moves into a cache the caller pinned as it filled (2): the same status, the store's
 * content, permutation / logdet bit for bit; the sweep's bytes alike; no bytes direct with the
 * slot path, some with direct moves where a step found its columns cached (in core, every step
 * after the first: the first reads them from the source), fewer than all where some spilled;
 * no tile left lent, nothing left registered; the host peak within the plan. *direct, *swept,
 * *spills: run 1's. */
static int g_direct_cases;

static void gj_direct_case(int64_t n, int64_t m, int64_t b, int64_t W, int64_t cap, int nd,
                           int64_t *direct, int64_t *swept, int64_t *spills) {
  double *A = make(GEN_RANDOM, n, n, 91 + (uint64_t)n), *B = m ? make(GEN_RHS, n, m, 92) : NULL;
  int64_t rc = m ? m : n;
  grun_t g[3];
  for (int k = 0; k < 3; k++) {
    g_direct = k;
    gj_once(A, n, B, m, b, W, 0, cap, nd, K_STRICT, &g[k]);
    g_direct = 0;
    CU_ASSERT_EQUAL_FATAL(g[k].st, OOC_OK);
    CU_ASSERT(g[k].over <= 0);
    CU_ASSERT_EQUAL(g[k].lent, 0);
    CU_ASSERT_EQUAL(g[k].registered, 0);
    CU_ASSERT_EQUAL(g[k].stats.bytes_swept, g[0].stats.bytes_swept);
    CU_ASSERT(memcmp(g[k].R, g[0].R, (size_t)(n * rc) * sizeof *g[k].R) == 0);
    if (!m) CU_ASSERT(memcmp(g[k].perm, g[0].perm, (size_t)n * sizeof *g[k].perm) == 0);
  }
  CU_ASSERT_EQUAL(g[0].stats.bytes_direct, 0);
  CU_ASSERT_EQUAL(g[2].stats.bytes_direct, g[1].stats.bytes_direct);
  CU_ASSERT(g[1].stats.bytes_direct < g[1].stats.bytes_swept); /* the first step's, spills */
  CU_ASSERT(g[1].stats.bytes_pinned > 0 && g[2].kept_pinned > 0);
  *direct = g[1].stats.bytes_direct;
  *swept = g[1].stats.bytes_swept;
  *spills = g[1].spills;
  g_direct_cases++;
  for (int k = 0; k < 3; k++) {
    free(g[k].R);
    free(g[k].perm);
  }
  free(A);
  free(B);
}

/* gj, invert and solve, 1 and 2 strict devices: in core (every sweep item of the steps after
 * the first goes direct) and out of core (a cache of a few columns: some items spilled and take
 * the slot, others go direct). */
static void t_gj_direct(void) {
  const int64_t big = (int64_t)1 << 30;
  int64_t d, sw, sp;
  g_direct_cases = 0;
  for (int nd = 1; nd <= 2; nd++) {
    gj_direct_case(130, 0, 16, 48, big, nd, &d, &sw, &sp); /* invert, 3 steps */
    CU_ASSERT(d > 0 && sp == 0);
    gj_direct_case(130, 7, 16, 32, big, nd, &d, &sw, &sp); /* solve: columns of A and B */
    CU_ASSERT(d > 0 && sp == 0);
    /* 130^2 doubles = 135 KB; a tile column 16.6 KB: half of 80 KB lends two at once */
    gj_direct_case(130, 0, 16, 32, 80 << 10, nd, &d, &sw, &sp);
    CU_ASSERT(d > 0 && d < sw && sp > 0);
    gj_direct_case(130, 5, 16, 48, 80 << 10, nd, &d, &sw, &sp);
    CU_ASSERT(d > 0 && d < sw && sp > 0);
  }
  printf("[%d cases, each run with the slot, direct, direct into a pinned cache] ",
         g_direct_cases);
}

static void chol_direct_case(const double *A, int64_t n, int64_t b, int64_t W, int lower,
                             int64_t cap, int nd, int64_t *direct, int64_t *swept,
                             int64_t *spills) {
  crun_t r[3];
  for (int k = 0; k < 3; k++) {
    g_direct = k;
    chol_once(A, n, b, W, lower, cap, nd, K_STRICT, &r[k]);
    g_direct = 0;
    CU_ASSERT_EQUAL_FATAL(r[k].st, OOC_OK);
    CU_ASSERT(r[k].over <= 0);
    CU_ASSERT_EQUAL(r[k].lent, 0);
    CU_ASSERT_EQUAL(r[k].registered, 0);
    CU_ASSERT_EQUAL(r[k].stats.bytes_swept, r[0].stats.bytes_swept);
    CU_ASSERT(memcmp(r[k].R, r[0].R, (size_t)(n * n) * sizeof *r[k].R) == 0);
    CU_ASSERT(r[k].logdet == r[0].logdet && r[k].steps == r[0].steps);
  }
  CU_ASSERT_EQUAL(r[0].stats.bytes_direct, 0);
  CU_ASSERT_EQUAL(r[2].stats.bytes_direct, r[1].stats.bytes_direct);
  CU_ASSERT(r[1].stats.bytes_direct < r[1].stats.bytes_swept);
  CU_ASSERT(r[1].stats.bytes_pinned > 0 && r[2].kept_pinned > 0);
  *direct = r[1].stats.bytes_direct;
  *swept = r[1].stats.bytes_swept;
  *spills = r[1].spills;
  g_direct_cases++;
  for (int k = 0; k < 3; k++) free(r[k].R);
}

/* The Cholesky inverse out of core (the sweep), full and lower-only, 1 and 2 strict devices, a
 * cache that holds the matrix and one that does not (48 KB: the lower triangle is 68 KB, a tile
 * column at most 16.6 KB, so one lends at a time). */
static void t_chol_direct(void) {
  const int64_t big = (int64_t)1 << 30;
  double *A = make_spd(130, 93);
  int64_t d, sw, sp;
  g_direct_cases = 0;
  for (int nd = 1; nd <= 2; nd++)
    for (int lower = 0; lower < 2; lower++) {
      chol_direct_case(A, 130, 16, 48, lower, big, nd, &d, &sw, &sp); /* 3 steps */
      CU_ASSERT(d > 0 && sp == 0);
      chol_direct_case(A, 130, 16, 32, lower, 48 << 10, nd, &d, &sw, &sp);
      CU_ASSERT(d > 0 && d < sw && sp > 0);
    }
  free(A);
  printf("[%d cases, each run with the slot, direct, direct into a pinned cache] ",
         g_direct_cases);
}

/* Failures in the middle of a sweep with direct moves (out of core, 1 and 2 strict devices): a
 * scratch read or write fails at one file operation, then at a later one (every one at first,
 * then every 1 + k / 8th) until a run gets through. Every
 * failed run reports the failure, leaves no tile lent (the teardown returns what the ring did
 * not retire), nothing registered, no host memory (tu_ctx_done); some failed with bytes already
 * moved in place; the run that gets through is bit-identical to the slot path's. */
static void t_direct_faults(void) {
  int64_t n = 130;
  double *A = make(GEN_RANDOM, n, n, 95), *S = make_spd(n, 96);
  int failed = 0, failed_direct = 0;
  for (int nd = 1; nd <= 2; nd++)
    for (int chol = 0; chol < 2; chol++) {
      grun_t g0, g;
      crun_t c0, c;
      if (chol) chol_once(S, n, 16, 32, 1, 48 << 10, nd, K_STRICT, &c0);
      else gj_once(A, n, NULL, 0, 16, 32, 0, 80 << 10, nd, K_STRICT, &g0);
      g_direct = 1;
      for (g_fault_io = 1; g_fault_io < 4000; g_fault_io += 1 + g_fault_io / 8) {
        ooc_status_t st;
        int64_t lent, registered, direct;
        int same = 0;
        if (chol) {
          chol_once(S, n, 16, 32, 1, 48 << 10, nd, K_STRICT, &c);
          st = c.st, lent = c.lent, registered = c.registered, direct = c.stats.bytes_direct;
          if (st == OOC_OK)
            same = memcmp(c.R, c0.R, (size_t)(n * n) * sizeof *c.R) == 0 && c.logdet == c0.logdet;
          free(c.R);
        } else {
          gj_once(A, n, NULL, 0, 16, 32, 0, 80 << 10, nd, K_STRICT, &g);
          st = g.st, lent = g.lent, registered = g.registered, direct = g.stats.bytes_direct;
          if (st == OOC_OK)
            same = memcmp(g.R, g0.R, (size_t)(n * n) * sizeof *g.R) == 0 &&
                   memcmp(g.perm, g0.perm, (size_t)n * sizeof *g.perm) == 0;
          free(g.R);
          free(g.perm);
        }
        CU_ASSERT_EQUAL(lent, 0);
        CU_ASSERT_EQUAL(registered, 0);
        if (st == OOC_OK) {
          CU_ASSERT(same);
          break;
        }
        CU_ASSERT_EQUAL(st, OOC_ERR_IO);
        failed++;
        failed_direct += direct > 0;
      }
      CU_ASSERT(g_fault_io > 1 && g_fault_io < 4000);
      g_fault_io = 0;
      g_direct = 0;
      if (chol) free(c0.R);
      else {
        free(g0.R);
        free(g0.perm);
      }
    }
  CU_ASSERT(failed_direct > 0);
  printf("[%d runs failed by a scratch read or write, %d of them after moves in place] ", failed,
         failed_direct);
  free(A);
  free(S);
}

static void t_chol_not_spd(void) {
  int64_t n = 100;
  double *A = make_spd(n, 85);
  A[60 + 60 * n] = -1.0; /* the leading minor of order 61: the third step's pivot */
  ccase(A, n, 10, 30, 0, 1 << 30, 61);
  ccase(A, n, 10, 30, 0, 16 << 10, 61);
  A[60 + 60 * n] = 1.0;
  A[3 + 3 * n] = -1.0; /* order 4: the first step */
  ccase(A, n, 10, 40, 1, 16 << 10, 4);
  free(A);
}

/* What does not spread (chol.h "Several devices"): factor, solve and the in-core inverse given
 * two host devices run on the first alone (the second does nothing), with the one-device
 * result; devices of two kinds are refused with a message naming both. */
static void t_chol_first_only(void) {
  const int64_t n = 61, b = 8, m = 5;
  double *A = make_spd(n, 87), *B = tu_rand_matrix(n, m, 88);
  int jobs[3] = {CHOL_FACTOR, CHOL_SOLVE, CHOL_INVERT};
  int64_t Ws[3] = {16, 16, 64};
  for (int k = 0; k < 3; k++) {
    double *R[2] = {NULL, NULL};
    double ld[2] = {0, 0};
    for (int nd = 1; nd <= 2; nd++) {
      ooc_ctx_t *ctx = tu_ctx();
      tu_memsrc_t ma = {A, n}, mb = {B, n};
      ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL};
      tcache_t *cache = NULL;
      tstore_t *tA = NULL, *tB = NULL;
      CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &cache) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &sa, NULL, &tA) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, n, m, b, &sb, NULL, &tB) == OOC_OK);
      ex_set_t set;
      CU_ASSERT_FATAL(ex_set_host(ctx, ooc_ops_cpu(), nd, NULL, 1, 0, 0, 0, &set) == OOC_OK);
      int solve = jobs[k] == CHOL_SOLVE;
      chol_args_t a = {.A = tA, .B = solve ? tB : NULL, .stripe = Ws[k], .ops = ooc_ops_cpu(),
                       .job = jobs[k], .exec = set.ex[0], .xs = set.ex, .nx = set.n};
      int64_t info = -1;
      CU_ASSERT_EQUAL(chol_run(ctx, &a, NULL, &info, &ld[nd - 1]), OOC_OK);
      CU_ASSERT_EQUAL(info, 0);
      if (nd == 2) {
        (void)ex_finish(set.ex[1]);
        CU_ASSERT_EQUAL(set.ex[1]->stats.ops, 0);
      }
      R[nd - 1] = tu_read_store(solve ? tB : tA, n);
      ex_set_destroy(&set);
      tstore_destroy(tA);
      tstore_destroy(tB);
      tcache_destroy(cache);
      tu_ctx_done(ctx);
    }
    int64_t cols = jobs[k] == CHOL_SOLVE ? m : n;
    CU_ASSERT(memcmp(R[0], R[1], (size_t)(n * cols) * sizeof(double)) == 0);
    CU_ASSERT(ld[0] == ld[1]);
    free(R[0]);
    free(R[1]);
  }
  /* a unified and a strict device: one schedule cannot serve both */
  ooc_ctx_t *ctx = tu_ctx();
  tu_memsrc_t ma = {A, n};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL};
  tcache_t *cache = NULL;
  tstore_t *tA = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, (int64_t)1 << 30, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, &sa, NULL, &tA) == OOC_OK);
  ooc_exec_t *xs[2] = {NULL, NULL};
  CU_ASSERT_FATAL(ex_host_create(ctx, ooc_ops_cpu(), 1, 0, &xs[0]) == OOC_OK);
  CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_cpu(), 1, 0, 5, &xs[1]) == OOC_OK);
  chol_args_t a = {.A = tA, .stripe = 16, .ops = ooc_ops_cpu(), .job = CHOL_INVERT,
                   .exec = xs[0], .xs = xs, .nx = 2};
  CU_ASSERT_EQUAL(chol_run(ctx, &a, NULL, NULL, NULL), OOC_ERR_ARG);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "devices of one kind") != NULL);
  ex_destroy(xs[1]);
  ex_destroy(xs[0]);
  tstore_destroy(tA);
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

/* ooc_invert of in into out on --device cpu with --devices list, tile 20, --stripe 60 (the
 * pipeline tests below); a failure's message goes to stderr. */
static ooc_status_t invert_on(const char *in, const char *out, int method, const char *list,
                              int64_t host_mem, ooc_report_t *r) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.method = method;
  o.devices = list;
  o.tile = 20;
  o.stripe = 60;
  o.host_mem = host_mem;
  o.force = 1;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, r);
  if (st != OOC_OK) fprintf(stderr, "\n  method %d --devices %s: %s\n", method, list,
                            ooc_ctx_error(ctx));
  tu_ctx_done(ctx);
  return st;
}

/* The pipeline (ooc_invert --method chol --device cpu): --devices "0,1" and "0,1,2" write the
 * same inverse, bit for bit, as "0" (the CPU path), with the same logdet and stripe, within
 * --host-mem; the report lists the devices, each busy. */
static void t_chol_pipeline(void) {
  const int64_t n = 170;
  double *A = make_spd(n, 86);
  tu_write_matrix(tu_path("mg_s.h5"), "A", n, n, A, 2);
  char sa[512], so[3][512];
  snprintf(sa, sizeof sa, "%s:/A", tu_path("mg_s.h5"));
  static const char *lists[] = {"0", "0,1", "0,1,2"};
  ooc_report_t r[3];
  for (int i = 0; i < 3; i++) {
    char name[64];
    snprintf(name, sizeof name, "mg_si%d.h5", i);
    snprintf(so[i], sizeof so[i], "%s:/X", tu_path(name));
    CU_ASSERT_EQUAL(invert_on(sa, so[i], OOC_METHOD_CHOL, lists[i], 3 << 20, &r[i]), OOC_OK);
    CU_ASSERT(r[i].host_peak <= r[i].host_budget);
    CU_ASSERT(r[i].stripe < n); /* out of core: the sweep spreads */
    CU_ASSERT_STRING_EQUAL(r[i].method, "chol");
    CU_ASSERT_EQUAL(r[i].ndevices, i == 0 ? 0 : i + 1);
    for (int d = 0; d < r[i].ndevices; d++) {
      CU_ASSERT_EQUAL(r[i].device_id[d], d);
      CU_ASSERT(r[i].device_busy[d] > 0);
    }
  }
  int64_t rr, cc;
  double *X0 = tu_read_matrix(so[0], &rr, &cc);
  CU_ASSERT_FATAL(X0 != NULL);
  CU_ASSERT(tu_inverse_ratio(n, A, X0, DBL_EPSILON / 2) < 30);
  for (int i = 1; i < 3; i++) {
    double *X = tu_read_matrix(so[i], &rr, &cc);
    int same = X && memcmp(X, X0, (size_t)(n * n) * sizeof *X) == 0;
    CU_ASSERT(same);
    CU_ASSERT(r[i].logdet == r[0].logdet);
    CU_ASSERT_EQUAL(r[i].stripe, r[0].stripe);
    if (!same || r[i].logdet != r[0].logdet)
      fprintf(stderr, "\n  chol in the pipeline over %d devices: %s result, logdet %.17g vs "
              "%.17g\n", i + 1, same ? "the same" : "another", r[i].logdet, r[0].logdet);
    free(X);
  }
  free(X0);
  free(A);
}

/* ---- the product over several devices --------------------------------------------------------- */

/* C = alpha A B + beta C0 (A m x k, B k x n) through tile stores with a cache of cap bytes, on
 * nd devices (0: gemm_run's own host executor, the pipeline's CPU path); kind K_HOST: unified
 * host executors (one slot, one C buffer each), K_STRICT: strict ones (three queues, three slots,
 * two C buffers). Returns C (m x n) or NULL; *over: the peak above the cache and the buffers. */
static double *gemm_once(const double *A, const double *B, const double *C0, int64_t m,
                         int64_t n, int64_t k, int64_t b, int64_t blk, int64_t kblk, double beta,
                         int64_t cap, int nd, int kind, int64_t *over) {
  ooc_ctx_t *ctx = tu_ctx();
  tu_memsrc_t ma = {A, m}, mb = {B, k}, mc = {C0, m};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL},
               sc = {&mc, tu_mem_read, NULL, NULL};
  tu_spill_t la = {ctx, "mg", NULL, 0}, lb = {ctx, "mg", NULL, 0}, lc = {ctx, "mg", NULL, 0};
  ooc_spill_ops_t pa = {&la, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pb = {&lb, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pc = {&lc, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  tcache_t *cache = NULL;
  tstore_t *tA = NULL, *tB = NULL, *tC = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, k, b, &sa, &pa, &tA) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, k, n, b, &sb, &pb, &tB) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, n, b, beta != 0 ? &sc : NULL, &pc, &tC) ==
                  OOC_OK);
  int64_t base = ctx->host_bytes;
  ooc_ctx_reset_peak(ctx);
  int64_t s = gemm_block(b, blk), sk = gemm_block(b, kblk);
  int64_t MB = ooc_min64(s, m), NB = ooc_min64(s, n), KB = ooc_min64(sk, k);
  int nslots = kind == K_STRICT ? 3 : 1, ncblk = kind == K_STRICT ? 2 : 1;
  ex_set_t set;
  ex_set_init(&set);
  gemm_dev_t *devs[EX_MAX_DEVICES] = {NULL};
  if (nd > 0)
    CU_ASSERT_FATAL(ex_set_host(ctx, ooc_ops_cpu(), nd, NULL, kind == K_STRICT ? 3 : 1, 0,
                                kind == K_STRICT, 20, &set) == OOC_OK);
  for (int d = 0; d < nd; d++)
    CU_ASSERT_FATAL(gemm_dev_create(set.ex[d], MB, NB, KB, nslots, ncblk, &devs[d]) == OOC_OK);
  gemm_args_t a = {.A = tA, .B = tB, .C = tC, .alpha = 0.75, .beta = beta, .ops = ooc_ops_cpu(),
                   .block = blk, .kblock = kblk, .dev = devs[0], .devs = devs, .ndev = nd,
                   /* one strict device would cut its first and last panels into pieces (the
                    * ends, oocgemm.h): OpenBLAS then rounds some elements differently (found
                    * here: 200 x 60 x 310, tile 20, panels of 60), which is not what this
                    * suite tests; several devices do not use the ends */
                   .ends_off = GEMM_END_FIRST | GEMM_END_LAST};
  gemm_stats_t gs = {0};
  ooc_status_t st = gemm_run(ctx, &a, &gs);
  CU_ASSERT_EQUAL(st, OOC_OK);
  if (st != OOC_OK) fprintf(stderr, "\n  gemm nd=%d kind=%d: %s\n", nd, kind, ooc_ctx_error(ctx));
  for (int d = 0; d < nd; d++) CU_ASSERT_EQUAL(gemm_dev_destroy(devs[d]), OOC_OK);
  ex_set_destroy(&set);
  /* each device: its staging (and, strict, as much device memory), its executor and events */
  int64_t per = 8 * (ncblk * MB * NB + nslots * (MB * KB + KB * NB));
  int64_t ws = nd == 0 ? gemm_workspace_bytes(m, n, k, b, s)
                       : nd * ((kind == K_STRICT ? 2 : 1) * per + ex_host_bytes(3) + 64 * 128 +
                               (int64_t)sizeof(void *) * 512);
  *over = ooc_ctx_host_peak(ctx) - base - cap - ws;
  double *R = st == OOC_OK ? tu_read_store(tC, m) : NULL;
  tstore_destroy(tA);
  tstore_destroy(tB);
  tstore_destroy(tC);
  tcache_destroy(cache);
  scratch_close(la.s);
  scratch_close(lb.s);
  scratch_close(lc.s);
  tu_ctx_done(ctx);
  return R;
}

static void gcase(int64_t m, int64_t n, int64_t k, int64_t b, int64_t blk, int64_t kblk,
                  double beta, int64_t cap) {
  double *A = tu_rand_matrix(m, k, 5), *B = tu_rand_matrix(k, n, 6), *C0 = tu_rand_matrix(m, n, 7);
  int64_t over = 0;
  double *R0 = gemm_once(A, B, C0, m, n, k, b, blk, kblk, beta, cap, 0, K_HOST, &over);
  CU_ASSERT_FATAL(R0 != NULL);
  int bad = 0;
  for (int kind = K_HOST; kind <= K_STRICT; kind++)
    for (int nd = 1; nd <= 3; nd++) {
      double *R = gemm_once(A, B, C0, m, n, k, b, blk, kblk, beta, cap, nd, kind, &over);
      int same = R && memcmp(R, R0, (size_t)(m * n) * sizeof *R) == 0;
      CU_ASSERT(same);
      CU_ASSERT(over <= 0);
      if ((!same || over > 0) && bad++ < 4)
        fprintf(stderr, "\n  gemm %lldx%lldx%lld b=%lld s=%lld kb=%lld beta=%g cap=%lld %s nd=%d:"
                " %s, peak over the plan by %lld\n", (long long)m, (long long)n, (long long)k,
                (long long)b, (long long)blk, (long long)kblk, beta, (long long)cap,
                kind == K_STRICT ? "strict" : "host", nd, same ? "same" : "DIFFERENT",
                (long long)over);
      free(R);
    }
  free(R0);
  free(A);
  free(B);
  free(C0);
}

static void t_gemm(void) {
  const int64_t big = (int64_t)1 << 30;
  gcase(150, 170, 130, 16, 48, 32, 0.0, big);   /* 16 blocks, 5 panels each, uneven edges */
  gcase(150, 170, 130, 16, 48, 32, 0.5, big);   /* C0 read */
  gcase(64, 64, 64, 16, 64, 64, 0.0, big);      /* one block: only device 0 works */
  gcase(100, 90, 0, 10, 30, 30, 2.0, big);      /* k = 0: C = beta C0 */
  gcase(150, 170, 130, 16, 48, 32, 0.5, 48 << 10); /* spilling (the three are 530 KB) */
  gcase(200, 60, 310, 20, 40, 60, 1.0, 64 << 10);
}

/* The pipeline (ooc_gemm, --device cpu): --devices "0,1" and "0,1,2" run the product on that
 * many host devices within --host-mem (the plan gives each device its block buffers), the
 * report lists them with their flops (2 m n k in all) and busy seconds, the probe check passes;
 * a bad list is refused before any work. */
static void t_gemm_pipeline(void) {
  const int64_t m = 260, k = 230, n = 250;
  double *A = tu_rand_matrix(m, k, 11), *B = tu_rand_matrix(k, n, 12);
  tu_write_matrix(tu_path("mg_a.h5"), "A", m, k, A, 2);
  tu_write_matrix(tu_path("mg_b.h5"), "B", k, n, B, 2);
  char sa[512], sb[512], so[512];
  snprintf(sa, sizeof sa, "%s:/A", tu_path("mg_a.h5"));
  snprintf(sb, sizeof sb, "%s:/B", tu_path("mg_b.h5"));
  snprintf(so, sizeof so, "%s:/C", tu_path("mg_c.h5"));
  static const char *lists[] = {"0", "0,1", "0,1,2"};
  for (int i = 0; i < 3; i++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o;
    ooc_opts_default(&o);
    o.device = OOC_DEVICE_CPU;
    o.devices = lists[i];
    o.tile = 20;
    o.host_mem = 3 << 20; /* the three are 1.5 MB: several blocks, spilling */
    o.force = 1;
    ooc_report_t r;
    ooc_status_t st = ooc_gemm(ctx, sa, sb, NULL, so, 1.0, 0.0, &o, &r);
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK) fprintf(stderr, "\n  --devices %s: %s\n", lists[i], ooc_ctx_error(ctx));
    CU_ASSERT(r.host_peak <= r.host_budget);
    CU_ASSERT(r.residual < 30);
    int nd = i + 1;
    CU_ASSERT_EQUAL(r.ndevices, nd == 1 ? 0 : nd); /* one CPU device: gemm_run's own executor */
    double fl = 0;
    for (int d = 0; d < r.ndevices; d++) {
      CU_ASSERT_EQUAL(r.device_id[d], d);
      CU_ASSERT(r.device_busy[d] > 0);
      fl += r.device_flops[d];
    }
    if (nd > 1) CU_ASSERT_DOUBLE_EQUAL(fl, 2.0 * m * n * k, 1);
    tu_ctx_done(ctx);
  }
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.devices = "0,x";
  o.force = 1;
  ooc_report_t r;
  CU_ASSERT_EQUAL(ooc_gemm(ctx, sa, sb, NULL, so, 1.0, 0.0, &o, &r), OOC_ERR_ARG);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "--devices '0,x'") != NULL);
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

/* newton and hyper7 in the pipeline (ooc_invert): their products over 1-3 host devices, at one
 * GEMM block (--stripe caps it, so the plan's per-device buffers do not change it): the same
 * iterations, residuals and result, bit for bit, within --host-mem. */
static void t_iter_pipeline(void) {
  const int64_t n = 180;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 21);
  tu_write_matrix(tu_path("mg_i.h5"), "A", n, n, A, 2);
  char sa[512], so[3][512];
  snprintf(sa, sizeof sa, "%s:/A", tu_path("mg_i.h5"));
  static const char *lists[] = {"0", "0,1", "0,1,2"};
  for (int meth = 0; meth < 2; meth++) {
    ooc_report_t r[3];
    for (int i = 0; i < 3; i++) {
      char name[64];
      snprintf(name, sizeof name, "mg_v%d.h5", i);
      snprintf(so[i], sizeof so[i], "%s:/V", tu_path(name));
      int method = meth ? OOC_METHOD_HYPER7 : OOC_METHOD_NEWTON;
      CU_ASSERT_EQUAL(invert_on(sa, so[i], method, lists[i], 8 << 20, &r[i]), OOC_OK);
      CU_ASSERT(r[i].host_peak <= r[i].host_budget);
      CU_ASSERT_EQUAL(r[i].stripe, 60);
      CU_ASSERT_EQUAL(r[i].ndevices, i == 0 ? 0 : i + 1);
    }
    int64_t rr, cc;
    double *V0 = tu_read_matrix(so[0], &rr, &cc);
    for (int i = 1; i < 3; i++) {
      CU_ASSERT_EQUAL(r[i].iterations, r[0].iterations);
      int same_res = 1;
      for (int k = 0; k <= r[0].iterations && k < OOC_MAX_ITER_REPORT; k++)
        same_res &= r[i].iter_residual[k] == r[0].iter_residual[k];
      CU_ASSERT(same_res);
      double *V = tu_read_matrix(so[i], &rr, &cc);
      int same = V && V0 && memcmp(V, V0, (size_t)(n * n) * sizeof *V) == 0;
      CU_ASSERT(same);
      if (!same || !same_res)
        fprintf(stderr, "\n  %s over %d devices: %s result, %s residuals\n",
                meth ? "hyper7" : "newton", i + 1, same ? "the same" : "another",
                same_res ? "the same" : "other");
      free(V);
    }
    free(V0);
  }
  free(A);
}

/* ---- several GPUs (a CUDA build on a host with two or more) ------------------------------------
 * gj_x inverts one random matrix on GPU 0 alone and on GPUs 0 and 1 (then 0-2, 0-3 where they
 * exist), each device with --gpu-mem MGPU_GPUMEM (default 1G: several steps), n = MGPU_N
 * (default 4096), tile MGPU_TILE (default 512): the same status and pivots as one device, the
 * results within 1e-8 of one device's (max |diff| / max |X|), one device's LAPACK inverse
 * ratio < 30, and the times and scaling printed as "MGPU ..." lines for tools/gpu_mgpu.sh. Devices
 * of one model give bit-identical results; that is printed, not asserted (cuBLAS may pick other
 * algorithms on other models). Skipped (a line saying so) with fewer than two GPUs. */
static int cuda_devices(void) {
  int have = 0;
#ifdef OOC_HAVE_CUDA
  for (int d = 0; d < 8; d++) {
    ooc_ctx_t *ctx = tu_ctx();
    ex_cuda_config_t c = {.device = d, .nqueues = 1};
    ooc_exec_t *x = NULL;
    int ok = ex_cuda_create(ctx, &c, &x) == OOC_OK;
    ex_destroy(x);
    tu_ctx_done(ctx);
    if (!ok) break;
    have++;
  }
#endif
  return have;
}

static int64_t env_size(const char *name, int64_t dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  int64_t x = ooc_parse_size(v);
  return x > 0 ? x : dflt;
}

/* The GPU runs' sizes (MGPU_N, MGPU_TILE, MGPU_GPUMEM into g_gpu_mem) and the GPUs there are;
 * fewer than two: the run is skipped, and says so. */
static int gpu_sizes(int64_t *n, int64_t *b) {
  int have = cuda_devices();
  if (have < 2) fprintf(stderr, "[%d GPU(s): the multi-GPU run is skipped] ", have);
  *n = env_size("MGPU_N", 4096);
  *b = env_size("MGPU_TILE", 512);
  g_gpu_mem = env_size("MGPU_GPUMEM", (int64_t)1 << 30);
  return have;
}

static void t_cuda_devices(void) {
  int64_t n, b;
  int have = gpu_sizes(&n, &b);
  if (have < 2) return;
  double *A = make(GEN_RANDOM, n, n, 91);
  grun_t g[4];
  int nds[4] = {1, 2, 3, 4}, runs = have >= 4 ? 4 : have >= 3 ? 3 : 2;
  for (int k = 0; k < runs; k++) {
    gj_once(A, n, NULL, 0, b, n, 0, (int64_t)1 << 40, nds[k], K_CUDA, &g[k]);
    CU_ASSERT_EQUAL(g[k].st, OOC_OK);
    if (g[k].st != OOC_OK) fprintf(stderr, "\n  %d GPUs: %s\n", nds[k], g[k].msg);
  }
  /* the lines first (a timeout still shows them), then the one-device result's ratio */
  for (int k = 0; k < runs; k++) {
    if (!g[k].R) continue;
    int same_perm = memcmp(g[k].perm, g[0].perm, (size_t)n * sizeof *g[0].perm) == 0;
    double dmax = 0, xmax = 0;
    for (int64_t i = 0; i < n * n; i++) {
      dmax = fmax(dmax, fabs(g[k].R[i] - g[0].R[i]));
      xmax = fmax(xmax, fabs(g[0].R[i]));
    }
    CU_ASSERT(same_perm);
    CU_ASSERT(dmax <= 1e-8 * xmax);
    printf("MGPU gj n=%lld tile=%lld gpu_mem=%lld W=%lld steps=%lld devices=%d time %.3f s "
           "speedup %.2f bit-identical %s max|diff|/max|X| %.3g\n", (long long)n, (long long)b,
           (long long)g_gpu_mem, (long long)g[k].W, (long long)g[k].steps, nds[k], g[k].t_run,
           g[0].t_run / g[k].t_run, dmax == 0 && same_perm ? "yes" : "no",
           xmax > 0 ? dmax / xmax : 0);
    for (int d = 0; d < nds[k]; d++) {
      printf("MGPU   device %d: %.3g GB in, %.3g GB out, busy %.3f s (summed over 3 queues)\n", d,
             g[k].bin[d] / 1e9, g[k].bout[d] / 1e9, g[k].busy[d]);
      /* several devices: every one measured, within its three queues' share of the run */
      if (nds[k] > 1) CU_ASSERT(g[k].busy[d] > 0 && g[k].busy[d] <= 3 * g[k].t_run);
    }
    fflush(stdout);
  }
  if (g[0].R) { /* LAPACK's ratio ||A X - I||_1 / (n ||A||_1 ||X||_1 eps), X = the store with
                   column c of A^-1 at perm[c]; the product by the cpu kernels (a loop would
                   take minutes at n = 8192) */
    double *X = malloc((size_t)(n * n) * sizeof *X), *R = malloc((size_t)(n * n) * sizeof *R);
    for (int64_t c = 0; c < n; c++)
      memcpy(X + c * n, g[0].R + g[0].perm[c] * n, (size_t)n * sizeof *X);
    for (int64_t i = 0; i < n * n; i++) R[i] = 0;
    for (int64_t i = 0; i < n; i++) R[i + i * n] = -1.0;
    ooc_ops_cpu()->gemm('N', 'N', n, n, n, 1.0, A, n, X, n, 1.0, R, n);
    double r = 0, a = 0, x = 0;
    for (int64_t j = 0; j < n; j++) {
      double sr = 0, sa = 0, sx = 0;
      for (int64_t i = 0; i < n; i++) {
        sr += fabs(R[i + j * n]);
        sa += fabs(A[i + j * n]);
        sx += fabs(X[i + j * n]);
      }
      r = fmax(r, sr);
      a = fmax(a, sa);
      x = fmax(x, sx);
    }
    double ratio = r / ((double)n * a * x * (DBL_EPSILON / 2));
    CU_ASSERT(ratio < 30);
    printf("MGPU gj n=%lld inverse ratio (1 GPU) %.3g\n", (long long)n, ratio);
    free(X);
    free(R);
  }
  fflush(stdout);
  for (int k = 0; k < runs; k++) {
    free(g[k].R);
    free(g[k].perm);
  }
  free(A);
}

/* The Cholesky inverse out of core on GPU 0 and on GPUs 0,1 (0-2 where there are three): the
 * same SPD matrix (n = MGPU_N, tile MGPU_TILE, MGPU_GPUMEM each), the stripe a quarter of n so
 * that the sweep spreads; "MGPU chol" lines with the times, whether the store and the logdet
 * are bit-identical to one GPU's, each device's busy seconds. */
static void t_cuda_chol_devices(void) {
  int64_t n, b;
  int have = gpu_sizes(&n, &b);
  if (have < 2) return;
  double *A = make_spd(n, 93);
  crun_t g[3];
  int runs = have >= 3 ? 3 : 2;
  for (int k = 0; k < runs; k++) {
    chol_once(A, n, b, ooc_max64(b, n / 4), 1, (int64_t)1 << 40, k + 1, K_CUDA, &g[k]);
    CU_ASSERT_EQUAL(g[k].st, OOC_OK);
    if (g[k].st != OOC_OK) fprintf(stderr, "\n  chol on %d GPUs: %s\n", k + 1, g[k].msg);
  }
  for (int k = 0; k < runs; k++) {
    if (!g[k].R || !g[0].R) continue;
    double dmax = 0, xmax = 0;
    for (int64_t i = 0; i < n * n; i++) {
      dmax = fmax(dmax, fabs(g[k].R[i] - g[0].R[i]));
      xmax = fmax(xmax, fabs(g[0].R[i]));
    }
    CU_ASSERT(dmax <= 1e-8 * xmax);
    CU_ASSERT(fabs(g[k].logdet - g[0].logdet) <= 1e-10 * fabs(g[0].logdet));
    CU_ASSERT(g[k].steps > 1); /* out of core: the sweep spread */
    printf("MGPU chol n=%lld tile=%lld gpu_mem=%lld W=%lld steps=%lld devices=%d time %.3f s "
           "speedup %.2f bit-identical %s max|diff|/max|X| %.3g logdet %.17g\n", (long long)n,
           (long long)b, (long long)g_gpu_mem, (long long)g[k].W, (long long)g[k].steps, k + 1,
           g[k].t_run, g[0].t_run / g[k].t_run,
           dmax == 0 && g[k].logdet == g[0].logdet ? "yes" : "no", xmax > 0 ? dmax / xmax : 0,
           g[k].logdet);
    for (int d = 0; d <= k && k > 0; d++) {
      printf("MGPU   device %d: busy %.3f s (summed over 3 queues)\n", d, g[k].busy[d]);
      CU_ASSERT(g[k].busy[d] > 0 && g[k].busy[d] <= 3 * g[k].t_run);
    }
  }
  fflush(stdout);
  for (int k = 0; k < runs; k++) free(g[k].R);
  free(A);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"the device list", t_parse},
      {"ring_run_multi: round robin over 1-3 executors, host and strict", t_ring_multi},
      {"gj over 1-3 host devices in core: bit-identical, within the plan", t_gj_in_core},
      {"gj over 1-3 host devices out of core: bit-identical, within the plan", t_gj_out_of_core},
      {"gj over 1-3 host devices, singular: the same info and message", t_gj_singular},
      {"chol inverse over 1-3 host devices in core: bit-identical, within the plan",
       t_chol_in_core},
      {"chol inverse over 1-3 host devices out of core: bit-identical, within the plan",
       t_chol_out_of_core},
      {"chol inverse over 1-3 host devices, not SPD: the same info and message", t_chol_not_spd},
      {"gj direct moves on 1-2 strict devices: bit-identical to the slot, all returned",
       t_gj_direct},
      {"chol inverse direct moves on 1-2 strict devices: bit-identical to the slot, all returned",
       t_chol_direct},
      {"direct moves failing mid-sweep (scratch I/O): nothing left lent or registered",
       t_direct_faults},
      {"chol factor, solve, in-core inverse: the first device alone; mixed kinds refused",
       t_chol_first_only},
      {"chol inverse in the pipeline over 1-3 host devices (ooc_invert --devices)",
       t_chol_pipeline},
      {"the product over 1-3 host devices: bit-identical, within the plan", t_gemm},
      {"the product in the pipeline over 1-3 host devices (ooc_gemm --devices)", t_gemm_pipeline},
      {"newton and hyper7 in the pipeline over 1-3 host devices: bit-identical", t_iter_pipeline},
      {"gj over several GPUs (a GPU host with two or more)", t_cuda_devices},
      {"the Cholesky inverse over several GPUs (a GPU host with two or more)",
       t_cuda_chol_devices},
      {NULL, NULL}};
  return tu_run("mgpu", tests);
}
