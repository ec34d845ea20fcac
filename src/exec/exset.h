/*
 * exset.h: the executors of one call, one per device (issue 26). exec.h's principle: several
 * devices are several executors, and a method that spreads its work takes an array of them.
 * This module is that array and the one place its members are listed, parsed and counted:
 *
 * - the device list (`--devices 0,1,3`, ooc_opts_t.devices, OOC_PARAM_DEVICES): distinct
 *   device numbers, at most EX_MAX_DEVICES, in the order given (the first is the one a method
 *   that does not spread runs on, and the one that holds a spread method's factored panel);
 * - a set of host executors, one per listed number, each with its own worker threads and its
 *   own budget (the budget is per device, as --gpu-mem is per GPU): how the CPU backends
 *   present several devices, so the multi-device schedules run in CI with bit-identical results;
 * - the per-device figures the report gives (busy seconds, bytes in and out, flops).
 * CUDA executors for the list are made by the caller through the plugin (exec/plugin.h) and
 * added with ex_set_add: this module does not load CUDA.
 *
 * Contract: a set owns the executors added to it (ex_set_destroy destroys them, last first).
 * One caller thread, as for each executor.
 */
#ifndef OOC_EXSET_H
#define OOC_EXSET_H

#include "exec/exec.h"

typedef struct ex_set {
  int n;                           /* executors in the set */
  int dev[EX_MAX_DEVICES];         /* the device number of each (the list's) */
  ooc_exec_t *ex[EX_MAX_DEVICES];
} ex_set_t;

/* "0,1,3" (commas, optional blanks; "" or NULL: *n = 0, the default) into dev[0 .. *n):
 * numbers >= 0 and < 1024, each once, at most EX_MAX_DEVICES. 0, or -1 with a message in err
 * naming the list and what is wrong. */
int ex_devices_parse(const char *list, int *dev, int *n, char *err, size_t cap);

/* The set made empty (then ex_set_add). */
void ex_set_init(ex_set_t *s);
/* Appends ex (device number dev); the set owns it from here (also on failure: then destroyed). */
ooc_status_t ex_set_add(ooc_ctx_t *ctx, ex_set_t *s, int dev, ooc_exec_t *ex);

/* n host executors over ops (ex_host_create: nqueues worker threads each, `budget` bytes of
 * ex_alloc each), numbered dev[0 .. n) (NULL: 0 .. n-1). strict: ex_host_create_strict's
 * test variant with delay_us. On failure nothing is left. */
ooc_status_t ex_set_host(ooc_ctx_t *ctx, const ooc_ops_t *ops, int n, const int *dev, int nqueues,
                         int64_t budget, int strict, int delay_us, ex_set_t *s);

/* Host bytes ex_set_host takes itself for n executors of nqueues queues (planners). */
int64_t ex_set_host_bytes(int n, int nqueues);

/* Destroys every executor (waiting for each) and empties the set. */
void ex_set_destroy(ex_set_t *s);

/* The tile cache's pinner over an executor (tstore.h tcache_set_pin(c, ex_pin_cb, ex_unpin_cb,
 * ex)): ex_host_register / ex_host_unregister with the executor as user. One definition, so that
 * the job that pins a cache while loading it and the method that lends from it name the same
 * pinner (setting the same one again keeps what it pinned). */
int ex_pin_cb(void *ex, void *p, size_t bytes);
void ex_unpin_cb(void *ex, void *p);

#endif
