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

ooc_status_t ring_run(ring_t *r, int64_t nitems, const ring_ops_t *ops, void *user) {
  ooc_exec_t *ex = r->ex;
  int K = r->K;
  ooc_status_t st = OOC_OK;
  for (int64_t q = 0; q < nitems + K && st == OOC_OK; q++) {
    if (q >= K && q - K < nitems) { /* retire item q-K */
      int s = (int)((q - K) % K);
      double t0 = ooc_now();
      st = ex_sync(ex, r->ev[s]);
      double t1 = ooc_now();
      r->stats.t_wait += t1 - t0;
      if (st == OOC_OK && ops->put) {
        st = ops->put(user, q - K, r->slot[s], r->ld);
        r->stats.t_put += ooc_now() - t1;
      }
      if (st == OOC_OK) r->stats.items++;
    }
    if (st == OOC_OK && q < nitems) { /* start item q */
      int s = (int)(q % K), last = 0;
      if (ops->take) {
        double t0 = ooc_now();
        st = ops->take(user, q, r->slot[s], r->ld);
        r->stats.t_take += ooc_now() - t0;
      }
      if (st == OOC_OK) st = ops->work(user, q, s, r->slot[s], r->ld, &last);
      if (st == OOC_OK) st = ex_record(ex, last, r->ev[s]);
    }
  }
  if (st != OOC_OK) (void)ex_finish(ex); /* nothing may still use a slot when we return */
  return st;
}
