#!/usr/bin/env bash
# gpu_rbt.sh: issue 23 on the GPU host, one device call of at most LIMIT seconds:
#   bash .devdeps/on-device bash tools/gpu_rbt.sh
# 1. build (Release, sm_90) oocsolve, oocgen, test_exec and the CUDA plugin;
# 2. test_exec on the GPU (the conformance suite: getrf without pivoting on the CUDA executor);
# 3. n = N (default 32768) random A in [-1, 1) and 16 random right-hand sides (oocgen, tile 4096),
#    solved in core on the GPU by --method lu (main's pivoted LU) and --method rbt (seed 1), each
#    with --json and the probe check: the times of the parts, the residual ratio, rbt's steps and
#    backward errors. Logs and the JSON lines under $OUT; the last lines are the summary;
# 4. with a minute left: the transform alone on the host's cores, its parts (tests/bench_rbt).
# GPUMEM=16G runs both with --gpu-mem 16G; SKIP="bench" leaves out step 4; NOBUILD=1 reuses $B.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-280}
B=${B:-/tmp/b-rbt}
OUT=${OUT:-/tmp/gpu_rbt_out}
N=${N:-32768}
DEV=${DEV:-cuda}
GPUMEM=${GPUMEM:-} # e.g. 16G: both methods with --gpu-mem (out of the GPU's memory)
mkdir -p "$OUT"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee $OUT/gpu.txt
[ -n "${NOBUILD:-}" ] || gpu_build $OUT/build.log oocsolve_bin oocgen_bin test_exec bench_rbt
(cd $B && timeout 60 ./test_exec > $OUT/test_exec.log 2>&1; echo "rc=$?" >> $OUT/test_exec.log)
grep -E "without pivoting|asserts|tests  |rc=" $OUT/test_exec.log | head -6
D=/tmp/d-rbt; mkdir -p $D
$B/oocgen random --n $N --tile 4096 --seed 5 --force --quiet $D/a.h5:/A &&
  $B/oocgen rhs --n $N --cols 16 --tile 4096 --seed 6 --force --quiet $D/b.h5:/B
echo "[$(el) s] generated n = $N"
py() { python3 -c "
import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
print('$1', d['status'], d['method'], d['backend'], 'n', d['n'], 'tile', d['tile'],
      'read %.1f compute %.1f write %.1f check %.1f total %.1f s' % tuple(d[k] for k in ('t_read', 't_compute', 't_write', 't_check', 't_total')),
      'residual %.3g' % d['residual'], 'growth %.3g' % (d['pivot_growth'] or 0))
if d['method'] == 'rbt':
    print('  rbt parts: transform %.2f factor %.2f solve %.2f refine %.2f s; %d steps; berr %.3g -> %.3g; n padded %d; seed %d' % (
        d['t_transform'], d['t_factor'], d['t_solve'], d['t_refine'], d['iterations'], d['berr_before'] or 0, d['berr_after'] or 0, d['rbt_n'], d['seed']))
print('  ', d['error'][:300], '|', d['warnings'][-300:])
"; }
for M in lu rbt; do
  [ "$(left)" -lt 40 ] && { echo "not run ($(left) s left): $M"; continue; }
  extra=; [ $M = rbt ] && extra="--seed 1"
  [ -n "$GPUMEM" ] && extra="$extra --gpu-mem $GPUMEM"
  timeout $(($(left) - 10)) $B/oocsolve solve --method $M $extra --device $DEV --tile 4096 \
    --check probe --json --force --out $D/x_$M.h5 $D/a.h5 $D/b.h5 > $OUT/$M.json 2> $OUT/$M.err
  echo "rc=$?" >> $OUT/$M.err
  py $M < $OUT/$M.json 2>&1 | tee $OUT/$M.txt
  rm -f $D/x_$M.h5
done
rm -rf $D
if ! skip bench && [ "$(left)" -ge 60 ]; then
  timeout $(($(left) - 10)) $B/bench_rbt $N 4096 2 0 2 2>&1 | tee $OUT/bench_rbt.txt
else
  echo "not run ($(left) s left): bench_rbt"
fi
echo "[$(el) s] done"
