/* checkpoint.c: resumable runs and the state a run leaves (job_int.h, docs/RELIABILITY.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/job_int.h"
#include "io/fileio.h"

/* ---- journal: resumable runs (docs/RELIABILITY.md) ---------------------------------------
 *
 * Files, all in the scratch directory, named after the output so the same command finds them:
 *   .oocsolve-<output name>-<dir hash>.lock       flock held for the whole run: one run per output
 *   .oocsolve-<output name>-<dir hash>.journal    the last committed checkpoint (io/journal.h)
 *   .oocsolve-<output name>-<dir hash>.A.scratch  (and .B.) spilled tiles, two banks per tile,
 *                                                 and its siblings .A.scratch.1 .. .7 (scratch.h
 *                                                 scratch_open_files)
 * (.Z. for an LU inverse's result store). A checkpoint (after a gj, chol or LU step): flush cached
 * tiles to scratch, fsync, commit the journal atomically, then let the scratch treat those
 * versions as protected. Runs checkpoint after a step once --checkpoint seconds have passed
 * since the last, in core and out of core alike (never after the last step); --checkpoint step
 * after every step (ckpt_clock.h decides, on the clock this file feeds it). Out of core every
 * step used to checkpoint: on an H200 host that made a Cholesky inverse at half the host memory
 * 1.9x slower than the same run unjournaled (its flushes and fsyncs sent every spilled tile to a
 * 1.2 GB/s disk, docs/PERFORMANCE.md twenty-first session); by time, a crash costs at most the
 * interval's work, as in core. */

#define CKPT_DEFAULT_S 300.0

/* The stores a checkpoint journals and their scratch slots: A, and B for a solve or, for an LU
 * inverse, its result store Z (job_lu_result_store). Returns how many (1 or 2). */
static int journaled_stores(job_t *j, tstore_t *st[2], spill_slot_t *sl[2]) {
  st[0] = j->A;
  sl[0] = &j->spill[0];
  st[1] = j->B;
  sl[1] = &j->spill[1];
  if (!j->B && j->method == OOC_METHOD_LU && j->iv[0]) {
    st[1] = j->iv[0];
    sl[1] = &j->ispill[0];
  }
  return st[1] ? 2 : 1;
}

/* The content hash of an input (jr_input_t.sample): XXH3 of the XXH3 of each tile column, in
 * tile-column order, where a tile column's is the XXH3 of its blocks' XXH3s (blocks of
 * HASH_BLOCK doubles, more where a column has over HASH_MAX_BLOCKS of them), hashed on the
 * pool's threads: one XXH3 over each column took 4.6 s of the caller's 10.2 s in a load of
 * n = 65536 float32 on the H200 host (journal format 4; docs/PERFORMANCE.md "twenty-fifth
 * session"). job_load() computes it from the strips it reads anyway (ckpt_hash_cols); a resumed
 * run, which reads no input, computes it here with one extra pass over the input: O(n^2) reads
 * against the O(n^3) work it saves. */
#define HASH_BLOCK ((int64_t)1 << 20) /* 8 MiB */
#define HASH_MAX_BLOCKS 4096

typedef struct {
  const double *p;
  int64_t len, blk;
  uint64_t *h;
} hash_job_t;

static void hash_block(void *arg, int64_t k, int worker) {
  const hash_job_t *x = arg;
  (void)worker;
  x->h[k] = ooc_xxh3(x->p + k * x->blk, (size_t)ooc_min64(x->blk, x->len - k * x->blk) *
                                            sizeof(double));
}

static uint64_t hash_column(const double *p, int64_t len) {
  uint64_t h[HASH_MAX_BLOCKS];
  hash_job_t x = {p, len, ooc_max64(HASH_BLOCK, ooc_cdiv64(len, HASH_MAX_BLOCKS)), h};
  int64_t nb = ooc_cdiv64(len, x.blk);
  ooc_parallel(ooc_par_cpus(OOC_PAR_MAX_THREADS), nb, hash_block, &x);
  return ooc_xxh3(h, (size_t)nb * sizeof(uint64_t));
}

void ckpt_hash_cols(const job_t *j, const double *strip, int64_t rows, int64_t c0,
                              int64_t nc, uint64_t *hashes) {
  for (int64_t c = 0; c < nc; c += j->b)
    hashes[(c0 + c) / j->b] = hash_column(strip + c * rows, rows * ooc_min64(j->b, nc - c));
}

