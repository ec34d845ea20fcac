/* oocgemm.c: the blocked out-of-core product. See oocgemm.h for the schedule and its I/O. */
#include "solvers/oocgemm.h"

#include <math.h>
#include <string.h>

int64_t gemm_block(int64_t b, int64_t s) {
  if (b <= 0) return 0;
  return ooc_max64(b, s / b * b);
}

int64_t gemm_workspace_bytes(int64_t m, int64_t n, int64_t k, int64_t b, int64_t s) {
  s = gemm_block(b, s);
  int64_t mb = ooc_min64(s, m), nb = ooc_min64(s, n), kb = ooc_min64(s, k);
  return 8 * (mb * nb + mb * kb + kb * nb);
}

int64_t gemm_block_for(int64_t m, int64_t n, int64_t k, int64_t b, int64_t mem) {
  int64_t top = ooc_cdiv64(ooc_max64(m, ooc_max64(n, k)), b);
  if (top < 1 || gemm_workspace_bytes(m, n, k, b, b) > mem) return 0;
  int64_t lo = 1, hi = top; /* workspace grows with s: largest count of tiles that fits */
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (gemm_workspace_bytes(m, n, k, b, mid * b) <= mem) lo = mid;
    else hi = mid - 1;
  }
  return lo * b;
}

/* Tiles [t0, t1) x [u0, u1) of ts into buf (ld), global offsets relative to the block corner. */
static ooc_status_t read_block(tstore_t *ts, int64_t t0, int64_t t1, int64_t u0, int64_t u1,
                               double *buf, int64_t ld, int take) {
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t r0 = part_start(rp, t0), c0 = part_start(cp, u0);
  for (int64_t tj = u0; tj < u1; tj++)
    for (int64_t ti = t0; ti < t1; ti++) {
      double *dst = buf + (part_start(rp, ti) - r0) + (part_start(cp, tj) - c0) * ld;
      OOC_TRY(take ? ts_take(ts, ti, tj, dst, ld) : ts_read(ts, ti, tj, dst, ld));
    }
  return OOC_OK;
}

