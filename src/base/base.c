/* base.c: context, accounted allocation, error recording, timers, a scaled 2-norm. See base.h. */
#include "base/base.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Every block carries a header before the aligned payload: the size (for accounting) and the
 * offset back to what the hook returned. 64 bytes keeps the payload cache-line aligned. */
#define OOC_ALIGN 64
typedef struct {
  size_t size;
  size_t offset;
} blk_hdr_t;

static void *default_malloc(void *user, size_t n) {
  (void)user;
  return malloc(n);
}
static void default_free(void *user, void *p) {
  (void)user;
  free(p);
}

/* Large blocks (big tiles, panels) ask for transparent huge pages: their first touch then
 * faults 2 MiB at a time instead of 4 KiB (on the H100 host the first out-of-core product into
 * fresh 128 MiB tile buffers went from 38.8 to 41.0 TFLOP/s; later products reuse the buffers).
 * Only a hint, and only for memory from our default allocator: a caller's allocator decides for
 * its own memory. */
#define HUGE_HINT_BYTES ((size_t)16 << 20)
static void huge_hint(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t H = (uintptr_t)2 << 20;
  uintptr_t a = ((uintptr_t)p + H - 1) & ~(H - 1), e = ((uintptr_t)p + bytes) & ~(H - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* failure is fine */
#else
  (void)p;
  (void)bytes;
#endif
}

void *ooc_malloc(ooc_ctx_t *ctx, size_t bytes) {
  if (bytes > SIZE_MAX - 2 * OOC_ALIGN) return NULL;
  if (ooc_fault_hit(ctx, OOC_FAULT_ALLOC)) return NULL;
  char *raw = ctx->malloc_fn(ctx->alloc_user, bytes + 2 * OOC_ALIGN);
  if (!raw) return NULL;
  uintptr_t base = (uintptr_t)raw + sizeof(blk_hdr_t);
  uintptr_t aligned = (base + OOC_ALIGN - 1) & ~(uintptr_t)(OOC_ALIGN - 1);
  blk_hdr_t *h = (blk_hdr_t *)(aligned - sizeof(blk_hdr_t));
  h->size = bytes;
  h->offset = aligned - (uintptr_t)raw;
  if (bytes >= HUGE_HINT_BYTES && ctx->malloc_fn == default_malloc) huge_hint((void *)aligned, bytes);
  ooc_ctx_count_host(ctx, (int64_t)bytes);
  atomic_fetch_add(&ctx->live_allocs, 1);
  return (void *)aligned;
}

void *ooc_calloc(ooc_ctx_t *ctx, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = ooc_malloc(ctx, count * size);
  if (p) memset(p, 0, count * size);
  return p;
}

void ooc_free(ooc_ctx_t *ctx, void *p) {
  if (!p) return;
  blk_hdr_t *h = (blk_hdr_t *)((char *)p - sizeof(blk_hdr_t));
  ooc_ctx_count_host(ctx, -(int64_t)h->size);
  atomic_fetch_sub(&ctx->live_allocs, 1);
  ctx->free_fn(ctx->alloc_user, (char *)p - h->offset);
}

char *ooc_strdup(ooc_ctx_t *ctx, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = ooc_malloc(ctx, n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- fault seams and leak counters ---------------------------------------------------------- */

void ooc_fault_arm(ooc_ctx_t *ctx, ooc_fault_kind_t kind, int64_t n, int persistent, int err) {
  if ((unsigned)kind >= OOC_FAULT_KINDS) return;
  ooc_fault_t *f = &ctx->fault[kind];
  f->calls = 0;
  f->injected = 0;
  f->fail_at = n > 0 ? n : 0;
  f->persistent = persistent;
  f->err = err > 0 ? err : EIO;
}

int ooc_fault_hit(ooc_ctx_t *ctx, ooc_fault_kind_t kind) {
  if (!ctx || (unsigned)kind >= OOC_FAULT_KINDS) return 0;
  ooc_fault_t *f = &ctx->fault[kind];
  int64_t call = atomic_fetch_add(&f->calls, 1) + 1; /* this call's number, whatever the thread */
  if (f->fail_at <= 0) return 0;
  if (call == f->fail_at || (f->persistent && call > f->fail_at)) {
    atomic_fetch_add(&f->injected, 1);
    return f->err > 0 ? f->err : EIO;
  }
  return 0;
}

int64_t ooc_fault_calls(const ooc_ctx_t *ctx, ooc_fault_kind_t kind) {
  return (unsigned)kind < OOC_FAULT_KINDS ? ctx->fault[kind].calls : 0;
}
int64_t ooc_fault_injected(const ooc_ctx_t *ctx, ooc_fault_kind_t kind) {
  return (unsigned)kind < OOC_FAULT_KINDS ? ctx->fault[kind].injected : 0;
}
int64_t ooc_ctx_open_files(const ooc_ctx_t *ctx) { return ctx->open_files; }
int64_t ooc_ctx_streams(const ooc_ctx_t *ctx) { return ctx->streams; }

/* OOCSOLVE_TEST_KILL="commit:3" or "put:17:INT": a test-only hook, read once per context, so a
 * crash test can stop the CLI at an exact point of its protocol (docs/RELIABILITY.md). */
static void parse_killpoint(ooc_ctx_t *c) {
  const char *v = getenv("OOCSOLVE_TEST_KILL");
  if (!v || !*v) return;
  const char *colon = strchr(v, ':');
  if (!colon || (size_t)(colon - v) >= sizeof c->kill_event) return;
  char *end = NULL;
  long long at = strtoll(colon + 1, &end, 10);
  if (at <= 0) return;
  memcpy(c->kill_event, v, (size_t)(colon - v));
  c->kill_event[colon - v] = 0;
  c->kill_at = at;
  c->kill_sig = (end && !strcmp(end, ":INT")) ? SIGINT : (end && !strcmp(end, ":TERM")) ? SIGTERM
                                                                                        : SIGKILL;
}

void ooc_test_killpoint(ooc_ctx_t *ctx, const char *event) {
  if (!ctx || ctx->kill_at <= 0 || strcmp(ctx->kill_event, event) != 0) return;
  if (atomic_fetch_add(&ctx->kill_seen, 1) + 1 == ctx->kill_at) raise(ctx->kill_sig);
}

ooc_status_t ooc_ctx_create(ooc_ctx_t **out) {
  if (!out) return OOC_ERR_ARG;
  ooc_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return OOC_ERR_NOMEM;
  c->malloc_fn = default_malloc;
  c->free_fn = default_free;
  pthread_mutex_init(&c->err_mu, NULL);
  parse_killpoint(c);
  *out = c;
  return OOC_OK;
}

void ooc_ctx_destroy(ooc_ctx_t *ctx) {
  if (!ctx) return;
  pthread_mutex_destroy(&ctx->err_mu);
  free(ctx);
}

void ooc_ctx_set_allocator(ooc_ctx_t *ctx, ooc_malloc_fn m, ooc_free_fn f, void *user) {
  ctx->malloc_fn = m ? m : default_malloc;
  ctx->free_fn = f ? f : default_free;
  ctx->alloc_user = user;
}

void ooc_ctx_set_progress(ooc_ctx_t *ctx, ooc_progress_fn fn, void *user) {
  ctx->progress = fn;
  ctx->progress_user = user;
}

void ooc_ctx_interrupt(ooc_ctx_t *ctx) { ctx->interrupted = 1; }

int ooc_ctx_request_stop(ooc_ctx_t *ctx) {
  if (!ctx) return 0;
  if (ctx->stop_requested) ctx->interrupted = 1; /* asked twice: at once */
  ctx->stop_requested = 1;
  return !ctx->interrupted && ctx->graceful;
}

void ooc_note_step(ooc_ctx_t *ctx, int64_t done, int64_t total) {
  ctx->step_done = done;
  ctx->step_total = total;
}
int ooc_ctx_progress_step(const ooc_ctx_t *ctx, int64_t *done, int64_t *total) {
  if (!ctx || ctx->step_total <= 0) return 0;
  if (done) *done = ctx->step_done;
  if (total) *total = ctx->step_total;
  return 1;
}
const char *ooc_ctx_error(const ooc_ctx_t *ctx) { return ctx->err; }
int64_t ooc_ctx_host_bytes(const ooc_ctx_t *ctx) { return ctx->host_bytes; }
int64_t ooc_ctx_host_peak(const ooc_ctx_t *ctx) { return ctx->host_peak; }
void ooc_ctx_reset_peak(ooc_ctx_t *ctx) { atomic_store(&ctx->host_peak, ctx->host_bytes); }

ooc_status_t ooc_fail_at(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                         const char *fmt, ...) {
  pthread_mutex_lock(&ctx->err_mu);
  if (ctx->err_status == OOC_OK) { /* else keep the first cause */
    ctx->err_status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    const char *slash = strstr(file, "src/");
    snprintf(ctx->err_where, sizeof ctx->err_where, "%s:%d", slash ? slash : file, line);
  }
  pthread_mutex_unlock(&ctx->err_mu);
  return st;
}

void ooc_error_append(ooc_ctx_t *ctx, const char *fmt, ...) {
  pthread_mutex_lock(&ctx->err_mu);
  size_t len = strlen(ctx->err);
  if (len + 1 < sizeof ctx->err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err + len, sizeof ctx->err - len, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&ctx->err_mu);
}

ooc_status_t ooc_fail_replace(ooc_ctx_t *ctx, ooc_status_t st, const char *fmt, ...) {
  pthread_mutex_lock(&ctx->err_mu);
  ctx->err_status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&ctx->err_mu);
  return st;
}

void ooc_error_context(ooc_ctx_t *ctx, const char *fmt, ...) {
  char prefix[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t p = strlen(prefix) + 2, cap = sizeof ctx->err;
  if (p >= cap) return;
  pthread_mutex_lock(&ctx->err_mu);
  memmove(ctx->err + p, ctx->err, cap - p); /* shift the message right, keeping the tail */
  ctx->err[cap - 1] = 0;
  memcpy(ctx->err, prefix, p - 2);
  memcpy(ctx->err + p - 2, ": ", 2);
  pthread_mutex_unlock(&ctx->err_mu);
}

const char *ooc_fmt_bytes(int64_t v, char *buf, size_t cap) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = (double)v;
  int k = 0;
  while (x >= 1024 && k < 4) {
    x /= 1024;
    k++;
  }
  snprintf(buf, cap, k ? "%.1f %s" : "%.0f %s", x, unit[k]);
  return buf;
}

void ooc_clear_error(ooc_ctx_t *ctx) {
  pthread_mutex_lock(&ctx->err_mu);
  ctx->err_status = OOC_OK;
  ctx->err[0] = 0;
  ctx->err_where[0] = 0;
  pthread_mutex_unlock(&ctx->err_mu);
}

ooc_status_t ooc_tick(ooc_ctx_t *ctx, const char *phase, double fraction) {
  if (ctx->progress && ctx->progress(ctx->progress_user, phase, fraction)) ctx->interrupted = 1;
  if (ctx->interrupted || (ctx->stop_requested && !ctx->graceful))
    return OOC_FAIL(ctx, OOC_ERR_INTERRUPTED, "interrupted during %s (%.0f%% done)", phase,
                    100.0 * fraction);
  return OOC_OK;
}

double ooc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t ooc_physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
  return (pages > 0 && psize > 0) ? (int64_t)pages * psize : 0;
}

int ooc_fmt(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return (k < 0 || (size_t)k >= cap) ? -1 : 0;
}

void ooc_warn(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 3 >= cap) return;
  if (len) {
    memcpy(buf + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

const char *ooc_version(void) { return OOC_VERSION_STRING; }

const char *ooc_status_str(ooc_status_t s) {
  static const char *names[] = {
      "OOC_OK",           "OOC_ERR_ARG",      "OOC_ERR_NOMEM",       "OOC_ERR_BUDGET",
      "OOC_ERR_IO",       "OOC_ERR_FORMAT",   "OOC_ERR_NONFINITE",   "OOC_ERR_SINGULAR",
      "OOC_ERR_NOT_SPD",  "OOC_ERR_ACCURACY", "OOC_ERR_EXISTS",      "OOC_ERR_NOSPACE",
      "OOC_ERR_CORRUPT",  "OOC_ERR_DEVICE",   "OOC_ERR_NODEVICE",    "OOC_ERR_INTERRUPTED",
      "OOC_ERR_INTERNAL"};
  if ((unsigned)s < sizeof names / sizeof names[0]) return names[s];
  return "OOC_ERR_UNKNOWN";
}

int ooc_status_exit_code(ooc_status_t s) {
  switch (s) {
  case OOC_OK: return 0;
  case OOC_ERR_ARG: return 2;
  case OOC_ERR_FORMAT:
  case OOC_ERR_NONFINITE:
  case OOC_ERR_CORRUPT: return 3;
  case OOC_ERR_SINGULAR:
  case OOC_ERR_NOT_SPD:
  case OOC_ERR_ACCURACY: return 4;
  case OOC_ERR_IO:
  case OOC_ERR_EXISTS: return 5;
  case OOC_ERR_NOMEM:
  case OOC_ERR_BUDGET:
  case OOC_ERR_NOSPACE: return 6;
  case OOC_ERR_DEVICE:
  case OOC_ERR_NODEVICE: return 7;
  case OOC_ERR_INTERRUPTED: return 130;
  default: return 70;
  }
}

int64_t ooc_parse_size(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  double mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1024.0; end++; break;
  case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
  case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
  case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: break;
  }
  if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'b' || *end == 'B') end++;
  if (*end) return -1;
  double bytes = v * mul;
  if (bytes > 9.0e18) return -1;
  return (int64_t)bytes;
}

double ooc_nrm2(int64_t n, const double *x) {
  double scale = 0.0, ssq = 1.0;
  for (int64_t i = 0; i < n; i++) {
    double a = fabs(x[i]);
    if (a == 0.0) continue;
    if (!(a <= DBL_MAX)) return a; /* NaN or Inf: say so (their ratios below would be NaN) */
    if (scale < a) {
      ssq = 1.0 + ssq * (scale / a) * (scale / a);
      scale = a;
    } else {
      ssq += (a / scale) * (a / scale);
    }
  }
  return scale * sqrt(ssq);
}

double ooc_absmax(const double *x, int64_t n, double m) {
  double m0 = m, m1 = m, m2 = m, m3 = m;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    double a0 = fabs(x[i]), a1 = fabs(x[i + 1]), a2 = fabs(x[i + 2]), a3 = fabs(x[i + 3]);
    m0 = a0 > m0 ? a0 : m0;
    m1 = a1 > m1 ? a1 : m1;
    m2 = a2 > m2 ? a2 : m2;
    m3 = a3 > m3 ? a3 : m3;
  }
  for (; i < n; i++) m0 = fmax(m0, fabs(x[i]));
  m0 = m1 > m0 ? m1 : m0;
  m2 = m3 > m2 ? m3 : m2;
  return m2 > m0 ? m2 : m0;
}
