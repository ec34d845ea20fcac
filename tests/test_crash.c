/*
 * test_crash.c: kill -9 and --resume, driven through the oocsolve CLI (docs/RELIABILITY.md).
 *
 * An out-of-core inversion and solve (n = 256, tile 32, stripe 64: 4 steps, about 330 scratch
 * writes, every tile spilled and read back) is killed with SIGKILL at exact points of the
 * checkpoint protocol through the test hook OOCSOLVE_TEST_KILL (base.h): after the k-th journal
 * commit for every k, before the rename of a journal commit, and after the p-th scratch write for
 * p spread over the whole run (load phase, mid-step, mid-checkpoint, write phase). The same
 * command with --resume must then finish with exit 0 and an output whose data are bit-identical
 * to the uninterrupted run's, leaving no journal, scratch, lock or temporary file. Also here:
 * SIGINT at a step boundary (exit 130, "interrupted at step k of N", then --resume), a kill
 * during a resumed run, stale journals refused without --resume, resume refused after an option
 * or input change, a flipped byte in a scratch tile (exit 3 naming the scratch file and tile), a
 * corrupt compressed chunk in the input (exit 3 naming file, dataset and rows/columns).
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

/* oocsolve [solve] --device cpu --tile 32 --stripe 64 --host-mem 512K --quiet IN [RHS] --out OUT
 * plus extra args. */
