/*
 * test_pipeline.c: issue 27, the pipeline at the speed of the disk.
 * - even tiles: the planner's tile covers n with the fewest tiles of at most --tile, equal to
 *   an element, and the chunk edge groups small tiles without adding padding (plan_tile,
 *   plan_chunk over a grid of n and --tile);
 * - no more than the data: an inverse at n = 1100 with --tile 1024 (formerly 1024 + 76, whose
 *   padded edge chunks made a 33.6 MB file of 9.7 MB of results; now 552 + 548) writes a file
 *   of the data's size plus the 4 padded rows and columns and HDF5's metadata (under 128 KiB),
 *   for gj and chol, float64 and float32, and its result passes the full check; the issue's
 *   case, a Cholesky factor at n = 4500 with --tile 4096 (537 MB for 162 MB before), writes at
 *   most 1.05 x the data plus 128 KiB and passes its probe check;
 * - the disk floor: with --disk-bw the report gives input / read + output / write bandwidth and
 *   the ratio of the total to it; the JSON's and the text's bytes read back by the check (none
 *   with --check none);
 * - the fused check (check.h): Hager-Higham's estimate of ||I - X A||_1 with its first product
 *   fed by A's column strips and X's row-major chunks fails the wrong inverses test_gj's
 *   estimator test builds (a column off, a row off, every entry off) and passes the right one,
 *   never above the full left ratio and within 3x below it; through the pipeline it is used for
 *   probe-checked inverses (gj, chol, lu; float64 and float32 outputs), says so, and passes; the
 *   check's rereads are counted: after the fused first product one pass per product, and with
 *   the writer's bands (check_fused_band, the second product's X^T xi) one fewer; unfused, one
 *   pass per product plus one (report.bytes_check_read; counting sources for the estimator); a
 *   chunk corrupted on its way to the file (OOC_FAULT_CORRUPT, every chunk in turn) fails the
 *   run with exit 4 and leaves no output, in float64 by the fused first product alone; outputs not
 *   written in whole chunks fall back to the rereading estimate;
 * - the LU factor's check from its chunks as written (lu.h lu_fused_t): the ratio of the full
 *   matrices for changed factors, chunk shapes and both dtypes; chunks out of order, twice,
 *   missing or too tall fall back; through the pipeline nothing is read back and a corrupted
 *   chunk fails the run with no output;
 * - the disk tier's model (plan_spill_model): gj and chol eliminations on a store filled as the
 *   loader fills it spill and read back exactly the model's bytes with a one-byte cache, at most
 *   them with larger caches, nothing when everything fits.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cblas.h>
#include <hdf5.h>
#include <lapacke.h>

#include "api/plan.h"
#include "gen/gen.h"
#include "kernels/ops.h"
#include "io/scratch.h"
#include "solvers/check.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/lu.h"
#include "testutil.h"

static void t_even_tiles(void) {
  static const int64_t ts[] = {1, 3, 7, 64, 100, 255, 256, 1000, 4096};
  int64_t cases = 0;
  for (int64_t n = 1; n <= 5000; n += (n < 300 ? 1 : 37)) {
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
      int64_t t = ts[k], b = plan_tile(n, t), want = ooc_cdiv64(n, t);
      CU_ASSERT_FATAL(b >= 1 && b <= t && b <= n);
      CU_ASSERT_EQUAL(ooc_cdiv64(n, b), want); /* as few tiles as --tile allows */
      /* the tiles' padding: under one element each, or 8 when aligned to 8 */
      CU_ASSERT(want * b - n < want * (t % 8 == 0 ? 8 : 1));
      if (t % 8 == 0 && want > 1) CU_ASSERT(b % 8 == 0);
      int64_t c = plan_chunk(n, b);
      CU_ASSERT_FATAL(c >= b && c % b == 0);
      /* the chunks cover n with no more padding than the tiles */
      CU_ASSERT(ooc_cdiv64(n, c) * c - n <= want * b - n);
      if (b >= 256) CU_ASSERT(c == b);
      if (b < 256 && c < 256) CU_ASSERT(c == want * b); /* too few tiles: one chunk of all */
      cases++;
    }
  }
  /* the case */
  CU_ASSERT_EQUAL(plan_tile(4500, 4096), 2256);
  CU_ASSERT_EQUAL(plan_tile(49152, 4096), 4096);
  CU_ASSERT_EQUAL(plan_tile(65536, 4096), 4096);
  CU_ASSERT_EQUAL(plan_tile(50000, 4096), 3848);
  CU_ASSERT_EQUAL(plan_tile(1100, 1024), 552);
  CU_ASSERT_EQUAL(plan_tile(100, 30), 25); /* 30 is no multiple of 8: exact */
  printf("\n  %lld (n, --tile) pairs\n", (long long)cases);
}

static ooc_opts_t opts(int64_t tile, ooc_method_t method) {
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.tile = tile;
  o.method = method;
  o.device = OOC_DEVICE_CPU;
  o.force = 1;
  o.check = OOC_CHECK_FULL;
  o.scratch_dir = tu_tmpdir();
  return o;
}

static int64_t file_size(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static void t_no_padding(void) {
  const int64_t n = 1100;
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  double *A = tu_gen_spec(&s);
  CU_ASSERT_FATAL(A != NULL);
  tu_write_matrix(tu_path("pad.h5"), "/A", n, n, A, 2);
  static const struct {
    ooc_method_t m;
    ooc_dtype_t dt;
    const char *name;
  } cs[] = {{OOC_METHOD_CHOL, OOC_DTYPE_F64, "chol f64"},
            {OOC_METHOD_GJ, OOC_DTYPE_F64, "gj f64"},
            {OOC_METHOD_CHOL, OOC_DTYPE_F32, "chol f32"}};
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(1024, cs[k].m);
    o.out_dtype = cs[k].dt;
    ooc_report_t rep;
    const char *out = tu_path("pad.inv.h5");
    remove(out);
    CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("pad.h5"), out, &o, &rep), OOC_OK);
    CU_ASSERT_EQUAL(rep.tile, 552);
    CU_ASSERT(rep.residual < 30);
    int64_t es = cs[k].dt == OOC_DTYPE_F32 ? 4 : 8, data = es * n * n, size = file_size(out);
    /* the data plus HDF5's superblock, object headers, attributes and chunk index: tens of KB */
    printf("\n  %s: %lld bytes of results, file %lld bytes (tile %lld)", cs[k].name,
           (long long)data, (long long)size, (long long)rep.tile);
    CU_ASSERT(size >= data && size <= data + 128 * 1024);
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    CU_ASSERT_FATAL(X != NULL && r == n && c == n);
    CU_ASSERT(tu_inverse_ratio(n, A, X, cs[k].dt == OOC_DTYPE_F32 ? FLT_EPSILON / 2
                                                                  : DBL_EPSILON / 2) < 30);
    free(X);
    tu_ctx_done(ctx);
  }
  free(A);
  /* the case: n = 4500 with --tile 4096 wrote 537 MB for 162 MB of results; a Cholesky
   * factor (n^3/3 flops, the output written whole: L with zeros above) through the same writer
   * now writes the data plus 12 padded rows and columns (tile 2256) and HDF5's metadata */
  const int64_t nb = 4500;
  gen_spec_default(&s, GEN_MATERN, nb);
  A = tu_gen_spec(&s);
  CU_ASSERT_FATAL(A != NULL);
  tu_write_matrix(tu_path("pad4500.h5"), "/A", nb, nb, A, 2);
  free(A);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o = opts(4096, OOC_METHOD_CHOL);
  o.check = OOC_CHECK_PROBE;
  ooc_report_t rep;
  const char *out = tu_path("pad4500.chol.h5");
  remove(out);
  CU_ASSERT_EQUAL_FATAL(ooc_factor(ctx, tu_path("pad4500.h5"), out, &o, &rep), OOC_OK);
  int64_t data = 8 * nb * nb, size = file_size(out);
  CU_ASSERT_EQUAL(rep.tile, 2256);
  CU_ASSERT(rep.residual < 30);
  CU_ASSERT(size >= data && (double)size <= 1.05 * (double)data + 128 * 1024);
  printf("\n  chol factor n = 4500, --tile 4096: %lld bytes of results, file %lld bytes (%.4fx, "
         "tile %lld), probe ratio %.3g\n", (long long)data, (long long)size,
         (double)size / (double)data, (long long)rep.tile, rep.residual);
  remove(out);
  remove(tu_path("pad4500.h5"));
  tu_ctx_done(ctx);
}

static void t_floor(void) {
  const int64_t n = 300;
  double *A = tu_gen_matrix(GEN_DIAGDOM, n, 0, 0, 3);
  CU_ASSERT_FATAL(A != NULL);
  tu_write_matrix(tu_path("fl.h5"), "/A", n, n, A, 2);
  for (int k = 0; k < 3; k++) { /* none; read only (write = read); both, float32 output */
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(128, OOC_METHOD_GJ);
    o.disk_read_bw = k ? 1e9 : 0;
    o.disk_write_bw = k == 2 ? 2.5e8 : 0;
    if (k == 2) o.out_dtype = OOC_DTYPE_F32;
    if (k == 1) o.check = OOC_CHECK_NONE; /* reads nothing back */
    ooc_report_t rep;
    CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("fl.h5"), tu_path("fl.inv.h5"), &o, &rep),
                          OOC_OK);
    /* the full check (n <= 2048) reads X once and A once per column block of X */
    if (k == 1) CU_ASSERT_EQUAL(rep.bytes_check_read, 0);
    if (k != 1) CU_ASSERT(rep.bytes_check_read >= 2 * n * n * (k == 2 ? 4 : 8));
    double out = (double)n * n * (k == 2 ? 4 : 8), wbw = k == 2 ? 2.5e8 : 1e9;
    double want = k ? (double)rep.bytes_input / 1e9 + out / wbw : 0;
    CU_ASSERT(rep.bytes_input >= 8 * n * n); /* f64 input, read whole at least once */
    CU_ASSERT_DOUBLE_EQUAL(rep.t_floor, want, 1e-12);
    /* the commit (attributes, fsync, rename) is timed, outside the phases, inside the total */
    double phases = rep.t_read + rep.t_compute + rep.t_spill + rep.t_write + rep.t_check;
    CU_ASSERT(rep.t_commit > 0 && phases + rep.t_commit <= rep.t_total);
    CU_ASSERT_DOUBLE_EQUAL(rep.disk_write_bw, k ? wbw : 0, 0);
    if (k) {
      CU_ASSERT_DOUBLE_EQUAL(rep.floor_ratio, rep.t_total / want, 1e-9 * rep.floor_ratio);
    } else {
      CU_ASSERT_EQUAL(rep.floor_ratio, 0);
    }
    /* JSON: numbers when given, null when not; the text report's line */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ooc_report_json(&rep, OOC_OK, "", f);
    ooc_report_print(&rep, f);
    fclose(f);
    CU_ASSERT(strstr(buf, k ? "\"t_floor\": 0." : "\"t_floor\": null") != NULL);
    CU_ASSERT((strstr(buf, "disk floor") != NULL) == (k != 0));
    CU_ASSERT(strstr(buf, "\"t_commit\": ") != NULL && strstr(buf, " + commit ") != NULL);
    char want_json[64];
    snprintf(want_json, sizeof want_json, "\"bytes_check_read\": %lld,",
             (long long)rep.bytes_check_read);
    CU_ASSERT(strstr(buf, want_json) != NULL);
    CU_ASSERT((strstr(buf, "reread  the check read") != NULL) == (k != 1));
    if (k == 2) printf("\n  %s", strstr(buf, "  floor"));
    free(buf);
    tu_ctx_done(ctx);
  }
  free(A);
}

/* ||I - X A||_1 / (n ||A||_1 ||X||_1 eps) */
static double left_ratio(int64_t n, const double *A, const double *X, double eps) {
  double *R = malloc((size_t)(n * n) * sizeof *R);
  for (int64_t i = 0; i < n * n; i++) R[i] = 0;
  for (int64_t i = 0; i < n; i++) R[i + i * n] = 1;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, -1.0, X, (int)n,
              A, (int)n, 1.0, R, (int)n);
  double r = tu_norm1(n, R) / ((double)n * tu_norm1(n, A) * tu_norm1(n, X) * eps);
  free(R);
  return r;
}

/* A memory source that counts the elements read through it (the check's passes). */
typedef struct {
  tu_memsrc_t m;
  int64_t elems;
} count_src_t;
static ooc_status_t count_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               double *dst, int64_t ld) {
  count_src_t *c = self;
  c->elems += nr * nc;
  return tu_mem_read(&c->m, r0, c0, nr, nc, dst, ld);
}
static int64_t g_fused_elems; /* what fused_estimate's finish read of A and X */

