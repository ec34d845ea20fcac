/*
 * classify.h: the "matrix type identification" pre-pass of --method auto (and the symmetry test
 * of --method chol), run while the input is read, one tile column at a time, so that a Cholesky
 * job never needs the upper triangle in memory (job.c's load keeps only the lower tiles).
 *
 * Verdict: symmetric to a relative tolerance (1e-12, 1e-5 for float32 data) and a positive
 * diagonal. The first differing pair is the first in the order the input is read: by column of
 * the upper element A[r, c] (r < c), then by row; *why names it as "A[c, r] = x but A[r, c] = y".
 *
 * Contract of cl_column (called for tile columns tj = 0, 1, ... in order; any may be skipped once
 * the verdict is known):
 * - X: tile column tj's rows [0, start(tj) + bj), column-major with leading dimension ldx (its
 *   tiles above the diagonal and the diagonal tile, as read from the input);
 * - U: tile row tj's tiles (tj, 0) .. (tj, tj), bj rows, leading dimension bj (the lower tiles
 *   already stored, and the diagonal tile again);
 * - compares X[r, c] with U[c, r] on threads (bands of 512 columns of a tile in 64 x 64 blocks:
 *   one thread took 46 s of a 104 s run at n = 65536, a job per tile 3.5 s of a 65536 float32
 *   load), and the diagonal's signs.
 */
#ifndef OOC_CLASSIFY_H
#define OOC_CLASSIFY_H

#include "tiling/tstore.h"

typedef struct cl_verdict {
  double tol;
  int symmetric, posdiag; /* 1 until shown otherwise */
  char why[256];          /* the first differing pair, when !symmetric */
} cl_verdict_t;

void cl_init(cl_verdict_t *v, int f32);
/* flags: scratch of cl_flags_bytes(p) bytes. */
int64_t cl_flags_bytes(part_t p);
void cl_column(cl_verdict_t *v, part_t p, int64_t tj, const double *X, int64_t ldx,
               const double *U, uint8_t *flags);

#endif
