/*
 * readahead.h: one pass over a source (tstore.h's ooc_source_t: an input or an output file as
 * the checks read it) in column strips or row bands, the next one read in the background while
 * the caller works on this one (issue 27: a check's pass costs the larger of its reads and its
 * arithmetic, not their sum; the solve check's GEMM with m = 256 right-hand sides took as long
 * as its read, or longer, on the GPU hosts).
 *
 * Contract
 * - ra_begin(r, src, rows, c0, part, buf0, buf1): the pass reads column strips k = 0 ..
 *   part.count-1 (columns c0 + [part_start(part, k), +part_len), rows [0, rows), ld = rows) into
 *   buf0 and buf1 in turn; each buffer holds rows x part.b doubles. The read of strip 0 starts
 *   at once.
 * - ra_begin_rev: the same pass with the strips in decreasing order (the last first).
 * - ra_begin_rows(r, src, cols, part, buf0, buf1): the pass by row bands instead: band k is rows
 *   [part_start(part, k), +part_len) of all cols columns, ld = that band's rows.
 * - ra_begin_t / ra_begin_rows_t: the same passes with each strip transposed where the source
 *   has a transposed read (tstore.h read_t; r->trans says whether it has): a column strip as
 *   part.b x rows (ld = the strip's columns), a row band as cols x its rows (ld = cols). A file
 *   stores rows, so that read copies where the plain one transposes (issue 27: the checks'
 *   passes spent most of their read time transposing); the caller's arithmetic takes either.
 * - ra_next(r, &data): waits for the next strip and returns its read's status; on OOC_OK *data
 *   is the strip and the read of the one after it starts. The strip stays valid until the next
 *   ra_next or ra_end. Called at most part.count times. A failed ra_next leaves no read running
 *   (the caller may return at once).
 * - ra_end(r): waits for a read still running (after an early exit). Twice is harmless.
 * - While a read runs in the background the caller must not read any source nor use the
 *   context (allocate, fail, tick): a source's read uses the context (its error message, the
 *   allocator's count, the fault seam's I/O count) and HDF5, and neither is shared between
 *   threads. Arithmetic on its own buffers is what the caller does in between.
 * - Reads happen in strip order, one at a time, so the I/O the fault seam counts is in the
 *   same order as without read-ahead.
 */
#ifndef OOC_READAHEAD_H
#define OOC_READAHEAD_H

#include "base/parloop.h"
#include "tiling/tstore.h"

typedef struct readahead {
  const ooc_source_t *src;
  int by_rows;      /* row bands of `other` columns, else column strips of `other` rows */
  int reverse;      /* the strips in decreasing order */
  int trans;        /* each strip transposed (read_t) */
  int64_t other, c0;
  part_t part;
  double *buf[2];
  int64_t next;     /* the pass's step ra_next returns next (strip count-1-next when reverse) */
  ooc_status_t st;  /* the last read's status */
  ooc_task_t task;  /* the read of step `next`, while it runs */
} readahead_t;

void ra_begin(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
              double *buf0, double *buf1);
void ra_begin_rev(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
                  double *buf0, double *buf1);
void ra_begin_rows(readahead_t *r, const ooc_source_t *src, int64_t cols, part_t part,
                   double *buf0, double *buf1);
void ra_begin_t(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
                double *buf0, double *buf1);
void ra_begin_rows_t(readahead_t *r, const ooc_source_t *src, int64_t cols, part_t part,
                     double *buf0, double *buf1);
ooc_status_t ra_next(readahead_t *r, double **data);
void ra_end(readahead_t *r);

#endif
