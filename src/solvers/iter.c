/* iter.c: Newton-Schulz and order-7 hyperpower inversion on tile stores. See iter.h. */
#include "solvers/iter.h"

#include "base/parloop.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Horner coefficients of p after the leading x^8 - 15 x^7 (iter.h): Q_{i+1} = X Q_i + c_i I. */
static const double HORNER_C[7] = {93, -315, 651, -861, 735, -393, 120};

int iter_stores(int method) { return method == OOC_METHOD_HYPER7 ? 4 : 3; }

int64_t iter_own_bytes(int64_t n, int64_t b) {
  b = ooc_min64(b, n);
  return 8 * (3 * n + 2 * b * b);
}

int64_t iter_workspace_bytes(int64_t n, int64_t b, int64_t s) {
  return gemm_workspace_bytes(n, n, n, ooc_min64(b, n), s) + iter_own_bytes(n, b);
}

static double step_bound(int method, double r) {
  return method == OOC_METHOD_HYPER7 ? pow(r, 7) * (3 + r) * (3 + r) / 16 : r * r;
}

int iter_predict(int method, double r0, double goal) {
  if (!(r0 < 1)) return -1;
  int k = 0;
  for (double r = r0; r > goal && k < 1000; k++) r = step_bound(method, r);
  return k;
}

typedef struct it {
  ooc_ctx_t *ctx;
  const iter_args_t *a;
  iter_result_t *res;
  int64_t n, b;
  double *acc;   /* n column sums */
  double *rowabs, *diag;
  double *t1, *t2; /* b x b tile buffers */
  int step_products, step_done; /* progress within a step */
  int threads;                  /* for the epilogues: the online CPUs, at most 16 */
} it_t;

enum { EPI_RESID_NEWTON, EPI_RESID, EPI_VNORM, EPI_HORNER1, EPI_ADDDIAG };

typedef struct epi {
  it_t *it;
  int mode;
  double c;      /* added to the diagonal */
  tstore_t *X;   /* EPI_HORNER1: the X block is read from here */
} epi_t;

static void add_diag(double *blk, int64_t ld, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                     double c) {
  int64_t i0 = ooc_max64(r0, c0), i1 = ooc_min64(r0 + nr, c0 + nc);
  for (int64_t i = i0; i < i1; i++) blk[(i - r0) + (i - c0) * ld] += c;
}

static ooc_status_t epilogue(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                             double *blk, int64_t ld) {
  epi_t *e = user;
  it_t *it = e->it;
  switch (e->mode) {
  case EPI_RESID_NEWTON:
  case EPI_RESID:
    for (int64_t c = 0; c < nc; c++) {
      double s = 0;
      for (int64_t r = 0; r < nr; r++) {
        double *x = blk + r + c * ld;
        double d = (r0 + r == c0 + c) ? 1.0 - *x : -*x; /* entry of E = I - X */
        s += fabs(d);
        if (e->mode == EPI_RESID_NEWTON) *x = (r0 + r == c0 + c ? 1.0 : 0.0) + d; /* 2I - X */
      }
      it->acc[c0 + c] += s;
    }
    break;
  case EPI_VNORM: {
    int64_t bi, bj;
    it->a->ops->colabs(nr, nc, blk, ld, it->acc + c0, &bi, &bj);
    break;
  }
  case EPI_HORNER1: { /* blk = X X  ->  X X - 15 X + 93 I */
    part_t p = ts_rows(e->X);
    for (int64_t tj = part_index(p, c0); tj < ooc_cdiv64(c0 + nc, p.b); tj++)
      for (int64_t ti = part_index(p, r0); ti < ooc_cdiv64(r0 + nr, p.b); ti++) {
        int64_t tr = part_len(p, ti), tc = part_len(p, tj);
        OOC_TRY(ts_read(e->X, ti, tj, it->t1, tr));
        double *dst = blk + (part_start(p, ti) - r0) + (part_start(p, tj) - c0) * ld;
        for (int64_t c = 0; c < tc; c++)
          for (int64_t r = 0; r < tr; r++) dst[r + c * ld] -= 15.0 * it->t1[r + c * tr];
      }
    add_diag(blk, ld, r0, c0, nr, nc, e->c);
    break;
  }
  case EPI_ADDDIAG: add_diag(blk, ld, r0, c0, nr, nc, e->c); break;
  default: break;
  }
  return OOC_OK;
}

