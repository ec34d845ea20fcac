/*
 * test_abi.c: the stable ABI (include/oocsolve.h, "the stable ABI"): the version check, every
 * option parameter settable and readable back through the opaque set and landing in the struct
 * field it names, bounds enforced with a message naming the parameter, unknown parameters and
 * wrong types refused, and the report getters agreeing with the struct and with the JSON form.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "oocsolve.h"

static void test_version(void) {
  CU_ASSERT_EQUAL(ooc_abi_version(), OOC_ABI_VERSION);
  CU_ASSERT(ooc_abi_version() >= 1);
}

/* Names and numbers agree both ways; numbers are dense 1..count. */
static void test_param_table(void) {
  int n = ooc_param_count();
  CU_ASSERT_EQUAL(n, 31);
  for (int k = 1; k <= n; k++) {
    const char *nm = ooc_param_name((ooc_param_t)k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nm);
    CU_ASSERT_EQUAL(ooc_param_lookup(nm), k);
    CU_ASSERT(ooc_param_type((ooc_param_t)k) != OOC_PTYPE_NONE);
  }
  CU_ASSERT_PTR_NULL(ooc_param_name((ooc_param_t)0));
  CU_ASSERT_PTR_NULL(ooc_param_name((ooc_param_t)(n + 1)));
  CU_ASSERT_EQUAL(ooc_param_lookup("no_such_option"), OOC_PARAM_UNKNOWN);
  CU_ASSERT_EQUAL(ooc_param_lookup(NULL), OOC_PARAM_UNKNOWN);
  /* the pinned numbers bindings may rely on */
  CU_ASSERT_EQUAL(ooc_param_lookup("tile"), 3);
  CU_ASSERT_EQUAL(ooc_param_lookup("host_mem"), 5);
  CU_ASSERT_EQUAL(ooc_param_lookup("keep_failed"), 26);
  CU_ASSERT_EQUAL(ooc_param_lookup("seed"), 27);
  CU_ASSERT_EQUAL(ooc_param_lookup("rbt_depth"), 28);
  CU_ASSERT_EQUAL(ooc_param_lookup("disk_write_bw"), 30);
  CU_ASSERT_EQUAL(ooc_param_lookup("devices"), 31);
}

