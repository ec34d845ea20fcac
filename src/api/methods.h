/*
 * methods.h: internal to src/api. The method table: one entry per method (issue 18), the only
 * place a method registers with the API layer. An entry says what the pipeline (job.c) and the
 * planner (plan.c) must know of a method and nothing else: its name, the jobs it serves, its
 * flop count for a job, its host workspace at a stripe, and its run on the loaded stores.
 *
 * Contract
 * - The table is indexed by method id: ooc_method_t's values (OOC_METHOD_AUTO .. _RBT, the ones
 *   --method names), METHOD_GEMM, the product's, and METHOD_QR, least squares', which no option
 *   selects (ooc_gemm, ooc_lstsq* do).
 * - auto is an entry too: the jobs it serves are those a call may leave to the choice (job.c's
 *   choose_method); it has no run, flops or workspace of its own (the planner covers the methods
 *   it may pick).
 * - method_check is the one validity test of a call's method for its job, before any input is
 *   read: OOC_ERR_ARG with the message the CLI has always printed.
 * - run(j, &steps) runs on the stores job.c loaded, fills the report's method-specific fields and
 *   leaves the result where the writer looks (j->result, else j->B, else j->A). It may hand the
 *   job to another method by changing j->method (Cholesky's fallback under auto, after it
 *   reloaded the stores): the pipeline then runs that entry.
 */
#ifndef OOC_API_METHODS_H
#define OOC_API_METHODS_H

#include "oocsolve.h"
#include "base/base.h"

struct job;
struct plan;

/* What a call asks of a method (the public calls: ooc_invert .. ooc_gemm). */
typedef enum {
  JOB_INVERT,   /* A^-1 */
  JOB_SOLVE,    /* X = A^-1 B */
  JOB_FACTOR,   /* a factor of A written */
  JOB_FACTORED, /* X = A^-1 B from a factor file */
  JOB_LOGDET,   /* log|det A|, nothing written */
  JOB_PRODUCT,  /* C = alpha A B + beta C0 */
  JOB_LSTSQ,    /* min ||A x - b||_2: x and the QR state file (job_qr.c) */
  JOB_LSTSQ_UPDATE, /* a QR state updated into a new one (add rows, remove or add columns) */
  JOB_KINDS
} job_kind_t;
#define JOB_BIT(kind) (1u << (kind))

/* The product's and least squares' entries: after the ids --method names. */
#define METHOD_GEMM (OOC_METHOD_RBT + 1)
#define METHOD_QR (METHOD_GEMM + 1)
#define METHOD_COUNT (METHOD_QR + 1)

typedef struct method {
  unsigned jobs; /* JOB_BIT()s of the jobs it serves */
  /* What the load keeps of A for it (job.c): classify, the symmetry pre-pass runs during the load
   * (classify.h: auto and chol decide by it, newton and hyper7 choose V_0); lower, only the lower
   * triangle is stored while the matrix may be for Cholesky. */
  int classify, lower;
  /* Where A overflows the tile cache (and its input backs the tiles: job.c input_backs_tiles),
   * the load keeps A's first tile columns and leaves the rest in the input (tstore.h
   * TS_LOAD_KEEP), for a method whose first step starts there: LU's left-looking factor (the
   * LRU order kept the last columns, which the first stripe evicted unread, so every tile was
   * read twice). Without it the load keeps the last ones (LRU), where gj's and chol's first
   * sweep starts (their first step sweeps right to left: chol.c scol, gj.c gj_targets). */
  int keep_first;
  /* Its runs are never journaled (checkpoint.c): no journal, its stores' scratch under the
   * names a killed run's successor removes, --resume starts over with a notice. */
  int unjournaled;
  /* For a job it does not serve that is not a factor's: what it does instead (method_check). */
  const char *refusal;
  /* The usual flop count of a job of order n with m right-hand sides (what GFLOP/s are quoted
   * against); NULL: its run counts the flops it did (j->iter_flops). */
  double (*flops)(job_kind_t kind, double n, double m);
  /* Host bytes outside the tile cache at stripe (or block) W for the plan p (plan_ws). */
  int64_t (*ws)(const struct plan *p, int64_t W);
  ooc_status_t (*run)(struct job *j, int64_t *steps);
  /* A method that streams its inputs instead of loading them into tile stores (QR: blocks of
   * rows of a matrix that is not square) opens them itself (spec: the call's A, B, C, output;
   * sets j->n, m, k and the output's shape j->out_rows x j->out_cols) and has its blocks planned
   * (plan.c decides: plan_qr; the hook hands it the sizes, makes a GPU executor and sets j->plan,
   * j->b, W, budget); its run then reads, computes, checks and writes the output's datasets.
   * The pipeline does the rest: backend, output name, lock, output created, commit, report. */
  ooc_status_t (*open)(struct job *j, const char *const spec[4]);
  ooc_status_t (*plan)(struct job *j);
} method_t;

/* The entry of method id; NULL outside the table. */
const method_t *method_get(int id);

/* The methods' names indexed by id, NULL-terminated after rbt: the option parser's list (what
 * --method accepts), the report's and the journal's. */
extern const char *const method_names[];
/* The name of id, "gemm" for the product, "?" outside the table. */
const char *method_name(int id);

/* May method id do the job? Else OOC_ERR_ARG naming `input`: for a factor's job (factor, solve
 * --factor, logdet) the methods that do it, else what the method does instead. */
ooc_status_t method_check(ooc_ctx_t *ctx, int id, job_kind_t kind, const char *input);

#endif
