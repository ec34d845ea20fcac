/*
 * plugin.h: the CUDA backend as a run-time plugin (issue 25: one build runs on CPU-only and GPU
 * nodes). Every CUDA source (src/kernels/cuda, src/exec/cuda) is built into one shared module,
 * liboocsolve_cuda.so, which links cudart, cuBLAS and cuSOLVER; the core library links no CUDA
 * library and loads the module with dlopen the first time a call asks for a GPU (--device cuda or
 * auto), never for --device cpu/ref. A node without the module, without the CUDA libraries or
 * without a GPU runs on the CPU under auto (with the notice the job gives) and fails cleanly under
 * --device cuda (OOC_ERR_NODEVICE, exit 7, naming what is missing and where it looked).
 *
 * Contract between the core and the module
 * - The module exports ONE symbol, OOC_CUDA_ENTRY ("ooc_cuda_plugin_v1"; the suffix is the ABI
 *   major, so a module of another ABI simply lacks it): a function that takes the core's imports
 *   table (below) and returns the module's table of everything the core calls (ooc_cuda_api_t).
 *   The module keeps the imports pointer for the life of the process (the loader never unloads).
 * - The core uses the table only if abi == OOC_CUDA_ABI, size >= sizeof(ooc_cuda_api_t), layout
 *   == ooc_cuda_layout() (a fingerprint of the shared structs' sizes and of the context fields
 *   the CUDA runtime touches: a module built from other headers is refused, never half-used) and
 *   version == OOC_VERSION_STRING. A refusal is a reason like a missing file.
 * - Imports: the module calls the core only through ooc_cuda_imports_t (OOC_CUDA_IMPORTS: the
 *   allocator, error recording, the fault seam, timers and the parallel loop: so the process's
 *   one thread pool, base/parloop.h, and its threads are the core's, and the module holds none),
 *   through forwarding definitions of the same names in the module (src/plugin/
 *   cuda_module.c), so the CUDA sources are unchanged and are also linked as plain objects into
 *   the tests that call CUDA internals. The module is linked with -z defs: a core function a CUDA
 *   source starts to call is a link error naming it, fixed by one line in OOC_CUDA_IMPORTS (or
 *   OOC_CUDA_IMPORTS_VOID). All state stays in the context (base.h), so the module's calls and the
 *   core's see the same counters, budgets and armed faults.
 * - The exec.h executor's factory (ex_create, from src/exec/cuda) is one slot of the table: every
 *   method runs on it, driven by the core (gj_x.c, chol.c, lu.c, oocgemm.c, qr.c), and the
 *   methods' device plans ask an executor what only cuSOLVER or the device can answer (ex->budget,
 *   ex_getrf_ws, ex_getri_ws, ex_potrf_ws, ex_potri_ws): the module holds no plan.
 *
 * Loader (plugin.c)
 * - ooc_cuda_load(why, cap, found): the table, or NULL and the reason (every place tried, and why
 *   each failed: "not found", or the dlerror text, which names a missing libcudart/libcublas/
 *   libcusolver, or the check that refused it); *found (may be NULL) is 1 when a file was at
 *   one of the places (a broken installation rather than none: --device auto then says so).
 *   Loaded once per process (thread-safe); later calls return the same answer. Looked for, in
 *   order:
 *     1. $OOC_CUDA_PLUGIN, when set: that file only (an explicit choice is not second-guessed;
 *        setting it to a path that does not exist turns the GPU off);
 *     2. the directory of the object holding the core (dladdr of a core symbol: liboocsolve.so,
 *        or the program when it links the static library), then OOC_CUDA_PLUGIN_RELDIR from
 *        there (bin -> lib of the same prefix: a relocated installation works);
 *     3. the install libdir compiled in (CMAKE_INSTALL_FULL_LIBDIR).
 *   Finding the module does not mean a GPU is usable: that is api->probe.
 * - ooc_cuda(): ooc_cuda_load(NULL, 0, NULL), for code that runs once a GPU was picked.
 * - ooc_module_dirs(dirs, max): the directories of step 2 and 3, in order (for other modules
 *   that live beside the plugin: oocbench's GPU peers, tools/bench_gpu_load.c).
 * - ooc_cuda_describe(buf, cap): one line for --version ("CUDA plugin loaded from PATH (toolkit
 *   13.0.88)" or "CUDA plugin not loaded: why"); loads it if no call did yet.
 */
#ifndef OOC_EXEC_PLUGIN_H
#define OOC_EXEC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "exec/cuda/exec_cuda.h"
#include "exec/exec.h"

#define OOC_CUDA_ABI 1u
#define OOC_CUDA_ENTRY "ooc_cuda_plugin_v1"
#define OOC_CUDA_MODULE "liboocsolve_cuda.so"


/* What the core calls: the probe and the executor's factory (field names follow the functions
 * they stand for: ex_cuda_create -> ex_create). */
