/*
 * gemm_model.h: the predicted time of the out-of-core product's schedule on an executor
 * (oocgemm.c on an executor, e.g. the GPU), and the plan that picks its buffers.
 *
 * Model: the schedule's calls are replayed in gemm_run's order (blocks row by row, serpentine
 * over block columns, panels alternating direction, the previous block's store spread over the
 * next block's panels after the first nslots - 1, the ends of GEMM_END_FIRST/GEMM_END_LAST cut
 * the same way) against four resources, each busy one thing at a time:
 *   host     gathers panels (bytes / gather), stores C tiles (bytes / store), and waits: for a
 *            slot's last product before refilling it, for a C column's copy back before storing;
 *   copy     H2D of panels and C loads, in call order, each after the host filled it (h2d);
 *   compute  the GEMMs (flops / flops), each after its panel's copy;
 *   back     D2H of C in the executor's chunks (d2h), each after its columns' products.
 * What it leaves out: the host's prefill (the cold case), call latencies, the GEMM's speed
 * depending on its shape, and the two copy directions slowing each other (d2h is taken as the
 * rate under H2D). Its rates were fitted to the H100 runs of docs/NUMERICS.md (n = 49152: three
 * slots within 0.5%, two slots 6% fast): the sustained DGEMM rate of a 5 s product, ~52 TFLOP/s,
 * is what fits, not the 65 of a short in-core GEMM.
 *
 * Cost: O(blocks x panels) per prediction; above GEMM_MODEL_MAX_STEPS panels in all, panels are
 * grouped (wider ones modelled) so a plan stays in milliseconds.
 */
#ifndef OOC_GEMM_MODEL_H
#define OOC_GEMM_MODEL_H

#include "base/base.h"

typedef struct gemm_rates {
  double flops;  /* sustained GEMM flop/s of the device */
  double gather; /* host bytes/s from the tile store into pinned panels */
  double store;  /* host bytes/s from the pinned C block into the tile store */
  double h2d;    /* panel bytes/s to the device */
  double d2h;    /* C bytes/s back */
} gemm_rates_t;

/* The rates of the GPU hosts (H100/H200, 16 copy threads), fitted as said above. */
gemm_rates_t gemm_rates_gpu(void);

typedef struct gemm_shape {
  int64_t m, n, k, b; /* C = A B: m x n, inner k, tile b */
  int64_t s, kb;      /* block edge and panel width (multiples of b, as gemm_run rounds them) */
  int nslots, ncblk;  /* panel slots, C buffers */
  int ends;           /* GEMM_END_* bits in effect (oocgemm.h) */
  int load;           /* beta != 0: each C block is taken from the store and copied up */
} gemm_shape_t;

typedef struct gemm_pred {
  double total;  /* seconds from the first gather to the last put */
  double device; /* GEMM seconds: what the device cannot do without */
  double head;   /* seconds before the first GEMM starts */
  double tail;   /* seconds after the last GEMM ends */
  double host;   /* seconds the host gathers and stores (the rest of total it waits) */
  double h2d_bytes, d2h_bytes;
  int64_t blocks;
} gemm_pred_t;

#define GEMM_MODEL_MAX_STEPS ((int64_t)1 << 18)
#define GEMM_MODEL_SLOW_HOST 0.7 /* the plan's second look: the host's rates times this */

/* Predict the schedule of sh (sh->s and sh->kb as gemm_run would use them). */
void gemm_model(const gemm_shape_t *sh, const gemm_rates_t *r, gemm_pred_t *out);

/* Bytes of an executor's buffers: ncblk C blocks of MB x NB and nslots panel pairs (MB x KB,
 * KB x NB), 8 bytes an element (the device's, and as many pinned on the host). */
int64_t gemm_exec_bytes(int64_t MB, int64_t NB, int64_t KB, int nslots, int ncblk);

/* The plan for an m x n x k product with tile b whose executor buffers may take `budget` bytes:
 * panels of one tile (kb = b: the panel width does not change the flop per byte, and a narrow
 * first panel starts the device sooner); for each of one or two C buffers and two or three
 * slots, the largest block that fits and the even splits of the same or a few more blocks per
 * dimension (as many blocks, same bytes moved, but no thin remainder block whose products are
 * too few to hide its panels' gather); of these the fastest by gemm_model, taking the worse of
 * the rates r and a host GEMM_MODEL_SLOW_HOST as fast (robust to the part that varies), ties to
 * the earlier (fewer buffers, fewer slots, larger block). Returns 0 (and *best zeroed) if not
 * even a block of one tile fits; else 1, with *best (ends as given) and its prediction at the
 * rates r in *pred (may be NULL). */
int gemm_model_plan(int64_t m, int64_t n, int64_t k, int64_t b, int64_t budget, int ends, int load,
                    const gemm_rates_t *r, gemm_shape_t *best, gemm_pred_t *pred);

#endif
