/*
 * test_matrix.c: matrix handles and the _m calls (include/oocsolve.h "matrix handles"). Every
 * call (invert, solve, factor, solve with a factor, logdet, gemm) through every kind of input
 * handle (file f64/f32, host array column-/row-major in float64/float32, fill callback) and of
 * output handle (file, arrays of both layouts and dtypes, take callback) gives the file path's
 * result within LAPACK's residual ratios; the input is never modified; a column-major float64
 * array is not copied (host bytes counted); a failed call leaves NaN in an output array and
 * hands nothing to a take callback; misuse (overlap, shape, callbacks failing, NaN) is refused
 * with a message naming the matrix.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "oocsolve.h"
#include "gen/gen.h"

#define EPS64 DBL_EPSILON
#define EPS32 ((double)FLT_EPSILON)

enum { K_FILE64, K_FILE32, K_COL64, K_ROW64, K_COL32, K_ROW32, K_CB, K_IN_KINDS };
static const char *const KNAME[] = {"file f64", "file f32", "array col f64", "array row f64",
                                    "array col f32", "array row f32", "fill callback"};
enum { O_FILE, O_COL64, O_ROW64, O_COL32, O_CB, O_KINDS };
static const char *const ONAME[] = {"file", "array col f64", "array row f64", "array col f32",
                                    "take callback"};

/* A column-major float64 matrix behind a fill callback; counts the elements it hands out. */
typedef struct {
  const double *A;
  int64_t rows;
  int64_t elements;
  int fail_at; /* > 0: the fail_at-th call returns 7 */
  int calls;
} fill_t;

static int fill_fn(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                   int64_t ld) {
  fill_t *f = user;
  if (++f->calls == f->fail_at) return 7;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, f->A + r0 + (c0 + j) * f->rows, (size_t)nr * sizeof(double));
  f->elements += nr * nc;
  return 0;
}

/* A take callback assembling the result (column-major, ld rows). */
typedef struct {
  double *X;
  int64_t rows;
  int tiles;
  int fail;
} take_t;

static int take_fn(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc, const double *src,
                   int64_t ld) {
  take_t *t = user;
  t->tiles++;
  if (t->fail) return 3;
  for (int64_t j = 0; j < nc; j++)
    memcpy(t->X + r0 + (c0 + j) * t->rows, src + j * ld, (size_t)nr * sizeof(double));
  return 0;
}

/* An input handle of kind k for the column-major float64 matrix A (rows x cols); *buf: memory
 * the handle reads (freed by the caller), *fs the callback's state. */
typedef struct {
  ooc_matrix_t *h;
  void *buf;
  fill_t fs;
  char spec[512];
} input_t;

static int seq;

static void make_input(ooc_ctx_t *ctx, input_t *in, int k, const double *A, int64_t rows,
                       int64_t cols) {
  memset(in, 0, sizeof *in);
  int64_t ld_pad = 3; /* a leading dimension larger than the minimum */
  if (k == K_FILE64 || k == K_FILE32) {
    char file[64];
    snprintf(file, sizeof file, "in%d.h5", seq++);
    tu_write_matrix(tu_path(file), "M", rows, cols, A, k == K_FILE32 ? 1 : 2);
    snprintf(in->spec, sizeof in->spec, "%s:/M", tu_path(file));
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_file(ctx, in->spec, &in->h), OOC_OK);
  } else if (k == K_CB) {
    in->fs = (fill_t){A, rows, 0, 0, 0};
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_callback(ctx, rows, cols, fill_fn, NULL, &in->fs, &in->h),
                          OOC_OK);
  } else {
    int row = k == K_ROW64 || k == K_ROW32, f32 = k == K_COL32 || k == K_ROW32;
    int64_t ld = (row ? cols : rows) + ld_pad, n = (row ? rows : cols) * ld;
    in->buf = malloc((size_t)n * (f32 ? 4 : 8));
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        int64_t at = row ? i * ld + j : i + j * ld;
        if (f32) ((float *)in->buf)[at] = (float)A[i + j * rows];
        else ((double *)in->buf)[at] = A[i + j * rows];
      }
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, in->buf, f32 ? OOC_DTYPE_F32 : OOC_DTYPE_F64, rows,
                                           cols, ld, row ? OOC_LAYOUT_ROW : OOC_LAYOUT_COL, &in->h),
                          OOC_OK);
  }
}

