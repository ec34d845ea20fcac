/*
 * job_qr.c: least squares as a command (issue 24): ooc_lstsq (factor A's rows into R and d = Q^T b,
 * solve, check, write the QR state file), ooc_lstsq_update (add rows, remove columns: from a
 * state file to a new one) and ooc_lstsq_add_cols (add columns: [A V] re-reduced, streamed). The method is solvers/qr.c on the executor; this file opens the
 * inputs, plans the row block, picks the executor, checks, and writes the state file.
 *
 * The QR state file (docs/CLI.md "lstsq"), every dataset float64 unless said:
 *   /R              n x n upper triangular (attributes: factor = "qr", rows = m folded, rank,
 *                   nrhs, method, backend, input_a/_b and input_a/_b_trans (files only), check,
 *                   residual_ratio, block_rows, panel_rows, update)
 *   /d              n x nrhs (1-D when b was 1-D): the first n rows of Q^T b
 *   /x              n x nrhs (1-D likewise): the least-squares solution R^-1 d
 *   /residual_norms nrhs: ||b_k - A x_k||_2, from the residual rows of the reduction
 *   /colmap         n int64: the original column of A that each row of x / column of R is
 * Written to a temporary file and renamed into place only when complete (h5m_commit).
 *
 * Not here (yet): the output lock and journal of job.c's pipeline (a run is one pass over A:
 * nothing to resume), the update on matrix handles (ooc_lstsq_m covers the factorization), the
 * Fortran binding.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/matrix.h"
#include "api/outpath.h"
#include "api/report.h"
#include "exec/plugin.h"
#include "io/h5mat.h"
#include "io/h5vec.h"
#include "solvers/check.h"
#include "solvers/qr.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* device bytes kept out of the panel for cuSOLVER's geqrf workspace */
#define QR_GPU_WS_MARGIN ((int64_t)512 << 20)
/* --check auto: the full check (one more pass over A and b) up to this many elements of A */
#define QR_CHECK_AUTO_ELEMS ((int64_t)1 << 28)
#define QR_CHECK_THRESHOLD 30.0

typedef struct lq {
  ooc_ctx_t *ctx;
  ooc_opts_t o;
  ooc_report_t *rep;
  h5mat_t *A, *B, *V;          /* V: --add-cols' new columns */
  h5mat_t *out, *xout;          /* out: the state file; xout: x alone (ooc_lstsq_m) */
  const ooc_ops_t *ops;
  ooc_exec_t *ex;
  int cuda, b1d;
  int64_t m, n, nrhs, p, P; /* P: the panel (qr.h), p <= P */
  double t_read;
  char out_file[PATH_MAX];
  char in_a[PATH_MAX + 512], in_b[PATH_MAX + 512]; /* a state's input_a/input_b ("" if none) */
  int in_ta, in_tb; /* ... and whether they were read transposed (input_a_trans, input_b_trans) */
} lq_t;

static ooc_status_t start(lq_t *q, ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *rep,
                          ooc_report_t *local) {
  memset(q, 0, sizeof *q);
  q->ctx = ctx;
  q->rep = rep ? rep : local;
  report_begin(ctx, opts, q->rep, &q->o);
  snprintf(q->rep->method, sizeof q->rep->method, "qr");
  snprintf(q->rep->precision, sizeof q->rep->precision, "f64");
  snprintf(q->rep->out_dtype, sizeof q->rep->out_dtype, "f64");
  snprintf(q->rep->check, sizeof q->rep->check, "none");
  q->rep->host_budget = q->o.host_mem;
  if (q->o.method != OOC_METHOD_AUTO)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq: --method does not apply (least squares is by "
                    "Householder QR)");
  return OOC_OK;
}

static void finish(lq_t *q, double t0) {
  ex_destroy(q->ex);
  h5m_close(q->A);
  h5m_close(q->B);
  h5m_close(q->V);
  h5m_close(q->out); /* uncommitted: the temporary is removed */
  h5m_close(q->xout);
  q->rep->host_peak = ooc_ctx_host_peak(q->ctx);
  q->rep->t_total = ooc_now() - t0;
}

/* ---- inputs ------------------------------------------------------------------------------ */

static ooc_status_t open_spec(lq_t *q, const char *spec, int trans, h5mat_t **out) {
  char file[PATH_MAX], dset[512];
  OOC_TRY(h5m_split_spec(q->ctx, spec, file, sizeof file, dset, sizeof dset));
  OOC_TRY(h5m_open2(q->ctx, file, dset, trans ? H5M_TRANS : 0u, out));
  if (q->o.allow_fill) h5m_set_allow_fill(*out, 1);
  return OOC_OK;
}

/* A's and b's rows [r0, r0 + nr): read, and refused if not finite (the reduction would spread a
 * NaN over R and every solution). For --add-cols the rows are of [A[:, colmap] V]: A's columns
 * that the state still holds (colmap, nmap of them, read in runs of consecutive columns), then
 * V's (V NULL: A's columns 0 .. n-1 as they are). */
typedef struct rsrc {
  lq_t *q;
  h5mat_t *A, *B;
  h5mat_t *V;
  const int64_t *colmap;
  int64_t nmap;
} rsrc_t;

static ooc_status_t finite_or_fail(lq_t *q, h5mat_t *h, int64_t r0, int64_t nr, int64_t nc,
                                   const double *v, int64_t ld, int64_t c0) {
  for (int64_t j = 0; j < nc; j++)
    for (int64_t i = 0; i < nr; i++)
      if (!isfinite(v[i + j * ld]))
        return OOC_FAIL(q->ctx, OOC_ERR_NONFINITE, "%s: element [%lld, %lld] (row, column of the "
                        "matrix as read) is %g: least squares needs finite values",
                        h5m_name(h), (long long)(r0 + i), (long long)(c0 + j), v[i + j * ld]);
  return OOC_OK;
}