static ooc_status_t content_hash(job_t *j, h5mat_t *m, uint64_t *out) {
  ooc_ctx_t *ctx = j->ctx;
  int64_t rows = h5m_rows(m), cols = h5m_cols(m), nt = ooc_cdiv64(cols, j->b);
  double *strip = ooc_malloc(ctx, (size_t)(rows * ooc_min64(j->b, cols)) * sizeof(double));
  uint64_t *h = ooc_malloc(ctx, (size_t)nt * sizeof(uint64_t));
  ooc_status_t st = strip && h ? OOC_OK : OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory "
                                                   "reading %s", h5m_name(m));
  for (int64_t c0 = 0; c0 < cols && st == OOC_OK; c0 += j->b) {
    int64_t nc = ooc_min64(j->b, cols - c0);
    st = h5m_read(m, 0, c0, rows, nc, strip, rows);
    if (st == OOC_OK) ckpt_hash_cols(j, strip, rows, c0, nc, h);
    if (st == OOC_OK) st = ooc_tick(ctx, "read", (double)(c0 + nc) / (double)cols);
  }
  if (st == OOC_OK) *out = ooc_xxh3(h, (size_t)nt * sizeof(uint64_t));
  ooc_free(ctx, strip);
  ooc_free(ctx, h);
  return st;
}

/* Identity of an input: name, size, mtime, and (resuming) its content hash; a fresh run's
 * content hash is filled in by job_load(). */
