/*
 * matrix.h: matrix handles (ooc_matrix_t, include/oocsolve.h "matrix handles") as the pipeline
 * sees them. Contract:
 * - A file handle is only its spec: job.c opens it as it opens a spec string.
 * - A host array or a callback becomes a virtual h5mat (io/h5mat.h h5m_open_virt), so that every
 *   read of job.c (the load, the fallback's reload, the residual check) and every write (the
 *   writer) goes through the same h5m_read/h5m_write as for a file:
 *   - array input: rectangles read in place from the caller's memory, converted (float32,
 *     row-major, transposed view) on the way into the reader's buffer: no copy of the array;
 *   - array output: rectangles written in place; an output left uncommitted (the call failed) is
 *     filled with NaN on close;
 *   - fill callback: each rectangle asked of the callback;
 *   - take callback: the result staged in a temporary HDF5 file in the scratch directory (the
 *     check reads it back), handed over in tiles by the commit, i.e. only once verified; the
 *     temporary is removed on close either way.
 * - The public `_m` calls (matrix.c) settle the options that differ for handles (scratch
 *   directory, no journal, the output dtype of an array) and call job_call_m (job.c).
 */
#ifndef OOC_MATRIX_H
#define OOC_MATRIX_H

#include "api/methods.h"
#include "base/base.h"
#include "io/h5mat.h"

int matrix_is_file(const ooc_matrix_t *m);
/* The spec of a file handle; the name of any handle (messages, reports). */
const char *matrix_spec(const ooc_matrix_t *m);
const char *matrix_name(const ooc_matrix_t *m);
/* An input handle that is not a file as a virtual h5mat (trans: read transposed). */
ooc_status_t matrix_open_input(ooc_ctx_t *ctx, const ooc_matrix_t *m, int trans, h5mat_t **out);
/* An output handle that is not a file, for a rows x cols result of `type` (take callbacks: the
 * temporary's dtype), handed over in tiles of `tile` (take callbacks) with the temporary in
 * `scratch_dir`. OOC_ERR_ARG when an array's shape differs from the result's. */
ooc_status_t matrix_open_output(ooc_ctx_t *ctx, const ooc_matrix_t *m, int64_t rows, int64_t cols,
                                h5m_type_t type, int64_t tile, const char *scratch_dir,
                                h5mat_t **out);

/* job.c: the calls on handles (the job: methods.h; c: gemm's C0, may be NULL; out NULL for
 * logdet). */
ooc_status_t job_call_m(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                        job_kind_t call, const ooc_matrix_t *a, const ooc_matrix_t *b,
                        const ooc_matrix_t *c, const ooc_matrix_t *out, double alpha, double beta,
                        double *logdet);

/* job_qr.c: least squares on handles (x may be NULL when state names a file; state NULL or "":
 * no state file). */
ooc_status_t job_lstsq_m(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                         const ooc_matrix_t *a, const ooc_matrix_t *b, const ooc_matrix_t *x,
                         const char *state);

#endif
