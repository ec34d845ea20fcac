/*
 * job.c: ooc_invert and ooc_solve. Wires the layers together: opens the HDF5 input (io), plans
 * the budget (tile cache + solver workspace), loads and validates the input through the tile
 * store (tiling), runs the solver, writes the output from the store, checks the written result
 * against the input, and only then renames the output into place.
 */
#include <float.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5mat.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/check.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "tiling/tstore.h"
#ifdef OOC_HAVE_CUDA
#include "kernels/cuda/ocu.h"
#endif

/* Small allocations outside the planned buffers (structs, names): kept out of the cache. */
#define SLACK_BYTES (64 * 1024)

typedef struct spill_slot {
  struct job *job;
  const char *tag;
  scratch_t *s;
} spill_slot_t;

typedef struct job {
  ooc_ctx_t *ctx;
  ooc_opts_t o;
  ooc_report_t *rep;
  const ooc_ops_t *ops;
  h5mat_t *in_a, *in_b, *out;
  char out_file[PATH_MAX], out_dset[512], scratch_dir[PATH_MAX];
  int64_t n, m, b, W, budget, fixed;
  int64_t chunk; /* output chunk edge: the tile, but at least 256 (tiny chunks make HDF5 crawl) */
  tcache_t *cache;
  tstore_t *A, *B;
  spill_slot_t spill[2];
  double *colnorm;
  int64_t *perm;
  int method;      /* OOC_METHOD_GJ or OOC_METHOD_CHOL, chosen after the input is read */
  int logdet_only; /* ooc_logdet: factor only, write nothing */
  int factor_out;  /* ooc_factor: factor, write L */
  int have_factor; /* ooc_solve_factor: the input "A" is a Cholesky factor L */
  int f32;         /* the input (and by default the output) is float32 */
  int cuda;        /* run the elimination on the GPU (pick_backend) */
  gj_exec_t *exec; /* the CUDA executor while gj_run runs */
} job_t;

/* ---- adapters from io to the tiling layer's interfaces ------------------------------------ */

static ooc_status_t h5_source_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                   double *dst, int64_t ld) {
  return h5m_read((h5mat_t *)self, r0, c0, nr, nc, dst, ld);
}

static ooc_status_t spill_open(void *self, size_t slot_bytes, void **handle) {
  spill_slot_t *sl = self;
  OOC_TRY(scratch_open(sl->job->ctx, sl->job->scratch_dir, sl->tag, slot_bytes,
                       sl->job->o.scratch_zstd, &sl->s));
  *handle = sl->s;
  return OOC_OK;
}
static ooc_status_t spill_put(void *h, int64_t id, const void *d, size_t bytes) {
  return scratch_put(h, id, d, bytes);
}
static ooc_status_t spill_get(void *h, int64_t id, void *d, size_t bytes) {
  return scratch_get(h, id, d, bytes);
}

/* ---- planning ---------------------------------------------------------------------------- */

/* auto: the GPU when one is usable (with a notice saying which), else the CPU. The CUDA backend
 * runs the elimination on the GPU; the host-side work (input scan, checks) uses the cpu ops. */
static ooc_status_t pick_backend(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  j->cuda = 0;
  switch (j->o.device) {
  case OOC_DEVICE_REF: j->ops = ooc_ops_ref(); break;
  case OOC_DEVICE_CPU: j->ops = ooc_ops_cpu(); break;
  case OOC_DEVICE_AUTO:
  case OOC_DEVICE_CUDA: {
    j->ops = ooc_ops_cpu();
#ifdef OOC_HAVE_CUDA
    char desc[256];
    if (ocu_probe(desc, sizeof desc)) {
      j->cuda = 1;
      ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "using GPU 0: %s", desc);
    } else if (j->o.device == OOC_DEVICE_CUDA) {
      return OOC_FAIL(ctx, OOC_ERR_NODEVICE, "--device cuda: no usable GPU (%s)", desc);
    }
#else
    if (j->o.device == OOC_DEVICE_CUDA)
      return OOC_FAIL(ctx, OOC_ERR_NODEVICE,
                      "--device cuda: this build of oocsolve has no CUDA backend");
#endif
    break;
  }
  default: return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown device %d", (int)j->o.device);
  }
  snprintf(j->rep->backend, sizeof j->rep->backend, "%s", j->cuda ? "cuda" : j->ops->name);
  return OOC_OK;
}

#ifdef OOC_HAVE_CUDA
static ocu_config_t gpu_config(const job_t *j) {
  ocu_config_t c = {j->o.gpu_mem, j->o.streams, j->o.trace, 0};
  return c;
}
#endif

/* After plan(): the stripe must also fit the GPU budget, and the executor's pinned ring of column
 * blocks comes out of the host budget (charged as fixed, so the tile cache shrinks to match). */
