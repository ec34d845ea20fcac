#!/usr/bin/env bash
# gpu_mgpu.sh: issue 26 (several GPUs in one node) on a multi-GPU host, one device call:
#   bash .devdeps/on-device bash tools/gpu_mgpu.sh
# 1. test_mgpu: the host-device suites, then gj_x (gj on the executor) on GPU 0 alone and on
#    GPUs 0,1 (0-2, 0-3 where they exist), n = MGPU_N (default 4096), tile MGPU_TILE (512),
#    --gpu-mem MGPU_GPUMEM per GPU (1G: several steps): "MGPU" lines with the times, the
#    speedup over one GPU, whether the result is bit-identical, and the inverse ratio.
# 2. the CLI, every run in this one call so the scaling is against one GPU of the same host:
#    gj inverse of n = N (65536, random) and chol inverse of n = NC (98304, Matern SPD), with
#    --gpu-mem GPUMEM (16G) per GPU, --devices 0 then 0,1 (then 0,1,2,3 with four GPUs):
#    RESULT lines (status, the devices the report lists, stripe, steps, compute and total
#    seconds, the check's residual ratio) and SCALING lines (one GPU's compute time over the
#    run's). gj and the Cholesky inverse out of core spread over the listed devices;
# 3. the product (which spreads through the pipeline): gemm of two n = NG (49152) random
#    matrices, --gpu-mem GPUMEM per GPU, --devices 0 vs 0,1 (vs 0,1,2,3), RESULT and SCALING
#    lines as above (the check is the product's probe).
# Environment: N, NC, NG, GPUMEM, TILE (4096), DTYPE (f64; f32 halves the files: the full chol
# run's input and output are 72 GiB each in f64), CHECK (auto: the probe above n = 2048),
# HOSTMEM (--host-mem for every run; default: the CLI's own. The multi-GPU kinds' MemTotal starts
# at 31 GiB and grows as memory is used, so the default budget, half of it, is far too small
# there: give e.g. 96G on nvidia-h200-x2),
# RUNS (the runs of each method, each a --devices list with an optional :0 or :1 for
# OOCSOLVE_SWEEP_DIRECT, the sweeps' direct moves, job_int.h; default: "0 0,1" (and 0,1,2,3),
# the CLI's own choice; e.g. RUNS="0 0,1:0 0,1:1"; scaling is against the first run),
# LIMIT (seconds, 560), SKIP ("test gj chol gemm": stages to leave out), NOBUILD=1 (reuse $B),
# D (the data directory, /tmp/d-mgpu), DEVICE (cuda; cpu tries the script here). Smoke run: N=4096 NC=4096 GPUMEM=1G TILE=1024.
# The summary lines go to $OUT/summary.txt too; JSON reports and logs under $OUT.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
B=${B:-/tmp/b-mgpu}
OUT=${OUT:-/tmp/gpu_mgpu_out}
N=${N:-65536}
NC=${NC:-98304}
NG=${NG:-49152}
GPUMEM=${GPUMEM:-16G}
TILE=${TILE:-4096}
DTYPE=${DTYPE:-f64}
CHECK=${CHECK:-auto}
D=${D:-/tmp/d-mgpu}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT" "$D"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "[$(el) s] $NGPU GPUs" | tee -a $OUT/summary.txt
nvidia-smi topo -m > $OUT/topo.txt 2>&1 || true
free -g | tee -a $OUT/summary.txt
[ -n "${NOBUILD:-}" ] || gpu_build $OUT/build.log oocsolve_bin oocgen_bin test_mgpu

if ! skip test; then
  (cd $B && timeout $(($(left) / 3)) ./test_mgpu > $OUT/test_mgpu.log 2>&1; echo "test_mgpu rc=$?") |
    tee -a $OUT/summary.txt
  grep -E "^MGPU|Test:.*(FAILED|passed)|asserts|skipped" $OUT/test_mgpu.log | tee -a $OUT/summary.txt
  echo "[$(el) s] test_mgpu done"
fi

