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
 * - Fault seams (tested the SQLite way, docs/RELIABILITY.md): every host allocation (ooc_malloc),
 *   every file operation of src/io (io/fileio.h) and every device or pinned allocation of the CUDA
 *   executor asks ooc_fault_hit() first. A test arms "fail the Nth call of this kind, once or from
 *   then on" with ooc_fault_arm(); unarmed, a seam costs one counter increment. Leak counters:
 *   host bytes and blocks (above), open files and HDF5 file handles of src/io (open_files), CUDA
 *   streams (streams); each is back to zero when a call returns, whatever its status.
 * - Threads: ooc_malloc/ooc_free, the fault seams (ooc_fault_hit) and the failure record
 *   (OOC_FAIL, ooc_error_*, ooc_fail_replace, ooc_clear_error) may be called from several
 *   threads at once (the counters are atomic, the record has a lock): a loader's read-ahead
 *   thread reads the input while the method runs (issue 27). The allocator hooks are then
 *   called from that thread too. The rest (progress, ticks, the kill point, the open-file
 *   counts) belongs to the thread that made the call. Which of two threads' seam calls is the
 *   Nth is not fixed: an armed fault lands on one of them.
 */
#ifndef OOC_BASE_H
#define OOC_BASE_H

#include "oocsolve.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Fault kinds. OOC_FAULT_IO counts every file operation of src/io; OOC_FAULT_IO_WRITE only those
 * that write (write, flush, fsync, fallocate, rename, create), so a test can fill the disk. */
typedef enum {
  OOC_FAULT_ALLOC = 0,    /* ooc_malloc */
  OOC_FAULT_IO = 1,       /* any file operation of src/io */
  OOC_FAULT_IO_WRITE = 2, /* file operations of src/io that write */
  OOC_FAULT_DEVICE = 3,   /* device and pinned allocations (src/kernels/cuda) */
  OOC_FAULT_CORRUPT = 4,  /* chunks an output writes directly (io/h5mat.h): the armed chunk goes
                             to the file (and to h5m_set_tap's tap) with one bit flipped, the
                             lowest exponent bit of its largest element (doubled or halved);
                             uncompressed outputs only. A silent corruption on the
                             way to the disk, which the check must catch (docs/RELIABILITY.md) */
  OOC_FAULT_KINDS = 5
} ooc_fault_kind_t;

typedef struct ooc_fault {
  _Atomic int64_t calls; /* seam calls since the last arm */
  int64_t fail_at;  /* 0: disarmed; else the 1-based call that fails */
  int persistent;   /* fail every call from fail_at on, not only that one */
  int err;          /* errno an I/O fault reports (EIO, ENOSPC, ...) */
  _Atomic int64_t injected; /* faults delivered since the last arm */
} ooc_fault_t;

struct fio_ops; /* io/fileio.h: the file operations table of src/io */

struct ooc_ctx {
  ooc_malloc_fn malloc_fn;
  ooc_free_fn free_fn;
  void *alloc_user;
  _Atomic int64_t host_bytes;  /* bytes currently allocated through ooc_malloc */
  _Atomic int64_t host_peak;
  _Atomic int64_t live_allocs; /* number of live ooc_malloc blocks (leak checks) */
  ooc_progress_fn progress;
  void *progress_user;
  volatile sig_atomic_t interrupted;
  /* ooc_ctx_request_stop was called (a first Ctrl-C): a run that can checkpoint at the end of
   * its step (graceful, set by the checkpoint module while a journaled run is in its steps)
   * finishes the step, checkpoints it and stops; otherwise ticks stop it at once */
  volatile sig_atomic_t stop_requested;
  volatile sig_atomic_t graceful;
  pthread_mutex_t err_mu; /* the failure record's (err_status, err, err_where) */
  ooc_status_t err_status;
  char err[2048];
  char err_where[128]; /* src file:line of the first failure */
  ooc_fault_t fault[OOC_FAULT_KINDS];
  const struct fio_ops *io_ops; /* NULL: POSIX */
  int64_t open_files; /* descriptors and HDF5 file handles src/io holds open */
  int64_t streams;    /* CUDA streams alive */
  /* Test kill point (docs/RELIABILITY.md): OOCSOLVE_TEST_KILL="event:N[:INT]" raises SIGKILL (or
   * SIGINT) at the Nth ooc_test_killpoint(ctx, event). Parsed once by ooc_ctx_create. */
  char kill_event[16];
  int64_t kill_at;
  atomic_llong kill_seen; /* (the scratch store's puts count from the copy threads) */
  int kill_sig;
  /* steps of the current run done and in all (ooc_note_step; 0, 0: not a stepped phase) */
  int64_t step_done, step_total;
};

