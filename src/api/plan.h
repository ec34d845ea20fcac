/*
 * plan.h: the planner. The only place oocsolve decides, for one call, the tile, the stripe (the
 * columns a striped method eliminates per step), the product's block or least squares' row block
 * and panel, and how the host budget (--host-mem) splits into bookkeeping, the method's workspace
 * and the tile cache, with the GPU's share when the GPU runs it (--gpu-mem through the CUDA
 * executors' capacity questions, or the budget of the executor the job made: least squares).
 *
 * Contract
 * - What is planned is what runs: the stripe is ts_stripe()'s (tstore.h), which gj_run and chol_run
 *   apply to what they are given, so plan_t.W is both the reported stripe and the stripe of every
 *   step (steps = ceil(n / W)); the workspace is the method's own *_workspace_bytes at that W.
 * - budget = fixed + ws(W) + cache, cache >= 0: the host peak of a call stays within --host-mem
 *   (tests/test_budget.c sweeps n, tile, --stripe and --host-mem for every job and asserts it).
 * - Methods are planned once the call is known: elimination jobs whose method is chosen only after
 *   the input is read (auto) get the larger of gj's and chol's workspace, so either fits.
 * - A budget too small fails with OOC_ERR_BUDGET and a message naming --host-mem (or --gpu-mem)
 *   and what is needed. Under --device auto a GPU plan that does not fit falls back to the CPU
 *   (p->cuda cleared, p->notice says why); --device cuda keeps the error.
 * The caller (job.c; job_qr.c for least squares, plan_qr) sets the report's tile, stripe and
 * budget from the plan.
 */
#ifndef OOC_PLAN_H
#define OOC_PLAN_H

#include "oocsolve.h"
#include "base/base.h"
#include "exec/cuda/exec_cuda.h"

typedef struct plan_req {
  const ooc_opts_t *o; /* tile, stripe, host_mem, method, device, gpu_mem, streams, trace */
  const char *name;    /* the input, for messages */
  int64_t n, m;        /* A is n x n; m right-hand-side columns (0: no B). The product: C is
                          n x m */
  int64_t k;           /* the product's inner dimension (A n x k, B k x m); else unused */
  int chol_only;       /* logdet, factor, solve --factor: Cholesky, never a fallback to gj */
  int journaled;       /* checkpoints possible: the journal's tile tables come out of the budget */
  int cuda;            /* the GPU was chosen (the backend); the plan may still drop it */
  int chol_certain;    /* Cholesky for certain (logdet, factor, solve --factor, --method chol):
                          the GPU plan is the Cholesky executor's for chol_job (CHOL_*, chol.h);
                          0 when auto may still pick gj (the GPU plan is then gj's, and chol
                          checks its own against it when it runs: plan_chol_gpu) */
  int chol_job;
  int lu;              /* 2: LU for certain (--method lu, an LU factor file): its workspace.
                          1: auto may pick LU (a solve or logdet): the workspace covers gj, chol
                          and LU, unless LU's does not fit one tile column (then 0). 0: the
                          others only; should auto pick LU, it runs in their room
                          (plan_lu_stripe) or fails with OOC_ERR_BUDGET */
  int no_gj;           /* auto for a logdet: chol or lu, never gj (its workspace is not planned) */
  int fused_check;     /* the inverse check's fused state lives through the run (check.h) */
  int probe_a;         /* the load forms A V for the check (check.h check_probe_t) */
  int lu_fused;        /* the LU factor check's state lives through the run (lu.h lu_fused_t,
                          a band of the output's chunk rows) */
  /* least squares (plan_qr): n the state's columns, m its right-hand sides, k the rows read */
  int64_t qr_ka, qr_kv; /* columns read per row from A and from V (add columns; else 0) */
  int64_t gpu_budget;   /* cuda: the CUDA executor's budget (ex->budget; the job made it) */
  int ndev;             /* devices a spreading method runs on (issue 26, job.c's list; <= 1:
                           one): budgets are per device, and the host holds each device's
                           staging (the methods' *_nd workspaces) */
  int dev0;             /* the first listed device: the GPU the plans ask (--devices 1 plans
                           for GPU 1) */
} plan_req_t;

