/* journal.c: see journal.h.
 *
 * Layout: a 40-byte header (magic "OOCJRN01", format version, size of jr_ident_t, total length,
 * checksum), then the body: jr_ident_t, the progress and shape block (with LU's scalars), the
 * scratch paths, ipiv, colnorm, LU's row sums (when recorded), the tile tables. The checksum
 * chains XXH64 over the body pieces in that order (each piece's hash seeds the next), so the body
 * is written straight from the caller's arrays. */
#include "io/journal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/fileio.h"

#define JR_MAGIC 0x31304e524a434f4fULL /* "OOCJRN01" */
#define JR_FORMAT 4u /* 3: LU's state (jr_prog_t's LU fields, the row sums); 4: the inputs'
                        * content hash by blocks (checkpoint.c ckpt_hash_cols) */

typedef struct {
  uint64_t magic;
  uint32_t format, ident_bytes;
  uint64_t total, sum;
  uint64_t reserved;
} jr_head_t;

typedef struct {
  int64_t steps_done, nsteps, n;
  int32_t nstores, pad;
  int64_t ntiles[2];
  double logdet;
  int64_t run_stripe, tiny;
  double amax, umax, min_pivot;
  int32_t sign, has_rowsum;
} jr_prog_t;

typedef struct {
  const void *p;
  size_t len;
} piece_t;

static int pieces(const journal_t *j, const jr_prog_t *pg, piece_t *pc) {
  int k = 0;
  pc[k++] = (piece_t){&j->id, sizeof j->id};
  pc[k++] = (piece_t){pg, sizeof *pg};
  pc[k++] = (piece_t){j->scratch, sizeof j->scratch};
  pc[k++] = (piece_t){j->ipiv, (size_t)j->n * sizeof *j->ipiv};
  pc[k++] = (piece_t){j->colnorm, (size_t)j->n * sizeof *j->colnorm};
  if (pg->has_rowsum) pc[k++] = (piece_t){j->rowsum, (size_t)j->n * sizeof *j->rowsum};
  for (int s = 0; s < j->nstores; s++)
    pc[k++] = (piece_t){j->tiles[s], (size_t)j->ntiles[s] * sizeof(jr_tile_t)};
  return k;
}

ooc_status_t journal_write(ooc_ctx_t *ctx, const char *path, const journal_t *j) {
  char tmp[JR_PATH_CAP + 8];
  if (ooc_fmt(tmp, sizeof tmp, "%s.tmp", path) != 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "journal '%s': path too long", path);
  if (j->nstores < 1 || j->nstores > 2 || j->n < 0)
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "journal '%s': bad record", path);
  jr_prog_t pg;
  memset(&pg, 0, sizeof pg);
  pg.steps_done = j->steps_done;
  pg.nsteps = j->nsteps;
  pg.logdet = j->logdet;
  pg.run_stripe = j->run_stripe;
  pg.tiny = j->tiny;
  pg.amax = j->amax;
  pg.umax = j->umax;
  pg.min_pivot = j->min_pivot;
  pg.sign = j->sign;
  pg.has_rowsum = j->rowsum != NULL;
  pg.n = j->n;
  pg.nstores = j->nstores;
  pg.ntiles[0] = j->ntiles[0];
  pg.ntiles[1] = j->nstores > 1 ? j->ntiles[1] : 0;
  piece_t pc[9];
  int np = pieces(j, &pg, pc);
  jr_head_t h;
  memset(&h, 0, sizeof h);
  h.magic = JR_MAGIC;
  h.format = JR_FORMAT;
  h.ident_bytes = (uint32_t)sizeof(jr_ident_t);
  h.total = sizeof h;
  for (int k = 0; k < np; k++) {
    h.sum = ooc_xxh64(pc[k].p, pc[k].len, h.sum);
    h.total += pc[k].len;
  }

  int fd = fio_open(ctx, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    return OOC_FAIL(ctx, fio_status(e), "cannot write the journal '%s': %s", tmp, strerror(e));
  }
  int e = 0;
  int64_t off = sizeof h;
  for (int k = 0; k < np && !e; k++) {
    e = fio_pwrite_all(ctx, fd, pc[k].p, pc[k].len, off);
    off += (int64_t)pc[k].len;
  }
  if (!e) e = fio_pwrite_all(ctx, fd, &h, sizeof h, 0); /* last: a torn write has no header */
  if (!e && fio_fsync(ctx, fd) != 0) e = errno;
  if (fio_close(ctx, fd) != 0 && !e) e = errno;
  if (!e) ooc_test_killpoint(ctx, "prerename");
  if (!e && fio_rename(ctx, tmp, path) != 0) e = errno;
  if (e) {
    fio_remove(ctx, tmp);
    return OOC_FAIL(ctx, fio_status(e), "cannot write the journal '%s': %s", path, strerror(e));
  }
  e = fio_sync_dir(ctx, path);
  if (e)
    return OOC_FAIL(ctx, fio_status(e), "journal '%s': cannot sync its directory: %s", path,
                    strerror(e));
  return OOC_OK;
}

void journal_free(ooc_ctx_t *ctx, journal_t *j) {
  if (!j) return;
  ooc_free(ctx, j->ipiv);
  ooc_free(ctx, j->colnorm);
  ooc_free(ctx, j->rowsum);
  ooc_free(ctx, j->tiles[0]);
  ooc_free(ctx, j->tiles[1]);
  ooc_free(ctx, j);
}