static ooc_status_t read_rows(void *user, int64_t r0, int64_t nr, double *A, int64_t lda,
                              double *B, int64_t ldb) {
  rsrc_t *s = user;
  lq_t *q = s->q;
  double t0 = ooc_now();
  int64_t n = h5m_cols(s->A), nrhs = h5m_cols(s->B);
  if (!s->V) {
    OOC_TRY(h5m_read(s->A, r0, 0, nr, n, A, lda));
    OOC_TRY(finite_or_fail(q, s->A, r0, nr, n, A, lda, 0));
  } else {
    for (int64_t j = 0, t; j < s->nmap; j += t) {
      for (t = 1; j + t < s->nmap && s->colmap[j + t] == s->colmap[j] + t; t++) {}
      OOC_TRY(h5m_read(s->A, r0, s->colmap[j], nr, t, A + j * lda, lda));
      OOC_TRY(finite_or_fail(q, s->A, r0, nr, t, A + j * lda, lda, s->colmap[j]));
    }
    double *Vb = A + s->nmap * lda;
    OOC_TRY(h5m_read(s->V, r0, 0, nr, h5m_cols(s->V), Vb, lda));
    OOC_TRY(finite_or_fail(q, s->V, r0, nr, h5m_cols(s->V), Vb, lda, 0));
  }
  OOC_TRY(h5m_read(s->B, r0, 0, nr, nrhs, B, ldb));
  OOC_TRY(finite_or_fail(q, s->B, r0, nr, nrhs, B, ldb, 0));
  q->t_read += ooc_now() - t0;
  return OOC_OK;
}

/* ---- backend and plan --------------------------------------------------------------------- */

static ooc_status_t pick_backend(lq_t *q) {
  ooc_ctx_t *ctx = q->ctx;
  q->cuda = 0;
  q->ops = q->o.device == OOC_DEVICE_REF ? ooc_ops_ref() : ooc_ops_cpu();
  if (q->o.device == OOC_DEVICE_AUTO || q->o.device == OOC_DEVICE_CUDA) {
    char desc[256] = "", why[1024] = "";
    int found = 0;
    const ooc_cuda_api_t *cu = ooc_cuda_load(why, sizeof why, &found);
    if (cu && cu->probe(desc, sizeof desc)) {
      q->cuda = 1;
      ooc_warn(q->rep->warnings, sizeof q->rep->warnings, "using GPU 0: %s", desc);
    } else if (q->o.device == OOC_DEVICE_CUDA) {
      if (cu) return OOC_FAIL(ctx, OOC_ERR_NODEVICE, "--device cuda: no usable GPU (%s)", desc);
      return OOC_FAIL(ctx, OOC_ERR_NODEVICE, "--device cuda: %s", why);
    } else if (!cu && found) {
      ooc_warn(q->rep->warnings, sizeof q->rep->warnings, "GPU not used: %s", why);
    }
  } else if (q->o.device != OOC_DEVICE_CPU && q->o.device != OOC_DEVICE_REF) {
    return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown device %d", (int)q->o.device);
  }
  snprintf(q->rep->backend, sizeof q->rep->backend, "%s", q->cuda ? "cuda" : q->ops->name);
  return OOC_OK;
}

/* The row block p: --tile if given, else max(4096, 4n) (the stacked [R; A_i] reduction redoes
 * R's n rows per block: a panel of P >= 4n rows keeps that under 1/6 more flops, qr.h), then
 * whatever the budgets
 * allow: the host's (the state, and on the host executor the whole workspace; on a GPU the
 * pinned slots) and the device's (S = (n + p) x (n + nrhs) and cuSOLVER's workspace). R must fit:
 * otherwise OOC_ERR_BUDGET (a tiled Householder QR for n x n beyond memory is not implemented). */
static ooc_status_t plan(lq_t *q, int64_t rows) {
  ooc_ctx_t *ctx = q->ctx;
  int64_t n = q->n, nrhs = q->nrhs, w = n + nrhs;
  int64_t want = q->o.tile > 0 ? q->o.tile : (4 * n > 4096 ? 4 * n : 4096);
  int64_t state = qr_state_bytes(n, nrhs) + 8 * n * nrhs; /* and X */
  /* the readers' staging windows (h5m_set_stage) come out of the budget too: an eighth of it, at
   * most 1 GiB, 7/8 of that for A (and V, by their columns), 1/8 for b (h5m_read decodes as many
   * chunks at once as its stage holds: the GPU run read 34 GB at 1.4 GB/s with one 128 MiB chunk
   * at a time) */
  int64_t io = q->o.host_mem / 8 < ((int64_t)1 << 30) ? q->o.host_mem / 8 : ((int64_t)1 << 30);
  int64_t kv = q->V ? h5m_cols(q->V) : 0, ka = q->A ? h5m_cols(q->A) : 0, ia = io / 8 * 7;
  if (q->V && ka + kv > 0) {
    h5m_set_stage(q->V, (int64_t)((double)ia * (double)kv / (double)(ka + kv)));
    ia -= (int64_t)((double)ia * (double)kv / (double)(ka + kv));
  }
  if (q->A) h5m_set_stage(q->A, ia);
  if (q->B) h5m_set_stage(q->B, io / 8);
  int64_t host_left = q->o.host_mem - state - io;
  char b1[32], b2[32], b3[32], b4[32];
  int64_t p;
  if (!q->cuda) {
    p = qr_block_rows(host_left, n, nrhs);
    if (p < 1)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem %s: least squares keeps R (n x n, n = %lld) "
                      "and d (%lld right-hand sides) in memory, %s, and needs %s more for one row "
                      "block (and %s for reading); R larger than memory (a tiled QR) is not implemented",
                      ooc_fmt_bytes(q->o.host_mem, b1, sizeof b1), (long long)n, (long long)nrhs,
                      ooc_fmt_bytes(state, b2, sizeof b2),
                      ooc_fmt_bytes(qr_workspace_bytes(n, nrhs, 1, 1), b3, sizeof b3),
                      ooc_fmt_bytes(io, b4, sizeof b4));
  } else {
    ex_cuda_config_t xc = {.device = 0, .gpu_mem = q->o.gpu_mem, .nqueues = 1,
                           .trace = q->o.trace};
    OOC_TRY(ooc_cuda()->ex_create(ctx, &xc, &q->ex));
    int64_t room = q->ex->budget - QR_GPU_WS_MARGIN - 8 * (n + 1);
    int64_t pd = room / (8 * w) - n;
    /* host: the pinned slots (QR_SLOTS x p rows) and the residual buffer (P <= 16 p rows) */
    int64_t ph = host_left / (8 * (w * QR_SLOTS + 16 * nrhs));
    if (pd < 1 || 8 * n * w > room)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--gpu-mem: the device budget %s holds less than R "
                      "and d (%s) and one row block (n = %lld, %lld right-hand sides); R larger "
                      "than the device (a tiled QR) is not implemented",
                      ooc_fmt_bytes(q->ex->budget, b1, sizeof b1),
                      ooc_fmt_bytes(8 * n * w, b2, sizeof b2), (long long)n, (long long)nrhs);
    if (ph < 1)
      return OOC_FAIL(ctx, OOC_ERR_BUDGET, "--host-mem %s: the QR state (%s) and one row block's "
                      "staging slots do not fit", ooc_fmt_bytes(q->o.host_mem, b1, sizeof b1),
                      ooc_fmt_bytes(state, b2, sizeof b2));
    p = pd < ph ? pd : ph;
    /* the panel: tall factorizations (cuSOLVER's geqrf costs O(n) launches whatever its rows),
     * up to 16 blocks, within the device budget */
    int64_t pb = p < want ? p : want;
    q->P = pd < 16 * pb ? pd : 16 * pb;
  }
  if (p > want) p = want;
  if (rows > 0 && p > rows) p = rows;
  if (p < 1) p = 1;
  if (q->P < p) q->P = p;
  if (rows > 0 && q->P > rows) q->P = rows > p ? rows : p;
  q->p = p;
  q->rep->tile = p;
  q->rep->stripe = q->P;
  return OOC_OK;
}

