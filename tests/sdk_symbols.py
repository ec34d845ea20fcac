#!/usr/bin/env python3
"""sdk_symbols.py: what the built libraries export and need (issue 25's SDK bullet).

    python3 tests/sdk_symbols.py <build_dir> <source_dir>

Checks:
  (a) liboocsolve.so exports exactly the functions include/oocsolve.h marks OOC_API: every
      `nm -D --defined-only` symbol is one of them (hidden visibility keeps the internals in),
      and every OOC_API function is exported;
  (b) the core links no CUDA library: no NEEDED libcudart/libcublas/libcusolver/libcuda in
      liboocsolve.so, nor in the programs oocsolve, oocgen and oocbench (one build runs on
      CPU-only nodes);
  (c) when the build made the plugin liboocsolve_cuda.so: it exports only its entry,
      ooc_cuda_plugin_v1 (src/exec/plugin.h), and it is the one that needs cudart, cuBLAS and
      cuSOLVER; likewise oocbench's GPU peers, liboocbench_cuda.so (oocbench_cuda_v1).
Exits 77 when nm or readelf is missing.
"""
import os
import re
import shutil
import subprocess
import sys

build, src = sys.argv[1], sys.argv[2]
for tool in ("nm", "readelf"):
    if not shutil.which(tool):
        print(f"SKIP: {tool} not found")
        sys.exit(77)

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    return {l.split()[-1] for l in out.splitlines() if len(l.split()) >= 3}


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


header = open(os.path.join(src, "include", "oocsolve.h")).read()
api = set(re.findall(r"OOC_API\b[^;{]*?\b(ooc_\w+)\s*\(", header))
check(len(api) > 10, f"include/oocsolve.h declares {len(api)} OOC_API functions")

lib = os.path.join(build, "liboocsolve.so")
syms = exported(lib)
extra = sorted(syms - api)
missing = sorted(api - syms)
print(f"liboocsolve.so exports {len(syms)} symbols")
check(not extra, f"liboocsolve.so exports nothing beyond the OOC_API functions (extra: {extra[:20]})")
check(not missing, f"liboocsolve.so exports every OOC_API function (missing: {missing})")

cuda = re.compile(r"^lib(cudart|cublas|cublasLt|cusolver|cuda)\.so")
for name in ("liboocsolve.so", "oocsolve", "oocgen", "oocbench"):
    path = os.path.join(build, name)
    if not os.path.exists(path):
        check(False, f"{name} exists in {build}")
        continue
    bad = [n for n in needed(path) if cuda.match(n)]
    check(not bad, f"{name} needs no CUDA library (NEEDED: {bad})")

for module, entry in (("liboocsolve_cuda.so", "ooc_cuda_plugin_v1"),
                      ("liboocbench_cuda.so", "oocbench_cuda_v1")):
    path = os.path.join(build, module)
    if not os.path.exists(path):
        print(f"note: no {module} in this build (no CUDA toolkit): (c) not applicable")
        continue
    psyms = exported(path)
    check(psyms == {entry}, f"{module} exports only {entry} ({sorted(psyms)[:10]})")
    pn = needed(path)
    for lib_ in ("libcudart", "libcublas", "libcusolver"):
        check(any(n.startswith(lib_ + ".so") for n in pn), f"{module} needs {lib_}")

sys.exit(1 if failures else 0)
