#!/usr/bin/env bash
# gpu_ab.sh: issue 18's no-regression table in one device call. The previous main's source tree
# ($OLD, e.g. `git archive <commit>` unpacked into an ignored folder and carried) and this tree
# are built side by side (Release, sm_90), then each headline row runs old, new, old, new back to
# back, so the two codes see the same GPU state:
#   gj n = 32768 in core (and cuSOLVER getrf+getrs(I)), gj n = 49152 --gpu-mem 12G, chol
#   n = 65536 --gpu-mem 16G, chol n = 32768 in core (and cuSOLVER potrf+potri), the product
#   n = 49152 --gpu-mem 12G; and LU's factor n = 40000 with --gpu-mem 8G (issue 22).
#   OLD=.wt/old LIMIT=560 bash .devdeps/on-device bash tools/gpu_ab.sh
# The RESULT lines of each run land in $OUT/ab.txt (also printed); logs in $OUT/ab.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-570}
OUT=${OUT:-/tmp/gpu_ab_out}
R=$OUT/r
mkdir -p "$R"
trap 'pack ab; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
NEW=$PWD
T="bench_cuda bench_cuda_chol bench_gemm_cuda bench_lu_cuda"
(B=/tmp/b-new gpu_build $R/build_new.log $T) &
(cd "$OLD" && B=/tmp/b-old gpu_build $R/build_old.log $T) &
wait
[ -x /tmp/b-new/bench_cuda ] && [ -x /tmp/b-old/bench_cuda ] || { echo "build failed"; exit 1; }
echo "[$(el) s] built old and new"
row() { # name seconds-needed args...: old, new, old, new
  local name=$1 need=$2
  shift 2
  for v in old new old new; do
    if [ "$(left)" -lt "$need" ]; then echo "$name $v: not run ($(left) s left)" | tee -a $OUT/ab.txt; return; fi
    MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824 \
      timeout $(($(left) - 5)) /tmp/b-$v/"$@" > $R/$name.$v.log 2>&1
    grep -hE "RESULT" $R/$name.$v.log | sed "s/^/$name $v: /" | tee -a $OUT/ab.txt
  done
}
want() { [ -z "${ROWS:-}" ] || [[ " $ROWS " == *" $1 "* ]]; } # ROWS="gj49152 ..." picks rows
# bench_cuda gj N TILE GPU_MEM STREAMS TRACE: 3 streams, as tools/gpu_release.sh
want gj32768 && row gj32768 40 bench_cuda gj 32768 4096 0 3 -
want gj49152 && row gj49152 40 bench_cuda gj 49152 1024 12G 3 -
want chol65536 && row chol65536 50 bench_cuda_chol run 65536 1024 16G
want cholin && row cholin 40 bench_cuda_chol incore 32768 1024
want gemm49152 && row gemm49152 50 bench_gemm_cuda ooc 49152 4096 12G plan plan
want lu40000 && row lu40000 40 bench_lu_cuda factor 40000 1024 8G
if want cusolver && [ "$(left)" -gt 40 ]; then
  /tmp/b-new/bench_cuda cusolver 32768 2>&1 | grep RESULT | sed 's/^/cusolver: /' | tee -a $OUT/ab.txt
fi
