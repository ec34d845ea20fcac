/*
 * parloop.h: the process's one pool of worker threads for data-parallel work, and the parallel
 * loops it runs: chunk decoding and packing (src/io), the tile cache's copies (src/tiling), the
 * product's epilogues and the solvers' scans (src/solvers), page touching in the CUDA plugin
 * (through its imports: the plugin links no copy of base, plugin.h). The host executor's queue
 * threads (exec_host.c) are not pool threads: a queue is an in-order stream with its own thread;
 * work inside a queue's operation that runs in parallel calls these loops like any other code.
 * Nothing here calls an allocator or touches a context: it can run on any thread.
 *
 * Contract
 * - ooc_parallel(threads, n, fn, arg): fn(arg, k, worker) for every k in [0, n) exactly once,
 *   on at most t = min(threads, n, OOC_PAR_MAX_THREADS) threads at once including the caller.
 *   The caller is worker 0 and works on the loop itself; pool threads that are free join it as
 *   workers 1 .. t-1; no two threads run with the same worker id at once, so per-worker scratch
 *   indexed by it needs no lock. Jobs are claimed in increasing k, but which worker runs which k
 *   is not fixed: a result must not depend on it (sums per worker would). It returns once every
 *   k has run. No thread free and none can start (or pthread_create fails): fewer workers, down
 *   to the caller alone; never an error.
 * - ooc_par_start(g, threads, n, fn, arg) / ooc_par_join(g): the same loop in the background:
 *   start returns at once and pool threads work on it as workers 0 .. t-1 while the caller does
 *   other work (not touching what the jobs write); join takes a worker id no pool thread took,
 *   if one is left, and runs what is left on the caller, then waits for the pool threads in it.
 *   g lives on the caller's side (its stack) from start to join; join is called exactly once.
 * - May be called from several threads at once, and from inside a job (nesting): see parloop.c
 *   for why no combination deadlocks.
 * - ooc_task_start(t, fn, arg) / ooc_task_wait(t): one call fn(arg) in the background (a loop of
 *   one job: on a pool thread, or on the caller at the wait if none is free), for work that must
 *   not hold the caller (the checks' next read, pinning the tile cache, the output's writeback).
 *   start does nothing while the task still runs; wait returns at once when none runs. t is
 *   zero-initialised by its owner and lives on the caller's side from start to wait.
 * - ooc_par_cpus(cap): the online CPUs, at least 1, at most cap (how callers size their loops).
 *
 * The pool: threads are started lazily, when a loop has a free worker id and no pool thread is
 * free, so the pool holds the peak number of helpers that loops asked for at once (a loop sized
 * by ooc_par_cpus asks for cpus - 1), at most OOC_POOL_MAX_THREADS; idle threads sleep on a
 * condition variable. They live in the library that holds parloop.c (liboocsolve.so, or the
 * program linking the static library) and are joined by its destructor (exit, or dlclose of a
 * module that links the static core): no thread is left running code that is unmapped, and none
 * is reported by the leak checker. A fork child starts with no pool threads and starts its own.
 * - ooc_par_pool_threads(): pool threads started and not stopped (tests, diagnostics).
 * - ooc_par_pool_limit(max): at most max pool threads from now on (threads already started stay);
 *   returns the previous limit. 0 takes the path of a failing pthread_create (tests).
 */
#ifndef OOC_PARLOOP_H
#define OOC_PARLOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define OOC_PAR_MAX_THREADS 32
/* Room for loops running at once (queue threads, a background loop beside a foreground one,
 * nesting) each asking for up to OOC_PAR_MAX_THREADS - 1 helpers. */
#define OOC_POOL_MAX_THREADS (2 * OOC_PAR_MAX_THREADS)

typedef void (*ooc_par_fn)(void *arg, int64_t k, int worker);

/* One loop. Its fields belong to parloop.c (under the pool's lock, except next). */
typedef struct ooc_par_group {
  ooc_par_fn fn;
  void *arg;
  int64_t n;
  atomic_llong next;   /* the next k to claim */
  int ids, taken;      /* worker ids [0, ids), of which [0, taken) are handed out */
  int busy;            /* pool threads working on it */
  int queued;          /* in the pool's list of loops with free ids */
  struct ooc_par_group *prev, *succ;
  pthread_cond_t done; /* busy reached 0 */
} ooc_par_group_t;

/* One background call (ooc_task_start / ooc_task_wait). */
typedef struct ooc_task {
  ooc_par_group_t g;
  void (*fn)(void *arg);
  void *arg;
  int running;
} ooc_task_t;

void ooc_parallel(int threads, int64_t n, ooc_par_fn fn, void *arg);
void ooc_par_start(ooc_par_group_t *g, int threads, int64_t n, ooc_par_fn fn, void *arg);
void ooc_par_join(ooc_par_group_t *g);
void ooc_task_start(ooc_task_t *t, void (*fn)(void *arg), void *arg);
void ooc_task_wait(ooc_task_t *t);
int ooc_par_cpus(int cap);
int ooc_par_pool_threads(void);
int ooc_par_pool_limit(int max);

#endif
