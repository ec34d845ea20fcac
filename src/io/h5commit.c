/* h5commit.c: see h5commit.h. */
#define _GNU_SOURCE
#include "io/h5commit.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int h5c_is_hdf5(const char *path) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t got = pread(fd, head, sizeof head, 0);
  close(fd);
  return got == 8 && memcmp(head, sig, 8) == 0;
}

static ooc_status_t errno_fail(ooc_ctx_t *ctx, int e, const char *label, const char *what,
                               const char *path) {
  return OOC_FAIL(ctx, (e == ENOSPC || e == EDQUOT) ? OOC_ERR_NOSPACE : OOC_ERR_IO,
                  "%s: cannot %s '%s' (to add the dataset to a copy of the existing file): %s",
                  label, what, path, strerror(e));
}

ooc_status_t h5c_copy(ooc_ctx_t *ctx, const char *label, const char *src, const char *dst,
                      h5c_orig_t *orig) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return errno_fail(ctx, errno, label, "open", src);
  struct stat sb;
  if (fstat(in, &sb) != 0) {
    int e = errno;
    close(in);
    return errno_fail(ctx, e, label, "stat", src);
  }
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, sb.st_mode & 07777);
  if (out < 0) {
    int e = errno;
    close(in);
    return errno_fail(ctx, e, label, "create", dst);
  }
  int e = 0;
  off_t done = 0;
  /* copy_file_range shares extents where the file system can (reflink), copies in the kernel
   * otherwise; read/write where it is not supported (EXDEV on old kernels, ENOSYS, EINVAL). */
  while (done < sb.st_size) {
    ssize_t k = copy_file_range(in, NULL, out, NULL, (size_t)(sb.st_size - done), 0);
    if (k > 0) {
      done += k;
      continue;
    }
    if (k == 0) break;
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
      e = errno;
    }
    break;
  }
  if (!e && done < sb.st_size) {
    size_t cap = (size_t)1 << 20;
    char *buf = malloc(cap);
    if (!buf) e = ENOMEM;
    while (!e && done < sb.st_size) {
      ssize_t k = pread(in, buf, cap, done);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        e = k < 0 ? errno : EIO; /* shorter than fstat said: changed under us */
        break;
      }
      for (ssize_t w = 0; w < k && !e;) {
        ssize_t x = pwrite(out, buf + w, (size_t)(k - w), done + w);
        if (x < 0 && errno == EINTR) continue;
        if (x <= 0) e = x < 0 ? errno : EIO;
        else w += x;
      }
      if (!e) done += k;
    }
    free(buf);
  }
  if (!e && fsync(out) != 0) e = errno;
  if (close(out) != 0 && !e) e = errno;
  close(in);
  if (e) {
    unlink(dst);
    return errno_fail(ctx, e, label, "copy the existing file to", dst);
  }
  orig->dev = sb.st_dev;
  orig->ino = sb.st_ino;
  orig->size = sb.st_size;
  orig->mtime = sb.st_mtim;
  return OOC_OK;
}

ooc_status_t h5c_unchanged(ooc_ctx_t *ctx, const char *label, const char *path,
                           const h5c_orig_t *orig) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: the existing file '%s' disappeared while the "
                    "dataset was written into a copy of it; nothing was replaced", label, path);
  if (sb.st_dev != orig->dev || sb.st_ino != orig->ino || sb.st_size != orig->size ||
      sb.st_mtim.tv_sec != orig->mtime.tv_sec || sb.st_mtim.tv_nsec != orig->mtime.tv_nsec)
    return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: the existing file '%s' was modified while the "
                    "dataset was written into a copy of it; the copy is not renamed over it (that "
                    "would lose those changes): run again", label, path);
  return OOC_OK;
}

typedef struct {
  char names[H5S_MAX_RANK][512];
  unsigned idx[H5S_MAX_RANK];
  int count;
} scales_t;

static herr_t scale_cb(hid_t did, unsigned dim, hid_t dsid, void *p) {
  (void)did;
  scales_t *s = p;
  if (s->count < H5S_MAX_RANK && H5Iget_name(dsid, s->names[s->count], 512) > 0)
    s->idx[s->count++] = dim;
  return 0;
}

ooc_status_t h5c_make_room(ooc_ctx_t *ctx, const char *label, hid_t file, const char *dname,
                           int *replaced) {
  *replaced = 0;
  /* every group on the way must be a group: "/X/inv" under a dataset /X cannot be created, and
   * an existing dataset is never turned into a group */
  char path[1024];
  snprintf(path, sizeof path, "%s", dname);
  for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = 0;
    if (H5Lexists(file, path, H5P_DEFAULT) > 0) {
      H5O_info_t oi;
      if (H5Oget_info_by_name(file, path, &oi, H5P_DEFAULT) >= 0 && oi.type != H5O_TYPE_GROUP)
        return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: '%s' in the existing file is not a group; the "
                        "dataset cannot go under it (name another dataset)", label, path);
    } else {
      *p = '/';
      break; /* the rest is created */
    }
    *p = '/';
  }
  if (H5Lexists(file, dname, H5P_DEFAULT) <= 0) return OOC_OK;
  H5O_info_t oi;
  if (H5Oget_info_by_name(file, dname, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
    return OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: '%s' exists in the file and is %s; --force "
                    "replaces a dataset, never a group or anything else", label, dname,
                    oi.type == H5O_TYPE_GROUP ? "a group" : "not a dataset");
  hid_t d = H5Dopen2(file, dname, H5P_DEFAULT);
  if (d < 0) return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot open the existing dataset", label);
  ooc_status_t st = OOC_OK;
  if (H5DSis_scale(d) > 0) {
    st = OOC_FAIL(ctx, OOC_ERR_EXISTS, "%s: '%s' is a netCDF dimension (a dimension scale); "
                  "replacing it would break the variables that use it: name another dataset",
                  label, dname);
  } else {
    /* detach its dimension scales: their back-references would dangle after the unlink */
    scales_t sc;
    memset(&sc, 0, sizeof sc);
    hid_t sp = H5Dget_space(d);
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : 0;
    if (sp >= 0) H5Sclose(sp);
    for (int k = 0; k < nd; k++)
      if (H5DSget_num_scales(d, (unsigned)k) > 0)
        H5DSiterate_scales(d, (unsigned)k, NULL, scale_cb, &sc);
    for (int k = 0; k < sc.count && st == OOC_OK; k++) {
      hid_t s = H5Dopen2(file, sc.names[k], H5P_DEFAULT);
      if (s < 0 || H5DSdetach_scale(d, s, sc.idx[k]) < 0)
        st = OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot detach dimension scale '%s' from the dataset "
                      "being replaced", label, sc.names[k]);
      if (s >= 0) H5Dclose(s);
    }
  }
  H5Dclose(d);
  if (st != OOC_OK) return st;
  if (H5Ldelete(file, dname, H5P_DEFAULT) < 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot unlink the dataset being replaced", label);
  *replaced = 1;
  return OOC_OK;
}
