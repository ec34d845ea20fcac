/*
 * scratch.c: see scratch.h.
 *
 * Layout: slot k starts at k * slot_size, slot_size = 64-byte header + slot_bytes rounded up to
 * 4 KiB, so a slot never shares a page with its neighbours and ids far apart leave holes (the file
 * is sparse; only tiles actually spilled take disk space). The payload is written before its
 * header, so a put interrupted by a full disk leaves a slot whose checksum cannot match.
 *
 * Not thread-safe: one thread at a time per store (the compression buffer is shared).
 */
#include "io/scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define SCR_MAGIC 0x3130524353434f4fULL /* "OOCSCR01" on little-endian disks */
#define SCR_ALIGN 4096
#define FLAG_RAW 0u
#define FLAG_ZSTD 1u

typedef struct {
  uint64_t magic;
  int64_t id;
  uint64_t length;     /* bytes stored after the header */
  uint64_t raw_length; /* bytes as given to put */
  uint32_t flags;
  uint32_t reserved0;
  uint64_t sum;  /* XXH64 of the payload as given (before compression) */
  uint64_t hsum; /* XXH64 of the fields above: a damaged header is told from a foreign one */
  uint64_t reserved1;
} slot_hdr_t;

_Static_assert(sizeof(slot_hdr_t) == 64, "slot header is 64 bytes");

struct scratch {
  ooc_ctx_t *ctx;
  int fd;
  char *path;
  size_t slot_bytes;
  int64_t slot_size;
  int64_t max_id;
  int level;
  void *zbuf; /* compressed payloads, slot_bytes long, allocated on first use */
  ZSTD_CCtx *cctx;
  ZSTD_DCtx *dctx;
  int64_t written, read;
};

static ooc_status_t errno_status(int e) {
  return (e == ENOSPC || e == EDQUOT) ? OOC_ERR_NOSPACE : OOC_ERR_IO;
}

static int pwrite_all(int fd, const void *buf, size_t len, int64_t off) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = pwrite(fd, p, len, (off_t)off);
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

/* Returns bytes read (short at end of file) or -errno. */
static int64_t pread_all(int fd, void *buf, size_t len, int64_t off) {
  char *p = buf;
  int64_t got = 0;
  while (len > 0) {
    ssize_t n = pread(fd, p, len, (off_t)off);
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

static uint64_t hdr_sum(const slot_hdr_t *h) { return ooc_xxh64(h, offsetof(slot_hdr_t, hsum), 0); }

ooc_status_t scratch_open(ooc_ctx_t *ctx, const char *dir, const char *tag, size_t slot_bytes,
                          int zstd_level, scratch_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  if (!dir || !*dir) dir = ".";
  if (!tag || !*tag) tag = "tiles";
  if (slot_bytes == 0 || slot_bytes > ((size_t)1 << 40))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "scratch store in '%s': slot size %zu out of range", dir,
                    slot_bytes);
  if (zstd_level > ZSTD_maxCLevel()) zstd_level = ZSTD_maxCLevel();

  char safe_tag[48];
  snprintf(safe_tag, sizeof safe_tag, "%s", tag);
  for (char *c = safe_tag; *c; c++)
    if (*c == '/') *c = '_';

  scratch_t *s = ooc_calloc(ctx, 1, sizeof *s);
  if (!s) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "scratch store in '%s': out of memory", dir);
  s->ctx = ctx;
  s->fd = -1;
  s->slot_bytes = slot_bytes;
  s->slot_size = ooc_cdiv64((int64_t)(sizeof(slot_hdr_t) + slot_bytes), SCR_ALIGN) * SCR_ALIGN;
  s->max_id = INT64_MAX / s->slot_size - 1;
  s->level = zstd_level;

  size_t cap = strlen(dir) + strlen(safe_tag) + 64;
  s->path = ooc_malloc(ctx, cap);
  if (!s->path) {
    scratch_close(s);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "scratch store in '%s': out of memory", dir);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)s;
  int err = EEXIST;
  for (int attempt = 0; attempt < 100 && err == EEXIST; attempt++) {
    uint64_t in[2] = {seed, (uint64_t)attempt};
    unsigned rnd = (unsigned)ooc_xxh64(in, sizeof in, (uint64_t)getpid());
    snprintf(s->path, cap, "%s/.oocsolve-%s-%ld-%08x.scratch", dir, safe_tag, (long)getpid(), rnd);
    s->fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    err = s->fd < 0 ? errno : 0;
  }
  if (s->fd < 0) {
    ooc_free(ctx, s->path);
    s->path = NULL; /* nothing of ours to unlink */
    scratch_close(s);
    return OOC_FAIL(ctx, errno_status(err), "cannot create a scratch file in directory '%s': %s",
                    dir, strerror(err));
  }
  *out = s;
  return OOC_OK;
}

static ooc_status_t check_id(scratch_t *s, const char *what, int64_t id, const void *data,
                             size_t bytes) {
  if (id < 0 || id > s->max_id)
    return OOC_FAIL(s->ctx, OOC_ERR_ARG, "scratch file '%s': %s of tile %lld: id out of range",
                    s->path, what, (long long)id);
  if (bytes > s->slot_bytes || (!data && bytes))
    return OOC_FAIL(s->ctx, OOC_ERR_ARG, "scratch file '%s': %s of tile %lld: %zu bytes do not fit "
                    "a %zu-byte slot", s->path, what, (long long)id, bytes, s->slot_bytes);
  return OOC_OK;
}

