#!/usr/bin/env bash
# gpu_lu_check_ab.sh: the LU checks read back (lu_check.c: a solve from a factor file), an older
# tree against this one in one device call, alternating (issue 27: the thirtieth session's row
# passes, check.h check_lu_rows):
#   OLD=.wt/old LIMIT=240 bash .devdeps/on-device bash tools/gpu_lu_check_ab.sh
# (OLD: `git archive <commit>` unpacked into the ignored .wt, carried with .devdeps.) The input:
# oocgen random --n N (32768) --tile 4096, factored once on the GPU by this tree (oocsolve factor
# --method lu), NRHS (2) right-hand sides; then `oocsolve solve --factor` with --check probe by
# each tree's build, REPS (3) pairs, from the page cache. Each run's phases on a line in
# $OUT/lu_check_ab.txt, logs in $OUT/lu_check_ab.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-240}
OUT=${OUT:-/tmp/gpu_lu_check_ab_out}
R=$OUT/r
W=${WORK:-/tmp/lu_check_ab}
N=${N:-32768}
mkdir -p "$R" "$W"
trap 'pack lu_check_ab; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
B=/tmp/b-new gpu_build $R/build.log oocsolve_bin oocgen_bin &
(cd "${OLD:?set OLD to an older tree}" && B=/tmp/b-old gpu_build $R/build_old.log oocsolve_bin) &
wait
[ -x /tmp/b-new/oocsolve ] && [ -x /tmp/b-old/oocsolve ] || { echo "build failed"; exit 1; }
/tmp/b-new/oocgen random --n $N --tile 4096 --quiet $W/A.h5 > $R/gen.log 2>&1 &&
  /tmp/b-new/oocgen rhs --n $N --cols ${NRHS:-2} --tile 4096 --quiet $W/B.h5 >> $R/gen.log 2>&1 &&
  /tmp/b-new/oocsolve factor --method lu --device cuda --tile 4096 --json $W/A.h5 -o $W/LU.h5 \
    > $R/factor.json 2> $R/factor.err || { cat $R/gen.log $R/factor.err; exit 1; }
echo "[$(el) s] input and factor written" | tee -a $OUT/lu_check_ab.txt
for rep in $(seq ${REPS:-3}); do
  for v in old new; do
    [ "$(left)" -lt 30 ] && break 2
    /tmp/b-$v/oocsolve solve --factor $W/LU.h5 --device cuda --tile 4096 --check probe --json \
      --force $W/B.h5 -o $W/X.h5 > $R/$v.$rep.json 2> $R/$v.$rep.err
    python3 - $R/$v.$rep.json "$v $rep" << 'PY' | tee -a $OUT/lu_check_ab.txt
import json, sys
d = json.load(open(sys.argv[1]))
print("%s: %s read %.2f compute %.2f write %.2f check %.3f (%.2f GB read back) total %.2f s; "
      "residual %.3g" % (sys.argv[2], d['status'], d['t_read'], d['t_compute'], d['t_write'],
                         d['t_check'], d['bytes_check_read'] / 1e9, d['t_total'], d['residual']))
PY
  done
done
