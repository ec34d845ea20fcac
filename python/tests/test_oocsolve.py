"""pytest suite of the Python bindings: every function on every kind of input (numpy C/F order,
float32, strided, h5py read-only and writable, xarray in memory and lazy, file paths,
TileSource) and output (new array, array in place, file, function), against numpy within
LAPACK's residual ratios; options mirroring the CLI and checked by the library; exceptions
carrying status, exit code and message; progress, interruption, the ABI check, and the README's
quick start."""
import os
import re

import numpy as np
import pytest

import oocsolve
from oocsolve import _lib

EPS64 = np.finfo(np.float64).eps
EPS32 = np.finfo(np.float32).eps
SMALL = dict(tile=32, device="cpu")


def inv_ratio(a, x, eps):
    """LAPACK's ||I - A X||_1 / (n ||A||_1 ||X||_1 eps)."""
    n = a.shape[0]
    r = np.eye(n) - a.astype(np.float64) @ x.astype(np.float64)
    return np.abs(r).sum(0).max() / (n * np.abs(a).sum(0).max() * np.abs(x).sum(0).max() * eps)


def solve_ratio(a, x, b, eps):
    """HPL's max_j ||A x_j - b_j||_inf / (eps (||A||_inf ||x_j||_inf + ||b_j||_inf) n)."""
    x = x.reshape(a.shape[0], -1).astype(np.float64)
    b = np.asarray(b, dtype=np.float64).reshape(a.shape[0], -1)
    r = a @ x - b
    an = np.abs(a).sum(1).max()
    return max(np.abs(r[:, j]).max() / (eps * (an * np.abs(x[:, j]).max() + np.abs(b[:, j]).max())
                                        * a.shape[0]) for j in range(b.shape[1]))


@pytest.fixture(scope="module")
def spd():
    rng = np.random.default_rng(3)
    n = 120
    g = rng.standard_normal((n, n))
    return g @ g.T / n + np.eye(n)


@pytest.fixture(scope="module")
def gen():
    rng = np.random.default_rng(5)
    n = 110
    return rng.standard_normal((n, n)) + 4 * np.eye(n)


@pytest.fixture(scope="module")
def rhs():
    return np.random.default_rng(7).standard_normal((120, 5))


def test_abi_and_version():
    assert _lib.lib.ooc_abi_version() == oocsolve.ABI_VERSION == 1
    assert re.match(r"\d+\.\d+\.\d+", oocsolve.version())
    assert "HDF5" in oocsolve.build_info()
    assert "host_mem" in oocsolve.option_names()
    advice = oocsolve.blas_advice()  # None where OpenBLAS chose well (this machine's case)
    assert advice is None or (len(advice) == 2 and advice[1] in ("SkylakeX", "Haswell"))


def test_abi_mismatch_refused(monkeypatch):
    monkeypatch.setattr(_lib, "ABI_VERSION", 99)
    with pytest.raises(ImportError, match="ABI version 1; these bindings need 99"):
        _lib._load()


def test_missing_library_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("OOCSOLVE_LIBRARY", str(tmp_path / "nope.so"))
    with pytest.raises(ImportError, match="set OOCSOLVE_LIBRARY"):
        _lib._load()


# ---- inputs ----------------------------------------------------------------------------------