ooc_status_t gemm_run(ooc_ctx_t *ctx, const gemm_args_t *a, gemm_stats_t *stats) {
  tstore_t *A = a->A, *B = a->B, *C = a->C;
  if (!A || !B || !C || C == A || C == B)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: C must be a store distinct from A and B");
  part_t am = ts_rows(A), ak = ts_cols(A), bk = ts_rows(B), bn = ts_cols(B);
  part_t cm = ts_rows(C), cn = ts_cols(C);
  int64_t m = am.n, k = ak.n, n = bn.n, b = am.b;
  if (bk.n != k || cm.n != m || cn.n != n || ak.b != b || bk.b != b || bn.b != b || cm.b != b ||
      cn.b != b)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL,
                    "gemm: shapes (%lld x %lld)(%lld x %lld) -> %lld x %lld or tiles do not match",
                    (long long)m, (long long)k, (long long)bk.n, (long long)n, (long long)cm.n,
                    (long long)cn.n);
  gemm_stats_t local = {0};
  gemm_stats_t *gs = stats ? stats : &local;
  if (m == 0 || n == 0) return OOC_OK;
  const ooc_ops_t *o = a->ops;
  gemm_exec_t *ex = a->exec;
  int64_t s = gemm_block(b, a->block);
  int64_t sk = a->kblock > 0 ? gemm_block(b, a->kblock) : s;
  if (ex) { /* the executor's buffers bound the block and the panels */
    s = ooc_min64(s, ooc_max64(b, ooc_min64(ex->MB, ex->NB) / b * b));
    sk = ooc_min64(sk, ooc_max64(b, ex->KB / b * b));
  }
  int64_t st_ = s / b, kt_ = sk / b; /* tiles per block edge, per panel */
  int64_t MB = ooc_min64(s, m), NB = ooc_min64(s, n), KB = ooc_min64(sk, k);
  if (ex && (MB > ex->MB || NB > ex->NB || KB > ex->KB))
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "gemm: executor buffers %lld x %lld (k %lld) too small",
                    (long long)ex->MB, (long long)ex->NB, (long long)ex->KB);
  double *Cb = ex ? ex->cblk : ooc_malloc(ctx, (size_t)(MB * NB) * sizeof(double));
  double *Ap = ex ? NULL : ooc_malloc(ctx, (size_t)ooc_max64(1, MB * KB) * sizeof(double));
  double *Bp = ex ? NULL : ooc_malloc(ctx, (size_t)ooc_max64(1, KB * NB) * sizeof(double));
  ooc_status_t st = OOC_OK;
  if (!Cb || (!ex && (!Ap || !Bp))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the product's %lld x %lld block",
                  (long long)MB, (long long)NB);
    goto done;
  }
  const char *phase = a->phase ? a->phase : "multiply";
  double p0 = a->progress0, p1 = a->progress1 > a->progress0 ? a->progress1 : 1.0;
  int64_t nbi = ooc_cdiv64(cm.count, st_), nbj = ooc_cdiv64(cn.count, st_);
  int64_t nkp = ooc_cdiv64(ak.count, kt_);
  int slot = 0;
  int64_t done_blocks = 0;
  for (int64_t bi = 0; bi < nbi; bi++) {
    for (int64_t q = 0; q < nbj; q++) {
      /* serpentine over block columns: the B panels read last are read first again */
      int64_t bj = (bi % 2 == 0) ? q : nbj - 1 - q;
      int64_t t0 = bi * st_, t1 = ooc_min64(cm.count, t0 + st_);
      int64_t u0 = bj * st_, u1 = ooc_min64(cn.count, u0 + st_);
      int64_t r0 = part_start(cm, t0), c0 = part_start(cn, u0);
      int64_t mb = ooc_min64(s, m - r0), nb = ooc_min64(s, n - c0);
      double t_a = ooc_now();
      if (a->beta != 0.0) {
        OOC_CHECK(st = read_block(C, t0, t1, u0, u1, Cb, mb, 1));
      } else if (!ex) {
        memset(Cb, 0, (size_t)(mb * nb) * sizeof(double));
      }
      if (ex) OOC_CHECK(st = ex->begin(ex, mb, nb, a->beta != 0.0));
      gs->t_io += ooc_now() - t_a;
      for (int64_t kq = 0; kq < nkp; kq++) {
        int64_t kp = (done_blocks % 2 == 0) ? kq : nkp - 1 - kq;
        int64_t k0t = kp * kt_, k1t = ooc_min64(ak.count, k0t + kt_);
        int64_t kb = ooc_min64(sk, k - part_start(ak, k0t));
        double t1s = ooc_now();
        if (ex) {
          OOC_CHECK(st = ex->slot_wait(ex, slot));
          Ap = ex->apan[slot];
          Bp = ex->bpan[slot];
        }
        double t1r = ooc_now();
        OOC_CHECK(st = read_block(A, t0, t1, k0t, k1t, Ap, mb, 0));
        OOC_CHECK(st = read_block(B, k0t, k1t, u0, u1, Bp, kb, 0));
        double t2s = ooc_now();
        /* the first panel applies beta (C was read, or zeroed when beta == 0) */
        double beta = (kq == 0 && a->beta != 0.0) ? a->beta : 1.0;
        if (ex) {
          OOC_CHECK(st = ex->panel(ex, slot, mb, nb, kb, a->alpha, beta));
          slot = (slot + 1) % ex->nslots;
          gs->t_gemm += (t1r - t1s) + (ooc_now() - t2s); /* waiting for the device */
        } else {
          o->gemm('N', 'N', mb, nb, kb, a->alpha, Ap, mb, Bp, kb, beta, Cb, mb);
          gs->t_gemm += ooc_now() - t2s;
        }
        gs->t_io += t2s - t1r;
      }
      if (ex) {
        double t_e = ooc_now();
        OOC_CHECK(st = ex->end(ex, mb, nb));
        gs->t_gemm += ooc_now() - t_e;
      }
      if (nkp == 0 && a->beta != 0.0 && a->beta != 1.0) /* k == 0: C = beta C */
        for (int64_t i = 0; i < mb * nb; i++) Cb[i] *= a->beta;
      if (a->epilogue) OOC_CHECK(st = a->epilogue(a->user, r0, c0, mb, nb, Cb, mb));
      t_a = ooc_now();
      for (int64_t tj = u0; tj < u1; tj++)
        for (int64_t ti = t0; ti < t1; ti++)
          OOC_CHECK(st = ts_put(C, ti, tj,
                                Cb + (part_start(cm, ti) - r0) + (part_start(cn, tj) - c0) * mb,
                                mb));
      gs->t_io += ooc_now() - t_a;
      gs->blocks++;
      done_blocks++;
      OOC_CHECK(st = ooc_tick(ctx, phase, p0 + (p1 - p0) * done_blocks / (double)(nbi * nbj)));
    }
  }
  gs->flops += 2.0 * (double)m * (double)n * (double)k;
done:
  if (!ex) {
    ooc_free(ctx, Cb);
    ooc_free(ctx, Ap);
    ooc_free(ctx, Bp);
  }
  return st;
}

/* ---- probe check ------------------------------------------------------------------------- */

