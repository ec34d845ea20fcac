/* h5vec.c: see h5vec.h. */
#include "io/h5vec.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "io/fileio.h"

/* Dataset `path` (replacing one of that name) of the given rank and dims, written from buf in
 * memory type mt, stored as ft: the I/O gate first (a full disk is OOC_ERR_NOSPACE), HDF5's
 * error printing off meanwhile. `what` describes the shape for the message. */
static ooc_status_t write_ds(ooc_ctx_t *ctx, h5mat_t *out, const char *path, hid_t ft, hid_t mt,
                             int rank, const hsize_t *dims, const void *buf, const char *what) {
  hid_t file = (hid_t)h5m_file_id(out);
  if (file < 0) return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "%s: output not open", h5m_name(out));
  int e = fio_gate(ctx, 1);
  if (e)
    return OOC_FAIL(ctx, e == ENOSPC || e == EDQUOT ? OOC_ERR_NOSPACE : OOC_ERR_IO,
                    "%s: cannot write dataset %s: %s", h5m_path(out), path, strerror(e));
  hsize_t count = 1;
  for (int k = 0; k < rank; k++) count *= dims[k];
  H5E_auto2_t fn;
  void *data;
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (H5Lexists(file, path, H5P_DEFAULT) > 0) H5Ldelete(file, path, H5P_DEFAULT);
  hid_t sp = H5Screate_simple(rank, dims, NULL), d = -1;
  herr_t rc = -1;
  if (sp >= 0) d = H5Dcreate2(file, path, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d >= 0) rc = count > 0 ? H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : 0;
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  if (rc < 0)
    return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot write the %s dataset %s", h5m_path(out), what,
                    path);
  return OOC_OK;
}

ooc_status_t h5vec_write_i64(ooc_ctx_t *ctx, h5mat_t *out, const char *path, const int64_t *v,
                             int64_t n) {
  hsize_t dims[1] = {(hsize_t)n};
  char what[48];
  snprintf(what, sizeof what, "%lld-element", (long long)n);
  return write_ds(ctx, out, path, H5T_STD_I64LE, H5T_NATIVE_INT64, 1, dims, v, what);
}

ooc_status_t h5vec_write_f64(ooc_ctx_t *ctx, h5mat_t *out, const char *path, const double *v,
                             int64_t rows, int64_t cols, int64_t ld) {
  int64_t c = cols > 0 ? cols : 1, cnt = rows * c;
  double *rm = ooc_malloc(ctx, (size_t)(cnt > 0 ? cnt : 1) * sizeof(double));
  if (!rm)
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "%s: out of host memory writing %s (%lld x %lld)",
                    h5m_path(out), path, (long long)rows, (long long)c);
  for (int64_t i = 0; i < rows; i++) /* row-major, as the file stores it */
    for (int64_t j = 0; j < c; j++) rm[i * c + j] = v[i + j * ld];
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)c};
  char what[64];
  snprintf(what, sizeof what, "%lld x %lld", (long long)rows, (long long)c);
  ooc_status_t st = write_ds(ctx, out, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, cols > 0 ? 2 : 1,
                             dims, rm, what);
  ooc_free(ctx, rm);
  return st;
}

int h5vec_attr_str(h5mat_t *m, const char *name, char *buf, size_t cap) {
  hid_t dset = (hid_t)h5m_dset_id(m);
  if (!m || dset < 0 || !name || cap == 0) return 0;
  buf[0] = 0;
  H5E_auto2_t fn;
  void *data;
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int ok = 0;
  hid_t a = H5Aexists(dset, name) > 0 ? H5Aopen(dset, name, H5P_DEFAULT) : -1;
  hid_t t = a >= 0 ? H5Aget_type(a) : -1;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
    if (H5Tis_variable_str(t) > 0) {
      char *s = NULL;
      hid_t mt = H5Tcopy(H5T_C_S1);
      H5Tset_size(mt, H5T_VARIABLE);
      H5Tset_cset(mt, H5Tget_cset(t));
      if (H5Aread(a, mt, &s) >= 0 && s) {
        snprintf(buf, cap, "%s", s);
        ok = 1;
      }
      if (s) H5free_memory(s);
      H5Tclose(mt);
    } else {
      char s[1024] = {0}; /* fixed-length strings longer than this are not ours */
      if (H5Tget_size(t) < sizeof s && H5Aread(a, t, s) >= 0) {
        snprintf(buf, cap, "%s", s);
        ok = 1;
      }
    }
  }
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  return ok;
}
