/* h5meta.c: see h5meta.h. */
#include "io/h5meta.h"

#include <ctype.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIM_WITHOUT_VARIABLE "This is a netCDF dimension but not a netCDF variable."
#define MAXTERMS 8

/* ---- units -------------------------------------------------------------------------------- */

typedef struct {
  char name[32];
  int exp;
} term_t;

/* "K2", "m2 s-1", "kg.m^-3": UDUNITS products (terms separated by ' ' or '.'; an optional
 * signed exponent, with or without '^'). */
static int units_parse(const char *s, term_t *t, int *nt) {
  *nt = 0;
  if (!s) return 0;
  while (*s) {
    while (*s == ' ' || *s == '.' || *s == '*') s++;
    if (!*s) break;
    if (!isalpha((unsigned char)*s) && *s != '%') return 0;
    if (*nt == MAXTERMS) return 0;
    term_t *x = &t[(*nt)++];
    size_t k = 0;
    while (*s && (isalpha((unsigned char)*s) || *s == '_' || *s == '%')) {
      if (k + 1 >= sizeof x->name) return 0;
      x->name[k++] = *s++;
    }
    x->name[k] = 0;
    if (*s == '^') s++;
    x->exp = 1;
    if (*s == '-' || *s == '+' || isdigit((unsigned char)*s)) {
      char *end;
      long e = strtol(s, &end, 10);
      if (end == s || e == 0 || e > 99 || e < -99) return 0;
      x->exp = (int)e;
      s = end;
    }
    if (*s && *s != ' ' && *s != '.' && *s != '*') return 0; /* '/', '(', digits after names */
  }
  return *nt > 0;
}

static int units_format(const term_t *t, int nt, char *out, size_t cap) {
  out[0] = 0;
  size_t len = 0;
  for (int k = 0; k < nt; k++) {
    if (t[k].exp == 0) continue;
    int n = t[k].exp == 1 ? snprintf(out + len, cap - len, "%s%s", len ? " " : "", t[k].name)
                          : snprintf(out + len, cap - len, "%s%s%d", len ? " " : "", t[k].name,
                                     t[k].exp);
    if (n < 0 || (size_t)n >= cap - len) return 0;
    len += (size_t)n;
  }
  if (!len) snprintf(out, cap, "1");
  return 1;
}

int h5meta_units_pow(const char *in, int num, int den, char *out, size_t cap) {
  term_t t[MAXTERMS];
  int nt;
  out[0] = 0;
  if (!units_parse(in, t, &nt)) return 0;
  for (int k = 0; k < nt; k++) {
    if ((t[k].exp * num) % den) return 0;
    t[k].exp = t[k].exp * num / den;
  }
  return units_format(t, nt, out, cap) ? 1 : (out[0] = 0, 0);
}

int h5meta_units_mul(const char *a, const char *b, char *out, size_t cap) {
  term_t t[2 * MAXTERMS], u[MAXTERMS];
  int nt, nu;
  out[0] = 0;
  if (!units_parse(a, t, &nt) || !units_parse(b, u, &nu)) return 0;
  for (int k = 0; k < nu; k++) {
    int found = 0;
    for (int i = 0; i < nt && !found; i++)
      if (!strcmp(t[i].name, u[k].name)) {
        t[i].exp += u[k].exp;
        found = 1;
      }
    if (!found) t[nt++] = u[k];
  }
  return units_format(t, nt, out, cap) ? 1 : (out[0] = 0, 0);
}

/* ---- reading the inputs' names -------------------------------------------------------------- */

static int attr_string(hid_t obj, const char *name, char *out, size_t cap) {
  out[0] = 0;
  if (H5Aexists(obj, name) <= 0) return 0;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  int ok = 0;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1) {
    if (H5Tis_variable_str(t) > 0) {
      char *v = NULL;
      hid_t mt = H5Tcopy(t);
      if (H5Aread(a, mt, &v) >= 0 && v) {
        ooc_fmt(out, cap, "%s", v);
        ok = 1;
      }
      if (v) H5free_memory(v);
      H5Tclose(mt);
    } else {
      size_t sz = H5Tget_size(t);
      char *v = calloc(1, sz + 1);
      if (v && H5Aread(a, t, v) >= 0) {
        ooc_fmt(out, cap, "%s", v);
        ok = 1;
      }
      free(v);
    }
  }
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return ok;
}