static ooc_status_t ident_input(job_t *j, h5mat_t *m, jr_input_t *in) {
  ooc_ctx_t *ctx = j->ctx;
  char file[PATH_MAX], dset[512];
  const char *name = h5m_name(m);
  memset(in, 0, sizeof *in);
  OOC_TRY(h5m_split_spec(ctx, name, file, sizeof file, dset, sizeof dset));
  ooc_fmt(in->file, sizeof in->file, "%s", file);
  ooc_fmt(in->dset, sizeof in->dset, "%s", dset);
  struct stat sb;
  if (stat(file, &sb) != 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot stat the input: %s", name, strerror(errno));
  in->size = (int64_t)sb.st_size;
  in->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
  return j->o.resume && ckpt_path_exists(j->jpath) ? content_hash(j, m, &in->sample) : OOC_OK;
}

static ooc_status_t make_ident(job_t *j, jr_ident_t *id) {
  memset(id, 0, sizeof *id);
  ooc_fmt(id->version, sizeof id->version, "%s", OOC_VERSION_STRING);
  ooc_fmt(id->output, sizeof id->output, "%s:%s", j->out_file, j->out_dset);
  id->nin = j->in_b ? 2 : 1;
  OOC_TRY(ident_input(j, j->in_a, &id->in[0]));
  if (j->in_b) OOC_TRY(ident_input(j, j->in_b, &id->in[1]));
  id->method = j->o.method; /* the checkpoint records the method actually running */
  id->lower_only = j->o.lower_only;
  ooc_fmt(id->backend, sizeof id->backend, "%s", j->rep->backend);
  int f32 = j->o.out_dtype == OOC_DTYPE_F32 ||
            (j->o.out_dtype == OOC_DTYPE_AUTO && h5m_type(j->in_a) == H5M_F32 &&
             (!j->in_b || h5m_type(j->in_b) == H5M_F32));
  id->out_f32 = f32;
  id->scratch_zstd = j->o.scratch_zstd;
  id->n = j->n;
  id->m = j->m;
  id->tile = j->b;
  id->stripe = j->W;
  return OOC_OK;
}

/* The first difference between the journal's identity and this run's, in words; NULL if none. */
static const char *ident_diff(const jr_ident_t *a, const jr_ident_t *b, char *buf, size_t cap) {
  if (strcmp(a->version, b->version))
    return ooc_fmt(buf, cap, "it was written by oocsolve %s, this is %s", a->version, b->version),
           buf;
  if (strcmp(a->output, b->output))
    return ooc_fmt(buf, cap, "it is for the output %s, not %s", a->output, b->output), buf;
  if (a->nin != b->nin)
    return ooc_fmt(buf, cap, "it is for %s run", a->nin == 2 ? "a solve" : "an inverse"), buf;
#define DIFF(field, opt)                                                                           \
  if (a->field != b->field)                                                                        \
    return ooc_fmt(buf, cap, "it was written with " opt " %lld, this run has %lld",                \
                   (long long)a->field, (long long)b->field), buf;
  DIFF(n, "n =")
  DIFF(m, "nrhs =")
  DIFF(tile, "--tile")
  if (a->stripe != b->stripe) /* the default stripe follows --host-mem and free GPU memory */
    return ooc_fmt(buf, cap, "it was written with stripe %lld, this run plans %lld (give "
                   "--stripe %lld and the same --host-mem/--gpu-mem)", (long long)a->stripe,
                   (long long)b->stripe, (long long)a->stripe), buf;
  DIFF(scratch_zstd, "--scratch-zstd")
  DIFF(out_f32, "f32 output =")
  DIFF(lower_only, "--triangle lower =")
#undef DIFF
  if (b->method != OOC_METHOD_AUTO && a->method != b->method)
    return ooc_fmt(buf, cap, "it was written by --method %s, this run asks for %s",
                   method_name(a->method), method_name(b->method)), buf;
  if (strcmp(a->backend, b->backend))
    return ooc_fmt(buf, cap, "it was written by the %s backend, this run uses %s", a->backend,
                   b->backend), buf;
  /* inputs last: the sample checksum is over one tile column, so it needs the same tile */
  for (int k = 0; k < a->nin; k++) {
    const jr_input_t *x = &a->in[k], *y = &b->in[k];
    if (strcmp(x->file, y->file) || strcmp(x->dset, y->dset))
      return ooc_fmt(buf, cap, "it is for the input %s:%s, not %s:%s", x->file, x->dset, y->file,
                     y->dset), buf;
    /* content, not size or mtime: an edit in place may keep both (issue 20), a copy changes
     * the mtime and leaves the matrix as it was */
    if (x->sample != y->sample)
      return ooc_fmt(buf, cap, "the input %s:%s changed since it was written (its content hash "
                     "differs%s)", y->file, y->dset,
                     x->mtime_ns == y->mtime_ns ? ", though its modification time is the same"
                                                : ""), buf;
  }
  return NULL;
}

int ckpt_path_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

/* One run per output: flock on "<jbase>.lock". The path is re-checked after locking because the
 * run that held it unlinks it when done (a waiter could otherwise lock a dead inode). */
static ooc_status_t take_lock(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  for (int attempt = 0; attempt < 5; attempt++) {
    int fd = fio_open(ctx, j->lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      int e = errno;
      if (e == EACCES || e == EROFS || e == ENOENT || e == EPERM) {
        /* a scratch directory we cannot write: fine for a run that fits in memory, which then
         * simply cannot checkpoint (a spill would fail later with its own message) */
        ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "no checkpoints: cannot create "
                 "'%s' (%s)", j->lockpath, strerror(e));
        return OOC_OK;
      }
      return OOC_FAIL(ctx, fio_status(e), "%s:%s: cannot create the lock file '%s': %s",
                      j->out_file, j->out_dset, j->lockpath, strerror(e));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      fio_close(ctx, fd);
      return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s:%s: another oocsolve run is writing this output "
                      "(it holds the lock '%s')", j->out_file, j->out_dset, j->lockpath);
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(j->lockpath, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      j->lock_fd = fd;
      return OOC_OK;
    }
    fio_close(ctx, fd);
  }
  return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s:%s: cannot take the lock '%s' (it keeps changing)",
                  j->out_file, j->out_dset, j->lockpath);
}

/* Files "<jbase>.<tag>.scratch" and their siblings "<jbase>.<tag>.scratch.<k>" (scratch.h
 * scratch_open_files) in the scratch directory, other than A's, B's and Z's (the stores a
 * journal may name) when `keep_ab`:
 * under the output's lock no live run owns one, so they are a killed run's (issue 20: a killed
 * newton left its stores, and every later run for the output stopped on them). */
static void remove_stale_stores(job_t *j, int keep_ab) {
  const char *base = strrchr(j->jbase, '/');
  base = base ? base + 1 : j->jbase;
  size_t bl = strlen(base);
  DIR *d = opendir(j->scratch_dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *nm = e->d_name;
    size_t sl = scratch_name_len(nm); /* a sibling's by its store's name */
    if (sl <= bl + 9 || strncmp(nm, base, bl) || nm[bl] != '.' ||
        strncmp(nm + sl - 8, ".scratch", 8))
      continue;
    if (keep_ab && sl == bl + 10 && nm[bl + 2] == '.' &&
        (nm[bl + 1] == 'A' || nm[bl + 1] == 'B' || nm[bl + 1] == 'Z'))
      continue;
    char sp[PATH_MAX + 300];
    ooc_fmt(sp, sizeof sp, "%s/%s", j->scratch_dir, nm);
    if (fio_remove(j->ctx, sp) == 0)
      ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "removed '%s', left by an earlier run "
               "that was killed or stopped before its first checkpoint", sp);
  }
  closedir(d);
}

