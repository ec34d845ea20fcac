/*
 * test_climate.c: the library side of issue 21, below the CLI (tests/climate_nc.py runs the
 * tool on files written by netCDF4 and xarray).
 *
 * - memlimit: the default --host-mem's limit parser on cgroup v2 / v1 trees and SLURM variables
 *   written by the test (nested limits, "max", v1's "unlimited", the smallest wins, junk).
 * - units algebra of h5meta (K2 -> K-2, B / A, sqrt, products).
 * - h5mat's shape mapping: slices of a 3-D dataset, 1-D datasets, transposed reads, each read
 *   by rectangles at odd offsets and compared element by element with the dataset as written;
 *   1-D outputs.
 * - CF attributes: fill values refused with count and first position (in the matrix's
 *   coordinates, also transposed), --keep-fill, packing unpacked as value * scale + offset.
 */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/memlimit.h"
#include "io/h5mat.h"
#include "io/h5meta.h"
#include "testutil.h"

/* ---- memlimit -------------------------------------------------------------------------------- */

static void put(const char *path, const char *text) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = strchr(dir + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = 0;
    mkdir(dir, 0755);
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static void t_memlimit_v2(void) {
  char root[1024], pc[1024], p[1200], src[512];
  snprintf(root, sizeof root, "%s", tu_path("cg2"));
  snprintf(pc, sizeof pc, "%s", tu_path("cg2_self"));
  put(pc, "0::/job.slice/step_0\n");
  snprintf(p, sizeof p, "%s/memory.max", root);
  put(p, "max\n");
  snprintf(p, sizeof p, "%s/job.slice/memory.max", root);
  put(p, "419430400\n"); /* 400 MiB on the parent binds the child */
  snprintf(p, sizeof p, "%s/job.slice/step_0/memory.max", root);
  put(p, "max\n");
  ooc_mem_probe_t pr = {.physical = (int64_t)64 << 30, .proc_cgroup = pc, .cgroup_root = root};
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)400 << 20);
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "cgroup v2"));
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "job.slice/memory.max"));
  /* a tighter limit on the leaf wins */
  put(p, "104857600\n");
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)100 << 20);
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "step_0/memory.max"));
  /* physical memory below every limit */
  pr.physical = (int64_t)50 << 20;
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)50 << 20);
  CU_ASSERT_STRING_EQUAL(src, "physical memory");
  /* junk and missing files count as no limit */
  pr.physical = (int64_t)1 << 30;
  put(p, "garbage\n");
  snprintf(p, sizeof p, "%s/job.slice/memory.max", root);
  put(p, "\n");
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)1 << 30);
  CU_ASSERT_STRING_EQUAL(src, "physical memory");
}

static void t_memlimit_v1_slurm(void) {
  char root[1024], pc[1024], p[1200], src[512];
  snprintf(root, sizeof root, "%s", tu_path("cg1"));
  snprintf(pc, sizeof pc, "%s", tu_path("cg1_self"));
  put(pc, "9:name=systemd:/\n4:cpuacct,memory:/slurm/uid_1/job_7\n1:cpu:/\n");
  snprintf(p, sizeof p, "%s/memory/memory.limit_in_bytes", root);
  put(p, "9223372036854771712\n"); /* v1's "unlimited" */
  snprintf(p, sizeof p, "%s/memory/slurm/uid_1/job_7/memory.limit_in_bytes", root);
  put(p, "2147483648\n");
  ooc_mem_probe_t pr = {.physical = (int64_t)64 << 30, .proc_cgroup = pc, .cgroup_root = root};
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)2 << 30);
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "cgroup v1"));
  /* SLURM: per node, in MiB */
  pr.slurm_mem_per_node = "1024";
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)1 << 30);
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "SLURM_MEM_PER_NODE=1024"));
  /* per CPU x CPUs on the node ("4(x2)" reads as 4) */
  pr.slurm_mem_per_node = NULL;
  pr.slurm_mem_per_cpu = "300";
  pr.slurm_cpus = "4(x2)";
  CU_ASSERT_EQUAL(ooc_mem_limit(&pr, src, sizeof src), (int64_t)1200 << 20);
  CU_ASSERT_PTR_NOT_NULL(strstr(src, "SLURM_MEM_PER_CPU=300"));
  /* nothing at all: no limit known */
  ooc_mem_probe_t none = {0};
  CU_ASSERT_EQUAL(ooc_mem_limit(&none, src, sizeof src), 0);
  /* this process: a positive default, with a source */
  CU_ASSERT(ooc_default_host_mem(src, sizeof src) > 0);
  CU_ASSERT(src[0] != 0);
}

/* ---- units ---------------------------------------------------------------------------------- */

