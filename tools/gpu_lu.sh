#!/usr/bin/env bash
# gpu_lu.sh: issue 22's GPU measurement of LU in one device call (at most LIMIT seconds):
#   LIMIT=530 bash .devdeps/on-device bash tools/gpu_lu.sh
# 1. build bench_lu_cuda, test_exec, oocsolve and oocgen (Release, sm_90) and run test_exec (the
#    executor conformance suite, CUDA included);
# 2. cuSOLVER's in-core Xgetrf at n = 40000 and ours at n = 40000 with --gpu-mem 8G (the ratio
#    is computed from the two RESULT lines), then ours at n = 65536 with --gpu-mem 16G; each of
#    ours ends with its probe check ||PAt - LUt|| / (n ||A|| ||t|| eps);
# 3. if the time left allows: `oocsolve solve --method lu --device cuda --gpu-mem 16G` at
#    n = 65536 with 256 right-hand sides from HDF5 files oocgen writes on the device's disk,
#    its JSON report (phases, residual) printed.
# 4. if time is left, variants at n = 40000: the panel's chunk 2048 and 8192 columns, tile 2048.
# With OLD=<an older source tree> (e.g. `git archive <commit>` unpacked into the ignored .wt/old
# and carried), stage ab first builds its bench_lu_cuda beside this one and runs n = 40000
# --gpu-mem 8G as old, new, old, new, back to back.
# Stage direct: n = 40000 --gpu-mem 8G with lu.h's direct moves (LU_DIRECT=$DIRECT, default 2:
# the tiles pinned as the fill makes them) and without, copy, direct, copy, direct; then n = 65536.
# SKIP="tests ab direct n40 n65 cli var" skips stages; TILE (1024) the tile of ours. Logs and RESULT lines land
# in $OUT (lu.txt: the RESULT lines; lu.tgz: the logs).
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-530}
B=${B:-/tmp/b-lu}
OUT=${OUT:-/tmp/gpu_lu_out}
R=$OUT/r
TILE=${TILE:-1024}
mkdir -p "$R"
trap 'pack lu; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $R/gpu.txt
[ -n "${OLD:-}" ] && ! skip ab && (cd "$OLD" && B=/tmp/b-lu-old gpu_build $R/build_old.log bench_lu_cuda) &
gpu_build $R/build.log bench_lu_cuda test_exec oocsolve_bin oocgen_bin
wait
res() { grep -h RESULT "$@" | tee -a $OUT/lu.txt; }
if ! skip tests; then
  (cd $B && timeout 90 ./test_exec > $R/test_exec.log 2>&1; echo "rc=$?" >> $R/test_exec.log)
  grep -E "FAILED|failed|asserts|tests  |rc=" $R/test_exec.log | sed "s/^/test_exec: /"
fi
export MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824
if [ -n "${OLD:-}" ] && ! skip ab && [ -x /tmp/b-lu-old/bench_lu_cuda ]; then
  for v in old new old new; do
    [ "$(left)" -gt 60 ] || break
    case $v in
      old) cmd="/tmp/b-lu-old/bench_lu_cuda factor 40000 $TILE 8G" ;;
      new) cmd="$B/bench_lu_cuda factor 40000 $TILE 8G" ;;
    esac
    timeout $(($(left) - 5)) $cmd > $R/ab.log 2>&1
    grep -h RESULT $R/ab.log | sed "s/^RESULT/RESULT [$v]/" | tee -a $OUT/lu.txt
    echo "[$(el) s]"
  done
