/* plan.c: the planner (plan.h). Every stripe, block and budget split of a call is decided here. */
#include "api/plan.h"
#include "api/methods.h"

#include <stdlib.h>
#include <string.h>

#include "base/memlimit.h"
#include "io/journal.h"
#include "solvers/check.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/iter.h"
#include "solvers/lu.h"
#include "solvers/oocgemm.h"
#include "solvers/qr.h"
#include "tiling/tstore.h"
#include "exec/plugin.h"

/* Small allocations outside the planned buffers (structs, names): kept out of the cache. */
#define SLACK_BYTES (64 * 1024)

/* The staging the HDF5 reader and writer may always use (job.c's io_min_stage). */
static int64_t io_stage(int64_t b) { return 8 * b * ooc_max64(b, 256); }

/* The API sets --host-mem's default (base/memlimit.h) before it plans; the same default here for
 * callers of the planner alone. */
static int64_t host_budget(const ooc_opts_t *o) {
  char src[200];
  int64_t m = o->host_mem > 0 ? o->host_mem : ooc_default_host_mem(src, sizeof src);
  return m > 0 ? m : (int64_t)1 << 30;
}

static int is_iter(const plan_t *p) { return plan_is_iter(p->q.o->method); }

/* The method the workspace is planned for: the call's, or one a factor file or the job fixes;
 * auto when the load decides (methods.h's workspaces). */
static int planned_method(const plan_req_t *q) {
  int id = q->o->method;
  if (plan_is_iter(id) || id == OOC_METHOD_RBT) return id;
  if (q->lu == 2) return OOC_METHOD_LU;
  if (q->chol_only) return OOC_METHOD_CHOL;
  return id;
}

int64_t plan_ws(const plan_t *p, int64_t W) {
  int id = planned_method(&p->q);
  if (id != OOC_METHOD_AUTO) return method_get(id)->ws(p, W);
  /* auto: the room of every method it may pick */
  int64_t ws = method_get(OOC_METHOD_CHOL)->ws(p, W);
  if (!p->q.no_gj) ws = ooc_max64(ws, method_get(OOC_METHOD_GJ)->ws(p, W));
  return p->q.lu ? ooc_max64(ws, method_get(OOC_METHOD_LU)->ws(p, W)) : ws;
}

int64_t plan_lu_stripe(const plan_t *p) {
  int64_t n = p->q.n, b = p->b, m = p->q.m, W = ts_stripe(n, b, p->W);
  if (p->q.lu || n == 0) return W; /* planned with LU's workspace */
  int64_t room = plan_ws(p, p->W);
  while (W > b && lu_workspace_bytes(n, b, W, m) > room) W = ts_stripe(n, b, W - b);
  return lu_workspace_bytes(n, b, W, m) <= room ? W : 0;
}

int64_t plan_cache(const plan_t *p) { return p->budget - p->fixed - plan_ws(p, p->W); }

/* The widest stripe up to Wmax whose workspace fits `room`: Wmax itself, else the most whole
 * tile columns (the workspace grows with W); 0 if not even one tile column fits. */
