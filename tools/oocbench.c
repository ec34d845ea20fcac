/*
 * oocbench: oocsolve's methods against the peers on this machine, measured in the same run, with
 * a JSON record and PNG plots.
 *
 *   oocbench --sizes 4096,8192 --methods gj,chol,newton,hyper7 --peers all --types random,matern
 *            --reps 3 --out bench/ [--device cpu|cuda|auto[,..]] [--dtypes f64,f32] [--tile N]
 *            [--host-mem SIZE | --mem-frac F] [--gpu-mem SIZE] [--check auto|full|probe]
 *            [--seed S] [--max-time SECONDS] [--data DIR] [--keep] [--no-plots] [--quick]
 *            [--preset NAME]
 *
 * For every precision, size and matrix type it generates the seeded matrix to HDF5 (src/gen, as
 * oocgen does), runs each oocsolve method through the public API (ooc_invert, opts.method) on each
 * device, and the peers that apply: LAPACK on OpenBLAS in core (getrf+getri, potrf+potri), and on
 * a usable GPU cuSOLVER in core (getrf+getrs(I), potrf+potri); per size the GEMM ceiling of each
 * device. Every row records time (median, min, max of --reps), TFLOP/s with the method's flop
 * count, the residual ratio (oocsolve's report; peers through the same check code), bytes per
 * tier, peak host and device memory. A failing method or peer is a row with its error, never a
 * stop; a row that cannot run here (memory, no GPU, not SPD) is a row that says why it was skipped.
 *
 * Outputs in --out: bench.json (rewritten after every row, so an interrupted run keeps what it
 * measured), table.md (the rows and the ratios to quote as Markdown tables), plot/ (one data file
 * per series), plot.gp (gnuplot) and plot.py (matplotlib), and the PNGs made by whichever of the
 * two is installed (time_<type>.png, tflops_<type>.png). docs/PERFORMANCE.md has the schema.
 *
 * Exit codes: 0 every row ran and passed or was skipped with a reason; 1 some row failed or
 * errored (the JSON says which); 2 usage; 5 the output directory cannot be written; 130 interrupted.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "bench.h"
#include "cli_util.h"
#include "gen/gen.h"
#include "io/h5mat.h"
#include "oocsolve.h"

#define MAXL 32
#define PATH_CAP 4096
#define CPU_GEMM_CAP 8192   /* CPU ceiling measured at min(n, this): 2n^3 at n = 16k is minutes */
#define GPU_GEMM_CAP 16384  /* near the peak on an H100, and the host work (fill, check) stays short */

enum { P_LAPACK_GETRI = 1, P_LAPACK_POTRI = 2, P_CUSOLVER_GETRS = 4, P_CUSOLVER_POTRI = 8,
       P_GEMM = 16, P_ALL = 31 };

typedef struct {
  int64_t sizes[MAXL];
  int nsizes;
  char methods[MAXL][16];
  int nmethods;
  int peers;
  char types[MAXL][16];
  int ntypes;
  char dtypes[2][8];
  int ndtypes;
  char devices[2][8];
  int ndevices;
  int reps;
  const char *out;
  const char *data; /* generated matrices, outputs and scratch (default OUT/data) */
  int64_t tile, host_mem, gpu_mem;
  double mem_frac;
  int check; /* 0 auto, 1 full, 2 probe */
  int64_t seed;
  double max_time;
  int keep, no_plots, quick;
  const char *preset;
} bopts_t;

static const char *USAGE =
    "usage: oocbench [options]\n"
    "\n"
    "Runs oocsolve's inversion methods and the peers on this machine on generated matrices, in\n"
    "one run, and writes OUT/bench.json and PNG plots (docs/PERFORMANCE.md).\n"
    "\n"
    "  --sizes N,N,..        matrix sizes\n"
    "  --methods M,..        gj, chol, newton, hyper7 (default gj,chol)\n"
    "  --peers P,..          all, none, lapack, cusolver, gemm (the ceiling), or lapack-getri,\n"
    "                        lapack-potri, cusolver-getrs, cusolver-potri (default all)\n"
    "  --types T,..          random, diagdom, matern, cond (default random,matern); the SPD-only\n"
    "                        methods (chol, *-potri) run on matern and are skipped on the others\n"
    "  --dtypes D,..         f64, f32: the input's dtype (peers work in it) (default f64)\n"
    "  --device D[,D]        cpu, cuda or auto (GPU if usable) for oocsolve's methods (default auto)\n"
    "  --reps R              repetitions per row; times are median, min, max (default 3)\n"
    "  --out DIR             output directory (default bench)\n"
    "  --data DIR            where the generated matrices, oocsolve's outputs and scratch go\n"
    "                        (default OUT/data; removed as the run goes unless --keep)\n"
    "  --tile N              oocsolve's tile (default: the library's, 4096 clamped to n)\n"
    "  --host-mem SIZE       oocsolve's host budget, e.g. 2G (default: the library's)\n"
    "  --mem-frac F          host budget = F x the matrix bytes (forces out-of-core runs)\n"
    "  --gpu-mem SIZE        oocsolve's device budget (default: the library's)\n"
    "  --check C             auto (full for n <= 2048, else probe), full, probe (default auto)\n"
    "  --seed S              generator seed (default 1)\n"
    "  --max-time SECONDS    rows not started by then are recorded as skipped\n"
    "  --keep                keep the generated matrices in OUT/data\n"
    "  --no-plots            write the JSON only\n"
    "  --quick               the CI smoke test: sizes 256,512, all methods, peers, f64 and f32,\n"
    "                        tile 128\n"
    "  --preset NAME         gj-thesis (Gauss-Jordan vs LU peers, CPU vs GPU, f64 vs f32) or\n"
    "                        climate (newton, hyper7 vs gj, chol on the climate paper's sizes);\n"
    "                        options given explicitly override the preset's\n"
    "  --help, --version\n"
    "\n"
    "Exit codes: 0 all rows passed or were skipped with a reason, 1 a row failed, 2 usage,\n"
    "5 the output directory is not writable, 130 interrupted.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "oocbench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(oocbench --help for usage)\n");
  va_end(ap);
  return 2;
}

/* ---- option lists ------------------------------------------------------------------------- */

static int in_list(const char *v, const char *const *allowed) {
  for (int i = 0; allowed[i]; i++)
    if (!strcmp(v, allowed[i])) return 1;
  return 0;
}

/* Split "a,b,c" into out[cap][w]; each item must be in `allowed` (NULL = any). */
static int parse_words(const char *opt, const char *val, const char *const *allowed, char *out,
                       int w, int cap, int *count) {
  char buf[1024];
  ooc_fmt(buf, sizeof buf, "%s", val);
  *count = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (allowed && !in_list(t, allowed)) return usage_error("%s: unknown value '%s'", opt, t);
    for (int i = 0; i < *count; i++)
      if (!strcmp(out + i * w, t)) return usage_error("%s: '%s' given twice", opt, t);
    if (*count == cap) return usage_error("%s: at most %d values", opt, cap);
    if ((int)strlen(t) >= w) return usage_error("%s: '%s' is too long", opt, t);
    ooc_fmt(out + (*count)++ * w, (size_t)w, "%s", t);
  }
  if (!*count) return usage_error("%s: empty list", opt);
  return 0;
}

static int parse_sizes(const char *val, bopts_t *o) {
  char buf[1024];
  ooc_fmt(buf, sizeof buf, "%s", val);
  o->nsizes = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nsizes == MAXL) return usage_error("--sizes: at most %d sizes", MAXL);
    if (cli_int64("oocbench", "--sizes", t, 1, &o->sizes[o->nsizes])) return 2;
    o->nsizes++;
  }
  if (!o->nsizes) return usage_error("--sizes: empty list");
  return 0;
}

