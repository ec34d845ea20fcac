/*
 * h5mat.c: see h5mat.h. The only file that calls HDF5 for matrix data.
 *
 * Every public entry point silences HDF5's automatic error printing for its duration and restores
 * the caller's handler afterwards, so an application that uses HDF5 itself keeps its own settings.
 * HDF5 failures are turned into messages by walking the error stack right after the failing call.
 *
 * Where the data allows it, rectangles bypass H5Dread/H5Dwrite ("direct chunk I/O" below).
 * Otherwise they travel through a row-major staging buffer because HDF5 maps file and memory
 * selections element by element in row-major order: no choice of dataspaces can transpose. The
 * staging buffer is filled in blocks of whole chunks, so a compressed chunk is decoded (or
 * encoded) once per call however it straddles the rectangle, while the block itself stays small.
 * A square tile landing contiguously in memory skips staging: it is read row-major into the
 * destination and transposed in place.
 *
 * Every file operation goes through io/fileio.h: POSIX calls through its table, HDF5 calls that
 * touch the file (open, create, read, write, flush, close) behind fio_gate, so a test can fail
 * any of them; an injected HDF5 failure takes the same error path as a real one (injected()).
 */
#include "io/h5mat.h"

#include "base/parloop.h"
#include "io/chunkio.h"
#include "io/fileio.h"
#include "io/h5commit.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

/* The chunk cache is sized for a row of chunks as wide as a default tile, within this cap. */
#define CACHE_CAP_BYTES ((size_t)64 << 20)
#define CACHE_TILE_COLS 4096
/* HDF5 refuses chunks of 4 GiB or more. */
#define CHUNK_MAX_BYTES ((int64_t)1 << 31)
#define DEFAULT_CHUNK 1024
/* Reserved in a new output before HDF5 writes to it (see create_impl). */
#define CREATE_RESERVE_BYTES ((off_t)64 << 10)
#define NAME_CAP 1024 /* dataset paths */
#define PATH_CAP 4096 /* file paths (Linux PATH_MAX) */
#define LABEL_CAP (PATH_CAP + NAME_CAP + 8)
/* Direct chunk I/O: the read window of one worker thread (a chunk row more if rows are wider),
 * the default bytes of windows and chunk buffers of one call (h5m_set_stage; a call always gets
 * one), and the smallest call worth more than one thread. */
#define DIRECT_WIN_BYTES ((size_t)2 << 20)
#define DIRECT_STAGE_BYTES ((int64_t)8 << 20)
#define DIRECT_PAR_MIN_BYTES ((int64_t)1 << 20)
/* Uncompressed data is cut into jobs of about this many bytes, so that threads share a strip
 * that spans few chunks. */
#define DIRECT_JOB_BYTES ((int64_t)4 << 20)
enum { DIRECT_OFF = 0, DIRECT_CONTIG = 1, DIRECT_CHUNKED = 2 };

struct h5mat {
  ooc_ctx_t *ctx;
  hid_t file, dset, fspace;
  hid_t memtype;   /* staging element type: native float for f32 files, native double otherwise */
  size_t stage_es; /* bytes per staging element */
  size_t file_es;  /* bytes per file element (for h5m_bytes) */
  int64_t rows, cols;
  int64_t chunk_r, chunk_c; /* 0 when the dataset is not chunked */
  h5m_type_t type;
  int writable, committed, force;
  int append;        /* output into a copy of an existing HDF5 file (io/h5commit.h) */
  int replaced;      /* append: a dataset of that name was replaced */
  h5c_orig_t orig;   /* append: the existing file as copied */
  ooc_status_t failed; /* output only: a write failed, so the file must never be committed */
  int64_t bytes;
  char *path; /* the file the caller named (for an output: where it lands on commit) */
  char *tmp;  /* output only: the temporary file being written; NULL once gone */
  char *name; /* "file:/dset" */
  char notice[400];
  /* Shape mapping (see "datasets that are not plain 2-D" below): the matrix is axis ax_r (rows)
   * and axis ax_c (columns) of an nd-D dataset, either -1 for a 1-D dataset read as one column
   * (or, transposed, one row); every other axis is fixed at fix[k]. general = 0 for the plain
   * case (nd 2, ax_r 0, ax_c 1), the only one direct I/O and the 2-D fast paths handle. */
  int nd, ax_r, ax_c, general;
  hsize_t fix[H5S_MAX_RANK];
  /* CF conventions (netCDF): values equal to _FillValue/missing_value are refused unless
   * keep_fill; packed data (scale_factor/add_offset) are unpacked after every read. */
  int nfill, keep_fill, packed;
  double fill[4], scale, offset;
  /* Direct chunk I/O (see "direct chunk I/O" below); 0: everything through H5Dread/H5Dwrite. */
  int direct;          /* reads: DIRECT_CONTIG or DIRECT_CHUNKED */
  int zstd;            /* chunks are zstd frames (filter 32015 is the only filter) */
  int fd;              /* HDF5's own descriptor of the file (sec2 driver), for pread */
  int64_t contig_addr; /* DIRECT_CONTIG: file offset of element (0, 0) */
  int out_kind, out_level; /* outputs: compression as h5m_parse_compress gives it */
  int64_t stage;           /* h5m_set_stage */
  /* direct writes: chunk buffers kept from one h5m_write to the next (large ones would be fresh
   * pages, faulted in again, at every call); released by h5m_set_stage, a read, commit, close */
  char **wslot;
  int64_t nwslot;
  h5m_tap_fn tap; /* h5m_set_tap: every chunk a direct write hands to HDF5 */
  void *tap_user;
  size_t wslot_bytes;
  /* Missing data (issue 20): 0 refuses to read the fill value where no data are stored
   * (h5m_set_allow_fill); complete: the whole-dataset checks of check_complete() passed. */
  int allow_fill, complete;
  int nfilters;        /* filters in the pipeline */
  size_t zstd_expect;  /* bytes a zstd frame of a chunk must decode to on HDF5's path (0: unknown) */
  char *data_file;     /* the file that holds the dataset (an external link's target) */
  int missing_filter;  /* an optional filter of the pipeline that is not available (0: none) */
  int deflate_check;   /* deflate after shuffles only: its chunks must inflate to a chunk */
  uint8_t *verified;   /* deflate_check: bit per chunk whose inflated size was checked */
  char missing_name[64];
  /* A virtual matrix (h5m_open_virt): rectangles go to virt's functions, nothing to HDF5. */
  const h5m_virt_t *virt;
  void *vself;
  int vcommitted;
};

/* ---- HDF5 error handling -------------------------------------------------------------------- */

typedef struct {
  H5E_auto2_t fn;
  void *data;
} quiet_t;

static quiet_t quiet_begin(void) {
  quiet_t q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return q;
}

static void quiet_end(quiet_t q) { H5Eset_auto2(H5E_DEFAULT, q.fn, q.data); }

typedef struct {
  int pipeline;  /* a filter failed (corrupt or undecodable chunk) */
  int sys_errno; /* errno reported by the file driver, 0 if none */
  int truncated; /* the file is shorter than its superblock says */
  int eof_range; /* an address beyond the end of the file was read */
  int lock;      /* file locking failed */
  unsigned long long eof, stored_eof;
  char inner[400]; /* the most specific message */
} h5err_t;

static herr_t err_walk(unsigned n, const H5E_error2_t *e, void *p) {
  h5err_t *x = p;
  if (e->maj_num == H5E_PLINE) x->pipeline = 1;
  if (!e->desc) return 0;
  if (n == 0) snprintf(x->inner, sizeof x->inner, "%s", e->desc);
  const char *s = strstr(e->desc, "errno = ");
  if (s && !x->sys_errno) x->sys_errno = atoi(s + 8);
  if ((s = strstr(e->desc, "truncated file"))) {
    x->truncated = 1;
    const char *a = strstr(s, "eof = "), *b = strstr(s, "stored_eof = ");
    if (a) x->eof = strtoull(a + 6, NULL, 10);
    if (b) x->stored_eof = strtoull(b + 13, NULL, 10);
  }
  if (strstr(e->desc, "addr overflow") || strstr(e->desc, "address overflow")) x->eof_range = 1;
  if (strstr(e->desc, "lock the file") || strstr(e->desc, "lock file")) x->lock = 1;
  return 0;
}

/* Call right after the failing HDF5 call: the next API call clears the stack. */
static h5err_t h5_last_error(void) {
  h5err_t x;
  memset(&x, 0, sizeof x);
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, err_walk, &x);
  if (!x.inner[0]) snprintf(x.inner, sizeof x.inner, "unknown HDF5 error");
  return x;
}

static ooc_status_t errno_status(int e) {
  return (e == ENOSPC || e == EDQUOT) ? OOC_ERR_NOSPACE : OOC_ERR_IO;
}

/* What h5_last_error would report had the file driver failed with errno e (a fault injected at
 * the fio_gate in front of an HDF5 call). */
static h5err_t injected(int e) {
  h5err_t x;
  memset(&x, 0, sizeof x);
  x.sys_errno = e;
  snprintf(x.inner, sizeof x.inner, "injected fault: %s", strerror(e));
  return x;
}

static void setup_direct(h5mat_t *m);

/* ---- small helpers -------------------------------------------------------------------------- */

static void make_label(char *out, size_t cap, const char *file, const char *dname) {
  if (dname && *dname)
    snprintf(out, cap, "%s:%s", file, dname);
  else
    snprintf(out, cap, "%s", file);
}

/* "x" and "/x" name the same dataset; messages and h5m_name use the absolute form. */
static int normalize_dset(const char *in, char *out, size_t cap) {
  if (!in || !*in) {
    out[0] = 0;
    return 0;
  }
  int n = snprintf(out, cap, "%s%s", in[0] == '/' ? "" : "/", in);
  return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

static void dir_of(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(out, cap, ".");
  else if (slash == path)
    snprintf(out, cap, "/");
  else
    snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static int64_t next_prime(int64_t n) {
  if (n < 3) return 3;
  for (n |= 1;; n += 2) {
    int prime = 1;
    for (int64_t d = 3; d * d <= n; d += 2)
      if (n % d == 0) {
        prime = 0;
        break;
      }
    if (prime) return n;
  }
}

/* For reading: a chunk cache holding a tile-wide row of chunks (within the cap), so chunks
 * straddling a tile edge are decoded once for both neighbouring tiles. */
static hid_t make_dapl(int64_t chunk_r, int64_t chunk_c, int64_t cols, size_t es) {
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  if (dapl < 0 || chunk_r <= 0) return dapl;
  size_t chunk_bytes = (size_t)chunk_r * (size_t)chunk_c * es;
  int64_t across = ooc_cdiv64(ooc_min64(cols, CACHE_TILE_COLS), chunk_c) + 1;
  size_t want = chunk_bytes * (size_t)across;
  size_t nbytes = want < CACHE_CAP_BYTES ? want : CACHE_CAP_BYTES;
  if (nbytes < ((size_t)1 << 20)) nbytes = (size_t)1 << 20;
  int64_t fit = (int64_t)(nbytes / (chunk_bytes ? chunk_bytes : 1));
  int64_t slots = next_prime(ooc_min64(100 * ooc_max64(fit, 1), 1 << 20));
  /* w0 = 1: chunks read completely are evicted first; those straddling a tile edge stay */
  H5Pset_chunk_cache(dapl, (size_t)slots, nbytes, 1.0);
  return dapl;
}

static hid_t make_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if H5_VERSION_GE(1, 10, 7)
  /* keep locking, but do not fail on file systems that lack it (NFS, some Lustre mounts) */
  if (fapl >= 0) H5Pset_file_locking(fapl, 1, 1);
#endif
  return fapl;
}

/* ---- spec and compression parsing ---------------------------------------------------------- */

static int has_h5_extension(const char *s, size_t len) {
  static const char *ext[] = {".h5", ".hdf5", ".hdf", ".he5", ".nc", ".nc4", ".cdf", NULL};
  for (int k = 0; ext[k]; k++) {
    size_t e = strlen(ext[k]);
    if (len > e && !strncasecmp(s + len - e, ext[k], e)) return 1;
  }
  return 0;
}

ooc_status_t h5m_split_spec(ooc_ctx_t *ctx, const char *spec, char *file, size_t file_cap,
                            char *dset, size_t dset_cap) {
  if (!spec || !*spec)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "empty matrix spec (expected file.h5 or file.h5:/dataset)");
  if (!file || !dset || file_cap == 0 || dset_cap == 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: no room for the parsed spec", spec);
  /* The last ":/" splits, so directories with ':' in their names still work. */
  const char *sep = NULL;
  for (const char *p = strstr(spec, ":/"); p; p = strstr(p + 1, ":/")) sep = p;
  size_t flen = strlen(spec);
  const char *ds = "";
  int add_slash = 0;
  if (sep) {
    flen = (size_t)(sep - spec);
    ds = sep + 1;
  } else {
    const char *colon = strrchr(spec, ':');
    if (colon && colon[1] == 0) {
      flen = (size_t)(colon - spec); /* "file.h5:" means auto-detect */
    } else if (colon && !strchr(colon, '/') && has_h5_extension(spec, (size_t)(colon - spec))) {
      flen = (size_t)(colon - spec); /* "cov.h5:cov" is read as "cov.h5:/cov" */
      ds = colon + 1;
      add_slash = 1;
    }
  }
  if (flen == 0) return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: no file name before the dataset", spec);
  if (flen >= file_cap || strlen(ds) + (size_t)add_slash >= dset_cap)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: file or dataset name too long", spec);
  memcpy(file, spec, flen);
  file[flen] = 0;
  snprintf(dset, dset_cap, "%s%s", add_slash ? "/" : "", ds);
  return OOC_OK;
}

ooc_status_t h5m_parse_compress(ooc_ctx_t *ctx, const char *spec, int *kind, int *level) {
  *kind = 0;
  *level = 0;
  if (!spec || !*spec || !strcasecmp(spec, "none")) return OOC_OK;
  const char *colon = strchr(spec, ':');
  size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  int lo, hi, def;
  if (nlen == 4 && !strncasecmp(spec, "zstd", 4)) {
    *kind = 1;
    lo = 1; /* zstd's negative "fast" levels are left out: they barely compress floats */
    hi = ZSTD_maxCLevel();
    def = 3;
  } else if ((nlen == 7 && !strncasecmp(spec, "deflate", 7)) ||
             (nlen == 4 && !strncasecmp(spec, "gzip", 4))) {
    *kind = 2;
    lo = 1;
    hi = 9;
    def = 6;
  } else {
    return OOC_FAIL(ctx, OOC_ERR_ARG,
                    "unknown compression '%s' (expected none, zstd[:level] or deflate[:level])",
                    spec);
  }
  *level = def;
  if (colon) {
    char *end = NULL;
    errno = 0;
    long v = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || v < lo || v > hi) {
      *kind = 0;
      *level = 0;
      return OOC_FAIL(ctx, OOC_ERR_ARG, "compression '%s': level must be an integer in %d..%d",
                      spec, lo, hi);
    }
    *level = (int)v;
  }
  return OOC_OK;
}

/* ---- accessors ------------------------------------------------------------------------------ */

int64_t h5m_rows(const h5mat_t *m) { return m ? m->rows : 0; }
int64_t h5m_cols(const h5mat_t *m) { return m ? m->cols : 0; }
h5m_type_t h5m_type(const h5mat_t *m) { return m ? m->type : H5M_F64; }
const char *h5m_name(const h5mat_t *m) { return m && m->name ? m->name : ""; }
const char *h5m_path(const h5mat_t *m) { return m && m->path ? m->path : ""; }
const char *h5m_notice(const h5mat_t *m) { return m ? m->notice : ""; }
int64_t h5m_bytes(const h5mat_t *m) { return m ? m->bytes : 0; }
int64_t h5m_chunk_cols(const h5mat_t *m) { return m ? m->chunk_c : 0; }
int64_t h5m_chunk_rows(const h5mat_t *m) { return m ? m->chunk_r : 0; }
int h5m_rank(const h5mat_t *m) { return m ? (m->nd ? m->nd : 2) : 0; }
int h5m_replaced(const h5mat_t *m) { return m ? m->replaced : 0; }
int64_t h5m_file_id(const h5mat_t *m) { return m ? (int64_t)m->file : -1; }
int64_t h5m_dset_id(const h5mat_t *m) { return m ? (int64_t)m->dset : -1; }
void h5m_axes(const h5mat_t *m, int *ax_r, int *ax_c) {
  *ax_r = m && m->nd ? m->ax_r : 0;
  *ax_c = m && m->nd ? m->ax_c : 1;
}

/* ---- opening -------------------------------------------------------------------------------- */

static h5mat_t *new_handle(ooc_ctx_t *ctx) {
  h5mat_t *m = ooc_calloc(ctx, 1, sizeof *m);
  if (!m) return NULL;
  m->ctx = ctx;
  m->file = m->dset = m->fspace = -1;
  m->fd = -1;
  m->nfilters = -1; /* not yet known: inspect_dataset, or check_chunks for an output */
  m->stage = DIRECT_STAGE_BYTES;
  return m;
}

