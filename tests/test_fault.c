/*
 * test_fault.c: fault injection the SQLite way (docs/RELIABILITY.md).
 *
 * For N = 1, 2, ... until a run completes without the fault being reached, the Nth host
 * allocation (ooc_malloc), then the Nth file operation of src/io (io/fileio.h: POSIX calls and
 * the HDF5 calls behind fio_gate), then the Nth writing file operation with ENOSPC, is made to
 * fail, once or from then on, in a full out-of-core ooc_invert (Gauss-Jordan, and Cholesky chosen
 * by auto on an SPD matrix) / ooc_solve (scratch spills,
 * journal checkpoints after every step, output, residual check, commit). Every time:
 * - the status is the one the fault maps to (OOC_ERR_NOMEM / OOC_ERR_IO / OOC_ERR_NOSPACE), or
 *   OOC_OK when the operation's failure is tolerated by design;
 * - nothing leaks: host bytes and blocks, open files and HDF5 handles counted by src/io, HDF5's
 *   own open-object count, the process's descriptors (/proc/self/fd), CUDA streams;
 * - the input is byte-for-byte unchanged;
 * - the output is absent, or present and bit-identical to the fault-free reference (which passed
 *   the library's residual check and is checked here again with LAPACK's ratio);
 * - after a one-shot fault the directory holds nothing but the input (and the output if OK),
 *   unless the run kept its journal for --resume (out of memory or I/O error after a checkpoint):
 *   then a rerun with --resume and no faults must finish with the reference's bits.
 * The same loops (allocation and EIO one-shot, ENOSPC persistent, a few persistent ones more)
 * run over every other command (issue 20): factor, logdet, the Cholesky solve, solve --factor,
 * gemm, newton, hyper7, an inverse to a zstd float32 output with --scratch-zstd, a --resume
 * of a journal saved from a gj inverse stopped by an allocation failure (faults during the
 * resume), an LU solve and inverse (issue 22; both journaled), an rbt solve (issue 23) and least
 * squares (issue 24: lstsq into a QR state file, and an add-rows update of a stored state; their
 * output compared is the state's /x), the last three with persistent allocation faults too
 * (issue 18: every method's host allocations); for those the Nth call is taken with a stride
 * that keeps a loop near 100 runs.
 * The totals (runs, faults delivered, resumes; runs per command) are printed for
 * docs/RELIABILITY.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"
#include "testutil.h"

#define N 40
#define TILE 8
#define M 3

static char g_dir[1024], g_in[1100], g_rhs[1100], g_spd[1100], g_out[1100], g_fac[1100],
    g_snap[1100], g_state[1100];
static double *g_ref_inv, *g_ref_x, *g_ref_chol;
/* what a loop runs: */
enum {
  INVERT = 0, SOLVE = 1, CHOL = 2, /* auto on an SPD matrix: the Cholesky inverse */
  /* issue 20: every other command, and the output/scratch variants */
  FACTOR, LOGDET, CHOLSOLVE, /* auto on the SPD matrix: Cholesky solve */
  SOLVEF,                    /* solve --factor with the factor g_fac */
  GEMM, NEWTON, HYPER7,
  VARIANT,                   /* invert to a zstd-compressed float32 output, --scratch-zstd 1 */
  RESUMED,                   /* --resume of a gj inverse from a journal (faults in the resume) */
  LUSOLVE,                   /* issue 22: solve --method lu (the method on the host executor) */
  LUINVERT,                  /* invert --method lu: journals A and its result store Z */
  RBTSOLVE,                  /* issue 23: solve --method rbt (unjournaled: its own stores) */
  LSTSQ,                     /* issue 24: lstsq of A (m = n = N) and B into the QR state file */
  LSADDROWS,                 /* lstsq --update g_state --add-rows A B: a state file read */
  NJOBS
};
static const char *const g_job_names[NJOBS] = {
    "invert", "solve", "chol", "factor", "logdet", "chol solve", "solve --factor", "gemm",
    "newton", "hyper7", "invert zstd f32 scratch-zstd", "resume", "lu solve", "lu invert",
    "rbt solve", "lstsq", "lstsq add rows"};
static const char *job_name(int job) { return g_job_names[job]; }
static int is_lstsq(int job) { return job == LSTSQ || job == LSADDROWS; }
/* The output's dataset compared with the reference: the QR state's solution, else X. */
static const char *out_dset(int job) { return is_lstsq(job) ? "/x" : "/X"; }
static int64_t g_budget, g_jbudget[NJOBS];
static double *g_ref[NJOBS];
static int64_t g_ref_r[NJOBS], g_ref_c[NJOBS];
static double g_ref_logdet;
static long g_runs, g_faults, g_resumes, g_tolerated;
static long g_job_runs[NJOBS];

static int count_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static void rm_dir_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    char p[2200];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
}

/* Names in dir other than the inputs and the output; returns how many (listed in buf). */
static int extras(const char *dir, char *buf, size_t cap) {
  int n = 0;
  buf[0] = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *nm = e->d_name;
    if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "out.h5")) continue;
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%s", n ? ", " : "", nm);
    n++;
  }
  closedir(d);
  return n;
}



