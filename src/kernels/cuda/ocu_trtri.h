/*
 * ocu_trtri.h: inv(U) in place on the device for the upper triangle (non-unit) of a w x w block
 * (leading dimension ld), the first half of the executor's getri. Its own module so that the
 * benchmark (tests/bench_cuda.c, `bench_cuda trtri`) times exactly the code the executor runs.
 *
 * Variants (all recursive on inv([U11 U12; 0 U22]) = [inv(U11), -inv(U11) U12 inv(U22); 0,
 * inv(U22)], leaves of <= leaf columns to cusolverDnXtrtri, except OCU_TRTRI_CUSOLVER):
 *   rec      cuBLAS trsm (U12 := -U12 inv(U22)), recurse on U11, cuBLAS trmm in place (B == C)
 *            for U12 := inv(U11) U12, recurse on U22. No workspace. (The executor's original.)
 *   ws       as rec, but the trmm out of place into the workspace, a column chunk at a time,
 *            copied back (in-place trmm may be a slower path in cuBLAS).
 *   gemm     as rec, but the trsm and the trmm are themselves recursive down to gleaf, so the
 *            bulk is cublasDgemm on rectangular blocks; the leaves' trmm go through the
 *            workspace as in ws.
 *   trmm2    no trsm: recurse on U22 first, then U12 := -U12 inv(U22) by a right trmm through
 *            the workspace (row chunks), recurse on U11, U12 := inv(U11) U12 as in ws.
 *   cusolver cusolverDnXtrtri on the whole triangle (the peer; its info goes to dinfo).
 * The strictly lower part is never touched. A zero u_jj gives infs/NaNs (rec/ws/gemm/trmm2)
 * or info > 0 (cusolver and leaves): callers check the diagonal first.
 *
 * Every call is queued on the stream of h; sol must be on the same stream. The workspace is the
 * caller's (its pool's): NULL or too small (< 64 rows/columns of a chunk) means in place.
 */
#ifndef OOC_OCU_TRTRI_H
#define OOC_OCU_TRTRI_H

#include <cublas_v2.h>
#include <cusolverDn.h>
#include <stddef.h>
#include <stdint.h>

enum { OCU_TRTRI_REC, OCU_TRTRI_WS, OCU_TRTRI_GEMM, OCU_TRTRI_TRMM2, OCU_TRTRI_CUSOLVER,
       OCU_TRTRI_NVARIANTS };

/* The executor's choice when ex_cuda_config_t.trtri is NULL; `bench_cuda trtri` and `bench_cuda gj
 * ... trtri=` A/B it. One H200, ld 49152, best of 3 (TFLOP/s at w^3/3), w = 22528 / 26624 /
 * 32768: trmm2 leaf 256 39.8 / 41.8 / 43.5; trmm2 (512) 39.7 / 41.1 / 42.3; ws 35.1 / 37.5 /
 * 41.6; gemm 34.5 / 37.3 / 40.5; rec 30.6 / 33.7 / 38.4; cuSOLVER 10.6 / 12.1 / 14.3. */
#define OCU_TRTRI_DEFAULT "trmm2:256"

#define OCU_TRTRI_LEAF 512   /* default: blocks this small go to cuSOLVER */
#define OCU_TRTRI_SPLIT 256  /* default: the first half's width is rounded to a multiple */
#define OCU_TRTRI_GLEAF 1024 /* default: gemm's trsm/trmm recursions stop here */

typedef struct ocu_trtri_cfg {
  int variant;       /* OCU_TRTRI_* */
  int64_t leaf;      /* 0: OCU_TRTRI_LEAF */
  int64_t split;     /* 0: OCU_TRTRI_SPLIT */
  int64_t gleaf;     /* 0: OCU_TRTRI_GLEAF */
} ocu_trtri_cfg_t;

typedef struct ocu_trtri_ws {
  double *work;      /* device workspace (may be NULL) */
  int64_t work_elems;
  void *dsol;        /* cuSOLVER workspace: Xtrtri_bufferSize of the whole w x w (covers leaves) */
  size_t dsol_bytes;
  void *hsol;
  size_t hsol_bytes;
  int *dinfo;        /* cuSOLVER's info (device) */
} ocu_trtri_ws_t;

/* "rec", "ws", "gemm", "trmm2", "cusolver". */
const char *ocu_trtri_name(int variant);
/* A spec "NAME[:LEAF[:GLEAF[:SPLIT]]]" (e.g. "gemm:512:2048"); 0 on success, -1 if unknown. */
int ocu_trtri_parse(const char *spec, ocu_trtri_cfg_t *cfg);
/* "gemm leaf 512 gleaf 1024 split 256" into buf. */
const char *ocu_trtri_describe(const ocu_trtri_cfg_t *cfg, char *buf, size_t cap);

/* inv(U) in place as above. NULL on success, else the failing call (its status in *code). */
const char *ocu_trtri(cublasHandle_t h, cusolverDnHandle_t sol, double *U, int64_t w, int64_t ld,
                      const ocu_trtri_cfg_t *cfg, const ocu_trtri_ws_t *ws, int *code);

/* getri's second half (LAPACK's dgetri sweep, shared by the gj executor and the executor of
 * exec.h): with inv(U) in the upper triangle of the w x w block A and the unit L below it, one
 * block of columns [j, j+jb) of X L = inv(U), the blocks taken last to first (after block j,
 * columns >= j of A hold those of (LU)^-1): the strict lower part of those columns moves into
 * work (w x jb, ld w), one GEMM with the columns already done, one small trsm. On the stream
 * of h. NULL on success, else the failing call (its status in *code). */
const char *ocu_getri_block(cublasHandle_t h, double *A, int64_t lda, int64_t w, int64_t j,
                            int64_t jb, double *work, int *code);

#endif