/* Every parameter: set a value inside its bounds, read it back, and find it in the struct. */
static void test_every_param_settable(void) {
  ooc_options_t *o;
  CU_ASSERT_EQUAL_FATAL(ooc_opts_create(&o), OOC_OK);
  const ooc_opts_t *s = ooc_opts_struct(o);
  ooc_opts_t def;
  ooc_opts_default(&def);
  CU_ASSERT_EQUAL(memcmp(s, &def, sizeof def), 0); /* starts at the defaults */
  for (int k = 1; k <= ooc_param_count(); k++) {
    ooc_param_t p = (ooc_param_t)k;
    if (ooc_param_type(p) == OOC_PTYPE_STR) {
      char v[64];
      snprintf(v, sizeof v, k == OOC_PARAM_COMPRESS ? "zstd:3" : k == OOC_PARAM_DEVICES ? "0,%d"
                            : "value-%d", k);
      CU_ASSERT_EQUAL(ooc_opts_set_str(o, p, v), OOC_OK);
      CU_ASSERT_STRING_EQUAL(ooc_opts_get_str(o, p), v);
      int64_t iv;
      CU_ASSERT_EQUAL(ooc_opts_get_int(o, p, &iv), OOC_ERR_ARG); /* wrong type */
      continue;
    }
    double lo, hi;
    CU_ASSERT_EQUAL_FATAL(ooc_param_bounds(p, &lo, &hi), OOC_OK);
    CU_ASSERT(lo <= hi);
    double v = hi >= 1 ? 1 : hi; /* a value != the default 0 where the bounds allow */
    if (k == OOC_PARAM_CHECKPOINT) v = 12.5;
    if (k == OOC_PARAM_CHECK_THRESHOLD) v = 7.25;
    ooc_status_t st = ooc_param_type(p) == OOC_PTYPE_INT ? ooc_opts_set_int(o, p, (int64_t)v)
                                                         : ooc_opts_set_double(o, p, v);
    CU_ASSERT_EQUAL(st, OOC_OK);
    CU_ASSERT_STRING_EQUAL(ooc_opts_error(o), "");
    double back;
    CU_ASSERT_EQUAL(ooc_opts_get_double(o, p, &back), OOC_OK);
    CU_ASSERT_EQUAL(back, v);
    CU_ASSERT_PTR_NULL(ooc_opts_get_str(o, p));
  }
  /* every field of the struct moved away from its default: each parameter reached its field */
  CU_ASSERT_EQUAL(s->method, 1);
  CU_ASSERT_EQUAL(s->device, 1);
  CU_ASSERT_EQUAL(s->tile, 1);
  CU_ASSERT_EQUAL(s->stripe, 1);
  CU_ASSERT_EQUAL(s->host_mem, 1);
  CU_ASSERT_STRING_EQUAL(s->scratch_dir, "value-6");
  CU_ASSERT_EQUAL(s->scratch_zstd, 1);
  CU_ASSERT_STRING_EQUAL(s->compress, "zstd:3");
  CU_ASSERT_EQUAL(s->out_dtype, 1);
  CU_ASSERT_EQUAL(s->check, 1);
  CU_ASSERT_EQUAL(s->check_threshold, 7.25);
  CU_ASSERT_EQUAL(s->force, 1);
  CU_ASSERT_EQUAL(s->gpu_mem, 1);
  CU_ASSERT_EQUAL(s->streams, 1);
  CU_ASSERT_STRING_EQUAL(s->trace, "value-15");
  CU_ASSERT_EQUAL(s->lower_only, 1);
  CU_ASSERT_STRING_EQUAL(s->warm_start, "value-17");
  CU_ASSERT_EQUAL(s->max_iter, 1);
  CU_ASSERT_EQUAL(s->resume, 1);
  CU_ASSERT_EQUAL(s->checkpoint, 12.5);
  CU_ASSERT_EQUAL(s->allow_fill, 1);
  CU_ASSERT_EQUAL(s->trans_a, 1);
  CU_ASSERT_EQUAL(s->trans_b, 1);
  CU_ASSERT_EQUAL(s->keep_fill, 1);
  CU_ASSERT_STRING_EQUAL(s->history, "value-25");
  CU_ASSERT_EQUAL(s->keep_failed, 1);
  CU_ASSERT_EQUAL(s->disk_read_bw, 1);
  CU_ASSERT_EQUAL(s->disk_write_bw, 1);
  /* the CLI's syntax through set_str */
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_HOST_MEM, "2G"), OOC_OK);
  CU_ASSERT_EQUAL(s->host_mem, 2LL << 30);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DISK_READ_BW, "1200000000"), OOC_OK);
  CU_ASSERT_EQUAL(s->disk_read_bw, 1.2e9);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DISK_WRITE_BW, "1G"), OOC_OK);
  CU_ASSERT_EQUAL(s->disk_write_bw, 1073741824.0);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DISK_WRITE_BW, "fast"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_double(o, OOC_PARAM_DISK_READ_BW, -1), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_METHOD, "hyper7"), OOC_OK);
  CU_ASSERT_EQUAL(s->method, OOC_METHOD_HYPER7);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_METHOD, "lu"), OOC_OK); /* every method */
  CU_ASSERT_EQUAL(s->method, OOC_METHOD_LU);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_METHOD, "rbt"), OOC_OK);
  CU_ASSERT_EQUAL(s->method, OOC_METHOD_RBT);
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, OOC_PARAM_METHOD, OOC_METHOD_RBT + 1), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_CHECKPOINT, "step"), OOC_OK);
  CU_ASSERT_EQUAL(s->checkpoint, OOC_CHECKPOINT_EVERY_STEP);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_CHECKPOINT, "off"), OOC_OK);
  CU_ASSERT_EQUAL(s->checkpoint, OOC_CHECKPOINT_NEVER);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_FORCE, "false"), OOC_OK);
  CU_ASSERT_EQUAL(s->force, 0);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_TRIANGLE, "lower"), OOC_OK);
  CU_ASSERT_EQUAL(s->lower_only, 1);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_TILE, "512"), OOC_OK);
  CU_ASSERT_EQUAL(s->tile, 512);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_SCRATCH, NULL), OOC_OK); /* back to unset */
  CU_ASSERT_PTR_NULL(s->scratch_dir);
  CU_ASSERT_STRING_EQUAL(ooc_opts_get_str(o, OOC_PARAM_SCRATCH), "");
  ooc_opts_destroy(o);
  ooc_opts_destroy(NULL);
}

