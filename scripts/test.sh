#!/usr/bin/env bash
# Runs kforge's test suite: installs what is missing, builds, runs CTest.
# Tests labelled "gpu" need an NVIDIA GPU; without one they are skipped, and this says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test-deps
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
# Tests build kernels into the cache: keep CI's cache inside the build tree.
export KFORGE_CACHE="${KFORGE_CACHE:-$PWD/build/test-cache}"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  ctest --test-dir build --output-on-failure -j"$(nproc)"
else
  echo "test: no GPU on this machine: skipping tests labelled 'gpu'"
  ctest --test-dir build --output-on-failure -j"$(nproc)" -LE gpu
fi
