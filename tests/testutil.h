/*
 * testutil.h: shared helpers for the CUnit suites.
 *
 * - tu_run(suite_name, tests[]): registers one suite of {name, fn} pairs (NULL-terminated), runs
 *   it with the basic interface (verbose), and returns the process exit code (0 iff all passed).
 *   The environment variable TU_ONLY, when set, runs only the tests whose name contains it.
 * - tu_tmpdir(): a fresh per-process temporary directory (removed at exit).
 * - tu_ctx(): a context whose allocator counts live blocks; tu_ctx_done(ctx) asserts no leak and
 *   destroys it.
 * - Matrix helpers on column-major float64 arrays: residual ratios with LAPACK's definitions.
 */
#ifndef OOC_TESTUTIL_H
#define OOC_TESTUTIL_H

#include <CUnit/Basic.h>
#include <lapacke.h>
#include <stdint.h>

#include "base/base.h"
#include "tiling/tstore.h"

typedef struct {
  const char *name;
  void (*fn)(void);
} tu_test_t;

int tu_run(const char *suite, const tu_test_t *tests);
const char *tu_tmpdir(void);
/* Path "<tmpdir>/<name>" in a static rotating buffer (valid for the next 8 calls). */
const char *tu_path(const char *name);

ooc_ctx_t *tu_ctx(void);
void tu_ctx_done(ooc_ctx_t *ctx);

/* The whole rows x cols matrix a generator spec describes (ld rows; one element more, so 0 x 0
 * is a valid pointer). Caller frees with free(). */
struct gen_spec;
double *tu_gen_spec(const struct gen_spec *s);
/* The whole rows x cols matrix of generator `kind` (gen_kind_t) with its defaults for rows and
 * that seed (ld rows; one element more, so 0 x 0 is a valid pointer). Caller frees. */
double *tu_gen(int kind, int64_t rows, int64_t cols, uint64_t seed);
/* The whole n x n matrix of generator `kind` (gen_kind_t) with that seed; cond, nugget > 0
 * override the generator's defaults. Caller frees with free(). */
double *tu_gen_matrix(int kind, int64_t n, double cond, double nugget, uint64_t seed);
/* ||A||_1 of an n x n matrix (ld n); NaN in -> NaN out. */
double tu_norm1(int64_t n, const double *A);
/* ||I - A X||_1 / (n ||A||_1 ||X||_1 eps): LAPACK's inverse residual ratio. NaN in -> NaN out. */
double tu_inverse_ratio(int64_t n, const double *A, const double *X, double eps);
/* A copy of A factored by LAPACK's dgetrf (L\U, n x n, ld n; ipiv as LAPACK gives it, 1-based),
 * or NULL where dgetrf finds A exactly singular (info > 0). Caller frees with free(). */
double *tu_lapack_lu(int64_t n, const double *A, lapack_int *ipiv);
/* LAPACK's own inverse of A (dgetrf + dgetri via LAPACKE) and its tu_inverse_ratio: the yardstick
 * the residual suites compare with. NaN if LAPACK finds A exactly singular (info > 0). */
/* LAPACK's dpotrf of a copy of A (lower): its info, and 2 sum log L_jj into *logdet (NULL: not
 * wanted). */
lapack_int tu_lapack_potrf(const double *A, int64_t n, double *logdet);
double tu_lapack_inverse_ratio(int64_t n, const double *A, double eps);
/* HPL ratio max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n). */
double tu_solve_ratio(int64_t n, int64_t m, const double *A, const double *X, const double *B,
                      double eps);

/* Read a whole dataset (spec "file:/dset") as column-major float64; caller frees with free(). */
double *tu_read_matrix(const char *spec, int64_t *rows, int64_t *cols);
/* Write a column-major float64 matrix as dataset `dset` of a new file (dtype 1 = f32, 2 = f64). */
void tu_write_matrix(const char *file, const char *dset, int64_t rows, int64_t cols,
                     const double *A, int dtype);
/* The same, chunked chunk x chunk (contiguous above: tiles of a chunked input fall back on it
 * only when its chunks are the tiles, job.c input_backs_tiles). */
void tu_write_matrix_chunked(const char *file, const char *dset, int64_t rows, int64_t cols,
                             const double *A, int dtype, int64_t chunk);
/* SHA-like fingerprint of a file's bytes (XXH64); 0 if unreadable. */
uint64_t tu_file_hash(const char *path);
int tu_file_exists(const char *path);
/* "<dir>/.oocsolve-<out>-<dir hash><suffix>" (job.c names a run's state files so: suffix
 * ".journal", ".A.scratch", ...) into buf; returns 1 if such a file exists. */
int tu_state_file(const char *dir, const char *out, const char *suffix, char *buf, size_t cap);

/* Tile stores over memory for the solver suites (test_lu, test_chol, test_gemm, test_iter,
 * test_rbt):
 * - tu_memsrc_t + tu_mem_read: a column-major matrix (ld) as a store's source,
 *   ooc_source_t src = {&m, tu_mem_read, NULL} (tu_mem_read_t in the third place: with the
 *   transposed read);
 * - tu_spill_t + tu_sp_open/tu_sp_put/tu_sp_get: spilling to the real scratch store in
 *   tu_tmpdir() under `tag`, ooc_spill_ops_t sp = {&sl, tu_sp_open, tu_sp_put, tu_sp_get, 1}
 *   (concurrent, as the pipeline's uncompressed scratch: the tiles move on the copy threads); the
 *   caller closes sl.s (scratch_close) after destroying the store;
 * - tu_rand_matrix: rows x cols entries uniform in [-0.5, 0.5) from `seed` (one spare element);
 *   the caller frees it. */
typedef struct {
  const double *M;
  int64_t ld;
} tu_memsrc_t;
ooc_status_t tu_mem_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                         int64_t ld);
/* The block's transpose (tstore.h read_t): nc x nr, ld >= nc. */
ooc_status_t tu_mem_read_t(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                           double *dst, int64_t ld);
/* The row stream (tstore.h rows, h5mat.h h5m_stream_rows' contract) of the ld x ld matrix: its
 * groups on the calling thread, the last group first (a result must not depend on the order). */
ooc_status_t tu_mem_rows(void *self, int64_t groups, int64_t win_bytes, ooc_rows_fn fn,
                         void *user, int *streamed);
struct scratch;
typedef struct {
  ooc_ctx_t *ctx;
  const char *tag;
  struct scratch *s;
  _Atomic int64_t puts; /* scratch writes so far (tu_sp_put, from the copy threads too) */
} tu_spill_t;
ooc_status_t tu_sp_open(void *self, size_t slot, void **h);
ooc_status_t tu_sp_put(void *h, int64_t id, const void *d, size_t bytes);
ooc_status_t tu_sp_get(void *h, int64_t id, void *d, size_t colb, size_t ncols, size_t stride);
double *tu_rand_matrix(int64_t rows, int64_t cols, uint64_t seed);

/* The wrong inverses the residual checks must fail, made in place from the right one X (n x n,
 * n > 211, max |x| = xmax) with the LCG state *seed: kind 0 leaves it right; 1 column 37 off by
 * up to 5e-10 xmax; 2 row 211 off by up to 1e-9 xmax; 3 every entry off, relative 1e-9. */
void tu_spoil_inverse(int kind, int64_t n, double *X, double xmax, uint64_t *seed);

/* Every tile of a store, read (not taken) into a new column-major buffer with leading dimension
 * ld >= its rows (one spare element, so an empty store still gets a buffer); each read is
 * asserted. The caller frees it. */
struct tstore;
double *tu_read_store(struct tstore *ts, int64_t ld);

#endif