static res_t solve_cmd(int solve, const char *kill, const char *out, const char *extra1,
                       const char *extra2) {
  const char *a[24];
  int k = 0;
  if (solve) a[k++] = "solve";
  const char *fixed[] = {"--device", "cpu", "--tile", "32", "--stripe", "64", "--host-mem",
                         "512K", "--quiet", "--check", "full"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) a[k++] = fixed[i];
  if (extra1) a[k++] = extra1;
  if (extra2) a[k++] = extra2;
  a[k++] = g_input;
  if (solve) a[k++] = g_rhs;
  a[k++] = "--out";
  a[k++] = out;
  a[k] = NULL;
  return run_tool("oocsolve", kill, a);
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

/* "<dir>/.oocsolve-<out>-<dir hash><suffix>" (job.c names a run's state files so) into buf;
 * returns 1 if such a file exists. */
static int state_file(const char *dir, const char *out, const char *suffix, char *buf,
                      size_t cap) {
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

/* Kill at `kill`, then resume (again with `kill2` if given, then clean) and compare. */
static void kill_and_resume(int solve, const char *kill, const char *kill2) {
  reset_out();
  uint64_t h = tu_file_hash(g_input), hb = tu_file_hash(g_rhs);
  res_t r = solve_cmd(solve, kill, g_out, NULL, NULL);
  int killed = r.code == 128 + SIGKILL;
  if (killed) {
    g_kills++;
    CHECK(!tu_file_exists(g_out), "no output after a kill at %s", kill);
    if (kill2) {
      r = solve_cmd(solve, kill2, g_out, "--resume", NULL);
      if (r.code == 128 + SIGKILL) g_kills++;
      else CHECK(r.code == 0, "second run (kill at %s) exit %d: %s", kill2, r.code, r.err);
    }
    r = solve_cmd(solve, NULL, g_out, "--resume", NULL);
    g_resumes++;
  }
  CHECK(r.code == 0, "%s killed at %s: resume exit %d: %s", solve ? "solve" : "invert", kill,
        r.code, r.err);
  CHECK(same_bits(solve), "%s killed at %s: output differs from the uninterrupted run",
        solve ? "solve" : "invert", kill);
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "killed at %s: left behind: %s", kill, list);
  CHECK(tu_file_hash(g_input) == h && tu_file_hash(g_rhs) == hb, "inputs unchanged");
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
  CHECK(state_file(g_dir, "out.h5", ".journal", j, sizeof j), "journal kept after SIGINT");
  /* SIGTERM during the resumed run, after its first commit: the same, at step 3 */
  r = solve_cmd(0, "commit:1:TERM", g_out, "--resume", NULL);
  CHECK(r.code == 130 && strstr(r.err, "interrupted at step 3 of 4"), "SIGTERM: exit %d: %s",
        r.code, r.err);
  r = solve_cmd(0, NULL, g_out, "--resume", NULL);
  CHECK(r.code == 0 && same_bits(0), "resume after SIGINT: exit %d: %s", r.code, r.err);
  char list[CAP];
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
}

/* Stale state is never mixed in: refused without --resume, refused when anything differs. */
static void t_stale_and_mismatch(void) {
  setup();
  reset_out();
  char j[CAP + 64];
  res_t r = solve_cmd(0, "commit:2", g_out, NULL, NULL);
  CHECK(r.code == 137, "kill: exit %d", r.code);
  CHECK(state_file(g_dir, "out.h5", ".journal", j, sizeof j), "journal after the kill");
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
  CHECK(state_file(g_dir, "out.h5", ".A.scratch", sp, sizeof sp), "scratch after the kill");
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


/* ---- in-core runs: checkpoints by time interval (library level) ------------------------------ */

static int stop_halfway(void *user, const char *phase, double fraction) {
  (void)user;
  return !strcmp(phase, "eliminate") && fraction >= 0.6;
}

static ooc_status_t incore(double checkpoint, int resume, int interrupt, ooc_report_t *rep,
                           char *err, size_t cap) {
  ooc_ctx_t *ctx = NULL;
  ooc_ctx_create(&ctx);
  if (interrupt) ooc_ctx_set_progress(ctx, stop_halfway, NULL);
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.tile = 32;
  o.stripe = 64;
  o.host_mem = 64 << 20; /* the whole matrix fits: in core, 4 steps */
  o.method = OOC_METHOD_GJ;
  o.checkpoint = checkpoint;
  o.resume = resume;
  char out[CAP + 16];
  snprintf(out, sizeof out, "%s:/inverse", g_out);
  ooc_status_t st = ooc_invert(ctx, g_in, out, &o, rep);
  snprintf(err, cap, "%s", ooc_ctx_error(ctx));
  CU_ASSERT(ooc_ctx_host_bytes(ctx) == 0 && ooc_ctx_open_files(ctx) == 0);
  ooc_ctx_destroy(ctx);
  return st;
}

static void t_incore_interval(void) {
  setup();
  reset_out();
  ooc_report_t rep;
  char err[4096], list[CAP];
  /* default interval (300 s): an interrupted in-core run has no checkpoint and leaves nothing */
  ooc_status_t st = incore(0, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "no checkpoint was written"), "%s: %s",
        ooc_status_str(st), err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  /* a tiny interval: every step but the last is journaled; interrupted, then resumed */
  st = incore(1e-6, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "--resume"), "%s: %s", ooc_status_str(st), err);
  CHECK(rep.bytes_unspilled == 0, "in core: nothing read back from scratch");
  st = incore(1e-6, 1, 0, &rep, err, sizeof err);
  CHECK(st == OOC_OK && rep.resumed_step >= 2, "resume: %s %s (from step %lld)",
        ooc_status_str(st), err, (long long)rep.resumed_step);
  CHECK(same_bits(0), "in-core resume gives the out-of-core reference's bits");
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  g_resumes++;
  /* "off": no journal even with --resume available */
  reset_out();
  st = incore(OOC_CHECKPOINT_NEVER, 0, 1, &rep, err, sizeof err);
  CHECK(st == OOC_ERR_INTERRUPTED && strstr(err, "checkpoints are off"), "%s", err);
  CHECK(leftovers(list, sizeof list) == 0, "left behind: %s", list);
  reset_out();
}


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

static void t_totals(void) {
  fprintf(stderr, "\n  [totals: %ld kills, %ld resumes, %ld corruptions] ", g_kills, g_resumes,
          g_corrupt);
  CU_ASSERT(g_kills >= 20);
  free(g_inv);
  free(g_x);
  free(g_chol);
}

int main(void) {
  static const tu_test_t tests[] = {{"kill_after_commit", t_kill_after_commit},
                                    {"kill_before_rename", t_kill_before_rename},
                                    {"kill_at_puts", t_kill_at_puts},
                                    {"kill_twice", t_kill_twice},
                                    {"kill_chol", t_kill_chol},
                                    {"sigint", t_sigint},
                                    {"stale_and_mismatch", t_stale_and_mismatch},
                                    {"corrupt_scratch", t_corrupt_scratch},
                                    {"corrupt_input_chunk", t_corrupt_input_chunk},
                                    {"incore_interval", t_incore_interval},
                                    {"scratch_dir_missing", t_scratch_dir_missing},
                                    {"totals", t_totals},
                                    {NULL, NULL}};
  return tu_run("crash", tests);
}
