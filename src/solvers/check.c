/* check.c: residual ratios by streaming. See check.h. */
#include "solvers/check.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/parloop.h"
#include "solvers/readahead.h"

double check_eps(int f32) { return f32 ? FLT_EPSILON / 2 : DBL_EPSILON / 2; }

static double max_colsum(const double *acc, int64_t n) {
  double m = 0;
  for (int64_t j = 0; j < n; j++) m = ooc_nanmax(m, acc[j]);
  return m;
}

/* Column block width for `nbuf` buffers of n rows (ours plus the reader's staging) within `mem` bytes: as wide as memory allows
 * (few, large reads), a multiple of the tile when at least one tile wide (aligned with chunks). */
static int64_t block_width(int64_t n, int64_t b, int64_t mem, int nbuf) {
  int64_t w = ooc_min64(n, mem / (8 * n * nbuf));
  if (w >= b) w = w / b * b;
  return ooc_max64(1, w);
}

/* A pass's strips (or bands) at most this many bytes, whatever memory allows: a pass with a few
 * vectors is bound by its reads, which need no more than a chunk column to be large; a wider
 * buffer only costs first touches (the device README's KINDS.md saw the GPU hosts' VMs grow their
 * memory at ~3 s per 8 GiB) and cache misses. Full checks and the solve's right-hand sides keep the width memory allows: there
 * the width is the number of passes over A. */
#define CHECK_STRIP_BYTES ((int64_t)512 << 20)

static int64_t strip_width(int64_t n, int64_t b, int64_t bw) {
  int64_t w = CHECK_STRIP_BYTES / (8 * ooc_max64(n, 1));
  w = w >= b ? w / b * b : b;
  return ooc_max64(1, ooc_min64(bw, w));
}

/* A pass's two buffers of n x bw doubles (or bw x n for row bands): the next strip is read into
 * one while the products run on the other (readahead.h). Allocated by the first pass by strips
 * (pass_bufs): where both sources stream rows (rows_pass) there is none. mem: the bytes a row
 * pass may hold at once. */
typedef struct {
  double *buf[2];
  int64_t bw, n, mem;
  ooc_ctx_t *ctx;
} pass_t;

static ooc_status_t pass_bufs(pass_t *ps) {
  for (int k = 0; k < 2; k++)
    if (!ps->buf[k] && !(ps->buf[k] = ooc_malloc(ps->ctx, (size_t)(ps->n * ps->bw) *
                                                              sizeof(double))))
      return OOC_FAIL(ps->ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
  return OOC_OK;
}

static void pass_free(pass_t *ps) {
  ooc_free(ps->ctx, ps->buf[0]);
  ooc_free(ps->ctx, ps->buf[1]);
}

/* LAPACK's sign(1, x): +1 for x >= 0 (and -0), -1 below. */
static double sgn(double x) { return x >= 0 || isnan(x) ? 1.0 : -1.0; }

/* ---- passes by rows, where the source streams them (ooc_source_t.rows) ----------------------
 * Issue 27: a pass by strips moves each byte through memory three times (page cache -> strip
 * buffer -> product), and the estimate's passes after the write were bound by that (16 GB/s on
 * the H200 host: 4.7 s of a 35 s run at n = 49152). A row pass does its arithmetic on each
 * window of rows while the read left it in cache. Per row r of M: the 'N' rows
 * Y[r, :] = (V[r, :] -) M[r, :] U, xi[r] = sgn(Y[r, 0]), and the sums over rows
 * M^T t (t[r] = xi[r] where t is xi) and |M|'s column sums, one partial per group of rows
 * (h5mat.h h5m_stream_rows: a group runs on one thread), added in group order: the same sums
 * whatever the thread count. */
#define ROWS_GROUPS 64
#define ROWS_WIN_BYTES ((int64_t)768 << 10) /* under chunkio's streaming-store size: in cache */
/* A solve check's right-hand sides at most for its pass over A by rows: up to here the pass is
 * bound by its reads; beyond, a GEMM over strips does the arithmetic faster than rows' dots. */
#define SOLVE_ROWS_MAX 8

/* The part of row r an 'N' row pass multiplies: all of it, or an LU factor's (LAPACK's layout)
 * U part (columns [r, n)) or unit lower L part (columns [0, r), then the 1 on the diagonal). */
typedef enum { ROWS_ALL = 0, ROWS_UPPER, ROWS_UNIT_LOWER } rows_part_t;

typedef struct {
  int64_t n, k;
  const double *U, *V; /* U n x k (NULL: no 'N' rows); V: Y = V - M U (NULL: Y = M U) */
  double *Y, *xi;      /* n x k; xi (NULL: none) */
  const double *t;     /* n x tk: M^T t summed (NULL: none); t may be xi, formed row by row */
  int64_t tk;
  double *pt, *pc;     /* per group n x tk, n: M^T t's and |M|'s column sums' partials */
  double *rabs;        /* |M|'s row sums, each in column order (NULL: none) */
  int part;            /* the part of each row the 'N' rows and rabs use (rows_part_t) */
} rows_t;

/* Four chains (a row at the speed of its loads) over blocks of 256 whose sums are added: the
 * rounding grows with 256 / 4 + n / 256 terms, not n (a BLAS GEMV's blocking does as much). */
static double dot(const double *a, const double *b, int64_t n) {
  double t = 0;
  for (int64_t j0 = 0; j0 < n; j0 += 256) {
    int64_t je = ooc_min64(n, j0 + 256), j = j0;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; j + 4 <= je; j += 4) {
      s0 += a[j] * b[j];
      s1 += a[j + 1] * b[j + 1];
      s2 += a[j + 2] * b[j + 2];
      s3 += a[j + 3] * b[j + 3];
    }
    for (; j < je; j++) s0 += a[j] * b[j];
    t += (s0 + s1) + (s2 + s3);
  }
  return t;
}

static void rows_run(void *user, int g, int64_t r0, int64_t nr, const double *rows, int64_t ld) {
  const rows_t *p = user;
  int64_t n = p->n;
  double *pt = p->pt ? p->pt + g * n * p->tk : NULL, *pc = p->pc ? p->pc + g * n : NULL;
  for (int64_t i = 0; i < nr; i++) {
    const double *row = rows + i * ld;
    int64_t r = r0 + i;
    int64_t lo = p->part == ROWS_UPPER ? r : 0, hi = p->part == ROWS_UNIT_LOWER ? r : n;
    for (int64_t c = 0; p->U && c < p->k; c++) {
      const double *u = p->U + c * n;
      double s = dot(row + lo, u + lo, hi - lo) + (p->part == ROWS_UNIT_LOWER ? u[r] : 0);
      p->Y[r + c * n] = p->V ? p->V[r + c * n] - s : s;
    }
    if (p->xi) p->xi[r] = sgn(p->Y[r]);
    for (int64_t c = 0; pt && c < p->tk; c++) {
      double a = p->t[r + c * n], *q = pt + c * n;
      for (int64_t j = 0; j < n; j++) q[j] += a * row[j];
    }
    if (pc)
      for (int64_t j = 0; j < n; j++) pc[j] += fabs(row[j]);
    if (p->rabs) {
      double a = 0;
      for (int64_t j = lo; j < hi; j++) a += fabs(row[j]);
      p->rabs[r] = a;
    }
  }
}

/* One row pass over M (n x n) as rows_t says, with tout = M^T t (n x p->tk, set) and colsum
 * (added to) where asked. *done = 0: M does not stream rows (nothing done; the caller passes by
 * strips). */