/* ---- check --------------------------------------------------------------------------------- */

/* The check as opts->check asks (auto: full up to QR_CHECK_AUTO_ELEMS elements of A, as it reads
 * A again; probe is full here), its ratio against the threshold: OOC_ERR_ACCURACY above it.
 * `what` names the problem in the message ("A", "[A V]"). */
static ooc_status_t check_x(lq_t *q, rsrc_t *src, const double *X, const char *what) {
  ooc_report_t *r = q->rep;
  int full = q->o.check == OOC_CHECK_FULL || q->o.check == OOC_CHECK_PROBE ||
             (q->o.check == OOC_CHECK_AUTO && q->m * q->n <= QR_CHECK_AUTO_ELEMS);
  if (!full) {
    if (q->o.check == OOC_CHECK_AUTO)
      ooc_warn(r->warnings, sizeof r->warnings, "check skipped: %s has more than %lld elements "
               "(--check full reads it again)", what, (long long)QR_CHECK_AUTO_ELEMS);
    return OOC_OK;
  }
  double tk = ooc_now(), tr = q->t_read;
  double thr = q->o.check_threshold > 0 ? q->o.check_threshold : QR_CHECK_THRESHOLD;
  OOC_TRY(check_lstsq(q->ctx, q->ops, q->m, q->n, q->nrhs, q->p, read_rows, src, X, check_eps(0),
                      &r->residual));
  r->t_check = ooc_now() - tk;
  r->bytes_input += 8 * q->m * (q->n + q->nrhs);
  q->t_read = tr; /* the check's reads are its own time */
  snprintf(r->check, sizeof r->check, "full");
  if (!(r->residual < thr))
    return OOC_FAIL(q->ctx, OOC_ERR_ACCURACY, "lstsq: the check ratio ||%s^T r|| / (max(m, n) eps "
                    "||%s||_F (||%s||_F ||x|| + ||b||)) is %.3g, not below %g: nothing was written",
                    what, what, what, r->residual, thr);
  return OOC_OK;
}

/* ---- the state file ------------------------------------------------------------------------ */

/* The output file (a file, not a dataset: the state file holds several), checked against every
 * file the run reads. */
static ooc_status_t resolve_output(lq_t *q, const char *spec, const char *from,
                                   const char *suffix, const char *const *ins, int nins) {
  if (spec && *spec) {
    if (strstr(spec, ":/"))
      return OOC_FAIL(q->ctx, OOC_ERR_ARG, "lstsq --out %s: give a file name only (the QR state "
                      "file holds /x, /R, /d, /residual_norms and /colmap)", spec);
    snprintf(q->out_file, sizeof q->out_file, "%s", spec);
  } else {
    outpath_derive(from, suffix, q->out_file, sizeof q->out_file);
  }
  OOC_TRY(outpath_check(q->ctx, q->out_file, ins, nins));
  ooc_fmt(q->rep->output, sizeof q->rep->output, "%s", q->out_file);
  return OOC_OK;
}