static ooc_status_t plan_gpu(job_t *j) {
#ifdef OOC_HAVE_CUDA
  ooc_ctx_t *ctx = j->ctx;
  int64_t n = j->n, b = j->b, m = j->m, Wg = 0, gbudget = 0;
  ocu_config_t c = gpu_config(j);
  OOC_TRY(ocu_plan(ctx, n, b, m, &c, &Wg, &gbudget));
  int64_t W = ooc_min64(j->W, Wg);
  while (W > b && j->fixed + ocu_host_extra_bytes(n, b, W, m, &c) + gj_workspace_bytes(n, b, W, m) > j->budget)
    W -= b;
  int64_t need = j->fixed + ocu_host_extra_bytes(n, b, W, m, &c) + gj_workspace_bytes(n, b, W, m);
  if (need > j->budget) {
    char have[32], nb[32];
    return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                    "%s: --host-mem %s is too small for the GPU pipeline with n = %lld and tile "
                    "%lld: at least %s is needed (pinned column blocks); raise --host-mem or lower "
                    "--tile", h5m_name(j->in_a), ooc_fmt_bytes(j->budget, have, sizeof have),
                    (long long)n, (long long)b, ooc_fmt_bytes(need, nb, sizeof nb));
  }
  j->fixed += ocu_host_extra_bytes(n, b, W, m, &c);
  j->W = W;
#else
  (void)j;
#endif
  return OOC_OK;
}

/* Host bytes of the solver's workspace for stripe W: the larger of gj's and chol's, since the
 * method is chosen only once the input has been read. */
static int64_t solver_ws(const job_t *j, int64_t W) {
  return ooc_max64(gj_workspace_bytes(j->n, j->b, W, j->m),
                   chol_workspace_bytes(j->n, j->b, W, j->m));
}

/* Budget = fixed bookkeeping + solver workspace (panel of W columns...) + tile cache. The stripe
 * is as wide as the budget allows (fewest passes over the matrix), or --stripe if smaller. */
static ooc_status_t plan(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  int64_t n = j->n, m = j->m;
  if (j->o.tile < 0) return OOC_FAIL(ctx, OOC_ERR_ARG, "--tile must be positive (got %lld)", (long long)j->o.tile);
  j->b = ooc_min64(j->o.tile ? j->o.tile : 4096, n);
  int64_t b = j->b;
  j->budget = j->o.host_mem > 0 ? j->o.host_mem : ooc_physical_memory() / 2;
  if (j->budget <= 0) j->budget = (int64_t)1 << 30;
  j->fixed = tstore_overhead_bytes(n, n, b) + (m ? tstore_overhead_bytes(n, m, b) : 0) +
             16 * n + 8 * b * ooc_max64(b, 256) + SLACK_BYTES; /* + the writer's staging */
  int64_t avail = j->budget - j->fixed;
  int64_t W = 0;
  if (avail >= solver_ws(j, n)) {
    W = n;
  } else {
    /* largest multiple of b that fits (workspace grows linearly in W) */
    int64_t lo = 0, hi = ooc_cdiv64(n, b);
    while (lo < hi) {
      int64_t mid = (lo + hi + 1) / 2;
      if (solver_ws(j, mid * b) <= avail) lo = mid;
      else hi = mid - 1;
    }
    W = lo * b;
  }
  if (W < b) {
    char have[32], need[32];
    ooc_fmt_bytes(j->budget, have, sizeof have);
    ooc_fmt_bytes(j->fixed + solver_ws(j, b), need, sizeof need);
    return OOC_FAIL(ctx, OOC_ERR_BUDGET,
                    "%s: --host-mem %s is too small for n = %lld with tile %lld: at least %s is "
                    "needed (a stripe of one tile column, n x tile doubles, plus buffers); raise "
                    "--host-mem or lower --tile",
                    h5m_name(j->in_a), have, (long long)n, (long long)b, need);
  }
  if (j->o.stripe > 0) W = ooc_min64(W, ooc_max64(b, j->o.stripe / b * b));
  j->W = ooc_min64(W, n);
  return OOC_OK;
}

/* ---- phases ------------------------------------------------------------------------------ */

/* Read the input once, a strip of tile columns at a time (few large HDF5 reads, whatever the
 * tile): reject NaN/Inf, take column norms, and fill the store. The strip fits in the room the
 * solver's workspace will use later. */
static ooc_status_t load(job_t *j, tstore_t *ts, h5mat_t *src, double *colnorm) {
  ooc_ctx_t *ctx = j->ctx;
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t n = rp.n;
  ooc_status_t st = OOC_OK;
  double *strip = ooc_malloc(ctx, (size_t)(n * cp.b) * sizeof(double));
  if (!strip) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(src));
  for (int64_t tj = 0; tj < cp.count; tj++) {
    int64_t c0 = part_start(cp, tj), nc = part_len(cp, tj), bi = 0, bj = 0;
    OOC_CHECK(st = h5m_read(src, 0, c0, n, nc, strip, n));
    if (j->ops->colabs(n, nc, strip, n, colnorm + c0, &bi, &bj)) {
      double v = strip[bi + bj * n];
      st = OOC_FAIL(ctx, OOC_ERR_NONFINITE, "%s: element [%lld, %lld] is %s; the matrix must be "
                    "finite", h5m_name(src), (long long)bi, (long long)(c0 + bj),
                    isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
      goto done;
    }
    for (int64_t ti = 0; ti < rp.count; ti++)
      OOC_CHECK(st = ts_put(ts, ti, tj, strip + part_start(rp, ti), n));
    OOC_CHECK(st = ooc_tick(ctx, "read", (tj + 1.0) / cp.count));
  }
done:
  ooc_free(ctx, strip);
  return st;
}