typedef struct plan {
  plan_req_t q;
  int64_t b;      /* tile edge; least squares: the row block p */
  int64_t W;      /* stripe (gj, chol) or GEMM block edge (newton, hyper7, gemm); least
                     squares: the panel P (rows under [R d] factored at once, P >= b) */
  int64_t chunk;  /* the output's chunk edge */
  int64_t budget; /* host bytes */
  int64_t fixed;  /* bookkeeping, staging, slack, the GPU pipeline's pinned extras */
  int cuda;       /* the GPU runs the method */
  int chol_gpu;   /* W and the pinned buffers are the Cholesky executor's (req.chol_job) */
  int chol_slots; /* with chol_gpu: its ring's slots, CHOL_SLOTS or CHOL_SLOTS_LEAN (chol.h):
                     the lean ring where it makes the stripe wider or the stores spill */
  int gj_gpu;     /* W fits the gj CUDA executor's budget (gj_x_device_stripe) and gj's host
                     workspace is its pinned ring, not a host panel */
  int lu_gpu;     /* LU (req.lu) runs on the GPU: one tile column fits its executor's budget
                     with lu_slots ring slots (lu_device_stripe), and LU's host workspace is
                     those pinned slots and lu_exh, not a host panel (plan_gpu); W is the
                     device's stripe when LU is certain */
  int lu_slots;   /* with lu_gpu: the ring's slots, the most up to LU_SLOTS that fit the device */
  int64_t lu_exh; /* with lu_gpu: the LU executor's own host bytes (its queues' pinned rings,
                     measured on one made as the run's) and what it grows to in the run */
  int64_t gkb;    /* newton/hyper7 and gemm on the GPU: the executor's k panel, C buffers, slots */
  int gncblk, gslots;
  int64_t qr_stage[3]; /* least squares: the readers' staging (h5m_set_stage) of A, V and b */
  char notice[512]; /* why the GPU is not used, when the plan dropped it; else "" */
} plan_t;

/* The tile edge for an n x n matrix when at most t is asked (--tile, default 4096): the fewest
 * tiles of at most t that cover n, k = ceil(n / t), made as equal as whole elements allow,
 * ceil(n / k), rounded up to a multiple of 8 when t is one (aligned tile columns; still k tiles,
 * at most t). Tiles are the output's chunks and the scratch's slots, and HDF5 stores an edge
 * chunk whole: at n = 4500, t = 4096 the plain split (4096 + 404) wrote 537 MB for 162 MB of
 * results; even tiles (2256 + 2244) write 163 MB (under 8 k padded rows and columns).
 * n <= 0 or t <= 0: min(n, t). */
int64_t plan_tile(int64_t n, int64_t t);

/* The chunk edge of an output tiled by b (n rows and columns of tiles, the last possibly
 * shorter): the tile itself when b >= 256; smaller tiles are grouped, d x d tiles per chunk with
 * d the smallest divisor of the tile count that reaches 256 elements (a chunk per tiny tile would
 * bloat the chunk index), so the chunks still cover n with no more padding than the tiles. */
int64_t plan_chunk(int64_t n, int64_t b);
/* Sub-tiles (an experiment, issue 27): OOCSOLVE_SUBTILE=d in the environment makes the stores'
 * tiles b / d while the output's chunks stay b (plan_solver), so that a GPU ring's items (a tile
 * column each) are narrower without smaller output chunks (on an H200 the Cholesky inverse at
 * n = 65536 computed in 6.5 s with tile 1024 against 7.6 s with 4096, but its check read 4 MiB
 * chunks 1.5 s slower: docs/PERFORMANCE.md, twenty-seventh session). The writer then writes d
 * tile rows a block (job.c write_rows). d in [2, 16] where b is at least 256 (a chunk of its
 * own: plan_chunk groups none), a multiple of 8 d, and the sub-tiles make whole chunk rows
 * (ceil(n / (b / d)) a multiple of d); else, or unset: 1 (the tile is the chunk). Not a
 * default until measured end to end. */
int64_t plan_subtiles(int64_t n, int64_t b);

/* The disk tier's traffic of an elimination (issue 27), the stripe arithmetic of
 * docs/ARCHITECTURE.md: the bytes an inversion by gj (chol = 0) or by Cholesky's sweep (chol = 1,
 * lower_only as job.c runs it) spills to scratch and reads back when the tile cache keeps no tile
 * from one use to the next. Each of the ceil(n / W) steps (W as ts_stripe runs it) takes every
 * tile the method keeps (all of A; the lower triangle) and puts it back once, so both are
 * steps x 8 x (those tiles' elements). A cache that keeps tiles between uses only lowers both
 * (a tile cached from its put to its next take is neither written nor read), so these are the
 * most an out-of-core run moves; the load's spill (each tile that does not fit, once) and the
 * writer's reads (each tile once, twice for chol's mirrored triangle) come on top, and so do a
 * journaled run's checkpoints (each writes the cached tiles once).
 * tests/test_pipeline.c asserts equality with a one-byte cache and the bound with larger ones. */
typedef struct plan_traffic {
  int64_t spilled, unspilled;
} plan_traffic_t;
plan_traffic_t plan_spill_model(int chol, int64_t n, int64_t b, int64_t W);

/* gj, chol, lu, rbt, newton, hyper7: tile, output chunk, budget split and stripe (or GEMM
 * block). */
