/*
 * bench_peers.c: oocbench's CPU side. LAPACK on OpenBLAS in core (the peers), the cblas GEMM
 * ceiling, the residual of an in-memory inverse through the library's own check code, the row
 * helpers and the machine description. See bench.h for the contract (no peer failure crashes).
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "bench.h"
#include "kernels/ops.h"
#include "solvers/check.h"

/* ---- rows ---------------------------------------------------------------------------------- */

void bench_row_init(bench_row_t *r, const char *name, const char *kind, const char *device,
                    const char *type, const char *dtype, int64_t n) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->kind, sizeof r->kind, "%s", kind);
  snprintf(r->device, sizeof r->device, "%s", device);
  snprintf(r->type, sizeof r->type, "%s", type);
  snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
  snprintf(r->status, sizeof r->status, "ok");
  snprintf(r->check, sizeof r->check, "none");
  r->n = n;
  r->tile = r->stripe = -1;
  r->t_med = r->t_min = r->t_max = r->tc_med = NAN;
  r->t_read = r->t_spill = r->t_write = r->t_check = r->t_total = NAN;
  r->t_h2d = r->t_d2h = NAN;
  r->flops = r->flops_done = r->flops_effective = NAN;
  r->residual = NAN;
  r->threshold = 30;
  r->bytes_input = r->bytes_spilled = r->bytes_unspilled = r->bytes_output = -1;
  r->bytes_h2d = r->bytes_d2h = -1;
  r->host_peak = r->host_rss_peak = r->dev_peak = -1;
  r->gemm_n = -1;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(const double *v, int n) {
  double s[BENCH_MAX_REPS];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_dbl);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

void bench_row_stats(bench_row_t *r) {
  if (r->reps <= 0) return;
  r->t_med = median_of(r->t, r->reps);
  r->t_min = r->t_max = r->t[0];
  for (int i = 1; i < r->reps; i++) {
    r->t_min = fmin(r->t_min, r->t[i]);
    r->t_max = fmax(r->t_max, r->t[i]);
  }
  r->tc_med = median_of(r->tc, r->reps);
}

static void set_reason(bench_row_t *r, const char *status, const char *fmt, va_list ap) {
  snprintf(r->status, sizeof r->status, "%s", status);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
}

void bench_row_skip(bench_row_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_reason(r, "skipped", fmt, ap);
  va_end(ap);
}

void bench_row_error(bench_row_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_reason(r, "error", fmt, ap);
  va_end(ap);
}

void bench_row_verdict(bench_row_t *r) {
  if (strcmp(r->status, "ok") != 0) return;
  if (!(r->residual < r->threshold)) { /* NaN fails */
    snprintf(r->status, sizeof r->status, "fail");
    snprintf(r->error, sizeof r->error, "residual ratio %.3g is not below the threshold %g",
             r->residual, r->threshold);
  }
}

/* ---- machine ------------------------------------------------------------------------------- */

static void read_cpu_model(char *buf, size_t cap) {
  snprintf(buf, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *p = strchr(line, ':');
      if (p) {
        p++;
        while (*p == ' ' || *p == '\t') p++;
        p[strcspn(p, "\n")] = 0;
        snprintf(buf, cap, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

/* A field of /proc/meminfo or /proc/self/status in kB, as bytes; -1 if absent. */
static int64_t proc_kb(const char *file, const char *key) {
  FILE *f = fopen(file, "r");
  if (!f) return -1;
  char line[256];
  int64_t v = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, key, kl) && line[kl] == ':') {
      v = (int64_t)strtoll(line + kl + 1, NULL, 10) * 1024;
      break;
    }
  }
  fclose(f);
  return v;
}

int64_t bench_mem_available(void) {
  int64_t v = proc_kb("/proc/meminfo", "MemAvailable");
  return v > 0 ? v : ooc_physical_memory() / 2;
}

void bench_loadavg(char *buf, size_t cap) {
  buf[0] = 0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  double a, b, c;
  if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, cap, "%.2f %.2f %.2f", a, b, c);
  fclose(f);
}

void bench_machine_cpu(bench_machine_t *m) {
  bench_loadavg(m->loadavg_start, sizeof m->loadavg_start);
  read_cpu_model(m->cpu_model, sizeof m->cpu_model);
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  m->cores = c > 0 ? (int)c : 0;
  m->blas_threads = openblas_get_num_threads();
  const char *cfg = openblas_get_config();
  snprintf(m->blas_config, sizeof m->blas_config, "%s", cfg ? cfg : "");
  m->memory = ooc_physical_memory();
  m->mem_available = bench_mem_available();
  if (gethostname(m->hostname, sizeof m->hostname) != 0) snprintf(m->hostname, sizeof m->hostname, "?");
  m->hostname[sizeof m->hostname - 1] = 0;
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Writing "5" to clear_refs resets VmHWM (Linux >= 4.0): then VmHWM is the peak of this row
 * alone. Where that is refused, the process-wide peak would mislead, so none is reported. */
static int g_rss_ok;
void bench_rss_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  g_rss_ok = f && fputs("5", f) >= 0;
  if (f && fclose(f) != 0) g_rss_ok = 0;
}
int64_t bench_rss_peak(void) { return g_rss_ok ? proc_kb("/proc/self/status", "VmHWM") : -1; }

