/* parloop.c: see parloop.h. */
#include "base/parloop.h"

#include <unistd.h>

typedef struct ooc_par_lane lane_t;

static void run_lane(ooc_par_loop_t *l, int worker) {
  for (;;) {
    int64_t k = atomic_fetch_add(&l->next, 1);
    if (k >= l->n) return;
    l->fn(l->arg, k, worker);
  }
}

static void *lane_main(void *p) {
  lane_t *ln = p;
  run_lane(ln->loop, ln->worker);
  return NULL;
}

static int clamp_threads(int threads, int64_t n) {
  int t = threads < 1 ? 1 : threads > OOC_PAR_MAX_THREADS ? OOC_PAR_MAX_THREADS : threads;
  return t > n ? (int)n : t;
}

static void init_loop(ooc_par_group_t *g, int64_t n, ooc_par_fn fn, void *arg) {
  g->loop.fn = fn;
  g->loop.arg = arg;
  g->loop.n = n < 0 ? 0 : n;
  atomic_init(&g->loop.next, 0);
}

void ooc_par_start(ooc_par_group_t *g, int threads, int64_t n, ooc_par_fn fn, void *arg) {
  init_loop(g, n, fn, arg);
  g->nth = n > 0 ? clamp_threads(threads, n) : 0;
  for (int k = 0; k < g->nth; k++) {
    g->lanes[k] = (lane_t){&g->loop, k};
    g->started[k] = pthread_create(&g->th[k], NULL, lane_main, &g->lanes[k]) == 0;
  }
}

void ooc_par_join(ooc_par_group_t *g) {
  for (int k = 0; k < g->nth; k++)
    if (g->started[k]) pthread_join(g->th[k], NULL);
  run_lane(&g->loop, 0); /* the share of threads that did not start (all of them are joined) */
  g->nth = 0;
}

void ooc_parallel(int threads, int64_t n, ooc_par_fn fn, void *arg) {
  if (n <= 0) return;
  ooc_par_group_t g;
  init_loop(&g, n, fn, arg);
  g.nth = clamp_threads(threads, n); /* workers 1.. on new threads, worker 0 on the caller */
  for (int k = 1; k < g.nth; k++) {
    g.lanes[k] = (lane_t){&g.loop, k};
    g.started[k] = pthread_create(&g.th[k], NULL, lane_main, &g.lanes[k]) == 0;
  }
  run_lane(&g.loop, 0);
  for (int k = 1; k < g.nth; k++)
    if (g.started[k]) pthread_join(g.th[k], NULL);
}

int ooc_par_cpus(int cap) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > cap ? cap : (int)n;
}