static int64_t widest(const plan_t *p, int64_t room, int64_t Wmax) {
  if (plan_ws(p, Wmax) <= room) return Wmax;
  int64_t b = p->b, lo = 0, hi = Wmax / b;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (plan_ws(p, mid * b) <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo * b;
}

/* Bytes the tile stores hold when nothing spills: A (its lower triangle when Cholesky may run:
 * job.c stores no more) and B. */
static int64_t store_bytes(const plan_t *p) {
  int64_t n = p->q.n, b = p->b;
  int lower = p->q.chol_only || p->q.o->method == OOC_METHOD_CHOL ||
              p->q.o->method == OOC_METHOD_AUTO;
  int64_t a = lower ? 8 * (n * n + n * b) / 2 : 8 * n * n; /* diagonal tiles whole */
  return a + 8 * n * p->q.m;
}

/* A stripe narrower than the widest may keep the stores in the cache: a spill costs a write and
 * a read of every evicted tile per step (16 n^2 bytes from disk), a narrower stripe only more
 * passes over memory. The widest stripe with no spill, if it is at least min(n, 8192) columns
 * (the width a GPU step needs to stay compute-bound, DESIGN.md section 5); else Wmax. */
static int64_t nospill_stripe(const plan_t *p, int64_t avail, int64_t Wmax) {
  int64_t W = widest(p, avail - store_bytes(p), Wmax);
  return W > 0 && W >= ooc_min64(p->q.n, ooc_max64(p->b, 8192)) ? W : Wmax;
}

/* The stripe of the striped methods within the host room `avail`: the widest whose workspace
 * fits (n: one step), narrower where that keeps the stores cached (nospill_stripe), at most
 * --stripe; 0 when not even one tile column fits. */
static int64_t host_stripe(plan_t *p, int64_t avail) {
  int64_t n = p->q.n, b = p->b;
  int64_t W = widest(p, avail, n);
  if (W < b && p->q.lu == 1) { /* LU may not be needed: plan the others alone */
    p->q.lu = 0;
    W = widest(p, avail, n);
  }
  if (W < b) return 0;
  W = ooc_min64(W, nospill_stripe(p, avail, W));
  if (p->q.o->stripe > 0) W = ooc_min64(W, p->q.o->stripe);
  return ts_stripe(n, b, W);
}

static ooc_status_t too_small(ooc_ctx_t *ctx, const plan_t *p, int64_t need) {
  char have[32], nb[32];
  return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                  "%s: --host-mem %s is too small for n = %lld with tile %lld: at least %s is "
                  "needed (a stripe of one tile column, n x tile doubles, plus buffers); raise "
                  "--host-mem or lower --tile",
                  p->q.name, ooc_fmt_bytes(p->budget, have, sizeof have), (long long)p->q.n,
                  (long long)p->b, ooc_fmt_bytes(need, nb, sizeof nb));
}

/* An executor made as the run's will be (plan_exec_config, the job's first listed device) for a
 * plan's questions: its budget is the one the run's will have, and cuSOLVER's workspaces are its
 * to tell. No trace file: a question, not the run. */
static ooc_status_t question_exec(ooc_ctx_t *ctx, const plan_req_t *q, ooc_exec_t **x) {
  ex_cuda_config_t xc = plan_exec_config(q->o);
  xc.trace = NULL;
  xc.device = q->dev0;
  return ooc_cuda()->ex_create(ctx, &xc, x);
}

/* The Cholesky's device stripe for job with K ring slots on an executor made as the run's
 * (chol_device_stripe); OOC_ERR_BUDGET naming --gpu-mem when not even one tile column fits. */
static ooc_status_t chol_device_plan(ooc_ctx_t *ctx, const plan_req_t *q, int64_t b, int job,
                                     int K, int64_t *W) {
  ooc_exec_t *x = NULL;
  OOC_TRY(question_exec(ctx, q, &x));
  int64_t n = q->n, left = x->budget;
  int64_t need = chol_device_bytes(x, n, b, ooc_min64(b, n), job, 0, K);
  *W = chol_device_stripe(x, n, b, job, K);
  ex_destroy(x);
  if (*W > 0) return OOC_OK;
  char have[32], nb[32];
  return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s: --gpu-mem leaves %s for the Cholesky's buffers, less "
                  "than the %s of a stripe of one tile column with its %d column blocks (n = "
                  "%lld, tile %lld); raise --gpu-mem or lower --tile", q->name,
                  ooc_fmt_bytes(left, have, sizeof have), ooc_fmt_bytes(need, nb, sizeof nb),
                  K, (long long)n, (long long)b);
}

int64_t plan_lu_device_stripe(ooc_exec_t *x, const ooc_opts_t *o, const char *who, int64_t n,
                              int64_t b, int K, char *why, size_t cap) {
  int64_t need = 0, W = lu_device_stripe(x, n, b, K, &need);
  if (W > 0) /* --stripe caps the device's stripe as it caps the host plan's (issue 18's GPU
              * sweep: LU ran the widest stripe the device held whatever --stripe said) */
    return o->stripe > 0 && W > o->stripe ? ts_stripe(n, b, o->stripe) : W;
  char have[32], nb[32];
  int64_t gm = o->gpu_mem; /* --gpu-mem in all: the executor keeps a part for itself */
  snprintf(why, cap, "%s: --gpu-mem leaves %s for LU's panel, less than one tile column with its "
           "ring (n = %lld, tile %lld): at least %s of --gpu-mem is needed", who,
           ooc_fmt_bytes(x->budget, have, sizeof have), (long long)n, (long long)b,
           ooc_fmt_bytes(need + (gm > 0 ? gm - x->budget : 0), nb, sizeof nb));
  return 0;
}

