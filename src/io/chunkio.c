/* chunkio.c: see chunkio.h. No HDF5, no allocator, no context: safe on any thread. */
#include "io/chunkio.h"

#include "base/parloop.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

int cio_default_threads(void) { return ooc_par_cpus(CIO_MAX_THREADS); }

/* ---- transposing copies --------------------------------------------------------------------- */

/* Blocks of TB x TB elements: both sides stay in L1 while a block is transposed (float32). */
#define TB 32

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* float64 blocks: TI elements down the destination's columns (two cache lines, so that every
 * line a block writes is written whole) by TJ across. Rectangles of at least T_STREAM_BYTES
 * write with streaming stores: they do not fit a cache, and a streaming store does not read
 * the line it fills first. Measured on this project's 2-core VM (an AMD EPYC; /tmp benchmark of
 * session 18, a 64-row window of 4096-wide chunk rows into a 16384-row strip, and its reverse):
 * the scalar 32 x 32 blocks 3.4-3.7 GB/s a thread, SSE2 2 x 2 transposes in these blocks with
 * streaming stores 7.9-8.2 GB/s; 32 rows down 5.2, plain stores 5.0-5.3. */
#define TI 16
#define TJ 64
#define T_STREAM_BYTES ((int64_t)1 << 20)

/* The transpose of an h x w row-major block (element (i, j) at s[i * ss + j]) into column-major
 * d (element (i, j) at d[i + j * ds]). */
static void transpose_d(const double *s, int64_t ss, int64_t h, int64_t w, double *d,
                        int64_t ds) {
#if defined(__SSE2__)
  int nt = h * w * 8 >= T_STREAM_BYTES && ds % 2 == 0;
  if (nt && ((uintptr_t)d & 15)) { /* one row by itself: the rest is 16-byte aligned */
    for (int64_t j = 0; j < w; j++) d[j * ds] = s[j];
    s += ss;
    d++;
    h--;
  }
  for (int64_t ib = 0; ib < h; ib += TI)
    for (int64_t jb = 0; jb < w; jb += TJ) {
      int64_t ie = min64(ib + TI, h), je = min64(jb + TJ, w);
      int64_t i2 = ib + ((ie - ib) & ~(int64_t)1), j2 = jb + ((je - jb) & ~(int64_t)1);
      for (int64_t j = jb; j < j2; j += 2) { /* columns j, j + 1 of d: rows i, i + 1 of s */
        double *d0 = d + j * ds, *d1 = d0 + ds;
        const double *sp = s + j;
        for (int64_t i = ib; i < i2; i += 2) {
          __m128d a = _mm_loadu_pd(sp + i * ss), b = _mm_loadu_pd(sp + (i + 1) * ss);
          if (nt) {
            _mm_stream_pd(d0 + i, _mm_unpacklo_pd(a, b));
            _mm_stream_pd(d1 + i, _mm_unpackhi_pd(a, b));
          } else {
            _mm_storeu_pd(d0 + i, _mm_unpacklo_pd(a, b));
            _mm_storeu_pd(d1 + i, _mm_unpackhi_pd(a, b));
          }
        }
        if (i2 < ie) {
          d0[i2] = sp[i2 * ss];
          d1[i2] = sp[i2 * ss + 1];
        }
      }
      for (int64_t j = j2; j < je; j++)
        for (int64_t i = ib; i < ie; i++) d[i + j * ds] = s[i * ss + j];
    }
  if (nt) _mm_sfence(); /* streaming stores are weakly ordered: done before the caller says so */
#else
  for (int64_t ib = 0; ib < h; ib += TB)
    for (int64_t jb = 0; jb < w; jb += TB) {
      int64_t ie = min64(ib + TB, h), je = min64(jb + TB, w);
      for (int64_t j = jb; j < je; j++)
        for (int64_t i = ib; i < ie; i++) d[i + j * ds] = s[i * ss + j];
    }
#endif
}

