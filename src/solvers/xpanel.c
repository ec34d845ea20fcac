/* xpanel.c: a stripe's panel LU by chunks on an executor (xpanel.h). */
#include "solvers/xpanel.h"

ooc_status_t xpanel_update(ooc_exec_t *ex, int q, double *P, int64_t n, int64_t ldp, int64_t k0,
                           const int64_t *ipiv, int64_t d0, int64_t d1, int64_t a, int64_t a1) {
  int64_t cw = a1 - a;
  double *C = P + (a - k0) * ldp, *D = P + (d0 - k0) * ldp;
  if (ipiv && d0 < d1) OOC_TRY(ex_laswp(ex, q, cw, C, ldp, d0, d1, ipiv));
  OOC_TRY(ex_trsm(ex, q, 'L', 'L', 'N', 'U', d1 - d0, cw, 1.0, D + d0, ldp, C + d0, ldp));
  if (n - d1 > 0)
    OOC_TRY(ex_gemm(ex, q, 'N', 'N', n - d1, cw, d1 - d0, -1.0, D + d1, ldp, C + d0, ldp, 1.0,
                    C + d1, ldp));
  return OOC_OK;
}

ooc_status_t xpanel_getrf(ooc_exec_t *ex, int q, double *P, int64_t n, int64_t ldp, int64_t k0,
                          int64_t a, int64_t wc, int64_t *loc, int64_t *bad, double *diag,
                          ex_event_t *ev) {
  double *C = P + a + (a - k0) * ldp;
  OOC_TRY(ex_getrf(ex, q, n - a, wc, C, ldp, loc, bad));
  OOC_TRY(ex_get(ex, q, 1, wc, C, ldp + 1, diag, 1)); /* the diagonal: a stride of ldp + 1 */
  return ex_record(ex, q, ev);
}