static ooc_status_t rows_pass(ooc_ctx_t *ctx, const ooc_source_t *M, rows_t *p, double *tout,
                              double *colsum, int64_t mem, int *done) {
  *done = 0;
  if (!M->rows) return OOC_OK;
  int64_t n = p->n, tk = tout ? p->tk : 0, parts = tk + (colsum ? 1 : 0);
  /* within mem: half for the partials (fewer groups for a large n or a small budget), half for
   * the threads' windows (each a window and its raw read) */
  int64_t groups = ooc_max64(1, ooc_min64(ROWS_GROUPS, ooc_min64(mem / 2, CHECK_STRIP_BYTES) /
                                          (8 * n * ooc_max64(parts, 1))));
  int64_t win = ooc_min64(ROWS_WIN_BYTES, mem / (4 * ooc_par_cpus(OOC_PAR_MAX_THREADS)));
  double *part = parts ? ooc_calloc(ctx, (size_t)(groups * n * parts), sizeof(double)) : NULL;
  if (parts && !part) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the check");
  p->pt = tout ? part : NULL;
  p->pc = colsum ? part + groups * n * tk : NULL;
  ooc_status_t st = M->rows(M->self, groups, win, rows_run, p, done);
  if (st == OOC_OK && *done) {
    if (tout) memset(tout, 0, (size_t)(n * tk) * sizeof(double));
    for (int64_t g = 0; g < groups; g++) {
      for (int64_t i = 0; i < n * tk; i++) tout[i] += p->pt[g * n * tk + i];
      for (int64_t j = 0; colsum && j < n; j++) colsum[j] += p->pc[g * n + j];
    }
  }
  ooc_free(ctx, part);
  return st;
}

/* A later pass over a source that streamed its rows for an earlier one: it must stream again. */
static ooc_status_t rows_pass_again(ooc_ctx_t *ctx, const ooc_source_t *M, rows_t *p,
                                    int64_t mem) {
  int again = 0;
  OOC_TRY(rows_pass(ctx, M, p, NULL, NULL, mem, &again));
  return again ? OOC_OK
               : OOC_FAIL(ctx, OOC_ERR_INTERNAL, "the factor streamed its rows once, then not");
}

/* ---- the inverse: full ratio, or Hager-Higham's estimate of ||I - A X||_1 -------------------- */

/* Streamed products with a source M (A or X, n x n) and k vectors V (n x k, ld n):
 * trans 'N': U = M V; 'T': U = M^T V. One pass over M in column blocks of ps->bw, read ahead.
 * colsum, when not NULL, accumulates |M| column sums (the 1-norm) on the way. Without it the
 * blocks come transposed where the source can (readahead.h ra_begin_t: a file's rows copied,
 * not transposed) and the GEMM flips its flag; with it they stay as they are, since their column
 * sums would become row sums of a block few rows tall. By rows instead where M streams them
 * (rows_pass: 'N', or 'T' with one vector). */
static ooc_status_t mul(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, const ooc_source_t *M,
                        char trans, const double *V, int64_t k, double *U, pass_t *ps,
                        double *colsum) {
  if (trans == 'N' || k == 1) { /* by rows where M streams them (M^T V: one vector) */
    rows_t rw = {n, k, trans == 'N' ? V : NULL, NULL, U, NULL, trans == 'N' ? NULL : V, 1,
                 NULL, NULL, NULL, ROWS_ALL};
    int done;
    OOC_TRY(rows_pass(ctx, M, &rw, trans == 'N' ? NULL : U, colsum, ps->mem, &done));
    if (done) return OOC_OK;
  }
  OOC_TRY(pass_bufs(ps));
  part_t cp = part_make(n, ps->bw);
  int64_t bi, bj;
  if (trans == 'N') memset(U, 0, (size_t)(n * k) * sizeof(double));
  readahead_t ra;
  if (colsum) ra_begin(&ra, M, n, 0, cp, ps->buf[0], ps->buf[1]);
  else ra_begin_t(&ra, M, n, 0, cp, ps->buf[0], ps->buf[1]);
  for (int64_t l = 0; l < cp.count; l++) {
    int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
    double *buf; /* M(:, l0 + [0, nl)), ld n, or (ra.trans) its transpose, ld nl */
    OOC_TRY(ra_next(&ra, &buf));
    if (colsum) o->colabs(n, nl, buf, n, colsum + l0, &bi, &bj);
    if (trans == 'N' && ra.trans)
      o->gemm('T', 'N', n, k, nl, 1.0, buf, nl, V + l0, n, 1.0, U, n);
    else if (trans == 'N')
      o->gemm('N', 'N', n, k, nl, 1.0, buf, n, V + l0, n, 1.0, U, n);
    else if (ra.trans)
      o->gemm('N', 'N', nl, k, n, 1.0, buf, nl, V, n, 0.0, U + l0, n);
    else
      o->gemm('T', 'N', nl, k, n, 1.0, buf, n, V, n, 0.0, U + l0, n);
  }
  ra_end(&ra);
  return OOC_OK;
}

/* The bit pattern of a double (check_fused's row sums of bits). */
static uint64_t dbits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static double asum(const double *v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += fabs(v[i]);
  return s; /* NaN in, NaN out */
}

/* Hager's method as Higham refined it (LAPACK dlacn2, ITMAX 5) for ||B||_1, B = I - A X, from
 * products with B and B^T only, plus the alternating vector and OOC_CHECK_PROBES random +-1
 * vectors in the first product. Every value it takes is ||B v||_1 / ||v||_1 for some v, so the
 * estimate never exceeds ||B||_1 (a failed check is a true failure); it can fall short of it
 * (docs/NUMERICS.md says by how much, in theory and as seen). */
/* The first product's vectors (n x (2 + OOC_CHECK_PROBES), ld n): column 0 x = (1/n) e, column 1
 * the alternating vector, columns 2.. the random +-1 probes (a fixed seed: reproducible). */
static void first_vectors(int64_t n, double *V) {
  const int64_t p = OOC_CHECK_PROBES;
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (int64_t i = 0; i < n; i++) {
    V[i] = 1.0 / (double)n;
    V[n + i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (n > 1 ? (double)i / (double)(n - 1) : 0.0));
  }
  for (int64_t i = 0; i < n * p; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    V[2 * n + i] = (s >> 63) ? 1.0 : -1.0;
  }
}

/* One pass over M by row bands (ps->bw rows by all n columns, read ahead): Y = V - M U for k
 * vectors (U, V, Y n x k, ld n) and, because a row band gives its rows of Y in full, their signs
 * xi = sgn(Y[:, 0]) and w = M^T xi on the way. The estimator's next product is B^T xi, whose
 * first factor is M^T xi (M = X for the left residual I - X A, A for the right one): that
 * product then needs one pass (over the other matrix) instead of two. colsum, when not NULL,
 * accumulates |M|'s column sums. By rows where M streams them (rows_pass), else transposed
 * bands where the source can, as in mul. */
static ooc_status_t mul_rows_sgn(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n,
                                 const ooc_source_t *M, const double *U, const double *V,
                                 int64_t k, double *Y, double *xi, double *w, pass_t *ps,
                                 double *colsum) {
  rows_t rw = {n, k, U, V, Y, xi, xi, 1, NULL, NULL, NULL, ROWS_ALL};
  int done;
  OOC_TRY(rows_pass(ctx, M, &rw, w, colsum, ps->mem, &done));
  if (done) return OOC_OK;
  OOC_TRY(pass_bufs(ps));
  int64_t bi, bj;
  part_t rp = part_make(n, ps->bw);
  memset(w, 0, (size_t)n * sizeof(double));
  readahead_t ra;
  if (colsum) ra_begin_rows(&ra, M, n, rp, ps->buf[0], ps->buf[1]);
  else ra_begin_rows_t(&ra, M, n, rp, ps->buf[0], ps->buf[1]);
  for (int64_t q = 0; q < rp.count; q++) {
    int64_t r0 = part_start(rp, q), nr = part_len(rp, q);
    double *buf; /* M(r0 + [0, nr), :), ld nr, or (ra.trans) its transpose, ld n */
    OOC_TRY(ra_next(&ra, &buf));
    if (colsum) o->colabs(nr, n, buf, nr, colsum, &bi, &bj);
    if (ra.trans) /* M(band, :) U */
      o->gemm('T', 'N', nr, k, n, 1.0, buf, n, U, n, 0.0, Y + r0, n);
    else
      o->gemm('N', 'N', nr, k, n, 1.0, buf, nr, U, n, 0.0, Y + r0, n);
    for (int64_t c = 0; c < k; c++)
      for (int64_t i = r0; i < r0 + nr; i++) Y[i + c * n] = V[i + c * n] - Y[i + c * n];
    for (int64_t i = r0; i < r0 + nr; i++) xi[i] = sgn(Y[i]);
    if (ra.trans) /* w += M(band, :)^T xi(band) */
      o->gemm('N', 'N', n, 1, nr, 1.0, buf, n, xi + r0, nr, 1.0, w, n);
    else
      o->gemm('T', 'N', n, 1, nr, 1.0, buf, nr, xi + r0, nr, 1.0, w, n);
  }
  ra_end(&ra);
  return OOC_OK;
}

