/*
 * job.c: the one pipeline of ooc_invert, ooc_solve, ooc_factor, ooc_solve_factor, ooc_logdet,
 * ooc_gemm and the least-squares calls (ooc_lstsq, its updates; and their _m forms). Wires the
 * layers together: opens the HDF5 inputs (io), plans the budget (tile cache + the method's
 * workspace), loads and validates the inputs through the tile store (tiling), runs the method's
 * entry of the table (methods.h), writes the output from the store, checks the written result
 * against the inputs, and only then renames the output into place. A method that streams its
 * inputs (QR, methods.h's open) reads, checks and writes in its run; the rest is the same.
 */
#include <float.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/matrix.h"
#include "api/outpath.h"
#include "api/report.h"
#include "io/fileio.h"
#include "io/h5mat.h"
#include "io/h5meta.h"
#include "io/journal.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/check.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/iter.h"
#include "solvers/lu.h"
#include "solvers/oocgemm.h"
#include "tiling/tstore.h"
#include "api/job_int.h"
#include "exec/plugin.h"


/* What each job reads and writes: the report's kind, whether it reads B, which input names the
 * default output (<that file>.suffix.h5:dataset; a streamed method's open may name another,
 * j->out_from), how h5meta describes the result, and the job a Cholesky does for it (chol.h).
 * Least squares opens its own inputs (job_qr.c): its reads_b is 0. */
static const struct {
  const char *kind;
  int reads_b, named_by;
  const char *suffix, *dset;
  h5meta_kind_t meta;
  int chol_job;
} jobs[JOB_KINDS] = {
    [JOB_INVERT] = {"inverse", 0, 0, ".inv", "/inverse", H5META_INVERSE, CHOL_INVERT},
    [JOB_SOLVE] = {"solve", 1, 1, ".x", "/X", H5META_SOLVE, CHOL_SOLVE},
    [JOB_FACTOR] = {"factor", 0, 0, ".chol", "/L", H5META_FACTOR, CHOL_FACTOR}, /* LU: .lu, /LU */
    [JOB_FACTORED] = {"solve", 1, 1, ".x", "/X", H5META_SOLVE, CHOL_SOLVE_FACTORED},
    [JOB_LOGDET] = {"logdet", 0, 0, NULL, NULL, H5META_INVERSE, CHOL_FACTOR}, /* writes nothing */
    [JOB_PRODUCT] = {"gemm", 1, 0, ".gemm", "/C", H5META_GEMM, CHOL_INVERT}, /* no Cholesky */
    [JOB_LSTSQ] = {"lstsq", 0, 0, ".qr", "/R", H5META_SOLVE, CHOL_INVERT},
    [JOB_LSTSQ_UPDATE] = {"lstsq-update", 0, 0, ".u", "/R", H5META_SOLVE, CHOL_INVERT},
};

int job_chol_job(job_kind_t kind) { return jobs[kind].chol_job; }

/* ---- adapters from io to the tiling layer's interfaces ------------------------------------ */

static ooc_status_t h5_source_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                   double *dst, int64_t ld) {
  return h5m_read((h5mat_t *)self, r0, c0, nr, nc, dst, ld);
}

static ooc_status_t h5_source_read_t(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                     double *dst, int64_t ld) {
  return h5m_read_t((h5mat_t *)self, r0, c0, nr, nc, dst, ld);
}

static ooc_status_t h5_source_rows(void *self, int64_t groups, int64_t win_bytes,
                                   ooc_rows_fn fn, void *user, int *streamed) {
  return h5m_stream_rows((h5mat_t *)self, groups, win_bytes, fn, user, streamed);
}

/* A file's reader for the checks: with the transposed read (tstore.h read_t) and the row
 * stream where the handle is a file's (a virtual matrix, the caller's array or callback, has
 * neither). */
static ooc_source_t h5_check_source(h5mat_t *m) {
  int file = h5m_file_id(m) >= 0;
  return (ooc_source_t){m, h5_source_read, file ? h5_source_read_t : NULL,
                        file ? h5_source_rows : NULL};
}

void job_scratch_name(const job_t *j, const char *tag, char *out, size_t cap) {
  ooc_fmt(out, cap, "%s.%s.scratch", j->jbase, tag);
}

/* A store's scratch, opened on its first spill: JOB_SCRATCH_FILES files (one compressed: its
 * tiles move one at a time anyway, spill_ops' concurrent); journaled at the fixed name the
 * journal refers to, else at a fresh one. */
static ooc_status_t spill_open(void *self, size_t slot_bytes, void **handle) {
  spill_slot_t *sl = self;
  job_t *j = sl->job;
  int files = j->o.scratch_zstd > 0 ? 1 : JOB_SCRATCH_FILES;
  if (j->journaled) {
    char path[PATH_MAX + 32];
    job_scratch_name(j, sl->tag, path, sizeof path);
    int mode = sl->must_exist ? SCRATCH_REOPEN : j->resuming ? SCRATCH_ANY : SCRATCH_CREATE;
    OOC_TRY(scratch_open_files(j->ctx, path, files, sl->tcols, slot_bytes, j->o.scratch_zstd,
                               mode, &sl->s));
    /* the puts' writeback started at once only where every step's checkpoint fsyncs them */
    scratch_writeback(sl->s, j->o.checkpoint == OOC_CHECKPOINT_EVERY_STEP);
  } else {
    OOC_TRY(scratch_open_n(j->ctx, j->scratch_dir, sl->tag, files, sl->tcols, slot_bytes,
                           j->o.scratch_zstd, &sl->s));
  }
  *handle = sl->s; /* (only once open: tstore.c takes a handle as an open store) */
  return OOC_OK;
}

static ooc_status_t spill_put(void *h, int64_t id, const void *d, size_t bytes) {
  return scratch_put(h, id, d, bytes);
}
static ooc_status_t spill_get(void *h, int64_t id, void *d, size_t colb, size_t ncols,
                              size_t stride) {
  return scratch_get_cols(h, id, d, colb, ncols, stride);
}
/* concurrent (tstore.h): uncompressed scratch moves tiles side by side on the copy threads;
 * a compressed one would only queue them behind its one set of buffers */
ooc_spill_ops_t job_spill_ops(spill_slot_t *sl, int64_t cols) {
  sl->tcols = ooc_max64(1, ooc_cdiv64(cols, sl->job->b));
  return (ooc_spill_ops_t){sl, spill_open, spill_put, spill_get, sl->job->o.scratch_zstd <= 0};
}

void job_spill_close(spill_slot_t *sl) {
  scratch_close(sl->s);
  sl->s = NULL;
}

/* ---- planning ---------------------------------------------------------------------------- */

void job_report_exec(job_t *j, int dev, const ooc_exec_t *x) {
  ooc_report_t *r = j->rep;
  const int cap = (int)(sizeof r->device_id / sizeof r->device_id[0]); /* the report's slots */
  int d = 0;
  while (d < r->ndevices && r->device_id[d] != dev) d++;
  if (d == cap) return;
  if (d == r->ndevices) { /* a device not listed yet */
    r->ndevices++;
    r->device_id[d] = dev;
    r->device_busy[d] = r->device_flops[d] = 0;
    r->device_bytes_in[d] = r->device_bytes_out[d] = r->device_peak[d] = 0;
  }
  r->device_busy[d] += x->stats.busy;
  r->device_bytes_in[d] += x->stats.bytes_put;
  r->device_bytes_out[d] += x->stats.bytes_get;
  r->device_flops[d] += x->stats.flops;
  r->device_peak[d] = ooc_max64(r->device_peak[d], x->stats.mem_peak);
  r->device_budget[d] = x->mem_budget;
}

void job_gpu_done(job_t *j, ooc_exec_t **ex, const char *budget_name, const char *what,
                  int64_t W) {
  if (!*ex) return;
  job_report_exec(j, j->dev[0], *ex); /* the methods that end here run on the first device */
  char pk[32], bu[32];
  ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "GPU peak %s of %s %s (%s, stripe %lld)",
           ooc_fmt_bytes((*ex)->stats.dev_peak, pk, sizeof pk), budget_name,
           ooc_fmt_bytes((*ex)->budget, bu, sizeof bu), what, (long long)W);
  ex_destroy(*ex);
  *ex = NULL;
}

/* ---- the devices (issue 26) ----------------------------------------------------------------- */

/* The job's device list: --devices, else one device (GPU 0 on CUDA). Not every GPU by default:
 * on two H100s (2026-11-27) spreading ran gj at n = 16384 in core 0.70x and the product 0.52x
 * one GPU's speed, gj at n = 65536 out of core 1.25x (docs/PERFORMANCE.md): a user asks for it
 * where it pays. A listed GPU that does not exist is refused here, before any work. */
static ooc_status_t pick_devices(job_t *j) {
  char why[256];
  if (ex_devices_parse(j->o.devices, j->dev, &j->ndev, why, sizeof why))
    return OOC_FAIL(j->ctx, OOC_ERR_ARG, "%s", why);
  int have = 1;
  if (j->cuda) {
    have = ooc_cuda()->device_count ? ooc_cuda()->device_count() : 1;
    if (have < 1) have = 1;
  }
  if (j->ndev == 0) { /* the default: one device */
    j->ndev = 1;
    j->dev[0] = 0;
    return OOC_OK;
  }
  for (int d = 0; j->cuda && d < j->ndev; d++)
    if (j->dev[d] >= have)
      return OOC_FAIL(j->ctx, OOC_ERR_NODEVICE, "--devices %s: there is no GPU %d (%d visible: "
                      "0 to %d)", j->o.devices, j->dev[d], have, have - 1);
  return OOC_OK;
}

ooc_status_t job_executors(job_t *j, int nqueues, int64_t host_budget, ex_set_t *xs) {
  return job_executors_cfg(j, NULL, j->ndev, nqueues, host_budget, xs);
}

ooc_status_t job_executors_cfg(job_t *j, const struct ex_cuda_config *cfg, int ndev,
                               int nqueues, int64_t host_budget, ex_set_t *xs) {
  ex_set_init(xs);
  ndev = ndev < 1 ? 1 : ndev > j->ndev ? j->ndev : ndev;
  if (!j->cuda)
    return ex_set_host(j->ctx, j->ops, ndev, j->dev, nqueues, host_budget, 0, 0, xs);
  for (int d = 0; d < ndev; d++) {
    ex_cuda_config_t xc = {.gpu_mem = j->o.gpu_mem, .nqueues = nqueues, .trace = j->o.trace};
    if (cfg) xc = *cfg;
    xc.device = j->dev[d];
    /* spread over several GPUs: every device's busy seconds for the report (spans of two
     * events per operation; one device keeps its queues free of them) */
    if (ndev > 1) xc.timing = 1;
    if (d > 0) xc.trace = NULL; /* one trace file: the first device's */
    ooc_exec_t *x = NULL;
    ooc_status_t st = ooc_cuda()->ex_create(j->ctx, &xc, &x);
    if (st == OOC_OK) st = ex_set_add(j->ctx, xs, j->dev[d], x);
    if (st != OOC_OK) {
      ex_set_destroy(xs);
      return st;
    }
  }
  return OOC_OK;
}

int job_sweep_direct(const job_t *j) {
  const char *e = getenv("OOCSOLVE_SWEEP_DIRECT");
  return j->cuda && e && atoi(e) != 0;
}

void job_sweep_direct_note(job_t *j, const char *what, int64_t moved, int64_t swept,
                           int64_t pinned, int64_t refused) {
  char mv[32], all[32], pn[32];
  ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s: %s of the sweep's %s moved between "
           "the tile cache and the GPUs in place (%s pinned as first lent%s)", what,
           ooc_fmt_bytes(moved, mv, sizeof mv), ooc_fmt_bytes(swept, all, sizeof all),
           ooc_fmt_bytes(pinned, pn, sizeof pn), refused ? ", some pinning refused" : "");
}

ooc_status_t job_executors_done(job_t *j, ex_set_t *xs, const char *what, int64_t W) {
  ooc_report_t *r = j->rep;
  ooc_status_t st = OOC_OK;
  for (int d = 0; d < xs->n; d++) {
    ooc_exec_t *x = xs->ex[d];
    ooc_status_t fin = ex_finish(x);
    if (st == OOC_OK) st = fin;
    job_report_exec(j, xs->dev[d], x);
    if (x->kind == EX_CUDA) { /* as job_gpu_done says it, with the GPU's number when several */
      char pk[32], bu[32], id[16] = "";
      if (xs->n > 1) snprintf(id, sizeof id, " %d", xs->dev[d]);
      ooc_warn(r->warnings, sizeof r->warnings, "GPU%s peak %s of --gpu-mem %s (%s, stripe %lld)",
               id, ooc_fmt_bytes(x->stats.dev_peak, pk, sizeof pk),
               ooc_fmt_bytes(x->budget, bu, sizeof bu), what, (long long)W);
    }
  }
  ex_set_destroy(xs);
  return st;
}

/* auto: the GPU when one is usable (with a notice saying which), else the CPU. The CUDA backend
 * runs the elimination on the GPU; the host-side work (input scan, checks) uses the cpu ops. */
static ooc_status_t pick_backend(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  j->cuda = 0;
  switch (j->o.device) {
  case OOC_DEVICE_REF: j->ops = ooc_ops_ref(); break;
  case OOC_DEVICE_CPU: j->ops = ooc_ops_cpu(); break;
  case OOC_DEVICE_AUTO:
  case OOC_DEVICE_CUDA: {
    j->ops = ooc_ops_cpu();
    char desc[256], why[1024];
    int found = 0;
    const ooc_cuda_api_t *cu = ooc_cuda_load(why, sizeof why, &found); /* exec/plugin.h */
    if (cu && cu->probe(desc, sizeof desc)) {
      j->cuda = 1;
      ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "using GPU 0: %s", desc);
    } else if (j->o.device == OOC_DEVICE_CUDA) {
      if (cu) return OOC_FAIL(ctx, OOC_ERR_NODEVICE, "--device cuda: no usable GPU (%s)", desc);
      return OOC_FAIL(ctx, OOC_ERR_NODEVICE, "--device cuda: %s", why);
    } else if (!cu && found) { /* a module is installed but unusable: say why under auto */
      ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "GPU not used: %s", why);
    }
    break;
  }
  default: return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown device %d", (int)j->o.device);
  }
  snprintf(j->rep->backend, sizeof j->rep->backend, "%s", j->cuda ? "cuda" : j->ops->name);
  char blas[320]; /* every job does host products (the check's at least) */
  if (j->ops == ooc_ops_cpu() && ooc_ops_cpu_untuned(blas, sizeof blas))
    ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s", blas);
  return pick_devices(j);
}

/* Cholesky for certain by the call: a Cholesky factor is written or read. (logdet is general:
 * auto takes LU when the matrix is not for Cholesky.) */
static int chol_only(const job_t *j) {
  return (j->kind == JOB_FACTOR && j->o.method != OOC_METHOD_LU) ||
         (j->kind == JOB_FACTORED && !j->lu_in);
}
/* rbt (job_rbt.c) plans, loads and runs on the GPU as LU does: the whole of A, no classify */
static int lu_certain(const job_t *j) {
  return j->o.method == OOC_METHOD_LU || j->o.method == OOC_METHOD_RBT || j->lu_in;
}

