/*
 * test_budget.c: the planner's promise, for every job and method on the CPU backends (issue 18):
 * with --host-mem M the host peak never exceeds M, and the report says what ran: the stripe in
 * the report is the one the method used (gj, chol: steps = ceil(n / stripe)), the product's block
 * edge gives its block count. Sweeps n, tile, --stripe and --host-mem from the edge of what fits
 * to in core; a budget too small must be refused cleanly (OOC_ERR_BUDGET, nothing written), never
 * overrun. Every result that is written passes its check (the runs use --check full).
 * Least squares (lstsq, and the add-rows, remove-columns and add-columns updates of its state
 * file) sweeps n, tile and --host-mem: the peak within the budget, refused exactly when plan_qr
 * refuses, and the row block and panel plan_qr plans are the report's tile and stripe, the state
 * file's block_rows and panel_rows, and the fold's steps (ceil(rows / block)).
 * Host devices (gj's executors) stay within their planned workspace (report.device_peak).
 * `test_budget gpu`: the same on --device cuda for every job with a GPU path, over --gpu-mem
 * (the GPU sweep below says how); skipped (exit 77) without the CUDA plugin or a GPU.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>
#include <hdf5_hl.h>

#include "api/plan.h"
#include "exec/plugin.h"
#include "gen/gen.h"
#include "testutil.h"

typedef enum { J_INV_GJ, J_INV_CHOL, J_INV_AUTO, J_SOLVE_GJ, J_SOLVE_CHOL, J_FACTOR, J_LOGDET,
               J_SOLVE_FACTOR, J_NEWTON, J_HYPER7, J_GEMM, J_INV_LU, J_SOLVE_LU, J_SOLVE_AUTO_LU,
               J_FACTOR_LU, J_LOGDET_AUTO_LU, J_SOLVE_FACTOR_LU, J_SOLVE_RBT, J_COUNT } job_kind_t;
static const char *job_name[J_COUNT] = {"invert gj", "invert chol", "invert auto", "solve gj",
                                        "solve chol", "factor", "logdet", "solve --factor",
                                        "newton", "hyper7", "gemm", "invert lu", "solve lu",
                                        "solve auto (lu)", "factor lu", "logdet auto (lu)",
                                        "solve --factor (lu)", "solve rbt"};

/* Counters over the whole sweep, printed at the end (the note quotes them); the GPU sweep's
 * also count device peaks above --gpu-mem and Cholesky runs that went to the CPU. */
static int n_runs, n_ok, n_refused, n_over, n_dev_over, n_fallback;

/* The device the runs ask for and its --gpu-mem (the GPU sweep sets them; the CPU sweep's are
 * these). */
static ooc_device_t g_dev = OOC_DEVICE_CPU;
static int64_t g_gpu_mem;

static void write_inputs(int64_t n, int64_t m) {
  gen_spec_t s;
  gen_spec_default(&s, GEN_DIAGDOM, n);
  double *A = tu_gen_spec(&s);
  tu_write_matrix(tu_path("g.h5"), "/A", n, n, A, 2);
  free(A);
  gen_spec_default(&s, GEN_MATERN, n);
  s.length = 0.1;
  s.nugget = 0.05;
  double *S = tu_gen_spec(&s);
  tu_write_matrix(tu_path("s.h5"), "/A", n, n, S, 2);
  free(S);
  gen_spec_default(&s, GEN_RHS, n);
  s.cols = m;
  double *B = tu_gen_spec(&s);
  tu_write_matrix(tu_path("b.h5"), "/B", n, m, B, 2);
  free(B);
}

/* One run; returns its status and fills rep. */
static ooc_status_t run_job(job_kind_t k, int64_t tile, int64_t stripe, int64_t mem, int journal,
                            ooc_report_t *rep, ooc_ctx_t *ctx) {
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = g_dev;
  o.gpu_mem = g_gpu_mem;
  o.tile = tile;
  o.stripe = stripe;
  o.host_mem = mem;
  o.force = 1;
  o.check = OOC_CHECK_FULL;
  o.scratch_dir = tu_tmpdir();
  /* journaled runs take the checkpoint's tile tables out of the budget too */
  o.checkpoint = journal ? OOC_CHECKPOINT_EVERY_STEP : OOC_CHECKPOINT_NEVER;
  const char *g = tu_path("g.h5"), *s = tu_path("s.h5"), *b = tu_path("b.h5");
  const char *out = tu_path("out.h5");
  double ld = 0;
  switch (k) {
  case J_INV_GJ: o.method = OOC_METHOD_GJ; return ooc_invert(ctx, g, out, &o, rep);
  case J_INV_CHOL: o.method = OOC_METHOD_CHOL; return ooc_invert(ctx, s, out, &o, rep);
  case J_INV_AUTO: return ooc_invert(ctx, s, out, &o, rep);
  case J_SOLVE_GJ: o.method = OOC_METHOD_GJ; return ooc_solve(ctx, g, b, out, &o, rep);
  case J_SOLVE_CHOL: o.method = OOC_METHOD_CHOL; return ooc_solve(ctx, s, b, out, &o, rep);
  case J_FACTOR: return ooc_factor(ctx, s, tu_path("L.h5"), &o, rep);
  case J_LOGDET: return ooc_logdet(ctx, s, &o, rep, &ld);
  case J_SOLVE_FACTOR: return ooc_solve_factor(ctx, tu_path("L.h5"), b, out, &o, rep);
  case J_NEWTON: o.method = OOC_METHOD_NEWTON; return ooc_invert(ctx, s, out, &o, rep);
  case J_HYPER7: o.method = OOC_METHOD_HYPER7; return ooc_invert(ctx, s, out, &o, rep);
  case J_GEMM: o.check = OOC_CHECK_AUTO; return ooc_gemm(ctx, g, s, NULL, out, 1.0, 0.0, &o, rep);
  case J_INV_LU: o.method = OOC_METHOD_LU; return ooc_invert(ctx, g, out, &o, rep);
  case J_SOLVE_LU: o.method = OOC_METHOD_LU; return ooc_solve(ctx, g, b, out, &o, rep);
  case J_SOLVE_AUTO_LU: return ooc_solve(ctx, g, b, out, &o, rep);
  case J_FACTOR_LU: o.method = OOC_METHOD_LU; return ooc_factor(ctx, g, tu_path("LU.h5"), &o, rep);
  case J_LOGDET_AUTO_LU: return ooc_logdet(ctx, g, &o, rep, &ld);
  case J_SOLVE_FACTOR_LU: return ooc_solve_factor(ctx, tu_path("LU.h5"), b, out, &o, rep);
  case J_SOLVE_RBT: o.method = OOC_METHOD_RBT; return ooc_solve(ctx, g, b, out, &o, rep);
  default: return OOC_ERR_INTERNAL;
  }
}

