/*
 * test_bench.c: oocbench, run as a separate process, checked through the JSON it writes.
 *
 * - quick: `oocbench --quick` (the CI smoke test) must write a bench.json that parses, has the
 *   machine object, and has exactly the expected rows: for dtype in {f64, f32} and n in {256, 512},
 *   the GEMM ceiling per
 *   device, and per type {random, matern}: gj, chol, newton, hyper7 on the resolved device plus
 *   lapack-getri, lapack-potri, cusolver-getrs, cusolver-potri. Every row must pass its residual
 *   check, with these exceptions and no others: the SPD-only rows (chol, *-potri) on random are
 *   skipped saying why; the GPU rows are skipped when the machine has no usable GPU; newton and
 *   hyper7 may be errors only while the library answers OOC_ERR_ARG "unknown method" (they are
 *   built on another branch; after the merge they must pass). Flop counts, rates, medians and
 *   byte counts are checked for consistency, so a row cannot pass with made-up numbers.
 * - failing method: a budget too small for oocsolve gives an error row with the library's status
 *   while the peer in the same run still runs and passes; exit code 1.
 * - usage: bad options give exit code 2 and a message; an unwritable output gives 5.
 * The plots are not required (CI may have neither gnuplot nor matplotlib), but if the JSON says
 * they were made, the PNG files must be there.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"

#ifndef OOC_TOOLS_DIR
#define OOC_TOOLS_DIR "."
#endif

static void check_at(int ok, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check_at(int ok, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, (unsigned)line, msg, __FILE__, "", CU_FALSE);
  if (!ok) fprintf(stderr, "\n  FAILED (line %d): %s\n", line, msg);
}
#define CHECK(cond, ...) check_at((cond) ? 1 : 0, __LINE__, __VA_ARGS__)

/* ---- a small JSON reader (RFC 8259 values; enough to validate and walk bench.json) --------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;
typedef struct jv {
  jtype_t t;
  double num;
  int b;
  char *str;
  struct jv **items;
  char **keys;
  int n;
} jv_t;

static void jfree(jv_t *v) {
  if (!v) return;
  for (int i = 0; i < v->n; i++) {
    jfree(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  free(v);
}

static void ws(const char **p) {
  while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r') (*p)++;
}

static char *jparse_str(const char **p) {
  if (**p != '"') return NULL;
  (*p)++;
  size_t cap = 64, k = 0;
  char *s = malloc(cap);
  while (s && **p && **p != '"') {
    char c = *(*p)++;
    if ((unsigned char)c < 0x20) break;
    if (c == '\\') {
      char e = *(*p)++;
      switch (e) {
      case '"': case '\\': case '/': c = e; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u':
        for (int i = 0; i < 4; i++)
          if (!isxdigit((unsigned char)*(*p)++)) {
            free(s);
            return NULL;
          }
        c = '?';
        break;
      default: free(s); return NULL;
      }
    }
    if (k + 2 > cap) {
      char *t = realloc(s, cap *= 2);
      if (!t) break;
      s = t;
    }
    s[k++] = c;
  }
  if (!s || **p != '"') {
    free(s);
    return NULL;
  }
  (*p)++;
  s[k] = 0;
  return s;
}

static jv_t *jparse(const char **p, int depth) {
  ws(p);
  if (depth > 64) return NULL;
  jv_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  if (**p == '{' || **p == '[') {
    int obj = **p == '{';
    v->t = obj ? J_OBJ : J_ARR;
    (*p)++;
    ws(p);
    if (**p == (obj ? '}' : ']')) {
      (*p)++;
      return v;
    }
    for (;;) {
      char *key = NULL;
      ws(p);
      if (obj) {
        if (!(key = jparse_str(p))) goto bad;
        ws(p);
        if (*(*p)++ != ':') {
          free(key);
          goto bad;
        }
      }
      jv_t *it = jparse(p, depth + 1);
      if (!it) {
        free(key);
        goto bad;
      }
      v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
      if (obj) v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
      v->items[v->n] = it;
      if (obj) v->keys[v->n] = key;
      v->n++;
      ws(p);
      if (**p == ',') {
        (*p)++;
        continue;
      }
      if (**p == (obj ? '}' : ']')) {
        (*p)++;
        return v;
      }
      goto bad;
    }
  }
  if (**p == '"') {
    v->t = J_STR;
    if (!(v->str = jparse_str(p))) goto bad;
    return v;
  }
  if (!strncmp(*p, "null", 4)) {
    *p += 4;
    return v;
  }
  if (!strncmp(*p, "true", 4) || !strncmp(*p, "false", 5)) {
    v->t = J_BOOL;
    v->b = **p == 't';
    *p += v->b ? 4 : 5;
    return v;
  }
  if (**p == '-' || isdigit((unsigned char)**p)) {
    char *end;
    v->t = J_NUM;
    v->num = strtod(*p, &end);
    if (end == *p) goto bad;
    *p = end;
    return v;
  }
bad:
  jfree(v);
  return NULL;
}

static jv_t *jload(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    fclose(f);
    return NULL;
  }
  buf[len] = 0;
  fclose(f);
  const char *p = buf;
  jv_t *v = jparse(&p, 0);
  ws(&p);
  if (v && *p) { /* trailing garbage */
    jfree(v);
    v = NULL;
  }
  free(buf);
  return v;
}