/* The 'N' product B V (resid_mul's before issue 27): T = M1 V, Y = V - M2 T, with M2's pass by
 * row bands (mul_rows_sgn), so that xi = sgn(Y[:, 0]) and w = M2^T xi come with it. M1 = A and
 * M2 = X for the left residual, the other way round for the right one. col: V is a unit vector
 * e_j and M1 e_j is already at hand (resid_mul_t kept it), so M1 is not read at all. */
static ooc_status_t resid_mul_n(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n,
                                const ooc_source_t *A, const ooc_source_t *X, int left,
                                const double *V, int64_t k, const double *col, double *Y,
                                double *T, double *xi, double *w, pass_t *ps,
                                double *acc_a, double *acc_x) {
  const ooc_source_t *first = left ? A : X, *second = left ? X : A;
  if (col)
    memcpy(T, col, (size_t)n * sizeof(double));
  else
    OOC_TRY(mul(ctx, o, n, first, 'N', V, k, T, ps, first == X ? acc_x : acc_a));
  return mul_rows_sgn(ctx, o, n, second, T, V, k, Y, xi, w, ps, second == X ? acc_x : acc_a);
}

/* The 'T' product Y = B^T xi = xi - M1^T w given w = M2^T xi (resid_mul_n's, or the writer's):
 * one pass over M1 in column blocks. The estimator's next vector is e_j, j = iamax(Y) (LAPACK's
 * first largest |Y_j|), and its next product starts with M1 e_j: the column of M1 at the
 * largest |Y_j| so far is kept in col as the pass goes, so that product reads no column.
 * By rows where M streams them (rows_pass; then col is read after the pass), else transposed
 * strips where the source can, as in mul. */
static ooc_status_t resid_mul_t(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n,
                                const ooc_source_t *A, const ooc_source_t *X, int left,
                                const double *xi, const double *w, double *Y, pass_t *ps,
                                double *col, int64_t *jmax) {
  const ooc_source_t *M = left ? A : X;
  int64_t j = 0;
  rows_t rw = {n, 1, NULL, NULL, NULL, NULL, w, 1, NULL, NULL, NULL, ROWS_ALL};
  int done;
  OOC_TRY(rows_pass(ctx, M, &rw, Y, NULL, ps->mem, &done)); /* Y = M^T w, then the column */
  if (done) {
    for (int64_t i = 0; i < n; i++) {
      Y[i] = xi[i] - Y[i];
      if (i == 0 || fabs(Y[i]) > fabs(Y[j])) j = i; /* iamax's rule: strictly larger */
    }
    *jmax = j;
    return M->read(M->self, 0, j, n, 1, col, n);
  }
  OOC_TRY(pass_bufs(ps));
  part_t cp = part_make(n, ps->bw);
  readahead_t ra;
  ra_begin_t(&ra, M, n, 0, cp, ps->buf[0], ps->buf[1]);
  for (int64_t l = 0; l < cp.count; l++) {
    int64_t l0 = part_start(cp, l), nl = part_len(cp, l), jb = -1;
    double *buf; /* M(:, l0 + [0, nl)), ld n, or (ra.trans) its transpose, ld nl */
    OOC_TRY(ra_next(&ra, &buf));
    if (ra.trans)
      o->gemm('N', 'N', nl, 1, n, 1.0, buf, nl, w, n, 0.0, Y + l0, n);
    else
      o->gemm('T', 'N', nl, 1, n, 1.0, buf, n, w, n, 0.0, Y + l0, n);
    for (int64_t i = l0; i < l0 + nl; i++) {
      Y[i] = xi[i] - Y[i];
      if (i == 0 || fabs(Y[i]) > fabs(Y[j])) { /* iamax's rule: strictly larger */
        j = i;
        jb = i;
      }
    }
    if (jb >= 0 && ra.trans) /* column jb of M: row jb - l0 of the transposed strip */
      for (int64_t i = 0; i < n; i++) col[i] = buf[(jb - l0) + i * nl];
    else if (jb >= 0)
      memcpy(col, buf + (jb - l0) * n, (size_t)n * sizeof(double));
  }
  ra_end(&ra);
  *jmax = j;
  return OOC_OK;
}

/* B = I - A X, or I - X A with `left`. Y1: the first product B V already formed (the fused
 * check), else NULL; w1: with Y1, X^T sgn(B x) already formed (the fused check's writer), else
 * NULL. The iteration stops once the estimate reaches `stop` (a lower bound that already fails
 * needs no more passes; INFINITY: never). dlacn2's products, in the order of their passes:
 * each 'N' product's pass over M2 also forms the next 'T' product's first factor M2^T xi
 * (resid_mul_n), and each 'T' product's pass over M1 keeps the column M1 e_j that the next 'N'
 * product starts with (resid_mul_t), so after the first product (two passes; none when fused)
 * every product costs exactly one pass over one matrix (and, by rows, that one column read
 * after the pass: a row pass knows j only at its end). The
 * vectors, hence the values, are dlacn2's (sums in another order). W: 3 (2 + p) + 4 columns of n. */
static ooc_status_t estimate(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, const ooc_source_t *A,
                             const ooc_source_t *X, int left, const double *Y1, const double *w1,
                             double stop, pass_t *ps, double *W, double *acc_a,
                             double *acc_x, check_info_t *ci) {
  const int64_t p = OOC_CHECK_PROBES, k0 = 2 + p;
  double *V = W, *Y = V + n * k0, *T = Y + n * k0, *xi = T + n * k0, *xn = xi + n;
  double *w = xn + n, *col = w + n;
  first_vectors(n, V);
  if (Y1) {
    memcpy(Y, Y1, (size_t)(n * k0) * sizeof(double));
    for (int64_t i = 0; i < n; i++) xi[i] = sgn(Y[i]);
  } else {
    OOC_TRY(resid_mul_n(ctx, o, n, A, X, left, V, k0, NULL, Y, T, xi, w, ps, acc_a, acc_x));
  }
  ci->products = 1;
  OOC_TRY(ooc_tick(ctx, "check", 1.0 / CHECK_EST_MAX_PRODUCTS));
  double est = asum(Y, n);
  ci->probe = 0;
  for (int64_t c = 0; c < p; c++) /* ||t_c||_1 = n */
    ci->probe = ooc_nanmax(ci->probe, asum(Y + (2 + c) * n, n) / (double)n);
  double alt = 2.0 * asum(Y + n, n) / (3.0 * (double)n);
  double best = ooc_nanmax(ooc_nanmax(est, alt), ci->probe);
  if (n > 1 && isfinite(best) && best < stop) {
    if (Y1 && w1)
      memcpy(w, w1, (size_t)n * sizeof(double));
    else if (Y1) /* the first factor of B^T xi: one pass over the matrix the write did not see */
      OOC_TRY(mul(ctx, o, n, left ? X : A, 'T', xi, 1, w, ps, NULL));
    int64_t j = 0;
    OOC_TRY(resid_mul_t(ctx, o, n, A, X, left, xi, w, V, ps, col, &j));
    ci->products++;
    OOC_TRY(ooc_tick(ctx, "check", (double)ci->products / CHECK_EST_MAX_PRODUCTS));
    for (int iter = 2;; iter++) {
      memset(V, 0, (size_t)n * sizeof(double));
      V[j] = 1.0;
      OOC_TRY(resid_mul_n(ctx, o, n, A, X, left, V, 1, col, Y, T, xn, w, ps, NULL, NULL));
      ci->products++;
      OOC_TRY(ooc_tick(ctx, "check", (double)ci->products / CHECK_EST_MAX_PRODUCTS));
      double old = est;
      est = asum(Y, n);
      best = ooc_nanmax(best, est);
      if (!isfinite(est) || !(best < stop)) break;
      int same = 1;
      for (int64_t i = 0; i < n && same; i++) same = xn[i] == xi[i];
      if (same || est <= old) break; /* the sign vector repeats, or no progress */
      memcpy(xi, xn, (size_t)n * sizeof(double));
      int64_t jlast = j;
      OOC_TRY(resid_mul_t(ctx, o, n, A, X, left, xi, w, V, ps, col, &j));
      ci->products++;
      OOC_TRY(ooc_tick(ctx, "check", (double)ci->products / CHECK_EST_MAX_PRODUCTS));
      if (!(fabs(V[jlast]) != fabs(V[j]) && iter < 5)) break;
    }
  }
  ci->rnorm = best;
  return OOC_OK;
}

