/*
 * test_pipeline.c: issue 27, the pipeline at the speed of the disk.
 * - even tiles: the planner's tile covers n with the fewest tiles of at most --tile, equal to
 *   an element, and the chunk edge groups small tiles without adding padding (plan_tile,
 *   plan_chunk over a grid of n and --tile);
 * - no more than the data: an inverse at n = 1100 with --tile 1024 (formerly 1024 + 76, whose
 *   padded edge chunks made a 33.6 MB file of 9.7 MB of results) writes a file of the data's
 *   size plus HDF5's metadata, for gj and chol, float64 and float32, and its result passes the
 *   full check;
 * - the disk floor: with --disk-bw the report gives input / read + output / write bandwidth and
 *   the ratio of the total to it.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/plan.h"
#include "gen/gen.h"
#include "testutil.h"

static void t_even_tiles(void) {
  static const int64_t ts[] = {1, 3, 7, 64, 100, 255, 256, 1000, 4096};
  int64_t cases = 0;
  for (int64_t n = 1; n <= 5000; n += (n < 300 ? 1 : 37)) {
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
      int64_t t = ts[k], b = plan_tile(n, t), want = ooc_cdiv64(n, t);
      CU_ASSERT_FATAL(b >= 1 && b <= t && b <= n);
      CU_ASSERT_EQUAL(ooc_cdiv64(n, b), want); /* as few tiles as --tile allows */
      CU_ASSERT(want * b - n < want);         /* the tiles' padding: under one element each */
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
  CU_ASSERT_EQUAL(plan_tile(4500, 4096), 2250);
  CU_ASSERT_EQUAL(plan_tile(49152, 4096), 4096);
  CU_ASSERT_EQUAL(plan_tile(65536, 4096), 4096);
  CU_ASSERT_EQUAL(plan_tile(1100, 1024), 550);
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
    CU_ASSERT_EQUAL(rep.tile, 550);
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
  printf("\n");
  free(A);
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
    ooc_report_t rep;
    CU_ASSERT_EQUAL_FATAL(ooc_invert(ctx, tu_path("fl.h5"), tu_path("fl.inv.h5"), &o, &rep),
                          OOC_OK);
    double out = (double)n * n * (k == 2 ? 4 : 8), wbw = k == 2 ? 2.5e8 : 1e9;
    double want = k ? (double)rep.bytes_input / 1e9 + out / wbw : 0;
    CU_ASSERT(rep.bytes_input >= 8 * n * n); /* f64 input, read whole at least once */
    CU_ASSERT_DOUBLE_EQUAL(rep.t_floor, want, 1e-12);
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
    if (k == 2) printf("\n  %s", strstr(buf, "  floor"));
    free(buf);
    tu_ctx_done(ctx);
  }
  free(A);
}

int main(void) {
  const tu_test_t tests[] = {{"even tiles and chunks", t_even_tiles},
                             {"no padded chunks: the file is the data", t_no_padding},
                             {"the disk floor and the ratio (--disk-bw)", t_floor},
                             {NULL, NULL}};
  return tu_run("pipeline", tests);
}
