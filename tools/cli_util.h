/*
 * cli_util.h: what the command-line tools share: progress on stderr (a bar on a terminal, a line
 * every few seconds otherwise), option-value parsing with uniform error messages, "did you mean"
 * suggestions, a report printer that fits the terminal, and SIGINT/SIGTERM forwarding to the
 * library's interrupt flag.
 */
#ifndef OOC_CLI_UTIL_H
#define OOC_CLI_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "oocsolve.h"

/* Progress callback for ooc_ctx_set_progress; user is ignored. On a terminal it draws
 * "phase [#####   ] 42% step 3/12 ETA 1m05s" (the steps when the library knows them); when
 * stderr is not a terminal (batch jobs, logs) it prints one line every OOCSOLVE_PROGRESS_SECONDS
 * seconds (default 5): "oocsolve: progress: eliminate, step 3/12, 42%, elapsed 12s, ETA 16s". */
int cli_progress(void *user, const char *phase, double fraction);
/* Erase the bar (before printing anything else to stderr). */
void cli_progress_done(void);
/* Enable or disable progress output (--quiet). */
void cli_progress_enable(int on);

/* Parse helpers: on failure print "<tool>: <opt>: <why>" and return -1; cli_last_error() then
 * holds the message without the tool's name. */
int cli_int64(const char *tool, const char *opt, const char *val, int64_t min, int64_t *out);
int cli_size(const char *tool, const char *opt, const char *val, int64_t *out);
const char *cli_last_error(void);

/* The candidate closest to `typed` by edit distance if it is close enough to be a typo
 * (distance <= 2, or a third of the length), else NULL. */
const char *cli_nearest(const char *typed, const char *const *cands, int count);

/* ooc_report_print, with lines wider than the terminal wrapped at spaces (indented). The width:
 * the terminal's when f is one, else $COLUMNS when set, else no wrapping. */
void cli_report_print(const ooc_report_t *r, FILE *f);

/* SIGINT/SIGTERM call ooc_ctx_request_stop(ctx): a journaled run finishes and checkpoints its step,
 * any other run (and any run signalled twice) stops at once; exit code 130 either way. */
void cli_trap_signals(ooc_ctx_t *ctx);

#endif