static void t_units(void) {
  char u[64];
  CU_ASSERT(h5meta_units_pow("K2", -1, 1, u, sizeof u) && !strcmp(u, "K-2"));
  CU_ASSERT(h5meta_units_pow("m2 s-1", -1, 1, u, sizeof u) && !strcmp(u, "m-2 s"));
  CU_ASSERT(h5meta_units_pow("K^2", 1, 2, u, sizeof u) && !strcmp(u, "K"));
  CU_ASSERT(!h5meta_units_pow("K", 1, 2, u, sizeof u) && !u[0]); /* sqrt(K): not a unit here */
  CU_ASSERT(!h5meta_units_pow("m/s", -1, 1, u, sizeof u)); /* a '/' is left alone */
  CU_ASSERT(!h5meta_units_pow("1e-3 K", -1, 1, u, sizeof u));
  CU_ASSERT(h5meta_units_mul("K-2", "K", u, sizeof u) && !strcmp(u, "K-1"));
  CU_ASSERT(h5meta_units_mul("K-1", "K", u, sizeof u) && !strcmp(u, "1"));
  CU_ASSERT(h5meta_units_mul("kg.m-3", "m3", u, sizeof u) && !strcmp(u, "kg"));
}

/* ---- shapes --------------------------------------------------------------------------------- */

static void write_nd(const char *file, const char *name, int rank, const hsize_t *dims,
                     hid_t ftype, const double *v, const char *fill_attr, double fill,
                     double scale, double offset) {
  hid_t f = access(file, F_OK) == 0 ? H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT)
                                    : H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CU_ASSERT_FATAL(f >= 0);
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t cd[8];
  for (int k = 0; k < rank; k++) cd[k] = dims[k] > 7 ? 7 : dims[k]; /* odd chunks */
  H5Pset_chunk(dcpl, rank, cd);
  hid_t d = H5Dcreate2(f, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CU_ASSERT_FATAL(d >= 0);
  CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  hid_t s1 = H5Screate(H5S_SCALAR);
  if (fill_attr) {
    hid_t a = H5Acreate2(d, fill_attr, ftype, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, &fill);
    H5Aclose(a);
  }
  if (scale != 1 || offset != 0) {
    hid_t a = H5Acreate2(d, "scale_factor", H5T_IEEE_F64LE, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, &scale);
    H5Aclose(a);
    a = H5Acreate2(d, "add_offset", H5T_IEEE_F32LE, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_DOUBLE, &offset);
    H5Aclose(a);
  }
  H5Sclose(s1);
  H5Pclose(dcpl);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
}

/* Reads m by rectangles at odd offsets; want(i, j) gives the expected element. */
typedef double (*want_fn)(int64_t i, int64_t j, const void *ctx);

static int read_matches(h5mat_t *m, want_fn want, const void *wc) {
  int64_t R = h5m_rows(m), C = h5m_cols(m);
  int bad = 0;
  int64_t steps[3] = {3, 5, 64};
  for (int s = 0; s < 3; s++) {
    int64_t hr = steps[s], wc_ = steps[(s + 1) % 3];
    double *buf = malloc((size_t)(hr * wc_) * sizeof *buf);
    for (int64_t r0 = 0; r0 < R; r0 += hr)
      for (int64_t c0 = 0; c0 < C; c0 += wc_) {
        int64_t nr = R - r0 < hr ? R - r0 : hr, nc = C - c0 < wc_ ? C - c0 : wc_;
        /* tr = 1: the transposed read (h5m_read_t, the checks' strips), nc x nr */
        for (int tr = 0; tr < 2; tr++) {
          if ((tr ? h5m_read_t : h5m_read)(m, r0, c0, nr, nc, buf, tr ? nc : nr) != OOC_OK) {
            free(buf);
            return 0;
          }
          for (int64_t j = 0; j < nc; j++)
            for (int64_t i = 0; i < nr; i++)
              if (buf[tr ? j + i * nc : i + j * nr] != want(r0 + i, c0 + j, wc)) bad++;
        }
      }
    free(buf);
  }
  return bad == 0;
}

typedef struct {
  const double *v;
  int64_t d1, d2; /* the cube's last two extents */
  int64_t k;      /* fixed first index */
  int trans;
} cube_t;

static double cube_want(int64_t i, int64_t j, const void *p) {
  const cube_t *c = p;
  int64_t a = c->trans ? j : i, b = c->trans ? i : j;
  return c->v[(c->k * c->d1 + a) * c->d2 + b];
}

