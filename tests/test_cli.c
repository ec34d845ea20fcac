/*
 * test_cli.c: the oocsolve command-line tool, run as a separate process.
 *
 * Every bad input must give its documented exit code (include/oocsolve.h, ooc_status_exit_code),
 * a message on stderr that names the file (and dataset) and the problem, leave the input
 * byte-for-byte unchanged, and leave nothing behind: no output file, no "<out>.tmp-*" temporary,
 * no ".oocsolve-*.scratch" spill file. The good paths (inverse, --json, solve) and SIGINT are
 * checked the same way. Bad HDF5 files are made here with the HDF5 C API; good matrices come from
 * oocgen (built next to oocsolve, OOC_TOOLS_DIR).
 *
 * Each case works in its own directory under tu_tmpdir(), which is also the output directory, so
 * a leftover is easy to attribute. OOC_KEEP_TMP=1 keeps the directories for inspection.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef OOC_TOOLS_DIR
#define OOC_TOOLS_DIR "."
#endif

#define PATH_CAP 4096
#define MAX_ARGS 48

/* ---- small utilities ---------------------------------------------------------------------- */

/* An assertion reported at the caller's line, with a message built at run time (CUnit copies it). */
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

/* snprintf that fails the test on truncation (and keeps -Wformat-truncation quiet). */
static void xfmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void xfmt(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= cap) CU_FAIL("path too long for a test buffer");
}

static void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return calloc(1, 1);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)(len > 0 ? len : 0) + 1);
  size_t got = len > 0 ? fread(buf, 1, (size_t)len, f) : 0;
  buf[got] = 0;
  fclose(f);
  return buf;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CU_ASSERT_FATAL(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* A fresh directory "<tmpdir>/<name>" for one case; returns a static copy of its path. */
static const char *case_dir(const char *name) {
  static char dirs[4][PATH_CAP];
  static int k;
  char *d = dirs[k++ % 4];
  xfmt(d, PATH_CAP, "%s", tu_path(name));
  if (mkdir(d, 0700) != 0 && errno != EEXIST) {
    perror(d);
    CU_FAIL_FATAL("cannot create a case directory");
  }
  return d;
}

/* "<dir>/<name>" into buf. */
static char *join(char *buf, const char *dir, const char *name) {
  xfmt(buf, PATH_CAP, "%s/%s", dir, name);
  return buf;
}

/* Files in dir that a run must not leave behind: output temporaries and spill files. Returns
 * their count and lists them in `list`. */
static int leftovers(const char *dir, char *list, size_t cap) {
  int count = 0;
  if (cap) list[0] = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *nm = e->d_name;
    size_t len = strlen(nm);
    int tmp = strstr(nm, ".tmp-") != NULL;
    /* a store's file, or one of its siblings ("<name>.scratch.<k>", scratch_open_files) */
    int scratch = !strncmp(nm, ".oocsolve-", 10) && len > 8 && strstr(nm, ".scratch") != NULL;
    if (tmp || scratch) {
      size_t used = strlen(list);
      if (used + len + 3 < cap) xfmt(list + used, cap - used, "%s%s", count ? ", " : "", nm);
      count++;
    }
  }
  closedir(d);
  return count;
}

#define CHECK_CLEAN(dir) check_clean((dir), __LINE__)
static void check_clean(const char *dir, int line) {
  char list[1024];
  int n = leftovers(dir, list, sizeof list);
  check_at(n == 0, line, "no temporary or scratch files left in %s (found: %s)", dir, list);
}

#define CHECK_ABSENT(path) check_at(!tu_file_exists(path), __LINE__, "no output at %s", (path))
#define CHECK_HASH(path, before)                                                                   \
  check_at(tu_file_hash(path) == (before), __LINE__, "input %s is unchanged", (path))

/* ---- running a tool ----------------------------------------------------------------------- */

typedef struct {
  int code;  /* exit status; 128 + signal if killed by one; -1 if it could not be run or timed out */
  char *out; /* stdout */
  char *err; /* stderr */
} res_t;

typedef struct {
  pid_t pid;
  char out_path[PATH_CAP], err_path[PATH_CAP];
} proc_t;

static const char *tool_path(const char *tool) {
  static char buf[2][PATH_CAP];
  static int k;
  char *b = buf[k++ % 2];
  xfmt(b, PATH_CAP, "%s/%s", OOC_TOOLS_DIR, tool);
  return b;
}

/* Start `tool` with NULL-terminated argv (argv[0] excluded) and stdout/stderr into files named
 * after `tag` in tu_tmpdir(). stdin is /dev/null. */
static int spawn_tool(proc_t *p, const char *tag, const char *tool, const char *const *args) {
  static int seq;
  char name[256];
  xfmt(name, sizeof name, "log-%03d-%s.stdout", seq, tag);
  xfmt(p->out_path, PATH_CAP, "%s", tu_path(name));
  xfmt(name, sizeof name, "log-%03d-%s.stderr", seq, tag);
  xfmt(p->err_path, PATH_CAP, "%s", tu_path(name));
  seq++;
  const char *exe = tool_path(tool);
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = (char *)exe;
  for (int i = 0; args[i] && argc < MAX_ARGS; i++) argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    close(in);
    close(out);
    close(err);
    signal(SIGINT, SIG_DFL);
    execv(exe, argv);
    _exit(127);
  }
  p->pid = pid;
  return 0;
}

/* Still running? (WNOWAIT: a finished child is left for wait_tool to reap, exit code intact.) */
static int running(const proc_t *p) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return 0;
  return info.si_pid == 0;
}

/* Wait up to timeout_s; kill on timeout (returns -1). */
static int wait_tool(proc_t *p, double timeout_s) {
  double t0 = now_s();
  int status = 0;
  for (;;) {
    pid_t r = waitpid(p->pid, &status, WNOHANG);
    if (r == p->pid) break;
    if (r < 0 && errno != EINTR) return -1;
    if (now_s() - t0 > timeout_s) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &status, 0);
      fprintf(stderr, "\n  timeout: killed after %.0f s\n", timeout_s);
      return -1;
    }
    sleep_s(0.005);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

static res_t finish(proc_t *p, int code) {
  res_t r;
  r.code = code;
  r.out = slurp(p->out_path);
  r.err = slurp(p->err_path);
  return r;
}

static res_t run_argv(const char *tag, const char *tool, const char *const *args) {
  proc_t p;
  if (spawn_tool(&p, tag, tool, args) != 0) {
    res_t r = {-1, calloc(1, 1), calloc(1, 1)};
    return r;
  }
  return finish(&p, wait_tool(&p, 600));
}

