#!/usr/bin/env bash
# What one `kforge eval` costs in memory and time as tensors grow: the CPU softmax problem at
# larger row counts (32768 columns, f32), its seed, verification only. Prints a table of wall
# time, the largest process's peak RSS (kforge or its worker) and the phases. The harness
# should hold a few copies of one trial's tensors, not all trials' outputs at once.
#   bench/eval_memory.sh [ROWS ...]     (default 256 1024; KFORGE=dist/kforge for another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-build/kforge}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KFORGE_CACHE=$tmp/cache
printf '%-8s %10s %8s %12s %9s %9s %9s %9s\n' rows "tensor MiB" trials "peak RSS MB" "wall s" "oracle s" "verify s" "judge s"
for rows in ${@:-256 1024}; do
  d=$tmp/softmax_$rows
  cp -r problems/cpu/softmax "$d"
  sed -i "s/shape = \[512, 1024\]/shape = [$rows, 32768]/" "$d/problem.toml"
  sed -i "s/^flops = .*/flops = $((5 * rows * 32768))/; s/^min_bytes = .*/min_bytes = $((8 * rows * 32768))/" "$d/problem.toml"
  /usr/bin/time -f '%M %e' -o "$tmp/time" "$K" --db "$tmp/k.db" eval "$d" "$d/seed.cpp" --no-time --json > "$tmp/out.json"
  read -r rss wall < "$tmp/time"
  python3 - "$tmp/out.json" "$rows" "$rss" "$wall" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); rows, rss, wall = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ph = j["phases"]
print(f"{rows:<8} {rows * 32768 * 4 / 2**20:10.0f} {len(j['trials']):8} {rss / 1024:12.0f} {wall:9.1f} "
      f"{ph['oracle_s']:9.1f} {ph['verify_s']:9.1f} {ph['judge_s']:9.1f}   {j['status']}")
PY
done