/* The journals in the scratch and output directories, quoted and comma-separated into buf:
 * `--resume` names them when none is found for this output, so that a journal written for
 * another --out or --scratch is neither forgotten nor left to fill the disk (issue 20). */
static void other_journals(job_t *j, char *buf, size_t cap) {
  char odir[PATH_MAX];
  ooc_fmt(odir, sizeof odir, "%s", j->out_file);
  const char *dirs[2] = {j->scratch_dir, dirname(odir)};
  buf[0] = 0;
  for (int k = 0; k < 2; k++) {
    DIR *d = (k == 0 || strcmp(dirs[0], dirs[1])) ? opendir(dirs[k]) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
      size_t len = strlen(e->d_name), ol = strlen(buf);
      if (strncmp(e->d_name, ".oocsolve-", 10) || len < 18 ||
          strcmp(e->d_name + len - 8, ".journal"))
        continue;
      snprintf(buf + ol, cap - ol, "%s'%s/%s'", ol ? ", " : "", dirs[k], e->d_name);
    }
    if (d) closedir(d);
  }
}

/* Spill files of runs that are gone (any command; scratch.h), with a notice. */
void ckpt_remove_stale_spills(job_t *j) {
  int k = scratch_remove_stale(j->ctx, j->scratch_dir);
  if (k)
    ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "removed %d scratch file%s of killed "
             "runs from '%s'", k, k > 1 ? "s" : "", j->scratch_dir);
}

/* The output's names in the scratch directory: j->jbase, its journal and its lock. */
static ooc_status_t names(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  /* Named after the output file and a hash of its directory: outputs with the same name in
   * different directories may share one --scratch directory. */
  const char *slash = strrchr(j->out_file, '/');
  char odir[PATH_MAX], real[PATH_MAX];
  ooc_fmt(odir, sizeof odir, "%s", j->out_file);
  const char *d = dirname(odir);
  if (realpath(d, real)) d = real;
  unsigned tag = (unsigned)(ooc_xxh64(d, strlen(d), 0) & 0xffffffffu);
  /* A name component has at most NAME_MAX (255) bytes: a long output name is cut and the hash
   * then covers the whole name too, so that "<jbase>.journal.tmp" and "<jbase>.<tag>.scratch"
   * still fit (issue 20: a 240-character output name failed at its lock). */
  const char *base = slash ? slash + 1 : j->out_file;
  int keep = (int)strlen(base);
  if (keep > 160) {
    keep = 160;
    tag ^= (unsigned)(ooc_xxh64(base, strlen(base), 1) & 0xffffffffu);
  }
  if (ooc_fmt(j->jbase, sizeof j->jbase, "%s/.oocsolve-%.*s-%08x", j->scratch_dir, keep, base,
              tag) != 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: scratch directory path too long", j->scratch_dir);
  ooc_fmt(j->jpath, sizeof j->jpath, "%s.journal", j->jbase);
  ooc_fmt(j->lockpath, sizeof j->lockpath, "%s.lock", j->jbase);
  return OOC_OK;
}

/* The output's names, its lock, and what killed runs left for it (temporary outputs). Every
 * command that writes an output calls it. */
ooc_status_t ckpt_claim_output(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  OOC_TRY(names(j));
  ckpt_remove_stale_spills(j);
  OOC_TRY(take_lock(j));
  if (j->lock_fd < 0) { /* unwritable scratch directory: no journal, but never a stale one */
    if (ckpt_path_exists(j->jpath))
      return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s:%s: found the journal '%s' of an interrupted run, "
                      "but cannot lock its directory", j->out_file, j->out_dset, j->jpath);
    return OOC_OK;
  }
  int stale = h5m_remove_stale_tmp(ctx, j->out_file);
  if (stale)
    ooc_warn(r->warnings, sizeof r->warnings, "removed %d temporary output file%s of a killed run",
             stale, stale > 1 ? "s" : "");
  return OOC_OK;
}