LISTS="0 0,1"
[ "$NGPU" -ge 4 ] && LISTS="$LISTS 0,1,2,3"
if [ "$DEVICE" = cuda ] && [ "$NGPU" -lt 2 ]; then
  LISTS=0
  echo "one GPU: the CLI runs only --devices 0" | tee -a $OUT/summary.txt
fi

sum() { # tag json: a RESULT line from an oocsolve --json report; prints t_compute last
  python3 -c "
import json, sys
t = open(sys.argv[2]).read().strip().splitlines()
d = json.loads(t[-1]) if t else {}
devs = [x.get('id') for x in d.get('devices') or []]
print('RESULT', sys.argv[1], d.get('status'), 'devices', devs or 'none listed', 'stripe',
      d.get('stripe'), 'steps', d.get('steps'), 'compute %.3f s' % (d.get('t_compute') or -1),
      'total %.2f s' % (d.get('t_total') or -1), 'ratio %.3g' % (d.get('residual') or -1),
      (d.get('error') or '')[:200],
      ' '.join(w.strip() for w in (d.get('warnings') or '').split(';') if 'in place' in w)[:300])
print('%.6f' % (d.get('t_compute') or 0), file=sys.stderr)
" "$1" "$2"
}

# method n kind: generate, then one run per device list, scaling against the first (gemm: A
# times a second matrix of the same kind)
scale() {
  local m=$1 n=$2 kind=$3 t1= lst
  if [ "$(left)" -lt 60 ]; then echo "SKIPPED $m n=$n: $(left) s left" | tee -a $OUT/summary.txt; return; fi
  $B/oocgen $kind --n $n --tile $TILE --dtype $DTYPE --seed 7 --force --quiet $D/$m.h5:/A ||
    { echo "oocgen $kind n=$n failed" | tee -a $OUT/summary.txt; return; }
  [ $m = gemm ] && { $B/oocgen $kind --n $n --tile $TILE --dtype $DTYPE --seed 8 --force --quiet \
    $D/$m-b.h5:/A || return; }
  echo "[$(el) s] generated $m n = $n ($kind, $DTYPE)"
  for run in ${RUNS:-$LISTS}; do
    local lst=${run%%:*} dv=
    [[ $run == *:* ]] && dv=${run#*:}
    [ "$(left)" -gt 30 ] || { echo "SKIPPED $m --devices $lst: $(left) s left" | tee -a $OUT/summary.txt; break; }
    local tag="$m-n$n-dev${lst//,/}${dv:+-direct$dv}"
    local call="invert --method $m" ins=$D/$m.h5
    [ $m = gemm ] && call=gemm && ins="$D/$m.h5 $D/$m-b.h5"
    # shellcheck disable=SC2086
    ${dv:+env OOCSOLVE_SWEEP_DIRECT=$dv} timeout $(($(left) - 10)) $B/oocsolve $call --device $DEVICE \
      --devices $lst --tile $TILE --gpu-mem $GPUMEM ${HOSTMEM:+--host-mem $HOSTMEM} --check $CHECK --out $D/x.h5 \
      $ins --json --force > $OUT/$tag.json 2> $OUT/$tag.err
    local tc
    tc=$(sum "$tag" $OUT/$tag.json 2>&1 >> $OUT/summary.txt | tail -1)
    tail -1 $OUT/summary.txt
    rm -f $D/x.h5
    if [ -z "$t1" ]; then t1=$tc; else
      python3 -c "import sys; a, b = map(float, sys.argv[1:3]); print('SCALING $m n=$n --devices %s: %.2fx one GPU (compute %.3f s vs %.3f s)' % (sys.argv[3], a / b if b > 0 else 0, b, a))" "$t1" "$tc" "$run" | tee -a $OUT/summary.txt
    fi
  done
  rm -f $D/$m.h5 $D/$m-b.h5
}
skip gj || scale gj $N random
skip chol || scale chol $NC matern
skip gemm || scale gemm $NG random
rm -rf "$D"
echo "[$(el) s] done" | tee -a $OUT/summary.txt
