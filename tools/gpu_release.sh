#!/usr/bin/env bash
# gpu_release.sh: the GPU host's check of main in one device call (at most LIMIT seconds):
#   bash .devdeps/on-device bash tools/gpu_release.sh
# 1. build the GPU suites and benchmarks (Release, sm_90; the CPU suites run in CI instead);
# 2. test_cuda quick, test_cuda_chol and test_iter_cuda, side by side on the GPU, then
#    test_cuda_rt (the CUDA runtime, --gpu-mem per executor, device fault loops) alone, then
#    test_exec, test_plugin, `test_budget gpu` (issue 18: every method's --gpu-mem sweep, the
#    device peak within it, refusals, what ran), test_gj (gj on every executor, CUDA's
#    included) and test_mgpu;
# 3. the headline rows of docs/PERFORMANCE.md, each only if the time left allows it:
#    gj n = 32768 in core against cuSOLVER getrf+getrs(I) and gj n = 49152 with --gpu-mem 12G
#    (issue 3), chol n = 65536 with --gpu-mem 16G (issue 4), the out-of-core product n = 49152
#    with --gpu-mem 12G, cold then warm (issue 5);
# 4. compute-sanitizer: memcheck on test_cuda's and test_cuda_chol's sanitize cases, racecheck on
#    test_cuda's race cases 0 and 2 and test_cuda_chol's sanitize cases side by side, then
#    race case 1 (four streams, the slowest) alone;
# 5. oocbench's `h100` part (tools/bench_gpu_run.sh) in what is left.
# Everything lands in $OUT/release.tgz (the device returns at most 8 files); the last lines printed
# are the summary lines to quote. SKIP="tests bench san oocbench" skips stages.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-570}
B=${B:-/tmp/b-release}
OUT=${OUT:-/tmp/gpu_release_out}
R=$OUT/r # logs; tarred at the end
mkdir -p "$R"
finish() {
  pack release
  echo "[$(el) s] done"
}
trap finish EXIT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader | tee $R/gpu.txt
gpu_build $R/build.log test_cuda test_cuda_chol test_iter_cuda test_cuda_rt test_exec test_plugin test_budget test_gj test_mgpu bench_cuda bench_cuda_chol \
  bench_gemm_cuda oocbench_bin oocsolve_bin oocgen_bin test_bench

if ! skip tests; then
  (cd $B && timeout 240 ./test_cuda quick > $R/test_cuda.log 2>&1; echo "rc=$?" >> $R/test_cuda.log) &
  (cd $B && timeout 240 ./test_cuda_chol > $R/test_cuda_chol.log 2>&1; echo "rc=$?" >> $R/test_cuda_chol.log) &
  (cd $B && timeout 240 ./test_iter_cuda > $R/test_iter_cuda.log 2>&1; echo "rc=$?" >> $R/test_iter_cuda.log) &
  wait
  # alone: its device fault loops print the GPU's free memory, which other processes move
  (cd $B && timeout 120 ./test_cuda_rt > $R/test_cuda_rt.log 2>&1; echo "rc=$?" >> $R/test_cuda_rt.log)
  (cd $B && timeout 60 ./test_exec > $R/test_exec.log 2>&1; echo "rc=$?" >> $R/test_exec.log)
  (cd $B && timeout 60 ./test_plugin > $R/test_plugin.log 2>&1; echo "rc=$?" >> $R/test_plugin.log)
  # alone: the budget sweep on the GPU (every method over n, tile, --stripe, --gpu-mem)
  (cd $B && timeout 200 ./test_budget gpu > $R/test_budget_gpu.log 2>&1; echo "rc=$?" >> $R/test_budget_gpu.log)
  # gj on every executor, the CUDA one included (its cases run where there is a GPU)
  (cd $B && timeout 180 ./test_gj > $R/test_gj.log 2>&1; echo "rc=$?" >> $R/test_gj.log) &
  # several devices: host devices everywhere, GPUs where the host has two or more
  (cd $B && timeout 180 ./test_mgpu > $R/test_mgpu.log 2>&1; echo "rc=$?" >> $R/test_mgpu.log) &
  wait
  echo "[$(el) s] tests done"
  for f in test_cuda test_cuda_chol test_iter_cuda test_cuda_rt test_exec test_plugin test_budget_gpu test_gj test_mgpu; do
    grep -E "FAILED|Test:.*(failed|FAILED)|asserts|tests  |rc=|budget sweep:|SKIPPED|OVER BUDGET" $R/$f.log |
      sed "s/^/$f: /" | head -12
  done
fi

run() { # seconds-needed log command...: run it when the time left allows, else say so
  local need=$1 log=$2
  shift 2
  if [ "$(left)" -lt "$need" ]; then
    echo "not run ($(left) s left, needs ~$need): $*" | tee -a $R/$log
    return
  fi
  timeout $(($(left) - 5)) "$@" >> $R/$log 2>&1
  echo "[$(el) s] rc=$? $*" | tee -a $R/$log
}
if ! skip bench; then
  run 60 gj.log $B/bench_cuda cusolver 32768
  run 60 gj.log $B/bench_cuda gj 32768 4096 0 3 -
  grep -E "RESULT" $R/gj.log
  MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824 \
    run 150 chol.log $B/bench_cuda_chol run 65536 1024 16G
  grep -E "RESULT" $R/chol.log
  run 60 gj49152.log $B/bench_cuda gj 49152 1024 12G 3 -
  grep -E "RESULT gj" $R/gj49152.log
  run 90 gemm.log $B/bench_gemm_cuda ooc 49152 4096 12G plan plan
  grep -E "RESULT ooc.*TFLOP" $R/gemm.log
fi
if ! skip san && [ "$(left)" -gt 200 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  san() { # log tool args...
    local log=$1 tool=$2
    shift 2
    timeout $(($(left) - 10)) $CS --tool $tool --error-exitcode 9 "$@" > $R/$log 2>&1
    echo "compute-sanitizer $tool $* rc=$?" >> $R/$log
  }
  (cd $B && san mem_gj.log memcheck ./test_cuda sanitize) &
  (cd $B && san mem_chol.log memcheck ./test_cuda_chol sanitize) &
  wait
  for k in 0 2; do (cd $B && san race_gj$k.log racecheck ./test_cuda race $k) & done
  (cd $B && san race_chol.log racecheck ./test_cuda_chol sanitize) &
  wait
  # alone: four streams under racecheck did not finish in 440 s beside the other three
  (cd $B && san race_gj1.log racecheck ./test_cuda race 1)
  echo "[$(el) s] sanitizers done"
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|rc=" $R/mem_*.log $R/race_*.log
fi
if ! skip oocbench && [ "$(left)" -gt 90 ]; then
  OUT=$R/bench B=$B BUDGET=$(($(left) - 15)) WHAT="${WHAT:-h100}" bash tools/bench_gpu_run.sh \
    > $R/oocbench.log 2>&1
  grep -E "^==|rows|^\| (gj|chol)" $R/oocbench.log | head -30
fi
