/* build.c: ooc_build_info, what `oocsolve --version` prints about the build, including whether
 * the CUDA plugin loads here (exec/plugin.h: the core links no CUDA library). */
#include <cblas.h>
#include <hdf5.h>
#include <stdio.h>
#include <zstd.h>

#include "oocsolve.h"
#include "exec/plugin.h"
#include "kernels/ops.h"

int ooc_blas_advice(char *chosen, size_t chosen_cap, char *better, size_t better_cap) {
  const char *core, *want = ooc_ops_cpu_better_core(&core);
  if (chosen_cap) snprintf(chosen, chosen_cap, "%s", want && core ? core : "");
  if (better_cap) snprintf(better, better_cap, "%s", want ? want : "");
  return want != NULL;
}

const char *ooc_build_info(void) {
  static char buf[2048];
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  char cuda[1024 + 64];
  ooc_cuda_describe(cuda, sizeof cuda);
  /* openblas_get_config: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
  snprintf(buf, sizeof buf, "%s; HDF5 %u.%u.%u (headers %d.%d.%d); zstd %s; BLAS %s", cuda, maj,
           min, rel, H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, ZSTD_versionString(),
           openblas_get_config());
  return buf;
}