static int journal_exists(void) {
  char p[2200];
  return tu_state_file(g_dir, "out.h5", ".journal", p, sizeof p);
}

static void opts_for(ooc_opts_t *o) {
  ooc_opts_default(o);
  o->device = OOC_DEVICE_CPU;
  o->tile = TILE;
  o->stripe = 2 * TILE;
  o->host_mem = g_budget;
  o->check = OOC_CHECK_FULL;
  o->method = OOC_METHOD_GJ; /* run_job: auto for CHOL */
  o->checkpoint = OOC_CHECKPOINT_EVERY_STEP;
}

/* POSIX, but fsync does nothing: thousands of runs would otherwise spend minutes waiting for the
 * disk. The seam still counts every fsync and injects its faults (fileio.h). */
static int no_fsync(int fd) {
  (void)fd;
  return 0;
}

static double g_logdet; /* LOGDET's result */

static ooc_status_t run_job(ooc_ctx_t *ctx, int solve, int resume, ooc_report_t *rep) {
  static fio_ops_t fast;
  fast = *fio_posix_ops();
  fast.fsync = no_fsync;
  fio_set_ops(ctx, &fast);
  ooc_opts_t o;
  opts_for(&o);
  o.resume = resume || solve == RESUMED;
  if (g_jbudget[solve] > 0) o.host_mem = g_jbudget[solve];
  int spd = solve == CHOL || solve == FACTOR || solve == LOGDET || solve == CHOLSOLVE;
  if (spd || solve == GEMM || solve == SOLVEF) o.method = OOC_METHOD_AUTO;
  if (solve == NEWTON) o.method = OOC_METHOD_NEWTON;
  if (solve == HYPER7) o.method = OOC_METHOD_HYPER7;
  if (solve == LUSOLVE || solve == LUINVERT) o.method = OOC_METHOD_LU;
  if (solve == RBTSOLVE) o.method = OOC_METHOD_RBT;
  if (is_lstsq(solve)) o.method = OOC_METHOD_AUTO; /* least squares takes no --method */
  if (solve == VARIANT) {
    o.compress = "zstd:1";
    o.out_dtype = OOC_DTYPE_F32;
    o.scratch_zstd = 1;
  }
  char in[1200], rhs[1200], out[1200], fac[1200];
  snprintf(in, sizeof in, "%s:/A", spd ? g_spd : g_in);
  snprintf(rhs, sizeof rhs, "%s:/B", g_rhs);
  snprintf(out, sizeof out, "%s:/X", g_out);
  snprintf(fac, sizeof fac, "%s:/L", g_fac);
  switch (solve) {
  case SOLVE:
  case LUSOLVE:
  case RBTSOLVE:
  case CHOLSOLVE: return ooc_solve(ctx, in, rhs, out, &o, rep);
  case LSTSQ: return ooc_lstsq(ctx, in, rhs, g_out, &o, rep); /* the state: a file */
  case LSADDROWS: return ooc_lstsq_update(ctx, g_state, in, rhs, 0, 0, g_out, &o, rep);
  case FACTOR: return ooc_factor(ctx, in, out, &o, rep);
  case LOGDET: return ooc_logdet(ctx, in, &o, rep, &g_logdet);
  case SOLVEF: return ooc_solve_factor(ctx, fac, rhs, out, &o, rep);
  case GEMM: return ooc_gemm(ctx, in, rhs, NULL, out, 1.0, 0.0, &o, rep);
  default: return ooc_invert(ctx, in, out, &o, rep);
  }
}

/* RESUMED: the directory as a killed gj inverse left it (journal, scratch), saved in g_snap
 * by make_snapshot and put back before every run of the loop. */
static void copy_files(const char *from, const char *to) {
  rm_dir_files(to);
  DIR *d = opendir(from);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char a[2200], b[2200];
    snprintf(a, sizeof a, "%s/%s", from, e->d_name);
    snprintf(b, sizeof b, "%s/%s", to, e->d_name);
    FILE *fi = fopen(a, "rb"), *fo = fopen(b, "wb");
    char buf[65536];
    size_t k;
    while (fi && fo && (k = fread(buf, 1, sizeof buf, fi)) > 0) fwrite(buf, 1, k, fo);
    if (fi) fclose(fi);
    if (fo) fclose(fo);
  }
  if (d) closedir(d);
}

static void reset_dir(int job) {
  if (job == RESUMED) copy_files(g_snap, g_dir);
  else rm_dir_files(g_dir);
}