/* The file a job writes (NULL: logdet writes nothing), removed before each run so that a
 * refusal can be seen to write nothing. */
static const char *out_file(job_kind_t k) {
  return k == J_LOGDET || k == J_LOGDET_AUTO_LU ? NULL
         : k == J_FACTOR                        ? tu_path("L.h5")
         : k == J_FACTOR_LU                     ? tu_path("LU.h5")
                                                : tu_path("out.h5");
}

/* What ran is what the report says: the tile, the stripe, and the steps it implies (the same
 * rules on every backend). stripe: the --stripe asked (0: none). */
static void check_ran(job_kind_t k, int64_t n, int64_t tile, int64_t stripe, int64_t mem,
                      const ooc_report_t *rep) {
  /* the planner's even tile (plan_tile); the product keeps --tile (its three dimensions share
   * one tile) */
  int64_t b = k == J_GEMM ? (tile < n ? tile : n) : plan_tile(n, tile);
  CU_ASSERT_EQUAL(rep->tile, b);
  if (k == J_SOLVE_RBT) { /* its stripe is of the padded n's tiles (rbt.h) */
    CU_ASSERT_STRING_EQUAL(rep->method, "rbt");
    CU_ASSERT(rep->rbt_n >= n && rep->stripe > 0 && rep->stripe <= rep->rbt_n);
  } else if (k != J_NEWTON && k != J_HYPER7 && k != J_GEMM) {
    int64_t want = rep->stripe > 0 ? (n + rep->stripe - 1) / rep->stripe : -1;
    if (k == J_SOLVE_FACTOR || k == J_SOLVE_FACTOR_LU) want = rep->steps; /* sweeps only */
    if (k >= J_INV_LU) CU_ASSERT_STRING_EQUAL(rep->method, "lu");
    if (rep->steps != want)
      fprintf(stderr, "REPORT: %s n=%lld tile=%lld stripe=%lld mem=%lld: stripe %lld but %lld "
              "steps\n", job_name[k], (long long)n, (long long)tile, (long long)stripe,
              (long long)mem, (long long)rep->stripe, (long long)rep->steps);
    CU_ASSERT_EQUAL(rep->steps, want);
    CU_ASSERT(rep->stripe == n || (rep->stripe > 0 && rep->stripe % b == 0));
    if (stripe > 0) {
      if (rep->stripe > stripe)
        fprintf(stderr, "REPORT: %s n=%lld tile=%lld --stripe %lld: ran stripe %lld\n",
                job_name[k], (long long)n, (long long)tile, (long long)stripe,
                (long long)rep->stripe);
      CU_ASSERT(rep->stripe <= stripe);
    }
  } else {
    CU_ASSERT(rep->stripe > 0 && rep->stripe <= n);
  }
}

/* Every device the report lists held at most its budget (issue 18: device_peak, device_budget;
 * on a GPU the budget is --gpu-mem). Returns the devices over. */
static int devices_over(const char *what, int64_t n, const ooc_report_t *rep) {
  int over = 0;
  for (int d = 0; d < rep->ndevices && d < 16; d++)
    if (rep->device_budget[d] > 0 && rep->device_peak[d] > rep->device_budget[d]) {
      over++;
      fprintf(stderr, "DEVICE OVER BUDGET: %s n=%lld device %d: peak %lld of %lld\n", what,
              (long long)n, rep->device_id[d], (long long)rep->device_peak[d],
              (long long)rep->device_budget[d]);
    }
  return over;
}

/* After one run of any sweep: counted; the host peak within --host-mem (counted and printed
 * when over) and every device the report lists within its budget. */
static void within_budgets(const char *what, int64_t n, int64_t tile, int64_t stripe, int64_t gpu,
                           int64_t mem, ooc_status_t st, const ooc_report_t *rep,
                           ooc_ctx_t *ctx) {
  n_runs++;
  int64_t peak = ooc_ctx_host_peak(ctx);
  if (peak > mem) {
    n_over++;
    fprintf(stderr, "OVER BUDGET: %s n=%lld tile=%lld stripe=%lld gpu=%lld mem=%lld: host peak "
            "%lld (+%.1f%%), status %s\n", what, (long long)n, (long long)tile, (long long)stripe,
            (long long)gpu, (long long)mem, (long long)peak,
            100.0 * (double)(peak - mem) / (double)mem, ooc_status_str(st));
  }
  CU_ASSERT(peak <= mem);
  int dover = devices_over(what, n, rep);
  n_dev_over += dover;
  CU_ASSERT_EQUAL(dover, 0);
}

/* One run of a sweep and the checks every sweep makes: the host peak within --host-mem (counted
 * and printed when over), every device the report lists within its budget; a refusal is
 * OOC_ERR_BUDGET naming --host-mem (or, with a GPU budget gpu > 0, --gpu-mem) and writes
 * nothing; anything else is OK, with its host budget the one given, its output written and what
 * ran what the report says (check_ran). Counts runs, refusals and successes; returns the
 * status. */
