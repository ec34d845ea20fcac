/*
 * job_qr.c: least squares as a job of job.c's pipeline (issue 24; issue 18): ooc_lstsq (fold A's
 * rows into R and d = Q^T b, solve, check, write the QR state file), ooc_lstsq_update (add rows,
 * remove columns: from a state file to a new one), ooc_lstsq_add_cols (add columns: [A V]
 * re-reduced, streamed) and ooc_lstsq_m. The method is solvers/qr.c on the executor; this file is
 * its entry of the method table (methods.h: open, plan, run): it opens the inputs (or reads the
 * state), asks the planner for the row block (plan.c's plan_qr) and applies it, folds, solves,
 * checks and writes the state's datasets, and what it refuses. The pipeline does the rest: backend, output name, lock, the outputs created and
 * committed together, the report.
 *
 * The QR state file (docs/CLI.md "lstsq"), every dataset float64 unless said:
 *   /R              n x n upper triangular (attributes: factor = "qr", rows = m folded, rank,
 *                   nrhs, method, backend, input_a/_b and input_a/_b_trans (files only), check,
 *                   residual_ratio, block_rows, panel_rows, update)
 *   /d              n x nrhs (1-D when b was 1-D): the first n rows of Q^T b
 *   /x              n x nrhs (1-D likewise): the least-squares solution R^-1 d
 *   /residual_norms nrhs: ||b_k - A x_k||_2, from the residual rows of the reduction
 *   /colmap         n int64: the original column of A that each row of x / column of R is
 *
 * Not here (yet): a journal (a run is one pass over A: nothing to resume), the update on matrix
 * handles (ooc_lstsq_m covers the factorization), the Fortran binding.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/job_int.h"
#include "api/matrix.h"
#include "exec/plugin.h"
#include "io/h5mat.h"
#include "io/h5vec.h"
#include "solvers/check.h"
#include "solvers/qr.h"

/* --check auto: the full check (one more pass over A and b) up to this many elements of A */
#define QR_CHECK_AUTO_ELEMS ((int64_t)1 << 28)
#define QR_CHECK_THRESHOLD 30.0
/* add columns: the relative difference of A's column norms from the old R's that is refused */
#define QR_ADDCOLS_NORM_TOL 1e-8

typedef enum { QR_FACTOR, QR_ADD_ROWS, QR_REMOVE_COLS, QR_ADD_COLS } qr_mode_t;

/* A call's arguments (set by the call) and its state (open, plan, run; freed by
 * job_qr_cleanup). The job's inputs: in_a A (or the added rows U), in_b b (or c), in_c V. */
struct qr_job {
  qr_mode_t mode;
  const char *state;        /* an update's state file */
  int64_t c0, c1;           /* remove columns: original columns [c0, c1) */
  const ooc_matrix_t *hx;   /* ooc_lstsq_m: x's handle (NULL: none) */
  int no_state;             /* ooc_lstsq_m without a state file: x is the output */
  qr_state_t *s;            /* the state folded into, updated or rebuilt */
  int64_t sn, snrhs, srows; /* an update's stored state: its shape and rows (open_state) */
  int64_t *cmap;            /* ... and its column map, until load_state puts it into q->s */
  double *X, *cn0;          /* x; add columns: the old R's column norms */
  int64_t m, p, P;          /* rows read; the row block and panel (qr.h), p <= P */
  int64_t n0, j0;           /* add columns: the old state's columns; remove: the first's index */
  int b1d;                  /* b (or the state's d) is 1-D */
  double t_read;
  char in_a[PATH_MAX + 512], in_b[PATH_MAX + 512]; /* a state's input_a/input_b ("" if none) */
  int in_ta, in_tb; /* ... and whether they were read transposed (input_a_trans, input_b_trans) */
  char what[1200];  /* an update's description (the state's attribute) */
};

/* ---- inputs ------------------------------------------------------------------------------ */

/* A's and b's rows [r0, r0 + nr): read, and refused if not finite (the reduction would spread a
 * NaN over R and every solution). For --add-cols the rows are of [A[:, colmap] V]: A's columns
 * that the state still holds (colmap, nmap of them, read in runs of consecutive columns), then
 * V's (V NULL: A's columns 0 .. n-1 as they are). */
typedef struct rsrc {
  job_t *j;
  const int64_t *colmap;
  int64_t nmap;
} rsrc_t;

