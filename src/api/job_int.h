/*
 * job_int.h: internal to src/api. The state of one library call (job_t) and the functions its
 * parts share: job.c runs the pipeline (open, plan, load, run the method, write, check,
 * commit); the methods' runs (methods.h's table) live beside it, one file each (job_gj.c,
 * job_chol.c, job_iter.c, job_gemm.c, job_lu.c, job_rbt.c, job_qr.c); checkpoint.c keeps what
 * makes a run resumable and leaves no state behind (the output's lock, the journal,
 * checkpoints, restoring the stores, stale scratch and journals). Nothing outside src/api
 * includes it.
 */
#ifndef OOC_JOB_INT_H
#define OOC_JOB_INT_H

#include <limits.h>

#include "api/ckpt_clock.h"
#include "api/classify.h"
#include "api/methods.h"
#include "api/plan.h"
#include "base/parloop.h"
#include "exec/exset.h"
#include "io/h5mat.h"
#include "io/journal.h"
#include "io/scratch.h"
#include "kernels/ops.h"
#include "solvers/chol.h"
#include "solvers/gj.h"
#include "solvers/iter.h"
#include "solvers/lu.h"
#include "solvers/oocgemm.h"
#include "tiling/tstore.h"

/* A store's scratch spread over this many files (scratch.h scratch_open_n, scratch_open_files),
 * so that the copy threads' writes do not queue on one file: a buffered write holds its file's
 * inode lock (ext4, xfs). Compressed scratch keeps one. */
#define JOB_SCRATCH_FILES 8

typedef struct spill_slot {
  struct job *job;
  const char *tag;
  int64_t tcols; /* the store's tile columns (job_spill_ops) */
  scratch_t *s;  /* the store's scratch (its JOB_SCRATCH_FILES files), NULL before its open */
  int must_exist; /* resuming: the journal has tiles in this store's scratch file */
} spill_slot_t;
/* The slot's scratch files closed (removed unless kept for a resume). */
void job_spill_close(spill_slot_t *sl);

