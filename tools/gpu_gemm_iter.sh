#!/usr/bin/env bash
# gpu_gemm_iter.sh: the GPU half of issue 5 in one or two device calls, from the checkout's root:
#   bash .devdeps/on-device env PART=1 LIMIT=290 bash tools/gpu_gemm_iter.sh
# PART=1: build -> test_iter_cuda (newton/hyper7 through the GPU executor) -> bench_gemm_cuda
#         (GPU vs CPU product check; cuBLAS DGEMM ceiling n = 16384; the out-of-core product at
#         n = 49152, tile 4096, --gpu-mem 12G, variants $VARIANTS) -> the table rows for n in
#         $NS (default 512 1024 8192) -> n = 32768 rows ($BIG) while the estimate fits LIMIT.
# PART=2: build -> ceiling and the n = 49152 product ($VARIANTS) -> test_iter_cuda while the
#         32768 inputs are generated -> the n = 32768 rows ($BIG).
# Table rows: `oocsolve --json --device cuda --method M --check $CHECK --force --out X KIND_n.h5`
# for M in newton hyper7 gj chol on oocgen matern (default length/nugget) and diagdom (not
# symmetric: no chol); one JSON object per run in $OUT/rows.jsonl.
# A 32768 row runs only if the time left exceeds the estimate in its BIG entry (seconds, from
# the 8192 rows and the first 32768 row: ~57 s of file I/O and probe check, ~22 s without check).
set -o pipefail
cd "$(dirname "$0")/.."
PART=${PART:-1}
LIMIT=${LIMIT:-290}
OUT=${OUT:-/tmp/gpu_gemm_iter_out}
B=${B:-/tmp/b-gemmgpu}
W=${W:-/tmp/gemmgpu-data}
NS=${NS-512 1024 8192}
VARIANTS=${VARIANTS:-plan 1 plan}
# "kind:method:estimate_seconds", run in this order while they fit
BIG=${BIG-diagdom:gj:40 matern:chol:35 diagdom:newton:50 matern:gj:40 diagdom:hyper7:80 matern:newton:150}
mkdir -p "$OUT" "$W"
. tools/gpu_lib.sh
GPU_CMAKE=-DOOC_BUILD_TESTS=ON gpu_build $OUT/build.log oocsolve_bin oocgen_bin bench_gemm_cuda test_iter_cuda
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
nproc

gen() { # kind n -> file (generated once)
  local f=$W/$1_$2.h5
  [ -s $f ] || $B/oocgen $1 --n $2 --quiet --force $f || return 1
  echo $f
}
row() { # kind n method [timeout]
  local f o t0 rc
  f=$(gen $1 $2) || { echo "gen $1 $2 failed"; return 1; }
  o=$W/out_$1_$2_$3.h5
  t0=$(date +%s.%N)
  timeout -k 3 ${4:-120} $B/oocsolve --json --device ${DEVICE:-cuda} --method $3 --check ${CHECK:-auto} --force --out $o $f > $W/row.json 2> $W/row.err
  rc=$?
  python3 - "$1" "$2" "$3" "$rc" "$t0" >> $OUT/rows.jsonl <<'EOF'
import json, sys, time
kind, n, method, rc, t0 = sys.argv[1:]
try:
    r = json.load(open("/tmp/gemmgpu-data/row.json"))
except Exception as e:
    r = {"error": "no JSON: %s; stderr %s" % (e, open("/tmp/gemmgpu-data/row.err").read()[-300:])}
r.update(kind=kind, n_in=int(n), method_asked=method, rc=int(rc), wall=time.time() - float(t0))
print(json.dumps(r))
EOF
  rm -f $o
  tail -1 $OUT/rows.jsonl | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("row %-8s %6d %-7s rc=%d wall %.1f s: compute %s s, iterations %s, ratio %s, %s GFLOP/s, backend %s" % (
    r["kind"], r["n_in"], r["method_asked"], r["rc"], r["wall"], r.get("t_compute"), r.get("iterations"),
    r.get("residual"), r.get("gflops"), r.get("backend")))'
}

if [ "$PART" = 1 ]; then
  if [ -n "$BIG" ]; then # the 32768 inputs are written meanwhile, on two cores
    (gen matern 32768 > /dev/null; echo "[$(el) s] matern 32768 generated") > $OUT/gen.log 2>&1 &
    (gen diagdom 32768 > /dev/null; echo "[$(el) s] diagdom 32768 generated") >> $OUT/gen.log 2>&1 &
  fi
  (cd $B && timeout 90 ./test_iter_cuda > $OUT/test_iter_cuda.log 2>&1; echo "test_iter_cuda rc=$?" >> $OUT/test_iter_cuda.log)
  grep -E "FAILED|asserts|tests  |rc=|SKIPPED" $OUT/test_iter_cuda.log | head -12
  echo "[$(el) s] test_iter_cuda done"
  { timeout 40 $B/bench_gemm_cuda check
    timeout 20 $B/bench_gemm_cuda ceil 16384
    timeout 120 $B/bench_gemm_cuda ooc ${N:-49152} 4096 12G $VARIANTS
  } > $OUT/bench.log 2>&1
  grep -E "RESULT|filled|error|bench_gemm_cuda:" $OUT/bench.log
  echo "[$(el) s] bench done"
  for n in $NS; do
    for kind in matern diagdom; do
      for m in newton hyper7 gj chol; do
        [ $kind = diagdom ] && [ $m = chol ] && continue
        row $kind $n $m 60
      done
    done
    echo "[$(el) s] n = $n done"
  done
else
  { timeout 20 $B/bench_gemm_cuda ceil 16384
    timeout 120 $B/bench_gemm_cuda ooc ${N:-49152} 4096 12G $VARIANTS
  } > $OUT/bench.log 2>&1
  grep -E "RESULT|filled|error|bench_gemm_cuda:" $OUT/bench.log
  echo "[$(el) s] bench done"
  if [ -n "$BIG" ]; then
    (gen matern 32768 > /dev/null; echo "[$(el) s] matern 32768 generated") > $OUT/gen.log 2>&1 &
    (gen diagdom 32768 > /dev/null; echo "[$(el) s] diagdom 32768 generated") >> $OUT/gen.log 2>&1 &
  fi
  (cd $B && timeout 90 ./test_iter_cuda > $OUT/test_iter_cuda.log 2>&1; echo "test_iter_cuda rc=$?" >> $OUT/test_iter_cuda.log)
  grep -E "FAILED|asserts|tests  |rc=|SKIPPED" $OUT/test_iter_cuda.log | head -12
  echo "[$(el) s] test_iter_cuda done"
fi
wait # the generators
cat $OUT/gen.log 2>/dev/null
for e in $BIG; do
  IFS=: read kind m est <<< "$e"
  left=$((LIMIT - $(el)))
  if [ $left -lt $est ]; then echo "skip $kind 32768 $m: estimate $est s, $left s left"; continue; fi
  row $kind 32768 $m $left
done
echo "[$(el) s] done"
