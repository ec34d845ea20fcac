#!/usr/bin/env bash
# gpu_lu_e2e.sh: LU end to end through the CLI on the GPU host, an older tree against this one in
# one device call (issue 22 with 27: the phases a user waits for, not the factor alone):
#   OLD=.wt/old LIMIT=560 bash .devdeps/on-device bash tools/gpu_lu_e2e.sh
# (OLD: `git archive <commit>` unpacked into the ignored .wt/old and carried with .devdeps.)
# 1. build oocsolve and oocgen in both trees, bench_lu_cuda in this one (Release, sm_90);
# 2. cuSOLVER's in-core Xgetrf at n = 40000 (bench_lu_cuda cusolver), the peer of the factor;
# 3. inputs on the device's disk: A65 (n = 65536 float32, tile 1024) with B65 (256 right-hand
#    sides), A40 (n = 40000 float64, tile 1024);
# 4. alternately old, new, old, new: `oocsolve solve --method lu --device cuda --gpu-mem 16G` at
#    n = 65536 with the 256 right-hand sides, then `oocsolve factor --method lu --device cuda
#    --gpu-mem 8G` at n = 40000; each run's JSON phases on a RESULT line (lu_e2e.txt).
# The inputs were just written, so they are read from the page cache (the floor there is memory
# bandwidth, not the disk). SKIP="solve factor" skips stages; N65, N40 change the sizes.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
B=${B:-/tmp/b-e2e}
OUT=${OUT:-/tmp/gpu_lu_e2e_out}
R=$OUT/r
D=${D:-/tmp/e2e}
N65=${N65:-65536}
N40=${N40:-40000}
mkdir -p "$R" "$D"
trap 'tar czf "$OUT/all.tgz" -C "$OUT" r 2> /dev/null; rm -rf "$D"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $R/gpu.txt
[ -n "${OLD:-}" ] && (cd "$OLD" && B=/tmp/b-e2e-old gpu_build $R/build_old.log oocsolve_bin oocgen_bin) &
gpu_build $R/build.log oocsolve_bin oocgen_bin bench_lu_cuda
wait
export MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824
res() { tee -a $OUT/lu_e2e.txt; }
$B/bench_lu_cuda cusolver $N40 > $R/cusolver.log 2>&1
grep RESULT $R/cusolver.log | res
G=$B/oocgen
! skip solve && $G random --n $N65 --dtype f32 --tile 1024 --quiet --force $D/A65.h5:/A &&
  $G rhs --n $N65 --cols 256 --dtype f32 --tile 1024 --quiet --force $D/B65.h5:/B
! skip factor && $G random --n $N40 --tile 1024 --quiet --force $D/A40.h5:/A
echo "[$(el) s] inputs written"; df -h $D | tail -1
# one run: tree label, then oocsolve's arguments; its JSON's phases on a RESULT line
one() {
  local tree=$1 bin=$B/oocsolve tag=$2
  shift 2
  [ "$tree" = old ] && bin=/tmp/b-e2e-old/oocsolve
  [ -x "$bin" ] || return
  "$bin" "$@" --json --force > $R/$tag.json 2> $R/$tag.err
  echo "rc=$?" >> $R/$tag.err
  python3 - "$R/$tag.json" "$tag" << 'PY' 2>&1 | res
import json, sys
d = json.load(open(sys.argv[1]))
ws = [w for w in (d.get('warnings') or '').split('; ') if 'in place' in w or 'GPU peak' in w]
print('RESULT %s: read %.2f compute %.2f write %.2f check %.2f commit %.2f total %.2f s; '
      'residual %.3g, stripe %d, %s %s' % (sys.argv[2], d['t_read'], d['t_compute'], d['t_write'],
      d['t_check'], d.get('t_commit', 0), d['t_total'], d['residual'], d['stripe'], d.get('backend'),
      '; '.join(ws)))
PY
  rm -f $D/X*.h5 $D/F*.h5
}
for i in 1 2; do
  for tree in old new; do
    [ "$(left)" -lt 90 ] && break 2
    ! skip solve && one $tree solve_${tree}_$i solve --method lu --device cuda --tile 1024 \
      --gpu-mem 16G --checkpoint off --out $D/X.h5 $D/A65.h5:/A $D/B65.h5:/B
    [ "$(left)" -lt 60 ] && break 2
    ! skip factor && one $tree factor_${tree}_$i factor --method lu --device cuda --tile 1024 \
      --gpu-mem 8G --checkpoint off --out $D/F.h5 $D/A40.h5:/A
  done
done
cp $R/*.json $OUT/ 2> /dev/null
tail -n 30 $OUT/lu_e2e.txt
