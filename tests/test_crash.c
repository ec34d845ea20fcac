/*
 * test_crash.c: kill -9 and --resume, driven through the oocsolve CLI (docs/RELIABILITY.md).
 *
 * An out-of-core inversion and solve (n = 256, tile 32, stripe 64: 4 steps, about 330 scratch
 * writes, every tile spilled and read back; --checkpoint step, as the kill points need a journal
 * after every step) is killed with SIGKILL at exact points of the
 * checkpoint protocol through the test hook OOCSOLVE_TEST_KILL (base.h): after the k-th journal
 * commit for every k, before the rename of a journal commit, and after the p-th scratch write for
 * p spread over the whole run (load phase, mid-step, mid-checkpoint, write phase). The same
 * command with --resume must then finish with exit 0 and an output whose data are bit-identical
 * to the uninterrupted run's, leaving no journal, scratch, lock or temporary file. Also here:
 * SIGINT at a step boundary (exit 130, "interrupted at step k of N", then --resume), a kill
 * during a resumed run, stale journals refused without --resume, resume refused after an option
 * or input change, a flipped byte in a scratch tile (exit 3 naming the scratch file and tile), a
 * corrupt compressed chunk in the input (exit 3 naming file, dataset and rows/columns).
 * LU (issue 22): `factor`, `solve` and `invert` with --method lu the same way, out of core and
 * in core with --checkpoint step, the factor file's pivots and attributes compared too; its
 * journal refused under another --method; --method rbt not journaled (--resume starts over).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/ckpt_clock.h"
#include "testutil.h"

#ifndef OOC_TOOLS_DIR
#define OOC_TOOLS_DIR "."
#endif

#define CAP 4096

static char g_dir[1024], g_in[CAP], g_rhs[CAP], g_ref[CAP], g_refx[CAP], g_out[CAP];
static double *g_inv, *g_x, *g_chol;
static char g_spd[CAP], g_refc[CAP];
static const char *g_input = g_in; /* what solve_cmd inverts: g_in, or g_spd for Cholesky */
static long g_kills, g_resumes, g_corrupt;

typedef struct {
  int code;
  char err[8192];
} res_t;

/* Run a tool with args (NULL-terminated) and OOCSOLVE_TEST_KILL=kill (NULL: unset). */
static res_t run_tool(const char *tool, const char *kill, const char *const *args) {
  res_t r;
  memset(&r, 0, sizeof r);
  char exe[CAP], errp[CAP];
  snprintf(exe, sizeof exe, "%s/%s", OOC_TOOLS_DIR, tool);
  snprintf(errp, sizeof errp, "%s/stderr.txt", tu_tmpdir());
  const char *argv[40];
  int argc = 0;
  argv[argc++] = exe;
  for (int i = 0; args[i] && argc < 39; i++) argv[argc++] = args[i];
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int in = open("/dev/null", O_RDWR), err = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(in, 1);
    dup2(err, 2);
    if (kill) setenv("OOCSOLVE_TEST_KILL", kill, 1);
    else unsetenv("OOCSOLVE_TEST_KILL");
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                                                          : -1;
  FILE *f = fopen(errp, "rb");
  if (f) {
    size_t n = fread(r.err, 1, sizeof r.err - 1, f);
    r.err[n] = 0;
    fclose(f);
  }
  return r;
}

/* oocsolve HEAD... --device cpu --tile 32 --stripe 64 --quiet --check full [e1] [e2] IN [RHS]
 * --out OUT: head (NULL-terminated) is the command, if any, and the options that differ. */
static res_t oocsolve(const char *const *head, const char *kill, const char *e1, const char *e2,
                      const char *in, const char *rhs, const char *out) {
  static const char *const fixed[] = {"--device", "cpu", "--tile", "32", "--stripe", "64",
                                      "--quiet", "--check", "full", NULL};
  const char *a[40];
  int k = 0;
  for (int i = 0; head[i] && k < 24; i++) a[k++] = head[i];
  for (int i = 0; fixed[i]; i++) a[k++] = fixed[i];
  if (e1) a[k++] = e1;
  if (e2) a[k++] = e2;
  a[k++] = in;
  if (rhs) a[k++] = rhs;
  a[k++] = "--out";
  a[k++] = out;
  a[k] = NULL;
  return run_tool("oocsolve", kill, a);
}

/* oocsolve [solve] --host-mem 512K --checkpoint step ... IN [RHS] --out OUT plus extra args
 * (which may set --checkpoint again: the last one counts). A solve is Gauss-Jordan's (--method
 * gj: auto's general solve is LU's, which lu_cmd below covers). */
static res_t solve_cmd(int solve, const char *kill, const char *out, const char *extra1,
                       const char *extra2) {
  const char *const inv[] = {"--host-mem", "512K", "--checkpoint", "step", NULL};
  const char *const sol[] = {"solve", "--host-mem", "512K", "--method", "gj",
                             "--checkpoint", "step", NULL};
  return oocsolve(solve ? sol : inv, kill, extra1, extra2, g_input, solve ? g_rhs : NULL, out);
}

/* Files in g_dir beyond the inputs and references (and the output when ok). */
static int leftovers(char *list, size_t cap) {
  int n = 0;
  list[0] = 0;
  DIR *d = opendir(g_dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *nm = e->d_name;
    if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "A.h5") || !strcmp(nm, "B.h5") ||
        !strcmp(nm, "ref.h5") || !strcmp(nm, "refx.h5") || !strcmp(nm, "out.h5") ||
        !strcmp(nm, "Az.h5") || !strcmp(nm, "S.h5") || !strcmp(nm, "refc.h5"))
      continue;
    size_t len = strlen(list);
    snprintf(list + len, cap - len, "%s%s", n ? ", " : "", nm);
    n++;
  }
  closedir(d);
  return n;
}

static double *read_out(const char *file, int64_t *r, int64_t *c) {
  char spec[CAP + 16];
  snprintf(spec, sizeof spec, "%s:%s", file, "");
  return tu_read_matrix(spec, r, c);
}

