#!/usr/bin/env bash
# Issue 18's table: one whole `kforge eval` of each GPU seed at its problem's full shape, every
# check on, builds cached (a first run warms them), with wall time, the peak RSS of the largest
# process (kforge or a worker), the peak of kforge and all its workers summed (bench/tree_rss.py),
# the path the evaluation took (engine: device or host) and the phases. Run on the GPU machine after scripts/dist.sh:
#   bench/eval_speed.sh [PROBLEM ...]     (default: matmul layernorm conv_relu_pool softmax)
# KFORGE=dist/kforge by default; KFORGE_CACHE is kept between runs so builds are cached.
set -uo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-dist/kforge}")
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kforge-cache} KFORGE_WORKER=${KFORGE_WORKER:-$(dirname "$K")/kforge-worker}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| %-14s | %-7s | %-6s | %7s | %8s | %8s | %7s | %7s | %7s | %7s | %7s |\n' problem status path "wall s" "RSS MB" "tree MB" build oracle verify judge timing
printf '|%s|\n' "----------------|---------|--------|---------|----------|----------|---------|---------|---------|---------|---------"
for p in ${@:-matmul layernorm conv_relu_pool softmax}; do
  "$K" --db "$tmp/warm.db" eval "problems/$p" "problems/$p/seed.cu" --time-budget 0.2 > /dev/null 2>&1 # builds (baselines too) into the cache
  /usr/bin/time -f '%M %e' -o "$tmp/time" bench/tree_rss.py "$K" --db "$tmp/k.db" eval "problems/$p" "problems/$p/seed.cu" --json > "$tmp/out.json" 2> "$tmp/err.txt"
  read -r rss wall < <(tail -1 "$tmp/time") # the last line: a failed command's status line comes first
  tree=$(grep -o 'PEAK_TREE_RSS_MB [0-9]*' "$tmp/err.txt" | awk '{print $2}')
  grep PEAK_TREE_PARTS "$tmp/err.txt" | sed "s/^/  $p: /" >&2 # which processes made the peak
  python3 - "$tmp/out.json" "$p" "$rss" "$wall" "${tree:-0}" <<'PY'
import json, sys
p, rss, wall, tree = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"| {p:<14} | no JSON: {e} |"); sys.exit()
ph = j.get("phases", {})
f = lambda k: f"{ph.get(k, 0):7.2f}"
path = j.get("engine", {}).get("path", "?")
print(f"| {p:<14} | {j['status'][:7]:<7} | {path:<6} | {wall:7.1f} | {rss / 1024:8.0f} | {tree:8d} | {f('build_s')} | {f('oracle_s')} | {f('verify_s')} | {f('judge_s')} | {f('timing_s')} |")
if j.get("engine", {}).get("why"): print(f"|   host path because: {j['engine']['why'][:200]} |")
steps = ph.get("steps", [])
if steps: print(f"  {p} steps [name, start s, seconds]:", "; ".join(f"{n} {a:.2f}+{d:.2f}" for n, a, d in steps), file=sys.stderr)
PY
done