/* Write a store to the output by row blocks (one tile row at a time, every store tile read
 * exactly once), with output column c taken from store column perm[c] (perm NULL: identity).
 * Rows, not columns, because the inverse's column permutation then stays inside one buffer. */
static ooc_status_t write_rows(job_t *j, tstore_t *ts, const int64_t *perm) {
  ooc_ctx_t *ctx = j->ctx;
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t ncols = cp.n, b = rp.b;
  ooc_status_t st = OOC_OK;
  double *rows = ooc_malloc(ctx, (size_t)(b * ncols) * sizeof(double));
  double *perm_rows = perm ? ooc_malloc(ctx, (size_t)(b * ncols) * sizeof(double)) : NULL;
  if (!rows || (perm && !perm_rows)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory writing the output");
    goto done;
  }
  for (int64_t ti = 0; ti < rp.count; ti++) {
    int64_t nr = part_len(rp, ti);
    for (int64_t tj = 0; tj < cp.count; tj++)
      OOC_CHECK(st = ts_read(ts, ti, tj, rows + part_start(cp, tj) * nr, nr));
    const double *src = rows;
    if (perm) {
      for (int64_t c = 0; c < ncols; c++)
        memcpy(perm_rows + c * nr, rows + perm[c] * nr, (size_t)nr * sizeof(double));
      src = perm_rows;
    }
    for (int64_t c0 = 0; c0 < ncols; c0 += j->chunk) /* chunk-wide pieces: bounded staging */
      OOC_CHECK(st = h5m_write(j->out, part_start(rp, ti), c0, nr, ooc_min64(j->chunk, ncols - c0),
                               src + c0 * nr, nr));
    OOC_CHECK(st = ooc_tick(ctx, "write", (ti + 1.0) / rp.count));
  }
done:
  ooc_free(ctx, rows);
  ooc_free(ctx, perm_rows);
  return st;
}

/* ---- names ------------------------------------------------------------------------------- */

/* "dir/cov.h5" + ".inv" -> "dir/cov.inv.h5" */
static void derive_name(const char *file, const char *suffix, char *out, size_t cap) {
  const char *slash = strrchr(file, '/');
  const char *dot = strrchr(file, '.');
  if (dot && (!slash || dot > slash) && dot != file && (!slash || dot > slash + 1))
    ooc_fmt(out, cap, "%.*s%s%s", (int)(dot - file), file, suffix, dot);
  else
    ooc_fmt(out, cap, "%s%s.h5", file, suffix);
}

static ooc_status_t resolve_output(job_t *j, const char *spec, const char *from_file,
                                   const char *suffix, const char *default_dset) {
  ooc_ctx_t *ctx = j->ctx;
  if (spec && *spec) {
    OOC_TRY(h5m_split_spec(ctx, spec, j->out_file, sizeof j->out_file, j->out_dset,
                           sizeof j->out_dset));
  } else {
    derive_name(from_file, suffix, j->out_file, sizeof j->out_file);
    j->out_dset[0] = 0;
  }
  if (!j->out_dset[0]) snprintf(j->out_dset, sizeof j->out_dset, "%s", default_dset);
  char ra[PATH_MAX], rb[PATH_MAX];
  if (realpath(j->out_file, ra) && realpath(from_file, rb) && strcmp(ra, rb) == 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the output would replace an input file; name another",
                    j->out_file);
  char tmp[PATH_MAX];
  ooc_fmt(tmp, sizeof tmp, "%s", j->out_file);
  ooc_fmt(j->scratch_dir, sizeof j->scratch_dir, "%s",
           j->o.scratch_dir && *j->o.scratch_dir ? j->o.scratch_dir : dirname(tmp));
  ooc_fmt(j->rep->output, sizeof j->rep->output, "%s:%s", j->out_file, j->out_dset);
  return OOC_OK;
}

static ooc_status_t open_input(job_t *j, const char *spec, h5mat_t **out) {
  char file[PATH_MAX], dset[512];
  if (!spec || !*spec) return OOC_FAIL(j->ctx, OOC_ERR_ARG, "no input matrix given");
  OOC_TRY(h5m_split_spec(j->ctx, spec, file, sizeof file, dset, sizeof dset));
  OOC_TRY(h5m_open(j->ctx, file, dset, out));
  const char *note = h5m_notice(*out);
  if (note && *note) ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s", note);
  return OOC_OK;
}

