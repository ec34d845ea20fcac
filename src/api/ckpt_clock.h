/*
 * ckpt_clock.h: when a journaled run checkpoints (docs/RELIABILITY.md "When"). One place
 * decides it for every method, in core and out of core; checkpoint.c feeds it the clock.
 *
 * Contract
 * - A checkpoint is due after a step when the run is interrupted (a signal or the progress
 *   callback asked it to stop: what it did is kept, the last step included), with
 *   `--checkpoint step` after every step, and otherwise once `interval` seconds have passed
 *   since the last checkpoint (or the steps' start) by the step's end, never after the last
 *   step (it would only copy the matrix to disk once more before the writer reads it).
 * - Methods ask as a step ends (gj, chol, LU's other steps: it ends now), or before it starts
 *   (`before`: LU's factor steps, which must know whether to leave the next stripe in the
 *   store). Then the step is taken to end when it would if it ran as long as the step before
 *   it (at least now), so that both kinds of question checkpoint after the step that ends the
 *   interval. Asked with the time at the question, a step that starts right after a
 *   checkpoint would never be due, and LU's checkpoints came one step late (until 2026-11-30).
 *   The first step of a run has no step before it: asked before it runs, the time at the
 *   question counts (since the start, which includes the run's setup).
 * - Times are seconds of one monotonic clock (ooc_now); the functions read no clock
 *   themselves, so tests drive them with made-up times (tests/test_crash.c "clock").
 */
#ifndef OOC_CKPT_CLOCK_H
#define OOC_CKPT_CLOCK_H

#include <stdint.h>

typedef struct ckpt_clock {
  double interval;   /* seconds between checkpoints */
  int every_step;    /* --checkpoint step */
  double t_last;     /* the last checkpoint, or the steps' start */
  double t_step_end; /* when the last step ended (after its checkpoint, if it had one) */
  double step_len;   /* how long it ran (its checkpoint not counted); 0 before the first */
} ckpt_clock_t;

/* The steps start at `now`. */
void ckpt_clock_start(ckpt_clock_t *c, double interval, int every_step, double now);
/* Is a checkpoint due after `step` of `nsteps`, asked at `now`, `before` the step runs (else
 * as it ends)? */
int ckpt_clock_due(const ckpt_clock_t *c, int64_t step, int64_t nsteps, int interrupted,
                   int before, double now);
/* A step's work ended at `t_work`; its checkpoint, if `checkpointed`, ended at `now`. */
void ckpt_clock_stepped(ckpt_clock_t *c, double t_work, int checkpointed, double now);

#endif
