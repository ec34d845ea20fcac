#!/usr/bin/env bash
# gpu_gjx.sh: issue 18's step "gj on the executor" on the GPU host, one device call (LIMIT s):
#   bash .devdeps/on-device bash tools/gpu_gjx.sh
# gj_x.c (OOC_GJ_EXEC=1: gj written once over exec.h and the ring, on the CUDA executor) against
# the gj executor it is to replace (ocu_exec.c, the default), through the CLI in one build:
# 1. correctness: n = 1000 and 3000 random (oocgen, tile 256), invert and solve (7 right-hand
#    sides) with --check full, in GPU memory and with --gpu-mem 64M (several steps, columns
#    streamed), old and new: status, ratio, stripe and steps of each;
# 2. speed: n = N (32768) tile 4096 in core, then with --gpu-mem 8G: old, new, old, new; the
#    compute phase of each (t_compute), --check none.
# The summary lines start with RESULT; JSON reports and logs under $OUT. NOBUILD=1 reuses $B.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
B=${B:-/tmp/b-gjx}
OUT=${OUT:-/tmp/gpu_gjx_out}
N=${N:-32768}
mkdir -p "$OUT"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
[ -n "${NOBUILD:-}" ] || gpu_build $OUT/build.log oocsolve_bin oocgen_bin
D=/tmp/d-gjx; mkdir -p $D
sum() { # tag json: one RESULT line from an oocsolve --json report
  python3 -c "
import json, sys
t = open(sys.argv[2]).read().strip().splitlines()
d = json.loads(t[-1]) if t else {}
print('RESULT', sys.argv[1], d.get('status'), 'ratio %.3g' % (d.get('residual') or -1),
      'stripe', d.get('stripe'), 'steps', d.get('steps'), 'compute %.3f s' % (d.get('t_compute') or -1),
      'total %.2f s' % (d.get('t_total') or -1), (d.get('error') or '')[:160])
" "$1" "$2"
}
run() { # tag env-value args...
  local tag=$1 v=$2
  shift 2
  OOC_GJ_EXEC=$v timeout $(($(left) - 5)) $B/oocsolve "$@" --json --force > $OUT/$tag.json 2> $OUT/$tag.err
  sum "$tag" $OUT/$tag.json | tee -a $OUT/summary.txt
}
for n in 1000 3000; do
  $B/oocgen random --n $n --tile 256 --seed 3 --force --quiet $D/a$n.h5:/A
  $B/oocgen rhs --n $n --cols 7 --tile 256 --seed 4 --force --quiet $D/b$n.h5:/B
  for gm in "" "--gpu-mem 64M"; do
    for v in 0 1; do
      g=${gm:+ooc}; g=${g:-in}
      run "n$n-$g-inv-$v" $v invert --method gj --device cuda --tile 256 $gm --check full \
        --out $D/x.h5 $D/a$n.h5
      run "n$n-$g-solve-$v" $v solve --method gj --device cuda --tile 256 $gm --check full \
        --out $D/y.h5 $D/a$n.h5 $D/b$n.h5
    done
  done
done
echo "[$(el) s] correctness done"
$B/oocgen random --n $N --tile 4096 --seed 5 --force --quiet $D/big.h5:/A
echo "[$(el) s] generated n = $N"
for gm in "" "--gpu-mem 8G"; do
  for v in 0 1 0 1; do
    [ "$(left)" -gt 60 ] || break
    g=${gm:+8G}; g=${g:-in}
    run "N$N-$g-$v" $v invert --method gj --device cuda --tile 4096 $gm --check none \
      --out $D/xbig.h5 $D/big.h5
    rm -f $D/xbig.h5
  done
done
rm -rf $D
echo "[$(el) s] done"
