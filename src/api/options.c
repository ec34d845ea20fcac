/*
 * options.c: the stable ABI's opaque options and report getters (include/oocsolve.h, "the stable
 * ABI"). Contract: one table per kind (parameters, report fields) maps a pinned number to a
 * name, a type, bounds and the struct field it stands for; every setter checks type and bounds
 * and leaves the option unchanged on failure, with a message in the set's own error buffer (no
 * context needed, so a binding can validate keyword arguments before it has one). Strings are
 * copied and owned by the set. Nothing here knows a binding: bindings know only these calls.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/methods.h"
#include "exec/exset.h"
#include "base/base.h"

/* ---- parameters ------------------------------------------------------------------------------ */

typedef struct {
  const char *name;
  ooc_ptype_t type;
  double lo, hi;
  const char *const *names; /* int parameters set by name (set_str): value k is names[k] */
} pdef_t;

static const char *const D_NAMES[] = {"auto", "cpu", "ref", "cuda", NULL};
static const char *const T_NAMES[] = {"auto", "f32", "f64", NULL};
static const char *const C_NAMES[] = {"auto", "none", "probe", "full", NULL};
static const char *const TRI_NAMES[] = {"full", "lower", NULL};
static const char *const B_NAMES[] = {"0", "1", NULL}; /* flags: also "false"/"true" below */

#define I64MAX 9223372036854775807.0 /* as a double: a bound, compared with <= after conversion */

/* Indexed by ooc_param_t. */
static const pdef_t PDEFS[] = {
    [OOC_PARAM_METHOD] = {"method", OOC_PTYPE_INT, 0, OOC_METHOD_RBT, method_names},
    [OOC_PARAM_DEVICE] = {"device", OOC_PTYPE_INT, 0, 3, D_NAMES},
    [OOC_PARAM_TILE] = {"tile", OOC_PTYPE_INT, 0, 1 << 20, NULL},
    [OOC_PARAM_STRIPE] = {"stripe", OOC_PTYPE_INT, 0, I64MAX, NULL},
    [OOC_PARAM_HOST_MEM] = {"host_mem", OOC_PTYPE_INT, 0, I64MAX, NULL},
    [OOC_PARAM_SCRATCH] = {"scratch", OOC_PTYPE_STR, 0, 0, NULL},
    [OOC_PARAM_SCRATCH_ZSTD] = {"scratch_zstd", OOC_PTYPE_INT, 0, 22, NULL},
    [OOC_PARAM_COMPRESS] = {"compress", OOC_PTYPE_STR, 0, 0, NULL},
    [OOC_PARAM_OUT_TYPE] = {"out_type", OOC_PTYPE_INT, 0, 2, T_NAMES},
    [OOC_PARAM_CHECK] = {"check", OOC_PTYPE_INT, 0, 3, C_NAMES},
    [OOC_PARAM_CHECK_THRESHOLD] = {"check_threshold", OOC_PTYPE_DOUBLE, 0, 1e12, NULL},
    [OOC_PARAM_FORCE] = {"force", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_GPU_MEM] = {"gpu_mem", OOC_PTYPE_INT, 0, I64MAX, NULL},
    [OOC_PARAM_STREAMS] = {"streams", OOC_PTYPE_INT, 0, 8, NULL},
    [OOC_PARAM_TRACE] = {"trace", OOC_PTYPE_STR, 0, 0, NULL},
    [OOC_PARAM_TRIANGLE] = {"triangle", OOC_PTYPE_INT, 0, 1, TRI_NAMES},
    [OOC_PARAM_WARM_START] = {"warm_start", OOC_PTYPE_STR, 0, 0, NULL},
    [OOC_PARAM_MAX_ITER] = {"max_iter", OOC_PTYPE_INT, 0, 100000, NULL},
    [OOC_PARAM_RESUME] = {"resume", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_CHECKPOINT] = {"checkpoint", OOC_PTYPE_DOUBLE, -2, 1e9, NULL},
    [OOC_PARAM_ALLOW_FILL] = {"allow_fill", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_TRANS_A] = {"trans_a", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_TRANS_B] = {"trans_b", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_KEEP_FILL] = {"keep_fill", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_HISTORY] = {"history", OOC_PTYPE_STR, 0, 0, NULL},
    [OOC_PARAM_KEEP_FAILED] = {"keep_failed", OOC_PTYPE_INT, 0, 1, B_NAMES},
    [OOC_PARAM_SEED] = {"seed", OOC_PTYPE_INT, 0, I64MAX, NULL},
    [OOC_PARAM_RBT_DEPTH] = {"rbt_depth", OOC_PTYPE_INT, 0, 6, NULL},
    [OOC_PARAM_DISK_READ_BW] = {"disk_read_bw", OOC_PTYPE_DOUBLE, 0, 1e15, NULL},
    [OOC_PARAM_DISK_WRITE_BW] = {"disk_write_bw", OOC_PTYPE_DOUBLE, 0, 1e15, NULL},
    [OOC_PARAM_DEVICES] = {"devices", OOC_PTYPE_STR, 0, 0, NULL},
};
#define NPARAMS ((int)(sizeof PDEFS / sizeof PDEFS[0]) - 1)

