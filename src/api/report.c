/* report.c: options defaults, the start of a call (report.h) and the human / JSON forms of a
 * report. */
#include <math.h>
#include <string.h>

#include "api/report.h"
#include "base/memlimit.h"

void ooc_opts_default(ooc_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->method = OOC_METHOD_AUTO;
  o->device = OOC_DEVICE_AUTO;
  o->check = OOC_CHECK_AUTO;
  o->out_dtype = OOC_DTYPE_AUTO;
}

void report_begin(ooc_ctx_t *ctx, const ooc_opts_t *opts, ooc_report_t *rep, ooc_opts_t *o) {
  memset(rep, 0, sizeof *rep);
  rep->logdet = NAN;
  rep->pivot_growth = NAN;
  if (opts) *o = *opts;
  else ooc_opts_default(o);
  if (o->host_mem <= 0) /* the job's real limit, not the machine's (base/memlimit.h) */
    o->host_mem = ooc_default_host_mem(rep->host_limit, sizeof rep->host_limit);
  ooc_clear_error(ctx);
  ctx->interrupted = 0;
  ctx->stop_requested = 0;
  ctx->graceful = 0;
  ooc_note_step(ctx, 0, 0);
  ooc_ctx_reset_peak(ctx);
}

static int is_gemm(const ooc_report_t *r) { return strcmp(r->method, "gemm") == 0; }
static int is_iterative(const ooc_report_t *r) {
  return strcmp(r->method, "newton") == 0 || strcmp(r->method, "hyper7") == 0;
}