/* LU on the GPU (req.lu; job_lu.c runs it): asked of an executor made as the run's will be
 * (lu_cuda_config), as chol_device_plan asks chol's. The host keeps only that executor's K
 * pinned n x b slots and small arrays (lu_host_bytes) and the executor's own host bytes,
 * measured here, with what it grows to in the run (LU_EXEC_GROWTH): methods.c lu_ws counts those
 * in place of the n x W host panel, which on the GPU is device memory. K: the most slots, up to
 * LU_SLOTS, within the host plan's LU workspace (at p->W) with which one tile column fits the
 * device. Certain (req.lu 2): W is the device's stripe (at most --stripe), and a device too
 * small fails with OOC_ERR_BUDGET naming --gpu-mem; under auto (1) LU then stays planned on the
 * host (lu_gpu 0: should auto pick it, it runs on the CPU in that room and says why). Why: the
 * host panel was reserved beside the cache on the GPU too; at n = 32768, tile 2048 and
 * --host-mem 4G it was 2 GB of room the cache lacked (H200, docs/PERFORMANCE.md, thirty-first
 * session). */
static ooc_status_t lu_gpu_plan(ooc_ctx_t *ctx, plan_t *p) {
  int64_t n = p->q.n, b = p->b, Wd = 0;
  ex_cuda_config_t xc = lu_cuda_config(p->q.dev0, p->q.o->gpu_mem, n, NULL);
  ooc_exec_t *x = NULL;
  int64_t h0 = ooc_ctx_host_bytes(ctx);
  OOC_TRY(ooc_cuda()->ex_create(ctx, &xc, &x));
  int64_t exh = ooc_ctx_host_bytes(ctx) - h0 + LU_EXEC_GROWTH(n);
  /* the slots within the host stripe's workspace the host plan made room for (p->W: more slots
   * than that would take the cache's room); one at least */
  int64_t room = lu_workspace_bytes(n, b, p->W, p->q.m);
  char why[400] = "";
  int K = LU_SLOTS + 1;
  while (Wd == 0 && --K >= 1)
    if (K == 1 || lu_host_bytes(n, b, n, K) <= room)
      Wd = plan_lu_device_stripe(x, p->q.o, p->q.name, n, b, K, why, sizeof why);
  ex_destroy(x);
  if (Wd > 0) {
    p->lu_gpu = 1;
    p->lu_slots = K;
    p->lu_exh = exh;
    if (p->q.lu == 2) p->W = Wd;
    return OOC_OK;
  }
  if (p->q.lu != 2) return OOC_OK;
  return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s; raise --gpu-mem or lower --tile", why);
}

/* Cholesky for certain on the GPU with K ring slots: the device's stripe, then the widest the
 * host room holds with the executor's pinned buffers charged (plan_ws), narrower where that keeps
 * the stores cached, evened over its steps. */
static ooc_status_t chol_gpu_plan(ooc_ctx_t *ctx, plan_t *p, int K) {
  int64_t n = p->q.n, b = p->b, Wd = 0, avail = p->budget - p->fixed;
  char have[32], nb[32];
  p->chol_slots = K;
  OOC_TRY(chol_device_plan(ctx, &p->q, b, p->q.chol_job, K, &Wd));
  p->chol_gpu = 1;
  int64_t cap = ooc_min64(Wd, p->q.o->stripe > 0 ? p->q.o->stripe : n);
  int64_t W = widest(p, avail, ts_stripe(n, b, cap));
  if (W == 0) { /* not even one tile column */
    int64_t need = p->fixed + plan_ws(p, b); /* the GPU's buffers: before chol_gpu is cleared */
    p->chol_gpu = 0;
    return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                    "%s: --host-mem %s is too small for the GPU Cholesky with n = %lld and tile "
                    "%lld: at least %s is needed (pinned panel and column blocks); raise "
                    "--host-mem or lower --tile", p->q.name,
                    ooc_fmt_bytes(p->budget, have, sizeof have), (long long)n, (long long)b,
                    ooc_fmt_bytes(need, nb, sizeof nb));
  }
  p->W = ts_stripe(n, b, ts_even_stripe(n, b, nospill_stripe(p, avail, W)));
  return OOC_OK;
}

