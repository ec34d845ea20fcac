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

/* Blocks of TB x TB elements for the plain C copies (no SSE2, or a source strided both ways):
 * both sides stay in L1 while a block is transposed. */
#define TB 32

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Blocks of TI elements down the destination's columns by TJ across, walked eight rows at a
 * time: eight rows by two columns are loaded, transposed by unpacklo/unpackhi and stored as two
 * runs of eight elements, all of one column's run before the other's, so that each destination
 * line is written whole by four consecutive stores (the columns on 64-byte lines when ds is a
 * multiple of 8: the rows above the first line are done apart, transpose_edge). Rectangles of
 * at least T_STREAM_BYTES write with streaming stores: they do not fit a cache, and a streaming
 * store does not read the line it fills first.
 *
 * Why, as measured on this project's 2-core VM (an AMD EPYC), 2026-11-30, one thread, with
 * tools/transpose_rate.c and /tmp variants of it (64-row windows of 4096-wide rows into a
 * 16384-row strip and back; best of 3, runs alternating, the machine noisy by +-15%):
 * - the blocks before, 16 rows by 64 columns with each column pair walked down its 16 rows,
 *   moved 4.4-4.6 GB/s unpacking and 4.1-4.2 packing; these move 5.3-5.5 and 6.5-6.6 (float32
 *   sides: 3.5 -> 5.0-5.3 unpacking, 2.4 -> 4.6-5.0 packing into float32);
 * - the writes set the pace: streaming stores of 128 bytes (16 rows) per column and visit,
 *   columns 128 KiB apart, moved 6.2 GB/s with no reads at all, 512 bytes per visit 11.5-13.7.
 *   The same 8-row kernel storing the two columns' pairs alternately (j, j + 1, j, ...) moved
 *   0.6-1.4 GB/s: a line's four stores must follow one another;
 * - taller blocks walked a column pair at a time read badly instead (64 rows: 3.4-3.7 GB/s
 *   reading alone, against 13 for 16: rows 32 KiB apart share cache sets, so a line is evicted
 *   before the next column pair needs it); walked eight rows at a time each source line is used
 *   up by four consecutive column pairs, whatever TI is, and TI only orders the writes: 64 x 64
 *   packed at 4.3-4.6, 128 x 64 4.9-5.0, 512 x 64 6.0-6.3, 1024 x 64 5.7-5.9, all 4096 rows
 *   3.8-4.0; 32 across packed slower (5.3-5.6 at 1024 rows), 128 across unpacked at 3.5-3.7;
 * - copying the source block into an L1 buffer first (64 x 16, 64 x 32, 32 x 32; with or
 *   without software prefetch) unpacked at 5.5 at best but packed at 2.1-4.7, below the blocks
 *   before in the same runs (4.4-5.3 into an aligned destination): not kept;
 * - with a 64-byte aligned destination (no partial lines at the windows' top and bottom)
 *   unpacking moves 5.4-5.6; the partial lines written by streaming or by plain stores made no
 *   difference.
 * On the GPU host's CPU (an Intel Xeon, the H200 host, 2026-11-30, the same tool, three runs
 * alternating with a build of the 16 x 64 blocks) the blocks before were a regression: 0.70-0.76
 * GB/s unpacking and packing, against 2.1-2.5 and 1.0-1.8 for the scalar 32 x 32 blocks in the
 * same runs; these move 2.0-2.3 unpacking (the scalar blocks' rate) and 3.4-4.1 packing.
 * The standalone prototype's 7.9-8.2 GB/s (session 18, lost) could not be reproduced by any
 * variant; a sequential SSE2 streaming copy moves 8.7-9.6 GB/s on that VM (memcpy 8.5-9.9), so
 * it was at the copy ceiling, which a transposition's scattered 512-byte runs do not reach. The
 * build was not the cause: Release compiles with -O3 (SSE2, the x86-64 baseline), transpose_any
 * is inlined into each variant with its element sizes folded, and the inner loops are the
 * movupd / unpcklpd / unpckhpd / movntpd expected (objdump -d). */
#define TI 512
#define TJ 64
#define T_STREAM_BYTES ((int64_t)1 << 20)

/* One element (float32 or float64) as a double. */
static inline double load1(const void *p, int f32) {
  return f32 ? (double)*(const float *)p : *(const double *)p;
}

#if defined(__SSE2__)
/* Two neighbouring elements of a row (float32 or float64) as two doubles, and back. */
static inline __m128d load2(const void *p, int f32) {
  return f32 ? _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p)))
             : _mm_loadu_pd(p);
}
static inline void store2(void *p, __m128d v, int f32, int nt) {
  if (f32) _mm_storel_epi64((__m128i *)p, _mm_castps_si128(_mm_cvtpd_ps(v)));
  else if (nt) _mm_stream_pd(p, v);
  else _mm_storeu_pd(p, v);
}
#endif