/* The check with --check probe (or auto above n = 2048), not resumed (the load is skipped). */
static int probe_check(const job_t *j) {
  ooc_check_t ck = j->o.check == OOC_CHECK_AUTO ? (j->n <= 2048 ? OOC_CHECK_FULL : OOC_CHECK_PROBE)
                                                : j->o.check;
  return ck == OOC_CHECK_PROBE && !j->o.resume;
}

/* The inverse's probe check with its first product formed while A is read and X written
 * (check.h, issue 27): an inverse with the estimate, written to a file (the writer's tap sees
 * its chunks), the whole symmetric matrix written (--triangle lower writes zeros the check reads
 * as symmetric). */
static int fused_check_wanted(const job_t *j) {
  return probe_check(j) && j->kind == JOB_INVERT && !j->o.lower_only &&
         !(j->hm_out && !matrix_is_file(j->hm_out));
}

/* The LU factor's probe check with L (U T) formed from the chunks the writer hands to the file
 * (lu.h lu_fused_t, issue 27: nothing read back), where the factor goes to a file. */
static int lu_fused_wanted(const job_t *j) {
  return probe_check(j) && j->kind == JOB_FACTOR && j->o.method == OOC_METHOD_LU &&
         !(j->hm_out && !matrix_is_file(j->hm_out));
}

/* A V formed during the load (check.h check_probe_t): for the inverse's fused check, and for a
 * factor's probes (an LU factor's check then reads only the factor back: at n = 40000 it read
 * 25.6 GB, the input's half again; a Cholesky factor, if auto picks chol, leaves it unused). */
static int probe_a_wanted(const job_t *j) {
  return fused_check_wanted(j) || (probe_check(j) && j->kind == JOB_FACTOR);
}

/* The plan (api/plan.h decides; the job keeps its numbers at hand). */
static ooc_status_t plan(job_t *j) {
  plan_req_t q = {.o = &j->o, .name = h5m_name(j->in_a), .n = j->n, .m = j->m, .k = j->k,
                  .chol_only = chol_only(j) ||
                               (j->kind == JOB_LOGDET && j->o.method == OOC_METHOD_CHOL),
                  .lu = lu_certain(j)                                         ? 2
                        : j->o.method == OOC_METHOD_AUTO && !chol_only(j) &&
                                  (j->m > 0 || j->kind == JOB_LOGDET) ? 1 : 0,
                  .no_gj = j->kind == JOB_LOGDET,
                  .fused_check = fused_check_wanted(j),
                  .probe_a = probe_a_wanted(j),
                  .lu_fused = lu_fused_wanted(j),
                  .journaled = j->kind != JOB_LOGDET &&
                               (j->o.resume || j->o.checkpoint != OOC_CHECKPOINT_NEVER),
                  .cuda = j->cuda && j->o.method != OOC_METHOD_RBT,
                  .chol_certain = chol_only(j) || j->o.method == OOC_METHOD_CHOL,
                  .chol_job = jobs[j->kind].chol_job,
                  .ndev = j->ndev,
                  .dev0 = j->dev[0]};
  OOC_TRY(j->kind == JOB_PRODUCT ? plan_gemm(j->ctx, &q, &j->plan)
                                 : plan_solver(j->ctx, &q, &j->plan));
  /* rbt's host side is planned as the host executor's; on a GPU job_lu.c sizes its LU's device
   * stripe from the CUDA executor's budget (and falls back to the CPU with a notice) */
  int rbt_gpu = j->cuda && j->o.method == OOC_METHOD_RBT;
  if (j->plan.notice[0]) {
    ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s", j->plan.notice);
    snprintf(j->rep->backend, sizeof j->rep->backend, "%s", j->ops->name);
  }
  j->cuda = j->plan.cuda || rbt_gpu;
  j->b = j->plan.b;
  j->W = j->plan.W;
  j->budget = j->plan.budget;
  j->fixed = j->plan.fixed;
  return OOC_OK;
}

/* ---- phases ------------------------------------------------------------------------------ */

/* The staging h5mat may always use: the writer's allowance in plan()'s fixed bytes. */
static int64_t io_min_stage(int64_t b) { return 8 * b * ooc_max64(b, 256); }

/* Columns of the strips job_load() reads: whole tiles, and at least a whole chunk column when the
 * room allows (a strip narrower than the file's chunks would decode each chunk several times),
 * within `room` bytes (the solver's workspace, not allocated yet while the input is read). */
static int64_t strip_cols(int64_t n, int64_t b, int64_t chunk_c, int64_t room) {
  int64_t w = chunk_c > b ? ooc_cdiv64(chunk_c, b) * b : b;
  while (w > b && 8 * n * w > room) w -= b;
  return w;
}

/* Auto found A not symmetric, or its diagonal not positive, while keeping only the lower
 * triangle: gj needs all of A. The tiles above the diagonal of tile columns [0, tj1) (read, then
 * left out) are read again from the input, a strip of tile columns at a time through `buf` (n x
 * sw doubles). */
static ooc_status_t load_upper(tstore_t *ts, h5mat_t *src, int64_t tj1, double *buf, int64_t sw) {
  part_t p = ts_cols(ts);
  for (int64_t t0 = 1; t0 < tj1;) {
    int64_t t1 = t0, c0 = part_start(p, t0);
    while (t1 < tj1 && part_start(p, t1) + part_len(p, t1) - c0 <= sw) t1++;
    if (t1 == t0) t1 = t0 + 1; /* sw >= b always */
    int64_t nc = part_start(p, t1 - 1) + part_len(p, t1 - 1) - c0, nr = part_start(p, t1 - 1);
    OOC_TRY(h5m_read(src, 0, c0, nr, nc, buf, nr));
    for (int64_t tj = t0; tj < t1; tj++)
      OOC_TRY(ts_put_tiles(ts, 0, tj, tj, tj + 1, buf + (part_start(p, tj) - c0) * nr, nr));
    t0 = t1;
  }
  return OOC_OK;
}


/* Read the input once, a strip of tile columns at a time (few large HDF5 reads, whatever the
 * tile): reject NaN/Inf, take column norms, and fill the store (a tile column at a time, copied
 * by the cache's threads). The strip fits in the room the solver's workspace will use later.
 * A of a Cholesky job (j->lower_load): only the tiles on and below the diagonal are stored (half
 * the memory and spill); with j->classify_load each tile column's upper part is compared with
 * the stored tile row (classify.h) on the way. Under auto, a matrix shown not to be for Cholesky
 * (not symmetric, or a diagonal entry not positive) is stored whole from there on, and the upper
 * tiles left out before are read again (load_upper); --method chol stops at the first
 * asymmetric pair. A journaled run's identity hashes every strip read (ckpt_hash_cols).
 * In three calls (job_int.h "the loader": begin, up to column c, end) so that a caller can
 * read the input column by column as it needs it; job_load makes all three. */
struct job_loader {
  job_t *j;
  tstore_t *ts;
  h5mat_t *src;
  double *colnorm;
  int lower, cl, who;
  int64_t sw, c0; /* strip width; the columns [0, c0) are loaded */
  int64_t room;   /* the load's room: its strip (and classify's tile row) and HDF5's stage */
  tcache_t *pins;
  double *strip, *U;
  uint8_t *flags;
  uint64_t *hashes;
  ts_range_t *ranges; /* NULL: no prefill */
  /* The read-ahead (job_loader_ahead): a thread of its own reads strip k into buf[k % nbuf]
   * (buf[0] is `strip`) while the caller works, at most nbuf strips ahead of the puts; the
   * caller waits only for a strip not read yet. Under mu: read (strips [0, read) read, their
   * buffers full), put (strips [0, put) stored, their buffers free), rst (the failed read's
   * status, strip `read`), stop. */
  int nbuf, running;
  double **buf;
  pthread_t thr;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t read, put;
  ooc_status_t rst;
  int stop;
  int64_t nahead; /* strips the thread read (added to j->ahead_strips when it is joined, and to
                     j->lazy_strips for A's lazy loader) */
  int lazy;       /* A's loader of a read while the method runs (job_load_inputs) */
  /* The classifier's copy of the lower tiles as read (a read while the method runs: the method
   * changes the stored tiles before later columns' upper parts are compared with them): per
   * tile column tj its rows [start(tj), n), ld n - start(tj), float where the input is float32
   * (exact: j->f32), else double; freed with the loader (lower_copy_bytes) */
  void **lc;
};

/* The bytes of the loader's lower copy for A (n, tile b; f32: the input is float32). */
static int64_t lower_copy_bytes(int64_t n, int64_t b, int f32) {
  part_t p = part_make(n, b);
  int64_t e = 0;
  for (int64_t t = 0; t < p.count; t++) e += (n - part_start(p, t)) * part_len(p, t);
  return e * (f32 ? 4 : 8);
}

/* The read-ahead thread stopped and joined (nothing of it runs after this: HDF5 and the
 * strips are the caller's again); the strips it read stay for the puts. */
static void ahead_stop(job_loader_t *L) {
  if (!L->running) return;
  pthread_mutex_lock(&L->mu);
  L->stop = 1;
  pthread_cond_broadcast(&L->cv);
  pthread_mutex_unlock(&L->mu);
  pthread_join(L->thr, NULL);
  L->running = 0;
  L->j->ahead_strips += L->nahead;
  if (L->lazy) L->j->lazy_strips += L->nahead;
  L->nahead = 0;
}

void job_loader_free(job_loader_t *L) {
  if (!L) return;
  ooc_ctx_t *ctx = L->j->ctx;
  ahead_stop(L);
  if (L->buf) {
    for (int k = 1; k < L->nbuf; k++) ooc_free(ctx, L->buf[k]);
    ooc_free(ctx, L->buf);
    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
  }
  if (L->lc) {
    for (int64_t t = 0; t < ts_cols(L->ts).count; t++) ooc_free(ctx, L->lc[t]);
    ooc_free(ctx, L->lc);
  }
  ooc_free(ctx, L->strip);
  ooc_free(ctx, L->U);
  ooc_free(ctx, L->flags);
  ooc_free(ctx, L->hashes);
  ooc_free(ctx, L->ranges);
  ooc_free(ctx, L);
}

ooc_status_t job_loader_begin(job_t *j, tstore_t *ts, h5mat_t *src, double *colnorm,
                              job_loader_t **out) {
  ooc_ctx_t *ctx = j->ctx;
  part_t cp = ts_cols(ts);
  int64_t n = ts_rows(ts).n;
  *out = NULL;
  job_loader_t *L = ooc_calloc(ctx, 1, sizeof *L);
  if (!L) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(src));
  *L = (job_loader_t){.j = j, .ts = ts, .src = src, .colnorm = colnorm,
                      .lower = ts == j->A && j->lower_load, .cl = ts == j->A && j->classify_load};
  int64_t room = j->io_room - (L->cl ? 8 * n * cp.b + cl_flags_bytes(cp) : 0); /* tile row,
                                                                                flags */
  L->room = room;
  L->sw = ooc_min64(strip_cols(n, cp.b, h5m_chunk_cols(src), room), cp.n);
  /* Pinning what the load makes (job_lu_prepare): strip k's buffers are pinned on a pool thread
   * while strip k + 1 is read, so strips of a chunk column (or a tile) keep the last strip's,
   * which nothing hides, small */
  L->pins = j->lu_gx ? ts_cache(ts) : NULL;
  if (L->pins) L->sw = ooc_min64(L->sw, strip_cols(n, cp.b, h5m_chunk_cols(src),
                                                   8 * n * ooc_max64(h5m_chunk_cols(src), cp.b)));
  h5m_set_stage(src, ooc_max64(io_min_stage(cp.b), room - 8 * n * L->sw));
  L->strip = ooc_malloc(ctx, (size_t)(n * L->sw) * sizeof(double));
  L->U = L->cl ? ooc_malloc(ctx, (size_t)(n * cp.b) * sizeof(double)) : NULL;
  L->flags = L->cl ? ooc_malloc(ctx, (size_t)cl_flags_bytes(cp)) : NULL;
  /* a journaled run's identity: the content hash of its inputs, from the strips read here */
  L->who = !j->journaled ? -1 : src == j->in_a ? 0 : src == j->in_b ? 1 : -1;
  L->hashes = L->who >= 0 ? ooc_malloc(ctx, (size_t)cp.count * sizeof(uint64_t)) : NULL;
  L->ranges = ooc_malloc(ctx, (size_t)cp.count * sizeof *L->ranges);
  L->lc = L->cl && j->lazy ? ooc_calloc(ctx, (size_t)cp.count, sizeof *L->lc) : NULL;
  if (!L->strip || (L->cl && (!L->U || !L->flags)) || (L->who >= 0 && !L->hashes) ||
      (L->cl && j->lazy && !L->lc)) {
    job_loader_free(L);
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s", h5m_name(src));
  }
  if (L->cl) cl_init(&j->verdict, j->f32);
  *out = L;
  return OOC_OK;
}

/* The loader's lower copy (L->lc): tile column tj's rows [start(tj), n) of col (ld n) kept,
 * then tile row tj's tiles (tj, 0) .. (tj, tj) from it into L->U (ld bj), as the classifier
 * reads them from the store when the method has not changed them. Both on the pool's threads,
 * a column at a time: on the caller alone, which also feeds the method, the lazy read of an
 * n = 65536 float32 input on an H200 host took 19.3 s instead of 11.8-13.2. */
typedef struct {
  job_loader_t *L;
  int64_t tj;
  const double *col;
} lcopy_t;

static void lc_keep_job(void *arg, int64_t c, int worker) { /* column c of tile column tj */
  const lcopy_t *x = arg;
  part_t p = ts_cols(x->L->ts);
  int64_t n = p.n, r0 = part_start(p, x->tj), m = n - r0;
  const double *s = x->col + r0 + c * n;
  (void)worker;
  if (x->L->j->f32) {
    float *d = (float *)x->L->lc[x->tj] + c * m;
    for (int64_t i = 0; i < m; i++) d[i] = (float)s[i];
  } else {
    memcpy((double *)x->L->lc[x->tj] + c * m, s, (size_t)m * sizeof(double));
  }
}

static void lc_row_job(void *arg, int64_t g, int worker) { /* U's column g */
  const lcopy_t *x = arg;
  part_t p = ts_cols(x->L->ts);
  int64_t n = p.n, r0 = part_start(p, x->tj), bj = part_len(p, x->tj);
  int64_t t = part_index(p, g), c = g - part_start(p, t), mt = n - part_start(p, t);
  int64_t off = r0 - part_start(p, t) + c * mt;
  double *u = x->L->U + g * bj;
  (void)worker;
  if (x->L->j->f32) {
    const float *s = (const float *)x->L->lc[t] + off;
    for (int64_t i = 0; i < bj; i++) u[i] = (double)s[i];
  } else {
    memcpy(u, (const double *)x->L->lc[t] + off, (size_t)bj * sizeof(double));
  }
}

