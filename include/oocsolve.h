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
/* The host BLAS below this CPU's level: OpenBLAS (DYNAMIC_ARCH) chose a generic core (Prescott's
 * SSE3, Core2, Nehalem, ...) on a CPU with AVX2 and FMA, as it does on CPUs it does not know
 * (some GPU hosts' VMs: 103 GFLOP/s for the solve check's GEMM where SkylakeX's kernels gave
 * 460). Returns 1 with chosen = its core and better = the OPENBLAS_CORETYPE this CPU runs
 * (SkylakeX with AVX-512, else Haswell); 0 (both empty) when its choice looks right or cannot be
 * told. OpenBLAS reads OPENBLAS_CORETYPE once, when it loads: a program sets it and restarts
 * itself (oocsolve does, docs/CLI.md), or its user sets it before starting it. */
OOC_API int ooc_blas_advice(char *chosen, size_t chosen_cap, char *better, size_t better_cap);

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
/* Async-signal-safe, for a first Ctrl-C: a journaled run (docs/RELIABILITY.md) in its steps
 * finishes the step it is in (LU: the one after, when this one read ahead), checkpoints it and
 * returns OOC_ERR_INTERRUPTED, so that `resume` loses nothing; any other run (LU in a last step
 * begun with no checkpoint due, too), and any run asked a second time, stops as with
 * ooc_ctx_interrupt. Returns 1 when the run will finish its step first, 0 when it stops at once
 * (or no run is under way). */
OOC_API int ooc_ctx_request_stop(ooc_ctx_t *ctx);
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
 * with OOC_ERR_ACCURACY when they diverge, stagnate or reach max_iter: docs/NUMERICS.md).
 * rbt (solve only): a random butterfly transform U^T A V (seeded: opts->seed, depth
 * opts->rbt_depth), LU without pivoting, and refinement against the original A until every
 * right-hand side has max|r| < sqrt(n) max|x| ||A||_inf eps (at most max_iter steps, 0 = 30);
 * not converging is OOC_ERR_ACCURACY with the numbers, nothing written (docs/NUMERICS.md). */