/* The string parameters' slots in ooc_options.str. */
enum { S_SCRATCH, S_COMPRESS, S_TRACE, S_WARM, S_HISTORY, S_DEVICES, S_COUNT };

struct ooc_options {
  ooc_opts_t o;       /* its const char * fields point into str[] */
  char *str[S_COUNT]; /* owned copies (NULL: unset) */
  char err[512];
};

int ooc_abi_version(void) { return OOC_ABI_VERSION; }
int ooc_param_count(void) { return NPARAMS; }

static const pdef_t *pdef(ooc_param_t p) {
  return (int)p >= 1 && (int)p <= NPARAMS && PDEFS[p].name ? &PDEFS[p] : NULL;
}

ooc_param_t ooc_param_lookup(const char *name) {
  for (int k = 1; name && k <= NPARAMS; k++)
    if (PDEFS[k].name && !strcmp(PDEFS[k].name, name)) return (ooc_param_t)k;
  return OOC_PARAM_UNKNOWN;
}
const char *ooc_param_name(ooc_param_t p) { return pdef(p) ? pdef(p)->name : NULL; }
ooc_ptype_t ooc_param_type(ooc_param_t p) { return pdef(p) ? pdef(p)->type : OOC_PTYPE_NONE; }
ooc_status_t ooc_param_bounds(ooc_param_t p, double *lo, double *hi) {
  const pdef_t *d = pdef(p);
  if (!d || d->type == OOC_PTYPE_STR) return OOC_ERR_ARG;
  if (lo) *lo = d->lo;
  if (hi) *hi = d->hi;
  return OOC_OK;
}

static ooc_status_t oerr(ooc_options_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ooc_status_t oerr(ooc_options_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->err, sizeof o->err, fmt, ap);
  va_end(ap);
  return OOC_ERR_ARG;
}

/* The string slot of a string parameter (-1: not a string). */
static int str_slot(ooc_param_t p) {
  switch (p) {
  case OOC_PARAM_SCRATCH: return S_SCRATCH;
  case OOC_PARAM_COMPRESS: return S_COMPRESS;
  case OOC_PARAM_TRACE: return S_TRACE;
  case OOC_PARAM_WARM_START: return S_WARM;
  case OOC_PARAM_HISTORY: return S_HISTORY;
  case OOC_PARAM_DEVICES: return S_DEVICES;
  default: return -1;
  }
}

/* The struct's string fields always point at the owned copies. */
static void sync_strings(ooc_options_t *o) {
  o->o.scratch_dir = o->str[S_SCRATCH];
  o->o.compress = o->str[S_COMPRESS];
  o->o.trace = o->str[S_TRACE];
  o->o.warm_start = o->str[S_WARM];
  o->o.history = o->str[S_HISTORY];
  o->o.devices = o->str[S_DEVICES];
}

ooc_status_t ooc_opts_create(ooc_options_t **out) {
  if (!out) return OOC_ERR_ARG;
  ooc_options_t *o = calloc(1, sizeof *o);
  *out = o;
  if (!o) return OOC_ERR_NOMEM;
  ooc_opts_default(&o->o);
  sync_strings(o);
  return OOC_OK;
}