static void t_slices_trans(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const char *file = tu_path("shapes.h5");
  unlink(file);
  hsize_t dims[3] = {3, 19, 23};
  double *v = malloc(3 * 19 * 23 * sizeof *v);
  for (int i = 0; i < 3 * 19 * 23; i++) v[i] = i * 0.5 - 7;
  write_nd(file, "/cube", 3, dims, H5T_IEEE_F32LE, v, NULL, 0, 1, 0);
  hsize_t d1[3] = {1, 19, 23};
  write_nd(file, "/one", 3, d1, H5T_IEEE_F64LE, v, NULL, 0, 1, 0);
  hsize_t dv[1] = {19};
  write_nd(file, "/vec", 1, dv, H5T_IEEE_F64LE, v, NULL, 0, 1, 0);

  for (int k = 0; k < 3; k++)
    for (int t = 0; t < 2; t++) {
      char spec[64];
      snprintf(spec, sizeof spec, "/cube[%d,:,:]", k == 2 ? -1 : k);
      h5mat_t *m = NULL;
      CU_ASSERT_EQUAL_FATAL(h5m_open2(ctx, file, spec, t ? H5M_TRANS : 0, &m), OOC_OK);
      CU_ASSERT_EQUAL(h5m_rows(m), t ? 23 : 19);
      CU_ASSERT_EQUAL(h5m_cols(m), t ? 19 : 23);
      cube_t c = {v, 19, 23, k, t};
      CU_ASSERT(read_matches(m, cube_want, &c));
      h5m_close(m);
    }
  /* a 2-D slice along other axes: [:,4,:] is 3 x 23 */
  h5mat_t *m = NULL;
  CU_ASSERT_EQUAL_FATAL(h5m_open(ctx, file, "/cube[:,4,:]", &m), OOC_OK);
  CU_ASSERT(h5m_rows(m) == 3 && h5m_cols(m) == 23);
  double x = 0;
  CU_ASSERT_EQUAL(h5m_read(m, 2, 5, 1, 1, &x, 1), OOC_OK);
  CU_ASSERT_EQUAL(x, v[(2 * 19 + 4) * 23 + 5]);
  h5m_close(m);
  /* squeezed singleton axis */
  CU_ASSERT_EQUAL_FATAL(h5m_open(ctx, file, "/one", &m), OOC_OK);
  cube_t c0 = {v, 19, 23, 0, 0};
  CU_ASSERT(h5m_rows(m) == 19 && h5m_cols(m) == 23 && read_matches(m, cube_want, &c0));
  h5m_close(m);
  /* 1-D: a column; transposed: a row */
  CU_ASSERT_EQUAL_FATAL(h5m_open(ctx, file, "/vec", &m), OOC_OK);
  cube_t cv = {v, 19, 1, 0, 0};
  CU_ASSERT(h5m_rows(m) == 19 && h5m_cols(m) == 1 && read_matches(m, cube_want, &cv));
  h5m_close(m);
  CU_ASSERT_EQUAL_FATAL(h5m_open2(ctx, file, "/vec", H5M_TRANS, &m), OOC_OK);
  cube_t cvt = {v, 19, 1, 0, 1};
  CU_ASSERT(h5m_rows(m) == 1 && h5m_cols(m) == 19 && read_matches(m, cube_want, &cvt));
  h5m_close(m);
  /* refusals */
  ooc_status_t st = h5m_open(ctx, file, "/cube", &m);
  CU_ASSERT(st == OOC_ERR_FORMAT && strstr(ooc_ctx_error(ctx), "[0,:,:]"));
  ooc_clear_error(ctx);
  st = h5m_open(ctx, file, "/cube[3,:,:]", &m);
  CU_ASSERT(st == OOC_ERR_ARG && strstr(ooc_ctx_error(ctx), "outside axis 0"));
  ooc_clear_error(ctx);
  st = h5m_open(ctx, file, "/cube[0,0,0]", &m);
  CU_ASSERT(st == OOC_ERR_FORMAT && strstr(ooc_ctx_error(ctx), "single element"));
  ooc_clear_error(ctx);
  st = h5m_open(ctx, file, "/cube[0,x,:]", &m);
  CU_ASSERT(st == OOC_ERR_ARG && strstr(ooc_ctx_error(ctx), "entry 2"));
  ooc_clear_error(ctx);

  /* a 1-D output */
  const char *of = tu_path("vec_out.h5");
  unlink(of);
  h5mat_t *o = NULL;
  CU_ASSERT_EQUAL_FATAL(h5m_create2(ctx, of, "/X", 19, 1, H5M_F64, 4, NULL, 0, H5M_OUT_1D, &o),
                        OOC_OK);
  CU_ASSERT_EQUAL(h5m_write(o, 0, 0, 10, 1, v, 10), OOC_OK);
  CU_ASSERT_EQUAL(h5m_write(o, 10, 0, 9, 1, v + 10, 9), OOC_OK);
  CU_ASSERT_EQUAL(h5m_commit(o), OOC_OK);
  h5m_close(o);
  CU_ASSERT_EQUAL_FATAL(h5m_open(ctx, of, "/X", &m), OOC_OK);
  CU_ASSERT(h5m_rank(m) == 1 && read_matches(m, cube_want, &cv));
  h5m_close(m);
  free(v);
  tu_ctx_done(ctx);
}

