#!/usr/bin/env bash
# gpu_gemm_ends.sh: issue 5's product with and without the schedule's ends, in one device call,
# from the checkout's root:
#   bash .devdeps/on-device env LIMIT=560 bash tools/gpu_gemm_ends.sh
# 1. build bench_gemm_cuda and test_iter_cuda (Release, sm_90);
# 2. correctness with the ends: bench_gemm_cuda check (GPU vs CPU product, ends on and off),
#    test_iter_cuda, and compute-sanitizer memcheck on the check (the strided piece copies and
#    the sub-block GEMMs are new);
# 3. the sustained DGEMM rate of the product's GEMMs alone (bench_gemm_cuda gemms): the new
#    plan's shapes (block 16384) and the previous plan's (2s3: block 20480);
# 4. the product, n = 49152, tile 4096, --gpu-mem 12G, one process, A and B filled once:
#    $VARIANTS (default below; bench_gemm_cuda.c has the grammar):
#      plan     the new plan (block 16384 at this size, ends on)     2s3e0  the previous plan
#      2s3      the previous block with the ends                      plane0 the new block without
#      ...c     into a fresh C store (cold); the first variant is cold too
# Lines starting with RESULT are the figures; logs in $OUT. SKIP="check san gemms" skips stages.
set -o pipefail
cd "$(dirname "$0")/.." || exit 1
B=${B:-/tmp/b-gemmends}
OUT=${OUT:-/tmp/gpu_gemm_ends_out}
VARIANTS=${VARIANTS:-plan 2s3e0c plan 2s3e0 2s3 plane0 planc 2s3e0c}
mkdir -p "$OUT"
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
gpu_build "$OUT"/build.log bench_gemm_cuda test_iter_cuda

if ! skip check; then
  timeout 120 "$B"/bench_gemm_cuda check > "$OUT"/check.log 2>&1
  echo "[$(el) s] rc=$? bench_gemm_cuda check"
  grep -E "RESULT" "$OUT"/check.log
  (cd "$B" && timeout 240 ./test_iter_cuda > "$OUT"/test_iter_cuda.log 2>&1; echo "rc=$?" >> "$OUT"/test_iter_cuda.log)
  grep -E "asserts|tests  |rc=" "$OUT"/test_iter_cuda.log | sed "s/^/test_iter_cuda: /"
fi
if ! skip san && [ "$(left)" -gt 400 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout 150 "$CS" --tool memcheck --error-exitcode 9 "$B"/bench_gemm_cuda check > "$OUT"/memcheck.log 2>&1
  echo "[$(el) s] compute-sanitizer memcheck bench_gemm_cuda check rc=$? (0 clean, 9 errors, 124 timed out)"
  grep -E "ERROR SUMMARY|RESULT" "$OUT"/memcheck.log | tail -2
fi
if ! skip gemms && [ "$(left)" -gt 200 ]; then
  timeout 90 "$B"/bench_gemm_cuda gemms 49152 4096 12G plan 2s3 > "$OUT"/gemms.log 2>&1
  echo "[$(el) s] rc=$? bench_gemm_cuda gemms"
  grep -E "RESULT" "$OUT"/gemms.log
fi
if [ "$(left)" -gt 60 ]; then
  # shellcheck disable=SC2086
  timeout $(($(left) - 5)) "$B"/bench_gemm_cuda ooc 49152 4096 12G $VARIANTS > "$OUT"/ooc.log 2>&1
  echo "[$(el) s] rc=$? bench_gemm_cuda ooc 49152 4096 12G $VARIANTS"
  grep -E "RESULT" "$OUT"/ooc.log
else
  echo "not run ($(left) s left): bench_gemm_cuda ooc"
fi
echo "[$(el) s] done"
