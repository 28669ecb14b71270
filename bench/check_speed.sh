#!/usr/bin/env bash
# Issue 18's KernelBench target: `kforge check` of imported KernelBench-format problems (the
# module checked at its dtype and in float64, then the five control kernels), with torch
# baselines cached, on the GPU-resident path and through the host (KFORGE_EVAL_PATH=host),
# with wall time and the peak of kforge and all its workers summed (bench/tree_rss.py).
# Run on the GPU machine after scripts/dist.sh:
#   bench/check_speed.sh [FILE.py ...]     (default: bench/kernelbench/relu.py conv_relu_pool.py)
# IMPORT_ARGS are passed to the import (e.g. "--backend cpu" to try the script without a GPU).
# HOST=0 skips the host path (slow at full sizes; each check there is limited to LIMIT s, 240).
set -uo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-dist/kforge}")
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kforge-cache} KFORGE_WORKER=${KFORGE_WORKER:-$(dirname "$K")/kforge-worker}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| %-16s | %-6s | %-10s | %7s | %8s | %-40s |\n' problem path result "wall s" "tree MB" "engine of the module check"
printf '|%s|\n' "------------------|--------|------------|---------|----------|------------------------------------------"
for f in ${@:-bench/kernelbench/relu.py bench/kernelbench/conv_relu_pool.py}; do
  n=$(basename "$f" .py)
  "$K" import kernelbench "$f" --out "$tmp/$n" --force ${IMPORT_ARGS:-} > /dev/null 2>&1 || { echo "| $n | import failed |"; continue; }
  "$K" --db "$tmp/warm.db" check "$tmp/$n" > /dev/null 2>&1 # builds, controls and torch baselines into the cache
  for path in device host; do
    [ "$path" = host ] && [ "${HOST:-1}" = 0 ] && continue
    env $([ "$path" = host ] && echo KFORGE_EVAL_PATH=host) /usr/bin/time -f '%e' -o "$tmp/time" \
      timeout "${LIMIT:-240}" bench/tree_rss.py "$K" --db "$tmp/k.db" check "$tmp/$n" --json > "$tmp/out.json" 2> "$tmp/err.txt"
    wall=$(tail -1 "$tmp/time")
    tree=$(grep -o 'PEAK_TREE_RSS_MB [0-9]*' "$tmp/err.txt" | awk '{print $2}')
    grep PEAK_TREE_PARTS "$tmp/err.txt" | sed "s/^/  $n $path: /" >&2 # which processes made the peak
    python3 - "$tmp/out.json" "$n" "$path" "$wall" "${tree:-0}" <<'PY'
import json, sys
n, path, wall, tree = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"| {n:<16} | {path:<6} | no JSON ({e}) | {wall} | {tree} |"); sys.exit()
ok = "ok" if j.get("ok") else "FAILED"
eng = json.dumps((j.get("reference") or {}).get("engine", {}))[:40]
print(f"| {n:<16} | {path:<6} | {ok:<10} | {float(wall):7.1f} | {int(tree):8d} | {eng:<40} |")
PY
  done
done
