/*
 * test_gemm.c: the out-of-core product (src/solvers/oocgemm.c) on tile stores built directly
 * (sources in memory, spills to the real scratch store in tu_tmpdir()).
 * - C = alpha A B + beta C against the reference kernel in core, elementwise within
 *   4 k eps (|alpha| |A||B| + |beta||C0|): shapes not multiples of the tile (m, n, k from 1 to 130,
 *   k = 0), tiles 7/16/64, blocks of one tile, several tiles and the whole matrix, ref and cpu
 *   backends, alpha/beta in {(1, 0), (-2.5, 0.5), (0.5, 1), (1.5, 0) over a NaN-filled C}
 *   (beta = 0 must not read C), caches large enough for everything and far too small (spills
 *   happen, the host peak stays within cache + workspace + bookkeeping);
 * - the epilogue sees every element of C exactly once, tile-aligned blocks; with epilogue threads
 *   every element once in column ranges;
 * - C aliasing A is refused;
 * - the probe check passes a right product (ratio < 1) and fails one entry off by 1e-6 relative,
 *   a NaN, and a wrong beta;
 * - the product on an executor (exec.h), through the strict host executor: separate device
 *   buffers and late operations on three queues, as on a GPU, so a schedule bug gives a wrong
 *   result; it replaces the host stand-in that checked the old hook protocol. Formerly:
 *   protocol (begin/end/fetch per C buffer, a slot refilled only after slot_wait, buffers never
 *   overrun) and is asynchronous like a device (a load is read late, a block comes back only
 *   when fetched): one and two C buffers, one and three slots, beta zero or not: same result as
 *   the reference, the epilogue sees every element once (slices with two buffers), blocks and
 *   panels bounded by the executor's buffers; while the stand-in says a slot is busy, C's new
 *   tile buffers are prefilled (within the budget), and a second product into the same C (its
 *   tiles cached) prefills nothing;
 * - the schedule's ends (oocgemm.h GEMM_END_*), each on and off and the executor without the
 *   hooks, on shapes whose first block has more tiles than pieces, fewer row tiles than pieces,
 *   fewer column tiles than pieces: same result, the first panels went up in pieces and the last
 *   blocks' last panels by column groups exactly where they apply; the stand-in counts misuse
 *   (a part before its upload, after its columns went back, ...) and a product missing one part
 *   is caught by the comparison;
 * - the cost model (gemm_model.h): device time = flops / rate, total >= device and host time,
 *   the same bytes up and flops as gemm_run drives through the stand-in (it replays the same
 *   panels and pieces), the ends shorten head and tail at n = 49152, and the plan there (block
 *   16384, 2 buffers, 3 slots) beats the previous one; plans fit their budget.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/gemm_model.h"
#include "solvers/oocgemm.h"
#include "exec/exec.h"
#include "testutil.h"

#define EPS (DBL_EPSILON / 2)
#define SLACK (64 * 1024)

static double *rnd(int64_t count, uint64_t seed) {
  double *x = malloc((size_t)(count + 1) * sizeof *x);
  uint64_t s = 0x9E3779B97F4A7C15ULL * (seed + 1);
  for (int64_t i = 0; i < count; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x[i] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  return x;
}

typedef struct {
  ooc_status_t st;
  int64_t spills, peak, budget;
  double maxerr; /* max |C - ref| / bound */
} outcome_t;

