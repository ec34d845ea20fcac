/* classify.c: the symmetry and diagonal pre-pass (classify.h). */
#include "api/classify.h"

#include <math.h>
#include <string.h>

#include "base/parloop.h"

enum { CL_BLOCK = 64 };

typedef struct cl_run {
  const double *X, *U;
  part_t p;
  int64_t ldx, tj, bj;
  double tol;
  uint8_t *asym; /* per tile row ti <= tj: a differing pair in tile (ti, tj) */
} cl_run_t;

static int cl_differ(double x, double y, double tol) {
  return fabs(x - y) > tol * fmax(fabs(x), fabs(y));
}

static void cl_tile(void *arg, int64_t ti, int worker) {
  const cl_run_t *c = arg;
  (void)worker;
  int64_t nr = part_len(c->p, ti), r0t = part_start(c->p, ti);
  const double *X = c->X + r0t, *U = c->U + r0t * c->bj;
  for (int64_t c0 = 0; c0 < c->bj && !c->asym[ti]; c0 += CL_BLOCK)
    for (int64_t r0 = 0; r0 < nr && !c->asym[ti]; r0 += CL_BLOCK) {
      int64_t c1 = ooc_min64(c->bj, c0 + CL_BLOCK), r1 = ooc_min64(nr, r0 + CL_BLOCK);
      for (int64_t cc = c0; cc < c1; cc++)
        for (int64_t r = r0; r < r1; r++)
          if (cl_differ(X[r + cc * c->ldx], U[cc + r * c->bj], c->tol)) c->asym[ti] = 1;
    }
}

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
  cl_run_t c = {.X = X, .U = U, .p = p, .ldx = ldx, .tj = tj, .bj = bj, .tol = v->tol,
                .asym = flags};
  memset(flags, 0, (size_t)(tj + 1));
  ooc_parallel(ooc_par_cpus(16), tj + 1, cl_tile, &c);
  int any = 0;
  for (int64_t ti = 0; ti <= tj; ti++) any |= flags[ti];
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