ooc_status_t check_inverse_ex(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                              const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                              int64_t mem, double *ratio, double *norm1_a, double *norm1_x,
                              check_info_t *info) {
  ooc_status_t st = OOC_OK;
  check_info_t ci_local, *ci = info ? info : &ci_local;
  memset(ci, 0, sizeof *ci);
  ci->probe = NAN;
  int64_t bw = block_width(n, b, mem, 4), p = OOC_CHECK_PROBES;
  if (!full) bw = strip_width(n, b, bw); /* the estimate's passes: Xj and Al their buffers */
  part_t cp = part_make(n, bw);
  /* full: X's and A's blocks; estimate: the passes' strips, if any pass needs them (ps) */
  double *Xj = full ? ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double)) : NULL;
  double *Al = full ? ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double)) : NULL;
  pass_t ps = {{NULL, NULL}, bw, n, mem / 2, ctx};
  /* full: a residual block; estimate: V, Y, T of 2 + p columns and the sign vector */
  double *Rj = ooc_malloc(ctx, (size_t)(n * (full ? bw : 3 * (2 + p) + 4)) * sizeof(double));
  double *acc_a = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_x = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_r = ooc_calloc(ctx, (size_t)(full ? bw : 1), sizeof(double));
  int64_t bi, bj;
  *ratio = NAN;
  if ((full && (!Xj || !Al)) || !Rj || !acc_a || !acc_x || !acc_r) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double rmax = 0;
  if (full) {
    for (int64_t j = 0; j < cp.count; j++) {
      int64_t c0 = part_start(cp, j), nc = part_len(cp, j);
      OOC_CHECK(st = X->read(X->self, 0, c0, n, nc, Xj, n));
      o->colabs(n, nc, Xj, n, acc_x + c0, &bi, &bj);
      memset(Rj, 0, (size_t)(n * nc) * sizeof(double));
      for (int64_t c = 0; c < nc; c++) Rj[c0 + c + c * n] = -1.0;
      for (int64_t l = 0; l < cp.count; l++) {
        int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
        OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
        if (j == 0) o->colabs(n, nl, Al, n, acc_a + l0, &bi, &bj);
        o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Xj + l0, n, 1.0, Rj, n);
      }
      memset(acc_r, 0, (size_t)nc * sizeof(double));
      o->colabs(n, nc, Rj, n, acc_r, &bi, &bj);
      rmax = ooc_nanmax(rmax, max_colsum(acc_r, nc));
      OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / cp.count));
    }
    ci->rnorm = rmax;
    ci->products = (int)cp.count; /* block products: every column of I - A X */
  } else {
    /* two strip buffers serve both sources (the passes alternate; each reads ahead) */
    OOC_CHECK(st = estimate(ctx, o, n, A, X, 0, NULL, NULL, INFINITY, &ps, Rj, acc_a, acc_x, ci));
    rmax = ci->rnorm;
  }
  *norm1_a = max_colsum(acc_a, n);
  *norm1_x = max_colsum(acc_x, n);
  double scale = (double)n * *norm1_a * *norm1_x * eps;
  *ratio = rmax / scale;
  if (!full) ci->probe /= scale;
done:
  ooc_free(ctx, Xj);
  ooc_free(ctx, Al);
  pass_free(&ps);
  ooc_free(ctx, Rj);
  ooc_free(ctx, acc_a);
  ooc_free(ctx, acc_x);
  ooc_free(ctx, acc_r);
  return st;
}

ooc_status_t check_inverse(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                           const ooc_source_t *A, const ooc_source_t *X, int full, double eps,
                           int64_t mem, double *ratio, double *norm1_a, double *norm1_x) {
  return check_inverse_ex(ctx, o, n, b, A, X, full, eps, mem, ratio, norm1_a, norm1_x, NULL);
}

/* ---- a probe product formed during the load (check.h) ----------------------------------- */

struct check_probe {
  ooc_ctx_t *ctx;
  const ooc_ops_t *o;
  int64_t n;
  double *V, *AV; /* n x CHECK_PROBE_K each: the vectors, A V */
  int64_t cols;   /* columns of A seen */
  int over;       /* a strip outside the matrix */
};

int64_t check_probe_bytes(int64_t n) {
  return (int64_t)sizeof(check_probe_t) + 16 * n * CHECK_PROBE_K;
}

void check_probe_destroy(check_probe_t *p) {
  if (!p) return;
  ooc_free(p->ctx, p->V);
  ooc_free(p->ctx, p->AV);
  ooc_free(p->ctx, p);
}

ooc_status_t check_probe_create(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n,
                                check_probe_t **out) {
  *out = NULL;
  check_probe_t *p = ooc_calloc(ctx, 1, sizeof *p);
  if (p) {
    *p = (check_probe_t){.ctx = ctx, .o = o, .n = n};
    p->V = ooc_malloc(ctx, (size_t)(n * CHECK_PROBE_K) * sizeof(double));
    p->AV = ooc_calloc(ctx, (size_t)(n * CHECK_PROBE_K), sizeof(double));
  }
  if (!p || !p->V || !p->AV) {
    check_probe_destroy(p);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check's probes "
                    "(n = %lld)", (long long)n);
  }
  first_vectors(n, p->V);
  *out = p;
  return OOC_OK;
}

void check_probe_reset(check_probe_t *p) {
  memset(p->AV, 0, (size_t)(p->n * CHECK_PROBE_K) * sizeof(double));
  p->cols = 0;
  p->over = 0;
}

void check_probe_a(check_probe_t *p, int64_t c0, int64_t nc, const double *strip, int64_t ld) {
  int64_t n = p->n;
  if (c0 < 0 || nc < 0 || c0 + nc > n) {
    p->over = 1;
    return;
  }
  p->o->gemm('N', 'N', n, CHECK_PROBE_K, nc, 1.0, strip, ld, p->V + c0, n, 1.0, p->AV, n);
  p->cols += nc;
}

int check_probe_done(const check_probe_t *p) { return p && !p->over && p->cols == p->n; }
const double *check_probe_v(const check_probe_t *p) { return p->V; }
const double *check_probe_av(const check_probe_t *p) { return p->AV; }

/* ---- the fused first product (check.h) ------------------------------------------------------ */

#define FUSED_K CHECK_PROBE_K
#define FUSED_JOBS 8  /* the tap's row jobs and check_fused_band's column jobs (and threads) */

struct check_fused {
  ooc_ctx_t *ctx;
  const ooc_ops_t *o;
  int64_t n;
  const check_probe_t *a; /* V and A V (the load's) */
  double *Z;          /* n x FUSED_K: X (A V) */
  double *acc_x;      /* ||X||_1's column sums */
  double *pacc;       /* FUSED_JOBS x n: the tap's jobs' partial column sums */
  int64_t *row_cov, *col_cov; /* elements of X seen per row and per column */
  int over;           /* a chunk of X outside the matrix */
  /* check_fused_band: xi = sgn(B x) row band by row band and w = X^T xi, the second product's
   * first factor; elements of the bands per row and per column; band_bad: a band came before
   * its rows were complete, or outside the matrix */
  double *xi, *w;
  int64_t *brow, *bcol;
  int band_bad;
  /* per row, the sum (mod 2^64) of the float64 bit patterns of X's elements: as the tap saw
   * them (the file's bytes) and as the bands gave them; unequal, the bands are not what the file
   * holds (a fault between the store and the file) and the finish reads X instead */
  uint64_t *tap_bits, *band_bits;
  uint64_t *pbits; /* FUSED_JOBS x n: check_fused_band's jobs' partial bit sums */
};