static ooc_status_t lower_copy_row(job_loader_t *L, int64_t tj, const double *col) {
  part_t p = ts_cols(L->ts);
  int64_t n = p.n, r0 = part_start(p, tj), bj = part_len(p, tj), m = n - r0;
  ooc_ctx_t *ctx = L->j->ctx;
  if (!L->lc[tj]) /* (a strip whose put failed is put again, the failure with it) */
    L->lc[tj] = ooc_malloc(ctx, (size_t)(m * bj) * (L->j->f32 ? sizeof(float) : sizeof(double)));
  if (!L->lc[tj])
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory reading %s (the symmetry check's "
                    "copy of tile column %lld)", h5m_name(L->src), (long long)tj);
  lcopy_t x = {L, tj, col};
  int th = ooc_par_cpus(OOC_PAR_MAX_THREADS);
  ooc_parallel(th, bj, lc_keep_job, &x);
  ooc_parallel(th, r0 + bj, lc_row_job, &x);
  return OOC_OK;
}

/* The strip of columns [c0, c0 + nc) after its read into `strip`: hashed, probed, checked,
 * stored. */
static ooc_status_t put_strip(job_loader_t *L, int64_t c0, int64_t nc, double *strip) {
  job_t *j = L->j;
  ooc_ctx_t *ctx = j->ctx;
  tstore_t *ts = L->ts;
  h5mat_t *src = L->src;
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t n = rp.n, bi = 0, bj = 0;
  if (L->hashes) ckpt_hash_cols(j, strip, n, c0, nc, L->hashes);
  if (j->probe && src == j->in_a) check_probe_a(j->probe, c0, nc, strip, n);
  if (j->ops->colabs(n, nc, strip, n, L->colnorm + c0, &bi, &bj)) {
    double v = strip[bi + bj * n];
    return OOC_FAIL(ctx, OOC_ERR_NONFINITE, "%s: element [%lld, %lld] is %s; the matrix must "
                    "be finite", h5m_name(src), (long long)bi, (long long)(c0 + bj),
                    isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
  }
  for (int64_t tj = c0 / cp.b; tj < cp.count && part_start(cp, tj) < c0 + nc; tj++) {
    double *col = strip + (part_start(cp, tj) - c0) * n;
    if (L->lower)
      OOC_TRY(ts_put_tiles(ts, tj, rp.count, tj, tj + 1, col + part_start(rp, tj), n));
    else
      OOC_TRY(ts_put_col(ts, tj, col, n));
    if (L->cl) {
      if (L->lc) OOC_TRY(lower_copy_row(L, tj, col));
      else OOC_TRY(ts_read_tiles(ts, tj, tj + 1, 0, tj + 1, L->U, part_len(cp, tj)));
      cl_column(&j->verdict, rp, tj, col, n, L->U, L->flags);
    }
    if (!L->lower || (j->verdict.symmetric && j->verdict.posdiag)) continue;
    if (!j->may_gj) {
      if (j->verdict.symmetric) continue; /* chol meets the diagonal as a leading minor */
      return OOC_FAIL(ctx, OOC_ERR_NOT_SPD, "%s: Cholesky needs a symmetric matrix: %s",
                      h5m_name(src), j->verdict.why);
    }
    /* auto: gj will run; from here on the whole of A */
    OOC_TRY(ts_put_tiles(ts, 0, tj, tj, tj + 1, col, n));
    L->lower = j->lower_load = 0;
    j->upper_from = tj; /* tile columns before it lack their upper tiles */
  }
  return OOC_OK;
}

/* One strip: columns [L->c0, L->c0 + sw) read, checked and stored. */
static ooc_status_t load_strip(job_loader_t *L) {
  tstore_t *ts = L->ts;
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t n = rp.n, c0 = L->c0, nc = ooc_min64(L->sw, cp.n - c0);
  /* while HDF5 reads the strip, the pool's threads fault in the buffers its tiles will take
   * (the kernel zeroing fresh pages under the puts was a third to a half of the load's perf
   * samples on a 2-core VM) and pin the last strip's (pins) */
  if (L->ranges) {
    int nr = 0;
    for (int64_t tj = c0 / cp.b; tj < cp.count && part_start(cp, tj) < c0 + nc; tj++)
      L->ranges[nr++] = (ts_range_t){L->lower ? tj : 0, rp.count, tj, tj + 1};
    int64_t made;
    OOC_TRY(ts_prefill_start(ts, L->ranges, nr, INT64_MAX, &made));
  }
  if (L->pins) tcache_pin_start(L->pins); /* the buffers the last strip's puts made */
  int64_t k = c0 / L->sw;
  double *strip = L->buf ? L->buf[k % L->nbuf] : L->strip;
  ooc_status_t st = OOC_OK;
  if (L->buf) { /* the read-ahead's, when it got that far (else read here: it stopped) */
    double t0 = ooc_now();
    pthread_mutex_lock(&L->mu);
    while (L->running && L->read <= k && L->rst == OOC_OK) pthread_cond_wait(&L->cv, &L->mu);
    int have = L->read > k;
    if (L->lazy) L->j->t_await += ooc_now() - t0;
    st = have ? OOC_OK : L->rst;
    pthread_mutex_unlock(&L->mu);
    if (st != OOC_OK) { /* its failure (the message recorded by it): the thread joined, and
                         * a later call reads this strip here, the error again with it */
      ahead_stop(L);
      L->rst = OOC_OK;
    } else if (!have) {
      st = h5m_read(L->src, 0, c0, n, nc, strip, n);
    }
  } else {
    st = h5m_read(L->src, 0, c0, n, nc, strip, n);
  }
  if (L->pins) tcache_pin_wait(L->pins);
  tcache_prefill_wait(ts_cache(ts));
  OOC_TRY(st);
  /* the strip's puts are the input's content (tstore.h ts_set_loading), and only they: the
   * method may put its own tiles between two strips (a loader pulled by its need hook). Where
   * A overflows the cache, what it keeps is the method's (methods.h keep_first), but for a read
   * while the method runs: the method takes these columns next, so they evict as a put does */
  int keep = ts == L->j->A && method_get(L->j->o.method)->keep_first && !L->lazy;
  ts_set_loading(ts, keep ? TS_LOAD_KEEP : 1);
  st = put_strip(L, c0, nc, strip);
  ts_set_loading(ts, 0);
  OOC_TRY(st);
  if (L->buf) { /* its buffer free for the read-ahead */
    pthread_mutex_lock(&L->mu);
    L->put = k + 1;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
  }
  L->c0 = c0 + nc;
  return ooc_tick(L->j->ctx, "read", (double)L->c0 / (double)cp.n);
}

ooc_status_t job_loader_upto(job_loader_t *L, int64_t c) {
  while (L->c0 < ooc_min64(c, ts_cols(L->ts).n)) OOC_TRY(load_strip(L));
  return OOC_OK;
}

/* The read-ahead thread: strips in order from the first not read, each into its buffer once
 * the strip nbuf before it is put; stops at the end, at a failed read (its status for the
 * caller, the message in the context) or when asked. */
static void *ahead_main(void *arg) {
  job_loader_t *L = arg;
  int64_t N = ts_cols(L->ts).n, n = ts_rows(L->ts).n;
  pthread_mutex_lock(&L->mu);
  for (int64_t k = L->read; k * L->sw < N && !L->stop;) {
    if (k - L->put >= L->nbuf) { /* every buffer full: wait for a put */
      pthread_cond_wait(&L->cv, &L->mu);
      continue;
    }
    pthread_mutex_unlock(&L->mu);
    int64_t c0 = k * L->sw;
    ooc_status_t st = h5m_read(L->src, 0, c0, n, ooc_min64(L->sw, N - c0), L->buf[k % L->nbuf], n);
    pthread_mutex_lock(&L->mu);
    if (st != OOC_OK) {
      L->rst = st;
    } else {
      L->read = ++k;
      L->nahead++;
    }
    pthread_cond_broadcast(&L->cv);
    if (st != OOC_OK) break;
  }
  pthread_mutex_unlock(&L->mu);
  return NULL;
}

void job_loader_hold(job_loader_t *L) {
  if (L) ahead_stop(L);
}

void job_loader_ahead(job_loader_t *L, int64_t room) {
  ooc_ctx_t *ctx = L->j->ctx;
  /* a caller's array or callback (a virtual handle) is not read from another thread; a store
   * with a source would call HDF5 on the caller's thread beside the thread's reads */
  if (h5m_file_id(L->src) < 0 || ts_has_source(L->ts)) return;
  int64_t n = ts_rows(L->ts).n, N = ts_cols(L->ts).n, sb = 8 * n * L->sw;
  int64_t left = ooc_cdiv64(N - L->c0, L->sw); /* strips not read */
  int nbuf = (int)ooc_min64(ooc_min64(left, 1 + room / ooc_max64(sb, 1)), JOB_AHEAD_STRIPS);
  if (L->buf || nbuf < 2) return;
  L->buf = ooc_calloc(ctx, (size_t)nbuf, sizeof *L->buf);
  if (!L->buf) return; /* (no read-ahead: the strips are read when asked) */
  L->buf[0] = L->strip;
  L->nbuf = 1;
  for (int k = 1; k < nbuf; k++) {
    if (!(L->buf[k] = ooc_malloc(ctx, (size_t)sb))) break;
    L->nbuf++;
  }
  pthread_mutex_init(&L->mu, NULL);
  pthread_cond_init(&L->cv, NULL);
  L->read = L->put = L->c0 / L->sw;
  L->rst = OOC_OK;
  L->running = L->nbuf >= 2 && pthread_create(&L->thr, NULL, ahead_main, L) == 0;
}

ooc_status_t job_loader_end(job_loader_t *L) {
  job_t *j = L->j;
  ooc_status_t st = job_loader_upto(L, INT64_MAX);
  ahead_stop(L); /* (done: every strip read) */
  if (st == OOC_OK && L->ts == j->A && j->upper_from > 0) {
    ts_set_loading(L->ts, 1); /* the input's content too */
    st = load_upper(L->ts, L->src, j->upper_from, L->strip, L->sw);
    ts_set_loading(L->ts, 0);
    if (st == OOC_OK) j->upper_from = 0;
  }
  if (st == OOC_OK && L->hashes)
    j->ident.in[L->who].sample =
        ooc_xxh3(L->hashes, (size_t)ts_cols(L->ts).count * sizeof(uint64_t));
  job_loader_free(L);
  return st;
}

static ooc_status_t scale_check(job_t *j);

/* The load is over (job_load_inputs, or job_lazy_finish after a read while LU ran): the last
 * strip's buffers pinned (TCACHE_PIN_LATER queued them), then buffers made from here on are
 * pinned when first lent. */
static void pin_rest(job_t *j) {
  tcache_pin_start(j->cache);
  tcache_pin_wait(j->cache);
  tcache_pin_new(j->cache, 0);
}

ooc_status_t job_lazy_finish(job_t *j) {
  if (!j->aload) return OOC_OK;
  double t0 = ooc_now();
  job_loader_t *L = j->aload;
  j->aload = NULL;
  ooc_status_t st = job_loader_end(L);
  if (j->lu_gx) pin_rest(j); /* as job_load_inputs does after a whole load */
  if (st == OOC_OK) st = scale_check(j);
  j->t_aload += ooc_now() - t0;
  j->lazy_failed = st != OOC_OK;
  return st;
}

ooc_status_t job_lazy_need(void *user, int64_t c) {
  job_t *j = user;
  if (!j->aload) return OOC_OK; /* all read (a checkpoint asked for the rest first) */
  if (c >= j->n) return job_lazy_finish(j);
  double t0 = ooc_now();
  ooc_status_t st = job_loader_upto(j->aload, c);
  j->t_aload += ooc_now() - t0;
  return st;
}

static ooc_status_t lazy_settle(job_t *j, ooc_status_t st, int *load_failed) {
  ooc_ctx_t *ctx = j->ctx;
  *load_failed = 0;
  if (!j->aload) { /* ended: by the method's last ask or a checkpoint's, which may have failed */
    *load_failed = st != OOC_OK && j->lazy_failed;
    return st;
  }
  if (st == OOC_OK) { /* (the method asks for column n; this is a backstop) */
    st = job_lazy_finish(j);
    *load_failed = st != OOC_OK;
    return st;
  }
  job_loader_hold(j->aload); /* (its thread may record a failure of its own) */
  char msg[sizeof ctx->err], where[sizeof ctx->err_where];
  ooc_status_t was = ctx->err_status;
  memcpy(msg, ctx->err, sizeof msg);
  memcpy(where, ctx->err_where, sizeof where);
  ooc_clear_error(ctx); /* (the first failure recorded is the one kept) */
  ooc_status_t ls = job_lazy_finish(j);
  if (ls != OOC_OK) {
    *load_failed = 1;
    return ls;
  }
  ctx->err_status = was;
  memcpy(ctx->err, msg, sizeof msg);
  memcpy(ctx->err_where, where, sizeof where);
  return st;
}

ooc_status_t job_lazy_settle(job_t *j, ooc_status_t st, const char *tag, const char *during,
                             int *load_failed) {
  st = lazy_settle(j, st, load_failed);
  if (j->lazy && st == OOC_OK)
    ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s: A read while %s ran (%.2f s of its "
             "read after the first columns, %.2f s of it waiting for the reads; read ahead: "
             "%lld strips)", tag, during, j->t_aload, j->t_await, (long long)j->lazy_strips);
  return st;
}

/* A load reads ahead (job_loader_ahead, which refuses what cannot run beside the caller)
 * where its room holds a second strip beside the smallest stage h5m_read takes for the tile
 * (io_min_stage): the reads of strip k + 1 and on overlap the checks and puts of strip k. The
 * stage gives up the second strip's room. One strip more than the load's own (double
 * buffering: more would only fault in fresh pages, where the lazy read's strips wait for asks
 * that come later). */
static void load_ahead(job_loader_t *L) {
  int64_t sb = 8 * ts_rows(L->ts).n * L->sw;
  if (getenv("OOCSOLVE_NO_READ_AHEAD") || L->room < 2 * sb + io_min_stage(ts_cols(L->ts).b))
    return;
  h5m_set_stage(L->src, L->room - 2 * sb);
  job_loader_ahead(L, sb);
}

ooc_status_t job_load(job_t *j, tstore_t *ts, h5mat_t *src, double *colnorm) {
  job_loader_t *L;
  OOC_TRY(job_loader_begin(j, ts, src, colnorm, &L));
  load_ahead(L);
  return job_loader_end(L);
}

/* One row block of write_rows as it goes to the file: rows [r0, r0 + nr), columns [0, lc) of
 * src (ld nr), and with up (mirror) the transposed part right of the diagonal, (n - r1) x nr
 * (ld n - r1); then the fused check's bands. st: the outcome (write_task). */
typedef struct {
  job_t *j;
  int64_t r0, nr, lc, ncols;
  const double *src, *up;
  int f32;
  ooc_status_t st;
} wblock_t;

static ooc_status_t write_block(const wblock_t *w) {
  job_t *j = w->j;
  int64_t r1 = w->r0 + w->nr;
  OOC_TRY(h5m_write(j->out, w->r0, 0, w->nr, w->lc, w->src, w->nr));
  if (w->up) {
    OOC_TRY(h5m_write_t(j->out, w->r0, r1, w->nr, w->ncols - r1, w->up, w->ncols - r1));
    if (j->fused)
      check_fused_band(j->fused, w->r0, w->nr, r1, w->ncols - r1, w->up, w->ncols - r1, 1, w->f32);
  }
  /* the band's rows went through the tap: the check's X^T sgn(B x) from them (check.h) */
  if (j->fused) check_fused_band(j->fused, w->r0, w->nr, 0, w->lc, w->src, w->nr, 0, w->f32);
  return OOC_OK;
}

static void write_task(void *arg) {
  wblock_t *w = arg;
  w->st = write_block(w);
}

/* Columns of a (nr x ncols, ld nr) permuted in place: column c becomes the old column perm[c],
 * by following each cycle of perm with one column aside (tmp, nr) and a mark per column (seen,
 * ncols, zeroed here): each column is copied once, as a gather into a second block would. */
static void permute_cols(double *a, int64_t nr, int64_t ncols, const int64_t *perm, double *tmp,
                         uint8_t *seen) {
  size_t cb = (size_t)nr * sizeof(double);
  memset(seen, 0, (size_t)ncols);
  for (int64_t c0 = 0; c0 < ncols; c0++) {
    if (seen[c0] || perm[c0] == c0) continue;
    memcpy(tmp, a + c0 * nr, cb);
    int64_t c = c0;
    for (;;) {
      seen[c] = 1;
      int64_t from = perm[c];
      if (from == c0) break;
      memcpy(a + c * nr, a + from * nr, cb);
      c = from;
    }
    memcpy(a + c * nr, tmp, cb);
  }
}

/* Write a store to the output by row blocks (one chunk row at a time), with output column c
 * taken from store column perm[c] (perm NULL: identity). Rows, not columns, because the
 * inverse's column permutation then stays inside one buffer. One h5m_write per row block: it is
 * made of whole chunks (a chunk row is the tile row, or d tile rows where plan_chunk groups d x d
 * small tiles into a chunk), so h5mat packs and compresses them on several threads and writes
 * them directly, and its tap (the fused check) sees every chunk.
 * With j->mirror_out (a symmetric result whose store holds the lower triangle, chol.h's
 * lower_only), row block [g0, g1) of tile rows is its lower tiles (the diagonal block's upper
 * triangle mirrored here from its lower) and, right of the diagonal block, the transpose of tile
 * columns [g0, g1) below it, which h5m_write_t packs as cheaply as an untransposed block. Every
 * lower tile is then read twice (once for each of its places), in exchange for no mirror pass in
 * the solver (chol.c: the last sweep step's transposed puts).
 * Write-behind: where the room holds two blocks beside the smallest stage and the store reads
 * no source (its reads would call HDF5 beside the writes), block k goes to the file on a pool
 * thread (write_task: HDF5, the tap, the bands, in the same order as before) while this thread
 * gathers block k + 1 from the store; OOCSOLVE_NO_WRITE_BEHIND=1 turns it off. */
static ooc_status_t write_rows(job_t *j, tstore_t *ts, const int64_t *perm) {
  ooc_ctx_t *ctx = j->ctx;
  part_t rp = ts_rows(ts), cp = ts_cols(ts);
  int64_t ch = j->plan.chunk, b = rp.b, ncols = cp.n, per = 8 * ncols;
  /* tile rows a block: a chunk row's where the room holds it beside a stage of one chunk (the
   * plan counts a tile row's: the solver's workspace, which the writer reuses, holds at least
   * that); else one, and HDF5 assembles the chunks from the pieces (no tap: the check rereads) */
  int64_t d = ch > b && ch % b == 0 && rp.count % (ch / b) == 0 ? ch / b : 1;
  if (d > 1 && j->io_room < per * ooc_min64(d * b, rp.n) + io_min_stage(d * b)) d = 1;
  int64_t hb = ooc_min64(d * b, rp.n), blk = per * hb, stage = io_min_stage(d * b);
  int mirror = j->mirror_out && !perm && rp.n == cp.n, f32 = h5m_type(j->out) == H5M_F32;
  int behind = !ts_has_source(ts) && !getenv("OOCSOLVE_NO_WRITE_BEHIND") &&
               rp.count > d && j->io_room >= 2 * blk + stage;
  ooc_status_t st = OOC_OK;
  double *rows[2] = {NULL, NULL}, *tmp = NULL;
  uint8_t *seen = NULL;
  ts_permute_t mv = {0};
  ooc_task_t task = {0};
  wblock_t wb = {.j = j, .st = OOC_OK};
  for (int k = 0; k < 1 + behind; k++) {
    rows[k] = ooc_malloc(ctx, (size_t)(hb * ncols) * sizeof(double));
    if (!rows[k]) break;
  }
  if (perm) { /* the column permutation in place (permute_cols) */
    tmp = ooc_malloc(ctx, (size_t)hb * sizeof(double));
    seen = ooc_malloc(ctx, (size_t)ncols);
  }
  if (!rows[0] || (behind && !rows[1]) || (perm && (!tmp || !seen))) {
    st = OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory writing the output");
    goto done;
  }
  h5m_set_stage(j->out, ooc_max64(stage, j->io_room - (1 + behind) * blk));
  /* LU's factor with its final swaps left to the writer (job_int.h): the rows move into place
   * on the copy threads while the rows above them are written */
  double t_begin = ooc_now();
  if (ts == j->A) OOC_CHECK(st = ts_permute_start(ts, &j->lu_rowmap, &mv));
  for (int64_t g0 = 0, k = 0; g0 < rp.count; g0 += d, k++) {
    double *rw = rows[behind ? k & 1 : 0];
    int64_t g1 = ooc_min64(rp.count, g0 + d), r0 = part_start(rp, g0);
    int64_t r1 = part_start(rp, g1 - 1) + part_len(rp, g1 - 1), nr = r1 - r0;
    int64_t lc = mirror ? r1 : ncols; /* columns read */
    if (mv.running && r1 > mv.first) { /* these rows are in place now */
      double tw = ooc_now();
      ts_permute_join(&mv);
      ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "lu: the writer joined the row "
               "swaps' move at row %lld, %.2f s into the write, and waited %.3f s for it",
               (long long)r0, tw - t_begin, ooc_now() - tw);
    }
    /* the block's tiles side by side, each laid out as a tile (ld nr): one block, so that its
     * spilled tiles come from scratch together on the copy threads (tstore.h); mirrored, the
     * tiles left of the diagonal block, then each of its tile columns from its diagonal down */
    if (!mirror) OOC_CHECK(st = ts_read_tiles(ts, g0, g1, 0, cp.count, rw, nr));
    else if (g0 > 0) OOC_CHECK(st = ts_read_tiles(ts, g0, g1, 0, g0, rw, nr));
    for (int64_t tj = g0; mirror && tj < g1; tj++)
      OOC_CHECK(st = ts_read_tiles(ts, tj, g1, tj, tj + 1,
                                   rw + part_start(cp, tj) * nr + part_start(rp, tj) - r0, nr));
    if (perm) permute_cols(rw, nr, ncols, perm, tmp, seen);
    if (mirror) { /* the diagonal block's upper triangle from its lower */
      double *dg = rw + r0 * nr;
      for (int64_t c = 1; c < nr; c++)
        for (int64_t i = 0; i < c; i++) dg[i + c * nr] = dg[c + i * nr];
    }
    double *up = NULL;
    if (mirror && r1 < ncols) { /* right of the diagonal: tile columns [g0, g1) below it,
                                 * transposed */
      up = rw + r1 * nr; /* (n - r1) x nr, ld n - r1 */
      OOC_CHECK(st = ts_read_tiles(ts, g1, rp.count, g0, g1, up, ncols - r1));
    }
    if (behind) {
      ooc_task_wait(&task); /* block k - 1 written (its buffer is free for k + 1) */
      OOC_CHECK(st = wb.st);
    }
    wb = (wblock_t){.j = j, .r0 = r0, .nr = nr, .lc = lc, .ncols = ncols, .src = rw, .up = up,
                    .f32 = f32, .st = OOC_OK};
    if (behind) ooc_task_start(&task, write_task, &wb);
    else OOC_CHECK(st = write_block(&wb));
    OOC_CHECK(st = ooc_tick(ctx, "write", (double)g1 / rp.count));
  }
  if (behind) {
    ooc_task_wait(&task);
    st = wb.st;
  }
done:
  ooc_task_wait(&task); /* (a failure above: nothing of the output's runs after return) */
  ts_permute_join(&mv); /* (likewise) */
  if (ts == j->A) ts_rowmap_free(ctx, &j->lu_rowmap); /* in place, or the output failed */
  h5m_set_stage(j->out, 0); /* releases the chunk buffers the writes kept */
  for (int k = 0; k < 2; k++) ooc_free(ctx, rows[k]);
  ooc_free(ctx, tmp);
  ooc_free(ctx, seen);
  return st;
}

