#!/usr/bin/env python3
"""interop_h5py.py: files written by h5py go through oocsolve and come back readable by h5py.

    python3 tests/interop_h5py.py <build_dir>

Exits 77 (ctest's skip code) when h5py, hdf5plugin or numpy cannot be imported. Checks:
  (a) a float64 300x300 matrix written by h5py, zstd-compressed by hdf5plugin in 64x64 chunks, is
      inverted with --compress zstd:5; h5py (with hdf5plugin) reads the output, whose filter
      pipeline holds zstd (HDF5 filter 32015, level 5), and numpy agrees that A @ X is I
      (LAPACK's ratio ||I - A X||_1 / (n ||A||_1 ||X||_1 eps) < 30);
  (b) float32 input gives a float32 output, with the same ratio in float32's eps;
  (c) `oocsolve solve` with a 300x5 right-hand side agrees with numpy.linalg.solve.
Every case also checks that the inputs are unchanged and nothing but the output is left behind.
"""
import os
import sys
import tempfile

try:
    import h5py
    import hdf5plugin
    import numpy as np
except Exception as e:  # pragma: no cover - environment dependent
    print(f"SKIP: needs h5py, hdf5plugin and numpy ({e.__class__.__name__}: {e})")
    sys.exit(77)

ZSTD_ID = 32015
N = 300
from pyutil import check, failures, run, sha  # noqa: E402 (after the skip test)


def leftovers(d):
    return [f for f in os.listdir(d) if ".tmp-" in f or (f.startswith(".oocsolve-") and f.endswith(".scratch"))]


def filters(ds):
    """[(id, cd_values, name)] of a dataset's filter pipeline, from its creation property list."""
    dcpl = ds.id.get_create_plist()
    out = []
    for i in range(dcpl.get_nfilters()):
        code, _flags, values, name = dcpl.get_filter(i)
        out.append((int(code), tuple(int(v) for v in values), name.decode() if isinstance(name, bytes) else name))
    return out


def inverse_ratio(A, X, eps):
    n = A.shape[0]
    A = A.astype(np.float64)
    X = X.astype(np.float64)
    R = np.eye(n) - A @ X
    return np.linalg.norm(R, 1) / (n * np.linalg.norm(A, 1) * np.linalg.norm(X, 1) * eps)