static const jv_t *jget(const jv_t *o, const char *key) {
  if (!o || o->t != J_OBJ) return NULL;
  for (int i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return o->items[i];
  return NULL;
}
static const char *jstr_of(const jv_t *o, const char *key) {
  const jv_t *v = jget(o, key);
  return v && v->t == J_STR && v->str ? v->str : "";
}
static double jnum_of(const jv_t *o, const char *key) { /* NaN if absent or null */
  const jv_t *v = jget(o, key);
  return v && v->t == J_NUM ? v->num : NAN;
}
static int jtrue(const jv_t *o, const char *key) {
  const jv_t *v = jget(o, key);
  return v && v->t == J_BOOL && v->b;
}

/* ---- running oocbench ---------------------------------------------------------------------- */

/* Runs oocbench with `args` (a shell fragment of safe words), output to `log`; exit code. */
static int run_bench(const char *args, const char *log) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s/oocbench %s > %s 2>&1", OOC_TOOLS_DIR, args, log);
  fflush(stdout);
  int rc = system(cmd);
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static void show_log(const char *log) {
  FILE *f = fopen(log, "r");
  if (!f) return;
  char line[2048];
  fprintf(stderr, "---- %s\n", log);
  while (fgets(line, sizeof line, f)) fputs(line, stderr);
  fclose(f);
}

static int is_png(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char sig[8] = {0};
  int ok = f && fread(sig, 1, 8, f) == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8);
  if (f) fclose(f);
  return ok;
}

/* ---- the quick run ------------------------------------------------------------------------- */

static const jv_t *find_row(const jv_t *rows, const char *name, const char *dev, const char *type,
                            const char *dtype, int64_t n, int *count) {
  const jv_t *hit = NULL;
  *count = 0;
  for (int i = 0; i < rows->n; i++) {
    const jv_t *r = rows->items[i];
    if (!strcmp(jstr_of(r, "name"), name) && !strcmp(jstr_of(r, "device"), dev) &&
        !strcmp(jstr_of(r, "type"), type) && jnum_of(r, "n") == (double)n &&
        !strcmp(jstr_of(r, "dtype"), dtype)) {
      hit = r;
      (*count)++;
    }
  }
  return hit;
}

static int near(double a, double b) { return fabs(a - b) <= 2e-5 * fabs(b); }

/* The numbers of a row that ran and passed must hang together. */
static void check_ok_row(const jv_t *r, const char *id, double flops, double done) {
  int64_t reps = (int64_t)jnum_of(r, "reps");
  const jv_t *ts = jget(r, "times_s");
  double t = jnum_of(r, "time_s"), tmin = jnum_of(r, "time_min_s"), tmax = jnum_of(r, "time_max_s");
  CHECK(jtrue(r, "pass"), "%s: pass must be true for status ok", id);
  CHECK(reps == 3 && ts && ts->t == J_ARR && ts->n == 3, "%s: 3 repetitions recorded", id);
  CHECK(t > 0 && tmin > 0 && tmin <= t && t <= tmax, "%s: 0 < min %g <= median %g <= max %g", id,
        tmin, t, tmax);
  double res = jnum_of(r, "residual"), thr = jnum_of(r, "threshold");
  CHECK(thr == 30, "%s: threshold %g is the inverse threshold 30", id, thr);
  CHECK(res >= 0 && res < thr, "%s: residual %g below %g", id, res, thr);
  CHECK(near(jnum_of(r, "flops"), flops), "%s: flops %g, expected %g", id, jnum_of(r, "flops"), flops);
  CHECK(near(jnum_of(r, "flops_done"), done), "%s: flops_done %g, expected %g", id,
        jnum_of(r, "flops_done"), done);
  CHECK(near(jnum_of(r, "tflops"), flops / t * 1e-12), "%s: tflops %g = flops / time_s", id,
        jnum_of(r, "tflops"));
  CHECK(jnum_of(r, "host_peak") > 0, "%s: host_peak reported", id);
}

