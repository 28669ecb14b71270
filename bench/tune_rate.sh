#!/usr/bin/env bash
# Issue 18's search target: how many evaluations per minute `kforge optimize --strategy tune`
# sustains on a problem at its full shape (builds of the tuned variants included, every check
# on). Where bench/tune/<problem>_wide_seed.cu exists, the problem is copied with that seed,
# whose grid is wider than the shipped seed's (softmax: 16 points, not 4). Run on the GPU
# machine after scripts/dist.sh:
#   bench/tune_rate.sh [PROBLEM] [WALL_SECONDS]        (default: softmax 60)
# Prints the rate over the search's wall time and over its evaluations alone (first start to
# last finish: without the compute-sanitizer run on the best at the end), and the mean phases.
set -uo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-dist/kforge}")
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kforge-cache} KFORGE_WORKER=${KFORGE_WORKER:-$(dirname "$K")/kforge-worker}
p=${1:-softmax} wall=${2:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir="problems/$p"
if [ -f "bench/tune/${p}_wide_seed.cu" ]; then
  cp -r "problems/$p" "$tmp/$p" && cp "bench/tune/${p}_wide_seed.cu" "$tmp/$p/seed.cu"
  dir="$tmp/$p"
fi
start=$(date +%s.%N)
"$K" --db "$tmp/k.db" optimize "$dir" --strategy tune --evaluations 1000 --wall "$wall" --patience 1000 --seed 1 > "$tmp/out.txt" 2>&1
rc=$?
end=$(date +%s.%N)
tail -3 "$tmp/out.txt" | cut -c1-240
python3 - "$tmp/k.db" "$start" "$end" "$p" "$rc" <<'PY'
import datetime, json, sqlite3, sys
db, start, end, p, rc = sqlite3.connect(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = db.execute("select started_at, finished_at, summary_json from evaluations where finished_at is not null").fetchall()
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
n, w = len(rows), end - start
line = f"| {p} | {n} evaluations | {w:.1f} s wall: {n / w * 60:.1f} per minute"
if rows:
    span = max(t(r[1]) for r in rows) - min(t(r[0]) for r in rows)
    line += f" | {span:.1f} s from the first start to the last finish: {n / span * 60:.1f} per minute"
print(line + f" | rc {rc} |")
ph = [json.loads(r[2]).get("phases", {}) for r in rows if r[2]]
keys = ["build_s", "oracle_s", "verify_s", "judge_s", "timing_s"]
print("mean phases over", len(ph), "evaluations:", {k: round(sum(x.get(k, 0) for x in ph) / max(1, len(ph)), 3) for k in keys})
if rows:
    # Where the wall goes outside the evaluations: before the first starts, after the last ends.
    first, last = min(t(r[0]) for r in rows), max(t(r[1]) for r in rows)
    print(f"wall: {first - start:.1f} s before the first evaluation started, {last - first:.1f} s of evaluations, "
          f"{end - last:.1f} s after the last finished (the best's compute-sanitizer run, the end)")
    spans = sorted((t(r[0]) - start, t(r[1]) - start) for r in rows)
    print("evaluations [start, finish] s from the run's start:", " ".join(f"[{a:.1f},{b:.1f}]" for a, b in spans))
    steps = {}
    for x in ph:
        for name, _, dur in x.get("steps", []):
            steps.setdefault(name, []).append(dur)
    if steps:
        print("mean steps:", {k: round(sum(v) / len(v), 3) for k, v in steps.items()})
PY
