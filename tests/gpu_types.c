/*
 * gpu_types.c: LAPACK's test-matrix types at GPU sizes, on the GPU (issue 19's "the GPU host runs
 * the same types at n = 4096 and n = 16384 with small --gpu-mem"). Not a ctest (it needs a GPU
 * and minutes); tools/gpu_types.sh runs it on the GPU host.
 *
 *   gpu_types N [--gpu-mem BYTES] [--tile B] [--device cuda|cpu] [--gen] [--only ge|po]
 *             [--types I,J,..]   (only these type numbers, of each path run)
 *
 * Matrices: DLATMS types (tests/latms.h: dchkge 1-11, dchkpo 1-9), the base types generated
 * concurrently, one thread each, the others derived from them (latms_base). DLATMS is level-2 LAPACK (O(n^3) at memory speed: about a minute at n = 4096,
 * hours at 16384), so --gen replaces it by oocsolve's own `cond` generator (H1 D H2, the same
 * geometric singular values as DLATMS mode 3) for the dense conditioned and scaled types:
 * DGE 4, 8, 9, 10, 11 and DPO 2, 6, 7, 8, 9 (D's spread cond 2, sqrt(0.1/eps), 0.1/eps, then
 * cond 2 scaled to norm 0.25 safmin/eps and its reciprocal, as DLATB4 sets them).
 *
 * Per matrix, through the public API with the given device, --gpu-mem and tile, the default
 * check on (what a user gets):
 *   DGE: gj inverse, lu inverse, lu solve and auto solve (3 right-hand sides);
 *   DPO: gj inverse, chol inverse, chol solve.
 * Judged as test_lapack_types does: inverse ratio ||I - A X||_1 / (n ||A||_1 ||X||_1 eps) < 30
 * and, for gj and lu, <= 10 x LAPACK's getrf + getri ratio + 1e-3 (chol's is printed against
 * potrf + potri); solve HPL ratio < 16; the singular / not-SPD types stop with LAPACK's info and
 * leave no output; a run our own check refuses (OOC_ERR_ACCURACY) where LAPACK meets the
 * threshold is a failure. The ratios are computed here with BLAS from the written output.
 * Prints one line per case and a summary line "RESULT gpu_types n N ..."; exit 0 iff every case
 * passed, 77 if --device cuda finds no GPU.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"
#include "latms.h"
#include "base/base.h"
#include "oocsolve.h"
#include "testutil.h"

typedef struct mat {
  int po, imat, izero, info, want;
  double *A;
} mat_t;

static int g_n, g_gen;
static int64_t g_tile = 512, g_gpu_mem = 96 << 20;
static ooc_device_t g_dev = OOC_DEVICE_CUDA;
static int g_cases, g_passed;
static double g_worst_rel, g_worst_inv, g_worst_sol;

/* ||I - A X||_1 / (n ||A||_1 ||X||_1 eps) with BLAS (dget03's definition). */
static double inv_ratio(int n, const double *A, const double *X, double eps) {
  double *R = malloc((size_t)n * n * sizeof *R);
  if (!R) return NAN;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) R[i + (size_t)j * n] = i == j;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, -1.0, A, n, X, n, 1.0, R, n);
  double r = tu_norm1(n, R), a = tu_norm1(n, A), x = tu_norm1(n, X);
  free(R);
  return r / ((double)n * a * x * eps);
}

/* max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n), with BLAS. */
static double sol_ratio(int n, int m, const double *A, const double *X, const double *B,
                        double eps) {
  double *R = malloc((size_t)n * m * sizeof *R), ainf = 0, worst = 0;
  if (!R) return NAN;
  memcpy(R, B, (size_t)n * m * sizeof *R);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, m, n, 1.0, A, n, X, n, -1.0, R, n);
  double *rs = calloc((size_t)n, sizeof *rs);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) rs[i] += fabs(A[i + (size_t)j * n]);
  for (int i = 0; i < n; i++) ainf = rs[i] > ainf || isnan(rs[i]) ? rs[i] : ainf;
  free(rs);
  for (int j = 0; j < m; j++) {
    double r = 0, x = 0, b = 0;
    for (int i = 0; i < n; i++) {
      double v = fabs(R[i + (size_t)j * n]);
      r = v > r || isnan(v) ? v : r;
      x = fmax(x, fabs(X[i + (size_t)j * n]));
      b = fmax(b, fabs(B[i + (size_t)j * n]));
    }
    double q = r / (eps * (ainf * x + b) * n);
    worst = q > worst || isnan(q) ? q : worst;
  }
  free(R);
  return worst;
}

