"""Loading liboocsolve and declaring the stable ABI's functions (include/oocsolve.h).

Only the opaque part of the C API is used: options by parameter name, the report by field
name (or its JSON form), matrix handles, and the ``_m`` calls. No C struct is mirrored here, so a
library that adds options or report fields keeps working; a library whose ``ooc_abi_version()``
differs from ``ABI_VERSION`` is refused at load.
"""
import ctypes
import ctypes.util
import os

ABI_VERSION = 1  # the OOC_ABI_VERSION these bindings are written for

c_int64 = ctypes.c_int64
c_int = ctypes.c_int
c_double = ctypes.c_double
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
P_double = ctypes.POINTER(ctypes.c_double)

FILL_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int64, c_int64, c_int64, c_int64, P_double, c_int64)
TAKE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int64, c_int64, c_int64, c_int64, P_double, c_int64)
PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_char_p, c_double)

# name: (restype, argtypes)
_PROTOS = {
    "ooc_abi_version": (c_int, []),
    "ooc_version": (c_char_p, []),
    "ooc_build_info": (c_char_p, []),
    "ooc_blas_advice": (c_int, [c_char_p, c_size_t, c_char_p, c_size_t]),
    "ooc_status_str": (c_char_p, [c_int]),
    "ooc_status_exit_code": (c_int, [c_int]),
    "ooc_ctx_create": (c_int, [ctypes.POINTER(c_void_p)]),
    "ooc_ctx_destroy": (None, [c_void_p]),
    "ooc_ctx_error": (c_char_p, [c_void_p]),
    "ooc_ctx_set_progress": (None, [c_void_p, PROGRESS_FN, c_void_p]),
    "ooc_ctx_interrupt": (None, [c_void_p]),
    "ooc_ctx_request_stop": (c_int, [c_void_p]),
    "ooc_param_lookup": (c_int, [c_char_p]),
    "ooc_param_count": (c_int, []),
    "ooc_param_name": (c_char_p, [c_int]),
    "ooc_param_type": (c_int, [c_int]),
    "ooc_opts_create": (c_int, [ctypes.POINTER(c_void_p)]),
    "ooc_opts_destroy": (None, [c_void_p]),
    "ooc_opts_set_int": (c_int, [c_void_p, c_int, c_int64]),
    "ooc_opts_set_double": (c_int, [c_void_p, c_int, c_double]),
    "ooc_opts_set_str": (c_int, [c_void_p, c_int, c_char_p]),
    "ooc_opts_error": (c_char_p, [c_void_p]),
    "ooc_report_create": (c_void_p, []),
    "ooc_report_destroy": (None, [c_void_p]),
    "ooc_report_json_str": (c_size_t, [c_void_p, c_int, c_char_p, c_char_p, c_size_t]),
    "ooc_matrix_file": (c_int, [c_void_p, c_char_p, ctypes.POINTER(c_void_p)]),
    "ooc_matrix_array": (c_int, [c_void_p, c_void_p, c_int, c_int64, c_int64, c_int64, c_int,
                                 ctypes.POINTER(c_void_p)]),
    "ooc_matrix_callback": (c_int, [c_void_p, c_int64, c_int64, FILL_FN, TAKE_FN, c_void_p,
                                    ctypes.POINTER(c_void_p)]),
    "ooc_matrix_set_name": (c_int, [c_void_p, c_char_p]),
    "ooc_matrix_shape": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_int64),
                                 ctypes.POINTER(c_int64)]),
    "ooc_matrix_destroy": (None, [c_void_p]),
    "ooc_invert_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "ooc_solve_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "ooc_factor_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "ooc_solve_factor_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "ooc_logdet_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, P_double]),
    "ooc_gemm_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_double, c_double,
                           c_void_p, c_void_p]),
    "ooc_lstsq_m": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_char_p, c_void_p, c_void_p]),
}


def _candidates():
    env = os.environ.get("OOCSOLVE_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "liboocsolve.so")  # a wheel that bundles it
    found = ctypes.util.find_library("oocsolve")
    if found:
        yield found
    yield "liboocsolve.so"  # LD_LIBRARY_PATH, the loader's cache


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        if not hasattr(lib, "ooc_abi_version"):
            raise ImportError(f"{path} is liboocsolve without the stable ABI (ooc_abi_version "
                              "missing): install a newer liboocsolve")
        lib.ooc_abi_version.restype = c_int
        got = lib.ooc_abi_version()
        if got != ABI_VERSION:
            raise ImportError(f"{path} has ABI version {got}; these bindings need "
                              f"{ABI_VERSION}: install matching versions of liboocsolve and "
                              "the oocsolve package")
        for name, (res, args) in _PROTOS.items():
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args
        lib.path = path
        return lib
    raise ImportError("cannot load liboocsolve (set OOCSOLVE_LIBRARY to the path of "
                      "liboocsolve.so, or install it where the dynamic loader finds it): " +
                      "; ".join(errors))


lib = _load()
