#!/bin/sh
# ctest's entry to tests/agent/mcp_sdk_client.py: the SDK from .venv-test (scripts/setup.sh
# --test-deps), a fresh work folder, exit 77 (skipped) without the SDK.
#   run_mcp_sdk.sh SOURCE_DIR KFORGE [PROBLEM CANDIDATE] [--device]
src=$1; kforge=$2; problem=${3:-$src/problems/cpu/gelu}; candidate=${4:-$problem/seed.cpp}; shift 2; [ $# -ge 2 ] && shift 2
py=$src/.venv-test/bin/python3
[ -x "$py" ] || { echo "skipped: no $py (scripts/setup.sh --test-deps installs the MCP Python SDK)"; exit 77; }
work=$(mktemp -d)
"$py" "$src/tests/agent/mcp_sdk_client.py" "$kforge" "$problem" "$candidate" "$work" "$@"
rc=$?
rm -rf "$work"
exit $rc
