/* readahead.c: a pass over a source with the next strip read in the background. See readahead.h. */
#include "solvers/readahead.h"

/* Step k of the pass: its strip, into buffer k % 2. */
static ooc_status_t read_step(readahead_t *r, int64_t k) {
  int64_t s = r->reverse ? r->part.count - 1 - k : k;
  int64_t at = part_start(r->part, s), len = part_len(r->part, s);
  if (r->by_rows)
    return r->src->read(r->src->self, at, 0, len, r->other, r->buf[k & 1], len);
  return r->src->read(r->src->self, 0, r->c0 + at, r->other, len, r->buf[k & 1], r->other);
}

static void read_job(void *arg, int64_t k, int worker) {
  (void)k;
  (void)worker;
  readahead_t *r = arg;
  r->st = read_step(r, r->reading);
}

/* Step k read on a pool thread (or, if none is free, by the join on the caller's). */
static void start(readahead_t *r, int64_t k) {
  r->reading = k;
  r->st = OOC_OK;
  ooc_par_start(&r->g, 1, 1, read_job, r);
}

static void begin(readahead_t *r, const ooc_source_t *src, int by_rows, int64_t other, int64_t c0,
                  part_t part, double *buf0, double *buf1, int reverse) {
  *r = (readahead_t){.src = src, .by_rows = by_rows, .other = other, .c0 = c0, .part = part,
                     .buf = {buf0, buf1 ? buf1 : buf0}, .reverse = reverse, .reading = -1};
  if (buf1 && part.count > 0) start(r, 0);
}

void ra_begin(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
              double *buf0, double *buf1) {
  begin(r, src, 0, rows, c0, part, buf0, buf1, 0);
}

void ra_begin_rev(readahead_t *r, const ooc_source_t *src, int64_t rows, int64_t c0, part_t part,
                  double *buf0, double *buf1) {
  begin(r, src, 0, rows, c0, part, buf0, buf1, 1);
}

void ra_begin_rows(readahead_t *r, const ooc_source_t *src, int64_t cols, part_t part,
                   double *buf0, double *buf1) {
  begin(r, src, 1, cols, 0, part, buf0, buf1, 0);
}

ooc_status_t ra_next(readahead_t *r, double **data) {
  int64_t k = r->next++;
  ooc_status_t st;
  if (r->reading == k) {
    ooc_par_join(&r->g);
    r->reading = -1;
    st = r->st;
  } else { /* no read-ahead: read it here */
    st = read_step(r, k);
  }
  if (st != OOC_OK) return st;
  *data = r->buf[k & 1];
  /* the other buffer's strip (step k - 1) is done with: the caller asked for this one */
  if (r->buf[0] != r->buf[1] && k + 1 < r->part.count) start(r, k + 1);
  return OOC_OK;
}

void ra_end(readahead_t *r) {
  if (r->reading >= 0) {
    ooc_par_join(&r->g);
    r->reading = -1;
  }
}
