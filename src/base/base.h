/*
 * base.h: what every module may use. The context's internals, error recording, accounted host
 * allocation, timers and checksums. Depends on nothing but libc.
 *
 * Contract
 * - ooc_malloc/ooc_free go through the context's hooks and keep a byte count and a peak; every
 *   buffer that holds matrix data must be allocated here, so budgets can be checked by tests.
 *   Returned memory is 64-byte aligned. ooc_free(ctx, NULL) is fine.
 * - OOC_FAIL records a message (what, where, why) plus the source file:line and returns the status,
 *   so error paths read `return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: ...", name);`. The first failure
 *   wins: a later OOC_FAIL while a failure is recorded keeps the original message (the cause).
 */
#ifndef OOC_BASE_H
#define OOC_BASE_H

#include "oocsolve.h"

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

struct ooc_ctx {
  ooc_malloc_fn malloc_fn;
  ooc_free_fn free_fn;
  void *alloc_user;
  int64_t host_bytes;  /* bytes currently allocated through ooc_malloc */
  int64_t host_peak;
  int64_t live_allocs; /* number of live ooc_malloc blocks (leak checks) */
  ooc_progress_fn progress;
  void *progress_user;
  volatile sig_atomic_t interrupted;
  ooc_status_t err_status;
  char err[2048];
  char err_where[128]; /* src file:line of the first failure */
};

void *ooc_malloc(ooc_ctx_t *ctx, size_t bytes);
void *ooc_calloc(ooc_ctx_t *ctx, size_t count, size_t size);
void ooc_free(ooc_ctx_t *ctx, void *p);
char *ooc_strdup(ooc_ctx_t *ctx, const char *s);

ooc_status_t ooc_fail_at(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define OOC_FAIL(ctx, st, ...) ooc_fail_at((ctx), (st), __FILE__, __LINE__, __VA_ARGS__)
/* Prefix the recorded failure's message with context ("cov.h5:/cov: " + message). */
void ooc_error_context(ooc_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clear the recorded failure (at the start of a public call). */
void ooc_clear_error(ooc_ctx_t *ctx);

#define OOC_TRY(expr)                                                                              \
  do {                                                                                             \
    ooc_status_t ooc_try_s_ = (expr);                                                              \
    if (ooc_try_s_ != OOC_OK) return ooc_try_s_;                                                   \
  } while (0)

/* Jump-to-cleanup style for functions that own resources: `OOC_CHECK(st = f(...));` needs a
 * variable `st` and a label `done`. */
#define OOC_CHECK(expr)                                                                            \
  do {                                                                                             \
    if ((expr) != OOC_OK) goto done;                                                               \
  } while (0)

/* Progress and interruption at safe points: returns OOC_ERR_INTERRUPTED (with message) when the
 * context was interrupted or the callback asked to stop. */
ooc_status_t ooc_tick(ooc_ctx_t *ctx, const char *phase, double fraction);

/* Monotonic wall clock in seconds. */
double ooc_now(void);

/* 64-bit checksum (XXH64-compatible) of a buffer. */
uint64_t ooc_xxh64(const void *data, size_t len, uint64_t seed);

/* Physical memory of the machine in bytes (0 if unknown). */
int64_t ooc_physical_memory(void);

/* "1.5 GiB", "512 KiB", "12 B" into buf; returns buf. */
const char *ooc_fmt_bytes(int64_t bytes, char *buf, size_t cap);

/* snprintf that reports truncation: returns 0, or -1 if the result did not fit. */
int ooc_fmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append "; "-separated text to a fixed-size warnings buffer. */
void ooc_warn(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline int64_t ooc_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t ooc_max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ooc_cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
