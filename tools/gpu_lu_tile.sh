#!/usr/bin/env bash
# gpu_lu_tile.sh: the CLI's LU factor beside bench_lu_cuda's, both traced, in one device call
# (issue 22; it found why the CLI's factor at n = 40000, --gpu-mem 8G, took 2.27-2.49 s where the
# bench took 1.6-1.7 s on an H200: the bench's matrix did not pivot, so the host's final swaps
# cost it nothing; docs/PERFORMANCE.md "ninth session"):
#   LIMIT=280 bash .devdeps/on-device bash tools/gpu_lu_tile.sh   (TILES: the bench's tiles, "1000 1024")
# 1. build bench_lu_cuda, oocsolve and oocgen (Release, sm_90) into B;
# 2. cuSOLVER's in-core Xgetrf at n = 40000 (the peer);
# 3. the bench with every tile pinned as it is made (LU_DIRECT=2, what the CLI's load does), at
#    the CLI's tile (1000: plan_tile evens --tile 1024 at n = 40000) and at 1024, each once plain
#    and once traced (LU_TRACE);
# 4. the CLI's `oocsolve factor --method lu --device cuda --tile 1024 --gpu-mem 8G`, traced, and
#    once without the trace;
# 5. tools/trace_sum.py over each trace: per queue and operation the seconds, each queue's busy
#    time, the compute queue's gaps and the host spans during them. Logs and traces land in $OUT/tile.tgz, RESULT lines in $OUT/lu_tile.txt.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-280}
B=${B:-/tmp/b-tile}
OUT=${OUT:-/tmp/gpu_lu_tile_out}
R=$OUT/tile
D=${D:-/tmp/tile}
N=${N:-40000}
mkdir -p "$R" "$D"
trap 'pack tile; rm -rf "$D"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
gpu_build $R/build.log bench_lu_cuda oocsolve_bin oocgen_bin
res() { tee -a $OUT/lu_tile.txt; }
$B/bench_lu_cuda cusolver $N 2>&1 | grep RESULT | res
for t in ${TILES:-1000 1024}; do
  [ "$(left)" -lt 60 ] && break
  LU_DIRECT=2 $B/bench_lu_cuda factor $N $t 8G > $R/bench$t.log 2>&1
  LU_DIRECT=2 LU_TRACE=$R/bench$t.trace.json $B/bench_lu_cuda factor $N $t 8G > $R/bench${t}t.log 2>&1
  grep -h "RESULT lu factor.*TFLOP\|RESULT lu factor.*phases" $R/bench$t.log $R/bench${t}t.log |
    sed "s/^/bench tile $t: /" | res
done
if [ "$(left)" -gt 70 ]; then
  $B/oocgen random --n $N --tile 1024 --quiet --force $D/A.h5:/A
  for tr in 1 0; do
    [ "$(left)" -lt 40 ] && break
    x=; [ $tr = 1 ] && x="--trace $R/cli.trace.json"
    # shellcheck disable=SC2086
    $B/oocsolve factor --method lu --device cuda --tile 1024 --gpu-mem 8G --checkpoint off \
      --json --force $x --out $D/F.h5 $D/A.h5:/A > $R/cli$tr.json 2> $R/cli$tr.err
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('cli trace=%s: t_factor %.3f s, compute %.2f, stripe %d, tile %d; %s' % (sys.argv[2], d.get('t_factor',0), d['t_compute'], d['stripe'], d.get('tile',0), d.get('warnings','')))" $R/cli$tr.json $tr 2>&1 | res
    rm -f $D/F.h5
  done
fi
for f in $R/*.trace.json; do
  [ -s "$f" ] && { echo "== $(basename $f)"; python3 tools/trace_sum.py $f; } >> $R/traces.txt 2>&1
done
cat $R/traces.txt
