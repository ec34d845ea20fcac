#!/usr/bin/env bash
# gpu_io.sh: issue 27's end-to-end table in one device call (at most LIMIT seconds):
#   N=45056 LIMIT=580 bash .devdeps/on-device bash tools/gpu_io.sh     (carry .devdeps and .whl)
#   OLD=.wt/base ... the same with an older tree's runs after each of this one's
# 1. build oocsolve and oocgen of this tree (and of $OLD when set) side by side (Release, sm_90);
# 2. dd with direct I/O on the work directory's disk: 8 GiB written (oflag=direct), then read
#    back (iflag=direct): the floor's bandwidths (measured again at the end where 40 s are
#    left, so that the summary shows how far the floor drifted during the call);
# 3. the input, n = N (49152; the H200 host's 64 GiB disk holds input and output of n = 45056)
#    float64 Matern, tile 4096, written by oocgen;
# 4. chol, then gj: `oocsolve --device cuda --method M --tile 4096 --json --disk-bw R,W` from a
#    file not in page cache (then $OLD's). Before each run the input's pages are dropped from
#    the page cache with posix_fadvise(DONTNEED) on that one file (`dd iflag=nocache count=0`:
#    no drop_caches), and `fincore` shows what stayed; the output of each run is removed after it;
# 5. stage py: what a Python user does instead (tools/h5py_cupy_inverse.py: h5py read, cupy
#    Cholesky inverse, h5py write + fsync) from the same cold file, when h5py imports (the
#    wheel carried in .whl is installed first);
# 6. stage shm: the input copied to /dev/shm, chol there (output there too): the floor is
#    memory copies (dd direct on tmpfs);
# 7. stage big: chol at n = N65 (65536) float32 with --gpu-mem 16G from a cold file (then
#    $OLD's; REPS65 (1) times each), when the disk has room for its input and output (else it
#    says so); TILES65="4096 1024 2048" runs it at each --tile in turn (the file's chunks stay
#    4096; tags chol.65536.t<tile>...).
# METHODS (chol gj) may name lufactor, last: `oocsolve factor --method lu --tile 1024 --gpu-mem
# 8G` (issue 22's factor) on a random input of n = N_LU (40000) written before its first run
# (A.h5 removed first when the disk has no room for both), output as large as the input.
# NEW_ENV="VAR=value ...": each run made a third time, by this tree's binary under that
# environment (tag .env; e.g. NEW_ENV=OOCSOLVE_WRITE_FLUSH=0, no writeback asked for during
# the write phase, or NEW_ENV=OOCSOLVE_LAZY_READ=0, chol's inverse reading A first instead of
# while its first step runs).
# SKIP="py shm big" skips stages; WARM=1 leaves the input in the page cache (the read phase
# without the disk: what the load itself costs); REPS (1) runs each method and tree REPS times. The JSON lines land in $OUT/runs.jsonl, the summary in
# $OUT/io.txt, logs in $OUT/io.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-470}
OUT=${OUT:-/tmp/gpu_io_out}
R=$OUT/r
W=${WORK:-/tmp/io27}
BOLD=${BOLD:-/tmp/b-old} # the old tree's build
mkdir -p "$R" "$W"
trap 'declare -F dd_again > /dev/null && dd_again; pack io; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
NEW=$PWD
(B=/tmp/b-new gpu_build $R/build_new.log oocsolve_bin oocgen_bin) &
[ -n "${OLD:-}" ] && (cd "$OLD" && B=$BOLD gpu_build $R/build_old.log oocsolve_bin oocgen_bin) &
if [ -d .whl ] && ! skip py; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl > $R/pip.log 2>&1 && export PYTHONPATH=/tmp/site
fi
wait
[ -x /tmp/b-new/oocsolve ] || { echo "build failed"; exit 1; }
VERS="new"
[ -n "${OLD:-}" ] && { [ -x $BOLD/oocsolve ] || { echo "old build failed"; exit 1; }; VERS="new old"; }
[ -n "${NEW_ENV:-}" ] && VERS="$VERS env"
echo "[$(el) s] built $VERS" | tee -a $OUT/io.txt
df -hT "$W" | tail -1 | tee -a $OUT/io.txt # (the file system type: buffered writes to one file)
# when the kernel starts writing dirty pages back on its own (the output's writeback, issue 27)
(sysctl vm.dirty_background_ratio vm.dirty_background_bytes vm.dirty_ratio \
  vm.dirty_expire_centisecs || grep . /proc/sys/vm/dirty_*) 2> /dev/null | tr '\n' ' ' | tee -a $OUT/io.txt
