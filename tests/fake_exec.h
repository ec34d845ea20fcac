/*
 * fake_exec.h: a host stand-in for the GPU product executor (oocgemm.h's gemm_exec_t seam) that
 * checks the protocol. It is asynchronous like the GPU: a load is taken from cblk[c] only at the
 * block's first panel (or end), and end() leaves cblk[c] filled with NaN until fetch() brings the
 * columns back, so a host that touches cblk[c] at the wrong time gets a wrong result or a NaN.
 * A panel filled without slot_wait, a block used before begin or after end, or buffers too
 * small count as misuse (the call still returns OOC_OK, so the test sees the count).
 * slot_busy says a slot is busy for its first `busy_polls` polls after each panel (default 2),
 * as a device still multiplying would, so the host's work while it waits (prefill) runs.
 */
#ifndef OOC_FAKE_EXEC_H
#define OOC_FAKE_EXEC_H

#include "kernels/ops.h"
#include "solvers/oocgemm.h"

typedef struct fake_exec {
  gemm_exec_t e; /* first: the solver sees only this */
  const ooc_ops_t *ops;
  double *dev[GEMM_MAX_CBLK];
  int ready[GEMM_MAX_SLOTS], misuse;
  int state[GEMM_MAX_CBLK]; /* 0 idle, 1 begun (load pending), 2 begun, 3 ended */
  int64_t mb[GEMM_MAX_CBLK], nb[GEMM_MAX_CBLK], back[GEMM_MAX_CBLK];
  int64_t panels, fetches;
  int busy_polls, busy[GEMM_MAX_SLOTS];
  int64_t polls_busy; /* slot_busy calls that said busy */
} fake_exec_t;

/* nslots panel slots of MB x KB and KB x NB, ncblk C buffers of MB x NB; products with ops. */
fake_exec_t *fake_exec_create(int nslots, int ncblk, int64_t MB, int64_t NB, int64_t KB,
                              const ooc_ops_t *ops);
void fake_exec_destroy(fake_exec_t *f);

#endif