/* Out of bounds, wrong type, unknown: refused with a message, the value unchanged. */
static void test_bounds(void) {
  ooc_options_t *o;
  CU_ASSERT_EQUAL_FATAL(ooc_opts_create(&o), OOC_OK);
  const ooc_opts_t *s = ooc_opts_struct(o);
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, OOC_PARAM_TILE, 256), OOC_OK);
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, OOC_PARAM_TILE, -1), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "tile"));
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "-1"));
  CU_ASSERT_EQUAL(s->tile, 256);
  /* every numeric parameter: one below its lower and one above its upper bound */
  for (int k = 1; k <= ooc_param_count(); k++) {
    ooc_param_t p = (ooc_param_t)k;
    double lo, hi;
    if (ooc_param_bounds(p, &lo, &hi) != OOC_OK) {
      CU_ASSERT_EQUAL(ooc_param_type(p), OOC_PTYPE_STR);
      CU_ASSERT_EQUAL(ooc_opts_set_int(o, p, 1), OOC_ERR_ARG); /* a string parameter */
      CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), ooc_param_name(p)));
      continue;
    }
    double before;
    ooc_opts_get_double(o, p, &before);
    CU_ASSERT_EQUAL(ooc_opts_set_double(o, p, lo - 1), OOC_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), ooc_param_name(p)));
    if (hi < 9e18) {
      CU_ASSERT_EQUAL(ooc_opts_set_double(o, p, hi + 1), OOC_ERR_ARG);
      CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "outside"));
    }
    CU_ASSERT_EQUAL(ooc_opts_set_double(o, p, NAN), OOC_ERR_ARG);
    double after;
    ooc_opts_get_double(o, p, &after);
    CU_ASSERT_EQUAL(after, before);
  }
  CU_ASSERT_EQUAL(ooc_opts_set_double(o, OOC_PARAM_TILE, 2.5), OOC_ERR_ARG); /* not integral */
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "integer"));
  CU_ASSERT_EQUAL(ooc_opts_set_double(o, OOC_PARAM_CHECKPOINT, -0.5), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "checkpoint"));
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_METHOD, "qr"), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "'qr' is not one of auto, gj, chol"));
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_HOST_MEM, "lots"), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "not a size"));
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_COMPRESS, "lz4"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_COMPRESS, "zstd:30"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_COMPRESS, "deflate:6"), OOC_OK);
  /* the device list (issue 26): checked when set, the option unchanged on a refusal */
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DEVICES, "0, 2"), OOC_OK);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DEVICES, "1,1"), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "option devices"));
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "twice"));
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DEVICES, "gpu0"), OOC_ERR_ARG);
  CU_ASSERT_STRING_EQUAL(s->devices, "0, 2");
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_STREAMS, "9"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_STREAMS, "x"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_FORCE, "maybe"), OOC_ERR_ARG);
  /* unknown parameters */
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, (ooc_param_t)0, 1), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "unknown option parameter 0"));
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, (ooc_param_t)999, 1), OOC_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(ooc_opts_error(o), "999"));
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, (ooc_param_t)999, "1"), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_double(o, (ooc_param_t)-3, 1), OOC_ERR_ARG);
  int64_t iv;
  CU_ASSERT_EQUAL(ooc_opts_get_int(o, (ooc_param_t)999, &iv), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_param_bounds((ooc_param_t)999, NULL, NULL), OOC_ERR_ARG);
  CU_ASSERT_EQUAL(ooc_opts_set_int(NULL, OOC_PARAM_TILE, 1), OOC_ERR_ARG);
  /* a success clears the message */
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, OOC_PARAM_TILE, 128), OOC_OK);
  CU_ASSERT_STRING_EQUAL(ooc_opts_error(o), "");
  ooc_opts_destroy(o);
}

