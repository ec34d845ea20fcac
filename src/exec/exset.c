/* exset.c: the executors of one call, one per device (exset.h). */
#include "exec/exset.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_devices_parse(const char *list, int *dev, int *n, char *err, size_t cap) {
  *n = 0;
  if (!list) return 0;
  const char *p = list;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) return 0;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    char *end;
    long v = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (v < 0 || v >= 1024) {
      snprintf(err, cap, "--devices '%s': expected device numbers 0 to 1023 separated by commas "
               "at '%s'", list, p);
      return -1;
    }
    for (int i = 0; i < *n; i++)
      if (dev[i] == (int)v) {
        snprintf(err, cap, "--devices '%s': device %ld is listed twice", list, v);
        return -1;
      }
    if (*n == EX_MAX_DEVICES) {
      snprintf(err, cap, "--devices '%s': more than %d devices", list, EX_MAX_DEVICES);
      return -1;
    }
    dev[(*n)++] = (int)v;
    p = end;
    while (isspace((unsigned char)*p)) p++;
    if (!*p) return 0;
    if (*p != ',') {
      snprintf(err, cap, "--devices '%s': expected ',' at '%s'", list, p);
      return -1;
    }
    p++;
  }
}

void ex_set_init(ex_set_t *s) { memset(s, 0, sizeof *s); }

ooc_status_t ex_set_add(ooc_ctx_t *ctx, ex_set_t *s, int dev, ooc_exec_t *ex) {
  if (s->n == EX_MAX_DEVICES) {
    ex_destroy(ex);
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "executor set: more than %d devices", EX_MAX_DEVICES);
  }
  s->dev[s->n] = dev;
  s->ex[s->n++] = ex;
  return OOC_OK;
}

ooc_status_t ex_set_host(ooc_ctx_t *ctx, const ooc_ops_t *ops, int n, const int *dev, int nqueues,
                         int64_t budget, int strict, int delay_us, ex_set_t *s) {
  ex_set_init(s);
  for (int d = 0; d < n; d++) {
    ooc_exec_t *ex = NULL;
    ooc_status_t st = strict ? ex_host_create_strict(ctx, ops, nqueues, budget, delay_us, &ex)
                             : ex_host_create(ctx, ops, nqueues, budget, &ex);
    if (st == OOC_OK) st = ex_set_add(ctx, s, dev ? dev[d] : d, ex);
    if (st != OOC_OK) {
      ex_set_destroy(s);
      return st;
    }
  }
  return OOC_OK;
}

int64_t ex_set_host_bytes(int n, int nqueues) { return (int64_t)n * ex_host_bytes(nqueues); }

void ex_set_destroy(ex_set_t *s) {
  for (int d = s->n - 1; d >= 0; d--) ex_destroy(s->ex[d]);
  ex_set_init(s);
}

int ex_pin_cb(void *ex, void *p, size_t bytes) { return ex_host_register(ex, p, bytes); }
void ex_unpin_cb(void *ex, void *p) { ex_host_unregister(ex, p); }
