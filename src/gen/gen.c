/*
 * gen.c: seeded, tile-addressable test matrices. Contract: gen/gen.h.
 *
 * Randomness is counter-based: the value at (i, j) is a hash of (seed, i, j), never the next
 * draw of a stream, so a tile computes its entries without knowing what was generated before it.
 * The O(n) vectors of matern and cond are themselves hashes of (seed, k); gen_create only caches
 * them, so two generators with the same spec agree bit for bit.
 */
#include "gen/gen.h"

#include <math.h>
#include <string.h>

struct gen {
  ooc_ctx_t *ctx;
  gen_spec_t s;
  uint64_t key;  /* the seed, mixed: the hash key of every random entry */
  int64_t zcol;  /* singular: the resolved zero column */
  double *pts;   /* matern: x, y, z of point k at 3k, 3k+1, 3k+2 */
  double rscale; /* matern: sqrt(3) / length */
  double *u, *w; /* cond: the reflectors' unit vectors (w == u when symmetric) */
  double *d;     /* cond: singular values */
  double *p, *q; /* cond: per-column and per-row factors of the O(1) entry formula */
  double s_uw;   /* cond: sum_k u_k d_k w_k */
};

static const char *const kind_names[] = {"random", "diagdom", "matern", "cond", "singular", "rhs"};

/* Streams kept apart so, e.g., a matern point never equals an entry of `random` at the same seed.
 * The entry stream is shared by random, diagdom, singular and rhs on purpose: `singular` is then
 * exactly `random` with one column zeroed, which makes failures easy to compare. */
#define SALT_ENTRY 0x0ull
#define SALT_POINT 0x6d617465726e7074ull /* "maternpt" */
#define SALT_U 0x636f6e642d752d2dull     /* "cond-u--" */
#define SALT_W 0x636f6e642d772d2dull     /* "cond-w--" */

static uint64_t mix64(uint64_t z) { /* splitmix64's finalizer: a bijection with full avalanche */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The counter-th output of splitmix64 started at key: distinct counters give distinct values. */
static uint64_t hash_at(uint64_t key, uint64_t counter) {
  return mix64(key + (counter + 1) * 0x9e3779b97f4a7c15ull);
}

/* Top 53 bits as a multiple of 2^-52 minus 1: every value exact, uniform on [-1, 1). */
static double to_sym(uint64_t h) { return (double)(h >> 11) * 0x1.0p-52 - 1.0; }
static double to_unit(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; } /* [0, 1) */

static uint64_t key_for(uint64_t seed, uint64_t salt) { return mix64(seed ^ mix64(salt)); }

static double entry(const gen_t *g, int64_t i, int64_t j) {
  /* Row-major counter over the declared shape: unique per (i, j) for any shape that exists. */
  return to_sym(hash_at(g->key, (uint64_t)i * (uint64_t)g->s.cols + (uint64_t)j));
}

void gen_spec_default(gen_spec_t *s, gen_kind_t kind, int64_t n) {
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->rows = n;
  s->cols = n;
  s->seed = 1;
  s->length = 0.3;
  s->nugget = 1e-3;
  s->cond = 1e6;
  s->symmetric = 0;
  s->zero_col = n / 2;
}

int gen_kind_parse(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < (int)(sizeof kind_names / sizeof kind_names[0]); k++)
    if (!strcmp(name, kind_names[k])) return k;
  return -1;
}

const char *gen_kind_name(gen_kind_t k) {
  if ((unsigned)k < sizeof kind_names / sizeof kind_names[0]) return kind_names[k];
  return "unknown";
}

static ooc_status_t prepare_matern(ooc_ctx_t *ctx, gen_t *g) {
  int64_t n = g->s.rows;
  g->pts = ooc_malloc(ctx, (size_t)(3 * n + 1) * sizeof *g->pts);
  if (!g->pts)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "gen matern: cannot allocate %lld points", (long long)n);
  uint64_t key = key_for(g->s.seed, SALT_POINT);
  g->rscale = sqrt(3.0) / g->s.length;
  for (int64_t k = 0; k < n; k++) {
    /* Archimedes: z uniform on [-1, 1] and longitude uniform give a uniform point on the sphere. */
    double z = to_sym(hash_at(key, 2 * (uint64_t)k));
    double phi = 6.283185307179586476925286766559 * to_unit(hash_at(key, 2 * (uint64_t)k + 1));
    double r = sqrt(fmax(0.0, 1.0 - z * z));
    g->pts[3 * k] = r * cos(phi);
    g->pts[3 * k + 1] = r * sin(phi);
    g->pts[3 * k + 2] = z;
  }
  return OOC_OK;
}

