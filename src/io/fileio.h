/*
 * fileio.h: the one seam every file operation of src/io goes through.
 *
 * Why: a library that promises "disk full or an I/O error never leaves a half-written output or a
 * leaked descriptor" must be able to prove it. Routing open/pread/pwrite/fsync/rename/unlink (and
 * the HDF5 calls that touch files, through fio_gate) through one table lets the test suite fail
 * the Nth operation (ooc_fault_arm with OOC_FAULT_IO or OOC_FAULT_IO_WRITE, base.h) and count
 * open handles (ctx->open_files), the way SQLite tests its VFS.
 *
 * Contract
 * - Each function behaves as the POSIX call it names (return value, errno), except that
 *   fio_pwrite_all / fio_pread_all loop over partial transfers and EINTR and return 0 / the byte
 *   count or an errno (negated for pread), and fio_fallocate returns an errno (0 on success).
 * - An armed fault makes the call fail before it reaches the system with the armed errno; a
 *   faulted close still releases the descriptor (as close(2) does), so faults never leak.
 * - fio_open/fio_close keep ctx->open_files; HDF5 file handles are counted with fio_h5_opened /
 *   fio_h5_closed by h5mat.c.
 * - ctx->io_ops (fio_set_ops) may replace the POSIX functions, e.g. by a test that simulates
 *   short writes; NULL restores POSIX.
 */
#ifndef OOC_FILEIO_H
#define OOC_FILEIO_H

#include <errno.h>
#include <sys/types.h>

#include "base/base.h"

typedef struct fio_ops {
  int (*open)(const char *path, int flags, mode_t mode);
  int (*close)(int fd);
  ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
  ssize_t (*pwrite)(int fd, const void *buf, size_t len, off_t off);
  int (*fsync)(int fd);
  int (*fallocate)(int fd, off_t off, off_t len); /* returns an errno, as posix_fallocate */
  int (*truncate)(const char *path, off_t len);
  int (*rename)(const char *from, const char *to);
  int (*unlink)(const char *path);
} fio_ops_t;

void fio_set_ops(ooc_ctx_t *ctx, const fio_ops_t *ops);
const fio_ops_t *fio_posix_ops(void);

/* Count one file operation at the seam; 0, or the errno an armed fault makes it fail with.
 * `writes`: the operation writes to a file (counted by OOC_FAULT_IO_WRITE too). For HDF5 calls,
 * which cannot be routed through the table: the caller skips the call when this is nonzero. */
int fio_gate(ooc_ctx_t *ctx, int writes);

int fio_open(ooc_ctx_t *ctx, const char *path, int flags, mode_t mode);
int fio_close(ooc_ctx_t *ctx, int fd);
int fio_pwrite_all(ooc_ctx_t *ctx, int fd, const void *buf, size_t len, int64_t off);
int64_t fio_pread_all(ooc_ctx_t *ctx, int fd, void *buf, size_t len, int64_t off);
/* A scattered read: iov's cnt buffers filled in order from off (preadv(2) in rounds of at most
 * IOV_MAX, over partial transfers and EINTR), one gate for the whole read; the byte count (short
 * at the end of the file) or a negated errno. Where ctx->io_ops replaces POSIX, the table's
 * pread fills the buffers one by one (the tests' tables have no preadv). Thread-safe, as
 * fio_pread_all and fio_pwrite_all are (the gate's counters are atomic): the scratch store's
 * parallel reads call it from the copy threads. */
struct iovec;
int64_t fio_preadv_all(ooc_ctx_t *ctx, int fd, const struct iovec *iov, int cnt, int64_t off);
int fio_fsync(ooc_ctx_t *ctx, int fd);
int fio_fallocate(ooc_ctx_t *ctx, int fd, int64_t off, int64_t len);
int fio_truncate(ooc_ctx_t *ctx, const char *path, int64_t len);
int fio_rename(ooc_ctx_t *ctx, const char *from, const char *to);
int fio_unlink(ooc_ctx_t *ctx, const char *path);
/* Cleanup: unlink, tried twice unless the file is gone (a transient failure must not leave a
 * spill file of many GiB behind). 0 or an errno. */
int fio_remove(ooc_ctx_t *ctx, const char *path);
/* fsync the directory holding `path`, so a rename or unlink in it is durable. File systems that
 * cannot sync a directory (EINVAL) are accepted: returns 0 or an errno. */
int fio_sync_dir(ooc_ctx_t *ctx, const char *path);

/* Start writing [off, off + len) of fd back to the device now, without waiting for it (Linux:
 * sync_file_range with SYNC_FILE_RANGE_WRITE), so that a later fsync finds less to write. A hint:
 * it never fails, is no fault seam, and does nothing when ctx->io_ops replaces POSIX. */
void fio_writeback_hint(ooc_ctx_t *ctx, int fd, int64_t off, int64_t len);

/* The table's pread, for worker threads (io/chunkio.h) reading a batch of data whose one
 * fio_gate the caller passed on its own thread (one fault seam per batch, not per piece). */
ssize_t (*fio_pread_op(const ooc_ctx_t *ctx))(int fd, void *buf, size_t len, off_t off);

void fio_h5_opened(ooc_ctx_t *ctx);
void fio_h5_closed(ooc_ctx_t *ctx);

/* ENOSPC/EDQUOT -> OOC_ERR_NOSPACE, anything else -> OOC_ERR_IO. */
static inline ooc_status_t fio_status(int e) {
  return (e == ENOSPC || e == EDQUOT) ? OOC_ERR_NOSPACE : OOC_ERR_IO;
}

#endif
