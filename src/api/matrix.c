/*
 * matrix.c: matrix handles (see matrix.h): their constructors, the tile source and sink of each
 * kind (host array, fill/take callbacks) as virtual h5mats, and the public `_m` calls.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/matrix.h"

enum { MK_FILE = 1, MK_ARRAY = 2, MK_CALLBACK = 3 };

struct ooc_matrix {
  int kind;
  char *spec; /* file */
  char *name;
  void *data; /* array */
  ooc_dtype_t dtype;
  int64_t rows, cols, ld;
  ooc_layout_t layout;
  ooc_tile_fill_fn fill; /* callback */
  ooc_tile_take_fn take;
  void *user;
};

int matrix_is_file(const ooc_matrix_t *m) { return m && m->kind == MK_FILE; }
const char *matrix_spec(const ooc_matrix_t *m) { return m && m->spec ? m->spec : ""; }
const char *matrix_name(const ooc_matrix_t *m) { return m && m->name ? m->name : ""; }

/* ---- constructors -------------------------------------------------------------------------- */

/* Handles outlive calls and contexts, so they use the C heap, not the context's allocator. */
static ooc_status_t new_matrix(ooc_ctx_t *ctx, int kind, const char *name, ooc_matrix_t **out) {
  ooc_matrix_t *m = calloc(1, sizeof *m);
  char *nm = m ? strdup(name) : NULL;
  if (!nm) {
    free(m);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for a matrix handle");
  }
  m->kind = kind;
  m->name = nm;
  *out = m;
  return OOC_OK;
}

ooc_status_t ooc_matrix_file(ooc_ctx_t *ctx, const char *spec, ooc_matrix_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  ooc_clear_error(ctx);
  char file[4096], dset[512];
  OOC_TRY(h5m_split_spec(ctx, spec, file, sizeof file, dset, sizeof dset));
  ooc_matrix_t *m = NULL;
  OOC_TRY(new_matrix(ctx, MK_FILE, spec, &m));
  m->spec = strdup(spec);
  if (!m->spec) {
    ooc_matrix_destroy(m);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for a matrix handle");
  }
  *out = m;
  return OOC_OK;
}

ooc_status_t ooc_matrix_array(ooc_ctx_t *ctx, void *data, ooc_dtype_t dtype, int64_t rows,
                              int64_t cols, int64_t ld, ooc_layout_t layout, ooc_matrix_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  ooc_clear_error(ctx);
  if (!data) return OOC_FAIL(ctx, OOC_ERR_ARG, "host array: the data pointer is NULL");
  if (dtype != OOC_DTYPE_F32 && dtype != OOC_DTYPE_F64)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "host array: dtype %d is neither OOC_DTYPE_F32 (1) nor "
                    "OOC_DTYPE_F64 (2)", (int)dtype);
  if (layout != OOC_LAYOUT_COL && layout != OOC_LAYOUT_ROW)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "host array: layout %d is neither OOC_LAYOUT_COL (0) nor "
                    "OOC_LAYOUT_ROW (1)", (int)layout);
  if (rows <= 0 || cols <= 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "host array: %lld x %lld; both dimensions must be > 0",
                    (long long)rows, (long long)cols);
  int64_t minld = layout == OOC_LAYOUT_COL ? rows : cols;
  if (ld < minld)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "host array: leading dimension %lld is less than the %s "
                    "(%lld) of a %s %lld x %lld array", (long long)ld,
                    layout == OOC_LAYOUT_COL ? "rows" : "columns", (long long)minld,
                    layout == OOC_LAYOUT_COL ? "column-major" : "row-major", (long long)rows,
                    (long long)cols);
  char name[160];
  snprintf(name, sizeof name, "host array (%lld x %lld %s, %s)", (long long)rows,
           (long long)cols, dtype == OOC_DTYPE_F32 ? "float32" : "float64",
           layout == OOC_LAYOUT_COL ? "column-major" : "row-major");
  ooc_matrix_t *m = NULL;
  OOC_TRY(new_matrix(ctx, MK_ARRAY, name, &m));
  m->data = data;
  m->dtype = dtype;
  m->rows = rows;
  m->cols = cols;
  m->ld = ld;
  m->layout = layout;
  *out = m;
  return OOC_OK;
}