typedef struct job {
  ooc_ctx_t *ctx;
  ooc_opts_t o;
  ooc_report_t *rep;
  const ooc_ops_t *ops;
  h5mat_t *in_a, *in_b, *out;
  char out_file[PATH_MAX], out_dset[512], scratch_dir[PATH_MAX];
  plan_t plan; /* api/plan.h; n .. fixed below are its numbers */
  int64_t n, m, b, W, budget, fixed;
  int64_t k;            /* A's columns: n, or the product's inner dimension (C is n x m) */
  double alpha, beta;   /* the product's C = alpha A B + beta C0 (beta 0 without C0) */
  tcache_t *cache;
  tstore_t *A, *B;
  spill_slot_t spill[2];
  double *colnorm;
  struct check_probe *probe; /* A V, formed during the load (check.h; NULL: a check reads A) */
  struct lu_fused *lufused;  /* the LU factor check's L (U T), formed while the factor is
                              * written (lu.h) */
  struct check_fused *fused; /* the inverse check's first product, formed during the load and
                                the write (check.h; NULL: the check rereads both files) */
  int64_t *perm;
  int method;      /* the entry of methods.h that runs, chosen after the input is read (on a
                      resume: the journal's) */
  job_kind_t kind; /* what the call asks (methods.h): JOB_LOGDET factors and writes nothing,
                      JOB_FACTOR writes the factor, JOB_FACTORED's input "A" is a factor file */
  int mirror_out;  /* the store holds a symmetric result's lower triangle (diagonal tiles with
                      zeros above): write_rows writes the upper triangle from its transpose */
  int f32;         /* the input (and by default the output) is float32 */
  /* Cholesky keeps only A's lower triangle (load): lower_load while loading so; classify_load:
   * the symmetry pre-pass runs during the load, its verdict in `verdict`; may_gj: auto may still
   * pick gj (then the load switches to the whole of A, upper_from: the first tile column read
   * whole) */
  int lower_load, classify_load, may_gj;
  int64_t upper_from;
  cl_verdict_t verdict;
  int cuda;        /* run the elimination on the GPU (pick_backend) */
  /* the devices a spreading method runs on (issue 26, pick_backend: --devices, else one, GPU 0
   * on CUDA); the executors for them come from job_executors */
  int ndev;
  int dev[EX_MAX_DEVICES];
  /* resumable runs (docs/RELIABILITY.md; the functions under "journal" below) */
  char jbase[PATH_MAX], jpath[PATH_MAX + 16], lockpath[PATH_MAX + 16];
  int lock_fd;       /* -1, or the locked "<jbase>.lock" */
  int journaled;     /* checkpoints on: scratch at fixed names, two banks per tile */
  int resuming;      /* the stores come from the journal, not the input */
  int jr_owned;      /* the journal at jpath is this run's (written or adopted) */
  journal_t *jr;     /* read by prepare_journal, consumed by restore_stores */
  jr_ident_t ident;  /* this run's identity */
  ckpt_clock_t clock; /* when checkpoints are due (ckpt_clock.h) */
  int64_t committed_steps, steps_done, nsteps, resume_step;
  double resume_logdet; /* chol: the journal's log-determinant sum */
  /* LU: the journal's state (rowsum owned, freed by job_cleanup) and stripe; the step whose
   * checkpoint step_due promised (ckpt_lu_step_due), -1 none */
  lu_state_t lu_state0;
  int64_t resume_stripe, lu_due_step;
  ooc_exec_t *cx;     /* the CUDA executor QR runs on (Cholesky's are job_chol.c's own set) */
  ooc_task_t wb; /* the output's writeback during the check (job.c writeback_start) */
  /* LU on the GPU made before the load (job_lu_prepare): its executor pins the tile cache's
   * buffers as the load makes them, and the run moves them in place; its stripe and slots */
  ooc_exec_t *lu_gx;
  int64_t lu_W;
  int lu_K;
  /* LU's factor with its final row swaps left to the writer (lu.h LU_SWAPS_WRITER): where each
   * row of the result lies in j->A (empty: A is in LAPACK's layout); freed by job_cleanup */
  ts_rowmap_t lu_rowmap;
  /* newton/hyper7, LU's inverse, rbt and the product: the extra stores, their scratch, and the
   * store holding the result when it is not A (or B) */
  tstore_t *iv[ITER_MAX_STORES];
  spill_slot_t ispill[ITER_MAX_STORES];
  tstore_t *result;
  h5mat_t *in_c;    /* gemm: C0 */
  ooc_exec_t *gx;     /* gemm, newton/hyper7 on the GPU: the products' executor */
  gemm_dev_t *gdev;   /* and their buffers on it */
  /* the product over several devices (issue 26; also one GPU): the executors (gx is the
   * first) and each one's buffers (gdev is the first's) */
  ex_set_t gxs;
  gemm_dev_t *gdevs[EX_MAX_DEVICES];
  double iter_flops; /* the flops of a method that counts its own (method_t.flops NULL) */
  int64_t extra_spilled, extra_unspilled; /* spill traffic of stores already destroyed */
  /* Bytes that load() and write_rows() may use beyond their n x tile strip while the solver's
   * workspace is not allocated (wider strips, h5mat's chunk buffers); 0: the minimum. */
  int64_t io_room;
  /* A's loader while the method reads A as it needs it (issue 27; job_load_inputs begins it
   * where job.c lazy_room allows, the method's need hook pulls from it, job_lazy_finish ends it),
   * and the seconds spent in it after job_load_inputs (the run's share of t_read) */
  struct job_loader *aload;
  double t_aload;
  int lazy;           /* A was read that way in this run */
  int lazy_failed;    /* and job_lazy_finish failed (the input's fault: job_lazy_settle) */
  double t_await;     /* of t_aload, the seconds A's loader waited for its thread's strips */
  int64_t lazy_ahead; /* host bytes its read-ahead's strips may take (job.c lazy_room) */
  int64_t lazy_strips; /* strips A's lazy loader's thread read (its report line) */
  int64_t ahead_strips; /* strips every load's read-ahead thread read (report.strips_read_ahead) */
  /* LU (job_lu.c): lu_in: the input "A" of solve --factor is an LU factor file (L\U, with its
   * pivots read into ipiv); ipiv: the pivots (n, 0-based) of a factor run or of the file */
  int lu_in;
  int64_t *ipiv;
  double norminf_a; /* ||A||_inf, from the factorization (written to an LU factor file) */
  /* the _m calls (api/matrix.h): the handles of A, B, C0 and the output; NULL or a file handle:
   * the spec string as given */
  const struct ooc_matrix *hm_a, *hm_b, *hm_c, *hm_out;
  /* A call that writes two outputs (ooc_lstsq_m: x beside the state file): the second, its
   * handle, created after the first and committed with it. */
  h5mat_t *out2;
  const struct ooc_matrix *hm_out2;
  /* Set by a streamed method's open (methods.h), for the pipeline: the file the default output
   * name derives from (NULL: the input jobs[] names), the default dataset (NULL: the job's),
   * and whether the output is a file of several datasets (--out names a file, not a dataset;
   * the output holds the first dataset, n x n) */
  const char *out_from, *out_dset0;
  int out_file_only;
  int method_asked;   /* the call's --method (the product and lstsq run their own entry) */
  struct qr_job *qr;  /* least squares' own arguments and state (job_qr.c) */
} job_t;