static ooc_status_t finite_or_fail(job_t *j, h5mat_t *h, int64_t r0, int64_t nr, int64_t nc,
                                   const double *v, int64_t ld, int64_t c0) {
  for (int64_t c = 0; c < nc; c++)
    for (int64_t i = 0; i < nr; i++)
      if (!isfinite(v[i + c * ld]))
        return OOC_FAIL(j->ctx, OOC_ERR_NONFINITE, "%s: element [%lld, %lld] (row, column of the "
                        "matrix as read) is %g: least squares needs finite values",
                        h5m_name(h), (long long)(r0 + i), (long long)(c0 + c), v[i + c * ld]);
  return OOC_OK;
}

static ooc_status_t read_rows(void *user, int64_t r0, int64_t nr, double *A, int64_t lda,
                              double *B, int64_t ldb) {
  rsrc_t *s = user;
  job_t *j = s->j;
  h5mat_t *a = j->in_a, *b = j->in_b, *V = j->in_c;
  double t0 = ooc_now();
  int64_t n = h5m_cols(a), nrhs = h5m_cols(b);
  if (!s->colmap) {
    OOC_TRY(h5m_read(a, r0, 0, nr, n, A, lda));
    OOC_TRY(finite_or_fail(j, a, r0, nr, n, A, lda, 0));
  } else {
    for (int64_t c = 0, t; c < s->nmap; c += t) {
      for (t = 1; c + t < s->nmap && s->colmap[c + t] == s->colmap[c] + t; t++) {}
      OOC_TRY(h5m_read(a, r0, s->colmap[c], nr, t, A + c * lda, lda));
      OOC_TRY(finite_or_fail(j, a, r0, nr, t, A + c * lda, lda, s->colmap[c]));
    }
    double *Vb = A + s->nmap * lda;
    OOC_TRY(h5m_read(V, r0, 0, nr, h5m_cols(V), Vb, lda));
    OOC_TRY(finite_or_fail(j, V, r0, nr, h5m_cols(V), Vb, lda, 0));
  }
  OOC_TRY(h5m_read(b, r0, 0, nr, nrhs, B, ldb));
  OOC_TRY(finite_or_fail(j, b, r0, nr, nrhs, B, ldb, 0));
  j->qr->t_read += ooc_now() - t0;
  return OOC_OK;
}

/* A QR state file's shape, attributes and column map (open: O(n) memory, validated: the factor
 * attribute, the shapes, the column map) into q->sn, snrhs, srows, cmap; its values (R, d, the
 * residual norms: O(n^2)) are read by load_state once the planner has admitted them, so a budget
 * that cannot hold R is refused before R is allocated. */
static ooc_status_t open_state(job_t *j, const char *file) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  h5mat_t *R = NULL, *D = NULL, *res = NULL, *cm = NULL;
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
  q->sn = n;
  q->snrhs = nrhs;
  q->srows = (int64_t)rows;
  tmp = ooc_malloc(ctx, (size_t)(n + 1) * sizeof(double));
  q->cmap = ooc_malloc(ctx, (size_t)(n + 1) * sizeof(int64_t));
  if (!tmp || !q->cmap) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(cm));
    goto done;
  }
  OOC_CHECK(st = h5m_read(cm, 0, 0, n, 1, tmp, n));
  for (int64_t c = 0; c < n; c++) {
    if (!(tmp[c] >= 0) || tmp[c] != floor(tmp[c]) || (c > 0 && !(tmp[c] > tmp[c - 1])) ||
        tmp[c] > 9e15) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: element [%lld] is %g: the column map holds "
                    "increasing non-negative column numbers", h5m_name(cm), (long long)c, tmp[c]);
      goto done;
    }
    q->cmap[c] = (int64_t)tmp[c];
  }
done:
  ooc_free(ctx, tmp);
  h5m_close(R);
  h5m_close(D);
  h5m_close(res);
  h5m_close(cm);
  return st;
}

/* The state open_state found, read back into a state (R's strict lower part zeroed, refused if
 * not finite); q->cmap goes into it. */