/* run("tag", "oocsolve", "--tile", "0", file, NULL) */
static res_t run(const char *tag, const char *tool, ...) {
  const char *args[MAX_ARGS + 1];
  int n = 0;
  va_list ap;
  va_start(ap, tool);
  for (const char *a; (a = va_arg(ap, const char *)) && n < MAX_ARGS;) args[n++] = a;
  va_end(ap);
  args[n] = NULL;
  return run_argv(tag, tool, args);
}

static void res_free(res_t *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

/* Exit code and stderr substrings (NULL-terminated list). Usage errors (exit 2) print
 * "oocsolve: <why>"; failures of the library print "oocsolve: error: <message>". */
#define EXPECT(r, code, ...) expect_at(&(r), (code), __LINE__, __VA_ARGS__, (const char *)NULL)
static void expect_at(const res_t *r, int code, int line, ...) {
  int ok = r->code == code;
  check_at(r->code == code, line, "exit code %d (got %d)", code, r->code);
  const char *prefix = code == 2 ? "oocsolve: " : "oocsolve: error: ";
  int has_prefix = strstr(r->err, prefix) != NULL;
  ok &= has_prefix;
  check_at(has_prefix, line, "stderr starts a line with \"%s\"", prefix);
  va_list ap;
  va_start(ap, line);
  for (const char *s; (s = va_arg(ap, const char *));) {
    int found = strstr(r->err, s) != NULL;
    ok &= found;
    check_at(found, line, "stderr mentions \"%s\"", s);
  }
  va_end(ap);
  if (!ok) fprintf(stderr, "  --- stderr was:\n%s  --- stdout was:\n%s  ---\n", r->err, r->out);
}

#define EXPECT_OK(r) expect_ok_at(&(r), __LINE__)
static void expect_ok_at(const res_t *r, int line) {
  check_at(r->code == 0, line, "exit code 0 (got %d)", r->code);
  if (r->code != 0) fprintf(stderr, "  --- stderr was:\n%s  ---\n", r->err);
}

/* ---- making input files ------------------------------------------------------------------- */

/* n x n column-major, strictly diagonally dominant (well conditioned), seeded. */
static double *diagdom(int64_t n, unsigned seed) {
  double *A = malloc((size_t)(n * n) * sizeof *A);
  uint64_t s = 0x9E3779B97F4A7C15ULL * (seed + 1);
  for (int64_t k = 0; k < n * n; k++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    A[k] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  for (int64_t i = 0; i < n; i++) A[i + i * n] = (double)n + 1.0;
  return A;
}

static void write_diagdom(const char *file, int64_t n) {
  double *A = diagdom(n, 1);
  tu_write_matrix(file, "/A", n, n, A, 2);
  free(A);
}

/* A dataset of any rank and type written with the HDF5 C API. append: add to an existing file. */
static void h5_dataset(const char *file, int append, const char *dset, int rank,
                       const hsize_t *dims, hid_t ftype, hid_t mtype, const void *data) {
  hid_t f = append ? H5Fopen(file, H5F_ACC_RDWR, H5P_DEFAULT)
                   : H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CU_ASSERT_FATAL(f >= 0);
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  CU_ASSERT_FATAL(sp >= 0);
  hid_t d = H5Dcreate2(f, dset, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  CU_ASSERT_FATAL(d >= 0);
  if (data) CU_ASSERT(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(d);
  H5Sclose(sp);
  H5Fclose(f);
}

/* Common shape of a bad-input case: `input` exists (or not), the run fails; check everything. */
typedef struct {
  char dir[PATH_CAP];
  char input[PATH_CAP];
  char out_default[PATH_CAP];
  uint64_t hash;
} bad_t;

static void bad_begin(bad_t *b, const char *name, const char *file) {
  b->hash = 0; /* no input written yet (a missing-file case never writes one) */
  xfmt(b->dir, PATH_CAP, "%s", case_dir(name));
  xfmt(b->input, PATH_CAP, "%s/%s", b->dir, file);
  /* the default output name: "x.h5" -> "x.inv.h5" */
  const char *dot = strrchr(file, '.');
  int stem = dot ? (int)(dot - file) : (int)strlen(file);
  xfmt(b->out_default, PATH_CAP, "%s/%.*s.inv%s", b->dir, stem, file, dot ? dot : ".h5");
}

/* After the input is written. */
static void bad_ready(bad_t *b) {
  b->hash = tu_file_hash(b->input);
  CU_ASSERT(b->hash != 0);
}

#define BAD_END(b) bad_end_at(&(b), __LINE__)
static void bad_end_at(const bad_t *b, int line) {
  if (b->hash) check_at(tu_file_hash(b->input) == b->hash, line, "input %s unchanged", b->input);
  check_at(!tu_file_exists(b->out_default), line, "no output at %s", b->out_default);
  check_clean(b->dir, line);
}

/* ---- bad inputs --------------------------------------------------------------------------- */

static void t_missing_file(void) {
  bad_t b;
  bad_begin(&b, "missing", "nothere.h5");
  res_t r = run("missing", "oocsolve", b.input, NULL);
  /* h5mat.h: a missing file is OOC_ERR_IO, which ooc_status_exit_code maps to 5 */
  EXPECT(r, 5, b.input, "no such file");
  BAD_END(b);
  res_free(&r);
  /* with a dataset named, the message names it too */
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/A", b.input);
  r = run("missing_ds", "oocsolve", spec, NULL);
  EXPECT(r, 5, spec, "no such file");
  BAD_END(b);
  res_free(&r);
}

static void t_not_hdf5(void) {
  bad_t b;
  bad_begin(&b, "nothdf5", "text.h5");
  write_text(b.input, "this is a text file, not HDF5\n1 2\n3 4\n");
  bad_ready(&b);
  res_t r = run("nothdf5", "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, "not an HDF5 file");
  BAD_END(b);
  res_free(&r);
}

static void t_truncated(void) {
  bad_t b;
  bad_begin(&b, "truncated", "cut.h5");
  write_diagdom(b.input, 64);
  struct stat st;
  CU_ASSERT_FATAL(stat(b.input, &st) == 0);
  CU_ASSERT_FATAL(truncate(b.input, st.st_size / 2) == 0);
  bad_ready(&b);
  res_t r = run("truncated", "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, "truncated");
  BAD_END(b);
  res_free(&r);
}

static void t_missing_dataset(void) {
  bad_t b;
  bad_begin(&b, "nodset", "m.h5");
  write_diagdom(b.input, 4);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/nope", b.input);
  res_t r = run("nodset", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "no dataset");
  BAD_END(b);
  res_free(&r);
}

static void t_ambiguous(void) {
  bad_t b;
  bad_begin(&b, "ambiguous", "two.h5");
  double *A = diagdom(4, 2);
  tu_write_matrix(b.input, "/alpha", 4, 4, A, 2);
  hsize_t dims[2] = {4, 4};
  h5_dataset(b.input, 1, "/beta", 2, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, A);
  free(A);
  bad_ready(&b);
  res_t r = run("ambiguous", "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, "alpha", "beta");
  BAD_END(b);
  res_free(&r);
  /* naming one resolves it */
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/beta", b.input);
  r = run("ambiguous_named", "oocsolve", "--quiet", spec, NULL);
  EXPECT_OK(r);
  CU_ASSERT(tu_file_exists(b.out_default));
  CHECK_HASH(b.input, b.hash);
  CHECK_CLEAN(b.dir);
  res_free(&r);
}

static void t_1d(void) {
  bad_t b;
  bad_begin(&b, "oned", "v.h5");
  double v[5] = {1, 2, 3, 4, 5};
  hsize_t dims[1] = {5};
  h5_dataset(b.input, 0, "/vec", 1, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/vec", b.input);
  res_t r = run("oned", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "1-D");
  BAD_END(b);
  res_free(&r);
  /* without a dataset name: there is no 2-D dataset to pick */
  r = run("oned_auto", "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, "no 2-D");
  BAD_END(b);
  res_free(&r);
}

static void t_3d(void) {
  bad_t b;
  bad_begin(&b, "threed", "c.h5");
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  hsize_t dims[3] = {2, 3, 4};
  h5_dataset(b.input, 0, "/cube", 3, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/cube", b.input);
  res_t r = run("threed", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "3-D");
  BAD_END(b);
  res_free(&r);
}

static void t_nonsquare(void) {
  bad_t b;
  bad_begin(&b, "nonsquare", "r.h5");
  double A[12];
  for (int i = 0; i < 12; i++) A[i] = i + 1;
  tu_write_matrix(b.input, "/A", 3, 4, A, 2);
  bad_ready(&b);
  res_t r = run("nonsquare", "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, ":/A", "3 x 4", "square");
  BAD_END(b);
  res_free(&r);
}

static void t_string_dtype(void) {
  bad_t b;
  bad_begin(&b, "string", "s.h5");
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 4);
  const char data[4][4] = {"abc", "def", "ghi", "jkl"};
  hsize_t dims[2] = {2, 2};
  h5_dataset(b.input, 0, "/names", 2, dims, st, st, data);
  H5Tclose(st);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/names", b.input);
  res_t r = run("string", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "string");
  BAD_END(b);
  res_free(&r);
}

static void t_compound_dtype(void) {
  bad_t b;
  bad_begin(&b, "compound", "z.h5");
  typedef struct {
    double re, im;
  } cplx_t;
  hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(cplx_t));
  H5Tinsert(ct, "re", HOFFSET(cplx_t, re), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "im", HOFFSET(cplx_t, im), H5T_NATIVE_DOUBLE);
  cplx_t data[4] = {{1, 0}, {0, 1}, {2, 0}, {0, 2}};
  hsize_t dims[2] = {2, 2};
  h5_dataset(b.input, 0, "/Z", 2, dims, ct, ct, data);
  H5Tclose(ct);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/Z", b.input);
  res_t r = run("compound", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "compound");
  BAD_END(b);
  res_free(&r);
}

static void t_empty_0x0(void) {
  bad_t b;
  bad_begin(&b, "empty", "e.h5");
  hsize_t dims[2] = {0, 0};
  h5_dataset(b.input, 0, "/A", 2, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, NULL);
  bad_ready(&b);
  char spec[PATH_CAP + 8];
  xfmt(spec, sizeof spec, "%s:/A", b.input);
  res_t r = run("empty", "oocsolve", spec, NULL);
  EXPECT(r, 3, spec, "0 x 0");
  BAD_END(b);
  res_free(&r);
}

static void nonfinite_case(const char *name, double value, int64_t i, int64_t j, const char *word) {
  bad_t b;
  bad_begin(&b, name, "nf.h5");
  int64_t n = 8;
  double *A = diagdom(n, 3);
  A[i + j * n] = value;
  tu_write_matrix(b.input, "/A", n, n, A, 2);
  free(A);
  bad_ready(&b);
  char where[64];
  xfmt(where, sizeof where, "[%lld, %lld]", (long long)i, (long long)j);
  res_t r = run(name, "oocsolve", b.input, NULL);
  EXPECT(r, 3, b.input, ":/A", word, where);
  BAD_END(b);
  res_free(&r);
}

static void t_nan(void) { nonfinite_case("nan", NAN, 1, 2, "NaN"); }
static void t_inf(void) { nonfinite_case("inf", -INFINITY, 7, 0, "Inf"); }

static void t_singular(void) {
  bad_t b;
  bad_begin(&b, "singular", "sing.h5");
  int64_t n = 6;
  double *A = diagdom(n, 4);
  for (int64_t i = 0; i < n; i++) A[i + 3 * n] = 0; /* column 3 (0-based) is zero */
  tu_write_matrix(b.input, "/A", n, n, A, 2);
  free(A);
  bad_ready(&b);
  res_t r = run("singular", "oocsolve", b.input, NULL);
  EXPECT(r, 4, "singular", "column 3");
  /* oocsolve.h: "on failure ooc_ctx_error() gives a message that names the file, dataset and
   * problem" */
  check_at(strstr(r.err, b.input) != NULL, __LINE__,
           "the singular-matrix message names the input file %s", b.input);
  BAD_END(b);
  res_free(&r);
  /* --json reports the failure as one object on stdout */
  r = run("singular_json", "oocsolve", "--json", b.input, NULL);
  CU_ASSERT_EQUAL(r.code, 4);
  CU_ASSERT(strstr(r.out, "\"status\": \"OOC_ERR_SINGULAR\"") != NULL);
  CU_ASSERT(strstr(r.out, "\"exit_code\": 4") != NULL);
  CU_ASSERT(strstr(r.out, "\"info\": 4") != NULL); /* LAPACK convention: 1-based column */
  BAD_END(b);
  res_free(&r);
}

static void t_output_exists(void) {
  bad_t b;
  bad_begin(&b, "exists", "in.h5");
  write_diagdom(b.input, 5);
  bad_ready(&b);
  write_text(b.out_default, "precious data that must survive\n");
  uint64_t out_hash = tu_file_hash(b.out_default);
  res_t r = run("exists", "oocsolve", b.input, NULL);
  EXPECT(r, 5, b.out_default, "exists");
  CHECK_HASH(b.input, b.hash);
  check_at(tu_file_hash(b.out_default) == out_hash, __LINE__,
           "the existing output %s is untouched without --force", b.out_default);
  CHECK_CLEAN(b.dir);
  res_free(&r);
  /* --force replaces it with the inverse */
  r = run("exists_force", "oocsolve", "--force", b.input, NULL);
  EXPECT_OK(r);
  CHECK_HASH(b.input, b.hash);
  CHECK_CLEAN(b.dir);
  char spec[PATH_CAP + 16];
  xfmt(spec, sizeof spec, "%s:/inverse", b.out_default);
  int64_t rows = 0, cols = 0;
  double *X = r.code == 0 ? tu_read_matrix(spec, &rows, &cols) : NULL;
  CU_ASSERT(X != NULL && rows == 5 && cols == 5);
  if (X) {
    double *A = diagdom(5, 1);
    CU_ASSERT(tu_inverse_ratio(5, A, X, DBL_EPSILON / 2) < 30);
    free(A);
  }
  free(X);
  res_free(&r);
}

static void t_unwritable_dir(void) {
  bad_t b;
  bad_begin(&b, "unwritable", "in.h5");
  write_diagdom(b.input, 5);
  bad_ready(&b);
  char out[PATH_CAP], sub[PATH_CAP];
  /* 1. a directory that does not exist: fails for root too */
  join(sub, b.dir, "no/such/dir");
  join(out, sub, "x.h5");
  res_t r = run("unwritable_nodir", "oocsolve", "--out", out, b.input, NULL);
  EXPECT(r, 5, out, "No such file or directory");
  CHECK_ABSENT(out);
  BAD_END(b);
  res_free(&r);

  /* 2. a directory without write permission: root bypasses permission bits, so only as a user */
  if (geteuid() == 0) {
    fprintf(stderr, "\n  note: running as root; the chmod 0500 case is skipped (root ignores "
                    "permissions); the missing-directory case above covers the IO error\n");
    return;
  }
  join(sub, b.dir, "ro");
  CU_ASSERT_FATAL(mkdir(sub, 0700) == 0);
  CU_ASSERT_FATAL(chmod(sub, 0500) == 0);
  join(out, sub, "x.h5");
  r = run("unwritable_ro", "oocsolve", "--out", out, b.input, NULL);
  EXPECT(r, 5, out, "Permission denied");
  CHECK_ABSENT(out);
  chmod(sub, 0700);
  CHECK_CLEAN(sub);
  BAD_END(b);
  res_free(&r);
}

/* ---- usage errors: the file is fine, the options are not ---------------------------------- */

static void usage_case(const char *tag, const char *opt, const char *val, const char *needle) {
  bad_t b;
  bad_begin(&b, tag, "in.h5");
  write_diagdom(b.input, 5);
  bad_ready(&b);
  res_t r = val ? run(tag, "oocsolve", opt, val, b.input, NULL)
                : run(tag, "oocsolve", opt, b.input, NULL);
  EXPECT(r, 2, needle);
  BAD_END(b);
  res_free(&r);
}

static void t_tile_zero(void) { usage_case("tile0", "--tile", "0", "--tile"); }
static void t_host_mem_bad(void) {
  usage_case("hostmem_12x", "--host-mem", "12x", "12x");
  usage_case("hostmem_neg", "--host-mem", "-5", "--host-mem");
}
static void t_unknown_option(void) { usage_case("unknown", "--frobnicate", NULL, "--frobnicate"); }

static void t_budget_too_small(void) {
  bad_t b;
  bad_begin(&b, "budget", "big.h5");
  write_diagdom(b.input, 500);
  bad_ready(&b);
  res_t r = run("budget", "oocsolve", "--host-mem", "1K", b.input, NULL);
  EXPECT(r, 6, "--host-mem");
  check_at(strstr(r.err, b.input) != NULL, __LINE__,
           "the budget message names the input file %s", b.input);
  BAD_END(b);
  res_free(&r);
}

/* ---- good runs ---------------------------------------------------------------------------- */

static int have_tool(const char *tool) {
  if (access(tool_path(tool), X_OK) == 0) return 1;
  fprintf(stderr, "\n  %s not built (%s)\n", tool, tool_path(tool));
  return 0;
}

/* oocgen KIND --n N [extra...] OUT; asserts success. */
static int gen(const char *tag, const char *kind, const char *n, const char *extra1,
               const char *extra2, const char *out) {
  if (!have_tool("oocgen")) {
    CU_FAIL("oocgen is not built");
    return -1;
  }
  res_t r = extra1 ? run(tag, "oocgen", kind, "--n", n, extra1, extra2, "--force", out, NULL)
                   : run(tag, "oocgen", kind, "--n", n, "--force", out, NULL);
  EXPECT_OK(r);
  int code = r.code;
  res_free(&r);
  return code;
}

static void t_invert_ok(void) {
  const char *dir = case_dir("good");
  char in[PATH_CAP], out[PATH_CAP], spec_a[PATH_CAP + 8], spec_x[PATH_CAP + 16];
  join(in, dir, "cov.h5");
  join(out, dir, "cov.inv.h5");
  xfmt(spec_a, sizeof spec_a, "%s:/A", in);
  xfmt(spec_x, sizeof spec_x, "%s:/inverse", out);
  if (gen("gen_matern", "matern", "300", "--seed", "3", in) != 0) return;
  uint64_t h = tu_file_hash(in);
  CU_ASSERT(h != 0);

  /* A 640 KiB budget for a 703 KiB matrix: out of core (about the smallest that fits tile 64). */
  res_t r = run("invert_640K", "oocsolve", "--tile", "64", "--host-mem", "640K", in, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "residual") != NULL);
  CU_ASSERT(strstr(r.out, "inverse") != NULL);
  CU_ASSERT(strstr(r.out, "spilled") != NULL && strstr(r.out, "spilled 0 B") == NULL);
  CU_ASSERT(r.err[0] == 0); /* no progress bar when stderr is not a terminal, no notices */
  if (r.err[0]) fprintf(stderr, "  --- stderr:\n%s", r.err);
  CHECK_HASH(in, h);
  CHECK_CLEAN(dir);
  res_free(&r);
  int64_t n1, n2, m1, m2;
  double *A = tu_read_matrix(spec_a, &n1, &n2);
  double *X = tu_file_exists(out) ? tu_read_matrix(spec_x, &m1, &m2) : NULL;
  CU_ASSERT_FATAL(A != NULL);
  CU_ASSERT(X != NULL);
  if (X) {
    CU_ASSERT(n1 == 300 && n2 == 300 && m1 == 300 && m2 == 300);
    double ratio = tu_inverse_ratio(300, A, X, DBL_EPSILON / 2);
    CU_ASSERT(ratio < 30);
    if (!(ratio < 30)) fprintf(stderr, "\n  inverse ratio %g\n", ratio);
  }
  free(X);

  /* --json: one object on one line, status OK and a numeric residual */
  char jout[PATH_CAP];
  join(jout, dir, "json.h5");
  r = run("invert_json", "oocsolve", "--json", "--tile", "64", "--out", jout, in, NULL);
  EXPECT_OK(r);
  size_t len = strlen(r.out);
  CU_ASSERT(len > 2 && r.out[0] == '{' && r.out[len - 2] == '}' && r.out[len - 1] == '\n');
  CU_ASSERT(strchr(r.out, '\n') == r.out + len - 1); /* exactly one line */
  CU_ASSERT(strstr(r.out, "\"status\": \"OOC_OK\"") != NULL);
  CU_ASSERT(strstr(r.out, "\"exit_code\": 0") != NULL);
  const char *res = strstr(r.out, "\"residual\": ");
  CU_ASSERT(res != NULL);
  if (res) {
    char *end;
    double v = strtod(res + 12, &end);
    CU_ASSERT(end != res + 12); /* a number, not null */
    CU_ASSERT(v >= 0 && v < 30);
  }
  char jspec[PATH_CAP + 8];
  xfmt(jspec, sizeof jspec, "%s:%s", jout, "/inverse");
  CU_ASSERT(strstr(r.out, jspec) != NULL); /* "output" names what was written */
  CU_ASSERT(tu_file_exists(jout));
  CHECK_HASH(in, h);
  CHECK_CLEAN(dir);
  res_free(&r);
  free(A);
}

static void t_solve_ok(void) {
  const char *dir = case_dir("solve");
  char a[PATH_CAP], bfile[PATH_CAP], bspec[PATH_CAP + 8], x[PATH_CAP], xspec[PATH_CAP + 8],
      aspec[PATH_CAP + 8];
  join(a, dir, "A.h5");
  join(bfile, dir, "B.h5");
  join(x, dir, "B.x.h5");
  xfmt(aspec, sizeof aspec, "%s:/A", a);
  xfmt(bspec, sizeof bspec, "%s:/B", bfile);
  xfmt(xspec, sizeof xspec, "%s:/X", x);
  if (gen("gen_solve_a", "random", "200", "--seed", "8", a) != 0) return;
  if (gen("gen_solve_b", "rhs", "200", "--cols", "5", bspec) != 0) return;
  uint64_t ha = tu_file_hash(a), hb = tu_file_hash(bfile);
  res_t r = run("solve", "oocsolve", "solve", "--tile", "64", a, bspec, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "residual") != NULL);
  CHECK_HASH(a, ha);
  CHECK_HASH(bfile, hb);
  CHECK_CLEAN(dir);
  res_free(&r);
  check_at(tu_file_exists(x), __LINE__, "solve wrote %s", x);
  if (tu_file_exists(x)) {
    int64_t n1 = 0, n2 = 0, b1 = 0, b2 = 0, x1 = 0, x2 = 0;
    double *A = tu_read_matrix(aspec, &n1, &n2), *B = tu_read_matrix(bspec, &b1, &b2),
           *X = tu_read_matrix(xspec, &x1, &x2);
    CU_ASSERT(A && B && X);
    CU_ASSERT(n1 == 200 && n2 == 200 && b1 == 200 && b2 == 5 && x1 == 200 && x2 == 5);
    if (A && B && X && x1 == 200 && x2 == 5) {
      double ratio = tu_solve_ratio(200, 5, A, X, B, DBL_EPSILON / 2);
      CU_ASSERT(ratio < 16);
      if (!(ratio < 16)) fprintf(stderr, "\n  solve ratio %g\n", ratio);
    }
    free(A);
    free(B);
    free(X);
  }

  /* B with a different number of rows than A */
  char b2file[PATH_CAP];
  join(b2file, dir, "B2.h5");
  double small[6] = {1, 2, 3, 4, 5, 6};
  tu_write_matrix(b2file, "/B", 3, 2, small, 2);
  r = run("solve_rows", "oocsolve", "solve", a, b2file, NULL);
  EXPECT(r, 3, b2file, "3 rows");
  CHECK_HASH(a, ha);
  CHECK_CLEAN(dir);
  char x2path[PATH_CAP];
  CHECK_ABSENT(join(x2path, dir, "B2.x.h5"));
  res_free(&r);
}

/* A host BLAS below the CPU's level is named with the remedy (ops.h ooc_ops_cpu_untuned):
 * OpenBLAS honours OPENBLAS_CORETYPE at load, so the child gets Prescott's SSE3 kernels; on a CPU
 * with AVX2 and FMA the notice says which OPENBLAS_CORETYPE to set (the user's setting stands:
 * no restart), and with that one set it says nothing; left to OpenBLAS, the CLI restarts
 * itself with the right one. The run succeeds either way. */
static void t_blas_notice(void) {
  const char *dir = case_dir("blas");
  char a[PATH_CAP];
  join(a, dir, "A.h5");
  if (gen("gen_blas_a", "random", "64", NULL, NULL, a) != 0) return;
  int avx2 = 0, avx512 = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  avx512 = __builtin_cpu_supports("avx512f");
#endif
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  res_t r = run("blas_prescott", "oocsolve", "--device", "cpu", "--force", a, NULL);
  EXPECT_OK(r);
  const char *want = avx512 ? "OPENBLAS_CORETYPE=SkylakeX" : "OPENBLAS_CORETYPE=Haswell";
  int said = strstr(r.out, want) || strstr(r.err, want);
  check_at(said == avx2, __LINE__, "notice %s %s", want,
           avx2 ? "missing" : "given on a CPU without AVX2");
  res_free(&r);
  if (avx2) { /* the remedy it names: no notice */
    setenv("OPENBLAS_CORETYPE", avx512 ? "SkylakeX" : "Haswell", 1);
    r = run("blas_tuned", "oocsolve", "--device", "cpu", "--force", a, NULL);
    EXPECT_OK(r);
    check_at(!strstr(r.out, "OPENBLAS_CORETYPE") && !strstr(r.err, "OPENBLAS_CORETYPE"), __LINE__,
             "no notice once tuned");
    res_free(&r);
  }
  unsetenv("OPENBLAS_CORETYPE");
  /* OpenBLAS's own choice generic (OOCSOLVE_TEST_BLAS_CORE stands for it: this CPU is one it
   * knows) and OPENBLAS_CORETYPE unset: the CLI restarts itself with the core the CPU runs and
   * says so; with OOCSOLVE_NO_RESTART it gives the notice instead. */
  setenv("OOCSOLVE_TEST_BLAS_CORE", "Prescott", 1);
  r = run("blas_restart", "oocsolve", "--device", "cpu", "--force", "--json", a, NULL);
  EXPECT_OK(r);
  char restarted[96];
  snprintf(restarted, sizeof restarted, "restarted with OPENBLAS_CORETYPE=%s",
           avx512 ? "SkylakeX" : "Haswell");
  check_at(!!strstr(r.out, restarted) == avx2, __LINE__, "restart %s",
           avx2 ? "not said" : "on a CPU without AVX2");
  check_at(!strstr(r.out, "in the environment"), __LINE__, "the notice after a restart");
  res_free(&r);
  setenv("OOCSOLVE_NO_RESTART", "1", 1);
  r = run("blas_no_restart", "oocsolve", "--device", "cpu", "--force", "--json", a, NULL);
  EXPECT_OK(r);
  check_at(!strstr(r.out, "restarted with"), __LINE__, "restarted under OOCSOLVE_NO_RESTART");
  check_at(!!strstr(r.out, want) == avx2, __LINE__, "notice %s under OOCSOLVE_NO_RESTART", want);
  res_free(&r);
  unsetenv("OOCSOLVE_NO_RESTART");
  unsetenv("OOCSOLVE_TEST_BLAS_CORE");
}

/* factor, then solve --factor, then logdet: SPD covariance workflow through the CLI. */
static void t_factor_cli(void) {
  const char *dir = case_dir("factor");
  char a[PATH_CAP], l[PATH_CAP], lspec[PATH_CAP + 8], bspec[PATH_CAP + 8], bfile[PATH_CAP],
      x[PATH_CAP];
  join(a, dir, "cov.h5");
  join(l, dir, "cov.chol.h5");
  join(bfile, dir, "obs.h5");
  join(x, dir, "obs.x.h5");
  xfmt(lspec, sizeof lspec, "%s:/L", l);
  xfmt(bspec, sizeof bspec, "%s:/B", bfile);
  if (gen("gen_factor_a", "matern", "300", "--seed", "4", a) != 0) return;
  if (gen("gen_factor_b", "rhs", "300", "--cols", "3", bspec) != 0) return;
  uint64_t ha = tu_file_hash(a);
  res_t r = run("factor", "oocsolve", "factor", "--tile", "64", "--host-mem", "640K", a, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "factor") != NULL && strstr(r.out, "logdet") != NULL);
  res_free(&r);
  CHECK_HASH(a, ha);
  check_at(tu_file_exists(l), __LINE__, "factor wrote %s", l);
  r = run("solve_factor", "oocsolve", "solve", "--factor", lspec, "--json", bspec, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "\"kind\": \"solve\"") != NULL);
  CU_ASSERT(strstr(r.out, "\"method\": \"chol\"") != NULL);
  res_free(&r);
  if (tu_file_exists(x)) {
    int64_t n1, n2, b1, b2, x1, x2;
    double *A = tu_read_matrix(a, &n1, &n2), *B = tu_read_matrix(bspec, &b1, &b2);
    double *X = tu_read_matrix(x, &x1, &x2);
    CU_ASSERT_FATAL(A && B && X);
    CU_ASSERT(tu_solve_ratio(300, 3, A, X, B, DBL_EPSILON / 2) < 16);
    free(A);
    free(B);
    free(X);
  }
  r = run("factor_usage", "oocsolve", "--factor", lspec, a, NULL);
  EXPECT(r, 2, "--factor");
  res_free(&r);
  r = run("factor_usage2", "oocsolve", "solve", "--factor", lspec, a, bspec, NULL);
  EXPECT(r, 2, "B only");
  res_free(&r);
  CHECK_HASH(a, ha);
  CHECK_CLEAN(dir);
}

/* SIGINT in the middle of a slow run (reference kernels, spilling): exit 130, a message, and
 * nothing left behind but the journal and scratch of a checkpoint, which the message names. */
static void t_sigint(void) {
  const char *dir = case_dir("sigint");
  char in[PATH_CAP], out[PATH_CAP];
  join(in, dir, "big.h5");
  join(out, dir, "big.inv.h5");
  if (gen("gen_big", "random", "2000", "--seed", "5", in) != 0) return;
  uint64_t h = tu_file_hash(in);
  const char *args[] = {"--device", "ref", "--check", "none", "--tile", "128", "--host-mem", "8M",
                        in, NULL};
  proc_t p;
  CU_ASSERT_FATAL(spawn_tool(&p, "sigint", "oocsolve", args) == 0);
  /* wait until the output's temporary exists (the run is under way), then half a second more */
  double t0 = now_s();
  char list[1024];
  while (now_s() - t0 < 30 && running(&p) && leftovers(dir, list, sizeof list) == 0)
    sleep_s(0.01);
  sleep_s(0.5);
  leftovers(dir, list, sizeof list);
  int alive = running(&p);
  check_at(alive, __LINE__, "oocsolve still running when SIGINT is sent (%.1f s after start)",
           now_s() - t0);
  if (alive) fprintf(stderr, "[SIGINT after %.2f s; in flight: %s] ", now_s() - t0, list);
  kill(p.pid, SIGINT);
  double t1 = now_s();
  res_t r = finish(&p, wait_tool(&p, 300));
  if (alive) {
    EXPECT(r, 130, "interrupted");
    fprintf(stderr, "[stopped %.2f s after SIGINT] ", now_s() - t1);
  }
  CHECK_ABSENT(out);
  CHECK_HASH(in, h);
  /* A run interrupted after a checkpoint keeps its journal and scratch for --resume (and says
   * so; tests/test_crash.c resumes such runs): here they are removed by hand, and only then must
   * the directory be clean. Without a checkpoint nothing may be left at all. */
  if (strstr(r.err, "--resume")) {
    int found = 0;
    DIR *dd = opendir(dir);
    struct dirent *e;
    while (dd && (e = readdir(dd))) { /* .oocsolve-big.inv.h5-<hash>.journal and .A.scratch */
      char jp[PATH_CAP];
      if (strncmp(e->d_name, ".oocsolve-big.inv.h5-", 21)) continue;
      found += strstr(e->d_name, ".journal") != NULL && strstr(r.err, e->d_name) != NULL;
      unlink(join(jp, dir, e->d_name));
    }
    if (dd) closedir(dd);
    check_at(found == 1, __LINE__, "the journal the message names exists");
  }
  CHECK_CLEAN(dir);
  res_free(&r);
}

static void t_help_version(void) {
  res_t r = run("help", "oocsolve", "--help", NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "usage: oocsolve") != NULL);
  res_free(&r);
  r = run("version", "oocsolve", "--version", NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, OOC_VERSION_STRING) != NULL);
  res_free(&r);
  r = run("noargs", "oocsolve", NULL);
  EXPECT(r, 2, "oocsolve");
  res_free(&r);
}

static void t_binary_present(void) {
  CU_ASSERT_FATAL(have_tool("oocsolve"));
}

/* ---- oocsolve gemm and the iterative methods ------------------------------------------------ */

/* "key": number from a --json line; NAN if absent or null. */
static double json_number(const char *json, const char *key) {
  char k[64];
  xfmt(k, sizeof k, "\"%s\": ", key);
  const char *p = strstr(json, k);
  if (!p) return NAN;
  char *end;
  double v = strtod(p + strlen(k), &end);
  return end == p + strlen(k) ? NAN : v;
}

static void t_gemm_ok(void) {
  const char *dir = case_dir("gemm");
  char a[PATH_CAP], bf[PATH_CAP], c0[PATH_CAP], out[PATH_CAP], out2[PATH_CAP], spec[PATH_CAP + 8];
  join(a, dir, "A.h5");
  join(bf, dir, "B.h5");
  join(c0, dir, "C0.h5");
  join(out, dir, "C.h5");
  join(out2, dir, "C2.h5");
  if (gen("gemm_a", "random", "200", "--seed", "21", a) != 0) return;
  if (gen("gemm_b", "rhs", "200", "--cols", "70", bf) != 0) return;
  if (gen("gemm_c", "rhs", "200", "--cols", "70", c0) != 0) return;
  uint64_t ha = tu_file_hash(a), hb = tu_file_hash(bf), hc = tu_file_hash(c0);
  /* 600 KiB for 530 KiB of matrices plus bookkeeping: the product runs out of core */
  res_t r = run("gemm", "oocsolve", "gemm", "--tile", "64", "--host-mem", "600K", a, bf, "--out",
                out, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "product") != NULL && strstr(r.out, "probe residual") != NULL);
  CU_ASSERT(strstr(r.out, "spilled") != NULL && strstr(r.out, "spilled 0 B") == NULL);
  res_free(&r);
  /* C2 = -2 A B + 0.5 C0, --json */
  r = run("gemm_json", "oocsolve", "gemm", "--json", "--tile", "48", "--alpha", "-2", "--beta",
          "0.5", "--c", c0, a, bf, "--out", out2, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "\"kind\": \"gemm\"") != NULL);
  CU_ASSERT(json_number(r.out, "gemm_k") == 200);
  CU_ASSERT(json_number(r.out, "residual") < 30);
  res_free(&r);
  int64_t m1, k1, k2, n2, x1, x2, y1, y2, z1, z2;
  xfmt(spec, sizeof spec, "%s:/A", a);
  double *A = tu_read_matrix(spec, &m1, &k1);
  xfmt(spec, sizeof spec, "%s:/A", bf);
  double *B = tu_read_matrix(spec, &k2, &n2);
  xfmt(spec, sizeof spec, "%s:/A", c0);
  double *C0 = tu_read_matrix(spec, &z1, &z2);
  xfmt(spec, sizeof spec, "%s:/C", out);
  double *C = tu_file_exists(out) ? tu_read_matrix(spec, &x1, &x2) : NULL;
  xfmt(spec, sizeof spec, "%s:/C", out2);
  double *C2 = tu_file_exists(out2) ? tu_read_matrix(spec, &y1, &y2) : NULL;
  CU_ASSERT_FATAL(A && B && C0);
  CU_ASSERT(C && C2);
  if (C && C2) {
    CU_ASSERT(x1 == 200 && x2 == 70 && y1 == 200 && y2 == 70);
    double e1 = 0, e2 = 0;
    for (int64_t j = 0; j < 70; j++)
      for (int64_t i = 0; i < 200; i++) {
        double s = 0;
        for (int64_t l = 0; l < 200; l++) s += A[i + l * 200] * B[l + j * 200];
        e1 = fmax(e1, fabs(C[i + j * 200] - s));
        e2 = fmax(e2, fabs(C2[i + j * 200] - (-2 * s + 0.5 * C0[i + j * 200])));
      }
    CU_ASSERT(e1 < 1e-12 && e2 < 1e-12);
    if (!(e1 < 1e-12 && e2 < 1e-12)) fprintf(stderr, "\n  gemm errors %g %g\n", e1, e2);
  }
  free(A);
  free(B);
  free(C0);
  free(C);
  free(C2);
  /* inner dimensions disagree: B (200 x 70) times A is 70 vs 200 */
  char bad[PATH_CAP];
  join(bad, dir, "bad.h5");
  r = run("gemm_inner", "oocsolve", "gemm", bf, a, "--out", bad, NULL);
  EXPECT(r, 3, "inner dimensions", bf);
  CHECK_ABSENT(bad);
  res_free(&r);
  r = run("gemm_beta", "oocsolve", "gemm", "--beta", "2", a, bf, "--out", bad, NULL);
  EXPECT(r, 2, "--beta needs --c");
  res_free(&r);
  r = run("gemm_exists", "oocsolve", "gemm", a, bf, "--out", out, NULL);
  EXPECT(r, 5, out);
  res_free(&r);
  CHECK_HASH(a, ha);
  CHECK_HASH(bf, hb);
  CHECK_HASH(c0, hc);
  CHECK_CLEAN(dir);
}

static void t_newton_ok(void) {
  const char *dir = case_dir("newton");
  char in[PATH_CAP], out[PATH_CAP], out2[PATH_CAP], out3[PATH_CAP], sa[PATH_CAP + 8],
      sx[PATH_CAP + 16];
  join(in, dir, "cov.h5");
  join(out, dir, "cov.inv.h5");
  join(out2, dir, "warm.h5");
  join(out3, dir, "h7.h5");
  xfmt(sa, sizeof sa, "%s:/A", in);
  xfmt(sx, sizeof sx, "%s:/inverse", out);
  if (gen("gen_newton", "matern", "200", "--nugget", "0.05", in) != 0) return;
  uint64_t h = tu_file_hash(in);
  res_t r = run("newton", "oocsolve", "--method", "newton", "--tile", "64", "--host-mem", "1M",
                in, NULL);
  EXPECT_OK(r);
  CU_ASSERT(strstr(r.out, "method  newton") != NULL && strstr(r.out, "iterate") != NULL);
  CU_ASSERT(strstr(r.out, "spilled 0 B") == NULL);
  res_free(&r);
  CU_ASSERT_FATAL(tu_file_exists(out));
  int64_t n1, n2, m1, m2;
  double *A = tu_read_matrix(sa, &n1, &n2), *X = tu_read_matrix(sx, &m1, &m2);
  CU_ASSERT_FATAL(A && X);
  double ratio = tu_inverse_ratio(200, A, X, DBL_EPSILON / 2);
  CU_ASSERT(ratio < 30);
  free(A);
  free(X);
  /* warm start from that inverse: nothing to do, and the JSON carries the residuals */
  r = run("newton_warm", "oocsolve", "--json", "--method", "newton", "--warm-start", sx, "--out",
          out2, in, NULL);
  EXPECT_OK(r);
  CU_ASSERT(json_number(r.out, "iterations") == 0);
  CU_ASSERT(strstr(r.out, "\"iter_residual\": [") != NULL);
  CU_ASSERT(strstr(r.out, "\"method\": \"newton\"") != NULL);
  res_free(&r);
  r = run("hyper7", "oocsolve", "--json", "--method", "hyper7", "--max-iter", "30", "--out", out3,
          in, NULL);
  EXPECT_OK(r);
  CU_ASSERT(json_number(r.out, "iterations") >= 1 && json_number(r.out, "residual") < 30);
  res_free(&r);
  /* the cap: exit 4, nothing written */
  char capped[PATH_CAP];
  join(capped, dir, "capped.h5");
  r = run("newton_cap", "oocsolve", "--method", "newton", "--max-iter", "1", "--out", capped, in,
          NULL);
  EXPECT(r, 4, "did not converge in 1 steps", "gj", in);
  CHECK_ABSENT(capped);
  res_free(&r);
  r = run("warm_needs_method", "oocsolve", "--warm-start", sx, in, NULL);
  EXPECT(r, 2, "--warm-start");
  res_free(&r);
  CHECK_HASH(in, h);
  CHECK_CLEAN(dir);
}

/* Symmetric with a positive diagonal but indefinite: newton diverges, exit 4, nothing left. */
static void t_newton_diverges(void) {
  const char *dir = case_dir("diverge");
  char in[PATH_CAP], out[PATH_CAP];
  join(in, dir, "indef.h5");
  join(out, dir, "indef.inv.h5");
  int64_t n = 40;
  double *S = calloc((size_t)(n * n), sizeof *S);
  for (int64_t i = 0; i < n; i += 2) {
    S[i + i * n] = S[(i + 1) + (i + 1) * n] = 1;
    S[i + (i + 1) * n] = S[(i + 1) + i * n] = 1.5;
  }
  tu_write_matrix(in, "/A", n, n, S, 2);
  free(S);
  uint64_t h = tu_file_hash(in);
  res_t r = run("diverge", "oocsolve", "--method", "newton", "--tile", "16", in, NULL);
  EXPECT(r, 4, "diverged", "gj", "chol", in);
  CHECK_ABSENT(out);
  CHECK_HASH(in, h);
  CHECK_CLEAN(dir);
  res_free(&r);
}

/* A method that does not do the job (src/api/methods.h's table): exit 2 before anything is
 * read or written, naming the input and what does the job instead. */
static void t_method_refusals(void) {
  const char *dir = case_dir("refusals");
  char in[PATH_CAP], rhs[PATH_CAP];
  join(in, dir, "A.h5");
  join(rhs, dir, "B.h5");
  double S[16] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2};
  tu_write_matrix(in, "/A", 4, 4, S, 2);
  tu_write_matrix(rhs, "/B", 4, 1, S, 2);
  res_t r = run("logdet_gj", "oocsolve", "logdet", "--method", "gj", in, NULL);
  EXPECT(r, 2, in, "a factor is computed or used here (logdet); --method must be auto, chol or lu");
  res_free(&r);
  r = run("factor_newton", "oocsolve", "factor", "--method", "newton", in, NULL);
  EXPECT(r, 2, in, "(factor); --method must be auto, chol or lu");
  res_free(&r);
  r = run("factored_rbt", "oocsolve", "solve", "--method", "rbt", "--factor", in, rhs, NULL);
  EXPECT(r, 2, in, "(solve --factor); --method must be auto, chol or lu");
  res_free(&r);
  r = run("solve_hyper7", "oocsolve", "solve", "--method", "hyper7", in, rhs, NULL);
  EXPECT(r, 2, in, "--method hyper7 computes inverses only; solve with gj or chol");
  res_free(&r);
  r = run("invert_rbt", "oocsolve", "--method", "rbt", in, NULL);
  EXPECT(r, 2, in, "--method rbt solves A X = B", "for an inverse use --method lu");
  res_free(&r);
  CHECK_CLEAN(dir);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  static const tu_test_t tests[] = {
      {"oocsolve binary is built", t_binary_present},
      {"--help, --version, no arguments", t_help_version},
      {"missing file: exit 5", t_missing_file},
      {"not HDF5: exit 3", t_not_hdf5},
      {"truncated HDF5: exit 3", t_truncated},
      {"missing dataset: exit 3", t_missing_dataset},
      {"ambiguous dataset lists both: exit 3", t_ambiguous},
      {"1-D dataset: exit 3", t_1d},
      {"3-D dataset: exit 3", t_3d},
      {"non-square 3x4: exit 3", t_nonsquare},
      {"string dtype: exit 3", t_string_dtype},
      {"compound dtype: exit 3", t_compound_dtype},
      {"0 x 0 dataset: exit 3", t_empty_0x0},
      {"NaN element: exit 3", t_nan},
      {"Inf element: exit 3", t_inf},
      {"singular names the column: exit 4", t_singular},
      {"output exists: exit 5, --force: exit 0", t_output_exists},
      {"unwritable output directory: exit 5", t_unwritable_dir},
      {"--tile 0: exit 2", t_tile_zero},
      {"--host-mem 12x / -5: exit 2", t_host_mem_bad},
      {"unknown option: exit 2", t_unknown_option},
      {"--host-mem 1K on n=500: exit 6", t_budget_too_small},
      {"invert matern 300 out of core, --json", t_invert_ok},
      {"solve A B:/B writes B.x.h5:/X", t_solve_ok},
      {"a host BLAS below the CPU's level is named with its remedy", t_blas_notice},
      {"factor, solve --factor: the SPD workflow", t_factor_cli},
      {"SIGINT: exit 130, nothing left", t_sigint},
      {"gemm: out of core, alpha/beta/C0, --json, bad shapes", t_gemm_ok},
      {"--method newton/hyper7, --warm-start, --max-iter", t_newton_ok},
      {"--method newton diverges on an indefinite matrix: exit 4", t_newton_diverges},
      {"a method that does not do the job: exit 2, naming what does", t_method_refusals},
      {NULL, NULL},
  };
  return tu_run("cli", tests);
}