static ooc_status_t write_state(lq_t *q, const qr_state_t *s, const double *X, int64_t rank,
                                const char *in_a, int ta, const char *in_b, int tb,
                                const char *update) {
  ooc_ctx_t *ctx = q->ctx;
  ooc_report_t *r = q->rep;
  int64_t n = s->n, nrhs = s->nrhs;
  double t0 = ooc_now();
  OOC_TRY(h5m_create(ctx, q->out_file, "/R", n, n, H5M_F64, 0, q->o.compress, q->o.force,
                     &q->out));
  h5mat_t *o = q->out;
  OOC_TRY(h5m_write(o, 0, 0, n, n, s->R, n));
  OOC_TRY(h5m_attr_str(o, "factor", "qr"));
  OOC_TRY(h5m_attr_str(o, "oocsolve_version", OOC_VERSION_STRING));
  OOC_TRY(h5m_attr_str(o, "method", "qr"));
  OOC_TRY(h5m_attr_str(o, "backend", r->backend));
  OOC_TRY(h5m_attr_i64(o, "rows", s->rows));
  OOC_TRY(h5m_attr_i64(o, "rank", rank));
  OOC_TRY(h5m_attr_i64(o, "nrhs", nrhs));
  OOC_TRY(h5m_attr_i64(o, "block_rows", q->p));
  OOC_TRY(h5m_attr_i64(o, "panel_rows", q->P));
  OOC_TRY(h5m_attr_str(o, "check", r->check));
  OOC_TRY(h5m_attr_f64(o, "residual_ratio", r->residual));
  if (in_a) OOC_TRY(h5m_attr_str(o, "input_a", in_a));
  if (in_a) OOC_TRY(h5m_attr_i64(o, "input_a_trans", ta));
  if (in_b) OOC_TRY(h5m_attr_str(o, "input_b", in_b));
  if (in_b) OOC_TRY(h5m_attr_i64(o, "input_b_trans", tb));
  if (update) OOC_TRY(h5m_attr_str(o, "update", update));
  if (q->o.history) OOC_TRY(h5m_attr_str(o, "history", q->o.history));
  OOC_TRY(h5vec_write_f64(ctx, o, "/d", s->D, n, q->b1d ? 0 : nrhs, n));
  OOC_TRY(h5vec_write_f64(ctx, o, "/x", X, n, q->b1d ? 0 : nrhs, n));
  OOC_TRY(h5vec_write_f64(ctx, o, "/residual_norms", s->res, nrhs, 0, nrhs));
  OOC_TRY(h5vec_write_i64(ctx, o, "/colmap", s->colmap, n));
  r->bytes_output += 8 * (n * n + 2 * n * nrhs + nrhs + n);
  r->t_write += ooc_now() - t0;
  return OOC_OK;
}

/* The outputs written (write_state, write_x) are renamed into place only now, together, once
 * every write has succeeded: a failure before leaves neither (finish removes the temporaries). */
static ooc_status_t commit(lq_t *q) {
  double t0 = ooc_now();
  if (q->out) OOC_TRY(h5m_commit(q->out));
  if (q->xout) OOC_TRY(h5m_commit(q->xout));
  q->rep->t_write += ooc_now() - t0;
  return OOC_OK;
}

/* A QR state file back into a state (validated: shapes, the factor attribute, the column map). */
static ooc_status_t read_state(lq_t *q, const char *file, qr_state_t **out) {
  ooc_ctx_t *ctx = q->ctx;
  h5mat_t *R = NULL, *D = NULL, *res = NULL, *cm = NULL;
  qr_state_t *s = NULL;
  double *tmp = NULL;
  ooc_status_t st;
  char f[32] = "";
  double rows = -1;
  OOC_CHECK(st = h5m_open2(ctx, file, "/R", 0, &R));
  if (!h5vec_attr_str(R, "factor", f, sizeof f) || strcmp(f, "qr") ||
      !h5m_attr_get_f64(R, "rows", &rows)) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: not a QR state file (oocsolve lstsq writes one: /R "
                  "with attributes factor = \"qr\" and rows)", h5m_name(R));
    goto done;
  }
  if (!h5vec_attr_str(R, "input_a", q->in_a, sizeof q->in_a)) q->in_a[0] = 0;
  if (!h5vec_attr_str(R, "input_b", q->in_b, sizeof q->in_b)) q->in_b[0] = 0;
  double ta = 0, tb = 0; /* absent (states before the attribute): not transposed */
  q->in_ta = h5m_attr_get_f64(R, "input_a_trans", &ta) && ta != 0;
  q->in_tb = h5m_attr_get_f64(R, "input_b_trans", &tb) && tb != 0;
  int64_t n = h5m_rows(R);
  if (h5m_cols(R) != n) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: R is %lld x %lld, not square", h5m_name(R),
                  (long long)n, (long long)h5m_cols(R));
    goto done;
  }
  OOC_CHECK(st = h5m_open2(ctx, file, "/d", 0, &D));
  OOC_CHECK(st = h5m_open2(ctx, file, "/residual_norms", 0, &res));
  OOC_CHECK(st = h5m_open2(ctx, file, "/colmap", 0, &cm));
  int64_t nrhs = h5m_cols(D);
  q->b1d = h5m_rank(D) == 1;
  if (h5m_rows(D) != n || h5m_rows(res) != nrhs || h5m_cols(res) != 1 || h5m_rows(cm) != n ||
      h5m_cols(cm) != 1 || !(rows >= 0 && rows <= 9e15) || rows != floor(rows)) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: inconsistent QR state: R %lld x %lld, d %lld x %lld, "
                  "residual_norms %lld, colmap %lld, rows %g", file, (long long)n, (long long)n,
                  (long long)h5m_rows(D), (long long)nrhs, (long long)h5m_rows(res),
                  (long long)h5m_rows(cm), rows);
    goto done;
  }
  OOC_CHECK(st = qr_state_new(ctx, n, nrhs, &s));
  s->rows = (int64_t)rows;
  OOC_CHECK(st = h5m_read(R, 0, 0, n, n, s->R, n));
  OOC_CHECK(st = h5m_read(D, 0, 0, n, nrhs, s->D, n));
  OOC_CHECK(st = h5m_read(res, 0, 0, nrhs, 1, s->res, nrhs));
  tmp = ooc_malloc(ctx, (size_t)(n + 1) * sizeof(double));
  if (!tmp) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(cm));
    goto done;
  }
  OOC_CHECK(st = h5m_read(cm, 0, 0, n, 1, tmp, n));
  for (int64_t j = 0; j < n; j++) {
    if (!(tmp[j] >= 0) || tmp[j] != floor(tmp[j]) || (j > 0 && !(tmp[j] > tmp[j - 1])) ||
        tmp[j] > 9e15) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: element [%lld] is %g: the column map holds "
                    "increasing non-negative column numbers", h5m_name(cm), (long long)j, tmp[j]);
      goto done;
    }
    s->colmap[j] = (int64_t)tmp[j];
  }
  for (int64_t j = 0; j < n; j++) /* R's strict lower part is zero by definition */
    for (int64_t i = j + 1; i < n; i++) s->R[i + j * n] = 0.0;
  /* a NaN in R, d or the residual norms would reach x and the new state unchecked (an update
   * reads no A): refused as lstsq refuses one in A or b */
  const struct { h5mat_t *h; const double *v; int64_t rows, count; } parts[] = {
      {R, s->R, n, n * n}, {D, s->D, n, n * nrhs}, {res, s->res, nrhs, nrhs}};
  for (int k = 0; k < 3; k++)
    for (int64_t i = 0; i < parts[k].count; i++)
      if (!isfinite(parts[k].v[i]) || (k == 2 && parts[k].v[i] < 0)) {
        st = OOC_FAIL(ctx, k == 2 && isfinite(parts[k].v[i]) ? OOC_ERR_FORMAT : OOC_ERR_NONFINITE,
                      "%s: element [%lld, %lld] is %g: not a valid QR state", h5m_name(parts[k].h),
                      (long long)(i % parts[k].rows), (long long)(i / parts[k].rows), parts[k].v[i]);
        goto done;
      }
  q->rep->bytes_input += 8 * (n * n + n * nrhs + nrhs + n);