ooc_status_t h5m_open_virt(ooc_ctx_t *ctx, const h5m_virt_t *ops, void *self, int64_t rows,
                           int64_t cols, h5m_type_t type, int writable, const char *name,
                           h5mat_t **out) {
  *out = NULL;
  h5mat_t *m = new_handle(ctx);
  char *nm = m ? ooc_strdup(ctx, name ? name : "matrix") : NULL;
  if (!nm) {
    ooc_free(ctx, m);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory", name ? name : "matrix");
  }
  m->name = nm;
  m->virt = ops;
  m->vself = self;
  m->rows = rows;
  m->cols = cols;
  m->type = type;
  m->writable = writable;
  m->file_es = type == H5M_F32 ? 4 : 8;
  m->nd = 2;
  m->ax_r = 0;
  m->ax_c = 1;
  m->complete = 1;
  *out = m;
  return OOC_OK;
}

typedef struct {
  char list[600];
  int count;
  int only_2d;
  int broken; /* the root group cannot be opened or walked: damaged metadata */
  char first[NAME_CAP];
} dlist_t;

static int is_2d_numeric(hid_t d) {
  int ok = 0;
  hid_t sp = H5Dget_space(d), t = H5Dget_type(d);
  if (sp >= 0 && t >= 0 && H5Sget_simple_extent_ndims(sp) == 2) {
    H5T_class_t c = H5Tget_class(t);
    ok = c == H5T_FLOAT || c == H5T_INTEGER;
  }
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return ok;
}

static herr_t dlist_cb(hid_t g, const char *name, const H5L_info_t *info, void *p) {
  dlist_t *l = p;
  if (info->type != H5L_TYPE_HARD) return 0; /* soft links would list objects twice */
  hid_t o = H5Oopen(g, name, H5P_DEFAULT);
  if (o < 0) return 0;
  if (H5Iget_type(o) == H5I_DATASET && (!l->only_2d || is_2d_numeric(o))) {
    if (l->count == 0) snprintf(l->first, sizeof l->first, "/%s", name);
    size_t len = strlen(l->list);
    if (l->count < 8 && len + strlen(name) + 8 < sizeof l->list)
      snprintf(l->list + len, sizeof l->list - len, "%s/%s", l->count ? ", " : "", name);
    else if (!strstr(l->list, ", ..."))
      snprintf(l->list + len, sizeof l->list - len, ", ...");
    l->count++;
  }
  H5Oclose(o);
  return 0;
}

static void list_datasets(hid_t f, int only_2d, dlist_t *l) {
  memset(l, 0, sizeof *l);
  l->only_2d = only_2d;
  hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
  if (root < 0) {
    l->broken = 1;
    return;
  }
  if (H5Lvisit(root, H5_INDEX_NAME, H5_ITER_INC, dlist_cb, l) < 0) l->broken = 1;
  H5Gclose(root);
}

static const char *class_words(H5T_class_t c) {
  switch (c) {
  case H5T_STRING: return "a string";
  case H5T_COMPOUND: return "compound (a record of named fields)";
  case H5T_ENUM: return "an enum";
  case H5T_BITFIELD: return "a bitfield";
  case H5T_OPAQUE: return "opaque";
  case H5T_REFERENCE: return "a reference";
  case H5T_VLEN: return "variable-length (vlen)";
  case H5T_ARRAY: return "an array type";
  case H5T_TIME: return "a time type";
  default: return "not numeric";
  }
}

/* Checks shape and type of the opened dataset m->dset and fills the handle's fields. */
/* "[0,:,:]" (one entry per axis: an index, negative from the end, or ':' for an axis the matrix
 * keeps) -> m->fix and the kept axes. */
static ooc_status_t parse_slice(h5mat_t *m, const char *label, const char *slice, int nd,
                                const hsize_t *dims, const char *shape, int *freeax, int *nfree) {
  ooc_ctx_t *ctx = m->ctx;
  const char *p = slice + 1; /* after '[' */
  int k = 0;
  *nfree = 0;
  for (;; k++) {
    while (*p == ' ') p++;
    if (k >= nd)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the slice %s has more entries than the dataset's "
                      "%d axes (shape %s)", label, slice, nd, shape);
    if (*p == ':') {
      freeax[(*nfree)++] = k;
      p++;
    } else {
      char *end = NULL;
      errno = 0;
      long long v = strtoll(p, &end, 10);
      if (end == p || errno)
        return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: slice %s: entry %d is not an integer index or "
                        "':'", label, slice, k + 1);
      long long len = (long long)dims[k];
      if (v < -len || v >= len)
        return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: slice %s: index %lld is outside axis %d of "
                        "length %lld (shape %s)", label, slice, v, k, len, shape);
      m->fix[k] = (hsize_t)(v < 0 ? v + len : v);
      p = end;
    }
    while (*p == ' ') p++;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == ']' && p[1] == 0) break;
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: slice %s: expected ',' or a final ']' at '%s'", label,
                    slice, p);
  }
  if (k + 1 != nd)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the slice %s has %d entries; the dataset has %d axes "
                    "(shape %s)", label, slice, k + 1, nd, shape);
  return OOC_OK;
}

/* Numeric attribute `name` of obj as doubles (up to cap values): how many were read, 0 if it is
 * absent or not numeric. */
static int attr_doubles(hid_t obj, const char *name, double *v, int cap) {
  if (H5Aexists(obj, name) <= 0) return 0;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return 0;
  int got = 0;
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : 0;
  if ((c == H5T_FLOAT || c == H5T_INTEGER) && np >= 1 && np <= 64) {
    double buf[64];
    if (H5Aread(a, H5T_NATIVE_DOUBLE, buf) >= 0) {
      got = (int)(np < cap ? np : cap);
      memcpy(v, buf, (size_t)got * sizeof *v);
    }
  }
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return got;
}

/* CF attributes (netCDF conventions, as netCDF4-python and xarray decode them): the fill values
 * a reader must not take for numbers, and the packing unpacked = packed * scale_factor +
 * add_offset. Fill values are compared with the packed values, before unpacking. */
static void read_cf_attrs(h5mat_t *m, const char *tname) {
  double v[4];
  int k = attr_doubles(m->dset, "_FillValue", v, 1);
  for (int i = 0; i < k; i++)
    if (v[i] == v[i]) m->fill[m->nfill++] = v[i]; /* NaN fills are caught as NaN */
  k = attr_doubles(m->dset, "missing_value", v, 3);
  for (int i = 0; i < k; i++)
    if (v[i] == v[i]) m->fill[m->nfill++] = v[i];
  double sf = 1, ao = 0;
  int has_sf = attr_doubles(m->dset, "scale_factor", &sf, 1);
  int has_ao = attr_doubles(m->dset, "add_offset", &ao, 1);
  if (has_sf || has_ao) {
    m->packed = 1;
    m->scale = sf;
    m->offset = ao;
    snprintf(m->notice, sizeof m->notice, "%s data unpacked as netCDF4/xarray do (CF packing): "
             "value * scale_factor %.17g + add_offset %.17g", tname, sf, ao);
  }
  if (m->nfill && m->keep_fill) {
    size_t len = strlen(m->notice);
    snprintf(m->notice + len, sizeof m->notice - len, "%s--keep-fill: values equal to the "
             "_FillValue/missing_value %.17g are read as numbers", len ? "; " : "", m->fill[0]);
    m->nfill = 0;
  }
}

static ooc_status_t inspect_dataset(h5mat_t *m, const char *label, const char *slice, int trans) {
  ooc_ctx_t *ctx = m->ctx;
  m->fspace = H5Dget_space(m->dset);
  if (m->fspace < 0) return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot read the dataspace (%s)",
                                     label, h5_last_error().inner);
  H5S_class_t sc = H5Sget_simple_extent_type(m->fspace);
  if (sc == H5S_SCALAR)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: dataset is a scalar; a matrix must be 2-D", label);
  if (sc == H5S_NULL)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: dataset has a null dataspace (no elements); a "
                    "matrix must be 2-D", label);
  hsize_t dims[H5S_MAX_RANK];
  int nd = H5Sget_simple_extent_dims(m->fspace, dims, NULL);
  if (nd < 0) return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot read the dataspace (%s)", label,
                              h5_last_error().inner);
  char shape[256] = "";
  for (int k = 0; k < nd; k++) {
    size_t len = strlen(shape);
    snprintf(shape + len, sizeof shape - len, "%s%llu", k ? " x " : "",
             (unsigned long long)dims[k]);
  }
  for (int k = 0; k < nd; k++)
    if (dims[k] == 0)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: dataset has shape %s; a matrix needs at least "
                      "one row and one column", label, shape);
  /* free[]: the axes left to the matrix, after the slice's indices and the squeeze */
  int nfree = 0, freeax[H5S_MAX_RANK];
  memset(m->fix, 0, sizeof m->fix);
  if (slice && *slice) {
    OOC_TRY(parse_slice(m, label, slice, nd, dims, shape, freeax, &nfree));
  } else {
    for (int k = 0; k < nd; k++) freeax[nfree++] = k;
    /* squeeze singleton axes (a time axis of length 1) while more than two remain */
    for (int k = 0; k < nfree && nfree > 2;)
      if (dims[freeax[k]] == 1) {
        memmove(freeax + k, freeax + k + 1, (size_t)(nfree - k - 1) * sizeof *freeax);
        nfree--;
      } else {
        k++;
      }
  }
  if (nfree > 2)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: dataset is %d-D (shape %s); a matrix must be 2-D: "
                    "name a 2-D slice, e.g. %s[0,:,:]%s (docs/CLI.md, \"Matrix specs\")", label,
                    nd, shape, label, nd > 3 ? " with one index per fixed axis" : "");
  if (nfree == 0)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: the slice %s leaves a single element; keep two "
                    "axes with ':' (e.g. [0,:,:])", label, slice);
  m->nd = nd;
  m->ax_r = freeax[0];
  m->ax_c = nfree == 2 ? freeax[1] : -1; /* 1-D: one column */
  if (trans) {
    int t = m->ax_r;
    m->ax_r = m->ax_c;
    m->ax_c = t;
  }
  m->general = !(nd == 2 && m->ax_r == 0 && m->ax_c == 1);
  int64_t rows = m->ax_r >= 0 ? (int64_t)dims[m->ax_r] : 1;
  int64_t cols = m->ax_c >= 0 ? (int64_t)dims[m->ax_c] : 1;
  if (rows > INT64_MAX / 16 || cols > INT64_MAX / 16)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: dataset shape %s is too large", label, shape);
  m->rows = rows;
  m->cols = cols;

  hid_t ft = H5Dget_type(m->dset);
  if (ft < 0) return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot read the datatype (%s)", label,
                              h5_last_error().inner);
  H5T_class_t tc = H5Tget_class(ft);
  size_t sz = H5Tget_size(ft);
  H5T_sign_t sign = tc == H5T_INTEGER ? H5Tget_sign(ft) : H5T_SGN_NONE;
  H5Tclose(ft);
  m->file_es = sz;
  if (tc == H5T_FLOAT) {
    if (sz == 4) {
      m->type = H5M_F32;
      m->memtype = H5T_NATIVE_FLOAT;
      m->stage_es = sizeof(float);
    } else {
      /* half and extended precisions: HDF5 converts them; computing happens in float64 anyway */
      m->type = sz < 4 ? H5M_F32 : H5M_F64;
      m->memtype = H5T_NATIVE_DOUBLE;
      m->stage_es = sizeof(double);
      if (sz != 8)
        snprintf(m->notice, sizeof m->notice, "%zu-bit float dataset read as float64", sz * 8);
    }
  } else if (tc == H5T_INTEGER) {
    m->type = H5M_INT;
    m->memtype = H5T_NATIVE_DOUBLE;
    m->stage_es = sizeof(double);
    snprintf(m->notice, sizeof m->notice, "integer dataset (%sint%zu) read as float64",
             sign == H5T_SGN_NONE ? "u" : "", sz * 8);
  } else {
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: type is %s; a matrix must be float or integer",
                    label, class_words(tc));
  }
  char tname[16];
  snprintf(tname, sizeof tname, "%s%zu", tc == H5T_FLOAT ? "float" : sign == H5T_SGN_NONE ?
           "uint" : "int", sz * 8);
  read_cf_attrs(m, tname);

  hid_t dcpl = H5Dget_create_plist(m->dset);
  if (dcpl < 0) return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot read the storage layout (%s)",
                                label, h5_last_error().inner);
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    hsize_t cd[H5S_MAX_RANK] = {0};
    if (H5Pget_chunk(dcpl, H5S_MAX_RANK, cd) == m->nd) {
      /* in the matrix's terms: the chunk's extent along the rows' and the columns' axes */
      m->chunk_r = m->ax_r >= 0 ? (int64_t)cd[m->ax_r] : 1;
      m->chunk_c = m->ax_c >= 0 ? (int64_t)cd[m->ax_c] : 1;
    }
  }
  int nf = H5Pget_nfilters(dcpl);
  ooc_status_t st = OOC_OK;
  /* A zstd frame decodes to exactly the bytes the filters before it (in writing order) gave it:
   * the chunk itself when those are only shuffles (size-preserving). */
  int size_kept = 1;
  m->nfilters = nf > 0 ? nf : 0;
  for (int k = 0; k < nf && st == OOC_OK; k++) {
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    char fname[80] = "";
    H5Z_filter_t id =
        H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, sizeof fname, fname, NULL);
    if (id == (H5Z_filter_t)OOC_H5Z_ZSTD && size_kept && m->chunk_r > 0)
      m->zstd_expect = (size_t)(m->chunk_r * m->chunk_c) * m->file_es;
    if (id == H5Z_FILTER_DEFLATE && size_kept && m->chunk_r > 0 && k == nf - 1)
      m->deflate_check = 1;
    if (id != H5Z_FILTER_SHUFFLE) size_kept = 0;
    if (id < 0 || H5Zfilter_avail(id) > 0) continue;
    /* A missing decoder is found here rather than as a confusing failure in the middle of a
     * run. An optional filter may have been skipped for every chunk, so that one is only
     * remembered: a chunk that needs it is then reported as this (read_fail), not as damage. */
    if (flags & H5Z_FLAG_OPTIONAL) {
      if (!m->missing_filter) {
        m->missing_filter = (int)id;
        snprintf(m->missing_name, sizeof m->missing_name, "%s", fname[0] ? fname : "unnamed");
      }
      continue;
    }
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: filter %d ('%s') not available: its chunks cannot be "
                  "decoded here; install hdf5plugin and set HDF5_PLUGIN_PATH to its plugin "
                  "directory", label, (int)id, fname[0] ? fname : "unnamed");
  }
  H5Pclose(dcpl);
  return st;
}

