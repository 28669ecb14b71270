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


if __name__ == "__main__":
    main(sys.argv)
