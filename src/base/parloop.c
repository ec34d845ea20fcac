/* parloop.c: the pool and its loops (parloop.h).
 *
 * A loop (ooc_par_group_t, on its owner's stack) is queued while it has worker ids left; a free
 * pool thread takes the oldest queued loop's next id, works on it until its jobs run out and
 * goes back to sleep. The owner (ooc_parallel's caller, or ooc_par_join's) works on it itself
 * while it is still queued (threads that wake late still take ids: a join right after the start
 * must not leave the jobs to the owner alone), then withdraws it from the queue and waits only
 * for the pool threads that took an id.
 *
 * Why this cannot deadlock, whatever threads call loops at once and however jobs nest:
 * - No thread ever waits for a free pool thread: a loop with no helper is run by its owner
 *   alone, and a loop withdrawn from the queue is never joined by anyone else.
 * - An owner waits only for pool threads that took an id of its loop. Such a thread is running
 *   that loop's jobs (claiming k until n is reached); it may wait in turn only as the owner of a
 *   loop started inside one of those jobs, for pool threads in that loop.
 * - A pool thread takes an id only while it is free, at the bottom of its stack: it is in at
 *   most one loop as a helper, and never while it waits as an owner. So if owner A waits for
 *   helper B, B took its id of A's loop after A queued it, which is after A took the id of the
 *   loop A itself helps (if A is a pool thread). Along a chain of waits these moments strictly
 *   increase, so the chain never closes into a cycle; its last thread waits for nothing and
 *   finishes its jobs, and the chain unwinds.
 * - The pool's lock is never held while a job runs.
 *
 * Lifetime (parloop.h): the destructor stops the pool and joins the threads that are free (at
 * exit, or when the object holding this code is unloaded). A thread still inside a job then
 * (exit called while a loop runs elsewhere) is detached instead of waited for; it leaves when
 * its loop's jobs are done, and process exit ends it anyway. Loops started after the stop run
 * on their owners. */
#include "base/parloop.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

static struct {
  pthread_mutex_t mu;
  pthread_cond_t work;          /* a loop was queued, or the pool stops */
  ooc_par_group_t *head, *tail; /* loops with free ids, oldest first */
  int want;                     /* free ids over the queued loops */
  int free;                     /* pool threads in no loop (asleep, or about to look) */
  int nth, limit, stop;
  pthread_t th[OOC_POOL_MAX_THREADS];
  int busy[OOC_POOL_MAX_THREADS]; /* thread i is in a loop */
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
       .limit = OOC_POOL_MAX_THREADS};

static void run(ooc_par_group_t *g, int worker) {
  for (;;) {
    int64_t k = atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed);
    if (k >= g->n) return;
    g->fn(g->arg, k, worker);
  }
}

/* Under P.mu: g out of the queue; its ids not handed out are no longer wanted. */
static void unqueue(ooc_par_group_t *g) {
  if (!g->queued) return;
  if (g->prev) g->prev->succ = g->succ;
  else P.head = g->succ;
  if (g->succ) g->succ->prev = g->prev;
  else P.tail = g->prev;
  P.want -= g->ids - g->taken;
  g->queued = 0;
}

static void *worker_main(void *arg) {
  int me = (int)(intptr_t)arg;
  pthread_mutex_lock(&P.mu);
  for (;;) {
    while (!P.stop && !P.head) pthread_cond_wait(&P.work, &P.mu);
    if (P.stop) break;
    ooc_par_group_t *g = P.head;
    int id = g->taken++;
    P.want--;
    if (g->taken == g->ids) unqueue(g);
    g->busy++;
    P.free--;
    P.busy[me] = 1;
    pthread_mutex_unlock(&P.mu);
    run(g, id);
    pthread_mutex_lock(&P.mu);
    P.busy[me] = 0;
    P.free++;
    /* under the lock: the owner cannot see busy == 0 and free g before this signal is done */
    if (--g->busy == 0) pthread_cond_signal(&g->done);
  }
  P.free--;
  pthread_mutex_unlock(&P.mu);
  return NULL;
}

/* A fork child has none of the parent's threads (only the forking one): it starts afresh. The
 * lock is taken across fork so that the child's copy is not held by a thread it lacks. */
