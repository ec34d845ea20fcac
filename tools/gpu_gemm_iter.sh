#!/usr/bin/env bash
# Device run for helper "iter": build the CUDA GEMM executor's benchmark, check it against the CPU
# product, measure the in-core DGEMM ceiling and the out-of-core product at n = 49152, 12 GiB.
set -o pipefail
L=/opt/deps/usr/lib/x86_64-linux-gnu
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
  [ -e $d/libzstd.so.1 ] && [ ! -e $L/libzstd.so.1.5.4 ] && ln -sf $d/libzstd.so.1 $L/libzstd.so.1.5.4
done
B=/tmp/b-iter
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DOOC_BUILD_TESTS=OFF > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
cmake --build $B -j16 --target bench_gemm_cuda oocsolve_bin oocgen_bin >> $OUT/build.log 2>&1 || { grep -E "error|Error" $OUT/build.log | head -20; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm --format=csv,noheader
{ timeout 40 $B/bench_gemm_cuda check
  timeout 20 $B/bench_gemm_cuda ceil 16384
  timeout 100 $B/bench_gemm_cuda ooc ${N:-49152} 4096 12G
  cd /tmp && timeout 15 $B/oocgen random --n 6000 --seed 1 --quiet A6k.h5 && timeout 15 $B/oocgen random --n 6000 --seed 2 --quiet B6k.h5 &&
    timeout 30 $B/oocsolve gemm --device cuda --tile 1024 --gpu-mem 400M --host-mem 4G --json A6k.h5 B6k.h5 --out C6k.h5
} 2>&1 | tee $OUT/bench.log
echo "total $(( $(date +%s) - t0 )) s"
