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

/* Item q's ring: owner[q], or round robin. */
static int owner_of(const uint8_t *owner, int nr, int64_t q) {
  return owner ? owner[q] : (int)(q % nr);
}

ooc_status_t ring_run_multi(ring_t *const *r, int nr, int64_t nitems, const ring_ops_t *ops,
                            void *user) {
  return ring_run_owned(r, nr, nitems, NULL, ops, user);
}

/* Items start in order, each in the next slot of its own ring; before a slot is refilled, every
 * item up to the one that holds it retires (in order), and at the end the rest: with round robin
 * over rings of one K that is ring.h's "item q - R K retires when item q starts". */
ooc_status_t ring_run_owned(ring_t *const *r, int nr, int64_t nitems, const uint8_t *owner,
                            const ring_ops_t *ops, void *user) {
  if (nr < 1 || nr > EX_MAX_DEVICES) return OOC_ERR_INTERNAL;
  int64_t started[EX_MAX_DEVICES] = {0}, retired[EX_MAX_DEVICES] = {0}, next = 0;
  ooc_status_t st = OOC_OK;
  for (int64_t q = 0; q <= nitems && st == OOC_OK; q++) {
    int ring = q < nitems ? owner_of(owner, nr, q) : 0;
    if (q < nitems && (ring < 0 || ring >= nr)) {
      st = OOC_ERR_INTERNAL;
      break;
    }
    /* the items to retire first: up to the one in this item's slot, or all at the end */
    while (st == OOC_OK && next < q &&
           (q == nitems || retired[ring] <= started[ring] - r[ring]->K)) {
      int rr = owner_of(owner, nr, next), s = (int)(retired[rr] % r[rr]->K);
      ring_t *ri = r[rr];
      double t0 = ooc_now();
      st = ex_sync(ri->ex, ri->ev[s]);
      double t1 = ooc_now();
      ri->stats.t_wait += t1 - t0;
      if (st == OOC_OK && ops->put) {
        st = ops->put(user, next, ri->slot[s], ri->ld);
        ri->stats.t_put += ooc_now() - t1;
      }
      if (st == OOC_OK) {
        ri->stats.items++;
        retired[rr]++;
        next++;
      }
    }
    if (st == OOC_OK && q < nitems) { /* start item q */
      ring_t *ri = r[ring];
      int s = (int)(started[ring] % ri->K), last = 0;
      if (ops->take) {
        double t0 = ooc_now();
        st = ops->take(user, q, ri->slot[s], ri->ld);
        ri->stats.t_take += ooc_now() - t0;
      }
      if (st == OOC_OK) st = ops->work(user, q, ring + nr * s, ri->slot[s], ri->ld, &last);
      if (st == OOC_OK) st = ex_record(ri->ex, last, ri->ev[s]);
      started[ring]++;
    }
  }
  if (st != OOC_OK) /* nothing may still use a slot when we return */
    for (int i = 0; i < nr; i++) (void)ex_finish(r[i]->ex);
  return st;
}
