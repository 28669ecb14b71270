#!/usr/bin/env bash
# Packs what the lent GPU machine runs into dist/ (stripped, so the carried tree stays small):
# kforge and the programs it starts, the GPU tests, and the benchmark programs.
#   scripts/setup.sh && scripts/dist.sh      then carry dist/ and third_party/
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p dist
for b in kforge kforge-worker kforge-confine kforge-nvrtc tests/test_gpu bench/bench_confine_start; do
  [ -f "build/$b" ] || { echo "dist: build/$b missing (skipped)"; continue; }
  strip -o "dist/$(basename "$b")" "build/$b"
done
# The tool-confinement probe's target (bench/tool_confinement/probe.sh), where nvcc is.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -O2 -arch=sm_90 -o dist/tool_vecadd bench/tool_confinement/vecadd.cu
fi
# strace and its libraries, for the probe's trace of what a confined tool is refused (diagnosis only).
if command -v strace >/dev/null; then
  mkdir -p dist/strace/lib && cp "$(command -v strace)" dist/strace/
  ldd "$(command -v strace)" | awk '/=> \//{print $3}' | grep -vE "/libc.so" | xargs -r cp -t dist/strace/lib
fi
ls -la dist
