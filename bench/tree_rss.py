#!/usr/bin/env python3
"""Runs a command and samples the summed resident memory of it and every descendant every
20 ms (kforge and all its workers at once: issue 18's "peak host memory" target). Prints
"PEAK_TREE_RSS_MB <n>" on stderr at the end, and "PEAK_TREE_PARTS" with the processes (name:MB)
that made up that peak; exits with the command's status.
  bench/tree_rss.py kforge eval problems/softmax problems/softmax/seed.cu --json > out.json"""
import os, subprocess, sys, time

def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out

def name(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        # kforge-worker's role, the helper's script: what tells the processes apart
        return " ".join(os.path.basename(a) for a in argv[:3])[:60] or "?"
    except OSError:
        return "?"

def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

proc = subprocess.Popen(sys.argv[1:])
peak, parts = 0, []
while proc.poll() is None:
    seen, todo, total, now = set(), [proc.pid], 0, []
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        kb = rss_kb(p)
        total += kb
        now.append((kb, p))
        todo += children(p)
    if total > peak:
        peak, parts = total, [(kb, name(p)) for kb, p in now]
    time.sleep(0.02)
print(f"PEAK_TREE_RSS_MB {peak // 1024}", file=sys.stderr)
big = sorted(parts, reverse=True)[:8]
print("PEAK_TREE_PARTS " + ", ".join(f"{n}:{kb // 1024}" for kb, n in big), file=sys.stderr)
sys.exit(proc.returncode)