/* Output present: bit-identical to the reference (LOGDET: the same value). */
static int output_matches(int solve) {
  if (solve == LOGDET) return !memcmp(&g_logdet, &g_ref_logdet, sizeof g_logdet);
  char spec[1200];
  snprintf(spec, sizeof spec, "%s:%s", g_out, out_dset(solve));
  int64_t r = 0, c = 0;
  double *X = tu_read_matrix(spec, &r, &c);
  const double *ref = solve == SOLVE ? g_ref_x : solve == CHOL ? g_ref_chol
                      : solve == INVERT ? g_ref_inv : g_ref[solve];
  int64_t rr = solve <= CHOL ? N : g_ref_r[solve], rc = solve == SOLVE ? M
                                                       : solve <= CHOL ? N : g_ref_c[solve];
  int ok = X && ref && r == rr && c == rc && !memcmp(X, ref, (size_t)(r * c) * sizeof(double));
  free(X);
  return ok;
}

/* The other commands' references (issue 20): each at the smallest budget that runs it, plus a
 * little, so that it spills; the factor for SOLVEF; the journal state for RESUMED. */
static void setup_more(ooc_ctx_t *ctx) {
  ooc_report_t rep;
  snprintf(g_fac, sizeof g_fac, "%s", tu_path("L.h5"));
  snprintf(g_state, sizeof g_state, "%s", tu_path("LS.qr.h5"));
  snprintf(g_snap, sizeof g_snap, "%s", tu_path("fault-snap"));
  mkdir(g_snap, 0700);
  for (int job = FACTOR; job < NJOBS; job++) {
    if (job == RESUMED) continue;
    ooc_status_t st = OOC_ERR_BUDGET;
    for (g_jbudget[job] = 48 * 1024; g_jbudget[job] < 4 << 20; g_jbudget[job] += 4096) {
      rm_dir_files(g_dir);
      ooc_clear_error(ctx);
      if ((st = run_job(ctx, job, 0, &rep)) != OOC_ERR_BUDGET) break;
    }
    g_jbudget[job] += 4096;
    rm_dir_files(g_dir);
    st = run_job(ctx, job, 0, &rep);
    CU_ASSERT_EQUAL(st, OOC_OK);
    if (st != OOC_OK) fprintf(stderr, "\n  %s: %s\n", job_name(job), ooc_ctx_error(ctx));
    fprintf(stderr, "\n  [%s: budget %lld B, %lld steps, %lld B spilled, %lld B read back] ",
            job_name(job), (long long)g_jbudget[job], (long long)rep.steps,
            (long long)rep.bytes_spilled, (long long)rep.bytes_unspilled);
    char spec[1200];
    snprintf(spec, sizeof spec, "%s:%s", g_out, out_dset(job));
    if (job == LOGDET) g_ref_logdet = g_logdet;
    else g_ref[job] = tu_read_matrix(spec, &g_ref_r[job], &g_ref_c[job]);
    if (job == FACTOR) { /* the factor SOLVEF reads */
      tu_write_matrix(g_fac, "/L", N, N, g_ref[job], 2);
    }
    if (job == LSTSQ) rename(g_out, g_state); /* the state LSADDROWS updates */
  }
  /* RESUMED: a gj inverse stopped by a persistent allocation failure after a checkpoint keeps
   * its journal; the resumed run must give the uninterrupted run's bits */
  g_ref[RESUMED] = malloc(sizeof(double) * N * N);
  memcpy(g_ref[RESUMED], g_ref_inv, sizeof(double) * N * N);
  g_ref_r[RESUMED] = g_ref_c[RESUMED] = N;
  rm_dir_files(g_dir);
  ooc_ctx_t *c2 = tu_ctx();
  CU_ASSERT_EQUAL(run_job(c2, INVERT, 0, &rep), OOC_OK);
  int64_t calls = ooc_fault_calls(c2, OOC_FAULT_ALLOC);
  tu_ctx_done(c2);
  int have = 0;
  for (int64_t at = calls / 4; at < calls && !have; at += ooc_max64(1, calls / 60)) {
    rm_dir_files(g_dir);
    c2 = tu_ctx();
    ooc_fault_arm(c2, OOC_FAULT_ALLOC, at, 1, 0);
    run_job(c2, INVERT, 0, &rep);
    ooc_fault_arm(c2, OOC_FAULT_ALLOC, 0, 0, 0);
    tu_ctx_done(c2);
    have = journal_exists();
  }
  CU_ASSERT_FATAL(have);
  copy_files(g_dir, g_snap);
  rm_dir_files(g_dir);
}