done:
  ooc_free(ctx, tmp);
  h5m_close(R);
  h5m_close(D);
  h5m_close(res);
  h5m_close(cm);
  if (st != OOC_OK) {
    qr_state_free(ctx, s);
    s = NULL;
  }
  *out = s;
  return st;
}

/* x = R^-1 d into *X (allocated here, n x nrhs, ld n; the caller frees it, also on failure):
 * the rank test (qr_solve refuses a deficient R; *rank for the state's attribute), the solve,
 * its flops (the triangular solve's n^2 nrhs) in the report. */
static ooc_status_t solve(lq_t *q, const qr_state_t *s, double **X, int64_t *rank) {
  int64_t n = s->n, nrhs = s->nrhs;
  *X = ooc_malloc(q->ctx, (size_t)(n * nrhs + 1) * sizeof(double));
  if (!*X)
    return OOC_FAIL(q->ctx, OOC_ERR_NOMEM, "out of host memory for x (%lld x %lld)",
                    (long long)n, (long long)nrhs);
  *rank = qr_rank(s, NULL, NULL);
  OOC_TRY(qr_solve(q->ctx, q->ex, q->ops, s, *X, n, &q->rep->info));
  q->rep->flops += (double)n * (double)n * (double)nrhs;
  return OOC_OK;
}

/* ---- the calls ------------------------------------------------------------------------------ */

/* An input: a spec string, or a handle (a file handle is its spec; an array or callback a virtual
 * h5mat, api/matrix.h). */
static ooc_status_t open_input(lq_t *q, const char *spec, const ooc_matrix_t *h, int trans,
                               h5mat_t **out) {
  if (h && !matrix_is_file(h)) {
    OOC_TRY(matrix_open_input(q->ctx, h, trans, out));
    if (q->o.allow_fill) h5m_set_allow_fill(*out, 1);
    return OOC_OK;
  }
  return open_spec(q, h ? matrix_spec(h) : spec, trans, out);
}

/* x alone into an output handle (ooc_lstsq_m): a file's spec, or an array or callback; verified
 * before (the check), committed by commit() with the state file. */
static ooc_status_t write_x(lq_t *q, const ooc_matrix_t *hx, const double *X) {
  ooc_ctx_t *ctx = q->ctx;
  double t0 = ooc_now();
  if (matrix_is_file(hx)) {
    char file[PATH_MAX], dset[512];
    OOC_TRY(h5m_split_spec(ctx, matrix_spec(hx), file, sizeof file, dset, sizeof dset));
    if (!dset[0]) snprintf(dset, sizeof dset, "/x");
    const char *ins[] = {h5m_path(q->A), h5m_data_file(q->A), h5m_path(q->B), h5m_data_file(q->B),
                         q->out_file};
    OOC_TRY(outpath_check(ctx, file, ins, 5));
    OOC_TRY(h5m_create2(ctx, file, dset, q->n, q->nrhs, H5M_F64, 0, q->o.compress, q->o.force,
                        q->b1d ? H5M_OUT_1D : 0u, &q->xout));
  } else {
    OOC_TRY(matrix_open_output(ctx, hx, q->n, q->nrhs, H5M_F64, q->n > 0 ? q->n : 1,
                               q->o.scratch_dir, &q->xout));
  }
  OOC_TRY(h5m_write(q->xout, 0, 0, q->n, q->nrhs, X, q->n));
  OOC_TRY(h5m_attr_str(q->xout, "method", "qr"));
  q->rep->bytes_output += 8 * q->n * q->nrhs;
  q->rep->t_write += ooc_now() - t0;
  return OOC_OK;
}

/* ooc_lstsq and ooc_lstsq_m: A and b by spec (a, b) or handle (ha, hb); x into the handle hx
 * (may be NULL) and the state into the file `output` (NULL: "<A>.qr.h5" when no_state is 0; no
 * state file when no_state is 1). */
