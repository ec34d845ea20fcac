/*
 * oocbench: oocsolve against its peers, measured in the same run.
 *
 *   oocbench gj-vs-lapack --n 4096 [--tile 256] [--mem-frac 0.25] [--kind random] [--reps 3]
 *                         [--dir DIR] [--json FILE]
 *
 * LAPACK dgetrf + dgetri (the same OpenBLAS) on the matrix in memory, then oocsolve on the same
 * matrix in an HDF5 file with --host-mem = mem-frac x the matrix bytes, out of core. Reports the
 * median of `reps` runs of each and the ratio oocsolve / LAPACK, where oocsolve's time is
 * read + compute + spill + write (LAPACK neither reads, writes nor checks; the residual check
 * oocsolve always runs is reported apart).
 */
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "base/base.h"
#include "gen/gen.h"
#include "io/h5mat.h"
#include "oocsolve.h"

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Through the library's own writer: the file oocsolve reads is what oocgen would make. */
static ooc_status_t write_h5(ooc_ctx_t *ctx, const char *spec, int64_t n, const double *A) {
  char file[4096], dset[512];
  h5mat_t *m = NULL;
  ooc_status_t st = h5m_split_spec(ctx, spec, file, sizeof file, dset, sizeof dset);
  if (!st) st = h5m_create(ctx, file, dset[0] ? dset : "/A", n, n, H5M_F64, 1024, NULL, 1, &m);
  if (!st) st = h5m_write(m, 0, 0, n, n, A, n);
  if (!st) st = h5m_commit(m);
  h5m_close(m);
  return st;
}

