/*
 * ring.h: the one ring (issue 18). Streams items (tile columns, tile rows, blocks: whatever a
 * method moves) through K host staging slots of an executor, so that the caller's thread moves
 * item q between the tile store and slot q % K while the device works on items q-K+1 .. q-1.
 *
 *   for q = 0 .. nitems + K - 1:
 *     retire item q-K (when q >= K): wait for its slot's event, then put(q-K, slot)
 *     start item q (when q < nitems):  take(q, slot), then work(q, slot): the method enqueues
 *       what it does with the slot (ex_put of the slot, operations, ex_get back into it) and says
 *       on which queue the slot's last use is; the ring records the slot's event there
 * so a slot is refilled only after everything that reads or writes it has run. Items retire in
 * order, so the puts are spread through the run (one per started item) instead of bunched at
 * the end, and `put` is where a method reports progress.
 *
 * take may be NULL (the slot is only an output: work fills it); put may be NULL (read-only
 * streaming, e.g. a left-looking method's earlier columns). On a failure of any callback or of
 * the executor the ring waits for the executor (ex_finish: nothing still uses a slot), and returns
 * the first failure; the items retired before it are put, the others are not.
 *
 * Memory: K slots of ld x cols doubles from ex_host_alloc (pinned on CUDA), and K events.
 *
 * Several devices (issue 26): ring_run_multi drives R rings, one per executor (device), from the
 * one caller thread. Item q goes to ring q % R (round robin: with devices of one speed each gets
 * the same share, and the items of a sweep stay in the method's order on every device); within
 * its ring it takes the slot the single ring would give the ring's own item sequence,
 * (q / R) % K. The loop is the single ring's over R x K virtual slots: starting item q first
 * retires item q - R K (the same ring and slot), so every device has up to K - 1 items queued
 * while the host moves one, and items still retire (are put) in order. `work` receives
 * s = r + R * slot: s % R is the ring (the device, the index into the method's executors) and
 * s / R the slot within it; with R = 1 this is ring_run exactly. On a failure every ring's
 * executor is finished before returning.
 */
#ifndef OOC_RING_H
#define OOC_RING_H

#include "exec/exec.h"

#define RING_MAX_SLOTS 8

typedef struct ring_ops {
  ooc_status_t (*take)(void *user, int64_t q, double *slot, int64_t ld);
  ooc_status_t (*work)(void *user, int64_t q, int s, double *slot, int64_t ld, int *last_queue);
  ooc_status_t (*put)(void *user, int64_t q, double *slot, int64_t ld);
} ring_ops_t;

typedef struct ring_stats {
  double t_take, t_put, t_wait; /* seconds on the caller's thread */
  int64_t items;
} ring_stats_t;

typedef struct ring {
  ooc_exec_t *ex;
  int K;
  int64_t ld, cols;
  double *slot[RING_MAX_SLOTS];
  ex_event_t *ev[RING_MAX_SLOTS];
  ring_stats_t stats;
} ring_t;

/* Host bytes ring_create allocates (staging slots and bookkeeping). */
int64_t ring_host_bytes(int K, int64_t ld, int64_t cols);

/* K in [1, RING_MAX_SLOTS] slots of ld x cols. */
ooc_status_t ring_create(ooc_exec_t *ex, int K, int64_t ld, int64_t cols, ring_t **out);

ooc_status_t ring_run(ring_t *r, int64_t nitems, const ring_ops_t *ops, void *user);

/* Items round robin over nr rings (above); the rings may belong to different executors and
 * have different K and ld (each slot is handed with its own ring's ld). Stats go to each ring. */
ooc_status_t ring_run_multi(ring_t *const *r, int nr, int64_t nitems, const ring_ops_t *ops,
                            void *user);

/* Waits for the executor (ex_finish) and frees the slots. NULL is fine. */
void ring_destroy(ring_t *r);

#endif