def case_inverse(exe, d, dtype, label):
    print(f"({label}) {np.dtype(dtype).name} {N}x{N}, zstd input, --compress zstd:5", flush=True)
    rng = np.random.default_rng(12345 if dtype == np.float64 else 777)
    A = rng.uniform(-1.0, 1.0, size=(N, N)).astype(dtype)
    src = os.path.join(d, f"in_{label}.h5")
    out = os.path.join(d, f"out_{label}.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("A", data=A, chunks=(64, 64), **hdf5plugin.Zstd())
    with h5py.File(src, "r") as f:  # the input really is zstd-compressed
        check(any(c == ZSTD_ID for c, _, _ in filters(f["A"])), "input written by h5py uses zstd (32015)")
    before = sha(src)
    p = run(exe, "--tile", "64", "--compress", "zstd:5", f"{src}:/A", "--out", f"{out}:/inv")
    check(p.returncode == 0, f"oocsolve exit code 0 (got {p.returncode})")
    check(sha(src) == before, "input file unchanged")
    check(not leftovers(d), f"no temporary or scratch files left ({leftovers(d)})")
    if not check(os.path.exists(out), f"{out} written"):
        return
    with h5py.File(out, "r") as f:
        if not check("inv" in f, "output has dataset /inv"):
            return
        ds = f["inv"]
        check(ds.shape == (N, N), f"shape {ds.shape} == ({N}, {N})")
        check(ds.dtype == np.dtype(dtype), f"output dtype {ds.dtype} == {np.dtype(dtype).name}")
        fl = filters(ds)
        print(f"    filters: {fl}; ds.compression = {ds.compression!r}; chunks = {ds.chunks}")
        z = [v for c, v, _ in fl if c == ZSTD_ID]
        check(bool(z), "output filter pipeline contains zstd (32015)")
        if z:
            check(len(z[0]) >= 1 and z[0][0] == 5, f"zstd level cd_values[0] == 5 (cd_values {z[0]})")
        X = ds[...]  # decompresses through hdf5plugin's zstd
    eps = np.finfo(dtype).eps / 2  # LAPACK's eps (unit roundoff), as the C tests use
    ratio = inverse_ratio(A, X, eps)
    check(np.all(np.isfinite(X)), "inverse is finite")
    check(ratio < 30, f"||I - A X||_1 / (n ||A||_1 ||X||_1 eps) = {ratio:.3g} < 30")


def case_solve(exe, d):
    print(f"(c) solve {N}x{N} with a {N}x5 right-hand side against numpy.linalg.solve", flush=True)
    rng = np.random.default_rng(4242)
    A = rng.uniform(-1.0, 1.0, size=(N, N))
    B = rng.uniform(-1.0, 1.0, size=(N, 5))
    fa = os.path.join(d, "sA.h5")
    fb = os.path.join(d, "sB.h5")
    fx = os.path.join(d, "sX.h5")
    with h5py.File(fa, "w") as f:
        f.create_dataset("A", data=A, chunks=(64, 64), **hdf5plugin.Zstd())
    with h5py.File(fb, "w") as f:
        f.create_dataset("B", data=B)
    ha, hb = sha(fa), sha(fb)
    p = run(exe, "solve", "--tile", "64", f"{fa}:/A", f"{fb}:/B", "--out", f"{fx}:/X")
    check(p.returncode == 0, f"oocsolve solve exit code 0 (got {p.returncode})")
    check(sha(fa) == ha and sha(fb) == hb, "inputs unchanged")
    check(not leftovers(d), f"no temporary or scratch files left ({leftovers(d)})")
    if not check(os.path.exists(fx), f"{fx} written"):
        return
    with h5py.File(fx, "r") as f:
        if not check("X" in f, "output has dataset /X"):
            return
        X = f["X"][...]
    check(X.shape == (N, 5), f"shape {X.shape} == ({N}, 5)")
    Xnp = np.linalg.solve(A, B)
    eps = np.finfo(np.float64).eps / 2
    # HPL's ratio per column, and agreement with numpy within what the conditioning allows
    ainf = np.linalg.norm(A, np.inf)
    hpl = max(
        np.linalg.norm(A @ X[:, j] - B[:, j], np.inf)
        / (eps * (ainf * np.linalg.norm(X[:, j], np.inf) + np.linalg.norm(B[:, j], np.inf)) * N)
        for j in range(5)
    )
    check(hpl < 16, f"HPL ratio {hpl:.3g} < 16")
    cond = np.linalg.cond(A, 1)
    rel = np.linalg.norm(X - Xnp, 1) / np.linalg.norm(Xnp, 1)
    bound = 100 * N * cond * eps
    check(rel < bound, f"||X - numpy||_1 / ||numpy||_1 = {rel:.3g} < 100 n kappa_1 eps = {bound:.3g}")


def main():
    if len(sys.argv) != 2:
        print("usage: interop_h5py.py <build_dir>")
        return 2
    exe = os.path.join(sys.argv[1], "oocsolve")
    if not os.access(exe, os.X_OK):
        print(f"FAIL: {exe} is not built")
        return 1
    print(f"h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}, "
          f"numpy {np.__version__}")
    with tempfile.TemporaryDirectory(prefix="ooc-interop-") as d:
        case_inverse(exe, d, np.float64, "a")
        case_inverse(exe, d, np.float32, "b")
        case_solve(exe, d)
    if failures:
        print(f"\n{len(failures)} check(s) failed:")
        for f in failures:
            print("  - " + f)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