/* ---- names ------------------------------------------------------------------------------- */

/* "dir/cov.h5" + ".inv" -> "dir/cov.inv.h5" */
static int source_is_output(void *arg, const char *path) {
  job_t *j = arg;
  return outpath_check(j->ctx, j->out_file, &path, 1) != OOC_OK;
}

static ooc_status_t resolve_output(job_t *j, const char *spec, const char *from_file,
                                   const char *suffix, const char *default_dset) {
  ooc_ctx_t *ctx = j->ctx;
  if (j->hm_out && !matrix_is_file(j->hm_out)) { /* an array or callback: the lock's name only */
    ooc_fmt(j->scratch_dir, sizeof j->scratch_dir, "%s", j->o.scratch_dir); /* matrix.c set it */
    ooc_fmt(j->out_file, sizeof j->out_file, "%s/mem-%ld-%p", j->scratch_dir, (long)getpid(),
            (const void *)j->hm_out);
    ooc_fmt(j->rep->output, sizeof j->rep->output, "%s", matrix_name(j->hm_out));
    return OOC_OK;
  }
  if (spec && *spec) {
    OOC_TRY(h5m_split_spec(ctx, spec, j->out_file, sizeof j->out_file, j->out_dset,
                           sizeof j->out_dset));
  } else {
    outpath_derive(from_file, suffix, j->out_file, sizeof j->out_file);
    j->out_dset[0] = 0;
  }
  if (!j->out_dset[0]) snprintf(j->out_dset, sizeof j->out_dset, "%s", default_dset);
  /* every file this run reads: the named inputs, the files holding their data, the warm start */
  char warm[PATH_MAX] = "", wd[512];
  if (j->o.warm_start && *j->o.warm_start)
    OOC_TRY(h5m_split_spec(ctx, j->o.warm_start, warm, sizeof warm, wd, sizeof wd));
  const char *ins[] = {from_file, warm, h5m_path(j->in_a), h5m_data_file(j->in_a),
                       h5m_path(j->in_b), h5m_data_file(j->in_b), h5m_path(j->in_c),
                       h5m_data_file(j->in_c)};
  OOC_TRY(outpath_check(ctx, j->out_file, ins, (int)(sizeof ins / sizeof ins[0])));
  h5mat_t *srcs[3] = {j->in_a, j->in_b, j->in_c}; /* and the files their data come from */
  for (int k = 0; k < 3; k++)
    if (srcs[k] && h5m_source_files(srcs[k], source_is_output, j)) return OOC_ERR_ARG;
  char tmp[PATH_MAX];
  ooc_fmt(tmp, sizeof tmp, "%s", j->out_file);
  ooc_fmt(j->scratch_dir, sizeof j->scratch_dir, "%s",
           j->o.scratch_dir && *j->o.scratch_dir ? j->o.scratch_dir : dirname(tmp));
  if (j->out_file_only) /* a file of several datasets (the QR state) */
    ooc_fmt(j->rep->output, sizeof j->rep->output, "%s", j->out_file);
  else
    ooc_fmt(j->rep->output, sizeof j->rep->output, "%s:%s", j->out_file, j->out_dset);
  return OOC_OK;
}

ooc_status_t job_open_input(job_t *j, const char *spec, h5mat_t **out) {
  char file[PATH_MAX], dset[512];
  if (!spec || !*spec) return OOC_FAIL(j->ctx, OOC_ERR_ARG, "no input matrix given");
  unsigned flags = j->o.keep_fill ? H5M_KEEP_FILL : 0;
  if ((out == &j->in_a && j->o.trans_a) || (out == &j->in_b && j->o.trans_b)) flags |= H5M_TRANS;
  const struct ooc_matrix *h = out == &j->in_a ? j->hm_a : out == &j->in_b ? j->hm_b
                               : out == &j->in_c ? j->hm_c : NULL;
  if (h && !matrix_is_file(h)) { /* a host array or a fill callback (api/matrix.h) */
    OOC_TRY(matrix_open_input(j->ctx, h, (flags & H5M_TRANS) != 0, out));
  } else {
    OOC_TRY(h5m_split_spec(j->ctx, spec, file, sizeof file, dset, sizeof dset));
    OOC_TRY(h5m_open2(j->ctx, file, dset, flags, out));
  }
  h5m_set_allow_fill(*out, j->o.allow_fill);
  if (flags & H5M_TRANS)
    ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s read transposed (--trans-%c)",
             h5m_name(*out), out == &j->in_a ? 'a' : 'b');
  const char *note = h5m_notice(*out);
  if (note && *note) ooc_warn(j->rep->warnings, sizeof j->rep->warnings, "%s", note);
  return OOC_OK;
}


/* Facts of A that would otherwise surface as a misleading "singular" (issue 20): a matrix of
 * zeros only (often missing data read as the fill value), and finite entries whose column sums
 * overflow (every norm, pivot test and residual check would be Inf). */
static ooc_status_t scale_check(job_t *j) {
  int64_t zero = 0;
  for (int64_t c = 0; c < j->n; c++) {
    if (!isfinite(j->colnorm[c]))
      return OOC_FAIL(j->ctx, OOC_ERR_NONFINITE, "%s: the 1-norm of column %lld overflows (its "
                      "entries are finite but their absolute sum exceeds %.3g): scale the "
                      "matrix, e.g. by a power of 2, and the result back", h5m_name(j->in_a),
                      (long long)c, DBL_MAX);
    zero += j->colnorm[c] == 0;
  }
  /* a factor's diagonal has its own check (exit 3) */
  if (zero == j->n && j->kind != JOB_FACTORED) {
    /* LAPACK's info: the first zero column, or for Cholesky the first leading minor (1-based) */
    int chol = j->o.method == OOC_METHOD_CHOL || chol_only(j);
    j->rep->info = 1;
    return OOC_FAIL(j->ctx, chol ? OOC_ERR_NOT_SPD : OOC_ERR_SINGULAR,
                    "%s: the matrix is all zeros (%s; were its data written? a dataset never "
                    "written reads as its fill value)", h5m_name(j->in_a),
                    chol ? "not positive definite: leading minor 1" : "singular");
  }
  return OOC_OK;
}

