/* fileio.c: see fileio.h. */
#ifdef __linux__
#define _GNU_SOURCE /* sync_file_range */
#endif
#include "io/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int p_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static int p_fallocate(int fd, off_t off, off_t len) { return posix_fallocate(fd, off, len); }

static const fio_ops_t posix_ops = {p_open, close,    pread,  pwrite, fsync,
                                    p_fallocate, truncate, rename, unlink};

const fio_ops_t *fio_posix_ops(void) { return &posix_ops; }
void fio_set_ops(ooc_ctx_t *ctx, const fio_ops_t *ops) { ctx->io_ops = ops; }

static const fio_ops_t *ops(const ooc_ctx_t *ctx) {
  return ctx && ctx->io_ops ? ctx->io_ops : &posix_ops;
}

int fio_gate(ooc_ctx_t *ctx, int writes) {
  if (!ctx) return 0;
  int e = ooc_fault_hit(ctx, OOC_FAULT_IO);
  if (writes) {
    int w = ooc_fault_hit(ctx, OOC_FAULT_IO_WRITE);
    if (!e) e = w;
  }
  return e;
}

int fio_open(ooc_ctx_t *ctx, const char *path, int flags, mode_t mode) {
  int e = fio_gate(ctx, (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0);
  if (e) {
    errno = e;
    return -1;
  }
  int fd;
  do {
    fd = ops(ctx)->open(path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0 && ctx) ctx->open_files++;
  return fd;
}

int fio_close(ooc_ctx_t *ctx, int fd) {
  if (fd < 0) return 0;
  int e = fio_gate(ctx, 0);
  int rc = ops(ctx)->close(fd); /* released even when a fault is injected, as close(2) does */
  if (ctx) ctx->open_files--;
  if (e) {
    errno = e;
    return -1;
  }
  return rc;
}

int fio_pwrite_all(ooc_ctx_t *ctx, int fd, const void *buf, size_t len, int64_t off) {
  int e = fio_gate(ctx, 1);
  if (e) return e;
  const char *p = buf;
  while (len > 0) {
    ssize_t n = ops(ctx)->pwrite(fd, p, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC; /* a zero-byte write on a regular file means no room */
    p += n;
    len -= (size_t)n;
    off += n;
  }
  return 0;
}

int64_t fio_pread_all(ooc_ctx_t *ctx, int fd, void *buf, size_t len, int64_t off) {
  int e = fio_gate(ctx, 0);
  if (e) return -e;
  char *p = buf;
  int64_t got = 0;
  while (len > 0) {
    ssize_t n = ops(ctx)->pread(fd, p, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    p += n;
    len -= (size_t)n;
    off += n;
    got += n;
  }
  return got;
}

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
int64_t fio_preadv_all(ooc_ctx_t *ctx, int fd, const struct iovec *iov, int cnt, int64_t off) {
  int e = fio_gate(ctx, 0);
  if (e) return -e;
  int64_t got = 0;
  int i = 0;
  size_t done = 0; /* bytes of iov[i] already filled */
  for (;;) {
    while (i < cnt && iov[i].iov_len == done) { /* (empty buffers included) */
      i++;
      done = 0;
    }
    if (i == cnt) break;
    ssize_t n;
    if (ctx && ctx->io_ops) {
      n = ctx->io_ops->pread(fd, (char *)iov[i].iov_base + done, iov[i].iov_len - done, (off_t)off);
    } else {
      struct iovec v[IOV_MAX];
      int k = 0;
      for (; k < IOV_MAX && i + k < cnt; k++) v[k] = iov[i + k];
      v[0].iov_base = (char *)v[0].iov_base + done;
      v[0].iov_len -= done;
      n = preadv(fd, v, k, (off_t)off);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) break;
    got += n;
    off += n;
    for (size_t left = (size_t)n; left > 0;) { /* advance over what was filled */
      size_t room = iov[i].iov_len - done;
      size_t k = left < room ? left : room;
      done += k;
      left -= k;
      if (done == iov[i].iov_len && left > 0) {
        i++;
        done = 0;
      }
    }
  }
  return got;
}

int fio_fsync(ooc_ctx_t *ctx, int fd) {
  int e = fio_gate(ctx, 1);
  if (e) {
    errno = e;
    return -1;
  }
  return ops(ctx)->fsync(fd);
}

void fio_writeback_hint(ooc_ctx_t *ctx, int fd, int64_t off, int64_t len) {
  if (ctx && ctx->io_ops) return;
#ifdef __linux__
  (void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
  (void)off;
  (void)len;
#endif
}

int fio_fallocate(ooc_ctx_t *ctx, int fd, int64_t off, int64_t len) {
  int e = fio_gate(ctx, 1);
  return e ? e : ops(ctx)->fallocate(fd, (off_t)off, (off_t)len);
}

int fio_truncate(ooc_ctx_t *ctx, const char *path, int64_t len) {
  int e = fio_gate(ctx, 1);
  if (e) {
    errno = e;
    return -1;
  }
  return ops(ctx)->truncate(path, (off_t)len);
}

int fio_rename(ooc_ctx_t *ctx, const char *from, const char *to) {
  int e = fio_gate(ctx, 1);
  if (e) {
    errno = e;
    return -1;
  }
  return ops(ctx)->rename(from, to);
}

int fio_unlink(ooc_ctx_t *ctx, const char *path) {
  int e = fio_gate(ctx, 0);
  if (e) {
    errno = e;
    return -1;
  }
  return ops(ctx)->unlink(path);
}

int fio_remove(ooc_ctx_t *ctx, const char *path) {
  for (int attempt = 0; attempt < 2; attempt++) {
    if (fio_unlink(ctx, path) == 0 || errno == ENOENT) return 0;
  }
  return errno;
}

int fio_sync_dir(ooc_ctx_t *ctx, const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  int fd = fio_open(ctx, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return errno == EACCES ? 0 : errno; /* an unreadable directory cannot be synced */
  int rc = fio_fsync(ctx, fd), err = rc ? errno : 0;
  fio_close(ctx, fd);
  return (err == EINVAL || err == EROFS) ? 0 : err;
}

ssize_t (*fio_pread_op(const ooc_ctx_t *ctx))(int fd, void *buf, size_t len, off_t off) {
  return ops(ctx)->pread;
}

void fio_h5_opened(ooc_ctx_t *ctx) {
  if (ctx) ctx->open_files++;
}
void fio_h5_closed(ooc_ctx_t *ctx) {
  if (ctx) ctx->open_files--;
}
