#!/usr/bin/env python3
"""h5py_cupy_inverse.py: what a Python user does instead of oocsolve (issue 27's comparison row):
read an SPD matrix with h5py, invert it on the GPU with cupy (Cholesky: cupyx.lapack.posv(A, I),
i.e. potrf then potrs against the identity), write the inverse with h5py.

    python3 tools/h5py_cupy_inverse.py IN.h5[:/A] OUT.h5[:/inverse] [--dtype f64|f32]

Prints one line per phase and a RESULT line: read (h5py into host memory), to the device, the
inverse on the device, back to the host, write (h5py, contiguous, then the file closed and fsynced
so the bytes are on the disk as oocsolve's commit makes them), the total, and the inverse's
probe residual ||I - A X t||_1 / (n ||A||_1 ||X t||_1 eps) for one random t on the device
(no second pass over the files). Needs numpy, h5py and cupy (the GPU hosts; h5py as a carried wheel)."""
import os, sys, time
import numpy as np, h5py, cupy as cp
import cupyx.lapack


def spec(s, default):
    f, _, d = s.partition(':')
    return f, d or default


def main():
    src, dst = spec(sys.argv[1], '/A'), spec(sys.argv[2], '/inverse')
    t = {}
    t0 = time.perf_counter()
    with h5py.File(src[0], 'r') as f:
        a = f[src[1]][...]
    t['read'] = time.perf_counter() - t0
    n = a.shape[0]
    t1 = time.perf_counter()
    A = cp.asarray(a)
    cp.cuda.Device().synchronize()
    t['h2d'] = time.perf_counter() - t1
    del a
    t1 = time.perf_counter()
    X = cp.eye(n, dtype=A.dtype)
    r = cupyx.lapack.posv(A.copy(), X)  # potrf + potrs; the solution in X (and returned)
    X = X if r is None else r
    cp.cuda.Device().synchronize()
    t['inverse'] = time.perf_counter() - t1
    # probe: ||t - A (X t)|| / (n ||A||_1 ||X t||_1 eps), t = +-1
    r = cp.asarray(np.random.default_rng(1).choice([-1.0, 1.0], n).astype(A.dtype))
    xt = X @ r
    res = float(cp.abs(r - A @ xt).sum() / (n * cp.abs(A).sum(axis=0).max() * cp.abs(xt).sum()
                                             * np.finfo(A.dtype).eps))
    del A
    t1 = time.perf_counter()
    x = cp.asnumpy(X)
    t['d2h'] = time.perf_counter() - t1
    del X
    t1 = time.perf_counter()
    with h5py.File(dst[0], 'w') as f:
        f.create_dataset(dst[1], data=x)
    fd = os.open(dst[0], os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    t['write'] = time.perf_counter() - t1
    t['total'] = time.perf_counter() - t0
    print('RESULT h5py+cupy inverse n=%d %s: read %.1f, to device %.1f, inverse (posv) %.1f, back '
          '%.1f, write+fsync %.1f, total %.1f s; probe residual %.3g' % (
              n, x.dtype, t['read'], t['h2d'], t['inverse'], t['d2h'], t['write'], t['total'], res))


if __name__ == '__main__':
    main()
