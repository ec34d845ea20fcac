/* plugin.c: the CUDA plugin's loader (plugin.h): finds liboocsolve_cuda.so, checks its table,
 * hands it the core's imports. dlopen/dladdr need _GNU_SOURCE for Dl_info. */
#define _GNU_SOURCE
#include "exec/plugin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/parloop.h"
#include "solvers/gemm_model.h"

#ifndef OOC_INSTALL_LIBDIR
#define OOC_INSTALL_LIBDIR ""
#endif
#ifndef OOC_CUDA_PLUGIN_RELDIR
#define OOC_CUDA_PLUGIN_RELDIR "../lib"
#endif

static ooc_status_t fail_msg(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                             const char *msg) {
  return ooc_fail_at(ctx, st, file, line, "%s", msg);
}

static ooc_status_t replace_msg(ooc_ctx_t *ctx, ooc_status_t st, const char *msg) {
  return ooc_fail_replace(ctx, st, "%s", msg);
}

static const ooc_cuda_imports_t imports = {
#define OOC_IMP_INIT(ret, name, params, args) .name = name,
#define OOC_IMP_VINIT(name, params, args) .name = name,
    OOC_CUDA_IMPORTS(OOC_IMP_INIT) OOC_CUDA_IMPORTS_VOID(OOC_IMP_VINIT)
#undef OOC_IMP_INIT
#undef OOC_IMP_VINIT
        .fail_msg = fail_msg,
        .replace_msg = replace_msg,
};

/* The one answer of this process (plugin.h: loaded once, never unloaded). */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const ooc_cuda_api_t *api;
static char where[4096]; /* the module's path once loaded */
static char reason[4096]; /* else every place tried and why each failed */
static int found;         /* a file was at one of those places (a broken install, not none) */

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  size_t len = strlen(reason);
  if (len + 3 >= sizeof reason) return;
  if (len) {
    memcpy(reason + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason + len, sizeof reason - len, fmt, ap);
  va_end(ap);
}

/* 1 when path holds a usable module (then api and where are set); else the reason is noted. */
static int try_path(const char *path) {
  if (access(path, F_OK) != 0) {
    note("%s: not found", path);
    return 0;
  }
  found = 1;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) { /* dlerror names the file, or the CUDA library the module could not find */
    const char *e = dlerror();
    note("%s", e ? e : path);
    return 0;
  }
  ooc_cuda_entry_fn entry;
  void *sym = dlsym(h, OOC_CUDA_ENTRY);
  memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer (POSIX) */
  if (!entry) {
    note("%s: not an oocsolve CUDA plugin of ABI 1 (no symbol %s)", path, OOC_CUDA_ENTRY);
    dlclose(h);
    return 0;
  }
  const ooc_cuda_api_t *t = entry(&imports);
  char msg[256] = "";
  if (!t)
    snprintf(msg, sizeof msg, "its entry returned no table");
  else if (t->abi != OOC_CUDA_ABI || t->size < sizeof(ooc_cuda_api_t))
    snprintf(msg, sizeof msg, "plugin ABI %u (table %u bytes), this library needs ABI %u (%zu)",
             t->abi, t->size, OOC_CUDA_ABI, sizeof(ooc_cuda_api_t));
  else if (!t->version || strcmp(t->version, OOC_VERSION_STRING))
    snprintf(msg, sizeof msg, "built for oocsolve %s, this library is %s",
             t->version ? t->version : "?", OOC_VERSION_STRING);
  else if (t->layout != ooc_cuda_layout())
    snprintf(msg, sizeof msg, "built from other headers than this library (layout %016llx, "
             "expected %016llx): rebuild both from one tree",
             (unsigned long long)t->layout, (unsigned long long)ooc_cuda_layout());
  if (msg[0]) {
    note("%s: %s", path, msg);
    /* not dlclose'd: the module keeps our imports pointer and may have started threads */
    return 0;
  }
  api = t;
  snprintf(where, sizeof where, "%s", path);
  return 1;
}

int ooc_module_dirs(char dirs[][OOC_MODULE_PATH], int max) {
  int k = 0;
  /* The object that holds this function: liboocsolve.so, or the program linking the static
   * library. */
  Dl_info info;
  char dir[OOC_MODULE_PATH] = "";
  if (dladdr((void *)&ooc_module_dirs, &info) && info.dli_fname && info.dli_fname[0]) {
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
  }
  if (dir[0] && k < max) snprintf(dirs[k++], OOC_MODULE_PATH, "%s", dir);
  if (dir[0] && k < max &&
      snprintf(dirs[k], OOC_MODULE_PATH, "%s/%s", dir, OOC_CUDA_PLUGIN_RELDIR) < OOC_MODULE_PATH)
    k++;
  if (OOC_INSTALL_LIBDIR[0] && k < max)
    snprintf(dirs[k++], OOC_MODULE_PATH, "%s", OOC_INSTALL_LIBDIR);
  return k;
}

static void load_once(void) {
  const char *env = getenv("OOC_CUDA_PLUGIN");
  if (env && env[0]) {
    if (!try_path(env)) note("OOC_CUDA_PLUGIN is set: no other place was tried");
    return;
  }
  char dirs[OOC_MODULE_DIRS][OOC_MODULE_PATH], path[OOC_MODULE_PATH + 64];
  int nd = ooc_module_dirs(dirs, OOC_MODULE_DIRS);
  for (int i = 0; i < nd; i++) {
    if (snprintf(path, sizeof path, "%s/%s", dirs[i], OOC_CUDA_MODULE) >= (int)sizeof path) {
      note("%.200s...: path too long", dirs[i]);
      continue;
    }
    if (try_path(path)) return;
  }
  if (!reason[0]) note("no place to look for %s", OOC_CUDA_MODULE);
}

const ooc_cuda_api_t *ooc_cuda_load(char *why, size_t cap, int *was_found) {
  pthread_once(&once, load_once);
  if (was_found) *was_found = found;
  if (!api && why && cap) snprintf(why, cap, "no CUDA plugin (%s)", reason);
  return api;
}

const char *ooc_cuda_describe(char *buf, size_t cap) {
  char why[sizeof reason + 32];
  const ooc_cuda_api_t *t = ooc_cuda_load(why, sizeof why, NULL);
  if (t) snprintf(buf, cap, "CUDA plugin loaded from %s (toolkit %s)", where, t->toolkit);
  else snprintf(buf, cap, "CUDA plugin not loaded: %s", why);
  return buf;
}
