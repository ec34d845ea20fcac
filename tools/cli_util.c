/* cli_util.c: see cli_util.h. */
#include "cli_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_bar_on = 1, g_bar_drawn = 0, g_last_pct = -1;
static char g_last_phase[32];

void cli_progress_enable(int on) { g_bar_on = on; }

int cli_progress(void *user, const char *phase, double fraction) {
  (void)user;
  if (!g_bar_on || !isatty(2)) return 0;
  int pct = (int)(fraction * 100.0 + 0.5);
  if (pct == g_last_pct && strcmp(phase, g_last_phase) == 0) return 0;
  g_last_pct = pct;
  snprintf(g_last_phase, sizeof g_last_phase, "%s", phase);
  char bar[41];
  int fill = (int)(fraction * 40.0);
  for (int i = 0; i < 40; i++) bar[i] = i < fill ? '#' : ' ';
  bar[40] = 0;
  fprintf(stderr, "\r%-10s [%s] %3d%%", phase, bar, pct);
  fflush(stderr);
  g_bar_drawn = 1;
  return 0;
}

void cli_progress_done(void) {
  if (g_bar_drawn) fprintf(stderr, "\r%66s\r", "");
  g_bar_drawn = 0;
}

int cli_int64(const char *tool, const char *opt, const char *val, int64_t min, int64_t *out) {
  char *end;
  errno = 0;
  long long v = val ? strtoll(val, &end, 10) : 0;
  if (!val || !*val || *end || errno || v < min) {
    fprintf(stderr, "%s: %s: '%s' is not an integer >= %lld\n", tool, opt, val ? val : "",
            (long long)min);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_size(const char *tool, const char *opt, const char *val, int64_t *out) {
  int64_t v = ooc_parse_size(val);
  if (v <= 0) {
    fprintf(stderr, "%s: %s: '%s' is not a size (examples: 512M, 2G, 1.5GiB, 65536)\n", tool, opt,
            val ? val : "");
    return -1;
  }
  *out = v;
  return 0;
}

static ooc_ctx_t *g_ctx;
static void on_signal(int sig) {
  (void)sig;
  if (g_ctx) ooc_ctx_interrupt(g_ctx);
}

void cli_trap_signals(ooc_ctx_t *ctx) {
  g_ctx = ctx;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
