#!/usr/bin/env bash
# gpu_check_ab.sh: a job's phases (the check's above all) from the page cache, an older tree
# against this one in one device call, alternating (issue 27):
#   OLD=.wt/base LIMIT=300 [JOB=chol|lusolve] bash .devdeps/on-device bash tools/gpu_check_ab.sh
# JOB=chol (the default; the twenty-fourth session's dgemv and streaming-store A/B): the chol
#   inverse at n = N (65536) float32, --gpu-mem 16G, tile 4096.
# JOB=lusolve (the thirtieth session's LU checks by rows, check.h check_lu_rows): oocgen random
#   --n N (32768) float64, tile 4096, factored once on the GPU by this tree (oocsolve factor
#   --method lu), NRHS (2) right-hand sides, then `oocsolve solve --factor` with --check probe.
# (OLD: `git archive <commit>` unpacked into the ignored .wt, carried with .devdeps.) REPS (3)
# pairs while the time allows; each run's phases on a line in $OUT/check_ab.txt, logs in
# $OUT/ab.tgz. ENV="VAR=value ...": this tree's runs under that environment.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-300}
OUT=${OUT:-/tmp/gpu_check_ab_out}
R=$OUT/r
W=${WORK:-/tmp/check_ab}
JOB=${JOB:-chol}
mkdir -p "$R" "$W"
trap 'pack ab; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
B=/tmp/b-new gpu_build $R/build.log oocsolve_bin oocgen_bin &
[ -n "${OLD:-}" ] && (cd "$OLD" && B=/tmp/b-old gpu_build $R/build_old.log oocsolve_bin) &
wait
if [ "$JOB" = lusolve ]; then
  N=${N:-32768}
  /tmp/b-new/oocgen random --n $N --tile 4096 --quiet $W/A.h5 > $R/gen.log 2>&1 &&
    /tmp/b-new/oocgen rhs --n $N --cols ${NRHS:-2} --tile 4096 --quiet $W/B.h5 >> $R/gen.log 2>&1 &&
    /tmp/b-new/oocsolve factor --method lu --device cuda --tile 4096 --json --out $W/LU.h5 \
      $W/A.h5 > $R/factor.json 2>> $R/gen.log || { cat $R/gen.log; exit 1; }
  job=(solve --factor $W/LU.h5 --device cuda --tile 4096 --check probe) in=$W/B.h5
else
  N=${N:-65536}
  /tmp/b-new/oocgen matern --n $N --dtype f32 --tile 4096 --quiet $W/A.h5 > $R/gen.log 2>&1 ||
    { cat $R/gen.log; exit 1; }
  job=(--device cuda --method chol --gpu-mem 16G --tile 4096 --checkpoint off) in=$W/A.h5
fi
echo "[$(el) s] input written"
run() { # tag build [env...]
  local tag=$1 b=$2
  shift 2
  [ "$(left)" -lt 45 ] && { echo "$tag: not run ($(left) s left)"; return; }
  env "$@" timeout $(($(left) - 5)) /tmp/$b/oocsolve "${job[@]}" --json --force --out $W/X.h5 \
    $in > $R/$tag.json 2> $R/$tag.err
  echo "rc=$?" >> $R/$tag.err
  python3 - "$R/$tag.json" "$tag" << 'PY' 2>&1 | tail -1 | tee -a $OUT/check_ab.txt
import json, sys
d = json.load(open(sys.argv[1]))
print('%s: read %.2f compute %.2f write %.2f check %.2f (%.1f GB, %d products) commit %.2f '
      'total %.2f residual %.3g' % (sys.argv[2], d['t_read'], d['t_compute'], d['t_write'],
      d['t_check'], d['bytes_check_read'] / 1e9, d.get('check_products', 0),
      d.get('t_commit', 0), d['t_total'], d['residual']))
PY
  rm -f $W/X.h5
}
# shellcheck disable=SC2086 # ENV: assignments, one word each
for i in $(seq 1 ${REPS:-3}); do
  [ -n "${OLD:-}" ] && run old.$i b-old
  run new.$i b-new ${ENV:-}
done