int main(int argc, char **argv) {
  int64_t n = 4096, tile = 256, reps = 3;
  double frac = 0.25;
  const char *kind = "random", *dir = ".", *json = NULL;
  if (argc < 2 || strcmp(argv[1], "gj-vs-lapack") != 0) {
    fprintf(stderr, "usage: oocbench gj-vs-lapack --n N [--tile B] [--mem-frac F] [--kind K] "
                    "[--reps R] [--dir DIR] [--json FILE]\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "oocbench: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--n")) {
      if (cli_int64("oocbench", a, v, 1, &n)) return 2;
    } else if (!strcmp(a, "--tile")) {
      if (cli_int64("oocbench", a, v, 1, &tile)) return 2;
    } else if (!strcmp(a, "--reps")) {
      if (cli_int64("oocbench", a, v, 1, &reps)) return 2;
    } else if (!strcmp(a, "--mem-frac")) {
      frac = atof(v);
    } else if (!strcmp(a, "--kind")) {
      kind = v;
    } else if (!strcmp(a, "--dir")) {
      dir = v;
    } else if (!strcmp(a, "--json")) {
      json = v;
    } else {
      fprintf(stderr, "oocbench: unknown option %s\n", a);
      return 2;
    }
  }
  int k = gen_kind_parse(kind);
  if (k < 0 || n > 46340) {
    fprintf(stderr, "oocbench: unknown kind '%s' or n too large for LAPACK's 32-bit API\n", kind);
    return 2;
  }
  ooc_ctx_t *ctx;
  ooc_ctx_create(&ctx);
  gen_spec_t gs;
  gen_spec_default(&gs, (gen_kind_t)k, n);
  gen_t *g;
  if (gen_create(ctx, &gs, &g) != OOC_OK) return 6;
  double *A = malloc((size_t)(n * n) * sizeof *A), *W = malloc((size_t)(n * n) * sizeof *W);
  lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
  gen_tile(g, 0, 0, n, n, A, n);
  gen_destroy(g);
  char in[4096], out[4096];
  snprintf(in, sizeof in, "%s/bench_A.h5:/A", dir);
  snprintf(out, sizeof out, "%s/bench_A.inv.h5:/inverse", dir);
  if (write_h5(ctx, in, n, A) != OOC_OK) {
    fprintf(stderr, "oocbench: %s\n", ooc_ctx_error(ctx));
    return 5;
  }

  double *t_lapack = calloc((size_t)reps, sizeof(double));
  double *t_ooc = calloc((size_t)reps, sizeof(double));
  double *t_comp = calloc((size_t)reps, sizeof(double));
  ooc_report_t rep = {0};
  for (int r = 0; r < reps; r++) {
    memcpy(W, A, (size_t)(n * n) * sizeof *W);
    double t0 = ooc_now();
    lapack_int info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, W,
                                     (lapack_int)n, ipiv);
    if (!info) info = LAPACKE_dgetri(LAPACK_COL_MAJOR, (lapack_int)n, W, (lapack_int)n, ipiv);
    t_lapack[r] = ooc_now() - t0;
    if (info) {
      fprintf(stderr, "oocbench: LAPACK failed (info %d)\n", (int)info);
      return 4;
    }

    ooc_opts_t o;
    ooc_opts_default(&o);
    o.tile = tile;
    o.host_mem = (int64_t)(frac * 8.0 * (double)n * (double)n);
    o.force = 1;
    o.check = OOC_CHECK_PROBE;
    o.device = OOC_DEVICE_CPU;
    o.scratch_dir = dir;
    ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
    if (st != OOC_OK) {
      fprintf(stderr, "oocbench: oocsolve failed: %s\n", ooc_ctx_error(ctx));
      return ooc_status_exit_code(st);
    }
    t_ooc[r] = rep.t_read + rep.t_compute + rep.t_spill + rep.t_write;
    t_comp[r] = rep.t_compute;
    fprintf(stderr, "rep %d: lapack %.3f s, oocsolve %.3f s (compute %.3f, spill %.3f, read %.3f, "
                    "write %.3f, check %.3f)\n",
            r + 1, t_lapack[r], t_ooc[r], rep.t_compute, rep.t_spill, rep.t_read, rep.t_write,
            rep.t_check);
  }
  double ml = median(t_lapack, (int)reps), mo = median(t_ooc, (int)reps),
         mc = median(t_comp, (int)reps);
  double flops = 2.0 * (double)n * (double)n * (double)n;
  printf("n = %lld, tile %lld, host-mem %.1f MiB (%.2f of the matrix), stripe %lld, %lld steps\n",
         (long long)n, (long long)tile, (double)rep.host_budget / 1048576.0, frac,
         (long long)rep.stripe, (long long)rep.steps);
  printf("LAPACK dgetrf+dgetri  %8.3f s  %6.1f GFLOP/s\n", ml, flops / ml * 1e-9);
  printf("oocsolve gj (ooc)     %8.3f s  %6.1f GFLOP/s overall, %6.1f in compute\n", mo,
         flops / mo * 1e-9, flops / mc * 1e-9);
  printf("ratio oocsolve/LAPACK %8.3f   (spilled %.1f MiB, residual %.3g)\n", mo / ml,
         (double)rep.bytes_spilled / 1048576.0, rep.residual);
  if (json) {
    FILE *f = fopen(json, "w");
    if (f) {
      fprintf(f,
              "{\"bench\": \"gj-vs-lapack\", \"n\": %lld, \"tile\": %lld, \"mem_frac\": %g, "
              "\"stripe\": %lld, \"steps\": %lld, \"lapack_s\": %.6f, \"oocsolve_s\": %.6f, "
              "\"oocsolve_compute_s\": %.6f, \"ratio\": %.4f, \"bytes_spilled\": %lld, "
              "\"residual\": %.6g, \"reps\": %lld}\n",
              (long long)n, (long long)tile, frac, (long long)rep.stripe, (long long)rep.steps, ml,
              mo, mc, mo / ml, (long long)rep.bytes_spilled, rep.residual, (long long)reps);
      fclose(f);
    }
  }
  free(A);
  free(W);
  free(ipiv);
  free(t_lapack);
  free(t_ooc);
  free(t_comp);
  ooc_ctx_destroy(ctx);
  return 0;
}
