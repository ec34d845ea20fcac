#!/usr/bin/env bash
# The CUDA Cholesky on the GPU host: build, benchmark against cuSOLVER, test, sanitize.
# Run from the tree's root (via .devdeps/on-device); logs under $OUT. Each stage has its own
# time limit; the whole script stays under ~450 s. BENCH=0 / TESTS=0 / SAN=0 / OOC=0 / BIG=0 skip stages;
# NBS=512,1024 picks the in-device sweep blocks the in-core benchmark tries.
set -o pipefail
cd "$(dirname "$0")/.."
B=/tmp/b-cholgpu
OUT=${OUT:-/tmp/out-cholgpu}
mkdir -p $OUT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,power.limit --format=csv,noheader
gpu_build $OUT/build.log test_cuda_chol bench_cuda_chol
if [ "${BENCH:-1}" = 1 ]; then
  timeout 110 $B/bench_cuda_chol incore 32768 ${NBS:-1024,2048,4096} 2>&1 | tee $OUT/bench_incore.log | grep -E "RESULT|rror|failed"
  echo "incore bench done at ${SECONDS}s"
fi
if [ "${TESTS:-1}" = 1 ]; then
  (cd $B && timeout 170 ./test_cuda_chol > $OUT/test_cuda_chol.log 2>&1; echo "test_cuda_chol rc=$?")
  grep -E "Test:|FAILED|passed|failed|Run Summary|asserts|tests |\.c:[0-9]|\[job|\[api|\[logdet|ratio|status|error" $OUT/test_cuda_chol.log | head -60
  echo "tests done at ${SECONDS}s"
fi
if [ "${SAN:-1}" = 1 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout 100 $CS --tool memcheck --error-exitcode 9 $B/test_cuda_chol sanitize > $OUT/sanitize_memcheck.log 2>&1
  echo "compute-sanitizer memcheck rc=$?"; grep -E "ERROR SUMMARY|asserts|Invalid|error" $OUT/sanitize_memcheck.log | head -8
  echo "sanitize done at ${SECONDS}s"
fi
if [ "${OOC:-1}" = 1 ]; then
  timeout 90 $B/bench_cuda_chol run 32768 4096 0 2>&1 | tee $OUT/bench_run32768.log | grep -E "RESULT|rror|failed"
  echo "run 32768 done at ${SECONDS}s"
  left=$((440 - SECONDS))
  if [ "${BIG:-1}" = 1 ] && [ $left -gt 90 ]; then
    MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824 timeout $left $B/bench_cuda_chol run 65536 1024 16G $OUT/trace_65536.json 2>&1 | tee $OUT/bench_run65536.log | grep -E "RESULT|rror|failed"
    echo "run 65536 rc=$? done at ${SECONDS}s"
  else
    echo "run 65536 skipped: ${left}s left"
  fi
fi
ls -la $OUT