static size_t input_bytes(const input_t *in, int k, int64_t rows, int64_t cols) {
  int row = k == K_ROW64 || k == K_ROW32, f32 = k == K_COL32 || k == K_ROW32;
  return (size_t)((row ? rows : cols) * ((row ? cols : rows) + 3)) * (f32 ? 4 : 8) * (in->buf != 0);
}

static void free_input(input_t *in) {
  ooc_matrix_destroy(in->h);
  free(in->buf);
}

typedef struct {
  ooc_matrix_t *h;
  void *buf;
  take_t ts;
  char spec[512];
  int64_t rows, cols;
  int kind;
} output_t;

static void make_output(ooc_ctx_t *ctx, output_t *o, int k, int64_t rows, int64_t cols) {
  memset(o, 0, sizeof *o);
  o->rows = rows;
  o->cols = cols;
  o->kind = k;
  if (k == O_FILE) {
    char file[64];
    snprintf(file, sizeof file, "out%d.h5", seq++);
    snprintf(o->spec, sizeof o->spec, "%s:/X", tu_path(file));
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_file(ctx, o->spec, &o->h), OOC_OK);
  } else if (k == O_CB) {
    o->buf = calloc((size_t)(rows * cols), sizeof(double));
    o->ts = (take_t){o->buf, rows, 0, 0};
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_callback(ctx, rows, cols, NULL, take_fn, &o->ts, &o->h),
                          OOC_OK);
  } else {
    int f32 = k == O_COL32, row = k == O_ROW64;
    o->buf = calloc((size_t)(rows * cols), f32 ? 4 : 8);
    CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, o->buf, f32 ? OOC_DTYPE_F32 : OOC_DTYPE_F64, rows,
                                           cols, row ? cols : rows,
                                           row ? OOC_LAYOUT_ROW : OOC_LAYOUT_COL, &o->h),
                          OOC_OK);
  }
}

/* The result as column-major float64 (malloc'ed). */
static double *output_result(const output_t *o) {
  int64_t rows = o->rows, cols = o->cols;
  if (o->kind == O_FILE) {
    int64_t r, c;
    double *X = tu_read_matrix(o->spec, &r, &c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(X);
    CU_ASSERT_EQUAL(r, rows);
    CU_ASSERT_EQUAL(c, cols);
    return X;
  }
  double *X = malloc((size_t)(rows * cols) * sizeof(double));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      X[i + j * rows] = o->kind == O_COL32   ? ((float *)o->buf)[i + j * rows]
                        : o->kind == O_ROW64 ? ((double *)o->buf)[i * cols + j]
                                             : ((double *)o->buf)[i + j * rows];
  return X;
}

static void free_output(output_t *o) {
  ooc_matrix_destroy(o->h);
  free(o->buf);
}

static double max_rel_diff(const double *X, const double *Y, int64_t n) {
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs(X[i] - Y[i]));
    s = fmax(s, fabs(Y[i]));
  }
  return d / s;
}

static ooc_options_t *opts_small(void) {
  ooc_options_t *o;
  CU_ASSERT_EQUAL_FATAL(ooc_opts_create(&o), OOC_OK);
  ooc_opts_set_int(o, OOC_PARAM_TILE, 48);
  ooc_opts_set_str(o, OOC_PARAM_DEVICE, "cpu");
  ooc_opts_set_str(o, OOC_PARAM_SCRATCH, tu_tmpdir());
  ooc_opts_set_str(o, OOC_PARAM_CHECK, "full");
  return o;
}

typedef enum { C_INVERT, C_SOLVE, C_FACTOR, C_SOLVE_FACTOR, C_LOGDET, C_GEMM } call_t;
static const char *const CNAME[] = {"invert", "solve", "factor", "solve_factor", "logdet", "gemm"};

/* The matrices of one call: A (n x n), B (n x m), C0 (n x m); SPD A where the call needs it. */
typedef struct {
  int64_t n, m;
  double *A, *B, *C0, *L; /* L: A's Cholesky factor (for solve_factor) */
} probs_t;

