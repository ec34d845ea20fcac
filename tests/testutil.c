/* testutil.c: see testutil.h. */
#include "testutil.h"

#include "tiling/tstore.h"

#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen/gen.h"
#include "io/h5mat.h"
#include "io/scratch.h"

static char g_tmpdir[512];

static void rm_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
        chmod(p, 0700);
        rm_tree(p);
      } else {
        unlink(p);
      }
    }
    closedir(d);
  }
  rmdir(path);
}

static void cleanup_tmpdir(void) {
  if (g_tmpdir[0] && !getenv("OOC_KEEP_TMP")) rm_tree(g_tmpdir);
}

const char *tu_tmpdir(void) {
  if (!g_tmpdir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/ooctest-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(g_tmpdir)) {
      perror("mkdtemp");
      exit(1);
    }
    atexit(cleanup_tmpdir);
  }
  return g_tmpdir;
}

const char *tu_path(const char *name) {
  static char bufs[8][1024];
  static int k;
  char *b = bufs[k++ % 8];
  snprintf(b, 1024, "%s/%s", tu_tmpdir(), name);
  return b;
}

int tu_run(const char *suite, const tu_test_t *tests) {
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_pSuite s = CU_add_suite(suite, NULL, NULL);
  if (!s) return 1;
  const char *only = getenv("TU_ONLY"); /* while working on a few tests: those whose name has it */
  for (const tu_test_t *t = tests; t->name; t++)
    if ((!only || strstr(t->name, only)) && !CU_add_test(s, t->name, t->fn)) return 1;
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
  unsigned run = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  return (failed == 0 && run > 0) ? 0 : 1;
}

ooc_ctx_t *tu_ctx(void) {
  ooc_ctx_t *ctx = NULL;
  CU_ASSERT_FATAL(ooc_ctx_create(&ctx) == OOC_OK);
  return ctx;
}

void tu_ctx_done(ooc_ctx_t *ctx) {
  CU_ASSERT_EQUAL(ctx->live_allocs, 0);
  CU_ASSERT_EQUAL(ctx->host_bytes, 0);
  if (ctx->live_allocs)
    fprintf(stderr, "leak: %lld blocks, %lld bytes\n", (long long)ctx->live_allocs,
            (long long)ctx->host_bytes);
  ooc_ctx_destroy(ctx);
}

static double norm1(int64_t m, int64_t n, const double *A, int64_t lda) {
  double best = 0;
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    for (int64_t i = 0; i < m; i++) s += fabs(A[i + j * lda]);
    best = ooc_nanmax(best, s); /* a NaN stays */
  }
  return best;
}

double tu_norm1(int64_t n, const double *A) { return norm1(n, n, A, n); }

double tu_inverse_ratio(int64_t n, const double *A, const double *X, double eps) {
  if (n == 0) return 0;
  double *R = calloc((size_t)(n * n), sizeof *R);
  for (int64_t j = 0; j < n; j++) {
    for (int64_t l = 0; l < n; l++) {
      double x = X[l + j * n];
      for (int64_t i = 0; i < n; i++) R[i + j * n] += A[i + l * n] * x;
    }
    R[j + j * n] -= 1.0;
  }
  double r = norm1(n, n, R, n), a = norm1(n, n, A, n), x = norm1(n, n, X, n);
  free(R);
  double ratio = r / ((double)n * a * x * eps);
  return ratio;
}

double *tu_lapack_lu(int64_t n, const double *A, lapack_int *ipiv) {
  double *X = malloc((size_t)(n * n) * sizeof *X);
  memcpy(X, A, (size_t)(n * n) * sizeof *X);
  if (LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, X, (lapack_int)n, ipiv) != 0) {
    free(X);
    return NULL;
  }
  return X;
}

double tu_lapack_inverse_ratio(int64_t n, const double *A, double eps) {
  if (n == 0) return 0;
  lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
  double *X = tu_lapack_lu(n, A, ipiv);
  lapack_int info = X ? LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, X, (lapack_int)n, ipiv) : 1;
  double r = info == 0 ? tu_inverse_ratio(n, A, X, eps) : NAN;
  free(X);
  free(ipiv);
  return r;
}

