/*
 * memlimit.h: the memory a batch job may really use, for the default --host-mem.
 *
 * Physical memory is not the limit in a container or a batch job: a cgroup (v2 memory.max, v1
 * memory.limit_in_bytes) or SLURM's allocation (SLURM_MEM_PER_NODE, or SLURM_MEM_PER_CPU x the
 * job's CPUs on the node; both in MiB) is, and going over it gets the process OOM-killed with no
 * message. ooc_mem_limit takes the smallest of all of them; the default budget is a fraction of
 * it (OOC_MEM_FRACTION) and the report names the limit it came from.
 *
 * Contract
 * - ooc_mem_probe: where to look. Tests point proc_cgroup and cgroup_root at files they write;
 *   NULL fields mean "none" (no cgroup, no SLURM variable).
 * - cgroup v2: "0::/path" in proc_cgroup; memory.max of <root>/path and of every ancestor up to
 *   <root> ("max" = none). cgroup v1: the line whose controllers include "memory";
 *   <root>/memory/path/memory.limit_in_bytes and its ancestors (values >= 2^60 = none).
 * - Unparsable files count as absent (never an error: the default must always exist).
 * - source gets a phrase such as "cgroup v2 memory.max (/sys/fs/cgroup/job/memory.max)".
 */
#ifndef OOC_MEMLIMIT_H
#define OOC_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

#define OOC_MEM_FRACTION 0.5

typedef struct {
  int64_t physical;           /* bytes of physical memory (0: unknown) */
  const char *proc_cgroup;    /* "/proc/self/cgroup" */
  const char *cgroup_root;    /* "/sys/fs/cgroup" */
  const char *slurm_mem_per_node, *slurm_mem_per_cpu, *slurm_cpus; /* env values or NULL */
} ooc_mem_probe_t;

/* The probe of this process (real files and environment). */
void ooc_mem_probe_self(ooc_mem_probe_t *p);

/* Smallest limit in bytes (0 if none is known), and which one it is. */
int64_t ooc_mem_limit(const ooc_mem_probe_t *p, char *source, size_t cap);

/* OOC_MEM_FRACTION of (ooc_mem_limit for this process minus its resident size now: the
 * libraries' own start-up memory counts against the limit, not against the budget; never less
 * than an eighth of the limit); source: "100.0 MiB = 50% of 400.0 MiB (the cgroup v1 limit
 * (...)) less 198.5 MiB resident at start". */
int64_t ooc_default_host_mem(char *source, size_t cap);

#endif
