/*
 * h5mat.h: dense matrices in HDF5 files, read and written by rectangles (hyperslabs).
 *
 * The only module that calls HDF5. A matrix is a 2-D dataset; element A[i, j] is the dataset's
 * element at (i, j) as h5py shows it (row-major in the file). In memory this module speaks
 * column-major float64 (`dst[i + j*ld]`), the solvers' layout; it transposes and converts on the way.
 *
 * Contract
 * - h5m_split_spec: "file.h5:/a/b" -> file "file.h5", dataset "/a/b"; "file.h5" -> dataset "" (auto).
 * - h5m_open: opens read-only. dataset "" or NULL picks the only 2-D numeric dataset in the file
 *   (several: OOC_ERR_FORMAT listing their names; none: OOC_ERR_FORMAT). Checks: file exists
 *   (OOC_ERR_IO "no such file"), is HDF5 (OOC_ERR_FORMAT "not an HDF5 file"), dataset exists, is
 *   2-D, has a float or integer type (integers are read as float64; h5m_notice says so), no zero
 *   dimension. Squareness is the caller's business. Every message starts with "file:/dset: ".
 * - h5m_read: any rectangle inside the matrix; float32/float64/integer converted to float64.
 *   A chunk that fails to decode (corrupt, truncated, or decoding to another size than a chunk's,
 *   on every path), or a chunk stored unfiltered with another size than a chunk's, gives
 *   OOC_ERR_CORRUPT naming the rectangle. Missing data: h5m_set_allow_fill. A dataset reached
 *   through an external link is read from the file that holds it.
 *   Raw, zstd and contiguous float data are read directly, on several threads (see h5m_direct);
 *   strips at least a chunk wide decode each chunk once (narrower ones once per strip).
 * - h5m_create: creates the output at a temporary path in the same directory as `file`
 *   ("<file>.tmp-<pid>-<n>"), dataset `dset` (intermediate groups created), rows x cols, dtype f32
 *   or f64, chunked by chunk x chunk (clamped to the shape; chunk <= 0: contiguous, or 1024 when
 *   compressed), compressed per `compress` ("none", "zstd[:level]", "deflate[:level]", NULL =
 *   none). Fails with OOC_ERR_EXISTS if `file` exists and !force, OOC_ERR_IO if the directory is
 *   not writable (errno text in the message), OOC_ERR_NOSPACE if the disk is full.
 * - h5m_write: any rectangle from column-major float64 (converted to the dataset type), written
 *   through to the file before it returns (a full disk is reported here). Rectangles made of whole
 *   chunks are cheapest: without filter or with zstd they are packed and compressed on several
 *   threads and written with H5Dwrite_chunk; a chunk written in pieces is re-encoded for each
 *   piece. A failed write makes h5m_commit refuse the output.
 * - h5m_attr_str / h5m_attr_f64 / h5m_attr_i64: scalar attributes on the dataset.
 * - h5m_commit: flush, close, fsync and rename the temporary file onto `file`. After a failure
 *   the temporary file is removed. h5m_close on an uncommitted output removes the temporary.
 * - Read-only handles can be used from one thread at a time (HDF5 is not thread-safe here).
 * - h5m_register_zstd: registers the zstd filter (id 32015, cd_values[0] = level, the same
 *   format as hdf5plugin's) in-process. Idempotent; h5m_open/h5m_create call it.
 */
#ifndef OOC_H5MAT_H
#define OOC_H5MAT_H

#include "base/base.h"

#define OOC_H5Z_ZSTD 32015

typedef struct h5mat h5mat_t;

typedef enum { H5M_INT = 0, H5M_F32 = 1, H5M_F64 = 2 } h5m_type_t;

ooc_status_t h5m_split_spec(ooc_ctx_t *ctx, const char *spec, char *file, size_t file_cap,
                            char *dset, size_t dset_cap);

