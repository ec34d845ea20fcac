/*
 * report.h: internal to src/api. What every public call does first (report.c): a clean report and
 * the options it runs with. The human and JSON forms of a report are public (oocsolve.h).
 */
#ifndef OOC_API_REPORT_H
#define OOC_API_REPORT_H

#include "base/base.h"

/* Start a call: *rep zeroed with its not-yet-known numbers NaN (logdet, pivot growth); *o = *opts
 * or the defaults, --host-mem 0 resolved to the job's real limit (base/memlimit.h, named in
 * rep->host_limit); the context's error, interrupt flag, step note and memory peak reset. */
void report_begin(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *rep, ooc_opts_t *o);

#endif