/* Create the cache and stores and fill them from the inputs (once; again after a fallback). */
static ooc_status_t load_inputs(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  int64_t n = j->n, m = j->m;
  double t0 = ooc_now();
  OOC_TRY(tcache_create(ctx, j->budget - j->fixed - solver_ws(j, j->W), &j->cache));
  /* The stores need no source: load() fills them, reading each input byte once. */
  j->spill[0] = (spill_slot_t){j, "A", NULL};
  j->spill[1] = (spill_slot_t){j, "B", NULL};
  ooc_spill_ops_t spA = {&j->spill[0], spill_open, spill_put, spill_get};
  ooc_spill_ops_t spB = {&j->spill[1], spill_open, spill_put, spill_get};
  OOC_TRY(tstore_create(ctx, j->cache, n, n, j->b, NULL, &spA, &j->A));
  if (j->in_b) OOC_TRY(tstore_create(ctx, j->cache, n, m, j->b, NULL, &spB, &j->B));
  memset(j->colnorm, 0, (size_t)n * sizeof(double));
  OOC_TRY(load(j, j->A, j->in_a, j->colnorm));
  if (j->B) {
    double *bnorm = ooc_calloc(ctx, (size_t)m, sizeof(double));
    if (!bnorm) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (m = %lld)", (long long)m);
    ooc_status_t st = load(j, j->B, j->in_b, bnorm);
    ooc_free(ctx, bnorm);
    OOC_TRY(st);
  }
  j->rep->t_read = ooc_now() - t0 - ts_stats(j->A)->t_spill - (j->B ? ts_stats(j->B)->t_spill : 0);
  return OOC_OK;
}

/* ---- method choice and the two eliminations --------------------------------------------- */

/* The "matrix type identification" pre-pass (one read of every tile pair): symmetric to a
 * tolerance (1e-12 relative, 1e-5 for float32 data) and a positive diagonal. Stops at the first
 * asymmetric pair, naming it in *why. */
static ooc_status_t classify(job_t *j, int *symmetric, int *posdiag, char *why, size_t cap) {
  ooc_ctx_t *ctx = j->ctx;
  part_t p = ts_rows(j->A);
  int64_t b = p.b;
  double tol = j->f32 ? 1e-5 : 1e-12;
  ooc_status_t st = OOC_OK;
  double *t1 = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  double *t2 = ooc_malloc(ctx, (size_t)(b * b) * sizeof(double));
  *symmetric = *posdiag = 1;
  why[0] = 0;
  if (!t1 || !t2) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory classifying the matrix");
    goto done;
  }
  for (int64_t tj = 0; tj < p.count && *symmetric; tj++) {
    for (int64_t ti = tj; ti < p.count && *symmetric; ti++) {
      int64_t nr = part_len(p, ti), nc = part_len(p, tj);
      OOC_CHECK(st = ts_read(j->A, ti, tj, t1, nr));
      OOC_CHECK(st = ts_read(j->A, tj, ti, t2, nc));
      for (int64_t c = 0; c < nc && *symmetric; c++)
        for (int64_t r = 0; r < nr; r++) {
          double x = t1[r + c * nr], y = t2[c + r * nc];
          if (fabs(x - y) > tol * fmax(fabs(x), fabs(y))) {
            *symmetric = 0;
            ooc_fmt(why, cap, "A[%lld, %lld] = %.17g but A[%lld, %lld] = %.17g",
                    (long long)(part_start(p, ti) + r), (long long)(part_start(p, tj) + c), x,
                    (long long)(part_start(p, tj) + c), (long long)(part_start(p, ti) + r), y);
            break;
          }
          if (ti == tj && r == c && !(x > 0)) *posdiag = 0;
        }
    }
  }
done:
  ooc_free(ctx, t1);
  ooc_free(ctx, t2);
  return st;
}

static ooc_status_t choose_method(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  j->method = OOC_METHOD_GJ;
  int chol_only = j->logdet_only || j->factor_out || j->have_factor;
  if (chol_only && j->o.method != OOC_METHOD_AUTO && j->o.method != OOC_METHOD_CHOL)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: a Cholesky factor is computed or used here; --method "
                    "must be auto or chol", h5m_name(j->in_a));
  if (j->have_factor) { /* L is triangular, not symmetric: nothing to classify */
    j->method = OOC_METHOD_CHOL;
    goto chosen;
  }
  if (j->o.method == OOC_METHOD_GJ) goto chosen;
  int sym, posdiag;
  char why[256];
  OOC_TRY(classify(j, &sym, &posdiag, why, sizeof why));
  if (j->o.method == OOC_METHOD_CHOL || chol_only) {
    if (!sym)
      return OOC_FAIL(ctx, OOC_ERR_NOT_SPD, "%s: Cholesky needs a symmetric matrix: %s",
                      h5m_name(j->in_a), why);
    j->method = OOC_METHOD_CHOL;
  } else if (sym && posdiag) {
    j->method = OOC_METHOD_CHOL;
    ooc_warn(r->warnings, sizeof r->warnings, "auto: symmetric with a positive diagonal, using "
             "Cholesky (chol)");
  } else {
    ooc_warn(r->warnings, sizeof r->warnings, "auto: %s, using Gauss-Jordan (gj)",
             sym ? "the diagonal is not positive" : "not symmetric");
  }