void cio_unpack(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                int64_t ld) {
  if (es == 8) {
    transpose_d(src, rw, h, w, dst, ld);
    return;
  }
  const float *s = src;
  for (int64_t ib = 0; ib < h; ib += TB)
    for (int64_t jb = 0; jb < w; jb += TB) {
      int64_t ie = min64(ib + TB, h), je = min64(jb + TB, w);
      for (int64_t j = jb; j < je; j++)
        for (int64_t i = ib; i < ie; i++) dst[i + j * ld] = (double)s[i * rw + j];
    }
}

void cio_unpack_t(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                  int64_t ld) {
  for (int64_t i = 0; i < h; i++) { /* row i of the block is column i of dst: a straight copy */
    double *d = dst + i * ld;
    if (es == 8) {
      memcpy(d, (const double *)src + i * rw, (size_t)w * sizeof(double));
    } else {
      const float *s = (const float *)src + i * rw;
      for (int64_t j = 0; j < w; j++) d[j] = (double)s[j];
    }
  }
}

/* The block's element (i, j) lands at dst[i + j ld], or at dst[j + i ld] with trans. */
static void unpack(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                   int64_t ld, int trans) {
  if (trans) cio_unpack_t(src, es, rw, h, w, dst, ld);
  else cio_unpack(src, es, rw, h, w, dst, ld);
}

void cio_pack(const double *src, int64_t rs, int64_t cs, int64_t h, int64_t w, size_t es,
              void *dst, int64_t rw) {
  if (es == 8 && rs == 1) { /* a column-major source: row j of its transpose is column j */
    transpose_d(src, cs, w, h, dst, rw);
    return;
  }
  if (es == 8 && cs == 1) { /* a transposed source: its rows are the chunk's */
    for (int64_t i = 0; i < h; i++)
      memcpy((double *)dst + i * rw, src + i * rs, (size_t)w * sizeof(double));
    return;
  }
  for (int64_t ib = 0; ib < h; ib += TB)
    for (int64_t jb = 0; jb < w; jb += TB) {
      int64_t ie = min64(ib + TB, h), je = min64(jb + TB, w);
      if (es == 8) {
        double *d = dst;
        for (int64_t i = ib; i < ie; i++)
          for (int64_t j = jb; j < je; j++) d[i * rw + j] = src[i * rs + j * cs];
      } else {
        float *d = dst;
        for (int64_t i = ib; i < ie; i++)
          for (int64_t j = jb; j < je; j++) d[i * rw + j] = (float)src[i * rs + j * cs];
      }
    }
}

/* ---- reads ---------------------------------------------------------------------------------- */

static int read_full(cio_pread_fn pread_fn, int fd, void *buf, size_t len, int64_t off) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = pread_fn(fd, p, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno ? errno : EIO;
    }
    if (n == 0) return CIO_ESHORT;
    p += n;
    len -= (size_t)n;
    off += n;
  }
  return 0;
}

int cio_read_raw(cio_pread_fn pread_fn, int fd, int64_t base, size_t es, int64_t rw, int64_t i0,
                 int64_t j0, int64_t h, int64_t w, double *dst, int64_t ld, int trans, void *win,
                 size_t win_bytes) {
  /* element (i, j) of the piece at dst + i ri + j rj */
  int64_t ri = trans ? ld : 1, rj = trans ? 1 : ld;
  int64_t ses = (int64_t)es, cap = (int64_t)(win_bytes / es);
  if (w * 4 >= rw && rw <= cap) {
    /* dense: spans of whole rows, from column j0 of the first to j0 + w of the last */
    int64_t R = cap / rw;
    for (int64_t i = 0; i < h; i += R) {
      int64_t nr = min64(R, h - i), len = (nr - 1) * rw + w;
      int e = read_full(pread_fn, fd, win, (size_t)(len * ses),
                        base + ((i0 + i) * rw + j0) * ses);
      if (e) return e;
      unpack(win, es, rw, nr, w, dst + i * ri, ld, trans);
    }
    return 0;
  }
  /* sparse (a narrow strip of wide rows): one read per row segment, stacked in the window */
  int64_t wp = min64(w, cap);
  for (int64_t j = 0; j < w; j += wp) {
    int64_t nw = min64(wp, w - j), R = cap / nw;
    for (int64_t i = 0; i < h; i += R) {
      int64_t nr = min64(R, h - i);
      for (int64_t q = 0; q < nr; q++) {
        int e = read_full(pread_fn, fd, (char *)win + q * nw * ses, (size_t)(nw * ses),
                          base + ((i0 + i + q) * rw + j0 + j) * ses);
        if (e) return e;
      }
      unpack(win, es, nw, nr, nw, dst + i * ri + j * rj, ld, trans);
    }
  }
  return 0;
}

