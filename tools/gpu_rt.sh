#!/usr/bin/env bash
# gpu_rt.sh: the GPU host's check of the CUDA runtime (ocu_rt.h, issue 18) in one device call:
#   bash .devdeps/on-device bash tools/gpu_rt.sh
# 1. build the GPU suites (Release, sm_90);
# 2. test_cuda quick, test_cuda_chol and test_iter_cuda side by side on the GPU (SUITES= picks
#    fewer), then test_cuda_rt alone (the runtime, --gpu-mem enforced by each executor's pool, the
#    device/pinned fault loops of gj, chol and the product);
# 3. (SAN=0 skips) compute-sanitizer memcheck of `test_cuda_rt sanitize` (the runtime and the three executors'
#    creations, refused and planned) and of `test_cuda sanitize`, if the time left allows;
# 4. with PERF=1 and time left: the gj n = 32768 in-core row and chol n = 32768 (bench_cuda,
#    bench_cuda_chol) as a smoke check of speed (the coordinator's comparison is the reference).
# Logs in $OUT/r, tarred to $OUT/rt.tgz; the last lines printed are the summary lines to quote.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-420}
B=${B:-/tmp/b-rt}
OUT=${OUT:-/tmp/gpu_rt_out}
R=$OUT/r
mkdir -p "$R"
finish() {
  pack rt
  echo "[$(el) s] done"
}
trap finish EXIT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $R/gpu.txt
TARGETS="test_cuda test_cuda_chol test_iter_cuda test_cuda_rt"
[ "${PERF:-0}" = 1 ] && TARGETS="$TARGETS bench_cuda bench_cuda_chol"
# shellcheck disable=SC2086
gpu_build $R/build.log $TARGETS

suite() { # name args...: one suite in the background, its log and rc in $R
  local name=$1
  shift
  (cd $B && timeout 240 ./$name "$@" > $R/$name.log 2>&1; echo "rc=$?" >> $R/$name.log) &
}
SUITES=${SUITES-test_cuda test_cuda_chol test_iter_cuda}
for s in $SUITES; do
  if [ $s = test_cuda ]; then suite test_cuda quick; else suite $s; fi
done
wait
suite test_cuda_rt # alone: its loops print the GPU's free memory, which other processes move
wait
echo "[$(el) s] tests done"
for f in $SUITES test_cuda_rt; do
  grep -E "FAILED|Test:.*(failed|FAILED)|asserts|tests  |rc=|fault loops|\[(gj|chol|product) " \
    $R/$f.log | sed "s/^ *//; s/^/$f: /" | head -20
done

if [ "${SAN:-1}" = 1 ] && [ "$(left)" -gt 90 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  san() { # log args...
    local log=$1
    shift
    (cd $B && timeout $(($(left) - 10)) $CS --tool memcheck --error-exitcode 9 "$@" > $R/$log 2>&1
     echo "compute-sanitizer memcheck $* rc=$?" >> $R/$log) &
  }
  san mem_rt.log ./test_cuda_rt sanitize
  san mem_gj.log ./test_cuda sanitize
  wait
  echo "[$(el) s] sanitizer done"
  grep -hE "ERROR SUMMARY|rc=" $R/mem_*.log
else
  echo "sanitizer not run ($(left) s left)"
fi

if [ "${PERF:-0}" = 1 ] && [ "$(left)" -gt 70 ]; then
  (cd $B && timeout $(($(left) - 5)) ./bench_cuda gj 32768 4096 0 3 - > $R/gj.log 2>&1)
  grep -E "RESULT" $R/gj.log
fi
if [ "${PERF:-0}" = 1 ] && [ "$(left)" -gt 40 ]; then
  (cd $B && timeout $(($(left) - 5)) ./bench_cuda_chol run 32768 1024 0 > $R/chol.log 2>&1)
  grep -E "RESULT" $R/chol.log
fi