static ooc_status_t open_impl(ooc_ctx_t *ctx, const char *file, const char *dset_in,
                              unsigned flags, h5mat_t **out) {
  char dname[NAME_CAP], label[LABEL_CAP], dset[NAME_CAP], slice[128] = "";
  /* "/B[0,:,:]": the slice is split off the dataset name (docs/CLI.md, "Matrix specs") */
  snprintf(dset, sizeof dset, "%s", dset_in);
  char *br = strchr(dset, '[');
  size_t dl = strlen(dset);
  if (br && dl > 0 && dset[dl - 1] == ']' && br != dset) {
    if (strlen(br) >= sizeof slice)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "%s:%s: slice too long", file, dset_in);
    snprintf(slice, sizeof slice, "%s", br);
    *br = 0;
  }
  if (normalize_dset(dset, dname, sizeof dname) < 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s:%s: dataset name too long", file, dset);
  make_label(label, sizeof label, file, dname);
  if (slice[0]) {
    size_t len = strlen(label);
    snprintf(label + len, sizeof label - len, "%s", slice);
  }

  struct stat sb;
  if (stat(file, &sb) != 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      const char *hint = strchr(file, ':') ? " (name a dataset as file.h5:/dataset)" : "";
      return OOC_FAIL(ctx, OOC_ERR_IO, "%s: no such file%s", label, hint);
    }
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot access the file: %s", label, strerror(e));
  }
  if (S_ISDIR(sb.st_mode))
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: is a directory, not an HDF5 file", label);
  /* HDF5 needs random access, and opening a FIFO with no writer would block for ever */
  if (!S_ISREG(sb.st_mode))
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: is %s, not a regular file; HDF5 needs a regular "
                    "file (copy the data into one)", label,
                    S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ? "a character device"
                    : S_ISBLK(sb.st_mode) ? "a block device" : S_ISSOCK(sb.st_mode) ? "a socket"
                    : "a special file");
  unsigned char head[8] = {0};
  int fd = fio_open(ctx, file, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot open the file: %s", label,
                              strerror(errno));
  int64_t got = fio_pread_all(ctx, fd, head, sizeof head, 0);
  fio_close(ctx, fd);
  if (got < 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot read the file: %s", label, strerror((int)-got));
  int inj = fio_gate(ctx, 0);
  if (inj)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot read the file: %s", label, strerror(inj));
  if (H5Fis_hdf5(file) <= 0) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (got == 8 && !memcmp(head, sig, 8))
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: truncated or damaged HDF5 file (signature "
                      "present, superblock unreadable)", label);
    if (sb.st_size == 0)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: not an HDF5 file (the file is empty)", label);
    if (got >= 4 && !memcmp(head, "CDF", 3) && (head[3] == 1 || head[3] == 2 || head[3] == 5))
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: not an HDF5 file (it is netCDF-3 classic; "
                      "convert it with nccopy -k nc4)", label);
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: not an HDF5 file", label);
  }

  hid_t fapl = make_fapl();
  inj = fio_gate(ctx, 0);
  hid_t f = inj ? -1 : H5Fopen(file, H5F_ACC_RDONLY, fapl);
  h5err_t fe = inj ? injected(inj) : h5_last_error();
  H5Pclose(fapl);
  if (f >= 0) fio_h5_opened(ctx);
  if (f < 0) {
    if (fe.truncated && fe.stored_eof)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: truncated HDF5 file (%llu of %llu bytes present)",
                      label, fe.eof, fe.stored_eof);
    if (fe.truncated)
      return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: truncated HDF5 file (%s)", label, fe.inner);
    if (fe.lock)
      return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot lock the file (%s); where the file system has "
                      "no locking, set HDF5_USE_FILE_LOCKING=FALSE", label, fe.inner);
    if (fe.sys_errno)
      return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot open the file: %s", label,
                      strerror(fe.sys_errno));
    return OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: truncated or damaged HDF5 file, cannot open it (%s)",
                    label, fe.inner);
  }

  ooc_status_t st = OOC_OK;
  h5mat_t *m = new_handle(ctx);
  if (!m) {
    H5Fclose(f);
    fio_h5_closed(ctx);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory", label);
  }
  m->file = f;

  if (!dname[0]) {
    dlist_t l;
    list_datasets(f, 1, &l);
    if (l.count == 0) {
      dlist_t all;
      list_datasets(f, 0, &all);
      if (all.broken && !all.count)
        st = OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: damaged HDF5 file: its root group cannot be "
                      "read", label);
      else
        st = all.count ? OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: no 2-D numeric dataset (datasets "
                                  "here: %s)", label, all.list)
                       : OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: no 2-D numeric dataset (the file has "
                                  "no datasets)", label);
      goto done;
    }
    if (l.count > 1) {
      st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: several 2-D datasets (%s): name one as %s:/dset",
                    label, l.list, file);
      goto done;
    }
    snprintf(dname, sizeof dname, "%s", l.first);
    make_label(label, sizeof label, file, dname);
  }

  hid_t obj = H5Oopen(f, dname, H5P_DEFAULT);
  if (obj < 0) {
    dlist_t all;
    list_datasets(f, 0, &all);
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: no dataset '%s' (datasets here: %s)", label, dname,
                  all.count ? all.list : "none");
    goto done;
  }
  H5I_type_t ot = H5Iget_type(obj);
  H5Oclose(obj);
  if (ot != H5I_DATASET) {
    dlist_t all;
    list_datasets(f, 0, &all);
    st = OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: '%s' is %s, not a dataset (datasets here: %s)", label,
                  dname, ot == H5I_GROUP ? "a group" : "a named datatype",
                  all.count ? all.list : "none");
    goto done;
  }
  m->dset = H5Dopen2(f, dname, H5P_DEFAULT);
  if (m->dset < 0) {
    st = OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot open the dataset (%s)", label,
                  h5_last_error().inner);
    goto done;
  }
  m->keep_fill = (flags & H5M_KEEP_FILL) != 0;
  OOC_CHECK(st = inspect_dataset(m, label, slice, (flags & H5M_TRANS) != 0));
  if (m->chunk_r > 0) {
    /* reopen with a chunk cache sized from the chunk shape, known only now */
    hid_t dapl = make_dapl(m->chunk_r, m->chunk_c, m->cols, m->file_es);
    H5Dclose(m->dset);
    m->dset = H5Dopen2(f, dname, dapl);
    H5Pclose(dapl);
    if (m->dset < 0) {
      st = OOC_FAIL(ctx, OOC_ERR_CORRUPT, "%s: cannot open the dataset (%s)", label,
                    h5_last_error().inner);
      goto done;
    }
  }
  setup_direct(m);
  m->path = ooc_strdup(ctx, file);
  m->name = ooc_strdup(ctx, label);
  {
    char held[PATH_CAP] = "";
    hid_t df = H5Iget_file_id(m->dset);
    if (df >= 0) {
      if (H5Fget_name(df, held, sizeof held) < 0) held[0] = 0;
      H5Fclose(df);
    }
    m->data_file = ooc_strdup(ctx, held[0] ? held : file);
  }
  if (!m->path || !m->name || !m->data_file)
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory", label);

done:
  if (st != OOC_OK) {
    h5m_close(m);
    return st;
  }
  *out = m;
  return OOC_OK;
}

ooc_status_t h5m_open(ooc_ctx_t *ctx, const char *file, const char *dset, h5mat_t **out) {
  return h5m_open2(ctx, file, dset, 0, out);
}

ooc_status_t h5m_open2(ooc_ctx_t *ctx, const char *file, const char *dset, unsigned flags,
                       h5mat_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  if (!file || !*file) return OOC_FAIL(ctx, OOC_ERR_ARG, "no input file named");
  if (strlen(file) >= PATH_CAP) return OOC_FAIL(ctx, OOC_ERR_ARG, "%.80s...: path too long", file);
  h5m_register_zstd();
  quiet_t q = quiet_begin();
  ooc_status_t st = open_impl(ctx, file, dset ? dset : "", flags, out);
  quiet_end(q);
  return st;
}

/* ---- square tiles transposed in place ---------------------------------------------------------- */

#define TB 32

static void transpose_square(double *a, int64_t n) {
  for (int64_t ib = 0; ib < n; ib += TB)
    for (int64_t jb = ib; jb < n; jb += TB) {
      int64_t ie = ooc_min64(ib + TB, n), je = ooc_min64(jb + TB, n);
      for (int64_t i = ib; i < ie; i++)
        for (int64_t j = (ib == jb ? i + 1 : jb); j < je; j++) {
          double t = a[i * n + j];
          a[i * n + j] = a[j * n + i];
          a[j * n + i] = t;
        }
    }
}

/* ---- direct chunk I/O ----------------------------------------------------------------------
 *
 * Reading: HDF5 says where each chunk (or the contiguous data) lies in the file; its bytes are
 * then read with pread on HDF5's own descriptor, decoded, converted and transposed straight
 * into the caller's column-major buffer by several threads (io/chunkio.h). That skips HDF5's
 * chunk cache, its filter buffers and our row-major staging copy, and decodes zstd chunks in
 * parallel. Taken only where the bytes on disk are what chunkio decodes: IEEE float32/float64
 * in the native (little-endian) order, no user block, the sec2 driver, and contiguous storage
 * (not external) or chunks stored raw or as zstd frames (filter 32015 alone). Anything else
 * (integers, big-endian, other filters, an unallocated chunk, a raw chunk of the wrong size)
 * goes through H5Dread as before.
 *
 * Writing: a rectangle of whole chunks of an output without filter or with zstd is packed
 * (transposed, converted, compressed) on several threads and handed to HDF5 with
 * H5Dwrite_chunk, on this thread, while the threads prepare what comes next: raw chunks one at
 * a time, each split by bands of rows over the threads; zstd chunks in batches, a chunk per
 * thread. The filter stays on the dataset, so h5py and HDF5 decode those chunks as any other.
 *
 * Faults: one fio_gate per direct read (it covers the preads of its threads) and one per chunk
 * written, so injected faults hit these paths as they hit H5Dread and H5Dwrite. */

static int vfd_fd(hid_t file) {
  hid_t fapl = H5Fget_access_plist(file);
  int fd = -1;
  if (fapl >= 0) {
    void *h = NULL;
    if (H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(file, fapl, &h) >= 0 && h)
      fd = *(int *)h;
    H5Pclose(fapl);
  }
  return fd;
}

/* Decides m->direct for an open dataset (input or output). */
static void setup_direct(h5mat_t *m) {
  m->direct = DIRECT_OFF;
  m->zstd = 0;
  if (m->general) return; /* slices, 1-D and transposed reads go through H5Dread */
  if (H5Tequal(H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE) <= 0 ||
      H5Tequal(H5T_NATIVE_FLOAT, H5T_IEEE_F32LE) <= 0)
    return;
  hid_t ft = H5Dget_type(m->dset);
  int raw = ft >= 0 && ((m->type == H5M_F64 && H5Tequal(ft, H5T_IEEE_F64LE) > 0) ||
                        (m->type == H5M_F32 && H5Tequal(ft, H5T_IEEE_F32LE) > 0));
  if (ft >= 0) H5Tclose(ft);
  /* The file that holds the dataset, which is not the file the caller named when the name is an
   * external link (issue 20): its descriptor and user block are the ones chunk addresses refer
   * to. The id only adds a reference; the dataset keeps the file (and so the descriptor) open. */
  hid_t df = raw ? H5Iget_file_id(m->dset) : -1;
  hid_t fcpl = df >= 0 ? H5Fget_create_plist(df) : -1;
  hsize_t ub = 1;
  if (fcpl >= 0) {
    if (H5Pget_userblock(fcpl, &ub) < 0) ub = 1;
    H5Pclose(fcpl);
  }
  int fd = ub == 0 && df >= 0 ? vfd_fd(df) : -1;
  if (df >= 0) H5Fclose(df);
  hid_t dcpl = fd >= 0 ? H5Dget_create_plist(m->dset) : -1;
  if (dcpl < 0) return;
  H5D_layout_t lay = H5Pget_layout(dcpl);
  int nf = H5Pget_nfilters(dcpl);
  if (lay == H5D_CONTIGUOUS && nf == 0 && H5Pget_external_count(dcpl) == 0) {
    haddr_t a = H5Dget_offset(m->dset); /* undefined until the storage is allocated */
    if (a != HADDR_UNDEF && a <= (haddr_t)INT64_MAX) {
      m->contig_addr = (int64_t)a;
      m->direct = DIRECT_CONTIG;
    }
  } else if (lay == H5D_CHUNKED && m->chunk_r > 0) {
    int ok = nf == 0;
    if (nf == 1) {
      unsigned flags = 0, opts = 0, cd[8];
      size_t ncd = 8;
      H5Z_filter_t id = H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, 0, NULL, NULL);
      /* edge chunks stored unfiltered by that option carry no mark we could rely on */
      ok = id == (H5Z_filter_t)OOC_H5Z_ZSTD && H5Pget_chunk_opts(dcpl, &opts) >= 0 &&
           !(opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS);
      m->zstd = ok;
    }
    if (ok) m->direct = DIRECT_CHUNKED;
  }
  H5Pclose(dcpl);
  m->fd = m->direct ? fd : -1;
}

void h5m_writeback_hint(h5mat_t *m) {
  if (m && m->fd >= 0) fio_writeback_hint(m->ctx, m->fd, 0, 0);
}

void h5m_set_direct(h5mat_t *m, int on) {
  if (!m) return;
  if (!on) {
    m->direct = DIRECT_OFF;
  } else if (m->dset >= 0) {
    quiet_t q = quiet_begin();
    setup_direct(m);
    quiet_end(q);
  }
}

int h5m_direct(const h5mat_t *m) { return m ? m->direct : 0; }

static void release_wslots(h5mat_t *m) {
  for (int64_t k = 0; k < m->nwslot; k++) ooc_free(m->ctx, m->wslot[k]);
  ooc_free(m->ctx, m->wslot);
  m->wslot = NULL;
  m->nwslot = 0;
  m->wslot_bytes = 0;
}

void h5m_set_stage(h5mat_t *m, int64_t bytes) {
  if (!m || m->virt) return;
  m->stage = bytes > 0 ? bytes : DIRECT_STAGE_BYTES;
  release_wslots(m);
}

/* One piece of a direct read: the part of the rectangle in one stored block (a chunk, or a band
 * of its rows; for contiguous data, a band of the matrix's rows). */
typedef struct {
  int64_t r, c, h, w;  /* the piece, in matrix coordinates */
  int64_t base, csize; /* file offset of the block's element (0, 0); zstd: the frame's bytes */
  int64_t br, rw;      /* the stored block: rows, elements per row */
  int64_t i0, j0;      /* (r, c) inside the block */
  int zstd, err;
  const char *why;
} rjob_t;

typedef struct {
  const h5mat_t *m;
  rjob_t *jobs;
  double *dst;
  int64_t ld, r0, c0;
  int trans;  /* dst holds the rectangle's transpose (h5m_read_t) */
  char **win; /* per worker: win_bytes, twice for zstd (input and output windows) */
  size_t win_bytes;
  cio_pread_fn pread_fn;
} rbatch_t;

static void rjob_run(void *arg, int64_t k, int worker) {
  rbatch_t *b = arg;
  rjob_t *j = &b->jobs[k];
  int64_t di = j->r - b->r0, dj = j->c - b->c0;
  double *d = b->dst + (b->trans ? dj + di * b->ld : di + dj * b->ld);
  size_t es = b->m->file_es;
  char *w = b->win[worker];
  if (j->zstd)
    j->err = cio_read_zstd(b->pread_fn, b->m->fd, j->base, j->csize, es, j->br, j->rw, j->i0,
                           j->j0, j->h, j->w, d, b->ld, b->trans, w, w + b->win_bytes, b->win_bytes,
                           &j->why);
  else
    j->err = cio_read_raw(b->pread_fn, b->m->fd, j->base, es, j->rw, j->i0, j->j0, j->h, j->w, d,
                          b->ld, b->trans, w, b->win_bytes);
}

static ooc_status_t read_fail(h5mat_t *m, h5err_t e, int64_t r0, int64_t c0, int64_t nr,
                              int64_t nc);
static ooc_status_t check_chunk(h5mat_t *m, int64_t R, int64_t C, int *present);

static ooc_status_t direct_read_error(h5mat_t *m, const rjob_t *j, int64_t r0, int64_t c0,
                                      int64_t nr, int64_t nc) {
  long long a = r0, b = r0 + nr - 1, x = c0, y = c0 + nc - 1;
  long long br = j->r - j->i0, bc = j->c - j->j0;
  if (j->err == CIO_EDECODE)
    return OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: rows %lld..%lld, columns %lld..%lld: a chunk "
                    "failed to decode (corrupt or truncated data: the chunk at row %lld, column "
                    "%lld: %s)", m->name, a, b, x, y, br, bc, j->why ? j->why : "?");
  if (j->err == CIO_ESHORT)
    return OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: rows %lld..%lld, columns %lld..%lld cannot be "
                    "read (corrupt or truncated file: the data stored from byte %lld runs past "
                    "its end)", m->name, a, b, x, y, (long long)j->base);
  if (j->err == ENOMEM)
    return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: out of memory decoding rows %lld..%lld, columns "
                    "%lld..%lld", m->name, a, b, x, y);
  return OOC_FAIL(m->ctx, OOC_ERR_IO, "%s: cannot read rows %lld..%lld, columns %lld..%lld: %s",
                  m->name, a, b, x, y, strerror(j->err));
}