ooc_status_t ckpt_prepare(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  const method_t *asked = method_get(j->o.method);
  int unjournaled = asked && asked->unjournaled;
  OOC_TRY(ckpt_claim_output(j));
  if (j->lock_fd < 0) return OOC_OK;
  char tmp[PATH_MAX + 32];
  ooc_fmt(tmp, sizeof tmp, "%s.tmp", j->jpath);
  if (ckpt_path_exists(tmp)) fio_remove(ctx, tmp); /* a commit that a crash cut short */

  if (ckpt_path_exists(j->jpath)) {
    if (!j->o.resume)
      return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s:%s: found the journal '%s' of an interrupted run; "
                      "rerun the same command with --resume to continue it, or delete it and "
                      "'%s.*.scratch*' to start over", j->out_file, j->out_dset, j->jpath,
                      j->jbase);
    OOC_TRY(make_ident(j, &j->ident));
    OOC_TRY(journal_read(ctx, j->jpath, &j->jr));
    char why[PATH_MAX + 256];
    if (ident_diff(&j->jr->id, &j->ident, why, sizeof why))
      return OOC_FAIL(ctx, OOC_ERR_ARG, "cannot resume from the journal '%s': %s; rerun with the "
                      "same input and options, or delete it and '%s.*.scratch*' to start over",
                      j->jpath, why, j->jbase);
    if (j->jr->n != j->n)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (n = %lld)", j->jpath,
                      (long long)j->jr->n);
    j->resuming = 1;
    j->resume_step = j->jr->steps_done;
    remove_stale_stores(j, 1); /* the journal names only A, B and Z */
    ooc_warn(r->warnings, sizeof r->warnings, "resuming from the journal after step %lld of %lld",
             (long long)j->jr->steps_done, (long long)j->jr->nsteps);
  } else {
    remove_stale_stores(j, 0); /* of a run killed before its first checkpoint, or not journaled */
    if (j->o.resume && unjournaled) {
      ooc_warn(r->warnings, sizeof r->warnings, "--resume: --method %s runs are not journaled "
               "(docs/RELIABILITY.md): starting from the beginning", method_name(j->o.method));
    } else if (j->o.resume) {
      char others[1024];
      other_journals(j, others, sizeof others);
      ooc_warn(r->warnings, sizeof r->warnings, "--resume: no journal '%s', starting from the "
               "beginning%s%s", j->jpath, others[0] ? "; journals of other runs (another --out "
               "or --scratch: resume with those options, or delete them with their "
               "'.*.scratch' files): " : "", others);
    }
    if (j->o.checkpoint != OOC_CHECKPOINT_NEVER) OOC_TRY(make_ident(j, &j->ident));
  }
  j->journaled = (j->resuming || j->o.checkpoint != OOC_CHECKPOINT_NEVER) && !unjournaled;
  /* the tile tables a checkpoint builds came out of the budget in plan_solver (plan_req_t) */
  return OOC_OK;
}

int ckpt_journal_method(job_t *j) {
  if (names(j) != OOC_OK) {
    ooc_clear_error(j->ctx); /* ckpt_claim_output fails the same way, and says so */
    return -1;
  }
  if (!ckpt_path_exists(j->jpath)) return -1;
  journal_t *jr = NULL;
  /* a damaged journal is not this function's to report: ckpt_prepare reads it again and fails */
  if (journal_read(j->ctx, j->jpath, &jr) != OOC_OK) {
    ooc_clear_error(j->ctx);
    return -1;
  }
  int m = jr->id.method;
  journal_free(j->ctx, jr);
  return m == OOC_METHOD_CHOL || m == OOC_METHOD_LU || m == OOC_METHOD_GJ ? m : -1;
}

/* Stores from the journal: every tile zero, in scratch at the committed version, or the input's
 * (A's store read back from its source: job_load_inputs gave it the same one before this). */
