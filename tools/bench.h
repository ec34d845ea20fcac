/*
 * bench.h: what oocbench's modules share.
 *
 * - bench_row_t: one measured (or skipped, or failed) line of the benchmark: a method of oocsolve,
 *   an in-core peer (LAPACK, cuSOLVER) or a GEMM ceiling, on one matrix type, precision and size.
 *   oocbench.c writes each row as one JSON object (docs/PERFORMANCE.md gives the schema).
 * - bench_peers.c: the CPU peers (LAPACK on OpenBLAS, in core, all cores), the cblas GEMM ceiling,
 *   the residual of an in-memory inverse through the library's own check (src/solvers/check.h),
 *   and the machine description (CPU, memory, per-row peak RSS).
 * - bench_gpu.c (the module liboocbench_cuda.so, built only when the build has CUDA): cuSOLVER in
 *   core (getrf + getrs with an identity right-hand side, potrf + potri), the cuBLAS GEMM ceiling,
 *   the GPU description, and a sampler of device memory in use while oocsolve runs.
 * - bench_gpu_load.c (in oocbench): the bench_gpu_* / bench_cusolver_* / bench_devmon_* calls
 *   below. oocbench links no CUDA library: on the first GPU row it asks the library whether a GPU
 *   is usable (the CUDA plugin's probe, src/exec/plugin.h), then loads liboocbench_cuda.so from
 *   the places the plugin is looked for (beside the program, ../lib, the install libdir) and
 *   checks its table (oocbench_cuda_t). Without either, every GPU row is skipped saying why.
 *
 * Contract of every peer function: it never exits and never crashes on a failure of the peer; it
 * fills row->status ("ok", "fail" = ran but the residual check failed, "error" = a call failed,
 * "skipped" = not run) and row->error (why), and returns 0. Times are medians of `reps` runs with
 * min and max; the matrix is already in memory (host, or device for cuSOLVER) when the clock starts.
 */
#ifndef OOC_BENCH_H
#define OOC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "oocsolve.h"

#define BENCH_MAX_REPS 64

typedef struct bench_row {
  char name[24];     /* gj chol newton hyper7 | lapack-getri lapack-potri cusolver-getrs
                        cusolver-potri | gemm (the ceiling) */
  char kind[8];      /* "ooc" (oocsolve), "peer", "ceiling" */
  char device[8];    /* cpu | cuda: where it was asked to run */
  char backend[16];  /* what ran: cpu/cuda/ref (oocsolve's report), openblas, cusolver, cublas */
  char type[16];     /* matrix type (gen kind), "any" for the ceiling */
  char dtype[8];     /* f64 | f32: input dtype (peers and ceiling: working precision) */
  int64_t n, tile, stripe;
  int64_t host_budget, gpu_budget; /* bytes; 0 = not applicable / library default */
  char status[12];   /* ok | fail | error | skipped */
  char ooc_status[32]; /* oocsolve's status name for oocsolve rows ("OOC_OK", ...) */
  char error[1024];  /* why it failed or was skipped */
  int reps;
  double t[BENCH_MAX_REPS]; /* the time of each repetition (the row's "time") */
  double tc[BENCH_MAX_REPS]; /* oocsolve: compute phase of each repetition */
  double t_med, t_min, t_max;
  double tc_med;            /* oocsolve: compute phase (median); peers: = t_med */
  double t_read, t_spill, t_write, t_check, t_total; /* oocsolve phases (medians) */
  double t_h2d, t_d2h;      /* cuSOLVER / cuBLAS: untimed copies, measured apart (median) */
  double flops;             /* the count tflops is quoted against (see docs/PERFORMANCE.md) */
  double flops_done;        /* what the algorithm executes */
  double flops_effective;   /* 2n^3 (general inverse) or n^3 (SPD inverse, chol/potri) */
  int iterations;           /* newton / hyper7 */
  int64_t gemm_n;           /* ceiling: the size the GEMM was measured at (<= n, see the cap) */
  double residual;          /* residual ratio (NaN = none or NaN) */
  char check[8];            /* full | probe | none */
  double threshold;         /* pass if residual < threshold */
  int64_t bytes_input, bytes_spilled, bytes_unspilled, bytes_output; /* disk <-> host tiers */
  int64_t bytes_h2d, bytes_d2h;  /* host <-> device (peers; -1 = not reported) */
  int64_t host_peak;        /* oocsolve: the library's accounted peak; peers: bytes allocated */
  int64_t host_rss_peak;    /* peak resident set of the process during the row (-1 = unknown) */
  int64_t dev_peak;         /* device bytes in use above the baseline (-1 = n/a or unknown) */
  char warnings[1024];
  char report_json[8192];   /* oocsolve: the library's JSON report of the last repetition */
} bench_row_t;

