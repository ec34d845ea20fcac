/*
 * scratch.h: the scratch store for spilled tiles. One file per store, in a directory the caller
 * names, holding fixed-size slots addressed by a 64-bit tile id.
 *
 * Contract
 * - scratch_open creates "<dir>/.oocsolve-<tag>-<pid>-<rand>.scratch" (O_EXCL). slot_bytes is the
 *   largest payload a put may hold. zstd_level > 0 compresses payloads (stored raw if that is not
 *   smaller). OOC_ERR_IO names the directory and errno when it cannot be created.
 * - scratch_put(id, data, bytes) writes the payload with a header: magic, id, length, flags and an
 *   XXH64 checksum of the payload as given. A later put of the same id replaces it.
 * - scratch_get(id, data, bytes) reads it back and verifies header and checksum: a mismatch is
 *   OOC_ERR_CORRUPT naming the scratch file and the tile id; a never-written id is OOC_ERR_INTERNAL.
 * - ENOSPC/EDQUOT -> OOC_ERR_NOSPACE; other errors -> OOC_ERR_IO; messages name the file.
 * - scratch_close removes the file. NULL is fine.
 * - Counters: bytes of payload written and read (before compression).
 */
#ifndef OOC_SCRATCH_H
#define OOC_SCRATCH_H

#include "base/base.h"

typedef struct scratch scratch_t;

ooc_status_t scratch_open(ooc_ctx_t *ctx, const char *dir, const char *tag, size_t slot_bytes,
                          int zstd_level, scratch_t **out);
ooc_status_t scratch_put(scratch_t *s, int64_t id, const void *data, size_t bytes);
ooc_status_t scratch_get(scratch_t *s, int64_t id, void *data, size_t bytes);
const char *scratch_path(const scratch_t *s);
int64_t scratch_bytes_written(const scratch_t *s);
int64_t scratch_bytes_read(const scratch_t *s);
void scratch_close(scratch_t *s);

#endif
