/*
 * test_io.c: the io module: HDF5 matrices (h5mat), the zstd filter, the scratch store.
 *
 * Files with shapes and types oocsolve refuses are made with the HDF5 C API directly, so the tests
 * see exactly what a foreign writer (h5py, netCDF) would leave.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "base/parloop.h"
#include "io/chunkio.h"
#include "io/h5mat.h"
#include "io/fileio.h"
#include "io/journal.h"
#include "io/scratch.h"
#include "testutil.h"

/* ---- helpers -------------------------------------------------------------------------------- */

/* Values with full mantissas, so a lost or reordered element cannot go unnoticed. */
static double val(int64_t i, int64_t j) {
  return sin(0.37 * (double)i + 1.1 * (double)j) * 1000.0 + (double)i - (double)j / 3.0;
}

static double *make_matrix(int64_t rows, int64_t cols) {
  double *A = malloc((size_t)(rows * cols) * sizeof *A);
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++) A[i + j * rows] = val(i, j);
  return A;
}

/* Asserts status and a message substring, then clears the error for the next check. */
#define EXPECT_FAIL(ctx, expr, want, substr)                                                       \
  do {                                                                                             \
    ooc_status_t st_ = (expr);                                                                     \
    const char *msg_ = ooc_ctx_error(ctx);                                                         \
    CU_ASSERT_EQUAL(st_, want);                                                                    \
    CU_ASSERT_PTR_NOT_NULL(strstr(msg_, substr));                                                  \
    if (st_ != (want) || !strstr(msg_, substr) || getenv("OOC_TEST_VERBOSE"))                     \
      fprintf(stderr, "\n  %s:%d: got %s \"%s\", wanted %s with \"%s\"\n", __FILE__, __LINE__,    \
              ooc_status_str(st_), msg_, ooc_status_str(want), substr);                            \
    ooc_clear_error(ctx);                                                                          \
  } while (0)

#define EXPECT_OK(ctx, expr)                                                                       \
  do {                                                                                             \
    ooc_status_t st_ = (expr);                                                                     \
    if (st_ != OOC_OK) fprintf(stderr, "\n  %s:%d: %s\n", __FILE__, __LINE__, ooc_ctx_error(ctx)); \
    CU_ASSERT_FATAL(st_ == OOC_OK);                                                                \
  } while (0)

/* Writes A (rows x cols, column-major) as an h5m output in irregular rectangles. */
static void write_output(ooc_ctx_t *ctx, const char *file, const char *dset, const double *A,
                         int64_t rows, int64_t cols, h5m_type_t type, int64_t chunk,
                         const char *compress) {
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_create(ctx, file, dset, rows, cols, type, chunk, compress, 1, &m));
  static const int64_t rstep[] = {7, 13, 5, 29}, cstep[] = {11, 3, 17};
  int64_t ri = 0;
  for (int64_t r = 0; r < rows; ri++) {
    int64_t h = ooc_min64(rstep[ri % 4], rows - r);
    int64_t ci = 0;
    for (int64_t c = 0; c < cols; ci++) {
      int64_t w = ooc_min64(cstep[ci % 3], cols - c);
      EXPECT_OK(ctx, h5m_write(m, r, c, h, w, A + r + c * rows, rows));
      c += w;
    }
    r += h;
  }
  CU_ASSERT_EQUAL(h5m_bytes(m), rows * cols * (type == H5M_F32 ? 4 : 8));
  EXPECT_OK(ctx, h5m_commit(m));
  h5m_close(m);
}

/* Reads rectangle (r0, c0, nr, nc) of m into a buffer with leading dimension ld (the rows
 * past nr hold a sentinel that must survive) and compares with A (rows x ., rounded through
 * float for f32); returns how many elements differ, printing the first few when `say`. */
static int compare_rect(ooc_ctx_t *ctx, h5mat_t *m, const double *A, int64_t rows, int64_t r0,
                        int64_t c0, int64_t nr, int64_t nc, int64_t ld, int f32, int say) {
  const double sentinel = -12345.0;
  int bad = 0;
  /* tr = 0: h5m_read (nr x nc, ld); tr = 1: h5m_read_t, the transpose (nc x nr) with as much
   * padding. Element k of buffer column o is rectangle element (i, j) or padding. */
  for (int tr = 0; tr < 2; tr++) {
    int64_t lead = tr ? nc + (ld - nr) : ld, inner = tr ? nc : nr, outer = tr ? nr : nc;
    double *B = malloc((size_t)(lead * outer) * sizeof *B);
    for (int64_t t = 0; t < lead * outer; t++) B[t] = sentinel;
    EXPECT_OK(ctx, (tr ? h5m_read_t : h5m_read)(m, r0, c0, nr, nc, B, lead));
    for (int64_t o = 0; o < outer; o++)
      for (int64_t k = 0; k < lead; k++) {
        int64_t i = tr ? o : k, j = tr ? k : o;
        double want = k < inner ? A[(r0 + i) + (c0 + j) * rows] : sentinel;
        if (f32 && k < inner) want = (double)(float)want;
        if (B[k + o * lead] == want) continue;
        if (say && bad < 5)
          fprintf(stderr, "\n  rect (%lld, %lld, %lld x %lld)%s: B(%lld,%lld) = %.17g, want "
                  "%.17g\n", (long long)r0, (long long)c0, (long long)nr, (long long)nc,
                  tr ? " transposed" : "", (long long)k, (long long)o, B[k + o * lead], want);
        bad++;
      }
    free(B);
  }
  return bad;
}

/* Reads rectangles of every kind back and compares with A (rounded through float for f32). */
static void check_rects(ooc_ctx_t *ctx, const char *file, const char *dset, const double *A,
                        int64_t rows, int64_t cols, int f32) {
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, dset, &m));
  CU_ASSERT_EQUAL(h5m_rows(m), rows);
  CU_ASSERT_EQUAL(h5m_cols(m), cols);
  CU_ASSERT_EQUAL(h5m_type(m), f32 ? H5M_F32 : H5M_F64);
  CU_ASSERT_STRING_EQUAL(h5m_notice(m), "");
  int64_t sq = ooc_min64(rows, cols) / 2;
  const int64_t rect[][5] = {
      /* r0, c0, nr, nc, extra ld */
      {0, 0, rows, cols, 0},         {0, 0, rows, cols, 3},   {1, 2, 9, 4, 5},
      {rows - 3, cols - 5, 3, 5, 0}, {3, 1, sq, sq, 0},       {2, 3, sq, sq, 7},
      {0, cols - 1, rows, 1, 0},     {rows - 1, 0, 1, cols, 0}, {5, 5, 1, 1, 0},
  };
  int bad = 0;
  for (size_t k = 0; k < sizeof rect / sizeof rect[0]; k++)
    bad += compare_rect(ctx, m, A, rows, rect[k][0], rect[k][1], rect[k][2], rect[k][3],
                        rect[k][2] + rect[k][4], f32, 1);
  CU_ASSERT_EQUAL(bad, 0);
  h5m_close(m);
}

/* h5m_stream_rows: every row exactly once, each group's rows in order inside its range, the
 * values A's (rounded through float for f32), with windows of a row and of several; a file it
 * cannot stream (compressed: want = 0) reads nothing and says so. */
typedef struct {
  const double *A;
  int64_t rows, cols, groups, *next; /* next[g]: the row group g hands over next */
  int f32, bad, *seen;
} stream_t;

static void stream_row(void *user, int g, int64_t r0, int64_t nr, const double *w, int64_t ld) {
  stream_t *s = user;
  if (g < 0 || g >= s->groups || r0 != s->next[g] || ld != s->cols ||
      r0 + nr > s->rows * (g + 1) / s->groups) {
    s->bad++;
    return;
  }
  s->next[g] = r0 + nr;
  for (int64_t i = 0; i < nr; i++) {
    s->seen[r0 + i]++;
    for (int64_t j = 0; j < s->cols; j++) {
      double want = s->A[(r0 + i) + j * s->rows];
      if (s->f32) want = (double)(float)want;
      s->bad += w[i * ld + j] != want;
    }
  }
}

static void check_stream(ooc_ctx_t *ctx, const char *file, const double *A, int64_t rows,
                         int64_t cols, int f32, int want) {
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, NULL, &m));
  const int64_t cases[][2] = {{1, 1}, {4, 8 * 3 * cols}, {7, 1 << 20}, {1000, 8 * cols}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t groups = cases[k][0], eff = groups < rows ? groups : rows;
    int64_t *next = calloc((size_t)eff, sizeof *next);
    int *seen = calloc((size_t)rows, sizeof *seen);
    for (int64_t g = 0; g < eff; g++) next[g] = rows * g / eff;
    stream_t s = {A, rows, cols, eff, next, f32, 0, seen};
    int streamed = -1;
    int64_t before = h5m_bytes(m);
    EXPECT_OK(ctx, h5m_stream_rows(m, groups, cases[k][1], stream_row, &s, &streamed));
    CU_ASSERT_EQUAL(streamed, want);
    int once = 1;
    for (int64_t i = 0; i < rows; i++) once &= seen[i] == want;
    CU_ASSERT(once && s.bad == 0);
    CU_ASSERT_EQUAL(h5m_bytes(m) - before, want * rows * cols * (f32 ? 4 : 8));
    free(next);
    free(seen);
  }
  h5m_close(m);
}

static hid_t raw_file(const char *path) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CU_ASSERT_FATAL(f >= 0);
  return f;
}

static void raw_dataset(hid_t f, const char *name, hid_t ftype, int rank, const hsize_t *dims,
                        hid_t mtype, const void *data) {
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t d = H5Dcreate2(f, name, ftype, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  CU_ASSERT_FATAL(d >= 0);
  if (data) CU_ASSERT(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(d);
  H5Pclose(lcpl);
  H5Sclose(sp);
}

static int count_entries(const char *dir, const char *substr) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, substr)) n++;
  if (d) closedir(d);
  return n;
}

static int64_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* ---- spec and option parsing ---------------------------------------------------------------- */

static void t_split_spec(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char f[256], d[256];
  EXPECT_OK(ctx, h5m_split_spec(ctx, "cov.h5:/a/b", f, sizeof f, d, sizeof d));
  CU_ASSERT_STRING_EQUAL(f, "cov.h5");
  CU_ASSERT_STRING_EQUAL(d, "/a/b");
  EXPECT_OK(ctx, h5m_split_spec(ctx, "dir/cov.h5", f, sizeof f, d, sizeof d));
  CU_ASSERT_STRING_EQUAL(f, "dir/cov.h5");
  CU_ASSERT_STRING_EQUAL(d, "");
  EXPECT_OK(ctx, h5m_split_spec(ctx, "run:/x/cov.h5:/cov", f, sizeof f, d, sizeof d));
  CU_ASSERT_STRING_EQUAL(f, "run:/x/cov.h5");
  CU_ASSERT_STRING_EQUAL(d, "/cov");
  EXPECT_OK(ctx, h5m_split_spec(ctx, "cov.h5:cov", f, sizeof f, d, sizeof d));
  CU_ASSERT_STRING_EQUAL(f, "cov.h5");
  CU_ASSERT_STRING_EQUAL(d, "/cov");
  EXPECT_OK(ctx, h5m_split_spec(ctx, "cov.h5:", f, sizeof f, d, sizeof d));
  CU_ASSERT_STRING_EQUAL(f, "cov.h5");
  CU_ASSERT_STRING_EQUAL(d, "");
  EXPECT_FAIL(ctx, h5m_split_spec(ctx, "", f, sizeof f, d, sizeof d), OOC_ERR_ARG, "empty");
  EXPECT_FAIL(ctx, h5m_split_spec(ctx, ":/x", f, sizeof f, d, sizeof d), OOC_ERR_ARG, "no file");
  EXPECT_FAIL(ctx, h5m_split_spec(ctx, "a-long-name.h5:/x", f, 4, d, sizeof d), OOC_ERR_ARG,
              "too long");
  tu_ctx_done(ctx);
}

static void t_parse_compress(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int kind, level;
  EXPECT_OK(ctx, h5m_parse_compress(ctx, NULL, &kind, &level));
  CU_ASSERT_EQUAL(kind, 0);
  EXPECT_OK(ctx, h5m_parse_compress(ctx, "none", &kind, &level));
  CU_ASSERT_EQUAL(kind, 0);
  EXPECT_OK(ctx, h5m_parse_compress(ctx, "zstd", &kind, &level));
  CU_ASSERT(kind == 1 && level == 3);
  EXPECT_OK(ctx, h5m_parse_compress(ctx, "zstd:9", &kind, &level));
  CU_ASSERT(kind == 1 && level == 9);
  EXPECT_OK(ctx, h5m_parse_compress(ctx, "deflate", &kind, &level));
  CU_ASSERT(kind == 2 && level == 6);
  EXPECT_OK(ctx, h5m_parse_compress(ctx, "deflate:1", &kind, &level));
  CU_ASSERT(kind == 2 && level == 1);
  EXPECT_FAIL(ctx, h5m_parse_compress(ctx, "lz4", &kind, &level), OOC_ERR_ARG,
              "unknown compression");
  EXPECT_FAIL(ctx, h5m_parse_compress(ctx, "zstd:x", &kind, &level), OOC_ERR_ARG, "level");
  EXPECT_FAIL(ctx, h5m_parse_compress(ctx, "deflate:12", &kind, &level), OOC_ERR_ARG, "1..9");
  EXPECT_FAIL(ctx, h5m_parse_compress(ctx, "zstd:", &kind, &level), OOC_ERR_ARG, "level");
  tu_ctx_done(ctx);
}