/* The lean ring (CHOL_SLOTS_LEAN, chol.h) over the full one: where it runs fewer steps (each
 * step sweeps the lower triangle once), or as many while the full ring's stores spill (then the
 * host's moves set the pace, and the lean ring leaves the cache two column blocks more). */
static int lean_is_better(const plan_t *full, const plan_t *lean) {
  int64_t n = full->q.n, sf = ooc_cdiv64(n, full->W), sl = ooc_cdiv64(n, lean->W);
  return sl < sf || (sl == sf && plan_cache(full) < store_bytes(full));
}

/* The product's buffers on an executor made as the run's (gemm_device_plan). */
static ooc_status_t gemm_plan_on(ooc_ctx_t *ctx, const plan_req_t *q, int64_t m, int64_t n,
                                 int64_t k, int64_t b, int64_t host_max, int64_t *s, int64_t *kb,
                                 int *nslots, int *ncblk) {
  ooc_exec_t *x = NULL;
  OOC_TRY(question_exec(ctx, q, &x));
  ooc_status_t st = gemm_device_plan(ctx, x, m, n, k, b, host_max, s, kb, nslots, ncblk);
  ex_destroy(x);
  return st;
}

/* The GPU pipeline after the host plan: the stripe must also fit the GPU budget, and the
 * executor's pinned ring of column blocks comes out of the host budget (charged as fixed, so the
 * tile cache shrinks to match). Cholesky for certain: its own executor's stripe and pinned
 * buffers (plan_ws then counts them in place of the host panel), widest within both budgets or
 * narrower to keep the lower triangle cached; solve --factor uses no GPU buffers. newton/hyper7: the block from the GPU budget, its pinned buffers
 * within the half of the host room the host block would get (the cache, A and the iterates, get
 * the rest); --stripe caps it as on the CPU. */
static ooc_status_t plan_gpu(ooc_ctx_t *ctx, plan_t *p) {
  int64_t n = p->q.n, b = p->b;
  char have[32], nb[32];
  if (is_iter(p)) {
    int64_t s = 0, kb = 0;
    int ncblk = 0, nslots = 0;
    int64_t host_max = (p->budget - p->fixed) / 2 -
                       iter_stores(p->q.o->method) * tstore_overhead_bytes(n, n, b) -
                       iter_own_bytes(n, b);
    if (host_max <= 0)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s: --host-mem %s leaves no room for the GPU "
                      "product's pinned buffers (n = %lld, tile %lld); raise --host-mem or lower "
                      "--tile", p->q.name, ooc_fmt_bytes(p->budget, have, sizeof have),
                      (long long)n, (long long)b);
    /* the products spread over the job's devices (issue 26): each device's pinned buffers */
    host_max /= p->q.ndev > 1 ? p->q.ndev : 1;
    OOC_TRY(gemm_plan_on(ctx, &p->q, n, n, n, b, host_max, &s, &kb, &nslots, &ncblk));
    if (p->q.o->stripe > 0) s = ooc_min64(s, ooc_max64(b, p->q.o->stripe / b * b));
    p->gkb = kb;
    p->gncblk = ncblk;
    p->gslots = nslots;
    p->W = ooc_min64(s, n);
    return OOC_OK;
  }
  if (p->q.lu) { /* LU certain, or auto may pick it: its device question first */
    OOC_TRY(lu_gpu_plan(ctx, p));
    if (p->q.lu == 2) return OOC_OK;
  }
  if (p->q.chol_certain && p->q.chol_job == CHOL_SOLVE_FACTORED)
    return OOC_OK; /* two sweeps on the host */
  if (p->q.chol_certain) { /* Cholesky for certain: its executor's stripe, ring and buffers */
    plan_t lean = *p;
    ooc_status_t full = chol_gpu_plan(ctx, p, CHOL_SLOTS);
    if (full != OOC_OK && full != OOC_ERR_BUDGET) return full; /* a device failure, not a fit */
    ooc_status_t st = chol_gpu_plan(ctx, &lean, CHOL_SLOTS_LEAN);
    /* a device failure, or neither ring fits: the lean one's message (it asks the least) */
    if (st != OOC_OK && (st != OOC_ERR_BUDGET || full != OOC_OK)) return st;
    if (st == OOC_OK && (full != OOC_OK || lean_is_better(p, &lean))) *p = lean;
    ooc_clear_error(ctx);
    return OOC_OK;
  }
  /* Gauss-Jordan (gj_x.c) when auto may still pick it: the device stripe is asked of an executor
   * made as the run's will be (cuSOLVER's getrf and getri workspaces are the library's to tell),
   * and the host keeps only its pinned ring: the host stripe is planned again with that. */
  p->gj_gpu = 1;
  int64_t avail = p->budget - p->fixed, W = host_stripe(p, avail);
  if (W == 0) {
    p->gj_gpu = 0;
    return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                    "%s: --host-mem %s is too small for the GPU pipeline with n = %lld and tile "
                    "%lld: at least %s is needed (pinned column blocks); raise --host-mem or lower "
                    "--tile", p->q.name, ooc_fmt_bytes(p->budget, have, sizeof have),
                    (long long)n, (long long)b, ooc_fmt_bytes(p->fixed + plan_ws(p, b), nb, sizeof nb));
  }
  ooc_exec_t *x = NULL;
  OOC_TRY(question_exec(ctx, &p->q, &x));
  int64_t Wd = gj_x_device_stripe(x, n, b, W), left = x->budget;
  ex_destroy(x);
  if (Wd == 0) {
    p->gj_gpu = 0;
    return OOC_FAIL(ctx, OOC_ERR_BUDGET, "%s: --gpu-mem leaves %s for Gauss-Jordan's panel, less "
                    "than one tile column with its ring and workspaces (n = %lld, tile %lld); "
                    "raise --gpu-mem or lower --tile", p->q.name,
                    ooc_fmt_bytes(left, have, sizeof have), (long long)n, (long long)b);
  }
  p->W = Wd;
  return OOC_OK;
}

