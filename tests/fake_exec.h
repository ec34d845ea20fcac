/*
 * fake_exec.h: a host stand-in for the GPU product executor (oocgemm.h's gemm_exec_t seam) that
 * checks the protocol. It is asynchronous like the GPU: a load is taken from cblk[c] only at the
 * block's first panel (or end), and end() leaves cblk[c] filled with NaN until fetch() brings the
 * columns back, so a host that touches cblk[c] at the wrong time gets a wrong result or a NaN.
 * Panels are copied to the stand-in's own "device" buffers when they go up (panel(), upload()),
 * so a host that fills a piece after uploading it multiplies stale data.
 * Misuse is counted (the call still returns OOC_OK, so the test sees the count): a panel filled
 * without slot_wait, a block used before begin or after end, buffers too small, a part() on rows
 * or columns not uploaded or on columns already ended, panel() on a slot filled by pieces,
 * end_cols() out of column order.
 * slot_busy says a slot is busy for its first `busy_polls` polls after each panel (default 2),
 * as a device still multiplying would, so the host's work while it waits (prefill) runs.
 * The optional hooks (upload, part, end_cols) are set; a test clears them to run the schedule
 * without its ends.
 */
#ifndef OOC_FAKE_EXEC_H
#define OOC_FAKE_EXEC_H

#include "kernels/ops.h"
#include "solvers/oocgemm.h"

typedef struct fake_exec {
  gemm_exec_t e; /* first: the solver sees only this */
  const ooc_ops_t *ops;
  double *dev[GEMM_MAX_CBLK];
  double *devA[GEMM_MAX_SLOTS], *devB[GEMM_MAX_SLOTS]; /* the panels as uploaded */
  char *up_rows[GEMM_MAX_SLOTS], *up_cols[GEMM_MAX_SLOTS]; /* uploaded rows of A, columns of B */
  int64_t up_mb[GEMM_MAX_SLOTS], up_nb[GEMM_MAX_SLOTS], up_kb[GEMM_MAX_SLOTS];
  int ready[GEMM_MAX_SLOTS], pieces[GEMM_MAX_SLOTS], misuse;
  int state[GEMM_MAX_CBLK]; /* 0 idle, 1 begun (load pending), 2 begun, 3 ended */
  int64_t mb[GEMM_MAX_CBLK], nb[GEMM_MAX_CBLK], back[GEMM_MAX_CBLK];
  int64_t ended[GEMM_MAX_CBLK]; /* columns [0, ended) copied back early (end_cols) */
  int64_t panels, fetches;
  int64_t uploads, parts;     /* upload and part calls */
  int64_t piece_panels;       /* panels that went up in more than one upload */
  int64_t split_panels;       /* panels multiplied in more than one non-empty part */
  int64_t end_cols, ended_early; /* end_cols calls; blocks with an end_cols */
  double bytes_up, flops;     /* panel bytes copied up (panel(), upload()); product flops */
  int64_t skip_part;          /* > 0: the part with this ordinal (1, 2, ...) multiplies nothing:
                               * a broken executor, for the tests' own check that they fail */
  int64_t parts_this[GEMM_MAX_SLOTS], uploads_this[GEMM_MAX_SLOTS];
  int busy_polls, busy[GEMM_MAX_SLOTS];
  int64_t polls_busy; /* slot_busy calls that said busy */
} fake_exec_t;

/* nslots panel slots of MB x KB and KB x NB, ncblk C buffers of MB x NB; products with ops. */
fake_exec_t *fake_exec_create(int nslots, int ncblk, int64_t MB, int64_t NB, int64_t KB,
                              const ooc_ops_t *ops);
void fake_exec_destroy(fake_exec_t *f);

#endif
