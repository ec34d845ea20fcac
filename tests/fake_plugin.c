/*
 * fake_plugin.c: stand-ins for liboocsolve_cuda.so, so test_plugin can drive every path of the
 * loader (src/exec/plugin.h) on any build, with or without CUDA. Built as two modules:
 * - libooc_fake_cuda.so: FAKE_PLUGIN_MODE (environment, read by the entry) picks what it returns:
 *   "abi" (ABI 99), "version" (built for 0.0.0-fake), "layout" (other headers), "null" (no
 *   table), anything else a valid table whose probe says "fake plugin: no device" (a node with
 *   the module and the CUDA libraries but no GPU). Nothing but probe is ever called.
 * - libooc_fake_cuda_dep.so: the same, but it needs libooc_fakedep.so, which is built without
 *   being on any search path: dlopen fails naming it, as the real module fails on a node
 *   without libcudart.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/plugin.h"

#ifdef FAKE_NEEDS_DEP
int ooc_fakedep_answer(void);
#endif

static int fake_probe(char *desc, size_t cap) {
#ifdef FAKE_NEEDS_DEP
  if (ooc_fakedep_answer() != 42) return 0;
#endif
  if (cap) {
    strncpy(desc, "fake plugin: no device", cap - 1);
    desc[cap - 1] = 0;
  }
  return 0;
}

__attribute__((visibility("default"))) const ooc_cuda_api_t *
ooc_cuda_plugin_v1(const ooc_cuda_imports_t *imports) {
  static ooc_cuda_api_t t;
  (void)imports;
  const char *mode = getenv("FAKE_PLUGIN_MODE");
  mode = mode ? mode : "";
  if (!strcmp(mode, "null")) return NULL;
  memset(&t, 0, sizeof t);
  t.abi = OOC_CUDA_ABI;
  t.size = sizeof t;
  t.layout = ooc_cuda_layout();
  t.version = OOC_VERSION_STRING;
  t.toolkit = "fake";
  t.probe = fake_probe;
  if (!strcmp(mode, "abi")) t.abi = 99;
  if (!strcmp(mode, "version")) t.version = "0.0.0-fake";
  if (!strcmp(mode, "layout")) t.layout ^= 1;
  return &t;
}