/* ---- the transposing copies (chunkio.h) ------------------------------------------------------
 * cio_unpack (row-major chunk rows into a column-major buffer), cio_unpack_t (the same rows as
 * columns: a transposed read's straight copy) and cio_pack (back, from a
 * column-major or a transposed source), float64 and float32, on shapes odd and even, small and
 * past the size where the copies write with streaming stores (1 MiB), into buffers with padding
 * (which must stay untouched) and starting off a 16-byte boundary. */
/* The test chunk's element (i, j) as a double, through float32 when es is 4 */
static double chunk_value(int64_t i, int64_t j, int es) {
  double v = (double)(i * 4099 + j) + 0.5;
  return es == 8 ? v : (double)(float)v;
}

static void t_transposing_copies(void) {
  const int64_t shapes[][2] = {{1, 1}, {3, 5}, {17, 65}, {64, 4096}, {129, 1031}, {600, 301},
                               {1025, 130}};
  const double sentinel = -7.25;
  int bad = 0, cases = 0;
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
    for (int es = 4; es <= 8; es += 4)
      for (int pad = 0; pad < 2; pad++)
        for (int off = 0; off < 2; off++) {
          int64_t h = shapes[k][0], w = shapes[k][1], rw = w + 3 * pad, ld = h + pad;
          /* the source: row-major h x rw (the chunk), element (i, j) = i * 4099 + j */
          char *src = malloc((size_t)(h * rw) * (size_t)es);
          for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < rw; j++) {
              double v = (double)(i * 4099 + j) + 0.5;
              if (es == 8) ((double *)src)[i * rw + j] = v;
              else ((float *)src)[i * rw + j] = (float)v;
            }
          double *buf = malloc((size_t)(ld * w + 1) * sizeof(double)), *d = buf + off;
          for (int64_t t = 0; t < ld * w + 1; t++) buf[t] = sentinel;
          cio_unpack(src, (size_t)es, rw, h, w, d, ld);
          for (int64_t j = 0; j < w; j++)
            for (int64_t i = 0; i < ld; i++)
              bad += d[i + j * ld] != (i < h ? chunk_value(i, j, es) : sentinel);
          bad += off ? buf[0] != sentinel : buf[ld * w] != sentinel;
          /* cio_unpack_t: the block as it is, row i into column i (ld w + pad, off the boundary
           * by off): streaming stores past 1 MiB, so each column may start off 16 bytes */
          int64_t ldt = w + pad;
          double *bt = malloc((size_t)(ldt * h + 1) * sizeof(double)), *dt = bt + off;
          for (int64_t t = 0; t < ldt * h + 1; t++) bt[t] = sentinel;
          cio_unpack_t(src, (size_t)es, rw, h, w, dt, ldt);
          for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < ldt; j++)
              bad += dt[j + i * ldt] != (j < w ? chunk_value(i, j, es) : sentinel);
          bad += off ? bt[0] != sentinel : bt[ldt * h] != sentinel;
          free(bt);
          /* back: from the column-major buffer (rs 1, cs ld) and from its transpose (rs ld', cs
           * 1) into a row-major chunk of rw per row, its padding untouched */
          double *tr = malloc((size_t)(h * w) * sizeof(double)); /* w x h, ld w */
          for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) tr[j + i * w] = d[i + j * ld];
          for (int v = 0; v < 2; v++) {
            char *out = malloc((size_t)(h * rw + 1) * (size_t)es + 8), *o = out + off * es;
            memset(out, 0x5a, (size_t)(h * rw + 1) * (size_t)es + 8);
            if (v == 0) cio_pack(d, 1, ld, h, w, (size_t)es, o, rw);
            else cio_pack(tr, w, 1, h, w, (size_t)es, o, rw);
            for (int64_t i = 0; i < h; i++)
              for (int64_t j = 0; j < w; j++)
                bad += es == 8 ? memcmp(o + (i * rw + j) * 8, src + (i * rw + j) * 8, 8) != 0
                               : memcmp(o + (i * rw + j) * 4, src + (i * rw + j) * 4, 4) != 0;
            for (int64_t i = 0; i < h && pad; i++) /* the row's padding: not written */
              bad += (unsigned char)o[(i * rw + w) * es] != 0x5a;
            free(out);
          }
          if (es == 4) { /* float32 out: doubles that float32 cannot hold round as a cast does */
            double *full = malloc((size_t)(ld * w) * sizeof(double));
            float *o = malloc((size_t)(h * rw) * sizeof(float));
            for (int64_t j = 0; j < w; j++)
              for (int64_t i = 0; i < h; i++)
                full[i + j * ld] = (double)(i * 4099 + j) * 0.1 + 1.0 / 3 - (double)(j % 3) * 1e300;
            cio_pack(full, 1, ld, h, w, 4, o, rw);
            for (int64_t i = 0; i < h; i++)
              for (int64_t j = 0; j < w; j++) {
                float want = (float)full[i + j * ld];
                bad += memcmp(&o[i * rw + j], &want, 4) != 0; /* -1e300: -inf, as the cast */
              }
            free(o);
            free(full);
          }
          free(tr);
          free(buf);
          free(src);
          cases++;
        }
  printf("[%d cases] ", cases);
  CU_ASSERT_EQUAL(bad, 0);
}

/* ---- round trips ---------------------------------------------------------------------------- */

static void roundtrip(h5m_type_t type, int64_t chunk, const char *compress, const char *name) {
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t rows = 61, cols = 47;
  double *A = make_matrix(rows, cols);
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path(name));
  write_output(ctx, file, "/grp/inv", A, rows, cols, type, chunk, compress);
  CU_ASSERT(tu_file_exists(file));
  CU_ASSERT_EQUAL(count_entries(tu_tmpdir(), ".tmp-"), 0);
  check_rects(ctx, file, "/grp/inv", A, rows, cols, type == H5M_F32);
  check_rects(ctx, file, "grp/inv", A, rows, cols, type == H5M_F32);
  check_rects(ctx, file, "", A, rows, cols, type == H5M_F32);
  check_stream(ctx, file, A, rows, cols, type == H5M_F32, !compress || !strcmp(compress, "none"));
  free(A);
  tu_ctx_done(ctx);
}

static void t_roundtrip_f64_zstd(void) { roundtrip(H5M_F64, 16, "zstd", "rt_f64_zstd.h5"); }
static void t_roundtrip_f32_zstd(void) { roundtrip(H5M_F32, 10, "zstd:7", "rt_f32_zstd.h5"); }
static void t_roundtrip_f64_deflate(void) { roundtrip(H5M_F64, 20, "deflate", "rt_f64_defl.h5"); }
static void t_roundtrip_f32_deflate(void) { roundtrip(H5M_F32, 64, "deflate:1", "rt_f32_defl.h5"); }
static void t_roundtrip_f64_chunked(void) { roundtrip(H5M_F64, 9, "none", "rt_f64_chunk.h5"); }
static void t_roundtrip_f64_contig(void) { roundtrip(H5M_F64, 0, NULL, "rt_f64_contig.h5"); }
static void t_roundtrip_f32_contig(void) { roundtrip(H5M_F32, 0, "none", "rt_f32_contig.h5"); }

/* Rectangles larger than one staging band: the band loop and its chunk alignment. */
static void t_large_rectangles(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t rows = 1500, cols = 1300;
  double *A = make_matrix(rows, cols);
  const struct {
    int64_t chunk;
    const char *comp;
    h5m_type_t type;
  } cases[] = {{0, "none", H5M_F64},
               {100, "zstd:1", H5M_F64},
               {128, "none", H5M_F32},
               {1024, "deflate:1", H5M_F64}}; /* a chunk row is wider than a staging block */
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char file[1024], name[32];
    snprintf(name, sizeof name, "big%zu.h5", k);
    snprintf(file, sizeof file, "%s", tu_path(name));
    h5mat_t *m = NULL;
    EXPECT_OK(ctx, h5m_create(ctx, file, "/A", rows, cols, cases[k].type, cases[k].chunk,
                              cases[k].comp, 0, &m));
    EXPECT_OK(ctx, h5m_write(m, 0, 0, rows, 700, A, rows));
    EXPECT_OK(ctx, h5m_write(m, 0, 700, rows, cols - 700, A + 700 * rows, rows));
    EXPECT_OK(ctx, h5m_commit(m));
    h5m_close(m);

    EXPECT_OK(ctx, h5m_open(ctx, file, NULL, &m));
    const int64_t rect[][4] = {{0, 0, rows, cols}, {37, 11, 1203, 1203}, {3, 250, 1497, 1001}};
    int bad = 0;
    for (size_t r = 0; r < 3; r++) {
      int64_t r0 = rect[r][0], c0 = rect[r][1], nr = rect[r][2], nc = rect[r][3];
      double *B = malloc((size_t)(nr * nc) * sizeof *B);
      EXPECT_OK(ctx, h5m_read(m, r0, c0, nr, nc, B, nr));
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < nr; i++) {
          double want = A[(r0 + i) + (c0 + j) * rows];
          if (cases[k].type == H5M_F32) want = (double)(float)want;
          if (B[i + j * nr] != want) bad++;
        }
      free(B);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* staging stays block-sized: the largest here is one 1024 x 1024 chunk */
    CU_ASSERT(ooc_ctx_host_peak(ctx) <= 9 * 1024 * 1024);
    h5m_close(m);
  }
  free(A);
  tu_ctx_done(ctx);
}

static void t_attributes(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("attrs.h5"));
  double A[6] = {1, 2, 3, 4, 5, 6};
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_create(ctx, file, "inverse", 2, 3, H5M_F64, 4, "zstd", 0, &m));
  EXPECT_OK(ctx, h5m_write(m, 0, 0, 2, 3, A, 2));
  EXPECT_OK(ctx, h5m_attr_str(m, "method", "gj"));
  EXPECT_OK(ctx, h5m_attr_str(m, "method", "gauss-jordan")); /* replaces */
  EXPECT_OK(ctx, h5m_attr_f64(m, "residual", 0.25));
  EXPECT_OK(ctx, h5m_attr_i64(m, "tile", (int64_t)1 << 40));
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_name(m), ":/inverse"));
  EXPECT_OK(ctx, h5m_commit(m));
  EXPECT_FAIL(ctx, h5m_attr_f64(m, "late", 1), OOC_ERR_ARG, "not an open output");
  EXPECT_FAIL(ctx, h5m_write(m, 0, 0, 1, 1, A, 1), OOC_ERR_ARG, "not an open output");
  h5m_close(m);
  EXPECT_OK(ctx, h5m_create(ctx, tu_path("rect_t.h5"), "/r", 3, 4, H5M_F64, 2, NULL, 1, &m));
  EXPECT_FAIL(ctx, h5m_write_t(m, 0, 0, 2, 3, A, 2), OOC_ERR_ARG, "leading dimension");
  EXPECT_FAIL(ctx, h5m_write_t(m, 0, 2, 2, 3, A, 3), OOC_ERR_ARG, "outside the 3 x 4 matrix");
  EXPECT_OK(ctx, h5m_write_t(m, 0, 0, 2, 3, A, 3));
  h5m_close(m);

  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/inverse", H5P_DEFAULT);
  CU_ASSERT_FATAL(d >= 0);
  hid_t a = H5Aopen(d, "method", H5P_DEFAULT);
  hid_t t = H5Aget_type(a);
  CU_ASSERT(H5Tis_variable_str(t) > 0);
  CU_ASSERT_EQUAL(H5Tget_cset(t), H5T_CSET_UTF8);
  char *s = NULL;
  CU_ASSERT(H5Aread(a, t, &s) >= 0);
  CU_ASSERT_STRING_EQUAL(s, "gauss-jordan");
  H5free_memory(s);
  H5Tclose(t);
  H5Aclose(a);
  double r = 0;
  int64_t tile = 0;
  a = H5Aopen(d, "residual", H5P_DEFAULT);
  CU_ASSERT(H5Aread(a, H5T_NATIVE_DOUBLE, &r) >= 0);
  H5Aclose(a);
  a = H5Aopen(d, "tile", H5P_DEFAULT);
  CU_ASSERT(H5Aread(a, H5T_NATIVE_INT64, &tile) >= 0);
  H5Aclose(a);
  CU_ASSERT_EQUAL(r, 0.25);
  CU_ASSERT_EQUAL(tile, (int64_t)1 << 40);
  H5Dclose(d);
  H5Fclose(f);
  tu_ctx_done(ctx);
}

/* ---- foreign files -------------------------------------------------------------------------- */

static void t_integer_dataset(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("int.h5"));
  int32_t v[5][4];
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 4; j++) v[i][j] = (i - 2) * 1000000 + j;
  hsize_t dims[2] = {5, 4};
  hid_t f = raw_file(file);
  raw_dataset(f, "/counts", H5T_STD_I32BE, 2, dims, H5T_NATIVE_INT32, v);
  H5Fclose(f);
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, NULL, &m));
  CU_ASSERT_EQUAL(h5m_type(m), H5M_INT);
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "integer"));
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "float64"));
  double B[20];
  EXPECT_OK(ctx, h5m_read(m, 0, 0, 5, 4, B, 5));
  int bad = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 4; j++) bad += B[i + j * 5] != (double)v[i][j];
  CU_ASSERT_EQUAL(bad, 0);
  EXPECT_OK(ctx, h5m_read(m, 1, 1, 3, 3, B, 3)); /* square: read in place, HDF5 converts */
  CU_ASSERT_EQUAL(B[0], (double)v[1][1]);
  CU_ASSERT_EQUAL(B[5], (double)v[3][2]);
  h5m_close(m);
  tu_ctx_done(ctx);
}