/* ---- CF attributes -------------------------------------------------------------------------- */

typedef struct {
  const double *v;
  int64_t n;
  double scale, offset;
} packed_t;

static double packed_want(int64_t i, int64_t j, const void *p) {
  const packed_t *c = p;
  return c->v[i * c->n + j] * c->scale + c->offset;
}

static void t_fill_and_packing(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const char *file = tu_path("cf.h5");
  unlink(file);
  const int64_t n = 20;
  hsize_t dims[2] = {n, n};
  double *v = malloc((size_t)(n * n) * sizeof *v);
  for (int64_t i = 0; i < n * n; i++) v[i] = (double)(i % 97) - 40;
  v[7 * n + 11] = v[15 * n + 2] = v[7 * n + 12] = -999; /* three fills, first at [7, 11] */
  write_nd(file, "/filled", 2, dims, H5T_STD_I16LE, v, "_FillValue", -999, 1, 0);
  write_nd(file, "/missing", 2, dims, H5T_IEEE_F64LE, v, "missing_value", -999, 1, 0);
  v[7 * n + 11] = v[15 * n + 2] = v[7 * n + 12] = 5;
  write_nd(file, "/packed", 2, dims, H5T_STD_I16LE, v, "_FillValue", -32767, 0.25, 1000.5);

  const char *names[2] = {"/filled", "/missing"};
  for (int k = 0; k < 2; k++)
    for (int t = 0; t < 2; t++) {
      h5mat_t *m = NULL;
      CU_ASSERT_EQUAL_FATAL(h5m_open2(ctx, file, names[k], t ? H5M_TRANS : 0, &m), OOC_OK);
      double *buf = malloc((size_t)(n * n) * sizeof *buf);
      /* a rectangle without fills reads; one with a fill refuses and counts them all */
      CU_ASSERT_EQUAL(h5m_read(m, 0, 0, 5, 5, buf, 5), OOC_OK);
      ooc_status_t st = h5m_read(m, 0, 0, n, n, buf, n);
      CU_ASSERT_EQUAL(st, OOC_ERR_NONFINITE);
      const char *e = ooc_ctx_error(ctx);
      CU_ASSERT_PTR_NOT_NULL(strstr(e, "3 elements"));
      /* row-major first in the matrix's coordinates: [7, 11]; transposed: [2, 15] */
      CU_ASSERT_PTR_NOT_NULL(strstr(e, t ? "first at [2, 15]" : "first at [7, 11]"));
      CU_ASSERT_PTR_NOT_NULL(strstr(e, "--keep-fill"));
      if (!strstr(e, t ? "[2, 15]" : "[7, 11]")) fprintf(stderr, "\n  %s\n", e);
      ooc_clear_error(ctx);
      /* read transposed: the same refusal, in the matrix's coordinates */
      CU_ASSERT_EQUAL(h5m_read_t(m, 0, 0, 5, 5, buf, 5), OOC_OK);
      CU_ASSERT_EQUAL(h5m_read_t(m, 0, 0, n, n, buf, n), OOC_ERR_NONFINITE);
      CU_ASSERT_PTR_NOT_NULL(
          strstr(ooc_ctx_error(ctx), t ? "first at [2, 15]" : "first at [7, 11]"));
      ooc_clear_error(ctx);
      free(buf);
      h5m_close(m);
    }
  h5mat_t *m = NULL;
  CU_ASSERT_EQUAL_FATAL(h5m_open2(ctx, file, "/filled", H5M_KEEP_FILL, &m), OOC_OK);
  double x = 0;
  CU_ASSERT_EQUAL(h5m_read(m, 7, 11, 1, 1, &x, 1), OOC_OK);
  CU_ASSERT_EQUAL(x, -999);
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "--keep-fill"));
  h5m_close(m);

  CU_ASSERT_EQUAL_FATAL(h5m_open(ctx, file, "/packed", &m), OOC_OK);
  packed_t pk = {v, n, 0.25, 1000.5};
  CU_ASSERT(read_matches(m, packed_want, &pk));
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "scale_factor 0.25"));
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "add_offset 1000.5"));
  h5m_close(m);
  free(v);
  tu_ctx_done(ctx);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"memlimit: cgroup v2 tree, nested limits, max, junk", t_memlimit_v2},
      {"memlimit: cgroup v1, SLURM per node / per CPU", t_memlimit_v1_slurm},
      {"units: inverse, sqrt, products, refusals", t_units},
      {"slices, squeeze, 1-D, transposed reads; 1-D output", t_slices_trans},
      {"CF: fill values refused (count, first), --keep-fill, packing", t_fill_and_packing},
      {NULL, NULL},
  };
  return tu_run("climate", tests);
}
