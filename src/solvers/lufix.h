/*
 * lufix.h: LU's last row swaps of the stored columns, in the background (issue 22).
 *
 * Why: the factor leaves each tile column j of A in the row order of ipiv[0, done[j]) (lu.h:
 * later steps' swaps are taken lazily), and LAPACK's layout needs ipiv[0, n). Applied on the
 * host after the device's last operation, those swaps took 0.27-0.32 s of a 1.75 s factor at
 * n = 40000 on an H200 host, with the device idle. A fixer applies them while the last step's
 * panel runs: as each chunk's pivots reach the host, a round of swaps starts on the pool over
 * every column it holds, and the caller, who feeds the device, never waits for a round but at
 * the end, when only the last chunk's swaps (and any round still running) are left.
 *
 * Contract (one caller thread; f's rounds run on the pool, parloop.h)
 * - lufix_create(ctx, A, trace, &f): a fixer for store A, holding nothing; trace (may be NULL):
 *   the executor whose trace shows each round as a host span ("lu swaps (background)").
 * - lufix_add(f, tj, from, &ok): tile column tj joins; its rows are in the order of
 *   ipiv[0, from) (from a multiple of the tile, or n). Its tiles [from / b, nt) are lent for
 *   update (tstore.h TS_LEND_UPDATE): nothing evicts, moves or reads them until lufix_end, so
 *   the rounds may swap them on other threads. ok = 0 when they cannot be lent (a tile not
 *   cached, the cache's lend cap): nothing changes and the caller swaps the column itself.
 *   from >= n: nothing to do, ok = 1. A column joins once.
 * - lufix_advance(f, ipiv, known, wait): ipiv[0, known) is final; every column takes
 *   ipiv[from_j, known) (global 0-based, ipiv[k] in [k, n)). wait = 0: a round starts in the
 *   background unless one is still running (then nothing: the next call takes these swaps
 *   too); the lists are built here, so ipiv may change beyond known meanwhile. wait = 1: the
 *   running round is joined and the rest is swapped before the call returns, on the caller and
 *   the pool. A pivot outside [k, n): OOC_ERR_INTERNAL (nothing of this call is swapped).
 * - lufix_end(f, done): joins a running round and gives every column back (cached, dirty, most
 *   recently used); done (may be NULL) gets done[tj] = the swaps applied, ipiv[0, done[tj]), for
 *   each column that joined. Frees f; NULL does nothing. Call it before anything else uses the
 *   columns, on error paths too.
 * - lufix_time(f): seconds the rounds ran (the first start to the last end of each round, summed).
 * Swaps are exact (the bits move, nothing is computed): the result is the same bits as
 * ts_swap_rows' in any order of rounds.
 */
#ifndef OOC_LUFIX_H
#define OOC_LUFIX_H

#include "exec/exec.h"
#include "tiling/tstore.h"

typedef struct lufix lufix_t;

ooc_status_t lufix_create(ooc_ctx_t *ctx, tstore_t *A, ooc_exec_t *trace, lufix_t **out);
ooc_status_t lufix_add(lufix_t *f, int64_t tj, int64_t from, int *ok);
ooc_status_t lufix_advance(lufix_t *f, const int64_t *ipiv, int64_t known, int wait);
void lufix_end(lufix_t *f, int64_t *done);
double lufix_time(const lufix_t *f);

#endif