/* The output exists and its data equal the reference bit for bit. */
static int same_bits(int solve) {
  int64_t r = 0, c = 0;
  double *X = read_out(g_out, &r, &c);
  const double *ref = solve ? g_x : g_input == g_spd ? g_chol : g_inv;
  int ok = X && r == 256 && c == (solve ? 5 : 256) &&
           !memcmp(X, ref, (size_t)(r * c) * sizeof(double));
  free(X);
  return ok;
}

static void reset_out(void) {
  char list[CAP + 512];
  unlink(g_out);
  DIR *d = opendir(g_dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, ".oocsolve-", 10) || strstr(e->d_name, ".tmp-")) {
      snprintf(list, sizeof list, "%s/%s", g_dir, e->d_name);
      unlink(list);
    }
  closedir(d);
}

static void setup(void) {
  if (g_inv) return;
  snprintf(g_dir, sizeof g_dir, "%s", tu_path("crash"));
  mkdir(g_dir, 0700);
  snprintf(g_in, sizeof g_in, "%s/A.h5", g_dir);
  snprintf(g_rhs, sizeof g_rhs, "%s/B.h5", g_dir);
  snprintf(g_ref, sizeof g_ref, "%s/ref.h5", g_dir);
  snprintf(g_refx, sizeof g_refx, "%s/refx.h5", g_dir);
  snprintf(g_out, sizeof g_out, "%s/out.h5", g_dir);
  const char *ga[] = {"random", "--n", "256", "--seed", "9", g_in, NULL};
  const char *gb[] = {"rhs", "--n", "256", "--cols", "5", "--seed", "2", g_rhs, NULL};
  CU_ASSERT_FATAL(run_tool("oocgen", NULL, ga).code == 0);
  CU_ASSERT_FATAL(run_tool("oocgen", NULL, gb).code == 0);
  res_t r = solve_cmd(0, NULL, g_ref, "--checkpoint", "off");
  CU_ASSERT_FATAL(r.code == 0);
  r = solve_cmd(1, NULL, g_refx, "--checkpoint", "off");
  CU_ASSERT_FATAL(r.code == 0);
  /* an SPD matrix: auto picks Cholesky */
  snprintf(g_spd, sizeof g_spd, "%s/S.h5", g_dir);
  snprintf(g_refc, sizeof g_refc, "%s/refc.h5", g_dir);
  const char *gs[] = {"matern", "--n", "256", "--seed", "4", g_spd, NULL};
  CU_ASSERT_FATAL(run_tool("oocgen", NULL, gs).code == 0);
  g_input = g_spd;
  r = solve_cmd(0, NULL, g_refc, "--checkpoint", "off");
  g_input = g_in;
  CU_ASSERT_FATAL(r.code == 0);
  int64_t a, b;
  g_inv = read_out(g_ref, &a, &b);
  g_x = read_out(g_refx, &a, &b);
  g_chol = read_out(g_refc, &a, &b);
  CU_ASSERT_FATAL(g_inv && g_x && g_chol);
}

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    int ok_ = (cond);                                                                              \
    CU_ASSERT(ok_);                                                                                \
    if (!ok_) {                                                                                    \
      fprintf(stderr, "\n  FAILED line %d: ", __LINE__);                                           \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)

/* ---- LU (issue 22): factor, solve and invert with --method lu ------------------------------ */

enum { LUF = 0, LUS = 1, LUI = 2 };
static const char *const lu_names[3] = {"factor", "solve", "invert"};
static const int lu_steps[3] = {4, 5, 8}; /* the factor's 4 stripes, + 1 RHS stripe, + 4 */
static uint64_t g_lusig[3], g_rbtsig;

/* oocsolve <factor|solve|invert> --method <method> on g_in [g_rhs] --out g_out, out of core as
 * solve_cmd (--host-mem 512K: A alone is 512 KiB), or in core (--host-mem 64M), with
 * --checkpoint step; then e1, e2 if given. */
static res_t lu_cmd(int which, int incore, const char *method, const char *kill, const char *e1,
                    const char *e2) {
  const char *const head[] = {lu_names[which], "--method", method, "--host-mem",
                              incore ? "64M" : strcmp(method, "rbt") ? "512K" : "1M",
                              "--checkpoint", "step", NULL};
  return oocsolve(head, kill, e1, e2, g_in, which == LUS ? g_rhs : NULL, g_out);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len) {
  const unsigned char *c = p;
  for (size_t i = 0; i < len; i++) h = (h ^ c[i]) * 0x100000001b3ULL;
  return h;
}

/* The bits of an LU result in g_out: its data, and for a factor file the pivots and the
 * attributes that carry the run's state (log-determinant and sign, ||A||_inf, the growth);
 * 0 if anything is missing. */
static uint64_t lu_sig(int which) {
  static const char *const dset[3] = {"/LU", "/X", "/inverse"};
  char spec[CAP + 16];
  int64_t r = 0, c = 0;
  snprintf(spec, sizeof spec, "%s:%s", g_out, dset[which]);
  double *X = tu_read_matrix(spec, &r, &c);
  if (!X) return 0;
  uint64_t h = fnv(0xcbf29ce484222325ULL, X, (size_t)(r * c) * sizeof(double));
  h = fnv(h, &c, sizeof c);
  free(X);
  if (which != LUF) return h;
  snprintf(spec, sizeof spec, "%s:/ipiv", g_out);
  double *p = tu_read_matrix(spec, &r, &c);
  if (!p) return 0;
  h = fnv(h, p, (size_t)(r * c) * sizeof(double));
  free(p);
  static const char *const attrs[] = {"logdet_input", "logdet_sign", "norminf_input",
                                      "pivot_growth"};
  hid_t f = H5Fopen(g_out, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "/LU", H5P_DEFAULT);
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs && h; i++) {
    double v = 0;
    hid_t at = H5Aopen(d, attrs[i], H5P_DEFAULT);
    if (at < 0 || H5Aread(at, H5T_NATIVE_DOUBLE, &v) < 0) h = 0;
    else h = fnv(h, &v, sizeof v);
    if (at >= 0) H5Aclose(at);
  }
  H5Dclose(d);
  H5Fclose(f);
  return h;
}

/* What kill_resume runs and compares: the gj/auto commands of solve_cmd (lu < 0: `which` is
 * its solve flag) or an LU command (lu_cmd with method "lu", in core or not). */
typedef struct {
  int lu, which, incore;
} kind_t;