int64_t check_fused_bytes(int64_t n) {
  return (int64_t)sizeof(check_fused_t) + 8 * n * (FUSED_K + 1 + FUSED_JOBS) + 16 * n +
         48 * n + 8 * n * FUSED_JOBS;
}

void check_fused_destroy(check_fused_t *f) {
  if (!f) return;
  ooc_ctx_t *ctx = f->ctx;
  ooc_free(ctx, f->Z);
  ooc_free(ctx, f->acc_x);
  ooc_free(ctx, f->pacc);
  ooc_free(ctx, f->row_cov);
  ooc_free(ctx, f->col_cov);
  ooc_free(ctx, f->xi);
  ooc_free(ctx, f->w);
  ooc_free(ctx, f->brow);
  ooc_free(ctx, f->bcol);
  ooc_free(ctx, f->tap_bits);
  ooc_free(ctx, f->band_bits);
  ooc_free(ctx, f->pbits);
  ooc_free(ctx, f);
}

ooc_status_t check_fused_create(ooc_ctx_t *ctx, const ooc_ops_t *o, const check_probe_t *a,
                                check_fused_t **out) {
  *out = NULL;
  check_fused_t *f = ooc_calloc(ctx, 1, sizeof *f);
  if (!f) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
  int64_t n = a->n;
  f->ctx = ctx;
  f->o = o;
  f->n = n;
  f->a = a;
  size_t nk = (size_t)(n * FUSED_K);
  f->Z = ooc_calloc(ctx, nk, sizeof(double));
  f->acc_x = ooc_calloc(ctx, (size_t)n, sizeof(double));
  f->pacc = ooc_malloc(ctx, (size_t)(FUSED_JOBS * n) * sizeof(double));
  f->row_cov = ooc_calloc(ctx, (size_t)n, sizeof(int64_t));
  f->col_cov = ooc_calloc(ctx, (size_t)n, sizeof(int64_t));
  f->xi = ooc_calloc(ctx, (size_t)n, sizeof(double));
  f->w = ooc_calloc(ctx, (size_t)n, sizeof(double));
  f->brow = ooc_calloc(ctx, (size_t)n, sizeof(int64_t));
  f->bcol = ooc_calloc(ctx, (size_t)n, sizeof(int64_t));
  f->tap_bits = ooc_calloc(ctx, (size_t)n, sizeof(uint64_t));
  f->band_bits = ooc_calloc(ctx, (size_t)n, sizeof(uint64_t));
  f->pbits = ooc_malloc(ctx, (size_t)(n * FUSED_JOBS) * sizeof(uint64_t));
  if (!f->Z || !f->acc_x || !f->pacc || !f->row_cov || !f->col_cov || !f->xi ||
      !f->w || !f->brow || !f->bcol || !f->tap_bits || !f->band_bits || !f->pbits) {
    check_fused_destroy(f);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check (n = %lld)",
                    (long long)n);
  }
  *out = f;
  return OOC_OK;
}

void check_fused_reset_x(check_fused_t *f) {
  int64_t n = f->n;
  memset(f->Z, 0, (size_t)(n * FUSED_K) * sizeof(double));
  memset(f->acc_x, 0, (size_t)n * sizeof(double));
  memset(f->row_cov, 0, (size_t)n * sizeof(int64_t));
  memset(f->col_cov, 0, (size_t)n * sizeof(int64_t));
  memset(f->w, 0, (size_t)n * sizeof(double));
  memset(f->brow, 0, (size_t)n * sizeof(int64_t));
  memset(f->bcol, 0, (size_t)n * sizeof(int64_t));
  memset(f->tap_bits, 0, (size_t)n * sizeof(uint64_t));
  memset(f->band_bits, 0, (size_t)n * sizeof(uint64_t));
  f->band_bad = 0;
}

/* One job of the tap: rows [i0, i1) of the chunk (row-major, the file's dtype: float32 values
 * exactly in float64), in one pass: each row's products with A V into Z, its bit sum, and the
 * columns' partial |x| sums into this job's pacc row (summed in job order after the loop, so the
 * result does not depend on which thread ran which job). */
typedef struct {
  check_fused_t *f;
  int64_t r0, c0, rows, cols, ld, jobs;
  const void *data;
  int es;
} tap_job_t;

static void tap_run(void *arg, int64_t k, int worker) {
  (void)worker;
  const tap_job_t *t = arg;
  check_fused_t *f = t->f;
  int64_t n = f->n, cols = t->cols, i0 = t->rows * k / t->jobs, i1 = t->rows * (k + 1) / t->jobs;
  double *acc = f->pacc + k * n;
  const double *AV = f->a->AV + t->c0; /* column q of A V at AV + q n */
  memset(acc, 0, (size_t)cols * sizeof(double));
  for (int64_t i = i0; i < i1; i++) {
    const double *rd = (const double *)t->data + i * t->ld;
    const float *rf = (const float *)t->data + i * t->ld;
    double z[FUSED_K] = {0};
    uint64_t bits = 0;
    for (int64_t c = 0; c < cols; c++) {
      double x = t->es == 8 ? rd[c] : (double)rf[c];
      acc[c] += fabs(x);
      bits += dbits(x);
      for (int q = 0; q < FUSED_K; q++) z[q] += x * AV[c + q * n];
    }
    f->tap_bits[t->r0 + i] += bits;
    for (int q = 0; q < FUSED_K; q++) f->Z[t->r0 + i + q * n] += z[q];
  }
}

/* The chunk is row-major (rows x cols, stride ld): Z[r0.., :] += chunk A V[c0.., :], ||X||_1's
 * column sums and the rows' bit sums, in one pass over the chunk split by rows over the CPUs
 * (the tap runs beside HDF5's write of the chunk, and a chunk the writer must wait for is one
 * the file waits for: as OpenBLAS's gemm with 6 columns plus a pass of its own on one thread,
 * it took 0.09-0.12 s of a 0.36-0.41 s write of 512 MB on a 2-core VM). */
void check_fused_x(void *user, int64_t r0, int64_t c0, int64_t rows, int64_t cols,
                   const void *data, int es, int64_t ld) {
  check_fused_t *f = user;
  int64_t n = f->n;
  if (r0 < 0 || c0 < 0 || r0 + rows > n || c0 + cols > n || (es != 4 && es != 8)) {
    f->over = 1;
    return;
  }
  for (int64_t i = 0; i < rows; i++) f->row_cov[r0 + i] += cols;
  for (int64_t c = 0; c < cols; c++) f->col_cov[c0 + c] += rows;
  int64_t jobs = ooc_min64(FUSED_JOBS, ooc_max64(1, rows / 64));
  tap_job_t tj = {f, r0, c0, rows, cols, ld, jobs, data, es};
  ooc_parallel(ooc_par_cpus(FUSED_JOBS), jobs, tap_run, &tj);
  for (int64_t k = 0; k < jobs; k++)
    for (int64_t c = 0; c < cols; c++) f->acc_x[c0 + c] += f->pacc[k * n + c];
}

/* One job of check_fused_band: columns [q0, q1) of the band (relative to its first column),
 * w for them and its own partial row bit sums (the jobs' column ranges are disjoint, so w needs
 * no lock; the sums mod 2^64 are added up after the loop, in any order). */
typedef struct {
  check_fused_t *f;
  int64_t r0, nr, c0, nc, ld, jobs;
  const double *data;
  int trans, f32;
} band_job_t;

