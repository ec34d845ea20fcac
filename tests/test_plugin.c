/*
 * test_plugin.c: the CUDA plugin's loader (src/exec/plugin.h) and what the CLI does with its
 * answer, on any build (the fake modules of fake_plugin.c stand in where no GPU or no CUDA
 * build is at hand):
 * - in process: the module built beside this test (OOC_TEST_PLUGIN_BUILT) loads with a matching
 *   table (ABI, version, layout, every function the core calls); without one, NULL and a reason
 *   naming where it looked;
 * - per case, a fresh `oocsolve` (the loader answers once per process) with OOC_CUDA_PLUGIN set:
 *   a missing file, a library that is no plugin, a plugin of another ABI / version / layout, no
 *   table, a module whose dependency is missing (a node without libcudart), and a valid module
 *   without a GPU. `--device cuda` must fail with OOC_ERR_NODEVICE (exit 7) and a message naming
 *   the file and why; `--device auto` must run on the CPU, with the notice "GPU not used: why"
 *   exactly when a module was found but is unusable; `--version` says whether it loaded.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h" /* tools/: oocbench's GPU module table */
#include "exec/plugin.h"
#include "testutil.h"

#include <dlfcn.h>

#ifndef OOC_TOOLS_DIR
#define OOC_TOOLS_DIR "."
#endif

static char matrix[4096];

/* Runs OOC_TOOLS_DIR/tool with OOC_CUDA_PLUGIN=plugin (NULL: unset) and FAKE_PLUGIN_MODE=mode;
 * stdout and stderr into *out (malloc'd). Returns the exit code, -1 if it could not run. */
static int run_tool(const char *plugin, const char *mode, char **out, const char *tool, ...) {
  char exe[4096], log[4096];
  static int seq;
  snprintf(exe, sizeof exe, "%s/%s", OOC_TOOLS_DIR, tool);
  snprintf(log, sizeof log, "%s/run%d.log", tu_tmpdir(), seq++);
  const char *argv[16];
  int argc = 0;
  argv[argc++] = exe;
  va_list ap;
  va_start(ap, tool);
  for (const char *a; (a = va_arg(ap, const char *)) && argc < 15;) argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    if (chdir(tu_tmpdir()) != 0) _exit(126);
    if (plugin) setenv("OOC_CUDA_PLUGIN", plugin, 1);
    else unsetenv("OOC_CUDA_PLUGIN");
    if (mode) setenv("FAKE_PLUGIN_MODE", mode, 1);
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  FILE *f = fopen(log, "rb");
  size_t cap = 1 << 16, len = 0;
  *out = calloc(1, cap + 1);
  if (f && *out) {
    len = fread(*out, 1, cap, f);
    (*out)[len] = 0;
  }
  if (f) fclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void contains(const char *text, const char *what) {
  if (!strstr(text, what)) fprintf(stderr, "\n  expected \"%s\" in:\n%s\n", what, text);
  CU_ASSERT(strstr(text, what) != NULL);
}

/* --device cuda fails with exit 7 naming each needle; --device auto runs on the CPU, with the
 * "GPU not used" notice iff notice; --version says the plugin did not load. */
static void expect_refused(const char *plugin, const char *mode, const char *const needles[],
                           int notice) {
  char *out = NULL;
  int rc = run_tool(plugin, mode, &out, "oocsolve", "--device", "cuda", "--force", matrix, NULL);
  CU_ASSERT_EQUAL(rc, 7);
  contains(out, "--device cuda");
  for (int i = 0; needles[i]; i++) contains(out, needles[i]);
  free(out);
  rc = run_tool(plugin, mode, &out, "oocsolve", "--device", "auto", "--force", "--json", matrix,
                NULL);
  CU_ASSERT_EQUAL(rc, 0);
  contains(out, "\"backend\": \"cpu\"");
  if (notice) {
    contains(out, "GPU not used: no CUDA plugin");
    for (int i = 0; needles[i]; i++) contains(out, needles[i]);
  } else {
    CU_ASSERT(strstr(out, "GPU not used") == NULL);
  }
  free(out);
  rc = run_tool(plugin, mode, &out, "oocsolve", "--version", NULL);
  CU_ASSERT_EQUAL(rc, 0);
  contains(out, "CUDA plugin not loaded");
  free(out);
}

static const char *fake(const char *name) {
  static char buf[4][4096];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, 4096, "%s/%s", OOC_TOOLS_DIR, name);
  return b;
}

