/*
 * test_pool.c: the process's thread pool and its loops (base/parloop.h).
 *
 * Every k of a loop runs exactly once, with worker ids below the loop's thread count and no id
 * held by two threads at once, ooc_parallel's caller being worker 0; for many sizes and thread
 * counts. Loops nested in jobs (also in a background loop's jobs), loops called from several OS
 * threads at once, a background loop (ooc_par_start) progressing on pool threads while the caller
 * works and finished by ooc_par_join; threads reused across calls; and, first, the path of a
 * pool that cannot start threads (ooc_par_pool_limit(0), the branch a failing pthread_create
 * takes): everything on the caller. Loops in a fork child. A deadlock fails the suite through alarm().
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/parloop.h"
#include "testutil.h"

/* One loop's record: how often each k ran, on which worker ids, on which threads. */
typedef struct {
  int64_t n;
  int ids;               /* worker ids must be below this */
  atomic_int *count;     /* per k */
  atomic_int held[OOC_PAR_MAX_THREADS];
  atomic_int bad_id, shared_id, caller_not_0, ran_on_caller, ran_elsewhere;
  pthread_t caller;
  int spin; /* busy work per job, so that threads overlap */
  int nest; /* jobs start a loop of their own (depth left) */
} rec_t;

static void rec_init(rec_t *r, int64_t n, int ids, int spin, int nest) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->ids = ids;
  r->count = calloc((size_t)(n > 0 ? n : 1), sizeof *r->count);
  CU_ASSERT_FATAL(r->count != NULL);
  r->caller = pthread_self();
  r->spin = spin;
  r->nest = nest;
}

/* 1 when every k ran once and every id rule held; frees the record. */
static int rec_ok(rec_t *r, int caller_is_0) {
  int ok = 1;
  for (int64_t k = 0; k < r->n; k++)
    if (atomic_load(&r->count[k]) != 1) {
      if (ok) fprintf(stderr, "\n  n %lld: k %lld ran %d times\n", (long long)r->n, (long long)k,
                      atomic_load(&r->count[k]));
      ok = 0;
    }
  if (r->bad_id || r->shared_id || (caller_is_0 && r->caller_not_0)) {
    fprintf(stderr, "\n  n %lld: ids out of range %d, shared %d, caller not 0 %d\n",
            (long long)r->n, r->bad_id, r->shared_id, r->caller_not_0);
    ok = 0;
  }
  free(r->count);
  r->count = NULL;
  return ok;
}

static void job(void *arg, int64_t k, int worker) {
  rec_t *r = arg;
  if (worker < 0 || worker >= r->ids) {
    atomic_fetch_add(&r->bad_id, 1);
    worker = -1;
  }
  if (worker >= 0 && atomic_exchange(&r->held[worker], 1)) atomic_fetch_add(&r->shared_id, 1);
  int self = pthread_equal(pthread_self(), r->caller);
  if (self && worker != 0) atomic_fetch_add(&r->caller_not_0, 1);
  atomic_fetch_add(self ? &r->ran_on_caller : &r->ran_elsewhere, 1);
  volatile double s = 0; /* busy work the compiler keeps */
  for (int i = 0; i < r->spin; i++) s += i * 1e-9;
  if (r->nest > 0) { /* a loop of this job's own, run to the end inside it */
    rec_t in;
    rec_init(&in, 7 + k % 50, 3, r->spin, r->nest - 1);
    ooc_parallel(3, in.n, job, &in);
    if (!rec_ok(&in, 1)) atomic_fetch_add(&r->bad_id, 1000);
  }
  atomic_fetch_add(&r->count[k], 1);
  if (worker >= 0) atomic_store(&r->held[worker], 0);
}

static int expect_ids(int threads, int64_t n) {
  int t = threads < 1 ? 1 : threads > OOC_PAR_MAX_THREADS ? OOC_PAR_MAX_THREADS : threads;
  return n < t ? (int)(n > 0 ? n : 1) : t;
}

/* First (no pool thread exists yet): a pool that can start no thread runs every loop on its
 * caller, and a background loop entirely at the join. */
static void t_no_threads(void) {
  if (ooc_par_pool_threads() != 0) {
    fprintf(stderr, "\n  skipped: the pool already has threads\n");
    return;
  }
  int was = ooc_par_pool_limit(0);
  CU_ASSERT_EQUAL(was, OOC_POOL_MAX_THREADS);
  for (int64_t n = 0; n < 200; n += 37) {
    rec_t r;
    rec_init(&r, n, expect_ids(8, n), 0, 0);
    ooc_parallel(8, n, job, &r);
    CU_ASSERT_EQUAL(r.ran_elsewhere, 0);
    CU_ASSERT(rec_ok(&r, 1));
  }
  rec_t r;
  rec_init(&r, 100, 4, 0, 0);
  ooc_par_group_t g;
  ooc_par_start(&g, 4, 100, job, &r);
  usleep(20000);
  int before = 0;
  for (int k = 0; k < 100; k++) before += atomic_load(&r.count[k]);
  CU_ASSERT_EQUAL(before, 0); /* nobody to run it in the background */
  ooc_par_join(&g);
  CU_ASSERT_EQUAL(r.ran_on_caller, 100);
  CU_ASSERT(rec_ok(&r, 1));
  CU_ASSERT_EQUAL(ooc_par_pool_threads(), 0);
  ooc_par_pool_limit(was);
}