ooc_status_t ooc_matrix_callback(ooc_ctx_t *ctx, int64_t rows, int64_t cols, ooc_tile_fill_fn fill,
                                 ooc_tile_take_fn take, void *user, ooc_matrix_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  ooc_clear_error(ctx);
  if (!fill && !take)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "callback matrix: neither a fill nor a take function");
  if (rows <= 0 || cols <= 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "callback matrix: %lld x %lld; both dimensions must be > 0",
                    (long long)rows, (long long)cols);
  char name[96];
  snprintf(name, sizeof name, "callback matrix (%lld x %lld)", (long long)rows, (long long)cols);
  ooc_matrix_t *m = NULL;
  OOC_TRY(new_matrix(ctx, MK_CALLBACK, name, &m));
  m->rows = rows;
  m->cols = cols;
  m->fill = fill;
  m->take = take;
  m->user = user;
  *out = m;
  return OOC_OK;
}

ooc_status_t ooc_matrix_set_name(ooc_matrix_t *m, const char *name) {
  if (!m || !name || !*name) return OOC_ERR_ARG;
  char *nm = strdup(name);
  if (!nm) return OOC_ERR_NOMEM;
  free(m->name);
  m->name = nm;
  return OOC_OK;
}

ooc_status_t ooc_matrix_shape(ooc_ctx_t *ctx, const ooc_matrix_t *m, int64_t *rows,
                              int64_t *cols) {
  if (!ctx || !m || !rows || !cols) return OOC_ERR_ARG;
  ooc_clear_error(ctx);
  if (m->kind != MK_FILE) {
    *rows = m->rows;
    *cols = m->cols;
    return OOC_OK;
  }
  char file[4096], dset[512];
  h5mat_t *h = NULL;
  OOC_TRY(h5m_split_spec(ctx, m->spec, file, sizeof file, dset, sizeof dset));
  OOC_TRY(h5m_open(ctx, file, dset, &h));
  *rows = h5m_rows(h);
  *cols = h5m_cols(h);
  h5m_close(h);
  return OOC_OK;
}

void ooc_matrix_destroy(ooc_matrix_t *m) {
  if (!m) return;
  free(m->spec);
  free(m->name);
  free(m);
}

/* ---- host arrays --------------------------------------------------------------------------- */

typedef struct {
  ooc_ctx_t *ctx;
  const ooc_matrix_t *m;
  int64_t sr, sc; /* element (i, j) of the view at data[i * sr + j * sc] */
} arr_t;

static arr_t *arr_new(ooc_ctx_t *ctx, const ooc_matrix_t *m, int trans) {
  arr_t *a = ooc_calloc(ctx, 1, sizeof *a);
  if (!a) return NULL;
  a->ctx = ctx;
  a->m = m;
  a->sr = m->layout == OOC_LAYOUT_COL ? 1 : m->ld;
  a->sc = m->layout == OOC_LAYOUT_COL ? m->ld : 1;
  if (trans) {
    int64_t t = a->sr;
    a->sr = a->sc;
    a->sc = t;
  }
  return a;
}

/* d(i, j) = s(i, j) for an nr x nc block, element (i, j) at d[i*di + j*dj] and s[i*si + j*sj]:
 * where the two disagree on which index is contiguous (row-major arrays, transposed views),
 * in 32 x 32 blocks, so that neither side is walked with a stride of a whole row or column per
 * element (a C-order numpy array of n = 65536 would otherwise touch a page per element). */
#define BLK 32
#define COPY2D(DT, d, di, dj, s, si, sj, nr, nc)                                                    \
  for (int64_t i0 = 0; i0 < (nr); i0 += BLK)                                                       \
    for (int64_t j0 = 0; j0 < (nc); j0 += BLK) {                                                   \
      int64_t ie = ooc_min64(i0 + BLK, (nr)), je = ooc_min64(j0 + BLK, (nc));                       \
      for (int64_t i = i0; i < ie; i++)                                                            \
        for (int64_t j = j0; j < je; j++) (d)[i * (di) + j * (dj)] = (DT)(s)[i * (si) + j * (sj)]; \
    }