echo | tee -a $OUT/io.txt

# dd: bytes per second from dd's own count and the wall time
ddbw() { # dd args...: prints bytes/s
  local t0 t1
  t0=$(date +%s.%N)
  dd "$@" status=none || return 1
  t1=$(date +%s.%N)
  python3 -c "print(int(8*2**30/($t1-$t0)))"
}
dd_pair() { # DIR: prints "W R", bytes/s of 8 GiB written with direct I/O, then read back
  local w r
  w=$(ddbw if=/dev/zero of=$1/dd.bin bs=64M count=128 oflag=direct conv=fsync)
  r=$(ddbw if=$1/dd.bin of=/dev/null bs=64M iflag=direct)
  rm -f $1/dd.bin
  echo "$w $r"
}
# dd again at the end, where 40 s are left: the floor's own drift over the call (the GPU hosts'
# virtual disks moved dd's figures by 10-30% between calls, docs/PERFORMANCE.md)
dd_again() {
  [ -n "${RBW:-}" ] && [ "$(left)" -gt 40 ] && mkdir -p "$W" || return 0
  local w r
  read -r w r <<< "$(dd_pair $W)"
  echo "dd direct at the end: write $w B/s, read $r B/s (at the start: $WBW, $RBW)" | tee -a $OUT/io.txt
}
read -r WBW RBW <<< "$(dd_pair $W)"
echo "dd direct: write $WBW B/s, read $RBW B/s" | tee -a $OUT/io.txt

N=${N:-49152}
t0=$(date +%s.%N)
/tmp/b-new/oocgen matern --n $N --tile 4096 $W/A.h5 > $R/gen.log 2>&1 || { cat $R/gen.log; exit 1; }
echo "[$(el) s] input n = $N: $(stat -c %s $W/A.h5) bytes, generated in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a $OUT/io.txt
lu_input() { # LU's random input, before its first run; A.h5 goes first if the disk needs it
  [ -f $W/LU.h5 ] && return
  local nl=${N_LU:-40000}
  if [ $(($(df --output=avail -B1 "$W" | tail -1))) -lt $((16 * nl * nl + (2 << 30))) ]; then
    rm -f $W/A.h5
    echo "(A.h5 removed: the disk holds LU's input and output only without it)" | tee -a $OUT/io.txt
  fi
  /tmp/b-new/oocgen random --n $nl --tile 1024 $W/LU.h5:/A > $R/gen_lu.log 2>&1 ||
    { cat $R/gen_lu.log; exit 1; }
  echo "[$(el) s] LU's input n = $nl written" | tee -a $OUT/io.txt
}