int64_t plan_tile(int64_t n, int64_t t) {
  if (n <= 0 || t <= 0) return ooc_min64(n, t);
  int64_t k = ooc_cdiv64(n, t), b = ooc_cdiv64(n, k);
  /* a multiple of 8 doubles when --tile is one: tile columns start on 64-byte lines and tile
   * leading dimensions stay even (GPU GEMMs take slower paths for odd ones); still k tiles */
  if (k > 1 && t % 8 == 0) b = ooc_min64(t, ooc_cdiv64(b, 8) * 8);
  return b;
}

plan_traffic_t plan_spill_model(int chol, int64_t n, int64_t b, int64_t W) {
  plan_traffic_t t = {0, 0};
  if (n <= 0 || b <= 0) return t;
  int64_t steps = ooc_cdiv64(n, ts_stripe(n, b, W));
  part_t p = part_make(n, b);
  int64_t kept = 0; /* elements of the tiles a step takes and puts back */
  for (int64_t tj = 0; tj < p.count; tj++)
    kept += part_len(p, tj) * (chol ? n - part_start(p, tj) : n);
  t.spilled = t.unspilled = steps * 8 * kept;
  return t;
}

int64_t plan_subtiles(int64_t n, int64_t b) {
  const char *e = getenv("OOCSOLVE_SUBTILE");
  int64_t d = e ? strtoll(e, NULL, 10) : 1;
  if (d < 2 || d > 16 || b < 256 || b % (8 * d) || ooc_cdiv64(n, b / d) % d) return 1;
  return d;
}

int64_t plan_chunk(int64_t n, int64_t b) {
  if (b >= 256 || b <= 0 || n <= 0) return b;
  int64_t k = ooc_cdiv64(n, b), d = 1;
  while (d < k && (b * d < 256 || k % d)) d++;
  return b * d;
}