/* LAPACK's yardsticks on A: the getrf + getri (po: potrf + potri) inverse ratio and the
 * getrs (potrs) solve ratio on B. NaN where LAPACK reports a zero pivot. */
static void lapack_ratios(int n, int po, const double *A, const double *B, int m, double eps,
                          double *inv, double *sol) {
  double *F = malloc((size_t)n * n * sizeof *F), *X = malloc((size_t)n * m * sizeof *X);
  lapack_int *p = malloc((size_t)n * sizeof *p);
  memcpy(F, A, (size_t)n * n * sizeof *F);
  memcpy(X, B, (size_t)n * m * sizeof *X);
  lapack_int info = po ? LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, F, n)
                       : LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, F, n, p);
  if (info == 0)
    info = po ? LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, m, F, n, X, n)
              : LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', n, m, F, n, p, X, n);
  *sol = info == 0 ? sol_ratio(n, m, A, X, B, eps) : NAN;
  if (info == 0)
    info = po ? LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, F, n)
              : LAPACKE_dgetri(LAPACK_COL_MAJOR, n, F, n, p);
  if (po && info == 0)
    for (int j = 0; j < n; j++)
      for (int i = 0; i < j; i++) F[i + (size_t)j * n] = F[j + (size_t)i * n];
  *inv = info == 0 ? inv_ratio(n, A, F, eps) : NAN;
  free(F);
  free(X);
  free(p);
}

/* --gen: oocsolve's cond generator standing in for the dense DLATMS types (header). */
static double *gen_matrix(int po, int imat, int n) {
  double eps = DBL_EPSILON, badc2 = 0.1 / eps, small = 0.25 * (DBL_MIN / eps);
  int c8 = po ? 6 : 8; /* the first conditioned type */
  if (imat != (po ? 2 : 4) && (imat < c8 || imat > c8 + 3)) return NULL;
  double cond = imat == c8 ? sqrt(badc2) : imat == c8 + 1 ? badc2 : 2;
  double scale = imat == c8 + 2 ? small : imat == c8 + 3 ? 1 / small : 1;
  gen_spec_t s;
  gen_spec_default(&s, GEN_COND, n);
  s.cond = cond;
  s.symmetric = po;
  s.seed = (uint64_t)(100 * po + imat);
  double *A = malloc((size_t)n * n * sizeof *A);
  gen_t *g = NULL;
  ooc_ctx_t *ctx = NULL;
  if (!A || ooc_ctx_create(&ctx) != OOC_OK || gen_create(ctx, &s, &g) != OOC_OK) {
    fprintf(stderr, "gpu_types: cannot generate %s %d at n = %d\n", po ? "DPO" : "DGE", imat, n);
    exit(1);
  }
  gen_tile(g, 0, 0, n, n, A, n);
  gen_destroy(g);
  ooc_ctx_destroy(ctx);
  if (scale != 1)
    for (size_t i = 0; i < (size_t)n * n; i++) A[i] *= scale;
  return A;
}

static void *gen_thread(void *u) {
  mat_t *m = u;
  if (g_gen) {
    m->A = gen_matrix(m->po, m->imat, g_n);
    m->info = 0;
  } else { /* the base types (main) */
    m->A = latms_matrix(m->po, m->imat, g_n, &m->izero, &m->info);
  }
  return NULL;
}

static const char *mname(ooc_method_t m) {
  return m == OOC_METHOD_GJ ? "gj" : m == OOC_METHOD_CHOL ? "chol" : m == OOC_METHOD_LU ? "lu"
                                                                                      : "auto";
}

