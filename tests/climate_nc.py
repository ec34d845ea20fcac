#!/usr/bin/env python3
"""climate_nc.py: oocsolve on files made the way climate users make them (netCDF4, xarray).

Issue 21: fill values refused, CF packing applied, slices and squeezing, 1-D right-hand sides,
transposed operands, outputs added to an existing file (and SIGKILLed while doing it: every other
dataset must come through bit for bit), xarray-readable outputs (named dimensions, history,
units), progress lines in batch jobs, CLI habits, and the default --host-mem under a real cgroup
where one can be made.

Usage: climate_nc.py BUILD_DIR. Exit 0 ok, 1 failure, 77 skipped (modules missing and CI unset;
with CI=true missing modules are a failure).
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MODULES = ("numpy", "h5py", "netCDF4", "xarray", "h5netcdf")
try:
    import numpy as np
    import h5py
    import netCDF4
    import xarray as xr
    import h5netcdf  # noqa: F401  (the engine xarray uses by that name)
except ImportError as e:  # pragma: no cover
    msg = f"climate_nc: missing module ({e}); pip install {' '.join(MODULES)}"
    if os.environ.get("CI", "").lower() == "true":
        print(msg + " -- CI=true: failing, not skipping", file=sys.stderr)
        sys.exit(1)
    print(msg + " -- skipped", file=sys.stderr)
    sys.exit(77)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
OOC = os.path.join(BUILD, "oocsolve")
TMP = tempfile.mkdtemp(prefix="ooc_climate_")
FAILS = []
CHECKS = 0


def check(ok, what):
    global CHECKS
    CHECKS += 1
    if not ok:
        FAILS.append(what)
        print(f"  FAIL: {what}", file=sys.stderr)


def run(*args, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("OOCSOLVE_TEST_KILL", None)
    if env:
        e.update(env)
    p = subprocess.run([OOC, *args], capture_output=True, text=True, env=e, timeout=timeout,
                       cwd=TMP)
    return p.returncode, p.stdout, p.stderr


def path(name):
    return os.path.join(TMP, name)


def spd(n, seed):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def sha(fn):
    with open(fn, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def leftovers():
    return [f for f in os.listdir(TMP) if ".tmp-" in f or f.startswith(".oocsolve-")]


# ---- silent wrong answers ------------------------------------------------------------------

def t_fill():
    n = 60
    a = spd(n, 1)
    for attr in ("_FillValue", "missing_value"):
        f = path(f"fill_{attr}.nc")
        with netCDF4.Dataset(f, "w") as ds:
            ds.createDimension("x", n)
            ds.createDimension("y", n)
            if attr == "_FillValue":
                v = ds.createVariable("cov", "f8", ("x", "y"), fill_value=-9999.0)
            else:
                v = ds.createVariable("cov", "f8", ("x", "y"))
                v.missing_value = -9999.0
            v.set_auto_mask(False)
            d = a.copy()
            d[10, 20] = d[30, 5] = d[40, 41] = -9999.0
            v[:] = d
        rc, out, err = run(f + ":/cov", "--out", path("fill.inv.h5"))
        check(rc == 3, f"{attr} present: exit 3 (got {rc}: {err.strip()})")
        check("3 elements" in err and "[10, 20]" in err and "--keep-fill" in err and "cov" in err,
              f"{attr}: the message names the count, the first position and --keep-fill: {err}")
        check(not os.path.exists(path("fill.inv.h5")) and not leftovers(), "no output left")
        rc, out, err = run(f + ":/cov", "--out", path("fill.inv.h5"), "--keep-fill", "--force",
                           "--json")
        check(rc == 0 and "--keep-fill" in json.loads(out)["warnings"],
              f"{attr}: --keep-fill reads them as numbers, and says so ({rc} {err})")
        if rc == 0:
            with h5py.File(path("fill.inv.h5"), "r") as h:
                x = h["inverse"][:]
            check(np.allclose(x @ d, np.eye(n), atol=1e-8), "--keep-fill: the inverse of the data")
        os.remove(path("fill.inv.h5")) if os.path.exists(path("fill.inv.h5")) else None
    # a fill value declared but absent from the data is no reason to refuse
    f = path("fill_absent.nc")
    xr.Dataset({"cov": (("x", "y"), a)}).to_netcdf(f, encoding={"cov": {"_FillValue": -9999.0}})
    rc, out, err = run(f + ":/cov", "--out", path("fa.inv.h5"))
    check(rc == 0, f"declared but absent _FillValue: exit 0 ({err.strip()})")


def t_packing():
    n = 50
    a = spd(n, 2) / 10
    f = path("packed.nc")
    enc = {"cov": {"dtype": "int16", "scale_factor": 0.001, "add_offset": 0.5,
                   "_FillValue": -32767}}
    xr.Dataset({"cov": (("x", "y"), a)}).to_netcdf(f, encoding=enc)
    dec = xr.open_dataset(f)["cov"].values.astype(np.float64)  # as xarray unpacks it
    sign, want = np.linalg.slogdet(dec)
    rc, out, err = run("logdet", f + ":/cov", "--json")
    check(rc == 0, f"packed int16: logdet runs ({err.strip()})")
    if rc == 0:
        rep = json.loads(out)
        check(abs(rep["logdet"] - want) < 1e-9 * abs(want) + 1e-9,
              f"packed int16: logdet {rep['logdet']} = xarray's {want}")
        check("scale_factor" in rep["warnings"] and "add_offset" in rep["warnings"],
              f"the report says the packing was applied: {rep['warnings']}")
    # raw ints would give another answer: the test can fail
    with h5py.File(f, "r") as h:
        raw = h["cov"][:].astype(np.float64)
    check(abs(np.linalg.slogdet(raw)[1] - want) > 1, "packing matters for this matrix")
    # fill check on the packed values: a -32767 in the file is refused
    with netCDF4.Dataset(f, "a") as ds:
        ds["cov"].set_auto_maskandscale(False)
        ds["cov"][3, 4] = -32767
    rc, out, err = run("logdet", f + ":/cov")
    check(rc == 3 and "[3, 4]" in err, f"packed fill value refused at [3, 4]: {rc} {err}")


# ---- shapes -------------------------------------------------------------------------------

def t_slices():
    n = 40
    stack = np.stack([spd(n, 10 + k) for k in range(3)])
    f = path("stack.nc")
    xr.Dataset({"B": (("time", "x", "y"), stack), "B1": (("t1", "x", "y"), stack[1:2])}
               ).to_netcdf(f)
    rc, out, err = run(f + ":/B[1,:,:]", "--out", path("s1.h5"))
    check(rc == 0, f"slice [1,:,:]: exit 0 ({err.strip()})")
    if rc == 0:
        with h5py.File(path("s1.h5"), "r") as h:
            check(np.allclose(h["inverse"][:] @ stack[1], np.eye(n), atol=1e-10),
                  "slice [1,:,:]: the inverse of that slice")
    rc, out, err = run(f + ":/B[-1,:,:]", "--out", path("s2.h5"))
    check(rc == 0, "negative index [-1,:,:]")
    if rc == 0:
        with h5py.File(path("s2.h5"), "r") as h:
            check(np.allclose(h["inverse"][:] @ stack[2], np.eye(n), atol=1e-10),
                  "slice [-1,:,:] is the last")
    rc, out, err = run(f + ":/B1", "--out", path("s3.h5"))
    check(rc == 0, f"1 x n x n squeezed without a slice ({err.strip()})")
    rc, out, err = run(f + ":/B", "--out", path("s4.h5"))
    check(rc == 3 and "[0,:,:]" in err, f"3 x n x n: exit 3 suggesting a slice: {err}")
    rc, out, err = run(f + ":/B[5,:,:]", "--out", path("s5.h5"))
    check(rc == 2 and "outside" in err, f"index out of range: exit 2: {err}")
    rc, out, err = run(f + ":/B[0,:]", "--out", path("s5.h5"))
    check(rc == 2 and "3 axes" in err, f"wrong number of entries: exit 2: {err}")


def t_rhs_1d_and_trans():
    n, m = 45, 3
    a = spd(n, 3)
    rng = np.random.default_rng(4)
    a_ns = a + np.triu(rng.standard_normal((n, n)))  # not symmetric
    b = rng.standard_normal(n)
    bt = rng.standard_normal((m, n))  # a Fortran writer's n x m, transposed
    f = path("sys.nc")
    xr.Dataset({"A": (("x", "y"), a), "An": (("x", "y"), a_ns), "b": (("y",), b),
                "BT": (("k", "y"), bt)}).to_netcdf(f)
    rc, out, err = run("solve", f + ":/A", f + ":/b", "--out", path("x1.h5:/X"))
    check(rc == 0, f"1-D right-hand side accepted ({err.strip()})")
    if rc == 0:
        with h5py.File(path("x1.h5"), "r") as h:
            x = h["X"][:]
        check(x.shape == (n,), f"X written 1-D: {x.shape}")
        check(np.allclose(x, np.linalg.solve(a, b), rtol=1e-9), "1-D: X = A^-1 b")
    rc, out, err = run("solve", f + ":/A", f + ":/BT", "--out", path("x2.h5:/X"))
    check(rc == 3 and "rows" in err, f"m x n right-hand side refused without --trans-b: {err}")
    rc, out, err = run("solve", "--trans-b", f + ":/A", f + ":/BT", "--out", path("x2.h5:/X"))
    check(rc == 0, f"--trans-b ({err.strip()})")
    if rc == 0:
        with h5py.File(path("x2.h5"), "r") as h:
            check(np.allclose(h["X"][:], np.linalg.solve(a, bt.T), rtol=1e-9),
                  "--trans-b: X = A^-1 B^T")
    rc, out, err = run("solve", "--trans-a", f + ":/An", f + ":/b", "--out", path("x3.h5:/X"))
    check(rc == 0, f"--trans-a ({err.strip()})")
    if rc == 0:
        with h5py.File(path("x3.h5"), "r") as h:
            check(np.allclose(h["X"][:], np.linalg.solve(a_ns.T, b), rtol=1e-8),
                  "--trans-a: X = A^-T b")
    rc, out, err = run("--trans-a", f + ":/An", "--out", path("x4.h5"))
    if rc == 0:
        with h5py.File(path("x4.h5"), "r") as h:
            check(np.allclose(h["inverse"][:] @ a_ns.T, np.eye(n), atol=1e-9),
                  "--trans-a invert: (A^T)^-1")
    check(rc == 0, f"invert --trans-a ({err})")
    rc, out, err = run("gemm", "--trans-a", "--trans-b", f + ":/An", f + ":/BT", "--out",
                       path("c1.h5"))
    check(rc == 0, f"gemm --trans-a --trans-b ({err.strip()})")
    if rc == 0:
        with h5py.File(path("c1.h5"), "r") as h:
            check(np.allclose(h["C"][:], a_ns.T @ bt.T, rtol=1e-10, atol=1e-10),
                  "gemm: C = A^T B^T")
    rc, out, err = run("--trans-b", f + ":/A")
    check(rc == 2 and "--trans-b" in err, f"--trans-b on invert: usage error: {err}")


# ---- writing into an existing file -----------------------------------------------------------

def snapshot(f, skip=()):
    """Every dataset's bytes, dtype, shape and attributes (but `skip`), and the root's attributes."""
    snap = {}
    with h5py.File(f, "r") as h:
        snap["/"] = {k: repr(v) for k, v in h.attrs.items()}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and "/" + name not in skip:
                attrs = {k: repr(v) for k, v in obj.attrs.items()
                         if k not in ("REFERENCE_LIST", "DIMENSION_LIST")}
                snap["/" + name] = (obj.dtype.str, obj.shape, obj[()].tobytes(), attrs)
        h.visititems(visit)
    return snap


def make_results(f, n):
    rng = np.random.default_rng(5)
    with netCDF4.Dataset(f, "w") as ds:
        ds.title = "analysis increments"
        ds.createDimension("x", n)
        ds.createDimension("x2", n)
        ds.createDimension("obs", 30)
        v = ds.createVariable("B", "f8", ("x", "x2"))
        v.units = "K2"
        v[:] = spd(n, 6)
        ds.createVariable("H", "f4", ("obs", "x"), zlib=True)[:] = rng.standard_normal((30, n))
        ds.createVariable("R", "f8", ("obs",))[:] = rng.random(30)
        ds.createVariable("Binv", "f8", ("x", "x2"))[:] = np.zeros((n, n))  # an old result
        g = ds.createGroup("meta")
        g.createVariable("flag", "i4", ())[:] = 7


def t_append():
    """An output added to an existing file (results.nc holds B, H, R and a group) replaces only
    its dataset. The input is another file (bg.nc: B's copy): an output is never written into an
    input's own file (issue 20: refused by device and inode, also with --force)."""
    n = 60
    f = path("results.nc")
    make_results(f, n)
    bg = path("bg.nc")
    shutil.copyfile(f, bg)
    bg_sha = sha(bg)
    before = snapshot(f, skip=("/Binv",))
    rc, out, err = run(bg + ":/B", "--out", f + ":/Binv", "--force", "--json")
    check(rc == 0, f"--out results.nc:/Binv --force: exit 0 ({err.strip()})")
    check(snapshot(f, skip=("/Binv",)) == before,
          "every other dataset and attribute kept bit for bit")
    b = before["/B"]
    bmat = np.frombuffer(b[2], dtype=b[0]).reshape(b[1])
    with h5py.File(f, "r") as h:
        check(np.allclose(h["Binv"][:] @ bmat, np.eye(n), atol=1e-10), "Binv replaced: B^-1")
    if rc == 0:
        check("replaces" in json.loads(out)["warnings"], "the report says a dataset was replaced")
    for eng in ("netcdf4", "h5netcdf"):
        ds = xr.open_dataset(f, engine=eng)
        check(set(ds.variables) >= {"B", "H", "R", "Binv"} and ds.attrs.get("title")
              == "analysis increments", f"{eng} reads the file with all its variables")
        check(ds["Binv"].dims == ("x2", "x") and ds["Binv"].attrs.get("units") == "K-2",
              f"{eng}: Binv dims {ds['Binv'].dims} named after B's, units K-2")
        ds.close()
    # a new name adds a dataset, in a new group too
    rc, out, err = run(bg + ":/B", "--out", f + ":/inv/Binv2", "--force")
    check(rc == 0 and snapshot(f, skip=("/Binv", "/inv/Binv2")) == before, "added in a new group")
    # never a dimension scale, a group, or into the input's own file
    rc, out, err = run(bg + ":/B", "--out", f + ":/x", "--force")
    check(rc == 5 and "dimension" in err, f"refuses to replace a netCDF dimension: {rc} {err}")
    rc, out, err = run(bg + ":/B", "--out", f + ":/meta", "--force")
    check(rc == 5 and "group" in err, f"refuses to replace a group: {rc} {err}")
    for target in (":/B", ":/Binv"):
        rc, out, err = run(bg + ":/B", "--out", bg + target, "--force")
        check(rc == 2 and "replace an input" in err,
              f"refuses to write {target} into the input's own file: {rc} {err}")
    check(sha(bg) == bg_sha, "the input's file byte-identical")
    rc, out, err = run(bg + ":/B", "--out", f + ":/Binv")
    check(rc != 0 and "--force" in err, f"without --force: refused, naming --force: {err}")
    check(snapshot(f, skip=("/Binv", "/inv/Binv2")) == before, "refusals changed nothing")
    check(not leftovers(), f"no temporaries left: {leftovers()}")


def t_append_sigkill():
    """SIGKILL at every point of the output protocol (OOCSOLVE_TEST_KILL=h5out:N) and at timed
    moments (during the copy too): B, H, R, the group and the attributes must survive bit for bit,
    Binv must be the old or the complete new one, never anything else."""
    n = 200
    f = path("kill.nc")
    make_results(f, n)
    with netCDF4.Dataset(f, "a") as ds:  # some bulk, so that the copy takes a while
        ds.createDimension("big", 1 << 20)
        ds.createVariable("big", "f8", ("big",))[:] = np.arange(1 << 20, dtype=np.float64)
    shutil.copyfile(f, f + ".backup")
    kin = path("kill_in.nc")  # the input: never the output's own file (issue 20)
    shutil.copyfile(f, kin)
    orig = snapshot(f)
    old_binv = orig["/Binv"]
    others = {k: v for k, v in orig.items() if k != "/Binv"}
    b = orig["/B"]
    bmat = np.frombuffer(b[2], dtype=b[0]).reshape(b[1])

    def verify(tag):
        try:
            s = snapshot(f)
        except Exception as e:  # noqa: BLE001
            check(False, f"{tag}: the file cannot be read after SIGKILL: {e}")
            return None
        check({k: v for k, v in s.items() if k != "/Binv"} == others,
              f"{tag}: every other dataset bit for bit")
        bi = s.get("/Binv")
        new = None
        if bi and bi[2] != old_binv[2]:
            x = np.frombuffer(bi[2], dtype=bi[0]).reshape(bi[1])
            new = np.allclose(x @ bmat, np.eye(n), atol=1e-8)
            check(new, f"{tag}: Binv is the old one or the complete new one")
        check(bi is not None, f"{tag}: Binv present (old or new)")
        return "new" if new else "old"

    points = 0
    for k in range(1, 200):
        e = dict(os.environ, OOCSOLVE_TEST_KILL=f"h5out:{k}")
        p = subprocess.run([OOC, kin + ":/B", "--out", f + ":/Binv", "--force", "-q",
                            "--tile", "64"], env=e, capture_output=True, cwd=TMP)
        if p.returncode == 0:
            break
        check(p.returncode == -signal.SIGKILL, f"kill point {k}: died of SIGKILL ({p.returncode})")
        state = verify(f"kill point h5out:{k}")
        points += 1
        if state == "new":  # renamed already: start again from the old file
            make_results_restore(f, orig)
    check(points >= 8, f"the protocol has several kill points ({points})")
    print(f"  SIGKILL at {points} protocol points: every other dataset intact", file=sys.stderr)
    # timed kills: before, during and after the copy, mid-write
    t0 = time.monotonic()
    run(kin + ":/B", "--out", f + ":/Binv", "--force", "-q", "--tile", "64")
    full = time.monotonic() - t0
    make_results_restore(f, orig)
    timed = 0
    for frac in (0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.75, 0.9, 0.97):
        p = subprocess.Popen([OOC, kin + ":/B", "--out", f + ":/Binv", "--force", "-q", "--tile",
                              "64"], cwd=TMP, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(full * frac)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if p.returncode == -signal.SIGKILL:
            timed += 1
        if verify(f"SIGKILL at {frac:.0%} of {full:.3f} s") == "new":
            make_results_restore(f, orig)
    print(f"  SIGKILL at {timed} timed moments over a {full:.3f} s run", file=sys.stderr)
    # the next run sweeps the dead runs' temporaries and succeeds
    rc, out, err = run(kin + ":/B", "--out", f + ":/Binv", "--force", "-q")
    check(rc == 0 and verify("final run") == "new", f"a run after the kills succeeds ({err})")
    check(not leftovers(), f"stale temporaries swept: {leftovers()}")


def make_results_restore(f, orig):
    """Put the original file back from its backup copy."""
    shutil.copyfile(f + ".backup", f)
    check(snapshot(f) == orig, "restored the original file")


# ---- outputs people can use ------------------------------------------------------------------

def t_xarray_output():
    n = 40
    f = path("cov.nc")
    da = xr.DataArray(spd(n, 7), dims=("lat", "lon"),
                      coords={"lat": np.linspace(-60, 60, n), "lon": np.linspace(0, 355, n)},
                      attrs={"units": "K2", "long_name": "background error covariance"})
    da.lat.attrs["units"] = "degrees_north"
    xr.Dataset({"cov": da}).to_netcdf(f)
    out = path("cov_inv.nc")
    rc, _, err = run(f + ":/cov", "--out", out)
    check(rc == 0, f"invert cov.nc ({err.strip()})")
    for eng in ("netcdf4", "h5netcdf"):
        ds = xr.open_dataset(out, engine=eng)
        v = ds["inverse"]
        check(v.dims == ("lon", "lat"), f"{eng}: dims named after the input's: {v.dims}")
        check(not any(d.startswith("phony") for d in ds.dims), f"{eng}: no phony dims {ds.dims}")
        check(np.allclose(ds["lat"].values, np.linspace(-60, 60, n)) and
              ds["lat"].attrs.get("units") == "degrees_north", f"{eng}: coordinates carried")
        check(v.attrs.get("units") == "K-2", f"{eng}: units K-2: {v.attrs.get('units')}")
        h = v.attrs.get("history", "")
        check("oocsolve" in h and "--out" in h and h[:4].isdigit(),
              f"{eng}: history has the date and the command line: {h}")
        check(v.attrs.get("input_path", "").startswith("/") and
              v.attrs["input_path"].endswith("cov.nc:/cov"), f"{eng}: input's absolute path")
        for k in ("method", "residual_ratio", "time_compute", "oocsolve_version"):
            check(k in v.attrs, f"{eng}: attribute {k} kept")
        ds.close()
    # an h5py file without dimensions still gets named (not phony) ones
    g = path("plain.h5")
    with h5py.File(g, "w") as h:
        h["A"] = spd(20, 8)
    rc, _, err = run(g + ":/A", "--out", path("plain_inv.h5"))
    ds = xr.open_dataset(path("plain_inv.h5"), engine="netcdf4")
    check(rc == 0 and ds["inverse"].dims == ("inverse_row", "inverse_col"),
          f"plain input: dims {ds['inverse'].dims}")
    ds.close()
    # units of a solve: B / A
    with h5py.File(g, "a") as h:
        h["A"].attrs["units"] = "K2"
        h["b"] = np.ones(20)
        h["b"].attrs["units"] = "K"
    rc, _, err = run("solve", g + ":/A", g + ":/b", "--out", path("plain_x.h5"))
    with h5py.File(path("plain_x.h5"), "r") as h:
        check(rc == 0 and h["X"].attrs.get("units") == "K-1", "solve: units of B / A = K-1")


# ---- batch habits ----------------------------------------------------------------------------

def t_progress_lines():
    n = 1200
    f = path("big.h5")
    with h5py.File(f, "w") as h:
        h["A"] = spd(n, 9)
    rc, out, err = run(f + ":/A", "--method", "gj", "--tile", "128", "--host-mem", "8M",
                       "--out", path("big_inv.h5"), env={"OOCSOLVE_PROGRESS_SECONDS": "0.05"})
    lines = [l for l in err.splitlines() if "progress:" in l]
    check(rc == 0 and lines, f"progress lines on a non-terminal stderr ({rc}, {err[-300:]})")
    check(any("step " in l and "/" in l and "ETA" in l and "elapsed" in l and "%" in l
              for l in lines), f"phase, step k/N, percent, elapsed, ETA: {lines[:3]}")
    rc, out, err = run(f + ":/A", "--method", "gj", "--tile", "128", "--out", path("b2.h5"),
                       "-q", env={"OOCSOLVE_PROGRESS_SECONDS": "0.05"})
    check("progress:" not in err, "--quiet: no progress lines")


def t_cli_habits():
    f = path("cli.h5")
    with h5py.File(f, "w") as h:
        h["A"] = spd(10, 11)
    rc, out, err = run("inverse", f)
    check(rc == 2 and "did you mean 'invert'" in err, f"misspelt command: {err}")
    rc, out, err = run("--hostmem", "1G", f)
    check(rc == 2 and "did you mean --host-mem" in err, f"misspelt option: {err}")
    rc, out, err = run("--method", "chl", f)
    check(rc == 2 and "chol" in err, f"misspelt value: {err}")
    rc, out, err = run("--json", "--tile", "0", f)
    check(rc == 2 and json.loads(out)["exit_code"] == 2 and "--tile" in json.loads(out)["error"],
          f"--json on a usage error prints JSON: {out}")
    rc, out, err = run("--json", "--frce", f)
    check(rc == 2 and "did you mean" in json.loads(out)["error"], "--json, unknown option")
    rc, out, err = run("--out=" + path("eq.h5"), "--tile=8", "--", f)
    check(rc == 0 and os.path.exists(path("eq.h5")), f"--opt=value and -- ({err})")
    rc, out, err = run(f, "--out", path("eq.h5"))
    check(rc == 5 and "--force" in err, f"messages name options as typed: {err}")
    rc, out, err = run("--force=yes", f)
    check(rc == 2 and "takes no value" in err, "--force=yes refused")
    rc, out, err = run("--version")
    check(rc == 0 and all(w in out for w in ("CUDA", "HDF5", "zstd", "BLAS")),
          f"--version prints the build: {out}")
    rc, out, err = run(f, "--out", path("wide.h5"), env={"COLUMNS": "50"})
    check(rc == 0 and max(len(l) for l in out.splitlines()) <= 50,
          f"report fits COLUMNS=50: {max(len(l) for l in out.splitlines())}")


def t_cgroup():
    """The default --host-mem under a real 400 MiB cgroup, where this process may make one."""
    name = f"ooc_climate_{os.getpid()}"
    cands = []
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            hid, ctrl, p = line.rstrip("\n").split(":", 2)
            if hid == "0" and ctrl == "":
                cands.append(("v2", os.path.join("/sys/fs/cgroup", p.lstrip("/"), name),
                              "memory.max"))
            elif "memory" in ctrl.split(","):
                cands.append(("v1", os.path.join("/sys/fs/cgroup/memory", name),
                              "memory.limit_in_bytes"))
    made = None
    for kind, d, fname in cands:
        try:
            os.mkdir(d)
            with open(os.path.join(d, fname), "w") as fh:
                fh.write(str(400 << 20))
            made = (kind, d, fname)
            break
        except OSError:
            try:
                os.rmdir(d)
            except OSError:
                pass
    if not made:
        print("  no cgroup can be created here: the real-cgroup case is not run (the parser is "
              "unit-tested in test_climate)", file=sys.stderr)
        return
    kind, d, fname = made
    f = path("cg.h5")
    with h5py.File(f, "w") as h:
        h["A"] = spd(30, 12)

    def enter():
        with open(os.path.join(d, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    try:
        p = subprocess.run([OOC, f, "--out", path("cg_inv.h5"), "--json"], capture_output=True,
                           text=True, preexec_fn=enter, cwd=TMP)
        rep = json.loads(p.stdout)
        # half of (400 MiB less what the process holds at start), the default's rule
        check(p.returncode == 0 and 25 << 20 <= rep["host_budget"] < 200 << 20,
              f"cgroup {kind} 400 MiB: default budget below 200 MiB ({rep['host_budget']})")
        check(fname in rep["host_limit"] and f"cgroup {kind}" in rep["host_limit"] and
              "400.0 MiB" in rep["host_limit"] and "resident" in rep["host_limit"],
              f"the report names the limit: {rep['host_limit']}")
        print(f"  real cgroup {kind}: {rep['host_limit']}", file=sys.stderr)
    finally:
        time.sleep(0.05)
        try:
            os.rmdir(d)
        except OSError:
            pass


def main():
    if not os.access(OOC, os.X_OK):
        print(f"climate_nc: {OOC} not built", file=sys.stderr)
        return 1
    tests = [t_fill, t_packing, t_slices, t_rhs_1d_and_trans, t_append, t_append_sigkill,
             t_xarray_output, t_progress_lines, t_cli_habits, t_cgroup]
    only = os.environ.get("CLIMATE_ONLY")  # e.g. CLIMATE_ONLY=t_append while iterating
    for t in tests:
        if only and t.__name__ not in only.split(","):
            continue
        t0 = time.monotonic()
        n0 = len(FAILS)
        try:
            t()
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            FAILS.append(f"{t.__name__}: {e!r}")
        print(f"{t.__name__}: {'ok' if len(FAILS) == n0 else 'FAILED'} "
              f"({time.monotonic() - t0:.1f} s)", file=sys.stderr)
    print(f"climate_nc: {CHECKS} checks, {len(FAILS)} failed", file=sys.stderr)
    if not FAILS and not os.environ.get("OOC_KEEP_TMP"):
        shutil.rmtree(TMP, ignore_errors=True)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