/* Run one product and compare with the in-core reference. */
static outcome_t run(const ooc_ops_t *ops, int64_t m, int64_t n, int64_t k, int64_t b, int64_t s,
                     int64_t cap, double alpha, double beta, int nan_c) {
  outcome_t r = {0};
  ooc_ctx_t *ctx = tu_ctx();
  double *A = rnd(m * k, 1), *B = rnd(k * n, 2), *C0 = rnd(m * n, 3);
  if (nan_c)
    for (int64_t i = 0; i < m * n; i++) C0[i] = NAN;
  tu_memsrc_t ma = {A, m}, mb = {B, k}, mc = {C0, m};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL},
               sc = {&mc, tu_mem_read, NULL, NULL};
  tu_spill_t la = {ctx, "gA", NULL, 0}, lb = {ctx, "gB", NULL, 0}, lc = {ctx, "gC", NULL, 0};
  ooc_spill_ops_t pa = {&la, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pb = {&lb, tu_sp_open, tu_sp_put, tu_sp_get, 1},
                  pc = {&lc, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  tcache_t *cache = NULL;
  tstore_t *TA = NULL, *TB = NULL, *TC = NULL;
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  /* A and B are put tile by tile (as the job's loader does), so a small cache spills them and
   * the product reads them back from scratch; C0 comes from its source */
  (void)sa;
  (void)sb;
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, k, b, NULL, &pa, &TA) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, k, n, b, NULL, &pb, &TB) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, n, b, &sc, &pc, &TC) == OOC_OK);
  for (int q = 0; q < 2; q++) {
    tstore_t *T = q ? TB : TA;
    const double *M = q ? B : A;
    part_t rp = ts_rows(T), cp = ts_cols(T);
    for (int64_t tj = 0; tj < cp.count; tj++)
      for (int64_t ti = 0; ti < rp.count; ti++)
        CU_ASSERT_FATAL(ts_put(T, ti, tj, M + part_start(rp, ti) + part_start(cp, tj) * rp.n,
                               rp.n) == OOC_OK);
  }
  r.budget = cap + gemm_workspace_bytes(m, n, k, b, s) + tstore_overhead_bytes(m, k, b) +
             tstore_overhead_bytes(k, n, b) + tstore_overhead_bytes(m, n, b) + SLACK;
  ooc_ctx_reset_peak(ctx);
  gemm_args_t g = {.A = TA, .B = TB, .C = TC, .alpha = alpha, .beta = beta, .ops = ops, .block = s};
  gemm_stats_t gs = {0};
  r.st = gemm_run(ctx, &g, &gs);
  r.peak = ooc_ctx_host_peak(ctx);
  r.spills = ts_stats(TA)->spills + ts_stats(TB)->spills + ts_stats(TC)->spills;
  if (ts_stats(TA)->bytes_unspilled + ts_stats(TB)->bytes_unspilled > 0) r.spills |= 1 << 30;
  if (r.st != OOC_OK) fprintf(stderr, "\n  gemm_run: %s\n", ooc_ctx_error(ctx));
  if (r.st == OOC_OK) {
    CU_ASSERT(fabs(gs.flops - 2.0 * m * n * k) < 0.5);
    double *C = malloc((size_t)(m * n + 1) * sizeof *C);
    part_t rp = ts_rows(TC), cp = ts_cols(TC);
    for (int64_t tj = 0; tj < cp.count; tj++)
      for (int64_t ti = 0; ti < rp.count; ti++)
        CU_ASSERT(ts_read(TC, ti, tj, C + part_start(rp, ti) + part_start(cp, tj) * m, m) ==
                  OOC_OK);
    /* reference and bound: |alpha| |A||B| + |beta||C0| */
    double *R = malloc((size_t)(m * n + 1) * sizeof *R), *Bd = calloc((size_t)(m * n + 1), 8);
    double *AA = malloc((size_t)(m * k + 1) * 8), *BB = malloc((size_t)(k * n + 1) * 8);
    for (int64_t i = 0; i < m * k; i++) AA[i] = fabs(A[i]);
    for (int64_t i = 0; i < k * n; i++) BB[i] = fabs(B[i]);
    for (int64_t i = 0; i < m * n; i++) R[i] = beta != 0 ? C0[i] : 0.0;
    ooc_ops_ref()->gemm('N', 'N', m, n, k, alpha, A, m, B, k, beta != 0 ? beta : 0.0, R, m);
    ooc_ops_ref()->gemm('N', 'N', m, n, k, fabs(alpha), AA, m, BB, k, 0.0, Bd, m);
    r.maxerr = 0;
    for (int64_t i = 0; i < m * n; i++) {
      double bound = 4 * (double)(k + 2) * EPS * (Bd[i] + (beta != 0 ? fabs(beta * C0[i]) : 0)) +
                     DBL_MIN;
      double e = fabs(C[i] - R[i]) / bound;
      if (!(e <= r.maxerr)) r.maxerr = isnan(e) ? INFINITY : e;
    }
    free(C);
    free(R);
    free(Bd);
    free(AA);
    free(BB);
  }
  tstore_destroy(TA);
  tstore_destroy(TB);
  tstore_destroy(TC);
  scratch_close(la.s);
  scratch_close(lb.s);
  scratch_close(lc.s);
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  free(A);
  free(B);
  free(C0);
  return r;
}