/* A 1-D right-hand side (read as n x 1) gives a 1-D X (a product's C stays 2-D). */
static unsigned out_flags(const job_t *j) {
  return j->in_b && j->kind != JOB_PRODUCT && h5m_rank(j->in_b) == 1 &&
                 h5m_cols(j->in_b) == 1 && !j->o.trans_b ? H5M_OUT_1D : 0;
}

/* Seconds spent spilling and reading back, all live stores. */
static double spill_time(const job_t *j) {
  double t = (j->A ? ts_stats(j->A)->t_spill : 0) + (j->B ? ts_stats(j->B)->t_spill : 0);
  for (int k = 0; k < ITER_MAX_STORES; k++)
    if (j->iv[k]) t += ts_stats(j->iv[k])->t_spill;
  return t;
}

/* A's store backed by its input (tstore.h ts_set_backing, issue 27): a tile the load put and
 * nothing changed since is not written to scratch when it is evicted (the input has it), and
 * is read back from the input. Only for a file read directly (h5mat.h h5m_direct) whose one
 * read of a tile is one chunk or one contiguous window: chunks equal to the tiles, or none
 * (a wider chunk would be decoded again for every tile it holds). */
static int input_backs_tiles(const job_t *j) {
  h5mat_t *a = j->in_a;
  if (!a || h5m_file_id(a) < 0 || !h5m_direct(a)) return 0;
  int64_t cr = h5m_chunk_rows(a), cc = h5m_chunk_cols(a);
  return (cr == 0 && cc == 0) || (cr == j->b && cc == j->b);
}

/* A read while the method runs (issue 27), the room its loader's strip takes (0: A is read
 * first):
 * - --method chol's inverse on the GPU by default (the first of its n/W steps runs while the
 *   input is read: chol.h chol_args_t.need). On an H200 (n = 65536 float32 from a cold disk,
 *   --gpu-mem 16G, 4 steps) it took 33.3-34.3 s against 35.7-42.3 s read first in one call, the
 *   caller waiting 5.6 s of the read for the disk, and 34.3-36.9 s against 33.3-35.5 in another:
 *   the disk's pace varies between runs as much as that (over three calls 8 lazy runs took
 *   32.2-36.9 s, median 33.9, and 6 read first 33.3-42.3 s, median 35.2: docs/PERFORMANCE.md
 *   "twenty-sixth session"). Before the load's hash and symmetry pre-pass ran on the pool's
 *   threads the caller, not the disk, paced the read and it did not pay ("twenty-fifth session").
 *   On the CPU only where OOCSOLVE_LAZY_READ is set (the read's puts and checks and the host's
 *   BLAS share the cores); OOCSOLVE_LAZY_READ=0 turns it off on the GPU (to compare). Not under
 *   auto, which chooses Cholesky by the whole load's verdict;
 * - --method lu (factor, solve, logdet: an inverse's result store shares the cache) only where
 *   OOCSOLVE_LAZY_READ is set, because it was slower: on this project's 2-core VM the CPU's LU
 *   factor at n = 8192 took 5.61-5.96 s with it against 5.28-5.65 s without, and on an H200
 *   the factor at n = 40000 took 6.1 s against a 2.8 s read and a 1.5 s factor (the hook then
 *   read on the thread that feeds the GPU: "thirteenth session"; on the GPU the strips' tiles
 *   are pinned as a whole load pins them: job_lazy_finish).
 * - --method lu where A does not fit the cache (backed: its tiles fall back on the input) by
 *   default, on either device: A read first would be read twice, once by the load's scan and once
 *   by the factor's takes of each stripe from the input (H200, n = 32768 float64, --host-mem 4G:
 *   the load left 8.3 of the 8.6 GB in the input and the factor's takes read them again, 2.05 s
 *   of the caller's time: docs/PERFORMANCE.md "thirtieth session"). Its strip's room (one tile
 *   column and HDF5's stage: *carve) then comes out of the cache, and its puts evict as any put
 *   does (the cache is full of the factor's spilled columns), so that the stripe the factor asks
 *   for next is cached when it takes it (H200, the same run: 11.4-12.0 s -> 8.4-12.3 s with the
 *   cache's room of the slots (now plan.c lu_gpu_plan), 9.8-10.0 s with that alone; on this
 *   project's 2-core VM, the CPU's factor at n = 8192, --stripe 2048, --host-mem 600M, within
 *   the noise either way).
 *   OOCSOLVE_LAZY_READ=0 turns it off.
 * - --method gj (inverse, solve) as LU: backed by default, in memory where OOCSOLVE_LAZY_READ
 *   is set. Step 0's sweep then goes left to right and asks for each column as it takes it
 *   (gj_args_t.need). Read first, gj read the 6.1 GB its load left in the input twice; lazy, it
 *   reads A once and its compute phase fell 3.7-3.8 -> 1.6-1.8 s: the inverse at --host-mem 4G
 *   took 12.1-13.1 s against 14.7 s, 1.29-1.34x the 9.4-9.8 s with the whole matrix in memory
 *   (H200, n = 32768 float64, tile 2048, --gpu-mem 4G, one call: docs/PERFORMANCE.md
 *   "thirty-second session"). On this project's 2-core VM (n = 6000, --host-mem 200M) it is
 *   within the noise, 6.5-7.4 s against 6.2-9.9 s, and reads 288 MB of the input against 476.
 * Neither when resumed. Not backed: with the whole input in the cache (nothing is evicted) and
 * at least one tile column's strip left over beside it: the cache never holds more than the
 * inputs' tiles, so that room stays free. Cholesky's symmetry check also keeps a copy of the
 * lower tiles as read (job_loader_t.lc: the sweep changes the stored ones before the columns
 * whose upper parts they must match are read) in that room. */
static int64_t lazy_room(const job_t *j, int64_t cap, int64_t keep, int backed, int64_t *ahead,
                         int64_t *carve) {
  *ahead = *carve = 0;
  const char *e = getenv("OOCSOLVE_LAZY_READ"); /* set: asked for; "0": never (to compare) */
  int asked = e && strcmp(e, "0") != 0, never = e && !asked;
  int chol = j->o.method == OOC_METHOD_CHOL && j->kind == JOB_INVERT && !never &&
             (j->cuda || asked);
  int lu = j->o.method == OOC_METHOD_LU && !j->lu_in && !j->lower_load && !j->classify_load &&
           (j->kind == JOB_FACTOR || j->kind == JOB_SOLVE || j->kind == JOB_LOGDET) &&
           (asked || (backed && !never));
  int gj = j->o.method == OOC_METHOD_GJ && !j->lower_load && !j->classify_load &&
           (j->kind == JOB_INVERT || j->kind == JOB_SOLVE) && (asked || (backed && !never));
  if (j->resuming || !(chol || lu || gj)) return 0;
  int64_t need = 8 * j->n * j->b + io_min_stage(j->b);
  if (backed) { /* (LU's and gj's: chol's inverse loads its lower tiles, never backed) */
    /* the cache keeps room for two tile columns (a chunk's region of LU's stripe at the default
     * LU_CHUNK and tile; a few of gj's sweep items) */
    if (!(lu || gj) || cap - need < 2 * 8 * j->n * j->b) return 0;
    *carve = need;
    return need;
  }
  part_t pa = part_make(j->n, j->b), pk = part_make(j->k, j->b), pm = part_make(j->m, j->b);
  int64_t nt = pa.count * pk.count + (j->in_b ? pk.count * pm.count : 0);
  int64_t spare = cap - keep - nt * tcache_entry_bytes() -
                  (j->classify_load ? lower_copy_bytes(j->n, j->b, j->f32) : 0);
  if (spare < need) return 0;
  int64_t room = ooc_min64(spare, ooc_max64(need, plan_ws(&j->plan, j->W)));
  /* the read-ahead's strips (job_loader_ahead): half of what is left, the other half for what
   * a GPU's executor may still pin beside the cache */
  *ahead = (spare - room) / 2;
  return room;
}

/* Create the cache and stores and fill them from the inputs (once; again after a fallback):
 * A (n x k), B (k x m), and the product's C (n x m) with C0 in it when beta != 0. */
ooc_status_t job_load_inputs(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  int64_t n = j->n, m = j->m, k = j->k;
  double t0 = ooc_now();
  int64_t cap = j->budget - j->fixed - plan_ws(&j->plan, j->W);
  /* Backed where tiles will be evicted (the inputs do not fit the cache), or where a journal
   * may name tiles as the input's; a source read of one tile takes at most its chunk, the
   * compressed chunk and a window (h5m_set_stage below): out of the cache's room. */
  int64_t keep = 8 * (n * k + (j->in_b ? k * m : 0)); /* what the load puts: A (its lower
                                                         * tiles only for a lower load) and B */
  part_t p = part_make(n, j->b);
  if (j->lower_load) {
    keep -= 8 * n * k;
    for (int64_t t = 0; t < p.count; t++) keep += 8 * (n - part_start(p, t)) * part_len(p, t);
  }
  int backed = input_backs_tiles(j) && (j->resuming || keep > cap);
  if (backed) cap -= 3 * io_min_stage(j->b) + 8 * p.count * part_make(k, j->b).count; /* sums */
  int64_t carve, lazy = lazy_room(j, cap, keep, backed, &j->lazy_ahead, &carve);
  cap -= carve; /* a backed lazy read's strip: beside the cache, out of its room */
  OOC_TRY(tcache_create(ctx, cap, &j->cache));
  if (j->lu_gx) { /* pinned on a pool thread while the loader waits for HDF5 (job_load) */
    tcache_set_pin(j->cache, ex_pin_cb, ex_unpin_cb, j->lu_gx);
    tcache_pin_new(j->cache, TCACHE_PIN_LATER);
  }
  /* The stores need no source: job_load() fills them, reading each input byte once; A's may
   * fall back on the input for the tiles the load put (input_backs_tiles). */
  j->spill[0] = (spill_slot_t){.job = j, .tag = "A"};
  j->spill[1] = (spill_slot_t){.job = j, .tag = "B"};
  ooc_spill_ops_t spA = job_spill_ops(&j->spill[0], k), spB = job_spill_ops(&j->spill[1], m);
  OOC_TRY(tstore_create(ctx, j->cache, n, k, j->b, NULL, &spA, &j->A));
  if (backed) {
    ooc_source_t src = {j->in_a, h5_source_read, NULL, NULL};
    OOC_TRY(ts_set_backing(j->A, &src, h5m_name(j->in_a)));
    h5m_set_stage(j->in_a, io_min_stage(j->b)); /* a source read: one tile (the load sets its own) */
  }
  if (j->in_b) OOC_TRY(tstore_create(ctx, j->cache, k, m, j->b, NULL, &spB, &j->B));
  if (j->kind == JOB_PRODUCT) {
    j->ispill[0] = (spill_slot_t){.job = j, .tag = "C"};
    ooc_spill_ops_t spC = job_spill_ops(&j->ispill[0], m);
    OOC_TRY(tstore_create(ctx, j->cache, n, m, j->b, NULL, &spC, &j->iv[0]));
  }
  if (j->resuming) return ckpt_restore_stores(j);
  memset(j->colnorm, 0, (size_t)k * sizeof(double));
  j->io_room = plan_ws(&j->plan, j->W); /* the solver allocates it only after the load */
  if (j->probe) check_probe_reset(j->probe); /* a reload after a fallback: A V anew */
  ooc_status_t st;
  if (lazy > 0) { /* A as the method asks for it; its loader's strip beside the cache */
    j->io_room = lazy;
    j->lazy = 1;
    j->lazy_failed = 0;
    st = job_loader_begin(j, j->A, j->in_a, j->colnorm, &j->aload);
    if (st == OOC_OK) j->aload->lazy = 1;
    j->io_room = plan_ws(&j->plan, j->W);
  } else {
    st = job_load(j, j->A, j->in_a, j->colnorm);
    if (backed) h5m_set_stage(j->in_a, io_min_stage(j->b));
    if (st == OOC_OK && j->kind != JOB_PRODUCT) st = scale_check(j);
  }
  if (st == OOC_OK && j->B) { /* B's (and C0's) column norms are not kept */
    double *bnorm = ooc_calloc(ctx, (size_t)m, sizeof(double));
    st = bnorm ? job_load(j, j->B, j->in_b, bnorm)
               : OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (m = %lld)", (long long)m);
    if (st == OOC_OK && j->in_c && j->beta != 0.0) st = job_load(j, j->iv[0], j->in_c, bnorm);
    ooc_free(ctx, bnorm);
  }
  /* a read while the method runs reads on from here, on its thread (B's load, which uses
   * HDF5, is over; job_loader_ahead says which sources it reads): the method's setup, the
   * executors and their buffers, overlaps it */
  if (st == OOC_OK && j->aload) job_loader_ahead(j->aload, j->lazy_ahead);
  j->io_room = 0;
  /* a read while LU runs keeps pinning its strips' buffers as the load does (load_strip pins
   * strip k's while it reads strip k + 1, LU waiting in its need hook): the rest at its end */
  if (j->lu_gx && !j->aload) pin_rest(j);
  OOC_TRY(st);
  j->rep->t_read = ooc_now() - t0 - spill_time(j);
  return OOC_OK;
}

/* ---- method choice ------------------------------------------------------------------------ */

/* The method that runs (method_check has accepted the call's): a factor file's, the call's,
 * or under auto (and for a Cholesky that must be one) what the load's pre-pass found. */
static ooc_status_t choose_method(job_t *j) {
  ooc_report_t *r = j->rep;
  j->method = j->lu_in ? OOC_METHOD_LU : j->kind == JOB_FACTORED ? OOC_METHOD_CHOL : j->o.method;
  int sym = j->verdict.symmetric, posdiag = j->verdict.posdiag; /* classify.h */
  if (j->kind == JOB_FACTORED) { /* L or L\U is triangular, not symmetric: nothing to classify */
  } else if (j->method == OOC_METHOD_CHOL || (j->method == OOC_METHOD_AUTO && chol_only(j))) {
    if (!sym)
      return OOC_FAIL(j->ctx, OOC_ERR_NOT_SPD, "%s: Cholesky needs a symmetric matrix: %s",
                      h5m_name(j->in_a), j->verdict.why);
    j->method = OOC_METHOD_CHOL;
  } else if (j->method == OOC_METHOD_AUTO) {
    const char *why = sym ? "the diagonal is not positive" : "not symmetric";
    if (sym && posdiag) {
      j->method = OOC_METHOD_CHOL;
      ooc_warn(r->warnings, sizeof r->warnings, "auto: symmetric with a positive diagonal, "
               "using Cholesky (chol)");
    } else if (j->B || j->kind == JOB_LOGDET) { /* a solve, a determinant: getrf's (issue 22) */
      j->method = OOC_METHOD_LU;
      ooc_warn(r->warnings, sizeof r->warnings, "auto: %s, using LU with partial pivoting (lu)",
               why);
    } else {
      j->method = OOC_METHOD_GJ;
      ooc_warn(r->warnings, sizeof r->warnings, "auto: %s, using Gauss-Jordan (gj)", why);
    }
  }
  snprintf(r->method, sizeof r->method, "%s", method_name(j->method));
  return OOC_OK;
}

