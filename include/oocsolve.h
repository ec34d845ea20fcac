/*
 * oocsolve.h: the stable public API of liboocsolve.
 *
 * oocsolve inverts and solves with dense matrices larger than GPU (and host) memory, read from and
 * written to HDF5. The comments in this header are the specification; docs/API.md expands on them.
 *
 * Conventions
 * - A matrix is named by a spec string "file.h5:/group/dset". Without ":/..." the file's only 2-D
 *   numeric dataset is used (several: the call fails and lists them). The matrix is the dataset as
 *   numpy/h5py shows it (row-major A[i, j]); indices in messages are 0-based, A[i, j].
 * - The input is never modified. An output is written to a temporary file next to it, verified by a
 *   residual check, and renamed into place only then: a file at the output path is complete.
 * - Every call returns an ooc_status_t; on failure ooc_ctx_error() gives a message that names the
 *   file, dataset and problem. Numerical failures follow LAPACK: report->info > 0 is the 1-based
 *   column whose pivot failed.
 * - Sizes and offsets are 64-bit everywhere.
 */
#ifndef OOCSOLVE_H
#define OOCSOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* OOC_API marks the public functions: the library is built with hidden visibility, so these are
 * the only symbols it exports. */
#ifndef OOC_API
#if defined(__GNUC__) || defined(__clang__)
#define OOC_API __attribute__((visibility("default")))
#else
#define OOC_API
#endif
#endif

#define OOC_VERSION_MAJOR 0
#define OOC_VERSION_MINOR 1
#define OOC_VERSION_PATCH 0
#define OOC_VERSION_STRING "0.1.0"

OOC_API const char *ooc_version(void);
/* How this library was built, one line: "CUDA plugin loaded from /usr/lib/liboocsolve_cuda.so
 * (toolkit 13.0.88)" or "CUDA plugin not loaded: why"; "HDF5 1.10.8; zstd 1.5.4; BLAS OpenBLAS
 * 0.3.21 ..." (the versions linked at run time where the library can ask). */
OOC_API const char *ooc_build_info(void);

/* Status codes. Values are pinned: never renumber, only append. */
typedef enum ooc_status {
  OOC_OK = 0,
  OOC_ERR_ARG = 1,         /* invalid argument or option value */
  OOC_ERR_NOMEM = 2,       /* a host allocation failed */
  OOC_ERR_BUDGET = 3,      /* --host-mem / --gpu-mem too small for this n and tile */
  OOC_ERR_IO = 4,          /* a read or write failed (message says which file) */
  OOC_ERR_FORMAT = 5,      /* not HDF5, dataset missing or ambiguous, not 2-D, not square, bad type */
  OOC_ERR_NONFINITE = 6,   /* NaN or Inf in the input */
  OOC_ERR_SINGULAR = 7,    /* singular to working precision; report->info = failing column */
  OOC_ERR_NOT_SPD = 8,     /* Cholesky met a non-positive pivot; report->info = leading minor */
  OOC_ERR_ACCURACY = 9,    /* the result failed its residual check; nothing was written */
  OOC_ERR_EXISTS = 10,     /* the output exists and force is not set */
  OOC_ERR_NOSPACE = 11,    /* disk full or quota exceeded */
  OOC_ERR_CORRUPT = 12,    /* checksum mismatch in scratch data or a corrupt input chunk */
  OOC_ERR_DEVICE = 13,     /* a GPU call failed */
  OOC_ERR_NODEVICE = 14,   /* --device cuda but no usable GPU */
  OOC_ERR_INTERRUPTED = 15,/* ooc_ctx_interrupt() or the progress callback asked to stop */
  OOC_ERR_INTERNAL = 16    /* a bug: please report it with the message */
} ooc_status_t;

/* The enum name ("OOC_ERR_SINGULAR") of a status; never NULL. */
OOC_API const char *ooc_status_str(ooc_status_t s);
/* The CLI's exit code for a status (docs/CLI.md lists them): 0 ok, 2 usage, 3 input, 4 numerical,
 * 5 output, 6 resources, 7 device, 130 interrupted, 70 internal. */
OOC_API int ooc_status_exit_code(ooc_status_t s);

/* ---- context ------------------------------------------------------------------------------- */

typedef struct ooc_ctx ooc_ctx_t;

/* Host allocator hooks. Every buffer the library allocates goes through them (the test suite
 * uses them to inject failures and to check that nothing leaks). */
typedef void *(*ooc_malloc_fn)(void *user, size_t bytes);
typedef void (*ooc_free_fn)(void *user, void *ptr);

/* Progress: phase is "read", "eliminate", "write", "check" ("iterate": one newton/hyper7 step,
 * "multiply": ooc_gemm's product); fraction in [0, 1] of that phase.
 * Return nonzero to stop the call at the next safe point (OOC_ERR_INTERRUPTED). */
