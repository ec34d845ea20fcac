/*
 * bench_gpu_load.c: oocbench's GPU calls (bench.h) without linking CUDA: the library's plugin
 * says whether a GPU is usable, and bench_gpu.c's module (liboocbench_cuda.so) runs the peers.
 * Loaded once, on the first GPU call; without the plugin, a GPU or the module, every GPU row is
 * skipped with the reason (never an error: a CPU-only node simply has no GPU peers).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "bench.h"
#include "exec/plugin.h"

#define BENCH_MODULE "liboocbench_cuda.so"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const oocbench_cuda_t *mod;
static char probe_desc[256];
static char why[8192]; /* when mod is NULL */

static void load_once(void) {
  char r[4096];
  const ooc_cuda_api_t *cu = ooc_cuda_load(r, sizeof r, NULL);
  if (!cu) {
    snprintf(why, sizeof why, "%s", r);
    return;
  }
  if (!cu->probe(probe_desc, sizeof probe_desc)) {
    snprintf(why, sizeof why, "%s", probe_desc);
    return;
  }
  char dirs[OOC_MODULE_DIRS][OOC_MODULE_PATH], path[OOC_MODULE_PATH + 64];
  int nd = ooc_module_dirs(dirs, OOC_MODULE_DIRS);
  size_t len = (size_t)snprintf(why, sizeof why, "no GPU peers (%s", BENCH_MODULE);
  for (int i = 0; i < nd && len < sizeof why; i++) {
    if (snprintf(path, sizeof path, "%s/%s", dirs[i], BENCH_MODULE) >= (int)sizeof path) continue;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char *e = dlerror();
      len += (size_t)snprintf(why + len, sizeof why - len, "; %s", e ? e : path);
      continue;
    }
    const oocbench_cuda_t *(*entry)(void);
    void *sym = dlsym(h, "oocbench_cuda_v1");
    memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer (POSIX) */
    const oocbench_cuda_t *t = entry ? entry() : NULL;
    if (t && t->abi == OOCBENCH_CUDA_ABI && t->row_size == sizeof(bench_row_t) &&
        t->machine_size == sizeof(bench_machine_t)) {
      mod = t;
      return;
    }
    len += (size_t)snprintf(why + len, sizeof why - len, "; %s: not oocbench's module of this "
                            "build", path);
  }
  if (len < sizeof why) snprintf(why + len, sizeof why - len, ")");
}

static const oocbench_cuda_t *gpu(void) {
  pthread_once(&once, load_once);
  return mod;
}

int bench_gpu_describe(bench_machine_t *m) {
  if (!gpu()) {
    m->gpu_usable = 0;
    ooc_fmt(m->gpu_name, sizeof m->gpu_name, "none: %s", why); /* truncated: fine */
    return 0;
  }
  return mod->describe(m, probe_desc);
}

int bench_cusolver_inverse(ooc_ctx_t *ctx, bench_row_t *row, const double *A, int f32, int reps,
                           int check_full) {
  if (!gpu()) {
    bench_row_skip(row, "no usable GPU: %.400s", why);
    return 0;
  }
  return mod->cusolver_inverse(ctx, row, A, f32, reps, check_full);
}

int bench_gpu_gemm(ooc_ctx_t *ctx, bench_row_t *row, int f32, int reps) {
  if (!gpu()) {
    bench_row_skip(row, "no usable GPU: %.400s", why);
    return 0;
  }
  return mod->gemm(ctx, row, f32, reps);
}

bench_devmon_t *bench_devmon_start(void) { return gpu() ? mod->devmon_start() : NULL; }

int64_t bench_devmon_stop(bench_devmon_t *m) { return m && mod ? mod->devmon_stop(m) : -1; }
