/*
 * cli_util.h: what the command-line tools share: a progress bar on stderr (only when stderr is a
 * terminal), option-value parsing with uniform error messages, and SIGINT/SIGTERM forwarding to
 * the library's interrupt flag.
 */
#ifndef OOC_CLI_UTIL_H
#define OOC_CLI_UTIL_H

#include <stdint.h>

#include "oocsolve.h"

/* Progress callback for ooc_ctx_set_progress; user is ignored. Draws "phase [#####   ] 42%". */
int cli_progress(void *user, const char *phase, double fraction);
/* Erase the bar (before printing anything else to stderr). */
void cli_progress_done(void);
/* Enable or disable the bar (disabled when stderr is not a terminal, whatever this says). */
void cli_progress_enable(int on);

/* Parse helpers: on failure print "<tool>: <opt>: <why>" and return -1. */
int cli_int64(const char *tool, const char *opt, const char *val, int64_t min, int64_t *out);
int cli_size(const char *tool, const char *opt, const char *val, int64_t *out);

/* SIGINT/SIGTERM call ooc_ctx_interrupt(ctx); the running call then stops with exit code 130. */
void cli_trap_signals(ooc_ctx_t *ctx);

#endif