/* dst[i + j*ld] = view(r0 + i, c0 + j): float64 columns are copied, everything else converted
 * (COPY2D). */
static ooc_status_t arr_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  arr_t *a = self;
  int64_t sr = a->sr, sc = a->sc, base = r0 * sr + c0 * sc;
  if (a->m->dtype == OOC_DTYPE_F64) {
    const double *s = (const double *)a->m->data + base;
    if (sr == 1)
      for (int64_t j = 0; j < nc; j++) memcpy(dst + j * ld, s + j * sc, (size_t)nr * sizeof(double));
    else
      COPY2D(double, dst, 1, ld, s, sr, sc, nr, nc)
  } else {
    const float *s = (const float *)a->m->data + base;
    COPY2D(double, dst, 1, ld, s, sr, sc, nr, nc)
  }
  return OOC_OK;
}

/* view(r0 + i, c0 + j) = src[i + j*ld] (trans: src[j + i*ld]); float32 arrays round. */
static ooc_status_t arr_write(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                              const double *src, int64_t ld, int trans) {
  arr_t *a = self;
  int64_t sr = a->sr, sc = a->sc, base = r0 * sr + c0 * sc;
  int64_t ir = trans ? ld : 1, jr = trans ? 1 : ld; /* src element (i, j) at i*ir + j*jr */
  if (a->m->dtype == OOC_DTYPE_F64) {
    double *d = (double *)a->m->data + base;
    if (sr == 1 && ir == 1)
      for (int64_t j = 0; j < nc; j++) memcpy(d + j * sc, src + j * jr, (size_t)nr * sizeof(double));
    else
      COPY2D(double, d, sr, sc, src, ir, jr, nr, nc)
  } else {
    float *d = (float *)a->m->data + base;
    COPY2D(float, d, sr, sc, src, ir, jr, nr, nc)
  }
  return OOC_OK;
}

/* An output array of a failed call holds no unverified numbers, nor stale ones a caller might
 * take for the result: NaN everywhere. */
static void arr_fill_nan(const ooc_matrix_t *m) {
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t j = 0; j < m->cols; j++) {
      int64_t k = m->layout == OOC_LAYOUT_COL ? i + j * m->ld : i * m->ld + j;
      if (m->dtype == OOC_DTYPE_F64) ((double *)m->data)[k] = NAN;
      else ((float *)m->data)[k] = NAN;
    }
}

static void arr_close(void *self, int uncommitted) {
  arr_t *a = self;
  if (uncommitted) arr_fill_nan(a->m); /* whatever the status: something may have been written */
  ooc_free(a->ctx, a);
}

static const h5m_virt_t ARR_VIRT = {arr_read, arr_write, NULL, arr_close};

/* ---- callbacks ----------------------------------------------------------------------------- */

typedef struct {
  ooc_ctx_t *ctx;
  const ooc_matrix_t *m;
  h5mat_t *stage; /* take: the result until it is verified */
  int64_t tile;
} cb_t;

static const char *cb_name(const cb_t *c) { return c->m->name; }

static ooc_status_t cb_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                            double *dst, int64_t ld) {
  cb_t *c = self;
  if (c->stage) return h5m_read(c->stage, r0, c0, nr, nc, dst, ld); /* the check reads X back */
  int rc = c->m->fill(c->m->user, r0, c0, nr, nc, dst, ld);
  if (rc)
    return OOC_FAIL(c->ctx, OOC_ERR_IO, "%s: the fill callback returned %d for rows %lld..%lld, "
                    "columns %lld..%lld", cb_name(c), rc, (long long)r0, (long long)(r0 + nr - 1),
                    (long long)c0, (long long)(c0 + nc - 1));
  return OOC_OK;
}

static ooc_status_t cb_write(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             const double *src, int64_t ld, int trans) {
  cb_t *c = self;
  return trans ? h5m_write_t(c->stage, r0, c0, nr, nc, src, ld)
               : h5m_write(c->stage, r0, c0, nr, nc, src, ld);
}