static ooc_status_t lstsq_run(ooc_ctx_t *ctx, const char *a, const ooc_matrix_t *ha, const char *b,
                              const ooc_matrix_t *hb, const ooc_matrix_t *hx, const char *output,
                              int no_state, const ooc_opts_t *opts, ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  double t0 = ooc_now();
  lq_t q;
  ooc_report_t local;
  qr_state_t *s = NULL;
  double *X = NULL;
  ooc_status_t st = start(&q, ctx, opts, report, &local);
  ooc_report_t *r = q.rep;
  snprintf(r->kind, sizeof r->kind, "lstsq");
  if (st != OOC_OK) goto done;
  if (((!a || !*a) && !ha) || ((!b || !*b) && !hb)) {
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq needs A and b");
    goto done;
  }
  if (no_state && !hx) {
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq: neither an output for x nor a state file given");
    goto done;
  }
  OOC_CHECK(st = open_input(&q, a, ha, q.o.trans_a, &q.A));
  OOC_CHECK(st = open_input(&q, b, hb, q.o.trans_b, &q.B));
  q.m = h5m_rows(q.A);
  q.n = h5m_cols(q.A);
  q.nrhs = h5m_cols(q.B);
  q.b1d = h5m_rank(q.B) == 1;
  if (q.m < q.n) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: A is %lld x %lld: least squares needs m >= n "
                  "(underdetermined problems, the minimum-norm solution, are not supported)",
                  h5m_name(q.A), (long long)q.m, (long long)q.n);
    goto done;
  }
  if (h5m_rows(q.B) != q.m) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: b has %lld rows; A (%s) has %lld", h5m_name(q.B),
                  (long long)h5m_rows(q.B), h5m_name(q.A), (long long)q.m);
    goto done;
  }
  r->n = q.n;
  r->nrhs = q.nrhs;
  r->gemm_k = q.m;
  if (!no_state) {
    const char *ins[] = {h5m_path(q.A), h5m_data_file(q.A), h5m_path(q.B), h5m_data_file(q.B)};
    if ((!output || !*output) && !h5m_path(q.A)[0]) {
      st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq: A (%s) is no file: name the state file",
                    h5m_name(q.A));
      goto done;
    }
    OOC_CHECK(st = resolve_output(&q, output, h5m_path(q.A), ".qr", ins, 4));
  } else {
    ooc_fmt(r->output, sizeof r->output, "%s", matrix_name(hx));
  }
  OOC_CHECK(st = pick_backend(&q));
  OOC_CHECK(st = plan(&q, q.m));
  OOC_CHECK(st = qr_state_new(ctx, q.n, q.nrhs, &s));
  rsrc_t src = {&q, q.A, q.B, NULL, NULL, 0};
  qr_args_t qa = {.ctx = ctx, .exec = q.ex, .ops = q.ops, .m = q.m, .block = q.p,
                  .panel = q.P, .read = read_rows, .user = &src, .phase = "lstsq"};
  qr_stats_t qs;
  double tc = ooc_now();
  st = qr_fold(&qa, s, &qs);
  r->steps = qs.blocks;
  r->flops = qr_fold_flops(0, q.m, q.n, q.nrhs); /* LAPACK's, not the fold's (qs.flops) */
  r->t_read = q.t_read;
  r->bytes_input = 8 * q.m * (q.n + q.nrhs);
  if (st != OOC_OK) goto done;
  int64_t rank;
  OOC_CHECK(st = solve(&q, s, &X, &rank));
  r->t_compute = ooc_now() - tc - q.t_read;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0.0;
  /* the check: auto = full up to QR_CHECK_AUTO_ELEMS elements of A (it reads A again) */
  OOC_CHECK(st = check_x(&q, &src, X, "A"));
  /* the inputs as --add-cols reopens them: files only (an array or callback is in no file) */
  if (!no_state)
    OOC_CHECK(st = write_state(&q, s, X, rank, h5m_path(q.A)[0] ? h5m_name(q.A) : NULL,
                               q.o.trans_a, h5m_path(q.B)[0] ? h5m_name(q.B) : NULL, q.o.trans_b,
                               NULL));
  if (hx) OOC_CHECK(st = write_x(&q, hx, X));
  OOC_CHECK(st = commit(&q));
done:
  if (st == OOC_ERR_SINGULAR && r->info == 0) r->info = 1;
  ooc_free(ctx, X);
  qr_state_free(ctx, s);
  finish(&q, t0);
  return st;
}

ooc_status_t ooc_lstsq(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report) {
  return lstsq_run(ctx, a, NULL, b, NULL, NULL, output, 0, opts, report);
}

ooc_status_t job_lstsq_m(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                         const ooc_matrix_t *a, const ooc_matrix_t *b, const ooc_matrix_t *x,
                         const char *state) {
  return lstsq_run(ctx, NULL, a, NULL, b, x, state, !state || !*state, opts, report);
}