static void unit_vector(uint64_t seed, uint64_t salt, int64_t n, double *v) {
  uint64_t key = key_for(seed, salt);
  double ss = 0;
  for (int64_t k = 0; k < n; k++) {
    v[k] = to_sym(hash_at(key, (uint64_t)k));
    ss += v[k] * v[k];
  }
  if (ss == 0) { /* every draw exactly 0: possible only in principle, but keep H orthogonal */
    v[0] = 1;
    ss = 1;
  }
  double inv = 1.0 / sqrt(ss);
  for (int64_t k = 0; k < n; k++) v[k] *= inv;
}

static ooc_status_t prepare_cond(ooc_ctx_t *ctx, gen_t *g) {
  int64_t n = g->s.rows;
  size_t len = (size_t)(n + 1) * sizeof(double);
  int sym = g->s.symmetric;
  g->u = ooc_malloc(ctx, len);
  g->w = sym ? g->u : ooc_malloc(ctx, len);
  g->d = ooc_malloc(ctx, len);
  g->p = ooc_malloc(ctx, len);
  g->q = ooc_malloc(ctx, len);
  if (!g->u || !g->w || !g->d || !g->p || !g->q)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "gen cond: cannot allocate vectors for n = %lld",
                    (long long)n);
  unit_vector(g->s.seed, SALT_U, n, g->u);
  if (!sym) unit_vector(g->s.seed, SALT_W, n, g->w);
  for (int64_t k = 0; k < n; k++)
    g->d[k] = n == 1 ? 1.0 : pow(g->s.cond, -(double)k / (double)(n - 1));
  g->d[0] = 1.0;
  if (n > 1) g->d[n - 1] = 1.0 / g->s.cond; /* the two that fix the condition number, exactly */
  double s = 0;
  for (int64_t k = 0; k < n; k++) s += g->u[k] * g->d[k] * g->w[k];
  g->s_uw = s;
  /* (I - 2uu^T) D (I - 2ww^T) expands to
   *   A_ij = d_i [i == j] - 2 u_i u_j d_j - 2 d_i w_i w_j + 4 u_i s w_j
   *        = d_i [i == j] + u_i p_j - q_i w_j,  p_j = 4 s w_j - 2 u_j d_j,  q_i = 2 d_i w_i.
   * The symmetric case uses its own grouping (cond_entry) so A_ij == A_ji bit for bit. */
  for (int64_t k = 0; k < n; k++) {
    g->p[k] = 4.0 * s * g->w[k] - 2.0 * g->u[k] * g->d[k];
    g->q[k] = 2.0 * g->d[k] * g->w[k];
  }
  return OOC_OK;
}