static void t_bigendian_float(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("be.h5"));
  float v[3][2] = {{1.5f, -2.25f}, {3e-20f, 4e20f}, {0.1f, 7}};
  hsize_t dims[2] = {3, 2};
  hid_t f = raw_file(file);
  raw_dataset(f, "/m", H5T_IEEE_F32BE, 2, dims, H5T_NATIVE_FLOAT, v);
  H5Fclose(f);
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, "/m", &m));
  CU_ASSERT_EQUAL(h5m_type(m), H5M_F32);
  double B[6];
  EXPECT_OK(ctx, h5m_read(m, 0, 0, 3, 2, B, 3));
  int bad = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) bad += B[i + j * 3] != (double)v[i][j];
  CU_ASSERT_EQUAL(bad, 0);
  h5m_close(m);
  tu_ctx_done(ctx);
}

/* Half precision (a user-defined 16-bit IEEE type, as numpy's float16 is stored): HDF5 converts. */
static void t_half_float(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("half.h5"));
  hid_t h = H5Tcopy(H5T_IEEE_F32LE);
  CU_ASSERT(H5Tset_fields(h, 15, 10, 5, 0, 10) >= 0);
  CU_ASSERT(H5Tset_offset(h, 0) >= 0);
  CU_ASSERT(H5Tset_precision(h, 16) >= 0);
  CU_ASSERT(H5Tset_size(h, 2) >= 0);
  CU_ASSERT(H5Tset_ebias(h, 15) >= 0);
  float v[2][3] = {{1, -2.5f, 0.125f}, {1024, 3, -0.5f}}; /* exact in half precision */
  hsize_t dims[2] = {2, 3};
  hid_t f = raw_file(file);
  raw_dataset(f, "/h", h, 2, dims, H5T_NATIVE_FLOAT, v);
  H5Fclose(f);
  H5Tclose(h);
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, NULL, &m));
  CU_ASSERT_EQUAL(h5m_type(m), H5M_F32);
  CU_ASSERT_PTR_NOT_NULL(strstr(h5m_notice(m), "16-bit float"));
  double B[6];
  EXPECT_OK(ctx, h5m_read(m, 0, 0, 2, 3, B, 2));
  int bad = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) bad += B[i + j * 2] != (double)v[i][j];
  CU_ASSERT_EQUAL(bad, 0);
  h5m_close(m);
  tu_ctx_done(ctx);
}

static size_t identity_filter(unsigned flags, size_t ncd, const unsigned cd[], size_t nbytes,
                              size_t *buf_size, void **buf) {
  (void)flags, (void)ncd, (void)cd, (void)buf_size, (void)buf;
  return nbytes;
}

/* A dataset needing a filter this process lacks (like blosc without hdf5plugin). */
static void t_missing_filter(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("filter.h5"));
  const H5Z_filter_t fid = 311; /* in HDF5's range for testing */
  const H5Z_class2_t cls = {H5Z_CLASS_T_VERS, fid, 1, 1, "test-only", NULL, NULL, identity_filter};
  CU_ASSERT_FATAL(H5Zregister(&cls) >= 0);
  double v[16] = {0};
  hsize_t dims[2] = {4, 4}, cdims[2] = {2, 2};
  hid_t f = raw_file(file);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, cdims);
  H5Pset_filter(dcpl, fid, H5Z_FLAG_MANDATORY, 0, NULL);
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t d = H5Dcreate2(f, "/m", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  H5Dclose(d);
  H5Sclose(sp);
  H5Pclose(dcpl);
  H5Fclose(f);
  CU_ASSERT(H5Zunregister(fid) >= 0);
  h5mat_t *m = NULL;
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "filter 311 ('test-only')");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "not available");
  CU_ASSERT_PTR_NULL(m);
  tu_ctx_done(ctx);
}

static void t_auto_detect(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("auto.h5"));
  double v[100] = {0};
  hsize_t d1[1] = {100}, d2[2] = {2, 3};
  char strs[6][4] = {"a", "b", "c", "d", "e", "f"};
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 4);
  hid_t f = raw_file(file);
  raw_dataset(f, "/vector", H5T_IEEE_F64LE, 1, d1, H5T_NATIVE_DOUBLE, v);
  raw_dataset(f, "/labels", st, 2, d2, st, strs); /* 2-D but not numeric: not a candidate */
  raw_dataset(f, "/deep/group/cov", H5T_IEEE_F64LE, 2, d2, H5T_NATIVE_DOUBLE, v);
  H5Fclose(f);
  H5Tclose(st);
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, "", &m));
  char want[1100];
  snprintf(want, sizeof want, "%s:/deep/group/cov", file);
  CU_ASSERT_STRING_EQUAL(h5m_name(m), want);
  CU_ASSERT_EQUAL(h5m_rows(m), 2);
  CU_ASSERT_EQUAL(h5m_cols(m), 3);
  h5m_close(m);

  f = H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT);
  raw_dataset(f, "/other", H5T_IEEE_F32LE, 2, d2, H5T_NATIVE_DOUBLE, v);
  H5Fclose(f);
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "several 2-D datasets");
  CU_ASSERT_PTR_NULL(m);
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "/deep/group/cov");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "/other");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "name one as");

  snprintf(file, sizeof file, "%s", tu_path("no2d.h5"));
  f = raw_file(file);
  raw_dataset(f, "/vector", H5T_IEEE_F64LE, 1, d1, H5T_NATIVE_DOUBLE, v);
  H5Fclose(f);
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "no 2-D numeric dataset");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "/vector");
  tu_ctx_done(ctx);
}

/* A dataset written by plain HDF5 calls with filter 32015, as h5py + hdf5plugin would. */
static void t_raw_zstd_filter(void) {
  ooc_ctx_t *ctx = tu_ctx();
  CU_ASSERT_EQUAL(h5m_register_zstd(), 1);
  CU_ASSERT_EQUAL(h5m_register_zstd(), 1);
  CU_ASSERT(H5Zfilter_avail(OOC_H5Z_ZSTD) > 0);
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("rawzstd.h5"));
  const int64_t rows = 40, cols = 33;
  double *rm = malloc((size_t)(rows * cols) * sizeof *rm), *A = make_matrix(rows, cols);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) rm[i * cols + j] = val(i, j);
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols}, cdims[2] = {16, 16};
  unsigned level = 5;
  hid_t f = raw_file(file);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, cdims);
  CU_ASSERT(H5Pset_filter(dcpl, OOC_H5Z_ZSTD, H5Z_FLAG_MANDATORY, 1, &level) >= 0);
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t d = H5Dcreate2(f, "/x", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, rm) >= 0);
  H5Dclose(d);
  H5Sclose(sp);
  H5Pclose(dcpl);
  H5Fclose(f);
  free(rm);
  check_rects(ctx, file, "/x", A, rows, cols, 0);
  free(A);
  tu_ctx_done(ctx);
}

/* Chunks whose zstd frames do not state their size (streaming writers): the filter's fallback. */
static void t_zstd_stream_frames(void) {
  ooc_ctx_t *ctx = tu_ctx();
  CU_ASSERT_EQUAL(h5m_register_zstd(), 1);
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("zstream.h5"));
  /* 320 KB that compress well: the decoder's first guess at the size is too small and grows */
  const int64_t n = 200;
  size_t bytes = (size_t)(n * n) * sizeof(double);
  double *rm = malloc(bytes), *A = malloc(bytes);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) rm[i * n + j] = A[i + j * n] = (double)(i % 5 + j % 3);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  size_t cap = ZSTD_compressBound(bytes);
  unsigned char *frame = malloc(cap);
  ZSTD_outBuffer out = {frame, cap, 0};
  ZSTD_inBuffer in = {rm, bytes, 0};
  CU_ASSERT(!ZSTD_isError(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_continue)));
  size_t left;
  do left = ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end);
  while (left > 0 && !ZSTD_isError(left));
  ZSTD_freeCCtx(cc);
  CU_ASSERT_FATAL(left == 0);
  CU_ASSERT(ZSTD_getFrameContentSize(frame, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
  CU_ASSERT(out.pos * 4 < bytes / 2);

  hsize_t dims[2] = {(hsize_t)n, (hsize_t)n}, off[2] = {0, 0};
  unsigned level = 3;
  hid_t f = raw_file(file);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, dims);
  H5Pset_filter(dcpl, OOC_H5Z_ZSTD, H5Z_FLAG_MANDATORY, 1, &level);
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t d = H5Dcreate2(f, "/s", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CU_ASSERT(H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, out.pos, frame) >= 0);
  H5Dclose(d);
  H5Sclose(sp);
  H5Pclose(dcpl);
  H5Fclose(f);
  free(frame);
  free(rm);
  check_rects(ctx, file, "/s", A, n, n, 0);
  free(A);
  tu_ctx_done(ctx);
}

/* The zstd output, reopened: data intact, filter 32015 recorded, and smaller than raw. */
static void t_zstd_output(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("zout.h5"));
  const int64_t n = 200;
  double *A = malloc((size_t)(n * n) * sizeof *A);
  for (int64_t t = 0; t < n * n; t++) A[t] = (double)(t % 7) * 0.5; /* compressible */
  write_output(ctx, file, "/z", A, n, n, H5M_F64, 64, "zstd:3");
  CU_ASSERT(file_size(file) < n * n * 8 / 4);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/z", H5P_DEFAULT);
  hid_t dcpl = H5Dget_create_plist(d);
  unsigned flags, cd[4];
  size_t ncd = 4;
  CU_ASSERT_EQUAL(H5Pget_nfilters(dcpl), 1);
  CU_ASSERT_EQUAL(H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, 0, NULL, NULL), OOC_H5Z_ZSTD);
  CU_ASSERT(ncd == 1 && cd[0] == 3);
  H5Pclose(dcpl);
  H5Dclose(d);
  H5Fclose(f);
  check_rects(ctx, file, "/z", A, n, n, 0);
  free(A);
  tu_ctx_done(ctx);
}

/* A damaged zstd chunk: OOC_ERR_CORRUPT naming the rectangle; other chunks still read. */
static void t_corrupt_chunk(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("corrupt.h5"));
  const int64_t n = 32;
  double *A = make_matrix(n, n);
  write_output(ctx, file, "/c", A, n, n, H5M_F64, 16, "zstd");
  hsize_t off[2] = {99, 99};
  unsigned mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/c", H5P_DEFAULT), sp = H5Dget_space(d);
  CU_ASSERT(H5Dget_chunk_info(d, sp, 0, off, &mask, &addr, &size) >= 0);
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
  CU_ASSERT_FATAL(size > 8 && (off[0] == 0 || off[0] == 16) && (off[1] == 0 || off[1] == 16));
  int fd = open(file, O_RDWR);
  unsigned char junk[4] = {0xde, 0xad, 0xbe, 0xef}; /* breaks the frame's magic number */
  CU_ASSERT(pwrite(fd, junk, 4, (off_t)addr) == 4);
  close(fd);

  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, "/c", &m));
  double *B = malloc((size_t)(n * n) * sizeof *B);
  EXPECT_FAIL(ctx, h5m_read(m, 0, 0, n, n, B, n), OOC_ERR_CORRUPT, "rows 0..31, columns 0..31");
  EXPECT_FAIL(ctx, h5m_read(m, (int64_t)off[0] + 2, (int64_t)off[1] + 1, 5, 3, B, 5),
              OOC_ERR_CORRUPT, "failed to decode");
  /* the diagonal-opposite chunk is intact */
  int64_t r0 = off[0] == 0 ? 16 : 0, c0 = off[1] == 0 ? 16 : 0;
  EXPECT_OK(ctx, h5m_read(m, r0, c0, 16, 16, B, 16));
  CU_ASSERT_EQUAL(B[3 + 5 * 16], A[(r0 + 3) + (c0 + 5) * n]);
  h5m_close(m);
  free(B);
  free(A);
  tu_ctx_done(ctx);
}

/* ---- direct chunk I/O ----------------------------------------------------------------------- */

/* Reads the whole matrix and strips of every width through the handle's current path into one
 * buffer per rectangle; returns how many elements differ from A. */
static int read_back(ooc_ctx_t *ctx, h5mat_t *m, const double *A, int64_t rows, int64_t cols,
                     int f32) {
  const int64_t rect[][4] = {{0, 0, rows, cols}, {0, 5, rows, 3},  {0, 37, rows, 90},
                             {7, 0, 150, cols},  {rows - 1, 0, 1, cols}, {11, 13, 1, 1}};
  int bad = 0;
  for (size_t k = 0; k < sizeof rect / sizeof rect[0]; k++)
    bad += compare_rect(ctx, m, A, rows, rect[k][0], rect[k][1], rect[k][2], rect[k][3],
                        rect[k][2] + 2, f32, 0);
  return bad;
}

/* Every layout the direct path takes: written by whole-chunk row bands (direct chunk writes),
 * or element by element through H5Dwrite (direct off); read back directly, through H5Dread, and
 * with the smallest stage (one thread, one window); the two files hold the same numbers. */
static void hint_job(void *arg, int64_t k, int worker) {
  (void)k;
  (void)worker;
  h5m_writeback_hint(arg);
}