static void test_quick(void) {
  char out[1024], log[1024], args[2048], json[1100];
  snprintf(out, sizeof out, "%s", tu_path("quick"));
  snprintf(log, sizeof log, "%s", tu_path("quick.log"));
  snprintf(json, sizeof json, "%s/bench.json", out);
  snprintf(args, sizeof args, "--quick --out %s", out);
  int rc = run_bench(args, log);
  jv_t *root = jload(json);
  CHECK(root != NULL, "%s parses as JSON", json);
  if (!root) {
    show_log(log);
    return;
  }
  const jv_t *m = jget(root, "machine"), *rows = jget(root, "rows");
  CHECK(!strcmp(jstr_of(root, "schema"), "oocbench/1"), "schema oocbench/1");
  CHECK(m && strlen(jstr_of(m, "cpu_model")) > 0 && jnum_of(m, "cores") >= 1 &&
            jnum_of(m, "memory") > 0,
        "machine: cpu model, cores, memory");
  CHECK(!strcmp(jstr_of(m, "oocsolve_version"), ooc_version()), "machine: oocsolve version");
  CHECK(strlen(jstr_of(m, "date")) >= 20 && strstr(jstr_of(m, "command_line"), "--quick"),
        "machine: date and command line");
  CHECK(jget(m, "gpu") && jget(m, "gpu_driver") && jget(m, "cuda_runtime"), "machine: GPU fields");
  int gpu = jtrue(m, "gpu_usable");
  const char *dev = gpu ? "cuda" : "cpu";
  CHECK(rows && rows->t == J_ARR, "rows is an array");
  if (!rows || rows->t != J_ARR) goto done;

  static const char *types[] = {"random", "matern"};
  static const char *ours[] = {"gj", "chol", "newton", "hyper7"};
  static const char *peers[] = {"lapack-getri", "lapack-potri", "cusolver-getrs", "cusolver-potri"};
  int expected = 0, errors = 0, unavailable = 0;
  for (int di = 0; di < 2; di++) /* f64, then f32 */
  for (int si = 0; si < 2; si++) {
    const char *dt = di ? "f32" : "f64";
    int64_t n = si ? 512 : 256;
    double n3 = (double)n * (double)n * (double)n;
    char id[128];
    for (int d = 0; d < 2; d++) { /* the ceilings */
      int c;
      const char *dv = d ? "cuda" : "cpu";
      const jv_t *r = find_row(rows, "gemm", dv, "any", dt, n, &c);
      snprintf(id, sizeof id, "gemm/%s %s n=%lld", dv, dt, (long long)n);
      expected++;
      CHECK(c == 1, "%s: present once (%d)", id, c);
      if (!r) continue;
      if (d && !gpu) {
        CHECK(!strcmp(jstr_of(r, "status"), "skipped") && strstr(jstr_of(r, "error"), "GPU"),
              "%s: skipped without a GPU, saying so", id);
        continue;
      }
      CHECK(!strcmp(jstr_of(r, "status"), "ok"), "%s: status %s (%s)", id, jstr_of(r, "status"),
            jstr_of(r, "error"));
      CHECK(jnum_of(r, "gemm_n") == (double)n, "%s: measured at n", id);
      check_ok_row(r, id, 2 * n3, 2 * n3);
    }
    for (int t = 0; t < 2; t++) {
      int spd = t == 1;
      for (int k = 0; k < 8; k++) {
        int peer = k >= 4;
        const char *name = peer ? peers[k - 4] : ours[k];
        const char *dv = peer ? (k >= 6 ? "cuda" : "cpu") : dev;
        int spd_only = !strcmp(name, "chol") || strstr(name, "potri");
        int c;
        const jv_t *r = find_row(rows, name, dv, types[t], dt, n, &c);
        snprintf(id, sizeof id, "%s/%s %s %s n=%lld", name, dv, types[t], dt, (long long)n);
        expected++;
        CHECK(c == 1, "%s: present once (%d)", id, c);
        if (!r) continue;
        const char *st = jstr_of(r, "status"), *err = jstr_of(r, "error");
        if (!strcmp(st, "error") || !strcmp(st, "fail")) errors++;
        if (spd_only && !spd) {
          CHECK(!strcmp(st, "skipped") && strstr(err, "SPD"), "%s: skipped as not SPD (%s: %s)", id,
                st, err);
          continue;
        }
        if (peer && k >= 6 && !gpu) {
          CHECK(!strcmp(st, "skipped") && strstr(err, "GPU"), "%s: skipped without a GPU (%s)", id,
                err);
          continue;
        }
        int iter = !strcmp(name, "newton") || !strcmp(name, "hyper7");
        if (iter && !strcmp(st, "error") && !strcmp(jstr_of(r, "ooc_status"), "OOC_ERR_ARG") &&
            strstr(err, "unknown method")) {
          unavailable++; /* not built on this branch yet: the only accepted failure */
          continue;
        }
        CHECK(!strcmp(st, "ok"), "%s: status %s (%s)", id, st, err);
        if (strcmp(st, "ok") != 0) continue;
        double fl = (spd_only ? 1 : 2) * n3, done = fl;
        if (!strcmp(name, "cusolver-getrs")) done = 8.0 / 3.0 * n3;
        if (iter) {
          double it = jnum_of(r, "iterations");
          CHECK(it >= 1, "%s: iterations %g reported", id, it);
          done = fl = it * (!strcmp(name, "newton") ? 2 : 9) * 2 * n3;
          CHECK(near(jnum_of(r, "flops_effective"), 2 * n3), "%s: effective flops 2n^3", id);
        }
        check_ok_row(r, id, fl, done);
        if (!peer) { /* oocsolve rows carry the library's report and its byte counts */
          const jv_t *rep = jget(r, "report"), *by = jget(r, "bytes");
          CHECK(rep && !strcmp(jstr_of(rep, "status"), "OOC_OK") &&
                    !strcmp(jstr_of(rep, "method"), name),
                "%s: the library's report is embedded", id);
          CHECK(jnum_of(r, "residual") >= jnum_of(rep, "residual"),
                "%s: the row keeps the worst repetition's residual", id);
          double eb = di ? 4.0 : 8.0; /* element bytes in the file */
          CHECK(jnum_of(by, "disk_read") >= eb * n * n && jnum_of(by, "disk_written") >= eb * n * n,
                "%s: bytes read and written cover the matrix", id);
          CHECK(!strcmp(jstr_of(rep, "out_dtype"), dt), "%s: output dtype follows the input", id);
          CHECK(jnum_of(r, "tile") == 128, "%s: --quick's tile 128", id);
          CHECK(jnum_of(r, "compute_s") > 0 && jnum_of(r, "compute_s") <= jnum_of(r, "time_s"),
                "%s: compute phase within the time", id);
        }
      }
    }
  }
  CHECK(rows->n == expected, "%d rows, expected exactly %d", rows->n, expected);
  CHECK(rc == (errors ? 1 : 0), "exit code %d with %d failed or errored rows", rc, errors);
  CHECK(unavailable == 0 || unavailable == 16, "newton/hyper7: all unavailable or none (%d)",
        unavailable);
  /* plots: optional, but a claim of success must be true */
  const char *pl = jstr_of(root, "plots");
  CHECK(!strncmp(pl, "gnuplot:", 8) || !strncmp(pl, "matplotlib:", 11) || !strncmp(pl, "skipped:", 8),
        "plots: made or skipped with a reason, not '%s'", pl);
  if (strncmp(pl, "skipped:", 8) != 0)
    for (int t = 0; t < 2; t++) {
      char png[1200];
      snprintf(png, sizeof png, "%s/time_%s.png", out, types[t]);
      CHECK(is_png(png), "%s is a PNG", png);
      snprintf(png, sizeof png, "%s/tflops_%s.png", out, types[t]);
      CHECK(is_png(png), "%s is a PNG", png);
    }
  char data[1100];
  snprintf(data, sizeof data, "%s/data", out);
  struct stat sb;
  CHECK(stat(data, &sb) != 0, "the generated matrices were removed (%s)", data);
done:
  if (CU_get_number_of_failures() > 0) show_log(log);
  jfree(root);
}

