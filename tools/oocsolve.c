/* oocsolve: the command-line tool, a thin shell over liboocsolve. docs/CLI.md is its manual. */
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "oocsolve.h"

static const char *USAGE =
    "usage: oocsolve [invert] [options] A.h5[:/dset]            write A^-1\n"
    "       oocsolve solve [options] A.h5[:/dset] B.h5[:/dset]  write X = A^-1 B\n"
    "       oocsolve solve --factor F.h5[:/dset] [options] B.h5[:/dset]\n"
    "                                                   X = A^-1 B from A's factor (chol or lu)\n"
    "       oocsolve logdet [options] A.h5[:/dset]              print log det A (log|det A|\n"
    "                                                   and its sign for general A, by lu)\n"
    "       oocsolve factor [options] A.h5[:/dset]              write L, A = L L^T (SPD A);\n"
    "                                                   --method lu: L\\U and ipiv, PA = LU\n"
    "       oocsolve gemm [options] A.h5[:/dset] B.h5[:/dset]   write C = alpha A B + beta C0\n"
    "       oocsolve lstsq [options] A.h5[:/dset] b.h5[:/dset]  min ||A x - b||_2 (A m x n, m >= n)\n"
    "                                                   by QR: x, residual norms, R, d = Q^T b\n"
    "       oocsolve lstsq --update S.qr.h5 --add-rows U.h5 c.h5   fold rows into a QR state\n"
    "       oocsolve lstsq --update S.qr.h5 --remove-cols C0:C1    drop columns C0..C1-1\n"
    "       oocsolve lstsq --update S.qr.h5 --add-cols V.h5 [--a A.h5 --b b.h5]  append columns\n"
    "\n"
    "options:\n"
    "  --out FILE[:/dset]   output (default <A>.inv.h5:/inverse, <B>.x.h5:/X for solve,\n"
    "                       <A>.chol.h5:/L for factor, <A>.lu.h5:/LU for factor --method lu,\n"
    "                       <A>.gemm.h5:/C for gemm, <A>.qr.h5 for lstsq, <S>.u.h5 for\n"
    "                       an update)\n"
    "  --update S.qr.h5     lstsq: update this QR state file (written by lstsq) into a new one\n"
    "  --add-rows U.h5      lstsq --update: rows of A to add (their b is the positional c.h5)\n"
    "  --remove-cols C0:C1  lstsq --update: remove A's original columns C0..C1-1 (0-based)\n"
    "  --add-cols V.h5      lstsq --update: append V's columns (re-reads A and b: the state's\n"
    "                       input_a/input_b, or --a A.h5 and --b b.h5)\n"
    "  --factor FILE        solve: use this factor (from oocsolve factor: Cholesky or LU)\n"
    "                       instead of A\n"
    "  --tile N             tile edge: the unit of I/O, caching and chunking (default 4096)\n"
    "                       (lstsq: rows per block, default max(4096, 4 n))\n"
    "  --stripe N           columns eliminated per pass (default: as wide as --host-mem allows)\n"
    "  --host-mem SIZE      host memory budget, e.g. 512M, 8G (default: half of the smallest of\n"
    "                       physical memory, the cgroup limit and SLURM's allocation)\n"
    "  --scratch DIR        directory for spilled tiles (default: the output's directory)\n"
    "  --scratch-zstd L     compress spilled tiles with zstd level L (default: raw)\n"
    "  --compress SPEC      output compression: none, zstd[:L], deflate[:L] (default none)\n"
    "  --out-type T         f32 or f64 (default: the input's floating type)\n"
    "  --method M           auto, gj, chol, lu, rbt, newton or hyper7 (default auto: chol for\n"
    "                       symmetric input with a positive diagonal; otherwise, or if it is\n"
    "                       not definite, lu for solve and logdet, gj for invert); lu: LU with\n"
    "                       partial pivoting; newton/hyper7: iterative inverse from products;\n"
    "                       rbt (solve): random butterflies, LU without pivoting, refinement\n"
    "  --seed N             rbt: the butterflies' seed (default 0; the same seed, the same run)\n"
    "  --rbt-depth D        rbt: butterfly depth 1..6 (default 2)\n"
    "  --warm-start F[:/d]  newton/hyper7: start from this earlier inverse\n"
    "  --max-iter N         newton/hyper7: iteration cap (default 100); rbt: refinement steps\n"
    "                       at most (default 30)\n"
    "  --alpha X, --beta Y  gemm: scalars (defaults 1, and 1 when --c is given)\n"
    "  --c FILE[:/dset]     gemm: C0 added as beta C0 (default: none)\n"
    "  --triangle T         chol inverse: full (default) or lower (zeros above the diagonal)\n"
    "  --device D           auto, cpu, ref or cuda (default auto)\n"
    "  --gpu-mem SIZE       GPU memory budget per device (default: free device memory minus a\n"
    "                       margin)\n"
    "  --devices LIST       devices to spread over, e.g. 0,1 (default: one, GPU 0; on cpu/ref\n"
    "                       one; there 0,1 presents two host devices)\n"
    "  --streams N          CUDA streams for copies and compute (default 3)\n"
    "  --disk-bw R[,W]      the disk's read (and write) bandwidth per second, e.g. 1.2G,1.3G\n"
    "                       (dd with direct I/O): the report gives the disk floor and the ratio\n"
    "  --trace FILE         write a Chrome/Perfetto trace (JSON) of GPU copies and kernels\n"
    "  --check C            auto, full, probe (O(n^2): a 1-norm estimate for an inverse) or none\n"
    "                       (default auto: full up to n = 2048)\n"
    "  --force              replace an existing output; into an existing HDF5 file: add or\n"
    "                       replace only the named dataset, keeping everything else\n"
    "  --keep-failed        a result failing its check is kept as <out>.rejected.h5 (exit 4)\n"
    "  --allow-fill         read missing data (unwritten chunks, missing sources) as the fill value\n"
    "  --trans-a, --trans-b read A (B) transposed (a Fortran-order array), without a copy\n"
    "  --keep-fill          read values equal to _FillValue/missing_value as numbers\n"
    "                       (default: refuse such an input, exit 3)\n"
    "  --resume             continue an interrupted run from its journal (same command otherwise)\n"
    "  --checkpoint S       journal the run every S seconds (default 300), 'step' = every\n"
    "                       step, 'off' = never\n"
    "  --json               print the report as one JSON object on stdout\n"
    "  --quiet              no progress bar and no report\n"
    "  --version, --help    (--version also prints the build: CUDA, HDF5, zstd, BLAS)\n"
    "\n"
    "Options take their value as --opt V or --opt=V; '--' ends the options. A matrix is\n"
    "FILE[:/dset][[i,:,:]] (a 2-D slice; axes of length 1 are squeezed; docs/CLI.md).\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 bad input, 4 singular/inaccurate, 5 file I/O, 6 resources,\n"
    "            7 device, 130 interrupted, 70 internal error (see docs/CLI.md)\n";

