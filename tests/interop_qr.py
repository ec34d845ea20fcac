#!/usr/bin/env python3
"""interop_qr.py: `oocsolve lstsq` (issue 24) against numpy.linalg.lstsq, through h5py.

    python3 tests/interop_qr.py <build_dir>

Exits 77 (ctest's skip code) when h5py or numpy cannot be imported, except under CI=true (.ci/run
installs them), where a missing module is a failure. A is m x n float64 with n = 24 and m from n
to 100 n; b has 3 columns (and a 1-D b once). For both CPU backends, out of core (--host-mem below
a quarter of A where A is large enough to say so) and row blocks (--tile) of 1, 7 and 64:
  (a) the state file's /x equals numpy.linalg.lstsq's solution (relative difference < 1e-10),
      /residual_norms equal ||b - A x|| (< 1e-10 relative), R^T R = A^T A (ratio < 30), the
      attributes say factor = "qr", rows = m, rank = n; a 1-D b gives a 1-D x;
  (b) an overdetermined system with a known solution gets it back (< 1e-12);
  (c) --update --add-rows U c equals numpy on [A; U], [b; c] (the rows attribute grows by p);
  (d) --update --remove-cols 5:9 equals numpy on A without those columns, /colmap lists the rest;
  (e) a rank-deficient A (a column equal to a combination of two others) exits 4 and writes
      nothing; NaN in A exits 3 naming the element; m < n exits 3; an existing output without
      --force is refused and unchanged.
Inputs are unchanged afterwards and no temporary file is left behind.
"""
import json
import os
import sys
import tempfile

try:
    import h5py
    import numpy as np
except Exception as e:  # pragma: no cover - environment dependent
    print(f"SKIP: needs h5py and numpy ({e.__class__.__name__}: {e})")
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

N, NRHS = 24, 3
EPS = np.finfo(np.float64).eps
from pyutil import check, failures, run, sha  # noqa: E402 (after the skip test)


def rel(x, y):
    return float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-300))


def write(path, name, v):
    with h5py.File(path, "w") as f:
        f[name] = v


def check_state(path, A, B, what):
    with h5py.File(path, "r") as f:
        x, R, res = f["x"][()], f["R"][()], f["residual_norms"][()]
        attrs = dict(f["R"].attrs)
        colmap = f["colmap"][()]
    xl = np.linalg.lstsq(A, B, rcond=None)[0]
    r = B - A @ xl
    rn = np.linalg.norm(r.reshape(len(A), -1), axis=0)
    check(x.shape == xl.shape, f"{what}: x has b's shape {xl.shape} (got {x.shape})")
    check(rel(x, xl) < 1e-10, f"{what}: x = numpy.linalg.lstsq's ({rel(x, xl):.3g})")
    bn = np.linalg.norm(B)  # m = n: both ~ 0, so relative to ||b||
    dr = float(np.abs(res - rn).max() / bn)
    check(dr < 1e-10, f"{what}: residual norms = ||b - A x|| ({dr:.3g} ||b||)")
    fr = np.linalg.norm(R.T @ R - A.T @ A) / (np.linalg.norm(A) ** 2 * A.shape[1] * EPS)
    check(fr < 30, f"{what}: R^T R = A^T A (ratio {fr:.3g})")
    check(np.allclose(np.tril(R, -1), 0), f"{what}: R is upper triangular")
    check(attrs.get("factor") == "qr" and int(attrs.get("rows")) == len(A)
          and int(attrs.get("rank")) == A.shape[1],
          f"{what}: attributes factor, rows = {len(A)}, rank = {A.shape[1]}")
    return colmap