typedef struct {
  char path[512];
} firstscale_t;

static herr_t first_scale(hid_t did, unsigned dim, hid_t dsid, void *p) {
  (void)did;
  (void)dim;
  firstscale_t *f = p;
  if (H5Iget_name(dsid, f->path, sizeof f->path) <= 0) f->path[0] = 0;
  return 1; /* stop at the first */
}

/* The netCDF dimension on axis ax of dataset d: its scale's path ("" if none). */
static void dim_scale_of(hid_t d, int ax, char *path, size_t cap) {
  path[0] = 0;
  if (d < 0 || ax < 0 || H5DSget_num_scales(d, (unsigned)ax) <= 0) return;
  firstscale_t f = {""};
  H5DSiterate_scales(d, (unsigned)ax, NULL, first_scale, &f);
  ooc_fmt(path, cap, "%s", f.path);
}

static const char *leaf(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* ---- writing ------------------------------------------------------------------------------- */

typedef struct {
  char name[256];   /* dimension name */
  char src[512];    /* the input's scale dataset ("" if none) */
  hid_t src_file;   /* the input's file */
  int64_t len;
} dim_t;

static ooc_status_t fail(ooc_ctx_t *ctx, const h5mat_t *out, const char *what) {
  return OOC_FAIL(ctx, OOC_ERR_IO, "%s: cannot write %s", h5m_name(out), what);
}

/* A scale named dim->name of the right length in group g: reused if there is one, else made
 * (coordinate values copied from the input's scale when it is a coordinate variable). The
 * returned id is open; -1 on failure. A name taken by something else gets a suffix. */
/* An existing scale `name` of length len visible from group gpath (netCDF dimensions are seen
 * from child groups): the group itself, then its ancestors. */
static hid_t find_scale(hid_t f, const char *gpath, const char *name, int64_t len) {
  char g[512];
  ooc_fmt(g, sizeof g, "%s", gpath);
  for (;;) {
    char p[900];
    ooc_fmt(p, sizeof p, "%s%s%s", g, strcmp(g, "/") ? "/" : "", name);
    if (H5Lexists(f, p, H5P_DEFAULT) > 0) {
      hid_t s = H5Dopen2(f, p, H5P_DEFAULT);
      if (s >= 0) {
        hid_t sp = H5Dget_space(s);
        hsize_t n = 0;
        int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
                 H5Sget_simple_extent_dims(sp, &n, NULL) == 1 && (int64_t)n == len &&
                 H5DSis_scale(s) > 0;
        if (sp >= 0) H5Sclose(sp);
        if (ok) return s;
        H5Dclose(s);
      }
    }
    if (!strcmp(g, "/")) return -1;
    char *sl = strrchr(g, '/');
    if (sl == g) g[1] = 0;
    else *sl = 0;
  }
}

static hid_t get_scale(hid_t f, const char *gpath, hid_t g, dim_t *dim) {
  char name[300];
  ooc_fmt(name, sizeof name, "%s", dim->name);
  hid_t found = find_scale(f, gpath, name, dim->len);
  if (found >= 0) return found;
  for (int attempt = 0; attempt < 10; attempt++) {
    if (attempt) ooc_fmt(name, sizeof name, "%s_%d", dim->name, attempt);
    if (H5Lexists(g, name, H5P_DEFAULT) > 0) {
      hid_t s = H5Dopen2(g, name, H5P_DEFAULT);
      if (s < 0) continue;
      hid_t sp = H5Dget_space(s);
      hsize_t n = 0;
      int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
               H5Sget_simple_extent_dims(sp, &n, NULL) == 1 && (int64_t)n == dim->len &&
               H5DSis_scale(s) > 0;
      if (sp >= 0) H5Sclose(sp);
      if (ok) {
        ooc_fmt(dim->name, sizeof dim->name, "%s", name);
        return s;
      }
      H5Dclose(s);
      continue;
    }
    /* new: values of the input's coordinate variable, or none (a dimension without variable) */
    double *vals = NULL;
    char nm[128] = "", units[128] = "";
    int coord = 0;
    if (dim->src[0] && dim->src_file >= 0) {
      hid_t in = H5Dopen2(dim->src_file, dim->src, H5P_DEFAULT);
      if (in >= 0) {
        attr_string(in, "NAME", nm, sizeof nm);
        attr_string(in, "units", units, sizeof units);
        hid_t t = H5Dget_type(in);
        H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
        if (t >= 0) H5Tclose(t);
        coord = strncmp(nm, DIM_WITHOUT_VARIABLE, strlen(DIM_WITHOUT_VARIABLE)) != 0 &&
                (c == H5T_FLOAT || c == H5T_INTEGER);
        if (coord) {
          vals = malloc((size_t)dim->len * sizeof *vals);
          if (!vals || H5Dread(in, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) < 0) {
            free(vals);
            vals = NULL;
            coord = 0;
          }
        }
        H5Dclose(in);
      }
    }
    hsize_t n = (hsize_t)dim->len;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t s = sp >= 0 ? H5Dcreate2(g, name, coord ? H5T_IEEE_F64LE : H5T_IEEE_F32LE, sp,
                                   H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                      : -1;
    if (sp >= 0) H5Sclose(sp);
    int ok = s >= 0;
    if (ok && coord) ok = H5Dwrite(s, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals) >= 0;
    free(vals);
    char label[160];
    if (coord) ooc_fmt(label, sizeof label, "%s", name);
    else ooc_fmt(label, sizeof label, "%s%10lld", DIM_WITHOUT_VARIABLE, (long long)dim->len);
    if (ok) ok = H5DSset_scale(s, label) >= 0;
    if (ok && coord && units[0]) ok = H5LTset_attribute_string(g, name, "units", units) >= 0;
    if (!ok) {
      if (s >= 0) H5Dclose(s);
      return -1;
    }
    ooc_fmt(dim->name, sizeof dim->name, "%s", name);
    return s;
  }
  return -1;
}

static void input_dim(h5mat_t *in, int which, dim_t *d) {
  int ar, ac;
  h5m_axes(in, &ar, &ac);
  int ax = which == 0 ? ar : ac;
  d->src_file = (hid_t)h5m_file_id(in);
  dim_scale_of((hid_t)h5m_dset_id(in), ax, d->src, sizeof d->src);
  if (d->src[0]) ooc_fmt(d->name, sizeof d->name, "%s", leaf(d->src));
}

static void abs_spec(const h5mat_t *m, char *out, size_t cap) {
  char rp[PATH_MAX];
  const char *name = h5m_name(m), *path = h5m_path(m);
  const char *ds = path[0] && !strncmp(name, path, strlen(path)) ? name + strlen(path) : "";
  if (realpath(path, rp)) ooc_fmt(out, cap, "%s%s", rp, ds);
  else ooc_fmt(out, cap, "%s", name);
}

ooc_status_t h5meta_describe(ooc_ctx_t *ctx, h5mat_t *out, h5mat_t *a, h5mat_t *b,
                             h5meta_kind_t kind, const char *history) {
  hid_t f = (hid_t)h5m_file_id(out), d = (hid_t)h5m_dset_id(out);
  if (f < 0 || d < 0) return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: not an open output", h5m_name(out));
  H5E_auto2_t efn;
  void *edata;
  H5Eget_auto2(H5E_DEFAULT, &efn, &edata);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  ooc_status_t st = OOC_OK;

  /* dimensions: (row, col) of the output, from the inputs' axes */
  int rank = h5m_rank(out) == 1 ? 1 : 2;
  dim_t dims[2];
  memset(dims, 0, sizeof dims);
  dims[0].src_file = dims[1].src_file = -1;
  dims[0].len = h5m_rows(out);
  dims[1].len = h5m_cols(out);
  switch (kind) {
  case H5META_INVERSE: input_dim(a, 1, &dims[0]); input_dim(a, 0, &dims[1]); break;
  case H5META_SOLVE: input_dim(a, 1, &dims[0]); if (b) input_dim(b, 1, &dims[1]); break;
  case H5META_FACTOR: input_dim(a, 0, &dims[0]); input_dim(a, 1, &dims[1]); break;
  case H5META_GEMM: input_dim(a, 0, &dims[0]); if (b) input_dim(b, 1, &dims[1]); break;
  }
  char oname[512];
  const char *full = strrchr(h5m_name(out), ':');
  ooc_fmt(oname, sizeof oname, "%s", full ? full + 1 : "/out");
  const char *lf = leaf(oname);
  for (int k = 0; k < 2; k++)
    if (!dims[k].name[0]) ooc_fmt(dims[k].name, sizeof dims[k].name, "%s_%s", lf, k ? "col" : "row");
  /* same name on both axes of different lengths cannot be one dimension */
  if (rank == 2 && !strcmp(dims[0].name, dims[1].name) && dims[0].len != dims[1].len) {
    size_t l = strlen(dims[1].name);
    ooc_fmt(dims[1].name + l, sizeof dims[1].name - l, "_col");
  }
  /* the output's group */
  char gpath[512];
  ooc_fmt(gpath, sizeof gpath, "%s", oname);
  char *sl = strrchr(gpath, '/');
  if (sl == gpath) gpath[1] = 0;
  else if (sl) *sl = 0;
  hid_t g = H5Gopen2(f, gpath, H5P_DEFAULT);
  if (g < 0) st = fail(ctx, out, "dimension scales (cannot open the output's group)");
  for (int k = 0; k < rank && st == OOC_OK; k++) {
    hid_t s = get_scale(f, gpath, g, &dims[k]);
    if (s < 0 || H5DSattach_scale(d, s, (unsigned)k) < 0)
      st = fail(ctx, out, "dimension scales");
    if (s >= 0) H5Dclose(s);
  }
  if (g >= 0) H5Gclose(g);
  H5Eset_auto2(H5E_DEFAULT, efn, edata);
  if (st != OOC_OK) return st;

  /* history, input paths */
  char when[64], hist[4096];
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  char pa[PATH_MAX + 512], pb[PATH_MAX + 512] = "";
  abs_spec(a, pa, sizeof pa);
  if (b) abs_spec(b, pb, sizeof pb);
  static const char *const verbs[] = {"invert", "solve", "factor", "gemm"};
  if (history && *history) ooc_fmt(hist, sizeof hist, "%s: %s", when, history);
  else ooc_fmt(hist, sizeof hist, "%s: liboocsolve %s %s %s%s%s", when, OOC_VERSION_STRING,
                verbs[kind], pa, b ? " " : "", pb);
  OOC_TRY(h5m_attr_str(out, "history", hist));
  OOC_TRY(h5m_attr_str(out, kind == H5META_SOLVE && b ? "input_path" : "input_path", pa));
  if (b) OOC_TRY(h5m_attr_str(out, kind == H5META_GEMM ? "input_b_path" : "rhs_path", pb));

  /* units */
  char ua[128] = "", ub[128] = "", uo[160] = "", tmp[160];
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int has_a = attr_string((hid_t)h5m_dset_id(a), "units", ua, sizeof ua);
  int has_b = b && attr_string((hid_t)h5m_dset_id(b), "units", ub, sizeof ub);
  H5Eset_auto2(H5E_DEFAULT, efn, edata);
  switch (kind) {
  case H5META_INVERSE: if (has_a) h5meta_units_pow(ua, -1, 1, uo, sizeof uo); break;
  case H5META_FACTOR: if (has_a) h5meta_units_pow(ua, 1, 2, uo, sizeof uo); break;
  case H5META_SOLVE:
    if (has_a && has_b && h5meta_units_pow(ua, -1, 1, tmp, sizeof tmp))
      h5meta_units_mul(tmp, ub, uo, sizeof uo);
    break;
  case H5META_GEMM: if (has_a && has_b) h5meta_units_mul(ua, ub, uo, sizeof uo); break;
  }
  if (uo[0]) OOC_TRY(h5m_attr_str(out, "units", uo));
  return OOC_OK;
}
