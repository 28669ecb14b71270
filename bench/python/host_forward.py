#!/usr/bin/env python3
"""What kforge's Python host (python/kforge_candidate.py, Host.forward) adds to a ModelNew call,
on the CPU, without a GPU: a tiny plain-torch ModelNew (x * 2 on 8 floats) called directly and
through Host.forward on a kf_args of ctypes, in a hot loop. The difference is Host.forward's own
bookkeeping (descriptor check, output listing), which every timed call of a Python candidate
pays on top of the interpreter's handoff.

    .venv/bin/python bench/python/host_forward.py [calls]
"""
import ctypes
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import torch  # noqa: E402

import kforge_candidate as kc  # noqa: E402
from kforge_torch import KfArgs, KfTensor, kf_tensor  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "cand.py"), "w") as f:
    f.write("import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n")
x, y = torch.randn(8), torch.empty(8)
ins, outs = (KfTensor * 1)(kf_tensor(x)), (KfTensor * 1)(kf_tensor(y))
a = KfArgs()
a.inputs, a.num_inputs = ctypes.cast(ins, ctypes.POINTER(KfTensor)), 1
a.outputs, a.num_outputs = ctypes.cast(outs, ctypes.POINTER(KfTensor)), 1
spec = {"device": "cpu", "abi_inputs": ["x"], "inputs": ["x"], "outputs": ["y"], "jit_dir": folder}
host = kc.Host(os.path.join(folder, "cand.py"), spec)
address, table = ctypes.addressof(a), (ctypes.c_uint64 * 4)()


def per_call_us(f):
    for _ in range(1000):
        f()
    t0 = time.perf_counter_ns()
    for _ in range(N):
        f()
    return (time.perf_counter_ns() - t0) / N / 1000


m = host.model
rows = [("model(x)", lambda: m(x)),
        ("Host.forward, result copied in the call", lambda: host.forward(address)),
        ("Host.forward, result listed for the worker's copy", lambda: host.forward(address, ctypes.addressof(table))),
        ("Host._unchanged (the descriptor check)", lambda: host._unchanged(host.entries[address]))]
print(f"per call over {N} calls, us (CPU, torch {torch.__version__})")
for name, f in rows:
    print(f"{name:52s} {per_call_us(f):7.2f}")
assert torch.equal(y, x * 2)
