/* gemm_model.c: the out-of-core product's schedule replayed against rates. See gemm_model.h; the
 * order of calls is gemm_run's (oocgemm.c): a change there wants the same change here. */
#include "solvers/gemm_model.h"

#include "solvers/oocgemm.h"

#include <string.h>

gemm_rates_t gemm_rates_gpu(void) {
  /* H100 host, docs/NUMERICS.md: t_io 2.68 s for 126 GiB gathered and stored (50 GB/s); pinned
   * H2D ~50-55 GB/s alone, ~44 each way together; the DGEMM rate that makes the four measured
   * configurations come out within 1-6% (the in-core 65 TFLOP/s is a 0.13 s burst) */
  return (gemm_rates_t){.flops = 52e12, .gather = 50e9, .store = 50e9, .h2d = 50e9, .d2h = 44e9};
}

int64_t gemm_exec_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk) {
  return 8 * ((int64_t)ncblk * MB * NB + (int64_t)nslots * (MB * KB + KB * NB));
}

#define MAX_CHUNKS 32 /* >= the executor's chunks per block (16, + a group's + end()'s) */
#define NCHUNK 16     /* as oocgemm.c: copies back of ~nb / 16 columns */

typedef struct mpend {
  int active, c;
  int64_t u0, u1, c0, mb, nb, ucur, cols, queued;
  int nch;
  int64_t cend[MAX_CHUNKS]; /* columns back once chunk i is */
  double ctime[MAX_CHUNKS];
} mpend_t;

typedef struct msim {
  const gemm_rates_t *r;
  part_t cn;
  double h, tc, tg, tb, host, device, first, h2d, d2h;
} msim_t;

static void gather(msim_t *x, double bytes) { /* host fills, then the copy stream takes it */
  x->h += bytes / x->r->gather;
  x->host += bytes / x->r->gather;
  x->tc = (x->tc > x->h ? x->tc : x->h) + bytes / x->r->h2d;
  x->h2d += bytes;
}

static void gemm(msim_t *x, double flops) { /* after everything copied so far */
  if (flops <= 0) return;
  double t0 = x->tg > x->tc ? x->tg : x->tc;
  if (x->first < 0) x->first = t0;
  x->tg = t0 + flops / x->r->flops;
  x->device += flops / x->r->flops;
}

/* Columns [p->queued, j1) of the pending block go back after the products queued so far. */
static void back(msim_t *x, mpend_t *p, int64_t j1) {
  int64_t per = ooc_max64(1, ooc_cdiv64(p->nb, NCHUNK));
  for (int64_t c0 = p->queued; c0 < j1; c0 += per) {
    int64_t nc = ooc_min64(per, j1 - c0);
    double bytes = 8.0 * (double)p->mb * (double)nc;
    x->tb = (x->tb > x->tg ? x->tb : x->tg) + bytes / x->r->d2h;
    x->d2h += bytes;
    int q = p->nch < MAX_CHUNKS ? p->nch++ : MAX_CHUNKS - 1; /* never full (see MAX_CHUNKS) */
    p->cend[q] = c0 + nc;
    p->ctime[q] = x->tb;
  }
  p->queued = ooc_max64(p->queued, j1);
}

/* Offset in a block starting at element e0 of the boundary of tile t (t1: the block's edge, of
 * `size` elements, whose last tile may be short): oocgemm.c's row_off/col_off. */
static int64_t edge(part_t p, int64_t t, int64_t t1, int64_t e0, int64_t size) {
  return t >= t1 ? size : part_start(p, t) - e0;
}

static int64_t col_at(const msim_t *x, const mpend_t *p, int64_t u) {
  return edge(x->cn, u, p->u1, p->c0, p->nb);
}

/* store_upto (oocgemm.c): wait for the columns' copy back, then put them. */
static void store_upto(msim_t *x, mpend_t *p, int64_t u_end) {
  if (!p->active || u_end <= p->ucur) return;
  u_end = ooc_min64(u_end, p->u1);
  int64_t cs = col_at(x, p, p->ucur), ce = col_at(x, p, u_end);
  if (ce > p->cols) {
    for (int q = 0; q < p->nch; q++)
      if (p->cend[q] >= ce || q == p->nch - 1) {
        if (p->ctime[q] > x->h) x->h = p->ctime[q];
        break;
      }
    p->cols = ce;
  }
  double sec = 8.0 * (double)p->mb * (double)(ce - cs) / x->r->store;
  x->h += sec;
  x->host += sec;
  p->ucur = u_end;
  if (u_end == p->u1) p->active = 0;
}

/* A panel uploaded whole: one GEMM, or by column groups each sent back (multiply_uploaded). */
static void multiply(msim_t *x, mpend_t *cur, double kb, int by_cols) {
  int64_t ui = cur->u1 - cur->u0;
  int G = by_cols ? gemm_last_groups(ui) : 1;
  if (G <= 1) {
    gemm(x, 2.0 * (double)cur->mb * (double)cur->nb * kb);
    return;
  }
  for (int g = 0; g < G; g++) {
    int64_t j1 = col_at(x, cur, cur->u0 + gemm_piece(ui, G, g + 1));
    gemm(x, 2.0 * (double)cur->mb * (double)(j1 - cur->queued) * kb);
    back(x, cur, j1);
  }
}

