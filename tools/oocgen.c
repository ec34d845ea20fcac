/*
 * oocgen: write a seeded test matrix (src/gen) to HDF5, tile by tile, so matrices far larger than
 * memory can be made with a buffer of one tile. The file records how it was made (attributes), so
 * a checker can regenerate any tile instead of reading a second copy.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "io/h5mat.h"
#include "oocsolve.h"

static const char *USAGE =
    "usage: oocgen KIND --n N [options] OUT.h5[:/dset]\n"
    "\n"
    "KIND (every kind but rhs is N x N):\n"
    "  random     uniform entries in [-1, 1)\n"
    "  diagdom    random, diagonal +-N: strictly diagonally dominant rows\n"
    "  matern     SPD Matern (nu = 3/2) covariance of N points on the unit sphere\n"
    "  cond       H1 D H2 with 2-norm condition number exactly --cond\n"
    "  singular   random with one zero column (--zero-col)\n"
    "  rhs        random N x M right-hand sides (--cols M)\n"
    "\n"
    "options:\n"
    "  --n N              rows (and columns, except for rhs)\n"
    "  --cols M           rhs: number of columns (default 1)\n"
    "  --seed S           0 .. 2^63-1 (default 1)\n"
    "  --length L         matern: length scale (default 0.3)\n"
    "  --nugget G         matern: added to the diagonal (default 1e-3)\n"
    "  --cond C           cond: condition number >= 1 (default 1e6)\n"
    "  --symmetric        cond: H2 = H1, so the matrix is SPD\n"
    "  --zero-col J       singular: the zero column, 0-based; -1 = last (default N/2)\n"
    "  --dtype T          f64 or f32 (default f64)\n"
    "  --tile B           HDF5 chunk edge and generation tile (default min(N, 1024))\n"
    "  --compress SPEC    none, zstd[:L] or deflate[:L] (default none)\n"
    "  --force            replace an existing output\n"
    "  --quiet            print nothing on success\n"
    "  --help, --version\n"
    "\n"
    "The dataset defaults to /A. Exit codes: 0 ok, 2 usage, 5 output, 6 resources,\n"
    "130 interrupted (see docs/CLI.md).\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "oocgen: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(oocgen --help for usage)\n");
  va_end(ap);
  return 2;
}

static int parse_i64(const char *opt, const char *val, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(val, &end, 10);
  if (end == val || *end || errno == ERANGE || v < lo || v > hi) {
    char range[96];
    snprintf(range, sizeof range, "an integer in %lld .. %lld", (long long)lo, (long long)hi);
    fprintf(stderr, "oocgen: %s: '%s' is not %s\n(oocgen --help for usage)\n", opt, val, range);
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

/* lo_open: the bound itself is excluded (length > 0), else included (nugget >= 0). */
static int parse_f64(const char *opt, const char *val, double lo, int lo_open, double *out) {
  char *end;
  errno = 0;
  double v = strtod(val, &end);
  if (end == val || *end || errno == ERANGE || !isfinite(v) || v < lo || (lo_open && v == lo)) {
    fprintf(stderr, "oocgen: %s: '%s' is not a finite number %s %g\n(oocgen --help for usage)\n",
            opt, val, lo_open ? ">" : ">=", lo);
    return -1;
  }
  *out = v;
  return 0;
}

/* The handler may only touch the async-signal-safe interrupt flag; the writer notices it at the
 * next tile and removes its temporary file on the way out. */
static ooc_ctx_t *g_ctx;
static void on_signal(int sig) {
  (void)sig;
  if (g_ctx) ooc_ctx_interrupt(g_ctx);
}

typedef struct {
  gen_spec_t spec;
  h5m_type_t type;
  int64_t tile;
  const char *compress, *out;
  int force, quiet;
} job_t;