/* Usage errors: the message on stderr and, with --json anywhere before "--", the same JSON object
 * a run prints (status OOC_ERR_ARG, exit code 2) on stdout, so a script reading JSON always gets
 * JSON. */
static int g_json;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "oocsolve: %s\n(oocsolve --help for usage)\n", msg);
  if (g_json) {
    ooc_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.logdet = NAN;
    rep.pivot_growth = NAN;
    ooc_report_json(&rep, OOC_ERR_ARG, msg, stdout);
  }
  return 2;
}

/* A value parser (cli_util.h) failed: it printed its message; repeat it as JSON if asked. */
static int parse_failed(void) {
  if (g_json) {
    ooc_report_t rep;
    memset(&rep, 0, sizeof rep);
    rep.logdet = NAN;
    rep.pivot_growth = NAN;
    ooc_report_json(&rep, OOC_ERR_ARG, cli_last_error(), stdout);
  }
  return 2;
}

static int pick(const char *opt, const char *val, const char *const *names, int count, int *out) {
  for (int i = 0; i < count; i++)
    if (val && strcmp(val, names[i]) == 0) {
      *out = i;
      return 0;
    }
  char list[256] = "";
  for (int i = 0; i < count; i++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
  }
  const char *near = cli_nearest(val ? val : "", names, count);
  char hint[96] = "";
  if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
  usage_error("%s: unknown value '%s'%s; one of %s", opt, val ? val : "", hint, list);
  return -1;
}

/* Every option: its name, a short alias, and whether it takes a value (--opt V or --opt=V). */
typedef struct {
  const char *name, *alias;
  int takes;
} optdef_t;

