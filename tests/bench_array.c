/*
 * bench_array.c: a host array inverted through the public API (issue 25), as a data-assimilation
 * code would call it: only include/oocsolve.h, the opaque options, matrix handles. Not a ctest.
 *   bench_array array N TILE GPUMEM OUT.h5:/X    an N x N float64 column-major array in this
 *                                               process's memory (diagonally dominant: entries
 *                                               uniform in [-1, 1) from a hash of (i, j), N on the
 *                                               diagonal), inverted into the file OUT (float32)
 *   bench_array file IN.h5:/A TILE GPUMEM OUT.h5:/X  the same call with the input a file
 * Device auto, the given --gpu-mem and tile; the report's JSON is printed (one line) with the
 * phases' seconds. Both forms run the same pipeline; the array is read in place, never copied.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oocsolve.h"

typedef struct {
  double *A;
  int64_t n, j0, j1;
} fill_t;

static void *fill_part(void *arg) {
  fill_t *f = arg;
  for (int64_t j = f->j0; j < f->j1; j++)
    for (int64_t i = 0; i < f->n; i++) {
      uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)j * 0xC2B2AE3D27D4EB4FULL;
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9ULL;
      h ^= h >> 32;
      f->A[i + j * f->n] = (double)(h % 2001) / 1000.0 - 1.0 + (i == j ? (double)f->n : 0.0);
    }
  return NULL;
}

static void die(ooc_ctx_t *ctx, const char *what) {
  fprintf(stderr, "bench_array: %s: %s\n", what, ctx ? ooc_ctx_error(ctx) : "");
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 6 || (strcmp(argv[1], "array") && strcmp(argv[1], "file"))) {
    fprintf(stderr, "usage: bench_array array N TILE GPUMEM OUT.h5:/X | file IN.h5:/A TILE "
                    "GPUMEM OUT.h5:/X\n");
    return 2;
  }
  ooc_ctx_t *ctx;
  if (ooc_ctx_create(&ctx) != OOC_OK) die(NULL, "context");
  ooc_options_t *o;
  if (ooc_opts_create(&o) != OOC_OK) die(ctx, "options");
  if (ooc_opts_set_str(o, OOC_PARAM_TILE, argv[3]) != OOC_OK ||
      ooc_opts_set_str(o, OOC_PARAM_GPU_MEM, argv[4]) != OOC_OK ||
      ooc_opts_set_str(o, OOC_PARAM_OUT_TYPE, "f32") != OOC_OK ||
      ooc_opts_set_str(o, OOC_PARAM_FORCE, "true") != OOC_OK)
    die(ctx, ooc_opts_error(o));
  ooc_matrix_t *a = NULL, *x = NULL;
  double *A = NULL;
  if (!strcmp(argv[1], "array")) {
    int64_t n = atoll(argv[2]);
    A = malloc((size_t)(n * n) * sizeof *A);
    if (!A) die(NULL, "out of host memory for the array");
    enum { NT = 16 };
    pthread_t th[NT];
    fill_t f[NT];
    for (int t = 0; t < NT; t++) {
      f[t] = (fill_t){A, n, n * t / NT, n * (t + 1) / NT};
      pthread_create(&th[t], NULL, fill_part, &f[t]);
    }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    if (ooc_matrix_array(ctx, A, OOC_DTYPE_F64, n, n, n, OOC_LAYOUT_COL, &a) != OOC_OK)
      die(ctx, "array handle");
  } else if (ooc_matrix_file(ctx, argv[2], &a) != OOC_OK) {
    die(ctx, "file handle");
  }
  if (ooc_matrix_file(ctx, argv[5], &x) != OOC_OK) die(ctx, "output handle");
  ooc_report_t rep;
  ooc_status_t st = ooc_invert_m(ctx, a, x, o, &rep);
  size_t need = ooc_report_json_str(&rep, st, st ? ooc_ctx_error(ctx) : "", NULL, 0);
  char *js = malloc(need + 1);
  ooc_report_json_str(&rep, st, st ? ooc_ctx_error(ctx) : "", js, need + 1);
  printf("%s\n", js);
  free(js);
  ooc_matrix_destroy(a);
  ooc_matrix_destroy(x);
  free(A);
  ooc_opts_destroy(o);
  ooc_ctx_destroy(ctx);
  return st == OOC_OK ? 0 : 1;
}
