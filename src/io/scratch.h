/*
 * scratch.h: the scratch store for spilled tiles. One file per store (or several side by side:
 * scratch_open_files, below), in a directory the caller names, holding fixed-size slots
 * addressed by a 64-bit tile id.
 *
 * Contract
 * - scratch_open creates "<dir>/.oocsolve-<tag>-<pid>-<rand>.scratch" (O_EXCL). slot_bytes is the
 *   largest payload a put may hold. zstd_level > 0 compresses payloads (stored raw if that is not
 *   smaller). OOC_ERR_IO names the directory and errno when it cannot be created.
 * - scratch_put(id, data, bytes) writes the payload with a header: magic, id, length, flags and an
 *   XXH3-64 checksum of the payload as given. A later put of the same id replaces it.
 * - scratch_get(id, data, bytes) reads it back and verifies header and checksum: a mismatch is
 *   OOC_ERR_CORRUPT naming the scratch file and the tile id; a never-written id is OOC_ERR_INTERNAL.
 * - ENOSPC/EDQUOT -> OOC_ERR_NOSPACE; other errors -> OOC_ERR_IO; messages name the file.
 * - scratch_get_cols reads the payload into ncols columns of col_bytes (col_bytes * ncols = the
 *   length put), column c at data + c * stride (stride >= col_bytes): a tile into a larger
 *   column-major buffer, scattered by the read itself (preadv) and checked where it lands, with
 *   no staging copy. scratch_get is the contiguous case.
 * - Threads: puts and gets of distinct ids may run on several threads at once (the tile cache's
 *   evictions and reads on its copy threads, tstore.h). Compressed payloads are (de)compressed
 *   and moved one at a time (the store has one set of buffers); raw ones side by side. The
 *   other calls (open, close, sync, version, commit, restore, keep) are made by one thread while
 *   no put or get runs.
 * - scratch_close removes the file. NULL is fine.
 * - Counters: bytes of payload written and read (before compression).
 * - Every file operation goes through io/fileio.h (fault injection, open-file counter).
 *
 * Journaled mode (resumable runs; docs/RELIABILITY.md). scratch_open_at opens a store at a fixed
 * path with two slots per tile id ("banks"). The journal of a run records, for every tile it
 * needs, the bank and checksum of the version it committed (scratch_version after scratch_sync);
 * scratch_commit then makes those versions the protected ones: a later put of the same id goes to
 * the other bank, so a crash at any moment leaves every committed version intact. A resumed run
 * reopens the file and declares the committed versions with scratch_restore; a get then also
 * checks that the slot holds exactly that version (checksum), so stale data is never mixed in.
 * - scratch_keep(s, 1): scratch_close leaves the file in place (the journal refers to it).
 */
#ifndef OOC_SCRATCH_H
#define OOC_SCRATCH_H

#include "base/base.h"

typedef struct scratch scratch_t;

ooc_status_t scratch_open(ooc_ctx_t *ctx, const char *dir, const char *tag, size_t slot_bytes,
                          int zstd_level, scratch_t **out);
ooc_status_t scratch_put(scratch_t *s, int64_t id, const void *data, size_t bytes);
ooc_status_t scratch_get(scratch_t *s, int64_t id, void *data, size_t bytes);
ooc_status_t scratch_get_cols(scratch_t *s, int64_t id, void *data, size_t col_bytes,
                              size_t ncols, size_t stride);
const char *scratch_path(const scratch_t *s);
int64_t scratch_bytes_written(const scratch_t *s);
int64_t scratch_bytes_read(const scratch_t *s);
void scratch_close(scratch_t *s);

/* mode: SCRATCH_CREATE fails (OOC_ERR_EXISTS) if the file exists; SCRATCH_REOPEN fails
 * (OOC_ERR_IO) if it does not; SCRATCH_ANY opens or creates it. */
enum { SCRATCH_CREATE = 0, SCRATCH_REOPEN = 1, SCRATCH_ANY = 2 };
ooc_status_t scratch_open_at(ooc_ctx_t *ctx, const char *path, size_t slot_bytes, int zstd_level,
                             int mode, scratch_t **out);