static void band_run(void *arg, int64_t k, int worker) {
  (void)worker;
  const band_job_t *b = arg;
  check_fused_t *f = b->f;
  int64_t q0 = b->nc * k / b->jobs, q1 = b->nc * (k + 1) / b->jobs, nr = b->nr, ld = b->ld;
  const double *xi = f->xi + b->r0, *data = b->data;
  uint64_t *bits = f->pbits + k * f->n;
  double *w = f->w + b->c0;
  int f32 = b->f32;
  memset(bits, 0, (size_t)nr * sizeof(uint64_t));
  if (!b->trans) {
    for (int64_t c = q0; c < q1; c++) {
      const double *col = data + c * ld;
      double s = 0;
      for (int64_t i = 0; i < nr; i++) {
        double x = f32 ? (double)(float)col[i] : col[i]; /* what a float32 file holds */
        s += x * xi[i];
        bits[i] += dbits(x);
      }
      w[c] += s;
    }
  } else {
    for (int64_t i = 0; i < nr; i++) {
      const double *row = data + i * ld;
      double xv = xi[i];
      uint64_t h = 0;
      for (int64_t c = q0; c < q1; c++) {
        double x = f32 ? (double)(float)row[c] : row[c];
        w[c] += x * xv;
        h += dbits(x);
      }
      bits[i] += h;
    }
  }
}

void check_fused_band(check_fused_t *f, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                      const double *data, int64_t ld, int trans, int f32) {
  int64_t n = f->n;
  if (r0 < 0 || nr < 0 || c0 < 0 || nc < 0 || r0 + nr > n || c0 + nc > n) {
    f->band_bad = 1;
    return;
  }
  for (int64_t i = r0; i < r0 + nr; i++) {
    if (f->row_cov[i] != n) f->band_bad = 1; /* its row of X (A V) is not complete yet */
    f->xi[i] = sgn(f->a->V[i] - f->Z[i]);        /* as check_fused_finish forms B x from Z */
    f->brow[i] += nc;
  }
  for (int64_t c = c0; c < c0 + nc; c++) f->bcol[c] += nr;
  /* w(c0..) += X(r0.., c0..)^T xi and the rows' bit sums: one pass over the band (as large as
   * the writer's tile row), split by columns over the CPUs, so the writer's thread waits for a
   * memory pass at the machine's bandwidth, not at one core's */
  int64_t jobs = ooc_min64(FUSED_JOBS, ooc_max64(1, nc / 64));
  band_job_t bj = {f, r0, nr, c0, nc, ld, jobs, data, trans, f32};
  ooc_parallel(ooc_par_cpus(FUSED_JOBS), jobs, band_run, &bj);
  for (int64_t k = 0; k < jobs; k++)
    for (int64_t i = 0; i < nr; i++) f->band_bits[r0 + i] += f->pbits[k * n + i];
}

/* Every element of X in exactly one band, each band after its rows were complete, and the bands'
 * values those the tap saw go to the file (row sums of their bits). */
static int band_complete(const check_fused_t *f) {
  if (f->band_bad) return 0;
  for (int64_t i = 0; i < f->n; i++)
    if (f->brow[i] != f->n || f->bcol[i] != f->n || f->band_bits[i] != f->tap_bits[i]) return 0;
  return 1;
}

int check_fused_complete(const check_fused_t *f) {
  if (!f || f->over || !check_probe_done(f->a)) return 0;
  for (int64_t i = 0; i < f->n; i++)
    if (f->row_cov[i] != f->n || f->col_cov[i] != f->n) return 0;
  return 1;
}

ooc_status_t check_fused_finish(ooc_ctx_t *ctx, check_fused_t *f, int64_t b,
                                const double *colnorm_a, const ooc_source_t *A,
                                const ooc_source_t *X, double eps, int64_t mem, double stop_ratio,
                                double *ratio, double *norm1_a, double *norm1_x,
                                check_info_t *info) {
  ooc_status_t st = OOC_OK;
  int64_t n = f->n, bw = strip_width(n, b, block_width(n, b, mem, 4));
  check_info_t ci_local, *ci = info ? info : &ci_local;
  memset(ci, 0, sizeof *ci);
  ci->probe = NAN;
  *ratio = NAN;
  if (!check_fused_complete(f))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "the fused check saw %s of A and X (n = %lld)",
                    f->over || f->a->over ? "a block outside" : "not all", (long long)n);
  pass_t ps = {{NULL, NULL}, bw, n, mem / 2, ctx};
  double *W = ooc_malloc(ctx, (size_t)(n * (3 * FUSED_K + 4)) * sizeof(double));
  if (!W) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  *norm1_a = max_colsum(colnorm_a, n);
  *norm1_x = max_colsum(f->acc_x, n);
  double scale = (double)n * *norm1_a * *norm1_x * eps;
  /* the writer's X^T sgn(B x), if every band came and its signs are those of B x below */
  int band = band_complete(f);
  /* B V = V - X (A V), the first product, from what the load and the write saw */
  for (int64_t i = 0; i < n * FUSED_K; i++) f->Z[i] = f->a->V[i] - f->Z[i];
  for (int64_t i = 0; i < n && band; i++) band = sgn(f->Z[i]) == f->xi[i];
  OOC_CHECK(st = estimate(ctx, f->o, n, A, X, 1, f->Z, band ? f->w : NULL, stop_ratio * scale,
                          &ps, W, NULL, NULL, ci));
  ci->band = band && ci->products > 1;
  *ratio = ci->rnorm / scale;
  ci->probe /= scale;
done:
  pass_free(&ps);
  ooc_free(ctx, W);
  return st;
}

static double absmax(const double *v, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = ooc_nanmax(m, fabs(v[i]));
  return m;
}

/* rowsum[i] += sum_q |S[i, q]| over the nl columns of an n-row strip (ld n): rows split among
 * the pool's threads, each row summed in column order (the same sums on any thread count). */
typedef struct {
  const double *S;
  int64_t n, nl;
  double *rowsum;
} rowabs_t;

#define ROWABS_ROWS 4096

static void rowabs_job(void *arg, int64_t k, int worker) {
  (void)worker;
  const rowabs_t *a = arg;
  int64_t i0 = k * ROWABS_ROWS, i1 = ooc_min64(a->n, i0 + ROWABS_ROWS);
  for (int64_t q = 0; q < a->nl; q++) {
    const double *c = a->S + q * a->n;
    for (int64_t i = i0; i < i1; i++) a->rowsum[i] += fabs(c[i]);
  }
}

static void rowabs_add(int64_t n, int64_t nl, const double *S, double *rowsum) {
  rowabs_t a = {S, n, nl, rowsum};
  ooc_parallel(ooc_par_cpus(OOC_PAR_MAX_THREADS), ooc_cdiv64(n, ROWABS_ROWS), rowabs_job, &a);
}

/* The solve ratio with A given either as itself (L == NULL... see check.h) or as a factor L:
 * then A X = L (L^T X) is formed strip by strip of L, Y_l = L[:, l]^T X, R += L[:, l] Y_l,
 * one pass over L per block of right-hand sides, and ||A||_inf is `anorm` when > 0, else the
 * bound ||L||_inf ||L||_1. Per block of bw right-hand sides (no wider than m), X's and B's
 * block are read, then the pass over A (or L) in strips of aw columns reads the next strip in
 * the background while the GEMMs run on this one (readahead.h): with m right-hand sides the pass
 * does 2 n^2 m flops, as long as its read at m in the hundreds. The two strip buffers take at
 * most the room one strip of bw took before, CHECK_STRIP_BYTES each. */
