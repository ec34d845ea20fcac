/* fake_exec.c: see fake_exec.h. */
#include "fake_exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void fk_load(fake_exec_t *f, int c) {
  if (f->state[c] == 1) memcpy(f->dev[c], f->e.cblk[c], (size_t)(f->mb[c] * f->nb[c]) * 8);
  f->state[c] = 2;
}

static ooc_status_t fk_begin(gemm_exec_t *e, int c, int64_t mb, int64_t nb, int load) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (c < 0 || c >= e->ncblk || mb > e->MB || nb > e->NB || f->state[c] != 0) {
    f->misuse++;
    return OOC_OK;
  }
  f->mb[c] = mb;
  f->nb[c] = nb;
  f->ended[c] = 0;
  f->state[c] = load ? 1 : 2;
  if (!load) memset(f->dev[c], 0, (size_t)(mb * nb) * 8);
  return OOC_OK;
}

static ooc_status_t fk_wait(gemm_exec_t *e, int slot) {
  ((fake_exec_t *)e)->ready[slot] = 1;
  ((fake_exec_t *)e)->busy[slot] = 0;
  return OOC_OK;
}

static int fk_busy(gemm_exec_t *e, int slot) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (f->busy[slot] <= 0) return 0;
  f->busy[slot]--;
  f->polls_busy++;
  return 1;
}

/* Copy rows [i0, i1) of the host A panel and columns [j0, j1) of the host B panel "up". */
static void fk_copy_up(fake_exec_t *f, int slot, int64_t mb, int64_t kb, int64_t i0, int64_t i1,
                       int64_t j0, int64_t j1) {
  for (int64_t l = 0; l < kb && i1 > i0; l++)
    memcpy(f->devA[slot] + i0 + l * mb, f->e.apan[slot] + i0 + l * mb, (size_t)(i1 - i0) * 8);
  if (j1 > j0)
    memcpy(f->devB[slot] + j0 * kb, f->e.bpan[slot] + j0 * kb, (size_t)((j1 - j0) * kb) * 8);
  f->bytes_up += 8.0 * (double)kb * (double)((i1 - i0) + (j1 - j0));
  memset(f->up_rows[slot] + i0, 1, (size_t)(i1 - i0));
  memset(f->up_cols[slot] + j0, 1, (size_t)(j1 - j0));
}

/* A product on block c's columns [j0, j1) is legal only before they were ended. */
static int fk_block_ok(fake_exec_t *f, int c, int64_t mb, int64_t nb, int64_t j0, int64_t j1) {
  return c >= 0 && c < f->e.ncblk && f->state[c] != 0 && f->state[c] != 3 && mb == f->mb[c] &&
         nb == f->nb[c] && (j1 <= j0 || j0 >= f->ended[c]);
}

static void fk_slot_done(fake_exec_t *f, int slot) {
  if (f->uploads_this[slot] > 1) f->piece_panels++;
  if (f->parts_this[slot] > 1) f->split_panels++;
  f->uploads_this[slot] = 0;
  f->parts_this[slot] = 0;
  f->ready[slot] = 0;
  f->pieces[slot] = 0;
  memset(f->up_rows[slot], 0, (size_t)f->e.MB);
  memset(f->up_cols[slot], 0, (size_t)f->e.NB);
  f->busy[slot] = f->busy_polls;
  f->panels++;
}

static ooc_status_t fk_panel(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                             double alpha, double beta) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (!f->ready[slot] || f->pieces[slot] || kb > e->KB || !fk_block_ok(f, c, mb, nb, 0, nb)) {
    f->misuse++; /* filled without a wait, after pieces, or no block */
    return OOC_OK;
  }
  fk_load(f, c);
  fk_copy_up(f, slot, mb, kb, 0, mb, 0, nb);
  f->ops->gemm('N', 'N', mb, nb, kb, alpha, f->devA[slot], mb, f->devB[slot], kb, beta, f->dev[c],
               mb);
  f->flops += 2.0 * (double)mb * (double)nb * (double)kb;
  fk_slot_done(f, slot);
  return OOC_OK;
}

static ooc_status_t fk_upload(gemm_exec_t *e, int slot, int64_t mb, int64_t nb, int64_t kb,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (!f->ready[slot] || mb > e->MB || nb > e->NB || kb > e->KB || i0 < 0 || i1 < i0 || i1 > mb ||
      j0 < 0 || j1 < j0 || j1 > nb ||
      (f->pieces[slot] && (mb != f->up_mb[slot] || nb != f->up_nb[slot] || kb != f->up_kb[slot]))) {
    f->misuse++;
    return OOC_OK;
  }
  f->pieces[slot] = 1;
  f->uploads_this[slot]++;
  f->up_mb[slot] = mb;
  f->up_nb[slot] = nb;
  f->up_kb[slot] = kb;
  fk_copy_up(f, slot, mb, kb, i0, i1, j0, j1);
  f->uploads++;
  return OOC_OK;
}