static res_t kind_run(const kind_t *k, const char *kill, const char *extra) {
  return k->lu >= 0 ? lu_cmd(k->which, k->incore, "lu", kill, extra, NULL)
                    : solve_cmd(k->which, kill, g_out, extra, NULL);
}

static int kind_same(const kind_t *k) {
  return k->lu >= 0 ? lu_sig(k->which) == g_lusig[k->which] : same_bits(k->which);
}

static const char *kind_name(const kind_t *k) {
  return k->lu >= 0 ? lu_names[k->which] : k->which ? "solve" : "invert";
}

/* Kill at `kill`, then resume (again with `kill2` if given, then clean) and compare. Returns
 * whether the first run was killed (a kill point past the run's end lets it finish). */
static int kill_resume(const kind_t *k, const char *kill, const char *kill2) {
  reset_out();
  uint64_t h = tu_file_hash(g_input), hb = tu_file_hash(g_rhs);
  res_t r = kind_run(k, kill, NULL);
  int killed = r.code == 128 + SIGKILL;
  if (killed) {
    g_kills++;
    CHECK(!tu_file_exists(g_out), "no output after a kill at %s", kill);
    if (kill2) {
      r = kind_run(k, kill2, "--resume");
      if (r.code == 128 + SIGKILL) g_kills++;
      else CHECK(r.code == 0, "second run (kill at %s) exit %d: %s", kill2, r.code, r.err);
    }
    r = kind_run(k, NULL, "--resume");
    g_resumes++;
  }
  CHECK(r.code == 0, "%s killed at %s: resume exit %d: %s", kind_name(k), kill, r.code, r.err);
  CHECK(kind_same(k), "%s killed at %s: output differs from the uninterrupted run", kind_name(k),
        kill);
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "killed at %s: left behind: %s", kill, list);
  CHECK(tu_file_hash(g_input) == h && tu_file_hash(g_rhs) == hb, "inputs unchanged");
  return killed;
}

static void kill_and_resume(int solve, const char *kill, const char *kill2) {
  kind_t k = {-1, solve, 0};
  kill_resume(&k, kill, kill2);
}

static void t_kill_after_commit(void) {
  setup();
  char k[64];
  for (int solve = 0; solve <= 1; solve++)
    for (int c = 1; c <= 4; c++) {
      snprintf(k, sizeof k, "commit:%d", c);
      kill_and_resume(solve, k, NULL);
    }
}

static void t_kill_before_rename(void) {
  setup();
  char k[64];
  for (int c = 1; c <= 4; c++) {
    snprintf(k, sizeof k, "prerename:%d", c);
    kill_and_resume(0, k, NULL);
  }
}

static void t_kill_at_puts(void) {
  setup();
  static const int puts[] = {1, 13, 40, 64, 65, 97, 120, 150, 181, 222, 263, 300, 330, 5000};
  char k[64];
  for (int solve = 0; solve <= 1; solve++)
    for (size_t i = 0; i < sizeof puts / sizeof *puts; i++) {
      if (solve && i % 2) continue; /* the solve spills less; every other point is enough */
      snprintf(k, sizeof k, "put:%d", puts[i]);
      kill_and_resume(solve, k, NULL);
    }
}

/* The Cholesky inverse (auto on an SPD matrix) journals its sweep steps the same way. */
static void t_kill_chol(void) {
  setup();
  g_input = g_spd;
  char k[64];
  for (int c = 1; c <= 4; c++) {
    snprintf(k, sizeof k, "commit:%d", c);
    kill_and_resume(0, k, NULL);
  }
  static const int puts[] = {1, 50, 100, 170, 240, 310};
  for (size_t i = 0; i < sizeof puts / sizeof *puts; i++) {
    snprintf(k, sizeof k, "put:%d", puts[i]);
    kill_and_resume(0, k, NULL);
  }
  kill_and_resume(0, "commit:1", "commit:2");
  reset_out();
  res_t r = solve_cmd(0, "commit:2:INT", g_out, NULL, NULL);
  CHECK(r.code == 130 && strstr(r.err, "interrupted at step 2 of 4"), "chol SIGINT: %d %s",
        r.code, r.err);
  const char *a[] = {"--device", "cpu", "--tile", "32", "--stripe", "64", "--host-mem", "512K",
                     "--quiet", "--method", "gj", "--resume", g_spd, "--out", g_out, NULL};
  r = run_tool("oocsolve", NULL, a);
  CHECK(r.code == 2 && strstr(r.err, "--method chol"), "resume as gj: exit %d: %s", r.code,
        r.err);
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "chol resume after SIGINT: %d %s", r.code, r.err);
  /* SIGINT inside a step with the default interval: the step finished and checkpointed first */
  reset_out();
  r = solve_cmd(0, "put:50:INT", g_out, "--checkpoint", "300");
  CHECK(r.code == 130 && strstr(r.err, "stopping once this step is checkpointed") &&
        strstr(r.err, "rerun with --resume"), "chol SIGINT in a step: exit %d: %s", r.code,
        r.err);
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "chol resume after SIGINT in a step: %d %s", r.code, r.err);
  g_input = g_in;
  reset_out();
}

static void t_kill_twice(void) {
  setup();
  kill_and_resume(0, "commit:1", "put:90");
  kill_and_resume(0, "put:70", "commit:2");
  kill_and_resume(1, "commit:2", "commit:1");
}