/* The fused estimate of X against A: A by strips of 64 columns, X by row-major chunks of 128. */
static double fused_estimate(ooc_ctx_t *ctx, int64_t n, const double *A, const double *X,
                             double stop, int band, check_info_t *ci) {
  check_fused_t *f = NULL;
  check_probe_t *pa = NULL;
  CU_ASSERT_FATAL(check_probe_create(ctx, ooc_ops_cpu(), n, &pa) == OOC_OK);
  CU_ASSERT_FATAL(check_fused_create(ctx, ooc_ops_cpu(), pa, &f) == OOC_OK);
  double *cn = calloc((size_t)n, sizeof *cn);
  for (int64_t c = 0; c < n; c++)
    for (int64_t i = 0; i < n; i++) cn[c] += fabs(A[i + c * n]);
  check_probe_reset(pa);
  for (int64_t c0 = 0; c0 < n; c0 += 64) check_probe_a(pa, c0, c0 + 64 <= n ? 64 : n - c0, A + c0 * n, n);
  check_fused_reset_x(f);
  const int64_t cb = 128;
  double *chunk = malloc((size_t)(cb * cb) * sizeof *chunk);
  for (int64_t R = 0; R < n; R += cb)
    for (int64_t C = 0; C < n; C += cb) {
      int64_t h = R + cb <= n ? cb : n - R, w = C + cb <= n ? cb : n - C;
      for (int64_t i = 0; i < h; i++)
        for (int64_t c = 0; c < w; c++) chunk[c + i * cb] = X[(R + i) + (C + c) * n];
      CU_ASSERT(!check_fused_complete(f));
      check_fused_x(f, R, C, h, w, chunk, 8, cb);
      if (band && C + w == n) { /* the writer's bands: 1 as written, 2 in two pieces, the
                                 * right one transposed (as h5m_write_t takes it) */
        int64_t h2 = n / 2;
        if (band == 1) {
          check_fused_band(f, R, h, 0, n, X + R, n, 0, 0);
        } else if (band == 3) { /* one element of the band is not what the tap saw */
          double *t = malloc((size_t)(h * n) * sizeof *t);
          for (int64_t c = 0; c < n; c++)
            for (int64_t i = 0; i < h; i++) t[i + c * h] = X[(R + i) + c * n];
          if (R == 0) t[h / 2 + (n / 3) * h] *= 1 + 1e-12;
          check_fused_band(f, R, h, 0, n, t, h, 0, 0);
          free(t);
        } else {
          double *t = malloc((size_t)((n - h2) * h) * sizeof *t);
          for (int64_t i = 0; i < h; i++)
            for (int64_t c = h2; c < n; c++) t[(c - h2) + i * (n - h2)] = X[(R + i) + c * n];
          check_fused_band(f, R, h, h2, n - h2, t, n - h2, 1, 0);
          check_fused_band(f, R, h, 0, h2, X + R, n, 0, 0);
          free(t);
        }
      }
    }
  CU_ASSERT(check_fused_complete(f));
  count_src_t sa = {{A, n}, 0}, sx = {{X, n}, 0};
  ooc_source_t srcA = {&sa, count_read, NULL, NULL}, srcX = {&sx, count_read, NULL, NULL};
  double est = NAN, na, nx;
  CU_ASSERT(check_fused_finish(ctx, f, 16, cn, &srcA, &srcX, check_eps(0), 1 << 20, stop, &est,
                               &na, &nx, ci) == OOC_OK);
  g_fused_elems = sa.elems + sx.elems;
  CU_ASSERT_DOUBLE_EQUAL(na, tu_norm1(n, A), 1e-12 * na);
  if (isfinite(nx)) CU_ASSERT_DOUBLE_EQUAL(nx, tu_norm1(n, X), 1e-12 * nx);
  check_fused_destroy(f);
  check_probe_destroy(pa);
  free(chunk);
  free(cn);
  return est;
}

static void t_fused_estimator(void) {
  int64_t n = 300;
  gen_spec_t s;
  gen_spec_default(&s, GEN_RANDOM, n);
  s.seed = 5;
  double *A = tu_gen_spec(&s), *X = malloc((size_t)(n * n) * sizeof *X);
  lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
  double *X0 = tu_lapack_lu(n, A, ipiv);
  CU_ASSERT_FATAL(X0 != NULL);
  CU_ASSERT_FATAL(LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, X0, (lapack_int)n, ipiv) == 0);
  ooc_ctx_t *ctx = tu_ctx();
  double eps = check_eps(0), xmax = 0, lo = 1e300;
  for (int64_t i = 0; i < n * n; i++) xmax = fmax(xmax, fabs(X0[i]));
  uint64_t seed = 99;
  int probe_missed = 0;
  for (int kind = 0; kind < 5; kind++) {
    memcpy(X, X0, (size_t)(n * n) * sizeof *X);
    /* as test_gj's t_estimator: 0 right; 1 column 37 off; 2 row 211 off; 3 every entry off,
     * relative 1e-9; and 4: one NaN */
    tu_spoil_inverse(kind, n, X, xmax, &seed);
    if (kind == 4) X[5 + 250 * n] = NAN;
    check_info_t ci;
    double est = fused_estimate(ctx, n, A, X, INFINITY, 0, &ci);
    double full = kind == 4 ? NAN : left_ratio(n, A, X, eps);
    CU_ASSERT(ci.products >= 1 && ci.products <= CHECK_EST_MAX_PRODUCTS);
    /* the passes after the fused first product: exactly one per product (the 'N' products'
     * pass over X also forms the next 'T' product's X^T xi, the 'T' products' pass over A keeps
     * the next unit vector's column), where each product took two passes before */
    int64_t nn = n * n;
    CU_ASSERT_EQUAL(g_fused_elems, ci.products > 1 ? ci.products * nn : 0);
    CU_ASSERT(!ci.band);
    /* with the writer's bands (check_fused_band): the same estimate and one pass fewer, the
     * second product's X^T xi formed from them */
    for (int bm = 1; bm <= 3; bm++) { /* 3: a band that differs from the file: not used */
      check_info_t cb;
      double eb = fused_estimate(ctx, n, A, X, INFINITY, bm, &cb);
      CU_ASSERT(cb.band == (bm < 3 && ci.products > 1));
      CU_ASSERT(cb.products == ci.products);
      CU_ASSERT(kind == 4 ? isnan(eb) : fabs(eb - est) <= 1e-9 * est);
      CU_ASSERT_EQUAL(g_fused_elems,
                      cb.products > 1 ? (cb.products - (bm < 3 ? 1 : 0)) * nn : 0);
      if (bm == 1)
        printf("\n  case %d: with the writer's bands %.2f n^2 read back", kind,
               (double)g_fused_elems / (double)nn);
    }
    /* the same estimate by check_inverse_ex (the right residual, nothing fused): its first
     * product's two passes, then one per product */
    count_src_t ra = {{A, n}, 0}, rx = {{X, n}, 0};
    ooc_source_t srA = {&ra, count_read, NULL, NULL}, srX = {&rx, count_read, NULL, NULL};
    check_info_t cr;
    double rr = NAN, na2, nx2;
    CU_ASSERT(check_inverse_ex(ctx, ooc_ops_cpu(), n, 16, &srA, &srX, 0, eps, 1 << 20, &rr, &na2,
                               &nx2, &cr) == OOC_OK);
    CU_ASSERT_EQUAL(ra.elems + rx.elems, (cr.products + 1) * nn);
    if (kind > 0 && kind < 4) CU_ASSERT(rr >= 30); /* the right residual fails them too */
    if (kind == 0) CU_ASSERT(rr < 30);
    printf("\n  case %d: fused finish read %.2f n^2 in %d products; unfused %.2f n^2 in %d "
           "products (ratio %.3g)", kind, (double)g_fused_elems / (double)nn, ci.products,
           (double)(ra.elems + rx.elems) / (double)nn, cr.products, rr);
    if (kind == 0) {
      CU_ASSERT(full < 30 && est < 30);
    } else if (kind == 4) {
      CU_ASSERT(!(est < 30)); /* NaN fails */
    } else {
      CU_ASSERT(full > 50); /* the left ratio: 211, 55.4, 1820 where the right one is 2020, 431,
                             * 2830 (test_gj's t_estimator) */
      CU_ASSERT(est >= 30);
      CU_ASSERT(est <= full * (1 + 1e-6));
      CU_ASSERT(est >= full / 3);
      if (ci.probe < 30) probe_missed++;
      lo = fmin(lo, est / full);
      /* with the threshold as the stop: the verdict is the same, in no more products */
      check_info_t cs;
      double e2 = fused_estimate(ctx, n, A, X, 30, 0, &cs);
      CU_ASSERT(e2 >= 30 && cs.products <= ci.products);
    }
    printf("\n  case %d: full left ratio %.3g, fused estimate %.3g (%d products), probes alone "
           "%.3g", kind, full, est, ci.products, ci.probe);
  }
  CU_ASSERT(probe_missed >= 1);
  printf("\n  estimate / full >= %.3g, %d case(s) the probes alone passed\n", lo, probe_missed);
  tu_ctx_done(ctx);
  free(A);
  free(X0);
  free(X);
  free(ipiv);
}

/* The probe checks' inputs, n x n: spd (fs.h5) a Matern covariance, gen (fg.h5) a random
 * matrix. */
static void write_probe_inputs(int64_t n, const char *spd, const char *gen) {
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  double *S = tu_gen_spec(&s);
  gen_spec_default(&s, GEN_RANDOM, n);
  double *G = tu_gen_spec(&s);
  tu_write_matrix(tu_path(spd), "/A", n, n, S, 2);
  tu_write_matrix(tu_path(gen), "/A", n, n, G, 2);
  free(S);
  free(G);
}

/* The chunk edge of file:dset (its first dimension's), 0 when it is not chunked. */
static int64_t chunk_edge(const char *file, const char *dset) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, dset, H5P_DEFAULT);
  hid_t pl = H5Dget_create_plist(d);
  hsize_t c[2] = {0, 0};
  if (H5Pget_layout(pl) == H5D_CHUNKED) H5Pget_chunk(pl, 2, c);
  H5Pclose(pl);
  H5Dclose(d);
  H5Fclose(f);
  return (int64_t)c[0];
}

/* Sub-tiles (plan.h plan_subtiles, OOCSOLVE_SUBTILE): --tile 512 with d = 2 runs on tiles of 256
 * under output chunks of 512, the writer two tile rows a block (job.c write_rows: the mirrored
 * diagonal block, the column permutation in place). The same bits as --tile 256 (the same tiles,
 * in core: the same arithmetic), only the chunks differ; whole chunks, so the probe check is
 * fused. A d that does not fit (3: 512 / 3 is not a multiple of 8) is ignored. n = 1024. */
static void t_subtiles(void) {
  const int64_t n = 1024;
  write_probe_inputs(n, "sub_s.h5", "sub_g.h5"); /* the later tests read fs.h5 at n = 600 */
  static const struct {
    ooc_method_t m;
    const char *in, *name;
    int lower;
  } cs[] = {{OOC_METHOD_CHOL, "sub_s.h5", "chol", 0},
            {OOC_METHOD_CHOL, "sub_s.h5", "chol (lower)", 1},
            {OOC_METHOD_GJ, "sub_g.h5", "gj", 0},
            {OOC_METHOD_LU, "sub_g.h5", "lu", 0}};
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    double *X[3];
    for (int v = 0; v < 3; v++) { /* tile 256; tile 512 in sub-tiles of 2; d = 3, ignored */
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o = opts(v ? 512 : 256, cs[k].m);
      o.check = OOC_CHECK_PROBE;
      o.lower_only = cs[k].lower;
      if (v) setenv("OOCSOLVE_SUBTILE", v == 1 ? "2" : "3", 1);
      ooc_report_t rep;
      const char *out = tu_path("sub.inv.h5");
      remove(out);
      CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path(cs[k].in), out, &o, &rep), OOC_OK);
      unsetenv("OOCSOLVE_SUBTILE");
      CU_ASSERT_EQUAL(rep.tile, v == 2 ? 512 : 256);
      CU_ASSERT_EQUAL(chunk_edge(out, "/inverse"), v ? 512 : 256);
      CU_ASSERT(rep.residual < 30);
      CU_ASSERT_EQUAL(strstr(rep.warnings, "first product formed while A was read") != NULL,
                      !cs[k].lower);
      int64_t r, c;
      char spec[4200];
      snprintf(spec, sizeof spec, "%s:/inverse", out);
      X[v] = tu_read_matrix(spec, &r, &c);
      CU_ASSERT_FATAL(X[v] != NULL && r == n && c == n);
      tu_ctx_done(ctx);
    }
    CU_ASSERT(memcmp(X[0], X[1], (size_t)(n * n) * sizeof(double)) == 0);
    printf("\n  %s: tile 512 in sub-tiles of 256 = tile 256 bit for bit", cs[k].name);
    for (int v = 0; v < 3; v++) free(X[v]);
  }
  printf("\n");
}

