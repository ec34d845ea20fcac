/*
 * sdk_consumer/main.c: a program built against an installed oocsolve SDK (tests/sdk_install.sh
 * builds it with find_package, with pkg-config, and under a parent's add_subdirectory).
 *
 *   consumer                  prints the version and the build line
 *   consumer IN.h5 OUT.h5     also inverts IN.h5:/matrix... into OUT.h5 on the CPU
 *
 * Exit 0 only if the header the program was compiled with and the library it runs with agree
 * on the version, and the inverse (if asked for) succeeded with a passing residual check.
 */
#include <oocsolve.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  printf("header %s, library %s\n", OOC_VERSION_STRING, ooc_version());
  printf("build: %s\n", ooc_build_info());
  if (strcmp(OOC_VERSION_STRING, ooc_version()) != 0) {
    fprintf(stderr, "consumer: header version %s != library version %s\n", OOC_VERSION_STRING,
            ooc_version());
    return 1;
  }
  if (argc < 3) return 0;
  ooc_ctx_t *ctx = NULL;
  if (ooc_ctx_create(&ctx) != OOC_OK) return 1;
  ooc_opts_t o;
  ooc_opts_default(&o);
  o.device = OOC_DEVICE_CPU;
  o.force = 1;
  ooc_report_t rep;
  ooc_status_t st = ooc_invert(ctx, argv[1], argv[2], &o, &rep);
  if (st != OOC_OK) {
    fprintf(stderr, "consumer: %s: %s\n", ooc_status_str(st), ooc_ctx_error(ctx));
    ooc_ctx_destroy(ctx);
    return ooc_status_exit_code(st);
  }
  printf("inverted n = %lld, residual ratio %.3g\n", (long long)rep.n, rep.residual);
  ooc_ctx_destroy(ctx);
  return 0;
}
