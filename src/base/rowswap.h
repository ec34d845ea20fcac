/*
 * rowswap.h: row interchanges across a column of tiles (LU's swaps of stored columns): a list of
 * interchanges, each with both ends located once, applied to a range of the columns. The tile
 * cache's in-place swaps (tstore.c ts_swap_rows) and LU's background swaps of lent tiles
 * (solvers/lufix.c) build the list from their tiles' buffers and share this loop.
 *
 * Contract
 * - ooc_rowswap_t {a, q, sa, sq}: one interchange, the element of row k in column 0 of its tile
 *   (a) and of row ipiv[k] (q), each with its tile's column stride (sa, sq: the tile's rows);
 *   column c of the tile column is at a + c sa and q + c sq. Only interchanges that move
 *   something (k != ipiv[k]) belong in a list.
 * - ooc_rowswap_cols(sw, nsw, c0, c1): sw[0 .. nsw) in order on columns [c0, c1), one thread.
 *   A row may move twice: a column's sequence must be one thread's, so callers split the
 *   columns, never the list. Several columns per pass over the list (OOC_ROWSWAP_COLS is the
 *   group a caller should give one job) so that the list (32 bytes an interchange) is read once
 *   for them, not once per column.
 * Nothing is allocated; it may run on any thread.
 */
#ifndef OOC_ROWSWAP_H
#define OOC_ROWSWAP_H

#include <stdint.h>

typedef struct ooc_rowswap {
  double *a, *q;
  int64_t sa, sq;
} ooc_rowswap_t;

#define OOC_ROWSWAP_COLS 8

void ooc_rowswap_cols(const ooc_rowswap_t *sw, int64_t nsw, int64_t c0, int64_t c1);

#endif