/* One run through the API, judged as the header says; prints one line. */
static void run_case(const mat_t *mt, const char *in, const char *rhs, const double *B, int m,
                     ooc_method_t method, int solve, double lap_inv, double lap_sol) {
  int n = g_n;
  char out[1100], what[160];
  snprintf(out, sizeof out, "%s.out.h5", in);
  snprintf(what, sizeof what, "%s %2d n %d %-4s %-7s tile %lld gpu-mem %lld", mt->po ? "DPO" : "DGE",
           mt->imat, n, mname(method), solve ? "solve" : "inverse", (long long)g_tile,
           (long long)g_gpu_mem);
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) exit(1);
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.method = method;
  o.device = g_dev;
  o.tile = g_tile;
  o.gpu_mem = g_gpu_mem;
  o.force = 1;
  ooc_report_t rep;
  memset(&rep, 0, sizeof rep);
  double t0 = ooc_now();
  ooc_status_t st = solve ? ooc_solve(ctx, in, rhs, out, &o, &rep) : ooc_invert(ctx, in, out, &o, &rep);
  double dt = ooc_now() - t0;
  if (st == OOC_ERR_NODEVICE) {
    printf("gpu_types: SKIPPED: %s\n", ooc_ctx_error(ctx));
    exit(77);
  }
  double lap = solve ? lap_sol : lap_inv, thr = solve ? 16 : 30, ratio = NAN;
  int ok;
  char verdict[400] = "";
  if (mt->izero) {
    ooc_status_t want = method == OOC_METHOD_CHOL ? OOC_ERR_NOT_SPD : OOC_ERR_SINGULAR;
    ok = st == want && rep.info == mt->izero && !tu_file_exists(out);
    snprintf(verdict, sizeof verdict, "%s info %lld (LAPACK's %d)%s", ooc_status_str(st),
             (long long)rep.info, mt->izero, tu_file_exists(out) ? ", output left" : "");
  } else if (st != OOC_OK) {
    ok = 0; /* refused: wrong wherever LAPACK meets the threshold, and every type here does */
    snprintf(verdict, sizeof verdict, "%s: %s (LAPACK %.3g)", ooc_status_str(st),
             ooc_ctx_error(ctx), lap);
  } else {
    int64_t r, c;
    double *X = tu_read_matrix(out, &r, &c);
    double eps = DBL_EPSILON / 2;
    ratio = !X ? NAN : solve ? sol_ratio(n, m, mt->A, X, B, eps) : inv_ratio(n, mt->A, X, eps);
    free(X);
    int rel_judged = !solve && method != OOC_METHOD_CHOL;
    int rel = !rel_judged || !(lap < thr) || ratio <= 10 * lap + 1e-3;
    ok = ratio < thr && rel;
    if (solve) g_worst_sol = fmax(g_worst_sol, ratio);
    else g_worst_inv = fmax(g_worst_inv, ratio);
    if (rel_judged && lap > 1e-3) g_worst_rel = fmax(g_worst_rel, ratio / lap);
    snprintf(verdict, sizeof verdict, "ratio %.3g LAPACK %.3g (x%.2g), own check %.3g",
             ratio, lap, lap > 0 ? ratio / lap : 0, rep.residual);
  }
  g_cases++;
  g_passed += ok;
  printf("%s %s: %s, %s, %.1f s\n", ok ? "pass" : "FAIL", what, verdict,
         rep.backend[0] ? rep.backend : "-", dt);
  fflush(stdout);
  ooc_ctx_destroy(ctx);
  remove(out);
}

