#!/usr/bin/env bash
# gpu_io.sh: issue 27's end-to-end table in one device call (at most LIMIT seconds):
#   OLD=.wt/base LIMIT=470 bash .devdeps/on-device bash tools/gpu_io.sh
# 1. build oocsolve and oocgen of this tree and of $OLD (main) side by side (Release, sm_90);
# 2. dd with direct I/O on the work directory's disk: 8 GiB written (oflag=direct), then read
#    back (iflag=direct): the floor's bandwidths;
# 3. the input, n = 49152 float64 Matern, tile 4096 (19.3 GB), written by oocgen;
# 4. chol, then gj: `oocsolve --device cuda --method M --tile 4096 --json` from a file not in
#    page cache, new then old. Before each run the input's pages are dropped from the page cache
#    with posix_fadvise(DONTNEED) on that one file (`dd iflag=nocache count=0`: no drop_caches),
#    and `fincore` shows what stayed; the output of each run is removed after it.
# The JSON lines land in $OUT/runs.jsonl, the summary in $OUT/io.txt, logs in $OUT/all.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-470}
OUT=${OUT:-/tmp/gpu_io_out}
R=$OUT/r
W=${WORK:-/tmp/io27}
mkdir -p "$R" "$W"
trap 'tar czf "$OUT/all.tgz" -C "$OUT" r 2> /dev/null; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
NEW=$PWD
(B=/tmp/b-new gpu_build $R/build_new.log oocsolve_bin oocgen_bin) &
(cd "$OLD" && B=/tmp/b-old gpu_build $R/build_old.log oocsolve_bin oocgen_bin) &
wait
[ -x /tmp/b-new/oocsolve ] && [ -x /tmp/b-old/oocsolve ] || { echo "build failed"; exit 1; }
echo "[$(el) s] built old and new" | tee -a $OUT/io.txt
df -h "$W" | tail -1 | tee -a $OUT/io.txt

# dd: bytes per second from dd's own count and the wall time
ddbw() { # dd args...: prints bytes/s
  local t0 t1
  t0=$(date +%s.%N)
  dd "$@" status=none || return 1
  t1=$(date +%s.%N)
  python3 -c "print(int(8*2**30/($t1-$t0)))"
}
WBW=$(ddbw if=/dev/zero of=$W/dd.bin bs=64M count=128 oflag=direct conv=fsync)
RBW=$(ddbw if=$W/dd.bin of=/dev/null bs=64M iflag=direct)
rm -f $W/dd.bin
echo "dd direct: write $WBW B/s, read $RBW B/s" | tee -a $OUT/io.txt

N=${N:-49152}
t0=$(date +%s.%N)
/tmp/b-new/oocgen matern --n $N --tile 4096 $W/A.h5 > $R/gen.log 2>&1 || { cat $R/gen.log; exit 1; }
echo "[$(el) s] input n = $N: $(stat -c %s $W/A.h5) bytes, generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a $OUT/io.txt

evict() {
  sync
  dd if=$W/A.h5 iflag=nocache count=0 status=none
  (command -v fincore > /dev/null && fincore $W/A.h5 | tail -1) || echo "(no fincore)"
}
one() { # method version
  local m=$1 v=$2 extra=()
  [ $v = new ] && extra=(--disk-bw "$RBW,$WBW")
  if [ "$(left)" -lt 80 ]; then echo "$m $v: not run ($(left) s left)" | tee -a $OUT/io.txt; return; fi
  echo "$m $v: page cache before: $(evict)" | tee -a $OUT/io.txt
  timeout $(($(left) - 5)) /tmp/b-$v/oocsolve --device cuda --method $m --tile 4096 --json \
    "${extra[@]}" --force --out $W/X.h5:/inverse $W/A.h5 > $R/$m.$v.json 2> $R/$m.$v.err
  echo "rc=$?" >> $R/$m.$v.err
  rm -f $W/X.h5
  head -c 100000 $R/$m.$v.json >> $OUT/runs.jsonl
  echo >> $OUT/runs.jsonl
  python3 - "$R/$m.$v.json" "$RBW" "$WBW" "$m $v" << 'EOF' | tee -a $OUT/io.txt
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[4], "no JSON:", e); sys.exit()
rb, wb = float(sys.argv[2]), float(sys.argv[3])
fl = d["bytes_input"] / rb + 8 * d["n"] ** 2 / wb
print("%s: status %s read %.1f compute %.1f spill %.1f write %.1f check %.1f total %.1f s; "
      "floor %.1f s, %.2fx (report: t_floor %s, floor_ratio %s); tile %s stripe %s residual %.3g"
      % (sys.argv[4], d["status"], d["t_read"], d["t_compute"], d["t_spill"], d["t_write"],
         d["t_check"], d["t_total"], fl, d["t_total"] / fl, d.get("t_floor"),
         d.get("floor_ratio"), d["tile"], d["stripe"], d["residual"] or float("nan")))
EOF
}
for m in ${METHODS:-chol gj}; do
  for v in new old; do one $m $v; done
done