void ooc_opts_destroy(ooc_options_t *o) {
  if (!o) return;
  for (int k = 0; k < S_COUNT; k++) free(o->str[k]);
  free(o);
}

const char *ooc_opts_error(const ooc_options_t *o) { return o ? o->err : "no options"; }
const ooc_opts_t *ooc_opts_struct(const ooc_options_t *o) { return o ? &o->o : NULL; }

/* Store an integral value already checked against the bounds. */
static void put_int(ooc_options_t *o, ooc_param_t p, int64_t v) {
  ooc_opts_t *s = &o->o;
  switch (p) {
  case OOC_PARAM_METHOD: s->method = (ooc_method_t)v; break;
  case OOC_PARAM_DEVICE: s->device = (ooc_device_t)v; break;
  case OOC_PARAM_TILE: s->tile = v; break;
  case OOC_PARAM_STRIPE: s->stripe = v; break;
  case OOC_PARAM_HOST_MEM: s->host_mem = v; break;
  case OOC_PARAM_SCRATCH_ZSTD: s->scratch_zstd = (int)v; break;
  case OOC_PARAM_OUT_TYPE: s->out_dtype = (ooc_dtype_t)v; break;
  case OOC_PARAM_CHECK: s->check = (ooc_check_t)v; break;
  case OOC_PARAM_FORCE: s->force = (int)v; break;
  case OOC_PARAM_GPU_MEM: s->gpu_mem = v; break;
  case OOC_PARAM_STREAMS: s->streams = (int)v; break;
  case OOC_PARAM_TRIANGLE: s->lower_only = (int)v; break;
  case OOC_PARAM_MAX_ITER: s->max_iter = (int)v; break;
  case OOC_PARAM_RESUME: s->resume = (int)v; break;
  case OOC_PARAM_ALLOW_FILL: s->allow_fill = (int)v; break;
  case OOC_PARAM_TRANS_A: s->trans_a = (int)v; break;
  case OOC_PARAM_TRANS_B: s->trans_b = (int)v; break;
  case OOC_PARAM_KEEP_FILL: s->keep_fill = (int)v; break;
  case OOC_PARAM_KEEP_FAILED: s->keep_failed = (int)v; break;
  case OOC_PARAM_SEED: s->seed = v; break;
  case OOC_PARAM_RBT_DEPTH: s->rbt_depth = (int)v; break;
  default: break;
  }
}

static int64_t read_int(const ooc_options_t *o, ooc_param_t p) {
  const ooc_opts_t *s = &o->o;
  switch (p) {
  case OOC_PARAM_METHOD: return s->method;
  case OOC_PARAM_DEVICE: return s->device;
  case OOC_PARAM_TILE: return s->tile;
  case OOC_PARAM_STRIPE: return s->stripe;
  case OOC_PARAM_HOST_MEM: return s->host_mem;
  case OOC_PARAM_SCRATCH_ZSTD: return s->scratch_zstd;
  case OOC_PARAM_OUT_TYPE: return s->out_dtype;
  case OOC_PARAM_CHECK: return s->check;
  case OOC_PARAM_FORCE: return s->force;
  case OOC_PARAM_GPU_MEM: return s->gpu_mem;
  case OOC_PARAM_STREAMS: return s->streams;
  case OOC_PARAM_TRIANGLE: return s->lower_only;
  case OOC_PARAM_MAX_ITER: return s->max_iter;
  case OOC_PARAM_RESUME: return s->resume;
  case OOC_PARAM_ALLOW_FILL: return s->allow_fill;
  case OOC_PARAM_TRANS_A: return s->trans_a;
  case OOC_PARAM_TRANS_B: return s->trans_b;
  case OOC_PARAM_KEEP_FILL: return s->keep_fill;
  case OOC_PARAM_KEEP_FAILED: return s->keep_failed;
  case OOC_PARAM_SEED: return s->seed;
  case OOC_PARAM_RBT_DEPTH: return s->rbt_depth;
  default: return 0;
  }
}