static int parse_peers(const char *val, int *peers) {
  static const char *const ok[] = {"all", "none", "lapack", "cusolver", "gemm", "dgemm",
                                   "lapack-getri", "lapack-potri", "cusolver-getrs",
                                   "cusolver-potri", NULL};
  char w[MAXL][16];
  int n;
  if (parse_words("--peers", val, ok, &w[0][0], 16, MAXL, &n)) return 2;
  *peers = 0;
  for (int i = 0; i < n; i++) {
    const char *t = w[i];
    if (!strcmp(t, "all")) *peers |= P_ALL;
    else if (!strcmp(t, "none")) *peers |= 0;
    else if (!strcmp(t, "lapack")) *peers |= P_LAPACK_GETRI | P_LAPACK_POTRI;
    else if (!strcmp(t, "cusolver")) *peers |= P_CUSOLVER_GETRS | P_CUSOLVER_POTRI;
    else if (!strcmp(t, "gemm") || !strcmp(t, "dgemm")) *peers |= P_GEMM;
    else if (!strcmp(t, "lapack-getri")) *peers |= P_LAPACK_GETRI;
    else if (!strcmp(t, "lapack-potri")) *peers |= P_LAPACK_POTRI;
    else if (!strcmp(t, "cusolver-getrs")) *peers |= P_CUSOLVER_GETRS;
    else if (!strcmp(t, "cusolver-potri")) *peers |= P_CUSOLVER_POTRI;
  }
  return 0;
}

/* ---- presets ------------------------------------------------------------------------------- */

/* Each preset only fills what the command line left unset (flags in `set`). */
enum { S_SIZES = 1, S_METHODS = 2, S_PEERS = 4, S_TYPES = 8, S_DTYPES = 16, S_DEVICES = 32,
       S_TILE = 64, S_REPS = 128 };

static void apply_preset(bopts_t *o, const char *name, int set) {
  const char *sizes = NULL, *methods = NULL, *types = NULL, *dtypes = NULL, *devices = NULL;
  int peers = -1, reps = 0;
  int64_t tile = -1;
  if (!strcmp(name, "quick")) {
    /* CI smoke test: every method, peer and dtype on two small sizes, several tiles a matrix */
    sizes = "256,512", methods = "gj,chol,newton,hyper7", types = "random,matern";
    dtypes = "f64,f32", peers = P_ALL, tile = 128, reps = 3;
  } else if (!strcmp(name, "gj-thesis")) {
    /* The GJ thesis's figures 8-11: Gauss-Jordan on CPU and GPU against the LU peer (cuSOLVER
     * getrf+getrs; LAPACK getrf+getri on the CPU), double and float input, random matrices. */
    sizes = "1024,2048,4096,8192", methods = "gj", types = "random", dtypes = "f64,f32";
    devices = "cpu,cuda", peers = P_LAPACK_GETRI | P_CUSOLVER_GETRS | P_GEMM;
  } else if (!strcmp(name, "climate")) {
    /* The climate paper's Table 2 (n = 512, 1024) and beyond (8192, 16384): the iterative
     * inversions against Gauss-Jordan and Cholesky, on SPD covariance and diagonally dominant
     * input (issue 5's table), with the in-core GPU peers where a GPU is present. */
    sizes = "512,1024,8192,16384", methods = "newton,hyper7,gj,chol", types = "matern,diagdom";
    peers = P_CUSOLVER_GETRS | P_CUSOLVER_POTRI | P_GEMM;
  }
  if (sizes && !(set & S_SIZES)) parse_sizes(sizes, o);
  if (methods && !(set & S_METHODS)) parse_words("", methods, NULL, &o->methods[0][0], 16, MAXL, &o->nmethods);
  if (types && !(set & S_TYPES)) parse_words("", types, NULL, &o->types[0][0], 16, MAXL, &o->ntypes);
  if (dtypes && !(set & S_DTYPES)) parse_words("", dtypes, NULL, &o->dtypes[0][0], 8, 2, &o->ndtypes);
  if (devices && !(set & S_DEVICES)) parse_words("", devices, NULL, &o->devices[0][0], 8, 2, &o->ndevices);
  if (peers >= 0 && !(set & S_PEERS)) o->peers = peers;
  if (tile >= 0 && !(set & S_TILE)) o->tile = tile;
  if (reps && !(set & S_REPS)) o->reps = reps;
}

/* ---- small helpers ------------------------------------------------------------------------ */

static int is_spd_type(const char *t) { return !strcmp(t, "matern"); }
static int spd_only(const char *name) {
  return !strcmp(name, "chol") || !strcmp(name, "lapack-potri") || !strcmp(name, "cusolver-potri");
}
static ooc_method_t method_id(const char *m) {
  return !strcmp(m, "chol")     ? OOC_METHOD_CHOL
         : !strcmp(m, "newton") ? OOC_METHOD_NEWTON
         : !strcmp(m, "hyper7") ? OOC_METHOD_HYPER7
                                : OOC_METHOD_GJ;
}

