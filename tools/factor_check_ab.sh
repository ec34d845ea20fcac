#!/usr/bin/env bash
# factor_check_ab.sh: the LU and Cholesky factors' probe checks on the CPU, an old tree's build
# against this one's, alternately (issue 27: the check reads the factor back and not A, since
# the load forms A V, check.h check_probe_t):
#   OLD=/tmp/b-old NEW=build [N=10000] [D=/tmp/fb] bash tools/factor_check_ab.sh
# OLD and NEW are build directories with oocsolve and oocgen. Each line: the JSON's phases, the
# bytes the check read back and the probe ratio.
set -e
N=${N:-10000}
NEW=${NEW:-build}
OLD=${OLD:?set OLD to the old tree build directory}
D=${D:-/tmp/fb}
mkdir -p $D
$NEW/oocgen random --n $N --tile 1000 --quiet --force $D/A.h5:/A
$NEW/oocgen matern --n $N --tile 1000 --quiet --force $D/S.h5:/A
for m in lu chol; do
  in=$D/A.h5; [ $m = chol ] && in=$D/S.h5
  for rep in 1 2; do
    for t in old new; do
      B=$NEW; [ $t = old ] && B=$OLD
      $B/oocsolve factor --method $m --device cpu --tile 1000 --check probe --checkpoint off --json --force --out $D/F.h5 $in:/A > $D/$m.$t.$rep.json 2> $D/$m.$t.$rep.err || { echo "FAIL $m $t"; cat $D/$m.$t.$rep.err; }
      python3 - $D/$m.$t.$rep.json $m $t <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
print("%s %s: read %.2f compute %.2f write %.2f check %.2f (%.2f GB read back) commit %.2f total %.2f s; residual %.3g" % (sys.argv[2], sys.argv[3], d['t_read'], d['t_compute'], d['t_write'], d['t_check'], d['bytes_check_read']/1e9, d.get('t_commit',0), d['t_total'], d['residual']))
PY
      rm -f $D/F.h5
    done
  done
done