ooc_status_t ckpt_restore_stores(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  journal_t *jr = j->jr;
  tstore_t *st[2];
  spill_slot_t *sl[2];
  j->method = jr->id.method == OOC_METHOD_CHOL ? OOC_METHOD_CHOL
              : jr->id.method == OOC_METHOD_LU ? OOC_METHOD_LU
                                               : OOC_METHOD_GJ;
  /* an LU inverse journals its result store Z beside A */
  if (j->method == OOC_METHOD_LU && !j->B && jr->nstores == 2) OOC_TRY(job_lu_result_store(j));
  if (jr->nstores != journaled_stores(j, st, sl))
    return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (stores)", j->jpath);
  /* Adopted from here on: a failure while restoring (out of memory in a version table, found
   * by the fault loops of issue 20) keeps journal and scratch together or removes both, never
   * the scratch alone. */
  j->jr_owned = 1;
  j->committed_steps = jr->steps_done;
  j->nsteps = jr->nsteps;
  memcpy(j->colnorm, jr->colnorm, (size_t)j->n * sizeof(double));
  memcpy(j->perm, jr->ipiv, (size_t)j->n * sizeof(int64_t)); /* gj's ipiv0, see job_gj_run */
  for (int k = 0; k < jr->nstores; k++) {
    int64_t nt = ts_rows(st[k]).count * ts_cols(st[k]).count;
    if (jr->ntiles[k] != nt)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (%lld tiles, expected "
                      "%lld)", j->jpath, (long long)jr->ntiles[k], (long long)nt);
    uint8_t *where = ooc_malloc(ctx, (size_t)(nt ? nt : 1));
    if (!where) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory restoring the journal");
    int any = 0, bad = 0;
    for (int64_t i = 0; i < nt; i++) {
      where[i] = jr->tiles[k][i].where;
      any |= where[i] == 1;
      bad |= where[i] > 2;
    }
    if (bad) {
      ooc_free(ctx, where);
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (a tile's place)",
                      j->jpath);
    }
    sl[k]->must_exist = any;
    ooc_status_t s = ts_restore(st[k], where);
    ooc_free(ctx, where);
    OOC_TRY(s);
    for (int64_t i = 0; i < nt && any; i++)
      if (jr->tiles[k][i].where == 1)
        OOC_TRY(scratch_restore(sl[k]->s, i, jr->tiles[k][i].bank, jr->tiles[k][i].sum));
    sl[k]->must_exist = 0; /* later spills may create nothing new; the file exists */
  }
  j->resume_logdet = jr->logdet;
  if (j->method == OOC_METHOD_LU) { /* lu.h's state; the pivots are in perm, as gj's */
    if (!jr->rowsum)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "the journal '%s' is damaged (an LU run's without "
                      "its row sums)", j->jpath);
    j->lu_state0 = (lu_state_t){.amax = jr->amax, .umax = jr->umax, .logdet = jr->logdet,
                                .sign = jr->sign, .tiny = jr->tiny, .min_pivot = jr->min_pivot,
                                .rowsum = jr->rowsum};
    jr->rowsum = NULL; /* the job's now */
    j->resume_stripe = jr->run_stripe;
  }
  snprintf(j->rep->method, sizeof j->rep->method, "%s", method_name(j->method));
  journal_free(ctx, j->jr);
  j->jr = NULL;
  return OOC_OK;
}

void ckpt_start(job_t *j) {
  double every = j->o.checkpoint > 0 ? j->o.checkpoint : CKPT_DEFAULT_S;
  ckpt_clock_start(&j->clock, every, j->o.checkpoint == OOC_CHECKPOINT_EVERY_STEP, ooc_now());
  /* from here a stop request (ooc_ctx_request_stop) waits for the step's checkpoint */
  j->ctx->graceful = j->journaled;
}

