/*
 * xdirect.h: direct moves (issue 22), shared by lu.c, gj_x.c and chol.c. A ring item (a tile
 * column, or part of one) whose tiles are all in the tile cache need not be gathered into the
 * ring's pinned slot and scattered back: the cache lends the tiles' buffers in place
 * (tstore.h ts_lend) and each tile moves to or from its rows of the device column by one DMA
 * (ex_put / ex_get with the tile's own leading dimension), so each byte crosses host memory
 * once where the slot path moves it three times (lu.h "Direct moves" has the measurements).
 *
 * - xlend_t: one lent range, tiles [t0, t1) of tile column tj of store S (t1 == t0: nothing
 *   lent). A method keeps one or more per ring slot (chol's sweep items are two ranges: the
 *   rows above and below the stripe) and sizes `tile` for the store's tile rows (xl_alloc).
 * - xl_lend: ranges lent all or nothing (a range that cannot be lent gives back the ones lent
 *   before it, as they were, except that an update lend has already marked them dirty: at worst
 *   a clean tile is written to scratch once more): *ok = 0 and nothing lent means the item goes
 *   through the slot as before. Empty ranges (t0 >= t1) are skipped. mode: tstore.h's
 *   TS_LEND_READ / WRITE / UPDATE.
 * - xl_move: the lent tiles to (get = 0) or from (get = 1) the device column whose row 0 is at
 *   dev (leading dimension ldd), tile by tile on queue q of ex.
 * - xl_return: the ranges back to their stores (forget: as taken), and marked empty; ranges
 *   already empty are left alone, so a run's cleanup may return every slot's.
 * - xpin_t: the tile caches of A and B (B may be NULL or share A's) pin what they lend through
 *   the executor (exset.h ex_pin_cb) from xpin_on to xpin_off. A cache that already has a
 *   pinner (the job pinned it while loading it, tstore.h tcache_pin_new) keeps it and what it
 *   pinned: whoever set it unsets it. With several devices the first device's executor pins
 *   for all (the CUDA executor registers memory as portable: every device's DMA may use it).
 *   xpin_off adds the bytes pinned and the refusals to *pinned and *refused first. Both do
 *   nothing where the executor cannot register (ex_can_register: the host executors that are
 *   not strict).
 */
#ifndef OOC_XDIRECT_H
#define OOC_XDIRECT_H

#include "exec/exec.h"
#include "tiling/tstore.h"

typedef struct xlend {
  tstore_t *S;
  int64_t tj, t0, t1;
  double **tile; /* tile t0 + i's buffer (ld = its rows) */
} xlend_t;

ooc_status_t xl_alloc(ooc_ctx_t *ctx, xlend_t *d, int n, int64_t ntiles);
void xl_free(ooc_ctx_t *ctx, xlend_t *d, int n);
static inline int xl_lent(const xlend_t *d) { return d->t1 > d->t0; }
/* Whether any of the n ranges is lent. */
int xl_any(const xlend_t *d, int n);
/* Ranges [t0[i], t1[i]) of tile column tj for i < n into d[0 .. n); *bytes (may be NULL): the
 * bytes lent. */
ooc_status_t xl_lend(xlend_t *d, int n, tstore_t *S, int64_t tj, const int64_t *t0,
                     const int64_t *t1, int mode, int *ok, int64_t *bytes);
ooc_status_t xl_move(const xlend_t *d, int n, ooc_exec_t *ex, int q, double *dev, int64_t ldd,
                     int get);
void xl_return(xlend_t *d, int n, int forget);

typedef struct xpin {
  ooc_exec_t *ex; /* NULL: nothing set */
  tcache_t *c[2];
  int own[2];     /* xpin_on set the pinner of c[i] (and xpin_off unsets it) */
} xpin_t;

void xpin_on(xpin_t *p, ooc_exec_t *ex, tstore_t *A, tstore_t *B);
void xpin_off(xpin_t *p, int64_t *pinned, int64_t *refused);

#endif
