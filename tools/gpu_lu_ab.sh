#!/usr/bin/env bash
# gpu_lu_ab.sh: a tree of LU changes against an older one on the GPU host, in one device call
# (issue 22; what each call of 2026-11-29's fourteenth session did by hand):
#   OLD=.wt/main LIMIT=560 bash .devdeps/on-device bash tools/gpu_lu_ab.sh
# (or OLD_ENV="VAR=value": "old" is this tree run with that environment, tools/gpu_lu_e2e.sh)
# (OLD: `git archive <commit>` unpacked into an ignored folder and carried with .devdeps; the
# checkout's .git/info/exclude lists /.wt/.)
# 1. this tree's LU suites on the GPU: test_cuda_rt (the CUDA runtime, LU's fault loops and its
#    read while it runs), test_exec (the executor's operations, bit for bit where they promise
#    it), `test_budget gpu` (every method's --gpu-mem sweep, the host and device peaks);
# 2. the CLI's factor at n = 40000 with --gpu-mem 8G, old and new alternately, REPS_F (2) pairs,
#    beside cuSOLVER's in-core Xgetrf (tools/gpu_lu_e2e.sh);
# 3. this tree's factor traced (tools/gpu_lu_tile.sh; trace_sum's summary in tile.tgz).
# SKIP="tests e2e trace" skips stages. RESULT lines are printed; logs land in $OUT/t.tgz,
# $OUT/lu_e2e.tgz and $OUT/tile.tgz (the device returns at most 8 files).
set -o pipefail
cd "$(dirname "$0")/.."
export LIMIT=${LIMIT:-560}
export B=${B:-/tmp/b-new}
OUT=${OUT:-/tmp/gpu_lu_ab_out}
R=$OUT/t
mkdir -p "$R"
. tools/gpu_lib.sh
if ! skip tests; then
  gpu_build $R/build.log test_cuda_rt test_exec test_budget
  (cd $B && timeout 120 ./test_cuda_rt > $R/test_cuda_rt.log 2>&1; echo "rc=$?" >> $R/test_cuda_rt.log)
  (cd $B && timeout 60 ./test_exec > $R/test_exec.log 2>&1; echo "rc=$?" >> $R/test_exec.log)
  (cd $B && timeout 200 ./test_budget gpu > $R/test_budget_gpu.log 2>&1; echo "rc=$?" >> $R/test_budget_gpu.log)
  echo "[$(el) s] tests done"
  for f in test_cuda_rt test_exec test_budget_gpu; do
    grep -E "FAILED|Test:.*(failed|FAILED)|asserts|tests  |rc=|budget sweep:|OVER BUDGET" $R/$f.log |
      sed "s/^/$f: /" | head -12
  done
fi
pack t
if ! skip e2e && [ -n "${OLD:-}${OLD_ENV:-}" ]; then
  # (its own LIMIT: what is left, less the trace's share)
  t=$(($(left) - 95))
  skip trace && t=$(($(left) - 3))
  BOLD=${BOLD:-/tmp/b-old} SKIP="solve inv" REPS_F=${REPS_F:-2} LIMIT=$t OUT=$OUT \
    bash tools/gpu_lu_e2e.sh 2>&1 | grep -E "RESULT" | sort -u
fi
if ! skip trace && [ "$(left)" -gt 60 ]; then
  TILES=" " LIMIT=$(( $(left) - 3 )) OUT=$OUT bash tools/gpu_lu_tile.sh 2>&1 | grep -E "RESULT|cli trace"
fi
echo "[$(el) s] done"