ooc_status_t ooc_lstsq_update(ooc_ctx_t *ctx, const char *state, const char *add_a,
                              const char *add_b, int64_t c0, int64_t c1, const char *output,
                              const ooc_opts_t *opts, ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  double t0 = ooc_now();
  lq_t q;
  ooc_report_t local;
  qr_state_t *s = NULL;
  double *X = NULL;
  char what[1200] = "";
  ooc_status_t st = start(&q, ctx, opts, report, &local);
  ooc_report_t *r = q.rep;
  snprintf(r->kind, sizeof r->kind, "lstsq-update");
  if (st != OOC_OK) goto done;
  int adding = add_a && *add_a, removing = c1 > c0;
  if (!state || !*state || adding == removing || (adding && (!add_b || !*add_b))) {
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq update: give a state file and one update: rows to add "
                  "(U and c) or a column range to remove");
    goto done;
  }
  OOC_CHECK(st = read_state(&q, state, &s));
  q.n = s->n;
  q.nrhs = s->nrhs;
  r->n = q.n;
  r->nrhs = q.nrhs;
  if (adding) {
    OOC_CHECK(st = open_spec(&q, add_a, q.o.trans_a, &q.A));
    OOC_CHECK(st = open_spec(&q, add_b, q.o.trans_b, &q.B));
    q.m = h5m_rows(q.A);
    if (h5m_cols(q.A) != q.n || h5m_cols(q.B) != q.nrhs || h5m_rows(q.B) != q.m) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-rows: U (%s) is %lld x %lld and c (%s) "
                    "%lld x %lld; the state %s has %lld columns and %lld right-hand sides",
                    h5m_name(q.A), (long long)q.m, (long long)h5m_cols(q.A), h5m_name(q.B),
                    (long long)h5m_rows(q.B), (long long)h5m_cols(q.B), state, (long long)q.n,
                    (long long)q.nrhs);
      goto done;
    }
    snprintf(what, sizeof what, "add rows %s %s to %s", h5m_name(q.A), h5m_name(q.B), state);
  } else {
    snprintf(what, sizeof what, "remove columns %lld:%lld from %s", (long long)c0, (long long)c1,
             state);
  }
  r->gemm_k = s->rows + q.m;
  {
    const char *ins[] = {state, q.A ? h5m_path(q.A) : NULL, q.A ? h5m_data_file(q.A) : NULL,
                         q.B ? h5m_path(q.B) : NULL, q.B ? h5m_data_file(q.B) : NULL};
    OOC_CHECK(st = resolve_output(&q, output, state, ".u", ins, 5));
  }
  OOC_CHECK(st = pick_backend(&q));
  OOC_CHECK(st = plan(&q, q.m));
  double tc = ooc_now();
  if (adding) {
    rsrc_t src = {&q, q.A, q.B, NULL, NULL, 0};
    qr_args_t qa = {.ctx = ctx, .exec = q.ex, .ops = q.ops, .m = q.m, .block = q.p,
                    .panel = q.P, .read = read_rows, .user = &src, .phase = "add rows"};
    qr_stats_t qs;
    int64_t before = s->rows;
    OOC_CHECK(st = qr_fold(&qa, s, &qs));
    r->steps = qs.blocks;
    r->flops = qr_fold_flops(before, q.m, q.n, q.nrhs);
    r->bytes_input += 8 * q.m * (q.n + q.nrhs);
  } else {
    /* [c0, c1) are original column numbers: all must still be in the state, where they are
     * consecutive (removals keep the order of the rest) */
    int64_t j0 = 0;
    while (j0 < s->n && s->colmap[j0] < c0) j0++;
    int64_t k = c1 - c0;
    if (c0 < 0 || j0 + k > s->n || s->colmap[j0] != c0 || s->colmap[j0 + k - 1] != c1 - 1) {
      st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --remove-cols %lld:%lld: the state %s does not hold "
                    "all of these original columns (it holds %lld columns, the first %lld, the "
                    "last %lld; /colmap lists them)", (long long)c0, (long long)c1, state,
                    (long long)s->n, (long long)s->colmap[0], (long long)s->colmap[s->n - 1]);
      goto done;
    }
    if (k >= s->n) {
      st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --remove-cols %lld:%lld: removes every column of "
                    "the state %s", (long long)c0, (long long)c1, state);
      goto done;
    }
    OOC_CHECK(st = qr_remove_cols(ctx, q.ex, q.ops, s, j0, j0 + k));
    r->steps = 1;
    double h = (double)(s->n + k - j0), wc = (double)(s->n - j0); /* geqrf of [R' d] */
    r->flops = 2.0 * h * wc * wc - 2.0 * wc * wc * wc / 3.0 + 4.0 * h * wc * (double)q.nrhs;
    q.n = s->n;
    r->n = q.n;
  }
  int64_t rank;
  OOC_CHECK(st = solve(&q, s, &X, &rank));
  r->t_read = q.t_read;
  r->t_compute = ooc_now() - tc - q.t_read;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0.0;
  ooc_warn(r->warnings, sizeof r->warnings, "an update reads no A: no residual check (the state's "
           "residual norms are carried; docs/NUMERICS.md)");
  /* removing columns keeps the rows: the state's A and b (its colmap numbers A's columns) are
   * still its inputs, which a later --add-cols reads; added rows are in no file */
  OOC_CHECK(st = write_state(&q, s, X, rank, !adding && q.in_a[0] ? q.in_a : NULL, q.in_ta,
                             !adding && q.in_b[0] ? q.in_b : NULL, q.in_tb, what));
  OOC_CHECK(st = commit(&q));
done:
  ooc_free(ctx, X);
  qr_state_free(ctx, s);
  finish(&q, t0);
  return st;
}

/* Add columns at the end (docs/NUMERICS.md "Adding columns"): Q is not stored, and forming
 * Q^T V = R^-T (A^T V) from R alone squares A's condition number (the normal equations), so the
 * state is rebuilt by re-reducing [A[:, colmap] V] and b, streamed as lstsq streams A: the same
 * fold, the same accuracy as a from-scratch lstsq of [A V] (which it is, bar the column map).
 * A and b are the state's record of its inputs (input_a, input_b: lstsq's and remove-cols'
 * states) unless given; a state whose rows are not A's (after add-rows: rows in no file) or
 * whose columns are not all A's (after an add-cols) cannot be re-reduced and is refused. That
 * A is the state's A is checked after the fold: the column norms ||R[:, j]|| = ||A[:, j]|| of
 * the new R's first n columns against the old R's (well conditioned: relative error ~ m eps). */
#define QR_ADDCOLS_NORM_TOL 1e-8