static void t_against_ref(void) {
  static const int64_t shapes[][3] = {{1, 1, 1}, {37, 53, 29}, {100, 70, 130}, {130, 100, 1},
                                      {64, 64, 64}, {20, 30, 0}};
  static const double ab[][2] = {{1, 0}, {-2.5, 0.5}, {0.5, 1}};
  static const int64_t tiles[] = {7, 16, 64};
  int cases = 0, spilled = 0;
  for (int be = 0; be < 2; be++) {
    const ooc_ops_t *ops = be ? ooc_ops_cpu() : ooc_ops_ref();
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
      for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++)
        for (int blk = 0; blk < 3; blk++)
          for (size_t q = 0; q < sizeof ab / sizeof ab[0]; q++)
            for (int small = 0; small < 2; small++) {
              int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2], b = tiles[t];
              int64_t s = blk == 0 ? b : blk == 1 ? 3 * b : 1000;
              int64_t cap = small ? 3 * (int64_t)(b * b * 8 + 64) : (int64_t)64 << 20;
              outcome_t r = run(ops, m, n, k, b, s, cap, ab[q][0], ab[q][1], 0);
              cases++;
              CU_ASSERT(r.st == OOC_OK);
              int ok = r.st == OOC_OK && r.maxerr <= 1.0;
              CU_ASSERT(ok);
              if (!ok)
                fprintf(stderr, "\n  %s m %lld n %lld k %lld b %lld s %lld a %g b %g small %d: "
                        "err/bound %g\n", ops->name, (long long)m, (long long)n, (long long)k,
                        (long long)b, (long long)s, ab[q][0], ab[q][1], small, r.maxerr);
              CU_ASSERT(r.peak <= r.budget);
              if (r.peak > r.budget)
                fprintf(stderr, "\n  peak %lld > budget %lld\n", (long long)r.peak,
                        (long long)r.budget);
              if (small && m * k > 4 * b * b) { /* A alone overflows the cache */
                CU_ASSERT(r.spills & (1 << 30)); /* inputs were read back from scratch */
                spilled += r.spills > 0;
              }
            }
  }
  CU_ASSERT(spilled > 20);
  fprintf(stderr, "[%d products, %d out of core] ", cases, spilled);
}

/* beta = 0: C's old content (NaN here) must never be read */
static void t_beta_zero_ignores_c(void) {
  for (int small = 0; small < 2; small++) {
    outcome_t r = run(ooc_ops_cpu(), 50, 40, 30, 16, 16, small ? 4 * 16 * 16 * 8 : 1 << 24, 1.5,
                      0.0, 1);
    CU_ASSERT(r.st == OOC_OK);
    CU_ASSERT(r.maxerr <= 1.0);
  }
}

/* The epilogue covers C exactly once, in tile-aligned blocks. */
typedef struct {
  int64_t m, n, b;
  int *seen;
  int bad;
  int any_column; /* epilogue threads: column ranges need not be tile-aligned */
} cover_t;

static ooc_status_t cover(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *blk,
                          int64_t ld) {
  cover_t *c = user;
  (void)blk;
  if (r0 % c->b || (!c->any_column && c0 % c->b) || ld < nr || r0 + nr > c->m || c0 + nc > c->n)
    c->bad++;
  for (int64_t j = 0; j < nc; j++)
    for (int64_t i = 0; i < nr; i++) c->seen[(r0 + i) + (c0 + j) * c->m]++;
  return OOC_OK;
}

static void t_epilogue_cover(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t m = 45, n = 61, k = 33, b = 8;
  double *A = rnd(m * k, 4), *B = rnd(k * n, 5);
  tu_memsrc_t ma = {A, m}, mb = {B, k};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL};
  tcache_t *cache = NULL;
  tstore_t *TA, *TB, *TC, *TD;
  CU_ASSERT_FATAL(tcache_create(ctx, 1 << 24, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, k, b, &sa, NULL, &TA) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, k, n, b, &sb, NULL, &TB) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, m, n, b, NULL, NULL, &TC) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, k, n, b, NULL, NULL, &TD) == OOC_OK);
  cover_t cv = {m, n, b, calloc((size_t)(m * n), sizeof(int)), 0, 0};
  gemm_args_t g = {.A = TA, .B = TB, .C = TC, .alpha = 1, .ops = ooc_ops_cpu(), .block = 2 * b,
                   .epilogue = cover, .user = &cv};
  gemm_stats_t gs = {0};
  CU_ASSERT(gemm_run(ctx, &g, &gs) == OOC_OK);
  int once = 1;
  for (int64_t i = 0; i < m * n; i++) once &= cv.seen[i] == 1;
  CU_ASSERT(once);
  CU_ASSERT(cv.bad == 0);
  CU_ASSERT(gs.blocks == ooc_cdiv64(m, 2 * b) * ooc_cdiv64(n, 2 * b));
  /* epilogue threads: blocks of 600 x 600 split over 4 threads, still every element once */
  {
    int64_t m2 = 1300, n2 = 1100, k2 = 3, b2 = 100;
    double *A2 = rnd(m2 * k2, 6), *B2 = rnd(k2 * n2, 7);
    tu_memsrc_t ma2 = {A2, m2}, mb2 = {B2, k2};
    ooc_source_t sa2 = {&ma2, tu_mem_read, NULL, NULL}, sb2 = {&mb2, tu_mem_read, NULL, NULL};
    tstore_t *T2[3];
    CU_ASSERT_FATAL(tstore_create(ctx, cache, m2, k2, b2, &sa2, NULL, &T2[0]) == OOC_OK);
    CU_ASSERT_FATAL(tstore_create(ctx, cache, k2, n2, b2, &sb2, NULL, &T2[1]) == OOC_OK);
    CU_ASSERT_FATAL(tstore_create(ctx, cache, m2, n2, b2, NULL, NULL, &T2[2]) == OOC_OK);
    cover_t c2 = {m2, n2, b2, calloc((size_t)(m2 * n2), sizeof(int)), 0, 1};
    gemm_args_t g2 = {.A = T2[0], .B = T2[1], .C = T2[2], .alpha = 1, .ops = ooc_ops_cpu(),
                      .block = 600, .epilogue = cover, .user = &c2, .epilogue_threads = 4};
    CU_ASSERT(gemm_run(ctx, &g2, NULL) == OOC_OK);
    int once2 = 1;
    for (int64_t i = 0; i < m2 * n2; i++) once2 &= c2.seen[i] == 1;
    CU_ASSERT(once2 && c2.bad == 0);
    free(c2.seen);
    for (int q = 0; q < 3; q++) tstore_destroy(T2[q]);
    free(A2);
    free(B2);
  }
  /* aliasing and shape errors */
  gemm_args_t alias = {.A = TA, .B = TB, .C = TA, .alpha = 1, .ops = ooc_ops_cpu(), .block = b};
  CU_ASSERT(gemm_run(ctx, &alias, NULL) == OOC_ERR_INTERNAL);
  ooc_clear_error(ctx);
  gemm_args_t shape = {.A = TA, .B = TB, .C = TD, .alpha = 1, .ops = ooc_ops_cpu(), .block = b};
  CU_ASSERT(gemm_run(ctx, &shape, NULL) == OOC_ERR_INTERNAL);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "shapes") != NULL);
  free(cv.seen);
  tstore_destroy(TA);
  tstore_destroy(TB);
  tstore_destroy(TC);
  tstore_destroy(TD);
  tcache_destroy(cache);
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

