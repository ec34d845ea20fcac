/*
 * xpanel.h: the pieces of a stripe's panel LU on an executor, shared by the methods that factor a
 * resident stripe by chunks as it arrives: LU (lu.c, rows [k0, n) of its stripe after the earlier
 * columns' updates) and Gauss-Jordan (gj_x.c, rows [k0, n) of its stripe).
 *
 * P is an n x w device buffer (leading dimension ldp >= n) holding the matrix's columns
 * [k0, k0 + w), every row at its global offset. A chunk is a range of whole columns [a, a1), in
 * global column numbers; chunk [a, a1) of the panel is factored on rows [a, n) (the rows above
 * it belong to the chunks left of it, or to rows the method never pivots: rows < k0). Pivots are
 * global, 0-based (ipiv[i] is the row swapped with row i): LAPACK's getrf's, relative to row a,
 * plus a.
 *
 * A left-looking factorization inside the stripe is, for each chunk in turn: xpanel_update from
 * every chunk left of it (factored, its pivots in ipiv on the host), then xpanel_getrf; a
 * right-looking one updates the chunks right of a factored one with the same three operations.
 * Either way the columns of a chunk lack the swaps of the chunks factored after it until the
 * method applies them (LU lazily, gj at the end of its panel).
 */
#ifndef OOC_XPANEL_H
#define OOC_XPANEL_H

#include "exec/exec.h"

/* Chunk [d0, d1) (factored; its pivots in ipiv[d0, d1)) applied to columns [a, a1) on queue q:
 * its row swaps (none when ipiv is NULL: no pivoting), then L_dd^-1 on rows [d0, d1) (trsm, unit
 * lower) and ONE gemm over every row below d1. */
ooc_status_t xpanel_update(ooc_exec_t *ex, int q, double *P, int64_t n, int64_t ldp, int64_t k0,
                           const int64_t *ipiv, int64_t d0, int64_t d1, int64_t a, int64_t a1);

/* The panel call: getrf of chunk [a, a + wc), rows [a, n) (ex_getrf: LAPACK's argmax pivots,
 * local to row a, into loc[0, wc); loc NULL: no pivoting), its info into *bad, and U's diagonal
 * to the host (diag[0, wc)), all on queue q; ev is recorded after them. loc, *bad and diag are
 * valid once the caller has synced ev. */
ooc_status_t xpanel_getrf(ooc_exec_t *ex, int q, double *P, int64_t n, int64_t ldp, int64_t k0,
                          int64_t a, int64_t wc, int64_t *loc, int64_t *bad, double *diag,
                          ex_event_t *ev);

#endif
