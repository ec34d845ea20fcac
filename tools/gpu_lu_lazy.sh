#!/usr/bin/env bash
# gpu_lu_lazy.sh: LU's factor on the GPU reading A as it asks for it (OOCSOLVE_LAZY_READ=1,
# issue 27) against the same run reading A first, alternately, in one device call:
#   LIMIT=200 bash .devdeps/on-device bash tools/gpu_lu_lazy.sh
# 1. build oocsolve and oocgen (Release, sm_90) into B;
# 2. the disk's bandwidths (tools/disk_bw.sh, 8 GiB with direct I/O) and A (n = N, 40000
#    float64, tile 1024) written on the device's disk;
# 3. REPS rounds (2) of `oocsolve factor --method lu --device cuda --tile 1024 --gpu-mem 8G`,
#    read first then lazy, from the page cache, then (COLD=1, the default) the same with the
#    file's pages dropped before each run (dd iflag=nocache: the read comes from the disk);
# 4. each run's JSON phases on a RESULT line ($OUT/lu_lazy.txt) with the disk floor (input /
#    read + output / write bandwidth: --disk-bw) and the run's ratio to it, its logs in
#    $OUT/lazy.tgz.
# The runs of a pair must print the same residual and log-determinant to the last digit (the
# factors' bits are compared in test_cuda_rt's "lu on the GPU reading A as it asks").
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-200}
B=${B:-/tmp/b-lazy}
OUT=${OUT:-/tmp/gpu_lu_lazy_out}
R=$OUT/lazy
D=${D:-/tmp/lazy}
N=${N:-40000}
mkdir -p "$R" "$D"
trap 'pack lazy; rm -rf "$D"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
gpu_build $R/build.log oocsolve_bin oocgen_bin
res() { tee -a $OUT/lu_lazy.txt; }
BW=$(bash tools/disk_bw.sh $D 8 2> $R/disk_bw.log) || { cat $R/disk_bw.log; exit 1; }
echo "disk: $BW ($(tr '\n' ' ' < $R/disk_bw.log))" | res
$B/oocgen random --n $N --tile 1024 --quiet --force $D/A.h5:/A || exit 1
echo "[$(el) s] input written"
one() { # tag lazy(0/1) cold(0/1)
  local tag=$1
  [ "$3" = 1 ] && dd if=$D/A.h5 iflag=nocache count=0 status=none
  if [ "$2" = 1 ]; then export OOCSOLVE_LAZY_READ=1; else unset OOCSOLVE_LAZY_READ; fi
  $B/oocsolve factor --method lu --device cuda --tile 1024 --gpu-mem 8G --checkpoint off \
    $BW --json --force --out $D/F_$tag.h5 $D/A.h5:/A > $R/$tag.json 2> $R/$tag.err
  echo "rc=$?" >> $R/$tag.err
  unset OOCSOLVE_LAZY_READ
  python3 - "$R/$tag.json" "$tag" << 'PY' 2>&1 | res
import json, sys
d = json.load(open(sys.argv[1]))
ws = [w for w in (d.get('warnings') or '').split('; ') if 'read while' in w]
print('RESULT %s: read %.2f compute %.2f (factor %.2f) write %.2f check %.2f commit %.2f '
      'total %.2f s; floor %s s, %sx; residual %.17g, logdet %.17g; %s' % (sys.argv[2],
      d['t_read'], d['t_compute'], d.get('t_factor', 0), d['t_write'], d['t_check'],
      d.get('t_commit', 0), d['t_total'], d.get('t_floor'), d.get('floor_ratio'),
      d['residual'], d['logdet'], '; '.join(ws) or 'read first'))
PY
}
for cold in 0 1; do
  [ "$cold" = 1 ] && [ "${COLD:-1}" = 0 ] && continue
  for i in $(seq 1 ${REPS:-2}); do
    for lazy in 0 1; do
      [ "$(left)" -lt 40 ] && break 3
      one c${cold}_l${lazy}_$i $lazy $cold
    done
    rm -f $D/F_*.h5
  done
done
tail -n 20 $OUT/lu_lazy.txt