static int mkdir_p(const char *path) {
  char buf[PATH_CAP];
  ooc_fmt(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* 'text' with ' escaped, for system() */
static void shell_quote(char *dst, size_t cap, const char *s) {
  size_t k = 0;
  if (cap < 3) return;
  dst[k++] = '\'';
  for (; *s && k + 5 < cap; s++) {
    if (*s == '\'') {
      memcpy(dst + k, "'\\''", 4);
      k += 4;
    } else {
      dst[k++] = *s;
    }
  }
  dst[k++] = '\'';
  dst[k] = 0;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void jstr(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p == '\n') fputs("\\n", f);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}
static void kstr(FILE *f, const char *k, const char *v) {
  fprintf(f, "\"%s\": ", k);
  jstr(f, v);
  fputs(", ", f);
}
static void knum(FILE *f, const char *k, double v) {
  if (isfinite(v)) fprintf(f, "\"%s\": %.6g, ", k, v);
  else fprintf(f, "\"%s\": null, ", k);
}
static void kint(FILE *f, const char *k, int64_t v) { /* negative = unknown */
  if (v >= 0) fprintf(f, "\"%s\": %lld, ", k, (long long)v);
  else fprintf(f, "\"%s\": null, ", k);
}

static double tflops_of(double flops, double t) {
  return isfinite(flops) && t > 0 ? flops / t * 1e-12 : NAN;
}

static void row_json(FILE *f, const bench_row_t *r) {
  fputs("    {", f);
  kstr(f, "name", r->name);
  kstr(f, "kind", r->kind);
  kstr(f, "device", r->device);
  kstr(f, "backend", r->backend);
  kstr(f, "type", r->type);
  kstr(f, "dtype", r->dtype);
  kint(f, "n", r->n);
  kint(f, "tile", r->tile);
  kint(f, "stripe", r->stripe);
  kint(f, "host_budget", r->host_budget > 0 ? r->host_budget : -1);
  kint(f, "gpu_budget", r->gpu_budget > 0 ? r->gpu_budget : -1);
  kstr(f, "status", r->status);
  if (r->ooc_status[0]) kstr(f, "ooc_status", r->ooc_status);
  kstr(f, "error", r->error);
  fprintf(f, "\"reps\": %d, \"times_s\": [", r->reps);
  for (int i = 0; i < r->reps; i++) fprintf(f, "%s%.6g", i ? ", " : "", r->t[i]);
  fputs("], ", f);
  knum(f, "time_s", r->t_med);
  knum(f, "time_min_s", r->t_min);
  knum(f, "time_max_s", r->t_max);
  knum(f, "compute_s", r->tc_med);
  knum(f, "read_s", r->t_read);
  knum(f, "spill_s", r->t_spill);
  knum(f, "write_s", r->t_write);
  knum(f, "check_s", r->t_check);
  knum(f, "total_s", r->t_total);
  knum(f, "h2d_s", r->t_h2d);
  knum(f, "d2h_s", r->t_d2h);
  knum(f, "flops", r->flops);
  knum(f, "flops_done", r->flops_done);
  knum(f, "flops_effective", r->flops_effective);
  knum(f, "tflops", tflops_of(r->flops, r->t_med));
  knum(f, "tflops_effective", tflops_of(r->flops_effective, r->t_med));
  knum(f, "tflops_compute", tflops_of(r->flops, r->tc_med));
  if (r->iterations > 0) fprintf(f, "\"iterations\": %d, ", r->iterations);
  else fputs("\"iterations\": null, ", f);
  kint(f, "gemm_n", r->gemm_n);
  knum(f, "residual", r->residual);
  kstr(f, "check", r->check);
  knum(f, "threshold", r->threshold);
  fprintf(f, "\"pass\": %s, ", !strcmp(r->status, "ok") ? "true" : "false");
  fputs("\"bytes\": {", f);
  kint(f, "disk_read", r->bytes_input);
  kint(f, "spilled", r->bytes_spilled);
  kint(f, "unspilled", r->bytes_unspilled);
  kint(f, "disk_written", r->bytes_output);
  kint(f, "h2d", r->bytes_h2d);
  fprintf(f, "\"d2h\": ");
  if (r->bytes_d2h >= 0) fprintf(f, "%lld}, ", (long long)r->bytes_d2h);
  else fputs("null}, ", f);
  kint(f, "host_peak", r->host_peak);
  kint(f, "host_rss_peak", r->host_rss_peak);
  kint(f, "dev_peak", r->dev_peak);
  if (r->report_json[0]) fprintf(f, "\"report\": %s, ", r->report_json);
  fprintf(f, "\"warnings\": ");
  jstr(f, r->warnings);
  fputc('}', f);
}

typedef struct {
  bopts_t o;
  bench_machine_t m;
  char cmdline[4096];
  bench_row_t *rows;
  int nrows, cap;
  char plots[1024]; /* "gnuplot", "matplotlib" or "skipped: why" */
  double t_start;
} bench_t;

static void list_json(FILE *f, const char *k, const char *items, int w, int n) {
  fprintf(f, "\"%s\": [", k);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    jstr(f, items + i * w);
  }
  fputs("], ", f);
}

static int write_json(bench_t *B) {
  char path[PATH_CAP], tmp[PATH_CAP + 8];
  ooc_fmt(path, sizeof path, "%s/bench.json", B->o.out);
  ooc_fmt(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  const bench_machine_t *m = &B->m;
  const bopts_t *o = &B->o;
  fputs("{\n  \"schema\": \"oocbench/1\",\n  \"machine\": {", f);
  kstr(f, "cpu_model", m->cpu_model);
  fprintf(f, "\"cores\": %d, \"blas_threads\": %d, ", m->cores, m->blas_threads);
  kstr(f, "blas_config", m->blas_config);
  kint(f, "memory", m->memory);
  kint(f, "memory_available", m->mem_available);
  fprintf(f, "\"gpu_usable\": %s, ", m->gpu_usable ? "true" : "false");
  kstr(f, "gpu", m->gpu_name);
  kint(f, "gpu_memory", m->gpu_usable ? m->gpu_memory : -1);
  kstr(f, "gpu_driver", m->gpu_driver);
  kstr(f, "cuda_runtime", m->cuda_runtime);
  kstr(f, "cuda_driver_api", m->cuda_driver_api);
  kstr(f, "hostname", m->hostname);
  kstr(f, "loadavg_start", m->loadavg_start);
  kstr(f, "loadavg_end", m->loadavg_end);
  kstr(f, "oocsolve_version", ooc_version());
  kstr(f, "date", m->date);
  fputs("\"command_line\": ", f);
  jstr(f, B->cmdline);
  fputs("},\n  \"options\": {\"sizes\": [", f);
  for (int i = 0; i < o->nsizes; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)o->sizes[i]);
  fputs("], ", f);
  list_json(f, "methods", &o->methods[0][0], 16, o->nmethods);
  list_json(f, "types", &o->types[0][0], 16, o->ntypes);
  list_json(f, "dtypes", &o->dtypes[0][0], 8, o->ndtypes);
  list_json(f, "devices", &o->devices[0][0], 8, o->ndevices);
  fputs("\"peers\": [", f);
  static const char *pn[] = {"lapack-getri", "lapack-potri", "cusolver-getrs", "cusolver-potri",
                             "gemm"};
  for (int i = 0, k = 0; i < 5; i++)
    if (o->peers & (1 << i)) fprintf(f, "%s\"%s\"", k++ ? ", " : "", pn[i]);
  fprintf(f, "], \"reps\": %d, ", o->reps);
  kint(f, "tile", o->tile > 0 ? o->tile : -1);
  kint(f, "host_mem", o->host_mem > 0 ? o->host_mem : -1);
  knum(f, "mem_frac", o->mem_frac > 0 ? o->mem_frac : NAN);
  kint(f, "gpu_mem", o->gpu_mem > 0 ? o->gpu_mem : -1);
  kstr(f, "data", o->data);
  kstr(f, "check", o->check == 1 ? "full" : o->check == 2 ? "probe" : "auto");
  kint(f, "seed", o->seed);
  kstr(f, "preset", o->preset ? o->preset : (o->quick ? "quick" : ""));
  fprintf(f, "\"cpu_gemm_cap\": %d, \"gpu_gemm_cap\": %d},\n", CPU_GEMM_CAP, GPU_GEMM_CAP);
  fputs("  \"rows\": [\n", f);
  for (int i = 0; i < B->nrows; i++) {
    row_json(f, &B->rows[i]);
    fputs(i + 1 < B->nrows ? ",\n" : "\n", f);
  }
  fputs("  ],\n  \"plots\": ", f);
  jstr(f, B->plots);
  fprintf(f, ",\n  \"elapsed_s\": %.3f\n}\n", ooc_now() - B->t_start);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* ---- the run ------------------------------------------------------------------------------- */

static bench_row_t *new_row(bench_t *B) {
  if (B->nrows == B->cap) {
    int cap = B->cap ? 2 * B->cap : 64;
    bench_row_t *r = realloc(B->rows, (size_t)cap * sizeof *r);
    if (!r) return NULL;
    B->rows = r;
    B->cap = cap;
  }
  return &B->rows[B->nrows++];
}

static void print_row(const bench_row_t *r) {
  fprintf(stderr, "oocbench: %-14s %-4s %-3s %-8s n=%-6lld %-7s", r->name, r->device, r->dtype,
          r->type, (long long)r->n, r->status);
  if (isfinite(r->t_med))
    fprintf(stderr, " %9.4f s %8.3f TFLOP/s", r->t_med, tflops_of(r->flops, r->t_med));
  if (isfinite(r->residual)) fprintf(stderr, "  residual %.3g", r->residual);
  if (r->error[0]) fprintf(stderr, "  (%s)", r->error);
  fputc('\n', stderr);
}

/* Record the row: JSON rewritten (an interrupted run keeps what it measured), a line on stderr. */
static void finish_row(bench_t *B, bench_row_t *r) {
  if (!strcmp(r->status, "skipped")) r->host_rss_peak = -1; /* nothing ran: no peak of its own */
  print_row(r);
  if (write_json(B) != 0)
    fprintf(stderr, "oocbench: warning: cannot write %s/bench.json: %s\n", B->o.out, strerror(errno));
}

static int out_of_time(bench_t *B, bench_row_t *r) {
  if (B->o.max_time > 0 && ooc_now() - B->t_start > B->o.max_time) {
    bench_row_skip(r, "not run: --max-time %g s was reached", B->o.max_time);
    return 1;
  }
  return 0;
}

/* SIGINT/SIGTERM: the running oocsolve call stops at its next safe point (the library's flag);
 * a peer in progress finishes; matrix generation stops at the next tile; no new row starts; the JSON keeps what was measured (exit 130). */
static volatile sig_atomic_t interrupted;
static ooc_ctx_t *g_ctx;
static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
  if (g_ctx) ooc_ctx_interrupt(g_ctx);
}

/* Generate the seeded matrix to HDF5, tile by tile, as oocgen does (with the same attributes). */
static ooc_status_t generate(ooc_ctx_t *ctx, const char *file, const char *type, int f32, int64_t n,
                             int64_t seed, int64_t chunk) {
  gen_spec_t s;
  gen_spec_default(&s, (gen_kind_t)gen_kind_parse(type), n);
  s.seed = (uint64_t)seed;
  gen_t *g = NULL;
  h5mat_t *m = NULL;
  double *buf = NULL;
  ooc_status_t st;
  OOC_CHECK(st = gen_create(ctx, &s, &g));
  OOC_CHECK(st = h5m_create(ctx, file, "/A", n, n, f32 ? H5M_F32 : H5M_F64, chunk, NULL, 1, &m));
  buf = ooc_malloc(ctx, (size_t)(chunk * chunk) * sizeof *buf);
  if (!buf) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "no memory for a %lld x %lld tile", (long long)chunk,
                  (long long)chunk);
    goto done;
  }
  for (int64_t r0 = 0; r0 < n; r0 += chunk)
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
      int64_t nr = ooc_min64(chunk, n - r0), nc = ooc_min64(chunk, n - c0);
      if (interrupted) {
        st = OOC_FAIL(ctx, OOC_ERR_INTERRUPTED, "interrupted while generating %s", file);
        goto done; /* h5m_close removes the uncommitted file */
      }
      gen_tile(g, r0, c0, nr, nc, buf, nr);
      OOC_CHECK(st = h5m_write(m, r0, c0, nr, nc, buf, nr));
    }
  OOC_CHECK(st = h5m_attr_str(m, "generator", gen_kind_name(s.kind)));
  OOC_CHECK(st = h5m_attr_i64(m, "seed", seed));
  OOC_CHECK(st = h5m_attr_str(m, "generator_version", ooc_version()));
  OOC_CHECK(st = h5m_commit(m));
