#!/usr/bin/env bash
# gpu_check.sh: everything the CUDA backend needs checked on the GPU host, in one call.
#   bash .devdeps/on-device bash -c 'cd .wt/cuda && bash tools/gpu_check.sh'
# Stages (each with its own time limit; the whole stays under the device's 10-minute call):
#   build (Release, sm_90) -> tests: test_cuda | the other suites | (background) oocgen of the
#   n = 49152 HDF5 input -> benchmarks (tests/bench_cuda.c: DGEMM and PCIe ceilings, the tile
#   store, cuSOLVER in core, ours in core and out of GPU core) -> the CLI from HDF5 with
#   --gpu-mem 12G -> compute-sanitizer memcheck, then racecheck with the time left.
# Logs go to $OUT (at most 8 files come back): build.log bench.log cli.log test_cuda.log
# ctest.log sanitize.log trace_49152.json trace_cli.json. The last lines printed are a summary.
# Switches: TESTS=0 BENCH=0 CLI=0 SAN=0 skip a stage; QUICK=1 runs `test_cuda quick` (all but the
# n = 1000 sweep and the solves), REST=1 runs just those two (with TESTS=0 BENCH=0 CLI=0 SAN=0);
# RACE=0 skips racecheck; CMP=0 skips the cuSOLVER-trtri variant; CTEST=0 skips the other suites;
# TARGETS="bench_cuda test_cuda" builds only those; GJ=1 runs only the DGEMM/PCIe ceilings and
# the n = $N, --gpu-mem 12G GJ row, once per panel-LU leaf in LEAVES (default "0,-1": the
# default recursive LU, then cuSOLVER's getrf on the whole panel; see bench_cuda's leaf=);
# B = build directory (default /tmp/b-cuda).
#   e.g. the GJ look-ahead check (two device calls' worth in one):
#   bash .devdeps/on-device bash -c 'cd .wt/lookahead && TARGETS="bench_cuda test_cuda" QUICK=1 \
#     CTEST=0 CLI=0 SAN=0 GJ=1 LEAVES=0,-1,256,1024 bash tools/gpu_check.sh'
set -o pipefail
cd "$(dirname "$0")/.."
B=${B:-/tmp/b-cuda}
OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT"
BIG=/tmp/oocbig
N=${N:-49152}

. tools/gpu_lib.sh

cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cmake --build $B -j16 ${TARGETS:+--target $TARGETS} >> $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; exit 1; }
echo "[$(el) s] built"
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
nproc; free -g | head -2; df -h /tmp | tail -1

GEN=
if [ "${CLI:-1}" = 1 ]; then # the HDF5 input, made while the tests run (CPU and disk only)
  mkdir -p $BIG
  (g0=$(date +%s.%N); $B/oocgen random --n $N --tile 1024 --force $BIG/A.h5
   echo "oocgen rc=$? $(awk "BEGIN{print $(date +%s.%N) - $g0}") s wall") > $OUT/cli.log 2>&1 &
  GEN=$!
fi

if [ "${REST:-0}" = 1 ]; then # the parts of test_cuda that QUICK=1 leaves out, in parallel
  (cd $B && timeout 200 ./test_cuda n1000 > $OUT/test_cuda_n1000.log 2>&1; echo "test_cuda n1000 rc=$?" >> $OUT/test_cuda_n1000.log) &
  (cd $B && timeout 200 ./test_cuda solve > $OUT/test_cuda.log 2>&1; echo "test_cuda solve rc=$?" >> $OUT/test_cuda.log)
  wait
  cat $OUT/test_cuda_n1000.log >> $OUT/test_cuda.log && rm $OUT/test_cuda_n1000.log
  echo "[$(el) s] test_cuda n1000 + solve done"
fi

if [ "${TESTS:-1}" = 1 ]; then
  CT=
  if [ "${CTEST:-1}" = 1 ]; then
    (timeout 200 ctest --test-dir $B --output-on-failure -j6 -E test_cuda > $OUT/ctest.log 2>&1) &
    CT=$!
  fi
  (cd $B && timeout $([ "${QUICK:-0}" = 1 ] && echo 150 || echo 300) ./test_cuda \
     $([ "${QUICK:-0}" = 1 ] && echo quick) > $OUT/test_cuda.log 2>&1
   echo "test_cuda rc=$?" >> $OUT/test_cuda.log)
  [ -n "$CT" ] && wait $CT
  echo "[$(el) s] tests done"
