/* build.c: ooc_build_info, what `oocsolve --version` prints about the build. */
#include <cblas.h>
#include <hdf5.h>
#include <stdio.h>
#include <zstd.h>

#include "oocsolve.h"

const char *ooc_build_info(void) {
  static char buf[512];
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
#ifdef OOC_HAVE_CUDA
#ifdef OOC_CUDA_VERSION
  const char *cuda = "CUDA on (toolkit " OOC_CUDA_VERSION ")";
#else
  const char *cuda = "CUDA on";
#endif
#else
  const char *cuda = "CUDA off";
#endif
  /* openblas_get_config: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" */
  snprintf(buf, sizeof buf, "%s; HDF5 %u.%u.%u (headers %d.%d.%d); zstd %s; BLAS %s", cuda, maj,
           min, rel, H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, ZSTD_versionString(),
           openblas_get_config());
  return buf;
}