done:
  h5m_close(m);
  ooc_free(ctx, buf);
  gen_destroy(g);
  return st;
}

/* The whole matrix in memory (column-major float64) for the in-core peers, read back from the
 * file oocsolve reads, so every competitor inverts exactly the same numbers. */
static double *load_matrix(ooc_ctx_t *ctx, const char *file, int64_t n, char *why, size_t cap) {
  int64_t need = n * n * 8;
  if ((double)need > 0.9 * (double)bench_mem_available()) {
    char a[32], b[32];
    ooc_fmt(why, cap, "the in-core matrix (%s) does not fit in the host memory available (%s)",
             ooc_fmt_bytes(need, a, sizeof a), ooc_fmt_bytes(bench_mem_available(), b, sizeof b));
    return NULL;
  }
  double *A = malloc((size_t)need);
  h5mat_t *m = NULL;
  if (!A) {
    ooc_fmt(why, cap, "out of host memory for the in-core matrix");
    return NULL;
  }
  if (h5m_open(ctx, file, "/A", &m) != OOC_OK || h5m_read(m, 0, 0, n, n, A, n) != OOC_OK) {
    ooc_fmt(why, cap, "cannot read the matrix back: %s", ooc_ctx_error(ctx));
    free(A);
    A = NULL;
  }
  h5m_close(m);
  return A;
}