/* lu: LU's state (NULL for gj and chol), with the stripe LU runs (j->rep->stripe). */
static ooc_status_t checkpoint(job_t *j, int64_t done, int64_t nsteps, const int64_t *ipiv,
                               double logdet, const lu_state_t *lu) {
  ooc_ctx_t *ctx = j->ctx;
  tstore_t *st[2];
  spill_slot_t *sl[2];
  int ns = journaled_stores(j, st, sl);
  for (int k = 0; k < ns; k++) OOC_TRY(ts_flush(st[k]));
  for (int k = 0; k < ns; k++) OOC_TRY(scratch_sync(sl[k]->s));
  journal_t *jr = ooc_calloc(ctx, 1, sizeof *jr);
  if (!jr) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory writing the journal");
  ooc_status_t s = OOC_OK;
  jr->id = j->ident;
  jr->id.method = j->method;
  jr->logdet = logdet;
  jr->steps_done = done;
  jr->nsteps = nsteps;
  jr->n = j->n;
  jr->ipiv = (int64_t *)(uintptr_t)ipiv; /* written, not modified */
  jr->colnorm = j->colnorm;
  if (lu) { /* (its log-determinant is `logdet`) */
    jr->sign = lu->sign;
    jr->amax = lu->amax;
    jr->umax = lu->umax;
    jr->tiny = lu->tiny;
    jr->min_pivot = lu->min_pivot;
    jr->rowsum = lu->rowsum; /* written, not modified */
    jr->run_stripe = j->rep->stripe;
  }
  jr->nstores = ns;
  for (int k = 0; k < ns && s == OOC_OK; k++) {
    int64_t nt = ts_rows(st[k]).count * ts_cols(st[k]).count;
    jr->ntiles[k] = nt;
    jr->tiles[k] = ooc_calloc(ctx, (size_t)(nt ? nt : 1), sizeof(jr_tile_t));
    if (!jr->tiles[k]) {
      s = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory writing the journal");
      break;
    }
    ooc_fmt(jr->scratch[k], sizeof jr->scratch[k], "%s", scratch_path(sl[k]->s));
    for (int64_t i = 0; i < nt && s == OOC_OK; i++) {
      int w = ts_where(st[k], i);
      jr_tile_t *t = &jr->tiles[k][i];
      if (w == 1 && !scratch_version(sl[k]->s, i, &t->bank, &t->sum)) w = -1;
      if (w < 0) s = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "checkpoint: tile %lld of store %s is "
                              "neither zero, nor in scratch, nor the input's", (long long)i,
                              sl[k]->tag);
      t->where = (uint8_t)(w < 0 ? 0 : w); /* 2: the input's (the resume checks it unchanged) */
    }
  }
  if (s == OOC_OK) s = journal_write(ctx, j->jpath, jr);
  jr->ipiv = NULL;
  jr->colnorm = NULL;
  jr->rowsum = NULL;
  journal_free(ctx, jr);
  /* A failure after the rename (directory sync) leaves the new journal in place: it is ours to
   * keep or remove, and it names versions that were synced before it was written. */
  if (s != OOC_OK && ckpt_path_exists(j->jpath)) j->jr_owned = 1;
  OOC_TRY(s);
  for (int k = 0; k < ns; k++) scratch_commit(sl[k]->s);
  j->jr_owned = 1;
  j->committed_steps = done;
  ooc_test_killpoint(ctx, "commit");
  return OOC_OK;
}

/* Is a checkpoint due after `step` (ckpt_clock.h), asked before it runs or as it ends? A stop
 * asked for (a signal, ooc_ctx_request_stop) makes it due at once. */
static int due(const job_t *j, int64_t step, int64_t nsteps, int before) {
  ooc_ctx_t *ctx = j->ctx;
  return j->journaled && ckpt_clock_due(&j->clock, step, nsteps,
                                        ctx->interrupted || ctx->stop_requested, before, ooc_now());
}

/* The methods' after-step hooks: note the step, and checkpoint when `ckpt` says so. A stop
 * request that finds the step checkpointed (asked during the step, or during the commit) ends
 * the run there; ckpt_settle words the message. After the last step no step end is left to
 * wait for, so a stop request from then on stops at the next tick. */
static ooc_status_t step_done(job_t *j, int64_t step, int64_t nsteps, const int64_t *ipiv,
                              double logdet, const lu_state_t *lu, int ckpt) {
  ooc_ctx_t *ctx = j->ctx;
  double t = ooc_now();
  j->steps_done = step + 1;
  j->nsteps = nsteps;
  ooc_note_step(ctx, step + 1, nsteps);
  ooc_status_t s = ckpt ? checkpoint(j, step + 1, nsteps, ipiv, logdet, lu) : OOC_OK;
  ckpt_clock_stepped(&j->clock, t, ckpt && s == OOC_OK, ooc_now());
  OOC_TRY(s);
  if (ckpt && ctx->stop_requested)
    return OOC_FAIL(ctx, OOC_ERR_INTERRUPTED, "stopped after step %lld of %lld, as asked",
                    (long long)(step + 1), (long long)nsteps);
  if (step + 1 >= nsteps) ctx->graceful = 0;
  return OOC_OK;
}

ooc_status_t ckpt_after_step(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv) {
  job_t *j = user;
  return step_done(j, step, nsteps, ipiv, 0.0, NULL, due(j, step, nsteps, 0));
}

/* A Cholesky inverse has no pivots: the journal's pivot array holds zeros (j->perm). */
ooc_status_t ckpt_chol_after_step(void *user, int64_t step, int64_t nsteps, double logdet) {
  job_t *j = user;
  return step_done(j, step, nsteps, j->perm, logdet, NULL, due(j, step, nsteps, 0));
}

/* LU asks before a factor step whether it is checkpointed (it then leaves the next stripe in the
 * store, lu.h), and the answer holds for that step's after_step even if the clock moves on;
 * its other steps ask as they end. A run's last step answered "no" before it runs cannot end
 * in a checkpoint (lu.c's left fold may then move columns for the final pass), so from there a
 * stop request stops at once instead of waiting for a step end that will keep nothing. */