static ooc_status_t sweep_run(job_kind_t k, int64_t n, int64_t tile, int64_t stripe, int64_t mem,
                              int64_t gpu, int journal, ooc_report_t *rep, ooc_ctx_t *ctx) {
  const char *out = out_file(k);
  if (out) remove(out);
  memset(rep, 0, sizeof *rep);
  ooc_status_t st = run_job(k, tile, stripe, mem, journal, rep, ctx);
  within_budgets(job_name[k], n, tile, stripe, gpu, mem, st, rep, ctx);
  if (st == OOC_ERR_BUDGET) {
    n_refused++;
    const char *e = ooc_ctx_error(ctx);
    int named = strstr(e, "--host-mem") || (gpu > 0 && strstr(e, "--gpu-mem"));
    if (!named)
      fprintf(stderr, "REFUSAL: %s n=%lld gpu=%lld: %s\n", job_name[k], (long long)n,
              (long long)gpu, e);
    CU_ASSERT(named);
    CU_ASSERT(!out || !tu_file_exists(out)); /* nothing written */
    return st;
  }
  if (st != OOC_OK)
    fprintf(stderr, "FAILED: %s n=%lld tile=%lld stripe=%lld gpu=%lld mem=%lld: %s: %s\n",
            job_name[k], (long long)n, (long long)tile, (long long)stripe, (long long)gpu,
            (long long)mem, ooc_status_str(st), ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL(st, OOC_OK);
  if (st != OOC_OK) return st;
  n_ok++;
  CU_ASSERT(rep->host_peak <= rep->host_budget);
  CU_ASSERT_EQUAL(rep->host_budget, mem);
  CU_ASSERT(!out || tu_file_exists(out));
  check_ran(k, n, tile, stripe, mem, rep);
  return st;
}

/* The sweep for one job at one (n, m): budgets from ~6% of the matrix to twice its size. */
static void sweep_job(job_kind_t k, int64_t n, const int64_t *tiles, int ntiles) {
  static const double frac[] = {0.06, 0.12, 0.25, 0.5, 1.0, 2.5};
  int ok_here = 0;
  for (int ti = 0; ti < ntiles; ti++) {
    int64_t tile = tiles[ti];
    int64_t stripes[] = {0, tile, 3 * tile};
    for (int si = 0; si < 3; si++) {
      if (stripes[si] >= n) continue;
      for (int fi = 0; fi < (int)(sizeof frac / sizeof frac[0]); fi++) {
        int64_t mem = (int64_t)(frac[fi] * 8.0 * (double)n * (double)n) + 256 * 1024;
        ooc_ctx_t *ctx = tu_ctx();
        ooc_report_t rep;
        /* host devices (gj's executors) within their planned workspace: sweep_run */
        if (sweep_run(k, n, tile, stripes[si], mem, 0, (fi + si) % 2, &rep, ctx) == OOC_OK)
          ok_here++;
        tu_ctx_done(ctx);
      }
    }
  }
  CU_ASSERT(ok_here > 0); /* each job must run somewhere in the sweep */
}

/* Inputs a sweep starts from are made on the CPU at the default budget, whatever the sweep's
 * device: cpu_setup_begin switches the runs' device, cpu_setup_end switches it back. */
typedef struct {
  ooc_device_t dev;
  int64_t gpu_mem;
} cpu_setup_t;
static cpu_setup_t cpu_setup_begin(void) {
  cpu_setup_t was = {g_dev, g_gpu_mem};
  g_dev = OOC_DEVICE_CPU;
  g_gpu_mem = 0;
  return was;
}
static void cpu_setup_end(cpu_setup_t was) {
  g_dev = was.dev;
  g_gpu_mem = was.gpu_mem;
}

/* solve --factor needs a factor at the same n: made on the CPU at the default budget. */
static void prefactor(job_kind_t k, int64_t tile) {
  if (k != J_SOLVE_FACTOR && k != J_SOLVE_FACTOR_LU) return;
  cpu_setup_t was = cpu_setup_begin();
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  CU_ASSERT_EQUAL_FATAL(run_job(k == J_SOLVE_FACTOR ? J_FACTOR : J_FACTOR_LU, tile, 0, 0, 0, &rep,
                                ctx), OOC_OK);
  tu_ctx_done(ctx);
  cpu_setup_end(was);
}

static void sweep_sizes(job_kind_t first, job_kind_t last, int nsizes) {
  static const int64_t tiles[] = {16, 48, 100};
  const int64_t sizes[] = {150, 317};
  for (int ni = 0; ni < nsizes; ni++) {
    write_inputs(sizes[ni], 7);
    for (job_kind_t k = first; k <= last; k++) {
      prefactor(k, 32);
      sweep_job(k, sizes[ni], tiles, 3);
    }
  }
}

static void sweep(job_kind_t first, job_kind_t last) { sweep_sizes(first, last, 2); }

static void t_gj(void) { sweep(J_INV_GJ, J_INV_GJ), sweep(J_SOLVE_GJ, J_SOLVE_GJ); }
static void t_chol(void) { sweep(J_INV_CHOL, J_INV_AUTO), sweep(J_SOLVE_CHOL, J_SOLVE_FACTOR); }
static void t_iter(void) { sweep(J_NEWTON, J_HYPER7); }
static void t_gemm(void) { sweep(J_GEMM, J_GEMM); }
static void t_lu(void) { sweep_sizes(J_INV_LU, J_SOLVE_FACTOR_LU, 1); } /* n = 150: CI time */
static void t_rbt(void) { sweep_sizes(J_SOLVE_RBT, J_SOLVE_RBT, 1); }

/* The issue's case: n = 2000, tile 256, --host-mem 40M planned a stripe of n (one step), gj ran
 * two steps of 1792 and peaked 16.7% over the budget. */
static void t_issue_case(void) {
  int64_t n = 2000;
  gen_spec_t s;
  gen_spec_default(&s, GEN_RANDOM, n);
  double *A = tu_gen_spec(&s);
  tu_write_matrix(tu_path("r.h5"), "/A", n, n, A, 2);
  free(A);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.tile = 256;
  o.host_mem = 40 << 20;
  o.force = 1;
  o.scratch_dir = tu_tmpdir();
  o.checkpoint = OOC_CHECKPOINT_NEVER;
  ooc_report_t rep;
  CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("r.h5"), tu_path("ri.h5"), &o, &rep), OOC_OK);
  CU_ASSERT(ooc_ctx_host_peak(ctx) <= o.host_mem);
  CU_ASSERT(rep.host_peak <= rep.host_budget);
  CU_ASSERT_EQUAL(rep.steps, (n + rep.stripe - 1) / rep.stripe);
  CU_ASSERT(rep.residual < 30);
  printf("\n  n = 2000, tile 256, --host-mem 40M: stripe %lld, %lld steps, peak %lld of %lld\n",
         (long long)rep.stripe, (long long)rep.steps, (long long)rep.host_peak,
         (long long)rep.host_budget);
  tu_ctx_done(ctx);
}