double tu_solve_ratio(int64_t n, int64_t m, const double *A, const double *X, const double *B,
                      double eps) {
  double anorm = 0; /* ||A||_inf */
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += fabs(A[i + j * n]);
    anorm = ooc_nanmax(anorm, s);
  }
  double worst = 0;
  double *r = malloc((size_t)n * sizeof *r);
  for (int64_t c = 0; c < m; c++) {
    const double *x = X + c * n, *b = B + c * n;
    double xn = 0, bn = 0, rn = 0;
    for (int64_t i = 0; i < n; i++) r[i] = -b[i];
    for (int64_t l = 0; l < n; l++)
      for (int64_t i = 0; i < n; i++) r[i] += A[i + l * n] * x[l];
    for (int64_t i = 0; i < n; i++) {
      xn = ooc_nanmax(xn, fabs(x[i]));
      bn = ooc_nanmax(bn, fabs(b[i]));
      rn = ooc_nanmax(rn, fabs(r[i]));
    }
    double ratio = rn / (eps * (anorm * xn + bn) * (double)n);
    worst = ooc_nanmax(worst, ratio); /* one NaN column fails the whole */
  }
  free(r);
  return worst;
}

double *tu_read_matrix(const char *spec, int64_t *rows, int64_t *cols) {
  ooc_ctx_t *ctx = NULL;
  ooc_ctx_create(&ctx);
  char file[1024], dset[512];
  h5mat_t *m = NULL;
  double *A = NULL;
  if (h5m_split_spec(ctx, spec, file, sizeof file, dset, sizeof dset) == OOC_OK &&
      h5m_open(ctx, file, dset, &m) == OOC_OK) {
    *rows = h5m_rows(m);
    *cols = h5m_cols(m);
    A = malloc((size_t)(*rows * *cols + 1) * sizeof *A);
    if (h5m_read(m, 0, 0, *rows, *cols, A, *rows) != OOC_OK) {
      free(A);
      A = NULL;
    }
  }
  if (!A) fprintf(stderr, "tu_read_matrix(%s): %s\n", spec, ooc_ctx_error(ctx));
  h5m_close(m);
  ooc_ctx_destroy(ctx);
  return A;
}

static void write_matrix(const char *file, const char *dset, int64_t rows, int64_t cols,
                         const double *A, int dtype, int64_t chunk) {
  hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t ft = dtype == 1 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hsize_t cd[2] = {(hsize_t)(chunk < rows ? chunk : rows), (hsize_t)(chunk < cols ? chunk : cols)};
  if (chunk > 0) H5Pset_chunk(dcpl, 2, cd);
  hid_t d = H5Dcreate2(f, dset, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  double *rm = malloc((size_t)(rows * cols + 1) * sizeof *rm);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) rm[i * cols + j] = A[i + j * rows];
  H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, rm);
  free(rm);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(f);
}

void tu_write_matrix(const char *file, const char *dset, int64_t rows, int64_t cols,
                     const double *A, int dtype) {
  write_matrix(file, dset, rows, cols, A, dtype, 0);
}

void tu_write_matrix_chunked(const char *file, const char *dset, int64_t rows, int64_t cols,
                             const double *A, int dtype, int64_t chunk) {
  write_matrix(file, dset, rows, cols, A, dtype, chunk);
}

uint64_t tu_file_hash(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  size_t got = fread(buf, 1, (size_t)len, f);
  fclose(f);
  uint64_t h = ooc_xxh64(buf, got, 0);
  free(buf);
  return h;
}

int tu_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int tu_state_file(const char *dir, const char *out, const char *suffix, char *buf, size_t cap) {
  char prefix[512];
  snprintf(prefix, sizeof prefix, ".oocsolve-%s-", out);
  size_t pl = strlen(prefix), sl = strlen(suffix);
  int found = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) && !found) {
    size_t len = strlen(e->d_name);
    if (len == pl + 8 + sl && !strncmp(e->d_name, prefix, pl) &&
        !strcmp(e->d_name + len - sl, suffix)) {
      snprintf(buf, cap, "%s/%s", dir, e->d_name);
      found = 1;
    }
  }
  closedir(d);
  return found;
}

lapack_int tu_lapack_potrf(const double *A, int64_t n, double *logdet) {
  double *L = malloc((size_t)(n * n + 1) * sizeof *L);
  memcpy(L, A, (size_t)(n * n) * sizeof *L);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)n);
  double s = 0;
  for (int64_t j = 0; j < n; j++) s += log(L[j + j * n]);
  if (logdet) *logdet = 2 * s;
  free(L);
  return info;
}

