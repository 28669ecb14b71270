#!/usr/bin/env bash
# Imports the KernelBench-format problems here, checks one with its control kernels, and runs
# `kforge suite` over all of them with the candidates in candidates/ (fast_p over eager and
# torch.compile). Run from the repository root:
#   bench/kernelbench/run.sh OUT        (KFORGE=dist/kforge to use another binary)
set -uo pipefail
out=${1:?usage: bench/kernelbench/run.sh OUT}
K=${KFORGE:-build/kforge}
export KFORGE_DB=${KFORGE_DB:-$out/kforge.db}
mkdir -p "$out/problems"
for f in bench/kernelbench/*.py; do
  n=$(basename "$f" .py)
  "$K" import kernelbench "$f" --out "$out/problems/$n" --force || echo "import $n failed"
done
"$K" check "$out/problems/relu" 2>&1 | tee "$out/check_relu.txt"
"$K" suite "$out/problems" --candidates bench/kernelbench/candidates 2>&1 | tee "$out/suite.txt"