fi

if [ "${GJ:-0}" = 1 ]; then
  {
    timeout 60 $B/bench_cuda ceil
    timeout ${GJ_LIMIT:-240} $B/bench_cuda gj $N 1024 12G 3 $OUT/trace_49152.json leaf=${LEAVES:-0,-1}
  } > $OUT/bench.log 2>&1
  echo "[$(el) s] GJ benchmarks done"
elif [ "${BENCH:-1}" = 1 ]; then
  {
    timeout 60 $B/bench_cuda ceil
    timeout 60 $B/bench_cuda tstore 16384 1024
    [ "${CMP:-1}" = 1 ] && timeout 60 $B/bench_cuda tstore 16384 4096
    timeout 90 $B/bench_cuda cusolver 32768
    timeout 90 $B/bench_cuda gj 32768 4096 0 3 -
    [ "${CMP:-1}" = 1 ] && timeout 90 $B/bench_cuda gj 32768 4096 0 3 - cusolver-trtri
    timeout 120 $B/bench_cuda gj $N 1024 12G 3 $OUT/trace_49152.json
  } > $OUT/bench.log 2>&1
  echo "[$(el) s] benchmarks done"
fi

if [ -n "$GEN" ]; then
  wait $GEN
  ls -la $BIG >> $OUT/cli.log
  # the whole CLI: HDF5 read, GPU compute out of GPU core (matrix 1.6x --gpu-mem), HDF5 write;
  # the probe check reads the output back (reported separately as t_check)
  c0=$(date +%s)
  timeout 240 $B/oocsolve --device cuda --gpu-mem 12G --tile 1024 --method gj --check probe \
    --force --trace $OUT/trace_cli.json --json $BIG/A.h5 >> $OUT/cli.log 2>&1
  echo "oocsolve rc=$? $(($(date +%s) - c0)) s wall" >> $OUT/cli.log
  rm -rf $BIG
  echo "[$(el) s] CLI done"
fi

if [ "${SAN:-1}" = 1 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  : > $OUT/sanitize.log
  for tool in memcheck $([ "${RACE:-1}" = 1 ] && echo racecheck); do
    left=$((570 - $(el)))
    [ $left -lt 40 ] && { echo "compute-sanitizer $tool: not run (time)" >> $OUT/sanitize.log; continue; }
    lim=$([ $tool = memcheck ] && echo $((left < 150 ? left : 150)) || echo $left)
    echo "== $tool (limit $lim s)" >> $OUT/sanitize.log
    if [ $tool = memcheck ]; then
      timeout $lim $CS --tool $tool --error-exitcode 9 $B/test_cuda sanitize >> $OUT/sanitize.log 2>&1
      echo "compute-sanitizer $tool rc=$?" >> $OUT/sanitize.log
    else # racecheck: ~50x slower; the three `race` cases side by side (~140 s on an H200)
      for k in 0 1 2; do
        (timeout $lim $CS --tool $tool --error-exitcode 9 $B/test_cuda race $k > $OUT/race$k.log 2>&1
         echo "compute-sanitizer $tool (race $k) rc=$?" >> $OUT/race$k.log) &
      done
      wait
      cat $OUT/race[012].log >> $OUT/sanitize.log && rm -f $OUT/race[012].log
    fi
  done
  echo "[$(el) s] sanitizers done"
fi

echo "==== summary"
grep -hE "Test +#|tests passed|tests failed|\*\*\*" $OUT/ctest.log 2>/dev/null
grep -hE "FAILED|asserts|Elapsed|rc=|test_cuda.c:" $OUT/test_cuda.log 2>/dev/null | head -20
grep -hE "RESULT|error|usage" $OUT/bench.log 2>/dev/null
grep -hE "oocgen|oocsolve|rc=|error" $OUT/cli.log 2>/dev/null | cut -c1-300
grep -oE '"(t_read|t_compute|t_write|t_check|t_total|gflops|residual|stripe|steps|warnings)": [^,]*' $OUT/cli.log 2>/dev/null | tr '\n' ' '
echo
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|rc=|not run" $OUT/sanitize.log 2>/dev/null
echo "[$(el) s] end"
