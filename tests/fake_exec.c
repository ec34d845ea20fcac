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

static ooc_status_t fk_panel(gemm_exec_t *e, int slot, int c, int64_t mb, int64_t nb, int64_t kb,
                             double alpha, double beta) {
  fake_exec_t *f = (fake_exec_t *)e;
  if (c < 0 || c >= e->ncblk || !f->ready[slot] || f->state[c] == 0 || f->state[c] == 3 ||
      kb > e->KB || mb != f->mb[c] || nb != f->nb[c]) { /* filled without a wait, or no block */
    f->misuse++;
    return OOC_OK;
  }
  fk_load(f, c);
  f->ready[slot] = 0;
  f->busy[slot] = f->busy_polls;
  f->panels++;
  f->ops->gemm('N', 'N', mb, nb, kb, alpha, e->apan[slot], mb, e->bpan[slot], kb, beta, f->dev[c],
               mb);
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
                       .fetch = fk_fetch, .slot_busy = fk_busy};
  f->busy_polls = 2;
  for (int c = 0; c < ncblk; c++) {
    f->e.cblk[c] = malloc((size_t)(MB * NB) * sizeof(double));
    f->dev[c] = malloc((size_t)(MB * NB) * sizeof(double));
  }
  for (int sl = 0; sl < nslots; sl++) {
    f->e.apan[sl] = malloc((size_t)(MB * KB + 1) * sizeof(double));
    f->e.bpan[sl] = malloc((size_t)(KB * NB + 1) * sizeof(double));
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
  }
  free(f);
}