typedef enum {
  OOC_METHOD_AUTO = 0, OOC_METHOD_GJ = 1, OOC_METHOD_CHOL = 2, OOC_METHOD_NEWTON = 3,
  OOC_METHOD_HYPER7 = 4, OOC_METHOD_LU = 5, OOC_METHOD_RBT = 6
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
  double checkpoint;     /* gj, chol, lu: journal after a step once this many seconds have
                            passed since the last (0 = 300), in core and out of core, never
                            after the last step. OOC_CHECKPOINT_EVERY_STEP: every step;
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
  int64_t seed;          /* rbt: the random butterflies' seed (the same seed, the same run) */
  int rbt_depth;         /* rbt: butterfly depth 1..6; 0 = 2 */
  double disk_read_bw;   /* bytes/s the input's disk reads (measured by the caller, e.g. dd with
                            direct I/O); with disk_write_bw the report's disk floor. 0 = no floor */
  double disk_write_bw;  /* bytes/s the output's disk writes; 0 = disk_read_bw */
  const char *devices;   /* the devices a call spreads over, "0,1,3" (issue 26); NULL or "" =
                            one device (GPU 0 on the CUDA backend: spreading does not pay at
                            every size yet, docs/PERFORMANCE.md). On
                            cpu/ref, "0,1" presents two host devices (each its own worker
                            threads and budget: the multi-device schedules without GPUs) */
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
  int64_t bytes_output;  /* written to the output (uncompressed, in its dtype: 4 or 8 bytes) */
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
  /* rbt (iterations: the refinement steps): the seed and depth run, n padded to rbt_n, the
   * backward error max_j max|r_j| / (||A||_inf max|x_j|) before and after refinement, the time
   * of each part (t_compute is their sum), LU's pivots below sqrt(eps) ||column||_1.
   * lu also gives t_factor and t_solve: its factorization's and its sweeps' seconds, inside
   * t_compute (which adds the executor's setup and teardown) */
  int64_t seed;
  int rbt_depth;
  int64_t rbt_n;
  double berr_before, berr_after;
  double t_transform, t_factor, t_solve, t_refine;
  int64_t tiny_pivots;
  /* The disk floor (opts->disk_read_bw given): the seconds the disk needs to read the input
   * once and write the output once, bytes_input / disk_read_bw + the output's bytes in its
   * dtype / disk_write_bw, and t_total / t_floor (docs/PERFORMANCE.md); 0 without bandwidths */
  double disk_read_bw, disk_write_bw, t_floor, floor_ratio;
  /* A gj or Cholesky inversion, or an LU factor (factor, logdet): the bytes its elimination
   * spilled to scratch and read back, and the model's most written (bytes_spill_model; gj and
   * chol: plan_spill_model, steps x the tiles the method keeps; LU: lu_spill_model, lu.h;
   * docs/ARCHITECTURE.md) and read back (bytes_unspill_model, at the end of the struct: the same
   * for gj and chol, more for LU, whose later steps read the earlier columns again). 0 for other
   * jobs, after a fallback, for resumed runs and for runs that wrote a checkpoint (each also
   * writes the cached tiles) */
  int64_t bytes_spill_model, bytes_spilled_elim, bytes_unspilled_elim;
  /* The residual check's rereads: the element bytes (uncompressed, in the files' dtypes) the
   * check read back from the input and the written output after the write (0 with --check
   * none; what the fused check formed during the load and the write is not counted: it read
   * nothing; docs/NUMERICS.md "What the check reads") */
  int64_t bytes_check_read;
  /* The devices the method ran on (issue 26; 0 when it ran on none: the CPU paths that use no
   * executor): per device its number, the seconds it ran operations (summed over its queues;
   * 0 where the backend does not measure it: CUDA), the bytes put to it and got back, and the
   * flops of the operations it ran. */
  int ndevices;
  int device_id[16];
  double device_busy[16];
  int64_t device_bytes_in[16], device_bytes_out[16];
  double device_flops[16];
  /* Per device (issue 18), in bytes: the most memory the device held at once for the method,
   * and the bound it was held to. On a GPU the budget is --gpu-mem itself (opts->gpu_mem; for
   * 0, the default it resolved: free memory less a margin), the number a user compares with
   * --gpu-mem, and the peak is everything the CUDA executor held of it: the method's buffers
   * and the executor's own part (cuBLAS workspaces, info, the operations' workspaces), so
   * device_peak[d] <= device_budget[d] always. On a host device (a method on host executors:
   * gj, several --devices on cpu/ref) the executor's workspace as planned and the most of it in
   * use. 0 where a device has no budget. Several executors on one device in one call (a
   * Cholesky that fell back to LU): the largest peak, the last budget; bytes and flops add up.
   * The report getters and the JSON's top-level "device_peak" and "device_budget" are the first
   * device's (device_peak[0]: the device every method that does not spread runs on); the JSON's
   * devices list has every device's as "peak" and "budget". */
  int64_t device_peak[16], device_budget[16];
  /* Tiles of A that went back to the input instead of to the scratch store (evicted unchanged
   * since the load: docs/ARCHITECTURE.md "A's tiles fall back on the input"), and the bytes
   * read back from the input for them. Not part of bytes_spilled / bytes_unspilled. */
  int64_t bytes_kept_in_input, bytes_reread_input;
  /* Seconds of the commit after the check: the output's attributes, its fsync (what the kernel
   * had not yet written to the disk) and the rename; in t_total, outside the phases above. */
  double t_commit;
  /* The model's most read back from scratch (see bytes_spill_model) */
  int64_t bytes_unspill_model;
  /* Strips of the input files a thread of the loads' own read ahead of their checks and stores
   * (docs/ARCHITECTURE.md, "read"; 0: every strip read on the caller's thread) */
  int64_t strips_read_ahead;
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

/* Least squares min ||A x - b||_2 (issue 24; docs/CLI.md "lstsq"): A (m x n, m >= n) and b
 * (m x nrhs, or a 1-D vector) are read once in row blocks and reduced by Householder QR into R
 * (n x n) and d = Q^T b, Q never formed; x = R^-1 d. Written to `output` (a file name; NULL =
 * "<A stem>.qr.h5"): the QR state file with /x, /R, /d, /residual_norms, /colmap (docs/CLI.md).
 * A rank-deficient A (R's diagonal against its columns' norms, docs/NUMERICS.md) is refused with
 * OOC_ERR_SINGULAR, report->info = the first dependent column + 1; nothing is written. Checked
 * (opts->check; auto: up to 2^28 elements of A; probe = full) by a second pass, ||A^T r|| ratio
 * below check_threshold (default 30), else OOC_ERR_ACCURACY; an x that overflows (R^-1 d not
 * finite) is OOC_ERR_ACCURACY whatever opts->check says. report: kind "lstsq", method "qr",
 * n, nrhs, gemm_k = m, tile = the rows per block, steps = blocks, residual = the check ratio.
 * R (and d) must fit --host-mem (on a GPU, --gpu-mem): else OOC_ERR_BUDGET. */
OOC_API ooc_status_t ooc_lstsq(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                               const ooc_opts_t *opts, ooc_report_t *report);

/* An update of a QR state file into a new one (`output` NULL = "<state stem>.u.h5"; the state file
 * is never changed): either add rows (add_a = U, p x n, and add_b = c, p x nrhs: folded into R
 * and d at O((n + p) n^2), whatever the rows before) or remove the original columns [c0, c1)
 * (0-based, end exclusive; R re-triangularised, A not read). x is solved again and written with
 * the new state. No residual check (A is not read): report->check = "none"; a state whose R, d
 * or residual norms are not finite is refused (OOC_ERR_NONFINITE; a negative norm:
 * OOC_ERR_FORMAT). */
OOC_API ooc_status_t ooc_lstsq_update(ooc_ctx_t *ctx, const char *state, const char *add_a,
                                      const char *add_b, int64_t c0, int64_t c1,
                                      const char *output, const ooc_opts_t *opts,
                                      ooc_report_t *report);

/* Columns added at the end of a QR state file's problem, into a new state file (`output` NULL =
 * "<state stem>.u.h5"; the state file is never changed): v = V (m x k, the state's m rows).
 * Q is not stored, so [A[:, colmap] V] and b are re-reduced, streamed (docs/NUMERICS.md "Adding
 * columns": Q^T V from R alone would square A's condition number): a = A and b = b (NULL: the
 * state's attributes input_a / input_b, which lstsq and remove-cols states carry; neither:
 * OOC_ERR_ARG). Refused: V's, A's or b's rows not the state's (OOC_ERR_FORMAT; a state with added
 * rows cannot be re-reduced), an A whose column norms are not the state's R's (OOC_ERR_FORMAT), a
 * new column dependent on the others (OOC_ERR_SINGULAR, info = its column + 1). The new
 * columns' /colmap numbers are A's column count + 0 .. k-1. Checked as ooc_lstsq checks. */
OOC_API ooc_status_t ooc_lstsq_add_cols(ooc_ctx_t *ctx, const char *state, const char *v,
                                        const char *a, const char *b, const char *output,
                                        const ooc_opts_t *opts, ooc_report_t *report);

/* ---- the stable ABI: opaque options and report (for bindings) -------------------------------
 *
 * ooc_opts_t and ooc_report_t above are structs: fine for C code compiled against this header,
 * but a binding that mirrors their layout breaks silently when a field is added. The calls below
 * never expose a layout: options are set by parameter number (pinned, never renumbered) or name
 * with queryable bounds, and a report is read by field number or name (the zstd pattern).
 * Bindings (python/, fortran/) use only these, and check ooc_abi_version() at load. */

/* Bumped whenever a function's signature or a pinned number below changes meaning; additions
 * (new parameters, fields, functions) keep it. A binding refuses a library whose value differs
 * from the one it was written for. */
#define OOC_ABI_VERSION 1
OOC_API int ooc_abi_version(void);

typedef struct ooc_options ooc_options_t;

/* Parameters (pinned). The names are the CLI's long options with '_' for '-' (docs/CLI.md). */
typedef enum ooc_param {
  OOC_PARAM_UNKNOWN = 0,
  OOC_PARAM_METHOD = 1,         /* int: ooc_method_t; str: auto gj chol newton hyper7 lu rbt */
  OOC_PARAM_DEVICE = 2,         /* int: ooc_device_t; str: auto cpu ref cuda */
  OOC_PARAM_TILE = 3,           /* int: 0 = default (4096) */
  OOC_PARAM_STRIPE = 4,         /* int: 0 = as wide as the budget allows */
  OOC_PARAM_HOST_MEM = 5,       /* int bytes, or str "8G"; 0 = default */
  OOC_PARAM_SCRATCH = 6,        /* str: scratch directory */
  OOC_PARAM_SCRATCH_ZSTD = 7,   /* int 0..22 */
  OOC_PARAM_COMPRESS = 8,       /* str: none, zstd[:level], deflate[:level] */
  OOC_PARAM_OUT_TYPE = 9,       /* int: ooc_dtype_t; str: auto f32 f64 */
  OOC_PARAM_CHECK = 10,         /* int: ooc_check_t; str: auto none probe full */
  OOC_PARAM_CHECK_THRESHOLD = 11, /* double: 0 = default (30 inverse, 16 solve) */
  OOC_PARAM_FORCE = 12,         /* int 0/1 */
  OOC_PARAM_GPU_MEM = 13,       /* int bytes, or str "16G"; 0 = default */
  OOC_PARAM_STREAMS = 14,       /* int 0..8; 0 = 3 */
  OOC_PARAM_TRACE = 15,         /* str: trace file */
  OOC_PARAM_TRIANGLE = 16,      /* int 0 full / 1 lower; str: full lower */
  OOC_PARAM_WARM_START = 17,    /* str: spec of an earlier inverse */
  OOC_PARAM_MAX_ITER = 18,      /* int 0..100000; 0 = 100 */
  OOC_PARAM_RESUME = 19,        /* int 0/1 */
  OOC_PARAM_CHECKPOINT = 20,    /* double seconds > 0, or OOC_CHECKPOINT_*; str: seconds, step, off */
  OOC_PARAM_ALLOW_FILL = 21,    /* int 0/1 */
  OOC_PARAM_TRANS_A = 22,       /* int 0/1 */
  OOC_PARAM_TRANS_B = 23,       /* int 0/1 */
  OOC_PARAM_KEEP_FILL = 24,     /* int 0/1 */
  OOC_PARAM_HISTORY = 25,       /* str */
  OOC_PARAM_KEEP_FAILED = 26,   /* int 0/1 */
  OOC_PARAM_SEED = 27,          /* int >= 0: rbt's seed */
  OOC_PARAM_RBT_DEPTH = 28,     /* int 0..6; 0 = 2 */
  OOC_PARAM_DISK_READ_BW = 29,  /* double bytes/s, or str "1.2G"; 0 = no disk floor */
  OOC_PARAM_DISK_WRITE_BW = 30, /* double bytes/s, or str; 0 = the read bandwidth */
  OOC_PARAM_DEVICES = 31        /* str: "0,1,..." device numbers; "" = the default (opts.devices) */
} ooc_param_t;

typedef enum { OOC_PTYPE_NONE = 0, OOC_PTYPE_INT = 1, OOC_PTYPE_DOUBLE = 2, OOC_PTYPE_STR = 3 } ooc_ptype_t;

/* Parameters are numbered 1 .. ooc_param_count(); name "tile" -> OOC_PARAM_TILE (UNKNOWN if
 * none); the name of a number (NULL if none); its type; its bounds (OOC_ERR_ARG for an unknown
 * parameter or a string one). */
OOC_API int ooc_param_count(void);
OOC_API ooc_param_t ooc_param_lookup(const char *name);
OOC_API const char *ooc_param_name(ooc_param_t p);
OOC_API ooc_ptype_t ooc_param_type(ooc_param_t p);
OOC_API ooc_status_t ooc_param_bounds(ooc_param_t p, double *lo, double *hi);

/* A set of options, at the defaults of ooc_opts_default. Strings are copied. Every setter checks
 * the type and the bounds: OOC_ERR_ARG with ooc_opts_error() naming the parameter, the value and
 * what is allowed; the option keeps its value then. set_int on a double parameter and
 * set_double on an integer one (an integral value) convert; set_str parses the CLI's syntax for
 * every parameter (sizes "8G", enum names, "step"/"off"). Getters: OOC_ERR_ARG for an unknown
 * parameter or the wrong type (get_str returns NULL then, and "" for an unset string). */
OOC_API ooc_status_t ooc_opts_create(ooc_options_t **o);
OOC_API void ooc_opts_destroy(ooc_options_t *o); /* NULL is fine */
OOC_API ooc_status_t ooc_opts_set_int(ooc_options_t *o, ooc_param_t p, int64_t v);
OOC_API ooc_status_t ooc_opts_set_double(ooc_options_t *o, ooc_param_t p, double v);
OOC_API ooc_status_t ooc_opts_set_str(ooc_options_t *o, ooc_param_t p, const char *v);
OOC_API ooc_status_t ooc_opts_get_int(const ooc_options_t *o, ooc_param_t p, int64_t *v);
OOC_API ooc_status_t ooc_opts_get_double(const ooc_options_t *o, ooc_param_t p, double *v);
OOC_API const char *ooc_opts_get_str(const ooc_options_t *o, ooc_param_t p);
/* Message of the last failed set or get ("" after a success). */
OOC_API const char *ooc_opts_error(const ooc_options_t *o);
/* The options as the struct (valid while o lives and is not changed): for C code that mixes
 * both APIs. */
OOC_API const ooc_opts_t *ooc_opts_struct(const ooc_options_t *o);

/* Report fields (pinned); names as in ooc_report_json. */
typedef enum ooc_rfield {
  OOC_R_UNKNOWN = 0,
  OOC_R_KIND = 1, OOC_R_METHOD = 2, OOC_R_BACKEND = 3, OOC_R_PRECISION = 4, OOC_R_OUT_DTYPE = 5,
  OOC_R_OUTPUT = 6, OOC_R_N = 7, OOC_R_NRHS = 8, OOC_R_TILE = 9, OOC_R_STRIPE = 10,
  OOC_R_STEPS = 11, OOC_R_T_READ = 12, OOC_R_T_COMPUTE = 13, OOC_R_T_SPILL = 14,
  OOC_R_T_WRITE = 15, OOC_R_T_CHECK = 16, OOC_R_T_TOTAL = 17, OOC_R_FLOPS = 18,
  OOC_R_GFLOPS = 19, OOC_R_BYTES_INPUT = 20, OOC_R_BYTES_SPILLED = 21,
  OOC_R_BYTES_UNSPILLED = 22, OOC_R_BYTES_OUTPUT = 23, OOC_R_HOST_BUDGET = 24,
  OOC_R_HOST_PEAK = 25, OOC_R_NORM1_A = 26, OOC_R_NORM1_X = 27, OOC_R_RESIDUAL = 28,
  OOC_R_CHECK = 29, OOC_R_INFO = 30, OOC_R_LOGDET = 31, OOC_R_ITERATIONS = 32,
  OOC_R_RESUMED_STEP = 33, OOC_R_WARNINGS = 34, OOC_R_GEMM_K = 35, OOC_R_HOST_LIMIT = 36,
  OOC_R_RESIDUAL_NORM1 = 37, OOC_R_CHECK_PRODUCTS = 38, OOC_R_REJECTED = 39,
  OOC_R_SEED = 40, OOC_R_BERR_BEFORE = 41, OOC_R_BERR_AFTER = 42, OOC_R_T_TRANSFORM = 43,
  OOC_R_T_FACTOR = 44, OOC_R_T_SOLVE = 45, OOC_R_T_REFINE = 46,
  OOC_R_T_FLOOR = 47, OOC_R_FLOOR_RATIO = 48, OOC_R_BYTES_SPILL_MODEL = 49,
  OOC_R_BYTES_SPILLED_ELIM = 50, OOC_R_BYTES_UNSPILLED_ELIM = 51,
  OOC_R_BYTES_CHECK_READ = 52, OOC_R_DEVICE_PEAK = 53, OOC_R_DEVICE_BUDGET = 54,
  OOC_R_BYTES_KEPT_IN_INPUT = 55, OOC_R_BYTES_REREAD_INPUT = 56, OOC_R_T_COMMIT = 57,
  OOC_R_BYTES_UNSPILL_MODEL = 58, OOC_R_STRIPS_READ_AHEAD = 59
} ooc_rfield_t;

/* A zeroed report on the heap (NULL if out of memory), for callers that must not know its size. */
OOC_API ooc_report_t *ooc_report_create(void);
OOC_API void ooc_report_destroy(ooc_report_t *r); /* NULL is fine */
OOC_API int ooc_report_field_count(void);
OOC_API ooc_rfield_t ooc_report_field_lookup(const char *name);
OOC_API const char *ooc_report_field_name(ooc_rfield_t f);
OOC_API ooc_ptype_t ooc_report_field_type(ooc_rfield_t f);
/* Getters: OOC_ERR_ARG for an unknown field or the wrong type (get_int of a double field);
 * get_double also reads integer fields; get_str returns NULL then. */
OOC_API ooc_status_t ooc_report_get_int(const ooc_report_t *r, ooc_rfield_t f, int64_t *v);
OOC_API ooc_status_t ooc_report_get_double(const ooc_report_t *r, ooc_rfield_t f, double *v);
OOC_API const char *ooc_report_get_str(const ooc_report_t *r, ooc_rfield_t f);
/* ooc_report_json into buf (NUL-terminated, truncated to cap); returns the length it needs
 * (without the NUL), so a caller can size buf with a first call of cap 0. */
OOC_API size_t ooc_report_json_str(const ooc_report_t *r, ooc_status_t status, const char *error,
                                   char *buf, size_t cap);

/* ---- matrix handles and the calls on them ---------------------------------------------------
 *
 * A matrix handle names an input or an output of a call: an HDF5 dataset (a spec string as
 * above), a host array, or callbacks. Handles belong to the caller, outlive calls and may be used
 * by several calls (one at a time); they hold no data of their own.
 * - Host array: `data` with `rows` x `cols` elements of dtype OOC_DTYPE_F32 or OOC_DTYPE_F64,
 *   column-major (Fortran, element (i, j) at data[i + j*ld], ld >= rows) or row-major (C/numpy,
 *   data[i*ld + j], ld >= cols). An input array is read in place, a rectangle at a time (never
 *   copied whole, never written). An output array is written in place; it must not overlap an
 *   input array (OOC_ERR_ARG). A failed call leaves NaN in the output array (neither
 *   unverified nor stale numbers), unless it refused an argument (OOC_ERR_ARG: it may be
 *   untouched, as it must be when it overlaps an input).
 * - Callbacks: `fill` writes the rectangle rows r0..r0+nr-1, columns c0..c0+nc-1 into dst
 *   (column-major float64, dst[i + j*ld]) for an input; it may be asked for any rectangle, more
 *   than once (the residual check reads the input again). `take` receives the finished result of
 *   an output, in tiles of the call's tile edge, only after the result passed its residual check
 *   (it is staged in a temporary file in the scratch directory until then; a failure while
 *   handing it over leaves the callback part of it, and the message says how much). Return 0 from
 *   either; nonzero fails the call with OOC_ERR_IO (the message gives the value). Callbacks
 *   are called on the thread that made the call, one at a time.
 * The `_m` calls are the string calls on handles (`opts` NULL: defaults; `report` NULL: none).
 * Calls with a host array or callback matrix do not journal (opts resume and checkpoint do not
 * apply: OOC_ERR_ARG for resume) and spill to the scratch option's directory (default $TMPDIR,
 * else /tmp); keep_failed applies to file outputs only. Transposed reads (trans_a, trans_b) work
 * for files and arrays, not for fill callbacks. */
typedef struct ooc_matrix ooc_matrix_t;
typedef enum { OOC_LAYOUT_COL = 0, OOC_LAYOUT_ROW = 1 } ooc_layout_t;
typedef int (*ooc_tile_fill_fn)(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                double *dst, int64_t ld);
typedef int (*ooc_tile_take_fn)(void *user, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                const double *src, int64_t ld);

/* Errors (OOC_ERR_ARG: bad shape, ld, dtype, layout; OOC_ERR_NOMEM) go to ooc_ctx_error(ctx). */
OOC_API ooc_status_t ooc_matrix_file(ooc_ctx_t *ctx, const char *spec, ooc_matrix_t **m);
OOC_API ooc_status_t ooc_matrix_array(ooc_ctx_t *ctx, void *data, ooc_dtype_t dtype,
                                      int64_t rows, int64_t cols, int64_t ld, ooc_layout_t layout,
                                      ooc_matrix_t **m);
/* fill NULL: an output only; take NULL: an input only. */
OOC_API ooc_status_t ooc_matrix_callback(ooc_ctx_t *ctx, int64_t rows, int64_t cols,
                                         ooc_tile_fill_fn fill, ooc_tile_take_fn take, void *user,
                                         ooc_matrix_t **m);
/* The name messages and reports use ("host array" by default; a file's spec). Copied. */
OOC_API ooc_status_t ooc_matrix_set_name(ooc_matrix_t *m, const char *name);
/* rows x cols of the matrix (a file handle: of its dataset, opened and closed again). */
OOC_API ooc_status_t ooc_matrix_shape(ooc_ctx_t *ctx, const ooc_matrix_t *m, int64_t *rows,
                                      int64_t *cols);
OOC_API void ooc_matrix_destroy(ooc_matrix_t *m); /* NULL is fine */

OOC_API ooc_status_t ooc_invert_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, ooc_matrix_t *x,
                                  const ooc_options_t *opts, ooc_report_t *report);
