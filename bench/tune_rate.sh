#!/usr/bin/env bash
# Issue 18's search target: how many evaluations per minute `kforge optimize --strategy tune`
# sustains on a problem at its full shape (builds of the tuned variants included, every check
# on). Run on the GPU machine after scripts/dist.sh:
#   bench/tune_rate.sh [PROBLEM] [WALL_SECONDS]        (default: softmax 60)
# The search runs under a wall budget; the rate is the evaluations it stored over its wall time.
set -uo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-dist/kforge}")
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kforge-cache} KFORGE_WORKER=${KFORGE_WORKER:-$(dirname "$K")/kforge-worker}
p=${1:-softmax} wall=${2:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s.%N)
"$K" --db "$tmp/k.db" optimize "problems/$p" --strategy tune --evaluations 1000 --wall "$wall" --patience 1000 --seed 1 > "$tmp/out.txt" 2>&1
rc=$?
end=$(date +%s.%N)
evals=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from evaluations').fetchone()[0])" "$tmp/k.db" 2>/dev/null || echo "?")
python3 - "$start" "$end" "$evals" "$p" "$rc" <<'PY'
import sys
s, e, n, p, rc = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
w = e - s
rate = f"{int(n) / w * 60:.1f}" if n.isdigit() and w > 0 else "?"
print(f"| {p} | {n} evaluations | {w:.1f} s | {rate} per minute | rc {rc} |")
PY
tail -3 "$tmp/out.txt" | cut -c1-240
# Where an evaluation's time goes: the phases of each, averaged.
python3 - "$tmp/k.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("pragma table_info(evaluations)")]
col = "summary_json" if "summary_json" in cols else None
if col:
    ph = [json.loads(r[0]).get("phases", {}) for r in db.execute(f"select {col} from evaluations where {col} != ''")]
    keys = ["build_s", "oracle_s", "verify_s", "judge_s", "timing_s"]
    print("mean phases over", len(ph), "evaluations:", {k: round(sum(p.get(k, 0) for p in ph) / max(1, len(ph)), 3) for k in keys})
PY