static ooc_status_t load_state(job_t *j, const char *file, qr_state_t **out) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  h5mat_t *R = NULL, *D = NULL, *res = NULL;
  qr_state_t *s = NULL;
  ooc_status_t st;
  int64_t n = q->sn, nrhs = q->snrhs;
  OOC_CHECK(st = h5m_open2(ctx, file, "/R", 0, &R));
  OOC_CHECK(st = h5m_open2(ctx, file, "/d", 0, &D));
  OOC_CHECK(st = h5m_open2(ctx, file, "/residual_norms", 0, &res));
  OOC_CHECK(st = qr_state_new(ctx, n, nrhs, &s));
  s->rows = q->srows;
  OOC_CHECK(st = h5m_read(R, 0, 0, n, n, s->R, n));
  OOC_CHECK(st = h5m_read(D, 0, 0, n, nrhs, s->D, n));
  OOC_CHECK(st = h5m_read(res, 0, 0, nrhs, 1, s->res, nrhs));
  for (int64_t c = 0; c < n; c++) s->colmap[c] = q->cmap[c];
  ooc_free(ctx, q->cmap); /* the state holds it now */
  q->cmap = NULL;
  for (int64_t c = 0; c < n; c++) /* R's strict lower part is zero by definition */
    for (int64_t i = c + 1; i < n; i++) s->R[i + c * n] = 0.0;
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
  j->rep->bytes_input += 8 * (n * n + n * nrhs + nrhs + n);
done:
  h5m_close(R);
  h5m_close(D);
  h5m_close(res);
  if (st != OOC_OK) {
    qr_state_free(ctx, s);
    s = NULL;
  }
  *out = s;
  return st;
}

/* ---- open: each call's inputs and refusals ------------------------------------------------ */

/* ooc_lstsq, ooc_lstsq_m: A and b (spec or the call's handles), m >= n. */
static ooc_status_t open_factor(job_t *j, const char *const spec[4]) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  if ((!spec[0] || !*spec[0]) || (!spec[1] || !*spec[1]))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq needs A and b");
  if (q->no_state && !q->hx)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq: neither an output for x nor a state file given");
  OOC_TRY(job_open_input(j, spec[0], &j->in_a));
  OOC_TRY(job_open_input(j, spec[1], &j->in_b));
  q->m = h5m_rows(j->in_a);
  j->n = h5m_cols(j->in_a);
  j->m = h5m_cols(j->in_b);
  q->b1d = h5m_rank(j->in_b) == 1;
  if (q->m < j->n)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: A is %lld x %lld: least squares needs m >= n "
                    "(underdetermined problems, the minimum-norm solution, are not supported)",
                    h5m_name(j->in_a), (long long)q->m, (long long)j->n);
  if (h5m_rows(j->in_b) != q->m)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: b has %lld rows; A (%s) has %lld",
                    h5m_name(j->in_b), (long long)h5m_rows(j->in_b), h5m_name(j->in_a),
                    (long long)q->m);
  j->k = q->m;
  if (q->no_state) { /* x is the output */
    j->out_dset0 = "/x";
    return OOC_OK;
  }
  if ((!spec[3] || !*spec[3]) && !h5m_path(j->in_a)[0])
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq: A (%s) is no file: name the state file",
                    h5m_name(j->in_a));
  j->hm_out2 = q->hx; /* x beside the state, if asked */
  return OOC_OK;
}

/* ooc_lstsq_update: the state, and the rows U, c to add (spec[0], spec[1]) or the original
 * columns [c0, c1) to remove (all still in the state, where they are consecutive: removals keep
 * the order of the rest). */
static ooc_status_t open_update(job_t *j, const char *const spec[4]) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  int adding = q->mode == QR_ADD_ROWS;
  if (!q->state || !*q->state || adding == (q->c1 > q->c0) ||
      (adding && (!spec[1] || !*spec[1])))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq update: give a state file and one update: rows to "
                    "add (U and c) or a column range to remove");
  OOC_TRY(open_state(j, q->state)); /* R itself is read once the plan admits it (load) */
  j->n = q->sn;
  j->m = q->snrhs;
  if (adding) {
    OOC_TRY(job_open_input(j, spec[0], &j->in_a));
    OOC_TRY(job_open_input(j, spec[1], &j->in_b));
    q->m = h5m_rows(j->in_a);
    if (h5m_cols(j->in_a) != q->sn || h5m_cols(j->in_b) != q->snrhs || h5m_rows(j->in_b) != q->m)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-rows: U (%s) is %lld x %lld and c (%s) "
                      "%lld x %lld; the state %s has %lld columns and %lld right-hand sides",
                      h5m_name(j->in_a), (long long)q->m, (long long)h5m_cols(j->in_a),
                      h5m_name(j->in_b), (long long)h5m_rows(j->in_b),
                      (long long)h5m_cols(j->in_b), q->state, (long long)q->sn,
                      (long long)q->snrhs);
    snprintf(q->what, sizeof q->what, "add rows %s %s to %s", h5m_name(j->in_a),
             h5m_name(j->in_b), q->state);
  } else {
    int64_t c0 = q->c0, c1 = q->c1, j0 = 0, k = c1 - c0;
    while (j0 < q->sn && q->cmap[j0] < c0) j0++;
    if (c0 < 0 || j0 + k > q->sn || q->cmap[j0] != c0 || q->cmap[j0 + k - 1] != c1 - 1)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --remove-cols %lld:%lld: the state %s does not "
                      "hold all of these original columns (it holds %lld columns, the first "
                      "%lld, the last %lld; /colmap lists them)", (long long)c0, (long long)c1,
                      q->state, (long long)q->sn, (long long)q->cmap[0],
                      (long long)q->cmap[q->sn - 1]);
    if (k >= q->sn)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --remove-cols %lld:%lld: removes every column of "
                      "the state %s", (long long)c0, (long long)c1, q->state);
    q->j0 = j0;
    j->n = q->sn - k; /* the new state's */
    snprintf(q->what, sizeof q->what, "remove columns %lld:%lld from %s", (long long)c0,
             (long long)c1, q->state);
  }
  j->k = q->srows + q->m;
  return OOC_OK;
}