static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double med(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One oocsolve method on one device: --reps calls of ooc_invert on the HDF5 file. */
static void run_ours(bench_t *B, ooc_ctx_t *ctx, bench_row_t *r, const char *in) {
  const bopts_t *o = &B->o;
  int64_t n = r->n;
  double nf = (double)n;
  int cuda = !strcmp(r->device, "cuda");
  ooc_method_t meth = method_id(r->name);
  r->flops_effective = meth == OOC_METHOD_CHOL ? nf * nf * nf : 2 * nf * nf * nf;
  r->flops = r->flops_done = r->flops_effective;
  if (cuda && !B->m.gpu_usable) {
    bench_row_skip(r, "--device cuda: no usable GPU (%s)", B->m.gpu_name);
    return;
  }
  char out[PATH_CAP], outfile[PATH_CAP];
  ooc_fmt(outfile, sizeof outfile, "%s/X.h5", o->data);
  ooc_fmt(out, sizeof out, "%s:/inverse", outfile);
  double tr[BENCH_MAX_REPS], ts[BENCH_MAX_REPS], tw[BENCH_MAX_REPS], tk[BENCH_MAX_REPS],
      tt[BENCH_MAX_REPS];
  ooc_report_t rep;
  ooc_opts_t op;
  ooc_opts_default(&op);
  op.method = meth;
  op.device = cuda ? OOC_DEVICE_CUDA : OOC_DEVICE_CPU;
  op.tile = o->tile > 0 ? o->tile : 0;
  op.host_mem = o->host_mem > 0 ? o->host_mem
                : o->mem_frac > 0 ? (int64_t)(o->mem_frac * 8.0 * nf * nf)
                                  : 0;
  op.gpu_mem = cuda ? o->gpu_mem : 0;
  op.check = o->check == 1 ? OOC_CHECK_FULL : o->check == 2 ? OOC_CHECK_PROBE : OOC_CHECK_AUTO;
  op.force = 1;
  char scratch[PATH_CAP];
  ooc_fmt(scratch, sizeof scratch, "%s", o->data);
  op.scratch_dir = scratch;
  r->residual = 0;
  for (int k = 0; k < o->reps; k++) {
    if (interrupted) { /* a signal between two calls: ooc_invert would clear the library's flag */
      bench_row_error(r, "interrupted");
      r->residual = NAN;
      return;
    }
    bench_rss_reset();
    bench_devmon_t *mon = cuda ? bench_devmon_start() : NULL;
    ooc_status_t st = ooc_invert(ctx, in, out, &op, &rep);
    int64_t dpk = bench_devmon_stop(mon);
    int64_t rss = bench_rss_peak();
    unlink(outfile);
    ooc_fmt(r->ooc_status, sizeof r->ooc_status, "%s", ooc_status_str(st));
    /* the library's own report, kept as it wrote it */
    char *js = NULL;
    size_t jl = 0;
    FILE *mf = open_memstream(&js, &jl);
    if (mf) {
      ooc_report_json(&rep, st, st == OOC_OK ? "" : ooc_ctx_error(ctx), mf);
      fclose(mf);
      if (js && jl > 0 && jl < sizeof r->report_json) {
        while (jl && (js[jl - 1] == '\n')) js[--jl] = 0;
        memcpy(r->report_json, js, jl + 1);
      }
      free(js);
    }
    ooc_fmt(r->backend, sizeof r->backend, "%s", rep.backend);
    ooc_fmt(r->warnings, sizeof r->warnings, "%s", rep.warnings);
    r->tile = rep.tile;
    r->stripe = rep.stripe;
    r->host_budget = rep.host_budget;
    r->gpu_budget = op.gpu_mem;
    if (st != OOC_OK) {
      bench_row_error(r, "%s", ooc_ctx_error(ctx));
      r->residual = NAN;
      if (st == OOC_ERR_INTERRUPTED) interrupted = 1;
      return;
    }
    r->t[k] = rep.t_read + rep.t_compute + rep.t_spill + rep.t_write;
    r->tc[k] = rep.t_compute;
    tr[k] = rep.t_read, ts[k] = rep.t_spill, tw[k] = rep.t_write, tk[k] = rep.t_check,
    tt[k] = rep.t_total;
    /* the worst repetition's residual: every run must pass */
    r->residual = isnan(r->residual) || isnan(rep.residual) ? NAN : fmax(r->residual, rep.residual);
    ooc_fmt(r->check, sizeof r->check, "%s", rep.check);
    r->iterations = rep.iterations;
    r->host_peak = ooc_max64(r->host_peak, rep.host_peak);
    r->host_rss_peak = rss >= 0 ? ooc_max64(r->host_rss_peak, rss) : r->host_rss_peak;
    r->dev_peak = dpk >= 0 ? ooc_max64(r->dev_peak, dpk) : r->dev_peak;
    r->bytes_input = rep.bytes_input;
    r->bytes_spilled = rep.bytes_spilled;
    r->bytes_unspilled = rep.bytes_unspilled;
    r->bytes_output = rep.bytes_output;
    r->reps = k + 1;
  }
  bench_row_stats(r);
  r->t_read = med(tr, r->reps), r->t_spill = med(ts, r->reps), r->t_write = med(tw, r->reps);
  r->t_check = med(tk, r->reps), r->t_total = med(tt, r->reps);
  if (meth == OOC_METHOD_NEWTON || meth == OOC_METHOD_HYPER7) {
    /* GEMMs done: V_{k+1} = V_k (2I - A V_k) is 2 products a step, the order-7 step 9 */
    r->flops_done = (double)r->iterations * (meth == OOC_METHOD_NEWTON ? 2 : 9) * 2 * nf * nf * nf;
    r->flops = r->flops_done;
  }
  bench_row_verdict(r);
}

static void run_peer(bench_t *B, ooc_ctx_t *ctx, bench_row_t *r, const double *A, const char *why,
                     int f32, int check_full) {
  if (!A) {
    bench_row_skip(r, "%s", why);
    return;
  }
  if (!strncmp(r->name, "lapack", 6)) {
    bench_lapack_inverse(ctx, r, A, f32, B->o.reps, check_full);
  } else if (!B->m.gpu_usable) {
    bench_row_skip(r, "no usable GPU (%s)", B->m.gpu_name);
  } else {
    bench_cusolver_inverse(ctx, r, A, f32, B->o.reps, check_full);
  }
}

static int run_all(bench_t *B, ooc_ctx_t *ctx) {
  const bopts_t *o = &B->o;
  char datadir[PATH_CAP];
  ooc_fmt(datadir, sizeof datadir, "%s", o->data);
  if (mkdir_p(datadir) != 0) {
    fprintf(stderr, "oocbench: cannot create %s: %s\n", datadir, strerror(errno));
    return 5;
  }
  static const int peer_bits[] = {P_LAPACK_GETRI, P_LAPACK_POTRI, P_CUSOLVER_GETRS,
                                  P_CUSOLVER_POTRI};
  static const char *peer_names[] = {"lapack-getri", "lapack-potri", "cusolver-getrs",
                                     "cusolver-potri"};
  for (int d = 0; d < o->ndtypes && !interrupted; d++) {
    const char *dt = o->dtypes[d];
    int f32 = !strcmp(dt, "f32");
    for (int s = 0; s < o->nsizes && !interrupted; s++) {
      int64_t n = o->sizes[s];
      int check_full = o->check == 1 || (o->check == 0 && n <= 2048);
      /* the ceilings: one per device, measured now, beside the rows they bound */
      if (o->peers & P_GEMM) {
        for (int dev = 0; dev < 2; dev++) {
          bench_row_t *r = new_row(B);
          if (!r) return 6;
          bench_row_init(r, "gemm", "ceiling", dev ? "cuda" : "cpu", "any", dt, n);
          if (!out_of_time(B, r)) {
            r->gemm_n = ooc_min64(n, dev ? GPU_GEMM_CAP : CPU_GEMM_CAP);
            bench_rss_reset();
            if (!dev) bench_cpu_gemm(ctx, r, f32, o->reps);
            else if (!B->m.gpu_usable) bench_row_skip(r, "no usable GPU (%s)", B->m.gpu_name);
            else bench_gpu_gemm(ctx, r, f32, o->reps);
            r->host_rss_peak = bench_rss_peak();
          }
          finish_row(B, r);
        }
      }
      for (int t = 0; t < o->ntypes && !interrupted; t++) {
        const char *ty = o->types[t];
        char file[PATH_CAP], spec[PATH_CAP + 8];
        ooc_fmt(file, sizeof file, "%s/A_%s_%lld_%s.h5", datadir, ty, (long long)n, dt);
        ooc_fmt(spec, sizeof spec, "%s:/A", file);
        char gen_err[1024] = "";
        double tg = ooc_now();
        int64_t chunk = ooc_min64(n, o->tile > 0 ? o->tile : 1024);
        /* past --max-time every row of this matrix is skipped: do not spend time making it */
        int late = o->max_time > 0 && tg - B->t_start > o->max_time;
        if (!late) {
          if (generate(ctx, file, ty, f32, n, o->seed, chunk) != OOC_OK)
            ooc_fmt(gen_err, sizeof gen_err, "generating %s failed: %s", file, ooc_ctx_error(ctx));
          else
            fprintf(stderr, "oocbench: generated %s (%s, n = %lld, %s) in %.2f s\n", file, ty,
                    (long long)n, dt, ooc_now() - tg);
        }
        /* oocsolve's methods */
        for (int mi = 0; mi < o->nmethods && !interrupted; mi++)
          for (int dv = 0; dv < o->ndevices && !interrupted; dv++) {
            bench_row_t *r = new_row(B);
            if (!r) return 6;
            bench_row_init(r, o->methods[mi], "ooc", o->devices[dv], ty, dt, n);
            if (spd_only(r->name) && !is_spd_type(ty))
              bench_row_skip(r, "%s needs an SPD matrix; type %s is not (use matern)", r->name, ty);
            else if (gen_err[0])
              bench_row_error(r, "%s", gen_err);
            else if (!out_of_time(B, r))
              run_ours(B, ctx, r, spec);
            finish_row(B, r);
          }
        /* the in-core peers, on the same numbers read back from the file */
        double *A = NULL;
        char why[512] = "";
        int want = 0;
        for (int p = 0; p < 4; p++)
          if ((o->peers & peer_bits[p]) && !(spd_only(peer_names[p]) && !is_spd_type(ty)))
            want = 1;
        if (want && !gen_err[0] && !late) A = load_matrix(ctx, file, n, why, sizeof why);
        if (gen_err[0]) ooc_fmt(why, sizeof why, "%s", gen_err);
        for (int p = 0; p < 4 && !interrupted; p++) {
          if (!(o->peers & peer_bits[p])) continue;
          bench_row_t *r = new_row(B);
          if (!r) {
            free(A);
            return 6;
          }
          bench_row_init(r, peer_names[p], "peer", p < 2 ? "cpu" : "cuda", ty, dt, n);
          if (spd_only(r->name) && !is_spd_type(ty)) {
            bench_row_skip(r, "%s needs an SPD matrix; type %s is not (use matern)", r->name, ty);
          } else if (!out_of_time(B, r)) {
            bench_rss_reset();
            run_peer(B, ctx, r, A, why, f32, check_full);
            r->host_rss_peak = bench_rss_peak();
          }
          finish_row(B, r);
        }
        free(A);
        if (!o->keep && !late) unlink(file);
      }
    }
  }
  return interrupted ? 130 : 0;
}

/* ---- the Markdown table (what docs/PERFORMANCE.md shows) ------------------------------------ */

static void mib(FILE *f, int64_t b) {
  if (b >= 0) fprintf(f, " %.1f |", (double)b / 1048576.0);
  else fputs(" - |", f);
}

static const bench_row_t *find_ok(const bench_t *B, const char *name, const char *type,
                                  const char *dtype, int64_t n) {
  for (int i = 0; i < B->nrows; i++) {
    const bench_row_t *r = &B->rows[i];
    if (!strcmp(r->name, name) && !strcmp(r->type, type) && !strcmp(r->dtype, dtype) &&
        r->n == n && !strcmp(r->status, "ok"))
      return r;
  }
  return NULL;
}

static int write_table(bench_t *B) {
  char path[PATH_CAP];
  ooc_fmt(path, sizeof path, "%s/table.md", B->o.out);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "| method / peer | device (backend) | dtype | type | n | status | time s (min-max) | "
             "compute s | TFLOP/s | residual | disk read / written MiB | spilled MiB | host peak "
             "MiB | RSS peak MiB | device peak MiB | note |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < B->nrows; i++) {
    const bench_row_t *r = &B->rows[i];
    fprintf(f, "| %s | %s (%s) | %s | %s | %lld | %s |", r->name, r->device,
            r->backend[0] ? r->backend : "-", r->dtype, r->type, (long long)r->n, r->status);
    if (isfinite(r->t_med))
      fprintf(f, " %.3g (%.3g-%.3g) | %.3g | %.3g |", r->t_med, r->t_min, r->t_max, r->tc_med,
              tflops_of(r->flops, r->t_med));
    else
      fputs(" - | - | - |", f);
    if (isfinite(r->residual)) fprintf(f, " %.2g |", r->residual);
    else fputs(" - |", f);
    if (r->bytes_input >= 0)
      fprintf(f, " %.1f / %.1f |", (double)r->bytes_input / 1048576.0,
              (double)r->bytes_output / 1048576.0);
    else
      fputs(" - |", f);
    mib(f, r->bytes_spilled);
    mib(f, r->host_peak);
    mib(f, r->host_rss_peak);
    mib(f, r->dev_peak);
    char note[1200] = "";
    if (!strcmp(r->kind, "ceiling") && r->gemm_n > 0 && r->gemm_n != r->n)
      ooc_fmt(note, sizeof note, "rate measured at n = %lld", (long long)r->gemm_n);
    else if (r->iterations > 0)
      ooc_fmt(note, sizeof note, "%d iterations; effective %.3g TFLOP/s", r->iterations,
              tflops_of(r->flops_effective, r->t_med));
    else if (r->error[0])
      ooc_fmt(note, sizeof note, "%s", r->error);
    for (char *p = note; *p; p++)
      if (*p == '|' || *p == '\n') *p = ' ';
    fprintf(f, " %s |\n", note);
  }
  /* The ratios to quote: oocsolve's time over each peer's, measured in the same run on the same
   * matrix, and its rate as a fraction of the device's GEMM ceiling. */
  fprintf(f, "\n| method | device | dtype | type | n | time / LAPACK (best / best) | compute / "
             "LAPACK | time / cuSOLVER (best / best) | compute / cuSOLVER | TFLOP/s / GEMM "
             "ceiling |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < B->nrows; i++) {
    const bench_row_t *r = &B->rows[i];
    if (strcmp(r->kind, "ooc") != 0 || strcmp(r->status, "ok") != 0) continue;
    int spd = !strcmp(r->name, "chol");
    const bench_row_t *lp = find_ok(B, spd ? "lapack-potri" : "lapack-getri", r->type, r->dtype, r->n);
    const bench_row_t *cu = find_ok(B, spd ? "cusolver-potri" : "cusolver-getrs", r->type, r->dtype, r->n);
    const char *bk = !strcmp(r->backend, "cuda") ? "cuda" : "cpu";
    const bench_row_t *ce = NULL;
    for (int k = 0; k < B->nrows; k++)
      if (!strcmp(B->rows[k].kind, "ceiling") && !strcmp(B->rows[k].status, "ok") &&
          !strcmp(B->rows[k].device, bk) && !strcmp(B->rows[k].dtype, r->dtype) && B->rows[k].n == r->n)
        ce = &B->rows[k];
    fprintf(f, "| %s | %s | %s | %s | %lld |", r->name, r->backend, r->dtype, r->type, (long long)r->n);
    const bench_row_t *pe[2] = {lp, cu};
    for (int k = 0; k < 2; k++) {
      if (pe[k])
        fprintf(f, " %.2f (%.2f) | %.2f |", r->t_med / pe[k]->t_med, r->t_min / pe[k]->t_min,
                r->tc_med / pe[k]->t_med);
      else fputs(" - | - |", f);
    }
    if (ce) fprintf(f, " %.2f (%s) |\n", tflops_of(r->flops, r->t_med) / tflops_of(ce->flops, ce->t_med), bk);
    else fputs(" - |\n", f);
  }
  int bad = ferror(f);
  return fclose(f) != 0 || bad ? -1 : 0;
}