static ooc_status_t solve_ratio(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *A, int factored, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x) {
  ooc_status_t st = OOC_OK;
  int64_t bw = block_width(n, b, mem, factored ? 6 : 5);
  int64_t aw = strip_width(n, b, bw >= 2 * b ? bw / 2 / b * b : ooc_max64(1, bw / 2));
  bw = ooc_min64(bw, ooc_max64(m, 1)); /* no wider than B: one pass over A for m <= bw */
  part_t cp = part_make(m, bw), ap = part_make(n, aw);
  double *Xj = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Rj = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double));
  double *Al[2] = {NULL, NULL}; /* A's strips: allocated by the first block passing by strips */
  double *rowsum = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_x = ooc_calloc(ctx, (size_t)bw, sizeof(double));
  double *b_inf = ooc_calloc(ctx, (size_t)bw, sizeof(double));
  double *colsum = factored ? ooc_calloc(ctx, (size_t)n, sizeof(double)) : NULL;
  double *Yl = factored ? ooc_malloc(ctx, (size_t)(aw * bw) * sizeof(double)) : NULL;
  int64_t bi, bj;
  *ratio = NAN;
  *norm1_x = 0;
  if (!Xj || !Rj || !rowsum || !acc_x || !b_inf || (factored && (!colsum || !Yl))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double worst = 0, anorm_inf = 0;
  for (int64_t j = 0; j < cp.count; j++) {
    int64_t c0 = part_start(cp, j), nc = part_len(cp, j);
    OOC_CHECK(st = X->read(X->self, 0, c0, n, nc, Xj, n));
    OOC_CHECK(st = B->read(B->self, 0, c0, n, nc, Rj, n));
    memset(acc_x, 0, (size_t)nc * sizeof(double));
    o->colabs(n, nc, Xj, n, acc_x, &bi, &bj);
    *norm1_x = ooc_nanmax(*norm1_x, max_colsum(acc_x, nc));
    for (int64_t c = 0; c < nc; c++) b_inf[c] = absmax(Rj + c * n, n);
    int done = 0;
    if (!factored && nc <= SOLVE_ROWS_MAX) { /* R = B - A X by rows (the norms take no sign) */
      rows_t rw = {n, nc, Xj, Rj, Rj, NULL, NULL, 0, NULL, NULL, j == 0 ? rowsum : NULL, ROWS_ALL};
      OOC_CHECK(st = rows_pass(ctx, A, &rw, NULL, NULL, mem / 2, &done));
    }
    for (int k = 0; k < 2 && !done; k++)
      if (!Al[k] && !(Al[k] = ooc_malloc(ctx, (size_t)(n * aw) * sizeof(double)))) {
        st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
        goto done;
      }
    readahead_t ra; /* until ra_end: no context, no reads (a failed ra_next ends it) */
    if (!done) ra_begin(&ra, A, n, 0, ap, Al[0], Al[1]);
    for (int64_t i = 0; i < n * nc && !done; i++) Rj[i] = -Rj[i]; /* R = A X - B, streaming A */
    for (int64_t l = 0; l < ap.count && !done; l++) {
      int64_t l0 = part_start(ap, l), nl = part_len(ap, l);
      double *S;
      OOC_CHECK(st = ra_next(&ra, &S));
      if (j == 0) rowabs_add(n, nl, S, rowsum);
      if (factored) {
        if (j == 0) o->colabs(n, nl, S, n, colsum + l0, &bi, &bj);
        o->gemm('T', 'N', nl, nc, n, 1.0, S, n, Xj, n, 0.0, Yl, nl);
        o->gemm('N', 'N', n, nc, nl, 1.0, S, n, Yl, nl, 1.0, Rj, n);
      } else {
        o->gemm('N', 'N', n, nc, nl, 1.0, S, n, Xj + l0, n, 1.0, Rj, n);
      }
    }
    if (!done) ra_end(&ra);
    if (j == 0)
      anorm_inf = !factored ? absmax(rowsum, n)
                  : anorm > 0 ? anorm : absmax(rowsum, n) * max_colsum(colsum, n);
    for (int64_t c = 0; c < nc; c++) {
      double r_inf = absmax(Rj + c * n, n), x_inf = absmax(Xj + c * n, n);
      worst = ooc_nanmax(worst, r_inf / (eps * (anorm_inf * x_inf + b_inf[c]) * (double)n));
    }
    OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / cp.count));
  }
  *ratio = worst;
done:
  ooc_free(ctx, Xj);
  ooc_free(ctx, Rj);
  ooc_free(ctx, Al[0]);
  ooc_free(ctx, Al[1]);
  ooc_free(ctx, rowsum);
  ooc_free(ctx, acc_x);
  ooc_free(ctx, b_inf);
  ooc_free(ctx, colsum);
  ooc_free(ctx, Yl);
  return st;
}

ooc_status_t check_solve(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m, int64_t b,
                         const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *X,
                         double eps, int64_t mem, double *ratio, double *norm1_x) {
  return solve_ratio(ctx, o, n, m, b, A, 0, 0, B, X, eps, mem, ratio, norm1_x);
}

ooc_status_t check_solve_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t m,
                                int64_t b, const ooc_source_t *L, double anorm,
                                const ooc_source_t *B, const ooc_source_t *X, double eps,
                                int64_t mem, double *ratio, double *norm1_x) {
  return solve_ratio(ctx, o, n, m, b, L, 1, anorm, B, X, eps, mem, ratio, norm1_x);
}

/* The probe residual R = A T - L (L^T T) (T: n x p, ld n; the sign of R's columns does not
 * matter to their norms) by rows, where L streams them: Z = L^T T summed over L's rows in one
 * pass, then A T - L Z row by row in a second; A T is the load's (AT) or formed here (a pass
 * over A, by rows where A streams them, adding |A|'s column sums to acc_a). Two passes by rows
 * move L's bytes through memory twice, where one by strips moved them three times, with no
 * read ahead. *done = 0: L does not stream (nothing done). */
static ooc_status_t factor_rows(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                                const ooc_source_t *A, const ooc_source_t *L, const double *T,
                                int64_t p, const double *AT, int64_t mem, double *R,
                                double *acc_a, int *done) {
  *done = 0;
  if (!L->rows) return OOC_OK;
  ooc_status_t st = OOC_OK;
  double *Z = ooc_malloc(ctx, (size_t)(n * p) * sizeof(double));
  double *ATf = AT ? NULL : ooc_malloc(ctx, (size_t)(n * p) * sizeof(double));
  pass_t ps = {{NULL, NULL}, strip_width(n, b, block_width(n, b, mem, 4)), n, mem / 2, ctx};
  if (!Z || (!AT && !ATf)) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  rows_t z = {n, 0, NULL, NULL, NULL, NULL, T, p, NULL, NULL, NULL, ROWS_ALL};
  OOC_CHECK(st = rows_pass(ctx, L, &z, Z, NULL, mem / 2, done));
  if (!*done) goto done;
  if (!AT) OOC_CHECK(st = mul(ctx, o, n, A, 'N', T, p, ATf, &ps, acc_a));
  rows_t y = {n, p, Z, AT ? AT : ATf, R, NULL, NULL, 0, NULL, NULL, NULL, ROWS_ALL};
  st = rows_pass_again(ctx, L, &y, mem / 2);
done:
  pass_free(&ps);
  ooc_free(ctx, Z);
  ooc_free(ctx, ATf);
  return st;
}

ooc_status_t check_mul_rows(ooc_ctx_t *ctx, int64_t n, int64_t k, const ooc_source_t *M,
                            const double *X, double *Y, int64_t mem, int *done) {
  *done = 0;
  if (!M->rows || k > SOLVE_ROWS_MAX) return OOC_OK;
  rows_t rw = {n, k, X, NULL, Y, NULL, NULL, 0, NULL, NULL, NULL, ROWS_ALL};
  return rows_pass(ctx, M, &rw, NULL, NULL, mem, done);
}

ooc_status_t check_lu_rows(ooc_ctx_t *ctx, int64_t n, int64_t k, const ooc_source_t *F,
                           const double *X, double *V, double *Y, double *rowU, double *rowL,
                           int64_t mem, int *done) {
  *done = 0;
  if (!F->rows || k > SOLVE_ROWS_MAX) return OOC_OK;
  rows_t u = {n, k, X, NULL, V, NULL, NULL, 0, NULL, NULL, rowU, ROWS_UPPER};
  OOC_TRY(rows_pass(ctx, F, &u, NULL, NULL, mem, done));
  if (!*done) return OOC_OK;
  rows_t l = {n, k, V, NULL, Y, NULL, NULL, 0, NULL, NULL, rowL, ROWS_UNIT_LOWER};
  return rows_pass_again(ctx, F, &l, mem);
}