void job_unload_inputs(job_t *j) {
  job_loader_free(j->aload); /* a lazy load that a failure left open: it points at A's store */
  j->aload = NULL;
  for (int k = 0; k < ITER_MAX_STORES; k++) {
    if (j->iv[k]) {
      j->extra_spilled += ts_stats(j->iv[k])->bytes_spilled;
      j->extra_unspilled += ts_stats(j->iv[k])->bytes_unspilled;
    }
    tstore_destroy(j->iv[k]);
    j->iv[k] = NULL;
    job_spill_close(&j->ispill[k]);
  }
  j->result = NULL;
  tstore_destroy(j->A);
  tstore_destroy(j->B);
  j->A = j->B = NULL;
  for (int k = 0; k < 2; k++) job_spill_close(&j->spill[k]);
  tcache_destroy(j->cache);
  j->cache = NULL;
}

/* ---- after the elimination ---------------------------------------------------------------- */

static void collect_stats(job_t *j) {
  ooc_report_t *r = j->rep;
  const ts_stats_t *sa = ts_stats(j->A), *sb = j->B ? ts_stats(j->B) : NULL;
  r->bytes_input = h5m_bytes(j->in_a) + (j->in_b ? h5m_bytes(j->in_b) : 0) +
                   (j->in_c ? h5m_bytes(j->in_c) : 0);
  r->bytes_spilled = sa->bytes_spilled + (sb ? sb->bytes_spilled : 0) + j->extra_spilled;
  r->bytes_unspilled = sa->bytes_unspilled + (sb ? sb->bytes_unspilled : 0) + j->extra_unspilled;
  /* only A's store falls back on its input, and it has a source only then */
  r->bytes_kept_in_input = sa->bytes_dropped;
  r->bytes_reread_input = sa->bytes_source;
  for (int k = 0; k < ITER_MAX_STORES; k++)
    if (j->iv[k]) {
      r->bytes_spilled += ts_stats(j->iv[k])->bytes_spilled;
      r->bytes_unspilled += ts_stats(j->iv[k])->bytes_unspilled;
    }
  /* in the file's dtype, as bytes_input (the disk floor's bytes) */
  int64_t out_es = strcmp(r->out_dtype, "f32") ? 8 : 4;
  r->bytes_output = j->kind == JOB_LOGDET ? 0 : out_es * j->n * (j->B ? j->m : j->n);
  r->host_peak = ooc_ctx_host_peak(j->ctx);
  /* the spill tier's moves, and how many went one tile at a time (tstore.h "Scratch
   * transfers": the rest moved side by side on the copy threads) */
  const tstore_t *live[2 + ITER_MAX_STORES] = {j->A, j->B};
  for (int k = 0; k < ITER_MAX_STORES; k++) live[2 + k] = j->iv[k];
  double tw = 0, tr = 0;
  int64_t wa = 0, ra = 0;
  for (int k = 0; k < 2 + ITER_MAX_STORES; k++)
    if (live[k]) {
      const ts_stats_t *st = ts_stats(live[k]);
      tw += st->t_spill_write;
      tr += st->t_spill - st->t_spill_write;
      wa += st->bytes_spilled_alone;
      ra += st->bytes_unspilled_alone;
    }
  if (r->bytes_spilled > 0)
    ooc_warn(r->warnings, sizeof r->warnings, "scratch: %.1f GB written in %.1f s (%.1f GB of "
             "them one tile at a time), %.1f GB read back in %.1f s (%.1f GB one at a time)",
             (double)r->bytes_spilled * 1e-9, tw, (double)wa * 1e-9,
             (double)r->bytes_unspilled * 1e-9, tr, (double)ra * 1e-9);
}

/* The disk floor (issue 27, docs/PERFORMANCE.md): the seconds reading the input once and
 * writing the output once take at the bandwidths the caller measured (--disk-bw), the output
 * in its file dtype, and how far the whole run was from it. */
static void disk_floor(job_t *j, int64_t out_elems) {
  ooc_report_t *r = j->rep;
  double rb = j->o.disk_read_bw, wb = j->o.disk_write_bw > 0 ? j->o.disk_write_bw : rb;
  if (!(rb > 0) || !(wb > 0)) return;
  double out = (double)out_elems * (strcmp(r->out_dtype, "f32") ? 8 : 4);
  r->disk_read_bw = rb;
  r->disk_write_bw = wb;
  r->t_floor = (double)r->bytes_input / rb + out / wb;
  r->floor_ratio = r->t_floor > 0 ? r->t_total / r->t_floor : 0;
}

/* A lower-triangle-only output read as the full symmetric matrix (for the check). */
static ooc_status_t sym_lower_read(void *self, int64_t r0, int64_t c0, int64_t nr, int64_t nc,
                                   double *dst, int64_t ld) {
  job_t *j = self;
  h5mat_t *m = j->out;
  OOC_TRY(h5m_read(m, r0, c0, nr, nc, dst, ld));
  if (r0 >= c0 + nc) return OOC_OK; /* entirely below the diagonal */
  ooc_ctx_t *ctx = j->ctx;
  double *t = ooc_malloc(ctx, (size_t)(nr * nc) * sizeof(double));
  if (!t) return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory checking the output");
  ooc_status_t st = h5m_read(m, c0, r0, nc, nr, t, nc); /* the transposed block */
  for (int64_t c = 0; st == OOC_OK && c < nc; c++)
    for (int64_t i = 0; i < nr; i++)
      if (r0 + i < c0 + c) dst[i + c * ld] = t[c + i * nc];
  ooc_free(ctx, t);
  return st;
}

static ooc_status_t commit_output(job_t *j, const char *as);

/* The output's writeback started while the check reads (h5m_writeback_hint, on a pool thread:
 * it can block while the disk's queue is full), so that the commit's fsync finds less to wait
 * for; waited for before anything else touches the output (commit, keep_rejected, cleanup). */
static void writeback_task(void *out) { h5m_writeback_hint(out); }

static void writeback_start(job_t *j) {
  if (j->out) ooc_task_start(&j->wb, writeback_task, j->out);
}

static void writeback_wait(job_t *j) { ooc_task_wait(&j->wb); }

/* The output's writeback asked for every 100 ms while the write phase runs (issue 27), on a
 * pool thread (sync_file_range blocks while the disk's queue is full; the writer must not), so
 * that the disk starts on X as soon as it is written: with the kernel's default thresholds the
 * disk would idle until 10% of RAM is dirty (12.5 GB on the H200 host), and the end of the run
 * (write, check, commit) waited for it. On that host (n = 65536 float32 chol, cold; n = 49152
 * float64) the commit fell from 0.7-1.7 s to 0 and the write phase did not grow (8.3-8.5 s
 * against 9.0-9.1): docs/PERFORMANCE.md "twenty-fifth session". OOCSOLVE_WRITE_FLUSH=<ms> sets
 * another interval, 0 none (to compare). */
typedef struct {
  h5mat_t *out;
  long ms;
  int stop; /* under mu; cv wakes the flusher at once when the write phase ends */
  pthread_mutex_t mu;
  pthread_cond_t cv;
} flusher_t;

static void flusher_task(void *arg) {
  flusher_t *f = arg;
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += f->ms / 1000;
    ts.tv_nsec += (f->ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    /* until the interval is over (ETIMEDOUT) or the stop; a spurious wake waits on */
    int rc = 0;
    while (!f->stop && rc == 0) rc = pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    if (f->stop) break;
    pthread_mutex_unlock(&f->mu);
    h5m_writeback_hint(f->out);
    pthread_mutex_lock(&f->mu);
  }
  pthread_mutex_unlock(&f->mu);
}

static long write_flush_ms(void) {
  const char *e = getenv("OOCSOLVE_WRITE_FLUSH");
  long ms = e && *e ? strtol(e, NULL, 10) : 100;
  return ms > 0 && ms <= 60000 ? ms : 0;
}

/* The flusher on a pool thread for out (none where OOCSOLVE_WRITE_FLUSH=0); flusher_stop wakes
 * it, waits for it and releases it. */
static void flusher_start(flusher_t *f, ooc_task_t *t, h5mat_t *out) {
  *f = (flusher_t){.out = out, .ms = write_flush_ms()};
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  if (f->ms > 0) ooc_task_start(t, flusher_task, f);
}

static void flusher_stop(flusher_t *f, ooc_task_t *t) {
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
  ooc_task_wait(t);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
}

/* --keep-failed: the checked output, with its attributes and a "rejected" one saying why, goes
 * to "<output without .h5>.rejected.h5" instead of the output's name. */
static ooc_status_t keep_rejected(job_t *j) {
  ooc_report_t *r = j->rep;
  writeback_wait(j);
  char path[1024], why[160];
  const char *name = h5m_name(j->out), *colon = strrchr(name, ':');
  size_t len = colon ? (size_t)(colon - name) : strlen(name);
  if (len >= 3 && !strncmp(name + len - 3, ".h5", 3)) len -= 3;
  int w = snprintf(path, sizeof path, "%.*s.rejected.h5", (int)len, name);
  if (w < 0 || (size_t)w >= sizeof path)
    return OOC_FAIL(j->ctx, OOC_ERR_ARG, "%s: the name for the rejected result is too long", name);
  snprintf(why, sizeof why, "failed its residual check: %s ratio %.3g", r->check, r->residual);
  OOC_TRY(h5m_attr_str(j->out, "rejected", why));
  OOC_TRY(h5m_attr_f64(j->out, "residual_norm1", r->residual_norm1));
  snprintf(r->rejected, sizeof r->rejected, "%s%s", path, colon ? colon : "");
  return commit_output(j, path);
}

/* Element bytes read from or written to the inputs and the output so far (h5m_bytes): the
 * check writes nothing, so what it adds is what it read back (report.bytes_check_read). */
static int64_t io_bytes(const job_t *j) {
  return h5m_bytes(j->in_a) + h5m_bytes(j->in_b) + h5m_bytes(j->in_c) + h5m_bytes(j->out);
}

/* The product's probe check (docs/CLI.md "oocsolve gemm"): the written C against A, B and C0. */
static ooc_status_t check_product(job_t *j, int f32) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int64_t m = j->n, n = j->m, k = j->k, big = ooc_max64(1, ooc_max64(m, ooc_max64(n, k)));
  double t0 = ooc_now();
  int64_t io0 = io_bytes(j);
  snprintf(r->check, sizeof r->check, "%s", j->o.check == OOC_CHECK_NONE ? "none" : "probe");
  r->residual = NAN;
  if (j->o.check != OOC_CHECK_NONE) {
    ooc_source_t sa = {j->in_a, h5_source_read, NULL, NULL};
    ooc_source_t sb = {j->in_b, h5_source_read, NULL, NULL};
    ooc_source_t sc0 = {j->in_c, h5_source_read, NULL, NULL};
    ooc_source_t sc = {j->out, h5_source_read, NULL, NULL};
    double thr = j->o.check_threshold > 0 ? j->o.check_threshold : 30;
    OOC_TRY(gemm_check(ctx, j->ops, m, n, k, &sa, &sb, j->in_c ? &sc0 : NULL, &sc, j->alpha,
                       j->beta, check_eps(f32), ooc_max64(j->budget - j->fixed, 64 * big),
                       &r->residual));
    if (!(r->residual < thr))
      return OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                      "%s: the product failed its probe check (ratio %.3g, must be < %g); no "
                      "output was written", h5m_name(j->in_a), r->residual, thr);
  }
  r->t_check = ooc_now() - t0;
  r->bytes_check_read = io_bytes(j) - io0;
  r->host_peak = ooc_ctx_host_peak(ctx);
  return OOC_OK;
}

/* Check what was written against the input (docs/NUMERICS.md). */
static ooc_status_t check_output(job_t *j, int f32) {
  if (j->kind == JOB_PRODUCT) return check_product(j, f32);
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  int64_t n = j->n;
  int solve = j->in_b != NULL;
  double t0 = ooc_now();
  int64_t io0 = io_bytes(j);
  ooc_check_t ck = j->o.check;
  if (ck == OOC_CHECK_AUTO) ck = n <= 2048 ? OOC_CHECK_FULL : OOC_CHECK_PROBE;
  snprintf(r->check, sizeof r->check, "%s",
           ck == OOC_CHECK_NONE ? "none" : ck == OOC_CHECK_FULL ? "full" : "probe");
  double eps = check_eps(f32);
  double thr = j->o.check_threshold > 0 ? j->o.check_threshold : (solve ? 16 : 30);
  ooc_source_t srcA = h5_check_source(j->in_a), srcB = h5_check_source(j->in_b);
  ooc_source_t srcX = h5_check_source(j->out);
  if (j->method == OOC_METHOD_CHOL && !solve && j->o.lower_only)
    srcX = (ooc_source_t){j, sym_lower_read, NULL, NULL};
  int64_t mem = ooc_max64(j->budget - j->fixed, 3 * 8 * n);
  /* the readers' windows: the share of `mem` check.c leaves to a reader (one of up to 6 buffers) */
  h5mat_t *readers[3] = {j->in_a, j->in_b, j->out};
  int64_t staged = 0; /* what the readers may stage in all */
  for (int k = 0; k < 3; k++)
    if (readers[k]) {
      h5m_set_stage(readers[k], ooc_max64(io_min_stage(j->b), mem / 6));
      staged += ooc_max64(io_min_stage(j->b), mem / 6);
    }
  r->residual = NAN;
  if (ck != OOC_CHECK_NONE) {
    double anorm = 0; /* ||A||_inf = ||A||_1 of the factor's input, if it recorded it */
    if (solve && j->kind == JOB_FACTORED && !j->lu_in &&
        !h5m_attr_get_f64(j->in_a, "norm1_input", &anorm))
      ooc_warn(r->warnings, sizeof r->warnings, "%s records no norm1_input: the solve check "
               "bounds ||A|| by ||L||_inf ||L||_1", h5m_name(j->in_a));
    if (j->method == OOC_METHOD_LU && (j->lu_in || j->kind == JOB_FACTOR))
      /* lu_check's buffers take all of the memory it is given: the readers' staging is not
       * theirs (issue 18's GPU sweep: an in-core LU factor with a full check went 2-6% over
       * --host-mem) */
      OOC_TRY(job_lu_check(j, &srcA, &srcB, &srcX, ck == OOC_CHECK_FULL, eps,
                           ooc_max64(mem - staged, 3 * 8 * n)));
    else if (solve && j->kind == JOB_FACTORED)
      OOC_TRY(check_solve_factor(ctx, j->ops, n, j->m, j->b, &srcA, anorm, &srcB, &srcX, eps,
                                 mem, &r->residual, &r->norm1_x));
    else if (solve)
      OOC_TRY(check_solve(ctx, j->ops, n, j->m, j->b, &srcA, &srcB, &srcX, eps, mem,
                          &r->residual, &r->norm1_x));
    else if (j->kind == JOB_FACTOR) {
      int lp = 0;
      OOC_TRY(check_factor(ctx, j->ops, n, j->b, &srcA, &srcX, ck == OOC_CHECK_FULL, eps, mem,
                           j->probe, j->colnorm, &r->residual, &r->norm1_a, &lp));
      if (ck == OOC_CHECK_PROBE && check_probe_done(j->probe))
        ooc_warn(r->warnings, sizeof r->warnings, "check: A T formed while A was read; L read "
                 "back %s, A not again", lp == 2 ? "twice (by rows)" : "once");
    }
    else if (j->fused && ck == OOC_CHECK_PROBE && check_fused_complete(j->fused)) {
      check_info_t ci; /* the first product was formed during the load and the write */
      OOC_TRY(check_fused_finish(ctx, j->fused, j->b, j->colnorm, &srcA, &srcX, eps, mem, thr,
                                 &r->residual, &r->norm1_a, &r->norm1_x, &ci));
      r->residual_norm1 = ci.rnorm;
      r->check_products = ci.products;
      ooc_warn(r->warnings, sizeof r->warnings, "check: ||I - X A||_1 estimated, its first "
               "product formed while A was read and X written%s, %d more read the files",
               ci.band ? " (and the second's X^T xi)" : "", ci.products - 1);
    } else {
      check_info_t ci;
      if (j->fused) /* the writer did not hand every chunk to the tap (check.h) */
        ooc_warn(r->warnings, sizeof r->warnings, "check: the output was not written in whole "
                 "chunks; the estimate rereads A and X");
      OOC_TRY(check_inverse_ex(ctx, j->ops, n, j->b, &srcA, &srcX, ck == OOC_CHECK_FULL, eps,
                               mem, &r->residual, &r->norm1_a, &r->norm1_x, &ci));
      r->residual_norm1 = ci.rnorm;
      r->check_products = ci.products;
    }
  }
  r->t_check = ooc_now() - t0;
  r->bytes_check_read = io_bytes(j) - io0;
  r->host_peak = ooc_ctx_host_peak(ctx);
  double kappa = r->norm1_a * r->norm1_x;
  if (!solve && j->kind != JOB_FACTOR && kappa * eps > 1e-3)
    ooc_warn(r->warnings, sizeof r->warnings,
             "ill-conditioned: kappa_1(A) = %.2g, expect about %.0f correct digits in A^-1", kappa,
             fmax(0, -log10(kappa * eps * 2)));
  if (ck != OOC_CHECK_NONE && !(r->residual < thr)) {
    const char *what = !solve && j->kind != JOB_FACTOR && ck != OOC_CHECK_FULL ? "estimated " : "";
    if (!j->o.keep_failed)
      return OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                      "%s: the result failed its residual check (%s%s ratio %.3g, must be < %g); "
                      "no output was written (--keep-failed keeps it under another name)",
                      h5m_name(j->in_a), what, r->check, r->residual, thr);
    ooc_status_t st = keep_rejected(j);
    if (st != OOC_OK) return st;
    return OOC_FAIL(ctx, OOC_ERR_ACCURACY,
                    "%s: the result failed its residual check (%s%s ratio %.3g, must be < %g); "
                    "kept for inspection as %s, not as the output",
                    h5m_name(j->in_a), what, r->check, r->residual, thr, r->rejected);
  }
  return OOC_OK;
}