chosen:
  if (j->method == OOC_METHOD_CHOL && j->cuda) {
    j->cuda = 0; /* the CUDA backend runs gj only so far */
    snprintf(r->backend, sizeof r->backend, "%s", j->ops->name);
    ooc_warn(r->warnings, sizeof r->warnings, "chol runs on the CPU backend in this version");
  }
  snprintf(r->method, sizeof r->method, "%s", j->method == OOC_METHOD_CHOL ? "chol" : "gj");
  return OOC_OK;
}

/* Flops of the method as run (the usual counts: what GFLOP/s are quoted against). */
static double method_flops(const job_t *j) {
  double n = (double)j->n, m = (double)j->m;
  if (j->have_factor) return 2 * n * n * m;
  if (j->method == OOC_METHOD_CHOL)
    return j->logdet_only || j->factor_out ? n * n * n / 3
           : j->B                          ? n * n * n / 3 + 2 * n * n * m
                                           : n * n * n;
  return j->B ? n * n * n + 2 * n * n * m : 2 * n * n * n;
}

static void unload_inputs(job_t *j) {
  tstore_destroy(j->A);
  tstore_destroy(j->B);
  j->A = j->B = NULL;
  for (int k = 0; k < 2; k++) {
    scratch_close(j->spill[k].s);
    j->spill[k].s = NULL;
  }
  tcache_destroy(j->cache);
  j->cache = NULL;
}

/* Cholesky; under auto, a matrix that is not positive definite falls back to gj (the stores
 * are reloaded from the input, which was never modified). */
static ooc_status_t eliminate_chol(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  chol_args_t ca = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops,
                    .job = j->have_factor                    ? CHOL_SOLVE_FACTORED
                           : j->logdet_only || j->factor_out ? CHOL_FACTOR
                           : j->B                            ? CHOL_SOLVE
                                                             : CHOL_INVERT,
                    .lower_only = j->o.lower_only};
  chol_stats_t cs = {0};
  ooc_status_t st = chol_run(ctx, &ca, &cs, &r->info, &r->logdet);
  *steps = cs.steps;
  if (st == OOC_ERR_FORMAT && j->have_factor) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  if (st != OOC_ERR_NOT_SPD) return st;
  if (j->o.method != OOC_METHOD_AUTO || j->logdet_only || j->factor_out) {
    ooc_error_context(ctx, "%s", h5m_name(j->in_a));
    return st;
  }
  ooc_warn(r->warnings, sizeof r->warnings, "auto: Cholesky found the leading minor of order "
           "%lld not positive; fell back to Gauss-Jordan", (long long)r->info);
  r->info = 0;
  r->logdet = NAN;
  ooc_clear_error(ctx);
  unload_inputs(j);
  OOC_TRY(load_inputs(j));
  j->method = OOC_METHOD_GJ;
  snprintf(r->method, sizeof r->method, "gj");
  return OOC_OK;
}

static ooc_status_t eliminate_gj(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  gj_args_t ga = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops, .colnorm = j->colnorm,
                  .perm = j->B ? NULL : j->perm};
  gj_stats_t gs;
#ifdef OOC_HAVE_CUDA
  if (j->cuda) {
    ocu_config_t c = gpu_config(j);
    OOC_TRY(ocu_exec_create(ctx, j->n, j->b, gj_stripe(j->n, j->b, j->W), j->m, &c, &j->exec));
    ga.exec = j->exec;
  }
#endif
  ooc_status_t st = gj_run(ctx, &ga, &gs, &r->info);
  *steps = gs.steps;
#ifdef OOC_HAVE_CUDA
  if (j->exec) {
    ocu_stats_t os;
    char pk[32], bu[32];
    ocu_exec_stats(j->exec, &os);
    ooc_warn(r->warnings, sizeof r->warnings, "GPU peak %s of --gpu-mem %s, %d streams",
             ooc_fmt_bytes(os.dev_peak, pk, sizeof pk), ooc_fmt_bytes(os.dev_budget, bu, sizeof bu),
             os.streams);
    ooc_status_t st2 = ocu_exec_destroy(j->exec);
    j->exec = NULL;
    if (st == OOC_OK) st = st2;
  }
#endif
  if (st == OOC_ERR_SINGULAR) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  return st;
}

/* ---- after the elimination ---------------------------------------------------------------- */

static void collect_stats(job_t *j) {
  ooc_report_t *r = j->rep;
  const ts_stats_t *sa = ts_stats(j->A), *sb = j->B ? ts_stats(j->B) : NULL;
  r->bytes_input = h5m_bytes(j->in_a) + (j->in_b ? h5m_bytes(j->in_b) : 0);
  r->bytes_spilled = sa->bytes_spilled + (sb ? sb->bytes_spilled : 0);
  r->bytes_unspilled = sa->bytes_unspilled + (sb ? sb->bytes_unspilled : 0);
  r->bytes_output = j->logdet_only ? 0 : 8 * j->n * (j->B ? j->m : j->n);
  r->host_peak = ooc_ctx_host_peak(j->ctx);
}