typedef int (*ooc_progress_fn)(void *user, const char *phase, double fraction);

OOC_API ooc_status_t ooc_ctx_create(ooc_ctx_t **ctx);
OOC_API void ooc_ctx_destroy(ooc_ctx_t *ctx); /* NULL is fine */
OOC_API void ooc_ctx_set_allocator(ooc_ctx_t *ctx, ooc_malloc_fn m, ooc_free_fn f, void *user);
OOC_API void ooc_ctx_set_progress(ooc_ctx_t *ctx, ooc_progress_fn fn, void *user);
/* Steps of the running call's elimination (gj, chol inverse) done and in all, for progress
 * displays: 1 and *done, *total when known, 0 otherwise. Safe to call from the progress
 * callback. */
OOC_API int ooc_ctx_progress_step(const ooc_ctx_t *ctx, int64_t *done, int64_t *total);
/* Async-signal-safe: the running call stops at its next safe point with OOC_ERR_INTERRUPTED. */
OOC_API void ooc_ctx_interrupt(ooc_ctx_t *ctx);
/* Message of the last failure ("" after success). Valid until the next call on ctx. */
OOC_API const char *ooc_ctx_error(const ooc_ctx_t *ctx);
/* Host bytes currently allocated through the context, and the peak since the last reset. */
OOC_API int64_t ooc_ctx_host_bytes(const ooc_ctx_t *ctx);
OOC_API int64_t ooc_ctx_host_peak(const ooc_ctx_t *ctx);
OOC_API void ooc_ctx_reset_peak(ooc_ctx_t *ctx);

/* ---- options ------------------------------------------------------------------------------- */

/* auto: Cholesky for a symmetric matrix with a positive diagonal (falling back, with a notice, if
 * it is not positive definite), otherwise gj for inverses and lu for solves and log-determinants.
 * lu: LU with partial pivoting (LAPACK's getrf pivots; docs/NUMERICS.md): solve, factor (packed
 * L\U + pivots), solve from an LU factor file, logdet of a general matrix, inverse. newton (Newton-Schulz) and hyper7
 * (Soleymani's order-7 hyperpower) are the iterative inversions built on the out-of-core GEMM
 * (inverse only; they stop when the residual ratio is below half the check threshold, and fail
 * with OOC_ERR_ACCURACY when they diverge, stagnate or reach max_iter: docs/NUMERICS.md). */
typedef enum {
  OOC_METHOD_AUTO = 0, OOC_METHOD_GJ = 1, OOC_METHOD_CHOL = 2, OOC_METHOD_NEWTON = 3,
  OOC_METHOD_HYPER7 = 4, OOC_METHOD_LU = 5
} ooc_method_t;
typedef enum { OOC_DEVICE_AUTO = 0, OOC_DEVICE_CPU = 1, OOC_DEVICE_REF = 2, OOC_DEVICE_CUDA = 3 } ooc_device_t;
typedef enum { OOC_CHECK_AUTO = 0, OOC_CHECK_NONE = 1, OOC_CHECK_PROBE = 2, OOC_CHECK_FULL = 3 } ooc_check_t;
typedef enum { OOC_DTYPE_AUTO = 0, OOC_DTYPE_F32 = 1, OOC_DTYPE_F64 = 2 } ooc_dtype_t;

