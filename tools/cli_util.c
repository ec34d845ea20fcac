/* cli_util.c: see cli_util.h. */
#define _GNU_SOURCE
#include "cli_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static int g_bar_on = 1, g_bar_drawn = 0, g_last_pct = -1;
static char g_last_phase[32];
static double g_t0 = -1, g_phase_t0, g_last_line = -1;
static char g_err[512];
static ooc_ctx_t *g_ctx;

void cli_progress_enable(int on) { g_bar_on = on; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_secs(double s, char *buf, size_t cap) {
  if (!(s >= 0) || s > 1e7) snprintf(buf, cap, "?");
  else if (s < 60) snprintf(buf, cap, "%.0fs", s);
  else if (s < 3600) snprintf(buf, cap, "%dm%02ds", (int)s / 60, (int)s % 60);
  else snprintf(buf, cap, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static int term_width(int fd) {
  struct winsize ws;
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  int w = c ? atoi(c) : 0;
  return w > 0 ? w : 0;
}

int cli_progress(void *user, const char *phase, double fraction) {
  (void)user;
  if (!g_bar_on) return 0;
  double t = now_s();
  if (g_t0 < 0) g_t0 = t;
  int new_phase = strcmp(phase, g_last_phase) != 0;
  if (new_phase) {
    g_phase_t0 = t;
    snprintf(g_last_phase, sizeof g_last_phase, "%s", phase);
    g_last_pct = -1;
  }
  int pct = (int)(fraction * 100.0 + 0.5);
  /* ETA from this phase's own rate: phases differ too much for one overall rate */
  double el = t - g_phase_t0, eta = fraction > 0.005 ? el * (1 - fraction) / fraction : -1;
  char e1[16], e2[16], steps[48] = "";
  fmt_secs(t - g_t0, e1, sizeof e1);
  fmt_secs(eta, e2, sizeof e2);
  int64_t done = 0, total = 0;
  if (g_ctx && ooc_ctx_progress_step(g_ctx, &done, &total) &&
      (!strcmp(phase, "eliminate") || !strcmp(phase, "invert") || !strcmp(phase, "factor")))
    snprintf(steps, sizeof steps, "step %lld/%lld", (long long)done, (long long)total);
  if (!isatty(2)) {
    const char *iv = getenv("OOCSOLVE_PROGRESS_SECONDS");
    double every = iv && atof(iv) > 0 ? atof(iv) : 5.0;
    /* the first line after `every` seconds: runs shorter than that stay silent */
    if (t - (g_last_line >= 0 ? g_last_line : g_t0) < every) return 0;
    g_last_line = t;
    fprintf(stderr, "%s: progress: %s%s%s, %d%%, elapsed %s, ETA %s\n",
            program_invocation_short_name, phase,
            steps[0] ? ", " : "", steps, pct, e1, eta >= 0 ? e2 : "?");
    fflush(stderr);
    return 0;
  }
  if (pct == g_last_pct && !new_phase) return 0;
  g_last_pct = pct;
  int width = term_width(2);
  if (width <= 0) width = 80;
  char tail[96];
  snprintf(tail, sizeof tail, " %3d%%%s%s ETA %s", pct, steps[0] ? " " : "", steps,
           eta >= 0 ? e2 : "?");
  int barw = width - 1 - 10 - 3 - (int)strlen(tail);
  if (barw > 40) barw = 40;
  if (barw < 5) barw = 0;
  char bar[41];
  int fill = (int)(fraction * barw);
  for (int i = 0; i < barw; i++) bar[i] = i < fill ? '#' : ' ';
  bar[barw] = 0;
  if (barw) fprintf(stderr, "\r%-10.10s [%s]%s\033[K", phase, bar, tail);
  else fprintf(stderr, "\r%-10.10s%s\033[K", phase, tail);
  fflush(stderr);
  g_bar_drawn = 1;
  return 0;
}

void cli_progress_done(void) {
  if (g_bar_drawn) fprintf(stderr, "\r\033[K");
  g_bar_drawn = 0;
}

const char *cli_last_error(void) { return g_err; }

int cli_int64(const char *tool, const char *opt, const char *val, int64_t min, int64_t *out) {
  char *end;
  errno = 0;
  long long v = val ? strtoll(val, &end, 10) : 0;
  if (!val || !*val || *end || errno || v < min) {
    snprintf(g_err, sizeof g_err, "%s: '%s' is not an integer >= %lld", opt, val ? val : "",
             (long long)min);
    fprintf(stderr, "%s: %s\n", tool, g_err);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_size(const char *tool, const char *opt, const char *val, int64_t *out) {
  int64_t v = ooc_parse_size(val);
  if (v <= 0) {
    snprintf(g_err, sizeof g_err, "%s: '%s' is not a size (examples: 512M, 2G, 1.5GiB, 65536)",
             opt, val ? val : "");
    fprintf(stderr, "%s: %s\n", tool, g_err);
    return -1;
  }
  *out = v;
  return 0;
}

static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      int best = sub < del ? sub : del;
      d[i][j] = best < ins ? best : ins;
    }
  return d[la][lb];
}

const char *cli_nearest(const char *typed, const char *const *cands, int count) {
  const char *best = NULL;
  int bd = 1 << 30;
  for (int k = 0; k < count; k++) {
    int dd = edit_distance(typed, cands[k]);
    if (dd < bd) {
      bd = dd;
      best = cands[k];
    }
  }
  int len = (int)strlen(typed);
  return best && (bd <= 2 || bd <= len / 3) && bd < len ? best : NULL;
}

void cli_report_print(const ooc_report_t *r, FILE *f) {
  int width = term_width(fileno(f));
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = width > 0 ? open_memstream(&buf, &len) : NULL;
  if (!mem) {
    ooc_report_print(r, f);
    return;
  }
  ooc_report_print(r, mem);
  fclose(mem);
  if (width < 40) width = 40;
  const int indent = 10; /* continuation lines start under the first field's value */
  for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    int first = 1;
    while (n > 0) {
      size_t room = (size_t)(first ? width - 1 : width - 1 - indent);
      size_t cut = n;
      if (n > room) { /* the last space that fits; a longer word is cut */
        cut = room;
        while (cut > 0 && line[cut] != ' ') cut--;
        if (cut == 0) cut = room;
      }
      fprintf(f, "%*s%.*s\n", first ? 0 : indent, "", (int)cut, line);
      line += cut;
      n -= cut;
      while (n > 0 && *line == ' ') {
        line++;
        n--;
      }
      first = 0;
    }
  }
  free(buf);
}

/* v's decimal digits at p (no stdio in a signal handler); returns the end */
static char *put_int(char *p, int64_t v) {
  char d[24];
  int k = 0;
  do d[k++] = (char)('0' + v % 10);
  while ((v /= 10) > 0 && k < (int)sizeof d);
  while (k > 0) *p++ = d[--k];
  return p;
}

static char *put_str(char *p, const char *s) {
  while (*s) *p++ = *s++;
  return p;
}

/* A first SIGINT or SIGTERM lets a journaled run finish and checkpoint its step (the work since
 * the last checkpoint is kept for --resume), a second stops it at once (docs/RELIABILITY.md).
 * Only async-signal-safe calls: the request, reading the step counters, write. */
static void on_signal(int sig) {
  (void)sig;
  if (!g_ctx || !ooc_ctx_request_stop(g_ctx)) return;
  char msg[256], *p = put_str(msg, "\noocsolve: stopping once this step is checkpointed");
  int64_t done, total;
  if (ooc_ctx_progress_step(g_ctx, &done, &total) && done < total) {
    p = put_int(put_str(p, " (step "), done + 1);
    p = put_str(put_int(put_str(p, " of "), total), ")");
  }
  p = put_str(p, "; interrupt again to stop at once, losing the step's work\n");
  ssize_t w = write(STDERR_FILENO, msg, (size_t)(p - msg));
  (void)w;
}

void cli_trap_signals(ooc_ctx_t *ctx) {
  g_ctx = ctx;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
