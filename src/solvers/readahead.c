/* readahead.c: a pass over a source with the next strip read in the background. See readahead.h. */
#include "solvers/readahead.h"

/* Step r->next of the pass: its strip, into buffer next % 2. */
static void read_next(void *arg) {
  readahead_t *r = arg;
  int64_t k = r->next, s = r->reverse ? r->part.count - 1 - k : k;
  int64_t at = part_start(r->part, s), len = part_len(r->part, s);
  double *d = r->buf[k & 1];
  if (r->trans) /* the strip's transpose: ld = its columns */
    r->st = r->by_rows ? r->src->read_t(r->src->self, at, 0, len, r->other, d, r->other)
                       : r->src->read_t(r->src->self, 0, r->c0 + at, r->other, len, d, len);
  else
    r->st = r->by_rows ? r->src->read(r->src->self, at, 0, len, r->other, d, len)
                       : r->src->read(r->src->self, 0, r->c0 + at, r->other, len, d, r->other);
}

static void begin(readahead_t *r, const ooc_source_t *src, int by_rows, int64_t other, int64_t c0,
                  part_t part, double *buf0, double *buf1, int reverse, int trans) {
  *r = (readahead_t){.src = src, .by_rows = by_rows, .reverse = reverse,
                     .trans = trans && src->read_t, .other = other, .c0 = c0, .part = part,
                     .buf = {buf0, buf1}};
  if (part.count > 0) ooc_task_start(&r->task, read_next, r);
}

void ra_begin(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
              double *buf0, double *buf1) {
  begin(r, src, 0, rows, c0, part, buf0, buf1, 0, 0);
}

void ra_begin_t(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
                double *buf0, double *buf1) {
  begin(r, src, 0, rows, c0, part, buf0, buf1, 0, 1);
}

void ra_begin_rev(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
                  double *buf0, double *buf1) {
  begin(r, src, 0, rows, c0, part, buf0, buf1, 1, 0);
}

void ra_begin_rows(readahead_t *r, const ooc_source_t *src, int64_t cols, part_t part,
                   double *buf0, double *buf1) {
  begin(r, src, 1, cols, 0, part, buf0, buf1, 0, 0);
}

void ra_begin_rows_t(readahead_t *r, const ooc_source_t *src, int64_t cols, part_t part,
                     double *buf0, double *buf1) {
  begin(r, src, 1, cols, 0, part, buf0, buf1, 0, 1);
}

ooc_status_t ra_next(readahead_t *r, double **data) {
  ooc_task_wait(&r->task); /* step `next`, started by begin or the last ra_next */
  if (r->st != OOC_OK) return r->st;
  *data = r->buf[r->next & 1];
  /* the other buffer's strip (the step before) is done with: the caller asked for this one */
  if (++r->next < r->part.count) ooc_task_start(&r->task, read_next, r);
  return OOC_OK;
}

void ra_end(readahead_t *r) { ooc_task_wait(&r->task); }