/* ---- plots --------------------------------------------------------------------------------- */

/* One data file per series (type, name, device, dtype): n, median, min, max time, TFLOP/s.
 * Ceiling series (per device and dtype): n, the time of 2n^3 flops at the measured rate, rate. */
typedef struct {
  char file[256], title[128], type[16];
  int ceiling;
} series_t;

static int write_series(bench_t *B, series_t *ser, int cap) {
  int ns = 0;
  for (int i = 0; i < B->nrows; i++) {
    const bench_row_t *r = &B->rows[i];
    if (strcmp(r->status, "ok") != 0) continue;
    int ceil = !strcmp(r->kind, "ceiling");
    char file[256];
    if (ceil) ooc_fmt(file, sizeof file, "plot/gemm_%s_%s.dat", r->device, r->dtype);
    else ooc_fmt(file, sizeof file, "plot/%s__%s_%s_%s.dat", r->type, r->name, r->device, r->dtype);
    int k;
    for (k = 0; k < ns; k++)
      if (!strcmp(ser[k].file, file)) break;
    if (k == ns) {
      if (ns == cap) continue;
      series_t *s = &ser[ns++];
      memset(s, 0, sizeof *s);
      ooc_fmt(s->file, sizeof s->file, "%s", file);
      ooc_fmt(s->type, sizeof s->type, "%s", r->type);
      s->ceiling = ceil;
      if (ceil)
        ooc_fmt(s->title, sizeof s->title, "%s ceiling (%s, %s)", r->dtype[1] == '3' ? "SGEMM" : "DGEMM",
                 r->device, r->dtype);
      else if (r->backend[0] && strcmp(r->kind, "ooc") == 0 && strcmp(r->backend, r->device) != 0)
        ooc_fmt(s->title, sizeof s->title, "%s (%s, ran on %s, %s)", r->name, r->device, r->backend,
                r->dtype); /* e.g. a method the GPU backend does not have yet */
      else
        ooc_fmt(s->title, sizeof s->title, "%s (%s, %s)", r->name, r->device, r->dtype);
      char path[PATH_CAP];
      ooc_fmt(path, sizeof path, "%s/%s", B->o.out, file);
      FILE *f = fopen(path, "w");
      if (!f) return -1;
      fprintf(f, "# %s: n time_median_s time_min_s time_max_s tflops\n", s->title);
      fclose(f);
    }
    char path[PATH_CAP];
    ooc_fmt(path, sizeof path, "%s/%s", B->o.out, file);
    FILE *f = fopen(path, "a");
    if (!f) return -1;
    double nf = (double)r->n, tf = tflops_of(r->flops, r->t_med);
    if (ceil) /* the rate measured at gemm_n, applied to 2n^3 */
      fprintf(f, "%lld %.6g %.6g %.6g %.6g\n", (long long)r->n, 2 * nf * nf * nf / (tf * 1e12),
              2 * nf * nf * nf / (tf * 1e12), 2 * nf * nf * nf / (tf * 1e12), tf);
    else
      fprintf(f, "%lld %.6g %.6g %.6g %.6g\n", (long long)r->n, r->t_med, r->t_min, r->t_max, tf);
    fclose(f);
  }
  return ns;
}