/* ---- job.c, used by checkpoint.c and the methods' runs ---- */

/* The scratch file of the store tagged `tag` ("A", "B", "V0", ...) at its fixed name. */
void job_scratch_name(const job_t *j, const char *tag, char *out, size_t cap);
/* Read an input into a store a strip at a time (NaN/Inf check, column norms, A's lower triangle
 * for Cholesky, the symmetry pre-pass, the journal's content hash): job.c says more. */
ooc_status_t job_load(job_t *j, tstore_t *ts, h5mat_t *src, double *colnorm);
/* The loader: job_load in steps, so that a caller may read the input as it needs it (issue 27:
 * computing while the input is read). begin allocates the strip (it fits j->io_room, as
 * job_load's); upto(c) reads, checks and stores the strips up to one that holds column c - 1
 * (whole strips); end reads the rest, the upper tiles an auto run found it needs (load_upper)
 * and the journal's content hash, and frees the loader (also on failure); free alone abandons
 * one (a failure elsewhere). colnorm[0, cols) is final for the columns read. */
typedef struct job_loader job_loader_t;
ooc_status_t job_loader_begin(job_t *j, tstore_t *ts, h5mat_t *src, double *colnorm,
                              job_loader_t **out);
ooc_status_t job_loader_upto(job_loader_t *L, int64_t c);
/* From now on a thread of its own reads the next strips (HDF5 and the source's h5mat are its
 * own until upto has put them, or end or free) into buffers of at most `room` bytes in all
 * (at most JOB_AHEAD_STRIPS of them), while the caller works: upto then waits only for strips
 * not read yet. The caller must not call HDF5 meanwhile (the library is not thread-safe); the
 * context it may use (base.h "Threads"). A caller's array or callback as the source, a store
 * with a source of its own (tstore.h ts_has_source), fewer than two strips' room, memory for
 * fewer, or a thread that cannot start: nothing changes; a second call changes nothing either. A read that
 * fails is reported by the upto that needs that strip; its message is the thread's. */
#define JOB_AHEAD_STRIPS 64
void job_loader_ahead(job_loader_t *L, int64_t room);
/* The read-ahead stopped (its thread joined: the context's failure record and HDF5 are the
 * caller's alone again); what it read stays for upto, which reads the rest itself. */
void job_loader_hold(job_loader_t *L);
ooc_status_t job_loader_end(job_loader_t *L);
void job_loader_free(job_loader_t *L);
/* A's loader (j->aload) through to its end, then what job_load_inputs checks after a load
 * (job.c scale_check); nothing when none is open. Its time counts in j->t_aload. */
ooc_status_t job_lazy_finish(job_t *j);
/* A method's need hook (lu_args_t.need, chol_args_t.need; user = the job): A's columns [0, c)
 * through the loader, all of it and the checks of a whole load (job_lazy_finish) at c = n. */