fi
# lu.h's direct moves against the copies through the ring's slot, same build: DIRECT=2 (the
# default) pins every tile as the bench's fill makes it (tstore.h tcache_pin_new), DIRECT=1 as
# each is first lent; then n = 65536 --gpu-mem 16G each way if the time allows
if ! skip direct; then
  for v in copy direct copy direct; do
    [ "$(left)" -gt 60 ] || break
    dm=${DIRECT:-2}; [ $v = copy ] && dm=0
    LU_DIRECT=$dm timeout $(($(left) - 5)) $B/bench_lu_cuda factor 40000 $TILE 8G > $R/direct.log 2>&1
    grep -h RESULT $R/direct.log | sed "s/^RESULT/RESULT [$v]/" | tee -a $OUT/lu.txt
    echo "[$(el) s]"
  done
  for v in copy direct; do
    [ "$(left)" -gt 120 ] || break
    dm=${DIRECT:-2}; [ $v = copy ] && dm=0
    LU_DIRECT=$dm timeout $(($(left) - 5)) $B/bench_lu_cuda factor 65536 $TILE 16G > $R/direct65.log 2>&1
    grep -h RESULT $R/direct65.log | sed "s/^RESULT/RESULT [$v n=65536]/" | tee -a $OUT/lu.txt
    echo "[$(el) s]"
  done
fi
if ! skip n40; then
  timeout $(($(left) - 5)) $B/bench_lu_cuda cusolver 40000 > $R/cus40.log 2>&1; res $R/cus40.log
  echo "[$(el) s]"
  timeout $(($(left) - 5)) $B/bench_lu_cuda factor 40000 $TILE 8G > $R/lu40.log 2>&1; res $R/lu40.log
  echo "[$(el) s]"
  python3 - $R/cus40.log $R/lu40.log <<'PY' | tee -a $OUT/lu.txt
import re, sys
c = re.search(r"in core.*?: ([0-9.]+) s", open(sys.argv[1]).read())
o = re.search(r"steps, ([0-9.]+) s", open(sys.argv[2]).read())
if c and o:
    print("RESULT ratio n=40000: ours --gpu-mem 8G / cuSOLVER in core = %.3f (rate ratio)" % (float(c.group(1)) / float(o.group(1))))
PY
fi
if ! skip n65 && [ "$(left)" -gt 120 ]; then
  timeout $(($(left) - 5)) $B/bench_lu_cuda factor 65536 $TILE 16G > $R/lu65.log 2>&1; res $R/lu65.log
  echo "[$(el) s]"
fi
if ! skip cli && [ "$(left)" -gt 150 ]; then
  D=/tmp/lu65; mkdir -p $D
  $B/oocgen random --n 65536 --dtype f32 --tile 1024 --force $D/A.h5:/A > $R/gen.log 2>&1
  $B/oocgen rhs --n 65536 --cols 256 --force $D/B.h5:/B >> $R/gen.log 2>&1
  echo "[$(el) s] generated"; df -h /tmp | tail -1
  timeout $(($(left) - 5)) $B/oocsolve solve --device cuda --method lu --tile $TILE --gpu-mem 16G \
    --checkpoint off --json --force --out $D/X.h5 $D/A.h5:/A $D/B.h5:/B > $R/cli.json 2> $R/cli.err
  echo "[$(el) s] solve rc=$?"; cat $R/cli.json | head -c 3000; echo; tail -5 $R/cli.err
  python3 -c "import json; d=json.load(open('$R/cli.json')); print('RESULT cli solve lu n=%d m=%d: read %.2f compute %.2f write %.2f check %.2f total %.2f s, residual (HPL) %.3g, stripe %d, backend %s' % (d['n'], d.get('nrhs', 0), d['t_read'], d['t_compute'], d['t_write'], d['t_check'], d['t_total'], d['residual'], d['stripe'], d.get('backend')))" 2>&1 | tee -a $OUT/lu.txt
fi
if ! skip var; then
  for v in "$TILE 8G 0 2048" "$TILE 8G 0 8192" "2048 8G 0 0"; do
    [ "$(left)" -gt 40 ] || break
    # shellcheck disable=SC2086
    timeout $(($(left) - 5)) $B/bench_lu_cuda factor 40000 $v > $R/var.log 2>&1; res $R/var.log
  done
fi