static const optdef_t OPTS[] = {
    {"--out", "-o", 1},       {"--factor", NULL, 1},      {"--tile", NULL, 1},
    {"--stripe", NULL, 1},    {"--host-mem", NULL, 1},    {"--gpu-mem", NULL, 1},
    {"--streams", NULL, 1},   {"--trace", NULL, 1},       {"--scratch", NULL, 1},
    {"--scratch-zstd", NULL, 1}, {"--compress", NULL, 1}, {"--out-type", NULL, 1},
    {"--method", NULL, 1},    {"--warm-start", NULL, 1},  {"--max-iter", NULL, 1},
    {"--alpha", NULL, 1},     {"--beta", NULL, 1},        {"--c", NULL, 1},
    {"--triangle", NULL, 1},  {"--device", NULL, 1},      {"--check", NULL, 1},
    {"--checkpoint", NULL, 1}, {"--resume", NULL, 0},     {"--force", "-f", 0},
    {"--json", NULL, 0},      {"--quiet", "-q", 0},       {"--version", NULL, 0},
    {"--help", "-h", 0},      {"--trans-a", NULL, 0},     {"--trans-b", NULL, 0},
    {"--keep-fill", NULL, 0},  {"--allow-fill", NULL, 0},  {"--keep-failed", NULL, 0},
    {"--seed", NULL, 1},      {"--rbt-depth", NULL, 1},
    {"--disk-bw", NULL, 1},   {"--devices", NULL, 1},
    {"--update", NULL, 1},    {"--add-rows", NULL, 1},    {"--remove-cols", NULL, 1},
    {"--add-cols", NULL, 1},  {"--a", NULL, 1},           {"--b", NULL, 1},
};
#define NOPTS ((int)(sizeof OPTS / sizeof OPTS[0]))

static const char *const VERBS[] = {"invert", "solve", "logdet", "factor", "gemm", "lstsq"};

static const optdef_t *find_opt(const char *name) {
  for (int k = 0; k < NOPTS; k++)
    if (!strcmp(name, OPTS[k].name) || (OPTS[k].alias && !strcmp(name, OPTS[k].alias)))
      return &OPTS[k];
  return NULL;
}

static int unknown_option(const char *typed) {
  const char *names[NOPTS];
  for (int k = 0; k < NOPTS; k++) names[k] = OPTS[k].name;
  const char *near = cli_nearest(typed, names, NOPTS);
  if (near) return usage_error("unknown option %s (did you mean %s?)", typed, near);
  return usage_error("unknown option %s", typed);
}

/* A bare word where the command goes that is no file: a misspelt command ("inverse"). */
static int looks_like_verb(const char *a) {
  if (!a || !*a || a[0] == '-' || strpbrk(a, "./:[") != NULL) return 0;
  FILE *f = fopen(a, "rb");
  if (f) {
    fclose(f);
    return 0;
  }
  return 1;
}

/* OpenBLAS reads OPENBLAS_CORETYPE once, when it loads. On a CPU it does not know it runs generic
 * kernels (some GPU hosts' VMs: Prescott's SSE3 on a CPU with AVX-512, 103 GFLOP/s where
 * SkylakeX's gave 460, and the solve check at n = 65536 with 256 right-hand sides took 25 s of
 * a 47 s run): oocsolve then restarts itself with the core the CPU runs (ooc_blas_advice), as
 * its first act, before any file or thread. Not when the user set OPENBLAS_CORETYPE (their
 * choice stands; the report's notice names the remedy), nor with OOCSOLVE_NO_RESTART set, nor
 * twice (OOCSOLVE_BLAS_RESTARTED, which also tells the restarted process to say so). A failed
 * exec leaves things as they were. */
static void blas_restart(char **argv) {
  char chosen[64], better[32];
  if (getenv("OPENBLAS_CORETYPE") || getenv("OOCSOLVE_NO_RESTART") ||
      getenv("OOCSOLVE_BLAS_RESTARTED") || !ooc_blas_advice(chosen, sizeof chosen, better,
                                                             sizeof better))
    return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  setenv("OOCSOLVE_BLAS_RESTARTED", chosen, 1);
  char *test = getenv("OOCSOLVE_TEST_BLAS_CORE"); /* (a test's stand-in for OpenBLAS's choice */
  char keep[64] = "";                             /*  is this process's alone) */
  if (test) snprintf(keep, sizeof keep, "%s", test);
  unsetenv("OOCSOLVE_TEST_BLAS_CORE");
  fflush(NULL);
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OOCSOLVE_BLAS_RESTARTED");
  if (test) setenv("OOCSOLVE_TEST_BLAS_CORE", keep, 1);
}