typedef struct ooc_cuda_api {
  uint32_t abi;        /* OOC_CUDA_ABI */
  uint32_t size;       /* sizeof(ooc_cuda_api_t) as the module was built */
  uint64_t layout;     /* ooc_cuda_layout() in the module */
  const char *version; /* OOC_VERSION_STRING the module was built from */
  const char *toolkit; /* the CUDA toolkit it was compiled with, e.g. "13.0.88" */
  /* is there a usable GPU (kernels/cuda/ocu.h: ocu_probe) */
  int (*probe)(char *desc, size_t cap);
  /* exec.h's CUDA executor (src/exec/cuda/exec_cuda.h) */
  ooc_status_t (*ex_create)(ooc_ctx_t *ctx, const ex_cuda_config_t *cfg, ooc_exec_t **out);
  /* CUDA devices visible to the process (cudaGetDeviceCount; 0 on failure): --devices' default
   * is all of them (issue 26, exset.h). NULL in a module that predates it: one. */
  int (*device_count)(void);
} ooc_cuda_api_t;

/* The core functions the module may call: X(return type, name, (parameters), (arguments)).
 * ooc_fail_at and ooc_fail_replace are variadic and go through fail_msg and replace_msg (below). */
#define OOC_CUDA_IMPORTS(X)                                                                        \
  X(void *, ooc_malloc, (ooc_ctx_t * ctx, size_t bytes), (ctx, bytes))                             \
  X(void *, ooc_calloc, (ooc_ctx_t * ctx, size_t count, size_t size), (ctx, count, size))          \
  X(int, ooc_fault_hit, (ooc_ctx_t * ctx, ooc_fault_kind_t kind), (ctx, kind))                     \
  X(const char *, ooc_fmt_bytes, (int64_t bytes, char *buf, size_t cap), (bytes, buf, cap))       \
  X(double, ooc_now, (void), ())                                                                   \
  X(const char *, ooc_ctx_error, (const ooc_ctx_t *ctx), (ctx))                                    \
  X(int, ooc_par_cpus, (int cap), (cap))
#define OOC_CUDA_IMPORTS_VOID(X)                                                                   \
  X(ooc_free, (ooc_ctx_t * ctx, void *p), (ctx, p))                                                \
  X(ooc_parallel, (int threads, int64_t n, ooc_par_fn fn, void *arg), (threads, n, fn, arg))

#include "base/parloop.h"

typedef struct ooc_cuda_imports {
#define OOC_IMP_FIELD(ret, name, params, args) ret(*name) params;
#define OOC_IMP_VFIELD(name, params, args) void(*name) params;
  OOC_CUDA_IMPORTS(OOC_IMP_FIELD)
  OOC_CUDA_IMPORTS_VOID(OOC_IMP_VFIELD)
#undef OOC_IMP_FIELD
#undef OOC_IMP_VFIELD
  /* ooc_fail_at with the message already formatted (the format is "%s") */
  ooc_status_t (*fail_msg)(ooc_ctx_t *ctx, ooc_status_t st, const char *file, int line,
                           const char *msg);
  /* ooc_fail_replace likewise */
  ooc_status_t (*replace_msg)(ooc_ctx_t *ctx, ooc_status_t st, const char *msg);
} ooc_cuda_imports_t;

typedef const ooc_cuda_api_t *(*ooc_cuda_entry_fn)(const ooc_cuda_imports_t *imports);

/* FNV-1a over the sizes of everything the core and the module pass each other and the offsets
 * of the context fields the CUDA runtime reads and writes: equal on both sides iff they were
 * compiled from compatible headers (the version string check covers the rest). */
#define OOC_CUDA_LAYOUT_ITEMS(X)                                                                   \
  X(sizeof(ooc_ctx_t)) X(offsetof(ooc_ctx_t, host_bytes)) X(offsetof(ooc_ctx_t, host_peak))        \
  X(offsetof(ooc_ctx_t, streams)) X(offsetof(ooc_ctx_t, fault)) X(offsetof(ooc_ctx_t, err))        \
  X(sizeof(ex_cuda_config_t)) X(sizeof(ooc_exec_t)) X(sizeof(ex_stats_t)) X(sizeof(ex_ops_t))     \
  X(sizeof(ooc_cuda_api_t)) X(sizeof(ooc_cuda_imports_t))
static inline uint64_t ooc_cuda_layout(void) {
  uint64_t h = 1469598103934665603ull;
#define OOC_LAYOUT_MIX(v) h = (h ^ (uint64_t)(v)) * 1099511628211ull;
  OOC_CUDA_LAYOUT_ITEMS(OOC_LAYOUT_MIX)
#undef OOC_LAYOUT_MIX
  return h;
}

/* ---- the loader (plugin.c, in the core) ---------------------------------------------------- */
const ooc_cuda_api_t *ooc_cuda_load(char *why, size_t cap, int *found);
static inline const ooc_cuda_api_t *ooc_cuda(void) { return ooc_cuda_load(NULL, 0, NULL); }
#define OOC_MODULE_DIRS 3
#define OOC_MODULE_PATH 4096
int ooc_module_dirs(char dirs[][OOC_MODULE_PATH], int max);
const char *ooc_cuda_describe(char *buf, size_t cap);

#endif