static ooc_status_t fk_part(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                            int64_t i0, int64_t i1, int64_t j0, int64_t j1, double alpha,
                            double beta, int last) {
  fake_exec_t *f = (fake_exec_t *)e;
  int ok = f->ready[slot] && f->pieces[slot] && mb == f->up_mb[slot] && nb == f->up_nb[slot] &&
           kb == f->up_kb[slot] && i0 >= 0 && i0 <= i1 && i1 <= mb && j0 >= 0 && j0 <= j1 &&
           j1 <= nb && fk_block_ok(f, c, mb, nb, j0, j1);
  for (int64_t i = i0; ok && j1 > j0 && i < i1; i++) ok = f->up_rows[slot][i];
  for (int64_t j = j0; ok && i1 > i0 && j < j1; j++) ok = f->up_cols[slot][j];
  if (!ok) {
    f->misuse++;
    return OOC_OK;
  }
  fk_load(f, c);
  f->parts++;
  if (i1 > i0 && j1 > j0) {
    if (f->parts != f->skip_part)
      f->ops->gemm('N', 'N', i1 - i0, j1 - j0, kb, alpha, f->devA[slot] + i0, mb,
                   f->devB[slot] + j0 * kb, kb, beta, f->dev[c] + i0 + j0 * mb, mb);
    f->parts_this[slot]++;
    f->flops += 2.0 * (double)(i1 - i0) * (double)(j1 - j0) * (double)kb;
  }
  if (last) fk_slot_done(f, slot);
  return OOC_OK;
}

static ooc_status_t fk_end_cols(gemm_exec_t *e, int c, int64_t mb, int64_t nb, int64_t j0,
                                int64_t j1) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (!fk_block_ok(f, c, mb, nb, j0, j1) || j0 != f->ended[c] || j1 <= j0 || j1 > nb) {
    f->misuse++;
    return OOC_OK;
  }
  fk_load(f, c);
  if (j0 == 0) f->ended_early++;
  f->ended[c] = j1;
  f->end_cols++;
  return OOC_OK;
}

static ooc_status_t fk_end(gemm_exec_t *e, int c, int64_t mb, int64_t nb) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (c < 0 || c >= e->ncblk || f->state[c] == 0 || f->state[c] == 3 || mb != f->mb[c] ||
      nb != f->nb[c]) {
    f->misuse++;
    return OOC_OK;
  }
  fk_load(f, c);
  f->state[c] = 3;
  f->ended[c] = nb;
  f->back[c] = 0;
  for (int64_t i = 0; i < mb * nb; i++) e->cblk[c][i] = NAN; /* not back yet */
  return OOC_OK;
}

static ooc_status_t fk_fetch(gemm_exec_t *e, int c, int64_t cols) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (c < 0 || c >= e->ncblk || f->state[c] != 3 || cols < f->back[c] || cols > f->nb[c]) {
    f->misuse++;
    return OOC_OK;
  }
  int64_t mb = f->mb[c];
  memcpy(e->cblk[c] + f->back[c] * mb, f->dev[c] + f->back[c] * mb,
         (size_t)((cols - f->back[c]) * mb) * 8);
  f->back[c] = cols;
  f->fetches++;
  if (cols == f->nb[c]) f->state[c] = 0;
  return OOC_OK;
}

fake_exec_t *fake_exec_create(int nslots, int ncblk, int64_t MB, int64_t NB, int64_t KB,
                              const ooc_ops_t *ops) {
  fake_exec_t *f = calloc(1, sizeof *f);
  if (!f) abort();
  f->ops = ops;
  f->e = (gemm_exec_t){.nslots = nslots, .ncblk = ncblk, .MB = MB, .NB = NB, .KB = KB,
                       .begin = fk_begin, .slot_wait = fk_wait, .panel = fk_panel, .end = fk_end,
                       .fetch = fk_fetch, .slot_busy = fk_busy, .upload = fk_upload,
                       .part = fk_part, .end_cols = fk_end_cols};
  f->busy_polls = 2;
  for (int c = 0; c < ncblk; c++) {
    f->e.cblk[c] = malloc((size_t)(MB * NB) * sizeof(double));
    f->dev[c] = malloc((size_t)(MB * NB) * sizeof(double));
  }
  for (int sl = 0; sl < nslots; sl++) {
    f->e.apan[sl] = malloc((size_t)(MB * KB + 1) * sizeof(double));
    f->e.bpan[sl] = malloc((size_t)(KB * NB + 1) * sizeof(double));
    f->devA[sl] = malloc((size_t)(MB * KB + 1) * sizeof(double));
    f->devB[sl] = malloc((size_t)(KB * NB + 1) * sizeof(double));
    f->up_rows[sl] = calloc((size_t)MB + 1, 1);
    f->up_cols[sl] = calloc((size_t)NB + 1, 1);
    if (!f->devA[sl] || !f->devB[sl] || !f->up_rows[sl] || !f->up_cols[sl]) abort();
  }
  return f;
}

void fake_exec_destroy(fake_exec_t *f) {
  if (!f) return;
  for (int c = 0; c < f->e.ncblk; c++) {
    free(f->e.cblk[c]);
    free(f->dev[c]);
  }
  for (int sl = 0; sl < f->e.nslots; sl++) {
    free(f->e.apan[sl]);
    free(f->e.bpan[sl]);
    free(f->devA[sl]);
    free(f->devB[sl]);
    free(f->up_rows[sl]);
    free(f->up_cols[sl]);
  }
  free(f);
}
