/* gj_cpu.c: the CPU executor of gj on threads it owns. See gj_cpu.h. */
#include "solvers/gj_cpu.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/parloop.h"

#define GJC_MAX_THREADS 16
/* Rows of one product or trsm chunk (whole row tiles, at least one): 512 x 256 x 512 products
 * run at the single-thread GEMM rate here, and two tiles per chunk keep the caller's tile moves
 * a small part of a chunk's time. */
#define CHUNK_ROWS 512
/* getrf and getri of the panel on all library threads from this width on (in core, W = n: a
 * 4096^2 getrf takes 0.53 s on 2 threads, 0.99 s on one). Below, getri on one library thread,
 * and getrf recursive (panel_lu) with its updates on the executor's threads: a 4096 x 512 getrf
 * takes 25 ms on one library thread and 23 on two, whose pool would spin beside ours. */
#define PANEL_THREADED_W 1024
/* Widths panel_lu leaves to the library's getrf on one thread: 4096 x 64 runs at 25 GFLOP/s
 * there, and the updates between leaves are GEMMs at ~48 GFLOP/s a thread. */
#define LU_LEAF 64

enum { J_GEMM = 0, J_TRSM_UP, J_TRSM_LOW, J_GEMM_UP, J_LU_UPDATE };
enum { T_EMPTY = 0, T_LOADED, T_DONE };

typedef struct job {
  int kind;
  int64_t r0, r1; /* rows of the panel (trsm, gemm up) or of the slot and panel (gemm) */
  int64_t nc;     /* gemm: columns of the target */
  int region;     /* gemm: 0 pivot rows (C_k = K), 1 rows below (Z), 2 rows above (K) */
  const double *R; /* gemm: Z = L11^-1 R0 (rows below) or K = U11^-1 Z (pivot rows, above) */
  int64_t ldr;    /* gemm: R's leading dimension */
  int64_t q;      /* gemm: the target (sweep order) */
  int64_t c; /* gemm: the chunk, whose row tiles become T_DONE */
  int tmp;   /* gemm up: the product buffer it holds while it runs (given by pop) */
  /* LU update: rows [r0, r1) of A22 -= A21 A12, A21 at a + r0, A22 at a12 + r0 (ld lda) */
  const double *a;
  double *a12;
  int64_t k, lda;
} job_t;

typedef struct gj_cpu {
  gj_exec_t e; /* first: gj.c sees only this */
  ooc_ctx_t *ctx;
  const ooc_ops_t *ops;
  int64_t n, b, W;
  int64_t ld; /* leading dimension of the panel and the slot (gj_cpu_ld) */
  int blas_was; /* ops->threads setting found at create (0: nothing to restore) */
  /* the step, from factor */
  int64_t k0, w;
  double *panel;
  const int64_t *ipiv;
  int64_t *ipiv_local;
  double *C;    /* the slot: while a target's rows below are multiplied, its pivot rows hold Z */
  double *K[2]; /* per target parity: K = U11^-1 Z, the new pivot rows */
  int64_t nbelow;       /* chunks of the rows below in this step */
  int64_t below_left[4]; /* per target (q & 3): its rows-below chunks not yet done */
  /* the sweep's row tiles and chunks */
  int64_t rt, nchunks;
  int64_t *order;    /* row tiles in the order their products run */
  int64_t *ck0, *ck1; /* chunk c: row tiles order[ck0[c] .. ck1[c]) */
  int64_t *chunk_of; /* row tile -> chunk */
  int64_t *blk;      /* row tile -> the target whose tile is in the slot, -1 none */
  uint8_t *tst;      /* row tile -> T_*: changed under mu once a chunk is queued */
  /* the transform's product buffers (in the slot, see cpu_transform): a bit per free one */
  double *Pinv; /* w x w, ld w: the pivot block's inverse while the rows above are multiplied */
  double *tmp[GJC_MAX_THREADS];
  unsigned tmp_free;
  /* the pool: a ring of jobs under mu */
  int nth; /* threads including the caller */
  int workers, sync_ok, quit;
  pthread_t th[GJC_MAX_THREADS];
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  job_t *jobs;
  int64_t jcap, jhead, jtail; /* queued: [jhead, jtail) modulo jcap */
  int64_t pending;            /* queued or running */
} gj_cpu_t;

