#!/usr/bin/env bash
# gpu_array.sh: issue 25 on the GPU host (one device call):
#   bash .devdeps/on-device bash tools/gpu_array.sh
# issue 25 on the GPU host: n = 65536 float64 host array (34 GB) inverted with --gpu-mem 16G from
# C (bench_array) and from Python (the oocsolve package), against the same job from an HDF5 file
set -o pipefail
cd "$(dirname "$0")/.."
export LIMIT=590
O=${OUT:-/tmp/o}; mkdir -p $O
. tools/gpu_lib.sh
B=/tmp/b25; gpu_build $O/build.log bench_array oocgen_bin oocsolve oocsolve_cuda
N=65536; D=/tmp/d25; mkdir -p $D
py() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print('$1', d['status'], d['method'], d['backend'], 'read %.1f compute %.1f write %.1f check %.1f total %.1f s' % tuple(d[k] for k in ('t_read','t_compute','t_write','t_check','t_total')), 'residual %.3g' % d['residual'], 'peak %.1f GB' % (d['host_peak']/1e9), d['warnings'][-160:])"; }
/usr/bin/time -f "C array: %e s wall, %M KB max RSS" $B/bench_array array $N 4096 16G $D/xc.h5:/X 2> $O/c.err | tee $O/c.json | py "C array" ; tail -1 $O/c.err; rm -f $D/xc.h5
echo "[$(el) s]"
cat > $O/p.py <<'PY'
import json, sys, time, numpy as np
sys.path.insert(0, "python"); import oocsolve
n = 65536; t0 = time.time()
a = np.empty((n, n), order="F"); rng = np.random.default_rng(1)
for j in range(0, n, 4096): a[:, j:j+4096] = rng.random((n, 4096)) * 2 - 1
a[np.arange(n), np.arange(n)] += n
t1 = time.time(); rep = {}
oocsolve.inv(a, out="/tmp/d25/xp.h5:/X", device="cuda", gpu_mem="16G", tile=4096, out_type="f32", force=True, report=rep)
print("python: made the array in %.1f s, the call took %.1f s" % (t1 - t0, time.time() - t1))
print(json.dumps(rep))
PY
OOCSOLVE_LIBRARY=$B/liboocsolve.so python3 $O/p.py 2>&1 | tee $O/p.out | head -1; tail -1 $O/p.out | py "Python array"; rm -f $D/xp.h5
echo "[$(el) s]"
$B/oocgen diagdom --n $N --tile 4096 --force $D/a.h5:/A > /dev/null 2>&1; echo "[$(el) s] generated"
$B/bench_array file $D/a.h5:/A 4096 16G $D/xf.h5:/X 2> $O/f.err | tee $O/f.json | py "HDF5 file"
rm -rf $D; echo "[$(el) s] done"