ooc_status_t job_lazy_need(void *user, int64_t c);
/* After the method ran with A read as it asked (st its status): the rest read and checked
 * (job_lazy_finish). Where st failed and so does the rest of the load, the load's failure is
 * the run's (the input's own fault, an entry NaN or every entry zero, not the method's verdict
 * on the part it saw, a singular column or a minor not positive) and *load_failed = 1; else st
 * with its message. A run that read so and succeeded says so in its report: "<tag>: A read
 * while <during> ran (...)". Nothing when A was read first. */
ooc_status_t job_lazy_settle(job_t *j, ooc_status_t st, const char *tag, const char *during,
                             int *load_failed);

/* The spill ops of a store of `cols` columns (in tiles of j->b) whose scratch is described by
 * sl (job.c's adapters). cols only spreads the files (scratch.h scratch_file_of keeps the slots
 * unique for any count: RBT's padded stores, whose tile is its own, pass n). */
ooc_spill_ops_t job_spill_ops(spill_slot_t *sl, int64_t cols);
/* Open an input into *out: the file spec, or, when out is &j->in_a, &j->in_b or &j->in_c, that
 * input's _m handle if it is not a file (hm_a, hm_b, hm_c). */
ooc_status_t job_open_input(job_t *j, const char *spec, h5mat_t **out);
/* Create the cache and stores and fill them from the inputs (job.c says more); and their undoing
 * (the stores, their scratch and the cache destroyed, the spill traffic kept for the report). */
ooc_status_t job_load_inputs(job_t *j);
void job_unload_inputs(job_t *j);
/* The job a Cholesky does for a call of this kind (CHOL_*, chol.h). */
int job_chol_job(job_kind_t kind);
/* An executor's figures (busy seconds, bytes in and out, flops, its memory peak and budget:
 * exec.h's stats.mem_peak and mem_budget) into the report's entry for device `dev`: a new
 * entry, or added to the one an earlier executor of the call on that device made (the larger
 * peak, the later budget). Beyond the report's 16 slots: nothing. */
void job_report_exec(job_t *j, int dev, const ooc_exec_t *x);
/* After a method ran on the GPU executor *ex (NULL: none): its figures into the report's entry
 * for the job's first device (job_report_exec), its device peak against its budget into the
 * report's notices, "GPU peak <peak> of <budget_name> <budget> (<what>, stripe W)"; then *ex
 * destroyed and NULL. */
void job_gpu_done(job_t *j, ooc_exec_t **ex, const char *budget_name, const char *what,
                  int64_t W);

/* The executors of a method that spreads over the job's devices (issue 26), made here for every
 * method: one per j->dev, each with nqueues queues and the same budget (budgets are per
 * device): host executors over j->ops with `host_budget` bytes of ex_alloc on the CPU
 * backends (each its own worker threads: how --devices 0,1 presents two host devices), CUDA
 * executors (--gpu-mem each; the trace only on the first) on the GPU. The first is the one a
 * method that does not spread runs on. */
ooc_status_t job_executors(job_t *j, int nqueues, int64_t host_budget, ex_set_t *xs);
struct ex_cuda_config; /* exec/cuda/exec_cuda.h (through exec/plugin.h where it is used) */
/* The same for the first ndev of the job's devices (1: a method that does not spread), with a
 * CUDA configuration to copy for every GPU (its device and trace set per device; NULL:
 * job_executors' own); host executors as above. */
ooc_status_t job_executors_cfg(job_t *j, const struct ex_cuda_config *cfg, int ndev,
                               int nqueues, int64_t host_budget, ex_set_t *xs);
/* After the method: every executor finished, its figures into the report (job_report_exec:
 * per device busy seconds, bytes in and out, flops, memory peak and budget; on a GPU the peak
 * against --gpu-mem in the notices, as job_gpu_done), then destroyed. Returns the first late
 * failure. */
ooc_status_t job_executors_done(job_t *j, ex_set_t *xs, const char *what, int64_t W);

/* gj.h and chol.h "Direct moves" for their sweeps: off unless OOCSOLVE_SWEEP_DIRECT=1 (on CUDA
 * only), because on one GPU and on two H200s they were no faster (gj.h, chol.h: pinning the
 * cache as first lent costs more than the gathers it saves). job_sweep_direct_note: the
 * report's notice of what moved in place. */