/* A lower-triangle-only output read as the full symmetric matrix (for the check). */
static ooc_status_t sym_lower_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                   double *dst, int64_t ld) {
  job_t *j = self;
  h5mat_t *m = j->out;
  OOC_TRY(h5m_read(m, r0, c0, nr, nc, dst, ld));
  if (r0 >= c0 + nc) return OOC_OK; /* entirely below the diagonal */
  ooc_ctx_t *ctx = j->ctx;
  double *t = ooc_malloc(ctx, (size_t)(nr * nc) * sizeof(double));
  if (!t) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory checking the output");
  ooc_status_t st = h5m_read(m, c0, r0, nc, nr, t, nc); /* the transposed block */
  for (int64_t c = 0; st == OOC_OK && c < nc; c++)
    for (int64_t i = 0; i < nr; i++)
      if (r0 + i < c0 + c) dst[i + c * ld] = t[c + i * nc];
  ooc_free(ctx, t);
  return st;
}

/* Check what was written against the input (docs/NUMERICS.md). */
static ooc_status_t check_output(job_t *j, int f32) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int64_t n = j->n;
  int solve = j->in_b != NULL;
  double t0 = ooc_now();
  ooc_check_t ck = j->o.check;
  if (ck == OOC_CHECK_AUTO) ck = n <= 2048 ? OOC_CHECK_FULL : OOC_CHECK_PROBE;
  snprintf(r->check, sizeof r->check, "%s",
           ck == OOC_CHECK_NONE ? "none" : ck == OOC_CHECK_FULL ? "full" : "probe");
  double eps = check_eps(f32);
  double thr = j->o.check_threshold > 0 ? j->o.check_threshold : (solve ? 16 : 30);
  ooc_source_t srcA = {j->in_a, h5_source_read}, srcB = {j->in_b, h5_source_read};
  ooc_source_t srcX = {j->out, h5_source_read};
  if (j->method == OOC_METHOD_CHOL && !solve && j->o.lower_only)
    srcX = (ooc_source_t){j, sym_lower_read};
  int64_t mem = ooc_max64(j->budget - j->fixed, 3 * 8 * n);
  r->residual = NAN;
  if (ck != OOC_CHECK_NONE) {
    double anorm = 0; /* ||A||_inf = ||A||_1 of the factor's input, if it recorded it */
    if (solve && j->have_factor && !h5m_attr_get_f64(j->in_a, "norm1_input", &anorm))
      ooc_warn(r->warnings, sizeof r->warnings, "%s records no norm1_input: the solve check "
               "bounds ||A|| by ||L||_inf ||L||_1", h5m_name(j->in_a));
    if (solve && j->have_factor)
      OOC_TRY(check_solve_factor(ctx, j->ops, n, j->m, j->b, &srcA, anorm, &srcB, &srcX, eps,
                                 mem, &r->residual, &r->norm1_x));
    else if (solve)
      OOC_TRY(check_solve(ctx, j->ops, n, j->m, j->b, &srcA, &srcB, &srcX, eps, mem,
                          &r->residual, &r->norm1_x));
    else if (j->factor_out)
      OOC_TRY(check_factor(ctx, j->ops, n, j->b, &srcA, &srcX, ck == OOC_CHECK_FULL, eps, mem,
                           &r->residual, &r->norm1_a));
    else
      OOC_TRY(check_inverse(ctx, j->ops, n, j->b, &srcA, &srcX, ck == OOC_CHECK_FULL, eps, mem,
                            &r->residual, &r->norm1_a, &r->norm1_x));
  }
  r->t_check = ooc_now() - t0;
  r->host_peak = ooc_ctx_host_peak(ctx);
  double kappa = r->norm1_a * r->norm1_x;
  if (!solve && !j->factor_out && kappa * eps > 1e-3)
    ooc_warn(r->warnings, sizeof r->warnings,
             "ill-conditioned: kappa_1(A) = %.2g, expect about %.0f correct digits in A^-1", kappa,
             fmax(0, -log10(kappa * eps * 2)));
  if (ck != OOC_CHECK_NONE && !(r->residual < thr))
    return OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s: the result failed its residual check (%s ratio %.3g, must be < %g); "
                    "no output was written",
                    h5m_name(j->in_a), r->check, r->residual, thr);
  return OOC_OK;
}