static void t_sigint(void) {
  setup();
  reset_out();
  res_t r = solve_cmd(0, "commit:2:INT", g_out, NULL, NULL);
  CHECK(r.code == 130, "SIGINT: exit %d: %s", r.code, r.err);
  CHECK(strstr(r.err, "interrupted at step 2 of 4") != NULL, "message: %s", r.err);
  CHECK(strstr(r.err, "rerun with --resume to continue") != NULL, "message: %s", r.err);
  CHECK(!tu_file_exists(g_out), "no output after SIGINT");
  char j[CAP + 64];
  CHECK(tu_state_file(g_dir, "out.h5", ".journal", j, sizeof j), "journal kept after SIGINT");
  /* SIGTERM during the resumed run, after its first commit: the same, at step 3 */
  r = solve_cmd(0, "commit:1:TERM", g_out, "--resume", NULL);
  CHECK(r.code == 130 && strstr(r.err, "interrupted at step 3 of 4"), "SIGTERM: exit %d: %s",
        r.code, r.err);
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "resume after SIGINT: exit %d: %s", r.code, r.err);
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  /* SIGINT inside a step (at a scratch write) with the default interval, which journals nothing
   * in a run this short: the step is finished and checkpointed before the run stops, and the
   * resume gives the same bits. A signal during the load, before the steps, or during the
   * output's write, after the last one: at once. */
  reset_out();
  r = solve_cmd(0, "put:150:INT", g_out, "--checkpoint", "300");
  CHECK(r.code == 130 && strstr(r.err, "stopping once this step is checkpointed (step 3 of 4)") &&
        strstr(r.err, "interrupted at step 3 of 4; rerun with --resume to continue"),
        "SIGINT in a step: exit %d: %s", r.code, r.err);
  CHECK(!tu_file_exists(g_out), "no output after SIGINT");
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "resume after SIGINT in a step: exit %d: %s", r.code, r.err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
  r = solve_cmd(0, "put:1:INT", g_out, "--checkpoint", "300");
  CHECK(r.code == 130 && !strstr(r.err, "stopping once") && strstr(r.err, "interrupted") &&
        !strstr(r.err, "--resume"), "SIGINT in the load: exit %d: %s", r.code, r.err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  r = solve_cmd(0, "h5out:2:INT", g_out, "--checkpoint", "300");
  CHECK(r.code == 130 && !strstr(r.err, "stopping once") &&
        strstr(r.err, "no checkpoint was written"), "SIGINT in the write: exit %d: %s", r.code,
        r.err);
  CHECK(!tu_file_exists(g_out), "no output after SIGINT in the write");
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}

/* Stale state is never mixed in: refused without --resume, refused when anything differs. */
static void t_stale_and_mismatch(void) {
  setup();
  reset_out();
  char j[CAP + 64];
  res_t r = solve_cmd(0, "commit:2", g_out, NULL, NULL);
  CHECK(r.code == 137, "kill: exit %d", r.code);
  CHECK(tu_state_file(g_dir, "out.h5", ".journal", j, sizeof j), "journal after the kill");
  uint64_t hj = tu_file_hash(j);
  r = solve_cmd(0, NULL, g_out, NULL, NULL);
  CHECK(r.code == 5 && strstr(r.err, j) && strstr(r.err, "--resume"),
        "stale journal without --resume: exit %d: %s", r.code, r.err);
  const char *a[] = {"--device", "cpu", "--tile", "16", "--stripe", "64", "--host-mem", "512K",
                     "--quiet", "--resume", g_in, "--out", g_out, NULL};
  r = run_tool("oocsolve", NULL, a);
  CHECK(r.code == 2 && strstr(r.err, "--tile 32, this run has 16"),
        "resume with another tile: exit %d: %s", r.code, r.err);
  CHECK(tu_file_hash(j) == hj, "the journal is untouched by refused runs");
  /* the input touched (same content, new mtime): the identity is the content (issue 20), so
   * the run resumes; an edit in place that keeps the mtime is refused (reliab_corpus.py
   * identity) */
  struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  sleep(1);
  CU_ASSERT(utimensat(AT_FDCWD, g_in, ts, 0) == 0);
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "touched input resumes: exit %d: %s", r.code, r.err);
  reset_out();
  r = solve_cmd(0, NULL, g_out, NULL, NULL);
  CHECK(r.code == 0 && same_bits(0), "fresh run after removing the journal: %d %s", r.code,
        r.err);
  reset_out();
}

/* Payload bytes of every scratch slot flipped: the resumed run must notice. */
static int flip_scratch(const char *path) {
  int fd = open(path, O_RDWR);
  if (fd < 0) return 0;
  struct stat sb;
  fstat(fd, &sb);
  int flipped = 0;
  for (off_t off = 0; off + 4096 <= sb.st_size; off += 4096) {
    char magic[8];
    if (pread(fd, magic, 8, off) != 8 || memcmp(magic, "OOCSCR01", 8)) continue;
    unsigned char c;
    if (pread(fd, &c, 1, off + 64 + 777) != 1) continue;
    c ^= 0x10;
    if (pwrite(fd, &c, 1, off + 64 + 777) == 1) flipped++;
  }
  close(fd);
  return flipped;
}

static void t_corrupt_scratch(void) {
  setup();
  reset_out();
  res_t r = solve_cmd(0, "commit:2", g_out, NULL, NULL);
  CHECK(r.code == 137, "kill: exit %d", r.code);
  char sp[CAP + 64];
  CHECK(tu_state_file(g_dir, "out.h5", ".A.scratch", sp, sizeof sp), "scratch after the kill");
  int flipped = flip_scratch(sp);
  CHECK(flipped > 0, "flipped bytes in %d slots", flipped);
  g_corrupt += flipped;
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 3, "corrupt scratch: exit %d: %s", r.code, r.err);
  CHECK(strstr(r.err, sp) && strstr(r.err, "tile") &&
            strstr(r.err, "corrupt") && strstr(r.err, "A.h5"),
        "message names the input, scratch file and tile: %s", r.err);
  CHECK(!tu_file_exists(g_out), "no output after corruption");
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "corrupt state removed: left %s", list);
  reset_out();
}