/* ooc_lstsq_add_cols (docs/NUMERICS.md "Adding columns"): Q is not stored, and forming
 * Q^T V = R^-T (A^T V) from R alone squares A's condition number (the normal equations), so the
 * state is rebuilt by re-reducing [A[:, colmap] V] and b, streamed as lstsq streams A: the same
 * fold, the same accuracy as a from-scratch lstsq of [A V] (which it is, bar the column map).
 * A and b (spec[0], spec[1]) are the state's record of its inputs (input_a, input_b: lstsq's and
 * remove-cols' states) unless given; a state whose rows are not A's (after add-rows: rows in no
 * file) or whose columns are not all A's (after an add-cols) cannot be re-reduced and is
 * refused. V is spec[2]. Of the old state only its column norms are kept (cn0: run checks that
 * A is the state's A by them): the plan's budget has room for one state. */
static ooc_status_t open_add_cols(job_t *j, const char *const spec[4]) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  const char *state = q->state, *a = spec[0], *b = spec[1];
  if (!state || !*state || !spec[2] || !*spec[2])
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --add-cols: give a state file and V (the new "
                    "columns, m x k)");
  OOC_TRY(open_state(j, state)); /* R itself is read once the plan admits it (load_add_cols) */
  const char *sa = a && *a ? a : q->in_a, *sb = b && *b ? b : q->in_b;
  if (!*sa || !*sb)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "lstsq --add-cols: the state %s records no input %s (/R's "
                    "attribute input_%s: an add-rows or add-cols update's state has rows or "
                    "columns in no single file): adding columns re-reads A and b, give them with "
                    "--a A.h5 and --b b.h5 (lstsq of [A V] from scratch otherwise)", state,
                    !*sa ? "A" : "b", !*sa ? "a" : "b");
  /* a recorded input is read as lstsq read it; one given here as --trans-a/--trans-b say */
  if (!(a && *a)) j->o.trans_a = q->in_ta;
  if (!(b && *b)) j->o.trans_b = q->in_tb;
  OOC_TRY(job_open_input(j, sa, &j->in_a));
  OOC_TRY(job_open_input(j, sb, &j->in_b));
  OOC_TRY(job_open_input(j, spec[2], &j->in_c));
  h5mat_t *A = j->in_a, *B = j->in_b, *V = j->in_c;
  int64_t n0 = q->sn, k = h5m_cols(V), m = q->srows, ncA = h5m_cols(A);
  q->m = j->k = m;
  q->n0 = n0;
  j->n = n0 + k;
  j->m = q->snrhs;
  if (h5m_rows(A) != m || h5m_rows(B) != m || h5m_cols(B) != j->m || h5m_rows(V) != m)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: the state %s folded %lld rows and "
                    "%lld right-hand sides, but A (%s) has %lld rows, b (%s) is %lld x %lld and V "
                    "(%s) has %lld rows: all must be the state's rows (a state with added rows "
                    "cannot be re-reduced: lstsq [A; U] from scratch)", state, (long long)m,
                    (long long)j->m, h5m_name(A), (long long)h5m_rows(A), h5m_name(B),
                    (long long)h5m_rows(B), (long long)h5m_cols(B), h5m_name(V),
                    (long long)h5m_rows(V));
  if (q->cmap[n0 - 1] >= ncA)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: the state %s holds original column "
                    "%lld (/colmap) but A (%s) has %lld columns: not this state's A", state,
                    (long long)q->cmap[n0 - 1], h5m_name(A), (long long)ncA);
  if (k < 1 || m < j->n)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: V (%s) has %lld columns; with the "
                    "state's %lld that is %lld unknowns for %lld rows (least squares needs at "
                    "least one new column and m >= n)", h5m_name(V), (long long)k, (long long)n0,
                    (long long)j->n, (long long)m);
  snprintf(q->what, sizeof q->what, "add columns %s to %s (A %s, b %s re-reduced)", h5m_name(V),
           state, h5m_name(A), h5m_name(B));
  return OOC_OK;
}