typedef struct ooc_opts {
  ooc_method_t method;
  ooc_device_t device;
  int64_t tile;          /* tile edge b; 0 = 4096. Clamped to n. The unit of I/O, caching, chunking */
  int64_t stripe;        /* columns eliminated per step (rounded to tiles); 0 = as wide as the budget allows */
  int64_t host_mem;      /* host byte budget; 0 = half of (the smallest of physical memory, the
                            cgroup (v2 or v1) limit and SLURM's allocation, less the process's
                            resident size at the call) (report->host_limit says which) */
  const char *scratch_dir; /* where spilled tiles go; NULL = the output's directory */
  int scratch_zstd;      /* zstd level for spilled tiles; 0 = uncompressed (checksummed either way) */
  const char *compress;  /* output compression: NULL or "none", "zstd[:level]", "deflate[:level]" */
  ooc_dtype_t out_dtype; /* AUTO = the input's floating type (integers give float64) */
  ooc_check_t check;     /* AUTO = full for n <= 2048, probe otherwise */
  double check_threshold;/* pass if residual ratio < this; 0 = 30 (inverse) or 16 (solve) */
  int force;             /* replace an existing output */
  int64_t gpu_mem;       /* device byte budget; 0 = free device memory minus a margin */
  int streams;           /* CUDA streams for transfers and compute; 0 = 3 */
  const char *trace;     /* write a Chrome/Perfetto trace (JSON) of copies and kernels here */
  int lower_only;        /* chol inverse: write the lower triangle only (zeros above) */
  const char *warm_start;/* newton/hyper7: start from this earlier inverse (spec string) */
  int max_iter;          /* newton/hyper7: iteration cap; 0 = 100 */
  int resume;            /* continue an interrupted run from the journal in the scratch dir */
  double checkpoint;     /* gj: out-of-core runs journal every step; in-core runs at most every
                            this many seconds (0 = 300). OOC_CHECKPOINT_EVERY_STEP: every step;
                            OOC_CHECKPOINT_NEVER: no journal (the run cannot be resumed) */
  int allow_fill;        /* read missing data (chunks never written, missing virtual-dataset
                            sources, short external raw files) as the dataset's fill value;
                            0 = refuse them with OOC_ERR_FORMAT naming the first missing block */
  int trans_a, trans_b;  /* read A (B) transposed: element (i, j) is the dataset's (j, i) */
  int keep_fill;         /* read values equal to a CF _FillValue/missing_value as numbers
                            (default: refuse the input, OOC_ERR_NONFINITE) */
  const char *history;   /* the output's `history` attribute after the date (the CLI: its
                            command line); NULL = the call and its inputs */
  int keep_failed;       /* a result that fails its residual check is kept, renamed
                            "<output without .h5>.rejected.h5" (replacing one there), never
                            under the output's name; the call still fails (OOC_ERR_ACCURACY) */
} ooc_opts_t;

#define OOC_CHECKPOINT_EVERY_STEP (-1.0)
#define OOC_CHECKPOINT_NEVER (-2.0)

OOC_API void ooc_opts_default(ooc_opts_t *o);

/* ---- report -------------------------------------------------------------------------------- */

#define OOC_MAX_ITER_REPORT 64

typedef struct ooc_report {
  char kind[16];         /* "inverse", "solve", "factor", "logdet", "gemm" */
  char method[16];       /* "gj", "chol", "newton", "hyper7" or "gemm" */
  char backend[16];      /* "cpu", "ref", "cuda" */
  char precision[8];     /* compute precision: "f64" */
  char out_dtype[8];     /* "f32" or "f64" */
  char output[1024];     /* "file.h5:/dset" written */
  int64_t n, nrhs, tile, stripe, steps;
  /* seconds; t_read includes the input's checks (finite values, norms, auto's symmetry pre-pass).
   * t_spill is the time of scratch reads and writes on the calling thread in every phase;
   * t_read, t_compute and t_write exclude it, so the four add up to the wall time from the
   * input to the written output (t_check and setup are outside; t_total has everything). */
  double t_read, t_compute, t_spill, t_write, t_check, t_total;
  double flops;          /* useful flops of the method (2n^3 for a GJ inverse) */
  double gflops;         /* flops / t_compute */
  int64_t bytes_input;   /* read from the input files */
  int64_t bytes_spilled; /* written to the scratch store */
  int64_t bytes_unspilled; /* read back from the scratch store */
  int64_t bytes_output;  /* written to the output (uncompressed size) */
  int64_t host_budget, host_peak;
  double norm1_a, norm1_x; /* ||A||_1, ||X||_1 (for an inverse their product is kappa_1(A)) */
  double residual;       /* residual ratio (LAPACK's definition, see docs/NUMERICS.md) */
  char check[8];         /* "full", "probe" or "none" */
  int64_t info;          /* > 0: 1-based column of the failed pivot (gj) or order of the
                            leading minor that is not positive (chol) */
  double logdet;         /* chol: log det A; lu: log|det A| (logdet_sign: its sign); NaN when not
                            computed */
  int iterations;        /* newton/hyper7: steps taken (updates V_k -> V_{k+1}); also on failure */
  double iter_residual[OOC_MAX_ITER_REPORT]; /* [k] = ||I - A V_k||_1 for k = 0 .. iterations
                                                (the first OOC_MAX_ITER_REPORT); NaN after */
  int64_t resumed_step;  /* --resume: the journal step the run continued from (0 = fresh run) */
  char warnings[1024];   /* "; "-separated notices */
  int64_t gemm_k;        /* ooc_gemm: the inner dimension (C is n x nrhs, A n x gemm_k) */
  char host_limit[512];  /* default host budget (opts->host_mem 0) and the limit it comes from:
                            "100.0 MiB = 50% of 400.0 MiB (the cgroup v2 limit (/sys/fs/cgroup/
                            .../memory.max)) less 198.5 MiB resident at start" */
  /* inverse check: ||I - A X||_1 itself (full) or Hager-Higham's estimate of it (probe: a lower
   * bound, docs/NUMERICS.md), and the products with I - A X it took (full: column blocks) */
  double residual_norm1;
  int check_products;
  char rejected[1024];   /* keep_failed: "file.h5:/dset" the rejected result was kept as, else "" */
  double pivot_growth;   /* lu: max|U| / max|A| (NaN when not computed) */
  int logdet_sign;       /* sign of det A with logdet = log|det A| (lu: +1 or -1; chol: +1;
                            0 when not computed) */
} ooc_report_t;

