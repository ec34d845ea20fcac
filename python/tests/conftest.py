"""Finds the package in python/ and the library in the build tree when they are not installed:
OOCSOLVE_LIBRARY (set by ctest) or build/liboocsolve.so beside python/."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
if "OOCSOLVE_LIBRARY" not in os.environ:
    cand = os.path.join(ROOT, "build", "liboocsolve.so")
    if os.path.exists(cand):
        os.environ["OOCSOLVE_LIBRARY"] = cand