/* ---- checks -------------------------------------------------------------------------------- */

typedef struct {
  const double *M;
  int64_t n;
} memsrc_t;

static ooc_status_t mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *dst, int64_t ld) {
  const memsrc_t *s = self;
  for (int64_t j = 0; j < nc; j++)
    memcpy(dst + j * ld, s->M + r0 + (c0 + j) * s->n, (size_t)nr * sizeof(double));
  return OOC_OK;
}

double bench_check_inverse(ooc_ctx_t *ctx, int64_t n, const double *A, const double *X, int full,
                           double eps) {
  memsrc_t ma = {A, n}, mx = {X, n};
  ooc_source_t sa = {&ma, mem_read, NULL, NULL}, sx = {&mx, mem_read, NULL, NULL};
  /* as wide as the matrix for small n (one big GEMM), 1 GiB of buffers at most for large n */
  int64_t mem = (int64_t)fmin(1073741824.0, 40.0 * (double)n * (double)n);
  double ratio = NAN, na, nx;
  if (check_inverse(ctx, ooc_ops_cpu(), n, ooc_min64(n, 1024), &sa, &sx, full, eps, mem, &ratio,
                    &na, &nx) != OOC_OK)
    return NAN;
  return ratio;
}

static double norm1(int64_t n, const double *A) {
  double m = 0;
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += fabs(A[i + j * n]);
    if (isnan(s) || s > m) m = s;
    if (isnan(m)) return NAN;
  }
  return m;
}

static void matvec(int64_t n, const double *A, const double *x, double *y) {
  memset(y, 0, (size_t)n * sizeof *y);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) y[i] += A[i + j * n] * x[j];
}

double bench_check_gemm(int64_t n, const double *A, const double *B, const double *C, double eps) {
  double *t = calloc((size_t)n, sizeof *t), *u = malloc((size_t)n * sizeof *u);
  double *v = malloc((size_t)n * sizeof *v), *w = malloc((size_t)n * sizeof *w);
  double r = NAN;
  if (t && u && v && w) {
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (int64_t i = 0; i < n; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      t[i] = (s >> 63) ? 1.0 : -1.0;
    }
    matvec(n, B, t, u);
    matvec(n, A, u, v);
    matvec(n, C, t, w);
    double d = 0;
    for (int64_t i = 0; i < n; i++) d += fabs(w[i] - v[i]);
    r = d / ((double)n * eps * norm1(n, A) * norm1(n, B) * (double)n);
  }
  free(t);
  free(u);
  free(v);
  free(w);
  return r;
}

/* ---- LAPACK peers -------------------------------------------------------------------------- */

static const char *fmt_b(int64_t b, char *buf, size_t cap) { return ooc_fmt_bytes(b, buf, cap); }

/* Fits in the memory the machine has free now (10% margin)? Otherwise skip, saying so. */
static int host_fits(bench_row_t *row, int64_t need, const char *what) {
  int64_t avail = bench_mem_available();
  if ((double)need <= 0.9 * (double)avail) return 1;
  char a[32], b[32];
  bench_row_skip(row, "does not fit in host memory: %s needs %s more, %s available", what,
                 fmt_b(need, a, sizeof a), fmt_b(avail, b, sizeof b));
  return 0;
}