void ooc_report_print(const ooc_report_t *r, FILE *f) {
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
  if (is_gemm(r)) {
    fprintf(f, "oocsolve %s: product, (%lld x %lld)(%lld x %lld)", OOC_VERSION_STRING,
            (long long)r->n, (long long)r->gemm_k, (long long)r->gemm_k, (long long)r->nrhs);
  } else {
    fprintf(f, "oocsolve %s: %s, n = %lld", OOC_VERSION_STRING, r->kind, (long long)r->n);
    if (r->nrhs) fprintf(f, ", %lld right-hand sides", (long long)r->nrhs);
  }
  fprintf(f, " -> %s (%s)\n", r->output, r->out_dtype);
  fprintf(f, "  method  %s on %s, %s; tile %lld, stripe %lld (%lld steps)\n", r->method,
          r->backend, r->precision, (long long)r->tile, (long long)r->stripe,
          (long long)r->steps);
  if (r->resumed_step > 0)
    fprintf(f, "  resumed from the journal after step %lld\n", (long long)r->resumed_step);
  fprintf(f, "  time    %.3f s = read %.3f + compute %.3f + spill %.3f + write %.3f + check %.3f",
          r->t_total, r->t_read, r->t_compute, r->t_spill, r->t_write, r->t_check);
  if (r->t_commit > 0) fprintf(f, " + commit %.3f", r->t_commit);
  fprintf(f, "\n");
  if (r->t_floor > 0) {
    char rb[32], wb[32];
    fprintf(f, "  floor   disk floor %.*f s, %.2fx (input read once at %s/s, output written once "
            "at %s/s)\n", r->t_floor < 10 ? 3 : 1, r->t_floor, r->floor_ratio,
            ooc_fmt_bytes((int64_t)r->disk_read_bw, rb, sizeof rb),
            ooc_fmt_bytes((int64_t)r->disk_write_bw, wb, sizeof wb));
  }
  fprintf(f, "  speed   %.2f GFLOP/s in the compute phase (%.3g flop)\n", r->gflops, r->flops);
  if (r->bytes_spill_model > 0 && (r->bytes_spilled_elim > 0 || r->bytes_unspilled_elim > 0)) {
    char s1[32], s2[32], s3[32], s4[32];
    if (r->bytes_unspill_model == r->bytes_spill_model)
      fprintf(f, "  disk    elimination spilled %s, read back %s; the stripe arithmetic's most: "
              "%s each way\n", ooc_fmt_bytes(r->bytes_spilled_elim, s1, sizeof s1),
              ooc_fmt_bytes(r->bytes_unspilled_elim, s2, sizeof s2),
              ooc_fmt_bytes(r->bytes_spill_model, s3, sizeof s3));
    else
      fprintf(f, "  disk    elimination spilled %s, read back %s; the model's most: %s written, "
              "%s read\n", ooc_fmt_bytes(r->bytes_spilled_elim, s1, sizeof s1),
              ooc_fmt_bytes(r->bytes_unspilled_elim, s2, sizeof s2),
              ooc_fmt_bytes(r->bytes_spill_model, s3, sizeof s3),
              ooc_fmt_bytes(r->bytes_unspill_model, s4, sizeof s4));
  }
  fprintf(f, "  bytes   input %s, spilled %s, read back %s, output %s; host peak %s of %s\n",
          ooc_fmt_bytes(r->bytes_input, b1, sizeof b1), ooc_fmt_bytes(r->bytes_spilled, b2, sizeof b2),
          ooc_fmt_bytes(r->bytes_unspilled, b3, sizeof b3),
          ooc_fmt_bytes(r->bytes_output, b4, sizeof b4), ooc_fmt_bytes(r->host_peak, b5, sizeof b5),
          ooc_fmt_bytes(r->host_budget, b6, sizeof b6));
  if (r->bytes_kept_in_input > 0) {
    char k1[32], k2[32];
    fprintf(f, "  input   %s of A's tiles went back to the input instead of to scratch; %s read "
            "back from it\n", ooc_fmt_bytes(r->bytes_kept_in_input, k1, sizeof k1),
            ooc_fmt_bytes(r->bytes_reread_input, k2, sizeof k2));
  }
  if (r->host_limit[0]) fprintf(f, "  memory  default --host-mem %s\n", r->host_limit);
  for (int d = 0; d < r->ndevices && d < 16; d++) {
    char bi[32], bo[32], pk[32], bu[48] = "";
    if (r->device_budget[d] > 0) {
      char t[32];
      snprintf(bu, sizeof bu, " of %s", ooc_fmt_bytes(r->device_budget[d], t, sizeof t));
    }
    fprintf(f, "  device  %d: busy %.3f s, %s in, %s out, %.3g flop; memory peak %s%s\n",
            r->device_id[d], r->device_busy[d],
            ooc_fmt_bytes(r->device_bytes_in[d], bi, sizeof bi),
            ooc_fmt_bytes(r->device_bytes_out[d], bo, sizeof bo), r->device_flops[d],
            ooc_fmt_bytes(r->device_peak[d], pk, sizeof pk), bu);
  }
  if (strcmp(r->check, "none") == 0)
    fprintf(f, "  check   none (--check none)\n");
  else if (!strcmp(r->kind, "inverse") && !strcmp(r->check, "probe") && r->check_products > 0)
    fprintf(f, "  check   probe residual ratio %.3g (Hager-Higham estimate of ||I - A X||_1: %.3g, "
            "%d products)\n", r->residual, r->residual_norm1, r->check_products);
  else
    fprintf(f, "  check   %s residual ratio %.3g%s\n", r->check, r->residual,
            r->nrhs ? "" : "");
  if (strcmp(r->check, "none") != 0 && strncmp(r->kind, "lstsq", 5) != 0) { /* job.c's check */
    char cb[32];
    fprintf(f, "  reread  the check read %s back from the files in %.3f s\n",
            ooc_fmt_bytes(r->bytes_check_read, cb, sizeof cb), r->t_check);
  }
  if (r->rejected[0]) fprintf(f, "  kept    the rejected result as %s\n", r->rejected);
  if (!isnan(r->logdet) && !strcmp(r->method, "lu"))
    fprintf(f, "  logdet  log|det A| = %.17g, sign %+d\n", r->logdet, r->logdet_sign);
  else if (!isnan(r->logdet)) fprintf(f, "  logdet  log det A = %.17g\n", r->logdet);
  if (isfinite(r->pivot_growth)) fprintf(f, "  pivots  growth max|U| / max|A| = %.3g\n",
                                         r->pivot_growth);
  if (!strcmp(r->method, "rbt")) /* rbt.h: the parts, the refinement, the pivots */
    fprintf(f, "  rbt     depth %d, seed %lld, n padded to %lld; time transform %.3f + factor %.3f "
            "+ solve %.3f + refine %.3f s\n  refine  %d steps, backward error max|r| / (||A||_inf "
            "max|x|) %.3g before, %.3g after; %lld pivots below sqrt(eps) ||column||_1\n",
            r->rbt_depth, (long long)r->seed, (long long)r->rbt_n, r->t_transform, r->t_factor,
            r->t_solve, r->t_refine, r->iterations, r->berr_before, r->berr_after,
            (long long)r->tiny_pivots);
  if (is_iterative(r)) {
    fprintf(f, "  iterate %d steps, ||I - A V_k||_1:", r->iterations);
    for (int k = 0; k <= r->iterations && k < OOC_MAX_ITER_REPORT; k++)
      fprintf(f, " %.3g", r->iter_residual[k]);
    fputc('\n', f);
  }
  if (!r->nrhs && !is_gemm(r) && r->norm1_a > 0 && r->norm1_x > 0)
    fprintf(f, "  cond    kappa_1(A) = ||A||_1 ||A^-1||_1 = %.3g\n", r->norm1_a * r->norm1_x);
  if (r->warnings[0]) fprintf(f, "  notice  %s\n", r->warnings);
}