int ckpt_lu_step_due(void *user, int64_t step, int64_t nsteps, int before) {
  job_t *j = user;
  j->lu_due_step = due(j, step, nsteps, before) ? step : -1;
  if (before && step + 1 >= nsteps && j->lu_due_step != step) j->ctx->graceful = 0;
  return j->lu_due_step == step;
}

ooc_status_t ckpt_lu_after_step(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv,
                                const lu_state_t *state) {
  job_t *j = user;
  return step_done(j, step, nsteps, ipiv, state->logdet, state, j->lu_due_step == step);
}

/* The journaled stores' scratch files outlive their close (scratch_close), for a --resume. */
static void keep_scratch(job_t *j) {
  tstore_t *ts[2];
  spill_slot_t *sl[2];
  for (int k = 0; k < journaled_stores(j, ts, sl); k++) scratch_keep(sl[k]->s, 1);
}

void ckpt_disown(job_t *j) {
  keep_scratch(j);
  j->jr_owned = 0;
}

/* Remove the journal, then the scratch files of the run it described that this run never
 * opened (a resumed solve whose A tiles were all eliminated). If the journal cannot be removed it
 * stays owned: settle_journal then keeps it with its scratch, so the state stays consistent. */
ooc_status_t ckpt_drop(job_t *j) {
  if (!j->jr_owned) return OOC_OK;
  int e = fio_remove(j->ctx, j->jpath);
  if (e)
    return OOC_FAIL(j->ctx, OOC_ERR_IO, "cannot remove the journal '%s': %s", j->jpath,
                    strerror(e));
  j->jr_owned = 0;
  fio_sync_dir(j->ctx, j->jpath);
  tstore_t *st[2];
  spill_slot_t *sl[2];
  int ns = journaled_stores(j, st, sl);
  static const char *const tags[3] = {"A", "B", "Z"}; /* what a journal may name */
  for (int k = 0; k < 3; k++) {
    int open = 0; /* this run's store of that name has its scratch open */
    for (int i = 0; i < ns; i++) open |= !strcmp(sl[i]->tag, tags[k]) && sl[i]->s;
    char sp[PATH_MAX + 32], sib[PATH_MAX + 48];
    job_scratch_name(j, tags[k], sp, sizeof sp);
    for (int f = 0; !open && f < SCRATCH_MAX_FILES; f++) /* and its siblings */
      if (scratch_sibling(sp, f, sib, sizeof sib) && ckpt_path_exists(sib)) fio_remove(j->ctx, sib);
  }
  return OOC_OK;
}

/* After a run: on success nothing is left; after an interruption (or a failure a rerun may not
 * meet: out of memory, an I/O or device error) the journal and its scratch stay for --resume and
 * the message says so; after any other failure (disk full, corruption, singular, ...) both go. */
ooc_status_t ckpt_settle(job_t *j, ooc_status_t st) {
  ooc_ctx_t *ctx = j->ctx;
  if (st == OOC_OK || j->lock_fd < 0) return st;
  int keep = j->jr_owned && (st == OOC_ERR_INTERRUPTED || st == OOC_ERR_NOMEM ||
                             st == OOC_ERR_IO || st == OOC_ERR_DEVICE);
  if (keep) {
    keep_scratch(j);
    if (st == OOC_ERR_INTERRUPTED)
      ooc_fail_replace(ctx, st, "%s:%s: interrupted at step %lld of %lld; rerun with --resume to "
                       "continue (the journal '%s' keeps the completed steps)", j->out_file,
                       j->out_dset, (long long)j->committed_steps, (long long)j->nsteps,
                       j->jpath);
    else
      ooc_error_append(ctx, "; the journal '%s' keeps %lld of %lld steps: rerun with --resume "
                       "to continue", j->jpath, (long long)j->committed_steps,
                       (long long)j->nsteps);
    return st;
  }
  ckpt_drop(j); /* the scratch files go with scratch_close in job_cleanup */
  if (st == OOC_ERR_INTERRUPTED && j->nsteps > 0)
    ooc_fail_replace(ctx, st, "%s:%s: interrupted at step %lld of %lld; no checkpoint was written "
                     "(%s), so a rerun starts from the beginning", j->out_file, j->out_dset,
                     (long long)j->steps_done, (long long)j->nsteps,
                     j->journaled ? "a run checkpoints every --checkpoint seconds"
                                  : "checkpoints are off for this run");
  return st;
}