static void setup(void) {
  snprintf(g_dir, sizeof g_dir, "%s", tu_path("fault"));
  mkdir(g_dir, 0700);
  snprintf(g_in, sizeof g_in, "%s", tu_path("A.h5"));
  snprintf(g_rhs, sizeof g_rhs, "%s", tu_path("B.h5"));
  snprintf(g_out, sizeof g_out, "%s/out.h5", g_dir);
  double *A = malloc(sizeof(double) * N * N), *B = malloc(sizeof(double) * N * M);
  uint64_t s = 12345;
  for (int i = 0; i < N * N; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    A[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  for (int i = 0; i < N * M; i++) B[i] = sin(0.37 * i);
  tu_write_matrix(g_in, "/A", N, N, A, 2);
  tu_write_matrix(g_rhs, "/B", N, M, B, 2);
  snprintf(g_spd, sizeof g_spd, "%s", tu_path("S.h5")); /* S = A A^T + n I: SPD */
  double *S = malloc(sizeof(double) * N * N);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double t = i == j ? N : 0;
      for (int k = 0; k < N; k++) t += A[i + k * N] * A[j + k * N];
      S[i + j * N] = t;
    }
  tu_write_matrix(g_spd, "/A", N, N, S, 2);

  /* The smallest budget that runs, plus a little: spills for sure, several steps. */
  ooc_ctx_t *ctx = tu_ctx();
  ooc_report_t rep;
  int ok = 0;
  for (g_budget = 64 * 1024; g_budget < 1 << 20 && !ok; g_budget += 2048) {
    rm_dir_files(g_dir);
    ok = run_job(ctx, 0, 0, &rep) == OOC_OK;
    rm_dir_files(g_dir);
    ok = ok && run_job(ctx, 1, 0, &rep) == OOC_OK;
    ooc_clear_error(ctx);
  }
  g_budget += 4096;
  /* the Cholesky inverse at its own smallest budget (its host executor's bookkeeping makes it
   * larger than gj's, which then would no longer read spilled tiles back) */
  for (ok = 0, g_jbudget[CHOL] = 64 * 1024; g_jbudget[CHOL] < 1 << 20 && !ok;
       g_jbudget[CHOL] += 2048) {
    rm_dir_files(g_dir);
    ok = run_job(ctx, CHOL, 0, &rep) == OOC_OK;
    ooc_clear_error(ctx);
  }
  g_jbudget[CHOL] += 4096;
  rm_dir_files(g_dir);
  CU_ASSERT_EQUAL_FATAL(run_job(ctx, 0, 0, &rep), OOC_OK);
  fprintf(stderr, "\n  [budget %lld B: %lld steps, %lld B spilled, %lld B read back, residual "
          "%.3g] ", (long long)g_budget, (long long)rep.steps, (long long)rep.bytes_spilled,
          (long long)rep.bytes_unspilled, rep.residual);
  CU_ASSERT_FATAL(rep.bytes_unspilled > 0); /* the loops must exercise the scratch store */
  CU_ASSERT_FATAL(rep.steps >= 3);        /* and several checkpoints */
  char spec[1200];
  snprintf(spec, sizeof spec, "%s:/X", g_out);
  int64_t r, c;
  g_ref_inv = tu_read_matrix(spec, &r, &c);
  CU_ASSERT_FATAL(g_ref_inv != NULL);
  double ratio = tu_inverse_ratio(N, A, g_ref_inv, DBL_EPSILON);
  CU_ASSERT(ratio < 30);
  rm_dir_files(g_dir);
  CU_ASSERT_EQUAL_FATAL(run_job(ctx, 1, 0, &rep), OOC_OK);
  g_ref_x = tu_read_matrix(spec, &r, &c);
  CU_ASSERT_FATAL(g_ref_x != NULL);
  CU_ASSERT(tu_solve_ratio(N, M, A, g_ref_x, B, DBL_EPSILON) < 16);
  rm_dir_files(g_dir);
  CU_ASSERT_EQUAL_FATAL(run_job(ctx, CHOL, 0, &rep), OOC_OK);
  CU_ASSERT_STRING_EQUAL(rep.method, "chol");
  CU_ASSERT(rep.bytes_unspilled > 0 && rep.steps >= 3);
  g_ref_chol = tu_read_matrix(spec, &r, &c);
  CU_ASSERT_FATAL(g_ref_chol != NULL);
  CU_ASSERT(tu_inverse_ratio(N, S, g_ref_chol, DBL_EPSILON) < 30);
  free(S);
  rm_dir_files(g_dir);
  setup_more(ctx);
  tu_ctx_done(ctx);
  free(A);
  free(B);
}

static const char *kind_name(ooc_fault_kind_t k) {
  return k == OOC_FAULT_ALLOC ? "alloc" : k == OOC_FAULT_IO ? "io" : "io-write";
}

/* One loop: N = 1, 1 + stride, 1 + 2 stride, ... until the fault is not reached. The stride
 * is 1 (every call) for the first three commands; for the others it keeps a loop near 100 runs
 * (CI time: the suites also run under ASan), from the fault-free run's count of calls. */
static void fault_loop(ooc_fault_kind_t kind, int persistent, int err, int solve) {
  if (!g_ref_inv) setup();
  CU_ASSERT_FATAL(g_ref_inv != NULL);
  uint64_t h_in = tu_file_hash(g_in), h_rhs = tu_file_hash(g_rhs), h_spd = tu_file_hash(g_spd),
           h_fac = tu_file_hash(g_fac), h_state = tu_file_hash(g_state);
  int64_t stride = 1;
  if (solve > CHOL) {
    reset_dir(solve);
    ooc_ctx_t *c0 = tu_ctx();
    ooc_report_t r0;
    ooc_status_t s0 = run_job(c0, solve, 0, &r0);
    CU_ASSERT_EQUAL(s0, OOC_OK);
    stride = ooc_max64(1, ooc_fault_calls(c0, kind) / 100);
    tu_ctx_done(c0);
  }
  int fds0 = count_fds();
  int64_t n, runs = 0;
  long faults = 0, ok_with_fault = 0, resumes = 0;
  for (n = 1; n < 1000000; n += stride) {
    reset_dir(solve);
    runs++;
    ooc_ctx_t *ctx = tu_ctx();
    ooc_report_t rep;
    ooc_fault_arm(ctx, kind, n, persistent, err);
    ooc_status_t st = run_job(ctx, solve, 0, &rep);
    int64_t injected = ooc_fault_injected(ctx, kind);
    ooc_fault_arm(ctx, kind, 0, 0, 0);
    g_runs++;
    char what[256];
    snprintf(what, sizeof what, "%s %s fault #%lld (%s, %s): %s \"%s\"", kind_name(kind),
             persistent ? "persistent" : "one-shot", (long long)n, job_name(solve),
             strerror(err), ooc_status_str(st), ooc_ctx_error(ctx));
    /* no leak, whatever happened */
    int leak = ctx->live_allocs != 0 || ctx->host_bytes != 0 || ooc_ctx_open_files(ctx) != 0 ||
               ooc_ctx_streams(ctx) != 0 || H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0 ||
               count_fds() != fds0;
    CU_ASSERT(!leak);
    if (leak)
      fprintf(stderr, "\n  LEAK after %s: %lld blocks, %lld bytes, %lld files, %lld streams, "
              "%lld HDF5 objects, %d fds (was %d)\n", what, (long long)ctx->live_allocs,
              (long long)ctx->host_bytes, (long long)ooc_ctx_open_files(ctx),
              (long long)ooc_ctx_streams(ctx), (long long)H5Fget_obj_count(H5F_OBJ_ALL,
              H5F_OBJ_ALL), count_fds(), fds0);
    /* the inputs are never modified */
    CU_ASSERT(tu_file_hash(g_in) == h_in && tu_file_hash(g_rhs) == h_rhs &&
              tu_file_hash(g_spd) == h_spd && tu_file_hash(g_fac) == h_fac &&
              tu_file_hash(g_state) == h_state);
    /* the output is absent or exactly the reference */
    int present = solve == LOGDET ? st == OOC_OK : tu_file_exists(g_out);
    if (present && !output_matches(solve)) {
      CU_FAIL("output present but not the reference");
      fprintf(stderr, "\n  BAD OUTPUT after %s\n", what);
    }
    if (injected == 0) { /* the run completed before reaching call n: the loop is done */
      CU_ASSERT_EQUAL(st, OOC_OK);
      CU_ASSERT(present);
      if (st != OOC_OK) fprintf(stderr, "\n  no fault but %s\n", what);
      tu_ctx_done(ctx);
      break;
    }
    faults += injected;
    if (st == OOC_OK) {
      ok_with_fault++; /* a failure the design tolerates (e.g. fallocate, a read-only flush) */
    } else {
      ooc_status_t want = kind == OOC_FAULT_ALLOC ? OOC_ERR_NOMEM
                          : err == ENOSPC         ? OOC_ERR_NOSPACE
                                                  : OOC_ERR_IO;
      int good = st == want || (present && st == OOC_ERR_IO); /* directory sync after rename */
      CU_ASSERT(good);
      if (!good) fprintf(stderr, "\n  unexpected status after %s\n", what);
      if (!strlen(ooc_ctx_error(ctx))) {
        CU_FAIL("failure without a message");
        fprintf(stderr, "\n  no message after %s\n", what);
      }
    }
    /* what is left behind */
    char list[2048];
    if (st != OOC_OK && journal_exists() && solve != RESUMED) {
      /* kept for --resume: only after an error a rerun may not meet */
      CU_ASSERT(st == OOC_ERR_NOMEM || st == OOC_ERR_IO);
      CU_ASSERT(strstr(ooc_ctx_error(ctx), "--resume") != NULL);
      ooc_clear_error(ctx);
      ooc_status_t s2 = run_job(ctx, solve, 1, &rep);
      resumes++;
      CU_ASSERT_EQUAL(s2, OOC_OK);
      CU_ASSERT(s2 != OOC_OK || rep.resumed_step > 0);
      CU_ASSERT(output_matches(solve));
      if (s2 != OOC_OK || !output_matches(solve))
        fprintf(stderr, "\n  resume after %s: %s \"%s\"\n", what, ooc_status_str(s2),
                ooc_ctx_error(ctx));
    }
    if (st != OOC_OK && journal_exists() && solve == RESUMED) {
      /* kept (out of memory, I/O error), or never adopted (a failure before the restore, e.g.
       * a full disk creating the output): either way the next --resume must finish it */
      ooc_clear_error(ctx);
      ooc_status_t s2 = run_job(ctx, solve, 1, &rep);
      resumes++;
      CU_ASSERT(s2 == OOC_OK && output_matches(solve));
      if (s2 != OOC_OK || !output_matches(solve))
        fprintf(stderr, "\n  resume after %s: %s \"%s\"\n", what, ooc_status_str(s2),
                ooc_ctx_error(ctx));
    }
    if (!persistent && extras(g_dir, list, sizeof list) != 0) {
      CU_FAIL("files left behind");
      fprintf(stderr, "\n  left behind after %s: %s\n", what, list);
    }
    tu_ctx_done(ctx);
  }
  g_faults += faults;
  g_resumes += resumes;
  g_tolerated += ok_with_fault;
  g_job_runs[solve] += runs;
  fprintf(stderr, "\n  [%s %s %s (%s): %lld runs (stride %lld), %ld faults, %ld tolerated, "
          "%ld resumed] ", kind_name(kind), persistent ? "persistent" : "one-shot",
          job_name(solve), strerror(err), (long long)runs, (long long)stride, faults,
          ok_with_fault, resumes);
  CU_ASSERT(n > 1); /* the loop reached faults at all */
  rm_dir_files(g_dir);
}

static void t_alloc_once(void) { fault_loop(OOC_FAULT_ALLOC, 0, 0, 0); }
static void t_alloc_persistent(void) { fault_loop(OOC_FAULT_ALLOC, 1, 0, 0); }
static void t_alloc_once_solve(void) { fault_loop(OOC_FAULT_ALLOC, 0, 0, 1); }
static void t_io_once(void) { fault_loop(OOC_FAULT_IO, 0, EIO, 0); }
static void t_io_persistent(void) { fault_loop(OOC_FAULT_IO, 1, EIO, 0); }
static void t_io_once_solve(void) { fault_loop(OOC_FAULT_IO, 0, EIO, 1); }
static void t_nospace_once(void) { fault_loop(OOC_FAULT_IO_WRITE, 0, ENOSPC, 0); }
static void t_nospace_persistent(void) { fault_loop(OOC_FAULT_IO_WRITE, 1, ENOSPC, 0); }
static void t_nospace_persistent_solve(void) { fault_loop(OOC_FAULT_IO_WRITE, 1, ENOSPC, 1); }
static void t_alloc_once_chol(void) { fault_loop(OOC_FAULT_ALLOC, 0, 0, CHOL); }
static void t_io_once_chol(void) { fault_loop(OOC_FAULT_IO, 0, EIO, CHOL); }
static void t_nospace_persistent_chol(void) { fault_loop(OOC_FAULT_IO_WRITE, 1, ENOSPC, CHOL); }
/* issue 20: every other command, the compressed float32 output with compressed scratch, and
 * faults during a resume; allocation and EIO one-shot, ENOSPC persistent */
#define MORE_LOOPS(J, name)                                                                        \
  static void t_alloc_once_##name(void) { fault_loop(OOC_FAULT_ALLOC, 0, 0, J); }                  \
  static void t_io_once_##name(void) { fault_loop(OOC_FAULT_IO, 0, EIO, J); }                      \
  static void t_nospace_persistent_##name(void) { fault_loop(OOC_FAULT_IO_WRITE, 1, ENOSPC, J); }
MORE_LOOPS(FACTOR, factor)
MORE_LOOPS(LOGDET, logdet)
MORE_LOOPS(CHOLSOLVE, cholsolve)
MORE_LOOPS(SOLVEF, solvef)
MORE_LOOPS(GEMM, gemm)
MORE_LOOPS(NEWTON, newton)
MORE_LOOPS(HYPER7, hyper7)
MORE_LOOPS(VARIANT, variant)
MORE_LOOPS(RESUMED, resumed)
MORE_LOOPS(LUSOLVE, lusolve)
MORE_LOOPS(LUINVERT, luinvert)
MORE_LOOPS(RBTSOLVE, rbtsolve)
MORE_LOOPS(LSTSQ, lstsq)
MORE_LOOPS(LSADDROWS, lsaddrows)
static void t_io_persistent_variant(void) { fault_loop(OOC_FAULT_IO, 1, EIO, VARIANT); }
static void t_alloc_persistent_resumed(void) { fault_loop(OOC_FAULT_ALLOC, 1, 0, RESUMED); }
/* issue 18: every method's host allocations failing from the Nth on, too */
static void t_alloc_persistent_rbtsolve(void) { fault_loop(OOC_FAULT_ALLOC, 1, 0, RBTSOLVE); }
static void t_alloc_persistent_lstsq(void) { fault_loop(OOC_FAULT_ALLOC, 1, 0, LSTSQ); }
static void t_alloc_persistent_lsaddrows(void) { fault_loop(OOC_FAULT_ALLOC, 1, 0, LSADDROWS); }

/* The seam itself: counts, fires at exactly the Nth call, once or from then on. */
static void t_seam(void) {
  ooc_ctx_t *ctx = tu_ctx();
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 3, 0, 0);
  void *p[5];
  for (int i = 0; i < 5; i++) p[i] = ooc_malloc(ctx, 16);
  CU_ASSERT(p[0] && p[1] && !p[2] && p[3] && p[4]);
  CU_ASSERT_EQUAL(ooc_fault_calls(ctx, OOC_FAULT_ALLOC), 5);
  CU_ASSERT_EQUAL(ooc_fault_injected(ctx, OOC_FAULT_ALLOC), 1);
  for (int i = 0; i < 5; i++) ooc_free(ctx, p[i]);
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 2, 1, 0);
  for (int i = 0; i < 5; i++) p[i] = ooc_malloc(ctx, 16);
  CU_ASSERT(p[0] && !p[1] && !p[2] && !p[3] && !p[4]);
  CU_ASSERT_EQUAL(ooc_fault_injected(ctx, OOC_FAULT_ALLOC), 4);
  for (int i = 0; i < 5; i++) ooc_free(ctx, p[i]);
  ooc_fault_arm(ctx, OOC_FAULT_ALLOC, 0, 0, 0);
  /* I/O: a faulted open fails with the armed errno and opens nothing; a faulted close closes */
  ooc_fault_arm(ctx, OOC_FAULT_IO, 1, 0, ENOSPC);
  errno = 0;
  CU_ASSERT_EQUAL(fio_open(ctx, tu_path("seam"), O_RDWR | O_CREAT, 0600), -1);
  CU_ASSERT_EQUAL(errno, ENOSPC);
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  int fd = fio_open(ctx, tu_path("seam"), O_RDWR | O_CREAT, 0600);
  CU_ASSERT(fd >= 0);
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 1);
  ooc_fault_arm(ctx, OOC_FAULT_IO_WRITE, 1, 0, ENOSPC);
  CU_ASSERT_EQUAL(fio_pwrite_all(ctx, fd, "abc", 3, 0), ENOSPC);
  CU_ASSERT_EQUAL(fio_pwrite_all(ctx, fd, "abc", 3, 0), 0);
  char buf[4] = {0};
  CU_ASSERT_EQUAL(fio_pread_all(ctx, fd, buf, 3, 0), 3); /* a read is not a write fault */
  ooc_fault_arm(ctx, OOC_FAULT_IO, 1, 0, EIO);
  int before = count_fds();
  CU_ASSERT_EQUAL(fio_close(ctx, fd), -1);
  CU_ASSERT_EQUAL(count_fds(), before - 1);
  CU_ASSERT_EQUAL(ooc_ctx_open_files(ctx), 0);
  fio_unlink(ctx, tu_path("seam"));
  tu_ctx_done(ctx);
}