/* Several files (issue 27: a buffered write holds its file's inode lock, so writes side by side
 * into one file queue; on an H200 host 8 threads wrote 3.7 GB/s into one file, 24 into eight).
 * scratch_open_files is scratch_open_at over `files` files (1 .. SCRATCH_MAX_FILES): path itself
 * and its siblings "<path>.1" .. "<path>.<files-1>" (scratch_sibling), all opened with `mode`;
 * tile id = ti * tcols + tj is in file scratch_file_of(id, tcols, files). A reopen takes as many
 * files as exist in that sequence (1 for a store written by one file: an older journal's).
 * The journal names path; sync, commit, keep and close cover every file. */
#define SCRATCH_MAX_FILES 8
ooc_status_t scratch_open_files(ooc_ctx_t *ctx, const char *path, int files, int64_t tcols,
                                size_t slot_bytes, int zstd_level, int mode, scratch_t **out);
/* scratch_open over `files` files: the one it names and its siblings "<name>.1" .. (each
 * created anew and locked, so scratch_remove_stale treats them as it treats the first). */
ooc_status_t scratch_open_n(ooc_ctx_t *ctx, const char *dir, const char *tag, int files,
                            int64_t tcols, size_t slot_bytes, int zstd_level, scratch_t **out);
/* File k's name of a store at path (k >= 1: "<path>.<k>"), into buf; 0 when it does not fit. */
int scratch_sibling(const char *path, int k, char *buf, size_t cap);
/* The length of file name nm without a sibling's ".<k>" (the store's name); strlen(nm) when it
 * has none. */
size_t scratch_name_len(const char *nm);

/* Tile id = ti * tcols + tj's file among `files`, and its slot there (*local): file
 * (ti + tj) % files, so that any `files` tiles in a row of tiles or a column of tiles are in as
 * many files (the sweeps move tile columns, the writer rows: id % files put a whole column in one
 * file wherever tcols is a multiple of files, and the eviction batches of a run at half the
 * host memory wrote at one file's rate, 4-5 GB/s on an H200 host: docs/PERFORMANCE.md,
 * twenty-first session). Slots are dense: row ti's tiles in a file are ti * cdiv(tcols, files)
 * + tj / files. The pairs (file, slot) are distinct for any tcols > 0, the store's or not. */
static inline int scratch_file_of(int64_t id, int64_t tcols, int files, int64_t *local) {
  if (files <= 1 || tcols <= 0) {
    *local = id;
    return 0;
  }
  int64_t ti = id / tcols, tj = id % tcols;
  *local = ti * ((tcols + files - 1) / files) + tj / files;
  return (int)((ti + tj) % files);
}
/* Journaled mode: each put starts the writeback of its slot at once (fio_writeback_hint), so
 * that a checkpoint's fsync finds little still dirty. Off by default: it sends every put to the
 * disk, also the many that a later put overwrites before the next checkpoint (on an H200 host a
 * journaled chol at half the host memory wrote 29 GB at the disk's 2.8 GB/s, where the same run
 * unjournaled rewrote the page cache in 2.1 s: docs/PERFORMANCE.md, twenty-first session); a
 * run that checkpoints every step turns it on. */
void scratch_writeback(scratch_t *s, int on);
/* fsync the store: what was put is durable when this returns OOC_OK. */
ooc_status_t scratch_sync(scratch_t *s);
/* The latest version of tile id: 1 and its bank and checksum, or 0 if never written. */
int scratch_version(const scratch_t *s, int64_t id, uint8_t *bank, uint64_t *sum);
/* The latest versions become the committed ones (call after the journal naming them is durable). */
void scratch_commit(scratch_t *s);
/* After a reopen: tile id's committed version is in `bank` with checksum `sum`. */
ooc_status_t scratch_restore(scratch_t *s, int64_t id, uint8_t bank, uint64_t sum);
void scratch_keep(scratch_t *s, int keep);

/* Stale stores (issue 20): remove "<dir>/.oocsolve-<tag>-<pid>-<hex>.scratch" files (the names
 * scratch_open makes) left by runs that are gone: the pid is not alive here and no process holds
 * the file's lock (scratch_open and scratch_open_at take an exclusive flock for the store's
 * lifetime, so a live run's file is never removed, even on another host sharing the directory
 * where flock works). Journaled stores (fixed names) are the journal owner's business (job.c).
 * Returns how many files were removed. */
int scratch_remove_stale(ooc_ctx_t *ctx, const char *dir);

#endif
