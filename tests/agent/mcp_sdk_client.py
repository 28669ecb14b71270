#!/usr/bin/env python3
"""kforge mcp driven by the official MCP Python SDK, as agents' tooling drives it.

  mcp_sdk_client.py KFORGE PROBLEM CANDIDATE WORKDIR [LONG_PROBLEM LONG_CANDIDATE]

Checks, on one problem (a CPU one in CI, a GPU one on the device), the calls that are given
up on using LONG_PROBLEM (default: the same; on the GPU a full-shape one, whose evaluation
outlasts the client's 3 s timeout):
  1. progress notifications arrive during an evaluation, at least every 2 s;
  2. a ping sent during the evaluation is answered promptly (the time is printed; < 50 ms is
     the target, asserted at < 1 s so that a loaded CI machine does not fail it);
  3. describe_problem and history run while the evaluation does and come back before it;
  4. a call the client gives up on (read timeout: the SDK sends notifications/cancelled) is
     recorded "cancelled" and its processes are gone within 1 s;
  5. a client that exits mid-call leaves no "running" row and no process behind.
Exit 0 when all hold, 1 otherwise, 77 when the SDK is not installed (ctest: skipped).
"""
import json
import os
import sqlite3
import sys
import time

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:  # the venv of scripts/setup.sh --test-deps is missing
    print(f"skipped: the MCP Python SDK is not installed ({e})")
    sys.exit(77)

KFORGE, PROBLEM, CANDIDATE, WORK = sys.argv[1:5]
LONG_PROBLEM, LONG_CANDIDATE = sys.argv[5:7] if len(sys.argv) >= 7 else (PROBLEM, CANDIDATE)
DB = os.path.join(WORK, "k.db")
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def descendants_of_calls():
    """Pids of this server's `kforge mcp --call` children and everything below them."""
    parent = {}
    calls = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if b"--call" in cmd and DB.encode() in cmd:
                calls.add(int(pid))
        except (OSError, IndexError, ValueError):
            continue
    found = set(calls)
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def alive(pids):
    out = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.add(p)
        except OSError:
            pass
    return out


def last_status():
    with sqlite3.connect(DB) as c:
        row = c.execute("SELECT status, message FROM evaluations ORDER BY id DESC LIMIT 1").fetchone()
    return row or (None, None)


def server():
    env = {k: os.environ[k] for k in ("KFORGE_CACHE", "KFORGE_WORKER", "LD_LIBRARY_PATH", "KFORGE_PYTHON") if k in os.environ}
    return StdioServerParameters(command=KFORGE, args=["--db", DB, "mcp"], env=env, cwd=WORK)


def evaluate_args(time_budget_s, long=False):
    return {"problem": LONG_PROBLEM if long else PROBLEM, "path": LONG_CANDIDATE if long else CANDIDATE,
            "hypothesis": "sdk test", "time_budget_s": time_budget_s, "trials": 1}


async def main():
    async with stdio_client(server()) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            check({"evaluate", "describe_problem", "history", "tune"} <= set(tools), f"tools listed: {sorted(tools)}")
            check(tools["history"].annotations is not None and tools["history"].annotations.read_only_hint is True,
                  "history is annotated read-only")

            # 1-3: an evaluation long enough to overlap, with progress, a ping and two quick calls.
            progress, result, quick = [], {}, {}

            async def on_progress(p, total, message):
                progress.append((time.monotonic(), p, message))

            async def evaluate():
                result["r"] = await s.call_tool("evaluate", evaluate_args(6.0), progress_callback=on_progress)
                result["t"] = time.monotonic()

            t_start = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(evaluate)
                await anyio.sleep(2.0)
                t0 = time.monotonic()
                await s.send_ping()
                ping_ms = (time.monotonic() - t0) * 1000
                print(f"ping during the evaluation: {ping_ms:.1f} ms", flush=True)
                t0 = time.monotonic()
                d = await s.call_tool("describe_problem", {"problem": PROBLEM})
                h = await s.call_tool("history", {})
                quick["ms"] = (time.monotonic() - t0) * 1000
                quick["t"] = time.monotonic()
                quick["ok"] = not d.is_error and not h.is_error
            check(ping_ms < 1000, f"ping answered during an evaluation in {ping_ms:.1f} ms (target < 50 ms)")
            check(quick["ok"] and quick["t"] < result["t"],
                  f"describe_problem + history answered in {quick['ms']:.0f} ms, before the evaluation ended")
            r = result["r"]
            check(not r.is_error and r.structured_content and r.structured_content.get("status") == "passed",
                  f"the evaluation passed: {(r.structured_content or {}).get('status')}")
            check(isinstance((r.structured_content or {}).get("seed"), (str, type(None))), "the seed is a string")
            check(len(r.content) == 2 and json.loads(r.content[1].text).get("schema") == "kforge.eval/1",
                  "content carries the JSON as well as the summary")
            times = [t_start] + [p[0] for p in progress] + [result["t"]]
            gap = max(b - a for a, b in zip(times, times[1:]))
            values = [p[1] for p in progress]
            check(len(progress) >= 3 and values == sorted(values), f"{len(progress)} progress notifications, increasing")
            check(gap <= 2.0, f"the longest time without progress was {gap:.2f} s (target <= 2 s)")
            check(any("verify" in (p[2] or "") for p in progress), "progress names the phases (verify)")

            # 4: a call the client gives up on.
            t0 = time.monotonic()
            pids = set()

            async def watch():
                while time.monotonic() - t0 < 2.5:
                    pids.update(descendants_of_calls())
                    await anyio.sleep(0.1)

            gave_up = False
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                try:
                    await s.call_tool("evaluate", evaluate_args(30.0, long=True), read_timeout_seconds=3.0)
                except Exception as e:  # the SDK's timeout error
                    gave_up = True
                    print(f"the client gave up: {type(e).__name__}: {str(e)[:80]}", flush=True)
            check(gave_up, "the client timed the call out")
            t_cancel = time.monotonic()
            while alive(pids) and time.monotonic() - t_cancel < 5:
                await anyio.sleep(0.05)
            gone_after = time.monotonic() - t_cancel
            check(bool(pids) and not alive(pids),
                  f"its {len(pids)} processes gone {gone_after:.2f} s after the client gave up (target < 1 s)")
            for _ in range(50):
                status, message = last_status()
                if status == "cancelled":
                    break
                await anyio.sleep(0.1)
            check(status == "cancelled", f"its evaluation is recorded {status!r}: {message}")
            t0 = time.monotonic()
            await s.send_ping()
            check(True, f"the server still answers ({(time.monotonic() - t0) * 1000:.1f} ms)")

    # 5: a client that exits mid-call (the SDK closes stdin, then terminates the server).
    pids = set()
    async with stdio_client(server()) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: s.call_tool("evaluate", evaluate_args(30.0, long=True)))
                t0 = time.monotonic()
                while time.monotonic() - t0 < 3.0:
                    pids.update(descendants_of_calls())
                    await anyio.sleep(0.1)
                tg.cancel_scope.cancel()
    t_exit = time.monotonic()
    while alive(pids) and time.monotonic() - t_exit < 5:
        time.sleep(0.05)
    check(bool(pids) and not alive(pids), f"after the client left, its {len(pids)} processes are gone")
    status, message = last_status()
    check(status == "cancelled", f"the call it left is recorded {status!r}: {message}")
    with sqlite3.connect(DB) as c:
        running = c.execute("SELECT COUNT(*) FROM evaluations WHERE status = 'running'").fetchone()[0]
    check(running == 0, f"{running} evaluations left 'running'")


anyio.run(main)
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