ooc_status_t plan_solver(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p) {
  memset(p, 0, sizeof *p);
  p->q = *q;
  const ooc_opts_t *o = q->o;
  int64_t n = q->n, m = q->m;
  if (o->tile < 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "--tile must be positive (got %lld)", (long long)o->tile);
  p->b = plan_tile(n, o->tile ? o->tile : 4096);
  int64_t b = p->b;
  p->chunk = plan_chunk(n, b); /* tiles that cover n evenly: no padded edge chunks */
  int64_t sub = plan_subtiles(n, b);
  if (sub > 1) { /* the output's chunks keep the tile asked for; the stores tile them finer */
    p->chunk = b;
    p->b = b = b / sub;
  }
  p->budget = host_budget(o);
  p->fixed = tstore_overhead_bytes(n, n, b) + (m ? tstore_overhead_bytes(n, m, b) : 0) + 16 * n +
             io_stage(b) + SLACK_BYTES;
  if (q->fused_check) p->fixed += check_fused_bytes(n);
  if (q->probe_a) p->fixed += check_probe_bytes(n);
  if (q->lu_fused) p->fixed += lu_fused_bytes(n, p->chunk);
  if (q->journaled && n > 0) { /* the tile tables a checkpoint builds: A and B, or the result
                                  store of an LU inverse (as large as A) */
    int64_t nt = ooc_cdiv64(n, b);
    int lu_inv = q->lu == 2 && m == 0 && q->chol_job == CHOL_INVERT;
    p->fixed += (int64_t)sizeof(jr_tile_t) * nt * (nt + (lu_inv ? nt : ooc_cdiv64(m, b)));
  }
  int64_t avail = p->budget - p->fixed;
  int64_t W = 0;
  if (n == 0) {
    W = 0;
  } else if (is_iter(p)) { /* W = GEMM block: half the room; the cache (A, iterates) the rest */
    W = plan_ws(p, b) <= avail ? b : 0;
    while (W > 0 && W < n && plan_ws(p, W + b) <= avail / 2) W += b;
    if (W < b) return too_small(ctx, p, p->fixed + plan_ws(p, b));
    if (o->stripe > 0) W = ooc_min64(W, ooc_max64(b, o->stripe / b * b));
    W = ooc_min64(W, n);
  } else {
    W = host_stripe(p, avail);
    if (W == 0) return too_small(ctx, p, p->fixed + plan_ws(p, b));
  }
  p->W = W;
  p->cuda = q->cuda && ooc_cuda(); /* a GPU was picked: the plugin is loaded (exec/plugin.h) */
  if (p->cuda && n > 0) {
    ooc_status_t st = plan_gpu(ctx, p);
    /* --device auto: a GPU pipeline that does not fit the budgets is no reason to fail when the
     * CPU can do the job: run on the CPU and say why. --device cuda keeps the error. */
    if (st == OOC_ERR_BUDGET && o->device == OOC_DEVICE_AUTO) {
      snprintf(p->notice, sizeof p->notice, "GPU not used: %s", ooc_ctx_error(ctx));
      ooc_clear_error(ctx);
      p->cuda = 0;
      p->gncblk = 0; /* newton/hyper7: the host block stands */
      p->gj_gpu = p->chol_gpu = p->lu_gpu = 0; /* the workspaces are the host's again */
      p->W = W;
      st = OOC_OK;
    }
    OOC_TRY(st);
  }
  return OOC_OK;
}