static void t_every_k_once(void) {
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 31, 32, 33, 64, 100, 1000, 100000};
  static const int threads[] = {-1, 0, 1, 2, 3, 4, 8, 31, 32, 33, 100};
  for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
    for (size_t b = 0; b < sizeof threads / sizeof *threads; b++)
      for (int spin = 0; spin <= 2000; spin += 2000) {
        rec_t r;
        int64_t n = sizes[a];
        rec_init(&r, n, expect_ids(threads[b], n), n > 1000 ? 0 : spin, 0);
        ooc_parallel(threads[b], n, job, &r);
        if (!rec_ok(&r, 1)) {
          fprintf(stderr, "  (threads %d, spin %d)\n", threads[b], spin);
          CU_FAIL("ooc_parallel");
        }
      }
  /* one thread: all on the caller, in order */
  rec_t r;
  rec_init(&r, 50, 1, 0, 0);
  ooc_parallel(1, 50, job, &r);
  CU_ASSERT_EQUAL(r.ran_on_caller, 50);
  CU_ASSERT(rec_ok(&r, 1));
}

/* Jobs that run loops of their own, three deep, from ooc_parallel and from a background loop. */
static void t_nested(void) {
  for (int rep = 0; rep < 5; rep++) {
    rec_t r;
    rec_init(&r, 40, 4, 500, 2);
    ooc_parallel(4, 40, job, &r);
    CU_ASSERT(rec_ok(&r, 1));
    rec_init(&r, 40, 4, 500, 2);
    ooc_par_group_t g;
    ooc_par_start(&g, 4, 40, job, &r);
    rec_t mine; /* the caller meanwhile runs a nested loop of its own */
    rec_init(&mine, 30, 3, 500, 1);
    ooc_parallel(3, 30, job, &mine);
    CU_ASSERT(rec_ok(&mine, 1));
    ooc_par_join(&g);
    CU_ASSERT(rec_ok(&r, 0));
  }
}

/* Several OS threads calling loops at once (as the host executor's queue threads and the main
 * thread may), foreground and background. */
typedef struct {
  int seed, failures;
} caller_t;

static void *caller_main(void *p) {
  caller_t *c = p;
  unsigned s = (unsigned)c->seed;
  for (int it = 0; it < 150; it++) {
    s = s * 1103515245u + 12345u;
    int64_t n = (s >> 8) % 300;
    int t = 1 + (int)((s >> 20) % 6);
    rec_t r;
    rec_init(&r, n, expect_ids(t, n), (int)((s >> 4) % 3) * 300, it % 10 == 0);
    if (it % 3 == 0) {
      ooc_par_group_t g;
      ooc_par_start(&g, t, n, job, &r);
      ooc_par_join(&g);
      c->failures += !rec_ok(&r, 0);
    } else {
      ooc_parallel(t, n, job, &r);
      c->failures += !rec_ok(&r, 1);
    }
  }
  return NULL;
}

static void t_concurrent(void) {
  enum { NC = 8 };
  pthread_t th[NC];
  caller_t c[NC];
  for (int i = 0; i < NC; i++) {
    c[i] = (caller_t){.seed = 17 + i};
    CU_ASSERT_FATAL(pthread_create(&th[i], NULL, caller_main, &c[i]) == 0);
  }
  for (int i = 0; i < NC; i++) {
    pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(c[i].failures, 0);
  }
  CU_ASSERT(ooc_par_pool_threads() <= OOC_POOL_MAX_THREADS);
}

/* A background loop progresses on pool threads while the caller works; the join finishes it. */
/* ooc_task_start / ooc_task_wait: one call, once per start, a start while it runs does nothing,
 * a wait with none running returns at once. (Where no pool thread is free the wait runs it:
 * ooc_par_join's rule, t_no_threads.) */
typedef struct {
  atomic_int calls;
  atomic_int go;
} task_rec_t;

static void task_fn(void *arg) {
  task_rec_t *t = arg;
  while (!atomic_load(&t->go)) usleep(100); /* still running when the second start comes */
  atomic_fetch_add(&t->calls, 1);
}

static void t_task(void) {
  task_rec_t t = {0};
  ooc_task_t task = {0};
  ooc_task_wait(&task); /* none running */
  ooc_task_start(&task, task_fn, &t);
  ooc_task_start(&task, task_fn, &t); /* still running: nothing more */
  CU_ASSERT(task.running);
  atomic_store(&t.go, 1);
  ooc_task_wait(&task);
  ooc_task_wait(&task);
  CU_ASSERT_EQUAL(atomic_load(&t.calls), 1);
  CU_ASSERT(!task.running);
  ooc_task_start(&task, task_fn, &t); /* again after the wait */
  ooc_task_wait(&task);
  CU_ASSERT_EQUAL(atomic_load(&t.calls), 2);
}