/* Add columns, once the plan admitted it: the old state (the column norms of its R, by which run
 * checks that A is the state's A) and the new one it is rebuilt into. */
static ooc_status_t load_add_cols(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  struct qr_job *q = j->qr;
  int64_t n0 = q->n0, ncA = h5m_cols(j->in_a);
  OOC_TRY(load_state(j, q->state, &q->s)); /* the old state, until the new one replaces it */
  qr_state_t *s0 = q->s, *s;
  OOC_TRY(qr_state_new(ctx, j->n, j->m, &s));
  /* the new columns are numbered after A's: column ncA + i of [A V] */
  for (int64_t c = 0; c < j->n; c++) s->colmap[c] = c < n0 ? s0->colmap[c] : ncA + (c - n0);
  q->s = s;
  q->cn0 = ooc_malloc(ctx, (size_t)(n0 + 1) * sizeof(double));
  if (q->cn0)
    for (int64_t c = 0; c < n0; c++) q->cn0[c] = ooc_nrm2(c + 1, s0->R + c * n0);
  qr_state_free(ctx, s0);
  if (!q->cn0)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (%lld column norms)", (long long)n0);
  return OOC_OK;
}

ooc_status_t job_qr_open(job_t *j, const char *const spec[4]) {
  ooc_report_t *r = j->rep;
  struct qr_job *q = j->qr;
  snprintf(r->precision, sizeof r->precision, "f64");
  snprintf(r->out_dtype, sizeof r->out_dtype, "f64");
  snprintf(r->check, sizeof r->check, "none");
  r->host_budget = j->o.host_mem;
  if (j->method_asked != OOC_METHOD_AUTO)
    return OOC_FAIL(j->ctx, OOC_ERR_ARG, "lstsq: --method does not apply (least squares is by "
                    "Householder QR)");
  OOC_TRY(q->mode == QR_FACTOR      ? open_factor(j, spec)
          : q->mode == QR_ADD_COLS ? open_add_cols(j, spec)
                                   : open_update(j, spec));
  if (q->mode != QR_FACTOR) j->out_from = q->state; /* <S>.u.h5 */
  if (!q->no_state) { /* the state file: a file, not a dataset */
    j->out_file_only = 1;
    if (spec[3] && strstr(spec[3], ":/"))
      return OOC_FAIL(j->ctx, OOC_ERR_ARG, "lstsq --out %s: give a file name only (the QR state "
                      "file holds /x, /R, /d, /residual_norms and /colmap)", spec[3]);
  }
  return OOC_OK;
}

/* ---- plan ---------------------------------------------------------------------------------- */

/* The plan is plan.c's (plan_qr: the row block, the panel, the budgets and the readers'
 * staging); here the job hands it the sizes, makes the CUDA executor first when a GPU runs it
 * (its budget is what the device plan divides, as LU's job_lu_device does) and applies the plan
 * to the readers. n is the state's as it is folded or updated. Then an update's stored state is
 * read (R, d: O(n^2) host bytes, which the plan counted; open read only its shape and column
 * map), so a --host-mem too small for R is refused before R is allocated. */
ooc_status_t job_qr_plan(job_t *j) {
  struct qr_job *q = j->qr;
  h5mat_t *A = j->in_a, *V = j->in_c;
  plan_req_t r = {.o = &j->o, .name = A ? h5m_name(A) : q->state,
                  .n = q->mode == QR_REMOVE_COLS ? q->sn : j->n, .m = j->m, .k = q->m,
                  .qr_ka = A ? h5m_cols(A) : 0, .qr_kv = V ? h5m_cols(V) : 0, .cuda = j->cuda};
  if (j->cuda) {
    /* the first listed device (--devices): QR does not spread */
    ex_cuda_config_t xc = {.device = j->dev[0], .gpu_mem = j->o.gpu_mem, .nqueues = 1,
                           .trace = j->o.trace};
    OOC_TRY(ooc_cuda()->ex_create(j->ctx, &xc, &j->cx));
    r.gpu_budget = j->cx->budget;
  }
  ooc_status_t st = plan_qr(j->ctx, &r, &j->plan);
  if (V) h5m_set_stage(V, j->plan.qr_stage[1]);
  if (A) h5m_set_stage(A, j->plan.qr_stage[0]);
  if (j->in_b) h5m_set_stage(j->in_b, j->plan.qr_stage[2]);
  OOC_TRY(st);
  q->p = j->b = j->plan.b;
  q->P = j->W = j->plan.W;
  j->budget = j->plan.budget;
  j->fixed = j->plan.fixed;
  /* an update's stored state, now that the plan has room for it */
  return q->mode == QR_ADD_COLS ? load_add_cols(j)
         : q->mode == QR_FACTOR ? OOC_OK : load_state(j, q->state, &q->s);
}

