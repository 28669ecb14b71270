#!/usr/bin/env python3
"""Runs a command and samples the summed resident memory of it and every descendant every
20 ms (kforge and all its workers at once: issue 18's "peak host memory" target). Prints
"PEAK_TREE_RSS_MB <n>" on stderr at the end; exits with the command's status.
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
peak = 0
while proc.poll() is None:
    seen, todo, total = set(), [proc.pid], 0
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += rss_kb(p)
        todo += children(p)
    peak = max(peak, total)
    time.sleep(0.02)
print(f"PEAK_TREE_RSS_MB {peak // 1024}", file=sys.stderr)
sys.exit(proc.returncode)