/* A real full disk (a small tmpfs; needs root, skipped otherwise): scratch on it, then the
 * output on it. OOC_ERR_NOSPACE, nothing left on the full file system, no output, input intact. */
static int dir_empty(const char *dir) {
  char list[2048];
  return extras(dir, list, sizeof list) == 0 && !tu_file_exists(g_out);
}

static void t_real_tmpfs(void) {
  if (!g_ref_inv) setup();
  char fs[1100];
  snprintf(fs, sizeof fs, "%s", tu_path("smallfs"));
  mkdir(fs, 0700);
  if (geteuid() != 0 || mount("tmpfs", fs, "tmpfs", 0, "size=16k") != 0) {
    fprintf(stderr, "(skipped: cannot mount a small tmpfs) ");
    rmdir(fs);
    return;
  }
  uint64_t h = tu_file_hash(g_in);
  ooc_ctx_t *ctx = tu_ctx();
  ooc_opts_t o;
  opts_for(&o);
  o.scratch_dir = fs; /* the spill does not fit */
  char in[1200], out[1200];
  snprintf(in, sizeof in, "%s:/A", g_in);
  snprintf(out, sizeof out, "%s:/X", g_out);
  rm_dir_files(g_dir);
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, in, out, &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_ERR_NOSPACE);
  fprintf(stderr, "[scratch on a full tmpfs: %s \"%s\"] ", ooc_status_str(st), ooc_ctx_error(ctx));
  CU_ASSERT(strstr(ooc_ctx_error(ctx), fs) != NULL);
  CU_ASSERT(dir_empty(fs) && dir_empty(g_dir));
  ooc_clear_error(ctx);
  /* the output on the full file system */
  snprintf(out, sizeof out, "%s/out.h5:/X", fs);
  o.scratch_dir = g_dir;
  st = ooc_invert(ctx, in, out, &o, &rep);
  CU_ASSERT_EQUAL(st, OOC_ERR_NOSPACE);
  fprintf(stderr, "[output on a full tmpfs: %s \"%s\"] ", ooc_status_str(st), ooc_ctx_error(ctx));
  CU_ASSERT(dir_empty(fs) && dir_empty(g_dir));
  CU_ASSERT(tu_file_hash(g_in) == h);
  CU_ASSERT(ooc_ctx_open_files(ctx) == 0);
  tu_ctx_done(ctx);
  umount(fs);
  rmdir(fs);
}

