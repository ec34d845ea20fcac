/* classify.c: the symmetry and diagonal pre-pass (classify.h). */
#include "api/classify.h"

#include <math.h>
#include <string.h>

#include "base/parloop.h"

enum { CL_BLOCK = 64, CL_BAND = 512 };

typedef struct cl_run {
  const double *X, *U;
  part_t p;
  int64_t ldx, bj, nband;
  double tol;
  uint8_t *asym; /* per job (tile row ti <= tj, band of CL_BAND columns): a differing pair */
} cl_run_t;

/* (not fmax: a call per pair where its NaN rules stop the compiler inlining it, ~10 ns a pair;
 * the load has rejected NaN and Inf before the pre-pass sees a column) */
static int cl_differ(double x, double y, double tol) {
  double ax = fabs(x), ay = fabs(y);
  return fabs(x - y) > tol * (ax > ay ? ax : ay);
}

/* Job k: tile (ti, tj)'s columns [c0, c0 + CL_BAND) against U's rows, in CL_BLOCK squares:
 * U's square transposed into T first (its reads are strided by bj), so that the comparison
 * runs down contiguous columns of X and T without a branch (vectorized). Many jobs per tile,
 * so that the first tile columns, with few tiles above the diagonal, use every core too (a
 * job per tile took 3.5 s of a 65536 float32 load's caller on the H200 host). */
static void cl_job(void *arg, int64_t k, int worker) {
  const cl_run_t *c = arg;
  int64_t ti = k / c->nband, cb = (k % c->nband) * CL_BAND, ce = ooc_min64(c->bj, cb + CL_BAND);
  int64_t nr = part_len(c->p, ti), r0t = part_start(c->p, ti);
  const double *X = c->X + r0t, *U = c->U + r0t * c->bj;
  double T[CL_BLOCK * CL_BLOCK];
  int bad = 0;
  (void)worker;
  for (int64_t c0 = cb; c0 < ce && !bad; c0 += CL_BLOCK)
    for (int64_t r0 = 0; r0 < nr && !bad; r0 += CL_BLOCK) {
      int64_t w = ooc_min64(ce, c0 + CL_BLOCK) - c0, h = ooc_min64(nr, r0 + CL_BLOCK) - r0;
      for (int64_t r = 0; r < h; r++) /* T[r + cc h] = U[c0 + cc, r0 + r] */
        for (int64_t cc = 0; cc < w; cc++) T[r + cc * h] = U[c0 + cc + (r0 + r) * c->bj];
      for (int64_t cc = 0; cc < w; cc++) {
        const double *x = X + r0 + (c0 + cc) * c->ldx, *t = T + cc * h;
        for (int64_t r = 0; r < h; r++) bad |= cl_differ(x[r], t[r], c->tol);
      }
    }
  c->asym[k] = (uint8_t)bad;
}

int64_t cl_flags_bytes(part_t p) { return p.count * ooc_cdiv64(p.b, CL_BAND); }

void cl_init(cl_verdict_t *v, int f32) {
  memset(v, 0, sizeof *v);
  v->tol = f32 ? 1e-5 : 1e-12;
  v->symmetric = v->posdiag = 1;
}

void cl_column(cl_verdict_t *v, part_t p, int64_t tj, const double *X, int64_t ldx,
               const double *U, uint8_t *flags) {
  int64_t bj = part_len(p, tj), s = part_start(p, tj);
  for (int64_t d = 0; d < bj; d++)
    if (!(X[s + d + d * ldx] > 0)) v->posdiag = 0;
  if (!v->symmetric) return;
  cl_run_t c = {.X = X, .U = U, .p = p, .ldx = ldx, .bj = bj,
                .nband = ooc_cdiv64(bj, CL_BAND), .tol = v->tol, .asym = flags};
  int64_t jobs = (tj + 1) * c.nband;
  ooc_parallel(ooc_par_cpus(OOC_PAR_MAX_THREADS), jobs, cl_job, &c);
  int any = 0;
  for (int64_t k = 0; k < jobs; k++) any |= flags[k];
  if (!any) return;
  /* the first differing pair of the column block in read order: by column, then by row (above
   * the diagonal; the diagonal tile's lower half mirrors its upper one) */
  for (int64_t cc = 0; cc < bj; cc++)
    for (int64_t r = 0; r < s + cc; r++) {
      double x = X[r + cc * ldx], y = U[cc + r * bj];
      if (cl_differ(x, y, v->tol)) {
        v->symmetric = 0;
        snprintf(v->why, sizeof v->why, "A[%lld, %lld] = %.17g but A[%lld, %lld] = %.17g",
                 (long long)(s + cc), (long long)r, y, (long long)r, (long long)(s + cc), x);
        return;
      }
    }
}