/* The getters read the struct's fields; names agree with the JSON keys. */
static void test_report_getters(void) {
  ooc_report_t *r = ooc_report_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT(isnan(r->logdet));
  CU_ASSERT_EQUAL(ooc_report_field_count(), 59);
  snprintf(r->method, sizeof r->method, "chol");
  snprintf(r->warnings, sizeof r->warnings, "a; b");
  r->n = 123456789012LL;
  r->iterations = 17;
  r->check_products = 4;
  r->residual = 0.125;
  r->logdet = -3.5;
  int64_t iv;
  double dv;
  CU_ASSERT_STRING_EQUAL(ooc_report_get_str(r, OOC_R_METHOD), "chol");
  CU_ASSERT_STRING_EQUAL(ooc_report_get_str(r, OOC_R_WARNINGS), "a; b");
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_N, &iv), OOC_OK);
  CU_ASSERT_EQUAL(iv, 123456789012LL);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_ITERATIONS, &iv), OOC_OK);
  CU_ASSERT_EQUAL(iv, 17);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_CHECK_PRODUCTS, &iv), OOC_OK);
  CU_ASSERT_EQUAL(iv, 4);
  CU_ASSERT_EQUAL(ooc_report_get_double(r, OOC_R_RESIDUAL, &dv), OOC_OK);
  CU_ASSERT_EQUAL(dv, 0.125);
  CU_ASSERT_EQUAL(ooc_report_get_double(r, OOC_R_LOGDET, &dv), OOC_OK);
  CU_ASSERT_EQUAL(dv, -3.5);
  /* the first device's memory peak and budget (issue 18) */
  r->ndevices = 2;
  r->device_peak[0] = 3000000000LL;
  r->device_budget[0] = 4000000000LL;
  r->device_peak[1] = 7;
  CU_ASSERT_EQUAL(ooc_report_field_lookup("device_peak"), OOC_R_DEVICE_PEAK);
  CU_ASSERT_EQUAL(ooc_report_field_type(OOC_R_DEVICE_BUDGET), OOC_PTYPE_INT);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_DEVICE_PEAK, &iv), OOC_OK);
  CU_ASSERT_EQUAL(iv, 3000000000LL);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_DEVICE_BUDGET, &iv), OOC_OK);
  CU_ASSERT_EQUAL(iv, 4000000000LL);
  r->ndevices = 0;
  CU_ASSERT_EQUAL(ooc_report_get_double(r, OOC_R_N, &dv), OOC_OK); /* int read as double */
  CU_ASSERT_EQUAL(dv, 123456789012.0);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_RESIDUAL, &iv), OOC_ERR_ARG); /* wrong type */
  CU_ASSERT_PTR_NULL(ooc_report_get_str(r, OOC_R_N));
  CU_ASSERT_EQUAL(ooc_report_get_int(r, (ooc_rfield_t)999, &iv), OOC_ERR_ARG);
  CU_ASSERT_PTR_NULL(ooc_report_get_str(r, (ooc_rfield_t)0));
  /* every field's name is a JSON key ("name": ...) of the report's JSON form */
  size_t need = ooc_report_json_str(r, OOC_OK, "", NULL, 0);
  CU_ASSERT(need > 100);
  char *js = malloc(need + 1);
  CU_ASSERT_EQUAL(ooc_report_json_str(r, OOC_OK, "", js, need + 1), need);
  CU_ASSERT_EQUAL(strlen(js), need);
  for (int k = 1; k <= ooc_report_field_count(); k++) {
    const char *nm = ooc_report_field_name((ooc_rfield_t)k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nm);
    CU_ASSERT_EQUAL(ooc_report_field_lookup(nm), k);
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", nm);
    if (k == OOC_R_GEMM_K) continue; /* in the JSON of a product only */
    if (!strstr(js, key)) fprintf(stderr, "JSON lacks %s\n", key);
    CU_ASSERT_PTR_NOT_NULL(strstr(js, key));
  }
  char small[8];
  CU_ASSERT_EQUAL(ooc_report_json_str(r, OOC_OK, "", small, sizeof small), need); /* truncated */
  CU_ASSERT_EQUAL(strlen(small), 7);
  free(js);
  ooc_report_destroy(r);
  ooc_report_destroy(NULL);
}

