#!/usr/bin/env bash
# Run a fixed set of `oocsolve lstsq` cases (a factorization, add-rows, remove-columns and
# add-columns updates of its state file, a 1-D b, refusals) with one binary, and print what
# they wrote (h5dump of every output, values to 17 digits) and their exit codes and messages.
# Two builds agree bit for bit when their prints are the same:
#   tools/lstsq_same.sh OLD/oocsolve /tmp/a > old.txt
#   tools/lstsq_same.sh build/oocsolve /tmp/b > new.txt; diff old.txt new.txt
# (Used for issue 18's move of lstsq onto job.c's pipeline, and of its plan into plan.c.)
set -u
bin=$(realpath "$1")
gen=$(dirname "$bin")/oocgen
dir=$2
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
"$gen" rhs --n 3000 --cols 12 --seed 1 --quiet A.h5
"$gen" rhs --n 3000 --cols 3 --seed 2 --quiet b.h5:/b
"$gen" rhs --n 3000 --cols 1 --seed 3 --quiet b1.h5:/b
"$gen" rhs --n 200 --cols 12 --seed 4 --quiet U.h5
"$gen" rhs --n 200 --cols 3 --seed 5 --quiet c.h5:/c
"$gen" rhs --n 3000 --cols 4 --seed 6 --quiet V.h5:/V
run() { # name, then the arguments of oocsolve lstsq
  local name=$1; shift
  "$bin" lstsq --device cpu --quiet "$@" >/dev/null 2>"$name.err"
  echo "== $name: exit $? $(sed 's/inode [0-9]*/inode N/' "$name.err" | tr '\n' ' ')"
}
dump() { for f in "$@"; do echo "-- $f"; h5dump -m %.17g "$f" | grep -v '^HDF5 "'; done; }
run lstsq --tile 100 A.h5 b.h5:/b
run lstsq1d --tile 64 --out S1d.h5 A.h5 b1.h5:/b
run addrows --update A.qr.h5 --add-rows U.h5 c.h5:/c --out S2.h5
run rmcols --update A.qr.h5 --remove-cols 3:7 --out S3.h5
run addcols --update A.qr.h5 --add-cols V.h5:/V --out S4.h5
run rmaddcols --update S3.h5 --add-cols V.h5:/V --tile 500 --out S5.h5
run rows_then_rm --update S2.h5 --remove-cols 0:2 --out S6.h5
# the --json report: its fields, with the measured ones (times, rates, peaks) left out
fields() {
  python3 -c 'import json, sys
r = json.load(sys.stdin)
print(sorted((k, v) for k, v in r.items()
             if not any(w in k for w in ("time", "t_", "gflop", "peak", "tflop"))))'
}
"$bin" lstsq --device cpu --json --tile 100 --out J.h5 A.h5 b.h5:/b | fields
"$bin" lstsq --device cpu --json --update J.h5 --add-rows U.h5 c.h5:/c --out J2.h5 | fields
dump A.qr.h5 S1d.h5 S2.h5 S3.h5 S4.h5 S5.h5 S6.h5
# the row block from --host-mem (the planner's arithmetic, plan_qr): blocks below --tile, the
# readers' staging split between A and V, a budget too small
run mem400k --tile 1000 --host-mem 400K --out M1.h5 A.h5 b.h5:/b
run mem40k --host-mem 40K --out M2.h5 A.h5 b.h5:/b
run addrowsmem --update A.qr.h5 --add-rows U.h5 c.h5:/c --host-mem 30K --out M3.h5
run addcolsmem --update A.qr.h5 --add-cols V.h5:/V --host-mem 100K --out M4.h5
run memtiny --host-mem 8K --out X.h5 A.h5 b.h5:/b
"$bin" lstsq --device cpu --json --host-mem 100K --out J3.h5 A.h5 b.h5:/b | fields
dump M1.h5 M2.h5 M3.h5 M4.h5
# refusals: exit codes and messages, nothing written
run exists A.h5 b.h5:/b
run method --method gj --out X.h5 A.h5 b.h5:/b
run dset --out X.h5:/x A.h5 b.h5:/b
run wide --trans-a --out X.h5 U.h5 U.h5
run rows --out X.h5 A.h5 c.h5:/c
run rmall --update A.qr.h5 --remove-cols 0:12 --out X.h5
run rmbad --update A.qr.h5 --remove-cols 3:20 --out X.h5
run notstate --update A.h5 --remove-cols 0:1 --out X.h5
run addrowsshape --update A.qr.h5 --add-rows V.h5:/V c.h5:/c --out X.h5
run addcolsnoA --update S2.h5 --add-cols V.h5:/V --out X.h5
run update_exists --update A.qr.h5 --remove-cols 0:1 --out S3.h5
run self --update A.qr.h5 --remove-cols 0:1 --out A.qr.h5 --force
ls