/* Record how the output was made, then fsync and rename it into place. */
static ooc_status_t commit_output(job_t *j) {
  ooc_report_t *r = j->rep;
  h5mat_t *o = j->out;
  OOC_TRY(h5m_attr_str(o, "oocsolve_version", OOC_VERSION_STRING));
  OOC_TRY(h5m_attr_str(o, "method", r->method));
  OOC_TRY(h5m_attr_str(o, "backend", r->backend));
  OOC_TRY(h5m_attr_str(o, "precision", r->precision));
  OOC_TRY(h5m_attr_str(o, "input", h5m_name(j->in_a)));
  if (j->in_b) OOC_TRY(h5m_attr_str(o, "rhs", h5m_name(j->in_b)));
  if (j->factor_out) {
    double a1 = 0;
    for (int64_t c = 0; c < j->n; c++) a1 = fmax(a1, j->colnorm[c]);
    OOC_TRY(h5m_attr_str(o, "factor", "cholesky_lower"));
    OOC_TRY(h5m_attr_f64(o, "norm1_input", a1)); /* for the check of a later solve --factor */
    OOC_TRY(h5m_attr_f64(o, "logdet_input", r->logdet));
  } else if (j->method == OOC_METHOD_CHOL && !j->in_b) {
    OOC_TRY(h5m_attr_str(o, "triangle", j->o.lower_only ? "lower" : "full"));
    OOC_TRY(h5m_attr_f64(o, "logdet_input", r->logdet));
  }
  OOC_TRY(h5m_attr_i64(o, "n", j->n));
  OOC_TRY(h5m_attr_i64(o, "tile", j->b));
  OOC_TRY(h5m_attr_i64(o, "stripe", j->W));
  OOC_TRY(h5m_attr_str(o, "check", r->check));
  OOC_TRY(h5m_attr_f64(o, "residual_ratio", r->residual));
  OOC_TRY(h5m_attr_f64(o, "time_read", r->t_read));
  OOC_TRY(h5m_attr_f64(o, "time_compute", r->t_compute));
  OOC_TRY(h5m_attr_f64(o, "time_spill", r->t_spill));
  OOC_TRY(h5m_attr_f64(o, "time_write", r->t_write));
  OOC_TRY(h5m_attr_f64(o, "time_check", r->t_check));
  return h5m_commit(o);
}

/* ---- the common driver ------------------------------------------------------------------- */

static ooc_status_t run(job_t *j, const char *a_spec, const char *b_spec, const char *out_spec) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  double t_start = ooc_now();
  char afile[PATH_MAX], adset[512];
  snprintf(r->kind, sizeof r->kind, "%s", b_spec ? "solve" : j->factor_out ? "factor"
                                          : j->logdet_only ? "logdet" : "inverse");
  snprintf(r->method, sizeof r->method, j->o.method == OOC_METHOD_CHOL ? "chol" : "gj");

  OOC_TRY(open_input(j, a_spec, &j->in_a));
  j->n = h5m_rows(j->in_a);
  if (h5m_cols(j->in_a) != j->n)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: matrix is %lld x %lld; it must be square",
                    h5m_name(j->in_a), (long long)h5m_rows(j->in_a), (long long)h5m_cols(j->in_a));
  if (b_spec) {
    OOC_TRY(open_input(j, b_spec, &j->in_b));
    if (h5m_rows(j->in_b) != j->n)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: right-hand side has %lld rows; A is %lld x %lld",
                      h5m_name(j->in_b), (long long)h5m_rows(j->in_b), (long long)j->n,
                      (long long)j->n);
    j->m = h5m_cols(j->in_b);
  }
  int64_t n = j->n, m = j->m;
  r->n = n;
  r->nrhs = m;
  snprintf(r->precision, sizeof r->precision, "f64");

  OOC_TRY(pick_backend(j));
  OOC_TRY(h5m_split_spec(ctx, b_spec ? b_spec : a_spec, afile, sizeof afile, adset, sizeof adset));
  if (j->logdet_only) { /* no output; scratch beside the input */
    ooc_fmt(j->scratch_dir, sizeof j->scratch_dir, "%s",
            j->o.scratch_dir && *j->o.scratch_dir ? j->o.scratch_dir : dirname(afile));
  } else {
    OOC_TRY(resolve_output(j, out_spec, afile, b_spec ? ".x" : j->factor_out ? ".chol" : ".inv",
                           b_spec ? "/X" : j->factor_out ? "/L" : "/inverse"));
  }
  OOC_TRY(plan(j));
  if (j->cuda) OOC_TRY(plan_gpu(j));
  r->tile = j->b;
  r->stripe = j->W;
  r->host_budget = j->budget;

  j->f32 = h5m_type(j->in_a) == H5M_F32 && (!j->in_b || h5m_type(j->in_b) == H5M_F32);
  int f32 = j->o.out_dtype == OOC_DTYPE_F32 || (j->o.out_dtype == OOC_DTYPE_AUTO && j->f32);
  snprintf(r->out_dtype, sizeof r->out_dtype, f32 ? "f32" : "f64");
  /* Create the output first: an existing file or an unwritable directory fails in seconds. */
  j->chunk = ooc_max64(j->b, 256);
  if (!j->logdet_only)
    OOC_TRY(h5m_create(ctx, j->out_file, j->out_dset, n, b_spec ? m : n, f32 ? H5M_F32 : H5M_F64,
                       j->chunk, j->o.compress, j->o.force, &j->out));

  j->colnorm = ooc_calloc(ctx, (size_t)n, sizeof(double));
  j->perm = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  if (!j->colnorm || !j->perm)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (n = %lld)", (long long)n);
  OOC_TRY(load_inputs(j));
  OOC_TRY(choose_method(j));

  /* eliminate */
  double t1 = ooc_now();
  double spill_before = ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0);
  int64_t steps = 0;
  ooc_status_t st = OOC_OK;
  if (j->method == OOC_METHOD_CHOL) st = eliminate_chol(j, &steps);
  if (st == OOC_OK && j->method == OOC_METHOD_GJ) /* also after a fallback from chol */
    st = eliminate_gj(j, &steps);
  double t2 = ooc_now();
  double spill_after = ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0);
  r->steps = steps;
  r->t_spill = spill_after;
  r->t_compute = (t2 - t1) - (spill_after - spill_before);
  r->flops = method_flops(j);
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0;
  OOC_TRY(st);
  if (j->logdet_only) {
    collect_stats(j);
    r->t_total = ooc_now() - t_start;
    return OOC_OK;
  }

  /* write */
  const int64_t *perm = j->method == OOC_METHOD_GJ ? j->perm : NULL;
  OOC_TRY(j->B ? write_rows(j, j->B, NULL) : write_rows(j, j->A, perm));
  r->t_spill += ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0) - spill_after;
  r->t_write = ooc_now() - t2;
  collect_stats(j);
  unload_inputs(j);

  OOC_TRY(check_output(j, f32));
  OOC_TRY(commit_output(j));
  r->t_total = ooc_now() - t_start;
  return OOC_OK;
}

