#!/usr/bin/env bash
# sdk_install.sh: the installed SDK works for a consumer (issue 25; run by .ci/run).
#
#   bash tests/sdk_install.sh <build_dir>
#
# Installs <build_dir> into a fresh prefix and checks: the programs, header, shared and static
# libraries, oocsolve.pc, the CMake package and (in a CUDA build) the plugin are where
# GNUInstallDirs puts them; the installed oocsolve finds the plugin in <prefix>/lib from bin/
# (and says so in --version); a consumer builds and runs against the prefix with
# find_package(oocsolve) (shared and static targets) and with pkg-config; a parent project builds
# oocsolve with add_subdirectory (no tests built there) and its consumer runs. Each consumer
# inverts a matrix made by the installed oocgen and checks header and library versions agree.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
P=$work/prefix
step() { echo "== $*"; }

step "install into $P"
cmake --install "$build" --prefix "$P" >"$work/install.log"
libdir=lib
[ -d "$P/lib64" ] && [ ! -d "$P/lib" ] && libdir=lib64
for f in bin/oocsolve bin/oocgen bin/oocbench include/oocsolve.h "$libdir/liboocsolve.so" \
    "$libdir/liboocsolve.a" "$libdir/pkgconfig/oocsolve.pc" \
    "$libdir/cmake/oocsolve/oocsolveConfig.cmake" \
    "$libdir/cmake/oocsolve/oocsolveConfigVersion.cmake" \
    "$libdir/cmake/oocsolve/oocsolveTargets.cmake"; do
  [ -e "$P/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done
plugin=""
if [ -e "$build/liboocsolve_cuda.so" ]; then
  plugin=$P/$libdir/liboocsolve_cuda.so
  [ -e "$plugin" ] || { echo "FAIL: the plugin was not installed"; exit 1; }
  [ -e "$P/$libdir/liboocbench_cuda.so" ] || { echo "FAIL: oocbench's GPU module was not installed"; exit 1; }
fi
echo "ok   every file in place"

step "installed programs"
"$P/bin/oocsolve" --version | tee "$work/version.txt"
if [ -n "$plugin" ]; then
  grep -q "CUDA plugin loaded from $P/bin/../$libdir/liboocsolve_cuda.so" "$work/version.txt" ||
    { echo "FAIL: the installed oocsolve did not load the installed plugin"; exit 1; }
fi
"$P/bin/oocgen" random --n 200 "$work/a.h5" >/dev/null

step "find_package(oocsolve)"
cmake -S "$src/tests/sdk_consumer" -B "$work/c1" -DCMAKE_PREFIX_PATH="$P" >"$work/c1.log"
cmake --build "$work/c1" >>"$work/c1.log" 2>&1 || { cat "$work/c1.log"; exit 1; }
"$work/c1/consumer" "$work/a.h5" "$work/a1.h5" | tee "$work/c1.out"
# the shared library finds the plugin in its own directory
if [ -n "$plugin" ]; then grep -q "CUDA plugin loaded from $P/$libdir/liboocsolve_cuda.so" "$work/c1.out"; fi
"$work/c1/consumer_static" "$work/a.h5" "$work/a2.h5"

step "pkg-config"
PKG_CONFIG_PATH="$P/$libdir/pkgconfig" make -s -C "$src/tests/sdk_consumer" OUT="$work" \
  "$work/consumer_pc"
[ "$(PKG_CONFIG_PATH="$P/$libdir/pkgconfig" pkg-config --modversion oocsolve)" = \
  "$("$P/bin/oocsolve" --version | head -1 | awk '{print $2}')" ]
"$work/consumer_pc" "$work/a.h5" "$work/a3.h5"

step "add_subdirectory(oocsolve) from a parent project"
cmake -S "$src/tests/sdk_consumer/parent" -B "$work/c3" -DOOCSOLVE_SOURCE="$src" -DOOC_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Release >"$work/c3.log" 2>&1 || { cat "$work/c3.log"; exit 1; }
cmake --build "$work/c3" --target consumer -j"$(nproc)" >>"$work/c3.log" 2>&1 ||
  { tail -30 "$work/c3.log"; exit 1; }
"$work/c3/consumer" "$work/a.h5" "$work/a4.h5"
echo "sdk_install: all passed"