/* *fallback = 1 (nothing read, no error): this rectangle needs H5Dread after all. */
static ooc_status_t direct_read(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                double *dst, int64_t ld, int trans, int *fallback) {
  ooc_ctx_t *ctx = m->ctx;
  *fallback = 0;
  int inj = fio_gate(ctx, 0);
  if (inj) return read_fail(m, injected(inj), r0, c0, nr, nc);
  int chunked = m->direct == DIRECT_CHUNKED;
  int64_t es = (int64_t)m->file_es;
  int64_t cr = chunked ? m->chunk_r : m->rows, cc = chunked ? m->chunk_c : m->cols;
  int64_t ci0 = r0 / cr, ci1 = (r0 + nr - 1) / cr, cj0 = c0 / cc, cj1 = (c0 + nc - 1) / cc;
  int64_t nchunks = (ci1 - ci0 + 1) * (cj1 - cj0 + 1);
  int64_t cap = 2 * nchunks + nr * nc * 8 / DIRECT_JOB_BYTES + 1, njobs = 0;
  rjob_t *jobs = ooc_malloc(ctx, (size_t)cap * sizeof *jobs);
  if (!jobs) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory reading", m->name);
  ooc_status_t st = OOC_OK;
  int any_zstd = 0;
  for (int64_t ci = ci0; ci <= ci1 && !*fallback && st == OOC_OK; ci++)
    for (int64_t cj = cj0; cj <= cj1 && !*fallback && st == OOC_OK; cj++) {
      int64_t R = ci * cr, C = cj * cc;
      int64_t a = ooc_max64(r0, R), b = ooc_min64(r0 + nr, R + cr);
      int64_t x = ooc_max64(c0, C), y = ooc_min64(c0 + nc, C + cc);
      rjob_t t = {a, x, b - a, y - x, m->contig_addr, 0, cr, cc, a - R, x - C, 0, 0, NULL};
      if (chunked) {
        hsize_t off[2] = {(hsize_t)R, (hsize_t)C}, size = 0;
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        if (H5Dget_chunk_info_by_coord(m->dset, off, &mask, &addr, &size) < 0 ||
            addr > (haddr_t)INT64_MAX || size > (hsize_t)INT64_MAX) {
          *fallback = 1; /* unreadable index: HDF5 knows what to say */
          break;
        }
        if (addr == HADDR_UNDEF) { /* never written: refused, or the fill value through HDF5 */
          int present = 1;
          st = check_chunk(m, R, C, &present);
          *fallback = st == OOC_OK;
          break;
        }
        t.base = (int64_t)addr;
        t.csize = (int64_t)size;
        t.zstd = m->zstd && !(mask & 1u); /* bit 0 set: the filter was skipped for this chunk */
        if (!t.zstd && t.csize != cr * cc * es) { /* never handed to H5Dread (issue 20) */
          int present = 1;
          st = check_chunk(m, R, C, &present);
          *fallback = st == OOC_OK;
          break;
        }
      }
      any_zstd |= t.zstd;
      if (t.zstd) {
        jobs[njobs++] = t;
        continue;
      }
      int64_t band = ooc_max64(1, DIRECT_JOB_BYTES / (t.w * 8));
      for (int64_t i = 0; i < t.h; i += band) {
        rjob_t u = t;
        u.r = t.r + i;
        u.i0 = t.i0 + i;
        u.h = ooc_min64(band, t.h - i);
        jobs[njobs++] = u;
      }
    }
  if (*fallback || st != OOC_OK) {
    ooc_free(ctx, jobs);
    return st;
  }
  /* Windows: DIRECT_WIN_BYTES per thread (two for zstd: input and output), fewer threads and
   * smaller windows within the handle's stage; never less than a chunk row for zstd. */
  int64_t rect = nr * nc * es, per = any_zstd ? 2 : 1;
  int threads = rect < DIRECT_PAR_MIN_BYTES ? 1 : cio_default_threads();
  threads = (int)ooc_min64(threads, njobs);
  int64_t want = ooc_min64((int64_t)DIRECT_WIN_BYTES, ooc_max64(rect / threads, 4096));
  threads = (int)ooc_max64(1, ooc_min64(threads, m->stage / (want * per)));
  int64_t need = any_zstd ? cc * es : es;
  size_t win = (size_t)ooc_max64(need, ooc_min64(want, m->stage / per));
  win = (win + 63) / 64 * 64; /* the output window starts at wins[k] + win: keep it aligned */
  char *wins[CIO_MAX_THREADS] = {NULL};
  for (int k = 0; k < threads && st == OOC_OK; k++)
    if (!(wins[k] = ooc_malloc(ctx, win * (any_zstd ? 2 : 1))))
      st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory for the read windows", m->name);
  if (st == OOC_OK) {
    rbatch_t rb = {m, jobs, dst, ld, r0, c0, trans, wins, win, fio_pread_op(ctx)};
    ooc_parallel(threads, njobs, rjob_run, &rb);
    for (int64_t k = 0; k < njobs && st == OOC_OK; k++)
      if (jobs[k].err) st = direct_read_error(m, &jobs[k], r0, c0, nr, nc);
    if (st == OOC_OK) m->bytes += nr * nc * es;
  }
  for (int k = 0; k < threads; k++) ooc_free(ctx, wins[k]);
  ooc_free(ctx, jobs);
  return st;
}

/* A direct write: chunk q of the rectangle (row-major among its chunks) is prepared in slot
 * q % nslot: packed (zero-padded at the matrix's edge), then compressed behind the raw bytes. */
typedef struct {
  const h5mat_t *m;
  const double *src;
  int64_t rs, cs;          /* element (i, j) of the rectangle at src[i * rs + j * cs] */
  int64_t r0, c0, ncc;     /* ncc: chunks across the rectangle */
  int64_t first;           /* the batch's first chunk */
  char **slot; /* nslot buffers of slot_bytes */
  int64_t nslot;
  size_t raw_bytes, slot_bytes;
  size_t *size; /* per slot: the bytes to write, 0 if compression failed */
  int zworkers;
  int bands; /* chunks one at a time, each packed by bands of rows on all threads (else a
              * chunk per thread) */
} wbatch_t;

/* Rows [ia, ib) of chunk q into its slot (zeros beyond the matrix's edge). */
static void pack_rows(const wbatch_t *b, int64_t q, int64_t ia, int64_t ib) {
  const h5mat_t *m = b->m;
  int64_t R = b->r0 + (q / b->ncc) * m->chunk_r, C = b->c0 + (q % b->ncc) * m->chunk_c;
  int64_t h = ooc_min64(m->chunk_r, m->rows - R), w = ooc_min64(m->chunk_c, m->cols - C);
  size_t row_bytes = (size_t)m->chunk_c * m->file_es;
  char *raw = b->slot[q % b->nslot] + (size_t)ia * row_bytes;
  if (h < m->chunk_r || w < m->chunk_c) memset(raw, 0, (size_t)(ib - ia) * row_bytes);
  int64_t ie = ooc_min64(ib, h);
  if (ie > ia)
    cio_pack(b->src + (R - b->r0 + ia) * b->rs + (C - b->c0) * b->cs, b->rs, b->cs, ie - ia, w,
             m->file_es, raw, m->chunk_c);
}

static void seal_slot(const wbatch_t *b, int64_t q) {
  int64_t s = q % b->nslot;
  char *raw = b->slot[s];
  b->size[s] = b->m->zstd ? cio_zstd_compress(b->m->out_level, b->zworkers, raw, b->raw_bytes,
                                              raw + b->raw_bytes, b->slot_bytes - b->raw_bytes)
                          : b->raw_bytes;
}

/* job k: the whole chunk first + k */
static void wjob_run(void *arg, int64_t k, int worker) {
  (void)worker;
  const wbatch_t *b = arg;
  pack_rows(b, b->first + k, 0, b->m->chunk_r);
  seal_slot(b, b->first + k);
}

/* job k: a band of rows of the one chunk `first` (a chunk too large to prepare several) */
#define PACK_BAND_ROWS 64
static void wband_run(void *arg, int64_t k, int worker) {
  (void)worker;
  const wbatch_t *b = arg;
  pack_rows(b, b->first, k * PACK_BAND_ROWS,
            ooc_min64((k + 1) * PACK_BAND_ROWS, b->m->chunk_r));
}

/* Prepare chunks [first, first + cnt): each on a thread, or (b->bands) one at a time by bands
 * of rows, then sealed (a large chunk compressed by zstd's own threads). */
static void prepare_batch(wbatch_t *b, int threads, int64_t first, int64_t cnt) {
  b->first = first;
  if (!b->bands) {
    ooc_parallel(threads, cnt, wjob_run, b);
    return;
  }
  for (int64_t q = first; q < first + cnt; q++) {
    b->first = q;
    ooc_parallel(threads, ooc_cdiv64(b->m->chunk_r, PACK_BAND_ROWS), wband_run, b);
    seal_slot(b, q);
  }
}

/* prepare_batch in the background, for a batch of one chunk where b->bands: started on the
 * pool, then joined (and a banded chunk sealed) by prepare_join. */
static void prepare_start(ooc_par_group_t *g, wbatch_t *b, int threads, int64_t first,
                          int64_t cnt) {
  b->first = first;
  if (b->bands)
    ooc_par_start(g, threads, ooc_cdiv64(b->m->chunk_r, PACK_BAND_ROWS), wband_run, b);
  else
    ooc_par_start(g, threads, cnt, wjob_run, b);
}

static void prepare_join(ooc_par_group_t *g, wbatch_t *b) {
  ooc_par_join(g);
  if (b->bands) seal_slot(b, b->first);
}

static ooc_status_t write_fail(h5mat_t *m, h5err_t e, int64_t r0, int64_t c0, int64_t nr,
                               int64_t nc);

static int direct_write_fits(const h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc) {
  return m->writable && m->direct == DIRECT_CHUNKED && r0 % m->chunk_r == 0 &&
         c0 % m->chunk_c == 0 && (nr % m->chunk_r == 0 || r0 + nr == m->rows) &&
         (nc % m->chunk_c == 0 || c0 + nc == m->cols);
}

typedef struct {
  const h5mat_t *m;
  int64_t R, C, h, w;
  const char *raw;
} tap_job_t;

static void tap_run(void *arg, int64_t k, int worker) {
  (void)k;
  (void)worker;
  const tap_job_t *t = arg;
  t->m->tap(t->m->tap_user, t->R, t->C, t->h, t->w, t->raw, (int)t->m->file_es, t->m->chunk_c);
}

/* The OOC_FAULT_CORRUPT seam (base.h): one bit flipped in a packed chunk, the lowest exponent
 * bit of its largest element in magnitude, which doubles or halves it: a silent corruption that
 * matters (a one-element error as large as the chunk's largest entry) without swamping ||X||
 * (an element blown up to 2^1024 |x| would dominate the norms the ratio divides by). */
static void corrupt_chunk(const h5mat_t *m, char *raw, int64_t h, int64_t w) {
  int64_t at = 0;
  double big = -1;
  for (int64_t i = 0; i < h; i++)
    for (int64_t c = 0; c < w; c++) {
      int64_t k = i * m->chunk_c + c;
      double v = fabs(m->file_es == 8 ? ((double *)raw)[k] : ((float *)raw)[k]);
      if (v > big) {
        big = v;
        at = k;
      }
    }
  unsigned char *e = (unsigned char *)raw + at * (int64_t)m->file_es;
  if (m->file_es == 8) e[6] ^= 0x10; /* little-endian: bit 52 of a double */
  else e[2] ^= 0x80;                 /* bit 23 of a float */
}

static ooc_status_t direct_write(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                 const double *src, int64_t rs, int64_t cs) {
  ooc_ctx_t *ctx = m->ctx;
  int64_t ncr = ooc_cdiv64(nr, m->chunk_r), ncc = ooc_cdiv64(nc, m->chunk_c), total = ncr * ncc;
  size_t raw_bytes = (size_t)(m->chunk_r * m->chunk_c) * m->file_es;
  size_t slot_bytes = raw_bytes + (m->zstd ? cio_zstd_bound(raw_bytes) : 0);
  int threads = cio_default_threads();
  /* Raw chunks (piped): one at a time, double-buffered, each packed by bands of rows on all
   * threads while HDF5 writes the one before. As batches of a chunk per thread, each call waited
   * for a whole chunk's pack on one thread before its first write, and packed nothing while
   * HDF5 wrote: on the H200 host (float32 inverse, n = 65536, 31 calls of 8 chunks of 64 MiB on
   * average) 2.3 s of packing beside 4.9 s of HDF5's writes, one after the other; piped, the
   * write phase took 6.7-7.4 s against 7.5-8.1 (issue 27). zstd chunks: batches of B chunks, a
   * chunk per thread (each compressed whole), double-buffered when two batches fit in the
   * staging allowance; a chunk larger than half of it is written one at a time (zstd then
   * compresses it on its threads). */
  int64_t B = 1, nslot = 1;
  int piped = !m->zstd && total > 1 && 2 * (int64_t)slot_bytes <= m->stage;
  if (piped) {
    nslot = 2;
  } else if (2 * (int64_t)slot_bytes <= m->stage) {
    B = ooc_min64(total, ooc_min64(2 * threads, m->stage / (2 * (int64_t)slot_bytes)));
    nslot = total > B ? 2 * B : B;
  }
  if (m->wslot && (m->nwslot < nslot || m->wslot_bytes != slot_bytes)) release_wslots(m);
  if (!m->wslot) {
    int ok = (m->wslot = ooc_calloc(ctx, (size_t)nslot, sizeof *m->wslot)) != NULL;
    m->wslot_bytes = slot_bytes;
    for (; ok && m->nwslot < nslot; m->nwslot++)
      ok = (m->wslot[m->nwslot] = ooc_malloc(ctx, slot_bytes)) != NULL;
    if (!ok) {
      release_wslots(m);
      return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: cannot allocate %lld bytes of chunk buffers",
                      m->name, (long long)(nslot * (int64_t)slot_bytes));
    }
  }
  char **slot = m->wslot;
  size_t *size = ooc_calloc(ctx, (size_t)nslot, sizeof *size);
  if (!size) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory writing", m->name);
  wbatch_t wb[2];
  for (int k = 0; k < 2; k++)
    wb[k] = (wbatch_t){m, src, rs, cs, r0, c0, ncc, 0, slot, nslot, raw_bytes, slot_bytes, size,
                       nslot == 1 ? threads : 1, piped || nslot == 1};
  ooc_status_t st = OOC_OK;
  prepare_batch(&wb[0], threads, 0, ooc_min64(B, total));
  for (int64_t first = 0, bi = 0; first < total && st == OOC_OK; first += B, bi++) {
    int64_t cnt = ooc_min64(B, total - first), next = first + B;
    int64_t ncnt = next < total ? ooc_min64(B, total - next) : 0;
    int overlap = nslot > B && ncnt > 0;
    ooc_par_group_t g;
    if (overlap) /* the threads prepare the next batch in the other half of the slots */
      prepare_start(&g, &wb[(bi + 1) & 1], threads, next, ncnt);
    for (int64_t q = first; q < first + cnt && st == OOC_OK; q++) {
      int64_t s = q % nslot;
      int64_t R = r0 + (q / ncc) * m->chunk_r, C = c0 + (q % ncc) * m->chunk_c;
      if (!size[s]) {
        st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: cannot compress the chunk at row %lld, column "
                      "%lld (zstd failed: out of memory?)", m->name, (long long)R, (long long)C);
        break;
      }
      hsize_t off[2] = {(hsize_t)R, (hsize_t)C};
      int64_t h = ooc_min64(m->chunk_r, m->rows - R), w = ooc_min64(m->chunk_c, m->cols - C);
      if (!m->zstd && ooc_fault_hit(ctx, OOC_FAULT_CORRUPT)) corrupt_chunk(m, slot[s], h, w);
      /* the tap reads the raw chunk on its own thread while HDF5 writes it (both only read the
       * slot), so the fused check's products cost the write no time when the disk is slower */
      tap_job_t tj = {m, R, C, h, w, slot[s]};
      ooc_par_group_t tg;
      if (m->tap) ooc_par_start(&tg, 1, 1, tap_run, &tj);
      int inj = fio_gate(ctx, 1);
      const char *data = slot[s] + (m->zstd ? raw_bytes : 0);
      if (inj || H5Dwrite_chunk(m->dset, H5P_DEFAULT, 0, off, size[s], data) < 0)
        st = write_fail(m, inj ? injected(inj) : h5_last_error(), r0, c0, nr, nc);
      else
        m->bytes += h * w * (int64_t)m->file_es;
      if (m->tap) ooc_par_join(&tg); /* the slot is reused only once the tap has read it */
    }
    if (overlap) prepare_join(&g, &wb[(bi + 1) & 1]);
    if (st == OOC_OK && !overlap && ncnt > 0) prepare_batch(&wb[0], threads, next, ncnt);
  }
  ooc_free(ctx, size);
  if (st != OOC_OK) release_wslots(m);
  return st;
}

/* ---- missing data (issue 20) ---------------------------------------------------------------
 *
 * Where no data are stored HDF5 reads the fill value (zeros by default) without a word: a chunk
 * never written (a writer killed after a flush), a virtual dataset's source that is missing or
 * smaller than its mapping, an external raw file shorter than the data, contiguous storage never
 * allocated. A covariance with a hole is not the matrix, so every read refuses them, naming the
 * first missing block, unless the caller asked for the fill value (h5m_set_allow_fill). The
 * whole-dataset facts are checked once, at the first read; chunks at every read (an index
 * lookup per chunk, which the direct path makes anyway). */

static ooc_status_t missing(h5mat_t *m, int64_t r, int64_t c, int64_t h, int64_t w,
                            const char *why) {
  return OOC_FAIL(m->ctx, OOC_ERR_FORMAT, "%s: no data stored for rows %lld..%lld, columns "
                  "%lld..%lld (%s); HDF5 would read the fill value there, and a matrix with a "
                  "hole is not the matrix: refusing (--allow-fill reads missing data as the fill "
                  "value)", m->name, (long long)r, (long long)(r + h - 1), (long long)c,
                  (long long)(c + w - 1), why);
}

/* Chunk (R, C) of rectangle-reading: stored, and a chunk stored unfiltered has exactly the
 * chunk's bytes (HDF5 would read past or short of it). */
static ooc_status_t check_chunk(h5mat_t *m, int64_t R, int64_t C, int *present) {
  hsize_t off[2] = {(hsize_t)R, (hsize_t)C}, size = 0;
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  *present = 1;
  if (m->writable) return OOC_OK; /* our own output, read back by the check: every chunk written */
  if (H5Dget_chunk_info_by_coord(m->dset, off, &mask, &addr, &size) < 0) return OOC_OK;
  int64_t h = ooc_min64(m->chunk_r, m->rows - R), w = ooc_min64(m->chunk_c, m->cols - C);
  if (addr == HADDR_UNDEF) {
    *present = 0;
    if (m->allow_fill) return OOC_OK;
    char why[96];
    snprintf(why, sizeof why, "the chunk at row %lld, column %lld was never written",
             (long long)R, (long long)C);
    return missing(m, R, C, h, w, why);
  }
  unsigned all = m->nfilters >= 32 ? ~0u : (1u << m->nfilters) - 1u;
  int64_t want = m->chunk_r * m->chunk_c * (int64_t)m->file_es;
  if ((mask & all) == all && (int64_t)size != want)
    return OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: the chunk at row %lld, column %lld is stored "
                    "unfiltered with %lld bytes; a chunk holds %lld (corrupt chunk index or "
                    "chunk)", m->name, (long long)R, (long long)C, (long long)size,
                    (long long)want);
  return OOC_OK;
}