/* Human-readable report (several lines) and one JSON object. */
OOC_API void ooc_report_print(const ooc_report_t *r, FILE *f);
OOC_API void ooc_report_json(const ooc_report_t *r, ooc_status_t status, const char *error, FILE *f);

/* ---- the calls ----------------------------------------------------------------------------- */

/* Inverse of the square matrix at `input` written to `output` (spec strings as above; output
 * NULL = "<input stem>.inv.h5:/inverse"). report may be NULL. */
OOC_API ooc_status_t ooc_invert(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report);

/* X = A^-1 B for B with any number of columns, written to `output` (NULL = "<B stem>.x.h5:/X"). */
OOC_API ooc_status_t ooc_solve(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report);

/* Cholesky factor of the symmetric positive definite matrix at `input`: L lower triangular with
 * A = L L^T, written as an n x n dataset with zeros above the diagonal (output NULL =
 * "<input stem>.chol.h5:/L"), with attributes factor = "cholesky_lower", norm1_input = ||A||_1
 * and logdet_input = log det A. Verified (||L L^T - A|| ratio, docs/NUMERICS.md) before it is
 * renamed into place. Not SPD: OOC_ERR_NOT_SPD as for ooc_logdet.
 * opts->method OOC_METHOD_LU: PA = LU of any square matrix in LAPACK's layout (output NULL =
 * "<input stem>.lu.h5:/LU": unit-lower L below the diagonal, U on and above) and the 1-based
 * pivots as a 1-D int64 dataset beside it ("/ipiv" for "/LU", else "<dataset>_ipiv"; the matrix's
 * attribute "ipiv" names it), attributes factor = "lu", norm1_input, norminf_input,
 * logdet_input (log|det A|), logdet_sign, pivot_growth; verified by ||PA - LU|| (docs/CLI.md).
 * Singular: OOC_ERR_SINGULAR, report->info = the column (LAPACK's info). */
OOC_API ooc_status_t ooc_factor(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report);

/* X = A^-1 B from a Cholesky factor L of A (as ooc_factor writes it; any lower-triangular L with
 * a positive diagonal works, only its lower triangle is read): a forward and a backward solve,
 * no factorization. Output NULL = "<B stem>.x.h5:/X". The check forms A x as L (L^T x).
 * report->logdet = log det(L L^T).
 * An LU factor file (attribute factor = "lu", as ooc_factor with OOC_METHOD_LU writes it) is
 * recognised by that attribute (or opts->method OOC_METHOD_LU): X = U^-1 L^-1 P B, checked with
 * A x formed as P^T L (U x). */
OOC_API ooc_status_t ooc_solve_factor(ooc_ctx_t *ctx, const char *factor, const char *b,
                              const char *output, const ooc_opts_t *opts, ooc_report_t *report);

/* log det A of a symmetric positive definite matrix, by an out-of-core Cholesky factorization
 * (nothing is written). OOC_ERR_NOT_SPD (report->info = the leading minor) with --method chol.
 * With auto (a matrix not symmetric with a positive diagonal, or a failed Cholesky) or
 * OOC_METHOD_LU: log|det A| by LU, its sign in report->logdet_sign; singular: OOC_ERR_SINGULAR. */
OOC_API ooc_status_t ooc_logdet(ooc_ctx_t *ctx, const char *input, const ooc_opts_t *opts,
                        ooc_report_t *report, double *logdet);

/* C = alpha A B + beta C0, out of core: A (m x k), B (k x n) and C0 (m x n; NULL or "" = none,
 * beta then ignored) are spec strings, any of them larger than --host-mem. The product is written
 * to `output` (NULL = "<A stem>.gemm.h5:/C"), float32 only if every input is float32 (or
 * opts->out_dtype says so), verified by a probe check before it is renamed into place
 * (docs/NUMERICS.md: ratio < opts->check_threshold, default 30; OOC_CHECK_NONE skips it).
 * report: n = m, nrhs = n, gemm_k = k, stripe = the resident C block's edge, steps = C blocks. */
OOC_API ooc_status_t ooc_gemm(ooc_ctx_t *ctx, const char *a, const char *b, const char *c0,
                      const char *output, double alpha, double beta, const ooc_opts_t *opts,
                      ooc_report_t *report);

/* Parse a byte size: "512M", "2G", "1.5GiB", "4096" (bytes). Returns -1 if malformed. */
OOC_API int64_t ooc_parse_size(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* OOCSOLVE_H */