static void t_direct_io(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t rows = 300, cols = 230; /* edge chunks are partial */
  double *A = make_matrix(rows, cols);
  const struct {
    int64_t chunk;
    const char *comp;
    h5m_type_t type;
    int direct; /* h5m_direct of the output and of the file reopened */
  } cases[] = {{0, "none", H5M_F64, 0},   {64, "none", H5M_F64, 2}, {48, "none", H5M_F32, 2},
               {40, "zstd", H5M_F64, 2},  {64, "zstd:5", H5M_F32, 2},
               {32, "deflate", H5M_F64, 0}};
  double *At = malloc((size_t)(rows * cols) * sizeof *At); /* A^T, ld cols: for h5m_write_t */
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < rows; i++) At[j + i * cols] = A[i + j * rows];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int f32 = cases[k].type == H5M_F32;
    char file[4][1024];
    /* v = 0, 1: h5m_write with the direct path on and off; v = 2, 3: the same from the
     * transpose (h5m_write_t), in two column blocks split at a chunk edge */
    for (int v = 0; v < 4; v++) {
      char name[32];
      snprintf(name, sizeof name, "direct%zu_%d.h5", k, v);
      snprintf(file[v], sizeof file[v], "%s", tu_path(name));
      h5mat_t *m = NULL;
      EXPECT_OK(ctx, h5m_create(ctx, file[v], "/A", rows, cols, cases[k].type, cases[k].chunk,
                                cases[k].comp, 1, &m));
      CU_ASSERT_EQUAL(h5m_direct(m), cases[k].direct);
      if (v % 2 == 1) h5m_set_direct(m, 0);
      int64_t band = cases[k].chunk > 0 ? cases[k].chunk : 64, c1 = 2 * band;
      for (int64_t r = 0; r < rows; r += band) {
        int64_t nr = ooc_min64(band, rows - r);
        if (v < 2) {
          EXPECT_OK(ctx, h5m_write(m, r, 0, nr, cols, A + r, rows));
        } else {
          EXPECT_OK(ctx, h5m_write_t(m, r, 0, nr, c1, At + r * cols, cols));
          EXPECT_OK(ctx, h5m_write_t(m, r, c1, nr, cols - c1, At + c1 + r * cols, cols));
        }
      }
      CU_ASSERT_EQUAL(h5m_bytes(m), rows * cols * (f32 ? 4 : 8));
      /* the output reads back before its commit (the check does that), both ways, the first
       * time beside its writeback hint on a pool thread (as the pipeline's check runs) */
      ooc_par_group_t g;
      ooc_par_start(&g, 1, 1, hint_job, m);
      CU_ASSERT_EQUAL(read_back(ctx, m, A, rows, cols, f32), 0);
      ooc_par_join(&g);
      h5m_writeback_hint(m);
      h5m_writeback_hint(NULL);
      h5m_set_direct(m, 0);
      CU_ASSERT_EQUAL(read_back(ctx, m, A, rows, cols, f32), 0);
      EXPECT_OK(ctx, h5m_commit(m));
      h5m_close(m);
    }
    for (int v = 0; v < 4; v++) {
      h5mat_t *m = NULL;
      EXPECT_OK(ctx, h5m_open(ctx, file[v], NULL, &m));
      CU_ASSERT_EQUAL(h5m_direct(m), cases[k].direct ? cases[k].direct : cases[k].chunk ? 0 : 1);
      CU_ASSERT_EQUAL(read_back(ctx, m, A, rows, cols, f32), 0);
      h5m_set_stage(m, 1);
      CU_ASSERT_EQUAL(read_back(ctx, m, A, rows, cols, f32), 0);
      h5m_set_stage(m, 0);
      h5m_set_direct(m, 0);
      CU_ASSERT_EQUAL(h5m_direct(m), 0);
      CU_ASSERT_EQUAL(read_back(ctx, m, A, rows, cols, f32), 0);
      h5m_set_direct(m, 1);
      h5m_close(m);
    }
    check_rects(ctx, file[0], "/A", A, rows, cols, f32);
    check_rects(ctx, file[2], "/A", A, rows, cols, f32);
  }
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  free(At);
  free(A);
  tu_ctx_done(ctx);
}

/* Where the direct path does not apply, h5mat reads through HDF5: an unallocated chunk (fill
 * values), a user block, a second filter. */
static void t_direct_fallback(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t n = 64;
  double *rm = malloc((size_t)(n * n) * sizeof *rm);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) rm[i * n + j] = val(i, j);
  hsize_t dims[2] = {(hsize_t)n, (hsize_t)n}, cdims[2] = {32, 32};
  for (int k = 0; k < 3; k++) {
    char file[1024], name[32];
    snprintf(name, sizeof name, "fallback%d.h5", k);
    snprintf(file, sizeof file, "%s", tu_path(name));
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (k == 1) H5Pset_userblock(fcpl, 512);
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, cdims);
    unsigned level = 3;
    if (k == 2) {
      H5Pset_shuffle(dcpl);
      H5Pset_filter(dcpl, OOC_H5Z_ZSTD, H5Z_FLAG_MANDATORY, 1, &level);
    }
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "/x", H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (k == 0) { /* only the chunk at (0, 0) */
      hsize_t start[2] = {0, 0}, count[2] = {32, 32};
      hid_t ms = H5Screate_simple(2, count, NULL);
      H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL);
      double *blk = malloc(32 * 32 * sizeof *blk);
      for (int64_t i = 0; i < 32; i++)
        for (int64_t j = 0; j < 32; j++) blk[i * 32 + j] = val(i, j);
      CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, blk) >= 0);
      free(blk);
      H5Sclose(ms);
    } else {
      CU_ASSERT(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, rm) >= 0);
    }
    H5Dclose(d);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(fcpl);
    H5Fclose(f);

    h5mat_t *m = NULL;
    EXPECT_OK(ctx, h5m_open(ctx, file, "/x", &m));
    CU_ASSERT_EQUAL(h5m_direct(m), k == 0 ? 2 : 0);
    double *B = malloc((size_t)(n * n) * sizeof *B);
    if (k == 0) { /* missing data is refused, naming the first missing chunk (issue 20) ... */
      CU_ASSERT_EQUAL(h5m_read(m, 0, 0, n, n, B, n), OOC_ERR_FORMAT);
      CU_ASSERT(strstr(ooc_ctx_error(ctx), "the chunk at row 0, column 32 was never written") != NULL);
      CU_ASSERT_EQUAL(h5m_read(m, 0, 0, 32, 32, B, n), OOC_OK); /* the chunk that is there */
      h5m_set_allow_fill(m, 1); /* ... unless the fill value is asked for */
      ooc_clear_error(ctx);
    }
    EXPECT_OK(ctx, h5m_read(m, 0, 0, n, n, B, n));
    int bad = 0;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        bad += B[i + j * n] != (k > 0 || (i < 32 && j < 32) ? val(i, j) : 0.0);
    CU_ASSERT_EQUAL(bad, 0);
    free(B);
    h5m_close(m);
  }
  free(rm);
  tu_ctx_done(ctx);
}

/* The threads' reads go through the ops table (a failing or short pread is reported with the
 * rectangle), and the one gate of a direct read or of each direct chunk write takes faults. */
static int fail_mode; /* 1: pread fails with EIO, 2: pread finds the end of the file */
static ssize_t bad_pread(int fd, void *buf, size_t len, off_t off) {
  if (fail_mode == 1) {
    errno = EIO;
    return -1;
  }
  if (fail_mode == 2) return 0;
  return pread(fd, buf, len, off);
}

static void count_rows(void *user, int g, int64_t r0, int64_t nr, const double *rows,
                       int64_t ld) {
  (void)g, (void)r0, (void)rows, (void)ld;
  *(int *)user += (int)nr; /* called by no thread below: every read fails, or no pass starts */
}

static void t_direct_faults(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t n = 96;
  double *A = make_matrix(n, n), *B = malloc((size_t)(n * n) * sizeof *B);
  const char *comp[2] = {"none", "zstd"};
  fio_ops_t ops = *fio_posix_ops();
  ops.pread = bad_pread;
  for (int k = 0; k < 2; k++) {
    char file[1024], name[32];
    snprintf(name, sizeof name, "dfault%d.h5", k);
    snprintf(file, sizeof file, "%s", tu_path(name));
    h5mat_t *m = NULL;
    /* a direct chunk write that meets an injected fault: the output is never committed */
    EXPECT_OK(ctx, h5m_create(ctx, file, "/A", n, n, H5M_F64, 32, comp[k], 1, &m));
    EXPECT_OK(ctx, h5m_write(m, 0, 0, 32, n, A, n));
    ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, 2, 0, ENOSPC);
    EXPECT_FAIL(ctx, h5m_write(m, 32, 0, 32, n, A + 32, n), OOC_ERR_NOSPACE,
                "cannot write rows 32..63");
    ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, 0, 0, 0);
    EXPECT_FAIL(ctx, h5m_commit(m), OOC_ERR_NOSPACE, "not committed");
    h5m_close(m);
    CU_ASSERT(access(file, F_OK) != 0);

    write_output(ctx, file, "/A", A, n, n, H5M_F64, 32, comp[k]);
    EXPECT_OK(ctx, h5m_open(ctx, file, "/A", &m));
    CU_ASSERT_EQUAL(h5m_direct(m), 2);
    ooc_fault_arm(ctx, OOC_FAULT_IO, 1, 0, EIO);
    EXPECT_FAIL(ctx, h5m_read(m, 0, 0, n, n, B, n), OOC_ERR_IO, "cannot read rows 0..95");
    ooc_fault_arm(ctx, OOC_FAULT_IO, 0, 0, 0);
    fio_set_ops(ctx, &ops);
    fail_mode = 1;
    EXPECT_FAIL(ctx, h5m_read(m, 3, 40, 50, 20, B, 50), OOC_ERR_IO,
                "cannot read rows 3..52, columns 40..59: Input/output error");
    fail_mode = 2;
    EXPECT_FAIL(ctx, h5m_read(m, 0, 0, n, n, B, n), OOC_ERR_CORRUPT, k ? "truncated" : "past");
    /* the row stream (raw chunks only; zstd's are not streamed: nothing read, no error) takes
     * the same faults: its threads' preads through the table, its one gate per pass */
    int streamed = -1, rows_seen = 0;
    fail_mode = 1;
    ooc_status_t st = h5m_stream_rows(m, 3, 4096, count_rows, &rows_seen, &streamed);
    CU_ASSERT_EQUAL(st, k ? OOC_OK : OOC_ERR_IO);
    CU_ASSERT_EQUAL(streamed, !k);
    if (!k) CU_ASSERT(strstr(ooc_ctx_error(ctx), "Input/output error") != NULL);
    fail_mode = 2;
    ooc_clear_error(ctx); /* a context keeps its first error */
    st = h5m_stream_rows(m, 3, 4096, count_rows, &rows_seen, &streamed);
    CU_ASSERT_EQUAL(st, k ? OOC_OK : OOC_ERR_CORRUPT);
    if (!k) CU_ASSERT(strstr(ooc_ctx_error(ctx), "past") != NULL);
    fail_mode = 0;
    ooc_clear_error(ctx);
    ooc_fault_arm(ctx, OOC_FAULT_IO, 1, 0, EIO);
    st = h5m_stream_rows(m, 3, 4096, count_rows, &rows_seen, &streamed);
    CU_ASSERT_EQUAL(st, k ? OOC_OK : OOC_ERR_IO);
    if (!k) CU_ASSERT(strstr(ooc_ctx_error(ctx), "cannot read rows 0..95") != NULL);
    ooc_fault_arm(ctx, OOC_FAULT_IO, 0, 0, 0);
    CU_ASSERT_EQUAL(rows_seen, 0); /* a window whose read failed is never handed over */
    ooc_clear_error(ctx);
    fail_mode = 2;
    h5m_set_direct(m, 0); /* HDF5's own reads do not use the table */
    EXPECT_OK(ctx, h5m_read(m, 0, 0, n, n, B, n));
    CU_ASSERT_EQUAL(B[5 + 7 * n], A[5 + 7 * n]);
    fail_mode = 0;
    fio_set_ops(ctx, NULL);
    h5m_set_direct(m, 1);
    EXPECT_OK(ctx, h5m_read(m, 0, 0, n, n, B, n));
    CU_ASSERT(memcmp(A, B, (size_t)(n * n) * sizeof *B) == 0);
    h5m_close(m);
  }
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  free(A);
  free(B);
  tu_ctx_done(ctx);
}

/* ---- error cases ---------------------------------------------------------------------------- */

static void t_err_missing_file(void) {
  ooc_ctx_t *ctx = tu_ctx();
  h5mat_t *m = NULL;
  const char *p = tu_path("nope.h5");
  EXPECT_FAIL(ctx, h5m_open(ctx, p, "/x", &m), OOC_ERR_IO, "no such file");
  EXPECT_FAIL(ctx, h5m_open(ctx, p, "/x", &m), OOC_ERR_IO, "nope.h5:/x: ");
  CU_ASSERT_PTR_NULL(m);
  tu_ctx_done(ctx);
}

static void t_err_not_hdf5(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("text.h5"));
  FILE *fp = fopen(file, "w");
  fputs("this is not HDF5 at all, just text that goes on for a while...\n", fp);
  fclose(fp);
  h5mat_t *m = NULL;
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "not an HDF5 file");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "text.h5: ");
  fp = fopen(file, "w");
  fclose(fp);
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "empty");
  fp = fopen(file, "w");
  fwrite("CDF\001\0\0\0\0", 1, 8, fp);
  fclose(fp);
  EXPECT_FAIL(ctx, h5m_open(ctx, file, NULL, &m), OOC_ERR_FORMAT, "netCDF-3");
  EXPECT_FAIL(ctx, h5m_open(ctx, tu_tmpdir(), NULL, &m), OOC_ERR_FORMAT, "directory");
  tu_ctx_done(ctx);
}

