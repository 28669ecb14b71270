#!/usr/bin/env bash
# The PyTorch bridge's cost per evaluation: one `kforge eval` and a four-evaluation tune of an
# imported KernelBench-style problem (linear + ReLU, C++ candidate, torch.compile off), with the
# persistent helper and with one Python process per call (KFORGE_TORCH_ONESHOT=1). Prints a table.
#   bench/bridge_latency.sh            (KFORGE=dist/kforge to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-build/kforge}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$K" import kernelbench tests/bridge/data/kb_linear_relu.py --out "$tmp/lr" --backend cpu > /dev/null
sed -i 's/^compile = true /compile = false/' "$tmp/lr/problem.toml"
{ echo "// kforge: param UNUSED = 1 in {1, 2, 3, 4}"; cat tests/bridge/data/linear_relu.cpp; } > "$tmp/lr/seed.cpp"
wall() { local t0=$EPOCHREALTIME; "$@" > /dev/null; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }'; }
printf '%-12s %12s %22s\n' helper "eval (s)" "optimize, 4 evals (s)"
for mode in 0 1; do
  e=$(KFORGE_TORCH_ONESHOT=$mode wall "$K" --db "$tmp/e$mode.db" eval "$tmp/lr" tests/bridge/data/linear_relu.cpp --time-budget 0.3)
  o=$(KFORGE_TORCH_ONESHOT=$mode wall "$K" --db "$tmp/o$mode.db" optimize "$tmp/lr" --strategy tune --time-budget 0.3)
  printf '%-12s %12.2f %22.2f\n' "$([ $mode = 0 ] && echo persistent || echo one-shot)" "$e" "$o"
done