def kinds(a, tmp_path):
    """The same matrix as every kind of input the functions take."""
    import h5py
    import xarray as xr
    n = a.shape[0]
    out = {"c64": np.ascontiguousarray(a), "f64": np.asfortranarray(a),
           "f_ld": np.asfortranarray(np.vstack([a, a]))[:n, :],  # column-major, ld 2n
           "c_ld": np.ascontiguousarray(np.hstack([a, a]))[:, :n]}  # row-major, ld 2n
    p = tmp_path / "kinds.h5"
    with h5py.File(p, "w") as f:
        f["A"] = a
    out["path"] = f"{p}:/A"
    out["h5py_r"] = h5py.File(p, "r")["A"]
    p2 = tmp_path / "kinds_rw.h5"
    with h5py.File(p2, "w") as f:
        f["A"] = a
    out["h5py_rw"] = h5py.File(p2, "r+")["A"]  # writable: read through h5py, a block at a time
    out["xr_mem"] = xr.DataArray(a, dims=("r", "c"), name="A")
    nc = tmp_path / "kinds.nc"
    xr.Dataset({"A": (("r", "c"), a)}).to_netcdf(nc)
    out["xr_lazy"] = xr.open_dataset(nc)["A"]
    out["tiles"] = oocsolve.TileSource(a.shape, lambda r0, r1, c0, c1: a[r0:r1, c0:c1], "gen")
    return out


def test_inv_every_input_kind(gen, tmp_path):
    ref = np.linalg.inv(gen)
    for name, a in kinds(gen, tmp_path).items():
        rep = {}
        x = oocsolve.inv(a, report=rep, **SMALL)
        assert isinstance(x, np.ndarray) and x.dtype == np.float64, name
        assert inv_ratio(gen, x, EPS64) < 30, name
        assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max(), name
        assert rep["method"] == "gj" and rep["residual"] < 30 and rep["n"] == gen.shape[0], name


def test_float32_and_converted_inputs(gen):
    a32 = gen.astype(np.float32)
    x = oocsolve.inv(a32, **SMALL)
    assert x.dtype == np.float32
    assert inv_ratio(a32.astype(np.float64), x, EPS32) < 30
    x = oocsolve.inv(np.asfortranarray(a32), out_type="f64", **SMALL)
    assert x.dtype == np.float64
    big = np.round(gen * 1000).astype(np.int64)  # converted (a copy), as documented
    xi = oocsolve.inv(big, **SMALL)
    assert inv_ratio(big.astype(np.float64), xi, EPS64) < 30
    be = gen.astype(">f8")  # non-native byte order: converted
    assert inv_ratio(gen, oocsolve.inv(be, **SMALL), EPS64) < 30


def test_array_not_copied(tmp_path):
    """A Fortran-order float64 array is read in place: an out-of-core inverse from it peaks at
    no more host bytes than the same run from a file, within a budget smaller than the array.
    (The file is chunked unlike the tiles: its tiles then have no fallback on it, which would
    plan a smaller tile cache for the file's run.)"""
    import h5py
    rng = np.random.default_rng(9)
    n = 640
    a = np.asfortranarray(rng.standard_normal((n, n)) + n * np.eye(n))
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("A", data=a, chunks=(48, 48))
    opts = dict(tile=64, device="cpu", method="gj", host_mem="2M", check="probe")
    peaks = []
    for src in (f"{tmp_path / 'a.h5'}:/A", a):
        rep = {}
        x = oocsolve.inv(src, report=rep, **opts)
        assert inv_ratio(a, x, EPS64) < 30
        assert rep["bytes_spilled"] > 0  # really out of core
        peaks.append(rep["host_peak"])
    assert peaks[1] <= peaks[0] and peaks[1] <= 2 << 20 < a.nbytes


def test_report_device_memory(gen):
    """Every device the report lists says its memory peak within its budget (issue 18): gj on
    two host devices, each executor's planned workspace (in core the second has no work); the
    first device's also at the top."""
    rep = {}
    x = oocsolve.inv(gen, method="gj", devices="0,1", report=rep, **SMALL)
    assert inv_ratio(gen, x, EPS64) < 30
    assert [d["id"] for d in rep["devices"]] == [0, 1]
    for d in rep["devices"]:
        assert 0 <= d["peak"] <= d["budget"] and d["budget"] > 0
    assert rep["devices"][0]["peak"] > 0
    assert rep["device_peak"] == rep["devices"][0]["peak"]
    assert rep["device_budget"] == rep["devices"][0]["budget"]