/* The verified result, tile by tile, to the take callback. */
static ooc_status_t cb_commit(void *self) {
  cb_t *c = self;
  int64_t rows = h5m_rows(c->stage), cols = h5m_cols(c->stage), t = c->tile;
  double *buf = ooc_malloc(c->ctx, (size_t)(t * t) * sizeof(double));
  if (!buf)
    return OOC_FAIL(c->ctx, OOC_ERR_NOMEM, "%s: out of host memory for a %lld x %lld tile",
                    cb_name(c), (long long)t, (long long)t);
  ooc_status_t st = OOC_OK;
  int64_t given = 0, all = ooc_cdiv64(rows, t) * ooc_cdiv64(cols, t);
  for (int64_t r0 = 0; r0 < rows && st == OOC_OK; r0 += t)
    for (int64_t c0 = 0; c0 < cols && st == OOC_OK; c0 += t) {
      int64_t nr = ooc_min64(t, rows - r0), nc = ooc_min64(t, cols - c0);
      st = h5m_read(c->stage, r0, c0, nr, nc, buf, nr);
      if (st != OOC_OK) break;
      int rc = c->m->take(c->m->user, r0, c0, nr, nc, buf, nr);
      if (rc)
        st = OOC_FAIL(c->ctx, OOC_ERR_IO, "%s: the take callback returned %d for rows "
                      "%lld..%lld, columns %lld..%lld", cb_name(c), rc, (long long)r0,
                      (long long)(r0 + nr - 1), (long long)c0, (long long)(c0 + nc - 1));
      else
        given++;
    }
  ooc_free(c->ctx, buf);
  if (st != OOC_OK && given > 0) /* all verified, but the caller must know it has only part */
    ooc_error_append(c->ctx, "; %lld of %lld tiles had been handed to the take callback (all "
                     "verified)", (long long)given, (long long)all);
  return st;
}

static void cb_close(void *self, int uncommitted) {
  (void)uncommitted;
  cb_t *c = self;
  h5m_close(c->stage); /* never committed: the temporary goes */
  ooc_free(c->ctx, c);
}

static const h5m_virt_t CB_VIRT = {cb_read, cb_write, cb_commit, cb_close};

/* ---- opening for a call -------------------------------------------------------------------- */

ooc_status_t matrix_open_input(ooc_ctx_t *ctx, const ooc_matrix_t *m, int trans, h5mat_t **out) {
  *out = NULL;
  if (m->kind == MK_ARRAY) {
    arr_t *a = arr_new(ctx, m, trans);
    if (!a) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory", m->name);
    ooc_status_t st = h5m_open_virt(ctx, &ARR_VIRT, a, trans ? m->cols : m->rows,
                                    trans ? m->rows : m->cols,
                                    m->dtype == OOC_DTYPE_F32 ? H5M_F32 : H5M_F64, 0, m->name, out);
    if (st != OOC_OK) ooc_free(ctx, a);
    return st;
  }
  if (m->kind != MK_CALLBACK) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "%s: not a matrix", m->name);
  if (!m->fill)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: an input needs a fill callback (this one only takes "
                    "results)", m->name);
  if (trans)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: a fill callback cannot be read transposed "
                    "(trans_a/trans_b): fill the transpose instead", m->name);
  cb_t *c = ooc_calloc(ctx, 1, sizeof *c);
  if (!c) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory", m->name);
  c->ctx = ctx;
  c->m = m;
  ooc_status_t st = h5m_open_virt(ctx, &CB_VIRT, c, m->rows, m->cols, H5M_F64, 0, m->name, out);
  if (st != OOC_OK) ooc_free(ctx, c);
  return st;
}

