#!/usr/bin/env bash
# gpu_inv.sh: issue 22's "auto picks gj or lu for inverses by measurement", one device call
# (LIMIT seconds): bash .devdeps/on-device bash tools/gpu_inv.sh
# A random N x N matrix (default 32768, tile 4096, oocgen on the device's disk), inverted through
# the CLI by --method gj and --method lu on the GPU, in core (default --gpu-mem) and out of GPU
# core (--gpu-mem $SMALL, default 4G), in the order gj, lu, gj, lu; each with --json (phases,
# stripe, the inverse check's ratio). RESULT lines in $OUT/inv.txt.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-300}
B=${B:-/tmp/b-inv}
OUT=${OUT:-/tmp/gpu_inv_out}
N=${N:-32768}
SMALL=${SMALL:-4G}
mkdir -p "$OUT"
. tools/gpu_lib.sh
[ -x "$B/oocsolve" ] || gpu_build "$OUT/build.log" oocsolve_bin oocgen_bin
D=/tmp/d-inv
mkdir -p $D
$B/oocgen random --n $N --tile 4096 --seed 3 --force --quiet $D/a.h5:/A || exit 1
echo "[$(el) s] generated n = $N"
for mem in default $SMALL; do
  for m in gj lu gj lu; do
    [ "$(left)" -gt 45 ] || { echo "not run: $m --gpu-mem $mem" | tee -a $OUT/inv.txt; continue; }
    g=; [ $mem = default ] || g="--gpu-mem $mem"
    # shellcheck disable=SC2086
    timeout $(($(left) - 5)) $B/oocsolve invert --device cuda --method $m --tile 4096 $g \
      --checkpoint off --json --force --out $D/x.h5 $D/a.h5:/A > $OUT/r.json 2> $OUT/r.err
    rc=$?
    python3 -c "
import json
try:
    d = json.loads(open('$OUT/r.json').read().strip().splitlines()[-1])
except Exception as e:
    print('RESULT inv $m --gpu-mem $mem: rc $rc, no report: ' + open('$OUT/r.err').read()[-300:]); raise SystemExit
print('RESULT inv n=%d $m --gpu-mem $mem: rc $rc, stripe %s, read %.2f compute %.2f write %.2f check %.2f total %.2f s, ratio %.3g' % (d['n'], d.get('stripe'), d['t_read'], d['t_compute'], d['t_write'], d['t_check'], d['t_total'], d.get('residual') or float('nan')))
" | tee -a $OUT/inv.txt
  done
done
echo "[$(el) s] done"