static void t_block_sizes(void) {
  CU_ASSERT(gemm_block(64, 10) == 64);
  CU_ASSERT(gemm_block(64, 200) == 192);
  int64_t room = gemm_workspace_bytes(1000, 1000, 1000, 100, 400);
  CU_ASSERT(room >= 3 * 8 * 400 * 400); /* the three buffers, and the host executor */
  int64_t s = gemm_block_for(1000, 1000, 1000, 100, room);
  CU_ASSERT(s == 400);
  CU_ASSERT(gemm_block_for(1000, 1000, 1000, 100, room - 1) == 300);
  CU_ASSERT(gemm_block_for(1000, 1000, 1000, 100, 1000) == 0);
  CU_ASSERT(gemm_block_for(50, 50, 50, 16, (int64_t)1 << 30) == 64); /* whole matrix, rounded up */
}

/* The probe check accepts a right product and rejects wrong ones. */
static void t_probe_check(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t m = 90, n = 70, k = 110;
  double *A = rnd(m * k, 6), *B = rnd(k * n, 7), *C0 = rnd(m * n, 8);
  double *C = malloc((size_t)(m * n) * sizeof *C);
  double alpha = 1.25, beta = -0.75;
  memcpy(C, C0, (size_t)(m * n) * sizeof *C);
  ooc_ops_cpu()->gemm('N', 'N', m, n, k, alpha, A, m, B, k, beta, C, m);
  tu_memsrc_t ma = {A, m}, mb = {B, k}, mc0 = {C0, m}, mc = {C, m};
  ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL},
               s0 = {&mc0, tu_mem_read, NULL, NULL},
               sc = {&mc, tu_mem_read, NULL, NULL};
  double ratio = -1;
  for (int64_t mem = 4096; mem <= (1 << 22); mem *= 32) { /* strips of 1 column .. all */
    CU_ASSERT(gemm_check(ctx, ooc_ops_cpu(), m, n, k, &sa, &sb, &s0, &sc, alpha, beta, EPS, mem,
                         &ratio) == OOC_OK);
    CU_ASSERT(ratio >= 0 && ratio < 1);
  }
  CU_ASSERT(gemm_check(ctx, ooc_ops_cpu(), m, n, k, &sa, &sb, &s0, &sc, alpha, 0.5, EPS, 1 << 20,
                       &ratio) == OOC_OK);
  CU_ASSERT(ratio > 30); /* wrong beta */
  C[17 + 33 * m] *= 1 + 1e-6;
  CU_ASSERT(gemm_check(ctx, ooc_ops_cpu(), m, n, k, &sa, &sb, &s0, &sc, alpha, beta, EPS, 1 << 20,
                       &ratio) == OOC_OK);
  CU_ASSERT(ratio > 30);
  C[5] = NAN;
  CU_ASSERT(gemm_check(ctx, ooc_ops_cpu(), m, n, k, &sa, &sb, &s0, &sc, alpha, beta, EPS, 1 << 20,
                       &ratio) == OOC_OK);
  CU_ASSERT(isnan(ratio));
  tu_ctx_done(ctx);
  free(A);
  free(B);
  free(C0);
  free(C);
}