static ooc_status_t unknown(ooc_options_t *o, ooc_param_t p) {
  return oerr(o, "unknown option parameter %d (this library knows 1..%d; oocsolve %s)", (int)p,
              NPARAMS, OOC_VERSION_STRING);
}

/* The value of a double parameter, checked (checkpoint: > 0 seconds or one of the two specials). */
static ooc_status_t set_dbl_checked(ooc_options_t *o, ooc_param_t p, const pdef_t *d, double v) {
  if (!isfinite(v) || v < d->lo || v > d->hi)
    return oerr(o, "option %s: %g is outside [%g, %g]", d->name, v, d->lo, d->hi);
  if (p == OOC_PARAM_CHECKPOINT) {
    if (v <= 0 && v != OOC_CHECKPOINT_EVERY_STEP && v != OOC_CHECKPOINT_NEVER && v != 0)
      return oerr(o, "option checkpoint: %g is neither seconds > 0, 0 (the default), %g (every "
                  "step) nor %g (never)", v, OOC_CHECKPOINT_EVERY_STEP, OOC_CHECKPOINT_NEVER);
    o->o.checkpoint = v;
  } else if (p == OOC_PARAM_DISK_READ_BW) {
    o->o.disk_read_bw = v;
  } else if (p == OOC_PARAM_DISK_WRITE_BW) {
    o->o.disk_write_bw = v;
  } else {
    o->o.check_threshold = v;
  }
  return OOC_OK;
}

ooc_status_t ooc_opts_set_int(ooc_options_t *o, ooc_param_t p, int64_t v) {
  if (!o) return OOC_ERR_ARG;
  const pdef_t *d = pdef(p);
  if (!d) return unknown(o, p);
  o->err[0] = 0;
  if (d->type == OOC_PTYPE_DOUBLE) return set_dbl_checked(o, p, d, (double)v);
  if (d->type != OOC_PTYPE_INT)
    return oerr(o, "option %s takes a string (ooc_opts_set_str), not the integer %lld", d->name,
                (long long)v);
  if ((double)v < d->lo || (double)v > d->hi)
    return oerr(o, "option %s: %lld is outside [%.0f, %.0f]", d->name, (long long)v, d->lo, d->hi);
  put_int(o, p, v);
  return OOC_OK;
}

ooc_status_t ooc_opts_set_double(ooc_options_t *o, ooc_param_t p, double v) {
  if (!o) return OOC_ERR_ARG;
  const pdef_t *d = pdef(p);
  if (!d) return unknown(o, p);
  o->err[0] = 0;
  if (d->type == OOC_PTYPE_DOUBLE) return set_dbl_checked(o, p, d, v);
  if (d->type != OOC_PTYPE_INT)
    return oerr(o, "option %s takes a string (ooc_opts_set_str), not the number %g", d->name, v);
  if (!isfinite(v) || v != floor(v))
    return oerr(o, "option %s takes an integer; %g is not one", d->name, v);
  if (v < d->lo || v > d->hi)
    return oerr(o, "option %s: %.17g is outside [%.0f, %.0f]", d->name, v, d->lo, d->hi);
  put_int(o, p, (int64_t)v);
  return OOC_OK;
}

/* "1", "true", "yes", "on" / "0", "false", "no", "off" */
static int parse_flag(const char *v) {
  static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
  for (int k = 0; k < 4; k++) {
    if (!strcmp(v, on[k])) return 1;
    if (!strcmp(v, off[k])) return 0;
  }
  return -1;
}

