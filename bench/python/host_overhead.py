#!/usr/bin/env python3
"""Where a ModelNew call's host time goes, outside kforge: each step of what kforge's
Host.forward does per timed call (python/kforge_candidate.py), timed alone over many calls on
the GPU, with the device synchronised only around each loop. For issue 20's overhead target:
bench/python_candidates.sh measured a load_inline ModelNew at +85 us per call over the same
kernel as kf_forward. Run with the bridge's Python on the GPU machine:
    python3 bench/python/host_overhead.py CANDIDATE.py [ROWS COLS]
"""
import importlib.util
import sys
import time

import torch


def per_call(fn, n=2000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    host = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n
    return host * 1e6, wall * 1e6


def event_interval(fn, scrub, n=300, cold=False, sleep_s=0.0, thrash=None, spin_s=0.0):
    """Median CUDA-event interval (us) around one call, as kforge times it: the device idle
    first, then start event, the call, end event. cold: an L2 scrub (a 256 MiB write) before
    each; sleep_s: the host idles that long first (kforge's worker waits on a pipe for its
    next command); spin_s: the host busy-waits that long instead (kforge's timing workers poll
    for their next command where the machine has 4 CPUs or more); thrash: a host buffer read
    through first (other processes' cache traffic)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(n):
        if cold:
            scrub.zero_()
        torch.cuda.synchronize()
        if thrash is not None:
            bytes(thrash)
        if sleep_s:
            time.sleep(sleep_s)
        if spin_s:
            until = time.perf_counter() + spin_s
            while time.perf_counter() < until:
                pass
        start.record()
        fn()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def main(argv):
    path = argv[1]
    rows, cols = (int(argv[2]), int(argv[3])) if len(argv) > 3 else (512, 4096)
    spec = importlib.util.spec_from_file_location("candidate", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.ModelNew().cuda()
    x = torch.randn(rows, cols, device="cuda")
    dst = torch.empty_like(x)
    stream = torch.cuda.Stream()
    ext = torch.cuda.ExternalStream(stream.cuda_stream)
    torch.cuda.set_stream(ext)
    y = model(x)
    steps = {
        "set_stream(ExternalStream)": lambda: torch.cuda.set_stream(ext),
        "set_grad_enabled(False)": lambda: torch._C._set_grad_enabled(False),
        "torch.empty_like": lambda: torch.empty_like(x),
        "dst.copy_(y)": lambda: dst.copy_(y),
        "model(x)": lambda: model(x),
        "model.forward(x) (no Module.__call__)": lambda: model.forward(x),
        "model(x) + copy_ (a converted result: the copy in the call)": lambda: dst.copy_(model(x)),
    }
    print(f"{path}, x {rows}x{cols}, per call over 2000 calls: host time (loop without sync), and wall "
          f"(until the GPU finished)")
    print(f"| step | host us | wall us |\n|---|---|---|")
    for name, fn in steps.items():
        h, w = per_call(fn)
        print(f"| {name} | {h:.1f} | {w:.1f} |")
    # The same call in kforge's cadence: one call at a time, the device idle before it.
    scrub = torch.empty(64 << 20, device="cuda")
    thrash = bytearray(32 << 20)  # 256 MiB x 300 calls took minutes on the H100 host
    print("one call at a time, CUDA events around it (median of 300, us): what kforge's interval holds")
    print("| cadence | model(x) | dst.copy_(x) (one copy kernel) |\n|---|---|---|")
    for name, kw in (("device idle, host hot", {}), ("after an L2 scrub", {"cold": True}),
                     ("after a scrub and 1 ms of host sleep", {"cold": True, "sleep_s": 1e-3}),
                     ("after a scrub and 1 ms of host busy-wait", {"cold": True, "spin_s": 1e-3}),
                     ("after a scrub, 32 MiB of host memory read, 1 ms sleep",
                      {"cold": True, "sleep_s": 1e-3, "thrash": thrash})):
        a = event_interval(lambda: model(x), scrub, **kw)
        b = event_interval(lambda: dst.copy_(x), scrub, **kw)
        print(f"| {name} | {a:.1f} | {b:.1f} |")


if __name__ == "__main__":
    main(sys.argv)