/* Fill defaults: every number unknown (-1 / NaN), status "ok". */
void bench_row_init(bench_row_t *r, const char *name, const char *kind, const char *device,
                    const char *type, const char *dtype, int64_t n);
/* t_med/t_min/t_max (and tc_med) from t[0..reps) (tc[]). */
void bench_row_stats(bench_row_t *r);
void bench_row_skip(bench_row_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_row_error(bench_row_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* status from the residual: "ok" if residual < threshold (NaN fails), else "fail" with a reason. */
void bench_row_verdict(bench_row_t *r);

/* ---- machine ------------------------------------------------------------------------------- */

typedef struct bench_machine {
  char cpu_model[256];
  int cores;
  int blas_threads;
  char blas_config[256];
  int64_t memory, mem_available;
  int gpu_usable;      /* 1: a usable GPU in a CUDA build */
  char gpu_name[256];  /* or why there is none */
  char gpu_driver[256];
  char cuda_runtime[32], cuda_driver_api[32];
  int64_t gpu_memory;
  char hostname[128], date[64];
  char loadavg_start[64], loadavg_end[64]; /* /proc/loadavg: other work on the machine skews times */
} bench_machine_t;

void bench_machine_cpu(bench_machine_t *m);
/* The 1, 5 and 15 minute load averages ("0.52 0.61 0.70"), "" if unknown. */
void bench_loadavg(char *buf, size_t cap);
int64_t bench_mem_available(void);
/* Reset the process's peak RSS (Linux /proc/self/clear_refs); -1 from bench_rss_peak if unknown. */
void bench_rss_reset(void);
int64_t bench_rss_peak(void);

/* ---- CPU peers (bench_peers.c) --------------------------------------------------------------- */

/* Residual ratio of X ~ A^-1 (both n x n column-major in memory) with check_inverse: the same
 * definition and code as oocsolve's own check. full: ||I - AX||, else the probe. */
double bench_check_inverse(ooc_ctx_t *ctx, int64_t n, const double *A, const double *X, int full,
                           double eps);
/* ||C t - A (B t)||_1 / (n eps ||A||_1 ||B||_1 ||t||_1) for a fixed +-1 vector t: the check of a
 * GEMM ceiling run (so a broken GEMM cannot report a rate). */
double bench_check_gemm(int64_t n, const double *A, const double *B, const double *C, double eps);

/* LAPACK on OpenBLAS: "lapack-getri" (getrf + getri) or "lapack-potri" (potrf + potri, then the
 * upper triangle mirrored for the check). f32: sgetrf/sgetri or spotrf/spotri on a float copy. */
int bench_lapack_inverse(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32, int reps,
                         int check_full);
/* The ceiling's operands: seeded values in [-1, 1) that float represents exactly. */
void bench_fill_gemm_inputs(double *A, double *B, int64_t n);
/* cblas_dgemm (sgemm for f32) C = A B on n x n, the CPU ceiling. */
int bench_cpu_gemm(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps);

/* ---- GPU (bench_gpu_load.c, which loads bench_gpu.c's module; rows skipped without it) ----- */

/* 1 and the description in m->gpu_* if a GPU is usable; else 0 and the reason in gpu_name. */
int bench_gpu_describe(bench_machine_t *m);
/* "cusolver-getrs" (Xgetrf + Xgetrs with B = I) or "cusolver-potri" (Xpotrf + potri). */
int bench_cusolver_inverse(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32, int reps,
                           int check_full);
int bench_gpu_gemm(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps);
/* Device memory sampler (every 2 ms, cudaMemGetInfo) around an oocsolve call. */
typedef struct bench_devmon bench_devmon_t;
bench_devmon_t *bench_devmon_start(void);
int64_t bench_devmon_stop(bench_devmon_t *m); /* peak bytes above the start; -1 if unknown */

/* The module's table (its one export, oocbench_cuda_v1): the functions above with the same
 * contracts, describe() filling the GPU fields once the plugin's probe said "usable" (desc: the
 * probe's description). Used only if abi and the two struct sizes match oocbench's. */
#define OOCBENCH_CUDA_ABI 1u
typedef struct oocbench_cuda {
  uint32_t abi;
  size_t row_size, machine_size; /* sizeof(bench_row_t), sizeof(bench_machine_t) */
  int (*describe)(bench_machine_t *m, const char *desc);
  int (*cusolver_inverse)(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32, int reps,
                          int check_full);
  int (*gemm)(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps);
  bench_devmon_t *(*devmon_start)(void);
  int64_t (*devmon_stop)(bench_devmon_t *m);
} oocbench_cuda_t;

#endif