ooc_status_t ooc_lstsq_add_cols(ooc_ctx_t *ctx, const char *state, const char *v, const char *a,
                                const char *b, const char *output, const ooc_opts_t *opts,
                                ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  double t0 = ooc_now();
  lq_t q;
  ooc_report_t local;
  qr_state_t *s0 = NULL, *s = NULL;
  double *X = NULL, *cn0 = NULL;
  char what[1200] = "";
  ooc_status_t st = start(&q, ctx, opts, report, &local);
  ooc_report_t *r = q.rep;
  snprintf(r->kind, sizeof r->kind, "lstsq-update");
  if (st != OOC_OK) goto done;
  if (!state || !*state || !v || !*v) {
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --add-cols: give a state file and V (the new "
                  "columns, m x k)");
    goto done;
  }
  OOC_CHECK(st = read_state(&q, state, &s0));
  const char *sa = a && *a ? a : q.in_a, *sb = b && *b ? b : q.in_b;
  if (!*sa || !*sb) {
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --add-cols: the state %s records no input %s (/R's "
                  "attribute input_%s: an add-rows or add-cols update's state has rows or "
                  "columns in no single file): adding columns re-reads A and b, give them with "
                  "--a A.h5 and --b b.h5 (lstsq of [A V] from scratch otherwise)", state,
                  !*sa ? "A" : "b", !*sa ? "a" : "b");
    goto done;
  }
  /* a recorded input is read as lstsq read it; one given here as --trans-a/--trans-b say */
  OOC_CHECK(st = open_spec(&q, sa, a && *a ? q.o.trans_a : q.in_ta, &q.A));
  OOC_CHECK(st = open_spec(&q, sb, b && *b ? q.o.trans_b : q.in_tb, &q.B));
  OOC_CHECK(st = open_spec(&q, v, 0, &q.V));
  h5mat_t *V = q.V;
  int64_t n0 = s0->n, k = h5m_cols(V), m = s0->rows, ncA = h5m_cols(q.A);
  q.m = m;
  q.n = n0 + k;
  q.nrhs = s0->nrhs;
  r->n = q.n;
  r->nrhs = q.nrhs;
  r->gemm_k = m;
  if (h5m_rows(q.A) != m || h5m_rows(q.B) != m || h5m_cols(q.B) != q.nrhs || h5m_rows(V) != m) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: the state %s folded %lld rows and "
                  "%lld right-hand sides, but A (%s) has %lld rows, b (%s) is %lld x %lld and V "
                  "(%s) has %lld rows: all must be the state's rows (a state with added rows "
                  "cannot be re-reduced: lstsq [A; U] from scratch)", state, (long long)m,
                  (long long)q.nrhs, h5m_name(q.A), (long long)h5m_rows(q.A), h5m_name(q.B),
                  (long long)h5m_rows(q.B), (long long)h5m_cols(q.B), h5m_name(V),
                  (long long)h5m_rows(V));
    goto done;
  }
  if (s0->colmap[n0 - 1] >= ncA) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: the state %s holds original column "
                  "%lld (/colmap) but A (%s) has %lld columns: not this state's A", state,
                  (long long)s0->colmap[n0 - 1], h5m_name(q.A), (long long)ncA);
    goto done;
  }
  if (k < 1 || m < q.n) {
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: V (%s) has "
                  "%lld columns; with the state's %lld that is %lld unknowns for %lld rows (least "
                  "squares needs at least one new column and m >= n)", h5m_name(V), (long long)k,
                  (long long)n0, (long long)q.n, (long long)m);
    goto done;
  }
  snprintf(what, sizeof what, "add columns %s to %s (A %s, b %s re-reduced)", h5m_name(V), state,
           h5m_name(q.A), h5m_name(q.B));
  {
    const char *ins[] = {state, h5m_path(q.A), h5m_data_file(q.A), h5m_path(q.B),
                         h5m_data_file(q.B), h5m_path(V), h5m_data_file(V)};
    OOC_CHECK(st = resolve_output(&q, output, state, ".u", ins, 7));
  }
  OOC_CHECK(st = qr_state_new(ctx, q.n, q.nrhs, &s));
  /* the new columns are numbered after A's: column ncA + i of [A V] */
  for (int64_t j = 0; j < q.n; j++) s->colmap[j] = j < n0 ? s0->colmap[j] : ncA + (j - n0);
  /* of the old state only its column norms are kept: the plan's budget has room for one state */
  cn0 = ooc_malloc(ctx, (size_t)(n0 + 1) * sizeof(double));
  if (!cn0) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (%lld column norms)", (long long)n0);
    goto done;
  }
  for (int64_t j = 0; j < n0; j++) cn0[j] = ooc_nrm2(j + 1, s0->R + j * n0);
  qr_state_free(ctx, s0);
  s0 = NULL;
  OOC_CHECK(st = pick_backend(&q));
  OOC_CHECK(st = plan(&q, m));
  rsrc_t src = {&q, q.A, q.B, V, s->colmap, n0};
  qr_args_t qa = {.ctx = ctx, .exec = q.ex, .ops = q.ops, .m = m, .block = q.p, .panel = q.P,
                  .read = read_rows, .user = &src, .phase = "add columns"};
  qr_stats_t qs;
  double tc = ooc_now();
  OOC_CHECK(st = qr_fold(&qa, s, &qs));
  r->steps = qs.blocks;
  r->flops = qr_fold_flops(0, m, q.n, q.nrhs); /* lstsq of [A V] from scratch */
  r->bytes_input += 8 * m * (q.n + q.nrhs);
  /* the A read is the state's A: its columns' norms are the old R's */
  for (int64_t j = 0; j < n0; j++) {
    double c0 = cn0[j], c1 = ooc_nrm2(j + 1, s->R + j * q.n);
    if (!(fabs(c1 - c0) <= QR_ADDCOLS_NORM_TOL * (c0 > c1 ? c0 : c1))) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: A (%s) is not the matrix of the "
                    "state %s: its column %lld has norm %.17g, the state's R says %.17g (relative "
                    "difference above %g); nothing was written", h5m_name(q.A), state,
                    (long long)s->colmap[j], c1, c0, QR_ADDCOLS_NORM_TOL);
      goto done;
    }
  }
  int64_t rank;
  OOC_CHECK(st = solve(&q, s, &X, &rank)); /* a dependent new column is refused here */
  r->t_compute = ooc_now() - tc - q.t_read;
  OOC_CHECK(st = check_x(&q, &src, X, "[A V]"));
  r->t_read = q.t_read;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0.0;
  OOC_CHECK(st = write_state(&q, s, X, rank, NULL, 0, NULL, 0, what));
  OOC_CHECK(st = commit(&q));
done:
  if (st == OOC_ERR_SINGULAR && r->info == 0) r->info = 1;
  ooc_free(ctx, X);
  ooc_free(ctx, cn0);
  qr_state_free(ctx, s0);
  qr_state_free(ctx, s);
  finish(&q, t0);
  return st;
}