def test_input_never_modified(spd, rhs):
    a, b = spd.copy(), rhs.copy()
    oocsolve.solve(a, b, **SMALL)
    oocsolve.cho_factor(a, **SMALL)
    oocsolve.matmul(a, b, b, beta=2.0, **SMALL)
    assert np.array_equal(a, spd) and np.array_equal(b, rhs)


# ---- the functions -------------------------------------------------------------------------

def test_solve(spd, rhs, tmp_path):
    x = oocsolve.solve(spd, rhs, **SMALL)
    assert x.shape == rhs.shape and solve_ratio(spd, x, rhs, EPS64) < 16
    x1 = oocsolve.solve(spd, rhs[:, 0], **SMALL)  # 1-D b: 1-D x
    assert x1.shape == (spd.shape[0],) and solve_ratio(spd, x1, rhs[:, 0], EPS64) < 16
    xf = oocsolve.solve(spd, list(rhs[:, 1]), **SMALL)
    assert np.allclose(xf, x[:, 1])


def test_cho_factor_solve(spd, rhs):
    L, lower = oocsolve.cho_factor(spd, **SMALL)
    assert lower is True
    assert np.allclose(np.triu(L, 1), 0)
    assert np.abs(L @ L.T - spd).max() <= 1e-12 * np.abs(spd).max()
    x = oocsolve.cho_solve((L, lower), rhs, **SMALL)
    assert solve_ratio(spd, x, rhs, EPS64) < 16
    with pytest.raises(ValueError, match="lower=True"):
        oocsolve.cho_solve((L, False), rhs)


def test_logdet(spd):
    ld = oocsolve.logdet(spd, **SMALL)
    sign, ref = np.linalg.slogdet(spd)
    assert sign > 0 and abs(ld - ref) <= 1e-10 * abs(ref)


def test_matmul(gen, rhs):
    a = gen[:, :100]
    b = rhs[:100, :]
    c = np.ones((gen.shape[0], 5))
    r = oocsolve.matmul(a, b, c, alpha=2.0, beta=-0.5, **SMALL)
    assert np.abs(r - (2 * a @ b - 0.5 * c)).max() <= 1e-12 * np.abs(r).max()
    assert np.allclose(oocsolve.matmul(a, b, **SMALL), a @ b)


def test_lstsq(tmp_path):
    """Least squares (issue 24) against numpy.linalg.lstsq: arrays in, x out, the state file."""
    import h5py
    rng = np.random.default_rng(24)
    a = rng.standard_normal((500, 20))
    b = rng.standard_normal((500, 3))
    x = oocsolve.lstsq(a, b, state=tmp_path / "s.qr.h5", **SMALL)
    ref = np.linalg.lstsq(a, b, rcond=None)[0]
    assert x.shape == (20, 3) and np.abs(x - ref).max() <= 1e-12 * np.abs(ref).max()
    with h5py.File(tmp_path / "s.qr.h5", "r") as f:
        assert np.allclose(f["x"][()], x)
        assert np.allclose(f["residual_norms"][()], np.linalg.norm(b - a @ ref, axis=0))
        assert f["R"].attrs["rows"] == 500
    x1 = oocsolve.lstsq(np.asfortranarray(a), b[:, 0], **SMALL)  # 1-D b: 1-D x
    assert x1.shape == (20,) and np.allclose(x1, ref[:, 0])
    dep = a.copy()
    dep[:, 5] = dep[:, 1] + dep[:, 2]
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.lstsq(dep, b, **SMALL)
    assert "rank deficient" in str(e.value)


# ---- outputs -------------------------------------------------------------------------------

