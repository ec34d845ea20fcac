/*
 * chunkio.h: the CPU side of direct chunk I/O for h5mat.c: the transposing copies between a row-major chunk (float32 or float64, little-endian as on disk) and the
 * solvers' column-major float64, and zstd frames read and written in bounded memory.
 *
 * Why a module of its own: HDF5 is not thread-safe, so h5mat.c keeps every HDF5 call on the
 * caller's thread and hands the byte work (pread of a chunk at the address HDF5 reported,
 * decompression, transposition, conversion, compression) to this module, which calls no HDF5 and
 * no allocator, counts no fault and touches no context state: it can run on any thread.
 *
 * Contract (h5mat.c runs these on the threads of base/parloop.h)
 * - cio_default_threads: online CPUs, at most CIO_MAX_THREADS.
 * - cio_unpack / cio_pack: an h x w block between a row-major buffer of `rw` elements per row
 *   (element size es = 4 or 8) and float64: unpack writes it column-major with leading dimension
 *   ld; pack reads element (i, j) at src[i * rs + j * cs] (column-major: rs = 1, cs = ld; a
 *   transposed source: rs = ld, cs = 1) and converts to float32 when es = 4 (round to nearest,
 *   as HDF5's conversion does).
 * - cio_unpack_t: the same block written transposed (w x h column-major, ld >= w: element (i, j)
 *   at dst[j + i * ld]), which is the row-major block itself: row copies, no transposition.
 * - cio_read_raw: the rows [i0, i0+h) x columns [j0, j0+w) of an uncompressed row-major block of
 *   rw elements per row stored at file offset `base`, read with `pread` (the ops table's, called
 *   without the fault gate: the caller passed it) into dst (column-major; with trans its
 *   transpose, as cio_unpack_t writes it). `win` bytes of scratch (at least one
 *   row) bound the reads. 0, or an errno; a read past the end of the file gives CIO_ESHORT.
 * - cio_read_zstd: the same block from one zstd frame of `csize` bytes at `base` that decodes to
 *   the whole cr x rw chunk; the frame is decoded to its end (its checksum is verified) in windows
 *   of whole rows, through `in`/`out` scratch of `win` bytes each. CIO_EDECODE with a static
 *   message in *why on a frame that does not decode to exactly the chunk.
 * - cio_zstd_compress: one frame with a content checksum (what zstd_filter.c writes), made by
 *   `workers` threads of zstd's own where the library has them (one frame either way); 0 on
 *   failure. cio_zstd_bound is the output capacity it needs.
 */
#ifndef OOC_CHUNKIO_H
#define OOC_CHUNKIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CIO_MAX_THREADS 8
#define CIO_ESHORT (-1)  /* the file ends inside the data */
#define CIO_EDECODE (-2) /* a zstd frame did not decode to the chunk */

typedef ssize_t (*cio_pread_fn)(int fd, void *buf, size_t len, off_t off);

int cio_default_threads(void);

void cio_unpack(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                int64_t ld);
void cio_unpack_t(const void *src, size_t es, int64_t rw, int64_t h, int64_t w, double *dst,
                  int64_t ld);
void cio_pack(const double *src, int64_t rs, int64_t cs, int64_t h, int64_t w, size_t es,
              void *dst, int64_t rw);

int cio_read_raw(cio_pread_fn pread_fn, int fd, int64_t base, size_t es, int64_t rw, int64_t i0,
                 int64_t j0, int64_t h, int64_t w, double *dst, int64_t ld, int trans, void *win,
                 size_t win_bytes);
int cio_read_zstd(cio_pread_fn pread_fn, int fd, int64_t base, int64_t csize, size_t es,
                  int64_t cr, int64_t rw, int64_t i0, int64_t j0, int64_t h, int64_t w,
                  double *dst, int64_t ld, int trans, void *in, void *out, size_t win_bytes,
                  const char **why);

size_t cio_zstd_bound(size_t bytes);
size_t cio_zstd_compress(int level, int workers, const void *src, size_t bytes, void *dst,
                         size_t cap);

#endif