/* The transpose of an h x w row-major block (element (i, j) at s[i * ss + j]) into column-major
 * d (element (i, j) at d[i + j * ds]); sf32 / df32: that side holds float32 (the conversions
 * round to nearest, as a cast does). Always inlined into the three variants below, so that each
 * is compiled for its element sizes. */
#define T_SRC(i, j) (s + ((i) * ss + (j)) * ses)
#define T_DST(i, j) (d + ((i) + (j) * ds) * des)
#define T_ONE(i, j)                                                                             \
  do {                                                                                          \
    double v_ = load1(T_SRC(i, j), sf32);                                                       \
    if (df32) *(float *)T_DST(i, j) = (float)v_;                                                \
    else *(double *)T_DST(i, j) = v_;                                                           \
  } while (0)
#if defined(__SSE2__)
/* rows i, i + 1 by columns j, j + 1 (a 2 x 2 transpose); the destination on 16 bytes if nt */
#define T_PAIR(i, j)                                                                            \
  do {                                                                                          \
    __m128d a_ = load2(T_SRC(i, j), sf32), b_ = load2(T_SRC((i) + 1, j), sf32);                 \
    store2(T_DST(i, j), _mm_unpacklo_pd(a_, b_), df32, nt);                                     \
    store2(T_DST(i, (j) + 1), _mm_unpackhi_pd(a_, b_), df32, nt);                               \
  } while (0)

/* Rows [ia, ie) of columns [jb, je) (je - jb even) by pairs of rows, an odd last row by itself:
 * the rows off the destination's lines, a few at a block's top and bottom (the lines they
 * share with what lies above and below are written partly, whatever is done: by streaming or
 * by plain stores, the rates measured the same). */
static inline __attribute__((always_inline)) void
transpose_edge(const char *s, int64_t ss, int64_t ia, int64_t ie, int64_t jb, int64_t je,
               char *d, int64_t ds, int sf32, int df32, int nt) {
  const int64_t ses = sf32 ? 4 : 8, des = df32 ? 4 : 8;
  int64_t i2 = ia + ((ie - ia) & ~(int64_t)1);
  for (int64_t j = jb; j < je; j += 2) {
    for (int64_t i = ia; i < i2; i += 2) T_PAIR(i, j);
    if (i2 < ie) {
      T_ONE(i2, j);
      T_ONE(i2, j + 1);
    }
  }
}
#endif

