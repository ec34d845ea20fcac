"""pyutil.py: what the python tests that drive the CLI share (interop_h5py, interop_lu,
interop_qr): a check that records its failures, a file's digest, and a CLI run that shows
its command and, when it fails, its output. Imported from the script's own folder."""
import hashlib
import subprocess

failures = []


def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(exe, *args):
    cmd = [exe, *args]
    print("  $ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        print(f"    exit {p.returncode}\n    stdout: {p.stdout.strip()}\n    stderr: {p.stderr.strip()}")
    return p
