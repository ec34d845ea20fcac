#!/usr/bin/env bash
# gpu_table19.sh: issue 19's accuracy table on the GPU host, in one device call (LIMIT seconds):
#   bash .devdeps/on-device bash tools/gpu_table19.sh      (carry .devdeps and .whl: h5py's wheel)
# The issue's matrices A = Q1 diag(logspace(0, -log10(cond), n)) Q2^T (numpy; docs/NUMERICS.md's
# line): n = 3000 with cond 1e8 (seed 1) and n = 1500 with cond 1e12 (seed 2). For each: the
# ratio ||I - A X||_1 / (n ||A||_1 ||X||_1 eps) of numpy.linalg.inv (LAPACK) and cupy.linalg.inv
# (cuSOLVER), then oocsolve's inverse on the GPU, --check full (the exact ratio of the written
# inverse), for every row of the issue's table: gj with wide stripes (two steps), narrow stripes,
# one step, one tile, and the LU inverse. RESULT lines in $OUT/t19.txt.
set -o pipefail
cd "$(dirname "$0")/.."
LIMIT=${LIMIT:-240}
B=${B:-/tmp/b-t19}
OUT=${OUT:-/tmp/gpu_t19_out}
mkdir -p "$OUT"
. tools/gpu_lib.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
  export PYTHONPATH=/tmp/site || exit 1
[ -x "$B/oocsolve" ] || gpu_build "$OUT/build.log" oocsolve_bin
D=/tmp/d-t19
mkdir -p $D
python3 - $D <<'PY' 2>&1 | tee -a $OUT/t19.txt
import sys
import numpy as np, h5py, cupy
d = sys.argv[1]
for n, cond, seed in ((3000, 1e8, 1), (1500, 1e12, 2)):
    r = np.random.default_rng(seed)
    Q1, _ = np.linalg.qr(r.standard_normal((n, n)))
    Q2, _ = np.linalg.qr(r.standard_normal((n, n)))
    A = (Q1 * np.logspace(0, -np.log10(cond), n)) @ Q2.T
    with h5py.File(f'{d}/q{n}.h5', 'w') as f:
        f['A'] = A
    eps = 2.0 ** -53
    n1 = lambda M: np.abs(M).sum(0).max()
    ratio = lambda X: n1(np.eye(n) - A @ X) / (n * n1(A) * n1(X) * eps)
    print('RESULT n=%d cond %.0e: numpy.linalg.inv (LAPACK) ratio %.3g' % (n, cond, ratio(np.linalg.inv(A))))
    print('RESULT n=%d cond %.0e: cupy.linalg.inv (cuSOLVER) ratio %.3g' % (n, cond, ratio(cupy.linalg.inv(cupy.asarray(A)).get())))
PY
echo "[$(el) s] matrices"
row() { # n options...
  local n=$1
  shift
  [ "$(left)" -gt 20 ] || { echo "not run: n=$n $*" | tee -a $OUT/t19.txt; return; }
  timeout $(($(left) - 5)) $B/oocsolve invert --device cuda "$@" --check full --json --force \
    --out $D/o.h5 $D/q$n.h5 > $OUT/row.json 2> $OUT/row.err
  local rc=$?
  python3 -c "
import json, sys
try:
    d = json.loads(open('$OUT/row.json').read().strip().splitlines()[-1])
except Exception as e:
    print('RESULT n=$n $*: rc $rc, no report (%s): %s' % (e, open('$OUT/row.err').read()[-300:])); sys.exit()
print('RESULT n=$n $*: rc $rc, %s, stripe %s, ratio %.3g, compute %.2f s%s' % (d.get('status'), d.get('stripe'), d.get('residual') or float('nan'), d.get('t_compute') or 0, ('; ' + d['error'][:200]) if d.get('error') else ''))
" | tee -a $OUT/t19.txt
}
# the CPU table's rows (docs/NUMERICS.md), with --stripe forcing the same stripes on the GPU
for n in 3000 1500; do
  row $n --method gj --tile 512 --stripe $(((n - 1) / 512 * 512))
  row $n --method gj --tile 128 --stripe $((n - 128))
  row $n --method gj --tile 128 --stripe 384
  row $n --method gj --tile 512
  row $n --method gj --tile $n
  row $n --method lu --tile 512 --stripe $(((n - 1) / 512 * 512))
done
echo "[$(el) s] done"