static void write_plot_scripts(bench_t *B, const series_t *ser, int ns) {
  char path[PATH_CAP];
  const bopts_t *o = &B->o;
  ooc_fmt(path, sizeof path, "%s/plot.gp", o->out);
  FILE *g = fopen(path, "w");
  ooc_fmt(path, sizeof path, "%s/plot.py", o->out);
  FILE *p = fopen(path, "w");
  if (g) {
    fputs("# gnuplot script written by oocbench; run in this directory: gnuplot plot.gp\n"
          "set terminal pngcairo size 1000,800 noenhanced font \",11\"\n"
          "set datafile commentschars \"#\"\nset logscale x 2\nset grid\n"
          "set key below\nset xlabel \"n\"\n",
          g);
  }
  if (p) {
    fputs("# matplotlib script written by oocbench; run in this directory: python3 plot.py\n"
          "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
          "def load(f):\n    rows = [l.split() for l in open(f) if l.strip() and l[0] != '#']\n"
          "    return [[float(x) for x in r] for r in rows]\n",
          p);
  }
  for (int t = 0; t < o->ntypes; t++) {
    const char *ty = o->types[t];
    for (int which = 0; which < 2; which++) { /* 0 time, 1 TFLOP/s */
      const char *png = which ? "tflops" : "time";
      if (g) {
        fprintf(g, "\nset output \"%s_%s.png\"\n", png, ty);
        fprintf(g, "set title \"oocbench: inverse of %s matrices, %s (median of %d%s)\"\n", ty,
                which ? "TFLOP/s" : "time", o->reps, which ? "" : "; bars: min-max");
        fprintf(g, which ? "unset logscale y\nset yrange [0:*]\nset ylabel \"TFLOP/s\"\n"
                         : "set logscale y\nset autoscale y\nset ylabel \"seconds\"\n");
        fputs("plot ", g);
      }
      if (p) fprintf(p, "\nplt.figure(figsize=(10, 8))\n");
      int first = 1;
      for (int k = 0; k < ns; k++) {
        const series_t *s = &ser[k];
        if (!s->ceiling && strcmp(s->type, ty) != 0) continue;
        char title[160];
        if (s->ceiling && !which) ooc_fmt(title, sizeof title, "2n^3 at the %s", s->title);
        else ooc_fmt(title, sizeof title, "%s", s->title);
        if (g) {
          if (!first) fputs(", \\\n     ", g);
          if (s->ceiling)
            fprintf(g, "\"%s\" using 1:%d with lines dashtype 2 linewidth 2 title \"%s\"", s->file,
                    which ? 5 : 2, title);
          else if (which)
            fprintf(g, "\"%s\" using 1:5 with linespoints linewidth 2 title \"%s\"", s->file, title);
          else
            fprintf(g, "\"%s\" using 1:2:3:4 with yerrorlines linewidth 2 title \"%s\"", s->file,
                    title);
        }
        if (p) {
          fprintf(p, "d = load('%s')\n", s->file);
          if (s->ceiling)
            fprintf(p, "plt.plot([r[0] for r in d], [r[%d] for r in d], '--', lw=2, label='%s')\n",
                    which ? 4 : 1, title);
          else if (which)
            fprintf(p, "plt.plot([r[0] for r in d], [r[4] for r in d], 'o-', lw=2, label='%s')\n",
                    title);
          else
            fprintf(p, "plt.errorbar([r[0] for r in d], [r[1] for r in d], yerr=[[r[1]-r[2] for r "
                       "in d], [r[3]-r[1] for r in d]], fmt='o-', lw=2, capsize=3, label='%s')\n",
                    title);
        }
        first = 0;
      }
      if (g) {
        if (first) fputs("NaN notitle", g);
        fputc('\n', g);
      }
      if (p) {
        fprintf(p, "plt.xscale('log', base=2)\n%s", which ? "plt.ylim(bottom=0)\n" : "plt.yscale('log')\n");
        fputs("plt.xticks([", p);
        for (int k = 0; k < o->nsizes; k++) fprintf(p, "%s%lld", k ? ", " : "", (long long)o->sizes[k]);
        fputs("], [", p);
        for (int k = 0; k < o->nsizes; k++) fprintf(p, "%s'%lld'", k ? ", " : "", (long long)o->sizes[k]);
        fputs("])\n", p);
        fprintf(p, "plt.xlabel('n')\nplt.ylabel('%s')\nplt.grid(True, which='both', alpha=0.3)\n",
                which ? "TFLOP/s" : "seconds");
        fprintf(p, "plt.title('oocbench: inverse of %s matrices, %s (median of %d)')\n", ty,
                which ? "TFLOP/s" : "time", o->reps);
        fprintf(p, "plt.legend(loc='upper center', bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8)\n"
                   "plt.tight_layout()\nplt.savefig('%s_%s.png', dpi=100)\nplt.close()\n",
                png, ty);
      }
    }
  }
  if (g) fclose(g);
  if (p) fclose(p);
}

