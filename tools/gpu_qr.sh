#!/usr/bin/env bash
# gpu_qr.sh: issue 24 on the GPU host (one device call, under 6 minutes):
#   bash .devdeps/on-device bash tools/gpu_qr.sh
# 1. the executor's conformance suite (test_exec: geqrf/ormqr/laset on cuSOLVER among the rest);
# 2. bench_qr_cuda: the GEMM ceiling, cuSOLVER in core (geqrf + ormqr + trsm of 262144 x 4096)
#    against our fold + solve of the same matrix from host memory with --gpu-mem 8G (ratio);
# 3. oocsolve lstsq from HDF5, m = 1,048,576 x n = 4096 (34 GB, oocgen rhs) with --gpu-mem 8G,
#    time per phase and the factor's rate against the ceiling; if the file cannot be made within
#    GEN_S seconds, m = 262,144 (said in the RESULT line);
# 4. an add-rows update of p = 1000 rows against that full run (ratio).
# RESULT lines are the figures; logs and JSON reports under $OUT.
set -o pipefail
cd "$(dirname "$0")/.."
export LIMIT=${LIMIT:-340}
O=${OUT:-/tmp/o}; mkdir -p $O
. tools/gpu_lib.sh
B=/tmp/b24; D=/tmp/d24; mkdir -p $D
GEN_S=${GEN_S:-150}
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > $O/build.log 2>&1 ||
  { grep -E "error" $O/build.log | head; exit 1; }
cmake --build $B -j16 --target oocgen_bin >> $O/build.log 2>&1 || { grep error $O/build.log | head; exit 1; }
echo "[$(el) s] oocgen built"
# the big input first, in the background, while the rest builds and the bench runs
M=1048576; N=4096
( /usr/bin/time -f "%e" -o $D/gen.time timeout $GEN_S $B/oocgen rhs --n $M --cols $N --tile 4096 \
    --seed 3 --force --quiet $D/A.h5:/A > $D/gen.log 2>&1; echo $? > $D/gen.rc ) &
GEN=$!
cmake --build $B -j16 --target oocsolve_bin oocsolve_cuda bench_qr_cuda test_exec >> $O/build.log 2>&1 ||
  { grep -E "error" $O/build.log | head; exit 1; }
echo "[$(el) s] built"
$B/test_exec > $O/test_exec.log 2>&1; echo "RESULT test_exec exit $? ($(grep -E '^ +tests|^ +asserts' $O/test_exec.log | tr -s ' ' | tr '\n' ' '))"
grep -B1 -A1 "FAIL\|cuda.*difference\|Q\^T" $O/test_exec.log | head -20
echo "[$(el) s] conformance"
$B/bench_qr_cuda 262144 $N 1 8G 16384 16384 2>&1 | tee $O/bench.log | grep RESULT
$B/bench_qr_cuda 262144 $N 1 8G 16384 131072 2>&1 | tee -a $O/bench.log | grep RESULT
echo "[$(el) s] bench"
wait $GEN
if [ "$(cat $D/gen.rc)" != 0 ]; then
  echo "RESULT gen m=$M did not finish in $GEN_S s (rc $(cat $D/gen.rc)): m = 262144 instead"
  M=262144
  $B/oocgen rhs --n $M --cols $N --tile 4096 --seed 3 --force --quiet $D/A.h5:/A
else
  echo "RESULT gen m=$M n=$N: $(cat $D/gen.time) s ($(du -h $D/A.h5 | cut -f1))"
fi
$B/oocgen rhs --n $M --cols 1 --tile 4096 --seed 4 --force --quiet $D/b.h5:/b
$B/oocgen rhs --n 1000 --cols $N --tile 1000 --seed 5 --force --quiet $D/U.h5:/A
$B/oocgen rhs --n 1000 --cols 1 --tile 1000 --seed 6 --force --quiet $D/c.h5:/b
echo "[$(el) s] inputs"
py() { python3 -c "
import json,sys; d=json.loads(open('$1').read().strip().splitlines()[-1])
print('RESULT $2', d['status'], d['backend'], 'm=%d n=%d block=%d panel=%d blocks=%d' % ($M, d['n'], d['tile'], d['stripe'], d['steps']),
 'total %.2f s: read %.2f compute %.2f write %.2f check %.2f' % tuple(d[k] for k in ('t_total','t_read','t_compute','t_write','t_check')),
 '%.3g flop, %.2f TFLOP/s in compute' % (d['flops'], d['gflops']/1e3), 'peak %.2f GB' % (d['host_peak']/1e9), d['error'][:200])"; }
$B/oocsolve lstsq $D/A.h5 $D/b.h5 --gpu-mem 8G --check none --json --out $D/A.qr.h5 > $O/lstsq.json 2> $O/lstsq.err
py $O/lstsq.json "lstsq gpu_mem=8G"
echo "[$(el) s] lstsq"
$B/oocsolve lstsq --update $D/A.qr.h5 --add-rows $D/U.h5 $D/c.h5 --gpu-mem 8G --json --out $D/A.u.h5 > $O/add.json 2> $O/add.err
py $O/add.json "add-rows p=1000"
python3 -c "
import json; a=json.loads(open('$O/lstsq.json').read()); u=json.loads(open('$O/add.json').read())
print('RESULT add-rows/refactor time ratio %.4f (%.2f s vs %.2f s; refactoring m+1000 rows would cost about the full run)' % (u['t_total']/a['t_total'], u['t_total'], a['t_total']))"
python3 -c "
import h5py, numpy as np
f=h5py.File('$D/A.qr.h5'); g=h5py.File('$D/A.u.h5')
print('RESULT state: rows', f['R'].attrs['rows'], '->', g['R'].attrs['rows'], 'rank', f['R'].attrs['rank'], 'residual', f['residual_norms'][()], '->', g['residual_norms'][()])" 2>&1 | tail -2
rm -rf $D; echo "[$(el) s] done"