static ooc_status_t run_call(ooc_ctx_t *ctx, call_t c, const ooc_matrix_t *a, const ooc_matrix_t *b,
                             const ooc_matrix_t *c0, ooc_matrix_t *x, const ooc_options_t *o,
                             ooc_report_t *r, double *ld) {
  switch (c) {
  case C_INVERT: return ooc_invert_m(ctx, a, x, o, r);
  case C_SOLVE: return ooc_solve_m(ctx, a, b, x, o, r);
  case C_FACTOR: return ooc_factor_m(ctx, a, x, o, r);
  case C_SOLVE_FACTOR: return ooc_solve_factor_m(ctx, a, b, x, o, r);
  case C_LOGDET: return ooc_logdet_m(ctx, a, o, r, ld);
  case C_GEMM: return ooc_gemm_m(ctx, a, b, c0, x, 1.5, -0.5, o, r);
  }
  return OOC_ERR_INTERNAL;
}

/* Result of call c with inputs of kind ki and an output of kind ko; the reference X0 (NULL: this
 * is the reference run) and what it must satisfy. Returns the result (col-major f64). */
static double *one(const probs_t *p, call_t c, int ki, int ko, const double *X0, double *logdet) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = p->n, m = p->m;
  input_t ia, ib, ic;
  const double *Ain = c == C_SOLVE_FACTOR ? p->L : p->A;
  make_input(ctx, &ia, ki, Ain, n, n);
  int has_b = c == C_SOLVE || c == C_SOLVE_FACTOR || c == C_GEMM;
  if (has_b) make_input(ctx, &ib, ki, p->B, n, m);
  if (c == C_GEMM) make_input(ctx, &ic, ki, p->C0, n, m);
  int64_t xc = has_b ? m : n;
  output_t out;
  if (c != C_LOGDET) make_output(ctx, &out, ko, n, xc);
  /* the inputs' bytes before, to show they are never modified */
  uint64_t ha = ia.buf ? ooc_xxh64(ia.buf, input_bytes(&ia, ki, n, n), 0) : 0;
  ooc_options_t *o = opts_small();
  ooc_report_t *r = ooc_report_create();
  double ld = NAN;
  ooc_status_t st = run_call(ctx, c, ia.h, has_b ? ib.h : NULL, c == C_GEMM ? ic.h : NULL,
                             c == C_LOGDET ? NULL : out.h, o, r, &ld);
  if (st != OOC_OK)
    fprintf(stderr, "\n%s, %s -> %s: %s\n", CNAME[c], KNAME[ki], c == C_LOGDET ? "-" : ONAME[ko],
            ooc_ctx_error(ctx));
  CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
  if (ia.buf) CU_ASSERT_EQUAL(ooc_xxh64(ia.buf, input_bytes(&ia, ki, n, n), 0), ha);
  double res;
  CU_ASSERT_EQUAL(ooc_report_get_double(r, OOC_R_RESIDUAL, &res), OOC_OK);
  if (c != C_LOGDET) CU_ASSERT(res < (c == C_SOLVE || c == C_SOLVE_FACTOR ? 16 : 30));
  if (ki == K_CB && c != C_LOGDET) /* the check read the input again: more than n x n */
    CU_ASSERT(ia.fs.elements > n * n);
  double *X = NULL;
  int f32 = ki == K_FILE32 || ki == K_COL32 || ki == K_ROW32 || ko == O_COL32;
  double eps = f32 ? EPS32 : EPS64;
  if (c == C_LOGDET) {
    *logdet = ld;
    CU_ASSERT(isfinite(ld));
    if (X0) CU_ASSERT(fabs(ld - *X0) <= 1e3 * eps * fmax(1, fabs(*X0)));
  } else {
    X = output_result(&out);
    if (ko == O_CB) CU_ASSERT(out.ts.tiles >= 1);
    /* LAPACK's ratios of the result itself, against the float64 problem */
    if (c == C_INVERT) CU_ASSERT(tu_inverse_ratio(n, p->A, X, eps) < 30);
    if (c == C_SOLVE || c == C_SOLVE_FACTOR) CU_ASSERT(tu_solve_ratio(n, m, p->A, X, p->B, eps) < 16);
    if (X0) { /* and the file path's result: the same up to the precision's rounding */
      double d = max_rel_diff(X, X0, n * xc);
      if (!(d <= (f32 ? 1e3 * EPS32 : 1e-12)))
        fprintf(stderr, "\n%s, %s -> %s: differs from the file path by %g\n", CNAME[c],
                KNAME[ki], ONAME[ko], d);
      CU_ASSERT(d <= (f32 ? 1e3 * EPS32 : 1e-12));
    }
    free_output(&out);
  }
  ooc_report_destroy(r);
  ooc_opts_destroy(o);
  free_input(&ia);
  if (has_b) free_input(&ib);
  if (c == C_GEMM) free_input(&ic);
  tu_ctx_done(ctx);
  return X;
}