/* Bytes a zlib stream inflates to (-1: it does not inflate). */
static int64_t inflated_size(const void *in, size_t n, int64_t limit) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit(&z) != Z_OK) return -1;
  unsigned char out[16384];
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)n;
  int rc = Z_OK;
  int64_t total = 0;
  while (rc == Z_OK && total <= limit) {
    z.next_out = out;
    z.avail_out = sizeof out;
    rc = inflate(&z, Z_NO_FLUSH);
    total += (int64_t)(sizeof out - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break; /* the stream ends early */
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? total : -1;
}

/* HDF5's own deflate filter returns whatever a stream inflates to, and HDF5 then copies a whole
 * chunk from it: a stream that inflates short would be read from beyond its buffer (issue 20).
 * Before HDF5 decodes a chunk of such a dataset, its stream is inflated once here and counted
 * (once per chunk and handle: a bit per chunk). */
static ooc_status_t check_deflate(h5mat_t *m, int64_t R, int64_t C) {
  int64_t ncr = ooc_cdiv64(m->rows, m->chunk_r), ncc = ooc_cdiv64(m->cols, m->chunk_c);
  int64_t q = (R / m->chunk_r) * ncc + C / m->chunk_c;
  if (!m->verified && !(m->verified = ooc_calloc(m->ctx, (size_t)((ncr * ncc + 7) / 8), 1)))
    return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: out of memory for the chunk table", m->name);
  if (m->verified[q / 8] & (1u << (q % 8))) return OOC_OK;
  hsize_t off[2] = {(hsize_t)R, (hsize_t)C}, size = 0;
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  if (H5Dget_chunk_info_by_coord(m->dset, off, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF ||
      (mask & (1u << (m->nfilters - 1))) || size == 0 || size > (hsize_t)CHUNK_MAX_BYTES)
    return OOC_OK; /* not stored, or deflate skipped: check_chunk's business */
  void *buf = ooc_malloc(m->ctx, (size_t)size);
  if (!buf) return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: out of memory reading a chunk", m->name);
  uint32_t fm = 0;
  int inj = fio_gate(m->ctx, 0);
  herr_t rc = inj ? -1 : H5Dread_chunk(m->dset, H5P_DEFAULT, off, &fm, buf);
  ooc_status_t st = OOC_OK;
  int64_t want = m->chunk_r * m->chunk_c * (int64_t)m->file_es;
  if (rc < 0) {
    h5err_t e = inj ? injected(inj) : h5_last_error();
    st = read_fail(m, e, R, C, ooc_min64(m->chunk_r, m->rows - R),
                   ooc_min64(m->chunk_c, m->cols - C));
  } else {
    int64_t got = inflated_size(buf, (size_t)size, want);
    if (got != want)
      st = OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: the chunk at row %lld, column %lld failed to "
                    "decode (%s; a chunk holds %lld bytes)", m->name, (long long)R, (long long)C,
                    got < 0 ? "its deflate stream is damaged or truncated"
                            : got > want ? "its deflate stream inflates to more"
                                         : "its deflate stream inflates to fewer bytes",
                    (long long)want);
  }
  ooc_free(m->ctx, buf);
  if (st == OOC_OK) m->verified[q / 8] |= (uint8_t)(1u << (q % 8));
  return st;
}

static ooc_status_t check_chunks(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc) {
  if (m->chunk_r <= 0) return OOC_OK;
  if (m->nfilters < 0) { /* an output read back: its pipeline, as created */
    hid_t dcpl = H5Dget_create_plist(m->dset);
    int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    if (dcpl >= 0) H5Pclose(dcpl);
    m->nfilters = nf > 0 ? nf : 0;
  }
  int present = 1;
  for (int64_t R = r0 / m->chunk_r * m->chunk_r; R < r0 + nr; R += m->chunk_r)
    for (int64_t C = c0 / m->chunk_c * m->chunk_c; C < c0 + nc; C += m->chunk_c) {
      OOC_TRY(check_chunk(m, R, C, &present));
      if (present && m->deflate_check && !m->writable) OOC_TRY(check_deflate(m, R, C));
    }
  return OOC_OK;
}

/* The directory of path, with a trailing slash ("" for none). */
static void dir_prefix(const char *path, char *out, size_t cap) {
  const char *sl = strrchr(path, '/');
  snprintf(out, cap, "%.*s", sl ? (int)(sl - path + 1) : 0, path);
}

/* A file HDF5 finds relative to the working directory or to the file that refers to it. */
static int find_near(const h5mat_t *m, const char *name, char *out, size_t cap) {
  struct stat sb;
  if (stat(name, &sb) == 0) return snprintf(out, cap, "%s", name), 1;
  char dir[PATH_CAP];
  dir_prefix(m->data_file ? m->data_file : m->path, dir, sizeof dir);
  if (name[0] != '/' && dir[0]) {
    snprintf(out, cap, "%s%s", dir, name);
    if (stat(out, &sb) == 0) return 1;
  }
  snprintf(out, cap, "%s", name);
  return 0;
}

/* Element index k (row-major in the file) as (row, column). */
static void elem_rc(const h5mat_t *m, int64_t k, int64_t *r, int64_t *c) {
  *r = k / m->cols;
  *c = k % m->cols;
}

static ooc_status_t check_external(h5mat_t *m, hid_t dcpl, int count) {
  int64_t es = (int64_t)m->file_es, need = m->rows * m->cols * es, done = 0;
  for (int i = 0; i < count && done < need; i++) {
    char name[PATH_CAP] = "", found[PATH_CAP];
    off_t offset = 0;
    hsize_t size = 0;
    if (H5Pget_external(dcpl, (unsigned)i, sizeof name, name, &offset, &size) < 0) break;
    int64_t seg = size == H5F_UNLIMITED ? need - done : ooc_min64((int64_t)size, need - done);
    struct stat sb;
    int ok = find_near(m, name, found, sizeof found) && stat(found, &sb) == 0;
    int64_t have = ok ? ooc_max64(0, (int64_t)sb.st_size - (int64_t)offset) : 0;
    if (have < seg) {
      int64_t r, c;
      elem_rc(m, (done + have) / es, &r, &c);
      char why[PATH_CAP + 160];
      if (!ok)
        snprintf(why, sizeof why, "the external raw file '%s' is missing", name);
      else
        snprintf(why, sizeof why, "the external raw file '%s' holds %lld of the %lld bytes needed "
                 "from offset %lld", found, (long long)have, (long long)seg, (long long)offset);
      /* from element (r, c) on, row-major: name the rows from r to the end */
      return missing(m, r, 0, m->rows - r, m->cols, why);
    }
    done += seg;
  }
  return OOC_OK;
}

static ooc_status_t check_virtual(h5mat_t *m, hid_t dcpl) {
  size_t count = 0;
  if (H5Pget_virtual_count(dcpl, &count) < 0) return OOC_OK;
  ooc_status_t st = OOC_OK;
  hid_t cover = -1; /* union of the mapped selections */
  int cover_ok = 1;
  for (size_t i = 0; i < count && st == OOC_OK; i++) {
    hid_t vs = H5Pget_virtual_vspace(dcpl, i), ss = H5Pget_virtual_srcspace(dcpl, i);
    char file[PATH_CAP] = "", dname[NAME_CAP] = "", found[PATH_CAP];
    hsize_t lo[2] = {0, 0}, hi[2] = {0, 0}, slo[2] = {0, 0}, shi[2] = {0, 0};
    /* a source selection of "all" is stored without the source's extent (known only once the
     * source is open): the source must then hold as many elements as the mapping */
    int all = ss >= 0 && H5Sget_select_type(ss) == H5S_SEL_ALL;
    int ok = vs >= 0 && ss >= 0 && H5Pget_virtual_filename(dcpl, i, file, sizeof file) >= 0 &&
             H5Pget_virtual_dsetname(dcpl, i, dname, sizeof dname) >= 0 &&
             H5Sget_select_bounds(vs, lo, hi) >= 0 &&
             (all || H5Sget_select_bounds(ss, slo, shi) >= 0);
    /* printf-style mappings (%b) and unlimited selections describe sources yet to come */
    if (ok && !strchr(file, '%') && !strchr(dname, '%') && H5Sget_select_npoints(vs) > 0 &&
        hi[0] < (hsize_t)m->rows && hi[1] < (hsize_t)m->cols) {
      char why[PATH_CAP + NAME_CAP + 96] = "";
      int here = strcmp(file, ".") == 0;
      if (!here && !find_near(m, file, found, sizeof found)) {
        snprintf(why, sizeof why, "its virtual-dataset source file '%s' is missing", file);
      } else {
        hid_t f = here ? H5Iget_file_id(m->dset) : H5Fopen(found, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t d = f >= 0 ? H5Dopen2(f, dname, H5P_DEFAULT) : -1;
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hsize_t dims[H5S_MAX_RANK];
        int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
        if (f < 0)
          snprintf(why, sizeof why, "its virtual-dataset source file '%s' cannot be opened", file);
        else if (d < 0)
          snprintf(why, sizeof why, "its virtual-dataset source '%s:%s' is missing", file, dname);
        else if (nd < 1 || nd > H5S_MAX_RANK || H5Sget_simple_extent_dims(sp, dims, NULL) < 0 ||
                 (!all && nd != H5Sget_simple_extent_ndims(ss)))
          snprintf(why, sizeof why, "its virtual-dataset source '%s:%s' has another shape", file,
                   dname);
        else if (all && H5Sget_simple_extent_npoints(sp) < H5Sget_select_npoints(vs))
          snprintf(why, sizeof why, "its virtual-dataset source '%s:%s' holds %lld elements; the "
                   "mapping needs %lld", file, dname, (long long)H5Sget_simple_extent_npoints(sp),
                   (long long)H5Sget_select_npoints(vs));
        else if (!all)
          for (int k = 0; k < nd && k < 2 && !why[0]; k++)
            if (shi[k] >= dims[k])
              snprintf(why, sizeof why, "its virtual-dataset source '%s:%s' has %llu entries in "
                       "dimension %d; the mapping reads up to %llu", file, dname,
                       (unsigned long long)dims[k], k, (unsigned long long)shi[k] + 1);
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
        if (f >= 0) H5Fclose(f);
      }
      if (why[0])
        st = missing(m, (int64_t)lo[0], (int64_t)lo[1], (int64_t)(hi[0] - lo[0] + 1),
                     (int64_t)(hi[1] - lo[1] + 1), why);
    } else {
      cover_ok = 0; /* cannot tell what is covered */
    }
    if (st == OOC_OK && cover_ok) {
      hid_t u = cover < 0 ? H5Scopy(vs) : H5Scombine_select(cover, H5S_SELECT_OR, vs);
      if (cover >= 0) H5Sclose(cover);
      cover = u;
      if (cover < 0) cover_ok = 0;
    }
    if (vs >= 0) H5Sclose(vs);
    if (ss >= 0) H5Sclose(ss);
  }
  if (st == OOC_OK && cover_ok &&
      (cover < 0 || H5Sget_select_npoints(cover) != (hssize_t)(m->rows * m->cols))) {
    /* the bounding box of what no mapping covers */
    hsize_t lo[2] = {0, 0}, hi[2] = {(hsize_t)m->rows - 1, (hsize_t)m->cols - 1};
    hsize_t z[2] = {0, 0}, dims[2] = {(hsize_t)m->rows, (hsize_t)m->cols};
    hid_t all = H5Scopy(m->fspace); /* as a hyperslab: H5Scombine_select takes no "all" */
    hid_t gap = all >= 0 && cover >= 0 &&
                        H5Sselect_hyperslab(all, H5S_SELECT_SET, z, NULL, dims, NULL) >= 0
                    ? H5Scombine_select(all, H5S_SELECT_NOTB, cover) : -1;
    if (gap < 0 || H5Sget_select_bounds(gap, lo, hi) < 0) {
      lo[0] = lo[1] = 0;
      hi[0] = (hsize_t)m->rows - 1;
      hi[1] = (hsize_t)m->cols - 1;
    }
    if (gap >= 0) H5Sclose(gap);
    if (all >= 0) H5Sclose(all);
    st = missing(m, (int64_t)lo[0], (int64_t)lo[1], (int64_t)(hi[0] - lo[0] + 1),
                 (int64_t)(hi[1] - lo[1] + 1),
                 "no virtual-dataset mapping covers them (all or part of this block)");
  }
  if (cover >= 0) H5Sclose(cover);
  return st;
}

/* Once per input handle, before its first read. */
static ooc_status_t check_complete(h5mat_t *m) {
  if (m->complete || m->writable) return OOC_OK;
  hid_t dcpl = H5Dget_create_plist(m->dset);
  if (dcpl < 0) return OOC_OK; /* the read reports what is wrong */
  H5D_layout_t lay = H5Pget_layout(dcpl);
  int next = H5Pget_external_count(dcpl);
  ooc_status_t st = OOC_OK;
  if (next > 0) {
    st = check_external(m, dcpl, next);
  } else if (lay == H5D_VIRTUAL) {
    st = check_virtual(m, dcpl);
  } else if (lay == H5D_CONTIGUOUS) {
    H5D_space_status_t ss = H5D_SPACE_STATUS_ERROR;
    if (H5Dget_space_status(m->dset, &ss) >= 0 && ss == H5D_SPACE_STATUS_NOT_ALLOCATED)
      st = missing(m, 0, 0, m->rows, m->cols, "the dataset's storage was never allocated");
  }
  H5Pclose(dcpl);
  if (st == OOC_OK) m->complete = 1;
  return st;
}

int h5m_source_files(h5mat_t *m, int (*fn)(void *arg, const char *path), void *arg) {
  if (!m || m->dset < 0) return 0;
  quiet_t q = quiet_begin();
  hid_t dcpl = H5Dget_create_plist(m->dset);
  int rc = 0;
  char name[PATH_CAP], found[PATH_CAP];
  int next = dcpl >= 0 ? H5Pget_external_count(dcpl) : 0;
  for (int i = 0; i < next && !rc; i++) {
    off_t off = 0;
    hsize_t size = 0;
    if (H5Pget_external(dcpl, (unsigned)i, sizeof name, name, &off, &size) >= 0) {
      find_near(m, name, found, sizeof found);
      rc = fn(arg, found);
    }
  }
  size_t nv = 0;
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Pget_virtual_count(dcpl, &nv) >= 0)
    for (size_t i = 0; i < nv && !rc; i++)
      if (H5Pget_virtual_filename(dcpl, i, name, sizeof name) >= 0 && strcmp(name, ".") &&
          !strchr(name, '%')) {
        find_near(m, name, found, sizeof found);
        rc = fn(arg, found);
      }
  if (dcpl >= 0) H5Pclose(dcpl);
  quiet_end(q);
  return rc;
}

void h5m_set_allow_fill(h5mat_t *m, int on) {
  if (m) m->allow_fill = on != 0;
}

const char *h5m_data_file(const h5mat_t *m) {
  return m && m->data_file ? m->data_file : m && m->path ? m->path : "";
}

/* ---- reading and writing rectangles --------------------------------------------------------- */

/* The rectangle lies in the matrix; buf has a leading dimension of at least ldmin (its rows). */
static ooc_status_t check_rect(h5mat_t *m, const char *what, int64_t r0, int64_t c0, int64_t nr,
                               int64_t nc, const void *buf, int64_t ld, int64_t ldmin) {
  if (r0 < 0 || c0 < 0 || nr < 0 || nc < 0 || r0 > m->rows - nr || c0 > m->cols - nc)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: %s of rows %lld..%lld, columns %lld..%lld is outside "
                    "the %lld x %lld matrix", m->name, what, (long long)r0,
                    (long long)(r0 + nr - 1), (long long)c0, (long long)(c0 + nc - 1),
                    (long long)m->rows, (long long)m->cols);
  if (nr > 0 && nc > 0 && (!buf || ld < ldmin))
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: %s with %s (ld %lld, %lld rows)", m->name, what,
                    buf ? "a leading dimension smaller than the buffer's row count" : "no buffer",
                    (long long)ld, (long long)ldmin);
  return OOC_OK;
}

/* Staging blocks: about the handle's stage (h5m_set_stage), made of whole chunks when chunked
 * so that each chunk falls in exactly one block (one decode or encode per call), and never less
 * than one chunk. Wide rectangles are cut into column blocks, tall ones into row bands. */
typedef struct {
  int64_t ar, ac; /* alignment: chunk shape, or 1 x 1 */
  int64_t bh, bw; /* block extent, multiples of the alignment */
} blocks_t;