/* Record how the output was made, then fsync and rename it into place (or onto `as`). */
static ooc_status_t commit_output(job_t *j, const char *as) {
  writeback_wait(j);
  ooc_report_t *r = j->rep;
  h5mat_t *o = j->out;
  OOC_TRY(h5m_attr_str(o, "oocsolve_version", OOC_VERSION_STRING));
  OOC_TRY(h5m_attr_str(o, "method", r->method));
  OOC_TRY(h5m_attr_str(o, "backend", r->backend));
  /* the product's attributes as ooc_gemm has always written them: A and B as inputs, W a block,
   * no n, precision or phase times but the compute's */
  int product = j->kind == JOB_PRODUCT;
  if (!product) OOC_TRY(h5m_attr_str(o, "precision", r->precision));
  OOC_TRY(h5m_attr_str(o, product ? "input_a" : "input", h5m_name(j->in_a)));
  if (j->in_b) OOC_TRY(h5m_attr_str(o, product ? "input_b" : "rhs", h5m_name(j->in_b)));
  if (h5m_file_id(o) >= 0) /* not for an array or callback output */
    OOC_TRY(h5meta_describe(j->ctx, o, j->in_a, j->in_b, jobs[j->kind].meta, j->o.history));
  if (product) {
    if (j->in_c) OOC_TRY(h5m_attr_str(o, "input_c", h5m_name(j->in_c)));
    OOC_TRY(h5m_attr_f64(o, "alpha", j->alpha));
    OOC_TRY(h5m_attr_f64(o, "beta", j->beta));
  } else if (j->kind == JOB_FACTOR && j->method == OOC_METHOD_LU) {
    OOC_TRY(job_lu_commit_extra(j));
  } else if (j->kind == JOB_FACTOR) {
    double a1 = 0;
    for (int64_t c = 0; c < j->n; c++) a1 = fmax(a1, j->colnorm[c]);
    OOC_TRY(h5m_attr_str(o, "factor", "cholesky_lower"));
    OOC_TRY(h5m_attr_f64(o, "norm1_input", a1)); /* for the check of a later solve --factor */
    OOC_TRY(h5m_attr_f64(o, "logdet_input", r->logdet));
  } else if (j->method == OOC_METHOD_CHOL && !j->in_b) {
    OOC_TRY(h5m_attr_str(o, "triangle", j->o.lower_only ? "lower" : "full"));
    OOC_TRY(h5m_attr_f64(o, "logdet_input", r->logdet));
  }
  if (j->method == OOC_METHOD_NEWTON || j->method == OOC_METHOD_HYPER7)
    OOC_TRY(h5m_attr_i64(o, "iterations", r->iterations));
  if (!product) OOC_TRY(h5m_attr_i64(o, "n", j->n));
  OOC_TRY(h5m_attr_i64(o, "tile", j->b));
  OOC_TRY(h5m_attr_i64(o, product ? "block" : "stripe", j->W));
  OOC_TRY(h5m_attr_str(o, "check", r->check));
  OOC_TRY(h5m_attr_f64(o, "residual_ratio", r->residual));
  OOC_TRY(h5m_attr_f64(o, "time_compute", r->t_compute));
  if (!product) {
    OOC_TRY(h5m_attr_f64(o, "time_read", r->t_read));
    OOC_TRY(h5m_attr_f64(o, "time_spill", r->t_spill));
    OOC_TRY(h5m_attr_f64(o, "time_write", r->t_write));
    OOC_TRY(h5m_attr_f64(o, "time_check", r->t_check));
  }
  return as ? h5m_commit_as(o, as) : h5m_commit(o);
}

/* ---- the one pipeline ------------------------------------------------------------------------ */


/* open: the inputs, their shapes checked: A n x n and B n x m, or the product's A n x k, B k x m
 * and C0 n x m. */
static ooc_status_t open_inputs(job_t *j, const char *const spec[3]) {
  ooc_ctx_t *ctx = j->ctx;
  int product = j->kind == JOB_PRODUCT;
  OOC_TRY(job_open_input(j, spec[0], &j->in_a));
  j->n = h5m_rows(j->in_a);
  j->k = h5m_cols(j->in_a);
  if (!product && j->k != j->n)
    return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: matrix is %lld x %lld%s; it must be square",
                    h5m_name(j->in_a), (long long)j->n, (long long)j->k,
                    h5m_rank(j->in_a) == 1 ? " (a 1-D dataset, read as one column)" : "");
  if (jobs[j->kind].reads_b) {
    OOC_TRY(job_open_input(j, spec[1], &j->in_b));
    int64_t rows = h5m_rows(j->in_b);
    if (rows != j->k && product)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: B has %lld rows but A (%s) is %lld x %lld: the "
                      "inner dimensions must agree", h5m_name(j->in_b), (long long)rows,
                      h5m_name(j->in_a), (long long)j->n, (long long)j->k);
    if (rows != j->k)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: right-hand side has %lld rows; A is %lld x %lld",
                      h5m_name(j->in_b), (long long)rows, (long long)j->n, (long long)j->n);
    j->m = h5m_cols(j->in_b);
  }
  if (product && spec[2] && *spec[2]) {
    OOC_TRY(job_open_input(j, spec[2], &j->in_c));
    if (h5m_rows(j->in_c) != j->n || h5m_cols(j->in_c) != j->m)
      return OOC_FAIL(ctx, OOC_ERR_FORMAT, "%s: C is %lld x %lld; A B is %lld x %lld",
                      h5m_name(j->in_c), (long long)h5m_rows(j->in_c), (long long)h5m_cols(j->in_c),
                      (long long)j->n, (long long)j->m);
  }
  if (!j->in_c) j->beta = 0.0;
  return OOC_OK;
}

/* The second output of a call that writes two (ooc_lstsq_m: x beside the QR state file), n x m:
 * an array or callback, or a dataset (default /x) of a file that is none of the inputs' nor the
 * first output's. Committed with the first, as one (h5m_commit2). */
static ooc_status_t open_output2(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  const struct ooc_matrix *h = j->hm_out2;
  if (!matrix_is_file(h))
    return matrix_open_output(ctx, h, j->n, j->m, H5M_F64, ooc_max64(j->n, 1), j->o.scratch_dir,
                              &j->out2);
  char file[PATH_MAX], dset[512];
  OOC_TRY(h5m_split_spec(ctx, matrix_spec(h), file, sizeof file, dset, sizeof dset));
  if (!dset[0]) snprintf(dset, sizeof dset, "/x");
  const char *ins[] = {h5m_path(j->in_a), h5m_data_file(j->in_a), h5m_path(j->in_b),
                       h5m_data_file(j->in_b), j->out_file};
  OOC_TRY(outpath_check(ctx, file, ins, 5));
  return h5m_create2(ctx, file, dset, j->n, j->m, H5M_F64, 0, j->o.compress, j->o.force,
                     out_flags(j), &j->out2);
}

/* The one pipeline of every call: open, plan, create the output, load, run the method
 * (methods.h), write, check, commit. A method that streams its inputs (its own open and plan:
 * least squares, job_qr.c) reads, checks and writes them in its run instead of the load, write
 * and check here. spec: A, B, C0, the output. */