ooc_status_t ooc_opts_set_str(ooc_options_t *o, ooc_param_t p, const char *v) {
  if (!o) return OOC_ERR_ARG;
  const pdef_t *d = pdef(p);
  if (!d) return unknown(o, p);
  o->err[0] = 0;
  int slot = str_slot(p);
  if (slot >= 0) {
    if (p == OOC_PARAM_DEVICES) { /* checked here, so the call fails before any work */
      int dev[EX_MAX_DEVICES], nd;
      char why[256];
      if (ex_devices_parse(v, dev, &nd, why, sizeof why))
        return oerr(o, "option devices: %s", why + strlen("--devices "));
    }
    if (p == OOC_PARAM_COMPRESS && v && *v) { /* the syntax h5m_parse_compress accepts */
      const char *colon = strchr(v, ':');
      size_t kl = colon ? (size_t)(colon - v) : strlen(v);
      int ok = (kl == 4 && !strncmp(v, "none", 4) && !colon) || (kl == 4 && !strncmp(v, "zstd", 4)) ||
               (kl == 7 && !strncmp(v, "deflate", 7));
      if (ok && colon) {
        char *end;
        errno = 0;
        long lv = strtol(colon + 1, &end, 10);
        int zstd = kl == 4;
        ok = colon[1] && !*end && !errno && lv >= (zstd ? 1 : 0) && lv <= (zstd ? 22 : 9);
      }
      if (!ok)
        return oerr(o, "option compress: '%s' is not none, zstd[:1..22] or deflate[:0..9]", v);
    }
    char *c = v ? strdup(v) : NULL;
    if (v && !c) return oerr(o, "option %s: out of host memory", d->name), OOC_ERR_NOMEM;
    free(o->str[slot]);
    o->str[slot] = c;
    sync_strings(o);
    return OOC_OK;
  }
  if (!v || !*v) return oerr(o, "option %s: empty value", d->name);
  if (d->names) { /* enum or flag by name */
    for (int k = 0; d->names[k]; k++)
      if (!strcmp(d->names[k], v)) return ooc_opts_set_int(o, p, k);
    if (d->names == B_NAMES && parse_flag(v) >= 0) return ooc_opts_set_int(o, p, parse_flag(v));
    char list[160] = "";
    for (int k = 0; d->names[k]; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", d->names[k]);
    if (d->names == B_NAMES)
      snprintf(list + strlen(list), sizeof list - strlen(list), ", true, false, yes, no, on, off");
    return oerr(o, "option %s: '%s' is not one of %s", d->name, v, list);
  }
  if (p == OOC_PARAM_CHECKPOINT) {
    if (!strcmp(v, "step")) return set_dbl_checked(o, p, d, OOC_CHECKPOINT_EVERY_STEP);
    if (!strcmp(v, "off")) return set_dbl_checked(o, p, d, OOC_CHECKPOINT_NEVER);
  }
  if (p == OOC_PARAM_HOST_MEM || p == OOC_PARAM_GPU_MEM) {
    int64_t b = ooc_parse_size(v);
    if (b < 0) return oerr(o, "option %s: '%s' is not a size (e.g. 512M, 8G, 1.5GiB, 4096)", d->name, v);
    return ooc_opts_set_int(o, p, b);
  }
  if (p == OOC_PARAM_DISK_READ_BW || p == OOC_PARAM_DISK_WRITE_BW) { /* bytes per second */
    int64_t b = ooc_parse_size(v);
    if (b < 0) return oerr(o, "option %s: '%s' is not a size per second (e.g. 1.2G, 1200000000)", d->name, v);
    return set_dbl_checked(o, p, d, (double)b);
  }
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (*end || errno || end == v)
    return oerr(o, "option %s: '%s' is not a number", d->name, v);
  return ooc_opts_set_double(o, p, x);
}

ooc_status_t ooc_opts_get_int(const ooc_options_t *o, ooc_param_t p, int64_t *v) {
  const pdef_t *d = pdef(p);
  if (!o || !v || !d || d->type != OOC_PTYPE_INT) return OOC_ERR_ARG;
  *v = read_int(o, p);
  return OOC_OK;
}

ooc_status_t ooc_opts_get_double(const ooc_options_t *o, ooc_param_t p, double *v) {
  const pdef_t *d = pdef(p);
  if (!o || !v || !d || d->type == OOC_PTYPE_STR) return OOC_ERR_ARG;
  if (d->type == OOC_PTYPE_INT) *v = (double)read_int(o, p);
  else *v = p == OOC_PARAM_CHECKPOINT       ? o->o.checkpoint
            : p == OOC_PARAM_DISK_READ_BW  ? o->o.disk_read_bw
            : p == OOC_PARAM_DISK_WRITE_BW ? o->o.disk_write_bw
                                           : o->o.check_threshold;
  return OOC_OK;
}

const char *ooc_opts_get_str(const ooc_options_t *o, ooc_param_t p) {
  int slot = str_slot(p);
  if (!o || slot < 0) return NULL;
  return o->str[slot] ? o->str[slot] : "";
}

/* ---- report fields --------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  ooc_ptype_t type;
  size_t off;   /* offsetof(ooc_report_t, field) */
  int is_int32; /* int (not int64_t) fields */
} rdef_t;