static void t_err_truncated(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("trunc.h5"));
  const int64_t n = 64;
  double *A = make_matrix(n, n);
  int64_t cuts[] = {0, 0, 0, 600, 100, 50, 8};
  for (int k = 0; k < 7; k++) {
    unlink(file); /* a damaged file is never added to (h5commit.h) */
    write_output(ctx, file, "/t", A, n, n, H5M_F64, k == 1 ? 32 : 0, k == 2 ? "zstd" : "none");
    int64_t full = file_size(file);
    CU_ASSERT_EQUAL(truncate(file, (off_t)(cuts[k] ? cuts[k] : full / 2)), 0);
    h5mat_t *m = NULL;
    ooc_status_t st = h5m_open(ctx, file, "/t", &m);
    CU_ASSERT(st == OOC_ERR_CORRUPT || st == OOC_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "trunc.h5:/t: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "truncated"));
    if (st == OOC_OK || !strstr(ooc_ctx_error(ctx), "truncated") || getenv("OOC_TEST_VERBOSE"))
      fprintf(stderr, "\n  cut %d: %s: %s\n", k, ooc_status_str(st), ooc_ctx_error(ctx));
    ooc_clear_error(ctx);
    h5m_close(m);
  }
  free(A);
  tu_ctx_done(ctx);
}

static void t_err_bad_datasets(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("bad.h5"));
  double v[24] = {0};
  hsize_t d1[1] = {100}, d2[2] = {3, 2}, d3[3] = {2, 3, 4}, d0[2] = {0, 0}, d0b[2] = {5, 0};
  double v100[100] = {0};
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 8);
  char strs[6][8] = {"a", "b", "c", "d", "e", "f"};
  typedef struct {
    double a;
    int b;
  } rec_t;
  rec_t recs[6] = {{0}};
  hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(rec_t));
  H5Tinsert(ct, "a", HOFFSET(rec_t, a), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "b", HOFFSET(rec_t, b), H5T_NATIVE_INT);
  hid_t f = raw_file(file);
  raw_dataset(f, "/vec", H5T_IEEE_F64LE, 1, d1, H5T_NATIVE_DOUBLE, v100);
  raw_dataset(f, "/cube", H5T_IEEE_F64LE, 3, d3, H5T_NATIVE_DOUBLE, v);
  raw_dataset(f, "/names", st, 2, d2, st, strs);
  raw_dataset(f, "/recs", ct, 2, d2, ct, recs);
  raw_dataset(f, "/empty", H5T_IEEE_F64LE, 2, d0, H5T_NATIVE_DOUBLE, NULL);
  raw_dataset(f, "/thin", H5T_IEEE_F64LE, 2, d0b, H5T_NATIVE_DOUBLE, NULL);
  hid_t sc = H5Screate(H5S_SCALAR);
  hid_t ds = H5Dcreate2(f, "/scalar", H5T_IEEE_F64LE, sc, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(ds);
  H5Sclose(sc);
  hid_t g = H5Gcreate2(f, "/grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(g);
  H5Fclose(f);
  H5Tclose(st);
  H5Tclose(ct);

  h5mat_t *m = NULL;
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/missing", &m), OOC_ERR_FORMAT, "no dataset '/missing'");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/missing", &m), OOC_ERR_FORMAT, "datasets here: /cube");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/missing", &m), OOC_ERR_FORMAT, "bad.h5:/missing: ");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/no/such/path", &m), OOC_ERR_FORMAT, "no dataset");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/grp", &m), OOC_ERR_FORMAT, "is a group");
  /* a 1-D dataset is one column (a right-hand side stored 1-D, issue 21) */
  CU_ASSERT_EQUAL(h5m_open(ctx, file, "/vec", &m), OOC_OK);
  CU_ASSERT(h5m_rows(m) == 100 && h5m_cols(m) == 1 && h5m_rank(m) == 1);
  h5m_close(m);
  m = NULL;
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "cube", &m), OOC_ERR_FORMAT,
              "bad.h5:/cube: dataset is 3-D (shape 2 x 3 x 4)");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/names", &m), OOC_ERR_FORMAT,
              "bad.h5:/names: type is a string; a matrix must be float or integer");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/recs", &m), OOC_ERR_FORMAT, "type is compound");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/empty", &m), OOC_ERR_FORMAT, "shape 0 x 0");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/thin", &m), OOC_ERR_FORMAT, "shape 5 x 0");
  EXPECT_FAIL(ctx, h5m_open(ctx, file, "/scalar", &m), OOC_ERR_FORMAT, "scalar");
  /* no 2-D numeric dataset here except the empty ones */
  CU_ASSERT_PTR_NULL(m);
  tu_ctx_done(ctx);
}

static void t_err_bad_rectangles(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("rect.h5"));
  double A[12] = {0}, B[12];
  write_output(ctx, file, "/r", A, 3, 4, H5M_F64, 2, "none");
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_open(ctx, file, "/r", &m));
  EXPECT_FAIL(ctx, h5m_read(m, 1, 0, 3, 1, B, 3), OOC_ERR_ARG, "outside the 3 x 4 matrix");
  EXPECT_FAIL(ctx, h5m_read(m, 0, -1, 1, 1, B, 1), OOC_ERR_ARG, "outside");
  EXPECT_FAIL(ctx, h5m_read(m, 0, 0, 3, 1, B, 2), OOC_ERR_ARG, "leading dimension");
  EXPECT_OK(ctx, h5m_read(m, 3, 4, 0, 0, NULL, 1)); /* empty rectangle at the corner */
  EXPECT_FAIL(ctx, h5m_write(m, 0, 0, 1, 1, A, 1), OOC_ERR_ARG, "not an open output");
  h5m_close(m);
  EXPECT_OK(ctx, h5m_create(ctx, tu_path("rect_t.h5"), "/r", 3, 4, H5M_F64, 2, NULL, 1, &m));
  EXPECT_FAIL(ctx, h5m_write_t(m, 0, 0, 2, 3, A, 2), OOC_ERR_ARG, "leading dimension");
  EXPECT_FAIL(ctx, h5m_write_t(m, 0, 2, 2, 3, A, 3), OOC_ERR_ARG, "outside the 3 x 4 matrix");
  EXPECT_OK(ctx, h5m_write_t(m, 0, 0, 2, 3, A, 3));
  h5m_close(m);
  EXPECT_FAIL(ctx, h5m_create(ctx, tu_path("x.h5"), "/x", 4, 4, H5M_F64, 2, "brotli", 0, &m),
              OOC_ERR_ARG, "unknown compression");
  EXPECT_FAIL(ctx, h5m_create(ctx, tu_path("x.h5"), "/x", 0, 4, H5M_F64, 2, NULL, 0, &m),
              OOC_ERR_ARG, "0 x 4");
  EXPECT_FAIL(ctx, h5m_create(ctx, tu_path("x.h5"), "", 4, 4, H5M_F64, 2, NULL, 0, &m),
              OOC_ERR_ARG, "dataset name");
  CU_ASSERT(!tu_file_exists(tu_path("x.h5")));
  tu_ctx_done(ctx);
}

static void t_err_output_exists(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char file[1024];
  snprintf(file, sizeof file, "%s", tu_path("exists.h5"));
  double A[4] = {1, 2, 3, 4}, B[4];
  write_output(ctx, file, "/e", A, 2, 2, H5M_F64, 2, "none");
  uint64_t before = tu_file_hash(file);
  h5mat_t *m = NULL;
  EXPECT_FAIL(ctx, h5m_create(ctx, file, "/e", 2, 2, H5M_F64, 2, NULL, 0, &m), OOC_ERR_EXISTS,
              "exists.h5:/e: output file exists");
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(tu_file_hash(file), before);
  CU_ASSERT_EQUAL(count_entries(tu_tmpdir(), "exists.h5.tmp"), 0);
  /* force replaces it, and only on commit */
  double C[4] = {5, 6, 7, 8};
  EXPECT_OK(ctx, h5m_create(ctx, file, "/e", 2, 2, H5M_F32, 2, "zstd", 1, &m));
  EXPECT_OK(ctx, h5m_write(m, 0, 0, 2, 2, C, 2));
  CU_ASSERT_EQUAL(tu_file_hash(file), before);
  EXPECT_OK(ctx, h5m_commit(m));
  h5m_close(m);
  EXPECT_OK(ctx, h5m_open(ctx, file, NULL, &m));
  CU_ASSERT_EQUAL(h5m_type(m), H5M_F32);
  EXPECT_OK(ctx, h5m_read(m, 0, 0, 2, 2, B, 2));
  CU_ASSERT(B[0] == 5 && B[1] == 6 && B[2] == 7 && B[3] == 8);
  h5m_close(m);
  tu_ctx_done(ctx);
}

static void t_err_unwritable_dir(void) {
  ooc_ctx_t *ctx = tu_ctx();
  h5mat_t *m = NULL;
  char dir[1024], file[1100];
  snprintf(dir, sizeof dir, "%s", tu_path("readonly"));
  CU_ASSERT_FATAL(mkdir(dir, 0555) == 0);
  snprintf(file, sizeof file, "%s/out.h5", dir);
  if (geteuid() != 0) {
    EXPECT_FAIL(ctx, h5m_create(ctx, file, "/x", 4, 4, H5M_F64, 2, NULL, 0, &m), OOC_ERR_IO,
                strerror(EACCES));
    EXPECT_FAIL(ctx, h5m_create(ctx, file, "/x", 4, 4, H5M_F64, 2, NULL, 0, &m), OOC_ERR_IO,
                "directory '");
  } else {
    /* root writes anywhere, so the check runs as 'nobody' in a child process */
    CU_ASSERT(chmod(tu_tmpdir(), 0755) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
      ooc_ctx_t *c = NULL;
      ooc_ctx_create(&c);
      h5mat_t *mm = NULL;
      ooc_status_t st = h5m_create(c, file, "/x", 4, 4, H5M_F64, 2, NULL, 0, &mm);
      const char *msg = ooc_ctx_error(c);
      int ok = st == OOC_ERR_IO && strstr(msg, strerror(EACCES)) && strstr(msg, "readonly'") &&
               !mm && !tu_file_exists(file);
      if (!ok || getenv("OOC_TEST_VERBOSE"))
        fprintf(stderr, "\n  as nobody: %s \"%s\"\n", ooc_status_str(st), msg);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    CU_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
    CU_ASSERT(chmod(tu_tmpdir(), 0700) == 0);
    CU_ASSERT(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77));
  }
  snprintf(file, sizeof file, "%s/no/such/dir/out.h5", tu_tmpdir());
  EXPECT_FAIL(ctx, h5m_create(ctx, file, "/x", 4, 4, H5M_F64, 2, NULL, 0, &m), OOC_ERR_IO,
              strerror(ENOENT));
  char plain[1024];
  snprintf(plain, sizeof plain, "%s", tu_path("plainfile"));
  FILE *fp = fopen(plain, "w");
  fclose(fp);
  snprintf(file, sizeof file, "%s/out.h5", plain);
  EXPECT_FAIL(ctx, h5m_create(ctx, file, "/x", 4, 4, H5M_F64, 2, NULL, 0, &m), OOC_ERR_IO,
              strerror(ENOTDIR));
  CU_ASSERT_PTR_NULL(m);
  tu_ctx_done(ctx);
}

static void t_tmp_removed_without_commit(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char dir[1024], file[1100];
  snprintf(dir, sizeof dir, "%s", tu_path("abandon"));
  CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
  snprintf(file, sizeof file, "%s/out.h5", dir);
  double *A = make_matrix(50, 50);
  h5mat_t *m = NULL;
  EXPECT_OK(ctx, h5m_create(ctx, file, "/x", 50, 50, H5M_F64, 16, "zstd", 0, &m));
  CU_ASSERT_EQUAL(count_entries(dir, "out.h5.tmp-"), 1);
  CU_ASSERT(!tu_file_exists(file));
  EXPECT_OK(ctx, h5m_write(m, 0, 0, 50, 30, A, 50));
  h5m_close(m);
  CU_ASSERT_EQUAL(count_entries(dir, "out.h5"), 0);
  CU_ASSERT_EQUAL(count_entries(dir, ".tmp"), 0);
  /* a committed output leaves only itself */
  EXPECT_OK(ctx, h5m_create(ctx, file, "/x", 50, 50, H5M_F64, 16, "zstd", 0, &m));
  EXPECT_OK(ctx, h5m_write(m, 0, 0, 50, 50, A, 50));
  EXPECT_OK(ctx, h5m_commit(m));
  h5m_close(m);
  CU_ASSERT_EQUAL(count_entries(dir, "out.h5"), 1);
  CU_ASSERT_EQUAL(count_entries(dir, ".tmp"), 0);
  free(A);
  tu_ctx_done(ctx);
}