static void t_background(void) {
  rec_t r;
  rec_init(&r, 2000, 3, 2000, 0);
  ooc_par_group_t g;
  ooc_par_start(&g, 3, 2000, job, &r);
  int seen = 0;
  for (int w = 0; w < 2000 && !seen; w++) { /* up to 2 s for a pool thread to take a job */
    for (int k = 0; k < 2000 && !seen; k++) seen = atomic_load(&r.count[k]) != 0;
    if (!seen) usleep(1000);
  }
  CU_ASSERT(seen);
  CU_ASSERT_EQUAL(r.ran_on_caller, 0); /* nothing on the caller before the join */
  ooc_par_join(&g);
  CU_ASSERT(r.ran_elsewhere > 0);
  CU_ASSERT(rec_ok(&r, 0));
  /* an empty background loop, and one joined at once */
  rec_init(&r, 0, 1, 0, 0);
  ooc_par_start(&g, 4, 0, job, &r);
  ooc_par_join(&g);
  CU_ASSERT(rec_ok(&r, 0));
  rec_init(&r, 10, 1, 0, 0);
  ooc_par_start(&g, 1, 10, job, &r);
  ooc_par_join(&g);
  CU_ASSERT(rec_ok(&r, 0));
}

/* A background loop joined at once (the tile cache's copies: batch_start, then batch_finish
 * right away) is still shared: pool threads that wake after the join began take jobs beside
 * the joining caller. Found on a 16-core GPU host, where the join withdrew the loop before the
 * woken threads looked, and every copy ran on the caller alone (7 GB/s with 16 threads against
 * 58 before the pool). Jobs of ~0.2 ms of busy work, so a thread that wakes in tens of
 * microseconds finds plenty left. */
static void t_join_at_once(void) {
  int shared = 0;
  for (int it = 0; it < 5; it++) {
    rec_t r;
    rec_init(&r, 400, 4, 200000, 0);
    ooc_par_group_t g;
    ooc_par_start(&g, 4, 400, job, &r);
    ooc_par_join(&g);
    shared += atomic_load(&r.ran_elsewhere) >= 400 / 8;
    CU_ASSERT(rec_ok(&r, 0));
  }
  CU_ASSERT(shared >= 4); /* pool threads took an eighth of the jobs or more, nearly always */
}

/* The threads persist: sequential loops from one thread reuse them instead of adding more. */
static void helper_tid(void *arg, int64_t k, int worker) {
  (void)k;
  pthread_t *seen = arg;
  volatile double s = 0;
  for (int i = 0; i < 20000; i++) s += i * 1e-9;
  seen[worker] = pthread_self();
}

static void t_reuse(void) {
  pthread_t seen[4];
  ooc_parallel(4, 64, helper_tid, seen);
  int before = ooc_par_pool_threads();
  CU_ASSERT(before >= 1);
  for (int it = 0; it < 300; it++) ooc_parallel(4, 64, helper_tid, seen);
  CU_ASSERT_EQUAL(ooc_par_pool_threads(), before);
}

/* A fork child (the pool's threads stay behind in the parent) runs loops, starting threads of its
 * own. _exit: the child must not run the parent's exit handlers (tu_tmpdir's removal). */
static void t_fork(void) {
  rec_t r;
  rec_init(&r, 100, 4, 100, 0);
  ooc_parallel(4, 100, job, &r); /* the parent's pool has threads now */
  CU_ASSERT(rec_ok(&r, 1));
  fflush(NULL);
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    int ok = ooc_par_pool_threads() == 0;
    for (int it = 0; it < 20 && ok; it++) {
      rec_init(&r, 200, 4, 1000, it % 5 == 0);
      ooc_parallel(4, 200, job, &r);
      ok = rec_ok(&r, 1);
      ooc_par_group_t g;
      rec_init(&r, 50, 2, 1000, 0);
      ooc_par_start(&g, 2, 50, job, &r);
      ooc_par_join(&g);
      ok = ok && rec_ok(&r, 0);
    }
    _exit(ok && ooc_par_pool_threads() >= 1 ? 0 : 1);
  }
  int status = 0;
  CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
  alarm(600); /* a deadlock fails the suite instead of waiting for ctest's timeout */
  static const tu_test_t tests[] = {{"a pool that cannot start threads", t_no_threads},
                                    {"every k exactly once", t_every_k_once},
                                    {"nested loops", t_nested},
                                    {"loops from several threads at once", t_concurrent},
                                    {"a background loop", t_background},
                                    {"one background call (ooc_task)", t_task},
                                    {"a background loop joined at once is shared", t_join_at_once},
                                    {"threads are reused", t_reuse},
                                    {"loops in a fork child", t_fork},
                                    {NULL, NULL}};
  return tu_run("pool", tests);
}
