#!/usr/bin/env bash
# gpu_auto.sh: `oocsolve solve` beyond host memory under auto against the method named, in one
# device call (at most LIMIT seconds):
#   LIMIT=380 bash .devdeps/on-device bash tools/gpu_auto.sh
# n = N (32768) float64, tile 2048, 2 right-hand sides, --gpu-mem 4G, --host-mem MEM (4G): a
# Matern matrix (auto chooses chol) and a random one (auto chooses lu), each solved under auto
# and with --method chol / lu, REPS (2) times alternating. Each line: the method that ran, the
# host peak (what the plan gave the tile cache shows here), the stripe, the disk tier's bytes,
# the phases and the total. JSON and logs in $OUT/auto.tgz, the lines in $OUT/auto.txt.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-380}
OUT=${OUT:-/tmp/gpu_auto_out}
R=$OUT/r
W=${WORK:-/tmp/auto27}
mkdir -p "$R" "$W"
trap 'pack auto; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
B=/tmp/b-auto gpu_build $R/build.log oocsolve_bin oocgen_bin
N=${N:-32768} MEM=${MEM:-4G}
G=/tmp/b-auto/oocgen S=/tmp/b-auto/oocsolve
$G matern --n $N --tile 2048 $W/M.h5 > /dev/null 2>&1
$G random --n $N --tile 2048 --seed 3 $W/R.h5 > /dev/null 2>&1
$G rhs --n $N --cols 2 --tile 2048 $W/b.h5 > /dev/null 2>&1
echo "[$(el) s] inputs"
run() {
  local tag=$1
  shift
  sync
  timeout $(($(left) - 5)) $S solve --device cuda --tile 2048 --gpu-mem 4G --host-mem $MEM --json \
    --force --scratch $W "$@" -o $W/X.h5 > $R/$tag.json 2> $R/$tag.err
  python3 - "$R/$tag.json" "$tag" << 'PY' | tee -a $OUT/auto.txt
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[2], "no JSON:", e); sys.exit()
print("%s: %s %s, host peak %.2f GiB, stripe %d | spilled %.1f GB, read back %.1f GB, kept in "
      "input %.1f GB | read %.1f compute %.1f spill %.1f write %.1f check %.1f total %.1f s | "
      "residual %.3g" % (sys.argv[2], d["method"], d["status"], d["host_peak"] / 2**30,
      d["stripe"], d["bytes_spilled"] / 1e9, d["bytes_unspilled"] / 1e9,
      d.get("bytes_kept_in_input", 0) / 1e9, d["t_read"], d["t_compute"], d["t_spill"],
      d["t_write"], d["t_check"], d["t_total"], d["residual"] or 0))
PY
  rm -f $W/X.h5
}
for rep in $(seq ${REPS:-2}); do
  for job in "chol_auto $W/M.h5" "chol --method chol $W/M.h5" "lu_auto $W/R.h5" "lu --method lu $W/R.h5"; do
    # shellcheck disable=SC2086 # the tag, the options and the input: words
    set -- $job
    tag=$1.$rep
    shift
    if [ "$(left)" -lt 60 ]; then echo "$tag: not run ($(left) s left)" | tee -a $OUT/auto.txt; continue; fi
    run $tag "$@" $W/b.h5
  done
done