def main():
    exe = os.path.join(sys.argv[1], "oocsolve")
    rng = np.random.default_rng(24)
    with tempfile.TemporaryDirectory() as d:
        def p(name):
            return os.path.join(d, name)

        for mult in (1, 7, 100):
            m = N * mult
            A = rng.standard_normal((m, N))
            B = rng.standard_normal((m, NRHS))
            write(p("A.h5"), "A", A)
            write(p("B.h5"), "B", B)
            hashes = (sha(p("A.h5")), sha(p("B.h5")))
            a_bytes = 8 * m * N
            for dev in ("cpu", "ref"):
                for tile in (1, 7, 64):
                    if dev == "ref" and tile != 7:
                        continue
                    out = p(f"S_{mult}_{dev}_{tile}.h5")
                    args = ["lstsq", p("A.h5"), p("B.h5"), "--device", dev, "--tile", str(tile),
                            "--out", out, "--json"]
                    oc = a_bytes >= (256 << 10)
                    if oc:  # out of core: below a quarter of A
                        args += ["--host-mem", str(a_bytes // 4 - 1)]
                    r = run(exe, *args)
                    if not check(r.returncode == 0, f"m = {m}, {dev}, tile {tile}: exit 0"):
                        continue
                    rep = json.loads(r.stdout)
                    check(rep["kind"] == "lstsq" and rep["n"] == N and rep["nrhs"] == NRHS,
                          "report: kind lstsq, n, nrhs")
                    if oc:
                        check(rep["host_peak"] < a_bytes // 4,
                              f"host peak {rep['host_peak']} < A / 4 = {a_bytes // 4}")
                    check_state(out, A, B, f"m = {m}, {dev}, tile {tile}")
            check((sha(p("A.h5")), sha(p("B.h5"))) == hashes, f"m = {m}: inputs unchanged")

        # (b) a known solution, and a 1-D b
        m = 10 * N
        A = rng.standard_normal((m, N))
        x0 = rng.standard_normal(N)
        write(p("K.h5"), "A", A)
        write(p("k.h5"), "b", A @ x0)
        r = run(exe, "lstsq", p("K.h5"), p("k.h5") + ":/b", "--out", p("K.qr.h5"), "-q")
        if check(r.returncode == 0, "known solution: exit 0"):
            with h5py.File(p("K.qr.h5"), "r") as f:
                x = f["x"][()]
                res = f["residual_norms"][()]
            check(x.shape == (N,), f"1-D b gives a 1-D x ({x.shape})")
            check(rel(x, x0) < 1e-12, f"known solution back ({rel(x, x0):.3g})")
            check(res[0] < 1e-12 * np.linalg.norm(A @ x0), f"residual ~ 0 ({res[0]:.3g})")

        # (c) add rows, (d) remove columns: against numpy from scratch
        m = 5 * N
        A = rng.standard_normal((m, N))
        B = rng.standard_normal((m, NRHS))
        U = rng.standard_normal((40, N))
        C = rng.standard_normal((40, NRHS))
        for name, v in (("A", A), ("B", B), ("U", U), ("C", C)):
            write(p(f"u{name}.h5"), name, v)
        r = run(exe, "lstsq", p("uA.h5"), p("uB.h5"), "--tile", "16", "-q")
        check(r.returncode == 0, "state for the updates: exit 0")
        st = p("uA.qr.h5")
        h0 = sha(st)
        r = run(exe, "lstsq", "--update", st, "--add-rows", p("uU.h5"), p("uC.h5"), "--tile", "7",
                "-q")
        if check(r.returncode == 0, "add rows: exit 0"):
            check_state(p("uA.qr.u.h5"), np.vstack([A, U]), np.vstack([B, C]), "add rows")
        r = run(exe, "lstsq", "--update", st, "--remove-cols", "5:9", "--out", p("rm.h5"), "-q")
        keep = [j for j in range(N) if not 5 <= j < 9]
        if check(r.returncode == 0, "remove columns: exit 0"):
            cm = check_state(p("rm.h5"), A[:, keep], B, "remove columns 5:9")
            check(list(cm) == keep, "colmap lists the kept columns")
        check(sha(st) == h0, "the state file an update reads is unchanged")

        # (e) refusals
        Ad = rng.standard_normal((m, N))
        Ad[:, 7] = Ad[:, 2] - 3 * Ad[:, 4]
        write(p("D.h5"), "A", Ad)
        r = run(exe, "lstsq", p("D.h5"), p("uB.h5"), "--out", p("D.qr.h5"), "--json")
        check(r.returncode == 4, f"rank-deficient A: exit 4 (got {r.returncode})")
        check(not os.path.exists(p("D.qr.h5")), "rank-deficient A: nothing written")
        if r.stdout:
            rep = json.loads(r.stdout)
            check(rep["info"] == 8 and "rank 23 of 24" in rep["error"],
                  f"info = 8 and the rank in the message ({rep['info']}, {rep['error']})")
        An = rng.standard_normal((m, N))
        An[17, 3] = np.nan
        write(p("N.h5"), "A", An)
        r = run(exe, "lstsq", p("N.h5"), p("uB.h5"), "--out", p("N.qr.h5"), "-q")
        check(r.returncode == 3 and "[17, 3]" in r.stderr and not os.path.exists(p("N.qr.h5")),
              f"NaN in A: exit 3 naming the element, nothing written (got {r.returncode})")
        write(p("W.h5"), "A", rng.standard_normal((10, N)))
        write(p("w.h5"), "b", rng.standard_normal((10, 1)))
        r = run(exe, "lstsq", p("W.h5"), p("w.h5"), "-q")
        check(r.returncode == 3, f"m < n: exit 3 (got {r.returncode})")
        h1 = sha(st)
        r = run(exe, "lstsq", p("uA.h5"), p("uB.h5"), "-q")
        check(r.returncode != 0 and sha(st) == h1, "an existing output without --force: refused, "
              "unchanged")
        left = [f for f in os.listdir(d) if ".tmp-" in f]
        check(not left, f"no temporary files left ({left})")

    if failures:
        print(f"{len(failures)} FAILED")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