ooc_status_t gen_create(ooc_ctx_t *ctx, const gen_spec_t *spec, gen_t **out) {
  *out = NULL;
  const gen_spec_t *s = spec;
  const char *name = gen_kind_name(s->kind);
  if (gen_kind_parse(name) < 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen: unknown kind %d", (int)s->kind);
  if (s->rows < 0 || s->cols < 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen %s: negative shape %lld x %lld", name,
                    (long long)s->rows, (long long)s->cols);
  if (s->kind != GEN_RHS && s->cols != s->rows)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen %s: must be square, got %lld x %lld", name,
                    (long long)s->rows, (long long)s->cols);
  /* The entry counter i * cols + j must not wrap, or distinct entries could share a hash. */
  if (s->cols > 0 && s->rows > INT64_MAX / s->cols)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen %s: %lld x %lld is too large", name, (long long)s->rows,
                    (long long)s->cols);
  if (s->kind == GEN_MATERN && !(s->length > 0 && isfinite(s->length)))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen matern: length must be positive and finite, got %g",
                    s->length);
  if (s->kind == GEN_MATERN && !(s->nugget >= 0 && isfinite(s->nugget)))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen matern: nugget must be >= 0 and finite, got %g",
                    s->nugget);
  if (s->kind == GEN_COND && !(s->cond >= 1 && isfinite(s->cond)))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "gen cond: condition number must be >= 1 and finite, got %g",
                    s->cond);
  int64_t zcol = -1;
  if (s->kind == GEN_SINGULAR) {
    zcol = s->zero_col == -1 ? s->rows - 1 : s->zero_col;
    if (s->rows > 0 && (zcol < 0 || zcol >= s->rows))
      return OOC_FAIL(ctx, OOC_ERR_ARG,
                      "gen singular: zero column %lld outside 0..%lld (-1 = last)",
                      (long long)s->zero_col, (long long)(s->rows - 1));
  }

  gen_t *g = ooc_calloc(ctx, 1, sizeof *g);
  if (!g) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "gen: cannot allocate the generator");
  g->ctx = ctx;
  g->s = *s;
  g->key = key_for(s->seed, SALT_ENTRY);
  g->zcol = zcol;
  ooc_status_t st = OOC_OK;
  if (s->kind == GEN_MATERN) st = prepare_matern(ctx, g);
  if (s->kind == GEN_COND) st = prepare_cond(ctx, g);
  if (st != OOC_OK) {
    gen_destroy(g);
    return st;
  }
  *out = g;
  return OOC_OK;
}

static double matern_entry(const gen_t *g, int64_t i, int64_t j) {
  if (i == j) return 1.0 + g->s.nugget;
  const double *a = g->pts + 3 * i, *b = g->pts + 3 * j;
  /* Differences square to the same bits either way round, so A_ij == A_ji exactly. */
  double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  double r = g->rscale * sqrt(dx * dx + dy * dy + dz * dz);
  return (1.0 + r) * exp(-r);
}

static double cond_entry(const gen_t *g, int64_t i, int64_t j) {
  double diag = i == j ? g->d[i] : 0.0;
  if (g->s.symmetric)
    /* The general formula with w = u, grouped from commutative pieces (u_i u_j, d_i + d_j). */
    return diag + (g->u[i] * g->u[j]) * (4.0 * g->s_uw - 2.0 * (g->d[i] + g->d[j]));
  return diag + g->u[i] * g->p[j] - g->q[i] * g->w[j];
}

void gen_tile(const gen_t *g, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
              int64_t ld) {
  double n = (double)g->s.rows;
  for (int64_t jj = 0; jj < nc; jj++) {
    int64_t j = c0 + jj;
    double *col = dst + (size_t)jj * (size_t)ld;
    switch (g->s.kind) {
    case GEN_RANDOM:
    case GEN_RHS:
      for (int64_t ii = 0; ii < nr; ii++) col[ii] = entry(g, r0 + ii, j);
      break;
    case GEN_SINGULAR:
      for (int64_t ii = 0; ii < nr; ii++) col[ii] = j == g->zcol ? 0.0 : entry(g, r0 + ii, j);
      break;
    case GEN_DIAGDOM:
      /* Off-diagonal |a| < 1, so a row's off-diagonal sum is < n - 1 < n = |diagonal|. The sign
       * comes from the entry the diagonal replaces, so it is random but still a function of
       * (seed, i, i). */
      for (int64_t ii = 0; ii < nr; ii++) {
        int64_t i = r0 + ii;
        double v = entry(g, i, j);
        col[ii] = i != j ? v : (v < 0 ? -n : n);
      }
      break;
    case GEN_MATERN:
      for (int64_t ii = 0; ii < nr; ii++) col[ii] = matern_entry(g, r0 + ii, j);
      break;
    case GEN_COND:
      for (int64_t ii = 0; ii < nr; ii++) col[ii] = cond_entry(g, r0 + ii, j);
      break;
    }
  }
}

void gen_destroy(gen_t *g) {
  if (!g) return;
  ooc_ctx_t *ctx = g->ctx;
  ooc_free(ctx, g->pts);
  if (g->w != g->u) ooc_free(ctx, g->w);
  ooc_free(ctx, g->u);
  ooc_free(ctx, g->d);
  ooc_free(ctx, g->p);
  ooc_free(ctx, g->q);
  ooc_free(ctx, g);
}