/* ---- a failing method is a row, not a stop --------------------------------------------------- */

static void test_failing_method(void) {
  char out[1024], log[1024], args[2048], json[1100];
  snprintf(out, sizeof out, "%s", tu_path("fail"));
  snprintf(log, sizeof log, "%s", tu_path("fail.log"));
  snprintf(json, sizeof json, "%s/bench.json", out);
  /* 1/1000 of the matrix bytes: far below what oocsolve needs for even one tile column */
  snprintf(args, sizeof args, "--sizes 256 --methods gj --peers lapack-getri --types random "
                              "--reps 1 --tile 64 --mem-frac 0.001 --no-plots --out %s", out);
  int rc = run_bench(args, log);
  CHECK(rc == 1, "exit code 1 when a row errs (got %d)", rc);
  jv_t *root = jload(json);
  const jv_t *rows = jget(root, "rows");
  CHECK(rows && rows->t == J_ARR && rows->n == 2, "two rows");
  if (rows && rows->t == J_ARR && rows->n == 2) {
    const jv_t *g = rows->items[0], *l = rows->items[1];
    CHECK(!strcmp(jstr_of(g, "name"), "gj") && !strcmp(jstr_of(g, "status"), "error") &&
              !strcmp(jstr_of(g, "ooc_status"), "OOC_ERR_BUDGET") && strlen(jstr_of(g, "error")) > 0,
          "gj: error row with the library's status and message (%s: %s)", jstr_of(g, "ooc_status"),
          jstr_of(g, "error"));
    CHECK(!jtrue(g, "pass"), "gj: not a pass");
    CHECK(!strcmp(jstr_of(l, "name"), "lapack-getri") && !strcmp(jstr_of(l, "status"), "ok"),
          "the peer still ran and passed (%s)", jstr_of(l, "status"));
  }
  CHECK(!strcmp(jstr_of(root, "plots"), "skipped: --no-plots"), "--no-plots is recorded");
  if (CU_get_number_of_failures() > 0) show_log(log);
  jfree(root);
}