static ooc_status_t write_attrs(h5mat_t *m, const job_t *j) {
  const gen_spec_t *s = &j->spec;
  OOC_TRY(h5m_attr_str(m, "generator", gen_kind_name(s->kind)));
  OOC_TRY(h5m_attr_i64(m, "seed", (int64_t)s->seed));
  OOC_TRY(h5m_attr_str(m, "generator_version", ooc_version()));
  switch (s->kind) {
  case GEN_MATERN:
    OOC_TRY(h5m_attr_f64(m, "length", s->length));
    OOC_TRY(h5m_attr_f64(m, "nugget", s->nugget));
    break;
  case GEN_COND:
    OOC_TRY(h5m_attr_f64(m, "cond", s->cond));
    OOC_TRY(h5m_attr_i64(m, "symmetric", s->symmetric ? 1 : 0));
    break;
  case GEN_SINGULAR:
    OOC_TRY(h5m_attr_i64(m, "zero_col", s->zero_col == -1 ? s->rows - 1 : s->zero_col));
    break;
  default: break;
  }
  return OOC_OK;
}

static ooc_status_t run(ooc_ctx_t *ctx, const job_t *j) {
  const gen_spec_t *s = &j->spec;
  char file[4096], dset[1024];
  gen_t *g = NULL;
  h5mat_t *m = NULL;
  double *buf = NULL;
  int kind, level;
  double t0 = ooc_now();
  ooc_status_t st;
  OOC_CHECK(st = h5m_parse_compress(ctx, j->compress, &kind, &level));
  OOC_CHECK(st = h5m_split_spec(ctx, j->out, file, sizeof file, dset, sizeof dset));
  if (!dset[0]) snprintf(dset, sizeof dset, "/A");
  OOC_CHECK(st = gen_create(ctx, s, &g));
  OOC_CHECK(st = h5m_create(ctx, file, dset, s->rows, s->cols, j->type, j->tile, j->compress,
                            j->force, &m));
  int64_t br = ooc_min64(j->tile, s->rows), bc = ooc_min64(j->tile, s->cols);
  buf = ooc_malloc(ctx, (size_t)br * (size_t)bc * sizeof *buf);
  if (!buf) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "cannot allocate a %lld x %lld tile buffer (%.1f MiB)",
                  (long long)br, (long long)bc, (double)br * (double)bc * 8.0 / 1048576.0);
    goto done;
  }
  /* Chunk-aligned tiles in the file's (row-major) chunk order: each write fills whole chunks. */
  int64_t ntr = ooc_cdiv64(s->rows, br), done_tiles = 0, ntiles = ntr * ooc_cdiv64(s->cols, bc);
  for (int64_t r0 = 0; r0 < s->rows; r0 += br)
    for (int64_t c0 = 0; c0 < s->cols; c0 += bc) {
      int64_t nr = ooc_min64(br, s->rows - r0), nc = ooc_min64(bc, s->cols - c0);
      gen_tile(g, r0, c0, nr, nc, buf, nr);
      OOC_CHECK(st = h5m_write(m, r0, c0, nr, nc, buf, nr));
      OOC_CHECK(st = ooc_tick(ctx, "write", (double)++done_tiles / (double)ntiles));
    }
  OOC_CHECK(st = write_attrs(m, j));
  OOC_CHECK(st = h5m_commit(m));
  if (!j->quiet)
    printf("oocgen: wrote %s:%s, %lld x %lld %s (%s, seed %llu) in %.2f s\n", file, dset,
           (long long)s->rows, (long long)s->cols, gen_kind_name(s->kind),
           j->type == H5M_F32 ? "f32" : "f64", (unsigned long long)s->seed, ooc_now() - t0);
done:
  h5m_close(m); /* an uncommitted output's temporary file goes with it */
  ooc_free(ctx, buf);
  gen_destroy(g);
  return st;
}