int main(int argc, char **argv) {
  const char *only = NULL, *types = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu-mem") && i + 1 < argc) g_gpu_mem = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--tile") && i + 1 < argc) g_tile = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      g_dev = !strcmp(argv[++i], "cpu") ? OOC_DEVICE_CPU : OOC_DEVICE_CUDA;
    else if (!strcmp(argv[i], "--gen")) g_gen = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
    else if (argv[i][0] != '-') g_n = atoi(argv[i]);
    else {
      fprintf(stderr, "gpu_types: unknown argument '%s' (usage in tests/gpu_types.c)\n", argv[i]);
      return 2;
    }
  }
  if (g_n < 1) {
    fprintf(stderr, "usage: gpu_types N [--gpu-mem BYTES] [--tile B] [--device cuda|cpu] [--gen] "
                    "[--only ge|po]\n");
    return 2;
  }
  /* every type of the paths run, at [po * 11 + imat - 1]; `want`: run it (--types) */
  mat_t mats[22];
  int nm = 0, nwant = 0;
  for (int po = 0; po < 2; po++)
    for (int imat = 1; imat <= 11; imat++) {
      mat_t *mt = &mats[po * 11 + imat - 1];
      *mt = (mat_t){po, imat, 0, 0, 0, NULL};
      if ((only && strcmp(only, po ? "po" : "ge")) || imat > (po ? 9 : 11)) continue;
      char key[8];
      int len = snprintf(key, sizeof key, "%d", imat);
      mt->want = !types;
      for (const char *t = types; t && *t; t += strcspn(t, ",") + (t[strcspn(t, ",")] == ','))
        mt->want |= (int)strcspn(t, ",") == len && !strncmp(t, key, (size_t)len);
      nwant += mt->want;
    }
  /* DLATMS for the base types of the wanted ones only (--gen: the wanted ones), one thread each
   * with single-threaded BLAS (its level-2 calls would otherwise oversubscribe the cores); the
   * others are derived from their base (latms.h) */
  int gen[22] = {0};
  for (int k = 0; k < 22; k++)
    if (mats[k].want) gen[g_gen ? k : k - (mats[k].imat - latms_base(mats[k].po, mats[k].imat))] = 1;
  pthread_t th[22];
  double t0 = ooc_now();
  int threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  for (int k = 0; k < 22; k++)
    if (gen[k]) pthread_create(&th[k], NULL, gen_thread, &mats[k]), nm++;
  for (int k = 0; k < 22; k++)
    if (gen[k]) pthread_join(th[k], NULL);
  openblas_set_num_threads(threads);
  for (int k = 0; k < 22 && !g_gen; k++) {
    mat_t *mt = &mats[k];
    int base = latms_base(mt->po, mt->imat);
    if (!mt->want || base == mt->imat) continue;
    mat_t *bm = &mats[k - (mt->imat - base)];
    mt->info = bm->info;
    if (bm->A && (mt->A = malloc((size_t)g_n * g_n * sizeof *mt->A))) {
      memcpy(mt->A, bm->A, (size_t)g_n * g_n * sizeof *mt->A);
      mt->izero = latms_derive(mt->po, mt->imat, g_n, 1, mt->A);
    }
  }
  printf("gpu_types: %d matrices of n = %d generated (%s), %d types to run, in %.1f s\n", nm, g_n,
         g_gen ? "oocsolve's cond generator" : "DLATMS", nwant, ooc_now() - t0);
  char in[1024], rhs[1024];
  snprintf(in, sizeof in, "%s", tu_path("gt_a.h5"));
  snprintf(rhs, sizeof rhs, "%s", tu_path("gt_b.h5"));
  int m = 3, failed_gen = 0;
  double *B = malloc((size_t)g_n * m * sizeof *B);
  uint64_t s = 77;
  for (int i = 0; i < g_n * m; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    B[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  tu_write_matrix(rhs, "/B", g_n, m, B, 2);
  for (int k = 0; k < 22; k++) {
    mat_t *mt = &mats[k];
    if (!mt->want) {
      free(mt->A); /* a base generated for others only */
      continue;
    }
    if (mt->info) {
      printf("FAIL %s %d: DLATMS info %d\n", mt->po ? "DPO" : "DGE", mt->imat, mt->info);
      failed_gen++;
      continue;
    }
    if (!mt->A) continue; /* not generated at this size / by --gen */
    tu_write_matrix(in, "/A", g_n, g_n, mt->A, 2);
    double li = NAN, ls = NAN;
    if (!mt->izero) lapack_ratios(g_n, mt->po, mt->A, B, m, DBL_EPSILON / 2, &li, &ls);
    double lg = li;
    if (mt->po && !mt->izero) { /* gj is judged against getri, chol against potri */
      double dummy;
      lapack_ratios(g_n, 0, mt->A, B, m, DBL_EPSILON / 2, &lg, &dummy);
    }
    run_case(mt, in, rhs, B, m, OOC_METHOD_GJ, 0, lg, ls);
    if (mt->po) {
      run_case(mt, in, rhs, B, m, OOC_METHOD_CHOL, 0, li, ls);
      run_case(mt, in, rhs, B, m, OOC_METHOD_CHOL, 1, li, ls);
    } else {
      run_case(mt, in, rhs, B, m, OOC_METHOD_LU, 0, li, ls);
      run_case(mt, in, rhs, B, m, OOC_METHOD_LU, 1, li, ls);
      run_case(mt, in, rhs, B, m, OOC_METHOD_AUTO, 1, li, ls);
    }
    free(mt->A);
    remove(in);
  }
  remove(rhs);
  free(B);
  printf("RESULT gpu_types n %d (%s) tile %lld gpu-mem %lld device %s: %d cases, %d passed, %d "
         "failed; worst inverse ratio %.3g, worst solve ratio %.3g, worst gj/lu over LAPACK %.3g, "
         "%.0f s\n",
         g_n, g_gen ? "gen" : "DLATMS", (long long)g_tile, (long long)g_gpu_mem,
         g_dev == OOC_DEVICE_CUDA ? "cuda" : "cpu", g_cases + failed_gen, g_passed,
         g_cases + failed_gen - g_passed, g_worst_inv, g_worst_sol, g_worst_rel, ooc_now() - t0);
  return g_passed == g_cases && !failed_gen ? 0 : 1;
}
