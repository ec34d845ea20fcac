#!/usr/bin/env bash
# gpu_types.sh: issue 19's LAPACK test types on the GPU (tests/gpu_types.c says what is judged):
# DLATMS's dchkge/dchkpo types at n = 4096 and oocsolve's cond stand-ins at n = 16384 (DLATMS is
# too slow there: the cond 0.1/eps general and SPD types and the SPD one scaled near overflow), each with a --gpu-mem below the matrix so every method runs out of core on the
# device. Summary lines land in $OUT/types.txt, the per-case lines in $OUT/types_N.log.
#   LIMIT=400 bash .devdeps/on-device bash tools/gpu_types.sh
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
OUT=${OUT:-/tmp/gpu_types_out}
mkdir -p "$OUT"
. tools/gpu_lib.sh
export B=${B:-/tmp/b-types}
gpu_build "$OUT/build.log" gpu_types
[ -x "$B/gpu_types" ] || { echo "gpu_types was not built (no libtmglib?)"; exit 1; }
export TMPDIR=${TMPDIR:-/tmp}
run() { # N args...: one size, its lines to types_N.log, the RESULT line to types.txt
  local n=$1
  shift
  timeout $(($(left) - 5)) "$B/gpu_types" "$n" "$@" > "$OUT/types_$n.log" 2>&1
  echo "rc=$? $(grep -E '^RESULT' "$OUT/types_$n.log")" | tee -a "$OUT/types.txt"
  grep -E '^FAIL' "$OUT/types_$n.log" | head -20
}
# 4096: every type; the matrix is 128 MiB, --gpu-mem 100M holds a stripe of one tile column
run 4096 --tile 512 --gpu-mem $((100 << 20))
# 16384 (2 GiB): the hardest conditioned and scaled stand-ins (DGE 9, DPO 7 and 9), 1.5 GiB of GPU
run 16384 --gen --types 7,9 --tile 2048 --gpu-mem $((1536 << 20))
echo "[$(el) s] done"