static void t_setup(void) {
  char *out = NULL;
  snprintf(matrix, sizeof matrix, "%s/r.h5", tu_tmpdir());
  int rc = run_tool(NULL, NULL, &out, "oocgen", "random", "--n", "64", matrix, NULL);
  CU_ASSERT_FATAL(rc == 0);
  free(out);
}

/* In process: the module beside this program (the build tree), or none. */
static void t_load_in_process(void) {
  char why[8192];
  int found = -1;
  unsetenv("OOC_CUDA_PLUGIN");
  const ooc_cuda_api_t *t = ooc_cuda_load(why, sizeof why, &found);
#ifdef OOC_TEST_PLUGIN_BUILT
  if (!t) fprintf(stderr, "\n  %s\n", why);
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_EQUAL(found, 1);
  CU_ASSERT_EQUAL(t->abi, OOC_CUDA_ABI);
  CU_ASSERT_STRING_EQUAL(t->version, OOC_VERSION_STRING);
  CU_ASSERT(t->layout == ooc_cuda_layout());
  /* every function the core calls is there */
  CU_ASSERT(t->probe != NULL);
  CU_ASSERT(t->ex_create != NULL && t->device_count != NULL);
  char desc[256] = "";
  int usable = t->probe(desc, sizeof desc); /* 0 here (no driver), 1 on the GPU host */
  CU_ASSERT(desc[0] != 0);
  printf("\n  probe: %d (%s)\n", usable, desc);
  CU_ASSERT(ooc_cuda() == t); /* the same answer once loaded */
  char line[8192];
  contains(ooc_cuda_describe(line, sizeof line), "CUDA plugin loaded from ");
  contains(line, OOC_CUDA_MODULE);
#else
  CU_ASSERT(t == NULL);
  contains(why, OOC_CUDA_MODULE ": not found");
#endif
}

static void t_missing_file(void) {
  const char *nf[] = {"/nonexistent/liboocsolve_cuda.so: not found",
                      "OOC_CUDA_PLUGIN is set", NULL};
  expect_refused("/nonexistent/liboocsolve_cuda.so", NULL, nf, 0); /* nothing installed: quiet */
}

static void t_not_a_plugin(void) {
  const char *nf[] = {"liboocsolve.so: not an oocsolve CUDA plugin of ABI 1", NULL};
  expect_refused(fake("liboocsolve.so"), NULL, nf, 1);
}

static void t_wrong_abi(void) {
  const char *nf[] = {"libooc_fake_cuda.so: plugin ABI 99", NULL};
  expect_refused(fake("libooc_fake_cuda.so"), "abi", nf, 1);
}

static void t_wrong_version(void) {
  const char *nf[] = {"built for oocsolve 0.0.0-fake, this library is " OOC_VERSION_STRING, NULL};
  expect_refused(fake("libooc_fake_cuda.so"), "version", nf, 1);
}

static void t_wrong_layout(void) {
  const char *nf[] = {"built from other headers than this library", NULL};
  expect_refused(fake("libooc_fake_cuda.so"), "layout", nf, 1);
}

static void t_no_table(void) {
  const char *nf[] = {"its entry returned no table", NULL};
  expect_refused(fake("libooc_fake_cuda.so"), "null", nf, 1);
}

/* A node with the module but not the CUDA libraries: dlopen's message names the missing one. */
static void t_missing_dependency(void) {
  const char *nf[] = {"libooc_fakedep.so", "cannot open shared object file", NULL};
  expect_refused(fake("libooc_fake_cuda_dep.so"), NULL, nf, 1);
}

/* A valid module on a node without a GPU: cuda fails naming the probe's reason, auto is quiet
 * (as on any CPU node), --version says it loaded. */