/* A compressed input chunk damaged in the middle of the file. */
static void t_corrupt_input_chunk(void) {
  setup();
  reset_out();
  char z[CAP];
  snprintf(z, sizeof z, "%s/Az.h5", g_dir);
  const char *ga[] = {"random", "--n", "256", "--seed", "9", "--tile", "64", "--compress", "zstd",
                      "--force", z, NULL};
  CU_ASSERT_FATAL(run_tool("oocgen", NULL, ga).code == 0);
  hid_t f = H5Fopen(z, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/A", H5P_DEFAULT), sp = H5Dget_space(d);
  hsize_t off[2], nch = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
  unsigned mask = 0;
  H5Dget_num_chunks(d, sp, &nch);
  CU_ASSERT_FATAL(nch == 16);
  CU_ASSERT(H5Dget_chunk_info(d, sp, 9, off, &mask, &addr, &size) >= 0); /* chunk (2, 1) */
  H5Sclose(sp);
  H5Dclose(d);
  H5Fclose(f);
  int fd = open(z, O_RDWR);
  unsigned char junk[64];
  memset(junk, 0xA5, sizeof junk);
  CU_ASSERT(pwrite(fd, junk, sizeof junk, (off_t)(addr + size / 2)) == (ssize_t)sizeof junk);
  close(fd);
  g_corrupt++;
  uint64_t h = tu_file_hash(z);
  const char *a[] = {"--device", "cpu", "--tile", "32", "--stripe", "64", "--host-mem", "512K",
                     "--quiet", z, "--out", g_out, NULL};
  res_t r = run_tool("oocsolve", NULL, a);
  char rows[64];
  snprintf(rows, sizeof rows, "columns %llu..", (unsigned long long)(off[1] / 32 * 32));
  CHECK(r.code == 3 && strstr(r.err, "Az.h5:/A") && strstr(r.err, "decode"),
        "corrupt chunk: exit %d: %s", r.code, r.err);
  CHECK(strstr(r.err, rows) != NULL, "names the columns (%s): %s", rows, r.err);
  CHECK(!tu_file_exists(g_out), "no output");
  CHECK(tu_file_hash(z) == h, "input untouched");
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  unlink(z);
}


/* The uninterrupted LU references (no journal), and rbt's. */
static void setup_lu(void) {
  setup();
  if (g_lusig[0]) return;
  for (int w = 0; w < 3; w++) {
    reset_out();
    res_t r = lu_cmd(w, 0, "lu", NULL, "--checkpoint", "off");
    g_lusig[w] = r.code == 0 ? lu_sig(w) : 0;
    CHECK(g_lusig[w] != 0, "LU %s reference: exit %d: %s", lu_names[w], r.code, r.err);
  }
  reset_out();
  res_t r = lu_cmd(LUS, 0, "rbt", NULL, "--checkpoint", "off");
  g_rbtsig = r.code == 0 ? lu_sig(LUS) : 0;
  CHECK(g_rbtsig != 0, "rbt reference: exit %d: %s", r.code, r.err);
  reset_out();
}

/* Out of core: every step is journaled; a kill after each commit, before a rename, at scratch
 * writes from the load to the write phase, and twice in a row, then --resume: the same bits
 * (the factor file's pivots and state attributes too). */
static void t_kill_lu(void) {
  setup_lu();
  char k[64];
  static const int puts[3][4] = {{20, 90, 160, 0}, {1, 60, 150, 260}, {30, 120, 250, 420}};
  for (int w = 0; w < 3; w++) {
    kind_t kd = {1, w, 0};
    for (int c = 1; c <= lu_steps[w]; c++) {
      snprintf(k, sizeof k, "commit:%d", c);
      CHECK(kill_resume(&kd, k, NULL), "LU %s: no journal commit %d", lu_names[w], c);
    }
    snprintf(k, sizeof k, "commit:%d", lu_steps[w] + 1); /* past the last: the run finishes */
    CHECK(!kill_resume(&kd, k, NULL), "LU %s: more commits than steps", lu_names[w]);
    CHECK(kill_resume(&kd, "prerename:2", NULL), "LU %s: prerename:2", lu_names[w]);
    for (int i = 0; i < 4 && puts[w][i]; i++) {
      snprintf(k, sizeof k, "put:%d", puts[w][i]);
      kill_resume(&kd, k, NULL);
    }
  }
  kind_t inv = {1, LUI, 0}, sol = {1, LUS, 0};
  kill_resume(&inv, "commit:2", "commit:3"); /* the resumed run killed after step 5 */
  kill_resume(&inv, "commit:5", "put:30");   /* ... in its RHS stripes */
  kill_resume(&sol, "commit:1", "put:40");
}

/* In core with --checkpoint step: every step is journaled; kills and SIGINT, then --resume
 * (the uninterrupted out-of-core run's bits). */
static void t_kill_lu_incore(void) {
  setup_lu();
  char k[64];
  for (int w = 0; w < 3; w++) {
    kind_t kd = {1, w, 1};
    for (int c = 1; c <= lu_steps[w]; c += lu_steps[w] > 4 ? 2 : 1) {
      snprintf(k, sizeof k, "commit:%d", c);
      CHECK(kill_resume(&kd, k, NULL), "LU %s in core: no journal commit %d", lu_names[w], c);
    }
    snprintf(k, sizeof k, "commit:%d", lu_steps[w] + 1);
    CHECK(!kill_resume(&kd, k, NULL), "LU %s in core: more commits than steps", lu_names[w]);
  }
  reset_out();
  res_t r = lu_cmd(LUI, 1, "lu", "commit:3:INT", NULL, NULL);
  CHECK(r.code == 130 && strstr(r.err, "interrupted at step 3 of 8"), "LU invert in core, "
        "SIGINT: exit %d: %s", r.code, r.err);
  r = lu_cmd(LUI, 1, "lu", NULL, "--resume", NULL);
  CHECK(r.code == 0 && lu_sig(LUI) == g_lusig[LUI], "LU invert in core, resume after SIGINT: "
        "exit %d: %s", r.code, r.err);
  g_resumes++;
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}

/* SIGINT at a step boundary (exit 130, the journal kept); the journal names method lu: another
 * --method is refused (exit 2, the journal untouched); auto resumes it as LU, planned for LU
 * (job.c: ckpt_journal_method), a solve and an inverse alike. */
static void t_lu_sigint_and_method(void) {
  setup_lu();
  char j[CAP + 64];
  for (int w = LUS; w <= LUI; w++) {
    reset_out();
    res_t r = lu_cmd(w, 0, "lu", "commit:2:INT", NULL, NULL);
    char msg[64];
    snprintf(msg, sizeof msg, "interrupted at step 2 of %d", lu_steps[w]);
    CHECK(r.code == 130 && strstr(r.err, msg) && strstr(r.err, "rerun with --resume"),
          "LU %s SIGINT: exit %d: %s", lu_names[w], r.code, r.err);
    CHECK(tu_state_file(g_dir, "out.h5", ".journal", j, sizeof j), "journal kept after SIGINT");
    uint64_t hj = tu_file_hash(j);
    r = lu_cmd(w, 0, "gj", NULL, "--resume", NULL);
    CHECK(r.code == 2 && strstr(r.err, "--method lu"), "LU %s resumed as gj: exit %d: %s",
          lu_names[w], r.code, r.err);
    r = lu_cmd(w, 0, "chol", NULL, "--resume", NULL);
    CHECK(r.code == 2 && strstr(r.err, "--method lu"), "LU %s resumed as chol: exit %d: %s",
          lu_names[w], r.code, r.err);
    CHECK(tu_file_hash(j) == hj, "the journal is untouched by refused runs");
    /* auto resumes the journal's method (an inverse, which auto alone would give to gj, too) */
    r = lu_cmd(w, 0, "auto", NULL, "--resume", NULL);
    CHECK(r.code == 0 && lu_sig(w) == g_lusig[w], "LU %s resumed: exit %d: %s", lu_names[w],
          r.code, r.err);
    g_resumes++;
    char list[CAP];
    CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
    /* SIGINT inside a step with the default interval (nothing journaled yet): a step is
     * finished and checkpointed first, and the resume gives the same bits */
    reset_out();
    r = lu_cmd(w, 0, "lu", "put:80:INT", "--checkpoint", "300");
    CHECK(r.code == 130 && strstr(r.err, "stopping once this step is checkpointed") &&
          strstr(r.err, "rerun with --resume"), "LU %s SIGINT in a step: exit %d: %s",
          lu_names[w], r.code, r.err);
    r = lu_cmd(w, 0, "lu", NULL, "--resume", NULL);
    CHECK(r.code == 0 && lu_sig(w) == g_lusig[w], "LU %s resumed after SIGINT in a step: exit "
          "%d: %s", lu_names[w], r.code, r.err);
    g_resumes++;
    CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  }
  /* LU's factor, default interval: a signal in step 2, which read step 3's stripe ahead, is kept
   * by a checkpoint after step 3 (the step after), and the resume gives the same bits; a signal
   * in the last step, which cannot end in a checkpoint, gets no promise and keeps nothing */
  reset_out();
  char list[CAP];
  res_t r = lu_cmd(LUF, 0, "lu", "put:80:INT", "--checkpoint", "300");
  CHECK(r.code == 130 && strstr(r.err, "stopping once this step is checkpointed (step 2 of 4)") &&
        strstr(r.err, "interrupted at step 3 of 4; rerun with --resume"),
        "LU factor SIGINT in step 2: exit %d: %s", r.code, r.err);
  r = lu_cmd(LUF, 0, "lu", NULL, "--resume", NULL);
  CHECK(r.code == 0 && lu_sig(LUF) == g_lusig[LUF], "LU factor resumed after SIGINT in step 2: "
        "exit %d: %s", r.code, r.err);
  g_resumes++;
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
  r = lu_cmd(LUF, 0, "lu", "put:110:INT", "--checkpoint", "300");
  CHECK(r.code == 130 && !strstr(r.err, "stopping once") &&
        strstr(r.err, "no checkpoint was written"), "LU factor SIGINT in its last step: exit %d: "
        "%s", r.code, r.err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}

/* rbt is not journaled: a killed run leaves no journal, and --resume starts over (the same
 * bits, nothing left behind). */
static void t_rbt_not_journaled(void) {
  setup_lu();
  reset_out();
  res_t r = lu_cmd(LUS, 0, "rbt", "put:40", NULL, NULL);
  CHECK(r.code == 137, "rbt killed: exit %d: %s", r.code, r.err);
  char j[CAP + 64];
  CHECK(!tu_state_file(g_dir, "out.h5", ".journal", j, sizeof j), "rbt wrote a journal");
  r = lu_cmd(LUS, 0, "rbt", NULL, "--resume", NULL);
  CHECK(r.code == 0 && lu_sig(LUS) == g_rbtsig, "rbt rerun with --resume: exit %d: %s", r.code,
        r.err);
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}

/* ---- checkpoints by time interval, in core and out of core (library level) ------------------ */

/* gj's steps tick "eliminate", LU's "factor" then "solve": stop in the middle of either */
static int stop_halfway(void *user, const char *phase, double fraction) {
  (void)user;
  return (!strcmp(phase, "eliminate") || !strcmp(phase, "factor")) && fraction >= 0.6;
}

/* The same moment, but the callback asks the way a first Ctrl-C does (ooc_ctx_request_stop:
 * finish the step, checkpoint it, stop) and returns 0; `times` 2 asks twice (a second Ctrl-C:
 * at once). What the first request answered goes to `graceful`. */
typedef struct {
  ooc_ctx_t *ctx;
  int times, asked, graceful;
} ask_stop_t;

static int ask_stop_halfway(void *user, const char *phase, double fraction) {
  ask_stop_t *a = user;
  if (stop_halfway(NULL, phase, fraction))
    for (; a->asked < a->times; a->asked++) {
      int g = ooc_ctx_request_stop(a->ctx);
      if (a->asked == 0) a->graceful = g;
    }
  return 0;
}

static int g_interval_method = OOC_METHOD_GJ;

static int g_interval_ooc; /* the runs below out of core (--host-mem 512K) */

/* interrupt: 0 none, 1 the callback stops the run, 2 it asks to stop once (ask_stop_halfway;
 * *graceful: its answer), 3 twice */
static ooc_status_t interval_run_ask(double checkpoint, int resume, int interrupt,
                                     ooc_report_t *rep, char *err, size_t cap, int *graceful) {
  ooc_ctx_t *ctx = NULL;
  ooc_ctx_create(&ctx);
  ask_stop_t ask = {ctx, interrupt - 1, 0, -1};
  if (interrupt == 1) ooc_ctx_set_progress(ctx, stop_halfway, NULL);
  if (interrupt >= 2) ooc_ctx_set_progress(ctx, ask_stop_halfway, &ask);
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.tile = 32;
  o.stripe = 64;
  o.host_mem = g_interval_ooc ? 512 << 10 : 64 << 20; /* in core the whole matrix fits; 4 steps */
  o.method = g_interval_method;
  o.checkpoint = checkpoint;
  o.resume = resume;
  char out[CAP + 16];
  snprintf(out, sizeof out, "%s:/inverse", g_out);
  ooc_status_t st = ooc_invert(ctx, g_in, out, &o, rep);
  snprintf(err, cap, "%s", ooc_ctx_error(ctx));
  CU_ASSERT(ooc_ctx_host_bytes(ctx) == 0 && ooc_ctx_open_files(ctx) == 0);
  CU_ASSERT(ooc_ctx_request_stop(ctx) == 0); /* after the run: no step end to wait for */
  ooc_ctx_destroy(ctx);
  if (graceful) *graceful = ask.graceful;
  return st;
}

static ooc_status_t interval_run(double checkpoint, int resume, int interrupt, ooc_report_t *rep,
                                 char *err, size_t cap) {
  return interval_run_ask(checkpoint, resume, interrupt, rep, err, cap, NULL);
}

/* Runs of gj's or LU's inverse, in core or out of core (the same policy, docs/RELIABILITY.md),
 * stopped by the progress callback: with the default interval no checkpoint exists and nothing
 * is left; with a tiny one every step but the last is journaled, and the resume gives the
 * out-of-core reference's bits; with "off" no journal. Out of core, uninterrupted: the default
 * interval journals nothing (a kill hook after the first commit never fires, the run completes),
 * a tiny one every step but the last. */
static void interval_cases(int method, int ooc) {
  setup_lu();
  reset_out();
  ooc_report_t rep;
  char err[4096], list[CAP];
  int lu = method == OOC_METHOD_LU;
  g_interval_method = method;
  g_interval_ooc = ooc;
  ooc_status_t st = interval_run(0, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "no checkpoint was written"), "%s: %s",
        ooc_status_str(st), err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  st = interval_run(1e-6, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "--resume"), "%s: %s", ooc_status_str(st), err);
  if (!ooc) CHECK(rep.bytes_unspilled == 0, "in core: nothing read back from scratch");
  st = interval_run(1e-6, 1, 0, &rep, err, sizeof err);
  CHECK(st == OOC_OK && rep.resumed_step >= 2 && !strcmp(rep.method, lu ? "lu" : "gj"),
        "resume: %s %s (from step %lld, %s)", ooc_status_str(st), err,
        (long long)rep.resumed_step, rep.method);
  CHECK(lu ? lu_sig(LUI) == g_lusig[LUI] : same_bits(0),
        "in-core resume gives the out-of-core reference's bits");
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  g_resumes++;
  reset_out();
  st = interval_run(OOC_CHECKPOINT_NEVER, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "checkpoints are off"), "%s", err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  /* A stop asked for once (a first Ctrl-C) at the same moment, default interval: the step it
   * came in is finished and checkpointed (LU is asked at the tick between two steps, before the
   * next one reads ahead), so the resume continues from there, to the reference's bits. Asked
   * twice: at once, nothing kept; asked once without checkpoints: at once. */
  int graceful = -1;
  st = interval_run_ask(0, 0, 2, &rep, err, sizeof err, &graceful);
  CHECK(graceful == 1 && st == OOC_ERR_INTERRUPTED && strstr(err, "interrupted at step") &&
        strstr(err, "rerun with --resume"), "asked to stop: %d %s: %s", graceful,
        ooc_status_str(st), err);
  long long stopped = -1;
  const char *at = strstr(err, "interrupted at step ");
  if (at) sscanf(at, "interrupted at step %lld", &stopped);
  st = interval_run(0, 1, 0, &rep, err, sizeof err);
  CHECK(st == OOC_OK && rep.resumed_step == stopped && stopped >= 1,
        "resume after a stop asked for: %s %s (from step %lld, stopped at %lld)",
        ooc_status_str(st), err, (long long)rep.resumed_step, (long long)stopped);
  CHECK(lu ? lu_sig(LUI) == g_lusig[LUI] : same_bits(0), "the reference's bits");
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  g_resumes++;
  reset_out();
  st = interval_run_ask(0, 0, 3, &rep, err, sizeof err, &graceful);
  CHECK(graceful == 1 && st == OOC_ERR_INTERRUPTED && strstr(err, "no checkpoint was written"),
        "asked twice: %s: %s", ooc_status_str(st), err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  st = interval_run_ask(OOC_CHECKPOINT_NEVER, 0, 2, &rep, err, sizeof err, &graceful);
  CHECK(graceful == 0 && st == OOC_ERR_INTERRUPTED && strstr(err, "checkpoints are off"),
        "asked once, checkpoints off: %s", err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  if (ooc) { /* uninterrupted, through the CLI and its kill hook: which commits happen */
    int nst = lu ? lu_steps[LUI] : 4;
    char last[32], before[32];
    snprintf(last, sizeof last, "commit:%d", nst);       /* the last step's: never */
    snprintf(before, sizeof before, "commit:%d", nst - 1); /* the one before: with a tiny one */
    const char *const kills[3] = {"commit:1", last, before};
    const char *const every[3] = {"300", "0.000001", "0.000001"};
    for (int c = 0; c < 3; c++) {
      reset_out();
      res_t r = lu ? lu_cmd(LUI, 0, "lu", kills[c], "--checkpoint", every[c])
                   : solve_cmd(0, kills[c], g_out, "--checkpoint", every[c]);
      int want = c < 2 ? 0 : 128 + SIGKILL;
      CHECK(r.code == want, "out of core, --checkpoint %s, kill at %s: exit %d (want %d) %s",
            every[c], kills[c], r.code, want, r.err);
      if (c < 2) CHECK(lu ? lu_sig(LUI) == g_lusig[LUI] : same_bits(0), "the reference's bits");
      if (c < 2) CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
    }
    reset_out();
  }
  g_interval_method = OOC_METHOD_GJ;
  g_interval_ooc = 0;
  reset_out();
}

static void t_incore_interval(void) { interval_cases(OOC_METHOD_GJ, 0); }
static void t_incore_interval_lu(void) { interval_cases(OOC_METHOD_LU, 0); }
static void t_ooc_interval(void) { interval_cases(OOC_METHOD_GJ, 1); }
static void t_ooc_interval_lu(void) { interval_cases(OOC_METHOD_LU, 1); }


/* A scratch directory that cannot be used: an in-core run still works (without checkpoints, and
 * says so); an out-of-core run fails naming the directory, leaving nothing. */
static void t_scratch_dir_missing(void) {
  setup();
  reset_out();
  char nodir[CAP];
  snprintf(nodir, sizeof nodir, "%s/no/such/dir", g_dir);
  const char *a[] = {"--device", "cpu", "--tile", "32", "--stripe", "64", "--host-mem", "64M",
                     "--scratch", nodir, g_in, "--out", g_out, NULL};
  res_t r = run_tool("oocsolve", NULL, a);
  CHECK(r.code == 0 && same_bits(0), "in core, unusable scratch dir: exit %d: %s", r.code, r.err);
  reset_out();
  r = solve_cmd(0, NULL, g_out, "--scratch", nodir);
  CHECK(r.code == 5 && strstr(r.err, nodir), "out of core, unusable scratch dir: exit %d: %s",
        r.code, r.err);
  CHECK(!tu_file_exists(g_out), "no output");
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}

/* When checkpoints are due (ckpt_clock.h), on made-up times: asked as a step ends, the time
 * since the last checkpoint at that end; asked before it runs (LU's factor steps), at the end
 * the step would have if it ran as long as the one before it. The question before a step that
 * starts right after a checkpoint used to see next to nothing (CI failed on it, ooc_interval_lu
 * above, when it came within a microsecond): these cases fail with that rule. */
static void t_clock(void) {
  ckpt_clock_t c;
  /* asked as steps end: 4 s steps, interval 10: due after the step that ends at 12, whose
   * checkpoint takes 1 s; the next interval counts from its end (13): the step ending at 25 */
  enum { NS = 8 };
  static const int want[NS] = {0, 0, 1, 0, 0, 1, 0, 0};
  ckpt_clock_start(&c, 10, 0, 0);
  double t = 0;
  for (int s = 0; s < NS; s++) {
    t += 4;
    int d = ckpt_clock_due(&c, s, NS, 0, 0, t);
    ckpt_clock_stepped(&c, t, d, d ? t + 1 : t);
    if (d) t += 1;
    CU_ASSERT(d == want[s]);
  }
  /* the last step never, but for `step` or an interrupted run */
  CU_ASSERT(!ckpt_clock_due(&c, NS - 1, NS, 0, 0, 1e9));
  CU_ASSERT(ckpt_clock_due(&c, NS - 1, NS, 1, 0, t));
  ckpt_clock_start(&c, 1e9, 1, 0);
  CU_ASSERT(ckpt_clock_due(&c, 0, 2, 0, 0, 0) && ckpt_clock_due(&c, 1, 2, 0, 1, 0));
  /* asked before each step, 1 us after the last one ended: the same steps are checkpointed */
  ckpt_clock_start(&c, 10, 0, 0);
  t = 0;
  for (int s = 0; s < NS; s++) {
    int d = ckpt_clock_due(&c, s, NS, 0, 1, t + 1e-6);
    t += 4;
    ckpt_clock_stepped(&c, t, d, d ? t + 1 : t);
    if (d) t += 1;
    CU_ASSERT(d == want[s]);
  }
  /* a tiny interval: every step but the last asked as they end; asked before they run, every
   * step but the first (no step before it to go by: the time since the start at the question,
   * here 1 ns; in a run the setup's tens of microseconds) and the last */
  ckpt_clock_start(&c, 1e-6, 0, 0);
  t = 0;
  for (int s = 0; s < 4; s++) {
    int before = ckpt_clock_due(&c, s, 4, 0, 1, t + 1e-9);
    t += 0.002;
    int after = ckpt_clock_due(&c, s, 4, 0, 0, t);
    CU_ASSERT(before == (s > 0 && s < 3) && after == (s < 3));
    ckpt_clock_stepped(&c, t, before, t + 1e-9);
    t += 1e-9;
  }
  /* asked as it ends, a step shorter than the one before it is not taken to run longer */
  ckpt_clock_start(&c, 10, 0, 0);
  ckpt_clock_stepped(&c, 9, 0, 9);
  CU_ASSERT(!ckpt_clock_due(&c, 1, 4, 0, 0, 9.5));
  CU_ASSERT(ckpt_clock_due(&c, 1, 4, 0, 1, 9.0));
}

static void t_totals(void) {
  fprintf(stderr, "\n  [totals: %ld kills, %ld resumes, %ld corruptions] ", g_kills, g_resumes,
          g_corrupt);
  CU_ASSERT(g_kills >= 20);
  free(g_inv);
  free(g_x);
  free(g_chol);
}

int main(void) {
  /* The CLI restarts itself under OPENBLAS_CORETYPE where OpenBLAS chose generic kernels on a
   * CPU with AVX2 (tools/oocsolve.c blas_restart), and this process, which runs the library in
   * place, does not: their products would round differently, and the in-process resumes below
   * are compared bit for bit with the CLI's references (a CPU OpenBLAS did not know failed 4 of
   * them, 2026-12-01). Both run the kernels OpenBLAS chose. */
  setenv("OOCSOLVE_NO_RESTART", "1", 1);
  static const tu_test_t tests[] = {{"kill_after_commit", t_kill_after_commit},
                                    {"kill_before_rename", t_kill_before_rename},
                                    {"kill_at_puts", t_kill_at_puts},
                                    {"kill_twice", t_kill_twice},
                                    {"kill_chol", t_kill_chol},
                                    {"kill_lu", t_kill_lu},
                                    {"kill_lu_incore", t_kill_lu_incore},
                                    {"lu_sigint_and_method", t_lu_sigint_and_method},
                                    {"rbt_not_journaled", t_rbt_not_journaled},
                                    {"sigint", t_sigint},
                                    {"stale_and_mismatch", t_stale_and_mismatch},
                                    {"corrupt_scratch", t_corrupt_scratch},
                                    {"corrupt_input_chunk", t_corrupt_input_chunk},
                                    {"incore_interval", t_incore_interval},
                                    {"incore_interval_lu", t_incore_interval_lu},
                                    {"ooc_interval", t_ooc_interval},
                                    {"ooc_interval_lu", t_ooc_interval_lu},
                                    {"scratch_dir_missing", t_scratch_dir_missing},
                                    {"clock", t_clock},
                                    {"totals", t_totals},
                                    {NULL, NULL}};
  return tu_run("crash", tests);
}