ooc_status_t matrix_open_output(ooc_ctx_t *ctx, const ooc_matrix_t *m, int64_t rows, int64_t cols,
                                h5m_type_t type, int64_t tile, const char *scratch_dir,
                                h5mat_t **out) {
  *out = NULL;
  if (m->rows != rows || m->cols != cols)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the output is %lld x %lld; the result is %lld x %lld",
                    m->name, (long long)m->rows, (long long)m->cols, (long long)rows,
                    (long long)cols);
  if (m->kind == MK_ARRAY) {
    arr_t *a = arr_new(ctx, m, 0);
    if (!a) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory", m->name);
    ooc_status_t st = h5m_open_virt(ctx, &ARR_VIRT, a, rows, cols,
                                    m->dtype == OOC_DTYPE_F32 ? H5M_F32 : H5M_F64, 1, m->name, out);
    if (st != OOC_OK) ooc_free(ctx, a);
    return st;
  }
  if (m->kind != MK_CALLBACK) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "%s: not a matrix", m->name);
  if (!m->take)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: an output needs a take callback (this one only fills "
                    "inputs)", m->name);
  cb_t *c = ooc_calloc(ctx, 1, sizeof *c);
  if (!c) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory", m->name);
  c->ctx = ctx;
  c->m = m;
  c->tile = ooc_max64(1, ooc_min64(tile, ooc_max64(rows, cols)));
  char path[4096];
  ooc_fmt(path, sizeof path, "%s/.oocsolve-take-%ld-%p.h5", scratch_dir, (long)getpid(),
          (void *)c);
  ooc_status_t st = h5m_create(ctx, path, "/result", rows, cols, type, ooc_max64(tile, 256), NULL,
                               1, &c->stage);
  if (st == OOC_OK) st = h5m_open_virt(ctx, &CB_VIRT, c, rows, cols, type, 1, m->name, out);
  if (st != OOC_OK) {
    if (st != OOC_ERR_NOMEM) ooc_error_context(ctx, "%s (staging the result in '%s')", m->name,
                                               scratch_dir);
    h5m_close(c->stage);
    ooc_free(ctx, c);
  }
  return st;
}

/* ---- the calls on handles ------------------------------------------------------------------ */

/* Byte range of an array's elements. */
static void arr_span(const ooc_matrix_t *m, const char **lo, const char **hi) {
  int64_t es = m->dtype == OOC_DTYPE_F32 ? 4 : 8;
  int64_t last = m->layout == OOC_LAYOUT_COL ? (m->rows - 1) + (m->cols - 1) * m->ld
                                             : (m->rows - 1) * m->ld + (m->cols - 1);
  *lo = (const char *)m->data;
  *hi = *lo + (last + 1) * es;
}

/* Options for a call with handles: refused combinations, and what differs from files. */
static ooc_status_t settle(ooc_ctx_t *ctx, const ooc_options_t *opts, const ooc_matrix_t *const *in,
                           int nin, const ooc_matrix_t *out, ooc_opts_t *o, char *scratch,
                           size_t cap) {
  if (opts) *o = *ooc_opts_struct(opts);
  else ooc_opts_default(o);
  for (int k = 0; k < nin; k++)
    if (!in[k]) return OOC_FAIL(ctx, OOC_ERR_ARG, "input matrix %d is NULL", k + 1);
  int virt = out && !matrix_is_file(out);
  for (int k = 0; k < nin; k++) virt |= !matrix_is_file(in[k]);
  if (!virt) return OOC_OK; /* files only: exactly the string calls */
  if (o->resume)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "resume: a call with a host array or callback matrix "
                    "cannot be resumed (it keeps no journal); use files for resumable runs");
  o->checkpoint = OOC_CHECKPOINT_NEVER;
  if (out && !matrix_is_file(out)) {
    if (o->keep_failed)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "keep_failed: %s is not a file; a rejected result is "
                      "kept only for file outputs", out->name);
    if (out->kind == MK_ARRAY) {
      o->out_dtype = out->dtype; /* the array's type is the output's */
      const char *olo, *ohi;
      arr_span(out, &olo, &ohi);
      for (int k = 0; k < nin; k++) {
        const char *ilo, *ihi;
        if (in[k]->kind != MK_ARRAY) continue;
        arr_span(in[k], &ilo, &ihi);
        if (olo < ihi && ilo < ohi)
          return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the output array overlaps the input array %s "
                          "(input %d): the input is never modified; give the output its own "
                          "memory", out->name, in[k]->name, k + 1);
      }
    }
  }
  if (!o->scratch_dir || !*o->scratch_dir) {
    const char *t = getenv("TMPDIR");
    ooc_fmt(scratch, cap, "%s", t && *t ? t : "/tmp");
    o->scratch_dir = scratch;
  }
  return OOC_OK;
}