int bench_lapack_inverse(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32, int reps,
                         int check_full) {
  int64_t n = row->n, nn = n * n;
  int potri = !strcmp(row->name, "lapack-potri");
  snprintf(row->backend, sizeof row->backend, "openblas");
  double nf = (double)n;
  row->flops = row->flops_done = row->flops_effective = potri ? nf * nf * nf : 2 * nf * nf * nf;
  if (n > 46340) {
    bench_row_skip(row, "LP64 LAPACK: n = %lld has n^2 >= 2^31 elements, beyond its 32-bit "
                        "indexing", (long long)n);
    return 0;
  }
  int64_t need = nn * 8 + (f32 ? nn * 4 : 0) + (int64_t)fmin(1073741824.0, 40.0 * nf * nf);
  if (!host_fits(row, need, "the in-core copy and the check")) return 0;
  double *X = malloc((size_t)nn * sizeof *X);
  float *S = f32 ? malloc((size_t)nn * sizeof *S) : NULL;
  lapack_int *ipiv = malloc((size_t)n * sizeof *ipiv);
  if (!X || (f32 && !S) || !ipiv) {
    bench_row_skip(row, "out of host memory for the in-core copy");
    goto done;
  }
  row->host_peak = nn * 8 /* A */ + nn * 8 + (f32 ? nn * 4 : 0);
  lapack_int ln = (lapack_int)n, info = 0;
  const char *step = "";
  for (int r = 0; r < reps; r++) {
    if (f32)
      for (int64_t i = 0; i < nn; i++) S[i] = (float)A[i];
    else
      memcpy(X, A, (size_t)nn * sizeof *X);
    double t0 = ooc_now();
    if (potri) {
      step = f32 ? "spotrf" : "dpotrf";
      info = f32 ? LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', ln, S, ln)
                 : LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', ln, X, ln);
      if (!info) {
        step = f32 ? "spotri" : "dpotri";
        info = f32 ? LAPACKE_spotri_work(LAPACK_COL_MAJOR, 'L', ln, S, ln)
                   : LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', ln, X, ln);
      }
    } else {
      step = f32 ? "sgetrf" : "dgetrf";
      info = f32 ? LAPACKE_sgetrf(LAPACK_COL_MAJOR, ln, ln, S, ln, ipiv)
                 : LAPACKE_dgetrf(LAPACK_COL_MAJOR, ln, ln, X, ln, ipiv);
      if (!info) {
        step = f32 ? "sgetri" : "dgetri";
        info = f32 ? LAPACKE_sgetri(LAPACK_COL_MAJOR, ln, S, ln, ipiv)
                   : LAPACKE_dgetri(LAPACK_COL_MAJOR, ln, X, ln, ipiv);
      }
    }
    row->t[r] = row->tc[r] = ooc_now() - t0;
    if (info) {
      bench_row_error(row, "%s returned info = %d (%s)", step, (int)info,
                      info < 0 ? "an illegal argument or out of memory"
                      : potri  ? "the leading minor of that order is not positive definite"
                               : "that diagonal element of U is exactly zero");
      goto done;
    }
    row->reps = r + 1;
  }
  bench_row_stats(row);
  if (f32)
    for (int64_t i = 0; i < nn; i++) X[i] = (double)S[i];
  if (potri) /* potri leaves the lower triangle: mirror it (outside the timing) */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j + 1; i < n; i++) X[j + i * n] = X[i + j * n];
  snprintf(row->check, sizeof row->check, "%s", check_full ? "full" : "probe");
  row->residual = bench_check_inverse(ctx, n, A, X, check_full, check_eps(f32));
  bench_row_verdict(row);
done:
  free(X);
  free(S);
  free(ipiv);
  return 0;
}

/* Seeded values in [-1, 1), rounded to float so the f32 and f64 ceilings multiply the same. */
static void fill_uniform(double *A, int64_t nn, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < nn; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    A[i] = (double)(float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

void bench_fill_gemm_inputs(double *A, double *B, int64_t n) {
  fill_uniform(A, n * n, 0x243F6A8885A308D3ULL);
  fill_uniform(B, n * n, 0x13198A2E03707344ULL);
}

int bench_cpu_gemm(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps) {
  (void)ctx;
  int64_t n = row->gemm_n > 0 ? row->gemm_n : row->n, nn = n * n;
  row->gemm_n = n;
  double nf = (double)n;
  row->flops = row->flops_done = row->flops_effective = 2 * nf * nf * nf;
  snprintf(row->backend, sizeof row->backend, "openblas");
  if (!host_fits(row, nn * (f32 ? 36 : 24), "A, B and C")) return 0;
  double *A = malloc((size_t)nn * 8), *B = malloc((size_t)nn * 8), *C = malloc((size_t)nn * 8);
  float *As = f32 ? malloc((size_t)nn * 4) : NULL, *Bs = f32 ? malloc((size_t)nn * 4) : NULL;
  float *Cs = f32 ? malloc((size_t)nn * 4) : NULL;
  if (!A || !B || !C || (f32 && (!As || !Bs || !Cs))) {
    bench_row_skip(row, "out of host memory for the GEMM operands");
    goto done;
  }
  row->host_peak = nn * (f32 ? 36 : 24);
  bench_fill_gemm_inputs(A, B, n);
  if (f32)
    for (int64_t i = 0; i < nn; i++) {
      As[i] = (float)A[i];
      Bs[i] = (float)B[i];
    }
  int ni = (int)n;
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up (thread pool start), not timed */
    double t0 = ooc_now();
    if (f32)
      cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, As, ni, Bs, ni, 0.0f,
                  Cs, ni);
    else
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0, A, ni, B, ni, 0.0, C,
                  ni);
    double t = ooc_now() - t0;
    if (r >= 0) row->t[r] = row->tc[r] = t;
  }
  row->reps = reps;
  bench_row_stats(row);
  if (f32)
    for (int64_t i = 0; i < nn; i++) C[i] = (double)Cs[i];
  snprintf(row->check, sizeof row->check, "probe");
  row->residual = bench_check_gemm(n, A, B, C, check_eps(f32));
  bench_row_verdict(row);
done:
  free(A);
  free(B);
  free(C);
  free(As);
  free(Bs);
  free(Cs);
  return 0;
}