/* Host bytes counted against the budget (ooc_malloc's, and the CUDA runtime's pinned memory):
 * delta added, the peak raised to the new count; safe from several threads at once. */
static inline void ooc_ctx_count_host(ooc_ctx_t *ctx, int64_t delta) {
  int64_t now = atomic_fetch_add(&ctx->host_bytes, delta) + delta;
  int64_t peak = atomic_load(&ctx->host_peak);
  while (now > peak && !atomic_compare_exchange_weak(&ctx->host_peak, &peak, now)) {
  }
}

/* Record the steps done / in all of the running call, for ooc_ctx_progress_step. */
void ooc_note_step(ooc_ctx_t *ctx, int64_t done, int64_t total);

/* Arm the Nth call (1-based, counted from now) of a seam to fail, once or persistently; n = 0
 * disarms. err is the errno an I/O fault reports (ignored for allocations). */
void ooc_fault_arm(ooc_ctx_t *ctx, ooc_fault_kind_t kind, int64_t n, int persistent, int err);
/* Count a seam call; nonzero when this call must fail (for I/O: the errno to report). */
int ooc_fault_hit(ooc_ctx_t *ctx, ooc_fault_kind_t kind);
int64_t ooc_fault_calls(const ooc_ctx_t *ctx, ooc_fault_kind_t kind);
int64_t ooc_fault_injected(const ooc_ctx_t *ctx, ooc_fault_kind_t kind);
int64_t ooc_ctx_open_files(const ooc_ctx_t *ctx);
int64_t ooc_ctx_streams(const ooc_ctx_t *ctx);
/* The crash tests' hook: counts `event` and raises the armed signal at the armed count. */
void ooc_test_killpoint(ooc_ctx_t *ctx, const char *event);

void *ooc_malloc(ooc_ctx_t *ctx, size_t bytes);
void *ooc_calloc(ooc_ctx_t *ctx, size_t count, size_t size);
void ooc_free(ooc_ctx_t *ctx, void *p);
char *ooc_strdup(ooc_ctx_t *ctx, const char *s);

ooc_status_t ooc_fail_at(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define OOC_FAIL(ctx, st, ...) ooc_fail_at((ctx), (st), __FILE__, __LINE__, __VA_ARGS__)
/* Prefix the recorded failure's message with context ("cov.h5:/cov: " + message). */
void ooc_error_context(ooc_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append text to the recorded failure's message ("...; the journal keeps ..."). */
void ooc_error_append(ooc_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Replace the recorded failure (status and message) by a better one for the same event. */
ooc_status_t ooc_fail_replace(ooc_ctx_t *ctx, ooc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
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

/* 64-bit checksum (XXH64-compatible) of a buffer (xxh3.c, with XXH3). */
uint64_t ooc_xxh64(const void *data, size_t len, uint64_t seed);
/* XXH3-64 (seed 0, the default secret; the public algorithm) of a buffer: the same strength as
 * XXH64, 2-4x faster on large buffers (SIMD; xxh3.c). ooc_xxh3_cols: XXH3-64 of ncols columns of
 * col_bytes each, column c at data + c * stride, as if they were contiguous (a tile inside a
 * larger column-major buffer, checksummed where it lies). */
uint64_t ooc_xxh3(const void *data, size_t len);
uint64_t ooc_xxh3_cols(const void *data, size_t col_bytes, size_t ncols, size_t stride);

/* Physical memory of the machine in bytes (0 if unknown). */
int64_t ooc_physical_memory(void);

/* "1.5 GiB", "512 KiB", "12 B" into buf; returns buf. */
const char *ooc_fmt_bytes(int64_t bytes, char *buf, size_t cap);

/* snprintf that reports truncation: returns 0, or -1 if the result did not fit. */
int ooc_fmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append "; "-separated text to a fixed-size warnings buffer. */
void ooc_warn(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ||x||_2 of n contiguous entries, scaled as LAPACK's dnrm2 (no overflow or underflow for huge
 * or tiny entries); a NaN or an infinity is returned as soon as it is met. */
double ooc_nrm2(int64_t n, const double *x);

/* max(a, b) where a NaN, once met, wins and stays: the worst of several ratios, so that one NaN
 * among finite values fails a check (`if (!(r <= worst)) worst = r` keeps a NaN only until the
 * next finite r, which replaces it). */
static inline double ooc_nanmax(double a, double b) {
  if (a != a || b != b) return a + b; /* NaN */
  return a > b ? a : b;
}

/* max(m, max_i |x[i]|) over n doubles, NaN ignored as fmax ignores it. Four running maxima: one
 * chain of compares is latency bound (~2 GB/s a thread, slower than the copies around it). */
double ooc_absmax(const double *x, int64_t n, double m);

static inline int64_t ooc_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t ooc_max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ooc_cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

#endif