/* y (rows x p) += S t for the source S (rows x cols) streamed by column strips of w; also its
 * column abs sums into norm1 (max). */
static ooc_status_t stream_apply(const ooc_ops_t *o, const ooc_source_t *S, int64_t rows,
                                 int64_t cols, int64_t w, double *buf, const double *t,
                                 int64_t ldt, int64_t p, double *y, double *norm1, double *acc) {
  int64_t bi, bj;
  *norm1 = 0;
  for (int64_t c0 = 0; c0 < cols; c0 += w) {
    int64_t nc = ooc_min64(w, cols - c0);
    OOC_TRY(S->read(S->self, 0, c0, rows, nc, buf, rows));
    memset(acc, 0, (size_t)nc * sizeof(double));
    o->colabs(rows, nc, buf, rows, acc, &bi, &bj);
    for (int64_t c = 0; c < nc; c++) *norm1 = (acc[c] > *norm1 || acc[c] != acc[c]) ? acc[c] : *norm1;
    o->gemm('N', 'N', rows, p, nc, 1.0, buf, rows, t + c0, ldt, 1.0, y, rows);
  }
  return OOC_OK;
}

ooc_status_t gemm_check(ooc_ctx_t *ctx, const ooc_ops_t *o, int64_t m, int64_t n, int64_t k,
                        const ooc_source_t *A, const ooc_source_t *B, const ooc_source_t *C0,
                        const ooc_source_t *C, double alpha, double beta, double eps, int64_t mem,
                        double *ratio) {
  const int64_t p = 4;
  int64_t rows = ooc_max64(1, ooc_max64(m, k)), cols = ooc_max64(1, ooc_max64(n, k));
  /* the strip buffer, the reader's staging of the same size, and the probe vectors */
  int64_t w = ooc_max64(1, ooc_min64(cols, (mem - 8 * 4 * p * (rows + cols)) / 2 / (8 * rows)));
  ooc_status_t st = OOC_OK;
  double *buf = ooc_malloc(ctx, (size_t)(rows * w) * sizeof(double));
  double *acc = ooc_malloc(ctx, (size_t)w * sizeof(double));
  double *t = ooc_malloc(ctx, (size_t)(ooc_max64(1, n) * p) * sizeof(double));
  double *u = ooc_calloc(ctx, (size_t)(ooc_max64(1, k) * p), sizeof(double));
  double *y = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  double *z = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  double *c = ooc_calloc(ctx, (size_t)(ooc_max64(1, m) * p), sizeof(double));
  *ratio = NAN;
  if (!buf || !acc || !t || !u || !y || !z || !c) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the product's check");
    goto done;
  }
  uint64_t s = 0xD1B54A32D192ED03ULL; /* fixed LCG: reproducible probes */
  for (int64_t i = 0; i < n * p; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t[i] = (s >> 63) ? 1.0 : -1.0;
  }
  double na = 0, nb = 0, nc0 = 0, ncc = 0;
  OOC_CHECK(st = stream_apply(o, B, k, n, w, buf, t, n, p, u, &nb, acc));   /* u = B t */
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.25));
  OOC_CHECK(st = stream_apply(o, A, m, k, w, buf, u, k, p, y, &na, acc));   /* y = A u */
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.5));
  if (C0) OOC_CHECK(st = stream_apply(o, C0, m, n, w, buf, t, n, p, z, &nc0, acc));
  OOC_CHECK(st = ooc_tick(ctx, "check", 0.75));
  OOC_CHECK(st = stream_apply(o, C, m, n, w, buf, t, n, p, c, &ncc, acc));  /* c = C t */
  OOC_CHECK(st = ooc_tick(ctx, "check", 1.0));
  double scale = (double)ooc_max64(k, 1) * eps *
                 (fabs(alpha) * na * nb + (C0 ? fabs(beta) * nc0 : 0.0)) * (double)n;
  double worst = 0;
  for (int64_t q = 0; q < p; q++) {
    double r = 0;
    for (int64_t i = 0; i < m; i++)
      r += fabs(c[i + q * m] - alpha * y[i + q * m] - (C0 ? beta * z[i + q * m] : 0.0));
    double v = scale > 0 ? r / scale : (r == 0 ? 0.0 : INFINITY);
    if (v != v || ncc != ncc) {
      worst = NAN;
      break;
    }
    worst = v > worst ? v : worst;
  }
  *ratio = worst;
done:
  ooc_free(ctx, buf);
  ooc_free(ctx, acc);
  ooc_free(ctx, t);
  ooc_free(ctx, u);
  ooc_free(ctx, y);
  ooc_free(ctx, z);
  ooc_free(ctx, c);
  return st;
}