/* ---- usage --------------------------------------------------------------------------------- */

static void test_usage(void) {
  static const char *bad[] = {
      "",                                          /* no sizes */
      "--sizes 0",                                 /* n >= 1 */
      "--sizes 256 --methods gj,lu",               /* unknown method */
      "--sizes 256 --peers magma",                 /* unknown peer */
      "--sizes 256 --types singular",              /* not a benchmark type */
      "--sizes 256 --dtypes f16",                  /* unknown dtype */
      "--sizes 256 --host-mem 1G --mem-frac 0.5",  /* exclusive */
      "--preset thesis",                           /* unknown preset */
      "--quick --preset climate",                  /* exclusive */
      "--sizes 256 --reps",                        /* missing value */
      "--sizes 256 --check maybe",                 /* unknown check */
      NULL};
  char log[1024], args[1024];
  snprintf(log, sizeof log, "%s", tu_path("usage.log"));
  for (int i = 0; bad[i]; i++) {
    snprintf(args, sizeof args, "%s --out %s", bad[i], tu_path("usage-out"));
    int rc = run_bench(args, log);
    CHECK(rc == 2, "'oocbench %s' exits 2 (got %d)", bad[i], rc);
    FILE *f = fopen(log, "r");
    char line[512] = "";
    if (f) {
      if (!fgets(line, sizeof line, f)) line[0] = 0;
      fclose(f);
    }
    CHECK(!strncmp(line, "oocbench: ", 10), "'oocbench %s' says why: %s", bad[i], line);
  }
  /* an output "directory" below a regular file cannot be made, even as root */
  FILE *f = fopen(tu_path("plainfile"), "w");
  if (f) fclose(f);
  snprintf(args, sizeof args, "--sizes 64 --out %s/sub", tu_path("plainfile"));
  CHECK(run_bench(args, log) == 5, "an unwritable output directory exits 5");
  CHECK(run_bench("--help", log) == 0, "--help exits 0");
}

int main(void) {
  static const tu_test_t tests[] = {{"quick", test_quick},
                                    {"failing_method", test_failing_method},
                                    {"usage", test_usage},
                                    {NULL, NULL}};
  return tu_run("bench", tests);
}