/* ---- the executor seam, with a host "device" that checks the protocol ---------------------- */

/* The schedule's ends (oocgemm.h GEMM_END_*) in t_executor_seam: 0 the executor has no hooks;
 * 1 all ends; 2 only the last (GEMM_END_FIRST off); 3 only the first. */
static int ends_of(int mode) {
  return mode == 0 ? 0 : mode == 1 ? GEMM_END_FIRST | GEMM_END_LAST
                     : mode == 2 ? GEMM_END_LAST : GEMM_END_FIRST;
}

/* The strict host executor (exec.h: separate device buffers, operations late on three queues
 * like a GPU's, so a schedule bug gives a wrong result) and the product's buffers on it. */
typedef struct strict {
  ooc_exec_t *e;
  gemm_dev_t *d;
} strict_t;

static strict_t strict_make(ooc_ctx_t *ctx, int nslots, int ncblk, int64_t MB, int64_t NB,
                            int64_t KB, int delay_us) {
  strict_t x = {0};
  CU_ASSERT_FATAL(ex_host_create_strict(ctx, ooc_ops_ref(), 3, 0, delay_us, &x.e) == OOC_OK);
  CU_ASSERT_FATAL(gemm_dev_create(x.e, MB, NB, KB, nslots, ncblk, &x.d) == OOC_OK);
  return x;
}

static void strict_done(strict_t *x) {
  CU_ASSERT(gemm_dev_destroy(x->d) == OOC_OK);
  CU_ASSERT(x->e->dev_bytes == 0);
  ex_destroy(x->e);
}