static ooc_status_t ensure_zstd(scratch_t *s) {
  if (!s->zbuf) s->zbuf = ooc_malloc(s->ctx, s->slot_bytes);
  if (!s->cctx) s->cctx = ZSTD_createCCtx();
  if (!s->dctx) s->dctx = ZSTD_createDCtx();
  if (!s->zbuf || !s->cctx || !s->dctx)
    return OOC_FAIL(s->ctx, OOC_ERR_NOMEM, "scratch file '%s': cannot allocate compression buffers",
                    s->path);
  return OOC_OK;
}

ooc_status_t scratch_put(scratch_t *s, int64_t id, const void *data, size_t bytes) {
  if (!s) return OOC_ERR_ARG;
  OOC_TRY(check_id(s, "put", id, data, bytes));
  slot_hdr_t h;
  memset(&h, 0, sizeof h);
  h.magic = SCR_MAGIC;
  h.id = id;
  h.raw_length = bytes;
  h.sum = ooc_xxh64(data, bytes, 0);
  h.flags = FLAG_RAW;
  const void *payload = data;
  size_t plen = bytes;
  if (s->level > 0 && bytes > 0) {
    OOC_TRY(ensure_zstd(s));
    /* capacity = bytes: output that would not be smaller fails with dstSize_tooSmall -> raw */
    size_t n = ZSTD_compressCCtx(s->cctx, s->zbuf, bytes, data, bytes, s->level);
    if (!ZSTD_isError(n) && n < bytes) {
      payload = s->zbuf;
      plen = n;
      h.flags = FLAG_ZSTD;
    }
  }
  h.length = plen;
  h.hsum = hdr_sum(&h);
  int64_t off = id * s->slot_size;
  int err = pwrite_all(s->fd, payload, plen, off + (int64_t)sizeof h);
  if (!err) err = pwrite_all(s->fd, &h, sizeof h, off);
  if (err)
    return OOC_FAIL(s->ctx, errno_status(err), "scratch file '%s': cannot write tile %lld: %s",
                    s->path, (long long)id, strerror(err));
  s->written += (int64_t)bytes;
  return OOC_OK;
}

ooc_status_t scratch_get(scratch_t *s, int64_t id, void *data, size_t bytes) {
  if (!s) return OOC_ERR_ARG;
  OOC_TRY(check_id(s, "get", id, data, bytes));
  ooc_ctx_t *ctx = s->ctx;
  long long tid = (long long)id;
  int64_t off = id * s->slot_size;
  slot_hdr_t h, zero;
  memset(&h, 0, sizeof h);
  memset(&zero, 0, sizeof zero);
  int64_t got = pread_all(s->fd, &h, sizeof h, off);
  if (got < 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "scratch file '%s': cannot read tile %lld: %s", s->path, tid,
                    strerror((int)-got));
  /* a hole or the region past the end of the file reads as zeros */
  if (!memcmp(&h, &zero, sizeof h))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "scratch file '%s': tile %lld was never written",
                    s->path, tid);
  const char *why = NULL;
  if (h.magic != SCR_MAGIC)
    why = "bad slot header (magic)";
  else if (h.hsum != hdr_sum(&h))
    why = "slot header checksum mismatch";
  else if (h.id != id)
    why = "slot holds another tile id";
  else if (h.raw_length != bytes)
    why = "stored length differs from the length asked for";
  else if (h.length > s->slot_bytes || (h.flags == FLAG_RAW && h.length != h.raw_length) ||
           (h.flags != FLAG_RAW && h.flags != FLAG_ZSTD))
    why = "slot header is inconsistent";
  if (why)
    return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "scratch file '%s': tile %lld is corrupt: %s", s->path,
                    tid, why);

  void *dst = h.flags == FLAG_ZSTD ? NULL : data;
  if (h.flags == FLAG_ZSTD) {
    OOC_TRY(ensure_zstd(s));
    dst = s->zbuf;
  }
  got = pread_all(s->fd, dst, (size_t)h.length, off + (int64_t)sizeof h);
  if (got < 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "scratch file '%s': cannot read tile %lld: %s", s->path, tid,
                    strerror((int)-got));
  if ((uint64_t)got != h.length)
    return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "scratch file '%s': tile %lld is corrupt: payload "
                    "truncated (%lld of %llu bytes)", s->path, tid, (long long)got,
                    (unsigned long long)h.length);
  if (h.flags == FLAG_ZSTD) {
    size_t n = ZSTD_decompressDCtx(s->dctx, data, bytes, s->zbuf, (size_t)h.length);
    if (ZSTD_isError(n) || n != bytes)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "scratch file '%s': tile %lld is corrupt: payload "
                      "does not decompress (%s)", s->path, tid,
                      ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
  }
  if (ooc_xxh64(data, bytes, 0) != h.sum)
    return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "scratch file '%s': tile %lld is corrupt: checksum "
                    "mismatch", s->path, tid);
  s->read += (int64_t)bytes;
  return OOC_OK;
}

const char *scratch_path(const scratch_t *s) { return s && s->path ? s->path : ""; }
int64_t scratch_bytes_written(const scratch_t *s) { return s ? s->written : 0; }
int64_t scratch_bytes_read(const scratch_t *s) { return s ? s->read : 0; }

void scratch_close(scratch_t *s) {
  if (!s) return;
  if (s->fd >= 0) close(s->fd);
  if (s->path && s->fd >= 0) unlink(s->path);
  ZSTD_freeCCtx(s->cctx);
  ZSTD_freeDCtx(s->dctx);
  ooc_free(s->ctx, s->zbuf);
  ooc_free(s->ctx, s->path);
  ooc_free(s->ctx, s);
}