/* Runs the GPU sweep found over --host-mem, on the CPU where they go over too: an LU factor in
 * core under a budget three times the matrix, whose full check took all of its memory beside
 * the readers' staging (2.2% over); rbt with --stripe, whose padded stores' bookkeeping and
 * staging tiles were not planned (0.5% over). Each within its budget, and OK. */
static void t_found_on_gpu(void) {
  static const struct {
    job_kind_t k;
    int64_t n, tile, stripe, mem;
  } C[] = {{J_FACTOR_LU, 1100, 128, 0, 30005824},
           {J_FACTOR_LU, 1800, 256, 512, 38125824},
           {J_SOLVE_RBT, 1800, 256, 512, 38125824},
           {J_SOLVE_RBT, 1800, 256, 512, 60000000}};
  for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
    write_inputs(C[c].n, 7);
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    memset(&rep, 0, sizeof rep);
    ooc_status_t st = run_job(C[c].k, C[c].tile, C[c].stripe, C[c].mem, 0, &rep, ctx);
    if (st != OOC_OK) fprintf(stderr, "\n  %s: %s\n", job_name[C[c].k], ooc_ctx_error(ctx));
    CU_ASSERT(st == OOC_OK);
    CU_ASSERT(ooc_ctx_host_peak(ctx) <= C[c].mem);
    printf("\n  %s n = %lld, tile %lld, stripe %lld: peak %lld of %lld", job_name[C[c].k],
           (long long)C[c].n, (long long)C[c].tile, (long long)C[c].stripe,
           (long long)ooc_ctx_host_peak(ctx), (long long)C[c].mem);
    tu_ctx_done(ctx);
  }
}

/* The planner alone (no files): the SPD solve of issue 18 (n = 106,496, a 45 GB lower triangle
 * in float64) with --host-mem 112G keeps the lower triangle in the cache with a stripe still
 * >= 8192 columns, instead of the widest stripe (which left too little cache and spilled to
 * disk); where the stores cannot fit at all, the widest stripe stands. */
static void t_planner_nospill(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.tile = 4096;
  o.host_mem = (int64_t)112 << 30;
  o.method = OOC_METHOD_CHOL;
  int64_t n = 106496;
  plan_req_t q = {.o = &o, .name = "test", .n = n, .m = 1, .journaled = 1};
  plan_t p;
  CU_ASSERT_EQUAL_FATAL(plan_solver(ctx, &q, &p), OOC_OK);
  int64_t lower = 8 * (n * n + n * o.tile) / 2 + 8 * n;
  printf("\n  n = 106496, tile 4096, 112G: stripe %lld, cache %.1f GB for a %.1f GB triangle\n",
         (long long)p.W, plan_cache(&p) / 1e9, lower / 1e9);
  CU_ASSERT(plan_cache(&p) >= lower);
  CU_ASSERT(p.W >= 8192 && p.W % 4096 == 0);
  CU_ASSERT(p.budget == o.host_mem && p.fixed + plan_ws(&p, p.W) + plan_cache(&p) == p.budget);
  /* 40G: the triangle cannot stay; the widest stripe that fits */
  o.host_mem = (int64_t)40 << 30;
  plan_t p2;
  CU_ASSERT_EQUAL_FATAL(plan_solver(ctx, &q, &p2), OOC_OK);
  CU_ASSERT(plan_ws(&p2, p2.W + 4096) > p2.budget - p2.fixed);
  /* gj keeps the whole matrix (8 n^2 = 90.7 GB): at 112G it stays in the cache with a stripe
   * >= 8192; at 90G that would leave fewer than 8192 columns: the widest stripe */
  o.method = OOC_METHOD_GJ;
  o.host_mem = (int64_t)112 << 30;
  plan_t p3;
  CU_ASSERT_EQUAL_FATAL(plan_solver(ctx, &q, &p3), OOC_OK);
  CU_ASSERT(plan_cache(&p3) >= 8 * n * n + 8 * n && p3.W >= 8192);
  o.host_mem = (int64_t)90 << 30;
  CU_ASSERT_EQUAL_FATAL(plan_solver(ctx, &q, &p3), OOC_OK);
  /* (gj_x's panel at W = n, the whole matrix, fits 90G: one step) */
  CU_ASSERT(p3.W == n || plan_ws(&p3, p3.W + 4096) > p3.budget - p3.fixed);
  CU_ASSERT(plan_cache(&p3) < 8 * n * n);
  tu_ctx_done(ctx);
}

/* ---- least squares (plan_qr): lstsq and its updates with a state file ---------------------- */

/* A (LS_M x n), b (LS_M x LS_NRHS), the added rows U (LS_MU x n) and c, the added columns V
 * (LS_M x LS_KV); the base state (an lstsq at the default budget) the updates start from. */
#define LS_M 700
#define LS_MU 90
#define LS_NRHS 3
#define LS_KV 4
typedef enum { L_LSTSQ, L_ADD_ROWS, L_REMOVE_COLS, L_ADD_COLS, L_COUNT } ls_kind_t;
static const char *ls_name[L_COUNT] = {"lstsq", "lstsq --add-rows", "lstsq --remove-cols",
                                       "lstsq --add-cols"};

static void write_ls(const char *file, const char *dset, int64_t rows, int64_t cols,
                     uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, GEN_RHS, rows);
  s.cols = cols;
  s.seed = seed;
  double *X = tu_gen_spec(&s);
  tu_write_matrix(file, dset, rows, cols, X, 2);
  free(X);
}