static void t_executor_seam(void) {
  static const int64_t shapes[][7] = {/* m n k b MB NB KB */
                                      {100, 70, 130, 16, 48, 40, 16}, {37, 53, 29, 7, 21, 21, 14},
                                      {64, 64, 1, 16, 64, 64, 16}, {50, 30, 0, 8, 16, 16, 8},
                                      {100, 90, 75, 10, 100, 90, 20}, {75, 75, 75, 10, 75, 35, 30},
                                      /* first block of 12 x 12 tiles (more than GEMM_MAX_PIECES,
                                       * the last row tile 1 row), blocks of 12, 12, 9 columns */
                                      {45, 130, 50, 4, 48, 48, 8},
                                      /* first block of 2 x 8 tiles: pieces 2..7 have no rows */
                                      {9, 200, 33, 8, 64, 64, 8},
                                      /* 8 x 2 tiles: pieces without columns; one block column */
                                      {61, 11, 17, 8, 64, 64, 8}};
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
  for (int q = 0; q < nshapes; q++)
    for (int mode = 0; mode < 4; mode++)
    for (int ncblk = 1; ncblk <= 2; ncblk++)
      for (int nslots = 1; nslots <= 3; nslots += 2)
        for (int betaq = 0; betaq < 2; betaq++) {
          int64_t m = shapes[q][0], n = shapes[q][1], k = shapes[q][2], b = shapes[q][3];
          double alpha = 0.75, beta = betaq ? -2.0 : 0.0;
          ooc_ctx_t *ctx = tu_ctx();
          double *A = rnd(m * k, 11), *B = rnd(k * n, 12), *C0 = rnd(m * n, 13);
          double *R = malloc((size_t)(m * n) * sizeof *R), *C = malloc((size_t)(m * n) * sizeof *C);
          memcpy(R, C0, (size_t)(m * n) * sizeof *R);
          ooc_ops_ref()->gemm('N', 'N', m, n, k, alpha, A, m, B, k, beta, R, m);
          tu_memsrc_t ma = {A, m}, mb = {B, k}, mc = {C0, m};
          ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL},
                       sc = {&mc, tu_mem_read, NULL, NULL};
          tcache_t *cache;
          tstore_t *TA, *TB, *TC;
          CU_ASSERT_FATAL(tcache_create(ctx, 1 << 24, &cache) == OOC_OK);
          CU_ASSERT_FATAL(tstore_create(ctx, cache, m, k, b, &sa, NULL, &TA) == OOC_OK);
          CU_ASSERT_FATAL(tstore_create(ctx, cache, k, n, b, &sb, NULL, &TB) == OOC_OK);
          CU_ASSERT_FATAL(tstore_create(ctx, cache, m, n, b, &sc, NULL, &TC) == OOC_OK);
          int64_t MB = shapes[q][4], NB = shapes[q][5], KB = shapes[q][6];
          strict_t fk = strict_make(ctx, nslots, ncblk, MB, NB, KB, 100);
          int ends = ends_of(mode);
          cover_t cv = {m, n, b, calloc((size_t)(m * n), sizeof(int)), 0, 0};
          gemm_args_t g = {.A = TA, .B = TB, .C = TC, .alpha = alpha, .beta = beta,
                           .ops = ooc_ops_ref(), .block = 1000, .kblock = 1000, .dev = fk.d,
                           .epilogue = cover, .user = &cv,
                           .ends_off = (GEMM_END_FIRST | GEMM_END_LAST) & ~ends};
          gemm_stats_t gs = {0};
          CU_ASSERT(gemm_run(ctx, &g, &gs) == OOC_OK);
          int once = 1;
          for (int64_t i = 0; i < m * n; i++) once &= cv.seen[i] == 1;
          CU_ASSERT(once && cv.bad == 0);
          /* blocks and panels bounded by the executor's buffers, rounded down to tiles; a buffer
           * holding the whole dimension bounds nothing */
          int64_t s = 1000, sk = 1000;
          if (MB < m) s = ooc_min64(s, ooc_max64(b, MB / b * b));
          if (NB < n) s = ooc_min64(s, ooc_max64(b, NB / b * b));
          if (KB < k) sk = ooc_max64(b, KB / b * b);
          s = s / b * b;
          sk = sk / b * b;
          CU_ASSERT(gs.blocks == ooc_cdiv64(m, s) * ooc_cdiv64(n, s));
          CU_ASSERT(gs.panels == gs.blocks * ooc_cdiv64(k, sk));
          /* the ends ran where they apply, and only when asked for: the first panel in pieces,
           * multiplied in more than one part (first block of more than one tile); the last
           * block's (with one buffer: every block's) last panel by column groups */
          int64_t ti0 = ooc_cdiv64(ooc_min64(s, m), b), ui0 = ooc_cdiv64(ooc_min64(s, n), b);
          int64_t nbj = ooc_cdiv64(n, s), ui_last = ooc_cdiv64(n - (nbj - 1) * s, b);
          int64_t nbi = ooc_cdiv64(m, s);
          if (nbi % 2 == 0) ui_last = ui0; /* serpentine: an even count of block rows ends on the
                                            * first block column */
          int64_t nkp = ooc_cdiv64(k, sk);
          int first = (ends & GEMM_END_FIRST) && k > 0 && gemm_first_pieces(ti0, ui0) > 1;
          int64_t first_panels = ooc_min64(nslots > 2 ? nslots - 1 : 1, nkp);
          CU_ASSERT_EQUAL(gs.piece_panels, first ? first_panels : 0);
          int64_t last_blocks = 0; /* blocks whose last panel goes by column groups */
          if ((ends & GEMM_END_LAST) && k > 0) {
            if (ncblk == 1) {
              for (int64_t bj = 0; bj < nbj; bj++)
                last_blocks += nbi * (ooc_cdiv64(ooc_min64(s, n - bj * s), b) > 1);
            } else {
              last_blocks = ui_last > 1;
            }
            /* a first block whose only panel went in pieces was not split by columns */
            if ((ends & GEMM_END_FIRST) && nkp == 1 && ui0 > 1 && (ncblk == 1 || nbi * nbj == 1))
              last_blocks--;
          }
          CU_ASSERT_EQUAL(gs.col_ended, last_blocks);
          CU_ASSERT_EQUAL(gs.split_panels, (int64_t)first + last_blocks);
          if (!(gs.col_ended == last_blocks && gs.split_panels == first + last_blocks &&
                gs.piece_panels == (first ? first_panels : 0)))
            fprintf(stderr, "\n  executor case %d (%d buffers, %d slots, ends %d): pieces %lld "
                    "split %lld ended early %lld, expected first %d x %lld, last %lld\n", q,
                    ncblk, nslots, ends, (long long)gs.piece_panels,
                    (long long)gs.split_panels, (long long)gs.col_ended, first,
                    (long long)first_panels, (long long)last_blocks);
          if (mode == 0) CU_ASSERT(gs.piece_panels == 0 && gs.split_panels == 0 && gs.col_ended == 0);
          /* slices (with 3 slots the store starts at the third panel: some blocks have fewer) */
          if (ncblk == 2 && nslots == 1 && gs.blocks > 1 && k > 0) CU_ASSERT(gs.fetches > gs.blocks);
          part_t rp = ts_rows(TC), cp = ts_cols(TC);
          for (int64_t tj = 0; tj < cp.count; tj++)
            for (int64_t ti = 0; ti < rp.count; ti++)
              ts_read(TC, ti, tj, C + part_start(rp, ti) + part_start(cp, tj) * m, m);
          double err = 0;
          for (int64_t i = 0; i < m * n; i++) err = fmax(err, isnan(C[i]) ? INFINITY : fabs(C[i] - R[i]));
          CU_ASSERT(err < 1e-12);
          if (!(err < 1e-12))
            fprintf(stderr, "\n  executor case %d (%d buffers, %d slots, beta %g, ends %d): "
                    "error %g\n", q, ncblk, nslots, beta, ends, err);
          /* C's tiles were new (from the source when taken, or never there): buffers for them
           * were touched while the "device" was busy (if the host waited at all: more panels
           * than slots), within the cache's budget */
          if (gs.panels > nslots) CU_ASSERT(gs.bytes_prefill > 0);
          CU_ASSERT(tcache_peak(cache) <= tcache_capacity(cache));
          if (betaq == 0 && k > 0) { /* again into the same C: its tiles are cached, no prefill */
            gemm_stats_t g2 = {0};
            cv.bad = 0;
            memset(cv.seen, 0, (size_t)(m * n) * sizeof(int));
            CU_ASSERT(gemm_run(ctx, &g, &g2) == OOC_OK);
            CU_ASSERT_EQUAL(g2.bytes_prefill, 0);
            double err2 = 0;
            for (int64_t tj = 0; tj < cp.count; tj++)
              for (int64_t ti = 0; ti < rp.count; ti++)
                ts_read(TC, ti, tj, C + part_start(rp, ti) + part_start(cp, tj) * m, m);
            for (int64_t i = 0; i < m * n; i++)
              err2 = fmax(err2, isnan(C[i]) ? INFINITY : fabs(C[i] - R[i]));
            CU_ASSERT(err2 < 1e-12);
          }
          strict_done(&fk);
          free(cv.seen);
          tstore_destroy(TA);
          tstore_destroy(TB);
          tstore_destroy(TC);
          tcache_destroy(cache);
          tu_ctx_done(ctx);
          free(A);
          free(B);
          free(C0);
          free(R);
          free(C);
        }
}

