#!/usr/bin/env bash
# An MCP session against kforge on a GPU problem, as an agent would run it:
# initialize, evaluate the softmax seed with a hypothesis, profile it, read the history.
set -uo pipefail
cd "$(dirname "$0")/.."
KF=${KF:-dist/kforge}
P=$PWD/tests/gpu/problems/softmax_small
S=$PWD/problems/softmax/seed.cu
DB=${DB:-/tmp/mcp-gpu.db}
rm -f "$DB"*
cat > /tmp/mcp-req.jsonl <<JSON
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"evaluate","arguments":{"problem":"$P","path":"$S","hypothesis":"the seed at its default block size","predicted_ms":0.02,"trials":1,"time_budget_s":0.3}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"profile","arguments":{"problem":"$P","path":"$S"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"history","arguments":{"problem":"$P"}}}
JSON
/usr/bin/time -f '%e s wall' $KF --db "$DB" mcp --in-order < /tmp/mcp-req.jsonl > /tmp/mcp-resp.jsonl
python3 - <<'PY'
import json
for line in open('/tmp/mcp-resp.jsonl'):
    m = json.loads(line)
    r = m.get('result', {})
    if 'content' in r:
        print(f"id {m['id']}: isError={r.get('isError')}")
        print(r['content'][0]['text'][:1500])
    else:
        print(f"id {m['id']}: {json.dumps(r)[:200]}")
PY
