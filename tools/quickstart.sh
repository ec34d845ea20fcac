#!/usr/bin/env bash
# Fresh Debian: install the dependencies, build, generate a covariance matrix and invert it out of
# core (a 16 MiB host budget for a 72 MB matrix). Run from the repository root.
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
deps="build-essential cmake pkg-config libhdf5-dev libzstd-dev zlib1g-dev libcunit1-dev libopenblas-dev liblapacke-dev hdf5-tools"
if ! dpkg -s $deps >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $deps
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
mkdir -p example
build/oocgen matern --n 3000 --seed 1 --force example/cov.h5:/cov
build/oocsolve --tile 256 --host-mem 16M --force example/cov.h5