/* Jobs queued at once: the chunks of two targets (at most one per row tile each), or a
 * transform's row chunks (CHUNK_ROWS each, however large the tiles). */
static int64_t jobs_cap(int64_t n, int64_t b) {
  return 2 * ooc_cdiv64(n, b) + ooc_cdiv64(n, CHUNK_ROWS) + 8;
}

int64_t gj_cpu_ld(int64_t n) { return n > 0 && n % 256 == 0 ? n + 8 : n; }

int64_t gj_cpu_workspace_bytes(int64_t n, int64_t b, int64_t W, int sweeps) {
  int64_t rt = ooc_cdiv64(n, b);
  return 8 * (W + (sweeps ? gj_cpu_ld(n) * b + 2 * W * b : 0)) + rt * (5 * 8 + 1) +
         jobs_cap(n, b) * (int64_t)sizeof(job_t);
}

/* ---- the pool ------------------------------------------------------------------------------ */

static void run_job(gj_cpu_t *x, const job_t *j) {
  const ooc_ops_t *o = x->ops;
  int64_t ld = x->ld, w = x->w, rows = j->r1 - j->r0;
  double *P = x->panel;
  const double *L11 = P + x->k0;
  switch (j->kind) {
  case J_GEMM: /* gj.h step 4: C_k = K, C_low -= L21 Z, C_up -= A_up K */
    if (j->region == 0)
      for (int64_t c = 0; c < j->nc; c++)
        memcpy(x->C + j->r0 + c * ld, j->R + (j->r0 - x->k0) + c * w,
               (size_t)rows * sizeof(double));
    else
      o->gemm('N', 'N', rows, j->nc, w, -1.0, P + j->r0, ld, j->R, j->ldr, 1.0, x->C + j->r0, ld);
    break;
  case J_TRSM_UP: /* N_up = -A_up U11^-1 L11^-1: each row on its own */
    o->trsm('R', 'U', 'N', 'N', rows, w, 1.0, L11, ld, P + j->r0, ld);
    o->trsm('R', 'L', 'N', 'U', rows, w, -1.0, L11, ld, P + j->r0, ld);
    break;
  case J_GEMM_UP: { /* N_up = -A_up P, through a buffer: the product cannot be in place */
    double *T = x->tmp[j->tmp];
    o->gemm('N', 'N', rows, w, w, -1.0, P + j->r0, ld, x->Pinv, w, 0.0, T, rows);
    for (int64_t c = 0; c < w; c++)
      memcpy(P + j->r0 + c * ld, T + c * rows, (size_t)rows * sizeof(double));
    break;
  }
  case J_LU_UPDATE:
    o->gemm('N', 'N', rows, j->nc, j->k, -1.0, j->a + j->r0, j->lda, j->a12, j->lda, 1.0,
            j->a12 + j->r0, j->lda);
    break;
  default: /* J_TRSM_LOW: N_low = -L21 L11^-1 */
    o->trsm('R', 'L', 'N', 'U', rows, w, -1.0, L11, ld, P + j->r0, ld);
    break;
  }
}

static void queue_pivot(gj_cpu_t *x, int64_t q, int64_t nc);

