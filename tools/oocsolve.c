/* oocsolve: the command-line tool, a thin shell over liboocsolve. docs/CLI.md is its manual. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "oocsolve.h"

static const char *USAGE =
    "usage: oocsolve [invert] [options] A.h5[:/dset]            write A^-1\n"
    "       oocsolve solve [options] A.h5[:/dset] B.h5[:/dset]  write X = A^-1 B\n"
    "       oocsolve solve --factor L.h5[:/dset] [options] B.h5[:/dset]\n"
    "                                                   X = A^-1 B from A's Cholesky factor L\n"
    "       oocsolve logdet [options] A.h5[:/dset]              print log det A (SPD A)\n"
    "       oocsolve factor [options] A.h5[:/dset]              write L, A = L L^T (SPD A)\n"
    "       oocsolve gemm [options] A.h5[:/dset] B.h5[:/dset]   write C = alpha A B + beta C0\n"
    "\n"
    "options:\n"
    "  --out FILE[:/dset]   output (default <A>.inv.h5:/inverse, <B>.x.h5:/X for solve,\n"
    "                       <A>.chol.h5:/L for factor, <A>.gemm.h5:/C for gemm)\n"
    "  --factor FILE        solve: use this Cholesky factor (from oocsolve factor) instead of A\n"
    "  --tile N             tile edge: the unit of I/O, caching and chunking (default 4096)\n"
    "  --stripe N           columns eliminated per pass (default: as wide as --host-mem allows)\n"
    "  --host-mem SIZE      host memory budget, e.g. 512M, 8G (default: half of physical memory)\n"
    "  --scratch DIR        directory for spilled tiles (default: the output's directory)\n"
    "  --scratch-zstd L     compress spilled tiles with zstd level L (default: raw)\n"
    "  --compress SPEC      output compression: none, zstd[:L], deflate[:L] (default none)\n"
    "  --out-type T         f32 or f64 (default: the input's floating type)\n"
    "  --method M           auto, gj, chol, newton or hyper7 (default auto: chol for symmetric\n"
    "                       input with a positive diagonal, falling back to gj if it is not\n"
    "                       definite); newton/hyper7: iterative inverse from matrix products\n"
    "  --warm-start F[:/d]  newton/hyper7: start from this earlier inverse\n"
    "  --max-iter N         newton/hyper7: iteration cap (default 100)\n"
    "  --alpha X, --beta Y  gemm: scalars (defaults 1, and 1 when --c is given)\n"
    "  --c FILE[:/dset]     gemm: C0 added as beta C0 (default: none)\n"
    "  --triangle T         chol inverse: full (default) or lower (zeros above the diagonal)\n"
    "  --device D           auto, cpu, ref or cuda (default auto)\n"
    "  --gpu-mem SIZE       GPU memory budget (default: free device memory minus a margin)\n"
    "  --streams N          CUDA streams for copies and compute (default 3)\n"
    "  --trace FILE         write a Chrome/Perfetto trace (JSON) of GPU copies and kernels\n"
    "  --check C            auto, full, probe (O(n^2): a 1-norm estimate for an inverse) or none\n"
    "                       (default auto: full up to n = 2048)\n"
    "  --force              replace an existing output\n"
    "  --keep-failed        a result failing its check is kept as <out>.rejected.h5 (exit 4)\n"
    "  --resume             continue an interrupted run from its journal (same command otherwise)\n"
    "  --checkpoint S       journal in-core runs every S seconds (default 300), 'step' = every\n"
    "                       step, 'off' = never; out-of-core runs journal every step\n"
    "  --json               print the report as one JSON object on stdout\n"
    "  --quiet              no progress bar and no report\n"
    "  --version, --help\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 bad input, 4 singular/inaccurate, 5 file I/O, 6 resources,\n"
    "            7 device, 130 interrupted, 70 internal error (see docs/CLI.md)\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "oocsolve: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(oocsolve --help for usage)\n");
  return 2;
}

static int pick(const char *opt, const char *val, const char *const *names, int count, int *out) {
  for (int i = 0; i < count; i++)
    if (val && strcmp(val, names[i]) == 0) {
      *out = i;
      return 0;
    }
  fprintf(stderr, "oocsolve: %s: unknown value '%s'\n", opt, val ? val : "");
  return -1;
}

int main(int argc, char **argv) {
  ooc_opts_t o;
  ooc_opts_default(&o);
  const char *out = NULL, *factor = NULL, *pos[3] = {0}, *c0 = NULL;
  int npos = 0, json = 0, quiet = 0, solve = 0, logdet = 0, factorize = 0, gemm = 0,
      have_beta = 0;
  double alpha = 1.0, beta = 1.0;
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
  } else if (argi < argc && strcmp(argv[argi], "invert") == 0) {
    argi++;
  }
  for (; argi < argc; argi++) {
    const char *a = argv[argi];
    const char *v = argi + 1 < argc ? argv[argi + 1] : NULL;
#define NEEDV                                                                                      \
  do {                                                                                             \
    if (!v) return usage_error("%s needs a value", a);                                             \
    argi++;                                                                                        \
  } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(USAGE, stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("oocsolve %s\n", ooc_version());
      return 0;
    } else if (!strcmp(a, "--out") || !strcmp(a, "-o")) {
      NEEDV;
      out = v;
    } else if (!strcmp(a, "--factor")) {
      NEEDV;
      factor = v;
    } else if (!strcmp(a, "--tile")) {
      NEEDV;
      if (cli_int64("oocsolve", a, v, 1, &o.tile)) return 2;
    } else if (!strcmp(a, "--stripe")) {
      NEEDV;
      if (cli_int64("oocsolve", a, v, 1, &o.stripe)) return 2;
    } else if (!strcmp(a, "--host-mem")) {
      NEEDV;
      if (cli_size("oocsolve", a, v, &o.host_mem)) return 2;
    } else if (!strcmp(a, "--gpu-mem")) {
      NEEDV;
      if (cli_size("oocsolve", a, v, &o.gpu_mem)) return 2;
    } else if (!strcmp(a, "--streams")) {
      int64_t k = 0;
      NEEDV;
      if (cli_int64("oocsolve", a, v, 1, &k) || k > 8) {
        if (k > 8) fprintf(stderr, "oocsolve: --streams must be 1..8\n");
        return 2;
      }
      o.streams = (int)k;
    } else if (!strcmp(a, "--trace")) {
      NEEDV;
      o.trace = v;
    } else if (!strcmp(a, "--scratch")) {
      NEEDV;
      o.scratch_dir = v;
    } else if (!strcmp(a, "--scratch-zstd")) {
      int64_t l;
      NEEDV;
      if (cli_int64("oocsolve", a, v, 0, &l) || l > 22) return 2;
      o.scratch_zstd = (int)l;
    } else if (!strcmp(a, "--compress")) {
      NEEDV;
      o.compress = v;
    } else if (!strcmp(a, "--out-type")) {
      static const char *const n[] = {"auto", "f32", "f64"};
      int k;
      NEEDV;
      if (pick(a, v, n, 3, &k)) return 2;
      o.out_dtype = (ooc_dtype_t)k;
    } else if (!strcmp(a, "--method")) {
      static const char *const n[] = {"auto", "gj", "chol", "newton", "hyper7"};
      int k;
      NEEDV;
      if (pick(a, v, n, 5, &k)) return 2;
      o.method = (ooc_method_t)k;
    } else if (!strcmp(a, "--warm-start")) {
      NEEDV;
      o.warm_start = v;
    } else if (!strcmp(a, "--max-iter")) {
      int64_t k = 0;
      NEEDV;
      if (cli_int64("oocsolve", a, v, 1, &k)) return 2;
      if (k > 100000) return usage_error("--max-iter %s: at most 100000", v);
      o.max_iter = (int)k;
    } else if (!strcmp(a, "--alpha") || !strcmp(a, "--beta")) {
      char *end;
      NEEDV;
      double x = strtod(v, &end);
      if (!*v || *end || !isfinite(x)) return usage_error("%s: not a finite number", a);
      if (a[2] == 'a') alpha = x;
      else {
        beta = x;
        have_beta = 1;
      }
    } else if (!strcmp(a, "--c")) {
      NEEDV;
      c0 = v;
    } else if (!strcmp(a, "--triangle")) {
      static const char *const n[] = {"full", "lower"};
      int k;
      NEEDV;
      if (pick(a, v, n, 2, &k)) return 2;
      o.lower_only = k;
    } else if (!strcmp(a, "--device")) {
      static const char *const n[] = {"auto", "cpu", "ref", "cuda"};
      int k;
      NEEDV;
      if (pick(a, v, n, 4, &k)) return 2;
      o.device = (ooc_device_t)k;
    } else if (!strcmp(a, "--check")) {
      static const char *const n[] = {"auto", "none", "probe", "full"};
      int k;
      NEEDV;
      if (pick(a, v, n, 4, &k)) return 2;
      o.check = (ooc_check_t)k;
    } else if (!strcmp(a, "--resume")) {
      o.resume = 1;
    } else if (!strcmp(a, "--checkpoint")) {
      NEEDV;
      if (!strcmp(v, "step")) {
        o.checkpoint = OOC_CHECKPOINT_EVERY_STEP;
      } else if (!strcmp(v, "off")) {
        o.checkpoint = OOC_CHECKPOINT_NEVER;
      } else {
        char *end = NULL;
        double sec = strtod(v, &end);
        if (end == v || *end || !(sec > 0) || sec > 1e9)
          return usage_error("--checkpoint: '%s' is not a number of seconds > 0, 'step' or 'off'",
                             v);
        o.checkpoint = sec;
      }
    } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
      o.force = 1;
    } else if (!strcmp(a, "--keep-failed")) {
      o.keep_failed = 1;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
      quiet = 1;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option %s", a);
    } else {
      if (npos == 3) return usage_error("too many arguments (%s)", a);
      pos[npos++] = a;
    }
  }
  if (factor && !solve) return usage_error("%s", "--factor is an option of solve");
  if (npos != ((solve && !factor) || gemm ? 2 : 1))
    return usage_error("%s", gemm     ? "gemm needs A and B"
                             : !solve ? "give one input matrix"
                             : factor ? "solve --factor L.h5 needs B only"
                                      : "solve needs A and B");
  if (!gemm && (c0 || have_beta || alpha != 1.0))
    return usage_error("%s", "--alpha, --beta and --c are gemm options");
  if (gemm && have_beta && !c0) return usage_error("%s", "--beta needs --c (the C0 it scales)");
  if ((o.warm_start || o.max_iter) && o.method != OOC_METHOD_NEWTON &&
      o.method != OOC_METHOD_HYPER7)
    return usage_error("%s", "--warm-start and --max-iter need --method newton or hyper7");

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
  ooc_status_t st = factor      ? ooc_solve_factor(ctx, factor, pos[0], out, &o, &rep)
                    : solve     ? ooc_solve(ctx, pos[0], pos[1], out, &o, &rep)
                    : gemm      ? ooc_gemm(ctx, pos[0], pos[1], c0, out, alpha, beta, &o, &rep)
                    : logdet    ? ooc_logdet(ctx, pos[0], &o, &rep, &ld)
                    : factorize ? ooc_factor(ctx, pos[0], out, &o, &rep)
                                : ooc_invert(ctx, pos[0], out, &o, &rep);
  cli_progress_done();
  if (json) ooc_report_json(&rep, st, st ? ooc_ctx_error(ctx) : "", stdout);
  else if (logdet && st == OOC_OK) printf("%.17g\n", ld); /* scripts read this line */
  else if (!quiet && st == OOC_OK) ooc_report_print(&rep, stdout);
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