OOC_API ooc_status_t ooc_solve_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                                 ooc_matrix_t *x, const ooc_options_t *opts, ooc_report_t *report);
OOC_API ooc_status_t ooc_factor_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, ooc_matrix_t *l,
                                  const ooc_options_t *opts, ooc_report_t *report);
OOC_API ooc_status_t ooc_solve_factor_m(ooc_ctx_t *ctx, const ooc_matrix_t *l,
                                        const ooc_matrix_t *b, ooc_matrix_t *x,
                                        const ooc_options_t *opts, ooc_report_t *report);
OOC_API ooc_status_t ooc_logdet_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_options_t *opts,
                                  ooc_report_t *report, double *logdet);
/* c0 NULL: none (beta ignored). */
OOC_API ooc_status_t ooc_gemm_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                                const ooc_matrix_t *c0, ooc_matrix_t *c, double alpha, double beta,
                                const ooc_options_t *opts, ooc_report_t *report);
/* ooc_lstsq on handles: x (n x nrhs; NULL: none) receives the solution, the file `state` (NULL or
 * "": none) the QR state; at least one of them. A 1-D b file gives a 1-D x file. x and the state
 * are committed as one: a failure leaves neither (replaced files as they were). */
OOC_API ooc_status_t ooc_lstsq_m(ooc_ctx_t *ctx, const ooc_matrix_t *a, const ooc_matrix_t *b,
                                 ooc_matrix_t *x, const char *state, const ooc_options_t *opts,
                                 ooc_report_t *report);

/* Parse a byte size: "512M", "2G", "1.5GiB", "4096" (bytes). Returns -1 if malformed. */
OOC_API int64_t ooc_parse_size(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* OOCSOLVE_H */