/* The restart above, said in the report's notices. */
static void blas_restart_notice(ooc_report_t *r) {
  const char *was = getenv("OOCSOLVE_BLAS_RESTARTED"), *now = getenv("OPENBLAS_CORETYPE");
  if (!was || !now) return;
  size_t len = strlen(r->warnings);
  snprintf(r->warnings + len, sizeof r->warnings - len, "%shost BLAS: OpenBLAS chose its %s "
           "kernels for this CPU; oocsolve restarted with OPENBLAS_CORETYPE=%s (set "
           "OPENBLAS_CORETYPE, or OOCSOLVE_NO_RESTART, to choose)", len ? "; " : "", was, now);
}

int main(int argc, char **argv) {
  blas_restart(argv);
  /* HDF5's own atexit shutdown loops on files it could not release (some damaged metadata
   * leaves an open file behind after a successful H5Fclose: HDF5 1.10) and then prints "HDF5:
   * infinite loop closing library" after our exit-3 message (issue 20). Every handle is closed
   * before we exit; the kernel releases the rest. Must come before the first HDF5 call. */
  H5dont_atexit();
  ooc_opts_t o;
  ooc_opts_default(&o);
  const char *out = NULL, *factor = NULL, *pos[3] = {0}, *c0 = NULL;
  int npos = 0, json = 0, quiet = 0, solve = 0, logdet = 0, factorize = 0, gemm = 0,
      have_beta = 0, only_pos = 0, have_seed = 0, lstsq = 0;
  const char *update = NULL, *add_rows = NULL, *add_cols = NULL, *in_a = NULL, *in_b = NULL;
  int64_t rc0 = 0, rc1 = 0;
  double alpha = 1.0, beta = 1.0;
  for (int k = 1; k < argc && strcmp(argv[k], "--"); k++)
    if (!strcmp(argv[k], "--json")) g_json = 1;
  int argi = 1;
  if (argi < argc && strcmp(argv[argi], "solve") == 0) {
    solve = 1;
    argi++;
  } else if (argi < argc && strcmp(argv[argi], "logdet") == 0) {
    logdet = 1;
    argi++;
  } else if (argi < argc && strcmp(argv[argi], "factor") == 0) {
    factorize = 1;
    argi++;
  } else if (argi < argc && strcmp(argv[argi], "gemm") == 0) {
    gemm = 1;
    argi++;
  } else if (argi < argc && strcmp(argv[argi], "lstsq") == 0) {
    lstsq = 1;
    argi++;
  } else if (argi < argc && strcmp(argv[argi], "invert") == 0) {
    argi++;
  } else if (argi < argc && looks_like_verb(argv[argi])) {
    const char *near = cli_nearest(argv[argi], VERBS, 6);
    char hint[64] = "";
    if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
    return usage_error("unknown command '%s'%s: commands are invert (the default), solve, "
                       "logdet, factor, gemm, lstsq; an input is a file (no such file '%s')", argv[argi],
                       hint, argv[argi]);
  }
  for (; argi < argc; argi++) {
    const char *arg = argv[argi];
    if (only_pos || arg[0] != '-' || !arg[1]) {
      if (npos == 3) return usage_error("too many arguments (%s)", arg);
      pos[npos++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      only_pos = 1;
      continue;
    }
    /* "--opt=value": the option as typed (for messages) and its inline value */
    char typed[64];
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    snprintf(typed, sizeof typed, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    const optdef_t *od = find_opt(typed);
    if (!od) return unknown_option(typed);
    const char *a = od->name, *v = NULL;
    if (!od->takes && eq) return usage_error("%s takes no value (got '%s')", typed, eq + 1);
    if (od->takes) {
      if (eq) v = eq + 1;
      else if (argi + 1 < argc) v = argv[++argi];
      else return usage_error("%s needs a value", typed);
    }
    if (!strcmp(a, "--help")) {
      fputs(USAGE, stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("oocsolve %s\nbuild: %s\n", ooc_version(), ooc_build_info());
      return 0;
    } else if (!strcmp(a, "--out")) {
      out = v;
    } else if (!strcmp(a, "--factor")) {
      factor = v;
    } else if (!strcmp(a, "--update")) {
      update = v;
    } else if (!strcmp(a, "--add-rows")) {
      add_rows = v;
    } else if (!strcmp(a, "--add-cols")) {
      add_cols = v;
    } else if (!strcmp(a, "--a")) {
      in_a = v;
    } else if (!strcmp(a, "--b")) {
      in_b = v;
    } else if (!strcmp(a, "--remove-cols")) {
      char *e1 = NULL, *e2 = NULL;
      long long x0 = strtoll(v, &e1, 10), x1 = *e1 == ':' ? strtoll(e1 + 1, &e2, 10) : -1;
      if (e1 == v || *e1 != ':' || !e2 || e2 == e1 + 1 || *e2 || x0 < 0 || x1 <= x0)
        return usage_error("%s %s: give C0:C1, 0-based original columns C0 .. C1-1 with "
                           "0 <= C0 < C1", typed, v);
      rc0 = x0;
      rc1 = x1;
    } else if (!strcmp(a, "--tile")) {
      if (cli_int64("oocsolve", typed, v, 1, &o.tile)) return parse_failed();
    } else if (!strcmp(a, "--stripe")) {
      if (cli_int64("oocsolve", typed, v, 1, &o.stripe)) return parse_failed();
    } else if (!strcmp(a, "--host-mem")) {
      if (cli_size("oocsolve", typed, v, &o.host_mem)) return parse_failed();
    } else if (!strcmp(a, "--gpu-mem")) {
      if (cli_size("oocsolve", typed, v, &o.gpu_mem)) return parse_failed();
    } else if (!strcmp(a, "--disk-bw")) { /* READ[,WRITE] bytes per second, e.g. 1.2G,1.3G */
      char rd[64];
      const char *comma = strchr(v, ',');
      snprintf(rd, sizeof rd, "%.*s", comma ? (int)(comma - v) : (int)strlen(v), v);
      int64_t r = 0, w = 0;
      if (cli_size("oocsolve", typed, rd, &r)) return parse_failed();
      if (comma && cli_size("oocsolve", typed, comma + 1, &w)) return parse_failed();
      o.disk_read_bw = (double)r;
      o.disk_write_bw = (double)(comma ? w : r);
    } else if (!strcmp(a, "--streams")) {
      int64_t k = 0;
      if (cli_int64("oocsolve", typed, v, 1, &k)) return parse_failed();
      if (k > 8) return usage_error("%s must be 1..8", typed);
      o.streams = (int)k;
    } else if (!strcmp(a, "--trace")) {
      o.trace = v;
    } else if (!strcmp(a, "--devices")) {
      o.devices = v; /* the call checks the list (exit 2 naming what is wrong) */
    } else if (!strcmp(a, "--scratch")) {
      o.scratch_dir = v;
    } else if (!strcmp(a, "--scratch-zstd")) {
      int64_t l;
      if (cli_int64("oocsolve", typed, v, 0, &l)) return parse_failed();
      if (l > 22) return usage_error("%s %s: a zstd level is 0 (raw) to 22", typed, v);
      o.scratch_zstd = (int)l;
    } else if (!strcmp(a, "--compress")) {
      o.compress = v;
    } else if (!strcmp(a, "--out-type")) {
      static const char *const n[] = {"auto", "f32", "f64"};
      int k;
      if (pick(typed, v, n, 3, &k)) return 2;
      o.out_dtype = (ooc_dtype_t)k;
    } else if (!strcmp(a, "--method")) {
      static const char *const n[] = {"auto", "gj", "chol", "newton", "hyper7", "lu", "rbt"};
      int k;
      if (pick(typed, v, n, 7, &k)) return 2;
      o.method = (ooc_method_t)k;
    } else if (!strcmp(a, "--seed")) {
      int64_t k = 0;
      if (cli_int64("oocsolve", typed, v, 0, &k)) return parse_failed();
      o.seed = k;
      have_seed = 1;
    } else if (!strcmp(a, "--rbt-depth")) {
      int64_t k = 0;
      if (cli_int64("oocsolve", typed, v, 1, &k)) return parse_failed();
      if (k > 6) return usage_error("%s %s: a butterfly depth is 1 to 6", typed, v);
      o.rbt_depth = (int)k;
    } else if (!strcmp(a, "--warm-start")) {
      o.warm_start = v;
    } else if (!strcmp(a, "--max-iter")) {
      int64_t k = 0;
      if (cli_int64("oocsolve", typed, v, 1, &k)) return parse_failed();
      if (k > 100000) return usage_error("%s %s: at most 100000", typed, v);
      o.max_iter = (int)k;
    } else if (!strcmp(a, "--alpha") || !strcmp(a, "--beta")) {
      char *end;
      double x = strtod(v, &end);
      if (!*v || *end || !isfinite(x)) return usage_error("%s: not a finite number", typed);
      if (a[2] == 'a') alpha = x;
      else {
        beta = x;
        have_beta = 1;
      }
    } else if (!strcmp(a, "--c")) {
      c0 = v;
    } else if (!strcmp(a, "--triangle")) {
      static const char *const n[] = {"full", "lower"};
      int k;
      if (pick(typed, v, n, 2, &k)) return 2;
      o.lower_only = k;
    } else if (!strcmp(a, "--device")) {
      static const char *const n[] = {"auto", "cpu", "ref", "cuda"};
      int k;
      if (pick(typed, v, n, 4, &k)) return 2;
      o.device = (ooc_device_t)k;
    } else if (!strcmp(a, "--check")) {
      static const char *const n[] = {"auto", "none", "probe", "full"};
      int k;
      if (pick(typed, v, n, 4, &k)) return 2;
      o.check = (ooc_check_t)k;
    } else if (!strcmp(a, "--resume")) {
      o.resume = 1;
    } else if (!strcmp(a, "--checkpoint")) {
      if (!strcmp(v, "step")) {
        o.checkpoint = OOC_CHECKPOINT_EVERY_STEP;
      } else if (!strcmp(v, "off")) {
        o.checkpoint = OOC_CHECKPOINT_NEVER;
      } else {
        char *end = NULL;
        double sec = strtod(v, &end);
        if (end == v || *end || !(sec > 0) || sec > 1e9)
          return usage_error("%s: '%s' is not a number of seconds > 0, 'step' or 'off'", typed,
                             v);
        o.checkpoint = sec;
      }
    } else if (!strcmp(a, "--allow-fill")) {
      o.allow_fill = 1;
    } else if (!strcmp(a, "--force")) {
      o.force = 1;
    } else if (!strcmp(a, "--keep-failed")) {
      o.keep_failed = 1;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--quiet")) {
      quiet = 1;
    } else if (!strcmp(a, "--trans-a")) {
      o.trans_a = 1;
    } else if (!strcmp(a, "--trans-b")) {
      o.trans_b = 1;
    } else if (!strcmp(a, "--keep-fill")) {
      o.keep_fill = 1;
    }
  }
  if (npos >= 1 && !solve && !gemm && !logdet && !factorize && looks_like_verb(pos[0]) &&
      cli_nearest(pos[0], VERBS, 6))
    return usage_error("unknown command '%s' (did you mean '%s'?)", pos[0],
                       cli_nearest(pos[0], VERBS, 6));
  if ((update || add_rows || add_cols || in_a || in_b || rc1 > rc0) && !lstsq)
    return usage_error("%s", "--update, --add-rows, --add-cols, --a, --b and --remove-cols are "
                             "lstsq options");
  if (lstsq) {
    if ((add_rows || add_cols || rc1 > rc0) && !update)
      return usage_error("%s", "--add-rows, --add-cols and --remove-cols update a state: give "
                               "--update S.qr.h5");
    if (update && !add_rows && !add_cols && !(rc1 > rc0))
      return usage_error("%s", "--update needs --add-rows U.h5 c.h5, --add-cols V.h5 or "
                               "--remove-cols C0:C1");
    if (update && (!!add_rows + !!add_cols + (rc1 > rc0)) > 1)
      return usage_error("%s", "one update at a time: --add-rows, --add-cols or --remove-cols");
    if ((in_a || in_b) && !add_cols)
      return usage_error("%s", "--a and --b name A and b for --add-cols");
    int want = !update ? 2 : add_rows ? 1 : 0;
    if (npos != want)
      return usage_error("%s", !update ? "lstsq needs A and b"
                               : add_rows ? "lstsq --add-rows U.h5 needs c.h5 (the new rows' b)"
                               : add_cols ? "lstsq --add-cols takes no positional matrices (A "
                                            "and b: --a, --b)"
                                          : "lstsq --remove-cols takes no matrix arguments");
  }
  if (factor && !solve) return usage_error("%s", "--factor is an option of solve");
  if (o.trans_b && !solve && !gemm && !lstsq)
    return usage_error("%s", "--trans-b is for solve and gemm (the second matrix)");
  if (o.trans_a && factor)
    return usage_error("%s", "--trans-a does not apply to solve --factor (L is read as written)");
  if (!lstsq && npos != ((solve && !factor) || gemm ? 2 : 1))
    return usage_error("%s", gemm     ? "gemm needs A and B"
                             : !solve ? "give one input matrix"
                             : factor ? "solve --factor L.h5 needs B only"
                                      : "solve needs A and B");
  if (!gemm && (c0 || have_beta || alpha != 1.0))
    return usage_error("%s", "--alpha, --beta and --c are gemm options");
  if (gemm && have_beta && !c0) return usage_error("%s", "--beta needs --c (the C0 it scales)");
  if (o.warm_start && o.method != OOC_METHOD_NEWTON && o.method != OOC_METHOD_HYPER7)
    return usage_error("%s", "--warm-start needs --method newton or hyper7");
  if (o.max_iter && o.method != OOC_METHOD_NEWTON && o.method != OOC_METHOD_HYPER7 &&
      o.method != OOC_METHOD_RBT)
    return usage_error("%s", "--max-iter needs --method newton, hyper7 or rbt");
  if ((have_seed || o.rbt_depth) && o.method != OOC_METHOD_RBT)
    return usage_error("%s", "--seed and --rbt-depth need --method rbt");

  /* the command line, for the output's history attribute (shell-quoted where needed) */
  static char history[8192];
  for (int k = 0, len = 0; k < argc && len < (int)sizeof history - 4; k++) {
    int quote = strpbrk(argv[k], " \t'\"$[]*?;&|<>()") != NULL || !argv[k][0];
    int w = snprintf(history + len, sizeof history - (size_t)len, quote ? "%s'%s'" : "%s%s",
                     k ? " " : "", k ? argv[k] : "oocsolve");
    if (w < 0) break;
    len += w;
  }
  o.history = history;
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) {
    fprintf(stderr, "oocsolve: out of memory\n");
    return 6;
  }
  cli_progress_enable(!quiet);
  ooc_ctx_set_progress(ctx, cli_progress, NULL);
  cli_trap_signals(ctx);
  ooc_report_t rep;
  double ld = 0;
  ooc_status_t st = lstsq && add_cols
                        ? ooc_lstsq_add_cols(ctx, update, add_cols, in_a, in_b, out, &o, &rep)
                    : lstsq && update
                        ? ooc_lstsq_update(ctx, update, add_rows, pos[0], rc0, rc1, out, &o, &rep)
                    : lstsq     ? ooc_lstsq(ctx, pos[0], pos[1], out, &o, &rep)
                    : factor    ? ooc_solve_factor(ctx, factor, pos[0], out, &o, &rep)
                    : solve     ? ooc_solve(ctx, pos[0], pos[1], out, &o, &rep)
                    : gemm      ? ooc_gemm(ctx, pos[0], pos[1], c0, out, alpha, beta, &o, &rep)
                    : logdet    ? ooc_logdet(ctx, pos[0], &o, &rep, &ld)
                    : factorize ? ooc_factor(ctx, pos[0], out, &o, &rep)
                                : ooc_invert(ctx, pos[0], out, &o, &rep);
  cli_progress_done();
  blas_restart_notice(&rep);
  if (json) ooc_report_json(&rep, st, st ? ooc_ctx_error(ctx) : "", stdout);
  else if (logdet && st == OOC_OK) printf("%.17g\n", ld); /* scripts read this line */
  else if (!quiet && st == OOC_OK) cli_report_print(&rep, stdout);
  if (st != OOC_OK) {
    fprintf(stderr, "oocsolve: error: %s\n", ooc_ctx_error(ctx));
    if (st == OOC_ERR_INTERRUPTED)
      fprintf(stderr, "oocsolve: stopped; no output was written%s\n",
              strstr(ooc_ctx_error(ctx), "--resume") ? "; rerun with --resume to continue" : "");
  }
  int code = ooc_status_exit_code(st);
  ooc_ctx_destroy(ctx);
  return code;
}