ooc_status_t h5m_open(ooc_ctx_t *ctx, const char *file, const char *dset, h5mat_t **out);
/* h5m_open with flags: H5M_TRANS reads the matrix transposed (element (i, j) is the dataset's
 * (j, i); no copy: the reader maps rectangles), H5M_KEEP_FILL reads fill values as numbers. */
#define H5M_TRANS 1u
#define H5M_KEEP_FILL 2u
ooc_status_t h5m_open2(ooc_ctx_t *ctx, const char *file, const char *dset, unsigned flags,
                       h5mat_t **out);
ooc_status_t h5m_create(ooc_ctx_t *ctx, const char *file, const char *dset, int64_t rows,
                        int64_t cols, h5m_type_t type, int64_t chunk, const char *compress,
                        int force, h5mat_t **out);

/* h5m_create with flags: H5M_OUT_1D writes a rows x 1 matrix as a 1-D dataset of length rows. */
#define H5M_OUT_1D 1u
ooc_status_t h5m_create2(ooc_ctx_t *ctx, const char *file, const char *dset, int64_t rows,
                         int64_t cols, h5m_type_t type, int64_t chunk, const char *compress,
                         int force, unsigned flags, h5mat_t **out);
/* Rank of the dataset behind the handle (1 for a 1-D input read as one column); 1 if the output
 * replaced a dataset of the same name in an existing file (h5m_replaced). */
int h5m_rank(const h5mat_t *m);
int h5m_replaced(const h5mat_t *m);
/* The open HDF5 file and dataset ids (outputs: for attributes and dimension scales written by
 * io/h5meta.c before the commit). -1 when closed. */
int64_t h5m_file_id(const h5mat_t *m);
/* The dataset axes holding the matrix's rows and columns (-1: none, a 1-D dataset). */
void h5m_axes(const h5mat_t *m, int *ax_r, int *ax_c);
/* The file the handle reads or, for an output, where it lands ("" if none). */
const char *h5m_path(const h5mat_t *m);
int64_t h5m_dset_id(const h5mat_t *m);

int64_t h5m_rows(const h5mat_t *m);
int64_t h5m_cols(const h5mat_t *m);
h5m_type_t h5m_type(const h5mat_t *m);
/* A writer's tap (issue 27): fn is called for every chunk a direct write hands to HDF5 (with or
 * without zstd), on a thread of its own while HDF5 writes that chunk (one call at a time, in
 * the order of the writes; it must not call HDF5 or the context), with the chunk's origin
 * (r0, c0), its rows x cols inside the matrix, and its bytes as they go to the file: row-major,
 * the file's dtype (es = 4 or 8 bytes), row stride ld elements (zero padding beyond the edge).
 * The fused check forms its products from exactly what the file receives. Rectangles written
 * through HDF5's own path (not whole chunks, contiguous layouts) are not tapped, so the tap's
 * owner counts what it saw. fn NULL removes the tap. */
typedef void (*h5m_tap_fn)(void *user, int64_t r0, int64_t c0, int64_t rows, int64_t cols,
                           const void *data, int es, int64_t ld);
void h5m_set_tap(h5mat_t *m, h5m_tap_fn fn, void *user);

/* Ask the kernel to start writing back what an output holds so far (Linux sync_file_range with
 * SYNC_FILE_RANGE_WRITE on HDF5's descriptor; nothing without the direct path, under a test's
 * I/O ops, or elsewhere), without waiting for the disk and without reporting errors: the commit's
 * fsync still waits for the rest and reports any. It can block while the device's queue is full,
 * so the pipeline calls it on a pool thread while the check reads (issue 27: the commit's fsync
 * took 6-7 s of an LU factor's 24 s on an H200 host). It touches neither HDF5 nor the context's
 * state, so it may run beside reads of the same handle; it must end before h5m_commit or
 * h5m_close. */
void h5m_writeback_hint(h5mat_t *m);