/* A full disk, on a 256 KiB tmpfs: needs root with mount rights, so it skips itself elsewhere. */
static void t_disk_full(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", tu_path("smallfs"));
  CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
  if (geteuid() != 0 || mount("tmpfs", dir, "tmpfs", 0, "size=256k") != 0) {
    fprintf(stderr, "(skipped: cannot mount a small tmpfs) ");
    rmdir(dir);
    return;
  }
  ooc_ctx_t *ctx = tu_ctx();
  const int64_t n = 300; /* 720 KB of float64 */
  double *A = make_matrix(n, n);
  char file[1100];
  snprintf(file, sizeof file, "%s/out.h5", dir);
  const struct {
    int64_t chunk;
    const char *comp;
  } cases[] = {{64, "none"}, {64, "zstd"}, {0, "none"}, {300, "deflate"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    h5mat_t *m = NULL;
    EXPECT_OK(ctx, h5m_create(ctx, file, "/x", n, n, H5M_F64, cases[k].chunk, cases[k].comp, 0,
                              &m));
    ooc_status_t st = OOC_OK;
    for (int64_t c = 0; c < n && st == OOC_OK; c += 100)
      st = h5m_write(m, 0, c, n, 100, A + c * n, n);
    if (st == OOC_OK)
      st = h5m_commit(m);
    else /* a failed output is never published */
      CU_ASSERT_EQUAL(h5m_commit(m), OOC_ERR_NOSPACE);
    CU_ASSERT_EQUAL(st, OOC_ERR_NOSPACE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), strerror(ENOSPC)));
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), "out.h5:/x: "));
    if (st != OOC_ERR_NOSPACE || getenv("OOC_TEST_VERBOSE"))
      fprintf(stderr, "\n  case %zu: %s \"%s\"\n", k, ooc_status_str(st), ooc_ctx_error(ctx));
    ooc_clear_error(ctx);
    h5m_close(m);
    CU_ASSERT_EQUAL(count_entries(dir, "out.h5"), 0);
  }
  scratch_t *s = NULL;
  EXPECT_OK(ctx, scratch_open(ctx, dir, "full", 100000, 0, &s));
  ooc_status_t st = OOC_OK;
  for (int64_t id = 0; id < 10 && st == OOC_OK; id++) st = scratch_put(s, id, A, 100000);
  CU_ASSERT_EQUAL(st, OOC_ERR_NOSPACE);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_ctx_error(ctx), ".scratch"));
  ooc_clear_error(ctx);
  scratch_close(s);
  CU_ASSERT_EQUAL(count_entries(dir, "oocsolve"), 0);
  /* a disk already full: refused before HDF5 writes anything */
  char filler[1100];
  snprintf(filler, sizeof filler, "%s/filler", dir);
  FILE *fp = fopen(filler, "w");
  for (int k = 0; k < 64 && fwrite(A, 1, 8192, fp) == 8192; k++) fflush(fp);
  fclose(fp);
  h5mat_t *m = NULL;
  EXPECT_FAIL(ctx, h5m_create(ctx, file, "/x", n, n, H5M_F64, 64, "zstd", 0, &m), OOC_ERR_NOSPACE,
              strerror(ENOSPC));
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(count_entries(dir, "out.h5"), 0);
  unlink(filler);
  free(A);
  tu_ctx_done(ctx);
  CU_ASSERT(umount2(dir, MNT_DETACH) == 0);
  rmdir(dir);
}

/* ---- scratch store -------------------------------------------------------------------------- */

static void fill_random(unsigned char *p, size_t n, unsigned seed) {
  uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)x;
  }
}

static void scratch_roundtrip(int level) {
  ooc_ctx_t *ctx = tu_ctx();
  scratch_t *s = NULL;
  const size_t slot = 64 * 1024;
  EXPECT_OK(ctx, scratch_open(ctx, tu_tmpdir(), "rt", slot, level, &s));
  char path[1024];
  snprintf(path, sizeof path, "%s", scratch_path(s));
  CU_ASSERT(tu_file_exists(path));
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "/.oocsolve-rt-"));
  unsigned char *a = malloc(slot), *b = malloc(slot), *c = malloc(slot);
  fill_random(a, slot, 1);
  double *sm = (double *)c; /* smooth doubles: compressible */
  for (size_t i = 0; i < slot / 8; i++) sm[i] = (double)(i % 100) * 0.25;
  EXPECT_OK(ctx, scratch_put(s, 0, a, slot));
  EXPECT_OK(ctx, scratch_put(s, 3, c, slot));
  EXPECT_OK(ctx, scratch_put(s, 9, a, 1000)); /* shorter than a slot */
  memset(b, 0, slot);
  EXPECT_OK(ctx, scratch_get(s, 3, b, slot));
  CU_ASSERT_EQUAL(memcmp(b, c, slot), 0);
  EXPECT_OK(ctx, scratch_get(s, 0, b, slot));
  CU_ASSERT_EQUAL(memcmp(b, a, slot), 0);
  EXPECT_OK(ctx, scratch_get(s, 9, b, 1000));
  CU_ASSERT_EQUAL(memcmp(b, a, 1000), 0);
  /* overwrite: the later put wins */
  EXPECT_OK(ctx, scratch_put(s, 0, c, slot));
  EXPECT_OK(ctx, scratch_get(s, 0, b, slot));
  CU_ASSERT_EQUAL(memcmp(b, c, slot), 0);
  CU_ASSERT_EQUAL(scratch_bytes_written(s), (int64_t)(3 * slot + 1000));
  CU_ASSERT_EQUAL(scratch_bytes_read(s), (int64_t)(3 * slot + 1000));
  if (level > 0) { /* two of four payloads compress, so the store is smaller than raw */
    struct stat sb;
    CU_ASSERT(stat(path, &sb) == 0 && (int64_t)sb.st_blocks * 512 < (int64_t)(3 * slot));
  }
  EXPECT_FAIL(ctx, scratch_get(s, 5, b, slot), OOC_ERR_INTERNAL, "tile 5 was never written");
  EXPECT_FAIL(ctx, scratch_get(s, 100, b, slot), OOC_ERR_INTERNAL, "never written");
  EXPECT_FAIL(ctx, scratch_get(s, 9, b, 999), OOC_ERR_CORRUPT, "length");
  EXPECT_FAIL(ctx, scratch_put(s, 1, a, slot + 1), OOC_ERR_ARG, "slot");
  EXPECT_FAIL(ctx, scratch_put(s, -1, a, 8), OOC_ERR_ARG, "out of range");
  scratch_close(s);
  CU_ASSERT(!tu_file_exists(path));
  free(a);
  free(b);
  free(c);
  tu_ctx_done(ctx);
}

static void t_scratch_raw(void) { scratch_roundtrip(0); }
static void t_scratch_zstd(void) { scratch_roundtrip(3); }

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  fseek(fp, 0, SEEK_END);
  *len = (size_t)ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *buf = malloc(*len + 1);
  CU_ASSERT(fread(buf, 1, *len, fp) == *len);
  fclose(fp);
  return buf;
}

static unsigned char *find_bytes(unsigned char *hay, size_t len, const void *needle, size_t n) {
  for (size_t i = 0; i + n <= len; i++)
    if (!memcmp(hay + i, needle, n)) return hay + i;
  return NULL;
}

static void flip_byte(const char *path, int64_t off) {
  int fd = open(path, O_RDWR);
  unsigned char c = 0;
  CU_ASSERT(pread(fd, &c, 1, (off_t)off) == 1);
  c ^= 0x5a;
  CU_ASSERT(pwrite(fd, &c, 1, (off_t)off) == 1);
  close(fd);
}

/* Puts and gets of distinct ids from the pool's threads at once (tstore.h: the tile cache's
 * evictions and reads on its copy threads), raw and compressed, plain and journaled (two banks):
 * every tile back exactly, into a strided destination (scratch_get_cols: a tile inside a larger
 * column-major buffer, the gaps untouched) and a contiguous one, and the counters exact. Then
 * the strided read through an ops table whose pread moves at most 1000 bytes a call (the preadv
 * seam's fallback), and a damaged strided payload is CORRUPT. */
enum { ST_TILES = 48, ST_R = 300, ST_C = 40, ST_LD = 307 };
typedef struct {
  scratch_t *s;
  double *src, *dst;
  int strided;
  ooc_status_t st[ST_TILES];
} st_job_t;
static void st_put(void *arg, int64_t k, int worker) {
  (void)worker;
  st_job_t *j = arg;
  j->st[k] = scratch_put(j->s, 3 * k, j->src + k * ST_R * ST_C, ST_R * ST_C * sizeof(double));
}
static void st_get(void *arg, int64_t k, int worker) {
  (void)worker;
  st_job_t *j = arg;
  j->st[k] = j->strided ? scratch_get_cols(j->s, 3 * k, j->dst + k * ST_LD * ST_C,
                                           ST_R * sizeof(double), ST_C, ST_LD * sizeof(double))
                        : scratch_get(j->s, 3 * k, j->dst + k * ST_R * ST_C,
                                      ST_R * ST_C * sizeof(double));
}
static int st_bad(const st_job_t *j) {
  int bad = 0;
  for (int64_t k = 0; k < ST_TILES; k++) {
    bad += j->st[k] != OOC_OK;
    for (int64_t c = 0; c < ST_C; c++)
      for (int64_t r = 0; r < (j->strided ? ST_LD : ST_R); r++) {
        double got = j->dst[k * (j->strided ? ST_LD : ST_R) * ST_C +
                            c * (j->strided ? ST_LD : ST_R) + r];
        double want = r < ST_R ? j->src[k * ST_R * ST_C + c * ST_R + r] : -1.0;
        bad += got != want;
      }
  }
  return bad;
}
static ssize_t short_pread(int fd, void *buf, size_t len, off_t off) {
  return pread(fd, buf, len < 1000 ? len : 1000, off);
}

static void t_scratch_threads(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const size_t tile = ST_R * ST_C * sizeof(double);
  double *src = malloc(ST_TILES * tile), *dst = malloc(ST_TILES * ST_LD * ST_C * sizeof(double));
  for (int64_t q = 0; q < ST_TILES * ST_R * ST_C; q++) /* smooth (compressible) in half the tiles */
    src[q] = (q / (ST_R * ST_C)) % 2 ? (double)(q % 17) : (double)((q * 2654435761u) % 1000003);
  for (int mode = 0; mode < 4; mode++) {
    int level = mode % 2 ? 3 : 0, journaled = mode >= 2;
    scratch_t *s = NULL;
    if (journaled)
      EXPECT_OK(ctx, scratch_open_at(ctx, tu_path("threads.scratch"), tile, level, SCRATCH_ANY, &s));
    else
      EXPECT_OK(ctx, scratch_open(ctx, tu_tmpdir(), "threads", tile, level, &s));
    st_job_t j = {.s = s, .src = src, .dst = dst};
    ooc_parallel(8, ST_TILES, st_put, &j);
    int bad = 0;
    for (int64_t k = 0; k < ST_TILES; k++) bad += j.st[k] != OOC_OK;
    CU_ASSERT_EQUAL(bad, 0);
    for (j.strided = 0; j.strided < 2; j.strided++) {
      for (int64_t q = 0; q < ST_TILES * ST_LD * ST_C; q++) dst[q] = -1.0;
      ooc_parallel(8, ST_TILES, st_get, &j);
      CU_ASSERT_EQUAL(st_bad(&j), 0);
    }
    CU_ASSERT_EQUAL(scratch_bytes_written(s), (int64_t)(ST_TILES * tile));
    CU_ASSERT_EQUAL(scratch_bytes_read(s), (int64_t)(2 * ST_TILES * tile));
    if (journaled) { /* the versions the threads recorded: each tile's own checksum */
      uint8_t bank;
      uint64_t sum;
      for (int64_t k = 0; k < ST_TILES; k++)
        bad += !scratch_version(s, 3 * k, &bank, &sum) || bank != 0 ||
               sum != ooc_xxh3(src + k * ST_R * ST_C, tile);
      CU_ASSERT_EQUAL(bad, 0);
    }
    /* strided, a pread of at most 1000 bytes at a time: the table's fallback fills each column */
    fio_ops_t ops = *fio_posix_ops();
    ops.pread = short_pread;
    fio_set_ops(ctx, &ops);
    for (int64_t q = 0; q < ST_TILES * ST_LD * ST_C; q++) dst[q] = -1.0;
    j.strided = 1;
    ooc_parallel(1, ST_TILES, st_get, &j);
    CU_ASSERT_EQUAL(st_bad(&j), 0);
    fio_set_ops(ctx, NULL);
    if (!journaled && !level) { /* a damaged raw payload read strided: CORRUPT, as contiguous */
      size_t len = 0;
      unsigned char *file = slurp(scratch_path(s), &len);
      unsigned char *hit = find_bytes(file, len, src + 4 * ST_R * ST_C, 64); /* (not smooth) */
      CU_ASSERT_FATAL(hit != NULL);
      flip_byte(scratch_path(s), (int64_t)(hit - file) + 8 * ST_R + 3); /* in its second column */
      EXPECT_FAIL(ctx, scratch_get_cols(s, 12, dst, ST_R * sizeof(double), ST_C,
                                        ST_LD * sizeof(double)), OOC_ERR_CORRUPT, "checksum");
      EXPECT_FAIL(ctx, scratch_get_cols(s, 12, dst, ST_R * sizeof(double), ST_C, 8),
                  OOC_ERR_ARG, "overlap");
      free(file);
    }
    scratch_close(s);
  }
  free(src);
  free(dst);
  tu_ctx_done(ctx);
}

