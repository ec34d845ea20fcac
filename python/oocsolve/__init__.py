"""oocsolve: dense inverse, solve, Cholesky, log-determinant and product out of core.

Python bindings (ctypes) to liboocsolve. Every function takes its matrices as

* numpy arrays (float64 or float32, C or Fortran order: read in place, never copied or modified;
  other dtypes and non-unit-stride arrays are converted first),
* h5py datasets (a file opened read-only is read by the library itself; otherwise the dataset is
  read through h5py a tile at a time),
* xarray DataArrays (numpy-backed: in place; dask-backed: computed a tile at a time),
* file paths ``"file.h5:/dataset"`` (the library reads the file: matrices larger than memory),
* :class:`TileSource` objects (a function that fills any requested block: a covariance made
  from coordinates on the fly, never stored),

and returns numpy arrays, or writes the result where ``out=`` says: a numpy array (written in
place), a file path (written, checked and renamed into place by the library) or a function
receiving the verified result block by block.

Options are keyword arguments named after the CLI's long options (``tile=2048``,
``host_mem="8G"``, ``method="chol"``, ``device="cpu"``, ``check="full"``, ...: docs/CLI.md);
the library checks them and :class:`OocError` says what is wrong. ``progress=True`` shows a tqdm
bar (when tqdm is installed), ``progress=fn`` calls ``fn(phase, fraction)`` (return True to stop);
``report={}`` is filled with the run's report (times, bytes, residual, method, ...).
Ctrl-C raises KeyboardInterrupt: a run writing a file, journaled as the CLI's are, first finishes
the step it is in and checkpoints it (the same call with ``resume=True`` continues from there);
a second Ctrl-C, or a run into an array, stops at once.

Failures raise :class:`OocError` carrying the status name, the CLI's exit code and the message.
"""
import ctypes
import json
import os

import numpy as np

from ._lib import ABI_VERSION, FILL_FN, PROGRESS_FN, TAKE_FN, lib

__all__ = ["inv", "solve", "cho_factor", "cho_solve", "logdet", "matmul", "lstsq", "TileSource",
           "OocError", "version", "build_info", "blas_advice", "ABI_VERSION", "option_names"]

OOC_OK = 0
OOC_ERR_ARG = 1
OOC_ERR_IO = 4
OOC_ERR_INTERRUPTED = 15
_F32, _F64 = 1, 2  # ooc_dtype_t
_COL, _ROW = 0, 1  # ooc_layout_t


def version():
    """The library's version string ("0.1.0")."""
    return lib.ooc_version().decode()


def build_info():
    """How the loaded library was built (CUDA, HDF5, zstd, BLAS versions), one line."""
    return lib.ooc_build_info().decode()


def blas_advice():
    """None, or (chosen, better) when OpenBLAS runs its generic `chosen` kernels on a CPU that
    runs `better` (4.5x faster host products on some GPU hosts' VMs). OpenBLAS reads
    OPENBLAS_CORETYPE only when it loads: start Python with OPENBLAS_CORETYPE=<better> set."""
    import ctypes
    chosen, better = ctypes.create_string_buffer(64), ctypes.create_string_buffer(32)
    if not lib.ooc_blas_advice(chosen, 64, better, 32):
        return None
    return chosen.value.decode(), better.value.decode()


def option_names():
    """The option keywords the library knows (the CLI's long options, '_' for '-')."""
    return [lib.ooc_param_name(k).decode() for k in range(1, lib.ooc_param_count() + 1)]


class OocError(Exception):
    """A failed oocsolve call.

    Attributes: ``status`` (the C status code), ``status_name`` ("OOC_ERR_SINGULAR"),
    ``exit_code`` (the CLI's exit code for it: docs/CLI.md), ``message`` (what, where, why) and
    ``report`` (the run's report as a dict, or None).
    """

    def __init__(self, status, message, report=None):
        self.status = int(status)
        self.status_name = lib.ooc_status_str(self.status).decode()
        self.exit_code = lib.ooc_status_exit_code(self.status)
        self.message = message
        self.report = report
        super().__init__(f"{message} ({self.status_name}, exit code {self.exit_code})")


