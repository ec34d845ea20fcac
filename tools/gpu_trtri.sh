#!/usr/bin/env bash
# gpu_trtri.sh: getri's triangular inverse (ocu_trtri.c) variants, in one device call, from the
# checkout's root:
#   bash .devdeps/on-device env LIMIT=560 bash tools/gpu_trtri.sh
# 1. build bench_cuda and test_cuda (Release, sm_90);
# 2. correctness: test_cuda trtri (every variant alone at sizes around its leaves and splits,
#    and inside the executor against the CPU), then compute-sanitizer memcheck on it if time
#    is left (the workspace chunks and their copies back are new);
# 3. bench_cuda trtri W 49152 for W in $WS (the widths of the n = 49152 GJ steps and 32768):
#    TFLOP/s (W^3/3) per variant, each checked (residual, distance to cuSOLVER, lower untouched);
# 4. bench_cuda gj 49152 1024 12G 3 - trtri=$GJ_SPECS: the GJ target, one run per variant on
#    the same matrix in one process (issue 3: >= 45 TFLOP/s counting 2n^3).
# Lines starting with RESULT are the figures; logs in $OUT. SKIP="test san micro gj" skips stages.
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
B=${B:-/tmp/b-gj}
OUT=${OUT:-/tmp/gpu_trtri_out}
WS=${WS:-26624 22528 32768}
GJ_SPECS=${GJ_SPECS:-gemm,rec,ws,gemm}
mkdir -p "$OUT"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
GPU_CMAKE=-DOOC_WERROR=ON gpu_build "$OUT"/build.log bench_cuda test_cuda

if ! skip test; then
  (cd "$B" && timeout 180 ./test_cuda trtri > "$OUT"/test_trtri.log 2>&1; echo "rc=$?" >> "$OUT"/test_trtri.log)
  grep -E "asserts|tests  |rc=|FAIL|trtri cases" "$OUT"/test_trtri.log | sed "s/^/test_cuda trtri: /" | head -20
  echo "[$(el) s] test_cuda trtri"
fi
if ! skip micro; then
  for W in $WS; do
    [ "$(left)" -gt 150 ] || break
    timeout 150 "$B"/bench_cuda trtri "$W" 49152 > "$OUT"/trtri_$W.log 2>&1
    echo "[$(el) s] rc=$? bench_cuda trtri $W 49152"
    grep RESULT "$OUT"/trtri_$W.log
  done
fi
if ! skip gj && [ "$(left)" -gt 120 ]; then
  timeout $(($(left) - 20)) "$B"/bench_cuda gj 49152 1024 12G 3 - trtri=$GJ_SPECS > "$OUT"/gj.log 2>&1
  echo "[$(el) s] rc=$? bench_cuda gj 49152 1024 12G 3 - trtri=$GJ_SPECS"
  grep RESULT "$OUT"/gj.log | grep -E "RESULT gj|panel parts|probe"
fi
if ! skip san && [ "$(left)" -gt 100 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  (cd "$B" && timeout $(($(left) - 10)) "$CS" --tool memcheck --error-exitcode 9 ./test_cuda trtri > "$OUT"/memcheck.log 2>&1
   echo "[$(el) s] compute-sanitizer memcheck test_cuda trtri rc=$? (0 clean, 9 errors, 124 timed out)")
  grep -E "ERROR SUMMARY" "$OUT"/memcheck.log | tail -1
fi
echo "[$(el) s] done"