static void t_scratch_corruption(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const size_t slot = 8192;
  unsigned char a[8192], b[8192];
  fill_random(a, slot, 7);
  for (int level = 0; level <= 1; level++) {
    scratch_t *s = NULL;
    EXPECT_OK(ctx, scratch_open(ctx, tu_tmpdir(), "bad", slot, level, &s));
    EXPECT_OK(ctx, scratch_put(s, 2, a, slot));
    EXPECT_OK(ctx, scratch_put(s, 7, a, slot));
    /* raw payloads are found by content: flip one byte inside tile 7's copy (the second one) */
    size_t len = 0;
    unsigned char *file = slurp(scratch_path(s), &len);
    unsigned char *hit = find_bytes(file, len, a, 64);
    CU_ASSERT_FATAL(hit != NULL);
    unsigned char *hit2 = find_bytes(hit + 1, len - (size_t)(hit + 1 - file), a, 64);
    CU_ASSERT_FATAL(hit2 != NULL);
    flip_byte(scratch_path(s), (int64_t)(hit2 - file) + 100);
    EXPECT_FAIL(ctx, scratch_get(s, 7, b, slot), OOC_ERR_CORRUPT, "tile 7");
    EXPECT_FAIL(ctx, scratch_get(s, 7, b, slot), OOC_ERR_CORRUPT, "checksum");
    EXPECT_FAIL(ctx, scratch_get(s, 7, b, slot), OOC_ERR_CORRUPT, scratch_path(s));
    EXPECT_OK(ctx, scratch_get(s, 2, b, slot));
    /* header damage: the first header's magic */
    unsigned char *mag = find_bytes(file, len, "OOCSCR01", 8);
    CU_ASSERT_FATAL(mag != NULL);
    flip_byte(scratch_path(s), (int64_t)(mag - file) + 2);
    EXPECT_FAIL(ctx, scratch_get(s, 2, b, slot), OOC_ERR_CORRUPT, "tile 2");
    /* a good put repairs the slot */
    EXPECT_OK(ctx, scratch_put(s, 2, a, slot));
    EXPECT_OK(ctx, scratch_get(s, 2, b, slot));
    free(file);
    scratch_close(s);
  }
  /* compressed payload: damage its last byte (the end of the file) */
  double sm[1024];
  for (int i = 0; i < 1024; i++) sm[i] = (double)(i % 10);
  scratch_t *s = NULL;
  EXPECT_OK(ctx, scratch_open(ctx, tu_tmpdir(), "badz", sizeof sm, 3, &s));
  EXPECT_OK(ctx, scratch_put(s, 4, sm, sizeof sm));
  int64_t end = file_size(scratch_path(s));
  CU_ASSERT(end > 0);
  flip_byte(scratch_path(s), end - 3);
  EXPECT_FAIL(ctx, scratch_get(s, 4, sm, sizeof sm), OOC_ERR_CORRUPT, "tile 4");
  scratch_close(s);
  tu_ctx_done(ctx);
}

/* scratch_file_of (scratch.h): every tile id of stores of r x c tiles, and of ids read with a
 * wrong column count (the mapping stays a bijection for any tcols: RBT's padded stores), gets a
 * (file, slot) pair no other id has; with the true count any 8 consecutive tiles of a tile row
 * or a tile column are in 8 different files (id % 8 put a whole column of a 16-column store into
 * one file), and each file's slots are dense: below r x cdiv(c, 8). */
static void t_scratch_files(void) {
  const int64_t shapes[][2] = {{16, 16}, {10, 10}, {7, 13}, {1, 9}, {33, 8}, {5, 1}};
  int bad = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t r = shapes[s][0], c = shapes[s][1], per = (c + 7) / 8;
    for (int64_t tc = c; tc <= c + 3; tc += 3) { /* the true count, and a wrong one */
      char *seen = calloc((size_t)(8 * r * (tc + 3) + 8), 1);
      for (int64_t id = 0; id < r * c; id++) {
        int64_t loc = -1;
        int f = scratch_file_of(id, tc, 8, &loc);
        int64_t cap = (id / tc + 1) * ((tc + 7) / 8);
        bad += f < 0 || f >= 8 || loc < 0 || loc >= cap || seen[8 * loc + f]++;
        if (tc == c) bad += loc >= r * per;
      }
      free(seen);
    }
    for (int64_t ti = 0; ti < r; ti++) /* 8 tiles in a row, and in a column: 8 files */
      for (int64_t tj = 0; tj < c; tj++) {
        int rowf = 0, colf = 0;
        int64_t loc;
        for (int64_t k = 0; k < 8 && tj + k < c; k++)
          rowf |= 1 << scratch_file_of(ti * c + tj + k, c, 8, &loc);
        for (int64_t k = 0; k < 8 && ti + k < r; k++)
          colf |= 1 << scratch_file_of((ti + k) * c + tj, c, 8, &loc);
        bad += __builtin_popcount((unsigned)rowf) != (int)ooc_min64(8, c - tj);
        bad += __builtin_popcount((unsigned)colf) != (int)ooc_min64(8, r - ti);
      }
  }
  CU_ASSERT_EQUAL(bad, 0);
  int64_t loc;
  CU_ASSERT_EQUAL(scratch_file_of(37, 16, 1, &loc), 0); /* one file: the id itself */
  CU_ASSERT_EQUAL(loc, 37);
}

static void t_scratch_sparse_and_errors(void) {
  ooc_ctx_t *ctx = tu_ctx();
  scratch_t *s = NULL;
  const size_t slot = 1 << 20;
  EXPECT_OK(ctx, scratch_open(ctx, tu_tmpdir(), "sparse", slot, 0, &s));
  unsigned char small[4096];
  fill_random(small, sizeof small, 3);
  EXPECT_OK(ctx, scratch_put(s, 1000, small, sizeof small));
  struct stat sb;
  CU_ASSERT(stat(scratch_path(s), &sb) == 0);
  CU_ASSERT(sb.st_size > 1000 * (off_t)slot);
  CU_ASSERT((int64_t)sb.st_blocks * 512 < 1 << 20); /* holes take no space */
  unsigned char back[4096];
  EXPECT_OK(ctx, scratch_get(s, 1000, back, sizeof back));
  CU_ASSERT_EQUAL(memcmp(back, small, sizeof small), 0);
  scratch_close(s);
  scratch_close(NULL);

  char dir[1024];
  snprintf(dir, sizeof dir, "%s/does/not/exist", tu_tmpdir());
  EXPECT_FAIL(ctx, scratch_open(ctx, dir, "x", slot, 0, &s), OOC_ERR_IO, "does/not/exist");
  EXPECT_FAIL(ctx, scratch_open(ctx, dir, "x", slot, 0, &s), OOC_ERR_IO, strerror(ENOENT));
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(count_entries(tu_tmpdir(), ".scratch"), 0);
  tu_ctx_done(ctx);
}


/* ---- journaled scratch and the journal (resumable runs) -------------------------------------- */

/* Two banks: a put after a commit never overwrites the committed version, so after a "crash"
 * (close, keeping the file) a reopen restored to the committed version reads it back, and a
 * restore naming another version (wrong checksum) is refused as corrupt. */
/* Count the files in dir whose names start with prefix. */
static int count_prefixed(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += !strncmp(e->d_name, prefix, strlen(prefix));
  if (d) closedir(d);
  return n;
}

/* A store out of a journal over several files (scratch_open_n): its name and 2 siblings, tiles
 * read back from them; a killed run's store of 3 files (a child that exits without closing) is
 * removed whole by scratch_remove_stale, the live one is not; close removes the live one's. */
static void t_scratch_files_temp(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/spread", tu_tmpdir());
  mkdir(dir, 0700);
  enum { SLOT = 4096 };
  unsigned char v[SLOT], got[SLOT];
  fill_random(v, SLOT, 5);
  scratch_t *s = NULL;
  EXPECT_OK(ctx, scratch_open_n(ctx, dir, "live", 3, 4, SLOT, 0, &s));
  char sib[1200];
  int have = 0;
  for (int f = 0; f < 3; f++) have += scratch_sibling(scratch_path(s), f, sib, sizeof sib) &&
                                      tu_file_exists(sib);
  CU_ASSERT_EQUAL(have, 3);
  for (int i = 0; i < 12; i++) EXPECT_OK(ctx, scratch_put(s, i, v, SLOT));
  for (int i = 0; i < 12; i++) {
    memset(got, 0, SLOT);
    EXPECT_OK(ctx, scratch_get(s, i, got, SLOT));
    CU_ASSERT(!memcmp(got, v, SLOT));
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) { /* the killed run: its store stays, its locks go with it */
    ooc_ctx_t *c2 = NULL;
    scratch_t *k = NULL;
    if (ooc_ctx_create(&c2) == OOC_OK) (void)scratch_open_n(c2, dir, "dead", 3, 4, SLOT, 0, &k);
    _exit(0);
  }
  int wst = 0;
  waitpid(pid, &wst, 0);
  CU_ASSERT_EQUAL(count_prefixed(dir, ".oocsolve-dead-"), 3);
  CU_ASSERT_EQUAL(scratch_remove_stale(ctx, dir), 3);
  CU_ASSERT_EQUAL(count_prefixed(dir, ".oocsolve-dead-"), 0);
  CU_ASSERT_EQUAL(count_prefixed(dir, ".oocsolve-live-"), 3);
  scratch_close(s);
  CU_ASSERT_EQUAL(count_prefixed(dir, ".oocsolve-live-"), 0);
  tu_ctx_done(ctx);
}

/* A journaled store over several files (scratch_open_files): 3 files for 5 tile columns, every
 * tile of a 4 x 5 store put (two versions, a commit between), the files named path, path.1,
 * path.2 and holding the tiles scratch_file_of says; a crash (kept), a reopen that restores and
 * reads the committed versions from the right files; a reopen with a sibling gone names it; a
 * store of one file (an older journal's) reopened for 8 reads as one; a create that meets a
 * sibling left behind fails and removes only what it made; close removes every file. */
static void t_scratch_files_journaled(void) {
  ooc_ctx_t *ctx = tu_ctx();
  enum { SLOT = 4096, R = 4, C = 5, NT = R * C };
  unsigned char v[2][NT][SLOT], got[SLOT];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < NT; i++) fill_random(v[k][i], SLOT, (unsigned)(100 * k + i + 1));
  char path[1100], sib[1200];
  snprintf(path, sizeof path, "%s", tu_path("files.scratch"));
  for (int f = 0; f < 8; f++)
    if (scratch_sibling(path, f, sib, sizeof sib)) unlink(sib);
  scratch_t *s = NULL;
  EXPECT_OK(ctx, scratch_open_files(ctx, path, 3, C, SLOT, 0, SCRATCH_CREATE, &s));
  uint8_t bank[NT];
  uint64_t sum[NT];
  for (int i = 0; i < NT; i++) EXPECT_OK(ctx, scratch_put(s, i, v[0][i], SLOT));
  for (int i = 0; i < NT; i++) CU_ASSERT(scratch_version(s, i, &bank[i], &sum[i]));
  EXPECT_OK(ctx, scratch_sync(s));
  scratch_commit(s);
  for (int i = 0; i < NT; i++) EXPECT_OK(ctx, scratch_put(s, i, v[1][i], SLOT));
  for (int i = 0; i < NT; i++) {
    EXPECT_OK(ctx, scratch_get(s, i, got, SLOT));
    CU_ASSERT(!memcmp(got, v[1][i], SLOT));
  }
  scratch_keep(s, 1);
  scratch_close(s); /* the crash */
  /* each file holds its tiles' headers, at the slots scratch_file_of gives (bank of v[0]): a
   * slot is the 64-byte header + 4096 bytes rounded up to 4 KiB (8192), two banks per tile, and
   * the header's id follows its 8-byte magic (scratch.c's layout) */
  int where = 0;
  for (int i = 0; i < NT; i++) {
    int64_t loc;
    int f = scratch_file_of(i, C, 3, &loc);
    CU_ASSERT_FATAL(scratch_sibling(path, f, sib, sizeof sib));
    FILE *fp = fopen(sib, "rb");
    int64_t id = -1;
    if (fp && fseek(fp, (long)((loc * 2 + bank[i]) * 8192 + 8), SEEK_SET) == 0 &&
        fread(&id, sizeof id, 1, fp) == 1)
      where += id == i;
    if (fp) fclose(fp);
  }
  CU_ASSERT_EQUAL(where, NT);
  EXPECT_OK(ctx, scratch_open_files(ctx, path, 3, C, SLOT, 0, SCRATCH_REOPEN, &s));
  for (int i = 0; i < NT; i++) EXPECT_OK(ctx, scratch_restore(s, i, bank[i], sum[i]));
  for (int i = 0; i < NT; i++) {
    EXPECT_OK(ctx, scratch_get(s, i, got, SLOT));
    CU_ASSERT(!memcmp(got, v[0][i], SLOT)); /* the committed versions */
  }
  scratch_keep(s, 1);
  scratch_close(s);
  CU_ASSERT_FATAL(scratch_sibling(path, 2, sib, sizeof sib));
  CU_ASSERT(unlink(sib) == 0);
  EXPECT_FAIL(ctx, scratch_open_files(ctx, path, 3, C, SLOT, 0, SCRATCH_REOPEN, &s), OOC_ERR_IO,
              sib);
  CU_ASSERT(tu_file_exists(path)); /* a failed reopen removes nothing */
  /* one file, as an older journal's store: reopened for 8 files, it reads as one */
  for (int f = 0; f < 3; f++)
    if (scratch_sibling(path, f, sib, sizeof sib)) unlink(sib);
  EXPECT_OK(ctx, scratch_open_at(ctx, path, SLOT, 0, SCRATCH_CREATE, &s));
  EXPECT_OK(ctx, scratch_put(s, 7, v[0][7], SLOT));
  CU_ASSERT(scratch_version(s, 7, &bank[7], &sum[7]));
  scratch_keep(s, 1);
  scratch_close(s);
  EXPECT_OK(ctx, scratch_open_files(ctx, path, 8, C, SLOT, 0, SCRATCH_REOPEN, &s));
  EXPECT_OK(ctx, scratch_restore(s, 7, bank[7], sum[7]));
  EXPECT_OK(ctx, scratch_get(s, 7, got, SLOT));
  CU_ASSERT(!memcmp(got, v[0][7], SLOT));
  scratch_close(s); /* not kept: removed */
  CU_ASSERT(!tu_file_exists(path));
  /* a create meeting a sibling left behind: fails naming it, removes only what it made */
  CU_ASSERT_FATAL(scratch_sibling(path, 2, sib, sizeof sib));
  FILE *fp = fopen(sib, "wb");
  if (fp) fclose(fp);
  EXPECT_FAIL(ctx, scratch_open_files(ctx, path, 3, C, SLOT, 0, SCRATCH_CREATE, &s),
              OOC_ERR_EXISTS, sib);
  CU_ASSERT(!tu_file_exists(path));
  CU_ASSERT(tu_file_exists(sib));
  unlink(sib);
  /* close removes every file */
  EXPECT_OK(ctx, scratch_open_files(ctx, path, 3, C, SLOT, 0, SCRATCH_CREATE, &s));
  EXPECT_OK(ctx, scratch_put(s, 19, v[0][19], SLOT));
  scratch_close(s);
  int left = 0;
  for (int f = 0; f < 3; f++) left += scratch_sibling(path, f, sib, sizeof sib) && tu_file_exists(sib);
  CU_ASSERT_EQUAL(left, 0);
  tu_ctx_done(ctx);
}