static void make_plots(bench_t *B) {
  char cmd[2 * PATH_CAP], q[PATH_CAP + 64], path[PATH_CAP];
  ooc_fmt(path, sizeof path, "%s/plot", B->o.out);
  if (mkdir_p(path) != 0) {
    ooc_fmt(B->plots, sizeof B->plots, "skipped: cannot create %s: %s", path, strerror(errno));
    return;
  }
  series_t ser[256];
  int ns = write_series(B, ser, 256);
  if (ns < 0) {
    ooc_fmt(B->plots, sizeof B->plots, "skipped: cannot write the data files in %s", path);
    return;
  }
  write_plot_scripts(B, ser, ns);
  shell_quote(q, sizeof q, B->o.out);
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    ooc_fmt(cmd, sizeof cmd, "cd %s && gnuplot plot.gp", q);
    int rc = system(cmd);
    if (rc == 0) ooc_fmt(B->plots, sizeof B->plots, "gnuplot: plot.gp");
    else ooc_fmt(B->plots, sizeof B->plots, "failed: gnuplot plot.gp exited with %d", rc);
  } else if (system("python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
    ooc_fmt(cmd, sizeof cmd, "cd %s && python3 plot.py", q);
    int rc = system(cmd);
    if (rc == 0) ooc_fmt(B->plots, sizeof B->plots, "matplotlib: plot.py");
    else ooc_fmt(B->plots, sizeof B->plots, "failed: python3 plot.py exited with %d", rc);
  } else {
    ooc_fmt(B->plots, sizeof B->plots,
             "skipped: neither gnuplot nor python3 with matplotlib was found (apt-get install "
             "gnuplot-nox, then run gnuplot plot.gp in the output directory)");
  }
  fprintf(stderr, "oocbench: plots %s\n", B->plots);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  static bench_t Bs;
  bench_t *B = &Bs;
  bopts_t *o = &B->o;
  int set = 0;
  o->reps = 3;
  o->out = "bench";
  o->seed = 1;
  o->peers = P_ALL;
  {
    size_t k = 0;
    for (int i = 0; i < argc && k + 2 < sizeof B->cmdline; i++)
      k += (size_t)snprintf(B->cmdline + k, sizeof B->cmdline - k, "%s%s", i ? " " : "", argv[i]);
  }
  static const char *const methods_ok[] = {"gj", "chol", "newton", "hyper7", NULL};
  static const char *const types_ok[] = {"random", "diagdom", "matern", "cond", NULL};
  static const char *const dtypes_ok[] = {"f64", "f32", NULL};
  static const char *const devices_ok[] = {"cpu", "cuda", "auto", NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(USAGE, stdout);
      return 0;
    }
    if (!strcmp(a, "--version")) {
      printf("oocbench %s\n", ooc_version());
      return 0;
    }
    if (!strcmp(a, "--quick")) {
      o->quick = 1;
      continue;
    }
    if (!strcmp(a, "--keep")) {
      o->keep = 1;
      continue;
    }
    if (!strcmp(a, "--no-plots")) {
      o->no_plots = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0) return usage_error("unexpected argument '%s'", a);
    if (!v) return usage_error("%s needs a value", a);
    i++;
    int64_t x;
    if (!strcmp(a, "--sizes")) {
      if (parse_sizes(v, o)) return 2;
      set |= S_SIZES;
    } else if (!strcmp(a, "--methods")) {
      if (parse_words(a, v, methods_ok, &o->methods[0][0], 16, MAXL, &o->nmethods)) return 2;
      set |= S_METHODS;
    } else if (!strcmp(a, "--peers")) {
      if (parse_peers(v, &o->peers)) return 2;
      set |= S_PEERS;
    } else if (!strcmp(a, "--types")) {
      if (parse_words(a, v, types_ok, &o->types[0][0], 16, MAXL, &o->ntypes)) return 2;
      set |= S_TYPES;
    } else if (!strcmp(a, "--dtypes")) {
      if (parse_words(a, v, dtypes_ok, &o->dtypes[0][0], 8, 2, &o->ndtypes)) return 2;
      set |= S_DTYPES;
    } else if (!strcmp(a, "--device")) {
      if (parse_words(a, v, devices_ok, &o->devices[0][0], 8, 2, &o->ndevices)) return 2;
      set |= S_DEVICES;
    } else if (!strcmp(a, "--reps")) {
      if (cli_int64("oocbench", a, v, 1, &x)) return 2;
      if (x > BENCH_MAX_REPS) return usage_error("--reps: at most %d", BENCH_MAX_REPS);
      o->reps = (int)x;
      set |= S_REPS;
    } else if (!strcmp(a, "--out")) {
      o->out = v;
    } else if (!strcmp(a, "--data")) {
      o->data = v;
    } else if (!strcmp(a, "--tile")) {
      if (cli_int64("oocbench", a, v, 1, &o->tile)) return 2;
      set |= S_TILE;
    } else if (!strcmp(a, "--host-mem")) {
      if (cli_size("oocbench", a, v, &o->host_mem)) return 2;
    } else if (!strcmp(a, "--gpu-mem")) {
      if (cli_size("oocbench", a, v, &o->gpu_mem)) return 2;
    } else if (!strcmp(a, "--mem-frac")) {
      char *end;
      o->mem_frac = strtod(v, &end);
      if (end == v || *end || !(o->mem_frac > 0) || !isfinite(o->mem_frac))
        return usage_error("--mem-frac: '%s' is not a number > 0", v);
    } else if (!strcmp(a, "--check")) {
      if (!strcmp(v, "auto")) o->check = 0;
      else if (!strcmp(v, "full")) o->check = 1;
      else if (!strcmp(v, "probe")) o->check = 2;
      else return usage_error("--check: '%s' is not auto, full or probe", v);
    } else if (!strcmp(a, "--seed")) {
      if (cli_int64("oocbench", a, v, 0, &o->seed)) return 2;
    } else if (!strcmp(a, "--max-time")) {
      char *end;
      o->max_time = strtod(v, &end);
      if (end == v || *end || !(o->max_time > 0)) return usage_error("--max-time: '%s' is not > 0", v);
    } else if (!strcmp(a, "--preset")) {
      if (strcmp(v, "gj-thesis") && strcmp(v, "climate"))
        return usage_error("--preset: '%s' is not gj-thesis or climate", v);
      o->preset = v;
    } else {
      return usage_error("unknown option %s", a);
    }
  }
  if (o->host_mem > 0 && o->mem_frac > 0) return usage_error("--host-mem and --mem-frac exclude each other");
  if (o->preset && o->quick) return usage_error("--quick and --preset exclude each other");
  if (o->quick) apply_preset(o, "quick", set);
  if (o->preset) apply_preset(o, o->preset, set);
  if (!o->nsizes) return usage_error("--sizes is required (or --quick, or --preset)");
  static char datadef[PATH_CAP];
  if (!o->data) {
    ooc_fmt(datadef, sizeof datadef, "%s/data", o->out);
    o->data = datadef;
  }
  if (!o->nmethods) parse_words("", "gj,chol", NULL, &o->methods[0][0], 16, MAXL, &o->nmethods);
  if (!o->ntypes) parse_words("", "random,matern", NULL, &o->types[0][0], 16, MAXL, &o->ntypes);
  if (!o->ndtypes) parse_words("", "f64", NULL, &o->dtypes[0][0], 8, 2, &o->ndtypes);
  if (!o->ndevices) parse_words("", "auto", NULL, &o->devices[0][0], 8, 2, &o->ndevices);

  B->t_start = ooc_now();
  bench_machine_cpu(&B->m);
  bench_gpu_describe(&B->m);
  /* auto = the GPU when usable (the library's rule), decided once so every row says which */
  for (int i = 0; i < o->ndevices; i++)
    if (!strcmp(o->devices[i], "auto")) ooc_fmt(o->devices[i], 8, "%s", B->m.gpu_usable ? "cuda" : "cpu");
  if (o->ndevices == 2 && !strcmp(o->devices[0], o->devices[1])) o->ndevices = 1;
  fprintf(stderr, "oocbench %s on %s (%d cores, OpenBLAS %d threads), GPU: %s\n", ooc_version(),
          B->m.cpu_model, B->m.cores, B->m.blas_threads, B->m.gpu_name);

  if (mkdir_p(o->out) != 0) {
    fprintf(stderr, "oocbench: cannot create the output directory %s: %s\n", o->out, strerror(errno));
    return 5;
  }
  ooc_fmt(B->plots, sizeof B->plots, "pending");
  if (write_json(B) != 0) {
    fprintf(stderr, "oocbench: cannot write %s/bench.json: %s\n", o->out, strerror(errno));
    return 5;
  }
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) {
    fprintf(stderr, "oocbench: out of memory\n");
    return 6;
  }
  g_ctx = ctx;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  int rc = run_all(B, ctx);
  bench_loadavg(B->m.loadavg_end, sizeof B->m.loadavg_end);
  if (o->no_plots) ooc_fmt(B->plots, sizeof B->plots, "skipped: --no-plots");
  else if (rc == 0 || rc == 130) make_plots(B); /* interrupted: plot the rows it measured */
  else ooc_fmt(B->plots, sizeof B->plots, "skipped: the run stopped early");
  if (write_table(B) != 0) fprintf(stderr, "oocbench: warning: cannot write %s/table.md\n", o->out);
  if (write_json(B) != 0 && rc == 0) {
    fprintf(stderr, "oocbench: cannot write %s/bench.json: %s\n", o->out, strerror(errno));
    rc = 5;
  }
  if (!o->keep && o->data == datadef) rmdir(o->data); /* ours, and only if empty */
  int bad = 0;
  for (int i = 0; i < B->nrows; i++)
    if (!strcmp(B->rows[i].status, "fail") || !strcmp(B->rows[i].status, "error")) bad++;
  fprintf(stderr, "oocbench: %d rows (%d failed or errored) in %.1f s; wrote %s/bench.json\n",
          B->nrows, bad, ooc_now() - B->t_start, o->out);
  free(B->rows);
  ooc_ctx_destroy(ctx);
  if (rc) return rc;
  return bad ? 1 : 0;
}