static void fork_prepare(void) { pthread_mutex_lock(&P.mu); }
static void fork_parent(void) { pthread_mutex_unlock(&P.mu); }
static void fork_child(void) {
  P.head = P.tail = NULL;
  P.want = P.free = P.nth = 0;
  memset(P.busy, 0, sizeof P.busy);
  pthread_cond_init(&P.work, NULL);
  pthread_mutex_unlock(&P.mu);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void atfork_register(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Under P.mu: one more pool thread; 0 when none may or can start (the loops then have fewer
 * helpers, never an error). */
static int grow(void) {
  if (P.stop || P.nth >= P.limit) return 0;
  pthread_once(&atfork_once, atfork_register);
  if (pthread_create(&P.th[P.nth], NULL, worker_main, (void *)(intptr_t)P.nth) != 0) return 0;
  P.nth++;
  P.free++;
  return 1;
}

/* Under P.mu: g in the queue, a free thread woken for each of its free ids, threads started
 * while free ids outnumber free threads. */
static void publish(ooc_par_group_t *g) {
  int h = g->ids - g->taken;
  if (h <= 0) return;
  g->queued = 1;
  g->prev = P.tail;
  g->succ = NULL;
  if (P.tail) P.tail->succ = g;
  else P.head = g;
  P.tail = g;
  P.want += h;
  for (int i = 0; i < h; i++) pthread_cond_signal(&P.work);
  while (P.free < P.want && grow()) {
  }
}

static int clamp_threads(int threads, int64_t n) {
  int t = threads < 1 ? 1 : threads > OOC_PAR_MAX_THREADS ? OOC_PAR_MAX_THREADS : threads;
  return t > n ? (int)n : t;
}

static void init(ooc_par_group_t *g, int ids, int64_t n, ooc_par_fn fn, void *arg) {
  g->fn = fn;
  g->arg = arg;
  g->n = n;
  atomic_init(&g->next, 0);
  g->ids = ids;
  g->taken = g->busy = g->queued = 0;
  g->prev = g->succ = NULL;
  pthread_cond_init(&g->done, NULL);
}

/* The owner's end: help (join) with an id of its own while the loop stays queued, so that pool
 * threads still waking take the other ids and share the jobs (a join right after the start is
 * the tile cache's usual case); once every job is claimed, no more helpers, and wait for those
 * in the loop. */
static void finish(ooc_par_group_t *g, int help) {
  int id = -1;
  pthread_mutex_lock(&P.mu);
  if (help && g->taken < g->ids) {
    id = g->taken++;
    if (g->queued) {
      P.want--;
      if (g->taken == g->ids) unqueue(g);
    }
  }
  pthread_mutex_unlock(&P.mu);
  if (id >= 0) run(g, id);
  pthread_mutex_lock(&P.mu);
  unqueue(g);
  while (g->busy > 0) pthread_cond_wait(&g->done, &P.mu);
  pthread_mutex_unlock(&P.mu);
  pthread_cond_destroy(&g->done);
}

void ooc_parallel(int threads, int64_t n, ooc_par_fn fn, void *arg) {
  if (n <= 0) return;
  int t = clamp_threads(threads, n);
  if (t == 1) {
    for (int64_t k = 0; k < n; k++) fn(arg, k, 0);
    return;
  }
  ooc_par_group_t g;
  init(&g, t, n, fn, arg);
  g.taken = 1; /* worker 0: the caller */
  pthread_mutex_lock(&P.mu);
  publish(&g);
  pthread_mutex_unlock(&P.mu);
  run(&g, 0);
  finish(&g, 0);
}

void ooc_par_start(ooc_par_group_t *g, int threads, int64_t n, ooc_par_fn fn, void *arg) {
  init(g, n > 0 ? clamp_threads(threads, n) : 0, n > 0 ? n : 0, fn, arg);
  pthread_mutex_lock(&P.mu);
  publish(g);
  pthread_mutex_unlock(&P.mu);
}

void ooc_par_join(ooc_par_group_t *g) { finish(g, 1); }

static void task_job(void *arg, int64_t k, int worker) {
  (void)k;
  (void)worker;
  ooc_task_t *t = arg;
  t->fn(t->arg);
}

void ooc_task_start(ooc_task_t *t, void (*fn)(void *arg), void *arg) {
  if (t->running) return;
  t->fn = fn;
  t->arg = arg;
  t->running = 1;
  ooc_par_start(&t->g, 1, 1, task_job, t);
}

void ooc_task_wait(ooc_task_t *t) {
  if (!t->running) return;
  ooc_par_join(&t->g);
  t->running = 0;
}

int ooc_par_cpus(int cap) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > cap ? cap : (int)n;
}

int ooc_par_pool_threads(void) {
  pthread_mutex_lock(&P.mu);
  int n = P.stop ? 0 : P.nth;
  pthread_mutex_unlock(&P.mu);
  return n;
}

int ooc_par_pool_limit(int max) {
  pthread_mutex_lock(&P.mu);
  int was = P.limit;
  P.limit = max < 0 ? 0 : max > OOC_POOL_MAX_THREADS ? OOC_POOL_MAX_THREADS : max;
  pthread_mutex_unlock(&P.mu);
  return was;
}

__attribute__((destructor)) static void pool_stop(void) {
  int join[OOC_POOL_MAX_THREADS];
  pthread_mutex_lock(&P.mu);
  P.stop = 1;
  pthread_cond_broadcast(&P.work);
  int n = P.nth;
  for (int i = 0; i < n; i++) join[i] = !P.busy[i];
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < n; i++) {
    if (join[i]) pthread_join(P.th[i], NULL);
    else pthread_detach(P.th[i]);
  }
}