static blocks_t plan_blocks(const h5mat_t *m, int64_t nc) {
  blocks_t b;
  int64_t es = (int64_t)m->stage_es;
  const int64_t target = m->stage; /* h5m_set_stage; 8 MiB by default */
  b.ar = m->chunk_r > 0 ? m->chunk_r : 1;
  b.ac = m->chunk_c > 0 ? m->chunk_c : 1;
  int64_t width = ooc_cdiv64(nc, b.ac) * b.ac + b.ac; /* covers nc from any alignment */
  if (b.ar * width * es <= target) {
    b.bw = width;
    b.bh = ooc_max64(1, target / (width * es * b.ar)) * b.ar;
  } else {
    b.bh = b.ar;
    b.bw = ooc_max64(1, target / (b.ar * es * b.ac)) * b.ac;
  }
  return b;
}

/* End of the block that starts at x: the next multiple of the alignment after x + extent - align,
 * clipped to stop. */
static int64_t block_end(int64_t x, int64_t align, int64_t extent, int64_t stop) {
  return ooc_min64((x / align) * align + extent, stop);
}

/* After a filter failed in H5Dread of rows [r, r+h) x columns [c, c+w): the first chunk that
 * fails alone, so that the message names it (1), or 0 if none does (or no memory to look). */
static int find_bad_chunk(h5mat_t *m, int64_t r, int64_t c, int64_t h, int64_t w, int64_t *R,
                          int64_t *C) {
  if (m->chunk_r <= 0 || m->general) return 0; /* 2-D chunks only */
  void *one = ooc_malloc(m->ctx, (size_t)(m->chunk_r * m->chunk_c) * m->stage_es);
  int found = 0;
  for (int64_t i = r / m->chunk_r * m->chunk_r; one && !found && i < r + h; i += m->chunk_r)
    for (int64_t j = c / m->chunk_c * m->chunk_c; !found && j < c + w; j += m->chunk_c) {
      hsize_t st[2] = {(hsize_t)i, (hsize_t)j};
      hsize_t ct[2] = {(hsize_t)ooc_min64(m->chunk_r, m->rows - i),
                       (hsize_t)ooc_min64(m->chunk_c, m->cols - j)};
      hid_t ms = H5Screate_simple(2, ct, NULL);
      h5m_zstd_expect(m->zstd_expect);
      if (ms >= 0 && H5Sselect_hyperslab(m->fspace, H5S_SELECT_SET, st, NULL, ct, NULL) >= 0 &&
          H5Dread(m->dset, m->memtype, ms, m->fspace, H5P_DEFAULT, one) < 0) {
        *R = i;
        *C = j;
        found = 1;
      }
      h5m_zstd_expect(0);
      if (ms >= 0) H5Sclose(ms);
    }
  ooc_free(m->ctx, one);
  return found;
}
/* ---- datasets that are not plain 2-D ----------------------------------------------------------
 *
 * A slice of an N-D dataset, a 1-D dataset (one column) or a transposed read maps the matrix's
 * rectangle to a hyperslab of the file's axes ax_r and ax_c (the others fixed, count 1). HDF5
 * delivers the selected elements in the file's row-major order into a 1-D memory space: rows
 * before columns (a row-major h x w staging block) when ax_r comes first in the file, columns
 * first (column-major, the transposed read costs nothing more) when ax_c does. */
static int stage_is_cm(const h5mat_t *m) { return m->ax_r >= 0 && m->ax_c >= 0 && m->ax_r > m->ax_c; }

static ooc_status_t io_rect(h5mat_t *m, int write, int64_t r, int64_t c, int64_t h, int64_t w,
                            void *buf, int64_t r0, int64_t c0, int64_t nr, int64_t nc) {
  hsize_t start[H5S_MAX_RANK] = {(hsize_t)r, (hsize_t)c}, count[H5S_MAX_RANK] = {(hsize_t)h,
                                                                                 (hsize_t)w};
  hsize_t mcount[1] = {(hsize_t)(h * w)};
  if (m->general)
    for (int k = 0; k < m->nd; k++) {
      start[k] = k == m->ax_r ? (hsize_t)r : k == m->ax_c ? (hsize_t)c : m->fix[k];
      count[k] = k == m->ax_r ? (hsize_t)h : k == m->ax_c ? (hsize_t)w : 1;
    }
  herr_t rc = -1;
  int inj = fio_gate(m->ctx, write);
  hid_t ms = inj ? -1 : m->general ? H5Screate_simple(1, mcount, NULL)
                                   : H5Screate_simple(2, count, NULL);
  if (ms >= 0 && H5Sselect_hyperslab(m->fspace, H5S_SELECT_SET, start, NULL, count, NULL) >= 0) {
    h5m_zstd_expect(m->zstd_expect); /* the filter fails on frames of another size */
    rc = write ? H5Dwrite(m->dset, m->memtype, ms, m->fspace, H5P_DEFAULT, buf)
               : H5Dread(m->dset, m->memtype, ms, m->fspace, H5P_DEFAULT, buf);
    h5m_zstd_expect(0);
  }
  if (rc >= 0) {
    H5Sclose(ms);
    m->bytes += h * w * (int64_t)m->file_es;
    return OOC_OK;
  }
  /* before H5Sclose, which clears the error stack */
  h5err_t e = inj ? injected(inj) : h5_last_error();
  if (ms >= 0) H5Sclose(ms);
  int64_t R, C;
  if (!write && e.pipeline && find_bad_chunk(m, r, c, h, w, &R, &C)) {
    size_t len = strlen(e.inner);
    snprintf(e.inner + len, sizeof e.inner - len, "; the chunk at row %lld, column %lld",
             (long long)R, (long long)C);
  }
  return write ? write_fail(m, e, r0, c0, nr, nc) : read_fail(m, e, r0, c0, nr, nc);
}

static ooc_status_t write_fail(h5mat_t *m, h5err_t e, int64_t r0, int64_t c0, int64_t nr,
                               int64_t nc) {
  long long a = r0, b = r0 + nr - 1, x = c0, y = c0 + nc - 1;
  if (e.sys_errno)
    return OOC_FAIL(m->ctx, errno_status(e.sys_errno), "%s: cannot write rows %lld..%lld, "
                    "columns %lld..%lld: %s", m->name, a, b, x, y, strerror(e.sys_errno));
  return OOC_FAIL(m->ctx, OOC_ERR_IO, "%s: cannot write rows %lld..%lld, columns %lld..%lld (%s)",
                  m->name, a, b, x, y, e.inner);
}

static ooc_status_t read_fail(h5mat_t *m, h5err_t e, int64_t r0, int64_t c0, int64_t nr,
                              int64_t nc) {
  long long a = r0, b = r0 + nr - 1, x = c0, y = c0 + nc - 1;
  if (e.pipeline && m->missing_filter)
    return OOC_FAIL(m->ctx, OOC_ERR_FORMAT, "%s: rows %lld..%lld, columns %lld..%lld: filter %d "
                    "('%s') not available: these chunks were written through it and cannot be "
                    "decoded here; install hdf5plugin and set HDF5_PLUGIN_PATH to its plugin "
                    "directory", m->name, a, b, x, y, m->missing_filter, m->missing_name);
  if (e.pipeline)
    return OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: rows %lld..%lld, columns %lld..%lld: a chunk "
                    "failed to decode (corrupt or truncated data, or decoded to the wrong size: "
                    "%s)", m->name, a, b, x, y, e.inner);
  if (e.sys_errno && !e.eof_range)
    return OOC_FAIL(m->ctx, OOC_ERR_IO, "%s: cannot read rows %lld..%lld, columns %lld..%lld: %s",
                    m->name, a, b, x, y, strerror(e.sys_errno));
  return OOC_FAIL(m->ctx, OOC_ERR_CORRUPT, "%s: rows %lld..%lld, columns %lld..%lld cannot be read "
                  "(corrupt or truncated file: %s)", m->name, a, b, x, y, e.inner);
}

/* A column-major staging block (h x w, ld h; float32 or float64) into dst (ld): a copy. */
static void cm_to_cm(const void *s, int f32, int64_t h, int64_t w, double *d, int64_t ld) {
  for (int64_t j = 0; j < w; j++)
    for (int64_t i = 0; i < h; i++)
      d[i + j * ld] = f32 ? (double)((const float *)s)[i + j * h] : ((const double *)s)[i + j * h];
}

/* trans: dst receives the rectangle's transpose (nc x nr, ld), h5m_read_t. */
static ooc_status_t read_impl(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                              double *dst, int64_t ld, int trans) {
  release_wslots(m); /* writing is over (the check reads the output back) */
  if (!m->allow_fill) OOC_TRY(check_complete(m));
  /* slices, 1-D and transposed reads (m->general) take the staged H5Dread path only */
  if (m->direct && !m->general) {
    int fallback = 0;
    ooc_status_t st = direct_read(m, r0, c0, nr, nc, dst, ld, trans, &fallback);
    if (!fallback) return st;
  }
  if (!m->general) {
    OOC_TRY(check_chunks(m, r0, c0, nr, nc));
    /* A square tile stored contiguously needs no staging: read row-major into dst, then
     * transpose in place. This is the common case (b x b tiles) and saves a tile-sized buffer. */
    if (m->memtype == H5T_NATIVE_DOUBLE && nr == nc && ld == nr) {
      OOC_TRY(io_rect(m, 0, r0, c0, nr, nc, dst, r0, c0, nr, nc));
      if (!trans) transpose_square(dst, nr); /* read row-major: the transpose already */
      return OOC_OK;
    }
  }
  blocks_t b = plan_blocks(m, nc);
  int64_t cap = ooc_min64(b.bh, nr) * ooc_min64(b.bw, nc) * (int64_t)m->stage_es;
  void *stage = ooc_malloc(m->ctx, (size_t)cap);
  if (!stage)
    return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: cannot allocate a %lld-byte staging buffer",
                    m->name, (long long)cap);
  ooc_status_t st = OOC_OK;
  int f32 = m->memtype == H5T_NATIVE_FLOAT, cm = m->general && stage_is_cm(m);
  for (int64_t r = r0, re; r < r0 + nr && st == OOC_OK; r = re) {
    re = block_end(r, b.ar, b.bh, r0 + nr);
    for (int64_t c = c0, ce; c < c0 + nc && st == OOC_OK; c = ce) {
      ce = block_end(c, b.ac, b.bw, c0 + nc);
      st = io_rect(m, 0, r, c, re - r, ce - c, stage, r0, c0, nr, nc);
      if (st != OOC_OK) break;
      int64_t h = re - r, w = ce - c;
      double *d = trans ? dst + (c - c0) + (r - r0) * ld : dst + (r - r0) + (c - c0) * ld;
      /* the h x w block, staged row-major (or column-major, cm), lands in d as it is (ld) or
       * transposed (trans): a copy where the two orders agree, chunkio's transposition (a
       * row-major block of cm ? h : w elements a row) where they do not */
      if (cm == trans) cio_unpack(stage, m->stage_es, cm ? h : w, cm ? w : h, cm ? h : w, d, ld);
      else cm_to_cm(stage, f32, trans ? w : h, trans ? h : w, d, ld);
    }
  }
  ooc_free(m->ctx, stage);
  return st;
}

static int is_fill(const h5mat_t *m, double v) {
  for (int k = 0; k < m->nfill; k++)
    if (v == m->fill[k]) return 1;
  return 0;
}

/* A fill value was read: count them all (a pass over the dataset, on this failure path only)
 * and refuse, naming the count, the first position (row-major order) and what to do. */
static ooc_status_t fill_refuse(h5mat_t *m) {
  int64_t w = ooc_max64(1, ooc_min64(m->cols, ((int64_t)1 << 20) / m->rows));
  double *buf = ooc_malloc(m->ctx, (size_t)(m->rows * w) * sizeof *buf);
  int64_t count = 0, fi = -1, fj = -1;
  ooc_status_t st = buf ? OOC_OK : OOC_ERR_NOMEM;
  for (int64_t c0 = 0; c0 < m->cols && st == OOC_OK; c0 += w) {
    int64_t nc = ooc_min64(w, m->cols - c0);
    st = read_impl(m, 0, c0, m->rows, nc, buf, m->rows, 0);
    for (int64_t j = 0; st == OOC_OK && j < nc; j++)
      for (int64_t i = 0; i < m->rows; i++)
        if (is_fill(m, buf[i + j * m->rows])) {
          count++;
          if (fi < 0 || i < fi) {
            fi = i;
            fj = c0 + j;
          }
        }
  }
  ooc_free(m->ctx, buf);
  ooc_clear_error(m->ctx);
  if (count == 0) return OOC_FAIL(m->ctx, OOC_ERR_NONFINITE, "%s: fill values (missing data, "
                                  "_FillValue/missing_value %.17g) in the data", m->name,
                                  m->fill[0]);
  return OOC_FAIL(m->ctx, OOC_ERR_NONFINITE, "%s: %lld element%s equal the fill value %.17g "
                  "(_FillValue/missing_value: missing data), the first at [%lld, %lld]; a "
                  "missing value is not a number to invert with: fill or drop them first (e.g. "
                  "xarray's .fillna() or .interpolate_na()), or pass --keep-fill to read them as "
                  "ordinary numbers", m->name, (long long)count, count == 1 ? "" : "s",
                  m->fill[0], (long long)fi, (long long)fj);
}

static ooc_status_t cf_after_read(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                  double *dst, int64_t ld) {
  (void)r0;
  (void)c0;
  if (m->nfill)
    for (int64_t j = 0; j < nc; j++)
      for (int64_t i = 0; i < nr; i++)
        if (is_fill(m, dst[i + j * ld])) return fill_refuse(m);
  if (m->packed)
    for (int64_t j = 0; j < nc; j++)
      for (int64_t i = 0; i < nr; i++) dst[i + j * ld] = dst[i + j * ld] * m->scale + m->offset;
  return OOC_OK;
}

ooc_status_t h5m_read(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                      int64_t ld) {
  if (!m) return OOC_ERR_ARG;
  if (m->dset < 0 && !m->virt)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: read from a closed or committed handle", m->name);
  OOC_TRY(check_rect(m, "read", r0, c0, nr, nc, dst, ld, nr));
  if (nr == 0 || nc == 0) return OOC_OK;
  if (m->virt) {
    m->bytes += nr * nc * (int64_t)m->file_es;
    return m->virt->read(m->vself, r0, c0, nr, nc, dst, ld);
  }
  quiet_t q = quiet_begin();
  ooc_status_t st = read_impl(m, r0, c0, nr, nc, dst, ld, 0);
  if (st == OOC_OK && (m->nfill || m->packed)) st = cf_after_read(m, r0, c0, nr, nc, dst, ld);
  quiet_end(q);
  return st;
}

ooc_status_t h5m_read_t(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc, double *dst,
                        int64_t ld) {
  if (!m) return OOC_ERR_ARG;
  if (m->dset < 0 || m->virt)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: transposed read from a %s handle", m->name,
                    m->virt ? "virtual" : "closed or committed");
  OOC_TRY(check_rect(m, "transposed read", r0, c0, nr, nc, dst, ld, nc));
  if (nr == 0 || nc == 0) return OOC_OK;
  quiet_t q = quiet_begin();
  ooc_status_t st = read_impl(m, r0, c0, nr, nc, dst, ld, 1);
  /* the elementwise fixes see the transpose as an nc x nr matrix (fill_refuse reads anew) */
  if (st == OOC_OK && (m->nfill || m->packed)) st = cf_after_read(m, c0, r0, nc, nr, dst, ld);
  quiet_end(q);
  return st;
}

/* ---- h5m_stream_rows: every row through a callback, read and used while in cache ----------- */

typedef struct {
  const h5mat_t *m;
  const int64_t *base;  /* per stored block (chunk row-major; one for contiguous data): offset */
  int64_t cr, cc, ncj;  /* stored blocks: rows, elements per row, blocks across */
  int64_t groups, wrows;
  double **win;         /* per worker: wrows x cols (row-major, ld cols) */
  char **raw;           /* per worker: raw_bytes, cio_read_raw's window */
  size_t raw_bytes;
  cio_pread_fn pread_fn;
  h5m_rows_fn fn;
  void *user;
  int *err;             /* per group: the first read's errno (0: none) */
  int64_t *err_row;     /* per group: the row where it failed */
} sbatch_t;

static void sjob_run(void *arg, int64_t g, int worker) {
  sbatch_t *b = arg;
  const h5mat_t *m = b->m;
  int64_t r = m->rows * g / b->groups, re = m->rows * (g + 1) / b->groups;
  double *win = b->win[worker];
  while (r < re) {
    int64_t ci = r / b->cr, h = ooc_min64(ooc_min64(b->wrows, re - r), (ci + 1) * b->cr - r);
    for (int64_t cj = 0; cj < b->ncj; cj++) {
      int64_t C = cj * b->cc, w = ooc_min64(b->cc, m->cols - C);
      int e = cio_read_raw(b->pread_fn, m->fd, b->base[ci * b->ncj + cj], m->file_es, b->cc,
                           r - ci * b->cr, 0, h, w, win + C, m->cols, 1, b->raw[worker],
                           b->raw_bytes);
      if (e) {
        b->err[g] = e;
        b->err_row[g] = r;
        return;
      }
    }
    b->fn(b->user, (int)g, r, h, win, m->cols);
    r += h;
  }
}