static double max_acc(const double *acc, int64_t n) {
  double m = 0;
  for (int64_t j = 0; j < n; j++) {
    if (isnan(acc[j])) return NAN;
    if (acc[j] > m) m = acc[j];
  }
  return m;
}

static void drop_all(tstore_t *ts) {
  part_t r = ts_rows(ts), c = ts_cols(ts);
  for (int64_t tj = 0; tj < c.count; tj++)
    for (int64_t ti = 0; ti < r.count; ti++) ts_drop(ts, ti, tj);
}

/* C = alpha A B with the given epilogue; acc is cleared first (the epilogues sum into it). */
static ooc_status_t product(it_t *it, tstore_t *A, tstore_t *B, tstore_t *C, double alpha,
                            epi_t *e) {
  const iter_args_t *a = it->a;
  memset(it->acc, 0, (size_t)it->n * sizeof(double));
  e->it = it;
  double f0 = (double)it->step_done / it->step_products;
  gemm_args_t g = {.A = A, .B = B, .C = C, .alpha = alpha, .beta = 0.0, .ops = a->ops,
                   .block = a->block, .kblock = a->kblock, .dev = a->dev, .devs = a->devs,
                   .ndev = a->ndev,
                   .epilogue = epilogue, .user = e, .phase = "iterate",
                   .progress0 = f0, .progress1 = f0 + 1.0 / it->step_products};
  /* the epilogues write disjoint columns of the block and of acc, so they may run on several
   * threads, except HORNER1, which reads X through the (single-threaded) tile store */
  if (e->mode != EPI_HORNER1) g.epilogue_threads = it->threads;
  ooc_status_t st = gemm_run(it->ctx, &g, &it->res->gemm);
  it->res->products++;
  it->step_done++;
  return st;
}

/* The pre-pass (row sums, diagonal) and V_0 into S. Returns ||V_0||_1 in *nv. */
static ooc_status_t start(it_t *it, tstore_t *V, double *nv) {
  const iter_args_t *a = it->a;
  tstore_t *A = a->A;
  part_t p = ts_rows(A);
  int64_t n = it->n;
  double scale = a->v0_scale > 0 ? a->v0_scale : 1.0;
  memset(it->rowabs, 0, (size_t)n * sizeof(double));
  for (int64_t tj = 0; tj < p.count; tj++)
    for (int64_t ti = 0; ti < p.count; ti++) {
      int64_t nr = part_len(p, ti), nc = part_len(p, tj), r0 = part_start(p, ti);
      OOC_TRY(ts_read(A, ti, tj, it->t1, nr));
      for (int64_t c = 0; c < nc; c++)
        for (int64_t r = 0; r < nr; r++) {
          double x = it->t1[r + c * nr];
          it->rowabs[r0 + r] += fabs(x);
          if (ti == tj && r == c) it->diag[r0 + r] = x;
        }
    }
  double ninf = 0;
  int dd = n > 0;
  for (int64_t i = 0; i < n; i++) {
    ninf = fmax(ninf, it->rowabs[i]);
    if (!(fabs(it->diag[i]) > it->rowabs[i] - fabs(it->diag[i]))) dd = 0;
  }
  double n1 = a->norm1_a;
  if (dd) {
    snprintf(it->res->start, sizeof it->res->start, "diagonal");
    *nv = 0;
    for (int64_t t = 0; t < p.count; t++) {
      int64_t len = part_len(p, t), r0 = part_start(p, t);
      memset(it->t1, 0, (size_t)(len * len) * sizeof(double));
      for (int64_t i = 0; i < len; i++) {
        it->t1[i + i * len] = scale / it->diag[r0 + i];
        *nv = fmax(*nv, fabs(it->t1[i + i * len]));
      }
      OOC_TRY(ts_put(V, t, t, it->t1, len));
    }
  } else if (a->spd) {
    snprintf(it->res->start, sizeof it->res->start, "identity");
    for (int64_t t = 0; t < p.count; t++) {
      int64_t len = part_len(p, t);
      memset(it->t1, 0, (size_t)(len * len) * sizeof(double));
      for (int64_t i = 0; i < len; i++) it->t1[i + i * len] = scale / n1;
      OOC_TRY(ts_put(V, t, t, it->t1, len));
    }
    *nv = scale / n1;
  } else {
    snprintf(it->res->start, sizeof it->res->start, "transpose");
    /* V = A^T / (||A||_1 ||A||_inf), divided one norm at a time: the product of the norms
     * overflows for entries around 1e+160 (and underflows around 1e-160), where a / ||A||_1 is
     * at most 1 and (a / ||A||_1) / ||A||_inf is of the size of the inverse's entries, which is
     * representable whenever A's norms are. */
    for (int64_t tj = 0; tj < p.count; tj++) /* V(ti, tj) = A(tj, ti)^T / n1 / ninf */
      for (int64_t ti = 0; ti < p.count; ti++) {
        int64_t nr = part_len(p, ti), nc = part_len(p, tj);
        OOC_TRY(ts_read(A, tj, ti, it->t1, nc));
        for (int64_t cc = 0; cc < nc; cc++)
          for (int64_t r = 0; r < nr; r++)
            it->t2[r + cc * nr] = it->t1[cc + r * nc] / n1 / ninf * scale;
        OOC_TRY(ts_put(V, ti, tj, it->t2, nr));
      }
    *nv = scale / n1; /* ||A^T||_1 / (||A||_1 ||A||_inf) = 1 / ||A||_1 */
  }
  return OOC_OK;
}