/* Under mu: a job has run. */
static void job_finished(gj_cpu_t *x, const job_t *j) {
  if (j->kind == J_GEMM)
    for (int64_t k = x->ck0[j->c]; k < x->ck1[j->c]; k++) x->tst[x->order[k]] = T_DONE;
  /* the last chunk of the rows below has read Z: the pivot rows may take K */
  if (j->kind == J_GEMM && j->region == 1 && --x->below_left[j->q & 3] == 0)
    queue_pivot(x, j->q, j->nc);
  if (j->kind == J_GEMM_UP) { /* its buffer is free: a thread may be waiting for one */
    x->tmp_free |= 1u << j->tmp;
    pthread_cond_broadcast(&x->work);
  }
  x->pending--;
}

/* Under mu. The ring never overflows: at most two targets' chunks, or one transform, are queued. */
static void push(gj_cpu_t *x, job_t j) {
  x->jobs[x->jtail % x->jcap] = j;
  x->jtail++;
  x->pending++;
  pthread_cond_signal(&x->work);
}

/* Under mu: the next job, if there is one that can start (a gemm up needs a free buffer). */
static int pop(gj_cpu_t *x, job_t *j) {
  if (x->jhead == x->jtail) return 0;
  *j = x->jobs[x->jhead % x->jcap];
  if (j->kind == J_GEMM_UP) {
    if (!x->tmp_free) return 0;
    j->tmp = __builtin_ctz(x->tmp_free);
    x->tmp_free &= ~(1u << j->tmp);
  }
  x->jhead++;
  return 1;
}