int job_sweep_direct(const job_t *j);
void job_sweep_direct_note(job_t *j, const char *what, int64_t moved, int64_t swept,
                           int64_t pinned, int64_t refused);

/* ---- job_gj.c, used by methods.c ---- */

/* Gauss-Jordan (gj_run; journaled, resumable). */
ooc_status_t job_gj_run(job_t *j, int64_t *steps);

/* ---- job_chol.c, used by methods.c ---- */

/* Cholesky (chol_run); under auto a matrix that is not positive definite is reloaded and handed
 * to gj (an inverse) or lu (a solve, a determinant): j->method changes. */
ooc_status_t job_chol_run(job_t *j, int64_t *steps);

/* ---- job_iter.c, used by methods.c ---- */

/* newton, hyper7 (iter_run): the inverse in one of the extra stores (j->result). */
ooc_status_t job_iter_run(job_t *j, int64_t *steps);

/* ---- job_gemm.c, used by methods.c and job_iter.c ---- */

/* The product (gemm_run) into the store j->iv[0] (C0 loaded there when beta != 0). */
ooc_status_t job_gemm_run(job_t *j, int64_t *steps);
/* The products' executor and buffers on the GPU (MB x NB blocks, panels KB): j->gx, j->gdev; with
 * spread, on every device of the job (j->gxs, j->gdevs; issue 26), and on the CPU backends with
 * several devices as many host devices (one slot and one C buffer each, gemm_run's host shape);
 * nothing on one CPU device (gemm_run makes its own host executor). */
ooc_status_t job_gemm_gpu_open(job_t *j, int64_t MB, int64_t NB, int64_t KB, int spread);
/* After the products on the GPU executor(s): their figures into the report's notices and
 * devices, then the buffers and the executors freed. Returns the first late device error. */
ooc_status_t job_gemm_gpu_done(job_t *j, int64_t block, int64_t kblock, int slots, int ncblk,
                               const gemm_stats_t *gs);

/* ---- job_lu.c, used by job.c ---- */

/* solve --factor: is the input an LU factor file (attribute factor = "lu", or --method lu)? */
int job_lu_is_factor_file(job_t *j);
/* The pivots of an LU factor file into j->ipiv (the dataset its "ipiv" attribute names). */
ooc_status_t job_lu_read_ipiv(job_t *j);
/* Run LU for the job (factor, solve, solve from the factor file, inverse, logdet); *steps =
 * stripes factored. An inverse leaves (LU)^-1 in a new store (j->result) and the writer's
 * column permutation in j->perm. */
ooc_status_t job_lu_run(job_t *j, int64_t *steps);
/* The CUDA executor for an LU of n x n with tile b (job_lu.c says how it is sized); *W in: the
 * host plan's stripe, out: the device's; *K the ring slots. *out NULL: the CPU runs it. */
ooc_status_t job_lu_device(job_t *j, const char *who, int64_t n, int64_t b, ooc_exec_t **out,
                           int64_t *W, int *K);
/* --method lu on the GPU, not resumed: the executor made before the load (j->lu_gx, lu_W,
 * lu_K), so that the load pins the tiles it makes (job_load_inputs) and job_lu_run moves them
 * by DMA in place (lu.h "Direct moves"). Nothing when LU runs on the CPU. */
ooc_status_t job_lu_prepare(job_t *j);
/* LU's executor (j->lu_gx, made by job_lu_prepare or job_lu_run) destroyed, the tile cache's
 * pinner unset first where it is that executor: a run that stops early, and job_cleanup. */
void job_lu_release(job_t *j);
/* The check of an LU factor (JOB_FACTOR) or of a solve from an LU factor file (j->lu_in). */
ooc_status_t job_lu_check(job_t *j, const ooc_source_t *A, const ooc_source_t *B,
                          const ooc_source_t *X, int full, double eps, int64_t mem);
/* LU_INVERT's result store Z (j->iv[0], scratch tag "Z"), if not made yet: job_lu_run, and
 * ckpt_restore_stores for a journal of an LU inverse (its second store). */
ooc_status_t job_lu_result_store(job_t *j);
/* An LU factor's attributes and its pivots dataset, before the commit. */
ooc_status_t job_lu_commit_extra(job_t *j);