static void json_str(FILE *f, const char *key, const char *v, int comma) {
  fprintf(f, "\"%s\": \"", key);
  for (const char *p = v ? v : ""; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fprintf(f, "\"%s", comma ? ", " : "");
}

static void json_num(FILE *f, const char *key, double v) {
  if (isfinite(v)) fprintf(f, "\"%s\": %.6g, ", key, v);
  else fprintf(f, "\"%s\": null, ", key);
}

static void json_int(FILE *f, const char *key, int64_t v) {
  fprintf(f, "\"%s\": %lld, ", key, (long long)v);
}

void ooc_report_json(const ooc_report_t *r, ooc_status_t status, const char *error, FILE *f) {
  fputc('{', f);
  json_str(f, "version", OOC_VERSION_STRING, 1);
  json_str(f, "status", ooc_status_str(status), 1);
  json_int(f, "exit_code", ooc_status_exit_code(status));
  json_str(f, "error", error, 1);
  json_str(f, "kind", r->kind, 1);
  json_str(f, "method", r->method, 1);
  json_str(f, "backend", r->backend, 1);
  json_str(f, "precision", r->precision, 1);
  json_str(f, "out_dtype", r->out_dtype, 1);
  json_str(f, "output", r->output, 1);
  json_int(f, "n", r->n);
  json_int(f, "nrhs", r->nrhs);
  json_int(f, "tile", r->tile);
  json_int(f, "stripe", r->stripe);
  json_int(f, "steps", r->steps);
  json_int(f, "resumed_step", r->resumed_step);
  json_num(f, "t_read", r->t_read);
  json_num(f, "t_compute", r->t_compute);
  json_num(f, "t_spill", r->t_spill);
  json_num(f, "t_write", r->t_write);
  json_num(f, "t_check", r->t_check);
  json_num(f, "t_commit", r->t_commit);
  json_num(f, "t_total", r->t_total);
  json_num(f, "disk_read_bw", r->disk_read_bw > 0 ? r->disk_read_bw : NAN);
  json_num(f, "disk_write_bw", r->disk_write_bw > 0 ? r->disk_write_bw : NAN);
  json_num(f, "t_floor", r->t_floor > 0 ? r->t_floor : NAN);
  json_num(f, "floor_ratio", r->t_floor > 0 ? r->floor_ratio : NAN);
  json_num(f, "flops", r->flops);
  json_num(f, "gflops", r->gflops);
  json_int(f, "bytes_input", r->bytes_input);
  json_int(f, "bytes_spilled", r->bytes_spilled);
  json_int(f, "bytes_unspilled", r->bytes_unspilled);
  json_int(f, "bytes_kept_in_input", r->bytes_kept_in_input);
  json_int(f, "bytes_reread_input", r->bytes_reread_input);
  json_int(f, "bytes_output", r->bytes_output);
  json_int(f, "bytes_spill_model", r->bytes_spill_model);
  json_int(f, "bytes_unspill_model", r->bytes_unspill_model);
  json_int(f, "strips_read_ahead", r->strips_read_ahead);
  json_int(f, "bytes_spilled_elim", r->bytes_spilled_elim);
  json_int(f, "bytes_unspilled_elim", r->bytes_unspilled_elim);
  json_int(f, "host_budget", r->host_budget);
  json_int(f, "host_peak", r->host_peak);
  json_str(f, "host_limit", r->host_limit, 1);
  json_num(f, "norm1_a", r->norm1_a);
  json_num(f, "norm1_x", r->norm1_x);
  json_num(f, "residual", r->residual);
  if (isfinite(r->logdet)) fprintf(f, "\"logdet\": %.17g, ", r->logdet);
  else fprintf(f, "\"logdet\": null, ");
  json_int(f, "logdet_sign", r->logdet_sign);
  json_num(f, "pivot_growth", r->pivot_growth);
  json_str(f, "check", r->check, 1);
  json_num(f, "residual_norm1", r->residual_norm1);
  json_int(f, "check_products", r->check_products);
  json_int(f, "bytes_check_read", r->bytes_check_read);
  /* the first device's peak and budget (the getters'; every device's: "devices" below) */
  json_int(f, "device_peak", r->device_peak[0]);
  json_int(f, "device_budget", r->device_budget[0]);
  json_str(f, "rejected", r->rejected, 1);
  json_int(f, "info", r->info);
  /* gemm: the inner dimension; lstsq: A's rows m */
  if (is_gemm(r) || !strncmp(r->kind, "lstsq", 5)) json_int(f, "gemm_k", r->gemm_k);
  json_int(f, "iterations", r->iterations);
  json_int(f, "seed", r->seed);
  json_int(f, "rbt_depth", r->rbt_depth);
  json_int(f, "rbt_n", r->rbt_n);
  json_num(f, "berr_before", r->berr_before);
  json_num(f, "berr_after", r->berr_after);
  json_num(f, "t_transform", r->t_transform);
  json_num(f, "t_factor", r->t_factor);
  json_num(f, "t_solve", r->t_solve);
  json_num(f, "t_refine", r->t_refine);
  json_int(f, "tiny_pivots", r->tiny_pivots);
  fputs("\"iter_residual\": [", f);
  for (int k = 0; is_iterative(r) && k <= r->iterations && k < OOC_MAX_ITER_REPORT; k++) {
    if (isfinite(r->iter_residual[k])) fprintf(f, "%s%.6g", k ? ", " : "", r->iter_residual[k]);
    else fprintf(f, "%snull", k ? ", " : "");
  }
  fputs("], ", f);
  /* the devices the method ran on (issue 26): busy seconds (0: not measured), bytes, flops;
   * the memory peak and its budget (issue 18: on a GPU, --gpu-mem) */
  fputs("\"devices\": [", f);
  for (int d = 0; d < r->ndevices && d < 16; d++)
    fprintf(f, "%s{\"id\": %d, \"busy\": %.6g, \"bytes_in\": %lld, \"bytes_out\": %lld, "
            "\"flops\": %.6g, \"peak\": %lld, \"budget\": %lld}", d ? ", " : "",
            r->device_id[d], r->device_busy[d], (long long)r->device_bytes_in[d],
            (long long)r->device_bytes_out[d], r->device_flops[d],
            (long long)r->device_peak[d], (long long)r->device_budget[d]);
  fputs("], ", f);
  json_str(f, "warnings", r->warnings, 0);
  fputs("}\n", f);
}
