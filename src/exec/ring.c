/* ring.c: the one ring (ring.h). */
#include "exec/ring.h"

#include <string.h>

int64_t ring_host_bytes(int K, int64_t ld, int64_t cols) {
  return (int64_t)sizeof(ring_t) + K * (8 * ld * cols + 128);
}

ooc_status_t ring_create(ooc_exec_t *ex, int K, int64_t ld, int64_t cols, ring_t **out) {
  *out = NULL;
  if (K < 1 || K > RING_MAX_SLOTS)
    return OOC_FAIL(ex->ctx, OOC_ERR_INTERNAL, "ring: %d slots (1 to %d)", K, RING_MAX_SLOTS);
  ring_t *r = ooc_malloc(ex->ctx, sizeof *r);
  if (!r) return OOC_FAIL(ex->ctx, OOC_ERR_NOMEM, "out of host memory for a ring");
  memset(r, 0, sizeof *r);
  r->ex = ex;
  r->K = K;
  r->ld = ld;
  r->cols = cols;
  ooc_status_t st = OOC_OK;
  for (int s = 0; s < K && st == OOC_OK; s++) {
    st = ex_host_alloc(ex, (size_t)(ld * cols) * sizeof(double), &r->slot[s]);
    if (st == OOC_OK) st = ex_event_create(ex, &r->ev[s]);
  }
  if (st != OOC_OK) {
    ring_destroy(r);
    return st;
  }
  *out = r;
  return OOC_OK;
}

void ring_destroy(ring_t *r) {
  if (!r) return;
  (void)ex_finish(r->ex);
  for (int s = 0; s < r->K; s++) {
    ex_host_free(r->ex, r->slot[s]);
    ex_event_destroy(r->ex, r->ev[s]);
  }
  ooc_free(r->ex->ctx, r);
}

/* The single ring is the multi ring over one ring (ring.h). */
ooc_status_t ring_run(ring_t *r, int64_t nitems, const ring_ops_t *ops, void *user) {
  return ring_run_multi(&r, 1, nitems, ops, user);
}

/* Item q's ring and slot (ring.h: round robin over the rings, then the ring's own order). */
static ring_t *item_ring(ring_t *const *r, int nr, int64_t q, int *s) {
  ring_t *ri = r[q % nr];
  *s = (int)((q / nr) % ri->K);
  return ri;
}

ooc_status_t ring_run_multi(ring_t *const *r, int nr, int64_t nitems, const ring_ops_t *ops,
                            void *user) {
  if (nr < 1) return OOC_ERR_INTERNAL;
  /* item q retires when item q + lag starts: the lag is R x K for rings of one K; with rings
   * of different K the smallest bounds it (a slot is never refilled before its item retired) */
  int kmin = r[0]->K;
  for (int i = 1; i < nr; i++) kmin = r[i]->K < kmin ? r[i]->K : kmin;
  int64_t lag = (int64_t)nr * kmin;
  ooc_status_t st = OOC_OK;
  for (int64_t q = 0; q < nitems + lag && st == OOC_OK; q++) {
    if (q >= lag && q - lag < nitems) { /* retire item q - lag */
      int s;
      ring_t *ri = item_ring(r, nr, q - lag, &s);
      double t0 = ooc_now();
      st = ex_sync(ri->ex, ri->ev[s]);
      double t1 = ooc_now();
      ri->stats.t_wait += t1 - t0;
      ex_host_span(ri->ex, "ring wait", t0, t1, 0);
      if (st == OOC_OK && ops->put) {
        st = ops->put(user, q - lag, ri->slot[s], ri->ld);
        double t2 = ooc_now();
        ri->stats.t_put += t2 - t1;
        ex_host_span(ri->ex, "ring put", t1, t2, 0);
      }
      if (st == OOC_OK) ri->stats.items++;
    }
    if (st == OOC_OK && q < nitems) { /* start item q */
      int s, last = 0, ring = (int)(q % nr);
      ring_t *ri = item_ring(r, nr, q, &s);
      if (ops->take) {
        double t0 = ooc_now();
        st = ops->take(user, q, ri->slot[s], ri->ld);
        double t1 = ooc_now();
        ri->stats.t_take += t1 - t0;
        ex_host_span(ri->ex, "ring take", t0, t1, 0);
      }
      double tw = ooc_now();
      if (st == OOC_OK) st = ops->work(user, q, ring + nr * s, ri->slot[s], ri->ld, &last);
      ex_host_span(ri->ex, "ring enqueue", tw, ooc_now(), 0);
      if (st == OOC_OK) st = ex_record(ri->ex, last, ri->ev[s]);
    }
  }
  if (st != OOC_OK) /* nothing may still use a slot when we return */
    for (int i = 0; i < nr; i++) (void)ex_finish(r[i]->ex);
  return st;
}
