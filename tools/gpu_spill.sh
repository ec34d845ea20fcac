#!/usr/bin/env bash
# gpu_spill.sh: issue 27's beyond-host-memory table in one device call (at most LIMIT seconds):
#   LIMIT=560 bash .devdeps/on-device bash tools/gpu_spill.sh
# 1. build oocsolve and oocgen (Release, sm_90);
# 2. dd with direct I/O in the work directory (the scratch store's disk): tools/disk_bw.sh, 4 GiB;
# 3. the input: n = N (32768) float64 Matern, tile TILE (2048), chunks = tiles (so A's tiles can
#    fall back on the input: docs/ARCHITECTURE.md "A's tiles fall back on the input");
# 4. for chol and gj (METHODS; lufactor: `oocsolve factor --method lu`, LU's factor, whose
#    model is lu.h's), `--host-mem` in MEMS (4G 6G 64G): `oocsolve --device cuda --method M
#    --gpu-mem GPUMEM --tile TILE --checkpoint off --json`, scratch and output on the same disk.
#    Each line: what the elimination spilled and read back beside the stripe arithmetic's model
#    (plan_spill_model), what stayed in the input, the phases and the total against the run with
#    the whole matrix in memory (the last MEMS entry).
# TRACE=1: each run also writes its Chrome trace (--trace) into the logs.
# CKPT=default: the runs journaled, as out of core by default (no --checkpoint off).
# SCRATCH=<dir>: the scratch store there instead (/dev/shm: tmpfs, which the kernel never writes
# back to a disk; the input and the output stay in the work directory).
# OLD=<tree> (a git archive of an older commit, carried in .wt): its oocsolve built beside this
# one's, and each run with --host-mem in OLD_MEMS (4G) made by it too, right after this tree's
# (old against new in one call).
# ENVS="VAR=v VAR=w": each run with --host-mem in ENV_MEMS (4G) made again by this tree's
# oocsolve under each assignment (a tuning knob against the default in one call).
# JSON in $OUT/spill.jsonl, the table in $OUT/spill.txt, logs in $OUT/spill.tgz.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
OUT=${OUT:-/tmp/gpu_spill_out}
R=$OUT/r
W=${WORK:-/tmp/spill27}
mkdir -p "$R" "$W"
trap 'pack spill; rm -rf "$W"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
B=/tmp/b-spill gpu_build $R/build.log oocsolve_bin oocgen_bin &
[ -n "${OLD:-}" ] && (cd "$OLD" && B=/tmp/b-spill-old gpu_build $R/build_old.log oocsolve_bin) &
wait
[ -x /tmp/b-spill/oocsolve ] || { echo "build failed"; exit 1; }
[ -z "${OLD:-}" ] || [ -x /tmp/b-spill-old/oocsolve ] || { echo "old build failed"; exit 1; }
N=${N:-32768}
TILE=${TILE:-2048}
GPUMEM=${GPUMEM:-4G}
MEMS=${MEMS:-"4G 6G 64G"}
CKPT_OPT="--checkpoint off"
[ "${CKPT:-off}" = default ] && CKPT_OPT=
DISKBW=$(bash tools/disk_bw.sh $W 4 2> $R/disk_bw.log) || { cat $R/disk_bw.log; exit 1; }
cat $R/disk_bw.log | tee -a $OUT/spill.txt
t0=$(date +%s.%N)
/tmp/b-spill/oocgen matern --n $N --tile $TILE $W/A.h5 > $R/gen.log 2>&1 || { cat $R/gen.log; exit 1; }
echo "[$(el) s] input n = $N tile $TILE: $(stat -c %s $W/A.h5) bytes in $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a $OUT/spill.txt
# every run starts with nothing dirty in the page cache: the input's writeback (and a run's
# leftovers) would otherwise land in the next run's scratch writes (the first run after the
# input was made took 13.2 s where the same run later took 10.8-11.9 s, 2026-12-01)
sync
for m in ${METHODS:-chol gj}; do
  for hm in $MEMS; do
   vers=new
   [ -n "${OLD:-}" ] && [[ " ${OLD_MEMS:-4G} " == *" $hm "* ]] && vers="new old"
   [[ " ${ENV_MEMS:-4G} " == *" $hm "* ]] && vers="$vers ${ENVS:-}"
   for v in $vers; do
    run=$((${run:-0} + 1)) # (numbered: MEMS may name a budget twice, and each run keeps its logs)
    tag=$run.$m.$hm.$v bin=/tmp/b-spill/oocsolve envs=
    [ $v = old ] && bin=/tmp/b-spill-old/oocsolve
    [[ $v == *=* ]] && envs=$v
    if [ "$(left)" -lt 60 ]; then echo "$tag: not run ($(left) s left)" | tee -a $OUT/spill.txt; continue; fi
    job=(--method $m) out=$W/X.h5:/inverse
    [ $m = lufactor ] && job=(factor --method lu) out=$W/X.h5:/LU
    sync
    # shellcheck disable=SC2086 # $DISKBW is the option and its value: two words
    env $envs timeout $(($(left) - 5)) $bin "${job[@]}" --device cuda --tile $TILE \
      --gpu-mem $GPUMEM --host-mem $hm $CKPT_OPT --json $DISKBW \
      --scratch ${SCRATCH:-$W} --force --out $out ${TRACE:+--trace $R/$tag.trace.json} \
      $W/A.h5 > $R/$tag.json 2> $R/$tag.err
    echo "rc=$?" >> $R/$tag.err
    rm -f $W/X.h5
    head -c 100000 $R/$tag.json >> $OUT/spill.jsonl
    echo >> $OUT/spill.jsonl
    python3 - "$R/$tag.json" "$m --host-mem $hm ($v)" << 'EOF' | tee -a $OUT/spill.txt
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[2], "no JSON:", e); sys.exit()
G = 1e9
print("%s: status %s stripe %s | elim spilled %.1f GB, read back %.1f GB, model %.1f GB | "
      "all spilled %.1f GB, read back %.1f GB, kept in input %.1f GB, reread input %.1f GB | "
      "read %.1f compute %.1f spill %.1f write %.1f check %.1f total %.1f s | residual %.3g"
      % (sys.argv[2], d["status"], d["stripe"], d["bytes_spilled_elim"] / G,
         d["bytes_unspilled_elim"] / G, d["bytes_spill_model"] / G, d["bytes_spilled"] / G,
         d["bytes_unspilled"] / G, d.get("bytes_kept_in_input", 0) / G,
         d.get("bytes_reread_input", 0) / G, d["t_read"], d["t_compute"], d["t_spill"],
         d["t_write"], d["t_check"], d["t_total"], d["residual"] or float("nan")))
for w in d.get("warnings", "").split("; "):
    if w.startswith("scratch:"):
        print("  " + w)
EOF
   done
  done
done