/* Through the pipeline: n = 600 with --tile 300 (whole chunks of 300), --check probe. */
static void t_fused_pipeline(void) {
  const int64_t n = 600;
  write_probe_inputs(n, "fs.h5", "fg.h5");
  static const struct {
    ooc_method_t m;
    ooc_dtype_t dt;
    int64_t tile;
    const char *in, *name, *compress;
    int fused;
  } cs[] = {{OOC_METHOD_CHOL, OOC_DTYPE_F64, 300, "fs.h5", "chol f64", NULL, 1},
            {OOC_METHOD_GJ, OOC_DTYPE_F64, 300, "fg.h5", "gj f64", NULL, 1},
            {OOC_METHOD_LU, OOC_DTYPE_F64, 300, "fg.h5", "lu f64", NULL, 1},
            {OOC_METHOD_CHOL, OOC_DTYPE_F32, 300, "fs.h5", "chol f32", NULL, 1},
            {OOC_METHOD_GJ, OOC_DTYPE_F32, 300, "fg.h5", "gj f32 zstd (direct)", "zstd", 1},
            {OOC_METHOD_CHOL, OOC_DTYPE_F64, 300, "fs.h5", "chol deflate (through HDF5)", "deflate", 0},
            {OOC_METHOD_GJ, OOC_DTYPE_F64, 100, "fg.h5", "gj tile 100 (3 tile rows a chunk row)",
             NULL, 1},
            {OOC_METHOD_CHOL, OOC_DTYPE_F32, 100, "fs.h5", "chol f32 tile 100 (3 x 3 tiles mirrored)",
             NULL, 1}};
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(cs[k].tile, cs[k].m);
    o.check = OOC_CHECK_PROBE;
    o.out_dtype = cs[k].dt;
    o.compress = cs[k].compress;
    ooc_report_t rep;
    const char *out = tu_path("fused.inv.h5");
    remove(out);
    ooc_status_t st = ooc_invert(ctx, tu_path(cs[k].in), out, &o, &rep);
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK) printf("\n  %s: %s", cs[k].name, ooc_ctx_error(ctx));
    CU_ASSERT(rep.residual < 30);
    int said = strstr(rep.warnings, "first product formed while A was read") != NULL;
    CU_ASSERT_EQUAL(said, cs[k].fused);
    CU_ASSERT_EQUAL(strstr(rep.warnings, "not written in whole chunks") != NULL, !cs[k].fused);
    CU_ASSERT(rep.check_products >= 2);
    /* what the check read back (report.bytes_check_read, 8-byte input, output in its dtype):
     * fused, one pass per product after the first; else one more; and by rows, one column of
     * the matrix a 'T' product passed over, which the next product starts with (at most one a
     * product) */
    int band = strstr(rep.warnings, "the second's X^T xi") != NULL;
    CU_ASSERT_EQUAL(band, cs[k].fused);
    int64_t pr = rep.check_products, passes = cs[k].fused ? pr - 1 : pr + 1;
    CU_ASSERT(rep.bytes_check_read > 0);
    CU_ASSERT(rep.bytes_check_read <= 8 * passes * n * n + 8 * pr * n);
    CU_ASSERT_EQUAL(rep.bytes_output, (cs[k].dt == OOC_DTYPE_F32 ? 4 : 8) * n * n); /* dtype's */
    printf("\n  %s: probe ratio %.3g, %d products, %s, read back %.2f x the input's bytes",
           cs[k].name, rep.residual, rep.check_products, said ? "fused" : "reread",
           (double)rep.bytes_check_read / (8.0 * n * n));
    tu_ctx_done(ctx);
  }
  /* a chunk corrupted on its way to the file: each of the 4 chunks in turn, both dtypes */
  int caught = 0;
  char first[2][512];
  for (int dt = 0; dt < 2; dt++)
    for (int q = 1; q <= 4; q++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o = opts(300, q % 2 ? OOC_METHOD_CHOL : OOC_METHOD_GJ);
      o.check = OOC_CHECK_PROBE;
      o.out_dtype = dt ? OOC_DTYPE_F32 : OOC_DTYPE_F64;
      ooc_report_t rep;
      const char *out = tu_path("corrupt.inv.h5");
      remove(out);
      ooc_fault_arm(ctx, OOC_FAULT_CORRUPT, q, 0, 0);
      ooc_status_t st = ooc_invert(ctx, tu_path("fs.h5"), out, &o, &rep);
      CU_ASSERT_EQUAL(ooc_fault_injected(ctx, OOC_FAULT_CORRUPT), 1);
      ooc_fault_arm(ctx, OOC_FAULT_CORRUPT, 0, 0, 0);
      CU_ASSERT_EQUAL(st, OOC_ERR_ACCURACY);
      CU_ASSERT(!tu_file_exists(out)); /* complete and verified, or absent */
      /* float64: the fused first product alone catches it; float32 (eps 6e-8, so the ratio's
       * denominator is 2^29 times larger) at times needs the later products, which reread the
       * file */
      if (!dt) CU_ASSERT(rep.check_products == 1);
      /* the writer's bands were not what the file got: the second product read X back */
      CU_ASSERT(strstr(rep.warnings, "the second's X^T xi") == NULL);
      printf("%s%d", q == 1 ? (dt ? "\n  f32 products per chunk:" : "\n  f64 products per chunk:") : ",",
             rep.check_products);
      CU_ASSERT(rep.residual >= 30);
      caught += st == OOC_ERR_ACCURACY && !tu_file_exists(out);
      if (q == 1) snprintf(first[dt], sizeof first[dt], "%s", ooc_ctx_error(ctx));
      tu_ctx_done(ctx);
    }
  printf("\n  f64 chunk 1: %s\n  f32 chunk 1: %s", first[0], first[1]);
  printf("\n  %d of 8 corrupted chunks caught, no output left\n", caught);
}

/* The LU factor's tap (lu.h lu_fused_t): the factor LU (column-major, n x n) handed over in
 * row-major chunks of cr x cc (es 8 or 4: float32 as a float32 file holds it), a chunk row at
 * a time, as the writer hands them to the file; how = 1: the first two chunk rows swapped, 2: the
 * last chunk row's first chunk twice, 3: the last chunk missing. */
static void feed_lu(lu_fused_t *f, const double *LU, int64_t n, int64_t cr, int64_t cc, int es,
                    int how) {
  double *d = calloc((size_t)(cr * cc), sizeof *d);
  float *s = calloc((size_t)(cr * cc), sizeof *s);
  int64_t nr = ooc_cdiv64(n, cr), nc = ooc_cdiv64(n, cc);
  for (int64_t q = 0; q < nr; q++) {
    int64_t r = how == 1 && q < 2 ? (1 - q) * cr : q * cr, rows = ooc_min64(cr, n - r);
    for (int64_t u = 0; u < nc; u++) {
      int64_t c0 = u * cc, cols = ooc_min64(cc, n - c0);
      if (how == 3 && q == nr - 1 && u == nc - 1) continue;
      memset(d, 0, (size_t)(cr * cc) * sizeof *d);
      memset(s, 0, (size_t)(cr * cc) * sizeof *s);
      for (int64_t i = 0; i < rows; i++)
        for (int64_t c = 0; c < cols; c++) {
          d[c + i * cc] = LU[r + i + (c0 + c) * n];
          s[c + i * cc] = (float)LU[r + i + (c0 + c) * n];
        }
      const void *data = es == 8 ? (const void *)d : (const void *)s;
      lu_fused_x(f, r, c0, rows, cols, data, es, cc);
      if (how == 2 && q == nr - 1 && u == 0) lu_fused_x(f, r, c0, rows, cols, data, es, cc);
    }
  }
  free(d);
  free(s);
}

/* ||(P A - L U) t_c||_1 / ||t_c||_1 at its largest over the probe's vectors, / (n ||A||_1 eps),
 * from the full matrices (the reference). */
static double lu_probe_ref(int64_t n, const double *A, const double *LU, const lapack_int *ip,
                           const check_probe_t *p) {
  int64_t K = CHECK_PROBE_K;
  const double *T = check_probe_v(p);
  double *L = calloc((size_t)(n * n), sizeof *L), *U = calloc((size_t)(n * n), sizeof *U);
  double *V = calloc((size_t)(n * K), sizeof *V), *Y = calloc((size_t)(n * K), sizeof *Y);
  double *Z = calloc((size_t)(n * K), sizeof *Z);
  for (int64_t c = 0; c < n; c++)
    for (int64_t i = 0; i < n; i++) {
      if (i > c) L[i + c * n] = LU[i + c * n];
      else U[i + c * n] = LU[i + c * n];
      if (i == c) L[i + c * n] = 1;
    }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)K, (int)n, 1, U, (int)n, T,
              (int)n, 0, V, (int)n);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)K, (int)n, 1, L, (int)n, V,
              (int)n, 0, Y, (int)n);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)K, (int)n, 1, A, (int)n, T,
              (int)n, 0, Z, (int)n);
  /* P A T: LAPACK's own row interchanges, dgetrf's 1-based pivots */
  LAPACKE_dlaswp(LAPACK_COL_MAJOR, (lapack_int)K, Z, (lapack_int)n, 1, (lapack_int)n, ip, 1);
  double worst = 0;
  for (int64_t q = 0; q < K; q++) {
    double s = 0, tn = 0;
    for (int64_t i = 0; i < n; i++) {
      s += fabs(Y[i + q * n] - Z[i + q * n]);
      tn += fabs(T[i + q * n]);
    }
    worst = fmax(worst, s / tn);
  }
  free(L), free(U), free(V), free(Y), free(Z);
  return worst / ((double)n * tu_norm1(n, A) * check_eps(0));
}

/* The LU factor's probe ratio from the chunks as written (lu_fused_t): for chunk shapes that
 * do and do not divide n, taller and wider than square, float64 and float32, it is the ratio
 * the full matrices give (within 1, the rounding's share, where an entry of the factor was
 * changed by 1e-6 of max |a|, a ratio of 3e5, in each kind of place: U far right, L far down,
 * U's and L's parts of a chunk row's diagonal band, the diagonal itself) and the one
 * lu_check_factor gives reading the factor back with the same probes; chunks out of order,
 * twice, missing or taller than the band make it fall back. */
static void t_lu_fused(void) {
  const int64_t n = 100;
  gen_spec_t gs;
  gen_spec_default(&gs, GEN_RANDOM, n);
  gs.seed = 11;
  double *A = tu_gen_spec(&gs), *LU = malloc((size_t)(n * n) * sizeof *LU);
  lapack_int *ip = malloc((size_t)n * sizeof *ip);
  int64_t *ipiv = malloc((size_t)n * sizeof *ipiv);
  double *LU0 = tu_lapack_lu(n, A, ip);
  CU_ASSERT_FATAL(LU0 != NULL);
  for (int64_t i = 0; i < n; i++) ipiv[i] = ip[i] - 1;
  ooc_ctx_t *ctx = tu_ctx();
  check_probe_t *p = NULL;
  CU_ASSERT_FATAL(check_probe_create(ctx, ooc_ops_cpu(), n, &p) == OOC_OK);
  check_probe_a(p, 0, 60, A, n); /* as the loader's strips come */
  check_probe_a(p, 60, n - 60, A + 60 * n, n);
  CU_ASSERT_FATAL(check_probe_done(p));
  double a1 = tu_norm1(n, A), eps = check_eps(0), amax = 0;
  for (int64_t i = 0; i < n * n; i++) amax = fmax(amax, fabs(A[i]));
  static const int64_t shapes[][2] = {{16, 16}, {32, 16}, {16, 48}, {100, 100}, {7, 100}, {25, 25}};
  /* (row, column) of the changed entry; -1: none */
  static const int64_t where[][2] = {{-1, -1}, {0, 99}, {99, 0}, {40, 45}, {45, 40}, {37, 37}};
  int checked = 0;
  for (size_t w = 0; w < sizeof where / sizeof *where; w++) {
    memcpy(LU, LU0, (size_t)(n * n) * sizeof *LU);
    if (where[w][0] >= 0) LU[where[w][0] + where[w][1] * n] += 1e-6 * amax;
    for (int es = 8; es >= 4; es -= 4) {
      double *LUr = malloc((size_t)(n * n) * sizeof *LUr); /* what the file holds */
      for (int64_t i = 0; i < n * n; i++) LUr[i] = es == 8 ? LU[i] : (double)(float)LU[i];
      double ref = lu_probe_ref(n, A, LUr, ip, p);
      count_src_t sl = {{LUr, n}, 0};
      ooc_source_t srl = {&sl, count_read, NULL, NULL};
      double back = NAN;
      CU_ASSERT(lu_check_factor(ctx, ooc_ops_cpu(), n, 16, NULL, &srl, ipiv, 0, a1, eps, 1 << 22,
                                p, &back) == OOC_OK);
      for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        lu_fused_t *f = NULL;
        CU_ASSERT_FATAL(lu_fused_create(ctx, ooc_ops_cpu(), p, n, shapes[sh][0], &f) == OOC_OK);
        feed_lu(f, LUr, n, shapes[sh][0], shapes[sh][1], es, 0);
        CU_ASSERT_FATAL(lu_fused_complete(f));
        double r = lu_fused_ratio(f, ipiv, a1, eps);
        CU_ASSERT(!lu_fused_complete(f)); /* spent */
        if (where[w][0] < 0 && es == 8) { /* the right factor: rounding only */
          CU_ASSERT(r < 1 && ref < 1 && back < 1);
        } else { /* a change far above the rounding: the same ratio, three ways */
          CU_ASSERT(ref > 1e3);
          CU_ASSERT(fabs(r - ref) <= 1);
          CU_ASSERT(fabs(back - ref) <= 1);
        }
        checked++;
        /* out of order, twice, missing, taller than the band: no ratio from the tap */
        for (int how = 1; how <= 4; how++) {
          if (how == 1 && shapes[sh][0] >= n) continue; /* one chunk row */
          lu_fused_reset(f);
          if (how == 4) {
            lu_fused_destroy(f);
            CU_ASSERT_FATAL(lu_fused_create(ctx, ooc_ops_cpu(), p, n, shapes[sh][0] - 1, &f) ==
                            OOC_OK);
          }
          feed_lu(f, LUr, n, shapes[sh][0], shapes[sh][1], es, how == 4 ? 0 : how);
          CU_ASSERT(!lu_fused_complete(f));
        }
        lu_fused_destroy(f);
      }
      if (w == 0 || w == 3)
        printf("\n  change %zu, %s: ratio from the full matrices %.6g, read back %.6g", w,
               es == 8 ? "float64" : "float32", ref, back);
      free(LUr);
    }
  }
  printf("\n  %d factors checked from their chunks", checked);
  check_probe_destroy(p);
  tu_ctx_done(ctx);
  free(A), free(LU0), free(LU), free(ip), free(ipiv);
}