def test_outputs(gen, tmp_path):
    import h5py
    ref = np.linalg.inv(gen)
    n = gen.shape[0]
    for order in "CF":  # an array written in place, either layout
        buf = np.zeros((n, n), order=order)
        assert oocsolve.inv(gen, out=buf, **SMALL) is buf
        assert np.allclose(buf, ref)
    buf32 = np.zeros((n, n), dtype=np.float32)
    oocsolve.inv(gen, out=buf32, **SMALL)
    assert inv_ratio(gen, buf32, EPS32) < 30
    spec = f"{tmp_path / 'x.h5'}:/X"  # a file
    assert oocsolve.inv(gen, out=spec, **SMALL) == spec
    with h5py.File(tmp_path / "x.h5", "r") as f:
        assert np.allclose(f["X"][...], ref)
        assert f["X"].attrs["method"] == "gj"
    got = np.full((n, n), np.nan)  # a function receiving verified blocks
    blocks = []

    def take(r0, c0, block):
        blocks.append(block.shape)
        got[r0:r0 + block.shape[0], c0:c0 + block.shape[1]] = block
    assert oocsolve.inv(gen, out=take, **SMALL) is None
    assert np.allclose(got, ref) and len(blocks) == 16  # 110 = 4 tiles of 32 per side
    with pytest.raises(ValueError, match="the result is 110 x 110"):
        oocsolve.inv(gen, out=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="float32 or float64"):
        oocsolve.inv(gen, out=np.zeros((n, n), dtype=np.int32))


def test_memmap_in_and_out(gen, tmp_path):
    """numpy.memmap arrays are arrays: read and written in place (the OS pages them)."""
    n = gen.shape[0]
    a = np.memmap(tmp_path / "a.bin", dtype=np.float64, mode="w+", shape=(n, n), order="F")
    a[:] = gen
    a.flush()
    a_ro = np.memmap(tmp_path / "a.bin", dtype=np.float64, mode="r", shape=(n, n), order="F")
    x = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=(n, n), order="C")
    assert oocsolve.inv(a_ro, out=x, **SMALL) is x
    assert inv_ratio(gen, np.asarray(x), EPS64) < 30


def test_big_file_path_round_trip(spd, tmp_path):
    """File in, file out: the path the library takes for matrices larger than memory."""
    import h5py
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f["A"] = spd
    out = f"{tmp_path / 'l.h5'}:/L"
    oocsolve.cho_factor(f"{tmp_path / 'a.h5'}:/A", out=out, host_mem="256K", **SMALL)
    L, _ = oocsolve.cho_factor(spd, **SMALL)
    with h5py.File(tmp_path / "l.h5", "r") as f:
        assert np.allclose(f["L"][...], L)


# ---- options, errors, progress -------------------------------------------------------------

def test_options_checked_by_the_library(gen):
    with pytest.raises(TypeError, match="unknown option 'tiles'"):
        oocsolve.inv(gen, tiles=3)
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.inv(gen, tile=-5)
    assert e.value.status_name == "OOC_ERR_ARG" and e.value.exit_code == 2
    assert "option tile: -5 is outside" in e.value.message
    with pytest.raises(oocsolve.OocError, match="'qr' is not one of auto, gj, chol"):
        oocsolve.inv(gen, method="qr")
    with pytest.raises(oocsolve.OocError, match="not a size"):
        oocsolve.inv(gen, host_mem="lots")
    rep = {}
    # 55 covers n = 110 evenly, so the planner runs the tile as given (plan_tile)
    oocsolve.inv(gen, method="gj", check="probe", tile=55, device="cpu", report=rep)
    assert rep["tile"] == 55 and rep["check"] == "probe"


def test_errors_carry_status(spd):
    sing = np.ones((40, 40))
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.inv(sing, method="gj", **SMALL)
    err = e.value
    assert err.status_name == "OOC_ERR_SINGULAR" and err.exit_code == 4
    assert err.report["info"] > 0 and "singular" in err.message
    notspd = -spd
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.cho_factor(notspd, **SMALL)
    assert e.value.status_name == "OOC_ERR_NOT_SPD" and e.value.report["info"] == 1
    bad = spd.copy()
    bad[3, 4] = np.nan
    with pytest.raises(oocsolve.OocError, match=r"element \[3, 4\] is NaN") as e:
        oocsolve.inv(bad, **SMALL)
    assert e.value.exit_code == 3


