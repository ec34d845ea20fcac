/*
 * bench_io.c: HDF5 read/write throughput of src/io/h5mat.c as oocsolve uses it, without the
 * solver. Not a test (not named test_*.c); build by hand:
 *   gcc -O2 -std=c11 -Iinclude -Isrc -I/usr/include/hdf5/serial tests/bench_io.c \
 *       build/liboocsolve.a -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lzstd -llapacke \
 *       -lopenblas -lpthread -lm -o /tmp/bench_io
 *   /tmp/bench_io read  IN.h5[:/dset] TILE [reps=3]      load(): n x TILE strips + colabs
 *   /tmp/bench_io write OUT.h5 N TILE [none|zstd[:L]] [f64|f32] [reps=3]
 *                                                         write_rows(): TILE-row bands
 * Prints the best and median time of each phase and MB/s of matrix bytes (uncompressed, f64 in
 * memory). The file is typically in the page cache: this measures the CPU side of the I/O path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5mat.h"
#include "kernels/ops.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int reps, double bytes) {
  qsort(t, (size_t)reps, sizeof *t, cmp);
  printf("%-6s best %.3f s  median %.3f s  %.0f MB/s (best)\n", what, t[0], t[reps / 2],
         bytes / t[0] / 1e6);
}

static int bench_read(ooc_ctx_t *ctx, const char *spec, int64_t b, int reps) {
  char file[4096], dset[1024];
  if (h5m_split_spec(ctx, spec, file, sizeof file, dset, sizeof dset) != OOC_OK) return 1;
  double t[64];
  int64_t n = 0;
  for (int r = 0; r < reps; r++) {
    h5mat_t *m = NULL;
    double t0 = ooc_now();
    if (h5m_open(ctx, file, dset, &m) != OOC_OK) {
      fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
      return 1;
    }
    n = h5m_rows(m);
    int64_t nc_all = h5m_cols(m), w = b < nc_all ? b : nc_all;
    double *strip = malloc((size_t)(n * w) * sizeof(double));
    double *norm = calloc((size_t)nc_all, sizeof(double));
    int64_t bi, bj;
    for (int64_t c0 = 0; c0 < nc_all; c0 += w) {
      int64_t nc = nc_all - c0 < w ? nc_all - c0 : w;
      if (h5m_read(m, 0, c0, n, nc, strip, n) != OOC_OK) {
        fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
        return 1;
      }
      ooc_ops_cpu()->colabs(n, nc, strip, n, norm + c0, &bi, &bj);
    }
    h5m_close(m);
    t[r] = ooc_now() - t0;
    free(strip);
    free(norm);
  }
  report("read", t, reps, 8.0 * (double)n * (double)n);
  return 0;
}

static int bench_write(ooc_ctx_t *ctx, const char *file, int64_t n, int64_t b, const char *comp,
                       h5m_type_t type, int reps) {
  double t[64];
  double *rows = malloc((size_t)(b * n) * sizeof(double));
  /* smooth values (as an inverse of a covariance is): zstd finds some redundancy */
  for (int64_t i = 0; i < b * n; i++) rows[i] = 1.0 / (1.0 + (double)(i % 977)) + 1e-3 * (double)i;
  for (int r = 0; r < reps; r++) {
    h5mat_t *m = NULL;
    double t0 = ooc_now();
    int64_t chunk = b < 256 ? 256 : b;
    if (h5m_create(ctx, file, "/X", n, n, type, chunk, comp, 1, &m) != OOC_OK) {
      fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
      return 1;
    }
    /* BENCH_STAGE=bytes: the writer's buffer allowance, as job.c sets it from the budget */
    if (getenv("BENCH_STAGE")) h5m_set_stage(m, atoll(getenv("BENCH_STAGE")));
    for (int64_t r0 = 0; r0 < n; r0 += b) {
      int64_t nr = n - r0 < b ? n - r0 : b;
      /* as job.c's write_rows: one call per row band (BENCH_PIECES=1: chunk-wide pieces, as
       * it wrote before direct chunk writes) */
      int64_t piece = getenv("BENCH_PIECES") ? chunk : n;
      for (int64_t c0 = 0; c0 < n; c0 += piece)
        if (h5m_write(m, r0, c0, nr, n - c0 < piece ? n - c0 : piece, rows + c0 * nr, nr) !=
            OOC_OK) {
          fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
          return 1;
        }
    }
    if (h5m_commit(m) != OOC_OK) {
      fprintf(stderr, "%s\n", ooc_ctx_error(ctx));
      return 1;
    }
    h5m_close(m);
    t[r] = ooc_now() - t0;
  }
  free(rows);
  report("write", t, reps, 8.0 * (double)n * (double)n);
  return 0;
}

int main(int argc, char **argv) {
  ooc_ctx_t *ctx = NULL;
  if (argc < 4 || ooc_ctx_create(&ctx) != OOC_OK) {
    fprintf(stderr, "usage: see the comment at the top of tests/bench_io.c\n");
    return 2;
  }
  int rc;
  if (!strcmp(argv[1], "read")) {
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    rc = bench_read(ctx, argv[2], atoll(argv[3]), reps < 1 ? 1 : reps > 64 ? 64 : reps);
  } else if (!strcmp(argv[1], "write") && argc >= 5) {
    h5m_type_t type = argc > 6 && !strcmp(argv[6], "f32") ? H5M_F32 : H5M_F64;
    int reps = argc > 7 ? atoi(argv[7]) : 3;
    rc = bench_write(ctx, argv[2], atoll(argv[3]), atoll(argv[4]), argc > 5 ? argv[5] : "none",
                     type, reps < 1 ? 1 : reps > 64 ? 64 : reps);
  } else {
    fprintf(stderr, "usage: see the comment at the top of tests/bench_io.c\n");
    rc = 2;
  }
  ooc_ctx_destroy(ctx);
  return rc;
}
