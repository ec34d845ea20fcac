#!/usr/bin/env bash
# tools/bench_gpu_run.sh: build oocbench on the GPU host and run the H100 benchmarks of
# docs/PERFORMANCE.md inside one time budget; results (JSON, table.md, PNGs, logs) under $OUT.
#
#   OUT=/path BUDGET=540 WHAT="test main big gj-thesis climate" bash tools/bench_gpu_run.sh
#
# WHAT picks the parts, in order (each gets --max-time from what is left of BUDGET seconds, and a
# hard timeout 30 s later, so the script ends within about BUDGET + 20 s; oocbench rewrites its
# JSON after every row, so a part cut short keeps its rows):
#   test       ctest test_bench: `oocbench --quick` with the GPU rows, every row checked (~20 s)
#   gj-thesis  --preset gj-thesis (gj CPU vs GPU vs LAPACK and cuSOLVER LU, f64 and f32)
#   main       n = 4096, 8192, 16384: gj, chol, newton, hyper7 against cuSOLVER, random + matern
#   big        n = 32768: gj against cuSOLVER getrf+getrs(I), random (2 repetitions)
#   climate    --preset climate (newton, hyper7 vs gj, chol; Table 2 sizes and beyond)
#   h100       n = 8192, 16384, 32768 Matern: gj and chol on the GPU against cuSOLVER (the short
#              release table of docs/PERFORMANCE.md; tools/gpu_release.sh runs it)
# The generated matrices and oocsolve's outputs go to $DATA (default /tmp/oocbench-data), never
# under $OUT, so multi-GB files are not fetched back.
set -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/bench-out}
B=${B:-/tmp/b-bench}
DATA=${DATA:-/tmp/oocbench-data}
BUDGET=${BUDGET:-540}
WHAT=${WHAT:-test main big gj-thesis climate}
T0=$(date +%s)
mkdir -p "$OUT" "$DATA"
left() { echo $((BUDGET - ($(date +%s) - T0))); }

# staging fix for the device image (see COMMON.md)
L=/opt/deps/usr/lib/x86_64-linux-gnu
if [ -d $L ]; then
  for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
    [ -e $d/libzstd.so.1 ] && [ ! -e $L/libzstd.so.1.5.4 ] && ln -sf $d/libzstd.so.1 $L/libzstd.so.1.5.4
  done
fi
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 &&
  cmake --build $B -j"$(nproc)" --target oocbench_bin test_bench >> "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "build done in $(($(date +%s) - T0)) s"
command -v nvidia-smi > /dev/null &&
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader

part() { # name, then oocbench arguments
  local name=$1
  shift
  local t=$(($(left) - 20))
  if [ $t -lt 30 ]; then
    echo "$name: not run, $(left) s left of BUDGET=$BUDGET"
    return
  fi
  timeout -s TERM $((t + 30)) $B/oocbench "$@" --max-time $t --data "$DATA/$name" \
    --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  echo "== $name: exit $? after $(($(date +%s) - T0)) s (oocbench --max-time $t)"
  grep -E "^oocbench: [0-9]+ rows" "$OUT/$name.log"
  [ -f "$OUT/$name/table.md" ] && sed -n '/^| method | device | dtype/,$p' "$OUT/$name/table.md"
  grep -E " (error|fail) " "$OUT/$name.log" | head -20
  rm -rf "${DATA:?}/$name"
}

for w in $WHAT; do
  case $w in
  test)
    (cd $B && timeout 180 ctest -R test_bench --output-on-failure > "$OUT/test_bench.log" 2>&1
     echo "== test_bench: exit $?")
    grep -E "FAILED|tests passed|tests failed" "$OUT/test_bench.log" | head -20 ;;
  gj-thesis) part gj-thesis --preset gj-thesis ;;
  main) part main --sizes 4096,8192,16384 --methods gj,chol,newton,hyper7 --peers cusolver,gemm \
          --types random,matern --reps 3 ;;
  big) part big --sizes 32768 --methods gj --peers cusolver,gemm --types random --reps 2 ;;
  climate) part climate --preset climate ;;
  h100) part h100 --sizes 8192,16384,32768 --methods gj,chol --peers cusolver,gemm --types matern \
          --device cuda --reps 2 ;;
  *) echo "unknown part '$w'" ;;
  esac
done
echo "total $(($(date +%s) - T0)) s"