static ooc_status_t call_m(ooc_ctx_t *ctx, const ooc_options_t *opts, ooc_report_t *report,
                           job_kind_t kind, const ooc_matrix_t *a, const ooc_matrix_t *b,
                           const ooc_matrix_t *c, const ooc_matrix_t *out, double alpha,
                           double beta, double *logdet) {
  if (!ctx) return OOC_ERR_ARG;
  ooc_clear_error(ctx);
  if (logdet) *logdet = NAN;
  if (kind != JOB_LOGDET && !out) return OOC_FAIL(ctx, OOC_ERR_ARG, "no output matrix given");
  const ooc_matrix_t *in[3] = {a, b, c};
  int nin = kind == JOB_INVERT || kind == JOB_FACTOR || kind == JOB_LOGDET ? 1 : 2;
  if (kind == JOB_PRODUCT && c) nin = 3;
  ooc_opts_t o;
  char scratch[4096];
  OOC_TRY(settle(ctx, opts, in, nin, out, &o, scratch, sizeof scratch));
  ooc_status_t st = job_call_m(ctx, &o, report, kind, a, nin > 1 ? b : NULL, nin > 2 ? c : NULL,
                               out, alpha, beta, logdet);
  /* a failure before the output was opened (arr_close fills it after): NaN too, except for a
   * refused argument (an output overlapping an input must not be written) */
  if (st != OOC_OK && st != OOC_ERR_ARG && out && out->kind == MK_ARRAY) arr_fill_nan(out);
  return st;
}

ooc_status_t ooc_invert_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, ooc_matrix_t *x,
                          const ooc_options_t *opts, ooc_report_t *report) {
  return call_m(ctx, opts, report, JOB_INVERT, a, NULL, NULL, x, 0, 0, NULL);
}
ooc_status_t ooc_solve_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                         ooc_matrix_t *x, const ooc_options_t *opts, ooc_report_t *report) {
  return call_m(ctx, opts, report, JOB_SOLVE, a, b, NULL, x, 0, 0, NULL);
}
ooc_status_t ooc_factor_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, ooc_matrix_t *l,
                          const ooc_options_t *opts, ooc_report_t *report) {
  return call_m(ctx, opts, report, JOB_FACTOR, a, NULL, NULL, l, 0, 0, NULL);
}
ooc_status_t ooc_solve_factor_m(ooc_ctx_t *ctx, const ooc_matrix_t *l, const ooc_matrix_t *b,
                                ooc_matrix_t *x, const ooc_options_t *opts, ooc_report_t *report) {
  return call_m(ctx, opts, report, JOB_FACTORED, l, b, NULL, x, 0, 0, NULL);
}
ooc_status_t ooc_logdet_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_options_t *opts,
                          ooc_report_t *report, double *logdet) {
  return call_m(ctx, opts, report, JOB_LOGDET, a, NULL, NULL, NULL, 0, 0, logdet);
}
ooc_status_t ooc_gemm_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                        const ooc_matrix_t *c0, ooc_matrix_t *c, double alpha, double beta,
                        const ooc_options_t *opts, ooc_report_t *report) {
  return call_m(ctx, opts, report, JOB_PRODUCT, a, b, c0, c, alpha, beta, NULL);
}

/* Least squares on handles (issue 24): inputs A and b, the solution into x, the QR state into the
 * file `state` (either may be absent, not both). */
ooc_status_t ooc_lstsq_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                         ooc_matrix_t *x, const char *state, const ooc_options_t *opts,
                         ooc_report_t *report) {
  if (!ctx) return OOC_ERR_ARG;
  ooc_clear_error(ctx);
  const ooc_matrix_t *in[2] = {a, b};
  ooc_opts_t o;
  char scratch[4096];
  OOC_TRY(settle(ctx, opts, in, 2, x, &o, scratch, sizeof scratch));
  ooc_status_t st = job_lstsq_m(ctx, &o, report, a, b, x, state);
  if (st != OOC_OK && st != OOC_ERR_ARG && x && x->kind == MK_ARRAY) arr_fill_nan(x);
  return st;
}