ooc_status_t check_factor(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t n, int64_t b,
                          const ooc_source_t *A, const ooc_source_t *L, int full, double eps,
                          int64_t mem, const check_probe_t *probe, const double *colnorm_a,
                          double *ratio, double *norm1_a, int *l_passes) {
  ooc_status_t st = OOC_OK;
  if (l_passes) *l_passes = 0;
  int loaded = !full && colnorm_a && check_probe_done(probe); /* A T formed by the load */
  int64_t bw = block_width(n, b, mem, 4), p = loaded ? CHECK_PROBE_K : OOC_CHECK_PROBES;
  if (!full) bw = strip_width(n, b, bw); /* the probes' passes */
  int64_t rc = full ? bw : p; /* columns of the residual block */
  part_t cp = part_make(n, bw);
  double *Al = NULL, *Yl = NULL; /* the strips' buffers: none where the probes go by rows */
  double *Rj = ooc_malloc(ctx, (size_t)(n * rc) * sizeof(double));
  double *acc_a = ooc_calloc(ctx, (size_t)n, sizeof(double));
  double *acc_r = ooc_calloc(ctx, (size_t)rc, sizeof(double));
  double *t = full || loaded ? NULL : ooc_malloc(ctx, (size_t)(n * p) * sizeof(double));
  const double *tp = loaded ? check_probe_v(probe) : t;
  double *tn = full ? NULL : ooc_calloc(ctx, (size_t)p, sizeof(double)); /* ||t_c||_1 */
  int64_t bi, bj;
  *ratio = NAN;
  if (!Rj || !acc_a || !acc_r || (!full && (!tp || !tn))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  double rmax = 0;
  /* Residual block R = L L^T T - A T for T = the identity's columns [c0, c0+nc) (full) or the
   * probe vectors: A T by streaming A, L (L^T T) by streaming L, both by column strips. */
  int64_t nblocks = full ? cp.count : 1;
  if (!full && !loaded) {
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n * p; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      t[i] = (s >> 63) ? 1.0 : -1.0;
    }
  }
  for (int64_t c = 0; !full && c < p; c++)
    for (int64_t i = 0; i < n; i++) tn[c] += fabs(tp[i + c * n]);
  if (loaded) memcpy(acc_a, colnorm_a, (size_t)n * sizeof(double));
  int by_rows = 0;
  if (!full)
    OOC_CHECK(st = factor_rows(ctx, o, n, b, A, L, tp, p, loaded ? check_probe_av(probe) : NULL,
                               mem, Rj, acc_a, &by_rows));
  if (!by_rows && (!(Al = ooc_malloc(ctx, (size_t)(n * bw) * sizeof(double))) ||
                   !(Yl = ooc_malloc(ctx, (size_t)(bw * ooc_max64(bw, p)) * sizeof(double))))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the residual check");
    goto done;
  }
  for (int64_t j = 0; j < nblocks && !by_rows; j++) {
    int64_t c0 = full ? part_start(cp, j) : 0, nc = full ? part_len(cp, j) : p;
    memset(Rj, 0, (size_t)(n * nc) * sizeof(double));
    if (loaded) /* R = -A T, as the load formed it */
      for (int64_t i = 0; i < n * nc; i++) Rj[i] = -check_probe_av(probe)[i];
    for (int64_t l = 0; l < cp.count && !loaded; l++) { /* R -= A T */
      int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
      if (full && l != j) continue; /* A T for T = I[:, block j] is just A's block j */
      OOC_CHECK(st = A->read(A->self, 0, l0, n, nl, Al, n));
      o->colabs(n, nl, Al, n, acc_a + l0, &bi, &bj);
      if (full)
        for (int64_t i = 0; i < n * nl; i++) Rj[i] = -Al[i];
      else
        o->gemm('N', 'N', n, nc, nl, -1.0, Al, n, tp + l0, n, 1.0, Rj, n);
    }
    for (int64_t l = 0; l < cp.count; l++) { /* R += L (L^T T), strip by strip of L */
      int64_t l0 = part_start(cp, l), nl = part_len(cp, l);
      if (full && l0 > c0 + nc - 1) break; /* L^T T is zero below row c0 + nc - 1 */
      OOC_CHECK(st = L->read(L->self, 0, l0, n, nl, Al, n));
      if (full) /* Y = L[:, l]^T I[:, c0:c0+nc] = rows c0.. of L[:, l], transposed */
        for (int64_t c = 0; c < nc; c++)
          for (int64_t q = 0; q < nl; q++) Yl[q + c * nl] = Al[c0 + c + q * n];
      else
        o->gemm('T', 'N', nl, nc, n, 1.0, Al, n, tp, n, 0.0, Yl, nl);
      o->gemm('N', 'N', n, nc, nl, 1.0, Al, n, Yl, nl, 1.0, Rj, n);
    }
    memset(acc_r, 0, (size_t)nc * sizeof(double));
    o->colabs(n, nc, Rj, n, acc_r, &bi, &bj);
    for (int64_t c = 0; c < nc; c++) /* ||t_c||_1: 1 for a unit vector */
      rmax = ooc_nanmax(rmax, acc_r[c] / (full ? 1.0 : tn[c]));
    OOC_CHECK(st = ooc_tick(ctx, "check", (j + 1.0) / nblocks));
  }
  if (l_passes && !full) *l_passes = by_rows ? 2 : 1;
  if (by_rows) { /* R's columns as above: the probes' */
    o->colabs(n, p, Rj, n, acc_r, &bi, &bj);
    for (int64_t c = 0; c < p; c++) rmax = ooc_nanmax(rmax, acc_r[c] / tn[c]);
  }
  *norm1_a = max_colsum(acc_a, n);
  *ratio = rmax / ((double)n * *norm1_a * eps);
done:
  ooc_free(ctx, Al);
  ooc_free(ctx, Rj);
  ooc_free(ctx, Yl);
  ooc_free(ctx, acc_a);
  ooc_free(ctx, acc_r);
  ooc_free(ctx, t);
  ooc_free(ctx, tn);
  return st;
}

/* ---- least squares ------------------------------------------------------------------------ */

ooc_status_t check_lstsq(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t m, int64_t n, int64_t nrhs,
                         int64_t p, qr_read_fn read, void *user, const double *X, double eps,
                         double *ratio) {
  p = ooc_max64(1, ooc_min64(p, m));
  double *Ab = ooc_malloc(ctx, (size_t)(p * n + 1) * sizeof(double));
  double *Bb = ooc_malloc(ctx, (size_t)(p * nrhs + 1) * sizeof(double));
  double *G = ooc_calloc(ctx, (size_t)(n * nrhs + 1), sizeof(double));
  double *bn = ooc_calloc(ctx, (size_t)(nrhs + 1), sizeof(double));
  ooc_status_t st = OOC_OK;
  *ratio = NAN;
  if (!Ab || !Bb || !G || !bn) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the least-squares check (%lld "
                  "rows of %lld + %lld columns)", (long long)p, (long long)n, (long long)nrhs);
    goto done;
  }
  double an = 0.0; /* ||A||_F and ||b_k||, scaled (no overflow for huge or tiny entries) */
  for (int64_t r0 = 0; r0 < m; r0 += p) {
    int64_t nr = ooc_min64(p, m - r0);
    OOC_CHECK(st = read(user, r0, nr, Ab, p, Bb, p));
    for (int64_t j = 0; j < n; j++) an = hypot(an, ooc_nrm2(nr, Ab + j * p));
    for (int64_t c = 0; c < nrhs; c++) bn[c] = hypot(bn[c], ooc_nrm2(nr, Bb + c * p));
    o->gemm('N', 'N', nr, nrhs, n, -1.0, Ab, p, X, n, 1.0, Bb, p); /* r */
    o->gemm('T', 'N', n, nrhs, nr, 1.0, Ab, p, Bb, p, 1.0, G, n);  /* A^T r */
    OOC_CHECK(st = ooc_tick(ctx, "check", (double)(r0 + nr) / (double)m));
  }
  double worst = 0.0, mx = (double)(m > n ? m : n);
  for (int64_t c = 0; c < nrhs; c++) {
    double g = ooc_nrm2(n, G + c * n), xn = ooc_nrm2(n, X + c * n);
    double den = mx * eps * an * (an * xn + bn[c]);
    /* NaN stays NaN (a 'den > 0 ?' test would turn a NaN x's ratio into 0: a pass) */
    worst = ooc_nanmax(worst, den == 0 ? (g == 0 ? 0.0 : INFINITY) : g / den);
  }
  *ratio = worst;
done:
  ooc_free(ctx, Ab);
  ooc_free(ctx, Bb);
  ooc_free(ctx, G);
  ooc_free(ctx, bn);
  return st;
}