#define RS(f) {#f, OOC_PTYPE_STR, offsetof(ooc_report_t, f), 0}
#define RI(f) {#f, OOC_PTYPE_INT, offsetof(ooc_report_t, f), 0}
#define RI32(f) {#f, OOC_PTYPE_INT, offsetof(ooc_report_t, f), 1}
#define RD(f) {#f, OOC_PTYPE_DOUBLE, offsetof(ooc_report_t, f), 0}
static const rdef_t RDEFS[] = {
    [OOC_R_KIND] = RS(kind), [OOC_R_METHOD] = RS(method), [OOC_R_BACKEND] = RS(backend),
    [OOC_R_PRECISION] = RS(precision), [OOC_R_OUT_DTYPE] = RS(out_dtype),
    [OOC_R_OUTPUT] = RS(output), [OOC_R_N] = RI(n), [OOC_R_NRHS] = RI(nrhs),
    [OOC_R_TILE] = RI(tile), [OOC_R_STRIPE] = RI(stripe), [OOC_R_STEPS] = RI(steps),
    [OOC_R_T_READ] = RD(t_read), [OOC_R_T_COMPUTE] = RD(t_compute), [OOC_R_T_SPILL] = RD(t_spill),
    [OOC_R_T_WRITE] = RD(t_write), [OOC_R_T_CHECK] = RD(t_check), [OOC_R_T_TOTAL] = RD(t_total),
    [OOC_R_FLOPS] = RD(flops), [OOC_R_GFLOPS] = RD(gflops), [OOC_R_BYTES_INPUT] = RI(bytes_input),
    [OOC_R_BYTES_SPILLED] = RI(bytes_spilled), [OOC_R_BYTES_UNSPILLED] = RI(bytes_unspilled),
    [OOC_R_BYTES_OUTPUT] = RI(bytes_output), [OOC_R_HOST_BUDGET] = RI(host_budget),
    [OOC_R_HOST_PEAK] = RI(host_peak), [OOC_R_NORM1_A] = RD(norm1_a),
    [OOC_R_NORM1_X] = RD(norm1_x), [OOC_R_RESIDUAL] = RD(residual), [OOC_R_CHECK] = RS(check),
    [OOC_R_INFO] = RI(info), [OOC_R_LOGDET] = RD(logdet), [OOC_R_ITERATIONS] = RI32(iterations),
    [OOC_R_RESUMED_STEP] = RI(resumed_step), [OOC_R_WARNINGS] = RS(warnings),
    [OOC_R_GEMM_K] = RI(gemm_k), [OOC_R_HOST_LIMIT] = RS(host_limit),
    [OOC_R_RESIDUAL_NORM1] = RD(residual_norm1), [OOC_R_CHECK_PRODUCTS] = RI32(check_products),
    [OOC_R_REJECTED] = RS(rejected), [OOC_R_SEED] = RI(seed),
    [OOC_R_BERR_BEFORE] = RD(berr_before), [OOC_R_BERR_AFTER] = RD(berr_after),
    [OOC_R_T_TRANSFORM] = RD(t_transform), [OOC_R_T_FACTOR] = RD(t_factor),
    [OOC_R_T_SOLVE] = RD(t_solve), [OOC_R_T_REFINE] = RD(t_refine),
    [OOC_R_T_FLOOR] = RD(t_floor),
    [OOC_R_FLOOR_RATIO] = RD(floor_ratio), [OOC_R_BYTES_SPILL_MODEL] = RI(bytes_spill_model),
    [OOC_R_BYTES_SPILLED_ELIM] = RI(bytes_spilled_elim),
    [OOC_R_BYTES_UNSPILLED_ELIM] = RI(bytes_unspilled_elim),
    [OOC_R_BYTES_CHECK_READ] = RI(bytes_check_read),
    /* the first device's (device_peak[0], device_budget[0]; oocsolve.h) */
    [OOC_R_DEVICE_PEAK] = RI(device_peak), [OOC_R_DEVICE_BUDGET] = RI(device_budget),
    [OOC_R_BYTES_KEPT_IN_INPUT] = RI(bytes_kept_in_input),
    [OOC_R_BYTES_REREAD_INPUT] = RI(bytes_reread_input), [OOC_R_T_COMMIT] = RD(t_commit),
    [OOC_R_BYTES_UNSPILL_MODEL] = RI(bytes_unspill_model),
    [OOC_R_STRIPS_READ_AHEAD] = RI(strips_read_ahead),
};
#define NFIELDS ((int)(sizeof RDEFS / sizeof RDEFS[0]) - 1)