ooc_status_t plan_chol_gpu(ooc_ctx_t *ctx, const plan_t *p, int job, int64_t *W, int *K,
                           char *why, size_t cap) {
  *W = 0;
  *K = CHOL_SLOTS;
  why[0] = 0;
  if (p->chol_gpu && job == p->q.chol_job) { /* planned as such (plan_gpu) */
    *W = p->W;
    *K = p->chol_slots;
    return OOC_OK;
  }
  if (!p->cuda) {
    snprintf(why, cap, "chol ran on the CPU: no GPU was picked");
    return OOC_OK;
  }
  int64_t n = p->q.n, b = p->b, m = p->q.m;
  /* its pinned panel and ring must fit the host room planned for the method (sized for gj when
   * the method was not yet known; chol's in-device sweep needs a little more device memory than
   * gj, so a matrix that fits gj in one step can need chol's ring) */
  int64_t reserved = plan_ws(p, p->W), need = 0, Wneed = 0; /* the least asked, its stripe */
  int nd = job == CHOL_INVERT && p->q.ndev > 1 ? p->q.ndev : 1; /* chol.h "Several devices" */
  const int ks[2] = {CHOL_SLOTS, CHOL_SLOTS_LEAN};
  ooc_status_t st = OOC_OK;
  for (int i = 0; i < 2; i++) {
    int64_t Wd = 0;
    ooc_status_t s = chol_device_plan(ctx, &p->q, b, job, ks[i], &Wd);
    if (s != OOC_OK && s != OOC_ERR_BUDGET) return s; /* a device failure, not a fit */
    if (s != OOC_OK) { /* this ring does not fit the device; the other may */
      st = s;
      continue;
    }
    int64_t Wk = ts_stripe(n, b, ts_even_stripe(n, b, ooc_min64(p->W, Wd)));
    int64_t nk = chol_staging_bytes_nd(n, b, Wk, job, nd, ks[i]) +
                 chol_workspace_bytes(n, b, Wk, m) - 8 * n * Wk;
    if (need == 0 || nk < need) {
      need = nk;
      Wneed = Wk;
    }
    if (nk <= reserved && (*W == 0 || ooc_cdiv64(n, Wk) < ooc_cdiv64(n, *W))) {
      *W = Wk;
      *K = ks[i];
    }
  }
  if (need == 0) return st; /* neither ring fits the device: chol_device_plan's error */
  ooc_clear_error(ctx);
  if (*W == 0) {
    char nb[32], rb[32];
    snprintf(why, cap, "chol ran on the CPU: the GPU pipeline needs %s of host memory for stripe "
             "%lld, %s was planned", ooc_fmt_bytes(need, nb, sizeof nb), (long long)Wneed,
             ooc_fmt_bytes(reserved, rb, sizeof rb));
  }
  return OOC_OK;
}

ooc_status_t plan_gemm(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p) {
  memset(p, 0, sizeof *p);
  p->q = *q;
  const ooc_opts_t *o = q->o;
  int64_t m = q->n, n = q->m, k = q->k;
  if (o->tile < 0) return OOC_FAIL(ctx, OOC_ERR_ARG, "--tile must be positive");
  int64_t big = ooc_max64(1, ooc_max64(m, ooc_max64(n, k)));
  p->b = ooc_min64(o->tile ? o->tile : 4096, big);
  int64_t b = p->b;
  p->chunk = ooc_max64(b, 256); /* the product keeps --tile (its three dimensions share it) */
  p->budget = host_budget(o);
  /* bookkeeping of A, B, C + the reader's/writer's staging; the block gets at most half of the
   * room (oocgemm.h: traffic ~ 1/s), the cache the rest */
  p->fixed = tstore_overhead_bytes(m, k, b) + tstore_overhead_bytes(k, n, b) +
             tstore_overhead_bytes(m, n, b) + SLACK_BYTES + 16 * big + io_stage(b);
  int64_t avail = p->budget - p->fixed;
  /* each device holds its own block and panels (issue 26): the half of the room is theirs */
  int64_t nd = q->ndev > 1 ? q->ndev : 1;
  int64_t s = gemm_block_for(m, n, k, b, avail / 2 / nd);
  if (s < b && nd * gemm_workspace_bytes(m, n, k, b, b) <= avail) s = b;
  p->W = s;
  p->cuda = q->cuda && ooc_cuda(); /* a GPU was picked: the plugin is loaded (exec/plugin.h) */
  p->gncblk = 1;
  p->gslots = 2;
  if (p->cuda) { /* block from the GPU budget; its pinned buffers replace the host workspace and
                  * get at most half of the room, as the host block does */
    OOC_TRY(gemm_plan_on(ctx, q, m, n, k, b, ooc_max64(1, avail / 2 / nd), &p->W, &p->gkb,
                         &p->gslots, &p->gncblk));
  }
  if (p->W < b || plan_ws(p, p->W) > avail) {
    char have[32], need[32];
    p->W = b;
    p->cuda = 0;
    return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                    "%s: --host-mem %s is too small for a %lld x %lld by %lld x %lld product with "
                    "tile %lld: at least %s is needed (a block of tiles and a strip of rows); "
                    "raise --host-mem or lower --tile", q->name,
                    ooc_fmt_bytes(p->budget, have, sizeof have), (long long)m, (long long)k,
                    (long long)k, (long long)n, (long long)b,
                    ooc_fmt_bytes(p->fixed + plan_ws(p, p->W), need, sizeof need));
  }
  return OOC_OK;
}