static void *worker(void *arg) {
  gj_cpu_t *x = arg;
  job_t j;
  pthread_mutex_lock(&x->mu);
  for (;;) {
    int got = 0;
    while (!x->quit && !(got = pop(x, &j))) pthread_cond_wait(&x->work, &x->mu);
    if (!got) break;
    pthread_mutex_unlock(&x->mu);
    run_job(x, &j);
    pthread_mutex_lock(&x->mu);
    job_finished(x, &j);
    pthread_cond_signal(&x->done);
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* The caller runs queued jobs alongside the workers until none is queued or running. */
static void run_all(gj_cpu_t *x) {
  job_t j;
  pthread_mutex_lock(&x->mu);
  while (x->pending > 0) {
    if (pop(x, &j)) {
      pthread_mutex_unlock(&x->mu);
      run_job(x, &j);
      pthread_mutex_lock(&x->mu);
      job_finished(x, &j);
    } else {
      pthread_cond_wait(&x->done, &x->mu);
    }
  }
  pthread_mutex_unlock(&x->mu);
}

/* After a failure: forget the queued jobs and wait for the running ones. */
static void drain(gj_cpu_t *x) {
  pthread_mutex_lock(&x->mu);
  x->pending -= x->jtail - x->jhead;
  x->jhead = x->jtail;
  while (x->pending > 0) pthread_cond_wait(&x->done, &x->mu);
  pthread_mutex_unlock(&x->mu);
}

/* ---- panel ----------------------------------------------------------------------------------- */

/* LU with partial pivoting of the m x w block A (m >= w), recursive (Toledo; ReLAPACK's
 * getrf): the left half, its pivots applied to the right half, U12 = L11^-1 A12, then
 * A22 -= A21 U12 in row chunks on all threads (fixed chunks: the bits do not depend on the
 * thread count), the right half, its pivots applied back to the left. ipiv 0-based, relative
 * to A's first row. The same factorization as getrf's; only the order of the updates differs. */
static void panel_lu(gj_cpu_t *x, double *A, int64_t m, int64_t w, int64_t lda, int64_t *ipiv) {
  const ooc_ops_t *o = x->ops;
  if (w <= LU_LEAF) {
    o->getrf(m, w, A, lda, ipiv);
    return;
  }
  int64_t w1 = w / 2, w2 = w - w1;
  double *A12 = A + w1 * lda;
  panel_lu(x, A, m, w1, lda, ipiv);
  o->laswp(w2, A12, lda, 0, w1, ipiv);
  o->trsm('L', 'L', 'N', 'U', w1, w2, 1.0, A, lda, A12, lda);
  pthread_mutex_lock(&x->mu);
  for (int64_t r = w1; r < m; r += CHUNK_ROWS) {
    job_t j = {.kind = J_LU_UPDATE, .r0 = r, .r1 = ooc_min64(m, r + CHUNK_ROWS), .nc = w2,
               .a = A, .a12 = A12, .k = w1, .lda = lda};
    push(x, j);
  }
  pthread_mutex_unlock(&x->mu);
  run_all(x);
  panel_lu(x, A12 + w1, m - w1, w2, lda, ipiv + w1);
  for (int64_t i = w1; i < w; i++) ipiv[i] += w1;
  o->laswp(w1, A, lda, w1, w, ipiv);
}

/* A panel of width w on all library threads (PANEL_THREADED_W) until lib_narrow: 1 if widened. */
static int lib_widen(gj_cpu_t *x, int64_t w) {
  int more = w >= PANEL_THREADED_W && x->nth > 1 && x->ops->threads;
  if (more) x->ops->threads(x->nth);
  return more;
}
static void lib_narrow(gj_cpu_t *x, int more) {
  if (more) x->ops->threads(1);
}

static ooc_status_t cpu_factor(gj_exec_t *e, double *P, int64_t n, int64_t k0, int64_t w,
                               int64_t *ipiv, double *udiag) {
  gj_cpu_t *x = (gj_cpu_t *)e;
  int64_t ld = x->ld;
  int more = lib_widen(x, w);
  if (w >= PANEL_THREADED_W)
    x->ops->getrf(n - k0, w, P + k0, ld, x->ipiv_local);
  else
    panel_lu(x, P + k0, n - k0, w, ld, x->ipiv_local);
  lib_narrow(x, more);
  for (int64_t j = 0; j < w; j++) {
    ipiv[k0 + j] = k0 + x->ipiv_local[j];
    udiag[j] = fabs(P[k0 + j + j * ld]);
  }
  x->k0 = k0;
  x->w = w;
  x->panel = P;
  x->ipiv = ipiv;
  return OOC_OK;
}

/* Rows [r0, r1) in chunks of `chunk` (a trsm or product of rows is row by row). */
static void push_rows(gj_cpu_t *x, int kind, int64_t r0, int64_t r1, int64_t chunk) {
  for (int64_t r = r0; r < r1; r += chunk)
    push(x, (job_t){.kind = kind, .r0 = r, .r1 = ooc_min64(r1, r + chunk)});
}

static int64_t getri_on(gj_cpu_t *x, int64_t w, double *A, int64_t lda) {
  int more = lib_widen(x, w);
  int64_t bad = x->ops->getri(w, A, lda);
  lib_narrow(x, more);
  return bad;
}

/* Product buffers of b x w after the w x w pivot block in the slot, if one fits beside it: then
 * the rows above are a GEMM with P (cpu_transform). How many fit (capped by the threads) does not
 * change the result; whether one fits depends on n, b and w only, so neither does the path. */
static int transform_buffers(gj_cpu_t *x, int64_t w) {
  if (!x->C || w * w + x->b * w > x->ld * x->b) return 0;
  int64_t fit = (x->ld * x->b - w * w) / (x->b * w);
  int k = (int)ooc_min64(fit, x->nth);
  x->Pinv = x->C;
  x->tmp_free = 0;
  for (int t = 0; t < k; t++) {
    x->tmp[t] = x->C + w * w + (int64_t)t * x->b * w;
    x->tmp_free |= 1u << t;
  }
  return k;
}

/* gj.h step 3. The slot is free until the sweep, so when it holds the pivot block and a product
 * buffer: P = (L11 U11)^-1 on a copy of the block on this thread while the other threads solve
 * the rows below (they read L11 in the panel), then N_up = -A_up P as GEMMs in tile rows (two
 * triangular solves of the same flops ran at ~2/3 of the GEMM rate), and P into the panel. Else
 * both triangular solves on all threads, then getri in place. */
static ooc_status_t cpu_transform(gj_exec_t *e, double *P, int writeback, int64_t *bad) {
  gj_cpu_t *x = (gj_cpu_t *)e;
  int64_t n = x->n, ld = x->ld, k0 = x->k0, w = x->w;
  double *D = P + k0; /* the pivot block: rows [k0, k0 + w) of the panel */
  (void)writeback; /* the transform is computed in the host panel itself */
  if (transform_buffers(x, w) > 0) {
    pthread_mutex_lock(&x->mu);
    push_rows(x, J_TRSM_LOW, k0 + w, n, CHUNK_ROWS);
    pthread_mutex_unlock(&x->mu);
    for (int64_t c = 0; c < w; c++) memcpy(x->Pinv + c * w, D + c * ld, (size_t)w * sizeof(double));
    *bad = getri_on(x, w, x->Pinv, w);
    run_all(x);
    if (*bad) return OOC_OK;
    pthread_mutex_lock(&x->mu);
    push_rows(x, J_GEMM_UP, 0, k0, x->b);
    pthread_mutex_unlock(&x->mu);
    run_all(x);
    for (int64_t c = 0; c < w; c++) memcpy(D + c * ld, x->Pinv + c * w, (size_t)w * sizeof(double));
    return OOC_OK;
  }
  pthread_mutex_lock(&x->mu);
  push_rows(x, J_TRSM_UP, 0, k0, CHUNK_ROWS);
  push_rows(x, J_TRSM_LOW, k0 + w, n, CHUNK_ROWS);
  pthread_mutex_unlock(&x->mu);
  run_all(x);
  /* getri overwrites L11/U11, which the trsm read: after them */
  *bad = getri_on(x, w, D, ld);
  return OOC_OK;
}

/* ---- the sweep --------------------------------------------------------------------------------- */

/* Row tiles in product order: pivot rows, rows below, rows above; chunks of whole row tiles
 * within one of the three (a pivot chunk runs once the rows below are done: queue_pivot). */
static void plan_chunks(gj_cpu_t *x, int64_t kt0, int64_t kt1) {
  int64_t rt = x->rt, g = ooc_max64(1, CHUNK_ROWS / x->b), k = 0;
  int64_t lo[3] = {kt0, kt1, 0}, hi[3] = {kt1, rt, kt0};
  x->nchunks = 0;
  for (int r = 0; r < 3; r++)
    for (int64_t i = lo[r]; i < hi[r]; i += g) {
      int64_t c = x->nchunks++;
      x->ck0[c] = k;
      for (int64_t t = i; t < ooc_min64(hi[r], i + g); t++) {
        x->order[k++] = t;
        x->chunk_of[t] = c;
      }
      x->ck1[c] = k;
    }
  x->nbelow = ooc_cdiv64(rt - kt1, g);
}

static int chunk_region(const gj_cpu_t *x, int64_t c) {
  int64_t t0 = x->order[x->ck0[c]], kt0 = x->k0 / x->b, kt1 = ooc_cdiv64(x->k0 + x->w, x->b);
  return t0 >= kt1 ? 1 : t0 >= kt0 ? 0 : 2;
}

/* Chunk c of target q: the rows below multiply Z (in the slot's pivot rows), the pivot rows
 * copy K and the rows above multiply K (q's parity). */
static job_t gemm_job(gj_cpu_t *x, int64_t c, int64_t q, int64_t nc) {
  int64_t t0 = x->order[x->ck0[c]], t1 = x->order[x->ck1[c] - 1];
  int region = chunk_region(x, c);
  return (job_t){.kind = J_GEMM, .r0 = t0 * x->b, .r1 = ooc_min64(x->n, (t1 + 1) * x->b),
                 .nc = nc, .region = region, .R = region == 1 ? x->C + x->k0 : x->K[q & 1],
                 .ldr = region == 1 ? x->ld : x->w, .q = q, .c = c};
}

/* Under mu: target q's pivot chunks (their tiles are in: prep needed them), once the rows below
 * no longer read Z from those rows. */
static void queue_pivot(gj_cpu_t *x, int64_t q, int64_t nc) {
  for (int64_t c = 0; c < x->nchunks; c++)
    if (chunk_region(x, c) == 0) push(x, gemm_job(x, c, q, nc));
}

/* Target q's tiles of rows [k0, n) are all in the slot: its row swaps, then from its pivot rows
 * R0 the two triangular solves with the factored pivot block, Z = L11^-1 R0 in place (the rows
 * below read it there; the pivot chunks overwrite it with K only after them) and
 * K = U11^-1 Z (only rows [k0, n) take part). Runs while the workers may compute other rows of
 * the slot.
 * Why solves and not P R0 with the inverse P (as the transform column would give): the
 * explicit inverse of a wide, ill-conditioned pivot block puts errors of size
 * kappa(A11) eps |P| |R0| into C_k, and the rows above multiply them on; the solves are
 * backward stable (docs/NUMERICS.md, "Gauss-Jordan on wide stripes"). Same flops: 2 w^2 nc. */
static void prep(gj_cpu_t *x, int64_t nc, int par) {
  int64_t ld = x->ld, k0 = x->k0, w = x->w;
  double *Z = x->C + k0, *K = x->K[par];
  const double *L11 = x->panel + k0;
  x->ops->laswp(nc, x->C, ld, k0, k0 + w, x->ipiv);
  x->ops->trsm('L', 'L', 'N', 'U', w, nc, 1.0, L11, ld, Z, ld);
  for (int64_t j = 0; j < nc; j++) memcpy(K + j * w, Z + j * ld, (size_t)w * sizeof(double));
  x->ops->trsm('L', 'U', 'N', 'N', w, nc, 1.0, L11, ld, K, w);
}

/* Under mu: queue chunk c of target q if every row tile of it holds q's tile, not yet run
 * (pivot chunks: queue_pivot). */
static void queue_if_loaded(gj_cpu_t *x, int64_t c, int64_t q, int64_t nc) {
  if (chunk_region(x, c) == 0) return;
  for (int64_t k = x->ck0[c]; k < x->ck1[c]; k++) {
    int64_t i = x->order[k];
    if (x->blk[i] != q || x->tst[i] != T_LOADED) return;
  }
  push(x, gemm_job(x, c, q, nc));
}

/* Per target q, while it is in flight (entry q & 3): row tiles of [k0, n) taken, row tiles put
 * back, swaps and solves done. Targets complete in order (q + 1's tile i is taken only after
 * q's is put), and q + 2 is prepared only once q is complete (it reuses q's K), so at most q,
 * q + 1 and q + 2 have entries at once. */
typedef struct sweep {
  const gj_target_t *t;
  int64_t nt, nlow, completed;
  int64_t low[4], back[4];
  int prepped[4];
} sweep_t;

static int64_t ncols(const sweep_t *s, int64_t q) { return part_len(ts_cols(s->t[q].ts), s->t[q].tj); }

/* Prepare target p and queue its chunks whose tiles are in, if it may be prepared now. */
static void try_prep(gj_cpu_t *x, sweep_t *s, int64_t p) {
  int e = (int)(p & 3);
  if (p >= s->nt || s->prepped[e] || s->low[e] < s->nlow || p - 2 >= s->completed) return;
  prep(x, ncols(s, p), (int)(p & 1));
  s->prepped[e] = 1;
  pthread_mutex_lock(&x->mu);
  x->below_left[e] = x->nbelow;
  if (x->nbelow == 0) queue_pivot(x, p, ncols(s, p));
  for (int64_t c = 0; c < x->nchunks; c++) queue_if_loaded(x, c, p, ncols(s, p));
  pthread_mutex_unlock(&x->mu);
}

static ooc_status_t cpu_sweep(gj_exec_t *e, const gj_target_t *t, int64_t nt,
                              ooc_status_t (*between)(void *user, int64_t q), void *user) {
  gj_cpu_t *x = (gj_cpu_t *)e;
  int64_t ld = x->ld, b = x->b, rt = x->rt;
  int64_t kt0 = x->k0 / b, kt1 = ooc_cdiv64(x->k0 + x->w, b);
  sweep_t s = {.t = t, .nt = nt, .nlow = rt - kt0}; /* nlow: row tiles of rows [k0, n) */
  ooc_status_t st = OOC_OK;
  if (nt == 0) return OOC_OK;
  plan_chunks(x, kt0, kt1);
  for (int64_t i = 0; i < rt; i++) {
    x->blk[i] = -1;
    x->tst[i] = T_EMPTY;
  }
  for (int64_t k = 0; k < rt; k++) {
    int64_t i = x->order[k];
    OOC_CHECK(st = ts_take(t[0].ts, i, t[0].tj, x->C + i * b, ld));
    x->blk[i] = 0;
    x->tst[i] = T_LOADED;
  }
  s.low[0] = s.nlow;
  try_prep(x, &s, 0);

  while (s.completed < nt) {
    int64_t io = -1;
    job_t j;
    int have = 0;
    pthread_mutex_lock(&x->mu);
    for (;;) {
      for (int64_t k = 0; k < rt && io < 0; k++)
        if (x->tst[x->order[k]] == T_DONE) io = x->order[k];
      if (io >= 0) {
        x->tst[io] = T_EMPTY;
        break;
      }
      if ((have = pop(x, &j))) break;
      pthread_cond_wait(&x->done, &x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    if (have) { /* no tile to move: compute */
      run_job(x, &j);
      pthread_mutex_lock(&x->mu);
      job_finished(x, &j);
      pthread_mutex_unlock(&x->mu);
      continue;
    }
    /* row tile io of target q is done: back to the store, and the next target's tile in */
    int64_t q = x->blk[io];
    x->blk[io] = -1;
    OOC_CHECK(st = ts_put(t[q].ts, io, t[q].tj, x->C + io * b, ld));
    if (++s.back[q & 3] == rt) {
      s.completed++;
      s.back[q & 3] = s.low[q & 3] = s.prepped[q & 3] = 0; /* the entry now serves q + 4 */
      OOC_CHECK(st = between(user, q));
      try_prep(x, &s, q + 2);
    }
    int64_t p = q + 1;
    if (p >= nt) continue;
    OOC_CHECK(st = ts_take(t[p].ts, io, t[p].tj, x->C + io * b, ld));
    pthread_mutex_lock(&x->mu);
    x->blk[io] = p;
    x->tst[io] = T_LOADED;
    if (s.prepped[p & 3]) queue_if_loaded(x, x->chunk_of[io], p, ncols(&s, p));
    pthread_mutex_unlock(&x->mu);
    if (io >= kt0 && ++s.low[p & 3] == s.nlow) try_prep(x, &s, p);
  }
done:
  if (st != OOC_OK) drain(x);
  return st;
}

/* ---- life ------------------------------------------------------------------------------------- */

ooc_status_t gj_cpu_create(ooc_ctx_t *ctx, const ooc_ops_t *ops, int64_t n, int64_t b, int64_t W,
                           int sweeps, int threads, gj_exec_t **out) {
  *out = NULL;
  gj_cpu_t *x = ooc_calloc(ctx, 1, sizeof *x);
  if (!x) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the CPU executor");
  x->e.name = "cpu";
  x->e.factor = cpu_factor;
  x->e.transform = cpu_transform;
  x->e.sweep = sweeps ? cpu_sweep : NULL;
  x->ctx = ctx;
  x->ops = ops;
  x->n = n;
  x->ld = gj_cpu_ld(n);
  x->e.panel_ld = x->ld;
  x->b = b;
  x->W = W;
  x->rt = ooc_cdiv64(n, b);
  x->nth = threads > 0 ? ooc_min64(threads, GJC_MAX_THREADS) : ooc_par_cpus(GJC_MAX_THREADS);
  int64_t rt = x->rt;
  x->jcap = jobs_cap(n, b);
  x->ipiv_local = ooc_malloc(ctx, (size_t)ooc_max64(W, 1) * sizeof(int64_t));
  x->jobs = ooc_malloc(ctx, (size_t)x->jcap * sizeof(job_t));
  int ok = x->ipiv_local && x->jobs;
  if (sweeps) {
    x->C = ooc_malloc(ctx, (size_t)(x->ld * b) * sizeof(double));
    for (int k = 0; k < 2; k++) x->K[k] = ooc_malloc(ctx, (size_t)(W * b) * sizeof(double));
    x->order = ooc_malloc(ctx, (size_t)rt * sizeof(int64_t));
    x->ck0 = ooc_malloc(ctx, (size_t)rt * sizeof(int64_t));
    x->ck1 = ooc_malloc(ctx, (size_t)rt * sizeof(int64_t));
    x->chunk_of = ooc_malloc(ctx, (size_t)rt * sizeof(int64_t));
    x->blk = ooc_malloc(ctx, (size_t)rt * sizeof(int64_t));
    x->tst = ooc_malloc(ctx, (size_t)rt);
    ok = ok && x->C && x->K[0] && x->K[1] && x->order && x->ck0 && x->ck1 && x->chunk_of &&
         x->blk && x->tst;
  }
  if (!ok) {
    gj_cpu_destroy(&x->e);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM,
                    "out of host memory for the Gauss-Jordan workspace (%lld bytes)",
                    (long long)gj_workspace_bytes(n, b, W, 0));
  }
  if (pthread_mutex_init(&x->mu, NULL) == 0) {
    pthread_cond_init(&x->work, NULL);
    pthread_cond_init(&x->done, NULL);
    x->sync_ok = 1;
    /* a worker that cannot start leaves its share to the others (the caller always computes) */
    for (int k = 0; k < x->nth - 1; k++) {
      if (pthread_create(&x->th[x->workers], NULL, worker, x) != 0) break;
      x->workers++;
    }
  } else {
    gj_cpu_destroy(&x->e);
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "CPU executor: cannot create a mutex");
  }
  if (ops->threads) x->blas_was = ops->threads(1);
  *out = &x->e;
  return OOC_OK;
}

void gj_cpu_destroy(gj_exec_t *e) {
  if (!e) return;
  gj_cpu_t *x = (gj_cpu_t *)e;
  ooc_ctx_t *ctx = x->ctx;
  if (x->sync_ok) {
    pthread_mutex_lock(&x->mu);
    x->quit = 1;
    pthread_cond_broadcast(&x->work);
    pthread_mutex_unlock(&x->mu);
    for (int k = 0; k < x->workers; k++) pthread_join(x->th[k], NULL);
    pthread_cond_destroy(&x->work);
    pthread_cond_destroy(&x->done);
    pthread_mutex_destroy(&x->mu);
  }
  if (x->blas_was > 0) x->ops->threads(x->blas_was);
  ooc_free(ctx, x->ipiv_local);
  ooc_free(ctx, x->jobs);
  ooc_free(ctx, x->C);
  for (int k = 0; k < 2; k++) ooc_free(ctx, x->K[k]);
  ooc_free(ctx, x->order);
  ooc_free(ctx, x->ck0);
  ooc_free(ctx, x->ck1);
  ooc_free(ctx, x->chunk_of);
  ooc_free(ctx, x->blk);
  ooc_free(ctx, x->tst);
  ooc_free(ctx, x);
}