static ooc_status_t run(job_t *j, const char *const spec[4]) {
  ooc_ctx_t *ctx = j->ctx;
  ooc_report_t *r = j->rep;
  double t_start = ooc_now();
  char afile[PATH_MAX], adset[512];
  snprintf(r->kind, sizeof r->kind, "%s", jobs[j->kind].kind);
  /* until the method is chosen: the call's (auto shows gj) */
  snprintf(r->method, sizeof r->method, "%s",
           method_name(j->o.method == OOC_METHOD_AUTO ? OOC_METHOD_GJ : j->o.method));

  const method_t *own = method_get(j->o.method); /* a method that streams its inputs, or NULL */
  if (!own->open) own = NULL;
  if (own) {
    OOC_TRY(own->open(j, spec));
  } else {
    OOC_TRY(open_inputs(j, spec));
    OOC_TRY(method_check(ctx, j->o.method, j->kind, h5m_name(j->in_a)));
  }
  j->lu_in = j->kind == JOB_FACTORED && job_lu_is_factor_file(j);
  int64_t n = j->n, m = j->m;
  r->n = n;
  r->nrhs = m;
  if (j->kind == JOB_PRODUCT || own) r->gemm_k = j->k; /* lstsq: A's rows */
  snprintf(r->precision, sizeof r->precision, "f64");

  OOC_TRY(pick_backend(j));
  OOC_TRY(h5m_split_spec(ctx, j->out_from ? j->out_from : spec[jobs[j->kind].named_by], afile,
                         sizeof afile, adset, sizeof adset));
  if (j->kind == JOB_LOGDET) { /* no output; scratch beside the input */
    ooc_fmt(j->scratch_dir, sizeof j->scratch_dir, "%s",
            j->o.scratch_dir && *j->o.scratch_dir ? j->o.scratch_dir : dirname(afile));
    ckpt_remove_stale_spills(j);
  } else {
    int lu_f = j->kind == JOB_FACTOR && j->o.method == OOC_METHOD_LU;
    if (lu_f && j->hm_out && !matrix_is_file(j->hm_out)) /* its pivots are a dataset beside it */
      return OOC_FAIL(ctx, OOC_ERR_ARG, "an LU factor goes to an HDF5 file (L\\U with its pivots "
                      "as a dataset beside it, docs/CLI.md), not to %s", matrix_name(j->hm_out));
    OOC_TRY(resolve_output(j, spec[3], afile, lu_f ? ".lu" : jobs[j->kind].suffix,
                           lu_f ? "/LU" : j->out_dset0 ? j->out_dset0 : jobs[j->kind].dset));
  }
  if (!own && j->o.resume && j->o.method == OOC_METHOD_AUTO && j->kind != JOB_LOGDET &&
      j->kind != JOB_PRODUCT) { /* auto resumes what the journal ran, planned for that method */
    int jm = ckpt_journal_method(j);
    if (jm >= 0) {
      j->o.method = jm;
      snprintf(r->method, sizeof r->method, "%s", method_name(jm));
      ooc_warn(r->warnings, sizeof r->warnings, "--resume under --method auto: resuming the "
               "journal's --method %s run", method_name(jm));
    }
  }
  OOC_TRY(own ? own->plan(j) : plan(j));
  r->tile = j->b;
  r->stripe = j->W;
  /* the product's block edge is planned in whole tiles: what it covers is at most C's larger
   * side (a GPU block of 2048 over an 1800 x 1800 C is one block of 1800) */
  if (j->kind == JOB_PRODUCT) r->stripe = ooc_min64(j->W, ooc_max64(j->n, j->m));
  r->host_budget = j->budget;

  j->f32 = !own && h5m_type(j->in_a) == H5M_F32 && (!j->in_b || h5m_type(j->in_b) == H5M_F32) &&
           (!j->in_c || h5m_type(j->in_c) == H5M_F32);
  int f32 = !own && (j->o.out_dtype == OOC_DTYPE_F32 ||
                     (j->o.out_dtype == OOC_DTYPE_AUTO && j->f32)); /* lstsq: f64 */
  snprintf(r->out_dtype, sizeof r->out_dtype, f32 ? "f32" : "f64");
  if (j->kind == JOB_PRODUCT || own) /* not journaled: its lock and what a killed run left */
    OOC_TRY(ckpt_claim_output(j));
  else if (j->kind != JOB_LOGDET)
    OOC_TRY(ckpt_prepare(j));
  /* Create the output first: an existing file or an unwritable directory fails in seconds.
   * (A file of several datasets, the QR state, is made with its first: R, n x n, unchunked.) */
  int64_t cols = j->in_b && !j->out_file_only ? m : n;
  double t_create = ooc_now();
  if (j->kind != JOB_LOGDET && j->hm_out && !matrix_is_file(j->hm_out))
    OOC_TRY(matrix_open_output(ctx, j->hm_out, n, cols, f32 ? H5M_F32 : H5M_F64,
                               own ? ooc_max64(n, 1) : j->b, j->scratch_dir, &j->out));
  else if (j->kind != JOB_LOGDET)
    OOC_TRY(h5m_create2(ctx, j->out_file, j->out_dset, n, cols, f32 ? H5M_F32 : H5M_F64,
                        j->plan.chunk, j->o.compress, j->o.force,
                        j->out_file_only ? 0u : out_flags(j), &j->out));
  if (j->out && h5m_replaced(j->out))
    ooc_warn(r->warnings, sizeof r->warnings, "%s replaces the dataset of that name; the file's "
             "other contents are kept", h5m_name(j->out));
  if (j->hm_out2) OOC_TRY(open_output2(j));
  if (own) { /* it reads, computes, checks and writes (methods.h) */
    int64_t steps = 0;
    r->t_write = ooc_now() - t_create;
    ooc_status_t st = own->run(j, &steps);
    r->steps = steps;
    OOC_TRY(st);
    double t_commit = ooc_now();
    OOC_TRY(h5m_commit2(j->out, j->out2)); /* both or neither (h5mat.h) */
    r->t_write += ooc_now() - t_commit;
    r->host_peak = ooc_ctx_host_peak(ctx);
    r->t_total = ooc_now() - t_start;
    return OOC_OK;
  }

  j->colnorm = ooc_calloc(ctx, (size_t)j->k, sizeof(double));
  j->perm = j->kind == JOB_PRODUCT ? NULL : ooc_malloc(ctx, (size_t)n * sizeof(int64_t));
  if (j->plan.q.probe_a && !j->resuming) OOC_TRY(check_probe_create(ctx, j->ops, n, &j->probe));
  if (j->plan.q.fused_check && j->probe)
    OOC_TRY(check_fused_create(ctx, j->ops, j->probe, &j->fused));
  if (j->plan.q.lu_fused && j->probe)
    OOC_TRY(lu_fused_create(ctx, j->ops, j->probe, n, j->plan.chunk, &j->lufused));
  if (!j->colnorm || (!j->perm && j->kind != JOB_PRODUCT))
    return OOC_FAIL(ctx, OOC_ERR_NOMEM, "out of host memory (n = %lld)", (long long)n);
  /* What the method may need of A decides what the load keeps (classify.h, methods.h) */
  const method_t *asked = method_get(j->o.method);
  j->classify_load = j->kind != JOB_FACTORED && asked->classify;
  j->lower_load = j->kind == JOB_FACTORED ? !j->lu_in : j->classify_load && asked->lower;
  j->may_gj = j->o.method == OOC_METHOD_AUTO && !chol_only(j); /* gj or lu */
  cl_init(&j->verdict, j->f32);
  double t_prep = ooc_now(); /* LU's GPU executor, to pin the tiles as the load makes them: */
  OOC_TRY(job_lu_prepare(j)); /* its setup counts in t_compute, where it was before */
  t_prep = ooc_now() - t_prep;
  OOC_TRY(job_load_inputs(j)); /* t_read includes the symmetry pre-pass, run during the load */
  if (j->lu_in) OOC_TRY(job_lu_read_ipiv(j));
  if (!j->resuming) OOC_TRY(choose_method(j));

  /* eliminate */
  double t1 = ooc_now();
  double spill_before = spill_time(j);
  tstore_t *A_before = j->A; /* a fallback reloads into new stores */
  int64_t sp_before = ts_stats(j->A)->bytes_spilled, un_before = ts_stats(j->A)->bytes_unspilled;
  int64_t steps = 0;
  ooc_status_t st = OOC_OK;
  for (int ran = -1; st == OOC_OK && ran != j->method;) { /* a fallback hands over (methods.h) */
    ran = j->method;
    st = method_get(ran)->run(j, &steps);
  }
  double t2 = ooc_now();
  double spill_after = spill_time(j);
  r->steps = steps;
  /* plan.h's model (gj, chol) or lu.h's (LU's factor), for a run from the start; a checkpoint
   * also writes each cached tile once, so a journaled run that committed one reports none */
  int inv = j->kind == JOB_INVERT && (j->method == OOC_METHOD_GJ || j->method == OOC_METHOD_CHOL);
  int luf = (j->kind == JOB_FACTOR || j->kind == JOB_LOGDET) && j->method == OOC_METHOD_LU &&
            !j->lu_in;
  int no_ckpt = !j->journaled || (j->committed_steps == 0 && !j->resuming);
  if (j->A == A_before && no_ckpt && (inv || luf)) {
    if (inv) {
      plan_traffic_t m = plan_spill_model(j->method == OOC_METHOD_CHOL, n, j->b, r->stripe);
      r->bytes_spill_model = m.spilled;
      r->bytes_unspill_model = m.unspilled;
    } else {
      lu_spill_model(n, j->b, r->stripe, &r->bytes_spill_model, &r->bytes_unspill_model);
    }
    r->bytes_spilled_elim = ts_stats(j->A)->bytes_spilled - sp_before;
    r->bytes_unspilled_elim = ts_stats(j->A)->bytes_unspilled - un_before;
  }
  r->t_spill = spill_after;
  /* A read while the method ran (lazy_room): that time is the read phase's */
  r->t_read += j->t_aload;
  r->strips_read_ahead = j->ahead_strips;
  r->t_compute = (t2 - t1) - (spill_after - spill_before) + t_prep - j->t_aload;
  const method_t *mt = method_get(j->method);
  r->flops = mt->flops ? mt->flops(j->kind, (double)n, (double)m) : j->iter_flops;
  r->gflops = r->t_compute > 0 ? r->flops / r->t_compute * 1e-9 : 0;
  OOC_TRY(st);
  if (j->kind == JOB_LOGDET) {
    collect_stats(j);
    r->t_total = ooc_now() - t_start;
    disk_floor(j, 0);
    return OOC_OK;
  }

  /* write */
  const int64_t *perm =
      j->method == OOC_METHOD_GJ || (j->method == OOC_METHOD_LU && j->result) ? j->perm : NULL;
  /* the solver's workspace is free again, but for LU's row map and its move (write_rows) */
  j->io_room = plan_ws(&j->plan, j->W);
  j->io_room -= ts_rowmap_bytes(&j->lu_rowmap) + ts_permute_bytes(j->A, &j->lu_rowmap);
  if (j->fused) { /* X (A V) and ||X||_1 from the chunks as they go to the file */
    check_fused_reset_x(j->fused);
    h5m_set_tap(j->out, check_fused_x, j->fused);
  }
  if (j->lufused && j->method == OOC_METHOD_LU) { /* L (U T) from the factor's chunks */
    lu_fused_reset(j->lufused);
    h5m_set_tap(j->out, lu_fused_x, j->lufused);
  }
  flusher_t fl;
  ooc_task_t flush = {0};
  flusher_start(&fl, &flush, j->out);
  st = j->B && !j->result ? write_rows(j, j->B, NULL)
                          : write_rows(j, j->result ? j->result : j->A, perm);
  flusher_stop(&fl, &flush);
  h5m_set_tap(j->out, NULL, NULL);
  OOC_TRY(st);
  /* the write phase's scratch reads count in t_spill only, as the other phases' do (so the four
   * phases add up to the wall time from input to output instead of counting them twice) */
  double spill_write = spill_time(j) - spill_after;
  r->t_spill += spill_write;
  r->t_write = ooc_now() - t2 - spill_write;
  collect_stats(j);
  OOC_TRY(ckpt_drop(j)); /* before the scratch it names goes away */
  job_unload_inputs(j);

  writeback_start(j); /* the disk writes X back while the check reads */
  OOC_TRY(check_output(j, f32));
  double t_commit = ooc_now();
  OOC_TRY(commit_output(j, NULL));
  r->t_commit = ooc_now() - t_commit;
  r->t_total = ooc_now() - t_start;
  disk_floor(j, n * (j->B ? m : n));
  return OOC_OK;
}

static void job_cleanup(job_t *j) {
  ooc_ctx_t *ctx = j->ctx;
  ctx->graceful = 0; /* no step end is coming: a stop request after the run is no promise */
  writeback_wait(j); /* before the output can be closed */
  if (j->cx) job_report_exec(j, j->dev[0], j->cx); /* least squares' (not chol's) */
  ex_destroy(j->cx);
  for (int d = 0; d < j->gxs.n; d++) gemm_dev_destroy(j->gdevs[d]); /* the products' (j->gdev) */
  ex_set_destroy(&j->gxs);                                             /* and j->gx */
  job_lu_release(j); /* an LU executor made for the load that no run took */
  job_unload_inputs(j);
  h5m_close(j->out); /* removes the temporary file unless committed */
  h5m_close(j->out2);
  job_qr_cleanup(j);
  h5m_close(j->in_a);
  h5m_close(j->in_b);
  h5m_close(j->in_c);
  ooc_free(ctx, j->colnorm);
  check_fused_destroy(j->fused);
  j->fused = NULL;
  lu_fused_destroy(j->lufused);
  j->lufused = NULL;
  check_probe_destroy(j->probe);
  j->probe = NULL;
  ooc_free(ctx, j->perm);
  ooc_free(ctx, j->ipiv);
  ooc_free(ctx, j->lu_state0.rowsum);
  j->lu_state0.rowsum = NULL;
  ts_rowmap_free(ctx, &j->lu_rowmap);
  journal_free(ctx, j->jr);
  j->jr = NULL;
  if (j->lock_fd >= 0) { /* unlink first: whoever waits re-checks the path after locking */
    fio_remove(ctx, j->lockpath);
    fio_close(ctx, j->lock_fd);
    j->lock_fd = -1;
  }
}

static ooc_status_t start(job_t *j, ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *rep,
                          ooc_report_t *local) {
  memset(j, 0, sizeof *j);
  j->lock_fd = -1;
  j->lu_due_step = -1;
  j->ctx = ctx;
  j->rep = rep ? rep : local;
  report_begin(ctx, opts, j->rep, &j->o);
  if (j->o.method < 0 || j->o.method >= METHOD_GEMM) /* the product's is no option */
    return OOC_FAIL(ctx, OOC_ERR_ARG, "unknown method %d", (int)j->o.method);
  return OOC_OK;
}

/* The public calls differ only in the job they ask (methods.h) of their inputs (spec: A, B, C0)
 * and output (spec[3]); hm: the _m calls' handles. */
ooc_status_t job_call(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                      job_kind_t kind, const char *const spec[4], double alpha, double beta,
                      double *logdet, const ooc_matrix_t *const *hm, struct qr_job *qr) {
  if (!ctx) return OOC_ERR_ARG;
  job_t j;
  ooc_report_t local;
  ooc_status_t st = start(&j, ctx, opts, report, &local);
  if (hm) {
    j.hm_a = hm[0];
    j.hm_b = hm[1];
    j.hm_c = hm[2];
    j.hm_out = hm[3];
  }
  j.kind = kind;
  j.alpha = alpha;
  j.beta = beta;
  j.qr = qr;
  j.method_asked = j.o.method;
  if (kind == JOB_PRODUCT) j.o.method = METHOD_GEMM; /* its own entry; no option names it */
  if (kind == JOB_LSTSQ || kind == JOB_LSTSQ_UPDATE) j.o.method = METHOD_QR; /* its own entry */
  if (st == OOC_OK && kind == JOB_PRODUCT && (!isfinite(alpha) || !isfinite(beta)))
    st = OOC_FAIL(ctx, OOC_ERR_ARG, "alpha and beta must be finite (got %g, %g)", alpha, beta);
  if (st == OOC_OK && jobs[kind].reads_b && (!spec[1] || !*spec[1]))
    st = OOC_FAIL(ctx, OOC_ERR_ARG, kind == JOB_PRODUCT ? "no matrix B given"
                                                        : "no right-hand side given");
  if (st == OOC_OK) st = ckpt_settle(&j, run(&j, spec));
  if (logdet) *logdet = st == OOC_OK ? j.rep->logdet : NAN;
  job_cleanup(&j);
  return st;
}

ooc_status_t ooc_invert(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report) {
  const char *spec[4] = {input, NULL, NULL, output};
  return job_call(ctx, opts, report, JOB_INVERT, spec, 0, 0, NULL, NULL, NULL);
}

ooc_status_t ooc_solve(ooc_ctx_t *ctx, const char *a, const char *b, const char *output,
                       const ooc_opts_t *opts, ooc_report_t *report) {
  const char *spec[4] = {a, b, NULL, output};
  return job_call(ctx, opts, report, JOB_SOLVE, spec, 0, 0, NULL, NULL, NULL);
}

ooc_status_t ooc_factor(ooc_ctx_t *ctx, const char *input, const char *output,
                        const ooc_opts_t *opts, ooc_report_t *report) {
  const char *spec[4] = {input, NULL, NULL, output};
  return job_call(ctx, opts, report, JOB_FACTOR, spec, 0, 0, NULL, NULL, NULL);
}

ooc_status_t ooc_solve_factor(ooc_ctx_t *ctx, const char *factor, const char *b,
                              const char *output, const ooc_opts_t *opts, ooc_report_t *report) {
  const char *spec[4] = {factor, b, NULL, output};
  return job_call(ctx, opts, report, JOB_FACTORED, spec, 0, 0, NULL, NULL, NULL);
}

ooc_status_t ooc_logdet(ooc_ctx_t *ctx, const char *input, const ooc_opts_t *opts,
                        ooc_report_t *report, double *logdet) {
  const char *spec[4] = {input, NULL, NULL, NULL};
  return job_call(ctx, opts, report, JOB_LOGDET, spec, 0, 0, logdet, NULL, NULL);
}

ooc_status_t ooc_gemm(ooc_ctx_t *ctx, const char *a, const char *b, const char *c0,
                      const char *output, double alpha, double beta, const ooc_opts_t *opts,
                      ooc_report_t *report) {
  const char *spec[4] = {a, b, c0, output};
  return job_call(ctx, opts, report, JOB_PRODUCT, spec, alpha, beta, NULL, NULL, NULL);
}

/* The calls on matrix handles (api/matrix.h; matrix.c settled the options): a file handle is
 * its spec, any other its name, which job_open_input and resolve_output turn into the handle. */
ooc_status_t job_call_m(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                        job_kind_t kind, const ooc_matrix_t *a, const ooc_matrix_t *b,
                        const ooc_matrix_t *c, const ooc_matrix_t *out, double alpha, double beta,
                        double *logdet) {
  const ooc_matrix_t *hm[4] = {a, b, c, out};
  const char *s[4];
  for (int k = 0; k < 4; k++)
    s[k] = !hm[k] ? NULL : matrix_is_file(hm[k]) ? matrix_spec(hm[k]) : matrix_name(hm[k]);
  if ((unsigned)kind >= JOB_LSTSQ) /* least squares' _m call is job_lstsq_m (job_qr.c) */
    return OOC_FAIL(ctx, OOC_ERR_INTERNAL, "unknown call %d", (int)kind);
  return job_call(ctx, opts, report, kind, s, alpha, beta, logdet, hm, NULL);
}