/* ---- job.c, used by the calls of job_qr.c ---- */

/* Run one call of the pipeline: the job `kind` on the inputs spec (A, B, C0) into the output
 * spec[3]; alpha, beta: the product's; logdet: ooc_logdet's; hm: the _m calls' handles (A, B,
 * C0, output; NULL: none); qr: least squares' arguments (job_qr.c; freed by job_qr_cleanup). */
ooc_status_t job_call(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *report,
                      job_kind_t kind, const char *const spec[4], double alpha, double beta,
                      double *logdet, const struct ooc_matrix *const *hm, struct qr_job *qr);

/* ---- job_qr.c, used by methods.c and job.c ---- */

/* Least squares' entry (methods.h's open, plan and run for JOB_LSTSQ, JOB_LSTSQ_UPDATE): open
 * A and b (or the state and the update's matrices), plan the row blocks (plan_qr), and fold,
 * solve, check and write the state file (and x) into the outputs the pipeline created. */
ooc_status_t job_qr_open(job_t *j, const char *const spec[4]);
ooc_status_t job_qr_plan(job_t *j);
ooc_status_t job_qr_run(job_t *j, int64_t *steps);
/* Frees what j->qr holds (NULL: nothing). */
void job_qr_cleanup(job_t *j);

/* ---- job_rbt.c, used by job.c ---- */

/* --method rbt (solve): the butterfly, LU without pivoting and refinement against the loaded A
 * (solvers/rbt.h); X goes into j->B for the writer; the report gets rbt's numbers. */
ooc_status_t job_rbt_run(job_t *j, int64_t *steps);

/* ---- checkpoint.c, used by job.c ---- */

/* One input's content hash (jr_input_t.sample) from the strips job_load reads. */
void ckpt_hash_cols(const job_t *j, const double *strip, int64_t rows, int64_t c0, int64_t nc,
                    uint64_t *hashes);
int ckpt_path_exists(const char *p);
/* Unjournaled scratch of killed runs (dead pid, lock free) beside this run's. */
void ckpt_remove_stale_spills(job_t *j);
/* The output's lock, and what a killed run for the same output left (temporaries, scratch). */
ooc_status_t ckpt_claim_output(job_t *j);
/* Before the load: the lock, an existing journal (refused, or adopted with --resume after its
 * identity is checked), and whether this run journals. */
ooc_status_t ckpt_prepare(job_t *j);
/* --resume under --method auto: the method the journal at j->jpath ran (OOC_METHOD_CHOL, _LU or
 * _GJ), so that the plan is the resumed method's; -1 when there is no readable journal (then
 * ckpt_prepare says what is wrong with it, or starts from the beginning). */
int ckpt_journal_method(job_t *j);
/* --resume: the stores from the journal instead of the input. */
ooc_status_t ckpt_restore_stores(job_t *j);
/* The checkpoint policy of the run that starts: every --checkpoint seconds (in core and out of
 * core), or every step; the clock starts here. */
void ckpt_start(job_t *j);
/* The methods' after-step hooks (gj_args_t.after_step, chol_args_t.after_step). */
ooc_status_t ckpt_after_step(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv);
ooc_status_t ckpt_chol_after_step(void *user, int64_t step, int64_t nsteps, double logdet);
/* LU's (lu_args_t.step_due, .after_step): step_due decides whether the step is checkpointed
 * (LU then keeps the next stripe in the store), after_step checkpoints when it said so. */
int ckpt_lu_step_due(void *user, int64_t step, int64_t nsteps, int before);
ooc_status_t ckpt_lu_after_step(void *user, int64_t step, int64_t nsteps, const int64_t *ipiv,
                                const lu_state_t *state);
/* A resumed run refused after its stores were restored (LU's stripe differs): the journal
 * and its scratch stay as they were, for a rerun with the right options. */
void ckpt_disown(job_t *j);
/* The journal and its scratch are no longer needed (the result is out of the stores). */
ooc_status_t ckpt_drop(job_t *j);
/* At the end of a call, whatever its status: keep the journal of an interrupted run that can be
 * resumed (and say so), remove everything else; returns the call's status. */
ooc_status_t ckpt_settle(job_t *j, ooc_status_t st);

#endif