double *tu_gen_spec(const gen_spec_t *s) {
  ooc_ctx_t *ctx = tu_ctx();
  gen_t *g = NULL;
  CU_ASSERT_FATAL(gen_create(ctx, s, &g) == OOC_OK);
  double *A = malloc((size_t)(s->rows * s->cols + 1) * sizeof *A); /* 0 x 0: still a pointer */
  gen_tile(g, 0, 0, s->rows, s->cols, A, s->rows);
  gen_destroy(g);
  tu_ctx_done(ctx);
  return A;
}

double *tu_gen(int kind, int64_t rows, int64_t cols, uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, (gen_kind_t)kind, rows);
  s.cols = cols;
  s.seed = seed;
  return tu_gen_spec(&s);
}

double *tu_gen_matrix(int kind, int64_t n, double cond, double nugget, uint64_t seed) {
  gen_spec_t s;
  gen_spec_default(&s, (gen_kind_t)kind, n);
  s.seed = seed;
  if (cond > 0) s.cond = cond;
  if (nugget > 0) s.nugget = nugget;
  return tu_gen_spec(&s);
}

double *tu_read_store(struct tstore *ts, int64_t ld) {
  part_t pr = ts_rows(ts), pc = ts_cols(ts);
  double *R = malloc((size_t)(ld * pc.n + 1) * sizeof(double));
  for (int64_t tj = 0; tj < pc.count; tj++)
    for (int64_t ti = 0; ti < pr.count; ti++)
      CU_ASSERT(ts_read(ts, ti, tj, R + part_start(pr, ti) + part_start(pc, tj) * ld, ld) == OOC_OK);
  return R;
}

/* ---- tile stores over memory --------------------------------------------------------------- */

ooc_status_t tu_mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                         int64_t ld) {
  tu_memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, s->M + r0 + (c0 + j) * s->ld, (size_t)nr * sizeof(double));
  return OOC_OK;
}

ooc_status_t tu_mem_read_t(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                           double *dst, int64_t ld) {
  tu_memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    for (int64_t i = 0; i < nr; i++) dst[j + i * ld] = s->M[r0 + i + (c0 + j) * s->ld];
  return OOC_OK;
}

ooc_status_t tu_mem_rows(void *self, int64_t groups, int64_t win_bytes, ooc_rows_fn fn,
                         void *user, int *streamed) {
  tu_memsrc_t *s = self;
  int64_t n = s->ld, wr = win_bytes / (8 * n) > 1 ? win_bytes / (8 * n) : 1;
  double *win = malloc((size_t)(wr * n) * sizeof *win);
  if (!win) return OOC_ERR_NOMEM;
  groups = groups < n ? groups : n;
  for (int64_t g = groups - 1; g >= 0; g--)
    for (int64_t r = n * g / groups, re = n * (g + 1) / groups; r < re; r += wr) {
      int64_t h = re - r < wr ? re - r : wr;
      for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < n; j++) win[i * n + j] = s->M[r + i + j * n];
      fn(user, (int)g, r, h, win, n);
    }
  free(win);
  *streamed = 1;
  return OOC_OK;
}

ooc_status_t tu_sp_open(void *self, size_t slot, void **h) {
  tu_spill_t *sl = self;
  OOC_TRY(scratch_open(sl->ctx, tu_tmpdir(), sl->tag, slot, 0, &sl->s));
  *h = sl;
  return OOC_OK;
}
ooc_status_t tu_sp_put(void *h, int64_t id, const void *d, size_t bytes) {
  tu_spill_t *sl = h;
  sl->puts++;
  return scratch_put(sl->s, id, d, bytes);
}
ooc_status_t tu_sp_get(void *h, int64_t id, void *d, size_t colb, size_t ncols, size_t stride) {
  return scratch_get_cols(((tu_spill_t *)h)->s, id, d, colb, ncols, stride);
}

double *tu_rand_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  double *A = malloc((size_t)(rows * cols + 1) * sizeof *A);
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int64_t i = 0; A && i < rows * cols; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    A[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  return A;
}

void tu_spoil_inverse(int kind, int64_t n, double *X, double xmax, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = ((double)(*seed >> 11) / 9007199254740992.0 - 0.5) * 1e-10 * xmax;
    if (kind == 1) X[i + 37 * n] += 10 * u;
    if (kind == 2) X[211 + i * n] += 20 * u;
    if (kind == 3)
      for (int64_t j = 0; j < n; j++) X[i + j * n] *= 1 + 1e-9 * (double)((i * 7 + j * 13) % 5 - 2);
  }
}
