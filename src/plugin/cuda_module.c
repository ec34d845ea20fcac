/*
 * cuda_module.c: the module side of the CUDA plugin (src/exec/plugin.h states the contract).
 * Compiled only into liboocsolve_cuda.so, beside every CUDA source: it exports the one entry
 * symbol (the module is built with hidden visibility and a version script that keeps only it),
 * and defines the core functions the CUDA sources call as forwarders to the core's imports
 * table, so the module holds no second copy of the core (allocator, errors, fault seam: their
 * state is in the context either way) and links no core library.
 */
#include <stdarg.h>
#include <stdio.h>

#include "exec/plugin.h"
#include "kernels/cuda/ocu.h"

#include <cuda_runtime_api.h>

#ifndef OOC_CUDA_VERSION
#define OOC_CUDA_VERSION "unknown"
#endif

static const ooc_cuda_imports_t *imp; /* set by the entry before the core calls anything */

#define OOC_FWD(ret, name, params, args)                                                           \
  ret name params { return imp->name args; }
#define OOC_FWD_VOID(name, params, args)                                                           \
  void name params { imp->name args; }
OOC_CUDA_IMPORTS(OOC_FWD)
OOC_CUDA_IMPORTS_VOID(OOC_FWD_VOID)
#undef OOC_FWD
#undef OOC_FWD_VOID

ooc_status_t ooc_fail_at(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                         const char *fmt, ...) {
  char msg[sizeof ctx->err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return imp->fail_msg(ctx, st, file, line, msg);
}

ooc_status_t ooc_fail_replace(ooc_ctx_t *ctx, ooc_status_t st, const char *fmt, ...) {
  char msg[sizeof ctx->err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return imp->replace_msg(ctx, st, msg);
}

/* Devices the process sees (plugin.h). */
static int device_count(void) {
  int c = 0;
  if (cudaGetDeviceCount(&c) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return c;
}

static const ooc_cuda_api_t table = {
    .abi = OOC_CUDA_ABI,
    .size = sizeof(ooc_cuda_api_t),
    .version = OOC_VERSION_STRING,
    .toolkit = OOC_CUDA_VERSION,
    .probe = ocu_probe,
    .ex_create = ex_cuda_create,
    .device_count = device_count,
};

__attribute__((visibility("default"))) const ooc_cuda_api_t *
ooc_cuda_plugin_v1(const ooc_cuda_imports_t *imports) {
  static ooc_cuda_api_t t; /* the layout is a function call: filled here, not in the initializer */
  imp = imports;
  t = table;
  t.layout = ooc_cuda_layout();
  return &t;
}