int cio_read_zstd(cio_pread_fn pread_fn, int fd, int64_t base, int64_t csize, size_t es,
                  int64_t cr, int64_t rw, int64_t i0, int64_t j0, int64_t h, int64_t w,
                  double *dst, int64_t ld, int trans, void *in, void *out, size_t win_bytes,
                  const char **why) {
  size_t rowbytes = (size_t)rw * es;
  int64_t R = (int64_t)(win_bytes / rowbytes);
  if (R < 1) {
    *why = "internal: decode window smaller than a chunk row";
    return CIO_EDECODE;
  }
  ZSTD_DCtx *d = ZSTD_createDCtx();
  if (!d) return ENOMEM;
  ZSTD_inBuffer ib = {in, 0, 0};
  ZSTD_outBuffer ob = {out, (size_t)R * rowbytes, 0};
  int64_t off = 0, row = 0;
  int rc = 0;
  for (;;) {
    if (ib.pos == ib.size && off < csize) {
      size_t len = (size_t)min64((int64_t)win_bytes, csize - off);
      rc = read_full(pread_fn, fd, in, len, base + off);
      if (rc) break;
      ib.size = len;
      ib.pos = 0;
      off += (int64_t)len;
    }
    size_t ret = ZSTD_decompressStream(d, &ob, &ib);
    if (ZSTD_isError(ret)) {
      *why = ZSTD_getErrorName(ret);
      rc = CIO_EDECODE;
      break;
    }
    int full = ob.pos == ob.size;
    if (full || ret == 0) {
      int64_t nrows = (int64_t)(ob.pos / rowbytes);
      if (ob.pos % rowbytes || row + nrows > cr) {
        *why = "the frame does not decode to the chunk's size";
        rc = CIO_EDECODE;
        break;
      }
      int64_t a = row > i0 ? row : i0, b = min64(row + nrows, i0 + h);
      if (a < b)
        unpack((const char *)out + ((size_t)(a - row) * rw + (size_t)j0) * es, es, rw, b - a, w,
               dst + (a - i0) * (trans ? ld : 1), ld, trans);
      row += nrows;
      ob.pos = 0;
    }
    if (ret == 0) break; /* the end of the frame, checksum verified */
    if (!full && ib.pos == ib.size && off >= csize) {
      *why = "the frame ends early (truncated chunk)";
      rc = CIO_EDECODE;
      break;
    }
  }
  ZSTD_freeDCtx(d);
  if (rc == 0 && row != cr) {
    *why = "the frame does not decode to the chunk's size";
    rc = CIO_EDECODE;
  }
  return rc;
}

/* ---- writes --------------------------------------------------------------------------------- */

size_t cio_zstd_bound(size_t bytes) { return ZSTD_compressBound(bytes); }

size_t cio_zstd_compress(int level, int workers, const void *src, size_t bytes, void *dst,
                         size_t cap) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  size_t n = 0;
  if (c && !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) &&
      !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1))) {
    /* a library built without threads refuses this: one thread compresses then. zstd's jobs
     * default to several MiB, so a chunk of a few MiB would be one job: at least two jobs per
     * worker, of at most 8 MiB (zstd raises a job below its minimum, 512 KiB) */
    if (workers > 1 && !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, workers))) {
      size_t job = bytes / (2 * (size_t)workers) + 1, most = (size_t)8 << 20;
      (void)ZSTD_CCtx_setParameter(c, ZSTD_c_jobSize, (int)(job < most ? job : most));
    }
    n = ZSTD_compress2(c, dst, cap, src, bytes);
  }
  ZSTD_freeCCtx(c);
  return (!c || ZSTD_isError(n)) ? 0 : n;
}