static inline __attribute__((always_inline)) void
transpose_any(const void *src, int64_t ss, int64_t h, int64_t w, void *dst, int64_t ds, int sf32,
              int df32) {
  const int64_t ses = sf32 ? 4 : 8, des = df32 ? 4 : 8;
  const char *s = src;
  char *d = dst;
#if defined(__SSE2__)
  /* streaming stores for float64 destinations only (a float32 pair is 8 bytes) */
  int nt = !df32 && h * w * des >= T_STREAM_BYTES && ds % 2 == 0 && !((uintptr_t)d & 7);
  /* rows [0, ia): one row by itself, so that the rest is on 16 bytes; [ia, i0): pairs of rows
   * up to the columns' next line (when every column starts at the same place in a line: ds a
   * multiple of 8); [i0, i1): eight rows at a time; [i1, h): pairs again */
  int64_t ia = 0, i0 = 0;
  if (nt) {
    ia = ((uintptr_t)d & 15) ? 1 : 0;
    i0 = ds % 8 == 0 ? min64(h, (int64_t)((((uintptr_t)0 - (uintptr_t)d) & 63) / 8)) : ia;
  }
  int64_t i1 = i0 + ((h - i0) & ~(int64_t)7), w2 = w & ~(int64_t)1;
  for (int64_t ib = i0; ib == i0 || ib < i1; ib += TI) /* once at least, for the edges */
    for (int64_t jb = 0; jb < w2; jb += TJ) {
      int64_t ie = min64(ib + TI, i1), je = min64(jb + TJ, w2);
      if (ib == i0) { /* the top edge with the first block of these columns: its pages are hot */
        transpose_edge(s, ss, 0, ia, jb, je, d, ds, sf32, df32, nt); /* (a row alone: scalar) */
        transpose_edge(s, ss, ia, i0, jb, je, d, ds, sf32, df32, nt);
      }
      for (int64_t i = ib; i < ie; i += 8) /* eight rows: one line of each column */
        for (int64_t j = jb; j < je; j += 2) { /* column j's four stores, then column j + 1's */
          __m128d r0 = load2(T_SRC(i, j), sf32), r1 = load2(T_SRC(i + 1, j), sf32);
          __m128d r2 = load2(T_SRC(i + 2, j), sf32), r3 = load2(T_SRC(i + 3, j), sf32);
          __m128d r4 = load2(T_SRC(i + 4, j), sf32), r5 = load2(T_SRC(i + 5, j), sf32);
          __m128d r6 = load2(T_SRC(i + 6, j), sf32), r7 = load2(T_SRC(i + 7, j), sf32);
          store2(T_DST(i, j), _mm_unpacklo_pd(r0, r1), df32, nt);
          store2(T_DST(i + 2, j), _mm_unpacklo_pd(r2, r3), df32, nt);
          store2(T_DST(i + 4, j), _mm_unpacklo_pd(r4, r5), df32, nt);
          store2(T_DST(i + 6, j), _mm_unpacklo_pd(r6, r7), df32, nt);
          store2(T_DST(i, j + 1), _mm_unpackhi_pd(r0, r1), df32, nt);
          store2(T_DST(i + 2, j + 1), _mm_unpackhi_pd(r2, r3), df32, nt);
          store2(T_DST(i + 4, j + 1), _mm_unpackhi_pd(r4, r5), df32, nt);
          store2(T_DST(i + 6, j + 1), _mm_unpackhi_pd(r6, r7), df32, nt);
        }
      if (ie == i1) transpose_edge(s, ss, i1, h, jb, je, d, ds, sf32, df32, nt);
    }
  for (int64_t i = 0; i < h && w2 < w; i++) T_ONE(i, w2); /* an odd last column */
  if (nt) _mm_sfence(); /* streaming stores are weakly ordered: done before the caller says so */
#else
  for (int64_t ib = 0; ib < h; ib += TB)
    for (int64_t jb = 0; jb < w; jb += TB) {
      int64_t ie = min64(ib + TB, h), je = min64(jb + TB, w);
      for (int64_t j = jb; j < je; j++)
        for (int64_t i = ib; i < ie; i++) T_ONE(i, j);
    }
#endif
}
#undef T_PAIR
#undef T_ONE
#undef T_DST
#undef T_SRC

static void transpose_dd(const void *s, int64_t ss, int64_t h, int64_t w, void *d, int64_t ds) {
  transpose_any(s, ss, h, w, d, ds, 0, 0);
}
static void transpose_fd(const void *s, int64_t ss, int64_t h, int64_t w, void *d, int64_t ds) {
  transpose_any(s, ss, h, w, d, ds, 1, 0);
}
static void transpose_df(const void *s, int64_t ss, int64_t h, int64_t w, void *d, int64_t ds) {
  transpose_any(s, ss, h, w, d, ds, 0, 1);
}

void cio_unpack(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                int64_t ld) {
  if (es == 8) transpose_dd(src, rw, h, w, dst, ld);
  else transpose_fd(src, rw, h, w, dst, ld);
}

#if defined(__SSE2__)
/* One row of w elements into d by streaming stores (d holds doubles: 8-byte aligned, so one
 * element at most comes before the first 16-byte boundary). */
static void stream_row(const char *s, int f32, int64_t w, double *d) {
  const int64_t ses = f32 ? 4 : 8;
  int64_t j = ((uintptr_t)d & 15) && w > 0; /* the head element, by a plain store */
  if (j) d[0] = load1(s, f32);
  for (; j + 2 <= w; j += 2) _mm_stream_pd(d + j, load2(s + j * ses, f32));
  if (j < w) d[j] = load1(s + j * ses, f32);
}
#endif

void cio_unpack_t(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                  int64_t ld) {
#if defined(__SSE2__)
  /* A large block by streaming stores, as transpose_any's: it is not read again soon (a check's
   * strip: 512 MiB), and plain stores first read every destination line from memory (a check's
   * pass over a float32 file then moves ~1.4x the bytes, by count: page cache 4, strip 8 + 8,
   * product 8 per element, against 4 + 8 + 8) */
  if (h * w * 8 >= T_STREAM_BYTES) {
    for (int64_t i = 0; i < h; i++)
      stream_row((const char *)src + i * rw * (int64_t)es, es == 4, w, dst + i * ld);
    _mm_sfence(); /* streaming stores are weakly ordered: done before the caller says so */
    return;
  }
#endif
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
  if (rs == 1) { /* a column-major source: row j of its transpose is column j */
    if (es == 8) transpose_dd(src, cs, w, h, dst, rw);
    else transpose_df(src, cs, w, h, dst, rw);
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
