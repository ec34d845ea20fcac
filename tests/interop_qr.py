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
  (b) a consistent overdetermined system with a known solution gets it back (< 1e-12); an
      inconsistent one (b = A x0 + r0, r0 orthogonal to A's range) on random A and on A with a
      prescribed condition number (LAPACK's generator's mode 3, cond 2 and sqrt(0.1/eps)) gets
      x0 within LAPACK's forward bound (or 10x numpy's error) and ||r0|| as residual norms;
every state is also checked by dqrt17 and ||A^T r|| / (||A|| ||r|| max(m, n) eps) (< 30 or
within 10x of numpy's on the same problem) and R upper triangular;
  (c) --update --add-rows U c equals numpy on [A; U], [b; c] (the rows attribute grows by p);
  (d) --update --remove-cols 5:9 equals numpy on A without those columns, /colmap lists the rest;
  (f) --update --add-cols V equals numpy on [A V] and |R| equals lstsq [A V]'s, tiles 1, 7, 64,
      in core and out of core (--host-mem below a quarter of [A V b]); after remove-cols; refused:
      an add-rows state without --a (exit 2), rows of V or A not the state's (exit 3), a
      dependent new column (exit 4), an A that is not the state's (exit 3), NaN in V (exit 3);
      nothing written;
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


U53 = EPS / 2  # LAPACK's dlamch('Epsilon'), the unit roundoff its ratios take


def dqrt17(A, B, x):
    """LAPACK's dqrt17 as ddrvls calls it: ||(B - A x)^T A||_1 / (||A||_1 ||B||_1 max(m, n, nrhs) eps)."""
    B2, x2 = B.reshape(len(A), -1), x.reshape(A.shape[1], -1)
    r = B2 - A @ x2
    m, n = A.shape
    return float(np.linalg.norm(r.T @ A, 1) / (np.linalg.norm(A, 1) * np.linalg.norm(B2, 1)
                                               * max(m, n, B2.shape[1]) * U53))


def orth(A, B, x):
    """max_k ||A^T r_k|| / (||A||_F ||r_k|| max(m, n) eps) over columns not (nearly) consistent."""
    B2, x2 = B.reshape(len(A), -1), x.reshape(A.shape[1], -1)
    r = B2 - A @ x2
    w = 0.0
    for k in range(r.shape[1]):
        rn = np.linalg.norm(r[:, k])
        if rn > np.sqrt(U53) * np.linalg.norm(B2[:, k]):
            w = max(w, float(np.linalg.norm(A.T @ r[:, k]) / (np.linalg.norm(A) * rn * max(A.shape) * U53)))
    return w


def check_state(path, A, B, what, xtol=1e-10):
    with h5py.File(path, "r") as f:
        x, R, res = f["x"][()], f["R"][()], f["residual_norms"][()]
        attrs = dict(f["R"].attrs)
        colmap = f["colmap"][()]
    xl = np.linalg.lstsq(A, B, rcond=None)[0]
    r = B - A @ xl
    rn = np.linalg.norm(r.reshape(len(A), -1), axis=0)
    check(x.shape == xl.shape, f"{what}: x has b's shape {xl.shape} (got {x.shape})")
    check(rel(x, xl) < xtol, f"{what}: x = numpy.linalg.lstsq's ({rel(x, xl):.3g})")
    q, ql = dqrt17(A, B, x), dqrt17(A, B, xl)
    check(q < 30 or q <= 10 * ql, f"{what}: dqrt17 {q:.3g} < 30 or within 10x of numpy's {ql:.3g}")
    o, ol = orth(A, B, x), orth(A, B, xl)
    check(o < 30 or o <= 10 * ol, f"{what}: ||A^T r|| / (||A|| ||r|| max(m, n) eps) {o:.3g} < 30 "
          f"or within 10x of numpy's {ol:.3g}")
    bn = np.linalg.norm(B)  # m = n: both ~ 0, so relative to ||b||
    dr = float(np.abs(res - rn).max() / bn)
    check(dr < 1e-10, f"{what}: residual norms = ||b - A x|| ({dr:.3g} ||b||)")
    fr = np.linalg.norm(R.T @ R - A.T @ A) / (np.linalg.norm(A) ** 2 * A.shape[1] * EPS)
    check(fr < 30, f"{what}: R^T R = A^T A (ratio {fr:.3g})")
    check(not np.tril(R, -1).any(), f"{what}: R is upper triangular (zeros below)")
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
            # add columns to a 1-D b's state: x stays 1-D; x0 padded with zeros is the solution
            write(p("kV.h5"), "V", rng.standard_normal((m, 2)))
            r = run(exe, "lstsq", "--update", p("K.qr.h5"), "--add-cols", p("kV.h5"), "-q")
            if check(r.returncode == 0, "add columns to a 1-D b's state: exit 0"):
                with h5py.File(p("K.qr.u.h5"), "r") as f:
                    x = f["x"][()]
                x1 = np.concatenate([x0, [0.0, 0.0]])
                check(x.shape == (N + 2,) and rel(x, x1) < 1e-12,
                      f"1-D x of N + 2, the known solution with zeros ({x.shape}, {rel(x, x1):.3g})")

        # (b2) overdetermined, inconsistent, with a known least-squares solution: b = A x0 + r0
        # with r0 orthogonal to A's range; A random and with a prescribed condition number
        # (LAPACK's generator's mode 3: singular values cond^(-i/(n-1)), random orthogonal
        # factors; cond 2 and sqrt(0.1/eps) as dchkls), m = 3n, r0 as large as A x0
        for cond in (None, 2.0, np.sqrt(0.1 / EPS)):
            m = 3 * N
            if cond is None:
                A = rng.standard_normal((m, N))
            else:
                U, _ = np.linalg.qr(rng.standard_normal((m, N)))
                V, _ = np.linalg.qr(rng.standard_normal((N, N)))
                A = (U * cond ** (-np.arange(N) / (N - 1))) @ V.T
            x0 = rng.standard_normal((N, NRHS))
            Q = np.linalg.qr(A, mode="complete")[0]
            z = Q[:, N:] @ rng.standard_normal((m - N, NRHS))
            ax = A @ x0
            r0 = z * (np.linalg.norm(ax, axis=0) / np.linalg.norm(z, axis=0))
            tag = "random" if cond is None else f"cond {cond:.3g}"
            write(p("L.h5"), "A", A)
            write(p("l.h5"), "b", ax + r0)
            r = run(exe, "lstsq", p("L.h5"), p("l.h5"), "--tile", "7", "--out", p("L.qr.h5"), "--force",
                    "-q")
            if check(r.returncode == 0, f"known least-squares solution, {tag}: exit 0 ({r.stderr})"):
                kap = np.linalg.cond(A)
                with h5py.File(p("L.qr.h5"), "r") as f:
                    x, res = f["x"][()], f["residual_norms"][()]
                # LAPACK's forward bound for least squares: n eps (kappa + kappa^2 |r| / (|A| |x|))
                bound = N * U53 * (kap + kap ** 2 * np.linalg.norm(r0) / (np.linalg.norm(A, 2) * np.linalg.norm(x0)))
                xl = np.linalg.lstsq(A, ax + r0, rcond=None)[0]
                e, el = rel(x, x0), rel(xl, x0)
                check(e < 30 * bound or e <= 10 * el, f"known solution, {tag}: |x - x0| / |x0| = {e:.3g} "
                      f"(bound {bound:.3g}, numpy {el:.3g})")
                dr = float(np.abs(res - np.linalg.norm(r0, axis=0)).max() / np.linalg.norm(r0))
                check(dr < 1e-10, f"known solution, {tag}: residual norms = ||r0|| ({dr:.3g})")
                check_state(p("L.qr.h5"), A, ax + r0, f"known solution, {tag}",
                            xtol=1e-10 if cond is None or cond < 10 else 1e-2)

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

        # (f) add columns: [A V] re-reduced against numpy and against lstsq of [A V] from scratch
        K = 6
        V = rng.standard_normal((m, K))
        write(p("uV.h5"), "V", V)
        AV = np.hstack([A, V])
        write(p("uAV.h5"), "A", AV)
        r = run(exe, "lstsq", p("uAV.h5"), p("uB.h5"), "--out", p("AV.qr.h5"), "-q")
        check(r.returncode == 0, "lstsq of [A V] from scratch: exit 0")
        with h5py.File(p("AV.qr.h5"), "r") as f:
            R_av = f["R"][()]
        big = 60 * N  # out of core: A's rows at 60 N, below a quarter of [A V] + b
        Ab, Bb, Vb = (rng.standard_normal((big, c)) for c in (N, NRHS, K))
        for name, v in (("A", Ab), ("B", Bb), ("V", Vb)):
            write(p(f"o{name}.h5"), name, v)
        r = run(exe, "lstsq", p("oA.h5"), p("oB.h5"), "-q")
        check(r.returncode == 0, "big state for add columns: exit 0")
        for tile in (1, 7, 64):
            out = p(f"ac{tile}.h5")
            r = run(exe, "lstsq", "--update", st, "--add-cols", p("uV.h5"), "--tile", str(tile),
                    "--out", out, "-q")
            if check(r.returncode == 0, f"add columns, tile {tile}: exit 0 ({r.stderr})"):
                cm = check_state(out, AV, B, f"add columns, tile {tile}")
                check(list(cm) == list(range(N + K)), "colmap: A's columns then N .. N+K-1")
                with h5py.File(out, "r") as f:
                    R = f["R"][()]
                dR = np.abs(np.abs(R) - np.abs(R_av)).max() / np.abs(R_av).max()
                check(dR < 1e-12, f"tile {tile}: |R| = |R| of lstsq [A V] ({dR:.3g})")
            ab = 8 * big * (N + K + NRHS)
            out = p(f"oc{tile}.h5")
            r = run(exe, "lstsq", "--update", p("oA.qr.h5"), "--add-cols", p("oV.h5"), "--tile",
                    str(tile), "--host-mem", str(ab // 4 - 1), "--out", out, "--json")
            if check(r.returncode == 0, f"add columns out of core, tile {tile}: exit 0"):
                rep = json.loads(r.stdout)
                check(rep["host_peak"] < ab // 4, f"host peak {rep['host_peak']} < {ab // 4}")
                check(rep["check"] == "full", "add columns: checked")
                check_state(out, np.hstack([Ab, Vb]), Bb, f"add columns out of core, tile {tile}")
        # after remove-cols (its state keeps input_a / input_b), and with --a / --b given
        r = run(exe, "lstsq", "--update", p("rm.h5"), "--add-cols", p("uV.h5"), "--out",
                p("rmac.h5"), "-q")
        if check(r.returncode == 0, "add columns to a remove-cols state: exit 0"):
            cm = check_state(p("rmac.h5"), np.hstack([A[:, keep], V]), B, "remove, then add")
            check(list(cm) == keep + list(range(N, N + K)), "colmap: kept columns, then new")
        addrows = p("uA.qr.u.h5")
        r = run(exe, "lstsq", "--update", addrows, "--add-cols", p("uV.h5"), "-q")
        check(r.returncode == 2 and "--a" in r.stderr, f"add-rows state without --a: exit 2 "
              f"naming --a (got {r.returncode}: {r.stderr.strip()})")
        write(p("uV2.h5"), "V", rng.standard_normal((m + 40, K)))
        r = run(exe, "lstsq", "--update", addrows, "--add-cols", p("uV2.h5"), "--a", p("uA.h5"),
                "--b", p("uB.h5"), "-q")
        check(r.returncode == 3, f"A's rows are not the state's: exit 3 (got {r.returncode})")
        r = run(exe, "lstsq", "--update", st, "--add-cols", p("uV2.h5"), "--out", p("x1.h5"),
                "-q")
        check(r.returncode == 3 and "rows" in r.stderr and not os.path.exists(p("x1.h5")),
              f"V's rows != the state's: exit 3, nothing written (got {r.returncode})")
        Vd = V.copy()
        Vd[:, 4] = A[:, 2] - 2 * V[:, 1]
        write(p("uVd.h5"), "V", Vd)
        r = run(exe, "lstsq", "--update", st, "--add-cols", p("uVd.h5"), "--out", p("x2.h5"),
                "--json")
        check(r.returncode == 4 and not os.path.exists(p("x2.h5")),
              f"a dependent new column: exit 4, nothing written (got {r.returncode})")
        if r.stdout:
            rep = json.loads(r.stdout)
            check(rep["info"] == N + 5, f"info = the dependent column + 1 ({rep['info']})")
        write(p("uX.h5"), "A", rng.standard_normal((m, N)))
        r = run(exe, "lstsq", "--update", st, "--add-cols", p("uV.h5"), "--a", p("uX.h5"),
                "--b", p("uB.h5"), "--out", p("x3.h5"), "-q")
        check(r.returncode == 3 and "not the matrix" in r.stderr and not os.path.exists(p("x3.h5")),
              f"another A: exit 3, nothing written (got {r.returncode})")
        Vn = V.copy()
        Vn[5, 2] = np.nan
        write(p("uVn.h5"), "V", Vn)
        r = run(exe, "lstsq", "--update", st, "--add-cols", p("uVn.h5"), "--out", p("x4.h5"), "-q")
        check(r.returncode == 3 and "uVn.h5:/V: element [5, 2]" in r.stderr
              and not os.path.exists(p("x4.h5")), f"NaN in V: exit 3 naming V's element "
              f"(got {r.returncode})")
        check(sha(st) == h0, "the state file add columns reads is unchanged")

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
