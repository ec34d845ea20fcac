#!/usr/bin/env bash
# gpu_spd_big.sh: issue 18's SPD case on one GPU host: a 106,496 x 106,496 Matern covariance
# written as float32 (45 GB), then `oocsolve solve` with Cholesky (91 GB in float64: more than
# the GPU holds) within the host's memory (--host-mem 112G) with nothing spilled to scratch (the
# report's bytes_spilled, printed last). The JSON report lands in $OUT.
#   LIMIT=560 bash .devdeps/on-device bash tools/gpu_spd_big.sh
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-570}
OUT=${OUT:-/tmp/gpu_spd_out}
N=${N:-106496}
mkdir -p "$OUT"
. tools/gpu_lib.sh
B=/tmp/b-spd gpu_build $OUT/build.log oocsolve_bin oocgen_bin
D=${D:-/tmp/spd}
mkdir -p $D
free -g | head -2
df -h /tmp | tail -1
/usr/bin/time -v /tmp/b-spd/oocgen matern --n $N --dtype f32 --tile 4096 --force $D/cov.h5:/A \
  > $OUT/gen.log 2>&1
echo "[$(el) s] generated: $(tail -1 $OUT/gen.log | head -c 200)"; grep -E "Maximum resident|Elapsed" $OUT/gen.log
/tmp/b-spd/oocgen rhs --n $N --cols 16 --force $D/obs.h5:/B > /dev/null 2>&1
timeout $(($(left) - 5)) /usr/bin/time -v /tmp/b-spd/oocsolve solve --device cuda --method chol \
  --tile 4096 --host-mem 112G --checkpoint off --json --force --out $D/x.h5 \
  $D/cov.h5:/A $D/obs.h5:/B > $OUT/solve.json 2> $OUT/solve.err
echo "[$(el) s] solve rc=$?"; cat $OUT/solve.json; grep -E "Maximum resident|Elapsed" $OUT/solve.err
python3 -c "import json; d=json.load(open('$OUT/solve.json')); print('SPD', d['n'], 'spilled', d['bytes_spilled'], 'peak', d['host_peak'], 'of', d['host_budget'], 'read %.1f compute %.1f write %.1f check %.1f total %.1f s' % tuple(d[k] for k in ('t_read','t_compute','t_write','t_check','t_total')), 'residual', d['residual'], 'stripe', d['stripe'])" 