void gemm_model(const gemm_shape_t *sh, const gemm_rates_t *r, gemm_pred_t *out) {
  memset(out, 0, sizeof *out);
  int64_t m = sh->m, n = sh->n, k = sh->k, b = sh->b;
  if (m <= 0 || n <= 0 || b <= 0 || sh->nslots < 1 || sh->ncblk < 1) return;
  part_t cm = part_make(m, b), cn = part_make(n, b), ak = part_make(k, b);
  int64_t s = gemm_block(b, sh->s), st = s / b, kt = gemm_block(b, sh->kb) / b;
  int64_t nbi = ooc_cdiv64(cm.count, st), nbj = ooc_cdiv64(cn.count, st);
  int64_t nkp = ooc_cdiv64(ak.count, kt);
  if (nbi * nbj * nkp > GEMM_MODEL_MAX_STEPS) { /* wider panels: the same bytes and flops */
    kt *= ooc_cdiv64(nbi * nbj * nkp, GEMM_MODEL_MAX_STEPS);
    nkp = ooc_cdiv64(ak.count, kt);
  }
  int ns = sh->nslots < GEMM_MAX_SLOTS ? sh->nslots : GEMM_MAX_SLOTS;
  int nc = sh->ncblk < GEMM_MAX_CBLK ? sh->ncblk : GEMM_MAX_CBLK;
  msim_t x = {.r = r, .cn = cn, .first = -1};
  double used[GEMM_MAX_SLOTS] = {0};
  mpend_t pd = {0};
  int slot = 0;
  int64_t seq = 0, nblocks = nbi * nbj;
  int64_t first_store = ooc_min64(ns - 1, nkp - 1);
  for (int64_t bi = 0; bi < nbi; bi++)
    for (int64_t q = 0; q < nbj; q++, seq++) {
      int64_t bj = (bi % 2 == 0) ? q : nbj - 1 - q;
      int64_t t0 = bi * st, t1 = ooc_min64(cm.count, t0 + st);
      int64_t u0 = bj * st, u1 = ooc_min64(cn.count, u0 + st);
      int64_t r0 = part_start(cm, t0), c0 = part_start(cn, u0);
      int64_t mb = ooc_min64(s, m - r0), nb = ooc_min64(s, n - c0);
      int64_t ti = t1 - t0, ui = u1 - u0;
      int c = (int)(seq % nc);
      int by_cols = (sh->ends & GEMM_END_LAST) && (seq == nblocks - 1 || nc == 1) && ui > 1;
      if (pd.active && pd.c == c) store_upto(&x, &pd, pd.u1);
      mpend_t cur = {.active = 1, .c = c, .u0 = u0, .u1 = u1, .c0 = c0, .mb = mb, .nb = nb,
                     .ucur = u0};
      if (sh->load) { /* ts_take_tiles, then the copy up ahead of the panels */
        double bytes = 8.0 * (double)mb * (double)nb;
        x.h += bytes / r->store;
        x.host += bytes / r->store;
        x.tc = (x.tc > x.h ? x.tc : x.h) + bytes / r->h2d;
        x.h2d += bytes;
      }
      for (int64_t kq = 0; kq < nkp; kq++) {
        int64_t kp = (seq % 2 == 0) ? kq : nkp - 1 - kq;
        int64_t k0t = kp * kt;
        double kb = (double)ooc_min64(kt * b, k - part_start(ak, k0t));
        if (used[slot] > x.h) x.h = used[slot];
        if ((sh->ends & GEMM_END_FIRST) && seq == 0 && kq < gemm_first_panels(ns)) {
          int P = gemm_first_pieces(ti, ui);
          for (int p = 0; p < P; p++) {
            int64_t ta = t0 + gemm_piece(ti, P, p), tb = t0 + gemm_piece(ti, P, p + 1);
            int64_t ua = u0 + gemm_piece(ui, P, p), ub = u0 + gemm_piece(ui, P, p + 1);
            double i0 = (double)edge(cm, ta, t1, r0, mb), i1 = (double)edge(cm, tb, t1, r0, mb);
            double j0 = (double)edge(cn, ua, u1, c0, nb), j1 = (double)edge(cn, ub, u1, c0, nb);
            gather(&x, 8.0 * kb * ((i1 - i0) + (j1 - j0)));
            if (kq == 0) {
              gemm(&x, 2.0 * (i1 - i0) * j1 * kb);
              gemm(&x, 2.0 * i0 * (j1 - j0) * kb);
            }
          }
          if (kq != 0) multiply(&x, &cur, kb, by_cols && kq == nkp - 1);
        } else {
          gather(&x, 8.0 * kb * (double)(mb + nb));
          multiply(&x, &cur, kb, by_cols && kq == nkp - 1);
        }
        used[slot] = x.tg;
        slot = (slot + 1) % ns;
        if (pd.active && kq >= first_store)
          store_upto(&x, &pd, pd.u0 + ooc_cdiv64((kq + 1 - first_store) * (pd.u1 - pd.u0),
                                                 nkp - first_store));
      }
      back(&x, &cur, nb); /* end(): what end_cols has not sent */
      store_upto(&x, &pd, pd.u1);
      pd = cur;
      if (nc == 1 || by_cols)
        for (int64_t u = u0 + 1; u <= u1; u++) store_upto(&x, &pd, u);
    }
  double last_gemm = x.tg;
  store_upto(&x, &pd, pd.u1);
  out->total = x.h;
  out->device = x.device;
  out->head = x.first < 0 ? 0 : x.first;
  out->tail = x.h - last_gemm;
  out->host = x.host;
  out->h2d_bytes = x.h2d;
  out->d2h_bytes = x.d2h;
  out->blocks = nblocks;
}