/* Least squares: device bytes kept out of the panel for cuSOLVER's geqrf workspace. */
#define QR_GPU_WS_MARGIN ((int64_t)512 << 20)

ooc_status_t plan_qr(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p) {
  memset(p, 0, sizeof *p);
  p->q = *q;
  const ooc_opts_t *o = q->o;
  int64_t n = q->n, nrhs = q->m, w = n + nrhs, rows = q->k;
  int64_t want = o->tile > 0 ? o->tile : (4 * n > 4096 ? 4 * n : 4096);
  int64_t state = qr_state_bytes(n, nrhs) + 8 * n * nrhs; /* and X */
  int64_t host_mem = host_budget(o);
  /* the readers' staging windows (h5m_set_stage) come out of the budget too: an eighth of it, at
   * most 1 GiB, 7/8 of that for A (and V, by their columns), 1/8 for b (h5m_read decodes as many
   * chunks at once as its stage holds: the GPU run read 34 GB at 1.4 GB/s with one 128 MiB chunk
   * at a time) */
  int64_t io = host_mem / 8 < ((int64_t)1 << 30) ? host_mem / 8 : ((int64_t)1 << 30);
  int64_t ka = q->qr_ka, kv = q->qr_kv, ia = io / 8 * 7;
  if (kv > 0) {
    p->qr_stage[1] = (int64_t)((double)ia * (double)kv / (double)(ka + kv));
    ia -= p->qr_stage[1];
  }
  p->qr_stage[0] = ia;
  p->qr_stage[2] = io / 8;
  p->budget = host_mem;
  p->fixed = state + io;
  p->cuda = q->cuda;
  int64_t host_left = host_mem - state - io;
  char b1[32], b2[32], b3[32], b4[32];
  int64_t pb, P = 0;
  if (!q->cuda) {
    pb = qr_block_rows(host_left, n, nrhs);
    if (pb < 1)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem %s: least squares keeps R (n x n, n = %lld) "
                      "and d (%lld right-hand sides) in memory, %s, and needs %s more for one row "
                      "block (and %s for reading); R larger than memory (a tiled QR) is not "
                      "implemented", ooc_fmt_bytes(host_mem, b1, sizeof b1), (long long)n,
                      (long long)nrhs, ooc_fmt_bytes(state, b2, sizeof b2),
                      ooc_fmt_bytes(qr_workspace_bytes(n, nrhs, 1, 1), b3, sizeof b3),
                      ooc_fmt_bytes(io, b4, sizeof b4));
  } else {
    int64_t room = q->gpu_budget - QR_GPU_WS_MARGIN - 8 * (n + 1);
    int64_t pd = room / (8 * w) - n;
    /* host: the pinned slots (QR_SLOTS x p rows) and the residual buffer (P <= 16 p rows) */
    int64_t ph = host_left / (8 * (w * QR_SLOTS + 16 * nrhs));
    if (pd < 1 || 8 * n * w > room)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem: the device budget %s, less %s kept for "
                      "cuSOLVER's QR workspaces, holds less than R and d (%s) and one row block "
                      "(n = %lld, %lld right-hand sides); R larger than the device (a tiled QR) "
                      "is not implemented", ooc_fmt_bytes(q->gpu_budget, b1, sizeof b1),
                      ooc_fmt_bytes(QR_GPU_WS_MARGIN, b3, sizeof b3),
                      ooc_fmt_bytes(8 * n * w, b2, sizeof b2), (long long)n, (long long)nrhs);
    if (ph < 1)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem %s: the QR state (%s) and one row block's "
                      "staging slots do not fit", ooc_fmt_bytes(host_mem, b1, sizeof b1),
                      ooc_fmt_bytes(state, b2, sizeof b2));
    pb = pd < ph ? pd : ph;
    /* the panel: tall factorizations (cuSOLVER's geqrf costs O(n) launches whatever its rows),
     * up to 16 blocks, within the device budget */
    int64_t pw = pb < want ? pb : want;
    P = pd < 16 * pw ? pd : 16 * pw;
  }
  if (pb > want) pb = want;
  if (rows > 0 && pb > rows) pb = rows;
  if (pb < 1) pb = 1;
  if (P < pb) P = pb;
  if (rows > 0 && P > rows) P = rows > pb ? rows : pb;
  p->b = pb;
  p->W = P;
  return OOC_OK;
}