static void t_scratch_banks(void) {
  ooc_ctx_t *ctx = tu_ctx();
  const size_t slot = 4096;
  unsigned char v1[4096], v2[4096], got[4096];
  fill_random(v1, slot, 11);
  fill_random(v2, slot, 12);
  char path[1100];
  snprintf(path, sizeof path, "%s", tu_path("banks.scratch"));
  for (int level = 0; level <= 3; level += 3) {
    unlink(path);
    scratch_t *s = NULL;
    EXPECT_OK(ctx, scratch_open_at(ctx, path, slot, level, SCRATCH_CREATE, &s));
    EXPECT_OK(ctx, scratch_put(s, 5, v1, slot));
    uint8_t bank1 = 9, bank2 = 9;
    uint64_t sum1 = 0, sum2 = 0;
    CU_ASSERT(scratch_version(s, 5, &bank1, &sum1));
    CU_ASSERT(!scratch_version(s, 6, &bank2, &sum2));
    EXPECT_OK(ctx, scratch_sync(s));
    scratch_commit(s);
    EXPECT_OK(ctx, scratch_put(s, 5, v2, slot)); /* after the commit: the other bank */
    CU_ASSERT(scratch_version(s, 5, &bank2, &sum2));
    CU_ASSERT(bank2 != bank1 && sum2 != sum1);
    EXPECT_OK(ctx, scratch_get(s, 5, got, slot));
    CU_ASSERT(!memcmp(got, v2, slot));
    EXPECT_OK(ctx, scratch_put(s, 5, v1, slot)); /* again the uncommitted bank */
    uint8_t b3;
    uint64_t s3;
    CU_ASSERT(scratch_version(s, 5, &b3, &s3) && b3 == bank2);
    EXPECT_OK(ctx, scratch_put(s, 5, v2, slot));
    scratch_keep(s, 1);
    scratch_close(s); /* the crash */
    CU_ASSERT(tu_file_exists(path));
    EXPECT_FAIL(ctx, scratch_open_at(ctx, path, slot, level, SCRATCH_CREATE, &s), OOC_ERR_EXISTS,
                path);
    EXPECT_OK(ctx, scratch_open_at(ctx, path, slot, level, SCRATCH_REOPEN, &s));
    EXPECT_OK(ctx, scratch_restore(s, 5, bank1, sum1));
    EXPECT_OK(ctx, scratch_get(s, 5, got, slot));
    CU_ASSERT(!memcmp(got, v1, slot)); /* the committed version, intact */
    EXPECT_OK(ctx, scratch_restore(s, 5, bank2, sum1)); /* the journal says v1, bank2 holds v2 */
    EXPECT_FAIL(ctx, scratch_get(s, 5, got, slot), OOC_ERR_CORRUPT, "another version");
    EXPECT_FAIL(ctx, scratch_get(s, 7, got, slot), OOC_ERR_INTERNAL, "never written");
    scratch_close(s); /* not kept: removed */
    CU_ASSERT(!tu_file_exists(path));
    EXPECT_FAIL(ctx, scratch_open_at(ctx, path, slot, level, SCRATCH_REOPEN, &s), OOC_ERR_IO,
                "missing");
  }
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  tu_ctx_done(ctx);
}

static journal_t *make_journal(ooc_ctx_t *ctx, int64_t n, int64_t nt) {
  journal_t *j = ooc_calloc(ctx, 1, sizeof *j);
  snprintf(j->id.version, sizeof j->id.version, "test");
  snprintf(j->id.output, sizeof j->id.output, "out.h5:/X");
  j->id.n = n;
  j->steps_done = 2;
  j->nsteps = 5;
  j->n = n;
  j->ipiv = ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  j->colnorm = ooc_malloc(ctx, (size_t)n * sizeof(double));
  j->rowsum = ooc_malloc(ctx, (size_t)n * sizeof(double)); /* an LU run's state (format 3) */
  for (int64_t i = 0; i < n; i++) {
    j->ipiv[i] = (i * 7) % n;
    j->colnorm[i] = val(i, 3);
    j->rowsum[i] = val(i, 5);
  }
  j->logdet = -12.5;
  j->sign = -1;
  j->run_stripe = 64;
  j->amax = 0.75;
  j->umax = 3.25;
  j->tiny = 4;
  j->min_pivot = 1e-9;
  j->nstores = 2;
  for (int k = 0; k < 2; k++) {
    j->ntiles[k] = nt + k;
    j->tiles[k] = ooc_calloc(ctx, (size_t)(nt + k), sizeof(jr_tile_t));
    for (int64_t i = 0; i < nt + k; i++)
      j->tiles[k][i] = (jr_tile_t){(uint64_t)i * 0x9E3779B97F4A7C15ULL, (uint8_t)(i % 2),
                                   (uint8_t)(i % 3 == 0), {0}};
    snprintf(j->scratch[k], sizeof j->scratch[k], "/x/.oocsolve-out.h5.%c.scratch", "AB"[k]);
  }
  return j;
}

/* Round trip; every single-byte flip and every truncation is found; the write is atomic. */
static void t_journal(void) {
  ooc_ctx_t *ctx = tu_ctx();
  char path[1100], tmp[1200];
  snprintf(path, sizeof path, "%s", tu_path("j.journal"));
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  journal_t *w = make_journal(ctx, 37, 9), *r = NULL;
  EXPECT_OK(ctx, journal_write(ctx, path, w));
  CU_ASSERT(!tu_file_exists(tmp));
  EXPECT_OK(ctx, journal_read(ctx, path, &r));
  CU_ASSERT_FATAL(r != NULL);
  CU_ASSERT(!memcmp(&r->id, &w->id, sizeof w->id));
  CU_ASSERT(r->steps_done == 2 && r->nsteps == 5 && r->n == 37 && r->nstores == 2);
  CU_ASSERT(!memcmp(r->ipiv, w->ipiv, 37 * sizeof(int64_t)));
  CU_ASSERT(!memcmp(r->colnorm, w->colnorm, 37 * sizeof(double)));
  CU_ASSERT(r->rowsum && !memcmp(r->rowsum, w->rowsum, 37 * sizeof(double)));
  CU_ASSERT(r->logdet == w->logdet && r->sign == -1 && r->run_stripe == 64 &&
            r->amax == w->amax && r->umax == w->umax && r->tiny == 4 &&
            r->min_pivot == w->min_pivot);
  for (int k = 0; k < 2; k++) {
    CU_ASSERT(r->ntiles[k] == w->ntiles[k]);
    CU_ASSERT(!memcmp(r->tiles[k], w->tiles[k], (size_t)w->ntiles[k] * sizeof(jr_tile_t)));
    CU_ASSERT(!strcmp(r->scratch[k], w->scratch[k]));
  }
  journal_free(ctx, r);
  /* damage: flip bytes all over the file, and truncate it */
  size_t len = 0;
  unsigned char *good = slurp(path, &len);
  int found = 0, tried = 0;
  for (size_t off = 0; off < len; off += 97) {
    flip_byte(path, (int64_t)off);
    ooc_status_t st = journal_read(ctx, path, &r);
    tried++;
    found += st == OOC_ERR_CORRUPT && strstr(ooc_ctx_error(ctx), path) != NULL;
    if (st == OOC_OK) journal_free(ctx, r);
    ooc_clear_error(ctx);
    flip_byte(path, (int64_t)off);
  }
  CU_ASSERT_EQUAL(found, tried);
  fprintf(stderr, "[%d byte flips of a %zu-byte journal, %d found] ", tried, len, found);
  CU_ASSERT(truncate(path, (off_t)len - 1) == 0);
  EXPECT_FAIL(ctx, journal_read(ctx, path, &r), OOC_ERR_CORRUPT, "damaged");
  /* journals of formats 2 (before LU's state) and 3 (before the inputs' hash by blocks) are
   * refused as another version's, not misread */
  int fd = -1;
  for (uint32_t old = 2; old <= 3; old++) {
    fd = open(path, O_WRONLY | O_TRUNC);
    CU_ASSERT(write(fd, good, len) == (ssize_t)len);
    CU_ASSERT(pwrite(fd, &old, sizeof old, 8) == (ssize_t)sizeof old); /* after the magic */
    close(fd);
    EXPECT_FAIL(ctx, journal_read(ctx, path, &r), OOC_ERR_CORRUPT, "another version");
  }
  /* a journal without row sums (gj, chol) reads back without them */
  double *rs = w->rowsum;
  w->rowsum = NULL;
  EXPECT_OK(ctx, journal_write(ctx, path, w));
  EXPECT_OK(ctx, journal_read(ctx, path, &r));
  CU_ASSERT(r && !r->rowsum && !memcmp(r->colnorm, w->colnorm, 37 * sizeof(double)));
  journal_free(ctx, r);
  w->rowsum = rs;
  /* a failed write (disk full at the 3rd write) leaves the previous journal, no temporary */
  fd = open(path, O_WRONLY | O_TRUNC);
  CU_ASSERT(write(fd, good, len) == (ssize_t)len);
  close(fd);
  w->steps_done = 3;
  int committed = 0;
  for (int n = 1; n <= 40 && !committed; n++) {
    ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, n, 0, ENOSPC);
    ooc_status_t st = journal_write(ctx, path, w);
    ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, 0, 0, 0);
    CU_ASSERT(!tu_file_exists(tmp));
    EXPECT_OK(ctx, journal_read(ctx, path, &r));
    /* the old journal or the new one, whole: the new one only once renamed (a failure of the
     * directory sync that follows the rename) */
    if (r) CU_ASSERT(r->steps_done == 3 || (st != OOC_OK && r->steps_done == 2));
    if (r && st != OOC_OK && r->steps_done == 3)
      CU_ASSERT(strstr(ooc_ctx_error(ctx), "directory") != NULL);
    if (st == OOC_OK) {
      CU_ASSERT(n > 10); /* open, 8 writes, fsync, rename: each one failed first */
      journal_free(ctx, r);
      committed = 1;
      break;
    }
    CU_ASSERT_EQUAL(st, OOC_ERR_NOSPACE);
    ooc_clear_error(ctx);
    journal_free(ctx, r);
  }
  CU_ASSERT(committed);
  free(good);
  EXPECT_FAIL(ctx, journal_read(ctx, tu_path("nojournal"), &r), OOC_ERR_IO, "nojournal");
  journal_free(ctx, w);
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  tu_ctx_done(ctx);
}

int main(void) {
  static const tu_test_t tests[] = {
      {"split_spec", t_split_spec},
      {"parse_compress", t_parse_compress},
      {"transposing copies (cio_unpack, cio_unpack_t, cio_pack)", t_transposing_copies},
      {"roundtrip_f64_zstd", t_roundtrip_f64_zstd},
      {"roundtrip_f32_zstd", t_roundtrip_f32_zstd},
      {"roundtrip_f64_deflate", t_roundtrip_f64_deflate},
      {"roundtrip_f32_deflate", t_roundtrip_f32_deflate},
      {"roundtrip_f64_chunked", t_roundtrip_f64_chunked},
      {"roundtrip_f64_contiguous", t_roundtrip_f64_contig},
      {"roundtrip_f32_contiguous", t_roundtrip_f32_contig},
      {"large_rectangles", t_large_rectangles},
      {"attributes", t_attributes},
      {"integer_dataset", t_integer_dataset},
      {"bigendian_float", t_bigendian_float},
      {"half_float", t_half_float},
      {"missing_filter", t_missing_filter},
      {"auto_detect", t_auto_detect},
      {"raw_zstd_filter", t_raw_zstd_filter},
      {"zstd_stream_frames", t_zstd_stream_frames},
      {"zstd_output", t_zstd_output},
      {"corrupt_chunk", t_corrupt_chunk},
      {"direct_io (and the writeback hint beside a read)", t_direct_io},
      {"direct_fallback", t_direct_fallback},
      {"direct_faults", t_direct_faults},
      {"err_missing_file", t_err_missing_file},
      {"err_not_hdf5", t_err_not_hdf5},
      {"err_truncated", t_err_truncated},
      {"err_bad_datasets", t_err_bad_datasets},
      {"err_bad_rectangles", t_err_bad_rectangles},
      {"err_output_exists", t_err_output_exists},
      {"err_unwritable_dir", t_err_unwritable_dir},
      {"tmp_removed_without_commit", t_tmp_removed_without_commit},
      {"disk_full", t_disk_full},
      {"scratch_raw", t_scratch_raw},
      {"scratch_zstd", t_scratch_zstd},
      {"scratch_corruption", t_scratch_corruption},
      {"scratch puts and gets on several threads, into strided buffers", t_scratch_threads},
      {"a store's scratch files: rows and columns of tiles spread, slots unique and dense", t_scratch_files},
      {"scratch_sparse_and_errors", t_scratch_sparse_and_errors},
      {"scratch_banks", t_scratch_banks},
      {"a store over several files out of a journal: its siblings, stale ones removed whole", t_scratch_files_temp},
      {"a journaled store over several files: reopened, a sibling gone, an older one-file store", t_scratch_files_journaled},
      {"journal", t_journal},
      {NULL, NULL},
  };
  return tu_run("io", tests);
}
