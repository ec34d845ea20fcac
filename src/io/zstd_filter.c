/*
 * zstd_filter.c: the HDF5 zstd filter (registered id 32015), compiled into the library so that
 * outputs we compress are always readable by us, whatever HDF5_PLUGIN_PATH holds.
 *
 * Chunk format: one plain zstd frame, exactly what hdf5plugin / HDF5's registered filter 32015
 * writes and reads, so files travel both ways. Our frames also carry zstd's content checksum
 * (a frame-header flag every zstd decoder honours), so a damaged chunk fails to decode instead of
 * decoding into wrong numbers.
 *
 * HDF5 (1.10, 1.12) does not check what a filter returns against the chunk's size: a frame that
 * decodes short is then copied out from beyond the decoded buffer (a heap over-read), a long one
 * is cut silently. The filter cannot know the chunk's size (hdf5plugin's cd_values hold only the
 * level), so h5mat tells it around each H5Dread (h5m_zstd_expect, per thread) and the filter
 * fails on any other size: a frame that decodes to the wrong size is damage, found even when
 * the frame carries no checksum (hdf5plugin writes none). Without an expectation (another
 * caller's H5Dread) the filter keeps HDF5's behaviour of returning what the frame holds.
 *
 * Buffers handed to and from HDF5 are allocated with H5allocate_memory/H5free_memory: HDF5 frees
 * them itself, so they cannot come from the context's allocator.
 */
#include <hdf5.h>
#include <stdatomic.h>
#include <string.h>
#include <zstd.h>

#include "io/h5mat.h"

#define ZSTD_DEFAULT_LEVEL 3

/* A chunk cannot exceed 4 GiB in HDF5; a frame header claiming more is damage, not data. */
#define ZSTD_MAX_CHUNK ((unsigned long long)1 << 32)

/* The decoded size h5mat expects on this thread (0: unknown). HDF5 runs filters on the thread
 * that called H5Dread (the library is not thread-safe here, so reads are serialized). */
static _Thread_local size_t zstd_expect_bytes;

void h5m_zstd_expect(size_t bytes) { zstd_expect_bytes = bytes; }

static size_t zstd_compress_chunk(size_t cd_nelmts, const unsigned int cd_values[], size_t nbytes,
                                  size_t *buf_size, void **buf) {
  int level = ZSTD_DEFAULT_LEVEL;
  /* cd_values are unsigned; hdf5plugin stores negative (fast) levels as their two's complement */
  if (cd_nelmts > 0) level = (int)cd_values[0];
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) level = ZSTD_DEFAULT_LEVEL;

  size_t cap = ZSTD_compressBound(nbytes);
  void *out = H5allocate_memory(cap, 0);
  if (!out) return 0;
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  size_t n = 0;
  if (cctx && !ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) &&
      !ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)))
    n = ZSTD_compress2(cctx, out, cap, *buf, nbytes);
  ZSTD_freeCCtx(cctx);
  if (!cctx || n == 0 || ZSTD_isError(n)) {
    H5free_memory(out);
    return 0;
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = cap;
  return n;
}

/* Frames written without a content size (streaming writers) are decoded by growing the output. */
static size_t zstd_decompress_stream(size_t nbytes, size_t *buf_size, void **buf) {
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  if (!dctx) return 0;
  size_t cap = nbytes * 4 > ZSTD_DStreamOutSize() ? nbytes * 4 : ZSTD_DStreamOutSize();
  char *out = H5allocate_memory(cap, 0);
  ZSTD_inBuffer in = {*buf, nbytes, 0};
  size_t used = 0, ret = 1;
  while (out) {
    ZSTD_outBuffer ob = {out + used, cap - used, 0};
    ret = ZSTD_decompressStream(dctx, &ob, &in);
    used += ob.pos;
    if (ZSTD_isError(ret) || ret == 0) break;
    if (in.pos == in.size && ob.pos < ob.size) break; /* input ended inside a frame */
    if (used == cap) {
      if ((unsigned long long)cap * 2 > ZSTD_MAX_CHUNK) break;
      char *grown = H5resize_memory(out, cap * 2);
      if (!grown) break;
      out = grown;
      cap *= 2;
    }
  }
  ZSTD_freeDCtx(dctx);
  if (!out) return 0;
  if (ret != 0 || ZSTD_isError(ret) || (zstd_expect_bytes && used != zstd_expect_bytes)) {
    H5free_memory(out);
    return 0;
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = cap;
  return used;
}

static size_t zstd_decompress_chunk(size_t nbytes, size_t *buf_size, void **buf) {
  unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
  if (size == ZSTD_CONTENTSIZE_ERROR) return 0;
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) return zstd_decompress_stream(nbytes, buf_size, buf);
  if (size > ZSTD_MAX_CHUNK) return 0;
  if (zstd_expect_bytes && size != zstd_expect_bytes) return 0; /* short or long: see the top */
  /* HDF5 treats a 0 return as failure; an empty frame cannot be a chunk anyway */
  if (size == 0) return 0;
  void *out = H5allocate_memory((size_t)size, 0);
  if (!out) return 0;
  size_t n = ZSTD_decompress(out, (size_t)size, *buf, nbytes);
  if (ZSTD_isError(n) || n != size) {
    H5free_memory(out);
    return 0;
  }
  H5free_memory(*buf);
  *buf = out;
  *buf_size = (size_t)size;
  return n;
}

static size_t zstd_filter(unsigned int flags, size_t cd_nelmts, const unsigned int cd_values[],
                          size_t nbytes, size_t *buf_size, void **buf) {
  if (flags & H5Z_FLAG_REVERSE) return zstd_decompress_chunk(nbytes, buf_size, buf);
  return zstd_compress_chunk(cd_nelmts, cd_values, nbytes, buf_size, buf);
}

static const H5Z_class2_t zstd_class = {
    H5Z_CLASS_T_VERS, (H5Z_filter_t)OOC_H5Z_ZSTD, 1, 1, "zstd", NULL, NULL, zstd_filter,
};

static atomic_int zstd_registered;

int h5m_register_zstd(void) {
  /* H5close() (at exit or by the application) drops registrations, so a remembered success is
   * confirmed with H5Zfilter_avail; before the first registration we do not ask it, because a miss
   * makes HDF5 go looking for a dynamic plugin that we would then shadow anyway. */
  if (atomic_load(&zstd_registered) && H5Zfilter_avail((H5Z_filter_t)OOC_H5Z_ZSTD) > 0) return 1;
  H5E_auto2_t fn = NULL;
  void *data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  herr_t rc = H5Zregister(&zstd_class);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  if (rc < 0) return 0;
  atomic_store(&zstd_registered, 1);
  return 1;
}
