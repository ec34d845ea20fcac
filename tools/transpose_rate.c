/*
 * transpose_rate.c: the measurement behind chunkio.c's transposing copies (transpose_any): a
 * 64-row window of 4096-wide row-major chunk rows into a column-major strip of LD rows (what a
 * direct read does, cio_unpack) and the reverse (a row block of LD rows into 4096-wide chunks,
 * cio_pack), with the library's copies against the scalar 32 x 32 blocks they replaced, on one
 * thread, best of 3, each output checked. Standalone (not built by CMake), from a Release build:
 *   cc -O2 -Isrc -Iinclude -o /tmp/transpose_rate tools/transpose_rate.c build/liboocsolve.a \
 *     -lzstd -lpthread -lm && /tmp/transpose_rate 16384
 * The project's 2-core VM (AMD EPYC), 2026-11-29, idle, two runs: chunkio unpack 4.21-4.32 GB/s
 * against 3.48-3.70 (first passes: 1.35, page faults), pack 4.07-4.23 against 3.38-3.51.
 * The same VM, 2026-11-30, one thread, four runs alternating with a build of 001c144: chunkio's
 * 512 x 64 blocks of 8-row kernels (chunkio.c) unpack 5.32-5.46 GB/s (best of each run's 3)
 * and pack 6.46-6.60, where 001c144's 16 x 64 blocks unpacked 4.42-4.59 and packed 4.05-4.23
 * (the scalar blocks measured 0.2-2.1 unpacking and 1.6-2.2 packing that day: the VM's rates
 * drift from hour to hour, compare only runs that alternate). Session 18's prototype's
 * 7.9-8.2 GB/s was not reproduced; why, and what was tried, is in chunkio.c.
 * The H200 host's CPU (Intel Xeon), 2026-11-30, three runs alternating (.wt/c6/call.sh of that
 * session: both trees' oocsolve_static built there, this file linked against each): the 16 x 64
 * blocks 0.70-0.76 GB/s both ways, a third of the scalar blocks' 2.1-2.5 / 1.0-1.8; the 512 x 64
 * blocks 2.0-2.3 unpacking, 3.4-4.1 packing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/chunkio.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* the copies before session 18 (chunkio.c's scalar 32 x 32 blocks) */
static void old_unpack(const double *s, int64_t rw, int64_t h, int64_t w, double *d, int64_t ld) {
  for (int64_t ib = 0; ib < h; ib += 32)
    for (int64_t jb = 0; jb < w; jb += 32)
      for (int64_t j = jb; j < min64(jb + 32, w); j++)
        for (int64_t i = ib; i < min64(ib + 32, h); i++) d[i + j * ld] = s[i * rw + j];
}
static void old_pack(const double *s, int64_t cs, int64_t h, int64_t w, double *d, int64_t rw) {
  for (int64_t ib = 0; ib < h; ib += 32)
    for (int64_t jb = 0; jb < w; jb += 32)
      for (int64_t i = ib; i < min64(ib + 32, h); i++)
        for (int64_t j = jb; j < min64(jb + 32, w); j++) d[i * rw + j] = s[i + j * cs];
}

int main(int argc, char **argv) {
  const int64_t W = 4096, H = 64; /* a chunk row's width; a window's rows */
  int64_t ld = argc > 1 ? atoll(argv[1]) : 16384;
  ld = ld / H * H;
  double *rm = malloc((size_t)(ld * W) * 8), *cm = malloc((size_t)(ld * W) * 8);
  if (!rm || !cm) return 1;
  for (int64_t k = 0; k < ld * W; k++) rm[k] = (double)k;
  memset(cm, 0, (size_t)(ld * W) * 8);
  for (int rep = 0; rep < 3; rep++)
    for (int v = 0; v < 2; v++) {
      double t0 = now();
      for (int64_t q = 0; q < ld / H; q++) /* unpack: windows q of H rows into cm's rows */
        if (v) cio_unpack(rm + q * H * W, 8, W, H, W, cm + q * H, ld);
        else old_unpack(rm + q * H * W, W, H, W, cm + q * H, ld);
      double tu = now() - t0;
      int bad = 0;
      for (int64_t j = 0; j < W; j += 97)
        for (int64_t i = 0; i < ld; i += 31) bad += cm[i + j * ld] != rm[i * W + j];
      t0 = now();
      if (v) cio_pack(cm, 1, ld, ld, W, 8, rm, W); /* back: ld x W column-major -> rows */
      else old_pack(cm, ld, ld, W, rm, W);
      double tp = now() - t0;
      for (int64_t k = 0; k < ld * W; k += 101) bad += rm[k] != (double)k;
      printf("%s: unpack %.2f GB/s, pack %.2f GB/s%s\n", v ? "chunkio" : "scalar 32 x 32",
             8.0 * ld * W / tu / 1e9, 8.0 * ld * W / tp / 1e9, bad ? " WRONG" : "");
    }
  return 0;
}