int main(int argc, char **argv) {
  const char *pos[2] = {0};
  int npos = 0;
  int64_t n = -1, cols = -1, seed = 1, zero_col = 0, tile = -1;
  double length = 0, nugget = 0, cond = 0;
  int has_len = 0, has_nug = 0, has_cond = 0, has_zero = 0, symmetric = 0;
  job_t j = {.type = H5M_F64, .compress = NULL};

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(USAGE, stdout);
      return 0;
    }
    if (!strcmp(a, "--version")) {
      printf("oocgen %s\n", ooc_version());
      return 0;
    }
    if (!strcmp(a, "--force")) {
      j.force = 1;
      continue;
    }
    if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
      j.quiet = 1;
      continue;
    }
    if (!strcmp(a, "--symmetric")) {
      symmetric = 1;
      continue;
    }
    if (a[0] == '-' && a[1] == '-') {
      if (!v) return usage_error("%s needs a value", a);
      i++;
      int bad = 0;
      if (!strcmp(a, "--n")) {
        bad = parse_i64(a, v, 1, INT64_MAX, &n);
      } else if (!strcmp(a, "--cols")) {
        bad = parse_i64(a, v, 1, INT64_MAX, &cols);
      } else if (!strcmp(a, "--seed")) {
        bad = parse_i64(a, v, 0, INT64_MAX, &seed);
      } else if (!strcmp(a, "--tile")) {
        bad = parse_i64(a, v, 1, INT64_MAX, &tile);
      } else if (!strcmp(a, "--zero-col")) {
        bad = parse_i64(a, v, -1, INT64_MAX, &zero_col);
        has_zero = 1;
      } else if (!strcmp(a, "--length")) {
        bad = parse_f64(a, v, 0, 1, &length);
        has_len = 1;
      } else if (!strcmp(a, "--nugget")) {
        bad = parse_f64(a, v, 0, 0, &nugget);
        has_nug = 1;
      } else if (!strcmp(a, "--cond")) {
        bad = parse_f64(a, v, 1, 0, &cond);
        has_cond = 1;
      } else if (!strcmp(a, "--compress")) {
        j.compress = v;
      } else if (!strcmp(a, "--dtype")) {
        if (!strcmp(v, "f64") || !strcmp(v, "float64"))
          j.type = H5M_F64;
        else if (!strcmp(v, "f32") || !strcmp(v, "float32"))
          j.type = H5M_F32;
        else
          return usage_error("--dtype: '%s' is not f32 or f64", v);
      } else {
        return usage_error("unknown option %s", a);
      }
      if (bad) return 2;
      continue;
    }
    if (npos == 2) return usage_error("unexpected argument '%s'", a);
    pos[npos++] = a;
  }

  if (npos < 2) {
    fputs(USAGE, stderr);
    return 2;
  }
  int kind = gen_kind_parse(pos[0]);
  if (kind < 0)
    return usage_error("unknown kind '%s' (random, diagdom, matern, cond, singular, rhs)", pos[0]);
  if (n < 0) return usage_error("--n is required");
  /* Options meant for another kind are refused, not ignored: a typo must not give a matrix
   * other than the one asked for. */
  const char *name = pos[0];
  if (cols >= 0 && kind != GEN_RHS)
    return usage_error("--cols applies to rhs only (%s is square)", name);
  if ((has_len || has_nug) && kind != GEN_MATERN)
    return usage_error("--length and --nugget apply to matern only, not %s", name);
  if ((has_cond || symmetric) && kind != GEN_COND)
    return usage_error("--cond and --symmetric apply to cond only, not %s", name);
  if (has_zero && kind != GEN_SINGULAR)
    return usage_error("--zero-col applies to singular only, not %s", name);
  if (has_zero && zero_col >= n)
    return usage_error("--zero-col %lld: must be -1 or below --n %lld", (long long)zero_col,
                       (long long)n);

  gen_spec_default(&j.spec, (gen_kind_t)kind, n);
  if (kind == GEN_RHS) j.spec.cols = cols < 0 ? 1 : cols;
  j.spec.seed = (uint64_t)seed;
  if (has_len) j.spec.length = length;
  if (has_nug) j.spec.nugget = nugget;
  if (has_cond) j.spec.cond = cond;
  if (has_zero) j.spec.zero_col = zero_col;
  j.spec.symmetric = symmetric;
  j.tile = tile < 0 ? ooc_min64(n, 1024) : tile;
  j.out = pos[1];

  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) {
    fprintf(stderr, "oocgen: out of memory\n");
    return ooc_status_exit_code(OOC_ERR_NOMEM);
  }
  g_ctx = ctx;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  ooc_status_t st = run(ctx, &j);
  if (st != OOC_OK) {
    const char *msg = ooc_ctx_error(ctx);
    fprintf(stderr, "oocgen: %s\n", msg && *msg ? msg : ooc_status_str(st));
  }
  g_ctx = NULL;
  ooc_ctx_destroy(ctx);
  return ooc_status_exit_code(st);
}
