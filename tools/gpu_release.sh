#!/usr/bin/env bash
# gpu_release.sh: the GPU host's check of main in one device call (about 10 minutes):
#   bash .devdeps/on-device bash tools/gpu_release.sh
# build everything (Release, sm_90) -> test_cuda quick, test_cuda_chol, and every other suite in
# parallel on the CPU -> oocbench's GPU rows (tools/bench_gpu_run.sh, parts $WHAT) in the time
# left. Logs under $OUT; the last lines printed are the summary lines to quote.
set -o pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
el() { echo $(($(date +%s) - T0)); }
B=${B:-/tmp/b-release}
OUT=${OUT:-/tmp/gpu_release_out}
LIMIT=${LIMIT:-570}
mkdir -p "$OUT"
L=/opt/deps/usr/lib/x86_64-linux-gnu # staging bug: libzstd's versioned name may be missing
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
  [ -e $d/libzstd.so.1 ] && [ -d $L ] && [ ! -e $L/libzstd.so.1.5.4 ] && ln -sf $d/libzstd.so.1 $L/libzstd.so.1.5.4
done
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > $OUT/build.log 2>&1 &&
  cmake --build $B -j16 >> $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; exit 1; }
echo "[$(el) s] built"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
(timeout 240 ctest --test-dir $B --output-on-failure -j6 -E '^test_cuda' > $OUT/ctest.log 2>&1
 echo "ctest rc=$?" >> $OUT/ctest.log) &
CT=$!
(cd $B && timeout 200 ./test_cuda quick > $OUT/test_cuda.log 2>&1; echo "test_cuda rc=$?" >> $OUT/test_cuda.log)
(cd $B && timeout 150 ./test_cuda_chol > $OUT/test_cuda_chol.log 2>&1; echo "test_cuda_chol rc=$?" >> $OUT/test_cuda_chol.log)
wait $CT
echo "[$(el) s] tests done"
for f in test_cuda test_cuda_chol; do
  grep -E "FAILED|Test:.*(failed|FAILED)|asserts|tests  |rc=" $OUT/$f.log | sed "s/^/$f: /" | head -12
done
grep -E "Test +#|tests passed|tests failed|rc=" $OUT/ctest.log
if [ "${BENCH:-1}" = 1 ]; then
  OUT=$OUT/bench B=$B BUDGET=$((LIMIT - $(el))) WHAT="${WHAT:-test h100}" bash tools/bench_gpu_run.sh
fi
echo "[$(el) s] done"