static void t_loaded_no_gpu(void) {
  char *out = NULL;
  const char *p = fake("libooc_fake_cuda.so");
  int rc = run_tool(p, "ok", &out, "oocsolve", "--device", "cuda", "--force", matrix, NULL);
  CU_ASSERT_EQUAL(rc, 7);
  contains(out, "--device cuda: no usable GPU (fake plugin: no device)");
  free(out);
  rc = run_tool(p, "ok", &out, "oocsolve", "--device", "auto", "--force", "--json", matrix, NULL);
  CU_ASSERT_EQUAL(rc, 0);
  contains(out, "\"backend\": \"cpu\"");
  CU_ASSERT(strstr(out, "GPU not used") == NULL);
  free(out);
  rc = run_tool(p, "ok", &out, "oocsolve", "--version", NULL);
  CU_ASSERT_EQUAL(rc, 0);
  contains(out, "CUDA plugin loaded from ");
  contains(out, "libooc_fake_cuda.so (toolkit fake)");
  free(out);
  /* --device cpu never loads it: even a broken module gives no notice */
  rc = run_tool(fake("libooc_fake_cuda_dep.so"), NULL, &out, "oocsolve", "--device", "cpu",
                "--force", "--json", matrix, NULL);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT(strstr(out, "GPU not used") == NULL);
  free(out);
}

/* The real module of this build, found beside the program (no OOC_CUDA_PLUGIN): on this machine
 * (no driver) --device cuda fails cleanly; on the GPU host it runs. */
static void t_real_module(void) {
#ifdef OOC_TEST_PLUGIN_BUILT
  char *out = NULL;
  int rc = run_tool(NULL, NULL, &out, "oocsolve", "--version", NULL);
  CU_ASSERT_EQUAL(rc, 0);
  contains(out, "CUDA plugin loaded from ");
  free(out);
  char desc[256] = "";
  const ooc_cuda_api_t *t = ooc_cuda_load(NULL, 0, NULL);
  int gpu = t && t->probe(desc, sizeof desc);
  rc = run_tool(NULL, NULL, &out, "oocsolve", "--device", "cuda", "--force", "--json", matrix,
                NULL);
  if (gpu) {
    CU_ASSERT_EQUAL(rc, 0);
    contains(out, "\"backend\": \"cuda\"");
  } else {
    CU_ASSERT_EQUAL(rc, 7);
    contains(out, "--device cuda: no usable GPU (");
  }
  free(out);
#endif
}

/* oocbench's GPU peers module (tools/bench_gpu.c) loads without a GPU and its table matches the
 * oocbench of this build (bench_gpu_load.c checks the same before using it). */
static void t_bench_module(void) {
#ifdef OOC_TEST_PLUGIN_BUILT
  void *h = dlopen(fake("liboocbench_cuda.so"), RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "\n  %s\n", dlerror());
  CU_ASSERT_FATAL(h != NULL);
  const oocbench_cuda_t *(*entry)(void);
  void *sym = dlsym(h, "oocbench_cuda_v1");
  memcpy(&entry, &sym, sizeof entry);
  CU_ASSERT_FATAL(entry != NULL);
  const oocbench_cuda_t *t = entry();
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_EQUAL(t->abi, OOCBENCH_CUDA_ABI);
  CU_ASSERT_EQUAL(t->row_size, sizeof(bench_row_t));
  CU_ASSERT_EQUAL(t->machine_size, sizeof(bench_machine_t));
  CU_ASSERT(t->describe && t->cusolver_inverse && t->gemm && t->devmon_start && t->devmon_stop);
  CU_ASSERT(dlsym(h, "bench_gpu_describe") == NULL); /* nothing else exported */
#endif
}

int main(void) {
  static const tu_test_t tests[] = {{"setup: a matrix", t_setup},
                                    {"the loader in process", t_load_in_process},
                                    {"OOC_CUDA_PLUGIN names a missing file", t_missing_file},
                                    {"a library that is no plugin", t_not_a_plugin},
                                    {"a plugin of another ABI", t_wrong_abi},
                                    {"a plugin of another version", t_wrong_version},
                                    {"a plugin of another layout", t_wrong_layout},
                                    {"a plugin whose entry returns nothing", t_no_table},
                                    {"a plugin whose dependency is missing", t_missing_dependency},
                                    {"a valid plugin without a GPU", t_loaded_no_gpu},
                                    {"this build's module", t_real_module},
                                    {"oocbench's GPU module", t_bench_module},
                                    {NULL, NULL}};
  return tu_run("plugin", tests);
}