static const rdef_t *rdef(ooc_rfield_t f) {
  return (int)f >= 1 && (int)f <= NFIELDS && RDEFS[f].name ? &RDEFS[f] : NULL;
}

ooc_report_t *ooc_report_create(void) {
  ooc_report_t *r = calloc(1, sizeof *r);
  if (r) r->logdet = NAN;
  return r;
}
void ooc_report_destroy(ooc_report_t *r) { free(r); }
int ooc_report_field_count(void) { return NFIELDS; }
ooc_rfield_t ooc_report_field_lookup(const char *name) {
  for (int k = 1; name && k <= NFIELDS; k++)
    if (RDEFS[k].name && !strcmp(RDEFS[k].name, name)) return (ooc_rfield_t)k;
  return OOC_R_UNKNOWN;
}
const char *ooc_report_field_name(ooc_rfield_t f) { return rdef(f) ? rdef(f)->name : NULL; }
ooc_ptype_t ooc_report_field_type(ooc_rfield_t f) { return rdef(f) ? rdef(f)->type : OOC_PTYPE_NONE; }

ooc_status_t ooc_report_get_int(const ooc_report_t *r, ooc_rfield_t f, int64_t *v) {
  const rdef_t *d = rdef(f);
  if (!r || !v || !d || d->type != OOC_PTYPE_INT) return OOC_ERR_ARG;
  const char *p = (const char *)r + d->off;
  if (d->is_int32) {
    int x;
    memcpy(&x, p, sizeof x);
    *v = x;
  } else {
    memcpy(v, p, sizeof *v);
  }
  return OOC_OK;
}

ooc_status_t ooc_report_get_double(const ooc_report_t *r, ooc_rfield_t f, double *v) {
  const rdef_t *d = rdef(f);
  if (!r || !v || !d || d->type == OOC_PTYPE_STR) return OOC_ERR_ARG;
  if (d->type == OOC_PTYPE_INT) {
    int64_t x;
    ooc_report_get_int(r, f, &x);
    *v = (double)x;
  } else {
    memcpy(v, (const char *)r + d->off, sizeof *v);
  }
  return OOC_OK;
}

const char *ooc_report_get_str(const ooc_report_t *r, ooc_rfield_t f) {
  const rdef_t *d = rdef(f);
  return r && d && d->type == OOC_PTYPE_STR ? (const char *)r + d->off : NULL;
}

size_t ooc_report_json_str(const ooc_report_t *r, ooc_status_t status, const char *error,
                           char *buf, size_t cap) {
  char *mem = NULL;
  size_t len = 0;
  FILE *f = r ? open_memstream(&mem, &len) : NULL;
  if (!f) {
    if (cap) buf[0] = 0;
    return 0;
  }
  ooc_report_json(r, status, error ? error : "", f);
  fclose(f);
  if (cap) {
    size_t k = len < cap - 1 ? len : cap - 1;
    memcpy(buf, mem, k);
    buf[k] = 0;
  }
  free(mem);
  return len;
}