/* Columns and rows of a chunk (0: not chunked): readers align their column strips with it. */
int64_t h5m_chunk_cols(const h5mat_t *m);
int64_t h5m_chunk_rows(const h5mat_t *m);
/* "file.h5:/dset" as resolved (dataset found by auto-detection included). */
const char *h5m_name(const h5mat_t *m);
/* Bytes read from / written to the file so far (uncompressed element bytes). */
int64_t h5m_bytes(const h5mat_t *m);
/* "" or a note on a conversion made while reading ("integer dataset (int32) read as float64"). */
const char *h5m_notice(const h5mat_t *m);

ooc_status_t h5m_read(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                      int64_t ld);
/* The rectangle's transpose: dst is nc x nr column-major (ld >= nc), element (i, j) of the
 * rectangle at dst[j + i * ld]. That is the file's own row-major order, so the direct path
 * copies rows instead of transposing (issue 27: the checks' passes, which can take either
 * layout, spent most of their read time transposing). Files only: a virtual handle
 * (h5m_file_id < 0) gives OOC_ERR_ARG. Errors as h5m_read's. */
ooc_status_t h5m_read_t(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                        int64_t ld);
/* A pass over every row for arithmetic that keeps no copy (issue 27: the checks' passes over A
 * and X moved each byte through memory three times, page cache -> strip -> product, and were
 * bound by it). The rows are split into `groups` contiguous ranges (group g: rows
 * [rows g / groups, rows (g + 1) / groups)); each group's rows are read in order, in windows
 * of about win_bytes (at least one row), and handed to fn(user, g, r0, nr, rows, ld): rows
 * [r0, r0 + nr), all columns, row-major float64 (ld = cols), valid during the call. Groups
 * run on the pool's threads, one group on one thread from start to end, so fn may keep one
 * result per group and the caller add them up in group order: the same sums whatever the
 * thread count. *streamed = 0 (nothing read, no error) where the file cannot be read this
 * way (a virtual handle, slices, compressed or missing chunks, fill values or packing to
 * apply): the caller reads by rectangles instead. One fault-seam gate per pass; errors as
 * h5m_read's, for the first failing group. */
typedef void (*h5m_rows_fn)(void *user, int g, int64_t r0, int64_t nr, const double *rows,
                            int64_t ld);
ooc_status_t h5m_stream_rows(h5mat_t *m, int64_t groups, int64_t win_bytes, h5m_rows_fn fn,
                             void *user, int *streamed);
ooc_status_t h5m_write(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                       const double *src, int64_t ld);
/* h5m_write from the rectangle's transpose: element (i, j) at src_t[j + i * ld], i.e. src_t is
 * the nc x nr column-major matrix (ld >= nc). For the chunk packer this is the cheap direction
 * (rows of the file are columns of src_t): a symmetric matrix's upper triangle is written from
 * its lower tiles at no extra pass. */
ooc_status_t h5m_write_t(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                         const double *src_t, int64_t ld);

ooc_status_t h5m_attr_str(h5mat_t *m, const char *name, const char *value);
ooc_status_t h5m_attr_f64(h5mat_t *m, const char *name, double value);
ooc_status_t h5m_attr_i64(h5mat_t *m, const char *name, int64_t value);
/* Read a numeric scalar attribute of the dataset (converted to double): 1 if it exists and
 * reads, 0 otherwise (never an error: callers treat a missing attribute as unknown). */
int h5m_attr_get_f64(h5mat_t *m, const char *name, double *value);

ooc_status_t h5m_commit(h5mat_t *m);
/* Two outputs committed as one (either may be NULL: h5m_commit of the other): both files
 * flushed and synced, then an array or callback output committed, then the renames; a failed
 * second rename undoes the first (the file it replaced is put back), so a failure leaves
 * neither. (A kill between the two renames can leave the first without the second.) */
ooc_status_t h5m_commit2(h5mat_t *a, h5mat_t *b);
/* h5m_commit onto `file` (same directory as the output's, so the rename stays atomic) instead of
 * the path named at create, replacing what is there: for a result kept under another name. */
ooc_status_t h5m_commit_as(h5mat_t *m, const char *file);
void h5m_close(h5mat_t *m); /* NULL is fine */