/* The cost model (gemm_model.h): its bounds, that it replays the schedule's panels (bytes up
 * and flops as the stand-in counts them when gemm_run drives it), what the ends save, and the
 * plan at the size the issue is about. */
static void t_cost_model(void) {
  gemm_rates_t r = gemm_rates_gpu();
  const int all = GEMM_END_FIRST | GEMM_END_LAST;
  static const int64_t shapes[][8] = {/* m n k b s kb nslots ncblk */
                                      {100, 70, 130, 16, 32, 16, 3, 2},
                                      {37, 53, 29, 7, 21, 14, 1, 1},
                                      {45, 130, 50, 4, 48, 8, 3, 2},
                                      {9, 200, 33, 8, 64, 8, 2, 1},
                                      {61, 11, 17, 8, 64, 8, 3, 2},
                                      {300, 300, 300, 16, 96, 16, 3, 2}};
  for (size_t q = 0; q < sizeof shapes / sizeof shapes[0]; q++)
    for (int e = 0; e < 4; e++) {
      const int64_t *v = shapes[q];
      gemm_shape_t sh = {.m = v[0], .n = v[1], .k = v[2], .b = v[3], .s = v[4], .kb = v[5],
                         .nslots = (int)v[6], .ncblk = (int)v[7], .ends = ends_of(e)};
      gemm_pred_t p;
      gemm_model(&sh, &r, &p);
      double fl = 2.0 * (double)sh.m * (double)sh.n * (double)sh.k;
      CU_ASSERT(fabs(p.device - fl / r.flops) <= 1e-12 * p.device);
      CU_ASSERT(p.total >= p.device && p.total >= p.host && p.head >= 0 && p.tail >= 0);
      /* the same panels and pieces as gemm_run with the stand-in */
      ooc_ctx_t *ctx = tu_ctx();
      double *A = rnd(sh.m * sh.k, 31), *B = rnd(sh.k * sh.n, 32);
      tu_memsrc_t ma = {A, sh.m}, mb = {B, sh.k};
      ooc_source_t sa = {&ma, tu_mem_read, NULL, NULL}, sb = {&mb, tu_mem_read, NULL, NULL};
      tcache_t *cache;
      tstore_t *TA, *TB, *TC;
      CU_ASSERT_FATAL(tcache_create(ctx, 1 << 26, &cache) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, sh.m, sh.k, sh.b, &sa, NULL, &TA) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, sh.k, sh.n, sh.b, &sb, NULL, &TB) == OOC_OK);
      CU_ASSERT_FATAL(tstore_create(ctx, cache, sh.m, sh.n, sh.b, NULL, NULL, &TC) == OOC_OK);
      strict_t fk = strict_make(ctx, sh.nslots, sh.ncblk, ooc_min64(sh.s, sh.m),
                                ooc_min64(sh.s, sh.n), ooc_min64(sh.kb, sh.k), 1);
      gemm_args_t g = {.A = TA, .B = TB, .C = TC, .alpha = 1, .ops = ooc_ops_ref(), .block = sh.s,
                       .kblock = sh.kb, .dev = fk.d, .ends_off = all & ~sh.ends};
      gemm_stats_t gs = {0};
      CU_ASSERT(gemm_run(ctx, &g, &gs) == OOC_OK);
      CU_ASSERT(fabs((double)fk.e->stats.bytes_put - p.h2d_bytes) <= 1e-9 * p.h2d_bytes);
      CU_ASSERT(fabs(fk.e->stats.flops - fl) <= 1e-9 * fl);
      CU_ASSERT_EQUAL(gs.blocks, p.blocks);
      strict_done(&fk);
      tstore_destroy(TA);
      tstore_destroy(TB);
      tstore_destroy(TC);
      tcache_destroy(cache);
      tu_ctx_done(ctx);
      free(A);
      free(B);
    }
  /* n = 49152, tile 4096, --gpu-mem 12G (less the cuBLAS workspace): the ends shorten the head
   * and the tail; the plan is 2 buffers, 3 slots, even blocks of 16384 (the same bytes as the
   * previous 20480, no thin last block row), and faster than the previous plan */
  int64_t n = 49152, b = 4096, room = ((int64_t)12 << 30) - ((int64_t)32 << 20);
  gemm_shape_t old = {.m = n, .n = n, .k = n, .b = b, .s = 20480, .kb = b, .nslots = 3, .ncblk = 2};
  gemm_shape_t ends = old;
  ends.ends = all;
  gemm_pred_t po, pe, pp;
  gemm_model(&old, &r, &po);
  gemm_model(&ends, &r, &pe);
  CU_ASSERT(pe.head < 0.5 * po.head);
  CU_ASSERT(pe.tail < po.tail);
  CU_ASSERT(pe.total < po.total);
  CU_ASSERT(gemm_exec_bytes(20480, 20480, b, 3, 2) <= room);
  CU_ASSERT(gemm_exec_bytes(24576, 24576, b, 3, 2) > room);
  gemm_shape_t plan;
  CU_ASSERT_FATAL(gemm_model_plan(n, n, n, b, room, all, 0, &r, &plan, &pp) == 1);
  CU_ASSERT_EQUAL(plan.s, 16384);
  CU_ASSERT_EQUAL(plan.kb, b);
  CU_ASSERT_EQUAL(plan.nslots, 3);
  CU_ASSERT_EQUAL(plan.ncblk, 2);
  CU_ASSERT(pp.total < pe.total && pp.total < po.total - 0.04);
  fprintf(stderr, "[n = 49152, 12G: previous plan %.3f s (head %.0f ms, tail %.0f ms), with the "
          "ends %.3f s (%.0f, %.0f), the plan (block %lld) %.3f s (%.0f, %.0f)] ", po.total,
          1e3 * po.head, 1e3 * po.tail, pe.total, 1e3 * pe.head, 1e3 * pe.tail,
          (long long)plan.s, pp.total, 1e3 * pp.head, 1e3 * pp.tail);
  /* plans fit their room, and none below a block of one tile */
  for (int64_t mm = 500; mm <= 20000; mm = mm * 3 + 17)
    for (int64_t bb = 64; bb <= 1024; bb *= 4) {
      int64_t rm = (int64_t)200 << 20;
      if (gemm_model_plan(mm, mm + 333, mm / 2 + 1, bb, rm, all, 1, &r, &plan, NULL)) {
        CU_ASSERT(gemm_exec_bytes(ooc_min64(plan.s, mm), ooc_min64(plan.s, mm + 333),
                                  ooc_min64(plan.kb, mm / 2 + 1), plan.nslots, plan.ncblk) <= rm);
        CU_ASSERT(plan.s % bb == 0 && plan.kb == bb);
      } else {
        CU_ASSERT(gemm_exec_bytes(ooc_min64(bb, mm), ooc_min64(bb, mm + 333), bb, 2, 1) > rm);
      }
    }
  CU_ASSERT(gemm_model_plan(1000, 1000, 1000, 256, 1000, all, 0, &r, &plan, NULL) == 0);
  CU_ASSERT(plan.s == 0);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"C = alpha A B + beta C against ref, spills, odd shapes", t_against_ref},
      {"beta = 0 never reads C", t_beta_zero_ignores_c},
      {"epilogue covers C once; aliasing refused", t_epilogue_cover},
      {"block sizes", t_block_sizes},
      {"probe check passes right, fails wrong", t_probe_check},
      {"executor seam: protocol, 1-2 C buffers, async, bounds, result", t_executor_seam},
      {"cost model: bounds, replays the schedule, ends, the plan", t_cost_model},
      {NULL, NULL},
  };
  return tu_run("gemm", tests);
}