static ooc_status_t run_ls(ls_kind_t k, int64_t tile, int64_t mem, ooc_report_t *rep,
                           ooc_ctx_t *ctx) {
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = g_dev;
  o.gpu_mem = g_gpu_mem;
  o.tile = tile;
  o.host_mem = mem;
  o.force = 1;
  o.check = OOC_CHECK_FULL;
  char a[600], b[600], u[600], c[600], v[600], st[600], out[600];
  snprintf(a, sizeof a, "%s:/A", tu_path("lsA.h5"));
  snprintf(b, sizeof b, "%s:/b", tu_path("lsb.h5"));
  snprintf(u, sizeof u, "%s:/U", tu_path("lsU.h5"));
  snprintf(c, sizeof c, "%s:/c", tu_path("lsc.h5"));
  snprintf(v, sizeof v, "%s:/V", tu_path("lsV.h5"));
  snprintf(st, sizeof st, "%s", tu_path("ls.qr.h5"));
  snprintf(out, sizeof out, "%s", tu_path(mem ? "lsout.h5" : "ls.qr.h5"));
  switch (k) {
  case L_LSTSQ: return ooc_lstsq(ctx, a, b, out, &o, rep);
  case L_ADD_ROWS: return ooc_lstsq_update(ctx, st, u, c, 0, 0, out, &o, rep);
  case L_REMOVE_COLS: return ooc_lstsq_update(ctx, st, NULL, NULL, 1, 3, out, &o, rep);
  case L_ADD_COLS: return ooc_lstsq_add_cols(ctx, st, v, NULL, NULL, out, &o, rep);
  default: return OOC_ERR_INTERNAL;
  }
}