ooc_status_t journal_read(ooc_ctx_t *ctx, const char *path, journal_t **out) {
  *out = NULL;
  int fd = fio_open(ctx, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    int e = errno;
    return OOC_FAIL(ctx, OOC_ERR_IO, "cannot open the journal '%s': %s", path, strerror(e));
  }
  ooc_status_t st = OOC_OK;
  const char *why = NULL;
  journal_t *j = ooc_calloc(ctx, 1, sizeof *j);
  jr_head_t h;
  jr_prog_t pg;
  struct stat sb;
  int64_t off = 0, got;
  if (!j) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "journal '%s': out of memory", path);
    goto done;
  }
#define RD(ptr, len)                                                                               \
  do {                                                                                             \
    got = fio_pread_all(ctx, fd, (ptr), (len), off);                                               \
    if (got < 0) {                                                                                 \
      st = OOC_FAIL(ctx, OOC_ERR_IO, "cannot read the journal '%s': %s", path,                     \
                    strerror((int)-got));                                                          \
      goto done;                                                                                   \
    }                                                                                              \
    if ((size_t)got != (len)) {                                                                    \
      why = "truncated";                                                                           \
      goto done;                                                                                   \
    }                                                                                              \
    off += got;                                                                                    \
  } while (0)
  RD(&h, sizeof h);
  if (h.magic != JR_MAGIC) {
    why = "not an oocsolve journal (bad magic)";
    goto done;
  }
  if (h.format != JR_FORMAT || h.ident_bytes != sizeof(jr_ident_t)) {
    why = "written by another version of oocsolve";
    goto done;
  }
  if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size != h.total) {
    why = "length differs from its header";
    goto done;
  }
  RD(&j->id, sizeof j->id);
  RD(&pg, sizeof pg);
  if (pg.n < 0 || pg.n > ((int64_t)1 << 40) || pg.nstores < 1 || pg.nstores > 2 ||
      pg.ntiles[0] < 0 || pg.ntiles[1] < 0 || pg.ntiles[0] > ((int64_t)1 << 40) ||
      pg.ntiles[1] > ((int64_t)1 << 40) || pg.steps_done < 0 || pg.steps_done > pg.nsteps ||
      (pg.has_rowsum != 0 && pg.has_rowsum != 1)) {
    why = "inconsistent sizes";
    goto done;
  }
  j->steps_done = pg.steps_done;
  j->nsteps = pg.nsteps;
  j->logdet = pg.logdet;
  j->run_stripe = pg.run_stripe;
  j->tiny = pg.tiny;
  j->amax = pg.amax;
  j->umax = pg.umax;
  j->min_pivot = pg.min_pivot;
  j->sign = pg.sign;
  j->n = pg.n;
  j->nstores = pg.nstores;
  j->ntiles[0] = pg.ntiles[0];
  j->ntiles[1] = pg.ntiles[1];
  j->ipiv = ooc_malloc(ctx, (size_t)(j->n ? j->n : 1) * sizeof *j->ipiv);
  j->colnorm = ooc_malloc(ctx, (size_t)(j->n ? j->n : 1) * sizeof *j->colnorm);
  if (pg.has_rowsum) j->rowsum = ooc_malloc(ctx, (size_t)(j->n ? j->n : 1) * sizeof *j->rowsum);
  for (int s = 0; s < j->nstores; s++)
    j->tiles[s] = ooc_malloc(ctx, (size_t)(j->ntiles[s] ? j->ntiles[s] : 1) * sizeof(jr_tile_t));
  if (!j->ipiv || !j->colnorm || (pg.has_rowsum && !j->rowsum) || !j->tiles[0] ||
      (j->nstores > 1 && !j->tiles[1])) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "journal '%s': out of memory (n = %lld)", path,
                  (long long)j->n);
    goto done;
  }
  RD(j->scratch, sizeof j->scratch);
  RD(j->ipiv, (size_t)j->n * sizeof *j->ipiv);
  RD(j->colnorm, (size_t)j->n * sizeof *j->colnorm);
  if (pg.has_rowsum) RD(j->rowsum, (size_t)j->n * sizeof *j->rowsum);
  for (int s = 0; s < j->nstores; s++) RD(j->tiles[s], (size_t)j->ntiles[s] * sizeof(jr_tile_t));
#undef RD
  {
    piece_t pc[9];
    int np = pieces(j, &pg, pc);
    uint64_t sum = 0;
    for (int k = 0; k < np; k++) sum = ooc_xxh64(pc[k].p, pc[k].len, sum);
    if (sum != h.sum) why = "checksum mismatch";
  }
  j->id.output[sizeof j->id.output - 1] = 0;
  for (int k = 0; k < 2; k++) {
    j->scratch[k][JR_PATH_CAP - 1] = 0;
    j->id.in[k].file[JR_PATH_CAP - 1] = 0;
    j->id.in[k].dset[sizeof j->id.in[k].dset - 1] = 0;
  }
done:
  fio_close(ctx, fd);
  if (st == OOC_OK && why)
    st = OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (%s); remove it and its "
                  "scratch files and rerun without --resume", path, why);
  if (st != OOC_OK) {
    journal_free(ctx, j);
    return st;
  }
  *out = j;
  return OOC_OK;
}
