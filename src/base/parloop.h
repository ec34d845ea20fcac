/*
 * parloop.h: a parallel loop on threads started for the call, for byte work (chunk decoding and
 * packing in src/io, the product's epilogues in src/solvers) that must not depend on a pool's
 * lifetime. It calls no allocator and touches no context: it can run on any thread.
 *
 * Contract
 * - ooc_parallel(threads, n, fn, arg): fn(arg, k, worker) for every k in [0, n), on at most
 *   min(threads, n, OOC_PAR_MAX_THREADS) threads including the caller (worker 0 is the caller;
 *   workers are numbered below that count). Jobs are claimed in increasing k. Threads are started
 *   for the call and joined before it returns; a thread that cannot start leaves its share to
 *   the others, so every k runs exactly once whatever happens.
 * - ooc_par_start / ooc_par_join: the same loop in the background, without the caller:
 *   start returns at once, join waits for it (and runs on the caller whatever no thread could
 *   take). Between the two the caller may do other work, but not touch what the jobs write.
 * - ooc_par_cpus(cap): the online CPUs, at least 1, at most cap.
 */
#ifndef OOC_PARLOOP_H
#define OOC_PARLOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define OOC_PAR_MAX_THREADS 32

typedef void (*ooc_par_fn)(void *arg, int64_t k, int worker);

typedef struct ooc_par_loop {
  ooc_par_fn fn;
  void *arg;
  int64_t n;
  atomic_llong next;
} ooc_par_loop_t;

typedef struct ooc_par_group {
  ooc_par_loop_t loop;
  pthread_t th[OOC_PAR_MAX_THREADS];
  struct ooc_par_lane {
    ooc_par_loop_t *loop;
    int worker;
  } lanes[OOC_PAR_MAX_THREADS];
  int started[OOC_PAR_MAX_THREADS];
  int nth;
} ooc_par_group_t;

void ooc_parallel(int threads, int64_t n, ooc_par_fn fn, void *arg);
void ooc_par_start(ooc_par_group_t *g, int threads, int64_t n, ooc_par_fn fn, void *arg);
void ooc_par_join(ooc_par_group_t *g);
int ooc_par_cpus(int cap);

#endif