ooc_status_t h5m_stream_rows(h5mat_t *m, int64_t groups, int64_t win_bytes, h5m_rows_fn fn,
                             void *user, int *streamed) {
  *streamed = 0;
  if (!m || m->virt || m->dset < 0 || !m->direct || m->general || m->zstd || m->nfill ||
      m->packed || m->rows == 0 || m->cols == 0 || groups < 1)
    return OOC_OK;
  ooc_ctx_t *ctx = m->ctx;
  release_wslots(m);
  if (!m->allow_fill) OOC_TRY(check_complete(m));
  int chunked = m->direct == DIRECT_CHUNKED;
  int64_t es = (int64_t)m->file_es;
  int64_t cr = chunked ? m->chunk_r : m->rows, cc = chunked ? m->chunk_c : m->cols;
  int64_t nci = (m->rows + cr - 1) / cr, ncj = (m->cols + cc - 1) / cc;
  groups = ooc_min64(groups, m->rows);
  int64_t *base = ooc_malloc(ctx, (size_t)(nci * ncj) * sizeof *base);
  int *err = ooc_calloc(ctx, (size_t)groups, sizeof *err);
  int64_t *err_row = ooc_calloc(ctx, (size_t)groups, sizeof *err_row);
  ooc_status_t st = base && err && err_row ? OOC_OK
                    : OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory reading", m->name);
  int usable = st == OOC_OK;
  /* every block present, raw and whole; anything else takes the rectangle reads (h5m_read),
   * which say what is missing or read it through HDF5 */
  for (int64_t q = 0; q < nci * ncj && usable; q++) {
    if (!chunked) {
      base[q] = m->contig_addr;
      continue;
    }
    hsize_t off[2] = {(hsize_t)((q / ncj) * cr), (hsize_t)((q % ncj) * cc)}, size = 0;
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    usable = H5Dget_chunk_info_by_coord(m->dset, off, &mask, &addr, &size) >= 0 &&
             addr != HADDR_UNDEF && addr <= (haddr_t)INT64_MAX && size == (hsize_t)(cr * cc * es);
    base[q] = (int64_t)addr;
  }
  int threads = (int)ooc_min64(groups, ooc_par_cpus(OOC_PAR_MAX_THREADS));
  int64_t wrows = ooc_max64(1, win_bytes / (8 * m->cols));
  size_t raw_bytes = (size_t)(ooc_min64(wrows, cr) * cc * es);
  double *win[OOC_PAR_MAX_THREADS] = {NULL};
  char *raw[OOC_PAR_MAX_THREADS] = {NULL};
  for (int k = 0; k < threads && usable && st == OOC_OK; k++)
    if (!(win[k] = ooc_malloc(ctx, (size_t)(wrows * m->cols) * sizeof(double))) ||
        !(raw[k] = ooc_malloc(ctx, raw_bytes)))
      st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory for the read windows", m->name);
  if (usable && st == OOC_OK) {
    int inj = fio_gate(ctx, 0);
    if (inj) {
      st = read_fail(m, injected(inj), 0, 0, m->rows, m->cols);
    } else {
      sbatch_t sb = {m, base, cr, cc, ncj, groups, wrows, win, raw, raw_bytes, fio_pread_op(ctx),
                     fn, user, err, err_row};
      ooc_parallel(threads, groups, sjob_run, &sb);
      for (int64_t g = 0; g < groups && st == OOC_OK; g++)
        if (err[g]) {
          int64_t r = err_row[g];
          rjob_t j = {r, 0, 1, m->cols, base[(r / cr) * ncj], 0, cr, cc, r % cr, 0, 0, err[g],
                      NULL};
          st = direct_read_error(m, &j, r, 0, 1, m->cols);
        }
      if (st == OOC_OK) m->bytes += m->rows * m->cols * es;
    }
    *streamed = 1;
  }
  for (int k = 0; k < threads; k++) {
    ooc_free(ctx, win[k]);
    ooc_free(ctx, raw[k]);
  }
  ooc_free(ctx, base);
  ooc_free(ctx, err);
  ooc_free(ctx, err_row);
  return st;
}

static ooc_status_t write_staged(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                 const double *src, int64_t rs, int64_t cs) {
  blocks_t b = plan_blocks(m, nc);
  int64_t cap = ooc_min64(b.bh, nr) * ooc_min64(b.bw, nc) * (int64_t)m->stage_es;
  void *stage = ooc_malloc(m->ctx, (size_t)cap);
  if (!stage)
    return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: cannot allocate a %lld-byte staging buffer",
                    m->name, (long long)cap);
  ooc_status_t st = OOC_OK;
  for (int64_t r = r0, re; r < r0 + nr && st == OOC_OK; r = re) {
    re = block_end(r, b.ar, b.bh, r0 + nr);
    for (int64_t c = c0, ce; c < c0 + nc && st == OOC_OK; c = ce) {
      ce = block_end(c, b.ac, b.bw, c0 + nc);
      cio_pack(src + (r - r0) * rs + (c - c0) * cs, rs, cs, re - r, ce - c, m->stage_es, stage,
               ce - c);
      st = io_rect(m, 1, r, c, re - r, ce - c, stage, r0, c0, nr, nc);
    }
  }
  ooc_free(m->ctx, stage);
  return st;
}

static ooc_status_t write_impl(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               const double *src, int64_t rs, int64_t cs) {
  ooc_status_t st = direct_write_fits(m, r0, c0, nr, nc)
                        ? direct_write(m, r0, c0, nr, nc, src, rs, cs)
                        : write_staged(m, r0, c0, nr, nc, src, rs, cs);
  /* Metadata too (chunk index, object header) is written now, so the final close has little
   * left to write: see the chunk cache note in create_impl. */
  int inj = st == OOC_OK ? fio_gate(m->ctx, 1) : 0;
  if (st == OOC_OK && (inj || H5Dflush(m->dset) < 0)) {
    h5err_t e = inj ? injected(inj) : h5_last_error();
    st = e.sys_errno
             ? OOC_FAIL(m->ctx, errno_status(e.sys_errno), "%s: cannot write rows %lld..%lld, "
                        "columns %lld..%lld: %s", m->name, (long long)r0, (long long)(r0 + nr - 1),
                        (long long)c0, (long long)(c0 + nc - 1), strerror(e.sys_errno))
             : OOC_FAIL(m->ctx, OOC_ERR_IO, "%s: cannot write rows %lld..%lld, columns "
                        "%lld..%lld (%s)", m->name, (long long)r0, (long long)(r0 + nr - 1),
                        (long long)c0, (long long)(c0 + nc - 1), e.inner);
  }
  return st;
}

static ooc_status_t write_rect(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                               const double *src, int64_t ld, int trans) {
  if (!m) return OOC_ERR_ARG;
  if (!m->writable || (m->dset < 0 && !m->virt))
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: write to a handle that is not an open output",
                    m->name);
  /* the buffer is nr x nc (ld >= nr) or, transposed, nc x nr (ld >= nc) */
  OOC_TRY(check_rect(m, trans ? "transposed write" : "write", r0, c0, nr, nc, src, ld,
                     trans ? nc : nr));
  if (nr == 0 || nc == 0) return OOC_OK;
  if (m->virt) {
    ooc_status_t vs = m->virt->write(m->vself, r0, c0, nr, nc, src, ld, trans);
    if (vs == OOC_OK) m->bytes += nr * nc * (int64_t)m->file_es;
    return vs;
  }
  quiet_t q = quiet_begin();
  ooc_status_t st = trans ? write_impl(m, r0, c0, nr, nc, src, ld, 1)
                          : write_impl(m, r0, c0, nr, nc, src, 1, ld);
  quiet_end(q);
  if (st != OOC_OK && !m->failed) m->failed = st;
  ooc_test_killpoint(m->ctx, "h5out");
  return st;
}

void h5m_set_tap(h5mat_t *m, h5m_tap_fn fn, void *user) {
  if (!m) return;
  m->tap = fn;
  m->tap_user = user;
}

ooc_status_t h5m_write(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                       const double *src, int64_t ld) {
  return write_rect(m, r0, c0, nr, nc, src, ld, 0);
}

ooc_status_t h5m_write_t(h5mat_t *m, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                         const double *src_t, int64_t ld) {
  return write_rect(m, r0, c0, nr, nc, src_t, ld, 1);
}

/* ---- creating outputs ----------------------------------------------------------------------- */

static atomic_ulong tmp_counter;

static ooc_status_t create_dataset(h5mat_t *m, const char *dname, const char *label,
                                   int64_t chunk, int kind, int level);

/* The handle takes the temporary's name (removed on every failure path from here on); without
 * memory for it, the temporary goes now. */
static ooc_status_t own_tmp(h5mat_t *m, const char *tmp, const char *label) {
  m->tmp = ooc_strdup(m->ctx, tmp);
  if (m->tmp) return OOC_OK;
  fio_remove(m->ctx, tmp);
  return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: out of memory", label);
}

/* The output goes into an existing HDF5 file: build a copy with the new dataset, renamed over
 * the file at commit (io/h5commit.h says why and what it costs). */
static ooc_status_t create_in_copy(h5mat_t *m, const char *file, const char *tmp,
                                   const char *dname, const char *label, int64_t chunk, int kind,
                                   int level) {
  ooc_ctx_t *ctx = m->ctx;
  OOC_TRY(h5c_copy(ctx, label, file, tmp, &m->orig));
  ooc_test_killpoint(ctx, "h5out"); /* the crash test's points: see tests/climate_nc.py */
  OOC_TRY(own_tmp(m, tmp, label));
  hid_t fapl = make_fapl();
  int inj = fio_gate(ctx, 1);
  m->file = inj ? -1 : H5Fopen(tmp, H5F_ACC_RDWR, fapl);
  h5err_t he = inj ? injected(inj) : h5_last_error();
  H5Pclose(fapl);
  if (m->file < 0)
    return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: the existing file cannot be opened to add the "
                    "dataset to it (%s); it is left as it is: remove it yourself or write the "
                    "output to another file", label,
                    he.sys_errno ? strerror(he.sys_errno) : he.inner);
  fio_h5_opened(ctx);
  OOC_TRY(h5c_make_room(ctx, label, m->file, dname, &m->replaced));
  ooc_test_killpoint(ctx, "h5out");
  ooc_status_t st = create_dataset(m, dname, label, chunk, kind, level);
  ooc_test_killpoint(ctx, "h5out");
  return st;
}

static ooc_status_t create_impl(h5mat_t *m, const char *file, const char *dname, const char *label,
                                int64_t chunk, int kind, int level) {
  ooc_ctx_t *ctx = m->ctx;
  char dir[PATH_CAP], tmp[PATH_CAP + 64];
  dir_of(file, dir, sizeof dir);
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%lu", file, (long)getpid(),
           (unsigned long)atomic_fetch_add(&tmp_counter, 1));
  /* Creating the file ourselves first gives a plain errno for unwritable or full directories.
   * The reservation matters on a full disk: an H5Fcreate that cannot write its superblock leaves
   * HDF5 holding a half-open file until exit; the space reserved here is what H5Fcreate's
   * truncation hands back to it. */
  if (m->append) return create_in_copy(m, file, tmp, dname, label, chunk, kind, level);
  int fd = fio_open(ctx, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  int e = fd < 0 ? errno : fio_fallocate(ctx, fd, 0, CREATE_RESERVE_BYTES);
  if (fd >= 0) fio_close(ctx, fd);
  /* only a full disk counts: file systems without fallocate (EOPNOTSUPP) still work */
  if (fd >= 0 && (e == ENOSPC || e == EDQUOT)) fio_remove(ctx, tmp);
  if (fd < 0 || e == ENOSPC || e == EDQUOT)
    return OOC_FAIL(ctx, errno_status(e), "%s: cannot create a file in directory '%s': %s", label,
                    dir, strerror(e));
  OOC_TRY(own_tmp(m, tmp, label));

  hid_t fapl = make_fapl();
  int inj = fio_gate(ctx, 1);
  m->file = inj ? -1 : H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  h5err_t he = inj ? injected(inj) : h5_last_error();
  H5Pclose(fapl);
  if (m->file >= 0) fio_h5_opened(ctx);
  if (m->file < 0) {
    if (he.sys_errno)
      return OOC_FAIL(ctx, errno_status(he.sys_errno), "%s: cannot create '%s': %s", label, tmp,
                      strerror(he.sys_errno));
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot create '%s' (%s)", label, tmp, he.inner);
  }

  return create_dataset(m, dname, label, chunk, kind, level);
}

/* The output dataset in the open file m->file (new, or a copy of the existing file). */
static ooc_status_t create_dataset(h5mat_t *m, const char *dname, const char *label,
                                   int64_t chunk, int kind, int level) {
  ooc_ctx_t *ctx = m->ctx;
  h5err_t he;
  size_t es = m->type == H5M_F32 ? 4 : 8;
  if (chunk <= 0 && kind != 0) chunk = DEFAULT_CHUNK; /* filters need chunks */
  if (chunk > 0) {
    m->chunk_r = ooc_min64(chunk, m->rows);
    m->chunk_c = ooc_min64(chunk, m->cols);
    while (m->chunk_r * m->chunk_c * (int64_t)es > CHUNK_MAX_BYTES) {
      if (m->chunk_r >= m->chunk_c)
        m->chunk_r = (m->chunk_r + 1) / 2;
      else
        m->chunk_c = (m->chunk_c + 1) / 2;
    }
  }

  ooc_status_t st = OOC_OK;
  hsize_t dims[2] = {(hsize_t)m->rows, (hsize_t)m->cols};
  hsize_t cdims[2] = {(hsize_t)m->chunk_r, (hsize_t)m->chunk_c};
  int rank = m->general ? 1 : 2; /* general outputs: 1-D (h5m_create2, H5M_OUT_1D) */
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  /* No chunk cache for outputs: each chunk is compressed and written by the h5m_write that
   * completes it (callers write whole chunks: tile = chunk). With a cache, a full disk would
   * surface only when the cache flushes, and HDF5 1.10 cannot close a file whose dirty chunks
   * cannot be written (it holds it until exit, or crashes there); written through, a failed chunk
   * write is reported by h5m_write and leaves nothing dirty behind. */
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  if (dapl >= 0) H5Pset_chunk_cache(dapl, 0, 0, 1.0);
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  int ok = lcpl >= 0 && dcpl >= 0 && dapl >= 0 && sp >= 0;
  ok = ok && H5Pset_create_intermediate_group(lcpl, 1) >= 0;
  /* Every element is written by the caller; no fill pass. No timestamps: identical runs give
   * identical files. */
  ok = ok && H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0;
  ok = ok && H5Pset_obj_track_times(dcpl, 0) >= 0;
  if (ok && m->chunk_r > 0) ok = H5Pset_chunk(dcpl, rank, cdims) >= 0;
  if (ok && kind == 1) {
    unsigned cd = (unsigned)level;
    ok = H5Pset_filter(dcpl, (H5Z_filter_t)OOC_H5Z_ZSTD, H5Z_FLAG_MANDATORY, 1, &cd) >= 0;
  } else if (ok && kind == 2) {
    ok = H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)level) >= 0;
  }
  if (!ok) {
    st = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "%s: cannot set up dataset properties (%s)", label,
                  h5_last_error().inner);
  } else {
    hid_t ftype = m->type == H5M_F32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
    m->dset = H5Dcreate2(m->file, dname, ftype, sp, lcpl, dcpl, dapl);
    if (m->dset < 0) {
      he = h5_last_error();
      st = he.sys_errno ? OOC_FAIL(ctx, errno_status(he.sys_errno), "%s: cannot create the "
                                   "dataset: %s", label, strerror(he.sys_errno))
                        : OOC_FAIL(ctx, OOC_ERR_ARG, "%s: cannot create the dataset (%s)", label,
                                   he.inner);
    } else {
      m->fspace = H5Dget_space(m->dset);
      if (m->fspace < 0)
        st = OOC_FAIL(ctx, OOC_ERR_INTERNAL, "%s: cannot get the dataspace", label);
      m->out_kind = kind;
      m->out_level = level;
      if (st == OOC_OK) setup_direct(m);
    }
  }
  if (sp >= 0) H5Sclose(sp);
  if (lcpl >= 0) H5Pclose(lcpl);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (dapl >= 0) H5Pclose(dapl);
  return st;
}

ooc_status_t h5m_create(ooc_ctx_t *ctx, const char *file, const char *dset, int64_t rows,
                        int64_t cols, h5m_type_t type, int64_t chunk, const char *compress,
                        int force, h5mat_t **out) {
  return h5m_create2(ctx, file, dset, rows, cols, type, chunk, compress, force, 0, out);
}

