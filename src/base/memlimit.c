/* memlimit.c: see memlimit.h. */
#include "base/memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define UNLIMITED_V1 ((int64_t)1 << 60)

/* First line of a file as an int64 (1: read; "max" reads as 0 with *none set). */
static int read_limit(const char *path, int64_t *v, int *none) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[128];
  int ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  if (!ok) return 0;
  *none = 0;
  if (!strncmp(line, "max", 3)) {
    *none = 1;
    *v = 0;
    return 1;
  }
  char *end = NULL;
  long long x = strtoll(line, &end, 10);
  if (end == line || x <= 0) return 0;
  *v = x;
  return 1;
}

/* Reads <base><path>/<file>, then the same file in every ancestor directory down to <base>
 * itself (a parent's limit binds its children too): the smallest limit, and its file. */
static int64_t walk(const char *base, const char *path, const char *file, int64_t unlimited,
                    char *where, size_t wcap) {
  char dir[4096];
  size_t blen = strlen(base);
  ooc_fmt(dir, sizeof dir, "%s%s%s", base, path[0] == '/' ? "" : "/", path);
  int64_t best = 0;
  for (;;) {
    size_t len = strlen(dir);
    while (len > blen && dir[len - 1] == '/') dir[--len] = 0;
    char f[4200];
    ooc_fmt(f, sizeof f, "%s/%s", dir, file);
    int64_t v = 0;
    int none = 0;
    if (read_limit(f, &v, &none) && !none && v < unlimited && (best == 0 || v < best)) {
      best = v;
      ooc_fmt(where, wcap, "%s", f);
    }
    if (len <= blen) break;
    char *slash = strrchr(dir, '/');
    if (!slash || (size_t)(slash - dir) < blen) break;
    *slash = 0;
  }
  return best;
}

static void consider(int64_t v, const char *what, int64_t *best, char *source, size_t cap) {
  if (v > 0 && (*best == 0 || v < *best)) {
    *best = v;
    ooc_fmt(source, cap, "%s", what);
  }
}

int64_t ooc_mem_limit(const ooc_mem_probe_t *p, char *source, size_t cap) {
  int64_t best = 0;
  char what[4200];
  if (source && cap) snprintf(source, cap, "no limit known");
  char tmp[8];
  if (!source) {
    source = tmp;
    cap = sizeof tmp;
  }
  consider(p->physical, "physical memory", &best, source, cap);
  FILE *f = p->proc_cgroup && p->cgroup_root ? fopen(p->proc_cgroup, "r") : NULL;
  if (f) {
    char line[2048];
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      if (!c1 || !c2) continue;
      *c1 = 0;
      *c2 = 0;
      const char *ctrl = c1 + 1, *path = c2 + 1;
      char where[4096] = "";
      if (!strcmp(line, "0") && !*ctrl) { /* v2 */
        int64_t v = walk(p->cgroup_root, path, "memory.max", INT64_MAX, where, sizeof where);
        ooc_fmt(what, sizeof what, "the cgroup v2 limit (%s)", where);
        consider(v, what, &best, source, cap);
      } else {
        char ctl[256];
        snprintf(ctl, sizeof ctl, ",%s,", ctrl);
        if (!strstr(ctl, ",memory,")) continue;
        char base[4096];
        ooc_fmt(base, sizeof base, "%s/memory", p->cgroup_root);
        int64_t v = walk(base, path, "memory.limit_in_bytes", UNLIMITED_V1, where, sizeof where);
        ooc_fmt(what, sizeof what, "the cgroup v1 limit (%s)", where);
        consider(v, what, &best, source, cap);
      }
    }
    fclose(f);
  }
  const int64_t MiB = (int64_t)1 << 20;
  if (p->slurm_mem_per_node && *p->slurm_mem_per_node) {
    long long mb = atoll(p->slurm_mem_per_node);
    ooc_fmt(what, sizeof what, "SLURM_MEM_PER_NODE=%s (MiB)", p->slurm_mem_per_node);
    if (mb > 0) consider((int64_t)mb * MiB, what, &best, source, cap);
  } else if (p->slurm_mem_per_cpu && *p->slurm_mem_per_cpu) {
    long long mb = atoll(p->slurm_mem_per_cpu);
    long long cpus = p->slurm_cpus && *p->slurm_cpus ? atoll(p->slurm_cpus) : 1;
    if (cpus < 1) cpus = 1;
    ooc_fmt(what, sizeof what, "SLURM_MEM_PER_CPU=%s (MiB) x %lld CPUs", p->slurm_mem_per_cpu,
             cpus);
    if (mb > 0) consider((int64_t)(mb * cpus) * MiB, what, &best, source, cap);
  }
  return best;
}

void ooc_mem_probe_self(ooc_mem_probe_t *p) {
  memset(p, 0, sizeof *p);
  p->physical = ooc_physical_memory();
  p->proc_cgroup = "/proc/self/cgroup";
  p->cgroup_root = "/sys/fs/cgroup";
  p->slurm_mem_per_node = getenv("SLURM_MEM_PER_NODE");
  p->slurm_mem_per_cpu = getenv("SLURM_MEM_PER_CPU");
  /* the CPUs of this job on this node; SLURM_JOB_CPUS_PER_NODE may read "4(x2)": its number */
  p->slurm_cpus = getenv("SLURM_CPUS_ON_NODE");
  if (!p->slurm_cpus) p->slurm_cpus = getenv("SLURM_JOB_CPUS_PER_NODE");
}

/* Resident bytes of this process now (VmRSS): libraries and their start-up buffers (OpenBLAS's
 * and CUDA's, about 200 MB on a CUDA build) count against a cgroup's limit but not against
 * --host-mem, so the budget is a fraction of what is left after them. */
static int64_t resident_now(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) {
      kb = atoll(line + 6);
      break;
    }
  fclose(f);
  return (int64_t)kb << 10;
}

int64_t ooc_default_host_mem(char *source, size_t cap) {
  ooc_mem_probe_t p;
  ooc_mem_probe_self(&p);
  char what[512];
  int64_t lim = ooc_mem_limit(&p, what, sizeof what);
  if (lim <= 0) {
    lim = (int64_t)8 << 30; /* nothing known at all: a modest guess */
    ooc_fmt(what, sizeof what, "an assumed 8 GiB (no limit found)");
  }
  int64_t rss = resident_now();
  int64_t room = lim - rss > lim / 8 ? lim - rss : lim / 8; /* never below an eighth */
  int64_t budget = (int64_t)((double)room * OOC_MEM_FRACTION);
  char b1[32], b2[32], b3[32];
  if (source && cap)
    ooc_fmt(source, cap, "%s = %.0f%% of %s (%s) less %s resident at start", 
            ooc_fmt_bytes(budget, b1, sizeof b1), 100 * OOC_MEM_FRACTION,
            ooc_fmt_bytes(lim, b2, sizeof b2), what, ooc_fmt_bytes(rss, b3, sizeof b3));
  return budget;
}