static probs_t make_probs(void) {
  probs_t p = {.n = 150, .m = 7};
  int64_t n = p.n, m = p.m;
  p.A = tu_gen_matrix(GEN_MATERN, n, 0, 0, 11); /* SPD: chol, factor, logdet */
  p.B = malloc((size_t)(n * m) * sizeof(double));
  p.C0 = malloc((size_t)(n * m) * sizeof(double));
  for (int64_t k = 0; k < n * m; k++) {
    p.B[k] = sin(0.37 * (double)k) + 0.1;
    p.C0[k] = cos(0.11 * (double)k);
  }
  /* L from the library's own factor through the file path */
  ooc_ctx_t *ctx = tu_ctx();
  char in[512], out[512], f[64];
  snprintf(f, sizeof f, "spd%d.h5", seq++);
  tu_write_matrix(tu_path(f), "A", n, n, p.A, 2);
  snprintf(in, sizeof in, "%s:/A", tu_path(f));
  snprintf(f, sizeof f, "spd_l%d.h5", seq++);
  snprintf(out, sizeof out, "%s:/L", tu_path(f));
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = 48;
  o.device = OOC_DEVICE_CPU;
  CU_ASSERT_EQUAL(ooc_factor(ctx, in, out, &o, NULL), OOC_OK);
  int64_t r, c;
  p.L = tu_read_matrix(out, &r, &c);
  tu_ctx_done(ctx);
  return p;
}

static void free_probs(probs_t *p) {
  free(p->A);
  free(p->B);
  free(p->C0);
  free(p->L);
}

/* Every call, every input kind (output: column-major f64 array), against the file path. */
static void test_every_input_kind(void) {
  probs_t p = make_probs();
  for (int c = C_INVERT; c <= C_GEMM; c++) {
    double ld64 = NAN, ld32 = NAN;
    double *X64 = one(&p, (call_t)c, K_FILE64, O_FILE, NULL, &ld64);
    double *X32 = one(&p, (call_t)c, K_FILE32, O_FILE, NULL, &ld32);
    for (int k = K_COL64; k < K_IN_KINDS; k++) {
      int f32 = k == K_COL32 || k == K_ROW32;
      double ld;
      double *X = one(&p, (call_t)c, k, O_COL64, c == C_LOGDET ? (f32 ? &ld32 : &ld64)
                                                    : (f32 ? X32 : X64), &ld);
      free(X);
    }
    free(X64);
    free(X32);
  }
  free_probs(&p);
}

/* Every call, every output kind (input: a column-major array), against the file path. */
static void test_every_output_kind(void) {
  probs_t p = make_probs();
  for (int c = C_INVERT; c <= C_GEMM; c++) {
    if (c == C_LOGDET) continue; /* no output */
    double ld;
    double *X64 = one(&p, (call_t)c, K_FILE64, O_FILE, NULL, &ld);
    for (int k = O_FILE; k < O_KINDS; k++) free(one(&p, (call_t)c, K_COL64, k, X64, &ld));
    free(X64);
  }
  free_probs(&p);
}

/* A column-major float64 array is read in place: a run from the array allocates no more host
 * bytes than the same run from a file, and never the array's size on top of the budget. */
