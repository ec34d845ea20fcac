/* ckpt_clock.c: when a journaled run checkpoints (ckpt_clock.h). */
#include "api/ckpt_clock.h"

void ckpt_clock_start(ckpt_clock_t *c, double interval, int every_step, double now) {
  *c = (ckpt_clock_t){.interval = interval, .every_step = every_step, .t_last = now,
                      .t_step_end = now, .step_len = 0};
}

int ckpt_clock_due(const ckpt_clock_t *c, int64_t step, int64_t nsteps, int interrupted,
                   int before, double now) {
  if (c->every_step || interrupted) return 1;
  if (step + 1 >= nsteps) return 0;
  double t_end = now; /* asked before the step: when it ends if it runs as long as the last */
  if (before && c->t_step_end + c->step_len > now) t_end = c->t_step_end + c->step_len;
  return t_end - c->t_last >= c->interval;
}

void ckpt_clock_stepped(ckpt_clock_t *c, double t_work, int checkpointed, double now) {
  c->step_len = t_work - c->t_step_end;
  c->t_step_end = now;
  if (checkpointed) c->t_last = now;
}