/* The LU checks read back (lu_check.c) by strips and, where the factor streams its rows, by two
 * passes over them (check.h check_lu_rows): the factor's probes (formed here and the load's) and
 * a solve from the factor file (with ||A||_inf recorded, and bounded by the factor's rows), each
 * on the right factor (rounding: under the thresholds) and on one with an entry of L and one of
 * U changed by 1e-6 (far above them): the same ratios to 1e-6 either way. The rows sources
 * (the factor's, and A's for the probes made here) fail any read by blocks: the row passes
 * alone read them. */
static ooc_status_t no_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                           double *dst, int64_t ld) {
  (void)self, (void)r0, (void)c0, (void)nr, (void)nc, (void)dst, (void)ld;
  return OOC_ERR_IO;
}

static void t_lu_check_rows(void) {
  const int64_t n = 300, m = 3, b = 16;
  struct gen_spec gs;
  gen_spec_default(&gs, GEN_RANDOM, n);
  gs.seed = 5;
  double *A = tu_gen_spec(&gs), *B = malloc((size_t)(n * m) * sizeof *B);
  double *X = malloc((size_t)(n * m) * sizeof *X), *LU = malloc((size_t)(n * n) * sizeof *LU);
  lapack_int *ip = malloc((size_t)n * sizeof *ip);
  int64_t *ipiv = malloc((size_t)n * sizeof *ipiv);
  double *LU0 = tu_lapack_lu(n, A, ip);
  CU_ASSERT_FATAL(LU0 != NULL && B && X && LU && ipiv);
  for (int64_t i = 0; i < n; i++) ipiv[i] = ip[i] - 1;
  for (int64_t i = 0; i < n * m; i++) B[i] = sin(0.37 * (double)i) + 0.1;
  memcpy(X, B, (size_t)(n * m) * sizeof *X);
  CU_ASSERT_FATAL(LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)m, LU0,
                                 (lapack_int)n, ip, X, (lapack_int)n) == 0);
  ooc_ctx_t *ctx = tu_ctx();
  check_probe_t *p = NULL;
  CU_ASSERT_FATAL(check_probe_create(ctx, ooc_ops_cpu(), n, &p) == OOC_OK);
  check_probe_a(p, 0, n, A, n);
  double a1 = tu_norm1(n, A), ainf = 0, eps = check_eps(0);
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < n; c++) s += fabs(A[i + c * n]);
    ainf = fmax(ainf, s);
  }
  tu_memsrc_t sa = {A, n}, sf = {LU, n}, sb = {B, n}, sx = {X, n};
  ooc_source_t srcB = {&sb, tu_mem_read, NULL, NULL};
  ooc_source_t byA[2] = {{&sa, tu_mem_read, NULL, NULL}, {&sa, no_read, NULL, tu_mem_rows}};
  ooc_source_t srcX = {&sx, tu_mem_read, NULL, NULL};
  ooc_source_t by[2] = {{&sf, tu_mem_read, NULL, NULL}, {&sf, no_read, NULL, tu_mem_rows}};
  static const int64_t where[][2] = {{-1, -1}, {250, 40}, {40, 250}}; /* none, L, U */
  for (size_t w = 0; w < sizeof where / sizeof *where; w++) {
    memcpy(LU, LU0, (size_t)(n * n) * sizeof *LU);
    if (where[w][0] >= 0) LU[where[w][0] + where[w][1] * n] *= 1 + 1e-6;
    double r[2][4]; /* [strips, rows][probes made, probes loaded, solve, solve bounding ||A||] */
    for (int k = 0; k < 2; k++) {
      CU_ASSERT(lu_check_factor(ctx, ooc_ops_cpu(), n, b, &byA[k], &by[k], ipiv, 0, a1, eps,
                                1 << 22, NULL, &r[k][0]) == OOC_OK);
      CU_ASSERT(lu_check_factor(ctx, ooc_ops_cpu(), n, b, NULL, &by[k], ipiv, 0, a1, eps, 1 << 22,
                                p, &r[k][1]) == OOC_OK);
      double x1[2];
      CU_ASSERT(lu_check_solve_factor(ctx, ooc_ops_cpu(), n, m, b, &by[k], ipiv, ainf, &srcB,
                                      &srcX, eps, 1 << 22, &r[k][2], &x1[0]) == OOC_OK);
      CU_ASSERT(lu_check_solve_factor(ctx, ooc_ops_cpu(), n, m, b, &by[k], ipiv, 0, &srcB, &srcX,
                                      eps, 1 << 22, &r[k][3], &x1[1]) == OOC_OK);
      CU_ASSERT(x1[0] > 0 && x1[0] == x1[1]);
    }
    for (int q = 0; q < 4; q++) {
      double lim = q < 2 ? 30 : 16;
      CU_ASSERT(where[w][0] < 0 ? r[0][q] < lim && r[1][q] < lim
                                : r[0][q] > lim && fabs(r[1][q] - r[0][q]) <= 1e-6 * r[0][q]);
    }
    printf("\n  %s: probes %.4g / %.4g, loaded %.4g / %.4g, solve %.4g / %.4g, bounded %.4g / "
           "%.4g (strips / rows)",
           w == 0 ? "right" : w == 1 ? "L changed" : "U changed", r[0][0], r[1][0], r[0][1],
           r[1][1], r[0][2], r[1][2], r[0][3], r[1][3]);
  }
  check_probe_destroy(p);
  tu_ctx_done(ctx);
  free(A), free(B), free(X), free(LU), free(LU0), free(ip), free(ipiv);
}

/* A factor's probe check with A T formed during the load (check.h check_probe_t), LU and
 * Cholesky: the check reads the Cholesky factor back and not A (twice by rows from a raw file:
 * at most 16 n^2 bytes, where reading A too would add 8 n^2 more), and nothing for LU (L (U T)
 * formed from the chunks as written, lu.h lu_fused_t), passes the right factor, and fails one
 * whose chunk was corrupted on its way to the file (each of the 4 in turn, but L's zero block),
 * leaving no output. With --check full
 * nothing is formed during the load. */
static void t_factor_probe(void) {
  const int64_t n = 600;
  write_probe_inputs(n, "fs.h5", "fg.h5");
  static const struct {
    ooc_method_t m;
    const char *in, *said;
  } cs[] = {{OOC_METHOD_LU, "fg.h5", "P A T formed while A was read, L (U T) while the factor "
                                     "was written; nothing read back"},
            {OOC_METHOD_CHOL, "fs.h5", "A T formed while A was read; L read back twice (by rows)"}};
  char out[1024]; /* (tu_path's buffers rotate) */
  snprintf(out, sizeof out, "%s", tu_path("fac.h5"));
  for (int k = 0; k < 2; k++) {
    printf("\n  %s:", cs[k].m == OOC_METHOD_LU ? "lu" : "chol");
    for (int q = 0; q <= 4; q++) {
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o = opts(300, cs[k].m);
      o.check = OOC_CHECK_PROBE;
      ooc_report_t rep;
      remove(out);
      if (q) ooc_fault_arm(ctx, OOC_FAULT_CORRUPT, q, 0, 0);
      ooc_status_t st = ooc_factor(ctx, tu_path(cs[k].in), out, &o, &rep);
      CU_ASSERT(strstr(rep.warnings, cs[k].said) != NULL);
      if (cs[k].m == OOC_METHOD_LU) { /* L (U T) from the chunks as written (lu_fused_t) */
        CU_ASSERT_EQUAL(rep.bytes_check_read, 0);
      } else {
        CU_ASSERT(rep.bytes_check_read > 0 && rep.bytes_check_read <= 16 * n * n); /* by rows */
      }
      /* chunk 2 of L is its upper block, all zeros: the flip makes a 0 into 2^-1022, an error
       * below any rounding, which passes (and must) */
      int zero = cs[k].m == OOC_METHOD_CHOL && q == 2;
      if (zero) {
        CU_ASSERT_EQUAL(ooc_fault_injected(ctx, OOC_FAULT_CORRUPT), 1);
        CU_ASSERT_EQUAL(st, OOC_OK);
        printf(", %.3g (the zero block)", rep.residual);
      } else if (q == 0) {
        CU_ASSERT_EQUAL(st, OOC_OK);
        CU_ASSERT(rep.residual < 30);
        CU_ASSERT(tu_file_exists(out));
        printf(" clean: probe ratio %.3g, read back %.2f x the input's bytes;", rep.residual,
               (double)rep.bytes_check_read / (8.0 * n * n));
      } else {
        CU_ASSERT_EQUAL(ooc_fault_injected(ctx, OOC_FAULT_CORRUPT), 1);
        ooc_fault_arm(ctx, OOC_FAULT_CORRUPT, 0, 0, 0);
        CU_ASSERT_EQUAL(st, OOC_ERR_ACCURACY);
        CU_ASSERT(!(rep.residual < 30));
        CU_ASSERT(!tu_file_exists(out));
        printf("%s%.3g", q == 1 ? " chunk corrupted, ratios " : ", ", rep.residual);
      }
      tu_ctx_done(ctx);
    }
    ooc_ctx_t *ctx = tu_ctx(); /* --check full: the exact ratio, A read back */
    ooc_opts_t o = opts(300, cs[k].m);
    ooc_report_t rep;
    remove(out);
    CU_ASSERT_EQUAL(ooc_factor(ctx, tu_path(cs[k].in), out, &o, &rep), OOC_OK);
    CU_ASSERT(rep.residual < 30);
    CU_ASSERT(strstr(rep.warnings, "T formed while A was read") == NULL);
    CU_ASSERT(rep.bytes_check_read > 8 * n * n);
    tu_ctx_done(ctx);
  }
}

/* The fused check's run under faults (its tap thread runs beside every chunk write): the Nth
 * host allocation, the Nth file operation (EIO, once) and the Nth writing one (ENOSPC, from
 * then on) fail, for N = 1, 2, ... (with a stride: at most ~40 runs a kind) until the run
 * completes. Each time: the expected status, nothing leaked (tu_ctx_done), no output unless the
 * run succeeded or failed after the rename (the directory's fsync: the message says so and the
 * file is the whole result), and a success passed the fused check. */
static void t_fused_faults(void) {
  static const struct {
    ooc_fault_kind_t kind;
    int persistent, err;
    ooc_status_t want;
    const char *name;
  } ks[] = {{OOC_FAULT_ALLOC, 0, 0, OOC_ERR_NOMEM, "alloc once"},
            {OOC_FAULT_IO, 0, EIO, OOC_ERR_IO, "EIO once"},
            {OOC_FAULT_IO_WRITE, 1, ENOSPC, OOC_ERR_NOSPACE, "ENOSPC from then on"}};
  char out[1024], in[1024]; /* tu_path's buffers rotate: keep copies */
  snprintf(out, sizeof out, "%s", tu_path("ff.inv.h5"));
  snprintf(in, sizeof in, "%s", tu_path("fs.h5"));
  for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
    ooc_opts_t o = opts(300, OOC_METHOD_CHOL);
    o.check = OOC_CHECK_PROBE;
    ooc_report_t rep;
    ooc_ctx_t *c0 = tu_ctx(); /* a clean run counts the calls */
    remove(out);
    ooc_fault_arm(c0, ks[k].kind, 0, 0, 0);
    ooc_status_t s0 = ooc_invert(c0, in, out, &o, &rep);
    if (s0 != OOC_OK) printf("\n  clean run: %s", ooc_ctx_error(c0));
    CU_ASSERT_EQUAL_FATAL(s0, OOC_OK);
    CU_ASSERT(strstr(rep.warnings, "first product formed while A was read") != NULL);
    int64_t calls = ooc_fault_calls(c0, ks[k].kind), stride = ooc_max64(1, calls / 40);
    tu_ctx_done(c0);
    int runs = 0, failed = 0, other = 0, after = 0;
    for (int64_t nth = 1;; nth += stride) {
      ooc_ctx_t *ctx = tu_ctx();
      remove(out);
      ooc_fault_arm(ctx, ks[k].kind, nth, ks[k].persistent, ks[k].err);
      ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
      int hit = ooc_fault_injected(ctx, ks[k].kind) > 0;
      ooc_fault_arm(ctx, ks[k].kind, 0, 0, 0);
      runs++;
      if (st == OOC_OK) {
        CU_ASSERT(tu_file_exists(out) && rep.residual < 30);
      } else {
        failed++;
        /* complete and verified, or absent: present only when the failure came after the
         * rename (the directory's fsync), which the message says; it is then the whole result */
        if (tu_file_exists(out)) {
          after++;
          CU_ASSERT(strstr(ooc_ctx_error(ctx), "written, but syncing directory") != NULL);
          int64_t r = 0, c = 0;
          double *X = tu_read_matrix(out, &r, &c);
          CU_ASSERT(X != NULL && r == 600 && c == 600);
          free(X);
        }
        CU_ASSERT(strlen(ooc_ctx_error(ctx)) > 0);
        if (st != ks[k].want) other++;
      }
      tu_ctx_done(ctx); /* no leak, whatever the status */
      if (!hit || nth > calls) break;
    }
    /* a failed fault is reported as itself (an allocation failure inside HDF5 may surface as
     * an I/O error): most of them must carry the expected status */
    CU_ASSERT(failed > 0 && other * 4 <= failed);
    printf("\n  %s: %d runs (stride %lld of %lld calls), %d failed (%d with another status, %d "
           "after the rename), no leak in any", ks[k].name, runs, (long long)stride,
           (long long)calls, failed, other, after);
  }
  printf("\n");
}