/* Largest block edge (multiple of b, at most top) whose buffers fit; 0 if none. */
static int64_t largest_block(int64_t m, int64_t n, int64_t k, int64_t b, int64_t top, int64_t kb,
                             int nslots, int ncblk, int64_t budget) {
  int64_t lo = 0, hi = top / b; /* bytes grow with the edge: bisect the count of tiles */
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2, t = mid * b;
    if (gemm_exec_bytes(ooc_min64(t, m), ooc_min64(t, n), ooc_min64(kb, k), nslots, ncblk) <=
        budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo * b;
}

int gemm_model_plan(int64_t m, int64_t n, int64_t k, int64_t b, int64_t budget, int ends, int load,
                    const gemm_rates_t *r, gemm_shape_t *best, gemm_pred_t *pred) {
  memset(best, 0, sizeof *best);
  if (pred) memset(pred, 0, sizeof *pred);
  if (b <= 0 || m <= 0 || n <= 0) return 0;
  int64_t top = ooc_cdiv64(ooc_max64(m, n), b) * b, kt = ooc_cdiv64(ooc_max64(k, 1), b) * b;
  int64_t kb = ooc_min64(b, kt), Tm = ooc_cdiv64(m, b), Tn = ooc_cdiv64(n, b);
  /* The score is the worse of the rates given and a host GEMM_MODEL_SLOW_HOST times as fast:
   * plans a few ms apart at the given rates can move a third more bytes through the host (more
   * blocks), and the host is what varies (first touch of C's tiles, a loaded machine, another
   * host's memory), so the plan that stays fast when the host is slower wins */
  gemm_rates_t slow = *r;
  slow.gather *= GEMM_MODEL_SLOW_HOST;
  slow.store *= GEMM_MODEL_SLOW_HOST;
  double best_t = 0;
  gemm_pred_t bp = {0};
  for (int nc = 1; nc <= 2; nc++)
    for (int ns = 2; ns <= 3; ns++) {
      int64_t tmax = largest_block(m, n, ooc_max64(k, 1), b, top, kb, ns, nc, budget);
      if (tmax == 0) continue;
      /* candidates, largest first: tmax, and for each dimension the even split into as many
       * blocks as tmax needs and up to two more */
      int64_t cand[8];
      int nc_ = 0;
      cand[nc_++] = tmax;
      for (int d = 0; d < 2; d++) {
        int64_t T = d ? Tn : Tm, j0 = ooc_cdiv64(T, tmax / b);
        for (int64_t j = j0; j < j0 + 3; j++) {
          int64_t t = ooc_cdiv64(T, j) * b, dup = 0;
          for (int i = 0; i < nc_; i++) dup |= cand[i] == t;
          if (!dup && t <= tmax && t >= b) cand[nc_++] = t;
        }
      }
      for (int i = 1; i < nc_; i++) /* largest first: ties keep the larger block */
        for (int j = i; j > 0 && cand[j] > cand[j - 1]; j--) {
          int64_t tmp = cand[j];
          cand[j] = cand[j - 1];
          cand[j - 1] = tmp;
        }
      for (int i = 0; i < nc_; i++) {
        gemm_shape_t sh = {.m = m, .n = n, .k = ooc_max64(k, 1), .b = b, .s = cand[i], .kb = kb,
                           .nslots = ns, .ncblk = nc, .ends = ends, .load = load};
        gemm_pred_t p, ps;
        gemm_model(&sh, r, &p);
        gemm_model(&sh, &slow, &ps);
        double t = p.total > ps.total ? p.total : ps.total;
        if (best->s == 0 || t < best_t * (1 - 1e-9)) {
          best_t = t;
          *best = sh;
          best->k = k;
          bp = p;
        }
      }
    }
  if (pred) *pred = bp;
  return best->s > 0;
}