/* A call through the string API with the opaque set's struct: the options reach the run. */
static void test_opts_reach_call(void) {
  ooc_ctx_t *ctx = tu_ctx();
  int64_t n = 40;
  double *A = tu_gen_matrix(0, n, 0, 0, 7);
  tu_write_matrix(tu_path("abi_a.h5"), "A", n, n, A, 2);
  ooc_options_t *o;
  CU_ASSERT_EQUAL_FATAL(ooc_opts_create(&o), OOC_OK);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_METHOD, "gj"), OOC_OK);
  /* 20 covers n = 40 evenly, so the planner runs it as given (plan.h: plan_tile) */
  CU_ASSERT_EQUAL(ooc_opts_set_int(o, OOC_PARAM_TILE, 20), OOC_OK);
  CU_ASSERT_EQUAL(ooc_opts_set_str(o, OOC_PARAM_DEVICE, "cpu"), OOC_OK);
  ooc_report_t *r = ooc_report_create();
  char in[512], out[512];
  snprintf(in, sizeof in, "%s:/A", tu_path("abi_a.h5"));
  snprintf(out, sizeof out, "%s:/X", tu_path("abi_x.h5"));
  CU_ASSERT_EQUAL(ooc_invert(ctx, in, out, ooc_opts_struct(o), r), OOC_OK);
  int64_t tile;
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_TILE, &tile), OOC_OK);
  CU_ASSERT_EQUAL(tile, 20);
  CU_ASSERT_STRING_EQUAL(ooc_report_get_str(r, OOC_R_METHOD), "gj");
  /* gj ran on a host executor with a planned workspace: its peak within that budget */
  int64_t dpeak = -1, dbudget = -1;
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_DEVICE_PEAK, &dpeak), OOC_OK);
  CU_ASSERT_EQUAL(ooc_report_get_int(r, OOC_R_DEVICE_BUDGET, &dbudget), OOC_OK);
  CU_ASSERT(dpeak > 0 && dbudget > 0 && dpeak <= dbudget);
  CU_ASSERT_EQUAL(r->ndevices, 1);
  size_t need = ooc_report_json_str(r, OOC_OK, "", NULL, 0);
  char *js = malloc(need + 1), want[96];
  CU_ASSERT_PTR_NOT_NULL_FATAL(js);
  ooc_report_json_str(r, OOC_OK, "", js, need + 1);
  snprintf(want, sizeof want, "\"peak\": %lld, \"budget\": %lld}", (long long)dpeak,
           (long long)dbudget);
  CU_ASSERT_PTR_NOT_NULL(strstr(js, want));
  free(js);
  ooc_report_destroy(r);
  ooc_opts_destroy(o);
  free(A);
  tu_ctx_done(ctx);
}

int main(void) {
  static const tu_test_t tests[] = {{"abi version", test_version},
                                    {"parameter table", test_param_table},
                                    {"every parameter settable", test_every_param_settable},
                                    {"bounds, types, unknown parameters", test_bounds},
                                    {"report getters", test_report_getters},
                                    {"options reach a call", test_opts_reach_call},
                                    {NULL, NULL}};
  return tu_run("abi", tests);
}