/* ---- the load's read-ahead (job.c load_ahead) ---------------------------------------------- */

/* Every load of a file reads its next strip on a thread of its own (report.strips_read_ahead),
 * and the output is the same, bit for bit, as with OOCSOLVE_NO_READ_AHEAD (every strip read on
 * the caller's thread, 0 strips) and OOCSOLVE_NO_WRITE_BEHIND (each row block written before
 * the next is gathered) and OOCSOLVE_WRITE_FLUSH=0 (no writeback asked for during the write
 * phase; the default run asks every millisecond, job.c flusher_task, so that a write phase of
 * a few milliseconds has the flusher beside it): chol and gj inverses (A's load), an LU solve
 * (A's and B's), tile 64 (strips of a few tile columns: several per load). */
static void t_load_ahead(void) {
  const int64_t n = 600, m = 7;
  write_probe_inputs(n, "fs.h5", "fg.h5");
  double *B = tu_rand_matrix(n, m, 79);
  tu_write_matrix(tu_path("lab.h5"), "/B", n, m, B, 2);
  free(B);
  static const struct {
    ooc_method_t m;
    const char *in;
    int solve;
  } cs[] = {{OOC_METHOD_CHOL, "fs.h5", 0}, {OOC_METHOD_GJ, "fg.h5", 0}, {OOC_METHOD_LU, "fg.h5", 1}};
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    double *X[2] = {NULL, NULL};
    int64_t r[2], c[2], strips[2] = {-1, -1};
    for (int off = 0; off < 2; off++) {
      if (off) setenv("OOCSOLVE_NO_READ_AHEAD", "1", 1);
      if (off) setenv("OOCSOLVE_NO_WRITE_BEHIND", "1", 1); /* (job.c write_rows) */
      setenv("OOCSOLVE_WRITE_FLUSH", off ? "0" : "1", 1);
      ooc_ctx_t *ctx = tu_ctx();
      ooc_opts_t o = opts(64, cs[k].m);
      ooc_report_t rep;
      char out[1024];
      snprintf(out, sizeof out, "%s", tu_path(off ? "la1.h5:/X" : "la0.h5:/X"));
      ooc_status_t st = cs[k].solve ? ooc_solve(ctx, tu_path(cs[k].in), tu_path("lab.h5"), out, &o, &rep)
                                    : ooc_invert(ctx, tu_path(cs[k].in), out, &o, &rep);
      unsetenv("OOCSOLVE_NO_READ_AHEAD");
      unsetenv("OOCSOLVE_NO_WRITE_BEHIND");
      unsetenv("OOCSOLVE_WRITE_FLUSH");
      CU_ASSERT_EQUAL(st, OOC_OK);
      if (st != OOC_OK) printf("\n  %s\n", ooc_ctx_error(ctx));
      tu_ctx_done(ctx);
      if (st != OOC_OK) continue;
      CU_ASSERT(rep.residual < (cs[k].solve ? 16 : 30));
      strips[off] = rep.strips_read_ahead;
      X[off] = tu_read_matrix(out, &r[off], &c[off]);
    }
    /* A's load has 10 tile columns in strips of a few: at least one strip read ahead, and
     * with the solve B's too */
    CU_ASSERT(strips[0] >= (cs[k].solve ? 2 : 1));
    CU_ASSERT_EQUAL(strips[1], 0);
    CU_ASSERT_FATAL(X[0] && X[1] && r[0] == r[1] && c[0] == c[1]);
    CU_ASSERT(memcmp(X[0], X[1], (size_t)(r[0] * c[0]) * sizeof(double)) == 0);
    printf("\n  %s%s: %lld strips read ahead", cs[k].solve ? "solve " : "", cs[k].in,
           (long long)strips[0]);
    free(X[0]);
    free(X[1]);
  }
}

/* ---- A read while LU runs (job.c lazy_room, lu_args_t.need) ------------------------------- */

/* One --method lu run on the CPU (stripe 128, tile 64: several steps, so the factor asks for A
 * in pieces): factor (b NULL) or solve. read_first 1: A all read before (OOCSOLVE_LAZY_READ=0);
 * 0: A read as the factor asks for it (OOCSOLVE_LAZY_READ=1); -1: as job.c decides (unset). */
static int64_t g_lazy_mem; /* --host-mem of lazy_run (0: the default) */
static int64_t g_lazy_fault, g_lazy_calls; /* the seam's call to fail (0: none); its calls */
static ooc_fault_kind_t g_lazy_kind = OOC_FAULT_IO; /* the seam lazy_run arms */

/* The strips the read-ahead thread read, from the report (-1: not said) */
static int64_t strips_ahead(const ooc_report_t *r) {
  const char *p = strstr(r->warnings, "read ahead: ");
  long long k = -1;
  if (p) sscanf(p + strlen("read ahead: "), "%lld", &k);
  return k;
}

/* The outputs out and out2 (FILE:/dset) hold the same matrix, bit for bit. */
static void same_bits(const char *out, const char *out2) {
  int64_t r, c, r_, c_;
  char s1[1100], s2[1100];
  snprintf(s1, sizeof s1, "%s", out);
  snprintf(s2, sizeof s2, "%s", out2);
  double *X1 = tu_read_matrix(s1, &r, &c), *X2 = tu_read_matrix(s2, &r_, &c_);
  CU_ASSERT_FATAL(X1 && X2 && r == r_ && c == c_);
  CU_ASSERT(memcmp(X1, X2, (size_t)(r * c) * sizeof(double)) == 0);
  free(X1);
  free(X2);
}

static ooc_method_t g_lazy_method = OOC_METHOD_LU; /* chol, gj: lazy_run inverts */
static ooc_status_t lazy_run(const char *a, const char *b, const char *out, int read_first,
                             int ckpt_step, ooc_report_t *rep, char *err, size_t cap) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o = opts(64, g_lazy_method);
  o.stripe = 128;
  o.host_mem = g_lazy_mem;
  if (ckpt_step) o.checkpoint = OOC_CHECKPOINT_EVERY_STEP;
  if (read_first < 0) unsetenv("OOCSOLVE_LAZY_READ"); /* -1: as job.c decides by default */
  else setenv("OOCSOLVE_LAZY_READ", read_first ? "0" : "1", 1); /* ("0": never) */
  remove(out);
  if (g_lazy_fault) ooc_fault_arm(ctx, g_lazy_kind, g_lazy_fault, 0, EIO);
  else ooc_fault_arm(ctx, g_lazy_kind, 0, 0, 0); /* (counts from here) */
  ooc_status_t st = b ? ooc_solve(ctx, a, b, out, &o, rep)
                     : g_lazy_method != OOC_METHOD_LU ? ooc_invert(ctx, a, out, &o, rep)
                                                        : ooc_factor(ctx, a, out, &o, rep);
  g_lazy_calls = ooc_fault_calls(ctx, g_lazy_kind);
  ooc_fault_arm(ctx, g_lazy_kind, 0, 0, 0);
  unsetenv("OOCSOLVE_LAZY_READ");
  snprintf(err, cap, "%s", ooc_ctx_error(ctx));
  tu_ctx_done(ctx);
  return st;
}

/* I/O (kind 0) or allocation (1) faults while the read-ahead's thread reads (the seams count
 * its reads and allocations with the rest: which of the two threads' calls is the Nth is not
 * fixed), at about `samples` call numbers spread over a lazy run of A into out (file: out's
 * file): every run gives X (r x c, the run that read A first) bit for bit, or fails with the
 * error's message and no output, and leaks nothing (tu_ctx_done). */
static void lazy_faults(int kind, const char *a, const char *out, const char *file,
                        const double *X, int64_t r_, int64_t c_, int64_t samples) {
  g_lazy_kind = kind ? OOC_FAULT_ALLOC : OOC_FAULT_IO;
  ooc_report_t rc;
  char err[2048];
  CU_ASSERT_EQUAL_FATAL(lazy_run(a, NULL, out, 0, 0, &rc, err, sizeof err), OOC_OK);
  int64_t calls = g_lazy_calls, step = ooc_max64(1, calls / samples), ok = 0, failed = 0;
  char f1[1100];
  snprintf(f1, sizeof f1, "%s", file);
  for (g_lazy_fault = 1; g_lazy_fault <= calls; g_lazy_fault += step) {
    ooc_report_t rf;
    char e[2048];
    remove(f1);
    if (lazy_run(a, NULL, out, 0, 0, &rf, e, sizeof e) == OOC_OK) {
      char s1[1100];
      snprintf(s1, sizeof s1, "%s", out);
      int64_t r, c;
      double *X1 = tu_read_matrix(s1, &r, &c);
      CU_ASSERT(X1 && r == r_ && c == c_ && memcmp(X1, X, (size_t)(r * c) * sizeof(double)) == 0);
      free(X1);
      ok++;
    } else {
      CU_ASSERT(e[0] != 0);
      /* (a fault in the directory's sync after the rename: the output is complete, and the
       * error says so) */
      CU_ASSERT(!tu_file_exists(f1) || strstr(e, "written, but syncing directory") != NULL);
      failed++;
    }
  }
  g_lazy_fault = 0;
  g_lazy_kind = OOC_FAULT_IO;
  CU_ASSERT(failed > 0);
  printf("\n  %s faults at 1 to %lld in steps of %lld: %lld runs failed cleanly, %lld passed "
         "with the same bits", kind ? "allocation" : "I/O", (long long)calls, (long long)step,
         (long long)failed, (long long)ok);
}

/* The output's data, bit for bit, against the run that read A first; the report says which
 * ran; a NaN in A's last column, every entry zero, and a zero column in the middle give the
 * errors (and LAPACK's info) a load before the run gives; a checkpoint after every step (the
 * journal names the input by the hash of all of it) reads the rest first. */