static void test_no_copy(void) {
  int64_t n = 640;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 5);
  int64_t peak[2];
  for (int k = 0; k < 2; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    input_t in;
    if (k == 0) { /* chunked unlike the tiles: no fallback on the file (job.c input_backs_tiles)
                   * and its smaller cache, so both runs plan the same */
      memset(&in, 0, sizeof in);
      tu_write_matrix_chunked(tu_path("peak.h5"), "M", n, n, A, 2, 48);
      snprintf(in.spec, sizeof in.spec, "%s:/M", tu_path("peak.h5"));
      CU_ASSERT_EQUAL_FATAL(ooc_matrix_file(ctx, in.spec, &in.h), OOC_OK);
    } else {
      make_input(ctx, &in, K_COL64, A, n, n);
    }
    output_t out;
    make_output(ctx, &out, O_COL64, n, n);
    ooc_options_t *o = opts_small();
    ooc_opts_set_int(o, OOC_PARAM_TILE, 64);
    ooc_opts_set_str(o, OOC_PARAM_METHOD, "gj");
    ooc_opts_set_str(o, OOC_PARAM_HOST_MEM, "2M"); /* the matrix is 3.1 MiB: out of core */
    ooc_opts_set_str(o, OOC_PARAM_CHECK, "probe");
    ooc_report_t *r = ooc_report_create();
    ooc_status_t st = ooc_invert_m(ctx, in.h, out.h, o, r);
    if (st != OOC_OK) fprintf(stderr, "\n%s\n", ooc_ctx_error(ctx));
    CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
    CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_HOST_PEAK, &peak[k]), OOC_OK);
    int64_t spilled;
    ooc_report_get_int(r, OOC_R_BYTES_SPILLED, &spilled);
    CU_ASSERT(spilled > 0); /* really out of core */
    double *X = output_result(&out);
    CU_ASSERT(tu_inverse_ratio(n, A, X, EPS64) < 30);
    free(X);
    printf("\n  host peak, %s input: %lld bytes (array %lld bytes)", KNAME[k ? K_COL64 : K_FILE64],
           (long long)peak[k], (long long)(8 * n * n));
    ooc_report_destroy(r);
    ooc_opts_destroy(o);
    free_output(&out);
    free_input(&in);
    tu_ctx_done(ctx);
  }
  CU_ASSERT(peak[1] <= peak[0]);
  CU_ASSERT(peak[1] <= 2 << 20);   /* within the budget... */
  CU_ASSERT(peak[1] < 8 * n * n);  /* ...so no copy of the array */
  free(A);
}

/* A failed check: NaN in an output array, nothing handed to a take callback, a file output
 * absent. */
static void test_failure_leaves_nothing(void) {
  probs_t p = make_probs();
  for (int k = O_FILE; k < O_KINDS; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    input_t in;
    make_input(ctx, &in, K_COL64, p.A, p.n, p.n);
    output_t out;
    make_output(ctx, &out, k, p.n, p.n);
    ooc_options_t *o = opts_small();
    CU_ASSERT_EQUAL(ooc_opts_set_double(o, OOC_PARAM_CHECK_THRESHOLD, 1e-30), OOC_OK);
    CU_ASSERT_EQUAL(ooc_invert_m(ctx, in.h, out.h, o, NULL), OOC_ERR_ACCURACY);
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "residual check"));
    if (k == O_FILE) {
      char file[512];
      snprintf(file, sizeof file, "%.*s", (int)(strrchr(out.spec, ':') - out.spec), out.spec);
      CU_ASSERT_FALSE(tu_file_exists(file));
    } else if (k == O_CB) {
      CU_ASSERT_EQUAL(out.ts.tiles, 0);
    } else {
      double *X = output_result(&out);
      int64_t nan = 0;
      for (int64_t i = 0; i < p.n * p.n; i++) nan += isnan(X[i]);
      CU_ASSERT_EQUAL(nan, p.n * p.n);
      free(X);
    }
    ooc_opts_destroy(o);
    free_output(&out);
    free_input(&in);
    tu_ctx_done(ctx);
  }
  free_probs(&p);
}