/* ---- run ----------------------------------------------------------------------------------- */

/* The check as opts->check asks (auto: full up to QR_CHECK_AUTO_ELEMS elements of A, as it reads
 * A again; probe is full here), its ratio against the threshold: OOC_ERR_ACCURACY above it.
 * `what` names the problem in the message ("A", "[A V]"). */
static ooc_status_t check_x(job_t *j, rsrc_t *src, const char *what) {
  struct qr_job *q = j->qr;
  ooc_report_t *r = j->rep;
  int full = j->o.check == OOC_CHECK_FULL || j->o.check == OOC_CHECK_PROBE ||
             (j->o.check == OOC_CHECK_AUTO && q->m * j->n <= QR_CHECK_AUTO_ELEMS);
  if (!full) {
    if (j->o.check == OOC_CHECK_AUTO)
      ooc_warn(r->warnings, sizeof r->warnings, "check skipped: %s has more than %lld elements "
               "(--check full reads it again)", what, (long long)QR_CHECK_AUTO_ELEMS);
    return OOC_OK;
  }
  double tk = ooc_now(), tr = q->t_read;
  double thr = j->o.check_threshold > 0 ? j->o.check_threshold : QR_CHECK_THRESHOLD;
  OOC_TRY(check_lstsq(j->ctx, j->ops, q->m, j->n, j->m, q->p, read_rows, src, q->X, check_eps(0),
                      &r->residual));
  r->t_check = ooc_now() - tk;
  r->bytes_input += 8 * q->m * (j->n + j->m);
  q->t_read = tr; /* the check's reads are its own time */
  snprintf(r->check, sizeof r->check, "full");
  if (!(r->residual < thr))
    return OOC_FAIL(j->ctx, OOC_ERR_ACCURACY, "lstsq: the check ratio ||%s^T r|| / (max(m, n) "
                    "eps ||%s||_F (||%s||_F ||x|| + ||b||)) is %.3g, not below %g: nothing was "
                    "written", what, what, what, r->residual, thr);
  return OOC_OK;
}

/* x = R^-1 d into q->X (n x nrhs, ld n): the rank test (qr_solve refuses a deficient R; *rank
 * for the state's attribute), the solve, its flops (the triangular solve's n^2 nrhs). */
static ooc_status_t solve(job_t *j, int64_t *rank) {
  struct qr_job *q = j->qr;
  const qr_state_t *s = q->s;
  int64_t n = s->n, nrhs = s->nrhs;
  q->X = ooc_malloc(j->ctx, (size_t)(n * nrhs + 1) * sizeof(double));
  if (!q->X)
    return OOC_FAIL(j->ctx, OOC_ERR_NOMEM, "out of host memory for x (%lld x %lld)",
                    (long long)n, (long long)nrhs);
  *rank = qr_rank(s, NULL, NULL);
  OOC_TRY(qr_solve(j->ctx, j->cx, j->ops, s, q->X, n, &j->rep->info));
  j->rep->flops += (double)n * (double)n * (double)nrhs;
  return OOC_OK;
}

/* The state's datasets and attributes into the output (its /R, n x n, made by the pipeline);
 * in_a, in_b: the inputs a later --add-cols reopens (NULL: none recorded). */