class TileSource:
    """A matrix given by a function: ``fn(r0, r1, c0, c1)`` returns the block of rows r0..r1-1 and
    columns c0..c1-1 (anything numpy turns into an (r1-r0) x (c1-c0) float array). The library
    asks for blocks in any order, some more than once (the residual check reads the input
    again), so fn must be a pure function of its arguments."""

    def __init__(self, shape, fn, name=None):
        if len(shape) != 2 or shape[0] <= 0 or shape[1] <= 0:
            raise ValueError(f"TileSource: shape {shape!r} is not (rows, cols) with both > 0")
        self.shape = (int(shape[0]), int(shape[1]))
        self.fn = fn
        self.name = name or "TileSource"


# ---- one call's resources ------------------------------------------------------------------

class _Call:
    """Context, options, report, handles, callbacks and buffers of one library call; frees them
    all on exit, and keeps the first Python exception a callback raised."""

    def __init__(self, options, progress):
        self.ctx = ctypes.c_void_p()
        st = lib.ooc_ctx_create(ctypes.byref(self.ctx))
        if st != OOC_OK:
            raise OocError(st, "cannot create a context")
        self.handles, self.keep, self.exc, self.progress = [], [], None, None
        self.opts = ctypes.c_void_p()
        self.report = lib.ooc_report_create()
        lib.ooc_opts_create(ctypes.byref(self.opts))
        self.out_type = "auto"
        try:
            for k, v in options.items():
                self._set(k, v)
        except BaseException:
            self.close()
            raise
        self.progress = _tqdm_progress() if progress is True else progress
        self._pfn = PROGRESS_FN(self._on_progress)  # always: Ctrl-C stops the call
        lib.ooc_ctx_set_progress(self.ctx, self._pfn, None)

    def _set(self, key, v):
        p = lib.ooc_param_lookup(key.encode())
        if p == 0:
            raise TypeError(f"unknown option {key!r}; options are: {', '.join(option_names())}")
        if v is None:
            return
        if key == "out_type":  # the dtype of the array a function allocates for its result
            self.out_type = {"0": "auto", "1": "f32", "2": "f64"}.get(str(v), str(v))
        if isinstance(v, (bool, np.bool_)):
            st = lib.ooc_opts_set_int(self.opts, p, int(v))
        elif isinstance(v, (int, np.integer)):
            st = lib.ooc_opts_set_int(self.opts, p, int(v))
        elif isinstance(v, (float, np.floating)):
            st = lib.ooc_opts_set_double(self.opts, p, float(v))
        elif isinstance(v, (str, os.PathLike)):
            st = lib.ooc_opts_set_str(self.opts, p, os.fspath(v).encode())
        else:
            raise TypeError(f"option {key}: {type(v).__name__} is not an int, float, bool or str")
        if st != OOC_OK:
            raise OocError(st, lib.ooc_opts_error(self.opts).decode())

    def f32(self, inputs_f32):
        """Whether a result array the bindings allocate is float32 (the library's rule)."""
        return self.out_type == "f32" or (self.out_type == "auto" and inputs_f32)

    def _on_progress(self, _user, phase, fraction):
        try:
            if self.progress is not None and self.progress(phase.decode(), fraction):
                return 1
        except KeyboardInterrupt as e:
            # a first Ctrl-C: a journaled run (a file output) finishes its step, checkpoints it
            # and stops (``resume=True`` continues from there); a second one, or any other run:
            # at once. Either way KeyboardInterrupt is raised once the call has returned.
            first = self.exc is None
            self.exc = self.exc or e
            return 0 if first and lib.ooc_ctx_request_stop(self.ctx) else 1
        except BaseException as e:  # stop the call, re-raise after
            self.exc = self.exc or e
            return 1
        return 0

    def check(self, st, what="call"):
        if st == OOC_OK:
            return
        msg = lib.ooc_ctx_error(self.ctx).decode(errors="replace")
        err = OocError(st, msg or f"{what} failed", self.report_dict(st, msg))
        if self.exc is not None:
            if isinstance(self.exc, (KeyboardInterrupt, SystemExit)):
                raise self.exc
            raise err from self.exc
        raise err

    def report_dict(self, st=OOC_OK, msg=""):
        need = lib.ooc_report_json_str(self.report, st, msg.encode(), None, 0)
        buf = ctypes.create_string_buffer(need + 1)
        lib.ooc_report_json_str(self.report, st, msg.encode(), buf, need + 1)
        return json.loads(buf.value.decode(errors="replace"))

    def handle(self, h):
        self.handles.append(h)
        return h

    def close(self):
        for h in self.handles:
            lib.ooc_matrix_destroy(h)
        self.handles = []
        if self.report:
            lib.ooc_report_destroy(self.report)
            self.report = None
        if self.opts:
            lib.ooc_opts_destroy(self.opts)
            self.opts = ctypes.c_void_p()
        if self.ctx:
            lib.ooc_ctx_destroy(self.ctx)
            self.ctx = ctypes.c_void_p()
        if self.progress is not None and hasattr(self.progress, "close"):
            self.progress.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _tqdm_progress():
    """A progress function drawing one tqdm bar per phase (nothing when tqdm is missing)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None

    class Bars:
        def __init__(self):
            self.phase, self.bar = None, None

        def __call__(self, phase, fraction):
            if phase != self.phase:
                self.close()
                self.phase = phase
                self.bar = tqdm(total=1000, desc=phase, unit="‰", leave=False)
            self.bar.n = int(round(1000 * min(max(fraction, 0.0), 1.0)))
            self.bar.refresh()
            return False

        def close(self):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return Bars()


# ---- inputs ----------------------------------------------------------------------------------

def _is_h5py_dataset(x):
    return type(x).__module__.startswith("h5py") and hasattr(x, "file") and hasattr(x, "name")


def _is_xarray(x):
    return type(x).__module__.startswith("xarray") and hasattr(x, "dims")


def _fill_from(call, name, getter):
    """A fill callback around getter(r0, r1, c0, c1) -> block; exceptions end the call."""

    def fill(_user, r0, c0, nr, nc, dst, ld):
        try:
            block = np.asarray(getter(r0, r0 + nr, c0, c0 + nc), dtype=np.float64)
            if block.ndim == 1:
                block = block.reshape(nr, nc)
            if block.shape != (nr, nc):
                raise ValueError(f"{name}: asked for a {nr} x {nc} block at ({r0}, {c0}), got "
                                 f"shape {block.shape}")
            view = np.ctypeslib.as_array(dst, shape=(nc, ld)).T
            view[:nr, :] = block
            return 0
        except BaseException as e:
            call.exc = call.exc or e
            return 1

    return FILL_FN(fill)


def _callback_input(call, shape, getter, name):
    fn = _fill_from(call, name, getter)
    call.keep.append(fn)
    h = ctypes.c_void_p()
    call.check(lib.ooc_matrix_callback(call.ctx, shape[0], shape[1], fn, TAKE_FN(), None,
                                       ctypes.byref(h)), name)
    call.handle(h)
    lib.ooc_matrix_set_name(h, name.encode())
    return h, shape, False


def _array_handle(call, a, name, writable=False):
    """A handle on a 2-D float32/float64 array in place (no copy), or None if its strides do not
    allow that."""
    if a.dtype not in (np.float32, np.float64) or not a.dtype.isnative or a.ndim != 2:
        return None
    es = a.itemsize
    r, c = a.shape
    s0, s1 = a.strides
    if a.flags.f_contiguous:
        layout, ld = _COL, r
    elif a.flags.c_contiguous:
        layout, ld = _ROW, c
    elif s0 == es and s1 > 0 and s1 % es == 0 and s1 // es >= r:
        layout, ld = _COL, s1 // es
    elif s1 == es and s0 > 0 and s0 % es == 0 and s0 // es >= c:
        layout, ld = _ROW, s0 // es
    else:
        return None
    h = ctypes.c_void_p()
    call.check(lib.ooc_matrix_array(call.ctx, ctypes.c_void_p(a.ctypes.data),
                                    _F32 if a.dtype == np.float32 else _F64, r, c, ld, layout,
                                    ctypes.byref(h)), name)
    call.handle(h)
    call.keep.append(a)
    lib.ooc_matrix_set_name(h, name.encode())
    return h


def _input(call, x, name):
    """(handle, shape, is_f32) for anything the functions accept as a matrix."""
    if isinstance(x, TileSource):
        return _callback_input(call, x.shape, x.fn, x.name)
    if isinstance(x, (str, os.PathLike)):
        spec = os.fspath(x)
        h = ctypes.c_void_p()
        call.check(lib.ooc_matrix_file(call.ctx, spec.encode(), ctypes.byref(h)), name)
        call.handle(h)
        rows, cols = ctypes.c_int64(), ctypes.c_int64()
        call.check(lib.ooc_matrix_shape(call.ctx, h, ctypes.byref(rows), ctypes.byref(cols)))
        return h, (rows.value, cols.value), False
    if _is_h5py_dataset(x):
        shape = tuple(x.shape) if len(x.shape) == 2 else (x.shape[0], 1)
        if x.file.mode == "r":  # the library reads the file itself, as fast as the CLI
            return _input(call, f"{x.file.filename}:{x.name}", name)
        if len(x.shape) == 1:
            return _callback_input(call, shape, lambda r0, r1, c0, c1: x[r0:r1][:, None],
                                   f"{x.file.filename}:{x.name}")
        return _callback_input(call, shape, lambda r0, r1, c0, c1: x[r0:r1, c0:c1],
                               f"{x.file.filename}:{x.name}")
    if _is_xarray(x):
        label = f"DataArray {x.name!r}" if x.name is not None else "DataArray"
        # in memory and numpy: in place; lazy (a file opened by xarray, dask): a block at a time
        if getattr(x.variable, "_in_memory", False) and isinstance(x.data, np.ndarray):
            return _input(call, x.data, label)
        shape = tuple(x.shape) if x.ndim == 2 else (x.shape[0], 1)
        if x.ndim == 1:
            return _callback_input(call, shape,
                                   lambda r0, r1, c0, c1: x[r0:r1].values[:, None], label)
        return _callback_input(call, shape, lambda r0, r1, c0, c1: x[r0:r1, c0:c1].values, label)
    a = np.asarray(x)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"{name}: a matrix must be 1-D or 2-D, got shape {a.shape}")
    h = _array_handle(call, a, name)
    if h is None:  # another dtype, byte order or stride: one converted copy
        a = np.asfortranarray(a, dtype=np.float32 if a.dtype == np.float32 else np.float64)
        h = _array_handle(call, a, name)
    return h, a.shape, a.dtype == np.float32


# ---- outputs ---------------------------------------------------------------------------------

def _output(call, out, shape, f32, name="out"):
    """(handle, result): result is what the function returns."""
    h = ctypes.c_void_p()
    if out is None:
        res = np.empty(shape, dtype=np.float32 if f32 else np.float64, order="F")
        return _array_handle(call, res, name, writable=True), res
    if isinstance(out, (str, os.PathLike)):
        spec = os.fspath(out)
        call.check(lib.ooc_matrix_file(call.ctx, spec.encode(), ctypes.byref(h)), name)
        return call.handle(h), spec
    if isinstance(out, np.ndarray):
        o2 = out.reshape(-1, 1) if out.ndim == 1 else out
        if o2.shape != tuple(shape):
            raise ValueError(f"{name}: shape {out.shape}; the result is {shape[0]} x {shape[1]}")
        if not out.flags.writeable:
            raise ValueError(f"{name}: the array is read-only")
        hh = _array_handle(call, o2, name, writable=True)
        if hh is None:
            raise ValueError(f"{name}: must be float32 or float64 with unit stride along one axis "
                             f"(got {out.dtype}, strides {out.strides})")
        return hh, out
    if callable(out):
        def take(_user, r0, c0, nr, nc, src, ld):
            try:
                block = np.ctypeslib.as_array(src, shape=(nc, ld)).T[:nr, :].copy()
                out(r0, c0, block)
                return 0
            except BaseException as e:
                call.exc = call.exc or e
                return 1

        fn = TAKE_FN(take)
        call.keep.append(fn)
        call.check(lib.ooc_matrix_callback(call.ctx, shape[0], shape[1], FILL_FN(), fn, None,
                                           ctypes.byref(h)), name)
        return call.handle(h), None
    raise TypeError(f"{name}: {type(out).__name__} is not None, a numpy array, a file path or a "
                    "function(r0, c0, block)")


def _finish(call, report):
    if report is not None:
        report.update(call.report_dict())


# ---- the functions ---------------------------------------------------------------------------

def inv(a, out=None, *, progress=None, report=None, **options):
    """Inverse of the square matrix ``a``.

    Returns a numpy array (``out=None``: a new Fortran-order array, float32 when ``a`` is a
    float32 array, else float64), ``out`` itself when it is an array (written in place), or the
    file spec when ``out`` is a path ``"inv.h5:/inverse"``. The result passed the library's
    residual check (``check=``, docs/NUMERICS.md) or OocError is raised.

    >>> import numpy as np, oocsolve
    >>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> np.allclose(oocsolve.inv(a) @ a, np.eye(2))
    True
    """
    with _Call(options, progress) as call:
        ha, shape, f32 = _input(call, a, "a")
        hx, res = _output(call, out, shape, call.f32(f32))
        call.check(lib.ooc_invert_m(call.ctx, ha, hx, call.opts, call.report))
        _finish(call, report)
        return res


def solve(a, b, out=None, *, progress=None, report=None, **options):
    """X = A^-1 B for a square ``a`` and ``b`` with any number of columns (1-D ``b``: 1-D X).

    >>> import numpy as np, oocsolve
    >>> oocsolve.solve(np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([2.0, 2.0]))
    array([1. , 0.5])
    """
    with _Call(options, progress) as call:
        ha, sa, fa = _input(call, a, "a")
        hb, sb, fb = _input(call, b, "b")
        hx, res = _output(call, out, (sa[0], sb[1]), call.f32(fa and fb))
        call.check(lib.ooc_solve_m(call.ctx, ha, hb, hx, call.opts, call.report))
        _finish(call, report)
        return _shape_like_b(res, b, out)


def _shape_like_b(res, b, out):
    if out is None and isinstance(res, np.ndarray) and np.ndim(b) == 1 and \
            not isinstance(b, (str, os.PathLike)):
        return res.reshape(-1)
    return res


def cho_factor(a, out=None, *, progress=None, report=None, **options):
    """Cholesky factor of a symmetric positive definite ``a``: returns ``(L, True)`` with L lower
    triangular (zeros above), A = L L^T, like ``scipy.linalg.cho_factor(a, lower=True)``. L is a
    numpy array, ``out`` (an array written in place) or the file spec ``out`` names. Not SPD:
    OocError with status_name "OOC_ERR_NOT_SPD" and report["info"] the failing leading minor.

    >>> import numpy as np, oocsolve
    >>> L, lower = oocsolve.cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]]))
    >>> L
    array([[2., 0.],
           [1., 2.]])
    """
    with _Call(options, progress) as call:
        ha, shape, f32 = _input(call, a, "a")
        hx, res = _output(call, out, shape, call.f32(f32))
        call.check(lib.ooc_factor_m(call.ctx, ha, hx, call.opts, call.report))
        _finish(call, report)
        return res, True


def cho_solve(c_and_lower, b, out=None, *, progress=None, report=None, **options):
    """X = A^-1 B from ``(L, lower)`` as :func:`cho_factor` returns it (L: an array or a file
    spec; only its lower triangle is read; lower must be True).

    >>> import numpy as np, oocsolve
    >>> a = np.array([[4.0, 2.0], [2.0, 5.0]])
    >>> np.allclose(oocsolve.cho_solve(oocsolve.cho_factor(a), [1.0, 2.0]),
    ...             np.linalg.solve(a, [1.0, 2.0]))
    True
    """
    L, lower = c_and_lower
    if not lower:
        raise ValueError("cho_solve: oocsolve's factors are lower triangular (lower=True)")
    with _Call(options, progress) as call:
        hl, sl, fl = _input(call, L, "L")
        hb, sb, fb = _input(call, b, "b")
        hx, res = _output(call, out, (sl[0], sb[1]), call.f32(fl and fb))
        call.check(lib.ooc_solve_factor_m(call.ctx, hl, hb, hx, call.opts, call.report))
        _finish(call, report)
        return _shape_like_b(res, b, out)


def logdet(a, *, progress=None, report=None, **options):
    """log det A of a symmetric positive definite ``a`` (an out-of-core Cholesky factorization;
    nothing is written).

    >>> import numpy as np, oocsolve
    >>> bool(abs(oocsolve.logdet(np.diag([2.0, 8.0])) - np.log(16.0)) < 1e-12)
    True
    """
    with _Call(options, progress) as call:
        ha, _, _ = _input(call, a, "a")
        ld = ctypes.c_double()
        call.check(lib.ooc_logdet_m(call.ctx, ha, call.opts, call.report, ctypes.byref(ld)))
        _finish(call, report)
        return ld.value


def matmul(a, b, c=None, *, alpha=1.0, beta=0.0, out=None, progress=None, report=None,
           **options):
    """alpha A B + beta C out of core (c None: alpha A B), probe-checked.

    >>> import numpy as np, oocsolve
    >>> oocsolve.matmul(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]), alpha=2.0)
    array([[2., 4.],
           [6., 8.]])
    """
    with _Call(options, progress) as call:
        ha, sa, fa = _input(call, a, "a")
        hb, sb, fb = _input(call, b, "b")
        hc, fc = None, True
        if c is not None:
            hc, _, fc = _input(call, c, "c")
        hx, res = _output(call, out, (sa[0], sb[1]), call.f32(fa and fb and fc))
        call.check(lib.ooc_gemm_m(call.ctx, ha, hb, hc, hx, float(alpha), float(beta), call.opts,
                                  call.report))
        _finish(call, report)
        return _shape_like_b(res, b, out)


def lstsq(a, b, out=None, *, state=None, progress=None, report=None, **options):
    """Least squares: x minimising ||a x - b||_2 for a tall ``a`` (m x n, m >= n), by Householder
    QR out of core (rows streamed, Q never formed; 1-D ``b``: 1-D x).

    ``state="A.qr.h5"`` also writes the QR state file (R, d = Q^T b, residual norms, column map:
    docs/CLI.md "oocsolve lstsq"), which ``oocsolve lstsq --update`` extends with new rows, fewer
    columns or new columns (``--add-cols`` then needs ``--a``/``--b``: arrays are in no file). A rank-deficient ``a`` raises OocError (OOC_ERR_SINGULAR). Returns a float64
    array (``out=None``), ``out`` itself (an array written in place) or its file spec.

    >>> import numpy as np, oocsolve
    >>> a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> np.allclose(oocsolve.lstsq(a, np.array([1.0, 1.0, 3.0])), [4 / 3, 4 / 3])
    True
    """
    with _Call(options, progress) as call:
        ha, sa, _ = _input(call, a, "a")
        hb, sb, _ = _input(call, b, "b")
        hx, res = _output(call, out, (sa[1], sb[1]), False)
        st = os.fspath(state).encode() if state is not None else None
        call.check(lib.ooc_lstsq_m(call.ctx, ha, hb, hx, st, call.opts, call.report))
        _finish(call, report)
        return _shape_like_b(res, b, out)