/* Misuse is refused with a message that names the matrix. */
static void test_refusals(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 60;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 3);
  double *X = calloc((size_t)(n * n), sizeof(double));
  ooc_matrix_t *ha, *hx, *hsmall, *hcb;
  CU_ASSERT_EQUAL(ooc_matrix_array(ctx, A, OOC_DTYPE_F64, n, n, n - 1, OOC_LAYOUT_COL, &ha),
                  OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "leading dimension"));
  CU_ASSERT_PTR_NULL(ha);
  CU_ASSERT_EQUAL(ooc_matrix_array(ctx, A, OOC_DTYPE_AUTO, n, n, n, OOC_LAYOUT_COL, &ha),
                  OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_matrix_array(ctx, A, OOC_DTYPE_F64, 0, n, n, OOC_LAYOUT_COL, &ha),
                  OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_matrix_callback(ctx, n, n, NULL, NULL, NULL, &hcb), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_matrix_file(ctx, "", &hcb), OOC_ERR_ARG);
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, A, OOC_DTYPE_F64, n, n, n, OOC_LAYOUT_COL, &ha),
                        OOC_OK);
  CU_ASSERT_EQUAL(ooc_matrix_set_name(ha, "background covariance"), OOC_OK);
  int64_t rows = 0, cols = 0; /* shapes: of an array as given, of a file's dataset as stored */
  CU_ASSERT_EQUAL(ooc_matrix_shape(ctx, ha, &rows, &cols), OOC_OK);
  CU_ASSERT(rows == n && cols == n);
  tu_write_matrix(tu_path("shape.h5"), "S", 5, 3, A, 2);
  char spec[512];
  snprintf(spec, sizeof spec, "%s:/S", tu_path("shape.h5"));
  ooc_matrix_t *hf;
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_file(ctx, spec, &hf), OOC_OK);
  CU_ASSERT_EQUAL(ooc_matrix_shape(ctx, hf, &rows, &cols), OOC_OK);
  CU_ASSERT(rows == 5 && cols == 3);
  ooc_matrix_destroy(hf);
  snprintf(spec, sizeof spec, "%s:/S", tu_path("no-such.h5"));
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_file(ctx, spec, &hf), OOC_OK); /* opened only when used */
  CU_ASSERT_EQUAL(ooc_matrix_shape(ctx, hf, &rows, &cols), OOC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "no-such.h5"));
  ooc_matrix_destroy(hf);
  /* output overlapping the input: the input is never modified */
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, A + n, OOC_DTYPE_F64, n, n - 1, n, OOC_LAYOUT_COL,
                                         &hx), OOC_OK);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, NULL, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "overlaps the input array background "
                                                    "covariance"));
  ooc_matrix_destroy(hx);
  /* wrong output shape */
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, X, OOC_DTYPE_F64, n, n - 1, n, OOC_LAYOUT_COL,
                                         &hsmall), OOC_OK);
  ooc_options_t *o = opts_small();
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hsmall, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "the output is 60 x 59; the result is 60 x 60"));
  ooc_matrix_destroy(hsmall);
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_array(ctx, X, OOC_DTYPE_F64, n, n, n, OOC_LAYOUT_COL, &hx),
                        OOC_OK);
  /* resume and keep_failed do not apply */
  ooc_opts_set_int(o, OOC_PARAM_RESUME, 1);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "cannot be resumed"));
  ooc_opts_set_int(o, OOC_PARAM_RESUME, 0);
  ooc_opts_set_int(o, OOC_PARAM_KEEP_FAILED, 1);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, o, NULL), OOC_ERR_ARG);
  ooc_opts_set_int(o, OOC_PARAM_KEEP_FAILED, 0);
  /* an LU factor keeps its pivots beside it in the file: no array output */
  ooc_opts_set_str(o, OOC_PARAM_METHOD, "lu");
  CU_ASSERT_EQUAL(ooc_factor_m(ctx, ha, hx, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "an LU factor goes to an HDF5 file"));
  ooc_opts_set_str(o, OOC_PARAM_METHOD, "auto");
  /* a failing fill callback */
  fill_t fs = {A, n, 0, 2, 0};
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_callback(ctx, n, n, fill_fn, NULL, &fs, &hcb), OOC_OK);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, hcb, hx, o, NULL), OOC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "the fill callback returned 7"));
  CU_ASSERT(isnan(X[0]));
  /* a fill callback cannot be an output, nor read transposed */
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hcb, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "needs a take callback"));
  fs.fail_at = 0;
  ooc_opts_set_int(o, OOC_PARAM_TRANS_A, 1);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, hcb, hx, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "cannot be read transposed"));
  ooc_opts_set_int(o, OOC_PARAM_TRANS_A, 0);
  ooc_matrix_destroy(hcb);
  /* a failing take callback */
  take_t ts = {X, n, 0, 1};
  CU_ASSERT_EQUAL_FATAL(ooc_matrix_callback(ctx, n, n, NULL, take_fn, &ts, &hcb), OOC_OK);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hcb, o, NULL), OOC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "the take callback returned 3"));
  ooc_matrix_destroy(hcb);
  /* NaN in an input array: named by the handle's name */
  double keep = A[5 + 7 * n];
  A[5 + 7 * n] = NAN;
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, o, NULL), OOC_ERR_NONFINITE);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "background covariance: element [5, 7] is NaN"));
  A[5 + 7 * n] = keep;
  /* and then it works, transposed too (A^T's inverse is the transpose of A's) */
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, o, NULL), OOC_OK);
  double *T = malloc((size_t)(n * n) * sizeof(double));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) T[i + j * n] = A[j + i * n];
  ooc_opts_set_int(o, OOC_PARAM_TRANS_A, 1);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, hx, o, NULL), OOC_OK);
  CU_ASSERT(tu_inverse_ratio(n, T, X, EPS64) < 30);
  free(T);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, ha, NULL, o, NULL), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_invert_m(ctx, NULL, hx, o, NULL), OOC_ERR_ARG);
  ooc_opts_destroy(o);
  ooc_matrix_destroy(ha);
  ooc_matrix_destroy(hx);
  ooc_matrix_destroy(NULL);
  free(A);
  free(X);
  tu_ctx_done(ctx);
}