static void t_totals(void) {
  fprintf(stderr, "\n  [totals: %ld faulted runs, %ld faults injected, %ld tolerated, %ld resumed "
          "from a kept journal] ", g_runs, g_faults, g_tolerated, g_resumes);
  fprintf(stderr, "\n  [runs per command:");
  for (int k = 0; k < NJOBS; k++) fprintf(stderr, " %s %ld%s", job_name(k), g_job_runs[k],
                                          k + 1 < NJOBS ? "," : "]");
  for (int k = 0; k < NJOBS; k++) free(g_ref[k]);
  CU_ASSERT(g_faults > 0);
  free(g_ref_inv);
  free(g_ref_x);
  free(g_ref_chol);
  g_ref_inv = g_ref_x = g_ref_chol = NULL;
}

int main(void) {
  static const tu_test_t tests[] = {{"seam", t_seam},
                                    {"alloc_once", t_alloc_once},
                                    {"alloc_persistent", t_alloc_persistent},
                                    {"alloc_once_solve", t_alloc_once_solve},
                                    {"io_once", t_io_once},
                                    {"io_persistent", t_io_persistent},
                                    {"io_once_solve", t_io_once_solve},
                                    {"nospace_once", t_nospace_once},
                                    {"nospace_persistent", t_nospace_persistent},
                                    {"nospace_persistent_solve", t_nospace_persistent_solve},
                                    {"alloc_once_chol", t_alloc_once_chol},
                                    {"io_once_chol", t_io_once_chol},
                                    {"nospace_persistent_chol", t_nospace_persistent_chol},
                                    {"alloc_once_factor", t_alloc_once_factor},
                                    {"io_once_factor", t_io_once_factor},
                                    {"nospace_persistent_factor", t_nospace_persistent_factor},
                                    {"alloc_once_logdet", t_alloc_once_logdet},
                                    {"io_once_logdet", t_io_once_logdet},
                                    {"nospace_persistent_logdet", t_nospace_persistent_logdet},
                                    {"alloc_once_cholsolve", t_alloc_once_cholsolve},
                                    {"io_once_cholsolve", t_io_once_cholsolve},
                                    {"nospace_persistent_cholsolve", t_nospace_persistent_cholsolve},
                                    {"alloc_once_solvef", t_alloc_once_solvef},
                                    {"io_once_solvef", t_io_once_solvef},
                                    {"nospace_persistent_solvef", t_nospace_persistent_solvef},
                                    {"alloc_once_gemm", t_alloc_once_gemm},
                                    {"io_once_gemm", t_io_once_gemm},
                                    {"nospace_persistent_gemm", t_nospace_persistent_gemm},
                                    {"alloc_once_newton", t_alloc_once_newton},
                                    {"io_once_newton", t_io_once_newton},
                                    {"nospace_persistent_newton", t_nospace_persistent_newton},
                                    {"alloc_once_hyper7", t_alloc_once_hyper7},
                                    {"io_once_hyper7", t_io_once_hyper7},
                                    {"nospace_persistent_hyper7", t_nospace_persistent_hyper7},
                                    {"alloc_once_variant", t_alloc_once_variant},
                                    {"io_once_variant", t_io_once_variant},
                                    {"nospace_persistent_variant", t_nospace_persistent_variant},
                                    {"alloc_once_resumed", t_alloc_once_resumed},
                                    {"io_once_resumed", t_io_once_resumed},
                                    {"nospace_persistent_resumed", t_nospace_persistent_resumed},
                                    {"io_persistent_variant", t_io_persistent_variant},
                                    {"alloc_persistent_resumed", t_alloc_persistent_resumed},
                                    {"alloc_once_lusolve", t_alloc_once_lusolve},
                                    {"io_once_lusolve", t_io_once_lusolve},
                                    {"nospace_persistent_lusolve", t_nospace_persistent_lusolve},
                                    {"alloc_once_luinvert", t_alloc_once_luinvert},
                                    {"io_once_luinvert", t_io_once_luinvert},
                                    {"nospace_persistent_luinvert",
                                     t_nospace_persistent_luinvert},
                                    {"alloc_once_rbtsolve", t_alloc_once_rbtsolve},
                                    {"alloc_persistent_rbtsolve", t_alloc_persistent_rbtsolve},
                                    {"io_once_rbtsolve", t_io_once_rbtsolve},
                                    {"nospace_persistent_rbtsolve",
                                     t_nospace_persistent_rbtsolve},
                                    {"alloc_once_lstsq", t_alloc_once_lstsq},
                                    {"alloc_persistent_lstsq", t_alloc_persistent_lstsq},
                                    {"io_once_lstsq", t_io_once_lstsq},
                                    {"nospace_persistent_lstsq", t_nospace_persistent_lstsq},
                                    {"alloc_once_lsaddrows", t_alloc_once_lsaddrows},
                                    {"alloc_persistent_lsaddrows", t_alloc_persistent_lsaddrows},
                                    {"io_once_lsaddrows", t_io_once_lsaddrows},
                                    {"nospace_persistent_lsaddrows",
                                     t_nospace_persistent_lsaddrows},
                                    {"real_tmpfs", t_real_tmpfs},
                                    {"totals", t_totals},
                                    {NULL, NULL}};
  return tu_run("fault", tests);
}
