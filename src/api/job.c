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
#include "solvers/gj.h"
#include "tiling/tstore.h"

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

static ooc_status_t pick_backend(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  switch (j->o.device) {
  case OOC_DEVICE_REF: j->ops = ooc_ops_ref(); break;
  case OOC_DEVICE_CPU:
  case OOC_DEVICE_AUTO: j->ops = ooc_ops_cpu(); break;
  case OOC_DEVICE_CUDA:
    return OOC_FAIL(ctx, OOC_ERR_NODEVICE,
                    "--device cuda: this build of oocsolve has no CUDA backend");
  default: return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown device %d", (int)j->o.device);
  }
  snprintf(j->rep->backend, sizeof j->rep->backend, "%s", j->ops->name);
  return OOC_OK;
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
  if (avail >= gj_workspace_bytes(n, b, n, m)) {
    W = n;
  } else {
    /* largest multiple of b that fits (workspace grows linearly in W) */
    int64_t lo = 0, hi = ooc_cdiv64(n, b);
    while (lo < hi) {
      int64_t mid = (lo + hi + 1) / 2;
      if (gj_workspace_bytes(n, b, mid * b, m) <= avail) lo = mid;
      else hi = mid - 1;
    }
    W = lo * b;
  }
  if (W < b) {
    char have[32], need[32];
    ooc_fmt_bytes(j->budget, have, sizeof have);
    ooc_fmt_bytes(j->fixed + gj_workspace_bytes(n, b, b, m), need, sizeof need);
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

/* ---- the common driver ------------------------------------------------------------------- */

static ooc_status_t run(job_t *j, const char *a_spec, const char *b_spec, const char *out_spec) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  double t_start = ooc_now();
  char afile[PATH_MAX], adset[512];

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
  snprintf(r->method, sizeof r->method, "gj");
  snprintf(r->precision, sizeof r->precision, "f64");

  OOC_TRY(pick_backend(j));
  OOC_TRY(h5m_split_spec(ctx, b_spec ? b_spec : a_spec, afile, sizeof afile, adset, sizeof adset));
  OOC_TRY(resolve_output(j, out_spec, afile, b_spec ? ".x" : ".inv", b_spec ? "/X" : "/inverse"));
  OOC_TRY(plan(j));
  r->tile = j->b;
  r->stripe = j->W;
  r->host_budget = j->budget;

  int f32 = j->o.out_dtype == OOC_DTYPE_F32 ||
            (j->o.out_dtype == OOC_DTYPE_AUTO && h5m_type(j->in_a) == H5M_F32 &&
             (!j->in_b || h5m_type(j->in_b) == H5M_F32));
  snprintf(r->out_dtype, sizeof r->out_dtype, f32 ? "f32" : "f64");
  /* Create the output first: an existing file or an unwritable directory fails in seconds. */
  j->chunk = ooc_max64(j->b, 256);
  OOC_TRY(h5m_create(ctx, j->out_file, j->out_dset, n, b_spec ? m : n, f32 ? H5M_F32 : H5M_F64,
                     j->chunk, j->o.compress, j->o.force, &j->out));

  j->colnorm = ooc_calloc(ctx, (size_t)n, sizeof(double));
  j->perm = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  if (!j->colnorm || !j->perm)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (n = %lld)", (long long)n);
  int64_t cache_cap = j->budget - j->fixed - gj_workspace_bytes(n, j->b, j->W, m);
  OOC_TRY(tcache_create(ctx, cache_cap, &j->cache));
  ooc_source_t srcA = {j->in_a, h5_source_read}, srcB = {j->in_b, h5_source_read};
  /* The stores need no source: load() fills them, reading each input byte once. */
  j->spill[0] = (spill_slot_t){j, "A", NULL};
  j->spill[1] = (spill_slot_t){j, "B", NULL};
  ooc_spill_ops_t spA = {&j->spill[0], spill_open, spill_put, spill_get};
  ooc_spill_ops_t spB = {&j->spill[1], spill_open, spill_put, spill_get};
  OOC_TRY(tstore_create(ctx, j->cache, n, n, j->b, NULL, &spA, &j->A));
  if (b_spec) OOC_TRY(tstore_create(ctx, j->cache, n, m, j->b, NULL, &spB, &j->B));

  /* read */
  double t0 = ooc_now();
  OOC_TRY(load(j, j->A, j->in_a, j->colnorm));
  if (j->B) {
    double *bnorm = ooc_calloc(ctx, (size_t)m, sizeof(double));
    if (!bnorm) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (m = %lld)", (long long)m);
    ooc_status_t st = load(j, j->B, j->in_b, bnorm);
    ooc_free(ctx, bnorm);
    OOC_TRY(st);
  }
  double t1 = ooc_now();
  double spill_before = ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0);
  r->t_read = t1 - t0 - spill_before;

  /* eliminate */
  gj_args_t ga = {.A = j->A, .B = j->B, .stripe = j->W, .ops = j->ops, .colnorm = j->colnorm,
                  .perm = j->B ? NULL : j->perm};
  gj_stats_t gs;
  ooc_status_t st = gj_run(ctx, &ga, &gs, &r->info);
  if (st == OOC_ERR_SINGULAR) ooc_error_context(ctx, "%s", h5m_name(j->in_a));
  double t2 = ooc_now();
  double spill_after = ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0);
  r->steps = gs.steps;
  r->t_spill = spill_after;
  r->t_compute = (t2 - t1) - (spill_after - spill_before);
  double dn = (double)n;
  r->flops = j->B ? dn * dn * dn + 2.0 * dn * dn * (double)m : 2.0 * dn * dn * dn;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0;
  OOC_TRY(st);

  /* write */
  OOC_TRY(j->B ? write_rows(j, j->B, NULL) : write_rows(j, j->A, j->perm));
  double t3 = ooc_now();
  r->t_spill += ts_stats(j->A)->t_spill + (j->B ? ts_stats(j->B)->t_spill : 0) - spill_after;
  r->t_write = t3 - t2;
  const ts_stats_t *sa = ts_stats(j->A), *sb = j->B ? ts_stats(j->B) : NULL;
  r->bytes_input = h5m_bytes(j->in_a) + (j->in_b ? h5m_bytes(j->in_b) : 0);
  r->bytes_spilled = sa->bytes_spilled + (sb ? sb->bytes_spilled : 0);
  r->bytes_unspilled = sa->bytes_unspilled + (sb ? sb->bytes_unspilled : 0);
  r->bytes_output = 8 * n * (j->B ? m : n);
  r->host_peak = ooc_ctx_host_peak(ctx);
  int solve = j->B != NULL;
  tstore_destroy(j->A);
  tstore_destroy(j->B);
  j->A = j->B = NULL;
  for (int k = 0; k < 2; k++) {
    scratch_close(j->spill[k].s);
    j->spill[k].s = NULL;
  }

  /* check what was written, against the input */
  ooc_check_t ck = j->o.check;
  if (ck == OOC_CHECK_AUTO) ck = n <= 2048 ? OOC_CHECK_FULL : OOC_CHECK_PROBE;
  snprintf(r->check, sizeof r->check, "%s",
           ck == OOC_CHECK_NONE ? "none" : ck == OOC_CHECK_FULL ? "full" : "probe");
  double eps = check_eps(f32), thr = j->o.check_threshold > 0 ? j->o.check_threshold : (solve ? 16 : 30);
  ooc_source_t srcX = {j->out, h5_source_read};
  int64_t check_mem = ooc_max64(j->budget - j->fixed, 3 * 8 * n);
  if (ck != OOC_CHECK_NONE) {
    if (solve)
      OOC_TRY(check_solve(ctx, j->ops, n, m, j->b, &srcA, &srcB, &srcX, eps, check_mem,
                          &r->residual, &r->norm1_x));
    else
      OOC_TRY(check_inverse(ctx, j->ops, n, j->b, &srcA, &srcX, ck == OOC_CHECK_FULL, eps,
                            check_mem, &r->residual, &r->norm1_a, &r->norm1_x));
  } else {
    r->residual = NAN;
  }
  r->t_check = ooc_now() - t3;
  r->host_peak = ooc_ctx_host_peak(ctx);
  if (!solve && r->norm1_a * r->norm1_x * eps > 1e-3)
    ooc_warn(r->warnings, sizeof r->warnings,
             "ill-conditioned: kappa_1(A) = %.2g, expect about %.0f correct digits in A^-1",
             r->norm1_a * r->norm1_x, fmax(0, -log10(r->norm1_a * r->norm1_x * eps * 2)));
  if (ck != OOC_CHECK_NONE && !(r->residual < thr))
    return OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s: the result failed its residual check (%s ratio %.3g, must be < %g); "
                    "no output was written",
                    h5m_name(j->in_a), r->check, r->residual, thr);

  /* commit */
  h5mat_t *o = j->out;
  OOC_TRY(h5m_attr_str(o, "oocsolve_version", OOC_VERSION_STRING));
  OOC_TRY(h5m_attr_str(o, "method", r->method));
  OOC_TRY(h5m_attr_str(o, "backend", r->backend));
  OOC_TRY(h5m_attr_str(o, "precision", r->precision));
  OOC_TRY(h5m_attr_str(o, "input", h5m_name(j->in_a)));
  if (j->in_b) OOC_TRY(h5m_attr_str(o, "rhs", h5m_name(j->in_b)));
  OOC_TRY(h5m_attr_i64(o, "n", n));
  OOC_TRY(h5m_attr_i64(o, "tile", j->b));
  OOC_TRY(h5m_attr_i64(o, "stripe", j->W));
  OOC_TRY(h5m_attr_str(o, "check", r->check));
  OOC_TRY(h5m_attr_f64(o, "residual_ratio", r->residual));
  OOC_TRY(h5m_attr_f64(o, "time_read", r->t_read));
  OOC_TRY(h5m_attr_f64(o, "time_compute", r->t_compute));
  OOC_TRY(h5m_attr_f64(o, "time_spill", r->t_spill));
  OOC_TRY(h5m_attr_f64(o, "time_write", r->t_write));
  OOC_TRY(h5m_attr_f64(o, "time_check", r->t_check));
  OOC_TRY(h5m_commit(o));
  r->t_total = ooc_now() - t_start;
  return OOC_OK;
}

static void job_cleanup(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  tstore_destroy(j->A);
  tstore_destroy(j->B);
  for (int k = 0; k < 2; k++) scratch_close(j->spill[k].s);
  tcache_destroy(j->cache);
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
  if (opts) j->o = *opts;
  else ooc_opts_default(&j->o);
  ooc_clear_error(ctx);
  ctx->interrupted = 0;
  ooc_ctx_reset_peak(ctx);
  if (j->o.method != OOC_METHOD_AUTO && j->o.method != OOC_METHOD_GJ)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown method %d", (int)j->o.method);
  return OOC_OK;
}

ooc_status_t ooc_invert(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  job_t j;
  ooc_report_t local;
  ooc_status_t st = start(&j, ctx, opts, report, &local);
  if (st == OOC_OK) st = run(&j, input, NULL, output);
  job_cleanup(&j);
  return st;
}

ooc_status_t ooc_solve(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  job_t j;
  ooc_report_t local;
  ooc_status_t st = start(&j, ctx, opts, report, &local);
  if (st == OOC_OK) {
    if (!b || !*b) st = OOC_FAIL(ctx, OOC_ERR_ARG, "no right-hand side given");
    else st = run(&j, a, b, output);
  }
  job_cleanup(&j);
  return st;
}