/* Every allocation (and, for a take output, every file operation of its staging file) failing
 * in turn: the call fails cleanly (no leak: tu_ctx_done counts blocks and open files), an output
 * array then holds NaN only, and a take callback got nothing unless the call succeeded. */
static void test_faults(void) {
  int64_t n = 100;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 13);
  for (int ko = O_COL64; ko <= O_CB; ko += O_CB - O_COL64) {
    for (int kind = OOC_FAULT_ALLOC; kind <= (ko == O_CB ? OOC_FAULT_IO : OOC_FAULT_ALLOC); kind++) {
      int64_t calls = 0, failed = 0, runs = 0;
      for (int64_t at = 0; at == 0 || at <= calls; at += ooc_max64(1, calls / 40)) {
        ooc_ctx_t *ctx = tu_ctx();
        input_t in;
        make_input(ctx, &in, K_COL64, A, n, n);
        output_t out;
        make_output(ctx, &out, ko, n, n);
        ooc_options_t *o = opts_small();
        ooc_report_t *r = ooc_report_create();
        if (at > 0) ooc_fault_arm(ctx, (ooc_fault_kind_t)kind, at, 0, EIO);
        ooc_status_t st = ooc_invert_m(ctx, in.h, out.h, o, r);
        if (at == 0) {
          CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
          calls = ooc_fault_calls(ctx, (ooc_fault_kind_t)kind);
        } else if (st != OOC_OK) {
          failed++;
          CU_ASSERT(st == OOC_ERR_NOMEM || st == OOC_ERR_IO);
          /* tiles reach the callback only after the check passed; a failure while handing
           * them over (reading the staged result back) leaves it part of the verified result,
           * and the message says how much */
          if (ko == O_CB && out.ts.tiles) {
            double res = NAN;
            ooc_report_get_double(r, OOC_R_RESIDUAL, &res);
            CU_ASSERT(res < 30);
            CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "had been handed to the take"));
          }
          if (ko == O_COL64) {
            int64_t nan = 0;
            for (int64_t i = 0; i < n * n; i++) nan += isnan(((double *)out.buf)[i]);
            CU_ASSERT_EQUAL(nan, n * n);
          }
        }
        if (at > 0) ooc_fault_arm(ctx, (ooc_fault_kind_t)kind, 0, 0, 0);
        runs++;
        ooc_report_destroy(r);
        ooc_opts_destroy(o);
        free_output(&out);
        free_input(&in);
        tu_ctx_done(ctx);
      }
      printf("\n  %s faults into %s: %lld runs, %lld failed cleanly", kind ? "io" : "alloc",
             ONAME[ko], (long long)runs, (long long)failed);
      CU_ASSERT(failed > 0);
    }
  }
  free(A);
}

int main(void) {
  static const tu_test_t tests[] = {{"every call, every input kind", test_every_input_kind},
                                    {"every call, every output kind", test_every_output_kind},
                                    {"column-major f64 array not copied", test_no_copy},
                                    {"a failed call leaves nothing", test_failure_leaves_nothing},
                                    {"refusals", test_refusals},
                                    {"allocation and I/O faults", test_faults},
                                    {NULL, NULL}};
  return tu_run("matrix", tests);
}
