/*
 * outpath.h: where a run writes its output by default, and may it write there? (issue 20, item 2)
 *
 * Contract
 * - outpath_check(ctx, out_file, inputs, ninputs): OOC_OK, or OOC_ERR_ARG (exit 2) with a message
 *   naming the output and why, when
 *     - out_file is the same file as any of inputs[], compared by device and inode after
 *       following symbolic links: another spelling ("./a.h5", "../d/a.h5"), a symbolic link or a
 *       hard link of an input is found. This holds with or without --force: replacing an input
 *       would destroy the data the run reads (and, for a failed run, the only copy);
 *     - out_file exists and is not a regular file (a device node, a FIFO, a directory, a
 *       socket): --force replaces regular files only, because the output is renamed into place
 *       and a rename would swap a device node or a FIFO for a file.
 *   NULL or empty entries of inputs[] are skipped, and so are inputs that cannot be stat'ed
 *   (they were opened already; a vanished one is the reader's error).
 * - Called where the output is resolved (api/job.c), for every command, with every file the run
 *   reads: the named inputs, the files that hold their data (external-link targets, external
 *   raw files, virtual-dataset sources), the warm start, C0, a factor.
 */
#ifndef OOC_OUTPATH_H
#define OOC_OUTPATH_H

#include "base/base.h"

/* The default output name: the input's path with `suffix` before its extension ("dir/cov.h5" +
 * ".inv" -> "dir/cov.inv.h5"; no extension, or a dot only at the start of the name: suffix and
 * ".h5" appended). Truncated to cap like snprintf. */
void outpath_derive(const char *file, const char *suffix, char *out, size_t cap);

ooc_status_t outpath_check(ooc_ctx_t *ctx, const char *out_file, const char *const *inputs,
                           int ninputs);

#endif
