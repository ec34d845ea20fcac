#!/usr/bin/env bash
# gpu_lu_chunk.sh: bench_lu_cuda's factor over the panel's chunk width, in one device call
# (issue 22: how much of the factor is cuSOLVER's tall getrf of each chunk, and what a narrower
# chunk moves into the gemms):
#   LIMIT=300 bash .devdeps/on-device bash tools/gpu_lu_chunk.sh
# 1. build bench_lu_cuda (Release, sm_90) into B;
# 2. cuSOLVER's in-core Xgetrf at n = N (40000), the peer;
# 3. at n = N, tile T (1000), --gpu-mem 8G, every tile pinned as it is made (LU_DIRECT=2, what
#    the CLI's load does): the factor at each chunk width of CHUNKS ("2000 3000 4000") and each
#    executor queue count of QUEUES ("3"; 2: the chunks' gets share the puts' queue) and each
#    stripe of STRIPES ("0": the widest the budget holds, 20000 at n = 40000; narrower ones
#    move panel flops, which run at ~20 TFLOP/s, into the left passes' gemms at ~45, and cost
#    more reads and step boundaries), REPS (2) rounds in rotation; then once with LU_COLD=1 at the default chunk (the libraries' kernels
#    loaded in the first getrf, as before lu_warm);
# 4. BIG=1: the factor at n = 65536, tile 1024, --gpu-mem 16G (issue 22's 45 TFLOP/s row), at
#    the default chunk and at BIGCHUNK (2048), if the time left allows.
# RESULT lines land in $OUT/lu_chunk.txt, logs in $OUT/chunk.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-300}
B=${B:-/tmp/b-chunk}
OUT=${OUT:-/tmp/gpu_lu_chunk_out}
R=$OUT/chunk
N=${N:-40000}
T=${T:-1000}
mkdir -p "$R"
trap 'pack chunk; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
gpu_build $R/build.log bench_lu_cuda
res() { tee -a $OUT/lu_chunk.txt; }
$B/bench_lu_cuda cusolver $N 2>&1 | grep RESULT | res
one() { # label, then the environment and bench_lu_cuda's arguments
  local tag=$1
  shift
  env LU_DIRECT=2 "$@" > $R/$tag.log 2>&1
  grep -h "RESULT lu factor.*TFLOP\|RESULT lu factor.*phases" $R/$tag.log | sed "s/^/$tag: /" | res
}
for rep in $(seq 1 ${REPS:-2}); do
  for c in ${CHUNKS:-2000 3000 4000}; do
    for q in ${QUEUES:-3}; do
      for w in ${STRIPES:-0}; do
        [ "$(left)" -lt 30 ] && break 4
        one chunk${c}_q${q}_w${w}_$rep LU_QUEUES=$q $B/bench_lu_cuda factor $N $T 8G $w $c
      done
    done
  done
done
[ "$(left)" -gt 30 ] && one cold LU_COLD=1 $B/bench_lu_cuda factor $N $T 8G
if [ -n "${BIG:-}" ]; then
  for c in 0 ${BIGCHUNK:-2048}; do
    [ "$(left)" -lt 90 ] && break
    one big_chunk$c $B/bench_lu_cuda factor 65536 1024 16G 0 $c
  done
fi