/* Parse a compression spec; returns OOC_ERR_ARG with a message if malformed. kind: 0 none,
 * 1 zstd, 2 deflate. */
ooc_status_t h5m_parse_compress(ooc_ctx_t *ctx, const char *spec, int *kind, int *level);

/* Remove "<file>.tmp-<pid>-<n>" temporaries whose process is gone (a run killed with SIGKILL
 * cannot remove its own). Only call while holding the output's lock (job.c), so that no live run
 * of this output can own one. Returns how many were removed. */
int h5m_remove_stale_tmp(ooc_ctx_t *ctx, const char *file);

/* Direct chunk I/O (h5mat.c explains when it applies): h5m_direct says which path a handle
 * takes (0: HDF5's H5Dread/H5Dwrite; 1: direct reads of contiguous data; 2: direct chunk reads
 * and, for outputs, direct chunk writes). h5m_set_direct(m, 0) forces HDF5's path, 1 restores
 * the default: tests compare the two, benchmarks time them. */
int h5m_direct(const h5mat_t *m);
/* Bytes of buffers one h5m_read/h5m_write of this handle may allocate for its threads' windows
 * and chunk buffers (<= 0: the default, 8 MiB); a call always gets one window or one chunk.
 * Direct writes keep their chunk buffers for the next h5m_write; h5m_set_stage (with any
 * value), a read, h5m_commit and h5m_close release them. */
void h5m_set_stage(h5mat_t *m, int64_t bytes);
void h5m_set_direct(h5mat_t *m, int on);

/* A virtual matrix: a handle whose rectangles come from (go to) the functions of `ops` instead of
 * an HDF5 dataset (api/matrix.c: host arrays and callbacks behind the same reads and writes as a
 * file). h5m_read/h5m_write/h5m_write_t check the rectangle and call read/write (write's `trans`
 * as h5m_write_t's); attributes are accepted and dropped; h5m_commit calls commit (may be NULL);
 * h5m_close calls close(self, uncommitted output) and frees the handle (self is the caller's,
 * released by its close). No file: h5m_path, h5m_data_file "", h5m_file_id -1, chunk_cols 0. */
typedef struct h5m_virt {
  ooc_status_t (*read)(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                       int64_t ld);
  ooc_status_t (*write)(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                        const double *src, int64_t ld, int trans);
  ooc_status_t (*commit)(void *self);
  void (*close)(void *self, int uncommitted);
} h5m_virt_t;
ooc_status_t h5m_open_virt(ooc_ctx_t *ctx, const h5m_virt_t *ops, void *self, int64_t rows,
                           int64_t cols, h5m_type_t type, int writable, const char *name,
                           h5mat_t **out);

/* Returns 1 when the filter is available, 0 if registration failed. */
int h5m_register_zstd(void);
/* Internal (h5mat.c -> zstd_filter.c): the bytes every zstd frame decoded on this thread must
 * give until the next call (0: unknown, any size is returned as HDF5 would). */
void h5m_zstd_expect(size_t bytes);

/* Missing data (docs/RELIABILITY.md): by default a read fails with OOC_ERR_FORMAT naming the
 * first block that has no stored data (a chunk never written, a virtual dataset's missing or
 * short source or unmapped region, a short or missing external raw file, contiguous storage
 * never allocated), where HDF5 would silently return the fill value. on = 1: read the fill value
 * there (the user asked for it: --allow-fill). Whole-dataset checks run at the first read. */
void h5m_set_allow_fill(h5mat_t *m, int on);
/* The file that holds the dataset's object (the target of an external link; else the file
 * named). Outputs must never replace it (api/outpath.h). */
const char *h5m_data_file(const h5mat_t *m);
/* Calls fn(arg, path) for every other file the dataset's data come from (external raw files,
 * virtual-dataset sources; printf-style names skipped), as HDF5 would find them, until fn
 * returns nonzero; returns that value (0: all visited). */
int h5m_source_files(h5mat_t *m, int (*fn)(void *arg, const char *path), void *arg);

#endif