static void job_cleanup(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
#ifdef OOC_HAVE_CUDA
  if (j->exec) ocu_exec_destroy(j->exec);
#endif
  unload_inputs(j);
  h5m_close(j->out); /* removes the temporary file unless committed */
  h5m_close(j->in_a);
  h5m_close(j->in_b);
  ooc_free(ctx, j->colnorm);
  ooc_free(ctx, j->perm);
}

static ooc_status_t start(job_t *j, ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *rep,
                          ooc_report_t *local) {
  memset(j, 0, sizeof *j);
  j->ctx = ctx;
  j->rep = rep ? rep : local;
  memset(j->rep, 0, sizeof *j->rep);
  j->rep->logdet = NAN;
  if (opts) j->o = *opts;
  else ooc_opts_default(&j->o);
  ooc_clear_error(ctx);
  ctx->interrupted = 0;
  ooc_ctx_reset_peak(ctx);
  if (j->o.method != OOC_METHOD_AUTO && j->o.method != OOC_METHOD_GJ &&
      j->o.method != OOC_METHOD_CHOL)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown method %d", (int)j->o.method);
  return OOC_OK;
}

/* The public calls differ only in what the job does with its inputs (flags) and outputs. */
enum { AS_INVERT = 0, AS_LOGDET = 1, AS_FACTOR = 2, AS_FACTORED = 4 };

static ooc_status_t call(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report, int as,
                         const char *a, const char *b, int need_b, const char *out,
                         double *logdet) {
  if (!ctx) return OOC_ERR_ARG;
  job_t j;
  ooc_report_t local;
  ooc_status_t st = start(&j, ctx, opts, report, &local);
  j.logdet_only = (as & AS_LOGDET) != 0;
  j.factor_out = (as & AS_FACTOR) != 0;
  j.have_factor = (as & AS_FACTORED) != 0;
  if (st == OOC_OK) {
    if (need_b && (!b || !*b)) st = OOC_FAIL(ctx, OOC_ERR_ARG, "no right-hand side given");
    else st = run(&j, a, b, out);
  }
  if (logdet) *logdet = st == OOC_OK ? j.rep->logdet : NAN;
  job_cleanup(&j);
  return st;
}

ooc_status_t ooc_invert(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report) {
  return call(ctx, opts, report, AS_INVERT, input, NULL, 0, output, NULL);
}

ooc_status_t ooc_solve(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report) {
  return call(ctx, opts, report, AS_INVERT, a, b, 1, output, NULL);
}

ooc_status_t ooc_factor(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report) {
  return call(ctx, opts, report, AS_FACTOR, input, NULL, 0, output, NULL);
}

ooc_status_t ooc_solve_factor(ooc_ctx_t *ctx, const char *factor, const char *b,
                              const char *output, const ooc_opts_t *opts, ooc_report_t *report) {
  return call(ctx, opts, report, AS_FACTORED, factor, b, 1, output, NULL);
}

ooc_status_t ooc_logdet(ooc_ctx_t *ctx, const char *input, const ooc_opts_t *opts,
                        ooc_report_t *report, double *logdet) {
  return call(ctx, opts, report, AS_LOGDET, input, NULL, 0, NULL, logdet);
}