static void t_lazy_lu(void) {
  const int64_t n = 600, m = 5;
  double *G = tu_rand_matrix(n, n, 77), *B = tu_rand_matrix(n, m, 78);
  tu_write_matrix(tu_path("lz.h5"), "/A", n, n, G, 2);
  tu_write_matrix(tu_path("lzb.h5"), "/B", n, m, B, 2);
  char out[1024], out2[1024], err[2048], a[1024], bb[1024];
  snprintf(out, sizeof out, "%s", tu_path("lzo.h5:/LU"));
  snprintf(out2, sizeof out2, "%s", tu_path("lzo2.h5:/LU"));
  snprintf(a, sizeof a, "%s", tu_path("lz.h5:/A"));
  snprintf(bb, sizeof bb, "%s", tu_path("lzb.h5:/B"));
  const char *said = "A read while the factor ran";
  for (int solve = 0; solve < 2; solve++)
    for (int ck = 0; ck < 2; ck++) {
      ooc_report_t r1, r2;
      CU_ASSERT_EQUAL_FATAL(lazy_run(a, solve ? bb : NULL, out, 0, ck, &r1, err, sizeof err),
                            OOC_OK);
      CU_ASSERT_EQUAL_FATAL(lazy_run(a, solve ? bb : NULL, out2, 1, ck, &r2, err, sizeof err),
                            OOC_OK);
      CU_ASSERT(strstr(r1.warnings, said) != NULL);
      CU_ASSERT(strstr(r2.warnings, said) == NULL);
      /* the strips after the first ask are read by the read-ahead's thread (job.c
       * job_loader_ahead); with a checkpoint after every step the rest is read first */
      if (!ck) CU_ASSERT(strips_ahead(&r1) > 0);
      printf("\n  %s%s: %lld strips read ahead", solve ? "solve" : "factor",
             ck ? ", checkpoints" : "", (long long)strips_ahead(&r1));
      CU_ASSERT(r1.residual < (solve ? 16 : 30));
      same_bits(out, out2);
    }
  /* --host-mem from less than A (its tiles then fall back on the input: the strip's room comes
   * out of the cache) to what holds A, B and LU's workspace with a little more: A is read as
   * asked, once (A and B's bytes from the input, nothing reread), and the peak stays within it */
  int lazy_seen = 0, backed_seen = 0;
  for (g_lazy_mem = 3 << 20; g_lazy_mem <= 7 << 20; g_lazy_mem += 1 << 19) {
    ooc_report_t r1;
    ooc_status_t s1 = lazy_run(a, bb, out, 0, 0, &r1, err, sizeof err);
    if (s1 != OOC_OK) continue; /* too small for the run at all (the plan says so) */
    CU_ASSERT(r1.host_peak <= r1.host_budget);
    int lz = strstr(r1.warnings, said) != NULL;
    lazy_seen += lz;
    backed_seen += lz && r1.bytes_spilled > 0;
    if (lz) CU_ASSERT_EQUAL(r1.bytes_input, 8 * n * (n + m));
    CU_ASSERT_EQUAL(r1.bytes_reread_input, 0);
    if (!lz || r1.bytes_spilled == 0) continue;
    /* spilled: the same bits as A read first (which reads the tiles it dropped again) */
    ooc_report_t r2;
    CU_ASSERT_EQUAL_FATAL(lazy_run(a, bb, out2, 1, 0, &r2, err, sizeof err), OOC_OK);
    CU_ASSERT(strstr(r2.warnings, said) == NULL);
    same_bits(out, out2);
  }
  g_lazy_mem = 0;
  CU_ASSERT(lazy_seen > 0 && backed_seen > 0);
  /* I/O and allocation faults while the read-ahead's thread reads (the seams count its reads
   * and allocations with the rest: which of the two threads' calls is the Nth is not fixed):
   * every run gives the factor of the run that read A first, bit for bit, or fails with the
   * error's message and no output, and leaks nothing (tu_ctx_done) */
  for (int kind = 0; kind < 2; kind++) {
    ooc_report_t r0;
    CU_ASSERT_EQUAL_FATAL(lazy_run(a, NULL, out2, 1, 0, &r0, err, sizeof err), OOC_OK);
    char s2[1100];
    snprintf(s2, sizeof s2, "%s", out2);
    int64_t r_, c_;
    double *X2 = tu_read_matrix(s2, &r_, &c_);
    CU_ASSERT_FATAL(X2 != NULL);
    lazy_faults(kind, a, out, tu_path("lzo.h5"), X2, r_, c_, 40);
    free(X2);
  }
  g_lazy_kind = OOC_FAULT_IO;
  printf("\n  --host-mem 3 to 7 MiB: %d runs read A as asked, %d of them spilled, each within "
         "it and reading A once", lazy_seen, backed_seen);
  /* the input's faults: a NaN in the last column, all zeros, a zero column in the middle */
  for (int k = 0; k < 3; k++) {
    double *F = malloc((size_t)(n * n) * sizeof(double));
    memcpy(F, G, (size_t)(n * n) * sizeof(double));
    if (k == 0) F[3 + (n - 1) * n] = NAN;
    if (k == 1) memset(F, 0, (size_t)(n * n) * sizeof(double));
    if (k == 2) memset(F + 300 * n, 0, (size_t)n * sizeof(double));
    tu_write_matrix(tu_path("lzf.h5"), "/A", n, n, F, 2);
    free(F);
    char fa[1024], e1[2048], e2[2048];
    snprintf(fa, sizeof fa, "%s", tu_path("lzf.h5:/A"));
    ooc_report_t r1, r2;
    ooc_status_t s1 = lazy_run(fa, NULL, out, 0, 0, &r1, e1, sizeof e1);
    ooc_status_t s2 = lazy_run(fa, NULL, out2, 1, 0, &r2, e2, sizeof e2);
    static const ooc_status_t want[] = {OOC_ERR_NONFINITE, OOC_ERR_SINGULAR, OOC_ERR_SINGULAR};
    CU_ASSERT_EQUAL(s1, want[k]);
    CU_ASSERT_EQUAL(s2, want[k]);
    CU_ASSERT_STRING_EQUAL(e1, e2);
    CU_ASSERT_EQUAL(r1.info, r2.info);
    if (k == 1) CU_ASSERT(strstr(e1, "all zeros") != NULL);
    if (k == 2) CU_ASSERT_EQUAL(r1.info, 301);
    printf("\n  input fault %d: %s", k, e1);
  }
  free(G);
  free(B);
}

/* The same for --method chol's inverse (chol_args_t.need: its first step asks for A, left to
 * right; stripe 128 of n = 600, 5 steps): the inverse bit for bit the same as the run that read
 * A first, with and without a checkpoint after every step (the first is written after the load's
 * end); I/O and allocation faults on either thread fail cleanly or give the same bits; a
 * --host-mem sweep stays within each budget, reading lazily where the room allows; a float32
 * input the same; the input's faults give the errors, messages and info a load before the run gives: a NaN
 * in the last column, an asymmetric pair in the last tile column (the load's verdict, not the
 * sweep's), every entry zero (the load's message, not the first minor's), and a matrix that is
 * not positive definite only in its last step (the sweep's verdict after the whole load, the
 * same minor). */
/* --method gj reading A as step 0's sweep asks for it, left to right (gj.c gj_targets), in
 * memory (OOCSOLVE_LAZY_READ=1) and beyond it (the input backs the tiles; the strip's room out
 * of the cache; job.c lazy_room's default there): the inverse and the solve bit for bit as A read
 * first, A (and B) read once, the peak within --host-mem; journaled every step; a NaN in A's
 * last column gives the load's error. */
static void t_lazy_gj(void) {
  const int64_t n = 600, m = 3;
  double *G = tu_rand_matrix(n, n, 91), *Bm = tu_rand_matrix(n, m, 92);
  tu_write_matrix(tu_path("lg.h5"), "/A", n, n, G, 2);
  tu_write_matrix(tu_path("lgb.h5"), "/B", n, m, Bm, 2);
  char out[1024], out2[1024], err[2048], a[1024], bb[1024];
  snprintf(out, sizeof out, "%s", tu_path("lgo.h5:/X"));
  snprintf(out2, sizeof out2, "%s", tu_path("lgo2.h5:/X"));
  snprintf(a, sizeof a, "%s", tu_path("lg.h5:/A"));
  snprintf(bb, sizeof bb, "%s", tu_path("lgb.h5:/B"));
  g_lazy_method = OOC_METHOD_GJ;
  int spilled_seen = 0;
  static const int64_t mems[] = {0, 3 << 20};
  for (int mi = 0; mi < 2; mi++)
    for (int solve = 0; solve < 2; solve++)
      for (int ck = 0; ck < 2; ck++) {
        g_lazy_mem = mems[mi];
        ooc_report_t r1, r2;
        ooc_status_t st = lazy_run(a, solve ? bb : NULL, out, 0, ck, &r1, err, sizeof err);
        if (st != OOC_OK) printf("\n  %s", err);
        CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
        CU_ASSERT_EQUAL_FATAL(lazy_run(a, solve ? bb : NULL, out2, 1, ck, &r2, err, sizeof err),
                              OOC_OK);
        const char *said = solve ? "gj: A read while the solve ran" :
                                   "gj: A read while the inversion ran";
        CU_ASSERT(strstr(r1.warnings, said) != NULL);
        CU_ASSERT(strstr(r2.warnings, "A read while") == NULL);
        CU_ASSERT(r1.steps > 1 && r1.residual < (solve ? 16 : 30));
        CU_ASSERT(r1.host_peak <= r1.host_budget);
        CU_ASSERT_EQUAL(r1.bytes_input, 8 * n * (n + (solve ? m : 0)));
        CU_ASSERT_EQUAL(r1.bytes_reread_input, 0);
        spilled_seen += r1.bytes_spilled > 0;
        printf("\n  %s%s, --host-mem %s: input %lld bytes (read first: %lld), spilled %lld",
               solve ? "solve" : "inverse", ck ? ", checkpoints" : "", mi ? "3M" : "default",
               (long long)r1.bytes_input, (long long)r2.bytes_input,
               (long long)r1.bytes_spilled);
        same_bits(out, out2);
        if (mi == 1) { /* backed: lazy by default, the same bits */
          ooc_report_t r3;
          CU_ASSERT_EQUAL_FATAL(lazy_run(a, solve ? bb : NULL, out2, -1, ck, &r3, err, sizeof err),
                                OOC_OK);
          CU_ASSERT(r3.bytes_spilled > 0 && strstr(r3.warnings, said) != NULL);
          CU_ASSERT(r3.bytes_input == r1.bytes_input && r3.bytes_reread_input == 0);
          same_bits(out, out2);
        }
      }
  CU_ASSERT(spilled_seen > 0); /* (3 MiB: beyond host memory) */
  { /* a NaN in the last column: the error a whole load gives, no output */
    G[(n - 1) * n + 5] = NAN;
    tu_write_matrix(tu_path("lgf.h5"), "/A", n, n, G, 2);
    char af[1024], of[1024];
    snprintf(af, sizeof af, "%s", tu_path("lgf.h5:/A"));
    snprintf(of, sizeof of, "%s", tu_path("lgfo.h5"));
    for (int mi = 0; mi < 2; mi++) {
      g_lazy_mem = mems[mi];
      ooc_report_t rf;
      CU_ASSERT_EQUAL(lazy_run(af, NULL, out, 0, 0, &rf, err, sizeof err), OOC_ERR_NONFINITE);
      CU_ASSERT(strstr(err, "element [5, 599] is NaN") != NULL);
      CU_ASSERT(!tu_file_exists(of));
    }
  }
  g_lazy_mem = 0;
  g_lazy_method = OOC_METHOD_LU;
  free(G);
  free(Bm);
  printf("\n");
}