ooc_status_t plan_solver(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p);

/* Host bytes of the method's workspace for stripe (or block) W, as planned. */
int64_t plan_ws(const plan_t *p, int64_t W);

/* The tile cache's bytes: what the budget leaves after fixed bytes and the workspace. */
int64_t plan_cache(const plan_t *p);

/* The stripe LU runs in the workspace planned for p->W: p->W itself when LU was planned (req.lu),
 * else the widest stripe (whole tiles, at most p->W) whose lu_workspace_bytes fit plan_ws(p, p->W);
 * 0 when not even one tile column fits (the caller fails with OOC_ERR_BUDGET). */
int64_t plan_lu_stripe(const plan_t *p);

/* LU's stripe on device executor x with K ring slots (lu_device_stripe), at most o->stripe; 0
 * where not even one tile column fits, with `why` (cap bytes) saying so: what --gpu-mem leaves,
 * and how much of it one tile column needs (who: the matrix or method named first). The
 * planner's (plan.h lu_gpu) and job_lu.c's, which fail or fall back to the CPU with that text. */
int64_t plan_lu_device_stripe(ooc_exec_t *x, const ooc_opts_t *o, const char *who, int64_t n,
                              int64_t b, int K, char *why, size_t cap);

/* The Cholesky's GPU stripe (its device buffers differ from gj's, for which an auto plan was
 * sized): *W is the stripe to run on the GPU and *K its ring's slots (chol_args_t.nslots), or
 * *W = 0 with `why` set when chol must run on the CPU because its pinned buffers do not fit the
 * host room planned for the method. Planned as chol (chol_gpu, the same job): the plan's. Else
 * the one of CHOL_SLOTS and CHOL_SLOTS_LEAN that fits the room and runs fewer steps (a tie:
 * CHOL_SLOTS, whose device queues overlap more; the cache was sized already). */
ooc_status_t plan_chol_gpu(ooc_ctx_t *ctx, const plan_t *p, int job, int64_t *W, int *K,
                           char *why, size_t cap);

/* The out-of-core product C (req.n x req.m) = A (n x k) B (k x m), req.o->method METHOD_GEMM
 * (methods.h): tile, budget split, block edge (W), and on the GPU the executor's k panel, buffers
 * and slots. Its workspace (plan_ws) is the larger of the load/write strip and the block
 * buffers. */
ooc_status_t plan_gemm(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p);

/* Least squares (METHOD_QR, job_qr.c; solvers/qr.h): A's req.k rows (0: none are read, a
 * column removal) folded in blocks of b = p rows into the state R (req.n x req.n, the state's
 * columns as folded or updated) and d (req.n x req.m), factored in panels of W = P rows.
 * - p: --tile if given, else max(4096, 4n) (the stacked [R; A_i] reduction redoes R's n rows per
 *   factorization: a panel of P >= 4n rows keeps that under 1/6 more flops, qr.h), then what the
 *   budgets allow, at most the rows read, at least 1.
 * - host (--host-mem): fixed = the state and x (qr_state_bytes + 8 n m) and the readers' staging
 *   (an eighth of the budget, at most 1 GiB: 7/8 of it for A and V by their columns, qr_stage,
 *   1/8 for b); the workspace (plan_ws) is the rest's: on the host executor all of qr_fold's
 *   (qr_workspace_bytes at p, P = p), on the GPU its pinned slots and residual rows.
 * - device (req.cuda; req.gpu_budget the executor's): S = (n + P) x (n + m) and tau within the
 *   budget less a margin for cuSOLVER's geqrf workspace; P up to 16 blocks (a geqrf call costs
 *   O(n) launches whatever its rows: few tall factorizations), P = p on the host.
 * R must fit: otherwise OOC_ERR_BUDGET naming --host-mem (or --gpu-mem) and what is needed (a
 * tiled Householder QR for R beyond memory is not implemented). The output (the QR state file)
 * is unchunked: p->chunk is 0. */
ooc_status_t plan_qr(ooc_ctx_t *ctx, const plan_req_t *q, plan_t *p);

/* The CUDA executor every GPU method but LU and least squares runs on (gj, chol, the product,
 * newton and hyper7: three queues, copies in, compute, copies out), as the options say (the
 * device is the caller's to set: the job's first listed one, or each of its devices): one place,
 * so the plans ask an executor made as the run's will be. */
static inline ex_cuda_config_t plan_exec_config(const ooc_opts_t *o) {
  ex_cuda_config_t c = {.device = 0, .gpu_mem = o->gpu_mem, .nqueues = 3, .trace = o->trace};
  return c;
}
/* newton and hyper7: the methods made of products. */
static inline int plan_is_iter(int method) {
  return method == OOC_METHOD_NEWTON || method == OOC_METHOD_HYPER7;
}

#endif