static ooc_status_t write_state(job_t *j, int64_t rank, const char *in_a, int ta,
                                const char *in_b, int tb, const char *update) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  struct qr_job *q = j->qr;
  const qr_state_t *s = q->s;
  int64_t n = s->n, nrhs = s->nrhs;
  double t0 = ooc_now();
  h5mat_t *o = j->out;
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
  if (j->o.history) OOC_TRY(h5m_attr_str(o, "history", j->o.history));
  OOC_TRY(h5vec_write_f64(ctx, o, "/d", s->D, n, q->b1d ? 0 : nrhs, n));
  OOC_TRY(h5vec_write_f64(ctx, o, "/x", q->X, n, q->b1d ? 0 : nrhs, n));
  OOC_TRY(h5vec_write_f64(ctx, o, "/residual_norms", s->res, nrhs, 0, nrhs));
  OOC_TRY(h5vec_write_i64(ctx, o, "/colmap", s->colmap, n));
  r->bytes_output += 8 * (n * n + 2 * n * nrhs + nrhs + n);
  r->t_write += ooc_now() - t0;
  return OOC_OK;
}

/* x alone into its output (ooc_lstsq_m: a dataset of a file, an array or a callback). */
static ooc_status_t write_x(job_t *j, h5mat_t *xo) {
  double t0 = ooc_now();
  OOC_TRY(h5m_write(xo, 0, 0, j->n, j->m, j->qr->X, j->n));
  OOC_TRY(h5m_attr_str(xo, "method", "qr"));
  j->rep->bytes_output += 8 * j->n * j->m;
  j->rep->t_write += ooc_now() - t0;
  return OOC_OK;
}

/* The run of each call: fold (or update), solve, check, and the state's datasets written. */
static ooc_status_t run_qr(job_t *j, int64_t *steps) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  struct qr_job *q = j->qr;
  int64_t m = q->m, nrhs = j->m;
  rsrc_t src = {j, q->mode == QR_ADD_COLS ? q->s->colmap : NULL, q->n0};
  qr_args_t qa = {.ctx = ctx, .exec = j->cx, .ops = j->ops, .m = m, .block = q->p,
                  .panel = q->P, .read = read_rows, .user = &src,
                  .phase = q->mode == QR_FACTOR ? "lstsq" : q->mode == QR_ADD_ROWS ? "add rows"
                                                                                 : "add columns"};
  qr_stats_t qs;
  double tc = ooc_now();
  if (q->mode == QR_FACTOR && !q->s) OOC_TRY(qr_state_new(ctx, j->n, nrhs, &q->s));
  qr_state_t *s = q->s;
  int64_t before = q->mode == QR_ADD_ROWS ? s->rows : 0;
  if (q->mode == QR_REMOVE_COLS) {
    int64_t k = q->c1 - q->c0;
    OOC_TRY(qr_remove_cols(ctx, j->cx, j->ops, s, q->j0, q->j0 + k));
    *steps = 1;
    double h = (double)(s->n + k - q->j0), wc = (double)(s->n - q->j0); /* geqrf of [R' d] */
    r->flops = 2.0 * h * wc * wc - 2.0 * wc * wc * wc / 3.0 + 4.0 * h * wc * (double)nrhs;
  } else {
    ooc_status_t st = qr_fold(&qa, s, &qs);
    *steps = qs.blocks;
    /* LAPACK's flops (dgeqrf + dormqr, dtpqrt), not the fold's (qs.flops); add columns counts
     * lstsq of [A V] from scratch */
    r->flops = qr_fold_flops(before, m, j->n, nrhs);
    r->bytes_input += 8 * m * (j->n + nrhs);
    if (q->mode == QR_FACTOR) r->t_read = q->t_read;
    OOC_TRY(st);
  }
  if (q->mode == QR_ADD_COLS) /* the A read is the state's A: its columns' norms are the old R's */
    for (int64_t c = 0; c < q->n0; c++) {
      double c0 = q->cn0[c], c1 = ooc_nrm2(c + 1, s->R + c * j->n);
      if (!(fabs(c1 - c0) <= QR_ADDCOLS_NORM_TOL * (c0 > c1 ? c0 : c1)))
        return OOC_FAIL(ctx, OOC_ERR_FORMAT, "lstsq --add-cols: A (%s) is not the matrix of the "
                        "state %s: its column %lld has norm %.17g, the state's R says %.17g "
                        "(relative difference above %g); nothing was written", h5m_name(j->in_a),
                        q->state, (long long)s->colmap[c], c1, c0, QR_ADDCOLS_NORM_TOL);
    }
  int64_t rank = 0;
  OOC_TRY(solve(j, &rank)); /* a dependent column (a new one for add columns) is refused here */
  r->t_compute = ooc_now() - tc - q->t_read;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0.0;
  if (q->mode == QR_FACTOR || q->mode == QR_ADD_COLS) {
    OOC_TRY(check_x(j, &src, q->mode == QR_FACTOR ? "A" : "[A V]"));
    r->t_read = q->t_read;
  } else {
    r->t_read = q->t_read;
    ooc_warn(r->warnings, sizeof r->warnings, "an update reads no A: no residual check (the "
             "state's residual norms are carried; docs/NUMERICS.md)");
  }
  if (q->mode == QR_FACTOR) { /* the inputs as --add-cols reopens them: files only */
    h5mat_t *A = j->in_a, *B = j->in_b;
    if (!q->no_state)
      OOC_TRY(write_state(j, rank, h5m_path(A)[0] ? h5m_name(A) : NULL, j->o.trans_a,
                          h5m_path(B)[0] ? h5m_name(B) : NULL, j->o.trans_b, NULL));
    if (q->hx) OOC_TRY(write_x(j, q->no_state ? j->out : j->out2));
    return OOC_OK;
  }
  /* removing columns keeps the rows: the state's A and b (its colmap numbers A's columns) are
   * still its inputs, which a later --add-cols reads; added rows are in no file */
  int rm = q->mode == QR_REMOVE_COLS;
  return write_state(j, rank, rm && q->in_a[0] ? q->in_a : NULL, q->in_ta,
                     rm && q->in_b[0] ? q->in_b : NULL, q->in_tb, q->what);
}