ooc_status_t h5m_create2(ooc_ctx_t *ctx, const char *file, const char *dset, int64_t rows,
                         int64_t cols, h5m_type_t type, int64_t chunk, const char *compress,
                         int force, unsigned flags, h5mat_t **out) {
  if (!ctx || !out) return OOC_ERR_ARG;
  *out = NULL;
  if (!file || !*file) return OOC_FAIL(ctx, OOC_ERR_ARG, "no output file named");
  if (strlen(file) >= PATH_CAP) return OOC_FAIL(ctx, OOC_ERR_ARG, "%.80s...: path too long", file);
  char dname[NAME_CAP], label[LABEL_CAP];
  if (!dset || !*dset || normalize_dset(dset, dname, sizeof dname) < 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: output dataset name missing or too long", file);
  make_label(label, sizeof label, file, dname);
  if (rows <= 0 || cols <= 0)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: cannot create a %lld x %lld matrix", label,
                    (long long)rows, (long long)cols);
  if (type != H5M_F32 && type != H5M_F64)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: outputs are float32 or float64", label);
  if ((flags & H5M_OUT_1D) && cols != 1)
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: a 1-D output has one column, not %lld", label,
                    (long long)cols);
  int kind = 0, level = 0;
  OOC_TRY(h5m_parse_compress(ctx, compress, &kind, &level));

  struct stat sb;
  int append = 0;
  if (stat(file, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: the output path is a directory", label);
    if (!force)
      return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: output file exists (use --force to add or "
                      "replace the dataset %s in it; its other datasets are kept)", label, dname);
    /* an HDF5 file keeps everything but the named dataset; anything else is replaced whole */
    append = S_ISREG(sb.st_mode) && h5c_is_hdf5(file);
  } else if (errno != ENOENT) {
    int e = errno;
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot access the output path: %s", label, strerror(e));
  }

  h5m_register_zstd();
  h5mat_t *m = new_handle(ctx);
  if (!m) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory", label);
  m->writable = 1;
  m->force = force;
  m->append = append;
  m->rows = rows;
  m->cols = cols;
  if (flags & H5M_OUT_1D) { /* a 1-D dataset written from one column */
    m->general = 1;
    m->nd = 1;
    m->ax_r = 0;
    m->ax_c = -1;
  }
  m->type = type;
  m->memtype = type == H5M_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  m->stage_es = m->file_es = type == H5M_F32 ? sizeof(float) : sizeof(double);
  m->path = ooc_strdup(ctx, file);
  m->name = ooc_strdup(ctx, label);
  ooc_status_t st;
  if (!m->path || !m->name) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of memory", label);
  } else {
    quiet_t q = quiet_begin();
    st = create_impl(m, file, dname, label, chunk, kind, level);
    quiet_end(q);
  }
  if (st != OOC_OK) {
    h5m_close(m);
    return st;
  }
  *out = m;
  return OOC_OK;
}

/* ---- attributes ----------------------------------------------------------------------------- */

static ooc_status_t attr_write(h5mat_t *m, const char *name, hid_t ftype, hid_t mtype,
                               const void *buf) {
  if (!m) return OOC_ERR_ARG;
  if (m->virt) return OOC_OK; /* a virtual matrix has no place for attributes */
  if (!m->writable || m->dset < 0)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: attribute '%s' on a handle that is not an open "
                    "output", m->name, name ? name : "");
  if (!name || !*name)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: attribute without a name", m->name);
  quiet_t q = quiet_begin();
  ooc_status_t st = OOC_OK;
  hid_t sp = -1, a = -1;
  int inj = 0;
  if (H5Aexists(m->dset, name) > 0 && H5Adelete(m->dset, name) < 0) goto fail;
  if ((sp = H5Screate(H5S_SCALAR)) < 0) goto fail;
  if ((a = H5Acreate2(m->dset, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT)) < 0) goto fail;
  if ((inj = fio_gate(m->ctx, 1)) != 0 || H5Awrite(a, mtype, buf) < 0) goto fail;
  goto out;
fail:;
  h5err_t e = inj ? injected(inj) : h5_last_error();
  st = e.sys_errno ? OOC_FAIL(m->ctx, errno_status(e.sys_errno), "%s: cannot write attribute '%s': "
                              "%s", m->name, name, strerror(e.sys_errno))
                   : OOC_FAIL(m->ctx, OOC_ERR_IO, "%s: cannot write attribute '%s' (%s)", m->name,
                              name, e.inner);
out:
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  quiet_end(q);
  if (st != OOC_OK && !m->failed) m->failed = st;
  ooc_test_killpoint(m->ctx, "h5out");
  return st;
}

ooc_status_t h5m_attr_str(h5mat_t *m, const char *name, const char *value) {
  if (!m) return OOC_ERR_ARG;
  if (m->virt) return OOC_OK;
  /* variable-length UTF-8: h5py reads it back as str, not bytes */
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    if (t >= 0) H5Tclose(t);
    return OOC_FAIL(m->ctx, OOC_ERR_INTERNAL, "%s: cannot make a string type", m->name);
  }
  const char *v = value ? value : "";
  ooc_status_t st = attr_write(m, name, t, t, &v);
  H5Tclose(t);
  return st;
}

ooc_status_t h5m_attr_f64(h5mat_t *m, const char *name, double value) {
  return attr_write(m, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

ooc_status_t h5m_attr_i64(h5mat_t *m, const char *name, int64_t value) {
  return attr_write(m, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

int h5m_attr_get_f64(h5mat_t *m, const char *name, double *value) {
  if (!m || m->dset < 0 || !name) return 0;
  quiet_t q = quiet_begin();
  int ok = 0;
  hid_t a = H5Aexists(m->dset, name) > 0 ? H5Aopen(m->dset, name, H5P_DEFAULT) : -1;
  if (a >= 0) {
    hid_t sp = H5Aget_space(a);
    ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 &&
         H5Aread(a, H5T_NATIVE_DOUBLE, value) >= 0;
    if (sp >= 0) H5Sclose(sp);
    H5Aclose(a);
  }
  quiet_end(q);
  return ok;
}

/* ---- commit and close ----------------------------------------------------------------------- */

static void empty_tmp(h5mat_t *m) {
  if (!m->tmp) return;
  int rc = fio_truncate(m->ctx, m->tmp, 0);
  (void)rc; /* best effort: the file is unlinked next either way */
}

/* When the disk is full, a doomed temporary is emptied before HDF5 closes it: that returns the
 * space the final metadata flush needs, so the close succeeds. Only then: after any other failure
 * the flush would fail again, and HDF5 1.10 crashes at exit on a file it failed to close after it
 * was truncated under it. */
static void empty_tmp_if_full(h5mat_t *m, ooc_status_t why) {
  if (why == OOC_ERR_NOSPACE) empty_tmp(m);
}

static void drop_tmp(h5mat_t *m) {
  if (!m->tmp) return;
  empty_tmp(m); /* should HDF5 still hold it (a failed close), it holds no disk space */
  fio_remove(m->ctx, m->tmp);
  ooc_free(m->ctx, m->tmp);
  m->tmp = NULL;
}

/* Each id is closed once only: HDF5 1.10 crashes on a second H5Fclose of a file whose first
 * close failed. The flush comes first because a failed flush leaves objects closable, while a
 * failed close leaves HDF5 holding the file until exit. */
static void close_ids(h5mat_t *m) {
  if (m->file >= 0 && m->writable && !fio_gate(m->ctx, 1)) H5Fflush(m->file, H5F_SCOPE_LOCAL);
  if (m->fspace >= 0) H5Sclose(m->fspace);
  if (m->dset >= 0) H5Dclose(m->dset);
  if (m->file >= 0) {
    (void)fio_gate(m->ctx, 0);
    H5Fclose(m->file); /* released whatever an injected fault says, as a failed close is */
    fio_h5_closed(m->ctx);
  }
  m->fspace = m->dset = m->file = -1;
}

/* A commit up to its rename: flushed, closed, synced, and the target still as it was. */
static ooc_status_t commit_ready(h5mat_t *m) {
  ooc_ctx_t *ctx = m->ctx;
  if (m->failed) {
    empty_tmp_if_full(m, m->failed);
    close_ids(m);
    return OOC_FAIL(ctx, m->failed, "%s: an earlier write failed; the output is not committed",
                    m->name);
  }
  h5err_t e;
  int bad = 0;
  memset(&e, 0, sizeof e);
  /* The flush writes what remains cached (metadata): a full disk shows up here, not in a close. */
  int inj = fio_gate(ctx, 1);
  if (inj || H5Fflush(m->file, H5F_SCOPE_LOCAL) < 0) {
    bad = 1;
    e = inj ? injected(inj) : h5_last_error();
  }
  hid_t *ids[3] = {&m->fspace, &m->dset, &m->file};
  for (int k = 0; k < 3 && !bad; k++) {
    inj = k == 2 ? fio_gate(ctx, 1) : 0;
    herr_t rc = k == 0 ? H5Sclose(*ids[k]) : k == 1 ? H5Dclose(*ids[k]) : H5Fclose(*ids[k]);
    if (k == 2) fio_h5_closed(ctx); /* released even when it failed: never closed twice */
    if (rc < 0 || inj) {
      bad = 1;
      e = inj ? injected(inj) : h5_last_error();
    }
    *ids[k] = -1; /* never closed twice, even after a failure */
  }
  if (bad) {
    ooc_status_t st = e.sys_errno ? errno_status(e.sys_errno) : OOC_ERR_IO;
    empty_tmp_if_full(m, st);
    close_ids(m);
    if (e.sys_errno)
      return OOC_FAIL(ctx, st, "%s: cannot finish writing '%s': %s", m->name, m->tmp,
                      strerror(e.sys_errno));
    return OOC_FAIL(ctx, st, "%s: cannot finish writing '%s' (%s)", m->name, m->tmp, e.inner);
  }
  ooc_test_killpoint(ctx, "h5out"); /* closed, not yet synced */
  int fd = fio_open(ctx, m->tmp, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0 || fio_fsync(ctx, fd) != 0) {
    int err = errno;
    if (fd >= 0) fio_close(ctx, fd);
    return OOC_FAIL(ctx, errno_status(err), "%s: cannot sync '%s': %s", m->name, m->tmp,
                    strerror(err));
  }
  if (fio_close(ctx, fd) != 0) {
    int err = errno;
    return OOC_FAIL(ctx, errno_status(err), "%s: cannot sync '%s': %s", m->name, m->tmp,
                    strerror(err));
  }
  struct stat sb;
  if (m->append) OOC_TRY(h5c_unchanged(ctx, m->name, m->path, &m->orig));
  else if (!m->force && stat(m->path, &sb) == 0)
    return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: output file appeared while writing (use --force to "
                    "replace it)", m->name);
  ooc_test_killpoint(ctx, "h5out"); /* synced, not renamed */
  return OOC_OK;
}

static ooc_status_t commit_rename(h5mat_t *m) {
  if (fio_rename(m->ctx, m->tmp, m->path) != 0) {
    int err = errno;
    return OOC_FAIL(m->ctx, errno_status(err), "%s: cannot rename '%s' into place: %s", m->name,
                    m->tmp, strerror(err));
  }
  return OOC_OK;
}

/* After the rename: the directory entry made durable. */
static ooc_status_t commit_done(h5mat_t *m) {
  ooc_ctx_t *ctx = m->ctx;
  m->committed = 1;
  ooc_free(ctx, m->tmp);
  m->tmp = NULL;
  ooc_test_killpoint(ctx, "h5out"); /* renamed, directory not synced */
  /* The rename is durable only once the directory entry is; some file systems refuse to fsync a
   * directory (EINVAL), which we accept, but a real I/O error is reported. */
  char dir[PATH_CAP];
  dir_of(m->path, dir, sizeof dir);
  int err = fio_sync_dir(ctx, m->path);
  if (err == EIO)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: written, but syncing directory '%s' failed: %s",
                    m->name, dir, strerror(err));
  return OOC_OK;
}

/* The checks of h5m_commit, then commit_ready (quietly); a failure removes the temporary. */
static ooc_status_t commit_start(h5mat_t *m) {
  release_wslots(m);
  if (!m->writable || m->committed || m->file < 0)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: commit of a handle that is not an open output",
                    m->name);
  quiet_t q = quiet_begin();
  ooc_status_t st = commit_ready(m);
  quiet_end(q);
  if (st != OOC_OK) drop_tmp(m);
  return st;
}

ooc_status_t h5m_commit(h5mat_t *m) {
  if (!m) return OOC_ERR_ARG;
  if (m->virt) {
    if (!m->writable || m->vcommitted)
      return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: commit of a handle that is not an open output",
                      m->name);
    ooc_status_t vs = m->virt->commit ? m->virt->commit(m->vself) : OOC_OK;
    if (vs == OOC_OK) m->vcommitted = 1;
    return vs;
  }
  OOC_TRY(commit_start(m));
  ooc_status_t st = commit_rename(m);
  if (st != OOC_OK) {
    drop_tmp(m);
    return st;
  }
  return commit_done(m);
}

ooc_status_t h5m_commit2(h5mat_t *a, h5mat_t *b) {
  if (!a || !b) return h5m_commit(a ? a : b);
  h5mat_t *f[2];
  int nf = 0;
  for (int k = 0; k < 2; k++) /* the files finished, not renamed */
    if (!(k ? b : a)->virt) {
      f[nf] = k ? b : a;
      OOC_TRY(commit_start(f[nf]));
      nf++;
    }
  for (int k = 0; k < 2; k++) /* arrays and callbacks: nothing to undo after them */
    if ((k ? b : a)->virt) OOC_TRY(h5m_commit(k ? b : a));
  if (nf == 0) return OOC_OK;
  ooc_ctx_t *ctx = f[0]->ctx;
  /* The first file's target, if there is one, stays reachable as "<its temporary>.old" (a hard
   * link) until the second is in place: undoing the first rename puts it back. */
  char old[PATH_CAP + 8] = "";
  struct stat sb;
  if (nf == 2 && stat(f[0]->path, &sb) == 0) {
    snprintf(old, sizeof old, "%s.old", f[0]->tmp);
    if (link(f[0]->path, old) != 0) old[0] = 0; /* (a file system without hard links) */
  }
  ooc_status_t st = commit_rename(f[0]);
  if (st == OOC_OK && nf == 2) {
    ooc_free(ctx, f[0]->tmp); /* renamed */
    f[0]->tmp = NULL;
    st = commit_rename(f[1]);
    if (st != OOC_OK) { /* the first undone: its old file back, or none */
      int undone = old[0] ? fio_rename(ctx, old, f[0]->path) == 0
                          : fio_remove(ctx, f[0]->path) == 0;
      if (undone) old[0] = 0;
      else commit_done(f[0]);
      ooc_error_append(ctx, undone ? "; %s was not committed either"
                                   : "; %s could not be undone: it was written without the other",
                       f[0]->path);
    }
  }
  if (old[0]) fio_remove(ctx, old);
  if (st != OOC_OK) {
    for (int k = 0; k < nf; k++) drop_tmp(f[k]);
    return st;
  }
  for (int k = 0; k < nf; k++) OOC_TRY(commit_done(f[k]));
  return OOC_OK;
}

ooc_status_t h5m_commit_as(h5mat_t *m, const char *file) {
  if (!m) return OOC_ERR_ARG;
  if (m->virt)
    return OOC_FAIL(m->ctx, OOC_ERR_ARG, "%s: a matrix that is not a file cannot be kept as '%s'",
                    m->name, file);
  char *p = ooc_strdup(m->ctx, file);
  if (!p) return OOC_FAIL(m->ctx, OOC_ERR_NOMEM, "%s: out of host memory", m->name);
  ooc_free(m->ctx, m->path);
  m->path = p;
  m->force = 1;
  return h5m_commit(m);
}

void h5m_close(h5mat_t *m) {
  if (!m) return;
  ooc_ctx_t *ctx = m->ctx;
  if (m->virt) {
    if (m->virt->close) m->virt->close(m->vself, m->writable && !m->vcommitted);
    ooc_free(ctx, m->name);
    ooc_free(ctx, m);
    return;
  }
  release_wslots(m);
  if (m->writable && !m->committed) empty_tmp_if_full(m, m->failed);
  quiet_t q = quiet_begin();
  close_ids(m);
  quiet_end(q);
  if (m->writable && !m->committed) drop_tmp(m);
  ooc_free(ctx, m->tmp);
  ooc_free(ctx, m->path);
  ooc_free(ctx, m->name);
  ooc_free(ctx, m->data_file);
  ooc_free(ctx, m->verified);
  ooc_free(ctx, m);
}

int h5m_remove_stale_tmp(ooc_ctx_t *ctx, const char *file) {
  char dir[PATH_CAP], prefix[PATH_CAP + 8];
  dir_of(file, dir, sizeof dir);
  const char *slash = strrchr(file, '/');
  snprintf(prefix, sizeof prefix, "%s.tmp-", slash ? slash + 1 : file);
  size_t plen = strlen(prefix);
  int removed = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, plen) != 0) continue;
    char *end = NULL;
    long pid = strtol(e->d_name + plen, &end, 10);
    if (pid <= 0 || !end || *end != '-') continue;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char path[2 * PATH_CAP];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (fio_unlink(ctx, path) == 0) removed++;
  }
  closedir(d);
  return removed;
}
