/* absscan.c: see absscan.h. */
#include "base/absscan.h"

#include <math.h>

#include "base/base.h"
#include "base/parloop.h"

#define SCAN_CHUNK 4096 /* rows per job: a column's piece (32 KiB) stays in cache for its
                           * second pass, rowsum's piece for the next column */

typedef struct {
  const double *A;
  int64_t m, n, lda, top;
  double *rowsum;
  double mx[OOC_PAR_MAX_THREADS];
} scan_t;

/* max(m, |col[i]|) over [0, len) (ooc_absmax), then rowsum[i] += |col[i]| when rowsum is given:
 * a second pass over a piece of at most SCAN_CHUNK rows, still in cache from the first. */
static double colscan(const double *restrict col, double *restrict rowsum, int64_t len,
                      double m) {
  m = ooc_absmax(col, len, m);
  if (rowsum)
    for (int64_t i = 0; i < len; i++) rowsum[i] += fabs(col[i]);
  return m;
}

/* Rows [i0, i1) of every column: the columns in order, so each row's sum is sequential. */
static void scan_job(void *arg, int64_t k, int worker) {
  scan_t *s = arg;
  int64_t i0 = k * SCAN_CHUNK, i1 = ooc_min64(s->m, i0 + SCAN_CHUNK);
  double m = s->mx[worker];
  for (int64_t j = 0; j < s->n; j++) {
    int64_t e = s->top < 0 ? i1 : ooc_min64(i1, s->top + j + 1);
    if (e > i0)
      m = colscan(s->A + i0 + j * s->lda, s->rowsum ? s->rowsum + i0 : NULL, e - i0, m);
  }
  s->mx[worker] = m;
}

void ooc_absscan(int64_t m, int64_t n, const double *A, int64_t lda, int64_t top, double *mx,
                 double *rowsum) {
  if (m <= 0 || n <= 0) return;
  scan_t s = {.A = A, .m = m, .n = n, .lda = lda, .top = top, .rowsum = rowsum};
  int th = m * n >= ((int64_t)1 << 22) ? ooc_par_cpus(16) : 1;
  ooc_parallel(th, ooc_cdiv64(m, SCAN_CHUNK), scan_job, &s);
  double r = *mx;
  for (int t = 0; t < OOC_PAR_MAX_THREADS; t++) r = s.mx[t] > r ? s.mx[t] : r;
  *mx = r;
}
