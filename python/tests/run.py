"""ctest's entry for the Python bindings: pytest over python/tests and the package's doctests.
Exit 77 (ctest: skipped) when numpy or pytest is missing, except under CI=true, where .ci/run
installs them and their absence is a failure."""
import os
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    if __name__ == "__main__":
        print(f"python bindings: {e}", file=sys.stderr)
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    raise

if __name__ == "__main__":  # --doctest-modules imports this file too
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.join(os.path.dirname(here), "oocsolve")
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--doctest-modules", here, pkg]))