static const char *mname(const it_t *it) {
  return it->a->method == OOC_METHOD_HYPER7 ? "hyper7" : "newton";
}

/* "r_0 1.2, r_1 0.8, ..." (the last few) for messages. */
static void history(const it_t *it, int k, char *buf, size_t cap) {
  buf[0] = 0;
  int first = k >= 5 ? k - 4 : 0;
  size_t used = 0;
  for (int i = first; i <= k && i < it->res->nres; i++) {
    int w = snprintf(buf + used, cap - used, "%sr_%d = %.3g", i > first ? ", " : "", i,
                     it->res->res[i]);
    if (w < 0 || (size_t)w >= cap - used) break;
    used += (size_t)w;
  }
}

ooc_status_t iter_run(ooc_ctx_t *ctx, const iter_args_t *a, iter_result_t *res) {
  memset(res, 0, sizeof *res);
  res->ratio = NAN;
  if (a->method != OOC_METHOD_NEWTON && a->method != OOC_METHOD_HYPER7)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "iterative inverse: unknown method %d", a->method);
  it_t it = {.ctx = ctx, .a = a, .res = res, .threads = ooc_par_cpus(16)};
  part_t p = ts_rows(a->A);
  it.n = p.n;
  it.b = p.b;
  int64_t n = it.n, b = it.b;
  int ns = iter_stores(a->method);
  for (int i = 0; i < ns; i++)
    if (!a->S[i]) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "iterative inverse: %d stores needed", ns);
  ooc_status_t st = OOC_OK;
  it.acc = ooc_malloc(ctx, (size_t)ooc_max64(1, n) * sizeof(double));
  it.rowabs = ooc_malloc(ctx, (size_t)ooc_max64(1, n) * sizeof(double));
  it.diag = ooc_malloc(ctx, (size_t)ooc_max64(1, n) * sizeof(double));
  it.t1 = ooc_malloc(ctx, (size_t)ooc_max64(1, b * b) * sizeof(double));
  it.t2 = ooc_malloc(ctx, (size_t)ooc_max64(1, b * b) * sizeof(double));
  if (!it.acc || !it.rowabs || !it.diag || !it.t1 || !it.t2) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory for the iterative inverse (n = %lld)",
                  (long long)n);
    goto done;
  }
  /* store roles: v = V_k; the others are work (see iter.h) */
  int v = 0, w[3] = {1, 2, 3};
  double nv = 0;
  if (a->warm) {
    snprintf(res->start, sizeof res->start, "warm");
    nv = a->norm1_v0;
  } else {
    OOC_CHECK(st = start(&it, a->S[v], &nv));
  }
  const double eps = DBL_EPSILON / 2;
  int max_iter = a->max_iter > 0 ? a->max_iter : 100;
  double rp = NAN; /* r_{k-1} */
  char hist[256];
  for (int k = 0;; k++) {
    it.step_products = a->method == OOC_METHOD_HYPER7 ? 9 : 2;
    it.step_done = 0;
    /* X_k = A V_k and r_k = ||I - X_k||_1 (newton: X_k becomes 2I - X_k on the way) */
    tstore_t *V = a->S[v], *X = a->S[w[0]];
    epi_t e = {.mode = a->method == OOC_METHOD_NEWTON ? EPI_RESID_NEWTON : EPI_RESID};
    OOC_CHECK(st = product(&it, a->A, V, X, 1.0, &e));
    double r = max_acc(it.acc, n);
    double ratio = n > 0 ? r / ((double)n * a->norm1_a * nv * eps) : 0;
    if (k < OOC_MAX_ITER_REPORT) res->res[res->nres++] = r;
    res->iterations = k;
    res->ratio = ratio;
    res->norm1_v = nv;
    res->result = v;
    if (n == 0 || ratio < a->target) break;
    history(&it, k, hist, sizeof hist);
    if (!isfinite(r) || !isfinite(ratio)) {
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s diverged: ||I - A V_%d||_1 is not finite (%s); the iteration cannot "
                    "invert this matrix: use --method gj (general) or chol (SPD)",
                    mname(&it), k, hist);
      goto done;
    }
    if (a->warm && k == 0 && r >= 1) {
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s: the warm start is too far from the inverse: ||I - A V_0||_1 = %.3g >= 1, "
                    "so convergence is not guaranteed (a useful warm start has a residual well "
                    "below 1); run without --warm-start, or use --method gj (general) or chol "
                    "(SPD)", mname(&it), r);
      goto done;
    }
    if (k > 0 && rp < 1 && r >= rp) {
      if (ratio < a->accept) break; /* at the rounding floor and good enough */
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s stagnated at residual ratio %.3g after %d steps (%s): rounding limits "
                    "the iteration before the ratio reaches %g (the matrix is too ill-conditioned "
                    "for it in float64); use --method gj (general) or chol (SPD)",
                    mname(&it), ratio, k, hist, a->accept);
      goto done;
    }
    if (k > 0 && r > sqrt((double)n) * fmax(1.0, res->res[0])) {
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s diverged: ||I - A V_k||_1 grew beyond sqrt(n) max(1, r_0) (%s), which a "
                    "convergent iteration cannot do: the spectral radius of I - A V_0 is not below "
                    "1 for this matrix (e.g. symmetric but not positive definite); use --method "
                    "gj (general) or chol (SPD)", mname(&it), hist);
      goto done;
    }
    if (k >= max_iter) {
      st = OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s did not converge in %d steps (%s; residual ratio %.3g, needs < %g): the "
                    "matrix is ill-conditioned for the iteration; raise --max-iter, or use "
                    "--method gj (general) or chol (SPD)",
                    mname(&it), max_iter, hist, ratio, a->target);
      goto done;
    }
    /* the update */
    epi_t ev = {.mode = EPI_VNORM};
    if (a->method == OOC_METHOD_NEWTON) { /* V_{k+1} = V_k (2I - X_k) into w[1] */
      OOC_CHECK(st = product(&it, V, X, a->S[w[1]], 1.0, &ev));
      drop_all(X);
      drop_all(V);
      int nvn = w[1];
      w[1] = v;
      v = nvn;
    } else { /* Horner: Q into w[1], w[2] alternately; then V_k Q_7 / 16 */
      tstore_t *Q = a->S[w[1]], *Qn = a->S[w[2]];
      epi_t eh = {.mode = EPI_HORNER1, .c = HORNER_C[0], .X = X};
      OOC_CHECK(st = product(&it, X, X, Q, 1.0, &eh));
      for (int i = 1; i < 7; i++) {
        epi_t ed = {.mode = EPI_ADDDIAG, .c = HORNER_C[i]};
        OOC_CHECK(st = product(&it, X, Q, Qn, 1.0, &ed));
        drop_all(Q);
        tstore_t *t = Q;
        Q = Qn;
        Qn = t;
      }
      drop_all(X);
      OOC_CHECK(st = product(&it, V, Q, Qn, 1.0 / 16.0, &ev));
      drop_all(Q);
      drop_all(V);
      /* Qn holds V_{k+1}: find its index, the old V becomes work */
      int qi = Qn == a->S[w[1]] ? 1 : 2;
      int nvn = w[qi];
      w[qi] = v;
      v = nvn;
    }
    nv = max_acc(it.acc, n);
    rp = r;
  }
done:
  ooc_free(ctx, it.acc);
  ooc_free(ctx, it.rowabs);
  ooc_free(ctx, it.diag);
  ooc_free(ctx, it.t1);
  ooc_free(ctx, it.t2);
  return st;
}
