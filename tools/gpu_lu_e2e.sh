#!/usr/bin/env bash
# gpu_lu_e2e.sh: LU end to end through the CLI on the GPU host, an older tree against this one in
# one device call (issue 22 with 27: the phases a user waits for, not the factor alone):
#   OLD=.wt/old LIMIT=560 bash .devdeps/on-device bash tools/gpu_lu_e2e.sh
# (OLD: `git archive <commit>` unpacked into the ignored .wt/old and carried with .devdeps.
# Or OLD_ENV="VAR=value ...": "old" is this tree's binary run with that environment, e.g.
# OLD_ENV=OOCSOLVE_LU_SWAPS=store for LU's final swaps in the store, as before 2026-11-30.
# Or OLD_ARGS="--opt value ...": "old" is this tree's binary with these arguments appended, e.g.
# OLD_ARGS="--checkpoint off" FCKPT=default: the factor journaled by time against not at all.)
# 1. build oocsolve and oocgen in both trees, bench_lu_cuda in this one (Release, sm_90);
# 2. cuSOLVER's in-core Xgetrf at n = 40000 (bench_lu_cuda cusolver), the peer of the factor;
# 3. stage solve: A65 (n = 65536 float32, tile 1024) and B65 (256 right-hand sides) written on
#    the device's disk, then old, new, old, new `oocsolve solve --method lu --device cuda
#    --gpu-mem 16G`; stage factor: A40 (n = 40000 float64), then `oocsolve factor --method lu
#    --device cuda --gpu-mem 8G` the same way; stage inv: a Matern matrix (n = NI, 32768) and
#    `oocsolve invert --method chol --device cuda` (the inverse's estimate check). Each stage's
#    inputs are removed after it (the disk holds ~36 GB). Each run's JSON phases on a RESULT
#    line (lu_e2e.txt); REPS (2) pairs for solve, REPS_F (1) for the others. Run as a user
#    would: no malloc tuning in the environment.
# The inputs were just written, so they are read from the page cache (the floor there is memory
# bandwidth, not the disk). SKIP="solve factor inv" skips stages; N65, N40, NI change the sizes,
# FDTYPE (f64) and FGPU (8G) the factor's input type and --gpu-mem (N40=65536 FDTYPE=f32
# FGPU=16G: issue 22's big factor; f64 there would not fit the device's 64 GB disk twice).
# FCKPT=default: the factor stage without `--checkpoint off` (journaled by time, the default).
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-560}
B=${B:-/tmp/b-e2e}
BOLD=${BOLD:-/tmp/b-e2e-old} # the old tree's build
OUT=${OUT:-/tmp/gpu_lu_e2e_out}
R=$OUT/r
D=${D:-/tmp/e2e}
N65=${N65:-65536}
N40=${N40:-40000}
mkdir -p "$R" "$D"
trap 'pack lu_e2e; rm -rf "$D"; echo "[$(el) s] done"' EXIT
. tools/gpu_lib.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $R/gpu.txt
[ -n "${OLD:-}" ] && (cd "$OLD" && B=$BOLD gpu_build $R/build_old.log oocsolve_bin oocgen_bin) &
gpu_build $R/build.log oocsolve_bin oocgen_bin bench_lu_cuda
wait
res() { tee -a $OUT/lu_e2e.txt; }
$B/bench_lu_cuda cusolver $N40 > $R/cusolver.log 2>&1
grep RESULT $R/cusolver.log | res
G=$B/oocgen
# one run: tree label, then oocsolve's arguments; its JSON's phases on a RESULT line
one() {
  local tree=$1 bin=$B/oocsolve tag=$2 envs= extra=()
  shift 2
  if [ "$tree" = old ]; then
    if [ -n "${OLD_ENV:-}${OLD_ARGS:-}" ]; then
      envs=${OLD_ENV:-}
      read -r -a extra <<< "${OLD_ARGS:-}"
    else
      bin=$BOLD/oocsolve
    fi
  fi
  [ -x "$bin" ] || return
  env $envs "$bin" "$@" "${extra[@]}" --json --force > $R/$tag.json 2> $R/$tag.err
  echo "rc=$?" >> $R/$tag.err
  python3 - "$R/$tag.json" "$tag" << 'PY' 2>&1 | res
import json, sys
d = json.load(open(sys.argv[1]))
ws = [w for w in (d.get('warnings') or '').split('; ')
      if 'in place' in w or 'GPU peak' in w or 'row swaps' in w]
print('RESULT %s: read %.2f compute %.2f (factor %.2f, sweeps %.2f) write %.2f check %.2f '
      '(%.1f GB read back) commit %.2f total %.2f s; residual %.3g, stripe %d, %s; %s' % (
      sys.argv[2], d['t_read'], d['t_compute'], d.get('t_factor', 0), d.get('t_solve', 0),
      d['t_write'], d['t_check'], d.get('bytes_check_read', 0) / 1e9, d.get('t_commit', 0),
      d['t_total'], d['residual'], d['stripe'], d.get('backend'), '; '.join(ws)))
PY
  rm -f $D/X*.h5 $D/F*.h5
}
# stage NAME REPS: old, new REPS times over (while the time left allows), its inputs made first
# by the stage's own lines below and removed after
pairs() {
  local name=$1 reps=$2 need=$3
  shift 3
  for i in $(seq 1 $reps); do
    for tree in old new; do
      [ "$(left)" -lt "$need" ] && return
      one $tree ${name}_${tree}_$i "$@"
    done
  done
}
if ! skip solve; then
  $G random --n $N65 --dtype f32 --tile 1024 --quiet --force $D/A65.h5:/A &&
    $G rhs --n $N65 --cols 256 --dtype f32 --tile 1024 --quiet --force $D/B65.h5:/B
  echo "[$(el) s] solve's inputs written"
  pairs solve ${REPS:-2} 70 solve --method lu --device cuda --tile 1024 --gpu-mem 16G \
    --checkpoint off --out $D/X.h5 $D/A65.h5:/A $D/B65.h5:/B
  rm -f $D/A65.h5 $D/B65.h5
fi
if ! skip factor && [ "$(left)" -gt 80 ]; then
  $G random --n $N40 --tile 1024 --dtype ${FDTYPE:-f64} --quiet --force $D/A40.h5:/A
  echo "[$(el) s] factor's input written"
  fckpt=(--checkpoint off)
  [ "${FCKPT:-off}" = default ] && fckpt=()
  pairs factor ${REPS_F:-1} 40 factor --method lu --device cuda --tile 1024 --gpu-mem ${FGPU:-8G} \
    "${fckpt[@]}" --out $D/F.h5 $D/A40.h5:/A
  rm -f $D/A40.h5
fi
# an inverse's estimate check (the fused one, capped strips): chol, n = NI float64, in core
if ! skip inv && [ "$(left)" -gt 80 ]; then
  $G matern --n ${NI:-32768} --tile 4096 --quiet --force $D/M.h5:/A
  echo "[$(el) s] the inverse's input written"
  pairs inv ${REPS_F:-1} 40 invert --method chol --device cuda --tile 4096 --checkpoint off \
    --out $D/X.h5 $D/M.h5:/A
  rm -f $D/M.h5
fi
tail -n 30 $OUT/lu_e2e.txt