static void t_lazy_chol(void) {
  const int64_t n = 600;
  gen_spec_t gs;
  gen_spec_default(&gs, GEN_MATERN, n);
  double *S = tu_gen_spec(&gs);
  tu_write_matrix(tu_path("lc.h5"), "/A", n, n, S, 2);
  char out[1024], out2[1024], err[2048], a[1024], o1[1024];
  snprintf(out, sizeof out, "%s", tu_path("lco.h5:/X"));
  snprintf(out2, sizeof out2, "%s", tu_path("lco2.h5:/X"));
  snprintf(a, sizeof a, "%s", tu_path("lc.h5:/A"));
  snprintf(o1, sizeof o1, "%s", tu_path("lco.h5"));
  const char *said = "A read while the first step ran";
  g_lazy_method = OOC_METHOD_CHOL;
  int64_t r_, c_;
  double *X2 = NULL;
  for (int ck = 0; ck < 2; ck++) {
    ooc_report_t r1, r2;
    ooc_status_t st = lazy_run(a, NULL, out, 0, ck, &r1, err, sizeof err);
    if (st != OOC_OK) printf("\n  %s", err);
    CU_ASSERT_EQUAL_FATAL(st, OOC_OK);
    CU_ASSERT_EQUAL_FATAL(lazy_run(a, NULL, out2, 1, ck, &r2, err, sizeof err), OOC_OK);
    CU_ASSERT(strstr(r1.warnings, said) != NULL);
    CU_ASSERT(strstr(r2.warnings, said) == NULL);
    CU_ASSERT(strips_ahead(&r1) > 0); /* read on from the load's end, on the thread */
    CU_ASSERT_EQUAL(r1.steps, 5);
    CU_ASSERT(r1.residual < 30);
    CU_ASSERT_EQUAL(memcmp(&r1.logdet, &r2.logdet, sizeof r1.logdet), 0);
    printf("\n  inverse%s: %lld strips read ahead", ck ? ", checkpoints" : "",
           (long long)strips_ahead(&r1));
    int64_t r, c;
    char s1[1100], s2[1100];
    snprintf(s1, sizeof s1, "%s", out);
    snprintf(s2, sizeof s2, "%s", out2);
    double *X1 = tu_read_matrix(s1, &r, &c);
    free(X2);
    X2 = tu_read_matrix(s2, &r_, &c_);
    CU_ASSERT_FATAL(X1 && X2 && r == r_ && c == c_);
    CU_ASSERT(memcmp(X1, X2, (size_t)(r * c) * sizeof(double)) == 0);
    free(X1);
  }
  for (int kind = 0; kind < 2; kind++) /* X2: the last read-first inverse */
    lazy_faults(kind, a, out, o1, X2, r_, c_, 30);
  /* --host-mem from too little to plenty: the loader's strip and the symmetry check's copy fit
   * beside the cache or A is read first, and either way the peak stays within it */
  int lazy_seen = 0, first_seen = 0;
  for (g_lazy_mem = 1 << 20; g_lazy_mem <= 8 << 20; g_lazy_mem += 1 << 19) {
    ooc_report_t r1;
    if (lazy_run(a, NULL, out, 0, 0, &r1, err, sizeof err) != OOC_OK) continue; /* too small */
    CU_ASSERT(r1.host_peak <= r1.host_budget);
    int lz = strstr(r1.warnings, said) != NULL;
    lazy_seen += lz;
    first_seen += !lz;
  }
  g_lazy_mem = 0;
  CU_ASSERT(lazy_seen > 0 && first_seen > 0);
  printf("\n  --host-mem 1 to 8 MiB: %d runs read A as asked, %d first, each within it",
         lazy_seen, first_seen);
  free(X2);
  { /* a float32 input: the symmetry check's copy is float (job.c job_loader_t.lc) */
    char a32[1024];
    snprintf(a32, sizeof a32, "%s", tu_path("lc32.h5:/A"));
    tu_write_matrix(tu_path("lc32.h5"), "/A", n, n, S, 1);
    ooc_report_t r1, r2;
    CU_ASSERT_EQUAL(lazy_run(a32, NULL, out, 0, 0, &r1, err, sizeof err), OOC_OK);
    CU_ASSERT_EQUAL(lazy_run(a32, NULL, out2, 1, 0, &r2, err, sizeof err), OOC_OK);
    CU_ASSERT(strstr(r1.warnings, said) != NULL);
    char s1[1100], s2[1100];
    snprintf(s1, sizeof s1, "%s", out);
    snprintf(s2, sizeof s2, "%s", out2);
    int64_t r, c;
    double *X1 = tu_read_matrix(s1, &r, &c);
    X2 = tu_read_matrix(s2, &r_, &c_);
    CU_ASSERT(X1 && X2 && r == r_ && c == c_ &&
              memcmp(X1, X2, (size_t)(r * c) * sizeof(double)) == 0);
    free(X1);
    free(X2);
  }
  for (int k = 0; k < 4; k++) {
    double *F = malloc((size_t)(n * n) * sizeof(double));
    memcpy(F, S, (size_t)(n * n) * sizeof(double));
    if (k == 0) F[3 + (n - 1) * n] = NAN;
    if (k == 1) F[(n - 1) + 2 * n] += 1e-3; /* (n-1, 2) against (2, n-1) */
    if (k == 2) memset(F, 0, (size_t)(n * n) * sizeof(double));
    if (k == 3) F[(n - 1) + (n - 1) * n] = -1.0; /* the last minor */
    tu_write_matrix(tu_path("lcf.h5"), "/A", n, n, F, 2);
    free(F);
    char fa[1024], e1[2048], e2[2048];
    snprintf(fa, sizeof fa, "%s", tu_path("lcf.h5:/A"));
    ooc_report_t r1, r2;
    remove(o1);
    ooc_status_t s1 = lazy_run(fa, NULL, out, 0, 0, &r1, e1, sizeof e1);
    ooc_status_t s2 = lazy_run(fa, NULL, out2, 1, 0, &r2, e2, sizeof e2);
    static const ooc_status_t want[] = {OOC_ERR_NONFINITE, OOC_ERR_NOT_SPD, OOC_ERR_NOT_SPD,
                                        OOC_ERR_NOT_SPD};
    CU_ASSERT_EQUAL(s1, want[k]);
    CU_ASSERT_EQUAL(s2, want[k]);
    CU_ASSERT_STRING_EQUAL(e1, e2);
    CU_ASSERT_EQUAL(r1.info, r2.info);
    CU_ASSERT(!tu_file_exists(o1));
    if (k == 1) CU_ASSERT(strstr(e1, "symmetric") != NULL);
    if (k == 2) CU_ASSERT(strstr(e1, "all zeros") != NULL);
    if (k == 3) CU_ASSERT_EQUAL(r1.info, n);
    printf("\n  input fault %d: %s", k, e1);
  }
  g_lazy_method = OOC_METHOD_LU;
  free(S);
}

/* ---- the disk tier's traffic against the stripe arithmetic (plan_spill_model) ------------- */

enum { M_GJ, M_CHOL, M_LU };

/* One elimination (gj or chol inverse, or LU's factor on its host executor with the default
 * chunk) on a store filled as job.c's loader fills it, with a cache of `cap` bytes; the bytes
 * spilled and read back by the elimination alone, and (loaded, may be NULL) what the load
 * itself spilled. */
static int64_t g_model_alone; /* run_model_case: bytes its elimination moved one tile at a time */
static void run_model_case(int method, int64_t n, int64_t b, int64_t W, int64_t cap,
                           int64_t *spilled, int64_t *unspilled, int64_t *loaded) {
  ooc_ctx_t *ctx = tu_ctx();
  int chol = method == M_CHOL;
  gen_spec_t s;
  gen_spec_default(&s, chol ? GEN_MATERN : method == M_LU ? GEN_RANDOM : GEN_DIAGDOM, n);
  double *A = tu_gen_spec(&s);
  tcache_t *cache = NULL;
  tstore_t *st = NULL;
  tu_spill_t sl = {ctx, "model", NULL, 0};
  ooc_spill_ops_t sp = {&sl, tu_sp_open, tu_sp_put, tu_sp_get, 1};
  CU_ASSERT_FATAL(tcache_create(ctx, cap, &cache) == OOC_OK);
  CU_ASSERT_FATAL(tstore_create(ctx, cache, n, n, b, NULL, &sp, &st) == OOC_OK);
  part_t cp = ts_cols(st);
  double *cn = calloc((size_t)n, sizeof *cn);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) cn[j] += fabs(A[i + j * n]);
  for (int64_t tj = 0; tj < cp.count; tj++) { /* the loader: lower tiles for chol */
    double *col = A + part_start(cp, tj) * n;
    ooc_status_t pr = chol ? ts_put_tiles(st, tj, cp.count, tj, tj + 1, col + part_start(cp, tj), n)
                           : ts_put_col(st, tj, col, n);
    CU_ASSERT_FATAL(pr == OOC_OK);
  }
  int64_t s0 = ts_stats(st)->bytes_spilled, u0 = ts_stats(st)->bytes_unspilled, info = 0;
  int64_t a0 = ts_stats(st)->bytes_spilled_alone + ts_stats(st)->bytes_unspilled_alone;
  int64_t *perm = malloc((size_t)n * sizeof *perm);
  ooc_status_t rc;
  if (chol) {
    chol_args_t ca = {.A = st, .stripe = W, .ops = ooc_ops_cpu(), .job = CHOL_INVERT,
                      .lower_only = 1};
    chol_stats_t cs;
    double logdet = 0;
    rc = chol_run(ctx, &ca, &cs, &info, &logdet);
  } else if (method == M_LU) {
    lu_args_t la = {.A = st, .stripe = W, .ops = ooc_ops_cpu(), .job = LU_FACTOR,
                    .colnorm = cn, .ipiv = perm};
    lu_stats_t ls;
    rc = lu_run(ctx, &la, &ls, &info);
  } else {
    gj_args_t ga = {.A = st, .stripe = W, .ops = ooc_ops_cpu(), .colnorm = cn, .perm = perm};
    gj_stats_t gs;
    rc = gj_run(ctx, &ga, &gs, &info);
  }
  CU_ASSERT_EQUAL(rc, OOC_OK);
  *spilled = ts_stats(st)->bytes_spilled - s0;
  *unspilled = ts_stats(st)->bytes_unspilled - u0;
  g_model_alone = ts_stats(st)->bytes_spilled_alone + ts_stats(st)->bytes_unspilled_alone - a0;
  if (loaded) *loaded = s0;
  free(perm);
  tstore_destroy(st);
  tcache_destroy(cache);
  scratch_close(sl.s);
  free(cn);
  free(A);
  tu_ctx_done(ctx);
}

/* With a one-byte cache every tile goes to scratch at each put and comes back at each take:
 * the measured bytes equal the model's exactly (gj and chol, tiles that divide n or not, one
 * step or several). With caches of a quarter, half and all of the matrix: at most the model,
 * and nothing at all when everything fits; and none of it moved one tile at a time (the
 * eliminations' evictions all go through make_room, their reads through blocks: tstore.h
 * "Scratch transfers"). */
static void t_spill_model(void) {
  static const struct {
    int chol;
    int64_t n, b, W;
  } cs[] = {{0, 96, 16, 32}, {0, 100, 16, 32}, {0, 120, 24, 48}, {0, 100, 16, 100},
            {1, 96, 16, 32}, {1, 100, 16, 32}, {1, 120, 24, 48}, {1, 100, 16, 16}};
  int exact = 0, bounded = 0;
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    int64_t n = cs[k].n, sp = 0, un = 0;
    plan_traffic_t m = plan_spill_model(cs[k].chol, n, cs[k].b, cs[k].W);
    run_model_case(cs[k].chol ? M_CHOL : M_GJ, n, cs[k].b, cs[k].W, 1, &sp, &un, NULL);
    CU_ASSERT_EQUAL(sp, m.spilled);
    CU_ASSERT_EQUAL(un, m.unspilled);
    exact += sp == m.spilled && un == m.unspilled;
    printf("\n  %s n %lld tile %lld stripe %lld: model %lld each way; spilled %lld, read back "
           "%lld (one-byte cache)", cs[k].chol ? "chol" : "gj", (long long)n, (long long)cs[k].b,
           (long long)cs[k].W, (long long)m.spilled, (long long)sp, (long long)un);
    for (int q = 1; q <= 3; q++) { /* a quarter, half, all of the matrix (and its tile headers) */
      int64_t cap = q == 3 ? 2 * 8 * n * n : q * 2 * n * n;
      run_model_case(cs[k].chol ? M_CHOL : M_GJ, n, cs[k].b, cs[k].W, cap, &sp, &un, NULL);
      CU_ASSERT(sp <= m.spilled && un <= m.unspilled);
      CU_ASSERT_EQUAL(g_model_alone, 0); /* every scratch move side by side (tstore.h) */
      if (q == 3) CU_ASSERT(sp == 0 && un == 0);
      bounded += sp <= m.spilled && un <= m.unspilled;
      printf("; cache %lld: %lld, %lld", (long long)cap, (long long)sp, (long long)un);
    }
  }
  printf("\n  %d of 8 exactly the model, %d of 24 within it", exact, bounded);
  /* LU's factor (lu_spill_model): tiles that divide n or not, one step or several, stripes of
   * one to three tiles */
  static const int64_t lc[][3] = {{96, 16, 32}, {100, 16, 32}, {120, 24, 48}, {100, 16, 100},
                                  {100, 16, 16}, {96, 16, 48}, {130, 7, 35}};
  exact = bounded = 0;
  for (size_t k = 0; k < sizeof lc / sizeof lc[0]; k++) {
    int64_t n = lc[k][0], sp = 0, un = 0, ld = 0, msp, mun;
    lu_spill_model(n, lc[k][1], lc[k][2], &msp, &mun);
    run_model_case(M_LU, n, lc[k][1], lc[k][2], 1, &sp, &un, &ld);
    CU_ASSERT_EQUAL(sp, msp);
    CU_ASSERT_EQUAL(un, mun);
    exact += sp == msp && un == mun;
    printf("\n  lu n %lld tile %lld stripe %lld: model %lld spilled, %lld read back; measured "
           "%lld, %lld (one-byte cache)", (long long)n, (long long)lc[k][1], (long long)lc[k][2],
           (long long)msp, (long long)mun, (long long)sp, (long long)un);
    for (int q = 1; q <= 3; q++) {
      /* A tile the load left cached may be evicted during the run, before its stripe takes
       * it: a write the one-byte cache made during the load (n = 130, tile 7, half the matrix:
       * the run 168 bytes over the model, the load 59656 under its 8 n^2). So the load's
       * writes and the run's together are bounded: at most 8 n^2 + the model. */
      int64_t cap = q == 3 ? 2 * 8 * n * n : q * 2 * n * n;
      run_model_case(M_LU, n, lc[k][1], lc[k][2], cap, &sp, &un, &ld);
      CU_ASSERT(ld + sp <= 8 * n * n + msp && un <= mun);
      CU_ASSERT_EQUAL(g_model_alone, 0);
      if (q == 3) CU_ASSERT(sp == 0 && un == 0);
      bounded += sp <= msp && un <= mun;
      printf("; cache %lld: %lld, %lld", (long long)cap, (long long)sp, (long long)un);
    }
  }
  printf("\n  lu: %d of 7 exactly the model, %d of 21 within it (every one with the load's "
         "writes added: within 8 n^2 more)", exact, bounded);
  /* through the pipeline: the report's elimination bytes and the model beside them, out of core
   * (3 MiB for a 2.7 MiB matrix), not journaled, or journaled at the default interval (no
   * checkpoint in so short a run: the same moves); a run journaled every step reports none;
   * LU's factor its own model (more read back than written) */
  const int64_t n = 600;
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  double *A = tu_gen_spec(&s);
  tu_write_matrix(tu_path("sm.h5"), "/A", n, n, A, 2);
  free(A);
  int64_t gj_moved[2] = {0, 0}; /* k = 0: gj unjournaled, what k = 4 must move too */
  for (int k = 0; k < 5; k++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(100, k == 1 ? OOC_METHOD_CHOL : k == 3 ? OOC_METHOD_LU : OOC_METHOD_GJ);
    o.host_mem = 3 << 20;
    o.check = OOC_CHECK_PROBE;
    o.checkpoint = k == 2 ? OOC_CHECKPOINT_EVERY_STEP : k == 4 ? 0 : OOC_CHECKPOINT_NEVER;
    ooc_report_t rep;
    ooc_status_t rs = k == 3 ? ooc_factor(ctx, tu_path("sm.h5"), tu_path("sm.lu.h5"), &o, &rep)
                             : ooc_invert(ctx, tu_path("sm.h5"), tu_path("sm.inv.h5"), &o, &rep);
    CU_ASSERT_EQUAL_FATAL(rs, OOC_OK);
    plan_traffic_t m = plan_spill_model(k == 1, n, rep.tile, rep.stripe);
    if (k == 3) { /* lu.h: exact with a one-byte cache; here, within it read, and written within
                   * it plus the tiles the load left cached (8 n^2 at most) */
      lu_spill_model(n, rep.tile, rep.stripe, &m.spilled, &m.unspilled);
      CU_ASSERT(m.unspilled > m.spilled);
    }
    if (k != 2) {
      CU_ASSERT(rep.steps > 1 && rep.bytes_spilled_elim > 0);
      CU_ASSERT_EQUAL(rep.bytes_spill_model, m.spilled);
      CU_ASSERT_EQUAL(rep.bytes_unspill_model, m.unspilled);
      CU_ASSERT(rep.bytes_spilled_elim <= m.spilled + (k == 3 ? 8 * n * n : 0) &&
                rep.bytes_unspilled_elim <= m.unspilled);
    } else {
      CU_ASSERT(rep.bytes_spill_model == 0 && rep.bytes_unspill_model == 0 &&
                rep.bytes_spilled_elim == 0);
    }
    if (k == 0) {
      gj_moved[0] = rep.bytes_spilled_elim;
      gj_moved[1] = rep.bytes_unspilled_elim;
    }
    if (k == 4) /* journaled, no checkpoint due: the unjournaled run's moves, byte for byte */
      CU_ASSERT(rep.bytes_spilled_elim == gj_moved[0] && rep.bytes_unspilled_elim == gj_moved[1]);
    printf("\n  %s, %lld steps%s: elimination spilled %lld, read back %lld; model %lld, %lld",
           rep.method, (long long)rep.steps,
           k == 2 ? ", journaled every step" : k == 4 ? ", journaled every 300 s" : "",
           (long long)rep.bytes_spilled_elim, (long long)rep.bytes_unspilled_elim,
           (long long)rep.bytes_spill_model, (long long)rep.bytes_unspill_model);
    tu_ctx_done(ctx);
  }
  printf("\n");
}

