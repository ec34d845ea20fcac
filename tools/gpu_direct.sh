#!/usr/bin/env bash
# gpu_direct.sh: direct moves on one GPU (SRC: the tree to build, default this one): bench_cuda gj 49152 1024 12G 3 and bench_cuda_chol run 65536 1024 16G, slot (0) vs direct with the cache pinned at the preload (2), alternately
LIMIT=${LIMIT:-400}
OUT=${OUT:-/tmp/cd}
mkdir -p $OUT
cd "${SRC:-.}"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
B=/tmp/b-d gpu_build $OUT/build.log bench_cuda bench_cuda_chol
for d in 0 2 0 2; do
  [ "$(left)" -gt 60 ] || { echo "SKIP gj $d"; continue; }
  GJ_DIRECT=$d timeout $(($(left) - 5)) /tmp/b-d/bench_cuda gj 49152 1024 12G 3 - > $OUT/gj$d.log 2>&1
  echo "[$(el) s] gj GJ_DIRECT=$d rc=$?"; grep -E "RESULT|probe|resid" $OUT/gj$d.log | cut -c1-400
done
for d in 0 2; do
  [ "$(left)" -gt 70 ] || { echo "SKIP chol $d"; continue; }
  CHOL_DIRECT=$d MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824 timeout $(($(left) - 5)) /tmp/b-d/bench_cuda_chol run 65536 1024 16G > $OUT/chol$d.log 2>&1
  echo "[$(el) s] chol CHOL_DIRECT=$d rc=$?"; grep -E "RESULT" $OUT/chol$d.log | cut -c1-400
done