/* The state file's record of the plan it ran with (/R's block_rows, panel_rows). */
static int64_t ls_attr(const char *name) {
  long long v = -1;
  hid_t f = H5Fopen(tu_path("lsout.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0 && H5LTget_attribute_long_long(f, "/R", name, &v) < 0) v = -1;
  if (f >= 0) H5Fclose(f);
  return v;
}

/* One job over tiles and budgets: the host peak never above --host-mem; the job refuses exactly
 * when the planner does; what ran (the fold's blocks, the state's block_rows and panel_rows) is
 * what plan_qr planned and the report says (tile = the row block, stripe = the panel). */
static void sweep_ls(ls_kind_t k, int64_t n) {
  static const int64_t tiles[] = {0, 16, 100};
  static const int64_t mems[] = {12 << 10, 20 << 10, 32 << 10, 48 << 10, 96 << 10, 256 << 10,
                                 1 << 20};
  /* the planner's request as job_qr_plan makes it: the state's columns as folded or updated,
   * the rows read, A's and V's columns per row */
  int64_t pn = k == L_ADD_COLS ? n + LS_KV : n;
  int64_t rows = k == L_LSTSQ || k == L_ADD_COLS ? LS_M : k == L_ADD_ROWS ? LS_MU : 0;
  int ok_here = 0, refused_here = 0;
  for (int ti = 0; ti < 3; ti++)
    for (int mi = 0; mi < (int)(sizeof mems / sizeof mems[0]); mi++) {
      int64_t tile = tiles[ti], mem = mems[mi];
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o;
      ooc_opts_default(&o);
      o.tile = tile;
      o.host_mem = mem;
      plan_req_t q = {.o = &o, .name = "test", .n = pn, .m = LS_NRHS, .k = rows,
                      .qr_ka = k == L_REMOVE_COLS ? 0 : n, .qr_kv = k == L_ADD_COLS ? LS_KV : 0};
      plan_t p;
      ooc_status_t pst = plan_qr(ctx, &q, &p);
      ooc_clear_error(ctx);
      if (pst == OOC_OK) /* the split adds up: fixed + workspace within the budget */
        CU_ASSERT(p.budget == mem && p.fixed + plan_ws(&p, p.W) <= p.budget);
      remove(tu_path("lsout.h5"));
      ooc_report_t rep;
      memset(&rep, 0, sizeof rep);
      ooc_status_t st = run_ls(k, tile, mem, &rep, ctx);
      within_budgets(ls_name[k], n, tile, 0, 0, mem, st, &rep, ctx);
      CU_ASSERT_EQUAL(st == OOC_ERR_BUDGET, pst == OOC_ERR_BUDGET);
      if (st == OOC_ERR_BUDGET) {
        n_refused++;
        refused_here++;
        CU_ASSERT(strstr(ooc_ctx_error(ctx), "--host-mem") != NULL);
        CU_ASSERT(!tu_file_exists(tu_path("lsout.h5")));
      } else {
        if (st != OOC_OK)
          fprintf(stderr, "FAILED: %s n=%lld tile=%lld mem=%lld: %s: %s\n", ls_name[k],
                  (long long)n, (long long)tile, (long long)mem, ooc_status_str(st),
                  ooc_ctx_error(ctx));
        CU_ASSERT_EQUAL(st, OOC_OK);
        if (st == OOC_OK && pst == OOC_OK) {
          n_ok++;
          ok_here++;
          CU_ASSERT(rep.host_peak <= rep.host_budget);
          CU_ASSERT_EQUAL(rep.host_budget, mem);
          /* planned = reported = ran */
          CU_ASSERT_EQUAL(rep.tile, p.b);
          CU_ASSERT_EQUAL(rep.stripe, p.W);
          CU_ASSERT_EQUAL(ls_attr("block_rows"), p.b);
          CU_ASSERT_EQUAL(ls_attr("panel_rows"), p.W);
          CU_ASSERT_EQUAL(rep.steps, rows > 0 ? (rows + p.b - 1) / p.b : 1);
          CU_ASSERT_EQUAL(p.W, p.b); /* the host executor factors every block */
          CU_ASSERT(p.b >= 1 && (rows == 0 || p.b <= rows) && (tile == 0 || p.b <= tile));
          if (rep.tile != p.b || rep.steps != (rows > 0 ? (rows + p.b - 1) / p.b : 1))
            fprintf(stderr, "REPORT: %s n=%lld tile=%lld mem=%lld: planned block %lld, report "
                    "block %lld, %lld steps\n", ls_name[k], (long long)n, (long long)tile,
                    (long long)mem, (long long)p.b, (long long)rep.tile, (long long)rep.steps);
          CU_ASSERT_EQUAL(rep.n, k == L_REMOVE_COLS ? n - 2 : pn);
        }
      }
      tu_ctx_done(ctx);
    }
  CU_ASSERT(ok_here > 0); /* each job runs somewhere in the sweep, */
  if (k != L_REMOVE_COLS) CU_ASSERT(refused_here > 0); /* and the sweep reaches its edge */
}

/* The least-squares inputs at n columns and the base state (an lstsq on the CPU at the default
 * budget) the updates start from. */
static void ls_inputs(int64_t n) {
  write_ls(tu_path("lsA.h5"), "/A", LS_M, n, 11);
  write_ls(tu_path("lsb.h5"), "/b", LS_M, LS_NRHS, 12);
  write_ls(tu_path("lsU.h5"), "/U", LS_MU, n, 13);
  write_ls(tu_path("lsc.h5"), "/c", LS_MU, LS_NRHS, 14);
  write_ls(tu_path("lsV.h5"), "/V", LS_M, LS_KV, 15);
  cpu_setup_t was = cpu_setup_begin();
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  remove(tu_path("ls.qr.h5"));
  CU_ASSERT_EQUAL_FATAL(run_ls(L_LSTSQ, 0, 0, &rep, ctx), OOC_OK); /* the base state */
  tu_ctx_done(ctx);
  cpu_setup_end(was);
}

/* lstsq and its three updates at n = 10 and 37, each swept by `sweep` (CPU or GPU) */
static void lstsq_all(void (*sweep)(ls_kind_t, int64_t)) {
  static const int64_t ns[] = {10, 37};
  for (int ni = 0; ni < 2; ni++) {
    ls_inputs(ns[ni]);
    for (ls_kind_t k = L_LSTSQ; k < L_COUNT; k++) sweep(k, ns[ni]);
  }
}
static void t_lstsq(void) { lstsq_all(sweep_ls); }

static void t_summary(void) {
  printf("\n  budget sweep: %d runs, %d ran, %d refused (budget too small), %d over budget\n",
         n_runs, n_ok, n_refused, n_over);
  CU_ASSERT_EQUAL(n_over, 0);
  CU_ASSERT(n_ok > n_runs / 2);
}

/* ---- the GPU sweep (`test_budget gpu`, issue 18's GPU half) --------------------------------
 *
 * Every job above that has a GPU path, on --device cuda: n (several out-of-GPU-core steps at the
 * small budgets), tile, --stripe (none, and two tiles) and --gpu-mem from below one tile column
 * (refused) to the matrix and more (in core), with --host-mem generous (four times the matrix
 * and 256 MiB) or moderate (half the matrix and 24 MiB) in turn, and journaling on and off.
 * Each run: the host peak within --host-mem; a refusal is OOC_ERR_BUDGET naming --gpu-mem or
 * --host-mem and writes nothing; an OK run passed its --check full, ran on the cuda backend
 * (the Cholesky's documented move to the CPU when its pinned buffers do not fit the host room
 * planned for gj is allowed, counted and printed; every job runs on the GPU somewhere), reports
 * the tile, stripe and steps that ran (check_ran: the CPU sweep's rules), and lists the GPU with
 * its peak within its budget, which is --gpu-mem (report.device_peak, device_budget). Least
 * squares: lstsq and its updates over tile and --gpu-mem (its GPU path keeps 512 MiB for
 * cuSOLVER's QR workspaces), refused exactly when plan_qr refuses for the executor's budget, and
 * planned = reported = ran as on the CPU. Without the CUDA plugin or a GPU the sweep skips
 * itself (exit 77). */

static const double gpu_frac[] = {0.05, 0.2, 0.35, 0.6, 1.6}; /* of the matrix's 8 n^2 bytes */

/* Jobs whose device panel is at least a tile column (n x tile doubles): refused at the smallest
 * --gpu-mem, which is below that. */
static int gpu_panel_job(job_kind_t k) {
  return k != J_NEWTON && k != J_HYPER7 && k != J_GEMM && k != J_SOLVE_FACTOR;
}

static void sweep_job_gpu(job_kind_t k, int64_t n, int64_t tile) {
  int64_t M = 8 * n * n;
  int64_t stripes[] = {0, 2 * tile};
  int ok_here = 0, refused_here = 0, cpu_here = 0;
  for (int si = 0; si < 2; si++)
    for (int fi = 0; fi < (int)(sizeof gpu_frac / sizeof gpu_frac[0]); fi++) {
      int64_t gpu = (int64_t)(gpu_frac[fi] * (double)M) + ((int64_t)1 << 20);
      int moderate = fi % 2;
      int64_t mem = moderate ? M / 2 + ((int64_t)24 << 20) : 4 * M + ((int64_t)256 << 20);
      g_dev = OOC_DEVICE_CUDA;
      g_gpu_mem = gpu;
      ooc_ctx_t *ctx = tu_ctx();
      ooc_report_t rep;
      ooc_status_t st = sweep_run(k, n, tile, stripes[si], mem, gpu, (fi + si) % 2, &rep, ctx);
      if (st == OOC_ERR_BUDGET) refused_here++;
      if (st == OOC_OK) {
        ok_here++;
        int on_cpu = strcmp(rep.backend, "cuda") != 0;
        if (on_cpu) { /* only the Cholesky's documented move (plan_chol_gpu) */
          int chol_moved = strstr(rep.warnings, "chol ran on the CPU") != NULL;
          fprintf(stderr, "NOT ON THE GPU: %s n=%lld tile=%lld stripe=%lld gpu=%lld mem=%lld: "
                  "backend %s: %s\n", job_name[k], (long long)n, (long long)tile,
                  (long long)stripes[si], (long long)gpu, (long long)mem, rep.backend,
                  rep.warnings);
          CU_ASSERT(chol_moved);
          n_fallback++;
          cpu_here++;
        } else if (k != J_SOLVE_FACTOR) { /* (a Cholesky solve --factor: two host sweeps) */
          /* the GPU it ran on, its peak within --gpu-mem */
          CU_ASSERT(rep.ndevices >= 1);
          CU_ASSERT_EQUAL(rep.device_id[0], 0);
          CU_ASSERT_EQUAL(rep.device_budget[0], gpu);
          CU_ASSERT(rep.device_peak[0] > 0 && rep.device_peak[0] <= gpu);
          if (rep.ndevices < 1 || rep.device_budget[0] != gpu)
            fprintf(stderr, "DEVICES: %s n=%lld gpu=%lld: %d devices, budget %lld, peak "
                    "%lld\n", job_name[k], (long long)n, (long long)gpu, rep.ndevices,
                    (long long)rep.device_budget[0], (long long)rep.device_peak[0]);
        }
      }
      tu_ctx_done(ctx);
    }
  g_dev = OOC_DEVICE_CPU;
  g_gpu_mem = 0;
  printf("\n  %-20s n=%lld tile %lld: %d ran, %d refused%s", job_name[k], (long long)n,
         (long long)tile, ok_here, refused_here, cpu_here ? " (some on the CPU)" : "");
  CU_ASSERT(ok_here > cpu_here); /* each job runs on the GPU somewhere in the sweep, */
  if (gpu_panel_job(k)) CU_ASSERT(refused_here > 0); /* and the sweep reaches its edge */
}

/* n = 1100 with tile 128 (an uneven last tile) and n = 1800 with tile 256 (232 after
 * plan_tile); newton and hyper7 (a dozen out-of-core products a run) at the first only. */
static void sweep_gpu(job_kind_t first, job_kind_t last) {
  static const int64_t sizes[] = {1100, 1800}, tiles[] = {128, 256};
  for (int ni = 0; ni < 2; ni++) {
    if (ni > 0 && (first == J_NEWTON || first == J_HYPER7)) break;
    write_inputs(sizes[ni], 7);
    for (job_kind_t k = first; k <= last; k++) {
      prefactor(k, 128);
      sweep_job_gpu(k, sizes[ni], tiles[ni]);
    }
  }
}

static void tg_gj(void) { sweep_gpu(J_INV_GJ, J_INV_GJ), sweep_gpu(J_SOLVE_GJ, J_SOLVE_GJ); }
static void tg_chol(void) {
  sweep_gpu(J_INV_CHOL, J_INV_AUTO), sweep_gpu(J_SOLVE_CHOL, J_SOLVE_FACTOR);
}
static void tg_iter(void) { sweep_gpu(J_NEWTON, J_HYPER7); }
static void tg_gemm(void) { sweep_gpu(J_GEMM, J_GEMM); }
static void tg_lu(void) { sweep_gpu(J_INV_LU, J_SOLVE_FACTOR_LU); }
static void tg_rbt(void) { sweep_gpu(J_SOLVE_RBT, J_SOLVE_RBT); }

/* Least squares on the GPU: --gpu-mem around the 512 MiB its plan keeps for cuSOLVER (below it:
 * refused, the executor's own part included) up to 1 GiB; --host-mem 4 MiB or 64 MiB. */
static void sweep_ls_gpu(ls_kind_t k, int64_t n) {
  static const int64_t tiles[] = {0, 16, 100};
  static const int64_t gmems[] = {520 << 20, 529 << 20, 536 << 20, 600 << 20, 1 << 30};
  int64_t pn = k == L_ADD_COLS ? n + LS_KV : n;
  int64_t rows = k == L_LSTSQ || k == L_ADD_COLS ? LS_M : k == L_ADD_ROWS ? LS_MU : 0;
  int ok_here = 0, refused_here = 0;
  CU_ASSERT_PTR_NOT_NULL_FATAL(ooc_cuda()); /* the probe loaded the plugin */
  for (int ti = 0; ti < 3; ti++)
    for (int gi = 0; gi < (int)(sizeof gmems / sizeof gmems[0]); gi++) {
      int64_t tile = tiles[ti], gpu = gmems[gi];
      int64_t mem = (ti + gi) % 2 ? (int64_t)4 << 20 : (int64_t)64 << 20;
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o;
      ooc_opts_default(&o);
      o.device = OOC_DEVICE_CUDA;
      o.gpu_mem = gpu;
      o.tile = tile;
      o.host_mem = mem;
      /* the planner's request as job_qr_plan makes it, with the budget of the executor it
       * makes (one queue: --gpu-mem less the executor's own part; none made: nothing) */
      ex_cuda_config_t xc = {.device = 0, .gpu_mem = gpu, .nqueues = 1};
      ooc_ctx_t *qctx = tu_ctx(); /* its pinned ring is not the run's host peak */
      ooc_exec_t *qx = NULL;
      int64_t gbudget = 0;
      if (ooc_cuda()->ex_create(qctx, &xc, &qx) == OOC_OK) gbudget = qx->budget;
      if (qx) ex_destroy(qx);
      tu_ctx_done(qctx);
      plan_req_t q = {.o = &o, .name = "test", .n = pn, .m = LS_NRHS, .k = rows,
                      .qr_ka = k == L_REMOVE_COLS ? 0 : n, .qr_kv = k == L_ADD_COLS ? LS_KV : 0,
                      .cuda = 1, .gpu_budget = gbudget};
      plan_t p;
      ooc_status_t pst = plan_qr(ctx, &q, &p);
      ooc_clear_error(ctx);
      remove(tu_path("lsout.h5"));
      g_dev = OOC_DEVICE_CUDA;
      g_gpu_mem = gpu;
      ooc_report_t rep;
      memset(&rep, 0, sizeof rep);
      ooc_status_t st = run_ls(k, tile, mem, &rep, ctx);
      g_dev = OOC_DEVICE_CPU;
      g_gpu_mem = 0;
      within_budgets(ls_name[k], n, tile, 0, gpu, mem, st, &rep, ctx);
      if ((st == OOC_ERR_BUDGET) != (pst == OOC_ERR_BUDGET))
        fprintf(stderr, "PLAN: %s n=%lld tile=%lld gpu=%lld mem=%lld: the plan says %s, the run "
                "%s: %s\n", ls_name[k], (long long)n, (long long)tile, (long long)gpu,
                (long long)mem, ooc_status_str(pst), ooc_status_str(st), ooc_ctx_error(ctx));
      CU_ASSERT_EQUAL(st == OOC_ERR_BUDGET, pst == OOC_ERR_BUDGET);
      if (st == OOC_ERR_BUDGET) {
        n_refused++;
        refused_here++;
        const char *e = ooc_ctx_error(ctx);
        CU_ASSERT(strstr(e, "--gpu-mem") != NULL || strstr(e, "--host-mem") != NULL);
        CU_ASSERT(!tu_file_exists(tu_path("lsout.h5")));
      } else {
        if (st != OOC_OK)
          fprintf(stderr, "FAILED: %s n=%lld tile=%lld gpu=%lld mem=%lld: %s: %s\n", ls_name[k],
                  (long long)n, (long long)tile, (long long)gpu, (long long)mem,
                  ooc_status_str(st), ooc_ctx_error(ctx));
        CU_ASSERT_EQUAL(st, OOC_OK);
        if (st == OOC_OK && pst == OOC_OK) {
          n_ok++;
          ok_here++;
          CU_ASSERT(rep.host_peak <= rep.host_budget);
          CU_ASSERT_EQUAL(rep.host_budget, mem);
          CU_ASSERT_STRING_EQUAL(rep.backend, "cuda");
          CU_ASSERT(rep.ndevices >= 1 && rep.device_budget[0] == gpu &&
                    rep.device_peak[0] > 0 && rep.device_peak[0] <= gpu);
          /* planned = reported = ran: the row block, the panel, the blocks folded */
          CU_ASSERT_EQUAL(rep.tile, p.b);
          CU_ASSERT_EQUAL(rep.stripe, p.W);
          CU_ASSERT_EQUAL(ls_attr("block_rows"), p.b);
          CU_ASSERT_EQUAL(ls_attr("panel_rows"), p.W);
          CU_ASSERT_EQUAL(rep.steps, rows > 0 ? (rows + p.b - 1) / p.b : 1);
          CU_ASSERT(p.W >= p.b && p.b >= 1 && (rows == 0 || p.b <= rows) &&
                    (tile == 0 || p.b <= tile));
          if (rep.tile != p.b || rep.stripe != p.W ||
              rep.steps != (rows > 0 ? (rows + p.b - 1) / p.b : 1))
            fprintf(stderr, "REPORT: %s n=%lld tile=%lld gpu=%lld: planned block %lld panel "
                    "%lld, report block %lld panel %lld, %lld steps\n", ls_name[k],
                    (long long)n, (long long)tile, (long long)gpu, (long long)p.b,
                    (long long)p.W, (long long)rep.tile, (long long)rep.stripe,
                    (long long)rep.steps);
          CU_ASSERT_EQUAL(rep.n, k == L_REMOVE_COLS ? n - 2 : pn);
        }
      }
      tu_ctx_done(ctx);
    }
  printf("\n  %-20s n=%lld: %d ran, %d refused", ls_name[k], (long long)n, ok_here,
         refused_here);
  CU_ASSERT(ok_here > 0);
  CU_ASSERT(refused_here > 0); /* 520 MiB is below the plan's 512 MiB plus the executor's part */
}

static void tg_lstsq(void) { lstsq_all(sweep_ls_gpu); }

static void tg_summary(void) {
  printf("\n  GPU budget sweep: %d runs, %d ran, %d refused (budget too small), %d over "
         "--host-mem, %d devices over --gpu-mem, %d Cholesky runs moved to the CPU\n", n_runs,
         n_ok, n_refused, n_over, n_dev_over, n_fallback);
  CU_ASSERT_EQUAL(n_over, 0);
  CU_ASSERT_EQUAL(n_dev_over, 0);
  CU_ASSERT(n_ok > 0 && n_refused > 0);
}

/* The GPU sweep, or exit 77 (skipped) when --device cuda has no GPU: a call on a tiny matrix
 * says so (OOC_ERR_NODEVICE: no CUDA plugin, its libraries or a usable GPU). */
static int gpu_main(void) {
  /* (outside the CUnit run: no tu_ctx or generator, whose checks are CUnit assertions) */
  double A[16 * 16];
  for (int i = 0; i < 16 * 16; i++) A[i] = i % 17 == 0 ? 4.0 : 1.0 / (1 + i % 7);
  tu_write_matrix(tu_path("probe.h5"), "/A", 16, 16, A, 2);
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) return 1;
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CUDA;
  o.method = OOC_METHOD_GJ;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, tu_path("probe.h5"), tu_path("probe_inv.h5"), &o, &rep);
  if (st == OOC_ERR_NODEVICE) {
    printf("test_budget gpu: SKIPPED: %s\n", ooc_ctx_error(ctx));
    ooc_ctx_destroy(ctx);
    return 77;
  }
  if (st != OOC_OK)
    printf("test_budget gpu: the probe failed (%s: %s); running the sweep anyway\n",
           ooc_status_str(st), ooc_ctx_error(ctx));
  else
    printf("test_budget gpu: %s; %s\n", ooc_build_info(), rep.warnings);
  ooc_ctx_destroy(ctx);
  const tu_test_t tests[] = {{"gpu: gj invert and solve", tg_gj},
                             {"gpu: chol invert, auto, solve, factor, logdet, solve --factor",
                              tg_chol},
                             {"gpu: newton, hyper7", tg_iter},
                             {"gpu: gemm", tg_gemm},
                             {"gpu: lu invert, solve, auto solve, factor, auto logdet, "
                              "solve --factor", tg_lu},
                             {"gpu: rbt solve", tg_rbt},
                             {"gpu: lstsq, add rows, remove columns, add columns", tg_lstsq},
                             {"gpu: summary", tg_summary},
                             {NULL, NULL}};
  return tu_run("budget-gpu", tests);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "gpu")) return gpu_main();
  const tu_test_t tests[] = {{"issue case n=2000 tile 256 40M", t_issue_case},
                             {"gj invert and solve", t_gj},
                             {"chol invert, auto, solve, factor, logdet, solve --factor", t_chol},
                             {"newton, hyper7", t_iter},
                             {"gemm", t_gemm},
                             {"lu invert, solve, auto solve, factor, auto logdet, solve --factor", t_lu},
                             {"rbt solve", t_rbt},
                             {"lstsq, add rows, remove columns, add columns", t_lstsq},
                             {"planner: keep the stores in the cache when a wide stripe remains", t_planner_nospill},
                             {"cases the GPU sweep found over --host-mem (LU's full check, rbt's stores)", t_found_on_gpu},
                             {"summary", t_summary},
                             {NULL, NULL}};
  return tu_run("budget", tests);
}