evict() { # FILE: its pages dropped from the page cache (WARM=1: left there)
  [ "${WARM:-0}" = 1 ] && { echo "(kept: WARM=1)"; return; }
  sync
  dd if="$1" iflag=nocache count=0 status=none
  (command -v fincore > /dev/null && fincore "$1" | tail -1) || echo "(no fincore)"
}
# one METHOD VERSION [TAG DIR INPUT RBW WBW oocsolve-args...]: a run from DIR/INPUT (evicted
# first when DIR is the disk), the output in DIR
one() {
  local m=$1 v=$2 tag=${3:-$1.$2} dir=${4:-$W} in=${5:-A.h5} rb=${6:-$RBW} wb=${7:-$WBW}
  shift 7 2> /dev/null || shift $#
  local extra=(--disk-bw "$rb,$wb" "$@")
  if [ "$(left)" -lt 80 ]; then echo "$tag: not run ($(left) s left)" | tee -a $OUT/io.txt; return; fi
  local bin=/tmp/b-new/oocsolve envs=()
  [ $v = old ] && bin=$BOLD/oocsolve
  [ $v = env ] && read -r -a envs <<< "$NEW_ENV"
  local job=(--method $m --tile 4096) out=$dir/X.h5:/inverse
  if [ $m = lufactor ]; then
    lu_input
    job=(factor --method lu --tile 1024 --gpu-mem 8G)
    out=$dir/X.h5:/LU
    [ "$in" = A.h5 ] && in=LU.h5
  fi
  echo "$tag: page cache before: $(evict $dir/$in)" | tee -a $OUT/io.txt
  env "${envs[@]}" timeout $(($(left) - 5)) $bin "${job[@]}" --device cuda --json \
    "${extra[@]}" --force --out $out $dir/$in > $R/$tag.json 2> $R/$tag.err
  echo "rc=$?" >> $R/$tag.err
  rm -f $dir/X.h5
  head -c 100000 $R/$tag.json >> $OUT/runs.jsonl
  echo >> $OUT/runs.jsonl
  python3 - "$R/$tag.json" "$rb" "$wb" "$tag" << 'EOF' | tee -a $OUT/io.txt
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[4], "no JSON:", e); sys.exit()
rb, wb = float(sys.argv[2]), float(sys.argv[3])
fl = d["bytes_input"] / rb + d["bytes_input"] / wb  # an inverse or a factor: as many out as in
print("%s: status %s read %.1f compute %.1f spill %.1f write %.1f check %.1f (%.1f GB read "
      "back) commit %.1f total %.1f s; floor %.1f s, %.2fx (report: t_floor %s, floor_ratio %s); "
      "tile %s stripe %s residual %.3g"
      % (sys.argv[4], d["status"], d["t_read"], d["t_compute"], d["t_spill"], d["t_write"],
         d["t_check"], d["bytes_check_read"] / 1e9, d.get("t_commit", 0), d["t_total"], fl,
         d["t_total"] / fl, d.get("t_floor"), d.get("floor_ratio"), d["tile"], d["stripe"],
         d["residual"] or float("nan")))
EOF
}
for m in ${METHODS:-chol gj}; do
  for i in $(seq 1 ${REPS:-1}); do
    for v in $VERS; do one $m $v $m.$v.$i; done
  done
done
if ! skip py && python3 -c "import h5py, cupy" 2> /dev/null && [ "$(left)" -gt 90 ]; then
  echo "py: page cache before: $(evict $W/A.h5)" | tee -a $OUT/io.txt
  timeout $(($(left) - 5)) python3 tools/h5py_cupy_inverse.py $W/A.h5:/A $W/X.h5:/inverse \
    > $R/py.log 2>&1
  echo "rc=$?" >> $R/py.log
  grep -E "RESULT|Error|rc=" $R/py.log | tee -a $OUT/io.txt
  rm -f $W/X.h5
fi
if ! skip shm && [ "$(left)" -gt 100 ]; then
  S=/dev/shm/io27
  mkdir -p $S
  read -r SW SR <<< "$(dd_pair $S)"
  echo "dd direct on /dev/shm: write $SW B/s, read $SR B/s" | tee -a $OUT/io.txt
  cp $W/A.h5 $S/A.h5
  one chol new chol.shm $S A.h5 "$SR" "$SW"
  rm -rf $S
fi
rm -f $W/A.h5 $W/LU.h5
N65=${N65:-65536}
if ! skip big && [ "$(left)" -gt 200 ]; then
  need=$((2 * N65 * N65 * 4 + (1 << 30)))
  have=$(($(df --output=avail -B1 "$W" | tail -1)))
  if [ "$have" -lt "$need" ]; then
    echo "big: not run (the disk has $have bytes free, input and output need $need)" | tee -a $OUT/io.txt
  else
    /tmp/b-new/oocgen matern --n $N65 --dtype f32 --tile 4096 $W/A65.h5 > $R/gen65.log 2>&1
    echo "[$(el) s] input n = $N65 f32 written" | tee -a $OUT/io.txt
    for i in $(seq 1 ${REPS65:-1}); do
      for t in ${TILES65:-4096}; do
        tt=; [ "${TILES65:-4096}" = 4096 ] || tt=t$t.
        for v in $VERS; do
          one chol $v chol.65536.$tt$v.$i $W A65.h5 "$RBW" "$WBW" --gpu-mem 16G --tile $t
        done
      done
    done
    rm -f $W/A65.h5
  fi
fi