/* ---- A's store backed by its input (job.c input_backs_tiles, tstore.h ts_set_backing) ------ */

/* A Matern matrix of order n twice: contiguous in file c, chunked 64 x 64 in file k. */
static void write_backed_inputs(int64_t n, const char *c, const char *k) {
  gen_spec_t s;
  gen_spec_default(&s, GEN_MATERN, n);
  double *A = tu_gen_spec(&s);
  tu_write_matrix(tu_path(c), "/A", n, n, A, 2);
  tu_write_matrix_chunked(tu_path(k), "/A", n, n, A, 2, 64);
  free(A);
}

/* The same n = 600 matrix in a contiguous file (tiles fall back on it) and chunked 64 x 64 (not
 * the tile grid of 100: spilled as before), out of core (3 MiB), each method: the same output bit
 * for bit, fewer bytes to scratch from the contiguous one, the host peak within --host-mem;
 * journaled (checkpoints name the input's tiles) and not. */
static void t_backed(void) {
  const int64_t n = 600;
  write_backed_inputs(n, "bk_c.h5", "bk_k.h5");
  static const ooc_method_t ms[] = {OOC_METHOD_CHOL, OOC_METHOD_GJ, OOC_METHOD_LU};
  for (int k = 0; k < 3; k++)
    for (int jl = 0; jl < 2; jl++) {
      int64_t spilled[2];
      double *X[2];
      for (int f = 0; f < 2; f++) {
        ooc_ctx_t *ctx = tu_ctx();
        ooc_opts_t o = opts(100, ms[k]);
        o.host_mem = 3 << 20;
        o.check = OOC_CHECK_PROBE;
        o.checkpoint = jl ? OOC_CHECKPOINT_EVERY_STEP : OOC_CHECKPOINT_NEVER;
        ooc_report_t rep;
        const char *in = tu_path(f ? "bk_k.h5" : "bk_c.h5");
        char out[4096];
        snprintf(out, sizeof out, "%s", tu_path(f ? "bk_k.inv.h5" : "bk_c.inv.h5"));
        CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, in, out, &o, &rep), OOC_OK);
        CU_ASSERT(rep.steps > 1 && rep.host_peak <= o.host_mem);
        if (f) CU_ASSERT(rep.bytes_kept_in_input == 0 && rep.bytes_reread_input == 0);
        if (!f) CU_ASSERT(rep.bytes_kept_in_input > 0 && rep.bytes_reread_input > 0);
        spilled[f] = rep.bytes_spilled;
        char spec[4200];
        snprintf(spec, sizeof spec, "%s:/inverse", out);
        int64_t r, c;
        X[f] = tu_read_matrix(spec, &r, &c);
        CU_ASSERT_FATAL(X[f] != NULL && r == n && c == n);
        printf("\n  %s%s, %s input: %lld steps, spilled %lld, read back %lld, kept in the input "
               "%lld, reread %lld, peak %lld", rep.method, jl ? " (journaled)" : "",
               f ? "chunked 64" : "contiguous", (long long)rep.steps, (long long)rep.bytes_spilled,
               (long long)rep.bytes_unspilled, (long long)rep.bytes_kept_in_input,
               (long long)rep.bytes_reread_input, (long long)rep.host_peak);
        tu_ctx_done(ctx);
      }
      CU_ASSERT(memcmp(X[0], X[1], (size_t)(n * n) * sizeof(double)) == 0);
      CU_ASSERT(spilled[0] < spilled[1]);
      free(X[0]);
      free(X[1]);
    }
  printf("\n");
}

/* LU's load keeps A's first tile columns where A overflows the cache (methods.h keep_first,
 * tstore.h TS_LOAD_KEEP): its first stripe finds them cached, so less of the input is read
 * twice than the whole of it (what the LRU order did: its last columns kept, evicted unread by
 * the first stripe). The factor is the same bit for bit as from a chunked copy of the input
 * that cannot back the tiles (everything spilled as before). n = 600, tile 100, a stripe of one
 * tile column so that the cache holds several. A read first (OOCSOLVE_LAZY_READ=0: a factor
 * whose input backs its tiles may read A as it asks for it instead, t_lazy_lu). */
static void t_load_keep_lu(void) {
  const int64_t n = 600;
  write_backed_inputs(n, "lk_c.h5", "lk_k.h5");
  setenv("OOCSOLVE_LAZY_READ", "0", 1);
  double *F[2];
  for (int f = 0; f < 2; f++) {
    ooc_ctx_t *ctx = tu_ctx();
    ooc_opts_t o = opts(100, OOC_METHOD_LU);
    o.host_mem = 4 << 20;
    o.stripe = 100;
    o.check = OOC_CHECK_PROBE;
    o.checkpoint = OOC_CHECKPOINT_NEVER;
    ooc_report_t rep;
    char out[4096];
    snprintf(out, sizeof out, "%s", tu_path(f ? "lk_k.lu.h5" : "lk_c.lu.h5"));
    CU_ASSERT_EQUAL_FATAL(ooc_factor(ctx, tu_path(f ? "lk_k.h5" : "lk_c.h5"), out, &o, &rep),
                          OOC_OK);
    CU_ASSERT(rep.steps == 6 && rep.host_peak <= o.host_mem);
    if (f) CU_ASSERT(rep.bytes_reread_input == 0);
    if (!f)
      CU_ASSERT(rep.bytes_reread_input > 0 && rep.bytes_reread_input <= 8 * n * n - 8 * 100 * n);
    char spec[4200];
    snprintf(spec, sizeof spec, "%s:/LU", out);
    int64_t r, c;
    F[f] = tu_read_matrix(spec, &r, &c);
    CU_ASSERT_FATAL(F[f] != NULL && r == n && c == n);
    printf("\n  lu factor, %s input: %lld steps, spilled %lld, read back %lld, input read %lld, "
           "reread %lld", f ? "chunked 64" : "contiguous", (long long)rep.steps,
           (long long)rep.bytes_spilled, (long long)rep.bytes_unspilled,
           (long long)rep.bytes_input, (long long)rep.bytes_reread_input);
    tu_ctx_done(ctx);
  }
  unsetenv("OOCSOLVE_LAZY_READ");
  CU_ASSERT(memcmp(F[0], F[1], (size_t)(n * n) * sizeof(double)) == 0);
  free(F[0]);
  free(F[1]);
  printf("\n");
}

/* The input rewritten while the run reads tiles back from it (P5): the run stops with
 * OOC_ERR_CORRUPT naming the input, and writes no output. The progress callback overwrites the
 * contiguous dataset's bytes in the file (pwrite at its offset: the job holds the file open) as
 * soon as the elimination starts, after the load has put and partly evicted the tiles. */
typedef struct {
  const char *file;
  int64_t offset, bytes;
  int done;
} rewrite_t;
static int rewrite_input(void *user, const char *phase, double fraction) {
  rewrite_t *w = user;
  (void)fraction;
  if (w->done || strcmp(phase, "read") == 0) return 0;
  FILE *f = fopen(w->file, "r+b");
  if (!f) return 0;
  double *junk = malloc((size_t)w->bytes);
  for (int64_t i = 0; i < w->bytes / 8; i++) junk[i] = 1.0 + (double)(i % 7);
  fseek(f, (long)w->offset, SEEK_SET);
  w->done = fwrite(junk, 1, (size_t)w->bytes, f) == (size_t)w->bytes;
  fclose(f);
  free(junk);
  return 0;
}

static void t_backed_changed(void) {
  const int64_t n = 600;
  gen_spec_t s;
  gen_spec_default(&s, GEN_RANDOM, n);
  double *A = tu_gen_spec(&s);
  const char *file = tu_path("bk_w.h5");
  tu_write_matrix(file, "/A", n, n, A, 2);
  free(A);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "/A", H5P_DEFAULT);
  rewrite_t w = {.file = file, .offset = (int64_t)H5Dget_offset(d), .bytes = 8 * n * n};
  H5Dclose(d);
  H5Fclose(f);
  CU_ASSERT_FATAL(w.offset > 0);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_ctx_set_progress(ctx, rewrite_input, &w);
  ooc_opts_t o = opts(100, OOC_METHOD_GJ);
  o.host_mem = 3 << 20;
  o.check = OOC_CHECK_PROBE;
  o.checkpoint = OOC_CHECKPOINT_NEVER;
  ooc_report_t rep;
  remove(tu_path("bk_w.inv.h5"));
  ooc_status_t st = ooc_invert(ctx, file, tu_path("bk_w.inv.h5"), &o, &rep);
  CU_ASSERT(w.done);
  CU_ASSERT_EQUAL(st, OOC_ERR_CORRUPT);
  CU_ASSERT(strstr(ooc_ctx_error(ctx), "bk_w.h5") && strstr(ooc_ctx_error(ctx), "changed"));
  CU_ASSERT(file_size(tu_path("bk_w.inv.h5")) < 0); /* no output */
  printf("[%s] ", ooc_ctx_error(ctx));
  tu_ctx_done(ctx);
}

int main(void) {
  const tu_test_t tests[] = {{"even tiles and chunks", t_even_tiles},
                             {"no padded chunks: the file is the data", t_no_padding},
                             {"the disk floor and the ratio (--disk-bw), the commit's time",
                              t_floor},
                             {"fused estimate: fails wrong inverses, passes the right one", t_fused_estimator},
                             {"fused check through the pipeline; corrupted chunks caught", t_fused_pipeline},
                             {"sub-tiles under the asked tile's chunks: the same bits, whole chunks", t_subtiles},
                             {"fused check under allocation and I/O faults", t_fused_faults},
                             {"the LU factor's check from its chunks as written", t_lu_fused},
                             {"the LU checks read back by strips and by rows", t_lu_check_rows},
                             {"a factor's probes: A T formed during the load, corrupted chunks "
                              "caught", t_factor_probe},
                             {"the disk tier's bytes against the stripe arithmetic", t_spill_model},
                             {"the load reads ahead: the same bits, strips read ahead", t_load_ahead},
                             {"LU reads A as it needs it: the same bits, the same errors", t_lazy_lu},
                             {"chol's inverse reads A as its first step asks: same bits, same errors", t_lazy_chol},
                             {"gj reads A as its first step asks: same bits, A once", t_lazy_gj},
                             {"A's tiles fall back on the input: same output, less to scratch", t_backed},
                             {"LU's load keeps A's first columns: less of the input read twice", t_load_keep_lu},
                             {"the input rewritten during the run: refused, no output", t_backed_changed},
                             {NULL, NULL}};
  return tu_run("pipeline", tests);
}