def test_callback_exception_is_the_cause(gen):
    def broken(r0, r1, c0, c1):
        raise RuntimeError("no data there")
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.inv(oocsolve.TileSource(gen.shape, broken, "broken source"), **SMALL)
    assert e.value.status_name == "OOC_ERR_IO" and "broken source" in e.value.message
    assert isinstance(e.value.__cause__, RuntimeError)


def test_progress_and_stop(gen):
    seen = []
    oocsolve.inv(gen, progress=lambda ph, f: seen.append((ph, f)), **SMALL)
    phases = {p for p, _ in seen}
    assert {"read", "eliminate", "write"} <= phases
    assert all(0.0 <= f <= 1.0 for _, f in seen)
    with pytest.raises(oocsolve.OocError) as e:
        oocsolve.inv(gen, progress=lambda ph, f: ph == "eliminate", **SMALL)
    assert e.value.status_name == "OOC_ERR_INTERRUPTED" and e.value.exit_code == 130

    def ctrl_c(ph, f):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        oocsolve.inv(gen, progress=ctrl_c, **SMALL)


def test_ctrl_c_finishes_the_step(gen, tmp_path):
    """A first Ctrl-C (KeyboardInterrupt out of the progress function) in a journaled run, a
    file output out of core: the step is finished and checkpointed before KeyboardInterrupt is
    raised, and resume=True continues from it to the uninterrupted run's bits. A second Ctrl-C
    stops at once (nothing kept)."""
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f["A"] = gen
    src, out, ref = (f"{tmp_path / 'a.h5'}:/A", f"{tmp_path / 'x.h5'}:/X",
                     f"{tmp_path / 'r.h5'}:/X")
    opts = dict(SMALL, method="gj", stripe=64, host_mem="256K", scratch=str(tmp_path))
    oocsolve.inv(src, out=ref, **opts)

    def ctrl_c(times, at):  # Ctrl-C `times` times, at the first ticks of elimination past `at`
        hits = []

        def fn(ph, f):
            if ph == "eliminate" and f >= at and len(hits) < times:
                hits.append(f)
                raise KeyboardInterrupt
        return fn
    with pytest.raises(KeyboardInterrupt):
        oocsolve.inv(src, out=out, progress=ctrl_c(1, 0.3), **opts)
    assert not os.path.exists(tmp_path / "x.h5")
    assert [p for p in os.listdir(tmp_path) if p.endswith(".journal")]
    rep = {}
    oocsolve.inv(src, out=out, resume=True, report=rep, **opts)
    assert rep["resumed_step"] >= 1
    with h5py.File(tmp_path / "x.h5", "r") as fx, h5py.File(tmp_path / "r.h5", "r") as fr:
        assert np.array_equal(fx["X"][...], fr["X"][...])
    os.remove(tmp_path / "x.h5")
    with pytest.raises(KeyboardInterrupt):
        oocsolve.inv(src, out=out, progress=ctrl_c(2, 0.0), **opts)
    assert not [p for p in os.listdir(tmp_path) if ".oocsolve-" in p]


def test_tqdm_bar(gen, capsys):
    pytest.importorskip("tqdm")
    x = oocsolve.inv(gen, progress=True, **SMALL)
    assert inv_ratio(gen, x, EPS64) < 30
    assert "eliminate" in capsys.readouterr().err


# ---- the README's quick start --------------------------------------------------------------

def test_readme_quick_start(tmp_path, monkeypatch):
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    text = open(readme).read()
    m = re.search(r"### Python\n.*?```python\n(.*?)```", text, re.S)
    assert m, "README.md has no Python quick start"
    monkeypatch.chdir(tmp_path)
    exec(compile(m.group(1), "README.md", "exec"), {})
