/*
 * scratch_rate.c: the measurement behind the pipeline's scratch spread over several files
 * (job_int.h JOB_SCRATCH_FILES): buffered pwrite, then pread, of 32 MiB tiles from T threads into
 * F files in one directory (the page cache, as a spill at half the host memory meets it), tile k
 * in file k % F at offset (k / F) * 32 MiB, as the scratch store lays slots. A buffered write
 * holds its file's inode lock (ext4, xfs): T threads into one file write no faster than one.
 * Standalone (not built by CMake):
 *   cc -O2 -pthread -o /tmp/scratch_rate tools/scratch_rate.c && /tmp/scratch_rate /tmp 8
 * (directory, GB per pass). Prints one RESULT line per files x threads x direction.
 * With a third argument P (and a fourth, threads, default 8): P passes into the same 8 files,
 * each a write and a read of the same slots (a spill's later steps rewrite the slots its first
 * wrote), each line with the kernel's Dirty and Writeback (/proc/meminfo) after it:
 *   /tmp/scratch_rate /tmp 8 3 8
 * The project's 2-core VM, 2026-11-30, 2 GB: 1 file: 4 threads write 3.5 GB/s, 8 threads 3.7;
 * 8 files: 3.8 and 6.0; reads 8.3-9.1 either way. The H200 host (16 cores), the same day, 8 GB:
 * 1 file: 2.6-3.8 GB/s written by 1-16 threads; 8 files: 4.0, 9.4, 24.0, 22.7 by 1, 4, 8, 16
 * (docs/PERFORMANCE.md, twentieth session).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TILE ((size_t)32 << 20)
#define MAXT 16
static int nfiles, nthreads, ntiles, writing;
static int fds[MAXT];
static char *bufs[MAXT];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg) {
  long t = (long)arg;
  for (int k = (int)t; k < ntiles; k += nthreads) {
    int f = k % nfiles;
    off_t off = (off_t)(k / nfiles) * (off_t)TILE;
    ssize_t n = writing ? pwrite(fds[f], bufs[t], TILE, off) : pread(fds[f], bufs[t], TILE, off);
    if (n != (ssize_t)TILE) {
      perror("scratch_rate: pwrite/pread");
      exit(1);
    }
  }
  return NULL;
}

/* Dirty and Writeback from /proc/meminfo, on the line being printed. */
static void dirty(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char l[256];
  while (f && fgets(l, sizeof l, f))
    if (!strncmp(l, "Dirty:", 6) || !strncmp(l, "Writeback:", 10)) {
      l[strcspn(l, "\n")] = 0;
      printf("  %s", l);
    }
  if (f) fclose(f);
  printf("\n");
}

/* nfiles new files in dir, unlinked at once (gone when closed); 0, or 1 after perror. */
static int open_files(const char *dir) {
  for (int f = 0; f < nfiles; f++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/scratch_rate.%d.%d", dir, (int)getpid(), f);
    fds[f] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fds[f] < 0) {
      perror(p);
      return 1;
    }
    unlink(p);
  }
  return 0;
}

/* One pass (writing, or reading) by nthreads threads over the tiles; prints "<rate> (...)" after
 * the caller's start of the line, without its end. */
static void pass(void) {
  pthread_t th[MAXT];
  double t0 = now();
  for (long t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, work, (void *)t);
  for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  double dt = now() - t0, gb = (double)ntiles * (double)TILE / 1e9;
  printf(" %s %5.2f GB/s (%.1f GB in %.2f s)", writing ? "write" : "read ", gb / dt, gb, dt);
}

/* Passes of rewrites into 8 files by T threads (the usage above). */
static int rewrites(const char *dir, int passes, int threads) {
  nfiles = 8;
  nthreads = threads < 1 ? 1 : threads > MAXT ? MAXT : threads;
  if (open_files(dir)) return 1;
  for (int ps = 0; ps < passes; ps++)
    for (writing = 1; writing >= 0; writing--) {
      printf("RESULT %s pass %d files 8 threads %2d", dir, ps, nthreads);
      pass();
      dirty();
      fflush(stdout);
    }
  for (int f = 0; f < nfiles; f++) close(fds[f]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: scratch_rate DIR GB [PASSES [THREADS]]\n");
    return 2;
  }
  ntiles = (int)(atof(argv[2]) * 1e9 / (double)TILE);
  for (int t = 0; t < MAXT; t++) {
    bufs[t] = aligned_alloc(4096, TILE);
    memset(bufs[t], t + 1, TILE);
  }
  if (argc > 3) return rewrites(argv[1], atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 8);
  const int fl[] = {1, 8}, tl[] = {1, 4, 8, 16};
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 4; b++) {
      nfiles = fl[a];
      nthreads = tl[b];
      if (open_files(argv[1])) return 1;
      for (writing = 1; writing >= 0; writing--) {
        printf("RESULT files %d threads %2d", nfiles, nthreads);
        pass();
        printf("\n");
        fflush(stdout);
      }
      for (int f = 0; f < nfiles; f++) close(fds[f]);
    }
  return 0;
}