ooc_status_t job_qr_run(job_t *j, int64_t *steps) {
  ooc_status_t st = run_qr(j, steps);
  if (st == OOC_ERR_SINGULAR && j->rep->info == 0) j->rep->info = 1;
  return st;
}

void job_qr_cleanup(job_t *j) {
  struct qr_job *q = j->qr;
  if (!q) return;
  qr_state_free(j->ctx, q->s);
  ooc_free(j->ctx, q->X);
  ooc_free(j->ctx, q->cn0);
  ooc_free(j->ctx, q->cmap);
  q->s = NULL;
  q->X = q->cn0 = NULL;
  q->cmap = NULL;
}

/* ---- the calls ------------------------------------------------------------------------------ */

static ooc_status_t lstsq_call(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                               job_kind_t kind, struct qr_job *q, const char *a, const char *b,
                               const char *v, const char *output,
                               const ooc_matrix_t *const *hm) {
  const char *spec[4] = {a, b, v, output};
  return job_call(ctx, opts, report, kind, spec, 0, 0, NULL, hm, q);
}

ooc_status_t ooc_lstsq(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report) {
  struct qr_job q = {.mode = QR_FACTOR};
  return lstsq_call(ctx, opts, report, JOB_LSTSQ, &q, a, b, NULL, output, NULL);
}

/* ooc_lstsq_m: A and b by handle; x into the handle x (may be NULL) and the state into the file
 * `state` (NULL or "": none, x is the output). */
ooc_status_t job_lstsq_m(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                         const ooc_matrix_t *a, const ooc_matrix_t *b, const ooc_matrix_t *x,
                         const char *state) {
  struct qr_job q = {.mode = QR_FACTOR, .hx = x, .no_state = !state || !*state};
  const ooc_matrix_t *hm[4] = {a, b, NULL, q.no_state ? x : NULL};
  const char *s[2];
  for (int k = 0; k < 2; k++)
    s[k] = !hm[k] ? NULL : matrix_is_file(hm[k]) ? matrix_spec(hm[k]) : matrix_name(hm[k]);
  const char *out = !q.no_state ? state : !x ? NULL : matrix_is_file(x) ? matrix_spec(x)
                                                                        : matrix_name(x);
  return lstsq_call(ctx, opts, report, JOB_LSTSQ, &q, s[0], s[1], NULL, out, hm);
}

ooc_status_t ooc_lstsq_update(ooc_ctx_t *ctx, const char *state, const char *add_a,
                              const char *add_b, int64_t c0, int64_t c1, const char *output,
                              const ooc_opts_t *opts, ooc_report_t *report) {
  struct qr_job q = {.mode = add_a && *add_a ? QR_ADD_ROWS : QR_REMOVE_COLS, .state = state,
                     .c0 = c0, .c1 = c1};
  return lstsq_call(ctx, opts, report, JOB_LSTSQ_UPDATE, &q, add_a, add_b, NULL, output, NULL);
}

ooc_status_t ooc_lstsq_add_cols(ooc_ctx_t *ctx, const char *state, const char *v, const char *a,
                                const char *b, const char *output, const ooc_opts_t *opts,
                                ooc_report_t *report) {
  struct qr_job q = {.mode = QR_ADD_COLS, .state = state};
  return lstsq_call(ctx, opts, report, JOB_LSTSQ_UPDATE, &q, a, b, v, output, NULL);
}
