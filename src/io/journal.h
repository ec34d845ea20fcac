/*
 * journal.h: the journal of a resumable run (docs/RELIABILITY.md).
 *
 * One small file per output, "<scratch dir>/.oocsolve-<output name>.journal", rewritten at every
 * checkpoint. It records what must match for a run to continue (the identity: input files with
 * a hash of their whole content as read; n, tile, stripe, method, backend, dtypes), how far the
 * run got (steps done of nsteps), the state that is not in the tile stores (pivots, column norms,
 * Cholesky's log-determinant sum; LU's stripe, growth maxima, log-determinant and sign, tiny-pivot
 * counters and row sums of |A|), and for every tile of every store whether it is zero or in
 * scratch, with the scratch bank and checksum of the version the checkpoint committed
 * (scratch.h, journaled mode).
 *
 * Contract
 * - journal_write is atomic: it writes "<path>.tmp", fsyncs it, renames it onto path and fsyncs
 *   the directory. A crash at any moment leaves either the previous journal or the new one, never
 *   a mix. Failures: OOC_ERR_NOSPACE / OOC_ERR_IO naming the file; the temporary is removed.
 * - journal_read verifies magic, layout, length and an XXH64 chain over the whole body: any
 *   damage is OOC_ERR_CORRUPT naming the file. The journal is allocated through ooc_malloc;
 *   journal_free releases it (NULL is fine).
 * - The format is for resuming on the same machine and build; layout changes are refused (format
 *   3 added LU's state: a format 2 journal is refused as written by another version; format 4
 *   hashes the input's tile columns by blocks, so a format 3 journal's hash would not match).
 * - Every file operation goes through io/fileio.h.
 */
#ifndef OOC_JOURNAL_H
#define OOC_JOURNAL_H

#include "base/base.h"

#define JR_PATH_CAP 4096

typedef struct jr_input {
  char file[JR_PATH_CAP]; /* as given */
  char dset[512];
  int64_t size, mtime_ns; /* recorded for messages; not compared (a copy or touch is fine) */
  uint64_t sample; /* content: XXH3-64 of the hashes of every tile column as read (float64,
                      column-major, tile-wide; checkpoint.c ckpt_hash_cols), the identity
                      --resume compares (issue 20) */
} jr_input_t;

typedef struct jr_ident {
  char version[16];
  char output[JR_PATH_CAP + 512]; /* "file:/dset" */
  jr_input_t in[2];
  int32_t nin;          /* 1 invert, 2 solve */
  int32_t method;       /* OOC_METHOD_GJ, _CHOL or _LU (the method that wrote it) */
  int32_t lower_only;   /* chol inverse: lower triangle only */
  int32_t pad;
  char backend[16];
  int32_t out_f32;
  int32_t scratch_zstd;
  int64_t n, m, tile, stripe;
} jr_ident_t;

typedef struct jr_tile {
  uint64_t sum;   /* checksum of the committed scratch version */
  uint8_t where;  /* 0: zero, 1: in scratch, 2: the input's (tstore.h ts_where) */
  uint8_t bank;   /* scratch bank of the committed version */
  uint8_t pad[6];
} jr_tile_t;

typedef struct journal {
  jr_ident_t id;
  int64_t steps_done, nsteps;
  double logdet;     /* chol: sum of 2 log L_jj over the completed steps; LU: sum log |u_jj| */
  /* LU (solvers/lu.h, lu_state_t; zero for the other methods) */
  int64_t run_stripe; /* the stripe LU ran (on a GPU the device's, not the plan's) */
  double amax, umax;  /* the growth's maxima so far */
  double min_pivot;   /* no-pivot runs: min |u_jj| / ||A[:, j]||_1 so far */
  int64_t tiny;       /* no-pivot runs: tiny pivots so far */
  int32_t sign;       /* the determinant's sign so far */
  double *rowsum;     /* NULL, or n entries: sum_j |a_ij| over the columns loaded so far */
  int64_t n;         /* entries of ipiv, colnorm and rowsum */
  int64_t *ipiv;     /* pivots of the completed steps (0-based global rows) */
  double *colnorm;   /* ||A[:, j]||_1 of the input */
  int32_t nstores;   /* 1 or 2 (A, B) */
  int64_t ntiles[2];
  jr_tile_t *tiles[2];
  char scratch[2][JR_PATH_CAP]; /* the stores' scratch files ("" if none) */
} journal_t;

ooc_status_t journal_write(ooc_ctx_t *ctx, const char *path, const journal_t *j);
ooc_status_t journal_read(ooc_ctx_t *ctx, const char *path, journal_t **out);
void journal_free(ooc_ctx_t *ctx, journal_t *j);

#endif
