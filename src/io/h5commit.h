/*
 * h5commit.h: writing a dataset into an existing HDF5 (netCDF-4) file without ever putting the
 * file's other contents at risk.
 *
 * HDF5 cannot promise that a process killed in the middle of a write leaves a file it modifies in
 * place readable: metadata (B-trees, the superblock, free-space) is cached and rewritten in
 * pieces. So an output going into an existing file (`--out results.h5:/Binv --force`) is built
 * in a new file instead and renamed over the old one, which POSIX makes atomic:
 *   1. h5c_copy: byte copy of the existing file to the output's temporary "<file>.tmp-<pid>-<n>"
 *      (copy_file_range: a reflink on btrfs/XFS, an in-kernel copy elsewhere), same permissions.
 *   2. h5mat.c opens the copy read-write; h5c_make_room unlinks the dataset being replaced (only
 *      that one: a group, a dimension scale other variables use, or a path through a dataset is
 *      refused), detaching its dimension scales first so netCDF readers see no dangling reference.
 *   3. the new dataset is written and verified in the copy; h5m_commit flushes, fsyncs the copy,
 *      checks with h5c_unchanged that the original was not modified meanwhile, and renames.
 * A SIGKILL before the rename leaves the original untouched (the temporary is removed by the next
 * run's stale-temporary sweep); after it, the new file is complete. Nothing in between.
 * Cost: a full copy of the existing file (time and, transiently, twice its disk space; adding a
 * 2 MB result to a 539 MB file took 1.6-2.3 s against 0.2-0.4 s into a new file, `cp` of that
 * file 1.1 s). A replaced dataset is unlinked before the new one is created, so HDF5 reuses its
 * space when the new one fits; what it cannot reuse stays unused (h5repack reclaims it). The
 * file gets a new inode: hard links to the old one keep the old contents.
 */
#ifndef OOC_H5COMMIT_H
#define OOC_H5COMMIT_H

#include <hdf5.h>
#include <sys/stat.h>

#include "base/base.h"

typedef struct {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
} h5c_orig_t;

/* 1 if path starts with the HDF5 signature (at offset 0; user blocks are not looked for). */
int h5c_is_hdf5(const char *path);

/* Copy src to dst (created, must not exist), fsync it, and remember src's identity in orig.
 * OOC_ERR_IO / OOC_ERR_NOSPACE with "label: ..." messages; dst is removed after a failure. */
ooc_status_t h5c_copy(ooc_ctx_t *ctx, const char *label, const char *src, const char *dst,
                      h5c_orig_t *orig);

/* OOC_OK if path is still the file h5c_copy copied (same inode, size and mtime), else
 * OOC_ERR_EXISTS: renaming the copy over it would lose what was written to it meanwhile. */
ooc_status_t h5c_unchanged(ooc_ctx_t *ctx, const char *label, const char *path,
                           const h5c_orig_t *orig);

/* In the open copy `file`: unlink the existing object at dname if it is a plain dataset
 * (*replaced = 1), nothing if there is none. OOC_ERR_EXISTS naming what it is otherwise. */
ooc_status_t h5c_make_room(ooc_ctx_t *ctx, const char *label, hid_t file, const char *dname,
                           int *replaced);

#endif
